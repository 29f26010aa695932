/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the OSS's reading of an object's checksum area from disk (oss/objio.c): the
 * DATA/objects/XX/NAME.sum file (one little-endian u64 per chunk, 0 or absent for a hole)
 * next to the data file, both as a damaged disk or a careless admin may leave them.
 *
 * One object store in a temporary directory for the whole process (removed at exit), one
 * lode_loop and I/O context on this thread. Per input the object is removed, its two files
 * are written as the input says, then read (with and without the bytes), truncated, and
 * written and read back through lode_objstore_* as the OSS handlers call them.
 *
 * Input: [op u8][truncate_to u32][data_size u32][n u16][n data bytes][.sum bytes...]. The
 * data file is data_size (mod 5 chunks) bytes: the n bytes, then zeros. Checked: results
 * lie within what was asked; a truncate that succeeds leaves the size asked for; a chunk
 * written with its right checksum reads back with that checksum.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "fixture.h"
#include "fuzz.h"
#include "loop.h"
#include "objstore.h"

#define CHUNK LODE_CHUNK_SIZE

static char dir[64];
static struct lode_objstore *st;
static struct lode_loop *loop;
static struct lode_objstore_io *io;
static const struct lode_wire_objid oid = {.ino = 0x1234, .generation = 1, .stripe = 0};

struct op {
	int kind; /* 0 read, 1 read_fd, 2 truncate, 3 write */
	uint64_t off;
	size_t len;
	const void *data;
	const uint64_t *sums;
	/* result */
	int done;
	int status;
	struct lode_obj_result res;
};

static void on_done(void *arg, int status, struct lode_obj_result *res)
{
	struct op *o = arg;

	o->done = 1;
	o->status = status;
	if (res)
		o->res = *res;
	lode_loop_stop(loop);
}

static void start(void *arg)
{
	struct op *o = arg;

	switch (o->kind) {
	case 0:
		lode_objstore_read(io, &oid, o->off, o->len, on_done, o);
		break;
	case 1:
		lode_objstore_read_fd(io, &oid, o->off, o->len, on_done, o);
		break;
	case 2:
		lode_objstore_truncate(io, &oid, o->off, on_done, o);
		break;
	case 3:
		lode_objstore_write(io, &oid, o->off, o->data, o->len, o->sums, 0, on_done, o);
		break;
	}
}

static void run(struct op *o)
{
	memset(&o->res, 0, sizeof(o->res));
	o->res.fd = -1;
	o->done = 0;
	lode_loop_post(loop, start, o);
	FUZZ_ASSERT(lode_loop_run(loop) == 0);
	FUZZ_ASSERT(o->done);
	FUZZ_ASSERT(o->status <= 0);
}

static void cleanup(void)
{
	lode_objstore_io_destroy(io);
	lode_loop_destroy(loop);
	lode_objstore_close(st);
	if (dir[0])
		fixture_tmpdir_remove(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	if (lode_loop_create(&loop, 64)) {
		fprintf(stderr, "fuzz_oss_sum: skip: no io_uring here\n");
		exit(77);
	}
	if (fixture_tmpdir_make(dir, sizeof(dir), "lode-fuzz-sum") ||
	    lode_objstore_open(&st, dir) || lode_objstore_io_create(st, loop, 0, &io)) {
		fprintf(stderr, "fuzz_oss_sum: cannot set up an object store in /tmp\n");
		exit(1);
	}
	atexit(cleanup);
	return 0;
}

static void put_file(const char *path, const void *p, size_t n, uint64_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	FUZZ_ASSERT(fd >= 0);
	FUZZ_ASSERT(n == 0 || pwrite(fd, p, n, 0) == (ssize_t)n);
	FUZZ_ASSERT(ftruncate(fd, (off_t)size) == 0);
	close(fd);
}

static void check_read(const struct op *o)
{
	if (o->status)
		return;
	FUZZ_ASSERT(o->res.data_len <= o->len);
	FUZZ_ASSERT(o->res.nchunks == (o->res.data_len + CHUNK - 1) / CHUNK);
	if (o->kind == 0 || o->res.data)
		fuzz_touch(o->res.data, o->res.data_len);
	fuzz_touch(o->res.sums, (size_t)o->res.nchunks * 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	unsigned opsel = (unsigned)fuzz_take(&in, 1);
	uint64_t trunc_to = fuzz_take(&in, 4) % (5 * CHUNK + 1);
	uint64_t dsize = fuzz_take(&in, 4) % (5 * CHUNK + 1);
	size_t n, sn;
	const uint8_t *dbytes = fuzz_bytes(&in, (size_t)fuzz_take(&in, 2), &n);
	const uint8_t *sbytes = fuzz_bytes(&in, in.left, &sn);
	char path[256];
	struct lode_obj_result rr;
	struct op o = {0};
	static char chunk[CHUNK];
	uint64_t sum;

	if (n > dsize)
		dsize = n;
	FUZZ_ASSERT(lode_objstore_remove(st, io, &oid, &rr) == 0);
	snprintf(path, sizeof(path), "%s/objects/%02x/%016llx.%016llx.%08x", dir,
		 (unsigned)(oid.ino % 256), (unsigned long long)oid.ino,
		 (unsigned long long)oid.generation, oid.stripe);
	put_file(path, dbytes, n, dsize);
	if (!(opsel & 0x80)) { /* else: no .sum file at all */
		strcat(path, ".sum");
		put_file(path, sbytes, sn, sn);
	}

	o.kind = 0;
	o.off = (uint64_t)((opsel >> 4) & 3) * CHUNK;
	o.len = 4 * CHUNK;
	run(&o);
	check_read(&o);
	free(o.res.data);
	free(o.res.sums);

	o.kind = 1;
	run(&o);
	check_read(&o);
	/* the descriptor, or the bytes (a small read, or one past the page cache) */
	if (!o.status && o.res.fd_ref)
		lode_objstore_fd_release(o.res.fd_ref);
	lode_obj_result_free_data(&o.res);
	free(o.res.sums);

	if (opsel & 1) {
		o.kind = 2;
		o.off = trunc_to;
		run(&o);
		if (!o.status)
			FUZZ_ASSERT(o.res.object_size == trunc_to);
	}
	if (opsel & 2) {
		/* a whole chunk with its right checksum reads back with that checksum */
		uint64_t at = (uint64_t)((opsel >> 2) & 3) * CHUNK;

		memset(chunk, (int)opsel, sizeof(chunk));
		sum = lode_chunk_sum(chunk, CHUNK);
		o.kind = 3;
		o.off = at;
		o.len = CHUNK;
		o.data = chunk;
		o.sums = &sum;
		run(&o);
		if (!o.status) {
			o.kind = 0;
			o.len = CHUNK;
			run(&o);
			FUZZ_ASSERT(o.status == 0 && o.res.data_len == CHUNK && o.res.nchunks == 1);
			FUZZ_ASSERT(o.res.sums[0] == sum);
			FUZZ_ASSERT(memcmp(o.res.data, chunk, CHUNK) == 0);
			free(o.res.data);
			free(o.res.sums);
		}
	}
	return 0;
}
