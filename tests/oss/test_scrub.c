/* SPDX-License-Identifier: MIT */
/*
 * The OSS's scrub over the wire (OBJ_SCRUB, OBJ_SCRUB_STATUS) against a fake MDS that
 * records SCRUB_REPORTs: bit flips and lost chunks are found in the right chunk and
 * reported for the right object, clean objects are not (nor one rewritten while it is
 * scrubbed), a second start while one runs is EBUSY, and a cancel ends a throttled scrub at
 * once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
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

#include "codec.h"
#include "fixture.h"
#include "handlers.h"
#include "loop.h"
#include "oss_fixture.h"
#include "scrub.h"
#include "server.h"

#define CHUNK	  LODE_CHUNK_SIZE
#define TARGET_ID 5

struct fake_mds {
	pthread_mutex_t lock;
	/* protected by lock */
	int answer; /* what SCRUB_REPORT answers (-errno or 0) */
	unsigned nreports;
	struct lode_wire_scrub_report_req reports[8];
};

struct fixture {
	struct oss_fixture *oss;
	struct lode_oss_scrub *scrub;
	struct lode_server *mds_srv;
	struct fake_mds mds;
};

static void fake_request(void *ctx, struct lode_req *req)
{
	struct fake_mds *m = ctx;
	const struct lode_wire_hdr *hdr = lode_req_hdr(req);
	struct lode_msg msg;
	int err =
	    lode_msg_decode(hdr->opcode, lode_req_body(req), hdr->body_len, hdr->data_len, &msg);

	if (!err && hdr->opcode != LODE_OP_SCRUB_REPORT)
		err = -EOPNOTSUPP;
	if (err) {
		lode_req_reply_err(req, err);
		return;
	}
	pthread_mutex_lock(&m->lock);
	if (m->nreports < 8)
		memcpy(&m->reports[m->nreports], msg.fixed, sizeof(m->reports[0]));
	m->nreports++;
	err = m->answer;
	pthread_mutex_unlock(&m->lock);
	if (err)
		lode_req_reply_err(req, err);
	else
		lode_req_reply(req, 0, NULL, 0, NULL, 0, NULL);
}

static const struct lode_server_ops fake_ops = {.on_request = fake_request};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct lode_server_opts so = {.threads = 1, .ops = &fake_ops};

	if (!f)
		return -1;
	pthread_mutex_init(&f->mds.lock, NULL);
	so.listen[0] = "tcp://127.0.0.1:0";
	so.ctx = &f->mds;
	if (lode_server_start(&f->mds_srv, &so))
		goto err_free;
	f->oss = oss_fixture_new();
	if (!f->oss)
		goto err_mds;
	if (lode_oss_scrub_create(&f->scrub, f->oss->st, &f->oss->oss,
				  lode_server_address(f->mds_srv, 0), f->oss->dir))
		goto err_oss;
	/* before the first OBJ_SCRUB: what a registered OSS has */
	f->oss->oss.scrub = f->scrub;
	atomic_store(&f->oss->oss.target_id, TARGET_ID);
	*state = f;
	return 0;

err_oss:
	oss_fixture_free(f->oss);
err_mds:
	lode_server_stop(f->mds_srv);
err_free:
	pthread_mutex_destroy(&f->mds.lock);
	free(f);
	return -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	lode_oss_scrub_destroy(f->scrub); /* first: its thread reads the store */
	f->oss->oss.scrub = NULL;
	oss_fixture_free(f->oss);
	lode_server_stop(f->mds_srv);
	pthread_mutex_destroy(&f->mds.lock);
	free(f);
	return 0;
}

static int scrub_call(struct fixture *f, uint32_t action, uint64_t rate,
		      struct lode_wire_scrub_status *st)
{
	struct lode_wire_scrub_req q = {.action = action, .rate = rate};

	return lode_rpc_simple(f->oss->conn, LODE_OP_OBJ_SCRUB, &q, sizeof(q), st, sizeof(*st));
}

/* OBJ_SCRUB_STATUS with room for max bad records; returns how many came. */
static uint32_t status(struct fixture *f, uint32_t max, struct lode_wire_scrub_status *st,
		       struct lode_wire_scrub_bad *bad)
{
	struct lode_wire_scrub_status_req q = {.max = max};
	struct lode_call c = {.opcode = LODE_OP_OBJ_SCRUB_STATUS,
			      .body = &q,
			      .body_len = sizeof(q),
			      .reply_body = st,
			      .reply_body_max = sizeof(*st),
			      .reply_data = bad,
			      .reply_data_max = (uint64_t)max * sizeof(*bad)};

