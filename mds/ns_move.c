/* SPDX-License-Identifier: MIT */
/*
 * Moving one copy of a stripe to another target (lodectl drain, rebalance): MOVE's three
 * steps, the moves db they keep, and what a target still holds before it may be removed.
 *
 * Crash safety. A mover records its intent (BEGIN) before it writes the destination
 * object, so an object nobody's layout names is never left unaccounted for: a killed
 * mover's destination is listed by MOVE_LIST and removed by the next run, which then drops
 * the intent (ABORT). The switch (COMMIT) is one transaction: the layout names the new
 * target, the move sequence goes up, the intent goes and the old object is recorded for
 * deletion. The old object is deleted by its own target through the orphan path, after the
 * orphan grace, so readers that opened the file before the switch finish from it.
 *
 * Concurrency. COMMIT is a compare-and-swap on what BEGIN saw (generation, the copy's
 * target and the move sequence), and needs the file's write lease: a writer, a truncate,
 * a repair or another mover in between makes it ESTALE or EBUSY, never lost.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_internal.h"
#include "placement.h"

/* Whether target may receive a copy: known, and ACTIVE (neither draining nor removed). */
static bool may_receive(struct lode_placement *pl, uint32_t target)
{
	return pl && lode_placement_known(pl, target) &&
	       lode_placement_admin(pl, target) == LODE_TARGET_ACTIVE;
}

/* The file, and the copy the request names, as BEGIN and COMMIT check them. */
static int check_copy(struct lode_txn *t, const struct lode_wire_move_req *r,
		      struct lode_disk_inode *in)
{
	int rc = lode_ns_get_file(t, r->ino, -EINVAL, in);
	const struct lode_disk_layout *l = &in->layout;

	if (rc)
		return rc;
	if (l->generation != r->generation)
		return -ESTALE; /* rewritten since the mover read it */
	if (r->index >= (unsigned)l->stripe_count * l->mirror_count)
		return -EINVAL;
	if (l->targets[r->index] != r->old_target)
		return -ESTALE; /* moved or repaired by someone else first */
	if (lode_ns_stripe_holds(l->targets, l->mirror_count, r->index, r->new_target))
		return -EINVAL; /* two copies of one stripe on one target: never */
	return 0;
}

int lode_ns_move_begin(struct lode_txn *t, struct lode_placement *pl,
		       const struct lode_wire_move_req *r, uint64_t *seq)
{
	struct lode_disk_move mv;
	struct lode_disk_inode in;
	uint32_t stripe;
	int rc = check_copy(t, r, &in);

	if (rc)
		return rc;
	if (!may_receive(pl, r->new_target))
		return -EINVAL;
	/* a degraded copy moves too (the mover copies from a good one): draining a target that
	 * died leaves no stale copy behind */
	stripe = r->index / in.layout.mirror_count;
	/* an old copy of this object still waiting for deletion there would be deleted under
	 * the new one: wait until its target has removed it */
	rc = lode_rec_move_get(t, r->ino, r->generation, stripe, r->new_target, &mv);
	if (rc == 0 && mv.kind == LODE_MOVE_OLD)
		return -EBUSY;
	if (rc && rc != -ENOENT)
		return rc;
	mv = (struct lode_disk_move){
	    .kind = LODE_MOVE_INTENT, .since_ns = lode_ns_now(), .handle = r->handle};
	rc = lode_rec_move_put(t, r->ino, r->generation, stripe, r->new_target, &mv);
	if (rc)
		return rc;
	*seq = in.move_seq;
	return 0;
}

