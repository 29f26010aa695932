/* SPDX-License-Identifier: MIT */
/*
 * The MDS store fails closed on a damaged data directory: a truncated data.mdb, a store
 * whose format version is gone, or a cluster id that fails its checksum is refused with a
 * reason, never mapped blindly (SIGBUS) nor formatted over (a new cluster on old data).
 * Damage is done with LMDB itself, by cutting the file, or by rewriting a page header in
 * place, in a temporary directory. A damaged page must be refused before LMDB maps it: LMDB
 * trusts its pages, and a bad header there is a heap overflow, not an error. Commits the
 * store never synced are all there after its process dies, and after a power cut the store
 * is back at its last sync, whole: its last checkpoint (store_sync.h), and what the commit
 * log had made durable since, replayed in order (store_log.h). A power cut is simulated by
 * putting back the files as the disk held them: copies taken when they were synced.
 */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "fixture.h"
#include "store.h"

/* While set, writes to the commit log fail with EIO (pwrite64 wrapped, tests/mds/meson.build). */
static volatile bool fail_log_writes;

ssize_t __real_pwrite64(int fd, const void *buf, size_t len, off_t off);
ssize_t __wrap_pwrite64(int fd, const void *buf, size_t len, off_t off);

ssize_t __wrap_pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	if (fail_log_writes && fixture_fd_named(fd, "/data.log")) {
		errno = EIO;
		return -1;
	}
	return __real_pwrite64(fd, buf, len, off);
}

/* While set, read transactions cannot begin or be renewed (mdb_txn_begin with MDB_RDONLY
 * and mdb_txn_renew wrapped): what a checkpoint needs to move its pin. */
static volatile bool fail_pin;

int __real_mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned flags, MDB_txn **txn);
int __wrap_mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned flags, MDB_txn **txn);
int __real_mdb_txn_renew(MDB_txn *txn);
int __wrap_mdb_txn_renew(MDB_txn *txn);

int __wrap_mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned flags, MDB_txn **txn)
{
	if (fail_pin && (flags & MDB_RDONLY))
		return MDB_READERS_FULL;
	return __real_mdb_txn_begin(env, parent, flags, txn);
}

int __wrap_mdb_txn_renew(MDB_txn *txn)
{
	if (fail_pin)
		return MDB_READERS_FULL;
	return __real_mdb_txn_renew(txn);
}

struct fx {
	char dir[64];
	char why[256];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || fixture_tmpdir_make(f->dir, sizeof(f->dir), "lode-store-test")) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	fixture_tmpdir_remove(f->dir);
	free(f);
	return 0;
}

static int open_store(struct fx *f, int format, uint64_t *cluster_id)
{
	struct lode_store_opts o = {.dir = f->dir, .map_size = 64ull << 20, .format = format};
	struct lode_store *st = NULL;
	int rc;

	f->why[0] = '\0';
	rc = lode_store_open(&o, &st, f->why, sizeof(f->why));
	if (!rc) {
		if (cluster_id)
			*cluster_id = lode_store_cluster_id(st);
		lode_store_close(st);
	}
	return rc;
}

