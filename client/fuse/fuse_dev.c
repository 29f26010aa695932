/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: the session's reads and writes of /dev/fuse, through libfuse's custom I/O
 * hooks, for one thing libfuse 3.14 cannot do: answer INIT with FUSE_DIRECT_IO_ALLOW_MMAP.
 *
 * O_DIRECT opens are served in FUSE's direct_io mode (FOPEN_DIRECT_IO): the kernel hands
 * each read and write to us as the application issued it, which an O_DIRECT loader needs
 * (1.5x the throughput of the kernel's generic direct I/O path over the page-cache mode,
 * docs/fuse.md). Linux refuses MAP_SHARED mmap of such a file (ENODEV) unless the server
 * set FUSE_DIRECT_IO_ALLOW_MMAP (flags2 bit 4, i.e. bit 36, Linux 6.6 and later) in its
 * INIT reply; libfuse 3.14 neither knows the flag nor lets a file system add one. So the
 * INIT request is read here: when the kernel offers the flag, the INIT reply (the one
 * write with INIT's unique id) gets it added, and lf_dio_mmap() says so. Against a kernel
 * that does not offer it, nothing is changed and lode-fuse serves O_DIRECT opens in
 * page-cache mode instead (still uncached, through the kernel's direct I/O path), so mmap
 * works either way.
 *
 * Only the INIT exchange is looked at; every other read and write passes straight through.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lode_fuse.h"

#define LF_FUSE_INIT_EXT	      (1u << 30)
#define LF_FUSE_DIRECT_IO_ALLOW_MMAP2 (1u << (36 - 32)) /* in flags2 */

static _Atomic uint64_t init_unique; /* INIT's unique id once seen, while its reply is due */
static atomic_int init_offers;	     /* the kernel offered FUSE_DIRECT_IO_ALLOW_MMAP */
static atomic_int dio_mmap;	     /* and our INIT reply took it */

bool lf_dio_mmap(void)
{
	return atomic_load_explicit(&dio_mmap, memory_order_relaxed);
}

static ssize_t dev_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	int err = errno;
	const struct fuse_in_header *h = buf;

	(void)userdata;
	if (n >= (ssize_t)(sizeof(*h) + offsetof(struct fuse_init_in, flags2) + 4) &&
	    h->opcode == FUSE_INIT) {
		const struct fuse_init_in *in = (const void *)(h + 1);

		atomic_store(&init_offers, (in->flags & LF_FUSE_INIT_EXT) &&
					       (in->flags2 & LF_FUSE_DIRECT_IO_ALLOW_MMAP2));
		atomic_store(&init_unique, h->unique);
	}
	errno = err; /* libfuse reads errno after this returns */
	return n;
}

static ssize_t dev_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	uint64_t want = atomic_load_explicit(&init_unique, memory_order_relaxed);

	(void)userdata;
	if (want && count >= 2 && iov[0].iov_len >= sizeof(struct fuse_out_header) &&
	    iov[1].iov_len >= offsetof(struct fuse_init_out, flags2) + 4) {
		const struct fuse_out_header *oh = iov[0].iov_base;
		struct fuse_init_out *out = iov[1].iov_base;

		if (oh->unique == want && oh->error == 0) {
			atomic_store(&init_unique, 0);
			if (atomic_load(&init_offers) && out->minor >= 36) {
				out->flags |= LF_FUSE_INIT_EXT;
				out->flags2 |= LF_FUSE_DIRECT_IO_ALLOW_MMAP2;
				atomic_store(&dio_mmap, 1);
			}
		}
	}
	return writev(fd, iov, count);
}

int lf_dev_hook(struct lode_fuse *lf)
{
	static const struct fuse_custom_io io = {.read = dev_read, .writev = dev_writev};

	return fuse_session_custom_io(lf->se, &io, fuse_session_fd(lf->se));
}
