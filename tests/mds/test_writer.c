/* SPDX-License-Identifier: MIT */
/*
 * The MDS writer when a sync fails (mds/writer.c): the change whose sync failed is answered
 * with the error, and every change after it is refused with the same error, even once the
 * disk syncs again, since the pages the failed fdatasync could not write stay cached as
 * clean and a later sync would vouch for them. The store opened again, in the same boot, is
 * back at its last recorded sync, with what the commit log held before the failure
 * replayed: what was acknowledged as durable is there, what was answered with the error is
 * not. fdatasync (the commit log's and the sync record's) and mdb_env_sync (LMDB's of the
 * data file) are wrapped at link time (-Wl,--wrap) to fail on demand, on a real LMDB store
 * in a temporary directory.
 *
 * And the sync record's own I/O errors: a record that cannot be read stops the open (a
 * slot not read could be the newest, and the open would not know what to roll back), and
 * when marking the record after a failed sync fails as well, the MDS says that a restart
 * in this boot would not roll back. pread and pwrite of the record (data.sync; pread64 and
 * pwrite64 with 64-bit file offsets) are wrapped the same way; LMDB's own I/O is not (a
 * shared library's calls are not wrapped).
 *
 * And where a change runs: a lazy one that finds the writer idle runs on the submitting
 * thread, and the idle writer still syncs it within LODE_WRITER_LAZY_MS; one that finds a
 * batch running or changes queued waits its turn behind them, on the writer thread; after
 * an inline one that was slow (a throttled disk holds the worker), the writer thread takes
 * them for a while.
 *
 * And a change that fails after it wrote leaves nothing of itself, whether it ran alone (in
 * the batch's own transaction) or batched with others (in a child of it), and takes none of
 * the others with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <lmdb.h>

#include "fixture.h"
#include "store.h"
#include "writer.h"

/* What fails while fail_syncs is set: the commit log's sync (fdatasync in store_log.c; a
 * sync that is not a checkpoint), or at a checkpoint the data file's (LMDB's, through
 * mdb_env_sync) or the sync record's (fdatasync in store_sync.c). */
enum { LOG, DATA_FILE, RECORD };
static volatile bool fail_syncs;
static int failing;
static unsigned failed_syncs;
/* The writer's writebacks of the data file (lode_store_writeback): how many, and how many
 * asked for more than starting the writes (SYNC_FILE_RANGE_WRITE); its syncs of the data
 * file (mdb_env_sync: checkpoints, and the flushes before lazy ones). */
static unsigned writebacks, data_syncs, wrong_flags;

int __real_fdatasync(int fd);
int __wrap_fdatasync(int fd);
int __real_mdb_env_sync(MDB_env *env, int force);
int __wrap_mdb_env_sync(MDB_env *env, int force);

int __wrap_fdatasync(int fd)
{
	if (fail_syncs &&
	    (failing == RECORD || (failing == LOG && fixture_fd_named(fd, "/data.log")))) {
		__atomic_add_fetch(&failed_syncs, 1, __ATOMIC_RELAXED);
		errno = EIO;
		return -1;
	}
	return __real_fdatasync(fd);
}

/* While hold_data_syncs, a sync of the data file (one at a time: others go on) says so
 * (in_data_sync) and waits until it is cleared; fail_data_syncs of them fail with EIO. */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static bool hold_data_syncs, in_data_sync;
static unsigned fail_data_syncs;

static void data_syncs_release(void)
{
	pthread_mutex_lock(&hold_lock);
	hold_data_syncs = false;
	pthread_cond_broadcast(&hold_cond);
	pthread_mutex_unlock(&hold_lock);
}

