/* SPDX-License-Identifier: MIT */
/*
 * liblode: lode_read_stream, a large read handed to its caller piece by piece. The range
 * is cut into the same pieces as any read (stripe.c) and up to max_inflight of them are in
 * flight; each lands, verified, at its final place in the caller's buffer, and the
 * caller's thread gets it at once, in completion order, while the next pieces are read.
 * A consumer (a copy to a GPU, a parser) so overlaps with the reads, with no copy on the
 * host. Failover and corruption handling are read.c's.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "io.h"

static void pieces_free(struct window_piece *p)
{
	while (p) {
		struct window_piece *next = p->next;

		free(p);
		p = next;
	}
}

/* Hands the done pieces to fn (all of them, even after fn failed: they are freed). */
static int pieces_deliver(struct window_piece *p, char *buf, uint64_t off, lode_piece_fn fn,
			  void *arg, int rc)
{
	for (; p; p = p->next)
		if (!rc)
			rc = fn(arg, off + (uint64_t)(p->dst - buf), p->dst, (size_t)p->len);
	return rc;
}

ssize_t lode_read_stream(struct lode_file *f, void *buf, size_t len, uint64_t off, lode_piece_fn fn,
			 void *arg)
{
	struct window_piece *done;
	uint64_t pos = 0;
	struct window w;
	bool recheck = false;
	ssize_t span;
	int rc = 0;

	if ((f->flags & 3) != 1 /* O_WRONLY: -EBADF below */ && (!buf || !fn))
		return -EINVAL;
	span = lode_client_read_span(f, len, off);
	if (span <= 0)
		return span;
	len = (size_t)span;
	/* pieces are handed over as they come, so none can be read again after a refresh:
	 * a layout that may be out of date is checked first; if the MDS cannot say, a piece
	 * that would read a hole or find no copy fails the stream rather than give zeros */
	if (lode_client_layout_recheck_due(f)) {
		rc = lode_client_layout_refresh(f);
		if (rc == -ENOMEM)
			return rc;
		recheck = rc != 0;
		rc = 0;
	}

	lode_client_window_init(&w);
	w.recheck = recheck;
	w.stream = true;
	pthread_rwlock_rdlock(&f->rw);
	for (;;) {
		/* while pieces remain to start, wake when one more may go; then for each piece */
		unsigned max = pos < len ? f->c->max_inflight : 1, inflight;
		unsigned stripe;
		uint64_t obj_off, n;

		rc = lode_client_window_wait(&w, max, &done, &inflight);
		rc = pieces_deliver(done, buf, off, fn, arg, rc);
		pieces_free(done);
		if (rc || (pos == len && !inflight))
			break;
		for (; pos < len && inflight < max; inflight++) {
			n = lode_client_stripe_piece(&f->layout, off, pos, len, &stripe, &obj_off);
			rc = lode_client_objects_read_start(f, &w, (char *)buf + pos, n, off + pos);
			if (rc)
				break;
			pos += n;
		}
		if (rc)
			break;
	}
	/* after an error, what is still in flight completes into buf: wait for it, so that buf
	 * is the caller's again when this returns */
	if (rc) {
		lode_client_window_drain(&w);
		pieces_free(w.done);
	}
	pthread_rwlock_unlock(&f->rw);
	lode_client_window_destroy(&w);
	lode_client_file_reports_flush(f);
	if (rc == -ESTALE && recheck)
		rc = -EIO;
	return rc ? rc : (ssize_t)len;
}
