/* SPDX-License-Identifier: MIT */
/*
 * liblode: reading object ranges, verified, with failover. A file range is cut into
 * pieces, each inside one stripe unit and at most IO_MAX bytes (stripe.c), and each piece
 * becomes one OBJ_READ to a copy of its stripe. Up to max_inflight pieces are in flight
 * at once, across all the file's targets; completions run on the I/O thread of the
 * connection (liblode has several, each with a connection to every OSS, used in turn),
 * which verifies checksums and copies (only when a piece does not line up with chunk
 * boundaries: aligned pieces land in the caller's buffer directly).
 *
 * A piece whose target errs, times out or returns data that does not match its checksums
 * is retried on the next copy; only when every copy failed does the read fail, with -EIO
 * for corruption. Corrupt data is never copied to the caller. A mismatch is read once more
 * from the same copy first, held against writes (LODE_OBJ_READ_HELD): a write of the same
 * chunks from another client can land between the OSS's read of the checksums and its send
 * of the bytes, and that copy is not bad.
 *
 * A copy that answers fewer bytes than the file's size says its object holds is tried on
 * the next copy too: it may be the old object of a copy moved elsewhere (lodectl drain,
 * rebalance), deleted once the orphan grace passed, which reads as empty. Only when every
 * copy is that short are the missing bytes a hole (zeros): a sparse file's. Unless the
 * read was started with recheck: then such a piece, and one that found no copy to read
 * while it skipped a degraded one, ends with -ESTALE, and lode_pread asks the MDS for the
 * layout and reads again (every copy may have moved, or been repaired, since the handle
 * opened).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "io.h"
#include "stripe.h"

struct read_piece {
	struct lode_call call;
	struct lode_file *f;
	struct window *w;
	struct lode_wire_obj_read_req req;
	struct lode_wire_cap cap; /* sent with every try */
	char rbody[sizeof(struct lode_wire_obj_read_rep) + 8 * SUMS_MAX];
	char *dst;     /* caller's bytes for this piece */
	uint32_t head; /* bytes of the reply before dst's first byte */
	uint32_t len;  /* bytes wanted */
	char *bounce;  /* reply buffer when the piece is not chunk aligned, else NULL */
	unsigned stripe;
	unsigned first;	 /* the copy tried first (spreads readers over the copies) */
	unsigned mirror; /* the copy being tried */
	uint64_t tried;	 /* copies tried, by mirror number */
	bool reread;	 /* a mismatch was read again from the same copy */
	bool had_short;	 /* a copy answered short of the size: a hole, or a moved copy */
	bool take_short; /* every other copy failed: take the short copy's answer */
	unsigned short_mirror;
	int last_err;
};

static void read_piece_submit(struct read_piece *p);

/* The piece leaves its window with err (0: its bytes are in place). */
static void read_piece_end(struct read_piece *p, int err)
{
	if (!err)
		lode_client_window_piece_done(p->w, p->dst, p->len);
	else
		lode_client_window_leave(p->w, err);
	free(p->bounce);
	free(p);
}

ssize_t lode_client_read_span(struct lode_file *f, size_t len, uint64_t off)
{
	uint64_t size;

	if ((f->flags & 3) == 1 /* O_WRONLY */)
		return -EBADF;
	pthread_mutex_lock(&f->lock);
	size = f->size;
	pthread_mutex_unlock(&f->lock);
	if (off >= size || len == 0)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	if (len > (size_t)SSIZE_MAX)
		len = SSIZE_MAX;
	lode_client_targets_maybe_refresh(f->c);
	return (ssize_t)len;
}

/* Checks every chunk of the reply against its checksum. */
static int verify(const char *data, uint64_t len, const uint64_t *sums)
{
	for (uint64_t off = 0, i = 0; off < len; off += CHUNK, i++) {
		uint64_t n = len - off < CHUNK ? len - off : CHUNK;

		if (lode_chunk_sum(data + off, n) != sums[i])
			return -EBADMSG;
	}
	return 0;
}

/* Picks the next copy to try: first the ones on a target not known to be down, then
 * (rather than fail, for "down" may be out of date) the rest. Never a degraded copy: it
 * may miss acknowledged writes, and its old bytes carry valid checksums, so a read served
 * from it would be silently stale; with no good copy reachable the read fails (EIO) until
 * the good copy is back or a repair refilled the other. Returns -1 when every copy has
 * been tried. */
