/* SPDX-License-Identifier: MIT */
/* `lodectl local`: a whole cluster (one MDS, N OSS) on loopback with its data in one dir. */
#ifndef LODE_TOOLS_LOCAL_CLUSTER_H
#define LODE_TOOLS_LOCAL_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

/* Each returns 0 or a negative errno with a one-line reason in err. */

/* Starts what is not running of the cluster in dir (noss OSS; 0: dir's count, else 3;
 * grace: the MDS's --orphan-grace, NULL: dir's; capacity: what each OSS started declares,
 * NULL: what each declared before, else its file system's) and waits until every OSS is registered;
 * writes the MDS address into mds_addr and the cluster's key file (DIR/cluster.key, made at
 * the first start) into key, or "" for a cluster first started with insecure (then it
 * checks no key, and DIR remembers that). */
int local_up(const char *dir, int noss, const char *grace, bool insecure, const char *capacity,
	     char *mds_addr, size_t mds_len, char *key, size_t key_len, char *err, size_t errlen);
/* Starts one more OSS for the running cluster in dir, as DIR/ossN (N: the OSS counted so far,
 * written to *index) declaring capacity (lode-oss --capacity; NULL: its file system's), and
 * waits until the MDS sees it up; its address goes into addr. */
int local_add_oss(const char *dir, const char *capacity, char *addr, size_t addr_len, int *index,
		  char *err, size_t errlen);
/* Stops every daemon of the cluster in dir. */
int local_down(const char *dir, char *err, size_t errlen);
/* Sends sig to the daemon name ("mds", "oss0", ...) of the cluster in dir and waits for it
 * to exit; -ESRCH when it is not running. */
int local_kill(const char *dir, const char *name, int sig, char *err, size_t errlen);

#endif
