/* SPDX-License-Identifier: MIT */
/*
 * The namespace through liblode against a real cluster: every operation, and the errors a
 * local Linux file system gives for the same mistakes.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "cluster_client.h"
#include "lode/lode.h"

static struct test_cluster tc;
static struct lode_client *c;

static int group_setup(void **state)
{
	(void)state;
	if (cluster_up(&tc, 3))
		return -1;
	return lode_connect(tc.mds, NULL, &c) ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	lode_disconnect(c);
	cluster_down(&tc);
	return 0;
}

static void touch(const char *path)
{
	struct lode_file *f;

	assert_int_equal(lode_open(c, path, O_WRONLY | O_CREAT, 0644, &f), 0);
	assert_int_equal(lode_close(f), 0);
}

static void test_mkdir_lookup_and_stat_report_a_directory(void **state)
{
	struct lode_stat st;

	(void)state;
	assert_int_equal(lode_mkdir(c, "/d", 0750), 0);
	assert_int_equal(lode_stat(c, "/d", &st), 0);
	assert_true(S_ISDIR(st.mode));
	assert_int_equal(st.mode & 07777, 0750);
	assert_int_equal(st.nlink, 2);
	assert_int_equal(lode_mkdir(c, "/d", 0755), -EEXIST);
	assert_int_equal(lode_mkdir(c, "/nope/sub", 0755), -ENOENT);
	assert_int_equal(lode_stat(c, "/d/missing", &st), -ENOENT);
	assert_int_equal(lode_mkdir(c, "/d/sub", 0755), 0);
	assert_int_equal(lode_stat(c, "/d", &st), 0);
	assert_int_equal(st.nlink, 3);
}

static void test_create_exclusive_fails_with_eexist_and_names_are_checked(void **state)
{
	char longname[300];
	struct lode_file *f;
	struct lode_stat st;

	(void)state;
	touch("/f1");
	assert_int_equal(lode_open(c, "/f1", O_WRONLY | O_CREAT | O_EXCL, 0644, &f), -EEXIST);
	assert_int_equal(lode_stat(c, "/f1", &st), 0);
	assert_true(S_ISREG(st.mode));
	assert_int_equal(st.size, 0);
	memset(longname, 'x', sizeof(longname));
	longname[0] = '/';
	longname[257] = 0; /* a 256-byte name */
	assert_int_equal(lode_open(c, longname, O_WRONLY | O_CREAT, 0644, &f), -ENAMETOOLONG);
	longname[256] = 0; /* 255 is fine */
	assert_int_equal(lode_open(c, longname, O_WRONLY | O_CREAT, 0644, &f), 0);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_unlink(c, longname), 0);
	assert_int_equal(lode_open(c, "/f1/x", O_WRONLY | O_CREAT, 0644, &f), -ENOTDIR);
	assert_int_equal(lode_open(c, "/d", O_RDONLY, 0, &f), -EISDIR);
	assert_int_equal(lode_open(c, "/absent", O_RDONLY, 0, &f), -ENOENT);
}

static void test_unlink_and_rmdir_give_posix_errors(void **state)
{
	(void)state;
	touch("/d/file");
	assert_int_equal(lode_rmdir(c, "/d"), -ENOTEMPTY);
	assert_int_equal(lode_unlink(c, "/d"), -EISDIR);
	assert_int_equal(lode_rmdir(c, "/d/file"), -ENOTDIR);
	assert_int_equal(lode_unlink(c, "/d/file"), 0);
	assert_int_equal(lode_unlink(c, "/d/file"), -ENOENT);
	assert_int_equal(lode_rmdir(c, "/d/sub"), 0);
	assert_int_equal(lode_rmdir(c, "/d"), 0);
	assert_int_equal(lode_rmdir(c, "/d"), -ENOENT);
}

