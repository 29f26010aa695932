/* SPDX-License-Identifier: MIT */
/*
 * Object store: data and checksum I/O. Writes, reads (with the bytes, or with the
 * descriptor for a zero-copy send, or with O_DIRECT when objdirect.c says so), truncates
 * and fsyncs run as small state machines on the calling thread's io_uring loop,
 * resubmitting short transfers; checksums are verified before anything is stored and
 * stored after the data (objstore.h: crash safety), by a plain pwrite (op_advance).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "daemon.h"
#include "objstore_impl.h"

/*
 * A write flagged LODE_OBJ_F_LAZY (no fsync will follow) that ends within its object's
 * first LAZY_UNKICKED_MAX bytes starts no writeback: for small files the kick costs more
 * than it gains. Past that the object is a stream, kicked as any other write: left to the
 * kernel, gigabytes would sit dirty until its background threshold, the disk idle, and
 * then throttle whoever writes next.
 */
#define LAZY_UNKICKED_MAX (256u * 1024)

/*
 * A write of at most WRITE_INLINE_MAX bytes on a loop with no other operation in flight is
 * a plain pwrite on the loop's thread. ext4 never completes a buffered write without
 * blocking, so io_uring hands every one to a worker thread and wakes the loop when it is
 * done: two context switches, more than a small write's copy costs, on the path of a
 * client that waits for each file. With other operations in flight a worker's overlap
 * pays, and a write the kernel throttles (too many dirty pages) holds a worker, not the
 * requests behind it.
 */
#define WRITE_INLINE_MAX (128u * 1024)

enum op_kind { OP_WRITE, OP_READ, OP_TRUNCATE, OP_FSYNC };

enum op_stage {
	ST_WRITE_DATA,
	ST_WRITE_SUMS,
	ST_WRITEBACK,
	ST_SYNC,
	ST_READ_DATA,
	ST_READ_SUMS,
	ST_TRUNC_READ_CHUNK,
	ST_TRUNC_READ_SUM,
	ST_TRUNC_WRITE_SUM,
};

/* One of a sync's fsyncs (sync_start) */
struct sync_leg {
	struct lode_io io;
	struct obj_op *op;
};

struct obj_op {
	struct lode_io io;
	/* A sync: the fsyncs of the data file, the .sum file and the directory, in flight at
	 * once; the op goes on when the last completes, with the first error. */
	struct sync_leg legs[3];
	unsigned syncs_left;
	int sync_err;
	struct lode_objstore_io *w;
	struct obj_fds *fds;
	enum op_kind kind;
	enum op_stage stage;
	lode_obj_done_fn done;
	void *arg;
	struct lode_obj_result res;
	/* The transfer in progress: short transfers and -EAGAIN/-EINTR are resubmitted. */
	bool in_xfer;
	bool xwrite;
	size_t xcap; /* an O_DIRECT read (res.direct): done at xcap bytes, or at an unaligned end */
	int xfd;
	char *xbuf;
	size_t xlen;
	size_t xdone;
	uint64_t xoff;
	/* parameters */
	uint64_t off;
	size_t len;
	const char *wdata;
	const uint64_t *wsums;
	unsigned flags;
	uint64_t new_size;
	uint64_t old_size;
	int read_mode;	 /* read: enum read_mode */
	char *chunk;	 /* truncate: the chunk holding the new end */
	char *merged;	 /* merge write: the widened range, owned */
	uint64_t *msums; /* merge write: its checksums, owned */
	size_t chunk_len;
	uint64_t sum; /* truncate: stored, then new checksum of that chunk */
};

/* How a read delivers: the bytes, copied out of the page cache; the descriptor, for a
 * zero-copy send (or the bytes past the page cache when objdirect.c says so); the bytes
 * from the disk past the page cache whatever is cached (a scrub). */
enum read_mode { READ_COPY, READ_FD, READ_DISK };

static void op_advance(struct obj_op *op, int res);
static void read_copy(struct obj_op *op, size_t avail);
static void read_zero_copy(struct obj_op *op, size_t avail);

