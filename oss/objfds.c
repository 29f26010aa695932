/* SPDX-License-Identifier: MIT */
/*
 * Object store: an object's pair of files (data and .sum), opened (and created) and removed
 * as a pair under a striped lock, and each I/O thread's LRU cache of open pairs, which a
 * removal on any thread empties of the removed object. objstore.h says why the caches stay
 * correct.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objstore_impl.h"

/*
 * Opens an object's data and checksum files. With create, an absent object is created
 * empty (durable only with its first fsync). Returns 0, -ENOENT (absent, !create) or
 * -errno.
 */
static int pair_open(struct lode_objstore *st, const struct lode_wire_objid *id, bool create,
		     int *dfd_out, int *sfd_out)
{
	pthread_mutex_t *lock = objstore_lock(st, id);
	int dirfd = objstore_dirfd(st, id);
	char name[OBJ_NAME_BUF], sname[OBJ_NAME_BUF];
	bool created = false;
	int dfd, sfd;
	int err;

	objstore_name(id, name, false);
	objstore_name(id, sname, true);
	pthread_mutex_lock(lock);
	dfd = openat(dirfd, name, O_RDWR | O_CLOEXEC);
	if (dfd < 0 && errno == ENOENT && create) {
		dfd = openat(dirfd, name, O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0644);
		created = dfd >= 0;
	}
	if (dfd < 0) {
		err = -errno;
		goto err_unlock;
	}
	/* A new object never inherits checksums a crashed removal may have left behind. A
	 * missing .sum of an existing object is created empty: all holes, which readers
	 * report as mismatches unless the data is zero. */
	sfd = openat(dirfd, sname, O_RDWR | O_CLOEXEC | O_CREAT | (created ? O_TRUNC : 0), 0644);
	if (sfd < 0) {
		err = -errno;
		goto err_data;
	}
	/* the new name is made durable by the object's first fsync (objio.c), which
	 * syncs its directory too: nothing on the write path waits for a journal commit */
	if (created)
		atomic_fetch_add(&st->count, 1);
	pthread_mutex_unlock(lock);
	*dfd_out = dfd;
	*sfd_out = sfd;
	return 0;

err_data:
	close(dfd);
	if (created) {
		unlinkat(dirfd, name, 0);
		unlinkat(dirfd, sname, 0);
	}
err_unlock:
	pthread_mutex_unlock(lock);
	return err;
}

void objstore_fds_put(struct obj_fds *f)
{
	if (--f->refs)
		return;
	close(f->dfd);
	close(f->sfd);
	if (f->direct_fd >= 0)
		close(f->direct_fd);
	free(f);
}

static void cache_unlink(struct lode_objstore_io *io, struct obj_fds *f)
{
	if (f->prev)
		f->prev->next = f->next;
	else
		io->head = f->next;
	if (f->next)
		f->next->prev = f->prev;
	else
		io->tail = f->prev;
	f->prev = f->next = NULL;
}

static void cache_drop(struct lode_objstore_io *io, struct obj_fds *f)
{
	cache_unlink(io, f);
	f->cached = false;
	io->nfds--;
	objstore_fds_put(f);
}

static void cache_push_front(struct lode_objstore_io *io, struct obj_fds *f)
{
	f->prev = NULL;
	f->next = io->head;
	if (io->head)
		io->head->prev = f;
	io->head = f;
	if (!io->tail)
		io->tail = f;
}

static struct obj_fds *cache_find(struct lode_objstore_io *io, const struct lode_wire_objid *id)
{
	for (struct obj_fds *f = io->head; f; f = f->next)
		if (!lode_objid_cmp(&f->id, id))
			return f;
	return NULL;
}

/*
 * The object's descriptors with a reference for the caller (objstore_fds_put() when done), and
 * the data file's stat. Validates a cached pair: a link count of 0 means another thread
 * removed the object, so the pair is reopened. Returns 0, -ENOENT (absent, !create) or
 * -errno.
 */
int objstore_fds_get(struct lode_objstore_io *io, const struct lode_wire_objid *id, bool create,
		     struct obj_fds **out, struct stat *stbuf)
{
	struct obj_fds *f = cache_find(io, id);
	int err;

	if (f) {
		if (fstat(f->dfd, stbuf) < 0)
			return -errno;
		if (stbuf->st_nlink > 0) {
			cache_unlink(io, f);
			cache_push_front(io, f);
			f->refs++;
			*out = f;
			return 0;
		}
		cache_drop(io, f);
	}

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->direct_fd = -1;
	err = pair_open(io->st, id, create, &f->dfd, &f->sfd);
	if (err)
		goto err_free;
	if (fstat(f->dfd, stbuf) < 0) {
		err = -errno;
		goto err_close;
	}
	f->id = *id;
	f->id.reserved = 0;
	f->refs = 2;
	f->cached = true;
	cache_push_front(io, f);
	if (++io->nfds > io->max_fds)
		cache_drop(io, io->tail);
	*out = f;
	return 0;

err_close:
	close(f->dfd);
	close(f->sfd);
err_free:
	free(f);
	return err;
}

