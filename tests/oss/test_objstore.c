/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the object store, driven through a real lode_loop in a temporary data
 * directory (removed by the teardown, also when a test fails).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/magic.h>

#include <cmocka.h>

#include "codec.h"
#include "fixture.h"
#include "loop.h"
#include "objstore.h"
#include "oss_fixture.h"

#define CHUNK LODE_CHUNK_SIZE

/* A file system that refuses O_DIRECT, on demand: at the open (refuse_direct_open), or
 * at the next read of a descriptor opened with it (refuse_direct_read, once). */
static atomic_bool refuse_direct_open, refuse_direct_read;

int __real_open64(const char *path, int flags, ...);
int __wrap_open64(const char *path, int flags, ...);
void __real_lode_loop_pread(struct lode_loop *loop, struct lode_io *io, int fd, void *buf,
			    size_t len, off_t off);
void __wrap_lode_loop_pread(struct lode_loop *loop, struct lode_io *io, int fd, void *buf,
			    size_t len, off_t off);

int __wrap_open64(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (flags & O_CREAT) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if ((flags & O_DIRECT) && atomic_load(&refuse_direct_open)) {
		errno = EINVAL;
		return -1;
	}
	return __real_open64(path, flags, mode);
}

void __wrap_lode_loop_pread(struct lode_loop *loop, struct lode_io *io, int fd, void *buf,
			    size_t len, off_t off)
{
	if ((fcntl(fd, F_GETFL) & O_DIRECT) && atomic_exchange(&refuse_direct_read, false)) {
		io->cb(io, -EINVAL);
		return;
	}
	__real_lode_loop_pread(loop, io, fd, buf, len, off);
}

struct fixture {
	char dir[64];
	struct lode_objstore *st;
	struct lode_loop *loop;
	struct lode_objstore_io *io;
	pthread_t thread; /* runs the loop for the whole test */
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

struct done {
	int called; /* protected by fixture.lock */
	int status;
	struct lode_obj_result res;
};

/* One operation, started on the loop's thread and awaited by the test's thread. */
struct job {
	struct fixture *f;
	void (*start)(struct job *j);
	struct lode_objstore_io *io;
	struct lode_wire_objid id;
	uint64_t off;
	const char *data;
	size_t len;
	const uint64_t *sums;
	unsigned flags;
	struct done d;
	/* start_write_noting: whether it was answered before lode_objstore_write returned,
	 * once noted (answered_at_once()) */
	int answered_at_once, noted;
	struct job *then; /* start_two_writes: the second */
};

static void on_done(void *arg, int status, struct lode_obj_result *res)
{
	struct job *j = arg;

	pthread_mutex_lock(&j->f->lock);
	j->d.status = status;
	j->d.res = *res; /* takes over data and sums */
	j->d.called = 1;
	pthread_cond_broadcast(&j->f->cond);
	pthread_mutex_unlock(&j->f->lock);
}

static void job_start(void *arg)
{
	struct job *j = arg;

	j->start(j);
}

static void run_job(struct fixture *f, struct job *j, struct done *out)
{
	j->f = f;
	if (!j->io)
		j->io = f->io;
	lode_loop_post(f->loop, job_start, j);
	pthread_mutex_lock(&f->lock);
	while (!j->d.called)
		pthread_cond_wait(&f->cond, &f->lock);
	pthread_mutex_unlock(&f->lock);
	*out = j->d;
}

static void start_write(struct job *j)
{
	lode_objstore_write(j->io, &j->id, j->off, j->data, j->len, j->sums, j->flags, on_done, j);
}

static void start_write_noting(struct job *j)
{
	start_write(j);
	pthread_mutex_lock(&j->f->lock);
	j->answered_at_once = j->d.called;
	j->noted = 1;
	pthread_cond_broadcast(&j->f->cond);
	pthread_mutex_unlock(&j->f->lock);
}

/* Whether start_write_noting's write was answered at once. The answer wakes run_job's
 * caller before the loop's thread has noted it, so this waits for the note. */
static int answered_at_once(struct job *j)
{
	int r;

	pthread_mutex_lock(&j->f->lock);
	while (!j->noted)
		pthread_cond_wait(&j->f->cond, &j->f->lock);
	r = j->answered_at_once;
	pthread_mutex_unlock(&j->f->lock);
	return r;
}

/* j's write, then j->then's, from one turn of the loop: the second starts beside the first */
static void start_two_writes(struct job *j)
{
	j->then->f = j->f;
	j->then->io = j->io;
	start_write(j);
	start_write_noting(j->then);
}

static void start_read(struct job *j)
{
	lode_objstore_read(j->io, &j->id, j->off, j->len, on_done, j);
}

static void start_truncate(struct job *j)
{
	lode_objstore_truncate(j->io, &j->id, j->off, on_done, j);
}

static void start_fsync(struct job *j)
{
	lode_objstore_fsync(j->io, &j->id, on_done, j);
}

static void done_free(struct done *d)
{
	lode_obj_result_free_data(&d->res);
	free(d->res.sums);
	d->res.sums = NULL;
}

static uint64_t *sums_of(const char *data, size_t len)
{
	size_t n = (len + CHUNK - 1) / CHUNK;
	uint64_t *s = calloc(n, 8);

	assert_non_null(s);
	fixture_chunk_sums(data, len, s);
	return s;
}

static int do_write(struct fixture *f, struct lode_objstore_io *io,
		    const struct lode_wire_objid *id, uint64_t off, const char *data, size_t len,
		    const uint64_t *sums, unsigned flags)
{
	struct job j = {.start = start_write,
			.io = io,
			.id = *id,
			.off = off,
			.data = data,
			.len = len,
			.sums = sums,
			.flags = flags};
	struct done d;

	run_job(f, &j, &d);
	return d.status;
}

static int write_ok(struct fixture *f, const struct lode_wire_objid *id, uint64_t off,
		    const char *data, size_t len)
{
	uint64_t *sums = sums_of(data, len);
	int ret = do_write(f, f->io, id, off, data, len, sums, 0);

	free(sums);
	return ret;
}

static void do_read(struct fixture *f, struct lode_objstore_io *io,
		    const struct lode_wire_objid *id, uint64_t off, size_t len, struct done *d)
{
	struct job j = {.start = start_read, .io = io, .id = *id, .off = off, .len = len};

	run_job(f, &j, d);
}

static int do_truncate(struct fixture *f, const struct lode_wire_objid *id, uint64_t size)
{
	struct job j = {.start = start_truncate, .id = *id, .off = size};
	struct done d;

	run_job(f, &j, &d);
	return d.status;
}

static int do_fsync(struct fixture *f, const struct lode_wire_objid *id, struct done *d)
{
	struct job j = {.start = start_fsync, .id = *id};

	run_job(f, &j, d);
	return d->status;
}

/* Every returned checksum matches the returned data, as the client will check. */
static void assert_sums_match(const struct done *d)
{
	assert_int_equal(d->res.nchunks, (d->res.data_len + CHUNK - 1) / CHUNK);
	for (uint32_t i = 0; i < d->res.nchunks; i++) {
		size_t l = d->res.data_len - (size_t)i * CHUNK;

		if (l > CHUNK)
			l = CHUNK;
		assert_true(d->res.sums[i] ==
			    lode_chunk_sum((const char *)d->res.data + (size_t)i * CHUNK, l));
	}
}

static void *loop_thread(void *arg)
{
	struct fixture *f = arg;

	return (void *)(intptr_t)lode_loop_run(f->loop);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (oss_fixture_store_open(f->dir, sizeof(f->dir), "lode-objstore", &f->st))
		goto err_free;
	if (lode_loop_create(&f->loop, 64))
		goto err_store;
	if (lode_objstore_io_create(f->st, f->loop, 0, &f->io))
		goto err_loop;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	if (pthread_create(&f->thread, NULL, loop_thread, f))
		goto err_io;
	*state = f;
	return 0;

err_io:
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	lode_objstore_io_destroy(f->io);
err_loop:
	lode_loop_destroy(f->loop);
err_store:
	oss_fixture_store_close(f->dir, f->st);
err_free:
	free(f);
	return -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	lode_loop_stop(f->loop);
	pthread_join(f->thread, NULL);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	lode_objstore_io_destroy(f->io);
	lode_loop_destroy(f->loop);
	oss_fixture_store_close(f->dir, f->st);
	free(f);
	return 0;
}

static void reopen_store(struct fixture *f)
{
	lode_objstore_io_destroy(f->io);
	lode_objstore_close(f->st);
	assert_int_equal(lode_objstore_open(&f->st, f->dir), 0);
	assert_int_equal(lode_objstore_io_create(f->st, f->loop, 0, &f->io), 0);
}

static void obj_path(struct fixture *f, const struct lode_wire_objid *id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/objects/%02x/%016llx.%016llx.%08x", f->dir,
		 (unsigned)(id->ino % 256), (unsigned long long)id->ino,
		 (unsigned long long)id->generation, id->stripe);
}

