/* SPDX-License-Identifier: MIT */
/*
 * liblode: the in-flight window of one operation. A caller thread enters it before each
 * request it starts (waiting while max are in flight) and I/O threads leave it as the
 * requests complete; the caller then drains it and gets the first error.
 */
#include <stdlib.h>

#include "io.h"

void lode_client_window_init(struct window *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->inflight = 0;
	w->error = 0;
	w->stream = false;
	w->done = NULL;
	w->done_tail = &w->done;
	w->recheck = false;
	w->direct = false;
}

void lode_client_window_destroy(struct window *w)
{
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
}

/* Waits until fewer than max are in flight, then counts one more. Returns the first error
 * so far (the caller stops submitting). */
int lode_client_window_enter(struct window *w, unsigned max)
{
	int rc;

	pthread_mutex_lock(&w->lock);
	while (w->inflight >= max && !w->error)
		pthread_cond_wait(&w->cond, &w->lock);
	rc = w->error;
	if (!rc)
		w->inflight++;
	pthread_mutex_unlock(&w->lock);
	return rc;
}

void lode_client_window_leave(struct window *w, int err)
{
	pthread_mutex_lock(&w->lock);
	if (err && !w->error)
		w->error = err;
	w->inflight--;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int lode_client_window_drain(struct window *w)
{
	int rc;

	pthread_mutex_lock(&w->lock);
	while (w->inflight)
		pthread_cond_wait(&w->cond, &w->lock);
	rc = w->error;
	pthread_mutex_unlock(&w->lock);
	return rc;
}

void lode_client_window_piece_done(struct window *w, char *dst, uint64_t len)
{
	struct window_piece *p = NULL;

	if (w->stream) {
		p = malloc(sizeof(*p));
		if (!p) {
			lode_client_window_leave(w, -ENOMEM);
			return;
		}
		p->next = NULL;
		p->dst = dst;
		p->len = len;
	}
	pthread_mutex_lock(&w->lock);
	if (p) {
		*w->done_tail = p;
		w->done_tail = &p->next;
	}
	w->inflight--;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int lode_client_window_wait(struct window *w, unsigned max, struct window_piece **done,
			    unsigned *inflight)
{
	int rc;

	pthread_mutex_lock(&w->lock);
	while (w->inflight >= max && !w->done && !w->error)
		pthread_cond_wait(&w->cond, &w->lock);
	*done = w->done;
	w->done = NULL;
	w->done_tail = &w->done;
	*inflight = w->inflight;
	rc = w->error;
	pthread_mutex_unlock(&w->lock);
	return rc;
}
