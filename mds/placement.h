/* SPDX-License-Identifier: MIT */
/*
 * lode_placement: the in-memory table of storage targets and the choice of targets for a
 * new file's layout.
 *
 * The durable part (uuid -> target id, address) lives in the targets db and is written by
 * lode_placement_register_txn() in the writer's transaction; the table is updated after
 * that transaction commits (lode_placement_update), so it never knows a target id that
 * is not durable. Health (capacity, last heard from, known down) is memory only.
 *
 * Liveness is not load. A target is one of:
 * - fresh: heard from (heartbeat, registration, or an answered probe) within late_ms;
 * - late: silent for longer (or a client reported a failed write to it), but not known
 *   down. It is still UP and still placed on (a busy OSS or a busy MDS delays heartbeats;
 *   that is no reason to fail creates), and the MDS probes it (mds/liveness.c);
 * - DOWN: known down. Never heard from since the MDS started, or a probe found nothing
 *   listening at its address (each until it is heard from again), or silent for down_ms,
 *   a much longer window.
 * Placement prefers fresh targets and takes late ones when the fresh are too few.
 *
 * All functions are thread-safe (one mutex; placement is not on the hot path). Times are
 * monotonic milliseconds passed in by the caller, so tests can drive the clock.
 */
#ifndef LODE_MDS_PLACEMENT_H
#define LODE_MDS_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"
#include "wire_spec.h"

#define LODE_PLACEMENT_LATE_MS	    5000u  /* silent this long: late (still UP), probed */
#define LODE_PLACEMENT_DOWN_MS	    30000u /* default: silent this long, DOWN */
#define LODE_PLACEMENT_AUTO_STRIPES 8u	   /* stripe_count 0: all UP targets, at most this */

struct lode_placement;

struct lode_placement_target {
	uint32_t target_id;
	uint32_t state; /* LODE_TARGET_UP / LODE_TARGET_DOWN */
	uint64_t bytes_total;
	uint64_t bytes_free;
	uint64_t objects;
	uint64_t last_seen_ms; /* age: ms since last heard from (UINT64_MAX: never) */
	uint32_t late;	       /* 1: UP but silent past late_ms */
	uint16_t admin;	       /* LODE_TARGET_ACTIVE, _DRAINING, _REMOVED */
	uint16_t addr_len;
	char addr[LODE_ADDR_MAX + 1]; /* NUL-terminated too */
};

/* down_ms 0 means LODE_PLACEMENT_DOWN_MS; late_ms is LODE_PLACEMENT_LATE_MS, or down_ms if
 * that is shorter. Returns 0 or -ENOMEM. */
int lode_placement_create(struct lode_placement **out, unsigned down_ms);
void lode_placement_destroy(struct lode_placement *pl);
/* Loads every target of the targets db (all DOWN). Returns 0 or -errno. */
int lode_placement_load(struct lode_placement *pl, struct lode_txn *t);

/* Durable half of TARGET_REGISTER, in a write txn: the uuid keeps its id (a new uuid gets
 * the next one) and the address is updated. -ENOSPC past LODE_TARGETS_MAX targets. */
int lode_placement_register_txn(struct lode_txn *t, const uint8_t uuid[16], const char *addr,
				uint16_t addr_len, uint64_t bytes_total, uint64_t bytes_free,
				uint32_t *target_id);
/* Administrative state (lodectl drain, target remove): durable half, in a write txn
 * (-ENOENT for an unknown id), and memory half after commit. lode_placement_admin answers
 * the state, or -ENOENT. Placement takes only ACTIVE targets. */
int lode_placement_admin_txn(struct lode_txn *t, uint32_t target_id, uint16_t admin);
void lode_placement_set_admin(struct lode_placement *pl, uint32_t target_id, uint16_t admin);
int lode_placement_admin(struct lode_placement *pl, uint32_t target_id);
/* Whether target_id is known and UP now. */
bool lode_placement_is_up(struct lode_placement *pl, uint32_t target_id, uint64_t now_ms);
/* The id the uuid has, or -ENOENT (a target never registered). */
int lode_placement_lookup_txn(struct lode_txn *t, const uint8_t uuid[16], uint32_t *target_id);
/* Whether target_id is UP at an address other than addr: its holder may still be alive
 * there, so another process registering as that target from addr (a copied data directory)
 * must wait until the liveness checks find the holder gone. */
