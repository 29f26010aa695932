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
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "loop.h"
#include "rpc.h"
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
};

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
};

struct call_send {
	struct lode_send send;
	struct lode_call *call;
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
	struct lode_call *call = pending_find(conn, hdr->req_id);

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

static void c_on_frame(struct lode_tconn *t, const struct lode_wire_hdr *hdr)
{
	struct lode_rpc_conn *conn = lode_tconn_ctx(t);
	struct lode_call *call = conn->receiving;

	conn->receiving = NULL;
	/* lengths are reported only for replies that landed in the caller's buffers */
	call->reply_body_len = conn->receiving_bad ? 0 : hdr->body_len;
	call->reply_data_len = conn->receiving_bad ? 0 : hdr->data_len;
	call->status = conn->receiving_bad ? -EPROTO : lode_status_to_errno(hdr->status);
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
	free(conn);
	if (rpc->stopping && !rpc->conns)
		lode_loop_stop(rpc->loop);
}

static void c_on_close(struct lode_tconn *t, int err)
{
	struct lode_rpc_conn *conn = lode_tconn_ctx(t);

	conn->t = NULL;
	conn->receiving = NULL;
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

static void submit_on_loop(void *arg)
{
	struct lode_call *call = arg;
	struct lode_rpc_conn *conn = call->conn_;
	struct lode_rpc *rpc = conn->rpc;
	struct call_send *cs;
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
		if (!lode_op_known(call->opcode) || call->body_len > LODE_BODY_MAX ||
		    dlen > LODE_DATA_MAX) {
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
	}
	cs = calloc(1, sizeof(*cs));
	if (!cs) {
		call_finish(call, -ENOMEM);
		return;
	}
	call->req_id_ = ++rpc->next_req_id;
	call->deadline_ms_ =
	    lode_now_ms() + (call->timeout_ms ? call->timeout_ms : rpc->default_timeout_ms);
	pending_add(conn, call);
	cs->call = call;
	lode_hdr_init(&cs->send.hdr, call->opcode, call_id(call), 0, 0);
	cs->send.body = call->body;
	cs->send.body_len = call->body_len;
	cs->send.data = call->data;
	cs->send.data_iovcnt = call->data_iovcnt;
	cs->send.reply_data = call->reply_data;
	cs->send.reply_data_max = call->reply_data_max;
	cs->send.done = send_done;
	conn->ops->send(conn->t, &cs->send);
}

void lode_rpc_submit(struct lode_rpc_conn *conn, struct lode_call *call)
{
	call->status = 0;
	call->reply_body_len = 0;
	call->reply_data_len = 0;
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

		if (!conn->t || !conn->npending)
			continue;
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
