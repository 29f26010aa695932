/* SPDX-License-Identifier: MIT */
/*
 * A chained write that the head stored and could not forward (its answer says ECANCELED
 * for the next copy: the head's table does not list that target yet, or its connection
 * broke) is sent again through the head, never to the next copy alone: sent alone, it can
 * land after another writer's overlapping write that the head ordered after it, and the
 * copies differ with neither marked degraded. liblode is linked from its sources with
 * lode_rpc_submit and lode_rpc_call_direct wrapped (-Wl,--wrap): the wrappers answer the
 * first chained OBJ_WRITE themselves, as such a head would (once, or every time), and log
 * every OBJ_WRITE the client sends after it.
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

#include <cmocka.h>

#include "cluster.h"
#include "lode/lode.h"
#include "rpc.h"

#define LOG_MAX 64

struct sent {
	char addr[128];
	int hops; /* the chain's hops after the receiver; -1 without a chain */
};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sent sent_log[LOG_MAX]; /* protected by log_lock */
static unsigned nsent;		      /* protected by log_lock */
static unsigned cancels_left;	      /* protected by log_lock: chained writes to answer */
static unsigned cancels;	      /* protected by log_lock: answered so far */
static char head[128];		      /* protected by log_lock: where the cancel came from */

void __real_lode_rpc_submit(struct lode_rpc_conn *conn, struct lode_call *call);
void __wrap_lode_rpc_submit(struct lode_rpc_conn *conn, struct lode_call *call);
int __real_lode_rpc_call_direct(struct lode_rpc_conn *conn, struct lode_call *call);
int __wrap_lode_rpc_call_direct(struct lode_rpc_conn *conn, struct lode_call *call);

/* The hops after the receiver in an OBJ_WRITE's body, or -1 without a chain. */
static int write_hops(const struct lode_call *call)
{
	const struct lode_wire_obj_write_req *wr = call->body;
	const struct lode_wire_chain *ch;
	size_t at;

	if (call->body_len < sizeof(*wr) || !(wr->flags & LODE_OBJ_F_CHAIN))
		return -1;
	at = sizeof(*wr) + (size_t)wr->nchunks * sizeof(uint64_t);
	if (call->body_len < at + sizeof(*ch))
		return -1;
	ch = (const struct lode_wire_chain *)((const char *)call->body + at);
	return ch->count;
}

/* Logs an OBJ_WRITE about to be sent, or answers it as a head that could not forward it
 * (call's status and reply set): true when answered. */
static bool answered_as_head(struct lode_rpc_conn *conn, struct lode_call *call)
{
	struct lode_wire_obj_chain_rep *rep = call->reply_body;
	bool cancel = false;
	int hops;

	if (call->opcode != LODE_OP_OBJ_WRITE)
		return false;
	hops = write_hops(call);
	pthread_mutex_lock(&log_lock);
	if (cancels_left && hops > 0) {
		cancels_left--;
		cancels++;
		cancel = true;
		snprintf(head, sizeof(head), "%s", lode_rpc_conn_addr(conn));
	} else if (nsent < LOG_MAX) {
		snprintf(sent_log[nsent].addr, sizeof(sent_log[nsent].addr), "%s",
			 lode_rpc_conn_addr(conn));
		sent_log[nsent++].hops = hops;
	}
	pthread_mutex_unlock(&log_lock);
	if (!cancel)
		return false;
	/* the head's answer: its own copy stored, the next one never reached */
	assert_true(call->reply_body_max >= sizeof(*rep));
	memset(rep, 0, sizeof(*rep));
	rep->count = (uint16_t)(hops + 1);
	for (int k = 1; k <= hops; k++)
		rep->status[k] = ECANCELED;
	call->status = 0;
	call->reply_body_len = sizeof(*rep);
	call->reply_data_len = 0;
	return true;
}

/* a write of several pieces, through an I/O thread */
void __wrap_lode_rpc_submit(struct lode_rpc_conn *conn, struct lode_call *call)
{
	if (answered_as_head(conn, call))
		call->done(call);
	else
		__real_lode_rpc_submit(conn, call);
}

/* a write of one piece, on the writer's thread (client/write.c) */
int __wrap_lode_rpc_call_direct(struct lode_rpc_conn *conn, struct lode_call *call)
{
	if (answered_as_head(conn, call))
		return call->status;
	return __real_lode_rpc_call_direct(conn, call);
}

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

/* Connects with chained replication and creates path with one 1 MiB stripe on targets a
 * and b; the wrapper will answer the next `cancel` chained writes as a head that could not
 * forward them. */
