/* SPDX-License-Identifier: MIT */
/*
 * Request dispatch of lode-mds.
 *
 * Reads run on the worker thread that received them, each in its own read-only
 * transaction (LMDB readers never block the writer nor each other). Mutations become a
 * struct wreq queued to the writer thread; the request's body and data stay valid until
 * the reply, so a wreq points into them instead of copying. Leases and handles are only
 * touched in the writer's run()/done() callbacks, i.e. on the writer thread.
 *
 * Records in reply data (READDIR, TARGET_LIST) are packed back to back: the fixed wire
 * struct, then the name bytes, then zero padding up to a multiple of 8 bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "handlers.h"
#include "lease.h"
#include "log.h"
#include "loop.h"
#include "namespace.h"
#include "placement.h"
#include "server.h"
#include "store.h"
#include "writer.h"

/* ---- setup ---- */

int lode_mds_init(struct lode_mds *m, const struct lode_mds_opts *opts, char *why, size_t why_len)
{
	struct lode_store_opts so = {.dir = opts->dir, .map_size = opts->map_size};
	struct lode_txn t;
	int rc;

	memset(m, 0, sizeof(*m));
	m->orphan_grace_ns =
	    opts->orphan_grace_ns < 0 ? LODE_NS_ORPHAN_GRACE_NS : opts->orphan_grace_ns;
	rc = lode_store_open(&so, &m->st, why, why_len);
	if (rc)
		return rc;
	m->cluster_id = lode_store_cluster_id(m->st);
	rc = lode_placement_create(&m->pl, opts->up_ms);
	if (rc)
		goto close_store;
	rc = lode_store_read_begin(m->st, &t);
	if (!rc) {
		rc = lode_placement_load(m->pl, &t);
		lode_store_abort(&t);
	}
	if (rc) {
		snprintf(why, why_len, "cannot load storage targets: %s", strerror(-rc));
		goto destroy_pl;
	}
	rc = lode_leases_create(&m->leases, opts->lease_ms);
	if (rc)
		goto destroy_pl;
	rc = lode_writer_start(&m->writer, m->st);
	if (rc) {
		snprintf(why, why_len, "cannot start the writer thread: %s", strerror(-rc));
		goto destroy_leases;
	}
	return 0;

destroy_leases:
	lode_leases_destroy(m->leases);
destroy_pl:
	lode_placement_destroy(m->pl);
close_store:
	lode_store_close(m->st);
	memset(m, 0, sizeof(*m));
	return rc;
}

void lode_mds_fini(struct lode_mds *m)
{
	lode_writer_stop(m->writer);
	lode_leases_destroy(m->leases);
	lode_placement_destroy(m->pl);
	lode_store_close(m->st);
	memset(m, 0, sizeof(*m));
}

/* ---- mutations, on the writer thread ---- */

struct wreq {
	struct lode_wop op;
	struct lode_mds *m;
	struct lode_req *req;
	uint8_t opcode;
	const void *fixed; /* the decoded fixed struct, inside the request body */
	struct lode_name n1, n2;
	uint32_t n_objids;
	uint64_t handle; /* a write handle this op took (released again if the op fails) */
	uint32_t target_id;
	union {
		struct lode_wire_attr attr;
		struct lode_wire_open_rep open;
		struct lode_wire_hello_rep hello;
		struct lode_wire_layout_rep layout;
	} rep;
	size_t rep_len;
};

/* OPEN/CREATE for writing: take the lease as the op's last step, so -EBUSY rolls back
 * everything the op did (a truncation included). */
static int take_lease(struct wreq *w, uint32_t flags)
{
	struct lode_wire_open_rep *o = &w->rep.open;
	int rc;

	w->rep_len = sizeof(*o);
	o->reserved = 0;
	if (!(flags & LODE_OPEN_WRITE)) {
		o->handle = lode_lease_read_handle();
		o->lease_ms = 0;
		return 0;
	}
	rc = lode_lease_acquire(w->m->leases, o->attr.ino, lode_now_ms(), &w->handle);
	if (rc)
		return rc;
	o->handle = w->handle;
	o->lease_ms = lode_leases_ms(w->m->leases);
	return 0;
}

