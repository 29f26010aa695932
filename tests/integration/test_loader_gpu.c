/* SPDX-License-Identifier: MIT */
/*
 * liblode-loader into a real GPU: 1 GiB of a file on a local cluster (MDS + 3 OSS) loaded
 * into device memory through the pinned-buffer pipeline, copied back and checked byte by
 * byte, from offset 0 and from an odd offset. Exits 77 (skipped) where this build has no
 * CUDA or the machine has no GPU.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "cluster_client.h"
#include "lode/loader.h"

#define MiB (1ull << 20)

static struct test_cluster tc;

static void load_to_gpu_and_back(struct lode_client *c, struct lode_loader *l, uint64_t off,
				 uint64_t size, uint64_t seed)
{
	size_t len = (size_t)(size - off);
	char *host = malloc(len);
	struct lode_file *f;
	void *dev;

	assert_non_null(host);
	assert_int_equal(lode_open(c, "/gpu-model", O_RDONLY, 0, &f), 0);
	assert_int_equal(lode_loader_alloc(l, len, &dev), 0);
	assert_int_equal(lode_loader_read(l, f, dev, len, off), (ssize_t)len);
	assert_int_equal(lode_loader_to_host(l, host, dev, len), 0);
	assert_int_equal(pattern_check(host, len, seed, off), -1);
	lode_loader_release(l, dev);
	assert_int_equal(lode_close(f), 0);
	free(host);
}

static void test_a_file_loaded_into_the_gpu_reads_back_byte_exact(void **state)
{
	struct lode_client *c = cluster_client(&tc, 10000);
	struct lode_loader_opts o = {.to = "cuda:0"};
	const uint64_t size = 1024 * MiB + 4097, seed = 17;
	struct lode_loader *l;
	uint64_t bytes, copies;

	(void)state;
	cluster_write_file(c, "/gpu-model", size, seed, 8 * MiB, NULL);
	assert_int_equal(lode_loader_new(c, &o, &l), 0);
	assert_true(lode_loader_on_device(l));
	load_to_gpu_and_back(c, l, 0, size, seed);
	load_to_gpu_and_back(c, l, 12345, size, seed);
	lode_loader_counters(l, &bytes, &copies);
	assert_int_equal(bytes, 2 * size - 12345);
	printf("%llu bytes in %llu copies to the GPU\n", (unsigned long long)bytes,
	       (unsigned long long)copies);
	lode_loader_free(l);
	lode_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_file_loaded_into_the_gpu_reads_back_byte_exact),
	};
	struct lode_loader_opts o = {.to = "cuda:0"};
	struct lode_loader *l;
	int rc = lode_loader_new(NULL, &o, &l);

	if (rc) {
		printf("SKIP: no GPU to load into (cuda:0: %s)\n",
		       rc == -ENODEV ? "no CUDA device, or this build has no CUDA"
				     : "the loader could not start");
		return 77;
	}
	lode_loader_free(l);
	if (cluster_up(&tc, 3))
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	cluster_down(&tc);
	return rc;
}
