/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the connection handshake (proto/net/server.c's AUTH state machine, auth.c's
 * proofs) as a peer on the network reaches it: a server with cluster keys runs in this
 * process on loopback, and each input is a script of steps played on one connection:
 *
 *   [kind u8] then, by kind % 5:
 *   0  AUTH step 1:  [step u8 (% 4)][role u8 (% 5)][flags u8][group u8][nonce, 32 bytes]
 *      group % 4: 0 none, 1 "team", 2 "a-b_9" (client groups: any valid name has a key
 *      derived from the cluster key), 3 the next 8 input bytes as a name
 *   1  AUTH step 2 with the right proof for the last step-1 reply (the harness holds the
 *      keys, so inputs reach a finished handshake)
 *   2  AUTH step 2:  [role u8 (% 5)][proof, 32 bytes]
 *   3  a request:    [opcode u8 (an unknown one mapped onto a known one)][body_len u8][body]
 *   4  a new connection
 *
 * Each step waits for its answer: one reply, or the server closing the connection; a
 * server that does neither within 20 s hangs (abort). Checked, beyond "no crash":
 * - no request other than AUTH is answered before the handshake finished, and after it
 *   only an opcode the proved role may send is answered with success;
 * - a step-1 reply with success carries a proof that the server holds the role's key;
 * - a step 2 is accepted only with the right proof for this connection's nonces: a forged,
 *   stale or replayed proof never is.
 * The server's handlers answer every request they get with success, so any success to a
 * request is the handshake's doing.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "codec.h"
#include "fixture.h"
#include "frames_client.h"
#include "fuzz.h"
#include "server.h"

#define WAIT_MS 20000

static char dir[64];
static struct lode_keyring keys;
static struct lode_server *srv;
static char addr[128];

static void on_request(void *ctx, struct lode_req *req)
{
	(void)ctx;
	lode_req_reply(req, 0, NULL, 0, NULL, 0, NULL);
}

static const struct lode_server_ops ops = {.on_request = on_request};

static void cleanup(void)
{
	lode_server_stop(srv);
	if (dir[0])
		fixture_tmpdir_remove(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct lode_server_opts so = {.listen = {"tcp://127.0.0.1:0"},
				      .threads = 1,
				      .ops = &ops,
				      .keys = &keys,
				      .first_frame_ms = WAIT_MS};
	char path[128], why[256];
	int rc;

	(void)argc, (void)argv;
	if (fixture_tmpdir_make(dir, sizeof(dir), "lode-fuzz-auth")) {
		fprintf(stderr, "fuzz_handshake: cannot make a directory in /tmp\n");
		exit(1);
	}
	atexit(cleanup);
	snprintf(path, sizeof(path), "%s/cluster.key", dir);
	if (lode_key_generate(path, why, sizeof(why)) ||
	    lode_keyring_load(path, &keys, why, sizeof(why))) {
		fprintf(stderr, "fuzz_handshake: %s\n", why);
		exit(1);
	}
	rc = lode_server_start(&srv, &so);
	if (rc) {
		fprintf(stderr, "fuzz_handshake: cannot start a server: %s\n", strerror(-rc));
		exit(rc == -ENOSYS || rc == -EPERM ? 77 : 1);
	}
	snprintf(addr, sizeof(addr), "%s", lode_server_address(srv, 0));
	return 0;
}

enum state { NEW, PROVING, DONE };

struct conn {
	int fd;		  /* -1: none */
	enum state state; /* what the harness knows the server granted */
	uint64_t next_id;
	unsigned role;		     /* of the last step 1 the server accepted */
	uint8_t key[LODE_KEY_BYTES]; /* the key it proves: the role's or its group's */
	uint8_t cnonce[LODE_NONCE_BYTES], snonce[LODE_NONCE_BYTES];
};

static bool send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		ssize_t w;

		if (poll(&pf, 1, WAIT_MS) == 0) {
			fprintf(stderr, "fuzz_handshake: the server reads nothing for 20 s\n");
			abort();
		}
		w = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w <= 0)
			return false; /* closed by the server */
		p += w;
		len -= (size_t)w;
	}
	return true;
}

