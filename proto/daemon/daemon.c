/* SPDX-License-Identifier: MIT */
/* Helpers shared by lode-mds and lode-oss: data directories, their instance lock, port
 * files; whole writes. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"

int lode_make_dirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

int lode_write_port_file(const char *path, const char *addr)
{
	char tmp[PATH_MAX];
	FILE *f;
	int rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	if (fprintf(f, "%s\n", addr) < 0 || fflush(f) || fsync(fileno(f)))
		rc = errno ? -errno : -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

int lode_lock_data_dir(const char *dir, const char *prog, char *why, size_t why_len)
{
	char path[PATH_MAX], pid[32] = "";
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/lode.lock", dir) >= (int)sizeof(path)) {
		snprintf(why, why_len, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		int err = -errno;

		snprintf(why, why_len, "cannot open %s: %s", path, strerror(-err));
		return err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno == EWOULDBLOCK ? -EBUSY : -errno;

		n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		if (err == -EBUSY)
			snprintf(why, why_len, "%s is in use by another %s%s%s%s", dir, prog,
				 pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "");
		else
			snprintf(why, why_len, "cannot lock %s: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	/* the holder's pid, for the message above; the lock itself is what counts */
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, pid, (size_t)n, 0) != n) {
		/* only the message above loses its pid: the lock is held */
	}
	return 0; /* fd stays open, and the lock held, until the process exits */
}

void lode_raise_fd_limit(void)
{
	struct rlimit rl;

	/* a server holds one descriptor per connection: take all the system allows us */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int lode_pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}
