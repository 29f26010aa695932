/* SPDX-License-Identifier: MIT */
/*
 * Chained replication on a real cluster: the client sends each piece to the first copy
 * only, and the OSS pass it along the chain. Files here have three copies of one stripe on
 * the three OSS in a known order (targets 1 -> 2 -> 3), so that every position in the chain
 * (head, middle, tail) can be killed on purpose, and each copy can be read on its own by
 * killing the other two OSS. Every test checks that no acknowledged byte is wrong and that
 * a copy that missed data is marked degraded at the MDS before the write returned.
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

static struct lode_client *connect_mode(int mode)
{
	struct lode_client *c = cluster_client(&tc, 3000);

	assert_int_equal(lode_set_replication(c, mode), 0);
	assert_int_equal(lode_replication(c), mode);
	return c;
}

/* One stripe, three copies: on target 1 (the head), 2, then 3. */
static struct lode_file *create_3copies(struct lode_client *c, const char *path)
{
	struct lode_layout l = {
	    .stripe_size = 1 << 20, .stripe_count = 1, .mirror_count = 3, .targets = {1, 2, 3}};
	struct lode_file *f = NULL;

	assert_int_equal(lode_create_with_layout(c, path, 0644, &l, &f), 0);
	return f;
}

/* Writes size bytes of pattern `seed` in 4 MiB calls; returns the first error or 0. */
static int write_pattern(struct lode_file *f, uint64_t size, uint64_t seed)
{
	char *buf = malloc(4 * MiB);
	int rc = 0;

	assert_non_null(buf);
	for (uint64_t off = 0; off < size && !rc; off += 4 * MiB) {
		size_t n = size - off < 4 * MiB ? (size_t)(size - off) : 4 * MiB;
		ssize_t w;

		pattern_fill(buf, n, seed, off);
		w = lode_pwrite(f, buf, n, off);
		if (w != (ssize_t)n)
			rc = w < 0 ? (int)w : -EIO;
	}
	free(buf);
	return rc;
}

/* Reads the whole file with a fresh client and checks every byte; returns the bytes. */
static uint64_t check_file(const char *path, uint64_t size, uint64_t seed)
{
	struct lode_client *c = connect_mode(LODE_REPLICATION_FANOUT);
	uint64_t n = cluster_check_file(c, path, size, seed, 4 * MiB);

	lode_disconnect(c);
	return n;
}

/* Reads the file from the copy on target `keep` alone: the other OSS are killed for the
 * read and restarted after it. */
static uint64_t check_copy(uint32_t keep, const char *path, uint64_t size, uint64_t seed)
{
	uint64_t n;

	for (uint32_t t = 1; t <= 3; t++) {
		char name[16];

		snprintf(name, sizeof(name), "oss%u", t - 1);
		if (t != keep)
			assert_int_equal(cluster_kill(&tc, name, 1), 0);
	}
	n = check_file(path, size, seed);
	assert_int_equal(cluster_restart(&tc), 0);
	printf("verified %" PRIu64 " bytes from the copy on target %u alone\n", n, keep);
	return n;
}

/* The degraded-copy mask as the MDS has it. */
static uint64_t degraded_mask(struct lode_client *c, const char *path)
{
	struct lode_layout l;
	uint64_t d;

	assert_int_equal(lode_layout_info(c, path, &l, &d), 0);
	return d;
}

/* Opens a 3-copy file and writes one piece, so that the client knows the targets (and
 * believes them up) before the test kills one: the chain, not the client, meets the
 * dead OSS. */
static struct lode_file *prepare(struct lode_client *c, const char *path, uint64_t seed)
{
	struct lode_file *f = create_3copies(c, path);

	assert_int_equal(write_pattern(f, MiB, seed), 0);
	return f;
}

