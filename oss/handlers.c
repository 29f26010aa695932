/* SPDX-License-Identifier: MIT */
/*
 * lode-oss request handlers. Each request is decoded with proto/codec.h (a malformed one
 * is answered with the decoder's negative errno), run against the object store on the
 * worker's own loop, and answered exactly once from the operation's completion.
 *
 * REMOVE, STAT and LIST are synchronous filesystem calls on the worker thread: they do no
 * data I/O, and LIST is an admin operation (see lode_objstore_list).
 */
#include "handlers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

/* The worker's I/O context; set once by on_worker_start on that thread. */
static __thread struct lode_objstore_io *worker_io;

void lode_oss_init(struct lode_oss *oss, struct lode_objstore *st)
{
	memset(oss, 0, sizeof(*oss));
	oss->st = st;
}

void lode_oss_fini(struct lode_oss *oss)
{
	for (unsigned i = 0; i < LODE_OSS_WORKERS_MAX; i++) {
		lode_objstore_io_destroy(oss->ios[i]);
		oss->ios[i] = NULL;
	}
}

static void on_worker_start(void *ctx, unsigned worker, struct lode_loop *loop)
{
	struct lode_oss *oss = ctx;
	struct lode_objstore_io *io;

	if (worker >= LODE_OSS_WORKERS_MAX || lode_objstore_io_create(oss->st, loop, 0, &io))
		return; /* this worker answers data requests with -ENOMEM */
	oss->ios[worker] = io;
	worker_io = io;
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

/* The offset an OBJ_READ asked for (its body was checked when it arrived). */
static uint64_t rr_offset(const struct lode_req *req)
{
	return ((const struct lode_wire_obj_read_req *)lode_req_body(req))->offset;
}

static void read_done(void *arg, int status, struct lode_obj_result *res)
{
	/* rep + one sum per chunk of the largest read: well under LODE_BODY_MAX */
	uint64_t body[(sizeof(struct lode_wire_obj_read_rep) +
		       8 * (LODE_DATA_MAX / LODE_CHUNK_SIZE)) / 8];
	struct lode_wire_obj_read_rep *rep = (struct lode_wire_obj_read_rep *)body;
	struct lode_req *req = arg;
	size_t body_len;

	_Static_assert(sizeof(body) <= LODE_BODY_MAX, "read reply body");
	if (status) {
		lode_req_reply_err(req, status);
		return;
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
		lode_req_reply_file(req, body, body_len, res->fd, rr_offset(req), (uint32_t)res->data_len,
				    lode_objstore_fd_release, res->fd_ref);
		return;
	}
	if (!res->data_len) {
		free(res->data);
		lode_req_reply(req, 0, body, body_len, NULL, 0, NULL);
		return;
	}
	lode_req_reply(req, 0, body, body_len, res->data, res->data_len, free);
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

static void on_request(void *ctx, struct lode_req *req)
{
	struct lode_oss *oss = ctx;
	const struct lode_wire_hdr *hdr = lode_req_hdr(req);
	const void *body = lode_req_body(req);
	uint32_t blen = hdr->body_len;
	uint64_t dlen = hdr->data_len;
	struct lode_objstore_io *io = worker_io;
	struct lode_obj_result res = {0};
	int err;

	switch (hdr->opcode) {
	case LODE_OP_HELLO: {
		const struct lode_wire_hello_req *hr;
		struct lode_wire_hello_rep rep = {0};

		err = lode_dec_hello(body, blen, dlen, &hr);
		if (err)
			break;
		rep.cluster_id = atomic_load(&oss->cluster_id);
		rep.server_role = LODE_ROLE_OSS;
		rep.target_id = atomic_load(&oss->target_id);
		lode_req_reply(req, 0, &rep, sizeof(rep), NULL, 0, NULL);
		return;
	}
	case LODE_OP_PING:
		err = blen || dlen ? -EPROTO : 0;
		if (err)
			break;
		lode_req_reply(req, 0, NULL, 0, NULL, 0, NULL);
		return;
	case LODE_OP_OBJ_WRITE: {
		const struct lode_wire_obj_write_req *wr;
		const uint64_t *sums;

		err = lode_dec_obj_write(body, blen, dlen, &wr, &sums);
		if (err)
			break;
		if (!io) {
			err = -ENOMEM;
			break;
		}
		lode_objstore_write(io, &wr->obj, wr->offset, lode_req_data(req), (size_t)dlen,
				    sums, wr->flags, obj_done, req);
		return;
	}
	case LODE_OP_OBJ_READ: {
		const struct lode_wire_obj_read_req *rr;

		err = lode_dec_obj_read(body, blen, dlen, &rr);
		if (err)
			break;
		if (!io) {
			err = -ENOMEM;
			break;
		}
		lode_objstore_read_fd(io, &rr->obj, rr->offset, rr->length, read_done, req);
		return;
	}
	case LODE_OP_OBJ_TRUNCATE: {
		const struct lode_wire_obj_truncate_req *tr;

		err = lode_dec_obj_truncate(body, blen, dlen, &tr);
		if (err)
			break;
		if (!io) {
			err = -ENOMEM;
			break;
		}
		lode_objstore_truncate(io, &tr->obj, tr->size, obj_done, req);
		return;
	}
	case LODE_OP_OBJ_FSYNC: {
		const struct lode_wire_objid *id;

		err = lode_dec_objid(body, blen, dlen, &id);
		if (err)
			break;
		if (!io) {
			err = -ENOMEM;
			break;
		}
		lode_objstore_fsync(io, id, obj_done, req);
		return;
	}
	case LODE_OP_OBJ_REMOVE: {
		const struct lode_wire_objid *id;

		err = lode_dec_objid(body, blen, dlen, &id);
		if (err)
			break;
		err = lode_objstore_remove(oss->st, io, id, &res);
		reply_obj(req, err, &res);
		return;
	}
	case LODE_OP_OBJ_STAT: {
		const struct lode_wire_objid *id;

		err = lode_dec_objid(body, blen, dlen, &id);
		if (err)
			break;
		err = lode_objstore_stat(oss->st, id, &res);
		reply_obj(req, err, &res);
		return;
	}
	case LODE_OP_OBJ_LIST: {
		const struct lode_wire_obj_list_req *lr;

		err = lode_dec_obj_list(body, blen, dlen, &lr);
		if (err)
			break;
		do_list(oss, req, lr);
		return;
	}
	default:
		err = -EOPNOTSUPP; /* a metadata request sent to the wrong server */
		break;
	}
	lode_req_reply_err(req, err);
}

const struct lode_server_ops lode_oss_server_ops = {
	.on_request = on_request,
	.on_worker_start = on_worker_start,
};
