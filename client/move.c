/* SPDX-License-Identifier: MIT */
/*
 * liblode: moving one copy of a stripe to another target (lodectl drain and rebalance),
 * and the administrative state of targets.
 *
 * The move is repair's copy with a switch around it. The mover holds the file's write
 * lease throughout (a file being written is skipped with EBUSY and tried again later), so
 * no write or truncate can race the copy. The MDS hears of the move before the
 * destination object is written (MOVE BEGIN, an intent record) and switches the layout in
 * one transaction only if it is still what the mover read (MOVE COMMIT); the old object
 * is then deleted by its target after the orphan grace, so a reader that opened the file
 * earlier keeps reading it. A move that fails removes its destination object and drops
 * the intent; one killed half way leaves the intent, and lode_move_cleanup() of the next
 * run removes what it left.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "stripe.h"

static int move_call(struct lode_client *c, struct lode_wire_move_req *req,
		     struct lode_wire_move_rep *rep)
{
	return lode_client_mds_call(c, LODE_OP_MOVE, req, sizeof(*req), NULL, 0, rep, sizeof(*rep),
				    NULL, 0, NULL);
}

/* Removes the destination object of a move that did not happen, then forgets the move.
 * The object is removed first: an intent without an object is harmless, an object without
 * an intent would be a stray. */
static int undo(struct lode_client *c, uint64_t ino, uint64_t generation, uint32_t stripe,
		uint32_t target)
{
	struct lode_wire_objid id = {.ino = ino, .generation = generation, .stripe = stripe};
	struct lode_wire_move_req req = {.ino = ino,
					 .generation = generation,
					 .phase = LODE_MOVE_ABORT,
					 .index = stripe,
					 .new_target = target};
	struct lode_wire_move_rep rep;
	struct lode_wire_obj_rep orep;
	int rc;

	rc = lode_client_obj_call(c, target, LODE_OP_OBJ_REMOVE, &id, sizeof(id), &orep,
				  sizeof(orep));
	if (rc)
		return rc;
	return move_call(c, &req, &rep);
}

/* A good source for the stripe: the copy being moved when it is up and not degraded, else
 * another up copy that is not degraded; 0 if none. */
static uint32_t pick_source(struct lode_client *c, const struct lode_wire_layout_rep *l,
			    unsigned index)
{
	unsigned mc = l->layout.mirror_count, first = index - index % mc;

	if (!(l->degraded & (1ull << index)) &&
	    lode_client_target_is_up(c, l->layout.targets[index]))
		return l->layout.targets[index];
	for (unsigned k = first; k < first + mc; k++)
		if (k != index && !(l->degraded & (1ull << k)) &&
		    lode_client_target_is_up(c, l->layout.targets[k]))
			return l->layout.targets[k];
	return 0;
}

static int layout_get(struct lode_client *c, uint64_t ino, struct lode_wire_layout_rep *out)
{
	struct lode_wire_getattr_req req = {.ino = ino};

	return lode_client_mds_call(c, LODE_OP_LAYOUT_GET, &req, sizeof(req), NULL, 0, out,
				    sizeof(*out), NULL, 0, NULL);
}

