/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the MDS storage layer (store, namespace, placement, lease, writer) against
 * a real LMDB environment in a fresh temporary directory per test, removed in teardown
 * (which cmocka also runs when a test fails).
 */
#include <errno.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "lease.h"
#include "loop.h"
#include "mds_spec.h"
#include "namespace.h"
#include "placement.h"
#include "records.h"
#include "store.h"
#include "writer.h"

#define ROOT   LODE_MDS_ROOT_INO
#define NOW_MS 1000000ull

struct fx {
	char dir[64];
	struct lode_store *st;
	struct lode_placement *pl;
};

static const lode_cred root_cred = {0, 0};
static const lode_cred alice = {1000, 1000};
static const lode_cred bob = {1001, 1001};

static void open_store(struct fx *f)
{
	struct lode_store_opts o = {.dir = f->dir, .map_size = 256ull << 20};
	char why[256];

	assert_int_equal(lode_store_open(&o, &f->st, why, sizeof(why)), 0);
}

/* Registers n targets, all UP at NOW_MS, with free space decreasing with the id (GiB of
 * 1000 MiB: TGT_MB(x) bytes). */
#define TGT_MB(x) ((uint64_t)(x) << 20)
static void add_targets(struct fx *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint8_t uuid[16] = {(uint8_t)(i + 1)};
		char addr[32];
		struct lode_txn t;
		uint32_t id;

		snprintf(addr, sizeof(addr), "tcp://127.0.0.1:%u", 7000 + i);
		assert_int_equal(lode_store_write_begin(f->st, NULL, &t), 0);
		assert_int_equal(lode_placement_register_txn(&t, uuid, addr, (uint16_t)strlen(addr),
							     TGT_MB(1000), TGT_MB(1000 - i), &id),
				 0);
		assert_int_equal(lode_store_commit(&t), 0);
		assert_int_equal(id, i + 1);
		assert_int_equal(lode_placement_update(f->pl, id, addr, (uint16_t)strlen(addr),
						       TGT_MB(1000), TGT_MB(1000 - i), NOW_MS),
				 0);
	}
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(fixture_tmpdir_make(f->dir, sizeof(f->dir), "lode-mds-test"), 0);
	open_store(f);
	assert_int_equal(lode_placement_create(&f->pl, 0), 0);
	add_targets(f, 4);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	lode_store_close(f->st);
	lode_placement_destroy(f->pl);
	fixture_tmpdir_remove(f->dir);
	free(f);
	return 0;
}

/* ---- helpers: each runs one op in its own txn ---- */

static struct lode_txn W(struct fx *f) {
	struct lode_txn t;

	assert_int_equal(lode_store_write_begin(f->st, NULL, &t), 0);
	return t;
}

static struct lode_txn
R(struct fx *f) {
	struct lode_txn t;

	assert_int_equal(lode_store_read_begin(f->st, &t), 0);
	return t;
}

/* Commits on success, aborts on failure; returns rc. */
static int
end(struct lode_txn *t, int rc)
{
	if (rc)
		lode_store_abort(t);
	else
		assert_int_equal(lode_store_commit(t), 0);
	return rc;
}

/* CREATE arguments: a new file `name` (0600) in the root, by root, with the root's layout,
 * placed by the fixture's targets; tests change what they need. */
static struct lode_ns_create create_req(struct fx *f, const char *name)
{
	struct lode_ns_create a = {.parent = ROOT,
				   .cred = root_cred,
				   .name = name,
				   .name_len = strlen(name),
				   .mode = 0600,
				   .flags = LODE_OPEN_EXCL,
				   .pl = f->pl,
				   .now_ms = NOW_MS};

	return a;
}

static int run_create(struct fx *f, const struct lode_ns_create *a, struct lode_wire_attr *attr,
		      struct lode_wire_layout *l, int *created)
{
	struct lode_txn t = W(f);

	return end(&t, lode_ns_create(&t, a, attr, l, created));
}

static int do_create_as(struct fx *f, const lode_cred *c, uint64_t parent, const char *name,
			uint32_t flags, uint64_t *ino)
{
	struct lode_ns_create a = create_req(f, name);
	struct lode_wire_attr attr;
	struct lode_wire_layout l;
	int created;
	int rc;

	a.parent = parent;
	a.cred = *c;
	a.mode = 0644;
	a.flags = flags;
	rc = run_create(f, &a, &attr, &l, &created);
	if (!rc && ino)
		*ino = attr.ino;
	return rc;
}

static int do_create(struct fx *f, uint64_t parent, const char *name, uint64_t *ino)
{
	return do_create_as(f, &root_cred, parent, name, LODE_OPEN_EXCL | LODE_OPEN_WRITE, ino);
}

static int do_mkdir_as(struct fx *f, const lode_cred *c, uint64_t parent, const char *name,
		       uint32_t mode, uint64_t *ino)
{
	struct lode_wire_attr attr;
	struct lode_txn t = W(f);
	int rc = end(&t, lode_ns_mkdir(&t, c, parent, name, strlen(name), mode, &attr));

	if (!rc && ino)
		*ino = attr.ino;
	return rc;
}

static int do_mkdir(struct fx *f, uint64_t parent, const char *name, uint64_t *ino)
{
	return do_mkdir_as(f, &root_cred, parent, name, 0755, ino);
}

static int do_unlink(struct fx *f, const lode_cred *c, uint64_t parent, const char *name)
{
	struct lode_txn t = W(f);

	return end(&t, lode_ns_unlink(&t, c, parent, name, strlen(name)));
}

static int do_rmdir(struct fx *f, uint64_t parent, const char *name)
{
	struct lode_txn t = W(f);

	return end(&t, lode_ns_rmdir(&t, &root_cred, parent, name, strlen(name)));
}

static int do_rename(struct fx *f, uint64_t op, const char *on, uint64_t np, const char *nn,
		     uint32_t flags)
{
	struct lode_txn t = W(f);

	return end(&t,
		   lode_ns_rename(&t, &root_cred, op, on, strlen(on), np, nn, strlen(nn), flags));
}

static int do_lookup_as(struct fx *f, const lode_cred *c, uint64_t parent, const char *name,
			struct lode_wire_attr *attr)
{
	struct lode_wire_attr a;
	struct lode_txn t = R(f);
	int rc = lode_ns_lookup(&t, c, parent, name, strlen(name), attr ? attr : &a);

	lode_store_abort(&t);
	return rc;
}

static int do_lookup(struct fx *f, uint64_t parent, const char *name, struct lode_wire_attr *attr)
{
	return do_lookup_as(f, &root_cred, parent, name, attr);
}

static struct lode_wire_attr getattr(struct fx *f, uint64_t ino)
{
	struct lode_wire_attr a;
	struct lode_txn t = R(f);

	assert_int_equal(lode_ns_getattr(&t, ino, &a), 0);
	lode_store_abort(&t);
	return a;
}

static int do_setattr(struct fx *f, struct lode_wire_setattr_req *req)
{
	struct lode_wire_attr a;
	struct lode_txn t = W(f);

	return end(&t, lode_ns_setattr(&t, req, &a));
}

static int do_link(struct fx *f, uint64_t ino, uint64_t parent, const char *name,
		   struct lode_wire_attr *attr)
{
	struct lode_txn t = W(f);

	return end(&t, lode_ns_link(&t, &root_cred, ino, parent, name, strlen(name), attr));
}

static int do_setxattr(struct fx *f, const lode_cred *c, uint64_t ino, const char *name,
		       const char *value, uint32_t flags)
{
	struct lode_txn t = W(f);

	return end(&t,
		   lode_ns_setxattr(&t, c, ino, name, strlen(name), value, strlen(value), flags));
}

static int do_removexattr(struct fx *f, uint64_t ino, const char *name)
{
	struct lode_txn t = W(f);

	return end(&t, lode_ns_removexattr(&t, &root_cred, ino, name, strlen(name)));
}

static int do_orphan_done(struct fx *f, uint32_t target, const struct lode_wire_objid *ids,
			  uint32_t n)
{
	struct lode_txn t = W(f);

	return end(&t, lode_ns_orphan_done(&t, target, ids, n));
}

static int do_report_copy(struct fx *f, uint64_t ino, uint64_t generation, uint32_t stripe,
			  uint32_t target)
{
	struct lode_txn t = W(f);

	return end(&t, lode_ns_report_copy(&t, ino, generation, stripe, target));
}

static int do_set_copy(struct fx *f, uint64_t ino, uint32_t index, uint32_t old_target,
		       uint32_t new_target, struct lode_wire_layout_rep *out)
{
	struct lode_txn t = W(f);

	return end(&t, lode_ns_set_copy(&t, f->pl, ino, index, old_target, new_target, out));
}

/* ---- store ---- */

static void test_fresh_store_has_root_directory_0755_owned_by_root(void **state)
{
	struct fx *f = *state;
	struct lode_wire_attr a = getattr(f, ROOT);

	assert_int_equal(a.mode, S_IFDIR | 0755);
	assert_int_equal(a.uid, 0);
	assert_int_equal(a.gid, 0);
	assert_int_equal(a.nlink, 2);
	assert_true(lode_store_cluster_id(f->st) != 0);
}

static void test_store_keeps_everything_across_close_and_reopen(void **state)
{
	struct fx *f = *state;
	uint64_t cid = lode_store_cluster_id(f->st), d, ino, ino2;
	struct lode_wire_attr a;

	assert_int_equal(do_mkdir(f, ROOT, "models", &d), 0);
	assert_int_equal(do_create(f, d, "weights.safetensors", &ino), 0);
	lode_store_close(f->st);
	open_store(f);
	assert_int_equal(lode_store_cluster_id(f->st), cid);
	assert_int_equal(do_lookup(f, d, "weights.safetensors", &a), 0);
	assert_int_equal(a.ino, ino);
	/* inode numbers go on where they stopped */
	assert_int_equal(do_create(f, d, "config.json", &ino2), 0);
	assert_int_equal(ino2, ino + 1);
}

/* ---- inode records (mds_spec.h) ---- */

static size_t inode_rec_len(struct fx *f, uint64_t ino)
{
	unsigned char key[8], buf[512];
	struct lode_txn t = R(f);
	size_t len = 0;

	lode_be64_put(key, ino);
	assert_int_equal(lode_kv_get(&t, LODE_DB_INODES, key, sizeof(key), buf, sizeof(buf), &len),
			 0);
	lode_store_abort(&t);
	return len;
}

static struct lode_disk_inode inode_rec(struct fx *f, uint64_t ino)
{
	struct lode_disk_inode in;
	struct lode_txn t = R(f);

	assert_int_equal(lode_rec_inode_get(&t, ino, &in), 0);
	lode_store_abort(&t);
	return in;
}

/* A record ends at its layout's last target in use: a file's at its copies (120 bytes for
 * two, not the 368 of the whole struct), a directory's before its targets; targets left off
 * or in a gap read back as zero, and a length no record has is damaged. */
