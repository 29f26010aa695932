/* SPDX-License-Identifier: MIT */
/*
 * Object store: objects and their per-chunk checksums as files, data I/O through the
 * calling thread's io_uring loop. See objstore.h for the layout, the threading rules and
 * the crash-safety argument.
 */
#include "objstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"

#define NDIRS		256
#define NLOCKS		64
#define MAX_IOS		64
#define DEFAULT_MAX_FDS 64
/* "<16 hex>.<16 hex>.<8 hex>" */
#define OBJ_NAME_LEN (16 + 1 + 16 + 1 + 8)
#define OBJ_NAME_BUF (OBJ_NAME_LEN + sizeof(".sum"))
#define CHUNK	     ((uint64_t)LODE_CHUNK_SIZE)

struct lode_objstore {
	int dirfd[NDIRS]; /* DATA/objects/00 .. ff, read-only after open */
	/* Held while opening or removing an object's pair of files; never around I/O. */
	pthread_mutex_t locks[NLOCKS];
	_Atomic uint64_t count;
	uint64_t zero_sum; /* lode_chunk_sum of an all-zero chunk: what a hole reads as */

	/*
	 * Every worker's descriptor cache, so that a removal can reach them all: a cached
	 * descriptor of a removed object keeps its blocks allocated (and a full disk full)
	 * until it is closed, and an idle worker would never look at its cache again.
	 */
	pthread_mutex_t ios_lock;
	struct lode_objstore_io *ios[MAX_IOS]; /* protected by ios_lock */
};

/* An object's open data and checksum files. Owned by one lode_objstore_io. */
struct obj_fds {
	struct lode_wire_objid id;
	int dfd;
	int sfd;
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
};

/* ---- names ---- */

int lode_objid_cmp(const struct lode_wire_objid *a, const struct lode_wire_objid *b)
{
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	if (a->generation != b->generation)
		return a->generation < b->generation ? -1 : 1;
	if (a->stripe != b->stripe)
		return a->stripe < b->stripe ? -1 : 1;
	return 0;
}

static void obj_name(const struct lode_wire_objid *id, char *buf, bool sum)
{
	snprintf(buf, OBJ_NAME_BUF, "%016" PRIx64 ".%016" PRIx64 ".%08" PRIx32 "%s", id->ino,
		 id->generation, id->stripe, sum ? ".sum" : "");
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool parse_hex(const char *s, unsigned ndigits, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < ndigits; i++) {
		int d = hexval(s[i]);

		if (d < 0)
			return false;
		v = v << 4 | (unsigned)d;
	}
	*out = v;
	return true;
}

/* Accepts only the canonical data-file name, in the directory its ino maps to. */
static bool parse_obj_name(const char *name, unsigned dir, struct lode_wire_objid *id)
{
	uint64_t ino, gen, stripe;

	if (strlen(name) != OBJ_NAME_LEN || name[16] != '.' || name[33] != '.')
		return false;
	if (!parse_hex(name, 16, &ino) || !parse_hex(name + 17, 16, &gen) ||
	    !parse_hex(name + 34, 8, &stripe))
		return false;
	if ((ino % NDIRS) != dir)
		return false;
	id->ino = ino;
	id->generation = gen;
	id->stripe = (uint32_t)stripe;
	id->reserved = 0;
	return true;
}

static pthread_mutex_t *obj_lock(struct lode_objstore *st, const struct lode_wire_objid *id)
{
	uint64_t h =
	    id->ino * 0x9e3779b97f4a7c15ull ^ id->generation * 0xc2b2ae3d27d4eb4full ^ id->stripe;

	return &st->locks[(h >> 32) % NLOCKS];
}

static int obj_dirfd(const struct lode_objstore *st, const struct lode_wire_objid *id)
{
	return st->dirfd[id->ino % NDIRS];
}

/* ---- store ---- */

