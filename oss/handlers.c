/* SPDX-License-Identifier: MIT */
/*
 * lode-oss request handlers. Each request is decoded with proto/wire/codec.h (a malformed one
 * is answered with the decoder's negative errno), run against the object store on the
 * worker's own loop, and answered exactly once from the operation's completion.
 *
 * REMOVE, STAT and LIST are synchronous filesystem calls on the worker thread: they do no
 * data I/O, and LIST is an admin operation (see lode_objstore_list).
 *
 * Chained OBJ_WRITE and OBJ_FSYNC (see "Chained replication" in proto/wire/wire_spec.h) run the
 * local operation and send the request on to the next copy at the same time, and answer
 * once both are done, with every copy's status. The request's body and data stay valid
 * until that answer, so the forward sends them straight from the receive buffer. A forward
 * goes only to a target the MDS lists (hop_known), with the request's capability.
 *
 * Before any of that, a client's object data request must carry a capability the MDS
 * signed for the object's file (cap_allows; docs/security.md).
 */
#include "handlers.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "codec.h"
#include "log.h"
#include "metrics.h"
#include "scrub.h"

/* Connections of one worker to the OSS it forwards to, by address. */
struct fwd_cache {
	unsigned n;
	struct {
		char addr[LODE_ADDR_MAX + 1];
		struct lode_rpc_conn *conn; /* owned by oss->fwd_rpc */
	} e[LODE_TARGETS_MAX];
};

/* The worker's I/O context and forward connections; set once by on_worker_start on that
 * thread. */
static __thread struct lode_objstore_io *worker_io;
static __thread struct fwd_cache *worker_fwd;
static __thread struct lode_oss_worker_stats *worker_stats;

/* The worker's own counter: a plain add, published for the scrape. */
static void stat_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

void lode_oss_init(struct lode_oss *oss, struct lode_objstore *st)
{
	memset(oss, 0, sizeof(*oss));
	oss->st = st;
	pthread_mutex_init(&oss->fwd_lock, NULL);
	pthread_rwlock_init(&oss->hops_lock, NULL);
	pthread_mutex_init(&oss->hops_wake_lock, NULL);
	oss->hops = calloc(LODE_TARGETS_MAX, sizeof(*oss->hops)); /* NULL: no hop is known */
}

void lode_oss_hops_set(struct lode_oss *oss, const struct lode_oss_hop *hops, unsigned n)
{
	pthread_rwlock_wrlock(&oss->hops_lock);
	if (oss->hops) {
		n = n < LODE_TARGETS_MAX ? n : LODE_TARGETS_MAX;
		memcpy(oss->hops, hops, n * sizeof(*hops));
		oss->nhops = n;
	}
	pthread_rwlock_unlock(&oss->hops_lock);
}

void lode_oss_hops_wake_set(struct lode_oss *oss, void (*fn)(void *), void *arg)
{
	pthread_mutex_lock(&oss->hops_wake_lock);
	oss->hops_wake = fn;
	oss->hops_wake_arg = arg;
	pthread_mutex_unlock(&oss->hops_wake_lock);
}

/* A hop was refused: count it, and ask for the table now (the link fetches it at most
 * every few tens of milliseconds, however often it is asked). */
static void hops_stale(struct lode_oss *oss)
{
	atomic_fetch_add_explicit(&oss->hops_refused, 1, memory_order_relaxed);
	pthread_mutex_lock(&oss->hops_wake_lock);
	if (oss->hops_wake)
		oss->hops_wake(oss->hops_wake_arg);
	pthread_mutex_unlock(&oss->hops_wake_lock);
}

/* Is hop (id and address) a target of the MDS's table? Without keys, every hop is. */
static bool hop_known(struct lode_oss *oss, const struct lode_wire_chain_hop *hop)
{
	bool known = false;

	if (!oss->hops_checked)
		return true;
	pthread_rwlock_rdlock(&oss->hops_lock);
	for (unsigned i = 0; i < oss->nhops && !known; i++)
		known = oss->hops[i].id == hop->target_id && !strcmp(oss->hops[i].addr, hop->addr);
	pthread_rwlock_unlock(&oss->hops_lock);
	return known;
}

void lode_oss_fini(struct lode_oss *oss)
{
	/* first: forwards still in flight fail (ESHUTDOWN), answering their requests into the
	 * void, while the I/O contexts their local halves use still exist */
	lode_rpc_destroy(atomic_exchange(&oss->fwd_rpc, NULL));
	for (unsigned i = 0; i < LODE_OSS_WORKERS_MAX; i++) {
		lode_objstore_io_destroy(oss->ios[i]);
		oss->ios[i] = NULL;
		free(oss->fwd[i]);
		oss->fwd[i] = NULL;
	}
	free(oss->hops);
	oss->hops = NULL;
	pthread_rwlock_destroy(&oss->hops_lock);
	pthread_mutex_destroy(&oss->hops_wake_lock);
}

