/* SPDX-License-Identifier: MIT */
/*
 * proto/wire/codec.c: every decoder with a well-formed frame and with each way a frame can be
 * malformed, the header checks, the errno <-> wire status mapping, the record walkers, the
 * chunk checksum rule, and a deterministic random-input run that must never crash (run it
 * under ASan/UBSan: bodies are allocated at their exact length so an over-read is caught).
 *
 * Decoders promise to write their outputs only on success: every failing case checks that
 * the output pointers still hold the sentinel they were given.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "codec.h"
#include "config.h"

#define CHUNK LODE_CHUNK_SIZE

/* Bodies are received into 8-byte aligned buffers; so are ours. */
static union {
	uint64_t align;
	unsigned char b[LODE_BODY_MAX + 8192];
} body_mem;
#define BODY ((void *)body_mem.b)

static char long_name[5000];

static const void *const SENTINEL = &long_name[1];
#define SENT(type) ((const type *)SENTINEL)
static const struct lode_name NAME_SENTINEL = {.ptr = &long_name[2], .len = 4242};

static int name_untouched(const struct lode_name *n)
{
	return n->ptr == NAME_SENTINEL.ptr && n->len == NAME_SENTINEL.len;
}

/* Lays out fixed struct + up to two names in BODY; returns the body length. */
static uint32_t build(const void *fixed, size_t flen, const char *n1, size_t l1, const char *n2,
		      size_t l2)
{
	memset(body_mem.b, 0, sizeof(body_mem.b));
	memcpy(body_mem.b, fixed, flen);
	if (l1)
		memcpy(body_mem.b + flen, n1, l1);
	if (l2)
		memcpy(body_mem.b + flen + l1, n2, l2);
	return (uint32_t)(flen + l1 + l2);
}

/*
 * The tests below were written against one decoder per opcode; these adapters keep their
 * shape over the one table-driven decoder, lode_msg_decode(). Each writes its outputs only
 * on success, as the decoder does.
 */
static int dec(uint8_t op, const void *body, uint32_t len, uint64_t dlen, const void **fixed,
	       struct lode_name *n1, struct lode_name *n2, struct lode_msg *out)
{
	struct lode_msg m;
	int rc = lode_msg_decode(op, body, len, dlen, &m);

	if (rc)
		return rc;
	*fixed = m.fixed;
	if (n1)
		*n1 = m.name[0];
	if (n2)
		*n2 = m.name[1];
	if (out)
		*out = m;
	return 0;
}

#define DEC0(fn, OP, T)                                                                            \
	static int fn(const void *b, uint32_t len, uint64_t dlen, const T **r)                     \
	{                                                                                          \
		return dec(OP, b, len, dlen, (const void **)r, NULL, NULL, NULL);                  \
	}
#define DEC1(fn, OP, T)                                                                            \
	static int fn(const void *b, uint32_t len, uint64_t dlen, const T **r,                     \
		      struct lode_name *n)                                                         \
	{                                                                                          \
		return dec(OP, b, len, dlen, (const void **)r, n, NULL, NULL);                     \
	}
#define DEC2(fn, OP, T)                                                                            \
	static int fn(const void *b, uint32_t len, uint64_t dlen, const T **r,                     \
		      struct lode_name *n1, struct lode_name *n2)                                  \
	{                                                                                          \
		return dec(OP, b, len, dlen, (const void **)r, n1, n2, NULL);                      \
	}

DEC0(lode_dec_hello, LODE_OP_HELLO, struct lode_wire_hello_req)
DEC1(lode_dec_lookup, LODE_OP_LOOKUP, struct lode_wire_lookup_req)
DEC0(lode_dec_getattr, LODE_OP_GETATTR, struct lode_wire_getattr_req)
DEC0(lode_dec_setattr, LODE_OP_SETATTR, struct lode_wire_setattr_req)
DEC1(lode_dec_create, LODE_OP_CREATE, struct lode_wire_create_req)
DEC0(lode_dec_open, LODE_OP_OPEN, struct lode_wire_open_req)
DEC0(lode_dec_commit, LODE_OP_COMMIT, struct lode_wire_commit_req)
DEC1(lode_dec_mkdir, LODE_OP_MKDIR, struct lode_wire_mkdir_req)
DEC2(lode_dec_rename, LODE_OP_RENAME, struct lode_wire_rename_req)
DEC1(lode_dec_link, LODE_OP_LINK, struct lode_wire_link_req)
DEC2(lode_dec_symlink, LODE_OP_SYMLINK, struct lode_wire_symlink_req)
DEC0(lode_dec_readdir, LODE_OP_READDIR, struct lode_wire_readdir_req)
DEC1(lode_dec_target_register, LODE_OP_TARGET_REGISTER, struct lode_wire_target_register_req)
DEC0(lode_dec_target_heartbeat, LODE_OP_TARGET_HEARTBEAT, struct lode_wire_target_heartbeat_req)
DEC0(lode_dec_report, LODE_OP_REPORT_COPY, struct lode_wire_report_req)
DEC0(lode_dec_set_copy, LODE_OP_LAYOUT_SET_COPY, struct lode_wire_set_copy_req)
DEC0(lode_dec_obj_read, LODE_OP_OBJ_READ, struct lode_wire_obj_read_req)
DEC0(lode_dec_obj_truncate, LODE_OP_OBJ_TRUNCATE, struct lode_wire_obj_truncate_req)
DEC0(lode_dec_obj_list, LODE_OP_OBJ_LIST, struct lode_wire_obj_list_req)

static int lode_dec_statfs(const void *b, uint32_t len, uint64_t dlen)
{
	struct lode_msg m;

	return lode_msg_decode(LODE_OP_STATFS, b, len, dlen, &m);
}

static int lode_dec_target_list(const void *b, uint32_t len, uint64_t dlen)
{
	struct lode_msg m;

	return lode_msg_decode(LODE_OP_TARGET_LIST, b, len, dlen, &m);
}

static int lode_dec_xattr(uint8_t op, const void *b, uint32_t len, uint64_t dlen,
			  const struct lode_wire_xattr_req **r, struct lode_name *n)
{
	if (op != LODE_OP_SETXATTR && op != LODE_OP_GETXATTR && op != LODE_OP_LISTXATTR &&
	    op != LODE_OP_REMOVEXATTR)
		return -EPROTO;
	return dec(op, b, len, dlen, (const void **)r, n, NULL, NULL);
}

static int lode_dec_orphan(uint8_t op, const void *b, uint32_t len, uint64_t dlen,
			   const struct lode_wire_orphan_req **r, uint32_t *n)
{
	struct lode_msg m;
	int rc;

	if (op != LODE_OP_ORPHAN_LIST && op != LODE_OP_ORPHAN_DONE)
		return -EPROTO;
	rc = dec(op, b, len, dlen, (const void **)r, NULL, NULL, &m);
	if (!rc)
		*n = m.count;
	return rc;
}

static int lode_dec_objid(const void *b, uint32_t len, uint64_t dlen,
			  const struct lode_wire_objid **o)
{
	return dec(LODE_OP_OBJ_STAT, b, len, dlen, (const void **)o, NULL, NULL, NULL);
}

static int lode_dec_obj_write(const void *b, uint32_t len, uint64_t dlen,
			      const struct lode_wire_obj_write_req **r, const uint64_t **sums,
			      const struct lode_wire_chain **chain)
{
	struct lode_msg m;
	int rc = dec(LODE_OP_OBJ_WRITE, b, len, dlen, (const void **)r, NULL, NULL, &m);

	if (!rc) {
		*sums = m.sums;
		*chain = m.chain;
	}
	return rc;
}

static int lode_dec_obj_fsync(const void *b, uint32_t len, uint64_t dlen,
			      const struct lode_wire_objid **o,
			      const struct lode_wire_chain **chain)
{
	struct lode_msg m;
	int rc = dec(LODE_OP_OBJ_FSYNC, b, len, dlen, (const void **)o, NULL, NULL, &m);

	if (!rc)
		*chain = m.chain;
	return rc;
}

static int setup_names(void **state)
{
	(void)state;
	memset(long_name, 'a', sizeof(long_name));
	return 0;
}

/* ---- header ---- */

static struct lode_wire_hdr good_hdr(int reply)
{
	struct lode_wire_hdr h;

	lode_hdr_init(&h, LODE_OP_LOOKUP, 7, 24, 0);
	if (reply)
		h.flags = LODE_WIRE_F_REPLY;
	return h;
}

static void test_hdr_check_accepts_a_well_formed_request_and_reply(void **state)
{
	struct lode_wire_hdr h = good_hdr(0);

	(void)state;
	assert_int_equal(h.magic, LODE_WIRE_MAGIC);
	assert_int_equal(h.version, LODE_WIRE_VERSION);
	assert_int_equal(lode_hdr_check(&h, 0), 0);
	h = good_hdr(1);
	assert_int_equal(lode_hdr_check(&h, 1), 0);
	h.status = ENOENT; /* replies may carry a status */
	assert_int_equal(lode_hdr_check(&h, 1), 0);
	h = good_hdr(0);
	h.body_len = LODE_BODY_MAX;
	h.data_len = LODE_DATA_MAX;
	assert_int_equal(lode_hdr_check(&h, 0), 0);
}

static void test_hdr_check_rejects_bad_magic(void **state)
{
	struct lode_wire_hdr h = good_hdr(0);

	(void)state;
	h.magic = 0x4c4f4445u;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
	h.magic = 0;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
}

static void test_hdr_check_rejects_a_bad_version(void **state)
{
	struct lode_wire_hdr h = good_hdr(0);

	(void)state;
	h.version = 0;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
	h.version = 2;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
}

static void test_hdr_check_rejects_an_unknown_opcode(void **state)
{
	static const unsigned bad[] = {0, 3, 9, 38, 49, 57, 63, 64, 200, 255};
	struct lode_wire_hdr h = good_hdr(0);

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h.opcode = (uint8_t)bad[i];
		assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
		assert_false(lode_op_known(bad[i]));
		assert_string_equal(lode_op_name(bad[i]), "?");
	}
	assert_string_equal(lode_op_name(LODE_OP_LOOKUP), "LOOKUP");
	assert_string_equal(lode_op_name(LODE_OP_OBJ_FSYNC), "OBJ_FSYNC");
}

static void test_hdr_check_rejects_a_reply_flag_mismatch(void **state)
{
	struct lode_wire_hdr h = good_hdr(1);

	(void)state;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO); /* a reply where a request is due */
	h = good_hdr(0);
	assert_int_equal(lode_hdr_check(&h, 1), -EPROTO); /* a request where a reply is due */
	h.flags = 0x0002;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO); /* an unknown flag */
	h.flags = LODE_WIRE_F_REPLY | 0x8000;
	assert_int_equal(lode_hdr_check(&h, 1), -EPROTO);
}

static void test_hdr_check_rejects_lengths_over_the_limits(void **state)
{
	struct lode_wire_hdr h = good_hdr(0);

	(void)state;
	h.body_len = LODE_BODY_MAX + 1;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
	h.body_len = UINT32_MAX;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
	h = good_hdr(0);
	h.data_len = LODE_DATA_MAX + 1ull;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
	h.data_len = UINT64_MAX;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
}

static void test_hdr_check_rejects_non_zero_reserved_and_a_request_status(void **state)
{
	struct lode_wire_hdr h = good_hdr(0);

	(void)state;
	h.reserved = 1;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
	h.reserved = 1ull << 63;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
	h = good_hdr(1);
	h.reserved = 0x100;
	assert_int_equal(lode_hdr_check(&h, 1), -EPROTO);
	h = good_hdr(0);
	h.status = EIO;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
}

/* ---- status mapping ---- */

static const int wire_errnos[] = {
    EPERM,     ENOENT,	   EIO,		 EBADF,	    EAGAIN,	  ENOMEM,   EACCES,	  EBUSY,
    EEXIST,    EXDEV,	   ENOTDIR,	 EISDIR,    EINVAL,	  EFBIG,    ENOSPC,	  EROFS,
    EMLINK,    ERANGE,	   ENAMETOOLONG, ENOSYS,    ENOTEMPTY,	  ELOOP,    ENODATA,	  EPROTO,
    EBADMSG,   EOVERFLOW,  EOPNOTSUPP,	 ETIMEDOUT, ECONNREFUSED, ESTALE,   EDQUOT,	  ECANCELED,
    ESHUTDOWN, ECONNRESET, ENXIO,	 E2BIG,	    ETXTBSY,	  EMSGSIZE, EHOSTUNREACH,
};

static void test_status_round_trips_every_wire_errno(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(wire_errnos) / sizeof(wire_errnos[0]); i++) {
		int e = wire_errnos[i];

		assert_int_equal(lode_status_from_errno(-e), e);
		assert_int_equal(lode_status_to_errno(lode_status_from_errno(-e)), -e);
	}
}

static void test_status_maps_unknown_codes_to_eio(void **state)
{
	(void)state;
	assert_int_equal(lode_status_from_errno(-EDOM), EIO);
	assert_int_equal(lode_status_from_errno(-ECHILD), EIO);
	assert_int_equal(lode_status_from_errno(-ENOTSOCK), EIO);
	assert_int_equal(lode_status_from_errno(-9999), EIO);
	assert_int_equal(lode_status_to_errno(EDOM), -EIO);
	assert_int_equal(lode_status_to_errno(9999), -EIO);
	assert_int_equal(lode_status_to_errno(-ENOENT),
			 -EIO); /* negative status: not on the wire */
	assert_int_equal(lode_status_to_errno(INT32_MIN), -EIO);
	assert_int_equal(lode_status_to_errno(INT32_MAX), -EIO);
}

static void test_status_zero_is_never_an_error_and_an_error_is_never_zero(void **state)
{
	(void)state;
	assert_int_equal(lode_status_from_errno(0), LODE_S_OK);
	assert_int_equal(lode_status_to_errno(LODE_S_OK), 0);
	for (int e = 1; e <= 4096; e++) {
		int32_t s = lode_status_from_errno(-e);

		assert_true(s > 0);
		assert_true(lode_status_to_errno(s) < 0);
		assert_true(lode_status_to_errno(e) < 0);
		assert_true(lode_status_to_errno(-e) < 0);
	}
	assert_true(lode_status_from_errno(-INT32_MAX) > 0);
}

/* ---- names, through every decoder that carries a path component ---- */

typedef int (*name_dec_fn)(const char *name, size_t len, struct lode_name *out);

static int dec_lookup_name(const char *name, size_t len, struct lode_name *out)
{
	struct lode_wire_lookup_req r = {.parent = 1, .name_len = (uint16_t)len};
	const struct lode_wire_lookup_req *req = SENT(struct lode_wire_lookup_req);
	uint32_t blen = build(&r, sizeof(r), name, len, NULL, 0);
	int rc = lode_dec_lookup(BODY, blen, 0, &req, out);

	assert_true(rc ? req == SENTINEL : (const void *)req == BODY);
	return rc;
}

static int dec_create_name(const char *name, size_t len, struct lode_name *out)
{
	struct lode_wire_create_req r = {
	    .parent = 1, .mode = 0644, .flags = LODE_OPEN_WRITE, .name_len = (uint16_t)len};
	const struct lode_wire_create_req *req = SENT(struct lode_wire_create_req);
	uint32_t blen = build(&r, sizeof(r), name, len, NULL, 0);
	int rc = lode_dec_create(BODY, blen, 0, &req, out);

	assert_true(rc ? req == SENTINEL : (const void *)req == BODY);
	return rc;
}