static int count_objects(struct lode_objstore *st, uint64_t *count)
{
	uint64_t n = 0;

	for (unsigned d = 0; d < NDIRS; d++) {
		int fd = openat(st->dirfd[d], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct lode_wire_objid id;
		struct dirent *de;
		DIR *dir;

		if (fd < 0)
			return -errno;
		dir = fdopendir(fd);
		if (!dir) {
			int err = -errno;

			close(fd);
			return err;
		}
		while ((de = readdir(dir)))
			if (parse_obj_name(de->d_name, d, &id))
				n++;
		closedir(dir);
	}
	*count = n;
	return 0;
}

int lode_objstore_open(struct lode_objstore **out, const char *data_dir)
{
	struct lode_objstore *st;
	uint64_t count;
	int root, objs;
	int err;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	for (unsigned i = 0; i < NDIRS; i++)
		st->dirfd[i] = -1;
	for (unsigned i = 0; i < NLOCKS; i++)
		pthread_mutex_init(&st->locks[i], NULL);
	pthread_mutex_init(&st->ios_lock, NULL);
	st->zero_sum = lode_chunk_sum("", 0);

	root = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		err = -errno;
		goto err_free;
	}
	if (mkdirat(root, "objects", 0755) < 0 && errno != EEXIST) {
		err = -errno;
		goto err_root;
	}
	objs = openat(root, "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (objs < 0) {
		err = -errno;
		goto err_root;
	}
	/* All 256 directories exist from the start, so that creating an object never races
	 * with creating its directory, and their entries are durable before any object. */
	for (unsigned i = 0; i < NDIRS; i++) {
		char name[3];

		snprintf(name, sizeof(name), "%02x", i);
		if (mkdirat(objs, name, 0755) < 0 && errno != EEXIST) {
			err = -errno;
			goto err_objs;
		}
		st->dirfd[i] = openat(objs, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (st->dirfd[i] < 0) {
			err = -errno;
			goto err_objs;
		}
	}
	if (fsync(objs) < 0 || fsync(root) < 0) {
		err = -errno;
		goto err_objs;
	}
	err = count_objects(st, &count);
	if (err)
		goto err_objs;
	atomic_store(&st->count, count);
	close(objs);
	close(root);
	*out = st;
	return 0;

err_objs:
	close(objs);
err_root:
	close(root);
err_free:
	lode_objstore_close(st);
	return err;
}

void lode_objstore_close(struct lode_objstore *st)
{
	if (!st)
		return;
	for (unsigned i = 0; i < NDIRS; i++)
		if (st->dirfd[i] >= 0)
			close(st->dirfd[i]);
	for (unsigned i = 0; i < NLOCKS; i++)
		pthread_mutex_destroy(&st->locks[i]);
	pthread_mutex_destroy(&st->ios_lock);
	free(st);
}

uint64_t lode_objstore_count(const struct lode_objstore *st)
{
	return atomic_load(&((struct lode_objstore *)st)->count);
}

/* ---- descriptor pairs and the per-thread cache ---- */

/*
 * Opens an object's data and checksum files. With create, an absent object is created
 * empty (and its directory fsynced before anything is written to it). Returns 0, -ENOENT
 * (absent, !create) or -errno.
 */
static int pair_open(struct lode_objstore *st, const struct lode_wire_objid *id, bool create,
		     int *dfd_out, int *sfd_out)
{
	pthread_mutex_t *lock = obj_lock(st, id);
	int dirfd = obj_dirfd(st, id);
	char name[OBJ_NAME_BUF], sname[OBJ_NAME_BUF];
	bool created = false;
	int dfd, sfd;
	int err;

	obj_name(id, name, false);
	obj_name(id, sname, true);
	pthread_mutex_lock(lock);
	dfd = openat(dirfd, name, O_RDWR | O_CLOEXEC);
	if (dfd < 0 && errno == ENOENT && create) {
		dfd = openat(dirfd, name, O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0644);
		created = dfd >= 0;
	}
	if (dfd < 0) {
		err = -errno;
		goto err_unlock;
	}
	/* A new object never inherits checksums a crashed removal may have left behind. A
	 * missing .sum of an existing object is created empty: all holes, which readers
	 * report as mismatches unless the data is zero. */
	sfd = openat(dirfd, sname, O_RDWR | O_CLOEXEC | O_CREAT | (created ? O_TRUNC : 0), 0644);
	if (sfd < 0) {
		err = -errno;
		goto err_data;
	}
	if (created) {
		if (fsync(dirfd) < 0) {
			err = -errno;
			goto err_sum;
		}
		atomic_fetch_add(&st->count, 1);
	}
	pthread_mutex_unlock(lock);
	*dfd_out = dfd;
	*sfd_out = sfd;
	return 0;

err_sum:
	close(sfd);
err_data:
	close(dfd);
	if (created) {
		unlinkat(dirfd, name, 0);
		unlinkat(dirfd, sname, 0);
	}
err_unlock:
	pthread_mutex_unlock(lock);
	return err;
}

static void fds_put(struct obj_fds *f)
{
	if (--f->refs)
		return;
	close(f->dfd);
	close(f->sfd);
	free(f);
}

static void cache_unlink(struct lode_objstore_io *io, struct obj_fds *f)
{
	if (f->prev)
		f->prev->next = f->next;
	else
		io->head = f->next;
	if (f->next)
		f->next->prev = f->prev;
	else
		io->tail = f->prev;
	f->prev = f->next = NULL;
}

static void cache_drop(struct lode_objstore_io *io, struct obj_fds *f)
{
	cache_unlink(io, f);
	f->cached = false;
	io->nfds--;
	fds_put(f);
}

static void cache_push_front(struct lode_objstore_io *io, struct obj_fds *f)
{
	f->prev = NULL;
	f->next = io->head;
	if (io->head)
		io->head->prev = f;
	io->head = f;
	if (!io->tail)
		io->tail = f;
}

static struct obj_fds *cache_find(struct lode_objstore_io *io, const struct lode_wire_objid *id)
{
	for (struct obj_fds *f = io->head; f; f = f->next)
		if (!lode_objid_cmp(&f->id, id))
			return f;
	return NULL;
}

/*
 * The object's descriptors with a reference for the caller (fds_put() when done), and
 * the data file's stat. Validates a cached pair: a link count of 0 means another thread
 * removed the object, so the pair is reopened. Returns 0, -ENOENT (absent, !create) or
 * -errno.
 */
static int fds_get(struct lode_objstore_io *io, const struct lode_wire_objid *id, bool create,
		   struct obj_fds **out, struct stat *stbuf)
{
	struct obj_fds *f = cache_find(io, id);
	int err;

	if (f) {
		if (fstat(f->dfd, stbuf) < 0)
			return -errno;
		if (stbuf->st_nlink > 0) {
			cache_unlink(io, f);
			cache_push_front(io, f);
			f->refs++;
			*out = f;
			return 0;
		}
		cache_drop(io, f);
	}

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	err = pair_open(io->st, id, create, &f->dfd, &f->sfd);
	if (err)
		goto err_free;
	if (fstat(f->dfd, stbuf) < 0) {
		err = -errno;
		goto err_close;
	}
	f->id = *id;
	f->id.reserved = 0;
	f->refs = 2;
	f->cached = true;
	cache_push_front(io, f);
	if (++io->nfds > io->max_fds)
		cache_drop(io, io->tail);
	*out = f;
	return 0;

err_close:
	close(f->dfd);
	close(f->sfd);
err_free:
	free(f);
	return err;
}

int lode_objstore_io_create(struct lode_objstore *st, struct lode_loop *loop, unsigned max_fds,
			    struct lode_objstore_io **out)
{
	struct lode_objstore_io *io = calloc(1, sizeof(*io));

	if (!io)
		return -ENOMEM;
	io->st = st;
	io->loop = loop;
	io->max_fds = max_fds ? max_fds : DEFAULT_MAX_FDS;
	pthread_mutex_lock(&st->ios_lock);
	for (unsigned i = 0; i < MAX_IOS; i++) {
		if (!st->ios[i]) {
			st->ios[i] = io;
			break;
		}
	}
	pthread_mutex_unlock(&st->ios_lock);
	*out = io;
	return 0;
}

void lode_objstore_io_destroy(struct lode_objstore_io *io)
{
	if (!io)
		return;
	pthread_mutex_lock(&io->st->ios_lock);
	for (unsigned i = 0; i < MAX_IOS; i++)
		if (io->st->ios[i] == io)
			io->st->ios[i] = NULL;
	pthread_mutex_unlock(&io->st->ios_lock);
	while (io->head)
		cache_drop(io, io->head);
	free(io);
}

/* ---- asynchronous operations ---- */

enum op_kind { OP_WRITE, OP_READ, OP_TRUNCATE, OP_FSYNC };

enum op_stage {
	ST_WRITE_DATA,
	ST_WRITE_SUMS,
	ST_WRITEBACK,
	ST_SYNC_DATA,
	ST_SYNC_SUMS,
	ST_READ_DATA,
	ST_READ_SUMS,
	ST_TRUNC_READ_CHUNK,
	ST_TRUNC_READ_SUM,
	ST_TRUNC_WRITE_SUM,
};

struct obj_op {
	struct lode_io io;
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
	bool zero_copy; /* read: hand the descriptor to the caller instead of the bytes */
	char *chunk;	/* truncate: the chunk holding the new end */
	size_t chunk_len;
	uint64_t sum; /* truncate: stored, then new checksum of that chunk */
};

static void op_advance(struct obj_op *op, int res);

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

static void sync_start(struct obj_op *op, enum op_stage stage, int fd)
{
	op->stage = stage;
	op->in_xfer = false;
	lode_loop_fsync(op->w->loop, &op->io, fd, 1);
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
		free(op->res.data);
		free(op->res.sums);
		op->res.data = NULL;
		op->res.sums = NULL;
		op->res.data_len = 0;
		op->res.nchunks = 0;
	}
	if (op->zero_copy && !err && op->fds && op->res.data_len) {
		/* the caller sends the bytes straight from the file and then lets go of it */
		op->res.fd = op->fds->dfd;
		op->res.fd_ref = op->fds;
	} else if (op->fds) {
		fds_put(op->fds);
	}
	free(op->chunk);
	op->done(op->arg, err, &op->res);
	free(op);
}

