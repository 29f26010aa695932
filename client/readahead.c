/* SPDX-License-Identifier: MIT */
/*
 * liblode: lode_pread, the reads of a handle: served from read-ahead windows when the
 * reader is sequential (below), else read from the objects (read.c).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "io.h"

/* ---- sequential read-ahead ----
 *
 * A reader that waits for each read before it asks for the next (an O_DIRECT reader
 * through the mount, a loader's small preads) has one request in flight: the stream runs
 * at one request's latency. After RA_AFTER sequential reads of at most RA_READ_MAX bytes
 * on a read-only handle, the next RA_WINDOWS windows of RA_WINDOW bytes are read ahead
 * (each window's pieces go to different OSS and I/O threads) and reads are served from
 * them; a read elsewhere stops it. A handle whose reads overlap in time (the kernel's own
 * readahead, a caller that pipelines) turns it off for good: it would only add a copy.
 *
 * Coherence: a window records the client's write_gen when it starts and is served only if
 * no write or truncate of this client started or ended since; data from other clients
 * follows close-to-open, as every read of an open handle does.
 */
#define RA_WINDOW   (2ull << 20)
#define RA_WINDOWS  4
#define RA_READ_MAX (1ull << 20)
#define RA_AFTER    3

struct ra_window {
	struct window w;
	char *buf; /* RA_WINDOW bytes, allocated on first use */
	uint64_t off;
	uint64_t len; /* 0: holds nothing */
	uint64_t gen; /* write_gen when it started */
	bool pending; /* started, not drained yet */
	int err;
};

struct readahead {
	pthread_mutex_t lock;
	uint64_t next; /* where a sequential reader reads next */
	unsigned seq;  /* sequential reads in a row */
	struct ra_window win[RA_WINDOWS];
};

static void ra_wait(struct ra_window *x)
{
	if (x->pending) {
		int rc = lode_client_window_drain(&x->w);

		if (!x->err)
			x->err = rc;
		x->pending = false;
	}
}

void lode_client_readahead_free(struct lode_file *f)
{
	struct readahead *ra = f->ra;

	if (!ra)
		return;
	for (unsigned i = 0; i < RA_WINDOWS; i++) {
		ra_wait(&ra->win[i]);
		lode_client_window_destroy(&ra->win[i].w);
		free(ra->win[i].buf);
	}
	pthread_mutex_destroy(&ra->lock);
	free(ra);
	f->ra = NULL;
}

/* The handle's read-ahead, allocated on first use; NULL when off or out of memory. */
static struct readahead *ra_get(struct lode_file *f)
{
	struct readahead *ra;

	pthread_mutex_lock(&f->lock);
	ra = f->ra;
	if (!ra) {
		ra = calloc(1, sizeof(*ra));
		if (ra) {
			pthread_mutex_init(&ra->lock, NULL);
			for (unsigned i = 0; i < RA_WINDOWS; i++)
				lode_client_window_init(&ra->win[i].w);
			f->ra = ra;
		}
	}
	pthread_mutex_unlock(&f->lock);
	return ra;
}

/* The valid window holding byte off, or NULL. */
static struct ra_window *ra_find(struct readahead *ra, uint64_t off)
{
	for (unsigned i = 0; i < RA_WINDOWS; i++) {
		struct ra_window *x = &ra->win[i];

		if (x->len && off >= x->off && off < x->off + x->len)
			return x;
	}
	return NULL;
}

/* Copies [off, off + len) out of the windows if they hold all of it, good and current.
 * With ra->lock held. */
static bool ra_serve(struct lode_file *f, struct readahead *ra, char *buf, uint64_t len,
		     uint64_t off)
{
	uint64_t pos = 0;

	while (pos < len) {
		struct ra_window *x = ra_find(ra, off + pos);
		uint64_t n;

		if (!x)
			return false;
		ra_wait(x);
		if (x->err ||
		    x->gen != atomic_load_explicit(&f->c->write_gen, memory_order_acquire)) {
			x->len = 0; /* failed (the read path fails over and reports) or stale */
			x->err = 0;
			return false;
		}
		n = x->off + x->len - (off + pos);
		if (n > len - pos)
			n = len - pos;
		memcpy(buf + pos, x->buf + (off + pos - x->off), n);
		pos += n;
	}
	atomic_fetch_add_explicit(&f->ra_served, len, memory_order_relaxed);
	return true;
}

