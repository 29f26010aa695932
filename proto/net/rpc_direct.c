/* SPDX-License-Identifier: MIT */
/*
 * Direct calls (rpc_direct.h): blocking TCP connections, one call at a time each, on the
 * caller's thread. The frame is the same as the TCP transport's: the header, the body,
 * the data; the reply's likewise.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "codec.h"
#include "loop.h"
#include "rpc.h"
#include "rpc_direct.h"

#define IDLE_MAX 16 /* idle connections kept; more are closed when given back */
#define IOV_MAX_ (LODE_DIRECT_IOV_MAX + 3) /* of one request: header, body, capability, data */

struct dconn {
	int fd;
	uint64_t next_id;
	struct dconn *next;
};

struct lode_direct_pool {
	struct lode_addr addr;
	struct lode_direct_auth auth;
	unsigned default_timeout_ms;
	unsigned *server_flags;
	pthread_mutex_t lock;
	struct dconn *idle; /* protected by lock */
	unsigned nidle;	    /* protected by lock */
};

/* Waits until fd is ready for ev or deadline_ms passes. Returns 0 or -errno. */
static int wait_fd(int fd, short ev, uint64_t deadline_ms)
{
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = ev};
		uint64_t now = lode_now_ms();
		int n;

		if (now >= deadline_ms)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)(deadline_ms - now));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* Moves past the n bytes of iov[0..*cnt) that a sendmsg or recvmsg took. */
static struct iovec *iov_advance(struct iovec *iov, size_t *cnt, size_t n)
{
	while (*cnt && n >= iov->iov_len) {
		n -= iov->iov_len;
		iov++;
		(*cnt)--;
	}
	if (*cnt) {
		iov->iov_base = (char *)iov->iov_base + n;
		iov->iov_len -= n;
	}
	return iov;
}

static int send_all(int fd, struct iovec *iov, size_t cnt, uint64_t deadline_ms)
{
	while (cnt) {
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = cnt};
		ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		int rc;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			rc = wait_fd(fd, POLLOUT, deadline_ms);
			if (rc)
				return rc;
			continue;
		}
		iov = iov_advance(iov, &cnt, (size_t)n);
	}
	return 0;
}

/* Reads len bytes into buf. */
static int recv_all(int fd, void *buf, uint64_t len, uint64_t deadline_ms)
{
	while (len) {
		ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
		int rc;

		if (n == 0)
			return -ECONNRESET; /* the server closed it */
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			rc = wait_fd(fd, POLLIN, deadline_ms);
			if (rc)
				return rc;
			continue;
		}
		buf = (char *)buf + n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* Whether h is a well-formed reply to request id (0: the handshake's) of opcode. */
static bool hdr_answers(const struct lode_wire_hdr *h, uint8_t opcode, uint64_t id)
{
	return !lode_hdr_check(h, 1) && h->req_id == id && h->opcode == opcode;
}

/* Reads a reply's header, checked, for request id (0: the handshake's). */
static int recv_hdr(int fd, struct lode_wire_hdr *h, uint8_t opcode, uint64_t id,
		    uint64_t deadline_ms)
{
	int rc = recv_all(fd, h, sizeof(*h), deadline_ms);

	if (rc)
		return rc;
	return hdr_answers(h, opcode, id) ? 0 : -EPROTO;
}

static int send_auth(int fd, const struct lode_wire_auth_req *req, uint64_t deadline_ms)
{
	struct lode_wire_hdr h;
	struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)req, sizeof(*req)}};

	lode_hdr_init(&h, LODE_OP_AUTH, 0, sizeof(*req), 0);
	return send_all(fd, iov, 2, deadline_ms);
}

/* The handshake (auth.h), as rpc.c's: step 1, the server's proof, step 2 and its answer. */
static int handshake(struct lode_direct_pool *p, int fd, uint64_t deadline_ms)
{
	struct lode_wire_auth_req req = {.step = 1, .role = p->auth.role};
	struct lode_wire_auth_rep rep;
	struct lode_wire_hdr h;
	uint8_t cnonce[LODE_NONCE_BYTES], proof[LODE_PROOF_BYTES];
	bool step2;
	int rc;

	if (p->auth.has_key) {
		lode_auth_nonce(cnonce, sizeof(cnonce));
		memcpy(req.nonce, cnonce, sizeof(cnonce));
	} else {
		req.flags = LODE_AUTH_F_NOKEY;
	}
	memcpy(req.group, p->auth.group, sizeof(req.group));
	rc = send_auth(fd, &req, deadline_ms);
	if (!rc)
		rc = recv_hdr(fd, &h, LODE_OP_AUTH, 0, deadline_ms);
	if (rc)
		return rc;
	if (h.status) /* refused: a keyless client where a key is needed, an unknown role */
		return lode_status_to_errno(h.status) == -EACCES ? -EACCES : -EPROTO;
	if (h.body_len != sizeof(rep) || h.data_len)
		return -EPROTO; /* before reading a body of the wrong size */
	rc = recv_all(fd, &rep, sizeof(rep), deadline_ms);
	if (!rc)
		rc = lode_auth_check_server(h.body_len, &rep, p->auth.has_key ? p->auth.key : NULL,
					    p->auth.role, cnonce, &step2, proof);
	if (rc)
		return rc;
	if (step2) {
		req = (struct lode_wire_auth_req){.step = 2, .role = p->auth.role};
		memcpy(req.proof, proof, sizeof(proof));
		rc = send_auth(fd, &req, deadline_ms);
		if (!rc)
			rc = recv_hdr(fd, &h, LODE_OP_AUTH, 0, deadline_ms);
		if (rc)
			return rc == -ECONNRESET ? -EACCES : rc; /* our proof refused */
		if (h.status || h.body_len || h.data_len)
			return -EPROTO;
	}
	if (p->server_flags)
		__atomic_store_n(p->server_flags, rep.flags, __ATOMIC_RELAXED);
	return 0;
}

