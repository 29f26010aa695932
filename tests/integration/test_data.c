/* SPDX-License-Identifier: MIT */
/*
 * Data path against a real local cluster (MDS + 3 OSS): a 1 GiB file striped over every
 * OSS comes back byte-exact, unaligned and sparse writes read back as a local file would,
 * four clients at once each get their own 256 MiB back, a streamed read hands over every
 * piece once, verified, a reader grows to what was appended since its open
 * (lode_file_grow), and lodectl put/get round-trip.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster_client.h"
#include "lode/lode.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define BUF (8 * MiB)

static struct test_cluster tc;

static int group_setup(void **state)
{
	(void)state;
	return cluster_up(&tc, 3);
}

static int group_teardown(void **state)
{
	(void)state;
	cluster_down(&tc);
	return 0;
}

static struct lode_client *connect_or_fail(void)
{
	struct lode_client *c = NULL;

	assert_int_equal(lode_connect(tc.mds, NULL, &c), 0);
	return c;
}

/* Bytes of object files (not .sum) under one OSS's data directory. */
static uint64_t oss_object_bytes(int oss)
{
	char path[512];
	uint64_t total = 0;

	for (int d = 0; d < 256; d++) {
		DIR *dir;
		struct dirent *e;

		snprintf(path, sizeof(path), "%s/oss%d/objects/%02x", tc.dir, oss, d);
		dir = opendir(path);
		if (!dir)
			continue;
		while ((e = readdir(dir))) {
			char full[1024];
			struct stat st;
			size_t len = strlen(e->d_name);

			if (e->d_name[0] == '.' ||
			    (len > 4 && !strcmp(e->d_name + len - 4, ".sum")))
				continue;
			snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
			if (!stat(full, &st))
				total += (uint64_t)st.st_size;
		}
		closedir(dir);
	}
	return total;
}

static void test_a_1gib_file_reads_back_byte_exact_and_is_striped_over_every_oss(void **state)
{
	struct lode_client *c = connect_or_fail();
	struct lode_layout l;
	uint64_t sum = 0;

	(void)state;
	cluster_write_file(c, "/big", GiB, 1, BUF, &l);
	/* three stripes, each with two copies on distinct OSS (the automatic default) */
	assert_int_equal(l.stripe_count, 3);
	assert_int_equal(l.mirror_count, 2);
	for (unsigned s = 0; s < 3; s++)
		assert_int_not_equal(l.targets[2 * s], l.targets[2 * s + 1]);
	for (int i = 0; i < 3; i++) {
		uint64_t b = oss_object_bytes(i);

		/* each OSS holds two of the six stripe copies: two thirds of the file */
		assert_true(b >= 2 * GiB / 3 - 2 * MiB && b <= 2 * GiB / 3 + 2 * MiB);
		sum += b;
	}
	assert_int_equal(sum, 2 * GiB);
	cluster_check_file(c, "/big", GiB, 1, BUF);
	assert_int_equal(lode_unlink(c, "/big"), 0);
	lode_disconnect(c);
}

/*
 * st_blocks of a file its creator wrote (summed from its writes' answers) against the same
 * file measured (OBJ_STAT of each object, as a handle that did not create it measures at
 * its commit): rewriting bytes it holds adds no blocks, so the two agree, up to a file
 * system block or so per object for extent blocks allocated at writeback.
 */
static void expect_blocks_as_measured(struct lode_client *c, const char *path, const void *same,
				      size_t len, uint64_t off)
{
	struct lode_stat by_writes, measured;
	struct lode_file *f;

	assert_int_equal(lode_stat(c, path, &by_writes), 0);
	assert_int_equal(lode_open(c, path, O_WRONLY, 0, &f), 0);
	assert_int_equal(lode_pwrite(f, same, len, off), (ssize_t)len);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_stat(c, path, &measured), 0);
	printf("%s: st_blocks %" PRIu64 " from the creator's writes, %" PRIu64 " measured\n", path,
	       by_writes.blocks, measured.blocks);
	assert_true(by_writes.blocks >= by_writes.size / 512 / 4); /* not unmeasured */
	assert_true(by_writes.blocks + 64 >= measured.blocks);
	assert_true(measured.blocks + 64 >= by_writes.blocks);
}

