/* SPDX-License-Identifier: MIT */
/*
 * Request dispatch of lode-mds.
 *
 * Reads run on the worker thread that received them, each in its own read-only
 * transaction (LMDB readers never block the writer nor each other). Mutations become a
 * struct wreq handed to the writer (mds/writer.h: its thread, or this one for a lazy
 * change while it is idle); the request's body and data stay valid until the reply, so a
 * wreq points into them instead of copying. Leases and handles are only touched in the
 * writer's run()/done() callbacks, which run one op at a time.
 *
 * Records in reply data (READDIR, TARGET_LIST) are packed back to back: the fixed wire
 * struct, then the name bytes, then zero padding up to a multiple of 8 bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup.h"
#include "codec.h"
#include "handlers.h"
#include "identity.h"

#include "cap.h"
#include "grant.h"
#include "lease.h"
#include "liveness.h"
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
	struct lode_store_opts so = {
	    .dir = opts->dir, .map_size = opts->map_size, .format = opts->format};
	struct lode_txn t;
	int rc;

	memset(m, 0, sizeof(*m));
	m->orphan_grace_ns =
	    opts->orphan_grace_ns < 0 ? LODE_NS_ORPHAN_GRACE_NS : opts->orphan_grace_ns;
	m->identity = opts->identity;
	m->cap_lifetime_ms =
	    opts->cap_lifetime_ms ? opts->cap_lifetime_ms : LODE_MDS_CAP_LIFETIME_MS;
	if (opts->cap_key) {
		m->cap_signed = true;
		memcpy(m->cap_key, opts->cap_key, sizeof(m->cap_key));
	}
	rc = lode_store_open(&so, &m->st, why, why_len);
	if (rc)
		return rc;
	if (*lode_store_open_note(m->st))
		LODE_WARN("store: %s", lode_store_open_note(m->st));
	m->cluster_id = lode_store_cluster_id(m->st);
	rc = lode_placement_create(&m->pl, opts->down_ms);
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
	/* never shorter than a client counts: the MDS must hold names until then */
	rc = lode_grants_create(&m->grants,
				opts->grant_ms > LODE_GRANT_MS ? opts->grant_ms : LODE_GRANT_MS,
				LODE_GRANT_MS, lode_now_ms());
	if (rc)
		goto destroy_leases;
	m->write_cap_lifetime_ms = lode_leases_ms(m->leases) / 4 * 3;
	if (m->write_cap_lifetime_ms > m->cap_lifetime_ms)
		m->write_cap_lifetime_ms = m->cap_lifetime_ms;
	rc = lode_writer_start(&m->writer, m->st);
	if (rc) {
		snprintf(why, why_len, "cannot start the writer thread: %s", strerror(-rc));
		goto destroy_leases;
	}
	rc = lode_mds_backup_create(&m->backup, m->st, opts->dir);
	if (rc) {
		snprintf(why, why_len, "out of memory");
		goto stop_writer;
	}
	rc = lode_liveness_start(&m->live, m->pl, m->writer, !opts->no_probe, opts->keys);
	if (rc) {
		snprintf(why, why_len, "cannot start the liveness threads: %s", strerror(-rc));
		goto destroy_backup;
	}
	return 0;

destroy_backup:
	lode_mds_backup_destroy(m->backup);
stop_writer:
	lode_writer_stop(m->writer);
destroy_leases:
	lode_grants_destroy(m->grants);
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
	lode_liveness_stop(m->live); /* answers held creates, which never reach the writer */
	lode_writer_stop(m->writer);
	lode_mds_backup_destroy(m->backup); /* waits for a copy being made */
	lode_grants_destroy(m->grants);
	lode_leases_destroy(m->leases);
	lode_placement_destroy(m->pl);
	lode_store_close(m->st);
	memset(m, 0, sizeof(*m));
}

/*
 * A capability for rights on the objects of (ino, generation), signed unless --insecure:
 * CAP_GET's reply, and the one OPEN and CREATE hand out with a handle.
 *
 * Write rights last three quarters of a write lease at most. Each is issued with a lease
 * renewal (OPEN, CREATE, CAP_GET) or to an admin, and an exclusive open (a repair, a move)
 * takes over a lease only once it went a whole lease unrenewed: by then every write
 * capability of the old writer has expired, with a quarter of a lease to spare for the
 * clocks of MDS and OSS, and its late writes are refused on every copy. A late write
 * that landed would reach the copies the writer's old layout names (the one a move left
 * in place, say) and not the new one, and the copies would differ with neither degraded.
 */
static void cap_make(const struct lode_mds *m, uint64_t ino, uint64_t generation, uint32_t rights,
		     struct lode_wire_cap_rep *rep)
{
	unsigned life = rights & LODE_CAP_WRITE ? m->write_cap_lifetime_ms : m->cap_lifetime_ms;

	memset(rep, 0, sizeof(*rep));
	rep->cap.ino = ino;
	rep->cap.generation = generation;
	rep->cap.rights = rights;
	rep->cap.expiry_ms = lode_cap_now_ms() + life;
	rep->lifetime_ms = life;
	if (m->cap_signed)
		lode_cap_sign(m->cap_key, &rep->cap);
}

/* ---- mutations, in the writer's batches ---- */

struct wreq {
	struct lode_wop op;
	struct lode_mds *m;
	struct lode_req *req;
	const struct mds_op *row; /* the opcode's row of mds_ops */
	struct lode_msg msg;	  /* the decoded request, pointing into its body */
	uint64_t handle;	  /* a write handle this op took (released again if the op fails) */
	uint64_t wait_until_ms;	  /* CREATE held for placement: answered EIO after this */
	int place_err;		  /* CREATE: what placement answered, if it failed */
	unsigned grant_wait_ms;	  /* a name to add: held this long for another's grant */
	bool grant_held;	  /* held for another's grant before (counted once) */
	bool grant_renewed;	  /* the token the request carried renewed its grant */
	uint32_t target_id;
	union {
		struct lode_wire_attr attr;
		struct lode_wire_open_rep open;
		struct lode_wire_hello_rep hello;
		struct lode_wire_layout_rep layout;
		struct lode_wire_fsck_fix_rep fix;
		struct lode_wire_cap_rep cap;
		struct lode_wire_move_rep move;
		struct lode_wire_dirs_rep dirs;
	} rep;
	size_t rep_len;
};

/*
 * A read is answered on the worker thread that received it. It fills a struct rreply,
 * which the dispatcher sends (or, if the read failed, frees).
 */
