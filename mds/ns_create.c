/* SPDX-License-Identifier: MIT */
/*
 * How a name comes into being: CREATE (with the new file's layout), MKDIR, SYMLINK and
 * LINK. The parent must be writable and searchable and the name free; a new inode takes
 * its owner from the caller and its group (setgid) and default layout from the parent.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_internal.h"

/* A new inode's owner and group: setgid directories hand down their group. */
static void init_inode(struct lode_disk_inode *in, const lode_cred *c,
		       const struct lode_disk_inode *dir, uint32_t mode, int64_t now)
{
	memset(in, 0, sizeof(*in));
	in->mode = mode;
	in->uid = c->uid;
	in->gid = (dir->mode & S_ISGID) ? dir->gid : c->gid;
	in->nlink = 1;
	in->atime_ns = in->mtime_ns = in->ctime_ns = now;
}

/* The layout of a new file: the parent's default overridden by what the caller gave. */
static int make_layout(const struct lode_ns_create *a, const struct lode_disk_inode *dir,
		       struct lode_disk_layout *out)
{
	const struct lode_wire_layout *req = a->layout;
	struct lode_disk_layout l = {0};
	unsigned n;
	int rc;

	l.stripe_size = dir->layout.stripe_size ? dir->layout.stripe_size : 1u << 20;
	l.stripe_count = dir->layout.stripe_count;
	l.mirror_count = dir->layout.mirror_count; /* 0: automatic, see lode_placement_choose */
	if (req) {
		if (req->stripe_size)
			l.stripe_size = req->stripe_size;
		if (req->stripe_count)
			l.stripe_count = req->stripe_count;
		if (req->mirror_count)
			l.mirror_count = req->mirror_count;
	}
	if (!lode_ns_stripe_size_ok(l.stripe_size))
		return -EINVAL;
	if ((unsigned)l.stripe_count * l.mirror_count > LODE_LAYOUT_TARGETS_MAX)
		return -EINVAL;
	l.generation = 1;

	if (req && a->has_targets) {
		if (!l.mirror_count)
			return -EINVAL;
		if (!req->stripe_count)
			return -EINVAL;
		n = (unsigned)l.stripe_count * l.mirror_count;
		for (unsigned i = 0; i < LODE_LAYOUT_TARGETS_MAX; i++) {
			uint32_t id = req->targets[i];

			if (i >= n) {
				if (id)
					return -EINVAL;
				continue;
			}
			if (!id || !a->pl || !lode_placement_known(a->pl, id))
				return -EINVAL;
			if (lode_ns_stripe_holds(req->targets, l.mirror_count, i, id))
				return -EINVAL;
			l.targets[i] = id;
		}
	} else {
		rc = a->pl ? lode_placement_choose(a->pl, a->now_ms, l.stripe_count, l.mirror_count,
						   &l.stripe_count, &l.mirror_count, l.targets)
			   : -EAGAIN;
		if (rc) {
			if (a->place_err)
				*a->place_err = rc;
			return rc;
		}
	}
	*out = l;
	return 0;
}

/* Common start of mkdir/symlink/link: parent writable, name free. */
static int prepare_new_entry(struct lode_txn *t, const lode_cred *c, uint64_t parent,
			     const char *name, size_t len, struct lode_disk_inode *dir)
{
	struct lode_disk_dirent d;
	int rc = lode_ns_look_in(t, c, parent, name, len, dir, &d);

	if (rc < 0)
		return rc;
	if (rc == 1)
		return -EEXIST;
	return lode_perm_may(c, dir, LODE_MAY_W | LODE_MAY_X);
}

/* Enters ino under `name` in dir, whose record the caller read and this writes back with
 * the new cookie, one more link for a subdirectory, and the times. */
static int enter_name(struct lode_txn *t, uint64_t parent, struct lode_disk_inode *dir,
		      const char *name, size_t len, uint64_t ino, uint32_t mode, int64_t now)
{
	int rc = lode_rec_dirent_add(t, parent, dir, name, len, ino, mode);

	if (rc)
		return rc;
	if (S_ISDIR(mode))
		dir->nlink++;
	dir->mtime_ns = dir->ctime_ns = now;
	return lode_rec_inode_put(t, parent, dir);
}

/* Stores the new inode `in` under a fresh number (a symlink with its target, in->size
 * bytes) and enters it in dir as enter_name() does. */
static int add_inode(struct lode_txn *t, uint64_t parent, struct lode_disk_inode *dir,
		     const char *name, size_t len, const struct lode_disk_inode *in,
		     const char *target, int64_t now, uint64_t *ino)
{
	uint64_t n;
	int rc = lode_store_alloc_ino(t, &n);

	if (rc)
		return rc;
	if (S_ISLNK(in->mode))
		rc = lode_rec_symlink_put(t, n, target, in->size);
	if (!rc)
		rc = lode_rec_inode_put(t, n, in);
	if (!rc)
		rc = enter_name(t, parent, dir, name, len, n, in->mode, now);
	if (!rc)
		*ino = n;
	return rc;
}

int lode_ns_create(struct lode_txn *t, const struct lode_ns_create *a, struct lode_wire_attr *attr,
		   struct lode_wire_layout *layout, int *created)
{
	struct lode_disk_inode dir, in;
	struct lode_disk_dirent d;
	int64_t now = lode_ns_now();
	uint64_t ino;
	int rc;

