/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the MDS's reading of its own LMDB values (mds/records.c and the namespace code
 * on top of it, mds/placement.c for targets): what a damaged or tampered store holds.
 * LMDB's own page format is LMDB's business (store.c checks the file against its meta
 * page); here every key and value is well-framed for LMDB but holds arbitrary bytes.
 *
 * One store in a temporary directory for the whole process (removed at exit). Per input,
 * in one write transaction that is always aborted (so inputs do not pile up): the input's
 * records are put, the targets are loaded into a fresh placement, then the namespace is
 * read (getattr, lookup, readdir and readdirplus pages, readlink, xattrs, layouts, orphans,
 * statfs) and changed (open, commit, setattr, rename, unlink, rmdir, mkdir, copy reports
 * and repairs, orphan completion) on the inodes the records name.
 *
 * Input: records [db u8][key_len u8][key][value_len u16 LE][value]..., db taken modulo the
 * number of databases (meta, inodes, dirents, cookies, symlinks, xattrs, targets, orphans).
 * Checked: nothing crashes or reads out of bounds; a readdir page the MDS builds from
 * whatever it read is one the client's decoder accepts, as it would be sent.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "codec.h"
#include "fixture.h"
#include "fuzz.h"
#include "mds_spec.h"
#include "namespace.h"
#include "placement.h"
#include "records.h"
#include "store.h"

static char dir[64];
static struct lode_store *st;

static void cleanup(void)
{
	lode_store_close(st);
	if (dir[0])
		fixture_tmpdir_remove(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct lode_store_opts o = {.map_size = 64ull << 20};
	char why[256] = "";

	(void)argc, (void)argv;
	if (fixture_tmpdir_make(dir, sizeof(dir), "lode-fuzz-rec")) {
		fprintf(stderr, "fuzz_mds_records: cannot make a directory in /tmp\n");
		exit(1);
	}
	o.dir = dir;
	if (lode_store_open(&o, &st, why, sizeof(why))) {
		fprintf(stderr, "fuzz_mds_records: cannot open a store: %s\n", why);
		exit(1);
	}
	atexit(cleanup);
	return 0;
}

/* A page the MDS answered must decode on the client. */
static void check_page(int plus, const void *buf, size_t used, uint32_t count, int eof)
{
	struct lode_wire_readdir_rep rep = {.count = count, .eof = (uint32_t)eof};
	const struct lode_wire_readdir_rep *r;
	int rc = plus ? lode_dec_readdirplus_rep(&rep, sizeof(rep), buf, used, &r)
		      : lode_dec_readdir_rep(&rep, sizeof(rep), buf, used, &r);

	if (rc) {
		fprintf(stderr, "readdir%s page of %u entries, %zu bytes, does not decode: %d\n",
			plus ? "plus" : "", count, used, rc);
		abort();
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void read_namespace(struct lode_txn *t, struct lode_placement *pl)
{
	static char buf[64 << 10] __attribute__((aligned(8)));
	const lode_cred root = {0, 0}, user = {1000, 1000};
	struct lode_wire_attr a;
	struct lode_wire_layout_rep lr;
	struct lode_wire_statfs_rep sf;
	struct lode_wire_objid ids[16];
	size_t used, len;
	uint32_t count, n;
	int eof;

	for (uint64_t ino = 1; ino <= 4; ino++) {
		lode_ns_getattr(t, ino, &a);
		lode_ns_layout_get(t, ino, &lr);
		if (!lode_ns_readlink(t, ino, buf, sizeof(buf), &len))
			FUZZ_ASSERT(len <= sizeof(buf));
		if (!lode_ns_listxattr(t, &root, ino, buf, sizeof(buf), &len))
			FUZZ_ASSERT(len <= sizeof(buf));
		lode_ns_getxattr(t, &user, ino, "user.a", 6, buf, sizeof(buf), &len);
		lode_ns_lookup(t, &user, ino, "a", 1, &a);
		for (int plus = 0; plus <= 1; plus++) {
			int rc = plus ? lode_ns_readdirplus(t, &root, ino, 0, 64, buf, sizeof(buf),
							    &used, &count, &eof)
				      : lode_ns_readdir(t, &root, ino, 0, 64, buf, sizeof(buf),
							&used, &count, &eof);

			if (!rc)
				check_page(plus, buf, used, count, eof);
		}
	}
	for (uint32_t tid = 1; tid <= 2; tid++)
		lode_ns_orphan_list(t, tid, lode_ns_now(), 0, ids, 16, &n);
	lode_ns_statfs(t, pl, now_ms(), &sf);
}

static void change_namespace(struct lode_txn *t, struct lode_placement *pl)
{
	const lode_cred root = {0, 0};
	struct lode_wire_attr a;
	struct lode_wire_layout l;
	struct lode_wire_layout_rep lr;
	struct lode_wire_setattr_req sa = {
	    .ino = 2, .valid = LODE_SETATTR_SIZE | LODE_SETATTR_MODE, .mode = 0600, .size = 77};
	struct lode_wire_objid id = {.ino = 9, .generation = 1};

	lode_ns_open(t, &root, 2, LODE_OPEN_READ | LODE_OPEN_WRITE | LODE_OPEN_TRUNC, &a, &l);
	lode_ns_commit(t, 2, 4096, false, 1, 0, &a);
	lode_ns_setattr(t, &sa, &a);
	lode_ns_report_copy(t, 2, 1, 0, 1);
	lode_ns_set_copy(t, pl, 2, 0, 1, 2, &lr);
	lode_ns_setxattr(t, &root, 1, "user.b", 6, "v", 1, 0);
	lode_ns_removexattr(t, &root, 1, "user.a", 6);
	lode_ns_orphan_done(t, 1, &id, 1);
	lode_ns_link(t, &root, 2, 1, "l", 1, &a);
	lode_ns_rename(t, &root, 1, "a", 1, 1, "b", 1, 0);
	lode_ns_rename(t, &root, 1, "b", 1, 4, "c", 1, LODE_RENAME_EXCHANGE);
	lode_ns_unlink(t, &root, 1, "b", 1);
	lode_ns_rmdir(t, &root, 1, "d", 1);
	lode_ns_mkdir(t, &root, 4, "x", 1, 0755, &a);
	lode_ns_symlink(t, &root, 4, "s", 1, "t", 1, &a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	struct lode_placement *pl;
	struct lode_txn t;

	if (lode_placement_create(&pl, 0))
		return 0;
	FUZZ_ASSERT(lode_store_write_begin(st, NULL, &t) == 0);
	while (in.left) {
		unsigned db = (unsigned)fuzz_take(&in, 1) % LODE_DB_COUNT_;
		size_t klen, vlen;
		const uint8_t *k = fuzz_bytes(&in, (size_t)fuzz_take(&in, 1), &klen);
		const uint8_t *v = fuzz_bytes(&in, (size_t)fuzz_take(&in, 2), &vlen);

		if (klen) /* LMDB takes no empty keys */
			lode_kv_put(&t, (enum lode_db)db, k, klen, v, vlen, 0);
	}
	lode_placement_load(pl, &t);
	read_namespace(&t, pl);
	change_namespace(&t, pl);
	lode_store_abort(&t);
	lode_placement_destroy(pl);
	return 0;
}
