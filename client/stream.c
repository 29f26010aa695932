/* SPDX-License-Identifier: MIT */
/*
 * liblode: lode_read_stream, a large read handed to its caller piece by piece. The range
 * is cut into the same pieces as any read (stripe.c) and up to max_inflight of them are in
 * flight; each lands, verified, at its final place in the caller's buffer, and the
 * caller's thread gets it at once, in completion order, while the next pieces are read.
 * A consumer (a copy to a GPU, a parser) so overlaps with the reads, with no copy on the
 * host. Failover and corruption handling are read.c's.
 *
 * A stream can outlive its layout: an inference server reads for minutes while a drain or
 * a rebalance moves the copies and deletes the old objects, which then answer as empty.
 * Once the layout is older than LODE_LAYOUT_RECHECK_MS, a piece that finds every copy
 * short fails with -ESTALE instead of handing over zeros (read.c); the stream then waits
 * for what is in flight, asks the MDS for the layout, and reads again every piece it has
 * not handed over. A piece handed over is never read again.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"

/* A piece of the range: [pos, pos + len) of the caller's buffer. */
struct span {
	uint64_t pos, len;
};

struct stream {
	struct lode_file *f;
	char *buf;
	uint64_t off, len;
	lode_piece_fn fn;
	void *arg;
	uint64_t pos;	   /* the first byte of the range no piece has covered yet */
	struct span *open; /* started and not handed over: at most max_inflight */
	struct span *redo; /* to read again, after a refresh */
	unsigned nopen, nredo;
	bool refresh_failed; /* the MDS could not say: a stale layout fails the stream */
};

/* Hands the done pieces to fn (all of them, even after fn failed: they are freed); a piece
 * handed over leaves the open list. */
static int pieces_deliver(struct stream *s, struct window_piece *p, int rc)
{
	while (p) {
		struct window_piece *next = p->next;
		uint64_t pos = (uint64_t)(p->dst - s->buf);

		if (!rc) {
			rc = s->fn(s->arg, s->off + pos, p->dst, (size_t)p->len);
			for (unsigned i = 0; i < s->nopen; i++)
				if (s->open[i].pos == pos) {
					s->open[i] = s->open[--s->nopen];
					break;
				}
		}
		free(p);
		p = next;
	}
	return rc;
}

/* The next piece to read: one to read again first, then the rest of the range in order. */
static bool next_piece(struct stream *s, struct span *sp)
{
	unsigned stripe;
	uint64_t obj_off;

	if (s->nredo) {
		*sp = s->redo[--s->nredo];
		return true;
	}
	if (s->pos == s->len)
		return false;
	sp->pos = s->pos;
	sp->len =
	    lode_client_stripe_piece(&s->f->layout, s->off, s->pos, s->len, &stripe, &obj_off);
	s->pos += sp->len;
	return true;
}

/* Reads pieces until the range is done or one fails; returns 0 or the first error, with
 * nothing in flight. Holds f->rw shared (a refresh takes it exclusive). */
static int stream_pass(struct stream *s, unsigned *handed)
{
	struct lode_file *f = s->f;
	struct window_piece *done;
	struct window w;
	int rc = 0;

	lode_client_window_init(&w);
	w.stream = true;
	pthread_rwlock_rdlock(&f->rw);
	for (;;) {
		/* while pieces remain to start, wake when one more may go; then for each piece */
		bool more = s->nredo || s->pos < s->len;
		unsigned max = more ? f->c->max_inflight : 1, inflight, before = s->nopen;
		struct span sp;

		rc = lode_client_window_wait(&w, max, &done, &inflight);
		rc = pieces_deliver(s, done, rc);
		*handed += before - s->nopen;
		if (rc || (!more && !inflight))
			break;
		/* a layout checked over a second ago (or not at all) may name moved copies */
		w.recheck = s->refresh_failed || lode_client_layout_recheck_due(f);
		for (; inflight < max && next_piece(s, &sp); inflight++) {
			s->open[s->nopen++] = sp;
			rc = lode_client_objects_read_start(f, &w, s->buf + sp.pos, sp.len,
							    s->off + sp.pos);
			if (rc)
				break;
		}
		if (rc)
			break;
	}
	/* after an error, what is still in flight completes into buf: wait for it, so that buf
	 * is the caller's again when this returns (those pieces stay open) */
	if (rc) {
		lode_client_window_drain(&w);
		pieces_deliver(s, w.done, rc);
	}
	pthread_rwlock_unlock(&f->rw);
	lode_client_window_destroy(&w);
	return rc;
}

ssize_t lode_read_stream(struct lode_file *f, void *buf, size_t len, uint64_t off, lode_piece_fn fn,
			 void *arg)
{
	struct stream s = {.f = f, .buf = buf, .off = off, .fn = fn, .arg = arg};
	unsigned stale = 0;
	ssize_t span;
	int rc = 0;

	if ((f->flags & 3) != 1 /* O_WRONLY: -EBADF below */ && (!buf || !fn))
		return -EINVAL;
	span = lode_client_read_span(f, len, off);
	if (span <= 0)
		return span;
	s.len = (uint64_t)span;
	/* a layout that may be out of date is checked first; if the MDS cannot say, a piece
	 * that would read a hole or find no copy fails the stream rather than give zeros */
	if (lode_client_layout_recheck_due(f)) {
		rc = lode_client_layout_refresh(f);
		if (rc == -ENOMEM)
			return rc;
		s.refresh_failed = rc != 0;
		rc = 0;
	}
	s.open = calloc(2 * ((size_t)f->c->max_inflight + 1), sizeof(*s.open));
	if (!s.open)
		return -ENOMEM;
	s.redo = s.open + f->c->max_inflight + 1;
	for (;;) {
		unsigned handed = 0;

		rc = stream_pass(&s, &handed);
		if (rc != -ESTALE || s.refresh_failed)
			break;
		/* a piece found every copy short with a layout over a second old: ask again and
		 * read what was not handed over (still stale after two asks in a row with nothing
		 * handed over: the MDS keeps naming copies that are gone, give up) */
		stale = handed ? 1 : stale + 1;
		if (stale > 2)
			break;
		rc = lode_client_layout_refresh(f);
		if (rc) {
			s.refresh_failed = true;
			rc = -ESTALE;
			break;
		}
		memcpy(s.redo + s.nredo, s.open, s.nopen * sizeof(*s.open));
		s.nredo += s.nopen;
		s.nopen = 0;
	}
	free(s.open);
	lode_client_file_reports_flush(f);
	if (rc == -ESTALE)
		rc = -EIO;
	return rc ? rc : (ssize_t)s.len;
}
