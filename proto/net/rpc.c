/* SPDX-License-Identifier: MIT */
/*
 * The calling side: one I/O thread per lode_rpc, its loop, and the connections on it.
 *
 * Calls cross from the caller's thread to the I/O thread by lode_loop_post(). On the I/O
 * thread a call gets a request id, joins its connection's pending table and is sent; the
 * reply's header tells the transport where the body and data go (the call's own buffers).
 * A call completes when its reply has arrived and its request has been fully handed to the
 * kernel (so its data buffers are no longer in use), or when its connection fails.
 *
 * Deadlines: a tick every 100 ms closes any connection with a call past its deadline,
 * failing all its calls with -ETIMEDOUT. Closing, rather than forgetting one call, is what
 * makes it safe to reuse the buffer of a timed-out call: no late reply can land in it.
 *
 * The handshake (auth.h): a new connection first sends AUTH step 1 (request id 0) and
 * queues every call behind it. The server's reply proves it holds the key; the client then
 * sends its own proof (step 2) and, right behind it on the same connection, the queued
 * calls: one round trip per connection. A server that does not prove the key (a wrong key,
 * or one run --insecure while this side holds a key), or that refuses a keyless client,
 * closes the connection with -EACCES, failing the queued calls with it.
 */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "codec.h"
#include "loop.h"
#include "rpc.h"
#include "rpc_direct.h"
#include "transport.h"

#define NBUCKETS 256
#define TICK_MS	 100

#define CALL_SENT    0x1u
#define CALL_REPLIED 0x2u

struct lode_rpc {
	struct lode_loop *loop;
	pthread_t thread;
	unsigned default_timeout_ms;
	struct lode_timer tick;
	bool stopping;		     /* loop thread */
	struct lode_rpc_conn *conns; /* loop thread */
	uint64_t next_req_id;	     /* loop thread */
	/* set before any connection opens, read-only after */
	unsigned role; /* claimed in every handshake */
	bool has_key;  /* key below is role's */
	uint8_t key[LODE_KEY_BYTES];
	char group[32]; /* a client group's key: its name, sent in AUTH step 1; else "" */
};

enum { A_NONE, A_HELLO, A_READY }; /* a connection's handshake: not begun, step 1 sent, done */

struct lode_rpc_conn {
	struct lode_rpc *rpc;
	struct lode_addr addr;
	char addr_str[LODE_ADDR_MAX + 1];
	const struct lode_transport_ops *ops;
	struct lode_tconn *t; /* NULL while disconnected */
	bool closed;	      /* closed by the user: free once t is gone */
	struct lode_call *buckets[NBUCKETS];
	unsigned npending;
	struct lode_call *receiving;
	bool receiving_bad; /* the reply did not fit the call's buffers */
	struct lode_rpc_conn *prev, *next;
	/* the handshake (loop thread) */
	uint8_t auth;			 /* A_* */
	bool auth_rx;			 /* the frame arriving is the AUTH reply */
	struct lode_call *queue, *qtail; /* calls waiting for it, by next_ */
	uint8_t cnonce[LODE_NONCE_BYTES];
	struct lode_wire_auth_rep auth_rep;
	unsigned server_flags; /* atomic: of the last handshake (LODE_AUTH_F_INSECURE) */
	/* lode_rpc_call_direct's connections (TCP): made at its first call (atomic) */
	struct lode_direct_pool *direct;
};

struct call_send {
	struct lode_send send;
	struct lode_call *call;
	uint64_t body[]; /* with a capability: the call's body, then the capability */
};

static unsigned bucket(uint64_t id)
{
	return (unsigned)(id * 0x9e3779b97f4a7c15ull >> 56);
}

/* The state flags live in the top bits of req_id_ to keep struct lode_call small. */
static unsigned call_flags(const struct lode_call *c)
{
	return (unsigned)(c->req_id_ >> 62);
}

static void call_set_flag(struct lode_call *c, unsigned f)
{
	c->req_id_ |= (uint64_t)f << 62;
}

static uint64_t call_id(const struct lode_call *c)
{
	return c->req_id_ & ((1ull << 62) - 1);
}

static void pending_add(struct lode_rpc_conn *conn, struct lode_call *call)
{
	unsigned b = bucket(call_id(call));

	call->next_ = conn->buckets[b];
	conn->buckets[b] = call;
	conn->npending++;
}