/* Changes the meta database with LMDB directly: val NULL deletes the key. */
static void poke_meta(struct fx *f, const char *key, const void *val, size_t len)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = {.mv_size = strlen(key), .mv_data = (void *)key};
	MDB_val v = {.mv_size = len, .mv_data = (void *)val};

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 16), 0);
	assert_int_equal(mdb_env_set_mapsize(env, 64ull << 20), 0);
	assert_int_equal(mdb_env_open(env, f->dir, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
	if (val)
		assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	else
		assert_int_equal(mdb_del(txn, dbi, &k, NULL), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static void get_meta(struct fx *f, const char *key, void *val, size_t len)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = {.mv_size = strlen(key), .mv_data = (void *)key}, v;

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 16), 0);
	assert_int_equal(mdb_env_open(env, f->dir, MDB_RDONLY, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
	assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
	assert_int_equal(v.mv_size, len);
	memcpy(val, v.mv_data, len);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

static void test_an_empty_directory_is_formatted_and_reopened_with_the_same_cluster_id(void **state)
{
	struct fx *f = *state;
	uint64_t a = 0, b = 0;

	assert_int_equal(open_store(f, 0, &a), 0);
	assert_true(a != 0);
	assert_int_equal(open_store(f, 0, &b), 0);
	assert_true(a == b);
}

static void test_a_store_that_lost_its_format_version_is_refused_not_formatted(void **state)
{
	struct fx *f = *state;
	uint64_t a = 0, b = 0;

	assert_int_equal(open_store(f, 0, &a), 0);
	poke_meta(f, "format_version", NULL, 0);
	assert_int_equal(open_store(f, 0, NULL), -EUCLEAN);
	assert_non_null(strstr(f->why, "no format version"));
	/* still refused the second time: nothing was written */
	assert_int_equal(open_store(f, 0, NULL), -EUCLEAN);
	/* an explicit format makes a new cluster */
	assert_int_equal(open_store(f, 1, &b), 0);
	assert_true(b != 0 && b != a);
}

static void test_a_format_version_of_zero_is_refused(void **state)
{
	struct fx *f = *state;
	uint32_t zero = 0;

	assert_int_equal(open_store(f, 0, NULL), 0);
	poke_meta(f, "format_version", &zero, sizeof(zero));
	assert_int_equal(open_store(f, 0, NULL), -EUCLEAN);
}

static void test_a_cluster_id_with_a_flipped_bit_is_refused(void **state)
{
	struct fx *f = *state;
	uint64_t rec[2];

	assert_int_equal(open_store(f, 0, NULL), 0);
	get_meta(f, "cluster_id", rec, sizeof(rec));
	rec[0] ^= 1ull << 17;
	poke_meta(f, "cluster_id", rec, sizeof(rec));
	assert_int_equal(open_store(f, 0, NULL), -EUCLEAN);
	assert_non_null(strstr(f->why, "cluster id is damaged"));
}

static void test_a_bare_cluster_id_from_an_older_store_gets_its_checksum(void **state)
{
	struct fx *f = *state;
	uint64_t id = 0x1234567890abcdefull, got = 0, rec[2];

	assert_int_equal(open_store(f, 0, NULL), 0);
	poke_meta(f, "cluster_id", &id, sizeof(id));
	assert_int_equal(open_store(f, 0, &got), 0);
	assert_true(got == id);
	get_meta(f, "cluster_id", rec, sizeof(rec));
	assert_true(rec[0] == id);
	assert_int_equal(open_store(f, 0, &got), 0);
	assert_true(got == id);
}

static void test_a_truncated_data_file_is_refused_before_any_page_is_read(void **state)
{
	struct fx *f = *state;
	char path[128];
	struct stat sb;

	assert_int_equal(open_store(f, 0, NULL), 0);
	snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
	assert_int_equal(stat(path, &sb), 0);
	/* keep the two meta pages, cut the rest: every data page is past the end */
	assert_int_equal(truncate(path, 2 * 4096), 0);
	assert_int_equal(open_store(f, 0, NULL), -EUCLEAN);
	assert_non_null(strstr(f->why, "truncated"));
}

/* Fills "inodes" through LMDB with enough records for a tree of several levels, values too
 * big for a page (overflow runs) and, by deleting some, a free list with entries. */
static void fill(struct fx *f)
{
	static uint8_t big[3 * 4096 + 100];
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;

	assert_int_equal(open_store(f, 0, NULL), 0);
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 16), 0);
	assert_int_equal(mdb_env_set_mapsize(env, 64ull << 20), 0);
	assert_int_equal(mdb_env_open(env, f->dir, 0, 0600), 0);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
		assert_int_equal(mdb_dbi_open(txn, "inodes", 0, &dbi), 0);
		for (uint64_t i = 0; i < 4000; i++) {
			uint64_t key = __builtin_bswap64(i + 2);
			MDB_val k = {.mv_size = sizeof(key), .mv_data = &key};
			MDB_val v = {.mv_size = i % 500 == 0 ? sizeof(big) : 80, .mv_data = big};

			if (round == 2 && i % 3)
				assert_int_equal(mdb_del(txn, dbi, &k, NULL), 0);
			else if (round < 2)
				assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
		}
		assert_int_equal(mdb_txn_commit(txn), 0);
	}
	mdb_env_close(env);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* The page number of the root of named database `name`, found the way LMDB does: the newer
 * meta page, the main database's root (a leaf: the store has a handful of names), the node
 * whose key is the name, the database record in it. Page size 4096. */
static uint64_t db_root(int fd, const char *name)
{
	uint8_t m0[4096], m1[4096], page[4096];
	const uint8_t *meta;
	uint16_t lower;

	assert_int_equal(pread(fd, m0, 4096, 0), 4096);
	assert_int_equal(pread(fd, m1, 4096, 4096), 4096);
	meta = rd64(m1 + 144) > rd64(m0 + 144) ? m1 : m0;
	assert_int_equal(pread(fd, page, 4096, (off_t)rd64(meta + 40 + 48 + 40) * 4096), 4096);
	assert_true(page[10] & 0x02); /* a leaf */
	memcpy(&lower, page + 12, 2);
	for (unsigned i = 0; i < (lower - 16u) / 2; i++) {
		uint16_t off, ksize;

		memcpy(&off, page + 16 + 2 * i, 2);
		memcpy(&ksize, page + off + 6, 2);
		if (ksize == strlen(name) && !memcmp(page + off + 8, name, ksize))
			return rd64(page + off + 8 + ksize + 40);
	}
	fail_msg("no database %s", name);
	return 0;
}

enum damage { BOUNDS, NUMBER, TYPE, NODE_OFFSET, CHILD };

static void
test_a_store_with_deep_trees_overflow_values_and_a_free_list_passes_the_check(void **state)
{
	struct fx *f = *state;
	char path[128];

	fill(f);
	snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
	f->why[0] = '\0';
	assert_int_equal(lode_store_check_pages(path, 4096, f->why, sizeof(f->why)), 0);
	assert_int_equal(open_store(f, 0, NULL), 0);
}

static void damage_and_open(struct fx *f, enum damage d, const char *reason)
{
	char path[128];
	uint8_t page[4096], before[4096];
	uint64_t root, bad = 1ull << 40;
	uint16_t v16, off;
	int fd;

	fill(f);
	snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	root = db_root(fd, "inodes");
	assert_int_equal(pread(fd, page, 4096, (off_t)root * 4096), 4096);
	assert_true(page[10] & 0x01); /* 4000 records: the root is a branch page */
	memcpy(&off, page + 16, 2);
	switch (d) {
	case BOUNDS: /* lower past upper: LMDB would count 32,000 nodes */
		v16 = 0xfff0;
		memcpy(page + 12, &v16, 2);
		break;
	case NUMBER:
		memcpy(page, &bad, 8);
		break;
	case TYPE: /* a branch that says it is a leaf */
		page[10] = 0x02;
		break;
	case NODE_OFFSET:
		v16 = 4094;
		memcpy(page + 16, &v16, 2);
		break;
	case CHILD: /* the first child: lo, hi and flags make the page number */
		memset(page + off, 0x7f, 6);
		break;
	}
	assert_int_equal(pwrite(fd, page, 4096, (off_t)root * 4096), 4096);
	memcpy(before, page, sizeof(page));
	assert_int_equal(open_store(f, 0, NULL), -EUCLEAN);
	assert_non_null(strstr(f->why, "data.mdb is damaged"));
	if (!strstr(f->why, reason))
		fail_msg("reason \"%s\" lacks \"%s\"", f->why, reason);
	/* refused without writing: the damaged page is as it was */
	assert_int_equal(pread(fd, page, 4096, (off_t)root * 4096), 4096);
	assert_memory_equal(page, before, sizeof(page));
	close(fd);
}

static void test_a_page_with_bounds_past_its_end_is_refused(void **state)
{
	damage_and_open(*state, BOUNDS, "has bounds");
}

static void test_a_page_with_another_number_is_refused(void **state)
{
	damage_and_open(*state, NUMBER, "says it is page");
}

static void test_a_branch_page_marked_leaf_is_refused(void **state)
{
	damage_and_open(*state, TYPE, "has flags");
}

static void test_a_node_offset_outside_its_page_is_refused(void **state)
{
	damage_and_open(*state, NODE_OFFSET, "outside");
}

static void test_a_child_past_the_last_page_is_refused(void **state)
{
	damage_and_open(*state, CHILD, "outside the pages in use");
}

/* ---- commits that skip the sync, and a power cut (mds/store_sync.h) ---- */

#define PSIZE 4096 /* LMDB's page size here: the system's */

/* Commits n keys PREFIX.i with 1 KiB values of byte fill into the meta database, with no
 * sync: as the writer commits a batch of lazy requests. 0 or -errno. */
static int put_keys(struct lode_store *st, const char *prefix, int n, char fill)
{
	static char val[1024];
	struct lode_txn t;
	int rc = lode_store_write_begin(st, NULL, &t);

	memset(val, fill, sizeof(val));
	for (int i = 0; i < n && !rc; i++) {
		char key[64];
		int len = snprintf(key, sizeof(key), "%s.%d", prefix, i);

		rc = lode_kv_put(&t, LODE_DB_META, key, (size_t)len, val, sizeof(val), 0);
	}
	if (rc) {
		lode_store_abort(&t);
		return rc;
	}
	return lode_store_commit(&t);
}

/* How many of the keys PREFIX.0 .. PREFIX.(n-1) the store holds with values of byte fill. */
static int count_keys(struct lode_store *st, const char *prefix, int n, char fill)
{
	struct lode_txn t;
	int found = 0;

	assert_int_equal(lode_store_read_begin(st, &t), 0);
	for (int i = 0; i < n; i++) {
		char key[64], val[1024];
		int len = snprintf(key, sizeof(key), "%s.%d", prefix, i);
		size_t vlen;

		if (!lode_kv_get(&t, LODE_DB_META, key, (size_t)len, val, sizeof(val), &vlen))
			found +=
			    vlen == sizeof(val) && val[0] == fill && val[sizeof(val) - 1] == fill;
	}
	lode_store_abort(&t);
	return found;
}

/* Waits for the child pid, which must have exited with status 0 (its steps are numbered
 * by the status it exits with otherwise). */
static void child_ok(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Copies len bytes at offset 0 of src (len 0: all of it) to dst. 0 or -1. */
static int copy_file(const char *src, const char *dst, size_t len)
{
	static char buf[1 << 16];
	int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	size_t done = 0;
	ssize_t n = 1;

	while (in >= 0 && out >= 0 && (!len || done < len) && n > 0) {
		size_t want = len && len - done < sizeof(buf) ? len - done : sizeof(buf);

		n = read(in, buf, want);
		if (n > 0 && write(out, buf, (size_t)n) != n)
			n = -1;
		done += n > 0 ? (size_t)n : 0;
	}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return in < 0 || out < 0 || n < 0 ? -1 : 0;
}

/* Puts the commit log back as it was when copied to DIR/NAME: what the disk held. */
static void restore_log(struct fx *f, const char *name)
{
	char log[128], saved[128];

	snprintf(log, sizeof(log), "%s/data.log", f->dir);
	snprintf(saved, sizeof(saved), "%s/%s", f->dir, name);
	assert_int_equal(copy_file(saved, log, 0), 0);
}

/*
 * In a child process that dies without closing the store (kill -9, or a power cut): opens
 * it, commits DURABLE keys and syncs them (as for a client that waits), saves the data file
 * as it now is (DIR/image) and the commit log (DIR/log-image), rewrites them (value bytes
 * 'L') and commits LAZY keys more, in 20 commits without a sync, and saves the meta pages
 * they wrote (DIR/metas) and the whole file (DIR/live). Returns when the child has exited.
 * With checkpoint, the sync is a checkpoint (the data file synced, its snapshot recorded);
 * else a sync of the commit log, and the image is the data file as the open's checkpoint
 * left it: what the disk holds for sure.
 */
#define DURABLE 40
#define LAZY	300
static void crash_after_lazy_commits(struct fx *f, bool checkpoint)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct lode_store_opts o = {
		    .dir = f->dir, .map_size = 64ull << 20, .checkpoint_commits = checkpoint};
		struct lode_store *st;
		char data[128], path[128], log[128];

		snprintf(data, sizeof(data), "%s/data.mdb", f->dir);
		snprintf(log, sizeof(log), "%s/data.log", f->dir);
		snprintf(path, sizeof(path), "%s/image", f->dir);
		if (lode_store_open(&o, &st, f->why, sizeof(f->why)))
			_exit(1);
		if (!checkpoint && copy_file(data, path, 0))
			_exit(2);
		if (put_keys(st, "durable", DURABLE, 'D') || lode_store_sync(st))
			_exit(1);
		if (checkpoint && copy_file(data, path, 0))
			_exit(2);
		snprintf(path, sizeof(path), "%s/log-image", f->dir);
		if (copy_file(log, path, 0))
			_exit(2);
		/* many commits, each rewriting the synced keys: they free the synced snapshot's
		 * pages, which a later commit would reuse if nothing held them */
		for (int i = 0; i < 10; i++)
			if (put_keys(st, "durable", DURABLE, 'L') ||
			    put_keys(st, "lazy", LAZY, 'L'))
				_exit(2);
		snprintf(path, sizeof(path), "%s/metas", f->dir);
		if (copy_file(data, path, 2 * PSIZE))
			_exit(3);
		snprintf(path, sizeof(path), "%s/live", f->dir);
		if (copy_file(data, path, 0))
			_exit(4);
		_exit(0); /* no lode_store_close: it would sync */
	}
	child_ok(pid);
}