/* After a read of [off, off + len): follows a sequential reader, stops for others. With
 * ra->lock held. */
static void ra_plan(struct lode_file *f, struct readahead *ra, uint64_t off, uint64_t len,
		    uint64_t size)
{
	uint64_t covered, want;

	if (off != ra->next) {
		ra->seq = 0;
		ra->next = off + len;
		return;
	}
	ra->next = off + len;
	if (++ra->seq < RA_AFTER)
		return;
	want = ra->next + RA_WINDOWS * RA_WINDOW;
	if (want > size)
		want = size;
	/* what the windows already hold from next on */
	covered = ra->next;
	for (struct ra_window *x; covered < want && (x = ra_find(ra, covered));)
		covered = x->off + x->len;
	while (covered < want) {
		struct ra_window *x = NULL;

		/* a window holding nothing, or only bytes behind the reader */
		for (unsigned i = 0; i < RA_WINDOWS && !x; i++)
			if (!ra->win[i].len || ra->win[i].off + ra->win[i].len <= ra->next)
				x = &ra->win[i];
		if (!x)
			break;
		ra_wait(x);
		if (!x->buf)
			x->buf = malloc(RA_WINDOW);
		if (!x->buf)
			break;
		x->off = covered;
		x->len = want - covered < RA_WINDOW ? want - covered : RA_WINDOW;
		x->gen = atomic_load_explicit(&f->c->write_gen, memory_order_acquire);
		/* a window that failed was read again the normal way (which rechecks): its
		 * error is not this start's */
		x->w.error = 0;
		x->w.recheck = lode_client_layout_recheck_due(f);
		x->err = lode_client_objects_read_start(f, &x->w, x->buf, x->len, x->off);
		x->pending = true;
		covered += x->len;
	}
}

int lode_client_layout_refresh(struct lode_file *f)
{
	struct lode_wire_getattr_req req = {.ino = f->ino};
	struct lode_wire_layout_rep rep;
	struct lode_wire_layout *l = &f->layout;
	struct readahead *ra;
	int rc;

	/* a write handle's copies cannot move; another reader of the handle may have just
	 * asked */
	if (!lode_client_layout_recheck_due(f))
		return 0;
	rc = lode_client_mds_call(f->c, LODE_OP_LAYOUT_GET, &req, sizeof(req), NULL, 0, &rep,
				  sizeof(rep), NULL, 0, NULL);
	if (!rc && lode_layout_check(&rep.layout))
		rc = -EPROTO;
	/* the file deleted (ENOENT) is an answer: its reader keeps what it had, as before */
	if (rc && rc != -ENOENT)
		return rc == -ENOMEM ? rc : -EIO; /* unknown: never zeros in place of moved data */
	/* nothing may read the targets meanwhile: read-ahead idle (ra_plan starts windows
	 * with ra->lock held), then no read or stream in progress */
	ra = ra_get(f);
	if (ra) {
		pthread_mutex_lock(&ra->lock);
		for (unsigned i = 0; i < RA_WINDOWS; i++)
			ra_wait(&ra->win[i]);
	}
	pthread_rwlock_wrlock(&f->rw);
	pthread_mutex_lock(&f->lock);
	/* the same objects (a new generation is a file rewritten: this reader keeps the old
	 * one's view, as a deleted file's does) */
	if (!rc && rep.layout.generation == l->generation &&
	    rep.layout.stripe_size == l->stripe_size &&
	    rep.layout.stripe_count == l->stripe_count &&
	    rep.layout.mirror_count == l->mirror_count) {
		uint64_t moved = 0;

		for (unsigned i = 0; i < LODE_LAYOUT_TARGETS_MAX && i < 64; i++)
			if (l->targets[i] != rep.layout.targets[i])
				moved |= 1ull << i;
		memcpy(l->targets, rep.layout.targets, sizeof(l->targets));
		/* a report not sent yet was about the copy's old place: dropped; the others
		 * stay avoided until the MDS has them */
		f->report_pending &= ~moved;
		f->report_bad_data &= ~moved;
		f->degraded = rep.degraded | f->report_pending;
	}
	f->layout_checked_ms = lode_now_ms();
	pthread_mutex_unlock(&f->lock);
	pthread_rwlock_unlock(&f->rw);
	if (ra)
		pthread_mutex_unlock(&ra->lock);
	return 0;
}