static struct lode_call *pending_find(struct lode_rpc_conn *conn, uint64_t id)
{
	for (struct lode_call *c = conn->buckets[bucket(id)]; c; c = c->next_)
		if (call_id(c) == id)
			return c;
	return NULL;
}

static void pending_del(struct lode_rpc_conn *conn, struct lode_call *call)
{
	struct lode_call **pp = &conn->buckets[bucket(call_id(call))];

	for (; *pp; pp = &(*pp)->next_) {
		if (*pp == call) {
			*pp = call->next_;
			conn->npending--;
			return;
		}
	}
}

static void call_finish(struct lode_call *call, int status)
{
	call->status = status;
	call->done(call);
}

/* Completes the call if both halves are done. */
static void call_maybe_done(struct lode_rpc_conn *conn, struct lode_call *call)
{
	if (call_flags(call) != (CALL_SENT | CALL_REPLIED))
		return;
	pending_del(conn, call);
	call_finish(call, call->status);
}

static void fail_all(struct lode_rpc_conn *conn, int err)
{
	while (conn->queue) {
		struct lode_call *c = conn->queue;

		conn->queue = c->next_;
		call_finish(c, err);
	}
	conn->qtail = NULL;
	for (unsigned b = 0; b < NBUCKETS; b++) {
		struct lode_call *c;

		while ((c = conn->buckets[b])) {
			conn->buckets[b] = c->next_;
			conn->npending--;
			/* a request still in the send queue is failed by the transport, which
			 * calls send_done with an error; that send owns the call until then */
			if (!(call_flags(c) & CALL_SENT)) {
				call_set_flag(c, CALL_REPLIED);
				c->status = err;
				continue;
			}
			call_finish(c, err);
		}
	}
}

/* ---- transport callbacks ---- */

static int c_on_header(struct lode_tconn *t, const struct lode_wire_hdr *hdr, void **body,
		       void **data)
{
	struct lode_rpc_conn *conn = lode_tconn_ctx(t);
	struct lode_call *call;

	if (hdr->req_id == 0) {
		/* the handshake's: step 1's reply (or refusal), or step 2's (empty) */
		if (hdr->opcode != LODE_OP_AUTH || conn->auth == A_NONE || hdr->data_len ||
		    hdr->body_len > (conn->auth == A_HELLO ? sizeof(conn->auth_rep) : 0))
			return -EPROTO;
		conn->auth_rx = true;
		*body = &conn->auth_rep;
		*data = NULL;
		return 0;
	}
	call = pending_find(conn, hdr->req_id);

	if (!call || (call_flags(call) & CALL_REPLIED) || call->opcode != hdr->opcode)
		return -EPROTO;
	conn->receiving = call;
	conn->receiving_bad = false;
	if (hdr->body_len > call->reply_body_max || hdr->data_len > call->reply_data_max ||
	    (hdr->data_len && !call->reply_data)) {
		conn->receiving_bad = true;
		*body = NULL;
		*data = NULL;
		return 0;
	}
	*body = call->reply_body;
	*data = call->reply_data;
	return 0;
}

static void auth_on_reply(struct lode_rpc_conn *conn, const struct lode_wire_hdr *hdr);

static void c_on_frame(struct lode_tconn *t, const struct lode_wire_hdr *hdr)
{
	struct lode_rpc_conn *conn = lode_tconn_ctx(t);
	struct lode_call *call = conn->receiving;

	if (conn->auth_rx) {
		conn->auth_rx = false;
		auth_on_reply(conn, hdr);
		return;
	}

	conn->receiving = NULL;
	/* lengths are reported only for replies that landed in the caller's buffers */
	call->reply_body_len = conn->receiving_bad ? 0 : hdr->body_len;
	call->reply_data_len = conn->receiving_bad ? 0 : hdr->data_len;
	call->status = conn->receiving_bad ? -EPROTO : lode_status_to_errno(hdr->status);
	call->reply_grant_flag = !conn->receiving_bad && (hdr->flags & LODE_WIRE_F_GRANT);
	call->reply_grant = conn->receiving_bad ? 0 : hdr->grant;
	call_set_flag(call, CALL_REPLIED);
	call_maybe_done(conn, call);
}

