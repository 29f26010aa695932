/* SPDX-License-Identifier: MIT */
/*
 * lode_writer: group commit. Every mutation of the MDS runs in a batch of the writer's,
 * one batch at a time.
 *
 * Worker threads submit operations (any thread, never blocks for long); the writer takes
 * everything queued at once, runs each op's run() in a nested transaction of one write
 * transaction (so a failing op rolls back alone and the others still commit), commits that
 * transaction durably, and only then calls every op's done() with its final status: the
 * op's own result, or the commit's error if the commit failed. A mutation is thus
 * acknowledged only once it is on disk, and one sync covers a whole batch. The exception
 * is a batch of lazy ops only (a client's choice, LODE_WIRE_F_LAZY): it is committed
 * (consistent on disk, visible to every reader) and answered before the sync that makes
 * it durable, which the next batch with an op that is not lazy does, or the writer once
 * idle for LODE_WRITER_LAZY_MS (if that sync is a checkpoint, a flusher thread first
 * writes the data file's pages while batches go on, so that the checkpoint holds up no
 * change for long).
 *
 * run() and done() are called one op at a time, in submission order: on the writer
 * thread, or, for a lazy op submitted while the writer is idle (nothing queued, no batch
 * running), on the submitting thread within lode_writer_submit, as a batch of its own.
 * State "of the writer thread" (leases, handles) is state only run() and done() touch.
 * done() is where the reply is sent and in-memory state that must follow the commit is
 * updated. done() owns the op afterwards (usually frees it).
 */
#ifndef LODE_MDS_WRITER_H
#define LODE_MDS_WRITER_H

#include <stdbool.h>

#include "store.h"

struct lode_writer;

struct lode_wop {
	struct lode_wop *next; /* writer's */
	int status;	       /* writer's: result of run() */
	/* Runs in its own nested write txn. Returns 0 or -errno (the txn is then aborted). */
	int (*run)(struct lode_wop *op, struct lode_txn *t);
	/* After the batch's commit (status: 0 or -errno). Must not touch the store. */
	void (*done)(struct lode_wop *op, int status);
	/* Set by the caller: done() may come before the commit is durable (the client sent
	 * LODE_WIRE_F_LAZY). A batch of lazy ops only is not synced; the next batch with an
	 * op that is not lazy syncs it, and so does the writer after LODE_WRITER_LAZY_MS. */
	bool lazy;
};

/* The longest a lazy op's change stays not durable while the writer is idle. */
#define LODE_WRITER_LAZY_MS 1000

/* Starts the writer thread. Returns 0 or -errno. */
int lode_writer_start(struct lode_writer **out, struct lode_store *st);
/* Queues op, or runs it at once if it is lazy and the writer idle (done() may then have
 * been called when this returns: the caller must not touch op after). Any thread, holding
 * no lock that run() or done() takes. After lode_writer_stop() began, done(op, -ESHUTDOWN)
 * is called at once on the caller's thread. */
void lode_writer_submit(struct lode_writer *w, struct lode_wop *op);
/* Runs what is queued, stops the thread and frees the writer. NULL is accepted. */
void lode_writer_stop(struct lode_writer *w);
/* Sizes of the batches run (ops per transaction), for metrics: batch_sizes[i] counts the
 * batches of at most lode_writer_batch_bounds[i] ops and more than the bound before (the
 * last, more than every bound); ops is the sum of their sizes. */
#define LODE_WRITER_BATCH_BOUNDS 11
extern const double lode_writer_batch_bounds[LODE_WRITER_BATCH_BOUNDS];
struct lode_writer_stats {
	uint64_t batch_sizes[LODE_WRITER_BATCH_BOUNDS + 1];
	uint64_t ops;
	uint64_t written; /* group commits that changed the database */
	uint64_t syncs;	  /* syncs that made them durable (lode_store_sync) */
	int failed;	  /* 0, or the -errno of the sync that failed: no change is taken since */
};
/* A copy of the counts so far. Any thread (the counts are read atomically, one by one). */
void lode_writer_stats(struct lode_writer *w, struct lode_writer_stats *out);
/* Number of batches committed (for tests and stats). */
unsigned long lode_writer_batches(struct lode_writer *w);

#endif
