/* SPDX-License-Identifier: MIT */
/*
 * liblode: closes of write handles with nothing left to commit, batched.
 *
 * Such a close publishes nothing (its size and mtime went with the last flush or fsync:
 * close-to-open holds without it); it only gives the handle's write lease back, which
 * matters to nobody but an exclusive open (a repair, a move) of the same file. So the
 * handle is queued here instead of costing a CLOSE round trip, and a thread of the client
 * sends the queue as one CLOSE_MANY once its oldest entry is CLOSE_DELAY_MS old or the
 * queue holds a full message. A checkpoint of many small files, a create loop, saves a
 * round trip and a pass of the MDS's writer per file (docs/design.md, "Closes").
 *
 * The thread starts with the first queued close, so short-lived tools never run it. An
 * exclusive open of this client sends the queue first (lode_client_closes_flush), and one
 * of another client that meets a queued lease retries for longer than the delay
 * (file.c). lode_disconnect sends what is left. A process killed with closes queued
 * leaves their leases to expire, as it would leave its open handles'.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "client.h"

/* Sends up to one message's worth of the queue. Called and returns with close_lock held. */
static void send_batch_locked(struct lode_client *c)
{
	struct lode_wire_close_ref ref[LODE_CLOSE_MANY_MAX];
	unsigned n = c->close_n < LODE_CLOSE_MANY_MAX ? c->close_n : LODE_CLOSE_MANY_MAX;
	struct iovec iov = {.iov_base = ref, .iov_len = n * sizeof(ref[0])};
	int rc;

	memcpy(ref, c->close_q, n * sizeof(ref[0]));
	c->close_n -= n;
	memmove(c->close_q, c->close_q + n, c->close_n * sizeof(c->close_q[0]));
	c->close_first_ms = lode_now_ms(); /* the rest waits no longer than a full delay */
	c->close_sending++;
	pthread_mutex_unlock(&c->close_lock);
	/* lazy: it makes nothing durable, and must not sync a lazy namespace's changes */
	rc = lode_client_mds_call_as(c, LODE_OP_CLOSE_MANY, true, NULL, 0, &iov, 1, NULL, 0);
	if (rc) {
		/* one by one then (an MDS that does not know CLOSE_MANY, say); nobody to tell
		 * if those fail too (close(2) has returned): the leases expire on their own */
		for (unsigned i = 0; i < n; i++) {
			struct lode_wire_commit_req req = {.ino = ref[i].ino,
							   .handle = ref[i].handle};
			struct lode_wire_attr attr;

			lode_client_mds_call_as(c, LODE_OP_CLOSE, true, &req, sizeof(req), NULL, 0,
						&attr, sizeof(attr));
		}
	}
	pthread_mutex_lock(&c->close_lock);
	c->close_sending--;
	pthread_cond_broadcast(&c->close_cond);
}

static void *closer_main(void *arg)
{
	struct lode_client *c = arg;

	pthread_mutex_lock(&c->close_lock);
	for (;;) {
		if (!c->close_n) {
			if (c->closer_stop)
				break;
			pthread_cond_wait(&c->close_cond, &c->close_lock);
			continue;
		}
		if (!c->closer_stop && c->close_n < LODE_CLOSE_MANY_MAX) {
			uint64_t due = c->close_first_ms + CLOSE_DELAY_MS;

			if (lode_now_ms() < due) {
				/* close_cond waits on CLOCK_MONOTONIC, lode_now_ms's clock */
				struct timespec ts = {.tv_sec = (time_t)(due / 1000),
						      .tv_nsec = (long)(due % 1000) * 1000000};

				pthread_cond_timedwait(&c->close_cond, &c->close_lock, &ts);
				continue;
			}
		}
		send_batch_locked(c);
	}
	pthread_mutex_unlock(&c->close_lock);
	return NULL;
}

void lode_client_closer_init(struct lode_client *c)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&c->close_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->close_cond, &ca);
	pthread_condattr_destroy(&ca);
}

/* The thread takes no signal: a program's signals stay with the threads it expects them
 * on (lodectl blocks them around lode_connect for the same reason). */
static int start_closer(struct lode_client *c)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&c->closer, NULL, closer_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

bool lode_client_close_defer(struct lode_client *c, uint64_t ino, uint64_t handle)
{
	bool queued = false;

	pthread_mutex_lock(&c->close_lock);
	if (!c->closer_stop && c->close_n < CLOSE_QUEUE_MAX) {
		if (!c->closer_started)
			c->closer_started = !start_closer(c);
		if (c->closer_started) {
			if (!c->close_n)
				c->close_first_ms = lode_now_ms();
			c->close_q[c->close_n].ino = ino;
			c->close_q[c->close_n].handle = handle;
			c->close_n++;
			if (c->close_n == 1 || c->close_n == LODE_CLOSE_MANY_MAX)
				pthread_cond_broadcast(&c->close_cond);
			queued = true;
		}
	}
	pthread_mutex_unlock(&c->close_lock);
	return queued;
}

void lode_client_closes_flush(struct lode_client *c)
{
	pthread_mutex_lock(&c->close_lock);
	while (c->close_n)
		send_batch_locked(c);
	while (c->close_sending)
		pthread_cond_wait(&c->close_cond, &c->close_lock);
	pthread_mutex_unlock(&c->close_lock);
}

void lode_client_closer_stop(struct lode_client *c)
{
	pthread_mutex_lock(&c->close_lock);
	c->closer_stop = true;
	pthread_cond_broadcast(&c->close_cond);
	pthread_mutex_unlock(&c->close_lock);
	if (c->closer_started)
		pthread_join(c->closer, NULL);
	lode_client_closes_flush(c); /* what the thread left, if it never ran */
	pthread_cond_destroy(&c->close_cond);
	pthread_mutex_destroy(&c->close_lock);
}