static void xfer_submit(struct obj_op *op)
{
	char *p = op->xbuf + op->xdone;
	size_t n = op->xlen - op->xdone;
	off_t off = (off_t)(op->xoff + op->xdone);

	if (op->xwrite)
		lode_loop_pwrite(op->w->loop, &op->io, op->xfd, p, n, off);
	else
		lode_loop_pread(op->w->loop, &op->io, op->xfd, p, n, off);
}

static void xfer_start(struct obj_op *op, enum op_stage stage, int fd, void *buf, size_t len,
		       uint64_t off, bool write)
{
	op->stage = stage;
	op->in_xfer = true;
	op->xwrite = write;
	op->xfd = fd;
	op->xbuf = buf;
	op->xlen = len;
	op->xdone = 0;
	op->xoff = off;
	if (!len) {
		op->in_xfer = false;
		op_advance(op, 0);
		return;
	}
	xfer_submit(op);
}

static void sync_leg_cb(struct lode_io *io, int res)
{
	struct obj_op *op = lode_container_of(io, struct sync_leg, io)->op;

	if (res < 0 && !op->sync_err)
		op->sync_err = res;
	if (!--op->syncs_left)
		op_advance(op, op->sync_err);
}

/*
 * Makes the object durable: its data, its checksums and its name (an object is created
 * without syncing its directory, so its first fsync must; after that the directory's costs
 * no journal commit). The three run at once. Their order does not matter: a crash before
 * all three completed leaves an unacknowledged write, whose data and checksums may have
 * reached the disk in any order, which readers see as a mismatch, never as good data.
 */
static void sync_start(struct obj_op *op)
{
	int fds[3] = {op->fds->dfd, op->fds->sfd, objstore_dirfd(op->w->st, &op->fds->id)};

	op->stage = ST_SYNC;
	op->in_xfer = false;
	op->sync_err = 0;
	op->syncs_left = 3;
	for (int i = 0; i < 3; i++) {
		op->legs[i].io.cb = sync_leg_cb;
		op->legs[i].op = op;
		lode_loop_fsync(op->w->loop, &op->legs[i].io, fds[i], 1);
	}
}

static void op_cb(struct lode_io *io, int res)
{
	struct obj_op *op = lode_container_of(io, struct obj_op, io);

	if (!op->in_xfer) {
		op_advance(op, res < 0 ? res : 0);
		return;
	}
	if (res == -EAGAIN || res == -EINTR) {
		xfer_submit(op);
		return;
	}
	if (res == -EINVAL && op->res.direct) {
		/* the file system took the O_DIRECT open, not the read: page cache it is */
		objstore_direct_refused(op->w->st);
		lode_obj_result_free_data(&op->res);
		op->res.direct = false;
		op->in_xfer = false;
		if (op->read_mode == READ_FD)
			read_zero_copy(op, op->xcap);
		else
			read_copy(op, op->xcap);
		return;
	}
	if (res < 0) {
		op->in_xfer = false;
		op_advance(op, res);
		return;
	}
	if (res == 0) {
		/* End of file for a read: op->xdone says how much there was. A write that
		 * makes no progress is a device failure. */
		op->in_xfer = false;
		op_advance(op, op->xwrite ? -EIO : 0);
		return;
	}
	op->xdone += (size_t)res;
	if (op->res.direct && (op->xdone >= op->xcap || op->xdone % DIRECT_ALIGN)) {
		/* the length was rounded up to the alignment: what is past xcap was not
		 * asked for; an unaligned count is the file's end */
		if (op->xdone > op->xcap)
			op->xdone = op->xcap;
		op->in_xfer = false;
		op_advance(op, 0);
		return;
	}
	if (op->xdone < op->xlen) {
		xfer_submit(op);
		return;
	}
	op->in_xfer = false;
	op_advance(op, 0);
}

