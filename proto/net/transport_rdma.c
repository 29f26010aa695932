/* SPDX-License-Identifier: MIT */
/*
 * RDMA transport on librdmacm and libibverbs: reliable-connected queue pairs, set up through
 * the RDMA connection manager, driven by the same io_uring loops as TCP (the CM event
 * channel and the completion channel are file descriptors the loop polls).
 *
 * Control messages are SENDs into receive buffers posted in advance (rdma_msg.h has their
 * layout and the credit rules). Bulk data moves one-sided: the server pulls a request's
 * data from the client's registered memory with RDMA READ, and pushes a reply's data into
 * the buffer the client named with RDMA WRITE, then SENDs the reply. The client's buffers
 * are registered through the registration cache (rdma_regcache.h); the upper layers are
 * the same as over TCP.
 *
 * Each connection has its own CM event channel, completion channel, CQ and QP, and lives
 * on one loop. Close: disconnect and destroy the QP at once (so that the device touches no
 * buffer any more: a call that timed out can reuse its memory), cancel the two polls, and
 * free the connection from a posted function once both have completed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <liburing.h>
#include <rdma/rdma_cma.h>

#include "codec.h"
#include "rdma_msg.h"
#include "rdma_regcache.h"
#include "transport.h"

#define DEPTH	       LODE_RDMA_DEPTH
#define BUF_SIZE       ((LODE_RDMA_MSG_MAX + 63) & ~(size_t)63)
#define RESOLVE_MS     2000
#define REGCACHE_BYTES (8ull << 30) /* unused cached registrations kept up to this */

/* wr_id: kind in the top byte, a slot below */
enum { WR_RECV = 1, WR_SEND, WR_READ, WR_WRITE };
#define WR_ID(kind, slot) (((uint64_t)(kind) << 56) | (uint64_t)(slot))
#define WR_KIND(id)	  ((unsigned)((id) >> 56))
#define WR_SLOT(id)	  ((unsigned)((id)&0xffffffffu))

/* One RDMA device (verbs context) of the process: its protection domain and registration
 * cache, shared by all connections on it. Lives as long as the process. */
struct rdma_dev {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct lode_regcache rc;
	unsigned rd_atom;
	struct rdma_dev *next;
};

static pthread_mutex_t g_devs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdma_dev *g_devs;

/* A request of ours waiting for its reply (client side). Slot i uses send buffer i. */
struct outreq {
	bool used;
	uint64_t req_id;
	struct lode_send *s;
	struct lode_reg *regs[LODE_RDMA_DESC_MAX];
	unsigned nregs;
	struct lode_reg *sink;
	void *sink_addr;
	uint64_t sink_len;
};

/* A reply in flight (server side), in send buffer slot i. */
struct outreply {
	bool used;
	struct lode_send *s;
	struct lode_reg *regs[LODE_RDMA_DESC_MAX + 1];
	unsigned nregs;
	void *staging; /* file data read into memory */
	struct lode_io read_io;
	struct lode_tconn *c;
	unsigned slot;
	struct lode_rdma_desc sink;
	uint16_t flags;
};

/* The sink a request named for its reply (server side). */
struct sinkent {
	bool used;
	uint64_t req_id;
	struct lode_rdma_desc d;
};

struct lode_tconn {
	struct lode_tconn_base base; /* first: see transport.h */
	struct lode_loop *loop;
	const struct lode_tconn_cbs *cbs;
	bool client;
	bool up; /* established (a server's from its accept: replies follow requests) */

	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct rdma_dev *dev;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	bool qp_made;
	char *pool; /* DEPTH receive buffers, then DEPTH send buffers */
	struct ibv_mr *pool_mr;

	struct lode_io cm_io, cq_io;
	bool cm_polling, cq_polling;

	struct lode_rdma_credits cr;
	struct lode_send *sq_head, *sq_tail; /* waiting for a credit or a send buffer */

	/* client */
	struct outreq out[DEPTH];
	/* server */
	struct outreply rep[DEPTH];
	struct sinkent sinks[DEPTH];
	unsigned rq[DEPTH];   /* received frames not yet handed up, in order: recv slots */
	uint32_t rlen[DEPTH]; /* length of the message in each receive buffer */
	unsigned rq_head, rq_len;
	bool cur_started;   /* on_header ran for rq's head */
	unsigned cur_reads; /* its RDMA READs still in flight */
	struct lode_reg *cur_reg;
	void *cur_data;
	struct lode_rdma_frame cur;
	bool paused;

	unsigned file_reads; /* reply data being read from files: the loop points at us */
	bool closing, finish_posted;
	int close_err;
};

struct lode_listener {
	struct lode_loop *loop;
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct lode_io io;
	bool polling, closing;
	void (*on_accept)(void *ctx, intptr_t cookie);
	void *ctx;
};

static void rt_close(struct lode_tconn *c, int err);
static void sq_kick(struct lode_tconn *c);
static void rq_process(struct lode_tconn *c);

/* ---- devices ---- */

