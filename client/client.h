/* SPDX-License-Identifier: MIT */
/*
 * liblode internals shared by its files: the client, open files, and the MDS/OSS call
 * helpers. Nothing here is public: liblode.so exports lode.h's functions only
 * (liblode.map), and internal functions that several files share are lode_client_*.
 *
 * Files call each other one way only; each calls the ones below it, never one above:
 *   repair.c            re-replicating degraded copies (through the file API)
 *   file.c              the file API: open, create, fsync, close, truncate, stat
 *   readahead.c         lode_pread: a handle's reads, with sequential read-ahead
 *   stream.c            lode_read_stream: a large read handed over piece by piece
 *   write.c             lode_pwrite, object truncate and fsync, on every copy
 *   replication.c       chained requests to a stripe's copies; the replication mode
 *   read.c              object reads, verified, with failover between copies
 *   window.c            the in-flight window of one operation
 *   handle.c            an open file's state: commit, lease, copies to report
 *   namespace.c         path resolution and the metadata calls
 *   client.c            connecting, credentials, the target table, MDS calls
 *   stripe.c            the striping formula (pure arithmetic)
 * (write.c reads old bytes through read.c for a read-modify-write; file.c resolves paths
 * through namespace.c; io.h declares the data path, stripe.h the formula.)
 */
#ifndef LODE_CLIENT_CLIENT_H
#define LODE_CLIENT_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "lode/lode.h"
#include "loop.h"
#include "rpc.h"
#include "wire_spec.h"

#define IO_THREADS_MAX	 4
#define TARGET_CONNS_MAX IO_THREADS_MAX
/* How long a queued close may wait for others to go with it, and how many may wait
 * (closer.c). */
#define CLOSE_DELAY_MS	5
#define CLOSE_QUEUE_MAX (4 * LODE_CLOSE_MANY_MAX)

struct target_slot {
	uint32_t id;
	int up;			   /* as the MDS last said */
	unsigned admin;		   /* as the MDS last said: LODE_TARGET_ACTIVE, ... */
	uint64_t bytes_free;	   /* as the MDS last said */
	uint64_t suspect_until_ms; /* a call to it failed: treat as down until then */
	char addr[LODE_ADDR_MAX + 1];
	/* One connection per I/O thread, used in turn, so that receiving and verifying the
	 * data of one OSS spreads over every thread (over RDMA at least two queue pairs: each
	 * has its own completion queue and credits, and the device works on them in
	 * parallel). conn[k] belongs to rpc[k % nrpc]. */
	struct lode_rpc_conn *conn[TARGET_CONNS_MAX];
	unsigned next_conn;
};

struct lode_client {
	struct lode_rpc *rpc[IO_THREADS_MAX]; /* rpc[0] also carries the MDS connection */
	unsigned nrpc;
	struct lode_rpc_conn *mds;
	unsigned timeout_ms;
	unsigned max_inflight;
	bool lazy;	/* lode_client_opts.lazy_namespace */
	bool lazy_data; /* lode_client_opts.lazy_data */
	uint64_t client_id;
	/* uid << 32 | gid: one atomic word, so that a reader never pairs one setting's uid
	 * with another's gid (lode_client_set_creds). A thread's override comes first. */
	_Atomic uint64_t creds;
	/* The process's supplementary groups, read at connect when the client runs with the
	 * process's ids; sent only while proc_groups (lode_client_set_creds clears it). */
	uint32_t groups[LODE_CRED_GROUPS_MAX];
	unsigned ngroups;
	_Atomic int proc_groups;

	_Atomic int replication; /* LODE_REPLICATION_*, set by lode_set_replication */
	/* Bumped when any write or truncate of this client starts and when it ends: read-ahead
	 * data fetched before a bump is never served after it (readahead.c). */
	_Atomic uint64_t write_gen;
	/* When calls to the MDS began to find nothing listening (0: it answered last). Such
	 * calls are retried for MDS_RESTART_GRACE_MS from then, not from each call's start,
	 * so that with the MDS gone every call after the first fails at once. */
	_Atomic uint64_t mds_gone_since_ms;

