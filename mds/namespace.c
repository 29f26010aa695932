/* SPDX-License-Identifier: MIT */
/*
 * Namespace operations. Each one reads what it needs from the txn, checks everything
 * (existence, types, permissions) before its first write where it can, and writes inodes
 * back whole. Inode records are re-read after any write that may have touched them (a
 * rename within one directory has old and new parent be the same inode), never kept
 * across a write to the same key.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "mds_spec.h"
#include "namespace.h"

#define KEY_MAX (8 + LODE_XATTR_NAME_MAX + 1)
#define MAY_R	4
#define MAY_W	2
#define MAY_X	1

int64_t lode_ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int lode_ns_name_check(const char *name, size_t len)
{
	if (len == 0)
		return -EINVAL;
	if (len > LODE_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return -EINVAL;
	return 0;
}

/* ---- records ---- */

static int get_inode(struct lode_txn *t, uint64_t ino, struct lode_disk_inode *out)
{
	unsigned char key[8];
	size_t len;
	int rc;

	lode_be64_put(key, ino);
	rc = lode_kv_get(t, LODE_DB_INODES, key, sizeof(key), out, sizeof(*out), &len);
	if (!rc && len != sizeof(*out))
		rc = -EIO;
	return rc;
}

/*
 * The inode of a call by number whose caller found the number under a name (OPEN, LINK).
 * An inode that is gone, or that no name leads to any more (deleted, or kept unlinked for
 * the orphan grace), makes that name stale: ESTALE, and the caller looks the name up
 * again. Otherwise a client that looked the name up a moment before another client
 * deleted or renamed over it would read the old file (close-to-open, as NFS gives it), or
 * give a name back to a file whose objects are already orphans.
 */
static int get_named_inode(struct lode_txn *t, uint64_t ino, struct lode_disk_inode *out)
{
	int rc = get_inode(t, ino, out);

	if (rc == -ENOENT || (!rc && out->nlink == 0))
		return -ESTALE;
	return rc;
}

static int put_inode(struct lode_txn *t, uint64_t ino, const struct lode_disk_inode *in)
{
	unsigned char key[8];

	lode_be64_put(key, ino);
	return lode_kv_put(t, LODE_DB_INODES, key, sizeof(key), in, sizeof(*in), 0);
}

static size_t dirent_key(unsigned char *key, uint64_t parent, const char *name, size_t len)
{
	lode_be64_put(key, parent);
	memcpy(key + 8, name, len);
	return 8 + len;
}

static int get_dirent(struct lode_txn *t, uint64_t parent, const char *name, size_t len,
		      struct lode_disk_dirent *out)
{
	unsigned char key[KEY_MAX];
	size_t klen = dirent_key(key, parent, name, len), vlen;
	int rc = lode_kv_get(t, LODE_DB_DIRENTS, key, klen, out, sizeof(*out), &vlen);

	if (!rc && vlen != sizeof(*out))
		rc = -EIO;
	return rc;
}

/* Adds name -> ino in dir (whose record the caller holds and writes back afterwards: the
 * new cookie is taken from dir->next_cookie). */
static int add_dirent(struct lode_txn *t, uint64_t parent, struct lode_disk_inode *dir,
		      const char *name, size_t len, uint64_t ino, uint32_t mode)
{
	unsigned char key[KEY_MAX], ckey[16];
	unsigned char cval[sizeof(struct lode_disk_dirent) + LODE_NAME_MAX];
	struct lode_disk_dirent d = {
	    .ino = ino, .cookie = dir->next_cookie++, .mode = mode & S_IFMT};
	size_t klen = dirent_key(key, parent, name, len);
	int rc;

	rc = lode_kv_put(t, LODE_DB_DIRENTS, key, klen, &d, sizeof(d), LODE_KV_NOOVERWRITE);
	if (rc)
		return rc;
	lode_be64_put(ckey, parent);
	lode_be64_put(ckey + 8, d.cookie);
	memcpy(cval, &d, sizeof(d));
	memcpy(cval + sizeof(d), name, len);
	return lode_kv_put(t, LODE_DB_COOKIES, ckey, sizeof(ckey), cval, sizeof(d) + len,
			   LODE_KV_NOOVERWRITE);
}

static int del_dirent(struct lode_txn *t, uint64_t parent, const char *name, size_t len,
		      const struct lode_disk_dirent *d)
{
	unsigned char key[KEY_MAX], ckey[16];
	size_t klen = dirent_key(key, parent, name, len);
	int rc = lode_kv_del(t, LODE_DB_DIRENTS, key, klen);

	if (rc)
		return rc;
	lode_be64_put(ckey, parent);
	lode_be64_put(ckey + 8, d->cookie);
	return lode_kv_del(t, LODE_DB_COOKIES, ckey, sizeof(ckey));
}

/* Points an existing entry at another inode, keeping its cookie (RENAME_EXCHANGE). */
static int retarget_dirent(struct lode_txn *t, uint64_t parent, const char *name, size_t len,
			   const struct lode_disk_dirent *old, uint64_t ino, uint32_t mode)
{
	unsigned char key[KEY_MAX], ckey[16];
	unsigned char cval[sizeof(struct lode_disk_dirent) + LODE_NAME_MAX];
	struct lode_disk_dirent d = *old;
	size_t klen = dirent_key(key, parent, name, len);
	int rc;

	d.ino = ino;
	d.mode = mode & S_IFMT;
	rc = lode_kv_put(t, LODE_DB_DIRENTS, key, klen, &d, sizeof(d), 0);
	if (rc)
		return rc;
	lode_be64_put(ckey, parent);
	lode_be64_put(ckey + 8, d.cookie);
	memcpy(cval, &d, sizeof(d));
	memcpy(cval + sizeof(d), name, len);
	return lode_kv_put(t, LODE_DB_COOKIES, ckey, sizeof(ckey), cval, sizeof(d) + len, 0);
}

static int stop_at_first(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	(void)k, (void)klen, (void)v, (void)vlen;
	*(int *)arg = 1;
	return 1;
}

/* 1 if the directory has no entries, 0 if it has some, or -errno. */
static int dir_empty(struct lode_txn *t, uint64_t ino)
{
	unsigned char prefix[8];
	int found = 0;
	int rc;

	lode_be64_put(prefix, ino);
	rc = lode_kv_scan(t, LODE_DB_DIRENTS, prefix, sizeof(prefix), NULL, 0, stop_at_first,
			  &found);
	return rc ? rc : !found;
}

