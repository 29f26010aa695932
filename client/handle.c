/* SPDX-License-Identifier: MIT */
/*
 * liblode: an open file's state behind the API. Making a handle from an OPEN or CREATE
 * reply, committing size and mtime (close-to-open: a reader that opens after our commit
 * sees everything we wrote), keeping the write lease, and reporting copies found failing
 * to the MDS. The data path (read.c, write.c) and the API (file.c) build on it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "codec.h"
#include "io.h"

int lode_client_file_new(struct lode_client *c, const struct lode_wire_open_rep *rep,
			 uint64_t sent_ms, int flags, struct lode_file **out)
{
	struct lode_file *f;

	if (lode_layout_check(&rep->layout))
		return -EPROTO;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->c = c;
	f->ino = rep->attr.ino;
	f->handle = rep->handle;
	f->flags = flags;
	f->layout = rep->layout;
	f->attr = rep->attr;
	f->parent = rep->parent;
	f->lease_ms = rep->lease_ms;
	f->size = rep->attr.size;
	f->mtime_ns = rep->attr.mtime_ns;
	f->lease_renewed_ms = lode_now_ms();
	f->degraded = rep->degraded;
	f->layout_checked_ms = f->lease_renewed_ms;
	pthread_rwlock_init(&f->rw, NULL);
	pthread_mutex_init(&f->io_lock, NULL);
	pthread_cond_init(&f->io_cond, NULL);
	pthread_mutex_init(&f->fsync_lock, NULL);
	pthread_mutex_init(&f->commit_lock, NULL);
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_init(&f->cap_lock, NULL);
	lode_client_file_cap_init(f, &rep->cap, sent_ms);
	*out = f;
	return 0;
}

void lode_client_file_free(struct lode_file *f)
{
	pthread_rwlock_destroy(&f->rw);
	pthread_mutex_destroy(&f->io_lock);
	pthread_cond_destroy(&f->io_cond);
	pthread_mutex_destroy(&f->fsync_lock);
	pthread_mutex_destroy(&f->commit_lock);
	pthread_mutex_destroy(&f->lock);
	pthread_mutex_destroy(&f->cap_lock);
	free(f);
}

/* Sends COMMIT (or CLOSE) with the size and mtime this handle knows. */
static int commit_locked(struct lode_file *f, uint8_t op, bool durable)
{
	struct lode_wire_commit_req req = {.ino = f->ino, .handle = f->handle};
	struct lode_wire_attr attr;
	uint64_t stored, gen;
	int rc;

	pthread_mutex_lock(&f->lock);
	gen = f->meta_gen;
	if (f->dirty_meta) {
		/* a truncate sets the size; writes only extend it, so that a writer that wrote
		 * less than the file's other writers never cuts their bytes off */
		req.commit = f->size_set ? LODE_COMMIT_SET : LODE_COMMIT_EXTEND;
		req.size = f->size;
		req.mtime_ns = f->mtime_ns;
	}
	pthread_mutex_unlock(&f->lock);
	/* what the data takes now, for st_blocks; unmeasured (0) if a target did not say */
	if (req.commit && !lode_client_objects_stored(f, &stored))
		req.blocks_p1 = 1 + (stored + 511) / 512;
	rc = lode_client_mds_call_as(f->c, op, !durable, &req, sizeof(req), NULL, 0, &attr,
				     sizeof(attr));
	if (!rc) {
		pthread_mutex_lock(&f->lock);
		/* nothing changed since the snapshot (a write, a truncate, an allocation) */
		if (req.commit && f->meta_gen == gen) {
			f->dirty_meta = false;
			f->size_set = false;
		}
		/* other writers may have committed a larger end: this handle knows it now */
		if (req.commit && attr.size > f->size && !f->dirty_meta)
			f->size = attr.size;
		f->lease_renewed_ms = lode_now_ms();
		pthread_mutex_unlock(&f->lock);
	}
	return rc;
}

void lode_client_io_enter(struct lode_file *f, unsigned kind)
{
	unsigned other = !kind;

	pthread_mutex_lock(&f->io_lock);
	f->io_waiting[kind]++;
	while (f->io_active[other] || (f->io_waiting[other] && f->io_turn != kind)) {
		if (f->io_active[other])
			f->io_turn = kind; /* the other kind runs: this one goes next */
		pthread_cond_wait(&f->io_cond, &f->io_lock);
	}
	f->io_waiting[kind]--;
	f->io_active[kind]++;
	pthread_mutex_unlock(&f->io_lock);
}

void lode_client_io_leave(struct lode_file *f, unsigned kind)
{
	pthread_mutex_lock(&f->io_lock);
	if (!--f->io_active[kind]) {
		f->io_turn = !kind;
		pthread_cond_broadcast(&f->io_cond);
	}
	pthread_mutex_unlock(&f->io_lock);
}

int lode_client_file_commit(struct lode_file *f, uint8_t op, bool durable)
{
	int rc;

	pthread_mutex_lock(&f->commit_lock);
	rc = commit_locked(f, op, durable);
	pthread_mutex_unlock(&f->commit_lock);
	return rc;
}