static void test_inode_records_end_at_their_last_target(void **state)
{
	struct fx *f = *state;
	struct lode_disk_inode in, back;
	unsigned char buf[sizeof(in)];
	uint64_t d, ino;
	unsigned n;

	assert_int_equal(do_mkdir(f, ROOT, "d", &d), 0);
	assert_int_equal(do_create(f, d, "f", &ino), 0);
	in = inode_rec(f, ino);
	n = (unsigned)in.layout.stripe_count * in.layout.mirror_count;
	assert_true(n >= 2 && n <= 8); /* the gap below is past them */
	assert_int_equal(inode_rec_len(f, ino), LODE_DISK_INODE_HEAD + 4 * n);
	assert_int_equal(inode_rec_len(f, d), LODE_DISK_INODE_HEAD);
	assert_int_equal(inode_rec(f, d).layout.targets[0], 0);

	in.layout.targets[63] = 7; /* the last slot in use: the whole struct, as version 1 */
	assert_int_equal(lode_rec_inode_encode(&in, buf), sizeof(in));
	assert_int_equal(lode_rec_inode_decode(buf, sizeof(in), &back), 0);
	assert_memory_equal(&back, &in, sizeof(in));
	in.layout.targets[63] = 0;
	in.layout.targets[9] = 5; /* a gap of zeros before it is kept */
	assert_int_equal(lode_rec_inode_encode(&in, buf), LODE_DISK_INODE_HEAD + 40);
	memset(&back, 0xff, sizeof(back));
	assert_int_equal(lode_rec_inode_decode(buf, LODE_DISK_INODE_HEAD + 40, &back), 0);
	assert_memory_equal(&back, &in, sizeof(in));

	assert_int_equal(lode_rec_inode_decode(buf, LODE_DISK_INODE_HEAD - 4, &back), -EIO);
	assert_int_equal(lode_rec_inode_decode(buf, LODE_DISK_INODE_HEAD + 2, &back), -EIO);
	assert_int_equal(lode_rec_inode_decode(buf, sizeof(in) + 4, &back), -EIO);
}

/* A store of format version 1, whose records are whole structs, opens and is stamped
 * version 2 (an older MDS would misread the short records written from then on), saying
 * so; its whole records read as they were, and a change to one writes it short. */
static void test_a_version_1_store_reads_and_is_stamped_2(void **state)
{
	struct fx *f = *state;
	struct lode_disk_inode dir, file;
	unsigned char key[8];
	uint32_t v = 1;
	struct lode_txn t;
	size_t len;
	uint64_t d, ino, g;

	assert_int_equal(do_mkdir(f, ROOT, "v1", &d), 0);
	assert_int_equal(do_create(f, d, "old", &ino), 0);
	dir = inode_rec(f, d);
	file = inode_rec(f, ino);
	t = W(f);
	lode_be64_put(key, d);
	assert_int_equal(lode_kv_put(&t, LODE_DB_INODES, key, 8, &dir, sizeof(dir), 0), 0);
	lode_be64_put(key, ino);
	assert_int_equal(lode_kv_put(&t, LODE_DB_INODES, key, 8, &file, sizeof(file), 0), 0);
	assert_int_equal(lode_kv_put(&t, LODE_DB_META, "format_version", 14, &v, sizeof(v), 0), 0);
	assert_int_equal(lode_store_commit(&t), 0);
	assert_int_equal(inode_rec_len(f, ino), sizeof(file));

	lode_store_close(f->st);
	open_store(f);
	assert_non_null(strstr(lode_store_open_note(f->st), "format version 1 updated to 2"));
	t = R(f);
	assert_int_equal(lode_kv_get(&t, LODE_DB_META, "format_version", 14, &v, sizeof(v), &len),
			 0);
	lode_store_abort(&t);
	assert_int_equal(len, sizeof(v));
	assert_int_equal(v, LODE_MDS_FORMAT_VERSION);
	assert_int_equal(LODE_MDS_FORMAT_VERSION, 2);

	file = inode_rec(f, ino);
	assert_int_equal(inode_rec_len(f, ino), sizeof(file)); /* untouched: still whole */
	assert_int_equal(getattr(f, ino).ino, ino);
	assert_int_equal(do_create(f, d, "new", &g), 0); /* rewrites the directory's record */
	assert_int_equal(inode_rec_len(f, d), LODE_DISK_INODE_HEAD);
	assert_int_equal(inode_rec(f, d).nlink, dir.nlink);
	assert_memory_equal(inode_rec(f, ino).layout.targets, file.layout.targets,
			    sizeof(file.layout.targets));

	/* and the next open has nothing to say */
	lode_store_close(f->st);
	open_store(f);
	assert_string_equal(lode_store_open_note(f->st), "");
}

static void test_store_refuses_a_newer_format_version(void **state)
{
	struct fx *f = *state;
	struct lode_store_opts o = {.dir = f->dir, .map_size = 256ull << 20};
	uint32_t v = LODE_MDS_FORMAT_VERSION + 1;
	struct lode_txn t = W(f);
	char why[256];

	assert_int_equal(lode_kv_put(&t, LODE_DB_META, "format_version", 14, &v, sizeof(v), 0), 0);
	assert_int_equal(lode_store_commit(&t), 0);
	lode_store_close(f->st);
	f->st = NULL;
	assert_int_equal(lode_store_open(&o, &f->st, why, sizeof(why)), -EPROTONOSUPPORT);
	assert_null(f->st);
	assert_non_null(strstr(why, "newer"));
}

/* ---- lookup / create ---- */

static void test_lookup_finds_a_created_file(void **state)
{
	struct fx *f = *state;
	struct lode_wire_attr a;
	uint64_t ino;

	assert_int_equal(do_create(f, ROOT, "a", &ino), 0);
	assert_int_equal(do_lookup(f, ROOT, "a", &a), 0);
	assert_int_equal(a.ino, ino);
	assert_int_equal(a.mode, S_IFREG | 0644);
	assert_int_equal(a.nlink, 1);
	assert_int_equal(a.size, 0);
	assert_int_equal(a.generation, 1);
}

static void test_lookup_fails_with_enoent_for_a_missing_name(void **state)
{
	assert_int_equal(do_lookup(*state, ROOT, "nope", NULL), -ENOENT);
}

static void test_lookup_fails_with_enotdir_when_parent_is_a_file(void **state)
{
	struct fx *f = *state;
	uint64_t ino;

	assert_int_equal(do_create(f, ROOT, "file", &ino), 0);
	assert_int_equal(do_lookup(f, ino, "x", NULL), -ENOTDIR);
}

static void test_lookup_fails_with_enametoolong_or_einval_for_bad_names(void **state)
{
	struct fx *f = *state;
	char longname[LODE_NAME_MAX + 2];

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(do_lookup(f, ROOT, longname, NULL), -ENAMETOOLONG);
	assert_int_equal(do_lookup(f, ROOT, "a/b", NULL), -EINVAL);
	assert_int_equal(do_lookup(f, ROOT, "..", NULL), -EINVAL);
}

static void test_lookup_fails_with_enoent_for_a_missing_parent(void **state)
{
	assert_int_equal(do_lookup(*state, 999, "x", NULL), -ENOENT);
}

static void test_create_fails_with_eexist_when_excl_and_name_exists(void **state)
{
	struct fx *f = *state;

	assert_int_equal(do_create(f, ROOT, "a", NULL), 0);
	assert_int_equal(do_create(f, ROOT, "a", NULL), -EEXIST);
}

static void test_create_without_excl_opens_the_existing_file(void **state)
{
	struct fx *f = *state;
	uint64_t a, b;

	assert_int_equal(do_create(f, ROOT, "a", &a), 0);
	assert_int_equal(
	    do_create_as(f, &root_cred, ROOT, "a", LODE_OPEN_CREATE | LODE_OPEN_WRITE, &b), 0);
	assert_int_equal(a, b);
}

static void test_create_fails_with_eisdir_when_name_is_a_directory(void **state)
{
	struct fx *f = *state;

	assert_int_equal(do_mkdir(f, ROOT, "d", NULL), 0);
	assert_int_equal(do_create_as(f, &root_cred, ROOT, "d", LODE_OPEN_CREATE, NULL), -EISDIR);
}

static void test_create_fails_with_enotdir_when_parent_is_a_file(void **state)
{
	struct fx *f = *state;
	uint64_t ino;

	assert_int_equal(do_create(f, ROOT, "file", &ino), 0);
	assert_int_equal(do_create(f, ino, "x", NULL), -ENOTDIR);
}

static void test_create_spreads_an_inherited_layout_over_all_up_targets(void **state)
{
	struct fx *f = *state;
	struct lode_ns_create a = create_req(f, "f");
	struct lode_wire_attr attr;
	struct lode_wire_layout l;
	int created;

	assert_int_equal(run_create(f, &a, &attr, &l, &created), 0);
	assert_int_equal(created, 1);
	assert_int_equal(l.stripe_size, 1u << 20);
	assert_int_equal(l.stripe_count, 4);
	/* the root's default asks for automatic mirroring: two copies with 4 targets up */
	assert_int_equal(l.mirror_count, 2);
	for (unsigned i = 0; i < 8; i++) {
		assert_true(l.targets[i] >= 1 && l.targets[i] <= 4);
		if (i % 2)
			assert_int_not_equal(l.targets[i], l.targets[i - 1]);
	}
	/* the 8 copies are spread evenly: each target holds two */
	for (unsigned id = 1; id <= 4; id++) {
		unsigned n = 0;

		for (unsigned i = 0; i < 8; i++)
			n += l.targets[i] == id;
		assert_int_equal(n, 2);
	}
	assert_int_equal(l.targets[8], 0);
}

static void test_create_uses_an_explicit_layout_with_caller_targets(void **state)
{
	struct fx *f = *state;
	struct lode_wire_layout req = {
	    .stripe_size = 4u << 20, .stripe_count = 2, .mirror_count = 2, .targets = {1, 2, 3, 4}};
	struct lode_ns_create a = create_req(f, "f");
	struct lode_wire_attr attr;
	struct lode_wire_layout l;
	int created;

	a.layout = &req;
	a.has_targets = 1;
	assert_int_equal(run_create(f, &a, &attr, &l, &created), 0);
	assert_int_equal(l.stripe_size, 4u << 20);
	assert_int_equal(l.stripe_count, 2);
	assert_int_equal(l.mirror_count, 2);
	assert_memory_equal(l.targets, req.targets, sizeof(l.targets));

	/* two mirrors of one stripe on one target is refused */
	req.targets[1] = 1;
	a.name = "g";
	assert_int_equal(run_create(f, &a, &attr, &l, &created), -EINVAL);
	/* so is an unknown target */
	req.targets[1] = 77;
	assert_int_equal(run_create(f, &a, &attr, &l, &created), -EINVAL);
}

/* No target UP to hold the copies is not a full cluster: EAGAIN (the MDS holds such a
 * create and retries), never ENOSPC; more copies than the cluster has targets is EINVAL;
 * ENOSPC only when the targets UP have no space. */
static void test_create_that_cannot_be_placed_says_why_and_enospc_only_when_full(void **state)
{
	struct fx *f = *state;
	struct lode_ns_create a = create_req(f, "f");
	struct lode_wire_layout req = {.mirror_count = 5};
	struct lode_wire_attr attr;
	struct lode_wire_layout l;
	int created, perr = 0;

	/* every target silent past the down window */
	a.now_ms = NOW_MS + LODE_PLACEMENT_DOWN_MS + 1;
	a.place_err = &perr;
	assert_int_equal(run_create(f, &a, &attr, &l, &created), -EAGAIN);
	assert_int_equal(perr, -EAGAIN);
	assert_int_equal(do_lookup(f, ROOT, "f", NULL), -ENOENT);
	/* no target table at all */
	a.pl = NULL;
	assert_int_equal(run_create(f, &a, &attr, &l, &created), -EAGAIN);
	/* five copies on four targets: never */
	a = create_req(f, "f");
	a.layout = &req;
	assert_int_equal(run_create(f, &a, &attr, &l, &created), -EINVAL);
	/* every target full: that is ENOSPC; one with space is enough for one copy */
	for (uint32_t id = 1; id <= 4; id++)
		assert_int_equal(lode_placement_heartbeat(f->pl, id, 1 << 30, 4096, 0, NOW_MS), 0);
	a = create_req(f, "f");
	assert_int_equal(run_create(f, &a, &attr, &l, &created), -ENOSPC);
	assert_int_equal(lode_placement_heartbeat(f->pl, 3, 1 << 30, 1 << 29, 0, NOW_MS), 0);
	req.mirror_count = 1;
	a.layout = &req;
	assert_int_equal(run_create(f, &a, &attr, &l, &created), 0);
	assert_int_equal(l.mirror_count, 1);
	assert_int_equal(l.targets[0], 3);
}