/* ---- tests ---- */

static void test_write_then_read_returns_data_and_sums_with_a_partial_last_chunk(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(0x1234, 7, 2);
	size_t len = 3 * CHUNK + 1000;
	char *data = fixture_pattern(len, 1);
	struct done d;

	assert_int_equal(write_ok(f, &id, 0, data, len), 0);
	do_read(f, f->io, &id, 0, 4 * CHUNK, &d);
	assert_int_equal(d.status, 0);
	assert_int_equal(d.res.object_size, len);
	assert_int_equal(d.res.data_len, len);
	assert_memory_equal(d.res.data, data, len);
	assert_int_equal(d.res.nchunks, 4);
	assert_sums_match(&d);
	done_free(&d);

	/* and from the middle */
	do_read(f, f->io, &id, 2 * CHUNK, CHUNK, &d);
	assert_int_equal(d.res.data_len, CHUNK);
	assert_memory_equal(d.res.data, data + 2 * CHUNK, CHUNK);
	assert_sums_match(&d);
	done_free(&d);
	free(data);
}

static void test_write_with_a_bad_checksum_is_rejected_and_stores_nothing(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(5, 1, 0);
	size_t len = 2 * CHUNK;
	char *data = fixture_pattern(len, 2);
	uint64_t *sums = sums_of(data, len);
	struct lode_obj_result r;

	sums[1] ^= 1;
	assert_int_equal(do_write(f, f->io, &id, 0, data, len, sums, LODE_OBJ_F_SYNC), -EBADMSG);
	assert_int_equal(lode_objstore_stat(f->st, &id, &r), -ENOENT);
	assert_int_equal(lode_objstore_count(f->st), 0);
	free(sums);
	free(data);
}

/* The checksums are stored by a plain pwrite once the data is in (objio.c): a checksum
 * file that refuses it (here a FIFO in its place: ESPIPE) fails the write with its error,
 * never acknowledges data whose checksums were not stored. */
static void test_a_checksum_write_that_fails_fails_the_write(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(6, 1, 0);
	char *data = fixture_pattern(CHUNK, 3);
	char path[256], sum_path[300];

	obj_path(f, &id, path, sizeof(path));
	snprintf(sum_path, sizeof(sum_path), "%s.sum", path);
	assert_int_equal(mkfifo(sum_path, 0644), 0);
	assert_int_equal(write_ok(f, &id, 0, data, CHUNK), -ESPIPE);
	assert_int_equal(write_ok(f, &id, 0, data, CHUNK), -ESPIPE); /* and again, cached */
	assert_int_equal(unlink(sum_path), 0);
	free(data);
}

/*
 * A write of at most 128 KiB on a loop with nothing else in flight is made on the loop's
 * thread (objio.c, WRITE_INLINE_MAX), and a small lazy one is then answered before
 * lode_objstore_write returns; a larger one, or one beside another operation, goes through
 * io_uring. Every way stores the
 * same bytes and checksums, and a data write that fails fails the write.
 */
static void test_a_small_write_on_an_idle_loop_is_made_at_once(void **state)
{
	struct fixture *f = *state;
	/* lazy, and inside the first 256 KiB: no writeback kick after them either */
	size_t small = 128 * 1024, big = 192 * 1024;
	unsigned lazy = LODE_OBJ_F_LAZY;
	char *a = fixture_pattern(small, 21), *b = fixture_pattern(big, 22);
	uint64_t *sa = sums_of(a, small), *sb = sums_of(b, big);
	struct job j1 = {.start = start_write_noting,
			 .id = fixture_oid(21, 1, 0),
			 .data = a,
			 .len = small,
			 .sums = sa,
			 .flags = lazy};
	struct job j2 = {.start = start_write_noting,
			 .id = fixture_oid(22, 1, 0),
			 .data = b,
			 .len = big,
			 .sums = sb,
			 .flags = lazy};
	struct job j4 = {
	    .id = fixture_oid(24, 1, 0), .data = a, .len = small, .sums = sa, .flags = lazy};
	struct job j3 = {.start = start_two_writes,
			 .id = fixture_oid(23, 1, 0),
			 .data = b,
			 .len = big,
			 .sums = sb,
			 .flags = lazy,
			 .then = &j4};
	struct lode_wire_objid fifo_id = fixture_oid(25, 1, 0);
	char path[256];
	struct done d;

	run_job(f, &j1, &d);
	assert_int_equal(d.status, 0);
	assert_true(answered_at_once(&j1));
	run_job(f, &j2, &d);
	assert_int_equal(d.status, 0);
	assert_false(answered_at_once(&j2));
	run_job(f, &j3, &d);
	assert_int_equal(d.status, 0);
	pthread_mutex_lock(&f->lock);
	while (!j4.d.called)
		pthread_cond_wait(&f->cond, &f->lock);
	pthread_mutex_unlock(&f->lock);
	assert_int_equal(j4.d.status, 0);
	assert_false(answered_at_once(&j4));

	for (uint64_t ino = 21; ino <= 24; ino++) {
		struct lode_wire_objid id = fixture_oid(ino, 1, 0);
		size_t len = ino == 21 || ino == 24 ? small : big;

		do_read(f, f->io, &id, 0, len, &d);
		assert_int_equal(d.status, 0);
		assert_int_equal(d.res.data_len, len);
		assert_memory_equal(d.res.data, len == small ? a : b, len);
		assert_sums_match(&d);
		done_free(&d);
	}

	/* a data file that takes no write at an offset */
	obj_path(f, &fifo_id, path, sizeof(path));
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(write_ok(f, &fifo_id, 0, a, CHUNK), -ESPIPE);
	assert_int_equal(unlink(path), 0);
	free(sa);
	free(sb);
	free(a);
	free(b);
}

