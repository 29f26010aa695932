/* SPDX-License-Identifier: MIT */
/*
 * lode-mds request handling end to end: the MDS core behind a real lode_server on
 * loopback, driven through lode_rpc, so the wire encoding of every reply (attr, open
 * reply, readdir and target records, xattr sizes, orphans) is checked against the codec's
 * own reply walkers. Exits 77 (skip) if io_uring or loopback sockets are unavailable.
 */
#include <errno.h>

#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
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
#include "handlers.h"
#include "lease.h"
#include "mds_spec.h"
#include "rpc.h"
#include "server.h"
#include "writer.h"

static char dir[64];
static struct lode_mds mds;
static struct lode_server *srv;
static struct lode_rpc *rpc;
static struct lode_rpc_conn *conn;
static const struct lode_server_ops ops = {.on_request = lode_mds_on_request};

static void cleanup(void)
{
	lode_rpc_destroy(rpc);
	lode_server_stop(srv);
	if (mds.st)
		lode_mds_fini(&mds);
	if (dir[0])
		fixture_tmpdir_remove(dir);
}

/* One call: body = fixed + name1 + name2; optional request data; reply into buffers. */
static int call(uint8_t opc, const void *fixed, size_t flen, const char *n1, const char *n2,
		const void *data, size_t dlen, void *rep, uint32_t rep_max, void *rdata,
		uint64_t rdata_max, uint64_t *rdata_len)
{
	static char body[LODE_BODY_MAX];
	struct lode_call c = {0};
	struct iovec iov = {.iov_base = (void *)data, .iov_len = dlen};
	struct lode_buf b;
	int rc;

	lode_buf_init(&b, body, sizeof(body));
	if (flen)
		lode_buf_put(&b, fixed, flen);
	if (n1)
		lode_buf_put(&b, n1, strlen(n1));
	if (n2)
		lode_buf_put(&b, n2, strlen(n2));
	assert_int_equal(b.err, 0);
	c.opcode = opc;
	c.body = body;
	c.body_len = (uint32_t)b.len;
	if (dlen) {
		c.data = &iov;
		c.data_iovcnt = 1;
	}
	c.reply_body = rep;
	c.reply_body_max = rep_max;
	c.reply_data = rdata;
	c.reply_data_max = rdata_max;
	rc = lode_rpc_call(conn, &c);
	if (rdata_len)
		*rdata_len = c.reply_data_len;
	return rc;
}

static uint64_t mkdir_at(uint64_t parent, const char *name)
{
	struct lode_wire_mkdir_req r = {
	    .parent = parent, .mode = 0755, .name_len = (uint16_t)strlen(name)};
	struct lode_wire_attr a;

	assert_int_equal(
	    call(LODE_OP_MKDIR, &r, sizeof(r), name, NULL, NULL, 0, &a, sizeof(a), NULL, 0, NULL),
	    0);
	return a.ino;
}

static int create_at(uint64_t parent, const char *name, uint32_t flags,
		     struct lode_wire_open_rep *o)
{
	struct lode_wire_create_req r = {
	    .parent = parent, .mode = 0644, .flags = flags, .name_len = (uint16_t)strlen(name)};

	return call(LODE_OP_CREATE, &r, sizeof(r), name, NULL, NULL, 0, o, sizeof(*o), NULL, 0,
		    NULL);
}

static void test_hello_returns_the_cluster_id_and_the_mds_role(void **state)
{
	struct lode_wire_hello_req r = {.client_id = 7, .role = LODE_ROLE_CLIENT};
	struct lode_wire_hello_rep h;

	(void)state;
	assert_int_equal(
	    call(LODE_OP_HELLO, &r, sizeof(r), NULL, NULL, NULL, 0, &h, sizeof(h), NULL, 0, NULL),
	    0);
	assert_int_equal(h.cluster_id, mds.cluster_id);
	assert_int_equal(h.server_role, 1);
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_PING, NULL, 0, NULL, 0), 0);
}