	assert_int_equal(lode_rpc_call(f->oss->conn, &c), 0);
	assert_int_equal(c.reply_body_len, sizeof(*st));
	assert_int_equal(c.reply_data_len, (uint64_t)st->count * sizeof(*bad));
	return st->count;
}

/* Polls until the scrub is no longer running (at most 10 s). */
static void wait_end(struct fixture *f, struct lode_wire_scrub_status *st)
{
	for (int i = 0; i < 1000; i++) {
		status(f, 0, st, NULL);
		if (st->state != LODE_SCRUB_RUNNING)
			return;
		usleep(10000);
	}
	fail_msg("the scrub did not end in 10 s");
}

static void put(struct fixture *f, uint64_t ino, size_t len)
{
	char *data = fixture_pattern(len, ino);

	assert_int_equal(oss_fixture_write(f->oss, fixture_oid(ino, 1, 0), 0, data, len, 0), 0);
	free(data);
}

static void obj_path(struct fixture *f, uint64_t ino, char *buf, size_t len)
{
	snprintf(buf, len, "%s/objects/%02x/%016llx.%016llx.%08x", f->oss->dir,
		 (unsigned)(ino % 256), (unsigned long long)ino, 1ull, 0u);
}

static void flip(struct fixture *f, uint64_t ino, long off)
{
	char path[256];
	FILE *fp;
	int c;

	obj_path(f, ino, path, sizeof(path));
	fp = fopen(path, "r+b");
	assert_non_null(fp);
	assert_int_equal(fseek(fp, off, SEEK_SET), 0);
	c = fgetc(fp);
	assert_int_not_equal(c, EOF);
	assert_int_equal(fseek(fp, off, SEEK_SET), 0);
	assert_int_not_equal(fputc(c ^ 0x10, fp), EOF);
	assert_int_equal(fclose(fp), 0);
}

static void test_status_before_any_scrub_says_never(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_scrub_status st;

	assert_int_equal(status(f, 4, &st, (struct lode_wire_scrub_bad[4]){0}), 0);
	assert_int_equal(st.state, LODE_SCRUB_NEVER);
	assert_int_equal(st.run, 0);
}

static void test_a_flipped_bit_is_found_in_its_chunk_and_reported_to_the_mds(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_scrub_status st;
	struct lode_wire_scrub_bad bad[4];

	put(f, 10, 300000);
	put(f, 11, 200000);
	put(f, 12, CHUNK);
	flip(f, 11, 2 * CHUNK + 7);
	assert_int_equal(scrub_call(f, LODE_SCRUB_START, 0, &st), 0);
	assert_int_equal(st.run, 1);
	wait_end(f, &st);
	assert_int_equal(st.state, LODE_SCRUB_DONE);
	assert_int_equal(st.objects_checked, 3);
	assert_int_equal(st.bytes_checked, 300000 + 200000 + CHUNK);
	assert_int_equal(st.bad_objects, 1);
	assert_int_equal(st.bad_chunks, 1);
	assert_int_equal(st.reported, 1);
	assert_int_equal(status(f, 4, &st, bad), 1);
	assert_int_equal(bad[0].obj.ino, 11);
	assert_int_equal(bad[0].first_bad, 2);
	assert_int_equal(bad[0].bad_chunks, 1);
	assert_int_equal(bad[0].report, 0);
	pthread_mutex_lock(&f->mds.lock);
	assert_int_equal(f->mds.nreports, 1);
	assert_int_equal(f->mds.reports[0].obj.ino, 11);
	assert_int_equal(f->mds.reports[0].obj.generation, 1);
	assert_int_equal(f->mds.reports[0].target_id, TARGET_ID);
	assert_int_equal(f->mds.reports[0].first_bad, 2);
	pthread_mutex_unlock(&f->mds.lock);

	/* a scrub after the data was put right again finds nothing */
	flip(f, 11, 2 * CHUNK + 7);
	assert_int_equal(scrub_call(f, LODE_SCRUB_START, 0, &st), 0);
	assert_int_equal(st.run, 2);
	wait_end(f, &st);
	assert_int_equal(st.state, LODE_SCRUB_DONE);
	assert_int_equal(st.bad_objects, 0);
	assert_int_equal(status(f, 4, &st, bad), 0);
}