static long dirty_pages(const char *path, uint64_t off, uint64_t len)
{
	return oss_fixture_pages(path, off, len, true);
}

/* Writes len bytes at off of a fresh object (ino) with flags, then says how many of the
 * range's pages are still dirty. */
static long dirty_after_write(struct fixture *f, uint64_t ino, uint64_t off, size_t len,
			      unsigned flags)
{
	struct lode_wire_objid id = fixture_oid(ino, 1, 0);
	char *data = fixture_pattern(len, (unsigned)ino);
	uint64_t *sums = sums_of(data, len);
	char path[256];

	assert_int_equal(do_write(f, f->io, &id, off, data, len, sums, flags), 0);
	obj_path(f, &id, path, sizeof(path));
	free(sums);
	free(data);
	return dirty_pages(path, off, len);
}

/* Whether a lazy write of [off, off + len) to fresh objects (inos from ino on) is left
 * dirty: the kernel's flusher may write a page back in between, so three tries. Skips the
 * test where cachestat cannot tell. */
static bool lazy_write_left_dirty(struct fixture *f, uint64_t ino, uint64_t off, size_t len)
{
	for (unsigned i = 0; i < 3; i++) {
		long d = dirty_after_write(f, ino + i, off, len, LODE_OBJ_F_LAZY);

		if (d < 0) {
			print_message("no cachestat(2) here, or tmpfs: not checked\n");
			skip();
		}
		if (d > 0)
			return true;
	}
	return false;
}

/* A write starts its range's writeback before it completes (sync_file_range), unless it is
 * flagged LODE_OBJ_F_LAZY and ends in its object's first 256 KiB: a small file no fsync
 * will follow is left to the kernel. */
static void test_only_small_lazy_writes_are_left_dirty(void **state)
{
	struct fixture *f = *state;

	assert_true(lazy_write_left_dirty(f, 40, 0, CHUNK));
	assert_true(lazy_write_left_dirty(f, 45, 3 * CHUNK, CHUNK)); /* ends at 256 KiB */
	assert_int_equal(dirty_after_write(f, 50, 0, CHUNK, 0), 0);
	assert_int_equal(dirty_after_write(f, 51, 0, 8 * CHUNK, LODE_OBJ_F_LAZY), 0);
	assert_int_equal(dirty_after_write(f, 52, 4 * CHUNK, CHUNK, LODE_OBJ_F_LAZY), 0);
}

/* A read for a zero-copy send, awaited; its descriptor (if it handed one out) released on
 * the loop's thread at once. *had_fd says whether it did. */
struct fd_read {
	struct job j;
	bool had_fd;
};

static void on_fd_read_done(void *arg, int status, struct lode_obj_result *res)
{
	struct fd_read *r = arg;

	r->had_fd = res->fd_ref != NULL;
	lode_objstore_fd_release(res->fd_ref);
	res->fd_ref = NULL;
	on_done(&r->j, status, res);
}

static void start_read_fd(struct job *j)
{
	lode_objstore_read_fd(j->io, &j->id, j->off, j->len, on_fd_read_done, j);
}

static bool read_fd(struct fixture *f, const struct lode_wire_objid *id, uint64_t off, size_t len,
		    struct done *d)
{
	struct fd_read r = {.j = {.start = start_read_fd, .id = *id, .off = off, .len = len}};

	run_job(f, &r.j, d);
	assert_int_equal(d->status, 0);
	return r.had_fd;
}

/* Writes a fresh object of len bytes (ino), makes it durable and has the kernel forget its
 * pages. Skips the test where cachestat cannot say what is cached. */
static char *write_uncached(struct fixture *f, uint64_t ino, size_t len)
{
	struct lode_wire_objid id = fixture_oid(ino, 1, 0);
	char *data = fixture_pattern(len, (unsigned)ino);
	char path[256];
	struct done d;
	long left;

	assert_int_equal(write_ok(f, &id, 0, data, len), 0);
	assert_int_equal(do_fsync(f, &id, &d), 0);
	obj_path(f, &id, path, sizeof(path));
	left = oss_fixture_uncache(path);
	if (left < 0) {
		print_message("no cachestat(2) here, or tmpfs: not checked\n");
		skip();
	}
	assert_int_equal(left, 0);
	return data;
}

/* d read all len bytes of id, data, past the page cache, which keeps none of them. Frees
 * d's buffers. */
static void assert_read_past_the_cache(struct fixture *f, const struct lode_wire_objid *id,
				       struct done *d, const char *data, size_t len)
{
	char path[256];

	assert_true(d->res.direct);
	assert_int_equal(d->res.data_len, len);
	assert_memory_equal(d->res.data, data, len);
	assert_sums_match(d);
	done_free(d);
	obj_path(f, id, path, sizeof(path));
	assert_int_equal(oss_fixture_pages(path, 0, len, false), 0);
}

/* A large range nobody has cached is read from the disk past the page cache (O_DIRECT),
 * into memory, with the same bytes and checksums a zero-copy send would carry, the file's
 * unaligned end included; the page cache keeps none of it. Small reads, cached ranges, a
 * place read that way a moment ago (a second server loading the same model) and a store
 * told not to go through the page cache as before. */