struct rreply {
	union {
		struct lode_wire_attr attr;
		struct lode_wire_open_rep open;
		struct lode_wire_hello_rep hello;
		struct lode_wire_layout_rep layout;
		struct lode_wire_statfs_rep statfs;
		struct lode_wire_readdir_rep readdir;
		struct lode_wire_xattr_rep xattr;
		struct lode_wire_target_list_rep targets;
		struct lode_wire_orphan_list_rep orphans;
		struct lode_wire_fsck_rep fsck;
		struct lode_wire_backup_start_rep backup_start;
		struct lode_wire_backup_read_rep backup_read;
		struct lode_wire_cap_rep cap;
	} body;
	unsigned role; /* of the request's connection (lode_req_role) */
	size_t body_len;
	void *data; /* malloc'ed, freed with free() once sent; or link below */
	size_t data_len;
	char link[LODE_SYMLINK_MAX]; /* READLINK's target, copied by the reply */
};

/*
 * One row per opcode the MDS answers: the dispatch table. Every request is decoded by the
 * message table (proto/wire/msg.c) first; then its row says where it runs:
 * - read: on the worker thread that received it; with txn set, inside a read-only LMDB
 *   transaction of its own (readers never block the writer nor each other);
 * - run: in the writer's batch (writer.h: on its thread, or inline for a lazy change), in a nested
 * transaction that rolls back alone when run fails; the reply waits for the durable commit;
 * - done: in the writer's batch after the commit (status 0) or the rollback: state that must
 *   follow durability (leases, the in-memory target table). It may turn status into an error.
 * A row with both read and run sends a request to the writer when mutates() says so. A run
 * with memory_only set changes the writer's memory state alone (grants): it is answered
 * as a lazy change is, with no sync of what lazy changes left unsynced.
 */
struct mds_op {
	int (*read)(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
		    struct rreply *r);
	bool txn;
	int (*run)(struct wreq *w, struct lode_txn *t);
	int (*done)(struct wreq *w, int status);
	bool (*mutates)(const struct lode_msg *msg);
	bool memory_only;
};

/* ---- mutations, in the writer's batches ---- */

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
		cap_make(w->m, o->attr.ino, o->layout.generation, LODE_CAP_READ, &o->cap);
		return 0;
	}
	rc = lode_lease_acquire(w->m->leases, o->attr.ino, lode_now_ms(),
				flags & LODE_OPEN_EXCLUSIVE, &w->handle);
	if (rc)
		return rc;
	o->handle = w->handle;
	o->lease_ms = lode_leases_ms(w->m->leases);
	cap_make(w->m, o->attr.ino, o->layout.generation, LODE_CAP_READ | LODE_CAP_WRITE, &o->cap);
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

static int run_setattr(struct wreq *w, struct lode_txn *t)
{
	w->rep_len = sizeof(w->rep.attr);
	return lode_ns_setattr(t, w->msg.fixed, &w->rep.attr);
}

static int run_create(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_create_req *r = w->msg.fixed;
	struct lode_ns_create a = {
	    .parent = r->parent,
	    .cred = r->cred,
	    .name = w->msg.name[0].ptr,
	    .name_len = w->msg.name[0].len,
	    .mode = r->mode,
	    .flags = r->flags,
	    .layout = r->has_layout ? &r->layout : NULL,
	    .has_targets = r->has_layout && r->has_targets,
	    .pl = w->m->pl,
	    .now_ms = lode_now_ms(),
	    .place_err = &w->place_err,
	};
	int created;
	int rc;

	rc = lode_ns_create(t, &a, &w->rep.open.attr, &w->rep.open.layout, &created);
	if (!rc)
		rc = open_degraded(t, &w->rep.open);
	if (!rc)
		rc = lode_ns_getattr(t, r->parent, &w->rep.open.parent);
	return rc ? rc : take_lease(w, r->flags);
}

static int run_open(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_open_req *r = w->msg.fixed;
	int rc;

	rc = lode_ns_open(t, &r->cred, r->ino, r->flags, &w->rep.open.attr, &w->rep.open.layout);
	if (!rc)
		rc = open_degraded(t, &w->rep.open);
	return rc ? rc : take_lease(w, r->flags);
}

/* A failed OPEN or CREATE gives back the write handle it took. */
static int done_open(struct wreq *w, int status)
{
	if (status && w->handle) {
		lode_lease_release(w->m->leases, w->handle, w->rep.open.attr.ino);
		w->handle = 0;
	}
	return status;
}

#define HELD 1 /* done(): the op was kept (held for a retry), no reply now */

/* Once a second at most per *last: a peer looping on a request that fails the same way must
 * not flood the log. Writer thread only. */
static bool once_a_second(uint64_t *last_ms)
{
	uint64_t now = lode_now_ms();

	if (*last_ms && now - *last_ms < 1000)
		return false;
	*last_ms = now;
	return true;
}

/* A client looping on a layout that cannot be placed. */
static bool log_place_now(void)
{
	static uint64_t last_ms;

	return once_a_second(&last_ms);
}

/*
 * A create whose layout could not be placed says why. EAGAIN (fewer targets UP than copies
 * asked: none heard from yet after a start, or down) is held and tried again every
 * LODE_LIVENESS_RETRY_MS for up to LODE_MDS_PLACE_WAIT_MS, then answered EIO. EINVAL (more
 * copies than the cluster has targets) and ENOSPC (the targets UP are full) are answered
 * at once. Each is logged with its reason.
 */
static int done_create(struct wreq *w, int status)
{
	const struct lode_wire_create_req *r = w->msg.fixed;
	const struct lode_name *n = &w->msg.name[0];
	uint64_t now = lode_now_ms(), total, avail;
	uint32_t up, count;
	int perr = w->place_err;

	status = done_open(w, status);
	w->place_err = 0;
	if (!perr || status != perr)
		return status;
	if (status == -EAGAIN) {
		if (!w->wait_until_ms)
			w->wait_until_ms = now + LODE_MDS_PLACE_WAIT_MS;
		if (now < w->wait_until_ms && !lode_liveness_hold(w->m->live, &w->op))
			return HELD;
		status = -EIO;
	}
	if (!log_place_now())
		return status;
	lode_placement_totals(w->m->pl, now, &total, &avail, &up, &count);
	if (perr == -EINVAL)
		LODE_WARN("create %.*s in directory %llu: its layout asks for more copies than the "
			  "cluster's %u targets",
			  (int)n->len, n->ptr, (unsigned long long)r->parent, count);
	else if (perr == -ENOSPC)
		LODE_WARN("create %.*s in directory %llu: the %u targets up are full", (int)n->len,
			  n->ptr, (unsigned long long)r->parent, up);
	else
		LODE_WARN("create %.*s in directory %llu: %u of %u targets up, too few for its "
			  "copies for %u s",
			  (int)n->len, n->ptr, (unsigned long long)r->parent, up, count,
			  LODE_MDS_PLACE_WAIT_MS / 1000);
	return status;
}