static int dec_mkdir_name(const char *name, size_t len, struct lode_name *out)
{
	struct lode_wire_mkdir_req r = {.parent = 1, .mode = 0755, .name_len = (uint16_t)len};
	const struct lode_wire_mkdir_req *req = SENT(struct lode_wire_mkdir_req);
	uint32_t blen = build(&r, sizeof(r), name, len, NULL, 0);
	int rc = lode_dec_mkdir(BODY, blen, 0, &req, out);

	assert_true(rc ? req == SENTINEL : (const void *)req == BODY);
	return rc;
}

static int dec_link_name(const char *name, size_t len, struct lode_name *out)
{
	struct lode_wire_link_req r = {.ino = 5, .new_parent = 1, .name_len = (uint16_t)len};
	const struct lode_wire_link_req *req = SENT(struct lode_wire_link_req);
	uint32_t blen = build(&r, sizeof(r), name, len, NULL, 0);
	int rc = lode_dec_link(BODY, blen, 0, &req, out);

	assert_true(rc ? req == SENTINEL : (const void *)req == BODY);
	return rc;
}

static int dec_rename_old_name(const char *name, size_t len, struct lode_name *out)
{
	struct lode_wire_rename_req r = {
	    .old_parent = 1, .new_parent = 2, .old_name_len = (uint16_t)len, .new_name_len = 3};
	const struct lode_wire_rename_req *req = SENT(struct lode_wire_rename_req);
	struct lode_name other = NAME_SENTINEL;
	uint32_t blen = build(&r, sizeof(r), name, len, "new", 3);
	int rc = lode_dec_rename(BODY, blen, 0, &req, out, &other);

	assert_true(rc ? req == SENTINEL && name_untouched(&other) : (const void *)req == BODY);
	if (!rc) {
		assert_int_equal(other.len, 3);
		assert_memory_equal(other.ptr, "new", 3);
	}
	return rc;
}

static int dec_rename_new_name(const char *name, size_t len, struct lode_name *out)
{
	struct lode_wire_rename_req r = {
	    .old_parent = 1, .new_parent = 2, .old_name_len = 3, .new_name_len = (uint16_t)len};
	const struct lode_wire_rename_req *req = SENT(struct lode_wire_rename_req);
	struct lode_name other = NAME_SENTINEL;
	uint32_t blen = build(&r, sizeof(r), "old", 3, name, len);
	int rc = lode_dec_rename(BODY, blen, 0, &req, &other, out);

	assert_true(rc ? req == SENTINEL && name_untouched(&other) : (const void *)req == BODY);
	if (!rc) {
		assert_int_equal(other.len, 3);
		assert_memory_equal(other.ptr, "old", 3);
	}
	return rc;
}

static int dec_symlink_name(const char *name, size_t len, struct lode_name *out)
{
	struct lode_wire_symlink_req r = {.parent = 1, .name_len = (uint16_t)len, .target_len = 6};
	const struct lode_wire_symlink_req *req = SENT(struct lode_wire_symlink_req);
	struct lode_name target = NAME_SENTINEL;
	uint32_t blen = build(&r, sizeof(r), name, len, "/a/b/c", 6);
	int rc = lode_dec_symlink(BODY, blen, 0, &req, out, &target);

	assert_true(rc ? req == SENTINEL && name_untouched(&target) : (const void *)req == BODY);
	if (!rc) {
		assert_int_equal(target.len, 6);
		assert_memory_equal(target.ptr, "/a/b/c", 6);
	}
	return rc;
}

static const struct {
	const char *what;
	name_dec_fn fn;
} name_decoders[] = {
    {"LOOKUP", dec_lookup_name},	 {"CREATE", dec_create_name},
    {"MKDIR", dec_mkdir_name},		 {"LINK", dec_link_name},
    {"RENAME old", dec_rename_old_name}, {"RENAME new", dec_rename_new_name},
    {"SYMLINK", dec_symlink_name},
};

static void expect_name(const char *name, size_t len, int want)
{
	for (size_t i = 0; i < sizeof(name_decoders) / sizeof(name_decoders[0]); i++) {
		struct lode_name out = NAME_SENTINEL;
		int rc = name_decoders[i].fn(name, len, &out);

		if (rc != want)
			fail_msg("%s with a %zu-byte name: got %d, want %d", name_decoders[i].what,
				 len, rc, want);
		if (rc) {
			assert_true(name_untouched(&out));
		} else {
			assert_int_equal(out.len, len);
			assert_memory_equal(out.ptr, name, len);
		}
	}
	assert_int_equal(lode_name_check(name, len), want);
}

static void test_name_decoders_accept_ordinary_names(void **state)
{
	(void)state;
	expect_name("a", 1, 0);
	expect_name("hello.txt", 9, 0);
	expect_name("...", 3, 0);
	expect_name(".hidden", 7, 0);
	expect_name("..x", 3, 0);
	expect_name("sp ace\xff\x01", 8, 0);
}

static void test_name_decoders_accept_a_name_of_255_bytes(void **state)
{
	(void)state;
	expect_name(long_name, LODE_NAME_MAX, 0);
}

static void test_name_decoders_reject_a_name_of_256_bytes(void **state)
{
	(void)state;
	expect_name(long_name, LODE_NAME_MAX + 1, -ENAMETOOLONG);
	expect_name(long_name, 4000, -ENAMETOOLONG);
}

static void test_name_decoders_reject_a_zero_length_name(void **state)
{
	(void)state;
	expect_name("", 0, -EINVAL);
}

static void test_name_decoders_reject_a_name_with_a_slash(void **state)
{
	(void)state;
	expect_name("a/b", 3, -EINVAL);
	expect_name("/", 1, -EINVAL);
	expect_name("ab/", 3, -EINVAL);
}

static void test_name_decoders_reject_a_name_with_a_nul(void **state)
{
	(void)state;
	expect_name("a\0b", 3, -EINVAL);
	expect_name("\0", 1, -EINVAL);
	expect_name("ab\0", 3, -EINVAL);
}

static void test_name_decoders_reject_dot_and_dot_dot(void **state)
{
	(void)state;
	expect_name(".", 1, -EINVAL);
	expect_name("..", 2, -EINVAL);
}

/* ---- body shape, for every decoder with a name ---- */

static void test_lookup_rejects_a_body_shorter_than_its_fixed_struct(void **state)
{
	struct lode_wire_lookup_req r = {.parent = 1, .name_len = 0};
	const struct lode_wire_lookup_req *req = SENT(struct lode_wire_lookup_req);
	struct lode_name n = NAME_SENTINEL;

	(void)state;
	build(&r, sizeof(r), NULL, 0, NULL, 0);
	for (uint32_t len = 0; len < sizeof(r); len++)
		assert_int_equal(lode_dec_lookup(BODY, len, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_lookup(NULL, 0, 0, &req, &n), -EPROTO);
	assert_ptr_equal(req, SENTINEL);
	assert_true(name_untouched(&n));
}

static void test_lookup_rejects_a_body_longer_than_struct_and_name(void **state)
{
	struct lode_wire_lookup_req r = {.parent = 1, .name_len = 3};
	const struct lode_wire_lookup_req *req = SENT(struct lode_wire_lookup_req);
	struct lode_name n = NAME_SENTINEL;
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), "abcdef", 6, NULL, 0);
	assert_int_equal(lode_dec_lookup(BODY, len, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_lookup(BODY, (uint32_t)sizeof(r) + 4, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_lookup(BODY, (uint32_t)sizeof(r) + 3, 0, &req, &n), 0);
}

static void test_lookup_rejects_a_name_length_past_the_body(void **state)
{
	struct lode_wire_lookup_req r = {.parent = 1, .name_len = 10};
	const struct lode_wire_lookup_req *req = SENT(struct lode_wire_lookup_req);
	struct lode_name n = NAME_SENTINEL;
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), "abc", 3, NULL, 0);
	assert_int_equal(lode_dec_lookup(BODY, len, 0, &req, &n), -EPROTO);
	r.name_len = UINT16_MAX;
	len = build(&r, sizeof(r), "abc", 3, NULL, 0);
	assert_int_equal(lode_dec_lookup(BODY, len, 0, &req, &n), -EPROTO);
	assert_ptr_equal(req, SENTINEL);
	assert_true(name_untouched(&n));
}

static void test_lookup_rejects_non_zero_reserved_fields_and_data(void **state)
{
	struct lode_wire_lookup_req r = {.parent = 1, .name_len = 1};
	const struct lode_wire_lookup_req *req = SENT(struct lode_wire_lookup_req);
	struct lode_name n = NAME_SENTINEL;
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), "x", 1, NULL, 0);
	assert_int_equal(lode_dec_lookup(BODY, len, 0, &req, &n), 0);
	assert_int_equal(lode_dec_lookup(BODY, len, 1, &req, &n), -EPROTO);
	r.reserved0 = 1;
	len = build(&r, sizeof(r), "x", 1, NULL, 0);
	req = SENT(struct lode_wire_lookup_req);
	n = NAME_SENTINEL;
	assert_int_equal(lode_dec_lookup(BODY, len, 0, &req, &n), -EPROTO);
	r.reserved0 = 0;
	r.reserved1 = 0x80000000u;
	len = build(&r, sizeof(r), "x", 1, NULL, 0);
	assert_int_equal(lode_dec_lookup(BODY, len, 0, &req, &n), -EPROTO);
	assert_ptr_equal(req, SENTINEL);
	assert_true(name_untouched(&n));
}

static void test_mkdir_rejects_bad_shape_reserved_mode_and_data(void **state)
{
	struct lode_wire_mkdir_req r = {.parent = 1, .mode = 0755, .name_len = 2};
	const struct lode_wire_mkdir_req *req = SENT(struct lode_wire_mkdir_req);
	struct lode_name n = NAME_SENTINEL;
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), "dd", 2, NULL, 0);
	assert_int_equal(lode_dec_mkdir(BODY, len - 1, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_mkdir(BODY, len + 1, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_mkdir(BODY, sizeof(r) - 1, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_mkdir(BODY, len, 4096, &req, &n), -EPROTO);
	r.reserved = 1;
	len = build(&r, sizeof(r), "dd", 2, NULL, 0);
	assert_int_equal(lode_dec_mkdir(BODY, len, 0, &req, &n), -EPROTO);
	r.reserved = 0;
	r.mode = 040755; /* S_IFDIR is implied, not sent */
	len = build(&r, sizeof(r), "dd", 2, NULL, 0);
	assert_int_equal(lode_dec_mkdir(BODY, len, 0, &req, &n), -EINVAL);
	assert_ptr_equal(req, SENTINEL);
	assert_true(name_untouched(&n));
	r.mode = 07777;
	len = build(&r, sizeof(r), "dd", 2, NULL, 0);
	assert_int_equal(lode_dec_mkdir(BODY, len, 0, &req, &n), 0);
	assert_int_equal(req->mode, 07777);
}

static void test_link_rejects_bad_shape_reserved_and_data(void **state)
{
	struct lode_wire_link_req r = {.ino = 9, .new_parent = 1, .name_len = 4};
	const struct lode_wire_link_req *req = SENT(struct lode_wire_link_req);
	struct lode_name n = NAME_SENTINEL;
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), "link", 4, NULL, 0);
	assert_int_equal(lode_dec_link(BODY, len - 1, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_link(BODY, len + 8, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_link(BODY, 31, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_link(BODY, len, 1, &req, &n), -EPROTO);
	r.reserved0 = 1;
	len = build(&r, sizeof(r), "link", 4, NULL, 0);
	assert_int_equal(lode_dec_link(BODY, len, 0, &req, &n), -EPROTO);
	r.reserved0 = 0;
	r.reserved1 = 1;
	len = build(&r, sizeof(r), "link", 4, NULL, 0);
	assert_int_equal(lode_dec_link(BODY, len, 0, &req, &n), -EPROTO);
	assert_ptr_equal(req, SENTINEL);
	assert_true(name_untouched(&n));
	r.reserved1 = 0;
	len = build(&r, sizeof(r), "link", 4, NULL, 0);
	assert_int_equal(lode_dec_link(BODY, len, 0, &req, &n), 0);
	assert_int_equal(req->ino, 9);
	assert_int_equal(req->new_parent, 1);
}

static void test_rename_rejects_bad_shape_flags_and_data(void **state)
{
	struct lode_wire_rename_req r = {
	    .old_parent = 1, .new_parent = 2, .old_name_len = 1, .new_name_len = 2};
	const struct lode_wire_rename_req *req = SENT(struct lode_wire_rename_req);
	struct lode_name o = NAME_SENTINEL, nn = NAME_SENTINEL;
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), "a", 1, "bb", 2);
	assert_int_equal(lode_dec_rename(BODY, len - 1, 0, &req, &o, &nn), -EPROTO);
	assert_int_equal(lode_dec_rename(BODY, len + 1, 0, &req, &o, &nn), -EPROTO);
	assert_int_equal(lode_dec_rename(BODY, 16, 0, &req, &o, &nn), -EPROTO);
	assert_int_equal(lode_dec_rename(BODY, len, 2, &req, &o, &nn), -EPROTO);
	r.flags = LODE_RENAME_NOREPLACE | LODE_RENAME_EXCHANGE;
	len = build(&r, sizeof(r), "a", 1, "bb", 2);
	assert_int_equal(lode_dec_rename(BODY, len, 0, &req, &o, &nn), -EINVAL);
	r.flags = 0x4;
	len = build(&r, sizeof(r), "a", 1, "bb", 2);
	assert_int_equal(lode_dec_rename(BODY, len, 0, &req, &o, &nn), -EINVAL);
	assert_ptr_equal(req, SENTINEL);
	assert_true(name_untouched(&o) && name_untouched(&nn));
	r.flags = LODE_RENAME_EXCHANGE;
	len = build(&r, sizeof(r), "a", 1, "bb", 2);
	assert_int_equal(lode_dec_rename(BODY, len, 0, &req, &o, &nn), 0);
	assert_int_equal(o.len, 1);
	assert_memory_equal(o.ptr, "a", 1);
	assert_int_equal(nn.len, 2);
	assert_memory_equal(nn.ptr, "bb", 2);
}

static void test_symlink_checks_its_target(void **state)
{
	struct lode_wire_symlink_req r = {.parent = 1, .name_len = 1};
	const struct lode_wire_symlink_req *req = SENT(struct lode_wire_symlink_req);
	struct lode_name n = NAME_SENTINEL, t = NAME_SENTINEL;
	uint32_t len;

	(void)state;
	r.target_len = 0;
	len = build(&r, sizeof(r), "s", 1, NULL, 0);
	assert_int_equal(lode_dec_symlink(BODY, len, 0, &req, &n, &t), -ENOENT);
	r.target_len = 3;
	len = build(&r, sizeof(r), "s", 1, "a\0b", 3);
	assert_int_equal(lode_dec_symlink(BODY, len, 0, &req, &n, &t), -EINVAL);
	r.target_len = LODE_SYMLINK_MAX + 1;
	len = build(&r, sizeof(r), "s", 1, long_name, LODE_SYMLINK_MAX + 1);
	assert_int_equal(lode_dec_symlink(BODY, len, 0, &req, &n, &t), -ENAMETOOLONG);
	r.target_len = 5;
	len = build(&r, sizeof(r), "s", 1, "abcde", 5);
	assert_int_equal(lode_dec_symlink(BODY, len - 1, 0, &req, &n, &t), -EPROTO);
	assert_int_equal(lode_dec_symlink(BODY, len + 1, 0, &req, &n, &t), -EPROTO);
	assert_int_equal(lode_dec_symlink(BODY, len, 5, &req, &n, &t), -EPROTO);
	r.reserved = 1;
	len = build(&r, sizeof(r), "s", 1, "abcde", 5);
	assert_int_equal(lode_dec_symlink(BODY, len, 0, &req, &n, &t), -EPROTO);
	assert_ptr_equal(req, SENTINEL);
	assert_true(name_untouched(&n) && name_untouched(&t));
	r.reserved = 0;
	r.target_len = LODE_SYMLINK_MAX;
	len = build(&r, sizeof(r), "s", 1, long_name, LODE_SYMLINK_MAX);
	assert_int_equal(lode_dec_symlink(BODY, len, 0, &req, &n, &t), 0);
	assert_int_equal(t.len, LODE_SYMLINK_MAX);
	assert_ptr_equal(t.ptr, (const char *)BODY + sizeof(r) + 1);
	r.target_len = 2; /* a target may contain slashes and dots */
	len = build(&r, sizeof(r), "s", 1, "..", 2);
	assert_int_equal(lode_dec_symlink(BODY, len, 0, &req, &n, &t), 0);
}

/* ---- fixed-size requests ---- */

static void test_hello_accepts_both_roles_and_rejects_others(void **state)
{
	struct lode_wire_hello_req r = {.client_id = 42, .role = LODE_ROLE_CLIENT};
	const struct lode_wire_hello_req *req = SENT(struct lode_wire_hello_req);
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_hello(BODY, len, 0, &req), 0);
	assert_int_equal(req->client_id, 42);
	r.role = LODE_ROLE_OSS;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_hello(BODY, len, 0, &req), 0);
	req = SENT(struct lode_wire_hello_req);
	r.role = 3;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_hello(BODY, len, 0, &req), -EINVAL);
	r.role = 0;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_hello(BODY, len, 0, &req), -EINVAL);
	assert_ptr_equal(req, SENTINEL);
}

