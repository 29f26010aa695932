/* SPDX-License-Identifier: MIT */
/*
 * The OSS's zero-copy read path, end to end in this process: OBJ_READ replies of more than
 * LODE_OBJ_READ_COPY_MAX bytes carry the object's bytes by splice (file -> the connection's
 * pipe -> socket, as io_uring SQEs) and never through a buffer; smaller ones by a copy. An
 * object written with known bytes and checksums is read back over a real loopback TCP
 * connection by the rpc client, and every byte and checksum received is compared with what
 * was written: a read of LODE_DATA_MAX, a multi-chunk read at a non-zero offset, a read that
 * ends at the object's end with a short last chunk, and small reads.
 *
 * Which path is taken is observed at link time (-Wl,--wrap): a spliced read is answered with
 * lode_req_reply_file (the file's descriptor, offset and length are recorded here), never
 * with bytes in lode_req_reply, and a copied one the other way round; the transport makes one
 * pipe per connection (pipe2) on its first file reply; and every descriptor handed out for a
 * send is released.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "codec.h"
#include "fixture.h"
#include "oss_fixture.h"

#define CHUNK ((size_t)LODE_CHUNK_SIZE)
#define SEED  7
/* more than one full read, ending 1234 bytes into a chunk */
#define OBJ_SIZE ((size_t)LODE_DATA_MAX + 2 * CHUNK + 1234)

/* ---- what the process did, seen through --wrap ---- */

static atomic_uint file_replies;  /* lode_req_reply_file calls */
static atomic_uint data_replies;  /* lode_req_reply calls with bytes in memory */
static atomic_uint fds_released;  /* lode_objstore_fd_release calls */
static atomic_uint pipes_made;	  /* pipe2 calls (the transport's per-connection pipes) */
static _Atomic uint64_t last_off; /* the last file reply's offset and length */
static _Atomic uint32_t last_len;

void __real_lode_req_reply_file(struct lode_req *req, const void *body, size_t body_len, int fd,
				uint64_t off, uint32_t len, void (*release)(void *arg), void *arg);
void __wrap_lode_req_reply_file(struct lode_req *req, const void *body, size_t body_len, int fd,
				uint64_t off, uint32_t len, void (*release)(void *arg), void *arg);
void __real_lode_req_reply(struct lode_req *req, int status, const void *body, size_t body_len,
			   void *data, size_t data_len, void (*data_free)(void *));
void __wrap_lode_req_reply(struct lode_req *req, int status, const void *body, size_t body_len,
			   void *data, size_t data_len, void (*data_free)(void *));
void __real_lode_objstore_fd_release(void *fd_ref);
void __wrap_lode_objstore_fd_release(void *fd_ref);
int __real_pipe2(int fds[2], int flags);
int __wrap_pipe2(int fds[2], int flags);

void __wrap_lode_req_reply_file(struct lode_req *req, const void *body, size_t body_len, int fd,
				uint64_t off, uint32_t len, void (*release)(void *arg), void *arg)
{
	atomic_store(&last_off, off);
	atomic_store(&last_len, len);
	atomic_fetch_add(&file_replies, 1);
	__real_lode_req_reply_file(req, body, body_len, fd, off, len, release, arg);
}

void __wrap_lode_req_reply(struct lode_req *req, int status, const void *body, size_t body_len,
			   void *data, size_t data_len, void (*data_free)(void *))
{
	if (data_len)
		atomic_fetch_add(&data_replies, 1);
	__real_lode_req_reply(req, status, body, body_len, data, data_len, data_free);
}

void __wrap_lode_objstore_fd_release(void *fd_ref)
{
	__real_lode_objstore_fd_release(fd_ref);
	atomic_fetch_add(&fds_released, 1);
}

int __wrap_pipe2(int fds[2], int flags)
{
	atomic_fetch_add(&pipes_made, 1);
	return __real_pipe2(fds, flags);
}

/* ---- fixture: an OSS holding one object of OBJ_SIZE pattern bytes ---- */

static const struct lode_wire_objid obj = {.ino = 0x5111ce, .generation = 3, .stripe = 1};

