/* SPDX-License-Identifier: MIT */
/*
 * Online backups: BACKUP_START makes a compacted copy of the LMDB store on a thread of its
 * own (mdb_env_copyfd2 with MDB_CP_COMPACT runs in one read transaction, so creates and
 * every other write go on, and the copy is the namespace of one moment), into an unnamed
 * temporary file in the data directory. Then it sums the copy (BLAKE2b-256) so that the
 * admin tool can check what it received. BACKUP_READ serves the finished copy a page at a
 * time: lodectl may run on another machine, so the copy travels over the admin's
 * connection rather than being left in the MDS's directory.
 *
 * One copy exists at a time; reading its last byte, the next BACKUP_START or the MDS's
 * exit frees it. Requests come on any worker thread; the copy thread only writes the state
 * below under the lock.
 */
#include "backup.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "log.h"
#include "store.h"

struct lode_mds_backup {
	struct lode_store *st;
	char *dir;
	pthread_mutex_t lock;
	/* protected by lock */
	uint64_t id;   /* the current copy's; 0: none */
	int fd;	       /* its file; -1: none */
	bool running;  /* the copy thread works on it */
	bool joinable; /* thread has been started and not joined */
	int err;       /* what failed the copy */
	uint64_t size; /* when done */
	uint8_t hash[32];
	pthread_t thread;
};

int lode_mds_backup_create(struct lode_mds_backup **out, struct lode_store *st, const char *dir)
{
	struct lode_mds_backup *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	if (sodium_init() < 0) {
		free(b);
		return -EIO;
	}
	b->dir = strdup(dir);
	if (!b->dir) {
		free(b);
		return -ENOMEM;
	}
	b->st = st;
	b->fd = -1;
	pthread_mutex_init(&b->lock, NULL);
	*out = b;
	return 0;
}

void lode_mds_backup_destroy(struct lode_mds_backup *b)
{
	if (!b)
		return;
	if (b->joinable)
		pthread_join(b->thread, NULL);
	if (b->fd >= 0)
		close(b->fd);
	pthread_mutex_destroy(&b->lock);
	free(b->dir);
	free(b);
}

/* The copy's BLAKE2b-256 and size, read back from fd. */
static int sum_file(int fd, uint8_t hash[32], uint64_t *size)
{
	crypto_generichash_state h;
	uint64_t off = 0;
	ssize_t n;
	char *buf = malloc(1 << 20);

	if (!buf)
		return -ENOMEM;
	crypto_generichash_init(&h, NULL, 0, 32);
	while ((n = pread(fd, buf, 1 << 20, (off_t)off)) > 0) {
		crypto_generichash_update(&h, (const unsigned char *)buf, (size_t)n);
		off += (uint64_t)n;
	}
	free(buf);
	if (n < 0)
		return -errno;
	crypto_generichash_final(&h, hash, 32);
	*size = off;
	return 0;
}

static void *copy_main(void *arg)
{
	struct lode_mds_backup *b = arg;
	uint8_t hash[32];
	uint64_t size = 0;
	int fd, err;

	pthread_mutex_lock(&b->lock);
	fd = b->fd; /* stays open while running: only this thread's end closes it */
	pthread_mutex_unlock(&b->lock);
	err = lode_store_copy_compact(b->st, fd);
	if (!err)
		err = sum_file(fd, hash, &size);
	pthread_mutex_lock(&b->lock);
	b->running = false;
	b->err = err;
	if (!err) {
		b->size = size;
		memcpy(b->hash, hash, sizeof(hash));
	}
	pthread_mutex_unlock(&b->lock);
	if (err)
		LODE_WARN("backup: the copy of the store failed: %s", strerror(-err));
	else
		LODE_INFO("backup: a copy of %llu bytes is ready", (unsigned long long)size);
	return NULL;
}

/* An unnamed file in dir (or, where O_TMPFILE is not supported, one unlinked at once). */
static int temp_file(const char *dir)
{
	char path[4096];
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd >= 0 ? fd : -errno;
	snprintf(path, sizeof(path), "%s/backup.XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(path);
	return fd;
}

int lode_mds_backup_start(struct lode_mds_backup *b, uint64_t *id)
{
	uint64_t nid = 0;
	int fd, err;

	while (!nid)
		if (getrandom(&nid, sizeof(nid), 0) != sizeof(nid))
			return -EIO;
	pthread_mutex_lock(&b->lock);
	if (b->running) {
		pthread_mutex_unlock(&b->lock);
		return -EBUSY;
	}
	if (b->joinable) {
		pthread_join(b->thread, NULL); /* done: it cleared running */
		b->joinable = false;
	}
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	b->id = 0;
	fd = temp_file(b->dir);
	if (fd < 0) {
		pthread_mutex_unlock(&b->lock);
		LODE_WARN("backup: no temporary file in %s: %s", b->dir, strerror(-fd));
		return fd;
	}
	b->fd = fd;
	b->id = nid;
	b->running = true;
	b->err = 0;
	b->size = 0;
	LODE_INFO("backup: copying the store");
	err = -pthread_create(&b->thread, NULL, copy_main, b);
	if (err) {
		close(fd);
		b->fd = -1;
		b->id = 0;
		b->running = false;
	} else {
		b->joinable = true;
	}
	pthread_mutex_unlock(&b->lock);
	if (!err)
		*id = nid;
	return err;
}

int lode_mds_backup_read(struct lode_mds_backup *b, const struct lode_wire_backup_read_req *q,
			 struct lode_wire_backup_read_rep *rep, void **data, size_t *len)
{
	uint64_t want;
	ssize_t n;
	void *buf = NULL;
	int err = 0;

	*data = NULL;
	*len = 0;
	pthread_mutex_lock(&b->lock);
	if (!b->id || q->backup_id != b->id) {
		err = -ESTALE;
		goto unlock;
	}
	memset(rep, 0, sizeof(*rep));
	if (b->running)
		goto unlock; /* not ready: ask again */
	if (b->err) {
		err = b->err;
		goto unlock;
	}
	rep->ready = 1;
	rep->size = b->size;
	memcpy(rep->hash, b->hash, sizeof(rep->hash));
	if (q->offset >= b->size)
		goto unlock;
	want = b->size - q->offset < q->max ? b->size - q->offset : q->max;
	buf = malloc(want);
	if (!buf) {
		err = -ENOMEM;
		goto unlock;
	}
	n = pread(b->fd, buf, want, (off_t)q->offset);
	if (n != (ssize_t)want) {
		err = n < 0 ? -errno : -EIO;
		free(buf);
		goto unlock;
	}
	*data = buf;
	*len = want;
	if (q->offset + want == b->size) { /* the last page: the copy has been taken */
		close(b->fd);
		b->fd = -1;
		b->id = 0;
	}
unlock:
	pthread_mutex_unlock(&b->lock);
	return err;
}
