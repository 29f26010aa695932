/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: names. lookup, mkdir, mknod, unlink, rmdir, rename, link, symlink, readlink.
 * Each is one liblode call by inode; the MDS checks permissions with the caller's
 * credentials, and the kernel checks mode bits first (default_permissions).
 *
 * A failed lookup is not cached (no negative entry) by default: a file another client
 * creates and closes must be found by the next open here, as close-to-open promises.
 * -o negative_timeout=S lets the kernel trust a missing name for S seconds, for work that
 * looks up many names that are not there (Python's imports, search paths) and can wait
 * that long for other clients' new files; this mount's own creates replace the entry.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h> /* RENAME_NOREPLACE */
#include <stdlib.h>
#include <sys/stat.h>

#include "lode_fuse.h"

void lf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct lode_fuse *lf = lf_req(req);
	struct lode_stat st;
	int rc;

	rc = lode_ll_lookup(lf->c, parent, name, &st);
	if (rc == -ENOENT && lf->o.negative_timeout > 0) {
		struct fuse_entry_param e = {.ino = 0, .entry_timeout = lf->o.negative_timeout};

		lf_ok(lf);
		fuse_reply_entry(req, &e); /* inode 0: a negative entry, cached */
		return;
	}
	if (rc) {
		lf_reply_err(req, rc);
		return;
	}
	lf_fix_size(lf, &st);
	lf_kattr_note(lf, &st);
	lf_reply_entry(req, lf, &st);
}

/* Inode numbers are the MDS's own, so there is no lookup count to keep. */
void lf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req);
}

void lf_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	(void)count;
	(void)forgets;
	fuse_reply_none(req);
}

void lf_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct lode_fuse *lf = lf_req(req);
	uint64_t gen;
	struct lode_stat st;
	int rc;

	if (lf_refuse_ro(req, lf))
		return;
	gen = lf_dirattr_begin(lf); /* a directory changes (fuse_dirattr.c) */
	rc = lode_ll_mkdir(lf->c, parent, name, mode & 07777, &st);
	lf_dirattr_end(lf, gen, NULL, 0);
	if (rc) {
		lf_reply_err(req, rc);
		return;
	}
	lf_reply_entry(req, lf, &st);
}

/* Regular files only: Lode stores no devices, FIFOs or sockets. */
void lf_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct lode_fuse *lf = lf_req(req);
	uint64_t gen;
	struct lode_file *f;
	struct lode_stat st;
	int rc;

	if (lf_refuse_ro(req, lf))
		return;
	if (!S_ISREG(mode)) {
		/* FIFOs, sockets, devices: stored with type and device number; the kernel
		 * gives them their behaviour */
		gen = lf_dirattr_begin(lf); /* a directory changes (fuse_dirattr.c) */
		rc = lode_ll_mknod(lf->c, parent, name, mode & (S_IFMT | 07777), (uint32_t)rdev,
				   &st);
		lf_dirattr_end(lf, gen, NULL, 0);
		if (rc)
			lf_reply_err(req, rc);
		else
			lf_reply_entry(req, lf, &st);
		return;
	}
	gen = lf_dirattr_begin(lf); /* a directory changes (fuse_dirattr.c) */
	rc = lode_ll_create(lf->c, parent, name, O_WRONLY | O_CREAT | O_EXCL, mode & 07777, NULL,
			    &f);
	lf_dirattr_end(lf, gen, NULL, 0);
	if (rc) {
		lf_reply_err(req, rc);
		return;
	}
	lode_file_stat_cached(f, &st); /* just created: the reply's attributes are current */
	rc = lode_close(f);
	if (rc) {
		lf_reply_err(req, rc);
		return;
	}
	lf_reply_entry(req, lf, &st);
}

/* UNLINK (dir 0) or RMDIR: the parent's attributes after it answer the kernel's next
 * GETATTR of the parent (fuse_dirattr.c). */
static int remove_entry(struct lode_fuse *lf, fuse_ino_t parent, const char *name, int dir)
{
	uint64_t gen = lf_dirattr_begin(lf);
	struct lode_stat after;
	int rc = lode_ll_remove_dirs(lf->c, parent, name, dir, &after);

	lf_dirattr_end(lf, gen, &after, !rc && after.ino == parent);
	return rc;
}

void lf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct lode_fuse *lf = lf_req(req);
	int rc;

	if (lf_refuse_ro(req, lf))
		return;
	rc = remove_entry(lf, parent, name, 0);
	lf_reply_status(req, rc);
}

void lf_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct lode_fuse *lf = lf_req(req);
	int rc;

	if (lf_refuse_ro(req, lf))
		return;
	rc = remove_entry(lf, parent, name, 1);
	lf_reply_status(req, rc);
}

void lf_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags)
{
	struct lode_fuse *lf = lf_req(req);
	struct lode_stat after[2];
	unsigned lflags = 0;
	uint64_t gen;
	int rc;

	if (lf_refuse_ro(req, lf))
		return;
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL); /* RENAME_WHITEOUT: no overlay support */
		return;
	}
	if (flags & RENAME_NOREPLACE)
		lflags |= LODE_RENAME_NOREPLACE_FLAG;
	if (flags & RENAME_EXCHANGE)
		lflags |= LODE_RENAME_EXCHANGE_FLAG;
	gen = lf_dirattr_begin(lf); /* the directories change (fuse_dirattr.c) */
	rc = lode_ll_rename_dirs(lf->c, parent, name, newparent, newname, lflags, after);
	/* their attributes after it answer the kernel's next GETATTRs of them */
	lf_dirattr_end(lf, gen, after, !rc && after[0].ino == parent ? 2 : 0);
	lf_reply_status(req, rc);
}

void lf_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct lode_fuse *lf = lf_req(req);
	uint64_t gen;
	struct lode_stat st;
	int rc;

	if (lf_refuse_ro(req, lf))
		return;
	gen = lf_dirattr_begin(lf); /* a directory changes (fuse_dirattr.c) */
	rc = lode_ll_link(lf->c, ino, newparent, newname, &st);
	lf_dirattr_end(lf, gen, NULL, 0);
	if (rc) {
		lf_reply_err(req, rc);
		return;
	}
	lf_fix_size(lf, &st);
	lf_reply_entry(req, lf, &st);
}

void lf_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct lode_fuse *lf = lf_req(req);
	uint64_t gen;
	struct lode_stat st;
	int rc;

	if (lf_refuse_ro(req, lf))
		return;
	gen = lf_dirattr_begin(lf); /* a directory changes (fuse_dirattr.c) */
	rc = lode_ll_symlink(lf->c, link, parent, name, &st);
	lf_dirattr_end(lf, gen, NULL, 0);
	if (rc) {
		lf_reply_err(req, rc);
		return;
	}
	lf_reply_entry(req, lf, &st);
}

void lf_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct lode_fuse *lf = lf_req(req);
	char *buf = malloc(PATH_MAX + 1);
	ssize_t n;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = lode_ll_readlink(lf->c, ino, buf, PATH_MAX);
	if (n < 0) {
		lf_reply_err(req, (int)n);
	} else {
		buf[n] = 0;
		lf_ok(lf);
		fuse_reply_readlink(req, buf);
	}
	free(buf);
}