static int conn_open(struct lode_direct_pool *p, uint64_t deadline_ms, struct dconn **out)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1, err = 0;
	socklen_t elen = sizeof(err);
	struct dconn *d;
	int rc = 0;

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)&p->addr.sin, sizeof(p->addr.sin))) {
		if (errno != EINPROGRESS)
			rc = -errno;
		else if (!(rc = wait_fd(fd, POLLOUT, deadline_ms)) &&
			 !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) && err)
			rc = -err;
	}
	if (!rc)
		rc = handshake(p, fd, deadline_ms);
	d = rc ? NULL : calloc(1, sizeof(*d));
	if (!rc && !d)
		rc = -ENOMEM;
	if (rc) {
		close(fd);
		return rc;
	}
	d->fd = fd;
	d->next_id = 1;
	*out = d;
	return 0;
}

static void conn_close(struct dconn *d)
{
	close(d->fd);
	free(d);
}

/* An idle connection the server has not closed, or NULL. */
static struct dconn *take_idle(struct lode_direct_pool *p)
{
	for (;;) {
		struct dconn *d;
		char c;

		pthread_mutex_lock(&p->lock);
		d = p->idle;
		if (d) {
			p->idle = d->next;
			p->nidle--;
		}
		pthread_mutex_unlock(&p->lock);
		if (!d)
			return NULL;
		/* an idle connection has nothing to read: anything (an end, an error, a stray
		 * frame) means it is no longer of use */
		if (recv(d->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN)
			return d;
		conn_close(d);
	}
}

static void give_back(struct lode_direct_pool *p, struct dconn *d)
{
	pthread_mutex_lock(&p->lock);
	if (p->nidle < IDLE_MAX) {
		d->next = p->idle;
		p->idle = d;
		p->nidle++;
		d = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	if (d)
		conn_close(d);
}

/* After a transport error: the idle connections went the same way, most likely. */
static void drop_idle(struct lode_direct_pool *p)
{
	struct dconn *d;

	pthread_mutex_lock(&p->lock);
	d = p->idle;
	p->idle = NULL;
	p->nidle = 0;
	pthread_mutex_unlock(&p->lock);
	while (d) {
		struct dconn *next = d->next;

		conn_close(d);
		d = next;
	}
}

/* The results of a reply whose header h was checked and whose body and data were read. */
static void reply_done(struct lode_call *call, const struct lode_wire_hdr *h)
{
	call->reply_body_len = h->body_len;
	call->reply_data_len = h->data_len;
	call->status = lode_status_to_errno(h->status);
	call->reply_grant_flag = h->flags & LODE_WIRE_F_GRANT;
	call->reply_grant = h->grant;
}

/*
 * The reply of a call that takes no reply data: header and body, nothing after them (the
 * connection carries one call at a time). It waits first (the reply cannot be there the
 * moment the request left) and reads both in one go: two system calls where reading the
 * header, then the body, took four (a metadata call through the mount makes a few).
 */
static int exchange_reply_small(struct dconn *d, struct lode_call *call, uint64_t id,
				uint64_t deadline_ms)
{
	struct lode_wire_hdr h;
	struct iovec iov[2] = {{&h, sizeof(h)}, {call->reply_body, call->reply_body_max}};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = call->reply_body_max ? 2 : 1};
	size_t got = 0;
	int rc;

	while (got < sizeof(h)) {
		ssize_t n;

		rc = wait_fd(d->fd, POLLIN, deadline_ms);
		if (rc)
			return rc;
		n = recvmsg(d->fd, &msg, MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		got += (size_t)n;
		msg.msg_iov = iov_advance(msg.msg_iov, &msg.msg_iovlen, (size_t)n);
	}
	if (!hdr_answers(&h, call->opcode, id) || h.body_len > call->reply_body_max || h.data_len ||
	    got - sizeof(h) > h.body_len)
		return -EPROTO; /* the connection goes, with whatever else came */
	rc = recv_all(d->fd, (char *)call->reply_body + (got - sizeof(h)),
		      h.body_len - (got - sizeof(h)), deadline_ms);
	if (rc)
		return rc;
	reply_done(call, &h);
	return 0;
}

/* Sends the request (dlen bytes of data) and reads its reply on d. Returns 0 with call->status set
 * (the connection is fine), or a transport error (it is not). */
static int exchange(struct dconn *d, struct lode_call *call, uint64_t dlen, uint64_t deadline_ms)
{
	struct iovec iov[IOV_MAX_];
	struct lode_wire_hdr h;
	uint64_t id = d->next_id++;
	int n = 0, rc;

	lode_hdr_init(&h, call->opcode, id,
		      call->body_len + (call->cap ? (uint32_t)sizeof(*call->cap) : 0), dlen);
	h.flags = (call->lazy ? LODE_WIRE_F_LAZY : 0) | (call->grant_flag ? LODE_WIRE_F_GRANT : 0) |
		  (call->cap ? LODE_WIRE_F_CAP : 0);
	h.grant = call->grant_flag ? call->grant : 0;
	iov[n++] = (struct iovec){&h, sizeof(h)};
	if (call->body_len)
		iov[n++] = (struct iovec){(void *)call->body, call->body_len};
	if (call->cap) /* the capability ends the body (LODE_WIRE_F_CAP) */
		iov[n++] = (struct iovec){(void *)call->cap, sizeof(*call->cap)};
	for (int i = 0; i < call->data_iovcnt; i++)
		if (call->data[i].iov_len)
			iov[n++] = call->data[i];
	rc = send_all(d->fd, iov, (size_t)n, deadline_ms);
	if (!rc && !call->reply_data_max)
		return exchange_reply_small(d, call, id, deadline_ms);
	if (!rc)
		rc = recv_hdr(d->fd, &h, call->opcode, id, deadline_ms);
	if (rc)
		return rc;
	if (h.body_len > call->reply_body_max || h.data_len > call->reply_data_max ||
	    (h.data_len && !call->reply_data))
		return -EPROTO; /* does not fit: the connection goes, with what is left unread */
	rc = recv_all(d->fd, call->reply_body, h.body_len, deadline_ms);
	if (!rc)
		rc = recv_all(d->fd, call->reply_data, h.data_len, deadline_ms);
	if (rc)
		return rc;
	reply_done(call, &h);
	return 0;
}

int lode_direct_call(struct lode_direct_pool *p, struct lode_call *call)
{
	uint64_t deadline_ms =
	    lode_now_ms() + (call->timeout_ms ? call->timeout_ms : p->default_timeout_ms);
	uint64_t dlen = 0;
	struct dconn *d;
	int rc;

	call->status = 0;
	call->reply_body_len = 0;
	call->reply_data_len = 0;
	call->reply_grant_flag = false;
	call->reply_grant = 0;
	for (int i = 0; i < call->data_iovcnt; i++)
		dlen += call->data[i].iov_len;
	if (!lode_op_known(call->opcode) ||
	    call->body_len + (call->cap ? sizeof(*call->cap) : 0) > LODE_BODY_MAX ||
	    (call->cap && !lode_op_takes_cap(call->opcode)) || dlen > LODE_DATA_MAX ||
	    call->data_iovcnt < 0 || call->data_iovcnt > LODE_DIRECT_IOV_MAX)
		return call->status = -EMSGSIZE;
	d = take_idle(p);
	if (!d) {
		rc = conn_open(p, deadline_ms, &d);
		if (rc)
			return call->status = rc;
	}
	rc = exchange(d, call, dlen, deadline_ms);
	if (rc) {
		conn_close(d);
		if (rc != -ETIMEDOUT && rc != -EPROTO)
			drop_idle(p);
		call->reply_body_len = 0;
		call->reply_data_len = 0;
		return call->status = rc;
	}
	give_back(p, d);
	return call->status;
}

int lode_direct_pool_create(const struct lode_addr *addr, const struct lode_direct_auth *auth,
			    unsigned default_timeout_ms, unsigned *server_flags,
			    struct lode_direct_pool **out)
{
	struct lode_direct_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->addr = *addr;
	p->auth = *auth;
	p->default_timeout_ms = default_timeout_ms;
	p->server_flags = server_flags;
	pthread_mutex_init(&p->lock, NULL);
	*out = p;
	return 0;
}

void lode_direct_pool_destroy(struct lode_direct_pool *p)
{
	if (!p)
		return;
	drop_idle(p);
	explicit_bzero(p->auth.key, sizeof(p->auth.key));
	pthread_mutex_destroy(&p->lock);
	free(p);
}
