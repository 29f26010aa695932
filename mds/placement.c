/* SPDX-License-Identifier: MIT */
/*
 * Storage target table and target choice for new files. A fixed array of at most
 * LODE_TARGETS_MAX targets behind one mutex: creates take it once per file, heartbeats
 * once per target every few seconds, so contention does not matter.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mds_spec.h"
#include "placement.h"

struct target {
	uint32_t id;
	uint16_t addr_len;
	char addr[LODE_ADDR_MAX + 1];
	uint64_t bytes_total;
	uint64_t bytes_free;
	uint64_t objects;
	uint64_t seen_ms; /* 0: never heard from since start */
	bool down;	  /* known down (a probe found nothing there) until heard from */
	bool suspect;	  /* a client's write to it failed: late until heard from */
	uint16_t admin;	  /* LODE_TARGET_ACTIVE, _DRAINING, _REMOVED (durable: targets db) */
};

struct lode_placement {
	pthread_mutex_t lock;
	unsigned late_ms, down_ms;
	struct target t[LODE_TARGETS_MAX]; /* protected by lock, sorted by id */
	unsigned n;			   /* protected by lock */
	unsigned rr;			   /* protected by lock: rotation of the next choice */
};

int lode_placement_create(struct lode_placement **out, unsigned down_ms)
{
	struct lode_placement *pl = calloc(1, sizeof(*pl));

	if (!pl)
		return -ENOMEM;
	pthread_mutex_init(&pl->lock, NULL);
	pl->down_ms = down_ms ? down_ms : LODE_PLACEMENT_DOWN_MS;
	pl->late_ms = pl->down_ms < LODE_PLACEMENT_LATE_MS ? pl->down_ms : LODE_PLACEMENT_LATE_MS;
	*out = pl;
	return 0;
}

void lode_placement_destroy(struct lode_placement *pl)
{
	if (!pl)
		return;
	pthread_mutex_destroy(&pl->lock);
	free(pl);
}

/* UP: heard from since the start, not known down, not silent for down_ms. */
static bool is_up(const struct lode_placement *pl, const struct target *t, uint64_t now)
{
	return t->seen_ms && !t->down && now - t->seen_ms <= pl->down_ms;
}

/* UP and heard from within late_ms. */
static bool is_fresh(const struct lode_placement *pl, const struct target *t, uint64_t now)
{
	return is_up(pl, t, now) && !t->suspect && now - t->seen_ms <= pl->late_ms;
}

static bool is_full(const struct target *t)
{
	return t->bytes_total && t->bytes_free < LODE_TARGET_FULL_BYTES;
}

/* Finds or inserts (keeping id order) the target; NULL if the table is full. */
static struct target *slot(struct lode_placement *pl, uint32_t id, int insert)
{
	unsigned i;

	for (i = 0; i < pl->n && pl->t[i].id < id; i++)
		;
	if (i < pl->n && pl->t[i].id == id)
		return &pl->t[i];
	if (!insert || pl->n == LODE_TARGETS_MAX)
		return NULL;
	memmove(&pl->t[i + 1], &pl->t[i], (pl->n - i) * sizeof(pl->t[0]));
	pl->n++;
	memset(&pl->t[i], 0, sizeof(pl->t[i]));
	pl->t[i].id = id;
	return &pl->t[i];
}

static void set_addr(struct target *t, const char *addr, uint16_t len)
{
	if (len > LODE_ADDR_MAX)
		len = LODE_ADDR_MAX;
	memcpy(t->addr, addr, len);
	t->addr[len] = '\0';
	t->addr_len = len;
}

static int load_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct lode_placement *pl = arg;
	struct lode_disk_target d;
	struct target *t;

	(void)k;
	if (klen != 16 || vlen != sizeof(d))
		return -EIO;
	memcpy(&d, v, sizeof(d));
	t = slot(pl, d.target_id, 1);
	if (!t)
		return -ENOSPC;
	set_addr(t, d.addr, d.addr_len);
	t->admin = d.admin <= LODE_TARGET_REMOVED ? d.admin : LODE_TARGET_DRAINING;
	t->bytes_total = d.bytes_total;
	t->bytes_free = d.bytes_free;
	return 0;
}

int lode_placement_load(struct lode_placement *pl, struct lode_txn *t)
{
	int rc;

	pthread_mutex_lock(&pl->lock);
	rc = lode_kv_scan(t, LODE_DB_TARGETS, NULL, 0, NULL, 0, load_one, pl);
	pthread_mutex_unlock(&pl->lock);
	return rc;
}

