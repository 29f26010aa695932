/* SPDX-License-Identifier: MIT */
/*
 * lode_ns: the namespace operations of lode-mds, on top of lode_store.
 *
 * Every function runs inside the caller's transaction (read-only for lookups, a write txn
 * for changes; the writer wraps each change in a nested txn so a failure leaves nothing
 * behind) and returns 0 or a negative errno, the one a local Linux file system would give
 * (ENOENT, EEXIST, ENOTDIR, EISDIR, ENOTEMPTY, ENAMETOOLONG, EPERM, EACCES, EINVAL,
 * ENODATA, ERANGE, ...). Output parameters are written only on success. A failed write
 * operation may have written part of its change into the txn: abort it.
 *
 * Permissions come from the wire cred (uid, gid; supplementary groups are not known):
 * uid 0 bypasses them (but needs one x bit to "execute" a non-directory); lookups need
 * search (x) permission on the directory; creating, removing and renaming need write and
 * search permission on the parent(s), and the sticky bit restricts removal to the owner
 * of the entry or of the directory.
 *
 * Names are (ptr, len) pairs, not NUL-terminated: 1..LODE_NAME_MAX bytes, no '/', no NUL,
 * not "." or ".." (-EINVAL; -ENAMETOOLONG past LODE_NAME_MAX).
 *
 * The operations live in ns_*.c, one concern a file (ns_inode, ns_create, ns_remove,
 * ns_rename, ns_readdir, ns_xattr, ns_layout_xattr, ns_orphan, ns_copies, ns_fsck), on top of
 * namespace.c (what they share, ns_internal.h), records.c (the LMDB records) and perm.c.
 */
#ifndef LODE_MDS_NAMESPACE_H
#define LODE_MDS_NAMESPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "placement.h"
#include "store.h"
#include "wire_spec.h"

/* One readdir record: struct lode_wire_dirent, the name, zero padding to 8 bytes. */
#define LODE_NS_DIRENT_REC(name_len)                                                               \
	((sizeof(struct lode_wire_dirent) + (size_t)(name_len) + 7) & ~(size_t)7)
#define LODE_NS_DIRENT_REC_MAX LODE_NS_DIRENT_REC(LODE_NAME_MAX)
/* With attributes: struct lode_wire_direntplus, the name, zero padding to 8 bytes. */
#define LODE_NS_DIRENTPLUS_REC(name_len)                                                           \
	((sizeof(struct lode_wire_direntplus) + (size_t)(name_len) + 7) & ~(size_t)7)
#define LODE_NS_DIRENTPLUS_REC_MAX LODE_NS_DIRENTPLUS_REC(LODE_NAME_MAX)
/* One TARGET_LIST record: struct lode_wire_target, the address, zero padding to 8. */
#define LODE_NS_TARGET_REC(addr_len)                                                               \
	((sizeof(struct lode_wire_target) + (size_t)(addr_len) + 7) & ~(size_t)7)

/* Orphans are listed only once they are this old, so readers that had the file open when
 * it was unlinked or replaced keep reading for a while (no open-handle tracking yet). */
#define LODE_NS_ORPHAN_GRACE_NS (60ll * 1000000000)
/* The old copy of a moved stripe is listed this long after the move at the least, whatever
 * the grace: a reader trusts a layout checked within the last LODE_LAYOUT_RECHECK_MS (1 s,
 * client/io.h) and reads the old copy meanwhile; were it deleted, its reads would come
 * back short and read as a hole. A grace of a second or less (tests) allowed that. */
#define LODE_NS_MOVED_GRACE_MIN_NS (3ll * 1000000000)

typedef struct lode_wire_cred lode_cred;

int lode_ns_lookup(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		   size_t len, struct lode_wire_attr *attr);
int lode_ns_getattr(struct lode_txn *t, uint64_t ino, struct lode_wire_attr *attr);
/* SETATTR as the wire request says (req->ino, req->cred, req->valid, ...). Returns the attr
 * after the change. */
int lode_ns_setattr(struct lode_txn *t, const struct lode_wire_setattr_req *req,
		    struct lode_wire_attr *attr);

struct lode_ns_create {
	uint64_t parent;
	lode_cred cred;
	const char *name;
	size_t name_len;
	uint32_t mode;	/* permission bits (S_IFMT ignored) */
	uint32_t flags; /* LODE_OPEN_* */
	/* NULL: the parent's default layout. Otherwise its non-zero stripe_size, stripe_count,
	 * mirror_count override the default; with has_targets the caller's targets are used
	 * (all must be known targets, mirrors of a stripe distinct). */
	const struct lode_wire_layout *layout;
	int has_targets;
	struct lode_placement *pl; /* NULL: no target is known (placement answers -EAGAIN) */
	uint64_t now_ms;	   /* monotonic, for placement */
	int *place_err;		   /* optional: set to the error when placement failed */
};
/* CREATE: a new regular file, or with LODE_OPEN_CREATE and without LODE_OPEN_EXCL the
 * existing one opened as lode_ns_open() would (*created 0). Returns attr and layout.
 * A layout that cannot be placed answers what lode_placement_choose() does: -EAGAIN (too
 * few targets UP now; the MDS holds the create and retries), -EINVAL (more copies than
 * the cluster has targets), -ENOSPC (the targets UP are full); never -ENOSPC while they
 * have space. */
