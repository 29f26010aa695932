/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: the table of liblode write handles this mount shares between its opens of
 * one file (one write lease per file), their write-behind buffers, and the attributes
 * of a file as this mount knows them (the MDS's, with our own writer's size).
 *
 * Write-behind: see fuse_file.c's top comment for why contiguous writes are gathered and
 * when they are handed on; the buffers and the thread that writes them live here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lode_fuse.h"

static struct lf_writer **bucket_of(struct lode_fuse *lf, uint64_t ino)
{
	return &lf->writers[ino % LF_WRITER_BUCKETS];
}

/* Called with wlock held. Waits while the entry of ino is being opened or closed. */
static struct lf_writer *search_settled(struct lode_fuse *lf, uint64_t ino)
{
	for (;;) {
		struct lf_writer *w = *bucket_of(lf, ino);

		while (w && w->ino != ino)
			w = w->next;
		if (!w || !w->closing)
			return w;
		pthread_cond_wait(&lf->wcond, &lf->wlock);
	}
}

static void unlink_writer(struct lode_fuse *lf, struct lf_writer *w)
{
	struct lf_writer **pp = bucket_of(lf, w->ino);

	while (*pp != w)
		pp = &(*pp)->next;
	*pp = w->next;
	pthread_cond_broadcast(&lf->wcond);
}

struct lf_writer *lf_writer_find(struct lode_fuse *lf, uint64_t ino)
{
	struct lf_writer *w;

	pthread_mutex_lock(&lf->wlock);
	w = search_settled(lf, ino);
	if (w)
		w->refs++;
	pthread_mutex_unlock(&lf->wlock);
	return w;
}

bool lf_writer_exists(struct lode_fuse *lf, uint64_t ino)
{
	struct lf_writer *w = lf_writer_find(lf, ino);

	if (w)
		lf_writer_put(lf, w);
	return w != NULL;
}

/*
 * One buffer in flight per file, written by a short-lived thread while the next one fills:
 * the kernel's copy of the next 16 MiB overlaps the object servers' work on the last.
 * Only one at a time, so writes reach liblode in the order they came.
 */
static void wb_complete_locked(struct lf_writer *w, ssize_t n)
{
	if (n < 0 && !w->wb_err)
		w->wb_err = (int)n;
	if (!w->spare)
		w->spare = w->fl_buf;
	else
		free(w->fl_buf);
	w->fl_buf = NULL;
	w->inflight = false;
	pthread_cond_broadcast(&w->wb_cond);
}

static void *wb_thread(void *arg)
{
	struct lf_writer *w = arg;
	ssize_t n = lode_pwrite(w->f, w->fl_buf, w->fl_len, w->fl_off);

	pthread_mutex_lock(&w->wb_lock);
	wb_complete_locked(w, n);
	pthread_mutex_unlock(&w->wb_lock);
	return NULL;
}

/* With wb_lock held. */
static void wb_wait_locked(struct lf_writer *w)
{
	while (w->inflight)
		pthread_cond_wait(&w->wb_cond, &w->wb_lock);
}

/* With wb_lock held: starts writing the buffer, after the one in flight; on a thread of
 * its own, or (here) on the caller's, which is to wait for it anyway: a flush then costs
 * no thread. The wait lets go of wb_lock, so what is buffered is looked at only after it:
 * another writer of the file may have handed it on, or added to it, meanwhile. */
static void wb_start_locked(struct lf_writer *w, bool here)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	if (!w->wb_len)
		return;
	wb_wait_locked(w);
	if (!w->wb_len)
		return;
	w->fl_buf = w->wb;
	w->fl_off = w->wb_off;
	w->fl_len = w->wb_len;
	w->wb = w->spare;
	w->spare = NULL;
	w->wb_len = 0;
	w->inflight = true;
	if (here) {
		pthread_mutex_unlock(&w->wb_lock);
		wb_thread(w);
		pthread_mutex_lock(&w->wb_lock);
		return;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, wb_thread, w);
	pthread_attr_destroy(&attr);
	if (rc) /* no thread: write it here, still in order */
		wb_complete_locked(w, lode_pwrite(w->f, w->fl_buf, w->fl_len, w->fl_off));
}

/* With wb_lock held: everything buffered is in liblode's hands when it returns (other
 * writers of the file may add to the buffer while this waits: until it is empty). */
static void wb_flush_locked(struct lf_writer *w)
{
	while (w->wb_len || w->inflight) {
		wb_start_locked(w, true);
		wb_wait_locked(w);
	}
}

