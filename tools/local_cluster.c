/* SPDX-License-Identifier: MIT */
/*
 * What `lodectl local up DIR [--oss N]` (start what is not running of a local cluster),
 * `local down DIR` (stop it) and `local kill DIR NAME [-9]` (signal one daemon: tests use
 * it for kill -9) do; tools/lodectl/local.c is their command line.
 *
 * Layout of DIR: DIR/mds and DIR/ossK hold each daemon's data, its `pid`, its `addr`
 * (written by the daemon once it listens) and its `log`. The first start picks ephemeral
 * ports on 127.0.0.1; a restart reuses the port in `addr`, so clients and the MDS find
 * the daemon where it was. DIR/cluster holds the OSS count; DIR/ossK/capacity, when there,
 * the capacity that OSS declares (--capacity: on one machine every OSS shares one disk, so
 * each is given a size of its own for placement and rebalance to see). `local add-oss DIR`
 * starts one more OSS, DIR/ossN, and counts it in DIR/cluster.
 *
 * LODE_LOCAL_LISTEN (default "tcp://127.0.0.1") names the transport and host the daemons
 * of a new cluster listen on: "rdma://10.0.2.15" runs the whole cluster over RDMA.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "local_cluster.h"
#include "lode/lode.h"

#define START_TIMEOUT_MS 15000
#define PORT_RETRY_MS	 5000

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

/* Whether pid has exited and waits to be reaped (state Z, or X while it goes). */
static bool is_zombie(pid_t pid)
{
	char path[64], buf[512];
	const char *paren;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_file(path, buf, sizeof(buf)))
		return false; /* gone, or no /proc: kill() above decides */
	/* "pid (comm) S ...": comm may hold spaces and parentheses, the state follows the last ')'
	 */
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

static pid_t running_pid(const char *dir)
{
	char path[PATH_MAX], buf[32];
	long pid;

	snprintf(path, sizeof(path), "%s/pid", dir);
	if (read_file(path, buf, sizeof(buf)))
		return 0;
	pid = strtol(buf, NULL, 10);
	if (pid <= 0 || kill((pid_t)pid, 0))
		return 0;
	/* a zombie of ours is not running */
	if (waitpid((pid_t)pid, NULL, WNOHANG) == pid)
		return 0;
	/* nor is anyone else's: kill(pid, 0) succeeds on a zombie whose parent has not reaped it
	 * yet, which in a container whose init reaps late lasts a while after a kill -9 */
	if (is_zombie((pid_t)pid))
		return 0;
	return (pid_t)pid;
}

/* Finds a program: $LODE_BIN_DIR, beside lodectl, in the build tree, then $PATH. */
static int find_prog(const char *name, const char *subdir, char *out, size_t len)
{
	char self[PATH_MAX], *slash;
	const char *env = getenv("LODE_BIN_DIR");
	ssize_t n;

	if (env) {
		snprintf(out, len, "%s/%s", env, name);
		if (!access(out, X_OK))
			return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			if ((size_t)snprintf(out, len, "%s/%s", self, name) < len &&
			    !access(out, X_OK))
				return 0;
			if ((size_t)snprintf(out, len, "%s/../%s/%s", self, subdir, name) < len &&
			    !access(out, X_OK))
				return 0;
		}
	}
	snprintf(out, len, "%s", name);
	return 0; /* execvp searches $PATH */
}

/* Starts prog in the background with its output in DIR/log; writes DIR/pid. */
static int spawn(const char *dir, char *const argv[])
{
	char path[PATH_MAX], buf[32];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/log", dir);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
		setsid();
		execvp(argv[0], argv);
		fprintf(stderr, "lodectl: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/pid", dir);
	snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	return write_file(path, buf);
}

/* Waits for DIR/addr to name a listening daemon (it is written once the daemon listens). */
static int wait_addr(const char *dir, char *addr, size_t len)
{
	char path[PATH_MAX];
	int waited = 0;

	snprintf(path, sizeof(path), "%s/addr", dir);
	while (waited < START_TIMEOUT_MS) {
		struct stat st;

		if (!running_pid(dir))
			return -ECHILD;
		if (!stat(path, &st) && !read_file(path, addr, len) && addr[0])
			return 0;
		sleep_ms(20);
		waited += 20;
	}
	return -ETIMEDOUT;
}

