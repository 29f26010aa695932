/* SPDX-License-Identifier: MIT */
/*
 * The request server: listeners, worker threads, and the life of a request.
 *
 * Worker 0's loop owns the listeners and hands each accepted connection to a worker in
 * turn (by posting to that worker's loop); from then on the connection and everything
 * about it is touched only on its worker's thread, so there are no locks here. A reply
 * from another thread (the MDS's writer) is posted to the connection's worker.
 *
 * Backpressure: a connection stops being read while it has more than CONN_MAX_INFLIGHT
 * requests or CONN_MAX_INFLIGHT_BYTES of request memory unanswered, so a client that
 * pipelines without reading its replies cannot make the server allocate without bound; and
 * every connection stops being read while the whole server holds more than its request
 * memory budget (opts.max_request_bytes), so many connections cannot either.
 *
 * Bounds on what a peer can hold (each a server option, 0 for the default):
 * - connections: at most max_conns in all and max_conns_per_peer from one IPv4 address;
 *   one more is closed at accept;
 * - time: a connection must complete its first frame within first_frame_ms of its accept,
 *   and any frame within frame_ms of its header; a worker's sweep, once a second, closes
 *   those that do not (a peer that connects and stalls holds a descriptor, nothing more).
 *
 * Authentication (with opts.keys; auth.h has the handshake): until a connection has
 * proved its key, its frames go nowhere near the handler. Only AUTH is accepted, into a
 * buffer inside the connection (nothing allocated); anything else, a malformed AUTH or a
 * wrong proof closes it, and a handshake not done within first_frame_ms is cut by the
 * sweep. Each failure is reported once through ops->on_auth_fail (the daemons' log line is
 * rate limited). Once authenticated, each request is checked against the opcode's role mask
 * (lode_op_roles) and answered EACCES without reaching the handler when its role may not
 * send it.
 */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "codec.h"
#include "server.h"
#include "transport.h"

#define CONN_MAX_INFLIGHT	256
#define CONN_MAX_INFLIGHT_BYTES (64u << 20)
#define LISTEN_MAX		4
#define SWEEP_MS		1000

#define DEFAULT_MAX_CONNS	   16384
#define DEFAULT_MAX_CONNS_PER_PEER 1024
#define DEFAULT_FIRST_FRAME_MS	   10000
#define DEFAULT_FRAME_MS	   60000
#define DEFAULT_MAX_REQUEST_BYTES  (1ull << 30)
#define PEER_BUCKETS		   256

struct worker;

#define SCONN_CAPS 4 /* capabilities remembered per connection: a few files at once */

struct sconn {
	struct worker *w;
	const struct lode_transport_ops *ops;
	struct lode_tconn *t; /* NULL once closed */
	uint64_t id;
	unsigned refs; /* this struct + one per request not yet answered */
	unsigned inflight;
	uint64_t inflight_bytes;
	bool paused;
	struct lode_req *receiving; /* the request whose frame is arriving */
	struct sconn *prev, *next;  /* on w->conns */
	uint32_t peer;		    /* IPv4 address counted in srv->peers, or 0 */
	uint64_t accepted_ms;
	uint64_t frame_start_ms; /* when the header of the frame arriving came; 0: none */
	uint64_t frames;	 /* frames received in full */
	/* the handshake (see the top of the file) */
	uint8_t auth;	      /* AUTH_NEW, AUTH_PROVING, AUTH_REFUSED, AUTH_DONE */
	bool auth_rx;	      /* the frame arriving is an AUTH, into auth_in */
	bool auth_failed;     /* reported already */
	uint8_t role;	      /* proved (LODE_ROLE_*), 0 on a server without keys */
	unsigned roles;	      /* role bits it may send opcodes of */
	uint64_t auth_req_id; /* of the AUTH arriving */
	struct lode_wire_auth_req auth_in;
	uint8_t cnonce[LODE_NONCE_BYTES], snonce[LODE_NONCE_BYTES];
	uint8_t key[LODE_KEY_BYTES]; /* the key being proved, between the two steps */
	char group[32];		     /* the client group proved, or "" */
	/* capabilities the daemon found genuine on this connection (lode_req_cap_remember);
	 * worker thread only */
	struct lode_wire_cap caps_ok[SCONN_CAPS];
	unsigned ncaps_ok, caps_next;
};

enum { AUTH_NEW, AUTH_PROVING, AUTH_REFUSED, AUTH_DONE };

struct worker {
	struct lode_server *srv;
	unsigned idx;
	struct lode_loop *loop;
	pthread_t thread;
	struct sconn *conns;
	unsigned nconns;
	bool draining;
	struct lode_timer sweep;
	/* Written by this worker only (stat_add), read by lode_server_stats() from any thread. */
	struct lode_server_stats stats;
};

/* Connections per peer address; touched at accept and close only. */
struct peer_count {
	uint32_t addr;
	unsigned n;
	struct peer_count *next;
};

struct lode_server {
	const struct lode_server_ops *ops;
	void *ctx;
	unsigned nworkers;
	struct worker *workers;
	unsigned nlisteners;
	struct lode_listener *listeners[LISTEN_MAX];
	const struct lode_transport_ops *lops[LISTEN_MAX];
	char addrs[LISTEN_MAX][64];
	unsigned next_worker;  /* worker 0's thread only */
	uint64_t next_conn_id; /* atomic */

