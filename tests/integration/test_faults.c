/* SPDX-License-Identifier: MIT */
/*
 * Faults against a real cluster: kill -9 of the MDS and of every OSS loses nothing that
 * was acknowledged; garbage on the wire gets an error or a closed connection and never
 * stops a server from serving everyone else; deleted files' objects are reclaimed.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "auth.h"
#include "cluster_client.h"
#include "lode/lode.h"
#include "wire_spec.h"

#define MiB (1ull << 20)

static struct test_cluster tc;

static int group_setup(void **state)
{
	(void)state;
	/* deleted files' objects are kept for a grace period; shorten it for the test */
	return cluster_up_opts(&tc, 3, "--orphan-grace 1");
}

static int group_teardown(void **state)
{
	(void)state;
	cluster_down(&tc);
	return 0;
}

static void test_kill_9_of_every_server_loses_nothing_acknowledged(void **state)
{
	struct lode_client *c, *again;
	char path[64];
	struct lode_stat st;

	(void)state;
	assert_int_equal(lode_connect(tc.mds, NULL, &c), 0);
	cluster_write_file(c, "/ckpt-1", 96 * MiB + 4321, 11, 4 * MiB, NULL);
	assert_int_equal(lode_mkdir(c, "/run", 0755), 0);
	for (int i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "/run/shard-%d", i);
		cluster_write_file(c, path, (uint64_t)i * 1000, 1000 + (uint64_t)i, 4 * MiB, NULL);
	}
	assert_int_equal(lode_rename(c, "/ckpt-1", "/run/final", 0), 0);
	assert_int_equal(lode_setxattr(c, "/run/final", "user.step", "42", 2, 0), 0);

	assert_int_equal(cluster_kill(&tc, "mds", 1), 0);
	for (int i = 0; i < tc.noss; i++) {
		snprintf(path, sizeof(path), "oss%d", i);
		assert_int_equal(cluster_kill(&tc, path, 1), 0);
	}
	/* while everything is down, a call fails instead of hanging */
	assert_int_not_equal(lode_stat(c, "/run/final", &st), 0);
	assert_int_equal(cluster_restart(&tc), 0);

	/* the client from before the crash reconnects by itself */
	assert_int_equal(lode_stat(c, "/run/final", &st), 0);
	assert_int_equal(lode_connect(tc.mds, NULL, &again), 0);
	cluster_check_file(again, "/run/final", 96 * MiB + 4321, 11, 4 * MiB);
	for (int i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "/run/shard-%d", i);
		cluster_check_file(again, path, (uint64_t)i * 1000, 1000 + (uint64_t)i, 4 * MiB);
	}
	{
		char v[8];

		assert_int_equal(lode_getxattr(again, "/run/final", "user.step", v, sizeof(v)), 2);
		assert_memory_equal(v, "42", 2);
	}
	assert_int_equal(lode_stat(again, "/ckpt-1", &st), -ENOENT);
	lode_disconnect(again);
	lode_disconnect(c);
}

/*
 * The client side of the handshake (proto/net/auth.h) on a raw socket, with the cluster's
 * key ($LODE_KEY_FILE): what follows on fd is what an authenticated peer sends, so the
 * garbage below tests the framing, not only the handshake (tests/integration/test_auth.py
 * covers peers without the key).
 */
