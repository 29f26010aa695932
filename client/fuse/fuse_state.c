/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: what every operation family shares. Credentials per request (and, on the
 * first, the mount's kernel readahead), the one place where liblode's negative errno
 * becomes a FUSE reply, attribute conversion, and the record of which file versions the
 * kernel's page cache holds (close-to-open).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>

#include "log.h"
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
	if (lf_log_syslog) { /* detached without --log: stderr is /dev/null */
		syslog(prios[level], "%s: %s", names[level], line);
		return;
	}
	/* the daemons' format: a dated line, or a level prefix for systemd's journal */
	lode_log(level == LF_ERR    ? LODE_LOG_ERR
		 : level == LF_WARN ? LODE_LOG_WARN
				    : LODE_LOG_INFO,
		 "%s", line);
}

/*
 * FUSE caps the readahead at the kernel's default (128 KiB), and one sequential reader
 * then has too few 1 MiB requests in flight to keep liblode's striped reads busy. The
 * mount's bdi takes a larger value through sysfs (as root); its name is the device
 * number that /proc/self/mountinfo gives for our mount point.
 */
static void set_readahead(struct lode_fuse *lf)
{
	unsigned maj = 0, min = 0;
	char line[4096], path[96];
	bool found = false;
	FILE *mi, *ra;

	if (!lf->o.read_ahead_kb || !lf->o.mount_abs)
		return;
	mi = fopen("/proc/self/mountinfo", "r");
	if (!mi)
		return;
	while (fgets(line, sizeof(line), mi)) {
		char mnt[4096], fstype[256];
		unsigned a, b;

		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE ... */
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &a, &b, mnt) != 3)
			continue;
		if (strcmp(mnt, lf->o.mount_abs) || !strstr(line, " - fuse.lode ") ||
		    sscanf(strstr(line, " - ") + 3, "%255s", fstype) != 1)
			continue;
		maj = a; /* the last match is the newest mount */
		min = b;
		found = true;
	}
	fclose(mi);
	if (!found)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
	ra = fopen(path, "w");
	if (ra) {
		int bad_write = fprintf(ra, "%u\n", lf->o.read_ahead_kb) < 0;

		if (!fclose(ra) && !bad_write)
			return;
	}
	lf_log(LF_WARN, "cannot set %s (%s): sequential reads will be slower", path,
	       strerror(errno));
}

/* The credentials lf_req() set last on this thread, as the MDS will see them. */
static __thread struct {
	uint32_t uid, gid;
	unsigned ngroups;
	uint32_t groups[LF_GROUPS_MAX];
} caller;

uint32_t lf_caller_uid(void)
{
	return caller.uid;
}

bool lf_caller_in_group(uint32_t gid)
{
	if (caller.gid == gid)
		return true;
	for (unsigned i = 0; i < caller.ngroups; i++)
		if (caller.groups[i] == gid)
			return true;
	return false;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The caller's supplementary groups, so that the MDS grants what a group grants (the
 * kernel already checked them, with default_permissions; the MDS checks again for itself).
 * FUSE sends only uid, gid and pid; libfuse reads the rest from /proc/PID/task/PID/status,
 * a file read per call, so a process's list is kept for LF_GROUPS_TTL_MS, keyed by pid
 * with its uid and gid (a process that changes ids is looked up again). A request with
 * no process behind it (pid 0) or whose process is gone gets none. Returns the count.
 */
static unsigned caller_groups(struct lode_fuse *lf, fuse_req_t req, const struct fuse_ctx *ctx,
			      uint32_t *out)
{
	struct lf_groups *slot = &lf->groups[ctx->pid % LF_GROUPS_SLOTS];
	uint64_t now = now_ms();
	gid_t list[LF_GROUPS_MAX];
	unsigned n = 0;
	int total;

	if (!ctx->pid)
		return 0;
	pthread_mutex_lock(&lf->glock);
	if (slot->pid == (uint32_t)ctx->pid && slot->uid == ctx->uid && slot->gid == ctx->gid &&
	    slot->until_ms > now) {
		n = slot->n;
		memcpy(out, slot->g, n * sizeof(*out));
		pthread_mutex_unlock(&lf->glock);
		return n;
	}
	pthread_mutex_unlock(&lf->glock);

	total = fuse_req_getgroups(req, (int)LF_GROUPS_MAX, list);
	if (total < 0)
		return 0;
	n = (unsigned)total < LF_GROUPS_MAX ? (unsigned)total : LF_GROUPS_MAX;
	for (unsigned i = 0; i < n; i++)
		out[i] = (uint32_t)list[i];

	pthread_mutex_lock(&lf->glock);
	slot->pid = (uint32_t)ctx->pid;
	slot->uid = ctx->uid;
	slot->gid = ctx->gid;
	slot->until_ms = now + LF_GROUPS_TTL_MS;
	slot->n = n;
	memcpy(slot->g, out, n * sizeof(*out));
	pthread_mutex_unlock(&lf->glock);
	return n;
}

