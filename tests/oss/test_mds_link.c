/* SPDX-License-Identifier: MIT */
/*
 * The OSS's MDS link against a fake MDS on loopback: registration with the persistent
 * uuid, heartbeats, re-registration when the MDS forgets the target, orphan removal,
 * heartbeats that keep flowing while orphan removal is slow, and the table of chain hops
 * taken only from whole target lists.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "codec.h"
#include "fixture.h"
#include "handlers.h"
#include "log.h"
#include "mds_link.h"
#include "objstore.h"
#include "oss_fixture.h"
#include "server.h"

struct fake_mds {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* all protected by lock */
	int registers;
	int heartbeats;
	bool forget_next_heartbeat;
	uint8_t uuid[16];
	char addr[LODE_ADDR_MAX + 1];
	struct lode_wire_objid orphans[2];
	int norphans;
	struct lode_wire_objid done[8];
	int ndone;
	/* a slow MDS with endless orphans: every ORPHAN_LIST answers a full page, late */
	unsigned slow_orphans_ms;
	int orphan_lists;
	/* TARGET_LIST: these target ids (at tcp://10.0.0.ID:7000), and the count it says */
	uint32_t list_ids[4];
	unsigned list_n;
	uint32_t list_count;
	int target_lists;
};

/* A TARGET_LIST reply of m's list (lock held). */
static void answer_targets(struct fake_mds *m, struct lode_req *req)
{
	struct lode_wire_target_list_rep rep = {.count = m->list_count};
	char *data = calloc(1, 4096);
	size_t pos = 0;

	if (!data) {
		lode_req_reply_err(req, -ENOMEM);
		return;
	}
	for (unsigned i = 0; i < m->list_n; i++) {
		char addr[32];

		snprintf(addr, sizeof(addr), "tcp://10.0.0.%u:7000", m->list_ids[i]);
		pos += fixture_target_record(data + pos, m->list_ids[i], LODE_TARGET_UP, addr);
	}
	m->target_lists++;
	lode_req_reply(req, 0, &rep, sizeof(rep), data, pos, free);
}

struct late_reply {
	struct lode_req *req;
	unsigned ms;
};

static struct lode_wire_objid endless[LODE_OBJLIST_MAX];

/* Answers an ORPHAN_LIST with a full page of objects after ms, from a thread of its own, so
 * the fake's worker stays free for heartbeats: the slowness is the reclaim's, not the MDS's. */
static void *reply_late(void *arg)
{
	struct late_reply *lr = arg;
	struct lode_wire_orphan_list_rep rep = {.count = LODE_OBJLIST_MAX};

	usleep(lr->ms * 1000u);
	lode_req_reply(lr->req, 0, &rep, sizeof(rep), endless, sizeof(endless), NULL);
	free(lr);
	return NULL;
}

struct fixture {
	char dir[64];
	struct fake_mds mds;
	struct lode_server *srv;
	struct lode_objstore *st;
	struct lode_oss oss;
};