bool lode_placement_held_elsewhere(struct lode_placement *pl, uint32_t target_id, const char *addr,
				   uint16_t addr_len, uint64_t now_ms, char *holder,
				   size_t holder_len);
/* Memory half, after commit: adds or updates the target and marks it heard from now. */
int lode_placement_update(struct lode_placement *pl, uint32_t target_id, const char *addr,
			  uint16_t addr_len, uint64_t bytes_total, uint64_t bytes_free,
			  uint64_t now_ms);
/* TARGET_HEARTBEAT. Returns 0 or -ENOENT for an unknown target. */
int lode_placement_heartbeat(struct lode_placement *pl, uint32_t target_id, uint64_t bytes_total,
			     uint64_t bytes_free, uint64_t objects, uint64_t now_ms);
/* The target answered a probe: alive now (its capacity is left as it was). */
void lode_placement_alive(struct lode_placement *pl, uint32_t target_id, uint64_t now_ms);
/* Known down until heard from again: nothing listens at its address. Returns 1 if that
 * made an UP target DOWN, else 0. */
int lode_placement_mark_down(struct lode_placement *pl, uint32_t target_id);
/* A client's write to the target failed: it counts as late (placed on only when the fresh
 * are too few, and probed) until heard from again. */
void lode_placement_suspect(struct lode_placement *pl, uint32_t target_id);

/* A target to probe: late (or suspected) and not known down. */
struct lode_placement_probe {
	uint32_t target_id;
	char addr[LODE_ADDR_MAX + 1];
};
/* Copies up to max late targets into out; returns how many. */
unsigned lode_placement_late(struct lode_placement *pl, uint64_t now_ms,
			     struct lode_placement_probe *out, unsigned max);

/* Copies up to max targets (in id order) into out; *n gets the number copied. */
void lode_placement_list(struct lode_placement *pl, uint64_t now_ms,
			 struct lode_placement_target *out, unsigned max, unsigned *n);
/* Sums over all targets (capacity counts UP targets only). */
void lode_placement_totals(struct lode_placement *pl, uint64_t now_ms, uint64_t *bytes_total,
			   uint64_t *bytes_free, uint32_t *up, uint32_t *count);
/* 1 if target_id is a known target, else 0. */
int lode_placement_known(struct lode_placement *pl, uint32_t target_id);
/* How many targets the cluster has (registered ever, whatever their state). */
unsigned lode_placement_count(struct lode_placement *pl);

/*
 * Chooses targets for a new layout: stripe i, mirror m goes to
 * targets[i * mirror_count + m]. stripe_count 0 means all usable targets, at most
 * LODE_PLACEMENT_AUTO_STRIPES; *stripes_out gets the count used. Usable are the fresh
 * targets with space, or, when they are fewer than the copies asked, every UP target (late
 * included) with space. They are taken most free space first, starting one further on each
 * call so consecutive files start on different targets; the mirrors of one stripe are
 * always on distinct targets, and targets repeat across stripes only when there are fewer
 * than stripe_count * mirror_count of them. Entries past the layout are zeroed (all
 * LODE_LAYOUT_TARGETS_MAX). mirror_count 0 means automatic: 2 when at least two targets
 * are UP, else 1; the count used is returned in *mirrors_out.
 * Returns 0 or:
 * - -EAGAIN: fewer targets UP than copies asked (none heard from yet after a start, or
 *   known down); may pass once targets come back, the caller retries for a while;
 * - -EINVAL: more copies than the cluster has targets, or more slots than a layout holds;
 * - -ENOSPC: enough targets UP, but too few of them have space (under
 *   LODE_TARGET_FULL_BYTES free).
 */
int lode_placement_choose(struct lode_placement *pl, uint64_t now_ms, uint16_t stripe_count,
			  uint16_t mirror_count, uint16_t *stripes_out, uint16_t *mirrors_out,
			  uint32_t *targets);

#endif