	unsigned max_conns, max_conns_per_peer, first_frame_ms, frame_ms;
	uint64_t max_request_bytes;
	bool secure;		    /* keys hold at least one role: connections must prove one */
	struct lode_keyring keys;   /* read-only after start */
	unsigned nconns;	    /* atomic: connections accepted and not yet closed */
	uint64_t request_bytes;	    /* atomic: request memory held, all connections */
	pthread_mutex_t peers_lock; /* protects peers */
	struct peer_count *peers[PEER_BUCKETS];

	/*
	 * Replies from other threads race with lode_server_stop(): a replier holds stop_lock
	 * shared from its check of `stopped` until its post has reached the worker's loop, and
	 * stop takes it exclusively to set `stopped`. After that, late replies free their
	 * request on the replying thread (late_lock serializes them), and the last request
	 * freed after the stop frees the server.
	 */
	pthread_rwlock_t stop_lock;
	bool stopped; /* protected by stop_lock */
	pthread_mutex_t late_lock;
	uint64_t live_reqs; /* atomic: requests handed out and not yet freed */
};

struct lode_req {
	struct sconn *conn;
	struct lode_wire_hdr hdr;
	size_t alloc_bytes;
	uint64_t start_ns; /* when its frame was complete */
	/* reply */
	struct lode_send send;
	struct iovec iov;
	void *rdata;
	void (*rdata_free)(void *);
	void *rbody;			 /* heap copy of the reply body for cross-thread replies */
	void (*file_release)(void *arg); /* reply data from a file: what to call when sent */
	void *file_arg;
	char *body;
	char *data;
	const struct lode_wire_cap *cap; /* the capability the request carried, in body */
	uint16_t rflags;		 /* LODE_WIRE_F_GRANT for the reply, or 0 */
	uint64_t rgrant;		 /* the reply's grant token */
};

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* ---- counting (see lode_server_stats) ---- */

const double lode_server_lat_bounds[LODE_SERVER_LAT_BOUNDS] = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,    0.1,    0.25,    0.5,    1,     2.5,    5,	    10};
static const uint64_t lat_bounds_ns[LODE_SERVER_LAT_BOUNDS] = {
    50000,     100000,	   250000,     500000,	   1000000,    2500000,
    5000000,   10000000,   25000000,   50000000,   100000000,  250000000,
    500000000, 1000000000, 2500000000, 5000000000, 10000000000};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One writer per counter (its worker): a plain add, published for readers on other threads. */
static void stat_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

/* A reply reached its worker. Worker thread. */
static void count_reply(struct lode_req *req)
{
	struct lode_server_stats *st = &req->conn->w->stats;
	struct lode_server_op_stats *op = &st->op[req->hdr.opcode % LODE_OP_MAX_];
	uint64_t ns = now_ns() - req->start_ns;
	unsigned b = 0;

	while (b < LODE_SERVER_LAT_BOUNDS && ns > lat_bounds_ns[b])
		b++;
	stat_add(&op->requests, 1);
	if (req->send.hdr.status)
		stat_add(&op->errors, 1);
	stat_add(&op->lat[b], 1);
	stat_add(&op->lat_sum_ns, ns);
	stat_add(&op->tx_bytes,
		 sizeof(struct lode_wire_hdr) + req->send.body_len +
		     (req->send.data_iovcnt ? req->iov.iov_len : req->send.file_len));
	stat_add(&st->answered, 1);
}

/* ---- connection ---- */

static struct sconn *sc_of(const struct lode_tconn *t)
{
	return lode_tconn_ctx(t);
}

static void sconn_put(struct sconn *sc)
{
	if (--sc->refs == 0)
		free(sc);
}

static void sconn_flow(struct sconn *sc)
{
	struct lode_server *srv = sc->w->srv;
	bool over =
	    sc->inflight >= CONN_MAX_INFLIGHT || sc->inflight_bytes >= CONN_MAX_INFLIGHT_BYTES ||
	    __atomic_load_n(&srv->request_bytes, __ATOMIC_RELAXED) >= srv->max_request_bytes;

	if (!sc->t || over == sc->paused)
		return;
	sc->paused = over;
	sc->ops->pause(sc->t, over);
}

/* ---- the handshake (auth.h) ---- */

#define ALL_ROLES                                                                                  \
	(LODE_ROLE_BIT(LODE_ROLE_CLIENT) | LODE_ROLE_BIT(LODE_ROLE_OSS) |                          \
	 LODE_ROLE_BIT(LODE_ROLE_ADMIN))

/* Reports a failure once per connection. */
static void auth_report(struct sconn *sc, const char *why)
{
	const struct lode_server_ops *ops = sc->w->srv->ops;

	if (sc->auth_failed)
		return;
	sc->auth_failed = sc->auth != AUTH_DONE; /* role refusals may repeat, once each */
	if (ops->on_auth_fail)
		ops->on_auth_fail(sc->w->srv->ctx, sc->ops->scheme, sc->peer, why);
}

struct auth_send {
	struct lode_send send;
	struct sconn *sc;
	struct lode_wire_auth_rep rep;
};

static void auth_sent(struct lode_send *s, int err)
{
	struct auth_send *as = lode_container_of(s, struct auth_send, send);
	struct sconn *sc = as->sc;

	(void)err;
	free(as);
	sconn_put(sc);
}