/* COMMIT and CLOSE of a write handle. */
static int run_commit(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_commit_req *r = w->msg.fixed;
	bool is_close = lode_req_hdr(w->req)->opcode == LODE_OP_CLOSE;
	int rc;

	w->rep_len = sizeof(w->rep.attr);
	rc = lode_lease_renew(w->m->leases, r->handle, r->ino, lode_now_ms());
	/* a CLOSE without commit only needs the handle to exist */
	if (rc && (!is_close || r->commit || rc == -EBADF))
		return rc;
	if (r->commit)
		return lode_ns_commit(t, r->ino, r->size, r->commit == LODE_COMMIT_EXTEND,
				      r->mtime_ns, r->blocks_p1, &w->rep.attr);
	return lode_ns_getattr(t, r->ino, &w->rep.attr);
}

/* A close ends the handle even when its commit failed. */
static int done_close(struct wreq *w, int status)
{
	const struct lode_wire_commit_req *r = w->msg.fixed;

	if (status != -EBADF && status != -ESHUTDOWN)
		lode_lease_release(w->m->leases, r->handle, r->ino);
	return status;
}

/* CLOSE_MANY: batched closes of write handles with nothing to commit; each gives its lease
 * back. Unknown handles (closed already, from before a restart, read handles) are skipped:
 * lode_lease_release finds no such write handle. */
static int run_close_many(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_close_ref *ref = lode_req_data(w->req);

	(void)t;
	for (uint32_t i = 0; i < w->msg.count; i++)
		lode_lease_release(w->m->leases, ref[i].handle, ref[i].ino);
	w->rep_len = 0;
	return 0;
}

static int run_mkdir(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_mkdir_req *r = w->msg.fixed;

	w->rep_len = sizeof(w->rep.attr);
	return lode_ns_mkdir(t, &r->cred, r->parent, w->msg.name[0].ptr, w->msg.name[0].len,
			     r->mode, &w->rep.attr);
}

static int run_mknod(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_mknod_req *r = w->msg.fixed;

	w->rep_len = sizeof(w->rep.attr);
	return lode_ns_mknod(t, &r->cred, r->parent, w->msg.name[0].ptr, w->msg.name[0].len,
			     r->mode, r->rdev, &w->rep.attr);
}

/* The reply of a change to directories a and b (0: none): their attributes after it. */
static int reply_dirs(struct wreq *w, struct lode_txn *t, uint64_t a, uint64_t b)
{
	int rc = lode_ns_getattr(t, a, &w->rep.dirs.dir[0]);

	if (!rc && b && b != a)
		rc = lode_ns_getattr(t, b, &w->rep.dirs.dir[1]);
	w->rep_len = sizeof(w->rep.dirs);
	return rc;
}

static int run_unlink(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_lookup_req *r = w->msg.fixed;
	int rc = lode_ns_unlink(t, &r->cred, r->parent, w->msg.name[0].ptr, w->msg.name[0].len);

	return rc ? rc : reply_dirs(w, t, r->parent, 0);
}

static int run_rmdir(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_lookup_req *r = w->msg.fixed;
	int rc = lode_ns_rmdir(t, &r->cred, r->parent, w->msg.name[0].ptr, w->msg.name[0].len);

	return rc ? rc : reply_dirs(w, t, r->parent, 0);
}

static int run_rename(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_rename_req *r = w->msg.fixed;
	const struct lode_name *n = w->msg.name;
	int rc = lode_ns_rename(t, &r->cred, r->old_parent, n[0].ptr, n[0].len, r->new_parent,
				n[1].ptr, n[1].len, r->flags);

	return rc ? rc : reply_dirs(w, t, r->old_parent, r->new_parent);
}

static int run_link(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_link_req *r = w->msg.fixed;

	w->rep_len = sizeof(w->rep.attr);
	return lode_ns_link(t, &r->cred, r->ino, r->new_parent, w->msg.name[0].ptr,
			    w->msg.name[0].len, &w->rep.attr);
}

static int run_symlink(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_symlink_req *r = w->msg.fixed;
	const struct lode_name *n = w->msg.name;

	w->rep_len = sizeof(w->rep.attr);
	return lode_ns_symlink(t, &r->cred, r->parent, n[0].ptr, n[0].len, n[1].ptr, n[1].len,
			       &w->rep.attr);
}

static int run_setxattr(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_xattr_req *r = w->msg.fixed;
	const struct lode_name *n = &w->msg.name[0];
	char why[160];
	int rc;

	if (lode_ns_is_layout_xattr(n->ptr, n->len)) {
		/* checked against the cluster's targets: a layout that no file could be
		 * placed with is refused now, not at every create under it */
		rc = lode_ns_layout_set(t, &r->cred, r->ino, lode_req_data(w->req),
					lode_req_hdr(w->req)->data_len, r->flags,
					lode_placement_count(w->m->pl), why, sizeof(why));
		if (rc == -EINVAL && why[0])
			LODE_WARN("layout of directory %llu refused: %s",
				  (unsigned long long)r->ino, why);
		return rc;
	}
	return lode_ns_setxattr(t, &r->cred, r->ino, w->msg.name[0].ptr, w->msg.name[0].len,
				lode_req_data(w->req), lode_req_hdr(w->req)->data_len, r->flags);
}

static int run_removexattr(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_xattr_req *r = w->msg.fixed;

	return lode_ns_removexattr(t, &r->cred, r->ino, w->msg.name[0].ptr, w->msg.name[0].len);
}

static int run_register(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_target_register_req *r = w->msg.fixed;
	const struct lode_name *addr = &w->msg.name[0];
	static uint64_t logged_ms;
	char holder[LODE_ADDR_MAX + 1];
	uint32_t id;

	/* one process per target: a copy of a data directory registering from elsewhere waits
	 * until the holder is found gone (it retries every second) */
	if (!lode_placement_lookup_txn(t, r->uuid, &id) &&
	    lode_placement_held_elsewhere(w->m->pl, id, addr->ptr, addr->len, lode_now_ms(), holder,
					  sizeof(holder))) {
		if (once_a_second(&logged_ms))
			LODE_WARN("target %u registering from %.*s refused: it is up at %s; the "
				  "address changes once that one is gone",
				  id, (int)addr->len, addr->ptr, holder);
		return -EBUSY;
	}
	w->rep_len = sizeof(w->rep.hello);
	return lode_placement_register_txn(t, r->uuid, w->msg.name[0].ptr, w->msg.name[0].len,
					   r->bytes_total, r->bytes_free, &w->target_id);
}

