/* SPDX-License-Identifier: MIT */
/*
 * Test fixture: a whole lode-oss in this process (object store in a temporary directory,
 * the OSS request handlers on a lode_server on tcp://127.0.0.1:0) and a lode_rpc client
 * connected to it over loopback, as a client sees it on the wire; and the object store in a
 * temporary directory alone, for tests of the store itself or of its other users.
 */
#ifndef LODE_TESTS_OSS_FIXTURE_H
#define LODE_TESTS_OSS_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "handlers.h"
#include "objstore.h"
#include "rpc.h"
#include "server.h"

struct oss_fixture {
	char dir[64];
	struct lode_objstore *st;
	struct lode_oss oss;
	struct lode_server *srv;
	struct lode_rpc *rpc;
	struct lode_rpc_conn *conn;
};

/* A new object store in a new directory /tmp/PREFIX-XXXXXX, whose name goes into dir (size
 * bytes). Returns 0 or -errno (then nothing is left behind); *st is written only on success. */
int oss_fixture_store_open(char *dir, size_t size, const char *prefix, struct lode_objstore **st);
/* Closes st and removes dir with everything in it. */
void oss_fixture_store_close(const char *dir, struct lode_objstore *st);

/* Starts the OSS (2 worker threads) and connects the client. Returns the fixture (free it
 * with oss_fixture_free) or NULL, with nothing left behind. */
struct oss_fixture *oss_fixture_new(void);
/* Disconnects, stops the OSS and removes its directory. NULL is accepted. */
void oss_fixture_free(struct oss_fixture *f);

/* OBJ_WRITE over f->conn of len (<= LODE_DATA_MAX) bytes of data at off with their correct
 * chunk sums, the first one flipped if corrupt_sum. Returns the call's status. */
int oss_fixture_write(struct oss_fixture *f, struct lode_wire_objid id, uint64_t off,
		      const char *data, size_t len, int corrupt_sum);

/* Cached (or with dirty, dirty) pages of [off, off + len) of path, from cachestat(2); -1
 * where that cannot be told (a kernel before 6.5, or tmpfs, whose pages are never written
 * back or dropped). len 0: to the end. */
long oss_fixture_pages(const char *path, uint64_t off, uint64_t len, bool dirty);
/* Writes path's dirty pages back and has the kernel drop all of its pages (a failure fails
 * the test). Returns the pages still cached afterwards, -1 where that cannot be told. */
long oss_fixture_uncache(const char *path);

/* What an OBJ_READ reply said, decoded (and so checked) by the codec. */
struct oss_fixture_read_rep {
	uint64_t object_size;
	uint32_t nchunks;
	uint64_t sums[LODE_DATA_MAX / LODE_CHUNK_SIZE];
	uint64_t data_len; /* bytes received into the caller's buffer */
};

/* OBJ_READ over conn of up to len (<= LODE_DATA_MAX) bytes of id at off, the bytes into
 * data (len bytes). Returns the call's status; *rep is written only on success. */
int oss_fixture_read(struct lode_rpc_conn *conn, struct lode_wire_objid id, uint64_t off,
		     uint32_t len, void *data, struct oss_fixture_read_rep *rep);

#endif
