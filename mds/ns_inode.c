/* SPDX-License-Identifier: MIT */
/*
 * Operations on an inode that exists, found by name or number: LOOKUP, GETATTR, SETATTR,
 * OPEN, COMMIT, READLINK, and STATFS for the whole namespace. Each one checks everything
 * before it writes the inode back whole.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "ns_internal.h"

int lode_ns_lookup(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		   size_t len, struct lode_wire_attr *attr)
{
	struct lode_disk_inode dir, in;
	struct lode_disk_dirent d;
	int rc = lode_ns_find_entry(t, c, parent, name, len, &dir, &d, &in);

	if (rc)
		return rc;
	lode_rec_to_attr(d.ino, &in, attr);
	return 0;
}

int lode_ns_getattr(struct lode_txn *t, uint64_t ino, struct lode_wire_attr *attr)
{
	struct lode_disk_inode in;
	int rc = lode_rec_inode_get(t, ino, &in);

	if (rc)
		return rc;
	lode_rec_to_attr(ino, &in, attr);
	return 0;
}

/*
 * A write, truncate or chown by someone without CAP_FSETID clears setuid, and setgid when
 * the group may execute: Linux does it in the kernel, as root would, and through FUSE the
 * kernel asks for it as a mode change in the writer's name (lode-fuse cannot take over:
 * libfuse 3.14 lacks the handle_killpriv_v2 that would tell it which writes are whose).
 * So a non-owner may change the mode only by clearing those bits, and only if it may
 * write the file: it could clear them with a write anyway. 0 or -EPERM.
 */
static int kill_priv_only(const lode_cred *c, const struct lode_disk_inode *in, uint32_t mode)
{
	uint32_t cur = in->mode & 07777, want = mode & 07777;
	uint32_t gone = cur & ~want;

	if (!S_ISREG(in->mode) || (want & ~cur) || !gone || (gone & ~(uint32_t)(S_ISUID | S_ISGID)))
		return -EPERM;
	return lode_perm_may(c, in, LODE_MAY_W) ? -EPERM : 0;
}

int lode_ns_setattr(struct lode_txn *t, const struct lode_wire_setattr_req *req,
		    struct lode_wire_attr *attr)
{
	const lode_cred *c = &req->cred;
	uint32_t valid = req->valid;
	struct lode_disk_inode in;
	int64_t now = lode_ns_now();
	int rc;

	if (valid & ~LODE_SETATTR_ALL_)
		return -EINVAL;
	rc = lode_rec_inode_get(t, req->ino, &in);
	if (rc)
		return rc;

	/* check everything first, then apply */
	if ((valid & LODE_SETATTR_MODE) && !lode_perm_is_owner(c, &in)) {
		rc = kill_priv_only(c, &in, req->mode);
		if (rc)
			return rc;
	}
	if ((valid & LODE_SETATTR_UID) && c->uid != 0 && req->uid != in.uid)
		return -EPERM;
	if ((valid & LODE_SETATTR_GID) && c->uid != 0 && req->gid != in.gid &&
	    (c->uid != in.uid || !lode_perm_in_group(c, req->gid)))
		return -EPERM;
	if (valid & LODE_SETATTR_SIZE) {
		if (S_ISDIR(in.mode))
			return -EISDIR;
		if (!S_ISREG(in.mode))
			return -EINVAL;
		rc = lode_perm_may(c, &in, LODE_MAY_W);
		if (rc)
			return rc;
	}
	if ((valid & (LODE_SETATTR_ATIME | LODE_SETATTR_MTIME | LODE_SETATTR_CTIME)) &&
	    !lode_perm_is_owner(c, &in))
		return -EPERM;
	if ((valid & (LODE_SETATTR_ATIME_NOW | LODE_SETATTR_MTIME_NOW)) &&
	    !lode_perm_is_owner(c, &in)) {
		rc = lode_perm_may(c, &in, LODE_MAY_W);
		if (rc)
			return rc;
	}

