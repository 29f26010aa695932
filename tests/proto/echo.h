/* SPDX-License-Identifier: MIT */
/*
 * A lode_server with a tiny handler, shared by the proto tests. By opcode:
 *   PING     echo: the reply carries the request's body and data, answered at once
 *   HELLO    echo, answered later from another thread (the replier)
 *   GETATTR  held: never answered until echo_server_release_held()
 *   STATFS   answered with the negative errno stored in the request's first 4 body bytes
 * Anything else is answered with -ENOSYS.
 */
#ifndef LODE_TESTS_PROTO_ECHO_H
#define LODE_TESTS_PROTO_ECHO_H

#include <pthread.h>
#include <stdbool.h>

#include "rpc.h"
#include "server.h"

#define ECHO_HELD_MAX 4096

struct echo_server {
	struct lode_server *srv;
	const char *addr;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct lode_req *held[ECHO_HELD_MAX]; /* protected by lock */
	unsigned nheld;			      /* protected by lock */
	struct lode_req **deferred;	      /* protected by lock; the replier's queue */
	unsigned ndeferred, deferred_cap;     /* protected by lock */
	unsigned long requests;		      /* protected by lock: every request seen */
	bool stopping;			      /* protected by lock */
	pthread_t replier;
};

/* Starts on tcp://127.0.0.1:0 with `threads` workers. Returns 0 or -errno. */
int echo_server_start(struct echo_server *e, unsigned threads);
/* The same on addr (e.g. "rdma://10.77.0.1:0"). */
int echo_server_start_at(struct echo_server *e, unsigned threads, const char *addr);
/* Waits up to ms for at least n held requests; returns how many are held. */
unsigned echo_server_wait_held(struct echo_server *e, unsigned n, unsigned ms);
/* Answers every held request with -ECANCELED (dropped if its connection is gone). Only
 * while the server runs. */
void echo_server_release_held(struct echo_server *e);
/* Stops the replier (answering what it holds), then the server. Held requests that were not
 * released are kept reachable (see echo.c) but not answered. */
void echo_server_stop(struct echo_server *e);

/* The echo server and a lode_rpc client connected to it: what most proto tests start with. */
struct echo_fixture {
	struct echo_server e;
	bool server_running; /* a test that stops the server itself clears it */
	struct lode_rpc *rpc;
	struct lode_rpc_conn *conn;
};

/* Starts the server with `threads` workers and connects a client whose calls time out after
 * 5 s. Returns the fixture (free it with echo_fixture_free) or NULL, with nothing left. */
struct echo_fixture *echo_fixture_new(unsigned threads);
/* Destroys the client (closing its connection), then, if the server still runs, answers its
 * held requests and stops it. NULL is accepted. */
void echo_fixture_free(struct echo_fixture *f);

/* Monotonic milliseconds. */
unsigned long long echo_now_ms(void);

#endif