static int dev_reg(void *ctx, void *addr, size_t len, void **handle, uint32_t *lkey, uint32_t *rkey)
{
	struct rdma_dev *d = ctx;
	struct ibv_mr *mr =
	    ibv_reg_mr(d->pd, addr, len,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);

	if (!mr)
		return errno ? -errno : -ENOMEM;
	*handle = mr;
	*lkey = mr->lkey;
	*rkey = mr->rkey;
	return 0;
}

static void dev_dereg(void *ctx, void *handle)
{
	(void)ctx;
	ibv_dereg_mr(handle);
}

static const struct lode_regcache_ops dev_reg_ops = {.reg = dev_reg, .dereg = dev_dereg};

static struct rdma_dev *dev_get(struct ibv_context *verbs)
{
	struct ibv_device_attr attr;
	struct rdma_dev *d;

	pthread_mutex_lock(&g_devs_lock);
	for (d = g_devs; d; d = d->next)
		if (d->verbs == verbs)
			goto out;
	d = calloc(1, sizeof(*d));
	if (!d)
		goto out;
	d->verbs = verbs;
	d->pd = ibv_alloc_pd(verbs);
	if (!d->pd) {
		free(d);
		d = NULL;
		goto out;
	}
	d->rd_atom = 16;
	if (!ibv_query_device(verbs, &attr)) {
		if ((unsigned)attr.max_qp_rd_atom < d->rd_atom)
			d->rd_atom = (unsigned)attr.max_qp_rd_atom;
		if ((unsigned)attr.max_qp_init_rd_atom < d->rd_atom)
			d->rd_atom = (unsigned)attr.max_qp_init_rd_atom;
	}
	lode_regcache_init(&d->rc, &dev_reg_ops, d, REGCACHE_BYTES);
	d->next = g_devs;
	g_devs = d;
out:
	pthread_mutex_unlock(&g_devs_lock);
	return d;
}

/* ---- buffers ---- */

static char *recv_buf(struct lode_tconn *c, unsigned slot)
{
	return c->pool + (size_t)slot * BUF_SIZE;
}

static char *send_buf(struct lode_tconn *c, unsigned slot)
{
	return c->pool + (size_t)(DEPTH + slot) * BUF_SIZE;
}

static int post_recv(struct lode_tconn *c, unsigned slot)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)recv_buf(c, slot),
	    .length = (uint32_t)BUF_SIZE,
	    .lkey = c->pool_mr->lkey,
	};
	struct ibv_recv_wr wr = {.wr_id = WR_ID(WR_RECV, slot), .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;

	return -ibv_post_recv(c->id->qp, &wr, &bad);
}

static int post_send(struct lode_tconn *c, unsigned slot, uint32_t len)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)send_buf(c, slot),
	    .length = len,
	    .lkey = c->pool_mr->lkey,
	};
	struct ibv_send_wr wr = {
	    .wr_id = WR_ID(WR_SEND, slot),
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_SEND,
	    .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	return -ibv_post_send(c->id->qp, &wr, &bad);
}

/* RDMA READ (into local) or WRITE (from local) of len bytes at the peer's raddr. */
static int post_rdma(struct lode_tconn *c, int kind, unsigned slot, void *local, uint32_t lkey,
		     uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)local, .length = len, .lkey = lkey};
	struct ibv_send_wr wr = {
	    .wr_id = WR_ID(kind, slot),
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = kind == WR_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
	    .send_flags = kind == WR_READ ? IBV_SEND_SIGNALED : 0,
	    .wr.rdma = {.remote_addr = raddr, .rkey = rkey},
	};
	struct ibv_send_wr *bad;

	return -ibv_post_send(c->id->qp, &wr, &bad);
}

/* ---- polling the channels from the loop ---- */

static void cm_poll_arm(struct lode_tconn *c)
{
	if (c->cm_polling || c->closing)
		return;
	io_uring_prep_poll_add(lode_loop_sqe(c->loop, &c->cm_io), c->ech->fd, POLLIN);
	c->cm_polling = true;
}

static void cq_poll_arm(struct lode_tconn *c)
{
	if (c->cq_polling || c->closing || !c->cch)
		return;
	io_uring_prep_poll_add(lode_loop_sqe(c->loop, &c->cq_io), c->cch->fd, POLLIN);
	c->cq_polling = true;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

/* ---- close ---- */

static void fail_send(struct lode_tconn *c, struct lode_send *s)
{
	free(s->body_heap_);
	s->body_heap_ = NULL;
	if (s->done)
		s->done(s, c->close_err ? c->close_err : -ECONNRESET);
}

static void release_regs(struct lode_tconn *c, struct lode_reg **regs, unsigned *n)
{
	for (unsigned i = 0; i < *n; i++)
		lode_regcache_put(&c->dev->rc, regs[i]);
	*n = 0;
}

/* Frees a connection's verbs objects and itself: once nothing is armed on the loop (or for
 * one that never reached it). */
static void tconn_free(struct lode_tconn *c)
{
	if (c->qp_made)
		rdma_destroy_qp(c->id);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->cch)
		ibv_destroy_comp_channel(c->cch);
	if (c->pool_mr)
		ibv_dereg_mr(c->pool_mr);
	free(c->pool);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->ech)
		rdma_destroy_event_channel(c->ech);
	free(c);
}

