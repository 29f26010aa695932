/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: file data. create, open, read, write, flush, fsync, release. The liblode
 * write handles this mount shares between its opens of one file, and their write-behind
 * buffers, are fuse_writer.c's.
 *
 * Page cache and close-to-open: files are opened in the kernel's page-cache mode (so
 * mmap, MAP_SHARED writes included, works), except O_DIRECT opens, which bypass it. On
 * every open we fetch the file's attributes from the MDS; the kernel keeps its cached
 * pages only if (mtime, size) are those this mount saw when it last opened the file, and
 * otherwise drops them and its cached attributes, so nothing another client wrote before
 * its close is hidden behind an older page.
 *
 * Write-behind: the kernel sends a page-cache write as soon as the application writes,
 * 4 KiB at a time for a program that writes 4 KiB at a time, and one request at a time
 * per file (it holds the inode lock). Passed on one by one, every small write would be a
 * read-modify-write of a 64 KiB checksum chunk, and every 1 MiB write would wait for one
 * object server while the others idle. So contiguous writes are gathered per file, up to
 * LF_WB_MAX, and handed to liblode as one striped write when the buffer is full, when a
 * write is not contiguous, and before anything that must see them: flush, fsync, a read,
 * getattr, truncate, release. The price is NFS's: a write that fails in the background is
 * reported by the next write, flush (close) or fsync of the file, not by the write(2)
 * that carried it. O_DIRECT, O_SYNC and O_DSYNC opens write through.
 *
 * flush (every close(2)) commits size and mtime to the MDS without fsync's cost; that
 * is the point after which another client's open sees the data. release drops our
 * reference and the last one closes the liblode handle, giving the lease back.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lode_fuse.h"

/* ---- handles ---- */

struct lf_writer *lf_handle_writer(struct fuse_file_info *fi)
{
	struct lf_handle *h = (struct lf_handle *)(uintptr_t)fi->fh;

	return h ? h->w : NULL;
}

static void handle_free(struct lode_fuse *lf, struct lf_handle *h)
{
	if (!h)
		return;
	if (h->ino)
		atomic_fetch_sub_explicit(&lf->hopen[h->ino % LF_HOPEN_SLOTS], 1,
					  memory_order_relaxed);
	lode_close(h->rf);
	if (h->w)
		lf_writer_put(lf, h->w);
	free(h);
}

/* Whether an open of the version st must store its tail (store_tail, below). */
static bool store_tail_needed(struct lode_fuse *lf, uint64_t ino, const struct lode_stat *st)
{
	return st->size && lf_ksize_below(lf, ino, st->size) &&
	       atomic_load_explicit(&lf->hopen[ino % LF_HOPEN_SLOTS], memory_order_relaxed);
}

/*
 * Before a read-only open drops the kernel's attributes of a file it found longer than the
 * kernel may hold it (lf_ksize_below), while other handles of the file are open here: hands
 * the kernel the file's last byte (FUSE_NOTIFY_STORE), which makes it at least that long.
 * A handle's read asks for the attributes when they were dropped, and the kernel refuses a
 * GETATTR's reply if they were dropped again while it was in flight, then reads up to the
 * size it already had: short of what that handle's open found, which is never newer than
 * this open's. The byte is the file's own, as the page it lands in may be cached; a store
 * of part of a page leaves it to be read. One small read at the OSS, only then.
 */
static void store_tail(struct lode_fuse *lf, struct lf_handle *h, uint64_t ino,
		       const struct lode_stat *st)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(1);
	char last;

	if (!store_tail_needed(lf, ino, st))
		return;
	if (lode_pread(h->rf, &last, 1, st->size - 1) != 1)
		return; /* the reads will meet the same error */
	bv.buf[0].mem = &last;
	if (!fuse_lowlevel_notify_store(lf->se, ino, st->size - 1, &bv, 0))
		lf_ksize_told(lf, st);
}

/* An open or create from the point where it decides what the kernel keeps of the file:
 * what its reply needs. */
