/* SPDX-License-Identifier: MIT */
/* Test fixture: a real local cluster driven through lodectl, as a user would. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"

static const char *lodectl_path(void)
{
	const char *p = getenv("LODECTL");

	return p ? p : "lodectl";
}

static int run_capture(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	int st;

	if (!p)
		return -1;
	if (out) {
		n = fread(out, 1, len - 1, p);
		out[n] = 0;
		while (n && (out[n - 1] == '\n'))
			out[--n] = 0;
	} else {
		char sink[256];

		while (fread(sink, 1, sizeof(sink), p) > 0)
			;
	}
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int cluster_up(struct test_cluster *tc, int noss)
{
	return cluster_up_opts(tc, noss, "");
}

/*
 * Clusters still up when the test process dies (a crash, an abort, meson's SIGTERM on a
 * timeout) would keep running and keep their directories: a handler stops them first.
 */
#define LIVE_MAX 8
static struct test_cluster *live[LIVE_MAX];

static void on_fatal_signal(int sig)
{
	for (int i = 0; i < LIVE_MAX; i++)
		if (live[i])
			cluster_down(live[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void track(struct test_cluster *tc, int add)
{
	static int installed;

	if (!installed) {
		static const int sigs[] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE,
					   SIGILL,  SIGTERM, SIGINT};

		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			signal(sigs[i], on_fatal_signal);
		installed = 1;
	}
	for (int i = 0; i < LIVE_MAX; i++) {
		if (add && !live[i]) {
			live[i] = tc;
			return;
		}
		if (!add && live[i] == tc)
			live[i] = NULL;
	}
}

int cluster_up_opts(struct test_cluster *tc, int noss, const char *opts)
{
	char cmd[1024];
	const char *tmp = getenv("TMPDIR");

	memset(tc, 0, sizeof(*tc));
	track(tc, 1);
	snprintf(tc->dir, sizeof(tc->dir), "%s/lode-test-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(tc->dir)) {
		perror("mkdtemp");
		return -1;
	}
	tc->noss = noss;
	snprintf(cmd, sizeof(cmd), "%s local up %s --oss %d %s", lodectl_path(), tc->dir, noss,
		 opts);
	if (run_capture(cmd, tc->mds, sizeof(tc->mds)) || !tc->mds[0]) {
		fprintf(stderr, "cluster_up: '%s' failed; logs under %s\n", cmd, tc->dir);
		snprintf(cmd, sizeof(cmd), "tail -n 20 %s/mds/log %s/oss*/log >&2", tc->dir,
			 tc->dir);
		if (system(cmd)) {
		}
		cluster_down(tc);
		return -1;
	}
	cluster_use_key(tc);
	return 0;
}

/* every client of the test (liblode in this process, lodectl, lode-fuse) proves the
 * cluster's key, as a user of a local cluster does */
void cluster_use_key(const struct test_cluster *tc)
{
	char path[sizeof(tc->dir) + 16];

	snprintf(path, sizeof(path), "%s/cluster.key", tc->dir);
	setenv("LODE_KEY_FILE", path, 1);
}

int cluster_restart(struct test_cluster *tc)
{
	char cmd[512], addr[128];

	snprintf(cmd, sizeof(cmd), "%s local up %s", lodectl_path(), tc->dir);
	if (run_capture(cmd, addr, sizeof(addr)) || strcmp(addr, tc->mds)) {
		fprintf(stderr, "cluster_restart: '%s' gave '%s' (was %s)\n", cmd, addr, tc->mds);
		return -1;
	}
	return 0;
}

int cluster_kill(struct test_cluster *tc, const char *name, int sig9)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s local kill %s %s %s", lodectl_path(), tc->dir, name,
		 sig9 ? "-9" : "");
	return run_capture(cmd, NULL, 0);
}

void cluster_down(struct test_cluster *tc)
{
	char cmd[600];

	track(tc, 0);
	if (!tc->dir[0])
		return;
	/* LODE_TEST_KEEP=1 keeps the data and logs for a post-mortem */
	snprintf(cmd, sizeof(cmd), "%s local down %s >/dev/null 2>&1; %s %s", lodectl_path(),
		 tc->dir, getenv("LODE_TEST_KEEP") ? "echo kept" : "rm -rf", tc->dir);
	if (system(cmd)) {
	}
	tc->dir[0] = 0;
}