static void finish(void *arg)
{
	struct lode_tconn *c = arg;
	struct lode_send *s;

	c->finish_posted = false;
	if (c->cm_polling || c->cq_polling || c->file_reads)
		return;
	for (unsigned i = 0; i < DEPTH; i++) {
		struct outreq *o = &c->out[i];
		struct outreply *r = &c->rep[i];

		if (o->used) {
			release_regs(c, o->regs, &o->nregs);
			if (o->sink)
				lode_regcache_put(&c->dev->rc, o->sink);
			o->used = false;
			fail_send(c, o->s);
		}
		if (r->used) {
			release_regs(c, r->regs, &r->nregs);
			free(r->staging);
			r->used = false;
			fail_send(c, r->s);
		}
	}
	while ((s = c->sq_head)) {
		c->sq_head = s->next_;
		fail_send(c, s);
	}
	if (c->cur_reg)
		lode_regcache_put(&c->dev->rc, c->cur_reg);
	c->cbs->on_close(c, c->close_err);
	tconn_free(c);
}

static void maybe_finish(struct lode_tconn *c)
{
	if (!c->closing || c->finish_posted || c->cm_polling || c->cq_polling || c->file_reads)
		return;
	c->finish_posted = true;
	lode_loop_post(c->loop, finish, c);
}

static void rt_close(struct lode_tconn *c, int err)
{
	if (c->closing)
		return;
	c->closing = true;
	c->close_err = err;
	if (c->qp_made) {
		rdma_disconnect(c->id);
		rdma_destroy_qp(c->id); /* from here on the device touches none of our memory */
		c->qp_made = false;
	}
	if (c->cm_polling)
		lode_loop_cancel(c->loop, &c->cm_io);
	if (c->cq_polling)
		lode_loop_cancel(c->loop, &c->cq_io);
	maybe_finish(c);
}

/* ---- setup ---- */

static int qp_setup(struct lode_tconn *c)
{
	struct ibv_qp_init_attr qa = {0};
	int err;

	c->dev = dev_get(c->id->verbs);
	if (!c->dev)
		return -ENODEV;
	c->cch = ibv_create_comp_channel(c->id->verbs);
	if (!c->cch)
		return -errno;
	err = set_nonblock(c->cch->fd);
	if (err)
		return err;
	/* sends: a control message per slot, plus its RDMA reads or writes */
	c->cq = ibv_create_cq(c->id->verbs, DEPTH * (LODE_RDMA_DESC_MAX + 4), c, c->cch, 0);
	if (!c->cq)
		return -errno;
	if (ibv_req_notify_cq(c->cq, 0))
		return -EIO;
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = DEPTH * (LODE_RDMA_DESC_MAX + 2);
	qa.cap.max_recv_wr = DEPTH;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(c->id, c->dev->pd, &qa))
		return -errno;
	c->qp_made = true;
	c->pool = aligned_alloc(4096, BUF_SIZE * 2 * DEPTH);
	if (!c->pool)
		return -ENOMEM;
	c->pool_mr = ibv_reg_mr(c->dev->pd, c->pool, BUF_SIZE * 2 * DEPTH, IBV_ACCESS_LOCAL_WRITE);
	if (!c->pool_mr)
		return -errno;
	for (unsigned i = 0; i < DEPTH; i++) {
		err = post_recv(c, i);
		if (err)
			return err;
	}
	return 0;
}

static void conn_param(struct lode_tconn *c, struct rdma_conn_param *p, struct lode_rdma_hello *h)
{
	*h = (struct lode_rdma_hello){
	    .magic = LODE_RDMA_MAGIC, .version = LODE_RDMA_VERSION, .depth = DEPTH};
	memset(p, 0, sizeof(*p));
	p->private_data = h;
	p->private_data_len = sizeof(*h);
	p->responder_resources = (uint8_t)c->dev->rd_atom;
	p->initiator_depth = (uint8_t)c->dev->rd_atom;
	p->retry_count = 5;
	p->rnr_retry_count = 5; /* flow control means the peer never runs out of buffers */
}

static bool hello_ok(const void *data, uint8_t len)
{
	struct lode_rdma_hello h;

	if (!data || len < sizeof(h))
		return false;
	memcpy(&h, data, sizeof(h));
	return h.magic == LODE_RDMA_MAGIC && h.version == LODE_RDMA_VERSION && h.depth == DEPTH;
}

/* ---- CM events of a connection ---- */

static int cm_event_err(enum rdma_cm_event_type t)
{
	switch (t) {
	case RDMA_CM_EVENT_REJECTED:
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		return -EHOSTUNREACH;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return -ENODEV;
	default:
		return -ECONNRESET;
	}
}

