/* SPDX-License-Identifier: MIT */
/*
 * lode-oss request handlers over a real loopback server and lode_rpc client: what a client
 * sees on the wire, malformed requests included.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "codec.h"
#include "fixture.h"
#include "oss_fixture.h"

#define CHUNK LODE_CHUNK_SIZE

static int setup(void **state)
{
	*state = oss_fixture_new();
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	oss_fixture_free(*state);
	return 0;
}

static void test_hello_answers_as_an_oss_without_a_target_id_yet(void **state)
{
	struct oss_fixture *f = *state;
	struct lode_wire_hello_req req = {.client_id = 42, .role = LODE_ROLE_CLIENT};
	struct lode_wire_hello_rep rep = {0};

	assert_int_equal(
	    lode_rpc_simple(f->conn, LODE_OP_HELLO, &req, sizeof(req), &rep, sizeof(rep)), 0);
	assert_int_equal(rep.server_role, LODE_ROLE_OSS);
	assert_int_equal(rep.target_id, 0);
	assert_int_equal(lode_rpc_simple(f->conn, LODE_OP_PING, NULL, 0, NULL, 0), 0);
}

static void test_a_written_object_reads_back_with_matching_sums(void **state)
{
	struct oss_fixture *f = *state;
	size_t len = 2 * CHUNK + 300;
	char *data = fixture_pattern(len, 1);
	char *back = malloc(4 * CHUNK);
	struct oss_fixture_read_rep rep;

	assert_non_null(back);
	assert_int_equal(oss_fixture_write(f, fixture_oid(7, 1, 0), 0, data, len, 0), 0);
	assert_int_equal(oss_fixture_read(f->conn, fixture_oid(7, 1, 0), 0, 4 * CHUNK, back, &rep),
			 0);
	assert_int_equal(rep.object_size, len);
	assert_int_equal(rep.data_len, len);
	assert_memory_equal(back, data, len);
	for (uint32_t i = 0; i < rep.nchunks; i++) {
		size_t l = len - (size_t)i * CHUNK < CHUNK ? len - (size_t)i * CHUNK : CHUNK;

		assert_true(rep.sums[i] == lode_chunk_sum(back + (size_t)i * CHUNK, l));
	}
	free(back);
	free(data);
}

static void test_a_write_with_a_bad_sum_fails_with_ebadmsg(void **state)
{
	struct oss_fixture *f = *state;
	char *data = fixture_pattern(CHUNK, 2);
	struct lode_wire_objid id = fixture_oid(8, 1, 0);
	struct lode_wire_obj_rep rep;

	assert_int_equal(oss_fixture_write(f, id, 0, data, CHUNK, 1), -EBADMSG);
	assert_int_equal(
	    lode_rpc_simple(f->conn, LODE_OP_OBJ_STAT, &id, sizeof(id), &rep, sizeof(rep)),
	    -ENOENT);
	free(data);
}

static void test_malformed_and_foreign_requests_get_errors_and_the_connection_lives(void **state)
{
	struct oss_fixture *f = *state;
	struct lode_wire_objid id = fixture_oid(9, 1, 0);
	struct lode_wire_obj_rep rep;
	char junk[5] = {0};

	assert_int_equal(
	    lode_rpc_simple(f->conn, LODE_OP_OBJ_STAT, junk, sizeof(junk), &rep, sizeof(rep)),
	    -EPROTO);
	id.reserved = 1;
	assert_int_equal(
	    lode_rpc_simple(f->conn, LODE_OP_OBJ_REMOVE, &id, sizeof(id), &rep, sizeof(rep)),
	    -EPROTO);
	assert_int_equal(lode_rpc_simple(f->conn, LODE_OP_STATFS, NULL, 0, NULL, 0), -EOPNOTSUPP);
	assert_int_equal(lode_rpc_simple(f->conn, LODE_OP_PING, NULL, 0, NULL, 0), 0);
}

static void test_remove_stat_truncate_and_list_answer_over_the_wire(void **state)
{
	struct oss_fixture *f = *state;
	char *data = fixture_pattern(CHUNK, 3);
	struct lode_wire_objid id = fixture_oid(10, 2, 1);
	struct lode_wire_obj_truncate_req tr = {.obj = id, .size = 100};
	struct lode_wire_obj_list_req lr = {.max = 16};
	struct lode_wire_obj_list_rep lrep;
	struct lode_wire_objinfo infos[16];
	struct lode_wire_obj_rep rep;
	struct lode_call call = {
	    .opcode = LODE_OP_OBJ_LIST,
	    .body = &lr,
	    .body_len = sizeof(lr),
	    .reply_body = &lrep,
	    .reply_body_max = sizeof(lrep),
	    .reply_data = infos,
	    .reply_data_max = sizeof(infos),
	};

	assert_int_equal(oss_fixture_write(f, id, 0, data, CHUNK, 0), 0);
	assert_int_equal(
	    lode_rpc_simple(f->conn, LODE_OP_OBJ_TRUNCATE, &tr, sizeof(tr), &rep, sizeof(rep)), 0);
	assert_int_equal(rep.object_size, 100);
	assert_int_equal(
	    lode_rpc_simple(f->conn, LODE_OP_OBJ_FSYNC, &id, sizeof(id), &rep, sizeof(rep)), 0);
	assert_int_equal(lode_rpc_call(f->conn, &call), 0);
	assert_int_equal(lrep.count, 1);
	assert_int_equal(lrep.eof, 1);
	assert_int_equal(call.reply_data_len, sizeof(infos[0]));
	assert_int_equal(infos[0].obj.ino, 10);
	assert_int_equal(infos[0].size, 100);
	assert_int_equal(
	    lode_rpc_simple(f->conn, LODE_OP_OBJ_REMOVE, &id, sizeof(id), &rep, sizeof(rep)), 0);
	assert_int_equal(rep.object_size, 100);
	assert_int_equal(
	    lode_rpc_simple(f->conn, LODE_OP_OBJ_STAT, &id, sizeof(id), &rep, sizeof(rep)),
	    -ENOENT);
	free(data);
}

/* ---- chained requests: this OSS forwards to a second one in the same process ---- */