static void test_targets_register_heartbeat_and_list(void **state)
{
	static char data[64 * 1024];
	struct lode_wire_target_list_rep rep;
	struct lode_wire_hello_rep h;
	uint64_t dlen, pos = 0;
	unsigned seen = 0;

	(void)state;
	for (unsigned i = 0; i < 3; i++) {
		char addr[32];
		struct lode_wire_target_register_req r = {
		    .uuid = {(uint8_t)(i + 1)}, .bytes_total = 1 << 30, .bytes_free = 1 << 29};

		snprintf(addr, sizeof(addr), "tcp://127.0.0.1:%u", 9000 + i);
		r.addr_len = (uint16_t)strlen(addr);
		assert_int_equal(call(LODE_OP_TARGET_REGISTER, &r, sizeof(r), addr, NULL, NULL, 0,
				      &h, sizeof(h), NULL, 0, NULL),
				 0);
		assert_int_equal(h.target_id, i + 1);
		assert_int_equal(h.cluster_id, mds.cluster_id);
	}
	struct lode_wire_target_heartbeat_req hb = {
	    .target_id = 2, .bytes_total = 1 << 30, .bytes_free = 1 << 20, .objects = 5};
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_TARGET_HEARTBEAT, &hb, sizeof(hb), NULL, 0),
			 0);
	hb.target_id = 77;
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_TARGET_HEARTBEAT, &hb, sizeof(hb), NULL, 0),
			 -ENOENT);

	assert_int_equal(call(LODE_OP_TARGET_LIST, NULL, 0, NULL, NULL, NULL, 0, &rep, sizeof(rep),
			      data, sizeof(data), &dlen),
			 0);
	assert_int_equal(rep.count, 3);
	for (;;) {
		const struct lode_wire_target *t;
		struct lode_name n;
		int rc = lode_target_next(data, dlen, &pos, &t, &n);

		assert_true(rc >= 0);
		if (rc == 0)
			break;
		assert_int_equal(t->state, LODE_TARGET_UP);
		if (t->target_id == 2)
			assert_int_equal(t->objects, 5);
		assert_int_equal(n.len, 20);
		seen++;
	}
	assert_int_equal(seen, 3);
}