static void conn_free(struct lode_rpc_conn *conn)
{
	struct lode_rpc *rpc = conn->rpc;

	if (conn->prev)
		conn->prev->next = conn->next;
	else
		rpc->conns = conn->next;
	if (conn->next)
		conn->next->prev = conn->prev;
	lode_direct_pool_destroy(conn->direct);
	free(conn);
	if (rpc->stopping && !rpc->conns)
		lode_loop_stop(rpc->loop);
}

static void c_on_close(struct lode_tconn *t, int err)
{
	struct lode_rpc_conn *conn = lode_tconn_ctx(t);

	conn->t = NULL;
	conn->receiving = NULL;
	conn->auth = A_NONE;
	conn->auth_rx = false;
	fail_all(conn, err ? err : -ECONNRESET);
	if (conn->closed)
		conn_free(conn);
}

static const struct lode_tconn_cbs client_cbs = {
    .on_header = c_on_header,
    .on_frame = c_on_frame,
    .on_close = c_on_close,
};

/* ---- submit ---- */

static void send_done(struct lode_send *s, int err)
{
	struct call_send *cs = lode_container_of(s, struct call_send, send);
	struct lode_call *call = cs->call;
	struct lode_rpc_conn *conn = call->conn_;

	free(cs);
	if (err) {
		/* the connection failed; fail_all() may already have unlinked the call */
		if (call_flags(call) & CALL_REPLIED) {
			call_finish(call, call->status ? call->status : err);
			return;
		}
		pending_del(conn, call);
		call_finish(call, err);
		return;
	}
	call_set_flag(call, CALL_SENT);
	call_maybe_done(conn, call);
}

/* Sends a call on a connection that has done its handshake. */
static void call_send(struct lode_rpc_conn *conn, struct lode_call *call)
{
	struct lode_rpc *rpc = conn->rpc;
	size_t extra = call->cap ? call->body_len + sizeof(*call->cap) : 0;
	struct call_send *cs = calloc(1, sizeof(*cs) + extra);

	if (!cs) {
		call_finish(call, -ENOMEM);
		return;
	}
	call->req_id_ = ++rpc->next_req_id;
	pending_add(conn, call);
	cs->call = call;
	lode_hdr_init(&cs->send.hdr, call->opcode, call_id(call), 0, 0);
	cs->send.hdr.flags =
	    (call->lazy ? LODE_WIRE_F_LAZY : 0) | (call->grant_flag ? LODE_WIRE_F_GRANT : 0);
	cs->send.hdr.grant = call->grant_flag ? call->grant : 0;
	cs->send.body = call->body;
	cs->send.body_len = call->body_len;
	if (call->cap) {
		/* the capability ends the body (LODE_WIRE_F_CAP): one more copy of a small body */
		memcpy(cs->body, call->body, call->body_len);
		memcpy((char *)cs->body + call->body_len, call->cap, sizeof(*call->cap));
		cs->send.body = cs->body;
		cs->send.body_len = (uint32_t)extra;
		cs->send.hdr.flags |= LODE_WIRE_F_CAP;
	}
	cs->send.data = call->data;
	cs->send.data_iovcnt = call->data_iovcnt;
	cs->send.reply_data = call->reply_data;
	cs->send.reply_data_max = call->reply_data_max;
	cs->send.done = send_done;
	conn->ops->send(conn->t, &cs->send);
}

/* ---- the handshake ---- */

static void auth_send_done(struct lode_send *s, int err)
{
	(void)err; /* a failed send fails the connection, and its calls with it */
	free(s);
}

/* Sends AUTH step 1 or 2 (request id 0: the handshake's). */
static int auth_send(struct lode_rpc_conn *conn, uint32_t step, const uint8_t *proof)
{
	struct lode_rpc *rpc = conn->rpc;
	struct lode_wire_auth_req req = {.step = step, .role = rpc->role};
	struct lode_send *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	if (step == 1) {
		if (rpc->has_key)
			memcpy(req.nonce, conn->cnonce, LODE_NONCE_BYTES);
		else
			req.flags = LODE_AUTH_F_NOKEY;
		memcpy(req.group, rpc->group, sizeof(req.group));
	} else {
		memcpy(req.proof, proof, LODE_PROOF_BYTES);
	}
	lode_hdr_init(&s->hdr, LODE_OP_AUTH, 0, 0, 0);
	s->body = &req;
	s->body_len = sizeof(req);
	s->done = auth_send_done;
	conn->ops->send(conn->t, s); /* copies the body */
	return 0;
}