void lf_writer_drain(struct lf_writer *w)
{
	pthread_mutex_lock(&w->wb_lock);
	wb_flush_locked(w);
	pthread_mutex_unlock(&w->wb_lock);
}

/* Drains, and returns (and forgets) the first write-behind failure. */
int lf_writer_sync_err(struct lf_writer *w, bool free_buffer)
{
	int rc;

	pthread_mutex_lock(&w->wb_lock);
	wb_flush_locked(w);
	rc = w->wb_err;
	w->wb_err = 0;
	if (free_buffer) { /* an idle open file keeps no 16 MiB */
		free(w->wb);
		free(w->spare);
		w->wb = NULL;
		w->spare = NULL;
	}
	pthread_mutex_unlock(&w->wb_lock);
	return rc;
}

/* The mode as the MDS gave it at open, for lf_writer_kill_privs. */
static void writer_note_mode(struct lf_writer *w)
{
	struct lode_stat st;

	lode_file_stat_cached(w->f, &st);
	atomic_store_explicit(&w->mode, st.mode, memory_order_relaxed);
}

static struct lf_writer *writer_alloc(uint64_t ino)
{
	struct lf_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->ino = ino;
	w->refs = 1;
	pthread_mutex_init(&w->wb_lock, NULL);
	pthread_cond_init(&w->wb_cond, NULL);
	return w;
}

static void writer_free(struct lf_writer *w)
{
	pthread_cond_destroy(&w->wb_cond);
	pthread_mutex_destroy(&w->wb_lock);
	free(w->wb);
	free(w->spare);
	free(w);
}

int lf_writer_put(struct lode_fuse *lf, struct lf_writer *w)
{
	int rc;

	pthread_mutex_lock(&lf->wlock);
	if (--w->refs > 0) {
		pthread_mutex_unlock(&lf->wlock);
		return 0;
	}
	/* stays in the table, closing, until its close is sent (or queued to give the
	 * lease back within CLOSE_DELAY_MS, client/closer.c): an open for writing that
	 * came now waits for that instead of sharing a writer being torn down */
	w->closing = true;
	pthread_mutex_unlock(&lf->wlock);
	rc = lf_writer_sync_err(w, true);
	if (rc) {
		lf_log(LF_WARN, "inode %llu: a write failed after its last close: %s",
		       (unsigned long long)w->ino, strerror(-rc));
		lode_close(w->f);
	} else {
		rc = lode_close(w->f);
	}
	/* the kernel sized the file as it wrote; and while the writer is in the table no
	 * GETATTR is answered with an open's older attributes (fuse_dirattr.c) */
	lf_kattr_forget(lf, w->ino);
	pthread_mutex_lock(&lf->wlock);
	unlink_writer(lf, w);
	pthread_mutex_unlock(&lf->wlock);
	writer_free(w);
	return rc;
}

/*
 * close(2) returns once FLUSH has committed the file; the kernel sends RELEASE, after
 * which the closing mount gives the write lease back, in the background. Another mount
 * whose open comes right after that close would get EBUSY from a lease that is about to
 * go: so an open for writing that meets a lease waits for it, a bounded time. The lease
 * of a file really open for writing elsewhere still gives EBUSY, LF_LEASE_WAIT_MS later.
 */
struct lease_wait {
	unsigned waited_ms, step_ms;
};

/* After an EBUSY: sleeps a little longer each time and returns true, or false once
 * LF_LEASE_WAIT_MS have passed. */
static bool lease_wait_more(struct lease_wait *lw)
{
	struct timespec ts;

	if (lw->waited_ms >= LF_LEASE_WAIT_MS)
		return false;
	if (!lw->step_ms)
		lw->step_ms = 1;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)lw->step_ms * 1000000;
	nanosleep(&ts, NULL);
	lw->waited_ms += lw->step_ms;
	if (lw->step_ms < 64)
		lw->step_ms *= 2;
	return true;
}

int lf_open_lease(struct lode_fuse *lf, uint64_t ino, int flags, struct lode_file **out)
{
	struct lease_wait lw = {0};
	int rc;

	do
		rc = lode_ll_open(lf->c, ino, flags, out);
	while (rc == -EBUSY && lease_wait_more(&lw));
	return rc;
}

int lf_truncate_lease(struct lode_fuse *lf, uint64_t ino, uint64_t size)
{
	struct lease_wait lw = {0};
	int rc;

	do
		rc = lode_ll_truncate(lf->c, ino, size);
	while (rc == -EBUSY && lease_wait_more(&lw));
	return rc;
}

/*
 * The writer of ino, opened now if this mount has none. The liblode handle is opened
 * O_RDWR when the MDS allows it, even for an O_WRONLY open, so that readers on this
 * mount can read through it and see the size it knows. An entry being opened is marked
 * closing too, so that a concurrent opener waits instead of racing for the lease.
 */
