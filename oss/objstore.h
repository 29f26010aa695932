/* SPDX-License-Identifier: MIT */
/*
 * The object store of one storage target: objects as files under DATA/objects.
 *
 * An object is named by numbers only (wire_spec.h: ino, generation, stripe):
 *
 *   DATA/objects/<ino % 256, 2 hex>/<ino, 16 hex>.<generation, 16 hex>.<stripe, 8 hex>
 *
 * plus the same name + ".sum": one little-endian u64 xxh3 per LODE_CHUNK_SIZE chunk of
 * data (lode_chunk_sum: the chunk padded with zeros past the object's end). A zero entry,
 * or an entry past the end of the .sum file, is a hole ("never written") and reads as the
 * checksum of an all-zero chunk. Names are canonical (fixed width, lower case); listing
 * ignores anything else found in those directories.
 *
 * Threads. struct lode_objstore is shared and thread-safe. Each thread that does data
 * I/O owns a struct lode_objstore_io: its lode_loop (all pread/pwrite/fsync of objects go
 * through that ring) and a small LRU cache of open file descriptors. Opens, unlinks and
 * ftruncate are synchronous syscalls.
 *
 * Why caches stay correct when another thread removes an object: the data and .sum
 * descriptors of an object are opened as a pair, and removed as a pair, under one of a
 * few striped mutexes (taken only on cache misses and removals, never around I/O). Every
 * operation fstat()s the cached data descriptor (it needs the size anyway); a link count
 * of 0 means the pair was removed, so the entry is dropped and the pair reopened. An op
 * that passed that check before a concurrent removal writes into the removed pair, which
 * is the same as running entirely before the removal. Cache entries are reference counted:
 * an evicted entry is closed only when its last in-flight operation finishes, so a
 * descriptor number is never reused under an operation.
 *
 * Crash safety. Writes store data first, then the checksums. A crash between the two
 * leaves new data with old (or hole) checksums: readers see a mismatch, never bad data
 * reported as good. An object's fsync syncs its data, its checksums and its directory (at
 * once: until all three are done nothing was acknowledged), so a durable object is always
 * reachable by name; its creation alone syncs nothing, like any file's.
 */
#ifndef LODE_OSS_OBJSTORE_H
#define LODE_OSS_OBJSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "wire_spec.h"

struct lode_objstore;
struct lode_objstore_io;

/* Opens (creating if needed) the store under data_dir/objects and counts its objects.
 * Returns 0 or -errno. */
int lode_objstore_open(struct lode_objstore **out, const char *data_dir);
/* Closes the store. Every lode_objstore_io must have been destroyed. NULL is accepted. */
void lode_objstore_close(struct lode_objstore *st);

/* The approximate number of objects (counted at open, kept up to date since). */
uint64_t lode_objstore_count(const struct lode_objstore *st);

/* Bytes the objects and their checksum files occupy on disk (st_blocks), by a walk of every
 * object directory: slow on a big store, for a declared capacity (lode-oss --capacity). Sets
 * *bytes and returns 0, or returns -errno. */
int lode_objstore_bytes_used(struct lode_objstore *st, uint64_t *bytes);

/* Whether large uncached reads may bypass the page cache (lode_objstore_read_fd; on by
 * default where the kernel can say what is cached, cachestat(2), Linux 6.5), and whether
 * lode_objstore_read_disk may (on by default). Returns whether the former now do. A file
 * system that refuses O_DIRECT turns both off at the first try. */
bool lode_objstore_set_direct_reads(struct lode_objstore *st, bool on);

/* Per-thread I/O context on `loop` with at most max_fds cached objects (0: a default).
 * Use it only on the loop's thread. Returns 0 or -errno. */
int lode_objstore_io_create(struct lode_objstore *st, struct lode_loop *loop, unsigned max_fds,
			    struct lode_objstore_io **out);
/* Frees it and closes its cached descriptors. No operation may be in flight on it (entries
 * still referenced by one are left open). NULL is accepted. */
void lode_objstore_io_destroy(struct lode_objstore_io *io);