static void cm_event(struct lode_tconn *c, const struct rdma_cm_event *ev, bool hello)
{
	struct rdma_conn_param p;
	struct lode_rdma_hello h;
	int err;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(c->id, RESOLVE_MS))
			rt_close(c, -errno);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		err = qp_setup(c);
		if (!err) {
			conn_param(c, &p, &h);
			if (rdma_connect(c->id, &p))
				err = -errno;
		}
		if (err)
			rt_close(c, err);
		else
			cq_poll_arm(c);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (c->client && !hello) {
			rt_close(c, -EPROTO);
			break;
		}
		c->up = true;
		sq_kick(c);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rt_close(c, c->client ? -ECONNRESET : 0);
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		break;
	default:
		/* the error reaches the connection's owner through its close */
		rt_close(c, cm_event_err(ev->event));
		break;
	}
}

static void cm_ready(struct lode_io *io, int res)
{
	struct lode_tconn *c = lode_container_of(io, struct lode_tconn, cm_io);
	struct rdma_cm_event *ev;

	c->cm_polling = false;
	if (c->closing) {
		maybe_finish(c);
		return;
	}
	(void)res;
	while (!c->closing && !rdma_get_cm_event(c->ech, &ev)) {
		struct rdma_cm_event copy = *ev;
		/* the private data goes with the ack: check it first (a CM that passes none on
		 * is no reason to refuse a server that accepted us) */
		bool hello = !ev->param.conn.private_data ||
			     hello_ok(ev->param.conn.private_data, ev->param.conn.private_data_len);

		rdma_ack_cm_event(ev);
		cm_event(c, &copy, hello);
	}
	cm_poll_arm(c);
	maybe_finish(c);
}

/* ---- send side ---- */

static bool iov_get(struct lode_tconn *c, const struct lode_send *s, struct lode_reg **regs,
		    struct lode_rdma_desc *desc, unsigned *n)
{
	for (int i = 0; i < s->data_iovcnt; i++) {
		struct lode_reg *r;

		if (!s->data[i].iov_len)
			continue;
		if (*n == LODE_RDMA_DESC_MAX ||
		    lode_regcache_get(&c->dev->rc, s->data[i].iov_base, s->data[i].iov_len, &r))
			return false;
		regs[*n] = r;
		desc[*n] = (struct lode_rdma_desc){.addr = (uintptr_t)s->data[i].iov_base,
						   .rkey = r->rkey,
						   .len = (uint32_t)s->data[i].iov_len};
		(*n)++;
	}
	return true;
}

static void copy_iovs(char *dst, const struct lode_send *s)
{
	for (int i = 0; i < s->data_iovcnt; i++) {
		memcpy(dst, s->data[i].iov_base, s->data[i].iov_len);
		dst += s->data[i].iov_len;
	}
}

/* A request (client side) into a free slot. Returns false if it must wait. */
static bool send_request(struct lode_tconn *c, struct lode_send *s)
{
	struct lode_rdma_desc desc[LODE_RDMA_DESC_MAX], sink;
	uint16_t flags = 0;
	struct outreq *o = NULL;
	unsigned slot;
	long len;
	int err;

	for (slot = 0; slot < DEPTH; slot++) {
		if (!c->out[slot].used) {
			o = &c->out[slot];
			break;
		}
	}
	if (!o || lode_rdma_credit_take(&c->cr))
		return false;
	*o = (struct outreq){.used = true, .req_id = s->hdr.req_id, .s = s};
	if (s->hdr.data_len > LODE_RDMA_INLINE_MAX) {
		if (!iov_get(c, s, o->regs, desc, &o->nregs)) {
			rt_close(c, -EMSGSIZE);
			return true;
		}
	} else if (s->hdr.data_len) {
		flags |= LODE_RDMA_F_INLINE;
	}
	if (s->reply_data && s->reply_data_max > LODE_RDMA_INLINE_MAX) {
		uint64_t max =
		    s->reply_data_max < LODE_DATA_MAX ? s->reply_data_max : LODE_DATA_MAX;

		if (lode_regcache_get(&c->dev->rc, s->reply_data, max, &o->sink)) {
			rt_close(c, -ENOMEM);
			return true;
		}
		o->sink_addr = s->reply_data;
		o->sink_len = max;
		sink = (struct lode_rdma_desc){
		    .addr = (uintptr_t)s->reply_data, .rkey = o->sink->rkey, .len = (uint32_t)max};
		flags |= LODE_RDMA_F_SINK;
	}
	if (flags & LODE_RDMA_F_INLINE) {
		char tmp[LODE_RDMA_INLINE_MAX];

		copy_iovs(tmp, s);
		len = lode_rdma_encode(send_buf(c, slot), BUF_SIZE, 0, flags, &s->hdr,
				       s->body_len ? s->body : NULL, o->sink ? &sink : NULL, NULL,
				       0, tmp);
	} else {
		len = lode_rdma_encode(send_buf(c, slot), BUF_SIZE, 0, flags, &s->hdr,
				       s->body_len ? s->body : NULL, o->sink ? &sink : NULL, desc,
				       o->nregs, NULL);
	}
	err = len < 0 ? (int)len : post_send(c, slot, (uint32_t)len);
	if (err)
		rt_close(c, err);
	return true;
}

static struct sinkent *sink_take(struct lode_tconn *c, uint64_t req_id, struct lode_rdma_desc *d)
{
	for (unsigned i = 0; i < DEPTH; i++) {
		if (c->sinks[i].used && c->sinks[i].req_id == req_id) {
			c->sinks[i].used = false;
			*d = c->sinks[i].d;
			return &c->sinks[i];
		}
	}
	return NULL;
}

