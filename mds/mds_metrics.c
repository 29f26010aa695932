/* SPDX-License-Identifier: MIT */
/*
 * The MDS's own metrics (docs/metrics.md): its storage targets as the placement table knows
 * them (state, capacity, free space, objects, last heartbeat), the sizes of the writer's group
 * commits, and the copies reported degraded or moved by repair.
 *
 * Degraded copies are counted twice: as events, when their transaction commits (reports,
 * repairs), and as gauges of what is degraded now (files and copies). The gauges need a
 * scan of every inode: it runs in an LMDB read transaction (writers go on), from the
 * scraping thread, once every DEGRADED_SCAN_MS or, after a copy was reported or repaired,
 * once a second at most; scrapes in between repeat its result.
 * Everything else here is read from memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "handlers.h"
#include "loop.h"
#include "metrics.h"
#include "mds_spec.h"
#include "placement.h"
#include "records.h"
#include "store.h"
#include "writer.h"

#define DEGRADED_SCAN_MS 30000

struct degraded_count {
	uint64_t files, copies;
};

static int degraded_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct degraded_count *d = arg;
	struct lode_disk_inode in;
	unsigned copies;
	uint64_t mask;

	(void)k;
	(void)klen;
	if (lode_rec_inode_decode(v, vlen, &in))
		return 0; /* a damaged record is the store's business, not a metric's */
	if (!S_ISREG(in.mode) || !in.degraded)
		return 0;
	copies = (unsigned)in.layout.stripe_count * in.layout.mirror_count;
	mask = copies >= 64 ? ~0ull : (1ull << copies) - 1;
	if (in.degraded & mask) {
		d->files++;
		d->copies += (uint64_t)__builtin_popcountll(in.degraded & mask);
	}
	return 0;
}

/* What is degraded now: a scan at most every DEGRADED_SCAN_MS. 0, or -errno (no figure). */
static int degraded_now(struct lode_mds *m, struct degraded_count *out)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct degraded_count last;
	static uint64_t last_ms, last_events;
	static int last_rc = -EAGAIN;
	uint64_t now = lode_now_ms();
	uint64_t events = __atomic_load_n(&m->copy_reports, __ATOMIC_RELAXED) +
			  __atomic_load_n(&m->copies_moved, __ATOMIC_RELAXED);

	pthread_mutex_lock(&lock);
	/* again after DEGRADED_SCAN_MS, or sooner (a second at least) once a copy was reported
	 * or repaired: what changes the figure most shows at the next scrape */
	if (!last_ms || now - last_ms >= DEGRADED_SCAN_MS ||
	    (events != last_events && now - last_ms >= 1000)) {
		last_events = events;
		struct degraded_count d = {0};
		struct lode_txn t;

		last_rc = lode_store_read_begin(m->st, &t);
		if (!last_rc) {
			last_rc =
			    lode_kv_scan(&t, LODE_DB_INODES, NULL, 0, NULL, 0, degraded_one, &d);
			lode_store_abort(&t);
		}
		if (!last_rc)
			last = d;
		last_ms = now;
	}
	*out = last;
	pthread_mutex_unlock(&lock);
	return last_rc;
}

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
	struct lode_store_stats ss;

	collect_targets(m, b);

	lode_writer_stats(m->writer, &ws);
	lode_metrics_family(b, "lode_mds_commit_batch_size", "histogram",
			    "Mutations per group commit (one durable LMDB transaction).");
	lode_metrics_histogram(b, "lode_mds_commit_batch_size", NULL, lode_writer_batch_bounds,
			       LODE_WRITER_BATCH_BOUNDS, ws.batch_sizes, (double)ws.ops);
	lode_metrics_family(
	    b, "lode_mds_commits_written_total", "counter",
	    "Group commits that changed the database (a batch that changed nothing, such as "
	    "a CLOSE without commit, writes nothing).");
	lode_metrics_sample_u64(b, "lode_mds_commits_written_total", NULL, ws.written);
	lode_metrics_family(b, "lode_mds_syncs_total", "counter",
			    "Syncs that made commits durable: one per group commit, except that "
			    "commits of lazy requests only share the next one. Each is one "
			    "fdatasync of the commit log, or a checkpoint.");
	lode_metrics_sample_u64(b, "lode_mds_syncs_total", NULL, ws.syncs);
	lode_store_stats(m->st, &ss);
	lode_metrics_family(b, "lode_mds_log_syncs_total", "counter",
			    "Syncs that were one fdatasync of the commit log.");
	lode_metrics_sample_u64(b, "lode_mds_log_syncs_total", NULL, ss.log_syncs);
	lode_metrics_family(b, "lode_mds_checkpoints_total", "counter",
			    "Checkpoints: the data file and the sync record synced (two "
			    "fdatasyncs), after which the commit log starts over; at open, every "
			    "128 commits or 2 s, when the log is half full, and at shutdown.");
	lode_metrics_sample_u64(b, "lode_mds_checkpoints_total", NULL, ss.checkpoints);
	lode_metrics_family(b, "lode_mds_store_sync_failed", "gauge",
			    "1 once a sync of the store failed: the MDS takes no more changes "
			    "until restarted (its log says why).");
	lode_metrics_sample_u64(b, "lode_mds_store_sync_failed", NULL, ws.failed != 0);

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
	lode_metrics_family(b, "lode_mds_dir_grants_total", "counter",
			    "Directory grants given to the clients that made the directories.");
	lode_metrics_sample_u64(b, "lode_mds_dir_grants_total", NULL,
				__atomic_load_n(&m->grants_given, __ATOMIC_RELAXED));
	lode_metrics_family(b, "lode_mds_dir_grant_waits_total", "counter",
			    "Names held until another client's directory grant had lapsed.");
	lode_metrics_sample_u64(b, "lode_mds_dir_grant_waits_total", NULL,
				__atomic_load_n(&m->grant_waits, __ATOMIC_RELAXED));
	lode_metrics_family(b, "lode_mds_dir_grants_returned_total", "counter",
			    "Directory grants given back by holders told they had ended.");
	lode_metrics_sample_u64(b, "lode_mds_dir_grants_returned_total", NULL,
				__atomic_load_n(&m->grants_returned, __ATOMIC_RELAXED));

	struct degraded_count d;

	if (!degraded_now(m, &d)) {
		lode_metrics_family(b, "lode_mds_degraded_files", "gauge",
				    "Files with at least one degraded copy (from a scan of every "
				    "inode, at most every 30 s).");
		lode_metrics_sample_u64(b, "lode_mds_degraded_files", NULL, d.files);
		lode_metrics_family(b, "lode_mds_degraded_copies", "gauge",
				    "Copies marked degraded, waiting for a repair (same scan).");
		lode_metrics_sample_u64(b, "lode_mds_degraded_copies", NULL, d.copies);
	}
}
