/* SPDX-License-Identifier: MIT */
/*
 * fsync covers truncates (issue 13): after ftruncate() and fsync() both succeed, every
 * copy of every object the truncate changed must have been told to fsync, or a power cut
 * brings the old size and checksums back. liblode is linked from its sources here with
 * lode_rpc_submit wrapped (-Wl,--wrap), so the test sees each object request the client
 * sends to the real local cluster, and checks that an OBJ_FSYNC of each copy followed the
 * OBJ_TRUNCATE. (The OSS's OBJ_FSYNC is fdatasync of the object and of its checksums, which
 * includes a size changed by ftruncate.) The same for fallocate, whose allocation must be
 * durable with the next fsync.
 *
 * A handle that created its file sends no OBJ_STAT at its close; one that opened it sends
 * one per stripe. And a commit taken before a truncate never lands after it: the wrapper
 * holds the first OBJ_STAT after it is armed (a commit of a handle that did not create its
 * file measures the file before it sends the size), so a flush is caught between its
 * snapshot of the size and its COMMIT while another thread truncates the file; the MDS must
 * end with the truncate's size. The same hold catches a truncate at its first OBJ_TRUNCATE
 * while a hole is punched: the punch must not grow the file back. And lode_open with
 * O_CREAT|O_TRUNC sends no OBJ_TRUNCATE for a name it creates.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cluster.h"
#include "lode/lode.h"
#include "rpc.h"

/* ---- what the client sent ---- */

#define LOG_MAX 4096

struct sent {
	uint8_t opcode;
	uint32_t stripe;
	uint32_t target; /* index of the connection's address in addrs[] */
};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sent sent_log[LOG_MAX]; /* protected by log_lock */
static unsigned nsent;		      /* protected by log_lock */
static char addrs[8][128];	      /* protected by log_lock */

void __real_lode_rpc_submit(struct lode_rpc_conn *conn, struct lode_call *call);
void __wrap_lode_rpc_submit(struct lode_rpc_conn *conn, struct lode_call *call);

/* The hold: armed by the test with an opcode, taken by the next request of that opcode
 * (its sender waits inside lode_rpc_submit), let go by the test. */
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static uint8_t hold_opcode;	 /* protected by log_lock: 0 when not armed */
static bool held, hold_released; /* protected by log_lock */

static void hold_if(uint8_t opcode)
{
	pthread_mutex_lock(&log_lock);
	if (hold_opcode && hold_opcode == opcode) {
		hold_opcode = 0;
		held = true;
		pthread_cond_broadcast(&hold_cond);
		while (!hold_released)
			pthread_cond_wait(&hold_cond, &log_lock);
	}
	pthread_mutex_unlock(&log_lock);
}

static void hold_arm(uint8_t opcode)
{
	pthread_mutex_lock(&log_lock);
	hold_opcode = opcode;
	held = hold_released = false;
	pthread_mutex_unlock(&log_lock);
}

/* Waits (10 s at most) for the armed opcode to be held. */
static void hold_wait(void)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&log_lock);
	while (!held && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&hold_cond, &log_lock, &until);
	pthread_mutex_unlock(&log_lock);
	if (!held)
		fail_msg("opcode %u was never sent within 10 s", hold_opcode);
}

static void hold_release(void)
{
	pthread_mutex_lock(&log_lock);
	hold_released = true;
	pthread_cond_broadcast(&hold_cond);
	pthread_mutex_unlock(&log_lock);
}

void __wrap_lode_rpc_submit(struct lode_rpc_conn *conn, struct lode_call *call)
{
	hold_if(call->opcode);
	if ((call->opcode == LODE_OP_OBJ_TRUNCATE || call->opcode == LODE_OP_OBJ_FSYNC ||
	     call->opcode == LODE_OP_OBJ_STAT) &&
	    call->body_len >= sizeof(struct lode_wire_objid)) {
		const struct lode_wire_objid *id = call->body;
		const char *a = lode_rpc_conn_addr(conn);
		unsigned k;

		pthread_mutex_lock(&log_lock);
		for (k = 0; k < 8 && addrs[k][0] && strcmp(addrs[k], a); k++)
			;
		if (k < 8 && !addrs[k][0])
			snprintf(addrs[k], sizeof(addrs[k]), "%s", a);
		if (nsent < LOG_MAX)
			sent_log[nsent++] = (struct sent){call->opcode, id->stripe, k};
		pthread_mutex_unlock(&log_lock);
	}
	__real_lode_rpc_submit(conn, call);
}