	/* Closes queued for one CLOSE_MANY (closer.c), all protected by close_lock */
	pthread_mutex_t close_lock;
	pthread_cond_t close_cond; /* the closer waits for work, flushers for answers */
	struct lode_wire_close_ref close_q[CLOSE_QUEUE_MAX];
	unsigned close_n;
	unsigned close_sending;	 /* messages sent and not answered yet */
	uint64_t close_first_ms; /* when the oldest queued close was queued */
	bool closer_started, closer_stop;
	pthread_t closer;

	/* Directory grants this client holds (grant.c), protected by grant_lock */
	pthread_mutex_t grant_lock;
	struct lode_grant *grants[64];
	unsigned ngrants;
	uint64_t grants_swept_ms;	  /* lapsed grants were last dropped then */
	_Atomic uint64_t grant_answers;	  /* lookups answered ENOENT from a grant */
	_Atomic uint64_t grants_returned; /* grants given back (GRANT_RETURN) */

	pthread_mutex_t lock;
	struct target_slot targets[LODE_TARGETS_MAX]; /* protected by lock */
	unsigned ntargets;			      /* protected by lock */
	uint64_t targets_refreshed_ms;		      /* protected by lock */
};

struct lode_file {
	struct lode_client *c;
	uint64_t ino;
	uint64_t handle;
	int flags;	/* O_ACCMODE bits of the open */
	bool exclusive; /* LODE_OPEN_EXCLUSIVE: its close is never queued (closer.c) */
	/* Fixed for a write handle. A read-only handle's targets change only in
	 * lode_client_layout_refresh, with rw held exclusively, read-ahead idle and lock held:
	 * read pieces read them under rw or read-ahead, anything else under lock */
	struct lode_wire_layout layout;
	struct lode_wire_attr attr;   /* as the open returned them */
	struct lode_wire_attr parent; /* CREATE: the parent's, after it; else ino 0 */
	unsigned lease_ms;

	/* Readers and writers take it shared (the OSS merges partial chunks and orders writes
	 * that share a chunk); truncate takes it exclusive. */
	pthread_rwlock_t rw;
	/* Reads and writes of the handle take turns (lode_client_io_enter): many of one kind
	 * at a time, never the two kinds at once. The OSS reads a chunk's checksum, then
	 * sends its bytes from the page cache, which a write of the chunk changes in place:
	 * a read overlapping a write of this handle (the mount's shared writer, with the
	 * kernel reading and writing back pages of the same file) got bytes and checksum of
	 * two different writes, took both copies for bad, had them marked degraded and failed
	 * with EIO (fsx through the mount, under load). */
	pthread_mutex_t io_lock;
	pthread_cond_t io_cond;
	unsigned io_active[2], io_waiting[2], io_turn; /* protected by io_lock */
	/* Held through a whole lode_fsync: a second fsync on the handle would find the
	 * stripes the first one took already gone, and return before they are synced. */
	pthread_mutex_t fsync_lock;
	/* Held through a whole COMMIT or CLOSE (lode_client_file_commit): each one's size and
	 * mtime are taken after the last one was answered, so an older one never lands at
	 * the MDS after a newer one (an EXTEND of the old size after a truncate's SET). */
	pthread_mutex_t commit_lock;
	pthread_mutex_t lock;
	uint64_t size;		/* protected by lock: size as this handle knows it */
	int64_t mtime_ns;	/* protected by lock: last write */
	bool dirty_meta;	/* protected by lock: size/mtime not yet committed */
	uint64_t meta_gen;	/* protected by lock: bumped with each change dirty_meta covers */
	bool size_set;		/* protected by lock: a truncate not yet committed */
	uint64_t dirty_stripes; /* protected by lock: stripes written since the last fsync */
	uint64_t lease_renewed_ms;  /* protected by lock */
	uint64_t degraded;	    /* protected by lock: copies known to miss data (MDS agrees) */
	uint64_t layout_checked_ms; /* protected by lock: when layout and degraded were last
				     * known current (the open, or a LAYOUT_GET) */
	uint64_t report_pending;    /* protected by lock: copies found failing, not yet reported */
	uint64_t report_bad_data;   /* protected by lock: of those, the ones with bad data */
	/* What each stripe's object takes on disk, as this handle's writes were answered (the
	 * largest answer per stripe: writes only add blocks). A handle that created its file
	 * (O_EXCL) and has neither truncated nor allocated since (stored_exact) knows from them
	 * what the file takes, for st_blocks, without an OBJ_STAT per stripe at each commit;
	 * a stripe it has not written has no object. */
	bool stored_exact; /* protected by lock */
	_Atomic uint64_t stored[LODE_LAYOUT_TARGETS_MAX];