static void test_unaligned_and_sparse_writes_read_back_like_a_local_file(void **state)
{
	struct lode_client *c = connect_or_fail();
	const uint64_t size = 5 * MiB + 12345;
	unsigned char *model = calloc(1, size), *got = malloc(size);
	struct lode_file *f;
	uint64_t seed = 7;

	(void)state;
	assert_non_null(model);
	assert_non_null(got);
	assert_int_equal(lode_open(c, "/sparse", O_RDWR | O_CREAT | O_EXCL, 0600, &f), 0);
	/* a tail far out first: everything before it is a hole */
	pattern_fill(model + size - 1000, 1000, seed, 0);
	assert_int_equal(lode_pwrite(f, model + size - 1000, 1000, size - 1000), 1000);
	/* small writes at odd offsets, crossing chunk and stripe boundaries */
	for (int i = 0; i < 200; i++) {
		uint64_t off = ((uint64_t)i * 26251 * 7) % (size - 70000);
		size_t n = 1 + (size_t)((i * 7919) % 70000);

		pattern_fill(model + off, n, seed + (uint64_t)i + 1, off);
		assert_int_equal(lode_pwrite(f, model + off, n, off), (ssize_t)n);
	}
	assert_int_equal(lode_pread(f, got, size, 0), (ssize_t)size);
	assert_memory_equal(got, model, size);
	assert_int_equal(lode_close(f), 0);
	expect_blocks_as_measured(c, "/sparse", model + size - 1000, 1000, size - 1000);
	/* and through a fresh handle of a fresh client */
	lode_disconnect(c);
	c = connect_or_fail();
	assert_int_equal(lode_open(c, "/sparse", O_RDONLY, 0, &f), 0);
	memset(got, 0xaa, size);
	assert_int_equal(lode_pread(f, got, size, 0), (ssize_t)size);
	assert_memory_equal(got, model, size);
	/* reads at odd offsets and lengths */
	for (int i = 0; i < 50; i++) {
		uint64_t off = ((uint64_t)i * 104729) % size;
		size_t n = (size_t)((i * 15485863ull) % (2 * MiB));
		ssize_t want = (ssize_t)(off + n > size ? size - off : n);

		assert_int_equal(lode_pread(f, got, n, off), want);
		assert_memory_equal(got, model + off, (size_t)want);
	}
	assert_int_equal(lode_close(f), 0);
	free(model);
	free(got);
	lode_disconnect(c);
}

static void test_truncate_shrinks_and_extends_with_zeros(void **state)
{
	struct lode_client *c = connect_or_fail();
	unsigned char *buf = malloc(3 * MiB);
	struct lode_stat st;
	struct lode_file *f;

	(void)state;
	cluster_write_file(c, "/trunc", 3 * MiB, 3, BUF, NULL);
	assert_int_equal(lode_truncate(c, "/trunc", MiB + 100), 0);
	assert_int_equal(lode_stat(c, "/trunc", &st), 0);
	assert_int_equal(st.size, MiB + 100);
	assert_int_equal(lode_truncate(c, "/trunc", 3 * MiB), 0);
	assert_int_equal(lode_open(c, "/trunc", O_RDONLY, 0, &f), 0);
	assert_int_equal(lode_pread(f, buf, 3 * MiB, 0), (ssize_t)(3 * MiB));
	assert_int_equal(pattern_check(buf, MiB + 100, 3, 0), -1);
	for (uint64_t i = MiB + 100; i < 3 * MiB; i++)
		if (buf[i])
			fail_msg("byte %llu after truncate-extend is %u, not 0",
				 (unsigned long long)i, buf[i]);
	assert_int_equal(lode_close(f), 0);
	/* O_TRUNC empties it */
	assert_int_equal(lode_open(c, "/trunc", O_WRONLY | O_TRUNC, 0, &f), 0);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_stat(c, "/trunc", &st), 0);
	assert_int_equal(st.size, 0);
	free(buf);
	lode_disconnect(c);
}

