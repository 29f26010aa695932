/* SPDX-License-Identifier: MIT */
/*
 * Small reads and writes on the caller's thread (client/read.c and client/write.c, struct
 * window's direct) against a real local cluster: a read or write that fits one piece (one
 * stripe unit) is sent and answered on the thread that waits for it, with the same checks
 * as any (bytes and checksums, the next copy when one fails; a write down the chain of
 * copies, or to its only copy), and one of several pieces still goes through the I/O
 * threads, many in flight. So does a write to two copies fanned out: its calls overlap.
 *
 * liblode is linked from its sources with lode_rpc_call_direct and lode_rpc_submit wrapped
 * (-Wl,--wrap), so the test sees which way every OBJ_READ and OBJ_WRITE left, on which
 * thread, and how it ended.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"
#include "lode/lode.h"
#include "pattern.h"
#include "rpc.h"

#define MIB	  (1u << 20)
#define SEED	  11
#define FILE_SIZE (3 * MIB + 4321)

static struct test_cluster tc;
static pthread_t test_thread;

/* per opcode: [0] OBJ_READ, [1] OBJ_WRITE */
static _Atomic unsigned direct_calls[2];     /* made by lode_rpc_call_direct */
static _Atomic unsigned direct_elsewhere[2]; /* of those, made on another thread than the test's */
static _Atomic unsigned direct_failed[2];    /* of those, answered with an error */
static _Atomic unsigned submitted[2];	     /* handed to an I/O thread */

int __real_lode_rpc_call_direct(struct lode_rpc_conn *conn, struct lode_call *call);
int __wrap_lode_rpc_call_direct(struct lode_rpc_conn *conn, struct lode_call *call);
void __real_lode_rpc_submit(struct lode_rpc_conn *conn, struct lode_call *call);
void __wrap_lode_rpc_submit(struct lode_rpc_conn *conn, struct lode_call *call);

/* 0 for OBJ_READ, 1 for OBJ_WRITE, -1 for the rest */
static int kind(const struct lode_call *call)
{
	return call->opcode == LODE_OP_OBJ_READ ? 0 : call->opcode == LODE_OP_OBJ_WRITE ? 1 : -1;
}

int __wrap_lode_rpc_call_direct(struct lode_rpc_conn *conn, struct lode_call *call)
{
	int k = kind(call), rc;

	if (k < 0)
		return __real_lode_rpc_call_direct(conn, call);
	direct_calls[k]++;
	if (!pthread_equal(pthread_self(), test_thread))
		direct_elsewhere[k]++;
	rc = __real_lode_rpc_call_direct(conn, call);
	if (rc)
		direct_failed[k]++;
	return rc;
}

void __wrap_lode_rpc_submit(struct lode_rpc_conn *conn, struct lode_call *call)
{
	int k = kind(call);

	if (k >= 0)
		submitted[k]++;
	__real_lode_rpc_submit(conn, call);
}

static struct lode_client *client(void)
{
	struct lode_client_opts o = {.size = sizeof(o), .timeout_ms = 10000};
	struct lode_client *c;

	assert_int_equal(lode_connect(tc.mds, &o, &c), 0);
	return c;
}

/* /f: FILE_SIZE pattern bytes in 1 MiB stripe units over both OSS, two copies of each. */
static int setup(void **state)
{
	struct lode_layout l = {.stripe_size = MIB, .stripe_count = 2, .mirror_count = 2};
	struct lode_client *c;
	struct lode_file *f;
	char *buf;
	int rc;

	(void)state;
	test_thread = pthread_self();
	if (cluster_up(&tc, 2))
		return -1;
	buf = malloc(FILE_SIZE);
	if (!buf || lode_connect(tc.mds, NULL, &c)) {
		free(buf);
		return -1;
	}
	pattern_fill(buf, FILE_SIZE, SEED, 0);
	rc = lode_create_with_layout(c, "/f", 0644, &l, &f);
	if (!rc) {
		rc = lode_pwrite(f, buf, FILE_SIZE, 0) == FILE_SIZE ? 0 : -1;
		if (lode_close(f))
			rc = -1;
	}
	lode_disconnect(c);
	free(buf);
	return rc ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	cluster_down(&tc);
	return 0;
}

/* Reads [off, off + len) of path through c and checks every byte against the pattern of
 * seed. */