int lode_ns_create(struct lode_txn *t, const struct lode_ns_create *a, struct lode_wire_attr *attr,
		   struct lode_wire_layout *layout, int *created);
/* OPEN: checks permission for flags (READ: r, WRITE/TRUNC: w), EISDIR for writing a
 * directory, ELOOP for a symlink, ESTALE for an inode that is gone or has no name left;
 * TRUNC sets size 0 and mtime/ctime (needs a write txn). */
int lode_ns_open(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint32_t flags,
		 struct lode_wire_attr *attr, struct lode_wire_layout *layout);
/* COMMIT/CLOSE of a writer: size (exactly, or with extend the larger of it and the stored
 * one), mtime (0: now), ctime now, and the blocks it measured (1 + blocks; 0: keep what the
 * inode has). */
int lode_ns_commit(struct lode_txn *t, uint64_t ino, uint64_t size, bool extend, int64_t mtime_ns,
		   uint64_t blocks_p1, struct lode_wire_attr *attr);

int lode_ns_mkdir(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		  size_t len, uint32_t mode, struct lode_wire_attr *attr);
/* A FIFO, socket or device node (mode: type and permissions); devices only by root. */
int lode_ns_mknod(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		  size_t len, uint32_t mode, uint32_t rdev, struct lode_wire_attr *attr);
int lode_ns_unlink(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		   size_t len);
int lode_ns_rmdir(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		  size_t len);
/* flags: 0, LODE_RENAME_NOREPLACE or LODE_RENAME_EXCHANGE. */
int lode_ns_rename(struct lode_txn *t, const lode_cred *c, uint64_t old_parent,
		   const char *old_name, size_t old_len, uint64_t new_parent, const char *new_name,
		   size_t new_len, uint32_t flags);
/* LINK: a new name for ino; ESTALE when ino is gone or has no name left. */
int lode_ns_link(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint64_t new_parent,
		 const char *name, size_t len, struct lode_wire_attr *attr);
int lode_ns_symlink(struct lode_txn *t, const lode_cred *c, uint64_t parent, const char *name,
		    size_t len, const char *target, size_t target_len, struct lode_wire_attr *attr);
/* Copies the target (not NUL-terminated) into buf (cap >= LODE_SYMLINK_MAX). */
int lode_ns_readlink(struct lode_txn *t, uint64_t ino, char *buf, size_t cap, size_t *len);

/*
 * READDIR: entries with cookie > `cookie`, in cookie order, at most max, encoded as
 * LODE_NS_DIRENT_REC records into buf (cap >= max * LODE_NS_DIRENT_REC_MAX always
 * suffices). *eof is 1 when no entry follows the last one returned. Needs r on the dir.
 */
int lode_ns_readdir(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint64_t cookie,
		    uint32_t max, void *buf, size_t cap, size_t *used, uint32_t *count, int *eof);
/* The same with each entry's attributes, as LODE_NS_DIRENTPLUS_REC records (cap >= max *
 * LODE_NS_DIRENTPLUS_REC_MAX suffices). An entry whose inode is missing is -EIO (a damaged
 * namespace: fsck). */
int lode_ns_readdirplus(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint64_t cookie,
			uint32_t max, void *buf, size_t cap, size_t *used, uint32_t *count,
			int *eof);

int lode_ns_statfs(struct lode_txn *t, struct lode_placement *pl, uint64_t now_ms,
		   struct lode_wire_statfs_rep *out);

/*
 * Extended attributes, "user.", "trusted." (root only) and "security." namespaces;
 * others are -EOPNOTSUPP. set: LODE_XATTR_CREATE (-EEXIST) / LODE_XATTR_REPLACE
 * (-ENODATA). get/list: size 0 returns only the length in *len; a size smaller than the
 * value (list) is -ERANGE; else the bytes are copied into buf. list gives NUL-terminated
 * names, hiding trusted.* from non-root.
 */
int lode_ns_setxattr(struct lode_txn *t, const lode_cred *c, uint64_t ino, const char *name,
		     size_t name_len, const void *value, size_t value_len, uint32_t flags);
int lode_ns_getxattr(struct lode_txn *t, const lode_cred *c, uint64_t ino, const char *name,
		     size_t name_len, void *buf, size_t size, size_t *len);
int lode_ns_listxattr(struct lode_txn *t, const lode_cred *c, uint64_t ino, void *buf, size_t size,
		      size_t *len);
int lode_ns_removexattr(struct lode_txn *t, const lode_cred *c, uint64_t ino, const char *name,
			size_t name_len);

/* Whether name is the virtual xattr "user.lode.layout" (a directory's default layout). */
bool lode_ns_is_layout_xattr(const char *name, size_t len);
/*
 * Sets a directory's default layout from its text form ("stripe_count=4,mirror_count=2"):
 * only the fields named change; an empty value makes all three automatic. Owner only
 * (-EPERM), directories only (-EPERM for a file, whose layout is fixed). -EINVAL, with the
 * reason in why, for a malformed value or a layout no file could be placed with: more
 * copies than ntargets (the cluster's targets; 0: none known, not checked) or more objects
 * than a layout holds. lode_ns_setxattr() of the name is this with ntargets 0.
 */