static void to_wire_attr(uint64_t ino, const struct lode_disk_inode *in, struct lode_wire_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->size = in->size;
	a->blocks = S_ISDIR(in->mode) ? 8 : (in->size + 511) / 512;
	a->atime_ns = in->atime_ns;
	a->mtime_ns = in->mtime_ns;
	a->ctime_ns = in->ctime_ns;
	a->mode = in->mode;
	a->uid = in->uid;
	a->gid = in->gid;
	a->nlink = in->nlink;
	a->generation = S_ISREG(in->mode) ? in->layout.generation : 0;
}

static void to_wire_layout(const struct lode_disk_inode *in, struct lode_wire_layout *l)
{
	memset(l, 0, sizeof(*l));
	if (!S_ISREG(in->mode))
		return;
	l->stripe_size = in->layout.stripe_size;
	l->stripe_count = in->layout.stripe_count;
	l->mirror_count = in->layout.mirror_count;
	l->generation = in->layout.generation;
	memcpy(l->targets, in->layout.targets, sizeof(l->targets));
}

/* ---- permissions ---- */

static int may(const lode_cred *c, const struct lode_disk_inode *in, int mask)
{
	unsigned bits;

	if (c->uid == 0) {
		/* root executes only what someone may execute; directories are searchable */
		if ((mask & MAY_X) && !S_ISDIR(in->mode) && !(in->mode & 0111))
			return -EACCES;
		return 0;
	}
	if (c->uid == in->uid)
		bits = (in->mode >> 6) & 7;
	else if (c->gid == in->gid)
		bits = (in->mode >> 3) & 7;
	else
		bits = in->mode & 7;
	return ((int)bits & mask) == mask ? 0 : -EACCES;
}

static int is_owner(const lode_cred *c, const struct lode_disk_inode *in)
{
	return c->uid == 0 || c->uid == in->uid;
}

/* The sticky bit: only the entry's owner, the directory's owner or root may remove it. */
static int sticky_ok(const lode_cred *c, const struct lode_disk_inode *dir,
		     const struct lode_disk_inode *victim)
{
	if (!(dir->mode & S_ISVTX) || c->uid == 0 || c->uid == dir->uid || c->uid == victim->uid)
		return 0;
	return -EPERM;
}

/* Loads a directory the caller is about to look into (needs x) or change (needs w and x). */
static int get_dir(struct lode_txn *t, const lode_cred *c, uint64_t ino, int mask,
		   struct lode_disk_inode *dir)
{
	int rc = get_inode(t, ino, dir);

	if (rc)
		return rc;
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	return may(c, dir, mask);
}

/* ---- deletion ---- */

/* Returns 1 when objects were recorded, 0 when the file had none, or -errno. */
static int record_orphan(struct lode_txn *t, uint64_t ino, const struct lode_disk_inode *in)
{
	const struct lode_disk_layout *l = &in->layout;
	struct lode_disk_orphan o = {0};
	unsigned n = (unsigned)l->stripe_count * l->mirror_count;
	unsigned char key[16];
	int rc;

	for (unsigned i = 0; i < n && i < LODE_LAYOUT_TARGETS_MAX; i++) {
		if (l->targets[i])
			o.pending |= 1ull << i;
	}
	if (!o.pending)
		return 0;
	o.unlinked_ns = lode_ns_now();
	o.layout = *l;
	lode_be64_put(key, ino);
	lode_be64_put(key + 8, l->generation);
	rc = lode_kv_put(t, LODE_DB_ORPHANS, key, sizeof(key), &o, sizeof(o), 0);
	return rc ? rc : 1;
}

/*
 * Deletes an inode record and everything hanging off it. A regular file with objects is
 * not deleted yet: it stays, with nlink 0, until its objects are gone (the orphan grace
 * period, then every target's acknowledgement), so that a program that still has it open
 * can go on reading, writing and fstat-ing it, as POSIX lets it.
 */
static int delete_inode(struct lode_txn *t, uint64_t ino, const struct lode_disk_inode *in)
{
	unsigned char key[8];
	int rc;

	lode_be64_put(key, ino);
	if (S_ISREG(in->mode)) {
		rc = record_orphan(t, ino, in);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			struct lode_disk_inode kept = *in;

			kept.nlink = 0;
			kept.ctime_ns = lode_ns_now();
			return put_inode(t, ino, &kept);
		}
	}
	if (S_ISLNK(in->mode)) {
		rc = lode_kv_del(t, LODE_DB_SYMLINKS, key, sizeof(key));
		if (rc && rc != -ENOENT)
			return rc;
	}
	rc = lode_kv_del_prefix(t, LODE_DB_XATTRS, key, sizeof(key));
	if (rc)
		return rc;
	return lode_kv_del(t, LODE_DB_INODES, key, sizeof(key));
}

/* One name of ino went away: directories go at once (their single link), others when
 * nlink reaches 0. */
static int drop_link(struct lode_txn *t, uint64_t ino, int64_t now)
{
	struct lode_disk_inode in;
	int rc = get_inode(t, ino, &in);

	if (rc)
		return rc == -ENOENT ? -EIO : rc;
	if (S_ISDIR(in.mode) || in.nlink <= 1)
		return delete_inode(t, ino, &in);
	in.nlink--;
	in.ctime_ns = now;
	return put_inode(t, ino, &in);
}

/* Changes a directory's link count by delta and stamps mtime/ctime. */
static int touch_dir(struct lode_txn *t, uint64_t ino, int delta, int64_t now)
{
	struct lode_disk_inode dir;
	int rc = get_inode(t, ino, &dir);

	if (rc)
		return rc;
	dir.nlink = (uint32_t)((int)dir.nlink + delta);
	dir.mtime_ns = dir.ctime_ns = now;
	return put_inode(t, ino, &dir);
}

/* ---- operations ---- */

/* The entry `name` of directory `parent`, which the caller may search: the directory, the
 * entry and the inode it names. An entry whose inode is missing is corruption (-EIO). */
static int find_entry(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		      size_t len, struct lode_disk_inode *dir, struct lode_disk_dirent *d,
		      struct lode_disk_inode *in)
{
	int rc = lode_ns_name_check(name, len);

	if (rc)
		return rc;
	rc = get_dir(t, c, parent, MAY_X, dir);
	if (rc)
		return rc;
	rc = get_dirent(t, parent, name, len, d);
	if (rc)
		return rc;
	rc = get_inode(t, d->ino, in);
	return rc == -ENOENT ? -EIO : rc;
}

