/* SPDX-License-Identifier: MIT */
/*
 * TCP transport on io_uring.
 *
 * Receive: small frames are parsed out of a per-connection buffer; the bulk data of a
 * large frame is received straight into the destination the upper layer chose (the
 * caller's buffer on a client), so a read costs one copy: kernel to user.
 *
 * Send: frames queue on the connection; one sendmsg is in flight at a time and carries as
 * many queued frames as fit in one iovec array, so small replies are batched into one
 * system call. Short sends resume where they stopped.
 *
 * Close: shut the socket down, cancel what is in flight, and free the connection only
 * when every SQE that points at it has completed (in a posted function, so that on_close
 * never runs inside another callback of the same connection).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <liburing.h>

#include "codec.h"
#include "config.h"
#include "transport.h"

#define RBUF_SIZE    (256u << 10)
#define DIRECT_MIN   (16u << 10) /* receive straight into the destination from this size */
#define SEND_IOV_MAX 64

enum rstate { R_HDR, R_BODY, R_DATA };

struct lode_tconn {
	struct lode_tconn_base base; /* first: see transport.h */
	struct lode_loop *loop;
	int fd;
	int expect_reply;
	const struct lode_tconn_cbs *cbs;

	/* receive */
	struct lode_io recv_io;
	bool recv_inflight;
	bool recv_direct; /* the recv in flight targets data_dst, not rbuf */
	bool paused;
	char *rbuf;
	size_t rstart, rend;
	enum rstate rstate;
	struct lode_wire_hdr hdr;
	char *body_dst;
	uint64_t body_got;
	char *data_dst;
	uint64_t data_got;

	/* send */
	struct lode_io send_io;
	bool send_inflight;
	bool splicing_in;   /* the op in flight moves file -> pipe (else pipe -> socket) */
	int pipe_fd[2];	    /* for file data: -1 until first needed */
	uint32_t pipe_fill; /* bytes in the pipe, not yet in the socket */
	uint32_t pipe_cap;  /* the pipe's capacity: one splice in never blocks on it */
	struct lode_io splice_io;
	struct lode_send *sq_head, *sq_tail;
	size_t sq_off; /* bytes of sq_head already sent */
	struct iovec siov[SEND_IOV_MAX];
	struct msghdr smsg;

	/* connect */
	struct lode_io conn_io;
	bool connecting;
	struct sockaddr_in peer;

	/* close */
	bool closing;
	bool finish_posted;
	int close_err;
	struct lode_io cancel_io;
};

/* After an accept failed for want of descriptors or memory, the listener waits this long
 * before it tries again: accepting at once would fail at once, in a loop that spins. */
#define ACCEPT_BACKOFF_MS 100

struct lode_listener {
	struct lode_loop *loop;
	int fd;
	struct lode_io io;
	struct lode_timer backoff; /* armed instead of io while waiting (waiting) */
	bool waiting;
	bool closing;
	void (*on_accept)(void *ctx, intptr_t cookie);
	void *ctx;
};

static void recv_arm(struct lode_tconn *c);
static void send_kick(struct lode_tconn *c);
static void tcp_close(struct lode_tconn *c, int err);

static void sock_tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static struct lode_tconn *tconn_new(struct lode_loop *loop, int fd, int expect_reply,
				    const struct lode_tconn_cbs *cbs, void *ctx)
{
	struct lode_tconn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->rbuf = malloc(RBUF_SIZE);
	if (!c->rbuf) {
		free(c);
		return NULL;
	}
	c->loop = loop;
	c->fd = fd;
	c->expect_reply = expect_reply;
	c->cbs = cbs;
	c->base.ops = &lode_transport_tcp;
	c->base.ctx = ctx;
	c->pipe_fd[0] = c->pipe_fd[1] = -1;
	return c;
}

/* ---- close ---- */

static void finish(void *arg)
{
	struct lode_tconn *c = arg;
	struct lode_send *s;

	c->finish_posted = false;
	if (c->recv_inflight || c->send_inflight || c->connecting) {
		return; /* a completion will call maybe_finish again */
	}
	while ((s = c->sq_head)) {
		c->sq_head = s->next_;
		free(s->body_heap_);
		s->body_heap_ = NULL;
		if (s->done)
			s->done(s, c->close_err ? c->close_err : -ECONNRESET);
	}
	c->cbs->on_close(c, c->close_err);
	if (c->pipe_fd[0] >= 0) {
		close(c->pipe_fd[0]);
		close(c->pipe_fd[1]);
	}
	close(c->fd);
	free(c->rbuf);
	free(c);
}