static void auth_begin(struct lode_rpc_conn *conn)
{
	int rc;

	conn->auth = A_HELLO;
	if (conn->rpc->has_key)
		lode_auth_nonce(conn->cnonce, LODE_NONCE_BYTES);
	rc = auth_send(conn, 1, NULL);
	if (rc)
		conn->ops->close(conn->t, rc);
}

static void auth_on_reply(struct lode_rpc_conn *conn, const struct lode_wire_hdr *hdr)
{
	struct lode_rpc *rpc = conn->rpc;
	const struct lode_wire_auth_rep *rep = &conn->auth_rep;
	uint8_t proof[LODE_PROOF_BYTES];
	bool step2;
	int rc;

	if (hdr->status) {
		/* refused (a keyless client where a key is needed, a role without a key) */
		rc = lode_status_to_errno(hdr->status);
		conn->ops->close(conn->t, rc == -EACCES ? -EACCES : -EPROTO);
		return;
	}
	if (conn->auth == A_READY)
		return; /* step 2 accepted: calls already follow it */
	rc = lode_auth_check_server(hdr->body_len, rep, rpc->has_key ? rpc->key : NULL, rpc->role,
				    conn->cnonce, &step2, proof);
	if (!rc && step2)
		rc = auth_send(conn, 2, proof);
	if (rc) {
		conn->ops->close(conn->t, rc);
		return;
	}
	__atomic_store_n(&conn->server_flags, rep->flags, __ATOMIC_RELAXED);
	conn->auth = A_READY;
	while (conn->queue && conn->t) {
		struct lode_call *c = conn->queue;

		conn->queue = c->next_;
		if (!conn->queue)
			conn->qtail = NULL;
		c->next_ = NULL;
		call_send(conn, c);
	}
}

static void submit_on_loop(void *arg)
{
	struct lode_call *call = arg;
	struct lode_rpc_conn *conn = call->conn_;
	struct lode_rpc *rpc = conn->rpc;
	int rc;

	if (conn->closed || rpc->stopping) {
		call_finish(call, -ESHUTDOWN);
		return;
	}
	/* a request the server would refuse by closing the connection fails alone, here */
	{
		uint64_t dlen = 0;

		for (int i = 0; i < call->data_iovcnt; i++)
			dlen += call->data[i].iov_len;
		if (!lode_op_known(call->opcode) ||
		    call->body_len + (call->cap ? sizeof(*call->cap) : 0) > LODE_BODY_MAX ||
		    (call->cap && !lode_op_takes_cap(call->opcode)) || dlen > LODE_DATA_MAX) {
			call_finish(call, -EMSGSIZE);
			return;
		}
	}
	if (!conn->t) {
		rc = conn->ops->connect(rpc->loop, &conn->addr, &client_cbs, conn, &conn->t);
		if (rc) {
			call_finish(call, rc);
			return;
		}
		auth_begin(conn);
	}
	call->deadline_ms_ =
	    lode_now_ms() + (call->timeout_ms ? call->timeout_ms : rpc->default_timeout_ms);
	if (conn->auth != A_READY) {
		/* behind the handshake: sent once the server has proved the key */
		call->next_ = NULL;
		if (conn->qtail)
			conn->qtail->next_ = call;
		else
			conn->queue = call;
		conn->qtail = call;
		return;
	}
	call_send(conn, call);
}

void lode_rpc_submit(struct lode_rpc_conn *conn, struct lode_call *call)
{
	call->status = 0;
	call->reply_body_len = 0;
	call->reply_data_len = 0;
	call->reply_grant_flag = false;
	call->reply_grant = 0;
	call->req_id_ = 0;
	call->next_ = NULL;
	call->conn_ = conn;
	lode_loop_post(conn->rpc->loop, submit_on_loop, call);
}

/* ---- deadlines ---- */

static void tick_arm(struct lode_rpc *rpc);

