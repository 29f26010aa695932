/* SPDX-License-Identifier: MIT */
/* lodectl status, df, repair: the cluster as the MDS sees it, and bringing copies back. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lodectl.h"

#define GIB ((double)(1u << 30))

/* The MDS reports this many free inodes when only its map size bounds them (see
 * mds/ns_inode.c): no limit to show. */
#define FILES_UNBOUNDED UINT32_MAX

int cmd_status(struct lodectl *ctl, int argc, char **argv)
{
	struct lode_target_info *t = NULL;
	struct lodectl_scrub_peek *scrub;
	json_object *targets;
	struct lode_statfs sf;
	int n, max = 256, rc;

	if (lodectl_parse(ctl, argc, argv, NULL, 0, 0, NULL) < 0)
		return ctl->exit;
	rc = lode_statfs(ctl->client, &sf);
	if (rc)
		return lodectl_fail(ctl, rc, "cannot ask the MDS for its totals");
	for (;;) { /* as many as the cluster has */
		struct lode_target_info *nt = realloc(t, (size_t)max * sizeof(*t));

		if (!nt) {
			free(t);
			return lodectl_fail(ctl, -ENOMEM, "cannot list the targets");
		}
		t = nt;
		n = lode_targets(ctl->client, t, max);
		if (n <= max)
			break;
		max = n;
	}
	if (n < 0) {
		free(t);
		return lodectl_fail(ctl, n, "cannot list the targets");
	}
	json_add_str(ctl->out, "mds", ctl->mds_addr);
	json_add_u64(ctl->out, "targets_up", sf.targets_up);
	json_add_u64(ctl->out, "targets_total", sf.targets_total);
	json_add_u64(ctl->out, "bytes_total", sf.bytes_total);
	json_add_u64(ctl->out, "bytes_free", sf.bytes_free);
	json_add_bool(ctl->out, "insecure", sf.flags & LODE_STATFS_INSECURE);
	targets = json_object_new_array();
	json_object_object_add(ctl->out, "targets", targets);
	if (!ctl->json) {
		printf("mds %s: up, %u of %u targets up, %.1f of %.1f GiB free\n", ctl->mds_addr,
		       sf.targets_up, sf.targets_total, (double)sf.bytes_free / GIB,
		       (double)sf.bytes_total / GIB);
		if (sf.flags & LODE_STATFS_INSECURE)
			printf("security: INSECURE (the MDS runs --insecure: it checks no key)\n");
		printf("%-6s %-5s %-24s %12s %12s %9s %10s\n", "target", "state", "address",
		       "total_GiB", "free_GiB", "objects", "seen");
	}
	scrub = lodectl_scrub_peek_open(ctl);
	for (int i = 0; i < n; i++) {
		json_object *o = json_object_new_object();
		/* UINT64_MAX: not heard from since the MDS started */
		bool never = t[i].last_seen_ms == UINT64_MAX;
		char seen[32];

		json_add_u64(o, "id", t[i].id);
		json_add_str(o, "state", t[i].up ? "up" : "down");
		json_add_str(o, "address", t[i].addr);
		json_add_u64(o, "bytes_total", t[i].bytes_total);
		json_add_u64(o, "bytes_free", t[i].bytes_free);
		json_add_u64(o, "objects", t[i].objects);
		if (never)
			json_add_null(o, "last_seen_ms");
		else
			json_add_u64(o, "last_seen_ms", t[i].last_seen_ms);
		json_object_array_add(targets, o);
		if (never)
			snprintf(seen, sizeof(seen), "never");
		else if (t[i].last_seen_ms < 10000)
			snprintf(seen, sizeof(seen), "%" PRIu64 " ms ago", t[i].last_seen_ms);
		else
			snprintf(seen, sizeof(seen), "%" PRIu64 " s ago", t[i].last_seen_ms / 1000);
		if (!ctl->json)
			printf("%-6u %-5s %-24s %12.1f %12.1f %9" PRIu64 " %10s\n", t[i].id,
			       t[i].up ? "up" : "down", t[i].addr, (double)t[i].bytes_total / GIB,
			       (double)t[i].bytes_free / GIB, t[i].objects, seen);
		lodectl_scrub_peek_target(scrub, t[i].id, t[i].addr, t[i].up, o);
	}
	lodectl_scrub_peek_close(scrub); /* prints each target's scrub after the table */
	free(t);
	return 0;
}

