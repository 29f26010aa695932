/* SPDX-License-Identifier: MIT */
/*
 * Capabilities for data (issue 13) against a real local cluster (MDS + 2 OSS, keys, the
 * MDS's --cap-lifetime 2): a raw peer holding a client key, talking to an OSS directly,
 * can read, write, truncate, remove or list nothing without a capability the MDS signed;
 * a forged one, one for another file, a read-only one used for a write and an expired one
 * are refused, and the object on disk stays as it was. OPEN's reply carries the handle's
 * capability: read for a reader, read and write for the lease's holder. A chained write naming a
 * hop the MDS does not list is not forwarded there (nothing connects to it). And liblode, holding
 * a client key, reads and writes a file across several capability lifetimes without an
 * error: it renews them as it goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "auth.h"
#include "cluster_client.h"
#include "codec.h"
#include "lode/lode.h"
#include "rpc.h"

#define MiB	 (1ull << 20)
#define LIFE_S	 2 /* the MDS's --cap-lifetime in this test */
#define FILE_LEN (4 * LODE_CHUNK_SIZE)

static struct test_cluster tc;
static struct lode_keyring keys;  /* the cluster key: every role */
static char client_key[PATH_MAX]; /* a client's key only */
static char oss_addr[2][160];
static uint32_t oss_id[2];

static void read_addr(int i)
{
	char path[PATH_MAX];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/oss%d/addr", tc.dir, i);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(oss_addr[i], 1, sizeof(oss_addr[i]) - 1, f);
	fclose(f);
	while (n && (oss_addr[i][n - 1] == '\n' || oss_addr[i][n - 1] == ' '))
		n--;
	oss_addr[i][n] = 0;
}