static void test_create_in_a_setgid_directory_inherits_its_group(void **state)
{
	struct fx *f = *state;
	struct lode_wire_setattr_req sa = {.cred = root_cred,
					   .valid = LODE_SETATTR_MODE | LODE_SETATTR_GID,
					   .mode = 02777,
					   .gid = 50};
	struct lode_wire_attr a;
	uint64_t d;

	assert_int_equal(do_mkdir(f, ROOT, "shared", &d), 0);
	sa.ino = d;
	assert_int_equal(do_setattr(f, &sa), 0);
	assert_int_equal(do_create_as(f, &alice, d, "x", LODE_OPEN_EXCL, NULL), 0);
	assert_int_equal(do_lookup(f, d, "x", &a), 0);
	assert_int_equal(a.gid, 50);
	assert_int_equal(a.uid, alice.uid);
}

/* ---- open / commit ---- */

static void test_open_with_trunc_sets_size_zero_and_commit_sets_size(void **state)
{
	struct fx *f = *state;
	struct lode_wire_attr a;
	struct lode_wire_layout l;
	struct lode_txn t;
	uint64_t ino;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0);
	t = W(f);
	assert_int_equal(end(&t, lode_ns_commit(&t, ino, 12345, false, 77, 0, &a)), 0);
	assert_int_equal(getattr(f, ino).size, 12345);
	assert_int_equal(getattr(f, ino).mtime_ns, 77);
	t = W(f);
	assert_int_equal(
	    end(&t, lode_ns_open(&t, &root_cred, ino, LODE_OPEN_WRITE | LODE_OPEN_TRUNC, &a, &l)),
	    0);
	assert_int_equal(getattr(f, ino).size, 0);
	assert_int_equal(l.generation, 1);
}

static void test_st_blocks_is_what_the_writer_measured_else_from_the_size(void **state)
{
	struct fx *f = *state;
	struct lode_wire_attr a;
	struct lode_wire_layout l;
	struct lode_txn t;
	uint64_t ino;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0);
	t = W(f);
	assert_int_equal(end(&t, lode_ns_commit(&t, ino, 1 << 20, false, 0, 0, &a)), 0);
	assert_int_equal(getattr(f, ino).blocks, 2048); /* never measured: from the size */
	t = W(f);
	assert_int_equal(end(&t, lode_ns_commit(&t, ino, 1 << 30, false, 0, 1 + 100, &a)), 0);
	assert_int_equal(a.blocks, 100); /* sparse: what the targets hold */
	t = W(f);
	assert_int_equal(end(&t, lode_ns_commit(&t, ino, 1 << 30, false, 0, 0, &a)), 0);
	assert_int_equal(getattr(f, ino).blocks, 100); /* unmeasured commit: kept */
	t = W(f);
	assert_int_equal(
	    end(&t, lode_ns_open(&t, &root_cred, ino, LODE_OPEN_WRITE | LODE_OPEN_TRUNC, &a, &l)),
	    0);
	assert_int_equal(getattr(f, ino).blocks, 0); /* truncated to nothing */
}

static void test_open_fails_with_eacces_for_writing_without_permission(void **state)
{
	struct fx *f = *state;
	struct lode_wire_attr a;
	struct lode_wire_layout l;
	struct lode_txn t;
	uint64_t ino;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0); /* 0644 root */
	t = R(f);
	assert_int_equal(lode_ns_open(&t, &alice, ino, LODE_OPEN_READ, &a, &l), 0);
	assert_int_equal(lode_ns_open(&t, &alice, ino, LODE_OPEN_WRITE, &a, &l), -EACCES);
	assert_int_equal(lode_ns_open(&t, &root_cred, ROOT, LODE_OPEN_WRITE, &a, &l), -EISDIR);
	lode_store_abort(&t);
}

/* ---- mkdir / rmdir / unlink ---- */

static void test_mkdir_counts_subdirectories_in_the_parent_nlink(void **state)
{
	struct fx *f = *state;
	uint64_t d;

	assert_int_equal(do_mkdir(f, ROOT, "a", &d), 0);
	assert_int_equal(do_mkdir(f, ROOT, "b", NULL), 0);
	assert_int_equal(do_create(f, ROOT, "c", NULL), 0);
	assert_int_equal(getattr(f, ROOT).nlink, 4);
	assert_int_equal(getattr(f, d).nlink, 2);
	assert_int_equal(do_mkdir(f, ROOT, "a", NULL), -EEXIST);
}

static void test_rmdir_fails_with_enotempty_when_dir_has_entries(void **state)
{
	struct fx *f = *state;
	uint64_t d;

	assert_int_equal(do_mkdir(f, ROOT, "d", &d), 0);
	assert_int_equal(do_create(f, d, "f", NULL), 0);
	assert_int_equal(do_rmdir(f, ROOT, "d"), -ENOTEMPTY);
	assert_int_equal(do_unlink(f, &root_cred, d, "f"), 0);
	assert_int_equal(do_rmdir(f, ROOT, "d"), 0);
	assert_int_equal(getattr(f, ROOT).nlink, 2);
	assert_int_equal(do_lookup(f, ROOT, "d", NULL), -ENOENT);
}

static void test_rmdir_fails_with_enotdir_on_a_file(void **state)
{
	struct fx *f = *state;

	assert_int_equal(do_create(f, ROOT, "f", NULL), 0);
	assert_int_equal(do_rmdir(f, ROOT, "f"), -ENOTDIR);
	assert_int_equal(do_rmdir(f, ROOT, "missing"), -ENOENT);
}

static void test_unlink_fails_with_eisdir_on_a_directory(void **state)
{
	struct fx *f = *state;

	assert_int_equal(do_mkdir(f, ROOT, "d", NULL), 0);
	assert_int_equal(do_unlink(f, &root_cred, ROOT, "d"), -EISDIR);
	assert_int_equal(do_unlink(f, &root_cred, ROOT, "missing"), -ENOENT);
}

/* What target may delete at now_ns with a grace of grace_ns. */
static int orphans_at(struct fx *f, uint32_t target, int64_t now_ns, int64_t grace_ns,
		      struct lode_wire_objid *out, uint32_t max)
{
	struct lode_txn t = R(f);
	uint32_t n = 0;

	assert_int_equal(lode_ns_orphan_list(&t, target, now_ns, grace_ns, out, max, &n), 0);
	lode_store_abort(&t);
	return (int)n;
}

/* Everything target may delete once every grace has passed. */
static int orphans_of(struct fx *f, uint32_t target, struct lode_wire_objid *out, uint32_t max)
{
	return orphans_at(f, target, lode_ns_now() + LODE_NS_MOVED_GRACE_MIN_NS, 0, out, max);
}

static void test_unlinking_the_last_link_orphans_objects_until_each_target_acks(void **state)
{
	struct fx *f = *state;
	struct lode_wire_objid ids[8];
	struct lode_wire_attr a;
	struct lode_txn t;
	uint64_t ino;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0);
	assert_int_equal(do_link(f, ino, ROOT, "g", &a), 0);
	assert_int_equal(a.nlink, 2);
	assert_int_equal(do_unlink(f, &root_cred, ROOT, "f"), 0);
	assert_int_equal(getattr(f, ino).nlink, 1);
	for (uint32_t tg = 1; tg <= 4; tg++)
		assert_int_equal(orphans_of(f, tg, ids, 8), 0);

	assert_int_equal(do_unlink(f, &root_cred, ROOT, "g"), 0);
	/* no name left, but the inode stays (nlink 0) for whoever still has it open, until
	 * its objects are gone */
	assert_int_equal(do_lookup(f, ROOT, "g", NULL), -ENOENT);
	assert_int_equal(getattr(f, ino).nlink, 0);
	/* 4 stripes x 2 copies over 4 targets: each target holds two objects */
	for (uint32_t tg = 1; tg <= 4; tg++) {
		assert_int_equal(orphans_of(f, tg, ids, 8), 2);
		assert_int_equal(ids[0].ino, ino);
		assert_int_equal(ids[0].generation, 1);
		assert_int_equal(ids[1].ino, ino);
		assert_int_not_equal(ids[0].stripe, ids[1].stripe);
	}
	/* not listed before the grace period */
	t = R(f);
	uint32_t n = 9;
	assert_int_equal(
	    lode_ns_orphan_list(&t, 1, lode_ns_now(), LODE_NS_ORPHAN_GRACE_NS, ids, 8, &n), 0);
	assert_int_equal(n, 0);
	lode_store_abort(&t);

	/* each target's acknowledgement clears only its own objects */
	assert_int_equal(orphans_of(f, 2, ids, 8), 2);
	assert_int_equal(do_orphan_done(f, 2, ids, 2), 0);
	assert_int_equal(orphans_of(f, 2, ids, 8), 0);
	assert_int_equal(orphans_of(f, 3, ids, 8), 2);
	for (uint32_t tg = 1; tg <= 4; tg++) {
		if (orphans_of(f, tg, ids, 8) == 2) {
			assert_int_equal(do_orphan_done(f, tg, ids, 2), 0);
		}
	}
	t = R(f);
	uint64_t count = 1;
	assert_int_equal(lode_kv_count(&t, LODE_DB_ORPHANS, &count), 0);
	assert_int_equal(count, 0);
	/* every target acknowledged: now the inode is gone too */
	assert_int_equal(lode_ns_getattr(&t, ino, &a), -ENOENT);
	lode_store_abort(&t);
}

/* ---- rename ---- */

static void test_rename_replaces_a_file_and_orphans_the_old_one(void **state)
{
	struct fx *f = *state;
	struct lode_wire_objid ids[4];
	struct lode_wire_attr a;
	uint64_t src, dst;

	assert_int_equal(do_create(f, ROOT, "tmp", &src), 0);
	assert_int_equal(do_create(f, ROOT, "model", &dst), 0);
	assert_int_equal(do_rename(f, ROOT, "tmp", ROOT, "model", 0), 0);
	assert_int_equal(do_lookup(f, ROOT, "model", &a), 0);
	assert_int_equal(a.ino, src);
	assert_int_equal(do_lookup(f, ROOT, "tmp", NULL), -ENOENT);
	assert_int_equal(orphans_of(f, 1, ids, 4), 2); /* target 1 holds two of its copies */
	assert_int_equal(ids[0].ino, dst);

	/* a client that looked "model" up before the rename and opens what it found gets
	 * ESTALE, not the old bytes; the old inode's attributes stay, for its open handles */
	struct lode_wire_layout l;
	struct lode_txn t = R(f);

	assert_int_equal(lode_ns_open(&t, &root_cred, dst, LODE_OPEN_READ, &a, &l), -ESTALE);
	assert_int_equal(lode_ns_open(&t, &root_cred, dst, LODE_OPEN_WRITE, &a, &l), -ESTALE);
	assert_int_equal(lode_ns_open(&t, &root_cred, src, LODE_OPEN_READ, &a, &l), 0);
	assert_int_equal(lode_ns_getattr(&t, dst, &a), 0);
	assert_int_equal(a.nlink, 0);
	/* and an inode number that was never given out */
	assert_int_equal(lode_ns_open(&t, &root_cred, src + 1000, LODE_OPEN_READ, &a, &l), -ESTALE);
	lode_store_abort(&t);
	/* nor does it get a name back (a link through the stale name): its objects are
	 * already orphans, so the name would have no data */
	assert_int_equal(do_link(f, dst, ROOT, "back", &a), -ESTALE);
	assert_int_equal(do_lookup(f, ROOT, "back", NULL), -ENOENT);
	assert_int_equal(getattr(f, dst).nlink, 0);
	assert_int_equal(orphans_of(f, 1, ids, 4), 2);
	assert_int_equal(do_link(f, src + 1000, ROOT, "x", &a), -ESTALE);
}