int lode_placement_register_txn(struct lode_txn *t, const uint8_t uuid[16], const char *addr,
				uint16_t addr_len, uint64_t bytes_total, uint64_t bytes_free,
				uint32_t *target_id)
{
	struct lode_disk_target d = {0};
	uint64_t count;
	size_t len;
	int rc;

	if (addr_len == 0 || addr_len > LODE_ADDR_MAX)
		return -EINVAL;
	rc = lode_kv_get(t, LODE_DB_TARGETS, uuid, 16, &d, sizeof(d), &len);
	if (rc == -ENOENT) {
		rc = lode_kv_count(t, LODE_DB_TARGETS, &count);
		if (rc)
			return rc;
		if (count >= LODE_TARGETS_MAX)
			return -ENOSPC;
		memset(&d, 0, sizeof(d));
		rc = lode_store_alloc_target_id(t, &d.target_id);
	} else if (!rc && len != sizeof(d)) {
		rc = -EIO;
	}
	if (rc)
		return rc;
	memset(d.addr, 0, sizeof(d.addr));
	memcpy(d.addr, addr, addr_len);
	d.addr_len = addr_len;
	d.bytes_total = bytes_total;
	d.bytes_free = bytes_free;
	rc = lode_kv_put(t, LODE_DB_TARGETS, uuid, 16, &d, sizeof(d), 0);
	if (rc)
		return rc;
	*target_id = d.target_id;
	return 0;
}

struct admin_ctx {
	uint32_t id;
	uint16_t admin;
	uint8_t uuid[16];
	bool found;
};

static int find_id(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct admin_ctx *c = arg;
	struct lode_disk_target d;

	if (klen != 16 || vlen != sizeof(d))
		return -EIO;
	memcpy(&d, v, sizeof(d));
	if (d.target_id != c->id)
		return 0;
	memcpy(c->uuid, k, 16);
	c->found = true;
	return 1;
}

int lode_placement_admin_txn(struct lode_txn *t, uint32_t target_id, uint16_t admin)
{
	struct admin_ctx c = {.id = target_id};
	struct lode_disk_target d;
	size_t len;
	int rc = lode_kv_scan(t, LODE_DB_TARGETS, NULL, 0, NULL, 0, find_id, &c);

	if (rc)
		return rc;
	if (!c.found)
		return -ENOENT;
	rc = lode_kv_get(t, LODE_DB_TARGETS, c.uuid, 16, &d, sizeof(d), &len);
	if (!rc && len != sizeof(d))
		rc = -EIO;
	if (rc)
		return rc;
	d.admin = admin;
	return lode_kv_put(t, LODE_DB_TARGETS, c.uuid, 16, &d, sizeof(d), 0);
}

void lode_placement_set_admin(struct lode_placement *pl, uint32_t target_id, uint16_t admin)
{
	struct target *t;

	pthread_mutex_lock(&pl->lock);
	t = slot(pl, target_id, 0);
	if (t)
		t->admin = admin;
	pthread_mutex_unlock(&pl->lock);
}

int lode_placement_admin(struct lode_placement *pl, uint32_t target_id)
{
	struct target *t;
	int admin;

	pthread_mutex_lock(&pl->lock);
	t = slot(pl, target_id, 0);
	admin = t ? t->admin : -ENOENT;
	pthread_mutex_unlock(&pl->lock);
	return admin;
}

bool lode_placement_is_up(struct lode_placement *pl, uint32_t target_id, uint64_t now_ms)
{
	struct target *t;
	bool up;

	pthread_mutex_lock(&pl->lock);
	t = slot(pl, target_id, 0);
	up = t && is_up(pl, t, now_ms);
	pthread_mutex_unlock(&pl->lock);
	return up;
}

int lode_placement_lookup_txn(struct lode_txn *t, const uint8_t uuid[16], uint32_t *target_id)
{
	struct lode_disk_target d;
	size_t len;
	int rc = lode_kv_get(t, LODE_DB_TARGETS, uuid, 16, &d, sizeof(d), &len);

	if (!rc && len != sizeof(d))
		rc = -EIO;
	if (!rc)
		*target_id = d.target_id;
	return rc;
}

