/* SPDX-License-Identifier: MIT */
/* `lodectl local`: a whole cluster (one MDS, N OSS) on loopback with its data in one dir. */
#ifndef LODE_TOOLS_LOCAL_CLUSTER_H
#define LODE_TOOLS_LOCAL_CLUSTER_H

int local_main(int argc, char **argv);

#endif