/*
 * A range of an object's chunks held by one write or truncate (objlock.c says why): chunks
 * [first, end) of id. Fill id, first, end, loop (the caller's) and granted, then lock. The
 * struct must stay valid until unlocked.
 */
struct lode_obj_range {
	struct lode_wire_objid id;
	uint64_t first, end;
	struct lode_loop *loop;
	void (*granted)(struct lode_obj_range *r); /* runs on loop once a queued range is held */
	struct lode_obj_range *next, *next_go;	   /* the store's, while locked or queued */
};

/* Takes r at once and returns true when no held or earlier queued range of the same object
 * overlaps it; else queues it and returns false, and r->granted(r) runs on r->loop once it
 * is held. Any thread. */
bool lode_objstore_range_lock(struct lode_objstore *st, struct lode_obj_range *r);
/* Lets go of a held range, resuming the queued ranges it was blocking. Any thread. */
void lode_objstore_range_unlock(struct lode_objstore *st, struct lode_obj_range *r);

/* Result of an operation, valid only during the completion callback unless stated. */
struct lode_obj_result {
	uint64_t object_size;  /* after the operation (REMOVE: before it; absent: 0) */
	uint64_t bytes_stored; /* data + checksum files, allocated on disk */
	/* OBJ_READ only. data (data_len bytes) and sums (nchunks u64, malloc'd) belong to
	 * the callback, which must free them (data with data_free, from any thread; sums
	 * with free()) or take them over. */
	void *data;
	void (*data_free)(void *data);
	size_t data_len;
	uint64_t *sums;
	uint32_t nchunks;
	/* lode_objstore_read_fd only, when data_len > 0: the object's data descriptor, open
	 * until the caller passes fd_ref to lode_objstore_fd_release() (on the io's thread) */
	int fd;
	void *fd_ref;
	/* lode_objstore_read_fd only: the bytes were read past the page cache into data
	 * (objdirect.c), not left for a zero-copy send */
	bool direct;
	/* writes only: nanoseconds the data's write held the loop's thread (objio.c's
	 * WRITE_INLINE_MAX; at least 1), or 0 when it went through io_uring */
	uint64_t inline_ns;
};

/* Frees res->data (if any) with res->data_free, from any thread, and clears it. */
void lode_obj_result_free_data(struct lode_obj_result *res);

/* Completion: status is 0 or a negative errno. Runs on the io's loop thread, possibly
 * before the submitting function returns (e.g. an early error). */
typedef void (*lode_obj_done_fn)(void *arg, int status, struct lode_obj_result *res);

/*
 * Writes len bytes at off (chunk aligned) with sums[ceil(len / CHUNK)] from the writer.
 * Every checksum is verified before anything is stored (-EBADMSG on mismatch). len must be
 * a multiple of LODE_CHUNK_SIZE unless the write ends at or past the object's current end
 * (-EINVAL otherwise: the stored bytes after it in the same chunk would not match its
 * checksum). flags: LODE_OBJ_F_SYNC makes data and checksums durable before completion;
 * otherwise the range's writeback is started at once, unless LODE_OBJ_F_LAZY and the write
 * ends in the object's first 256 KiB.
 * data and sums must stay valid until the callback. Disk full: -ENOSPC; then no checksum
 * of the range was changed unless its data was completely written.
 */
void lode_objstore_write(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			 uint64_t off, const void *data, size_t len, const uint64_t *sums,
			 unsigned flags, lode_obj_done_fn done, void *arg);

/* Reads up to len bytes at off (chunk aligned): res->data holds the bytes that exist (short
 * at the object's end; an object never written reads as empty) and res->sums the stored
 * checksums of the chunks they cover, with holes as the zero-chunk checksum. Nothing is
 * verified here: the reader does that. -EBADMSG when a chunk of the range has a checksum
 * but no data (the data file was deleted or cut short): lost data never reads as zeros. */
void lode_objstore_read(struct lode_objstore_io *io, const struct lode_wire_objid *id, uint64_t off,
			size_t len, lode_obj_done_fn done, void *arg);

