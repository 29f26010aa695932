/* SPDX-License-Identifier: MIT */
/* The echo server of echo.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "echo.h"
#include "fixture.h"

/*
 * Requests still held when their server stops cannot be answered afterwards (that reads
 * the freed server: see the known-bug test in test_rpc.c), so they are parked here, where
 * LeakSanitizer sees them as reachable.
 */
static struct lode_req *orphans[4 * ECHO_HELD_MAX];
static unsigned norphans;
static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER;

unsigned long long echo_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

static void echo(struct lode_req *req)
{
	const struct lode_wire_hdr *h = lode_req_hdr(req);

	lode_req_reply(req, 0, lode_req_body(req), h->body_len, (void *)lode_req_data(req),
		       h->data_len, NULL);
}

static void on_request(void *ctx, struct lode_req *req)
{
	struct echo_server *e = ctx;
	const struct lode_wire_hdr *h = lode_req_hdr(req);

	pthread_mutex_lock(&e->lock);
	e->requests++;
	pthread_mutex_unlock(&e->lock);
	switch (h->opcode) {
	case LODE_OP_PING:
		echo(req);
		return;
	case LODE_OP_HELLO:
		pthread_mutex_lock(&e->lock);
		if (e->ndeferred == e->deferred_cap) {
			e->deferred_cap = e->deferred_cap ? 2 * e->deferred_cap : 64;
			e->deferred = realloc(e->deferred, e->deferred_cap * sizeof(*e->deferred));
			if (!e->deferred)
				abort();
		}
		e->deferred[e->ndeferred++] = req;
		pthread_cond_broadcast(&e->cond);
		pthread_mutex_unlock(&e->lock);
		return;
	case LODE_OP_GETATTR:
		pthread_mutex_lock(&e->lock);
		if (e->nheld == ECHO_HELD_MAX)
			abort();
		e->held[e->nheld++] = req;
		pthread_cond_broadcast(&e->cond);
		pthread_mutex_unlock(&e->lock);
		return;
	case LODE_OP_STATFS: {
		int32_t st = 0;

		if (h->body_len >= sizeof(st))
			memcpy(&st, lode_req_body(req), sizeof(st));
		lode_req_reply_err(req, st);
		return;
	}
	default:
		lode_req_reply_err(req, -ENOSYS);
		return;
	}
}

static void *replier_main(void *arg)
{
	struct echo_server *e = arg;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		struct lode_req **batch;
		unsigned n;

		while (!e->ndeferred && !e->stopping)
			pthread_cond_wait(&e->cond, &e->lock);
		if (!e->ndeferred)
			break;
		batch = e->deferred;
		n = e->ndeferred;
		e->deferred = NULL;
		e->ndeferred = e->deferred_cap = 0;
		pthread_mutex_unlock(&e->lock);
		usleep(2000); /* "later" */
		for (unsigned i = 0; i < n; i++)
			echo(batch[i]);
		free(batch);
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

static const struct lode_server_ops echo_ops = {.on_request = on_request};

int echo_server_start(struct echo_server *e, unsigned threads)
{
	return echo_server_start_at(e, threads, "tcp://127.0.0.1:0");
}

int echo_server_start_at(struct echo_server *e, unsigned threads, const char *addr)
{
	struct lode_server_opts o = {.threads = threads, .ops = &echo_ops, .ctx = e};
	int rc;

	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	rc = -pthread_create(&e->replier, NULL, replier_main, e);
	if (rc)
		goto err_sync;
	o.listen[0] = addr;
	rc = lode_server_start(&e->srv, &o);
	if (rc)
		goto err_replier;
	e->addr = lode_server_address(e->srv, 0);
	return 0;

err_replier:
	pthread_mutex_lock(&e->lock);
	e->stopping = true;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->replier, NULL);
err_sync:
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	return rc;
}

unsigned echo_server_wait_held(struct echo_server *e, unsigned n, unsigned ms)
{
	return fixture_wait_count(&e->lock, &e->cond, &e->nheld, n, ms);
}

void echo_server_release_held(struct echo_server *e)
{
	struct lode_req *held[ECHO_HELD_MAX];
	unsigned n;

	pthread_mutex_lock(&e->lock);
	n = e->nheld;
	memcpy(held, e->held, n * sizeof(held[0]));
	e->nheld = 0;
	pthread_mutex_unlock(&e->lock);
	for (unsigned i = 0; i < n; i++)
		lode_req_reply_err(held[i], -ECANCELED);
}

void echo_server_stop(struct echo_server *e)
{
	/* the replier first: it answers what it has queued while the server still runs */
	pthread_mutex_lock(&e->lock);
	e->stopping = true;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->replier, NULL);
	lode_server_stop(e->srv);
	e->srv = NULL;
	pthread_mutex_lock(&orphans_lock);
	for (unsigned i = 0; i < e->nheld && norphans < sizeof(orphans) / sizeof(orphans[0]); i++)
		orphans[norphans++] = e->held[i];
	for (unsigned i = 0; i < e->ndeferred && norphans < sizeof(orphans) / sizeof(orphans[0]);
	     i++)
		orphans[norphans++] = e->deferred[i];
	pthread_mutex_unlock(&orphans_lock);
	e->nheld = 0;
	free(e->deferred);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
}

struct echo_fixture *echo_fixture_new(unsigned threads)
{
	struct echo_fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	if (echo_server_start(&f->e, threads))
		goto err_free;
	if (fixture_rpc_connect(f->e.addr, 5000, &f->rpc, &f->conn))
		goto err_srv;
	f->server_running = true;
	return f;

err_srv:
	echo_server_stop(&f->e);
err_free:
	free(f);
	return NULL;
}

void echo_fixture_free(struct echo_fixture *f)
{
	if (!f)
		return;
	lode_rpc_destroy(f->rpc);
	if (f->server_running) {
		echo_server_release_held(&f->e);
		echo_server_stop(&f->e);
	}
	free(f);
}