/* The target's id is durable now: the in-memory table follows. */
static int done_register(struct wreq *w, int status)
{
	const struct lode_wire_target_register_req *r = w->msg.fixed;
	const struct lode_name *addr = &w->msg.name[0];

	if (status)
		return status;
	status = lode_placement_update(w->m->pl, w->target_id, addr->ptr, addr->len, r->bytes_total,
				       r->bytes_free, lode_now_ms());
	w->rep.hello.cluster_id = w->m->cluster_id;
	w->rep.hello.server_role = 1;
	w->rep.hello.target_id = w->target_id;
	if (!status)
		LODE_INFO("target %u registered at %.*s", w->target_id, (int)addr->len, addr->ptr);
	return status;
}

static int run_orphan_done(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_orphan_req *r = w->msg.fixed;

	return lode_ns_orphan_done(t, r->target_id, lode_req_data(w->req), w->msg.count);
}

/* A client's REPORT_COPY carries a capability for the file (read rights will do: readers
 * report bad data, writers failed writes), so that only those who may read a file can
 * strip its copies' redundancy; targets and admins report without one. */
static int report_allowed(struct wreq *w, const struct lode_wire_report_req *r)
{
	const struct lode_wire_cap *c = lode_req_cap(w->req);
	struct lode_wire_cap cap;

	if (!w->m->cap_signed || lode_req_role(w->req) != LODE_ROLE_CLIENT)
		return 0;
	if (!c)
		return -EACCES;
	memcpy(&cap, c, sizeof(cap)); /* it ends a body: maybe not aligned */
	return lode_cap_check(w->m->cap_key, &cap, r->ino, r->generation, LODE_CAP_READ,
			      lode_cap_now_ms());
}

static int run_report(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_report_req *r = w->msg.fixed;
	int rc = report_allowed(w, r);

	if (rc)
		return rc;
	if (r->kind == LODE_REPORT_WRITE_FAILED && lode_placement_known(w->m->pl, r->target_id)) {
		/* unreachable or failing: placed on only when needed until the probe decides */
		lode_placement_suspect(w->m->pl, r->target_id);
		lode_liveness_kick(w->m->live);
	}
	rc = lode_ns_report_copy(t, r->ino, r->generation, r->stripe, r->target_id);
	if (!rc)
		LODE_WARN("inode %llu stripe %u: copy on target %u is degraded (%s)",
			  (unsigned long long)r->ino, r->stripe, r->target_id,
			  r->kind == LODE_REPORT_BAD_DATA ? "bad data" : "write failed");
	return rc;
}

/* SCRUB_REPORT: an OSS's scrub found a copy of its own with bad data at rest; the same as a
 * reader's REPORT_COPY of bad data. */
static int run_scrub_report(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_scrub_report_req *r = w->msg.fixed;
	int rc;

	rc = lode_ns_report_copy(t, r->obj.ino, r->obj.generation, r->obj.stripe, r->target_id);
	if (!rc)
		LODE_WARN("inode %llu stripe %u: copy on target %u is degraded (scrub: %u bad "
			  "chunks from chunk %llu)",
			  (unsigned long long)r->obj.ino, r->obj.stripe, r->target_id,
			  r->bad_chunks, (unsigned long long)r->first_bad);
	return rc;
}

static int run_set_copy(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_set_copy_req *r = w->msg.fixed;
	int rc;

	/* only the exclusive writer may move a copy: no write can race it */
	rc = lode_lease_renew_exclusive(w->m->leases, r->handle, r->ino, lode_now_ms());
	if (rc)
		return rc;
	w->rep_len = sizeof(w->rep.layout);
	rc = lode_ns_set_copy(t, w->m->pl, r->ino, r->index, r->old_target, r->new_target,
			      &w->rep.layout);
	if (!rc)
		LODE_INFO("inode %llu: copy %u moved from target %u to %u, complete",
			  (unsigned long long)r->ino, r->index, r->old_target, r->new_target);
	return rc;
}

/* MOVE (admin only): BEGIN and COMMIT need the mover's exclusive write lease (files may
 * have many writers: LODE_OPEN_EXCLUSIVE), so no write, truncate or repair runs while a
 * copy is copied and switched (mds/ns_move.c). */
static int run_move(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_move_req *r = w->msg.fixed;
	uint64_t seq = 0;
	int rc = 0;

	if (r->phase != LODE_MOVE_ABORT)
		rc = lode_lease_renew_exclusive(w->m->leases, r->handle, r->ino, lode_now_ms());
	if (rc)
		return rc;
	if (r->phase == LODE_MOVE_BEGIN)
		rc = lode_ns_move_begin(t, w->m->pl, r, &seq);
	else if (r->phase == LODE_MOVE_COMMIT)
		rc = lode_ns_move_commit(t, w->m->pl, r, &seq);
	else
		rc = lode_ns_move_abort(t, r, &seq);
	if (rc)
		return rc;
	if (r->phase == LODE_MOVE_ABORT && seq) {
		/* the mover's lease goes with its intent: a killed mover's would keep writers
		 * and the next run off the file for the lease's whole time */
		lode_lease_release(w->m->leases, seq, r->ino);
		seq = 0;
	}
	w->rep.move = (struct lode_wire_move_rep){.seq = seq};
	w->rep_len = sizeof(w->rep.move);
	if (r->phase == LODE_MOVE_COMMIT)
		LODE_INFO("inode %llu: copy %u moved from target %u to %u",
			  (unsigned long long)r->ino, r->index, r->old_target, r->new_target);
	return 0;
}

/* TARGET_STATE (admin only). REMOVED only from DRAINING, and only when nothing needs the
 * target: that check scans the inodes in this transaction (a draining target gains no
 * copies, so lodectl asks only once the drain is done). */