static void maybe_finish(struct lode_tconn *c)
{
	if (!c->closing || c->finish_posted)
		return;
	if (c->recv_inflight || c->send_inflight || c->connecting)
		return;
	c->finish_posted = true;
	lode_loop_post(c->loop, finish, c);
}

static void tcp_close(struct lode_tconn *c, int err)
{
	if (c->closing)
		return;
	c->closing = true;
	c->close_err = err;
	shutdown(c->fd, SHUT_RDWR);
	if (c->recv_inflight)
		lode_loop_cancel(c->loop, &c->recv_io);
	if (c->send_inflight) {
		lode_loop_cancel(c->loop, &c->send_io);
		lode_loop_cancel(c->loop, &c->splice_io);
	}
	if (c->connecting)
		lode_loop_cancel(c->loop, &c->conn_io);
	maybe_finish(c);
}

/* ---- receive ---- */

/* Moves what the buffer holds of one part of the frame (body or data) to dst (NULL: drop
 * it). Returns true once the part is complete, else arms the next recv. */
static bool take_part(struct lode_tconn *c, char *dst, uint64_t *got, uint64_t want, size_t avail)
{
	uint64_t take = want - *got;

	if (take > avail)
		take = avail;
	if (dst)
		memcpy(dst + *got, c->rbuf + c->rstart, take);
	c->rstart += take;
	*got += take;
	if (*got < want) {
		recv_arm(c);
		return false;
	}
	return true;
}

/* Parses as much as the buffer holds; arms the next recv. */
static void process(struct lode_tconn *c)
{
	for (;;) {
		size_t avail = c->rend - c->rstart;

		if (c->closing)
			return;
		switch (c->rstate) {
		case R_HDR: {
			void *body = NULL, *data = NULL;
			int rc;

			if (c->paused)
				return;
			if (avail < sizeof(c->hdr)) {
				recv_arm(c);
				return;
			}
			memcpy(&c->hdr, c->rbuf + c->rstart, sizeof(c->hdr));
			c->rstart += sizeof(c->hdr);
			rc = lode_hdr_check(&c->hdr, c->expect_reply);
			if (!rc)
				rc = c->cbs->on_header(c, &c->hdr, &body, &data);
			if (rc) {
				tcp_close(c, rc);
				return;
			}
			c->body_dst = body;
			c->data_dst = data;
			c->body_got = 0;
			c->data_got = 0;
			c->rstate = R_BODY;
			break;
		}
		case R_BODY:
			if (!take_part(c, c->body_dst, &c->body_got, c->hdr.body_len, avail))
				return;
			c->rstate = R_DATA;
			break;
		case R_DATA:
			if (!take_part(c, c->data_dst, &c->data_got, c->hdr.data_len, avail))
				return;
			c->rstate = R_HDR;
			c->cbs->on_frame(c, &c->hdr);
			break;
		}
	}
}

static void recv_done(struct lode_io *io, int res)
{
	struct lode_tconn *c = lode_container_of(io, struct lode_tconn, recv_io);

	c->recv_inflight = false;
	if (c->closing) {
		maybe_finish(c);
		return;
	}
	if (res == -EINTR || res == -EAGAIN) {
		recv_arm(c);
		return;
	}
	if (res <= 0) {
		tcp_close(c, res);
		return;
	}
	if (c->recv_direct)
		c->data_got += (uint64_t)res;
	else
		c->rend += (size_t)res;
	if (c->recv_direct && c->data_got == c->hdr.data_len) {
		c->rstate = R_HDR;
		c->cbs->on_frame(c, &c->hdr);
	}
	process(c);
}

