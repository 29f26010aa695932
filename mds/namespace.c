/* SPDX-License-Identifier: MIT */
/*
 * What every namespace operation shares (ns_internal.h): the clock and the name rule, and
 * loading the directory, entry or inode an operation works on with the checks each one
 * makes first (type, search permission, staleness). The operations themselves live in
 * ns_*.c, one concern a file; the record encodings in records.c, the permission rules in
 * perm.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ns_internal.h"

int64_t lode_ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The inode of a call by number whose caller found the number under a name (OPEN, LINK).
 * An inode that is gone, or that no name leads to any more (deleted, or kept unlinked for
 * the orphan grace), makes that name stale: ESTALE, and the caller looks the name up
 * again. Otherwise a client that looked the name up a moment before another client
 * deleted or renamed over it would read the old file (close-to-open, as NFS gives it), or
 * give a name back to a file whose objects are already orphans.
 */
int lode_ns_get_named_inode(struct lode_txn *t, uint64_t ino, struct lode_disk_inode *out)
{
	int rc = lode_rec_inode_get(t, ino, out);

	if (rc == -ENOENT || (!rc && out->nlink == 0))
		return -ESTALE;
	return rc;
}

int lode_ns_get_file(struct lode_txn *t, uint64_t ino, int not_file, struct lode_disk_inode *in)
{
	int rc = lode_rec_inode_get(t, ino, in);

	if (rc)
		return rc;
	return S_ISREG(in->mode) ? 0 : not_file;
}

int lode_ns_get_dir(struct lode_txn *t, const lode_cred *c, uint64_t ino, int mask,
		    struct lode_disk_inode *dir)
{
	int rc = lode_rec_inode_get(t, ino, dir);

	if (rc)
		return rc;
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	return lode_perm_may(c, dir, mask);
}

int lode_ns_touch_dir(struct lode_txn *t, uint64_t ino, int delta, int64_t now)
{
	struct lode_disk_inode dir;
	int rc = lode_rec_inode_get(t, ino, &dir);

	if (rc)
		return rc;
	dir.nlink = (uint32_t)((int)dir.nlink + delta);
	dir.mtime_ns = dir.ctime_ns = now;
	return lode_rec_inode_put(t, ino, &dir);
}

int lode_ns_get_linked_inode(struct lode_txn *t, uint64_t ino, struct lode_disk_inode *out)
{
	int rc = lode_rec_inode_get(t, ino, out);

	return rc == -ENOENT ? -EIO : rc;
}

int lode_ns_look_in(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		    size_t len, struct lode_disk_inode *dir, struct lode_disk_dirent *d)
{
	int rc = lode_name_check(name, len);

	if (rc)
		return rc;
	rc = lode_ns_get_dir(t, c, parent, LODE_MAY_X, dir);
	if (rc)
		return rc;
	rc = lode_rec_dirent_get(t, parent, name, len, d);
	if (rc == -ENOENT)
		return 0;
	return rc ? rc : 1;
}

int lode_ns_find_entry(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		       size_t len, struct lode_disk_inode *dir, struct lode_disk_dirent *d,
		       struct lode_disk_inode *in)
{
	int rc = lode_ns_look_in(t, c, parent, name, len, dir, d);

	if (rc < 0)
		return rc;
	if (rc == 0)
		return -ENOENT;
	return lode_ns_get_linked_inode(t, d->ino, in);
}

int lode_ns_check_empty(struct lode_txn *t, uint64_t ino)
{
	int rc = lode_rec_dir_empty(t, ino);

	if (rc < 0)
		return rc;
	return rc ? 0 : -ENOTEMPTY;
}

int lode_ns_put_attr(struct lode_txn *t, uint64_t ino, const struct lode_disk_inode *in,
		     struct lode_wire_attr *attr)
{
	int rc = lode_rec_inode_put(t, ino, in);

	if (rc)
		return rc;
	lode_rec_to_attr(ino, in, attr);
	return 0;
}

bool lode_ns_stripe_holds(const uint32_t *targets, unsigned mirror_count, unsigned index,
			  uint32_t id)
{
	unsigned first = index - index % mirror_count;

	for (unsigned i = first; i < first + mirror_count; i++) {
		if (i != index && targets[i] == id)
			return true;
	}
	return false;
}

bool lode_ns_stripe_size_ok(uint32_t s)
{
	return s && s % LODE_CHUNK_SIZE == 0 && s <= (1u << 30);
}