/* A crash of the process only: the page cache kept every commit, synced or not. */
static void test_a_crashed_process_loses_no_unsynced_commit(void **state)
{
	struct fx *f = *state;
	struct lode_store_opts o = {.dir = f->dir, .map_size = 64ull << 20};
	struct lode_store *st;

	crash_after_lazy_commits(f, false);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_string_equal(lode_store_open_note(st), ""); /* nothing replayed either */
	assert_int_equal(count_keys(st, "durable", DURABLE, 'L'), DURABLE);
	assert_int_equal(count_keys(st, "lazy", LAZY, 'L'), LAZY);
	lode_store_close(st);
}

/*
 * The commit log's records, for the tests that damage them. store_log.h has the format: a
 * header {magic "LLOG", payload length u32 at 4, epoch, seq, txnid u64 at 24, inode, device
 * u64 at 40}, the payload, then xxh3-64 of all before.
 */
#define LOG_HDR 48
static uint8_t log_buf[4u << 20];

/* Reads DIR/data.log into log_buf; returns its descriptor, open to write it back. */
static int log_load(struct fx *f)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/data.log", f->dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_true(pread(fd, log_buf, sizeof(log_buf), 0) == (ssize_t)sizeof(log_buf));
	return fd;
}

/* The bytes of the record at off in log_buf (header, payload, checksum), or 0 if none
 * starts there. */
