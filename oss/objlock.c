/* SPDX-License-Identifier: MIT */
/*
 * Range locks on objects: the OSS's per-object serialization of writes.
 *
 * Why. A write stores its data, then its chunks' checksums, as two separate I/Os, and a
 * write that covers part of a chunk merges into the bytes already there (objio.c). Two
 * writes to the same chunk running at once (two clients writing one file, N-to-1) could
 * interleave those steps: data of one with the checksum of the other (a torn chunk that
 * reads as corrupt forever), or two merges each keeping the other's old bytes (a lost
 * update). So every write, and every truncate, holds the chunks it touches from before its
 * first I/O until it is answered: on a chain head that includes the forward to the other
 * copies, so overlapping writes reach every copy in the head's order and mirrors cannot
 * diverge (the ordering chained replication promises). A read that asks for bytes and
 * checksums of one moment (LODE_OBJ_READ_HELD) holds its chunks the same way while it reads.
 *
 * Cost. Writes to disjoint chunk ranges never wait: a single writer's pipelined pieces of
 * one object, and N-to-1 writers of disjoint chunk-aligned ranges, go on as before; the
 * price is one uncontended mutex and a short list walk per write. Only writes that share a
 * chunk queue, in arrival order.
 *
 * Threads. The table is shared by every worker; a waiting request is resumed on its own
 * worker's loop (lode_loop_post), never on the thread that released the range.
 */
#include <stdlib.h>

#include "objstore_impl.h"

static unsigned range_bucket(const struct lode_wire_objid *id)
{
	uint64_t h =
	    id->ino * 0x9e3779b97f4a7c15ull ^ ((uint64_t)id->stripe << 32) ^ id->generation;

	return (unsigned)((h * 0xff51afd7ed558ccdull) >> 58) % RANGE_BUCKETS;
}

static bool same_obj(const struct lode_wire_objid *a, const struct lode_wire_objid *b)
{
	return a->ino == b->ino && a->generation == b->generation && a->stripe == b->stripe;
}

static bool overlaps(const struct lode_obj_range *a, const struct lode_obj_range *b)
{
	return same_obj(&a->id, &b->id) && a->first < b->end && b->first < a->end;
}

/* Whether r may run now: no held range and no earlier waiter of the bucket overlaps it
 * (earlier waiters go first, so a stream of small writes cannot starve a large one). */
static bool may_run(const struct range_bucket *b, const struct lode_obj_range *r)
{
	for (const struct lode_obj_range *h = b->held; h; h = h->next)
		if (overlaps(h, r))
			return false;
	for (const struct lode_obj_range *w = b->waiting; w && w != r; w = w->next)
		if (overlaps(w, r))
			return false;
	return true;
}

bool lode_objstore_range_lock(struct lode_objstore *st, struct lode_obj_range *r)
{
	struct range_bucket *b = &st->ranges[range_bucket(&r->id)];
	struct lode_obj_range **pp;
	bool now;

	r->next = NULL;
	pthread_mutex_lock(&b->lock);
	now = may_run(b, r);
	if (now) {
		r->next = b->held;
		b->held = r;
	} else {
		for (pp = &b->waiting; *pp; pp = &(*pp)->next)
			;
		*pp = r;
	}
	pthread_mutex_unlock(&b->lock);
	return now;
}

static void granted(void *arg)
{
	struct lode_obj_range *r = arg;

	r->granted(r);
}

void lode_objstore_range_unlock(struct lode_objstore *st, struct lode_obj_range *r)
{
	struct range_bucket *b = &st->ranges[range_bucket(&r->id)];
	struct lode_obj_range **pp, *go = NULL, **go_tail = &go;

	pthread_mutex_lock(&b->lock);
	for (pp = &b->held; *pp != r; pp = &(*pp)->next)
		;
	*pp = r->next;
	/* wake, in order, every waiter that no held range (nor earlier waiter) blocks now */
	pp = &b->waiting;
	while (*pp) {
		struct lode_obj_range *w = *pp;

		if (!overlaps(w, r) || !may_run(b, w)) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		w->next = b->held;
		b->held = w;
		*go_tail = w;
		go_tail = &w->next_go;
		w->next_go = NULL;
	}
	pthread_mutex_unlock(&b->lock);
	while (go) {
		struct lode_obj_range *w = go;

		go = w->next_go;
		lode_loop_post(w->loop, granted, w);
	}
}
