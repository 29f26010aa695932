/* SPDX-License-Identifier: MIT */
/*
 * liblode: writes, truncates and fsyncs of a file's objects, on every copy. A range is cut
 * into pieces as for reads (stripe.c); each piece goes to every live copy of its stripe,
 * one request per copy (fan-out) or one chained request (replication.c), with up to
 * max_inflight pieces in flight. The copies of one piece may complete on different I/O
 * threads at once; the last to complete sums up their statuses. A copy that failed is
 * recorded as degraded at the MDS before the write is acknowledged.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "io.h"

struct write_piece {
	struct chain *chain; /* owned: chain replication, instead of calls[] */
	bool head_orders;    /* chain: see struct chain */
	struct lode_call calls[LODE_LAYOUT_TARGETS_MAX];
	struct lode_wire_obj_rep reps[LODE_LAYOUT_TARGETS_MAX];
	unsigned idx[LODE_LAYOUT_TARGETS_MAX]; /* layout index of each call's copy */
	struct lode_file *f;
	struct window *w;
	unsigned ncalls;
	/* calls completed: they complete on several I/O threads at once, so each call keeps
	 * its own status and the last one to complete sums them up */
	_Atomic unsigned done;
	unsigned good; /* copies that stored the piece (set when all are done) */
	int err;       /* a failure that fails the write itself (set when all are done) */
	int copy_err;  /* the last failure of one copy (set when all are done) */
	struct lode_wire_obj_write_req *req; /* followed by the sums: the request body */
	struct lode_wire_cap cap;	     /* sent with every call */
	struct iovec iov;
};

static void write_piece_end(struct write_piece *p)
{
	if (!p->err && !p->good)
		p->err = p->copy_err ? p->copy_err : -EIO; /* no copy has it */
	lode_client_window_leave(p->w, p->err);
	free(p->chain);
	free(p->req);
	free(p);
}

static void write_call_done(struct lode_call *call)
{
	struct write_piece *p = call->arg;
	unsigned i = (unsigned)(call - p->calls);

	if (!call->status && call->reply_body_len == sizeof(p->reps[i]))
		lode_client_file_stored(p->f, p->req->obj.stripe, p->reps[i].bytes_stored);
	if (lode_client_copy_failure(call->status)) {
		lode_client_file_report(p->f, p->idx[i], LODE_REPORT_WRITE_FAILED);
		if (lode_client_unreachable(call->status))
			lode_client_target_suspect(p->f->c, p->f->layout.targets[p->idx[i]]);
	}
	/* acq_rel: the last call sees every other call's status */
	if (atomic_fetch_add_explicit(&p->done, 1, memory_order_acq_rel) + 1 < p->ncalls)
		return;
	for (unsigned k = 0; k < p->ncalls; k++) {
		int st = p->calls[k].status;

		if (!st)
			p->good++;
		else if (lode_client_copy_failure(st))
			p->copy_err = st;
		else if (!p->err)
			p->err = st == -EBADMSG ? -EIO : st;
	}
	write_piece_end(p);
}

static void write_chain_finish(struct chain *ch)
{
	struct write_piece *p = ch->arg;

	if (ch->good)
		lode_client_file_stored(p->f, p->req->obj.stripe, ch->stored);
	p->good = ch->good;
	p->err = ch->err;
	p->copy_err = ch->copy_err;
	write_piece_end(p);
}

/* Sends a prepared piece (its live copies in idx[]) as one chained request. */
static int write_piece_chain(struct write_piece *p, uint64_t nchunks)
{
	struct lode_file *f = p->f;
	size_t fixed = sizeof(*p->req) + nchunks * sizeof(uint64_t);
	struct chain *ch;
	int rc;

	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		rc = -ENOMEM;
		goto err_free;
	}
	p->chain = ch;
	ch->f = f;
	ch->op = LODE_OP_OBJ_WRITE;
	ch->data = &p->iov;
	ch->finish = write_chain_finish;
	ch->arg = p;
	ch->head_orders = p->head_orders;
	ch->direct = p->w->direct;
	for (unsigned m = 0; m < p->ncalls; m++) {
		if (lode_client_chain_add(ch, p->idx[m]))
			lode_client_file_report(f, p->idx[m], LODE_REPORT_WRITE_FAILED);
	}
	if (!ch->n) {
		rc = -EIO; /* every copy of this stripe is gone */
		goto err_free;
	}
	p->req->flags |= LODE_OBJ_F_CHAIN;
	memcpy(ch->body, p->req, fixed);
	ch->cap = p->cap;
	ch->fixed_len = fixed;
	rc = lode_client_window_enter(p->w, f->c->max_inflight);
	if (rc)
		goto err_free;
	/* p may be freed by the completion: nothing reads it after this */
	lode_client_chain_submit(ch);
	return 0;