static void test_rename_moves_a_directory_across_parents_and_fixes_nlink(void **state)
{
	struct fx *f = *state;
	uint64_t a, b, c;
	struct lode_wire_attr at;

	assert_int_equal(do_mkdir(f, ROOT, "a", &a), 0);
	assert_int_equal(do_mkdir(f, ROOT, "b", &b), 0);
	assert_int_equal(do_mkdir(f, a, "c", &c), 0);
	assert_int_equal(getattr(f, a).nlink, 3);
	assert_int_equal(do_rename(f, a, "c", b, "c2", 0), 0);
	assert_int_equal(getattr(f, a).nlink, 2);
	assert_int_equal(getattr(f, b).nlink, 3);
	assert_int_equal(do_lookup(f, b, "c2", &at), 0);
	assert_int_equal(at.ino, c);
}

static void test_rename_replaces_an_empty_directory_but_not_a_full_one(void **state)
{
	struct fx *f = *state;
	uint64_t a, b;

	assert_int_equal(do_mkdir(f, ROOT, "a", &a), 0);
	assert_int_equal(do_mkdir(f, ROOT, "b", &b), 0);
	assert_int_equal(do_create(f, b, "x", NULL), 0);
	assert_int_equal(do_rename(f, ROOT, "a", ROOT, "b", 0), -ENOTEMPTY);
	assert_int_equal(do_unlink(f, &root_cred, b, "x"), 0);
	assert_int_equal(do_rename(f, ROOT, "a", ROOT, "b", 0), 0);
	assert_int_equal(getattr(f, ROOT).nlink, 3);
	struct lode_txn t = R(f);
	struct lode_wire_attr at;
	assert_int_equal(lode_ns_getattr(&t, b, &at), -ENOENT);
	lode_store_abort(&t);
}

static void test_rename_fails_with_eisdir_or_enotdir_on_type_mismatch(void **state)
{
	struct fx *f = *state;

	assert_int_equal(do_mkdir(f, ROOT, "d", NULL), 0);
	assert_int_equal(do_create(f, ROOT, "f", NULL), 0);
	assert_int_equal(do_rename(f, ROOT, "f", ROOT, "d", 0), -EISDIR);
	assert_int_equal(do_rename(f, ROOT, "d", ROOT, "f", 0), -ENOTDIR);
	assert_int_equal(do_rename(f, ROOT, "missing", ROOT, "x", 0), -ENOENT);
}

static void test_rename_noreplace_fails_with_eexist(void **state)
{
	struct fx *f = *state;

	assert_int_equal(do_create(f, ROOT, "a", NULL), 0);
	assert_int_equal(do_create(f, ROOT, "b", NULL), 0);
	assert_int_equal(do_rename(f, ROOT, "a", ROOT, "b", LODE_RENAME_NOREPLACE), -EEXIST);
	assert_int_equal(do_rename(f, ROOT, "a", ROOT, "c", LODE_RENAME_NOREPLACE), 0);
	assert_int_equal(
	    do_rename(f, ROOT, "c", ROOT, "a", LODE_RENAME_NOREPLACE | LODE_RENAME_EXCHANGE),
	    -EINVAL);
}

static void test_rename_exchange_swaps_two_names(void **state)
{
	struct fx *f = *state;
	struct lode_wire_attr at;
	uint64_t fa, db, d;

	assert_int_equal(do_mkdir(f, ROOT, "sub", &d), 0);
	assert_int_equal(do_create(f, ROOT, "a", &fa), 0);
	assert_int_equal(do_mkdir(f, d, "b", &db), 0);
	assert_int_equal(do_rename(f, ROOT, "a", d, "b", LODE_RENAME_EXCHANGE), 0);
	assert_int_equal(do_lookup(f, ROOT, "a", &at), 0);
	assert_int_equal(at.ino, db);
	assert_int_equal(do_lookup(f, d, "b", &at), 0);
	assert_int_equal(at.ino, fa);
	/* the directory moved from sub to the root */
	assert_int_equal(getattr(f, ROOT).nlink, 4);
	assert_int_equal(getattr(f, d).nlink, 2);
	assert_int_equal(do_rename(f, ROOT, "a", d, "none", LODE_RENAME_EXCHANGE), -ENOENT);
}

static void test_rename_fails_with_einval_moving_a_directory_into_its_subtree(void **state)
{
	struct fx *f = *state;
	uint64_t a, b;

	assert_int_equal(do_mkdir(f, ROOT, "a", &a), 0);
	assert_int_equal(do_mkdir(f, a, "b", &b), 0);
	assert_int_equal(do_rename(f, ROOT, "a", b, "x", 0), -EINVAL);
	assert_int_equal(do_rename(f, ROOT, "a", a, "x", 0), -EINVAL);
}

static void test_rename_onto_itself_is_a_no_op(void **state)
{
	struct fx *f = *state;
	struct lode_wire_attr at;
	uint64_t ino;

	assert_int_equal(do_create(f, ROOT, "a", &ino), 0);
	assert_int_equal(do_rename(f, ROOT, "a", ROOT, "a", 0), 0);
	assert_int_equal(do_lookup(f, ROOT, "a", &at), 0);
	assert_int_equal(at.ino, ino);
	/* a hard link to the same inode: also nothing happens */
	assert_int_equal(do_link(f, ino, ROOT, "b", &at), 0);
	assert_int_equal(do_rename(f, ROOT, "a", ROOT, "b", 0), 0);
	assert_int_equal(do_lookup(f, ROOT, "a", NULL), 0);
	assert_int_equal(getattr(f, ino).nlink, 2);
}

/* ---- link / symlink ---- */

static void test_link_fails_with_eperm_on_a_directory(void **state)
{
	struct fx *f = *state;
	struct lode_wire_attr at;
	uint64_t d, fino;

	assert_int_equal(do_mkdir(f, ROOT, "d", &d), 0);
	assert_int_equal(do_link(f, d, ROOT, "e", &at), -EPERM);
	assert_int_equal(do_create(f, ROOT, "f", &fino), 0);
	assert_int_equal(do_link(f, fino, ROOT, "f", &at), -EEXIST);
	assert_int_equal(do_link(f, fino, fino, "g", &at), -ENOTDIR);
}

static void test_symlink_stores_its_target_for_readlink(void **state)
{
	struct fx *f = *state;
	struct lode_wire_attr at;
	char buf[LODE_SYMLINK_MAX];
	size_t len;
	uint64_t fino;

	struct lode_txn t = W(f);
	assert_int_equal(end(&t, lode_ns_symlink(&t, &root_cred, ROOT, "l", 1, "../x/y", 6, &at)),
			 0);
	assert_int_equal(at.mode, S_IFLNK | 0777);
	assert_int_equal(at.size, 6);
	t = R(f);
	assert_int_equal(lode_ns_readlink(&t, at.ino, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 6);
	assert_memory_equal(buf, "../x/y", 6);
	assert_int_equal(do_create(f, ROOT, "f", &fino), 0 /* new txn below */);
	lode_store_abort(&t);
	t = R(f);
	assert_int_equal(lode_ns_readlink(&t, fino, buf, sizeof(buf), &len), -EINVAL);
	lode_store_abort(&t);
	t = W(f);
	assert_int_equal(end(&t, lode_ns_symlink(&t, &root_cred, ROOT, "m", 1, "", 0, &at)),
			 -ENOENT);
	assert_int_equal(do_unlink(f, &root_cred, ROOT, "l"), 0);
}

/* ---- readdir ---- */

struct listing {
	uint64_t ino[64];
	char name[64][16];
	unsigned n;
};

/* Reads one page of at most max entries after *cookie; returns eof. */
static int read_page(struct fx *f, uint64_t dir, uint64_t *cookie, uint32_t max,
		     struct listing *out)
{
	static unsigned char buf[LODE_READDIR_MAX * LODE_NS_DIRENT_REC_MAX];
	size_t used, pos = 0;
	uint32_t count;
	int eof;
	struct lode_txn t = R(f);

	assert_int_equal(lode_ns_readdir(&t, &root_cred, dir, *cookie, max, buf, sizeof(buf), &used,
					 &count, &eof),
			 0);
	lode_store_abort(&t);
	for (uint32_t i = 0; i < count; i++) {
		struct lode_wire_dirent d;

		memcpy(&d, buf + pos, sizeof(d));
		assert_true(d.cookie > *cookie);
		assert_true(d.name_len < 16);
		out->ino[out->n] = d.ino;
		memcpy(out->name[out->n], buf + pos + sizeof(d), d.name_len);
		out->name[out->n][d.name_len] = '\0';
		out->n++;
		*cookie = d.cookie;
		pos += LODE_NS_DIRENT_REC(d.name_len);
		assert_int_equal(pos % 8, 0);
	}
	assert_int_equal(pos, used);
	return eof;
}

static unsigned times_listed(const struct listing *l, const char *name)
{
	unsigned n = 0;

	for (unsigned i = 0; i < l->n; i++)
		n += strcmp(l->name[i], name) == 0;
	return n;
}

static void test_readdir_pages_by_cookie_and_reports_eof(void **state)
{
	struct fx *f = *state;
	struct listing l = {0};
	uint64_t cookie = 0;
	char name[16];

	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(do_create(f, ROOT, name, NULL), 0);
	}
	assert_int_equal(read_page(f, ROOT, &cookie, 4, &l), 0);
	assert_int_equal(read_page(f, ROOT, &cookie, 4, &l), 0);
	assert_int_equal(read_page(f, ROOT, &cookie, 4, &l), 1);
	assert_int_equal(l.n, 10);
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(times_listed(&l, name), 1);
	}
	/* a fresh cookie past the end: empty and eof */
	assert_int_equal(read_page(f, ROOT, &cookie, 4, &l), 1);
	assert_int_equal(l.n, 10);
}

static void test_readdir_returns_stable_entries_exactly_once_across_changes(void **state)
{
	struct fx *f = *state;
	struct listing l = {0};
	uint64_t cookie = 0;
	char name[16];

	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "keep%d", i);
		assert_int_equal(do_create(f, ROOT, name, NULL), 0);
		snprintf(name, sizeof(name), "tmp%d", i);
		assert_int_equal(do_create(f, ROOT, name, NULL), 0);
	}
	assert_int_equal(read_page(f, ROOT, &cookie, 5, &l), 0);
	/* between pages: remove some, add some, rename one of the transient ones */
	assert_int_equal(do_unlink(f, &root_cred, ROOT, "tmp0"), 0);
	assert_int_equal(do_unlink(f, &root_cred, ROOT, "tmp5"), 0);
	assert_int_equal(do_create(f, ROOT, "new0", NULL), 0);
	assert_int_equal(do_rename(f, ROOT, "tmp6", ROOT, "moved", 0), 0);
	assert_int_equal(read_page(f, ROOT, &cookie, 5, &l), 0);
	assert_int_equal(do_create(f, ROOT, "new1", NULL), 0);
	assert_int_equal(do_unlink(f, &root_cred, ROOT, "tmp7"), 0);
	while (!read_page(f, ROOT, &cookie, 5, &l))
		;
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "keep%d", i);
		assert_int_equal(times_listed(&l, name), 1);
	}
	/* entries created during the listing come after the cursor: seen once */
	assert_int_equal(times_listed(&l, "new0"), 1);
	assert_int_equal(times_listed(&l, "new1"), 1);
	assert_int_equal(times_listed(&l, "tmp5"), 0);
}