int cmd_df(struct lodectl *ctl, int argc, char **argv)
{
	struct lode_statfs sf;
	uint64_t used_files;
	bool limited;
	char limit[32];
	int rc;

	if (lodectl_parse(ctl, argc, argv, NULL, 0, 0, NULL) < 0)
		return ctl->exit;
	rc = lode_statfs(ctl->client, &sf);
	if (rc)
		return lodectl_fail(ctl, rc, "cannot ask the MDS for its totals");
	/* statfs says total and free inodes; df says how many are in use */
	used_files = sf.files >= sf.files_free ? sf.files - sf.files_free : 0;
	limited = sf.files_free != FILES_UNBOUNDED;
	json_add_str(ctl->out, "mds", ctl->mds_addr);
	json_add_u64(ctl->out, "bytes_total", sf.bytes_total);
	json_add_u64(ctl->out, "bytes_used",
		     sf.bytes_total >= sf.bytes_free ? sf.bytes_total - sf.bytes_free : 0);
	json_add_u64(ctl->out, "bytes_free", sf.bytes_free);
	json_add_u64(ctl->out, "files", used_files);
	if (limited)
		json_add_u64(ctl->out, "files_limit", sf.files);
	else
		json_add_null(ctl->out, "files_limit");
	json_add_u64(ctl->out, "targets_up", sf.targets_up);
	json_add_u64(ctl->out, "targets_total", sf.targets_total);
	if (ctl->json)
		return 0;
	snprintf(limit, sizeof(limit), "%" PRIu64, sf.files);
	printf("%-24s %12s %12s %12s %12s %12s\n", "cluster", "size_GiB", "used_GiB", "free_GiB",
	       "files", "files_limit");
	printf("%-24s %12.1f %12.1f %12.1f %12" PRIu64 " %12s\n", ctl->mds_addr,
	       (double)sf.bytes_total / GIB,
	       (double)(sf.bytes_total >= sf.bytes_free ? sf.bytes_total - sf.bytes_free : 0) / GIB,
	       (double)sf.bytes_free / GIB, used_files, limited ? limit : "none");
	return 0;
}

struct repair_progress {
	struct lodectl_progress *p;
	uint64_t shown;
};

static void repair_step(void *arg, uint64_t done, uint64_t total)
{
	struct repair_progress *rp = arg;

	lodectl_progress_total(rp->p, total);
	if (done > rp->shown) {
		lodectl_progress_add(rp->p, done - rp->shown);
		rp->shown = done;
	}
}

int cmd_repair(struct lodectl *ctl, int argc, char **argv)
{
	struct lode_repair_result r;
	struct repair_progress rp = {0};
	char *pos[1];
	double t0, secs;
	int rc;

	if (lodectl_parse(ctl, argc, argv, NULL, 1, 1, pos) < 0)
		return ctl->exit;
	if (!lodectl_cluster_path_ok(ctl, pos[0]))
		return LODECTL_EXIT_USAGE;
	json_add_str(ctl->out, "path", pos[0]);
	t0 = lodectl_now();
	rp.p = lodectl_progress_start(ctl, "repair", 0);
	rc = lode_repair_progress(ctl->client, pos[0], &r, repair_step, &rp);
	lodectl_progress_end(rp.p);
	secs = lodectl_now() - t0;
	if (rc)
		return lodectl_fail(ctl, rc, "%s", pos[0]);
	json_add_u64(ctl->out, "copies_degraded", r.copies_degraded);
	json_add_u64(ctl->out, "copies_repaired", r.copies_repaired);
	json_add_u64(ctl->out, "bytes_copied", r.bytes_copied);
	json_add_double(ctl->out, "seconds", secs);
	if (!ctl->json)
		printf("%s: %u of %u degraded copies repaired, %" PRIu64 " bytes copied\n", pos[0],
		       r.copies_repaired, r.copies_degraded, r.bytes_copied);
	if (r.copies_repaired != r.copies_degraded)
		return lodectl_fail(ctl, -EIO,
				    "%s: %u of %u copies stay degraded (no good copy "
				    "or no target to put one on)",
				    pos[0], r.copies_degraded - r.copies_repaired,
				    r.copies_degraded);
	return 0;
}
