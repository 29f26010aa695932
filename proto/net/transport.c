/* SPDX-License-Identifier: MIT */
/*
 * What every transport shares: finding the transport of an address, and readying a frame
 * for its send queue.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "transport.h"

const struct lode_transport_ops *lode_transport_for(const struct lode_addr *addr)
{
	if (addr->scheme == LODE_SCHEME_TCP)
		return &lode_transport_tcp;
#if LODE_HAVE_RDMA
	if (addr->scheme == LODE_SCHEME_RDMA)
		return &lode_transport_rdma;
#endif
	return NULL;
}

void lode_send_prepare(struct lode_send *s)
{
	uint64_t dlen = s->file_len;

	for (int i = 0; i < s->data_iovcnt; i++)
		dlen += s->data[i].iov_len;
	s->hdr.body_len = s->body_len;
	s->hdr.data_len = dlen;
	s->next_ = NULL;
	s->body_heap_ = NULL;
	/* the body is encoded when the frame leaves the queue: keep a copy until then */
	if (s->body_len > sizeof(s->body_copy_)) {
		s->body_heap_ = malloc(s->body_len);
		if (!s->body_heap_)
			abort();
		memcpy(s->body_heap_, s->body, s->body_len);
		s->body = s->body_heap_;
	} else if (s->body_len) {
		memcpy(s->body_copy_, s->body, s->body_len);
		s->body = s->body_copy_;
	}
}