/* The last line of DIR/log (what a daemon that exited said last) into buf, or "". */
static void log_last_line(const char *dir, char *buf, size_t len)
{
	char path[PATH_MAX], tail[1024];
	ssize_t n;
	off_t end;
	int fd;

	buf[0] = 0;
	snprintf(path, sizeof(path), "%s/log", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	end = lseek(fd, 0, SEEK_END);
	n = end < 0 ? -1
		    : pread(fd, tail, sizeof(tail) - 1,
			    end > (off_t)sizeof(tail) - 1 ? end - (off_t)sizeof(tail) + 1 : 0);
	close(fd);
	if (n <= 0)
		return;
	tail[n] = 0;
	while (n > 0 && tail[n - 1] == '\n')
		tail[--n] = 0;
	snprintf(buf, len, "%s", strrchr(tail, '\n') ? strrchr(tail, '\n') + 1 : tail);
}

/* Whether the last line of DIR/log holds text. */
static bool log_says(const char *dir, const char *text)
{
	char last[1024];

	log_last_line(dir, last, sizeof(last));
	return strstr(last, text) != NULL;
}

/* key: the cluster key file every daemon is given, or NULL for --insecure */
static int start_daemon(const char *dir, const char *name, const char *subdir, const char *mds_addr,
			const char *grace, const char *cap_life, const char *lease, const char *key,
			char *addr, size_t alen, char *err, size_t errlen)
{
	char prog[PATH_MAX], listen[160], addrfile[PATH_MAX], old[160] = "", cap[32] = "";
	char *argv[20];
	int i = 0, rc;

	snprintf(addrfile, sizeof(addrfile), "%s/addr", dir);
	if (running_pid(dir))
		return read_file(addrfile, addr, alen);
	/* reuse the port of a previous run so that clients find the daemon again */
	if (!read_file(addrfile, old, sizeof(old)) && old[0])
		snprintf(listen, sizeof(listen), "%s", old);
	else
		snprintf(listen, sizeof(listen), "%s:0",
			 getenv("LODE_LOCAL_LISTEN") ? getenv("LODE_LOCAL_LISTEN")
						     : "tcp://127.0.0.1");
	unlink(addrfile);
	find_prog(name, subdir, prog, sizeof(prog));
	argv[i++] = prog;
	argv[i++] = "--data";
	argv[i++] = (char *)dir;
	argv[i++] = "--listen";
	argv[i++] = listen;
	if (mds_addr) {
		argv[i++] = "--mds";
		argv[i++] = (char *)mds_addr;
	}
	if (grace && grace[0]) {
		argv[i++] = "--orphan-grace";
		argv[i++] = (char *)grace;
	}
	/* an OSS's declared capacity stays with its directory */
	snprintf(addrfile, sizeof(addrfile), "%s/capacity", dir);
	if (mds_addr && !read_file(addrfile, cap, sizeof(cap)) && cap[0]) {
		argv[i++] = "--capacity";
		argv[i++] = cap;
	}
	snprintf(addrfile, sizeof(addrfile), "%s/addr", dir);
	if (cap_life && cap_life[0]) {
		argv[i++] = "--cap-lifetime";
		argv[i++] = (char *)cap_life;
	}
	if (lease && lease[0]) {
		argv[i++] = "--lease";
		argv[i++] = (char *)lease;
	}
	if (key) {
		argv[i++] = "--key";
		argv[i++] = (char *)key;
	} else {
		argv[i++] = "--insecure";
	}
	argv[i++] = "--port-file";
	argv[i++] = addrfile;
	argv[i] = NULL;
	/* The old port may still be held a moment after a kill -9 (the dead daemon's io_uring
	 * lets go of its listening socket after it exits), or held by another program's
	 * connection that the kernel gave it meanwhile, which closes in time: a daemon that
	 * exits because its port is taken is started again, for up to PORT_RETRY_MS by the
	 * clock (each start takes time of its own, long under a sanitizer). */
	for (uint64_t until = now_ms() + PORT_RETRY_MS;;) {
		rc = spawn(dir, argv);
		if (rc) {
			snprintf(err, errlen, "cannot start %s: %s", prog, strerror(-rc));
			return rc;
		}
		rc = wait_addr(dir, addr, alen);
		if (rc != -ECHILD || !old[0] || now_ms() >= until ||
		    !log_says(dir, "Address already in use"))
			break;
		sleep_ms(100);
	}
	if (rc) {
		char last[200] = "";

		log_last_line(dir, last, sizeof(last));
		snprintf(err, errlen, "%s in %s did not start (%s): %s", name, dir,
			 rc == -ECHILD ? "it exited" : "timed out", last[0] ? last : "see its log");
		return rc;
	}
	return 0;
}

/*
 * The cluster's key: DIR/cluster.key, made at the first start, or none when the cluster
 * was first started --insecure (DIR/insecure remembers it). key gets the absolute path, or
 * "" for none. Returns 0 or -errno with the reason in err.
 */
static int local_key(const char *dir, bool insecure, char *key, size_t len, char *err,
		     size_t errlen)
{
	char path[PATH_MAX], abs[PATH_MAX], why[256];

	snprintf(path, sizeof(path), "%s/insecure", dir);
	if (insecure)
		write_file(path, "1\n");
	if (insecure || !access(path, F_OK)) {
		key[0] = 0;
		return 0;
	}
	if (!realpath(dir, abs)) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	if ((size_t)snprintf(key, len, "%s/cluster.key", abs) >= len) {
		snprintf(err, errlen, "%s: path too long", abs);
		return -ENAMETOOLONG;
	}
	if (access(key, F_OK) && lode_key_generate(key, why, sizeof(why))) {
		snprintf(err, errlen, "%s", why);
		return -EIO;
	}
	return 0;
}

/* Waits until the MDS at mds_addr sees at least `want` targets up. */
static int wait_targets(const char *mds_addr, const char *key, int want, char *err, size_t errlen)
{
	struct lode_client_opts co = {.size = sizeof(co), .key_file = key};
	struct lode_client *c;
	char why[256];
	int rc, waited = 0;

	rc = lode_connect(mds_addr, &co, &c);
	if (rc) {
		snprintf(err, errlen, "cannot reach the MDS at %s: %s", mds_addr,
			 lode_auth_explain(rc, key, why, sizeof(why)));
		return rc;
	}
	for (;;) {
		struct lode_target_info t[LODE_MAX_TARGETS_PER_LAYOUT];
		int n = lode_targets(c, t, LODE_MAX_TARGETS_PER_LAYOUT), up = 0;

		for (int i = 0; i < n && i < LODE_MAX_TARGETS_PER_LAYOUT; i++)
			up += t[i].up;
		if (up >= want)
			break;
		if (waited >= START_TIMEOUT_MS) {
			snprintf(err, errlen, "only %d of %d OSS registered with the MDS", up,
				 want);
			lode_disconnect(c);
			return -ETIMEDOUT;
		}
		sleep_ms(50);
		waited += 50;
	}
	lode_disconnect(c);
	return 0;
}

/* Makes DIR/ossI, remembering capacity (when given) for every start of it. */
static void make_oss_dir(const char *dir, int i, const char *capacity, char *path, size_t len)
{
	char file[PATH_MAX + 16];

	snprintf(path, len, "%s/oss%d", dir, i);
	mkdir(path, 0755);
	if (capacity) {
		snprintf(file, sizeof(file), "%s/capacity", path);
		write_file(file, capacity);
	}
}

int local_up(const char *dir, int noss, const char *grace_opt, bool insecure, const char *capacity,
	     char *mds_addr, size_t mds_len, char *key, size_t key_len, char *err, size_t errlen)
{
	char path[PATH_MAX], addr[160], buf[32], grace[32] = "", cap_life[32] = "", lease[32] = "";
	int rc;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return rc;
	}
	rc = local_key(dir, insecure, key, key_len, err, errlen);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/cluster", dir);
	if (noss <= 0) {
		noss = 3;
		if (!read_file(path, buf, sizeof(buf)))
			noss = atoi(buf);
	}
	snprintf(buf, sizeof(buf), "%d\n", noss);
	write_file(path, buf);
	/* options given once stay with the cluster across restarts */
	snprintf(path, sizeof(path), "%s/orphan-grace", dir);
	if (grace_opt)
		write_file(path, grace_opt);
	else
		read_file(path, grace, sizeof(grace));
	/* DIR/cap-lifetime (lodectl local up --cap-lifetime): the MDS's --cap-lifetime */
	snprintf(path, sizeof(path), "%s/cap-lifetime", dir);
	read_file(path, cap_life, sizeof(cap_life));
	snprintf(path, sizeof(path), "%s/lease", dir); /* lodectl local up --lease */
	read_file(path, lease, sizeof(lease));
	snprintf(path, sizeof(path), "%s/mds", dir);
	mkdir(path, 0755);
	rc = start_daemon(path, "lode-mds", "mds", NULL, grace_opt ? grace_opt : grace, cap_life,
			  lease, key[0] ? key : NULL, mds_addr, mds_len, err, errlen);
	if (rc)
		return rc;
	for (int i = 0; i < noss; i++) {
		char uuid[PATH_MAX + 16];
		bool fresh;

		make_oss_dir(dir, i, capacity, path, sizeof(path));
		snprintf(uuid, sizeof(uuid), "%s/oss.uuid", path);
		fresh = access(uuid, F_OK) != 0;
		rc = start_daemon(path, "lode-oss", "oss", mds_addr, NULL, NULL, NULL,
				  key[0] ? key : NULL, addr, sizeof(addr), err, errlen);
		/* a new OSS registers before the next starts, so ossK is target K + 1 (the MDS
		 * numbers targets as they first register; tests and users count on it) */
		if (!rc && fresh)
			rc = wait_targets(mds_addr, key, i + 1, err, errlen);
		if (rc)
			return rc;
	}
	/* ready when the MDS sees every OSS up */
	return wait_targets(mds_addr, key, noss, err, errlen);
}