static size_t log_record_size(size_t off)
{
	uint32_t len;

	if (off + LOG_HDR + 8 > sizeof(log_buf) || memcmp(log_buf + off, "LLOG", 4))
		return 0;
	memcpy(&len, log_buf + off + 4, 4);
	return LOG_HDR + (size_t)len + 8;
}

/* Gives the record at off in log_buf its checksum again, after a change to it. */
static void log_record_seal(size_t off)
{
	size_t size = log_record_size(off);
	uint64_t sum;

	assert_true(size > 0);
	sum = XXH3_64bits(log_buf + off, size - 8);
	memcpy(log_buf + off + size - 8, &sum, 8);
}

/* Adds delta to the u64 at field of the record at off, and gives it its checksum again. */
static void log_record_add(size_t off, size_t field, uint64_t delta)
{
	uint64_t v;

	assert_true(log_record_size(off) > 0);
	memcpy(&v, log_buf + off + field, 8);
	v += delta;
	memcpy(log_buf + off + field, &v, 8);
	log_record_seal(off);
}

/*
 * Rewrites, with their checksums, the device number that the sync record's slots and the
 * commit log's records name the data file by: what a restart that numbered the disks in
 * another order (NVMe drives found in another order) does to the file's st_dev.
 */
#define SYNC_SLOT (2 * 32768 + 4096)
static void renumber_device(struct fx *f)
{
	static uint8_t buf[SYNC_SLOT];
	char path[128];
	uint64_t dev, sum;
	uint32_t psize;
	size_t off, size;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/data.sync", f->dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	for (unsigned i = 0; i < 2; i++) {
		n = pread(fd, buf, SYNC_SLOT, (off_t)i * SYNC_SLOT);
		if (n < 96 || memcmp(buf, "LOLESYNC", 8))
			continue;
		memcpy(&psize, buf + 12, 4);
		memcpy(&dev, buf + 32, 8);
		dev ^= 0x1234;
		memcpy(buf + 32, &dev, 8);
		sum = XXH3_64bits(buf, 88 + 2 * (size_t)psize);
		memcpy(buf + 88 + 2 * (size_t)psize, &sum, 8);
		assert_true(pwrite(fd, buf, (size_t)n, (off_t)i * SYNC_SLOT) == n);
	}
	close(fd);
	fd = log_load(f);
	for (off = 0; (size = log_record_size(off)); off += size)
		log_record_add(off, 40, 0x1234);
	assert_true(off > 0); /* a record at least */
	assert_true(pwrite(fd, log_buf, off, 0) == (ssize_t)off);
	close(fd);
}

/*
 * A power cut after commits that were never synced, at its worst: their meta page reached
 * the disk, their tree pages did not. Without the sync record that store is broken (here:
 * shorter than its meta page says, so it is refused); after a restart of the machine (a
 * new boot id) the record puts the synced snapshot back, whole: every synced key, no
 * unsynced one.
 */
/* Puts back the disk as crash_after_lazy_commits left it after the cut: the commit log and
 * the synced image, under the unsynced commits' meta pages, which go to pages[2 * PSIZE]. */
static void cut_power(struct fx *f, char *pages)
{
	char data[128], image[128], metas[128];
	int fd;

	restore_log(f, "log-image");
	snprintf(data, sizeof(data), "%s/data.mdb", f->dir);
	snprintf(image, sizeof(image), "%s/image", f->dir);
	snprintf(metas, sizeof(metas), "%s/metas", f->dir);
	assert_int_equal(copy_file(image, data, 0), 0);
	fd = open(metas, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, pages, 2 * PSIZE), (ssize_t)(2 * PSIZE));
	close(fd);
	fd = open(data, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, pages, 2 * PSIZE, 0), (ssize_t)(2 * PSIZE));
	close(fd);
}

/* Checks that the file of saved meta pages the open's note names holds pages[2 * PSIZE];
 * its name into name[64]. */
static void assert_metas_kept(struct fx *f, const char *note, const char *pages, char *name)
{
	static char kept[2 * PSIZE];
	const char *at = strstr(note, "data.mdb.metas-before-rollback.");
	char path[256];
	int fd;

	if (!at)
		fail_msg("the note does not name the saved meta pages: \"%s\"", note);
	snprintf(name, 64, "%.*s", (int)strcspn(at, ")"), at);
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, kept, sizeof(kept)), (ssize_t)sizeof(kept));
	close(fd);
	assert_memory_equal(kept, pages, sizeof(kept));
}