static void test_rename_replaces_moves_and_refuses_what_posix_refuses(void **state)
{
	struct lode_stat a, st;

	(void)state;
	assert_int_equal(lode_mkdir(c, "/r", 0755), 0);
	assert_int_equal(lode_mkdir(c, "/r/x", 0755), 0);
	touch("/r/a");
	touch("/r/b");
	assert_int_equal(lode_stat(c, "/r/a", &a), 0);
	/* publish pattern: write to a temporary name, rename over the real one */
	assert_int_equal(lode_rename(c, "/r/a", "/r/b", 0), 0);
	assert_int_equal(lode_stat(c, "/r/b", &st), 0);
	assert_int_equal(st.ino, a.ino);
	assert_int_equal(lode_stat(c, "/r/a", &st), -ENOENT);
	/* across directories */
	assert_int_equal(lode_rename(c, "/r/b", "/r/x/b", 0), 0);
	assert_int_equal(lode_stat(c, "/r/x/b", &st), 0);
	assert_int_equal(st.ino, a.ino);
	/* no-replace */
	touch("/r/c");
	assert_int_equal(lode_rename(c, "/r/c", "/r/x/b", LODE_RENAME_NOREPLACE_FLAG), -EEXIST);
	/* exchange */
	assert_int_equal(lode_rename(c, "/r/c", "/r/x/b", LODE_RENAME_EXCHANGE_FLAG), 0);
	assert_int_equal(lode_stat(c, "/r/c", &st), 0);
	assert_int_equal(st.ino, a.ino);
	/* a directory over a file and the reverse, into its own subtree, over a non-empty dir */
	assert_int_equal(lode_rename(c, "/r/x", "/r/c", 0), -ENOTDIR);
	assert_int_equal(lode_rename(c, "/r/c", "/r/x", 0), -EISDIR);
	assert_int_equal(lode_rename(c, "/r", "/r/x/inside", 0), -EINVAL);
	assert_int_equal(lode_mkdir(c, "/r/empty", 0755), 0);
	assert_int_equal(lode_rename(c, "/r/empty", "/r/x", 0), -ENOTEMPTY);
	assert_int_equal(lode_rename(c, "/r/x", "/r/empty", 0), 0);
	assert_int_equal(lode_stat(c, "/r/empty/b", &st), 0);
	assert_int_equal(lode_rename(c, "/r/missing", "/r/y", 0), -ENOENT);
}

/* A checkpoint saved by renaming a new file over the old one: a call by the old inode
 * number (a name looked up before the rename) gets ESTALE, not the old file; a handle
 * opened before still reads the old bytes, and the path leads to the new file. */
static void test_calls_by_a_replaced_inode_get_estale_and_open_handles_still_read(void **state)
{
	struct lode_file *f, *old;
	struct lode_stat st;
	char buf[5];
	uint64_t ino;

	(void)state;
	assert_int_equal(lode_open(c, "/ckpt", O_WRONLY | O_CREAT, 0644, &f), 0);
	assert_int_equal(lode_pwrite(f, "old!!", 5, 0), 5);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_stat(c, "/ckpt", &st), 0);
	ino = st.ino;
	assert_int_equal(lode_ll_open(c, ino, O_RDONLY, &old), 0);
	assert_int_equal(lode_open(c, "/ckpt.tmp", O_WRONLY | O_CREAT, 0644, &f), 0);
	assert_int_equal(lode_pwrite(f, "new!!", 5, 0), 5);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_rename(c, "/ckpt.tmp", "/ckpt", 0), 0);

	assert_int_equal(lode_ll_open(c, ino, O_RDONLY, &f), -ESTALE);
	assert_int_equal(lode_ll_open(c, ino, O_RDWR, &f), -ESTALE);
	assert_int_equal(lode_ll_truncate(c, ino, 0), -ESTALE);
	assert_int_equal(lode_pread(old, buf, 5, 0), 5);
	assert_memory_equal(buf, "old!!", 5);
	assert_int_equal(lode_close(old), 0);
	assert_int_equal(lode_open(c, "/ckpt", O_RDONLY, 0, &f), 0);
	assert_int_equal(lode_pread(f, buf, 5, 0), 5);
	assert_memory_equal(buf, "new!!", 5);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_truncate(c, "/ckpt", 2), 0);
	assert_int_equal(lode_stat(c, "/ckpt", &st), 0);
	assert_int_equal(st.size, 2);
	assert_int_equal(lode_unlink(c, "/ckpt"), 0);

	/* a plain unlink makes the number stale too, and the old number gets no new name
	 * (a link through a stale name would give a name to a file whose objects go away) */
	touch("/gone");
	assert_int_equal(lode_stat(c, "/gone", &st), 0);
	assert_int_equal(lode_unlink(c, "/gone"), 0);
	assert_int_equal(lode_ll_open(c, st.ino, O_RDONLY, &f), -ESTALE);
	assert_int_equal(lode_ll_link(c, st.ino, LODE_ROOT_INO, "gone-again", NULL), -ESTALE);
	assert_int_equal(lode_stat(c, "/gone-again", &st), -ENOENT);
}