/* Which copies of the opened file miss data: readers skip them, writers leave them. */
static int open_degraded(struct lode_txn *t, struct lode_wire_open_rep *o)
{
	struct lode_wire_layout_rep lr;
	int rc = lode_ns_layout_get(t, o->attr.ino, &lr);

	if (!rc)
		o->degraded = lr.degraded;
	return rc;
}

static int run_commit(struct wreq *w, struct lode_txn *t, const struct lode_wire_commit_req *r)
{
	struct lode_leases *ls = w->m->leases;
	int rc;

	w->rep_len = sizeof(w->rep.attr);
	if (w->opcode == LODE_OP_COMMIT || r->commit) {
		rc = lode_lease_renew(ls, r->handle, r->ino, lode_now_ms());
		if (rc)
			return rc;
	} else {
		/* CLOSE without commit: the handle just has to exist */
		rc = lode_lease_renew(ls, r->handle, r->ino, lode_now_ms());
		if (rc == -EBADF)
			return rc;
	}
	if (r->commit)
		return lode_ns_commit(t, r->ino, r->size, r->mtime_ns, &w->rep.attr);
	return lode_ns_getattr(t, r->ino, &w->rep.attr);
}

static int wreq_run(struct lode_wop *op, struct lode_txn *t)
{
	struct wreq *w = lode_container_of(op, struct wreq, op);
	struct lode_mds *m = w->m;
	int rc;

	switch (w->opcode) {
	case LODE_OP_SETATTR:
		w->rep_len = sizeof(w->rep.attr);
		return lode_ns_setattr(t, w->fixed, &w->rep.attr);
	case LODE_OP_CREATE: {
		const struct lode_wire_create_req *r = w->fixed;
		struct lode_ns_create a = {
		    .parent = r->parent,
		    .cred = r->cred,
		    .name = w->n1.ptr,
		    .name_len = w->n1.len,
		    .mode = r->mode,
		    .flags = r->flags,
		    .layout = r->has_layout ? &r->layout : NULL,
		    .has_targets = r->has_layout && r->has_targets,
		    .pl = m->pl,
		    .now_ms = lode_now_ms(),
		};
		int created;

		rc = lode_ns_create(t, &a, &w->rep.open.attr, &w->rep.open.layout, &created);
		if (!rc)
			rc = open_degraded(t, &w->rep.open);
		return rc ? rc : take_lease(w, r->flags);
	}
	case LODE_OP_OPEN: {
		const struct lode_wire_open_req *r = w->fixed;

		rc = lode_ns_open(t, &r->cred, r->ino, r->flags, &w->rep.open.attr,
				  &w->rep.open.layout);
		if (!rc)
			rc = open_degraded(t, &w->rep.open);
		return rc ? rc : take_lease(w, r->flags);
	}
	case LODE_OP_COMMIT:
	case LODE_OP_CLOSE:
		return run_commit(w, t, w->fixed);
	case LODE_OP_MKDIR: {
		const struct lode_wire_mkdir_req *r = w->fixed;

		w->rep_len = sizeof(w->rep.attr);
		return lode_ns_mkdir(t, &r->cred, r->parent, w->n1.ptr, w->n1.len, r->mode,
				     &w->rep.attr);
	}
	case LODE_OP_UNLINK:
	case LODE_OP_RMDIR: {
		const struct lode_wire_lookup_req *r = w->fixed;

		if (w->opcode == LODE_OP_UNLINK)
			return lode_ns_unlink(t, &r->cred, r->parent, w->n1.ptr, w->n1.len);
		return lode_ns_rmdir(t, &r->cred, r->parent, w->n1.ptr, w->n1.len);
	}
	case LODE_OP_RENAME: {
		const struct lode_wire_rename_req *r = w->fixed;

		return lode_ns_rename(t, &r->cred, r->old_parent, w->n1.ptr, w->n1.len,
				      r->new_parent, w->n2.ptr, w->n2.len, r->flags);
	}
	case LODE_OP_LINK: {
		const struct lode_wire_link_req *r = w->fixed;

		w->rep_len = sizeof(w->rep.attr);
		return lode_ns_link(t, &r->cred, r->ino, r->new_parent, w->n1.ptr, w->n1.len,
				    &w->rep.attr);
	}
	case LODE_OP_SYMLINK: {
		const struct lode_wire_symlink_req *r = w->fixed;

		w->rep_len = sizeof(w->rep.attr);
		return lode_ns_symlink(t, &r->cred, r->parent, w->n1.ptr, w->n1.len, w->n2.ptr,
				       w->n2.len, &w->rep.attr);
	}
	case LODE_OP_SETXATTR: {
		const struct lode_wire_xattr_req *r = w->fixed;

		return lode_ns_setxattr(t, &r->cred, r->ino, w->n1.ptr, w->n1.len,
					lode_req_data(w->req), lode_req_hdr(w->req)->data_len,
					r->flags);
	}
	case LODE_OP_REMOVEXATTR: {
		const struct lode_wire_xattr_req *r = w->fixed;

		return lode_ns_removexattr(t, &r->cred, r->ino, w->n1.ptr, w->n1.len);
	}
	case LODE_OP_TARGET_REGISTER: {
		const struct lode_wire_target_register_req *r = w->fixed;

		w->rep_len = sizeof(w->rep.hello);
		return lode_placement_register_txn(t, r->uuid, w->n1.ptr, w->n1.len, r->bytes_total,
						   r->bytes_free, &w->target_id);
	}
	case LODE_OP_ORPHAN_DONE: {
		const struct lode_wire_orphan_req *r = w->fixed;

		return lode_ns_orphan_done(t, r->target_id, lode_req_data(w->req), w->n_objids);
	}
	case LODE_OP_REPORT_COPY: {
		const struct lode_wire_report_req *r = w->fixed;

		rc = lode_ns_report_copy(t, r->ino, r->generation, r->stripe, r->target_id);
		if (!rc)
			LODE_WARN("inode %llu stripe %u: copy on target %u is degraded (%s)",
				  (unsigned long long)r->ino, r->stripe, r->target_id,
				  r->kind == LODE_REPORT_BAD_DATA ? "bad data" : "write failed");
		return rc;
	}
	case LODE_OP_LAYOUT_SET_COPY: {
		const struct lode_wire_set_copy_req *r = w->fixed;

		/* only the holder of the write lease may move a copy: no write can race it */
		rc = lode_lease_renew(m->leases, r->handle, r->ino, lode_now_ms());
		if (rc)
			return rc;
		w->rep_len = sizeof(w->rep.layout);
		rc = lode_ns_set_copy(t, m->pl, r->ino, r->index, r->old_target, r->new_target,
				      &w->rep.layout);
		if (!rc)
			LODE_INFO("inode %llu: copy %u moved from target %u to %u, complete",
				  (unsigned long long)r->ino, r->index, r->old_target,
				  r->new_target);
		return rc;
	}
	}
	return -EOPNOTSUPP;
}