struct open_job {
	struct lode_fuse *lf;
	fuse_req_t req;
	struct lf_handle *h;
	struct fuse_file_info fi;
	uint64_t ino;
	struct lode_stat st; /* the file's attributes as of this open */
	uint64_t gen;	     /* lf_dirattr_peek before the open asked the MDS */
	/* fresh: the open made the file (inode numbers are never reused), so the kernel
	 * holds nothing of it to drop, and nothing need be said. reader: a read-only open
	 * with no writer of the file here. may_wait: on one of the mount's own threads,
	 * which may wait for a READ to be answered (store_tail). */
	bool fresh, reader, create, may_wait;
};

/* Sets the open's caching flags from the file's attributes as of this open, and counts
 * the handle among the file's; called with the file's open lock held, and lets it go.
 * Returns whether the kernel drops its pages and st is the newest version of the file an
 * open here found (lf_version_newest). */
static bool open_cache_flags(struct open_job *j)
{
	struct lode_fuse *lf = j->lf;
	uint64_t ino = j->ino;
	bool keep, newest = false;

	/* An open that keeps the kernel's pages and attributes (the version it found is
	 * the one the last open here found) relies on that open having dropped what the
	 * kernel held before: decided and done under one lock, or it could read the older
	 * size still held while the other open was between its decision and its drop. */
	keep = lf_cache_keep(lf, ino, j->st.mtime_ns, j->st.size) || j->fresh;
	lf_metrics_open_cache(keep);
	j->fi.keep_cache = keep;
	if (!keep) {
		/* the kernel drops the pages itself (keep_cache 0); its attributes must go
		 * too, or a read or stat right after this open would use the old size. The
		 * kernel then refuses any attribute reply to a request sent before this, and
		 * every later one is at least as new as st: an offer of st for the first
		 * read's GETATTR (fuse_dirattr.c) is made before, so that none finds an older
		 * open's there. An open that found an older version than another here leaves
		 * them: that one dropped them under this lock, and a drop now would only
		 * refuse the GETATTRs of newer handles in flight. */
		newest = lf_dirattr_offer(lf, j->reader ? j->gen : 0, &j->st);
		if (newest) {
			/* an older open's is not the kernel's */
			lf_ksize_reset(lf, ino, j->st.size);
			/* on a request thread only if it was not needed when that was decided,
			 * under this lock (open_finish_or_defer): a change of this mount since
			 * (lf_kattr_forget) is not worth a request thread that may wait */
			if (j->reader && j->may_wait)
				store_tail(lf, j->h, ino, &j->st);
			fuse_lowlevel_notify_inval_inode(lf->se, ino, -1, 0);
		}
	}
	j->h->ino = ino;
	atomic_fetch_add_explicit(&lf->hopen[ino % LF_HOPEN_SLOTS], 1, memory_order_relaxed);
	pthread_mutex_unlock(&lf->olock[ino % LF_OLOCKS]);
	/* O_DIRECT: straight to liblode (FOPEN_DIRECT_IO), when the kernel lets such a file
	 * be mapped MAP_SHARED (fuse_dev.c); else page-cache mode, where the kernel's direct
	 * I/O path still bypasses the cache, slower but mmap works. Other opens use the page
	 * cache, so mmap works. */
	j->fi.direct_io = (j->fi.flags & O_DIRECT) && lf_dio_mmap();
	return newest;
}

/* Whether the caller's handle of ino is the only one open here (or sharing its slot of
 * the count). Under the file's open lock, which every handle is counted under. */
static bool handle_alone(struct lode_fuse *lf, uint64_t ino)
{
	return atomic_load_explicit(&lf->hopen[ino % LF_HOPEN_SLOTS], memory_order_relaxed) == 1;
}

/*
 * A small file opened for reading whose pages the kernel does not hold: read it whole now
 * and hand the kernel its pages with the open's reply (FUSE_NOTIFY_STORE), so that the
 * reads that follow are served from the page cache, with no READ through lode-fuse. A small
 * file opened for reading is read whole, at once: the read costs the same here as in a READ
 * (one call to the OSS of one copy, on this thread, checked as any read), and the READ's
 * own round trip through the kernel and a lode-fuse thread goes. Only where the kernel
 * likely held the open's attributes (lf_kattr_same): the first read refreshes them (the
 * open dropped them), and a size or mtime that differs from what the kernel held drops
 * the pages stored (auto_inval_data), which are then read again: a wasted read, never a
 * stale one. The pages replace those of [0, size). Returns whether the kernel now holds
 * the file's pages (the open then keeps them).
 */