/* A scrub checks what the disk holds, past the page cache: objects nobody had cached are
 * not cached after it either (a scrub of a whole store does not push the readers' data
 * out), and a flipped bit is found all the same. */
static void test_a_scrub_reads_past_the_page_cache(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_scrub_status st;
	struct lode_wire_scrub_bad bad[4];
	char path[2][256];

	put(f, 30, 600000);
	put(f, 31, 3 * CHUNK);
	flip(f, 31, CHUNK + 3);
	for (unsigned i = 0; i < 2; i++) {
		obj_path(f, 30 + i, path[i], sizeof(path[i]));
		long left = oss_fixture_uncache(path[i]);

		if (left < 0) {
			print_message("no cachestat(2) here, or tmpfs: not checked\n");
			skip();
		}
		assert_int_equal(left, 0);
	}
	assert_int_equal(scrub_call(f, LODE_SCRUB_START, 0, &st), 0);
	wait_end(f, &st);
	assert_int_equal(st.state, LODE_SCRUB_DONE);
	assert_int_equal(st.objects_checked, 2);
	assert_int_equal(st.bytes_checked, 600000 + 3 * CHUNK);
	assert_int_equal(st.bad_objects, 1);
	assert_int_equal(status(f, 4, &st, bad), 1);
	assert_int_equal(bad[0].obj.ino, 31);
	assert_int_equal(bad[0].first_bad, 1);
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(oss_fixture_pages(path[i], 0, 0, false), 0);
}

static void test_a_lost_chunk_is_bad_and_the_mds_answer_is_kept(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_scrub_status st;
	struct lode_wire_scrub_bad bad[4];
	char path[256];

	put(f, 20, 3 * CHUNK);
	obj_path(f, 20, path, sizeof(path));
	assert_int_equal(truncate(path, 1000), 0); /* the checksums still say 3 chunks */
	pthread_mutex_lock(&f->mds.lock);
	f->mds.answer = -EBUSY; /* the stripe's last good copy: not marked */
	pthread_mutex_unlock(&f->mds.lock);
	assert_int_equal(scrub_call(f, LODE_SCRUB_START, 0, &st), 0);
	wait_end(f, &st);
	assert_int_equal(st.state, LODE_SCRUB_DONE);
	assert_int_equal(st.bad_objects, 1);
	assert_int_equal(st.reported, 0);
	assert_int_equal(status(f, 4, &st, bad), 1);
	assert_int_equal(bad[0].obj.ino, 20);
	assert_int_equal(bad[0].report, lode_status_from_errno(-EBUSY));
}

