/* SPDX-License-Identifier: MIT */
/*
 * Cluster keys and the handshake (proto/net/auth.c, server.c, rpc.c): key files as users
 * write them, the proofs, and lode_rpc against lode_server over loopback with and without
 * keys, wrong keys and roles.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "auth.h"
#include "fixture.h"
#include "rpc.h"
#include "server.h"

struct fx {
	char dir[128];
	char cluster[192]; /* a cluster key file */
	struct lode_keyring keys;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char why[256];

	assert_non_null(f);
	assert_int_equal(fixture_tmpdir_make(f->dir, sizeof(f->dir), "lode-auth"), 0);
	snprintf(f->cluster, sizeof(f->cluster), "%s/cluster.key", f->dir);
	assert_int_equal(lode_key_generate(f->cluster, why, sizeof(why)), 0);
	assert_int_equal(lode_keyring_load(f->cluster, &f->keys, why, sizeof(why)), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	fixture_tmpdir_remove(f->dir);
	free(f);
	return 0;
}

static void write_text(const char *path, const char *text, mode_t mode)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	assert_int_equal(chmod(path, mode), 0);
}

/* ---- key files ---- */

/* tmpl with each '@' replaced by hex */
static void expand(char *out, size_t len, const char *tmpl, const char *hex)
{
	size_t n = 0;

	for (; *tmpl && n + 65 < len; tmpl++) {
		if (*tmpl == '@') {
			memcpy(out + n, hex, 64);
			n += 64;
		} else {
			out[n++] = *tmpl;
		}
	}
	out[n] = 0;
}

static void test_a_cluster_key_holds_every_role_and_a_role_key_only_its_own(void **state)
{
	struct fx *f = *state;
	struct lode_keyring role;
	char path[256], why[256];
	struct stat st;

	assert_true(f->keys.cluster);
	for (unsigned r = LODE_AUTH_CLIENT; r < LODE_AUTH_ROLES_; r++)
		assert_non_null(lode_keyring_key(&f->keys, r));
	assert_int_equal(lode_keyring_best_role(&f->keys), LODE_AUTH_ADMIN);
	assert_int_equal(stat(f->cluster, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);

	snprintf(path, sizeof(path), "%s/client.key", f->dir);
	assert_int_equal(lode_key_write_role(&f->keys, LODE_AUTH_CLIENT, path, why, sizeof(why)),
			 0);
	assert_int_equal(lode_keyring_load(path, &role, why, sizeof(why)), 0);
	assert_false(role.cluster);
	assert_memory_equal(lode_keyring_key(&role, LODE_AUTH_CLIENT),
			    lode_keyring_key(&f->keys, LODE_AUTH_CLIENT), LODE_KEY_BYTES);
	assert_null(lode_keyring_key(&role, LODE_AUTH_TARGET));
	assert_null(lode_keyring_key(&role, LODE_AUTH_ADMIN));
	assert_int_equal(lode_keyring_best_role(&role), LODE_AUTH_CLIENT);
	/* the role keys differ from each other */
	assert_memory_not_equal(lode_keyring_key(&f->keys, LODE_AUTH_CLIENT),
				lode_keyring_key(&f->keys, LODE_AUTH_TARGET), LODE_KEY_BYTES);
	/* and a client key cannot make a target key */
	snprintf(path, sizeof(path), "%s/target.key", f->dir);
	assert_int_equal(lode_key_write_role(&role, LODE_AUTH_TARGET, path, why, sizeof(why)),
			 -ENOKEY);
}

static void test_generate_never_overwrites_a_file(void **state)
{
	struct fx *f = *state;
	struct lode_keyring again;
	char why[256];

	assert_int_equal(lode_key_generate(f->cluster, why, sizeof(why)), -EEXIST);
	assert_non_null(strstr(why, "never overwritten"));
	assert_int_equal(lode_keyring_load(f->cluster, &again, why, sizeof(why)), 0);
	assert_memory_equal(again.key, f->keys.key, sizeof(again.key));
}

static void test_a_key_file_group_or_others_may_read_is_refused(void **state)
{
	struct fx *f = *state;
	static const mode_t modes[] = {0640, 0604, 0610, 0644};
	struct lode_keyring kr;
	char why[256];

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		assert_int_equal(chmod(f->cluster, modes[i]), 0);
		assert_int_equal(lode_keyring_load(f->cluster, &kr, why, sizeof(why)), -EPERM);
		assert_non_null(strstr(why, "group or others"));
	}
	assert_int_equal(chmod(f->cluster, 0400), 0);
	assert_int_equal(lode_keyring_load(f->cluster, &kr, why, sizeof(why)), 0);
}

