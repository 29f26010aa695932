/* SPDX-License-Identifier: MIT */
/*
 * The transport suite: what every transport must carry byte-exact, run against a real
 * local cluster. Natively it runs over TCP on loopback; tests/rdma runs the same binary
 * inside a soft-RoCE VM with LODE_LOCAL_LISTEN=rdma://IP, so the whole cluster (client to
 * MDS, client to OSS, OSS to MDS) talks RDMA.
 *
 * - put/get byte-exact at sizes around every boundary of the data path (inline data,
 *   one chunk, one stripe unit, the largest frame, striped over every OSS), from buffers
 *   the application registered for RDMA and from ones it did not;
 * - four clients at once, each writing and reading back its own file;
 * - kill -9 of an OSS in the middle of a read of a mirrored file: the read completes
 *   byte-exact from the surviving copies, nothing hangs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
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
#include "lode/lode.h"

#define MiB (1ull << 20)

static struct test_cluster tc;
static uint64_t verified_total;

static int setup(void **state)
{
	(void)state;
	return cluster_up(&tc, 3);
}

static int teardown(void **state)
{
	(void)state;
	cluster_down(&tc);
	printf("transport suite: %" PRIu64 " bytes verified in all\n", verified_total);
	return 0;
}

/* Writes size bytes of the pattern from buf in pieces of `piece`, then reads them back
 * into a zeroed buf and checks them. */
static void put_get(struct lode_client *c, const char *path, char *buf, uint64_t size, size_t piece,
		    uint64_t seed)
{
	struct lode_file *f;
	uint64_t off;
	int64_t bad;

	assert_int_equal(lode_open(c, path, O_RDWR | O_CREAT | O_TRUNC, 0644, &f), 0);
	pattern_fill(buf, (size_t)size, seed, 0);
	for (off = 0; off < size; off += piece) {
		size_t n = size - off < piece ? (size_t)(size - off) : piece;

		assert_int_equal(lode_pwrite(f, buf + off, n, off), (ssize_t)n);
	}
	assert_int_equal(lode_fsync(f), 0);
	memset(buf, 0, (size_t)size);
	for (off = 0; off < size; off += piece) {
		size_t n = size - off < piece ? (size_t)(size - off) : piece;

		assert_int_equal(lode_pread(f, buf + off, n, off), (ssize_t)n);
	}
	bad = pattern_check(buf, (size_t)size, seed, 0);
	if (bad >= 0)
		fail_msg("%s (%" PRIu64 " bytes): byte %" PRId64 " is wrong", path, size, bad);
	assert_int_equal(lode_close(f), 0);
	verified_total += size;
}

static void test_put_get_at_every_boundary_of_the_data_path(void **state)
{
	static const uint64_t sizes[] = {
	    0,	   1,	    4095,    4096,    4097,	   65535,	    65536,
	    65537, MiB - 1, MiB + 7, 4 * MiB, 4 * MiB + 1, 24 * MiB + 12345};
	const size_t max = 24 * MiB + 12345;
	struct lode_client *c = cluster_client(&tc, 20000);
	char *plain = malloc(max), *declared = malloc(max);
	char path[64];

	(void)state;
	assert_non_null(plain);
	assert_non_null(declared);
	assert_int_equal(lode_buffer_register(declared, max), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(path, sizeof(path), "/sizes-%zu", i);
		put_get(c, path, plain, sizes[i], 4 * MiB, i + 1);
		put_get(c, path, declared, sizes[i], 4 * MiB, i + 100);
		/* odd pieces: unaligned writes widened by read-modify-write */
		put_get(c, path, plain, sizes[i], 1000003, i + 200);
	}
	assert_int_equal(lode_buffer_unregister(declared), 0);
	assert_int_equal(lode_buffer_unregister(declared), -ENOENT);
	free(plain);
	free(declared);
	lode_disconnect(c);
}

struct job {
	int idx;
	uint64_t size;
	int failed;
};