void lode_objstore_fd_release(void *fd_ref)
{
	if (fd_ref)
		fds_put(fd_ref);
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
		/* Data first, then checksums: see objstore.h. */
		xfer_start(op, ST_WRITE_SUMS, f->sfd, (void *)op->wsums,
			   ((op->len + CHUNK - 1) / CHUNK) * 8, op->off / CHUNK * 8, true);
		return;
	case ST_WRITE_SUMS:
		if (op->kind == OP_WRITE && !(op->flags & LODE_OBJ_F_SYNC)) {
			/* Start writing the range to the disk now, without waiting for it: a
			 * streaming writer's fsync then waits for the tail only, not for the
			 * whole file, and the disk works while the bytes are still arriving. The
			 * pages stay cached (clean) for readers. */
			op->stage = ST_WRITEBACK;
			lode_loop_sync_range(op->w->loop, &op->io, f->dfd, (off_t)op->off, op->len,
					     SYNC_FILE_RANGE_WRITE);
			return;
		}
		sync_start(op, ST_SYNC_DATA, f->dfd);
		return;
	case ST_WRITEBACK:
		op_finish(op, 0);
		return;
	case ST_SYNC_DATA:
		sync_start(op, ST_SYNC_SUMS, f->sfd);
		return;
	case ST_SYNC_SUMS:
		op_finish(op, 0);
		return;
	case ST_READ_DATA: {
		uint32_t n;

		op->res.data_len = op->xdone; /* shorter if the object shrank meanwhile */
		n = (uint32_t)((op->res.data_len + CHUNK - 1) / CHUNK);
		op->res.nchunks = n;
		op->res.sums = calloc(n ? n : 1, 8);
		if (!op->res.sums) {
			op_finish(op, -ENOMEM);
			return;
		}
		xfer_start(op, ST_READ_SUMS, f->sfd, op->res.sums, (size_t)n * 8,
			   op->off / CHUNK * 8, false);
		return;
	}
	case ST_READ_SUMS:
		/* Entries past the .sum file's end stayed zero: holes, like zero entries. */
		for (uint32_t i = 0; i < op->res.nchunks; i++)
			if (!op->res.sums[i])
				op->res.sums[i] = st->zero_sum;
		op_finish(op, 0);
		return;
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

void lode_objstore_write(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			 uint64_t off, const void *data, size_t len, const uint64_t *sums,
			 unsigned flags, lode_obj_done_fn done, void *arg)
{
	struct obj_op *op;
	struct stat sb;
	int err;

	if (off % CHUNK || !len || off > (uint64_t)INT64_MAX - len) {
		fail_now(done, arg, off % CHUNK || !len ? -EINVAL : -EFBIG);
		return;
	}
	/* Verify everything before storing anything. */
	for (size_t pos = 0, i = 0; pos < len; pos += CHUNK, i++) {
		size_t n = len - pos < CHUNK ? len - pos : CHUNK;

		if (lode_chunk_sum((const char *)data + pos, n) != sums[i]) {
			fail_now(done, arg, -EBADMSG);
			return;
		}
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
	err = fds_get(io, id, true, &op->fds, &sb);
	if (err) {
		op_finish(op, err);
		return;
	}
	/* A short last chunk must end the object: bytes after it in the same chunk would
	 * not be covered by its checksum. */
	if (len % CHUNK && (uint64_t)sb.st_size > off + len) {
		op_finish(op, -EINVAL);
		return;
	}
	xfer_start(op, ST_WRITE_DATA, op->fds->dfd, (void *)data, len, off, true);
}

/* Both reads: the bytes into a buffer, or (zero_copy) only where they are. */
static void read_start(struct lode_objstore_io *io, const struct lode_wire_objid *id, uint64_t off,
		       size_t len, bool zero_copy, lode_obj_done_fn done, void *arg)
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
	op->zero_copy = zero_copy;
	err = fds_get(io, id, false, &op->fds, &sb);
	if (err == -ENOENT) {
		op->fds = NULL;
		op_finish(op, 0); /* a missing object reads as empty */
		return;
	}
	if (err) {
		op_finish(op, err);
		return;
	}
	avail = (uint64_t)sb.st_size > off ? (size_t)((uint64_t)sb.st_size - off) : 0;
	if (avail > len)
		avail = len;
	if (zero_copy) {
		/* no data read here: go straight to the checksums of what the file holds */
		op->xdone = avail;
		op->stage = ST_READ_DATA;
		op_advance(op, 0);
		return;
	}
	op->res.data = malloc(avail ? avail : 1);
	if (!op->res.data) {
		op_finish(op, -ENOMEM);
		return;
	}
	xfer_start(op, ST_READ_DATA, op->fds->dfd, op->res.data, avail, off, false);
}

void lode_objstore_read(struct lode_objstore_io *io, const struct lode_wire_objid *id, uint64_t off,
			size_t len, lode_obj_done_fn done, void *arg)
{
	read_start(io, id, off, len, false, done, arg);
}

void lode_objstore_read_fd(struct lode_objstore_io *io, const struct lode_wire_objid *id,
			   uint64_t off, size_t len, lode_obj_done_fn done, void *arg)
{
	read_start(io, id, off, len, true, done, arg);
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
	err = fds_get(io, id, true, &op->fds, &sb);
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
	err = fds_get(io, id, false, &op->fds, &sb);
	if (err) {
		op->fds = NULL;
		op_finish(op, err);
		return;
	}
	sync_start(op, ST_SYNC_DATA, op->fds->dfd);
}

/* ---- synchronous operations ---- */

struct purge_msg {
	struct lode_objstore_io *io;
	struct lode_wire_objid id;
};

/* On a worker's thread: forget a removed object's descriptors. */
static void purge_on_worker(void *arg)
{
	struct purge_msg *m = arg;
	struct obj_fds *f = cache_find(m->io, &m->id);

	if (f)
		cache_drop(m->io, f);
	free(m);
}

/* Asks every other worker to close its descriptors of a removed object. */
static void purge_everywhere(struct lode_objstore *st, struct lode_objstore_io *self,
			     const struct lode_wire_objid *id)
{
	pthread_mutex_lock(&st->ios_lock);
	for (unsigned i = 0; i < MAX_IOS; i++) {
		struct purge_msg *m;

		if (!st->ios[i] || st->ios[i] == self)
			continue;
		m = malloc(sizeof(*m));
		if (!m)
			continue; /* the worker's own next look at it (nlink 0) still drops it */
		m->io = st->ios[i];
		m->id = *id;
		lode_loop_post(st->ios[i]->loop, purge_on_worker, m);
	}
	pthread_mutex_unlock(&st->ios_lock);
}

int lode_objstore_remove(struct lode_objstore *st, struct lode_objstore_io *io,
			 const struct lode_wire_objid *id, struct lode_obj_result *res)
{
	pthread_mutex_t *lock = obj_lock(st, id);
	int dirfd = obj_dirfd(st, id);
	char name[OBJ_NAME_BUF], sname[OBJ_NAME_BUF];
	struct lode_obj_result r = {0};
	struct stat sb;
	int err = 0;

	if (io) {
		struct obj_fds *f = cache_find(io, id);

		if (f)
			cache_drop(io, f);
	}
	obj_name(id, name, false);
	obj_name(id, sname, true);
	pthread_mutex_lock(lock);
	if (fstatat(dirfd, name, &sb, 0) == 0) {
		r.object_size = (uint64_t)sb.st_size;
		r.bytes_stored = (uint64_t)sb.st_blocks * 512;
	}
	/* Data first: once it is gone the object is absent for everyone. A .sum left by a
	 * crash right after is harmless: a re-created object truncates it (pair_open). */
	if (unlinkat(dirfd, name, 0) == 0)
		atomic_fetch_sub(&st->count, 1);
	else if (errno != ENOENT)
		err = -errno;
	if (!err && unlinkat(dirfd, sname, 0) < 0 && errno != ENOENT)
		err = -errno;
	pthread_mutex_unlock(lock);
	purge_everywhere(st, io, id);
	if (err)
		return err;
	if (res)
		*res = r;
	return 0;
}

int lode_objstore_stat(struct lode_objstore *st, const struct lode_wire_objid *id,
		       struct lode_obj_result *res)
{
	char name[OBJ_NAME_BUF];
	struct lode_obj_result r = {0};
	struct stat sb;

	obj_name(id, name, false);
	if (fstatat(obj_dirfd(st, id), name, &sb, 0) < 0)
		return -errno;
	r.object_size = (uint64_t)sb.st_size;
	r.bytes_stored = (uint64_t)sb.st_blocks * 512;
	obj_name(id, name, true);
	if (fstatat(obj_dirfd(st, id), name, &sb, 0) == 0)
		r.bytes_stored += (uint64_t)sb.st_blocks * 512;
	*res = r;
	return 0;
}

static int info_cmp(const void *a, const void *b)
{
	return lode_objid_cmp(&((const struct lode_wire_objinfo *)a)->obj,
			      &((const struct lode_wire_objinfo *)b)->obj);
}

int lode_objstore_list(struct lode_objstore *st, const struct lode_wire_objid *after, uint32_t max,
		       struct lode_wire_objinfo *out, int *eof)
{
	/* Candidates collect in a buffer of twice the page; when it fills, the smallest
	 * `max` are kept: O(objects * log(max)) per page, with bounded memory. */
	size_t cap = (size_t)max * 2, n = 0, kept = 0;
	struct lode_wire_objinfo *cand;
	bool more = false;
	int err = 0;

	if (!max || max > LODE_OBJLIST_MAX)
		return -EINVAL;
	cand = malloc(cap * sizeof(*cand));
	if (!cand)
		return -ENOMEM;
	for (unsigned d = 0; d < NDIRS; d++) {
		int fd = openat(st->dirfd[d], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct lode_wire_objid id;
		struct dirent *de;
		DIR *dir;

		if (fd < 0) {
			err = -errno;
			goto out;
		}
		dir = fdopendir(fd);
		if (!dir) {
			err = -errno;
			close(fd);
			goto out;
		}
		while ((de = readdir(dir))) {
			if (!parse_obj_name(de->d_name, d, &id) || lode_objid_cmp(&id, after) <= 0)
				continue;
			if (n == cap) {
				qsort(cand, n, sizeof(*cand), info_cmp);
				n = max;
				more = true;
			}
			cand[n].obj = id;
			cand[n].size = 0;
			n++;
		}
		closedir(dir);
	}
	qsort(cand, n, sizeof(*cand), info_cmp);
	if (n > max) {
		n = max;
		more = true;
	}
	for (size_t i = 0; i < n; i++) {
		char name[OBJ_NAME_BUF];
		struct stat sb;

		obj_name(&cand[i].obj, name, false);
		if (fstatat(obj_dirfd(st, &cand[i].obj), name, &sb, 0) < 0)
			continue; /* removed during the scan */
		out[kept] = cand[i];
		out[kept].size = (uint64_t)sb.st_size;
		kept++;
	}
	*eof = !more;
out:
	free(cand);
	return err ? err : (int)kept;
}
