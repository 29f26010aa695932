/* SPDX-License-Identifier: MIT */
/*
 * Identity bound to a client group (proto/net/auth.h: a node holding client group NAME's
 * key proves it is of NAME). The MDS's configuration says what each group may claim as its
 * callers' credentials, and every request of a group's connection is held to it before any
 * permission check: the uid and gid it sends must lie in the group's ranges (else EACCES),
 * and supplementary groups outside the gid range are dropped; or its callers are squashed:
 * root to nobody (uid and gid 0 become the anonymous ids, group 0 is dropped), or all of
 * them to nobody. A group the MDS has no rule for is refused (fail closed). Plain client
 * keys and admins are not bound; a site that binds identities gives its nodes group keys
 * only.
 *
 * A rule, as `--client-group` gives it:  NAME:squash=root | NAME:squash=all |
 * NAME:uids=LO-HI[,gids=LO-HI][,squash=root]   (root squash applies first, then ranges).
 */
#ifndef LODE_MDS_IDENTITY_H
#define LODE_MDS_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

#include "wire_spec.h"

#define LODE_IDENTITY_RULES_MAX 64
#define LODE_ANON_ID		65534u /* nobody / nogroup */

enum lode_squash { LODE_SQUASH_NONE, LODE_SQUASH_ROOT, LODE_SQUASH_ALL };

struct lode_identity_rule {
	char group[32];
	enum lode_squash squash;
	int ranged; /* uids/gids below apply */
	uint32_t uid_lo, uid_hi, gid_lo, gid_hi;
};

struct lode_identity {
	unsigned n;
	struct lode_identity_rule rule[LODE_IDENTITY_RULES_MAX];
};

/* Adds the rule spec to id. Returns 0, or -EINVAL (-EEXIST for a group given twice, -ENOSPC
 * past LODE_IDENTITY_RULES_MAX) with a one-line reason in why. */
int lode_identity_add(struct lode_identity *id, const char *spec, char *why, size_t why_len);

/*
 * Holds cred, a request's credentials from a connection of client group `group`, to its
 * rule: rewrites it (squash, dropped groups) and returns 0, or returns -EACCES with the
 * reason in why (an unknown group, a uid or gid outside the ranges). group "" (not a group
 * key): 0, nothing changed. id may be NULL (no rules).
 */
int lode_identity_apply(const struct lode_identity *id, const char *group,
			struct lode_wire_cred *cred, char *why, size_t why_len);

#endif