static int run_target_state(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_target_state_req *r = w->msg.fixed;
	int now = lode_placement_admin(w->m->pl, r->target_id);
	uint64_t copies, pending;
	int rc;

	if (now < 0)
		return now;
	if (r->admin == LODE_TARGET_REMOVED && now != LODE_TARGET_REMOVED) {
		if (now != LODE_TARGET_DRAINING)
			return -EBUSY; /* drain it first */
		if (!lode_placement_is_up(w->m->pl, r->target_id, lode_now_ms())) {
			/* down: its deletions will never be done there; a live target does its
			 * own, so that it holds nothing when it goes */
			uint64_t n = 0;

			rc = lode_ns_target_forget(t, r->target_id, &n);
			if (rc)
				return rc;
			if (n)
				LODE_WARN("target %u is down: %llu deletions it had pending are "
					  "dropped with it",
					  r->target_id, (unsigned long long)n);
		}
		rc = lode_ns_target_users(t, r->target_id, &copies, &pending);
		if (rc)
			return rc;
		if (copies || pending) {
			LODE_WARN("target %u not removed: %llu copies and %llu objects pending "
				  "still need it",
				  r->target_id, (unsigned long long)copies,
				  (unsigned long long)pending);
			return -EBUSY;
		}
	}
	return lode_placement_admin_txn(t, r->target_id, (uint16_t)r->admin);
}

static int done_target_state(struct wreq *w, int status)
{
	const struct lode_wire_target_state_req *r = w->msg.fixed;
	static const char *const names[] = {"active", "draining", "removed"};

	if (status)
		return status;
	lode_placement_set_admin(w->m->pl, r->target_id, (uint16_t)r->admin);
	LODE_INFO("target %u is %s", r->target_id, names[r->admin]);
	return 0;
}

/* The directory a request that adds a name adds it in (lode_op_adds_name). */
static uint64_t name_dir(const struct wreq *w, unsigned opcode)
{
	switch (opcode) {
	case LODE_OP_CREATE:
		return ((const struct lode_wire_create_req *)w->msg.fixed)->parent;
	case LODE_OP_MKDIR:
		return ((const struct lode_wire_mkdir_req *)w->msg.fixed)->parent;
	case LODE_OP_MKNOD:
		return ((const struct lode_wire_mknod_req *)w->msg.fixed)->parent;
	case LODE_OP_SYMLINK:
		return ((const struct lode_wire_symlink_req *)w->msg.fixed)->parent;
	case LODE_OP_LINK:
		return ((const struct lode_wire_link_req *)w->msg.fixed)->new_parent;
	case LODE_OP_RENAME:
		return ((const struct lode_wire_rename_req *)w->msg.fixed)->new_parent;
	}
	return 0;
}

static int wreq_run(struct lode_wop *op, struct lode_txn *t)
{
	struct wreq *w = lode_container_of(op, struct wreq, op);
	const struct lode_wire_hdr *hdr = lode_req_hdr(w->req);

	/* a name added where another client holds a grant waits until it lapses (grant.h) */
	if (lode_op_adds_name(hdr->opcode)) {
		w->grant_wait_ms =
		    lode_grants_enter(w->m->grants, name_dir(w, hdr->opcode),
				      hdr->flags & LODE_WIRE_F_GRANT ? hdr->grant : 0,
				      lode_now_ms(), &w->grant_renewed);
		if (w->grant_wait_ms)
			return -EAGAIN;
	}
	return w->row->run(w, t);
}

/* What the reply says of grants: renewed, and the grant of a directory just made. */
static void reply_grants(struct wreq *w, int status)
{
	const struct lode_wire_hdr *hdr = lode_req_hdr(w->req);
	uint64_t token = 0;

	if (!(hdr->flags & LODE_WIRE_F_GRANT))
		return;
	if (hdr->opcode == LODE_OP_MKDIR && !status) {
		token = lode_grants_give(w->m->grants, w->rep.attr.ino, lode_now_ms());
		if (token)
			__atomic_add_fetch(&w->m->grants_given, 1, __ATOMIC_RELAXED);
	}
	lode_req_reply_grant(w->req, w->grant_renewed, token);
}

static void wreq_done(struct lode_wop *op, int status)
{
	struct wreq *w = lode_container_of(op, struct wreq, op);

	if (w->grant_wait_ms) {
		unsigned ms = w->grant_wait_ms;

		w->grant_wait_ms = 0;
		if (!w->grant_held)
			__atomic_add_fetch(&w->m->grant_waits, 1, __ATOMIC_RELAXED);
		w->grant_held = true;
		if (!lode_liveness_hold_ms(w->m->live, &w->op, ms))
			return;
		status = -EIO; /* the MDS is stopping */
	} else if (w->row->done) {
		status = w->row->done(w, status);
	}
	if (status == HELD)
		return;
	reply_grants(w, status);
	if (!status) {
		/* committed: what metrics count of copies (cheap, no scan of the inodes) */
		unsigned opcode = lode_req_hdr(w->req)->opcode;

		if (opcode == LODE_OP_REPORT_COPY || opcode == LODE_OP_SCRUB_REPORT)
			__atomic_add_fetch(&w->m->copy_reports, 1, __ATOMIC_RELAXED);
		else if (opcode == LODE_OP_LAYOUT_SET_COPY)
			__atomic_add_fetch(&w->m->copies_moved, 1, __ATOMIC_RELAXED);
	}
	if (status)
		lode_req_reply_err(w->req, status);
	else
		lode_req_reply(w->req, 0, &w->rep, w->rep_len, NULL, 0, NULL);
	free(w);
}

static void submit(struct lode_mds *m, struct lode_req *req, const struct mds_op *row,
		   const struct lode_msg *msg)
{
	struct wreq *w = calloc(1, sizeof(*w));

	if (!w) {
		lode_req_reply_err(req, -ENOMEM);
		return;
	}
	w->op.run = wreq_run;
	w->op.done = wreq_done;
	w->op.lazy = (lode_req_hdr(req)->flags & LODE_WIRE_F_LAZY) || row->memory_only;
	w->m = m;
	w->req = req;
	w->row = row;
	w->msg = *msg;
	lode_writer_submit(m->writer, &w->op);
}

/* ---- reads, on the worker thread ---- */

static int read_hello(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
		      struct rreply *r)
{
	(void)t, (void)msg;
	r->body.hello = (struct lode_wire_hello_rep){.cluster_id = m->cluster_id, .server_role = 1};
	r->body_len = sizeof(r->body.hello);
	return 0;
}

static int read_ping(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
		     struct rreply *r)
{
	(void)m, (void)t, (void)msg, (void)r;
	return 0;
}

static int read_lookup(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
		       struct rreply *r)
{
	const struct lode_wire_lookup_req *q = msg->fixed;