/*
 * Answers the AUTH that arrived: status 0 with rep (may be NULL: empty body), or an error.
 * After an error the connection is not closed here but left to the client, which closes it
 * on the reply: over RDMA our close could overtake the reply, and the client would see a
 * reset instead of "refused". It is served nothing more (AUTH_REFUSED: its next frame
 * closes it), and the sweep closes it at the handshake deadline if the client does not.
 */
static void auth_reply(struct sconn *sc, int status, const struct lode_wire_auth_rep *rep)
{
	struct auth_send *as = calloc(1, sizeof(*as));

	if (!as) {
		sc->ops->close(sc->t, -ENOMEM);
		return;
	}
	as->sc = sc;
	if (rep && !status)
		as->rep = *rep;
	lode_hdr_init(&as->send.hdr, LODE_OP_AUTH, sc->auth_req_id, 0, 0);
	as->send.hdr.flags = LODE_WIRE_F_REPLY;
	as->send.hdr.status = lode_status_from_errno(status);
	as->send.body = rep && !status ? &as->rep : NULL;
	as->send.body_len = rep && !status ? sizeof(as->rep) : 0;
	as->send.done = auth_sent;
	sc->refs++;
	sc->ops->send(sc->t, &as->send);
}

/* A header on a connection still in its handshake. */
static int auth_on_header(struct sconn *sc, const struct lode_wire_hdr *hdr, void **body,
			  void **data)
{
	char why[96];

	if (sc->auth == AUTH_REFUSED)
		return -EACCES;
	if (hdr->opcode != LODE_OP_AUTH) {
		snprintf(why, sizeof(why), "sent %s before the handshake",
			 lode_op_name(hdr->opcode));
		auth_report(sc, why);
		return -EACCES;
	}
	if (hdr->body_len != sizeof(struct lode_wire_auth_req) || hdr->data_len) {
		auth_report(sc, "sent a malformed AUTH");
		return -EPROTO;
	}
	sc->auth_rx = true;
	sc->auth_req_id = hdr->req_id;
	if (!sc->frame_start_ms)
		sc->frame_start_ms = lode_now_ms();
	*body = &sc->auth_in;
	*data = NULL;
	return 0;
}

/* An AUTH frame is in sc->auth_in. */
static void auth_on_frame(struct sconn *sc)
{
	struct lode_server *srv = sc->w->srv;
	const struct lode_wire_auth_req *r = &sc->auth_in;
	struct lode_wire_auth_rep rep = {0};
	const uint8_t *key;
	struct lode_msg m;
	char why[96];

	if (lode_msg_decode(LODE_OP_AUTH, r, sizeof(*r), 0, &m) ||
	    r->step != (sc->auth == AUTH_NEW ? 1u : 2u) ||
	    (sc->auth == AUTH_PROVING && r->role != sc->role)) {
		auth_report(sc, "sent a malformed AUTH");
		sc->ops->close(sc->t, -EPROTO);
		return;
	}
	if (sc->auth == AUTH_NEW && !srv->secure) {
		/* insecure: say so, believe the role (and allow every opcode: nothing is proved) */
		rep.flags = LODE_AUTH_F_INSECURE;
		sc->auth = AUTH_DONE;
		sc->roles = ALL_ROLES;
		auth_reply(sc, 0, &rep);
		return;
	}
	if (sc->auth == AUTH_NEW) {
		/* a client group's key is derived from the cluster key; any other is the role's */
		key = lode_keyring_key(&srv->keys, r->role);
		if (key)
			memcpy(sc->key, key, LODE_KEY_BYTES);
		if (r->group[0] && lode_keyring_group_key(&srv->keys, r->group, sc->key))
			key = NULL;
		if ((r->flags & LODE_AUTH_F_NOKEY) || !key) {
			if (r->flags & LODE_AUTH_F_NOKEY)
				snprintf(why, sizeof(why), "holds no key as %s",
					 lode_auth_role_name(r->role));
			else if (r->group[0])
				snprintf(why, sizeof(why),
					 "asked for client group %.31s, which this server has no "
					 "key for",
					 r->group);
			else
				snprintf(why, sizeof(why),
					 "asked for a role this server has no key for as %s",
					 lode_auth_role_name(r->role));
			auth_report(sc, why);
			explicit_bzero(sc->key, sizeof(sc->key));
			sc->auth = AUTH_REFUSED; /* the client closes it; nothing more is served */
			auth_reply(sc, -EACCES, NULL);
			return;
		}
		key = sc->key;
		memcpy(sc->group, r->group, sizeof(sc->group));
		sc->role = (uint8_t)r->role;
		memcpy(sc->cnonce, r->nonce, LODE_NONCE_BYTES);
		lode_auth_nonce(sc->snonce, LODE_NONCE_BYTES);
		memcpy(rep.nonce, sc->snonce, LODE_NONCE_BYTES);
		lode_auth_proof(key, true, sc->role, sc->cnonce, sc->snonce, rep.proof);
		sc->auth = AUTH_PROVING;
		auth_reply(sc, 0, &rep);
		return;
	}
	key = sc->key;
	if (!lode_auth_verify(key, false, sc->role, sc->cnonce, sc->snonce, r->proof)) {
		if (sc->group[0])
			snprintf(why, sizeof(why),
				 "gave a wrong proof for client group %.31s's key", sc->group);
		else
			snprintf(why, sizeof(why), "gave a wrong proof for the %s key",
				 lode_auth_role_name(sc->role));
		auth_report(sc, why);
		sc->ops->close(sc->t, -EACCES);
		return;
	}
	explicit_bzero(sc->key, sizeof(sc->key));
	sc->auth = AUTH_DONE;
	sc->roles = LODE_ROLE_BIT(sc->role);
	auth_reply(sc, 0, NULL);
}