err_free:
	free(p->chain);
	free(p->req);
	free(p);
	return rc;
}

/*
 * Writes [obj_off, obj_off + n) of one stripe object from src, to every copy. A piece that
 * covers part of a chunk at either end is sent as it is with LODE_OBJ_F_MERGE: the OSS
 * merges it into the stored chunk under its per-object serialization and sums the result.
 * Never a read-modify-write here: it would cost a round trip, and the chunk read back
 * would lose the bytes another writer of the same file stores there meanwhile (N-to-1).
 */
static int write_piece(struct lode_file *f, struct window *w, unsigned stripe, uint64_t obj_off,
		       const char *src, uint64_t n, bool head_orders)
{
	const struct lode_wire_layout *l = &f->layout;
	uint64_t start = round_down(obj_off, CHUNK), end = obj_off + n, nchunks;
	bool merge = obj_off % CHUNK || end % CHUNK;
	struct write_piece *p;
	const char *data = src;
	uint64_t *sums;
	int rc;

	nchunks = (round_up(end, CHUNK) - start) / CHUNK;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->head_orders = head_orders;
	rc = lode_client_file_cap(f, false, &p->cap);
	if (rc)
		goto err_free;
	p->req = malloc(sizeof(*p->req) + nchunks * sizeof(uint64_t));
	if (!p->req) {
		rc = -ENOMEM;
		goto err_free;
	}
	memset(p->req, 0, sizeof(*p->req));
	p->req->obj.ino = f->ino;
	p->req->obj.generation = l->generation;
	p->req->obj.stripe = stripe;
	p->req->offset = obj_off;
	p->req->flags = (merge ? LODE_OBJ_F_MERGE : 0) | (f->c->lazy_data ? LODE_OBJ_F_LAZY : 0);
	p->req->nchunks = (uint32_t)nchunks;
	sums = (uint64_t *)(p->req + 1);
	/* one checksum per chunk touched, of the bytes of this piece in it */
	for (uint64_t i = 0; i < nchunks; i++) {
		uint64_t from = start + i * CHUNK > obj_off ? start + i * CHUNK : obj_off;
		uint64_t to = start + (i + 1) * CHUNK < end ? start + (i + 1) * CHUNK : end;

		sums[i] = lode_chunk_sum(data + (from - obj_off), to - from);
	}
	p->iov.iov_base = (void *)data;
	p->iov.iov_len = n;
	p->w = w;
	p->f = f;
	p->ncalls = 0;
	{
		uint64_t degraded;

		pthread_mutex_lock(&f->lock);
		degraded = f->degraded | f->report_pending;
		pthread_mutex_unlock(&f->lock);
		for (unsigned m = 0; m < l->mirror_count; m++) {
			unsigned idx = stripe * l->mirror_count + m;
			struct lode_call *call = &p->calls[p->ncalls];

			if (degraded & (1ull << idx))
				continue; /* a repair will refill it from a good copy */
			if (!lode_client_target_is_up(f->c, l->targets[idx])) {
				/* known down: skip the wait, the copy is degraded from here on */
				lode_client_file_report(f, idx, LODE_REPORT_WRITE_FAILED);
				continue;
			}
			rc = lode_client_target_conn(f->c, l->targets[idx], &call->conn_);
			if (rc) {
				lode_client_file_report(f, idx, LODE_REPORT_WRITE_FAILED);
				continue;
			}
			p->idx[p->ncalls++] = idx;
		}
	}
	if (!p->ncalls) {
		rc = -EIO; /* every copy of this stripe is gone: nothing can hold the data */
		goto err_free;
	}
	if (p->ncalls > 1 && p->ncalls <= LODE_CHAIN_MAX + 1 &&
	    lode_replication(f->c) == LODE_REPLICATION_CHAIN)
		return write_piece_chain(p, nchunks);
	rc = lode_client_window_enter(w, f->c->max_inflight);
	if (rc)
		goto err_free;
	/* p may be freed by the completion of its last call: nothing reads it after that */
	for (unsigned m = 0, ncalls = p->ncalls; m < ncalls; m++) {
		struct lode_call *call = &p->calls[m];
		struct lode_rpc_conn *conn = call->conn_;

		call->opcode = LODE_OP_OBJ_WRITE;
		call->body = p->req;
		call->body_len = (uint32_t)(sizeof(*p->req) + nchunks * sizeof(uint64_t));
		call->cap = &p->cap;
		call->data = &p->iov;
		call->data_iovcnt = 1;
		call->reply_body = &p->reps[m];
		call->reply_body_max = sizeof(p->reps[m]);
		call->done = write_call_done;
		call->arg = p;
		if (w->direct && ncalls == 1) {
			/* one copy: no other call to overlap with */
			lode_rpc_call_direct(conn, call);
			write_call_done(call);
			continue;
		}
		lode_rpc_submit(conn, call);
	}
	return 0;

err_free:
	free(p->req);
	free(p);
	return rc;
}