int local_add_oss(const char *dir, const char *capacity, char *addr, size_t addr_len, int *index,
		  char *err, size_t errlen)
{
	char path[PATH_MAX], buf[32], key[PATH_MAX], mds_addr[160];
	int noss, rc;

	snprintf(path, sizeof(path), "%s/cluster", dir);
	if (read_file(path, buf, sizeof(buf))) {
		snprintf(err, errlen, "%s is not a local cluster (no %s)", dir, path);
		return -ENOENT;
	}
	noss = atoi(buf);
	if (noss < 0 || noss >= 64) {
		snprintf(err, errlen, "%s already has %d OSS, the most a local cluster runs", dir,
			 noss);
		return -ENOSPC;
	}
	snprintf(path, sizeof(path), "%s/mds", dir);
	if (!running_pid(path)) {
		snprintf(err, errlen, "the MDS of %s is not running (lodectl local up %s)", dir,
			 dir);
		return -ESRCH;
	}
	snprintf(path, sizeof(path), "%s/mds/addr", dir);
	if (read_file(path, mds_addr, sizeof(mds_addr)) || !mds_addr[0]) {
		snprintf(err, errlen, "cannot read %s", path);
		return -ENOENT;
	}
	rc = local_key(dir, false, key, sizeof(key), err, errlen);
	if (rc)
		return rc;
	make_oss_dir(dir, noss, capacity, path, sizeof(path));
	/* counted before it starts, so that `local down` stops it even if the start fails */
	snprintf(buf, sizeof(buf), "%d\n", noss + 1);
	snprintf(path, sizeof(path), "%s/cluster", dir);
	rc = write_file(path, buf);
	if (rc) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-rc));
		return rc;
	}
	snprintf(path, sizeof(path), "%s/oss%d", dir, noss);
	rc = start_daemon(path, "lode-oss", "oss", mds_addr, NULL, NULL, NULL, key[0] ? key : NULL,
			  addr, addr_len, err, errlen);
	if (rc)
		return rc;
	*index = noss;
	return wait_targets(mds_addr, key, noss + 1, err, errlen);
}