static struct lode_file *create_chained(struct lode_client **c, const char *path, uint32_t a,
					uint32_t b, unsigned cancel)
{
	struct lode_client_opts o = {.size = sizeof(o), .timeout_ms = 10000};
	struct lode_layout l = {
	    .stripe_size = 1 << 20, .stripe_count = 1, .mirror_count = 2, .targets = {a, b}};
	struct lode_file *f;

	assert_int_equal(lode_connect(tc.mds, &o, c), 0);
	assert_int_equal(lode_set_replication(*c, LODE_REPLICATION_CHAIN), 0);
	assert_int_equal(lode_create_with_layout(*c, path, 0644, &l, &f), 0);
	pthread_mutex_lock(&log_lock);
	nsent = 0;
	cancels = 0;
	cancels_left = cancel;
	pthread_mutex_unlock(&log_lock);
	return f;
}

/* path holds want (1 MiB) with no copy marked degraded; disconnects c. */
static void check_both_copies(struct lode_client *c, const char *path, const char *want)
{
	char *got = malloc(1 << 20);
	struct lode_layout li;
	struct lode_file *f;
	uint64_t d;

	assert_non_null(got);
	assert_int_equal(lode_layout_info(c, path, &li, &d), 0);
	assert_int_equal(d, 0);
	assert_int_equal(lode_open(c, path, O_RDONLY, 0, &f), 0);
	assert_int_equal(lode_pread(f, got, 1 << 20, 0), 1 << 20);
	assert_memory_equal(got, want, 1 << 20);
	assert_int_equal(lode_close(f), 0);
	lode_disconnect(c);
	free(got);
}

static void test_a_write_the_head_could_not_forward_is_sent_again_through_the_head(void **state)
{
	char *buf = malloc(1 << 20);
	struct lode_client *c;
	struct lode_file *f;

	(void)state;
	assert_non_null(buf);
	memset(buf, 'w', 1 << 20);
	f = create_chained(&c, "/ordered", 1, 2, 1);
	assert_int_equal(lode_pwrite(f, buf, 1 << 20, 0), 1 << 20);

	/* after the head's answer, the same write went through the head again, with the
	 * next copy as its hop, and never to that copy alone */
	pthread_mutex_lock(&log_lock);
	assert_int_equal(cancels, 1);
	assert_true(nsent >= 1);
	for (unsigned i = 0; i < nsent; i++) {
		printf("OBJ_WRITE %u after the cancel: to %s with %d hop(s)\n", i, sent_log[i].addr,
		       sent_log[i].hops);
		if (sent_log[i].hops != 1 || strcmp(sent_log[i].addr, head))
			fail_msg("OBJ_WRITE %u went to %s with %d hop(s), not through the head %s",
				 i, sent_log[i].addr, sent_log[i].hops, head);
	}
	pthread_mutex_unlock(&log_lock);
	assert_int_equal(lode_close(f), 0);
	/* and the bytes are there, on both copies (nothing was marked degraded) */
	check_both_copies(c, "/ordered", buf);
	free(buf);
}

/* A head that never forwards (its link to the next copy is down, the client's is not):
 * after a bounded number of resends through it, the copy it never reached gets the write
 * alone, rather than the write failing; both copies hold it, none is degraded. */
static void test_a_head_that_never_forwards_is_bypassed_after_bounded_resends(void **state)
{
	char *buf = malloc(1 << 20);
	struct lode_client *c;
	struct lode_file *f;

	(void)state;
	assert_non_null(buf);
	memset(buf, 'v', 1 << 20);
	f = create_chained(&c, "/bypassed", 2, 3, 1000);
	assert_int_equal(lode_pwrite(f, buf, 1 << 20, 0), 1 << 20);

	pthread_mutex_lock(&log_lock);
	printf("the head was sent the write %u times; then:\n", cancels);
	for (unsigned i = 0; i < nsent; i++)
		printf("OBJ_WRITE %u: to %s with %d hop(s)\n", i, sent_log[i].addr,
		       sent_log[i].hops);
	/* resent through the head, but not without end */
	assert_true(cancels > 1 && cancels < 1000);
	/* then the copy after the head alone, once */
	assert_int_equal(nsent, 1);
	assert_true(sent_log[0].hops <= 0);
	assert_string_not_equal(sent_log[0].addr, head);
	cancels_left = 0;
	pthread_mutex_unlock(&log_lock);
	assert_int_equal(lode_close(f), 0);
	check_both_copies(c, "/bypassed", buf);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
		test_a_write_the_head_could_not_forward_is_sent_again_through_the_head),
	    cmocka_unit_test(test_a_head_that_never_forwards_is_bypassed_after_bounded_resends),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
