/* SPDX-License-Identifier: MIT */
/*
 * Bounds-checked encoding and decoding of Lode frames.
 *
 * Decoders take what was received (header + body + data lengths) and check every length
 * and reserved field before reading; they return 0 or a negative errno (-EPROTO for a
 * malformed frame, -EINVAL for a bad value, -ENAMETOOLONG, ...) and write their outputs
 * only on success. Decoded names point into the body and are NOT NUL-terminated: use
 * the (ptr, len) pair.
 */
#ifndef LODE_PROTO_CODEC_H
#define LODE_PROTO_CODEC_H

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
/* Fills a request header. */
void lode_hdr_init(struct lode_wire_hdr *hdr, uint8_t opcode, uint64_t req_id, uint32_t body_len,
		   uint64_t data_len);
/* The name of an opcode for logs ("LOOKUP"), or "?" */
const char *lode_op_name(unsigned opcode);
int lode_op_known(unsigned opcode);

/* A path component: 1..LODE_NAME_MAX bytes, no '/', no NUL, not "." or "..".
 * Returns 0, -EINVAL or -ENAMETOOLONG. */
int lode_name_check(const char *name, size_t len);
/* An xattr name: 1..LODE_XATTR_NAME_MAX bytes, no NUL. */
int lode_xattr_name_check(const char *name, size_t len);

/*
 * Per-opcode request decoders. Each takes the body as received and returns a pointer to
 * the fixed struct (aligned: bodies are received into 8-byte aligned buffers) plus the
 * names that follow it. data_len is the frame's bulk data length where the opcode allows
 * data (otherwise a non-zero data_len is -EPROTO).
 */
int lode_dec_hello(const void *body, uint32_t len, uint64_t data_len,
		   const struct lode_wire_hello_req **req);
int lode_dec_lookup(const void *body, uint32_t len, uint64_t data_len,
		    const struct lode_wire_lookup_req **req, struct lode_name *name);
int lode_dec_getattr(const void *body, uint32_t len, uint64_t data_len,
		     const struct lode_wire_getattr_req **req);
int lode_dec_setattr(const void *body, uint32_t len, uint64_t data_len,
		     const struct lode_wire_setattr_req **req);
int lode_dec_create(const void *body, uint32_t len, uint64_t data_len,
		    const struct lode_wire_create_req **req, struct lode_name *name);
int lode_dec_open(const void *body, uint32_t len, uint64_t data_len,
		  const struct lode_wire_open_req **req);
int lode_dec_commit(const void *body, uint32_t len, uint64_t data_len,
		    const struct lode_wire_commit_req **req);
int lode_dec_mkdir(const void *body, uint32_t len, uint64_t data_len,
		   const struct lode_wire_mkdir_req **req, struct lode_name *name);
int lode_dec_rename(const void *body, uint32_t len, uint64_t data_len,
		    const struct lode_wire_rename_req **req, struct lode_name *old_name,
		    struct lode_name *new_name);
int lode_dec_link(const void *body, uint32_t len, uint64_t data_len,
		  const struct lode_wire_link_req **req, struct lode_name *name);
int lode_dec_symlink(const void *body, uint32_t len, uint64_t data_len,
		     const struct lode_wire_symlink_req **req, struct lode_name *name,
		     struct lode_name *target);
int lode_dec_readdir(const void *body, uint32_t len, uint64_t data_len,
		     const struct lode_wire_readdir_req **req);
int lode_dec_statfs(const void *body, uint32_t len, uint64_t data_len);
/* SETXATTR carries the value as data (<= LODE_XATTR_VALUE_MAX); the others no data.
 * LISTXATTR has no name; the others need one. */
int lode_dec_xattr(uint8_t opcode, const void *body, uint32_t len, uint64_t data_len,
		   const struct lode_wire_xattr_req **req, struct lode_name *name);
int lode_dec_target_register(const void *body, uint32_t len, uint64_t data_len,
			     const struct lode_wire_target_register_req **req,
			     struct lode_name *addr);
int lode_dec_target_heartbeat(const void *body, uint32_t len, uint64_t data_len,
			      const struct lode_wire_target_heartbeat_req **req);
int lode_dec_target_list(const void *body, uint32_t len, uint64_t data_len);
/* ORPHAN_LIST: no data; ORPHAN_DONE: data = n lode_wire_objid (n <= LODE_OBJLIST_MAX). */
int lode_dec_orphan(uint8_t opcode, const void *body, uint32_t len, uint64_t data_len,
		    const struct lode_wire_orphan_req **req, uint32_t *n_objids);

int lode_dec_report(const void *body, uint32_t len, uint64_t data_len,
		    const struct lode_wire_report_req **req);
int lode_dec_set_copy(const void *body, uint32_t len, uint64_t data_len,
		      const struct lode_wire_set_copy_req **req);

/* OBJ_WRITE: checks alignment, nchunks == ceil(data_len / CHUNK), data_len > 0. Returns the
 * checksum array (nchunks entries) that follows the fixed struct, and in *chain the
 * forwarding chain that follows them with LODE_OBJ_F_CHAIN (checked as lode_dec_chain
 * does), or NULL without. */
int lode_dec_obj_write(const void *body, uint32_t len, uint64_t data_len,
		       const struct lode_wire_obj_write_req **req, const uint64_t **sums,
		       const struct lode_wire_chain **chain);
int lode_dec_obj_read(const void *body, uint32_t len, uint64_t data_len,
		      const struct lode_wire_obj_read_req **req);
int lode_dec_obj_truncate(const void *body, uint32_t len, uint64_t data_len,
			  const struct lode_wire_obj_truncate_req **req);
/* OBJ_REMOVE, OBJ_STAT, OBJ_FSYNC */
int lode_dec_objid(const void *body, uint32_t len, uint64_t data_len,
		   const struct lode_wire_objid **obj);
/* OBJ_FSYNC, plain (*chain = NULL) or chained (objid + chain + hops). */
int lode_dec_obj_fsync(const void *body, uint32_t len, uint64_t data_len,
		       const struct lode_wire_objid **obj, const struct lode_wire_chain **chain);

/*
 * A forwarding chain of len bytes: the fixed struct, then exactly count hops. -EPROTO when
 * the shape is wrong or a reserved field or an address's padding is not zero; -EINVAL for a
 * count over LODE_CHAIN_MAX, a timeout outside 1..LODE_CHAIN_TIMEOUT_MAX, a target id 0 or
 * an empty, overlong, non-printable address; -ELOOP when the chain names a target twice or
 * names the receiver (self_target) again. The hops follow at lode_chain_hops(chain).
 */
int lode_dec_chain(const void *p, size_t len, const struct lode_wire_chain **chain);
static inline const struct lode_wire_chain_hop *lode_chain_hops(const struct lode_wire_chain *c)
{
	return (const struct lode_wire_chain_hop *)(const void *)(c + 1);
}
/* Bytes of a chain with count hops. */
static inline size_t lode_chain_size(unsigned count)
{
	return sizeof(struct lode_wire_chain) + (size_t)count * sizeof(struct lode_wire_chain_hop);
}
int lode_dec_obj_list(const void *body, uint32_t len, uint64_t data_len,
		      const struct lode_wire_obj_list_req **req);

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
/* Walks TARGET_LIST records the same way. */
int lode_target_next(const void *data, uint64_t data_len, uint64_t *pos,
		     const struct lode_wire_target **t, struct lode_name *addr);

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
