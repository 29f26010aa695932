/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: attributes. getattr, setattr (chmod, chown, truncate, utimens), statfs.
 *
 * A truncate goes through this mount's writer of the file when there is one (the MDS
 * grants one write lease per file, and the writer's idea of the size must follow);
 * otherwise liblode opens the file for writing just for it.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "lode_fuse.h"

/* Answers with st, which the kernel may trust for ttl seconds. */
static void reply_attr_for(fuse_req_t req, struct lode_fuse *lf, const struct lode_stat *st,
			   double ttl)
{
	struct stat attr;

	lf_ok(lf);
	lf_ksize_told(lf, st);
	lf_stat_to_attr(st, &attr);
	fuse_reply_attr(req, &attr, ttl);
}

static void reply_attr(fuse_req_t req, struct lode_fuse *lf, const struct lode_stat *st)
{
	reply_attr_for(req, lf, st, lf->o.attr_timeout);
}

void lf_getattr_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct lode_fuse *lf = lf_req(req);
	struct lode_stat st;
	double ttl;
	int rc;

	(void)fi;
	/* Never for a file this mount is writing: its size and mtime are the writer's
	 * (lf_getattr). The writer first: one that is closing is waited for, and it forgets
	 * the file's entry before it goes, so the entry is read after that. Read before, an
	 * open's attributes from before this mount's last write answered a stat after it
	 * (fuse-posix-more, once under ASan: an append's size lost). */
	if (!lf_writer_exists(lf, ino) && lf_dirattr_get(lf, ino, &st, &ttl)) {
		/* a directory a create, unlink or rename of ours just changed, or a file a
		 * read-only open just found: its reply said how it is now, for the rest of
		 * attr_timeout */
		lf_odir_note(lf, &st);
		reply_attr_for(req, lf, &st, ttl);
		return;
	}
	rc = lf_getattr(lf, ino, &st);
	if (!rc) {
		lf_odir_note(lf, &st);
		lf_kattr_note(lf, &st);
	} else if (rc == -ENOENT && lf_odir_removed_attr(lf, ino, &st)) {
		rc = 0; /* a removed directory that a process still has open */
	}
	if (rc)
		lf_reply_err(req, rc);
	else
		reply_attr(req, lf, &st);
}

static int do_truncate(struct lode_fuse *lf, uint64_t ino, uint64_t size, struct fuse_file_info *fi)
{
	struct lf_writer *w = fi ? lf_handle_writer(fi) : NULL;
	int rc;

	if (w) {
		lf_writer_drain(w);
		return lode_ftruncate(w->f, size);
	}
	w = lf_writer_find(lf, ino);
	if (w) {
		lf_writer_drain(w);
		rc = lode_ftruncate(w->f, size);
		lf_writer_put(lf, w);
		return rc;
	}
	return lf_truncate_lease(lf, ino, size);
}

/*
 * Before an explicit change of mtime (cp -p, tar and rsync set it on the open file, then
 * close it): commit what our writer wrote, or its later commit at close would put the
 * mtime of its last write back over the one set here.
 */
static int commit_writes(struct lode_fuse *lf, uint64_t ino, struct fuse_file_info *fi)
{
	struct lf_writer *w = fi ? lf_handle_writer(fi) : NULL;
	int rc;

	if (w) {
		lf_writer_drain(w);
		return lode_flush(w->f);
	}
	w = lf_writer_find(lf, ino);
	if (!w)
		return 0;
	lf_writer_drain(w);
	rc = lode_flush(w->f);
	lf_writer_put(lf, w);
	return rc;
}

/* A mode changed through this mount: our writer of the file checks its bits again. */
static void note_mode(struct lode_fuse *lf, uint64_t ino, const struct lode_stat *st)
{
	struct lf_writer *w = lf_writer_find(lf, ino);

	if (!w)
		return;
	atomic_store_explicit(&w->mode, st->mode, memory_order_relaxed);
	atomic_store_explicit(&w->privs_kept_for, 0, memory_order_relaxed);
	lf_writer_put(lf, w);
}