static void test_hello_rejects_bad_length_reserved_and_data(void **state)
{
	struct lode_wire_hello_req r = {.client_id = 42, .role = LODE_ROLE_CLIENT};
	const struct lode_wire_hello_req *req = SENT(struct lode_wire_hello_req);
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_hello(BODY, len - 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_hello(BODY, len + 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_hello(NULL, 0, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_hello(BODY, len, 1, &req), -EPROTO);
	r.reserved = 1;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_hello(BODY, len, 0, &req), -EPROTO);
	assert_ptr_equal(req, SENTINEL);
}

static void test_getattr_accepts_exactly_its_struct(void **state)
{
	struct lode_wire_getattr_req r = {.ino = 77};
	const struct lode_wire_getattr_req *req = SENT(struct lode_wire_getattr_req);
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_getattr(BODY, len - 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_getattr(BODY, len + 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_getattr(NULL, 0, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_getattr(BODY, len, 8, &req), -EPROTO);
	assert_ptr_equal(req, SENTINEL);
	assert_int_equal(lode_dec_getattr(BODY, len, 0, &req), 0);
	assert_int_equal(req->ino, 77);
}

static void test_setattr_checks_valid_bits_mode_and_size(void **state)
{
	struct lode_wire_setattr_req r = {
	    .ino = 3, .valid = LODE_SETATTR_ALL_, .mode = 0600, .size = 1000};
	const struct lode_wire_setattr_req *req = SENT(struct lode_wire_setattr_req);
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_setattr(BODY, len - 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_setattr(BODY, len + 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_setattr(BODY, len, 1, &req), -EPROTO);
	r.valid = 0x200;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_setattr(BODY, len, 0, &req), -EINVAL);
	r.valid = LODE_SETATTR_MODE;
	r.mode = 0100600;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_setattr(BODY, len, 0, &req), -EINVAL);
	r.valid = LODE_SETATTR_SIZE;
	r.size = (uint64_t)INT64_MAX + 1;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_setattr(BODY, len, 0, &req), -EFBIG);
	assert_ptr_equal(req, SENTINEL);
	r.size = (uint64_t)INT64_MAX;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_setattr(BODY, len, 0, &req), 0);
	/* fields outside `valid` are not looked at */
	r.valid = LODE_SETATTR_UID;
	r.mode = 0xffffffffu;
	r.size = UINT64_MAX;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_setattr(BODY, len, 0, &req), 0);
}

static void test_open_checks_flags_and_reserved(void **state)
{
	struct lode_wire_open_req r = {.ino = 3, .flags = LODE_OPEN_READ};
	const struct lode_wire_open_req *req = SENT(struct lode_wire_open_req);
	static const uint32_t good[] = {LODE_OPEN_READ, LODE_OPEN_WRITE,
					LODE_OPEN_READ | LODE_OPEN_WRITE,
					LODE_OPEN_WRITE | LODE_OPEN_TRUNC};
	static const uint32_t bad[] = {0,
				       LODE_OPEN_TRUNC,
				       LODE_OPEN_READ | LODE_OPEN_TRUNC,
				       LODE_OPEN_READ | LODE_OPEN_EXCL,
				       LODE_OPEN_WRITE | LODE_OPEN_CREATE,
				       0x20 | LODE_OPEN_READ};
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_open(BODY, len - 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_open(BODY, len + 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_open(BODY, len, 1, &req), -EPROTO);
	r.reserved = 1;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_open(BODY, len, 0, &req), -EPROTO);
	r.reserved = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r.flags = bad[i];
		len = build(&r, sizeof(r), NULL, 0, NULL, 0);
		assert_int_equal(lode_dec_open(BODY, len, 0, &req), -EINVAL);
	}
	assert_ptr_equal(req, SENTINEL);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		r.flags = good[i];
		len = build(&r, sizeof(r), NULL, 0, NULL, 0);
		assert_int_equal(lode_dec_open(BODY, len, 0, &req), 0);
		assert_int_equal(req->flags, good[i]);
	}
}

static void test_commit_checks_reserved_commit_and_size(void **state)
{
	struct lode_wire_commit_req r = {.ino = 3, .handle = 4, .size = 5, .commit = 1};
	const struct lode_wire_commit_req *req = SENT(struct lode_wire_commit_req);
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_commit(BODY, len - 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_commit(BODY, len + 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_commit(BODY, len, 1, &req), -EPROTO);
	r.reserved = 1;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_commit(BODY, len, 0, &req), -EPROTO);
	r.reserved = 0;
	r.commit = 2;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_commit(BODY, len, 0, &req), -EPROTO);
	r.commit = 1;
	r.size = UINT64_MAX;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_commit(BODY, len, 0, &req), -EFBIG);
	assert_ptr_equal(req, SENTINEL);
	r.size = 5;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_commit(BODY, len, 0, &req), 0);
	assert_int_equal(req->handle, 4);
}

static void test_readdir_checks_max_entries_flags_and_data(void **state)
{
	struct lode_wire_readdir_req r = {.ino = 1, .cookie = 0, .max_entries = 1};
	const struct lode_wire_readdir_req *req = SENT(struct lode_wire_readdir_req);
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_readdir(BODY, len - 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_readdir(BODY, len + 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_readdir(BODY, len, 1, &req), -EPROTO);
	r.max_entries = 0;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_readdir(BODY, len, 0, &req), -EINVAL);
	r.max_entries = LODE_READDIR_MAX + 1;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_readdir(BODY, len, 0, &req), -EINVAL);
	r.max_entries = LODE_READDIR_MAX;
	r.flags = 2; /* an unknown flag */
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_readdir(BODY, len, 0, &req), -EPROTO);
	assert_ptr_equal(req, SENTINEL);
	r.flags = LODE_READDIR_ATTRS;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_readdir(BODY, len, 0, &req), 0);
	assert_int_equal(req->flags, LODE_READDIR_ATTRS);
	r.flags = 0;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_readdir(BODY, len, 0, &req), 0);
	assert_int_equal(req->max_entries, LODE_READDIR_MAX);
}

static void test_statfs_and_target_list_take_an_empty_body_and_no_data(void **state)
{
	(void)state;
	assert_int_equal(lode_dec_statfs(NULL, 0, 0), 0);
	assert_int_equal(lode_dec_statfs(BODY, 0, 0), 0);
	assert_int_equal(lode_dec_statfs(BODY, 1, 0), -EPROTO);
	assert_int_equal(lode_dec_statfs(BODY, 0, 1), -EPROTO);
	assert_int_equal(lode_dec_target_list(NULL, 0, 0), 0);
	assert_int_equal(lode_dec_target_list(BODY, 8, 0), -EPROTO);
	assert_int_equal(lode_dec_target_list(BODY, 0, 8), -EPROTO);
}

static void test_target_heartbeat_checks_length_reserved_and_data(void **state)
{
	struct lode_wire_target_heartbeat_req r = {.target_id = 2, .bytes_total = 10};
	const struct lode_wire_target_heartbeat_req *req =
	    SENT(struct lode_wire_target_heartbeat_req);
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_target_heartbeat(BODY, len - 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_target_heartbeat(BODY, len + 1, 0, &req), -EPROTO);
	assert_int_equal(lode_dec_target_heartbeat(BODY, len, 1, &req), -EPROTO);
	r.reserved = 1;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_target_heartbeat(BODY, len, 0, &req), -EPROTO);
	assert_ptr_equal(req, SENTINEL);
	r.reserved = 0;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_target_heartbeat(BODY, len, 0, &req), 0);
	assert_int_equal(req->target_id, 2);
}

static void test_target_register_checks_its_address(void **state)
{
	struct lode_wire_target_register_req r = {.bytes_total = 1, .addr_len = 20};
	const struct lode_wire_target_register_req *req =
	    SENT(struct lode_wire_target_register_req);
	struct lode_name a = NAME_SENTINEL;
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), "tcp://10.0.0.1:7000", 19, NULL, 0);
	assert_int_equal(lode_dec_target_register(BODY, len, 0, &req, &a), -EPROTO);
	r.addr_len = 19;
	len = build(&r, sizeof(r), "tcp://10.0.0.1:7000", 19, NULL, 0);
	assert_int_equal(lode_dec_target_register(BODY, len + 1, 0, &req, &a), -EPROTO);
	assert_int_equal(lode_dec_target_register(BODY, sizeof(r) - 1, 0, &req, &a), -EPROTO);
	assert_int_equal(lode_dec_target_register(BODY, len, 1, &req, &a), -EPROTO);
	r.reserved0 = 1;
	len = build(&r, sizeof(r), "tcp://10.0.0.1:7000", 19, NULL, 0);
	assert_int_equal(lode_dec_target_register(BODY, len, 0, &req, &a), -EPROTO);
	r.reserved0 = 0;
	r.reserved1 = 1;
	len = build(&r, sizeof(r), "tcp://10.0.0.1:7000", 19, NULL, 0);
	assert_int_equal(lode_dec_target_register(BODY, len, 0, &req, &a), -EPROTO);
	r.reserved1 = 0;
	r.addr_len = 0;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_target_register(BODY, len, 0, &req, &a), -EINVAL);
	r.addr_len = LODE_ADDR_MAX + 1;
	len = build(&r, sizeof(r), long_name, LODE_ADDR_MAX + 1, NULL, 0);
	assert_int_equal(lode_dec_target_register(BODY, len, 0, &req, &a), -EINVAL);
	r.addr_len = 4;
	len = build(&r, sizeof(r), "ab\0c", 4, NULL, 0);
	assert_int_equal(lode_dec_target_register(BODY, len, 0, &req, &a), -EINVAL);
	assert_ptr_equal(req, SENTINEL);
	assert_true(name_untouched(&a));
	r.addr_len = LODE_ADDR_MAX;
	len = build(&r, sizeof(r), long_name, LODE_ADDR_MAX, NULL, 0);
	assert_int_equal(lode_dec_target_register(BODY, len, 0, &req, &a), 0);
	assert_int_equal(a.len, LODE_ADDR_MAX);
	r.addr_len = 19;
	len = build(&r, sizeof(r), "tcp://10.0.0.1:7000", 19, NULL, 0);
	assert_int_equal(lode_dec_target_register(BODY, len, 0, &req, &a), 0);
	assert_memory_equal(a.ptr, "tcp://10.0.0.1:7000", 19);
}

