/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: directories. opendir, readdir, readdirplus, releasedir, fsyncdir.
 *
 * No paging state per open directory: the FUSE offset of an entry is the MDS's cookie of
 * that entry, and a page continues after the cookie the kernel hands back. (What is kept
 * per open directory is its attributes, for fstat after its removal: see below; it costs
 * one GETATTR per opendir.) The MDS numbers
 * cookies from 3 and never reuses one, which leaves offsets 1 and 2 for the synthesized
 * "." and "..", and keeps paging stable while the directory changes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lode_fuse.h"

#define OFF_AFTER_DOT	 1
#define OFF_AFTER_DOTDOT 2

/*
 * Open directories. A directory removed (rmdir, or renamed over) while a process has it
 * open still exists for that process, as on a local file system: fstat gives nlink 0.
 * The MDS deletes a directory's inode at once, so lode-fuse keeps the attributes of
 * every open directory (taken at opendir, refreshed by each GETATTR) until releasedir.
 */
static struct lf_odir **odir_bucket(struct lode_fuse *lf, uint64_t ino)
{
	return &lf->odirs[ino % LF_WRITER_BUCKETS];
}

/* With dlock held. */
static struct lf_odir *odir_find(struct lode_fuse *lf, uint64_t ino)
{
	struct lf_odir *d = *odir_bucket(lf, ino);

	while (d && d->ino != ino)
		d = d->next;
	return d;
}

bool lf_odir_removed_attr(struct lode_fuse *lf, uint64_t ino, struct lode_stat *st)
{
	struct lf_odir *d;

	pthread_mutex_lock(&lf->dlock);
	d = odir_find(lf, ino);
	if (d) {
		*st = d->st;
		st->nlink = 0;
	}
	pthread_mutex_unlock(&lf->dlock);
	return d != NULL;
}

void lf_odir_note(struct lode_fuse *lf, const struct lode_stat *st)
{
	struct lf_odir *d;

	if (!S_ISDIR(st->mode))
		return;
	pthread_mutex_lock(&lf->dlock);
	d = odir_find(lf, st->ino);
	if (d)
		d->st = *st;
	pthread_mutex_unlock(&lf->dlock);
}

void lf_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct lode_fuse *lf = lf_req(req);
	struct lf_odir *d, *fresh;
	struct lode_stat st;
	int rc = lode_ll_getattr(lf->c, ino, &st);

	if (rc) {
		lf_reply_err(req, rc);
		return;
	}
	fresh = calloc(1, sizeof(*fresh));
	if (!fresh) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&lf->dlock);
	d = odir_find(lf, ino);
	if (!d) {
		d = fresh;
		fresh = NULL;
		d->ino = ino;
		d->next = *odir_bucket(lf, ino);
		*odir_bucket(lf, ino) = d;
	}
	d->refs++;
	d->st = st;
	pthread_mutex_unlock(&lf->dlock);
	free(fresh);
	fi->fh = 0;
	if (fuse_reply_open(req, fi) == -ENOENT) /* interrupted: no releasedir will come */
		lf_releasedir_ino(lf, ino);
}

/* Adds one entry; returns false when the reply buffer is full. */
static bool add(fuse_req_t req, char *buf, size_t size, size_t *used, bool plus, const char *name,
		const struct fuse_entry_param *e, off_t next)
{
	size_t n;

	if (plus)
		n = fuse_add_direntry_plus(req, buf + *used, size - *used, name, e, next);
	else
		n = fuse_add_direntry(req, buf + *used, size - *used, name, &e->attr, next);
	if (n > size - *used)
		return false;
	*used += n;
	return true;
}

static void dot(struct fuse_entry_param *e, uint64_t ino)
{
	/* ino 0 in the entry: the kernel takes no reference, it only lists the name */
	memset(e, 0, sizeof(*e));
	e->attr.st_ino = ino;
	e->attr.st_mode = S_IFDIR;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct lode_fuse *lf = lf_req(req);
	struct lode_direntplus *pents = NULL;
	struct lode_dirent *ents = NULL;
	struct fuse_entry_param e;
	uint64_t cookie = off > OFF_AFTER_DOTDOT ? (uint64_t)off : 0;
	size_t used = 0;
	int max, eof = 0, rc = 0;
	bool full = false;
	char *buf;

	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (off < OFF_AFTER_DOT) {
		dot(&e, ino);
		full = !add(req, buf, size, &used, plus, ".", &e, OFF_AFTER_DOT);
	}
	if (!full && off < OFF_AFTER_DOTDOT) {
		/* the parent is not known by inode here; the kernel answers ".." itself */
		dot(&e, FUSE_ROOT_ID);
		full = !add(req, buf, size, &used, plus, "..", &e, OFF_AFTER_DOTDOT);
	}
	/* about as many entries as fit, so that one MDS call fills one page */
	max = (int)(size / (plus ? 160 : 32)) + 1;
	if (max > 1024)
		max = 1024;
	if (plus)
		pents = malloc((size_t)max * sizeof(*pents));
	else
		ents = malloc((size_t)max * sizeof(*ents));
	if (!pents && !ents) {
		rc = -ENOMEM;
		goto out;
	}
	while (!full && !eof) {
		/* with attributes, from the same MDS snapshot as the names */
		int n = plus ? lode_ll_readdirplus(lf->c, ino, cookie, pents, max, &eof)
			     : lode_ll_readdir(lf->c, ino, cookie, ents, max, &eof);

		if (n < 0) {
			rc = n;
			break;
		}
		for (int i = 0; i < n && !full; i++) {
			const struct lode_dirent *d = plus ? &pents[i].d : &ents[i];

			if (plus) {
				lf_fix_size(lf, &pents[i].st);
				lf_fill_entry(lf, &pents[i].st, &e);
			} else {
				memset(&e, 0, sizeof(e));
				e.attr.st_ino = d->ino;
				e.attr.st_mode = d->mode & S_IFMT;
			}
			full = !add(req, buf, size, &used, plus, d->name, &e, (off_t)d->cookie);
			if (!full)
				cookie = d->cookie;
		}
		if (n == 0)
			break;
	}
out:
	/* entries already in the buffer are the kernel's (readdirplus took references on
	 * them), so they go back even when a later page failed */
	if (rc && used == 0)
		lf_reply_err(req, rc);
	else {
		lf_ok(lf);
		fuse_reply_buf(req, buf, used);
	}
	free(pents);
	free(ents);
	free(buf);
}

void lf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, false);
}

void lf_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, true);
}

void lf_releasedir_ino(struct lode_fuse *lf, uint64_t ino)
{
	struct lf_odir **pp, *gone = NULL;

	pthread_mutex_lock(&lf->dlock);
	for (pp = odir_bucket(lf, ino); *pp; pp = &(*pp)->next) {
		if ((*pp)->ino != ino)
			continue;
		if (--(*pp)->refs == 0) {
			gone = *pp;
			*pp = gone->next;
		}
		break;
	}
	pthread_mutex_unlock(&lf->dlock);
	free(gone);
}

void lf_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	lf_releasedir_ino(fuse_req_userdata(req), ino);
	fuse_reply_err(req, 0);
}

/* Every namespace change is durable at the MDS before it is acknowledged, except on a
 * mount with namespace=lazy: there the directory's (and every other) change is made
 * durable now. */
void lf_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	lf_reply_status(req, lode_sync(lf_req(req)->c));
}
