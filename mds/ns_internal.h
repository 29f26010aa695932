/* SPDX-License-Identifier: MIT */
/*
 * What the namespace's source files (namespace.c, ns_*.c) share and handlers.c does not
 * see: loading the directories and entries an operation works on, link counts, deletion,
 * and the layout rules. As in namespace.h: the caller's txn, 0 or a negative errno. Unlike
 * it, the loaders (get_*, look_in, find_entry) may have filled their output records when
 * they fail; callers pass locals they drop on error.
 */
#ifndef LODE_MDS_NS_INTERNAL_H
#define LODE_MDS_NS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "mds_spec.h"
#include "namespace.h"
#include "perm.h"
#include "records.h"

/* ---- namespace.c: loading what an operation works on ---- */

/* The inode of a call by number whose caller found the number under a name: -ESTALE when
 * it is gone or no name leads to it any more. */
int lode_ns_get_named_inode(struct lode_txn *t, uint64_t ino, struct lode_disk_inode *out);
/* Loads a regular file; another kind of inode is not_file (each operation says which
 * -errno that is for it). */
int lode_ns_get_file(struct lode_txn *t, uint64_t ino, int not_file, struct lode_disk_inode *in);
/* Loads a directory the caller is about to look into (mask LODE_MAY_X) or change
 * (LODE_MAY_W | LODE_MAY_X): -ENOTDIR, -EACCES. */
int lode_ns_get_dir(struct lode_txn *t, const lode_cred *c, uint64_t ino, int mask,
		    struct lode_disk_inode *dir);
/* An inode the namespace points at (from an entry or a parent pointer): one that is missing
 * is a damaged namespace, -EIO. */
int lode_ns_get_linked_inode(struct lode_txn *t, uint64_t ino, struct lode_disk_inode *out);
/* Looks for `name` in directory `parent`, which c may search: 1 when it is there (*d is its
 * entry), 0 when it is not, or -errno (a bad name, no such directory, no x permission). */
int lode_ns_look_in(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		    size_t len, struct lode_disk_inode *dir, struct lode_disk_dirent *d);
/* The entry `name` of directory `parent`, which c may search: the directory, the entry and
 * the inode it names (-ENOENT when there is no such entry). */
int lode_ns_find_entry(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		       size_t len, struct lode_disk_inode *dir, struct lode_disk_dirent *d,
		       struct lode_disk_inode *in);
/* Changes a directory's link count by delta and stamps mtime/ctime. */
int lode_ns_touch_dir(struct lode_txn *t, uint64_t ino, int delta, int64_t now);
/* 0 if directory ino has no entries, -ENOTEMPTY if it has, or -errno. */
int lode_ns_check_empty(struct lode_txn *t, uint64_t ino);
/* Writes inode `in` back whole and gives its attributes. */
int lode_ns_put_attr(struct lode_txn *t, uint64_t ino, const struct lode_disk_inode *in,
		     struct lode_wire_attr *attr);
/* Whether a copy of the stripe of copy `index` other than that one is on target id: a
 * layout never puts two copies of one stripe on one target. mirror_count > 0. */
bool lode_ns_stripe_holds(const uint32_t *targets, unsigned mirror_count, unsigned index,
			  uint32_t id);
/* A stripe size a layout may have: a whole number of chunks, at most 1 GiB. */
bool lode_ns_stripe_size_ok(uint32_t s);

/* ---- ns_remove.c: names and inodes going away ---- */

/* One name of ino went away: directories go at once (their single link), others when
 * nlink reaches 0. */
int lode_ns_drop_link(struct lode_txn *t, uint64_t ino, int64_t now);
/* Takes `name` (its entry d) out of directory parent and drops the link it held; a
 * directory (is_dir) must be empty (-ENOTEMPTY). The caller updates parent's link count
 * and times. */
int lode_ns_unname(struct lode_txn *t, uint64_t parent, const char *name, size_t len,
		   const struct lode_disk_dirent *d, bool is_dir, int64_t now);

/* ---- ns_orphan.c ---- */

/* Records the objects of a file being deleted for their targets to delete. Returns 1 when
 * objects were recorded, 0 when the file had none, or -errno. */
int lode_ns_orphan_record(struct lode_txn *t, uint64_t ino, const struct lode_disk_inode *in);

/* ---- ns_layout_xattr.c: the virtual xattr "user.lode.layout" ---- */

int lode_ns_layout_xattr_set(struct lode_txn *t, const lode_cred *c, uint64_t ino,
			     const void *value, size_t len, uint32_t flags);
int lode_ns_layout_xattr_get(const struct lode_disk_inode *in, void *buf, size_t size, size_t *len);

#endif