/* Writes len bytes at off; within_size: only those below the file's size as it stands
 * under f->rw, which no truncate can change meanwhile (a hole punched never grows the file
 * back after a truncate that ran between its pieces). head_orders: see struct chain (the
 * write may then fail with -ERESTART, to be sent again). */
static ssize_t pwrite_once(struct lode_file *f, const void *buf, size_t len, uint64_t off,
			   bool within_size, bool head_orders)
{
	const struct lode_wire_layout *l = &f->layout;
	uint64_t pos = 0, stripes = 0;
	struct window w;
	int rc = 0, rc2;

	if ((f->flags & 3) == 0 /* O_RDONLY */)
		return -EBADF;
	if (len == 0)
		return 0;
	if (len > (size_t)SSIZE_MAX || off > (uint64_t)INT64_MAX - len)
		return -EFBIG;
	lode_client_targets_maybe_refresh(f->c);
	lode_client_write_gen_bump(f->c); /* read-ahead fetched from now on may miss this write */
	/* shared even for partial chunks: the OSS merges those, and orders writes that share
	 * a chunk (only truncates take f->rw exclusively); never beside a read of the handle
	 * (struct lode_file's io_lock says why) */
	lode_client_io_enter(f, LODE_IO_WRITE);
	pthread_rwlock_rdlock(&f->rw);
	if (within_size) {
		pthread_mutex_lock(&f->lock);
		len = off >= f->size ? 0 : (size_t)(f->size - off < len ? f->size - off : len);
		pthread_mutex_unlock(&f->lock);
		if (!len) {
			pthread_rwlock_unlock(&f->rw);
			lode_client_io_leave(f, LODE_IO_WRITE);
			return 0;
		}
	}
	lode_client_window_init(&w);
	while (pos < len) {
		uint64_t obj_off, n;
		unsigned stripe;

		n = lode_client_stripe_piece(l, off, pos, len, &stripe, &obj_off);
		w.direct = !pos && n == len; /* one piece (struct window's direct says why) */
		rc = write_piece(f, &w, stripe, obj_off, (const char *)buf + pos, n, head_orders);
		if (rc)
			break;
		stripes |= 1ull << (stripe % 64);
		pos += n;
	}
	rc2 = lode_client_window_drain(&w);
	if (!rc)
		rc = rc2;
	lode_client_window_destroy(&w);
	/* copies that missed this write are recorded as degraded before we acknowledge it */
	rc2 = lode_client_file_reports_flush(f);
	if (!rc)
		rc = rc2;
	if (!rc) {
		pthread_mutex_lock(&f->lock);
		if (off + len > f->size)
			f->size = off + len;
		f->mtime_ns = lode_now_ns();
		f->dirty_meta = true;
		f->meta_gen++;
		f->dirty_stripes |= stripes;
		pthread_mutex_unlock(&f->lock);
	}
	pthread_rwlock_unlock(&f->rw);
	lode_client_io_leave(f, LODE_IO_WRITE);
	lode_client_write_gen_bump(f->c); /* and read-ahead started during it may too */
	if (!rc)
		rc = lode_client_file_lease_renew_if_due(f);
	return rc ? rc : (ssize_t)len;
}