static void test_large_uncached_reads_go_past_the_page_cache(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(70, 1, 0), small = fixture_oid(71, 1, 0),
			       warm = fixture_oid(72, 1, 0), off = fixture_oid(73, 1, 0);
	size_t len = 16 * CHUNK + 1000;
	char *data = write_uncached(f, 70, len), *d2;
	struct done d;

	assert_false(read_fd(f, &id, 0, 32 * CHUNK, &d));
	assert_int_equal(d.res.object_size, len);
	assert_read_past_the_cache(f, &id, &d, data, len);

	/* from the middle, to the end */
	assert_false(read_fd(f, &id, 8 * CHUNK, 16 * CHUNK, &d));
	assert_int_equal(d.res.data_len, len - 8 * CHUNK);
	assert_memory_equal(d.res.data, data + 8 * CHUNK, len - 8 * CHUNK);
	assert_sums_match(&d);
	done_free(&d);

	/* the same place again at once: through the page cache, for whoever reads it next */
	assert_true(read_fd(f, &id, 0, 32 * CHUNK, &d));
	assert_false(d.res.direct);
	assert_null(d.res.data);
	assert_int_equal(d.res.data_len, len);
	done_free(&d);
	free(data);

	d2 = write_uncached(f, 71, 3 * CHUNK);
	assert_true(read_fd(f, &small, 0, 3 * CHUNK, &d));
	done_free(&d);
	free(d2);

	d2 = fixture_pattern(8 * CHUNK, 72);
	assert_int_equal(write_ok(f, &warm, 0, d2, 8 * CHUNK), 0);
	assert_true(read_fd(f, &warm, 0, 8 * CHUNK, &d));
	done_free(&d);
	free(d2);

	d2 = write_uncached(f, 73, 8 * CHUNK);
	assert_false(lode_objstore_set_direct_reads(f->st, false));
	assert_true(read_fd(f, &off, 0, 8 * CHUNK, &d));
	done_free(&d);
	assert_true(lode_objstore_set_direct_reads(f->st, true));
	free(d2);
}

static void start_read_disk(struct job *j)
{
	lode_objstore_read_disk(j->io, &j->id, j->off, j->len, on_done, j);
}

/* What a scrub reads: the disk's bytes past the page cache, whatever is cached (a dirty
 * range is written back first), small or large, the unaligned end included, and the page
 * cache keeps none of what was not cached. Through the page cache where the store is told
 * not to use O_DIRECT. */
static void test_disk_reads_go_past_the_page_cache_whatever_is_cached(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid cold = fixture_oid(80, 1, 0), warm = fixture_oid(81, 1, 0);
	size_t len = 5 * CHUNK + 77;
	char *data = write_uncached(f, 80, len), *d2 = fixture_pattern(CHUNK + 5, 81);
	struct job j = {.start = start_read_disk, .id = cold, .len = 8 * CHUNK};
	struct done d;

	run_job(f, &j, &d);
	assert_int_equal(d.status, 0);
	assert_read_past_the_cache(f, &cold, &d, data, len);

	/* written a moment ago, dirty in the page cache: from the disk all the same */
	assert_int_equal(write_ok(f, &warm, 0, d2, CHUNK + 5), 0);
	j = (struct job){.start = start_read_disk, .id = warm, .len = 2 * CHUNK};
	run_job(f, &j, &d);
	assert_int_equal(d.status, 0);
	assert_true(d.res.direct);
	assert_int_equal(d.res.data_len, CHUNK + 5);
	assert_memory_equal(d.res.data, d2, CHUNK + 5);
	assert_sums_match(&d);
	done_free(&d);

	assert_false(lode_objstore_set_direct_reads(f->st, false));
	j = (struct job){.start = start_read_disk, .id = cold, .len = 8 * CHUNK};
	run_job(f, &j, &d);
	assert_int_equal(d.status, 0);
	assert_false(d.res.direct);
	assert_memory_equal(d.res.data, data, len);
	done_free(&d);
	assert_true(lode_objstore_set_direct_reads(f->st, true));
	free(d2);
	free(data);
}

/* A file system that refuses O_DIRECT, at the open or only at the read: the read that met
 * the refusal goes through the page cache with the same bytes, and so does every later one
 * until the store is told again that it may. */
static void test_a_refused_o_direct_turns_direct_reads_off(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid a = fixture_oid(90, 1, 0), b = fixture_oid(91, 1, 0),
			       c = fixture_oid(92, 1, 0), e = fixture_oid(93, 1, 0);
	size_t len = 8 * CHUNK + 300;
	char *da = write_uncached(f, 90, len), *db = write_uncached(f, 91, len),
	     *dc = write_uncached(f, 92, len), *de = write_uncached(f, 93, len);
	struct job j;
	struct done d;

	/* refused at the open */
	atomic_store(&refuse_direct_open, true);
	assert_true(read_fd(f, &a, 0, 16 * CHUNK, &d));
	assert_false(d.res.direct);
	assert_int_equal(d.res.data_len, len);
	done_free(&d);
	atomic_store(&refuse_direct_open, false);
	assert_true(read_fd(f, &b, 0, 16 * CHUNK, &d)); /* off since */
	done_free(&d);
	assert_true(lode_objstore_set_direct_reads(f->st, true));
	assert_false(read_fd(f, &b, 0, 16 * CHUNK, &d));
	assert_memory_equal(d.res.data, db, len);
	done_free(&d);

	/* taken at the open, refused at the read: a zero-copy read, and a disk read */
	atomic_store(&refuse_direct_read, true);
	assert_true(read_fd(f, &c, 0, 16 * CHUNK, &d));
	assert_false(d.res.direct);
	assert_int_equal(d.res.data_len, len);
	done_free(&d);
	assert_false(atomic_load(&refuse_direct_read));
	assert_true(lode_objstore_set_direct_reads(f->st, true));
	atomic_store(&refuse_direct_read, true);
	j = (struct job){.start = start_read_disk, .id = a, .len = 16 * CHUNK};
	run_job(f, &j, &d);
	assert_int_equal(d.status, 0);
	assert_false(d.res.direct);
	assert_int_equal(d.res.data_len, len);
	assert_memory_equal(d.res.data, da, len);
	assert_sums_match(&d);
	done_free(&d);
	assert_true(read_fd(f, &e, 0, 16 * CHUNK, &d)); /* off since */
	done_free(&d);
	free(da);
	free(db);
	free(dc);
	free(de);
}

static void test_sync_write_and_fsync_succeed_and_fsync_of_a_missing_object_fails(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(6, 1, 0), missing = fixture_oid(6, 2, 0);
	char *data = fixture_pattern(CHUNK, 3);
	uint64_t *sums = sums_of(data, CHUNK);
	struct done d;

	assert_int_equal(do_write(f, f->io, &id, 0, data, CHUNK, sums, LODE_OBJ_F_SYNC), 0);
	assert_int_equal(do_fsync(f, &id, &d), 0);
	assert_int_equal(d.res.object_size, CHUNK);
	assert_int_equal(do_fsync(f, &missing, &d), -ENOENT);
	free(sums);
	free(data);
}

