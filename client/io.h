/* SPDX-License-Identifier: MIT */
/*
 * liblode's data path, shared by its files: the in-flight window (window.c), object reads
 * with failover (read.c), chained replication (replication.c), object writes, truncates
 * and fsyncs (write.c), and a handle's read-ahead (readahead.c). Nothing here is public.
 */
#ifndef LODE_CLIENT_IO_H
#define LODE_CLIENT_IO_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "stripe.h"

#define CHUNK	 LODE_CHUNK_SIZE
#define SUMS_MAX (LODE_DATA_MAX / LODE_CHUNK_SIZE + 2)

static inline uint64_t round_down(uint64_t x, uint64_t a)
{
	return x - x % a;
}

static inline uint64_t round_up(uint64_t x, uint64_t a)
{
	return round_down(x + a - 1, a);
}

/* A failure that says nothing about the copy's data (the server is gone or slow). */
static inline bool lode_client_unreachable(int rc)
{
	return rc == -ECONNRESET || rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -EPIPE ||
	       rc == -ESHUTDOWN || rc == -EHOSTUNREACH || rc == -ENXIO || rc == -ECONNABORTED;
}

/*
 * A failure that says the copy is unusable, not that the request was wrong. A copy that
 * cannot be reached (or whose disk failed) does not fail a write while another copy
 * stored it: that copy is reported degraded to the MDS before the write is acknowledged,
 * and readers skip it until a repair. A full disk or a checksum rejected in transit fails
 * the write itself.
 */
static inline bool lode_client_copy_failure(int rc)
{
	return lode_client_unreachable(rc) || rc == -EIO;
}

/* ---- in-flight window (window.c) ---- */

/* A piece of a streamed read that completed, verified, waiting for the caller. */
struct window_piece {
	struct window_piece *next;
	char *dst;
	uint64_t len;
};

struct window {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned inflight; /* protected by lock */
	int error;	   /* protected by lock: first error */
	/* lode_read_stream (stream.c) only: pieces done, oldest first; protected by lock */
	bool stream;
	struct window_piece *done, **done_tail;
	/* Set by whoever starts the pieces: a piece that finds every copy short of the size,
	 * or no copy left to read after it skipped one as degraded, ends with -ESTALE instead
	 * of reading a hole or failing, for the handle's layout may be out of date
	 * (lode_client_layout_refresh). A stream changes it between pieces, as its layout ages,
	 * while pieces already started complete on other threads */
	atomic_bool recheck;
	/* Set by a caller that waits for one piece alone: its calls are made on the caller's
	 * thread (lode_rpc_call_direct), where the reply completes it, instead of through an
	 * I/O thread, whose wakeups for the request and for the reply were most of a small
	 * read's time (and of a small write's, to one copy or down a chain) */
	bool direct;
};

void lode_client_window_init(struct window *w);
void lode_client_window_destroy(struct window *w);
/* Waits until fewer than max are in flight, then counts one more. Returns the first error
 * so far (the caller stops submitting). */
int lode_client_window_enter(struct window *w, unsigned max);
/* One request left, with its result (0 or -errno). Any thread; never blocks for long. */
void lode_client_window_leave(struct window *w, int err);
/* Waits until nothing is in flight; returns the first error. */
int lode_client_window_drain(struct window *w);
/* A read piece of len bytes at dst completed and verified: for a streaming window it is
 * queued for the caller, then the piece leaves the window. */
void lode_client_window_piece_done(struct window *w, char *dst, uint64_t len);
/* Streaming window: waits until a piece is done, an error is recorded, or fewer than max
 * are in flight; takes the done pieces (the caller frees them) and says how many are in
 * flight. Returns the first error. */
int lode_client_window_wait(struct window *w, unsigned max, struct window_piece **done,
			    unsigned *inflight);

/* ---- object reads (read.c) ---- */

/* What a read of len bytes at off may cover, as this handle knows the size: the bytes to
 * read (0 at or past the end; at most SSIZE_MAX), or -EBADF for a write-only handle. Also
 * refreshes the target table when it is due. lode_pread and lode_read_stream begin here. */
ssize_t lode_client_read_span(struct lode_file *f, size_t len, uint64_t off);

/* Starts reading [off, off + len) of the objects into buf (zeros where no data was
 * written); every piece started is counted in w. Returns 0, or the error that stopped it
 * from starting the rest (lode_client_window_drain(w) waits for what did start). */
int lode_client_objects_read_start(struct lode_file *f, struct window *w, char *buf, uint64_t len,
				   uint64_t off);
/* Reads [off, off + len) of the objects into buf (zeros where no data was written). With
 * recheck, when the handle's layout is older than LODE_LAYOUT_RECHECK_MS: -ESTALE as
 * window.recheck says (the caller refreshes the layout without holding f->rw, and reads
 * again without recheck). */
int lode_client_objects_read(struct lode_file *f, char *buf, uint64_t len, uint64_t off,
			     bool recheck);

/* How old a read-only handle's layout may be before a hole or an all-degraded stripe
 * makes it ask the MDS again. A copy moved (drain, rebalance) after the last check keeps
 * its old object for the orphan grace (60 s by default), so the check only has to come
 * before that. */