bool lode_placement_held_elsewhere(struct lode_placement *pl, uint32_t target_id, const char *addr,
				   uint16_t addr_len, uint64_t now_ms, char *holder,
				   size_t holder_len)
{
	struct target *t;
	bool held = false;

	pthread_mutex_lock(&pl->lock);
	t = slot(pl, target_id, 0);
	if (t && is_up(pl, t, now_ms) &&
	    (t->addr_len != addr_len || memcmp(t->addr, addr, addr_len))) {
		held = true;
		snprintf(holder, holder_len, "%.*s", (int)t->addr_len, t->addr);
	}
	pthread_mutex_unlock(&pl->lock);
	return held;
}

/* A target told its space and is alive now. The caller holds pl->lock. */
static void heard_from(struct target *t, uint64_t bytes_total, uint64_t bytes_free, uint64_t now_ms)
{
	t->bytes_total = bytes_total;
	t->bytes_free = bytes_free;
	t->seen_ms = now_ms ? now_ms : 1; /* 0 means never heard from */
	t->down = false;
	t->suspect = false;
}

int lode_placement_update(struct lode_placement *pl, uint32_t target_id, const char *addr,
			  uint16_t addr_len, uint64_t bytes_total, uint64_t bytes_free,
			  uint64_t now_ms)
{
	struct target *t;

	pthread_mutex_lock(&pl->lock);
	t = slot(pl, target_id, 1);
	if (t) {
		set_addr(t, addr, addr_len);
		heard_from(t, bytes_total, bytes_free, now_ms);
	}
	pthread_mutex_unlock(&pl->lock);
	return t ? 0 : -ENOSPC;
}

int lode_placement_heartbeat(struct lode_placement *pl, uint32_t target_id, uint64_t bytes_total,
			     uint64_t bytes_free, uint64_t objects, uint64_t now_ms)
{
	struct target *t;

	pthread_mutex_lock(&pl->lock);
	t = slot(pl, target_id, 0);
	if (t) {
		heard_from(t, bytes_total, bytes_free, now_ms);
		t->objects = objects;
	}
	pthread_mutex_unlock(&pl->lock);
	return t ? 0 : -ENOENT;
}

void lode_placement_alive(struct lode_placement *pl, uint32_t target_id, uint64_t now_ms)
{
	struct target *t;

	pthread_mutex_lock(&pl->lock);
	t = slot(pl, target_id, 0);
	if (t)
		heard_from(t, t->bytes_total, t->bytes_free, now_ms);
	pthread_mutex_unlock(&pl->lock);
}

int lode_placement_mark_down(struct lode_placement *pl, uint32_t target_id)
{
	struct target *t;
	int was_up = 0;

	pthread_mutex_lock(&pl->lock);
	t = slot(pl, target_id, 0);
	if (t) {
		was_up = t->seen_ms && !t->down;
		t->down = true;
	}
	pthread_mutex_unlock(&pl->lock);
	return was_up;
}

void lode_placement_suspect(struct lode_placement *pl, uint32_t target_id)
{
	struct target *t;

	pthread_mutex_lock(&pl->lock);
	t = slot(pl, target_id, 0);
	if (t)
		t->suspect = true;
	pthread_mutex_unlock(&pl->lock);
}

unsigned lode_placement_late(struct lode_placement *pl, uint64_t now_ms,
			     struct lode_placement_probe *out, unsigned max)
{
	unsigned n = 0;

	pthread_mutex_lock(&pl->lock);
	for (unsigned i = 0; i < pl->n && n < max; i++) {
		const struct target *t = &pl->t[i];

		if (!is_up(pl, t, now_ms) || is_fresh(pl, t, now_ms))
			continue;
		out[n].target_id = t->id;
		memcpy(out[n].addr, t->addr, t->addr_len + 1);
		n++;
	}
	pthread_mutex_unlock(&pl->lock);
	return n;
}

void lode_placement_list(struct lode_placement *pl, uint64_t now_ms,
			 struct lode_placement_target *out, unsigned max, unsigned *n)
{
	unsigned i;

	pthread_mutex_lock(&pl->lock);
	for (i = 0; i < pl->n && i < max; i++) {
		const struct target *t = &pl->t[i];
		struct lode_placement_target *o = &out[i];

		memset(o, 0, sizeof(*o));
		o->target_id = t->id;
		o->state = is_up(pl, t, now_ms) ? LODE_TARGET_UP : LODE_TARGET_DOWN;
		o->late = o->state == LODE_TARGET_UP && !is_fresh(pl, t, now_ms);
		o->bytes_total = t->bytes_total;
		o->bytes_free = t->bytes_free;
		o->objects = t->objects;
		o->last_seen_ms = t->seen_ms ? now_ms - t->seen_ms : UINT64_MAX;
		o->addr_len = t->addr_len;
		o->admin = t->admin;
		memcpy(o->addr, t->addr, t->addr_len + 1);
	}
	*n = i;
	pthread_mutex_unlock(&pl->lock);
}

