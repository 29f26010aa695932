/* SPDX-License-Identifier: MIT */
/*
 * Directory grants (docs/design.md, "Directory grants"): the MDS's side.
 *
 * A MKDIR that asks for one (LODE_WIRE_F_GRANT) gives the client that made the directory a
 * grant of it: a random token, valid LODE_GRANT_MS. While it is valid, no other client adds
 * a name to the directory, so its holder knows every name there (the ones it added) and
 * answers lookups of any other name with ENOENT itself, with no round trip. Each name the
 * holder adds there carries the token and renews the grant. A request of anyone else that
 * would add a name there ends the grant: it is renewed no more, and the request waits
 * until it has lapsed (held by the MDS, not refused), so that the holder has stopped
 * answering from what it knew before the new name exists. A holder that adds a name
 * meanwhile learns from the reply that its grant was not renewed, drops it and gives it
 * back (GRANT_RETURN): the grant has then lapsed at once, and what waited goes on. A grant
 * is never given again for a directory it ended for, nor for one that was not just made.
 *
 * The table is memory only. A restarted MDS knows no grant: for LODE_GRANT_MS after its
 * start, every name added anywhere waits for what grants of the MDS before may still be
 * valid at their holders.
 *
 * State of the writer thread: every call comes from an op's run() or done().
 */
#ifndef LODE_MDS_GRANT_H
#define LODE_MDS_GRANT_H

#include <stdbool.h>
#include <stdint.h>

struct lode_grants;

/* life_ms: how long a grant lasts from its last renewal (LODE_GRANT_MS; longer in tests);
 * fence_ms: how long after start_ms (now) every name waits for grants of an MDS before,
 * as long as their holders may still answer from them (LODE_GRANT_MS). */
int lode_grants_create(struct lode_grants **out, unsigned life_ms, unsigned fence_ms,
		       uint64_t start_ms);
void lode_grants_destroy(struct lode_grants *g);

/* A directory just made (its MKDIR committed): a grant of it, or 0 when none can be given
 * (the table is full, or no randomness). */
uint64_t lode_grants_give(struct lode_grants *g, uint64_t dir, uint64_t now_ms);

/*
 * A request would add a name in dir and carries token (0: none). Returns 0 when it may go
 * on (*renewed: the token's grant was renewed; the holder of an ended grant goes on, not
 * renewed), or the milliseconds it must wait first for another holder's grant, ended by
 * this call or an earlier one, to lapse.
 */
unsigned lode_grants_enter(struct lode_grants *g, uint64_t dir, uint64_t token, uint64_t now_ms,
			   bool *renewed);

/* The holder of dir's grant with this token dropped it (GRANT_RETURN): it has lapsed, and
 * is never renewed. Returns whether a grant with that token was there (any other token,
 * or none: nothing changes). */
bool lode_grants_return(struct lode_grants *g, uint64_t dir, uint64_t token);

/* Grants in the table (valid, or ended and not yet lapsed). */
unsigned lode_grants_count(const struct lode_grants *g);

#endif