static void on_worker_start(void *ctx, unsigned worker, struct lode_loop *loop)
{
	struct lode_oss *oss = ctx;
	struct lode_objstore_io *io;

	if (worker < LODE_OSS_WORKERS_MAX)
		worker_stats = &oss->stats[worker];
	if (worker >= LODE_OSS_WORKERS_MAX || lode_objstore_io_create(oss->st, loop, 0, &io))
		return; /* this worker answers data requests with -ENOMEM */
	oss->ios[worker] = io;
	worker_io = io;
	/* without it, chained requests get -ENOMEM, like data requests without an io */
	oss->fwd[worker] = calloc(1, sizeof(struct fwd_cache));
	worker_fwd = oss->fwd[worker];
}

static void reply_obj(struct lode_req *req, int status, const struct lode_obj_result *res)
{
	struct lode_wire_obj_rep rep = {0};

	if (status) {
		lode_req_reply_err(req, status);
		return;
	}
	rep.object_size = res->object_size;
	rep.bytes_stored = res->bytes_stored;
	lode_req_reply(req, 0, &rep, sizeof(rep), NULL, 0, NULL);
}

static void obj_done(void *arg, int status, struct lode_obj_result *res)
{
	reply_obj(arg, status, res);
}

/* Counts a stored OBJ_WRITE's bytes for the metrics. */
static void count_written(const struct lode_req *req, const struct lode_obj_result *res)
{
	const struct lode_wire_obj_write_req *wr = lode_req_body(req);
	uint64_t n = lode_req_hdr(req)->data_len;

	if (!worker_stats)
		return;
	stat_add(&worker_stats->written_bytes, n);
	if (wr->flags & LODE_OBJ_F_LAZY)
		stat_add(&worker_stats->lazy_bytes, n);
	if (res->inline_ns) {
		stat_add(&worker_stats->inline_bytes, n);
		stat_add(&worker_stats->inline_ns, res->inline_ns);
	}
}

static void write_done(void *arg, int status, struct lode_obj_result *res)
{
	if (!status)
		count_written(arg, res);
	reply_obj(arg, status, res);
}

/* The offset an OBJ_READ asked for (its body was checked when it arrived). */
static uint64_t rr_offset(const struct lode_req *req)
{
	return ((const struct lode_wire_obj_read_req *)lode_req_body(req))->offset;
}

static void read_done(void *arg, int status, struct lode_obj_result *res)
{
	/* rep + one sum per chunk of the largest read: well under LODE_BODY_MAX */
	uint64_t
	    body[(sizeof(struct lode_wire_obj_read_rep) + 8 * (LODE_DATA_MAX / LODE_CHUNK_SIZE)) /
		 8];
	struct lode_wire_obj_read_rep *rep = (struct lode_wire_obj_read_rep *)body;
	struct lode_req *req = arg;
	size_t body_len;

	_Static_assert(sizeof(body) <= LODE_BODY_MAX, "read reply body");
	if (status) {
		lode_req_reply_err(req, status);
		return;
	}
	if (worker_stats) {
		stat_add(&worker_stats->read_bytes, res->data_len);
		if (res->direct)
			stat_add(&worker_stats->direct_bytes, res->data_len);
	}
	memset(rep, 0, sizeof(*rep));
	rep->object_size = res->object_size;
	rep->nchunks = res->nchunks;
	if (res->nchunks) /* a missing object reads as empty: no sums */
		memcpy(rep + 1, res->sums, (size_t)res->nchunks * 8);
	free(res->sums);
	body_len = sizeof(*rep) + (size_t)res->nchunks * 8;
	if (res->fd_ref) {
		/* zero copy: the kernel moves the bytes from the page cache to the socket */
		lode_req_reply_file(req, body, body_len, res->fd, rr_offset(req),
				    (uint32_t)res->data_len, lode_objstore_fd_release, res->fd_ref);
		return;
	}
	if (!res->data_len) {
		lode_obj_result_free_data(res);
		lode_req_reply(req, 0, body, body_len, NULL, 0, NULL);
		return;
	}
	lode_req_reply(req, 0, body, body_len, res->data, res->data_len, res->data_free);
}

static void do_list(struct lode_oss *oss, struct lode_req *req,
		    const struct lode_wire_obj_list_req *lr)
{
	struct lode_wire_obj_list_rep rep = {0};
	struct lode_wire_objinfo *out;
	int eof = 0, n;

	out = malloc((size_t)lr->max * sizeof(*out));
	if (!out) {
		lode_req_reply_err(req, -ENOMEM);
		return;
	}
	n = lode_objstore_list(oss->st, &lr->after, lr->max, out, &eof);
	if (n < 0) {
		free(out);
		lode_req_reply_err(req, n);
		return;
	}
	rep.count = (uint32_t)n;
	rep.eof = (uint32_t)eof;
	if (!n) {
		free(out);
		lode_req_reply(req, 0, &rep, sizeof(rep), NULL, 0, NULL);
		return;
	}
	lode_req_reply(req, 0, &rep, sizeof(rep), out, (size_t)n * sizeof(*out), free);
}

