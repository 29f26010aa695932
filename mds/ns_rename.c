/* SPDX-License-Identifier: MIT */
/*
 * RENAME, plain, NOREPLACE or EXCHANGE: both names checked before the first write, no
 * directory moved below itself, and the link counts and parent pointers of a directory that
 * changes parent kept right. Inode records are re-read after any write that may have
 * touched them (old and new parent may be one inode), never kept across a write.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "ns_internal.h"

/* -EINVAL if dir `ino` is `anc` or lies below it (moving anc there would make a loop). */
static int check_not_below(struct lode_txn *t, uint64_t ino, uint64_t anc)
{
	struct lode_disk_inode in;

	for (unsigned depth = 0; depth < 4096; depth++) {
		int rc;

		if (ino == anc)
			return -EINVAL;
		if (ino == LODE_MDS_ROOT_INO)
			return 0;
		rc = lode_ns_get_linked_inode(t, ino, &in);
		if (rc)
			return rc;
		ino = in.parent;
	}
	return -ELOOP;
}

/* A directory moved from one parent to another: its parent pointer and both link counts. */
static int reparent_dir(struct lode_txn *t, uint64_t ino, uint64_t old_parent, uint64_t new_parent,
			int64_t now)
{
	struct lode_disk_inode in;
	int rc = lode_rec_inode_get(t, ino, &in);

	if (rc)
		return rc;
	in.parent = new_parent;
	in.ctime_ns = now;
	rc = lode_rec_inode_put(t, ino, &in);
	if (!rc)
		rc = lode_ns_touch_dir(t, old_parent, -1, now);
	if (!rc)
		rc = lode_ns_touch_dir(t, new_parent, +1, now);
	return rc;
}

static int set_ctime(struct lode_txn *t, uint64_t ino, int64_t now)
{
	struct lode_disk_inode in;
	int rc = lode_rec_inode_get(t, ino, &in);

	if (rc)
		return rc;
	in.ctime_ns = now;
	return lode_rec_inode_put(t, ino, &in);
}

static int rename_exchange(struct lode_txn *t, uint64_t op, const char *on, size_t ol,
			   const struct lode_disk_dirent *src, uint64_t np, const char *nn,
			   size_t nl, const struct lode_disk_dirent *dst, int64_t now)
{
	int rc;

	if (op != np) {
		if (S_ISDIR(src->mode)) {
			rc = check_not_below(t, np, src->ino);
			if (rc)
				return rc;
		}
		if (S_ISDIR(dst->mode)) {
			rc = check_not_below(t, op, dst->ino);
			if (rc)
				return rc;
		}
	}
	rc = lode_rec_dirent_retarget(t, op, on, ol, src, dst->ino, dst->mode);
	if (!rc)
		rc = lode_rec_dirent_retarget(t, np, nn, nl, dst, src->ino, src->mode);
	if (rc)
		return rc;
	if (op != np && S_ISDIR(src->mode) != S_ISDIR(dst->mode)) {
		/* one directory changes parent: the link counts follow it */
		if (S_ISDIR(src->mode))
			rc = reparent_dir(t, src->ino, op, np, now);
		else
			rc = reparent_dir(t, dst->ino, np, op, now);
	} else if (op != np && S_ISDIR(src->mode)) {
		struct lode_disk_inode in;

		rc = lode_rec_inode_get(t, src->ino, &in);
		if (!rc) {
			in.parent = np;
			rc = lode_rec_inode_put(t, src->ino, &in);
		}
		if (!rc)
			rc = lode_rec_inode_get(t, dst->ino, &in);
		if (!rc) {
			in.parent = op;
			rc = lode_rec_inode_put(t, dst->ino, &in);
		}
	}
	if (!rc)
		rc = set_ctime(t, src->ino, now);
	if (!rc)
		rc = set_ctime(t, dst->ino, now);
	if (!rc)
		rc = lode_ns_touch_dir(t, op, 0, now);
	if (!rc && np != op)
		rc = lode_ns_touch_dir(t, np, 0, now);
	return rc;
}

