/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes what a client decodes from a server's reply (proto/wire/replies.c): readdir and
 * readdirplus pages with their record walkers, OBJ_READ replies with their checksums,
 * chained-write replies, TARGET_LIST records; and forwarding chains (chain.c), which an
 * OSS decodes from a peer.
 *
 * Input: [kind u8][body_len u16 LE][arg u32 LE][body (body_len bytes)][data (the rest)].
 * Whatever a walker returns must lie inside the data it walked; a page the decoder accepts
 * must hold as many records as it says.
 */
#include <errno.h>
#include <string.h>

#include "codec.h"
#include "fuzz.h"

static void *copy_aligned(const uint8_t *src, size_t len)
{
	void *p = aligned_alloc(8, len ? (len + 7) & ~(size_t)7 : 8);

	if (p && len)
		memcpy(p, src, len);
	return p;
}

static int inside(const void *p, size_t n, const void *base, uint64_t len)
{
	const char *b = base, *q = p;

	return q >= b && n <= len && (uint64_t)(q - b) <= len - n;
}

static void walk_dirents(const void *data, uint64_t dlen, int plus, uint32_t *count)
{
	uint64_t pos = 0;
	struct lode_name n;
	int rc;

	*count = 0;
	for (;;) {
		if (plus) {
			const struct lode_wire_direntplus *e;

			rc = lode_readdirplus_next(data, dlen, &pos, &e, &n);
			if (rc == 1) {
				FUZZ_ASSERT(inside(e, sizeof(*e), data, dlen));
				FUZZ_ASSERT(e->attr.ino == e->d.ino);
			}
		} else {
			const struct lode_wire_dirent *e;

			rc = lode_readdir_next(data, dlen, &pos, &e, &n);
			if (rc == 1)
				FUZZ_ASSERT(inside(e, sizeof(*e), data, dlen));
		}
		if (rc != 1)
			break;
		FUZZ_ASSERT(n.len >= 1 && n.len <= LODE_NAME_MAX);
		FUZZ_ASSERT(inside(n.ptr, n.len, data, dlen));
		FUZZ_ASSERT(pos <= dlen);
		fuzz_touch(n.ptr, n.len);
		(*count)++;
	}
	FUZZ_ASSERT(rc == 0 || rc == -EPROTO);
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size)
{
	struct fuzz_in in = {input, size};
	unsigned kind = (unsigned)fuzz_take(&in, 1) % 6;
	size_t blen_want = (size_t)fuzz_take(&in, 2), blen, dlen;
	uint32_t arg = (uint32_t)fuzz_take(&in, 4);
	const uint8_t *bsrc = fuzz_bytes(&in, blen_want, &blen);
	const uint8_t *dsrc = fuzz_bytes(&in, in.left, &dlen);
	void *body = copy_aligned(bsrc, blen);
	void *data = copy_aligned(dsrc, dlen);

	if (!body || !data)
		goto out;
	switch (kind) {
	case 0:
	case 1: {
		const struct lode_wire_readdir_rep *rep;
		uint32_t count;
		int rc = kind ? lode_dec_readdirplus_rep(body, (uint32_t)blen, data, dlen, &rep)
			      : lode_dec_readdir_rep(body, (uint32_t)blen, data, dlen, &rep);

		walk_dirents(data, dlen, kind, &count);
		if (rc == 0) {
			FUZZ_ASSERT(rep == body);
			FUZZ_ASSERT(rep->count == count && count <= LODE_READDIR_MAX);
		}
		break;
	}
	case 2: {
		const struct lode_wire_obj_read_rep *rep;
		const uint64_t *sums;

		if (lode_dec_obj_read_rep(body, (uint32_t)blen, dlen, arg, &rep, &sums) == 0) {
			FUZZ_ASSERT(dlen <= arg);
			FUZZ_ASSERT(inside(sums, (size_t)rep->nchunks * 8, body, blen));
			fuzz_touch(sums, (size_t)rep->nchunks * 8);
		}
		break;
	}
	case 3: {
		const struct lode_wire_obj_chain_rep *rep;
		unsigned count = arg % (LODE_CHAIN_MAX + 2);

		if (lode_dec_obj_chain_rep(body, (uint32_t)blen, count, &rep) == 0) {
			FUZZ_ASSERT(blen >= sizeof(*rep));
			FUZZ_ASSERT(rep->count == count + 1);
		}
		break;
	}
	case 4: {
		const struct lode_wire_target *t;
		struct lode_name addr;
		uint64_t pos = 0;
		int rc;

		while ((rc = lode_target_next(data, dlen, &pos, &t, &addr)) == 1) {
			FUZZ_ASSERT(inside(t, sizeof(*t), data, dlen));
			FUZZ_ASSERT(addr.len >= 1 && addr.len <= LODE_ADDR_MAX);
			FUZZ_ASSERT(inside(addr.ptr, addr.len, data, dlen));
			fuzz_touch(addr.ptr, addr.len);
		}
		FUZZ_ASSERT(rc == 0 || rc == -EPROTO);
		break;
	}
	case 5: {
		const struct lode_wire_chain *c;

		if (lode_dec_chain(body, blen, &c) == 0) {
			FUZZ_ASSERT(c == body);
			FUZZ_ASSERT(c->count <= LODE_CHAIN_MAX);
			FUZZ_ASSERT(lode_chain_size(c->count) == blen);
			for (unsigned i = 0; i < c->count; i++) {
				const struct lode_wire_chain_hop *h = &lode_chain_hops(c)[i];

				FUZZ_ASSERT(h->target_id != 0 && h->target_id != c->self_target);
			}
		}
		break;
	}
	}
out:
	free(body);
	free(data);
	return 0;
}