int lode_objstore_io_create(struct lode_objstore *st, struct lode_loop *loop, unsigned max_fds,
			    struct lode_objstore_io **out)
{
	struct lode_objstore_io *io = calloc(1, sizeof(*io));

	if (!io)
		return -ENOMEM;
	io->st = st;
	io->loop = loop;
	io->max_fds = max_fds ? max_fds : DEFAULT_MAX_FDS;
	pthread_mutex_lock(&st->ios_lock);
	for (unsigned i = 0; i < MAX_IOS; i++) {
		if (!st->ios[i]) {
			st->ios[i] = io;
			break;
		}
	}
	pthread_mutex_unlock(&st->ios_lock);
	*out = io;
	return 0;
}

void lode_objstore_io_destroy(struct lode_objstore_io *io)
{
	if (!io)
		return;
	pthread_mutex_lock(&io->st->ios_lock);
	for (unsigned i = 0; i < MAX_IOS; i++)
		if (io->st->ios[i] == io)
			io->st->ios[i] = NULL;
	pthread_mutex_unlock(&io->st->ios_lock);
	while (io->head)
		cache_drop(io, io->head);
	free(io);
}

struct purge_msg {
	struct lode_objstore_io *io;
	struct lode_wire_objid id;
};

/* On a worker's thread: forget a removed object's descriptors. */
static void purge_on_worker(void *arg)
{
	struct purge_msg *m = arg;
	struct obj_fds *f = cache_find(m->io, &m->id);

	if (f)
		cache_drop(m->io, f);
	free(m);
}

/* Asks every other worker to close its descriptors of a removed object. */
static void purge_everywhere(struct lode_objstore *st, struct lode_objstore_io *self,
			     const struct lode_wire_objid *id)
{
	pthread_mutex_lock(&st->ios_lock);
	for (unsigned i = 0; i < MAX_IOS; i++) {
		struct purge_msg *m;

		if (!st->ios[i] || st->ios[i] == self)
			continue;
		m = malloc(sizeof(*m));
		if (!m)
			continue; /* the worker's own next look at it (nlink 0) still drops it */
		m->io = st->ios[i];
		m->id = *id;
		lode_loop_post(st->ios[i]->loop, purge_on_worker, m);
	}
	pthread_mutex_unlock(&st->ios_lock);
}

int lode_objstore_allocate(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			   uint64_t off, uint64_t len, struct lode_obj_result *res)
{
	struct obj_fds *f;
	struct stat sb;
	int err = objstore_fds_get(io, id, true, &f, &sb);

	if (err)
		return err;
	if (fallocate(f->dfd, FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0)
		err = -errno;
	if (!err && res) {
		memset(res, 0, sizeof(*res));
		res->object_size = (uint64_t)sb.st_size;
	}
	objstore_fds_put(f);
	return err;
}

int lode_objstore_remove(struct lode_objstore *st, struct lode_objstore_io *io,
			 const struct lode_wire_objid *id, struct lode_obj_result *res)
{
	pthread_mutex_t *lock = objstore_lock(st, id);
	int dirfd = objstore_dirfd(st, id);
	char name[OBJ_NAME_BUF], sname[OBJ_NAME_BUF];
	struct lode_obj_result r = {0};
	struct stat sb;
	int err = 0;

	if (io) {
		struct obj_fds *f = cache_find(io, id);

		if (f)
			cache_drop(io, f);
	}
	objstore_name(id, name, false);
	objstore_name(id, sname, true);
	pthread_mutex_lock(lock);
	if (fstatat(dirfd, name, &sb, 0) == 0) {
		r.object_size = (uint64_t)sb.st_size;
		r.bytes_stored = (uint64_t)sb.st_blocks * 512;
	}
	/* Data first: once it is gone the object is absent for everyone. A .sum left by a
	 * crash right after is harmless: a re-created object truncates it (pair_open). */
	if (unlinkat(dirfd, name, 0) == 0)
		atomic_fetch_sub(&st->count, 1);
	else if (errno != ENOENT)
		err = -errno;
	if (!err && unlinkat(dirfd, sname, 0) < 0 && errno != ENOENT)
		err = -errno;
	pthread_mutex_unlock(lock);
	purge_everywhere(st, io, id);
	if (err)
		return err;
	if (res)
		*res = r;
	return 0;
}