/* The inode of an entry in dir that c is about to remove or replace (the sticky bit). */
static int removable(struct lode_txn *t, const lode_cred *c, const struct lode_disk_inode *dir,
		     uint64_t ino, struct lode_disk_inode *in)
{
	int rc = lode_ns_get_linked_inode(t, ino, in);

	return rc ? rc : lode_perm_sticky_ok(c, dir, in);
}

int lode_ns_rename(struct lode_txn *t, const lode_cred *c, uint64_t op, const char *on, size_t ol,
		   uint64_t np, const char *nn, size_t nl, uint32_t flags)
{
	struct lode_disk_inode odir, ndir, src_in, dst_in;
	struct lode_disk_dirent src, dst;
	int64_t now = lode_ns_now();
	int have_dst;
	int rc;

	if (flags & ~(LODE_RENAME_NOREPLACE | LODE_RENAME_EXCHANGE))
		return -EINVAL;
	if ((flags & LODE_RENAME_NOREPLACE) && (flags & LODE_RENAME_EXCHANGE))
		return -EINVAL;
	rc = lode_name_check(on, ol);
	if (!rc)
		rc = lode_name_check(nn, nl);
	if (rc)
		return rc;
	rc = lode_ns_get_dir(t, c, op, LODE_MAY_X, &odir);
	if (!rc)
		rc = lode_ns_get_dir(t, c, np, LODE_MAY_X, &ndir);
	if (rc)
		return rc;
	rc = lode_rec_dirent_get(t, op, on, ol, &src);
	if (rc)
		return rc;
	rc = lode_rec_dirent_get(t, np, nn, nl, &dst);
	if (rc && rc != -ENOENT)
		return rc;
	have_dst = rc == 0;
	if (have_dst && (flags & LODE_RENAME_NOREPLACE))
		return -EEXIST;
	if (!have_dst && (flags & LODE_RENAME_EXCHANGE))
		return -ENOENT;

	rc = lode_perm_may(c, &odir, LODE_MAY_W | LODE_MAY_X);
	if (!rc)
		rc = lode_perm_may(c, &ndir, LODE_MAY_W | LODE_MAY_X);
	if (rc)
		return rc;
	rc = removable(t, c, &odir, src.ino, &src_in);
	if (!rc && have_dst)
		rc = removable(t, c, &ndir, dst.ino, &dst_in);
	if (rc)
		return rc;
	/* both names already refer to the same inode: POSIX says do nothing */
	if (have_dst && src.ino == dst.ino)
		return 0;
	if (flags & LODE_RENAME_EXCHANGE)
		return rename_exchange(t, op, on, ol, &src, np, nn, nl, &dst, now);

	if (S_ISDIR(src.mode) && op != np) {
		/* its ".." changes: like Linux, moving a directory needs write permission on it */
		rc = lode_perm_may(c, &src_in, LODE_MAY_W);
		if (!rc)
			rc = check_not_below(t, np, src.ino);
		if (rc)
			return rc;
	}
	if (have_dst) {
		if (S_ISDIR(src.mode) && !S_ISDIR(dst.mode))
			return -ENOTDIR;
		if (!S_ISDIR(src.mode) && S_ISDIR(dst.mode))
			return -EISDIR;
		rc = lode_ns_unname(t, np, nn, nl, &dst, S_ISDIR(dst.mode), now);
		if (!rc && S_ISDIR(dst.mode))
			rc = lode_ns_touch_dir(t, np, -1, now);
		if (rc)
			return rc;
	}
	rc = lode_rec_dirent_del(t, op, on, ol, &src);
	if (rc)
		return rc;
	/* the new name gets a fresh cookie, so a listing in progress may see it again under
	 * the new name but never misses an entry that stayed put */
	rc = lode_rec_inode_get(t, np, &ndir);
	if (!rc)
		rc = lode_rec_dirent_add(t, np, &ndir, nn, nl, src.ino, src.mode);
	if (!rc) {
		ndir.mtime_ns = ndir.ctime_ns = now;
		rc = lode_rec_inode_put(t, np, &ndir);
	}
	if (!rc && op != np)
		rc = lode_ns_touch_dir(t, op, 0, now);
	if (!rc && S_ISDIR(src.mode) && op != np)
		rc = reparent_dir(t, src.ino, op, np, now);
	else if (!rc)
		rc = set_ctime(t, src.ino, now);
	return rc;
}