static void log_clear(void)
{
	pthread_mutex_lock(&log_lock);
	nsent = 0;
	pthread_mutex_unlock(&log_lock);
}

/* How many requests with opcode for stripe went out (a chained fsync counts once, for the
 * head of its chain, which forwards it to the other copies). */
static unsigned count(uint8_t opcode, uint32_t stripe)
{
	unsigned n = 0;

	pthread_mutex_lock(&log_lock);
	for (unsigned i = 0; i < nsent; i++)
		n += sent_log[i].opcode == opcode && sent_log[i].stripe == stripe;
	pthread_mutex_unlock(&log_lock);
	return n;
}

/* ---- the test ---- */

static struct test_cluster tc;

static int setup(void **state)
{
	(void)state;
	return cluster_up(&tc, 3) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	cluster_down(&tc);
	return 0;
}

static void truncate_then_fsync(int replication)
{
	struct lode_client_opts o = {.size = sizeof(o), .timeout_ms = 10000};
	struct lode_layout l = {.stripe_size = 1 << 20, .stripe_count = 2, .mirror_count = 2};
	struct lode_client *c;
	struct lode_file *f;
	char path[32];
	char *buf = malloc(3 << 20);

	assert_non_null(buf);
	memset(buf, 'x', 3 << 20);
	assert_int_equal(lode_connect(tc.mds, &o, &c), 0);
	assert_int_equal(lode_set_replication(c, replication), 0);
	snprintf(path, sizeof(path), "/t%d", replication);
	assert_int_equal(lode_create_with_layout(c, path, 0644, &l, &f), 0);
	assert_int_equal(lode_pwrite(f, buf, 3 << 20, 0), 3 << 20);
	assert_int_equal(lode_fsync(f), 0);

	log_clear();
	assert_int_equal(lode_ftruncate(f, 1000), 0);
	for (uint32_t s = 0; s < 2; s++)
		assert_int_equal(count(LODE_OP_OBJ_TRUNCATE, s), 2); /* both copies */
	assert_int_equal(lode_fsync(f), 0);
	for (uint32_t s = 0; s < 2; s++) {
		unsigned want = replication == LODE_REPLICATION_CHAIN ? 1 : 2;

		if (count(LODE_OP_OBJ_FSYNC, s) < want)
			fail_msg("stripe %u: %u OBJ_FSYNC after its truncate, want %u", s,
				 count(LODE_OP_OBJ_FSYNC, s), want);
	}
	/* and growing it again reads zeros past the cut */
	assert_int_equal(lode_ftruncate(f, 2 << 20), 0);
	assert_int_equal(lode_fsync(f), 0);
	assert_int_equal(lode_pread(f, buf, 4096, 1000), 4096);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(lode_close(f), 0);
	lode_disconnect(c);
	free(buf);
}

static void test_fsync_after_fallocate_syncs_every_copy(void **state)
{
	struct lode_client_opts o = {.size = sizeof(o), .timeout_ms = 10000};
	struct lode_layout l = {.stripe_size = 1 << 20, .stripe_count = 2, .mirror_count = 2};
	struct lode_client *c;
	struct lode_file *f;

	(void)state;
	assert_int_equal(lode_connect(tc.mds, &o, &c), 0);
	assert_int_equal(lode_set_replication(c, LODE_REPLICATION_FANOUT), 0);
	assert_int_equal(lode_create_with_layout(c, "/falloc", 0644, &l, &f), 0);
	assert_int_equal(lode_pwrite(f, "x", 1, 0), 1);
	assert_int_equal(lode_fsync(f), 0);
	log_clear();
	assert_int_equal(lode_fallocate(f, FALLOC_FL_KEEP_SIZE, 0, 3 << 20), 0);
	assert_int_equal(lode_fsync(f), 0);
	for (uint32_t s = 0; s < 2; s++)
		if (count(LODE_OP_OBJ_FSYNC, s) < 2)
			fail_msg("stripe %u: %u OBJ_FSYNC after fallocate, want 2", s,
				 count(LODE_OP_OBJ_FSYNC, s));
	assert_int_equal(lode_close(f), 0);
	lode_disconnect(c);
}

static void *flush_thread(void *arg)
{
	return (void *)(intptr_t)lode_flush(arg);
}

static void *truncate_thread(void *arg)
{
	return (void *)(intptr_t)lode_ftruncate(arg, 0);
}