static void test_malformed_key_files_are_refused(void **state)
{
	struct fx *f = *state;
	static const char hex[] =
	    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	char text[512], path[256], why[256];
	struct lode_keyring kr;
	const char *bad[] = {
	    "",
	    "lode-key-v1 cluster\n",
	    "lode-key-v1 cluster 0011\n",
	    "lode-key-v2 cluster @\n",
	    "lode-key-v1 nobody @\n",
	    "lode-key-v1 cluster @ extra\n",
	    "lode-key-v1 cluster @\nlode-key-v1 cluster @\n",
	    "lode-key-v1  cluster @\n",
	    "lode-key-v1 cluster @ff\n",
	    "lode-key-v1 cluster "
	    "0g112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n",
	};

	snprintf(path, sizeof(path), "%s/bad.key", f->dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		expand(text, sizeof(text), bad[i], hex);
		unlink(path);
		write_text(path, text, 0600);
		if (lode_keyring_load(path, &kr, why, sizeof(why)) != -EINVAL)
			fail_msg("accepted key file %zu: '%s'", i, text);
	}
	snprintf(text, sizeof(text), "lode-key-v1 cluster %s", hex); /* no newline: fine */
	unlink(path);
	write_text(path, text, 0600);
	assert_int_equal(lode_keyring_load(path, &kr, why, sizeof(why)), 0);
	snprintf(path, sizeof(path), "%s/missing.key", f->dir);
	assert_int_equal(lode_keyring_load(path, &kr, why, sizeof(why)), -ENOENT);
}

static void test_a_proof_binds_the_key_the_role_and_both_nonces(void **state)
{
	struct fx *f = *state;
	const uint8_t *k = lode_keyring_key(&f->keys, LODE_AUTH_CLIENT);
	const uint8_t *other = lode_keyring_key(&f->keys, LODE_AUTH_TARGET);
	uint8_t cn[32], sn[32], p[32], x[32];

	lode_auth_nonce(cn, sizeof(cn));
	lode_auth_nonce(sn, sizeof(sn));
	assert_memory_not_equal(cn, sn, 32);
	lode_auth_proof(k, true, LODE_AUTH_CLIENT, cn, sn, p);
	assert_true(lode_auth_verify(k, true, LODE_AUTH_CLIENT, cn, sn, p));
	assert_false(lode_auth_verify(other, true, LODE_AUTH_CLIENT, cn, sn, p));
	assert_false(lode_auth_verify(k, false, LODE_AUTH_CLIENT, cn, sn, p)); /* direction */
	assert_false(lode_auth_verify(k, true, LODE_AUTH_ADMIN, cn, sn, p));
	memcpy(x, sn, 32);
	x[31] ^= 1;
	assert_false(lode_auth_verify(k, true, LODE_AUTH_CLIENT, cn, x, p));
	memcpy(x, cn, 32);
	x[0] ^= 0x80;
	assert_false(lode_auth_verify(k, true, LODE_AUTH_CLIENT, x, sn, p));
	/* the two directions swap the nonces: the server's proof is not the client's */
	lode_auth_proof(k, false, LODE_AUTH_CLIENT, cn, sn, x);
	assert_memory_not_equal(p, x, 32);
}

/* ---- over loopback ---- */

static void on_request(void *ctx, struct lode_req *req)
{
	(void)ctx;
	lode_req_reply(req, 0, NULL, 0, NULL, 0, NULL);
}

static const struct lode_server_ops ops = {.on_request = on_request};