static void recv_arm(struct lode_tconn *c)
{
	struct io_uring_sqe *sqe;

	if (c->recv_inflight || c->closing || c->connecting)
		return;
	if (c->rstate == R_DATA && c->data_dst && c->rstart == c->rend &&
	    c->hdr.data_len - c->data_got >= DIRECT_MIN) {
		uint64_t want = c->hdr.data_len - c->data_got;

		c->recv_direct = true;
		sqe = lode_loop_sqe(c->loop, &c->recv_io);
		io_uring_prep_recv(sqe, c->fd, c->data_dst + c->data_got, (size_t)want,
				   MSG_WAITALL);
	} else {
		if (c->rstart == c->rend) {
			c->rstart = c->rend = 0;
		} else if (c->rstart > 0 && RBUF_SIZE - c->rend < sizeof(c->hdr)) {
			memmove(c->rbuf, c->rbuf + c->rstart, c->rend - c->rstart);
			c->rend -= c->rstart;
			c->rstart = 0;
		}
		c->recv_direct = false;
		sqe = lode_loop_sqe(c->loop, &c->recv_io);
		io_uring_prep_recv(sqe, c->fd, c->rbuf + c->rend, RBUF_SIZE - c->rend, 0);
	}
	c->recv_inflight = true;
}

/* ---- send ---- */

static size_t frame_len(const struct lode_send *s)
{
	return sizeof(s->hdr) + s->body_len + s->hdr.data_len;
}

/* The part of a frame that goes by sendmsg when its data comes from a file. */
static size_t head_len(const struct lode_send *s)
{
	return sizeof(s->hdr) + s->body_len;
}

/* Adds [base, base + len) minus the first *skip bytes to the iovec array. */
static int iov_add(struct iovec *iov, int n, const void *base, size_t len, size_t *skip)
{
	if (*skip >= len) {
		*skip -= len;
		return n;
	}
	if (n == SEND_IOV_MAX)
		return n;
	iov[n].iov_base = (char *)base + *skip;
	iov[n].iov_len = len - *skip;
	*skip = 0;
	return n + 1;
}

/*
 * Completes the frames `sent` bytes finished. send_inflight stays set meanwhile: a done
 * callback may queue a new frame (a reply, or a request read after backpressure lifts),
 * and that frame must wait in the queue, not start a send of its own from a queue head this
 * loop is still consuming.
 */
static void sent_bytes(struct lode_tconn *c, size_t sent)
{
	while (sent && c->sq_head) {
		struct lode_send *s = c->sq_head;
		size_t left = frame_len(s) - c->sq_off;

		if (sent < left) {
			c->sq_off += sent;
			break;
		}
		sent -= left;
		c->sq_off = 0;
		c->sq_head = s->next_;
		if (!c->sq_head)
			c->sq_tail = NULL;
		free(s->body_heap_);
		s->body_heap_ = NULL;
		if (s->done)
			s->done(s, 0);
		if (c->closing)
			break;
	}
	c->send_inflight = false;
	if (c->closing) {
		maybe_finish(c);
		return;
	}
	send_kick(c);
	if (!c->sq_head && c->cbs->on_send_drained)
		c->cbs->on_send_drained(c);
}

static void send_done(struct lode_io *io, int res)
{
	struct lode_tconn *c = lode_container_of(io, struct lode_tconn, send_io);

	if (c->closing || res < 0) {
		c->send_inflight = false;
		if (c->closing)
			maybe_finish(c);
		else if (res == -EINTR || res == -EAGAIN)
			send_kick(c);
		else
			tcp_close(c, res);
		return;
	}
	sent_bytes(c, (size_t)res);
}

static void splice_done(struct lode_io *io, int res)
{
	struct lode_tconn *c = lode_container_of(io, struct lode_tconn, splice_io);

	if (c->closing || res <= 0) {
		c->send_inflight = false;
		if (c->closing)
			maybe_finish(c);
		else if (res == -EINTR || res == -EAGAIN)
			send_kick(c);
		else
			tcp_close(c, res ? res : -EIO); /* 0: the file is shorter than promised */
		return;
	}
	if (c->splicing_in) {
		c->pipe_fill += (uint32_t)res;
		c->send_inflight = false;
		send_kick(c);
		return;
	}
	c->pipe_fill -= (uint32_t)res;
	sent_bytes(c, (size_t)res);
}

/* The next step of the head frame's file data: fill the pipe from the file, or empty it
 * into the socket. Both are splices: the data never enters user space. */