static void test_hard_links_and_symlinks_behave_like_posix(void **state)
{
	char target[64];
	struct lode_stat st, lst;

	(void)state;
	touch("/orig");
	assert_int_equal(lode_link(c, "/orig", "/hard"), 0);
	assert_int_equal(lode_stat(c, "/orig", &st), 0);
	assert_int_equal(st.nlink, 2);
	assert_int_equal(lode_link(c, "/orig", "/hard"), -EEXIST);
	assert_int_equal(lode_link(c, "/r", "/rlink"), -EPERM);
	assert_int_equal(lode_unlink(c, "/orig"), 0);
	assert_int_equal(lode_stat(c, "/hard", &st), 0);
	assert_int_equal(st.nlink, 1);

	assert_int_equal(lode_symlink(c, "/hard", "/sym"), 0);
	assert_int_equal(lode_symlink(c, "r/empty", "/relsym"), 0);
	assert_int_equal(lode_lstat(c, "/sym", &lst), 0);
	assert_true(S_ISLNK(lst.mode));
	assert_int_equal(lode_stat(c, "/sym", &st), 0);
	assert_true(S_ISREG(st.mode));
	assert_int_equal(lode_readlink(c, "/sym", target, sizeof(target)), 5);
	assert_memory_equal(target, "/hard", 5);
	assert_int_equal(lode_readlink(c, "/hard", target, sizeof(target)), -EINVAL);
	/* a relative symlink in the middle of a path */
	assert_int_equal(lode_stat(c, "/relsym/b", &st), 0);
	assert_int_equal(lode_symlink(c, "/loop2", "/loop1"), 0);
	assert_int_equal(lode_symlink(c, "/loop1", "/loop2"), 0);
	assert_int_equal(lode_stat(c, "/loop1", &st), -ELOOP);
	assert_int_equal(lode_symlink(c, "x", "/sym"), -EEXIST);
}

static void test_setattr_changes_mode_owner_and_times(void **state)
{
	struct lode_stat st;

	(void)state;
	touch("/attrs");
	assert_int_equal(lode_chmod(c, "/attrs", 0600), 0);
	assert_int_equal(lode_chown(c, "/attrs", 1234, 5678), 0);
	assert_int_equal(lode_utimens(c, "/attrs", 1000000000123ll, 2000000000456ll), 0);
	assert_int_equal(lode_stat(c, "/attrs", &st), 0);
	assert_int_equal(st.mode & 07777, 0600);
	assert_int_equal(st.uid, 1234);
	assert_int_equal(st.gid, 5678);
	assert_int_equal(st.atime_ns, 1000000000123ll);
	assert_int_equal(st.mtime_ns, 2000000000456ll);
}