static int next_copy(struct lode_file *f, unsigned stripe, unsigned first, uint64_t tried)
{
	unsigned mc = f->layout.mirror_count;
	uint64_t degraded;

	pthread_mutex_lock(&f->lock);
	degraded = f->degraded;
	pthread_mutex_unlock(&f->lock);
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned k = 0; k < mc; k++) {
			unsigned m = (first + k) % mc, idx = stripe * mc + m;

			if ((tried & (1ull << m)) || (degraded & (1ull << idx)))
				continue;
			if (pass == 0 && !lode_client_target_is_up(f->c, f->layout.targets[idx]))
				continue;
			return (int)m;
		}
	}
	return -1;
}

/* Whether this handle takes a copy of stripe as degraded. */
static bool stripe_has_degraded(struct lode_file *f, unsigned stripe)
{
	unsigned mc = f->layout.mirror_count;
	uint64_t degraded;

	pthread_mutex_lock(&f->lock);
	degraded = f->degraded;
	pthread_mutex_unlock(&f->lock);
	return (degraded >> (stripe * mc)) & (mc >= 64 ? ~0ull : (1ull << mc) - 1);
}

/* Whether got bytes are fewer than the object holds in the piece's range, as this handle
 * knows the file's size. */
static bool short_of_size(struct read_piece *p, uint64_t got)
{
	struct lode_file *f = p->f;
	uint64_t size, obj, end;

	pthread_mutex_lock(&f->lock);
	size = f->size;
	pthread_mutex_unlock(&f->lock);
	obj = lode_client_object_size(&f->layout, size, p->stripe);
	end = p->req.offset + p->req.length;
	if (end > obj)
		end = obj;
	return end > p->req.offset && p->req.offset + got < end;
}

static void read_piece_done(struct lode_call *call)
{
	struct read_piece *p = lode_container_of(call, struct read_piece, call);
	const struct lode_wire_obj_read_rep *rep;
	const uint64_t *sums;
	char *data = p->bounce ? p->bounce : p->dst;
	uint64_t got = call->reply_data_len;
	int rc = call->status, next;

	if (!rc)
		rc = lode_dec_obj_read_rep(p->rbody, call->reply_body_len, got, p->req.length, &rep,
					   &sums);
	if (!rc)
		rc = verify(data, got, sums);
	if (!rc && !p->take_short && short_of_size(p, got)) {
		next = next_copy(p->f, p->stripe, p->first, p->tried);
		if (next >= 0) {
			/* a moved copy's deleted object, or a hole: another copy says which */
			if (!p->had_short) {
				p->had_short = true;
				p->short_mirror = p->mirror;
			}
			p->reread = false;
			p->req.flags = 0;
			p->mirror = (unsigned)next;
			read_piece_submit(p);
			return;
		}
		if (p->w->recheck) { /* every copy short: moved since the open, or a hole */
			read_piece_end(p, -ESTALE);
			return;
		}
	}
	if (rc) {
		struct lode_file *f = p->f;

		p->last_err = rc;
		if (rc == -EBADMSG && !p->reread) {
			/* a write racing this read can pair its bytes with the checksums read
			 * before it: read once more, bytes and checksums of one moment, before
			 * calling the copy bad */
			p->reread = true;
			p->req.flags = LODE_OBJ_READ_HELD;
			read_piece_submit(p);
			return;
		}
		p->reread = false;
		p->req.flags = 0;
		if (rc == -EACCES || rc == -EKEYEXPIRED) {
			/* the capability, not the copy: every copy would say the same */
			read_piece_end(p, rc);
			return;
		}
		if (rc == -EBADMSG) /* bad bytes on that copy: the MDS hears of it, for repair */
			lode_client_file_report(f, p->stripe * f->layout.mirror_count + p->mirror,
						LODE_REPORT_BAD_DATA);
		if (lode_client_unreachable(rc))
			lode_client_target_suspect(
			    f->c,
			    f->layout.targets[p->stripe * f->layout.mirror_count + p->mirror]);
		next = next_copy(f, p->stripe, p->first, p->tried);
		if (next >= 0) {
			p->mirror = (unsigned)next;
			read_piece_submit(p);
			return;
		}
		if (p->w->recheck && (p->had_short || stripe_has_degraded(f, p->stripe))) {
			/* no copy left to try: one may have been repaired since (or moved) */
			read_piece_end(p, -ESTALE);
			return;
		}
		if (p->had_short && !p->take_short) {
			/* the others failed: the short copy's answer was a hole after all */
			p->take_short = true;
			p->mirror = p->short_mirror;
			read_piece_submit(p);
			return;
		}
		/* corruption on every copy is an I/O error to the application */
		read_piece_end(p, rc == -EBADMSG || rc == -EPROTO ? -EIO : rc);
		return;
	}
	/* bytes the object does not have (a hole, or the end of a sparse file) read as 0 */
	if (p->bounce) {
		uint64_t avail = got > p->head ? got - p->head : 0;

		if (avail > p->len)
			avail = p->len;
		memcpy(p->dst, p->bounce + p->head, avail);
		memset(p->dst + avail, 0, p->len - avail);
	} else if (got < p->len) {
		memset(p->dst + got, 0, p->len - got);
	}
	read_piece_end(p, 0);
}

