/* SPDX-License-Identifier: MIT */
/* Test fixture: clients of a local cluster and pattern files through them; see cluster_client.h. */
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster_client.h"

int cluster_test_up(void **state)
{
	return cluster_up_opts(*state, 3, "--orphan-grace 1");
}

int cluster_test_down(void **state)
{
	cluster_down(*state);
	return 0;
}

struct lode_client *cluster_client(const struct test_cluster *tc, unsigned timeout_ms)
{
	struct lode_client_opts o = {
	    .size = sizeof(o), .timeout_ms = timeout_ms, .use_process_creds = 1};
	struct lode_client *c = NULL;

	assert_int_equal(lode_connect(tc->mds, &o, &c), 0);
	return c;
}

void cluster_wait_targets_up(struct lode_client *c, int want)
{
	struct lode_target_info t[16];

	for (int waited_ms = 0;; waited_ms += 100) {
		int n = lode_targets(c, t, 16), up = 0;

		assert_true(n >= 0);
		for (int i = 0; i < n && i < 16; i++)
			up += t[i].up != 0;
		if (up >= want)
			return;
		if (waited_ms >= 30000)
			fail_msg("%d of %d targets up after 30 s, want %d", up, n, want);
		usleep(100 * 1000);
	}
}

void cluster_write_file(struct lode_client *c, const char *path, uint64_t size, uint64_t seed,
			size_t piece, struct lode_layout *layout)
{
	struct lode_file *f;
	char *buf = malloc(piece);

	assert_non_null(buf);
	assert_int_equal(lode_open(c, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, &f), 0);
	for (uint64_t off = 0; off < size; off += piece) {
		size_t n = size - off < piece ? (size_t)(size - off) : piece;

		pattern_fill(buf, n, seed, off);
		assert_int_equal(lode_pwrite(f, buf, n, off), (ssize_t)n);
	}
	assert_int_equal(lode_fsync(f), 0);
	if (layout)
		lode_file_layout(f, layout);
	assert_int_equal(lode_close(f), 0);
	free(buf);
}

uint64_t cluster_check_file(struct lode_client *c, const char *path, uint64_t size, uint64_t seed,
			    size_t piece)
{
	struct lode_file *f;
	struct lode_stat st;
	char *buf = malloc(piece);

	assert_non_null(buf);
	assert_int_equal(lode_stat(c, path, &st), 0);
	assert_int_equal(st.size, size);
	assert_int_equal(lode_open(c, path, O_RDONLY, 0, &f), 0);
	assert_int_equal(lode_file_size(f), size);
	for (uint64_t off = 0; off < size; off += piece) {
		size_t n = size - off < piece ? (size_t)(size - off) : piece;
		int64_t bad;

		assert_int_equal(lode_pread(f, buf, piece, off), (ssize_t)n);
		bad = pattern_check(buf, n, seed, off);
		if (bad >= 0)
			fail_msg("%s: byte %" PRIu64 " is wrong", path, off + (uint64_t)bad);
	}
	assert_int_equal(lode_pread(f, buf, piece, size), 0);
	assert_int_equal(lode_close(f), 0);
	free(buf);
	return size;
}