/* After the commit: state that must follow durability, then the reply. */
static void wreq_done(struct lode_wop *op, int status)
{
	struct wreq *w = lode_container_of(op, struct wreq, op);
	struct lode_mds *m = w->m;

	switch (w->opcode) {
	case LODE_OP_CREATE:
	case LODE_OP_OPEN:
		if (status && w->handle)
			lode_lease_release(m->leases, w->handle, w->rep.open.attr.ino);
		break;
	case LODE_OP_CLOSE: {
		const struct lode_wire_commit_req *r = w->fixed;

		/* a close ends the handle even when its commit failed */
		if (status != -EBADF && status != -ESHUTDOWN)
			lode_lease_release(m->leases, r->handle, r->ino);
		break;
	}
	case LODE_OP_TARGET_REGISTER:
		if (!status) {
			const struct lode_wire_target_register_req *r = w->fixed;

			status =
			    lode_placement_update(m->pl, w->target_id, w->n1.ptr, w->n1.len,
						  r->bytes_total, r->bytes_free, lode_now_ms());
			w->rep.hello.cluster_id = m->cluster_id;
			w->rep.hello.server_role = 1;
			w->rep.hello.target_id = w->target_id;
			if (!status)
				LODE_INFO("target %u registered at %.*s", w->target_id,
					  (int)w->n1.len, w->n1.ptr);
		}
		break;
	}
	if (status)
		lode_req_reply_err(w->req, status);
	else
		lode_req_reply(w->req, 0, &w->rep, w->rep_len, NULL, 0, NULL);
	free(w);
}