static void test_read_past_the_end_is_short(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(9, 1, 0);
	size_t len = CHUNK + 10;
	char *data = fixture_pattern(len, 4);
	struct done d;

	assert_int_equal(write_ok(f, &id, 0, data, len), 0);
	do_read(f, f->io, &id, CHUNK, 4 * CHUNK, &d);
	assert_int_equal(d.status, 0);
	assert_int_equal(d.res.data_len, 10);
	assert_int_equal(d.res.nchunks, 1);
	assert_memory_equal(d.res.data, data + CHUNK, 10);
	assert_sums_match(&d);
	done_free(&d);

	do_read(f, f->io, &id, 4 * CHUNK, CHUNK, &d);
	assert_int_equal(d.status, 0);
	assert_int_equal(d.res.data_len, 0);
	assert_int_equal(d.res.nchunks, 0);
	assert_int_equal(d.res.object_size, len);
	done_free(&d);
	free(data);
}

static void test_a_missing_object_reads_as_empty(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(10, 1, 0);
	struct done d;

	do_read(f, f->io, &id, 0, CHUNK, &d);
	assert_int_equal(d.status, 0);
	assert_int_equal(d.res.data_len, 0);
	assert_int_equal(d.res.nchunks, 0);
	assert_int_equal(d.res.object_size, 0);
	done_free(&d);
}

static void test_truncate_down_mid_chunk_keeps_the_rest_readable_with_valid_sums(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(11, 1, 0);
	size_t len = 3 * CHUNK;
	uint64_t cut = CHUNK + 777;
	char *data = fixture_pattern(len, 5);
	struct done d;

	assert_int_equal(write_ok(f, &id, 0, data, len), 0);
	assert_int_equal(do_truncate(f, &id, cut), 0);
	do_read(f, f->io, &id, 0, len, &d);
	assert_int_equal(d.status, 0);
	assert_int_equal(d.res.object_size, cut);
	assert_int_equal(d.res.data_len, cut);
	assert_memory_equal(d.res.data, data, cut);
	assert_sums_match(&d);
	done_free(&d);

	/* and to a chunk boundary */
	assert_int_equal(do_truncate(f, &id, CHUNK), 0);
	do_read(f, f->io, &id, 0, len, &d);
	assert_int_equal(d.res.data_len, CHUNK);
	assert_sums_match(&d);
	done_free(&d);
	free(data);
}

static void test_truncate_up_reads_zeros_with_valid_sums(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(12, 1, 0);
	size_t len = 100;
	char *data = fixture_pattern(len, 6);
	char *zeros = calloc(1, 3 * CHUNK);
	struct done d;

	assert_int_equal(write_ok(f, &id, 0, data, len), 0);
	assert_int_equal(do_truncate(f, &id, 3 * CHUNK), 0);
	do_read(f, f->io, &id, 0, 3 * CHUNK, &d);
	assert_int_equal(d.res.data_len, 3 * CHUNK);
	assert_memory_equal(d.res.data, data, len);
	assert_memory_equal((char *)d.res.data + len, zeros, 3 * CHUNK - len);
	assert_sums_match(&d);
	done_free(&d);

	/* truncate creates an absent object */
	id = fixture_oid(12, 2, 0);
	assert_int_equal(do_truncate(f, &id, 5), 0);
	do_read(f, f->io, &id, 0, CHUNK, &d);
	assert_int_equal(d.res.data_len, 5);
	assert_sums_match(&d);
	done_free(&d);
	free(zeros);
	free(data);
}

static void test_a_write_past_a_partial_last_chunk_leaves_holes_that_verify(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(13, 1, 0);
	char *a = fixture_pattern(500, 7), *b = fixture_pattern(CHUNK, 8);
	char *zeros = calloc(1, CHUNK);
	struct done d;

	assert_int_equal(write_ok(f, &id, 0, a, 500), 0);
	assert_int_equal(write_ok(f, &id, 3 * CHUNK, b, CHUNK), 0);
	do_read(f, f->io, &id, 0, 4 * CHUNK, &d);
	assert_int_equal(d.res.data_len, 4 * CHUNK);
	assert_memory_equal(d.res.data, a, 500);
	assert_memory_equal((char *)d.res.data + 500, zeros, CHUNK - 500);
	assert_memory_equal((char *)d.res.data + CHUNK, zeros, CHUNK);
	assert_memory_equal((char *)d.res.data + 3 * CHUNK, b, CHUNK);
	assert_sums_match(&d);
	done_free(&d);
	free(zeros);
	free(a);
	free(b);
}

static void test_a_short_last_chunk_inside_the_object_is_rejected(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(14, 1, 0);
	char *data = fixture_pattern(2 * CHUNK, 9);

	assert_int_equal(write_ok(f, &id, 0, data, 2 * CHUNK), 0);
	assert_int_equal(write_ok(f, &id, 0, data, 100), -EINVAL);
	free(data);
}

static void test_remove_makes_the_object_absent(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(15, 1, 0);
	char *data = fixture_pattern(CHUNK, 10);
	struct lode_obj_result r;
	struct done d;

	assert_int_equal(write_ok(f, &id, 0, data, CHUNK), 0);
	assert_int_equal(lode_objstore_count(f->st), 1);
	assert_int_equal(lode_objstore_stat(f->st, &id, &r), 0);
	assert_int_equal(r.object_size, CHUNK);
	assert_true(r.bytes_stored >= CHUNK);
	assert_int_equal(lode_objstore_remove(f->st, f->io, &id, &r), 0);
	assert_int_equal(r.object_size, CHUNK);
	assert_int_equal(lode_objstore_count(f->st), 0);
	assert_int_equal(lode_objstore_stat(f->st, &id, &r), -ENOENT);
	do_read(f, f->io, &id, 0, CHUNK, &d);
	assert_int_equal(d.res.data_len, 0);
	done_free(&d);
	/* removing an absent object succeeds with size 0 */
	assert_int_equal(lode_objstore_remove(f->st, NULL, &id, &r), 0);
	assert_int_equal(r.object_size, 0);
	free(data);
}