static int s_on_header(struct lode_tconn *t, const struct lode_wire_hdr *hdr, void **body,
		       void **data)
{
	struct sconn *sc = sc_of(t);
	size_t bytes = sizeof(struct lode_req) + pad8(hdr->body_len) + hdr->data_len;
	const struct lode_server_ops *ops = sc->w->srv->ops;
	struct lode_req *req;
	int rc;

	if (ops->check_header) {
		rc = ops->check_header(sc->w->srv->ctx, hdr);
		if (rc)
			return rc; /* closes the connection before anything is allocated */
	}
	if (sc->auth != AUTH_DONE) {
		if (sc->w->srv->secure || hdr->opcode == LODE_OP_AUTH)
			return auth_on_header(sc, hdr, body, data);
		/* a server without keys serves a peer that skips the handshake */
		sc->auth = AUTH_DONE;
		sc->roles = ALL_ROLES;
	} else if (hdr->opcode == LODE_OP_AUTH) {
		auth_report(sc, "sent AUTH again");
		return -EPROTO;
	}
	req = malloc(bytes);
	if (!req)
		return -ENOMEM;
	memset(req, 0, sizeof(*req));
	req->conn = sc;
	req->hdr = *hdr;
	req->alloc_bytes = bytes;
	req->body = (char *)(req + 1);
	req->data = req->body + pad8(hdr->body_len);
	sc->refs++;
	sc->inflight++;
	sc->inflight_bytes += bytes;
	__atomic_add_fetch(&sc->w->srv->request_bytes, bytes, __ATOMIC_RELAXED);
	sc->receiving = req;
	if (!sc->frame_start_ms)
		sc->frame_start_ms = lode_now_ms();
	__atomic_add_fetch(&sc->w->srv->live_reqs, 1, __ATOMIC_RELAXED);
	*body = req->body;
	*data = req->data;
	return 0;
}

static void s_on_frame(struct lode_tconn *t, const struct lode_wire_hdr *hdr)
{
	struct sconn *sc = sc_of(t);
	struct lode_req *req = sc->receiving;

	if (sc->auth_rx) {
		sc->auth_rx = false;
		sc->frame_start_ms = 0;
		sc->frames++;
		auth_on_frame(sc);
		return;
	}
	sc->receiving = NULL;
	sc->frame_start_ms = 0;
	sc->frames++;
	req->start_ns = now_ns();
	stat_add(&sc->w->stats.received, 1);
	stat_add(&sc->w->stats.op[hdr->opcode % LODE_OP_MAX_].rx_bytes,
		 sizeof(*hdr) + hdr->body_len + hdr->data_len);
	sconn_flow(sc);
	if (req->hdr.flags & LODE_WIRE_F_CAP) {
		/* the capability ends the body (lode_hdr_check saw it fits): handlers see the
		 * opcode's own body, and the capability apart */
		req->hdr.flags &= (uint16_t)~LODE_WIRE_F_CAP;
		req->hdr.body_len -= (uint32_t)sizeof(struct lode_wire_cap);
		req->cap = (const struct lode_wire_cap *)(req->body + req->hdr.body_len);
	}
	if (!(lode_op_roles(hdr->opcode) & sc->roles)) {
		char why[96];

		snprintf(why, sizeof(why), "sent %s, which a %s connection may not",
			 lode_op_name(hdr->opcode), lode_auth_role_name(sc->role));
		auth_report(sc, why);
		lode_req_reply_err(req, -EACCES);
		return;
	}
	sc->w->srv->ops->on_request(sc->w->srv->ctx, req);
}

static void server_free(struct lode_server *srv);

/* Returns true when this was the last request of a stopped server. */
static bool req_release(struct lode_req *req)
{
	struct sconn *sc = req->conn;
	struct lode_server *srv = sc->w->srv;

	if (req->rdata && req->rdata_free)
		req->rdata_free(req->rdata);
	if (req->file_release)
		req->file_release(req->file_arg);
	free(req->rbody);
	sc->inflight--;
	sc->inflight_bytes -= req->alloc_bytes;
	__atomic_sub_fetch(&srv->request_bytes, req->alloc_bytes, __ATOMIC_RELAXED);
	free(req);
	sconn_flow(sc);
	sconn_put(sc);
	return __atomic_sub_fetch(&srv->live_reqs, 1, __ATOMIC_RELAXED) == 0 && srv->stopped;
}

static void req_free(struct lode_req *req)
{
	req_release(req);
}

static struct peer_count **peer_bucket(struct lode_server *srv, uint32_t addr)
{
	return &srv->peers[(addr * 2654435761u) >> 24 & (PEER_BUCKETS - 1)];
}

