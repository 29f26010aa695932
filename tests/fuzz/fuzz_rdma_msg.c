/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the RDMA transport's control messages (proto/net/rdma_msg.c), decoded from what a
 * peer posted into a receive buffer: no device is needed, the codec is plain C.
 *
 * Input: a received message, as is. What lode_rdma_decode() accepts must lie inside the
 * message (body, inline data), carry the data one way only, and encode back (with
 * lode_rdma_encode) to a message that decodes to the same frame. Credits granted by a
 * peer (the message's credits field) never raise the count past the queue depth.
 */
#include <errno.h>
#include <string.h>

#include "codec.h"
#include "fuzz.h"
#include "rdma_msg.h"

static int inside(const void *p, size_t n, const void *base, size_t len)
{
	const char *b = base, *q = p;

	return q >= b && n <= len && (size_t)(q - b) <= len - n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* receive buffers are 8-byte aligned; an exact-size copy lets ASan see overreads */
	void *buf = aligned_alloc(8, size ? (size + 7) & ~(size_t)7 : 8);
	struct lode_rdma_frame f, g;
	struct lode_rdma_credits cr = {.avail = 0};
	static char enc[LODE_RDMA_MSG_MAX] __attribute__((aligned(8)));
	uint64_t sum = 0;
	int ways;
	long n;

	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	if (lode_rdma_decode(buf, size, &f) != 0)
		goto out;
	FUZZ_ASSERT(f.msg.magic == LODE_RDMA_MAGIC && f.msg.ndesc <= LODE_RDMA_DESC_MAX);
	FUZZ_ASSERT(f.hdr.body_len == 0 || inside(f.body, f.hdr.body_len, buf, size));
	if (f.hdr.body_len)
		fuzz_touch(f.body, f.hdr.body_len);
	ways = !!(f.msg.flags & LODE_RDMA_F_PLACED) + !!(f.msg.flags & LODE_RDMA_F_INLINE) +
	       !!f.msg.ndesc;
	if (f.msg.flags & LODE_RDMA_F_INLINE) {
		FUZZ_ASSERT(f.msg.inline_len == f.hdr.data_len);
		FUZZ_ASSERT(inside(f.inline_data, f.msg.inline_len, buf, size));
		fuzz_touch(f.inline_data, f.msg.inline_len);
	}
	for (unsigned i = 0; i < f.msg.ndesc; i++)
		sum += f.desc[i].len;
	if (f.hdr.data_len) {
		FUZZ_ASSERT(ways == 1);
		if (f.msg.ndesc)
			FUZZ_ASSERT(sum == f.hdr.data_len);
	}
	/* what decoded encodes again, to the same frame (if the header passes the wire's own
	 * checks, which the transport applies before it acts on a frame) */
	if (lode_hdr_check(&f.hdr, !!(f.hdr.flags & LODE_WIRE_F_REPLY)) == 0) {
		n = lode_rdma_encode(
		    enc, sizeof(enc), f.msg.credits,
		    f.msg.flags & (LODE_RDMA_F_SINK | LODE_RDMA_F_PLACED | LODE_RDMA_F_INLINE),
		    &f.hdr, f.body, f.has_sink ? &f.sink : NULL, f.desc, f.msg.ndesc,
		    (f.msg.flags & LODE_RDMA_F_INLINE) ? f.inline_data : NULL);
		if (n > 0) {
			FUZZ_ASSERT(lode_rdma_decode(enc, (size_t)n, &g) == 0);
			FUZZ_ASSERT(memcmp(&g.hdr, &f.hdr, sizeof(g.hdr)) == 0);
			FUZZ_ASSERT(g.msg.ndesc == f.msg.ndesc && g.has_sink == f.has_sink);
		}
	}
	if (lode_rdma_credit_grant(&cr, f.msg.credits, LODE_RDMA_DEPTH) == 0)
		FUZZ_ASSERT(cr.avail <= LODE_RDMA_DEPTH);
out:
	free(buf);
	return 0;
}
