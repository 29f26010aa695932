/* SPDX-License-Identifier: MIT */
/*
 * Orphans: the objects of deleted files, recorded when the last name goes, listed to each
 * storage target after a grace period (ORPHAN_LIST), and forgotten once every target has
 * deleted its share (ORPHAN_DONE), together with the unlinked inode they kept.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_internal.h"

int lode_ns_orphan_record(struct lode_txn *t, uint64_t ino, const struct lode_disk_inode *in)
{
	const struct lode_disk_layout *l = &in->layout;
	struct lode_disk_orphan o = {0};
	unsigned n = (unsigned)l->stripe_count * l->mirror_count;
	int rc;

	for (unsigned i = 0; i < n && i < LODE_LAYOUT_TARGETS_MAX; i++) {
		if (l->targets[i])
			o.pending |= 1ull << i;
	}
	if (!o.pending)
		return 0;
	o.unlinked_ns = lode_ns_now();
	o.layout = *l;
	rc = lode_rec_orphan_put(t, ino, l->generation, &o);
	return rc ? rc : 1;
}

struct orphan_ctx {
	uint32_t target;
	int64_t before_ns;
	struct lode_wire_objid *out;
	uint32_t max;
	uint32_t n;
};

static int orphan_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct orphan_ctx *o = arg;
	struct lode_disk_orphan rec;
	uint64_t ino, generation;
	unsigned mc;
	int rc = lode_rec_orphan_decode(k, klen, v, vlen, &ino, &generation, &rec);

	if (rc)
		return rc;
	if (rec.unlinked_ns > o->before_ns)
		return 0;
	mc = rec.layout.mirror_count ? rec.layout.mirror_count : 1;
	/* only the slots that exist: a damaged record's counts (up to 65535 each) must not make
	 * this loop run for billions of slots */
	for (unsigned s = 0; s < rec.layout.stripe_count && s * mc < LODE_LAYOUT_TARGETS_MAX; s++) {
		for (unsigned m = 0; m < mc && s * mc + m < LODE_LAYOUT_TARGETS_MAX; m++) {
			unsigned i = s * mc + m;

			if (rec.layout.targets[i] != o->target || !(rec.pending & (1ull << i)))
				continue;
			if (o->n == o->max)
				return 1;
			memset(&o->out[o->n], 0, sizeof(o->out[0]));
			o->out[o->n].ino = ino;
			o->out[o->n].generation = generation;
			o->out[o->n].stripe = s;
			o->n++;
			break;
		}
	}
	return 0;
}

int lode_ns_orphan_list(struct lode_txn *t, uint32_t target_id, int64_t now_ns, int64_t grace_ns,
			struct lode_wire_objid *out, uint32_t max, uint32_t *n)
{
	struct orphan_ctx o = {
	    .target = target_id, .before_ns = now_ns - grace_ns, .out = out, .max = max};
	uint32_t moved = 0;
	int rc;

	if (target_id == 0)
		return -EINVAL;
	rc = lode_kv_scan(t, LODE_DB_ORPHANS, NULL, 0, NULL, 0, orphan_one, &o);
	if (rc)
		return rc;
	/* and the old copies of moved stripes (ns_move.c): deleted the same way, once readers
	 * that trust a layout from before the move are done with them */
	if (o.n < max) {
		int64_t moved_before = grace_ns < LODE_NS_MOVED_GRACE_MIN_NS
					   ? now_ns - LODE_NS_MOVED_GRACE_MIN_NS
					   : o.before_ns;

		rc =
		    lode_ns_move_old_list(t, target_id, moved_before, out + o.n, max - o.n, &moved);
		if (rc)
			return rc;
	}
	*n = o.n + moved;
	return 0;
}

/* The last object of an unlinked file is gone: so goes the inode it kept (nlink 0). */
static int forget_unlinked(struct lode_txn *t, uint64_t ino, uint64_t generation)
{
	struct lode_disk_inode in;
	int rc = lode_rec_inode_get(t, ino, &in);

	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	if (in.nlink != 0 || !S_ISREG(in.mode) || in.layout.generation != generation)
		return 0;
	return lode_rec_inode_erase(t, ino);
}

int lode_ns_orphan_done(struct lode_txn *t, uint32_t target_id, const struct lode_wire_objid *ids,
			uint32_t n)
{
	for (uint32_t j = 0; j < n; j++) {
		struct lode_disk_orphan rec;
		unsigned mc;
		int rc = lode_ns_move_old_done(t, target_id, &ids[j]);

		if (!rc)
			rc = lode_rec_orphan_get(t, ids[j].ino, ids[j].generation, &rec);
		if (rc == -ENOENT)
			continue; /* acked twice: nothing left to do */
		if (rc)
			return rc;
		mc = rec.layout.mirror_count ? rec.layout.mirror_count : 1;
		for (unsigned m = 0; m < mc; m++) {
			uint64_t i = (uint64_t)ids[j].stripe * mc + m;

			if (i < LODE_LAYOUT_TARGETS_MAX && rec.layout.targets[i] == target_id)
				rec.pending &= ~(1ull << i);
		}
		if (rec.pending) {
			rc = lode_rec_orphan_put(t, ids[j].ino, ids[j].generation, &rec);
		} else {
			rc = lode_rec_orphan_del(t, ids[j].ino, ids[j].generation);
			if (!rc)
				rc = forget_unlinked(t, ids[j].ino, ids[j].generation);
		}
		if (rc)
			return rc;
	}
	return 0;
}