static void test_orphan_list_and_done_check_max_and_data(void **state)
{
	struct lode_wire_orphan_req r = {.target_id = 1, .max = 10};
	const struct lode_wire_orphan_req *req = SENT(struct lode_wire_orphan_req);
	uint32_t n = 4242;
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_orphan(LODE_OP_ORPHAN_LIST, BODY, len - 1, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_orphan(LODE_OP_ORPHAN_LIST, BODY, len + 1, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_orphan(LODE_OP_ORPHAN_LIST, BODY, len, 24, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_orphan(LODE_OP_LOOKUP, BODY, len, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_orphan(LODE_OP_ORPHAN_DONE, BODY, len, 23, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_orphan(LODE_OP_ORPHAN_DONE, BODY, len,
					 24ull * (LODE_OBJLIST_MAX + 1), &req, &n),
			 -EPROTO);
	r.max = 0;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_orphan(LODE_OP_ORPHAN_LIST, BODY, len, 0, &req, &n), -EINVAL);
	r.max = LODE_OBJLIST_MAX + 1;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_orphan(LODE_OP_ORPHAN_LIST, BODY, len, 0, &req, &n), -EINVAL);
	assert_ptr_equal(req, SENTINEL);
	assert_int_equal(n, 4242);
	r.max = LODE_OBJLIST_MAX;
	len = build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_orphan(LODE_OP_ORPHAN_LIST, BODY, len, 0, &req, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(lode_dec_orphan(LODE_OP_ORPHAN_DONE, BODY, len, 72, &req, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(
	    lode_dec_orphan(LODE_OP_ORPHAN_DONE, BODY, len, 24ull * LODE_OBJLIST_MAX, &req, &n), 0);
	assert_int_equal(n, LODE_OBJLIST_MAX);
}

/* ---- create and layouts ---- */

static struct lode_wire_layout good_layout(void)
{
	struct lode_wire_layout l = {
	    .stripe_size = 4 * CHUNK, .stripe_count = 4, .mirror_count = 2, .generation = 1};

	for (unsigned i = 0; i < 8; i++)
		l.targets[i] = i + 1;
	return l;
}

static int dec_create_with(const struct lode_wire_create_req *r, const char *name, size_t nlen)
{
	const struct lode_wire_create_req *req = SENT(struct lode_wire_create_req);
	struct lode_name n = NAME_SENTINEL;
	uint32_t len = build(r, sizeof(*r), name, nlen, NULL, 0);
	int rc = lode_dec_create(BODY, len, 0, &req, &n);

	if (rc) {
		assert_ptr_equal(req, SENTINEL);
		assert_true(name_untouched(&n));
	} else {
		assert_ptr_equal(req, BODY);
		assert_int_equal(n.len, nlen);
	}
	return rc;
}

static void test_create_accepts_a_request_with_and_without_a_layout(void **state)
{
	struct lode_wire_create_req r = {.parent = 1,
					 .mode = 0644,
					 .flags =
					     LODE_OPEN_WRITE | LODE_OPEN_CREATE | LODE_OPEN_EXCL,
					 .name_len = 1};

	(void)state;
	assert_int_equal(dec_create_with(&r, "f", 1), 0);
	r.has_layout = 1;
	r.layout = good_layout();
	r.has_targets = 1;
	assert_int_equal(dec_create_with(&r, "f", 1), 0);
	/* without has_targets the targets are the MDS's to choose, and are not looked at */
	r.has_targets = 0;
	memset(r.layout.targets, 0, sizeof(r.layout.targets));
	assert_int_equal(dec_create_with(&r, "f", 1), 0);
}

static void test_create_rejects_bad_flags_mode_reserved_and_data(void **state)
{
	struct lode_wire_create_req r = {
	    .parent = 1, .mode = 0644, .flags = LODE_OPEN_WRITE, .name_len = 1};
	const struct lode_wire_create_req *req = SENT(struct lode_wire_create_req);
	struct lode_name n = NAME_SENTINEL;
	uint32_t len;

	(void)state;
	len = build(&r, sizeof(r), "f", 1, NULL, 0);
	assert_int_equal(lode_dec_create(BODY, len, 1, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_create(BODY, len - 1, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_create(BODY, len + 1, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_create(BODY, sizeof(r) - 1, 0, &req, &n), -EPROTO);
	assert_ptr_equal(req, SENTINEL);
	r.reserved = 1;
	assert_int_equal(dec_create_with(&r, "f", 1), -EPROTO);
	r.reserved = 0;
	r.has_layout = 2;
	assert_int_equal(dec_create_with(&r, "f", 1), -EPROTO);
	r.has_layout = 0;
	r.has_targets = 2;
	assert_int_equal(dec_create_with(&r, "f", 1), -EPROTO);
	r.has_targets = 1; /* targets without a layout */
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
	r.has_targets = 0;
	r.flags = 0x20;
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
	r.flags = LODE_OPEN_WRITE;
	r.mode = 0100644;
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
}

static void test_create_rejects_a_layout_with_zero_stripe_count(void **state)
{
	struct lode_wire_create_req r = {
	    .parent = 1, .mode = 0644, .flags = LODE_OPEN_WRITE, .name_len = 1, .has_layout = 1};

	(void)state;
	r.layout = good_layout();
	r.layout.stripe_count = 0;
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
	r.layout = good_layout();
	r.layout.mirror_count = 0;
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
}

static void test_create_rejects_a_stripe_size_that_is_not_a_multiple_of_the_chunk(void **state)
{
	struct lode_wire_create_req r = {.parent = 1,
					 .mode = 0644,
					 .flags = LODE_OPEN_WRITE,
					 .name_len = 1,
					 .has_layout = 1,
					 .has_targets = 1};

	(void)state;
	r.layout = good_layout();
	r.layout.stripe_size = CHUNK + 4096;
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
	r.layout.stripe_size = 0;
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
	r.layout.stripe_size = CHUNK / 2;
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
	r.layout.stripe_size = (1u << 30) + CHUNK;
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
	r.layout.stripe_size = 1u << 30;
	assert_int_equal(dec_create_with(&r, "f", 1), 0);
}

static void test_create_rejects_a_layout_with_too_many_targets(void **state)
{
	struct lode_wire_create_req r = {.parent = 1,
					 .mode = 0644,
					 .flags = LODE_OPEN_WRITE,
					 .name_len = 1,
					 .has_layout = 1,
					 .has_targets = 1};

	(void)state;
	r.layout = good_layout();
	r.layout.stripe_count = 13;
	r.layout.mirror_count = 5; /* 65 */
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
	r.layout.stripe_count = UINT16_MAX;
	r.layout.mirror_count = UINT16_MAX; /* the product must not wrap */
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
	r.layout.stripe_count = 8;
	r.layout.mirror_count = 8; /* 64 */
	assert_int_equal(dec_create_with(&r, "f", 1), 0);
}

static void test_create_rejects_non_zero_unused_targets(void **state)
{
	struct lode_wire_create_req r = {.parent = 1,
					 .mode = 0644,
					 .flags = LODE_OPEN_WRITE,
					 .name_len = 1,
					 .has_layout = 1,
					 .has_targets = 1};

	(void)state;
	r.layout = good_layout(); /* 4 x 2 = 8 targets used */
	r.layout.targets[8] = 99;
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
	r.layout.targets[8] = 0;
	r.layout.targets[LODE_LAYOUT_TARGETS_MAX - 1] = 1;
	assert_int_equal(dec_create_with(&r, "f", 1), -EINVAL);
}

static void test_layout_check_accepts_good_layouts_and_rejects_each_bad_field(void **state)
{
	struct lode_wire_layout l = good_layout();

	(void)state;
	assert_int_equal(lode_layout_check(&l), 0);
	l.stripe_count = 1;
	l.mirror_count = 1;
	memset(l.targets, 0, sizeof(l.targets));
	l.targets[0] = 5;
	assert_int_equal(lode_layout_check(&l), 0);
	l.targets[1] = 5;
	assert_int_equal(lode_layout_check(&l), -EINVAL);
	l = good_layout();
	l.stripe_count = 0;
	assert_int_equal(lode_layout_check(&l), -EINVAL);
	l = good_layout();
	l.stripe_size = CHUNK - 1;
	assert_int_equal(lode_layout_check(&l), -EINVAL);
	l = good_layout();
	l.stripe_count = 65;
	l.mirror_count = 1;
	assert_int_equal(lode_layout_check(&l), -EINVAL);
}

/* ---- xattrs ---- */

static int dec_xattr_with(uint8_t op, struct lode_wire_xattr_req *r, const char *name, size_t nlen,
			  uint64_t data_len)
{
	const struct lode_wire_xattr_req *req = SENT(struct lode_wire_xattr_req);
	struct lode_name n = NAME_SENTINEL;
	uint32_t len;
	int rc;

	r->name_len = (uint16_t)nlen;
	len = build(r, sizeof(*r), name, nlen, NULL, 0);
	rc = lode_dec_xattr(op, BODY, len, data_len, &req, &n);
	if (rc) {
		assert_ptr_equal(req, SENTINEL);
		assert_true(name_untouched(&n));
	} else {
		assert_ptr_equal(req, BODY);
		assert_int_equal(n.len, nlen);
	}
	return rc;
}

static void test_xattr_accepts_each_opcode_well_formed(void **state)
{
	struct lode_wire_xattr_req r = {.ino = 1};

	(void)state;
	r.flags = LODE_XATTR_CREATE;
	assert_int_equal(dec_xattr_with(LODE_OP_SETXATTR, &r, "user.a", 6, 10), 0);
	assert_int_equal(dec_xattr_with(LODE_OP_SETXATTR, &r, "user.a", 6, 0), 0);
	assert_int_equal(dec_xattr_with(LODE_OP_SETXATTR, &r, "user.a", 6, LODE_XATTR_VALUE_MAX),
			 0);
	r.flags = 0;
	r.size = 100;
	assert_int_equal(dec_xattr_with(LODE_OP_GETXATTR, &r, "user.a", 6, 0), 0);
	assert_int_equal(dec_xattr_with(LODE_OP_LISTXATTR, &r, NULL, 0, 0), 0);
	assert_int_equal(dec_xattr_with(LODE_OP_REMOVEXATTR, &r, "user.a/b", 8, 0), 0);
	assert_int_equal(dec_xattr_with(LODE_OP_GETXATTR, &r, long_name, LODE_XATTR_NAME_MAX, 0),
			 0);
}

static void test_xattr_rejects_a_value_over_the_limit(void **state)
{
	struct lode_wire_xattr_req r = {.ino = 1};

	(void)state;
	assert_int_equal(
	    dec_xattr_with(LODE_OP_SETXATTR, &r, "user.a", 6, LODE_XATTR_VALUE_MAX + 1ull), -E2BIG);
	assert_int_equal(dec_xattr_with(LODE_OP_SETXATTR, &r, "user.a", 6, LODE_DATA_MAX), -E2BIG);
}

static void test_xattr_rejects_data_where_none_is_allowed(void **state)
{
	struct lode_wire_xattr_req r = {.ino = 1};

	(void)state;
	assert_int_equal(dec_xattr_with(LODE_OP_GETXATTR, &r, "user.a", 6, 1), -EPROTO);
	assert_int_equal(dec_xattr_with(LODE_OP_LISTXATTR, &r, NULL, 0, 1), -EPROTO);
	assert_int_equal(dec_xattr_with(LODE_OP_REMOVEXATTR, &r, "user.a", 6, 1), -EPROTO);
}

static void test_xattr_rejects_bad_names_flags_reserved_and_opcodes(void **state)
{
	struct lode_wire_xattr_req r = {.ino = 1};

	(void)state;
	assert_int_equal(dec_xattr_with(LODE_OP_GETXATTR, &r, NULL, 0, 0), -EINVAL);
	assert_int_equal(dec_xattr_with(LODE_OP_SETXATTR, &r, "a\0b", 3, 0), -EINVAL);
	assert_int_equal(
	    dec_xattr_with(LODE_OP_SETXATTR, &r, long_name, LODE_XATTR_NAME_MAX + 1, 0), -ERANGE);
	assert_int_equal(dec_xattr_with(LODE_OP_LISTXATTR, &r, "user.a", 6, 0), -EPROTO);
	assert_int_equal(dec_xattr_with(LODE_OP_LOOKUP, &r, "user.a", 6, 0), -EPROTO);
	r.flags = 0x4;
	assert_int_equal(dec_xattr_with(LODE_OP_SETXATTR, &r, "user.a", 6, 0), -EINVAL);
	r.flags = LODE_XATTR_CREATE; /* flags belong to SETXATTR only */
	assert_int_equal(dec_xattr_with(LODE_OP_GETXATTR, &r, "user.a", 6, 0), -EPROTO);
	r.flags = 0;
	r.reserved0 = 1;
	assert_int_equal(dec_xattr_with(LODE_OP_GETXATTR, &r, "user.a", 6, 0), -EPROTO);
	r.reserved0 = 0;
	r.reserved1 = 1;
	assert_int_equal(dec_xattr_with(LODE_OP_SETXATTR, &r, "user.a", 6, 0), -EPROTO);
}

static void test_xattr_rejects_a_body_that_does_not_match_its_name_length(void **state)
{
	struct lode_wire_xattr_req r = {.ino = 1, .name_len = 6};
	const struct lode_wire_xattr_req *req = SENT(struct lode_wire_xattr_req);
	struct lode_name n = NAME_SENTINEL;
	uint32_t len = build(&r, sizeof(r), "user.a", 6, NULL, 0);

	(void)state;
	assert_int_equal(lode_dec_xattr(LODE_OP_GETXATTR, BODY, len - 1, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_xattr(LODE_OP_GETXATTR, BODY, len + 1, 0, &req, &n), -EPROTO);
	assert_int_equal(lode_dec_xattr(LODE_OP_GETXATTR, BODY, sizeof(r) - 1, 0, &req, &n),
			 -EPROTO);
	assert_ptr_equal(req, SENTINEL);
	assert_true(name_untouched(&n));
}

/* ---- objects ---- */

static const struct lode_wire_objid good_obj = {.ino = 12, .generation = 3, .stripe = 1};

/* OBJ_WRITE body: struct + nchunks sums */
static uint32_t build_write(uint64_t offset, uint32_t nchunks, uint32_t nsums, uint32_t flags)
{
	struct lode_wire_obj_write_req r = {
	    .obj = good_obj, .offset = offset, .flags = flags, .nchunks = nchunks};

	memset(body_mem.b, 0, sizeof(body_mem.b));
	memcpy(body_mem.b, &r, sizeof(r));
	for (uint32_t i = 0; i < nsums; i++) {
		uint64_t s = 0x1000 + i;

		memcpy(body_mem.b + sizeof(r) + 8 * i, &s, 8);
	}
	return (uint32_t)(sizeof(r) + 8ull * nsums);
}

static int dec_write(uint32_t len, uint64_t data_len)
{
	const struct lode_wire_obj_write_req *req = SENT(struct lode_wire_obj_write_req);
	const struct lode_wire_chain *chain = SENT(struct lode_wire_chain);
	const uint64_t *sums = SENT(uint64_t);
	int rc = lode_dec_obj_write(BODY, len, data_len, &req, &sums, &chain);

	if (rc) {
		assert_ptr_equal(req, SENTINEL);
		assert_ptr_equal(sums, SENTINEL);
		assert_ptr_equal(chain, SENTINEL);
	} else {
		assert_ptr_equal(req, BODY);
		assert_ptr_equal(sums, (const char *)BODY + sizeof(*req));
		for (uint32_t i = 0; i < req->nchunks; i++)
			assert_int_equal(sums[i], 0x1000 + i);
		if (req->flags & LODE_OBJ_F_CHAIN)
			assert_ptr_equal(chain, sums + req->nchunks);
		else
			assert_null(chain);
	}
	return rc;
}

static void test_obj_write_accepts_whole_and_partial_chunks(void **state)
{
	(void)state;
	assert_int_equal(dec_write(build_write(0, 1, 1, 0), CHUNK), 0);
	assert_int_equal(dec_write(build_write(CHUNK, 1, 1, LODE_OBJ_F_SYNC), 100), 0);
	assert_int_equal(dec_write(build_write(7ull * CHUNK, 3, 3, 0), 2ull * CHUNK + 1), 0);
	assert_int_equal(dec_write(build_write(0, 64, 64, 0), LODE_DATA_MAX), 0);
}

static void test_obj_write_rejects_nchunks_not_matching_data_len(void **state)
{
	(void)state;
	assert_int_equal(dec_write(build_write(0, 2, 2, 0), CHUNK), -EPROTO);
	assert_int_equal(dec_write(build_write(0, 1, 1, 0), CHUNK + 1), -EPROTO);
	assert_int_equal(dec_write(build_write(0, 0, 0, 0), 1), -EPROTO);
	/* nchunks right, but the checksums in the body are not */
	assert_int_equal(dec_write(build_write(0, 2, 1, 0), 2 * CHUNK), -EPROTO);
	assert_int_equal(dec_write(build_write(0, 2, 3, 0), 2 * CHUNK), -EPROTO);
	assert_int_equal(dec_write(build_write(0, 2, 2, 0) - 1, 2 * CHUNK), -EPROTO);
	assert_int_equal(dec_write(39, CHUNK), -EPROTO);
}

static void test_obj_write_rejects_no_data_and_data_over_the_limit(void **state)
{
	(void)state;
	assert_int_equal(dec_write(build_write(0, 0, 0, 0), 0), -EPROTO);
	assert_int_equal(dec_write(build_write(0, 65, 65, 0), LODE_DATA_MAX + 1ull), -EPROTO);
	assert_int_equal(dec_write(build_write(0, 1, 1, 0), UINT64_MAX), -EPROTO);
}

static void test_obj_write_rejects_an_unaligned_offset(void **state)
{
	(void)state;
	assert_int_equal(dec_write(build_write(1, 1, 1, 0), CHUNK), -EINVAL);
	assert_int_equal(dec_write(build_write(CHUNK + 4096, 1, 1, 0), 10), -EINVAL);
	assert_int_equal(dec_write(build_write(CHUNK / 2, 1, 1, 0), 10), -EINVAL);
}

static void test_obj_write_rejects_an_offset_that_overflows(void **state)
{
	uint64_t top = ((uint64_t)INT64_MAX / CHUNK) * CHUNK;

	(void)state;
	assert_int_equal(dec_write(build_write(top, 1, 1, 0), CHUNK), -EFBIG);
	assert_int_equal(dec_write(build_write(top - CHUNK, 1, 1, 0), CHUNK), 0);
	assert_int_equal(dec_write(build_write(UINT64_MAX - CHUNK + 1, 1, 1, 0), CHUNK), -EFBIG);
}

static void test_obj_write_rejects_a_bad_object_id_and_unknown_flags(void **state)
{
	struct lode_wire_obj_write_req *r = BODY;
	uint32_t len;

	(void)state;
	len = build_write(0, 1, 1, 0x4);
	assert_int_equal(dec_write(len, CHUNK), -EPROTO);
	len = build_write(0, 1, 1, 0x80000000u);
	assert_int_equal(dec_write(len, CHUNK), -EPROTO);
	len = build_write(0, 1, 1, 0);
	r->obj.ino = 0;
	assert_int_equal(dec_write(len, CHUNK), -EPROTO);
	len = build_write(0, 1, 1, 0);
	r->obj.reserved = 1;
	assert_int_equal(dec_write(len, CHUNK), -EPROTO);
	assert_int_equal(dec_write(build_write(0, 1, 1, 0) - 41, 0), -EPROTO); /* short body */
}

/* ---- forwarding chains ---- */

/* Appends a chain of n hops (targets 11, 12, ...) for receiver `self` at body offset off;
 * returns the body length. */
static uint32_t put_chain(uint32_t off, uint32_t self, unsigned n, uint32_t timeout_ms)
{
	struct lode_wire_chain c = {
	    .self_target = self, .count = (uint16_t)n, .timeout_ms = timeout_ms};

	memcpy(body_mem.b + off, &c, sizeof(c));
	for (unsigned i = 0; i < n; i++) {
		struct lode_wire_chain_hop h = {.target_id = 11 + i};

		h.addr_len =
		    (uint16_t)snprintf(h.addr, sizeof(h.addr), "tcp://127.0.0.1:%u", 40000 + i);
		memcpy(body_mem.b + off + lode_chain_size(i), &h, sizeof(h));
	}
	return off + (uint32_t)lode_chain_size(n);
}

/* The i-th hop of the chain written at body offset off. */
static struct lode_wire_chain_hop *hop_at(uint32_t off, unsigned i)
{
	return (struct lode_wire_chain_hop *)(void *)(body_mem.b + off + lode_chain_size(i));
}

static struct lode_wire_chain *chain_at(uint32_t off)
{
	return (struct lode_wire_chain *)(void *)(body_mem.b + off);
}

/* A chained one-chunk write: the chain starts at CW_CHAIN. */
#define CW_CHAIN (sizeof(struct lode_wire_obj_write_req) + 8)
static uint32_t build_chained_write(unsigned hops)
{
	build_write(0, 1, 1, LODE_OBJ_F_CHAIN);
	return put_chain(CW_CHAIN, 10, hops, 1000);
}

static void test_report_copy_needs_an_inode_a_target_and_a_known_kind(void **state)
{
	struct lode_wire_report_req r = {
	    .ino = 5, .generation = 1, .stripe = 2, .target_id = 3, .kind = LODE_REPORT_BAD_DATA};
	const struct lode_wire_report_req *out = SENT(struct lode_wire_report_req);
	uint32_t len = build(&r, sizeof(r), NULL, 0, NULL, 0);

	(void)state;
	assert_int_equal(lode_dec_report(BODY, len, 0, &out), 0);
	assert_int_equal(out->target_id, 3);
	out = SENT(struct lode_wire_report_req);
	assert_int_equal(lode_dec_report(BODY, len, 1, &out), -EPROTO); /* no data allowed */
	assert_int_equal(lode_dec_report(BODY, len - 1, 0, &out), -EPROTO);
	r.kind = 9;
	assert_int_equal(lode_dec_report(BODY, build(&r, sizeof(r), NULL, 0, NULL, 0), 0, &out),
			 -EINVAL);
	r.kind = LODE_REPORT_WRITE_FAILED;
	r.ino = 0;
	assert_int_equal(lode_dec_report(BODY, build(&r, sizeof(r), NULL, 0, NULL, 0), 0, &out),
			 -EPROTO);
	r.ino = 5;
	r.target_id = 0;
	assert_int_equal(lode_dec_report(BODY, build(&r, sizeof(r), NULL, 0, NULL, 0), 0, &out),
			 -EPROTO);
	r.target_id = 3;
	r.reserved = 1;
	assert_int_equal(lode_dec_report(BODY, build(&r, sizeof(r), NULL, 0, NULL, 0), 0, &out),
			 -EPROTO);
	assert_ptr_equal(out, SENT(struct lode_wire_report_req));
}

static void test_set_copy_needs_an_index_in_the_layout_and_both_targets(void **state)
{
	struct lode_wire_set_copy_req r = {
	    .ino = 5, .handle = 9, .index = 63, .old_target = 1, .new_target = 2};
	const struct lode_wire_set_copy_req *out = SENT(struct lode_wire_set_copy_req);

	(void)state;
	assert_int_equal(lode_dec_set_copy(BODY, build(&r, sizeof(r), NULL, 0, NULL, 0), 0, &out),
			 0);
	assert_int_equal(out->index, 63);
	out = SENT(struct lode_wire_set_copy_req);
	r.index = LODE_LAYOUT_TARGETS_MAX;
	assert_int_equal(lode_dec_set_copy(BODY, build(&r, sizeof(r), NULL, 0, NULL, 0), 0, &out),
			 -EINVAL);
	r.index = 0;
	r.new_target = 0;
	assert_int_equal(lode_dec_set_copy(BODY, build(&r, sizeof(r), NULL, 0, NULL, 0), 0, &out),
			 -EINVAL);
	r.new_target = 2;
	r.ino = 0;
	assert_int_equal(lode_dec_set_copy(BODY, build(&r, sizeof(r), NULL, 0, NULL, 0), 0, &out),
			 -EPROTO);
	assert_ptr_equal(out, SENT(struct lode_wire_set_copy_req));
}

static void test_obj_write_accepts_a_chain_of_zero_to_the_most_hops(void **state)
{
	const struct lode_wire_obj_write_req *req;
	const struct lode_wire_chain *c = NULL;
	const uint64_t *sums;

	(void)state;
	for (unsigned n = 0; n <= LODE_CHAIN_MAX; n++)
		assert_int_equal(dec_write(build_chained_write(n), CHUNK), 0);
	assert_int_equal(lode_dec_obj_write(BODY, build_chained_write(2), CHUNK, &req, &sums, &c),
			 0);
	assert_int_equal(c->count, 2);
	assert_int_equal(c->self_target, 10);
	assert_int_equal(lode_chain_hops(c)[1].target_id, 12);
	assert_string_equal(lode_chain_hops(c)[1].addr, "tcp://127.0.0.1:40001");
	/* the largest write with the longest chain fits in a body */
	build_write(0, 64, 64, LODE_OBJ_F_CHAIN);
	assert_int_equal(dec_write(put_chain(40 + 64 * 8, 10, LODE_CHAIN_MAX, 1000), LODE_DATA_MAX),
			 0);
}

static void test_obj_write_rejects_a_chain_of_the_wrong_shape(void **state)
{
	uint32_t len;

	(void)state;
	/* the flag without a chain, a chain without the flag, a chain cut short or too long */
	assert_int_equal(dec_write(build_write(0, 1, 1, LODE_OBJ_F_CHAIN), CHUNK), -EPROTO);
	len = build_chained_write(1);
	((struct lode_wire_obj_write_req *)BODY)->flags = 0;
	assert_int_equal(dec_write(len, CHUNK), -EPROTO);
	assert_int_equal(dec_write(build_chained_write(2) - 1, CHUNK), -EPROTO);
	assert_int_equal(dec_write(build_chained_write(2) - 136, CHUNK), -EPROTO);
	assert_int_equal(dec_write(build_chained_write(2) + 8, CHUNK), -EPROTO);
	assert_int_equal(dec_write((uint32_t)CW_CHAIN + 8, CHUNK), -EPROTO);
	/* a count over the limit is a bad value, whatever follows */
	build_chained_write(LODE_CHAIN_MAX);
	chain_at(CW_CHAIN)->count = LODE_CHAIN_MAX + 1;
	assert_int_equal(
	    dec_write((uint32_t)(CW_CHAIN + lode_chain_size(LODE_CHAIN_MAX + 1)), CHUNK), -EINVAL);
	build_chained_write(0);
	chain_at(CW_CHAIN)->count = 0xffff;
	assert_int_equal(dec_write((uint32_t)CW_CHAIN + 16, CHUNK), -EINVAL);
}

static void test_obj_write_rejects_non_zero_reserved_fields_of_a_chain(void **state)
{
	uint32_t len;

	(void)state;
	len = build_chained_write(2);
	chain_at(CW_CHAIN)->reserved0 = 1;
	assert_int_equal(dec_write(len, CHUNK), -EPROTO);
	len = build_chained_write(2);
	chain_at(CW_CHAIN)->reserved1 = 1;
	assert_int_equal(dec_write(len, CHUNK), -EPROTO);
	len = build_chained_write(2);
	hop_at(CW_CHAIN, 1)->reserved = 1;
	assert_int_equal(dec_write(len, CHUNK), -EPROTO);
	/* an address's padding: bytes after addr_len must be zero */
	len = build_chained_write(2);
	hop_at(CW_CHAIN, 0)->addr[LODE_ADDR_MAX] = 'x';
	assert_int_equal(dec_write(len, CHUNK), -EPROTO);
	len = build_chained_write(2);
	hop_at(CW_CHAIN, 0)->addr_len -= 1; /* the last character becomes padding */
	assert_int_equal(dec_write(len, CHUNK), -EPROTO);
}

static void test_obj_write_rejects_bad_hops_timeouts_and_loops(void **state)
{
	uint32_t len;

	(void)state;
	len = build_chained_write(2);
	hop_at(CW_CHAIN, 1)->target_id = 0;
	assert_int_equal(dec_write(len, CHUNK), -EINVAL);
	len = build_chained_write(2);
	hop_at(CW_CHAIN, 1)->addr_len = 0;
	memset(hop_at(CW_CHAIN, 1)->addr, 0, LODE_ADDR_MAX + 1);
	assert_int_equal(dec_write(len, CHUNK), -EINVAL);
	len = build_chained_write(2);
	hop_at(CW_CHAIN, 1)->addr_len = LODE_ADDR_MAX + 1;
	assert_int_equal(dec_write(len, CHUNK), -EINVAL);
	len = build_chained_write(2);
	hop_at(CW_CHAIN, 1)->addr[3] = '\0'; /* a NUL inside the address */
	assert_int_equal(dec_write(len, CHUNK), -EINVAL);
	len = build_chained_write(2);
	hop_at(CW_CHAIN, 1)->addr[3] = ' ';
	assert_int_equal(dec_write(len, CHUNK), -EINVAL);
	len = build_chained_write(2);
	chain_at(CW_CHAIN)->timeout_ms = 0;
	assert_int_equal(dec_write(len, CHUNK), -EINVAL);
	len = build_chained_write(2);
	chain_at(CW_CHAIN)->timeout_ms = LODE_CHAIN_TIMEOUT_MAX + 1;
	assert_int_equal(dec_write(len, CHUNK), -EINVAL);
	chain_at(CW_CHAIN)->timeout_ms = LODE_CHAIN_TIMEOUT_MAX;
	assert_int_equal(dec_write(len, CHUNK), 0);
	/* a target twice, or the receiver again: the data would loop */
	len = build_chained_write(3);
	hop_at(CW_CHAIN, 2)->target_id = 11;
	assert_int_equal(dec_write(len, CHUNK), -ELOOP);
	len = build_chained_write(3);
	hop_at(CW_CHAIN, 1)->target_id = 10;
	assert_int_equal(dec_write(len, CHUNK), -ELOOP);
	/* an unchecked receiver (self 0) with distinct hops is fine */
	len = build_chained_write(3);
	chain_at(CW_CHAIN)->self_target = 0;
	assert_int_equal(dec_write(len, CHUNK), 0);
}

static int dec_fsync(uint32_t len, uint64_t data_len)
{
	const struct lode_wire_objid *id = SENT(struct lode_wire_objid);
	const struct lode_wire_chain *c = SENT(struct lode_wire_chain);
	int rc = lode_dec_obj_fsync(BODY, len, data_len, &id, &c);

	if (rc) {
		assert_ptr_equal(id, SENTINEL);
		assert_ptr_equal(c, SENTINEL);
	} else {
		assert_ptr_equal(id, BODY);
		if (len > sizeof(*id))
			assert_ptr_equal(c, (const char *)BODY + sizeof(*id));
		else
			assert_null(c);
	}
	return rc;
}

static void test_obj_fsync_accepts_a_plain_or_chained_body_and_rejects_bad_chains(void **state)
{
	const uint32_t at = sizeof(struct lode_wire_objid);
	uint32_t len;

	(void)state;
	len = build(&good_obj, sizeof(good_obj), NULL, 0, NULL, 0);
	assert_int_equal(dec_fsync(len, 0), 0);
	assert_int_equal(dec_fsync(len, 1), -EPROTO);
	assert_int_equal(dec_fsync(put_chain(at, 10, 0, 5), 0), 0);
	assert_int_equal(dec_fsync(put_chain(at, 10, LODE_CHAIN_MAX, 5), 0), 0);
	/* bytes after the id that are no chain */
	assert_int_equal(dec_fsync(at + 8, 0), -EPROTO);
	assert_int_equal(dec_fsync(put_chain(at, 10, 2, 5) - 3, 0), -EPROTO);
	len = put_chain(at, 10, 2, 5);
	hop_at(at, 0)->target_id = 12;
	assert_int_equal(dec_fsync(len, 0), -ELOOP);
	len = put_chain(at, 10, 2, 5);
	chain_at(at)->timeout_ms = 0;
	assert_int_equal(dec_fsync(len, 0), -EINVAL);
	len = put_chain(at, 10, 1, 5);
	((struct lode_wire_objid *)BODY)->ino = 0;
	assert_int_equal(dec_fsync(len, 0), -EPROTO);
	assert_int_equal(dec_fsync(at - 1, 0), -EPROTO);
}

static int dec_chain_rep(const struct lode_wire_obj_chain_rep *r, uint32_t len, unsigned count)
{
	const struct lode_wire_obj_chain_rep *out = SENT(struct lode_wire_obj_chain_rep);
	int rc;

	memset(body_mem.b, 0, sizeof(body_mem.b));
	memcpy(body_mem.b, r, sizeof(*r));
	rc = lode_dec_obj_chain_rep(BODY, len, count, &out);
	assert_ptr_equal(out, rc ? SENTINEL : BODY);
	return rc;
}

static void test_obj_chain_rep_accepts_one_status_per_copy_and_nothing_else(void **state)
{
	struct lode_wire_obj_chain_rep r = {.count = 3, .status = {0, ETIMEDOUT, ECANCELED}};
	const uint32_t len = sizeof(r);

	(void)state;
	assert_int_equal(dec_chain_rep(&r, len, 2), 0);
	assert_int_equal(dec_chain_rep(&r, len, 1), -EPROTO); /* answers for 3, asked 2 */
	assert_int_equal(dec_chain_rep(&r, len - 4, 2), -EPROTO);
	assert_int_equal(dec_chain_rep(&r, 0, 2), -EPROTO);
	assert_int_equal(dec_chain_rep(&r, len, LODE_CHAIN_MAX + 1), -EPROTO);
	r.status[3] = EIO; /* a status past count */
	assert_int_equal(dec_chain_rep(&r, len, 2), -EPROTO);
	r.status[3] = 0;
	r.status[1] = -5;
	assert_int_equal(dec_chain_rep(&r, len, 2), -EPROTO);
	r.status[1] = 0;
	r.reserved1 = 1;
	assert_int_equal(dec_chain_rep(&r, len, 2), -EPROTO);
	r.reserved1 = 0;
	/* the receiver always tries its own copy: it cannot have been "never reached" */
	r.status[0] = ECANCELED;
	assert_int_equal(dec_chain_rep(&r, len, 2), -EPROTO);
	r.status[0] = EIO;
	assert_int_equal(dec_chain_rep(&r, len, 2), 0);
}

static int dec_read(const struct lode_wire_obj_read_req *r, int32_t delta, uint64_t data_len)
{
	const struct lode_wire_obj_read_req *req = SENT(struct lode_wire_obj_read_req);
	uint32_t len = build(r, sizeof(*r), NULL, 0, NULL, 0);
	int rc = lode_dec_obj_read(BODY, (uint32_t)((int32_t)len + delta), data_len, &req);

	assert_ptr_equal(req, rc ? SENTINEL : BODY);
	return rc;
}

static void test_obj_read_checks_offset_length_and_shape(void **state)
{
	struct lode_wire_obj_read_req r = {.obj = good_obj, .offset = CHUNK, .length = 100};

	(void)state;
	assert_int_equal(dec_read(&r, 0, 0), 0);
	assert_int_equal(dec_read(&r, -1, 0), -EPROTO);
	assert_int_equal(dec_read(&r, 1, 0), -EPROTO);
	assert_int_equal(dec_read(&r, 0, 1), -EPROTO);
	r.length = LODE_DATA_MAX;
	assert_int_equal(dec_read(&r, 0, 0), 0);
	r.length = LODE_DATA_MAX + 1;
	assert_int_equal(dec_read(&r, 0, 0), -EINVAL);
	r.length = 0;
	assert_int_equal(dec_read(&r, 0, 0), -EINVAL);
	r.length = 1;
	r.offset = CHUNK + 512;
	assert_int_equal(dec_read(&r, 0, 0), -EINVAL);
	r.offset = ((uint64_t)INT64_MAX / CHUNK) * CHUNK;
	r.length = CHUNK;
	assert_int_equal(dec_read(&r, 0, 0), -EFBIG);
	r.offset = 0;
	r.reserved = 1;
	assert_int_equal(dec_read(&r, 0, 0), -EPROTO);
	r.reserved = 0;
	r.obj.ino = 0;
	assert_int_equal(dec_read(&r, 0, 0), -EPROTO);
	r.obj = good_obj;
	r.obj.reserved = 9;
	assert_int_equal(dec_read(&r, 0, 0), -EPROTO);
}

static void test_obj_truncate_objid_and_list_check_their_fields(void **state)
{
	struct lode_wire_obj_truncate_req t = {.obj = good_obj, .size = 5};
	const struct lode_wire_obj_truncate_req *treq = SENT(struct lode_wire_obj_truncate_req);
	const struct lode_wire_objid *o = SENT(struct lode_wire_objid);
	struct lode_wire_obj_list_req l = {.max = 1};
	const struct lode_wire_obj_list_req *lreq = SENT(struct lode_wire_obj_list_req);
	struct lode_wire_objid id = good_obj;
	uint32_t len;

	(void)state;
	len = build(&t, sizeof(t), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_obj_truncate(BODY, len - 1, 0, &treq), -EPROTO);
	assert_int_equal(lode_dec_obj_truncate(BODY, len + 1, 0, &treq), -EPROTO);
	assert_int_equal(lode_dec_obj_truncate(BODY, len, 1, &treq), -EPROTO);
	t.size = (uint64_t)INT64_MAX + 1;
	len = build(&t, sizeof(t), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_obj_truncate(BODY, len, 0, &treq), -EFBIG);
	t.size = 0;
	t.obj.ino = 0;
	len = build(&t, sizeof(t), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_obj_truncate(BODY, len, 0, &treq), -EPROTO);
	assert_ptr_equal(treq, SENTINEL);
	t.obj = good_obj;
	len = build(&t, sizeof(t), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_obj_truncate(BODY, len, 0, &treq), 0);
	assert_int_equal(treq->obj.ino, good_obj.ino);

	len = build(&id, sizeof(id), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_objid(BODY, len - 1, 0, &o), -EPROTO);
	assert_int_equal(lode_dec_objid(BODY, len + 1, 0, &o), -EPROTO);
	assert_int_equal(lode_dec_objid(BODY, len, 1, &o), -EPROTO);
	id.reserved = 1;
	len = build(&id, sizeof(id), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_objid(BODY, len, 0, &o), -EPROTO);
	id.reserved = 0;
	id.ino = 0;
	len = build(&id, sizeof(id), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_objid(BODY, len, 0, &o), -EPROTO);
	assert_ptr_equal(o, SENTINEL);
	id.ino = 1;
	len = build(&id, sizeof(id), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_objid(BODY, len, 0, &o), 0);

	len = build(&l, sizeof(l), NULL, 0, NULL, 0); /* after = {0}: from the start */
	assert_int_equal(lode_dec_obj_list(BODY, len - 1, 0, &lreq), -EPROTO);
	assert_int_equal(lode_dec_obj_list(BODY, len + 1, 0, &lreq), -EPROTO);
	assert_int_equal(lode_dec_obj_list(BODY, len, 1, &lreq), -EPROTO);
	l.max = 0;
	len = build(&l, sizeof(l), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_obj_list(BODY, len, 0, &lreq), -EINVAL);
	l.max = LODE_OBJLIST_MAX + 1;
	len = build(&l, sizeof(l), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_obj_list(BODY, len, 0, &lreq), -EINVAL);
	l.max = LODE_OBJLIST_MAX;
	l.reserved = 1;
	len = build(&l, sizeof(l), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_obj_list(BODY, len, 0, &lreq), -EPROTO);
	l.reserved = 0;
	l.after.reserved = 1;
	len = build(&l, sizeof(l), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_obj_list(BODY, len, 0, &lreq), -EPROTO);
	assert_ptr_equal(lreq, SENTINEL);
	l.after.reserved = 0;
	len = build(&l, sizeof(l), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_obj_list(BODY, len, 0, &lreq), 0);
}

/* ---- reply decoders and record walkers ---- */

static union {
	uint64_t align;
	unsigned char b[16384];
} page_mem;

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Appends one dirent record (struct + name + zero padding) at *len. */
static void put_dirent(size_t *len, uint64_t ino, const char *name, size_t nlen)
{
	struct lode_wire_dirent d = {
	    .ino = ino, .cookie = ino * 10, .mode = 0100000, .name_len = (uint16_t)nlen};

	memcpy(page_mem.b + *len, &d, sizeof(d));
	memcpy(page_mem.b + *len + sizeof(d), name, nlen);
	memset(page_mem.b + *len + sizeof(d) + nlen, 0, pad8(sizeof(d) + nlen) - sizeof(d) - nlen);
	*len += pad8(sizeof(d) + nlen);
}

static size_t three_dirents(void)
{
	size_t len = 0;

	memset(page_mem.b, 0xee, sizeof(page_mem.b));
	put_dirent(&len, 1, "a", 1);	     /* 24 + 1 -> 32 */
	put_dirent(&len, 2, "bbbbbbbb", 8);  /* 24 + 8 -> 32, no padding */
	put_dirent(&len, 3, long_name, 255); /* 24 + 255 -> 280 */
	return len;
}

static void test_readdir_next_walks_well_formed_records(void **state)
{
	const struct lode_wire_dirent *e;
	struct lode_name n;
	size_t len = three_dirents();
	uint64_t pos = 0;

	(void)state;
	assert_int_equal(len, 32 + 32 + 280);
	assert_int_equal(lode_readdir_next(page_mem.b, len, &pos, &e, &n), 1);
	assert_int_equal(e->ino, 1);
	assert_int_equal(n.len, 1);
	assert_memory_equal(n.ptr, "a", 1);
	assert_int_equal(pos, 32);
	assert_int_equal(lode_readdir_next(page_mem.b, len, &pos, &e, &n), 1);
	assert_int_equal(e->ino, 2);
	assert_int_equal(e->cookie, 20);
	assert_int_equal(n.len, 8);
	assert_int_equal(lode_readdir_next(page_mem.b, len, &pos, &e, &n), 1);
	assert_int_equal(e->ino, 3);
	assert_int_equal(n.len, 255);
	assert_int_equal(lode_readdir_next(page_mem.b, len, &pos, &e, &n), 0);
	assert_int_equal(lode_readdir_next(page_mem.b, len, &pos, &e, &n), 0);
	pos = 0;
	assert_int_equal(lode_readdir_next(NULL, 0, &pos, &e, &n), 0);
}

static void test_readdir_next_rejects_a_record_cut_short(void **state)
{
	const struct lode_wire_dirent *e = SENT(struct lode_wire_dirent);
	struct lode_name n = NAME_SENTINEL;
	size_t len = three_dirents();
	uint64_t pos;

	(void)state;
	/* cut inside the fixed struct of the first and of the last record */
	for (size_t cut = 1; cut < 24; cut++) {
		pos = 0;
		assert_int_equal(lode_readdir_next(page_mem.b, cut, &pos, &e, &n), -EPROTO);
		assert_int_equal(pos, 0);
		pos = 64;
		assert_int_equal(lode_readdir_next(page_mem.b, 64 + cut, &pos, &e, &n), -EPROTO);
		assert_int_equal(pos, 64);
	}
	/* cut inside the name, and inside the padding */
	for (size_t cut = 64 + 24; cut < len; cut++) {
		pos = 64;
		assert_int_equal(lode_readdir_next(page_mem.b, cut, &pos, &e, &n), -EPROTO);
	}
	assert_ptr_equal(e, SENTINEL);
	assert_true(name_untouched(&n));
	/* a position past the end */
	pos = len + 8;
	assert_int_equal(lode_readdir_next(page_mem.b, len, &pos, &e, &n), -EPROTO);
}

static void test_readdir_next_rejects_a_name_length_past_the_end(void **state)
{
	const struct lode_wire_dirent *e = SENT(struct lode_wire_dirent);
	struct lode_name n = NAME_SENTINEL;
	struct lode_wire_dirent *d = (struct lode_wire_dirent *)(void *)page_mem.b;
	size_t len = three_dirents();
	uint64_t pos = 0;

	(void)state;
	d->name_len = 500;
	assert_int_equal(lode_readdir_next(page_mem.b, 32, &pos, &e, &n), -EPROTO);
	d->name_len = UINT16_MAX;
	assert_int_equal(lode_readdir_next(page_mem.b, len, &pos, &e, &n), -EPROTO);
	assert_int_equal(pos, 0);
	assert_ptr_equal(e, SENTINEL);
	assert_true(name_untouched(&n));
}

static void test_readdir_next_rejects_a_record_with_a_bad_name(void **state)
{
	const struct lode_wire_dirent *e;
	struct lode_name n;
	size_t len = 0;
	uint64_t pos = 0;

	(void)state;
	put_dirent(&len, 1, "a/b", 3);
	assert_int_equal(lode_readdir_next(page_mem.b, len, &pos, &e, &n), -EPROTO);
	len = 0;
	pos = 0;
	put_dirent(&len, 1, "", 0);
	assert_int_equal(lode_readdir_next(page_mem.b, len, &pos, &e, &n), -EPROTO);
	len = 0;
	pos = 0;
	put_dirent(&len, 1, long_name, 256);
	assert_int_equal(lode_readdir_next(page_mem.b, len, &pos, &e, &n), -EPROTO);
}

static void test_readdir_rep_counts_the_records_it_announces(void **state)
{
	struct lode_wire_readdir_rep r = {.count = 3, .eof = 1};
	const struct lode_wire_readdir_rep *rep = SENT(struct lode_wire_readdir_rep);
	size_t len = three_dirents();

	(void)state;
	build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_readdir_rep(BODY, sizeof(r), page_mem.b, len, &rep), 0);
	assert_ptr_equal(rep, BODY);
	rep = SENT(struct lode_wire_readdir_rep);
	assert_int_equal(lode_dec_readdir_rep(BODY, sizeof(r) + 1, page_mem.b, len, &rep), -EPROTO);
	assert_int_equal(lode_dec_readdir_rep(BODY, sizeof(r) - 1, page_mem.b, len, &rep), -EPROTO);
	assert_int_equal(lode_dec_readdir_rep(BODY, sizeof(r), page_mem.b, len - 1, &rep), -EPROTO);
	assert_int_equal(lode_dec_readdir_rep(BODY, sizeof(r), page_mem.b, 64, &rep), -EPROTO);
	r.count = 4;
	build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_readdir_rep(BODY, sizeof(r), page_mem.b, len, &rep), -EPROTO);
	r.count = 3;
	r.eof = 2;
	build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_readdir_rep(BODY, sizeof(r), page_mem.b, len, &rep), -EPROTO);
	r.eof = 0;
	r.count = LODE_READDIR_MAX + 1;
	build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_readdir_rep(BODY, sizeof(r), page_mem.b, len, &rep), -EPROTO);
	assert_ptr_equal(rep, SENTINEL);
	r.count = 0;
	build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_readdir_rep(BODY, sizeof(r), NULL, 0, &rep), 0);
}

static void put_direntplus(size_t *len, uint64_t ino, const char *name, size_t nlen)
{
	struct lode_wire_direntplus d = {
	    .attr = {.ino = ino, .size = ino * 100, .mode = 0100644, .nlink = 1},
	    .d = {.ino = ino, .cookie = ino * 10, .mode = 0100000, .name_len = (uint16_t)nlen}};

	memcpy(page_mem.b + *len, &d, sizeof(d));
	memcpy(page_mem.b + *len + sizeof(d), name, nlen);
	memset(page_mem.b + *len + sizeof(d) + nlen, 0, pad8(sizeof(d) + nlen) - sizeof(d) - nlen);
	*len += pad8(sizeof(d) + nlen);
}

static void test_readdirplus_records_carry_matching_attributes(void **state)
{
	struct lode_wire_readdir_rep r = {.count = 2, .eof = 1};
	const struct lode_wire_readdir_rep *rep = SENT(struct lode_wire_readdir_rep);
	const struct lode_wire_direntplus *e;
	struct lode_wire_direntplus *first = (void *)page_mem.b;
	struct lode_name n;
	size_t len = 0;
	uint64_t pos = 0;

	(void)state;
	memset(page_mem.b, 0xee, sizeof(page_mem.b));
	put_direntplus(&len, 1, "a", 1);	 /* 104 + 1 -> 112 */
	put_direntplus(&len, 2, long_name, 255); /* 104 + 255 -> 360 */
	assert_int_equal(len, 112 + 360);
	build(&r, sizeof(r), NULL, 0, NULL, 0);
	assert_int_equal(lode_dec_readdirplus_rep(BODY, sizeof(r), page_mem.b, len, &rep), 0);
	assert_int_equal(lode_readdirplus_next(page_mem.b, len, &pos, &e, &n), 1);
	assert_int_equal(e->attr.size, 100);
	assert_int_equal(e->d.cookie, 10);
	assert_memory_equal(n.ptr, "a", 1);
	assert_int_equal(lode_readdirplus_next(page_mem.b, len, &pos, &e, &n), 1);
	assert_int_equal(n.len, 255);
	assert_int_equal(lode_readdirplus_next(page_mem.b, len, &pos, &e, &n), 0);
	/* a plain page is not a plus page: the sizes do not line up */
	assert_int_equal(lode_dec_readdir_rep(BODY, sizeof(r), page_mem.b, len, &rep), -EPROTO);
	/* cut anywhere inside a record */
	for (size_t cut = 1; cut < 112; cut++) {
		pos = 0;
		assert_int_equal(lode_readdirplus_next(page_mem.b, cut, &pos, &e, &n), -EPROTO);
	}
	/* attributes of another inode, or of another file type */
	first->attr.ino = 7;
	pos = 0;
	assert_int_equal(lode_readdirplus_next(page_mem.b, len, &pos, &e, &n), -EPROTO);
	first->attr.ino = 1;
	first->attr.mode = 040755;
	pos = 0;
	assert_int_equal(lode_readdirplus_next(page_mem.b, len, &pos, &e, &n), -EPROTO);
	rep = SENT(struct lode_wire_readdir_rep);
	assert_int_equal(lode_dec_readdirplus_rep(BODY, sizeof(r), page_mem.b, len, &rep), -EPROTO);
	assert_ptr_equal(rep, SENTINEL);
}

static size_t two_targets(void)
{
	struct lode_wire_target t = {.target_id = 1, .state = LODE_TARGET_UP, .addr_len = 19};
	size_t len = 0;

	memset(page_mem.b, 0xee, sizeof(page_mem.b));
	memcpy(page_mem.b, &t, sizeof(t));
	memcpy(page_mem.b + sizeof(t), "tcp://10.0.0.1:7000", 19);
	memset(page_mem.b + sizeof(t) + 19, 0, 5);
	len = 48 + 24;
	t.target_id = 2;
	t.addr_len = 16;
	memcpy(page_mem.b + len, &t, sizeof(t));
	memcpy(page_mem.b + len + sizeof(t), "tcp://host:7000:", 16);
	return len + 48 + 16;
}

static void test_target_next_walks_well_formed_records(void **state)
{
	const struct lode_wire_target *t;
	struct lode_name a;
	size_t len = two_targets();
	uint64_t pos = 0;

	(void)state;
	assert_int_equal(lode_target_next(page_mem.b, len, &pos, &t, &a), 1);
	assert_int_equal(t->target_id, 1);
	assert_int_equal(a.len, 19);
	assert_memory_equal(a.ptr, "tcp://10.0.0.1:7000", 19);
	assert_int_equal(pos, 72);
	assert_int_equal(lode_target_next(page_mem.b, len, &pos, &t, &a), 1);
	assert_int_equal(t->target_id, 2);
	assert_int_equal(a.len, 16);
	assert_int_equal(lode_target_next(page_mem.b, len, &pos, &t, &a), 0);
}

static void test_target_next_rejects_truncated_and_malformed_records(void **state)
{
	const struct lode_wire_target *t = SENT(struct lode_wire_target);
	struct lode_name a = NAME_SENTINEL;
	struct lode_wire_target *first = (struct lode_wire_target *)(void *)page_mem.b;
	size_t len = two_targets();
	uint64_t pos;

	(void)state;
	for (size_t cut = 1; cut < 72; cut++) {
		pos = 0;
		assert_int_equal(lode_target_next(page_mem.b, cut, &pos, &t, &a), -EPROTO);
		assert_int_equal(pos, 0);
	}
	for (size_t cut = 73; cut < len; cut++) {
		pos = 72;
		assert_int_equal(lode_target_next(page_mem.b, cut, &pos, &t, &a), -EPROTO);
	}
	first->addr_len = 4000;
	pos = 0;
	assert_int_equal(lode_target_next(page_mem.b, len, &pos, &t, &a), -EPROTO);
	first->addr_len = 0;
	assert_int_equal(lode_target_next(page_mem.b, len, &pos, &t, &a), -EPROTO);
	first->addr_len = 19;
	page_mem.b[48 + 3] = '\0';
	assert_int_equal(lode_target_next(page_mem.b, len, &pos, &t, &a), -EPROTO);
	assert_ptr_equal(t, SENTINEL);
	assert_true(name_untouched(&a));
}

static uint32_t build_read_rep(uint32_t nchunks, uint32_t nsums)
{
	struct lode_wire_obj_read_rep r = {.object_size = 1 << 20, .nchunks = nchunks};

	memset(body_mem.b, 0, sizeof(body_mem.b));
	memcpy(body_mem.b, &r, sizeof(r));
	return (uint32_t)(sizeof(r) + 8ull * nsums);
}

static void test_obj_read_rep_accepts_data_up_to_the_length_requested(void **state)
{
	const struct lode_wire_obj_read_rep *rep;
	const uint64_t *sums;

	(void)state;
	assert_int_equal(lode_dec_obj_read_rep(BODY, build_read_rep(0, 0), 0, CHUNK, &rep, &sums),
			 0);
	assert_int_equal(lode_dec_obj_read_rep(BODY, build_read_rep(1, 1), 100, CHUNK, &rep, &sums),
			 0);
	assert_ptr_equal(rep, BODY);
	assert_ptr_equal(sums, (const char *)BODY + 16);
	assert_int_equal(
	    lode_dec_obj_read_rep(BODY, build_read_rep(2, 2), 2 * CHUNK, 2 * CHUNK, &rep, &sums),
	    0);
}

static void test_obj_read_rep_rejects_data_longer_than_requested(void **state)
{
	const struct lode_wire_obj_read_rep *rep = SENT(struct lode_wire_obj_read_rep);
	const uint64_t *sums = SENT(uint64_t);

	(void)state;
	assert_int_equal(lode_dec_obj_read_rep(BODY, build_read_rep(1, 1), 101, 100, &rep, &sums),
			 -EPROTO);
	assert_int_equal(
	    lode_dec_obj_read_rep(BODY, build_read_rep(2, 2), CHUNK + 1, CHUNK, &rep, &sums),
	    -EPROTO);
	assert_int_equal(lode_dec_obj_read_rep(BODY, build_read_rep(1, 1), 1, 0, &rep, &sums),
			 -EPROTO);
	assert_ptr_equal(rep, SENTINEL);
	assert_ptr_equal(sums, SENTINEL);
}

static void test_obj_read_rep_rejects_checksums_not_matching_the_data(void **state)
{
	const struct lode_wire_obj_read_rep *rep = SENT(struct lode_wire_obj_read_rep);
	const uint64_t *sums = SENT(uint64_t);

	(void)state;
	assert_int_equal(
	    lode_dec_obj_read_rep(BODY, build_read_rep(2, 2), CHUNK, CHUNK, &rep, &sums), -EPROTO);
	assert_int_equal(
	    lode_dec_obj_read_rep(BODY, build_read_rep(1, 2), CHUNK, CHUNK, &rep, &sums), -EPROTO);
	assert_int_equal(
	    lode_dec_obj_read_rep(BODY, build_read_rep(1, 0), CHUNK, CHUNK, &rep, &sums), -EPROTO);
	assert_int_equal(lode_dec_obj_read_rep(BODY, 15, 0, CHUNK, &rep, &sums), -EPROTO);
	assert_ptr_equal(rep, SENTINEL);
	assert_ptr_equal(sums, SENTINEL);
}

/* ---- checksums and encoding ---- */

static void test_chunk_sum_counts_bytes_past_the_end_as_zero(void **state)
{
	unsigned char *padded = calloc(1, CHUNK);
	unsigned char small[100];
	uint64_t before;

	(void)state;
	assert_non_null(padded);
	for (size_t i = 0; i < sizeof(small); i++)
		small[i] = (unsigned char)(i * 7 + 1);
	memcpy(padded, small, sizeof(small));
	assert_true(lode_chunk_sum(small, sizeof(small)) == lode_chunk_sum(padded, CHUNK));
	assert_true(lode_chunk_sum(small, sizeof(small)) == XXH3_64bits(padded, CHUNK));
	/* trailing zeros inside the buffer change nothing either */
	assert_true(lode_chunk_sum(padded, 4000) == lode_chunk_sum(small, sizeof(small)));
	/* one byte less is a different chunk (small[99] is not zero) */
	assert_int_not_equal(small[99], 0);
	assert_true(lode_chunk_sum(small, 99) != lode_chunk_sum(small, 100));
	/* one flipped bit changes the sum: compared with the same bytes before the flip */
	before = lode_chunk_sum(small, sizeof(small));
	small[0] ^= 1;
	assert_true(lode_chunk_sum(small, sizeof(small)) != before);
	memset(padded, 0, CHUNK);
	assert_true(lode_chunk_sum(NULL, 0) == lode_chunk_sum(padded, CHUNK));
	free(padded);
}

static void test_chunk_sum_of_a_longer_buffer_covers_one_chunk(void **state)
{
	unsigned char *buf = malloc(2 * CHUNK);

	(void)state;
	assert_non_null(buf);
	for (size_t i = 0; i < 2 * CHUNK; i++)
		buf[i] = (unsigned char)(i ^ (i >> 8));
	assert_true(lode_chunk_sum(buf, 2 * CHUNK) == XXH3_64bits(buf, CHUNK));
	assert_true(lode_chunk_sum(buf, CHUNK) == XXH3_64bits(buf, CHUNK));
	free(buf);
}

/* The AVX2 build of xxh3 (chosen at run time) must give libxxhash's sums bit for bit, or
 * every object stored by one CPU would read back as corrupt on another: random chunks, at
 * every alignment of the first 64 bytes. */
static void test_chunk_sum_avx2_equals_libxxhash(void **state)
{
	unsigned char *buf = malloc(CHUNK + 64);
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	assert_non_null(buf);
#if LODE_HAVE_AVX2_SUM
	if (!__builtin_cpu_supports("avx2"))
		print_message("no AVX2 on this CPU: lode_chunk_sum uses libxxhash alone\n");
#else
	print_message("built without the AVX2 sum: lode_chunk_sum uses libxxhash alone\n");
#endif
	for (unsigned round = 0; round < 64; round++) {
		for (size_t i = 0; i < CHUNK + 64; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[i] = (unsigned char)x;
		}
		const unsigned char *p = buf + round;

		assert_true(lode_chunk_sum(p, CHUNK) == XXH3_64bits(p, CHUNK));
#if LODE_HAVE_AVX2_SUM
		if (__builtin_cpu_supports("avx2"))
			assert_true(lode_chunk_sum_avx2(p) == XXH3_64bits(p, CHUNK));
#endif
	}
	free(buf);
}

static void test_buf_put_fails_sticky_once_full(void **state)
{
	char mem[8];
	struct lode_buf b;

	(void)state;
	lode_buf_init(&b, mem, sizeof(mem));
	lode_buf_put(&b, "abcd", 4);
	assert_int_equal(b.err, 0);
	assert_int_equal(b.len, 4);
	lode_buf_put(&b, "efghi", 5);
	assert_int_equal(b.err, -ENOSPC);
	assert_int_equal(b.len, 4);
	lode_buf_put(&b, "e", 1); /* would fit, but the buffer already failed */
	assert_int_equal(b.err, -ENOSPC);
	assert_int_equal(b.len, 4);
	lode_buf_init(&b, mem, sizeof(mem));
	lode_buf_put(&b, "12345678", 8);
	assert_int_equal(b.err, 0);
	assert_memory_equal(mem, "12345678", 8);
	lode_buf_put(&b, NULL, 0);
	assert_int_equal(b.err, 0);
}

/* ---- random bodies ---- */

static uint64_t rng_state = 0x1de5eed5c0dec0deull;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, so a failure reproduces */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void expect_errno_or_zero(int rc, const char *what, unsigned iter)
{
	if (rc != 0 && !(rc < 0 && rc >= -4095))
		fail_msg("%s returned %d on iteration %u", what, rc, iter);
}

static void expect_name_inside(const struct lode_name *n, const void *body, uint32_t len)
{
	const char *b = body;

	assert_true(n->ptr >= b && n->ptr + n->len <= b + len);
}

/* Seeds: valid bodies of each shape, mutated a little; otherwise pure noise. */
static uint32_t random_body(unsigned char *out, size_t cap)
{
	uint32_t len;

	switch (rnd() % 5) {
	case 4: { /* a chained write (one chunk) or fsync, mutated */
		struct lode_wire_obj_write_req w = {
		    .obj = {.ino = 1 + rnd() % 9}, .flags = LODE_OBJ_F_CHAIN, .nchunks = 1};
		struct lode_wire_chain c = {
		    .self_target = 1, .count = (uint16_t)(rnd() % 4), .timeout_ms = 100};
		uint32_t at = rnd() % 2 ? sizeof(w) + 8 : sizeof(w.obj);
		int flips = (int)(rnd() % 4);

		len = at + (uint32_t)lode_chain_size(c.count);
		if (len > cap)
			return 0;
		memset(out, 0, len);
		memcpy(out, &w, at == sizeof(w.obj) ? sizeof(w.obj) : sizeof(w));
		memcpy(out + at, &c, sizeof(c));
		for (unsigned i = 0; i < c.count; i++) {
			struct lode_wire_chain_hop h = {.target_id = 2 + i, .addr_len = 9};

			memcpy(h.addr, "tcp://h:1", 9);
			memcpy(out + at + lode_chain_size(i), &h, sizeof(h));
		}
		for (int i = 0; i < flips; i++)
			out[rnd() % len] = (unsigned char)rnd();
		return len;
	}
	case 0: { /* noise */
		len = (uint32_t)(rnd() % 400);
		for (uint32_t i = 0; i < len; i++)
			out[i] = (unsigned char)rnd();
		return len;
	}
	case 1: { /* a struct-sized prefix with small name lengths sprinkled in */
		len = (uint32_t)(rnd() % 340);
		memset(out, 0, len);
		for (uint32_t i = 0; i < len; i++)
			if (rnd() % 8 == 0)
				out[i] = (unsigned char)(rnd() % 12);
		for (uint32_t i = 0; i < len; i += 1 + (uint32_t)(rnd() % 40))
			out[i] = (unsigned char)rnd();
		return len;
	}
	default: { /* a real request from the unit tests above, mutated */
		static const uint32_t fixed[] = {16, 24, 8,  64, 304, 24, 40, 24, 32, 32,
						 24, 32, 32, 40, 32,  8,  40, 40, 32, 24};
		uint32_t f = fixed[rnd() % (sizeof(fixed) / sizeof(fixed[0]))];
		uint32_t nlen = (uint32_t)(rnd() % 12);
		int flips = (int)(rnd() % 4);

		len = f + nlen;
		memset(out, 0, len);
		for (uint32_t i = f; i < len; i++)
			out[i] = (unsigned char)('a' + rnd() % 26);
		/* the name length fields of the various structs */
		for (uint32_t off = 16; off + 2 <= f && off <= 40; off += 2)
			if (rnd() % 3 == 0)
				memcpy(out + off, &nlen, 2);
		out[0] = (unsigned char)(1 + rnd() % 200); /* a non-zero ino */
		for (int i = 0; i < flips && len; i++)
			out[rnd() % len] = (unsigned char)rnd();
		if (rnd() % 4 == 0)
			len = (uint32_t)((int)len + (int)(rnd() % 17) - 8);
		if (len > cap)
			len = 0;
		return len;
	}
	}
}

static uint64_t random_data_len(void)
{
	switch (rnd() % 6) {
	case 0:
	case 1:
		return 0;
	case 2:
		return rnd() % (2 * CHUNK);
	case 3:
		return (rnd() % 70) * CHUNK;
	case 4:
		return rnd() % (LODE_DATA_MAX + 2ull);
	default:
		return rnd();
	}
}

static void test_decoders_never_crash_on_random_bodies(void **state)
{
	static const uint8_t xattr_ops[] = {LODE_OP_SETXATTR,
					    LODE_OP_GETXATTR,
					    LODE_OP_LISTXATTR,
					    LODE_OP_REMOVEXATTR,
					    LODE_OP_LOOKUP,
					    0,
					    255};
	static const uint8_t orphan_ops[] = {LODE_OP_ORPHAN_LIST, LODE_OP_ORPHAN_DONE, 0, 99};
	unsigned char scratch[1024] __attribute__((aligned(8)));
	unsigned accepted = 0;

	(void)state;
	for (unsigned it = 0; it < 100000; it++) {
		uint32_t len = random_body(scratch, sizeof(scratch));
		/* exactly len bytes (8-byte aligned, as a receiver guarantees) so that ASan
		 * sees any read past what was received */
		unsigned char *body = len ? malloc(len) : NULL;
		uint64_t dl = random_data_len();
		const struct lode_wire_chain *ch;
		struct lode_name n1, n2;
		const void *p, *q;
		uint32_t nobj;
		uint64_t pos;
		int rc;

		if (len)
			memcpy(body, scratch, len);
#define CHECK(call, what)                                                                          \
	do {                                                                                       \
		rc = (call);                                                                       \
		expect_errno_or_zero(rc, what, it);                                                \
		accepted += rc == 0;                                                               \
	} while (0)
		CHECK(lode_dec_hello(body, len, dl, (const struct lode_wire_hello_req **)&p),
		      "hello");
		CHECK(lode_dec_lookup(body, len, dl, (const struct lode_wire_lookup_req **)&p, &n1),
		      "lookup");
		if (!rc)
			expect_name_inside(&n1, body, len);
		CHECK(lode_dec_getattr(body, len, dl, (const struct lode_wire_getattr_req **)&p),
		      "getattr");
		CHECK(lode_dec_setattr(body, len, dl, (const struct lode_wire_setattr_req **)&p),
		      "setattr");
		CHECK(lode_dec_create(body, len, dl, (const struct lode_wire_create_req **)&p, &n1),
		      "create");
		if (!rc)
			expect_name_inside(&n1, body, len);
		CHECK(lode_dec_open(body, len, dl, (const struct lode_wire_open_req **)&p), "open");
		CHECK(lode_dec_commit(body, len, dl, (const struct lode_wire_commit_req **)&p),
		      "commit");
		CHECK(lode_dec_mkdir(body, len, dl, (const struct lode_wire_mkdir_req **)&p, &n1),
		      "mkdir");
		if (!rc)
			expect_name_inside(&n1, body, len);
		CHECK(lode_dec_rename(body, len, dl, (const struct lode_wire_rename_req **)&p, &n1,
				      &n2),
		      "rename");
		if (!rc) {
			expect_name_inside(&n1, body, len);
			expect_name_inside(&n2, body, len);
		}
		CHECK(lode_dec_link(body, len, dl, (const struct lode_wire_link_req **)&p, &n1),
		      "link");
		CHECK(lode_dec_symlink(body, len, dl, (const struct lode_wire_symlink_req **)&p,
				       &n1, &n2),
		      "symlink");
		if (!rc) {
			expect_name_inside(&n1, body, len);
			expect_name_inside(&n2, body, len);
		}
		CHECK(lode_dec_readdir(body, len, dl, (const struct lode_wire_readdir_req **)&p),
		      "readdir");
		CHECK(lode_dec_statfs(body, len, dl), "statfs");
		CHECK(lode_dec_xattr(xattr_ops[rnd() % sizeof(xattr_ops)], body, len, dl,
				     (const struct lode_wire_xattr_req **)&p, &n1),
		      "xattr");
		if (!rc)
			expect_name_inside(&n1, body, len);
		CHECK(lode_dec_target_register(
			  body, len, dl, (const struct lode_wire_target_register_req **)&p, &n1),
		      "target_register");
		CHECK(lode_dec_target_heartbeat(body, len, dl,
						(const struct lode_wire_target_heartbeat_req **)&p),
		      "target_heartbeat");
		CHECK(lode_dec_target_list(body, len, dl), "target_list");
		CHECK(lode_dec_orphan(orphan_ops[rnd() % sizeof(orphan_ops)], body, len, dl,
				      (const struct lode_wire_orphan_req **)&p, &nobj),
		      "orphan");
		CHECK(lode_dec_obj_write(body, len, dl, (const struct lode_wire_obj_write_req **)&p,
					 (const uint64_t **)&q, &ch),
		      "obj_write");
		if (!rc)
			assert_true((const unsigned char *)q +
					8 * ((const struct lode_wire_obj_write_req *)p)->nchunks <=
				    body + len);
		if (!rc && ch)
			assert_true((const unsigned char *)ch + lode_chain_size(ch->count) ==
				    body + len);
		CHECK(lode_dec_obj_fsync(body, len, dl, (const struct lode_wire_objid **)&p, &ch),
		      "obj_fsync");
		CHECK(lode_dec_chain(body, len, &ch), "chain");
		CHECK(lode_dec_obj_chain_rep(body, len, (unsigned)(rnd() % 10),
					     (const struct lode_wire_obj_chain_rep **)&p),
		      "obj_chain_rep");
		CHECK(lode_dec_obj_read(body, len, dl, (const struct lode_wire_obj_read_req **)&p),
		      "obj_read");
		CHECK(lode_dec_obj_truncate(body, len, dl,
					    (const struct lode_wire_obj_truncate_req **)&p),
		      "obj_truncate");
		CHECK(lode_dec_objid(body, len, dl, (const struct lode_wire_objid **)&p), "objid");
		CHECK(lode_dec_obj_list(body, len, dl, (const struct lode_wire_obj_list_req **)&p),
		      "obj_list");
		CHECK(lode_dec_obj_read_rep(body, len, dl, (uint32_t)rnd(),
					    (const struct lode_wire_obj_read_rep **)&p,
					    (const uint64_t **)&q),
		      "obj_read_rep");
		if (len >= sizeof(struct lode_wire_layout))
			CHECK(lode_layout_check((const struct lode_wire_layout *)(void *)body),
			      "layout_check");
		if (len >= sizeof(struct lode_wire_hdr)) {
			rc = lode_hdr_check((const struct lode_wire_hdr *)(void *)body,
					    (int)(it & 1));
			assert_true(rc == 0 || rc == -EPROTO);
		}
		/* the body doubles as a page of records for the walkers */
		CHECK(lode_dec_readdir_rep(body, len >= 8 ? 8 : len, body, len,
					   (const struct lode_wire_readdir_rep **)&p),
		      "readdir_rep");
		pos = 0;
		for (int i = 0;
		     i < 64 &&
		     (rc = lode_readdir_next(body, len, &pos, (const struct lode_wire_dirent **)&p,
					     &n1)) == 1;
		     i++)
			expect_name_inside(&n1, body, len);
		expect_errno_or_zero(rc < 0 ? rc : 0, "readdir_next", it);
		CHECK(lode_dec_readdirplus_rep(body, len >= 8 ? 8 : len, body, len,
					       (const struct lode_wire_readdir_rep **)&p),
		      "readdirplus_rep");
		pos = 0;
		for (int i = 0; i < 64 && (rc = lode_readdirplus_next(
					       body, len, &pos,
					       (const struct lode_wire_direntplus **)&p, &n1)) == 1;
		     i++)
			expect_name_inside(&n1, body, len);
		expect_errno_or_zero(rc < 0 ? rc : 0, "readdirplus_next", it);
		pos = 0;
		for (int i = 0;
		     i < 64 &&
		     (rc = lode_target_next(body, len, &pos, (const struct lode_wire_target **)&p,
					    &n1)) == 1;
		     i++)
			expect_name_inside(&n1, body, len);
		expect_errno_or_zero(rc < 0 ? rc : 0, "target_next", it);
		lode_status_to_errno((int32_t)rnd());
		assert_true(lode_status_from_errno(-(int)(rnd() % 100000)) >= 0);
#undef CHECK
		free(body);
	}
	/* the seeds must reach past the first checks now and then */
	print_message("%u decoder calls accepted\n", accepted);
	assert_true(accepted > 100);
}

/* ---- regressions: bugs these tests found in proto/, fixed since ---- */

/* wire_spec.h: reserved fields are rejected when non-zero, and records are padded with
 * zeros; lode_readdir_next() looks at neither. */
static void test_readdir_next_rejects_a_record_with_non_zero_reserved_or_padding(void **state)
{
	const struct lode_wire_dirent *e;
	struct lode_name n;
	struct lode_wire_dirent *d = (struct lode_wire_dirent *)(void *)page_mem.b;
	size_t len = 0;
	uint64_t pos = 0;

	(void)state;
	put_dirent(&len, 1, "a", 1);
	d->reserved = 1;
	assert_int_equal(lode_readdir_next(page_mem.b, len, &pos, &e, &n), -EPROTO);
	d->reserved = 0;
	page_mem.b[len - 1] = 'x'; /* padding byte */
	pos = 0;
	assert_int_equal(lode_readdir_next(page_mem.b, len, &pos, &e, &n), -EPROTO);
}

static void test_target_next_rejects_a_record_with_non_zero_reserved(void **state)
{
	const struct lode_wire_target *t;
	struct lode_name a;
	struct lode_wire_target *first = (struct lode_wire_target *)(void *)page_mem.b;
	size_t len = two_targets();
	uint64_t pos = 0;

	(void)state;
	first->reserved1 = 1;
	assert_int_equal(lode_target_next(page_mem.b, len, &pos, &t, &a), -EPROTO);
	first->reserved1 = 0;
	first->reserved0 = 1;
	pos = 0;
	assert_int_equal(lode_target_next(page_mem.b, len, &pos, &t, &a), -EPROTO);
}

static void test_obj_read_rep_rejects_non_zero_reserved(void **state)
{
	const struct lode_wire_obj_read_rep *rep;
	const uint64_t *sums;
	uint32_t len = build_read_rep(1, 1);

	(void)state;
	((struct lode_wire_obj_read_rep *)BODY)->reserved = 1;
	assert_int_equal(lode_dec_obj_read_rep(BODY, len, 100, CHUNK, &rep, &sums), -EPROTO);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest regressions[] = {
	    cmocka_unit_test(test_readdir_next_rejects_a_record_with_non_zero_reserved_or_padding),
	    cmocka_unit_test(test_target_next_rejects_a_record_with_non_zero_reserved),
	    cmocka_unit_test(test_obj_read_rep_rejects_non_zero_reserved),
	};
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hdr_check_accepts_a_well_formed_request_and_reply),
	    cmocka_unit_test(test_hdr_check_rejects_bad_magic),
	    cmocka_unit_test(test_hdr_check_rejects_a_bad_version),
	    cmocka_unit_test(test_hdr_check_rejects_an_unknown_opcode),
	    cmocka_unit_test(test_hdr_check_rejects_a_reply_flag_mismatch),
	    cmocka_unit_test(test_hdr_check_rejects_lengths_over_the_limits),
	    cmocka_unit_test(test_hdr_check_rejects_non_zero_reserved_and_a_request_status),
	    cmocka_unit_test(test_status_round_trips_every_wire_errno),
	    cmocka_unit_test(test_status_maps_unknown_codes_to_eio),
	    cmocka_unit_test(test_status_zero_is_never_an_error_and_an_error_is_never_zero),
	    cmocka_unit_test(test_name_decoders_accept_ordinary_names),
	    cmocka_unit_test(test_name_decoders_accept_a_name_of_255_bytes),
	    cmocka_unit_test(test_name_decoders_reject_a_name_of_256_bytes),
	    cmocka_unit_test(test_name_decoders_reject_a_zero_length_name),
	    cmocka_unit_test(test_name_decoders_reject_a_name_with_a_slash),
	    cmocka_unit_test(test_name_decoders_reject_a_name_with_a_nul),
	    cmocka_unit_test(test_name_decoders_reject_dot_and_dot_dot),
	    cmocka_unit_test(test_lookup_rejects_a_body_shorter_than_its_fixed_struct),
	    cmocka_unit_test(test_lookup_rejects_a_body_longer_than_struct_and_name),
	    cmocka_unit_test(test_lookup_rejects_a_name_length_past_the_body),
	    cmocka_unit_test(test_lookup_rejects_non_zero_reserved_fields_and_data),
	    cmocka_unit_test(test_mkdir_rejects_bad_shape_reserved_mode_and_data),
	    cmocka_unit_test(test_link_rejects_bad_shape_reserved_and_data),
	    cmocka_unit_test(test_rename_rejects_bad_shape_flags_and_data),
	    cmocka_unit_test(test_symlink_checks_its_target),
	    cmocka_unit_test(test_hello_accepts_both_roles_and_rejects_others),
	    cmocka_unit_test(test_hello_rejects_bad_length_reserved_and_data),
	    cmocka_unit_test(test_getattr_accepts_exactly_its_struct),
	    cmocka_unit_test(test_setattr_checks_valid_bits_mode_and_size),
	    cmocka_unit_test(test_open_checks_flags_and_reserved),
	    cmocka_unit_test(test_commit_checks_reserved_commit_and_size),
	    cmocka_unit_test(test_readdir_checks_max_entries_flags_and_data),
	    cmocka_unit_test(test_statfs_and_target_list_take_an_empty_body_and_no_data),
	    cmocka_unit_test(test_target_heartbeat_checks_length_reserved_and_data),
	    cmocka_unit_test(test_target_register_checks_its_address),
	    cmocka_unit_test(test_orphan_list_and_done_check_max_and_data),
	    cmocka_unit_test(test_create_accepts_a_request_with_and_without_a_layout),
	    cmocka_unit_test(test_create_rejects_bad_flags_mode_reserved_and_data),
	    cmocka_unit_test(test_create_rejects_a_layout_with_zero_stripe_count),
	    cmocka_unit_test(test_create_rejects_a_stripe_size_that_is_not_a_multiple_of_the_chunk),
	    cmocka_unit_test(test_create_rejects_a_layout_with_too_many_targets),
	    cmocka_unit_test(test_create_rejects_non_zero_unused_targets),
	    cmocka_unit_test(test_layout_check_accepts_good_layouts_and_rejects_each_bad_field),
	    cmocka_unit_test(test_xattr_accepts_each_opcode_well_formed),
	    cmocka_unit_test(test_xattr_rejects_a_value_over_the_limit),
	    cmocka_unit_test(test_xattr_rejects_data_where_none_is_allowed),
	    cmocka_unit_test(test_xattr_rejects_bad_names_flags_reserved_and_opcodes),
	    cmocka_unit_test(test_xattr_rejects_a_body_that_does_not_match_its_name_length),
	    cmocka_unit_test(test_obj_write_accepts_whole_and_partial_chunks),
	    cmocka_unit_test(test_obj_write_rejects_nchunks_not_matching_data_len),
	    cmocka_unit_test(test_obj_write_rejects_no_data_and_data_over_the_limit),
	    cmocka_unit_test(test_obj_write_rejects_an_unaligned_offset),
	    cmocka_unit_test(test_obj_write_rejects_an_offset_that_overflows),
	    cmocka_unit_test(test_obj_write_rejects_a_bad_object_id_and_unknown_flags),
	    cmocka_unit_test(test_obj_write_accepts_a_chain_of_zero_to_the_most_hops),
	    cmocka_unit_test(test_obj_write_rejects_a_chain_of_the_wrong_shape),
	    cmocka_unit_test(test_obj_write_rejects_non_zero_reserved_fields_of_a_chain),
	    cmocka_unit_test(test_obj_write_rejects_bad_hops_timeouts_and_loops),
	    cmocka_unit_test(test_obj_fsync_accepts_a_plain_or_chained_body_and_rejects_bad_chains),
	    cmocka_unit_test(test_obj_chain_rep_accepts_one_status_per_copy_and_nothing_else),
	    cmocka_unit_test(test_obj_read_checks_offset_length_and_shape),
	    cmocka_unit_test(test_obj_truncate_objid_and_list_check_their_fields),
	    cmocka_unit_test(test_readdir_next_walks_well_formed_records),
	    cmocka_unit_test(test_readdir_next_rejects_a_record_cut_short),
	    cmocka_unit_test(test_readdir_next_rejects_a_name_length_past_the_end),
	    cmocka_unit_test(test_readdir_next_rejects_a_record_with_a_bad_name),
	    cmocka_unit_test(test_readdir_rep_counts_the_records_it_announces),
	    cmocka_unit_test(test_readdirplus_records_carry_matching_attributes),
	    cmocka_unit_test(test_target_next_walks_well_formed_records),
	    cmocka_unit_test(test_target_next_rejects_truncated_and_malformed_records),
	    cmocka_unit_test(test_obj_read_rep_accepts_data_up_to_the_length_requested),
	    cmocka_unit_test(test_obj_read_rep_rejects_data_longer_than_requested),
	    cmocka_unit_test(test_obj_read_rep_rejects_checksums_not_matching_the_data),
	    cmocka_unit_test(test_chunk_sum_counts_bytes_past_the_end_as_zero),
	    cmocka_unit_test(test_chunk_sum_of_a_longer_buffer_covers_one_chunk),
	    cmocka_unit_test(test_chunk_sum_avx2_equals_libxxhash),
	    cmocka_unit_test(test_buf_put_fails_sticky_once_full),
	    cmocka_unit_test(test_report_copy_needs_an_inode_a_target_and_a_known_kind),
	    cmocka_unit_test(test_set_copy_needs_an_index_in_the_layout_and_both_targets),
	    cmocka_unit_test(test_decoders_never_crash_on_random_bodies),
	};

	int failed;

	(void)argc;
	(void)argv;
	failed = cmocka_run_group_tests(tests, setup_names, NULL);
	failed += cmocka_run_group_tests_name("regressions", regressions, setup_names, NULL);
	return failed ? 1 : 0;
}
