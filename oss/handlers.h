/* SPDX-License-Identifier: MIT */
/*
 * lode-oss request handlers: the lode_server_ops that serve OBJ_* requests from the
 * object store, plus HELLO and PING.
 */
#ifndef LODE_OSS_HANDLERS_H
#define LODE_OSS_HANDLERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "objstore.h"
#include "rpc.h"
#include "server.h"

#define LODE_OSS_WORKERS_MAX 64

struct fwd_cache;
struct lode_oss_scrub;

/* Object data moved by one worker, for metrics: written by that worker only, read
 * atomically by the scrape. One cache line each, so workers never share one. */
struct lode_oss_worker_stats {
	uint64_t read_bytes;	/* OBJ_READ data answered */
	uint64_t direct_bytes;	/* of which read past the page cache (objdirect.c) */
	uint64_t written_bytes; /* OBJ_WRITE data stored (this target's copy) */
	uint64_t lazy_bytes;	/* of which flagged LODE_OBJ_F_LAZY */
	uint64_t inline_bytes;	/* of which written on the worker's thread (objio.c) */
	uint64_t inline_ns;	/* the time those writes held the worker's thread */
} __attribute__((aligned(64)));

struct lode_oss {
	struct lode_objstore *st; /* not owned */
	/* What this OSS proves to the MDS and to the next copy of a chain, as a target:
	 * NULL for no key (--insecure). Set before serving, read-only after; not owned. */
	const struct lode_keyring *keys;
	/* Set by the MDS link once registered, read by HELLO on any worker. */
	_Atomic uint64_t cluster_id;
	_Atomic uint32_t target_id;
	/* One per worker, created by on_worker_start on that worker's thread; each is used
	 * only there. Freed by lode_oss_fini() after the server has stopped. */
	struct lode_objstore_io *ios[LODE_OSS_WORKERS_MAX];
	/* Chained writes: the rpc that sends requests on to the next copy, created by the
	 * first chained request (fwd_lock guards the creation only), and per worker the
	 * connections it opened, by address (each used only on its worker). */
	pthread_mutex_t fwd_lock;
	struct lode_rpc *_Atomic fwd_rpc;
	struct fwd_cache *fwd[LODE_OSS_WORKERS_MAX];
	struct lode_oss_worker_stats stats[LODE_OSS_WORKERS_MAX];
	/* The scrub that OBJ_SCRUB starts (oss/scrub.c), set before serving; NULL: none
	 * (OBJ_SCRUB answers EOPNOTSUPP). Thread-safe itself; not owned. */
	struct lode_oss_scrub *scrub;
	/* The MDS's target table (id and address of every target), fetched by the MDS link:
	 * a chained request is forwarded only to a hop in it, so a peer cannot make this OSS
	 * connect anywhere it likes. Checked only with keys (hops_checked); refreshed every
	 * heartbeat. */
	bool hops_checked; /* set before serving */
	pthread_rwlock_t hops_lock;
	unsigned nhops; /* protected by hops_lock */
	struct lode_oss_hop {
		uint32_t id;
		char addr[LODE_ADDR_MAX + 1];
	} * hops; /* LODE_TARGETS_MAX entries; protected by hops_lock */
	/* A hop not in the table may be a target that joined since the last heartbeat: the
	 * worker that refused it asks the MDS link to fetch the table now (hops_wake, with
	 * hops_wake_arg), so that the client's resend a moment later is forwarded. Set and
	 * cleared by the link under hops_wake_lock, which outlives it; NULL: no link. */
	pthread_mutex_t hops_wake_lock;
	void (*hops_wake)(void *arg);
	void *hops_wake_arg;
	_Atomic uint64_t hops_refused;	 /* chained requests not forwarded: hop not in the table */
	_Atomic uint64_t hops_refetched; /* table fetches made at once for a refusal (the link) */
};

/* Sets (or with NULL, clears) what lode_oss asks for a fresh hop table: returns once no
 * worker is inside the previous one. */
void lode_oss_hops_wake_set(struct lode_oss *oss, void (*fn)(void *), void *arg);

/* Replaces the table of known hops (the MDS link, after TARGET_LIST). */
void lode_oss_hops_set(struct lode_oss *oss, const struct lode_oss_hop *hops, unsigned n);

/* Serves requests with ctx = a struct lode_oss. */
extern const struct lode_server_ops lode_oss_server_ops;

/* Prepares oss to serve st. */
void lode_oss_init(struct lode_oss *oss, struct lode_objstore *st);
/* Fails the chained requests still forwarded (their replies are dropped), then frees the
 * per-worker I/O contexts. Call after lode_server_stop(). */
void lode_oss_fini(struct lode_oss *oss);

/* A metrics collector (lode_metrics_collect_fn) for the OSS's own metrics: object bytes
 * read and written. arg is the struct lode_oss. */
struct lode_metrics_buf;
void lode_oss_metrics_collect(void *arg, struct lode_metrics_buf *b);

#endif
