/* SPDX-License-Identifier: MIT */
/*
 * The object store's insides, shared by its files and by nothing else in oss/ (which uses
 * objstore.h): the store and per-thread structures, and the helpers one part of the store
 * offers another. objstore.h has the layout, the threading rules and the crash-safety
 * argument these follow.
 */
#ifndef LODE_OSS_OBJSTORE_IMPL_H
#define LODE_OSS_OBJSTORE_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "objstore.h"

#define NDIRS		256
#define NLOCKS		64
#define MAX_IOS		64
#define DEFAULT_MAX_FDS 64
/* "<16 hex>.<16 hex>.<8 hex>" */
#define OBJ_NAME_LEN  (16 + 1 + 16 + 1 + 8)
#define OBJ_NAME_BUF  (OBJ_NAME_LEN + sizeof(".sum"))
#define CHUNK	      ((uint64_t)LODE_CHUNK_SIZE)
#define RANGE_BUCKETS 64
/* objdirect.c: O_DIRECT reads align buffer, offset and length to this; and the places
 * (256 KiB each) read that way lately that it remembers: 16 GiB, what a fast target reads
 * in the 2 s it remembers them for (1 MiB of memory, touched only where used) */
#define DIRECT_ALIGN	  4096u
#define DIRECT_SEEN_SLOTS 65536

/* objlock.c: the held and queued ranges of the objects that hash here */
struct range_bucket {
	pthread_mutex_t lock;
	struct lode_obj_range *held;	/* protected by lock */
	struct lode_obj_range *waiting; /* protected by lock; in arrival order */
};

/* objdirect.c: one place (object and offset) read with O_DIRECT, and when */
struct direct_seen {
	_Atomic uint64_t key;
	_Atomic uint64_t ns;
};

struct lode_objstore {
	int dirfd[NDIRS]; /* DATA/objects/00 .. ff, read-only after open */
	/* Held while opening or removing an object's pair of files; never around I/O. */
	pthread_mutex_t locks[NLOCKS];
	_Atomic uint64_t count;
	struct range_bucket ranges[RANGE_BUCKETS]; /* objlock.c */
	uint64_t zero_sum; /* lode_chunk_sum of an all-zero chunk: what a hole reads as */

	/*
	 * Every worker's descriptor cache, so that a removal can reach them all: a cached
	 * descriptor of a removed object keeps its blocks allocated (and a full disk full)
	 * until it is closed, and an idle worker would never look at its cache again.
	 */
	pthread_mutex_t ios_lock;
	struct lode_objstore_io *ios[MAX_IOS]; /* protected by ios_lock */

	/* lode_objstore_list's window (objlist.c): the smallest ids after where a listing
	 * stood, as one scan found them, so that the pages of a listing cost one scan per
	 * window, not one per page. All protected by list_lock. */
	pthread_mutex_t list_lock;
	struct lode_wire_objid *list_ids; /* sorted; list_n of them */
	size_t list_n;
	struct lode_wire_objid list_last; /* the last id a page served from it */
	bool list_cont;			  /* that page was not the listing's last */
	bool list_more;			  /* objects after the window existed at the scan */
	uint64_t list_ns;		  /* when it was scanned (CLOCK_MONOTONIC) */

	/* objdirect.c: whether large uncached reads may bypass the page cache, and the
	 * places read that way lately */
	_Atomic bool direct_io;	   /* O_DIRECT may be used at all */
	_Atomic bool direct_reads; /* and for uncached client reads */
	bool direct_capable;	   /* the kernel has cachestat(2); set at open */
	struct direct_seen seen[DIRECT_SEEN_SLOTS];
};

/* An object's open data and checksum files. Owned by one lode_objstore_io. */
struct obj_fds {
	struct lode_wire_objid id;
	int dfd;
	int sfd;
	int direct_fd; /* the data file opened O_DIRECT (objdirect.c); -1: not yet */
	unsigned refs; /* in-flight operations, plus 1 while in the cache */
	bool cached;
	struct obj_fds *prev, *next; /* LRU list, most recent first */
};

struct lode_objstore_io {
	struct lode_objstore *st;
	struct lode_loop *loop;
	unsigned max_fds;
	unsigned nfds;
	struct obj_fds *head, *tail;
	unsigned ops; /* objio.c's operations in flight on this loop */
};

/* objname.c: an object's file names and where they live */

/* The data file's name of id (or with sum, its checksum file's) into buf[OBJ_NAME_BUF]. */
void objstore_name(const struct lode_wire_objid *id, char *buf, bool sum);
/* Accepts only the canonical data-file name, in the directory its ino maps to. */
bool objstore_parse_name(const char *name, unsigned dir, struct lode_wire_objid *id);
/* The striped mutex held while id's pair of files is opened or removed. */
pthread_mutex_t *objstore_lock(struct lode_objstore *st, const struct lode_wire_objid *id);
/* The descriptor of the directory that holds id's files. */
int objstore_dirfd(const struct lode_objstore *st, const struct lode_wire_objid *id);

/* objfds.c: an object's pair of open files and each thread's cache of them */

/*
 * The object's descriptors with a reference for the caller (objstore_fds_put() when done),
 * and the data file's stat. Validates a cached pair: a link count of 0 means another thread
 * removed the object, so the pair is reopened. Returns 0, -ENOENT (absent, !create) or
 * -errno.
 */
int objstore_fds_get(struct lode_objstore_io *io, const struct lode_wire_objid *id, bool create,
		     struct obj_fds **out, struct stat *stbuf);
/* Drops a reference; the last one closes the pair. */
void objstore_fds_put(struct obj_fds *f);

/* objdirect.c: reads past the page cache */

/*
 * Whether a read of [off, off + len) of f's data, which the caller would otherwise send
 * from the page cache, should be read with O_DIRECT (from f->direct_fd, opened here on
 * first use) into an objstore_direct_buf(): large (at most LODE_DATA_MAX), not cached at
 * all, and not read the same way within the last seconds. Records the read.
 */
bool objstore_read_direct(struct lode_objstore *st, struct obj_fds *f, uint64_t off, size_t len);
/* Whether a read of len bytes of f's data can be read with O_DIRECT (f->direct_fd, opened
 * here on first use), whatever is cached: the store allows it and len fits a buffer. */
bool objstore_direct_open(struct lode_objstore *st, struct obj_fds *f, size_t len);
/* A buffer for a direct read (LODE_DATA_MAX bytes, aligned), NULL if out of memory; and
 * its release, from any thread (NULL is accepted). */
void *objstore_direct_buf(void);
void objstore_direct_buf_free(void *p);
/* O_DIRECT failed with EINVAL: this store reads through the page cache from now on. */
void objstore_direct_refused(struct lode_objstore *st);
/* At open: whether the kernel can say what is cached (cachestat(2) of fd, any file of the
 * store); direct reads are on if it can. */
void objstore_direct_probe(struct lode_objstore *st, int fd);

/* objlist.c: which objects exist */

/* Counts the objects in every directory into *count. Returns 0 or -errno. */
int objstore_count_objects(struct lode_objstore *st, uint64_t *count);

#endif