static void power_cut_after_unsynced_commits(struct fx *f, bool checkpoint, bool new_dev)
{
	struct lode_store_opts o = {.dir = f->dir, .map_size = 64ull << 20};
	struct lode_store *st;
	static char pages[2 * PSIZE];
	char kept_name[64];

	crash_after_lazy_commits(f, checkpoint);
	cut_power(f, pages);
	if (new_dev)
		renumber_device(f);

	/* the same boot says the page cache survived: nothing is rolled back, and the torn
	 * store is refused, not opened */
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), -EUCLEAN);

	/* another boot: the record's snapshot comes back, the meta pages it replaced kept */
	setenv("LODE_MDS_BOOT_ID", "a later boot of this machine", 1);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_non_null(strstr(lode_store_open_note(st), "restarted"));
	/* what the log made durable came back through it, the rest was in the snapshot */
	assert_true(!strstr(lode_store_open_note(st), "replayed 1 commits") == checkpoint);
	assert_metas_kept(f, lode_store_open_note(st), pages, kept_name);
	assert_int_equal(count_keys(st, "durable", DURABLE, 'D'), DURABLE);
	assert_int_equal(count_keys(st, "lazy", LAZY, 'L'), 0);
	/* and it is a store that takes commits again */
	assert_int_equal(put_keys(st, "after", 10, 'A'), 0);
	assert_int_equal(lode_store_sync(st), 0);
	lode_store_close(st);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_string_equal(lode_store_open_note(st), "");
	assert_int_equal(count_keys(st, "after", 10, 'A'), 10);
	lode_store_close(st);
	unsetenv("LODE_MDS_BOOT_ID");
}

/*
 * Two power cuts, each after unsynced commits, with no one looking in between: each
 * rollback keeps the meta pages it replaced in a file of its own, so the second does not
 * overwrite what the first saved.
 */
static void test_a_second_rollback_keeps_the_pages_the_first_saved(void **state)
{
	struct fx *f = *state;
	struct lode_store_opts o = {.dir = f->dir, .map_size = 64ull << 20};
	struct lode_store *st;
	static char first[2 * PSIZE], second[2 * PSIZE];
	char first_name[64], second_name[64];

	crash_after_lazy_commits(f, true);
	cut_power(f, first);
	setenv("LODE_MDS_BOOT_ID", "the second boot", 1);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_metas_kept(f, lode_store_open_note(st), first, first_name);
	lode_store_close(st);

	crash_after_lazy_commits(f, true); /* in the second boot */
	cut_power(f, second);
	setenv("LODE_MDS_BOOT_ID", "the third boot", 1);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_metas_kept(f, lode_store_open_note(st), second, second_name);
	assert_string_not_equal(first_name, second_name);
	lode_store_close(st);
	/* the first file is still whole */
	snprintf(f->why, sizeof(f->why), "the machine restarted (%s)", first_name);
	assert_metas_kept(f, f->why, first, first_name);
	unsetenv("LODE_MDS_BOOT_ID");
}

static void test_a_power_cut_after_unsynced_commits_rolls_back_to_the_last_sync(void **state)
{
	power_cut_after_unsynced_commits(*state, true, false);
}

/* The same, with the durable commit synced in the commit log only: the store rolls back to
 * the checkpoint of its open, then replays it. */
static void test_a_power_cut_keeps_what_the_commit_log_made_durable(void **state)
{
	power_cut_after_unsynced_commits(*state, false, false);
}

/* The same after a restart that gave the disk another device number: the record and the
 * log still know the data file (by its inode). */
static void test_a_power_cut_and_a_new_device_number_lose_nothing_synced(void **state)
{
	power_cut_after_unsynced_commits(*state, false, true);
}

/*
 * The other end of the same cut: every page the unsynced commits wrote reached the disk,
 * their meta pages too (the kernel wrote them back). Rolled back to the synced snapshot,
 * the store must still be whole: the commits after the sync never overwrote one of its
 * pages (the store holds it with a read transaction).
 */
static void test_commits_after_a_sync_never_overwrite_the_synced_snapshot(void **state)
{
	struct fx *f = *state;
	struct lode_store_opts o = {.dir = f->dir, .map_size = 64ull << 20};
	char data[128], live[128];
	struct lode_store *st;

	crash_after_lazy_commits(f, true);
	restore_log(f, "log-image");
	snprintf(data, sizeof(data), "%s/data.mdb", f->dir);
	snprintf(live, sizeof(live), "%s/live", f->dir);
	/* in place, so that the data file stays the one the record names */
	assert_int_equal(copy_file(live, data, 0), 0);
	setenv("LODE_MDS_BOOT_ID", "a later boot of this machine", 1);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_non_null(strstr(lode_store_open_note(st), "restarted"));
	assert_int_equal(count_keys(st, "durable", DURABLE, 'D'), DURABLE);
	assert_int_equal(count_keys(st, "lazy", LAZY, 'L'), 0);
	lode_store_close(st);
	unsetenv("LODE_MDS_BOOT_ID");
}

/*
 * A power cut that tore a record of the commit log (a bad sector, say): the replay stops
 * there, and no later record is applied without it, though each of them is whole.
 */
static void test_a_torn_log_record_stops_the_replay_before_later_ones(void **state)
{
	struct fx *f = *state;
	struct lode_store_opts o = {.dir = f->dir, .map_size = 64ull << 20};
	char data[128], image[128], log[128], rec[128], rec_saved[128];
	struct lode_store *st;
	pid_t pid;
	int fd;
	char byte;

	snprintf(data, sizeof(data), "%s/data.mdb", f->dir);
	snprintf(image, sizeof(image), "%s/image", f->dir);
	snprintf(log, sizeof(log), "%s/data.log", f->dir);
	snprintf(rec, sizeof(rec), "%s/data.sync", f->dir);
	snprintf(rec_saved, sizeof(rec_saved), "%s/record-saved", f->dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char path[128];

		if (lode_store_open(&o, &st, f->why, sizeof(f->why)) || copy_file(data, image, 0))
			_exit(1);
		for (char c = 'a'; c <= 'c'; c++) {
			char prefix[2] = {c, 0};

			if (put_keys(st, prefix, DURABLE, c) || lode_store_sync(st))
				_exit(2);
		}
		snprintf(path, sizeof(path), "%s/log-image", f->dir);
		if (copy_file(log, path, 0) || copy_file(rec, rec_saved, 0))
			_exit(3);
		_exit(0); /* no lode_store_close: it would checkpoint */
	}
	child_ok(pid);

	/* the disk: the data file as the open's checkpoint left it, and the log with a byte
	 * of its first record's payload flipped */
	assert_int_equal(copy_file(image, data, 0), 0);
	fd = open(log, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &byte, 1, 64), 1);
	byte ^= 0x5a;
	assert_int_equal(pwrite(fd, &byte, 1, 64), 1);
	close(fd);
	setenv("LODE_MDS_BOOT_ID", "a later boot of this machine", 1);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_null(strstr(lode_store_open_note(st), "replayed"));
	assert_int_equal(count_keys(st, "a", DURABLE, 'a'), 0);
	assert_int_equal(count_keys(st, "b", DURABLE, 'b'), 0);
	assert_int_equal(count_keys(st, "c", DURABLE, 'c'), 0);
	lode_store_close(st);

	/* the same disk with the log whole: all three, in order */
	assert_int_equal(copy_file(image, data, 0), 0);
	assert_int_equal(copy_file(rec_saved, rec, 0), 0);
	restore_log(f, "log-image");
	setenv("LODE_MDS_BOOT_ID", "the boot after that", 1);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_non_null(strstr(lode_store_open_note(st), "replayed 3 commits"));
	assert_int_equal(count_keys(st, "a", DURABLE, 'a'), DURABLE);
	assert_int_equal(count_keys(st, "b", DURABLE, 'b'), DURABLE);
	assert_int_equal(count_keys(st, "c", DURABLE, 'c'), DURABLE);
	lode_store_close(st);
	unsetenv("LODE_MDS_BOOT_ID");
}