int lode_move_copy(struct lode_client *c, uint64_t ino, unsigned index, uint32_t old_target,
		   uint32_t new_target, uint64_t *bytes)
{
	struct lode_wire_move_req req = {
	    .ino = ino, .index = index, .old_target = old_target, .new_target = new_target};
	struct lode_wire_layout_rep l, after;
	struct lode_wire_move_rep rep;
	struct lode_wire_objid id;
	uint64_t copied = 0, obj_size;
	struct lode_file *f;
	unsigned stripe;
	uint32_t src;
	char *buf;
	int rc, rc2;

	if (index >= LODE_LAYOUT_TARGETS_MAX || !old_target || !new_target ||
	    old_target == new_target)
		return -EINVAL;
	buf = malloc(LODE_CLIENT_COPY_STEP);
	if (!buf)
		return -ENOMEM;
	/* what BEGIN checks, read before the lease: between taking the lease and recording
	 * the intent (which names the lease, so that a next run can give it back) nothing
	 * but one request may pass, or a mover killed there keeps the file for the lease's
	 * whole time */
	rc = layout_get(c, ino, &l);
	if (!rc)
		rc = lode_client_targets_refresh(c);
	if (rc)
		goto out_buf;
	if (index >= (unsigned)l.layout.stripe_count * l.layout.mirror_count ||
	    l.layout.targets[index] != old_target) {
		rc = -ESTALE;
		goto out_buf;
	}
	stripe = index / l.layout.mirror_count;
	/* the exclusive lease: no writer races the copy (a file with writers: EBUSY, later) */
	rc = lode_client_ll_open(c, ino, O_WRONLY, LODE_OPEN_EXCLUSIVE, &f);
	if (rc)
		goto out_buf;
	req.handle = f->handle;
	req.generation = l.layout.generation;
	req.phase = LODE_MOVE_BEGIN;
	rc = move_call(c, &req, &rep);
	if (rc)
		goto out_close;
	/* the layout again, now that no writer can change it: the source is picked from it */
	rc = layout_get(c, ino, &l);
	if (!rc && (l.layout.generation != req.generation || l.layout.targets[index] != old_target))
		rc = -ESTALE;
	src = rc ? 0 : pick_source(c, &l, index);
	if (!rc && !src)
		rc = -EAGAIN; /* no copy to read from now */
	obj_size = lode_client_object_size(&l.layout, f->size, stripe);
	id = (struct lode_wire_objid){.ino = ino, .generation = req.generation, .stripe = stripe};
	if (!rc)
		rc = lode_client_copy_object(c, &id, src, new_target, obj_size, buf, &copied);
	if (!rc) {
		req.phase = LODE_MOVE_COMMIT;
		req.seq = rep.seq;
		rc = move_call(c, &req, &rep);
		if (rc && !layout_get(c, ino, &after) &&
		    after.layout.generation == req.generation &&
		    after.layout.targets[index] == new_target)
			rc = 0; /* the answer was lost, the switch was not (we hold the lease) */
	}
	if (rc) {
		/* nothing switched: take the destination back (if that fails too, the intent
		 * stays, and lode_move_cleanup removes it later) */
		rc2 = undo(c, ino, req.generation, stripe, new_target);
		(void)rc2;
		goto out_close;
	}
	if (bytes)
		*bytes = copied;
out_close:
	rc2 = lode_close(f);
	if (!rc)
		rc = rc2;
out_buf:
	free(buf);
	return rc;
}

int lode_move_cleanup(struct lode_client *c)
{
	struct lode_wire_move_list_req req = {.max = 256}; /* intents only, every object */
	struct lode_wire_orphan_list_rep rep;
	struct lode_wire_move_entry *e;
	uint64_t dlen = 0;
	int rc, done = 0;

	e = calloc(req.max, sizeof(*e));
	if (!e)
		return -ENOMEM;
	rc = lode_client_targets_refresh(c);
	for (;;) {
		if (rc)
			break;
		rc = lode_client_mds_call(c, LODE_OP_MOVE_LIST, &req, sizeof(req), NULL, 0, &rep,
					  sizeof(rep), e, req.max * sizeof(*e), &dlen);
		if (rc)
			break;
		if (rep.count > req.max || dlen != rep.count * sizeof(*e)) {
			rc = -EPROTO;
			break;
		}
		if (rep.count == 0)
			break;
		for (uint32_t i = 0; i < rep.count && !rc; i++) {
			rc = undo(c, e[i].ino, e[i].generation, e[i].stripe, e[i].target);
			if (!rc)
				done++;
		}
	}
	free(e);
	return rc ? rc : done;
}

int lode_target_set_admin(struct lode_client *c, uint32_t target_id, unsigned admin)
{
	struct lode_wire_target_state_req req = {.target_id = target_id, .admin = admin};
	int rc;

	if (admin > LODE_TARGET_REMOVED)
		return -EINVAL;
	rc = lode_client_mds_call(c, LODE_OP_TARGET_STATE, &req, sizeof(req), NULL, 0, NULL, 0,
				  NULL, 0, NULL);
	if (!rc)
		rc = lode_client_targets_refresh(c);
	return rc;
}