static void check_bytes(struct lode_client *c, const char *path, uint64_t seed, uint64_t off,
			size_t len)
{
	char *buf = malloc(len);
	struct lode_file *f;
	int64_t bad;

	assert_non_null(buf);
	assert_int_equal(lode_open(c, path, O_RDONLY, 0, &f), 0);
	assert_int_equal(lode_pread(f, buf, len, off), (ssize_t)len);
	bad = pattern_check(buf, len, seed, off);
	if (bad >= 0)
		fail_msg("%s: read of %zu bytes at %llu: byte %lld differs", path, len,
			 (unsigned long long)off, (long long)bad);
	assert_int_equal(lode_close(f), 0);
	free(buf);
}

/* The same, of /f as setup wrote it. */
static void read_and_check(struct lode_client *c, uint64_t off, size_t len)
{
	check_bytes(c, "/f", SEED, off, len);
}

static void test_a_read_inside_one_stripe_unit_is_made_on_the_callers_thread(void **state)
{
	struct lode_client *c = client();
	unsigned d0 = direct_calls[0], s0 = submitted[0];

	(void)state;
	read_and_check(c, 0, 64 * 1024);
	/* not chunk aligned at either end: the reply lands in a bounce buffer first */
	read_and_check(c, MIB + 777, 100);
	/* the last unit, short: the object ends inside its last chunk */
	read_and_check(c, 3 * MIB, 4321);
	assert_int_equal(direct_calls[0] - d0, 3);
	assert_int_equal(direct_elsewhere[0], 0);
	assert_int_equal(submitted[0], s0);
	lode_disconnect(c);
}

static void test_a_read_of_several_pieces_goes_through_the_io_threads(void **state)
{
	struct lode_client *c = client();
	unsigned d0 = direct_calls[0], s0 = submitted[0];

	(void)state;
	/* [512 KiB, 2.5 MiB): three stripe units, three pieces in flight at once */
	read_and_check(c, MIB / 2, 2 * MIB);
	assert_int_equal(direct_calls[0], d0);
	assert_int_equal(submitted[0] - s0, 3);
	lode_disconnect(c);
}

/*
 * With one OSS killed, every small read still returns the right bytes, on the caller's
 * thread: a read whose first copy was on the dead OSS fails there and takes the other copy.
 * Which OSS holds the copy read first depends on placement, so each OSS is killed in turn,
 * with a client that knows nothing of the other round: in one of them the first copy of
 * some unit is on the dead one.
 */
static void test_a_small_read_fails_over_to_the_next_copy_on_the_callers_thread(void **state)
{
	unsigned failed0 = direct_failed[0];

	(void)state;
	for (int round = 0; round < 2; round++) {
		const char *name = round ? "oss1" : "oss0";
		struct lode_client *c = client();
		unsigned s0 = submitted[0];

		/* a read first, so that the client has connections to both to lose */
		read_and_check(c, 0, 4096);
		assert_int_equal(cluster_kill(&tc, name, 1), 0);
		for (unsigned unit = 0; unit < 3; unit++)
			read_and_check(c, (uint64_t)unit * MIB + 65536, 65536);
		read_and_check(c, 3 * MIB, 4321);
		assert_int_equal(submitted[0], s0);
		lode_disconnect(c);
		assert_int_equal(cluster_restart(&tc), 0);
	}
	assert_int_equal(direct_elsewhere[0], 0);
	assert_true(direct_failed[0] > failed0);
}

/* Writes len pattern bytes at off of path (created with layout l if new) through c, then
 * reads them back with a new client and checks every byte. */
static void write_and_check(struct lode_client *c, const char *path, const struct lode_layout *l,
			    uint64_t off, size_t len)
{
	char *buf = malloc(len);
	struct lode_client *r;
	struct lode_file *f;
	int rc;

	assert_non_null(buf);
	pattern_fill(buf, len, SEED + 1, off);
	rc = lode_create_with_layout(c, path, 0644, l, &f);
	if (rc == -EEXIST)
		rc = lode_open(c, path, O_WRONLY, 0, &f);
	assert_int_equal(rc, 0);
	assert_int_equal(lode_pwrite(f, buf, len, off), (ssize_t)len);
	assert_int_equal(lode_close(f), 0);
	free(buf);
	r = client();
	check_bytes(r, path, SEED + 1, off, len);
	lode_disconnect(r);
}

