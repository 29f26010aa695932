/* SPDX-License-Identifier: MIT */
/*
 * The RDMA transport's control messages, and its credit counter. No verbs here: this is
 * the part of the RDMA transport that can be checked without a device.
 *
 * Every Lode frame travels as one control message, SENT into a buffer the peer posted:
 *
 *   struct lode_rdma_msg | struct lode_wire_hdr | body (padded to 8) | [sink]
 *                        | desc[ndesc] | inline data
 *
 * A frame's bulk data never rides in the control message unless it is small (inline):
 *  - request data (client to server) is named by descriptors of the client's registered
 *    memory, and the server pulls it with RDMA READ;
 *  - a request names, in its sink descriptor, the registered buffer its reply's data goes
 *    to; the server pushes the reply's data there with RDMA WRITE before it SENDs the reply
 *    (a reliable connection delivers the two in that order), and sets F_PLACED.
 *
 * Flow control: a client may have at most as many requests outstanding as the server has
 * receive buffers posted for it. It starts with LODE_RDMA_DEPTH credits; each request takes
 * one, and each reply grants back those the server has re-posted since its last reply. The
 * server sends only replies, one per request, and the client posts as many receive buffers
 * as it may have requests outstanding, so replies never need credits of their own.
 */
#ifndef LODE_PROTO_RDMA_MSG_H
#define LODE_PROTO_RDMA_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "wire_spec.h"

#define LODE_RDMA_MAGIC	     0x414d4452u /* "RDMA" */
#define LODE_RDMA_VERSION    1
#define LODE_RDMA_DEPTH	     32	  /* receive buffers per queue pair, each side */
#define LODE_RDMA_DESC_MAX   8	  /* request data descriptors in one message */
#define LODE_RDMA_INLINE_MAX 4096 /* data up to this size rides inline */

enum {
	LODE_RDMA_F_SINK = 0x1,	  /* a sink descriptor follows the body */
	LODE_RDMA_F_PLACED = 0x2, /* the data was written into the request's sink */
	LODE_RDMA_F_INLINE = 0x4, /* the data follows inline */
};

struct lode_rdma_msg {
	uint32_t magic;
	uint16_t version;
	uint16_t credits; /* receive buffers re-posted since the sender's last message */
	uint16_t flags;
	uint16_t ndesc; /* request data descriptors, 0..LODE_RDMA_DESC_MAX */
	uint32_t inline_len;
};
_Static_assert(sizeof(struct lode_rdma_msg) == 16, "rdma msg");

/* A piece of registered memory of the peer. */
struct lode_rdma_desc {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};
_Static_assert(sizeof(struct lode_rdma_desc) == 16, "rdma desc");

/* What the connection request and its acceptance carry as private data. */
struct lode_rdma_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t depth;
};

/* The largest control message: header, largest body, sink, descriptors, inline data. */
#define LODE_RDMA_MSG_MAX                                                                          \
	(sizeof(struct lode_rdma_msg) + sizeof(struct lode_wire_hdr) + LODE_BODY_MAX +             \
	 sizeof(struct lode_rdma_desc) * (1 + LODE_RDMA_DESC_MAX) + LODE_RDMA_INLINE_MAX)

/* A decoded control message; pointers into the buffer it was decoded from. */
struct lode_rdma_frame {
	struct lode_rdma_msg msg;
	struct lode_wire_hdr hdr;
	const void *body;
	int has_sink;
	struct lode_rdma_desc sink;
	struct lode_rdma_desc desc[LODE_RDMA_DESC_MAX];
	const void *inline_data;
};

/*
 * Encodes a frame into buf (cap bytes, 8-byte aligned). hdr->body_len and hdr->data_len
 * must already be set; data is either inline (inline_data, hdr->data_len bytes), described
 * (ndesc descriptors whose lengths add up to hdr->data_len), placed (flags has F_PLACED)
 * or absent. Returns the message length, or -EMSGSIZE if it does not fit or breaks a limit.
 */
long lode_rdma_encode(void *buf, size_t cap, uint16_t credits, uint16_t flags,
		      const struct lode_wire_hdr *hdr, const void *body,
		      const struct lode_rdma_desc *sink, const struct lode_rdma_desc *desc,
		      unsigned ndesc, const void *inline_data);

/*
 * Decodes and checks a received message of len bytes: magic, version, flags, that every
 * part lies inside the message, that exactly one way of carrying the data is used when
 * hdr.data_len > 0, and that descriptor lengths add up to it. The wire header itself is
 * checked by the caller (lode_hdr_check). Returns 0 or -EPROTO.
 */
int lode_rdma_decode(const void *buf, size_t len, struct lode_rdma_frame *out);

/* Send credits of one side of a connection. */
struct lode_rdma_credits {
	uint32_t avail; /* messages we may still send */
	uint32_t owed;	/* buffers we re-posted and have not yet told the peer about */
};

/* Takes one credit to send a message; returns 0, or -EAGAIN when none is left. */
int lode_rdma_credit_take(struct lode_rdma_credits *c);
/* Adds the credits the peer granted; -EPROTO if it would exceed depth (a broken peer). */
int lode_rdma_credit_grant(struct lode_rdma_credits *c, uint32_t granted, uint32_t depth);
/* The credits to put in the next outgoing message (and forget them). */
uint16_t lode_rdma_credit_collect(struct lode_rdma_credits *c);

#endif