static void test_readdir_fails_with_enotdir_and_eacces(void **state)
{
	struct fx *f = *state;
	unsigned char buf[4096];
	size_t used;
	uint32_t count;
	int eof;
	uint64_t ino, d;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0);
	assert_int_equal(do_mkdir_as(f, &root_cred, ROOT, "private", 0700, &d), 0);
	struct lode_txn t = R(f);
	assert_int_equal(
	    lode_ns_readdir(&t, &root_cred, ino, 0, 4, buf, sizeof(buf), &used, &count, &eof),
	    -ENOTDIR);
	assert_int_equal(
	    lode_ns_readdir(&t, &alice, d, 0, 4, buf, sizeof(buf), &used, &count, &eof), -EACCES);
	lode_store_abort(&t);
}

/* readdirplus reads each entry's inode in the listing's snapshot: an entry whose inode is
 * gone (a damaged namespace, for fsck) fails the page with EIO rather than inventing
 * attributes; the plain listing still works. */
static void test_readdirplus_gives_attributes_and_eio_for_an_entry_without_inode(void **state)
{
	struct fx *f = *state;
	static unsigned char buf[4 * LODE_NS_DIRENTPLUS_REC_MAX];
	struct lode_wire_direntplus e;
	unsigned char key[8];
	uint64_t d, ino;
	size_t used;
	uint32_t count;
	int eof;

	assert_int_equal(do_mkdir(f, ROOT, "plus", &d), 0);
	assert_int_equal(do_create(f, d, "a", &ino), 0);
	struct lode_txn t = R(f);
	assert_int_equal(
	    lode_ns_readdirplus(&t, &root_cred, d, 0, 4, buf, sizeof(buf), &used, &count, &eof), 0);
	lode_store_abort(&t);
	assert_int_equal(count, 1);
	assert_int_equal(used, LODE_NS_DIRENTPLUS_REC(1));
	memcpy(&e, buf, sizeof(e));
	assert_int_equal(e.d.ino, ino);
	assert_int_equal(e.attr.ino, ino);
	assert_int_equal(e.attr.mode & S_IFMT, S_IFREG);
	assert_int_equal(e.d.name_len, 1);
	assert_memory_equal(buf + sizeof(e), "a", 1);

	t = W(f);
	lode_be64_put(key, ino);
	assert_int_equal(lode_kv_del(&t, LODE_DB_INODES, key, sizeof(key)), 0);
	assert_int_equal(lode_store_commit(&t), 0);
	t = R(f);
	assert_int_equal(
	    lode_ns_readdirplus(&t, &root_cred, d, 0, 4, buf, sizeof(buf), &used, &count, &eof),
	    -EIO);
	assert_int_equal(
	    lode_ns_readdir(&t, &root_cred, d, 0, 4, buf, sizeof(buf), &used, &count, &eof), 0);
	assert_int_equal(count, 1);
	lode_store_abort(&t);
}

/* ---- setattr ---- */

static void test_setattr_chmod_by_a_non_owner_fails_with_eperm(void **state)
{
	struct fx *f = *state;
	struct lode_wire_setattr_req r = {.cred = bob, .valid = LODE_SETATTR_MODE, .mode = 0777};
	uint64_t d;

	assert_int_equal(do_mkdir_as(f, &root_cred, ROOT, "pub", 0777, &d), 0);
	assert_int_equal(do_create_as(f, &alice, d, "f", LODE_OPEN_EXCL, &r.ino), 0);
	assert_int_equal(do_setattr(f, &r), -EPERM);
	r.cred = alice;
	assert_int_equal(do_setattr(f, &r), 0);
	assert_int_equal(getattr(f, r.ino).mode, S_IFREG | 0777);
}

static void test_setattr_chown_is_root_only_but_owner_may_chgrp_to_own_group(void **state)
{
	struct fx *f = *state;
	struct lode_wire_setattr_req r = {.cred = alice, .valid = LODE_SETATTR_UID, .uid = 0};
	uint64_t d;

	assert_int_equal(do_mkdir_as(f, &root_cred, ROOT, "pub", 0777, &d), 0);
	assert_int_equal(do_create_as(f, &alice, d, "f", LODE_OPEN_EXCL, &r.ino), 0);
	assert_int_equal(do_setattr(f, &r), -EPERM);
	r.valid = LODE_SETATTR_GID;
	r.gid = 5;
	assert_int_equal(do_setattr(f, &r), -EPERM);
	r.gid = alice.gid;
	assert_int_equal(do_setattr(f, &r), 0);
	/* root may give the file away; that drops setuid */
	r.cred = root_cred;
	r.valid = LODE_SETATTR_MODE;
	r.mode = 04755;
	assert_int_equal(do_setattr(f, &r), 0);
	r.valid = LODE_SETATTR_UID;
	r.uid = bob.uid;
	assert_int_equal(do_setattr(f, &r), 0);
	assert_int_equal(getattr(f, r.ino).uid, bob.uid);
	assert_int_equal(getattr(f, r.ino).mode, S_IFREG | 0755);
}

static void test_setattr_sets_size_and_times_and_refuses_size_on_a_directory(void **state)
{
	struct fx *f = *state;
	struct lode_wire_setattr_req r = {.cred = root_cred,
					  .valid = LODE_SETATTR_SIZE | LODE_SETATTR_ATIME |
						   LODE_SETATTR_MTIME,
					  .size = 4096,
					  .atime_ns = 11,
					  .mtime_ns = 22};
	struct lode_wire_attr a;

	assert_int_equal(do_create(f, ROOT, "f", &r.ino), 0);
	assert_int_equal(do_setattr(f, &r), 0);
	a = getattr(f, r.ino);
	assert_int_equal(a.size, 4096);
	assert_int_equal(a.atime_ns, 11);
	assert_int_equal(a.mtime_ns, 22);
	assert_true(a.ctime_ns > 22);
	r.valid = LODE_SETATTR_MTIME_NOW;
	assert_int_equal(do_setattr(f, &r), 0);
	assert_true(getattr(f, r.ino).mtime_ns > 22);
	r.ino = ROOT;
	r.valid = LODE_SETATTR_SIZE;
	assert_int_equal(do_setattr(f, &r), -EISDIR);
	r.valid = 0x8000;
	assert_int_equal(do_setattr(f, &r), -EINVAL);
}

/* ---- xattrs ---- */

static void test_xattrs_honor_create_replace_size_and_remove(void **state)
{
	struct fx *f = *state;
	char buf[64];
	size_t len;
	uint64_t ino;
	struct lode_txn t;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0);
	assert_int_equal(do_setxattr(f, &root_cred, ino, "user.a", "hello", LODE_XATTR_REPLACE),
			 -ENODATA);
	assert_int_equal(do_setxattr(f, &root_cred, ino, "user.a", "hello", LODE_XATTR_CREATE), 0);
	assert_int_equal(do_setxattr(f, &root_cred, ino, "user.a", "x", LODE_XATTR_CREATE),
			 -EEXIST);
	assert_int_equal(do_setxattr(f, &root_cred, ino, "user.b", "", 0), 0);
	assert_int_equal(do_setxattr(f, &root_cred, ino, "bogus.b", "", 0), -EOPNOTSUPP);

	t = R(f);
	assert_int_equal(lode_ns_getxattr(&t, &root_cred, ino, "user.a", 6, NULL, 0, &len), 0);
	assert_int_equal(len, 5);
	assert_int_equal(lode_ns_getxattr(&t, &root_cred, ino, "user.a", 6, buf, 3, &len), -ERANGE);
	assert_int_equal(lode_ns_getxattr(&t, &root_cred, ino, "user.a", 6, buf, sizeof(buf), &len),
			 0);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(lode_ns_getxattr(&t, &root_cred, ino, "user.zz", 7, buf, 8, &len),
			 -ENODATA);
	assert_int_equal(lode_ns_listxattr(&t, &root_cred, ino, NULL, 0, &len), 0);
	assert_int_equal(len, 14);
	assert_int_equal(lode_ns_listxattr(&t, &root_cred, ino, buf, 5, &len), -ERANGE);
	assert_int_equal(lode_ns_listxattr(&t, &root_cred, ino, buf, sizeof(buf), &len), 0);
	assert_memory_equal(buf, "user.a\0user.b\0", 14);
	lode_store_abort(&t);

	assert_int_equal(do_removexattr(f, ino, "user.a"), 0);
	assert_int_equal(do_removexattr(f, ino, "user.a"), -ENODATA);
}

static void test_xattrs_of_others_need_permission_and_trusted_is_root_only(void **state)
{
	struct fx *f = *state;
	size_t len;
	uint64_t ino;
	struct lode_txn t;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0); /* 0644 root */
	assert_int_equal(do_setxattr(f, &root_cred, ino, "trusted.t", "v", 0), 0);
	assert_int_equal(do_setxattr(f, &alice, ino, "user.a", "v", 0), -EACCES);
	assert_int_equal(do_setxattr(f, &alice, ino, "trusted.a", "v", 0), -EPERM);
	t = R(f);
	assert_int_equal(lode_ns_listxattr(&t, &alice, ino, NULL, 0, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(lode_ns_getxattr(&t, &alice, ino, "trusted.t", 9, NULL, 0, &len),
			 -ENODATA);
	lode_store_abort(&t);
}

static void test_deleting_a_file_deletes_its_xattrs(void **state)
{
	struct fx *f = *state;
	uint64_t ino, count = 9;
	char name[16];
	struct lode_txn t;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0);
	assert_int_equal(do_create(f, ROOT, "g", NULL), 0);
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "user.%d", i);
		assert_int_equal(do_setxattr(f, &root_cred, ino, name, "v", 0), 0);
	}
	assert_int_equal(do_setxattr(f, &root_cred, ino + 1, "user.keep", "v", 0), 0);
	assert_int_equal(do_unlink(f, &root_cred, ROOT, "f"), 0);
	/* the unlinked file's objects are acknowledged gone by every target */
	for (uint32_t tg = 1; tg <= 4; tg++) {
		struct lode_wire_objid ids[8];
		int n = orphans_of(f, tg, ids, 8);

		assert_int_equal(do_orphan_done(f, tg, ids, (uint32_t)n), 0);
	}
	t = R(f);
	assert_int_equal(lode_kv_count(&t, LODE_DB_XATTRS, &count), 0);
	lode_store_abort(&t);
	assert_int_equal(count, 1);
}

/* ---- permissions ---- */

static void test_non_root_cannot_create_in_a_directory_without_write_permission(void **state)
{
	struct fx *f = *state;

	assert_int_equal(do_create_as(f, &alice, ROOT, "f", LODE_OPEN_EXCL, NULL), -EACCES);
	assert_int_equal(do_mkdir_as(f, &alice, ROOT, "d", 0755, NULL), -EACCES);
	assert_int_equal(do_create(f, ROOT, "f", NULL), 0);
	assert_int_equal(do_unlink(f, &alice, ROOT, "f"), -EACCES);
}

static void test_lookup_needs_search_permission_on_the_directory(void **state)
{
	struct fx *f = *state;
	uint64_t d;

	assert_int_equal(do_mkdir_as(f, &root_cred, ROOT, "private", 0700, &d), 0);
	assert_int_equal(do_create(f, d, "secret", NULL), 0);
	assert_int_equal(do_lookup_as(f, &alice, d, "secret", NULL), -EACCES);
	assert_int_equal(do_lookup_as(f, &root_cred, d, "secret", NULL), 0);
}

