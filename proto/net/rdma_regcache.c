/* SPDX-License-Identifier: MIT */
/* The RDMA registration cache (see rdma_regcache.h). Lists, not trees: a process declares
 * a handful of long-lived buffers. */
#include <errno.h>
#include <stdlib.h>

#include "rdma_regcache.h"

struct declared {
	uintptr_t start;
	size_t len;
	uint64_t gen;
	struct declared *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* taken before any rc->lock */
static struct declared *g_declared;
static uint64_t g_gen;
struct cache_link {
	struct lode_regcache *rc;
	struct cache_link *next;
};
static struct cache_link *g_caches;

static void reg_drop(struct lode_regcache *rc, struct lode_reg *r)
{
	rc->ops->dereg(rc->ctx, r->handle);
	free(r);
}

/* Unlinks and drops cached registrations that are dead and unused, then the least
 * recently used unused ones while the cache is over its budget. rc->lock held. */
static void trim(struct lode_regcache *rc)
{
	for (;;) {
		struct lode_reg **victim = NULL;

		for (struct lode_reg **pp = &rc->cached; *pp; pp = &(*pp)->next_) {
			struct lode_reg *r = *pp;

			if (r->refs_)
				continue;
			if (r->dead_) {
				victim = pp;
				break;
			}
			if (rc->bytes > rc->max_bytes && (!victim || r->used_ < (*victim)->used_))
				victim = pp;
		}
		if (!victim)
			return;
		struct lode_reg *r = *victim;

		*victim = r->next_;
		rc->bytes -= r->len;
		reg_drop(rc, r);
	}
}

int lode_rdma_mem_declare(void *addr, size_t len)
{
	uintptr_t s = (uintptr_t)addr;
	struct declared *d;

	if (!len || s + len < s)
		return -EINVAL;
	pthread_mutex_lock(&g_lock);
	for (d = g_declared; d; d = d->next) {
		if (s < d->start + d->len && d->start < s + len) {
			pthread_mutex_unlock(&g_lock);
			return -EINVAL;
		}
	}
	d = malloc(sizeof(*d));
	if (!d) {
		pthread_mutex_unlock(&g_lock);
		return -ENOMEM;
	}
	d->start = s;
	d->len = len;
	d->gen = ++g_gen;
	d->next = g_declared;
	g_declared = d;
	pthread_mutex_unlock(&g_lock);
	return 0;
}

int lode_rdma_mem_forget(void *addr)
{
	struct declared **pp, *d = NULL;

	pthread_mutex_lock(&g_lock);
	for (pp = &g_declared; *pp; pp = &(*pp)->next) {
		if ((*pp)->start == (uintptr_t)addr) {
			d = *pp;
			*pp = d->next;
			break;
		}
	}
	if (!d) {
		pthread_mutex_unlock(&g_lock);
		return -ENOENT;
	}
	for (struct cache_link *l = g_caches; l; l = l->next) {
		pthread_mutex_lock(&l->rc->lock);
		for (struct lode_reg *r = l->rc->cached; r; r = r->next_)
			if (r->declared_gen_ == d->gen)
				r->dead_ = 1;
		trim(l->rc);
		pthread_mutex_unlock(&l->rc->lock);
	}
	pthread_mutex_unlock(&g_lock);
	free(d);
	return 0;
}

void lode_regcache_init(struct lode_regcache *rc, const struct lode_regcache_ops *ops, void *ctx,
			size_t max_bytes)
{
	struct cache_link *l = malloc(sizeof(*l));

	*rc = (struct lode_regcache){.ops = ops, .ctx = ctx, .max_bytes = max_bytes};
	pthread_mutex_init(&rc->lock, NULL);
	if (!l)
		abort();
	l->rc = rc;
	pthread_mutex_lock(&g_lock);
	l->next = g_caches;
	g_caches = l;
	pthread_mutex_unlock(&g_lock);
}

void lode_regcache_fini(struct lode_regcache *rc)
{
	struct lode_reg *r;

	pthread_mutex_lock(&g_lock);
	for (struct cache_link **pp = &g_caches; *pp; pp = &(*pp)->next) {
		if ((*pp)->rc == rc) {
			struct cache_link *l = *pp;

			*pp = l->next;
			free(l);
			break;
		}
	}
	pthread_mutex_unlock(&g_lock);
	while ((r = rc->cached)) {
		rc->cached = r->next_;
		reg_drop(rc, r);
	}
	pthread_mutex_destroy(&rc->lock);
}

static int reg_new(struct lode_regcache *rc, uintptr_t start, size_t len, uint64_t gen,
		   struct lode_reg **out)
{
	struct lode_reg *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	err = rc->ops->reg(rc->ctx, (void *)start, len, &r->handle, &r->lkey, &r->rkey);
	if (err) {
		free(r);
		return err;
	}
	r->start = start;
	r->len = len;
	r->declared_gen_ = gen;
	r->refs_ = 1;
	*out = r;
	return 0;
}

int lode_regcache_get(struct lode_regcache *rc, const void *addr, size_t len, struct lode_reg **out)
{
	uintptr_t s = (uintptr_t)addr;
	struct declared *d;
	uintptr_t dstart = 0;
	size_t dlen = 0;
	uint64_t gen = 0;
	int err;

	pthread_mutex_lock(&g_lock);
	for (d = g_declared; d; d = d->next) {
		if (s >= d->start && s + len <= d->start + d->len) {
			dstart = d->start;
			dlen = d->len;
			gen = d->gen;
			break;
		}
	}
	pthread_mutex_lock(&rc->lock);
	pthread_mutex_unlock(&g_lock);
	rc->tick++;
	if (gen) {
		for (struct lode_reg *r = rc->cached; r; r = r->next_) {
			if (r->declared_gen_ == gen && !r->dead_) {
				r->refs_++;
				r->used_ = rc->tick;
				rc->hits++;
				*out = r;
				pthread_mutex_unlock(&rc->lock);
				return 0;
			}
		}
		/* registered under the lock: two threads never register one range twice */
		err = reg_new(rc, dstart, dlen, gen, out);
		if (!err) {
			(*out)->used_ = rc->tick;
			(*out)->next_ = rc->cached;
			rc->cached = *out;
			rc->bytes += dlen;
			rc->misses++;
		}
		pthread_mutex_unlock(&rc->lock);
		return err;
	}
	rc->transients++;
	pthread_mutex_unlock(&rc->lock);
	return reg_new(rc, s, len, 0, out);
}

void lode_regcache_put(struct lode_regcache *rc, struct lode_reg *r)
{
	if (!r->declared_gen_) {
		reg_drop(rc, r);
		return;
	}
	pthread_mutex_lock(&rc->lock);
	r->refs_--;
	trim(rc);
	pthread_mutex_unlock(&rc->lock);
}
