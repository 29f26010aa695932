/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes what a server decodes from a peer before any handler runs: the frame header
 * (lode_hdr_check as request and as reply, lode_hdr_check_bounds) and every request body
 * through lode_msg_decode (proto/wire/msg.c), chains of OBJ_WRITE and OBJ_FSYNC included.
 *
 * Input: [opcode u8][data_len u32 LE][body ...]; the first 40 bytes of the input are also
 * checked as a header. A body the decoder accepts must lie where the decoder says it does:
 * its names, checksums and chain inside the body (touched byte by byte, so that ASan sees
 * any read past it), names of legal length.
 */
#include <errno.h>
#include <string.h>

#include "codec.h"
#include "fuzz.h"

static void check_header(const uint8_t *data, size_t size)
{
	struct lode_wire_hdr h;

	if (size < sizeof(h))
		return;
	memcpy(&h, data, sizeof(h));
	for (int reply = 0; reply <= 1; reply++) {
		if (lode_hdr_check(&h, reply))
			continue;
		FUZZ_ASSERT(h.magic == LODE_WIRE_MAGIC);
		FUZZ_ASSERT(h.body_len <= LODE_BODY_MAX && h.data_len <= LODE_DATA_MAX);
		FUZZ_ASSERT(lode_op_known(h.opcode));
		FUZZ_ASSERT(!!(h.flags & LODE_WIRE_F_REPLY) == reply);
		if (!reply && !lode_hdr_check_bounds(&h))
			FUZZ_ASSERT(strcmp(lode_op_name(h.opcode), "?") != 0);
	}
}

static int inside(const void *p, size_t n, const void *body, size_t len)
{
	const char *b = body, *q = p;

	return q >= b && n <= len && (size_t)(q - b) <= len - n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	uint8_t opcode = (uint8_t)fuzz_take(&in, 1);
	uint64_t data_len = fuzz_take(&in, 4);
	struct lode_msg m;
	size_t len;
	const uint8_t *src = fuzz_bytes(&in, LODE_BODY_MAX, &len);
	/* bodies arrive in 8-byte aligned buffers; an exact-size one lets ASan see overreads */
	void *body = len ? aligned_alloc(8, (len + 7) & ~(size_t)7) : NULL;
	int rc;

	check_header(data, size);
	if (len && !body)
		return 0;
	if (len)
		memcpy(body, src, len);
	rc = lode_msg_decode(opcode, body, (uint32_t)len, data_len, &m);
	if (rc == 0) {
		FUZZ_ASSERT(lode_op_known(opcode));
		FUZZ_ASSERT(m.fixed == NULL || m.fixed == body);
		for (int i = 0; i < 2; i++) {
			if (!m.name[i].ptr)
				continue;
			FUZZ_ASSERT(inside(m.name[i].ptr, m.name[i].len, body, len));
			FUZZ_ASSERT(m.name[i].len <= LODE_SYMLINK_MAX);
			fuzz_touch(m.name[i].ptr, m.name[i].len);
		}
		if (m.sums && opcode == LODE_OP_OBJ_WRITE) {
			const struct lode_wire_obj_write_req *w = m.fixed;

			FUZZ_ASSERT(inside(m.sums, (size_t)w->nchunks * 8, body, len));
			fuzz_touch(m.sums, (size_t)w->nchunks * 8);
			FUZZ_ASSERT(data_len > 0 && data_len <= LODE_DATA_MAX);
		}
		if (m.chain) {
			size_t n = lode_chain_size(m.chain->count);

			FUZZ_ASSERT(inside(m.chain, n, body, len));
			FUZZ_ASSERT(m.chain->count <= LODE_CHAIN_MAX);
			fuzz_touch(m.chain, n);
		}
		if (opcode == LODE_OP_ORPHAN_DONE)
			FUZZ_ASSERT((uint64_t)m.count * sizeof(struct lode_wire_objid) == data_len);
	} else {
		FUZZ_ASSERT(rc < 0);
	}
	free(body);
	return 0;
}
