/* SPDX-License-Identifier: MIT */
/* Client groups' identity rules (identity.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "identity.h"

/* "LO-HI" with LO <= HI, both below 2^32 - 1 (the kernel's invalid id). */
static int parse_range(const char *s, size_t len, uint32_t *lo, uint32_t *hi)
{
	char buf[32], *end;
	unsigned long long a, b;

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (buf[0] < '0' || buf[0] > '9')
		return -EINVAL;
	a = strtoull(buf, &end, 10);
	if (*end != '-' || end[1] < '0' || end[1] > '9')
		return -EINVAL;
	b = strtoull(end + 1, &end, 10);
	if (*end || a > b || b >= UINT32_MAX)
		return -EINVAL;
	*lo = (uint32_t)a;
	*hi = (uint32_t)b;
	return 0;
}

int lode_identity_add(struct lode_identity *id, const char *spec, char *why, size_t why_len)
{
	struct lode_identity_rule r = {0};
	const char *colon = strchr(spec, ':'), *p;
	int have_uids = 0, have_gids = 0;

	if (!colon || (size_t)(colon - spec) >= sizeof(r.group)) {
		snprintf(why, why_len,
			 "client group rule '%s': want NAME:squash=root|all or "
			 "NAME:uids=LO-HI[,gids=LO-HI][,squash=root]",
			 spec);
		return -EINVAL;
	}
	memcpy(r.group, spec, (size_t)(colon - spec));
	if (!lode_group_name_ok(r.group)) {
		snprintf(why, why_len,
			 "client group rule '%s': '%s' is not a group name (1 to 31 of a-z, 0-9, "
			 "'_' and '-')",
			 spec, r.group);
		return -EINVAL;
	}
	for (p = colon + 1; *p;) {
		const char *end = strchr(p, ','), *eq = strchr(p, '=');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int bad = !eq || eq > p + len;

		if (!bad && !strncmp(p, "squash=", 7)) {
			if (len == 11 && !strncmp(p + 7, "root", 4))
				r.squash = LODE_SQUASH_ROOT;
			else if (len == 10 && !strncmp(p + 7, "all", 3))
				r.squash = LODE_SQUASH_ALL;
			else
				bad = 1;
		} else if (!bad && !strncmp(p, "uids=", 5)) {
			bad = have_uids++ || parse_range(p + 5, len - 5, &r.uid_lo, &r.uid_hi);
		} else if (!bad && !strncmp(p, "gids=", 5)) {
			bad = have_gids++ || parse_range(p + 5, len - 5, &r.gid_lo, &r.gid_hi);
		} else {
			bad = 1;
		}
		if (bad) {
			snprintf(why, why_len,
				 "client group rule '%s': '%.*s' is not squash=root, squash=all, "
				 "uids=LO-HI or gids=LO-HI (once each)",
				 spec, (int)len, p);
			return -EINVAL;
		}
		p += len + (end ? 1 : 0);
	}
	if (r.squash == LODE_SQUASH_NONE && !have_uids) {
		snprintf(why, why_len,
			 "client group rule '%s' binds nothing: give squash= or uids=", spec);
		return -EINVAL;
	}
	if (r.squash == LODE_SQUASH_ALL && (have_uids || have_gids)) {
		snprintf(why, why_len, "client group rule '%s': squash=all leaves no ids to range",
			 spec);
		return -EINVAL;
	}
	if (have_uids) {
		r.ranged = 1;
		if (!have_gids) { /* the gids follow the uids unless given */
			r.gid_lo = r.uid_lo;
			r.gid_hi = r.uid_hi;
		}
	}
	for (unsigned i = 0; i < id->n; i++)
		if (!strcmp(id->rule[i].group, r.group)) {
			snprintf(why, why_len, "client group %s has two rules", r.group);
			return -EEXIST;
		}
	if (id->n == LODE_IDENTITY_RULES_MAX) {
		snprintf(why, why_len, "more than %d client group rules", LODE_IDENTITY_RULES_MAX);
		return -ENOSPC;
	}
	id->rule[id->n++] = r;
	return 0;
}

int lode_identity_apply(const struct lode_identity *id, const char *group, struct lode_wire_cred *c,
			char *why, size_t why_len)
{
	const struct lode_identity_rule *r = NULL;
	uint32_t kept = 0;

	if (!group[0])
		return 0;
	for (unsigned i = 0; id && i < id->n && !r; i++)
		if (!strcmp(id->rule[i].group, group))
			r = &id->rule[i];
	if (!r) {
		snprintf(why, why_len,
			 "client group %.31s has no rule on this MDS (--client-group)", group);
		return -EACCES;
	}
	if (r->squash == LODE_SQUASH_ALL) {
		c->uid = c->gid = LODE_ANON_ID;
		c->ngroups = 0;
		memset(c->groups, 0, sizeof(c->groups));
		return 0;
	}
	if (r->squash == LODE_SQUASH_ROOT) {
		if (c->uid == 0)
			c->uid = LODE_ANON_ID;
		if (c->gid == 0)
			c->gid = LODE_ANON_ID;
	}
	if (r->ranged && (c->uid < r->uid_lo || c->uid > r->uid_hi)) {
		snprintf(why, why_len, "client group %s may not act as uid %u (uids %u-%u)",
			 r->group, c->uid, r->uid_lo, r->uid_hi);
		return -EACCES;
	}
	if (r->ranged && (c->gid < r->gid_lo || c->gid > r->gid_hi)) {
		snprintf(why, why_len, "client group %s may not act as gid %u (gids %u-%u)",
			 r->group, c->gid, r->gid_lo, r->gid_hi);
		return -EACCES;
	}
	for (uint32_t i = 0; i < c->ngroups && i < LODE_CRED_GROUPS_MAX; i++) {
		uint32_t g = c->groups[i];

		if ((r->squash == LODE_SQUASH_ROOT && g == 0) ||
		    (r->ranged && (g < r->gid_lo || g > r->gid_hi)))
			continue;
		c->groups[kept++] = g;
	}
	for (uint32_t i = kept; i < LODE_CRED_GROUPS_MAX; i++)
		c->groups[i] = 0;
	c->ngroups = kept;
	return 0;
}
