/* SPDX-License-Identifier: MIT */
/*
 * lode_mds: the metadata server's state and its request handler for proto/net/server.h.
 *
 * lode_mds_on_request() runs on a server worker thread: it decodes the request with
 * proto/wire/codec.h (a malformed body is answered with the decoder's errno), answers reads
 * there with a read-only transaction, and hands mutations to the writer (mds/writer.h),
 * which answers them after their group commit.
 */
#ifndef LODE_MDS_HANDLERS_H
#define LODE_MDS_HANDLERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lode_req;
struct lode_store;
struct lode_placement;
struct lode_leases;
struct lode_writer;
struct lode_liveness;
struct lode_keyring;

/* How long a create that cannot be placed yet (no target UP to hold its copies) is held
 * and retried before it is answered EIO: long enough to ride over an OSS restart or the
 * MDS's own start, well inside a client's timeout. */
#define LODE_MDS_PLACE_WAIT_MS 10000u

struct lode_mds_opts {
	const char *dir;	  /* existing data directory */
	uint64_t map_size;	  /* 0: store default */
	unsigned down_ms;	  /* 0: LODE_PLACEMENT_DOWN_MS */
	int no_probe;		  /* 1: late targets are not probed (tests) */
	unsigned lease_ms;	  /* 0: LODE_LEASE_MS */
	unsigned grant_ms;	  /* 0 (or less): LODE_GRANT_MS; longer for tests only */
	int64_t orphan_grace_ns;  /* < 0: LODE_NS_ORPHAN_GRACE_NS */
	int format;		  /* 1: format a store with data but no version (lode_store_opts) */
	const uint8_t *cap_key;	  /* signs capabilities (proto/net/cap.h); NULL: --insecure */
	unsigned cap_lifetime_ms; /* 0: LODE_MDS_CAP_LIFETIME_MS */
	const struct lode_identity *identity; /* client groups' rules (identity.h), or NULL */
	const struct lode_keyring *keys;      /* proved on the MDS's own connections; NULL: none */
};

#define LODE_MDS_CAP_LIFETIME_MS 3600000u

struct lode_mds {
	struct lode_store *st;
	struct lode_placement *pl;
	struct lode_leases *leases; /* in the writer's run()/done() only */
	struct lode_grants *grants; /* directory grants (grant.h): run()/done() only */
	struct lode_writer *writer;
	struct lode_liveness *live;
	struct lode_mds_backup *backup; /* lodectl mds backup (backup.c) */
	uint64_t cluster_id;
	int64_t orphan_grace_ns;
	const struct lode_identity *identity; /* client groups' rules, or NULL: none */
	/* Capabilities: the key (a copy; zero when unsigned, --insecure) and their lifetime.
	 * Set at init, read-only after. */
	bool cap_signed;
	uint8_t cap_key[32];
	unsigned cap_lifetime_ms;
	unsigned write_cap_lifetime_ms; /* of write rights: under a lease (cap_make) */
	/* Counted after commit, for metrics (atomic; the writer's done() adds, any thread reads).
	 */
	uint64_t copy_reports;	  /* REPORT_COPY accepted: a copy marked degraded (or again) */
	uint64_t copies_moved;	  /* LAYOUT_SET_COPY done: a copy rebuilt elsewhere (repair) */
	uint64_t grants_given;	  /* directory grants given (MKDIR) */
	uint64_t grant_waits;	  /* names held until another client's grant lapsed */
	uint64_t grants_returned; /* grants their holders gave back (GRANT_RETURN) */
};

/* Opens the store, loads the targets, starts the writer. Returns 0 or -errno with a
 * one-line reason in why. */
int lode_mds_init(struct lode_mds *m, const struct lode_mds_opts *opts, char *why, size_t why_len);
/* Drains and stops the writer, closes the store. Call after the server has stopped. */
void lode_mds_fini(struct lode_mds *m);

/* struct lode_server_ops.on_request; ctx is the struct lode_mds. */
void lode_mds_on_request(void *ctx, struct lode_req *req);

/* A metrics collector (lode_metrics_collect_fn, mds_metrics.c) for the MDS's own metrics:
 * targets, group commit, copies. arg is the struct lode_mds. */
struct lode_metrics_buf;
void lode_mds_metrics_collect(void *arg, struct lode_metrics_buf *b);

#endif