static void test_create_commit_close_and_writers_shared_or_exclusive(void **state)
{
	struct lode_wire_open_rep o, o2;
	struct lode_wire_attr a;
	uint64_t d = mkdir_at(LODE_MDS_ROOT_INO, "ckpt");

	(void)state;
	assert_int_equal(create_at(d, "shard0", LODE_OPEN_WRITE | LODE_OPEN_EXCL, &o), 0);
	assert_true(o.handle != 0);
	assert_int_equal(o.lease_ms, LODE_LEASE_MS);
	assert_int_equal(o.layout.stripe_count, 3);
	assert_int_equal(o.layout.mirror_count, 2); /* automatic: two copies with 3 targets */
	assert_int_equal(o.degraded, 0);
	assert_int_equal(create_at(d, "shard0", LODE_OPEN_WRITE | LODE_OPEN_EXCL, &o2), -EEXIST);

	/* a second writer shares the file; an exclusive one (a repair) waits for both */
	struct lode_wire_open_req op = {.ino = o.attr.ino, .flags = LODE_OPEN_WRITE};
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_OPEN, &op, sizeof(op), &o2, sizeof(o2)), 0);
	assert_true(o2.handle != o.handle && !(o2.handle & LODE_LEASE_READ_BIT));
	struct lode_wire_open_req ox = {.ino = o.attr.ino,
					.flags = LODE_OPEN_WRITE | LODE_OPEN_EXCLUSIVE};
	struct lode_wire_open_rep o3;
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_OPEN, &ox, sizeof(ox), &o3, sizeof(o3)),
			 -EBUSY);

	struct lode_wire_commit_req cm = {.ino = o.attr.ino,
					  .handle = o.handle,
					  .size = 3 << 20,
					  .mtime_ns = 5,
					  .commit = LODE_COMMIT_SET};
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_COMMIT, &cm, sizeof(cm), &a, sizeof(a)), 0);
	assert_int_equal(a.size, 3 << 20);
	/* the second writer wrote less: its extending close keeps the larger end */
	struct lode_wire_commit_req cm2 = {
	    .ino = o.attr.ino, .handle = o2.handle, .size = 1 << 20, .commit = LODE_COMMIT_EXTEND};
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_CLOSE, &cm2, sizeof(cm2), &a, sizeof(a)), 0);
	assert_int_equal(a.size, 3 << 20);
	cm.size = 4 << 20;
	cm.commit = LODE_COMMIT_EXTEND;
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_CLOSE, &cm, sizeof(cm), &a, sizeof(a)), 0);
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_CLOSE, &cm, sizeof(cm), &a, sizeof(a)),
			 -EBADF);

	struct lode_wire_getattr_req g = {.ino = o.attr.ino};
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_GETATTR, &g, sizeof(g), &a, sizeof(a)), 0);
	assert_int_equal(a.size, 4 << 20);

	/* the file has no writer left: an exclusive one may open it now */
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_OPEN, &ox, sizeof(ox), &o3, sizeof(o3)), 0);
	struct lode_wire_commit_req cx = {.ino = o.attr.ino, .handle = o3.handle};
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_OPEN, &op, sizeof(op), &o2, sizeof(o2)),
			 -EBUSY);
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_CLOSE, &cx, sizeof(cx), &a, sizeof(a)), 0);

	/* readers get untracked handles */
	op.flags = LODE_OPEN_READ;
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_OPEN, &op, sizeof(op), &o2, sizeof(o2)), 0);
	assert_true(o2.handle & LODE_LEASE_READ_BIT);
	assert_int_equal(o2.layout.generation, 1);
	cm.handle = o2.handle;
	cm.commit = 0;
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_CLOSE, &cm, sizeof(cm), &a, sizeof(a)), 0);
	op.flags = LODE_OPEN_WRITE | LODE_OPEN_TRUNC;
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_OPEN, &op, sizeof(op), &o2, sizeof(o2)), 0);
	assert_int_equal(o2.attr.size, 0);
}

static void test_readdir_pages_decode_with_the_codec(void **state)
{
	static char data[LODE_READDIR_MAX * 280];
	struct lode_wire_readdir_rep rep;
	struct lode_wire_open_rep o;
	uint64_t d = mkdir_at(LODE_MDS_ROOT_INO, "list");
	uint64_t cookie = 0, dlen;
	unsigned total = 0;
	char name[48];

	(void)state;
	for (int i = 0; i < 25; i++) {
		snprintf(name, sizeof(name), "entry-%02d-%.*s", i, i, "xxxxxxxxxxxxxxxxxxxxxxxxx");
		assert_int_equal(create_at(d, name, LODE_OPEN_EXCL, &o), 0);
	}
	for (;;) {
		struct lode_wire_readdir_req r = {.ino = d, .cookie = cookie, .max_entries = 7};
		const struct lode_wire_readdir_rep *rp;
		uint64_t pos = 0;

		assert_int_equal(call(LODE_OP_READDIR, &r, sizeof(r), NULL, NULL, NULL, 0, &rep,
				      sizeof(rep), data, sizeof(data), &dlen),
				 0);
		assert_int_equal(lode_dec_readdir_rep(&rep, sizeof(rep), data, dlen, &rp), 0);
		for (;;) {
			const struct lode_wire_dirent *e;
			struct lode_name n;
			int rc = lode_readdir_next(data, dlen, &pos, &e, &n);

			assert_true(rc >= 0);
			if (rc == 0)
				break;
			assert_true(e->cookie > cookie);
			cookie = e->cookie;
			total++;
		}
		if (rep.eof)
			break;
	}
	assert_int_equal(total, 25);
}