int lf_writer_open(struct lode_fuse *lf, uint64_t ino, int flags, struct lf_writer **out)
{
	struct lf_writer *w;
	struct lode_file *f;
	int rc;

	pthread_mutex_lock(&lf->wlock);
	w = search_settled(lf, ino);
	if (w) {
		struct lode_stat st;

		w->refs++;
		pthread_mutex_unlock(&lf->wlock);
		/* The MDS sees no OPEN for a shared writer: ask whether a name still leads to
		 * the file (ESTALE as OPEN would answer), or an open through a name that
		 * another mount renamed a file over would write into the deleted file. */
		rc = lode_ll_getattr(lf->c, ino, &st);
		if (rc == -ENOENT || (!rc && st.nlink == 0))
			rc = -ESTALE;
		if (!rc && (flags & O_TRUNC))
			rc = lode_ftruncate(w->f, 0);
		if (rc) {
			lf_writer_put(lf, w);
			return rc;
		}
		*out = w;
		return 0;
	}
	w = writer_alloc(ino);
	if (!w) {
		pthread_mutex_unlock(&lf->wlock);
		return -ENOMEM;
	}
	w->closing = true;
	w->next = *bucket_of(lf, ino);
	*bucket_of(lf, ino) = w;
	pthread_mutex_unlock(&lf->wlock);

	rc = lf_open_lease(lf, ino, O_RDWR | (flags & O_TRUNC), &f);
	w->readable = !rc;
	if (rc == -EACCES && (flags & O_ACCMODE) == O_WRONLY)
		rc = lf_open_lease(lf, ino, O_WRONLY | (flags & O_TRUNC), &f);

	pthread_mutex_lock(&lf->wlock);
	if (rc) {
		unlink_writer(lf, w);
		pthread_mutex_unlock(&lf->wlock);
		writer_free(w);
		return rc;
	}
	w->f = f;
	writer_note_mode(w);
	w->closing = false;
	pthread_cond_broadcast(&lf->wcond);
	pthread_mutex_unlock(&lf->wlock);
	*out = w;
	return 0;
}

/* Enters a handle that lode_ll_create() opened: a new file has no writer yet. */
int lf_writer_adopt(struct lode_fuse *lf, struct lode_file *f, bool readable,
		    struct lf_writer **out)
{
	struct lode_stat st;
	struct lf_writer *w;

	struct lf_writer *had;

	lode_file_stat_cached(f, &st); /* just created: no need to ask the MDS */
	w = writer_alloc(st.ino);
	if (!w)
		return -ENOMEM;
	w->f = f;
	w->readable = readable;
	writer_note_mode(w);
	pthread_mutex_lock(&lf->wlock);
	had = search_settled(lf, w->ino);
	if (had && (had->readable || !readable)) {
		/* the MDS lets a file have many writers, so a create of a file this mount
		 * already writes gets a handle of its own: keep sharing the one we have (its
		 * size is the one this mount's readers see), this one goes back */
		had->refs++;
		pthread_mutex_unlock(&lf->wlock);
		writer_free(w);
		lode_close(f);
		*out = had;
		return 0;
	}
	w->next = *bucket_of(lf, w->ino);
	*bucket_of(lf, w->ino) = w;
	pthread_mutex_unlock(&lf->wlock);
	*out = w;
	return 0;
}

/* Gathers a write into the write-behind buffer, or writes it through (write_through, a
 * write larger than the buffer, no memory). Returns size or -errno: the failure may be an
 * earlier write-behind's, reported here once. */
