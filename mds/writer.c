/* SPDX-License-Identifier: MIT */
/*
 * The writer thread and its queue.
 *
 * Why nested transactions: LMDB allows one write txn at a time, and an fsync per request
 * would cap the MDS at a few hundred mutations a second. Batching everything that arrived
 * while the previous batch was being committed into one txn amortizes the fsync; a child
 * txn per op keeps the ops independent (a failing rename must not undo a create next to
 * it). An op alone in its batch, as every inline one is, runs in the batch's txn itself:
 * aborting that undoes it just as well, and a child cost 3-6 us of the 45-60 us of a lazy
 * create at the MDS. If the final commit fails, nothing of the batch is on disk, so every
 * op that had succeeded is told the commit's error instead.
 *
 * Why a failed sync stops every later change: after fdatasync fails, the pages it could not
 * write stay in the page cache marked clean, so a later sync that succeeds does not write
 * them and would vouch for a snapshot the disk does not hold. The writer says so once
 * (lode_mds_store_sync_failed); the store refuses every write transaction after with that
 * error, so every change is answered with it; what was answered as durable before is on
 * disk, and the store reopens at its last recorded sync (lode_store_sync).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "writer.h"

#define MAX_BATCH 1024u
/* An inline batch (run_inline) that took longer than this, a disk whose writes are being
 * throttled say, held a server worker and every connection on it: lazy changes then go to
 * the writer thread again for INLINE_BACKOFF_MS. */
#define INLINE_SLOW_US	  2000u
#define INLINE_BACKOFF_MS 1000u
/*
 * After a durable batch, the writer thread starts writing the store's dirty pages
 * (lode_store_writeback) once this many commits (transactions, lode_store_last_txnid) went
 * by since it last did: a quarter of a checkpoint's commits (CKPT_COMMITS in store.c).
 * Lazy changes are not written ahead that way: their pages are written just before the
 * sync that checkpoints them, by the flusher thread (flusher_main). Starting the writes
 * every 100 ms while lazy changes waited, as before, cost their rate: medians of 12 runs
 * of 64 processes creating files over two lazy mounts, 3,214 creates/s with it, 4,161
 * without; 943 and 1,073 files/s in the 64-process checkpoint storm. Every 250 ms gained
 * nothing (2,963 and 985). What it bought, a rename p99 of 52-54 ms in that storm, holds
 * with the flush on its own thread (49.9 ms; 103.8 with it on the writer thread, where
 * the changes sent there waited it out).
 */
#define WRITEBACK_COMMITS 32u

/* The flusher thread's job (flush_state, under lock): nothing, a flush asked for, running,
 * or done and not yet followed by its sync. */
enum flush_state { FLUSH_IDLE, FLUSH_ASKED, FLUSH_RUNNING, FLUSH_DONE };

struct lode_writer {
	struct lode_store *st;
	pthread_t thread;
	/* Writes the data file's pages before a lazy checkpoint (lode_store_flush) on its
	 * own thread, so that the writer thread goes on running batches meanwhile: a durable
	 * change does not wait out a flush of a second's lazy pages. */
	pthread_t flusher;
	pthread_cond_t flush_cond;    /* the flusher waits on it, with lock */
	enum flush_state flush_state; /* protected by lock */
	/* Held while a batch runs or the store syncs, on whichever thread does it: batches
	 * run one at a time, and what the writer header calls "the writer thread only" is
	 * state touched under this lock. Taken before lock, never after. */
	pthread_mutex_t batch_lock;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct lode_wop *head; /* protected by lock: queue, oldest first */
	struct lode_wop *tail; /* protected by lock */
	int stopping;	       /* protected by lock */
	unsigned long batches; /* batch_lock (read after join or racily for stats) */
	/* Written under batch_lock, read atomically by the idle writer: when a lazy batch was
	 * committed and not yet synced (0: everything committed is durable) */
	uint64_t unsynced_ms;
	uint64_t inline_off_until_ms;	/* batch_lock: no inline batch before (run_inline) */
	uint64_t wb_txnid;		/* writer thread: the last txnid at its last writeback */
	struct lode_writer_stats stats; /* written under batch_lock, read atomically */
};

const double lode_writer_batch_bounds[LODE_WRITER_BATCH_BOUNDS] = {1,  2,   4,	 8,   16,  32,
								   64, 128, 256, 512, 1024};