int __wrap_mdb_env_sync(MDB_env *env, int force)
{
	__atomic_add_fetch(&data_syncs, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&hold_lock);
	if (hold_data_syncs && !in_data_sync) {
		in_data_sync = true;
		while (hold_data_syncs)
			pthread_cond_wait(&hold_cond, &hold_lock);
		in_data_sync = false;
	}
	pthread_mutex_unlock(&hold_lock);
	if (__atomic_load_n(&fail_data_syncs, __ATOMIC_RELAXED)) {
		__atomic_sub_fetch(&fail_data_syncs, 1, __ATOMIC_RELAXED);
		return EIO;
	}
	if (fail_syncs && failing == DATA_FILE) {
		__atomic_add_fetch(&failed_syncs, 1, __ATOMIC_RELAXED);
		return EIO;
	}
	return __real_mdb_env_sync(env, force);
}

int __real_sync_file_range(int fd, off_t off, off_t n, unsigned flags);
int __wrap_sync_file_range(int fd, off_t off, off_t n, unsigned flags);

int __wrap_sync_file_range(int fd, off_t off, off_t n, unsigned flags)
{
	if (fixture_fd_named(fd, "/data.mdb")) {
		__atomic_add_fetch(&writebacks, 1, __ATOMIC_RELAXED);
		if (flags != SYNC_FILE_RANGE_WRITE)
			__atomic_add_fetch(&wrong_flags, 1, __ATOMIC_RELAXED);
	}
	return __real_sync_file_range(fd, off, n, flags);
}

/* Reads and writes of the sync record (data.sync) fail with EIO while set. */
static volatile bool fail_record_pread, fail_record_pwrite;

/* Whether fd is a file whose path ends in name. */

static bool is_record(int fd)
{
	return fixture_fd_named(fd, "/data.sync");
}

ssize_t __real_pread64(int fd, void *buf, size_t len, off_t off);
ssize_t __wrap_pread64(int fd, void *buf, size_t len, off_t off);
ssize_t __real_pwrite64(int fd, const void *buf, size_t len, off_t off);
ssize_t __wrap_pwrite64(int fd, const void *buf, size_t len, off_t off);

ssize_t __wrap_pread64(int fd, void *buf, size_t len, off_t off)
{
	if (fail_record_pread && is_record(fd)) {
		errno = EIO;
		return -1;
	}
	return __real_pread64(fd, buf, len, off);
}

ssize_t __wrap_pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	if (fail_record_pwrite && is_record(fd)) {
		errno = EIO;
		return -1;
	}
	return __real_pwrite64(fd, buf, len, off);
}

/* One change: puts key with a value into the meta database. */
struct put {
	struct lode_wop wop;
	const char *key;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int status;
	pthread_t ran_on; /* the thread run() ran on */
};

/* The order run() was called in (test_lazy_changes_wait_behind_queued_ones): run() is
 * called one op at a time, so a plain array. */
static const char *ran[8];
static unsigned n_ran;
/* The run() of a put whose key is "slow" takes this long (a disk that throttles writes). */
#define SLOW_RUN_US 20000
/* While gate_closed, the run() of a put whose key is "gate" waits for it to open. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_closed, gate_reached;

static int put_run(struct lode_wop *wop, struct lode_txn *t)
{
	struct put *p = (struct put *)wop;
	int rc;

	p->ran_on = pthread_self();
	if (n_ran < sizeof(ran) / sizeof(ran[0]))
		ran[n_ran++] = p->key;
	if (!strcmp(p->key, "slow"))
		usleep(SLOW_RUN_US);
	if (!strcmp(p->key, "gate")) {
		pthread_mutex_lock(&gate_lock);
		gate_reached = true;
		pthread_cond_broadcast(&gate_cond);
		while (gate_closed)
			pthread_cond_wait(&gate_cond, &gate_lock);
		pthread_mutex_unlock(&gate_lock);
	}
	rc = lode_kv_put(t, LODE_DB_META, p->key, strlen(p->key), "v", 1, 0);
	/* a "broken..." change fails after it wrote: none of it may stay */
	if (!rc && !strncmp(p->key, "broken", 6))
		rc = -EDQUOT;
	return rc;
}