static void op_finish(struct obj_op *op, int err)
{
	struct stat sb, ssb;

	if (!err && op->fds) {
		if (fstat(op->fds->dfd, &sb) < 0 || fstat(op->fds->sfd, &ssb) < 0) {
			err = -errno;
		} else {
			op->res.object_size = (uint64_t)sb.st_size;
			op->res.bytes_stored =
			    ((uint64_t)sb.st_blocks + (uint64_t)ssb.st_blocks) * 512;
		}
	}
	if (err && op->kind == OP_READ) {
		lode_obj_result_free_data(&op->res);
		free(op->res.sums);
		op->res.sums = NULL;
		op->res.data_len = 0;
		op->res.nchunks = 0;
	}
	if (op->read_mode == READ_FD && !op->res.data && !err && op->fds && op->res.data_len) {
		/* the caller sends the bytes straight from the file and then lets go of it */
		op->res.fd = op->fds->dfd;
		op->res.fd_ref = op->fds;
	} else if (op->fds) {
		objstore_fds_put(op->fds);
	}
	free(op->chunk);
	free(op->merged);
	free(op->msums);
	op->w->ops--;
	op->done(op->arg, err, &op->res);
	free(op);
}

void lode_obj_result_free_data(struct lode_obj_result *res)
{
	if (res->data)
		res->data_free(res->data);
	res->data = NULL;
}

void lode_objstore_fd_release(void *fd_ref)
{
	if (fd_ref)
		objstore_fds_put(fd_ref);
}

static void trunc_set_size(struct obj_op *op)
{
	struct obj_fds *f = op->fds;
	uint64_t nsums = (op->new_size + CHUNK - 1) / CHUNK;

	if (ftruncate(f->dfd, (off_t)op->new_size) < 0) {
		op_finish(op, -errno);
		return;
	}
	/* Checksums past the new end would describe data that no longer exists. */
	if (op->new_size < op->old_size && ftruncate(f->sfd, (off_t)(nsums * 8)) < 0) {
		op_finish(op, -errno);
		return;
	}
	op_finish(op, 0);
}

