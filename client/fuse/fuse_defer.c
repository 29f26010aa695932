/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: work that must wait for a lock, taken off the request threads.
 *
 * libfuse runs at most max_threads request threads, and a request the kernel sent is
 * answered only by one of them. A thread that waits for a lock whose holder in turn waits
 * for the kernel (FUSE_NOTIFY_STORE locks the pages it fills, and a page is held locked
 * while its READ is in flight) must not be a request thread: once every request thread
 * waited so, nothing would be left to answer that READ, and the mount would hang. Such
 * waits are handed to the mount's own threads here, which answer the request themselves
 * when the lock is theirs (libfuse replies from any thread).
 *
 * The threads are started as work comes, up to LF_DEFER_THREADS, and live until the mount
 * ends; work queued while all of them wait goes in order to the first that is free. None
 * of them ever answers a request the holder of a lock waits for, so none can hold back
 * the holder.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lode_fuse.h"

struct lf_deferred {
	void (*fn)(void *arg);
	struct lf_deferred *next;
	max_align_t arg[]; /* the caller's argument, copied */
};

static void *defer_thread(void *p)
{
	struct lf_defer *d = p;

	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct lf_deferred *w = d->head;

		if (!w) {
			if (d->stop)
				break;
			d->idle++;
			pthread_cond_wait(&d->cond, &d->lock);
			d->idle--;
			continue;
		}
		d->head = w->next;
		if (!d->head)
			d->tail = NULL;
		d->queued--;
		pthread_mutex_unlock(&d->lock);
		w->fn(w->arg);
		free(w);
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

static int lf_pool_run(struct lf_defer *d, void (*fn)(void *arg), const void *arg, size_t len)
{
	struct lf_deferred *w = malloc(sizeof(*w) + len);
	int rc = 0;

	if (!w)
		return -ENOMEM;
	w->fn = fn;
	memcpy(w->arg, arg, len);
	w->next = NULL;
	pthread_mutex_lock(&d->lock);
	/* a thread woken is counted idle until it runs: compare with the work queued */
	if (d->stop) {
		rc = -ESHUTDOWN; /* nothing would join a thread started now */
	} else if (d->queued + 1 > d->idle && d->nthreads < d->max) {
		rc = -pthread_create(&d->threads[d->nthreads], NULL, defer_thread, d);
		if (!rc)
			d->nthreads++;
		else if (d->nthreads) /* one is running: it will get to it */
			rc = 0;
	}
	if (!rc) {
		if (d->tail)
			d->tail->next = w;
		else
			d->head = w;
		d->tail = w;
		d->queued++;
		pthread_cond_signal(&d->cond);
	}
	pthread_mutex_unlock(&d->lock);
	if (rc)
		free(w);
	return rc;
}

static int lf_pool_init(struct lf_defer *d, unsigned max)
{
	memset(d, 0, sizeof(*d));
	d->threads = calloc(max, sizeof(*d->threads));
	if (!d->threads)
		return -ENOMEM;
	d->max = max;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	return 0;
}

static void lf_pool_stop(struct lf_defer *d)
{
	if (!d->threads)
		return; /* never made */
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	for (unsigned i = 0; i < d->nthreads; i++)
		pthread_join(d->threads[i], NULL);
	d->nthreads = 0;
}

static void lf_pool_fini(struct lf_defer *d)
{
	if (!d->threads)
		return;
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d->threads);
	d->threads = NULL;
}

int lf_defer(struct lode_fuse *lf, void (*fn)(void *arg), const void *arg, size_t len)
{
	return lf_pool_run(&lf->defer, fn, arg, len);
}

int lf_defer_init(struct lode_fuse *lf)
{
	return lf_pool_init(&lf->defer, LF_DEFER_THREADS);
}

void lf_defer_stop(struct lode_fuse *lf)
{
	lf_pool_stop(&lf->defer);
}

void lf_defer_fini(struct lode_fuse *lf)
{
	lf_pool_fini(&lf->defer);
}