	/* Sequential read-ahead of read-only handles (readahead.c): allocated on the first
	 * sequential reads, dropped for good once reads of this handle overlap in time. */
	struct readahead *ra;	    /* protected by lock (the pointer) */
	_Atomic unsigned readers;   /* lode_pread calls in progress */
	_Atomic bool ra_off;	    /* concurrent readers seen: the caller pipelines itself */
	_Atomic uint64_t ra_served; /* bytes served from read-ahead */

	/* The capability for the file's objects (cap.c): cap_lock serializes fetches. */
	pthread_mutex_t cap_lock;
	struct lode_wire_cap cap; /* protected by lock */
	uint64_t cap_renew_ms;	  /* protected by lock: renew from then on (0: none yet) */
	uint64_t cap_fetched_ms;  /* protected by lock: when it arrived */
	uint64_t cap_expire_ms;	  /* protected by lock: when it expires, by our clock */
};

/* ---- cap.c ---- */

/* Copies into *out the handle's capability for its objects, fetching one from the MDS
 * when it has none, when two thirds of its lifetime have passed, or (force) when one
 * was refused as expired and no newer one arrived since. Caller threads only (it may
 * wait for the MDS). Returns 0 or -errno. */
int lode_client_file_cap(struct lode_file *f, bool force, struct lode_wire_cap *out);

/* Gives a new handle the capability of its OPEN or CREATE reply, sent at sent_ms (our
 * clock, before the request); one that is not for the handle's file is ignored. */
void lode_client_file_cap_init(struct lode_file *f, const struct lode_wire_cap_rep *rep,
			       uint64_t sent_ms);

/* ---- client.c ---- */

/* Credentials for a request from this thread: its override, else the client's. */
struct lode_wire_cred lode_client_cred(const struct lode_client *c);

/* A call to the MDS with a fixed reply body and optional reply data. */
int lode_client_mds_call(struct lode_client *c, uint8_t op, const void *body, uint32_t body_len,
			 const struct iovec *data, int data_iovcnt, void *reply, uint32_t reply_max,
			 void *reply_data, uint64_t reply_data_max, uint64_t *reply_data_len);
/* A call with an empty reply that proves a capability for a file (REPORT_COPY). */
int lode_client_mds_call_cap(struct lode_client *c, uint8_t op, const void *body, uint32_t body_len,
			     const struct lode_wire_cap *cap);
/* The same without reply data, lazy or durable whatever the client's lazy_namespace. Lazy: the
 * MDS answers once the change is applied, before it is durable (LODE_WIRE_F_LAZY), for a
 * change no caller was promised durability of (a close's size, say); the next durable
 * request or SYNC of any client makes it durable, and the MDS does within
 * LODE_WRITER_LAZY_MS. An op that cannot be lazy is sent durable. */
int lode_client_mds_call_as(struct lode_client *c, uint8_t op, bool lazy, const void *body,
			    uint32_t body_len, const struct iovec *data, int data_iovcnt,
			    void *reply, uint32_t reply_max);