static void test_sticky_directory_lets_only_owners_remove_entries(void **state)
{
	struct fx *f = *state;
	uint64_t d;

	assert_int_equal(do_mkdir_as(f, &root_cred, ROOT, "tmp", 01777, &d), 0);
	assert_int_equal(do_create_as(f, &alice, d, "a", LODE_OPEN_EXCL, NULL), 0);
	assert_int_equal(do_unlink(f, &bob, d, "a"), -EPERM);
	assert_int_equal(do_unlink(f, &alice, d, "a"), 0);
}

/* ---- statfs ---- */

static void test_statfs_sums_target_capacity(void **state)
{
	struct fx *f = *state;
	struct lode_wire_statfs_rep s;
	struct lode_txn t = R(f);

	assert_int_equal(lode_ns_statfs(&t, f->pl, NOW_MS, &s), 0);
	lode_store_abort(&t);
	assert_int_equal(s.bytes_total, TGT_MB(4000));
	assert_int_equal(s.bytes_free, TGT_MB(1000 + 999 + 998 + 997));
	assert_int_equal(s.targets_up, 4);
	assert_int_equal(s.targets_total, 4);
	/* one inode used (the root): the total counts it and the free ones */
	assert_int_equal(s.files - s.files_free, 1);
	assert_true(s.files_free > 1000000);
	assert_int_equal(s.name_max, LODE_NAME_MAX);
}

/* ---- placement ---- */

static void test_placement_never_puts_two_mirrors_of_a_stripe_on_one_target(void **state)
{
	struct fx *f = *state;
	uint32_t targets[LODE_LAYOUT_TARGETS_MAX];
	uint32_t first[8];
	uint16_t sc, mc;

	for (unsigned round = 0; round < 8; round++) {
		assert_int_equal(lode_placement_choose(f->pl, NOW_MS, 6, 3, &sc, &mc, targets), 0);
		assert_int_equal(sc, 6);
		for (unsigned s = 0; s < sc; s++) {
			for (unsigned m = 0; m < 3; m++) {
				for (unsigned m2 = 0; m2 < m; m2++)
					assert_int_not_equal(targets[s * 3 + m],
							     targets[s * 3 + m2]);
			}
		}
		assert_int_equal(targets[18], 0);
		first[round] = targets[0];
	}
	/* consecutive files start on different targets */
	for (unsigned round = 1; round < 8; round++)
		assert_int_not_equal(first[round], first[round - 1]);
	/* more mirrors than targets: never */
	assert_int_equal(lode_placement_choose(f->pl, NOW_MS, 1, 5, &sc, &mc, targets), -EINVAL);
}

static void test_placement_avoids_repeating_targets_across_stripes_when_it_can(void **state)
{
	struct fx *f = *state;
	uint32_t targets[LODE_LAYOUT_TARGETS_MAX];
	uint16_t sc, mc;

	assert_int_equal(lode_placement_choose(f->pl, NOW_MS, 2, 2, &sc, &mc, targets), 0);
	for (unsigned i = 0; i < 4; i++) {
		for (unsigned j = 0; j < i; j++)
			assert_int_not_equal(targets[i], targets[j]);
	}
	/* auto stripe count: all UP targets */
	assert_int_equal(lode_placement_choose(f->pl, NOW_MS, 0, 1, &sc, &mc, targets), 0);
	assert_int_equal(sc, 4);
}

/* A late heartbeat is not a dead target: silent past 5 s it stays UP and placeable (fresh
 * targets first), and is handed to the prober; only a much longer silence, or a probe
 * that finds nothing listening, makes it DOWN, until it is heard from again. */
static void
test_placement_keeps_late_targets_up_and_marks_down_only_what_is_known_down(void **state)
{
	struct fx *f = *state;
	struct lode_placement_target list[8];
	struct lode_placement_probe late[8];
	uint32_t targets[LODE_LAYOUT_TARGETS_MAX];
	uint64_t t1 = NOW_MS + 10000, t2 = NOW_MS + LODE_PLACEMENT_DOWN_MS + 1000;
	unsigned n;
	uint16_t sc, mc;

	assert_int_equal(lode_placement_heartbeat(f->pl, 2, TGT_MB(1000), TGT_MB(500), 7, t1), 0);
	assert_int_equal(lode_placement_heartbeat(f->pl, 99, 1, 1, 1, NOW_MS), -ENOENT);
	/* 10 s without a heartbeat: late, still UP */
	lode_placement_list(f->pl, t1, list, 8, &n);
	assert_int_equal(n, 4);
	assert_int_equal(list[0].state, LODE_TARGET_UP);
	assert_int_equal(list[0].late, 1);
	assert_int_equal(list[1].state, LODE_TARGET_UP);
	assert_int_equal(list[1].late, 0);
	assert_int_equal(list[1].objects, 7);
	assert_string_equal(list[1].addr, "tcp://127.0.0.1:7001");
	assert_int_equal(lode_placement_late(f->pl, t1, late, 8), 3);
	assert_int_equal(late[0].target_id, 1);
	assert_string_equal(late[0].addr, "tcp://127.0.0.1:7000");
	/* one copy: the fresh target; two: the late ones help */
	assert_int_equal(lode_placement_choose(f->pl, t1, 0, 1, &sc, &mc, targets), 0);
	assert_int_equal(sc, 1);
	assert_int_equal(targets[0], 2);
	assert_int_equal(lode_placement_choose(f->pl, t1, 0, 0, &sc, &mc, targets), 0);
	assert_int_equal(mc, 2);
	assert_int_equal(sc, 4);
	/* a probe answered: fresh again */
	lode_placement_alive(f->pl, 1, t1);
	assert_int_equal(lode_placement_late(f->pl, t1, late, 8), 2);
	/* a probe refused: DOWN until heard from */
	assert_int_equal(lode_placement_mark_down(f->pl, 3), 1);
	assert_int_equal(lode_placement_mark_down(f->pl, 3), 0);
	lode_placement_list(f->pl, t1, list, 8, &n);
	assert_int_equal(list[2].state, LODE_TARGET_DOWN);
	assert_int_equal(lode_placement_choose(f->pl, t1, 0, 3, &sc, &mc, targets), 0);
	for (unsigned i = 0; i < 3u * sc; i++)
		assert_int_not_equal(targets[i], 3);
	assert_int_equal(lode_placement_choose(f->pl, t1, 0, 4, &sc, &mc, targets), -EAGAIN);
	assert_int_equal(lode_placement_heartbeat(f->pl, 3, TGT_MB(1000), TGT_MB(500), 0, t1), 0);
	assert_int_equal(lode_placement_choose(f->pl, t1, 0, 4, &sc, &mc, targets), 0);
	/* a client's failed write: late (probed, placed on only when needed) */
	lode_placement_suspect(f->pl, 2);
	assert_int_equal(lode_placement_late(f->pl, t1, late, 8), 2); /* 2 and the silent 4 */
	for (int round = 0; round < 4; round++) {
		assert_int_equal(lode_placement_choose(f->pl, t1, 1, 2, &sc, &mc, targets), 0);
		assert_int_not_equal(targets[0], 2);
		assert_int_not_equal(targets[1], 2);
	}
	/* silent for the whole down window (4: since NOW_MS): DOWN; the others heard from at
	 * t1 are late at t2, and still UP */
	assert_int_equal(lode_placement_heartbeat(f->pl, 2, TGT_MB(1000), TGT_MB(500), 7, t2), 0);
	lode_placement_list(f->pl, t2, list, 8, &n);
	assert_int_equal(list[3].state, LODE_TARGET_DOWN);
	assert_int_equal(list[0].state, LODE_TARGET_UP);
	assert_int_equal(list[0].late, 1);
	assert_int_equal(list[1].late, 0);
	assert_int_equal(lode_placement_late(f->pl, t2, late, 8), 2);
	assert_int_equal(lode_placement_choose(f->pl, t2, 0, 4, &sc, &mc, targets), -EAGAIN);
	assert_int_equal(lode_placement_choose(f->pl, t2, 0, 3, &sc, &mc, targets), 0);
	for (unsigned i = 0; i < 3u * sc; i++)
		assert_int_not_equal(targets[i], 4);
}

/* user.lode.layout: one field changes only that field, an empty value makes all automatic,
 * and a layout no file could be placed with is refused with a reason. */
static void test_layout_xattr_changes_only_named_fields_and_refuses_unplaceable(void **state)
{
	struct fx *f = *state;
	struct lode_wire_attr attr;
	struct lode_txn t;
	char why[160], buf[128];
	size_t len;
	uint64_t dir;

#define SET(v, ntargets)                                                                           \
	(t = W(f), end(&t, lode_ns_layout_set(&t, &root_cred, dir, v, strlen(v), 0, ntargets, why, \
					      sizeof(why))))
#define GET()                                                                                      \
	(t = R(f),                                                                                 \
	 assert_int_equal(lode_ns_getxattr(&t, &root_cred, dir, "user.lode.layout", 16, buf,       \
					   sizeof(buf), &len),                                     \
			  0),                                                                      \
	 lode_store_abort(&t), buf[len] = 0, buf)

	(void)attr;
	assert_int_equal(do_mkdir(f, ROOT, "d", &dir), 0);
	assert_int_equal(SET("stripe_size=4194304,stripe_count=2,mirror_count=1", 3), 0);
	assert_int_equal(SET("mirror_count=2", 3), 0);
	assert_string_equal(GET(), "stripe_size=4194304,stripe_count=2,mirror_count=2");
	assert_int_equal(SET("stripe_count=0", 3), 0);
	assert_string_equal(GET(), "stripe_size=4194304,stripe_count=0,mirror_count=2");
	/* five copies on three targets: refused, with the reason, and nothing changed */
	assert_int_equal(SET("mirror_count=5", 3), -EINVAL);
	assert_non_null(strstr(why, "the cluster has 3"));
	assert_string_equal(GET(), "stripe_size=4194304,stripe_count=0,mirror_count=2");
	/* the combination counts: 40 stripes of 2 copies exceed a layout */
	assert_int_equal(SET("stripe_count=40", 3), -EINVAL);
	assert_int_equal(SET("mirror_count=1,stripe_count=40", 3), 0);
	assert_int_equal(SET("mirror_count=1,mirror_count=2", 3), -EINVAL);
	assert_int_equal(SET("mirror_count=-1", 3), -EINVAL);
	/* no target known yet: nothing to count against */
	assert_int_equal(SET("mirror_count=5,stripe_count=1", 0), 0);
	/* empty: automatic again */
	assert_int_equal(SET("", 3), 0);
	assert_string_equal(GET(), "stripe_size=0,stripe_count=0,mirror_count=0");
#undef SET
#undef GET
}

static void test_placement_gives_a_reregistered_uuid_its_old_id(void **state)
{
	struct fx *f = *state;
	uint8_t uuid[16] = {3};
	struct lode_placement *pl2;
	struct lode_txn t = W(f);
	uint32_t id;

	assert_int_equal(lode_placement_register_txn(&t, uuid, "tcp://h:1", 9, 5, 5, &id), 0);
	assert_int_equal(lode_store_commit(&t), 0);
	assert_int_equal(id, 3);
	lode_store_close(f->st);
	open_store(f);
	assert_int_equal(lode_placement_create(&pl2, 0), 0);
	t = R(f);
	assert_int_equal(lode_placement_load(pl2, &t), 0);
	lode_store_abort(&t);
	assert_true(lode_placement_known(pl2, 4));
	assert_false(lode_placement_known(pl2, 5));
	lode_placement_destroy(pl2);
}

/* ---- leases ---- */

