/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the TCP transport's frame reassembly (proto/net/transport_tcp.c): the byte stream
 * a peer sends is cut into header, body and data parts across however many recv()s it
 * takes, checked with lode_hdr_check, and handed up frame by frame.
 *
 * In process, without a network: one end of a socketpair is attached to a lode_loop with
 * the TCP transport's own attach(), the other end is written from the loop thread in
 * chunks of a size the input picks (so frames straddle recv boundaries), then shut down.
 * The loop runs until the transport reports the connection closed.
 *
 * Input: [mode u8][chunk u8][the stream]. mode bit 0: the receiver expects replies (a
 * client) rather than requests; bit 1: bulk data is received into a buffer (else
 * discarded, as for a reply nobody waits for); bit 2: request headers are checked against
 * their opcode's bounds, as the daemons do. Every frame handed up must have passed the
 * header checks and arrived whole: its header as sent, its body and data complete.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "codec.h"
#include "fuzz.h"
#include "loop.h"
#include "transport.h"

static struct lode_loop *loop;
static char body_buf[LODE_BODY_MAX] __attribute__((aligned(8)));
static char *data_buf; /* LODE_DATA_MAX */

struct feed {
	int fd;
	const uint8_t *p;
	size_t left;
	size_t chunk;
	unsigned mode;
	/* what the transport handed up */
	unsigned headers, frames;
	struct lode_wire_hdr last;
	int closed;
	int close_err;
};

static int on_header(struct lode_tconn *c, const struct lode_wire_hdr *hdr, void **body,
		     void **data)
{
	struct feed *f = lode_tconn_ctx(c);

	FUZZ_ASSERT(hdr->magic == LODE_WIRE_MAGIC && hdr->body_len <= LODE_BODY_MAX &&
		    hdr->data_len <= LODE_DATA_MAX);
	if ((f->mode & 4) && !(f->mode & 1) && lode_hdr_check_bounds(hdr))
		return -EMSGSIZE;
	f->headers++;
	f->last = *hdr;
	*body = body_buf;
	*data = (f->mode & 2) ? data_buf : NULL;
	return 0;
}

static void on_frame(struct lode_tconn *c, const struct lode_wire_hdr *hdr)
{
	struct feed *f = lode_tconn_ctx(c);

	FUZZ_ASSERT(f->frames + 1 == f->headers);
	FUZZ_ASSERT(memcmp(hdr, &f->last, sizeof(*hdr)) == 0);
	fuzz_touch(body_buf, hdr->body_len);
	f->frames++;
}

static void on_close(struct lode_tconn *c, int err)
{
	struct feed *f = lode_tconn_ctx(c);

	f->closed = 1;
	f->close_err = err;
	f->fd = -1; /* stop feeding */
	lode_loop_stop(loop);
}

static const struct lode_tconn_cbs cbs = {
    .on_header = on_header, .on_frame = on_frame, .on_close = on_close};

/* Writes the next chunk, then posts itself again until the stream is out; then EOF. */
static void feed_step(void *arg)
{
	struct feed *f = arg;
	size_t n = f->left < f->chunk ? f->left : f->chunk;

	if (f->fd < 0)
		return;
	if (n) {
		ssize_t w = send(f->fd, f->p, n, MSG_NOSIGNAL);

		if (w > 0) {
			f->p += w;
			f->left -= (size_t)w;
		} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
			f->left = 0; /* the receiver closed: stop feeding */
		}
	}
	if (f->left) {
		lode_loop_post(loop, feed_step, f);
		return;
	}
	shutdown(f->fd, SHUT_WR);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	if (lode_loop_create(&loop, 64)) {
		fprintf(stderr, "fuzz_tcp_frames: skip: no io_uring here\n");
		exit(77);
	}
	data_buf = malloc(LODE_DATA_MAX);
	if (!data_buf)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	struct feed f = {0};
	struct lode_tconn *c;
	int sv[2];

	f.mode = (unsigned)fuzz_take(&in, 1);
	f.chunk = (size_t)fuzz_take(&in, 1) * 61 + 1; /* 1 .. 15556 bytes a write */
	f.p = in.p;
	f.left = in.left;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return 0;
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	f.fd = sv[1];
	if (lode_transport_tcp.attach(loop, sv[0], f.mode & 1, &cbs, &f, &c)) {
		close(sv[1]);
		return 0;
	}
	lode_loop_post(loop, feed_step, &f);
	FUZZ_ASSERT(lode_loop_run(loop) == 0);
	FUZZ_ASSERT(f.closed);
	/* an orderly end of stream between frames closes with 0; anything else is an error */
	FUZZ_ASSERT(f.close_err <= 0);
	FUZZ_ASSERT(f.frames <= f.headers && f.headers <= f.frames + 1);
	close(sv[1]);
	lode_loop_run_pending(loop);
	return 0;
}