/* Stats have one writer at a time (batch_lock): a plain add, published atomically. */
static void count_batch(struct lode_writer *w, unsigned n)
{
	unsigned b = 0;

	while (b < LODE_WRITER_BATCH_BOUNDS && n > lode_writer_batch_bounds[b])
		b++;
	__atomic_store_n(&w->stats.batch_sizes[b], w->stats.batch_sizes[b] + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&w->stats.ops, w->stats.ops + n, __ATOMIC_RELAXED);
}

/* Microseconds of CLOCK_MONOTONIC. */
static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Milliseconds of CLOCK_MONOTONIC, the clock of the writer's condition variable. */
static uint64_t now_ms(void)
{
	return now_us() / 1000;
}

/* Makes every commit so far durable (batch_lock held). Returns 0 or -errno. */
static int sync_now(struct lode_writer *w)
{
	int rc = lode_store_sync(w->st);

	__atomic_store_n(&w->unsynced_ms, 0, __ATOMIC_RELAXED);
	if (!rc) {
		__atomic_store_n(&w->stats.syncs, w->stats.syncs + 1, __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_store_n(&w->stats.failed, rc, __ATOMIC_RELAXED); /* see the top of this file */
	fprintf(stderr,
		"lode-mds: syncing the store failed (%s): it takes no more changes. What was "
		"acknowledged as durable is on disk; check the disk, then restart the MDS (it "
		"reopens at its last recorded sync)\n",
		strerror(-rc));
	return rc;
}

/* Runs a batch, then calls each op's done (batch_lock held). Returns whether every op of
 * it was lazy. */
static bool run_batch(struct lode_writer *w, struct lode_wop *batch)
{
	struct lode_txn top, child;
	struct lode_wop *op, *next;
	uint64_t last = lode_store_last_txnid(w->st);
	bool lazy = true; /* every op of the batch is */
	/* an op alone in its batch (every inline one) runs in the batch's transaction, aborted
	 * below if it fails: a child would only copy its pages once more */
	bool alone = !batch->next;
	unsigned n = 0;
	int rc;

	rc = lode_store_write_begin(w->st, NULL, &top);
	for (op = batch; op; op = op->next) {
		n++;
		lazy = lazy && op->lazy;
		if (rc) {
			op->status = rc;
			continue;
		}
		if (alone) {
			op->status = op->run(op, &top);
			continue;
		}
		op->status = lode_store_write_begin(w->st, &top, &child);
		if (op->status)
			continue;
		op->status = op->run(op, &child);
		if (op->status)
			lode_store_abort(&child);
		else
			op->status = lode_store_commit(&child);
	}
	if (!rc && alone && batch->status) {
		lode_store_abort(&top);
	} else if (!rc) {
		bool changed;

		rc = lode_store_commit(&top);
		w->batches++;
		/* a batch of reads only (a CLOSE without commit) writes and syncs nothing */
		changed = !rc && lode_store_last_txnid(w->st) != last;
		if (changed)
			__atomic_store_n(&w->stats.written, w->stats.written + 1, __ATOMIC_RELAXED);
		if (changed && lazy && !w->unsynced_ms)
			__atomic_store_n(&w->unsynced_ms, now_ms(), __ATOMIC_RELAXED);
		else if (!rc && !lazy && (changed || w->unsynced_ms))
			rc = sync_now(w);
	}
	count_batch(w, n);
	for (op = batch; op; op = next) {
		next = op->next;
		op->done(op, op->status ? op->status : rc);
	}
	return lazy;
}

/* Detaches up to MAX_BATCH queued ops (lock held): a bounded batch bounds both the
 * latency of its first op and the dirty pages of one LMDB transaction. */
static struct lode_wop *take_batch(struct lode_writer *w)
{
	struct lode_wop *batch = w->head, *last = batch;

	for (unsigned n = 1; n < MAX_BATCH && last->next; n++)
		last = last->next;
	w->head = last->next;
	if (!w->head)
		w->tail = NULL;
	last->next = NULL;
	return batch;
}

/* Waits on cond until deadline_ms (now_ms's clock), lock held. */
static void wait_until(struct lode_writer *w, uint64_t deadline_ms)
{
	struct timespec ts = {.tv_sec = (time_t)(deadline_ms / 1000),
			      .tv_nsec = (long)(deadline_ms % 1000) * 1000000};

	pthread_cond_timedwait(&w->cond, &w->lock, &ts);
}

/* Syncs what lazy batches left unsynced, if anything (neither lock held). */
static void sync_unsynced(struct lode_writer *w)
{
	pthread_mutex_lock(&w->batch_lock);
	if (w->unsynced_ms)
		sync_now(w);
	pthread_mutex_unlock(&w->batch_lock);
}

/* Starts writing the store's dirty pages if WRITEBACK_COMMITS went by since the last time
 * (writer thread, no lock held). */
static void writeback_if_due(struct lode_writer *w)
{
	uint64_t txnid = lode_store_last_txnid(w->st);

	if (txnid - w->wb_txnid < WRITEBACK_COMMITS)
		return;
	lode_store_writeback(w->st);
	w->wb_txnid = txnid;
}

/*
 * The flusher thread: each flush asked for (the writer, before a lazy sync that
 * checkpoints) writes the data file's pages without the batch lock while changes go on,
 * so that the checkpoint, during which none can run, has only what they changed meanwhile
 * left to write: 0.25-2 ms under 64 lazy creators, against the 40-140 ms the flush took.
 */
static void *flusher_main(void *arg)
{
	struct lode_writer *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (w->flush_state != FLUSH_ASKED && !w->stopping)
			pthread_cond_wait(&w->flush_cond, &w->lock);
		if (w->stopping)
			break;
		w->flush_state = FLUSH_RUNNING;
		pthread_mutex_unlock(&w->lock);
		lode_store_flush(w->st);
		pthread_mutex_lock(&w->lock);
		w->flush_state = FLUSH_DONE;
		pthread_cond_signal(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/*
 * What the idle writer does about lazy changes not yet synced (lock held; none queued,
 * not stopping), given when they were first left unsynced (0: none). Returns after one
 * step: a wait, or a sync. They wait at most LODE_WRITER_LAZY_MS for their sync; a sync
 * that checkpoints has the flusher write their pages first, and waits for it.
 */
static void idle_step(struct lode_writer *w, uint64_t unsynced)
{
	uint64_t deadline = unsynced + LODE_WRITER_LAZY_MS;

	if (!unsynced) {
		if (w->flush_state == FLUSH_DONE)
			w->flush_state = FLUSH_IDLE; /* a durable batch synced them meanwhile */
		pthread_cond_wait(&w->cond, &w->lock);
		return;
	}
	switch (w->flush_state) {
	case FLUSH_ASKED:
	case FLUSH_RUNNING:
		pthread_cond_wait(&w->cond, &w->lock); /* woken when it is done, or by an op */
		return;
	case FLUSH_IDLE:
		if (now_ms() < deadline) {
			wait_until(w, deadline);
			return;
		}
		if (lode_store_checkpoint_due(w->st)) {
			w->flush_state = FLUSH_ASKED;
			pthread_cond_signal(&w->flush_cond);
			return;
		}
		break; /* a sync of the log only: nothing to flush */
	case FLUSH_DONE:
		w->flush_state = FLUSH_IDLE;
		break;
	}
	pthread_mutex_unlock(&w->lock);
	sync_unsynced(w);
	pthread_mutex_lock(&w->lock);
}

static void *writer_main(void *arg)
{
	struct lode_writer *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct lode_wop *batch;
		bool lazy;

		while (!w->head && !w->stopping)
			idle_step(w, __atomic_load_n(&w->unsynced_ms, __ATOMIC_RELAXED));
		if (!w->head)
			break; /* stopping and drained */
		/* the batch lock first (the lock order): an op queued is then never overtaken
		 * by a lazy one run inline (lode_writer_submit) */
		pthread_mutex_unlock(&w->lock);
		pthread_mutex_lock(&w->batch_lock);
		pthread_mutex_lock(&w->lock);
		batch = take_batch(w); /* only this thread takes from the queue: still there */
		pthread_mutex_unlock(&w->lock);
		lazy = run_batch(w, batch);
		pthread_mutex_unlock(&w->batch_lock);
		if (!lazy)
			writeback_if_due(w);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	sync_unsynced(w); /* stopping: what was answered is durable */
	return NULL;
}

static int cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t a;
	int rc = pthread_condattr_init(&a);

	if (rc)
		return rc;
	rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	if (!rc)
		rc = pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
	return rc;
}

static void stop_flusher(struct lode_writer *w)
{
	pthread_mutex_lock(&w->lock);
	w->stopping = 1;
	pthread_cond_signal(&w->flush_cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->flusher, NULL);
}

int lode_writer_start(struct lode_writer **out, struct lode_store *st)
{
	struct lode_writer *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	w->st = st;
	w->wb_txnid = lode_store_last_txnid(st); /* what the store held at open is not due */
	pthread_mutex_init(&w->batch_lock, NULL);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->flush_cond, NULL);
	rc = cond_init_monotonic(&w->cond);
	if (rc)
		goto fail;
	rc = pthread_create(&w->flusher, NULL, flusher_main, w);
	if (rc)
		goto fail_cond;
	rc = pthread_create(&w->thread, NULL, writer_main, w);
	if (!rc) {
		*out = w;
		return 0;
	}
	stop_flusher(w);
fail_cond:
	pthread_cond_destroy(&w->cond);
fail:
	pthread_cond_destroy(&w->flush_cond);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->batch_lock);
	free(w);
	return -rc;
}

/*
 * A lazy op that finds the writer idle (no batch running, nothing queued) runs here, on
 * the caller's thread, as a batch of its own: nothing is waiting to be batched with it,
 * and handing it to the writer thread and its reply back would cost two thread wakeups,
 * most of a lazy create's time at the MDS. Its commit writes no sync, so it holds the
 * caller (a server worker) about as long as a read; one that held it longer than
 * INLINE_SLOW_US turns this off for a while (see there). Returns whether it ran.
 */
static bool run_inline(struct lode_writer *w, struct lode_wop *op)
{
	bool idle, was_synced;
	uint64_t t0;

	if (!op->lazy || pthread_mutex_trylock(&w->batch_lock))
		return false;
	pthread_mutex_lock(&w->lock);
	idle = !w->head && !w->stopping;
	pthread_mutex_unlock(&w->lock);
	t0 = now_us();
	if (!idle || t0 / 1000 < w->inline_off_until_ms) {
		pthread_mutex_unlock(&w->batch_lock);
		return false;
	}
	was_synced = !w->unsynced_ms;
	run_batch(w, op);
	if (now_us() - t0 > INLINE_SLOW_US)
		w->inline_off_until_ms = now_ms() + INLINE_BACKOFF_MS;
	if (was_synced && w->unsynced_ms) {
		/* the idle writer learns that a sync is now due within LODE_WRITER_LAZY_MS */
		pthread_mutex_lock(&w->lock);
		pthread_cond_signal(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
	pthread_mutex_unlock(&w->batch_lock);
	return true;
}

void lode_writer_submit(struct lode_writer *w, struct lode_wop *op)
{
	op->next = NULL;
	op->status = 0;
	if (run_inline(w, op))
		return;
	pthread_mutex_lock(&w->lock);
	if (w->stopping) {
		pthread_mutex_unlock(&w->lock);
		op->done(op, -ESHUTDOWN);
		return;
	}
	if (w->tail)
		w->tail->next = op;
	else
		w->head = op;
	w->tail = op;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

void lode_writer_stop(struct lode_writer *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	stop_flusher(w); /* after the writer: until it stopped, it could ask for one */
	pthread_cond_destroy(&w->flush_cond);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->batch_lock);
	free(w);
}

unsigned long lode_writer_batches(struct lode_writer *w)
{
	return w->batches;
}

void lode_writer_stats(struct lode_writer *w, struct lode_writer_stats *out)
{
	for (unsigned i = 0; i <= LODE_WRITER_BATCH_BOUNDS; i++)
		out->batch_sizes[i] = __atomic_load_n(&w->stats.batch_sizes[i], __ATOMIC_RELAXED);
	out->ops = __atomic_load_n(&w->stats.ops, __ATOMIC_RELAXED);
	out->written = __atomic_load_n(&w->stats.written, __ATOMIC_RELAXED);
	out->syncs = __atomic_load_n(&w->stats.syncs, __ATOMIC_RELAXED);
	out->failed = __atomic_load_n(&w->stats.failed, __ATOMIC_RELAXED);
}