static void test_xattrs_travel_as_data_and_sizes(void **state)
{
	struct lode_wire_xattr_rep rep;
	char buf[64];
	uint64_t dlen;
	uint64_t d = mkdir_at(LODE_MDS_ROOT_INO, "x");
	struct lode_wire_xattr_req r = {.ino = d, .name_len = 8};

	(void)state;
	assert_int_equal(call(LODE_OP_SETXATTR, &r, sizeof(r), "user.abc", NULL, "value", 5, NULL,
			      0, NULL, 0, NULL),
			 0);
	r.flags = LODE_XATTR_CREATE;
	assert_int_equal(
	    call(LODE_OP_SETXATTR, &r, sizeof(r), "user.abc", NULL, "v", 1, NULL, 0, NULL, 0, NULL),
	    -EEXIST);
	r.flags = 0;
	assert_int_equal(call(LODE_OP_GETXATTR, &r, sizeof(r), "user.abc", NULL, NULL, 0, &rep,
			      sizeof(rep), NULL, 0, NULL),
			 0);
	assert_int_equal(rep.size, 5);
	r.size = 2;
	assert_int_equal(call(LODE_OP_GETXATTR, &r, sizeof(r), "user.abc", NULL, NULL, 0, &rep,
			      sizeof(rep), buf, sizeof(buf), NULL),
			 -ERANGE);
	r.size = sizeof(buf);
	assert_int_equal(call(LODE_OP_GETXATTR, &r, sizeof(r), "user.abc", NULL, NULL, 0, &rep,
			      sizeof(rep), buf, sizeof(buf), &dlen),
			 0);
	assert_int_equal(dlen, 5);
	assert_memory_equal(buf, "value", 5);
	r.name_len = 0;
	assert_int_equal(call(LODE_OP_LISTXATTR, &r, sizeof(r), NULL, NULL, NULL, 0, &rep,
			      sizeof(rep), buf, sizeof(buf), &dlen),
			 0);
	assert_int_equal(dlen, 9);
	assert_memory_equal(buf, "user.abc", 9);
}

static void test_unlinked_files_become_orphans_for_their_targets(void **state)
{
	struct lode_wire_objid ids[16];
	struct lode_wire_orphan_list_rep rep;
	struct lode_wire_open_rep o;
	struct lode_wire_dirs_rep dirs;
	uint64_t d = mkdir_at(LODE_MDS_ROOT_INO, "orph"), dlen;
	struct lode_wire_lookup_req u = {.parent = d, .name_len = 1};
	struct lode_wire_orphan_req q = {.target_id = 1, .max = 16};

	(void)state;
	assert_int_equal(create_at(d, "f", LODE_OPEN_EXCL, &o), 0);
	/* the replies carry the parent's attributes after the change */
	assert_int_equal(o.parent.ino, d);
	assert_int_equal(call(LODE_OP_UNLINK, &u, sizeof(u), "f", NULL, NULL, 0, &dirs,
			      sizeof(dirs), NULL, 0, NULL),
			 0);
	assert_int_equal(dirs.dir[0].ino, d);
	assert_true(dirs.dir[0].mtime_ns >= o.parent.mtime_ns);
	assert_int_equal(dirs.dir[1].ino, 0);
	assert_int_equal(call(LODE_OP_ORPHAN_LIST, &q, sizeof(q), NULL, NULL, NULL, 0, &rep,
			      sizeof(rep), ids, sizeof(ids), &dlen),
			 0);
	assert_true(rep.count >= 1);
	assert_int_equal(dlen, rep.count * sizeof(ids[0]));
	assert_int_equal(
	    call(LODE_OP_ORPHAN_DONE, &q, sizeof(q), NULL, NULL, ids, dlen, NULL, 0, NULL, 0, NULL),
	    0);
	assert_int_equal(call(LODE_OP_ORPHAN_LIST, &q, sizeof(q), NULL, NULL, NULL, 0, &rep,
			      sizeof(rep), ids, sizeof(ids), &dlen),
			 0);
	assert_int_equal(rep.count, 0);
}