static int setup(void **state)
{
	struct oss_fixture *f = oss_fixture_new();
	char *data = fixture_pattern(OBJ_SIZE, SEED);
	int err;

	if (!f)
		return -1;
	/* two writes: a write carries at most LODE_DATA_MAX bytes */
	err = oss_fixture_write(f, obj, 0, data, LODE_DATA_MAX, 0);
	if (!err)
		err = oss_fixture_write(f, obj, LODE_DATA_MAX, data + LODE_DATA_MAX,
					OBJ_SIZE - LODE_DATA_MAX, 0);
	free(data);
	if (err) {
		oss_fixture_free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	oss_fixture_free(*state);
	return 0;
}

/* Waits up to 2 s for every descriptor handed out for a send to be released (on the
 * server's worker, after the last byte went into the socket). */
static void expect_all_fds_released(void)
{
	for (int i = 0; i < 200 && atomic_load(&fds_released) != atomic_load(&file_replies); i++)
		usleep(10000);
	assert_int_equal(atomic_load(&fds_released), atomic_load(&file_replies));
}

/*
 * Reads len bytes at off over conn and checks the reply against the pattern written: want
 * bytes (fewer at the object's end), exactly those, and the checksums of the chunks they
 * cover as the writer computed them (a short last chunk summed over its bytes). Checks too
 * that the reply was one file reply of that offset and length and no bytes by copy, or for
 * at most LODE_OBJ_READ_COPY_MAX bytes, one reply with the bytes copied and no file.
 */
static void read_and_check(struct lode_rpc_conn *conn, uint64_t off, uint32_t len, size_t want)
{
	char *back = malloc(len);
	char *expect = fixture_pattern(off + want, SEED);
	uint64_t *sums = calloc(LODE_DATA_MAX / CHUNK, 8);
	unsigned files = atomic_load(&file_replies), copies = atomic_load(&data_replies);
	bool spliced = want > LODE_OBJ_READ_COPY_MAX;
	struct oss_fixture_read_rep rep;
	int64_t bad;

	assert_non_null(back);
	assert_non_null(sums);
	memset(back, 0xa5, len);
	assert_int_equal(oss_fixture_read(conn, obj, off, len, back, &rep), 0);

	assert_int_equal(rep.object_size, OBJ_SIZE);
	assert_int_equal(rep.data_len, want);
	bad = pattern_check(back, want, SEED, off);
	if (bad >= 0)
		fail_msg("read at %llu: byte %lld differs", (unsigned long long)off,
			 (long long)bad);
	assert_int_equal(rep.nchunks, (want + CHUNK - 1) / CHUNK);
	fixture_chunk_sums(expect + off, want, sums);
	for (uint32_t i = 0; i < rep.nchunks; i++)
		if (rep.sums[i] != sums[i])
			fail_msg("read at %llu: checksum of chunk %u differs",
				 (unsigned long long)off, i);

	if (spliced) {
		assert_int_equal(atomic_load(&file_replies), files + 1);
		assert_int_equal(atomic_load(&last_off), off);
		assert_int_equal(atomic_load(&last_len), want);
		assert_int_equal(atomic_load(&data_replies), copies);
	} else {
		assert_int_equal(atomic_load(&file_replies), files);
		assert_int_equal(atomic_load(&data_replies), copies + 1);
	}
	expect_all_fds_released();
	free(sums);
	free(expect);
	free(back);
}

/* ---- tests ---- */

static void test_a_read_of_lode_data_max_bytes_is_spliced_byte_exact(void **state)
{
	struct oss_fixture *f = *state;

	read_and_check(f->conn, 0, LODE_DATA_MAX, LODE_DATA_MAX);
	/* and a whole one from a chunk in, so that the file offset matters */
	read_and_check(f->conn, CHUNK, LODE_DATA_MAX, LODE_DATA_MAX);
}

static void test_a_multi_chunk_read_at_an_offset_is_spliced_byte_exact(void **state)
{
	struct oss_fixture *f = *state;

	read_and_check(f->conn, 3 * CHUNK, 5 * CHUNK, 5 * CHUNK);
	read_and_check(f->conn, 60 * CHUNK, 6 * CHUNK, 6 * CHUNK); /* across the two writes */
}

static void test_a_read_that_ends_at_the_objects_end_has_a_short_last_chunk(void **state)
{
	struct oss_fixture *f = *state;

	/* asks for a whole LODE_DATA_MAX, gets the 2 chunks and 1234 bytes that exist */
	read_and_check(f->conn, LODE_DATA_MAX, LODE_DATA_MAX, OBJ_SIZE - LODE_DATA_MAX);
	/* the short chunk alone: small, so copied */
	read_and_check(f->conn, LODE_DATA_MAX + 2 * CHUNK, CHUNK, 1234);
}

static void test_a_read_of_at_most_the_copy_limit_is_copied_byte_exact(void **state)
{
	struct oss_fixture *f = *state;
	struct lode_rpc_conn *other;
	unsigned pipes;

	_Static_assert(LODE_OBJ_READ_COPY_MAX == 2 * LODE_CHUNK_SIZE, "the sizes below");
	read_and_check(f->conn, 0, CHUNK, CHUNK);
	read_and_check(f->conn, 5 * CHUNK, 2 * CHUNK, 2 * CHUNK); /* the largest copied */
	read_and_check(f->conn, 5 * CHUNK, 3 * CHUNK, 3 * CHUNK); /* one chunk more: spliced */
	/* a small read on a second connection: no pipe is made for a copy */
	pipes = atomic_load(&pipes_made);
	assert_int_equal(lode_rpc_conn_open(f->rpc, lode_server_address(f->srv, 0), &other), 0);
	read_and_check(other, 7 * CHUNK, 2 * CHUNK, 2 * CHUNK);
	assert_int_equal(atomic_load(&pipes_made), pipes);
	lode_rpc_conn_close(other);
}

static void test_a_read_past_the_end_sends_no_file_and_no_bytes(void **state)
{
	struct oss_fixture *f = *state;
	unsigned files = atomic_load(&file_replies), copies = atomic_load(&data_replies);
	struct oss_fixture_read_rep rep;
	char back[16];

	assert_int_equal(
	    oss_fixture_read(f->conn, obj, LODE_DATA_MAX + 3 * CHUNK, sizeof(back), back, &rep), 0);
	assert_int_equal(rep.object_size, OBJ_SIZE);
	assert_int_equal(rep.data_len, 0);
	assert_int_equal(rep.nchunks, 0);
	assert_int_equal(atomic_load(&file_replies), files);
	assert_int_equal(atomic_load(&data_replies), copies);
}

static void test_each_connection_splices_through_a_pipe_of_its_own(void **state)
{
	struct oss_fixture *f = *state;
	unsigned pipes = atomic_load(&pipes_made);
	struct lode_rpc_conn *other;

	/* the first file reply on a connection makes its pipe; later ones reuse it */
	read_and_check(f->conn, 0, 3 * CHUNK, 3 * CHUNK);
	assert_int_equal(atomic_load(&pipes_made), pipes + 1);
	read_and_check(f->conn, 3 * CHUNK, 3 * CHUNK, 3 * CHUNK);
	assert_int_equal(atomic_load(&pipes_made), pipes + 1);

	/* a second connection to the same OSS gets a pipe of its own */
	assert_int_equal(lode_rpc_conn_open(f->rpc, lode_server_address(f->srv, 0), &other), 0);
	read_and_check(other, 6 * CHUNK, 3 * CHUNK, 3 * CHUNK);
	assert_int_equal(atomic_load(&pipes_made), pipes + 2);
	lode_rpc_conn_close(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	    T(test_a_read_of_lode_data_max_bytes_is_spliced_byte_exact),
	    T(test_a_multi_chunk_read_at_an_offset_is_spliced_byte_exact),
	    T(test_a_read_that_ends_at_the_objects_end_has_a_short_last_chunk),
	    T(test_a_read_of_at_most_the_copy_limit_is_copied_byte_exact),
	    T(test_a_read_past_the_end_sends_no_file_and_no_bytes),
	    T(test_each_connection_splices_through_a_pipe_of_its_own),
#undef T
	};

	fixture_skip_without_io_uring();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
