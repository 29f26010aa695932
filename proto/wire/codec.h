/* SPDX-License-Identifier: MIT */
/*
 * Bounds-checked encoding and decoding of Lode frames: the interface of proto/wire.
 *
 *   msg.c       the message table (one row per opcode) and the request decoder; headers
 *   values.c    wire status codes, names, layouts, the encoding buffer
 *   chain.c     forwarding chains of chained replication
 *   replies.c   reply-side decoders and record walkers, for clients
 *   checksum.c  chunk checksums (chunk_sum_avx2.c: the AVX2 path)
 *
 * Decoders take what was received (header + body + data lengths) and check every length
 * and reserved field before reading; they return 0 or a negative errno (-EPROTO for a
 * malformed frame, -EINVAL for a bad value, -ENAMETOOLONG, ...) and write their outputs
 * only on success. Decoded names point into the body and are NOT NUL-terminated: use
 * the (ptr, len) pair.
 */
#ifndef LODE_PROTO_CODEC_H
#define LODE_PROTO_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire_spec.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "Lode's wire structs are little-endian and are used in place; port codec.c first"
#endif

struct lode_name {
	const char *ptr;
	uint16_t len;
};

/* errno <-> wire status, the only two places the mapping happens. lode_status_from_errno
 * takes a negative errno (or 0) and returns a wire status >= 0; unknown codes become EIO.
 * lode_status_to_errno returns 0 or a negative errno. */
int32_t lode_status_from_errno(int neg_errno);
int lode_status_to_errno(int32_t status);

/* Header checks shared by every receiver: magic, version, opcode known, flags, reserved,
 * body_len <= LODE_BODY_MAX and data_len <= LODE_DATA_MAX, and the reply flag as expected.
 * Returns 0 or -EPROTO. */
int lode_hdr_check(const struct lode_wire_hdr *hdr, int expect_reply);
/* A request's lengths against the most its opcode's row of the message table allows: a
 * server checks them on the header, before it allocates anything, so a peer announcing
 * 4 MiB for a LOOKUP is refused at once. Returns 0, -EMSGSIZE, or -EPROTO (unknown opcode). */
int lode_hdr_check_bounds(const struct lode_wire_hdr *hdr);
/* Fills a request header. */
void lode_hdr_init(struct lode_wire_hdr *hdr, uint8_t opcode, uint64_t req_id, uint32_t body_len,
		   uint64_t data_len);
/* The name of an opcode for logs ("LOOKUP"), or "?" */
const char *lode_op_name(unsigned opcode);
int lode_op_known(unsigned opcode);

/* 1 + the offset of the lode_wire_cred in opcode's request body, or 0 when it has none. */
size_t lode_msg_cred_offset(unsigned opcode);

/* True when name (read up to LODE_GROUP_NAME_MAX bytes) is a client group's name: 1 to 31
 * of a-z, 0-9, '_' and '-', NUL terminated (proto/net/auth.h). */
bool lode_group_name_ok(const char *name);
/* The roles whose connections may send opcode: bit (1 << LODE_ROLE_*) each; 0 if unknown. */
unsigned lode_op_roles(unsigned opcode);
/* 1 when opcode's requests may carry a capability (LODE_WIRE_F_CAP): object data ones. */
int lode_op_takes_cap(unsigned opcode);
/* 1 when opcode's requests may be sent LODE_WIRE_F_LAZY: the MDS's namespace changes. */
int lode_op_may_be_lazy(unsigned opcode);
/* 1 when opcode's requests add a name to a directory (CREATE, MKDIR, MKNOD, SYMLINK, LINK,
 * RENAME's new name): those that may carry LODE_WIRE_F_GRANT. */
int lode_op_adds_name(unsigned opcode);

/* A path component: 1..LODE_NAME_MAX bytes, no '/', no NUL, not "." or "..".
 * Returns 0, -EINVAL or -ENAMETOOLONG. */
int lode_name_check(const char *name, size_t len);
/* An xattr name: 1..LODE_XATTR_NAME_MAX bytes, no NUL. */
int lode_xattr_name_check(const char *name, size_t len);

/*
 * A decoded request. fixed points at the opcode's struct inside the body (aligned: bodies
 * are received into 8-byte aligned buffers; NULL for an empty body); names[] at the names
 * that follow it, in the order the struct lists their lengths (unused ones are {NULL, 0}).
 * Everything points into the body and stays valid as long as it does.
 */
struct lode_msg {
	const void *fixed;
	struct lode_name name[2];
	const uint64_t *sums; /* OBJ_WRITE: one checksum per chunk of data */
	const struct lode_wire_chain
	    *chain;	/* OBJ_WRITE, OBJ_FSYNC: the forwarding chain, or NULL */
	uint32_t count; /* records in the data: lode_wire_objid (ORPHAN_DONE), lode_wire_close_ref
			 * (CLOSE_MANY) */
};