static void test_pipelined_creates_share_group_commits(void **state)
{
	enum { N = 200 };
	static struct lode_wire_create_req reqs[N];
	static char bodies[N][sizeof(struct lode_wire_create_req) + 16];
	static struct lode_wire_open_rep reps[N];
	static struct lode_call calls[N];
	uint64_t d = mkdir_at(LODE_MDS_ROOT_INO, "many");
	unsigned long before = lode_writer_batches(mds.writer);
	struct lode_rpc_batch b;

	(void)state;
	lode_rpc_batch_init(&b);
	for (int i = 0; i < N; i++) {
		char name[16];
		int len = snprintf(name, sizeof(name), "f%03d", i);

		reqs[i] = (struct lode_wire_create_req){
		    .parent = d, .mode = 0644, .flags = LODE_OPEN_EXCL, .name_len = (uint16_t)len};
		memcpy(bodies[i], &reqs[i], sizeof(reqs[i]));
		memcpy(bodies[i] + sizeof(reqs[i]), name, (size_t)len);
		calls[i] = (struct lode_call){.opcode = LODE_OP_CREATE,
					      .body = bodies[i],
					      .body_len = (uint32_t)(sizeof(reqs[i]) + len),
					      .reply_body = &reps[i],
					      .reply_body_max = sizeof(reps[i])};
		lode_rpc_batch_add(&b, conn, &calls[i]);
	}
	assert_int_equal(lode_rpc_batch_wait(&b), 0);
	lode_rpc_batch_destroy(&b);
	for (int i = 1; i < N; i++)
		assert_int_not_equal(reps[i].attr.ino, reps[i - 1].attr.ino);
	/* one fsync per batch, not per create */
	assert_true(lode_writer_batches(mds.writer) - before < N);
	print_message("%d creates in %lu commits\n", N, lode_writer_batches(mds.writer) - before);
}

static void test_a_backup_is_served_in_pages_until_its_last_byte(void **state)
{
	struct lode_wire_backup_start_req sq = {0};
	struct lode_wire_backup_start_rep sr = {0};
	struct lode_wire_backup_read_req q = {.backup_id = 12345, .max = 4096};
	struct lode_wire_backup_read_rep r;
	static char page[4096];
	uint64_t got = 0, n = 0, size = 0;
	uint32_t magic;
	int rc;

	(void)state;
	mkdir_at(LODE_MDS_ROOT_INO, "in-the-backup");
	/* no copy yet: any id is stale */
	assert_int_equal(call(LODE_OP_BACKUP_READ, &q, sizeof(q), NULL, NULL, NULL, 0, &r,
			      sizeof(r), page, sizeof(page), &n),
			 -ESTALE);
	assert_int_equal(call(LODE_OP_BACKUP_START, &sq, sizeof(sq), NULL, NULL, NULL, 0, &sr,
			      sizeof(sr), NULL, 0, NULL),
			 0);
	assert_true(sr.backup_id != 0);
	q.backup_id = sr.backup_id;
	for (int tries = 0;; tries++) {
		q.offset = got;
		rc = call(LODE_OP_BACKUP_READ, &q, sizeof(q), NULL, NULL, NULL, 0, &r, sizeof(r),
			  page, sizeof(page), &n);
		assert_int_equal(rc, 0);
		if (!r.ready) { /* being made: nothing is served yet */
			assert_int_equal(n, 0);
			assert_true(tries < 5000);
			usleep(1000);
			continue;
		}
		if (!got) {
			size = r.size;
			assert_true(size >= 4 * 4096); /* two meta pages and more */
			memcpy(&magic, page + 16, sizeof(magic));
			assert_int_equal(magic, 0xBEEFC0DEu); /* an LMDB data file */
		}
		assert_int_equal(r.size, size);
		assert_true(n > 0 && n <= q.max && got + n <= size);
		got += n;
		if (got == size)
			break;
	}
	/* the last page was taken: the copy is gone */
	q.offset = 0;
	assert_int_equal(call(LODE_OP_BACKUP_READ, &q, sizeof(q), NULL, NULL, NULL, 0, &r,
			      sizeof(r), page, sizeof(page), &n),
			 -ESTALE);
}