static void test_a_commit_taken_before_a_truncate_never_lands_after_it(void **state)
{
	struct lode_client_opts o = {.size = sizeof(o), .timeout_ms = 10000};
	struct lode_client *c;
	struct lode_file *f;
	struct lode_stat st;
	pthread_t flusher, truncater;
	void *frc, *trc;
	char *buf = calloc(1, 3 << 20);

	(void)state;
	assert_non_null(buf);
	assert_int_equal(lode_connect(tc.mds, &o, &c), 0);
	assert_int_equal(lode_create_with_layout(c, "/race", 0644, NULL, &f), 0);
	assert_int_equal(lode_close(f), 0);
	/* opened again: a handle that did not create its file measures it at each commit */
	assert_int_equal(lode_open(c, "/race", O_RDWR, 0, &f), 0);
	assert_int_equal(lode_pwrite(f, buf, 3 << 20, 0), 3 << 20); /* not committed yet */
	/* the flush takes the size (3 MiB, to extend to) and is held before its COMMIT (a
	 * commit measures the file with OBJ_STAT before it sends the size) */
	hold_arm(LODE_OP_OBJ_STAT);
	assert_int_equal(pthread_create(&flusher, NULL, flush_thread, f), 0);
	hold_wait();
	/* the truncate to 0 runs meanwhile: before the fix its SET 0 reached the MDS first */
	assert_int_equal(pthread_create(&truncater, NULL, truncate_thread, f), 0);
	usleep(300 * 1000);
	hold_release();
	assert_int_equal(pthread_join(flusher, &frc), 0);
	assert_int_equal(pthread_join(truncater, &trc), 0);
	assert_int_equal((intptr_t)frc, 0);
	assert_int_equal((intptr_t)trc, 0);
	assert_int_equal(lode_stat(c, "/race", &st), 0);
	if (st.size != 0)
		fail_msg("the MDS has size %llu after the truncate to 0 returned: the flush's "
			 "older COMMIT landed after it",
			 (unsigned long long)st.size);
	assert_int_equal(lode_file_size(f), 0);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_stat(c, "/race", &st), 0);
	assert_int_equal(st.size, 0);
	lode_disconnect(c);
	free(buf);
}

/* A handle that created its file knows what it takes from its writes' answers: its close
 * sends no OBJ_STAT; a handle that opened the file measures at its close, one per stripe. */
static void test_only_a_handle_that_did_not_create_its_file_measures_it(void **state)
{
	struct lode_layout l = {.stripe_size = 1 << 20, .stripe_count = 2, .mirror_count = 2};
	struct lode_client_opts o = {.size = sizeof(o), .timeout_ms = 10000};
	char *buf = calloc(1, 2 << 20);
	struct lode_stat created, measured;
	struct lode_client *c;
	struct lode_file *f;

	(void)state;
	assert_non_null(buf);
	assert_int_equal(lode_connect(tc.mds, &o, &c), 0);
	log_clear();
	assert_int_equal(lode_create_with_layout(c, "/measure", 0644, &l, &f), 0);
	assert_int_equal(lode_pwrite(f, buf, 2 << 20, 0), 2 << 20);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(count(LODE_OP_OBJ_STAT, 0) + count(LODE_OP_OBJ_STAT, 1), 0);
	assert_int_equal(lode_stat(c, "/measure", &created), 0);
	assert_int_equal(lode_open(c, "/measure", O_WRONLY, 0, &f), 0);
	assert_int_equal(lode_pwrite(f, buf, 4096, 0), 4096);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(count(LODE_OP_OBJ_STAT, 0), 1);
	assert_int_equal(count(LODE_OP_OBJ_STAT, 1), 1);
	assert_int_equal(lode_stat(c, "/measure", &measured), 0);
	printf("st_blocks %llu from the creator's writes, %llu measured\n",
	       (unsigned long long)created.blocks, (unsigned long long)measured.blocks);
	assert_true(created.blocks >= (2 << 20) / 512);
	assert_true(created.blocks + 64 >= measured.blocks &&
		    measured.blocks + 64 >= created.blocks);
	lode_disconnect(c);
	free(buf);
}

/* open(O_CREAT|O_TRUNC) of a new name truncates nothing (nothing is there to truncate);
 * of an existing file it empties every object, as POSIX says. */