/* Whether pid has exited: gone, a zombie of ours (reaped here), or anyone else's. */
static bool exited(pid_t pid)
{
	return kill(pid, 0) || waitpid(pid, NULL, WNOHANG) == pid || is_zombie(pid);
}

/* Waits up to 10 s for every pid to exit, then kills what is left. A pid is forgotten (set
 * to 0) once it has exited: reaped, it may be reused. */
static void wait_exited(pid_t *pids, int n)
{
	for (int waited = 0; waited < 10000; waited += 20) {
		int left = 0;

		for (int i = 0; i < n; i++) {
			if (pids[i] && exited(pids[i]))
				pids[i] = 0;
			left += pids[i] != 0;
		}
		if (!left)
			return;
		sleep_ms(20);
	}
	for (int i = 0; i < n; i++)
		if (pids[i] && !exited(pids[i]))
			kill(pids[i], SIGKILL);
	sleep_ms(50);
}

static int stop_one(const char *dir, int sig)
{
	pid_t pid = running_pid(dir);

	if (pid) {
		kill(pid, sig);
		wait_exited(&pid, 1);
	}
	return 0;
}

/* Stops every OSS at once (each exits in milliseconds; waiting for them in turn only added
 * up the waits), then the MDS. */
int local_down(const char *dir, char *err, size_t errlen)
{
	char path[PATH_MAX], buf[32];
	pid_t pids[64] = {0};
	int noss;

	snprintf(path, sizeof(path), "%s/cluster", dir);
	if (read_file(path, buf, sizeof(buf))) {
		snprintf(err, errlen, "%s is not a local cluster (no %s)", dir, path);
		return -ENOENT;
	}
	noss = atoi(buf);
	/* and any ossK past the count (an `up --oss` smaller than an add-oss left it) */
	for (int i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "%s/oss%d", dir, i);
		if (i >= noss && access(path, F_OK))
			break;
		pids[i] = running_pid(path);
		if (pids[i])
			kill(pids[i], SIGTERM);
	}
	wait_exited(pids, 64);
	snprintf(path, sizeof(path), "%s/mds", dir);
	stop_one(path, SIGTERM);
	return 0;
}

int local_kill(const char *dir, const char *name, int sig, char *err, size_t errlen)
{
	char path[PATH_MAX];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	pid = running_pid(path);
	if (!pid) {
		snprintf(err, errlen, "%s of %s is not running", name, dir);
		return -ESRCH;
	}
	if (sig == SIGKILL) {
		kill(pid, SIGKILL);
		/* wait for it to be gone so that a restart finds the port free */
		for (int i = 0; i < 500 && !exited(pid); i++)
			sleep_ms(10);
		return 0;
	}
	return stop_one(path, sig);
}