/* The reply's control message, once its data is in place. */
static void reply_post(struct lode_tconn *c, struct outreply *r)
{
	const struct lode_send *s = r->s;
	char tmp[LODE_RDMA_INLINE_MAX];
	long len;
	int err = 0;

	if (r->flags & LODE_RDMA_F_INLINE) {
		if (r->staging)
			memcpy(tmp, r->staging, s->hdr.data_len);
		else
			copy_iovs(tmp, s);
	}
	len = lode_rdma_encode(send_buf(c, r->slot), BUF_SIZE, lode_rdma_credit_collect(&c->cr),
			       r->flags, &s->hdr, s->body_len ? s->body : NULL, NULL, NULL, 0, tmp);
	if (len < 0)
		err = (int)len;
	else
		err = post_send(c, r->slot, (uint32_t)len);
	if (err)
		rt_close(c, err);
}

/* Pushes the reply's data into the client's sink, then posts the reply. */
static void reply_place(struct lode_tconn *c, struct outreply *r)
{
	const struct lode_send *s = r->s;
	uint64_t off = 0;
	int err = 0;

	if (r->staging) {
		struct lode_reg *reg;

		err = lode_regcache_get(&c->dev->rc, r->staging, s->file_len, &reg);
		if (!err) {
			r->regs[r->nregs++] = reg;
			err = post_rdma(c, WR_WRITE, r->slot, r->staging, reg->lkey, s->file_len,
					r->sink.addr, r->sink.rkey);
		}
	} else {
		for (int i = 0; i < s->data_iovcnt && !err; i++) {
			struct lode_reg *reg;
			uint32_t n = (uint32_t)s->data[i].iov_len;

			if (!n)
				continue;
			if (r->nregs == LODE_RDMA_DESC_MAX + 1) {
				err = -EMSGSIZE;
				break;
			}
			err = lode_regcache_get(&c->dev->rc, s->data[i].iov_base, n, &reg);
			if (err)
				break;
			r->regs[r->nregs++] = reg;
			err = post_rdma(c, WR_WRITE, r->slot, s->data[i].iov_base, reg->lkey, n,
					r->sink.addr + off, r->sink.rkey);
			off += n;
		}
	}
	if (err) {
		rt_close(c, err);
		return;
	}
	reply_post(c, r);
}

static void rep_read_done(struct lode_io *io, int res)
{
	struct outreply *r = lode_container_of(io, struct outreply, read_io);
	struct lode_tconn *c = r->c;

	c->file_reads--;
	if (c->closing) {
		maybe_finish(c); /* finish() fails the send */
		return;
	}
	if (res != (int)r->s->file_len) {
		rt_close(c, res < 0 ? res : -EIO); /* the file is shorter than promised */
		return;
	}
	if (r->flags & LODE_RDMA_F_PLACED)
		reply_place(c, r);
	else
		reply_post(c, r);
}

/* A reply (server side) into a free send buffer. Returns false if it must wait. */
static bool send_reply(struct lode_tconn *c, struct lode_send *s)
{
	struct outreply *r = NULL;
	unsigned slot;

	for (slot = 0; slot < DEPTH; slot++) {
		if (!c->rep[slot].used) {
			r = &c->rep[slot];
			break;
		}
	}
	if (!r)
		return false;
	*r = (struct outreply){.used = true, .s = s, .c = c, .slot = slot};
	r->read_io.cb = rep_read_done;
	if (!sink_take(c, s->hdr.req_id, &r->sink))
		r->sink.len = 0;
	if (s->hdr.data_len > LODE_RDMA_INLINE_MAX) {
		if (s->hdr.data_len > r->sink.len) {
			/* the client named no room for this much: it would fail the call anyway */
			rt_close(c, -EPROTO);
			return true;
		}
		r->flags = LODE_RDMA_F_PLACED;
	} else if (s->hdr.data_len) {
		r->flags = LODE_RDMA_F_INLINE;
	}
	if (s->file_len) {
		r->staging = malloc(s->file_len);
		if (!r->staging) {
			rt_close(c, -ENOMEM);
			return true;
		}
		lode_loop_pread(c->loop, &r->read_io, s->file_fd, r->staging, s->file_len,
				(off_t)s->file_off);
		c->file_reads++;
		return true;
	}
	if (r->flags & LODE_RDMA_F_PLACED)
		reply_place(c, r);
	else
		reply_post(c, r);
	return true;
}

static void sq_kick(struct lode_tconn *c)
{
	while (c->sq_head && !c->closing && c->up) {
		struct lode_send *s = c->sq_head;

		if (!(c->client ? send_request(c, s) : send_reply(c, s)))
			return;
		c->sq_head = s->next_;
		if (!c->sq_head)
			c->sq_tail = NULL;
	}
}

static void rt_send(struct lode_tconn *c, struct lode_send *s)
{
	lode_send_prepare(s);
	if (c->closing) {
		fail_send(c, s);
		return;
	}
	if (c->sq_tail)
		c->sq_tail->next_ = s;
	else
		c->sq_head = s;
	c->sq_tail = s;
	sq_kick(c);
}

