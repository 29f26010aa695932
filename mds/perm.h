/* SPDX-License-Identifier: MIT */
/*
 * lode_perm: who may do what to an inode, by the wire cred (uid, primary gid and the
 * supplementary groups the client sent) against the inode's owner, group and mode bits, as a local
 * Linux file system decides it without capabilities: uid 0 bypasses the bits (but needs one x bit
 * to execute a non-directory), the sticky bit restricts removal.
 */
#ifndef LODE_MDS_PERM_H
#define LODE_MDS_PERM_H

#include <stdbool.h>

#include "mds_spec.h"
#include "wire_spec.h"

/* What a caller asks for, as in the rwx bits. */
#define LODE_MAY_R 4
#define LODE_MAY_W 2
#define LODE_MAY_X 1

/* Whether gid is c's primary group or one of its supplementary groups. */
bool lode_perm_in_group(const struct lode_wire_cred *c, uint32_t gid);
/* 0 if c may read/write/execute (mask of LODE_MAY_*) in, else -EACCES. */
int lode_perm_may(const struct lode_wire_cred *c, const struct lode_disk_inode *in, int mask);
/* Whether c owns in (root owns everything). */
bool lode_perm_is_owner(const struct lode_wire_cred *c, const struct lode_disk_inode *in);
/* The sticky bit: 0 if c may remove entry `victim` from dir, else -EPERM. Only the entry's
 * owner, the directory's owner or root may, when dir is sticky. */
int lode_perm_sticky_ok(const struct lode_wire_cred *c, const struct lode_disk_inode *dir,
			const struct lode_disk_inode *victim);

#endif
