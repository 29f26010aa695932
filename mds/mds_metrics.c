/* SPDX-License-Identifier: MIT */
/*
 * The MDS's own metrics (docs/metrics.md): its storage targets as the placement table knows
 * them (state, capacity, free space, objects, last heartbeat), the sizes of the writer's group
 * commits, and the copies reported degraded or moved by repair.
 *
 * Degraded copies are counted as events, when their transaction commits, not as a gauge: the
 * number degraded now is a bit per copy in every inode, and knowing it would take a scan of
 * the whole namespace. Everything here is read from memory; nothing touches LMDB.
 */
#include <stdio.h>
#include <stdlib.h>

#include "handlers.h"
#include "loop.h"
#include "metrics.h"
#include "placement.h"
#include "writer.h"

static void target_labels(const struct lode_placement_target *t, char *out, size_t len)
{
	char id[16];
	const char *kv[4] = {"target", id, "addr", t->addr};

	snprintf(id, sizeof(id), "%u", t->target_id);
	lode_metrics_labels(out, len, 2, kv);
}

static void collect_targets(struct lode_mds *m, struct lode_metrics_buf *b)
{
	struct lode_placement_target *list = calloc(LODE_TARGETS_MAX, sizeof(*list));
	unsigned n = 0, up = 0;
	char l[LODE_ADDR_MAX * 2 + 64];

	if (!list)
		return; /* the next scrape will have them */
	lode_placement_list(m->pl, lode_now_ms(), list, LODE_TARGETS_MAX, &n);
	for (unsigned i = 0; i < n; i++)
		up += list[i].state == LODE_TARGET_UP;
	lode_metrics_family(b, "lode_mds_targets", "gauge", "Storage targets known, by state.");
	lode_metrics_sample_u64(b, "lode_mds_targets", "state=\"up\"", up);
	lode_metrics_sample_u64(b, "lode_mds_targets", "state=\"down\"", n - up);

	lode_metrics_family(b, "lode_mds_target_up", "gauge",
			    "1 if the target was heard from within the target timeout, else 0.");
	for (unsigned i = 0; i < n; i++) {
		target_labels(&list[i], l, sizeof(l));
		lode_metrics_sample_u64(b, "lode_mds_target_up", l,
					list[i].state == LODE_TARGET_UP);
	}
	lode_metrics_family(b, "lode_mds_target_capacity_bytes", "gauge",
			    "Size of the target's file system, as it last reported.");
	for (unsigned i = 0; i < n; i++) {
		target_labels(&list[i], l, sizeof(l));
		lode_metrics_sample_u64(b, "lode_mds_target_capacity_bytes", l,
					list[i].bytes_total);
	}
	lode_metrics_family(b, "lode_mds_target_free_bytes", "gauge",
			    "Free space on the target's file system, as it last reported.");
	for (unsigned i = 0; i < n; i++) {
		target_labels(&list[i], l, sizeof(l));
		lode_metrics_sample_u64(b, "lode_mds_target_free_bytes", l, list[i].bytes_free);
	}
	lode_metrics_family(b, "lode_mds_target_objects", "gauge",
			    "Objects on the target, as it last reported.");
	for (unsigned i = 0; i < n; i++) {
		target_labels(&list[i], l, sizeof(l));
		lode_metrics_sample_u64(b, "lode_mds_target_objects", l, list[i].objects);
	}
	lode_metrics_family(b, "lode_mds_target_last_seen_seconds", "gauge",
			    "Seconds since the target was last heard from (absent: never, since "
			    "this MDS started).");
	for (unsigned i = 0; i < n; i++) {
		if (list[i].last_seen_ms == UINT64_MAX)
			continue;
		target_labels(&list[i], l, sizeof(l));
		lode_metrics_sample(b, "lode_mds_target_last_seen_seconds", l,
				    (double)list[i].last_seen_ms / 1e3);
	}
	free(list);
}

void lode_mds_metrics_collect(void *arg, struct lode_metrics_buf *b)
{
	struct lode_mds *m = arg;
	struct lode_writer_stats ws;

	collect_targets(m, b);

	lode_writer_stats(m->writer, &ws);
	lode_metrics_family(b, "lode_mds_commit_batch_size", "histogram",
			    "Mutations per group commit (one durable LMDB transaction).");
	lode_metrics_histogram(b, "lode_mds_commit_batch_size", NULL, lode_writer_batch_bounds,
			       LODE_WRITER_BATCH_BOUNDS, ws.batch_sizes, (double)ws.ops);

	lode_metrics_family(b, "lode_mds_copy_reports_total", "counter",
			    "Copies reported failed or corrupt and marked degraded (a copy "
			    "reported again counts again).");
	lode_metrics_sample_u64(b, "lode_mds_copy_reports_total", NULL,
				__atomic_load_n(&m->copy_reports, __ATOMIC_RELAXED));
	lode_metrics_family(
	    b, "lode_mds_copies_repaired_total", "counter",
	    "Copies rebuilt on another target and switched in the layout (repair).");
	lode_metrics_sample_u64(b, "lode_mds_copies_repaired_total", NULL,
				__atomic_load_n(&m->copies_moved, __ATOMIC_RELAXED));
}