static void test_the_last_result_outlives_a_restart_and_a_bad_file_is_ignored(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_scrub_status st, before;
	struct lode_wire_scrub_bad bad[4];
	char path[256];
	FILE *fp;

	put(f, 40, 2 * CHUNK);
	flip(f, 40, CHUNK + 1);
	assert_int_equal(scrub_call(f, LODE_SCRUB_START, 0, &st), 0);
	wait_end(f, &before);
	assert_int_equal(before.bad_objects, 1);

	/* the OSS restarts: a new scrubber over the same data directory */
	lode_oss_scrub_destroy(f->scrub);
	assert_int_equal(lode_oss_scrub_create(&f->scrub, f->oss->st, &f->oss->oss,
					       lode_server_address(f->mds_srv, 0), f->oss->dir),
			 0);
	f->oss->oss.scrub = f->scrub;
	assert_int_equal(status(f, 4, &st, bad), 1);
	assert_int_equal(st.state, LODE_SCRUB_DONE);
	assert_int_equal(st.run, before.run);
	assert_int_equal(st.finished, before.finished);
	assert_int_equal(st.bytes_checked, 2 * CHUNK);
	assert_int_equal(bad[0].obj.ino, 40);
	assert_int_equal(bad[0].first_bad, 1);
	/* the next scrub counts on from there */
	assert_int_equal(scrub_call(f, LODE_SCRUB_START, 0, &st), 0);
	assert_int_equal(st.run, before.run + 1);
	wait_end(f, &st);

	/* a damaged result file: ignored, the OSS starts as if it had none */
	snprintf(path, sizeof(path), "%s/scrub.last", f->oss->dir);
	fp = fopen(path, "r+b");
	assert_non_null(fp);
	assert_int_equal(fputs("garbage", fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
	lode_oss_scrub_destroy(f->scrub);
	assert_int_equal(lode_oss_scrub_create(&f->scrub, f->oss->st, &f->oss->oss,
					       lode_server_address(f->mds_srv, 0), f->oss->dir),
			 0);
	f->oss->oss.scrub = f->scrub;
	assert_int_equal(status(f, 4, &st, bad), 0);
	assert_int_equal(st.state, LODE_SCRUB_NEVER);
}

struct rewriter {
	struct fixture *f;
	atomic_bool stop;
	unsigned writes;
	int rc;
};

/* Rewrites object 40's four chunks whole, each time with other bytes, until told to stop. */
static void *rewrite(void *arg)
{
	struct rewriter *w = arg;
	char *a = fixture_pattern(4 * CHUNK, 40), *b = fixture_pattern(4 * CHUNK, 41);

	while (!atomic_load(&w->stop) && !w->rc) {
		w->rc = oss_fixture_write(w->f->oss, fixture_oid(40, 1, 0), 0,
					  w->writes % 2 ? a : b, 4 * CHUNK, 0);
		w->writes++;
	}
	free(a);
	free(b);
	return NULL;
}

/*
 * Scrubs of an object a client rewrites without pause: the scrub reads the bytes, then the
 * checksums, and a write landing between the two shows one write's bytes with the next
 * one's checksums. Its second look, held against writes, sees one moment: no scrub may
 * report the copy (before it was held, the second look could meet the same race, and the
 * MDS marked a good copy degraded).
 */
static void test_a_copy_rewritten_without_pause_is_never_reported(void **state)
{
	struct fixture *f = *state;
	struct rewriter w = {.f = f};
	struct lode_wire_scrub_status st;
	unsigned scrubs = 0, rechecked = 0;
	uint64_t until = lode_now_ms() + 4000;
	pthread_t t;

	put(f, 40, 4 * CHUNK);
	assert_int_equal(pthread_create(&t, NULL, rewrite, &w), 0);
	while (lode_now_ms() < until) {
		uint64_t t0 = lode_now_ms();

		assert_int_equal(scrub_call(f, LODE_SCRUB_START, 0, &st), 0);
		wait_end(f, &st);
		assert_int_equal(st.state, LODE_SCRUB_DONE);
		scrubs++;
		/* a scrub that slept RECHECK_MS looked twice */
		rechecked += lode_now_ms() - t0 >= 100;
		if (st.bad_objects)
			break;
	}
	atomic_store(&w.stop, true);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(w.rc, 0);
	printf("%u scrubs (%u looked twice) during %u rewrites\n", scrubs, rechecked, w.writes);
	assert_int_equal(st.bad_objects, 0);
	pthread_mutex_lock(&f->mds.lock);
	assert_int_equal(f->mds.nreports, 0);
	pthread_mutex_unlock(&f->mds.lock);
}

static void test_a_second_start_is_busy_and_a_cancel_ends_a_throttled_scrub(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_scrub_status st;

	put(f, 30, LODE_DATA_MAX); /* 4 s at 1 MiB/s */
	assert_int_equal(scrub_call(f, LODE_SCRUB_START, 1 << 20, &st), 0);
	assert_int_equal(st.state, LODE_SCRUB_RUNNING);
	assert_int_equal(st.rate, 1 << 20);
	assert_int_equal(scrub_call(f, LODE_SCRUB_START, 0, &st), -EBUSY);
	usleep(300000);
	assert_int_equal(scrub_call(f, LODE_SCRUB_CANCEL, 0, &st), 0);
	wait_end(f, &st);
	assert_int_equal(st.state, LODE_SCRUB_CANCELLED);
	assert_true(st.bytes_checked < LODE_DATA_MAX);
	assert_true(st.finished >= st.started);
	/* and a new one can start */
	assert_int_equal(scrub_call(f, LODE_SCRUB_START, 0, &st), 0);
	wait_end(f, &st);
	assert_int_equal(st.state, LODE_SCRUB_DONE);
	assert_int_equal(st.bytes_checked, LODE_DATA_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	    T(test_status_before_any_scrub_says_never),
	    T(test_a_flipped_bit_is_found_in_its_chunk_and_reported_to_the_mds),
	    T(test_a_scrub_reads_past_the_page_cache),
	    T(test_a_lost_chunk_is_bad_and_the_mds_answer_is_kept),
	    T(test_a_second_start_is_busy_and_a_cancel_ends_a_throttled_scrub),
	    T(test_a_copy_rewritten_without_pause_is_never_reported),
	    T(test_the_last_result_outlives_a_restart_and_a_bad_file_is_ignored),
#undef T
	};

	fixture_skip_without_io_uring();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