int lode_ns_lookup(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		   size_t len, struct lode_wire_attr *attr)
{
	struct lode_disk_inode dir, in;
	struct lode_disk_dirent d;
	int rc = find_entry(t, c, parent, name, len, &dir, &d, &in);

	if (rc)
		return rc;
	to_wire_attr(d.ino, &in, attr);
	return 0;
}

int lode_ns_getattr(struct lode_txn *t, uint64_t ino, struct lode_wire_attr *attr)
{
	struct lode_disk_inode in;
	int rc = get_inode(t, ino, &in);

	if (rc)
		return rc;
	to_wire_attr(ino, &in, attr);
	return 0;
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
	rc = get_inode(t, req->ino, &in);
	if (rc)
		return rc;

	/* check everything first, then apply */
	if ((valid & LODE_SETATTR_MODE) && !is_owner(c, &in))
		return -EPERM;
	if ((valid & LODE_SETATTR_UID) && c->uid != 0 && req->uid != in.uid)
		return -EPERM;
	if ((valid & LODE_SETATTR_GID) && c->uid != 0 && req->gid != in.gid &&
	    (c->uid != in.uid || req->gid != c->gid))
		return -EPERM;
	if (valid & LODE_SETATTR_SIZE) {
		if (S_ISDIR(in.mode))
			return -EISDIR;
		if (!S_ISREG(in.mode))
			return -EINVAL;
		rc = may(c, &in, MAY_W);
		if (rc)
			return rc;
	}
	if ((valid & (LODE_SETATTR_ATIME | LODE_SETATTR_MTIME | LODE_SETATTR_CTIME)) &&
	    !is_owner(c, &in))
		return -EPERM;
	if ((valid & (LODE_SETATTR_ATIME_NOW | LODE_SETATTR_MTIME_NOW)) && !is_owner(c, &in)) {
		rc = may(c, &in, MAY_W);
		if (rc)
			return rc;
	}

	if (valid & LODE_SETATTR_MODE) {
		uint32_t gid = (valid & LODE_SETATTR_GID) ? req->gid : in.gid;

		in.mode = (in.mode & S_IFMT) | (req->mode & 07777);
		/* like Linux: a non-root caller outside the file's group cannot set setgid */
		if (c->uid != 0 && c->gid != gid && !S_ISDIR(in.mode))
			in.mode &= ~(uint32_t)S_ISGID;
	}
	if (valid & (LODE_SETATTR_UID | LODE_SETATTR_GID)) {
		int changed = ((valid & LODE_SETATTR_UID) && req->uid != in.uid) ||
			      ((valid & LODE_SETATTR_GID) && req->gid != in.gid);

		if (valid & LODE_SETATTR_UID)
			in.uid = req->uid;
		if (valid & LODE_SETATTR_GID)
			in.gid = req->gid;
		/* a chown drops setuid, and setgid when it means "run as group" */
		if (changed && !S_ISDIR(in.mode) && !(valid & LODE_SETATTR_MODE)) {
			in.mode &= ~(uint32_t)S_ISUID;
			if (in.mode & S_IXGRP)
				in.mode &= ~(uint32_t)S_ISGID;
		}
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

	rc = put_inode(t, req->ino, &in);
	if (rc)
		return rc;
	to_wire_attr(req->ino, &in, attr);
	return 0;
}

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

static int valid_stripe_size(uint32_t s)
{
	return s && s % LODE_CHUNK_SIZE == 0 && s <= (1u << 30);
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
	if (!valid_stripe_size(l.stripe_size))
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
			/* never two mirrors of one stripe on one target */
			for (unsigned j = i - i % l.mirror_count; j < i; j++) {
				if (req->targets[j] == id)
					return -EINVAL;
			}
			l.targets[i] = id;
		}
	} else {
		if (!a->pl)
			return -ENOSPC;
		rc = lode_placement_choose(a->pl, a->now_ms, l.stripe_count, l.mirror_count,
					   &l.stripe_count, &l.mirror_count, l.targets);
		if (rc)
			return rc;
	}
	*out = l;
	return 0;
}

int lode_ns_open(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint32_t flags,
		 struct lode_wire_attr *attr, struct lode_wire_layout *layout)
{
	struct lode_disk_inode in;
	int mask = 0;
	int rc;

	if (flags & ~LODE_OPEN_ALL_)
		return -EINVAL;
	rc = get_named_inode(t, ino, &in);
	if (rc)
		return rc;
	if (S_ISLNK(in.mode))
		return -ELOOP;
	if (S_ISDIR(in.mode) && (flags & (LODE_OPEN_WRITE | LODE_OPEN_TRUNC)))
		return -EISDIR;
	if (flags & LODE_OPEN_READ)
		mask |= MAY_R;
	if (flags & (LODE_OPEN_WRITE | LODE_OPEN_TRUNC))
		mask |= MAY_W;
	rc = may(c, &in, mask);
	if (rc)
		return rc;
	if (flags & LODE_OPEN_TRUNC) {
		in.size = 0;
		in.mtime_ns = in.ctime_ns = lode_ns_now();
		rc = put_inode(t, ino, &in);
		if (rc)
			return rc;
	}
	to_wire_attr(ino, &in, attr);
	to_wire_layout(&in, layout);
	return 0;
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
	rc = lode_ns_name_check(a->name, a->name_len);
	if (rc)
		return rc;
	rc = get_dir(t, &a->cred, a->parent, MAY_X, &dir);
	if (rc)
		return rc;
	rc = get_dirent(t, a->parent, a->name, a->name_len, &d);
	if (rc == 0) {
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
	if (rc != -ENOENT)
		return rc;
	rc = may(&a->cred, &dir, MAY_W | MAY_X);
	if (rc)
		return rc;

	init_inode(&in, &a->cred, &dir, S_IFREG | (a->mode & 07777), now);
	rc = make_layout(a, &dir, &in.layout);
	if (rc)
		return rc;
	rc = lode_store_alloc_ino(t, &ino);
	if (!rc)
		rc = put_inode(t, ino, &in);
	if (!rc)
		rc = add_dirent(t, a->parent, &dir, a->name, a->name_len, ino, in.mode);
	if (rc)
		return rc;
	dir.mtime_ns = dir.ctime_ns = now;
	rc = put_inode(t, a->parent, &dir);
	if (rc)
		return rc;
	to_wire_attr(ino, &in, attr);
	to_wire_layout(&in, layout);
	*created = 1;
	return 0;
}

int lode_ns_commit(struct lode_txn *t, uint64_t ino, uint64_t size, int64_t mtime_ns,
		   struct lode_wire_attr *attr)
{
	struct lode_disk_inode in;
	int64_t now = lode_ns_now();
	int rc = get_inode(t, ino, &in);