/* Counts a connection from addr; false (counting nothing) when the peer has its fill. */
static bool peer_take(struct lode_server *srv, uint32_t addr)
{
	struct peer_count **b = peer_bucket(srv, addr);
	struct peer_count *p;
	bool ok = true;

	pthread_mutex_lock(&srv->peers_lock);
	for (p = *b; p && p->addr != addr; p = p->next)
		;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (p) {
			p->addr = addr;
			p->next = *b;
			*b = p;
		}
	}
	if (!p || p->n >= srv->max_conns_per_peer)
		ok = false;
	else
		p->n++;
	pthread_mutex_unlock(&srv->peers_lock);
	return ok;
}

static void peer_put(struct lode_server *srv, uint32_t addr)
{
	struct peer_count **pp = peer_bucket(srv, addr);

	pthread_mutex_lock(&srv->peers_lock);
	for (; *pp && (*pp)->addr != addr; pp = &(*pp)->next)
		;
	if (*pp && --(*pp)->n == 0) {
		struct peer_count *p = *pp;

		*pp = p->next;
		free(p);
	}
	pthread_mutex_unlock(&srv->peers_lock);
}

/* A connection is gone (or will not be attached): it no longer counts against the caps. */
static void conn_uncount(struct lode_server *srv, uint32_t peer)
{
	if (peer)
		peer_put(srv, peer);
	__atomic_sub_fetch(&srv->nconns, 1, __ATOMIC_RELAXED);
}

static void s_on_close(struct lode_tconn *t, int err)
{
	struct sconn *sc = sc_of(t);
	struct worker *w = sc->w;

	sc->t = NULL;
	if (sc->auth == AUTH_PROVING && !sc->auth_failed) {
		char why[96];

		snprintf(why, sizeof(why), "left the handshake unfinished as %s (%s)",
			 lode_auth_role_name(sc->role),
			 err == -ETIMEDOUT ? "timed out" : "a key this server does not hold?");
		auth_report(sc, why);
	}
	if (sc->receiving) {
		/* a frame cut short: its request was never handed out */
		struct lode_req *req = sc->receiving;

		sc->receiving = NULL;
		req_free(req);
	}
	if (sc->prev)
		sc->prev->next = sc->next;
	else
		w->conns = sc->next;
	if (sc->next)
		sc->next->prev = sc->prev;
	w->nconns--;
	conn_uncount(w->srv, sc->peer);
	sconn_put(sc);
	if (w->draining && w->nconns == 0)
		lode_loop_stop(w->loop);
}

static const struct lode_tconn_cbs server_cbs = {
    .on_header = s_on_header,
    .on_frame = s_on_frame,
    .on_close = s_on_close,
};

struct attach_msg {
	struct worker *w;
	const struct lode_transport_ops *ops;
	intptr_t cookie;
	uint32_t peer; /* counted in srv->peers (0: not counted) */
};

/* A connection that will not be attached gives back what on_accept counted for it. */
static void attach_drop(struct attach_msg *m)
{
	struct lode_server *srv = m->w->srv;

	m->ops->close_cookie(m->cookie);
	conn_uncount(srv, m->peer);
	free(m);
}

static void attach_on_worker(void *arg)
{
	struct attach_msg *m = arg;
	struct worker *w = m->w;
	struct sconn *sc;
	int rc;

	sc = calloc(1, sizeof(*sc));
	if (!sc || w->draining) {
		free(sc);
		attach_drop(m);
		return;
	}
	sc->w = w;
	sc->ops = m->ops;
	sc->refs = 1;
	sc->id = __atomic_add_fetch(&w->srv->next_conn_id, 1, __ATOMIC_RELAXED);
	sc->peer = m->peer;
	sc->accepted_ms = lode_now_ms();
	rc = m->ops->attach(w->loop, m->cookie, 0, &server_cbs, sc, &sc->t);
	if (rc) {
		/* attach has closed the cookie */
		if (w->srv->ops->on_conn_error)
			w->srv->ops->on_conn_error(w->srv->ctx, m->ops->scheme, rc);
		conn_uncount(w->srv, m->peer);
		free(sc);
		free(m);
		return;
	}
	sc->next = w->conns;
	if (w->conns)
		w->conns->prev = sc;
	w->conns = sc;
	w->nconns++;
	free(m);
}

struct listen_ctx {
	struct lode_server *srv;
	const struct lode_transport_ops *ops;
};

static void on_accept(void *ctx, intptr_t cookie)
{
	struct listen_ctx *lc = ctx;
	struct lode_server *srv = lc->srv;
	struct attach_msg *m = malloc(sizeof(*m));
	uint32_t peer = lc->ops->cookie_peer ? lc->ops->cookie_peer(cookie) : 0;
	int err = 0;

	if (!m)
		err = -ENOMEM;
	else if (__atomic_add_fetch(&srv->nconns, 1, __ATOMIC_RELAXED) > srv->max_conns)
		err = -EMFILE;
	else if (peer && !peer_take(srv, peer))
		err = -EUSERS;
	if (err) {
		if (m)
			__atomic_sub_fetch(&srv->nconns, 1, __ATOMIC_RELAXED);
		lc->ops->close_cookie(cookie);
		free(m);
		if (srv->ops->on_conn_error)
			srv->ops->on_conn_error(srv->ctx, lc->ops->scheme, err);
		return;
	}
	m->w = &srv->workers[srv->next_worker++ % srv->nworkers];
	m->ops = lc->ops;
	m->cookie = cookie;
	m->peer = peer;
	lode_loop_post(m->w->loop, attach_on_worker, m);
}

