/* SPDX-License-Identifier: MIT */
/* Start-up helpers shared by lode-mds and lode-oss. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
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