static void raw_handshake(int fd)
{
	struct {
		struct lode_wire_hdr h;
		struct lode_wire_auth_req r;
	} msg;
	struct lode_wire_hdr h;
	struct lode_wire_auth_rep rep;
	struct lode_keyring kr;
	const uint8_t *key;
	char why[256];

	if (lode_keyring_load(getenv("LODE_KEY_FILE"), &kr, why, sizeof(why)))
		fail_msg("%s", why);
	key = lode_keyring_key(&kr, LODE_AUTH_CLIENT);
	memset(&msg, 0, sizeof(msg));
	msg.h.magic = LODE_WIRE_MAGIC;
	msg.h.version = LODE_WIRE_VERSION;
	msg.h.opcode = LODE_OP_AUTH;
	msg.h.body_len = sizeof(msg.r);
	msg.r.step = 1;
	msg.r.role = LODE_AUTH_CLIENT;
	lode_auth_nonce(msg.r.nonce, sizeof(msg.r.nonce));
	assert_int_equal(send(fd, &msg, sizeof(msg), MSG_NOSIGNAL), (ssize_t)sizeof(msg));
	assert_int_equal(recv(fd, &h, sizeof(h), MSG_WAITALL), (ssize_t)sizeof(h));
	assert_int_equal(h.status, 0);
	assert_int_equal(h.body_len, sizeof(rep));
	assert_int_equal(recv(fd, &rep, sizeof(rep), MSG_WAITALL), (ssize_t)sizeof(rep));
	assert_true(
	    lode_auth_verify(key, true, LODE_AUTH_CLIENT, msg.r.nonce, rep.nonce, rep.proof));
	msg.r.step = 2;
	lode_auth_proof(key, false, LODE_AUTH_CLIENT, msg.r.nonce, rep.nonce, msg.r.proof);
	memset(msg.r.nonce, 0, sizeof(msg.r.nonce));
	assert_int_equal(send(fd, &msg, sizeof(msg), MSG_NOSIGNAL), (ssize_t)sizeof(msg));
	/* step 2's reply: empty, status 0 */
	assert_int_equal(recv(fd, &h, sizeof(h), MSG_WAITALL), (ssize_t)sizeof(h));
	assert_int_equal(h.status, 0);
	assert_int_equal(h.body_len, 0);
}

static int connect_raw(const char *addr)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	char host[64];
	unsigned port;
	int fd;

	assert_int_equal(sscanf(addr, "tcp://%63[^:]:%u", host, &port), 2);
	sin.sin_port = htons((uint16_t)port);
	assert_int_equal(inet_pton(AF_INET, host, &sin.sin_addr), 1);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	raw_handshake(fd);
	return fd;
}

/* The server must close the connection (read returns 0 or an error) within 3 s. */
static void expect_closed(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char buf[4096];

	for (;;) {
		ssize_t n;

		assert_int_equal(poll(&p, 1, 3000), 1);
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
	}
	close(fd);
}

