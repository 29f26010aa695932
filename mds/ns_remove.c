/* SPDX-License-Identifier: MIT */
/*
 * How a name goes away: UNLINK and RMDIR, and what follows when the last name of an inode
 * is gone (a file with objects stays, unlinked, until its targets have deleted them).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "ns_internal.h"

/*
 * Deletes an inode record and everything hanging off it. A regular file with objects is
 * not deleted yet: it stays, with nlink 0, until its objects are gone (the orphan grace
 * period, then every target's acknowledgement), so that a program that still has it open
 * can go on reading, writing and fstat-ing it, as POSIX lets it.
 */
static int delete_inode(struct lode_txn *t, uint64_t ino, const struct lode_disk_inode *in)
{
	int rc;

	if (S_ISREG(in->mode)) {
		rc = lode_ns_orphan_record(t, ino, in);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			struct lode_disk_inode kept = *in;

			kept.nlink = 0;
			kept.ctime_ns = lode_ns_now();
			return lode_rec_inode_put(t, ino, &kept);
		}
	}
	if (S_ISLNK(in->mode)) {
		rc = lode_rec_symlink_del(t, ino);
		if (rc && rc != -ENOENT)
			return rc;
	}
	return lode_rec_inode_erase(t, ino);
}

int lode_ns_drop_link(struct lode_txn *t, uint64_t ino, int64_t now)
{
	struct lode_disk_inode in;
	int rc = lode_ns_get_linked_inode(t, ino, &in);

	if (rc)
		return rc;
	if (S_ISDIR(in.mode) || in.nlink <= 1)
		return delete_inode(t, ino, &in);
	in.nlink--;
	in.ctime_ns = now;
	return lode_rec_inode_put(t, ino, &in);
}

int lode_ns_unname(struct lode_txn *t, uint64_t parent, const char *name, size_t len,
		   const struct lode_disk_dirent *d, bool is_dir, int64_t now)
{
	int rc;

	if (is_dir) {
		rc = lode_ns_check_empty(t, d->ino);
		if (rc)
			return rc;
	}
	rc = lode_rec_dirent_del(t, parent, name, len, d);
	if (!rc)
		rc = lode_ns_drop_link(t, d->ino, now);
	return rc;
}

/* Common part of unlink and rmdir. */
static int remove_entry(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
			size_t len, int want_dir)
{
	struct lode_disk_inode dir, in;
	struct lode_disk_dirent d;
	int64_t now = lode_ns_now();
	int rc = lode_ns_find_entry(t, c, parent, name, len, &dir, &d, &in);

	if (rc)
		return rc;
	/* Linux's may_delete() order: permission, sticky bit, then the type */
	rc = lode_perm_may(c, &dir, LODE_MAY_W | LODE_MAY_X);
	if (!rc)
		rc = lode_perm_sticky_ok(c, &dir, &in);
	if (rc)
		return rc;
	if (want_dir && !S_ISDIR(in.mode))
		return -ENOTDIR;
	if (!want_dir && S_ISDIR(in.mode))
		return -EISDIR;
	rc = lode_ns_unname(t, parent, name, len, &d, want_dir, now);
	if (!rc)
		rc = lode_ns_touch_dir(t, parent, want_dir ? -1 : 0, now);
	return rc;
}

int lode_ns_unlink(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		   size_t len)
{
	return remove_entry(t, c, parent, name, len, 0);
}

int lode_ns_rmdir(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		  size_t len)
{
	return remove_entry(t, c, parent, name, len, 1);
}