void lf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		struct fuse_file_info *fi)
{
	struct lode_fuse *lf = lf_req(req);
	uint64_t gen;
	struct lode_setattr sa = {0};
	struct lode_stat st;
	int rc;

	if (lf_refuse_ro(req, lf))
		return;
	lf_kattr_forget(lf, ino);
	if (to_set & FUSE_SET_ATTR_SIZE) {
		rc = do_truncate(lf, ino, (uint64_t)attr->st_size, fi);
		if (!rc && !(to_set & FUSE_SET_ATTR_MODE)) {
			/* a truncate clears setuid/setgid as a write does */
			rc = lode_ll_getattr(lf->c, ino, &st);
			if (!rc)
				rc = lf_kill_privs(lf, &st, false);
		}
		/* again once the MDS has it: an open's attributes fetched meanwhile are
		 * older (fuse_dirattr.c) */
		lf_kattr_forget(lf, ino);
		if (rc)
			goto err;
	}
	if (!to_set) {
		/* A change of nothing is the kernel's "clear setuid and setgid", left to us
		 * (FUSE_HANDLE_KILLPRIV_V2): chown(f, -1, -1), which clears them like any
		 * chown, or a write by someone not root (as that write's own handling does) */
		rc = lf_getattr(lf, ino, &st);
		if (!rc)
			rc = lf_kill_privs(lf, &st, true);
		if (rc)
			goto err;
		note_mode(lf, ino, &st);
		reply_attr(req, lf, &st);
		return;
	}
	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.valid |= LODE_SET_MODE;
		sa.mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.valid |= LODE_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.valid |= LODE_SET_GID;
		sa.gid = attr->st_gid;
	}
	/* "now" goes alone: the MDS lets anyone with write permission set the current time,
	 * but only the owner an explicit one */
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		sa.valid |= LODE_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa.valid |= LODE_SET_ATIME;
		sa.atime_ns = attr->st_atim.tv_sec * 1000000000LL + attr->st_atim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		sa.valid |= LODE_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa.valid |= LODE_SET_MTIME;
		sa.mtime_ns = attr->st_mtim.tv_sec * 1000000000LL + attr->st_mtim.tv_nsec;
	}
	/* FUSE_SET_ATTR_CTIME is left to the MDS, which sets ctime on every change */
	if (sa.valid) {
		rc = commit_writes(lf, ino, fi);
		if (rc)
			goto err;
		/* the reply carries the attributes after the change: no GETATTR after it
		 * (the writes before it are committed; a writer's size stays the truth) */
		gen = lf_dirattr_begin(lf); /* a directory may change (fuse_dirattr.c) */
		rc = lode_ll_setattr(lf->c, ino, &sa, &st);
		lf_dirattr_end(lf, gen, NULL, 0);
		if (rc)
			goto err;
		lf_fix_size(lf, &st);
	} else {
		rc = lf_getattr(lf, ino, &st);
		if (rc)
			goto err;
	}
	note_mode(lf, ino, &st);
	reply_attr(req, lf, &st);
	return;
err:
	lf_reply_err(req, rc);
}

void lf_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct lode_fuse *lf = lf_req(req);
	struct lode_statfs s;
	struct statvfs v;
	unsigned long bs;
	int rc;

	(void)ino;
	rc = lode_statfs(lf->c, &s);
	if (rc) {
		lf_reply_err(req, rc);
		return;
	}
	bs = s.block_size ? s.block_size : 4096;
	memset(&v, 0, sizeof(v));
	v.f_bsize = LF_IO_MAX;
	v.f_frsize = bs;
	v.f_blocks = s.bytes_total / bs;
	v.f_bfree = s.bytes_free / bs;
	v.f_bavail = s.bytes_free / bs;
	v.f_files = s.files;
	v.f_ffree = s.files_free;
	v.f_favail = s.files_free;
	v.f_namemax = s.name_max ? s.name_max : 255;
	lf_ok(lf);
	fuse_reply_statfs(req, &v);
}