static bool store_small(struct lode_fuse *lf, struct lf_handle *h, uint64_t ino,
			const struct lode_stat *st)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(st->size);
	ssize_t n;
	char *buf;

	buf = malloc(st->size);
	if (!buf)
		return false;
	n = lode_pread(h->rf, buf, st->size, 0);
	if (n == (ssize_t)st->size) {
		bv.buf[0].mem = buf;
		/* never once an open found a newer version: it dropped the kernel's pages
		 * under the same lock (open_cache_flags), and these would replace its. And
		 * never while another handle of the file is open here (its count is taken
		 * under the same lock): the kernel stores each page with the page locked, so a
		 * READ of another handle in flight would make the store wait, under the lock,
		 * for a request thread to answer that READ. Nor when the lock is taken: a
		 * request thread never waits for it (open_finish_or_defer), and the store is
		 * only a saving. */
		if (pthread_mutex_trylock(&lf->olock[ino % LF_OLOCKS])) {
			n = -1;
		} else {
			if (!lf_version_newest(lf, st) || !handle_alone(lf, ino))
				n = -1;
			else if (fuse_lowlevel_notify_store(lf->se, ino, 0, &bv, 0))
				n = -1;
			pthread_mutex_unlock(&lf->olock[ino % LF_OLOCKS]);
		}
	}
	free(buf);
	return n == (ssize_t)st->size;
}

/*
 * Whether this mount changed the file since lf_open found no writer of it and the note of
 * the kernel's attributes as the open's: a writer that opened since (still in the table),
 * or one gone or a setattr (either forgets lf_kattr's note). Its bytes may have reached the
 * kernel's pages before the older ones store_small put there: those pages go again, by the
 * kernel itself at the open's reply (keep_cache 0), on the opening process's thread, and
 * the attributes here. Not the pages here: dropping a page waits for any READ of it in
 * flight, which only a request thread answers.
 */
static bool changed_here(struct lode_fuse *lf, uint64_t ino, const struct lode_stat *st)
{
	if (!lf_writer_exists(lf, ino) && lf_kattr_same(lf, st))
		return false;
	/* the store may have raised the kernel's size past a truncate here: attributes only,
	 * which locks no page */
	fuse_lowlevel_notify_inval_inode(lf->se, ino, -1, 0);
	return true;
}

static bool write_through(int flags)
{
	return (flags & (O_DIRECT | O_SYNC | O_DSYNC)) != 0;
}

static void reply_open(fuse_req_t req, struct lode_fuse *lf, struct lf_handle *h,
		       struct fuse_file_info *fi, const struct lode_stat *st, bool create)
{
	struct fuse_entry_param e;
	int rc;

	fi->fh = (uint64_t)(uintptr_t)h;
	lf_ok(lf);
	if (create) {
		lf_fill_entry(lf, st, &e);
		rc = fuse_reply_create(req, &e, fi);
	} else {
		rc = fuse_reply_open(req, fi);
	}
	if (rc) /* interrupted, or the connection is gone: no release will come for it */
		handle_free(lf, h);
}

/* The rest of an open or create, with the file's open lock held (open_cache_flags lets it
 * go): its caching flags, the small file's pages, the reply. */
static void open_finish(struct open_job *j)
{
	struct lode_fuse *lf = j->lf;
	struct fuse_file_info *fi = &j->fi;
	bool newest = open_cache_flags(j);

	/* a read-only open with no writer of the file on this mount: the kernel likely
	 * held the open's attributes if the last ones it was given are (lf_kattr_same);
	 * and no open here found a newer version (store_small) */
	if (!j->create && j->reader && newest && lf_kattr_same(lf, &j->st) && !fi->keep_cache &&
	    !fi->direct_io && j->st.size && j->st.size <= LF_STORE_MAX &&
	    store_small(lf, j->h, j->ino, &j->st))
		fi->keep_cache = !changed_here(lf, j->ino, &j->st);
	/* a read-only handle has nothing to publish at close (lf_flush): close(2) need not
	 * wait for a FLUSH round trip through the kernel (FOPEN_NOFLUSH) */
	if (!j->create)
		fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
	reply_open(j->req, lf, j->h, fi, &j->st, j->create);
}