	if (a->flags & ~LODE_OPEN_ALL_)
		return -EINVAL;
	rc = lode_ns_look_in(t, &a->cred, a->parent, a->name, a->name_len, &dir, &d);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		if ((a->flags & LODE_OPEN_EXCL) || !(a->flags & LODE_OPEN_CREATE))
			return -EEXIST;
		if (S_ISDIR(d.mode))
			return -EISDIR;
		rc = lode_ns_open(t, &a->cred, d.ino,
				  a->flags & ~(LODE_OPEN_EXCL | LODE_OPEN_CREATE), attr, layout);
		if (rc)
			return rc;
		*created = 0;
		return 0;
	}
	rc = lode_perm_may(&a->cred, &dir, LODE_MAY_W | LODE_MAY_X);
	if (rc)
		return rc;

	init_inode(&in, &a->cred, &dir, S_IFREG | (a->mode & 07777), now);
	rc = make_layout(a, &dir, &in.layout);
	if (rc)
		return rc;
	rc = add_inode(t, a->parent, &dir, a->name, a->name_len, &in, NULL, now, &ino);
	if (rc)
		return rc;
	lode_rec_to_attr(ino, &in, attr);
	lode_rec_to_layout(&in, layout);
	*created = 1;
	return 0;
}

int lode_ns_mkdir(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		  size_t len, uint32_t mode, struct lode_wire_attr *attr)
{
	struct lode_disk_inode dir, in;
	int64_t now = lode_ns_now();
	uint64_t ino;
	int rc = prepare_new_entry(t, c, parent, name, len, &dir);

	if (rc)
		return rc;
	init_inode(&in, c, &dir, S_IFDIR | (mode & 07777) | (dir.mode & S_ISGID), now);
	in.nlink = 2;
	in.parent = parent;
	in.next_cookie = LODE_MDS_FIRST_COOKIE;
	/* children inherit the default layout (targets are never part of a default) */
	in.layout.stripe_size = dir.layout.stripe_size;
	in.layout.stripe_count = dir.layout.stripe_count;
	in.layout.mirror_count = dir.layout.mirror_count;

	rc = add_inode(t, parent, &dir, name, len, &in, NULL, now, &ino);
	if (rc)
		return rc;
	lode_rec_to_attr(ino, &in, attr);
	return 0;
}

int lode_ns_mknod(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		  size_t len, uint32_t mode, uint32_t rdev, struct lode_wire_attr *attr)
{
	struct lode_disk_inode dir, in;
	int64_t now = lode_ns_now();
	uint32_t type = mode & S_IFMT;
	uint64_t ino;
	int rc;

	if (type != S_IFIFO && type != S_IFSOCK && type != S_IFCHR && type != S_IFBLK)
		return -EINVAL;
	/* a device node opens a device on whatever machine mounts it: root only, as Linux
	 * asks CAP_MKNOD */
	if ((type == S_IFCHR || type == S_IFBLK) && c->uid != 0)
		return -EPERM;
	rc = prepare_new_entry(t, c, parent, name, len, &dir);
	if (rc)
		return rc;
	init_inode(&in, c, &dir, type | (mode & 07777), now);
	/* as in a setgid directory on Linux: setgid is kept only by a member of the group */
	if ((in.mode & S_ISGID) && c->uid != 0 && !lode_perm_in_group(c, in.gid))
		in.mode &= ~(uint32_t)S_ISGID;
	if (type == S_IFCHR || type == S_IFBLK)
		in.rdev = rdev;

	rc = add_inode(t, parent, &dir, name, len, &in, NULL, now, &ino);
	if (rc)
		return rc;
	lode_rec_to_attr(ino, &in, attr);
	return 0;
}

int lode_ns_symlink(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		    size_t len, const char *target, size_t target_len, struct lode_wire_attr *attr)
{
	struct lode_disk_inode dir, in;
	int64_t now = lode_ns_now();
	uint64_t ino;
	int rc;

	if (target_len == 0)
		return -ENOENT;
	if (target_len > LODE_SYMLINK_MAX)
		return -ENAMETOOLONG;
	if (memchr(target, '\0', target_len))
		return -EINVAL;
	rc = prepare_new_entry(t, c, parent, name, len, &dir);
	if (rc)
		return rc;
	init_inode(&in, c, &dir, S_IFLNK | 0777, now);
	in.size = target_len;

	rc = add_inode(t, parent, &dir, name, len, &in, target, now, &ino);
	if (rc)
		return rc;
	lode_rec_to_attr(ino, &in, attr);
	return 0;
}

int lode_ns_link(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint64_t new_parent,
		 const char *name, size_t len, struct lode_wire_attr *attr)
{
	struct lode_disk_inode dir, in;
	int64_t now = lode_ns_now();
	int rc;

	rc = lode_ns_get_named_inode(t, ino, &in);
	if (rc)
		return rc;
	if (S_ISDIR(in.mode))
		return -EPERM;
	rc = prepare_new_entry(t, c, new_parent, name, len, &dir);
	if (rc)
		return rc;
	rc = enter_name(t, new_parent, &dir, name, len, ino, in.mode, now);
	if (rc)
		return rc;
	in.nlink++;
	in.ctime_ns = now;
	return lode_ns_put_attr(t, ino, &in, attr);
}