/* ---- replies ---- */

static void reply_sent(struct lode_send *s, int err)
{
	struct lode_req *req = lode_container_of(s, struct lode_req, send);

	(void)err; /* a reply that could not be sent: the client sees the connection drop */
	req_free(req);
}

static void reply_on_worker(void *arg)
{
	struct lode_req *req = arg;
	struct sconn *sc = req->conn;

	count_reply(req);
	if (!sc->t) {
		req_free(req);
		return;
	}
	sc->ops->send(sc->t, &req->send);
}

/* A reply after lode_server_stop(): nothing to send it on. */
static void reply_late(struct lode_server *srv, struct lode_req *req, void *data,
		       void (*data_free)(void *))
{
	bool last;

	if (data && data_free)
		data_free(data);
	pthread_mutex_lock(&srv->late_lock);
	last = req_release(req);
	pthread_mutex_unlock(&srv->late_lock);
	if (last)
		server_free(srv);
}

void lode_req_reply(struct lode_req *req, int status, const void *body, size_t body_len, void *data,
		    size_t data_len, void (*data_free)(void *))
{
	struct sconn *sc = req->conn;
	struct lode_server *srv = sc->w->srv;
	struct lode_loop *cur = lode_loop_current();
	/* on a thread with no running loop (cur NULL) this is never "here", even once the
	 * stopped server's worker loops are gone */
	bool here = cur && cur == sc->w->loop;

	if (!here) {
		pthread_rwlock_rdlock(&srv->stop_lock);
		if (srv->stopped) {
			pthread_rwlock_unlock(&srv->stop_lock);
			reply_late(srv, req, data, data_free);
			return;
		}
	}

	if (status > 0)
		status = -EIO; /* a bug in a handler: never send "error 0" or a positive code */
	if (status) {
		if (data && data_free)
			data_free(data);
		body = NULL;
		body_len = 0;
		data = NULL;
		data_len = 0;
	}
	if (data && !data_free && data_len) {
		void *copy = malloc(data_len);

		if (!copy)
			abort();
		memcpy(copy, data, data_len);
		data = copy;
		data_free = free;
	}
	req->rdata = data;
	req->rdata_free = data_free;
	lode_hdr_init(&req->send.hdr, req->hdr.opcode, req->hdr.req_id, 0, 0);
	req->send.hdr.flags = LODE_WIRE_F_REPLY | req->rflags;
	req->send.hdr.grant = req->rgrant;
	req->send.hdr.status = lode_status_from_errno(status);
	if (body_len && !here) {
		req->rbody = malloc(body_len);
		if (!req->rbody)
			abort();
		memcpy(req->rbody, body, body_len);
		body = req->rbody;
	}
	req->send.body = body;
	req->send.body_len = (uint32_t)body_len;
	req->iov.iov_base = data;
	req->iov.iov_len = data_len;
	req->send.data = &req->iov;
	req->send.data_iovcnt = data_len ? 1 : 0;
	req->send.done = reply_sent;
	if (here) {
		reply_on_worker(req);
	} else {
		lode_loop_post(sc->w->loop, reply_on_worker, req);
		pthread_rwlock_unlock(&srv->stop_lock);
	}
}

void lode_req_reply_file(struct lode_req *req, const void *body, size_t body_len, int fd,
			 uint64_t off, uint32_t len, void (*release)(void *arg), void *arg)
{
	req->file_release = release;
	req->file_arg = arg;
	lode_hdr_init(&req->send.hdr, req->hdr.opcode, req->hdr.req_id, 0, 0);
	req->send.hdr.flags = LODE_WIRE_F_REPLY;
	req->send.body = body;
	req->send.body_len = (uint32_t)body_len;
	req->send.data = NULL;
	req->send.data_iovcnt = 0;
	req->send.file_fd = fd;
	req->send.file_off = off;
	req->send.file_len = len;
	req->send.done = reply_sent;
	reply_on_worker(req);
}

void lode_req_reply_grant(struct lode_req *req, bool renewed, uint64_t grant)
{
	if (!lode_op_adds_name(req->hdr.opcode))
		return;
	req->rflags = renewed ? LODE_WIRE_F_GRANT : 0;
	req->rgrant = req->hdr.opcode == LODE_OP_MKDIR ? grant : 0;
}

const struct lode_wire_hdr *lode_req_hdr(const struct lode_req *req)
{
	return &req->hdr;
}

const void *lode_req_body(const struct lode_req *req)
{
	return req->body;
}

const void *lode_req_data(const struct lode_req *req)
{
	return req->data;
}

struct lode_loop *lode_req_loop(const struct lode_req *req)
{
	return req->conn->w->loop;
}

unsigned lode_req_role(const struct lode_req *req)
{
	return req->conn->role;
}

const char *lode_req_group(const struct lode_req *req)
{
	return req->conn->group;
}

uint64_t lode_req_conn_id(const struct lode_req *req)
{
	return req->conn->id;
}

const struct lode_wire_cap *lode_req_cap(const struct lode_req *req)
{
	return req->cap;
}