static void open_wait(void *arg)
{
	struct open_job *j = arg;

	lf_req(j->req); /* the caller's credentials, for any call the open still makes */
	pthread_mutex_lock(&j->lf->olock[j->ino % LF_OLOCKS]);
	j->may_wait = true;
	open_finish(j);
}

/*
 * open_finish on this request thread if the file's open lock is free, else on one of the
 * mount's own threads (fuse_defer.c), which waits for it and replies: its holder may be
 * storing into the kernel's pages (store_tail), which waits for any READ in flight of
 * those pages, and only a request thread answers a READ. Request threads waiting for the
 * lock hung the mount once they were all taken (tests/fuse/store_hang.sh). An open that
 * may store a tail itself goes there too, whatever the lock: opens of several growing
 * files could otherwise take every request thread, each waiting for a READ.
 */
static void open_finish_or_defer(struct open_job *j)
{
	struct lode_fuse *lf = j->lf;
	int rc;

	if (!pthread_mutex_trylock(&lf->olock[j->ino % LF_OLOCKS])) {
		/* decided under the lock, as the store will be (the handles counted are) */
		if (!(j->reader && store_tail_needed(lf, j->ino, &j->st))) {
			open_finish(j);
			return;
		}
		pthread_mutex_unlock(&lf->olock[j->ino % LF_OLOCKS]);
	}
	rc = lf_defer(lf, open_wait, j, sizeof(*j));
	if (rc) {
		handle_free(lf, j->h);
		lf_reply_err(j->req, rc);
		return;
	}
	lf_metrics_open_deferred();
}

/*
 * An O_APPEND write goes where the kernel's i_size says the file ends, and nothing between
 * open and that write refreshes i_size: a mount whose cached attributes are older than
 * another mount's last close would append over that mount's bytes (close-to-open lost).
 * So an append open of a file that changed since this mount last saw it fails once with
 * ESTALE, after dropping the kernel's attributes and pages of it: Linux then repeats the
 * open with a fresh LOOKUP, whose reply brings i_size up to date, and the repeated open
 * finds the file as recorded here and goes on. Appenders on two mounts at the same
 * instant are not serialised by this (as on NFS); one after the other's close are.
 */
static int append_size_check(struct lode_fuse *lf, uint64_t ino, struct lode_stat *st)
{
	int rc = lf_getattr(lf, ino, st);

	if (rc)
		return rc;
	if (lf_cache_keep(lf, ino, st->mtime_ns, st->size))
		return 0;
	/* until the pages are dropped (append_stale), no open may keep them for this version */
	lf_cache_forget(lf, ino);
	return -ESTALE;
}

struct stale_job {
	struct lode_fuse *lf;
	fuse_req_t req;
	struct lode_stat st;
};

static void append_stale(void *arg)
{
	struct stale_job *j = arg;

	fuse_lowlevel_notify_inval_inode(j->lf->se, j->st.ino, 0, 0);
	/* the version the repeated open will find: its pages are gone now */
	lf_cache_keep(j->lf, j->st.ino, j->st.mtime_ns, j->st.size);
	lf_reply_err(j->req, -ESTALE);
}

/* Drops the kernel's attributes and pages of the file, then fails the open with ESTALE:
 * off the request thread (fuse_defer.c), since dropping a page waits for any READ of it in
 * flight, which only a request thread answers (with every thread dropping pages so, the
 * mount hung: tests/fuse/store_hang.sh, appendopen). */
static void append_stale_reply(struct lode_fuse *lf, fuse_req_t req, const struct lode_stat *st)
{
	struct stale_job j = {.lf = lf, .req = req, .st = *st};
	int rc = lf_defer(lf, append_stale, &j, sizeof(j));

	if (rc)
		lf_reply_err(req, rc);
}

/* An O_TRUNC open truncates like truncate(2), which clears setuid/setgid (the kernel sends
 * no setattr for it: the open truncated). */
static int truncated_kill_privs(struct lode_fuse *lf, struct lf_handle *h, struct lode_stat *st)
{
	int rc = lf_kill_privs(lf, st, false);

	if (!rc && h->w)
		atomic_store_explicit(&h->w->mode, st->mode, memory_order_relaxed);
	return rc;
}