/* ---- per-object serialization of writes and truncates (oss/objlock.c says why) ---- */

/* A request that holds (or waits for) a range of its object's chunks. */
struct obj_hold {
	struct lode_obj_range range;
	struct lode_oss *oss;
	struct lode_req *req;
	const struct lode_msg *msg; /* points into hold->m */
	struct lode_msg m;	    /* the decoded request (its pointers are into req's body) */
	int (*start)(struct lode_oss *oss, struct lode_objstore_io *io, struct obj_hold *h);
};

static void hold_release(struct obj_hold *h)
{
	if (!h)
		return;
	lode_objstore_range_unlock(h->oss->st, &h->range);
	free(h);
}

/* A queued request's turn, on its own worker: start it, or answer its error. */
static void hold_granted(struct lode_obj_range *r)
{
	struct obj_hold *h = lode_container_of(r, struct obj_hold, range);
	int err = h->start(h->oss, worker_io, h);

	if (err) {
		struct lode_req *req = h->req;

		hold_release(h);
		lode_req_reply_err(req, err);
	}
}

/*
 * Runs start once chunks [first, end) of id are held: at once when nothing overlapping is
 * in flight, else from the queue. start answers the request and lets go of the hold, or
 * returns an error without answering (the hold is then let go of here).
 */
static int hold_run(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		    const struct lode_msg *msg, const struct lode_wire_objid *id, uint64_t first,
		    uint64_t end,
		    int (*start)(struct lode_oss *, struct lode_objstore_io *, struct obj_hold *))
{
	struct obj_hold *h = calloc(1, sizeof(*h));
	int err;

	if (!h)
		return -ENOMEM;
	h->range.id = *id;
	h->range.first = first;
	h->range.end = end;
	h->range.loop = lode_loop_current();
	h->range.granted = hold_granted;
	h->oss = oss;
	h->req = req;
	h->m = *msg;
	h->msg = &h->m;
	h->start = start;
	if (!lode_objstore_range_lock(oss->st, &h->range))
		return 0;
	err = start(oss, io, h);
	if (err)
		hold_release(h);
	return err;
}

static void hold_obj_done(void *arg, int status, struct lode_obj_result *res)
{
	struct obj_hold *h = arg;
	struct lode_req *req = h->req;

	/* let go first: the reply may free nothing we need, and a waiter starts sooner */
	hold_release(h);
	reply_obj(req, status, res);
}

static void hold_write_done(void *arg, int status, struct lode_obj_result *res)
{
	struct obj_hold *h = arg;
	struct lode_req *req = h->req;

	hold_release(h);
	write_done(req, status, res);
}

/* ---- chained requests ---- */

/* Default deadline of the forwarding rpc; every forward sets its own from the chain. */
#define FWD_TIMEOUT_MS 30000

struct chain_op {
	struct lode_oss *oss;
	struct lode_req *req;
	struct obj_hold *hold; /* a write's chunks, let go of once every copy answered */
	unsigned hops;	       /* the request's chain count */
	int local;	       /* our own copy's result */
	struct lode_obj_result res;
	atomic_uint pending; /* our own copy, and the forward if any */
	bool down_bad_reply; /* the next hop answered something malformed */
	bool hop_refused;    /* the next hop is not in the MDS's table: never contacted */
	const struct lode_wire_chain_hop *next; /* in the request's body */
	struct lode_call call;			/* the forward */
	struct iovec iov;
	struct lode_wire_obj_chain_rep down; /* the next hop's answer */
	uint64_t body[LODE_BODY_MAX / 8];    /* the request sent on */
};

/* Logs a forward failure at most once a second: a dead next hop fails every request. */
static void fwd_warn(const struct lode_wire_chain_hop *hop, int err)
{
	static _Atomic uint64_t last_ms;
	uint64_t now = lode_now_ms(), prev = atomic_load(&last_ms);

	if (now - prev >= 1000 && atomic_compare_exchange_strong(&last_ms, &prev, now))
		LODE_WARN("chained request to target %u at %s: %s", hop->target_id, hop->addr,
			  strerror(-err));
}

/* Logs a hop refused (not a target of the MDS's table) at most once a second. */
static void hop_warn(const struct lode_wire_chain_hop *hop)
{
	static _Atomic uint64_t last_ms;
	uint64_t now = lode_now_ms(), prev = atomic_load(&last_ms);

	if (now - prev >= 1000 && atomic_compare_exchange_strong(&last_ms, &prev, now))
		LODE_WARN("chained request names target %u at %s, not in the MDS's target table "
			  "as last fetched: not forwarded (fetching it again)",
			  hop->target_id, hop->addr);
}