/*
 * Decodes the body of a request with the given opcode, as its row of the message table
 * (proto/wire/msg.c) describes it: the fixed struct, the names that follow it exactly, zero
 * reserved fields, the bulk data the opcode allows (data_len), then the values only that
 * opcode checks. Returns 0 and fills *m, or -EPROTO for a malformed frame (unknown opcode,
 * wrong length, non-zero reserved field, data where none belongs), or the value's errno
 * (-EINVAL, -ENAMETOOLONG, -EFBIG, -E2BIG, -ELOOP, ...). *m is written only on success.
 */
int lode_msg_decode(uint8_t opcode, const void *body, uint32_t len, uint64_t data_len,
		    struct lode_msg *m);

/*
 * A forwarding chain of len bytes: the fixed struct, then exactly count hops. -EPROTO when
 * the shape is wrong or a reserved field or an address's padding is not zero; -EINVAL for a
 * count over LODE_CHAIN_MAX, a timeout outside 1..LODE_CHAIN_TIMEOUT_MAX, a target id 0 or
 * an empty, overlong, non-printable address; -ELOOP when the chain names a target twice or
 * names the receiver (self_target) again. The hops follow at lode_chain_hops(chain).
 */
int lode_dec_chain(const void *p, size_t len, const struct lode_wire_chain **chain);
/* A server address as the wire carries it (TARGET_REGISTER, a chain's hops): 1 to
 * LODE_ADDR_MAX printable bytes, no space. 0 or -EINVAL. Where it goes, it is logged and
 * handed to clients as it is. */
int lode_addr_check(const char *addr, size_t len);
static inline const struct lode_wire_chain_hop *lode_chain_hops(const struct lode_wire_chain *c)
{
	return (const struct lode_wire_chain_hop *)(const void *)(c + 1);
}
/* Bytes of a chain with count hops. */
static inline size_t lode_chain_size(unsigned count)
{
	return sizeof(struct lode_wire_chain) + (size_t)count * sizeof(struct lode_wire_chain_hop);
}

/* Reply-side decoders used by clients: they validate what a server sent back. */
int lode_dec_readdir_rep(const void *body, uint32_t len, const void *data, uint64_t data_len,
			 const struct lode_wire_readdir_rep **rep);
/* Walks the dirent records of a checked readdir page: *pos starts at 0. Returns 1 and fills
 * ent and name for the next entry, 0 at the end, -EPROTO if malformed. */
int lode_readdir_next(const void *data, uint64_t data_len, uint64_t *pos,
		      const struct lode_wire_dirent **ent, struct lode_name *name);
/* The same for a page asked with LODE_READDIR_ATTRS (records of lode_wire_direntplus). A
 * record whose attributes do not match its entry (inode, file type) is -EPROTO. */
int lode_dec_readdirplus_rep(const void *body, uint32_t len, const void *data, uint64_t data_len,
			     const struct lode_wire_readdir_rep **rep);
int lode_readdirplus_next(const void *data, uint64_t data_len, uint64_t *pos,
			  const struct lode_wire_direntplus **ent, struct lode_name *name);
int lode_dec_obj_read_rep(const void *body, uint32_t len, uint64_t data_len, uint32_t length,
			  const struct lode_wire_obj_read_rep **rep, const uint64_t **sums);
/* The reply of a chained request sent with `count` hops: exactly the struct, count + 1
 * copies answered for, reserved fields and unused statuses zero, and the receiver's own
 * status not ECANCELED (it always tries its own copy). */
int lode_dec_obj_chain_rep(const void *body, uint32_t len, unsigned count,
			   const struct lode_wire_obj_chain_rep **rep);
/* Walks TARGET_LIST records the same way; a record also needs a target id, a state that
 * is LODE_TARGET_UP or _DOWN and an admin state it knows. */
int lode_target_next(const void *data, uint64_t data_len, uint64_t *pos,
		     const struct lode_wire_target **t, struct lode_name *addr);
/* A whole TARGET_LIST reply's records: 0 when every one is well formed (as
 * lode_target_next) and there are exactly count of them (the reply's count), else -EPROTO.
 * A list is checked whole before any of it is taken. */
int lode_target_list_check(const void *data, uint64_t data_len, uint32_t count);

/* Layout checks: stripe_size a multiple of LODE_CHUNK_SIZE (and <= 1 GiB), 1 <=
 * stripe_count, 1 <= mirror_count, stripe_count * mirror_count <= LODE_LAYOUT_TARGETS_MAX.
 * Unused targets entries must be zero. */
int lode_layout_check(const struct lode_wire_layout *l);

/* Checksum of one chunk: xxh3-64 of buf[0..len) followed by LODE_CHUNK_SIZE - len zeros. */
uint64_t lode_chunk_sum(const void *buf, size_t len);
/* The same for one whole chunk, with AVX2 (only on a CPU that has it). */
uint64_t lode_chunk_sum_avx2(const void *chunk);

/* Appends to an encoding buffer: callers build a body as fixed struct + names. */
struct lode_buf {
	char *p;
	size_t len;
	size_t cap;
	int err; /* -ENOSPC once something did not fit */
};
void lode_buf_init(struct lode_buf *b, void *mem, size_t cap);
void lode_buf_put(struct lode_buf *b, const void *src, size_t len);

#endif
