/* SPDX-License-Identifier: MIT */
/*
 * The transport interface: how frames move between two Lode processes.
 *
 * Shaped for RDMA and emulated by TCP. A frame is a small control part (header + body)
 * plus optional bulk data. On the receive side the upper layer decides, from the header,
 * where the body and the bulk data land (on_header): for a client that is the caller's
 * own buffer, which an RDMA transport would have registered and named in the request so
 * that the server pushes the data straight into it; TCP receives into it from the socket.
 * On the send side, bulk data is a list of iovecs that the transport sends after the
 * control part (TCP) or that the peer pulls (RDMA).
 *
 * Everything about a connection happens on the loop it is attached to. Each
 * implementation lives in its own file (transport_tcp.c, transport_rdma.c) and fills a
 * struct lode_transport_ops.
 */
#ifndef LODE_PROTO_TRANSPORT_H
#define LODE_PROTO_TRANSPORT_H

#include <stdint.h>
#include <sys/uio.h>

#include "addr.h"
#include "loop.h"
#include "wire_spec.h"

struct lode_tconn;
struct lode_listener;
struct lode_transport_ops;

/* Every implementation's connection struct starts with this, so that the layers above can
 * reach the context and the ops of any connection. */
struct lode_tconn_base {
	const struct lode_transport_ops *ops;
	void *ctx;
};

static inline void *lode_tconn_ctx(const struct lode_tconn *c)
{
	return ((const struct lode_tconn_base *)(const void *)c)->ctx;
}

struct lode_tconn_cbs {
	/* A header arrived and passed lode_hdr_check(). Set *body and *data to where the
	 * body (hdr->body_len bytes) and data (hdr->data_len bytes) go; NULL with a non-zero
	 * length means "receive and discard". Return 0, or -errno to close the connection. */
	int (*on_header)(struct lode_tconn *c, const struct lode_wire_hdr *hdr, void **body,
			 void **data);
	/* The whole frame is in place. */
	void (*on_frame)(struct lode_tconn *c, const struct lode_wire_hdr *hdr);
	/* The connection is gone (err: 0 for an orderly close by the peer, or -errno). Called
	 * once; no callback follows. The tconn is freed after this returns. */
	void (*on_close)(struct lode_tconn *c, int err);
	/* Optional: every queued send up to now has been handed to the kernel. */
	void (*on_send_drained)(struct lode_tconn *c);
};

/* One outgoing frame. The transport copies hdr and body; data iovecs must stay valid until
 * done(s, err) runs (err is 0 once sent, -errno if the connection failed first).
 * Instead of iovecs, the data may be file_len bytes of the file file_fd from file_off:
 * the kernel moves them to the peer without a copy through user space (TCP: splice
 * through a pipe). The descriptor must stay open until done. If the file turns out
 * shorter, the frame cannot be completed and the connection is closed. */
struct lode_send {
	struct lode_wire_hdr hdr;
	const void *body;
	uint32_t body_len;
	const struct iovec *data;
	int data_iovcnt;
	int file_fd;
	uint32_t file_len; /* 0: no file data */
	uint64_t file_off;
	/* A request's reply data will land here (reply_data_max bytes at most): an RDMA
	 * transport registers it and names it to the server, which writes the data straight
	 * into it. TCP ignores it. NULL for replies. */
	void *reply_data;
	uint64_t reply_data_max;
	void (*done)(struct lode_send *s, int err);
	/* private */
	struct lode_send *next_;
	char body_copy_[256];
	void *body_heap_;
};

struct lode_transport_ops {
	const char *scheme;
	/* Binds and listens; accepted connections are reported by on_accept(ctx, cookie) on
	 * the given loop's thread. */
	int (*listen)(struct lode_loop *loop, const struct lode_addr *addr,
		      void (*on_accept)(void *ctx, intptr_t cookie), void *ctx,
		      struct lode_listener **out);
	/* The bound address (with the real port). */
	void (*listener_addr)(const struct lode_listener *l, struct lode_addr *out);
	/* Closes it; the loop frees it once the pending accept is cancelled. Loop thread. */
	void (*listener_close)(struct lode_listener *l);
	/* Closes and frees it at once, for a loop that has never run (start-up failure). */
	void (*listener_abort)(struct lode_listener *l);
	/* Drops an accepted connection that will not be attached. */
	void (*close_cookie)(intptr_t cookie);
	/* The IPv4 address (network order) of an accepted connection's peer, or 0 if unknown:
	 * what the server counts connections per peer by. */
	uint32_t (*cookie_peer)(intptr_t cookie);
	/* Attaches an accepted connection (cookie from on_accept) to loop. Loop thread. */
	int (*attach)(struct lode_loop *loop, intptr_t cookie, int expect_reply,
		      const struct lode_tconn_cbs *cbs, void *ctx, struct lode_tconn **out);
	/* Starts connecting to addr; frames can be queued at once. Failure to connect comes
	 * back through on_close. Loop thread. */
	int (*connect)(struct lode_loop *loop, const struct lode_addr *addr,
		       const struct lode_tconn_cbs *cbs, void *ctx, struct lode_tconn **out);
	/* Queues a frame. Loop thread. */
	void (*send)(struct lode_tconn *c, struct lode_send *s);
	/* Stops reading new frames until resumed (backpressure) / resumes. */
	void (*pause)(struct lode_tconn *c, int paused);
	/* Closes: on_close(c, err) follows once every pending operation has finished. */
	void (*close)(struct lode_tconn *c, int err);
};

extern const struct lode_transport_ops lode_transport_tcp;
extern const struct lode_transport_ops lode_transport_rdma; /* if built (LODE_HAVE_RDMA) */

/* For a transport's send(): fills the header's lengths and keeps a copy of the body (inline
 * or on the heap, in body_heap_, which the transport frees once the frame is sent or
 * failed), pointing s->body at it: the caller's body need not outlive the call. */
void lode_send_prepare(struct lode_send *s);

/* The implementation for an address's scheme, or NULL if it is not built in. */
const struct lode_transport_ops *lode_transport_for(const struct lode_addr *addr);

#endif