	(void)m;
	r->body_len = sizeof(r->body.attr);
	return lode_ns_lookup(t, &q->cred, q->parent, msg->name[0].ptr, msg->name[0].len,
			      &r->body.attr);
}

static int read_getattr(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
			struct rreply *r)
{
	const struct lode_wire_getattr_req *q = msg->fixed;

	(void)m;
	r->body_len = sizeof(r->body.attr);
	return lode_ns_getattr(t, q->ino, &r->body.attr);
}

static int read_readlink(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
			 struct rreply *r)
{
	const struct lode_wire_getattr_req *q = msg->fixed;

	(void)m;
	r->data = r->link;
	return lode_ns_readlink(t, q->ino, r->link, sizeof(r->link), &r->data_len);
}

static int read_readdir(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
			struct rreply *r)
{
	const struct lode_wire_readdir_req *q = msg->fixed;
	bool plus = q->flags & LODE_READDIR_ATTRS;
	size_t cap =
	    (size_t)q->max_entries * (plus ? LODE_NS_DIRENTPLUS_REC_MAX : LODE_NS_DIRENT_REC_MAX);
	int eof = 0;
	int rc;

	(void)m;
	r->data = malloc(cap);
	if (!r->data)
		return -ENOMEM;
	rc = (plus ? lode_ns_readdirplus
		   : lode_ns_readdir)(t, &q->cred, q->ino, q->cookie, q->max_entries, r->data, cap,
				      &r->data_len, &r->body.readdir.count, &eof);
	r->body.readdir.eof = (uint32_t)eof;
	r->body_len = sizeof(r->body.readdir);
	return rc;
}

static int read_statfs(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
		       struct rreply *r)
{
	(void)msg;
	r->body_len = sizeof(r->body.statfs);
	return lode_ns_statfs(t, m->pl, lode_now_ms(), &r->body.statfs);
}

/* GETXATTR and LISTXATTR: a size of 0 asks only for the length. */
static int read_xattr(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
		      struct rreply *r)
{
	const struct lode_wire_xattr_req *q = msg->fixed;
	bool get = msg->name[0].len != 0; /* LISTXATTR has no name */
	size_t max = get ? LODE_XATTR_VALUE_MAX : LODE_DATA_MAX;
	size_t size = q->size < max ? q->size : max;
	size_t len = 0;
	int rc;

	(void)m;
	if (size) {
		r->data = malloc(size);
		if (!r->data)
			return -ENOMEM;
	}
	if (get)
		rc = lode_ns_getxattr(t, &q->cred, q->ino, msg->name[0].ptr, msg->name[0].len,
				      r->data, size, &len);
	else
		rc = lode_ns_listxattr(t, &q->cred, q->ino, r->data, size, &len);
	r->body.xattr = (struct lode_wire_xattr_rep){.size = (uint32_t)len};
	r->body_len = sizeof(r->body.xattr);
	r->data_len = size ? len : 0;
	return rc;
}

/* OPEN for reading only: no lease, so no commit either. */
static int read_open(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
		     struct rreply *r)
{
	const struct lode_wire_open_req *q = msg->fixed;
	struct lode_wire_open_rep *o = &r->body.open;
	int rc;

	memset(o, 0, sizeof(*o));
	rc = lode_ns_open(t, &q->cred, q->ino, q->flags, &o->attr, &o->layout);
	if (!rc)
		rc = open_degraded(t, o);
	o->handle = lode_lease_read_handle();
	cap_make(m, o->attr.ino, o->layout.generation, LODE_CAP_READ, &o->cap);
	r->body_len = sizeof(*o);
	return rc;
}

static bool open_mutates(const struct lode_msg *msg)
{
	return ((const struct lode_wire_open_req *)msg->fixed)->flags &
	       (LODE_OPEN_WRITE | LODE_OPEN_TRUNC);
}

/* COMMIT and CLOSE of a write handle go to the writer; of a read handle, they stay here. */
static bool handle_mutates(const struct lode_msg *msg)
{
	return !(((const struct lode_wire_commit_req *)msg->fixed)->handle & LODE_LEASE_READ_BIT);
}

static int read_commit(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
		       struct rreply *r)
{
	(void)m, (void)t, (void)msg, (void)r;
	return -EBADF; /* a read handle has nothing to commit */
}

/* CLOSE of a read handle: nothing to release, nothing to commit. */
static int read_close(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
		      struct rreply *r)
{
	const struct lode_wire_commit_req *q = msg->fixed;
	int rc;

	(void)m;
	if (q->commit)
		return -EBADF;
	r->body_len = sizeof(r->body.attr);
	rc = lode_ns_getattr(t, q->ino, &r->body.attr);
	if (rc == -ENOENT) {
		/* closing a file that was removed meanwhile is fine */
		memset(&r->body.attr, 0, sizeof(r->body.attr));
		rc = 0;
	}
	return rc;
}

static int read_layout(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
		       struct rreply *r)
{
	const struct lode_wire_getattr_req *q = msg->fixed;

	(void)m;
	r->body_len = sizeof(r->body.layout);
	return lode_ns_layout_get(t, q->ino, &r->body.layout);
}

/* ---- capabilities (proto/net/cap.h) ---- */

/* Fills rep with a capability for rights on the objects of q's file and generation (0: the
 * current one), signed unless --insecure. Write rights only for the current generation. */
static int cap_issue(struct lode_mds *m, struct lode_txn *t, const struct lode_wire_cap_req *q,
		     uint32_t rights, struct lode_wire_cap_rep *rep)
{
	struct lode_wire_layout_rep lr;
	int rc = lode_ns_layout_get(t, q->ino, &lr);
	uint64_t gen = q->generation ? q->generation : lr.layout.generation;

	if (rc)
		return rc;
	if (gen > lr.layout.generation ||
	    ((rights & LODE_CAP_WRITE) && gen != lr.layout.generation))
		return -ESTALE;
	cap_make(m, q->ino, gen, rights, rep);
	return 0;
}

/* CAP_GET for reading: read permission, as OPEN checks it. The inode of a file unlinked
 * while open (kept for its grace period) still gets one: its handles keep working. */
static int read_cap(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
		    struct rreply *r)
{
	const struct lode_wire_cap_req *q = msg->fixed;

	if (r->role != LODE_ROLE_ADMIN) {
		struct lode_wire_open_rep o;
		int rc = lode_ns_open(t, &q->cred, q->ino, LODE_OPEN_READ, &o.attr, &o.layout);

		if (rc && rc != -ESTALE)
			return rc;
	}
	r->body_len = sizeof(r->body.cap);
	return cap_issue(m, t, q, LODE_CAP_READ, &r->body.cap);
}

