/* SPDX-License-Identifier: MIT */
/*
 * Object store: opening and closing a store, its directories and its count of objects.
 * The rest of the store is split by the question each part answers: objname.c (what an
 * object's files are called and where they live), objfds.c (an object's pair of open files:
 * opened, cached per thread, removed), objio.c (data and checksum I/O through the calling
 * thread's io_uring loop), objlist.c (which objects exist). See objstore.h for the layout,
 * the threading rules and the crash-safety argument.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "objstore_impl.h"

#define SPREAD_MARK ".spread" /* in DATA/objects: every directory was made spread */

/*
 * Asks the file system to spread the object directories over the disk, as it spreads
 * top-level ones (ext4's Orlov allocator, for a directory marked "top of a hierarchy":
 * chattr +T). ext4 puts a new file's inode in its directory's block group and, without
 * a journal, skips the inodes freed in the last minute or more, scanning them one by one
 * from the group's start at every create. With all 256 directories in one or two groups,
 * each object created after a big delete (old checkpoints removed, a new one written)
 * scanned past every object just removed (tools/bench/after-delete.sh: 390-560 files/s,
 * the OSSes 2-3 times busier, against 620-760 spread).
 *
 * Only directories made after the flag is set are spread. So until every directory was
 * made with it (SPREAD_MARK says so), each start makes the empty ones again (rmdir refuses
 * one that holds anything): a store of an older lode-oss is spread as its directories
 * empty, a drained target at its next start. Returns true when the caller, once it has
 * made the missing directories, should write the mark. A file system without the flag
 * ignores all this.
 */
static bool spread_directories(int objs)
{
	bool all = true;
	int flags;

	if (faccessat(objs, SPREAD_MARK, F_OK, 0) == 0)
		return false;
	if (ioctl(objs, FS_IOC_GETFLAGS, &flags) < 0)
		return false;
	if (!(flags & FS_TOPDIR_FL)) {
		flags |= FS_TOPDIR_FL;
		if (ioctl(objs, FS_IOC_SETFLAGS, &flags) < 0)
			return false;
	}
	for (unsigned i = 0; i < NDIRS; i++) {
		char name[3];

		snprintf(name, sizeof(name), "%02x", i);
		if (unlinkat(objs, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
			all = false;
	}
	return all;
}

int lode_objstore_open(struct lode_objstore **out, const char *data_dir)
{
	struct lode_objstore *st;
	uint64_t count;
	int root, objs;
	bool mark;
	int err;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	for (unsigned i = 0; i < NDIRS; i++)
		st->dirfd[i] = -1;
	for (unsigned i = 0; i < NLOCKS; i++)
		pthread_mutex_init(&st->locks[i], NULL);
	for (unsigned i = 0; i < RANGE_BUCKETS; i++)
		pthread_mutex_init(&st->ranges[i].lock, NULL);
	pthread_mutex_init(&st->ios_lock, NULL);
	pthread_mutex_init(&st->list_lock, NULL);
	st->zero_sum = lode_chunk_sum("", 0);

	root = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		err = -errno;
		goto err_free;
	}
	if (mkdirat(root, "objects", 0755) < 0 && errno != EEXIST) {
		err = -errno;
		goto err_root;
	}
	objs = openat(root, "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (objs < 0) {
		err = -errno;
		goto err_root;
	}
	mark = spread_directories(objs);
	/* All 256 directories exist from the start, so that creating an object never races
	 * with creating its directory, and their entries are durable before any object. */
	for (unsigned i = 0; i < NDIRS; i++) {
		char name[3];

		snprintf(name, sizeof(name), "%02x", i);
		if (mkdirat(objs, name, 0755) < 0 && errno != EEXIST) {
			err = -errno;
			goto err_objs;
		}
		st->dirfd[i] = openat(objs, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (st->dirfd[i] < 0) {
			err = -errno;
			goto err_objs;
		}
	}
	if (mark) {
		int fd = openat(objs, SPREAD_MARK, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

		if (fd < 0) {
			err = -errno;
			goto err_objs;
		}
		close(fd);
	}
	if (fsync(objs) < 0 || fsync(root) < 0) {
		err = -errno;
		goto err_objs;
	}
	err = objstore_count_objects(st, &count);
	if (err)
		goto err_objs;
	atomic_store(&st->count, count);
	objstore_direct_probe(st, objs);
	close(objs);
	close(root);
	*out = st;
	return 0;

err_objs:
	close(objs);
err_root:
	close(root);
err_free:
	lode_objstore_close(st);
	return err;
}

void lode_objstore_close(struct lode_objstore *st)
{
	if (!st)
		return;
	for (unsigned i = 0; i < NDIRS; i++)
		if (st->dirfd[i] >= 0)
			close(st->dirfd[i]);
	for (unsigned i = 0; i < NLOCKS; i++)
		pthread_mutex_destroy(&st->locks[i]);
	for (unsigned i = 0; i < RANGE_BUCKETS; i++)
		pthread_mutex_destroy(&st->ranges[i].lock);
	pthread_mutex_destroy(&st->ios_lock);
	pthread_mutex_destroy(&st->list_lock);
	free(st->list_ids);
	free(st);
}

uint64_t lode_objstore_count(const struct lode_objstore *st)
{
	return atomic_load(&((struct lode_objstore *)st)->count);
}
