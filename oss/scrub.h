/* SPDX-License-Identifier: MIT */
/*
 * The OSS's scrub: on demand (OBJ_SCRUB from `lodectl scrub`), a thread of its own reads
 * every object of this target with the store's ordinary reads and verifies each chunk
 * against its stored checksum, at most `rate` bytes a second. A copy with a bad chunk is
 * reported to the MDS (SCRUB_REPORT), which marks it degraded as a reader's report would;
 * repairing it is the client's work (lode_repair, `lodectl scrub --repair`).
 *
 * Progress lives in memory (OBJ_SCRUB_STATUS); the result of the last scrub that ended is
 * also kept in DATA/scrub.last, so an OSS that restarts still tells it.
 */
#ifndef LODE_OSS_SCRUB_H
#define LODE_OSS_SCRUB_H

#include <stdint.h>

#include "objstore.h"
#include "wire_spec.h"

struct lode_oss;
struct lode_oss_scrub;

/* A scrubber for st, reporting to the MDS at mds_addr with oss's key and target id (both
 * read when a scrub runs), keeping each result in data_dir/scrub.last (NULL: nowhere) and
 * starting from the one found there. Starts no thread. Returns 0 or -errno. */
int lode_oss_scrub_create(struct lode_oss_scrub **out, struct lode_objstore *st,
			  struct lode_oss *oss, const char *mds_addr, const char *data_dir);
/* Cancels a running scrub, waits for its thread and frees s. NULL is accepted. */
void lode_oss_scrub_destroy(struct lode_oss_scrub *s);

/* Starts a scrub reading at most rate bytes/s (0: unthrottled). -EBUSY if one runs. Any
 * thread; returns at once. */
int lode_oss_scrub_start(struct lode_oss_scrub *s, uint64_t rate);
/* Asks a running scrub to stop (its result then says cancelled); nothing if none runs. */
void lode_oss_scrub_cancel(struct lode_oss_scrub *s);
/* The current or last scrub: *st, and its first min(max, found) bad objects in bad[] (room
 * for max), st->count of them. Any thread. */
void lode_oss_scrub_status(struct lode_oss_scrub *s, struct lode_wire_scrub_status *st,
			   struct lode_wire_scrub_bad *bad, uint32_t max);

#endif
