/* SPDX-License-Identifier: MIT */
/*
 * The OSS's link to the MDS, on its own thread: registers this target (HELLO, then
 * TARGET_REGISTER with the uuid from DATA/oss.uuid), sends a TARGET_HEARTBEAT every
 * second, re-registers when the MDS forgets the target or the connection is lost, and
 * every few seconds removes the orphan objects the MDS lists (ORPHAN_LIST, ORPHAN_DONE).
 * While the MDS is unreachable the OSS keeps serving data; the link keeps retrying and
 * logs once per change of state.
 */
#ifndef LODE_OSS_MDS_LINK_H
#define LODE_OSS_MDS_LINK_H

#include <stdint.h>

#include "handlers.h"
#include "objstore.h"

struct lode_mds_link;

struct lode_mds_link_opts {
	const char *mds_addr;  /* "tcp://HOST:PORT" */
	const char *advertise; /* the address clients use to reach this OSS */
	const char *data_dir;  /* for statvfs capacity */
	const uint8_t *uuid;   /* 16 bytes, this target's identity */
	struct lode_objstore *st;
	struct lode_oss *oss; /* gets cluster_id and target_id once registered */
	/* 0, or the capacity this target declares (lode-oss --capacity): it then reports
	 * min(declared, its file system's) as its size and its objects' bytes as used, so
	 * several targets sharing one disk look like targets of their own size */
	uint64_t capacity;
	/* Bytes of the file system kept free (lode-oss --reserve), or
	 * LODE_OSS_RESERVE_DEFAULT. The target reports its free space less the reserve, so
	 * the MDS stops placing new files and moved copies on it while writes to the files
	 * it holds can still complete, and the OSS's own files (checksums, directories) have
	 * room. */
	uint64_t reserve;
};

/* The default reserve: 1% of the file system, at most 1 GiB. */
#define LODE_OSS_RESERVE_DEFAULT     UINT64_MAX
#define LODE_OSS_RESERVE_MAX_DEFAULT (1ull << 30)

/* Starts the link thread (strings and uuid are copied). Returns 0 or -errno (-EINVAL for
 * a bad MDS address or an advertised address over LODE_ADDR_MAX). */
int lode_mds_link_start(struct lode_mds_link **out, const struct lode_mds_link_opts *opts);
/* Stops the thread (within about one rpc timeout) and frees the link. NULL is accepted. */
void lode_mds_link_stop(struct lode_mds_link *link);

/* Reads this target's uuid from data_dir/oss.uuid, creating the file with a random one
 * (atomically and durably) at first start. Returns 0 or -errno (-EINVAL if malformed). */
int lode_oss_uuid_load(const char *data_dir, uint8_t uuid[16]);

#endif