/* Reads exactly len bytes; false when the server closed the connection first. */
static bool recv_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		ssize_t r;

		if (poll(&pf, 1, WAIT_MS) == 0) {
			fprintf(stderr, "fuzz_handshake: no answer and no close within 20 s\n");
			abort();
		}
		r = recv(fd, p, len, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0)
			return false;
		p += r;
		len -= (size_t)r;
	}
	return true;
}

static void hang_up(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = NEW;
}

/*
 * Sends one frame and reads its answer: returns true with the reply's header (and up to
 * cap bytes of its body in body) or false when the server closed the connection instead.
 */
static bool exchange(struct conn *c, unsigned op, const void *req, uint32_t len,
		     struct lode_wire_hdr *rh, void *body, size_t cap)
{
	struct lode_wire_hdr h;
	uint8_t frame[sizeof(h) + 256], sink[256];
	uint64_t id = c->next_id++, left;

	if (c->fd < 0) {
		c->fd = fuzz_dial(addr);
		c->next_id = 1;
		id = c->next_id++;
	}
	lode_hdr_init(&h, op, id, len, 0);
	memcpy(frame, &h, sizeof(h));
	memcpy(frame + sizeof(h), req, len);
	if (!send_all(c->fd, frame, sizeof(h) + len) || !recv_all(c->fd, rh, sizeof(*rh))) {
		hang_up(c);
		return false;
	}
	FUZZ_ASSERT(!lode_hdr_check(rh, 1));
	FUZZ_ASSERT(rh->req_id == id && rh->opcode == op);
	left = rh->body_len + rh->data_len;
	if (cap)
		memset(body, 0, cap);
	while (left) {
		size_t n = left < sizeof(sink) ? (size_t)left : sizeof(sink);

		if (!recv_all(c->fd, sink, n)) {
			hang_up(c);
			return false;
		}
		if (cap) {
			size_t k = n < cap ? n : cap;

			memcpy(body, sink, k);
			body = (uint8_t *)body + k;
			cap -= k;
		}
		left -= n;
	}
	return true;
}

static void step1(struct conn *c, struct fuzz_in *in)
{
	struct lode_wire_auth_req r = {0};
	struct lode_wire_auth_rep rep;
	struct lode_wire_hdr rh;
	size_t got;
	const uint8_t *nonce;
	const uint8_t *key;

	r.step = (uint32_t)fuzz_take(in, 1) % 4;
	r.role = (uint32_t)fuzz_take(in, 1) % 5;
	r.flags = (uint32_t)fuzz_take(in, 1);
	switch (fuzz_take(in, 1) % 4) {
	case 1:
		strcpy(r.group, "team");
		break;
	case 2:
		strcpy(r.group, "a-b_9");
		break;
	case 3:
		nonce = fuzz_bytes(in, 8, &got);
		memcpy(r.group, nonce, got);
		break;
	}
	nonce = fuzz_bytes(in, LODE_NONCE_BYTES, &got);
	memcpy(r.nonce, nonce, got);
	if (!exchange(c, LODE_OP_AUTH, &r, sizeof(r), &rh, &rep, sizeof(rep)))
		return;
	if (rh.status)
		return; /* refused: nothing granted */
	/* accepted: it was a well-formed first step for a role the server holds a key for,
	 * and the server proved that it holds it */
	FUZZ_ASSERT(c->state == NEW && r.step == 1 && !(r.flags & LODE_AUTH_F_NOKEY));
	key = lode_keyring_key(&keys, r.role);
	FUZZ_ASSERT(key);
	memcpy(c->key, key, LODE_KEY_BYTES);
	if (r.group[0]) /* only a client's, with a valid name: then the group's own key */
		FUZZ_ASSERT(r.role == LODE_ROLE_CLIENT &&
			    !lode_keyring_group_key(&keys, r.group, c->key));
	FUZZ_ASSERT(rh.body_len == sizeof(rep));
	FUZZ_ASSERT(lode_auth_verify(c->key, true, r.role, r.nonce, rep.nonce, rep.proof));
	c->state = PROVING;
	c->role = r.role;
	memcpy(c->cnonce, r.nonce, LODE_NONCE_BYTES);
	memcpy(c->snonce, rep.nonce, LODE_NONCE_BYTES);
}