static void fake_request(void *ctx, struct lode_req *req)
{
	struct fake_mds *m = ctx;
	const struct lode_wire_hdr *hdr = lode_req_hdr(req);
	const void *body = lode_req_body(req);
	struct lode_wire_hello_rep hrep = {.cluster_id = 77, .server_role = 1};
	struct lode_msg msg;
	int err;

	err = lode_msg_decode(hdr->opcode, body, hdr->body_len, hdr->data_len, &msg);
	pthread_mutex_lock(&m->lock);
	switch (hdr->opcode) {
	case LODE_OP_HELLO: {
		if (!err)
			lode_req_reply(req, 0, &hrep, sizeof(hrep), NULL, 0, NULL);
		break;
	}
	case LODE_OP_TARGET_REGISTER: {
		const struct lode_wire_target_register_req *r = msg.fixed;
		struct lode_name a = msg.name[0];

		if (err)
			break;
		memcpy(m->uuid, r->uuid, 16);
		memcpy(m->addr, a.ptr, a.len);
		m->addr[a.len] = '\0';
		m->registers++;
		hrep.target_id = 5;
		lode_req_reply(req, 0, &hrep, sizeof(hrep), NULL, 0, NULL);
		break;
	}
	case LODE_OP_TARGET_HEARTBEAT: {
		const struct lode_wire_target_heartbeat_req *r = msg.fixed;

		if (!err && (r->target_id != 5 || m->forget_next_heartbeat))
			err = -ENOENT;
		m->forget_next_heartbeat = false;
		if (!err) {
			m->heartbeats++;
			lode_req_reply(req, 0, NULL, 0, NULL, 0, NULL);
		}
		break;
	}
	case LODE_OP_TARGET_LIST:
		answer_targets(m, req);
		break;
	case LODE_OP_ORPHAN_LIST:
	case LODE_OP_ORPHAN_DONE: {
		struct lode_wire_orphan_list_rep rep = {0};
		uint32_t n = msg.count;

		if (err)
			break;
		if (hdr->opcode == LODE_OP_ORPHAN_LIST && m->slow_orphans_ms) {
			struct late_reply *lr = malloc(sizeof(*lr));
			pthread_t t;

			m->orphan_lists++;
			lr->req = req;
			lr->ms = m->slow_orphans_ms;
			pthread_create(&t, NULL, reply_late, lr);
			pthread_detach(t);
			break;
		}
		if (hdr->opcode == LODE_OP_ORPHAN_DONE && m->slow_orphans_ms) {
			lode_req_reply(req, 0, NULL, 0, NULL, 0, NULL);
			break;
		}
		if (hdr->opcode == LODE_OP_ORPHAN_DONE) {
			if (n > 8)
				n = 8;
			memcpy(m->done, lode_req_data(req), n * sizeof(m->done[0]));
			m->ndone = (int)n;
			m->norphans = 0; /* forgotten once done */
			lode_req_reply(req, 0, NULL, 0, NULL, 0, NULL);
			break;
		}
		rep.count = (uint32_t)m->norphans;
		lode_req_reply(req, 0, &rep, sizeof(rep), m->orphans,
			       rep.count * sizeof(m->orphans[0]), NULL);
		break;
	}
	default:
		err = -EOPNOTSUPP;
	}
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	if (err)
		lode_req_reply_err(req, err);
}

static const struct lode_server_ops fake_ops = {.on_request = fake_request};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct lode_server_opts so = {.threads = 1, .ops = &fake_ops};

	if (!f)
		return -1;
	if (oss_fixture_store_open(f->dir, sizeof(f->dir), "lode-osslink", &f->st))
		goto err_free;
	pthread_mutex_init(&f->mds.lock, NULL);
	pthread_cond_init(&f->mds.cond, NULL);
	so.listen[0] = "tcp://127.0.0.1:0";
	so.ctx = &f->mds;
	if (lode_server_start(&f->srv, &so))
		goto err_store;
	lode_oss_init(&f->oss, f->st);
	*state = f;
	return 0;

err_store:
	oss_fixture_store_close(f->dir, f->st);
err_free:
	free(f);
	return -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	lode_server_stop(f->srv);
	lode_oss_fini(&f->oss);
	oss_fixture_store_close(f->dir, f->st);
	pthread_cond_destroy(&f->mds.cond);
	pthread_mutex_destroy(&f->mds.lock);
	free(f);
	return 0;
}

/* How long a test waits for what the link does once a second or at once. It returns as soon
 * as that happened: the bound is only for a link that never does it, so it is far past the
 * stalls of a loaded machine (the test once took 15 s longer than usual on a CI run). */
#define WAIT_MS 30000

/* Waits up to ms for *counter >= want (under the fake MDS lock). */
static bool wait_for(struct fake_mds *m, const int *counter, int want, unsigned ms)
{
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000 + 1;
	pthread_mutex_lock(&m->lock);
	while (*counter < want && pthread_cond_timedwait(&m->cond, &m->lock, &ts) == 0)
		;
	ok = *counter >= want;
	pthread_mutex_unlock(&m->lock);
	return ok;
}