static void test_a_malformed_body_gets_an_error_and_the_server_goes_on(void **state)
{
	struct lode_wire_lookup_req r = {.parent = 1, .name_len = 200};
	struct lode_wire_attr a;

	(void)state;
	assert_int_equal(call(LODE_OP_LOOKUP, &r, sizeof(r), "short", NULL, NULL, 0, &a, sizeof(a),
			      NULL, 0, NULL),
			 -EPROTO);
	r.name_len = 0;
	r.reserved1 = 1;
	assert_true(call(LODE_OP_LOOKUP, &r, sizeof(r), NULL, NULL, NULL, 0, &a, sizeof(a), NULL, 0,
			 NULL) < 0);
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_PING, NULL, 0, NULL, 0), 0);
	struct lode_wire_objid obj = {.ino = 1};
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_OBJ_STAT, &obj, sizeof(obj), NULL, 0),
			 -EOPNOTSUPP);
}

/* A name-adding call with LODE_WIRE_F_GRANT and token; *renewed and *given from its reply. */
static int call_granted(uint8_t opc, const void *fixed, size_t flen, const char *name,
			uint64_t token, void *rep, uint32_t rep_max, bool *renewed, uint64_t *given)
{
	char body[512];
	struct lode_call c = {.opcode = opc,
			      .body = body,
			      .body_len = (uint32_t)(flen + strlen(name)),
			      .grant_flag = true,
			      .grant = token,
			      .reply_body = rep,
			      .reply_body_max = rep_max};
	int rc;

	memcpy(body, fixed, flen);
	memcpy(body + flen, name, strlen(name));
	rc = lode_rpc_call(conn, &c);
	*renewed = c.reply_grant_flag;
	*given = c.reply_grant;
	return rc;
}

static _Atomic int other_done; /* 0: in flight; 1: answered */

static void other_create_done(struct lode_call *c)
{
	(void)c;
	atomic_store(&other_done, 1);
}

/*
 * Grants live a minute in this MDS (opts.grant_ms), so only a grant given back can let
 * another client's name, held for it, go on within the test. The holder's own name after
 * the end is neither held (the rpc's 5 s timeout would fail it) nor renewed.
 */
