/* SPDX-License-Identifier: MIT */
/*
 * Directory grants: a hash table from directory inode to its grant (grant.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include "grant.h"

#define BUCKETS	   4096u  /* a power of two */
#define GRANTS_MAX 65536u /* past half of it, a give drops lapsed grants (once a life) */

struct grant {
	struct grant *next;
	uint64_t dir;
	uint64_t token;
	uint64_t until_ms; /* valid before this */
	bool ended;	   /* another client added a name: never renewed again */
};

struct lode_grants {
	unsigned life_ms;
	uint64_t fence_ms; /* before this, grants of an MDS before this one may be valid */
	uint64_t swept_ms; /* the last sweep: the next is a life later at the soonest */
	unsigned count;
	struct grant *bucket[BUCKETS];
};

int lode_grants_create(struct lode_grants **out, unsigned life_ms, unsigned fence_ms,
		       uint64_t start_ms)
{
	struct lode_grants *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->life_ms = life_ms;
	g->fence_ms = start_ms + fence_ms;
	*out = g;
	return 0;
}

void lode_grants_destroy(struct lode_grants *g)
{
	if (!g)
		return;
	for (unsigned i = 0; i < BUCKETS; i++)
		for (struct grant *e = g->bucket[i], *next; e; e = next) {
			next = e->next;
			free(e);
		}
	free(g);
}

static struct grant **slot(struct lode_grants *g, uint64_t dir)
{
	uint64_t h = dir * 0x9e3779b97f4a7c15ull;

	return &g->bucket[(h >> 32) & (BUCKETS - 1)];
}

static struct grant **find(struct lode_grants *g, uint64_t dir)
{
	struct grant **at = slot(g, dir);

	while (*at && (*at)->dir != dir)
		at = &(*at)->next;
	return at;
}

static void drop(struct lode_grants *g, struct grant **at)
{
	struct grant *e = *at;

	*at = e->next;
	free(e);
	g->count--;
}

/* Drops every grant that has lapsed: its holder answers nothing from it any more. */
static void sweep(struct lode_grants *g, uint64_t now_ms)
{
	for (unsigned i = 0; i < BUCKETS; i++) {
		struct grant **at = &g->bucket[i];

		while (*at)
			if ((*at)->until_ms <= now_ms)
				drop(g, at);
			else
				at = &(*at)->next;
	}
}

uint64_t lode_grants_give(struct lode_grants *g, uint64_t dir, uint64_t now_ms)
{
	struct grant **at, *e;
	uint64_t token = 0;

	if (g->count >= GRANTS_MAX / 2 && now_ms >= g->swept_ms + g->life_ms) {
		sweep(g, now_ms);
		g->swept_ms = now_ms;
	}
	if (g->count >= GRANTS_MAX)
		return 0;
	at = find(g, dir);
	if (*at) /* a directory is made once: never two grants of one */
		return 0;
	while (!token)
		if (getrandom(&token, sizeof(token), 0) != sizeof(token))
			return 0;
	e = malloc(sizeof(*e));
	if (!e)
		return 0;
	*e = (struct grant){.dir = dir, .token = token, .until_ms = now_ms + g->life_ms};
	*at = e;
	g->count++;
	return token;
}

unsigned lode_grants_enter(struct lode_grants *g, uint64_t dir, uint64_t token, uint64_t now_ms,
			   bool *renewed)
{
	struct grant **at = find(g, dir), *e = *at;

	*renewed = false;
	if (!e) /* none known: none valid, unless an MDS before this one gave it */
		return now_ms < g->fence_ms ? (unsigned)(g->fence_ms - now_ms) : 0;
	if (token && token == e->token) {
		/* ended: the holder's own name waits for nothing, and its reply, not renewed,
		 * makes it drop the grant and give it back */
		if (e->ended)
			return 0;
		e->until_ms = now_ms + g->life_ms;
		*renewed = true;
		return 0;
	}
	e->ended = true;
	if (now_ms < e->until_ms)
		return (unsigned)(e->until_ms - now_ms);
	drop(g, at);
	return 0;
}

bool lode_grants_return(struct lode_grants *g, uint64_t dir, uint64_t token)
{
	struct grant *e = *find(g, dir);

	if (!e || !token || e->token != token)
		return false;
	/* kept (lapsed) until the next enter drops it: a new grant of dir is never given */
	e->ended = true;
	e->until_ms = 0;
	return true;
}

unsigned lode_grants_count(const struct lode_grants *g)
{
	return g->count;
}