static void test_chained_writes_reach_every_copy_byte_exact(void **state)
{
	const uint64_t size = 48 * MiB + 12345; /* an unaligned tail: a read-modify-write */
	struct lode_client *c = connect_mode(LODE_REPLICATION_CHAIN);
	struct lode_file *f = create_3copies(c, "/three");

	(void)state;
	assert_int_equal(write_pattern(f, size, 81), 0);
	/* overwrite a range in the middle, unaligned on both ends */
	{
		char *buf = malloc(3 * MiB);

		assert_non_null(buf);
		pattern_fill(buf, 3 * MiB, 81, 5 * MiB + 777);
		assert_int_equal(lode_pwrite(f, buf, 3 * MiB, 5 * MiB + 777), (ssize_t)(3 * MiB));
		free(buf);
	}
	assert_int_equal(lode_fsync(f), 0);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(degraded_mask(c, "/three"), 0);
	for (uint32_t t = 1; t <= 3; t++)
		check_copy(t, "/three", size, 81);

	/* two copies striped over three OSS, the usual layout: no copy missed anything */
	{
		struct lode_layout l = {
		    .stripe_size = 1 << 20, .stripe_count = 3, .mirror_count = 2};

		assert_int_equal(lode_create_with_layout(c, "/two", 0644, &l, &f), 0);
		assert_int_equal(write_pattern(f, 64 * MiB, 82), 0);
		assert_int_equal(lode_fsync(f), 0);
		assert_int_equal(lode_close(f), 0);
		assert_int_equal(degraded_mask(c, "/two"), 0);
		printf("verified %" PRIu64 " bytes of a 2-copy file\n",
		       check_file("/two", 64 * MiB, 82));
	}
	lode_disconnect(c);
}

/* Kills target `dead` under a chained write of a 3-copy file: the write and the fsync
 * succeed, exactly that copy is degraded, and each other copy holds every byte. */
static void dead_copy_is_marked(uint32_t dead, const char *path, uint64_t seed)
{
	const uint64_t size = 32 * MiB;
	struct lode_client *c = connect_mode(LODE_REPLICATION_CHAIN);
	struct lode_file *f = prepare(c, path, seed);
	char name[16];

	snprintf(name, sizeof(name), "oss%u", dead - 1);
	assert_int_equal(cluster_kill(&tc, name, 1), 0);
	assert_int_equal(write_pattern(f, size, seed), 0);
	assert_int_equal(lode_fsync(f), 0);
	assert_int_equal(lode_close(f), 0);
	/* recorded at the MDS, for every reader: copy index dead - 1 of stripe 0 */
	assert_int_equal(degraded_mask(c, path), 1ull << (dead - 1));
	assert_int_equal(cluster_restart(&tc), 0);
	for (uint32_t t = 1; t <= 3; t++)
		if (t != dead)
			check_copy(t, path, size, seed);
	lode_disconnect(c);
}

static void test_a_dead_tail_is_marked_degraded_and_the_others_hold_every_byte(void **state)
{
	(void)state;
	dead_copy_is_marked(3, "/dead-tail", 91);
}

static void test_a_dead_middle_is_marked_degraded_and_the_tail_still_gets_the_data(void **state)
{
	(void)state;
	dead_copy_is_marked(2, "/dead-middle", 92);
}

static void test_a_dead_head_fails_over_to_the_next_copy(void **state)
{
	(void)state;
	dead_copy_is_marked(1, "/dead-head", 93);
}

static void test_only_the_head_left_succeeds_degraded_and_no_copy_left_fails(void **state)
{
	struct lode_client *c = connect_mode(LODE_REPLICATION_CHAIN);
	struct lode_file *f = prepare(c, "/alone", 94);
	char *buf = malloc(MiB);

	(void)state;
	assert_non_null(buf);
	assert_int_equal(cluster_kill(&tc, "oss1", 1), 0);
	assert_int_equal(cluster_kill(&tc, "oss2", 1), 0);
	assert_int_equal(write_pattern(f, 8 * MiB, 94), 0);
	assert_int_equal(lode_fsync(f), 0);
	assert_int_equal(degraded_mask(c, "/alone"), 6);
	/* the last copy goes too: the write must fail, never succeed */
	assert_int_equal(cluster_kill(&tc, "oss0", 1), 0);
	pattern_fill(buf, MiB, 95, 0);
	assert_true(lode_pwrite(f, buf, MiB, 0) < 0);
	lode_close(f);
	/* and that copy, holding every acknowledged byte, is not marked degraded for it */
	assert_int_equal(degraded_mask(c, "/alone"), 6);
	assert_int_equal(cluster_restart(&tc), 0);
	/* what was acknowledged is intact on the copy that took it */
	printf("verified %" PRIu64 " bytes\n", check_file("/alone", 8 * MiB, 94));
	free(buf);
	lode_disconnect(c);
}