static void *one_client(void *arg)
{
	struct job *j = arg;
	struct lode_client_opts o = {
	    .size = sizeof(o), .timeout_ms = 30000, .use_process_creds = 1};
	struct lode_client *c = NULL;
	struct lode_file *f;
	char path[64], *buf = malloc(j->size);

	j->failed = 1;
	snprintf(path, sizeof(path), "/client-%d", j->idx);
	if (!buf || lode_connect(tc.mds, &o, &c))
		goto out;
	pattern_fill(buf, j->size, 1000 + (uint64_t)j->idx, 0);
	if (lode_open(c, path, O_RDWR | O_CREAT | O_TRUNC, 0644, &f))
		goto out;
	if (lode_pwrite(f, buf, j->size, 0) != (ssize_t)j->size || lode_fsync(f)) {
		lode_close(f);
		goto out;
	}
	memset(buf, 0, j->size);
	if (lode_pread(f, buf, j->size, 0) != (ssize_t)j->size ||
	    pattern_check(buf, j->size, 1000 + (uint64_t)j->idx, 0) >= 0) {
		lode_close(f);
		goto out;
	}
	j->failed = lode_close(f) != 0;
out:
	if (c)
		lode_disconnect(c);
	free(buf);
	return NULL;
}

static void test_four_clients_at_once_each_get_their_own_bytes_back(void **state)
{
	struct job jobs[4];
	pthread_t th[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		jobs[i] = (struct job){.idx = i, .size = 16 * MiB + (uint64_t)i * 4099};
		assert_int_equal(pthread_create(&th[i], NULL, one_client, &jobs[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_false(jobs[i].failed);
		verified_total += jobs[i].size;
	}
}

struct reader {
	struct lode_client *c;
	uint64_t size;
	volatile uint64_t done;
	int failed;
};

static void *read_all(void *arg)
{
	struct reader *r = arg;
	struct lode_file *f;
	char *buf = malloc(MiB);

	r->failed = 1;
	if (!buf || lode_open(r->c, "/mirrored", O_RDONLY, 0, &f)) {
		free(buf);
		return NULL;
	}
	for (uint64_t off = 0; off < r->size; off += MiB) {
		if (lode_pread(f, buf, MiB, off) != (ssize_t)MiB ||
		    pattern_check(buf, MiB, 77, off) >= 0) {
			fprintf(stderr, "reader: bad read at %" PRIu64 "\n", off);
			lode_close(f);
			free(buf);
			return NULL;
		}
		r->done = off + MiB;
	}
	lode_close(f);
	free(buf);
	r->failed = 0;
	return NULL;
}

static void test_kill_9_of_an_oss_during_a_read_loses_nothing(void **state)
{
	const uint64_t size = 96 * MiB;
	struct lode_client *w = cluster_client(&tc, 60000); /* soft-RoCE under emulation is slow */
	struct lode_client *c = cluster_client(&tc, 10000);
	struct reader r = {.c = c, .size = size};
	struct lode_file *f;
	struct lode_layout l;
	uint64_t degraded;
	char *buf = malloc(size);
	pthread_t th;

	(void)state;
	assert_non_null(buf);
	pattern_fill(buf, size, 77, 0);
	assert_int_equal(lode_open(w, "/mirrored", O_WRONLY | O_CREAT | O_TRUNC, 0644, &f), 0);
	assert_int_equal(lode_pwrite(f, buf, size, 0), (ssize_t)size);
	assert_int_equal(lode_close(f), 0);
	free(buf);
	lode_disconnect(w);
	assert_int_equal(lode_layout_info(c, "/mirrored", &l, &degraded), 0);
	assert_int_equal(l.mirror_count, 2);

	assert_int_equal(pthread_create(&th, NULL, read_all, &r), 0);
	while (r.done < 16 * MiB && !r.failed)
		usleep(10000);
	assert_int_equal(cluster_kill(&tc, "oss1", 1), 0);
	pthread_join(th, NULL);
	assert_false(r.failed);
	assert_int_equal(r.done, size);
	verified_total += size;
	printf("verified %" PRIu64 " bytes read across the kill of oss1\n", size);
	assert_int_equal(cluster_restart(&tc), 0);
	lode_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_put_get_at_every_boundary_of_the_data_path),
	    cmocka_unit_test(test_four_clients_at_once_each_get_their_own_bytes_back),
	    cmocka_unit_test(test_kill_9_of_an_oss_during_a_read_loses_nothing),
	};

	printf("transport: %s\n",
	       getenv("LODE_LOCAL_LISTEN") ? getenv("LODE_LOCAL_LISTEN") : "tcp://127.0.0.1");
	return cmocka_run_group_tests(tests, setup, teardown);
}