static void submit(struct lode_mds *m, struct lode_req *req, uint8_t opcode, const void *fixed,
		   const struct lode_name *n1, const struct lode_name *n2, uint32_t n_objids)
{
	struct wreq *w = calloc(1, sizeof(*w));

	if (!w) {
		lode_req_reply_err(req, -ENOMEM);
		return;
	}
	w->op.run = wreq_run;
	w->op.done = wreq_done;
	w->m = m;
	w->req = req;
	w->opcode = opcode;
	w->fixed = fixed;
	if (n1)
		w->n1 = *n1;
	if (n2)
		w->n2 = *n2;
	w->n_objids = n_objids;
	lode_writer_submit(m->writer, &w->op);
}

/* ---- reads, on the worker thread ---- */

static void reply_attr(struct lode_req *req, int rc, const struct lode_wire_attr *a)
{
	if (rc)
		lode_req_reply_err(req, rc);
	else
		lode_req_reply(req, 0, a, sizeof(*a), NULL, 0, NULL);
}

static void do_lookup(struct lode_mds *m, struct lode_req *req,
		      const struct lode_wire_lookup_req *r, const struct lode_name *n)
{
	struct lode_wire_attr a;
	struct lode_txn t;
	int rc = lode_store_read_begin(m->st, &t);

	if (!rc) {
		rc = lode_ns_lookup(&t, &r->cred, r->parent, n->ptr, n->len, &a);
		lode_store_abort(&t);
	}
	reply_attr(req, rc, &a);
}

static void do_getattr(struct lode_mds *m, struct lode_req *req, uint64_t ino)
{
	struct lode_wire_attr a;
	struct lode_txn t;
	int rc = lode_store_read_begin(m->st, &t);

	if (!rc) {
		rc = lode_ns_getattr(&t, ino, &a);
		lode_store_abort(&t);
	}
	reply_attr(req, rc, &a);
}

static void do_readlink(struct lode_mds *m, struct lode_req *req, uint64_t ino)
{
	char buf[LODE_SYMLINK_MAX];
	struct lode_txn t;
	size_t len = 0;
	int rc = lode_store_read_begin(m->st, &t);

	if (!rc) {
		rc = lode_ns_readlink(&t, ino, buf, sizeof(buf), &len);
		lode_store_abort(&t);
	}
	if (rc)
		lode_req_reply_err(req, rc);
	else
		lode_req_reply(req, 0, NULL, 0, buf, len, NULL);
}

