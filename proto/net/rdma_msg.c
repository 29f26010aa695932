/* SPDX-License-Identifier: MIT */
/* Control messages and credits of the RDMA transport (see rdma_msg.h). */
#include <errno.h>
#include <string.h>

#include "rdma_msg.h"

#define ALIGN8(x) (((x) + 7u) & ~(size_t)7u)

long lode_rdma_encode(void *buf, size_t cap, uint16_t credits, uint16_t flags,
		      const struct lode_wire_hdr *hdr, const void *body,
		      const struct lode_rdma_desc *sink, const struct lode_rdma_desc *desc,
		      unsigned ndesc, const void *inline_data)
{
	struct lode_rdma_msg m = {
	    .magic = LODE_RDMA_MAGIC,
	    .version = LODE_RDMA_VERSION,
	    .credits = credits,
	    .flags = flags,
	    .ndesc = (uint16_t)ndesc,
	};
	char *p = buf;
	size_t off = 0, need;

	if (ndesc > LODE_RDMA_DESC_MAX || hdr->body_len > LODE_BODY_MAX ||
	    (flags & ~(LODE_RDMA_F_SINK | LODE_RDMA_F_PLACED | LODE_RDMA_F_INLINE)) ||
	    !(flags & LODE_RDMA_F_SINK) != !sink)
		return -EMSGSIZE;
	if (flags & LODE_RDMA_F_INLINE) {
		if (hdr->data_len > LODE_RDMA_INLINE_MAX || ndesc)
			return -EMSGSIZE;
		m.inline_len = (uint32_t)hdr->data_len;
	}
	need = sizeof(m) + sizeof(*hdr) + ALIGN8(hdr->body_len) + (sink ? sizeof(*sink) : 0) +
	       ndesc * sizeof(*desc) + m.inline_len;
	if (need > cap)
		return -EMSGSIZE;
	memcpy(p, &m, sizeof(m));
	off = sizeof(m);
	memcpy(p + off, hdr, sizeof(*hdr));
	off += sizeof(*hdr);
	if (hdr->body_len)
		memcpy(p + off, body, hdr->body_len);
	memset(p + off + hdr->body_len, 0, ALIGN8(hdr->body_len) - hdr->body_len);
	off += ALIGN8(hdr->body_len);
	if (sink) {
		memcpy(p + off, sink, sizeof(*sink));
		off += sizeof(*sink);
	}
	if (ndesc) {
		memcpy(p + off, desc, ndesc * sizeof(*desc));
		off += ndesc * sizeof(*desc);
	}
	if (m.inline_len) {
		memcpy(p + off, inline_data, m.inline_len);
		off += m.inline_len;
	}
	return (long)off;
}

int lode_rdma_decode(const void *buf, size_t len, struct lode_rdma_frame *out)
{
	const char *p = buf;
	size_t off, body;
	uint64_t sum = 0;
	int ways;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(out->msg) + sizeof(out->hdr))
		return -EPROTO;
	memcpy(&out->msg, p, sizeof(out->msg));
	memcpy(&out->hdr, p + sizeof(out->msg), sizeof(out->hdr));
	off = sizeof(out->msg) + sizeof(out->hdr);
	if (out->msg.magic != LODE_RDMA_MAGIC || out->msg.version != LODE_RDMA_VERSION ||
	    (out->msg.flags & ~(LODE_RDMA_F_SINK | LODE_RDMA_F_PLACED | LODE_RDMA_F_INLINE)) ||
	    out->msg.ndesc > LODE_RDMA_DESC_MAX || out->msg.inline_len > LODE_RDMA_INLINE_MAX ||
	    out->msg.credits > LODE_RDMA_DEPTH || out->hdr.body_len > LODE_BODY_MAX)
		return -EPROTO;
	body = ALIGN8((size_t)out->hdr.body_len);
	if (len - off < body)
		return -EPROTO;
	out->body = p + off;
	off += body;
	if (out->msg.flags & LODE_RDMA_F_SINK) {
		if (len - off < sizeof(out->sink))
			return -EPROTO;
		memcpy(&out->sink, p + off, sizeof(out->sink));
		out->has_sink = 1;
		off += sizeof(out->sink);
	}
	if (len - off < out->msg.ndesc * sizeof(out->desc[0]))
		return -EPROTO;
	memcpy(out->desc, p + off, out->msg.ndesc * sizeof(out->desc[0]));
	off += out->msg.ndesc * sizeof(out->desc[0]);
	if (len - off != out->msg.inline_len)
		return -EPROTO;
	out->inline_data = p + off;

	/* exactly one way of carrying the data, and it carries all of it */
	ways = !!out->msg.ndesc + !!(out->msg.flags & LODE_RDMA_F_PLACED) +
	       !!(out->msg.flags & LODE_RDMA_F_INLINE);
	if (out->hdr.data_len == 0)
		return ways || out->msg.inline_len ? -EPROTO : 0;
	if (ways != 1)
		return -EPROTO;
	if (out->msg.flags & LODE_RDMA_F_INLINE)
		return out->msg.inline_len == out->hdr.data_len ? 0 : -EPROTO;
	if (out->msg.inline_len)
		return -EPROTO;
	for (unsigned i = 0; i < out->msg.ndesc; i++) {
		if (!out->desc[i].len)
			return -EPROTO;
		sum += out->desc[i].len;
	}
	if (out->msg.ndesc && sum != out->hdr.data_len)
		return -EPROTO;
	return 0;
}

int lode_rdma_credit_take(struct lode_rdma_credits *c)
{
	if (!c->avail)
		return -EAGAIN;
	c->avail--;
	return 0;
}

int lode_rdma_credit_grant(struct lode_rdma_credits *c, uint32_t granted, uint32_t depth)
{
	if (granted > depth || c->avail + granted > depth)
		return -EPROTO;
	c->avail += granted;
	return 0;
}

uint16_t lode_rdma_credit_collect(struct lode_rdma_credits *c)
{
	uint16_t n = (uint16_t)(c->owed > LODE_RDMA_DEPTH ? LODE_RDMA_DEPTH : c->owed);

	c->owed -= n;
	return n;
}