static void read_piece_submit(struct read_piece *p)
{
	struct lode_file *f = p->f;
	uint32_t tid = f->layout.targets[p->stripe * f->layout.mirror_count + p->mirror];
	struct lode_rpc_conn *conn;
	int rc;

	p->tried |= 1ull << p->mirror;
	rc = lode_client_target_conn(f->c, tid, &conn);
	if (rc) {
		p->call.status = rc;
		p->call.reply_data_len = 0;
		p->call.reply_body_len = 0;
		/* same path as a failed call: try the next copy or give up */
		read_piece_done(&p->call);
		return;
	}
	memset(&p->call, 0, sizeof(p->call));
	p->call.opcode = LODE_OP_OBJ_READ;
	p->call.body = &p->req;
	p->call.body_len = sizeof(p->req);
	p->call.cap = &p->cap;
	p->call.reply_body = p->rbody;
	p->call.reply_body_max = sizeof(p->rbody);
	p->call.reply_data = p->bounce ? p->bounce : p->dst;
	p->call.reply_data_max = p->req.length;
	if (p->w->direct) {
		lode_rpc_call_direct(conn, &p->call);
		read_piece_done(&p->call); /* may try the next copy, again on this thread */
		return;
	}
	p->call.done = read_piece_done;
	lode_rpc_submit(conn, &p->call);
}

/* Starts a read piece on its best copy. */
static void read_piece_start(struct read_piece *p, unsigned first)
{
	int m;

	p->first = first % p->f->layout.mirror_count;
	m = next_copy(p->f, p->stripe, p->first, 0);
	if (m < 0) {
		/* every copy of the stripe is degraded: none is known to hold its bytes (unless
		 * one was repaired since the handle learnt of it) */
		read_piece_end(p, p->w->recheck ? -ESTALE : -EIO);
		return;
	}
	p->mirror = (unsigned)m;
	read_piece_submit(p);
}

/* Starts reading [off, off + len) of the objects into buf (zeros where no data was
 * written); every piece started is counted in w. Returns 0, or the error that stopped it
 * from starting the rest (lode_client_window_drain(w) waits for what did start). */