static struct lode_server *serve(const struct lode_keyring *keys)
{
	struct lode_server_opts o = {
	    .listen = {"tcp://127.0.0.1:0"}, .threads = 1, .ops = &ops, .keys = keys};
	struct lode_server *srv;

	assert_int_equal(lode_server_start(&srv, &o), 0);
	return srv;
}

/* One call of opcode (empty body but for HEARTBEAT's zeros) from a new rpc with keys/role,
 * through its I/O thread or direct (rpc_direct.h). */
static int call_as_one(struct lode_server *srv, const struct lode_keyring *keys, unsigned role,
		       uint8_t opcode, unsigned *server_flags, bool direct)
{
	struct lode_wire_target_heartbeat_req hb = {0};
	struct lode_call call = {.opcode = opcode};
	struct lode_rpc *rpc;
	struct lode_rpc_conn *conn;
	int rc;

	if (opcode == LODE_OP_TARGET_HEARTBEAT) {
		call.body = &hb;
		call.body_len = sizeof(hb);
	}
	assert_int_equal(lode_rpc_create(&rpc, 5000), 0);
	assert_int_equal(lode_rpc_set_auth(rpc, keys, role), 0);
	assert_int_equal(lode_rpc_conn_open(rpc, lode_server_address(srv, 0), &conn), 0);
	rc = direct ? lode_rpc_call_direct(conn, &call) : lode_rpc_call(conn, &call);
	if (server_flags)
		*server_flags = lode_rpc_conn_server_flags(conn);
	lode_rpc_destroy(rpc);
	return rc;
}

/* The call both ways: the handshake of a direct connection must end as the I/O thread's. */
static int call_as(struct lode_server *srv, const struct lode_keyring *keys, unsigned role,
		   uint8_t opcode, unsigned *server_flags)
{
	unsigned flags = 99, direct_flags = 99;
	int rc = call_as_one(srv, keys, role, opcode, &flags, false);

	assert_int_equal(call_as_one(srv, keys, role, opcode, &direct_flags, true), rc);
	if (!rc)
		assert_int_equal(direct_flags, flags);
	if (server_flags)
		*server_flags = flags;
	return rc;
}

static void test_the_right_key_is_served_and_a_wrong_or_missing_one_is_refused(void **state)
{
	struct fx *f = *state;
	struct lode_server *srv = serve(&f->keys);
	struct lode_keyring wrong, role;
	char path[256], why[256];
	unsigned flags = 99;

	assert_int_equal(call_as(srv, &f->keys, LODE_ROLE_CLIENT, LODE_OP_PING, &flags), 0);
	assert_int_equal(flags, 0);
	assert_int_equal(call_as(srv, &f->keys, LODE_ROLE_ADMIN, LODE_OP_PING, NULL), 0);
	snprintf(path, sizeof(path), "%s/client.key", f->dir);
	assert_int_equal(lode_key_write_role(&f->keys, LODE_AUTH_CLIENT, path, why, sizeof(why)),
			 0);
	assert_int_equal(lode_keyring_load(path, &role, why, sizeof(why)), 0);
	assert_int_equal(call_as(srv, &role, LODE_ROLE_CLIENT, LODE_OP_PING, NULL), 0);

	snprintf(path, sizeof(path), "%s/wrong.key", f->dir);
	assert_int_equal(lode_key_generate(path, why, sizeof(why)), 0);
	assert_int_equal(lode_keyring_load(path, &wrong, why, sizeof(why)), 0);
	assert_int_equal(call_as(srv, &wrong, LODE_ROLE_CLIENT, LODE_OP_PING, NULL), -EACCES);
	assert_int_equal(call_as(srv, NULL, LODE_ROLE_CLIENT, LODE_OP_PING, NULL), -EACCES);
	/* a client key cannot claim the admin role: the rpc has no key for it */
	{
		struct lode_rpc *rpc;

		assert_int_equal(lode_rpc_create(&rpc, 5000), 0);
		assert_int_equal(lode_rpc_set_auth(rpc, &role, LODE_ROLE_ADMIN), -ENOKEY);
		lode_rpc_destroy(rpc);
	}
	lode_server_stop(srv);
}