static void splice_step(struct lode_tconn *c, struct lode_send *s)
{
	struct io_uring_sqe *sqe;
	uint64_t done_bytes = c->sq_off - head_len(s) + c->pipe_fill;
	uint32_t left = s->file_len - (uint32_t)done_bytes;

	if (c->pipe_fd[0] < 0) {
		if (pipe2(c->pipe_fd, O_CLOEXEC) < 0) {
			tcp_close(c, -errno);
			return;
		}
		fcntl(c->pipe_fd[1], F_SETPIPE_SZ, 1 << 20); /* best effort: bigger steps */
		c->pipe_cap = (uint32_t)fcntl(c->pipe_fd[1], F_GETPIPE_SZ);
	}
	c->splice_io.cb = splice_done;
	sqe = lode_loop_sqe(c->loop, &c->splice_io);
	if (c->pipe_fill) {
		c->splicing_in = false;
		io_uring_prep_splice(sqe, c->pipe_fd[0], -1, c->fd, -1, c->pipe_fill,
				     SPLICE_F_MOVE | (left ? SPLICE_F_MORE : 0));
	} else {
		c->splicing_in = true;
		io_uring_prep_splice(sqe, s->file_fd, (int64_t)(s->file_off + done_bytes),
				     c->pipe_fd[1], -1, left < c->pipe_cap ? left : c->pipe_cap,
				     SPLICE_F_MOVE);
	}
	c->send_inflight = true;
}

static void send_kick(struct lode_tconn *c)
{
	struct io_uring_sqe *sqe;
	size_t skip = c->sq_off;
	int n = 0;

	bool more = false;

	if (c->send_inflight || c->closing || c->connecting || !c->sq_head)
		return;
	if (c->sq_head->file_len && c->sq_off >= head_len(c->sq_head)) {
		splice_step(c, c->sq_head);
		return;
	}
	for (struct lode_send *s = c->sq_head; s && n < SEND_IOV_MAX - 2; s = s->next_) {
		const void *body = s->body;

		n = iov_add(c->siov, n, &s->hdr, sizeof(s->hdr), &skip);
		if (s->body_len)
			n = iov_add(c->siov, n, body, s->body_len, &skip);
		for (int i = 0; i < s->data_iovcnt; i++)
			if (s->data[i].iov_len)
				n = iov_add(c->siov, n, s->data[i].iov_base, s->data[i].iov_len,
					    &skip);
		if (s->file_len) {
			more = true; /* its file data follows by splice: batch nothing past it */
			break;
		}
	}
	memset(&c->smsg, 0, sizeof(c->smsg));
	c->smsg.msg_iov = c->siov;
	c->smsg.msg_iovlen = (size_t)n;
	sqe = lode_loop_sqe(c->loop, &c->send_io);
	io_uring_prep_sendmsg(sqe, c->fd, &c->smsg, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
	c->send_inflight = true;
}

static void tcp_send(struct lode_tconn *c, struct lode_send *s)
{
	lode_send_prepare(s);
	if (c->closing) {
		free(s->body_heap_);
		s->body_heap_ = NULL;
		if (s->done)
			s->done(s, c->close_err ? c->close_err : -ECONNRESET);
		return;
	}
	if (c->sq_tail)
		c->sq_tail->next_ = s;
	else
		c->sq_head = s;
	c->sq_tail = s;
	send_kick(c);
}

/* ---- connect / accept ---- */

static void connect_done(struct lode_io *io, int res)
{
	struct lode_tconn *c = lode_container_of(io, struct lode_tconn, conn_io);

	c->connecting = false;
	if (c->closing) {
		maybe_finish(c);
		return;
	}
	if (res < 0) {
		tcp_close(c, res);
		return;
	}
	recv_arm(c);
	send_kick(c);
}

static int tcp_connect(struct lode_loop *loop, const struct lode_addr *addr,
		       const struct lode_tconn_cbs *cbs, void *ctx, struct lode_tconn **out)
{
	struct lode_tconn *c;
	int fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sock_tune(fd);
	c = tconn_new(loop, fd, 1, cbs, ctx);
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->peer = addr->sin;
	c->conn_io.cb = connect_done;
	c->recv_io.cb = recv_done;
	c->send_io.cb = send_done;
	c->connecting = true;
	io_uring_prep_connect(lode_loop_sqe(loop, &c->conn_io), fd, (struct sockaddr *)&c->peer,
			      sizeof(c->peer));
	*out = c;
	return 0;
}

static int tcp_attach(struct lode_loop *loop, intptr_t cookie, int expect_reply,
		      const struct lode_tconn_cbs *cbs, void *ctx, struct lode_tconn **out)
{
	int fd = (int)cookie;
	struct lode_tconn *c;

	sock_tune(fd);
	c = tconn_new(loop, fd, expect_reply, cbs, ctx);
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->recv_io.cb = recv_done;
	c->send_io.cb = send_done;
	recv_arm(c);
	*out = c;
	return 0;
}

static void accept_arm(struct lode_listener *l);

static void accept_done(struct lode_io *io, int res)
{
	struct lode_listener *l = lode_container_of(io, struct lode_listener, io);

	if (l->closing) {
		if (res >= 0)
			close(res);
		close(l->fd);
		free(l);
		return;
	}
	if (res >= 0) {
		l->on_accept(l->ctx, res);
	} else if (res == -EMFILE || res == -ENFILE || res == -ENOBUFS || res == -ENOMEM) {
		/* the connection stays in the backlog; try again once something may have freed */
		l->waiting = true;
		lode_loop_timer(l->loop, &l->backoff, ACCEPT_BACKOFF_MS);
		return;
	}
	accept_arm(l);
}

static void backoff_done(struct lode_io *io, int res)
{
	struct lode_listener *l = lode_container_of(io, struct lode_listener, backoff.io);

	(void)res;
	l->waiting = false;
	if (l->closing) {
		close(l->fd);
		free(l);
		return;
	}
	accept_arm(l);
}

static void accept_arm(struct lode_listener *l)
{
	io_uring_prep_accept(lode_loop_sqe(l->loop, &l->io), l->fd, NULL, NULL, SOCK_CLOEXEC);
}

static int tcp_listen(struct lode_loop *loop, const struct lode_addr *addr,
		      void (*on_accept)(void *ctx, intptr_t cookie), void *ctx,
		      struct lode_listener **out)
{
	struct lode_listener *l;
	int one = 1, fd, rc;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&addr->sin, sizeof(addr->sin)) < 0 ||
	    listen(fd, 512) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return -ENOMEM;
	}
	l->loop = loop;
	l->fd = fd;
	l->io.cb = accept_done;
	l->backoff.io.cb = backoff_done;
	l->on_accept = on_accept;
	l->ctx = ctx;
	accept_arm(l);
	*out = l;
	return 0;
}