/* A read-only handle reads what the open found; lode_file_grow asks the MDS and reads on to
 * what was appended since (lode-fuse asks it before answering a READ short of the size it
 * gave the kernel). A write handle knows its size: no request, no change. */
static void test_a_reader_grows_to_what_was_appended_since_its_open(void **state)
{
	const uint64_t first = 100000, more = 50000;
	struct lode_client *c = connect_or_fail();
	unsigned char *buf = malloc(first + more + 4096);
	struct lode_file *r, *w;
	uint64_t size = 0;

	(void)state;
	assert_non_null(buf);
	cluster_write_file(c, "/grows", first, 9, BUF, NULL);
	assert_int_equal(lode_open(c, "/grows", O_RDONLY, 0, &r), 0);
	assert_int_equal(lode_file_grow(r, &size), 0);
	assert_int_equal(size, first); /* nothing appended yet */
	assert_int_equal(lode_open(c, "/grows", O_WRONLY, 0, &w), 0);
	pattern_fill(buf, more, 9, first);
	assert_int_equal(lode_pwrite(w, buf, more, first), (ssize_t)more);
	assert_int_equal(lode_file_grow(w, &size), 0);
	assert_int_equal(size, first + more); /* the writer's own size */
	assert_int_equal(lode_close(w), 0);
	/* the reader still has the open's view */
	assert_int_equal(lode_pread(r, buf, first + more + 4096, 0), (ssize_t)first);
	assert_int_equal(lode_file_size(r), first);
	assert_int_equal(lode_file_grow(r, &size), 0);
	assert_int_equal(size, first + more);
	assert_int_equal(lode_file_size(r), first + more);
	memset(buf, 0, first + more + 4096);
	assert_int_equal(lode_pread(r, buf, first + more + 4096, 0), (ssize_t)(first + more));
	assert_int_equal(pattern_check(buf, first + more, 9, 0), -1);
	assert_int_equal(lode_close(r), 0);
	free(buf);
	lode_disconnect(c);
}

struct worker_arg {
	int idx;
	int failed;
};

static void *client_worker(void *p)
{
	struct worker_arg *w = p;
	struct lode_client *c;
	struct lode_file *f;
	char path[64];
	char *buf = malloc(BUF);
	const uint64_t size = 256 * MiB;
	uint64_t seed = 100 + (uint64_t)w->idx;

	w->failed = 1;
	if (!buf || lode_connect(tc.mds, NULL, &c))
		return NULL;
	snprintf(path, sizeof(path), "/client%d", w->idx);
	if (lode_open(c, path, O_WRONLY | O_CREAT | O_EXCL, 0644, &f))
		goto out;
	for (uint64_t off = 0; off < size; off += BUF) {
		pattern_fill(buf, BUF, seed, off);
		if (lode_pwrite(f, buf, BUF, off) != BUF)
			goto out;
	}
	if (lode_close(f))
		goto out;
	if (lode_open(c, path, O_RDONLY, 0, &f))
		goto out;
	for (uint64_t off = 0; off < size; off += BUF) {
		if (lode_pread(f, buf, BUF, off) != BUF ||
		    pattern_check(buf, BUF, seed, off) >= 0) {
			lode_close(f);
			goto out;
		}
	}
	if (lode_close(f))
		goto out;
	w->failed = 0;
out:
	lode_disconnect(c);
	free(buf);
	return NULL;
}

