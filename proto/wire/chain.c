/* SPDX-License-Identifier: MIT */
/*
 * Forwarding chains of chained replication (see "Chained replication" in wire_spec.h): the
 * chain a request carries, and the per-copy reply it gets back.
 */
#include <errno.h>
#include <stdint.h>

#include "codec.h"

static int chain_addr_ok(const struct lode_wire_chain_hop *h)
{
	if (h->addr_len > LODE_ADDR_MAX || lode_addr_check(h->addr, h->addr_len))
		return -EINVAL;
	/* the padding is a reserved field: zero, so that the address is NUL-terminated */
	for (unsigned i = h->addr_len; i < sizeof(h->addr); i++)
		if (h->addr[i])
			return -EPROTO;
	return 0;
}

int lode_dec_chain(const void *p, size_t len, const struct lode_wire_chain **chain)
{
	const struct lode_wire_chain *c = p;
	const struct lode_wire_chain_hop *h;
	int rc;

	if (!p || len < sizeof(*c))
		return -EPROTO;
	if (c->reserved0 || c->reserved1)
		return -EPROTO;
	if (c->count > LODE_CHAIN_MAX)
		return -EINVAL;
	if (len != lode_chain_size(c->count))
		return -EPROTO;
	if (c->timeout_ms == 0 || c->timeout_ms > LODE_CHAIN_TIMEOUT_MAX)
		return -EINVAL;
	h = lode_chain_hops(c);
	for (unsigned i = 0; i < c->count; i++) {
		if (h[i].reserved)
			return -EPROTO;
		if (h[i].target_id == 0)
			return -EINVAL;
		rc = chain_addr_ok(&h[i]);
		if (rc)
			return rc;
		/* a target twice would take the data twice and answer for one copy twice */
		if (h[i].target_id == c->self_target)
			return -ELOOP;
		for (unsigned k = 0; k < i; k++)
			if (h[k].target_id == h[i].target_id)
				return -ELOOP;
	}
	*chain = c;
	return 0;
}

int lode_dec_obj_chain_rep(const void *body, uint32_t len, unsigned count,
			   const struct lode_wire_obj_chain_rep **rep)
{
	const struct lode_wire_obj_chain_rep *r = body;

	if (!body || len != sizeof(*r) || count > LODE_CHAIN_MAX)
		return -EPROTO;
	if (r->count != count + 1 || r->reserved0 || r->reserved1)
		return -EPROTO;
	for (unsigned i = 0; i <= LODE_CHAIN_MAX; i++) {
		if (r->status[i] < 0 || (i > count && r->status[i]))
			return -EPROTO;
	}
	if (r->status[0] == ECANCELED)
		return -EPROTO;
	*rep = r;
	return 0;
}