static void op_advance(struct obj_op *op, int res)
{
	struct lode_objstore *st = op->w->st;
	struct obj_fds *f = op->fds;

	/* the writeback kick is advice: the write is done whatever it says, and a disk error
	 * shows at the fsync that makes the data durable */
	if (res < 0 && op->stage != ST_WRITEBACK) {
		op_finish(op, res);
		return;
	}
	switch (op->stage) {
	case ST_WRITE_DATA:
		/* Data first, then checksums: see objstore.h. The checksums are a plain
		 * pwrite on the loop's thread, not a trip through io_uring: a few bytes into
		 * one cached page, which ext4 never writes asynchronously, so io_uring would
		 * hand them to a worker thread and wake this one when done, two context
		 * switches, more than the copy costs. */
		op->stage = ST_WRITE_SUMS;
		op_advance(op, lode_pwrite_all(f->sfd, op->wsums, (op->len + CHUNK - 1) / CHUNK * 8,
					       (off_t)(op->off / CHUNK * 8)));
		return;
	case ST_WRITE_SUMS:
		if (op->kind != OP_WRITE || (op->flags & LODE_OBJ_F_SYNC)) {
			sync_start(op);
			return;
		}
		if ((op->flags & LODE_OBJ_F_LAZY) && op->off + op->len <= LAZY_UNKICKED_MAX) {
			/* A small file's, and no fsync will wait for it: the kernel writes it
			 * back in its own time, and a burst of small files costs no disk
			 * request each while it arrives. */
			op_finish(op, 0);
			return;
		}
		/* Start writing the range to the disk now, without waiting for it: a streaming
		 * writer's fsync then waits for the tail only, not for the whole file, and the
		 * disk works while the bytes are still arriving. The pages stay cached (clean)
		 * for readers. */
		op->stage = ST_WRITEBACK;
		lode_loop_sync_range(op->w->loop, &op->io, f->dfd, (off_t)op->off, op->len,
				     SYNC_FILE_RANGE_WRITE);
		return;
	case ST_WRITEBACK:
		op_finish(op, 0);
		return;
	case ST_SYNC:
		op_finish(op, 0);
		return;
	case ST_READ_DATA: {
		/* the checksums of the whole range asked for, not only of the data found: a
		 * chunk past the data's end that has one was written, and is missing */
		uint32_t n = (uint32_t)((op->len + CHUNK - 1) / CHUNK);

		op->res.data_len = op->xdone; /* shorter if the object shrank meanwhile */
		op->res.nchunks = (uint32_t)((op->res.data_len + CHUNK - 1) / CHUNK);
		op->res.sums = calloc(n ? n : 1, 8);
		if (!op->res.sums) {
			op_finish(op, -ENOMEM);
			return;
		}
		xfer_start(op, ST_READ_SUMS, f->sfd, op->res.sums, (size_t)n * 8,
			   op->off / CHUNK * 8, false);
		return;
	}
	case ST_READ_SUMS: {
		uint32_t n = (uint32_t)((op->len + CHUNK - 1) / CHUNK);

		/* Never a wrong byte: data the checksums say was written, but that the file
		 * does not hold (deleted or cut short on disk), is an error the reader fails
		 * over on, not zeros. Entries past the .sum file's end stayed zero: holes. */
		for (uint32_t i = op->res.nchunks; i < n; i++)
			if (op->res.sums[i]) {
				op_finish(op, -EBADMSG);
				return;
			}
		for (uint32_t i = 0; i < op->res.nchunks; i++)
			if (!op->res.sums[i])
				op->res.sums[i] = st->zero_sum;
		op_finish(op, 0);
		return;
	}
	case ST_TRUNC_READ_CHUNK:
		op->chunk_len = op->xdone;
		op->sum = 0;
		xfer_start(op, ST_TRUNC_READ_SUM, f->sfd, &op->sum, 8, op->new_size / CHUNK * 8,
			   false);
		return;
	case ST_TRUNC_READ_SUM: {
		uint64_t stored = op->sum ? op->sum : st->zero_sum;
		size_t keep = (size_t)(op->new_size % CHUNK);

		/* Re-summing corrupt data would launder it into "verified": refuse. */
		if (lode_chunk_sum(op->chunk, op->chunk_len) != stored) {
			op_finish(op, -EIO);
			return;
		}
		if (keep > op->chunk_len)
			keep = op->chunk_len;
		op->sum = lode_chunk_sum(op->chunk, keep);
		/* Data shrinks first: a crash before the new checksum lands leaves the old
		 * one, which no longer matches: detected, not silent. */
		if (ftruncate(f->dfd, (off_t)op->new_size) < 0) {
			op_finish(op, -errno);
			return;
		}
		xfer_start(op, ST_TRUNC_WRITE_SUM, f->sfd, &op->sum, 8, op->new_size / CHUNK * 8,
			   true);
		return;
	}
	case ST_TRUNC_WRITE_SUM:
		trunc_set_size(op);
		return;
	}
}

static struct obj_op *op_new(struct lode_objstore_io *io, enum op_kind kind, lode_obj_done_fn done,
			     void *arg)
{
	struct obj_op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	io->ops++;
	op->io.cb = op_cb;
	op->w = io;
	op->kind = kind;
	op->done = done;
	op->arg = arg;
	return op;
}

static void fail_now(lode_obj_done_fn done, void *arg, int err)
{
	struct lode_obj_result res = {0};

	done(arg, err, &res);
}

/*
 * One stored chunk of a merge: the bytes [base, base + n) (n: what the object holds of it)
 * into buf, checked against the stored checksum first. A chunk that does not match is not
 * merged into (re-summing it would launder corrupt bytes into "verified"): -EIO. Plain
 * syscalls: at most two chunks per merge, mostly in the page cache.
 */
static int merge_read_chunk(struct lode_objstore *st, struct obj_fds *f, uint64_t base, size_t n,
			    char *buf)
{
	uint64_t stored = 0;
	ssize_t got;

	got = pread(f->dfd, buf, n, (off_t)base);
	if (got < 0)
		return -errno;
	if ((size_t)got != n)
		return -EIO; /* shrank under us: only a truncate can, and it holds the range */
	got = pread(f->sfd, &stored, 8, (off_t)(base / CHUNK * 8));
	if (got < 0)
		return -errno;
	if (!stored)
		stored = st->zero_sum;
	return lode_chunk_sum(buf, n) == stored ? 0 : -EIO;
}