ssize_t lf_writer_write(struct lf_writer *w, const char *buf, size_t size, uint64_t pos,
			bool write_through)
{
	ssize_t n = (ssize_t)size;

	pthread_mutex_lock(&w->wb_lock);
	if (!write_through && size >= LF_WB_DIRECT_MIN && !w->wb_err && pos != w->last_end &&
	    !(w->wb_len && pos + size > w->wb_off && pos < w->wb_off + w->wb_len) &&
	    !(w->inflight && pos + size > w->fl_off && pos < w->fl_off + w->fl_len)) {
		/* a large write that does not continue the last one (a sequential stream keeps
		 * its write-behind) nor overlaps what is buffered or in flight (no order between
		 * them to keep): at once, beside the others */
		w->last_end = pos + size;
		pthread_mutex_unlock(&w->wb_lock);
		return lode_pwrite(w->f, buf, size, pos);
	}
	w->last_end = pos + size;
	/* many threads (and opens) write through one writer: what is buffered may change while
	 * wb_start_locked waits, so ask again until this write may follow it */
	while (w->wb_len && (pos != w->wb_off + w->wb_len || w->wb_len + size > LF_WB_MAX))
		wb_start_locked(w, false);
	if (w->wb_err) {
		/* an earlier write of this file failed behind the application's back */
		n = w->wb_err;
		w->wb_err = 0;
	} else if (write_through || size > LF_WB_MAX) {
		wb_flush_locked(w);
		n = lode_pwrite(w->f, buf, size, pos);
	} else {
		if (!w->wb)
			w->wb = malloc(LF_WB_MAX);
		if (!w->wb) {
			wb_flush_locked(w);
			n = lode_pwrite(w->f, buf, size, pos);
		} else {
			if (!w->wb_len)
				w->wb_off = pos;
			memcpy(w->wb + w->wb_len, buf, size);
			w->wb_len += size;
			if (w->wb_len == LF_WB_MAX)
				wb_start_locked(w, false);
		}
	}
	pthread_mutex_unlock(&w->wb_lock);
	return n;
}

/*
 * Setuid and setgid on write, truncate and chown. Linux clears them in the kernel, with
 * the rights of the kernel; through FUSE the kernel either sends a mode change in the
 * writer's name, which the MDS refuses to a non-owner (so the write failed), or, with
 * FUSE_HANDLE_KILLPRIV_V2 (fuse_dev.c), leaves it to the file system: the MDS does it for
 * a chown that names an owner or group, and lode-fuse here for writes, truncates and a
 * chown that names neither (chown(f, -1, -1)), with a mode change that the MDS allows
 * anyone who may write the file when it only clears those bits.
 */
int lf_kill_privs(struct lode_fuse *lf, struct lode_stat *st, bool chown)
{
	bool root = lf_caller_uid() == 0;
	uint32_t kill = 0;
	struct lode_setattr sa = {0};
	int rc;

	if (!S_ISREG(st->mode) || (root && !chown))
		return 0;
	if (st->mode & S_ISUID)
		kill |= S_ISUID;
	if ((st->mode & S_ISGID) &&
	    ((st->mode & S_IXGRP) || (!root && !lf_caller_in_group(st->gid))))
		kill |= S_ISGID;
	if (!kill)
		return 0;
	sa.valid = LODE_SET_MODE;
	sa.mode = st->mode & 07777 & ~kill;
	rc = lode_ll_setattr(lf->c, st->ino, &sa, NULL);
	if (rc)
		return rc;
	st->mode &= ~kill;
	/* the kernel's cached mode still has them: make its next stat ask */
	fuse_lowlevel_notify_inval_inode(lf->se, st->ino, -1, 0);
	return 0;
}

int lf_writer_kill_privs(struct lode_fuse *lf, fuse_req_t req, struct lf_writer *w)
{
	uint32_t mode = atomic_load_explicit(&w->mode, memory_order_relaxed);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct lode_stat st;
	int rc;

	if (!(mode & (S_ISUID | S_ISGID)) ||
	    atomic_load_explicit(&w->privs_kept_for, memory_order_relaxed) == ctx->uid + 1)
		return 0;
	lf_req(req);
	if (lf_caller_uid() == 0)
		return 0;
	rc = lode_ll_getattr(lf->c, w->ino, &st);
	if (!rc)
		rc = lf_kill_privs(lf, &st, false);
	if (rc)
		return rc;
	atomic_store_explicit(&w->mode, st.mode, memory_order_relaxed);
	atomic_store_explicit(&w->privs_kept_for, ctx->uid + 1, memory_order_relaxed);
	return 0;
}

void lf_fix_size(struct lode_fuse *lf, struct lode_stat *st)
{
	struct lf_writer *w;

	if (!S_ISREG(st->mode))
		return;
	w = lf_writer_find(lf, st->ino);
	if (!w)
		return;
	/* our writer is the file's only writer: its size is the truth, committed or not */
	lf_writer_drain(w);
	st->size = lode_file_size(w->f);
	lf_writer_put(lf, w);
}

int lf_getattr(struct lode_fuse *lf, uint64_t ino, struct lode_stat *st)
{
	struct lf_writer *w = lf_writer_find(lf, ino);
	int rc;

	if (w) {
		/* size and mtime as the writer knows them, so that the kernel never shrinks
		 * its view of a file this mount is writing */
		lf_writer_drain(w);
		rc = lode_fstat(w->f, st);
		lf_writer_put(lf, w);
		return rc;
	}
	return lode_ll_getattr(lf->c, ino, st);
}