/* Like lode_objstore_read, from the disk past the page cache (O_DIRECT) whatever is cached,
 * where the store can: what a scrub must check. Through the page cache where it cannot
 * (a file system without O_DIRECT, --direct-reads off). len at most LODE_DATA_MAX. */
void lode_objstore_read_disk(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			     uint64_t off, size_t len, lode_obj_done_fn done, void *arg);

/* Like lode_objstore_read, without reading the bytes: res->fd and res->data_len say where
 * they are (from off), for a caller that sends them with splice; res->sums as above. The
 * checksums describe the file as it was when they were read: a write racing the send can
 * make them disagree with the bytes, which the reader detects. A large range nobody has
 * cached is read from the disk past the page cache instead (res->direct, the bytes in
 * res->data and no fd_ref; objdirect.c says when), and a range of at most
 * LODE_OBJ_READ_COPY_MAX bytes is copied into res->data as lode_objstore_read does: io_uring
 * runs a splice on a worker thread, and a reply's two splices (file to pipe, pipe to
 * socket) cost two of its wakeups, most of a small read's time at the OSS, where copying
 * 64 KiB takes a few microseconds; for larger reads the copy's CPU is what counts. */
#define LODE_OBJ_READ_COPY_MAX (128u * 1024)
void lode_objstore_read_fd(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			   uint64_t off, size_t len, lode_obj_done_fn done, void *arg);
/* Lets go of the descriptor a zero-copy read handed out. NULL is accepted. */
void lode_objstore_fd_release(void *fd_ref);

/* Sets the object's size, creating it empty if absent. A new end inside a chunk rewrites
 * that chunk's checksum after verifying its remaining data against the stored one (-EIO if
 * it does not match: nothing is changed then). */
void lode_objstore_truncate(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			    uint64_t size, lode_obj_done_fn done, void *arg);

/* Synchronous. Reserves disk space for [off, off + len) of the object, creating it empty if
 * absent, without changing its size, data or checksums (fallocate with KEEP_SIZE). Returns
 * 0, -ENOSPC, -EOPNOTSUPP (the file system cannot), ...; res (may be NULL) gets its size. */
int lode_objstore_allocate(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			   uint64_t off, uint64_t len, struct lode_obj_result *res);

/* Makes the object's data and checksums durable. -ENOENT if absent. */
void lode_objstore_fsync(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			 lode_obj_done_fn done, void *arg);

/* Synchronous. Removes the object (absent: success, size 0); res gets its size before.
 * io may be NULL (e.g. the MDS link's thread); other threads' caches notice by themselves.
 * Returns 0 or -errno; res is written only on success. */
int lode_objstore_remove(struct lode_objstore *st, struct lode_objstore_io *io,
			 const struct lode_wire_objid *id, struct lode_obj_result *res);

/* Synchronous. Size and allocated bytes; -ENOENT if absent. res written only on success. */
int lode_objstore_stat(struct lode_objstore *st, const struct lode_wire_objid *id,
		       struct lode_obj_result *res);

/*
 * Synchronous. Up to max (1..LODE_OBJLIST_MAX) objects with id greater than *after in
 * (ino, generation, stripe) order, into out[]. *eof is set to 1 when no object after the
 * last one returned existed during the scan. A scan of every object directory keeps the
 * next ids (a window as large as the store, from 65536 up to 1M ids; objlist.c) that the
 * pages continuing that listing are served from for up to 10 s: one scan per window, and
 * a listing may miss objects created during it (as any listing of a changing store may). Meant for
 * admin tools, not the data path. Returns the number of entries (>= 0) or -errno.
 */
int lode_objstore_list(struct lode_objstore *st, const struct lode_wire_objid *after, uint32_t max,
		       struct lode_wire_objinfo *out, int *eof);

/* Compares ids in listing order (reserved ignored): <0, 0, >0. */
int lode_objid_cmp(const struct lode_wire_objid *a, const struct lode_wire_objid *b);

#endif
