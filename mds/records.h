/* SPDX-License-Identifier: MIT */
/*
 * lode_rec: the namespace's LMDB records, read and written whole. This is the one place
 * that builds their keys (mds_spec.h gives the layouts) and the one place that checks what
 * comes back from the disk: a value or key of the wrong size is -EIO, never read past, so
 * a damaged data directory gives errors, not crashes. It also says what the wire shows of
 * an inode.
 *
 * Every function runs in the caller's txn and returns 0 or a negative errno (-ENOENT when
 * the key is absent); output parameters are written only on success. Names are (ptr, len)
 * pairs the caller has already checked.
 */
#ifndef LODE_MDS_RECORDS_H
#define LODE_MDS_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "mds_spec.h"
#include "store.h"
#include "wire_spec.h"

/* The longest key: an inode number and a name (dirents, xattrs). */
#define LODE_REC_KEY_MAX (8 + LODE_XATTR_NAME_MAX + 1)

/* ---- inodes ---- */

/* An inode's record as stored (mds_spec.h): the struct cut after its last target in use.
 * Fills buf (sizeof(struct lode_disk_inode) bytes at least); returns the length. */
size_t lode_rec_inode_encode(const struct lode_disk_inode *in, void *buf);
/* A stored inode record, of any length encode gives (version 1's whole struct included),
 * into out with the targets left off as zero. -EIO for another length. */
int lode_rec_inode_decode(const void *v, size_t vlen, struct lode_disk_inode *out);

/* -ENOENT if absent; -EIO if damaged: a length decode refuses, or a regular file whose
 * stripe and mirror counts are 0 or address more than LODE_LAYOUT_TARGETS_MAX copies. */
int lode_rec_inode_get(struct lode_txn *t, uint64_t ino, struct lode_disk_inode *out);
int lode_rec_inode_put(struct lode_txn *t, uint64_t ino, const struct lode_disk_inode *in);
/* Deletes the inode record and its xattrs (not a symlink's target: lode_rec_symlink_del). */
int lode_rec_inode_erase(struct lode_txn *t, uint64_t ino);

/* ---- directory entries (dirents, and their cookies for readdir) ---- */

int lode_rec_dirent_get(struct lode_txn *t, uint64_t parent, const char *name, size_t len,
			struct lode_disk_dirent *out);
/* Adds name -> ino in dir (whose record the caller holds and writes back afterwards: the
 * new cookie is taken from dir->next_cookie). -EEXIST if the name is taken. */
int lode_rec_dirent_add(struct lode_txn *t, uint64_t parent, struct lode_disk_inode *dir,
			const char *name, size_t len, uint64_t ino, uint32_t mode);
/* Removes the entry d found under name, and its cookie. */
int lode_rec_dirent_del(struct lode_txn *t, uint64_t parent, const char *name, size_t len,
			const struct lode_disk_dirent *d);
/* Points an existing entry at another inode, keeping its cookie (RENAME_EXCHANGE). */
int lode_rec_dirent_retarget(struct lode_txn *t, uint64_t parent, const char *name, size_t len,
			     const struct lode_disk_dirent *old, uint64_t ino, uint32_t mode);
/* 1 if the directory has no entries, 0 if it has some, or -errno. */
int lode_rec_dir_empty(struct lode_txn *t, uint64_t ino);

/* The cookies key of (parent, cookie): where a listing from that cookie starts. */
void lode_rec_cookie_key(unsigned char key[16], uint64_t parent, uint64_t cookie);
/* A cookies record met in a scan: its entry and name (pointing into v). -EIO if damaged,
 * a name that is not a valid path component included (it would go out in a readdir page
 * that every client refuses). */
int lode_rec_cookie_decode(const void *k, size_t klen, const void *v, size_t vlen,
			   struct lode_disk_dirent *d, const char **name, size_t *name_len);

/* ---- symlink targets ---- */

int lode_rec_symlink_put(struct lode_txn *t, uint64_t ino, const char *target, size_t len);
/* Copies the target into buf; -ERANGE if it is longer than cap. */
int lode_rec_symlink_get(struct lode_txn *t, uint64_t ino, char *buf, size_t cap, size_t *len);
int lode_rec_symlink_del(struct lode_txn *t, uint64_t ino);

/* ---- xattrs ---- */

/* The key of xattr `name` of ino into key (LODE_REC_KEY_MAX bytes); returns its length. */
size_t lode_rec_xattr_key(unsigned char *key, uint64_t ino, const char *name, size_t len);
/* An xattrs key met in a scan: the name (pointing into k). -EIO if damaged. */
int lode_rec_xattr_key_decode(const void *k, size_t klen, const char **name, size_t *len);

/* ---- orphans ---- */

int lode_rec_orphan_get(struct lode_txn *t, uint64_t ino, uint64_t generation,
			struct lode_disk_orphan *out);
int lode_rec_orphan_put(struct lode_txn *t, uint64_t ino, uint64_t generation,
			const struct lode_disk_orphan *o);
int lode_rec_orphan_del(struct lode_txn *t, uint64_t ino, uint64_t generation);
/* An orphans record met in a scan. -EIO if damaged. */
int lode_rec_orphan_decode(const void *k, size_t klen, const void *v, size_t vlen, uint64_t *ino,
			   uint64_t *generation, struct lode_disk_orphan *out);

/* ---- moves (of copies: MOVE) ---- */

int lode_rec_move_get(struct lode_txn *t, uint64_t ino, uint64_t generation, uint32_t stripe,
		      uint32_t target, struct lode_disk_move *out);
int lode_rec_move_put(struct lode_txn *t, uint64_t ino, uint64_t generation, uint32_t stripe,
		      uint32_t target, const struct lode_disk_move *m);
int lode_rec_move_del(struct lode_txn *t, uint64_t ino, uint64_t generation, uint32_t stripe,
		      uint32_t target);
/* A moves record met in a scan. -EIO if damaged. */
int lode_rec_move_decode(const void *k, size_t klen, const void *v, size_t vlen,
			 struct lode_wire_move_entry *e, struct lode_disk_move *out);

/* ---- what the wire shows ---- */

void lode_rec_to_attr(uint64_t ino, const struct lode_disk_inode *in, struct lode_wire_attr *a);
/* A regular file's layout; all zero for others. */
void lode_rec_to_layout(const struct lode_disk_inode *in, struct lode_wire_layout *l);
/* Attributes, layout and degraded copies. */
void lode_rec_to_layout_rep(uint64_t ino, const struct lode_disk_inode *in,
			    struct lode_wire_layout_rep *out);

#endif