/* Rewrites record number idx (from 0) of DIR/data.log: its txnid moved by delta, or, with
 * erase, the whole record zeroed. */
static void log_record_patch(struct fx *f, unsigned idx, uint64_t delta, bool erase)
{
	int fd = log_load(f);
	size_t off = 0, size;

	for (unsigned i = 0; i < idx; i++) {
		size = log_record_size(off);
		assert_true(size > 0);
		off += size;
	}
	size = log_record_size(off);
	assert_true(size > 0);
	if (erase)
		memset(log_buf + off, 0, size);
	else
		log_record_add(off, 24, delta);
	assert_true(pwrite(fd, log_buf + off, size, (off_t)off) == (ssize_t)size);
	close(fd);
}

/*
 * An open that fails halfway through its replay (a record names a transaction the log
 * skipped) leaves the snapshot it opened at whole: its replayed commits did not reuse that
 * snapshot's pages. The next open rolls back to it again and replays what it can.
 */
static void test_a_replay_that_fails_halfway_leaves_the_snapshot_whole(void **state)
{
	struct fx *f = *state;
	struct lode_store_opts o = {.dir = f->dir, .map_size = 64ull << 20};
	char data[128], image[128];
	struct lode_store *st;
	pid_t pid;

	snprintf(data, sizeof(data), "%s/data.mdb", f->dir);
	snprintf(image, sizeof(image), "%s/image", f->dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (lode_store_open(&o, &st, f->why, sizeof(f->why)) ||
		    put_keys(st, "k", DURABLE, '0') || lode_store_sync(st) ||
		    copy_file(data, image, 0))
			_exit(1);
		/* six commits, each rewriting every key: each frees the pages of the one
		 * before, which a later commit reuses if nothing holds them */
		for (char c = '1'; c <= '6'; c++)
			if (put_keys(st, "k", DURABLE, c) || lode_store_sync(st))
				_exit(2);
		_exit(0); /* no lode_store_close: it would checkpoint */
	}
	child_ok(pid);

	/* the disk: the data file as the first sync left it (its snapshot is the open's
	 * checkpoint's, plus the first record, both in the log); the seventh record (the
	 * sixth rewrite) names a transaction five past its own */
	assert_int_equal(copy_file(image, data, 0), 0);
	log_record_patch(f, 6, 5, false);
	setenv("LODE_MDS_BOOT_ID", "a later boot of this machine", 1);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), -EUCLEAN);
	assert_non_null(strstr(f->why, "missing from the log"));

	/* without that record: the snapshot comes back whole, and six records replay */
	log_record_patch(f, 6, 0, true);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_non_null(strstr(lode_store_open_note(st), "replayed 6 commits"));
	assert_int_equal(count_keys(st, "k", DURABLE, '5'), DURABLE);
	lode_store_close(st);
	unsetenv("LODE_MDS_BOOT_ID");
}

/* The store's files, as a power cut leaves them: copies taken when they were durable. */
static const char *const store_files[] = {"data.mdb", "data.sync", "data.log"};

/* Copies DIR/NAME to DIR/NAME.disk, what the disk holds of it from now on. 0 or -1 (for a
 * child process, which cannot assert). */
static int save_disk(struct fx *f, const char *name)
{
	char from[128], to[128];

	snprintf(from, sizeof(from), "%s/%s", f->dir, name);
	snprintf(to, sizeof(to), "%s/%s.disk", f->dir, name);
	return copy_file(from, to, 0);
}

/* Puts back every file of the store as save_disk kept it: the disk after the cut. */
static void cut_to_disk(struct fx *f)
{
	char from[128], to[128];

	for (size_t i = 0; i < sizeof(store_files) / sizeof(store_files[0]); i++) {
		snprintf(to, sizeof(to), "%s/%s", f->dir, store_files[i]);
		snprintf(from, sizeof(from), "%s/%s.disk", f->dir, store_files[i]);
		assert_int_equal(copy_file(from, to, 0), 0);
	}
}

/*
 * A commit bigger than the commit log: it is made durable in the data file at once (a
 * checkpoint), without a sync from the caller, and a power cut right after keeps it.
 */
#define BIG 4400 /* 1 KiB values: more than the 4 MiB log */
static void test_a_commit_bigger_than_the_log_is_checkpointed_at_once(void **state)
{
	struct fx *f = *state;
	struct lode_store_opts o = {.dir = f->dir, .map_size = 64ull << 20};
	struct lode_store_stats before, after;
	struct lode_store *st;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (lode_store_open(&o, &st, f->why, sizeof(f->why)))
			_exit(1);
		lode_store_stats(st, &before);
		if (put_keys(st, "big", BIG, 'B'))
			_exit(2);
		lode_store_stats(st, &after);
		if (after.checkpoints != before.checkpoints + 1)
			_exit(3);
		/* the disk after the cut: as the checkpoint left it */
		for (int i = 0; i < 3; i++)
			if (save_disk(f, store_files[i]))
				_exit(4);
		if (put_keys(st, "lazy", 10, 'L'))
			_exit(5);
		_exit(0); /* no lode_store_close: it would checkpoint */
	}
	child_ok(pid);
	cut_to_disk(f);
	setenv("LODE_MDS_BOOT_ID", "a later boot of this machine", 1);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_int_equal(count_keys(st, "big", BIG, 'B'), BIG);
	assert_int_equal(count_keys(st, "lazy", 10, 'L'), 0);
	lode_store_close(st);
	unsetenv("LODE_MDS_BOOT_ID");
}