void lode_client_file_report(struct lode_file *f, unsigned idx, unsigned kind)
{
	uint64_t bit = 1ull << idx;

	pthread_mutex_lock(&f->lock);
	if (!((f->degraded | f->report_pending) & bit)) {
		f->report_pending |= bit;
		if (kind == LODE_REPORT_BAD_DATA)
			f->report_bad_data |= bit;
	}
	pthread_mutex_unlock(&f->lock);
}

/* The order in which pending reports go out: copies on targets the MDS says are down
 * first, then those on targets that failed lately, then the rest. When every copy of a
 * stripe failed, the MDS keeps the last one reported as the good copy (EBUSY), and readers
 * never read a degraded copy: the good copy should be the one most likely to be reachable.
 * Fills order[] with layout indexes; returns how many. */
static unsigned reports_order(struct lode_file *f, uint64_t pending, const uint32_t *tid,
			      unsigned *order)
{
	uint8_t health[64];
	unsigned n = 0;

	for (unsigned idx = 0; idx < 64; idx++)
		if (pending & (1ull << idx))
			health[idx] = (uint8_t)lode_client_target_health(f->c, tid[idx]);
	for (unsigned h = 0; h < 3; h++)
		for (unsigned idx = 0; idx < 64; idx++)
			if ((pending & (1ull << idx)) && health[idx] == h)
				order[n++] = idx;
	return n;
}

/* The report of copy idx on target tid is answered: off the pending list (marked degraded
 * if the MDS took it), unless the copy moved meanwhile (its bits are then the new place's). */
static void report_done(struct lode_file *f, unsigned idx, uint32_t tid, bool degraded)
{
	pthread_mutex_lock(&f->lock);
	if (f->layout.targets[idx] == tid) {
		if (degraded)
			f->degraded |= 1ull << idx;
		f->report_pending &= ~(1ull << idx);
		f->report_bad_data &= ~(1ull << idx);
	}
	pthread_mutex_unlock(&f->lock);
}

/* REPORT_COPY with the handle's capability: the MDS takes reports only from those who may
 * read the file. One that expired meanwhile is renewed and the report sent again. */
static int report_send(struct lode_file *f, const struct lode_wire_report_req *req)
{
	struct lode_wire_cap cap;
	int rc;

	/* no capability (a lost lease's ESTALE, say) is EIO, never the report's own ESTALE */
	if (lode_client_file_cap(f, false, &cap))
		return -EIO;
	rc = lode_client_mds_call_cap(f->c, LODE_OP_REPORT_COPY, req, sizeof(*req), &cap);
	if (rc == -EKEYEXPIRED) {
		if (lode_client_file_cap(f, true, &cap))
			return -EIO;
		rc = lode_client_mds_call_cap(f->c, LODE_OP_REPORT_COPY, req, sizeof(*req), &cap);
	}
	return rc;
}

int lode_client_file_reports_flush(struct lode_file *f)
{
	unsigned order[64], n;
	uint32_t tid[64]; /* the targets reported, as they were when the reports were made */
	uint64_t pending, bad;
	int rc = 0;

	/* a read-only handle's targets change under f->lock (lode_client_layout_refresh),
	 * which drops the reports about a copy's old place */
	pthread_mutex_lock(&f->lock);
	pending = f->report_pending;
	bad = f->report_bad_data;
	for (unsigned idx = 0; idx < 64; idx++)
		if (pending & (1ull << idx))
			tid[idx] = f->layout.targets[idx];
	pthread_mutex_unlock(&f->lock);
	n = reports_order(f, pending, tid, order);
	for (unsigned k = 0; k < n; k++) {
		unsigned idx = order[k];
		struct lode_wire_report_req req = {.ino = f->ino,
						   .generation = f->layout.generation};
		int r;

		req.stripe = idx / f->layout.mirror_count;
		req.target_id = tid[idx];
		req.kind = (bad & (1ull << idx)) ? LODE_REPORT_BAD_DATA : LODE_REPORT_WRITE_FAILED;
		r = report_send(f, &req);
		if (r == -ENOENT || r == -ESTALE)
			r = 0; /* the copy was replaced meanwhile: nothing left to mark */
		if (r == -EBUSY) {
			/* the stripe's last good copy: it stays good (it has everything that was
			 * acknowledged), and what failed on it cannot be acknowledged */
			report_done(f, idx, tid[idx], false);
			if (!rc)
				rc = -EIO;
			continue;
		}
		if (r) {
			if (!rc)
				rc =
				    -EIO; /* the failed copy is not on record: cannot acknowledge */
			continue;
		}
		report_done(f, idx, tid[idx], true);
	}
	return rc;
}

int lode_client_file_lease_renew_if_due(struct lode_file *f)
{
	bool due;

	pthread_mutex_lock(&f->lock);
	due = f->lease_ms && lode_now_ms() - f->lease_renewed_ms > f->lease_ms / 2;
	pthread_mutex_unlock(&f->lock);
	/* a commit renews the lease and publishes the size written so far */
	return due ? lode_client_file_commit(f, LODE_OP_COMMIT, false) : 0;
}
