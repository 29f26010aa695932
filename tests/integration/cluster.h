/* SPDX-License-Identifier: MIT */
/* Test fixture: a real local cluster (lodectl local up) in a temporary directory. */
#ifndef LODE_TESTS_CLUSTER_H
#define LODE_TESTS_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

struct test_cluster {
	char dir[256];
	char mds[128];
	int noss;
};

/* Starts MDS + noss OSS under a new temporary directory. Returns 0 or -1 (and prints why). */
int cluster_up(struct test_cluster *tc, int noss);
/* The same with more `lodectl local up` options (e.g. "--orphan-grace 1"). */
int cluster_up_opts(struct test_cluster *tc, int noss, const char *opts);
/* Restarts whatever is not running (after a kill), same ports. */
int cluster_restart(struct test_cluster *tc);
/* kill -9 (sig9 != 0) or SIGTERM of one daemon: "mds", "oss0", ... */
int cluster_kill(struct test_cluster *tc, const char *name, int sig9);
/* Stops everything and removes the directory. */
void cluster_down(struct test_cluster *tc);
/* Runs lodectl with the cluster's MDS; returns its exit status. */
int cluster_lodectl(struct test_cluster *tc, const char *args);

/* Deterministic pseudo-random bytes: the same (seed, offset) always gives the same byte,
 * so tests can regenerate what they wrote instead of keeping it. */
void pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t offset);
/* Returns the offset of the first byte that differs from the pattern, or -1. */
int64_t pattern_check(const void *buf, size_t len, uint64_t seed, uint64_t offset);

#endif