static void do_readdir(struct lode_mds *m, struct lode_req *req,
		       const struct lode_wire_readdir_req *r)
{
	struct lode_wire_readdir_rep rep = {0};
	size_t cap, used = 0;
	struct lode_txn t;
	void *buf;
	int eof = 0;
	int rc;

	if (r->max_entries == 0 || r->max_entries > LODE_READDIR_MAX) {
		lode_req_reply_err(req, -EINVAL);
		return;
	}
	cap = (size_t)r->max_entries * ((r->flags & LODE_READDIR_ATTRS) ? LODE_NS_DIRENTPLUS_REC_MAX
									: LODE_NS_DIRENT_REC_MAX);
	buf = malloc(cap);
	if (!buf) {
		lode_req_reply_err(req, -ENOMEM);
		return;
	}
	rc = lode_store_read_begin(m->st, &t);
	if (!rc) {
		rc = ((r->flags & LODE_READDIR_ATTRS) ? lode_ns_readdirplus : lode_ns_readdir)(
		    &t, &r->cred, r->ino, r->cookie, r->max_entries, buf, cap, &used, &rep.count,
		    &eof);
		lode_store_abort(&t);
	}
	if (rc) {
		free(buf);
		lode_req_reply_err(req, rc);
		return;
	}
	rep.eof = (uint32_t)eof;
	lode_req_reply(req, 0, &rep, sizeof(rep), buf, used, free);
}

static void do_statfs(struct lode_mds *m, struct lode_req *req)
{
	struct lode_wire_statfs_rep s;
	struct lode_txn t;
	int rc = lode_store_read_begin(m->st, &t);

	if (!rc) {
		rc = lode_ns_statfs(&t, m->pl, lode_now_ms(), &s);
		lode_store_abort(&t);
	}
	if (rc)
		lode_req_reply_err(req, rc);
	else
		lode_req_reply(req, 0, &s, sizeof(s), NULL, 0, NULL);
}

static void do_getxattr(struct lode_mds *m, struct lode_req *req, uint8_t opcode,
			const struct lode_wire_xattr_req *r, const struct lode_name *n)
{
	size_t max = opcode == LODE_OP_GETXATTR ? LODE_XATTR_VALUE_MAX : LODE_DATA_MAX;
	size_t size = r->size < max ? r->size : max;
	struct lode_wire_xattr_rep rep = {0};
	struct lode_txn t;
	void *buf = NULL;
	size_t len = 0;
	int rc;

	if (size) {
		buf = malloc(size);
		if (!buf) {
			lode_req_reply_err(req, -ENOMEM);
			return;
		}
	}
	rc = lode_store_read_begin(m->st, &t);
	if (!rc) {
		if (opcode == LODE_OP_GETXATTR)
			rc =
			    lode_ns_getxattr(&t, &r->cred, r->ino, n->ptr, n->len, buf, size, &len);
		else
			rc = lode_ns_listxattr(&t, &r->cred, r->ino, buf, size, &len);
		lode_store_abort(&t);
	}
	if (rc) {
		free(buf);
		lode_req_reply_err(req, rc);
		return;
	}
	rep.size = (uint32_t)len;
	if (!size) {
		lode_req_reply(req, 0, &rep, sizeof(rep), NULL, 0, NULL);
		return;
	}
	lode_req_reply(req, 0, &rep, sizeof(rep), buf, len, free);
}

static void do_open_read(struct lode_mds *m, struct lode_req *req,
			 const struct lode_wire_open_req *r)
{
	struct lode_wire_open_rep rep = {0};
	struct lode_txn t;
	int rc = lode_store_read_begin(m->st, &t);

	if (!rc) {
		rc = lode_ns_open(&t, &r->cred, r->ino, r->flags, &rep.attr, &rep.layout);
		if (!rc)
			rc = open_degraded(&t, &rep);
		lode_store_abort(&t);
	}
	if (rc) {
		lode_req_reply_err(req, rc);
		return;
	}
	rep.handle = lode_lease_read_handle();
	lode_req_reply(req, 0, &rep, sizeof(rep), NULL, 0, NULL);
}

static void do_layout_get(struct lode_mds *m, struct lode_req *req, uint64_t ino)
{
	struct lode_wire_layout_rep rep;
	struct lode_txn t;
	int rc = lode_store_read_begin(m->st, &t);

	if (!rc) {
		rc = lode_ns_layout_get(&t, ino, &rep);
		lode_store_abort(&t);
	}
	if (rc)
		lode_req_reply_err(req, rc);
	else
		lode_req_reply(req, 0, &rep, sizeof(rep), NULL, 0, NULL);
}