	if (rc)
		return rc;
	if (!S_ISREG(in.mode))
		return -EINVAL;
	in.size = size;
	in.mtime_ns = mtime_ns ? mtime_ns : now;
	in.ctime_ns = now;
	rc = put_inode(t, ino, &in);
	if (rc)
		return rc;
	to_wire_attr(ino, &in, attr);
	return 0;
}

/* Common start of mkdir/symlink: parent writable, name free. */
static int prepare_new_entry(struct lode_txn *t, const lode_cred *c, uint64_t parent,
			     const char *name, size_t len, struct lode_disk_inode *dir)
{
	struct lode_disk_dirent d;
	int rc = lode_ns_name_check(name, len);

	if (rc)
		return rc;
	rc = get_dir(t, c, parent, MAY_X, dir);
	if (rc)
		return rc;
	rc = get_dirent(t, parent, name, len, &d);
	if (rc == 0)
		return -EEXIST;
	if (rc != -ENOENT)
		return rc;
	return may(c, dir, MAY_W | MAY_X);
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

	rc = lode_store_alloc_ino(t, &ino);
	if (!rc)
		rc = put_inode(t, ino, &in);
	if (!rc)
		rc = add_dirent(t, parent, &dir, name, len, ino, in.mode);
	if (rc)
		return rc;
	dir.nlink++;
	dir.mtime_ns = dir.ctime_ns = now;
	rc = put_inode(t, parent, &dir);
	if (rc)
		return rc;
	to_wire_attr(ino, &in, attr);
	return 0;
}

int lode_ns_symlink(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		    size_t len, const char *target, size_t target_len, struct lode_wire_attr *attr)
{
	struct lode_disk_inode dir, in;
	int64_t now = lode_ns_now();
	unsigned char key[8];
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

	rc = lode_store_alloc_ino(t, &ino);
	if (rc)
		return rc;
	lode_be64_put(key, ino);
	rc = lode_kv_put(t, LODE_DB_SYMLINKS, key, sizeof(key), target, target_len, 0);
	if (!rc)
		rc = put_inode(t, ino, &in);
	if (!rc)
		rc = add_dirent(t, parent, &dir, name, len, ino, in.mode);
	if (rc)
		return rc;
	dir.mtime_ns = dir.ctime_ns = now;
	rc = put_inode(t, parent, &dir);
	if (rc)
		return rc;
	to_wire_attr(ino, &in, attr);
	return 0;
}

int lode_ns_readlink(struct lode_txn *t, uint64_t ino, char *buf, size_t cap, size_t *len)
{
	struct lode_disk_inode in;
	unsigned char key[8];
	size_t vlen;
	int rc = get_inode(t, ino, &in);

	if (rc)
		return rc;
	if (!S_ISLNK(in.mode))
		return -EINVAL;
	lode_be64_put(key, ino);
	rc = lode_kv_get(t, LODE_DB_SYMLINKS, key, sizeof(key), buf, cap, &vlen);
	if (rc)
		return rc == -ENOENT ? -EIO : rc;
	if (vlen > cap)
		return -ERANGE;
	*len = vlen;
	return 0;
}

int lode_ns_link(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint64_t new_parent,
		 const char *name, size_t len, struct lode_wire_attr *attr)
{
	struct lode_disk_inode dir, in;
	int64_t now = lode_ns_now();
	int rc;

	rc = get_named_inode(t, ino, &in);
	if (rc)
		return rc;
	if (S_ISDIR(in.mode))
		return -EPERM;
	rc = prepare_new_entry(t, c, new_parent, name, len, &dir);
	if (rc)
		return rc;
	rc = add_dirent(t, new_parent, &dir, name, len, ino, in.mode);
	if (rc)
		return rc;
	dir.mtime_ns = dir.ctime_ns = now;
	rc = put_inode(t, new_parent, &dir);
	if (rc)
		return rc;
	in.nlink++;
	in.ctime_ns = now;
	rc = put_inode(t, ino, &in);
	if (rc)
		return rc;
	to_wire_attr(ino, &in, attr);
	return 0;
}

/* Common part of unlink and rmdir. */
static int remove_entry(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
			size_t len, int want_dir)
{
	struct lode_disk_inode dir, in;
	struct lode_disk_dirent d;
	int64_t now = lode_ns_now();
	int rc = find_entry(t, c, parent, name, len, &dir, &d, &in);

	if (rc)
		return rc;
	/* Linux's may_delete() order: permission, sticky bit, then the type */
	rc = may(c, &dir, MAY_W | MAY_X);
	if (!rc)
		rc = sticky_ok(c, &dir, &in);
	if (rc)
		return rc;
	if (want_dir && !S_ISDIR(in.mode))
		return -ENOTDIR;
	if (!want_dir && S_ISDIR(in.mode))
		return -EISDIR;
	if (want_dir) {
		rc = dir_empty(t, d.ino);
		if (rc < 0)
			return rc;
		if (!rc)
			return -ENOTEMPTY;
	}
	rc = del_dirent(t, parent, name, len, &d);
	if (!rc)
		rc = drop_link(t, d.ino, now);
	if (!rc)
		rc = touch_dir(t, parent, want_dir ? -1 : 0, now);
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
		rc = get_inode(t, ino, &in);
		if (rc)
			return rc == -ENOENT ? -EIO : rc;
		ino = in.parent;
	}
	return -ELOOP;
}

/* A directory moved from one parent to another: its parent pointer and both link counts. */
static int reparent_dir(struct lode_txn *t, uint64_t ino, uint64_t old_parent, uint64_t new_parent,
			int64_t now)
{
	struct lode_disk_inode in;
	int rc = get_inode(t, ino, &in);

	if (rc)
		return rc;
	in.parent = new_parent;
	in.ctime_ns = now;
	rc = put_inode(t, ino, &in);
	if (!rc)
		rc = touch_dir(t, old_parent, -1, now);
	if (!rc)
		rc = touch_dir(t, new_parent, +1, now);
	return rc;
}