static void test_an_exclusive_lease_admits_no_other_writer_until_it_expires(void **state)
{
	struct lode_leases *ls;
	uint64_t h1, h2, h3;

	(void)state;
	assert_int_equal(lode_leases_create(&ls, 1000), 0);
	assert_int_equal(lode_lease_acquire(ls, 42, 0, true, &h1), 0);
	assert_int_equal(lode_lease_acquire(ls, 42, 500, false, &h2), -EBUSY);
	assert_int_equal(lode_lease_acquire(ls, 42, 500, true, &h2), -EBUSY);
	assert_int_equal(lode_lease_acquire(ls, 43, 500, false, &h2), 0);
	assert_int_equal(lode_lease_renew(ls, h1, 42, 900), 0);
	assert_int_equal(lode_lease_renew_exclusive(ls, h1, 42, 900), 0);
	assert_int_equal(lode_lease_acquire(ls, 42, 1500, false, &h3), -EBUSY);
	assert_int_equal(lode_lease_acquire(ls, 42, 2000, false, &h3), 0);
	assert_int_equal(lode_lease_renew(ls, h1, 42, 2000), -ESTALE);
	assert_int_equal(lode_lease_renew(ls, h1, 43, 2000), -EBADF);
	assert_int_equal(lode_lease_release(ls, h1, 42), 0);
	assert_int_equal(lode_lease_release(ls, h1, 42), -EBADF);
	assert_int_equal(lode_lease_release(ls, h3, 42), 0);
	assert_int_equal(lode_lease_acquire(ls, 42, 2001, true, &h1), 0);
	assert_int_equal(lode_leases_count(ls), 2);
	assert_true(lode_lease_read_handle() & LODE_LEASE_READ_BIT);
	assert_false(h1 & LODE_LEASE_READ_BIT);
	lode_leases_destroy(ls);
}

/* A write handle names the lease to CAP_GET and COMMIT: its number must not be one another
 * client can work out from its own. 2,000 handles: all different, none with the read bit,
 * and no two in a row one apart (a count's would all be). */
static void test_write_handles_are_random_numbers_not_a_count(void **state)
{
	enum { N = 2000 };
	static uint64_t h[N];
	struct lode_leases *ls;
	unsigned in_sequence = 0;

	(void)state;
	assert_int_equal(lode_leases_create(&ls, 1000), 0);
	for (unsigned i = 0; i < N; i++) {
		assert_int_equal(lode_lease_acquire(ls, 100 + i, 0, false, &h[i]), 0);
		assert_true(h[i] != 0);
		assert_false(h[i] & LODE_LEASE_READ_BIT);
		for (unsigned k = 0; k < i; k++)
			assert_true(h[k] != h[i]);
		in_sequence += i && h[i] - h[i - 1] < 1024;
	}
	assert_int_equal(in_sequence, 0);
	for (unsigned i = 0; i < N; i++)
		assert_int_equal(lode_lease_renew(ls, h[i], 100 + i, 10), 0);
	lode_leases_destroy(ls);
}

static void test_leases_admit_many_writers_of_one_file_but_then_no_exclusive_one(void **state)
{
	struct lode_leases *ls;
	uint64_t h[8], x;

	(void)state;
	assert_int_equal(lode_leases_create(&ls, 1000), 0);
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(lode_lease_acquire(ls, 42, i, false, &h[i]), 0);
	for (unsigned i = 0; i < 8; i++) {
		assert_int_equal(lode_lease_renew(ls, h[i], 42, 100), 0);
		/* a shared writer may not move copies: another write could race the copy */
		assert_int_equal(lode_lease_renew_exclusive(ls, h[i], 42, 100), -EBUSY);
	}
	/* a repair waits for every writer to close (or go silent) */
	assert_int_equal(lode_lease_acquire(ls, 42, 200, true, &x), -EBUSY);
	for (unsigned i = 0; i < 7; i++)
		assert_int_equal(lode_lease_release(ls, h[i], 42), 0);
	assert_int_equal(lode_lease_acquire(ls, 42, 200, true, &x), -EBUSY);
	assert_int_equal(lode_lease_release(ls, h[7], 42), 0);
	assert_int_equal(lode_lease_acquire(ls, 42, 200, true, &x), 0);
	assert_int_equal(lode_lease_renew_exclusive(ls, x, 42, 300), 0);
	lode_leases_destroy(ls);
}

static void test_commits_of_many_writers_keep_the_largest_end_but_a_truncate_sets_it(void **state)
{
	struct fx *f = *state;
	struct lode_wire_attr a;
	struct lode_txn t;
	uint64_t ino;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0);
	t = W(f);
	assert_int_equal(end(&t, lode_ns_commit(&t, ino, 8000, true, 0, 0, &a)), 0);
	t = W(f);
	/* a writer that wrote less, closing later, does not cut off another's bytes */
	assert_int_equal(end(&t, lode_ns_commit(&t, ino, 3000, true, 0, 0, &a)), 0);
	assert_int_equal(a.size, 8000);
	assert_int_equal(getattr(f, ino).size, 8000);
	t = W(f);
	assert_int_equal(end(&t, lode_ns_commit(&t, ino, 9000, true, 0, 0, &a)), 0);
	assert_int_equal(getattr(f, ino).size, 9000);
	t = W(f);
	assert_int_equal(end(&t, lode_ns_commit(&t, ino, 100, false, 0, 0, &a)), 0);
	assert_int_equal(getattr(f, ino).size, 100);
}

static void test_lease_forgets_handles_of_clients_that_went_away(void **state)
{
	struct lode_leases *ls;
	uint64_t h;

	(void)state;
	assert_int_equal(lode_leases_create(&ls, 1000), 0);
	assert_int_equal(lode_lease_acquire(ls, 1, 0, false, &h), 0);
	/* a takeover leaves the old handle known (its commits get -ESTALE) ... */
	assert_int_equal(lode_lease_acquire(ls, 1, 2000, false, &h), 0);
	/* ... until it has been silent for many lease periods */
	for (uint64_t ino = 100; ino < 100 + 300; ino++)
		assert_int_equal(lode_lease_acquire(ls, ino, 2000 + 11 * 1000 + 1, false, &h), 0);
	assert_int_equal(lode_leases_count(ls), 300); /* the two silent ones went */
	assert_int_equal(lode_lease_acquire(ls, 1, 2000 + 11 * 1000 + 1, false, &h), 0);
	lode_leases_destroy(ls);
}

/* ---- writer ---- */

struct test_op {
	struct lode_wop op;
	const char *name;
	int status;
	int done;
};

static int test_op_run(struct lode_wop *op, struct lode_txn *t)
{
	struct test_op *o = lode_container_of(op, struct test_op, op);
	struct lode_wire_attr a;

	return lode_ns_mkdir(t, &root_cred, ROOT, o->name, strlen(o->name), 0755, &a);
}

static void test_op_done(struct lode_wop *op, int status)
{
	struct test_op *o = lode_container_of(op, struct test_op, op);

	o->status = status;
	__atomic_store_n(&o->done, 1, __ATOMIC_RELEASE);
}

static void test_writer_rolls_back_a_failed_op_alone_and_commits_the_rest(void **state)
{
	struct fx *f = *state;
	struct test_op ops[4] = {
	    {.name = "a"},
	    {.name = "a"},
	    {.name = "b"},
	    {.name = "x/y"},
	};
	struct lode_writer *w;

	assert_int_equal(lode_writer_start(&w, f->st), 0);
	for (int i = 0; i < 4; i++) {
		ops[i].op.run = test_op_run;
		ops[i].op.done = test_op_done;
		lode_writer_submit(w, &ops[i].op);
	}
	lode_writer_stop(w);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ops[i].done, 1);
	assert_int_equal(ops[0].status, 0);
	assert_int_equal(ops[1].status, -EEXIST);
	assert_int_equal(ops[2].status, 0);
	assert_int_equal(ops[3].status, -EINVAL);
	assert_int_equal(do_lookup(f, ROOT, "a", NULL), 0);
	assert_int_equal(do_lookup(f, ROOT, "b", NULL), 0);
	assert_int_equal(getattr(f, ROOT).nlink, 4);
}

/* ---- copies: reports and repair ---- */

static struct lode_wire_layout_rep layout_of(struct fx *f, uint64_t ino)
{
	struct lode_wire_layout_rep r;
	struct lode_txn t = R(f);

	assert_int_equal(lode_ns_layout_get(&t, ino, &r), 0);
	lode_store_abort(&t);
	return r;
}

static void test_a_reported_copy_is_degraded_and_only_that_copy(void **state)
{
	struct fx *f = *state;
	struct lode_wire_layout_rep r;
	uint64_t ino;
	uint32_t target;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0);
	r = layout_of(f, ino);
	assert_int_equal(r.degraded, 0);
	target = r.layout.targets[3]; /* stripe 1, second copy */
	assert_int_equal(do_report_copy(f, ino, 1, 1, target), 0);
	r = layout_of(f, ino);
	assert_int_equal(r.degraded, 1ull << 3);
	/* reporting it again changes nothing; a target holding no copy of that stripe is
	 * ENOENT; another generation is ESTALE */
	assert_int_equal(do_report_copy(f, ino, 1, 1, target), 0);
	assert_int_equal(do_report_copy(f, ino, 1, 1, 99), -ENOENT);
	assert_int_equal(do_report_copy(f, ino, 2, 1, target), -ESTALE);
	assert_int_equal(do_report_copy(f, ino, 1, 9, target), -ENOENT);
	assert_int_equal(layout_of(f, ino).degraded, 1ull << 3);
}

static void test_the_last_good_copy_of_a_stripe_is_never_marked_degraded(void **state)
{
	struct fx *f = *state;
	struct lode_wire_layout_rep r;
	uint64_t ino;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0);
	r = layout_of(f, ino);
	assert_int_equal(do_report_copy(f, ino, 1, 1, r.layout.targets[3]), 0);
	/* the stripe's other copy now holds everything acknowledged: it stays good */
	assert_int_equal(do_report_copy(f, ino, 1, 1, r.layout.targets[2]), -EBUSY);
	assert_int_equal(layout_of(f, ino).degraded, 1ull << 3);
	/* another stripe's copies are their own business */
	assert_int_equal(do_report_copy(f, ino, 1, 0, r.layout.targets[0]), 0);
	assert_int_equal(layout_of(f, ino).degraded, 1ull << 3 | 1ull << 0);
}

static void test_moving_a_copy_clears_it_and_never_doubles_a_stripe_on_a_target(void **state)
{
	struct fx *f = *state;
	struct lode_wire_layout_rep r, out;
	uint32_t old, other, spare = 0;
	uint64_t ino;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0);
	r = layout_of(f, ino);
	old = r.layout.targets[0];
	other = r.layout.targets[1];
	for (uint32_t id = 1; id <= 4 && !spare; id++)
		if (id != old && id != other)
			spare = id;
	assert_int_equal(do_report_copy(f, ino, 1, 0, old), 0);
	/* not onto the target that holds the stripe's other copy */
	assert_int_equal(do_set_copy(f, ino, 0, old, other, &out), -EINVAL);
	/* not when the copy is no longer where the caller thinks */
	assert_int_equal(do_set_copy(f, ino, 0, spare, old, &out), -ESTALE);
	/* not onto an unknown target */
	assert_int_equal(do_set_copy(f, ino, 0, old, 77, &out), -EINVAL);
	assert_int_equal(do_set_copy(f, ino, 0, old, spare, &out), 0);
	assert_int_equal(out.layout.targets[0], spare);
	assert_int_equal(out.degraded, 0);
	r = layout_of(f, ino);
	assert_int_equal(r.layout.targets[0], spare);
	assert_int_equal(r.layout.targets[1], other);
	assert_int_equal(r.degraded, 0);
}

