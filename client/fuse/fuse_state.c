/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: what every operation family shares. Credentials per request, the one place
 * where liblode's negative errno becomes a FUSE reply, attribute conversion, and the
 * record of which file versions the kernel's page cache holds (close-to-open).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#include "lode_fuse.h"

bool lf_log_syslog;

void lf_log(enum lf_level level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warning", "info"};
	static const int prios[] = {LOG_ERR, LOG_WARNING, LOG_INFO};
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (lf_log_syslog) { /* a daemon's stderr is /dev/null */
		syslog(prios[level], "%s: %s", names[level], line);
		return;
	}
	/* one write, so that lines from several threads do not interleave */
	fprintf(stderr, "lode-fuse: %s: %s\n", names[level], line);
}

struct lode_fuse *lf_req(fuse_req_t req)
{
	struct lode_fuse *lf = fuse_req_userdata(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	uint32_t uid = ctx->uid, gid = ctx->gid;

	/* any request but INIT comes after the kernel applied INIT's reply, which would
	 * have undone a readahead set earlier */
	if (!atomic_load_explicit(&lf->readahead_set, memory_order_relaxed) &&
	    !atomic_exchange(&lf->readahead_set, 1))
		lf_set_readahead(lf);
	if (lf->o.root_squash) {
		if (uid == 0)
			uid = LF_SQUASH_ID;
		if (gid == 0)
			gid = LF_SQUASH_ID;
	}
	lode_thread_creds_set(uid, gid);
	return lf;
}

/* Errors that mean "no server answered", not "the server said no". */
static bool unreachable_err(int err)
{
	switch (err) {
	case ETIMEDOUT:
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case EPIPE:
	case ENOTCONN:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return true;
	default:
		return false;
	}
}

void lf_ok(struct lode_fuse *lf)
{
	if (atomic_load_explicit(&lf->unreachable, memory_order_relaxed) &&
	    atomic_exchange(&lf->unreachable, 0))
		lf_log(LF_INFO, "cluster reachable again");
}

void lf_reply_err(fuse_req_t req, int rc)
{
	struct lode_fuse *lf = fuse_req_userdata(req);
	int err = -rc;

	if (err <= 0) {
		/* a success or a positive count reaching here is a bug of ours: an error 0
		 * reply would tell the kernel "done" with no data */
		lf_log(LF_ERR, "bug: error reply with %d", rc);
		err = EIO;
	}
	if (unreachable_err(err)) {
		if (!atomic_exchange(&lf->unreachable, 1))
			lf_log(LF_WARN,
			       "cluster unreachable (%s); calls fail after %u s until it is back",
			       strerror(err), lf->o.timeout_s);
		/* the application sees a timeout as such; a refused or broken connection is
		 * an I/O error, as a local disk that went away would give */
		if (err != ETIMEDOUT)
			err = EIO;
	} else if (err == EPROTO || err == EBADMSG) {
		err = EIO;
	}
	fuse_reply_err(req, err);
}

void lf_stat_to_attr(const struct lode_stat *st, struct stat *out)
{
	memset(out, 0, sizeof(*out));
	out->st_ino = st->ino;
	out->st_mode = st->mode;
	out->st_nlink = st->nlink;
	out->st_uid = st->uid;
	out->st_gid = st->gid;
	out->st_size = (off_t)st->size;
	out->st_blocks = (blkcnt_t)st->blocks;
	out->st_blksize = LF_IO_MAX; /* what cp and stdio size their buffers by */
	out->st_atim.tv_sec = st->atime_ns / 1000000000;
	out->st_atim.tv_nsec = st->atime_ns % 1000000000;
	out->st_mtim.tv_sec = st->mtime_ns / 1000000000;
	out->st_mtim.tv_nsec = st->mtime_ns % 1000000000;
	out->st_ctim.tv_sec = st->ctime_ns / 1000000000;
	out->st_ctim.tv_nsec = st->ctime_ns % 1000000000;
}

void lf_fix_size(struct lode_fuse *lf, struct lode_stat *st)
{
	struct lf_writer *w;

	if (!S_ISREG(st->mode))
		return;
	w = lf_writer_find(lf, st->ino);
	if (!w)
		return;
	/* our writer is the file's only writer: its size is the truth, committed or not */
	lf_writer_drain(w);
	st->size = lode_file_size(w->f);
	lf_writer_put(lf, w);
}

int lf_getattr(struct lode_fuse *lf, uint64_t ino, struct lode_stat *st)
{
	struct lf_writer *w = lf_writer_find(lf, ino);
	int rc;

	if (w) {
		/* size and mtime as the writer knows them, so that the kernel never shrinks
		 * its view of a file this mount is writing */
		lf_writer_drain(w);
		rc = lode_fstat(w->f, st);
		lf_writer_put(lf, w);
		return rc;
	}
	return lode_ll_getattr(lf->c, ino, st);
}

void lf_fill_entry(struct lode_fuse *lf, const struct lode_stat *st, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = st->ino;
	e->generation = 0; /* Lode never reuses an inode number */
	lf_stat_to_attr(st, &e->attr);
	e->attr_timeout = lf->o.attr_timeout;
	e->entry_timeout = lf->o.entry_timeout;
}

void lf_reply_entry(fuse_req_t req, struct lode_fuse *lf, const struct lode_stat *st)
{
	struct fuse_entry_param e;

	lf_ok(lf);
	lf_fill_entry(lf, st, &e);
	fuse_reply_entry(req, &e);
}

/*
 * Close-to-open for the page cache. The kernel keeps a file's pages across opens only if
 * open says keep_cache. We say so only when the file's (mtime, size) at this open equal
 * what they were when this mount last opened it, so pages cached from an older version
 * never reach a reader. A direct-mapped table forgets entries on collision, which only
 * costs a re-read.
 */
bool lf_cache_keep(struct lode_fuse *lf, uint64_t ino, int64_t mtime_ns, uint64_t size)
{
	struct lf_cver *v = &lf->cver[ino % LF_CVER_SLOTS];
	bool keep;

	pthread_mutex_lock(&lf->clock);
	keep = v->ino == ino && v->mtime_ns == mtime_ns && v->size == size;
	v->ino = ino;
	v->mtime_ns = mtime_ns;
	v->size = size;
	pthread_mutex_unlock(&lf->clock);
	return keep;
}

void lf_cache_forget(struct lode_fuse *lf, uint64_t ino)
{
	struct lf_cver *v = &lf->cver[ino % LF_CVER_SLOTS];

	pthread_mutex_lock(&lf->clock);
	if (v->ino == ino)
		v->ino = 0;
	pthread_mutex_unlock(&lf->clock);
}