/* A chained request to f: fixed part (write struct + sums, or an object id), then a chain
 * of hops whose target ids and addresses are given. Returns the call's status; the reply's
 * statuses as errnos in st[]. */
static int chained(struct oss_fixture *f, uint8_t op, const void *fixed, size_t flen,
		   const struct iovec *iov, uint32_t self, unsigned n, const uint32_t *ids,
		   const char *const *addrs, int *st)
{
	uint64_t body[LODE_BODY_MAX / 8] = {0};
	struct lode_wire_chain c = {.self_target = self, .count = (uint16_t)n, .timeout_ms = 3000};
	struct lode_wire_chain_hop *hops = (void *)((char *)body + flen + sizeof(c));
	const struct lode_wire_obj_chain_rep *rep;
	struct lode_wire_obj_chain_rep rbuf;
	struct lode_call call = {
	    .opcode = op,
	    .body = body,
	    .body_len = (uint32_t)(flen + lode_chain_size(n)),
	    .data = iov,
	    .data_iovcnt = iov ? 1 : 0,
	    .reply_body = &rbuf,
	    .reply_body_max = sizeof(rbuf),
	};
	int rc;

	memcpy(body, fixed, flen);
	memcpy((char *)body + flen, &c, sizeof(c));
	for (unsigned i = 0; i < n; i++) {
		hops[i].target_id = ids[i];
		hops[i].addr_len = (uint16_t)strlen(addrs[i]);
		strcpy(hops[i].addr, addrs[i]);
	}
	rc = lode_rpc_call(f->conn, &call);
	if (rc)
		return rc;
	assert_int_equal(lode_dec_obj_chain_rep(&rbuf, call.reply_body_len, n, &rep), 0);
	for (unsigned i = 0; i <= n; i++)
		st[i] = lode_status_to_errno(rep->status[i]);
	return 0;
}