int lode_file_grow(struct lode_file *f, uint64_t *size)
{
	struct lode_wire_getattr_req req = {.ino = f->ino};
	struct lode_wire_layout_rep rep;
	bool reader = (f->flags & 3) == 0 /* O_RDONLY */;
	int rc = 0;

	if (reader)
		rc = lode_client_mds_call(f->c, LODE_OP_LAYOUT_GET, &req, sizeof(req), NULL, 0,
					  &rep, sizeof(rep), NULL, 0, NULL);
	if (reader && !rc && lode_layout_check(&rep.layout))
		rc = -EPROTO;
	pthread_mutex_lock(&f->lock);
	/* the same objects, longer: a file rewritten (a new generation) keeps the open's
	 * view, as in lode_client_layout_refresh */
	if (reader && !rc && rep.layout.generation == f->layout.generation &&
	    rep.attr.size > f->size)
		f->size = rep.attr.size;
	*size = f->size;
	pthread_mutex_unlock(&f->lock);
	return rc == -ENOENT ? 0 : rc; /* deleted since: the open's view */
}

/* The objects' bytes of [off, off + len), with f->rw held shared. */
static int read_objects(struct lode_file *f, char *buf, uint64_t len, uint64_t off, bool recheck)
{
	int rc;

	lode_client_io_enter(f, LODE_IO_READ);
	pthread_rwlock_rdlock(&f->rw);
	rc = lode_client_objects_read(f, buf, len, off, recheck);
	pthread_rwlock_unlock(&f->rw);
	lode_client_io_leave(f, LODE_IO_READ);
	return rc;
}

ssize_t lode_pread(struct lode_file *f, void *buf, size_t len, uint64_t off)
{
	ssize_t span = lode_client_read_span(f, len, off);
	struct readahead *ra = NULL;
	bool served = false;
	uint64_t size;
	int rc = 0;

	if (span <= 0)
		return span;
	len = (size_t)span;
	pthread_mutex_lock(&f->lock);
	size = f->size;
	pthread_mutex_unlock(&f->lock);
	if (atomic_fetch_add(&f->readers, 1))
		atomic_store(&f->ra_off, true);
	if ((f->flags & 3) == 0 /* O_RDONLY */ && len <= RA_READ_MAX && !atomic_load(&f->ra_off))
		ra = ra_get(f);
	if (ra) {
		pthread_mutex_lock(&ra->lock);
		served = ra_serve(f, ra, buf, len, off);
		if (!served)
			pthread_mutex_unlock(&ra->lock);
	}
	if (!served) {
		rc = read_objects(f, buf, len, off, true);
		if (rc == -ESTALE) { /* a hole, or no copy to read: is the layout current? */
			rc = lode_client_layout_refresh(f);
			if (!rc)
				rc = read_objects(f, buf, len, off, false);
		}
		if (ra)
			pthread_mutex_lock(&ra->lock);
	}
	if (ra) {
		if (!rc && !atomic_load(&f->ra_off))
			ra_plan(f, ra, off, len, size);
		pthread_mutex_unlock(&ra->lock);
	}
	atomic_fetch_sub(&f->readers, 1);
	lode_client_file_reports_flush(f); /* advisory for reads: the data returned was good */
	return rc ? rc : (ssize_t)len;
}

uint64_t lode_readahead_bytes(const struct lode_file *f)
{
	return atomic_load_explicit(&f->ra_served, memory_order_relaxed);
}