int lode_ns_layout_set(struct lode_txn *t, const lode_cred *c, uint64_t ino, const void *value,
		       size_t len, uint32_t flags, unsigned ntargets, char *why, size_t why_len);

/* ORPHAN_LIST: up to max objects target_id should delete, of files unlinked at least
 * grace_ns before now_ns (wall clock), and old copies of stripes moved at least that long
 * and LODE_NS_MOVED_GRACE_MIN_NS before. ORPHAN_DONE: the target deleted these. */
int lode_ns_orphan_list(struct lode_txn *t, uint32_t target_id, int64_t now_ns, int64_t grace_ns,
			struct lode_wire_objid *out, uint32_t max, uint32_t *n);
int lode_ns_orphan_done(struct lode_txn *t, uint32_t target_id, const struct lode_wire_objid *ids,
			uint32_t n);

/* Wall-clock nanoseconds, as the namespace stamps times. */
int64_t lode_ns_now(void);

/* ---- copies (reports and repair) ---- */

/* Attributes, layout and degraded copies of a file. */
int lode_ns_layout_get(struct lode_txn *t, uint64_t ino, struct lode_wire_layout_rep *out);
/* Marks the copy of (ino, stripe) held by target_id degraded. Returns 0 (also when it
 * already was), -ENOENT when the file or that copy is gone, -ESTALE for another
 * generation, -EBUSY (and marks nothing) when it is the stripe's last copy not degraded:
 * that one holds every acknowledged byte. */
int lode_ns_report_copy(struct lode_txn *t, uint64_t ino, uint64_t generation, uint32_t stripe,
			uint32_t target_id);
/* MOVE (ns_move.c; wire_spec.h says what each step checks): BEGIN records the intent and
 * answers the layout's move sequence; COMMIT switches the layout (the caller checked the
 * write lease) and answers the new sequence; ABORT drops an intent. */
int lode_ns_move_begin(struct lode_txn *t, struct lode_placement *pl,
		       const struct lode_wire_move_req *r, uint64_t *seq);
int lode_ns_move_commit(struct lode_txn *t, struct lode_placement *pl,
			const struct lode_wire_move_req *r, uint64_t *seq);
/* ABORT's *handle: the aborted mover's write handle (0: none), whose lease the caller
 * gives back. */
int lode_ns_move_abort(struct lode_txn *t, const struct lode_wire_move_req *r, uint64_t *handle);
/* MOVE_LIST: up to q->max intents (unfinished moves), and old copies too if asked. */
int lode_ns_move_list(struct lode_txn *t, const struct lode_wire_move_list_req *q,
		      struct lode_wire_move_entry *out, uint32_t *n);
/* Old copies target_id should delete (switched away from before before_ns, and not named
 * by the layout again), as ORPHAN_LIST entries; and one deleted (ORPHAN_DONE). */
int lode_ns_move_old_list(struct lode_txn *t, uint32_t target_id, int64_t before_ns,
			  struct lode_wire_objid *out, uint32_t max, uint32_t *n);
int lode_ns_move_old_done(struct lode_txn *t, uint32_t target_id, const struct lode_wire_objid *id);
/* What still needs target_id: copies layouts name, and objects of deleted files or of moves
 * it has yet to delete or receive. A full scan of the inodes. */
int lode_ns_target_users(struct lode_txn *t, uint32_t target_id, uint64_t *copies,
			 uint64_t *pending);
/* Drops every deletion target_id has pending (deleted files' objects, old copies of moves)
 * as if it had done them: for a target removed while down, whose disk is gone. */
int lode_ns_target_forget(struct lode_txn *t, uint32_t target_id, uint64_t *forgotten);

/* Repair: layout.targets[index] (which must still be old_target, else -ESTALE) becomes
 * new_target, a known target holding no other copy of that stripe (else -EINVAL), and the
 * copy is no longer degraded. The caller checked the write lease. */
int lode_ns_set_copy(struct lode_txn *t, struct lode_placement *pl, uint64_t ino, uint32_t index,
		     uint32_t old_target, uint32_t new_target, struct lode_wire_layout_rep *out);

/* ---- fsck (ns_fsck.c; admin only) ---- */

/* One page of FSCK (wire_spec.h says what each `what` answers) in t, a read transaction.
 * *data (malloc'ed, the caller frees it) holds *data_len bytes of records. */
int lode_ns_fsck(struct lode_txn *t, const struct lode_wire_fsck_req *q,
		 struct lode_wire_fsck_rep *rep, void **data, size_t *data_len);
/* FSCK_FIX: checks the finding again in t and repairs it; rep->fixed says whether it did. */
int lode_ns_fsck_fix(struct lode_txn *t, const struct lode_wire_fsck_fix_req *q,
		     struct lode_wire_fsck_fix_rep *rep);

#endif