bool lode_req_cap_known(const struct lode_req *req)
{
	const struct sconn *sc = req->conn;

	if (!req->cap)
		return false;
	for (unsigned i = 0; i < sc->ncaps_ok; i++)
		if (!memcmp(&sc->caps_ok[i], req->cap, sizeof(*req->cap)))
			return true;
	return false;
}

void lode_req_cap_remember(struct lode_req *req)
{
	struct sconn *sc = req->conn;

	if (!req->cap)
		return;
	memcpy(&sc->caps_ok[sc->caps_next], req->cap, sizeof(*req->cap));
	sc->caps_next = (sc->caps_next + 1) % SCONN_CAPS;
	if (sc->ncaps_ok < SCONN_CAPS)
		sc->ncaps_ok++;
}

/* ---- deadlines ---- */

/*
 * Once a second on each worker: closes the connections that hold a descriptor without
 * sending (no first frame in time, or a frame stalled half way), and wakes those paused
 * only by the server's memory budget once it has room again.
 */
static void sweep(struct lode_io *io, int res)
{
	struct worker *w = lode_container_of(io, struct worker, sweep.io);
	struct lode_server *srv = w->srv;
	uint64_t now = lode_now_ms();

	if (res == -ECANCELED || w->draining)
		return;
	for (struct sconn *sc = w->conns, *next; sc; sc = next) {
		next = sc->next; /* a close may unlink sc (on_close runs later, but be safe) */
		if (!sc->t)
			continue;
		if ((sc->frames == 0 && now - sc->accepted_ms > srv->first_frame_ms) ||
		    (sc->auth != AUTH_DONE && now - sc->accepted_ms > srv->first_frame_ms) ||
		    (sc->frame_start_ms && now - sc->frame_start_ms > srv->frame_ms)) {
			sc->ops->close(sc->t, -ETIMEDOUT);
			continue;
		}
		sconn_flow(sc);
	}
	lode_loop_timer(w->loop, &w->sweep, SWEEP_MS);
}

/* ---- start / stop ---- */

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->sweep.io.cb = sweep;
	lode_loop_timer(w->loop, &w->sweep, SWEEP_MS);
	if (w->srv->ops->on_worker_start)
		w->srv->ops->on_worker_start(w->srv->ctx, w->idx, w->loop);
	lode_loop_run(w->loop);
	return NULL;
}

static void drain_worker(void *arg)
{
	struct worker *w = arg;
	struct lode_server *srv = w->srv;

	w->draining = true;
	lode_loop_cancel(w->loop, &w->sweep.io);
	if (w->idx == 0)
		for (unsigned i = 0; i < srv->nlisteners; i++)
			srv->lops[i]->listener_close(srv->listeners[i]);
	for (struct sconn *sc = w->conns; sc; sc = sc->next)
		sc->ops->close(sc->t, -ESHUTDOWN);
	if (w->nconns == 0)
		lode_loop_stop(w->loop);
}

int lode_server_start(struct lode_server **out, const struct lode_server_opts *opts)
{
	struct lode_server *srv;
	unsigned i, started = 0;
	int rc;

	if (!opts->threads || !opts->ops || !opts->ops->on_request || !opts->listen[0])
		return -EINVAL;
	srv = calloc(1, sizeof(*srv) + LISTEN_MAX * sizeof(struct listen_ctx));
	if (!srv)
		return -ENOMEM;
	srv->ops = opts->ops;
	srv->ctx = opts->ctx;
	srv->max_conns = opts->max_conns ? opts->max_conns : DEFAULT_MAX_CONNS;
	srv->max_conns_per_peer =
	    opts->max_conns_per_peer ? opts->max_conns_per_peer : DEFAULT_MAX_CONNS_PER_PEER;
	srv->first_frame_ms = opts->first_frame_ms ? opts->first_frame_ms : DEFAULT_FIRST_FRAME_MS;
	srv->frame_ms = opts->frame_ms ? opts->frame_ms : DEFAULT_FRAME_MS;
	srv->max_request_bytes =
	    opts->max_request_bytes ? opts->max_request_bytes : DEFAULT_MAX_REQUEST_BYTES;
	if (opts->keys && opts->keys->held) {
		srv->keys = *opts->keys;
		srv->secure = true;
	}
	pthread_rwlock_init(&srv->stop_lock, NULL);
	pthread_mutex_init(&srv->late_lock, NULL);
	pthread_mutex_init(&srv->peers_lock, NULL);
	srv->nworkers = opts->threads;
	srv->workers = calloc(opts->threads, sizeof(*srv->workers));
	if (!srv->workers) {
		rc = -ENOMEM;
		goto err_free;
	}
	for (i = 0; i < srv->nworkers; i++) {
		srv->workers[i].srv = srv;
		srv->workers[i].idx = i;
		rc = lode_loop_create(&srv->workers[i].loop, 256);
		if (rc)
			goto err_loops;
	}
	for (i = 0; i < LISTEN_MAX && opts->listen[i]; i++) {
		struct listen_ctx *lc = (struct listen_ctx *)(srv + 1) + i;
		struct lode_addr a;

		rc = lode_addr_parse(opts->listen[i], &a);
		if (rc)
			goto err_listeners;
		srv->lops[i] = lode_transport_for(&a);
		if (!srv->lops[i]) {
			rc = -EPROTONOSUPPORT;
			goto err_listeners;
		}
		lc->srv = srv;
		lc->ops = srv->lops[i];
		rc = srv->lops[i]->listen(srv->workers[0].loop, &a, on_accept, lc,
					  &srv->listeners[i]);
		if (rc)
			goto err_listeners;
		srv->nlisteners++;
		srv->lops[i]->listener_addr(srv->listeners[i], &a);
		lode_addr_format(&a, srv->addrs[i], sizeof(srv->addrs[i]));
	}
	for (started = 0; started < srv->nworkers; started++) {
		rc = -pthread_create(&srv->workers[started].thread, NULL, worker_main,
				     &srv->workers[started]);
		if (rc)
			goto err_threads;
	}
	*out = srv;
	return 0;

err_threads:
	for (i = 0; i < started; i++) {
		lode_loop_post(srv->workers[i].loop, drain_worker, &srv->workers[i]);
		pthread_join(srv->workers[i].thread, NULL);
	}
	started = srv->nworkers; /* listeners were closed by worker 0 if it ran */
err_listeners:
	for (i = 0; i < srv->nlisteners && started == 0; i++)
		srv->lops[i]->listener_abort(srv->listeners[i]);
err_loops:
	for (i = 0; i < srv->nworkers; i++)
		lode_loop_destroy(srv->workers[i].loop);
	free(srv->workers);
err_free:
	pthread_rwlock_destroy(&srv->stop_lock);
	pthread_mutex_destroy(&srv->late_lock);
	pthread_mutex_destroy(&srv->peers_lock);
	free(srv);
	return rc;
}