static void send_all(int fd, const void *buf, size_t len)
{
	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

static void fill_hdr(struct lode_wire_hdr *h, uint8_t op, uint32_t body, uint64_t data)
{
	memset(h, 0, sizeof(*h));
	h->magic = LODE_WIRE_MAGIC;
	h->version = LODE_WIRE_VERSION;
	h->opcode = op;
	h->req_id = 77;
	h->body_len = body;
	h->data_len = data;
}

static void garbage_at(const char *addr)
{
	struct lode_wire_hdr h;
	unsigned char junk[4096];
	int fd;

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	/* random bytes */
	fd = connect_raw(addr);
	send_all(fd, junk, sizeof(junk));
	expect_closed(fd);
	/* bad magic */
	fd = connect_raw(addr);
	fill_hdr(&h, LODE_OP_PING, 0, 0);
	h.magic = 0x12345678;
	send_all(fd, &h, sizeof(h));
	expect_closed(fd);
	/* bad version */
	fd = connect_raw(addr);
	fill_hdr(&h, LODE_OP_PING, 0, 0);
	h.version = 99;
	send_all(fd, &h, sizeof(h));
	expect_closed(fd);
	/* unknown opcode */
	fd = connect_raw(addr);
	fill_hdr(&h, 63, 0, 0);
	send_all(fd, &h, sizeof(h));
	expect_closed(fd);
	/* lengths over the limits: no allocation of 1 GiB, just a closed connection */
	fd = connect_raw(addr);
	fill_hdr(&h, LODE_OP_LOOKUP, 1u << 30, 0);
	send_all(fd, &h, sizeof(h));
	expect_closed(fd);
	fd = connect_raw(addr);
	fill_hdr(&h, LODE_OP_OBJ_WRITE, 40, 1ull << 40);
	send_all(fd, &h, sizeof(h));
	expect_closed(fd);
	/* a frame cut short, then the client goes away */
	fd = connect_raw(addr);
	fill_hdr(&h, LODE_OP_LOOKUP, 100, 0);
	send_all(fd, &h, sizeof(h));
	send_all(fd, junk, 10);
	close(fd);
}

/* A well-framed request whose body is malformed gets an error reply; the connection
 * stays usable. */
static void malformed_body_gets_an_error_reply(const char *addr, uint8_t op)
{
	struct {
		struct lode_wire_hdr h;
		unsigned char body[24 + 3];
	} msg;
	struct lode_wire_hdr rep;
	int fd = connect_raw(addr);

	memset(&msg, 0, sizeof(msg));
	fill_hdr(&msg.h, op, sizeof(msg.body), 0);
	/* LOOKUP-shaped body announcing a 200-byte name but carrying 3 bytes ("a/b") */
	msg.body[16] = 200;
	memcpy(msg.body + 24, "a/b", 3);
	for (int round = 0; round < 2; round++) {
		send_all(fd, &msg, sizeof(msg.h) + sizeof(msg.body));
		assert_int_equal(recv(fd, &rep, sizeof(rep), MSG_WAITALL), (ssize_t)sizeof(rep));
		assert_int_equal(rep.req_id, 77);
		assert_true(rep.flags & LODE_WIRE_F_REPLY);
		assert_true(rep.status > 0);
		assert_int_equal(rep.body_len, 0);
	}
	close(fd);
}

static void read_oss_addr(int i, char *out, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/oss%d/addr", tc.dir, i);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(out, (int)len, f));
	fclose(f);
	out[strcspn(out, "\n")] = 0;
}

static void test_garbage_on_the_wire_never_stops_the_mds_or_an_oss(void **state)
{
	struct lode_client *c;
	struct lode_stat st;
	char oss[128];

	(void)state;
	assert_int_equal(lode_connect(tc.mds, NULL, &c), 0);
	cluster_write_file(c, "/survivor", 8 * MiB, 21, 4 * MiB, NULL);
	read_oss_addr(0, oss, sizeof(oss));
	for (int round = 0; round < 3; round++) {
		garbage_at(tc.mds);
		garbage_at(oss);
		malformed_body_gets_an_error_reply(tc.mds, LODE_OP_LOOKUP);
		malformed_body_gets_an_error_reply(oss, LODE_OP_OBJ_READ);
		/* everyone else is still served */
		assert_int_equal(lode_stat(c, "/survivor", &st), 0);
		cluster_check_file(c, "/survivor", 8 * MiB, 21, 4 * MiB);
	}
	lode_disconnect(c);
}

static uint64_t objects_on_disk(void)
{
	uint64_t n = 0;

	for (int i = 0; i < tc.noss; i++) {
		for (int d = 0; d < 256; d++) {
			char path[512];
			struct dirent *e;
			DIR *dir;

			snprintf(path, sizeof(path), "%s/oss%d/objects/%02x", tc.dir, i, d);
			dir = opendir(path);
			if (!dir)
				continue;
			while ((e = readdir(dir)))
				n += e->d_name[0] != '.';
			closedir(dir);
		}
	}
	return n;
}

static void test_unlinked_files_objects_are_reclaimed_by_their_oss(void **state)
{
	struct lode_client *c;
	uint64_t before, after = 0;

	(void)state;
	assert_int_equal(lode_connect(tc.mds, NULL, &c), 0);
	before = objects_on_disk();
	cluster_write_file(c, "/doomed", 16 * MiB, 5, 4 * MiB, NULL);
	assert_true(objects_on_disk() > before);
	assert_int_equal(lode_unlink(c, "/doomed"), 0);
	for (int i = 0; i < 150; i++) { /* the OSS looks for orphans every few seconds */
		after = objects_on_disk();
		if (after <= before)
			break;
		usleep(100000);
	}
	assert_true(after <= before);
	lode_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kill_9_of_every_server_loses_nothing_acknowledged),
	    cmocka_unit_test(test_garbage_on_the_wire_never_stops_the_mds_or_an_oss),
	    cmocka_unit_test(test_unlinked_files_objects_are_reclaimed_by_their_oss),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