void lf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct lode_fuse *lf = lf_req(req);
	int acc = fi->flags & O_ACCMODE;
	uint64_t gen = lf_dirattr_peek(lf); /* before the MDS says what the file is */
	bool reader = false;
	struct lode_stat st;
	struct lf_handle *h;
	int rc;

	if (acc != O_RDONLY && lf->o.ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (acc != O_RDONLY && (fi->flags & O_APPEND) && !(fi->flags & O_TRUNC)) {
		rc = append_size_check(lf, ino, &st);
		if (rc == -ESTALE) {
			append_stale_reply(lf, req, &st);
			return;
		}
		if (rc) {
			lf_reply_err(req, rc);
			return;
		}
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (acc != O_RDONLY) {
		rc = lf_writer_open(lf, ino, fi->flags, &h->w);
		if (!rc && acc == O_RDWR && !h->w->readable)
			rc = lode_ll_open(lf->c, ino, O_RDONLY, &h->rf);
		if (!rc)
			rc = lode_fstat(h->w->f, &st);
	} else {
		/* O_TRUNC reaches us with atomic_o_trunc: Linux truncates even read-only opens */
		rc = lode_ll_open(lf->c, ino, O_RDONLY | (fi->flags & O_TRUNC), &h->rf);
		if (!rc) {
			/* the open's attributes are fresh, unless this mount is writing it */
			if (lf_writer_exists(lf, ino)) {
				rc = lf_getattr(lf, ino, &st);
			} else {
				lode_file_stat_cached(h->rf, &st);
				reader = !(fi->flags & O_TRUNC);
			}
		}
	}
	if (rc) {
		handle_free(lf, h);
		lf_reply_err(req, rc);
		return;
	}
	if (fi->flags & O_TRUNC) {
		rc = truncated_kill_privs(lf, h, &st);
		lf_kattr_forget(lf, ino); /* the open truncated it */
	}
	if (rc) {
		handle_free(lf, h);
		lf_reply_err(req, rc);
		return;
	}
	h->write_through = write_through(fi->flags);
	open_finish_or_defer(&(struct open_job){.lf = lf,
						.req = req,
						.h = h,
						.fi = *fi,
						.ino = ino,
						.st = st,
						.gen = gen,
						.reader = reader});
}

/* CREATE with the open's flags but access mode; readable if the MDS allows, for the same
 * reason as lf_writer_open(). */
static int create_rw(struct lode_fuse *lf, fuse_ino_t parent, const char *name, int flags, int acc,
		     mode_t mode, struct lode_file **f, bool *readable)
{
	int rc = lode_ll_create(lf->c, parent, name, O_RDWR | flags, mode & 07777, NULL, f);

	*readable = true;
	if (rc == -EACCES && acc == O_WRONLY) {
		*readable = false;
		rc = lode_ll_create(lf->c, parent, name, O_WRONLY | flags, mode & 07777, NULL, f);
	}
	return rc;
}

void lf_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi)
{
	struct lode_fuse *lf = lf_req(req);
	int flags = fi->flags & ~O_ACCMODE, acc = fi->flags & O_ACCMODE;
	struct lode_file *f = NULL;
	bool readable = true, shared = false, fresh = false;
	struct lode_stat st, pst;
	struct lf_handle *h;
	uint64_t gen;
	int rc = -EEXIST;

	if (lf_refuse_ro(req, lf))
		return;
	h = calloc(1, sizeof(*h));
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	gen = lf_dirattr_begin(lf); /* the parent changes (fuse_dirattr.c) */
	/* The kernel sends CREATE for a name its lookup just did not find: nearly always a new
	 * file. Asked exclusively, a new file needs no truncate for O_TRUNC (one MDS commit
	 * less for open(O_CREAT|O_TRUNC), as most programs create); a name that exists by
	 * now gets the open's own flags, as before. */
	if (!(flags & O_EXCL))
		rc = create_rw(lf, parent, name, (flags & ~O_TRUNC) | O_EXCL, acc, mode, &f,
			       &readable);
	fresh = !rc;
	if (rc == -EEXIST) {
		rc = create_rw(lf, parent, name, flags, acc, mode, &f, &readable);
		fresh = !rc && (flags & O_EXCL);
	}
	/* the parent's attributes after the create answer the kernel's next GETATTR of it */
	lf_dirattr_end(lf, gen, &pst, !rc && !lode_file_parent_stat(f, &pst) && pst.ino == parent);
	if (rc == -EBUSY && !(flags & O_EXCL)) {
		/* the file exists and this mount holds its lease (the kernel had no dentry
		 * for it): share our writer, as an open would */
		shared = true;
		rc = lode_ll_lookup(lf->c, parent, name, &st);
		if (!rc)
			rc = S_ISREG(st.mode) ? lf_writer_open(lf, st.ino, fi->flags, &h->w)
					      : -EBUSY;
	} else if (!rc) {
		rc = lf_writer_adopt(lf, f, readable, &h->w);
		if (rc)
			lode_close(f);
	}
	if (!rc && (fi->flags & O_ACCMODE) != O_WRONLY && !h->w->readable)
		rc = lode_ll_open(lf->c, h->w->ino, O_RDONLY, &h->rf);
	/* our own create answered with the file's attributes (and the handle knows what its
	 * O_TRUNC changed): no need to ask the MDS again. A writer this mount already had
	 * may have written since its open: ask, as lf_open does. */
	if (!rc && shared)
		rc = lode_fstat(h->w->f, &st);
	else if (!rc)
		lode_file_stat_cached(h->w->f, &st);
	if (rc) {
		handle_free(lf, h);
		lf_reply_err(req, rc);
		return;
	}
	if (!rc && (fi->flags & O_TRUNC))
		rc = truncated_kill_privs(lf, h, &st);
	if (rc) {
		handle_free(lf, h);
		lf_reply_err(req, rc);
		return;
	}
	h->write_through = write_through(fi->flags);
	open_finish_or_defer(&(struct open_job){.lf = lf,
						.req = req,
						.h = h,
						.fi = *fi,
						.ino = st.ino,
						.st = st,
						.fresh = fresh && !shared,
						.create = true});
}

