/* SPDX-License-Identifier: MIT */
/*
 * The copies of a file's stripes: LAYOUT_GET, a copy reported as missing data
 * (REPORT_COPY, which never marks a stripe's last good copy), and a repaired copy put in
 * its place (SET_COPY).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "ns_internal.h"

int lode_ns_layout_get(struct lode_txn *t, uint64_t ino, struct lode_wire_layout_rep *out)
{
	struct lode_disk_inode in;
	int rc = lode_rec_inode_get(t, ino, &in);

	if (rc)
		return rc;
	lode_rec_to_layout_rep(ino, &in, out);
	return 0;
}

/*
 * Whether copy i is the last one of its stripe not marked degraded. Writers skip degraded
 * copies, so that one holds every acknowledged byte of the stripe, and a write that failed
 * on it was acknowledged nowhere: marking it too would let readers take any copy, a stale
 * one included.
 */
static bool last_good_copy(const struct lode_disk_layout *l, uint64_t degraded, uint32_t stripe,
			   unsigned i)
{
	for (unsigned m = 0; m < l->mirror_count; m++) {
		unsigned k = stripe * l->mirror_count + m;

		if (k != i && !(degraded & (1ull << k)))
			return false;
	}
	return true;
}

int lode_ns_report_copy(struct lode_txn *t, uint64_t ino, uint64_t generation, uint32_t stripe,
			uint32_t target_id)
{
	const struct lode_disk_layout *l;
	struct lode_disk_inode in;
	int rc = lode_ns_get_file(t, ino, -ENOENT, &in);

	if (rc)
		return rc;
	l = &in.layout;
	if (l->generation != generation)
		return -ESTALE;
	if (stripe >= l->stripe_count)
		return -ENOENT;
	for (unsigned m = 0; m < l->mirror_count; m++) {
		unsigned i = stripe * l->mirror_count + m;

		if (l->targets[i] != target_id)
			continue;
		if (in.degraded & (1ull << i))
			return 0;
		if (last_good_copy(l, in.degraded, stripe, i))
			return -EBUSY;
		in.degraded |= 1ull << i;
		return lode_rec_inode_put(t, ino, &in);
	}
	return -ENOENT;
}

int lode_ns_set_copy(struct lode_txn *t, struct lode_placement *pl, uint64_t ino, uint32_t index,
		     uint32_t old_target, uint32_t new_target, struct lode_wire_layout_rep *out)
{
	struct lode_disk_layout *l;
	struct lode_disk_inode in;
	int rc = lode_ns_get_file(t, ino, -EINVAL, &in);

	if (rc)
		return rc;
	l = &in.layout;
	if (index >= (unsigned)l->stripe_count * l->mirror_count)
		return -EINVAL;
	if (l->targets[index] != old_target)
		return -ESTALE; /* someone else repaired or moved it first */
	if (!pl || !lode_placement_known(pl, new_target) ||
	    lode_placement_admin(pl, new_target) != LODE_TARGET_ACTIVE)
		return -EINVAL; /* unknown, or draining or removed: takes no new copies */
	if (lode_ns_stripe_holds(l->targets, l->mirror_count, index, new_target))
		return -EINVAL;
	l->targets[index] = new_target;
	in.degraded &= ~(1ull << index);
	in.ctime_ns = lode_ns_now();
	rc = lode_rec_inode_put(t, ino, &in);
	if (rc)
		return rc;
	lode_rec_to_layout_rep(ino, &in, out);
	return 0;
}