/* How long a write whose chain head could not forward it (-ERESTART) is sent through the
 * head again, the pauses doubling from the first: a head that refused a hop it does not
 * know fetches the MDS's target table at once (a target that just joined: known within
 * milliseconds, and at the latest with the head's next heartbeat, 1 s), and a broken
 * forward connection is opened again by the next forward. After that (12 resends) the
 * copies are sent the write alone (the hazard of struct chain, rather than no write). */
#define HEAD_RESEND_FOR_MS    2000
#define HEAD_RESEND_PAUSE_MS  5	  /* the first: a head fetches the table in about 1 ms */
#define HEAD_RESEND_PAUSE_MAX 320 /* ms */

static ssize_t pwrite_retry(struct lode_file *f, const void *buf, size_t len, uint64_t off,
			    bool within_size)
{
	unsigned waited = 0, pause = HEAD_RESEND_PAUSE_MS;
	struct lode_wire_cap cap;
	ssize_t rc;

	for (;;) {
		bool head_orders = waited < HEAD_RESEND_FOR_MS;

		rc = pwrite_once(f, buf, len, off, within_size, head_orders);
		/* a capability that expired on the way: renew it and write once more (the same
		 * bytes at the same place) */
		if (rc == -EKEYEXPIRED && !lode_client_file_cap(f, true, &cap))
			rc = pwrite_once(f, buf, len, off, within_size, head_orders);
		if (rc != -ERESTART || !head_orders)
			return rc == -ERESTART ? -EIO : rc;
		usleep(pause * 1000);
		waited += pause;
		pause = pause * 2 < HEAD_RESEND_PAUSE_MAX ? pause * 2 : HEAD_RESEND_PAUSE_MAX;
	}
}

ssize_t lode_pwrite(struct lode_file *f, const void *buf, size_t len, uint64_t off)
{
	return pwrite_retry(f, buf, len, off, false);
}

ssize_t lode_client_pwrite_within_size(struct lode_file *f, const void *buf, size_t len,
				       uint64_t off)
{
	return pwrite_retry(f, buf, len, off, true);
}

/* ---- truncate and fsync: one request per object copy (or one chain per stripe) ---- */

struct obj_op {
	struct lode_call call;
	struct window *w;
	struct lode_file *f;
	unsigned idx;		  /* layout index of the copy */
	_Atomic uint64_t *stored; /* OBJ_STAT: where to add the bytes the object takes */
	union {
		struct lode_wire_obj_truncate_req trunc;
		struct lode_wire_obj_allocate_req alloc;
		struct lode_wire_objid id;
	} req;
	struct lode_wire_cap cap;
	struct lode_wire_obj_rep rep;
};

static void obj_op_done(struct lode_call *call)
{
	struct obj_op *o = lode_container_of(call, struct obj_op, call);
	int rc = call->status;

	/* a copy that cannot take it is degraded, as for writes; the stripe check follows */
	if (rc && lode_client_copy_failure(rc)) {
		lode_client_file_report(o->f, o->idx, LODE_REPORT_WRITE_FAILED);
		rc = 0;
	}
	lode_client_window_leave(o->w, rc);
	free(o);
}

static void fsync_chain_finish(struct chain *ch)
{
	/* copies that failed are reported; objects_each checks that each stripe kept one */
	lode_client_window_leave(ch->arg, ch->err);
	free(ch);
}