/*
 * A LODE_OBJ_F_MERGE write: [off, off + len) covers part of its first or last chunk. The
 * range widens to whole chunks (up to the object's end where that comes first): the
 * stored bytes it keeps are read and verified, the new ones laid over them, and every
 * chunk is summed here. Runs with the chunks held (objlock.c), so no other write can
 * change them between this read and the write that follows.
 */
static int merge_prepare(struct obj_op *op, uint64_t size, uint64_t off, const char *data,
			 size_t len)
{
	struct lode_objstore *st = op->w->st;
	uint64_t cs = off / CHUNK * CHUNK, end = off + len;
	uint64_t ce = (end + CHUNK - 1) / CHUNK * CHUNK, nend = end;
	uint64_t edges[2] = {cs, ce - CHUNK};
	size_t mlen, nchunks;
	int rc;

	/* bytes of the last chunk after the write that the object holds are kept */
	if (end % CHUNK && size > end)
		nend = size < ce ? size : ce;
	mlen = (size_t)(nend - cs);
	nchunks = (mlen + CHUNK - 1) / CHUNK;
	op->merged = calloc(1, mlen);
	op->msums = malloc(nchunks * 8);
	if (!op->merged || !op->msums)
		return -ENOMEM;
	for (unsigned e = 0; e < 2; e++) {
		uint64_t base = edges[e];
		/* the chunk keeps stored bytes before the write, or after it */
		bool keeps = (base < off && size > base) || (base + CHUNK > end && size > end);
		size_t have;

		if (e == 1 && base == cs)
			break; /* one chunk: already read */
		if (!keeps)
			continue; /* fully overwritten, or a hole (zeros) around the new bytes */
		have = (size_t)((size < base + CHUNK ? size : base + CHUNK) - base);
		if (have > mlen - (base - cs))
			have = (size_t)(mlen - (base - cs));
		rc = merge_read_chunk(st, op->fds, base, have, op->merged + (base - cs));
		if (rc)
			return rc;
	}
	memcpy(op->merged + (off - cs), data, len);
	for (size_t i = 0; i < nchunks; i++) {
		size_t pos = i * CHUNK;

		op->msums[i] =
		    lode_chunk_sum(op->merged + pos, mlen - pos < CHUNK ? mlen - pos : CHUNK);
	}
	op->off = cs;
	op->len = mlen;
	op->wdata = op->merged;
	op->wsums = op->msums;
	return 0;
}

/* The request's own checksums: one per chunk the bytes touch, of the bytes in it. */
static bool sums_match(uint64_t off, const char *data, size_t len, const uint64_t *sums)
{
	uint64_t end = off + len;

	for (uint64_t base = off / CHUNK * CHUNK, i = 0; base < end; base += CHUNK, i++) {
		uint64_t from = base > off ? base : off;
		uint64_t to = base + CHUNK < end ? base + CHUNK : end;

		if (lode_chunk_sum(data + (from - off), (size_t)(to - from)) != sums[i])
			return false;
	}
	return true;
}