/* ---- receive side ---- */

/* A reply arrived (client side). */
static void recv_reply(struct lode_tconn *c, unsigned rslot, const struct lode_rdma_frame *f)
{
	struct outreq *o = NULL;
	void *body = NULL, *data = NULL;
	struct lode_send *s;
	int err;

	for (unsigned i = 0; i < DEPTH; i++) {
		if (c->out[i].used && c->out[i].req_id == f->hdr.req_id) {
			o = &c->out[i];
			break;
		}
	}
	err = lode_hdr_check(&f->hdr, 1);
	if (!err && (!o || f->msg.ndesc || (f->msg.flags & LODE_RDMA_F_SINK)))
		err = -EPROTO;
	if (!err && (f->msg.flags & LODE_RDMA_F_PLACED) && f->hdr.data_len > o->sink_len)
		err = -EPROTO;
	if (!err)
		err = lode_rdma_credit_grant(&c->cr, f->msg.credits, DEPTH);
	if (!err)
		err = c->cbs->on_header(c, &f->hdr, &body, &data);
	if (err) {
		rt_close(c, err);
		return;
	}
	if (body && f->hdr.body_len)
		memcpy(body, f->body, f->hdr.body_len);
	if (data && f->hdr.data_len) {
		const void *src =
		    (f->msg.flags & LODE_RDMA_F_PLACED) ? o->sink_addr : f->inline_data;

		if (data != src)
			memcpy(data, src, f->hdr.data_len);
	}
	err = post_recv(c, rslot);
	if (err) {
		rt_close(c, err);
		return;
	}
	c->cbs->on_frame(c, &f->hdr);
	release_regs(c, o->regs, &o->nregs);
	if (o->sink)
		lode_regcache_put(&c->dev->rc, o->sink);
	o->sink = NULL;
	s = o->s;
	o->used = false;
	free(s->body_heap_);
	s->body_heap_ = NULL;
	if (s->done)
		s->done(s,
			0); /* the server has pulled the request's data: the caller may reuse it */
	sq_kick(c);
}

/* The head frame of the receive queue has all its data: hand it up (server side). */
static void rq_deliver(struct lode_tconn *c)
{
	unsigned slot = c->rq[c->rq_head];
	struct lode_wire_hdr hdr = c->cur.hdr;
	int err;

	if (c->cur_reg) {
		lode_regcache_put(&c->dev->rc, c->cur_reg);
		c->cur_reg = NULL;
	}
	if (c->cur.has_sink) {
		unsigned i;

		for (i = 0; i < DEPTH && c->sinks[i].used; i++)
			;
		if (i == DEPTH) { /* more requests outstanding than credits allow */
			rt_close(c, -EPROTO);
			return;
		}
		c->sinks[i] =
		    (struct sinkent){.used = true, .req_id = hdr.req_id, .d = c->cur.sink};
	}
	c->rq_head = (c->rq_head + 1) % DEPTH;
	c->rq_len--;
	c->cur_started = false;
	err = post_recv(c, slot);
	if (err) {
		rt_close(c, err);
		return;
	}
	c->cr.owed++;
	c->cbs->on_frame(c, &hdr);
}

/* Starts the head frame: where its body and data go, and the reads that fetch its data. */
static int rq_start(struct lode_tconn *c)
{
	unsigned slot = c->rq[c->rq_head];
	void *body = NULL, *data = NULL;
	uint64_t off = 0;
	int err;

	err = lode_rdma_decode(recv_buf(c, slot), c->rlen[slot], &c->cur);
	if (!err)
		err = lode_hdr_check(&c->cur.hdr, 0);
	if (!err && (c->cur.msg.flags & LODE_RDMA_F_PLACED))
		err = -EPROTO;
	if (!err)
		err = c->cbs->on_header(c, &c->cur.hdr, &body, &data);
	if (err)
		return err;
	c->cur_started = true;
	if (body && c->cur.hdr.body_len)
		memcpy(body, c->cur.body, c->cur.hdr.body_len);
	c->cur_reads = 0;
	if (!c->cur.hdr.data_len)
		return 0;
	if (c->cur.msg.flags & LODE_RDMA_F_INLINE) {
		if (data)
			memcpy(data, c->cur.inline_data, c->cur.hdr.data_len);
		return 0;
	}
	if (!data) { /* discard: nothing to fetch */
		return 0;
	}
	err = lode_regcache_get(&c->dev->rc, data, c->cur.hdr.data_len, &c->cur_reg);
	if (err)
		return err;
	for (unsigned i = 0; i < c->cur.msg.ndesc; i++) {
		const struct lode_rdma_desc *d = &c->cur.desc[i];

		err = post_rdma(c, WR_READ, slot, (char *)data + off, c->cur_reg->lkey, d->len,
				d->addr, d->rkey);
		if (err)
			return err;
		off += d->len;
		c->cur_reads++;
	}
	return 0;
}