/* One chained OBJ_FSYNC for the live copies of stripe s. */
static int fsync_chain(struct lode_file *f, struct window *w, unsigned s, uint64_t degraded,
		       const struct lode_wire_cap *cap)
{
	const struct lode_wire_layout *l = &f->layout;
	struct lode_wire_objid id = {.ino = f->ino, .generation = l->generation, .stripe = s};
	struct chain *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return -ENOMEM;
	ch->f = f;
	ch->op = LODE_OP_OBJ_FSYNC;
	ch->finish = fsync_chain_finish;
	ch->arg = w;
	for (unsigned m = 0; m < l->mirror_count; m++) {
		unsigned idx = s * l->mirror_count + m;

		if (degraded & (1ull << idx))
			continue;
		if (lode_client_chain_add(ch, idx))
			lode_client_file_report(f, idx, LODE_REPORT_WRITE_FAILED);
	}
	if (!ch->n) {
		free(ch);
		return -EIO; /* no copy to take it: see objects_each_start */
	}
	memcpy(ch->body, &id, sizeof(id));
	ch->fixed_len = sizeof(id);
	ch->cap = *cap;
	lode_client_window_enter(w, UINT32_MAX);
	lode_client_chain_submit(ch);
	return 0;
}

/* OBJ_TRUNCATE to the object sizes of a file of new_size bytes, OBJ_FSYNC, or
 * OBJ_ALLOCATE of what the file range [new_size, end) takes in each object, on every live
 * copy of the stripes in the mask. -EIO when a stripe has no copy to send it to (every one
 * degraded, failing, or with a failure being reported), as a write does. */
static int objects_each_start(struct lode_file *f, uint8_t op, uint64_t stripes, uint64_t new_size,
			      uint64_t end, struct window *wp)
{
	const struct lode_wire_layout *l = &f->layout;
	struct lode_wire_cap cap;
	uint64_t degraded;
	bool chained;
	int rc;

	lode_client_window_init(wp);
	rc = lode_client_file_cap(f, false, &cap);
	if (rc)
		return rc;

	pthread_mutex_lock(&f->lock);
	degraded = f->degraded | f->report_pending;
	pthread_mutex_unlock(&f->lock);
	chained = op == LODE_OP_OBJ_FSYNC && l->mirror_count > 1 &&
		  l->mirror_count <= LODE_CHAIN_MAX + 1 &&
		  lode_replication(f->c) == LODE_REPLICATION_CHAIN;
	for (unsigned s = 0; s < l->stripe_count && !rc; s++) {
		if (!(stripes & (1ull << (s % 64))))
			continue;
		if (chained) {
			rc = fsync_chain(f, wp, s, degraded, &cap);
			continue;
		}
		uint64_t lo = lode_client_object_size(l, new_size, s);
		uint64_t hi = lode_client_object_size(l, end, s);

		if (op == LODE_OP_OBJ_ALLOCATE && hi <= lo)
			continue; /* the range has no byte in this stripe */
		unsigned sent = 0;

		for (unsigned m = 0; m < l->mirror_count && !rc; m++) {
			unsigned idx = s * l->mirror_count + m;
			struct lode_rpc_conn *conn;
			struct obj_op *o;

			if (degraded & (1ull << idx))
				continue;
			if (lode_client_target_conn(f->c, l->targets[idx], &conn)) {
				lode_client_file_report(f, idx, LODE_REPORT_WRITE_FAILED);
				continue;
			}
			o = calloc(1, sizeof(*o));
			if (!o) {
				rc = -ENOMEM;
				break;
			}
			o->w = wp;
			o->f = f;
			o->idx = idx;
			o->req.id.ino = f->ino;
			o->req.id.generation = l->generation;
			o->req.id.stripe = s;
			if (op == LODE_OP_OBJ_TRUNCATE) {
				o->req.trunc.size = lo;
				o->call.body_len = sizeof(o->req.trunc);
			} else if (op == LODE_OP_OBJ_ALLOCATE) {
				o->req.alloc.offset = lo;
				o->req.alloc.length = hi - lo;
				o->call.body_len = sizeof(o->req.alloc);
			} else {
				o->call.body_len = sizeof(o->req.id);
			}
			o->cap = cap;
			o->call.cap = &o->cap;
			o->call.opcode = op;
			o->call.body = &o->req;
			o->call.reply_body = &o->rep;
			o->call.reply_body_max = sizeof(o->rep);
			o->call.done = obj_op_done;
			lode_client_window_enter(wp, UINT32_MAX);
			lode_rpc_submit(conn, &o->call);
			sent++;
		}
		/* No copy to take it. The stripe check after the reports (every copy degraded)
		 * would not see it when a copy was skipped for a failure not yet on record:
		 * another thread's report of it may be refused (EBUSY: the stripe's last good
		 * copy), leaving the copy good at the MDS and unsynced. */
		if (!sent && !rc)
			rc = -EIO;
	}
	return rc;
}