static int set_ctime(struct lode_txn *t, uint64_t ino, int64_t now)
{
	struct lode_disk_inode in;
	int rc = get_inode(t, ino, &in);

	if (rc)
		return rc;
	in.ctime_ns = now;
	return put_inode(t, ino, &in);
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
	rc = retarget_dirent(t, op, on, ol, src, dst->ino, dst->mode);
	if (!rc)
		rc = retarget_dirent(t, np, nn, nl, dst, src->ino, src->mode);
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

		rc = get_inode(t, src->ino, &in);
		if (!rc) {
			in.parent = np;
			rc = put_inode(t, src->ino, &in);
		}
		if (!rc)
			rc = get_inode(t, dst->ino, &in);
		if (!rc) {
			in.parent = op;
			rc = put_inode(t, dst->ino, &in);
		}
	}
	if (!rc)
		rc = set_ctime(t, src->ino, now);
	if (!rc)
		rc = set_ctime(t, dst->ino, now);
	if (!rc)
		rc = touch_dir(t, op, 0, now);
	if (!rc && np != op)
		rc = touch_dir(t, np, 0, now);
	return rc;
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
	rc = lode_ns_name_check(on, ol);
	if (!rc)
		rc = lode_ns_name_check(nn, nl);
	if (rc)
		return rc;
	rc = get_dir(t, c, op, MAY_X, &odir);
	if (!rc)
		rc = get_dir(t, c, np, MAY_X, &ndir);
	if (rc)
		return rc;
	rc = get_dirent(t, op, on, ol, &src);
	if (rc)
		return rc;
	rc = get_dirent(t, np, nn, nl, &dst);
	if (rc && rc != -ENOENT)
		return rc;
	have_dst = rc == 0;
	if (have_dst && (flags & LODE_RENAME_NOREPLACE))
		return -EEXIST;
	if (!have_dst && (flags & LODE_RENAME_EXCHANGE))
		return -ENOENT;

	rc = may(c, &odir, MAY_W | MAY_X);
	if (!rc)
		rc = may(c, &ndir, MAY_W | MAY_X);
	if (rc)
		return rc;
	rc = get_inode(t, src.ino, &src_in);
	if (rc)
		return rc == -ENOENT ? -EIO : rc;
	rc = sticky_ok(c, &odir, &src_in);
	if (rc)
		return rc;
	if (have_dst) {
		rc = get_inode(t, dst.ino, &dst_in);
		if (rc)
			return rc == -ENOENT ? -EIO : rc;
		rc = sticky_ok(c, &ndir, &dst_in);
		if (rc)
			return rc;
	}
	/* both names already refer to the same inode: POSIX says do nothing */
	if (have_dst && src.ino == dst.ino)
		return 0;
	if (flags & LODE_RENAME_EXCHANGE)
		return rename_exchange(t, op, on, ol, &src, np, nn, nl, &dst, now);

	if (S_ISDIR(src.mode) && op != np) {
		/* its ".." changes: like Linux, moving a directory needs write permission on it */
		rc = may(c, &src_in, MAY_W);
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
		if (S_ISDIR(dst.mode)) {
			rc = dir_empty(t, dst.ino);
			if (rc < 0)
				return rc;
			if (!rc)
				return -ENOTEMPTY;
		}
		rc = del_dirent(t, np, nn, nl, &dst);
		if (!rc)
			rc = drop_link(t, dst.ino, now);
		if (!rc && S_ISDIR(dst.mode))
			rc = touch_dir(t, np, -1, now);
		if (rc)
			return rc;
	}
	rc = del_dirent(t, op, on, ol, &src);
	if (rc)
		return rc;
	/* the new name gets a fresh cookie, so a listing in progress may see it again under
	 * the new name but never misses an entry that stayed put */
	rc = get_inode(t, np, &ndir);
	if (!rc)
		rc = add_dirent(t, np, &ndir, nn, nl, src.ino, src.mode);
	if (!rc) {
		ndir.mtime_ns = ndir.ctime_ns = now;
		rc = put_inode(t, np, &ndir);
	}
	if (!rc && op != np)
		rc = touch_dir(t, op, 0, now);
	if (!rc && S_ISDIR(src.mode) && op != np)
		rc = reparent_dir(t, src.ino, op, np, now);
	else if (!rc)
		rc = set_ctime(t, src.ino, now);
	return rc;
}

/* ---- readdir ---- */

struct readdir_ctx {
	struct lode_txn *t;
	bool attrs; /* direntplus records */
	unsigned char *buf;
	size_t cap;
	size_t used;
	uint32_t count;
	uint32_t max;
	int more;
};

static int readdir_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct readdir_ctx *r = arg;
	struct lode_disk_dirent d;
	struct lode_wire_direntplus w = {0};
	size_t name_len, rec, fixed = r->attrs ? sizeof(w) : sizeof(w.d);
	const void *src = r->attrs ? (const void *)&w : (const void *)&w.d;

	(void)k;
	if (klen != 16 || vlen < sizeof(d) || vlen > sizeof(d) + LODE_NAME_MAX)
		return -EIO;
	if (r->count == r->max) {
		r->more = 1;
		return 1;
	}
	memcpy(&d, v, sizeof(d));
	name_len = vlen - sizeof(d);
	rec = r->attrs ? LODE_NS_DIRENTPLUS_REC(name_len) : LODE_NS_DIRENT_REC(name_len);
	if (r->used + rec > r->cap) {
		r->more = 1;
		return 1;
	}
	w.d.ino = d.ino;
	w.d.cookie = d.cookie;
	w.d.mode = d.mode;
	w.d.name_len = (uint16_t)name_len;
	if (r->attrs) {
		/* same snapshot as the entry: its inode must exist */
		int rc = lode_ns_getattr(r->t, d.ino, &w.attr);

		if (rc)
			return rc == -ENOENT ? -EIO : rc;
		if ((w.attr.mode & S_IFMT) != d.mode)
			return -EIO;
	}
	memcpy(r->buf + r->used, src, fixed);
	memcpy(r->buf + r->used + fixed, (const char *)v + sizeof(d), name_len);
	memset(r->buf + r->used + fixed + name_len, 0, rec - fixed - name_len);
	r->used += rec;
	r->count++;
	return 0;
}

static int readdir_page(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint64_t cookie,
			uint32_t max, bool attrs, void *buf, size_t cap, size_t *used,
			uint32_t *count, int *eof)
{
	struct readdir_ctx r = {.t = t, .attrs = attrs, .buf = buf, .cap = cap, .max = max};
	struct lode_disk_inode dir;
	unsigned char prefix[8], start[16];
	int rc;

	if (max == 0 || max > LODE_READDIR_MAX)
		return -EINVAL;
	rc = get_dir(t, c, ino, MAY_R, &dir);
	if (rc)
		return rc;
	if (cookie != UINT64_MAX) {
		lode_be64_put(prefix, ino);
		lode_be64_put(start, ino);
		lode_be64_put(start + 8, cookie + 1);
		rc = lode_kv_scan(t, LODE_DB_COOKIES, prefix, sizeof(prefix), start, sizeof(start),
				  readdir_one, &r);
		if (rc)
			return rc;
	}
	if (r.count == 0 && r.more)
		return -EINVAL; /* cap too small for even one entry */
	*used = r.used;
	*count = r.count;
	*eof = !r.more;
	return 0;
}