int lode_ns_move_commit(struct lode_txn *t, struct lode_placement *pl,
			const struct lode_wire_move_req *r, uint64_t *seq)
{
	struct lode_disk_move mv;
	struct lode_disk_inode in;
	uint32_t stripe;
	int rc = check_copy(t, r, &in);

	if (rc)
		return rc;
	if (in.move_seq != r->seq)
		return -ESTALE;
	stripe = r->index / in.layout.mirror_count;
	rc = lode_rec_move_get(t, r->ino, r->generation, stripe, r->new_target, &mv);
	if (rc == -ENOENT || (!rc && mv.kind != LODE_MOVE_INTENT))
		return -ESTALE; /* no BEGIN, or a later run aborted it (the object may be gone) */
	if (rc)
		return rc;
	if (!may_receive(pl, r->new_target))
		return -EINVAL; /* drained meanwhile: the caller aborts */
	in.layout.targets[r->index] = r->new_target;
	in.degraded &= ~(1ull << r->index);
	in.move_seq++;
	rc = lode_rec_inode_put(t, r->ino, &in);
	if (!rc)
		rc = lode_rec_move_del(t, r->ino, r->generation, stripe, r->new_target);
	if (!rc) {
		mv = (struct lode_disk_move){.kind = LODE_MOVE_OLD, .since_ns = lode_ns_now()};
		rc = lode_rec_move_put(t, r->ino, r->generation, stripe, r->old_target, &mv);
	}
	if (!rc)
		*seq = in.move_seq;
	return rc;
}

int lode_ns_move_abort(struct lode_txn *t, const struct lode_wire_move_req *r, uint64_t *handle)
{
	struct lode_disk_move mv;
	int rc = lode_rec_move_get(t, r->ino, r->generation, r->index, r->new_target, &mv);

	*handle = 0;
	if (rc == -ENOENT)
		return 0; /* aborted twice */
	if (rc)
		return rc;
	if (mv.kind != LODE_MOVE_INTENT)
		return -EINVAL; /* an old copy goes by the orphan path, never by a mover */
	rc = lode_rec_move_del(t, r->ino, r->generation, r->index, r->new_target);
	if (!rc)
		*handle = mv.handle;
	return rc;
}

struct list_ctx {
	uint32_t kind, target; /* target 0: any; kind 0: intents and old copies */
	int64_t before_ns;
	void *out; /* lode_wire_move_entry (intents) or lode_wire_objid (old copies) */
	uint32_t max, n;
	struct lode_txn *t;
};

/* Whether the current layout of the file has the object on target: then an OLD record
 * of it is left over from a move back, and deleting the object would lose that copy. */
static bool still_named(struct lode_txn *t, const struct lode_wire_move_entry *e)
{
	struct lode_disk_inode in;
	unsigned mc;

	if (lode_rec_inode_get(t, e->ino, &in) || !S_ISREG(in.mode) ||
	    in.layout.generation != e->generation)
		return false;
	mc = in.layout.mirror_count;
	for (unsigned m = 0; m < mc; m++) {
		uint64_t i = (uint64_t)e->stripe * mc + m;

		if (i < LODE_LAYOUT_TARGETS_MAX && in.layout.targets[i] == e->target)
			return true;
	}
	return false;
}

static int list_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct list_ctx *c = arg;
	struct lode_wire_move_entry e;
	struct lode_disk_move mv;
	int rc = lode_rec_move_decode(k, klen, v, vlen, &e, &mv);

	if (rc)
		return rc;
	if ((c->kind && mv.kind != c->kind) || (c->target && e.target != c->target))
		return 0;
	if (c->kind == LODE_MOVE_OLD && (mv.since_ns > c->before_ns || still_named(c->t, &e)))
		return 0;
	if (c->n == c->max)
		return 1;
	if (c->kind != LODE_MOVE_OLD) {
		((struct lode_wire_move_entry *)c->out)[c->n++] = e;
	} else {
		struct lode_wire_objid *id = &((struct lode_wire_objid *)c->out)[c->n++];

		memset(id, 0, sizeof(*id));
		id->ino = e.ino;
		id->generation = e.generation;
		id->stripe = e.stripe;
	}
	return 0;
}

int lode_ns_move_list(struct lode_txn *t, const struct lode_wire_move_list_req *q,
		      struct lode_wire_move_entry *out, uint32_t *n)
{
	struct list_ctx c = {.kind = (q->flags & LODE_MOVE_LIST_OLD) ? 0 : LODE_MOVE_INTENT,
			     .out = out,
			     .max = q->max,
			     .t = t};
	unsigned char prefix[16];
	int rc;

	lode_be64_put(prefix, q->ino);
	lode_be64_put(prefix + 8, q->generation);
	rc = lode_kv_scan(t, LODE_DB_MOVES, q->ino ? prefix : NULL, q->ino ? sizeof(prefix) : 0,
			  NULL, 0, list_one, &c);

