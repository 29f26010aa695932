/* SPDX-License-Identifier: MIT */
/*
 * lode-mds on-disk format: the keys and values of the LMDB databases.
 *
 * Values are fixed structs in host (little-endian) byte order with explicit reserved
 * fields that are written as zero, so a later format can give them a meaning without a
 * migration. Keys that must sort numerically (inode numbers, cookies) are big-endian.
 *
 *   db        key                                   value
 *   meta      "format_version"                      u32 LODE_MDS_FORMAT_VERSION
 *             "cluster_id"                          u64, random at first open
 *             "next_ino"                            u64, next inode number to hand out
 *             "next_target_id"                      u32, next storage target id
 *   inodes    ino BE64                              struct lode_disk_inode, cut short
 *                                                   (below)
 *   dirents   parent BE64 + name                    struct lode_disk_dirent
 *   cookies   parent BE64 + cookie BE64             struct lode_disk_dirent + name
 *   symlinks  ino BE64                              target bytes
 *   xattrs    ino BE64 + name                       value bytes
 *   targets   uuid[16]                              struct lode_disk_target
 *   orphans   ino BE64 + generation BE64            struct lode_disk_orphan
 *   moves     ino, generation BE64 + stripe, target BE32  struct lode_disk_move
 *
 * An inode's record is the struct up to the last nonzero entry of its layout's targets
 * (LODE_DISK_INODE_HEAD bytes, then 4 per target): 120 bytes for a file of two copies
 * instead of 368, so nearly three times as many inodes share a page, a tree of millions of files
 * is a level shallower, and the store takes half the bytes per file. The targets left off
 * are zero. Version 1 stored the whole struct, the case of a last target at index 63, so
 * its records read as they are.
 *
 * Bump LODE_MDS_FORMAT_VERSION for any change an older server would misread; a server
 * refuses a data directory whose version is newer than its own, and stamps an older one
 * with its own version when it opens it (version 1 -> 2: records cut short from then on).
 */
#ifndef LODE_MDS_SPEC_H
#define LODE_MDS_SPEC_H

#include <stdint.h>

#include "wire_spec.h"

#define LODE_MDS_FORMAT_VERSION 2u

#define LODE_MDS_ROOT_INO 1ull
/* Cookies 1 and 2 are left to the client for "." and ".."; real entries start here. */
#define LODE_MDS_FIRST_COOKIE 3ull

/* Same shape as the wire layout, but an on-disk type of its own so the two may diverge. */
struct lode_disk_layout {
	uint32_t stripe_size;
	uint16_t stripe_count; /* directories' default: 0 = all up targets, at most 8 */
	uint16_t mirror_count;
	uint64_t generation;
	uint32_t targets[LODE_LAYOUT_TARGETS_MAX]; /* stripe i, mirror m: [i * mirror_count + m] */
};
_Static_assert(sizeof(struct lode_disk_layout) == 272, "disk layout");

struct lode_disk_inode {
	uint32_t mode; /* S_IFMT bits plus permissions */
	uint32_t uid;
	uint32_t gid;
	uint32_t nlink; /* directories: 2 + subdirectories */
	uint64_t size;
	int64_t atime_ns;
	int64_t mtime_ns;
	int64_t ctime_ns;
	uint64_t parent;      /* directories: the one parent (root: itself); others: 0 */
	uint64_t next_cookie; /* directories: next readdir cookie, never reused */
	uint64_t degraded;    /* regular files: bit i = copy layout.targets[i] misses data */
	uint32_t rdev;	      /* device nodes: Linux's 32-bit encoding; others 0 */
	uint32_t reserved0;
	/* regular files: 1 + the 512-byte blocks one copy takes on the targets, as the last
	 * writer measured at commit; 0: never measured (older files: st_blocks from size) */
	uint64_t blocks_p1;
	/* regular files: bumped by every move of a copy (MOVE COMMIT), so a mover's switch is a
	 * compare-and-swap on the layout it read (the generation names the objects and stays) */
	uint64_t move_seq;
	/* regular files: the layout; directories: the default layout of new children
	 * (targets unused, zero); symlinks: zero */
	struct lode_disk_layout layout;
};
_Static_assert(sizeof(struct lode_disk_inode) == 96 + sizeof(struct lode_disk_layout),
	       "disk inode");
/* An inode record's fixed part: everything before the layout's targets. */
#define LODE_DISK_INODE_HEAD (96u + 16u)
_Static_assert(sizeof(struct lode_disk_inode) == LODE_DISK_INODE_HEAD + 4 * LODE_LAYOUT_TARGETS_MAX,
	       "disk inode head");

struct lode_disk_dirent {
	uint64_t ino;
	uint64_t cookie;
	uint32_t mode; /* S_IFMT bits of the entry's inode */
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_disk_dirent) == 24, "disk dirent");

struct lode_disk_target {
	uint32_t target_id; /* >= 1; 0 marks an unused layout slot */
	uint16_t addr_len;
	uint16_t admin;	      /* LODE_TARGET_ACTIVE, _DRAINING, _REMOVED (wire_spec.h) */
	uint64_t bytes_total; /* as last registered */
	uint64_t bytes_free;
	uint64_t reserved1[2];
	char addr[LODE_ADDR_MAX + 1]; /* not NUL-terminated; addr_len bytes */
};
_Static_assert(sizeof(struct lode_disk_target) == 40 + LODE_ADDR_MAX + 1, "disk target");

/*
 * A deleted file whose objects still sit on storage targets. Bit i of `pending` stands
 * for layout.targets[i] (LODE_LAYOUT_TARGETS_MAX == 64 fits one u64): each target acks
 * its own objects with ORPHAN_DONE, and the record goes once no bit is left.
 */
struct lode_disk_orphan {
	uint64_t pending;
	int64_t unlinked_ns; /* when the last link went (orphans are listed after a grace) */
	uint64_t reserved[2];
	struct lode_disk_layout layout;
};
_Static_assert(sizeof(struct lode_disk_orphan) == 32 + sizeof(struct lode_disk_layout),
	       "disk orphan");
_Static_assert(LODE_LAYOUT_TARGETS_MAX <= 64, "orphan pending bitmask");

/*
 * The moves db: one record per object a move of a copy left to clean up, keyed by
 * (ino BE64, generation BE64, stripe BE32, target BE32):
 * - INTENT: a mover began copying the stripe to target (MOVE BEGIN) and has not switched
 *   the layout yet; the object there is the mover's until COMMIT or ABORT (a killed mover's
 *   next run removes it, MOVE_LIST);
 * - OLD: the layout switched away from target; its object is deleted by that target like a
 *   deleted file's (ORPHAN_LIST after the grace, then ORPHAN_DONE drops the record).
 */
#define LODE_MOVE_INTENT 1
#define LODE_MOVE_OLD	 2

struct lode_disk_move {
	uint32_t kind; /* LODE_MOVE_INTENT or LODE_MOVE_OLD */
	uint32_t reserved;
	int64_t since_ns; /* when it was recorded */
	/* INTENT: the mover's write handle, whose lease ABORT gives back (a killed mover's
	 * would otherwise keep the file from writers and the next run for the lease's time) */
	uint64_t handle;
};
_Static_assert(sizeof(struct lode_disk_move) == 24, "disk move");

#endif
