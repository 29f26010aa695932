/* SPDX-License-Identifier: MIT */
/*
 * liblode's view of the targets against a fake MDS that answers TARGET_LIST as each test
 * sets it: a good list is taken whole; a list whose records are fewer or more than its
 * count says, or with a record of unknown state or target id 0, is refused (EPROTO) and
 * leaves the view the client had untouched, never half of it taken. liblode is linked
 * from its sources, so the test sees the client's target table.
 */
#include <errno.h>
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

#include "client.h"
#include "codec.h"
#include "fixture.h"
#include "lode/lode.h"
#include "server.h"

/* What the fake MDS answers to TARGET_LIST: records of (id, state, address). */
struct fake_target {
	uint32_t id, state;
	const char *addr;
};

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_target fake_list[4]; /* protected by fake_lock */
static unsigned fake_n;			/* protected by fake_lock */
static uint32_t fake_count;		/* protected by fake_lock: the count it says */

static void fake_set(const struct fake_target *t, unsigned n, uint32_t count)
{
	pthread_mutex_lock(&fake_lock);
	memcpy(fake_list, t, n * sizeof(*t));
	fake_n = n;
	fake_count = count;
	pthread_mutex_unlock(&fake_lock);
}

static void answer_targets(struct lode_req *req)
{
	struct lode_wire_target_list_rep rep = {0};
	char *data = calloc(1, 4096);
	size_t pos = 0;

	if (!data) {
		lode_req_reply_err(req, -ENOMEM);
		return;
	}
	pthread_mutex_lock(&fake_lock);
	for (unsigned i = 0; i < fake_n; i++)
		pos += fixture_target_record(data + pos, fake_list[i].id, fake_list[i].state,
					     fake_list[i].addr);
	rep.count = fake_count;
	pthread_mutex_unlock(&fake_lock);
	lode_req_reply(req, 0, &rep, sizeof(rep), data, pos, free);
}

static void fake_request(void *ctx, struct lode_req *req)
{
	const struct lode_wire_hdr *hdr = lode_req_hdr(req);
	struct lode_wire_hello_rep hello = {.cluster_id = 7, .server_role = 1};

	(void)ctx;
	if (hdr->opcode == LODE_OP_HELLO)
		lode_req_reply(req, 0, &hello, sizeof(hello), NULL, 0, NULL);
	else if (hdr->opcode == LODE_OP_TARGET_LIST)
		answer_targets(req);
	else
		lode_req_reply_err(req, -EOPNOTSUPP);
}

static const struct lode_server_ops fake_ops = {.on_request = fake_request};

struct fixture {
	struct lode_server *mds;
	struct lode_client *c;
};

static int setup(void **state)
{
	struct lode_server_opts so = {.threads = 1, .ops = &fake_ops};
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	so.listen[0] = "tcp://127.0.0.1:0";
	if (lode_server_start(&f->mds, &so) ||
	    lode_connect(lode_server_address(f->mds, 0), NULL, &f->c)) {
		lode_server_stop(f->mds);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	lode_disconnect(f->c);
	lode_server_stop(f->mds);
	free(f);
	return 0;
}

static const struct fake_target good[] = {{1, LODE_TARGET_UP, "tcp://127.0.0.1:7001"},
					  {2, LODE_TARGET_DOWN, "tcp://127.0.0.1:7002"}};

/* The client's table, as (id, up) pairs in order; returns how many. */
static unsigned table(struct lode_client *c, uint32_t *ids, int *up)
{
	unsigned n;

	pthread_mutex_lock(&c->lock);
	n = c->ntargets;
	for (unsigned i = 0; i < n; i++) {
		ids[i] = c->targets[i].id;
		up[i] = c->targets[i].up;
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}

static void test_a_good_list_is_taken_whole(void **state)
{
	struct fixture *f = *state;
	struct lode_target_info ti[4];
	uint32_t ids[LODE_TARGETS_MAX];
	int up[LODE_TARGETS_MAX];

	fake_set(good, 2, 2);
	assert_int_equal(lode_targets(f->c, ti, 4), 2);
	assert_int_equal(ti[0].id, 1);
	assert_true(ti[0].up);
	assert_int_equal(ti[1].id, 2);
	assert_false(ti[1].up);
	assert_string_equal(ti[1].addr, "tcp://127.0.0.1:7002");
	assert_int_equal(lode_client_targets_refresh(f->c), 0);
	assert_int_equal(table(f->c, ids, up), 2);
	assert_int_equal(ids[0], 1);
	assert_int_equal(up[0], 1);
	assert_int_equal(ids[1], 2);
	assert_int_equal(up[1], 0);
}

/* Each bad list is refused, and the table stays as the good list left it. */
static void test_a_bad_list_is_refused_and_changes_nothing(void **state)
{
	struct fixture *f = *state;
	struct lode_target_info ti[4];
	/* the first record would flip target 2 to up and add target 3, if taken */
	const struct fake_target flip[] = {{2, LODE_TARGET_UP, "tcp://127.0.0.1:7002"},
					   {3, LODE_TARGET_UP, "tcp://127.0.0.1:7003"},
					   {4, 7, "tcp://127.0.0.1:7004"}};
	const struct fake_target no_id[] = {{2, LODE_TARGET_UP, "tcp://127.0.0.1:7002"},
					    {0, LODE_TARGET_UP, "tcp://127.0.0.1:7000"}};
	const struct {
		const char *what;
		const struct fake_target *t;
		unsigned n;
		uint32_t count;
	} bad[] = {
	    {"fewer records than its count", flip, 2, 3},
	    {"more records than its count", flip, 2, 1},
	    {"a record of unknown state", flip, 3, 3},
	    {"a record of target id 0", no_id, 2, 2},
	};
	uint32_t ids[LODE_TARGETS_MAX];
	int up[LODE_TARGETS_MAX];

	fake_set(good, 2, 2);
	assert_int_equal(lode_client_targets_refresh(f->c), 0);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fake_set(bad[i].t, bad[i].n, bad[i].count);
		if (lode_client_targets_refresh(f->c) != -EPROTO)
			fail_msg("%s: taken", bad[i].what);
		if (lode_targets(f->c, ti, 4) != -EPROTO)
			fail_msg("%s: lode_targets did not refuse it", bad[i].what);
		if (table(f->c, ids, up) != 2 || ids[0] != 1 || ids[1] != 2 || up[1] != 0)
			fail_msg("%s: the table changed", bad[i].what);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_a_good_list_is_taken_whole, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_bad_list_is_refused_and_changes_nothing, setup,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