static void test_four_clients_at_once_each_read_back_their_own_256mib(void **state)
{
	pthread_t th[4];
	struct worker_arg args[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		args[i].idx = i;
		assert_int_equal(pthread_create(&th[i], NULL, client_worker, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		if (args[i].failed)
			fail_msg("client %d did not read back its own data", i);
	}
}

/* Reads [off, off + n) in one call and checks it against `seed`, except [hole_off, hole_off
 * + hole_len), which must hold `hole_seed`. */
static void read_check(struct lode_file *f, char *buf, uint64_t off, size_t n, uint64_t seed,
		       uint64_t hole_off, uint64_t hole_len, uint64_t hole_seed)
{
	assert_int_equal(lode_pread(f, buf, n, off), (ssize_t)n);
	for (uint64_t o = off; o < off + n;) {
		bool in = o >= hole_off && o < hole_off + hole_len;
		uint64_t end = in ? hole_off + hole_len : (o < hole_off ? hole_off : UINT64_MAX);
		size_t len = (size_t)((end < off + n ? end : off + n) - o);
		int64_t bad = pattern_check(buf + (o - off), len, in ? hole_seed : seed, o);

		if (bad >= 0)
			fail_msg("byte %llu differs", (unsigned long long)(o + (uint64_t)bad));
		o += len;
	}
}

/* A sequential reader of 1 MiB at a time is served from read-ahead, and still sees what
 * another handle of the same client wrote in the middle of the range read ahead. */
static void test_sequential_reads_are_read_ahead_and_see_this_clients_writes(void **state)
{
	struct lode_client *c = connect_or_fail();
	struct lode_file *r, *w;
	char *buf = malloc(MiB);
	uint64_t served;

	(void)state;
	assert_non_null(buf);
	cluster_write_file(c, "/ra", 24 * MiB, 41, BUF, NULL);
	assert_int_equal(lode_open(c, "/ra", O_RDONLY, 0, &r), 0);
	for (uint64_t off = 0; off < 8 * MiB; off += MiB)
		read_check(r, buf, off, MiB, 41, 0, 0, 0);
	served = lode_readahead_bytes(r);
	assert_true(served >= 4 * MiB); /* reads 4 to 7 at least came from read-ahead */
	/* [9, 10) MiB is read ahead by now; overwrite it through another handle */
	assert_int_equal(lode_open(c, "/ra", O_WRONLY, 0, &w), 0);
	pattern_fill(buf, MiB, 42, 9 * MiB);
	assert_int_equal(lode_pwrite(w, buf, MiB, 9 * MiB), (ssize_t)MiB);
	assert_int_equal(lode_close(w), 0);
	for (uint64_t off = 8 * MiB; off < 24 * MiB; off += MiB)
		read_check(r, buf, off, MiB, 41, 9 * MiB, MiB, 42);
	assert_true(lode_readahead_bytes(r) > served); /* and it went on reading ahead */
	/* reads elsewhere, of odd sizes and offsets, read what is there */
	for (int i = 0; i < 64; i++) {
		uint64_t off = ((uint64_t)i * 7919 * 4099) % (23 * MiB);
		size_t n = 1 + (size_t)(((uint64_t)i * 104729) % MiB);

		read_check(r, buf, off, n, 41, 9 * MiB, MiB, 42);
	}
	assert_int_equal(lode_close(r), 0);
	lode_disconnect(c);
	free(buf);
}

/* What a streamed read handed its callback, checked as it arrives. */
struct stream_log {
	char *buf;
	uint64_t off, len; /* the range asked for */
	uint64_t seen;	   /* bytes handed over */
	unsigned pieces;
	unsigned char *covered; /* per byte of the range: times handed over */
	pthread_t caller;
	uint64_t seed;
	const char *model;   /* the range's bytes (NULL: the pattern of seed) */
	unsigned stop_after; /* fail the stream after this many pieces (0: never) */
};

static int stream_piece(void *arg, uint64_t off, void *buf, size_t len)
{
	struct stream_log *lg = arg;

	/* on the caller's thread, inside the range, at its own place in the buffer, and
	 * already the right bytes when handed over */
	assert_true(pthread_equal(pthread_self(), lg->caller));
	assert_true(off >= lg->off && off + len <= lg->off + lg->len);
	assert_ptr_equal(buf, lg->buf + (off - lg->off));
	if (lg->model)
		assert_memory_equal(buf, lg->model + (off - lg->off), len);
	else
		assert_int_equal(pattern_check(buf, len, lg->seed, off), -1);
	for (size_t i = 0; i < len; i++)
		lg->covered[off - lg->off + i]++;
	lg->seen += len;
	if (++lg->pieces == lg->stop_after)
		return -ECANCELED;
	return 0;
}

static void stream_check(struct lode_file *f, uint64_t size, uint64_t off, uint64_t len,
			 uint64_t seed)
{
	uint64_t want = off >= size ? 0 : (off + len > size ? size - off : len);
	struct stream_log lg = {.off = off, .len = want, .caller = pthread_self(), .seed = seed};

	lg.buf = malloc(len ? len : 1);
	lg.covered = calloc(1, want ? want : 1);
	assert_non_null(lg.buf);
	assert_non_null(lg.covered);
	assert_int_equal(lode_read_stream(f, lg.buf, len, off, stream_piece, &lg), (ssize_t)want);
	assert_int_equal(lg.seen, want);
	for (uint64_t i = 0; i < want; i++)
		assert_int_equal(lg.covered[i], 1); /* every byte exactly once */
	free(lg.buf);
	free(lg.covered);
}

/* Holes (between writes, and past them: the file extended by truncate) streamed through a
 * handle whose layout is over a second old, when the stream checks for moved copies as it
 * goes: zeros, and each piece handed over once. (The OSS answers a hole inside an object's
 * size in full, so no piece here is short: this checks that the check costs holes
 * nothing, not the refresh, which test_reader_moved_copies.sh drives.) */
static void stream_holes_check(struct lode_client *c)
{
	struct lode_layout l = {.stripe_size = 1 << 20, .stripe_count = 3, .mirror_count = 2};
	const uint64_t written = 20 * MiB + 4096, size = written + 9 * MiB;
	char *model = calloc(1, size);
	struct stream_log lg = {.buf = malloc(size),
				.len = size,
				.covered = calloc(1, size),
				.caller = pthread_self(),
				.model = model};
	struct lode_file *f;

	assert_non_null(model);
	assert_non_null(lg.buf);
	assert_non_null(lg.covered);
	pattern_fill(model + 7 * MiB, 100, 5, 7 * MiB);
	pattern_fill(model + written - 4096, 4096, 6, written - 4096);
	assert_int_equal(lode_create_with_layout(c, "/holes", 0600, &l, &f), 0);
	assert_int_equal(lode_pwrite(f, model + 7 * MiB, 100, 7 * MiB), 100);
	assert_int_equal(lode_pwrite(f, model + written - 4096, 4096, written - 4096), 4096);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_truncate(c, "/holes", size), 0);
	assert_int_equal(lode_open(c, "/holes", O_RDONLY, 0, &f), 0);
	for (int round = 0; round < 2; round++) {
		usleep(1100 * 1000); /* past LODE_LAYOUT_RECHECK_MS */
		memset(lg.covered, 0, size);
		assert_int_equal(lode_read_stream(f, lg.buf, size, 0, stream_piece, &lg),
				 (ssize_t)size);
		for (uint64_t i = 0; i < size; i++)
			assert_int_equal(lg.covered[i], 1);
	}
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_unlink(c, "/holes"), 0);
	free(model);
	free(lg.buf);
	free(lg.covered);
}

