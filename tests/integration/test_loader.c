/* SPDX-License-Identifier: MIT */
/*
 * liblode-loader against a real local cluster (MDS + 3 OSS, two copies). The device
 * pipeline runs with its host stand-in ("staged"): small pinned buffers, reused many
 * times over, copies on two streams, and what lands must be the file byte for byte, from
 * any offset. Corrupt bytes on a copy are read from the other copy; corrupt bytes on
 * every copy fail the load with -EIO and never reach the destination.
 * test_loader_gpu.c runs the same with CUDA where there is a GPU.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster_client.h"
#include "lode/loader.h"

#define MiB (1ull << 20)

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

/* Loads [off, off + len) of path with l into fresh memory of the loader; checks it against
 * pattern seed (copied back to the host) and returns what lode_loader_read returned. */
static ssize_t load_check(struct lode_client *c, struct lode_loader *l, const char *path,
			  uint64_t off, size_t len, uint64_t seed, uint64_t size)
{
	size_t want = off >= size ? 0 : (size_t)(off + len > size ? size - off : len);
	char *host = malloc(len ? len : 1);
	struct lode_file *f;
	void *dst;
	ssize_t got;

	assert_non_null(host);
	assert_int_equal(lode_open(c, path, O_RDONLY, 0, &f), 0);
	assert_int_equal(lode_loader_alloc(l, len ? len : 1, &dst), 0);
	got = lode_loader_read(l, f, dst, len, off);
	if (got >= 0) {
		assert_int_equal(got, (ssize_t)want);
		assert_int_equal(lode_loader_to_host(l, host, dst, want), 0);
		assert_int_equal(pattern_check(host, want, seed, off), -1);
	}
	lode_loader_release(l, dst);
	assert_int_equal(lode_close(f), 0);
	free(host);
	return got;
}

static void test_the_staged_pipeline_loads_every_byte_through_reused_buffers(void **state)
{
	struct lode_client *c = cluster_client(&tc, 10000);
	/* 3 buffers of 2 MiB for 97 MiB: each reused ~16 times; copies start every 256 KiB */
	struct lode_loader_opts o = {.to = "staged",
				     .chunk_bytes = 2 * MiB,
				     .buffers = 3,
				     .streams = 2,
				     .copy_min = 256 * 1024};
	const uint64_t size = 97 * MiB + 777, seed = 5;
	struct lode_loader *l, *host;
	uint64_t bytes, copies;

	(void)state;
	cluster_write_file(c, "/model", size, seed, 8 * MiB, NULL);
	assert_int_equal(lode_loader_new(c, &o, &l), 0);
	assert_string_equal(lode_loader_target(l), "staged");
	assert_false(lode_loader_on_device(l));
	assert_int_equal(load_check(c, l, "/model", 0, size, seed, size), (ssize_t)size);
	lode_loader_counters(l, &bytes, &copies);
	assert_int_equal(bytes, size); /* every byte went through a pinned buffer */
	assert_true(copies >= size / (2 * MiB));
	/* odd offsets and lengths, and past the end */
	assert_int_equal(load_check(c, l, "/model", 12345, 9 * MiB + 3, seed, size),
			 (ssize_t)(9 * MiB + 3));
	assert_int_equal(load_check(c, l, "/model", size - 1000, 5 * MiB, seed, size), 1000);
	assert_int_equal(load_check(c, l, "/model", size + 1, 5 * MiB, seed, size), 0);
	lode_loader_free(l);

	/* straight into host memory, no copies */
	assert_int_equal(lode_loader_new(c, NULL, &host), 0);
	assert_string_equal(lode_loader_target(host), "host");
	assert_int_equal(load_check(c, host, "/model", 3, size, seed, size), (ssize_t)(size - 3));
	lode_loader_counters(host, &bytes, &copies);
	assert_int_equal(bytes, 0);
	lode_loader_free(host);
	lode_disconnect(c);
}

static void test_targets_it_does_not_know_are_refused(void **state)
{
	struct lode_client *c = cluster_client(&tc, 10000);
	struct lode_loader *l = NULL;
	const char *bad[] = {"gpu", "cuda:", "cuda:x", "cuda:-1", "hostx", "cuda0"};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct lode_loader_opts o = {.to = bad[i]};

		assert_int_equal(lode_loader_new(c, &o, &l), -EINVAL);
	}
	lode_disconnect(c);
}

/* The object file of the copy of stripe `stripe` of ino on OSS `oss`. */
static void object_path(int oss, uint64_t ino, unsigned stripe, char *out, size_t len)
{
	snprintf(out, len, "%s/oss%d/objects/%02x/%016" PRIx64 ".%016x.%08x", tc.dir, oss,
		 (unsigned)(ino % 256), ino, 1u, stripe);
}

static void scribble(int oss, uint64_t ino, unsigned stripe, off_t at)
{
	char path[512];
	int fd;

	object_path(oss, ino, stripe, path, sizeof(path));
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "garbage!", 8, at), 8);
	close(fd);
}

static void test_corrupt_bytes_never_reach_the_destination(void **state)
{
	struct lode_client *c = cluster_client(&tc, 10000);
	struct lode_loader_opts o = {.to = "staged", .chunk_bytes = 4 * MiB, .buffers = 2};
	const uint64_t size = 24 * MiB, seed = 9;
	struct lode_file *f;
	struct lode_loader *l;
	struct lode_layout lay;
	struct lode_stat st;
	uint64_t degraded;
	char *dst;

	(void)state;
	cluster_write_file(c, "/bad", size, seed, 8 * MiB, NULL);
	assert_int_equal(lode_stat(c, "/bad", &st), 0);
	assert_int_equal(lode_layout_info(c, "/bad", &lay, &degraded), 0);
	assert_true(lay.mirror_count >= 2);
	/* one copy of every stripe damaged: the load takes the other copies */
	for (unsigned s = 0; s < lay.stripe_count; s++)
		scribble((int)lay.targets[s * lay.mirror_count] - 1, st.ino, s, 100000);
	assert_int_equal(system("sync; echo 1 > /proc/sys/vm/drop_caches"), 0);
	assert_int_equal(lode_loader_new(c, &o, &l), 0);
	assert_int_equal(load_check(c, l, "/bad", 0, size, seed, size), (ssize_t)size);

	/* every copy of stripe 0 damaged at the same place: an error, and the bad bytes are
	 * not in the destination */
	for (unsigned m = 0; m < lay.mirror_count; m++)
		scribble((int)lay.targets[m] - 1, st.ino, 0, 200000);
	assert_int_equal(system("sync; echo 1 > /proc/sys/vm/drop_caches"), 0);
	assert_int_equal(lode_open(c, "/bad", O_RDONLY, 0, &f), 0);
	assert_int_equal(lode_loader_alloc(l, size, (void **)&dst), 0);
	memset(dst, 0, size);
	assert_int_equal(lode_loader_read(l, f, dst, size, 0), -EIO);
	assert_null(memmem(dst, size, "garbage!", 8));
	lode_loader_release(l, dst);
	assert_int_equal(lode_close(f), 0);
	lode_loader_free(l);
	lode_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_staged_pipeline_loads_every_byte_through_reused_buffers),
	    cmocka_unit_test(test_targets_it_does_not_know_are_refused),
	    cmocka_unit_test(test_corrupt_bytes_never_reach_the_destination),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