int lode_ns_readdir(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint64_t cookie,
		    uint32_t max, void *buf, size_t cap, size_t *used, uint32_t *count, int *eof)
{
	return readdir_page(t, c, ino, cookie, max, false, buf, cap, used, count, eof);
}

int lode_ns_readdirplus(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint64_t cookie,
			uint32_t max, void *buf, size_t cap, size_t *used, uint32_t *count,
			int *eof)
{
	return readdir_page(t, c, ino, cookie, max, true, buf, cap, used, count, eof);
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

/* ---- xattrs ---- */

enum xattr_ns { XNS_USER, XNS_TRUSTED, XNS_SECURITY };

static int xattr_namespace(const char *name, size_t len, enum xattr_ns *ns)
{
	if (len == 0 || len > LODE_XATTR_NAME_MAX || memchr(name, '\0', len))
		return len > LODE_XATTR_NAME_MAX ? -ERANGE : -EINVAL;
	/* a known prefix with nothing after it is an invalid name, as on Linux */
	if ((len == 5 && !memcmp(name, "user.", 5)) || (len == 8 && !memcmp(name, "trusted.", 8)) ||
	    (len == 9 && !memcmp(name, "security.", 9)))
		return -EINVAL;
	if (len > 5 && !memcmp(name, "user.", 5))
		*ns = XNS_USER;
	else if (len > 8 && !memcmp(name, "trusted.", 8))
		*ns = XNS_TRUSTED;
	else if (len > 9 && !memcmp(name, "security.", 9))
		*ns = XNS_SECURITY;
	else
		return -EOPNOTSUPP;
	return 0;
}

/* Linux's rules, minus capabilities: user.* follows the file's r/w bits (and exists only
 * on regular files and directories), trusted.* is root's, security.* may be read by anyone
 * and written by the owner. */
static int xattr_may(const lode_cred *c, const struct lode_disk_inode *in, enum xattr_ns ns,
		     int write)
{
	switch (ns) {
	case XNS_USER:
		if (!S_ISREG(in->mode) && !S_ISDIR(in->mode))
			return write ? -EPERM : -ENODATA;
		if (write && (in->mode & S_ISVTX) && S_ISDIR(in->mode) && !is_owner(c, in))
			return -EPERM;
		return may(c, in, write ? MAY_W : MAY_R);
	case XNS_TRUSTED:
		if (c->uid == 0)
			return 0;
		return write ? -EPERM : -ENODATA;
	case XNS_SECURITY:
		return !write || is_owner(c, in) ? 0 : -EPERM;
	}
	return -EOPNOTSUPP;
}

static int xattr_prep(struct lode_txn *t, const lode_cred *c, uint64_t ino, const char *name,
		      size_t len, int write, unsigned char *key, size_t *klen,
		      struct lode_disk_inode *in)
{
	enum xattr_ns ns;
	int rc = xattr_namespace(name, len, &ns);

	if (rc)
		return rc;
	rc = get_inode(t, ino, in);
	if (rc)
		return rc;
	rc = xattr_may(c, in, ns, write);
	if (rc)
		return rc;
	lode_be64_put(key, ino);
	memcpy(key + 8, name, len);
	*klen = 8 + len;
	return 0;
}

/*
 * "user.lode.layout": a directory's default layout for the files created in it from now on
 * (and the subdirectories made in it), or a file's layout, as text:
 * "stripe_size=1048576,stripe_count=4,mirror_count=2" (0: automatic). It is not stored as
 * an xattr: it reads and writes the inode's layout. Only the owner (or root) sets it, on a
 * directory; a file's layout is fixed at its creation.
 */
#define LAYOUT_XATTR "user.lode.layout"

static bool is_layout_xattr(const char *name, size_t len)
{
	return len == sizeof(LAYOUT_XATTR) - 1 && !memcmp(name, LAYOUT_XATTR, len);
}

static int layout_xattr_format(const struct lode_disk_inode *in, char *buf, size_t size)
{
	return snprintf(buf, size, "stripe_size=%u,stripe_count=%u,mirror_count=%u",
			(unsigned)in->layout.stripe_size, (unsigned)in->layout.stripe_count,
			(unsigned)in->layout.mirror_count);
}

/* Parses the text form; every key is optional (absent: 0, automatic). */
static int layout_xattr_parse(const void *value, size_t len, struct lode_disk_layout *out)
{
	char buf[128], *save = NULL, *tok;
	unsigned long v[3] = {0, 0, 0};
	static const char *const keys[3] = {"stripe_size", "stripe_count", "mirror_count"};

	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, value, len);
	buf[len] = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		int k;

		if (!eq)
			return -EINVAL;
		*eq = 0;
		for (k = 0; k < 3 && strcmp(tok, keys[k]); k++)
			;
		if (k == 3 || !eq[1])
			return -EINVAL;
		errno = 0;
		v[k] = strtoul(eq + 1, &end, 10);
		if (errno || *end || v[k] > UINT32_MAX)
			return -EINVAL;
	}
	if ((v[0] && !valid_stripe_size((uint32_t)v[0])) || v[1] > LODE_LAYOUT_TARGETS_MAX ||
	    v[2] > LODE_LAYOUT_TARGETS_MAX ||
	    (v[1] ? v[1] : 1) * (v[2] ? v[2] : 1) > LODE_LAYOUT_TARGETS_MAX)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->stripe_size = (uint32_t)v[0];
	out->stripe_count = (uint16_t)v[1];
	out->mirror_count = (uint16_t)v[2];
	return 0;
}