static void step2(struct conn *c, unsigned role, const uint8_t proof[LODE_PROOF_BYTES])
{
	struct lode_wire_auth_req r = {.step = 2, .role = role};
	struct lode_wire_hdr rh;
	uint8_t right[LODE_PROOF_BYTES];
	bool was_proving = c->state == PROVING && role == c->role;

	memcpy(r.proof, proof, LODE_PROOF_BYTES);
	if (!exchange(c, LODE_OP_AUTH, &r, sizeof(r), &rh, NULL, 0))
		return;
	if (rh.status)
		return;
	/* accepted: only the right proof, on a connection whose step 1 was accepted */
	FUZZ_ASSERT(was_proving);
	lode_auth_proof(c->key, false, role, c->cnonce, c->snonce, right);
	FUZZ_ASSERT(!memcmp(right, proof, LODE_PROOF_BYTES));
	c->state = DONE;
}

static void request(struct conn *c, struct fuzz_in *in)
{
	static uint8_t known[LODE_OP_MAX_];
	static unsigned nknown;
	struct lode_wire_hdr rh;
	uint8_t body[256] = {0};
	unsigned op = (unsigned)fuzz_take(in, 1);
	size_t len;
	const uint8_t *b;

	if (!nknown)
		for (unsigned i = 0; i < LODE_OP_MAX_; i++)
			if (lode_op_known(i) && i != LODE_OP_AUTH)
				known[nknown++] = (uint8_t)i;
	if (!lode_op_known(op) || op == LODE_OP_AUTH)
		op = known[op % nknown];
	b = fuzz_bytes(in, fuzz_take(in, 1), &len);
	memcpy(body, b, len);
	if (!exchange(c, op, body, (uint32_t)len, &rh, NULL, 0))
		return;
	if (rh.status)
		return;
	/* served: only after the handshake, and only what the proved role may send */
	FUZZ_ASSERT(c->state == DONE);
	FUZZ_ASSERT(lode_op_roles(op) & LODE_ROLE_BIT(c->role));
	if (getenv("LODE_FUZZ_VERBOSE"))
		fprintf(stderr, "served %s to a proved %s\n", lode_op_name(op),
			lode_auth_role_name(c->role));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	struct conn c = {.fd = -1};
	unsigned steps = 0;

	while (in.left && steps++ < 64) {
		switch (fuzz_take(&in, 1) % 5) {
		case 0:
			step1(&c, &in);
			break;
		case 1: {
			uint8_t proof[LODE_PROOF_BYTES] = {0};

			if (c.state == PROVING)
				lode_auth_proof(c.key, false, c.role, c.cnonce, c.snonce, proof);
			step2(&c, c.role, proof);
			break;
		}
		case 2: {
			uint8_t proof[LODE_PROOF_BYTES] = {0};
			unsigned role = (unsigned)fuzz_take(&in, 1) % 5;
			size_t got;
			const uint8_t *p = fuzz_bytes(&in, LODE_PROOF_BYTES, &got);

			memcpy(proof, p, got);
			step2(&c, role, proof);
			break;
		}
		case 3:
			request(&c, &in);
			break;
		case 4:
			hang_up(&c);
			break;
		}
	}
	hang_up(&c);
	return 0;
}