	if (valid & LODE_SETATTR_MODE) {
		uint32_t gid = (valid & LODE_SETATTR_GID) ? req->gid : in.gid;

		in.mode = (in.mode & S_IFMT) | (req->mode & 07777);
		/* like Linux: a non-root caller outside the file's group cannot set setgid */
		if (c->uid != 0 && !lode_perm_in_group(c, gid) && !S_ISDIR(in.mode))
			in.mode &= ~(uint32_t)S_ISGID;
	}
	if (valid & (LODE_SETATTR_UID | LODE_SETATTR_GID)) {
		/* as chown(2) on Linux, even to the same owner: setuid goes, and setgid when the
		 * group may execute or the caller is neither root nor in the file's group */
		if (!S_ISDIR(in.mode) && !(valid & LODE_SETATTR_MODE)) {
			if ((in.mode & S_ISGID) &&
			    ((in.mode & S_IXGRP) ||
			     (c->uid != 0 && !lode_perm_in_group(c, in.gid))))
				in.mode &= ~(uint32_t)S_ISGID;
			in.mode &= ~(uint32_t)S_ISUID;
		}
		if (valid & LODE_SETATTR_UID)
			in.uid = req->uid;
		if (valid & LODE_SETATTR_GID)
			in.gid = req->gid;
	}
	if (valid & LODE_SETATTR_SIZE) {
		in.size = req->size;
		in.mtime_ns = now;
	}
	if (valid & LODE_SETATTR_ATIME_NOW)
		in.atime_ns = now;
	else if (valid & LODE_SETATTR_ATIME)
		in.atime_ns = req->atime_ns;
	if (valid & LODE_SETATTR_MTIME_NOW)
		in.mtime_ns = now;
	else if (valid & LODE_SETATTR_MTIME)
		in.mtime_ns = req->mtime_ns;
	in.ctime_ns = (valid & LODE_SETATTR_CTIME) ? req->ctime_ns : now;

	return lode_ns_put_attr(t, req->ino, &in, attr);
}

int lode_ns_open(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint32_t flags,
		 struct lode_wire_attr *attr, struct lode_wire_layout *layout)
{
	struct lode_disk_inode in;
	int mask = 0;
	int rc;

	if (flags & ~LODE_OPEN_ALL_)
		return -EINVAL;
	rc = lode_ns_get_named_inode(t, ino, &in);
	if (rc)
		return rc;
	if (S_ISLNK(in.mode))
		return -ELOOP;
	if (S_ISDIR(in.mode) && (flags & (LODE_OPEN_WRITE | LODE_OPEN_TRUNC)))
		return -EISDIR;
	/* FIFOs, sockets and devices have no data here: the kernel that opens them serves them */
	if (!S_ISREG(in.mode) && !S_ISDIR(in.mode))
		return -ENXIO;
	if (flags & LODE_OPEN_READ)
		mask |= LODE_MAY_R;
	if (flags & (LODE_OPEN_WRITE | LODE_OPEN_TRUNC))
		mask |= LODE_MAY_W;
	rc = lode_perm_may(c, &in, mask);
	if (rc)
		return rc;
	if (flags & LODE_OPEN_TRUNC) {
		in.size = 0;
		in.blocks_p1 = in.blocks_p1 ? 1 : 0;
		in.mtime_ns = in.ctime_ns = lode_ns_now();
		rc = lode_rec_inode_put(t, ino, &in);
		if (rc)
			return rc;
	}
	lode_rec_to_attr(ino, &in, attr);
	lode_rec_to_layout(&in, layout);
	return 0;
}

int lode_ns_commit(struct lode_txn *t, uint64_t ino, uint64_t size, bool extend, int64_t mtime_ns,
		   uint64_t blocks_p1, struct lode_wire_attr *attr)
{
	struct lode_disk_inode in;
	int64_t now = lode_ns_now();
	int rc = lode_ns_get_file(t, ino, -EINVAL, &in);

	if (rc)
		return rc;
	/* many writers each commit their own largest end: the file ends at the largest */
	if (!extend || size > in.size)
		in.size = size;
	if (blocks_p1)
		in.blocks_p1 = blocks_p1;
	in.mtime_ns = mtime_ns ? mtime_ns : now;
	in.ctime_ns = now;
	return lode_ns_put_attr(t, ino, &in, attr);
}

int lode_ns_readlink(struct lode_txn *t, uint64_t ino, char *buf, size_t cap, size_t *len)
{
	struct lode_disk_inode in;
	int rc = lode_rec_inode_get(t, ino, &in);

	if (rc)
		return rc;
	if (!S_ISLNK(in.mode))
		return -EINVAL;
	rc = lode_rec_symlink_get(t, ino, buf, cap, len);
	return rc == -ENOENT ? -EIO : rc;
}

int lode_ns_statfs(struct lode_txn *t, struct lode_placement *pl, uint64_t now_ms,
		   struct lode_wire_statfs_rep *out)
{
	struct lode_wire_statfs_rep s = {0};
	uint64_t files;
	int rc = lode_kv_count(t, LODE_DB_INODES, &files);

	if (rc)
		return rc;
	if (pl)
		lode_placement_totals(pl, now_ms, &s.bytes_total, &s.bytes_free, &s.targets_up,
				      &s.targets_total);
	/* inodes are only bounded by the map size: report a large free count, and a total
	 * that includes it (df -i expects free <= total) */
	s.files_free = UINT32_MAX;
	s.files = files + s.files_free;
	s.name_max = LODE_NAME_MAX;
	s.block_size = 4096;
	*out = s;
	return 0;
}
