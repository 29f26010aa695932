/* SPDX-License-Identifier: MIT */
/*
 * liblode-loader: the host stand-in for a GPU's copy engines. Each stream is a thread that
 * copies its queue in order; a slot's mark is the count of copies its stream had been
 * given, done once the thread has finished that many. The loader's device pipeline runs
 * unchanged on top, so its logic (buffer reuse, marks, overlap) is tested without a GPU.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "copier.h"

struct job {
	struct job *next;
	void *dst;
	const void *src;
	size_t len;
};

struct stream {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *head, **tail; /* protected by lock */
	uint64_t given, done;	  /* copies, protected by lock */
	bool stop;
};

struct staged {
	unsigned nstreams, nslots;
	struct stream *streams;
	struct {
		unsigned stream;
		uint64_t upto;
	} * marks;
};

static void *stream_main(void *arg)
{
	struct stream *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct job *j;

		while (!s->head && !s->stop)
			pthread_cond_wait(&s->cond, &s->lock);
		if (!s->head)
			break;
		j = s->head;
		s->head = j->next;
		if (!s->head)
			s->tail = &s->head;
		pthread_mutex_unlock(&s->lock);
		memcpy(j->dst, j->src, j->len);
		free(j);
		pthread_mutex_lock(&s->lock);
		s->done++;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void staged_close(struct copier *cp)
{
	struct staged *st = cp->priv;

	if (!st)
		return;
	for (unsigned i = 0; i < st->nstreams; i++) {
		struct stream *s = &st->streams[i];

		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->cond);
	}
	free(st->streams);
	free(st->marks);
	free(st);
	cp->priv = NULL;
}

static int staged_open(struct copier *cp, int device, unsigned streams, unsigned slots)
{
	struct staged *st = calloc(1, sizeof(*st));

	(void)device;
	if (!st)
		return -ENOMEM;
	cp->priv = st;
	st->streams = calloc(streams, sizeof(*st->streams));
	st->marks = calloc(slots, sizeof(*st->marks));
	if (!st->streams || !st->marks) {
		staged_close(cp);
		return -ENOMEM;
	}
	st->nslots = slots;
	for (unsigned i = 0; i < streams; i++) {
		struct stream *s = &st->streams[i];

		pthread_mutex_init(&s->lock, NULL);
		pthread_cond_init(&s->cond, NULL);
		s->tail = &s->head;
		if (pthread_create(&s->thread, NULL, stream_main, s)) {
			pthread_mutex_destroy(&s->lock);
			pthread_cond_destroy(&s->cond);
			staged_close(cp);
			return -EAGAIN;
		}
		st->nstreams++;
	}
	return 0;
}

static int host_alloc(struct copier *cp, size_t len, void **out)
{
	(void)cp;
	/* page aligned, as pinned memory would be */
	return posix_memalign(out, 4096, len ? len : 1) ? -ENOMEM : 0;
}

static void host_release(struct copier *cp, void *p)
{
	(void)cp;
	free(p);
}

static int staged_copy(struct copier *cp, unsigned stream, void *dst, const void *src, size_t len)
{
	struct staged *st = cp->priv;
	struct stream *s = &st->streams[stream % st->nstreams];
	struct job *j = malloc(sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->next = NULL;
	j->dst = dst;
	j->src = src;
	j->len = len;
	pthread_mutex_lock(&s->lock);
	*s->tail = j;
	s->tail = &j->next;
	s->given++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int staged_mark(struct copier *cp, unsigned stream, unsigned slot)
{
	struct staged *st = cp->priv;
	struct stream *s = &st->streams[stream % st->nstreams];

	pthread_mutex_lock(&s->lock);
	st->marks[slot % st->nslots].stream = stream % st->nstreams;
	st->marks[slot % st->nslots].upto = s->given;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int staged_wait(struct copier *cp, unsigned slot)
{
	struct staged *st = cp->priv;
	struct stream *s = &st->streams[st->marks[slot % st->nslots].stream];

	pthread_mutex_lock(&s->lock);
	while (s->done < st->marks[slot % st->nslots].upto)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int staged_to_host(struct copier *cp, void *dst, const void *src, size_t len)
{
	(void)cp;
	memcpy(dst, src, len);
	return 0;
}

const struct copier_ops lode_copier_staged = {
    .name = "staged",
    .open = staged_open,
    .close = staged_close,
    .alloc = host_alloc,
    .release = host_release,
    .pinned_alloc = host_alloc,
    .pinned_release = host_release,
    .copy = staged_copy,
    .mark = staged_mark,
    .wait = staged_wait,
    .to_host = staged_to_host,
};