/* CLOSE of a read handle: nothing to release, nothing to commit. */
static void do_close_read(struct lode_mds *m, struct lode_req *req,
			  const struct lode_wire_commit_req *r)
{
	struct lode_wire_attr a = {0};
	struct lode_txn t;
	int rc;

	if (r->commit) {
		lode_req_reply_err(req, -EBADF);
		return;
	}
	rc = lode_store_read_begin(m->st, &t);
	if (!rc) {
		rc = lode_ns_getattr(&t, r->ino, &a);
		lode_store_abort(&t);
	}
	if (rc == -ENOENT) {
		/* closing a file that was removed meanwhile is fine */
		memset(&a, 0, sizeof(a));
		rc = 0;
	}
	reply_attr(req, rc, &a);
}

static void do_target_list(struct lode_mds *m, struct lode_req *req)
{
	struct lode_wire_target_list_rep rep = {0};
	struct lode_placement_target *list;
	unsigned n;
	size_t pos = 0;
	char *buf;

	list = malloc(LODE_TARGETS_MAX * sizeof(*list));
	buf = malloc(LODE_TARGETS_MAX * LODE_NS_TARGET_REC(LODE_ADDR_MAX));
	if (!list || !buf) {
		free(list);
		free(buf);
		lode_req_reply_err(req, -ENOMEM);
		return;
	}
	lode_placement_list(m->pl, lode_now_ms(), list, LODE_TARGETS_MAX, &n);
	for (unsigned i = 0; i < n; i++) {
		struct lode_wire_target w = {
		    .target_id = list[i].target_id,
		    .state = list[i].state,
		    .bytes_total = list[i].bytes_total,
		    .bytes_free = list[i].bytes_free,
		    .objects = list[i].objects,
		    .last_seen_ms = list[i].last_seen_ms,
		    .addr_len = list[i].addr_len,
		};
		size_t rec = LODE_NS_TARGET_REC(w.addr_len);

		memset(buf + pos, 0, rec);
		memcpy(buf + pos, &w, sizeof(w));
		memcpy(buf + pos + sizeof(w), list[i].addr, w.addr_len);
		pos += rec;
	}
	free(list);
	rep.count = n;
	lode_req_reply(req, 0, &rep, sizeof(rep), buf, pos, free);
}

static void do_orphan_list(struct lode_mds *m, struct lode_req *req,
			   const struct lode_wire_orphan_req *r)
{
	struct lode_wire_orphan_list_rep rep = {0};
	uint32_t max = r->max < LODE_OBJLIST_MAX ? r->max : LODE_OBJLIST_MAX;
	struct lode_wire_objid *ids;
	struct lode_txn t;
	uint32_t n = 0;
	int rc;

	if (max == 0) {
		lode_req_reply_err(req, -EINVAL);
		return;
	}
	ids = calloc(max, sizeof(*ids));
	if (!ids) {
		lode_req_reply_err(req, -ENOMEM);
		return;
	}
	rc = lode_store_read_begin(m->st, &t);
	if (!rc) {
		rc = lode_ns_orphan_list(&t, r->target_id, lode_ns_now(), m->orphan_grace_ns, ids,
					 max, &n);
		lode_store_abort(&t);
	}
	if (rc) {
		free(ids);
		lode_req_reply_err(req, rc);
		return;
	}
	rep.count = n;
	lode_req_reply(req, 0, &rep, sizeof(rep), ids, n * sizeof(*ids), free);
}

/* ---- dispatch ---- */