/* A call that adds the name (len bytes) in directory dir (lode_op_adds_name): it carries
 * the client's grant of dir, if any (grant.c), which its reply renews or ends. MKDIR:
 * *new_grant is the new directory's grant, if the MDS gave one (0 otherwise), and
 * *sent_ms when the call was sent. */
int lode_client_mds_call_name(struct lode_client *c, uint8_t op, uint64_t dir, const char *name,
			      size_t len, const void *body, uint32_t body_len, void *reply,
			      uint32_t reply_max, uint64_t *new_grant, uint64_t *sent_ms);

/* ---- grant.c ---- */

struct lode_grant;
void lode_client_grants_fini(struct lode_client *c);
/* A MKDIR's reply gave token for the directory dir (its attributes) to a call sent at
 * sent_ms with credentials cred: held, if those are its owner's with search permission. */
void lode_client_grant_new(struct lode_client *c, const struct lode_wire_attr *dir, uint64_t token,
			   uint64_t sent_ms, const struct lode_wire_cred *cred);
/* Before a call that adds name in dir: the name is noted as there, and the token to send
 * returned (0: no grant of dir held). */
uint64_t lode_client_grant_adding(struct lode_client *c, uint64_t dir, const char *name,
				  size_t len);
/* After it: the grant of token is renewed from sent_ms, or dropped. Returns true when it
 * was held until now and dropped: the caller gives it back (GRANT_RETURN) if the MDS said
 * it was not renewed, so that another client's name waiting for it goes on. */
bool lode_client_grant_added(struct lode_client *c, uint64_t dir, uint64_t token, uint64_t sent_ms,
			     bool renewed);
/* The grant of dir, if held, is dropped (a change of the directory's permissions). Returns
 * its token, 0 if none was held. */
uint64_t lode_client_grant_drop(struct lode_client *c, uint64_t dir);
/* Gives back the grant of dir with token, just dropped (GRANT_RETURN): another client's name
 * there waits at the MDS until then, or until the grant lapses. One try: a failure only
 * leaves such a name waiting out the lapse. */
void lode_client_grant_return(struct lode_client *c, uint64_t dir, uint64_t token);
/* True when a valid grant of dir says name is not there, for credentials cred. */
bool lode_client_grant_says_missing(struct lode_client *c, uint64_t dir, const char *name,
				    size_t len, const struct lode_wire_cred *cred);

/* The connection to a target; refreshes the target list from the MDS if unknown. */
int lode_client_target_conn(struct lode_client *c, uint32_t id, struct lode_rpc_conn **out);
/* The chain hop of target id: its address as the target list has it (never blocks). */
int lode_client_target_hop(struct lode_client *c, uint32_t id, struct lode_wire_chain_hop *h);
/* Re-reads the target list (after a connection failure: the OSS may have moved). */
int lode_client_targets_refresh(struct lode_client *c);
/* Re-reads it if a target looked down and the list is older than a second or two. Caller
 * threads only (it waits for the MDS). */
void lode_client_targets_maybe_refresh(struct lode_client *c);
/* Whether a target is worth trying first: up at the MDS and no recent failure here. Never
 * blocks (the I/O threads call it). */
bool lode_client_target_is_up(struct lode_client *c, uint32_t id);
/* How the target looks from here: 0 when the MDS says it is down, 1 when a call to it
 * failed lately, 2 when up (or not known yet). Never blocks. */
unsigned lode_client_target_health(struct lode_client *c, uint32_t id);
/* A call to the target failed as if it were down: avoid it for a moment. */
void lode_client_target_suspect(struct lode_client *c, uint32_t id);
/* A write or truncate of this client starts or ends (see write_gen). */
void lode_client_write_gen_bump(struct lode_client *c);

void lode_client_attr_to_stat(const struct lode_wire_attr *a, struct lode_stat *st);

/* ---- closer.c ---- */

