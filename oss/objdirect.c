/* SPDX-License-Identifier: MIT */
/*
 * Object store: which reads go to the disk past the page cache.
 *
 * A read the transport would splice from the page cache is read with O_DIRECT into memory
 * instead when it is large (DIRECT_MIN or more), none of its range is cached, and nobody
 * read the same place lately. A model being loaded is read once: through the page cache,
 * the kernel allocates, fills and later reclaims a page for every 4 KiB of it, and the OSS
 * keeps a second copy of what its readers already hold. Measured on this project's VM, a
 * cold read of a 4 GiB checkpoint's objects cost 2.5-2.9 s of CPU through the page cache
 * and 0.15 s with O_DIRECT, in half the time (docs/benchmarks.md).
 *
 * What stays cached: ranges in the page cache (a recent write, a warm object) are spliced
 * from it as before; so are small reads. Where several servers load one model at once, the
 * second read of a place within DIRECT_REUSE_NS goes through the page cache, so that the
 * third and later readers find it there: the disk serves about two reads of each byte, not
 * one per reader. Readers spaced further apart each read from the disk.
 *
 * The scrub reads past the page cache whatever is cached (lode_objstore_read_disk): it
 * checks what the disk holds, not a cached copy of it, and leaves the page cache to the
 * readers instead of replacing it with every object of the store.
 *
 * cachestat(2) (Linux 6.5) says what is cached: where the kernel lacks it, client reads go
 * through the page cache as they did before, and only the scrub reads past it. Where the
 * file system refuses O_DIRECT, or with --direct-reads off, every read goes through it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "objstore_impl.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* Linux 6.5, the same number on every architecture */
#endif

#define DIRECT_MIN	(256u * 1024)
#define DIRECT_REUSE_NS (2ull * 1000000000)
/* Direct reads land in buffers of DIRECT_BUF bytes, kept for the next read: a fresh buffer
 * per read cost a page fault and a page clearing per 4 KiB, as much CPU as the send, until
 * reads reused them (docs/benchmarks.md). At most DIRECT_POOL_MAX wait, in all. */
#define DIRECT_BUF	LODE_DATA_MAX
#define DIRECT_POOL_MAX 32

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static void *pool[DIRECT_POOL_MAX]; /* protected by pool_lock */
static unsigned pool_n;		    /* protected by pool_lock */

struct cachestat_range {
	uint64_t off, len;
};

struct cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A well-mixed 64-bit key of a place: the object and which DIRECT_MIN of it. Never 0, the
 * key of an unused slot. */
static uint64_t place_key(const struct lode_wire_objid *id, uint64_t off)
{
	uint64_t k = id->ino * 0x9e3779b97f4a7c15ull;

	k ^= (id->generation + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
	k ^= ((uint64_t)id->stripe << 40 ^ off / DIRECT_MIN) * 0x94d049bb133111ebull;
	k ^= k >> 31;
	return k ? k : 1;
}

/* Whether the place was read directly within DIRECT_REUSE_NS; if not, it is now. A slot
 * holds one place: another one hashing there replaces it, which costs at most a second
 * read from the disk. Threads race on slots without harm: a torn pair reads as another
 * place. */
static bool read_lately(struct lode_objstore *st, uint64_t key, uint64_t now)
{
	struct direct_seen *s = &st->seen[key % DIRECT_SEEN_SLOTS];

	if (atomic_load_explicit(&s->key, memory_order_relaxed) == key &&
	    now - atomic_load_explicit(&s->ns, memory_order_relaxed) < DIRECT_REUSE_NS)
		return true;
	atomic_store_explicit(&s->ns, now, memory_order_relaxed);
	atomic_store_explicit(&s->key, key, memory_order_relaxed);
	return false;
}

/* The data file opened O_DIRECT: the same inode as f->dfd (reopened through /proc, so a
 * removal and re-creation of the name cannot swap it), kept with the pair. */
static bool direct_fd(struct obj_fds *f)
{
	char path[64];

	if (f->direct_fd >= 0)
		return true;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->dfd);
	f->direct_fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	return f->direct_fd >= 0;
}

void *objstore_direct_buf(void)
{
	void *p = NULL;

	pthread_mutex_lock(&pool_lock);
	if (pool_n)
		p = pool[--pool_n];
	pthread_mutex_unlock(&pool_lock);
	if (!p && posix_memalign(&p, DIRECT_ALIGN, DIRECT_BUF))
		return NULL;
	return p;
}

void objstore_direct_buf_free(void *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&pool_lock);
	if (pool_n < DIRECT_POOL_MAX) {
		pool[pool_n++] = p;
		p = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
	free(p);
}

bool objstore_direct_open(struct lode_objstore *st, struct obj_fds *f, size_t len)
{
	if (len > DIRECT_BUF || !atomic_load_explicit(&st->direct_io, memory_order_relaxed))
		return false;
	if (direct_fd(f))
		return true;
	/* the file system refuses O_DIRECT (EINVAL), or there is no /proc: never again */
	if (errno != EMFILE && errno != ENFILE && errno != ENOMEM)
		objstore_direct_refused(st);
	return false;
}

bool objstore_read_direct(struct lode_objstore *st, struct obj_fds *f, uint64_t off, size_t len)
{
	struct cachestat_range r = {off, len};
	struct cachestat cs;

	if (len < DIRECT_MIN || !atomic_load_explicit(&st->direct_reads, memory_order_relaxed))
		return false;
	if (syscall(__NR_cachestat, f->dfd, &r, &cs, 0) < 0) {
		if (errno == ENOSYS || errno == EPERM) /* the kernel cannot tell: never */
			atomic_store(&st->direct_reads, false);
		return false;
	}
	if (cs.nr_cache || read_lately(st, place_key(&f->id, off), now_ns()))
		return false;
	return objstore_direct_open(st, f, len);
}

void objstore_direct_refused(struct lode_objstore *st)
{
	atomic_store(&st->direct_io, false);
	atomic_store(&st->direct_reads, false);
}

void objstore_direct_probe(struct lode_objstore *st, int fd)
{
	struct cachestat_range r = {0, 0};
	struct cachestat cs;

	st->direct_capable = syscall(__NR_cachestat, fd, &r, &cs, 0) == 0;
	atomic_store(&st->direct_io, true);
	atomic_store(&st->direct_reads, st->direct_capable);
}

bool lode_objstore_set_direct_reads(struct lode_objstore *st, bool on)
{
	atomic_store(&st->direct_io, on);
	atomic_store(&st->direct_reads, on && st->direct_capable);
	return on && st->direct_capable;
}