static int layout_xattr_set(struct lode_txn *t, const lode_cred *c, uint64_t ino, const void *value,
			    size_t len, uint32_t flags)
{
	struct lode_disk_inode in;
	struct lode_disk_layout l;
	int rc = get_inode(t, ino, &in);

	if (rc)
		return rc;
	if (!S_ISDIR(in.mode))
		return S_ISREG(in.mode) ? -EPERM : -EOPNOTSUPP; /* a file's layout is fixed */
	if (!is_owner(c, &in))
		return -EPERM;
	if (flags & LODE_XATTR_CREATE)
		return -EEXIST; /* every directory has one */
	rc = layout_xattr_parse(value, len, &l);
	if (rc)
		return rc;
	in.layout.stripe_size = l.stripe_size;
	in.layout.stripe_count = l.stripe_count;
	in.layout.mirror_count = l.mirror_count;
	in.ctime_ns = lode_ns_now();
	return put_inode(t, ino, &in);
}

static int layout_xattr_get(const struct lode_disk_inode *in, void *buf, size_t size, size_t *len)
{
	char text[128];
	int n;

	if (!S_ISDIR(in->mode) && !S_ISREG(in->mode))
		return -ENODATA;
	n = layout_xattr_format(in, text, sizeof(text));
	if (size && size < (size_t)n)
		return -ERANGE;
	if (size)
		memcpy(buf, text, (size_t)n);
	*len = (size_t)n;
	return 0;
}

int lode_ns_setxattr(struct lode_txn *t, const lode_cred *c, uint64_t ino, const char *name,
		     size_t name_len, const void *value, size_t value_len, uint32_t flags)
{
	struct lode_disk_inode in;
	unsigned char key[KEY_MAX];
	size_t klen, vlen;
	int rc;

	if (flags & ~(LODE_XATTR_CREATE | LODE_XATTR_REPLACE))
		return -EINVAL;
	if (value_len > LODE_XATTR_VALUE_MAX)
		return -E2BIG;
	if (is_layout_xattr(name, name_len))
		return layout_xattr_set(t, c, ino, value, value_len, flags);
	rc = xattr_prep(t, c, ino, name, name_len, 1, key, &klen, &in);
	if (rc)
		return rc;
	rc = lode_kv_get(t, LODE_DB_XATTRS, key, klen, NULL, 0, &vlen);
	if (rc && rc != -ENOENT)
		return rc;
	if (rc == 0 && (flags & LODE_XATTR_CREATE))
		return -EEXIST;
	if (rc == -ENOENT && (flags & LODE_XATTR_REPLACE))
		return -ENODATA;
	rc = lode_kv_put(t, LODE_DB_XATTRS, key, klen, value, value_len, 0);
	if (rc)
		return rc;
	in.ctime_ns = lode_ns_now();
	return put_inode(t, ino, &in);
}

int lode_ns_getxattr(struct lode_txn *t, const lode_cred *c, uint64_t ino, const char *name,
		     size_t name_len, void *buf, size_t size, size_t *len)
{
	struct lode_disk_inode in;
	unsigned char key[KEY_MAX];
	size_t klen, vlen;
	int rc = xattr_prep(t, c, ino, name, name_len, 0, key, &klen, &in);

	if (rc)
		return rc;
	if (is_layout_xattr(name, name_len))
		return layout_xattr_get(&in, buf, size, len);
	rc = lode_kv_get(t, LODE_DB_XATTRS, key, klen, NULL, 0, &vlen);
	if (rc)
		return rc == -ENOENT ? -ENODATA : rc;
	if (size && size < vlen)
		return -ERANGE;
	if (size) {
		rc = lode_kv_get(t, LODE_DB_XATTRS, key, klen, buf, size, &vlen);
		if (rc)
			return rc;
	}
	*len = vlen;
	return 0;
}

struct list_ctx {
	const lode_cred *c;
	char *buf;
	size_t size;
	size_t len;
};

static int list_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct list_ctx *l = arg;
	const char *name = (const char *)k + 8;
	size_t nlen = klen - 8;

	(void)v, (void)vlen;
	if (klen <= 8)
		return -EIO;
	if (l->c->uid != 0 && nlen > 8 && !memcmp(name, "trusted.", 8))
		return 0;
	if (l->size) {
		if (l->len + nlen + 1 > l->size)
			return -ERANGE;
		memcpy(l->buf + l->len, name, nlen);
		l->buf[l->len + nlen] = '\0';
	}
	l->len += nlen + 1;
	return 0;
}

int lode_ns_listxattr(struct lode_txn *t, const lode_cred *c, uint64_t ino, void *buf, size_t size,
		      size_t *len)
{
	struct list_ctx l = {.c = c, .buf = buf, .size = size};
	struct lode_disk_inode in;
	unsigned char prefix[8];
	int rc = get_inode(t, ino, &in);

	if (rc)
		return rc;
	lode_be64_put(prefix, ino);
	rc = lode_kv_scan(t, LODE_DB_XATTRS, prefix, sizeof(prefix), NULL, 0, list_one, &l);
	if (rc)
		return rc;
	*len = l.len;
	return 0;
}

int lode_ns_removexattr(struct lode_txn *t, const lode_cred *c, uint64_t ino, const char *name,
			size_t name_len)
{
	struct lode_disk_inode in;
	unsigned char key[KEY_MAX];
	size_t klen;
	int rc;

	if (is_layout_xattr(name, name_len))
		return layout_xattr_set(t, c, ino, "", 0, 0); /* back to automatic */
	rc = xattr_prep(t, c, ino, name, name_len, 1, key, &klen, &in);
	if (rc)
		return rc;
	rc = lode_kv_del(t, LODE_DB_XATTRS, key, klen);
	if (rc)
		return rc == -ENOENT ? -ENODATA : rc;
	in.ctime_ns = lode_ns_now();
	return put_inode(t, ino, &in);
}

/* ---- orphans ---- */

struct orphan_ctx {
	uint32_t target;
	int64_t before_ns;
	struct lode_wire_objid *out;
	uint32_t max;
	uint32_t n;
};

static int orphan_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct orphan_ctx *o = arg;
	struct lode_disk_orphan rec;
	unsigned mc;

	if (klen != 16 || vlen != sizeof(rec))
		return -EIO;
	memcpy(&rec, v, sizeof(rec));
	if (rec.unlinked_ns > o->before_ns)
		return 0;
	mc = rec.layout.mirror_count ? rec.layout.mirror_count : 1;
	for (unsigned s = 0; s < rec.layout.stripe_count; s++) {
		for (unsigned m = 0; m < mc; m++) {
			unsigned i = s * mc + m;

			if (i >= LODE_LAYOUT_TARGETS_MAX || rec.layout.targets[i] != o->target ||
			    !(rec.pending & (1ull << i)))
				continue;
			if (o->n == o->max)
				return 1;
			memset(&o->out[o->n], 0, sizeof(o->out[0]));
			o->out[o->n].ino = lode_be64_get(k);
			o->out[o->n].generation = lode_be64_get((const char *)k + 8);
			o->out[o->n].stripe = s;
			o->n++;
			break;
		}
	}
	return 0;
}