static void tcp_listener_addr(const struct lode_listener *l, struct lode_addr *out)
{
	socklen_t len = sizeof(out->sin);

	memset(out, 0, sizeof(*out));
	out->scheme = LODE_SCHEME_TCP;
	getsockname(l->fd, (struct sockaddr *)&out->sin, &len);
}

/* Loop thread: the pending accept completes with -ECANCELED and frees the listener. */
static void tcp_listener_close(struct lode_listener *l)
{
	l->closing = true;
	shutdown(l->fd, SHUT_RDWR);
	lode_loop_cancel(l->loop, l->waiting ? &l->backoff.io : &l->io);
}

/* For a loop that never ran: its queued accept SQE dies with the ring. */
static void tcp_listener_abort(struct lode_listener *l)
{
	close(l->fd);
	free(l);
}

static void tcp_pause(struct lode_tconn *c, int paused)
{
	c->paused = paused != 0;
	if (!c->paused && c->rstate == R_HDR)
		process(c);
}

static void tcp_close_cookie(intptr_t cookie)
{
	close((int)cookie);
}

static uint32_t tcp_cookie_peer(intptr_t cookie)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	if (getpeername((int)cookie, (struct sockaddr *)&sin, &len) || sin.sin_family != AF_INET)
		return 0;
	return sin.sin_addr.s_addr;
}

const struct lode_transport_ops lode_transport_tcp = {
    .scheme = "tcp",
    .listen = tcp_listen,
    .listener_addr = tcp_listener_addr,
    .listener_close = tcp_listener_close,
    .listener_abort = tcp_listener_abort,
    .attach = tcp_attach,
    .connect = tcp_connect,
    .send = tcp_send,
    .pause = tcp_pause,
    .close = tcp_close,
    .close_cookie = tcp_close_cookie,
    .cookie_peer = tcp_cookie_peer,
};