void lode_client_closer_init(struct lode_client *c);
/* Queues the close of a write handle with nothing left to commit; false when it must be
 * sent now (the queue is full, or the client is going away). */
bool lode_client_close_defer(struct lode_client *c, uint64_t ino, uint64_t handle);
/* Returns once every close queued before the call is answered. */
void lode_client_closes_flush(struct lode_client *c);
/* Sends what is queued and stops the thread (lode_disconnect). */
void lode_client_closer_stop(struct lode_client *c);

/* ---- namespace.c ---- */

/* The parent directory of path and its last name (name: LODE_NAME_MAX + 1 bytes);
 * -EINVAL for "/". */
int lode_client_resolve_parent(struct lode_client *c, const char *path, uint64_t *parent,
			       char *name);
/* The inode of the regular file at path: -EISDIR for a directory, -EINVAL for another
 * type. A call by that inode that gets -ESTALE (the name was deleted or renamed over
 * since) should resolve the path once more. */
int lode_client_resolve_regular(struct lode_client *c, const char *path, uint64_t *ino);

/* ---- handle.c ---- */

/* lode_ll_open with more LODE_OPEN_* flags (LODE_OPEN_EXCLUSIVE). */
int lode_client_ll_open(struct lode_client *c, uint64_t ino, int flags, uint32_t wire_flags,
			struct lode_file **out);
/* A handle for an OPEN or CREATE reply, whose request was sent at sent_ms (flags: the
 * O_ACCMODE of the handle). */
int lode_client_file_new(struct lode_client *c, const struct lode_wire_open_rep *rep,
			 uint64_t sent_ms, int flags, struct lode_file **out);
void lode_client_file_free(struct lode_file *f);
/* Sends COMMIT (op LODE_OP_COMMIT) or CLOSE with the size and mtime this handle knows;
 * durable: answered only once durable (fsync; truncate and fallocate unless the client is
 * lazy_namespace), else once visible (close, flush, a lease renewal: close-to-open needs
 * the size seen, not kept across a power cut). */
int lode_client_file_commit(struct lode_file *f, uint8_t op, bool durable);
/* Reads (LODE_IO_READ) and writes (LODE_IO_WRITE) of a handle: enter waits while the
 * other kind runs, or waits and it is its turn; a kind that finished hands the turn to the
 * other, so neither starves. */
enum { LODE_IO_READ, LODE_IO_WRITE };
void lode_client_io_enter(struct lode_file *f, unsigned kind);
void lode_client_io_leave(struct lode_file *f, unsigned kind);
/* Renews the write lease once half of it has passed (from the write path). */
int lode_client_file_lease_renew_if_due(struct lode_file *f);
/* Copies found failing (any thread; never blocks) and their report to the MDS (caller
 * threads: it waits). A write is acknowledged only after its failed copies are reported,
 * so that no reader can take a copy that missed it for a good one. */
void lode_client_file_report(struct lode_file *f, unsigned idx, unsigned kind);
int lode_client_file_reports_flush(struct lode_file *f);

/* ---- repair.c ---- */

/* Writes object id on target dst from scratch as a copy of the one on src: obj_size bytes,
 * every chunk verified against src's checksums (which go on unchanged), then fsynced. buf
 * holds LODE_CLIENT_COPY_STEP bytes; *copied grows by the bytes written. Returns 0,
 * -EBADMSG (the source is bad: nothing of it spreads) or another -errno. */
#define LODE_CLIENT_COPY_STEP (4u << 20) /* LODE_DATA_MAX: one request each way */
int lode_client_copy_object(struct lode_client *c, const struct lode_wire_objid *id, uint32_t src,
			    uint32_t dst, uint64_t obj_size, char *buf, uint64_t *copied);
/* One call to target (OBJ_* requests), the reply body into reply. */
int lode_client_obj_call(struct lode_client *c, uint32_t target, uint8_t op, const void *body,
			 uint32_t body_len, void *reply, uint32_t reply_max);

#endif
