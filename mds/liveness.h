/* SPDX-License-Identifier: MIT */
/*
 * lode_liveness: the MDS's two background threads for storage-target health.
 *
 * - The probe thread asks late targets (silent past LODE_PLACEMENT_LATE_MS, or suspected by
 *   a client's failed write) whether they are alive: once a second, a PING on a connection
 *   of its own. An answer makes the target fresh again; a refused or unreachable address
 *   makes it DOWN until it is heard from; a probe that times out changes nothing (a slow
 *   target is not a dead one; DOWN comes after LODE_PLACEMENT_DOWN_MS of silence).
 * - The wait thread holds mutations that could not be placed yet (-EAGAIN from placement:
 *   no target heard from yet after a start, or fewer UP than copies asked) and gives them
 *   back to the writer after a short pause, so a create rides over a target restart or the
 *   MDS's own start instead of failing; and names waiting for another client's directory
 *   grant to lapse (grant.h), each until then.
 *
 * Neither thread takes part in answering requests: heartbeats are answered on the server's
 * worker threads from memory (never behind the writer), and probing runs beside them.
 */
#ifndef LODE_MDS_LIVENESS_H
#define LODE_MDS_LIVENESS_H

#include "placement.h"
#include "writer.h"

#define LODE_LIVENESS_PROBE_MS	       1000u /* how often late targets are probed */
#define LODE_LIVENESS_PROBE_TIMEOUT_MS 2000u /* a probe not answered by then: no verdict */
#define LODE_LIVENESS_RETRY_MS	       250u  /* pause before a held mutation runs again */

struct lode_keyring;
struct lode_liveness;

/* Starts both threads; probe 0 leaves the prober out (tests of the wait alone). keys: the
 * MDS's (its probes prove them, as an OSS with keys serves nothing before that), or NULL
 * when it runs without. Returns 0 or -errno. */
int lode_liveness_start(struct lode_liveness **out, struct lode_placement *pl,
			struct lode_writer *writer, int probe, const struct lode_keyring *keys);
/* Stops both threads. Every held op gets done(op, -ESHUTDOWN) first, on the caller's
 * thread. Call before lode_writer_stop(). NULL is accepted. */
void lode_liveness_stop(struct lode_liveness *lv);

/* Hands op back to the writer (lode_writer_submit) after LODE_LIVENESS_RETRY_MS. Any
 * thread (the writer's done() included). Returns 0, or -ESHUTDOWN once stopping (op is not
 * taken: the caller answers it). */
int lode_liveness_hold(struct lode_liveness *lv, struct lode_wop *op);
/* The same after ms (ops held are handed back in due order). */
int lode_liveness_hold_ms(struct lode_liveness *lv, struct lode_wop *op, unsigned ms);

/* Hands every held op back to the writer now: what some of them waited for may be over
 * early (a grant given back, mds/grant.h). One that must still wait is held again by its
 * done(). Any thread. */
void lode_liveness_release_all(struct lode_liveness *lv);

/* Wakes the prober now (a client reported a failed write to a target). Any thread. */
void lode_liveness_kick(struct lode_liveness *lv);

#endif