static struct lode_rpc *fwd_rpc(struct lode_oss *oss)
{
	struct lode_rpc *rpc = atomic_load(&oss->fwd_rpc);

	if (rpc)
		return rpc;
	pthread_mutex_lock(&oss->fwd_lock);
	rpc = atomic_load(&oss->fwd_rpc);
	if (!rpc && !lode_rpc_create(&rpc, FWD_TIMEOUT_MS)) {
		/* the next hop sees a target: only targets may ask an OSS to pass data on, and
		 * no byte of it leaves before the next hop has proved the cluster key */
		if (lode_rpc_set_auth(rpc, oss->keys, LODE_ROLE_OSS)) {
			lode_rpc_destroy(rpc);
			rpc = NULL;
		} else {
			atomic_store(&oss->fwd_rpc, rpc);
		}
	}
	pthread_mutex_unlock(&oss->fwd_lock);
	return rpc;
}

/* This worker's connection to addr (NUL-terminated: the decoder checked the padding). */
static int fwd_conn(struct lode_oss *oss, const char *addr, struct lode_rpc_conn **out)
{
	struct fwd_cache *fc = worker_fwd;
	struct lode_rpc *rpc = fwd_rpc(oss);
	int rc;

	if (!fc || !rpc)
		return -ENOMEM;
	for (unsigned i = 0; i < fc->n; i++) {
		if (!strcmp(fc->e[i].addr, addr)) {
			*out = fc->e[i].conn;
			return 0;
		}
	}
	if (fc->n == LODE_TARGETS_MAX)
		return -ENOMEM; /* more OSS than a cluster has: refuse rather than grow */
	rc = lode_rpc_conn_open(rpc, addr, &fc->e[fc->n].conn);
	if (rc)
		return rc;
	strcpy(fc->e[fc->n].addr, addr);
	*out = fc->e[fc->n++].conn;
	return 0;
}

/*
 * A forward that failed as a whole: what the copies from the next hop on are told. A hop
 * that timed out may be alive and forward the request late, after a newer write of the
 * same range: so every copy after it fails too (it becomes degraded; repair refills it).
 * Otherwise (refused, broken, or an error answer, which a hop gives only before it
 * forwards) the copies after it never saw the request from it: ECANCELED asks the client
 * to send it to them again.
 */
static void fwd_failed(struct chain_op *op, int err, int32_t *st)
{
	bool maybe_forwarded = op->down_bad_reply || err == -ETIMEDOUT || err == -ESHUTDOWN;

	if (op->hop_refused) {
		/* nothing was sent anywhere: the client may send it to the copies itself */
		for (unsigned i = 0; i < op->hops; i++)
			st[i] = ECANCELED;
		return;
	}
	st[0] = lode_status_from_errno(err == -ECANCELED ? -EIO : err);
	for (unsigned i = 1; i < op->hops; i++)
		st[i] = maybe_forwarded ? st[0] : ECANCELED;
}

static void chain_reply(struct chain_op *op)
{
	struct lode_wire_obj_chain_rep rep = {0};
	const struct lode_wire_obj_chain_rep *d;

	rep.count = (uint16_t)(1 + op->hops);
	if (!op->local) {
		rep.obj.object_size = op->res.object_size;
		rep.obj.bytes_stored = op->res.bytes_stored;
	}
	/* ECANCELED means "never reached" on the wire: our own copy was tried */
	rep.status[0] = lode_status_from_errno(op->local == -ECANCELED ? -EIO : op->local);
	if (op->hops) {
		int rc = op->call.status;

		if (!rc) {
			rc = lode_dec_obj_chain_rep(&op->down, op->call.reply_body_len,
						    op->hops - 1, &d);
			op->down_bad_reply = rc != 0;
		}
		if (!rc)
			memcpy(&rep.status[1], d->status, op->hops * sizeof(rep.status[0]));
		else
			fwd_failed(op, rc, &rep.status[1]);
	}
	lode_req_reply(op->req, 0, &rep, sizeof(rep), NULL, 0, NULL);
	hold_release(op->hold);
	free(op);
}

static void chain_part_done(struct chain_op *op)
{
	if (atomic_fetch_sub(&op->pending, 1) == 1)
		chain_reply(op);
}

static void chain_local_done(void *arg, int status, struct lode_obj_result *res)
{
	struct chain_op *op = arg;

	op->local = status;
	if (!status)
		op->res = *res;
	if (!status)
		count_written(op->req, res);
	chain_part_done(op);
}

static void chain_fwd_done(struct lode_call *call)
{
	struct chain_op *op = lode_container_of(call, struct chain_op, call);

	if (call->status)
		fwd_warn(op->next, call->status);
	chain_part_done(op);
}

/* The time the next hop may wait for its own downstream: a quarter less than ours, and
 * always less while that can be (at least 1 ms). */
static uint32_t fwd_timeout(uint32_t t)
{
	if (t <= 1)
		return 1;
	return t < 4 ? t - 1 : t - t / 4;
}