void lode_mds_on_request(void *ctx, struct lode_req *req)
{
	struct lode_mds *m = ctx;
	const struct lode_wire_hdr *hdr = lode_req_hdr(req);
	const void *body = lode_req_body(req);
	uint32_t len = hdr->body_len;
	uint64_t dlen = hdr->data_len;
	uint8_t opc = hdr->opcode;
	struct lode_name n1 = {0}, n2 = {0};
	int rc;

	switch (opc) {
	case LODE_OP_HELLO: {
		const struct lode_wire_hello_req *r;
		struct lode_wire_hello_rep rep = {.cluster_id = m->cluster_id, .server_role = 1};

		rc = lode_dec_hello(body, len, dlen, &r);
		if (rc)
			break;
		lode_req_reply(req, 0, &rep, sizeof(rep), NULL, 0, NULL);
		return;
	}
	case LODE_OP_PING:
		if (len || dlen) {
			rc = -EPROTO;
			break;
		}
		lode_req_reply(req, 0, NULL, 0, NULL, 0, NULL);
		return;
	case LODE_OP_LOOKUP: {
		const struct lode_wire_lookup_req *r;

		rc = lode_dec_lookup(body, len, dlen, &r, &n1);
		if (rc)
			break;
		do_lookup(m, req, r, &n1);
		return;
	}
	case LODE_OP_GETATTR:
	case LODE_OP_READLINK: {
		const struct lode_wire_getattr_req *r;

		rc = lode_dec_getattr(body, len, dlen, &r);
		if (rc)
			break;
		if (opc == LODE_OP_GETATTR)
			do_getattr(m, req, r->ino);
		else
			do_readlink(m, req, r->ino);
		return;
	}
	case LODE_OP_SETATTR: {
		const struct lode_wire_setattr_req *r;

		rc = lode_dec_setattr(body, len, dlen, &r);
		if (rc)
			break;
		submit(m, req, opc, r, NULL, NULL, 0);
		return;
	}
	case LODE_OP_CREATE: {
		const struct lode_wire_create_req *r;

		rc = lode_dec_create(body, len, dlen, &r, &n1);
		if (rc)
			break;
		submit(m, req, opc, r, &n1, NULL, 0);
		return;
	}
	case LODE_OP_OPEN: {
		const struct lode_wire_open_req *r;

		rc = lode_dec_open(body, len, dlen, &r);
		if (rc)
			break;
		if (r->flags & (LODE_OPEN_WRITE | LODE_OPEN_TRUNC))
			submit(m, req, opc, r, NULL, NULL, 0);
		else
			do_open_read(m, req, r);
		return;
	}
	case LODE_OP_COMMIT:
	case LODE_OP_CLOSE: {
		const struct lode_wire_commit_req *r;

		rc = lode_dec_commit(body, len, dlen, &r);
		if (rc)
			break;
		if (r->handle & LODE_LEASE_READ_BIT) {
			if (opc == LODE_OP_COMMIT)
				lode_req_reply_err(req, -EBADF);
			else
				do_close_read(m, req, r);
			return;
		}
		submit(m, req, opc, r, NULL, NULL, 0);
		return;
	}
	case LODE_OP_MKDIR: {
		const struct lode_wire_mkdir_req *r;

		rc = lode_dec_mkdir(body, len, dlen, &r, &n1);
		if (rc)
			break;
		submit(m, req, opc, r, &n1, NULL, 0);
		return;
	}
	case LODE_OP_UNLINK:
	case LODE_OP_RMDIR: {
		const struct lode_wire_lookup_req *r;

		rc = lode_dec_lookup(body, len, dlen, &r, &n1);
		if (rc)
			break;
		submit(m, req, opc, r, &n1, NULL, 0);
		return;
	}
	case LODE_OP_RENAME: {
		const struct lode_wire_rename_req *r;

		rc = lode_dec_rename(body, len, dlen, &r, &n1, &n2);
		if (rc)
			break;
		submit(m, req, opc, r, &n1, &n2, 0);
		return;
	}
	case LODE_OP_LINK: {
		const struct lode_wire_link_req *r;

		rc = lode_dec_link(body, len, dlen, &r, &n1);
		if (rc)
			break;
		submit(m, req, opc, r, &n1, NULL, 0);
		return;
	}
	case LODE_OP_SYMLINK: {
		const struct lode_wire_symlink_req *r;

		rc = lode_dec_symlink(body, len, dlen, &r, &n1, &n2);
		if (rc)
			break;
		submit(m, req, opc, r, &n1, &n2, 0);
		return;
	}
	case LODE_OP_READDIR: {
		const struct lode_wire_readdir_req *r;

		rc = lode_dec_readdir(body, len, dlen, &r);
		if (rc)
			break;
		do_readdir(m, req, r);
		return;
	}
	case LODE_OP_STATFS:
		rc = lode_dec_statfs(body, len, dlen);
		if (rc)
			break;
		do_statfs(m, req);
		return;
	case LODE_OP_SETXATTR:
	case LODE_OP_GETXATTR:
	case LODE_OP_LISTXATTR:
	case LODE_OP_REMOVEXATTR: {
		const struct lode_wire_xattr_req *r;

		rc = lode_dec_xattr(opc, body, len, dlen, &r, &n1);
		if (rc)
			break;
		if (opc == LODE_OP_GETXATTR || opc == LODE_OP_LISTXATTR)
			do_getxattr(m, req, opc, r, &n1);
		else
			submit(m, req, opc, r, &n1, NULL, 0);
		return;
	}
	case LODE_OP_TARGET_REGISTER: {
		const struct lode_wire_target_register_req *r;

		rc = lode_dec_target_register(body, len, dlen, &r, &n1);
		if (rc)
			break;
		submit(m, req, opc, r, &n1, NULL, 0);
		return;
	}
	case LODE_OP_TARGET_HEARTBEAT: {
		const struct lode_wire_target_heartbeat_req *r;

		rc = lode_dec_target_heartbeat(body, len, dlen, &r);
		if (rc)
			break;
		/* memory only: health is not durable */
		rc = lode_placement_heartbeat(m->pl, r->target_id, r->bytes_total, r->bytes_free,
					      r->objects, lode_now_ms());
		if (rc)
			break;
		lode_req_reply(req, 0, NULL, 0, NULL, 0, NULL);
		return;
	}
	case LODE_OP_TARGET_LIST:
		rc = lode_dec_target_list(body, len, dlen);
		if (rc)
			break;
		do_target_list(m, req);
		return;
	case LODE_OP_ORPHAN_LIST:
	case LODE_OP_ORPHAN_DONE: {
		const struct lode_wire_orphan_req *r;
		uint32_t n = 0;

		rc = lode_dec_orphan(opc, body, len, dlen, &r, &n);
		if (rc)
			break;
		if (opc == LODE_OP_ORPHAN_LIST)
			do_orphan_list(m, req, r);
		else
			submit(m, req, opc, r, NULL, NULL, n);
		return;
	}
	case LODE_OP_REPORT_COPY: {
		const struct lode_wire_report_req *r;

		rc = lode_dec_report(body, len, dlen, &r);
		if (rc)
			break;
		submit(m, req, opc, r, NULL, NULL, 0);
		return;
	}
	case LODE_OP_LAYOUT_GET: {
		const struct lode_wire_getattr_req *r;

		rc = lode_dec_getattr(body, len, dlen, &r);
		if (rc)
			break;
		do_layout_get(m, req, r->ino);
		return;
	}
	case LODE_OP_LAYOUT_SET_COPY: {
		const struct lode_wire_set_copy_req *r;

		rc = lode_dec_set_copy(body, len, dlen, &r);
		if (rc)
			break;
		submit(m, req, opc, r, NULL, NULL, 0);
		return;
	}
	default:
		/* object operations belong to the OSS */
		rc = -EOPNOTSUPP;
		break;
	}
	LODE_DEBUG("%s: %s", lode_op_name(opc), strerror(-rc));
	lode_req_reply_err(req, rc);
}
