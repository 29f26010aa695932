/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: extended attributes, kept by the MDS with the inode. The size rules are
 * FUSE's: a request with size 0 asks for the length only.
 *
 * security.capability is not stored: the kernel asks for it before every write (to drop
 * file capabilities), and a round trip to the MDS per 1 MiB write halved throughput. File
 * capabilities have no use on a checkpoint store, so it is answered here: never set,
 * always absent. Nor is security.selinux: `ls -l` asks for it of every file it lists (for
 * the '.' after the mode), one MDS round trip each, and it means nothing here. Where SELinux
 * runs, the kernel answers it from the label the policy gives the mount (genfscon) and
 * refuses to set it on a FUSE mount without asking us; where it does not, it is a label
 * no one reads.
 *
 * system.* (POSIX ACLs, the only such names Linux sends here) is not a namespace the MDS
 * keeps: it refuses every such name with EOPNOTSUPP, for any inode. That answer is given
 * here without asking, since `ls -l` asks for system.posix_acl_access of every file it
 * lists, one MDS round trip each otherwise.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "lode_fuse.h"

/* A name never stored (see above): absent, and cannot be set. */
static bool never_stored(const char *name)
{
	return !strcmp(name, "security.capability") || !strcmp(name, "security.selinux");
}

/* A name in a namespace the MDS does not keep (see above). */
static bool unkept(const char *name)
{
	return !strncmp(name, "system.", 7);
}

void lf_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
		 int flags)
{
	struct lode_fuse *lf = lf_req(req);
	uint64_t gen;
	unsigned lflags = 0;
	int rc;

	if (lf_refuse_ro(req, lf))
		return;
	if (never_stored(name) || unkept(name)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if (flags & XATTR_CREATE)
		lflags |= LODE_XATTR_CREATE_FLAG;
	if (flags & XATTR_REPLACE)
		lflags |= LODE_XATTR_REPLACE_FLAG;
	gen = lf_dirattr_begin(lf); /* a directory may change (fuse_dirattr.c) */
	rc = lode_ll_setxattr(lf->c, ino, name, value, size, lflags);
	lf_dirattr_end(lf, gen, NULL, 0);
	lf_reply_status(req, rc);
}

/* getxattr and listxattr: the same two-step protocol. */
static void reply_sized(fuse_req_t req, struct lode_fuse *lf, ssize_t n, const char *buf,
			size_t size)
{
	if (n < 0) {
		lf_reply_err(req, (int)n);
		return;
	}
	lf_ok(lf);
	if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

void lf_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct lode_fuse *lf = lf_req(req);
	char *buf = NULL;
	ssize_t n;

	if (never_stored(name)) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	if (unkept(name)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if (size) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	n = lode_ll_getxattr(lf->c, ino, name, buf, size);
	reply_sized(req, lf, n, buf, size);
	free(buf);
}

void lf_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct lode_fuse *lf = lf_req(req);
	char *buf = NULL;
	ssize_t n;

	if (size) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	n = lode_ll_listxattr(lf->c, ino, buf, size);
	reply_sized(req, lf, n, buf, size);
	free(buf);
}

void lf_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct lode_fuse *lf = lf_req(req);
	uint64_t gen;
	int rc;

	if (lf_refuse_ro(req, lf))
		return;
	if (unkept(name)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	gen = lf_dirattr_begin(lf); /* a directory may change (fuse_dirattr.c) */
	rc = lode_ll_removexattr(lf->c, ino, name);
	lf_dirattr_end(lf, gen, NULL, 0);
	lf_reply_status(req, rc);
}
