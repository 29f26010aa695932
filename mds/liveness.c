/* SPDX-License-Identifier: MIT */
/*
 * Target liveness at the MDS: the prober of late targets and the wait list of mutations
 * that could not be placed yet. Two plain threads; the prober makes synchronous calls
 * through a lode_rpc of its own, the wait thread only moves ops back to the writer.
 */
#include "liveness.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "log.h"
#include "loop.h"
#include "rpc.h"

struct held {
	struct lode_wop *op;
	uint64_t due_ms;
	struct held *next;
};

struct lode_liveness {
	struct lode_placement *pl;
	struct lode_writer *writer;
	pthread_t prober, waiter;
	bool has_prober;
	pthread_mutex_t lock;
	pthread_cond_t cond;  /* signalled on stop, on a new held op, on a kick */
	bool stop;	      /* protected by lock */
	bool kicked;	      /* protected by lock: probe now */
	struct held *held;    /* protected by lock: soonest due first */
	struct lode_rpc *rpc; /* prober only */
};

static void deadline_in(struct timespec *ts, unsigned ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* ---- the wait list ---- */

int lode_liveness_hold_ms(struct lode_liveness *lv, struct lode_wop *op, unsigned ms)
{
	struct held *h = malloc(sizeof(*h)), **at;

	if (!h)
		return -ENOMEM;
	h->op = op;
	h->due_ms = lode_now_ms() + ms;
	pthread_mutex_lock(&lv->lock);
	if (lv->stop) {
		pthread_mutex_unlock(&lv->lock);
		free(h);
		return -ESHUTDOWN;
	}
	/* in due order; the list is short (ops held at this moment) */
	for (at = &lv->held; *at && (*at)->due_ms <= h->due_ms; at = &(*at)->next)
		;
	h->next = *at;
	*at = h;
	pthread_cond_broadcast(&lv->cond);
	pthread_mutex_unlock(&lv->lock);
	return 0;
}

int lode_liveness_hold(struct lode_liveness *lv, struct lode_wop *op)
{
	return lode_liveness_hold_ms(lv, op, LODE_LIVENESS_RETRY_MS);
}

void lode_liveness_release_all(struct lode_liveness *lv)
{
	uint64_t now = lode_now_ms();

	pthread_mutex_lock(&lv->lock);
	/* the list stays in due order: the ones due later all become due now */
	for (struct held *h = lv->held; h; h = h->next)
		if (h->due_ms > now)
			h->due_ms = now;
	pthread_cond_broadcast(&lv->cond);
	pthread_mutex_unlock(&lv->lock);
}

static void *waiter_main(void *arg)
{
	struct lode_liveness *lv = arg;

	pthread_mutex_lock(&lv->lock);
	while (!lv->stop) {
		struct held *h = lv->held;
		uint64_t now = lode_now_ms();
		struct timespec ts;

		if (!h) {
			pthread_cond_wait(&lv->cond, &lv->lock);
			continue;
		}
		if (h->due_ms > now) {
			deadline_in(&ts, (unsigned)(h->due_ms - now));
			pthread_cond_timedwait(&lv->cond, &lv->lock, &ts);
			continue;
		}
		lv->held = h->next;
		pthread_mutex_unlock(&lv->lock);
		lode_writer_submit(lv->writer, h->op);
		free(h);
		pthread_mutex_lock(&lv->lock);
	}
	pthread_mutex_unlock(&lv->lock);
	return NULL;
}

/* ---- the prober ---- */

/* Errors that say nothing listens there (as opposed to a slow answer). */
static bool nobody_there(int err)
{
	return err == -ECONNREFUSED || err == -EHOSTUNREACH || err == -ENETUNREACH ||
	       err == -ECONNRESET || err == -ECONNABORTED || err == -EPIPE;
}

static void probe(struct lode_liveness *lv, const struct lode_placement_probe *p)
{
	struct lode_rpc_conn *conn;
	int err;

	err = lode_rpc_conn_open(lv->rpc, p->addr, &conn);
	if (!err) {
		err = lode_rpc_simple(conn, LODE_OP_PING, NULL, 0, NULL, 0);
		lode_rpc_conn_close(conn);
	}
	if (!err) {
		lode_placement_alive(lv->pl, p->target_id, lode_now_ms());
		LODE_DEBUG("target %u at %s: late, but answers", p->target_id, p->addr);
	} else if (nobody_there(err)) {
		if (lode_placement_mark_down(lv->pl, p->target_id))
			LODE_WARN("target %u at %s is down (%s); not placed on until it is back",
				  p->target_id, p->addr, strerror(-err));
	} else {
		LODE_DEBUG("target %u at %s: late, probe: %s", p->target_id, p->addr,
			   strerror(-err));
	}
}

static void *prober_main(void *arg)
{
	struct lode_liveness *lv = arg;
	struct lode_placement_probe *late = calloc(LODE_TARGETS_MAX, sizeof(*late));

	if (!late)
		return NULL;
	pthread_mutex_lock(&lv->lock);
	while (!lv->stop) {
		struct timespec ts;
		unsigned n;

		if (!lv->kicked) {
			deadline_in(&ts, LODE_LIVENESS_PROBE_MS);
			while (!lv->stop && !lv->kicked &&
			       pthread_cond_timedwait(&lv->cond, &lv->lock, &ts) != ETIMEDOUT)
				;
		}
		lv->kicked = false;
		if (lv->stop)
			break;
		pthread_mutex_unlock(&lv->lock);
		n = lode_placement_late(lv->pl, lode_now_ms(), late, LODE_TARGETS_MAX);
		for (unsigned i = 0; i < n; i++)
			probe(lv, &late[i]);
		pthread_mutex_lock(&lv->lock);
	}
	pthread_mutex_unlock(&lv->lock);
	free(late);
	return NULL;
}

void lode_liveness_kick(struct lode_liveness *lv)
{
	pthread_mutex_lock(&lv->lock);
	lv->kicked = true;
	pthread_cond_broadcast(&lv->cond);
	pthread_mutex_unlock(&lv->lock);
}

/* ---- start, stop ---- */

int lode_liveness_start(struct lode_liveness **out, struct lode_placement *pl,
			struct lode_writer *writer, int with_prober,
			const struct lode_keyring *keys)
{
	struct lode_liveness *lv = calloc(1, sizeof(*lv));
	pthread_condattr_t ca;
	int err;

	if (!lv)
		return -ENOMEM;
	lv->pl = pl;
	lv->writer = writer;
	pthread_mutex_init(&lv->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&lv->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (with_prober) {
		err = lode_rpc_create(&lv->rpc, LODE_LIVENESS_PROBE_TIMEOUT_MS);
		if (err)
			goto err_sync;
		/* without a proof, an OSS with keys refuses the PING (EACCES), and a late
		 * target that answers would never count as fresh again */
		if (keys)
			err = lode_rpc_set_auth(lv->rpc, keys, lode_keyring_best_role(keys));
		if (err)
			goto err_rpc;
	}
	err = -pthread_create(&lv->waiter, NULL, waiter_main, lv);
	if (err)
		goto err_rpc;
	if (with_prober) {
		err = -pthread_create(&lv->prober, NULL, prober_main, lv);
		if (err) {
			lode_liveness_stop(lv);
			return err;
		}
		lv->has_prober = true;
	}
	*out = lv;
	return 0;

err_rpc:
	lode_rpc_destroy(lv->rpc);
err_sync:
	pthread_cond_destroy(&lv->cond);
	pthread_mutex_destroy(&lv->lock);
	free(lv);
	return err;
}

void lode_liveness_stop(struct lode_liveness *lv)
{
	struct held *h;

	if (!lv)
		return;
	pthread_mutex_lock(&lv->lock);
	lv->stop = true;
	pthread_cond_broadcast(&lv->cond);
	pthread_mutex_unlock(&lv->lock);
	pthread_join(lv->waiter, NULL);
	if (lv->has_prober)
		pthread_join(lv->prober, NULL);
	/* nothing can be added any more (stop is set): answer what waits */
	while ((h = lv->held)) {
		lv->held = h->next;
		h->op->done(h->op, -ESHUTDOWN);
		free(h);
	}
	lode_rpc_destroy(lv->rpc);
	pthread_cond_destroy(&lv->cond);
	pthread_mutex_destroy(&lv->lock);
	free(lv);
}
