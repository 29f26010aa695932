/* SPDX-License-Identifier: MIT */
/*
 * Test fixture for the unit tests: a temporary directory, object ids, pattern buffers and
 * their chunk checksums, and an rpc client connected to a server on loopback. Helpers that
 * can fail a test do so with a cmocka assertion; the others return -errno.
 */
#ifndef LODE_TESTS_FIXTURE_H
#define LODE_TESTS_FIXTURE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pattern.h"
#include "rpc.h"
#include "wire_spec.h"

/* Makes a new directory /tmp/PREFIX-XXXXXX, its name into dir (size bytes). Returns 0 or
 * -errno (dir is then undefined). */
int fixture_tmpdir_make(char *dir, size_t size, const char *prefix);
/* Removes dir and everything below it, without following links. */
void fixture_tmpdir_remove(const char *dir);

/* Whether fd is open on a file whose path ends with suffix (for tests that make the calls
 * on one file fail). */
bool fixture_fd_named(int fd, const char *suffix);

/* Exits 77 (meson: SKIP), saying why, when this kernel does not let us create an io_uring
 * (seccomp, an old kernel): a test of code that needs one cannot run here. */
void fixture_skip_without_io_uring(void);

/* Waits until *count >= want or ms pass, reading *count under lock and sleeping on cond
 * (which whoever changes *count under lock broadcasts). Returns the last *count seen. */
unsigned fixture_wait_count(pthread_mutex_t *lock, pthread_cond_t *cond, const unsigned *count,
			    unsigned want, unsigned ms);

/* One TARGET_LIST record at buf, as the MDS sends it: struct lode_wire_target (target id,
 * state LODE_TARGET_*, 1 GiB total, 512 MiB free), the address, zeros to 8 bytes. buf
 * needs room for 48 + strlen(addr) + 7 bytes. Returns the record's length. */
size_t fixture_target_record(void *buf, uint32_t id, uint32_t state, const char *addr);

/* The object id (ino, generation, stripe), reserved zero. */
struct lode_wire_objid fixture_oid(uint64_t ino, uint64_t gen, uint32_t stripe);

/* len bytes of pattern `seed` (pattern_fill from offset 0), malloc'd: the caller frees it.
 * Fails the test when out of memory. */
char *fixture_pattern(size_t len, uint64_t seed);
/* The lode_chunk_sum of every LODE_CHUNK_SIZE chunk of data (the last one short when len
 * is not a multiple) into sums[ceil(len / LODE_CHUNK_SIZE)]. */
void fixture_chunk_sums(const void *data, size_t len, uint64_t *sums);

/* A new lode_rpc (calls time out after timeout_ms) with one connection to addr. Returns 0
 * or -errno; *rpc and *conn are written only on success (destroying *rpc closes *conn). */
int fixture_rpc_connect(const char *addr, unsigned timeout_ms, struct lode_rpc **rpc,
			struct lode_rpc_conn **conn);

#endif