int lode_ns_orphan_list(struct lode_txn *t, uint32_t target_id, int64_t now_ns, int64_t grace_ns,
			struct lode_wire_objid *out, uint32_t max, uint32_t *n)
{
	struct orphan_ctx o = {
	    .target = target_id, .before_ns = now_ns - grace_ns, .out = out, .max = max};
	int rc;

	if (target_id == 0)
		return -EINVAL;
	rc = lode_kv_scan(t, LODE_DB_ORPHANS, NULL, 0, NULL, 0, orphan_one, &o);
	if (rc)
		return rc;
	*n = o.n;
	return 0;
}

/* The last object of an unlinked file is gone: so goes the inode it kept (nlink 0). */
static int forget_unlinked(struct lode_txn *t, uint64_t ino, uint64_t generation)
{
	struct lode_disk_inode in;
	unsigned char key[8];
	int rc = get_inode(t, ino, &in);

	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	if (in.nlink != 0 || !S_ISREG(in.mode) || in.layout.generation != generation)
		return 0;
	lode_be64_put(key, ino);
	rc = lode_kv_del_prefix(t, LODE_DB_XATTRS, key, sizeof(key));
	if (rc)
		return rc;
	return lode_kv_del(t, LODE_DB_INODES, key, sizeof(key));
}

int lode_ns_orphan_done(struct lode_txn *t, uint32_t target_id, const struct lode_wire_objid *ids,
			uint32_t n)
{
	for (uint32_t j = 0; j < n; j++) {
		struct lode_disk_orphan rec;
		unsigned char key[16];
		size_t vlen;
		unsigned mc;
		int rc;

		lode_be64_put(key, ids[j].ino);
		lode_be64_put(key + 8, ids[j].generation);
		rc = lode_kv_get(t, LODE_DB_ORPHANS, key, sizeof(key), &rec, sizeof(rec), &vlen);
		if (rc == -ENOENT)
			continue; /* acked twice: nothing left to do */
		if (!rc && vlen != sizeof(rec))
			rc = -EIO;
		if (rc)
			return rc;
		mc = rec.layout.mirror_count ? rec.layout.mirror_count : 1;
		for (unsigned m = 0; m < mc; m++) {
			uint64_t i = (uint64_t)ids[j].stripe * mc + m;

			if (i < LODE_LAYOUT_TARGETS_MAX && rec.layout.targets[i] == target_id)
				rec.pending &= ~(1ull << i);
		}
		if (rec.pending) {
			rc =
			    lode_kv_put(t, LODE_DB_ORPHANS, key, sizeof(key), &rec, sizeof(rec), 0);
		} else {
			rc = lode_kv_del(t, LODE_DB_ORPHANS, key, sizeof(key));
			if (!rc)
				rc = forget_unlinked(t, ids[j].ino, ids[j].generation);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- copies ---- */

static void to_layout_rep(uint64_t ino, const struct lode_disk_inode *in,
			  struct lode_wire_layout_rep *out)
{
	memset(out, 0, sizeof(*out));
	to_wire_attr(ino, in, &out->attr);
	to_wire_layout(in, &out->layout);
	out->degraded = S_ISREG(in->mode) ? in->degraded : 0;
}

int lode_ns_layout_get(struct lode_txn *t, uint64_t ino, struct lode_wire_layout_rep *out)
{
	struct lode_disk_inode in;
	int rc = get_inode(t, ino, &in);

	if (rc)
		return rc;
	to_layout_rep(ino, &in, out);
	return 0;
}

/*
 * Whether copy i is the last one of its stripe not marked degraded. Writers skip degraded
 * copies, so that one holds every acknowledged byte of the stripe, and a write that failed
 * on it was acknowledged nowhere: marking it too would let readers take any copy, a stale
 * one included.
 */
static bool last_good_copy(const struct lode_disk_layout *l, uint64_t degraded, uint32_t stripe,
			   unsigned i)
{
	for (unsigned m = 0; m < l->mirror_count; m++) {
		unsigned k = stripe * l->mirror_count + m;

		if (k != i && !(degraded & (1ull << k)))
			return false;
	}
	return true;
}

int lode_ns_report_copy(struct lode_txn *t, uint64_t ino, uint64_t generation, uint32_t stripe,
			uint32_t target_id)
{
	const struct lode_disk_layout *l;
	struct lode_disk_inode in;
	int rc = get_inode(t, ino, &in);

	if (rc)
		return rc;
	if (!S_ISREG(in.mode))
		return -ENOENT;
	l = &in.layout;
	if (l->generation != generation)
		return -ESTALE;
	if (stripe >= l->stripe_count)
		return -ENOENT;
	for (unsigned m = 0; m < l->mirror_count; m++) {
		unsigned i = stripe * l->mirror_count + m;

		if (l->targets[i] != target_id)
			continue;
		if (in.degraded & (1ull << i))
			return 0;
		if (last_good_copy(l, in.degraded, stripe, i))
			return -EBUSY;
		in.degraded |= 1ull << i;
		return put_inode(t, ino, &in);
	}
	return -ENOENT;
}

int lode_ns_set_copy(struct lode_txn *t, struct lode_placement *pl, uint64_t ino, uint32_t index,
		     uint32_t old_target, uint32_t new_target, struct lode_wire_layout_rep *out)
{
	struct lode_disk_layout *l;
	struct lode_disk_inode in;
	unsigned first;
	int rc = get_inode(t, ino, &in);

	if (rc)
		return rc;
	if (!S_ISREG(in.mode))
		return -EINVAL;
	l = &in.layout;
	if (index >= (unsigned)l->stripe_count * l->mirror_count)
		return -EINVAL;
	if (l->targets[index] != old_target)
		return -ESTALE; /* someone else repaired or moved it first */
	if (!pl || !lode_placement_known(pl, new_target))
		return -EINVAL;
	/* never two copies of one stripe on one target */
	first = index - index % l->mirror_count;
	for (unsigned i = first; i < first + l->mirror_count; i++)
		if (i != index && l->targets[i] == new_target)
			return -EINVAL;
	l->targets[index] = new_target;
	in.degraded &= ~(1ull << index);
	in.ctime_ns = lode_ns_now();
	rc = put_inode(t, ino, &in);
	if (rc)
		return rc;
	to_layout_rep(ino, &in, out);
	return 0;
}