static void test_a_role_may_send_only_the_opcodes_of_its_row(void **state)
{
	struct fx *f = *state;
	struct lode_server *srv = serve(&f->keys);

	assert_int_equal(call_as(srv, &f->keys, LODE_ROLE_CLIENT, LODE_OP_TARGET_HEARTBEAT, NULL),
			 -EACCES);
	assert_int_equal(call_as(srv, &f->keys, LODE_ROLE_ADMIN, LODE_OP_TARGET_HEARTBEAT, NULL),
			 -EACCES);
	assert_int_equal(call_as(srv, &f->keys, LODE_ROLE_OSS, LODE_OP_TARGET_HEARTBEAT, NULL), 0);
	assert_int_equal(call_as(srv, &f->keys, LODE_ROLE_OSS, LODE_OP_STATFS, NULL), -EACCES);
	assert_int_equal(call_as(srv, &f->keys, LODE_ROLE_CLIENT, LODE_OP_STATFS, NULL), 0);
	assert_int_equal(call_as(srv, &f->keys, LODE_ROLE_OSS, LODE_OP_PING, NULL), 0);
	lode_server_stop(srv);
}

static void test_an_insecure_server_serves_keyless_clients_and_keyed_ones_refuse_it(void **state)
{
	struct fx *f = *state;
	struct lode_server *srv = serve(NULL);
	unsigned flags = 0;

	assert_int_equal(call_as(srv, NULL, LODE_ROLE_CLIENT, LODE_OP_PING, &flags), 0);
	assert_int_equal(flags, LODE_AUTH_F_INSECURE);
	/* nothing is proved there, so nothing is bounded by role either */
	assert_int_equal(call_as(srv, NULL, LODE_ROLE_CLIENT, LODE_OP_TARGET_HEARTBEAT, NULL), 0);
	assert_int_equal(call_as(srv, &f->keys, LODE_ROLE_CLIENT, LODE_OP_PING, NULL), -EACCES);
	lode_server_stop(srv);
}

static void test_calls_queued_behind_the_handshake_all_complete(void **state)
{
	struct fx *f = *state;
	struct lode_server *srv = serve(&f->keys);
	struct lode_call calls[200];
	struct lode_rpc_batch b;
	struct lode_rpc *rpc;
	struct lode_rpc_conn *conn;

	assert_int_equal(lode_rpc_create(&rpc, 5000), 0);
	assert_int_equal(lode_rpc_set_auth(rpc, &f->keys, LODE_ROLE_CLIENT), 0);
	assert_int_equal(lode_rpc_conn_open(rpc, lode_server_address(srv, 0), &conn), 0);
	lode_rpc_batch_init(&b);
	for (unsigned i = 0; i < 200; i++) {
		calls[i] = (struct lode_call){.opcode = LODE_OP_PING};
		lode_rpc_batch_add(&b, conn, &calls[i]);
	}
	assert_int_equal(lode_rpc_batch_wait(&b), 0);
	for (unsigned i = 0; i < 200; i++)
		assert_int_equal(calls[i].status, 0);
	lode_rpc_batch_destroy(&b);
	lode_rpc_destroy(rpc);
	lode_server_stop(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)
	    T(test_a_cluster_key_holds_every_role_and_a_role_key_only_its_own),
	    T(test_generate_never_overwrites_a_file),
	    T(test_a_key_file_group_or_others_may_read_is_refused),
	    T(test_malformed_key_files_are_refused),
	    T(test_a_proof_binds_the_key_the_role_and_both_nonces),
	    T(test_the_right_key_is_served_and_a_wrong_or_missing_one_is_refused),
	    T(test_a_role_may_send_only_the_opcodes_of_its_row),
	    T(test_an_insecure_server_serves_keyless_clients_and_keyed_ones_refuse_it),
	    T(test_calls_queued_behind_the_handshake_all_complete),
#undef T
	};

	fixture_skip_without_io_uring();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