int lode_client_objects_read_start(struct lode_file *f, struct window *w, char *buf, uint64_t len,
				   uint64_t off)
{
	const struct lode_wire_layout *l = &f->layout;
	uint64_t pos = 0;
	int rc = 0;

	while (pos < len) {
		uint64_t obj_off, n, aligned;
		struct read_piece *p;
		unsigned stripe;

		n = lode_client_stripe_piece(l, off, pos, len, &stripe, &obj_off);
		aligned = round_down(obj_off, CHUNK);
		rc = lode_client_window_enter(w, f->c->max_inflight);
		if (rc)
			break;
		p = calloc(1, sizeof(*p));
		if (!p) {
			lode_client_window_leave(w, -ENOMEM);
			rc = -ENOMEM;
			break;
		}
		/* per piece: a long read renews the capability as it goes */
		rc = lode_client_file_cap(f, false, &p->cap);
		if (rc) {
			free(p);
			lode_client_window_leave(w, rc);
			break;
		}
		p->f = f;
		p->w = w;
		p->stripe = stripe;
		p->dst = buf + pos;
		p->head = (uint32_t)(obj_off - aligned);
		p->len = (uint32_t)n;
		p->req.obj.ino = f->ino;
		p->req.obj.generation = l->generation;
		p->req.obj.stripe = stripe;
		p->req.offset = aligned;
		p->req.length = (uint32_t)round_up(p->head + n, CHUNK);
		if (p->head || n % CHUNK) {
			p->bounce = malloc(p->req.length);
			if (!p->bounce) {
				free(p);
				lode_client_window_leave(w, -ENOMEM);
				rc = -ENOMEM;
				break;
			}
		}
		/* One copy per file, picked by inode number so that files spread over the
		 * copies: a reader then reads each object from start to end, as the OSS's
		 * page-cache read-ahead and the disk want. Taking copies in turn by stripe unit
		 * read every other unit of each object: 1 MiB disk reads instead of 4 MiB,
		 * 0.65-0.86x of the disk's own rate cold (docs/benchmarks.md). */
		read_piece_start(p, (unsigned)f->ino);
		pos += n;
	}
	return rc;
}

static int objects_read_once(struct lode_file *f, char *buf, uint64_t len, uint64_t off,
			     bool recheck)
{
	struct window w;
	uint64_t obj_off;
	unsigned stripe;
	int rc, rc2;

	lode_client_window_init(&w);
	w.recheck = recheck;
	/* one piece (struct window's direct says why) */
	w.direct = lode_client_stripe_piece(&f->layout, off, 0, len, &stripe, &obj_off) == len;
	rc = lode_client_objects_read_start(f, &w, buf, len, off);
	rc2 = lode_client_window_drain(&w);
	lode_client_window_destroy(&w);
	return rc ? rc : rc2;
}

int lode_client_objects_read(struct lode_file *f, char *buf, uint64_t len, uint64_t off,
			     bool recheck)
{
	struct lode_wire_cap cap;
	int rc;

	recheck = recheck && lode_client_layout_recheck_due(f);
	rc = objects_read_once(f, buf, len, off, recheck);
	/* a capability that expired on the way: renew it and read once more */
	if (rc == -EKEYEXPIRED && !lode_client_file_cap(f, true, &cap))
		rc = objects_read_once(f, buf, len, off, recheck);
	return rc;
}

bool lode_client_layout_recheck_due(struct lode_file *f)
{
	uint64_t checked;

	if ((f->flags & O_ACCMODE) != O_RDONLY)
		return false;
	pthread_mutex_lock(&f->lock);
	checked = f->layout_checked_ms;
	pthread_mutex_unlock(&f->lock);
	return lode_now_ms() - checked >= LODE_LAYOUT_RECHECK_MS;
}

/* Reads [start, start + len) of one stripe object into buf, verified, zeros where the
 * object has no data. start is chunk aligned. */
int lode_client_object_read_sync(struct lode_file *f, unsigned stripe, uint64_t start, char *buf,
				 uint64_t len)
{
	struct read_piece *p;
	struct window w;
	int rc;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	rc = lode_client_file_cap(f, false, &p->cap);
	if (rc) {
		free(p);
		return rc;
	}
	lode_client_window_init(&w);
	lode_client_window_enter(&w, 1);
	p->f = f;
	p->w = &w;
	p->stripe = stripe;
	p->dst = buf;
	p->len = (uint32_t)len;
	p->req.obj.ino = f->ino;
	p->req.obj.generation = f->layout.generation;
	p->req.obj.stripe = stripe;
	p->req.offset = start;
	p->req.length = (uint32_t)round_up(len, CHUNK);
	if (len % CHUNK) {
		p->bounce = malloc(p->req.length);
		if (!p->bounce) {
			free(p);
			lode_client_window_destroy(&w);
			return -ENOMEM;
		}
	}
	read_piece_start(p, 0);
	rc = lode_client_window_drain(&w);
	lode_client_window_destroy(&w);
	return rc;
}