static void tick(struct lode_io *io, int res)
{
	struct lode_rpc *rpc = lode_container_of(io, struct lode_rpc, tick.io);
	uint64_t now = lode_now_ms();

	(void)res;
	if (rpc->stopping)
		return;
	for (struct lode_rpc_conn *conn = rpc->conns; conn; conn = conn->next) {
		bool expired = false;

		if (!conn->t || (!conn->npending && !conn->queue))
			continue;
		for (struct lode_call *c = conn->queue; c && !expired; c = c->next_)
			expired = c->deadline_ms_ <= now;
		for (unsigned b = 0; b < NBUCKETS && !expired; b++)
			for (struct lode_call *c = conn->buckets[b]; c; c = c->next_)
				if (c->deadline_ms_ <= now) {
					expired = true;
					break;
				}
		if (expired)
			conn->ops->close(conn->t, -ETIMEDOUT);
	}
	tick_arm(rpc);
}

static void tick_arm(struct lode_rpc *rpc)
{
	rpc->tick.io.cb = tick;
	lode_loop_timer(rpc->loop, &rpc->tick, TICK_MS);
}

/* ---- lifecycle ---- */

int lode_rpc_set_auth(struct lode_rpc *rpc, const struct lode_keyring *keys, unsigned role)
{
	const uint8_t *k = keys ? lode_keyring_key(keys, role) : NULL;

	if (role < LODE_ROLE_CLIENT || role > LODE_ROLE_ADMIN || (keys && !k))
		return -ENOKEY;
	rpc->role = role;
	rpc->has_key = k != NULL;
	if (k)
		memcpy(rpc->key, k, LODE_KEY_BYTES);
	memset(rpc->group, 0, sizeof(rpc->group));
	if (k && role == LODE_ROLE_CLIENT)
		memcpy(rpc->group, keys->group, sizeof(rpc->group));
	return 0;
}

unsigned lode_rpc_conn_server_flags(const struct lode_rpc_conn *conn)
{
	return __atomic_load_n(&conn->server_flags, __ATOMIC_RELAXED);
}

static void *rpc_main(void *arg)
{
	struct lode_rpc *rpc = arg;

	lode_loop_run(rpc->loop);
	return NULL;
}

int lode_rpc_create(struct lode_rpc **out, unsigned default_timeout_ms)
{
	struct lode_rpc *rpc;
	int rc;

	rpc = calloc(1, sizeof(*rpc));
	if (!rpc)
		return -ENOMEM;
	rpc->default_timeout_ms = default_timeout_ms ? default_timeout_ms : 30000;
	rpc->role = LODE_ROLE_CLIENT;
	rc = lode_loop_create(&rpc->loop, 256);
	if (rc)
		goto err_free;
	tick_arm(rpc);
	rc = -pthread_create(&rpc->thread, NULL, rpc_main, rpc);
	if (rc)
		goto err_loop;
	*out = rpc;
	return 0;

err_loop:
	lode_loop_destroy(rpc->loop);
err_free:
	free(rpc);
	return rc;
}

static void shutdown_on_loop(void *arg)
{
	struct lode_rpc *rpc = arg;
	struct lode_rpc_conn *conn, *next;

	rpc->stopping = true;
	for (conn = rpc->conns; conn; conn = next) {
		next = conn->next;
		conn->closed = true;
		if (conn->t)
			conn->ops->close(conn->t, -ESHUTDOWN);
		else
			conn_free(conn);
	}
	if (!rpc->conns)
		lode_loop_stop(rpc->loop);
}

void lode_rpc_destroy(struct lode_rpc *rpc)
{
	if (!rpc)
		return;
	lode_loop_post(rpc->loop, shutdown_on_loop, rpc);
	pthread_join(rpc->thread, NULL);
	lode_loop_destroy(rpc->loop);
	sodium_memzero(rpc->key, sizeof(rpc->key));
	free(rpc);
}

static void conn_add_on_loop(void *arg)
{
	struct lode_rpc_conn *conn = arg;
	struct lode_rpc *rpc = conn->rpc;

	conn->next = rpc->conns;
	if (rpc->conns)
		rpc->conns->prev = conn;
	rpc->conns = conn;
}