void lode_objstore_write(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			 uint64_t off, const void *data, size_t len, const uint64_t *sums,
			 unsigned flags, lode_obj_done_fn done, void *arg)
{
	bool merge = flags & LODE_OBJ_F_MERGE;
	struct obj_op *op;
	struct stat sb;
	int err;

	if ((off % CHUNK && !merge) || !len || off > (uint64_t)INT64_MAX - len) {
		fail_now(done, arg, !len || off <= (uint64_t)INT64_MAX - len ? -EINVAL : -EFBIG);
		return;
	}
	/* Verify everything before storing anything. */
	if (!sums_match(off, data, len, sums)) {
		fail_now(done, arg, -EBADMSG);
		return;
	}
	op = op_new(io, OP_WRITE, done, arg);
	if (!op) {
		fail_now(done, arg, -ENOMEM);
		return;
	}
	op->off = off;
	op->len = len;
	op->wdata = data;
	op->wsums = sums;
	op->flags = flags;
	err = objstore_fds_get(io, id, true, &op->fds, &sb);
	if (err) {
		op_finish(op, err);
		return;
	}
	if (merge) {
		err = merge_prepare(op, (uint64_t)sb.st_size, off, data, len);
		if (err) {
			op_finish(op, err);
			return;
		}
	} else if (len % CHUNK && (uint64_t)sb.st_size > off + len) {
		/* A short last chunk must end the object: bytes after it in the same chunk
		 * would not be covered by its checksum. */
		op_finish(op, -EINVAL);
		return;
	}
	if (op->len <= WRITE_INLINE_MAX && io->ops == 1) {
		uint64_t t0 = lode_now_ns();

		err = lode_pwrite_all(op->fds->dfd, op->wdata, op->len, (off_t)op->off);
		op->res.inline_ns = lode_now_ns() - t0 + 1;
		op->stage = ST_WRITE_DATA;
		op_advance(op, err);
		return;
	}
	xfer_start(op, ST_WRITE_DATA, op->fds->dfd, (void *)op->wdata, op->len, op->off, true);
}

/* Whether the .sum file of an object whose data file is gone says some chunk of [off, off +
 * len) was written. A rare path (a missing object), so plain syscalls. */
