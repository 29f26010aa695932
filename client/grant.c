/* SPDX-License-Identifier: MIT */
/*
 * Directory grants, the client's side (docs/design.md, "Directory grants"; the MDS's side
 * is mds/grant.h).
 *
 * A directory this client made with MKDIR may come with a grant: while it is valid no
 * other client adds a name there, so a lookup there of a name this client did not add
 * is answered ENOENT here, with no call to the MDS. That is the kernel's LOOKUP before
 * every create, and before the rename that publishes a checkpoint shard.
 *
 * Each grant keeps the names this client added to its directory, as 64-bit hashes, added
 * before the request that adds the name is sent: a name that may exist is always in the
 * set (a hash collision or a failed request only sends a lookup to the MDS). The request
 * carries the grant's token and its reply says whether the MDS renewed the grant; one
 * that was not renewed is dropped at once, and given back (GRANT_RETURN): another
 * client's name that ended it waits at the MDS until then, or until the grant lapses. A
 * grant is valid LODE_GRANT_MS from the send of the request that made or last renewed it:
 * the MDS counts from later, when it handled it, and holds another client's new name there
 * until its own count has run out.
 *
 * Only the credentials that made the directory (its owner, with search permission on it
 * then) are answered here: anyone else asks the MDS, which checks their permissions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "client.h"

#define GRANT_BUCKETS	64u	   /* a power of two */
#define GRANTS_HELD_MAX 4096u	   /* directories held at once; past it, none more */
#define GRANT_NAMES_MAX (1u << 20) /* names kept per directory; past it, the grant goes */
#define GRANT_KEEP_MS	1000u	   /* a lapsed grant is kept this long for a renewal */

struct lode_grant {
	struct lode_grant *next;
	uint64_t dir;
	uint64_t token;
	uint64_t until_ms; /* valid before this, in lode_now_ms's clock */
	uint32_t uid, gid; /* the credentials answered here */
	/* the names added, as hashes: open addressing, 0 marks a free slot (a name hashing
	 * to 0 is kept as 1) */
	uint64_t *names;
	uint32_t nnames, cap;
};

static uint64_t name_hash(const char *name, size_t len)
{
	uint64_t h = XXH3_64bits(name, len);

	return h ? h : 1;
}

static struct lode_grant **grant_find(struct lode_client *c, uint64_t dir)
{
	struct lode_grant **at =
	    &c->grants[(dir * 0x9e3779b97f4a7c15ull >> 40) & (GRANT_BUCKETS - 1)];

	while (*at && (*at)->dir != dir)
		at = &(*at)->next;
	return at;
}

static void grant_free(struct lode_client *c, struct lode_grant **at)
{
	struct lode_grant *g = *at;

	*at = g->next;
	free(g->names);
	free(g);
	c->ngrants--;
}

static bool names_has(const struct lode_grant *g, uint64_t h)
{
	if (!g->cap)
		return false;
	for (uint32_t i = (uint32_t)h & (g->cap - 1);; i = (i + 1) & (g->cap - 1)) {
		if (g->names[i] == h)
			return true;
		if (!g->names[i])
			return false;
	}
}

static void names_put(uint64_t *names, uint32_t cap, uint64_t h)
{
	uint32_t i = (uint32_t)h & (cap - 1);

	while (names[i] && names[i] != h)
		i = (i + 1) & (cap - 1);
	names[i] = h;
}

/* Adds h; false when the set cannot grow (the grant must go). */
static bool names_add(struct lode_grant *g, uint64_t h)
{
	if (names_has(g, h))
		return true;
	if ((g->nnames + 1) * 2 > g->cap) {
		uint32_t cap = g->cap ? g->cap * 2 : 16;
		uint64_t *n;

		if (cap > 2 * GRANT_NAMES_MAX || !(n = calloc(cap, sizeof(*n))))
			return false;
		for (uint32_t i = 0; i < g->cap; i++)
			if (g->names[i])
				names_put(n, cap, g->names[i]);
		free(g->names);
		g->names = n;
		g->cap = cap;
	}
	names_put(g->names, g->cap, h);
	g->nnames++;
	return true;
}

void lode_client_grants_fini(struct lode_client *c)
{
	for (unsigned i = 0; i < GRANT_BUCKETS; i++)
		while (c->grants[i])
			grant_free(c, &c->grants[i]);
}