int lode_rpc_conn_open(struct lode_rpc *rpc, const char *addr, struct lode_rpc_conn **out)
{
	struct lode_rpc_conn *conn;
	struct lode_addr a;
	int rc;

	if (!addr || strlen(addr) > LODE_ADDR_MAX)
		return -EINVAL;
	rc = lode_addr_parse(addr, &a);
	if (rc)
		return rc;
	conn = calloc(1, sizeof(*conn));
	if (!conn)
		return -ENOMEM;
	conn->ops = lode_transport_for(&a);
	if (!conn->ops) {
		free(conn);
		return -EPROTONOSUPPORT;
	}
	conn->rpc = rpc;
	conn->addr = a;
	strcpy(conn->addr_str, addr);
	/* posted before any call on it, and the loop runs posts in order */
	lode_loop_post(rpc->loop, conn_add_on_loop, conn);
	*out = conn;
	return 0;
}

static void conn_close_on_loop(void *arg)
{
	struct lode_rpc_conn *conn = arg;

	conn->closed = true;
	if (conn->t)
		conn->ops->close(conn->t, -ESHUTDOWN);
	else
		conn_free(conn);
}

void lode_rpc_conn_close(struct lode_rpc_conn *conn)
{
	if (conn)
		lode_loop_post(conn->rpc->loop, conn_close_on_loop, conn);
}

const char *lode_rpc_conn_addr(const struct lode_rpc_conn *conn)
{
	return conn->addr_str;
}

/* ---- waiting ---- */

void lode_rpc_batch_init(struct lode_rpc_batch *b)
{
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->pending = 0;
	b->first_error = 0;
}

static void batch_done(struct lode_call *call)
{
	struct lode_rpc_batch *b = call->arg;

	pthread_mutex_lock(&b->lock);
	if (call->status && !b->first_error)
		b->first_error = call->status;
	if (--b->pending == 0)
		pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

void lode_rpc_batch_add(struct lode_rpc_batch *b, struct lode_rpc_conn *conn,
			struct lode_call *call)
{
	pthread_mutex_lock(&b->lock);
	b->pending++;
	pthread_mutex_unlock(&b->lock);
	call->done = batch_done;
	call->arg = b;
	lode_rpc_submit(conn, call);
}

int lode_rpc_batch_wait(struct lode_rpc_batch *b)
{
	int rc;

	pthread_mutex_lock(&b->lock);
	while (b->pending)
		pthread_cond_wait(&b->cond, &b->lock);
	rc = b->first_error;
	b->first_error = 0;
	pthread_mutex_unlock(&b->lock);
	return rc;
}

void lode_rpc_batch_destroy(struct lode_rpc_batch *b)
{
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
}

int lode_rpc_call(struct lode_rpc_conn *conn, struct lode_call *call)
{
	struct lode_rpc_batch b;
	int rc;

	lode_rpc_batch_init(&b);
	lode_rpc_batch_add(&b, conn, call);
	lode_rpc_batch_wait(&b);
	lode_rpc_batch_destroy(&b);
	rc = call->status;
	return rc;
}

int lode_rpc_call_direct(struct lode_rpc_conn *conn, struct lode_call *call)
{
	struct lode_direct_pool *p = __atomic_load_n(&conn->direct, __ATOMIC_ACQUIRE), *none = NULL;
	struct lode_rpc *rpc = conn->rpc;

	if (call->data_iovcnt > LODE_DIRECT_IOV_MAX)
		return lode_rpc_call(conn, call);
	if (!p && conn->addr.scheme == LODE_SCHEME_TCP) {
		struct lode_direct_auth a = {.role = rpc->role, .has_key = rpc->has_key};

		memcpy(a.key, rpc->key, sizeof(a.key));
		memcpy(a.group, rpc->group, sizeof(a.group));
		if (!lode_direct_pool_create(&conn->addr, &a, rpc->default_timeout_ms,
					     &conn->server_flags, &p) &&
		    !__atomic_compare_exchange_n(&conn->direct, &none, p, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			lode_direct_pool_destroy(p); /* another thread's came first */
			p = none;
		}
		sodium_memzero(a.key, sizeof(a.key));
	}
	return p ? lode_direct_call(p, call) : lode_rpc_call(conn, call);
}

int lode_rpc_simple(struct lode_rpc_conn *conn, uint8_t opcode, const void *body, uint32_t body_len,
		    void *reply_body, uint32_t reply_body_max)
{
	struct lode_call call = {
	    .opcode = opcode,
	    .body = body,
	    .body_len = body_len,
	    .reply_body = reply_body,
	    .reply_body_max = reply_body_max,
	};

	return lode_rpc_call(conn, &call);
}