#define LODE_LAYOUT_RECHECK_MS 1000
/* Whether a read-only handle's layout was last known current longer ago than that. */
bool lode_client_layout_recheck_due(struct lode_file *f);
/* Asks the MDS for the file's layout (LAYOUT_GET) and takes the targets and degraded
 * copies of the answer, if it is still the same generation and shape: a long-open reader
 * then follows copies moved since it opened, and stops avoiding copies repaired since.
 * Waits for the handle's read-ahead and takes f->rw exclusively: the caller holds neither
 * (nor does a lode_read_stream callback on the same handle). Nothing to do for a write
 * handle (a move opens the file exclusively, so its copies cannot move) or a layout
 * checked less than LODE_LAYOUT_RECHECK_MS ago (by another reader of the handle, say).
 * Returns 0 (also when the file was deleted: its reader keeps the old view), -ENOMEM, or
 * -EIO when the MDS could not answer (the layout stays as it was, and due). */
int lode_client_layout_refresh(struct lode_file *f);
/* Reads [start, start + len) of one stripe object into buf, verified, zeros where the
 * object has no data. start is chunk aligned. */
int lode_client_object_read_sync(struct lode_file *f, unsigned stripe, uint64_t start, char *buf,
				 uint64_t len);

/* ---- chained requests (replication.c) ---- */

/*
 * One chained OBJ_WRITE or OBJ_FSYNC of one stripe: sent to the first copy of idx[] with
 * the others as its chain (proto/wire/wire_spec.h), answered with every copy's status. A copy
 * the request did not reach (ECANCELED; or every copy, when the head refused or broke the
 * connection) gets it again in a next round, as a shorter chain headed by the first of
 * them: each round drops at least its head, so there are at most n rounds. A head that
 * timed out may still forward the request late, so then every copy of the round counts as
 * failed instead. Rounds after the first are sent from an I/O thread, which must not
 * wait: every connection and address is resolved up front.
 */
struct chain {
	struct lode_call call;
	struct lode_file *f;
	uint8_t op;
	unsigned n;			  /* copies in this round */
	unsigned idx[LODE_CHAIN_MAX + 1]; /* their layout indexes, head first */
	struct lode_rpc_conn *conn[LODE_CHAIN_MAX + 1];
	struct lode_wire_chain_hop hop[LODE_CHAIN_MAX + 1]; /* their ids and addresses */
	const struct iovec *data;	  /* OBJ_WRITE: the bytes, valid until finish */
	size_t fixed_len;		  /* body bytes before the chain */
	uint64_t body[LODE_BODY_MAX / 8]; /* the request: fixed part, then the chain */
	struct lode_wire_cap cap;	  /* sent with every round */
	struct lode_wire_obj_chain_rep rep;
	/* results: written by one completion at a time (a resubmission follows the last) */
	unsigned good;	 /* copies that took it */
	int err;	 /* a failure that fails the operation itself */
	int copy_err;	 /* the last failure of one copy (recorded as degraded) */
	uint64_t stored; /* the largest bytes_stored a head that took it answered */
	/* OBJ_WRITE: copies the head stored the write for and could not forward it to
	 * (ECANCELED) are not sent it alone, where it could land after another writer's
	 * overlapping write that the head ordered after it: the round ends with -ERESTART,
	 * and the writer sends the whole write through the head again */
	bool head_orders;
	/* each round is made on the caller's thread (struct window's direct), finish too */
	bool direct;
	void (*finish)(struct chain *ch);
	void *arg;
};

/* Adds copy idx to the chain (caller thread: it may ask the MDS for the target list).
 * Returns 0, or -errno when the copy cannot be reached at all. */
int lode_client_chain_add(struct chain *ch, unsigned idx);
/* Sends the chain's current round; finish runs when every round is done. */
void lode_client_chain_submit(struct chain *ch);

/* ---- object truncate and fsync (write.c), read-ahead (readahead.c) ---- */

/* As lode_pwrite, of only the bytes below the file's size when the write starts (so it
 * never grows the file). Returns the bytes written (0 at or past the end) or -errno. */
ssize_t lode_client_pwrite_within_size(struct lode_file *f, const void *buf, size_t len,
				       uint64_t off);
/* Truncates (or extends) every object of the file to what new_size means for it. */
int lode_client_objects_truncate(struct lode_file *f, uint64_t new_size);
/* Reserves disk space on every live copy for what the file range [off, end) takes in
 * each object (OBJ_ALLOCATE), sizes unchanged. */
int lode_client_objects_allocate(struct lode_file *f, uint64_t off, uint64_t end);
/* The bytes one copy of the file takes on its targets' disks (OBJ_STAT of the first live
 * copy of each stripe). Returns 0 or -errno; *bytes written only on success. */
int lode_client_objects_stored(struct lode_file *f, uint64_t *bytes);
/* A write of stripe's object was answered with the bytes the object takes now (struct
 * lode_file's stored). Any thread; never blocks. */
void lode_client_file_stored(struct lode_file *f, unsigned stripe, uint64_t bytes);
/* Makes the written stripes (bit s % 64 for stripe s) durable on every live copy, and
 * sends the file's durable COMMIT while the object servers sync (its result in
 * *commit_rc): fsync returns when both are durable, and neither waits for the other. If
 * the syncs could not all be sent, the COMMIT waits for their retry, and is not sent if
 * that fails too. */
int lode_client_objects_fsync_commit(struct lode_file *f, uint64_t stripes, int *commit_rc);
/* Waits for the handle's read-ahead and frees it (lode_close). */
void lode_client_readahead_free(struct lode_file *f);

#endif
