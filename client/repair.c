/* SPDX-License-Identifier: MIT */
/*
 * liblode repair: bring a file's degraded copies back from a good copy.
 *
 * The repairer holds the file's exclusive write lease (LODE_OPEN_EXCLUSIVE) for the whole
 * repair, so no write can race the copy. For each degraded copy it picks a good copy of the same
 * stripe as the source and, as the destination, the copy's own target when it is up again or else
 * the up target with the most free space that holds no other copy of that stripe. It rewrites the
 * destination object from scratch (each chunk verified against the source's checksums on
 * the way), makes it durable, and only then tells the MDS that the copy is complete.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "codec.h"
#include "stripe.h"

#define COPY_STEP LODE_CLIENT_COPY_STEP

static int obj_call(struct lode_client *c, uint32_t target, uint8_t op, const void *body,
		    uint32_t body_len, const struct iovec *data, void *reply, uint32_t reply_max,
		    void *reply_data, uint64_t reply_data_max, uint64_t *reply_data_len,
		    uint32_t *reply_len)
{
	struct lode_rpc_conn *conn;
	struct lode_call call = {
	    .opcode = op,
	    .body = body,
	    .body_len = body_len,
	    .data = data,
	    .data_iovcnt = data ? 1 : 0,
	    .reply_body = reply,
	    .reply_body_max = reply_max,
	    .reply_data = reply_data,
	    .reply_data_max = reply_data_max,
	};
	int rc = lode_client_target_conn(c, target, &conn);

	if (rc)
		return rc;
	rc = lode_rpc_call(conn, &call);
	if (!rc && reply_data_len)
		*reply_data_len = call.reply_data_len;
	if (!rc && reply_len)
		*reply_len = call.reply_body_len;
	return rc;
}

int lode_client_obj_call(struct lode_client *c, uint32_t target, uint8_t op, const void *body,
			 uint32_t body_len, void *reply, uint32_t reply_max)
{
	return obj_call(c, target, op, body, body_len, NULL, reply, reply_max, NULL, 0, NULL, NULL);
}

/* What lode_repair_progress() reports to: done counts the objects finished (copied or
 * given up on) whole, plus the bytes copied of the one under way. */
struct progress {
	lode_progress_fn fn;
	void *arg;
	uint64_t done, total;
};

static void progress_report(const struct progress *p, uint64_t extra)
{
	if (p && p->fn)
		p->fn(p->arg, p->done + extra, p->total);
}

/* Copies object `stripe` of the file from target src to target dst, verified. */
static int copy_object(struct lode_client *c, const struct lode_wire_objid *id, uint32_t src,
		       uint32_t dst, uint64_t obj_size, char *buf, uint64_t *copied,
		       const struct progress *pr)
{
	uint64_t this_copy = 0;

	struct lode_wire_obj_truncate_req tr = {.obj = *id};
	struct lode_wire_obj_rep orep;
	char rbody[sizeof(struct lode_wire_obj_read_rep) + 8 * (COPY_STEP / LODE_CHUNK_SIZE)];
	char wbody[sizeof(struct lode_wire_obj_write_req) + 8 * (COPY_STEP / LODE_CHUNK_SIZE)];
	uint64_t off;
	int rc;

	/* start from nothing: whatever the destination held is stale */
	rc = obj_call(c, dst, LODE_OP_OBJ_TRUNCATE, &tr, sizeof(tr), NULL, &orep, sizeof(orep),
		      NULL, 0, NULL, NULL);
	if (rc)
		return rc;
	for (off = 0; off < obj_size; off += COPY_STEP) {
		struct lode_wire_obj_read_req rd = {.obj = *id, .offset = off};
		struct lode_wire_obj_write_req *wr = (void *)wbody;
		const struct lode_wire_obj_read_rep *rep;
		const uint64_t *sums;
		uint64_t got = 0;
		uint32_t rlen = 0;
		struct iovec iov;

		rd.length = (uint32_t)(obj_size - off < COPY_STEP ? obj_size - off : COPY_STEP);
		rd.length = (rd.length + LODE_CHUNK_SIZE - 1) / LODE_CHUNK_SIZE * LODE_CHUNK_SIZE;
		rc = obj_call(c, src, LODE_OP_OBJ_READ, &rd, sizeof(rd), NULL, rbody, sizeof(rbody),
			      buf, rd.length, &got, &rlen);
		if (rc)
			return rc;
		rc = lode_dec_obj_read_rep(rbody, rlen, got, rd.length, &rep, &sums);
		if (rc)
			return rc;
		for (uint64_t i = 0; i < rep->nchunks; i++) {
			uint64_t n = got - i * LODE_CHUNK_SIZE;

			if (lode_chunk_sum(buf + i * LODE_CHUNK_SIZE,
					   n < LODE_CHUNK_SIZE ? n : LODE_CHUNK_SIZE) != sums[i])
				return -EBADMSG; /* the source is bad too: never spread it */
		}
		if (got == 0)
			break; /* a hole up to the end: the truncate below sets the size */
		memset(wr, 0, sizeof(*wr));
		wr->obj = *id;
		wr->offset = off;
		wr->nchunks = rep->nchunks;
		memcpy(wr + 1, sums, rep->nchunks * sizeof(uint64_t));
		iov.iov_base = buf;
		iov.iov_len = got;
		rc = obj_call(c, dst, LODE_OP_OBJ_WRITE, wbody,
			      (uint32_t)(sizeof(*wr) + rep->nchunks * sizeof(uint64_t)), &iov,
			      &orep, sizeof(orep), NULL, 0, NULL, NULL);
		if (rc)
			return rc;
		*copied += got;
		this_copy += got;
		progress_report(pr, this_copy < obj_size ? this_copy : obj_size);
		if (got < rd.length)
			break; /* the source object ends here (sparse tail) */
	}
	tr.size = obj_size;
	rc = obj_call(c, dst, LODE_OP_OBJ_TRUNCATE, &tr, sizeof(tr), NULL, &orep, sizeof(orep),
		      NULL, 0, NULL, NULL);
	if (rc)
		return rc;
	return obj_call(c, dst, LODE_OP_OBJ_FSYNC, id, sizeof(*id), NULL, &orep, sizeof(orep), NULL,
			0, NULL, NULL);
}