static void test_a_name_held_for_a_grant_goes_on_when_the_holder_gives_it_back(void **state)
{
	struct lode_wire_mkdir_req mr = {.parent = 1, .mode = 0755, .name_len = 7};
	struct lode_wire_create_req cr = {.mode = 0644,
					  .flags =
					      LODE_OPEN_WRITE | LODE_OPEN_CREATE | LODE_OPEN_EXCL,
					  .name_len = 5};
	struct lode_wire_attr dir_attr;
	struct lode_wire_open_rep mine, theirs;
	struct lode_wire_grant_return_req gr;
	char other_body[512];
	struct lode_call other = {.opcode = LODE_OP_CREATE,
				  .body = other_body,
				  .body_len = (uint32_t)(sizeof(cr) + 5),
				  .reply_body = &theirs,
				  .reply_body_max = sizeof(theirs),
				  .timeout_ms = 120000,
				  .done = other_create_done};
	uint64_t token, given, waits = __atomic_load_n(&mds.grant_waits, __ATOMIC_RELAXED);
	bool renewed;

	(void)state;
	assert_int_equal(call_granted(LODE_OP_MKDIR, &mr, sizeof(mr), "granted", 0, &dir_attr,
				      sizeof(dir_attr), &renewed, &token),
			 0);
	assert_true(token != 0);
	/* another client's name: it ends the grant and is held */
	cr.parent = dir_attr.ino;
	memcpy(other_body, &cr, sizeof(cr));
	memcpy(other_body + sizeof(cr), "other", 5);
	lode_rpc_submit(conn, &other);
	for (int i = 0; i < 10000 && __atomic_load_n(&mds.grant_waits, __ATOMIC_RELAXED) == waits;
	     i++)
		usleep(1000);
	assert_int_equal(__atomic_load_n(&mds.grant_waits, __ATOMIC_RELAXED), waits + 1);
	/* the holder's next name goes on at once, not renewed */
	assert_int_equal(call_granted(LODE_OP_CREATE, &cr, sizeof(cr), "mine1", token, &mine,
				      sizeof(mine), &renewed, &given),
			 0);
	assert_false(renewed);
	assert_int_equal(atomic_load(&other_done), 0);
	/* given back: the held name goes on now, a minute before the grant would lapse */
	gr = (struct lode_wire_grant_return_req){.dir = dir_attr.ino, .token = token};
	assert_int_equal(lode_rpc_simple(conn, LODE_OP_GRANT_RETURN, &gr, sizeof(gr), NULL, 0), 0);
	for (int i = 0; i < 30000 && !atomic_load(&other_done); i++)
		usleep(1000);
	assert_int_equal(atomic_load(&other_done), 1);
	assert_int_equal(other.status, 0);
	assert_int_equal(__atomic_load_n(&mds.grants_returned, __ATOMIC_RELAXED), 1);
}

int main(void)
{
	struct lode_mds_opts mo = {
	    .map_size = 256ull << 20, .orphan_grace_ns = 0, .grant_ms = 60000};
	struct lode_server_opts so = {
	    .listen = {"tcp://127.0.0.1:0"}, .threads = 2, .ops = &ops, .ctx = &mds};
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hello_returns_the_cluster_id_and_the_mds_role),
	    cmocka_unit_test(test_targets_register_heartbeat_and_list),
	    cmocka_unit_test(test_create_commit_close_and_writers_shared_or_exclusive),
	    cmocka_unit_test(test_readdir_pages_decode_with_the_codec),
	    cmocka_unit_test(test_xattrs_travel_as_data_and_sizes),
	    cmocka_unit_test(test_unlinked_files_become_orphans_for_their_targets),
	    cmocka_unit_test(test_pipelined_creates_share_group_commits),
	    cmocka_unit_test(test_a_malformed_body_gets_an_error_and_the_server_goes_on),
	    cmocka_unit_test(test_a_backup_is_served_in_pages_until_its_last_byte),
	    cmocka_unit_test(test_a_name_held_for_a_grant_goes_on_when_the_holder_gives_it_back),
	};
	char why[256];
	int rc;

	rc = fixture_tmpdir_make(dir, sizeof(dir), "lode-mds-srv");
	if (rc) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(-rc));
		return 1;
	}
	atexit(cleanup);
	mo.dir = dir;
	rc = lode_mds_init(&mds, &mo, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "lode_mds_init: %s\n", why);
		return 1;
	}
	rc = lode_server_start(&srv, &so);
	if (rc == -ENOSYS || rc == -EPERM || rc == -EACCES) {
		fprintf(stderr, "skip: cannot start a server here: %s\n", strerror(-rc));
		return 77;
	}
	if (rc) {
		fprintf(stderr, "lode_server_start: %s\n", strerror(-rc));
		return 1;
	}
	if (lode_rpc_create(&rpc, 5000) ||
	    lode_rpc_conn_open(rpc, lode_server_address(srv, 0), &conn)) {
		fprintf(stderr, "cannot create the rpc client\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