static void test_a_removed_object_is_not_served_from_another_threads_cache(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(16, 1, 0);
	char *a = fixture_pattern(CHUNK, 11), *b = fixture_pattern(CHUNK / 2, 12);
	struct lode_objstore_io *other;
	struct done d;

	assert_int_equal(lode_objstore_io_create(f->st, f->loop, 4, &other), 0);
	assert_int_equal(write_ok(f, &id, 0, a, CHUNK), 0);
	do_read(f, other, &id, 0, CHUNK, &d); /* now cached in `other` */
	assert_int_equal(d.res.data_len, CHUNK);
	done_free(&d);
	assert_int_equal(lode_objstore_remove(f->st, NULL, &id, NULL), 0);
	assert_int_equal(write_ok(f, &id, 0, b, CHUNK / 2), 0);
	do_read(f, other, &id, 0, CHUNK, &d);
	assert_int_equal(d.res.data_len, CHUNK / 2);
	assert_memory_equal(d.res.data, b, CHUNK / 2);
	assert_sums_match(&d);
	done_free(&d);
	lode_objstore_io_destroy(other);
	free(a);
	free(b);
}

static void test_many_objects_through_a_small_cache_stay_intact(void **state)
{
	struct fixture *f = *state;
	struct lode_objstore_io *small;
	char *data[6];
	struct done d;

	assert_int_equal(lode_objstore_io_create(f->st, f->loop, 2, &small), 0);
	for (unsigned i = 0; i < 6; i++) {
		struct lode_wire_objid id = fixture_oid(100 + i, 1, i);
		uint64_t *sums;

		data[i] = fixture_pattern(CHUNK + i, 20 + i);
		sums = sums_of(data[i], CHUNK + i);
		assert_int_equal(do_write(f, small, &id, 0, data[i], CHUNK + i, sums, 0), 0);
		free(sums);
	}
	for (unsigned i = 0; i < 6; i++) {
		struct lode_wire_objid id = fixture_oid(100 + i, 1, i);

		do_read(f, small, &id, 0, 2 * CHUNK, &d);
		assert_int_equal(d.res.data_len, CHUNK + i);
		assert_memory_equal(d.res.data, data[i], CHUNK + i);
		done_free(&d);
		free(data[i]);
	}
	lode_objstore_io_destroy(small);
}

static void test_listing_returns_pages_in_id_order_and_ignores_foreign_files(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid ids[] = {fixture_oid(0x300, 1, 0), fixture_oid(1, 2, 1),
					fixture_oid(1, 2, 0),	  fixture_oid(0x201, 1, 0),
					fixture_oid(1, 1, 5),	  fixture_oid(2, 0, 0)};
	size_t n = sizeof(ids) / sizeof(ids[0]);
	struct lode_wire_objinfo page[4];
	struct lode_wire_objid after = {0};
	char path[256], *data = fixture_pattern(10, 13);
	int eof = 0, got, total = 0;
	int fd;

	for (size_t i = 0; i < n; i++)
		assert_int_equal(write_ok(f, &ids[i], 0, data, 10), 0);
	/* foreign names, including a non-canonical spelling and a wrong directory */
	const char *junk[] = {"objects/01/junk", "objects/01/0000000000000001.0000000000000003",
			      "objects/01/0000000000000001.0000000000000003.0000000G",
			      "objects/02/0000000000000001.0000000000000009.00000000",
			      "objects/01/0000000000000001.000000000000000A.00000000"};
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", f->dir, junk[i]);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		assert_true(fd >= 0);
		close(fd);
	}

	struct lode_wire_objid want[] = {fixture_oid(1, 1, 5),	   fixture_oid(1, 2, 0),
					 fixture_oid(1, 2, 1),	   fixture_oid(2, 0, 0),
					 fixture_oid(0x201, 1, 0), fixture_oid(0x300, 1, 0)};
	while (!eof) {
		got = lode_objstore_list(f->st, &after, 4, page, &eof);
		assert_true(got >= 0 && got <= 4);
		for (int i = 0; i < got; i++) {
			assert_true(total < (int)n);
			assert_int_equal(lode_objid_cmp(&page[i].obj, &want[total]), 0);
			assert_int_equal(page[i].size, 10);
			total++;
		}
		if (got)
			after = page[got - 1].obj;
	}
	assert_int_equal(total, n);

	got = lode_objstore_list(f->st, &want[1], 2, page, &eof);
	assert_int_equal(got, 2);
	assert_false(eof);
	assert_int_equal(lode_objid_cmp(&page[0].obj, &want[2]), 0);
	assert_int_equal(lode_objid_cmp(&page[1].obj, &want[3]), 0);
	assert_int_equal(lode_objstore_list(f->st, &after, 0, page, &eof), -EINVAL);
	free(data);
}

/* Pages after the first come from the window of one scan: objects removed since are
 * skipped, and a page whose every object went is not answered empty before the end. */
static void test_listing_skips_objects_removed_since_its_scan(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objinfo page[2];
	struct lode_wire_objid after = {0};
	char *data = fixture_pattern(10, 7);
	int eof = 0;

	for (unsigned i = 1; i <= 6; i++) {
		struct lode_wire_objid id = fixture_oid(i, 1, 0);

		assert_int_equal(write_ok(f, &id, 0, data, 10), 0);
	}
	assert_int_equal(lode_objstore_list(f->st, &after, 2, page, &eof), 2);
	assert_false(eof);
	for (unsigned i = 3; i <= 4; i++) {
		struct lode_wire_objid id = fixture_oid(i, 1, 0);

		assert_int_equal(lode_objstore_remove(f->st, NULL, &id, NULL), 0);
	}
	after = page[1].obj;
	assert_int_equal(lode_objstore_list(f->st, &after, 2, page, &eof), 2);
	assert_int_equal(page[0].obj.ino, 5);
	assert_int_equal(page[1].obj.ino, 6);
	assert_int_equal(page[1].size, 10);
	assert_true(eof);
	free(data);
}

static void test_a_flipped_byte_on_disk_is_detected_by_the_stored_checksum(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(17, 1, 0);
	char *data = fixture_pattern(2 * CHUNK, 14);
	char path[256], c;
	struct done d;
	int fd;

	assert_int_equal(write_ok(f, &id, 0, data, 2 * CHUNK), 0);
	obj_path(f, &id, path, sizeof(path));
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, CHUNK + 5), 1);
	c ^= 0x40;
	assert_int_equal(pwrite(fd, &c, 1, CHUNK + 5), 1);
	close(fd);

	do_read(f, f->io, &id, 0, 2 * CHUNK, &d);
	assert_int_equal(d.res.nchunks, 2);
	assert_true(d.res.sums[0] == lode_chunk_sum(d.res.data, CHUNK));
	assert_true(d.res.sums[1] != lode_chunk_sum((char *)d.res.data + CHUNK, CHUNK));
	done_free(&d);

	/* truncating into the corrupt chunk refuses to re-sum it */
	assert_int_equal(do_truncate(f, &id, CHUNK + 100), -EIO);
	free(data);
}