/*
 * Drops the grants that lapsed before `before`. One that lapsed untouched is renewed by its
 * holder's next name in it, so only those a second past are dropped as a matter of course:
 * a directory the client no longer adds to keeps no memory (its names) for long.
 */
static void grants_sweep(struct lode_client *c, uint64_t before)
{
	for (unsigned i = 0; i < GRANT_BUCKETS; i++) {
		struct lode_grant **at = &c->grants[i];

		while (*at)
			if ((*at)->until_ms <= before)
				grant_free(c, at);
			else
				at = &(*at)->next;
	}
}

void lode_client_grant_new(struct lode_client *c, const struct lode_wire_attr *dir, uint64_t token,
			   uint64_t sent_ms, const struct lode_wire_cred *cred)
{
	struct lode_grant *g, **at;

	/* the MDS answers a lookup by someone without search permission EACCES: ask it */
	if (!token || cred->uid != dir->uid || !(dir->mode & S_IXUSR))
		return;
	pthread_mutex_lock(&c->grant_lock);
	if (c->ngrants >= GRANTS_HELD_MAX) {
		grants_sweep(c, sent_ms);
	} else if (sent_ms >= c->grants_swept_ms + GRANT_KEEP_MS) {
		grants_sweep(c, sent_ms - GRANT_KEEP_MS);
		c->grants_swept_ms = sent_ms;
	}
	at = grant_find(c, dir->ino);
	if (c->ngrants < GRANTS_HELD_MAX && !*at && (g = calloc(1, sizeof(*g)))) {
		*g = (struct lode_grant){.dir = dir->ino,
					 .token = token,
					 .until_ms = sent_ms + LODE_GRANT_MS,
					 .uid = cred->uid,
					 .gid = cred->gid};
		*at = g;
		c->ngrants++;
	}
	pthread_mutex_unlock(&c->grant_lock);
}

uint64_t lode_client_grant_adding(struct lode_client *c, uint64_t dir, const char *name, size_t len)
{
	struct lode_grant **at;
	uint64_t token = 0;

	pthread_mutex_lock(&c->grant_lock);
	at = grant_find(c, dir);
	if (*at) {
		if (names_add(*at, name_hash(name, len)))
			token = (*at)->token;
		else
			grant_free(c, at);
	}
	pthread_mutex_unlock(&c->grant_lock);
	return token;
}

bool lode_client_grant_added(struct lode_client *c, uint64_t dir, uint64_t token, uint64_t sent_ms,
			     bool renewed)
{
	struct lode_grant **at;
	bool dropped = false;

	if (!token)
		return false;
	pthread_mutex_lock(&c->grant_lock);
	at = grant_find(c, dir);
	if (*at && (*at)->token == token) {
		/* not renewed: another client's name ended it, or a new MDS knows none */
		if (!renewed) {
			grant_free(c, at);
			dropped = true;
		} else if ((*at)->until_ms < sent_ms + LODE_GRANT_MS) {
			(*at)->until_ms = sent_ms + LODE_GRANT_MS;
		}
	}
	pthread_mutex_unlock(&c->grant_lock);
	return dropped;
}

uint64_t lode_client_grant_drop(struct lode_client *c, uint64_t dir)
{
	struct lode_grant **at;
	uint64_t token = 0;

	pthread_mutex_lock(&c->grant_lock);
	at = grant_find(c, dir);
	if (*at) {
		token = (*at)->token;
		grant_free(c, at);
	}
	pthread_mutex_unlock(&c->grant_lock);
	return token;
}

bool lode_client_grant_says_missing(struct lode_client *c, uint64_t dir, const char *name,
				    size_t len, const struct lode_wire_cred *cred)
{
	struct lode_grant *g;
	bool missing = false;

	pthread_mutex_lock(&c->grant_lock);
	g = *grant_find(c, dir);
	if (g && g->uid == cred->uid && g->gid == cred->gid && lode_now_ms() < g->until_ms)
		missing = !names_has(g, name_hash(name, len));
	pthread_mutex_unlock(&c->grant_lock);
	if (missing)
		atomic_fetch_add_explicit(&c->grant_answers, 1, memory_order_relaxed);
	return missing;
}