static void put_done(struct lode_wop *wop, int status)
{
	struct put *p = (struct put *)wop;

	pthread_mutex_lock(&p->lock);
	p->status = status;
	p->done = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static void put_submit(struct lode_writer *w, struct put *p, const char *key, bool lazy)
{
	*p = (struct put){.wop = {.run = put_run, .done = put_done, .lazy = lazy}, .key = key};
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	lode_writer_submit(w, &p->wop);
}

static int put_wait(struct put *p)
{
	pthread_mutex_lock(&p->lock);
	while (!p->done)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	return p->status;
}

/* Submits g, the put of "gate", and returns once the writer thread runs it and waits:
 * what is submitted next queues behind it, into one batch, until gate_open(). */
static void gate_hold(struct lode_writer *w, struct put *g)
{
	gate_closed = true;
	gate_reached = false;
	put_submit(w, g, "gate", false);
	pthread_mutex_lock(&gate_lock);
	while (!gate_reached)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

static void gate_open(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_closed = false;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

/* Submits the put of key (lazy or not) and waits for its answer. */
static int put(struct lode_writer *w, const char *key, bool lazy)
{
	struct put p;

	put_submit(w, &p, key, lazy);
	return put_wait(&p);
}

static bool has_key(struct lode_store *st, const char *key)
{
	struct lode_txn t;
	char val[8];
	size_t len;
	int rc;

	assert_int_equal(lode_store_read_begin(st, &t), 0);
	rc = lode_kv_get(&t, LODE_DB_META, key, strlen(key), val, sizeof(val), &len);
	lode_store_abort(&t);
	return rc == 0;
}

/* every_sync_checkpoints: each sync after a commit is a checkpoint, not a sync of the log */
static struct lode_store *open_store_with(const char *dir, bool every_sync_checkpoints)
{
	struct lode_store_opts o = {
	    .dir = dir, .map_size = 64ull << 20, .checkpoint_commits = every_sync_checkpoints};
	struct lode_store *st = NULL;
	char why[256] = "";

	if (lode_store_open(&o, &st, why, sizeof(why)))
		fail_msg("opening the store: %s", why);
	return st;
}

static struct lode_store *open_store(const char *dir)
{
	return open_store_with(dir, false);
}

static void a_failed_sync_stops_every_later_change(int what)
{
	struct lode_writer_stats ws;
	struct lode_writer *w;
	struct lode_store *st;
	char dir[64];

	failing = what;
	failed_syncs = 0;
	assert_int_equal(fixture_tmpdir_make(dir, sizeof(dir), "lode-writer-test"), 0);
	st = open_store_with(dir, what != LOG);
	assert_int_equal(lode_writer_start(&w, st), 0);

	assert_int_equal(put(w, "before", false), 0);
	assert_int_equal(put(w, "lazy-before", true), 0); /* answered, not yet synced */

	fail_syncs = true;
	assert_int_equal(put(w, "failed", false), -EIO);
	assert_true(failed_syncs > 0);
	lode_writer_stats(w, &ws);
	assert_int_equal(ws.failed, -EIO);

	/* the disk syncs again: the writer still takes nothing, lazy or not */
	fail_syncs = false;
	assert_int_equal(put(w, "after", false), -EIO);
	assert_int_equal(put(w, "lazy-after", true), -EIO);
	assert_false(has_key(st, "after"));
	assert_false(has_key(st, "lazy-after"));
	lode_writer_stop(w);
	lode_store_close(st);

	/* open again, in the same boot (a restarted MDS): the store is back at its last
	 * recorded sync, as after a power cut, since the page cache may hold pages the disk
	 * lacks. What was acknowledged as durable is there. When the log's or the data
	 * file's sync failed, the lazy change after it and the one answered with the error
	 * are not (the log was erased past its last good sync); when only the record's
	 * failed, the data file was synced with them, and its record (whole in the page
	 * cache) names them. */
	st = open_store(dir);
	assert_true(has_key(st, "before"));
	if (what == LOG) {
		assert_non_null(strstr(lode_store_open_note(st), "a sync of the store failed"));
		assert_non_null(strstr(lode_store_open_note(st), "replayed 1 commits"));
		assert_false(has_key(st, "lazy-before"));
		assert_false(has_key(st, "failed"));
	} else if (what == DATA_FILE) {
		assert_non_null(strstr(lode_store_open_note(st), "a sync of the store failed"));
		assert_false(has_key(st, "lazy-before"));
		assert_false(has_key(st, "failed"));
	} else {
		assert_string_equal(lode_store_open_note(st), "");
		assert_true(has_key(st, "lazy-before"));
		assert_true(has_key(st, "failed"));
	}
	assert_int_equal(lode_writer_start(&w, st), 0);
	assert_int_equal(put(w, "restarted", false), 0);
	lode_writer_stats(w, &ws);
	assert_int_equal(ws.failed, 0);
	lode_writer_stop(w);
	lode_store_close(st);

	/* and the next open, after syncs that succeeded, rolls nothing back */
	st = open_store(dir);
	assert_string_equal(lode_store_open_note(st), "");
	assert_true(has_key(st, "before"));
	assert_true(has_key(st, "restarted"));
	lode_store_close(st);
	fixture_tmpdir_remove(dir);
}

static void test_the_commit_log_sync_fails(void **state)
{
	(void)state;
	a_failed_sync_stops_every_later_change(LOG);
}

static void test_the_data_file_sync_fails(void **state)
{
	(void)state;
	a_failed_sync_stops_every_later_change(DATA_FILE);
}

static void test_the_record_sync_fails(void **state)
{
	(void)state;
	a_failed_sync_stops_every_later_change(RECORD);
}

/* A record that cannot be read: the open fails and says so, and once the disk reads
 * again the store opens with everything it had. */
static void test_a_sync_record_that_cannot_be_read_stops_the_open(void **state)
{
	struct lode_store_opts o = {.map_size = 64ull << 20};
	struct lode_writer *w;
	struct lode_store *st = NULL;
	char dir[64], why[256] = "";

	(void)state;
	assert_int_equal(fixture_tmpdir_make(dir, sizeof(dir), "lode-writer-test"), 0);
	st = open_store(dir);
	assert_int_equal(lode_writer_start(&w, st), 0);
	assert_int_equal(put(w, "kept", false), 0);
	lode_writer_stop(w);
	lode_store_close(st);

	fail_record_pread = true;
	o.dir = dir;
	st = NULL;
	assert_int_equal(lode_store_open(&o, &st, why, sizeof(why)), -EIO);
	fail_record_pread = false;
	assert_null(st);
	if (!strstr(why, "cannot read") || !strstr(why, "data.sync"))
		fail_msg("the open's reason does not name the record: \"%s\"", why);

	st = open_store(dir);
	assert_true(has_key(st, "kept"));
	lode_store_close(st);
	fixture_tmpdir_remove(dir);
}

/* The record's sync fails and marking the record fails too: the change is refused, and
 * the MDS says on stderr that a restart in this boot would not roll back. */
static void test_a_failed_mark_after_a_failed_sync_is_said(void **state)
{
	struct lode_writer *w;
	struct lode_store *st;
	char dir[64], logpath[96], log[1024] = "";
	int saved, fd;
	ssize_t n;

	(void)state;
	assert_int_equal(fixture_tmpdir_make(dir, sizeof(dir), "lode-writer-test"), 0);
	snprintf(logpath, sizeof(logpath), "%s/stderr", dir);
	st = open_store_with(dir, true);
	assert_int_equal(lode_writer_start(&w, st), 0);
	assert_int_equal(put(w, "before", false), 0);

	fd = open(logpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	failing = RECORD;
	fail_syncs = true;
	fail_record_pwrite = true;
	n = put(w, "failed", false);
	fail_syncs = false;
	fail_record_pwrite = false;
	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	assert_int_equal(n, -EIO);
	n = pread(fd, log, sizeof(log) - 1, 0);
	close(fd);
	assert_true(n > 0);
	if (!strstr(log, "marking the sync record after the failed sync failed too") ||
	    !strstr(log, "reboot the machine"))
		fail_msg("stderr does not say the mark failed: \"%s\"", log);
	/* and the writer takes nothing after it */
	assert_int_equal(put(w, "after", false), -EIO);
	lode_writer_stop(w);
	lode_store_close(st);
	fixture_tmpdir_remove(dir);
}

/* A lazy change on an idle writer runs on the submitting thread, answered before any
 * sync; the idle writer syncs it within LODE_WRITER_LAZY_MS all the same. A change that is
 * not lazy runs on the writer thread and is synced before it is answered. */
/* The writer's stats once it made `syncs` syncs or one failed: the idle writer syncs lazy
 * changes within LODE_WRITER_LAZY_MS; this waits 5 times that at most. */
static struct lode_writer_stats stats_after_syncs(struct lode_writer *w, unsigned long syncs)
{
	struct lode_writer_stats ws;

	lode_writer_stats(w, &ws);
	for (int i = 0; i < 5 * LODE_WRITER_LAZY_MS / 10 && ws.syncs < syncs && !ws.failed; i++) {
		usleep(10 * 1000);
		lode_writer_stats(w, &ws);
	}
	return ws;
}

static void test_a_lazy_change_on_an_idle_writer_runs_here(void **state)
{
	struct lode_writer_stats ws;
	struct lode_writer *w;
	struct lode_store *st;
	struct put p;
	char dir[64];

	(void)state;
	assert_int_equal(fixture_tmpdir_make(dir, sizeof(dir), "lode-writer-test"), 0);
	st = open_store(dir);
	assert_int_equal(lode_writer_start(&w, st), 0);

	put_submit(w, &p, "durable", false);
	assert_int_equal(put_wait(&p), 0);
	assert_false(pthread_equal(p.ran_on, pthread_self()));
	lode_writer_stats(w, &ws);
	assert_int_equal(ws.syncs, 1);

	put_submit(w, &p, "lazy", true);
	assert_true(p.done); /* answered before lode_writer_submit returned */
	assert_int_equal(put_wait(&p), 0);
	assert_true(pthread_equal(p.ran_on, pthread_self()));
	assert_true(has_key(st, "lazy"));
	lode_writer_stats(w, &ws);
	assert_int_equal(ws.syncs, 1); /* not synced yet */
	ws = stats_after_syncs(w, 2);  /* the idle writer syncs it */
	assert_int_equal(ws.syncs, 2);
	assert_int_equal(ws.ops, 2);
	lode_writer_stop(w);
	lode_store_close(st);
	fixture_tmpdir_remove(dir);
}

static unsigned writebacks_now(void)
{
	return __atomic_load_n(&writebacks, __ATOMIC_RELAXED);
}

/* The writer writes durable changes' pages ahead, every WRITEBACK_COMMITS (32) commits: a
 * checkpoint, during which no change can run, then has little left to write. Only by
 * starting the writes: a write error must still reach the checkpoint's fdatasync. Lazy
 * changes are not written ahead (that cost a quarter of their rate): the flush before
 * their sync writes them (test_a_lazy_sync_writes_its_pages_while_changes_go_on). */
static void test_the_writer_writes_durable_pages_ahead_of_checkpoints(void **state)
{
	struct lode_writer_stats ws;
	struct lode_writer *w;
	struct lode_store *st;
	char dir[64], key[16];
	unsigned before;

	(void)state;
	assert_int_equal(fixture_tmpdir_make(dir, sizeof(dir), "lode-writer-test"), 0);
	st = open_store(dir);
	assert_int_equal(lode_writer_start(&w, st), 0);
	__atomic_store_n(&writebacks, 0, __ATOMIC_RELAXED);
	wrong_flags = 0;

	/* lazy: synced after LODE_WRITER_LAZY_MS, never written back */
	for (int i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "lazy-%d", i);
		assert_int_equal(put(w, key, true), 0);
	}
	ws = stats_after_syncs(w, 1);
	assert_int_equal(ws.syncs, 1);
	assert_int_equal(writebacks_now(), 0);

	/* durable, one batch each: at least one writeback per 32 commits */
	before = writebacks_now();
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "durable-%d", i);
		assert_int_equal(put(w, key, false), 0);
	}
	assert_true(writebacks_now() - before >= 3);
	assert_int_equal(wrong_flags, 0);
	lode_writer_stop(w);
	lode_store_close(st);
	fixture_tmpdir_remove(dir);
}

/* Polls for up to 5 lazy sync delays until *flag (read under hold_lock) is true. */
static bool wait_for(bool *flag)
{
	for (int i = 0; i < 5 * LODE_WRITER_LAZY_MS / 10; i++) {
		bool v;

		pthread_mutex_lock(&hold_lock);
		v = *flag;
		pthread_mutex_unlock(&hold_lock);
		if (v)
			return true;
		usleep(10 * 1000);
	}
	return false;
}

/* A lazy sync writes the data file's pages first, without the batch lock and on the
 * flusher thread (lode_store_flush): while that write is held up, a lazy change and a
 * durable one still run and are answered, and the durable one's sync covers both. Before,
 * the checkpoint's fdatasync wrote them all under the lock, and every change waited it
 * out; then, with the flush on the writer thread, a durable change waited for the flush. */
static void test_a_lazy_sync_writes_its_pages_while_changes_go_on(void **state)
{
	struct lode_writer_stats ws;
	struct lode_writer *w;
	struct lode_store *st;
	struct put during, durable;
	char dir[64];
	bool answered = false, held;

	(void)state;
	assert_int_equal(fixture_tmpdir_make(dir, sizeof(dir), "lode-writer-test"), 0);
	st = open_store_with(dir, true); /* the lazy sync is a checkpoint */
	assert_int_equal(lode_writer_start(&w, st), 0);
	__atomic_store_n(&data_syncs, 0, __ATOMIC_RELAXED);
	hold_data_syncs = true;
	assert_int_equal(put(w, "lazy", true), 0);
	assert_true(wait_for(&in_data_sync)); /* the flush, due LODE_WRITER_LAZY_MS later */

	put_submit(w, &during, "during", true);
	put_submit(w, &durable, "durable", false);
	for (int i = 0; i < 200 && !answered; i++) {
		pthread_mutex_lock(&during.lock);
		answered = during.done;
		pthread_mutex_unlock(&during.lock);
		pthread_mutex_lock(&durable.lock);
		answered = answered && durable.done;
		pthread_mutex_unlock(&durable.lock);
		if (!answered)
			usleep(10 * 1000);
	}
	pthread_mutex_lock(&hold_lock);
	held = in_data_sync;
	pthread_mutex_unlock(&hold_lock);
	data_syncs_release();  /* before asserting: a failure must not leave the writer held */
	assert_true(answered); /* within 2 s, while the data file's sync was held */
	assert_true(held);
	assert_int_equal(put_wait(&during), 0);
	assert_int_equal(put_wait(&durable), 0);

	ws = stats_after_syncs(w, 1);
	assert_int_equal(ws.syncs, 1);
	assert_int_equal(ws.failed, 0);
	/* the flush and the durable change's checkpoint; nothing was left unsynced after */
	assert_int_equal(__atomic_load_n(&data_syncs, __ATOMIC_RELAXED), 2);
	lode_writer_stop(w);
	lode_store_close(st);

	/* a crash of the machine now loses neither: the checkpoint recorded them */
	st = open_store(dir);
	assert_true(has_key(st, "lazy"));
	assert_true(has_key(st, "during"));
	assert_true(has_key(st, "durable"));
	lode_store_close(st);
	fixture_tmpdir_remove(dir);
}

/* A write error that the flush before a lazy sync saw is reported to no later fdatasync of
 * the file (it is taken as seen): the checkpoint after it must fail on it, and the writer
 * then takes no more changes, as after any failed sync. */
static void test_a_failed_flush_fails_the_lazy_sync(void **state)
{
	struct lode_writer_stats ws;
	struct lode_writer *w;
	struct lode_store *st;
	char dir[64];

	(void)state;
	assert_int_equal(fixture_tmpdir_make(dir, sizeof(dir), "lode-writer-test"), 0);
	st = open_store_with(dir, true);
	assert_int_equal(lode_writer_start(&w, st), 0);
	__atomic_store_n(&fail_data_syncs, 1, __ATOMIC_RELAXED); /* the flush only */
	assert_int_equal(put(w, "lazy", true), 0);
	ws = stats_after_syncs(w, 1); /* a failed sync is not counted */
	assert_int_equal(ws.failed, -EIO);
	assert_int_equal(__atomic_load_n(&fail_data_syncs, __ATOMIC_RELAXED), 0);
	assert_int_equal(put(w, "after", false), -EIO);
	assert_int_equal(put(w, "lazy-after", true), -EIO);
	lode_writer_stop(w);
	lode_store_close(st);

	/* reopened in the same boot: back at the last recorded sync, without the lazy change */
	st = open_store(dir);
	assert_non_null(strstr(lode_store_open_note(st), "a sync of the store failed"));
	assert_false(has_key(st, "lazy"));
	lode_store_close(st);
	fixture_tmpdir_remove(dir);
}

/* A lazy change submitted while a batch runs, with a change queued behind it, runs after
 * both, on the writer thread: the order of submission holds. */
static void test_lazy_changes_wait_behind_queued_ones(void **state)
{
	struct lode_writer *w;
	struct lode_store *st;
	struct put a, b, c;
	char dir[64];

	(void)state;
	assert_int_equal(fixture_tmpdir_make(dir, sizeof(dir), "lode-writer-test"), 0);
	st = open_store(dir);
	assert_int_equal(lode_writer_start(&w, st), 0);
	n_ran = 0;
	gate_hold(w, &a);
	put_submit(w, &b, "queued", false);
	put_submit(w, &c, "lazy", true);
	assert_false(c.done);
	gate_open();
	assert_int_equal(put_wait(&a), 0);
	assert_int_equal(put_wait(&b), 0);
	assert_int_equal(put_wait(&c), 0);
	assert_int_equal(n_ran, 3);
	assert_string_equal(ran[0], "gate");
	assert_string_equal(ran[1], "queued");
	assert_string_equal(ran[2], "lazy");
	assert_false(pthread_equal(c.ran_on, pthread_self()));
	assert_true(has_key(st, "lazy"));
	lode_writer_stop(w);
	lode_store_close(st);
	fixture_tmpdir_remove(dir);
}

/* An inline change that held its thread long (20 ms here) sends the next lazy ones to the
 * writer thread, for about a second; then they run inline again. */
static void test_a_slow_inline_change_sends_the_next_ones_to_the_writer(void **state)
{
	struct lode_writer *w;
	struct lode_store *st;
	struct put p;
	char dir[64];
	bool inline_again = false;

	(void)state;
	assert_int_equal(fixture_tmpdir_make(dir, sizeof(dir), "lode-writer-test"), 0);
	st = open_store(dir);
	assert_int_equal(lode_writer_start(&w, st), 0);
	put_submit(w, &p, "slow", true);
	assert_int_equal(put_wait(&p), 0);
	assert_true(pthread_equal(p.ran_on, pthread_self()));
	put_submit(w, &p, "after-slow", true);
	assert_int_equal(put_wait(&p), 0);
	assert_false(pthread_equal(p.ran_on, pthread_self()));
	assert_true(has_key(st, "after-slow"));
	/* inline again once the backoff (a second) has passed; a bound 5 times that */
	for (int i = 0; i < 50 && !inline_again; i++) {
		usleep(100 * 1000);
		put_submit(w, &p, "later", true);
		assert_int_equal(put_wait(&p), 0);
		inline_again = pthread_equal(p.ran_on, pthread_self());
	}
	assert_true(inline_again);
	lode_writer_stop(w);
	lode_store_close(st);
	fixture_tmpdir_remove(dir);
}

/* Opens the store in dir again (after lode_store_close) and says whether key is in it. */
static bool reopened_has_key(const char *dir, const char *key)
{
	struct lode_store *st = open_store(dir);
	bool has = has_key(st, key);

	lode_store_close(st);
	return has;
}

/* A change that fails after writing leaves nothing, neither in the store nor in its commit
 * log (the store opened again replays the log): alone, lazy (inline) or durable (on the
 * writer thread), and in a batch beside changes that succeed, which stay. */
static void test_a_failed_change_leaves_nothing(void **state)
{
	struct lode_writer *w;
	struct lode_store *st;
	struct put g, f, ok;
	char dir[64];

	(void)state;
	assert_int_equal(fixture_tmpdir_make(dir, sizeof(dir), "lode-writer-test"), 0);
	st = open_store(dir);
	assert_int_equal(lode_writer_start(&w, st), 0);
	assert_int_equal(put(w, "broken-lazy", true), -EDQUOT);
	assert_int_equal(put(w, "broken-durable", false), -EDQUOT);
	assert_int_equal(put(w, "alone", true), 0);
	assert_false(has_key(st, "broken-lazy"));
	assert_false(has_key(st, "broken-durable"));

	/* a batch: "gate" holds the writer while the other two queue behind it */
	gate_hold(w, &g);
	put_submit(w, &f, "broken-batched", false);
	put_submit(w, &ok, "batched", false);
	gate_open();
	assert_int_equal(put_wait(&g), 0);
	assert_int_equal(put_wait(&f), -EDQUOT);
	assert_int_equal(put_wait(&ok), 0);
	assert_false(has_key(st, "broken-batched"));
	assert_true(has_key(st, "batched"));
	assert_true(has_key(st, "alone"));
	lode_writer_stop(w);
	lode_store_close(st);

	assert_false(reopened_has_key(dir, "broken-lazy"));
	assert_false(reopened_has_key(dir, "broken-durable"));
	assert_false(reopened_has_key(dir, "broken-batched"));
	assert_true(reopened_has_key(dir, "alone"));
	assert_true(reopened_has_key(dir, "batched"));
	fixture_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_slow_inline_change_sends_the_next_ones_to_the_writer),
	    cmocka_unit_test(test_a_lazy_change_on_an_idle_writer_runs_here),
	    cmocka_unit_test(test_lazy_changes_wait_behind_queued_ones),
	    cmocka_unit_test(test_the_writer_writes_durable_pages_ahead_of_checkpoints),
	    cmocka_unit_test(test_a_lazy_sync_writes_its_pages_while_changes_go_on),
	    cmocka_unit_test(test_a_failed_flush_fails_the_lazy_sync),
	    cmocka_unit_test(test_the_commit_log_sync_fails),
	    cmocka_unit_test(test_the_data_file_sync_fails),
	    cmocka_unit_test(test_the_record_sync_fails),
	    cmocka_unit_test(test_a_sync_record_that_cannot_be_read_stops_the_open),
	    cmocka_unit_test(test_a_failed_mark_after_a_failed_sync_is_said),
	    cmocka_unit_test(test_a_failed_change_leaves_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