static bool sums_outlived_data(struct lode_objstore *st, const struct lode_wire_objid *id,
			       uint64_t off, size_t len)
{
	uint64_t sums[LODE_DATA_MAX / CHUNK] = {0};
	size_t n = (len + CHUNK - 1) / CHUNK;
	char sname[OBJ_NAME_BUF];
	ssize_t got;
	int fd;

	if (n > sizeof(sums) / sizeof(sums[0]))
		n = sizeof(sums) / sizeof(sums[0]);
	objstore_name(id, sname, true);
	fd = openat(objstore_dirfd(st, id), sname, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	got = pread(fd, sums, n * 8, (off_t)(off / CHUNK * 8));
	close(fd);
	for (ssize_t i = 0; i < got / 8; i++)
		if (sums[i])
			return true;
	return false;
}

/* The avail bytes the file holds, into memory through the page cache. */
static void read_copy(struct obj_op *op, size_t avail)
{
	op->res.data = malloc(avail ? avail : 1);
	op->res.data_free = free;
	if (!op->res.data) {
		op_finish(op, -ENOMEM);
		return;
	}
	xfer_start(op, ST_READ_DATA, op->fds->dfd, op->res.data, avail, op->off, false);
}

/* A read for a caller that sends the bytes from the file: no data read here, straight to
 * the checksums of the avail bytes the file holds. */
static void read_zero_copy(struct obj_op *op, size_t avail)
{
	op->xdone = avail;
	op->stage = ST_READ_DATA;
	op_advance(op, 0);
}

/* The same bytes from the disk into memory, past the page cache (objdirect.c): O_DIRECT
 * wants the buffer and the length aligned, and stops short at the file's end. */
static void read_direct(struct obj_op *op, size_t avail)
{
	size_t alen = (avail + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN;

	op->res.data = objstore_direct_buf();
	op->res.data_free = objstore_direct_buf_free;
	if (!op->res.data) {
		op_finish(op, -ENOMEM);
		return;
	}
	op->res.direct = true;
	op->xcap = avail;
	xfer_start(op, ST_READ_DATA, op->fds->direct_fd, op->res.data, alen, op->off, false);
}

static void read_start(struct lode_objstore_io *io, const struct lode_wire_objid *id, uint64_t off,
		       size_t len, enum read_mode mode, lode_obj_done_fn done, void *arg)
{
	struct obj_op *op;
	struct stat sb;
	size_t avail;
	int err;

	if (off % CHUNK || off > (uint64_t)INT64_MAX) {
		fail_now(done, arg, -EINVAL);
		return;
	}
	op = op_new(io, OP_READ, done, arg);
	if (!op) {
		fail_now(done, arg, -ENOMEM);
		return;
	}
	op->off = off;
	op->read_mode = mode;
	op->len = len;
	err = objstore_fds_get(io, id, false, &op->fds, &sb);
	if (err == -ENOENT) {
		op->fds = NULL;
		/* an object never written reads as empty; one whose checksums outlived its data
		 * file lost that data */
		op_finish(op, sums_outlived_data(io->st, id, off, len) ? -EBADMSG : 0);
		return;
	}
	if (err) {
		op_finish(op, err);
		return;
	}
	avail = (uint64_t)sb.st_size > off ? (size_t)((uint64_t)sb.st_size - off) : 0;
	if (avail > len)
		avail = len;
	switch (mode) {
	case READ_FD:
		if (objstore_read_direct(io->st, op->fds, off, avail)) {
			read_direct(op, avail);
			return;
		}
		if (!avail || avail > LODE_OBJ_READ_COPY_MAX) {
			read_zero_copy(op, avail);
			return;
		}
		break; /* small: copied (objstore.h says why) */
	case READ_DISK:
		if (avail && objstore_direct_open(io->st, op->fds, avail)) {
			read_direct(op, avail);
			return;
		}
		break;
	case READ_COPY:
		break;
	}
	read_copy(op, avail);
}

void lode_objstore_read(struct lode_objstore_io *io, const struct lode_wire_objid *id, uint64_t off,
			size_t len, lode_obj_done_fn done, void *arg)
{
	read_start(io, id, off, len, READ_COPY, done, arg);
}

void lode_objstore_read_disk(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			     uint64_t off, size_t len, lode_obj_done_fn done, void *arg)
{
	read_start(io, id, off, len, READ_DISK, done, arg);
}

void lode_objstore_read_fd(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			   uint64_t off, size_t len, lode_obj_done_fn done, void *arg)
{
	read_start(io, id, off, len, READ_FD, done, arg);
}

void lode_objstore_truncate(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			    uint64_t size, lode_obj_done_fn done, void *arg)
{
	struct obj_op *op;
	struct stat sb;
	uint64_t cstart, cend;
	int err;

	if (size > (uint64_t)INT64_MAX) {
		fail_now(done, arg, -EFBIG);
		return;
	}
	op = op_new(io, OP_TRUNCATE, done, arg);
	if (!op) {
		fail_now(done, arg, -ENOMEM);
		return;
	}
	err = objstore_fds_get(io, id, true, &op->fds, &sb);
	if (err) {
		op_finish(op, err);
		return;
	}
	op->new_size = size;
	op->old_size = (uint64_t)sb.st_size;
	/* Growing keeps every stored checksum valid (the old last chunk was summed with
	 * zero padding, which is what the new bytes read as); so does cutting at a chunk
	 * boundary. Only a new end inside a chunk needs that chunk re-summed. */
	if (size >= op->old_size || !(size % CHUNK)) {
		trunc_set_size(op);
		return;
	}
	cstart = size / CHUNK * CHUNK;
	cend = cstart + CHUNK < op->old_size ? cstart + CHUNK : op->old_size;
	op->chunk = malloc(CHUNK);
	if (!op->chunk) {
		op_finish(op, -ENOMEM);
		return;
	}
	xfer_start(op, ST_TRUNC_READ_CHUNK, op->fds->dfd, op->chunk, (size_t)(cend - cstart),
		   cstart, false);
}

void lode_objstore_fsync(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			 lode_obj_done_fn done, void *arg)
{
	struct obj_op *op = op_new(io, OP_FSYNC, done, arg);
	struct stat sb;
	int err;

	if (!op) {
		fail_now(done, arg, -ENOMEM);
		return;
	}
	err = objstore_fds_get(io, id, false, &op->fds, &sb);
	if (err) {
		op->fds = NULL;
		op_finish(op, err);
		return;
	}
	sync_start(op);
}