/*
 * A commit whose commit-log record cannot be written (EIO) is made durable in the data
 * file at once (a checkpoint), and the log goes on: after a power cut, the keys committed
 * before it, with it and after it (logged and synced) are all there.
 */
static void test_a_commit_whose_log_write_fails_is_checkpointed_and_kept(void **state)
{
	struct fx *f = *state;
	struct lode_store_opts o = {.dir = f->dir, .map_size = 64ull << 20};
	struct lode_store_stats before, after;
	struct lode_store *st;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (lode_store_open(&o, &st, f->why, sizeof(f->why)) ||
		    put_keys(st, "a", 10, 'A') || lode_store_sync(st))
			_exit(1);
		lode_store_stats(st, &before);
		fail_log_writes = true;
		if (put_keys(st, "b", 10, 'B'))
			_exit(2); /* the commit itself succeeds */
		fail_log_writes = false;
		lode_store_stats(st, &after);
		if (after.checkpoints != before.checkpoints + 1)
			_exit(3);
		/* the disk after the cut: the data file and record as that checkpoint left
		 * them, the log as the next sync leaves it */
		if (save_disk(f, "data.mdb") || save_disk(f, "data.sync"))
			_exit(4);
		if (put_keys(st, "c", 10, 'C') || lode_store_sync(st))
			_exit(5);
		lode_store_stats(st, &before);
		if (before.checkpoints != after.checkpoints)
			_exit(6); /* c went to the log, not to a checkpoint */
		if (save_disk(f, "data.log"))
			_exit(4);
		_exit(0); /* no lode_store_close: it would checkpoint */
	}
	child_ok(pid);
	cut_to_disk(f);
	setenv("LODE_MDS_BOOT_ID", "a later boot of this machine", 1);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_non_null(strstr(lode_store_open_note(st), "replayed 1 commits"));
	assert_int_equal(count_keys(st, "a", 10, 'A'), 10);
	assert_int_equal(count_keys(st, "b", 10, 'B'), 10);
	assert_int_equal(count_keys(st, "c", 10, 'C'), 10);
	lode_store_close(st);
	unsetenv("LODE_MDS_BOOT_ID");
}

/*
 * A checkpoint that cannot move its pin (no read transaction to be had) fails, and the
 * store takes no change after it: a commit could reuse the pages of the snapshot just made
 * durable. What that checkpoint made durable is kept, at the next open too.
 */
static void test_a_checkpoint_that_cannot_move_its_pin_stops_every_change(void **state)
{
	struct fx *f = *state;
	struct lode_store_opts o = {
	    .dir = f->dir, .map_size = 64ull << 20, .checkpoint_commits = 1};
	struct lode_store *st;
	struct lode_txn t;

	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_int_equal(put_keys(st, "a", 10, 'A'), 0);
	assert_int_equal(lode_store_sync(st), 0);
	assert_int_equal(put_keys(st, "b", 10, 'B'), 0);
	fail_pin = true;
	assert_int_not_equal(lode_store_sync(st), 0); /* a checkpoint: 1 commit since */
	fail_pin = false;
	assert_int_not_equal(lode_store_write_begin(st, NULL, &t), 0);
	assert_int_not_equal(lode_store_sync(st), 0);
	lode_store_close(st);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_int_equal(count_keys(st, "a", 10, 'A'), 10);
	assert_int_equal(count_keys(st, "b", 10, 'B'), 10);
	assert_int_equal(put_keys(st, "c", 10, 'C'), 0); /* a new open takes changes again */
	lode_store_close(st);
}

/*
 * A record whose checksum holds but whose changes do not parse (a key that runs past the
 * record's end) stops the open with a reason that names it; the store is not changed by it, and
 * opens once the record is gone.
 */
static void test_a_log_record_that_does_not_parse_stops_the_open(void **state)
{
	struct fx *f = *state;
	struct lode_store_opts o = {.dir = f->dir, .map_size = 64ull << 20};
	char data[128], image[128];
	struct lode_store *st;
	uint32_t klen, vlen = 0;
	size_t size;
	pid_t pid;
	int fd;

	snprintf(data, sizeof(data), "%s/data.mdb", f->dir);
	snprintf(image, sizeof(image), "%s/image", f->dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (lode_store_open(&o, &st, f->why, sizeof(f->why)) || put_keys(st, "k", 5, 'K') ||
		    lode_store_sync(st))
			_exit(1);
		lode_store_close(st);
		/* the data file as a checkpoint leaves it, then one logged commit */
		if (lode_store_open(&o, &st, f->why, sizeof(f->why)) || copy_file(data, image, 0) ||
		    put_keys(st, "n", 5, 'N') || lode_store_sync(st))
			_exit(2);
		_exit(0);
	}
	child_ok(pid);
	assert_int_equal(copy_file(image, data, 0), 0);

	/* the first change: a key one byte longer than the record holds, no value (its
	 * lengths at payload offsets 4 and 8), resealed */
	fd = log_load(f);
	size = log_record_size(0);
	assert_true(size > LOG_HDR + 16);
	klen = (uint32_t)(size - LOG_HDR - 8 - 12 + 1);
	memcpy(log_buf + LOG_HDR + 4, &klen, 4);
	memcpy(log_buf + LOG_HDR + 8, &vlen, 4);
	log_record_seal(0);
	assert_true(pwrite(fd, log_buf, size, 0) == (ssize_t)size);
	close(fd);

	setenv("LODE_MDS_BOOT_ID", "a later boot of this machine", 1);
	assert_int_not_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	if (!strstr(f->why, "cannot replay transaction"))
		fail_msg("the open's reason does not name the record: \"%s\"", f->why);
	log_record_patch(f, 0, 0, true);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_int_equal(count_keys(st, "k", 5, 'K'), 5);
	assert_int_equal(count_keys(st, "n", 5, 'N'), 0);
	lode_store_close(st);
	unsetenv("LODE_MDS_BOOT_ID");
}

