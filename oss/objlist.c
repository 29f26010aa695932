/* SPDX-License-Identifier: MIT */
/*
 * Object store: which objects exist. Counting them when the store opens, the size of one,
 * and listing them in id order a page at a time for admin tools (a scan of every directory
 * per page: not for the data path).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objstore_impl.h"

/* Object directory d as a stream for readdir, on a descriptor of its own: closedir() closes
 * the one fdopendir() took, and st->dirfd[d] stays open for the store. Returns 0 or -errno. */
static int dir_open(struct lode_objstore *st, unsigned d, DIR **out)
{
	int fd = openat(st->dirfd[d], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err;

	if (fd < 0)
		return -errno;
	*out = fdopendir(fd);
	if (!*out) {
		err = -errno;
		close(fd);
		return err;
	}
	return 0;
}

int objstore_count_objects(struct lode_objstore *st, uint64_t *count)
{
	uint64_t n = 0;

	for (unsigned d = 0; d < NDIRS; d++) {
		struct lode_wire_objid id;
		struct dirent *de;
		DIR *dir;
		int err = dir_open(st, d, &dir);

		if (err)
			return err;
		while ((de = readdir(dir)))
			if (objstore_parse_name(de->d_name, d, &id))
				n++;
		closedir(dir);
	}
	*count = n;
	return 0;
}

int lode_objstore_stat(struct lode_objstore *st, const struct lode_wire_objid *id,
		       struct lode_obj_result *res)
{
	char name[OBJ_NAME_BUF];
	struct lode_obj_result r = {0};
	struct stat sb;

	objstore_name(id, name, false);
	if (fstatat(objstore_dirfd(st, id), name, &sb, 0) < 0)
		return -errno;
	r.object_size = (uint64_t)sb.st_size;
	r.bytes_stored = (uint64_t)sb.st_blocks * 512;
	objstore_name(id, name, true);
	if (fstatat(objstore_dirfd(st, id), name, &sb, 0) == 0)
		r.bytes_stored += (uint64_t)sb.st_blocks * 512;
	*res = r;
	return 0;
}

static int info_cmp(const void *a, const void *b)
{
	return lode_objid_cmp(&((const struct lode_wire_objinfo *)a)->obj,
			      &((const struct lode_wire_objinfo *)b)->obj);
}

int lode_objstore_list(struct lode_objstore *st, const struct lode_wire_objid *after, uint32_t max,
		       struct lode_wire_objinfo *out, int *eof)
{
	/* Candidates collect in a buffer of twice the page; when it fills, the smallest
	 * `max` are kept: O(objects * log(max)) per page, with bounded memory. */
	size_t cap = (size_t)max * 2, n = 0, kept = 0;
	struct lode_wire_objinfo *cand;
	bool more = false;
	int err = 0;

	if (!max || max > LODE_OBJLIST_MAX)
		return -EINVAL;
	cand = malloc(cap * sizeof(*cand));
	if (!cand)
		return -ENOMEM;
	for (unsigned d = 0; d < NDIRS; d++) {
		struct lode_wire_objid id;
		struct dirent *de;
		DIR *dir;

		err = dir_open(st, d, &dir);
		if (err)
			goto out;
		while ((de = readdir(dir))) {
			if (!objstore_parse_name(de->d_name, d, &id) ||
			    lode_objid_cmp(&id, after) <= 0)
				continue;
			if (n == cap) {
				qsort(cand, n, sizeof(*cand), info_cmp);
				n = max;
				more = true;
			}
			cand[n].obj = id;
			cand[n].size = 0;
			n++;
		}
		closedir(dir);
	}
	qsort(cand, n, sizeof(*cand), info_cmp);
	if (n > max) {
		n = max;
		more = true;
	}
	for (size_t i = 0; i < n; i++) {
		char name[OBJ_NAME_BUF];
		struct stat sb;

		objstore_name(&cand[i].obj, name, false);
		if (fstatat(objstore_dirfd(st, &cand[i].obj), name, &sb, 0) < 0)
			continue; /* removed during the scan */
		out[kept] = cand[i];
		out[kept].size = (uint64_t)sb.st_size;
		kept++;
	}
	*eof = !more;
out:
	free(cand);
	return err ? err : (int)kept;
}