/* Reads len bytes of object id from the OSS at conn and compares them with data. */
static void expect_object(struct lode_rpc_conn *conn, struct lode_wire_objid id, const char *data,
			  size_t len)
{
	char *back = malloc(4 * CHUNK);
	struct oss_fixture_read_rep rep;

	assert_non_null(back);
	assert_int_equal(oss_fixture_read(conn, id, 0, 4 * CHUNK, back, &rep), 0);
	assert_int_equal(rep.data_len, len);
	assert_memory_equal(back, data, len);
	free(back);
}

static void test_a_chained_write_and_fsync_reach_the_next_oss_and_answer_per_copy(void **state)
{
	struct oss_fixture *f = *state, *g = oss_fixture_new();
	size_t len = CHUNK + 100;
	char *data = fixture_pattern(len, 5);
	struct iovec iov = {.iov_base = data, .iov_len = len};
	uint64_t wbody[(sizeof(struct lode_wire_obj_write_req) + 16) / 8] = {0};
	struct lode_wire_obj_write_req *w = (void *)wbody;
	struct lode_wire_objid id = fixture_oid(21, 1, 0);
	uint64_t *sums = (uint64_t *)(w + 1);
	struct lode_rpc_conn *gconn;
	const char *addrs[2];
	uint32_t ids[2];
	int st[3];

	assert_non_null(g);
	atomic_store(&f->oss.target_id, 1);
	atomic_store(&g->oss.target_id, 2);
	assert_int_equal(lode_rpc_conn_open(f->rpc, lode_server_address(g->srv, 0), &gconn), 0);
	w->obj = id;
	w->flags = LODE_OBJ_F_CHAIN;
	w->nchunks = 2;
	fixture_chunk_sums(data, len, sums);

	/* head f, then g: both copies hold the bytes, though only f was sent them */
	ids[0] = 2;
	addrs[0] = lode_server_address(g->srv, 0);
	assert_int_equal(
	    chained(f, LODE_OP_OBJ_WRITE, wbody, sizeof(wbody), &iov, 1, 1, ids, addrs, st), 0);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	expect_object(f->conn, id, data, len);
	expect_object(gconn, id, data, len);
	assert_int_equal(chained(f, LODE_OP_OBJ_FSYNC, &id, sizeof(id), NULL, 1, 1, ids, addrs, st),
			 0);
	assert_int_equal(st[0] | st[1], 0);

	/* a dead next hop fails alone, and the copy after it is "not reached" */
	id.stripe = 1;
	w->obj = id;
	ids[0] = 3;
	addrs[0] = "tcp://127.0.0.1:1";
	ids[1] = 2;
	addrs[1] = lode_server_address(g->srv, 0);
	assert_int_equal(
	    chained(f, LODE_OP_OBJ_WRITE, wbody, sizeof(wbody), &iov, 1, 2, ids, addrs, st), 0);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], -ECONNREFUSED);
	assert_int_equal(st[2], -ECANCELED);

	/* a request meant for another target is refused whole, before anything is written */
	assert_int_equal(
	    chained(f, LODE_OP_OBJ_WRITE, wbody, sizeof(wbody), &iov, 7, 1, &ids[1], &addrs[1], st),
	    -ESTALE);
	/* a malformed chain is refused whole: the same target twice */
	ids[0] = 2;
	assert_int_equal(
	    chained(f, LODE_OP_OBJ_WRITE, wbody, sizeof(wbody), &iov, 1, 2, ids, addrs, st),
	    -ELOOP);
	free(data);
	oss_fixture_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	    T(test_a_chained_write_and_fsync_reach_the_next_oss_and_answer_per_copy),
	    T(test_hello_answers_as_an_oss_without_a_target_id_yet),
	    T(test_a_written_object_reads_back_with_matching_sums),
	    T(test_a_write_with_a_bad_sum_fails_with_ebadmsg),
	    T(test_malformed_and_foreign_requests_get_errors_and_the_connection_lives),
	    T(test_remove_stat_truncate_and_list_answer_over_the_wire),
#undef T
	};

	fixture_skip_without_io_uring();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