/* A commit log that cannot be made (here a directory is in its place) stops the open, which
 * names it; once it can be, the store opens with everything it held. */
static void test_a_commit_log_that_cannot_be_opened_stops_the_open(void **state)
{
	struct fx *f = *state;
	struct lode_store_opts o = {.dir = f->dir, .map_size = 64ull << 20};
	struct lode_store *st;
	char log[128];

	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_int_equal(put_keys(st, "k", 5, 'K'), 0);
	lode_store_close(st);
	snprintf(log, sizeof(log), "%s/data.log", f->dir);
	assert_int_equal(unlink(log), 0);
	assert_int_equal(mkdir(log, 0700), 0);
	assert_int_not_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	if (!strstr(f->why, "data.log"))
		fail_msg("the open's reason does not name the log: \"%s\"", f->why);
	assert_int_equal(rmdir(log), 0);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_int_equal(count_keys(st, "k", 5, 'K'), 5);
	lode_store_close(st);
}

/*
 * A power cut while the sync record's newest slot was being written: the data file had
 * been synced for that sync, but the slot is torn, so that sync was never answered. After
 * the restart the record falls back to its other slot, the sync before, and the store
 * comes back whole at that snapshot (the store held it until the record was written).
 */
static void test_a_torn_newest_sync_slot_falls_back_to_the_sync_before(void **state)
{
	struct fx *f = *state;
	struct lode_store_opts o = {
	    .dir = f->dir, .map_size = 64ull << 20, .checkpoint_commits = 1};
	char rec[128], first[128], log[128], log_first[128];
	static char a[1 << 18], b[1 << 18]; /* both slots of the record */
	struct lode_store *st;
	ssize_t na, nb, at = 0;
	pid_t pid;
	int fd;

	snprintf(rec, sizeof(rec), "%s/data.sync", f->dir);
	snprintf(first, sizeof(first), "%s/record-first", f->dir);
	snprintf(log, sizeof(log), "%s/data.log", f->dir);
	snprintf(log_first, sizeof(log_first), "%s/log-first", f->dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (lode_store_open(&o, &st, f->why, sizeof(f->why)) ||
		    put_keys(st, "first", DURABLE, 'F') || lode_store_sync(st) ||
		    copy_file(rec, first, 0) || copy_file(log, log_first, 0))
			_exit(1);
		if (put_keys(st, "lazy", LAZY, 'L') || put_keys(st, "second", DURABLE, 'S') ||
		    lode_store_sync(st))
			_exit(2);
		_exit(0); /* no lode_store_close: it would sync */
	}
	child_ok(pid);

	/* tear the slot the second sync wrote: the first byte that differs from the record
	 * as the first sync left it */
	fd = open(first, O_RDONLY);
	assert_true(fd >= 0);
	na = read(fd, a, sizeof(a));
	close(fd);
	fd = open(rec, O_RDWR);
	assert_true(fd >= 0);
	nb = read(fd, b, sizeof(b));
	assert_true(na > 0 && nb > 0);
	while (at < na && at < nb && a[at] == b[at])
		at++;
	assert_true(at < nb);
	b[at] ^= 0x5a;
	assert_int_equal(pwrite(fd, b + at, 1, at), 1);
	close(fd);
	/* nor did the log's appends after the first sync reach the disk */
	restore_log(f, "log-first");

	setenv("LODE_MDS_BOOT_ID", "a later boot of this machine", 1);
	assert_int_equal(lode_store_open(&o, &st, f->why, sizeof(f->why)), 0);
	assert_non_null(strstr(lode_store_open_note(st), "restarted"));
	assert_int_equal(count_keys(st, "first", DURABLE, 'F'), DURABLE);
	assert_int_equal(count_keys(st, "lazy", LAZY, 'L'), 0);
	assert_int_equal(count_keys(st, "second", DURABLE, 'S'), 0);
	assert_int_equal(put_keys(st, "after", 10, 'A'), 0);
	assert_int_equal(lode_store_sync(st), 0);
	lode_store_close(st);
	unsetenv("LODE_MDS_BOOT_ID");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
		test_an_empty_directory_is_formatted_and_reopened_with_the_same_cluster_id, setup,
		teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_store_that_lost_its_format_version_is_refused_not_formatted, setup,
		teardown),
	    cmocka_unit_test_setup_teardown(test_a_format_version_of_zero_is_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_cluster_id_with_a_flipped_bit_is_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_bare_cluster_id_from_an_older_store_gets_its_checksum, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_truncated_data_file_is_refused_before_any_page_is_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_store_with_deep_trees_overflow_values_and_a_free_list_passes_the_check,
		setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_page_with_bounds_past_its_end_is_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_page_with_another_number_is_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_branch_page_marked_leaf_is_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_node_offset_outside_its_page_is_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_crashed_process_loses_no_unsynced_commit, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_power_cut_after_unsynced_commits_rolls_back_to_the_last_sync, setup,
		teardown),
	    cmocka_unit_test_setup_teardown(test_a_power_cut_keeps_what_the_commit_log_made_durable,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_power_cut_and_a_new_device_number_lose_nothing_synced, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_commits_after_a_sync_never_overwrite_the_synced_snapshot, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_child_past_the_last_page_is_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_torn_newest_sync_slot_falls_back_to_the_sync_before, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_torn_log_record_stops_the_replay_before_later_ones, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_commit_bigger_than_the_log_is_checkpointed_at_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_replay_that_fails_halfway_leaves_the_snapshot_whole, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_commit_whose_log_write_fails_is_checkpointed_and_kept, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_second_rollback_keeps_the_pages_the_first_saved,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_checkpoint_that_cannot_move_its_pin_stops_every_change, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_log_record_that_does_not_parse_stops_the_open,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_commit_log_that_cannot_be_opened_stops_the_open,
					    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