void lode_placement_totals(struct lode_placement *pl, uint64_t now_ms, uint64_t *bytes_total,
			   uint64_t *bytes_free, uint32_t *up, uint32_t *count)
{
	uint64_t total = 0, avail = 0;
	uint32_t nup = 0;

	pthread_mutex_lock(&pl->lock);
	for (unsigned i = 0; i < pl->n; i++) {
		if (!is_up(pl, &pl->t[i], now_ms))
			continue;
		nup++;
		total += pl->t[i].bytes_total;
		avail += pl->t[i].bytes_free;
	}
	*count = pl->n;
	pthread_mutex_unlock(&pl->lock);
	*bytes_total = total;
	*bytes_free = avail;
	*up = nup;
}

int lode_placement_known(struct lode_placement *pl, uint32_t target_id)
{
	int known;

	pthread_mutex_lock(&pl->lock);
	known = slot(pl, target_id, 0) != NULL;
	pthread_mutex_unlock(&pl->lock);
	return known;
}

unsigned lode_placement_count(struct lode_placement *pl)
{
	unsigned n;

	pthread_mutex_lock(&pl->lock);
	n = pl->n;
	pthread_mutex_unlock(&pl->lock);
	return n;
}

int lode_placement_choose(struct lode_placement *pl, uint64_t now_ms, uint16_t stripe_count,
			  uint16_t mirror_count, uint16_t *stripes_out, uint16_t *mirrors_out,
			  uint32_t *targets)
{
	const struct target *up[LODE_TARGETS_MAX];
	unsigned nup = 0, nalive = 0, nfresh = 0, start, sc;
	int rc = 0;

	pthread_mutex_lock(&pl->lock);
	/* the fresh targets with space first, then the late ones with space, each most free
	 * first (insertion sort); full targets only count */
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < pl->n; i++) {
			const struct target *t = &pl->t[i];
			unsigned j;

			if (!is_up(pl, t, now_ms) || is_fresh(pl, t, now_ms) != (pass == 0))
				continue;
			if (t->admin != LODE_TARGET_ACTIVE)
				continue; /* draining or removed: no new copies */
			nalive++;
			if (is_full(t))
				continue;
			for (j = nup; j > nfresh && up[j - 1]->bytes_free < t->bytes_free; j--)
				up[j] = up[j - 1];
			up[j] = t;
			nup++;
		}
		if (pass == 0)
			nfresh = nup;
	}
	/* automatic: two copies of everything as soon as there are two targets to hold them */
	if (mirror_count == 0)
		mirror_count = nalive >= 2 ? 2 : 1;
	if (mirror_count > pl->n && pl->n) {
		rc = -EINVAL; /* more copies than the cluster has targets: never placeable */
		goto unlock;
	}
	if (mirror_count > nalive) {
		rc = -EAGAIN; /* targets not heard from yet, or down: they may come back */
		goto unlock;
	}
	if (mirror_count > nup) {
		rc = -ENOSPC; /* UP, but full */
		goto unlock;
	}
	/* late targets only when the fresh ones cannot hold every copy */
	if (nfresh >= mirror_count)
		nup = nfresh;
	sc = stripe_count;
	if (sc == 0)
		sc = nup < LODE_PLACEMENT_AUTO_STRIPES ? nup : LODE_PLACEMENT_AUTO_STRIPES;
	if (sc * mirror_count > LODE_LAYOUT_TARGETS_MAX) {
		rc = -EINVAL;
		goto unlock;
	}
	/*
	 * Slot k = stripe * mirror_count + mirror takes up[(start + k) % nup]: the mirrors of a
	 * stripe are mirror_count consecutive slots, distinct because mirror_count <= nup, and
	 * nothing repeats until all nup targets are used.
	 */
	start = pl->rr++ % nup;
	memset(targets, 0, LODE_LAYOUT_TARGETS_MAX * sizeof(*targets));
	for (unsigned k = 0; k < sc * mirror_count; k++)
		targets[k] = up[(start + k) % nup]->id;
	*stripes_out = (uint16_t)sc;
	*mirrors_out = mirror_count;
unlock:
	pthread_mutex_unlock(&pl->lock);
	return rc;
}