/* Waits for what objects_each_start (which returned rc) started, reports the copies that
 * failed, and checks that every stripe touched kept a copy that took the operation. */
static int objects_each_finish(struct lode_file *f, uint64_t stripes, struct window *w, int rc)
{
	const struct lode_wire_layout *l = &f->layout;
	uint64_t degraded;
	int rc2 = lode_client_window_drain(w);

	if (!rc)
		rc = rc2;
	lode_client_window_destroy(w);
	if (!rc)
		rc = lode_client_file_reports_flush(f);
	pthread_mutex_lock(&f->lock);
	degraded = f->degraded;
	pthread_mutex_unlock(&f->lock);
	for (unsigned s = 0; s < l->stripe_count && !rc; s++) {
		uint64_t all = (l->mirror_count >= 64 ? ~0ull : (1ull << l->mirror_count) - 1)
			       << (s * l->mirror_count);

		if ((stripes & (1ull << (s % 64))) && (degraded & all) == all)
			rc = -EIO;
	}
	return rc;
}

static int objects_each_once(struct lode_file *f, uint8_t op, uint64_t stripes, uint64_t new_size,
			     uint64_t end)
{
	struct window w;
	int rc = objects_each_start(f, op, stripes, new_size, end, &w);

	return objects_each_finish(f, stripes, &w, rc);
}

static int objects_each(struct lode_file *f, uint8_t op, uint64_t stripes, uint64_t new_size,
			uint64_t end)
{
	struct lode_wire_cap cap;
	int rc = objects_each_once(f, op, stripes, new_size, end);

	/* each is idempotent: after a capability expired on the way, renew and redo */
	if (rc == -EKEYEXPIRED && !lode_client_file_cap(f, true, &cap))
		rc = objects_each_once(f, op, stripes, new_size, end);
	return rc;
}

/* A truncate or an allocation changes what objects take, unanswered by writes: st_blocks
 * is measured (OBJ_STAT) from then on. */
static void stored_inexact(struct lode_file *f)
{
	pthread_mutex_lock(&f->lock);
	f->stored_exact = false;
	pthread_mutex_unlock(&f->lock);
}

