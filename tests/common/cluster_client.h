/* SPDX-License-Identifier: MIT */
/*
 * Test fixture: liblode clients of a local cluster (cluster.h), and whole files of pattern
 * bytes (pattern.h) written through them and checked byte by byte. Every helper fails the
 * test (a cmocka assertion) rather than returning an error.
 */
#ifndef LODE_TESTS_CLUSTER_CLIENT_H
#define LODE_TESTS_CLUSTER_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "lode/lode.h"

/* cmocka fixtures of a test that has a cluster of its own, for
 * cmocka_unit_test_prestate_setup_teardown() with the test's struct test_cluster as the
 * initial state: 3 OSS whose deleted files' objects are reclaimed after 1 s (lodectl local
 * up --orphan-grace 1), stopped and removed after the test. */
int cluster_test_up(void **state);
int cluster_test_down(void **state);

/* A client of tc's MDS whose calls time out after timeout_ms, with this process's uid and
 * gid. */
struct lode_client *cluster_client(const struct test_cluster *tc, unsigned timeout_ms);

/* Waits until the MDS counts at least want targets up (a restarted OSS is up once its
 * heartbeat arrives); fails the test after 30 s. */
void cluster_wait_targets_up(struct lode_client *c, int want);

/* Creates or truncates path and writes size bytes of pattern `seed` in writes of `piece`
 * bytes, fsyncs and closes it. With layout, the file's layout is stored there. */
void cluster_write_file(struct lode_client *c, const char *path, uint64_t size, uint64_t seed,
			size_t piece, struct lode_layout *layout);

/* Checks that path holds exactly size bytes of pattern `seed` (by stat and by the open
 * file), reading it in reads of `piece` bytes, the last one asking past the end, and that a
 * read at the end returns 0. Returns the bytes verified (size). */
uint64_t cluster_check_file(struct lode_client *c, const char *path, uint64_t size, uint64_t seed,
			    size_t piece);

#endif