static void test_a_non_root_user_is_denied_what_its_mode_bits_deny(void **state)
{
	struct lode_client *u;
	struct lode_client_opts o = {.size = sizeof(o), .uid = 1000, .gid = 1000};
	struct lode_file *f;

	(void)state;
	assert_int_equal(lode_mkdir(c, "/private", 0700), 0);
	touch("/private/secret");
	assert_int_equal(lode_connect(tc.mds, &o, &u), 0);
	assert_int_equal(lode_open(u, "/private/secret", O_RDONLY, 0, &f), -EACCES);
	assert_int_equal(lode_mkdir(u, "/private/mine", 0755), -EACCES);
	assert_int_equal(lode_chmod(u, "/attrs", 0777), -EPERM);
	assert_int_equal(lode_mkdir(c, "/shared", 0777), 0);
	assert_int_equal(lode_open(u, "/shared/ok", O_WRONLY | O_CREAT, 0644, &f), 0);
	assert_int_equal(lode_close(f), 0);
	lode_disconnect(u);
}

struct names {
	int n;
	int seen[300];
};

static int collect(void *arg, const char *name, uint64_t ino, uint32_t mode)
{
	struct names *ns = arg;
	int i;

	(void)ino;
	if (sscanf(name, "e%d", &i) == 1 && i >= 0 && i < 300 && S_ISREG(mode))
		ns->seen[i]++;
	ns->n++;
	return 0;
}

static void test_readdir_pages_through_a_large_directory_once_each(void **state)
{
	struct names ns = {0};
	char path[64];

	(void)state;
	assert_int_equal(lode_mkdir(c, "/many", 0755), 0);
	for (int i = 0; i < 300; i++) {
		snprintf(path, sizeof(path), "/many/e%d", i);
		touch(path);
	}
	assert_int_equal(lode_readdir(c, "/many", collect, &ns), 0);
	assert_int_equal(ns.n, 300);
	for (int i = 0; i < 300; i++)
		assert_int_equal(ns.seen[i], 1);
	assert_int_equal(lode_readdir(c, "/hard", collect, &ns), -ENOTDIR);
}

/* What `ls -l` gets through lode-fuse: names and attributes in one call per page, each
 * entry's attributes those a getattr of it gives. */