struct lode_fuse *lf_req(fuse_req_t req)
{
	struct lode_fuse *lf = fuse_req_userdata(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	uint32_t uid = ctx->uid, gid = ctx->gid;
	uint32_t groups[LF_GROUPS_MAX];
	unsigned ngroups = 0;

	/* any request but INIT comes after the kernel applied INIT's reply, which would
	 * have undone a readahead set earlier */
	if (!atomic_load_explicit(&lf->readahead_set, memory_order_relaxed) &&
	    !atomic_exchange(&lf->readahead_set, 1))
		set_readahead(lf);
	if (lf->o.root_squash && uid == 0) {
		uid = LF_SQUASH_ID; /* as NFS squashes: and none of root's groups */
	} else if (uid != 0) {
		/* root passes the MDS's checks without them */
		ngroups = caller_groups(lf, req, ctx, groups);
		if (lf->o.root_squash) {
			for (unsigned i = 0; i < ngroups; i++)
				if (groups[i] == 0)
					groups[i] = LF_SQUASH_ID;
		}
	}
	if (lf->o.root_squash && gid == 0)
		gid = LF_SQUASH_ID;
	lode_thread_creds_set_groups(uid, gid, ngroups, groups);
	caller.uid = uid;
	caller.gid = gid;
	caller.ngroups = ngroups;
	memcpy(caller.groups, groups, ngroups * sizeof(groups[0]));
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

bool lf_refuse_ro(fuse_req_t req, const struct lode_fuse *lf)
{
	if (!lf->o.ro)
		return false;
	fuse_reply_err(req, EROFS);
	return true;
}

void lf_reply_status(fuse_req_t req, int rc)
{
	if (rc)
		lf_reply_err(req, rc);
	else
		fuse_reply_err(req, 0);
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
	lf_metrics_error(err);
	fuse_reply_err(req, err);
}

void lf_stat_to_attr(const struct lode_stat *st, struct stat *out)
{
	memset(out, 0, sizeof(*out));
	out->st_ino = st->ino;
	out->st_mode = st->mode;
	out->st_nlink = st->nlink;
	out->st_rdev = st->rdev;
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

void lf_fill_entry(struct lode_fuse *lf, const struct lode_stat *st, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = st->ino;
	e->generation = 0; /* Lode never reuses an inode number */
	lf_ksize_told(lf, st);
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

/*
 * Opens of one file on this mount that run at once may find different versions of it (a
 * change at another mount between their calls to the MDS), and finish in either order.
 * What one of them hands the kernel for every reader on the mount (an offer of its
 * attributes, a small file's pages) must never be older than what another already did:
 * the MDS's ctime moves with every change, mtime and size with every write.
 */
static bool older_than_seen(const struct lode_stat *st, const struct lf_cver *v)
{
	if (st->ctime_ns != v->vctime_ns)
		return st->ctime_ns < v->vctime_ns;
	if (st->mtime_ns != v->vmtime_ns)
		return st->mtime_ns < v->vmtime_ns;
	return st->size < v->vsize;
}

bool lf_version_newest(struct lode_fuse *lf, const struct lode_stat *st)
{
	struct lf_cver *v = &lf->cver[st->ino % LF_CVER_SLOTS];
	bool newest;

	pthread_mutex_lock(&lf->clock);
	newest = v->vino != st->ino || !older_than_seen(st, v);
	if (newest) {
		v->vino = st->ino;
		v->vsize = st->size;
		v->vctime_ns = st->ctime_ns;
		v->vmtime_ns = st->mtime_ns;
	}
	pthread_mutex_unlock(&lf->clock);
	return newest;
}

/*
 * The size the kernel may hold for a file, at most. A READ answered short (at the handle's
 * end of file) makes the kernel fill the rest of the page with zeros, and keep that page
 * unless it shrinks the file to the short end, which it does only if no attribute reply
 * came meanwhile. If it had been told the file is longer (the file grew at another mount
 * since the handle's open, and a LOOKUP, a GETATTR or a newer open here said so), those
 * zeros would stand for the new bytes, for every reader of the mount. So lf_read asks the
 * MDS again before a short answer whenever the kernel may have been told more; the
 * largest size told since the newest open dropped the kernel's attributes says so,
 * without a request, in the usual case.
 */
void lf_ksize_told(struct lode_fuse *lf, const struct lode_stat *st)
{
	struct lf_cver *v = &lf->cver[st->ino % LF_CVER_SLOTS];

	if (!S_ISREG(st->mode))
		return;
	pthread_mutex_lock(&lf->clock);
	if (v->maxino != st->ino) {
		v->maxino = st->ino;
		v->maxsize = st->size;
	} else if (st->size > v->maxsize) {
		v->maxsize = st->size;
	}
	if (v->minino != st->ino) {
		v->minino = st->ino;
		v->minsize = st->size;
	} else if (st->size < v->minsize) {
		v->minsize = st->size;
	}
	pthread_mutex_unlock(&lf->clock);
}

void lf_ksize_reset(struct lode_fuse *lf, uint64_t ino, uint64_t size)
{
	struct lf_cver *v = &lf->cver[ino % LF_CVER_SLOTS];

	pthread_mutex_lock(&lf->clock);
	v->maxino = ino;
	v->maxsize = size;
	pthread_mutex_unlock(&lf->clock);
}

/*
 * The size the kernel may hold for a file, at least. Of a GETATTR whose reply it refuses
 * (an open here dropped the attributes while it was in flight) the kernel keeps the size
 * it had, and reads up to that: a handle opened after another mount appended would read
 * short. So an open that drops the attributes while other handles are open first hands
 * the kernel the file's size if it may hold less (store_tail, fuse_file.c); the smallest
 * size told since the mount first told it of the file says whether, without a request.
 * A change through this mount (lf_kattr_forget) makes it unknown.
 */
bool lf_ksize_below(struct lode_fuse *lf, uint64_t ino, uint64_t size)
{
	struct lf_cver *v = &lf->cver[ino % LF_CVER_SLOTS];
	bool below;

	pthread_mutex_lock(&lf->clock);
	below = v->minino != ino || v->minsize < size;
	pthread_mutex_unlock(&lf->clock);
	return below;
}

bool lf_ksize_beyond(struct lode_fuse *lf, uint64_t ino, uint64_t end)
{
	struct lf_cver *v = &lf->cver[ino % LF_CVER_SLOTS];
	bool beyond;

	pthread_mutex_lock(&lf->clock);
	beyond = v->maxino != ino || v->maxsize > end;
	pthread_mutex_unlock(&lf->clock);
	return beyond;
}

/*
 * What the kernel was last told of a file's attributes (LOOKUP and GETATTR replies): a
 * guess, never proof. Of two attribute replies for one file in flight at once, the kernel
 * keeps the one its waiting process applies first and drops the other (attr_version), an
 * order lode-fuse cannot see; trusting the note to keep the kernel's attributes at an open
 * once let a read stop at an older size (close-to-open lost, `close-to-open`'s race). It
 * only says whether a small file's pages are worth handing over with its open
 * (store_small), and whether this mount changed the file meanwhile: its own changes
 * (writes, truncates, chmod: the kernel updates i_size itself) forget it.
 */
void lf_kattr_note(struct lode_fuse *lf, const struct lode_stat *st)
{
	struct lf_cver *v = &lf->cver[st->ino % LF_CVER_SLOTS];

	pthread_mutex_lock(&lf->clock);
	v->kino = st->ino;
	v->ksize = st->size;
	v->kmtime_ns = st->mtime_ns;
	v->kctime_ns = st->ctime_ns;
	v->kmode = st->mode;
	v->kuid = st->uid;
	v->kgid = st->gid;
	pthread_mutex_unlock(&lf->clock);
}

void lf_kattr_forget(struct lode_fuse *lf, uint64_t ino)
{
	struct lf_cver *v = &lf->cver[ino % LF_CVER_SLOTS];

	pthread_mutex_lock(&lf->clock);
	if (v->kino == ino)
		v->kino = 0;
	v->minino = ino; /* the kernel's size follows this mount's own change: unknown */
	v->minsize = 0;
	pthread_mutex_unlock(&lf->clock);
	lf_dirattr_forget(lf, ino); /* an open's attributes are older than the change */
}

bool lf_kattr_same(struct lode_fuse *lf, const struct lode_stat *st)
{
	struct lf_cver *v = &lf->cver[st->ino % LF_CVER_SLOTS];
	bool same;

	pthread_mutex_lock(&lf->clock);
	same = st->ino && v->kino == st->ino && v->ksize == st->size &&
	       v->kmtime_ns == st->mtime_ns && v->kctime_ns == st->ctime_ns &&
	       v->kmode == st->mode && v->kuid == st->uid && v->kgid == st->gid;
	pthread_mutex_unlock(&lf->clock);
	return same;
}

void lf_cache_forget(struct lode_fuse *lf, uint64_t ino)
{
	struct lf_cver *v = &lf->cver[ino % LF_CVER_SLOTS];

	pthread_mutex_lock(&lf->clock);
	if (v->ino == ino)
		v->ino = 0;
	pthread_mutex_unlock(&lf->clock);
}