void lode_server_stats(const struct lode_server *srv, struct lode_server_stats *out)
{
	memset(out, 0, sizeof(*out));
	/* answered before received: a request is received before it is answered, so the
	 * difference (in flight) never goes negative */
	for (unsigned i = 0; i < srv->nworkers; i++)
		out->answered += __atomic_load_n(&srv->workers[i].stats.answered, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < srv->nworkers; i++) {
		const struct lode_server_stats *w = &srv->workers[i].stats;

		out->received += __atomic_load_n(&w->received, __ATOMIC_ACQUIRE);
		for (unsigned o = 0; o < LODE_OP_MAX_; o++) {
			const struct lode_server_op_stats *a = &w->op[o];
			struct lode_server_op_stats *b = &out->op[o];

			b->requests += __atomic_load_n(&a->requests, __ATOMIC_RELAXED);
			b->errors += __atomic_load_n(&a->errors, __ATOMIC_RELAXED);
			for (unsigned k = 0; k <= LODE_SERVER_LAT_BOUNDS; k++)
				b->lat[k] += __atomic_load_n(&a->lat[k], __ATOMIC_RELAXED);
			b->lat_sum_ns += __atomic_load_n(&a->lat_sum_ns, __ATOMIC_RELAXED);
			b->rx_bytes += __atomic_load_n(&a->rx_bytes, __ATOMIC_RELAXED);
			b->tx_bytes += __atomic_load_n(&a->tx_bytes, __ATOMIC_RELAXED);
		}
	}
	if (out->received < out->answered)
		out->received = out->answered;
	out->conns = __atomic_load_n(&srv->nconns, __ATOMIC_RELAXED);
}

const char *lode_server_address(const struct lode_server *srv, unsigned i)
{
	return i < srv->nlisteners ? srv->addrs[i] : NULL;
}

uint64_t lode_server_live_requests(const struct lode_server *srv)
{
	return __atomic_load_n(&srv->live_reqs, __ATOMIC_RELAXED);
}

static void server_free(struct lode_server *srv)
{
	for (unsigned i = 0; i < PEER_BUCKETS; i++)
		while (srv->peers[i]) {
			struct peer_count *p = srv->peers[i];

			srv->peers[i] = p->next;
			free(p);
		}
	pthread_mutex_destroy(&srv->peers_lock);
	sodium_memzero(&srv->keys, sizeof(srv->keys));
	free(srv->workers);
	pthread_rwlock_destroy(&srv->stop_lock);
	pthread_mutex_destroy(&srv->late_lock);
	free(srv);
}

void lode_server_stop(struct lode_server *srv)
{
	bool idle;

	if (!srv)
		return;
	for (unsigned i = 0; i < srv->nworkers; i++)
		lode_loop_post(srv->workers[i].loop, drain_worker, &srv->workers[i]);
	for (unsigned i = 0; i < srv->nworkers; i++)
		pthread_join(srv->workers[i].thread, NULL);
	pthread_rwlock_wrlock(&srv->stop_lock);
	srv->stopped = true;
	pthread_rwlock_unlock(&srv->stop_lock);
	/* replies posted before the stop still free their requests */
	pthread_mutex_lock(&srv->late_lock);
	for (unsigned i = 0; i < srv->nworkers; i++) {
		lode_loop_run_pending(srv->workers[i].loop);
		lode_loop_destroy(srv->workers[i].loop);
		srv->workers[i].loop = NULL;
	}
	idle = __atomic_load_n(&srv->live_reqs, __ATOMIC_RELAXED) == 0;
	pthread_mutex_unlock(&srv->late_lock);
	if (idle)
		server_free(srv);
}