void lode_client_file_stored(struct lode_file *f, unsigned stripe, uint64_t bytes)
{
	uint64_t old;

	if (stripe >= LODE_LAYOUT_TARGETS_MAX)
		return;
	old = atomic_load_explicit(&f->stored[stripe], memory_order_relaxed);
	while (bytes > old &&
	       !atomic_compare_exchange_weak_explicit(&f->stored[stripe], &old, bytes,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

int lode_client_objects_truncate(struct lode_file *f, uint64_t new_size)
{
	int rc;

	stored_inexact(f);
	lode_client_write_gen_bump(f->c); /* as for a write */
	rc = objects_each(f, LODE_OP_OBJ_TRUNCATE, ~0ull, new_size, 0);
	lode_client_write_gen_bump(f->c);
	return rc;
}

int lode_client_objects_fsync_commit(struct lode_file *f, uint64_t stripes, int *commit_rc)
{
	struct lode_wire_cap cap;
	struct window w;
	int rc = objects_each_start(f, LODE_OP_OBJ_FSYNC, stripes, 0, 0, &w);
	bool committed = !rc;

	/* beside the syncs, once they are all sent: an fsync that could not send them
	 * publishes nothing */
	*commit_rc = committed ? lode_client_file_commit(f, LODE_OP_COMMIT, true) : 0;
	rc = objects_each_finish(f, stripes, &w, rc);
	/* idempotent: after a capability expired on the way, renew and redo */
	if (rc == -EKEYEXPIRED && !lode_client_file_cap(f, true, &cap))
		rc = objects_each_once(f, LODE_OP_OBJ_FSYNC, stripes, 0, 0);
	if (!rc && !committed)
		*commit_rc = lode_client_file_commit(f, LODE_OP_COMMIT, true);
	return rc;
}

static void stat_done(struct lode_call *call)
{
	struct obj_op *o = lode_container_of(call, struct obj_op, call);
	int rc = call->status;

	if (!rc)
		atomic_fetch_add(o->stored, o->rep.bytes_stored);
	else if (rc == -ENOENT) /* never written, nor truncated: it takes nothing */
		rc = 0;
	lode_client_window_leave(o->w, rc);
	free(o);
}

/*
 * What one copy of the file takes on disk: OBJ_STAT of the first live copy of each stripe,
 * its data and checksum files' allocated blocks summed. A measure, not a ledger: taken by
 * the writer when it commits, so that st_blocks (and du, and quotas built on it) shows
 * what a sparse or preallocated file really takes, at one RPC per stripe per commit. A
 * handle that created its file and only wrote it sums its writes' answers instead (struct
 * lode_file's stored): a new file's commit costs no round trip to the object servers.
 */
int lode_client_objects_stored(struct lode_file *f, uint64_t *bytes)
{
	const struct lode_wire_layout *l = &f->layout;
	_Atomic uint64_t stored = 0;
	struct lode_wire_cap cap;
	uint64_t degraded;
	struct window w;
	bool exact;
	int rc, rc2;

	pthread_mutex_lock(&f->lock);
	exact = f->stored_exact;
	pthread_mutex_unlock(&f->lock);
	if (exact) {
		uint64_t sum = 0;

		for (unsigned s = 0; s < l->stripe_count && s < LODE_LAYOUT_TARGETS_MAX; s++)
			sum += atomic_load_explicit(&f->stored[s], memory_order_relaxed);
		*bytes = sum;
		return 0;
	}
	rc = lode_client_file_cap(f, false, &cap);
	if (rc)
		return rc;

	pthread_mutex_lock(&f->lock);
	degraded = f->degraded | f->report_pending;
	pthread_mutex_unlock(&f->lock);
	lode_client_window_init(&w);
	for (unsigned s = 0; s < l->stripe_count && !rc; s++) {
		struct lode_rpc_conn *conn = NULL;
		struct obj_op *o;
		unsigned m;

		for (m = 0; m < l->mirror_count; m++) {
			unsigned idx = s * l->mirror_count + m;

			/* a measure is not worth waiting on a target known to be down */
			if (!(degraded & (1ull << idx)) &&
			    lode_client_target_is_up(f->c, l->targets[idx]) &&
			    !lode_client_target_conn(f->c, l->targets[idx], &conn))
				break;
		}
		if (m == l->mirror_count) {
			rc = -EIO; /* no copy to ask: not measured */
			break;
		}
		o = calloc(1, sizeof(*o));
		if (!o) {
			rc = -ENOMEM;
			break;
		}
		o->w = &w;
		o->f = f;
		o->idx = s * l->mirror_count + m;
		o->stored = &stored;
		o->req.id.ino = f->ino;
		o->req.id.generation = l->generation;
		o->req.id.stripe = s;
		o->cap = cap;
		o->call.cap = &o->cap;
		o->call.opcode = LODE_OP_OBJ_STAT;
		o->call.body = &o->req;
		o->call.body_len = sizeof(o->req.id);
		o->call.reply_body = &o->rep;
		o->call.reply_body_max = sizeof(o->rep);
		o->call.done = stat_done;
		lode_client_window_enter(&w, UINT32_MAX);
		lode_rpc_submit(conn, &o->call);
	}
	rc2 = lode_client_window_drain(&w);
	lode_client_window_destroy(&w);
	if (!rc)
		rc = rc2;
	if (!rc)
		*bytes = atomic_load(&stored);
	return rc;
}

int lode_client_objects_allocate(struct lode_file *f, uint64_t off, uint64_t end)
{
	stored_inexact(f);
	return objects_each(f, LODE_OP_OBJ_ALLOCATE, ~0ull, off, end);
}