static void test_the_uuid_file_is_created_once_and_read_back(void **state)
{
	struct fixture *f = *state;
	uint8_t a[16], b[16];
	char path[128];
	int fd;

	assert_int_equal(lode_oss_uuid_load(f->dir, a), 0);
	assert_int_equal(lode_oss_uuid_load(f->dir, b), 0);
	assert_memory_equal(a, b, 16);
	snprintf(path, sizeof(path), "%s/oss.uuid", f->dir);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not-a-uuid\n", 11), 11);
	close(fd);
	assert_int_equal(lode_oss_uuid_load(f->dir, b), -EINVAL);
}

static void test_the_link_registers_heartbeats_reregisters_and_removes_orphans(void **state)
{
	struct fixture *f = *state;
	struct lode_wire_objid keep = {.ino = 3, .generation = 1}, gone = {.ino = 4};
	struct lode_mds_link_opts lo = {
	    .advertise = "tcp://10.0.0.9:7000", .data_dir = f->dir, .st = f->st, .oss = &f->oss};
	struct lode_obj_result r;
	struct lode_mds_link *link;
	uint8_t uuid[16];

	/* two objects exist; the MDS lists one of them as an orphan */
	for (int i = 0; i < 2; i++) {
		char path[160];
		const struct lode_wire_objid *id = i ? &gone : &keep;
		int fd;

		snprintf(path, sizeof(path), "%s/objects/%02x/%016llx.%016llx.%08x", f->dir,
			 (unsigned)(id->ino % 256), (unsigned long long)id->ino,
			 (unsigned long long)id->generation, id->stripe);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
	f->mds.orphans[0] = gone;
	f->mds.norphans = 1;

	assert_int_equal(lode_oss_uuid_load(f->dir, uuid), 0);
	lo.mds_addr = lode_server_address(f->srv, 0);
	lo.uuid = uuid;
	assert_int_equal(lode_mds_link_start(&link, &lo), 0);

	assert_true(wait_for(&f->mds, &f->mds.registers, 1, WAIT_MS));
	assert_true(wait_for(&f->mds, &f->mds.heartbeats, 1, WAIT_MS));
	assert_memory_equal(f->mds.uuid, uuid, 16);
	assert_string_equal(f->mds.addr, "tcp://10.0.0.9:7000");
	assert_int_equal(atomic_load(&f->oss.target_id), 5);
	assert_int_equal(atomic_load(&f->oss.cluster_id), 77);

	pthread_mutex_lock(&f->mds.lock);
	f->mds.forget_next_heartbeat = true;
	pthread_mutex_unlock(&f->mds.lock);
	assert_true(wait_for(&f->mds, &f->mds.registers, 2, WAIT_MS));

	assert_true(wait_for(&f->mds, &f->mds.ndone, 1, WAIT_MS));
	assert_int_equal(f->mds.done[0].ino, 4);
	assert_int_equal(lode_objstore_stat(f->st, &gone, &r), -ENOENT);
	assert_int_equal(lode_objstore_stat(f->st, &keep, &r), 0);
	lode_mds_link_stop(link);
}

/* Orphan removal that takes long (each page answered 2.5 s late, pages without end) must
 * not hold up the heartbeats: an MDS that stops hearing from a target takes it for dead,
 * and new files then find no target to go to. */
static void test_heartbeats_keep_flowing_while_orphan_removal_is_slow(void **state)
{
	struct fixture *f = *state;
	struct lode_mds_link_opts lo = {
	    .advertise = "tcp://10.0.0.9:7000", .data_dir = f->dir, .st = f->st, .oss = &f->oss};
	struct lode_mds_link *link;
	uint8_t uuid[16];
	int before, after;

	for (unsigned i = 0; i < LODE_OBJLIST_MAX; i++)
		endless[i] = (struct lode_wire_objid){.ino = 1000 + i, .generation = 1};
	f->mds.slow_orphans_ms = 2500;
	assert_int_equal(lode_oss_uuid_load(f->dir, uuid), 0);
	lo.mds_addr = lode_server_address(f->srv, 0);
	lo.uuid = uuid;
	assert_int_equal(lode_mds_link_start(&link, &lo), 0);
	assert_true(wait_for(&f->mds, &f->mds.orphan_lists, 1, WAIT_MS));
	pthread_mutex_lock(&f->mds.lock);
	before = f->mds.heartbeats;
	pthread_mutex_unlock(&f->mds.lock);
	sleep(6);
	pthread_mutex_lock(&f->mds.lock);
	after = f->mds.heartbeats;
	pthread_mutex_unlock(&f->mds.lock);
	print_message("%d heartbeats in 6 s of slow orphan removal (%d pages asked)\n",
		      after - before, f->mds.orphan_lists);
	assert_true(after - before >= 4); /* one a second */
	assert_true(f->mds.orphan_lists >= 2);
	lode_mds_link_stop(link);
	usleep(3000 * 1000); /* let the last late reply go before the server stops */
}

/* The OSS's table of chain hops: "id,id,..." in table order, or "-" when empty. */
static void hops_text(struct lode_oss *oss, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	pthread_rwlock_rdlock(&oss->hops_lock);
	for (unsigned i = 0; i < oss->nhops && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%u", i ? "," : "", oss->hops[i].id);
	pthread_rwlock_unlock(&oss->hops_lock);
	if (!buf[0])
		snprintf(buf, len, "-");
}

/* Sets the fake's target list, and waits until the link has fetched it twice more. */
static void serve_list(struct fixture *f, const uint32_t *ids, unsigned n, uint32_t count)
{
	int seen;

	pthread_mutex_lock(&f->mds.lock);
	memcpy(f->mds.list_ids, ids, n * sizeof(*ids));
	f->mds.list_n = n;
	f->mds.list_count = count;
	seen = f->mds.target_lists;
	pthread_mutex_unlock(&f->mds.lock);
	assert_true(wait_for(&f->mds, &f->mds.target_lists, seen + 2, WAIT_MS));
}

/* The chain hop check's table (a chained request is forwarded only to a target in it) is
 * replaced only by a whole target list: one whose records are fewer or more than its count
 * says is refused, and the table stays as the last good list left it. */
static void test_the_hop_table_takes_only_whole_target_lists(void **state)
{
	struct fixture *f = *state;
	struct lode_mds_link_opts lo = {
	    .advertise = "tcp://10.0.0.9:7000", .data_dir = f->dir, .st = f->st, .oss = &f->oss};
	const uint32_t good[] = {5, 6}, other[] = {5, 7, 8};
	struct lode_mds_link *link;
	uint8_t uuid[16];
	char hops[64];

	f->oss.hops_checked = true;
	pthread_mutex_lock(&f->mds.lock);
	memcpy(f->mds.list_ids, good, sizeof(good));
	f->mds.list_n = 2;
	f->mds.list_count = 2;
	pthread_mutex_unlock(&f->mds.lock);
	assert_int_equal(lode_oss_uuid_load(f->dir, uuid), 0);
	lo.mds_addr = lode_server_address(f->srv, 0);
	lo.uuid = uuid;
	assert_int_equal(lode_mds_link_start(&link, &lo), 0);
	assert_true(wait_for(&f->mds, &f->mds.target_lists, 2, WAIT_MS));
	hops_text(&f->oss, hops, sizeof(hops));
	assert_string_equal(hops, "5,6");

	serve_list(f, other, 2, 3); /* says 3, holds 2 */
	hops_text(&f->oss, hops, sizeof(hops));
	assert_string_equal(hops, "5,6");
	serve_list(f, other, 3, 2); /* says 2, holds 3 */
	hops_text(&f->oss, hops, sizeof(hops));
	assert_string_equal(hops, "5,6");
	serve_list(f, other, 3, 3); /* whole: taken */
	hops_text(&f->oss, hops, sizeof(hops));
	assert_string_equal(hops, "5,7,8");
	lode_mds_link_stop(link);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_the_uuid_file_is_created_once_and_read_back, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_the_link_registers_heartbeats_reregisters_and_removes_orphans, setup,
		teardown),
	    cmocka_unit_test_setup_teardown(
		test_heartbeats_keep_flowing_while_orphan_removal_is_slow, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_the_hop_table_takes_only_whole_target_lists, setup,
					    teardown),
	};

	fixture_skip_without_io_uring();
	lode_log_init("test", LODE_LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