static void test_objects_survive_a_reopen_of_the_store(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(0xabcdef, 3, 9);
	size_t len = 2 * CHUNK + 3;
	char *data = fixture_pattern(len, 15);
	struct done d;

	assert_int_equal(write_ok(f, &id, 0, data, len), 0);
	reopen_store(f);
	assert_int_equal(lode_objstore_count(f->st), 1);
	do_read(f, f->io, &id, 0, len, &d);
	assert_int_equal(d.res.data_len, len);
	assert_memory_equal(d.res.data, data, len);
	assert_sums_match(&d);
	done_free(&d);
	free(data);
}

/* The objects directory's inode flags into *flags: false where the file system has none. */
static bool dir_flags(const char *dir, int *flags)
{
	char path[PATH_MAX];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/objects", dir);
	fd = open(path, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	rc = ioctl(fd, FS_IOC_GETFLAGS, flags);
	close(fd);
	return rc == 0;
}

static void set_dir_flags(const char *dir, int flags)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/objects", dir);
	fd = open(path, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(ioctl(fd, FS_IOC_SETFLAGS, &flags), 0);
	close(fd);
}

/* When objects/XX was made (its birth time, in ns), or 0 where the file system keeps none. */
static uint64_t dir_born(const char *dir, unsigned i)
{
	char path[PATH_MAX];
	struct statx sx;

	snprintf(path, sizeof(path), "%s/objects/%02x", dir, i);
	assert_int_equal(statx(AT_FDCWD, path, 0, STATX_BTIME, &sx), 0);
	if (!(sx.stx_mask & STATX_BTIME))
		return 0;
	return (uint64_t)sx.stx_btime.tv_sec * 1000000000u + sx.stx_btime.tv_nsec;
}

/* Whether DIR/objects/.spread exists: every object directory was made spread. */
static bool spread_marked(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/objects/.spread", dir);
	return access(path, F_OK) == 0;
}

/*
 * The object directories are spread over the disk (objstore.c: spread_directories): a new
 * store marks its objects directory and says all its directories were made so. A store of
 * an older lode-oss has its empty object directories made again at each start, while the
 * ones holding objects, and the objects, stay; once the last of those is empty (the
 * target drained), the next start makes it again too, and from then on none is touched.
 */
static void test_a_store_spreads_its_directories_and_keeps_its_objects(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(0x1234500, 1, 0); /* in directory 00 */
	char *data = fixture_pattern(CHUNK + 5, 3);
	char mark[PATH_MAX];
	uint64_t full, empty;
	struct done d;
	int flags;

	if (!dir_flags(f->dir, &flags)) {
		print_message("no inode flags on this file system (tmpfs?): nothing to spread\n");
		skip();
	}
	assert_true(flags & FS_TOPDIR_FL);
	assert_true(spread_marked(f->dir));
	assert_int_equal(write_ok(f, &id, 0, data, CHUNK + 5), 0);

	/* a store of an older lode-oss: its directories were made unmarked */
	set_dir_flags(f->dir, flags & ~FS_TOPDIR_FL);
	snprintf(mark, sizeof(mark), "%s/objects/.spread", f->dir);
	assert_int_equal(unlink(mark), 0);
	full = dir_born(f->dir, 0);
	empty = dir_born(f->dir, 0x7f);
	usleep(20000); /* past the file system's clock tick */
	reopen_store(f);
	assert_true(dir_flags(f->dir, &flags));
	assert_true(flags & FS_TOPDIR_FL);
	assert_false(spread_marked(f->dir)); /* directory 00 is not spread yet */
	assert_int_equal(dir_born(f->dir, 0), full);
	if (empty) /* made again */
		assert_true(dir_born(f->dir, 0x7f) > empty);
	assert_int_equal(lode_objstore_count(f->st), 1);
	do_read(f, f->io, &id, 0, CHUNK + 5, &d);
	assert_int_equal(d.res.data_len, CHUNK + 5);
	assert_memory_equal(d.res.data, data, CHUNK + 5);
	assert_sums_match(&d);
	done_free(&d);

	/* its last object gone, the next start makes directory 00 again and marks the store */
	assert_int_equal(lode_objstore_remove(f->st, f->io, &id, NULL), 0);
	usleep(20000);
	reopen_store(f);
	if (full)
		assert_true(dir_born(f->dir, 0) > full);
	assert_true(spread_marked(f->dir));
	/* and once marked, a start leaves every directory as it is */
	empty = dir_born(f->dir, 0x7f);
	usleep(20000);
	reopen_store(f);
	assert_int_equal(dir_born(f->dir, 0x7f), empty);
	free(data);
}

/* A LODE_OBJ_F_MERGE write's checksums: one per chunk its bytes touch, of those bytes. */
static int merge_write(struct fixture *f, const struct lode_wire_objid *id, uint64_t off,
		       const char *data, size_t len)
{
	uint64_t first = off / CHUNK, end = (off + len + CHUNK - 1) / CHUNK;
	uint64_t *sums = calloc(end - first, 8);
	int rc;

	assert_non_null(sums);
	for (uint64_t c = first; c < end; c++) {
		uint64_t from = c * CHUNK > off ? c * CHUNK : off;
		uint64_t to = (c + 1) * CHUNK < off + len ? (c + 1) * CHUNK : off + len;

		sums[c - first] = lode_chunk_sum(data + (from - off), (size_t)(to - from));
	}
	rc = do_write(f, f->io, id, off, data, len, sums, LODE_OBJ_F_MERGE);
	free(sums);
	return rc;
}

static void test_merges_of_disjoint_records_inside_chunks_land_intact_with_valid_sums(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(0x5150, 1, 0);
	enum { REC = 1000, NREC = 300 }; /* records straddle chunk boundaries */
	char *want = fixture_pattern((size_t)REC * NREC, 9);
	struct done d;

	/* every other record first, then the rest backwards: each merges into chunks the
	 * others wrote, before and after it, and some extend the object */
	for (unsigned i = 0; i < NREC; i += 2)
		assert_int_equal(merge_write(f, &id, (uint64_t)i * REC, want + i * REC, REC), 0);
	for (unsigned i = NREC - 1; i < NREC; i -= 2)
		assert_int_equal(merge_write(f, &id, (uint64_t)i * REC, want + i * REC, REC), 0);
	do_read(f, f->io, &id, 0, 5 * CHUNK, &d);
	assert_int_equal(d.status, 0);
	assert_int_equal(d.res.object_size, (size_t)REC * NREC);
	assert_int_equal(d.res.data_len, (size_t)REC * NREC);
	assert_memory_equal(d.res.data, want, (size_t)REC * NREC);
	assert_sums_match(&d);
	done_free(&d);
	free(want);
}

static void test_a_merge_keeps_the_bytes_around_it_and_leaves_holes_as_zeros(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(0x5151, 1, 0);
	size_t len = 2 * CHUNK + 500;
	char *want = fixture_pattern(len, 3), *mid = fixture_pattern(100, 4);
	struct done d;

	assert_int_equal(write_ok(f, &id, 0, want, len), 0);
	/* inside one chunk, and across a chunk boundary */
	memcpy(want + 1000, mid, 100);
	assert_int_equal(merge_write(f, &id, 1000, mid, 100), 0);
	memcpy(want + CHUNK - 50, mid, 100);
	assert_int_equal(merge_write(f, &id, CHUNK - 50, mid, 100), 0);
	do_read(f, f->io, &id, 0, 3 * CHUNK, &d);
	assert_int_equal(d.res.data_len, len);
	assert_memory_equal(d.res.data, want, len);
	assert_sums_match(&d);
	done_free(&d);
	/* past the end: the gap reads as zeros, with sums that verify */
	assert_int_equal(merge_write(f, &id, 4 * CHUNK + 7, mid, 100), 0);
	do_read(f, f->io, &id, 0, 5 * CHUNK, &d);
	assert_int_equal(d.res.data_len, 4 * CHUNK + 107);
	assert_memory_equal(d.res.data, want, len);
	for (size_t i = len; i < 4 * CHUNK + 7; i++)
		assert_int_equal(((char *)d.res.data)[i], 0);
	assert_memory_equal((char *)d.res.data + 4 * CHUNK + 7, mid, 100);
	assert_sums_match(&d);
	done_free(&d);
	free(want);
	free(mid);
}

static void test_a_merge_into_a_chunk_that_fails_its_checksum_is_refused(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(0x5152, 1, 0);
	char *data = fixture_pattern(CHUNK, 5), path[256];
	int fd;

	assert_int_equal(write_ok(f, &id, 0, data, CHUNK), 0);
	obj_path(f, &id, path, sizeof(path));
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "X", 1, 10), 1);
	close(fd);
	/* re-summing the chunk would make the flipped byte look verified */
	assert_int_equal(merge_write(f, &id, 100, data, 10), -EIO);
	/* a merge with a checksum that does not match its bytes stores nothing */
	{
		uint64_t bad = 1;

		assert_int_equal(do_write(f, f->io, &id, 100, data, 10, &bad, LODE_OBJ_F_MERGE),
				 -EBADMSG);
	}
	free(data);
}