int cluster_lodectl(struct test_cluster *tc, const char *args)
{
	char cmd[1024];
	int st;

	snprintf(cmd, sizeof(cmd), "%s --mds %s %s", lodectl_path(), tc->mds, args);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* A live mount at mnt: its root answers. */
static int is_mountpoint(const char *mnt)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "mountpoint -q '%s'", mnt);
	return system(cmd) == 0;
}

/* Anything mounted at mnt, also a FUSE mount whose daemon died (the kernel then answers
 * ENOTCONN, which mountpoint(1) takes for "not a mount point"): findmnt reads the table. */
static int is_mounted(const char *mnt)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "findmnt -M '%s' >/dev/null", mnt);
	return system(cmd) == 0;
}

static int process_alive(pid_t pid)
{
	char path[64], st[256];
	FILE *f;
	int zombie = 0;

	if (kill(pid, 0) && errno == ESRCH)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(st, sizeof(st), f)) {
		char *rp = strrchr(st, ')');

		zombie = rp && rp[1] == ' ' && rp[2] == 'Z';
	}
	fclose(f);
	return !zombie;
}

int cluster_fuse_usable(char *why, size_t len)
{
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		snprintf(why, len, "cannot open /dev/fuse: %s", strerror(errno));
		return 77;
	}
	close(fd);
	if (system("command -v fusermount3 >/dev/null 2>&1")) {
		snprintf(why, len, "fusermount3 is not installed (package fuse3)");
		return 77;
	}
	if (system("command -v mountpoint >/dev/null 2>&1")) {
		snprintf(why, len, "mountpoint(1) is not installed (package util-linux)");
		return 77;
	}
	return 0;
}

int cluster_mount(struct test_cluster *tc, const char *mnt, const char *opts, const char *log,
		  int *pid)
{
	const char *exe = getenv("LODE_FUSE");
	char why[256], deflog[300], cmd[900];
	int status, fd;
	pid_t p;

	if (cluster_fuse_usable(why, sizeof(why))) {
		fprintf(stderr, "SKIP: %s\n", why);
		return 77;
	}
	if (!exe)
		exe = "lode-fuse";
	if (!log) {
		snprintf(deflog, sizeof(deflog), "%s/fuse.log", tc->dir);
		log = deflog;
	}
	p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (opts && *opts)
			execlp(exe, exe, "--mds", tc->mds, mnt, "-f", "-o", opts, (char *)NULL);
		else
			execlp(exe, exe, "--mds", tc->mds, mnt, "-f", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 300; i++) {
		if (is_mountpoint(mnt)) {
			*pid = p;
			return 0;
		}
		if (waitpid(p, &status, WNOHANG) == p) {
			snprintf(cmd, sizeof(cmd),
				 "grep -qiE 'permission denied|operation not permitted' '%s'", log);
			if (system(cmd) == 0) {
				fprintf(stderr, "SKIP: mounting FUSE is not permitted here:\n");
				snprintf(cmd, sizeof(cmd), "tail -n 5 '%s' >&2", log);
				if (system(cmd)) {
				}
				return 77;
			}
			fprintf(stderr,
				"cluster_mount: lode-fuse exited (status %d) before mounting "
				"%s; its log:\n",
				status, mnt);
			snprintf(cmd, sizeof(cmd), "tail -n 20 '%s' >&2", log);
			if (system(cmd)) {
			}
			return -1;
		}
		sleep_ms(100);
	}
	fprintf(stderr, "cluster_mount: %s is no mount point after 30 s\n", mnt);
	cluster_unmount(mnt, p);
	return -1;
}

int cluster_unmount(const char *mnt, int pid)
{
	char cmd[600];
	int status;

	snprintf(cmd, sizeof(cmd), "fusermount3 -u '%s' 2>/dev/null || fusermount3 -uz '%s'", mnt,
		 mnt);
	if (is_mounted(mnt) && system(cmd)) {
	}
	if (pid <= 0)
		return 0;
	/* the last releases flush write-behind data and fsync every copy: on a loaded machine
	 * with one shared disk that can take a while, so the bound is generous */
	for (int i = 0; i < 600; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
		/* not our child (a shell test's fixture process mounted it): watch it go */
		if (r < 0 && errno == ECHILD && !process_alive(pid))
			return 0;
		sleep_ms(100);
	}
	fprintf(stderr,
		"cluster_unmount: lode-fuse (pid %d) still runs 60 s after unmounting "
		"%s: killing it\n",
		pid, mnt);
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) < 0) {
		for (int i = 0; i < 50 && process_alive(pid); i++)
			sleep_ms(100);
	}
	if (is_mounted(mnt) && system(cmd)) {
	}
	return -1;
}