/*
 * Each worker thread keeps one read buffer of LF_IO_MAX for its whole life. A buffer
 * malloc'd and freed per read went back to the kernel between reads (glibc trims the
 * thread's heap), and every read then faulted in and zeroed 1 MiB of fresh pages: 12% of
 * lode-fuse's time in a model load.
 */
static pthread_key_t read_buf_key;
static pthread_once_t read_buf_once = PTHREAD_ONCE_INIT;

static void read_buf_key_init(void)
{
	if (pthread_key_create(&read_buf_key, free))
		abort(); /* only when the process is out of keys: nothing to go on with */
}

static char *read_buf_get(size_t size)
{
	char *buf;

	if (size > LF_IO_MAX)
		return malloc(size);
	pthread_once(&read_buf_once, read_buf_key_init);
	buf = pthread_getspecific(read_buf_key);
	if (!buf) {
		buf = malloc(LF_IO_MAX);
		if (buf && pthread_setspecific(read_buf_key, buf)) {
			free(buf);
			buf = NULL;
		}
	}
	return buf;
}

static void read_buf_put(char *buf, size_t size)
{
	if (size > LF_IO_MAX)
		free(buf);
}

/*
 * A read that found the handle's end of file before size bytes: if the kernel may have been
 * told the file is longer (lf_ksize_beyond, fuse_state.c), it would keep zeros for the
 * bytes that came since the handle's open; then the handle asks the MDS how long the file
 * is now and reads them too. Returns the bytes read in all, or -errno.
 */
static ssize_t read_grown(struct lode_fuse *lf, uint64_t ino, struct lode_file *f, char *buf,
			  size_t size, uint64_t off, ssize_t n)
{
	uint64_t end = off + (uint64_t)n, now;
	ssize_t more;
	int rc;

	if (!lf_ksize_beyond(lf, ino, end))
		return n;
	rc = lode_file_grow(f, &now);
	if (rc)
		return rc;
	if (now <= end)
		return n;
	more = lode_pread(f, buf + n, size - (size_t)n, end);
	return more < 0 ? more : n + more;
}