struct range_wait {
	struct lode_obj_range r;
	struct fixture *f;
	int granted; /* protected by f->lock */
};

static void range_granted(struct lode_obj_range *r)
{
	struct range_wait *w = lode_container_of(r, struct range_wait, r);

	pthread_mutex_lock(&w->f->lock);
	w->granted = 1;
	pthread_cond_broadcast(&w->f->cond);
	pthread_mutex_unlock(&w->f->lock);
}

static void test_overlapping_ranges_of_one_object_wait_in_order_and_others_do_not(void **state)
{
	struct fixture *f = *state;
	struct range_wait a = {.f = f}, b = {.f = f}, c = {.f = f}, other = {.f = f};

	a.r = (struct lode_obj_range){.id = fixture_oid(9, 1, 0), .first = 0, .end = 4};
	b.r = (struct lode_obj_range){.id = fixture_oid(9, 1, 0), .first = 3, .end = 5};
	c.r = (struct lode_obj_range){.id = fixture_oid(9, 1, 0), .first = 4, .end = 6};
	other.r = (struct lode_obj_range){.id = fixture_oid(9, 1, 1), .first = 0, .end = 4};
	a.r.loop = b.r.loop = c.r.loop = other.r.loop = f->loop;
	a.r.granted = b.r.granted = c.r.granted = other.r.granted = range_granted;
	assert_true(lode_objstore_range_lock(f->st, &a.r));
	assert_true(lode_objstore_range_lock(f->st, &other.r)); /* another object */
	assert_false(lode_objstore_range_lock(f->st, &b.r));	/* shares chunk 3 */
	/* c overlaps only b, which is waiting: it waits behind it */
	assert_false(lode_objstore_range_lock(f->st, &c.r));
	lode_objstore_range_unlock(f->st, &a.r);
	pthread_mutex_lock(&f->lock);
	while (!b.granted)
		pthread_cond_wait(&f->cond, &f->lock);
	assert_int_equal(c.granted, 0);
	pthread_mutex_unlock(&f->lock);
	lode_objstore_range_unlock(f->st, &b.r);
	pthread_mutex_lock(&f->lock);
	while (!c.granted)
		pthread_cond_wait(&f->cond, &f->lock);
	pthread_mutex_unlock(&f->lock);
	lode_objstore_range_unlock(f->st, &c.r);
	lode_objstore_range_unlock(f->st, &other.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	    T(test_write_then_read_returns_data_and_sums_with_a_partial_last_chunk),
	    T(test_write_with_a_bad_checksum_is_rejected_and_stores_nothing),
	    T(test_a_checksum_write_that_fails_fails_the_write),
	    T(test_a_small_write_on_an_idle_loop_is_made_at_once),
	    T(test_only_small_lazy_writes_are_left_dirty),
	    T(test_large_uncached_reads_go_past_the_page_cache),
	    T(test_disk_reads_go_past_the_page_cache_whatever_is_cached),
	    T(test_a_refused_o_direct_turns_direct_reads_off),
	    T(test_sync_write_and_fsync_succeed_and_fsync_of_a_missing_object_fails),
	    T(test_read_past_the_end_is_short),
	    T(test_a_missing_object_reads_as_empty),
	    T(test_truncate_down_mid_chunk_keeps_the_rest_readable_with_valid_sums),
	    T(test_truncate_up_reads_zeros_with_valid_sums),
	    T(test_a_write_past_a_partial_last_chunk_leaves_holes_that_verify),
	    T(test_a_short_last_chunk_inside_the_object_is_rejected),
	    T(test_remove_makes_the_object_absent),
	    T(test_a_removed_object_is_not_served_from_another_threads_cache),
	    T(test_many_objects_through_a_small_cache_stay_intact),
	    T(test_listing_returns_pages_in_id_order_and_ignores_foreign_files),
	    T(test_listing_skips_objects_removed_since_its_scan),
	    T(test_a_flipped_byte_on_disk_is_detected_by_the_stored_checksum),
	    T(test_objects_survive_a_reopen_of_the_store),
	    T(test_a_store_spreads_its_directories_and_keeps_its_objects),
	    T(test_merges_of_disjoint_records_inside_chunks_land_intact_with_valid_sums),
	    T(test_a_merge_keeps_the_bytes_around_it_and_leaves_holes_as_zeros),
	    T(test_a_merge_into_a_chunk_that_fails_its_checksum_is_refused),
	    T(test_overlapping_ranges_of_one_object_wait_in_order_and_others_do_not),
#undef T
	};

	fixture_skip_without_io_uring();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