/*
 * Starts the forward of a chained request whose body begins with fixed_len bytes (the
 * write's struct and checksums, or the object id) followed by chain ch. The caller then
 * starts its own copy's operation with chain_local_done(op). Returns 0 and *out, -ESTALE
 * when the request was meant for another target, or -ENOMEM.
 */
static int chain_start(struct lode_oss *oss, struct lode_req *req, const void *fixed,
		       size_t fixed_len, const struct lode_wire_chain *ch, struct chain_op **out)
{
	const struct lode_wire_chain_hop *hops = lode_chain_hops(ch);
	uint32_t me = atomic_load(&oss->target_id);
	struct lode_wire_chain next = {0};
	uint64_t dlen = lode_req_hdr(req)->data_len;
	struct lode_rpc_conn *conn;
	struct chain_op *op;
	char *b;
	int rc;

	if (ch->self_target && me && ch->self_target != me)
		return -ESTALE; /* a stale address: never write into the wrong target */
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	op->oss = oss;
	op->req = req;
	op->hops = ch->count;
	atomic_init(&op->pending, ch->count ? 2 : 1);
	*out = op;
	if (!ch->count)
		return 0; /* the tail */

	/* the same request, one hop shorter, with less time: it must fail over to us
	 * before our own caller gives up on us */
	op->next = &hops[0];
	next.self_target = hops[0].target_id;
	next.count = (uint16_t)(ch->count - 1);
	next.timeout_ms = fwd_timeout(ch->timeout_ms);
	b = (char *)op->body;
	memcpy(b, fixed, fixed_len);
	memcpy(b + fixed_len, &next, sizeof(next));
	memcpy(b + fixed_len + sizeof(next), &hops[1], next.count * sizeof(hops[0]));
	op->call.opcode = lode_req_hdr(req)->opcode;
	op->call.body = op->body;
	op->call.body_len = (uint32_t)(fixed_len + lode_chain_size(next.count));
	if (dlen) {
		op->iov.iov_base = (void *)lode_req_data(req);
		op->iov.iov_len = dlen;
		op->call.data = &op->iov;
		op->call.data_iovcnt = 1;
	}
	op->call.reply_body = &op->down;
	op->call.reply_body_max = sizeof(op->down);
	op->call.timeout_ms = ch->timeout_ms;
	op->call.done = chain_fwd_done;
	op->call.cap = lode_req_cap(req); /* the next hop checks it too */
	if (!hop_known(oss, &hops[0])) {
		op->hop_refused = true;
		rc = -EACCES;
		hop_warn(&hops[0]);
		hops_stale(oss);
	} else {
		rc = fwd_conn(oss, hops[0].addr, &conn);
	}
	if (rc) {
		/* the forward failed before it started: only our own copy is pending */
		op->call.status = rc;
		if (!op->hop_refused) /* hop_warn said why */
			fwd_warn(op->next, rc);
		atomic_store(&op->pending, 1);
		return 0;
	}
	lode_rpc_submit(conn, &op->call);
	return 0;
}

/*
 * One row per opcode the OSS answers: the dispatch table. The message table
 * (proto/wire/msg.c) has decoded the request; a row answers it exactly once, from the
 * operation's completion or at once. io is the worker's I/O context (NULL if it could not
 * be made: the row answers -ENOMEM).
 */
typedef int (*oss_op)(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		      const struct lode_msg *msg);

static int op_hello(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		    const struct lode_msg *msg)
{
	struct lode_wire_hello_rep rep = {0};

	(void)io, (void)msg;
	rep.cluster_id = atomic_load(&oss->cluster_id);
	rep.server_role = LODE_ROLE_OSS;
	rep.target_id = atomic_load(&oss->target_id);
	lode_req_reply(req, 0, &rep, sizeof(rep), NULL, 0, NULL);
	return 0;
}

static int op_ping(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		   const struct lode_msg *msg)
{
	(void)oss, (void)io, (void)msg;
	lode_req_reply(req, 0, NULL, 0, NULL, 0, NULL);
	return 0;
}

static int write_start(struct lode_oss *oss, struct lode_objstore_io *io, struct obj_hold *h)
{
	const struct lode_msg *msg = h->msg;
	const struct lode_wire_obj_write_req *wr = msg->fixed;
	struct lode_req *req = h->req;
	size_t dlen = (size_t)lode_req_hdr(req)->data_len;
	unsigned flags = wr->flags & (LODE_OBJ_F_SYNC | LODE_OBJ_F_MERGE | LODE_OBJ_F_LAZY);
	struct chain_op *op;
	int err;

	if (!io)
		return -ENOMEM;
	if (!msg->chain) {
		lode_objstore_write(io, &wr->obj, wr->offset, lode_req_data(req), dlen, msg->sums,
				    flags, hold_write_done, h);
		return 0;
	}
	if (!worker_fwd)
		return -ENOMEM;
	err = chain_start(oss, req, wr, sizeof(*wr) + wr->nchunks * sizeof(uint64_t), msg->chain,
			  &op);
	if (err)
		return err;
	/* the chunks stay held until every copy answered: overlapping writes reach the copies
	 * in the order this head applied them */
	op->hold = h;
	lode_objstore_write(io, &wr->obj, wr->offset, lode_req_data(req), dlen, msg->sums, flags,
			    chain_local_done, op);
	return 0;
}