struct writer {
	struct lode_client *c;
	struct lode_file *f;
	uint64_t size;
	volatile int progress; /* MiB acknowledged */
	int rc;
};

static void *write_all(void *arg)
{
	struct writer *w = arg;
	char *buf = malloc(4 * MiB);

	w->rc = -ENOMEM;
	if (!buf)
		return NULL;
	w->rc = 0;
	for (uint64_t off = 0; off < w->size && !w->rc; off += 4 * MiB) {
		ssize_t n;

		pattern_fill(buf, 4 * MiB, 96, off);
		n = lode_pwrite(w->f, buf, 4 * MiB, off);
		if (n != (ssize_t)(4 * MiB))
			w->rc = n < 0 ? (int)n : -EIO;
		else
			w->progress = (int)((off + 4 * MiB) / MiB);
	}
	if (!w->rc)
		w->rc = lode_fsync(w->f);
	free(buf);
	return NULL;
}

static void test_kill_9_of_the_head_during_a_chained_write_never_gives_wrong_bytes(void **state)
{
	const uint64_t size = 256 * MiB;
	struct lode_client *c = connect_mode(LODE_REPLICATION_CHAIN);
	struct writer w = {.c = c, .size = size};
	pthread_t th;
	int rc;

	(void)state;
	w.f = create_3copies(c, "/head-killed");
	assert_int_equal(pthread_create(&th, NULL, write_all, &w), 0);
	while (w.progress < 64 && !w.rc)
		usleep(2000);
	assert_int_equal(cluster_kill(&tc, "oss0", 1), 0);
	pthread_join(th, NULL);
	rc = lode_close(w.f);
	if (w.rc || rc) {
		/* allowed: an error. Not allowed: success with wrong bytes (checked below) */
		printf("writer saw an error (write %d, close %d)\n", w.rc, rc);
	} else {
		assert_true(degraded_mask(c, "/head-killed") & 1);
		/* the head is still dead: every byte reads back from the other copies */
		printf("verified %" PRIu64 " bytes written across the kill of the head\n",
		       check_file("/head-killed", size, 96));
	}
	assert_int_equal(cluster_restart(&tc), 0);
	lode_disconnect(c);
}

static void test_replication_mode_names_and_setter(void **state)
{
	struct lode_client *c = connect_mode(LODE_REPLICATION_CHAIN);

	(void)state;
	assert_int_equal(lode_replication_from_name("chain"), LODE_REPLICATION_CHAIN);
	assert_int_equal(lode_replication_from_name("fanout"), LODE_REPLICATION_FANOUT);
	assert_int_equal(lode_replication_from_name("default"), LODE_REPLICATION_DEFAULT);
	assert_int_equal(lode_replication_from_name("ring"), -EINVAL);
	assert_string_equal(lode_replication_name(LODE_REPLICATION_CHAIN), "chain");
	assert_int_equal(lode_set_replication(c, 7), -EINVAL);
	assert_int_equal(lode_replication(c), LODE_REPLICATION_CHAIN);
	assert_int_equal(lode_set_replication(c, LODE_REPLICATION_DEFAULT), 0);
	assert_true(lode_replication(c) == LODE_REPLICATION_FANOUT ||
		    lode_replication(c) == LODE_REPLICATION_CHAIN);
	lode_disconnect(c);
}

int main(void)
{
	/* each test on a cluster of its own: 3 OSS, --orphan-grace 1 */
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_prestate_setup_teardown(fn, cluster_test_up, cluster_test_down, &tc)
	    T(test_replication_mode_names_and_setter),
	    T(test_chained_writes_reach_every_copy_byte_exact),
	    T(test_a_dead_tail_is_marked_degraded_and_the_others_hold_every_byte),
	    T(test_a_dead_middle_is_marked_degraded_and_the_tail_still_gets_the_data),
	    T(test_a_dead_head_fails_over_to_the_next_copy),
	    T(test_only_the_head_left_succeeds_degraded_and_no_copy_left_fails),
	    T(test_kill_9_of_the_head_during_a_chained_write_never_gives_wrong_bytes),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