	if (rc < 0)
		return rc;
	*n = c.n;
	return 0;
}

int lode_ns_move_old_list(struct lode_txn *t, uint32_t target_id, int64_t before_ns,
			  struct lode_wire_objid *out, uint32_t max, uint32_t *n)
{
	struct list_ctx c = {.kind = LODE_MOVE_OLD,
			     .target = target_id,
			     .before_ns = before_ns,
			     .out = out,
			     .max = max,
			     .t = t};
	int rc = lode_kv_scan(t, LODE_DB_MOVES, NULL, 0, NULL, 0, list_one, &c);

	if (rc < 0)
		return rc;
	*n = c.n;
	return 0;
}

int lode_ns_move_old_done(struct lode_txn *t, uint32_t target_id, const struct lode_wire_objid *id)
{
	struct lode_disk_move mv;
	int rc = lode_rec_move_get(t, id->ino, id->generation, id->stripe, target_id, &mv);

	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	if (mv.kind != LODE_MOVE_OLD)
		return 0; /* an intent is its mover's */
	return lode_rec_move_del(t, id->ino, id->generation, id->stripe, target_id);
}

int lode_ns_target_forget(struct lode_txn *t, uint32_t target_id, uint64_t *forgotten)
{
	enum { BATCH = 1024 };
	struct lode_wire_objid *ids = calloc(BATCH, sizeof(*ids));
	uint64_t total = 0;
	uint32_t n;
	int rc;

	if (!ids)
		return -ENOMEM;
	for (;;) {
		/* every pending deletion, whatever its age: as if the target had done them */
		rc = lode_ns_orphan_list(t, target_id, INT64_MAX / 2, -(INT64_MAX / 2), ids, BATCH,
					 &n);
		if (rc || n == 0)
			break;
		rc = lode_ns_orphan_done(t, target_id, ids, n);
		if (rc)
			break;
		total += n;
	}
	free(ids);
	if (!rc)
		*forgotten = total;
	return rc;
}

struct users_ctx {
	uint32_t target;
	uint64_t n;
};

static int inode_uses(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct users_ctx *c = arg;
	struct lode_disk_inode in;
	unsigned n;

	(void)k, (void)klen;
	if (lode_rec_inode_decode(v, vlen, &in))
		return -EIO;
	if (!S_ISREG(in.mode))
		return 0;
	n = (unsigned)in.layout.stripe_count * in.layout.mirror_count;
	for (unsigned i = 0; i < n && i < LODE_LAYOUT_TARGETS_MAX; i++)
		if (in.layout.targets[i] == c->target)
			c->n++;
	return 0;
}

static int orphan_uses(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct users_ctx *c = arg;
	struct lode_disk_orphan o;
	uint64_t ino, generation;
	int rc = lode_rec_orphan_decode(k, klen, v, vlen, &ino, &generation, &o);

	if (rc)
		return rc;
	for (unsigned i = 0; i < LODE_LAYOUT_TARGETS_MAX; i++)
		if ((o.pending & (1ull << i)) && o.layout.targets[i] == c->target)
			c->n++;
	return 0;
}

static int move_uses(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct users_ctx *c = arg;
	struct lode_wire_move_entry e;
	struct lode_disk_move mv;
	int rc = lode_rec_move_decode(k, klen, v, vlen, &e, &mv);

	if (rc)
		return rc;
	if (e.target == c->target)
		c->n++;
	return 0;
}

int lode_ns_target_users(struct lode_txn *t, uint32_t target_id, uint64_t *copies,
			 uint64_t *pending)
{
	struct users_ctx c = {.target = target_id};
	int rc = lode_kv_scan(t, LODE_DB_INODES, NULL, 0, NULL, 0, inode_uses, &c);

	if (rc < 0)
		return rc;
	*copies = c.n;
	c.n = 0;
	rc = lode_kv_scan(t, LODE_DB_ORPHANS, NULL, 0, NULL, 0, orphan_uses, &c);
	if (rc >= 0)
		rc = lode_kv_scan(t, LODE_DB_MOVES, NULL, 0, NULL, 0, move_uses, &c);
	if (rc < 0)
		return rc;
	*pending = c.n;
	return 0;
}