static int op_write(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		    const struct lode_msg *msg)
{
	const struct lode_wire_obj_write_req *wr = msg->fixed;
	uint64_t end = wr->offset + lode_req_hdr(req)->data_len;

	if (!io)
		return -ENOMEM;
	return hold_run(oss, io, req, msg, &wr->obj, wr->offset / LODE_CHUNK_SIZE,
			(end + LODE_CHUNK_SIZE - 1) / LODE_CHUNK_SIZE, write_start);
}

static void hold_read_done(void *arg, int status, struct lode_obj_result *res)
{
	struct obj_hold *h = arg;
	struct lode_req *req = h->req;

	/* the bytes are a copy in memory: no write can change them now */
	hold_release(h);
	read_done(req, status, res);
}

static int read_held_start(struct lode_oss *oss, struct lode_objstore_io *io, struct obj_hold *h)
{
	const struct lode_wire_obj_read_req *rr = h->msg->fixed;

	(void)oss;
	if (!io)
		return -ENOMEM;
	lode_objstore_read(io, &rr->obj, rr->offset, rr->length, hold_read_done, h);
	return 0;
}

/* A read goes from the page cache to the socket, unless it asks for bytes and checksums
 * of one moment (LODE_OBJ_READ_HELD): then it holds its chunks against writes, as they hold
 * them against each other, while it reads a copy. */
static int op_read(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		   const struct lode_msg *msg)
{
	const struct lode_wire_obj_read_req *rr = msg->fixed;

	if (!io)
		return -ENOMEM;
	if (rr->flags & LODE_OBJ_READ_HELD)
		return hold_run(oss, io, req, msg, &rr->obj, rr->offset / LODE_CHUNK_SIZE,
				(rr->offset + rr->length + LODE_CHUNK_SIZE - 1) / LODE_CHUNK_SIZE,
				read_held_start);
	lode_objstore_read_fd(io, &rr->obj, rr->offset, rr->length, read_done, req);
	return 0;
}

static int truncate_start(struct lode_oss *oss, struct lode_objstore_io *io, struct obj_hold *h)
{
	const struct lode_wire_obj_truncate_req *tr = h->msg->fixed;

	(void)oss;
	if (!io)
		return -ENOMEM;
	lode_objstore_truncate(io, &tr->obj, tr->size, hold_obj_done, h);
	return 0;
}

/* A truncate rewrites the checksum of the chunk its new end falls in, and drops (or grows
 * into) every chunk after: it holds them all against writes. */
static int op_truncate(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		       const struct lode_msg *msg)
{
	const struct lode_wire_obj_truncate_req *tr = msg->fixed;

	if (!io)
		return -ENOMEM;
	return hold_run(oss, io, req, msg, &tr->obj, tr->size / LODE_CHUNK_SIZE, UINT64_MAX,
			truncate_start);
}

static int op_fsync(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		    const struct lode_msg *msg)
{
	const struct lode_wire_objid *id = msg->fixed;
	struct chain_op *op;
	int err;

	if (!io || (msg->chain && !worker_fwd))
		return -ENOMEM;
	if (!msg->chain) {
		lode_objstore_fsync(io, id, obj_done, req);
		return 0;
	}
	err = chain_start(oss, req, id, sizeof(*id), msg->chain, &op);
	if (err)
		return err;
	lode_objstore_fsync(io, id, chain_local_done, op);
	return 0;
}

static int op_allocate(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		       const struct lode_msg *msg)
{
	const struct lode_wire_obj_allocate_req *ar = msg->fixed;
	struct lode_obj_result res = {0};

	(void)oss;
	if (!io)
		return -ENOMEM;
	reply_obj(req, lode_objstore_allocate(io, &ar->obj, ar->offset, ar->length, &res), &res);
	return 0;
}

static int op_remove(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		     const struct lode_msg *msg)
{
	struct lode_obj_result res = {0};

	reply_obj(req, lode_objstore_remove(oss->st, io, msg->fixed, &res), &res);
	return 0;
}

static int op_stat(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		   const struct lode_msg *msg)
{
	struct lode_obj_result res = {0};

	(void)io;
	reply_obj(req, lode_objstore_stat(oss->st, msg->fixed, &res), &res);
	return 0;
}

static int op_list(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		   const struct lode_msg *msg)
{
	(void)io;
	do_list(oss, req, msg->fixed);
	return 0;
}