static void test_a_streamed_read_hands_over_every_verified_piece_once(void **state)
{
	struct lode_client *c = connect_or_fail();
	struct lode_layout l = {.stripe_size = 1 << 20, .stripe_count = 3, .mirror_count = 2};
	const uint64_t size = 40 * MiB + 4321, seed = 99;
	char *data = malloc(size);
	struct lode_file *f;

	(void)state;
	assert_non_null(data);
	pattern_fill(data, size, seed, 0);
	assert_int_equal(lode_create_with_layout(c, "/stream", 0600, &l, &f), 0);
	assert_int_equal(lode_pwrite(f, data, size, 0), (ssize_t)size);
	assert_int_equal(lode_close(f), 0);
	free(data);

	assert_int_equal(lode_open(c, "/stream", O_RDONLY, 0, &f), 0);
	stream_check(f, size, 0, size, seed);		  /* the whole file */
	stream_check(f, size, 12345, 17 * MiB + 3, seed); /* unaligned both ends */
	stream_check(f, size, size - 100, MiB, seed);	  /* short at the end */
	stream_check(f, size, size + 5, MiB, seed);	  /* past the end: 0 */

	/* a consumer that fails stops the stream with its error, and nothing is left in
	 * flight: the buffer can be freed at once */
	struct stream_log lg = {
	    .len = size, .caller = pthread_self(), .seed = seed, .stop_after = 3};
	lg.buf = malloc(size);
	lg.covered = calloc(1, size);
	assert_int_equal(lode_read_stream(f, lg.buf, size, 0, stream_piece, &lg), -ECANCELED);
	assert_int_equal(lg.pieces, 3);
	free(lg.buf);
	free(lg.covered);
	assert_int_equal(lode_read_stream(f, NULL, 10, 0, stream_piece, &lg), -EINVAL);
	assert_int_equal(lode_close(f), 0);

	/* a write-only handle cannot stream */
	assert_int_equal(lode_open(c, "/stream", O_WRONLY, 0, &f), 0);
	char one;
	assert_int_equal(lode_read_stream(f, &one, 1, 0, stream_piece, &lg), -EBADF);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_unlink(c, "/stream"), 0);
	stream_holes_check(c);
	lode_disconnect(c);
}

