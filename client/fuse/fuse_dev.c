/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: the session's reads and writes of /dev/fuse, through libfuse's custom I/O
 * hooks, for what libfuse 3.14 cannot do: answer INIT with flags it does not know, and
 * count the kernel's requests by opcode (lode_fuse_requests_total, fuse_metrics.c) with
 * the time each spent here, from its read to its reply (lode_fuse_request_seconds_total).
 *
 * A request is timed when the thread that read it replies to it, as every request thread
 * of libfuse's loop does for all but a few: the thread remembers what it read last, and
 * its next write with that unique id is the reply. Replies made later by other threads
 * (a deferred open, fuse_defer.c) and requests with no reply (FORGET) are counted but not
 * timed.
 *
 * FUSE_DIRECT_IO_ALLOW_MMAP. O_DIRECT opens are served in FUSE's direct_io mode
 * (FOPEN_DIRECT_IO): the kernel hands each read and write to us as the application issued
 * it, which an O_DIRECT loader needs (1.5x the throughput of the kernel's generic direct
 * I/O path over the page-cache mode, docs/fuse.md). Linux refuses MAP_SHARED mmap of such
 * a file (ENODEV) unless the server set FUSE_DIRECT_IO_ALLOW_MMAP (flags2 bit 4, i.e. bit
 * 36, Linux 6.6 and later) in its INIT reply. Against a kernel that does not offer it,
 * lode-fuse serves O_DIRECT opens in page-cache mode instead (still uncached, through the
 * kernel's direct I/O path), so mmap works either way (lf_dio_mmap()).
 *
 * FUSE_PARALLEL_DIROPS. lode-fuse asks for it (main.c), and libfuse 3.14 drops it from
 * the reply: without it the kernel takes a lock of the directory around every LOOKUP and
 * READDIR, so processes looking up names in one directory (a loader's stat()s, the
 * storm's shards) go one at a time per mount. Nothing in lode-fuse relies on it.
 *
 * FUSE_HANDLE_KILLPRIV_V2 (Linux 5.11 and later). Before each write(2) the kernel asks
 * whether the file has privileges to drop: a GETXATTR of security.capability through
 * lode-fuse per write, answered here without the MDS (fuse_xattr.c) but a round trip
 * through the kernel all the same, as many as the WRITEs themselves for small writes. With
 * this flag the kernel leaves dropping them to the file system and remembers, per inode
 * until its attributes are next refreshed, that there was none to drop (SB_NOSEC): one
 * GETXATTR per file instead of one per write. lode-fuse drops setuid and setgid itself
 * on write, truncate and chown (lf_kill_privs; the MDS for a chown that changes owner or
 * group), by the caller's rights as the kernel would, and stores no file capabilities.
 * (FUSE_HANDLE_KILLPRIV, the first version, is another flag libfuse 3.14 drops.)
 *
 * The INIT request is read here; when the kernel offers a flag, the INIT reply (the one
 * write with INIT's unique id) gets it added. The reply's protocol minor is libfuse's own
 * (7.31 for 3.14), older than either flag; Linux takes the flags (and flags2, under
 * FUSE_INIT_EXT) whatever the minor, so it is not looked at: a check that it was at least
 * 7.36 kept FUSE_DIRECT_IO_ALLOW_MMAP from ever being taken. Every other read and write
 * passes straight through, counted.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lode_fuse.h"

/* INIT flags as Linux numbers them, flags2 as bits 32 to 63 (under FUSE_INIT_EXT) */
#define LF_FUSE_PARALLEL_DIROPS	     (1ull << 18)
#define LF_FUSE_HANDLE_KILLPRIV_V2   (1ull << 28)
#define LF_FUSE_INIT_EXT	     (1ull << 30)
#define LF_FUSE_DIRECT_IO_ALLOW_MMAP (1ull << 36)
#define LF_FUSE_OVER_IO_URING	     (1ull << 41)
/* the flags our INIT reply takes where the kernel offers them */
#define LF_INIT_WANT                                                                               \
	(LF_FUSE_PARALLEL_DIROPS | LF_FUSE_HANDLE_KILLPRIV_V2 | LF_FUSE_DIRECT_IO_ALLOW_MMAP)

static _Atomic uint64_t init_unique; /* INIT's unique id once seen, while its reply is due */
static _Atomic uint64_t offered;     /* of LF_INIT_WANT, those the kernel offered */
static _Atomic uint64_t took;	     /* and our INIT reply took */

static bool taken(uint64_t flag)
{
	return atomic_load_explicit(&took, memory_order_relaxed) & flag;
}

bool lf_dio_mmap(void)
{
	return taken(LF_FUSE_DIRECT_IO_ALLOW_MMAP);
}

bool lf_killpriv_v2(void)
{
	return taken(LF_FUSE_HANDLE_KILLPRIV_V2);
}

static atomic_bool uring_refused; /* the kernel refused a ring entry: /dev/fuse after all */

void lf_dev_uring_refused(void)
{
	atomic_store(&uring_refused, true);
}

bool lf_io_uring(void)
{
	return taken(LF_FUSE_OVER_IO_URING) && !atomic_load(&uring_refused);
}

bool lf_parallel_dirops(void)
{
	return taken(LF_FUSE_PARALLEL_DIROPS);
}

/* what this request thread read last, until it replies to it */
static _Thread_local struct {
	uint64_t unique, start_ns;
	uint32_t opcode;
} reading;

void lf_dev_request_begin(uint64_t unique, uint32_t opcode)
{
	lf_metrics_request(opcode);
	reading.unique = unique;
	reading.opcode = opcode;
	reading.start_ns = lf_metrics_now_ns();
}

static ssize_t dev_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	int err = errno;
	const struct fuse_in_header *h = buf;
	const struct lode_fuse *lf = userdata;

	reading.unique = 0;
	if (n >= (ssize_t)sizeof(*h))
		lf_dev_request_begin(h->unique, h->opcode);
	if (n >= (ssize_t)(sizeof(*h) + offsetof(struct fuse_init_in, flags2) + 4) &&
	    h->opcode == FUSE_INIT) {
		const struct fuse_init_in *in = (const void *)(h + 1);
		uint64_t flags = in->flags;

		if (flags & LF_FUSE_INIT_EXT)
			flags |= (uint64_t)in->flags2 << 32;
		atomic_store(&offered,
			     flags & (LF_INIT_WANT | (lf->o.io_uring ? LF_FUSE_OVER_IO_URING : 0)));
		atomic_store(&init_unique, h->unique);
	}
	errno = err; /* libfuse reads errno after this returns */
	return n;
}

/* With -o io_uring, after the INIT reply: the queues' threads, if the reply took
 * FUSE_OVER_IO_URING (the kernel then holds every request until each queue has an entry);
 * else why not, and with io_uring=require, no mount. */
static void uring_after_init(struct lode_fuse *lf, int prepared)
{
	enum lf_level lv = lf->o.io_uring > 1 ? LF_ERR : LF_WARN;

	if (taken(LF_FUSE_OVER_IO_URING)) {
		lf_uring_start(lf);
		lf_log(LF_INFO, "serving the mount over io_uring");
		return;
	}
	if (!(atomic_load(&offered) & LF_FUSE_OVER_IO_URING))
		lf_log(lv, "io_uring: the kernel does not offer FUSE over io_uring (Linux 6.14 and "
			   "later, with /sys/module/fuse/parameters/enable_uring set to Y)");
	else
		lf_log(lv, "io_uring: %s", strerror(-prepared));
	if (lf->o.io_uring > 1) {
		lf_log(LF_ERR, "io_uring=require: unmounting");
		fuse_session_exit(lf->se);
	} else {
		lf_log(LF_INFO, "serving the mount through /dev/fuse");
	}
}

/* The largest request or reply body the kernel sends or takes once the INIT reply out is
 * in (its max_payload_sz): max_write, max_pages' pages, at least 8 KiB. */
static size_t max_payload(const struct fuse_init_out *out)
{
	size_t n = (size_t)out->max_pages * (size_t)sysconf(_SC_PAGESIZE);

	if (n < out->max_write)
		n = out->max_write;
	return n < FUSE_MIN_READ_BUFFER ? FUSE_MIN_READ_BUFFER : n;
}

static ssize_t dev_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	uint64_t want = atomic_load_explicit(&init_unique, memory_order_relaxed);
	struct lode_fuse *lf = userdata;
	bool init_reply = false;
	int prepared = 0;
	ssize_t n;

	if (reading.unique && count >= 1 && iov[0].iov_len >= sizeof(struct fuse_out_header) &&
	    ((const struct fuse_out_header *)iov[0].iov_base)->unique == reading.unique) {
		lf_metrics_request_done(reading.opcode, lf_metrics_now_ns() - reading.start_ns);
		reading.unique = 0;
	}
	if (want && count >= 2 && iov[0].iov_len >= sizeof(struct fuse_out_header) &&
	    iov[1].iov_len >= offsetof(struct fuse_init_out, flags2) + 4) {
		const struct fuse_out_header *oh = iov[0].iov_base;
		struct fuse_init_out *out = iov[1].iov_base;

		if (oh->unique == want && oh->error == 0) {
			uint64_t add = atomic_load(&offered);

			/* the queues are made before the reply takes the flag: once it has, the
			 * kernel serves no request until they are registered */
			if ((add & LF_FUSE_OVER_IO_URING) &&
			    (prepared =
				 lf_uring_prepare(lf, fuse_session_fd(lf->se), max_payload(out))))
				add &= ~LF_FUSE_OVER_IO_URING;
			atomic_store(&init_unique, 0);
			out->flags |= (uint32_t)add;
			if (add >> 32) {
				out->flags |= (uint32_t)LF_FUSE_INIT_EXT;
				out->flags2 |= (uint32_t)(add >> 32);
			}
			atomic_store(&took, add);
			init_reply = true;
		}
	}
	if (lf->uring && lf_uring_reply(lf, iov, count, &n))
		return n;
	n = writev(fd, iov, count);
	if (init_reply && lf->o.io_uring) {
		if (n < 0 && taken(LF_FUSE_OVER_IO_URING))
			lf_uring_stop(lf); /* no INIT reply, no mount */
		else if (n >= 0)
			uring_after_init(lf, prepared);
	}
	return n;
}

int lf_dev_hook(struct lode_fuse *lf)
{
	static const struct fuse_custom_io io = {.read = dev_read, .writev = dev_writev};

	return fuse_session_custom_io(lf->se, &io, fuse_session_fd(lf->se));
}