/* OBJ_SCRUB: starts or cancels this target's scrub (oss/scrub.c) and answers its status. */
static int op_scrub(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
		    const struct lode_msg *msg)
{
	const struct lode_wire_scrub_req *q = msg->fixed;
	struct lode_wire_scrub_status st;
	int rc = 0;

	(void)io;
	if (!oss->scrub)
		return -EOPNOTSUPP;
	if (q->action == LODE_SCRUB_START)
		rc = lode_oss_scrub_start(oss->scrub, q->rate);
	else
		lode_oss_scrub_cancel(oss->scrub);
	if (rc)
		return rc;
	lode_oss_scrub_status(oss->scrub, &st, NULL, 0);
	lode_req_reply(req, 0, &st, sizeof(st), NULL, 0, NULL);
	return 0;
}

static int op_scrub_status(struct lode_oss *oss, struct lode_objstore_io *io, struct lode_req *req,
			   const struct lode_msg *msg)
{
	const struct lode_wire_scrub_status_req *q = msg->fixed;
	struct lode_wire_scrub_status st;
	struct lode_wire_scrub_bad *bad = NULL;

	(void)io;
	if (!oss->scrub)
		return -EOPNOTSUPP;
	if (q->max) {
		bad = malloc((size_t)q->max * sizeof(*bad));
		if (!bad)
			return -ENOMEM;
	}
	lode_oss_scrub_status(oss->scrub, &st, bad, q->max);
	if (!st.count) {
		free(bad);
		lode_req_reply(req, 0, &st, sizeof(st), NULL, 0, NULL);
		return 0;
	}
	lode_req_reply(req, 0, &st, sizeof(st), bad, (size_t)st.count * sizeof(*bad), free);
	return 0;
}

static const oss_op oss_ops[LODE_OP_MAX_] = {
    [LODE_OP_HELLO] = op_hello,		  [LODE_OP_PING] = op_ping,
    [LODE_OP_OBJ_WRITE] = op_write,	  [LODE_OP_OBJ_READ] = op_read,
    [LODE_OP_OBJ_TRUNCATE] = op_truncate, [LODE_OP_OBJ_FSYNC] = op_fsync,
    [LODE_OP_OBJ_REMOVE] = op_remove,	  [LODE_OP_OBJ_STAT] = op_stat,
    [LODE_OP_OBJ_LIST] = op_list,	  [LODE_OP_OBJ_ALLOCATE] = op_allocate,
    [LODE_OP_OBJ_SCRUB] = op_scrub,	  [LODE_OP_OBJ_SCRUB_STATUS] = op_scrub_status,
};

/* Logs a refused capability at most once a second. */
static void cap_warn(const struct lode_wire_objid *id, uint8_t opcode, int err)
{
	static _Atomic uint64_t last_ms;
	uint64_t now = lode_now_ms(), prev = atomic_load(&last_ms);

	if (now - prev >= 1000 && atomic_compare_exchange_strong(&last_ms, &prev, now))
		LODE_WARN("%s of object %llx.%llx.%u refused: %s", lode_op_name(opcode),
			  (unsigned long long)id->ino, (unsigned long long)id->generation,
			  id->stripe,
			  err == -EKEYEXPIRED ? "its capability expired"
			  : err == -EACCES    ? "no valid capability for it"
					      : strerror(-err));
}

/*
 * May this request touch its object? A client must present a capability (proto/net/cap.h)
 * for the object's file and generation with the rights the operation needs: read for
 * OBJ_READ and OBJ_STAT, write for the rest. Targets (forwarding a chain) and admins
 * (fsck, repair) may do without, since their keys already grant that much at the MDS; a
 * capability they do present is checked all the same. A capability's MAC is checked once
 * per connection (the server remembers a few found genuine). Without keys (--insecure),
 * nothing is checked.
 */
static int cap_allows(struct lode_oss *oss, struct lode_req *req, uint8_t opcode,
		      const struct lode_msg *msg)
{
	const struct lode_wire_cap *c = lode_req_cap(req);
	const struct lode_wire_objid *id = msg->fixed; /* every such body begins with it */
	uint32_t rights = opcode == LODE_OP_OBJ_READ || opcode == LODE_OP_OBJ_STAT ? LODE_CAP_READ
										   : LODE_CAP_WRITE;
	struct lode_wire_cap cap;
	int rc;

	if (!oss->keys || !oss->keys->cluster || !lode_op_takes_cap(opcode))
		return 0;
	if (!c) {
		rc = lode_req_role(req) == LODE_ROLE_CLIENT ? -EACCES : 0;
	} else if (lode_req_cap_known(req)) {
		/* its MAC was checked on this connection already: the rest can change with the
		 * object and the clock */
		memcpy(&cap, c, sizeof(cap)); /* it ends a body: maybe not aligned */
		rc =
		    lode_cap_check_fields(&cap, id->ino, id->generation, rights, lode_cap_now_ms());
	} else {
		memcpy(&cap, c, sizeof(cap));
		rc = lode_cap_check(oss->keys->cap_key, &cap, id->ino, id->generation, rights,
				    lode_cap_now_ms());
		if (!rc)
			lode_req_cap_remember(req);
	}
	if (rc)
		cap_warn(id, opcode, rc);
	return rc;
}