static void test_o_trunc_truncates_only_a_file_that_existed(void **state)
{
	struct lode_client_opts o = {.size = sizeof(o), .timeout_ms = 10000};
	char buf[4096] = {1};
	struct lode_client *c;
	struct lode_file *f;
	struct lode_stat st;

	(void)state;
	assert_int_equal(lode_connect(tc.mds, &o, &c), 0);
	log_clear();
	assert_int_equal(lode_open(c, "/otrunc", O_CREAT | O_TRUNC | O_WRONLY, 0644, &f), 0);
	assert_int_equal(count(LODE_OP_OBJ_TRUNCATE, 0), 0);
	assert_int_equal(lode_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_stat(c, "/otrunc", &st), 0);
	assert_int_equal(st.size, sizeof(buf));
	log_clear();
	assert_int_equal(lode_open(c, "/otrunc", O_CREAT | O_TRUNC | O_WRONLY, 0644, &f), 0);
	assert_true(count(LODE_OP_OBJ_TRUNCATE, 0) >= 1);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_stat(c, "/otrunc", &st), 0);
	assert_int_equal(st.size, 0);
	/* and O_EXCL still refuses the existing name */
	assert_int_equal(lode_open(c, "/otrunc", O_CREAT | O_EXCL | O_WRONLY, 0644, &f), -EEXIST);
	lode_disconnect(c);
}

static void *punch_thread(void *arg)
{
	return (void *)(intptr_t)lode_fallocate(arg, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
						2 << 20);
}

/* A hole punched while a truncate to 0 runs on the same handle: the punch writes zeros
 * only below the size, and must read that size where no truncate can change it, or its
 * zeros grow the file back after the truncate. */
static void test_a_hole_punched_during_a_truncate_never_grows_the_file_back(void **state)
{
	struct lode_client_opts o = {.size = sizeof(o), .timeout_ms = 10000};
	struct lode_client *c;
	struct lode_file *f;
	struct lode_stat st;
	pthread_t puncher, truncater;
	void *prc, *trc;
	char *buf = malloc(2 << 20);

	(void)state;
	assert_non_null(buf);
	memset(buf, 'p', 2 << 20);
	assert_int_equal(lode_connect(tc.mds, &o, &c), 0);
	assert_int_equal(lode_create_with_layout(c, "/punch", 0644, NULL, &f), 0);
	assert_int_equal(lode_pwrite(f, buf, 2 << 20, 0), 2 << 20);
	assert_int_equal(lode_flush(f), 0);
	/* the truncate holds the handle's write lock, held at its first OBJ_TRUNCATE */
	hold_arm(LODE_OP_OBJ_TRUNCATE);
	assert_int_equal(pthread_create(&truncater, NULL, truncate_thread, f), 0);
	hold_wait();
	/* the punch starts meanwhile: the size is still 2 MiB until the truncate ends */
	assert_int_equal(pthread_create(&puncher, NULL, punch_thread, f), 0);
	usleep(300 * 1000);
	hold_release();
	assert_int_equal(pthread_join(truncater, &trc), 0);
	assert_int_equal(pthread_join(puncher, &prc), 0);
	assert_int_equal((intptr_t)trc, 0);
	assert_int_equal((intptr_t)prc, 0);
	if (lode_file_size(f) != 0)
		fail_msg("size %llu after a truncate to 0 and a punch that keeps the size",
			 (unsigned long long)lode_file_size(f));
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_stat(c, "/punch", &st), 0);
	assert_int_equal(st.size, 0);
	lode_disconnect(c);
	free(buf);
}

static void test_fsync_after_ftruncate_syncs_every_copy_fan_out(void **state)
{
	(void)state;
	truncate_then_fsync(LODE_REPLICATION_FANOUT);
}

static void test_fsync_after_ftruncate_syncs_every_copy_chained(void **state)
{
	(void)state;
	truncate_then_fsync(LODE_REPLICATION_CHAIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fsync_after_ftruncate_syncs_every_copy_fan_out),
	    cmocka_unit_test(test_fsync_after_ftruncate_syncs_every_copy_chained),
	    cmocka_unit_test(test_fsync_after_fallocate_syncs_every_copy),
	    cmocka_unit_test(test_a_commit_taken_before_a_truncate_never_lands_after_it),
	    cmocka_unit_test(test_only_a_handle_that_did_not_create_its_file_measures_it),
	    cmocka_unit_test(test_a_hole_punched_during_a_truncate_never_grows_the_file_back),
	    cmocka_unit_test(test_o_trunc_truncates_only_a_file_that_existed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