void lf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct lode_fuse *lf = fuse_req_userdata(req);
	struct lf_handle *h = (struct lf_handle *)(uintptr_t)fi->fh;
	struct lf_writer *w = NULL;
	struct lode_file *f;
	uint64_t start = lf_metrics_now_ns(), ra = 0;
	ssize_t n;
	char *buf;

	buf = read_buf_get(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* through this mount's writer if there is one: it knows the size not yet committed,
	 * and a short read would make the kernel shrink the file */
	if (h->w) {
		lf_writer_drain(h->w);
		f = h->w->readable ? h->w->f : h->rf;
	} else {
		w = lf_writer_find(lf, ino);
		if (w) {
			lf_writer_drain(w);
			if (!w->readable) {
				lf_writer_put(lf, w);
				w = NULL;
			}
		}
		f = w ? w->f : h->rf;
	}
	if (f)
		ra = lode_readahead_bytes(f);
	n = f ? lode_pread(f, buf, size, (uint64_t)off) : -EBADF;
	if (n >= 0 && (size_t)n < size && !h->w && !w) /* a writer here knows the size */
		n = read_grown(lf, ino, f, buf, size, (uint64_t)off, n);
	if (n >= 0) {
		/* what read-ahead had ready: this read's share of the file's count (a read at
		 * the same time on the handle may add to it, so at most what was read) */
		ra = lode_readahead_bytes(f) - ra;
		lf_metrics_read((uint64_t)n, ra < (uint64_t)n ? ra : (uint64_t)n, start);
	}
	if (w)
		lf_writer_put(lf, w);
	if (n < 0) {
		lf_reply_err(req, (int)n);
	} else {
		lf_ok(lf);
		fuse_reply_buf(req, buf, (size_t)n);
	}
	read_buf_put(buf, size);
}

void lf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi)
{
	struct lode_fuse *lf = fuse_req_userdata(req);
	struct lf_handle *h = (struct lf_handle *)(uintptr_t)fi->fh;
	struct lf_writer *w = h ? h->w : NULL;
	ssize_t n;

	(void)ino;
	if (!w) {
		fuse_reply_err(req, EBADF);
		return;
	}
	n = lf_writer_kill_privs(lf, req, w);
	if (!n)
		n = lf_writer_write(w, buf, size, (uint64_t)off, h->write_through);
	if (n < 0) {
		lf_reply_err(req, (int)n);
	} else {
		lf_metrics_write((uint64_t)n);
		lf_ok(lf);
		fuse_reply_write(req, (size_t)n);
	}
}

/* fallocate(2): reserve space (mode 0, KEEP_SIZE) or punch a hole; see
 * lode_fallocate(). Through the shared writer, after the buffered writes before it. */
void lf_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
		  struct fuse_file_info *fi)
{
	struct lode_fuse *lf = lf_req(req);
	struct lf_writer *w = lf_handle_writer(fi);
	int rc;

	(void)ino;
	if (!w) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (offset < 0 || length <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc = lf_writer_kill_privs(lf, req, w);
	if (!rc)
		rc = lf_writer_sync_err(w, false);
	if (!rc)
		rc = lode_fallocate(w->f, mode, (uint64_t)offset, (uint64_t)length);
	if (!rc)
		lf_ok(lf);
	lf_reply_status(req, rc);
}

void lf_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct lf_writer *w = lf_handle_writer(fi);
	int rc = 0;

	(void)ino;
	if (w) {
		lf_req(req);
		rc = lf_writer_sync_err(w, true);
		if (!rc)
			rc = lode_flush(w->f);
	}
	lf_reply_status(req, rc);
}

void lf_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct lf_writer *w = lf_handle_writer(fi);
	int rc = 0;

	(void)ino;
	(void)datasync; /* size and mtime are part of what a reader needs: always commit */
	if (w) {
		lf_req(req);
		rc = lf_writer_sync_err(w, false);
		if (!rc)
			rc = lode_fsync(w->f);
	} else {
		rc = lode_sync(lf_req(req)->c); /* namespace=lazy: the file's creation, say */
	}
	lf_reply_status(req, rc);
}

void lf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct lode_fuse *lf = lf_req(req);
	struct lf_handle *h = (struct lf_handle *)(uintptr_t)fi->fh;

	(void)ino;
	/* errors here reach no one (close(2) already returned flush's); a failed final
	 * commit leaves the size of the last successful flush */
	handle_free(lf, h);
	fuse_reply_err(req, 0);
}