static void on_request(void *ctx, struct lode_req *req)
{
	const struct lode_wire_hdr *hdr = lode_req_hdr(req);
	struct lode_msg msg;
	int err;

	err = lode_msg_decode(hdr->opcode, lode_req_body(req), hdr->body_len, hdr->data_len, &msg);
	if (!err && !oss_ops[hdr->opcode])
		err = -EOPNOTSUPP; /* a metadata request sent to the wrong server */
	if (!err)
		err = cap_allows(ctx, req, hdr->opcode, &msg);
	if (!err)
		err = oss_ops[hdr->opcode](ctx, worker_io, req, &msg);
	if (err)
		lode_req_reply_err(req, err);
}

const struct lode_server_ops lode_oss_server_ops = {
    .on_request = on_request,
    .on_conn_error = lode_log_conn_error,
    .check_header = lode_log_check_header,
    .on_auth_fail = lode_log_auth_fail,
    .on_worker_start = on_worker_start,
};

void lode_oss_metrics_collect(void *arg, struct lode_metrics_buf *b)
{
	struct lode_oss *oss = arg;
	uint64_t rd = 0, direct = 0, wr = 0, lazy = 0, inl = 0, inl_ns = 0;

	for (unsigned i = 0; i < LODE_OSS_WORKERS_MAX; i++) {
		rd += __atomic_load_n(&oss->stats[i].read_bytes, __ATOMIC_RELAXED);
		direct += __atomic_load_n(&oss->stats[i].direct_bytes, __ATOMIC_RELAXED);
		wr += __atomic_load_n(&oss->stats[i].written_bytes, __ATOMIC_RELAXED);
		lazy += __atomic_load_n(&oss->stats[i].lazy_bytes, __ATOMIC_RELAXED);
		inl += __atomic_load_n(&oss->stats[i].inline_bytes, __ATOMIC_RELAXED);
		inl_ns += __atomic_load_n(&oss->stats[i].inline_ns, __ATOMIC_RELAXED);
	}
	lode_metrics_family(b, "lode_oss_read_bytes_total", "counter",
			    "Object data read and answered (OBJ_READ), in bytes.");
	lode_metrics_sample_u64(b, "lode_oss_read_bytes_total", NULL, rd);
	lode_metrics_family(b, "lode_oss_read_direct_bytes_total", "counter",
			    "Of the object data read, what was read from the disk past the page "
			    "cache (large ranges nobody had cached or read lately), in bytes.");
	lode_metrics_sample_u64(b, "lode_oss_read_direct_bytes_total", NULL, direct);
	lode_metrics_family(b, "lode_oss_written_bytes_total", "counter",
			    "Object data stored on this target (OBJ_WRITE, chained or not), in "
			    "bytes.");
	lode_metrics_sample_u64(b, "lode_oss_written_bytes_total", NULL, wr);
	lode_metrics_family(b, "lode_oss_lazy_written_bytes_total", "counter",
			    "Of the object data stored, what data=lazy clients wrote, whose "
			    "writeback is left to the kernel, in bytes.");
	lode_metrics_sample_u64(b, "lode_oss_lazy_written_bytes_total", NULL, lazy);
	lode_metrics_family(b, "lode_oss_inline_written_bytes_total", "counter",
			    "Of the object data stored, what a worker wrote on its own thread (a "
			    "small write that found its loop idle), in bytes.");
	lode_metrics_sample_u64(b, "lode_oss_inline_written_bytes_total", NULL, inl);
	lode_metrics_family(b, "lode_oss_inline_write_seconds_total", "counter",
			    "The time those writes held their worker's thread: the kernel "
			    "throttling dirty pages shows here.");
	lode_metrics_sample(b, "lode_oss_inline_write_seconds_total", NULL, (double)inl_ns / 1e9);
	lode_metrics_family(b, "lode_oss_chain_hops_refused_total", "counter",
			    "Chained requests not passed on: their next hop was not in the MDS's "
			    "target table as this OSS last fetched it.");
	lode_metrics_sample_u64(b, "lode_oss_chain_hops_refused_total", NULL,
				atomic_load_explicit(&oss->hops_refused, memory_order_relaxed));
	lode_metrics_family(b, "lode_oss_target_table_refetches_total", "counter",
			    "Fetches of the MDS's target table made at once, between heartbeats, "
			    "because a chained request named a hop not in it.");
	lode_metrics_sample_u64(b, "lode_oss_target_table_refetches_total", NULL,
				atomic_load_explicit(&oss->hops_refetched, memory_order_relaxed));
}