static bool cap_mutates(const struct lode_msg *msg)
{
	return ((const struct lode_wire_cap_req *)msg->fixed)->rights & LODE_CAP_WRITE;
}

/* CAP_GET for writing (in the writer's batch, which owns the leases): the holder of the
 * file's write lease gets read and write, and its lease is renewed as by a COMMIT; an
 * admin gets them without a handle, but not for a handle that lost its lease (to a repair
 * or a move: its writes would now reach only the copies its old layout names). */
static int run_cap(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_cap_req *q = w->msg.fixed;

	if (lode_req_role(w->req) != LODE_ROLE_ADMIN || q->handle) {
		int rc = lode_lease_renew(w->m->leases, q->handle, q->ino, lode_now_ms());

		if (rc)
			return rc;
	}
	w->rep_len = sizeof(w->rep.cap);
	return cap_issue(w->m, t, q, LODE_CAP_READ | LODE_CAP_WRITE, &w->rep.cap);
}

/* SYNC changes nothing: as a request that is not lazy, it makes the writer sync what lazy
 * requests (LODE_WIRE_F_LAZY) left not yet durable, and is answered after. */
static int run_sync(struct wreq *w, struct lode_txn *t)
{
	(void)w, (void)t;
	return 0;
}

/* The grants live in the writer's memory (mds/grant.h): the request runs in a batch, as a
 * lazy change, and what waited for the grant to lapse goes on now. */
static int run_grant_return(struct wreq *w, struct lode_txn *t)
{
	const struct lode_wire_grant_return_req *q = w->msg.fixed;

	(void)t;
	if (lode_grants_return(w->m->grants, q->dir, q->token)) {
		__atomic_add_fetch(&w->m->grants_returned, 1, __ATOMIC_RELAXED);
		lode_liveness_release_all(w->m->live);
	}
	return 0;
}

/* Health lives in memory only: it is not durable, and never waits for the writer. */
static int read_heartbeat(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
			  struct rreply *r)
{
	const struct lode_wire_target_heartbeat_req *q = msg->fixed;

	(void)t, (void)r;
	return lode_placement_heartbeat(m->pl, q->target_id, q->bytes_total, q->bytes_free,
					q->objects, lode_now_ms());
}

static int read_target_list(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
			    struct rreply *r)
{
	struct lode_placement_target *list;
	char *buf;
	size_t pos = 0;
	unsigned n;

	(void)t, (void)msg;
	list = malloc(LODE_TARGETS_MAX * sizeof(*list));
	buf = malloc(LODE_TARGETS_MAX * LODE_NS_TARGET_REC(LODE_ADDR_MAX));
	if (!list || !buf) {
		free(list);
		free(buf);
		return -ENOMEM;
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
		    .admin = list[i].admin,
		};
		size_t rec = LODE_NS_TARGET_REC(w.addr_len);

		memset(buf + pos, 0, rec);
		memcpy(buf + pos, &w, sizeof(w));
		memcpy(buf + pos + sizeof(w), list[i].addr, w.addr_len);
		pos += rec;
	}
	free(list);
	r->body.targets = (struct lode_wire_target_list_rep){.count = n};
	r->body_len = sizeof(r->body.targets);
	r->data = buf;
	r->data_len = pos;
	return 0;
}

static int read_orphan_list(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
			    struct rreply *r)
{
	const struct lode_wire_orphan_req *q = msg->fixed;
	struct lode_wire_objid *ids = calloc(q->max, sizeof(*ids));
	uint32_t n = 0;
	int rc;

	if (!ids)
		return -ENOMEM;
	r->data = ids;
	rc = lode_ns_orphan_list(t, q->target_id, lode_ns_now(), m->orphan_grace_ns, ids, q->max,
				 &n);
	r->body.orphans = (struct lode_wire_orphan_list_rep){.count = n};
	r->body_len = sizeof(r->body.orphans);
	r->data_len = n * sizeof(*ids);
	return rc;
}

/* MOVE_LIST (admin only): moves begun and not finished, for a new run to clean up. */
static int read_move_list(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
			  struct rreply *r)
{
	const struct lode_wire_move_list_req *q = msg->fixed;
	struct lode_wire_move_entry *e = calloc(q->max, sizeof(*e));
	uint32_t n = 0;
	int rc;

	(void)m;
	if (!e)
		return -ENOMEM;
	r->data = e;
	rc = lode_ns_move_list(t, q, e, &n);
	r->body.orphans = (struct lode_wire_orphan_list_rep){.count = n};
	r->body_len = sizeof(r->body.orphans);
	r->data_len = n * sizeof(*e);
	return rc;
}

/* FSCK (admin only): one page in this read's snapshot (mds/ns_fsck.c). */
static int read_fsck(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
		     struct rreply *r)
{
	(void)m;
	r->body_len = sizeof(r->body.fsck);
	return lode_ns_fsck(t, msg->fixed, &r->body.fsck, &r->data, &r->data_len);
}

/* FSCK_FIX (admin only): the finding is checked again in the batch's transaction. */
static int run_fsck_fix(struct wreq *w, struct lode_txn *t)
{
	w->rep_len = sizeof(w->rep.fix);
	return lode_ns_fsck_fix(t, w->msg.fixed, &w->rep.fix);
}

/* BACKUP_START (admin only): the copy is made on a thread of backup.c, not here. */
static int read_backup_start(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
			     struct rreply *r)
{
	(void)t, (void)msg;
	r->body_len = sizeof(r->body.backup_start);
	return lode_mds_backup_start(m->backup, &r->body.backup_start.backup_id);
}

/* BACKUP_READ (admin only): one page of the finished copy, read from its file. */
static int read_backup_read(struct lode_mds *m, struct lode_txn *t, const struct lode_msg *msg,
			    struct rreply *r)
{
	(void)t;
	r->body_len = sizeof(r->body.backup_read);
	return lode_mds_backup_read(m->backup, msg->fixed, &r->body.backup_read, &r->data,
				    &r->data_len);
}

/* ---- the table ---- */

#define READ(fn)                                                                                   \
	{                                                                                          \
		.read = fn, .txn = true                                                            \
	}
#define MUTATE(fn)                                                                                 \
	{                                                                                          \
		.run = fn                                                                          \
	}