static int do_move(struct fx *f, uint32_t phase, uint64_t ino, uint32_t index, uint32_t from,
		   uint32_t to, uint64_t seq_in, uint64_t *seq, uint64_t *handle)
{
	struct lode_wire_move_req r = {.ino = ino,
				       .handle = 42,
				       .generation = 1,
				       .seq = seq_in,
				       .phase = phase,
				       .index = index,
				       .old_target = from,
				       .new_target = to};
	struct lode_txn t = W(f);

	if (phase == LODE_MOVE_BEGIN)
		return end(&t, lode_ns_move_begin(&t, f->pl, &r, seq));
	if (phase == LODE_MOVE_COMMIT)
		return end(&t, lode_ns_move_commit(&t, f->pl, &r, seq));
	return end(&t, lode_ns_move_abort(&t, &r, handle));
}

static uint32_t intents(struct fx *f, struct lode_wire_move_entry *e)
{
	struct lode_wire_move_list_req q = {.max = 8};
	struct lode_txn t = R(f);
	uint32_t n = 0;

	assert_int_equal(lode_ns_move_list(&t, &q, e, &n), 0);
	lode_store_abort(&t);
	return n;
}

static void test_a_move_switches_only_the_layout_it_began_on(void **state)
{
	struct fx *f = *state;
	struct lode_wire_layout_rep r;
	struct lode_wire_move_entry e[8];
	struct lode_wire_objid ids[8];
	uint32_t old, other, spare = 0;
	uint64_t ino, seq = 99, seq2 = 0, handle = 0;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0);
	r = layout_of(f, ino);
	old = r.layout.targets[0];
	other = r.layout.targets[1];
	for (uint32_t id = 1; id <= 4 && !spare; id++)
		if (id != old && id != other)
			spare = id;
	/* never two copies of a stripe on one target; never another generation */
	assert_int_equal(do_move(f, LODE_MOVE_BEGIN, ino, 0, old, other, 0, &seq, NULL), -EINVAL);
	assert_int_equal(do_move(f, LODE_MOVE_BEGIN, ino, 0, other, spare, 0, &seq, NULL), -ESTALE);
	assert_int_equal(do_move(f, LODE_MOVE_BEGIN, ino, 0, old, spare, 0, &seq, NULL), 0);
	assert_int_equal(intents(f, e), 1);
	assert_int_equal(e[0].ino, ino);
	assert_int_equal(e[0].target, spare);
	/* a commit on a layout that moved meanwhile (another sequence) changes nothing */
	assert_int_equal(do_move(f, LODE_MOVE_COMMIT, ino, 0, old, spare, seq + 1, &seq2, NULL),
			 -ESTALE);
	assert_int_equal(layout_of(f, ino).layout.targets[0], old);
	assert_int_equal(do_move(f, LODE_MOVE_COMMIT, ino, 0, old, spare, seq, &seq2, NULL), 0);
	assert_int_equal(seq2, seq + 1);
	r = layout_of(f, ino);
	assert_int_equal(r.layout.targets[0], spare);
	assert_int_equal(r.layout.targets[1], other);
	assert_int_equal(intents(f, e), 0);
	/* the same commit again finds the copy gone from old */
	assert_int_equal(do_move(f, LODE_MOVE_COMMIT, ino, 0, old, spare, seq, &seq2, NULL),
			 -ESTALE);
	/* the old object is old's to delete, like an orphan, but not before
	 * LODE_NS_MOVED_GRACE_MIN_NS even with a shorter grace: readers trusting a layout
	 * checked before the move still read it */
	assert_int_equal(orphans_at(f, old, lode_ns_now(), 1000000000, ids, 8), 0);
	assert_int_equal(orphans_at(f, old, lode_ns_now() + LODE_NS_MOVED_GRACE_MIN_NS - 500000000,
				    1000000000, ids, 8),
			 0);
	assert_int_equal(orphans_at(f, old, lode_ns_now() + LODE_NS_MOVED_GRACE_MIN_NS + 500000000,
				    1000000000, ids, 8),
			 1);
	/* the new one is nobody's */
	assert_int_equal(orphans_of(f, old, ids, 8), 1);
	assert_int_equal(ids[0].ino, ino);
	assert_int_equal(ids[0].stripe, 0);
	assert_int_equal(orphans_of(f, spare, ids, 8), 0);
	/* moving back onto old waits until old has deleted the old object */
	assert_int_equal(do_move(f, LODE_MOVE_BEGIN, ino, 0, spare, old, 0, &seq, NULL), -EBUSY);
	assert_int_equal(orphans_of(f, old, ids, 8), 1);
	assert_int_equal(do_orphan_done(f, old, ids, 1), 0);
	assert_int_equal(orphans_of(f, old, ids, 8), 0);
	assert_int_equal(do_move(f, LODE_MOVE_BEGIN, ino, 0, spare, old, 0, &seq, NULL), 0);
	/* an abort drops the intent and names the mover's handle, whose lease goes back */
	assert_int_equal(do_move(f, LODE_MOVE_ABORT, ino, 0, 0, old, 0, NULL, &handle), 0);
	assert_int_equal(handle, 42);
	assert_int_equal(intents(f, e), 0);
	assert_int_equal(do_move(f, LODE_MOVE_ABORT, ino, 0, 0, old, 0, NULL, &handle), 0);
	assert_int_equal(handle, 0);
}

static void test_a_draining_target_takes_no_new_copy_and_its_copies_are_counted(void **state)
{
	struct fx *f = *state;
	struct lode_wire_layout_rep r;
	uint64_t ino, copies = 0, pending = 0, seq = 0;
	uint32_t old, other, spare = 0;

	assert_int_equal(do_create(f, ROOT, "f", &ino), 0);
	r = layout_of(f, ino);
	old = r.layout.targets[0];
	other = r.layout.targets[1];
	for (uint32_t id = 1; id <= 4 && !spare; id++)
		if (id != old && id != other)
			spare = id;
	lode_placement_set_admin(f->pl, spare, LODE_TARGET_DRAINING);
	assert_int_equal(do_move(f, LODE_MOVE_BEGIN, ino, 0, old, spare, 0, &seq, NULL), -EINVAL);
	/* and placement leaves it out */
	for (int i = 0; i < 8; i++) {
		char name[8];
		uint64_t n;

		snprintf(name, sizeof(name), "g%d", i);
		assert_int_equal(do_create(f, ROOT, name, &n), 0);
		r = layout_of(f, n);
		for (unsigned k = 0; k < (unsigned)r.layout.stripe_count * r.layout.mirror_count;
		     k++)
			assert_int_not_equal(r.layout.targets[k], spare);
	}
	{
		struct lode_txn t = R(f);

		assert_int_equal(lode_ns_target_users(&t, old, &copies, &pending), 0);
		lode_store_abort(&t);
	}
	assert_true(copies > 0);
	assert_int_equal(pending, 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_fresh_store_has_root_directory_0755_owned_by_root),
	    T(test_a_reported_copy_is_degraded_and_only_that_copy),
	    T(test_the_last_good_copy_of_a_stripe_is_never_marked_degraded),
	    T(test_moving_a_copy_clears_it_and_never_doubles_a_stripe_on_a_target),
	    T(test_a_move_switches_only_the_layout_it_began_on),
	    T(test_a_draining_target_takes_no_new_copy_and_its_copies_are_counted),
	    T(test_store_keeps_everything_across_close_and_reopen),
	    T(test_store_refuses_a_newer_format_version),
	    T(test_inode_records_end_at_their_last_target),
	    T(test_a_version_1_store_reads_and_is_stamped_2),
	    T(test_lookup_finds_a_created_file),
	    T(test_lookup_fails_with_enoent_for_a_missing_name),
	    T(test_lookup_fails_with_enotdir_when_parent_is_a_file),
	    T(test_lookup_fails_with_enametoolong_or_einval_for_bad_names),
	    T(test_lookup_fails_with_enoent_for_a_missing_parent),
	    T(test_create_fails_with_eexist_when_excl_and_name_exists),
	    T(test_create_without_excl_opens_the_existing_file),
	    T(test_create_fails_with_eisdir_when_name_is_a_directory),
	    T(test_create_fails_with_enotdir_when_parent_is_a_file),
	    T(test_create_spreads_an_inherited_layout_over_all_up_targets),
	    T(test_create_uses_an_explicit_layout_with_caller_targets),
	    T(test_create_that_cannot_be_placed_says_why_and_enospc_only_when_full),
	    T(test_create_in_a_setgid_directory_inherits_its_group),
	    T(test_open_with_trunc_sets_size_zero_and_commit_sets_size),
	    T(test_st_blocks_is_what_the_writer_measured_else_from_the_size),
	    T(test_open_fails_with_eacces_for_writing_without_permission),
	    T(test_mkdir_counts_subdirectories_in_the_parent_nlink),
	    T(test_rmdir_fails_with_enotempty_when_dir_has_entries),
	    T(test_rmdir_fails_with_enotdir_on_a_file),
	    T(test_unlink_fails_with_eisdir_on_a_directory),
	    T(test_unlinking_the_last_link_orphans_objects_until_each_target_acks),
	    T(test_rename_replaces_a_file_and_orphans_the_old_one),
	    T(test_rename_moves_a_directory_across_parents_and_fixes_nlink),
	    T(test_rename_replaces_an_empty_directory_but_not_a_full_one),
	    T(test_rename_fails_with_eisdir_or_enotdir_on_type_mismatch),
	    T(test_rename_noreplace_fails_with_eexist),
	    T(test_rename_exchange_swaps_two_names),
	    T(test_rename_fails_with_einval_moving_a_directory_into_its_subtree),
	    T(test_rename_onto_itself_is_a_no_op),
	    T(test_link_fails_with_eperm_on_a_directory),
	    T(test_symlink_stores_its_target_for_readlink),
	    T(test_readdir_pages_by_cookie_and_reports_eof),
	    T(test_readdir_returns_stable_entries_exactly_once_across_changes),
	    T(test_readdirplus_gives_attributes_and_eio_for_an_entry_without_inode),
	    T(test_readdir_fails_with_enotdir_and_eacces),
	    T(test_setattr_chmod_by_a_non_owner_fails_with_eperm),
	    T(test_setattr_chown_is_root_only_but_owner_may_chgrp_to_own_group),
	    T(test_setattr_sets_size_and_times_and_refuses_size_on_a_directory),
	    T(test_xattrs_honor_create_replace_size_and_remove),
	    T(test_xattrs_of_others_need_permission_and_trusted_is_root_only),
	    T(test_deleting_a_file_deletes_its_xattrs),
	    T(test_non_root_cannot_create_in_a_directory_without_write_permission),
	    T(test_lookup_needs_search_permission_on_the_directory),
	    T(test_sticky_directory_lets_only_owners_remove_entries),
	    T(test_statfs_sums_target_capacity),
	    T(test_placement_never_puts_two_mirrors_of_a_stripe_on_one_target),
	    T(test_placement_avoids_repeating_targets_across_stripes_when_it_can),
	    T(test_placement_keeps_late_targets_up_and_marks_down_only_what_is_known_down),
	    T(test_layout_xattr_changes_only_named_fields_and_refuses_unplaceable),
	    T(test_placement_gives_a_reregistered_uuid_its_old_id),
	    T(test_an_exclusive_lease_admits_no_other_writer_until_it_expires),
	    T(test_write_handles_are_random_numbers_not_a_count),
	    T(test_leases_admit_many_writers_of_one_file_but_then_no_exclusive_one),
	    T(test_commits_of_many_writers_keep_the_largest_end_but_a_truncate_sets_it),
	    T(test_lease_forgets_handles_of_clients_that_went_away),
	    T(test_writer_rolls_back_a_failed_op_alone_and_commits_the_rest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
