/* SPDX-License-Identifier: MIT */
/*
 * Permission checks on inodes: whether a caller may read, write or execute one, owns it,
 * or may remove it from a sticky directory. See perm.h.
 */
#include <errno.h>
#include <sys/stat.h>

#include "perm.h"

bool lode_perm_in_group(const struct lode_wire_cred *c, uint32_t gid)
{
	if (c->gid == gid)
		return true;
	for (unsigned i = 0; i < c->ngroups && i < LODE_CRED_GROUPS_MAX; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

int lode_perm_may(const struct lode_wire_cred *c, const struct lode_disk_inode *in, int mask)
{
	unsigned bits;

	if (c->uid == 0) {
		/* root executes only what someone may execute; directories are searchable */
		if ((mask & LODE_MAY_X) && !S_ISDIR(in->mode) && !(in->mode & 0111))
			return -EACCES;
		return 0;
	}
	if (c->uid == in->uid)
		bits = (in->mode >> 6) & 7;
	else if (lode_perm_in_group(c, in->gid))
		bits = (in->mode >> 3) & 7;
	else
		bits = in->mode & 7;
	return ((int)bits & mask) == mask ? 0 : -EACCES;
}

bool lode_perm_is_owner(const struct lode_wire_cred *c, const struct lode_disk_inode *in)
{
	return c->uid == 0 || c->uid == in->uid;
}

int lode_perm_sticky_ok(const struct lode_wire_cred *c, const struct lode_disk_inode *dir,
			const struct lode_disk_inode *victim)
{
	if (!(dir->mode & S_ISVTX) || c->uid == 0 || c->uid == dir->uid || c->uid == victim->uid)
		return 0;
	return -EPERM;
}