static const struct lode_layout two_copies = {
    .stripe_size = MIB, .stripe_count = 2, .mirror_count = 2};
static const struct lode_layout one_copy = {
    .stripe_size = MIB, .stripe_count = 2, .mirror_count = 1};

static void test_a_write_inside_one_stripe_unit_is_made_on_the_callers_thread(void **state)
{
	struct lode_client *c = client();
	unsigned d0 = direct_calls[1], s0 = submitted[1];

	(void)state;
	/* down the chain of two copies: one call, to the head */
	assert_int_equal(lode_set_replication(c, LODE_REPLICATION_CHAIN), 0);
	write_and_check(c, "/w2", &two_copies, 0, 64 * 1024);
	/* partial chunks at both ends (merged at the OSS), in the second unit */
	write_and_check(c, "/w2", &two_copies, MIB + 777, 100);
	/* the only copy */
	assert_int_equal(lode_set_replication(c, LODE_REPLICATION_FANOUT), 0);
	write_and_check(c, "/w1", &one_copy, 0, 64 * 1024);
	assert_int_equal(direct_calls[1] - d0, 3);
	assert_int_equal(direct_elsewhere[1], 0);
	assert_int_equal(submitted[1], s0);
	lode_disconnect(c);
}

static void test_a_write_of_several_pieces_or_fanned_out_goes_through_the_io_threads(void **state)
{
	struct lode_client *c = client();
	unsigned d0 = direct_calls[1], s0 = submitted[1];

	(void)state;
	/* [512 KiB, 2.5 MiB): three stripe units, three chained pieces in flight at once */
	assert_int_equal(lode_set_replication(c, LODE_REPLICATION_CHAIN), 0);
	write_and_check(c, "/w3", &two_copies, MIB / 2, 2 * MIB);
	assert_int_equal(submitted[1] - s0, 3);
	/* one piece fanned out to two copies: both calls in flight at once */
	assert_int_equal(lode_set_replication(c, LODE_REPLICATION_FANOUT), 0);
	write_and_check(c, "/w3", &two_copies, 0, 4096);
	assert_int_equal(submitted[1] - s0, 5);
	assert_int_equal(direct_calls[1], d0);
	lode_disconnect(c);
}

/*
 * With one OSS killed, every small write still succeeds on the caller's thread, down a
 * chain whose head or tail is gone (the head's failure is the caller's to handle: it sends
 * the write to the next copy), and reads back whole. Each OSS is killed in turn, so that in
 * one round or the other the dead one heads some unit's chain.
 */
static void test_a_small_write_fails_over_to_the_next_copy_on_the_callers_thread(void **state)
{
	unsigned failed0 = direct_failed[1];

	(void)state;
	for (int round = 0; round < 2; round++) {
		const char *name = round ? "oss1" : "oss0";
		const char *path = round ? "/wf1" : "/wf0";
		struct lode_client *c = client();
		unsigned s0 = submitted[1];

		assert_int_equal(lode_set_replication(c, LODE_REPLICATION_CHAIN), 0);
		/* a write first, so that the client has connections to both to lose */
		write_and_check(c, path, &two_copies, 0, 4096);
		assert_int_equal(cluster_kill(&tc, name, 1), 0);
		for (unsigned unit = 0; unit < 3; unit++)
			write_and_check(c, path, &two_copies, (uint64_t)unit * MIB + 65536, 65536);
		assert_int_equal(submitted[1], s0);
		lode_disconnect(c);
		assert_int_equal(cluster_restart(&tc), 0);
	}
	assert_int_equal(direct_elsewhere[1], 0);
	assert_true(direct_failed[1] > failed0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_read_inside_one_stripe_unit_is_made_on_the_callers_thread),
	    cmocka_unit_test(test_a_read_of_several_pieces_goes_through_the_io_threads),
	    cmocka_unit_test(test_a_small_read_fails_over_to_the_next_copy_on_the_callers_thread),
	    cmocka_unit_test(test_a_write_inside_one_stripe_unit_is_made_on_the_callers_thread),
	    cmocka_unit_test(
		test_a_write_of_several_pieces_or_fanned_out_goes_through_the_io_threads),
	    cmocka_unit_test(test_a_small_write_fails_over_to_the_next_copy_on_the_callers_thread),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
