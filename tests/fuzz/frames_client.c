/* SPDX-License-Identifier: MIT */
/*
 * Sends a fuzz input's request frames to an in-process server and reads its replies: see
 * frames_client.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "codec.h"
#include "frames_client.h"
#include "fuzz.h"
#include "server.h"

#define FRAMES_MAX 256
#define WAIT_MS	   20000

/* The connection, kept from one input to the next while the server keeps it open (fewer
 * connections: see fuzz_dial()); -1 when there is none. */
static int conn_fd = -1;
static uint64_t next_id = 1; /* request ids go on across inputs on one connection */

static uint8_t known[LODE_OP_MAX_];
static unsigned nknown;

static uint8_t map_opcode(uint8_t op)
{
	if (!nknown)
		for (unsigned i = 0; i < LODE_OP_MAX_; i++)
			if (lode_op_known(i))
				known[nknown++] = (uint8_t)i;
	return lode_op_known(op) ? op : known[op % nknown];
}

int fuzz_dial(const char *addr)
{
	static unsigned src;
	const char *colon = strrchr(addr, ':');
	struct sockaddr_in sa = {.sin_family = AF_INET}, from = {.sin_family = AF_INET};
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	int one = 1, fd, err;
	socklen_t len = sizeof(err);

	FUZZ_ASSERT(colon);
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/*
	 * Connections the server closed sit in TIME_WAIT on its side for a minute; at a
	 * thousand inputs a second a new connection from the same address soon meets one with
	 * its own port pair, and connect() stalls or fails (EADDRNOTAVAIL). That is this
	 * harness's limit, not the server's: connect from 127.0.0.1 .. 127.0.0.254 in turn,
	 * wait for the connection with poll() (a signal may interrupt connect()), and retry for
	 * up to 30 s before calling it a failure.
	 */
	for (int tries = 0;; tries++) {
		struct pollfd p = {.events = POLLOUT};

		from.sin_addr.s_addr = htonl(INADDR_LOOPBACK + (src++ % 254));
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		FUZZ_ASSERT(fd >= 0);
		err = 0;
		if (bind(fd, (struct sockaddr *)&from, sizeof(from)) ||
		    (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS))
			err = errno;
		p.fd = fd;
		while (!err && poll(&p, 1, 1000) < 0)
			FUZZ_ASSERT(errno == EINTR);
		if (!err && !(p.revents & POLLOUT))
			err = ETIMEDOUT;
		if (!err && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
			err = errno;
		if (!err)
			break;
		close(fd);
		if ((err != EADDRNOTAVAIL && err != ETIMEDOUT && err != EADDRINUSE) ||
		    tries == 30) {
			fprintf(stderr, "connect %s: %s\n", addr, strerror(err));
			abort();
		}
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* close with a reset: no TIME_WAIT on this side */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	return fd;
}

/* Builds the stream of request frames; returns its length and the frame count in *n. */
static size_t build(const uint8_t *data, size_t size, uint64_t base, uint8_t **out, unsigned *n,
		    fuzz_frame_patch_fn patch)
{
	struct fuzz_in in = {data, size};
	size_t cap = size + FRAMES_MAX * (sizeof(struct lode_wire_hdr) + 8), len = 0;
	uint8_t *s = malloc(cap);

	FUZZ_ASSERT(s);
	*n = 0;
	while (in.left && *n < FRAMES_MAX) {
		uint8_t raw = (uint8_t)fuzz_take(&in, 1), op = map_opcode(raw & 0x7f);
		size_t blen_want = (size_t)fuzz_take(&in, 2), dlen_want = (size_t)fuzz_take(&in, 2);
		size_t blen, dlen;
		const uint8_t *b = fuzz_bytes(&in, blen_want, &blen);
		const uint8_t *d = fuzz_bytes(&in, dlen_want, &dlen);
		struct lode_wire_hdr h;
		/* an aligned copy for patch(), which may look inside it as a decoder would */
		uint64_t body[LODE_BODY_MAX / 8 + 1];

		if (blen > LODE_BODY_MAX)
			blen = LODE_BODY_MAX;
		memcpy(body, b, blen);
		if (patch)
			patch(op, body, (uint32_t)blen, dlen);
		lode_hdr_init(&h, op, base + *n, (uint32_t)blen, dlen);
		if ((raw & 0x80) && lode_op_may_be_lazy(op))
			h.flags = LODE_WIRE_F_LAZY; /* a lazy client's namespace change */
		if ((raw & 0x80) && lode_op_adds_name(op))
			h.flags |= LODE_WIRE_F_GRANT; /* holding no grant; a MKDIR asks for one */
		memcpy(s + len, &h, sizeof(h));
		len += sizeof(h);
		memcpy(s + len, body, blen);
		len += blen;
		memcpy(s + len, d, dlen);
		len += dlen;
		(*n)++;
	}
	*out = s;
	return len;
}

unsigned fuzz_frames_run(const char *addr, const uint8_t *data, size_t size,
			 fuzz_frame_patch_fn patch)
{
	static uint8_t answered[FRAMES_MAX + 1];
	static uint8_t rbuf[1 << 16];
	uint8_t *out;
	unsigned nframes, replies = 0;
	uint64_t base = next_id;
	size_t total = build(data, size, base, &out, &nframes, patch), sent = 0;
	size_t have = 0;   /* bytes in rbuf */
	uint64_t skip = 0; /* body and data of the current reply still to come */
	int fd, eof = 0;

	memset(answered, 0, sizeof(answered));
	next_id += nframes;
	if (nframes && conn_fd < 0)
		conn_fd = fuzz_dial(addr);
	fd = conn_fd;
	/* until every reply is in, to its last byte, so the next input starts clean */
	while (nframes && !eof && (sent < total || replies < nframes || skip)) {
		struct pollfd p = {.fd = fd, .events = POLLIN | (sent < total ? POLLOUT : 0)};
		int rc = poll(&p, 1, WAIT_MS);

		if (rc == 0) {
			fprintf(stderr,
				"no reply within %d ms: %u of %u frames answered, %zu of "
				"%zu bytes sent\n",
				WAIT_MS, replies, nframes, sent, total);
			abort();
		}
		if (rc < 0) {
			FUZZ_ASSERT(errno == EINTR);
			continue;
		}
		if ((p.revents & POLLOUT) && sent < total) {
			ssize_t w = send(fd, out + sent, total - sent, MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w > 0)
				sent += (size_t)w;
			else if (w < 0 && errno != EAGAIN && errno != EINTR)
				sent = total; /* the server closed: read what it said */
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = recv(fd, rbuf + have, sizeof(rbuf) - have, MSG_DONTWAIT);

			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
				eof = 1;
				break;
			}
			if (r < 0)
				continue;
			have += (size_t)r;
			/* parse: skip what remains of the last reply, then whole headers */
			for (;;) {
				struct lode_wire_hdr h;
				size_t take = skip < have ? (size_t)skip : have;

				memmove(rbuf, rbuf + take, have - take);
				have -= take;
				skip -= take;
				if (skip || have < sizeof(h))
					break;
				memcpy(&h, rbuf, sizeof(h));
				if (lode_hdr_check(&h, 1)) {
					fprintf(stderr,
						"malformed reply header (opcode %u, status "
						"%d, body %u, data %llu)\n",
						h.opcode, h.status, h.body_len,
						(unsigned long long)h.data_len);
					abort();
				}
				FUZZ_ASSERT(h.req_id >= base && h.req_id < base + nframes);
				FUZZ_ASSERT(!answered[h.req_id - base]);
				FUZZ_ASSERT(h.status >= 0);
				answered[h.req_id - base] = 1;
				replies++;
				memmove(rbuf, rbuf + sizeof(h), have - sizeof(h));
				have -= sizeof(h);
				skip = h.body_len + h.data_len;
			}
		}
	}
	if (getenv("LODE_FUZZ_VERBOSE"))
		fprintf(stderr, "%u frames, %u replies%s\n", nframes, replies,
			eof ? ", then the server closed" : "");
	if (eof) {
		close(conn_fd);
		conn_fd = -1;
	} else if (nframes) {
		FUZZ_ASSERT(have == 0); /* nothing but the replies asked for */
	}
	free(out);
	return replies;
}

void fuzz_wait_idle(struct lode_server *srv)
{
	for (unsigned ms = 0; lode_server_live_requests(srv); ms++) {
		if (ms == 30000) {
			fprintf(stderr, "fuzz: a request of a closed connection never ended\n");
			abort();
		}
		usleep(1000);
	}
}