int lode_client_copy_object(struct lode_client *c, const struct lode_wire_objid *id, uint32_t src,
			    uint32_t dst, uint64_t obj_size, char *buf, uint64_t *copied)
{
	return copy_object(c, id, src, dst, obj_size, buf, copied, NULL);
}

/* Whether the target list (refreshed at the repair's start) has id: a layout can name a
 * target since removed from the cluster (lodectl fsck marks such copies degraded). */
static bool target_listed(struct lode_client *c, uint32_t id)
{
	bool found = false;

	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->ntargets; i++)
		if (c->targets[i].id == id)
			found = true;
	pthread_mutex_unlock(&c->lock);
	return found;
}

/* Whether the target takes new copies (neither draining nor removed). */
static bool target_active(struct lode_client *c, uint32_t id)
{
	bool active = false;

	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->ntargets; i++)
		if (c->targets[i].id == id)
			active = c->targets[i].admin == LODE_TARGET_ACTIVE;
	pthread_mutex_unlock(&c->lock);
	return active;
}

/* The destination for copy idx: its own target if up, else the up target with the most
 * free space holding no other copy of the stripe, if it is not full; 0 if none. */
static uint32_t pick_destination(struct lode_client *c, const struct lode_wire_layout *l,
				 unsigned idx)
{
	unsigned first = idx - idx % l->mirror_count;
	uint64_t best_free = 0;
	uint32_t best = 0;

	if (target_listed(c, l->targets[idx]) && lode_client_target_is_up(c, l->targets[idx]) &&
	    target_active(c, l->targets[idx]))
		return l->targets[idx];
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->ntargets; i++) {
		const struct target_slot *t = &c->targets[i];
		bool taken = false;

		if (!t->up || t->admin != LODE_TARGET_ACTIVE)
			continue; /* down, draining or removed */
		for (unsigned k = first; k < first + l->mirror_count; k++)
			if (l->targets[k] == t->id)
				taken = true;
		if (!taken && t->bytes_free >= LODE_TARGET_FULL_BYTES &&
		    (!best || t->bytes_free > best_free)) {
			best = t->id;
			best_free = t->bytes_free;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return best;
}

int lode_layout_info(struct lode_client *c, const char *path, struct lode_layout *layout,
		     uint64_t *degraded)
{
	struct lode_wire_getattr_req req;
	struct lode_wire_layout_rep rep;
	struct lode_stat st;
	int rc;

	rc = lode_lstat(c, path, &st);
	if (rc)
		return rc;
	req.ino = st.ino;
	rc = lode_client_mds_call(c, LODE_OP_LAYOUT_GET, &req, sizeof(req), NULL, 0, &rep,
				  sizeof(rep), NULL, 0, NULL);
	if (rc)
		return rc;
	memset(layout, 0, sizeof(*layout));
	layout->stripe_size = rep.layout.stripe_size;
	layout->stripe_count = rep.layout.stripe_count;
	layout->mirror_count = rep.layout.mirror_count;
	layout->generation = rep.layout.generation;
	memcpy(layout->targets, rep.layout.targets, sizeof(layout->targets));
	*degraded = rep.degraded;
	return 0;
}

int lode_repair(struct lode_client *c, const char *path, struct lode_repair_result *out)
{
	return lode_repair_progress(c, path, out, NULL, NULL);
}

int lode_repair_progress(struct lode_client *c, const char *path, struct lode_repair_result *out,
			 lode_progress_fn fn, void *arg)
{
	struct progress pr = {.fn = fn, .arg = arg};
	struct lode_repair_result res = {0};
	struct lode_wire_getattr_req greq;
	struct lode_wire_layout_rep lrep;
	struct lode_file *f;
	char *buf;
	int rc, rc2;

	/* the exclusive lease: no writer races the copies */
	for (int tries = 0;; tries++) {
		uint64_t ino;

		rc = lode_client_resolve_regular(c, path, &ino);
		if (!rc)
			rc = lode_client_ll_open(c, ino, O_WRONLY, LODE_OPEN_EXCLUSIVE, &f);
		if (rc != -ESTALE || tries == 1)
			break;
	}
	if (rc)
		return rc;
	buf = malloc(COPY_STEP);
	if (!buf) {
		rc = -ENOMEM;
		goto out_close;
	}
	greq.ino = f->ino;
	rc = lode_client_mds_call(c, LODE_OP_LAYOUT_GET, &greq, sizeof(greq), NULL, 0, &lrep,
				  sizeof(lrep), NULL, 0, NULL);
	if (!rc)
		rc = lode_client_targets_refresh(c);
	if (rc)
		goto out_free;
	for (unsigned idx = 0; idx < LODE_LAYOUT_TARGETS_MAX; idx++)
		if (lrep.degraded & (1ull << idx))
			pr.total += lode_client_object_size(&lrep.layout, f->size,
							    idx / lrep.layout.mirror_count);
	progress_report(&pr, 0);
	for (unsigned idx = 0; idx < LODE_LAYOUT_TARGETS_MAX; idx++) {
		const struct lode_wire_layout *l = &lrep.layout;
		unsigned stripe = idx / l->mirror_count, first = stripe * l->mirror_count;
		struct lode_wire_objid id = {
		    .ino = f->ino, .generation = l->generation, .stripe = stripe};
		struct lode_wire_set_copy_req sc = {.ino = f->ino, .handle = f->handle};
		uint64_t obj_size = lode_client_object_size(l, f->size, stripe);
		uint32_t src = 0, dst;

		if (!(lrep.degraded & (1ull << idx)))
			continue;
		res.copies_degraded++;
		for (unsigned k = first; k < first + l->mirror_count && !src; k++)
			if (!(lrep.degraded & (1ull << k)) &&
			    lode_client_target_is_up(c, l->targets[k]))
				src = l->targets[k];
		dst = pick_destination(c, l, idx);
		if (!src || !dst) {
			pr.done += obj_size;
			progress_report(&pr, 0);
			continue; /* no good copy or no room to put one: stays degraded */
		}
		rc2 = copy_object(c, &id, src, dst, obj_size, buf, &res.bytes_copied, &pr);
		pr.done += obj_size;
		progress_report(&pr, 0);
		if (rc2) {
			if (!rc)
				rc = rc2;
			continue;
		}
		sc.index = idx;
		sc.old_target = l->targets[idx];
		sc.new_target = dst;
		rc2 = lode_client_mds_call(c, LODE_OP_LAYOUT_SET_COPY, &sc, sizeof(sc), NULL, 0,
					   &lrep, sizeof(lrep), NULL, 0, NULL);
		if (rc2) {
			if (!rc)
				rc = rc2;
			continue;
		}
		res.copies_repaired++;
	}
	if (out)
		*out = res;
out_free:
	free(buf);
out_close:
	rc2 = lode_close(f);
	return rc ? rc : rc2;
}