static void test_readdirplus_gives_each_entry_the_attributes_getattr_gives(void **state)
{
	struct lode_direntplus ents[2];
	struct lode_stat dir, st;
	struct lode_file *f;
	uint64_t cookie = 0;
	int eof = 0, total = 0, seen = 0;
	char buf[3000];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(lode_mkdir(c, "/plus", 0755), 0);
	assert_int_equal(lode_mkdir(c, "/plus/sub", 0700), 0);
	assert_int_equal(lode_symlink(c, "sub", "/plus/link"), 0);
	assert_int_equal(lode_open(c, "/plus/data", O_WRONLY | O_CREAT, 0640, &f), 0);
	assert_int_equal(lode_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	assert_int_equal(lode_close(f), 0);
	touch("/plus/empty");
	assert_int_equal(lode_stat(c, "/plus", &dir), 0);
	/* two per page: the cookies carry the listing across pages */
	while (!eof) {
		int n = lode_ll_readdirplus(c, dir.ino, cookie, ents, 2, &eof);

		assert_true(n >= 0 && n <= 2);
		for (int i = 0; i < n; i++) {
			const struct lode_direntplus *e = &ents[i];

			assert_int_equal(lode_ll_getattr(c, e->d.ino, &st), 0);
			assert_int_equal(e->st.ino, e->d.ino);
			assert_int_equal(e->st.mode, st.mode);
			assert_int_equal(e->d.mode, st.mode & S_IFMT);
			assert_int_equal(e->st.size, st.size);
			assert_int_equal(e->st.nlink, st.nlink);
			assert_int_equal(e->st.uid, st.uid);
			assert_int_equal(e->st.mtime_ns, st.mtime_ns);
			if (!strcmp(e->d.name, "data")) {
				assert_int_equal(e->st.size, sizeof(buf));
				assert_int_equal(e->st.mode, S_IFREG | 0640);
				seen |= 1;
			} else if (!strcmp(e->d.name, "sub")) {
				assert_int_equal(e->st.mode, S_IFDIR | 0700);
				seen |= 2;
			} else if (!strcmp(e->d.name, "link")) {
				assert_true(S_ISLNK(e->st.mode));
				assert_int_equal(e->st.size, 3);
				seen |= 4;
			} else if (!strcmp(e->d.name, "empty")) {
				assert_int_equal(e->st.size, 0);
				seen |= 8;
			}
			cookie = e->d.cookie;
			total++;
		}
		if (n == 0)
			break;
	}
	assert_int_equal(total, 4);
	assert_int_equal(seen, 15);
	assert_int_equal(lode_stat(c, "/plus/data", &st), 0);
	assert_int_equal(lode_ll_readdirplus(c, st.ino, 0, ents, 2, &eof), -ENOTDIR);
}

static void test_xattrs_set_get_list_and_remove(void **state)
{
	char buf[64];
	ssize_t n;

	(void)state;
	touch("/x");
	assert_int_equal(lode_setxattr(c, "/x", "user.a", "hello", 5, 0), 0);
	assert_int_equal(lode_setxattr(c, "/x", "user.a", "x", 1, LODE_XATTR_CREATE_FLAG), -EEXIST);
	assert_int_equal(lode_setxattr(c, "/x", "user.b", "x", 1, LODE_XATTR_REPLACE_FLAG),
			 -ENODATA);
	assert_int_equal(lode_getxattr(c, "/x", "user.a", NULL, 0), 5);
	assert_int_equal(lode_getxattr(c, "/x", "user.a", buf, 2), -ERANGE);
	assert_int_equal(lode_getxattr(c, "/x", "user.a", buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(lode_setxattr(c, "/x", "user.b", "", 0, 0), 0);
	n = lode_listxattr(c, "/x", buf, sizeof(buf));
	assert_int_equal(n, 14);
	assert_memory_equal(buf, "user.a\0user.b\0", 14);
	assert_int_equal(lode_removexattr(c, "/x", "user.a"), 0);
	assert_int_equal(lode_getxattr(c, "/x", "user.a", buf, sizeof(buf)), -ENODATA);
	assert_int_equal(lode_removexattr(c, "/x", "user.a"), -ENODATA);
}

static void layout_of(const char *path, unsigned *stripes, unsigned *mirrors)
{
	struct lode_layout l;
	uint64_t degraded;

	assert_int_equal(lode_layout_info(c, path, &l, &degraded), 0);
	*stripes = l.stripe_count;
	*mirrors = l.mirror_count;
}

static void test_a_directorys_default_layout_applies_to_what_is_created_in_it(void **state)
{
	const char *name = "user.lode.layout";
	struct lode_client_opts o = {.size = sizeof(o), .uid = 1000, .gid = 1000};
	struct lode_client *u;
	unsigned stripes, mirrors;
	char buf[128];
	ssize_t n;

	(void)state;
	assert_int_equal(lode_mkdir(c, "/scratch", 0777), 0);
	/* one copy, two stripes of 4 MiB, for everything created in /scratch from now on */
	assert_int_equal(
	    lode_setxattr(c, "/scratch", name, "stripe_size=4194304,stripe_count=2,mirror_count=1",
			  strlen("stripe_size=4194304,stripe_count=2,mirror_count=1"), 0),
	    0);
	n = lode_getxattr(c, "/scratch", name, buf, sizeof(buf));
	assert_true(n > 0);
	assert_memory_equal(buf, "stripe_size=4194304,stripe_count=2,mirror_count=1", (size_t)n);
	touch("/scratch/ckpt");
	layout_of("/scratch/ckpt", &stripes, &mirrors);
	assert_int_equal(stripes, 2);
	assert_int_equal(mirrors, 1);
	/* subdirectories inherit it */
	assert_int_equal(lode_mkdir(c, "/scratch/sub", 0777), 0);
	touch("/scratch/sub/f");
	layout_of("/scratch/sub/f", &stripes, &mirrors);
	assert_int_equal(mirrors, 1);
	/* a file's own layout reads the same way, but is fixed */
	n = lode_getxattr(c, "/scratch/ckpt", name, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(
	    lode_setxattr(c, "/scratch/ckpt", name, "mirror_count=2", strlen("mirror_count=2"), 0),
	    -EPERM);
	/* bad values are refused and change nothing */
	assert_int_equal(
	    lode_setxattr(c, "/scratch", name, "mirror_count=two", strlen("mirror_count=two"), 0),
	    -EINVAL);
	assert_int_equal(
	    lode_setxattr(c, "/scratch", name, "stripe_size=1000", strlen("stripe_size=1000"), 0),
	    -EINVAL);
	assert_int_equal(lode_setxattr(c, "/scratch", name, "stripe_count=64,mirror_count=2",
				       strlen("stripe_count=64,mirror_count=2"), 0),
			 -EINVAL);
	assert_int_equal(
	    lode_setxattr(c, "/scratch", name, "colour=blue", strlen("colour=blue"), 0), -EINVAL);
	/* only the owner sets it, even on a directory anyone may write */
	assert_int_equal(lode_connect(tc.mds, &o, &u), 0);
	assert_int_equal(
	    lode_setxattr(u, "/scratch", name, "mirror_count=2", strlen("mirror_count=2"), 0),
	    -EPERM);
	lode_disconnect(u);
	touch("/scratch/still-one-copy");
	layout_of("/scratch/still-one-copy", &stripes, &mirrors);
	assert_int_equal(mirrors, 1);
	/* removing it brings back the automatic choice: two copies once two OSS are up */
	assert_int_equal(lode_removexattr(c, "/scratch", name), 0);
	touch("/scratch/auto");
	layout_of("/scratch/auto", &stripes, &mirrors);
	assert_int_equal(mirrors, 2);
}

/* Issue 18: mirror_count=5 on 3 OSS was accepted, then every create under the directory
 * failed with ENOSPC; setting one field reset the others. */
static void test_a_layout_that_cannot_be_placed_is_refused_and_one_field_changes_alone(void **state)
{
	const char *name = "user.lode.layout";
	struct lode_layout five = {.mirror_count = 5};
	struct lode_file *f = NULL;
	unsigned stripes, mirrors;
	char buf[128];
	ssize_t n;

	(void)state;
	assert_int_equal(lode_mkdir(c, "/five", 0777), 0);
	assert_int_equal(lode_setxattr(c, "/five", name, "stripe_count=2,mirror_count=1",
				       strlen("stripe_count=2,mirror_count=1"), 0),
			 0);
	assert_int_equal(
	    lode_setxattr(c, "/five", name, "mirror_count=5", strlen("mirror_count=5"), 0),
	    -EINVAL);
	/* refused, so the directory keeps what it had and creates in it work */
	touch("/five/f");
	layout_of("/five/f", &stripes, &mirrors);
	assert_int_equal(stripes, 2);
	assert_int_equal(mirrors, 1);
	/* one field changes that field only */
	assert_int_equal(
	    lode_setxattr(c, "/five", name, "mirror_count=3", strlen("mirror_count=3"), 0), 0);
	n = lode_getxattr(c, "/five", name, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = 0;
	assert_non_null(strstr(buf, ",stripe_count=2,mirror_count=3"));
	touch("/five/g");
	layout_of("/five/g", &stripes, &mirrors);
	assert_int_equal(stripes, 2);
	assert_int_equal(mirrors, 3);
	/* a create asking for five copies says it cannot be (not ENOSPC) and leaves nothing */
	assert_int_equal(lode_create_with_layout(c, "/five/h", 0644, &five, &f), -EINVAL);
	assert_null(f);
	assert_int_equal(lode_stat(c, "/five/h", &(struct lode_stat){0}), -ENOENT);
}

static void test_statfs_and_targets_report_the_cluster(void **state)
{
	struct lode_target_info t[8];
	struct lode_statfs sf;

	(void)state;
	assert_int_equal(lode_statfs(c, &sf), 0);
	assert_int_equal(sf.targets_up, 3);
	assert_int_equal(sf.targets_total, 3);
	assert_true(sf.bytes_total > 0 && sf.bytes_free <= sf.bytes_total);
	assert_int_equal(lode_targets(c, t, 8), 3);
	for (int i = 0; i < 3; i++)
		assert_true(t[i].up);
}

static void test_a_second_client_may_write_a_file_the_first_has_open_for_writing(void **state)
{
	struct lode_client *other;
	struct lode_file *f, *g;

	(void)state;
	touch("/leased");
	assert_int_equal(lode_connect(tc.mds, NULL, &other), 0);
	assert_int_equal(lode_open(c, "/leased", O_WRONLY, 0, &f), 0);
	assert_int_equal(lode_open(other, "/leased", O_WRONLY, 0, &g), 0);
	assert_int_equal(lode_close(g), 0);
	assert_int_equal(lode_open(other, "/leased", O_RDONLY, 0, &g), 0);
	assert_int_equal(lode_close(g), 0);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_open(other, "/leased", O_WRONLY, 0, &g), 0);
	assert_int_equal(lode_close(g), 0);
	lode_disconnect(other);
}

static void test_close_to_open_a_reader_sees_what_a_writer_closed(void **state)
{
	struct lode_client *reader;
	struct lode_file *f;
	char buf[32] = {0};

	(void)state;
	assert_int_equal(lode_connect(tc.mds, NULL, &reader), 0);
	assert_int_equal(lode_open(c, "/c2o", O_WRONLY | O_CREAT, 0644, &f), 0);
	assert_int_equal(lode_pwrite(f, "checkpoint", 10, 0), 10);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_open(reader, "/c2o", O_RDONLY, 0, &f), 0);
	assert_int_equal(lode_pread(f, buf, sizeof(buf), 0), 10);
	assert_memory_equal(buf, "checkpoint", 10);
	assert_int_equal(lode_close(f), 0);
	lode_disconnect(reader);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mkdir_lookup_and_stat_report_a_directory),
	    cmocka_unit_test(test_create_exclusive_fails_with_eexist_and_names_are_checked),
	    cmocka_unit_test(test_unlink_and_rmdir_give_posix_errors),
	    cmocka_unit_test(test_rename_replaces_moves_and_refuses_what_posix_refuses),
	    cmocka_unit_test(test_calls_by_a_replaced_inode_get_estale_and_open_handles_still_read),
	    cmocka_unit_test(test_hard_links_and_symlinks_behave_like_posix),
	    cmocka_unit_test(test_setattr_changes_mode_owner_and_times),
	    cmocka_unit_test(test_a_non_root_user_is_denied_what_its_mode_bits_deny),
	    cmocka_unit_test(test_readdir_pages_through_a_large_directory_once_each),
	    cmocka_unit_test(test_readdirplus_gives_each_entry_the_attributes_getattr_gives),
	    cmocka_unit_test(test_xattrs_set_get_list_and_remove),
	    cmocka_unit_test(test_a_directorys_default_layout_applies_to_what_is_created_in_it),
	    cmocka_unit_test(
		test_a_layout_that_cannot_be_placed_is_refused_and_one_field_changes_alone),
	    cmocka_unit_test(test_statfs_and_targets_report_the_cluster),
	    cmocka_unit_test(test_a_second_client_may_write_a_file_the_first_has_open_for_writing),
	    cmocka_unit_test(test_close_to_open_a_reader_sees_what_a_writer_closed),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