static void rq_process(struct lode_tconn *c)
{
	while (c->rq_len && !c->closing) {
		if (!c->cur_started) {
			int err;

			if (c->paused)
				return;
			err = rq_start(c);
			if (err) {
				rt_close(c, err);
				return;
			}
		}
		if (c->cur_reads)
			return;
		rq_deliver(c);
	}
}

static void recv_done(struct lode_tconn *c, unsigned slot, uint32_t len)
{
	struct lode_rdma_frame f;

	if (slot >= DEPTH || lode_rdma_decode(recv_buf(c, slot), len, &f)) {
		rt_close(c, -EPROTO);
		return;
	}
	if (c->client) {
		recv_reply(c, slot, &f);
		return;
	}
	if (c->rq_len == DEPTH) {
		rt_close(c, -EPROTO);
		return;
	}
	c->rlen[slot] = len;
	c->rq[(c->rq_head + c->rq_len) % DEPTH] = slot;
	c->rq_len++;
	rq_process(c);
}

/* ---- completions ---- */

static void send_completed(struct lode_tconn *c, unsigned slot)
{
	struct outreply *r;
	struct lode_send *s;

	if (c->client || slot >= DEPTH)
		return; /* a request's slot is held until its reply */
	r = &c->rep[slot];
	if (!r->used)
		return;
	release_regs(c, r->regs, &r->nregs);
	free(r->staging);
	r->staging = NULL;
	s = r->s;
	r->used = false;
	free(s->body_heap_);
	s->body_heap_ = NULL;
	if (s->done)
		s->done(s, 0);
	if (!c->closing && c->cbs->on_send_drained && !c->sq_head)
		c->cbs->on_send_drained(c);
}

static void wc_handle(struct lode_tconn *c, const struct ibv_wc *wc)
{
	unsigned slot = WR_SLOT(wc->wr_id);

	if (wc->status != IBV_WC_SUCCESS) {
		rt_close(c, wc->status == IBV_WC_RETRY_EXC_ERR ? -ETIMEDOUT : -ECONNRESET);
		return;
	}
	switch (WR_KIND(wc->wr_id)) {
	case WR_RECV:
		recv_done(c, slot, wc->byte_len);
		break;
	case WR_SEND:
		send_completed(c, slot);
		sq_kick(c);
		break;
	case WR_READ:
		if (c->cur_reads && --c->cur_reads == 0)
			rq_process(c);
		break;
	default:
		break;
	}
}

static void cq_ready(struct lode_io *io, int res)
{
	struct lode_tconn *c = lode_container_of(io, struct lode_tconn, cq_io);
	struct ibv_cq *cq;
	void *cq_ctx;
	struct ibv_wc wc[16];
	int n;

	(void)res;
	c->cq_polling = false;
	if (c->closing) {
		maybe_finish(c);
		return;
	}
	if (!ibv_get_cq_event(c->cch, &cq, &cq_ctx))
		ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(c->cq, 0)) {
		rt_close(c, -EIO);
		return;
	}
	/* after re-arming: a completion that raced with it is polled here */
	while (!c->closing && (n = ibv_poll_cq(c->cq, 16, wc)) > 0)
		for (int i = 0; i < n && !c->closing; i++)
			wc_handle(c, &wc[i]);
	if (n < 0 && !c->closing)
		rt_close(c, -EIO);
	cq_poll_arm(c);
	maybe_finish(c);
}

/* ---- connect / accept ---- */

static struct lode_tconn *tconn_new(struct lode_loop *loop, const struct lode_tconn_cbs *cbs,
				    void *ctx, bool client)
{
	struct lode_tconn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->base.ops = &lode_transport_rdma;
	c->base.ctx = ctx;
	c->loop = loop;
	c->cbs = cbs;
	c->client = client;
	c->cm_io.cb = cm_ready;
	c->cq_io.cb = cq_ready;
	c->cr.avail = client ? DEPTH : 0;
	return c;
}

static int rt_connect(struct lode_loop *loop, const struct lode_addr *addr,
		      const struct lode_tconn_cbs *cbs, void *ctx, struct lode_tconn **out)
{
	struct lode_tconn *c = tconn_new(loop, cbs, ctx, true);
	struct sockaddr_in sin = addr->sin;
	int err;

	if (!c)
		return -ENOMEM;
	c->ech = rdma_create_event_channel();
	if (!c->ech) {
		err = errno ? -errno : -ENODEV;
		goto fail;
	}
	err = set_nonblock(c->ech->fd);
	if (err)
		goto fail;
	if (rdma_create_id(c->ech, &c->id, c, RDMA_PS_TCP) ||
	    rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&sin, RESOLVE_MS)) {
		err = -errno;
		goto fail;
	}
	cm_poll_arm(c);
	*out = c;
	return 0;
fail:
	tconn_free(c);
	return err;
}