static int group_setup(void **state)
{
	char path[PATH_MAX], err[256];
	char opts[64];

	(void)state;
	snprintf(opts, sizeof(opts), "--cap-lifetime %d", LIFE_S);
	if (cluster_up_opts(&tc, 2, opts))
		return -1;
	snprintf(path, sizeof(path), "%s/cluster.key", tc.dir);
	if (lode_keyring_load(path, &keys, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	snprintf(client_key, sizeof(client_key), "%s/client.key", tc.dir);
	if (lode_key_write_role(&keys, LODE_AUTH_CLIENT, client_key, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	cluster_down(&tc);
	return 0;
}

static struct lode_client *client_as(const char *key_file, unsigned max_inflight)
{
	struct lode_client_opts o = {
	    .size = sizeof(o), .key_file = key_file, .max_inflight = max_inflight};
	struct lode_client *c = NULL;

	assert_int_equal(lode_connect(tc.mds, &o, &c), 0);
	return c;
}

/* A raw connection to addr proving role's key. */
static struct lode_rpc_conn *raw_conn(struct lode_rpc **rpc, const char *addr, unsigned role)
{
	struct lode_rpc_conn *conn = NULL;

	assert_int_equal(lode_rpc_create(rpc, 5000), 0);
	assert_int_equal(lode_rpc_set_auth(*rpc, &keys, role), 0);
	assert_int_equal(lode_rpc_conn_open(*rpc, addr, &conn), 0);
	return conn;
}

/* Maps target ids to the OSS's addresses, from the MDS's table. */
static void learn_targets(void)
{
	size_t cap = LODE_TARGETS_MAX * (sizeof(struct lode_wire_target) + LODE_ADDR_MAX + 8);
	struct lode_wire_target_list_rep rep;
	char *data = malloc(cap);
	struct lode_rpc *rpc;
	struct lode_rpc_conn *conn = raw_conn(&rpc, tc.mds, LODE_AUTH_CLIENT);
	struct lode_call call = {.opcode = LODE_OP_TARGET_LIST,
				 .reply_body = &rep,
				 .reply_body_max = sizeof(rep),
				 .reply_data = data,
				 .reply_data_max = cap};
	const struct lode_wire_target *t;
	struct lode_name addr;
	uint64_t pos = 0;

	assert_non_null(data);
	assert_int_equal(lode_rpc_call(conn, &call), 0);
	read_addr(0);
	read_addr(1);
	while (lode_target_next(data, call.reply_data_len, &pos, &t, &addr) == 1)
		for (int i = 0; i < 2; i++)
			if (addr.len == strlen(oss_addr[i]) &&
			    !memcmp(addr.ptr, oss_addr[i], addr.len))
				oss_id[i] = t->target_id;
	assert_true(oss_id[0] && oss_id[1]);
	free(data);
	lode_rpc_destroy(rpc);
}

/* CAP_GET at the MDS as role: 0 and *out, or -errno. */
static int cap_get_gen(unsigned role, uint64_t ino, uint64_t generation, uint32_t rights,
		       uint64_t handle, struct lode_wire_cap *out)
{
	struct lode_wire_cap_req req = {
	    .ino = ino, .rights = rights, .handle = handle, .generation = generation};
	struct lode_wire_cap_rep rep;
	struct lode_rpc *rpc;
	struct lode_rpc_conn *conn = raw_conn(&rpc, tc.mds, role);
	int rc;

	req.cred.uid = (uint32_t)getuid();
	req.cred.gid = (uint32_t)getgid();
	rc = lode_rpc_simple(conn, LODE_OP_CAP_GET, &req, sizeof(req), &rep, sizeof(rep));
	if (!rc)
		*out = rep.cap;
	lode_rpc_destroy(rpc);
	return rc;
}

static int cap_get(unsigned role, uint64_t ino, uint32_t rights, uint64_t handle,
		   struct lode_wire_cap *out)
{
	return cap_get_gen(role, ino, 0, rights, handle, out);
}

/* The file every raw test aims at: one stripe, a copy on each OSS, FILE_LEN pattern bytes
 * (seed 7). */
static struct lode_wire_objid target_file(struct lode_client *c, const char *path)
{
	struct lode_layout l = {.stripe_size = (uint32_t)MiB, .stripe_count = 1, .mirror_count = 2};
	struct lode_wire_objid id = {0};
	struct lode_stat st;
	struct lode_file *f;

	cluster_write_file(c, path, FILE_LEN, 7, FILE_LEN, &l);
	assert_int_equal(lode_open(c, path, O_RDONLY, 0, &f), 0);
	assert_int_equal(lode_fstat(f, &st), 0);
	lode_file_layout(f, &l);
	lode_close(f);
	id.ino = st.ino;
	id.generation = l.generation;
	id.stripe = 0;
	return id;
}

static int obj_read(struct lode_rpc_conn *conn, const struct lode_wire_objid *id,
		    const struct lode_wire_cap *cap, char *buf)
{
	struct lode_wire_obj_read_req req = {.obj = *id, .offset = 0, .length = FILE_LEN};
	uint64_t rbody[(sizeof(struct lode_wire_obj_read_rep) + 8 * 64) / 8];
	struct lode_call call = {.opcode = LODE_OP_OBJ_READ,
				 .body = &req,
				 .body_len = sizeof(req),
				 .cap = cap,
				 .reply_body = rbody,
				 .reply_body_max = sizeof(rbody),
				 .reply_data = buf,
				 .reply_data_max = FILE_LEN};

	return lode_rpc_call(conn, &call);
}

/* A write of one chunk of zeros at 0, its checksum computed by the peer itself; with a
 * chain of nhops hops when nhops >= 0 (statuses into st). */
static int obj_write(struct lode_rpc_conn *conn, const struct lode_wire_objid *id,
		     const struct lode_wire_cap *cap, int nhops,
		     const struct lode_wire_chain_hop *hops, int32_t *st)
{
	static char zeros[LODE_CHUNK_SIZE];
	uint64_t body[LODE_BODY_MAX / 8] = {0};
	struct lode_wire_obj_write_req *req = (struct lode_wire_obj_write_req *)body;
	struct lode_wire_obj_chain_rep rep;
	struct iovec iov = {zeros, sizeof(zeros)};
	size_t len = sizeof(*req) + 8;
	struct lode_call call = {.opcode = LODE_OP_OBJ_WRITE,
				 .body = body,
				 .cap = cap,
				 .data = &iov,
				 .data_iovcnt = 1,
				 .reply_body = &rep,
				 .reply_body_max = sizeof(rep)};
	int rc;

	req->obj = *id;
	req->nchunks = 1;
	body[sizeof(*req) / 8] = lode_chunk_sum(zeros, sizeof(zeros));
	if (nhops >= 0) {
		struct lode_wire_chain ch = {
		    .self_target = 0, .count = (uint16_t)nhops, .timeout_ms = 3000};

		req->flags = LODE_OBJ_F_CHAIN;
		memcpy((char *)body + len, &ch, sizeof(ch));
		memcpy((char *)body + len + sizeof(ch), hops, (size_t)nhops * sizeof(*hops));
		len += lode_chain_size((unsigned)nhops);
	}
	call.body_len = (uint32_t)len;
	rc = lode_rpc_call(conn, &call);
	if (!rc && st)
		memcpy(st, rep.status, sizeof(rep.status));
	return rc;
}

static int obj_simple(struct lode_rpc_conn *conn, uint8_t op, const void *body, uint32_t len,
		      const struct lode_wire_cap *cap)
{
	struct lode_wire_obj_rep rep;
	struct lode_call call = {.opcode = op,
				 .body = body,
				 .body_len = len,
				 .cap = cap,
				 .reply_body = &rep,
				 .reply_body_max = sizeof(rep)};

	return lode_rpc_call(conn, &call);
}

/* The file still holds its pattern, on both copies (read through each OSS as an admin). */
static void assert_untouched(const struct lode_wire_objid *id, struct lode_client *c,
			     const char *path)
{
	static char buf[FILE_LEN];

	for (int i = 0; i < 2; i++) {
		struct lode_rpc *rpc;
		struct lode_rpc_conn *conn = raw_conn(&rpc, oss_addr[i], LODE_AUTH_ADMIN);

		memset(buf, 0, sizeof(buf));
		assert_int_equal(obj_read(conn, id, NULL, buf), 0);
		assert_int_equal(pattern_check(buf, sizeof(buf), 7, 0), -1);
		lode_rpc_destroy(rpc);
	}
	assert_int_equal(cluster_check_file(c, path, FILE_LEN, 7, FILE_LEN), FILE_LEN);
}

static void test_a_raw_client_touches_no_object_without_a_capability(void **state)
{
	static char buf[FILE_LEN];
	struct lode_client *c = client_as(client_key, 0);
	struct lode_wire_objid id = target_file(c, "/raw");
	struct lode_wire_obj_truncate_req tr = {.obj = id, .size = 0};
	struct lode_wire_obj_allocate_req ar = {.obj = id, .length = MiB};
	struct lode_wire_obj_list_req lr = {.max = 16};
	struct lode_rpc *rpc;
	struct lode_rpc_conn *conn;

	(void)state;
	learn_targets();
	conn = raw_conn(&rpc, oss_addr[0], LODE_AUTH_CLIENT);
	assert_int_equal(obj_read(conn, &id, NULL, buf), -EACCES);
	assert_int_equal(obj_write(conn, &id, NULL, -1, NULL, NULL), -EACCES);
	assert_int_equal(obj_simple(conn, LODE_OP_OBJ_TRUNCATE, &tr, sizeof(tr), NULL), -EACCES);
	assert_int_equal(obj_simple(conn, LODE_OP_OBJ_ALLOCATE, &ar, sizeof(ar), NULL), -EACCES);
	assert_int_equal(obj_simple(conn, LODE_OP_OBJ_STAT, &id, sizeof(id), NULL), -EACCES);
	assert_int_equal(obj_simple(conn, LODE_OP_OBJ_FSYNC, &id, sizeof(id), NULL), -EACCES);
	/* removing and listing are for targets and admins, whatever the client holds */
	assert_int_equal(obj_simple(conn, LODE_OP_OBJ_REMOVE, &id, sizeof(id), NULL), -EACCES);
	{
		struct lode_wire_obj_list_rep rep;
		struct lode_wire_objinfo info[16];
		struct lode_call call = {.opcode = LODE_OP_OBJ_LIST,
					 .body = &lr,
					 .body_len = sizeof(lr),
					 .reply_body = &rep,
					 .reply_body_max = sizeof(rep),
					 .reply_data = info,
					 .reply_data_max = sizeof(info)};

		assert_int_equal(lode_rpc_call(conn, &call), -EACCES);
	}
	lode_rpc_destroy(rpc);
	assert_untouched(&id, c, "/raw");
	lode_disconnect(c);
}

static void test_forged_foreign_read_only_and_expired_capabilities_are_refused(void **state)
{
	static char buf[FILE_LEN];
	struct lode_client *c = client_as(client_key, 0);
	struct lode_wire_objid id = target_file(c, "/forged");
	struct lode_wire_objid other = target_file(c, "/other");
	struct lode_wire_obj_truncate_req tr = {.obj = id, .size = 0};
	struct lode_wire_cap ro, forged, rw;
	struct lode_rpc *rpc;
	struct lode_rpc_conn *conn;

	(void)state;
	learn_targets();
	/* a client gets read rights by permission, write rights only with the lease */
	assert_int_equal(cap_get(LODE_AUTH_CLIENT, id.ino, LODE_CAP_READ, 0, &ro), 0);
	assert_int_equal(ro.rights, LODE_CAP_READ);
	assert_int_not_equal(cap_get(LODE_AUTH_CLIENT, id.ino, LODE_CAP_WRITE, 12345, &rw), 0);
	/* nor for a generation the file has not reached */
	assert_int_equal(
	    cap_get_gen(LODE_AUTH_CLIENT, id.ino, id.generation + 1, LODE_CAP_READ, 0, &rw),
	    -ESTALE);
	assert_int_equal(
	    cap_get_gen(LODE_AUTH_CLIENT, id.ino, id.generation, LODE_CAP_READ, 0, &rw), 0);
	assert_int_equal(rw.generation, id.generation);

	conn = raw_conn(&rpc, oss_addr[0], LODE_AUTH_CLIENT);
	/* the genuine read capability reads */
	assert_int_equal(obj_read(conn, &id, &ro, buf), 0);
	assert_int_equal(pattern_check(buf, sizeof(buf), 7, 0), -1);
	/* but writes nothing, truncates nothing */
	assert_int_equal(obj_write(conn, &id, &ro, -1, NULL, NULL), -EACCES);
	assert_int_equal(obj_simple(conn, LODE_OP_OBJ_TRUNCATE, &tr, sizeof(tr), &ro), -EACCES);
	/* rights raised by hand: the MAC no longer matches */
	forged = ro;
	forged.rights = LODE_CAP_READ | LODE_CAP_WRITE;
	assert_int_equal(obj_write(conn, &id, &forged, -1, NULL, NULL), -EACCES);
	/* a MAC made up */
	forged = ro;
	for (size_t i = 0; i < sizeof(forged.mac); i++)
		forged.mac[i] ^= 0x5a;
	assert_int_equal(obj_read(conn, &id, &forged, buf), -EACCES);
	/* another file's capability, another generation, a later expiry */
	assert_int_equal(obj_read(conn, &other, &ro, buf), -EACCES);
	forged = ro;
	forged.generation++;
	assert_int_equal(obj_read(conn, &id, &forged, buf), -EACCES);
	forged = ro;
	forged.expiry_ms += 3600 * 1000;
	assert_int_equal(obj_read(conn, &id, &forged, buf), -EACCES);
	/* and once its lifetime has passed, the genuine one is expired */
	usleep((LIFE_S * 1000 + 300) * 1000);
	assert_int_equal(obj_read(conn, &id, &ro, buf), -EKEYEXPIRED);
	lode_rpc_destroy(rpc);
	assert_untouched(&id, c, "/forged");

	/* the positive control: an admin's read-write capability writes through the same
	 * raw connection */
	assert_int_equal(cap_get(LODE_AUTH_ADMIN, id.ino, LODE_CAP_WRITE, 0, &rw), 0);
	conn = raw_conn(&rpc, oss_addr[0], LODE_AUTH_CLIENT);
	assert_int_equal(obj_write(conn, &id, &rw, -1, NULL, NULL), 0);
	assert_int_equal(obj_read(conn, &id, &rw, buf), 0);
	for (size_t i = 0; i < LODE_CHUNK_SIZE; i++)
		assert_int_equal(buf[i], 0);
	lode_rpc_destroy(rpc);
	lode_disconnect(c);
}

/* OPEN at the MDS as a raw client with flags: 0 and *out, or -errno. */
static int raw_open(struct lode_rpc_conn *mds, uint64_t ino, uint32_t flags,
		    struct lode_wire_open_rep *out)
{
	struct lode_wire_open_req req = {.ino = ino, .flags = flags};

	req.cred.uid = (uint32_t)getuid();
	req.cred.gid = (uint32_t)getgid();
	return lode_rpc_simple(mds, LODE_OP_OPEN, &req, sizeof(req), out, sizeof(*out));
}

static void test_open_replies_carry_the_handles_capability(void **state)
{
	static char buf[FILE_LEN];
	struct lode_client *c = client_as(client_key, 0);
	struct lode_wire_objid id = target_file(c, "/opened");
	struct lode_wire_open_rep ro, rw;
	struct lode_wire_commit_req cl = {.ino = id.ino};
	struct lode_wire_attr attr;
	struct lode_rpc *mrpc, *orpc;
	struct lode_rpc_conn *mds, *oss;

	(void)state;
	learn_targets();
	mds = raw_conn(&mrpc, tc.mds, LODE_AUTH_CLIENT);
	oss = raw_conn(&orpc, oss_addr[0], LODE_AUTH_CLIENT);

	/* a read-only OPEN's reply holds a read capability for the file's objects */
	assert_int_equal(raw_open(mds, id.ino, LODE_OPEN_READ, &ro), 0);
	assert_int_equal(ro.cap.cap.ino, id.ino);
	assert_int_equal(ro.cap.cap.generation, id.generation);
	assert_int_equal(ro.cap.cap.rights, LODE_CAP_READ);
	assert_int_equal(ro.cap.lifetime_ms, LIFE_S * 1000);
	assert_int_equal(obj_read(oss, &id, &ro.cap.cap, buf), 0);
	assert_int_equal(pattern_check(buf, sizeof(buf), 7, 0), -1);
	assert_int_equal(obj_write(oss, &id, &ro.cap.cap, -1, NULL, NULL), -EACCES);

	/* a write OPEN's, read and write, for the lease's holder */
	assert_int_equal(raw_open(mds, id.ino, LODE_OPEN_READ | LODE_OPEN_WRITE, &rw), 0);
	assert_true(rw.lease_ms > 0);
	assert_int_equal(rw.cap.cap.rights, LODE_CAP_READ | LODE_CAP_WRITE);
	assert_int_equal(obj_write(oss, &id, &rw.cap.cap, -1, NULL, NULL), 0);
	memset(buf, 0x11, sizeof(buf));
	assert_int_equal(obj_read(oss, &id, &rw.cap.cap, buf), 0);
	for (size_t i = 0; i < LODE_CHUNK_SIZE; i++)
		assert_int_equal(buf[i], 0);
	cl.handle = rw.handle;
	assert_int_equal(lode_rpc_simple(mds, LODE_OP_CLOSE, &cl, sizeof(cl), &attr, sizeof(attr)),
			 0);

	/* they expire as CAP_GET's do */
	usleep((LIFE_S * 1000 + 300) * 1000);
	assert_int_equal(obj_read(oss, &id, &ro.cap.cap, buf), -EKEYEXPIRED);
	lode_rpc_destroy(orpc);
	lode_rpc_destroy(mrpc);
	lode_disconnect(c);
}

/*
 * A write handle is all that CAP_GET for writing (and COMMIT, and CLOSE) asks of a writer:
 * whoever names it holds the file's write lease. So nobody but its holder may be able to
 * name it. A client that opens a file for writing right after another client did, and
 * tries the handles around its own, gets no write capability for the other's file
 * (handles were numbered in sequence: the other's was the one below).
 */
static void test_another_writers_handle_cannot_be_guessed(void **state)
{
	struct lode_client *c = client_as(client_key, 0);
	struct lode_wire_objid victim = target_file(c, "/victim");
	struct lode_wire_objid own = target_file(c, "/own");
	struct lode_wire_cap_req req = {.ino = victim.ino,
					.rights = LODE_CAP_READ | LODE_CAP_WRITE};
	struct lode_wire_open_rep v, o;
	struct lode_wire_commit_req cl = {0};
	struct lode_wire_cap_rep rep;
	struct lode_wire_attr attr;
	struct lode_rpc *mrpc;
	struct lode_rpc_conn *mds;
	unsigned granted = 0;

	(void)state;
	mds = raw_conn(&mrpc, tc.mds, LODE_AUTH_CLIENT);
	assert_int_equal(raw_open(mds, victim.ino, LODE_OPEN_READ | LODE_OPEN_WRITE, &v), 0);
	assert_int_equal(raw_open(mds, own.ino, LODE_OPEN_READ | LODE_OPEN_WRITE, &o), 0);
	req.cred.uid = (uint32_t)getuid();
	req.cred.gid = (uint32_t)getgid();
	req.handle = v.handle; /* the holder's own handle works */
	assert_int_equal(
	    lode_rpc_simple(mds, LODE_OP_CAP_GET, &req, sizeof(req), &rep, sizeof(rep)), 0);
	for (int d = -256; d <= 256; d++) {
		req.handle = o.handle + (uint64_t)(int64_t)d;
		if (d &&
		    !lode_rpc_simple(mds, LODE_OP_CAP_GET, &req, sizeof(req), &rep, sizeof(rep)))
			granted++;
	}
	assert_int_equal(granted, 0);
	cl.ino = victim.ino;
	cl.handle = v.handle;
	assert_int_equal(lode_rpc_simple(mds, LODE_OP_CLOSE, &cl, sizeof(cl), &attr, sizeof(attr)),
			 0);
	cl.ino = own.ino;
	cl.handle = o.handle;
	assert_int_equal(lode_rpc_simple(mds, LODE_OP_CLOSE, &cl, sizeof(cl), &attr, sizeof(attr)),
			 0);
	lode_rpc_destroy(mrpc);
	lode_disconnect(c);
}

/* REPORT_COPY of a copy of id on oss_id[0], with cap (NULL: none), as role. */
static int report(unsigned role, const struct lode_wire_objid *id, const struct lode_wire_cap *cap)
{
	struct lode_wire_report_req req = {.ino = id->ino,
					   .generation = id->generation,
					   .stripe = 0,
					   .target_id = oss_id[0],
					   .kind = LODE_REPORT_BAD_DATA};
	struct lode_call call = {
	    .opcode = LODE_OP_REPORT_COPY, .body = &req, .body_len = sizeof(req), .cap = cap};
	struct lode_rpc *rpc;
	struct lode_rpc_conn *conn = raw_conn(&rpc, tc.mds, role);
	int rc = lode_rpc_call(conn, &call);

	lode_rpc_destroy(rpc);
	return rc;
}

/*
 * Marking a copy degraded strips a file of its redundancy until a repair: a client must
 * prove with a capability for the file (read rights will do) that it may read it. Without
 * one, with one for another file or a forged one, the copy stays good; with the file's
 * own it is marked. An admin (fsck, repair) needs none.
 */
static void test_a_copy_is_reported_degraded_only_with_a_capability_for_its_file(void **state)
{
	struct lode_client *c = client_as(client_key, 0);
	struct lode_wire_objid id = target_file(c, "/reported");
	struct lode_wire_objid other = target_file(c, "/other");
	struct lode_wire_cap mine, theirs, forged;
	struct lode_layout l;
	uint64_t degraded;

	(void)state;
	learn_targets();
	assert_int_equal(cap_get(LODE_AUTH_CLIENT, id.ino, LODE_CAP_READ, 0, &mine), 0);
	assert_int_equal(cap_get(LODE_AUTH_CLIENT, other.ino, LODE_CAP_READ, 0, &theirs), 0);
	forged = mine;
	forged.mac[0] ^= 1;
	assert_int_equal(report(LODE_AUTH_CLIENT, &id, NULL), -EACCES);
	assert_int_equal(report(LODE_AUTH_CLIENT, &id, &theirs), -EACCES);
	assert_int_equal(report(LODE_AUTH_CLIENT, &id, &forged), -EACCES);
	assert_int_equal(lode_layout_info(c, "/reported", &l, &degraded), 0);
	assert_int_equal(degraded, 0);
	assert_int_equal(report(LODE_AUTH_CLIENT, &id, &mine), 0);
	assert_int_equal(lode_layout_info(c, "/reported", &l, &degraded), 0);
	assert_int_not_equal(degraded, 0);
	/* an admin needs none */
	assert_int_equal(report(LODE_AUTH_ADMIN, &other, NULL), 0);
	lode_disconnect(c);
}

/* A writer holding a client key (no admin rights) whose write to one copy fails reports
 * that copy with its handle's capability: the MDS takes it, marks the copy degraded and
 * the write is acknowledged on the other copy (without the report it could not be). */
static void test_a_client_keys_writer_reports_a_failed_copy_with_its_capability(void **state)
{
	struct lode_layout l = {.stripe_size = (uint32_t)MiB, .stripe_count = 1, .mirror_count = 2};
	static char buf[FILE_LEN];
	struct lode_client *c;
	struct lode_file *f;
	uint64_t degraded;

	(void)state;
	learn_targets();
	l.targets[0] = oss_id[0];
	l.targets[1] = oss_id[1];
	c = client_as(client_key, 0);
	assert_int_equal(lode_create_with_layout(c, "/failing", 0644, &l, &f), 0);
	assert_int_equal(cluster_kill(&tc, "oss1", 1), 0);
	pattern_fill(buf, sizeof(buf), 9, 0);
	assert_int_equal(lode_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	assert_int_equal(lode_fsync(f), 0);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_layout_info(c, "/failing", &l, &degraded), 0);
	assert_int_equal(degraded, 2); /* the copy on the OSS that went down */
	lode_disconnect(c);
	assert_int_equal(cluster_restart(&tc), 0);
}

static void test_a_chain_hop_the_mds_does_not_list_is_never_contacted(void **state)
{
	struct lode_client *c = client_as(client_key, 0);
	struct lode_wire_objid id = target_file(c, "/chain");
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t slen = sizeof(sa);
	struct lode_wire_chain_hop hop = {0};
	struct lode_wire_cap rw;
	struct lode_rpc *rpc;
	struct lode_rpc_conn *conn;
	struct pollfd pfd;
	int32_t st[LODE_CHAIN_MAX + 1];
	int lfd;

	(void)state;
	learn_targets();
	/* a listener standing for "any address a peer likes" */
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(lfd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &slen), 0);

	assert_int_equal(cap_get(LODE_AUTH_ADMIN, id.ino, LODE_CAP_WRITE, 0, &rw), 0);
	conn = raw_conn(&rpc, oss_addr[0], LODE_AUTH_CLIENT);
	/* the second OSS's id at the listener's address, and an id no target has */
	for (int k = 0; k < 2; k++) {
		hop.target_id = k == 0 ? oss_id[1] : 999;
		hop.addr_len = (uint16_t)snprintf(hop.addr, sizeof(hop.addr), "tcp://127.0.0.1:%u",
						  ntohs(sa.sin_port));
		memset(st, 0x7f, sizeof(st));
		assert_int_equal(obj_write(conn, &id, &rw, 1, &hop, st), 0);
		assert_int_equal(st[0], 0);	    /* its own copy: written */
		assert_int_equal(st[1], ECANCELED); /* the hop: never reached, send it yourself */
	}
	pfd.fd = lfd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 500), 0); /* nobody connected */
	close(lfd);
	/* the real hop, as the MDS lists it, is forwarded to */
	memset(&hop, 0, sizeof(hop));
	hop.target_id = oss_id[1];
	hop.addr_len = (uint16_t)snprintf(hop.addr, sizeof(hop.addr), "%s", oss_addr[1]);
	assert_int_equal(obj_write(conn, &id, &rw, 1, &hop, st), 0);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	lode_rpc_destroy(rpc);
	lode_disconnect(c);
}

struct slow_reader {
	uint64_t pieces, bytes;
	unsigned sleep_us;
};

static int slow_piece(void *arg, uint64_t off, void *buf, size_t len)
{
	struct slow_reader *r = arg;

	(void)off, (void)buf;
	r->pieces++;
	r->bytes += len;
	usleep(r->sleep_us);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One streamed read of 64 MiB, slowed by its consumer to about 3.5 lifetimes, and a
 * handle writing for more than two lifetimes: liblode renews as it goes. */
static void test_reads_and_writes_span_several_capability_lifetimes(void **state)
{
	const uint64_t size = 64 * MiB;
	/* 4 pieces in flight: the read's requests go out over its whole length of time */
	struct lode_client *c = client_as(client_key, 4);
	struct slow_reader r = {.sleep_us = 110000}; /* 64 pieces of 1 MiB: about 7 s */
	struct lode_file *f;
	char *buf = malloc(size);
	uint64_t t0;

	(void)state;
	assert_non_null(buf);
	/* writes: 16 MiB in 1 MiB writes, one every 300 ms, on one handle */
	assert_int_equal(lode_open(c, "/long", O_CREAT | O_TRUNC | O_WRONLY, 0644, &f), 0);
	t0 = now_ms();
	for (uint64_t off = 0; off < 16 * MiB; off += MiB) {
		pattern_fill(buf, MiB, 11, off);
		assert_int_equal(lode_pwrite(f, buf, MiB, off), (ssize_t)MiB);
		usleep(300000);
	}
	assert_true(now_ms() - t0 > 2 * LIFE_S * 1000);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(cluster_check_file(c, "/long", 16 * MiB, 11, 4 * MiB), 16 * MiB);

	cluster_write_file(c, "/big", size, 5, 4 * MiB, NULL);
	assert_int_equal(lode_open(c, "/big", O_RDONLY, 0, &f), 0);
	t0 = now_ms();
	memset(buf, 0, size);
	assert_int_equal(lode_read_stream(f, buf, size, 0, slow_piece, &r), (ssize_t)size);
	assert_true(now_ms() - t0 > 3 * LIFE_S * 1000);
	assert_int_equal(r.bytes, size);
	assert_int_equal(pattern_check(buf, size, 5, 0), -1);
	lode_close(f);
	free(buf);
	lode_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_raw_client_touches_no_object_without_a_capability),
	    cmocka_unit_test(test_forged_foreign_read_only_and_expired_capabilities_are_refused),
	    cmocka_unit_test(test_open_replies_carry_the_handles_capability),
	    cmocka_unit_test(test_another_writers_handle_cannot_be_guessed),
	    cmocka_unit_test(test_a_copy_is_reported_degraded_only_with_a_capability_for_its_file),
	    cmocka_unit_test(test_a_chain_hop_the_mds_does_not_list_is_never_contacted),
	    cmocka_unit_test(test_reads_and_writes_span_several_capability_lifetimes),
	    cmocka_unit_test(test_a_client_keys_writer_reports_a_failed_copy_with_its_capability),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
