/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for lode-oss in the liveness tests: an artificially slow object store,
 * switched on and off while the OSS runs by files in the directory LODE_SLOW_DIR:
 * - unlink_ms (a number): every unlinkat() sleeps that long first, so orphan removal
 *   crawls, as on a saturated disk;
 * - statvfs_ms: every statvfs() sleeps that long first. The OSS's link thread asks statvfs
 *   for the capacity each heartbeat carries, so heartbeats arrive that late, as from an OSS
 *   starved of CPU or I/O, while its data path answers as usual.
 * Without LODE_SLOW_DIR, or with the file absent, calls pass straight through.
 */
/* both names are defined here, so neither may be an alias of the other */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <unistd.h>

static void slow(const char *name)
{
	const char *dir = getenv("LODE_SLOW_DIR");
	char path[512], text[32];
	ssize_t n;
	int fd;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return;
	text[n] = 0;
	usleep((useconds_t)strtoul(text, NULL, 10) * 1000u);
}

int unlinkat(int dirfd, const char *path, int flags)
{
	static int (*real)(int, const char *, int);

	if (!real)
		real = (int (*)(int, const char *, int))dlsym(RTLD_NEXT, "unlinkat");
	slow("unlink_ms");
	return real(dirfd, path, flags);
}

int statvfs(const char *path, struct statvfs *buf)
{
	static int (*real)(const char *, struct statvfs *);

	if (!real)
		real = (int (*)(const char *, struct statvfs *))dlsym(RTLD_NEXT, "statvfs");
	slow("statvfs_ms");
	return real(path, buf);
}

/* the same call under _FILE_OFFSET_BITS=64 */
int statvfs64(const char *path, struct statvfs64 *buf)
{
	static int (*real)(const char *, struct statvfs64 *);

	if (!real)
		real = (int (*)(const char *, struct statvfs64 *))dlsym(RTLD_NEXT, "statvfs64");
	slow("statvfs_ms");
	return real(path, buf);
}
