/* SPDX-License-Identifier: MIT */
/*
 * Registration cache for RDMA: which memory regions of this process are registered with a
 * device, so that the registration (ibv_reg_mr: pinning pages, programming the device's
 * translation table) is paid once per buffer rather than once per I/O.
 *
 * A registration may only be reused while the virtual range still maps the same pages, and
 * nothing tells a library when an application frees memory. So the cache keeps only ranges
 * the application declared long-lived (lode_rdma_mem_declare(): a model loader's staging
 * buffer, a FUSE daemon's request buffers), until they are forgotten. Any other buffer gets
 * a transient registration for the one I/O, dropped when the I/O completes: still zero
 * copy, never stale.
 *
 * No verbs here: registering is a callback, so the cache's logic is tested without a
 * device. One cache per protection domain; all functions are thread-safe.
 */
#ifndef LODE_PROTO_RDMA_REGCACHE_H
#define LODE_PROTO_RDMA_REGCACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Declares [addr, addr + len) long-lived for every cache in the process. Returns 0, or
 * -EINVAL (empty or overlapping a declared range), -ENOMEM. */
int lode_rdma_mem_declare(void *addr, size_t len);
/* Forgets the declared range starting at addr: caches drop their registrations of it (at
 * once, or when the last I/O using one completes). Returns 0 or -ENOENT. */
int lode_rdma_mem_forget(void *addr);

struct lode_regcache_ops {
	/* Registers [addr, addr + len); fills *handle, *lkey and *rkey. Returns 0 or -errno. */
	int (*reg)(void *ctx, void *addr, size_t len, void **handle, uint32_t *lkey,
		   uint32_t *rkey);
	void (*dereg)(void *ctx, void *handle);
};

struct lode_reg {
	uintptr_t start;
	size_t len;
	void *handle;
	uint32_t lkey, rkey;
	/* private */
	unsigned refs_;
	uint64_t used_;
	uint64_t declared_gen_; /* 0: transient */
	int dead_;
	struct lode_reg *next_;
};

struct lode_regcache {
	pthread_mutex_t lock;
	const struct lode_regcache_ops *ops;
	void *ctx;
	struct lode_reg *cached; /* registrations of declared ranges */
	size_t bytes, max_bytes; /* cached and unused registrations are dropped past this */
	uint64_t tick;
	/* counters, for tests and statistics */
	uint64_t hits, misses, transients;
};

void lode_regcache_init(struct lode_regcache *rc, const struct lode_regcache_ops *ops, void *ctx,
			size_t max_bytes);
/* Drops every registration (none may be in use). */
void lode_regcache_fini(struct lode_regcache *rc);
/* A registration covering [addr, addr + len): cached if the range lies inside a declared
 * one, else transient. Returns 0 with *out set, or the reg callback's error. */
int lode_regcache_get(struct lode_regcache *rc, const void *addr, size_t len,
		      struct lode_reg **out);
/* Done with it (transient registrations are dropped here). */
void lode_regcache_put(struct lode_regcache *rc, struct lode_reg *r);

#endif