static void test_lodectl_put_and_get_round_trip_a_file(void **state)
{
	char local[300], back[300], args[1024];
	char *buf = malloc(9 * MiB + 7), *got = malloc(9 * MiB + 7);
	FILE *f;

	(void)state;
	snprintf(local, sizeof(local), "%s/put-src", tc.dir);
	snprintf(back, sizeof(back), "%s/get-dst", tc.dir);
	pattern_fill(buf, 9 * MiB + 7, 9, 0);
	f = fopen(local, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, 9 * MiB + 7, f), 9 * MiB + 7);
	fclose(f);
	snprintf(args, sizeof(args), "put %s /via-cli --stripe-size 256K --stripe-count 2", local);
	assert_int_equal(cluster_lodectl(&tc, args), 0);
	snprintf(args, sizeof(args), "get /via-cli %s", back);
	assert_int_equal(cluster_lodectl(&tc, args), 0);
	f = fopen(back, "r");
	assert_non_null(f);
	assert_int_equal(fread(got, 1, 9 * MiB + 7, f), 9 * MiB + 7);
	fclose(f);
	assert_memory_equal(got, buf, 9 * MiB + 7);
	assert_int_equal(cluster_lodectl(&tc, "stat /via-cli >/dev/null"), 0);
	assert_int_equal(cluster_lodectl(&tc, "status >/dev/null"), 0);
	assert_int_not_equal(cluster_lodectl(&tc, "get /no-such-file /dev/null 2>/dev/null"), 0);
	free(buf);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_1gib_file_reads_back_byte_exact_and_is_striped_over_every_oss),
	    cmocka_unit_test(test_unaligned_and_sparse_writes_read_back_like_a_local_file),
	    cmocka_unit_test(test_truncate_shrinks_and_extends_with_zeros),
	    cmocka_unit_test(test_a_reader_grows_to_what_was_appended_since_its_open),
	    cmocka_unit_test(test_four_clients_at_once_each_read_back_their_own_256mib),
	    cmocka_unit_test(test_sequential_reads_are_read_ahead_and_see_this_clients_writes),
	    cmocka_unit_test(test_a_streamed_read_hands_over_every_verified_piece_once),
	    cmocka_unit_test(test_lodectl_put_and_get_round_trip_a_file),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