static int rt_attach(struct lode_loop *loop, intptr_t cookie, int expect_reply,
		     const struct lode_tconn_cbs *cbs, void *ctx, struct lode_tconn **out)
{
	struct rdma_cm_id *id = (struct rdma_cm_id *)cookie;
	struct lode_tconn *c = tconn_new(loop, cbs, ctx, expect_reply != 0);
	struct rdma_conn_param p;
	struct lode_rdma_hello h;
	int err;

	if (!c) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return -ENOMEM;
	}
	c->id = id;
	c->ech = rdma_create_event_channel();
	if (!c->ech) {
		err = errno ? -errno : -ENODEV;
		goto fail;
	}
	err = set_nonblock(c->ech->fd);
	if (!err && rdma_migrate_id(id, c->ech))
		err = -errno;
	if (!err)
		err = qp_setup(c);
	if (err)
		goto fail;
	id->context = c;
	conn_param(c, &p, &h);
	if (rdma_accept(id, &p)) {
		err = -errno;
		goto fail;
	}
	c->up = true; /* replies wait for requests, which come after ESTABLISHED */
	cm_poll_arm(c);
	cq_poll_arm(c);
	*out = c;
	return 0;
fail:
	/* the caller (proto/net/server.c) tells its daemon, which decides whether to log */
	rdma_reject(id, NULL, 0);
	tconn_free(c);
	return err;
}

static void rt_pause(struct lode_tconn *c, int paused)
{
	c->paused = paused != 0;
	if (!c->paused)
		rq_process(c);
}

/* ---- listener ---- */

static void listen_arm(struct lode_listener *l)
{
	io_uring_prep_poll_add(lode_loop_sqe(l->loop, &l->io), l->ech->fd, POLLIN);
	l->polling = true;
}

static void listener_free(struct lode_listener *l)
{
	rdma_destroy_id(l->id);
	rdma_destroy_event_channel(l->ech);
	free(l);
}

static void listen_ready(struct lode_io *io, int res)
{
	struct lode_listener *l = lode_container_of(io, struct lode_listener, io);
	struct rdma_cm_event *ev;

	(void)res;
	l->polling = false;
	if (l->closing) {
		listener_free(l);
		return;
	}
	while (!rdma_get_cm_event(l->ech, &ev)) {
		struct rdma_cm_id *id = ev->id;
		bool req = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST;
		bool ok =
		    req && hello_ok(ev->param.conn.private_data, ev->param.conn.private_data_len);

		rdma_ack_cm_event(ev);
		if (!req)
			continue; /* events of accepted ids arrive on their own channels */
		if (!ok) {
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
			continue;
		}
		l->on_accept(l->ctx, (intptr_t)id);
	}
	listen_arm(l);
}

static int rt_listen(struct lode_loop *loop, const struct lode_addr *addr,
		     void (*on_accept)(void *ctx, intptr_t cookie), void *ctx,
		     struct lode_listener **out)
{
	struct lode_listener *l = calloc(1, sizeof(*l));
	struct sockaddr_in sin = addr->sin;
	int err;

	if (!l)
		return -ENOMEM;
	l->ech = rdma_create_event_channel();
	if (!l->ech) {
		err = errno ? -errno : -ENODEV;
		free(l);
		return err;
	}
	err = set_nonblock(l->ech->fd);
	if (!err && rdma_create_id(l->ech, &l->id, l, RDMA_PS_TCP))
		err = -errno;
	if (!err && (rdma_bind_addr(l->id, (struct sockaddr *)&sin) || rdma_listen(l->id, 512)))
		err = -errno;
	if (err) {
		if (l->id)
			rdma_destroy_id(l->id);
		rdma_destroy_event_channel(l->ech);
		free(l);
		return err;
	}
	l->loop = loop;
	l->io.cb = listen_ready;
	l->on_accept = on_accept;
	l->ctx = ctx;
	listen_arm(l);
	*out = l;
	return 0;
}

static void rt_listener_addr(const struct lode_listener *l, struct lode_addr *out)
{
	struct sockaddr *sa = rdma_get_local_addr(l->id);

	memset(out, 0, sizeof(*out));
	out->scheme = LODE_SCHEME_RDMA;
	memcpy(&out->sin, sa, sizeof(out->sin));
}

static void rt_listener_close(struct lode_listener *l)
{
	l->closing = true;
	lode_loop_cancel(l->loop, &l->io);
}

static void rt_listener_abort(struct lode_listener *l)
{
	listener_free(l);
}

static void rt_close_cookie(intptr_t cookie)
{
	struct rdma_cm_id *id = (struct rdma_cm_id *)cookie;

	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
}

static uint32_t rt_cookie_peer(intptr_t cookie)
{
	struct sockaddr *sa = rdma_get_peer_addr((struct rdma_cm_id *)cookie);

	if (!sa || sa->sa_family != AF_INET)
		return 0;
	return ((struct sockaddr_in *)(void *)sa)->sin_addr.s_addr;
}

const struct lode_transport_ops lode_transport_rdma = {
    .scheme = "rdma",
    .listen = rt_listen,
    .listener_addr = rt_listener_addr,
    .listener_close = rt_listener_close,
    .listener_abort = rt_listener_abort,
    .attach = rt_attach,
    .connect = rt_connect,
    .send = rt_send,
    .pause = rt_pause,
    .close = rt_close,
    .close_cookie = rt_close_cookie,
    .cookie_peer = rt_cookie_peer,
};
