/* SPDX-License-Identifier: MIT */
/* Test fixture: a real local cluster (lodectl local up) in a temporary directory. */
#ifndef LODE_TESTS_CLUSTER_H
#define LODE_TESTS_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "pattern.h"

struct test_cluster {
	char dir[256];
	char mds[128];
	int noss;
};

/* Starts MDS + noss OSS under a new temporary directory. Returns 0 or -1 (and prints why). */
int cluster_up(struct test_cluster *tc, int noss);
/* The same with more `lodectl local up` options (e.g. "--orphan-grace 1"). */
int cluster_up_opts(struct test_cluster *tc, int noss, const char *opts);
/* Sets LODE_KEY_FILE to the cluster's key (DIR/cluster.key), as cluster_up does: for a
 * test that starts its cluster with its own `lodectl local up`. */
void cluster_use_key(const struct test_cluster *tc);
/* Restarts whatever is not running (after a kill), same ports. */
int cluster_restart(struct test_cluster *tc);
/* kill -9 (sig9 != 0) or SIGTERM of one daemon: "mds", "oss0", ... */
int cluster_kill(struct test_cluster *tc, const char *name, int sig9);
/* Stops everything and removes the directory. */
void cluster_down(struct test_cluster *tc);
/* Runs lodectl with the cluster's MDS; returns its exit status. */
int cluster_lodectl(struct test_cluster *tc, const char *args);

/* Mounts the cluster at mnt with `$LODE_FUSE --mds MDS mnt -f [-o opts]` in the background,
 * its output appended to log (NULL: the cluster's dir/fuse.log), and waits (at most 30 s)
 * until mnt is a mount point. Returns 0 and the daemon's pid in *pid, 77 when FUSE cannot
 * be used here (no /dev/fuse, no fusermount3, mounting not permitted; why is printed), or
 * -1 when lode-fuse failed (its log tail is printed). */
int cluster_mount(struct test_cluster *tc, const char *mnt, const char *opts, const char *log,
		  int *pid);
/* Unmounts mnt (fusermount3 -u, lazily if busy) and waits for the daemon pid (at most 20 s,
 * then SIGKILL). Returns 0, or -1 if the daemon had to be killed or exited non-zero. */
int cluster_unmount(const char *mnt, int pid);
/* 0 when this machine lets us mount FUSE; otherwise 77 with why written to why. */
int cluster_fuse_usable(char *why, size_t len);

#endif