static const struct mds_op mds_ops[LODE_OP_MAX_] = {
    [LODE_OP_HELLO] = {.read = read_hello},
    [LODE_OP_PING] = {.read = read_ping},
    [LODE_OP_LOOKUP] = READ(read_lookup),
    [LODE_OP_GETATTR] = READ(read_getattr),
    [LODE_OP_SETATTR] = MUTATE(run_setattr),
    [LODE_OP_CREATE] = {.run = run_create, .done = done_create},
    [LODE_OP_MKDIR] = MUTATE(run_mkdir),
    [LODE_OP_MKNOD] = MUTATE(run_mknod),
    [LODE_OP_UNLINK] = MUTATE(run_unlink),
    [LODE_OP_RMDIR] = MUTATE(run_rmdir),
    [LODE_OP_RENAME] = MUTATE(run_rename),
    [LODE_OP_LINK] = MUTATE(run_link),
    [LODE_OP_SYMLINK] = MUTATE(run_symlink),
    [LODE_OP_READLINK] = READ(read_readlink),
    [LODE_OP_READDIR] = READ(read_readdir),
    [LODE_OP_STATFS] = READ(read_statfs),
    [LODE_OP_SETXATTR] = MUTATE(run_setxattr),
    [LODE_OP_GETXATTR] = READ(read_xattr),
    [LODE_OP_LISTXATTR] = READ(read_xattr),
    [LODE_OP_REMOVEXATTR] = MUTATE(run_removexattr),
    [LODE_OP_OPEN] = {.read = read_open,
		      .txn = true,
		      .run = run_open,
		      .done = done_open,
		      .mutates = open_mutates},
    [LODE_OP_CLOSE] = {.read = read_close,
		       .txn = true,
		       .run = run_commit,
		       .done = done_close,
		       .mutates = handle_mutates},
    [LODE_OP_COMMIT] = {.read = read_commit, .run = run_commit, .mutates = handle_mutates},
    [LODE_OP_CLOSE_MANY] = MUTATE(run_close_many),
    [LODE_OP_TARGET_REGISTER] = {.run = run_register, .done = done_register},
    [LODE_OP_TARGET_HEARTBEAT] = {.read = read_heartbeat},
    [LODE_OP_TARGET_LIST] = {.read = read_target_list},
    [LODE_OP_ORPHAN_LIST] = READ(read_orphan_list),
    [LODE_OP_ORPHAN_DONE] = MUTATE(run_orphan_done),
    [LODE_OP_REPORT_COPY] = MUTATE(run_report),
    [LODE_OP_LAYOUT_GET] = READ(read_layout),
    [LODE_OP_LAYOUT_SET_COPY] = MUTATE(run_set_copy),
    [LODE_OP_SYNC] = {.run = run_sync},
    [LODE_OP_GRANT_RETURN] = {.run = run_grant_return, .memory_only = true},
    [LODE_OP_CAP_GET] = {.read = read_cap, .txn = true, .run = run_cap, .mutates = cap_mutates},
    /* admin only (the role column comes with cluster keys) */
    [LODE_OP_FSCK] = READ(read_fsck),
    [LODE_OP_FSCK_FIX] = MUTATE(run_fsck_fix),
    [LODE_OP_SCRUB_REPORT] = MUTATE(run_scrub_report),
    [LODE_OP_BACKUP_START] = {.read = read_backup_start},
    [LODE_OP_BACKUP_READ] = {.read = read_backup_read},
    [LODE_OP_MOVE] = MUTATE(run_move),
    [LODE_OP_TARGET_STATE] = {.run = run_target_state, .done = done_target_state},
    [LODE_OP_MOVE_LIST] = READ(read_move_list),
};

/* ---- dispatch ---- */

static void answer_read(struct lode_mds *m, struct lode_req *req, const struct mds_op *row,
			const struct lode_msg *msg)
{
	struct rreply r;
	struct lode_txn t;
	int rc = 0;

	/* the body is sent as the read left it: zero it, so no stack bytes reach the wire; the
	 * 4 KiB link buffer is written before it is sent, and is not worth clearing per read */
	memset(&r.body, 0, sizeof(r.body));
	r.role = lode_req_role(req);
	r.body_len = 0;
	r.data = NULL;
	r.data_len = 0;

	if (row->txn)
		rc = lode_store_read_begin(m->st, &t);
	if (!rc) {
		rc = row->read(m, &t, msg, &r);
		if (row->txn)
			lode_store_abort(&t);
	}
	if (rc) {
		if (r.data != r.link)
			free(r.data);
		lode_req_reply_err(req, rc);
	} else {
		/* the link is copied by the reply; anything else was malloc'ed for it */
		lode_req_reply(req, 0, &r.body, r.body_len, r.data, r.data_len,
			       r.data == r.link ? NULL : free);
	}
}

/*
 * A connection that proved a client group's key: its request's credentials are held to the
 * group's rule (identity.h), rewritten in the body, where every handler reads them, before
 * any permission check. The body is the server's copy of the frame, this request's alone.
 */
static int hold_to_group(struct lode_mds *m, struct lode_req *req)
{
	const struct lode_wire_hdr *hdr = lode_req_hdr(req);
	size_t at = lode_msg_cred_offset(hdr->opcode);
	const char *group = lode_req_group(req);
	struct lode_wire_cred c;
	char *body = (char *)lode_req_body(req);
	char why[160];
	int rc;

	if (!group[0] || !at)
		return 0;
	memcpy(&c, body + at - 1, sizeof(c));
	rc = lode_identity_apply(m->identity, group, &c, why, sizeof(why));
	if (rc) {
		LODE_DEBUG("%s refused: %s", lode_op_name(hdr->opcode), why);
		return rc;
	}
	memcpy(body + at - 1, &c, sizeof(c));
	return 0;
}

void lode_mds_on_request(void *ctx, struct lode_req *req)
{
	struct lode_mds *m = ctx;
	const struct lode_wire_hdr *hdr = lode_req_hdr(req);
	const struct mds_op *row = &mds_ops[hdr->opcode];
	struct lode_msg msg;
	int rc;

	rc = lode_msg_decode(hdr->opcode, lode_req_body(req), hdr->body_len, hdr->data_len, &msg);
	if (!rc && !row->read && !row->run)
		rc = -EOPNOTSUPP; /* object operations belong to the OSS */
	if (!rc)
		rc = hold_to_group(m, req);
	if (rc) {
		LODE_DEBUG("%s: %s", lode_op_name(hdr->opcode), strerror(-rc));
		lode_req_reply_err(req, rc);
		return;
	}
	if (row->run && (!row->read || row->mutates(&msg)))
		submit(m, req, row, &msg);
	else
		answer_read(m, req, row, &msg);
}
