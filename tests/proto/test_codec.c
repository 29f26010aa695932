/* SPDX-License-Identifier: MIT */
/*
 * proto/wire: the request decoder lode_msg_decode() against hand-built bodies, the header
 * checks, the errno <-> wire status mapping, the reply decoders and record walkers, the chunk
 * checksum rule, and a deterministic random-input run that must never crash (run it under
 * ASan/UBSan: bodies are allocated at their exact length so an over-read is caught).
 *
 * What every request shares is checked once per opcode, from one table with a well-formed
 * request of each (reqs[]): it decodes in place; a body cut short or too long, a name length
 * that does not match the body, data where none belongs, a reserved field set or a required
 * field zero is -EPROTO; every path component obeys the name rules. What only one opcode
 * checks (flags, modes, ranges, chains, checksums) has a focused test below.
 *
 * The decoder promises to write its output only on success: every request here is decoded
 * through decode(), which checks that a failing call left the sentinel it was given.
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

#define CHUNK	      LODE_CHUNK_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* A field of struct T, as (offset, size) */
#define AT(T, f) offsetof(T, f), sizeof(((T *)0)->f)

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

static int setup_names(void **state)
{
	(void)state;
	memset(long_name, 'a', sizeof(long_name));
	return 0;
}

/* Writes the low `size` bytes of v at p: the wire is little-endian, and so is this host. */
static void poke(void *p, size_t size, uint64_t v)
{
	memcpy(p, &v, size);
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

/* ---- the decoder, with its promise to write only on success checked ---- */

static int msg_untouched(const struct lode_msg *m)
{
	return m->fixed == SENTINEL && name_untouched(&m->name[0]) && name_untouched(&m->name[1]) &&
	       m->sums == SENTINEL && m->chain == SENTINEL && m->count == 4242;
}

/* Decodes len bytes at body as a request of opcode op into *m (NULL: a scratch one). A
 * failure must leave *m as it was; a success points m->fixed at the body (NULL if empty). */
static int decode_at(uint8_t op, const void *body, uint32_t len, uint64_t data_len,
		     struct lode_msg *m)
{
	struct lode_msg scratch;
	int rc;

	if (!m)
		m = &scratch;
	*m = (struct lode_msg){.fixed = SENTINEL,
			       .name = {NAME_SENTINEL, NAME_SENTINEL},
			       .sums = SENT(uint64_t),
			       .chain = SENT(struct lode_wire_chain),
			       .count = 4242};
	rc = lode_msg_decode(op, body, len, data_len, m);
	if (rc)
		assert_true(msg_untouched(m));
	else
		assert_ptr_equal(m->fixed, len ? body : NULL);
	return rc;
}

static int decode(uint8_t op, uint32_t len, uint64_t data_len, struct lode_msg *m)
{
	return decode_at(op, BODY, len, data_len, m);
}

/* ---- header ---- */

/* Each opcode's largest body and data, from its row: what a server checks on the header. */
static void test_hdr_bounds_follow_each_opcodes_row(void **state)
{
	static const struct {
		uint8_t op;
		uint32_t body;
		uint64_t data;
		int rc;
	} cases[] = {
	    {LODE_OP_LOOKUP, sizeof(struct lode_wire_lookup_req) + LODE_NAME_MAX, 0, 0},
	    {LODE_OP_LOOKUP, sizeof(struct lode_wire_lookup_req) + LODE_NAME_MAX + 1, 0, -EMSGSIZE},
	    {LODE_OP_LOOKUP, 24, 1, -EMSGSIZE},
	    {LODE_OP_GETATTR, 8, 0, 0},
	    {LODE_OP_GETATTR, 9, 0, -EMSGSIZE},
	    {LODE_OP_PING, 0, 0, 0},
	    {LODE_OP_PING, 1, 0, -EMSGSIZE},
	    {LODE_OP_SYMLINK,
	     sizeof(struct lode_wire_symlink_req) + LODE_NAME_MAX + LODE_SYMLINK_MAX, 0, 0},
	    {LODE_OP_SETXATTR, 64, LODE_XATTR_VALUE_MAX, 0},
	    {LODE_OP_SETXATTR, 64, LODE_XATTR_VALUE_MAX + 1, -EMSGSIZE},
	    {LODE_OP_ORPHAN_DONE, 8, LODE_OBJLIST_MAX * sizeof(struct lode_wire_objid), 0},
	    {LODE_OP_ORPHAN_DONE, 8, LODE_OBJLIST_MAX * sizeof(struct lode_wire_objid) + 1,
	     -EMSGSIZE},
	    {LODE_OP_CLOSE_MANY, 0, LODE_CLOSE_MANY_MAX * sizeof(struct lode_wire_close_ref), 0},
	    {LODE_OP_CLOSE_MANY, 0, LODE_CLOSE_MANY_MAX * sizeof(struct lode_wire_close_ref) + 1,
	     -EMSGSIZE},
	    {LODE_OP_CLOSE_MANY, 1, 16, -EMSGSIZE},
	    {LODE_OP_OBJ_STAT, 24, 1, -EMSGSIZE},
	    {LODE_OP_OBJ_WRITE,
	     sizeof(struct lode_wire_obj_write_req) + 8 * (LODE_DATA_MAX / LODE_CHUNK_SIZE) +
		 sizeof(struct lode_wire_chain) +
		 LODE_CHAIN_MAX * sizeof(struct lode_wire_chain_hop),
	     LODE_DATA_MAX, 0},
	    {LODE_OP_OBJ_WRITE, LODE_BODY_MAX, 0, -EMSGSIZE},
	    {LODE_OP_OBJ_FSYNC,
	     sizeof(struct lode_wire_objid) + sizeof(struct lode_wire_chain) +
		 LODE_CHAIN_MAX * sizeof(struct lode_wire_chain_hop),
	     0, 0},
	    {LODE_OP_OBJ_FSYNC, 24, 1, -EMSGSIZE},
	};
	struct lode_wire_hdr h;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lode_hdr_init(&h, cases[i].op, 1, cases[i].body, cases[i].data);
		assert_int_equal(lode_hdr_check(&h, 0), 0);
		if (lode_hdr_check_bounds(&h) != cases[i].rc)
			fail_msg("%s body %u data %llu: %d, want %d", lode_op_name(cases[i].op),
				 cases[i].body, (unsigned long long)cases[i].data,
				 lode_hdr_check_bounds(&h), cases[i].rc);
	}
	h.opcode = 63;
	assert_int_equal(lode_hdr_check_bounds(&h), -EPROTO);
}

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

/* A capability rides at the end of an object data request's body (LODE_WIRE_F_CAP), and of
 * a client's REPORT_COPY: the flag is taken only on those opcodes, with room for it, and
 * only on requests. */
static void test_hdr_check_takes_a_capability_only_on_object_data_requests(void **state)
{
	struct lode_wire_hdr h;

	(void)state;
	lode_hdr_init(&h, LODE_OP_OBJ_READ, 1, sizeof(struct lode_wire_obj_read_req) + 64, 0);
	h.flags = LODE_WIRE_F_CAP;
	assert_int_equal(lode_hdr_check(&h, 0), 0);
	assert_int_equal(lode_hdr_check_bounds(&h), 0);
	h.flags = 0; /* without the flag, the same body is too long for OBJ_READ */
	assert_int_equal(lode_hdr_check_bounds(&h), -EMSGSIZE);
	h.flags = LODE_WIRE_F_CAP;
	h.body_len = 63; /* no room for one */
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
	lode_hdr_init(&h, LODE_OP_REPORT_COPY, 1, sizeof(struct lode_wire_report_req) + 64, 0);
	h.flags = LODE_WIRE_F_CAP;
	assert_int_equal(lode_hdr_check(&h, 0), 0);
	assert_int_equal(lode_hdr_check_bounds(&h), 0);
	lode_hdr_init(&h, LODE_OP_LOOKUP, 1, 200, 0);
	h.flags = LODE_WIRE_F_CAP;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
	lode_hdr_init(&h, LODE_OP_OBJ_REMOVE, 1, 24 + 64, 0); /* by role, not capability */
	h.flags = LODE_WIRE_F_CAP;
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
	lode_hdr_init(&h, LODE_OP_OBJ_READ, 1, 0, 0);
	h.flags = LODE_WIRE_F_REPLY | LODE_WIRE_F_CAP;
	assert_int_equal(lode_hdr_check(&h, 1), -EPROTO);
}

/* LODE_WIRE_F_LAZY: on the MDS's namespace changes only, never on a reply. */
static void test_hdr_check_takes_lazy_only_on_namespace_changes(void **state)
{
	static const uint8_t lazy[] = {LODE_OP_CREATE,	  LODE_OP_RENAME, LODE_OP_UNLINK,
				       LODE_OP_SETATTR,	  LODE_OP_CLOSE,  LODE_OP_COMMIT,
				       LODE_OP_CLOSE_MANY};
	static const uint8_t never[] = {LODE_OP_LOOKUP,	   LODE_OP_GETATTR,
					LODE_OP_SYNC,	   LODE_OP_FSCK_FIX,
					LODE_OP_OBJ_WRITE, LODE_OP_TARGET_REGISTER};
	struct lode_wire_hdr h;

	(void)state;
	for (size_t i = 0; i < sizeof(lazy); i++) {
		lode_hdr_init(&h, lazy[i], 1, 200, 0);
		h.flags = LODE_WIRE_F_LAZY;
		assert_int_equal(lode_hdr_check(&h, 0), 0);
	}
	for (size_t i = 0; i < sizeof(never); i++) {
		lode_hdr_init(&h, never[i], 1, 200, 0);
		h.flags = LODE_WIRE_F_LAZY;
		assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
	}
	lode_hdr_init(&h, LODE_OP_CREATE, 1, 0, 0);
	h.flags = LODE_WIRE_F_REPLY | LODE_WIRE_F_LAZY;
	assert_int_equal(lode_hdr_check(&h, 1), -EPROTO);
}

/* LODE_WIRE_F_GRANT and a grant's token: on requests that add a name and their replies; a
 * token in a reply only as a MKDIR's new grant. */
static void test_hdr_check_takes_grants_only_where_a_name_is_added(void **state)
{
	static const uint8_t adds[] = {LODE_OP_CREATE,	LODE_OP_MKDIR, LODE_OP_MKNOD,
				       LODE_OP_SYMLINK, LODE_OP_LINK,  LODE_OP_RENAME};
	static const uint8_t never[] = {LODE_OP_LOOKUP,	   LODE_OP_UNLINK, LODE_OP_RMDIR,
					LODE_OP_SETATTR,   LODE_OP_OPEN,   LODE_OP_CLOSE_MANY,
					LODE_OP_OBJ_WRITE, LODE_OP_PING};
	struct lode_wire_hdr h;

	(void)state;
	for (size_t i = 0; i < sizeof(adds); i++) {
		assert_true(lode_op_adds_name(adds[i]));
		lode_hdr_init(&h, adds[i], 1, 200, 0);
		h.flags = LODE_WIRE_F_GRANT | LODE_WIRE_F_LAZY;
		h.grant = 0x1234567890abcdefull;
		assert_int_equal(lode_hdr_check(&h, 0), 0);
		h.grant = 0; /* holds none (a MKDIR asking for one) */
		assert_int_equal(lode_hdr_check(&h, 0), 0);
		h.flags = LODE_WIRE_F_REPLY | LODE_WIRE_F_GRANT; /* renewed */
		assert_int_equal(lode_hdr_check(&h, 1), 0);
		h.grant = 77; /* a new grant: MKDIR's reply only */
		assert_int_equal(lode_hdr_check(&h, 1), adds[i] == LODE_OP_MKDIR ? 0 : -EPROTO);
	}
	for (size_t i = 0; i < sizeof(never); i++) {
		assert_false(lode_op_adds_name(never[i]));
		lode_hdr_init(&h, never[i], 1, 200, 0);
		h.flags = LODE_WIRE_F_GRANT;
		assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
		h.flags = LODE_WIRE_F_REPLY | LODE_WIRE_F_GRANT;
		assert_int_equal(lode_hdr_check(&h, 1), -EPROTO);
	}
	lode_hdr_init(&h, LODE_OP_CREATE, 1, 200, 0);
	h.grant = 5; /* a token, no flag */
	assert_int_equal(lode_hdr_check(&h, 0), -EPROTO);
}

static void test_hdr_check_rejects_an_unknown_opcode(void **state)
{
	static const unsigned bad[] = {0, 4, 9, 61, 63, 64, 200, 255};
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

static void test_hdr_check_rejects_each_malformed_field(void **state)
{
	static const struct {
		int reply; /* a reply header, checked as one */
		uint16_t off;
		uint8_t size;
		uint64_t v;
	} cases[] = {
	    {0, AT(struct lode_wire_hdr, magic), 0x4c4f4445u},
	    {0, AT(struct lode_wire_hdr, magic), 0},
	    {0, AT(struct lode_wire_hdr, version), 0},
	    {0, AT(struct lode_wire_hdr, version), LODE_WIRE_VERSION + 1},
	    {0, AT(struct lode_wire_hdr, flags), LODE_WIRE_F_REPLY}, /* a reply for a request */
	    {1, AT(struct lode_wire_hdr, flags), 0},		     /* a request for a reply */
	    {0, AT(struct lode_wire_hdr, flags), 0x0002},	     /* an unknown flag */
	    {1, AT(struct lode_wire_hdr, flags), LODE_WIRE_F_REPLY | 0x8000},
	    {0, AT(struct lode_wire_hdr, body_len), LODE_BODY_MAX + 1},
	    {0, AT(struct lode_wire_hdr, body_len), UINT32_MAX},
	    {0, AT(struct lode_wire_hdr, data_len), LODE_DATA_MAX + 1ull},
	    {0, AT(struct lode_wire_hdr, data_len), UINT64_MAX},
	    {0, AT(struct lode_wire_hdr, grant), 1}, /* a token without LODE_WIRE_F_GRANT */
	    {0, AT(struct lode_wire_hdr, grant), 1ull << 63},
	    {1, AT(struct lode_wire_hdr, grant), 0x100},
	    {0, AT(struct lode_wire_hdr, flags), LODE_WIRE_F_GRANT}, /* LOOKUP adds no name */
	    {1, AT(struct lode_wire_hdr, flags), LODE_WIRE_F_REPLY | LODE_WIRE_F_GRANT},
	    {0, AT(struct lode_wire_hdr, status), EIO}, /* only replies carry one */
	};

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		struct lode_wire_hdr h = good_hdr(cases[k].reply);

		poke((char *)&h + cases[k].off, cases[k].size, cases[k].v);
		if (lode_hdr_check(&h, cases[k].reply) != -EPROTO)
			fail_msg("header case %zu is accepted", k);
	}
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

/* ---- one well-formed request of every opcode ---- */

/* A field of a struct: where it is and how wide (0 ends a list). */
struct field {
	uint16_t off;
	uint8_t size;
};

/* A name that follows the fixed struct: its length field, a well-formed value, and whether
 * it is a path component (the name rules) or has rules of its own (symlink target, xattr
 * name, address). */
struct req_name {
	uint16_t len_off;
	const char *good;
	int entry;
};

struct req_case {
	uint8_t op;
	const void *fixed; /* the fixed struct, name lengths aside (NULL: an empty body) */
	uint16_t size;
	struct req_name name[2];
	const void *tail; /* what follows the struct when it is no name: checksums */
	uint16_t tail_len;
	uint64_t data_len;	  /* the bulk data it carries */
	struct field reserved[3]; /* must be zero */
	struct field required[2]; /* must not be zero */
};

static const uint64_t one_sum = 0x1000;

/* Kept one per line or so: clang-format would spread each over four lines or more. */
/* clang-format off */
#define FIELD(T, f) {AT(T, f)}
#define ENTRY(T, f, s) {offsetof(T, f), s, 1}
#define OTHER(T, f, s) {offsetof(T, f), s, 0}
#define FIXED(T, ...) &(T){__VA_ARGS__}, sizeof(T)
#define GOOD_OBJ {.ino = 12, .generation = 3, .stripe = 1}
#define LOOKUP_LIKE(o) {o, FIXED(struct lode_wire_lookup_req, .parent = 1),                        \
	{ENTRY(struct lode_wire_lookup_req, name_len, "x")},                                       \
	.reserved = {FIELD(struct lode_wire_lookup_req, reserved0),                                \
		     FIELD(struct lode_wire_lookup_req, reserved1)}}
#define BY_INO(o) {o, FIXED(struct lode_wire_getattr_req, .ino = 77)}
#define XATTR(o, flags_, name_, data)                                                              \
	{o, FIXED(struct lode_wire_xattr_req, .ino = 1, .flags = flags_, .size = 100),             \
	 {OTHER(struct lode_wire_xattr_req, name_len, name_)}, .data_len = data,                   \
	 .reserved = {FIELD(struct lode_wire_xattr_req, reserved0),                                \
		      FIELD(struct lode_wire_xattr_req, reserved1)}}
#define COMMIT_LIKE(o)                                                                             \
	{o, FIXED(struct lode_wire_commit_req, .ino = 3, .handle = 4, .size = 5, .commit = 1),     \
	 .reserved = {FIELD(struct lode_wire_commit_req, reserved)}}
#define OBJID(o) {o, FIXED(struct lode_wire_objid, .ino = 12, .generation = 3, .stripe = 1),       \
	.reserved = {FIELD(struct lode_wire_objid, reserved)},                                     \
	.required = {FIELD(struct lode_wire_objid, ino)}}
/* clang-format on */

static const struct lode_wire_objid good_obj = GOOD_OBJ;

static const struct req_case reqs[] = {
    {LODE_OP_HELLO, FIXED(struct lode_wire_hello_req, .client_id = 42, .role = LODE_ROLE_CLIENT),
     .reserved = {FIELD(struct lode_wire_hello_req, reserved)}},
    {LODE_OP_PING, NULL, 0},
    {LODE_OP_AUTH, FIXED(struct lode_wire_auth_req, .step = 1, .role = LODE_ROLE_CLIENT),
     .reserved = {FIELD(struct lode_wire_auth_req, reserved)}},
    LOOKUP_LIKE(LODE_OP_LOOKUP),
    BY_INO(LODE_OP_GETATTR),
    {LODE_OP_SETATTR, FIXED(struct lode_wire_setattr_req, .ino = 3, .valid = LODE_SETATTR_ALL_,
			    .mode = 0600, .size = 1000)},
    {LODE_OP_CREATE,
     FIXED(struct lode_wire_create_req, .parent = 1, .mode = 0644, .flags = LODE_OPEN_WRITE),
     {ENTRY(struct lode_wire_create_req, name_len, "f")},
     .reserved = {FIELD(struct lode_wire_create_req, reserved)}},
    {LODE_OP_MKDIR,
     FIXED(struct lode_wire_mkdir_req, .parent = 1, .mode = 0755),
     {ENTRY(struct lode_wire_mkdir_req, name_len, "dd")},
     .reserved = {FIELD(struct lode_wire_mkdir_req, reserved)}},
    LOOKUP_LIKE(LODE_OP_UNLINK),
    LOOKUP_LIKE(LODE_OP_RMDIR),
    {LODE_OP_RENAME,
     FIXED(struct lode_wire_rename_req, .old_parent = 1, .new_parent = 2),
     {ENTRY(struct lode_wire_rename_req, old_name_len, "a"),
      ENTRY(struct lode_wire_rename_req, new_name_len, "bb")}},
    {LODE_OP_MKNOD,
     FIXED(struct lode_wire_mknod_req, .parent = 1, .mode = 010644, .rdev = 0),
     {ENTRY(struct lode_wire_mknod_req, name_len, "p")},
     .reserved = {FIELD(struct lode_wire_mknod_req, reserved0),
		  FIELD(struct lode_wire_mknod_req, reserved1)}},
    {LODE_OP_LINK,
     FIXED(struct lode_wire_link_req, .ino = 9, .new_parent = 1),
     {ENTRY(struct lode_wire_link_req, name_len, "link")},
     .reserved = {FIELD(struct lode_wire_link_req, reserved0),
		  FIELD(struct lode_wire_link_req, reserved1)}},
    {LODE_OP_SYMLINK,
     FIXED(struct lode_wire_symlink_req, .parent = 1),
     {ENTRY(struct lode_wire_symlink_req, name_len, "s"),
      OTHER(struct lode_wire_symlink_req, target_len, "/a/b/c")},
     .reserved = {FIELD(struct lode_wire_symlink_req, reserved)}},
    BY_INO(LODE_OP_READLINK),
    {LODE_OP_READDIR, FIXED(struct lode_wire_readdir_req, .ino = 1, .max_entries = 1)},
    {LODE_OP_STATFS, NULL, 0},
    {LODE_OP_SYNC, NULL, 0},
    {LODE_OP_GRANT_RETURN, FIXED(struct lode_wire_grant_return_req, .dir = 1, .token = 7)},
    XATTR(LODE_OP_SETXATTR, LODE_XATTR_CREATE, "user.a", 10),
    XATTR(LODE_OP_GETXATTR, 0, "user.a", 0),
    {LODE_OP_LISTXATTR, FIXED(struct lode_wire_xattr_req, .ino = 1, .size = 100),
     .reserved = {FIELD(struct lode_wire_xattr_req, reserved0),
		  FIELD(struct lode_wire_xattr_req, reserved1)}},
    XATTR(LODE_OP_REMOVEXATTR, 0, "user.a/b", 0),
    {LODE_OP_OPEN, FIXED(struct lode_wire_open_req, .ino = 3, .flags = LODE_OPEN_READ),
     .reserved = {FIELD(struct lode_wire_open_req, reserved)}},
    COMMIT_LIKE(LODE_OP_CLOSE),
    COMMIT_LIKE(LODE_OP_COMMIT),
    {LODE_OP_CLOSE_MANY, NULL, 0, .data_len = 2 * sizeof(struct lode_wire_close_ref)},
    {LODE_OP_TARGET_REGISTER,
     FIXED(struct lode_wire_target_register_req, .bytes_total = 1),
     {OTHER(struct lode_wire_target_register_req, addr_len, "tcp://10.0.0.1:7000")},
     .reserved = {FIELD(struct lode_wire_target_register_req, reserved0),
		  FIELD(struct lode_wire_target_register_req, reserved1)}},
    {LODE_OP_TARGET_HEARTBEAT,
     FIXED(struct lode_wire_target_heartbeat_req, .target_id = 2, .bytes_total = 10),
     .reserved = {FIELD(struct lode_wire_target_heartbeat_req, reserved)}},
    {LODE_OP_TARGET_LIST, NULL, 0},
    {LODE_OP_ORPHAN_LIST, FIXED(struct lode_wire_orphan_req, .target_id = 1, .max = 10)},
    {LODE_OP_ORPHAN_DONE, FIXED(struct lode_wire_orphan_req, .target_id = 1, .max = 10),
     .data_len = 3 * sizeof(struct lode_wire_objid)},
    {LODE_OP_REPORT_COPY,
     FIXED(struct lode_wire_report_req, .ino = 5, .generation = 1, .stripe = 2, .target_id = 3,
	   .kind = LODE_REPORT_BAD_DATA),
     .reserved = {FIELD(struct lode_wire_report_req, reserved)},
     .required = {FIELD(struct lode_wire_report_req, ino),
		  FIELD(struct lode_wire_report_req, target_id)}},
    BY_INO(LODE_OP_LAYOUT_GET),
    {LODE_OP_LAYOUT_SET_COPY,
     FIXED(struct lode_wire_set_copy_req, .ino = 5, .handle = 9, .index = 63, .old_target = 1,
	   .new_target = 2),
     .reserved = {FIELD(struct lode_wire_set_copy_req, reserved)},
     .required = {FIELD(struct lode_wire_set_copy_req, ino)}},
    {LODE_OP_CAP_GET, FIXED(struct lode_wire_cap_req, .ino = 5, .rights = LODE_CAP_READ),
     .reserved = {FIELD(struct lode_wire_cap_req, reserved)},
     .required = {FIELD(struct lode_wire_cap_req, ino)}},
    {LODE_OP_OBJ_WRITE, FIXED(struct lode_wire_obj_write_req, .obj = GOOD_OBJ, .nchunks = 1),
     .tail = &one_sum, .tail_len = sizeof(one_sum), .data_len = CHUNK,
     .reserved = {FIELD(struct lode_wire_obj_write_req, obj.reserved)},
     .required = {FIELD(struct lode_wire_obj_write_req, obj.ino)}},
    {LODE_OP_OBJ_READ,
     FIXED(struct lode_wire_obj_read_req, .obj = GOOD_OBJ, .offset = CHUNK, .length = 100),
     .reserved = {FIELD(struct lode_wire_obj_read_req, obj.reserved)},
     .required = {FIELD(struct lode_wire_obj_read_req, obj.ino)}},
    {LODE_OP_OBJ_TRUNCATE, FIXED(struct lode_wire_obj_truncate_req, .obj = GOOD_OBJ, .size = 5),
     .reserved = {FIELD(struct lode_wire_obj_truncate_req, obj.reserved)},
     .required = {FIELD(struct lode_wire_obj_truncate_req, obj.ino)}},
    {LODE_OP_OBJ_ALLOCATE,
     FIXED(struct lode_wire_obj_allocate_req, .obj = GOOD_OBJ, .offset = 0, .length = 9),
     .reserved = {FIELD(struct lode_wire_obj_allocate_req, obj.reserved)},
     .required = {FIELD(struct lode_wire_obj_allocate_req, obj.ino)}},
    OBJID(LODE_OP_OBJ_REMOVE),
    OBJID(LODE_OP_OBJ_STAT),
    {LODE_OP_OBJ_LIST, FIXED(struct lode_wire_obj_list_req, .max = 1), /* after 0: the start */
     .reserved = {FIELD(struct lode_wire_obj_list_req, after.reserved),
		  FIELD(struct lode_wire_obj_list_req, reserved)}},
    OBJID(LODE_OP_OBJ_FSYNC),
    {LODE_OP_FSCK, FIXED(struct lode_wire_fsck_req, .what = LODE_FSCK_FILES, .max = 1),
     .reserved = {FIELD(struct lode_wire_fsck_req, reserved)}},
    {LODE_OP_FSCK_FIX,
     FIXED(struct lode_wire_fsck_fix_req, .action = LODE_FSCK_FIX_NLINK, .ino = 2)},
    {LODE_OP_SCRUB_REPORT,
     FIXED(struct lode_wire_scrub_report_req, .obj = GOOD_OBJ, .target_id = 1, .bad_chunks = 1),
     .reserved = {FIELD(struct lode_wire_scrub_report_req, obj.reserved)},
     .required = {FIELD(struct lode_wire_scrub_report_req, obj.ino),
		  FIELD(struct lode_wire_scrub_report_req, target_id)}},
    {LODE_OP_OBJ_SCRUB, FIXED(struct lode_wire_scrub_req, .action = LODE_SCRUB_START, .rate = 1),
     .reserved = {FIELD(struct lode_wire_scrub_req, reserved),
		  FIELD(struct lode_wire_scrub_req, reserved1)}},
    {LODE_OP_OBJ_SCRUB_STATUS, FIXED(struct lode_wire_scrub_status_req, .max = 1),
     .reserved = {FIELD(struct lode_wire_scrub_status_req, reserved)}},
    {LODE_OP_BACKUP_START, FIXED(struct lode_wire_backup_start_req, .reserved = {0}),
     .reserved = {FIELD(struct lode_wire_backup_start_req, reserved)}},
    {LODE_OP_BACKUP_READ, FIXED(struct lode_wire_backup_read_req, .backup_id = 1, .max = 1),
     .reserved = {FIELD(struct lode_wire_backup_read_req, reserved)}},
    {LODE_OP_MOVE, FIXED(struct lode_wire_move_req, .ino = 2, .phase = LODE_MOVE_BEGIN,
			 .old_target = 1, .new_target = 2)},
    {LODE_OP_TARGET_STATE,
     FIXED(struct lode_wire_target_state_req, .target_id = 1, .admin = LODE_TARGET_DRAINING)},
    {LODE_OP_MOVE_LIST, FIXED(struct lode_wire_move_list_req, .max = 1)},
};

static const struct req_case *req_case(uint8_t op)
{
	for (size_t i = 0; i < ARRAY_SIZE(reqs); i++)
		if (reqs[i].op == op)
			return &reqs[i];
	fail_msg("no request case for opcode %u", op);
	return NULL;
}

/* Lays out c's request in BODY: its fixed struct (or `fixed`, of the same size), its names,
 * with name `slot` replaced by (name, nlen) when slot >= 0, then its tail. Returns the body
 * length. */
static uint32_t build_req(const struct req_case *c, const void *fixed, int slot, const char *name,
			  size_t nlen)
{
	size_t len = c->size;

	memset(body_mem.b, 0, sizeof(body_mem.b));
	if (c->size)
		memcpy(body_mem.b, fixed ? fixed : c->fixed, c->size);
	for (int i = 0; i < 2 && c->name[i].good; i++) {
		const char *s = i == slot ? name : c->name[i].good;
		size_t l = i == slot ? nlen : strlen(s);

		poke(body_mem.b + c->name[i].len_off, 2, l);
		memcpy(body_mem.b + len, s, l);
		len += l;
	}
	if (c->tail_len)
		memcpy(body_mem.b + len, c->tail, c->tail_len);
	return (uint32_t)(len + c->tail_len);
}

static uint32_t build_good(const struct req_case *c)
{
	return build_req(c, NULL, -1, NULL, 0);
}

static void expect_rc(int rc, int want, const struct req_case *c, const char *what)
{
	if (rc != want)
		fail_msg("%s %s: got %d, want %d", lode_op_name(c->op), what, rc, want);
}

/* ---- what every request shares ---- */

static void test_every_known_opcode_has_a_request_case_and_no_other_decodes(void **state)
{
	(void)state;
	for (unsigned op = 0; op < 256; op++) {
		unsigned n = 0;

		for (size_t i = 0; i < ARRAY_SIZE(reqs); i++)
			n += reqs[i].op == op;
		if (n != (lode_op_known(op) ? 1u : 0u))
			fail_msg("opcode %u has %u request cases here", op, n);
		if (lode_op_known(op))
			continue;
		assert_int_equal(decode_at((uint8_t)op, NULL, 0, 0, NULL), -EPROTO);
		assert_int_equal(decode((uint8_t)op, 64, 0, NULL), -EPROTO);
	}
}

static void test_every_request_decodes_its_well_formed_body_in_place(void **state)
{
	(void)state;
	for (const struct req_case *c = reqs; c < reqs + ARRAY_SIZE(reqs); c++) {
		const char *at = (const char *)BODY + c->size;
		struct lode_msg m;

		expect_rc(decode(c->op, build_good(c), c->data_len, &m), 0, c, "well formed");
		if (c->size) {
			unsigned char want[sizeof(struct lode_wire_create_req)]; /* the largest */

			assert_true(c->size <= sizeof(want));
			memcpy(want, c->fixed, c->size);
			for (int i = 0; i < 2 && c->name[i].good; i++)
				poke(want + c->name[i].len_off, 2, strlen(c->name[i].good));
			assert_memory_equal(m.fixed, want, c->size);
		} else {
			expect_rc(decode_at(c->op, NULL, 0, c->data_len, NULL), 0, c,
				  "with no body at all");
		}
		for (int i = 0; i < 2; i++) {
			size_t len = c->name[i].good ? strlen(c->name[i].good) : 0;

			assert_int_equal(m.name[i].len, len);
			if (len)
				assert_ptr_equal(m.name[i].ptr, at);
			at += len;
		}
		assert_ptr_equal(m.sums, c->tail ? at : NULL);
		assert_null(m.chain);
		if (!c->data_len)
			assert_int_equal(m.count, 0);
	}
}

static void test_every_request_refuses_a_body_shorter_or_longer_than_its_parts(void **state)
{
	(void)state;
	for (const struct req_case *c = reqs; c < reqs + ARRAY_SIZE(reqs); c++) {
		uint32_t len = build_good(c);

		for (uint32_t l = 0; l < len; l++)
			expect_rc(decode(c->op, l, c->data_len, NULL), -EPROTO, c, "cut short");
		for (uint32_t l = len + 1; l <= len + 8; l++)
			expect_rc(decode(c->op, l, c->data_len, NULL), -EPROTO, c,
				  "with extra bytes");
		if (len)
			expect_rc(decode_at(c->op, NULL, 0, c->data_len, NULL), -EPROTO, c,
				  "empty");
		expect_rc(decode_at(c->op, NULL, len + 1, c->data_len, NULL), -EPROTO, c,
			  "with a length but no body");
	}
}

static void test_every_request_refuses_a_name_length_that_does_not_match_its_body(void **state)
{
	(void)state;
	for (const struct req_case *c = reqs; c < reqs + ARRAY_SIZE(reqs); c++) {
		for (int i = 0; i < 2 && c->name[i].good; i++) {
			const size_t good = strlen(c->name[i].good);
			const uint64_t bad[] = {good - 1, good + 1, good + 9, UINT16_MAX};

			for (size_t k = 0; k < ARRAY_SIZE(bad); k++) {
				uint32_t len = build_good(c);

				poke(body_mem.b + c->name[i].len_off, 2, bad[k]);
				expect_rc(decode(c->op, len, c->data_len, NULL), -EPROTO, c,
					  "with a name length off");
			}
		}
	}
}

static void test_every_request_without_bulk_data_refuses_data(void **state)
{
	static const uint64_t data[] = {1, 2, 5, 8, 23, 24, 4096, CHUNK, LODE_DATA_MAX, UINT64_MAX};

	(void)state;
	for (const struct req_case *c = reqs; c < reqs + ARRAY_SIZE(reqs); c++) {
		uint32_t len = build_good(c);

		for (size_t k = 0; k < ARRAY_SIZE(data) && !c->data_len; k++)
			expect_rc(decode(c->op, len, data[k], NULL), -EPROTO, c, "with data");
	}
}

static void test_every_request_refuses_a_reserved_field_set_or_a_required_one_zero(void **state)
{
	(void)state;
	for (const struct req_case *c = reqs; c < reqs + ARRAY_SIZE(reqs); c++) {
		uint32_t len = build_good(c);

		for (const struct field *f = c->reserved; f < c->reserved + 3 && f->size; f++) {
			body_mem.b[f->off] = 1;
			expect_rc(decode(c->op, len, c->data_len, NULL), -EPROTO, c, "reserved 1");
			body_mem.b[f->off] = 0;
			body_mem.b[f->off + f->size - 1] = 0x80;
			expect_rc(decode(c->op, len, c->data_len, NULL), -EPROTO, c,
				  "reserved top");
			body_mem.b[f->off + f->size - 1] = 0;
		}
		for (const struct field *f = c->required; f < c->required + 2 && f->size; f++) {
			poke(body_mem.b + f->off, f->size, 0);
			expect_rc(decode(c->op, len, c->data_len, NULL), -EPROTO, c, "zero id");
			len = build_good(c);
		}
		expect_rc(decode(c->op, len, c->data_len, NULL), 0, c, "restored");
	}
}

/* The caller's supplementary groups ride in the cred: at most LODE_CRED_GROUPS_MAX, the
 * unused slots and the reserved word zero, for every opcode that carries a cred. */
static void test_a_cred_refuses_too_many_groups_or_stray_ones(void **state)
{
	struct lode_wire_lookup_req *q = BODY;
	uint32_t len = sizeof(*q) + 1;

	(void)state;
	memset(body_mem.b, 0, sizeof(body_mem.b));
	q->parent = 1;
	q->name_len = 1;
	body_mem.b[sizeof(*q)] = 'a';
	q->cred.uid = 1000;
	q->cred.gid = 1000;
	q->cred.ngroups = 2;
	q->cred.groups[0] = 5;
	q->cred.groups[1] = 6;
	assert_int_equal(decode(LODE_OP_LOOKUP, len, 0, NULL), 0);
	q->cred.groups[2] = 7; /* past ngroups */
	assert_int_equal(decode(LODE_OP_LOOKUP, len, 0, NULL), -EPROTO);
	q->cred.ngroups = 3;
	assert_int_equal(decode(LODE_OP_LOOKUP, len, 0, NULL), 0);
	q->cred.ngroups = LODE_CRED_GROUPS_MAX;
	assert_int_equal(decode(LODE_OP_LOOKUP, len, 0, NULL), 0);
	q->cred.ngroups = LODE_CRED_GROUPS_MAX + 1;
	assert_int_equal(decode(LODE_OP_LOOKUP, len, 0, NULL), -EPROTO);
	q->cred.ngroups = 3;
	q->cred.reserved = 1;
	assert_int_equal(decode(LODE_OP_LOOKUP, len, 0, NULL), -EPROTO);
}

/* ---- names ---- */

static const struct {
	const char *s;
	uint16_t len;
	int want;
} name_cases[] = {
    {"a", 1, 0},
    {"hello.txt", 9, 0},
    {"...", 3, 0},
    {".hidden", 7, 0},
    {"..x", 3, 0},
    {"sp ace\xff\x01", 8, 0},
    {long_name, LODE_NAME_MAX, 0},
    {long_name, LODE_NAME_MAX + 1, -ENAMETOOLONG},
    {long_name, 4000, -ENAMETOOLONG},
    {"", 0, -EINVAL},
    {"a/b", 3, -EINVAL},
    {"/", 1, -EINVAL},
    {"ab/", 3, -EINVAL},
    {"a\0b", 3, -EINVAL},
    {"\0", 1, -EINVAL},
    {"ab\0", 3, -EINVAL},
    {".", 1, -EINVAL},
    {"..", 2, -EINVAL},
};

/* Decodes c's request with name `slot` replaced; the other name must come out as it went in. */
static int decode_with_name(const struct req_case *c, int slot, const char *s, size_t len)
{
	const char *other = c->name[!slot].good;
	struct lode_msg m;
	int rc = decode(c->op, build_req(c, NULL, slot, s, len), c->data_len, &m);

	if (rc)
		return rc;
	assert_ptr_equal(m.name[slot].ptr,
			 (const char *)BODY + c->size + (slot ? strlen(other) : 0));
	assert_int_equal(m.name[slot].len, len);
	assert_memory_equal(m.name[slot].ptr, s, len);
	if (other) {
		assert_int_equal(m.name[!slot].len, strlen(other));
		assert_memory_equal(m.name[!slot].ptr, other, strlen(other));
	}
	return 0;
}

static void test_every_path_component_in_a_request_obeys_the_name_rules(void **state)
{
	unsigned checked = 0;

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(name_cases); k++) {
		const char *s = name_cases[k].s;
		const size_t len = name_cases[k].len;

		assert_int_equal(lode_name_check(s, len), name_cases[k].want);
		for (const struct req_case *c = reqs; c < reqs + ARRAY_SIZE(reqs); c++) {
			for (int i = 0; i < 2; i++) {
				int rc;

				if (!c->name[i].good || !c->name[i].entry)
					continue;
				rc = decode_with_name(c, i, s, len);
				if (rc != name_cases[k].want)
					fail_msg(
					    "%s name %d, %zu bytes (case %zu): got %d, want %d",
					    lode_op_name(c->op), i, len, k, rc, name_cases[k].want);
				checked++;
			}
		}
	}
	/* LOOKUP, UNLINK, RMDIR, CREATE, MKDIR, MKNOD, RENAME (both), LINK, SYMLINK */
	assert_int_equal(checked, 10 * ARRAY_SIZE(name_cases));
}

static void test_symlink_targets_addresses_and_xattr_names_follow_their_own_rules(void **state)
{
	static const struct {
		uint8_t op;
		int slot;
		const char *s;
		uint16_t len;
		int want;
	} cases[] = {
	    {LODE_OP_SYMLINK, 1, "", 0, -ENOENT},
	    {LODE_OP_SYMLINK, 1, "a\0b", 3, -EINVAL},
	    {LODE_OP_SYMLINK, 1, long_name, LODE_SYMLINK_MAX + 1, -ENAMETOOLONG},
	    {LODE_OP_SYMLINK, 1, long_name, LODE_SYMLINK_MAX, 0},
	    {LODE_OP_SYMLINK, 1, "..", 2, 0}, /* a target may contain slashes and dots */
	    {LODE_OP_SYMLINK, 1, "abcde", 5, 0},
	    {LODE_OP_TARGET_REGISTER, 0, "", 0, -EINVAL},
	    {LODE_OP_TARGET_REGISTER, 0, long_name, LODE_ADDR_MAX + 1, -EINVAL},
	    {LODE_OP_TARGET_REGISTER, 0, "ab\0c", 4, -EINVAL},
	    /* an address is logged and handed to clients: printable, no space */
	    {LODE_OP_TARGET_REGISTER, 0, "tcp://10.0.\xff.1:7000", 19, -EINVAL},
	    {LODE_OP_TARGET_REGISTER, 0, "tcp://10.0.0.1:7000\n", 20, -EINVAL},
	    {LODE_OP_TARGET_REGISTER, 0, "tcp://a b:7000", 14, -EINVAL},
	    {LODE_OP_TARGET_REGISTER, 0, long_name, LODE_ADDR_MAX, 0},
	    {LODE_OP_TARGET_REGISTER, 0, "tcp://10.0.0.1:7000", 19, 0},
	    {LODE_OP_GETXATTR, 0, "", 0, -EINVAL},
	    {LODE_OP_REMOVEXATTR, 0, "", 0, -EINVAL},
	    {LODE_OP_SETXATTR, 0, "a\0b", 3, -EINVAL},
	    {LODE_OP_SETXATTR, 0, long_name, LODE_XATTR_NAME_MAX + 1, -ERANGE},
	    {LODE_OP_GETXATTR, 0, long_name, LODE_XATTR_NAME_MAX, 0},
	};

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		const struct req_case *c = req_case(cases[k].op);

		expect_rc(decode_with_name(c, cases[k].slot, cases[k].s, cases[k].len),
			  cases[k].want, c, "with a name of its own kind");
	}
}

/* ---- what only some requests check ---- */

struct value_case {
	uint64_t v;
	int want;
};

/* Sets one field of op's well-formed request (or of `fixed`, laid out with the request's
 * names and data) to each value in turn; a value accepted must be the one decoded. */
static void expect_field(uint8_t op, const void *fixed, size_t off, size_t size,
			 const struct value_case *vc, size_t n)
{
	const struct req_case *c = req_case(op);

	for (size_t i = 0; i < n; i++) {
		uint32_t len = build_req(c, fixed, -1, NULL, 0);
		struct lode_msg m;
		int rc;

		poke(body_mem.b + off, size, vc[i].v);
		rc = decode(op, len, c->data_len, &m);
		if (rc != vc[i].want)
			fail_msg("%s with %#llx at offset %zu: got %d, want %d", lode_op_name(op),
				 (unsigned long long)vc[i].v, off, rc, vc[i].want);
		if (!rc)
			assert_memory_equal((const char *)m.fixed + off, &vc[i].v, size);
	}
}
#define EXPECT_FIELD(op, fixed, T, f, cases)                                                       \
	expect_field(op, fixed, AT(T, f), cases, ARRAY_SIZE(cases))

static void test_hello_accepts_both_roles_and_rejects_others(void **state)
{
	static const struct value_case roles[] = {
	    {LODE_ROLE_CLIENT, 0}, {LODE_ROLE_OSS, 0}, {0, -EINVAL}, {3, -EINVAL}};

	(void)state;
	EXPECT_FIELD(LODE_OP_HELLO, NULL, struct lode_wire_hello_req, role, roles);
}

static void test_auth_accepts_the_steps_roles_and_flags_it_knows(void **state)
{
	static const struct value_case steps[] = {{1, 0}, {2, 0}, {0, -EINVAL}, {3, -EINVAL}};
	static const struct value_case roles[] = {{LODE_ROLE_CLIENT, 0},
						  {LODE_ROLE_OSS, 0},
						  {LODE_ROLE_ADMIN, 0},
						  {0, -EINVAL},
						  {4, -EINVAL}};
	static const struct value_case flags[] = {
	    {0, 0}, {LODE_AUTH_F_NOKEY, 0}, {2, -EINVAL}, {0x80000000u, -EINVAL}};

	(void)state;
	EXPECT_FIELD(LODE_OP_AUTH, NULL, struct lode_wire_auth_req, step, steps);
	EXPECT_FIELD(LODE_OP_AUTH, NULL, struct lode_wire_auth_req, role, roles);
	EXPECT_FIELD(LODE_OP_AUTH, NULL, struct lode_wire_auth_req, flags, flags);
}

static void test_each_opcode_row_names_the_roles_that_may_send_it(void **state)
{
	const unsigned client = 1u << LODE_ROLE_CLIENT, target = 1u << LODE_ROLE_OSS,
		       admin = 1u << LODE_ROLE_ADMIN;

	(void)state;
	assert_int_equal(lode_op_roles(LODE_OP_TARGET_REGISTER), target);
	assert_int_equal(lode_op_roles(LODE_OP_TARGET_HEARTBEAT), target);
	assert_int_equal(lode_op_roles(LODE_OP_ORPHAN_LIST), target);
	assert_int_equal(lode_op_roles(LODE_OP_ORPHAN_DONE), target);
	assert_int_equal(lode_op_roles(LODE_OP_LAYOUT_SET_COPY), admin);
	assert_int_equal(lode_op_roles(LODE_OP_BACKUP_START), admin);
	assert_int_equal(lode_op_roles(LODE_OP_BACKUP_READ), admin);
	assert_int_equal(lode_op_roles(LODE_OP_LOOKUP), client | admin);
	assert_int_equal(lode_op_roles(LODE_OP_REPORT_COPY), client | admin);
	assert_int_equal(lode_op_roles(LODE_OP_HELLO), client | target | admin);
	assert_int_equal(lode_op_roles(LODE_OP_OBJ_WRITE), client | target | admin);
	assert_int_equal(lode_op_roles(63), 0);
	/* every known opcode is open to some role */
	for (unsigned op = 0; op < LODE_OP_MAX_; op++)
		assert_true(!lode_op_known(op) || lode_op_roles(op));
}

static void test_modes_carry_permission_bits_only(void **state)
{
	static const struct value_case modes[] = {{0, 0},
						  {0644, 0},
						  {07777, 0},
						  {010000, -EINVAL},
						  {040755, -EINVAL},
						  {0100644, -EINVAL},
						  {0100600, -EINVAL}};

	(void)state;
	/* S_IFDIR or S_IFREG is implied by the opcode, not sent */
	EXPECT_FIELD(LODE_OP_MKDIR, NULL, struct lode_wire_mkdir_req, mode, modes);
	EXPECT_FIELD(LODE_OP_CREATE, NULL, struct lode_wire_create_req, mode, modes);
	EXPECT_FIELD(LODE_OP_SETATTR, NULL, struct lode_wire_setattr_req, mode, modes);
}

static void test_mknod_takes_special_types_only(void **state)
{
	static const struct value_case modes[] = {
	    {010644, 0},	{0140755, 0},	    {020600, 0},	{060600, 0},
	    {017777, 0},	{0644, -EINVAL},    {0100644, -EINVAL}, {040755, -EINVAL},
	    {0120777, -EINVAL}, {0170000, -EINVAL}, {0210644, -EINVAL}};

	(void)state;
	EXPECT_FIELD(LODE_OP_MKNOD, NULL, struct lode_wire_mknod_req, mode, modes);
}

/* The last chunk-aligned offset: one chunk more does not fit in an off_t. */
#define TOP_OFFSET (((uint64_t)INT64_MAX / CHUNK) * CHUNK)

static void test_sizes_and_offsets_past_int64_max_are_too_big(void **state)
{
	static const struct value_case sizes[] = {
	    {0, 0}, {INT64_MAX, 0}, {(uint64_t)INT64_MAX + 1, -EFBIG}, {UINT64_MAX, -EFBIG}};
	static const struct value_case offsets[] = {
	    {TOP_OFFSET - CHUNK, 0}, {TOP_OFFSET, -EFBIG}, {UINT64_MAX - CHUNK + 1, -EFBIG}};
	const struct lode_wire_obj_read_req read = {.obj = GOOD_OBJ, .length = CHUNK};

	(void)state;
	EXPECT_FIELD(LODE_OP_SETATTR, NULL, struct lode_wire_setattr_req, size, sizes);
	EXPECT_FIELD(LODE_OP_COMMIT, NULL, struct lode_wire_commit_req, size, sizes);
	EXPECT_FIELD(LODE_OP_CLOSE, NULL, struct lode_wire_commit_req, size, sizes);
	EXPECT_FIELD(LODE_OP_OBJ_TRUNCATE, NULL, struct lode_wire_obj_truncate_req, size, sizes);
	EXPECT_FIELD(LODE_OP_OBJ_READ, &read, struct lode_wire_obj_read_req, offset, offsets);
}

static void test_obj_allocate_takes_a_non_empty_range_inside_int64(void **state)
{
	static const struct value_case lengths[] = {{0, -EINVAL},
						    {1, 0},
						    {INT64_MAX - 4096, 0},
						    {INT64_MAX - 4095, -EFBIG},
						    {UINT64_MAX, -EFBIG}};
	static const struct value_case offsets[] = {
	    {0, 0}, {INT64_MAX - 1, 0}, {INT64_MAX, -EFBIG}, {UINT64_MAX, -EFBIG}};
	const struct lode_wire_obj_allocate_req at4k = {.obj = GOOD_OBJ, .offset = 4096};
	const struct lode_wire_obj_allocate_req len1 = {.obj = GOOD_OBJ, .length = 1};

	(void)state;
	EXPECT_FIELD(LODE_OP_OBJ_ALLOCATE, &at4k, struct lode_wire_obj_allocate_req, length,
		     lengths);
	EXPECT_FIELD(LODE_OP_OBJ_ALLOCATE, &len1, struct lode_wire_obj_allocate_req, offset,
		     offsets);
}

static void test_setattr_checks_valid_bits_and_only_the_fields_they_name(void **state)
{
	static const struct value_case valid[] = {
	    {0, 0}, {LODE_SETATTR_ALL_, 0}, {0x200, -EINVAL}, {0x80000000u, -EINVAL}};
	/* fields outside `valid` are not looked at */
	const struct lode_wire_setattr_req r = {
	    .ino = 3, .valid = LODE_SETATTR_UID, .mode = 0xffffffffu, .size = UINT64_MAX};

	(void)state;
	EXPECT_FIELD(LODE_OP_SETATTR, NULL, struct lode_wire_setattr_req, valid, valid);
	assert_int_equal(decode(LODE_OP_SETATTR, build(&r, sizeof(r), NULL, 0, NULL, 0), 0, NULL),
			 0);
}

static void test_open_accepts_reads_writes_and_truncating_writes_only(void **state)
{
	static const struct value_case flags[] = {
	    {LODE_OPEN_READ, 0},
	    {LODE_OPEN_WRITE, 0},
	    {LODE_OPEN_READ | LODE_OPEN_WRITE, 0},
	    {LODE_OPEN_WRITE | LODE_OPEN_TRUNC, 0},
	    {0, -EINVAL},
	    {LODE_OPEN_TRUNC, -EINVAL},
	    {LODE_OPEN_READ | LODE_OPEN_TRUNC, -EINVAL},
	    {LODE_OPEN_READ | LODE_OPEN_EXCL, -EINVAL}, /* EXCL and CREATE are CREATE's */
	    {LODE_OPEN_WRITE | LODE_OPEN_CREATE, -EINVAL},
	    {LODE_OPEN_WRITE | LODE_OPEN_EXCLUSIVE, 0},
	    {LODE_OPEN_READ | LODE_OPEN_EXCLUSIVE, -EINVAL}, /* only a writer is exclusive */
	    {0x40 | LODE_OPEN_READ, -EINVAL}};

	(void)state;
	EXPECT_FIELD(LODE_OP_OPEN, NULL, struct lode_wire_open_req, flags, flags);
}

static void test_commit_and_close_take_renew_set_or_extend(void **state)
{
	static const struct value_case commit[] = {{0, 0},
						   {LODE_COMMIT_SET, 0},
						   {LODE_COMMIT_EXTEND, 0},
						   {3, -EPROTO},
						   {UINT32_MAX, -EPROTO}};

	(void)state;
	EXPECT_FIELD(LODE_OP_COMMIT, NULL, struct lode_wire_commit_req, commit, commit);
	EXPECT_FIELD(LODE_OP_CLOSE, NULL, struct lode_wire_commit_req, commit, commit);
}

static void test_rename_refuses_unknown_and_contradictory_flags(void **state)
{
	static const struct value_case flags[] = {
	    {0, 0},
	    {LODE_RENAME_NOREPLACE, 0},
	    {LODE_RENAME_EXCHANGE, 0},
	    {LODE_RENAME_NOREPLACE | LODE_RENAME_EXCHANGE, -EINVAL},
	    {0x4, -EINVAL}};

	(void)state;
	EXPECT_FIELD(LODE_OP_RENAME, NULL, struct lode_wire_rename_req, flags, flags);
}

static void test_a_commit_carries_blocks_only_with_the_size(void **state)
{
	static const struct value_case blocks[] = {{0, 0}, {1, -EPROTO}, {UINT64_MAX, -EPROTO}};
	const struct lode_wire_commit_req committing = {
	    .ino = 3, .handle = 4, .commit = 1, .blocks_p1 = UINT64_MAX};
	const struct lode_wire_commit_req renewing = {.ino = 3, .handle = 4};

	(void)state;
	/* a commit that applies nothing has nothing to measure */
	EXPECT_FIELD(LODE_OP_COMMIT, &renewing, struct lode_wire_commit_req, blocks_p1, blocks);
	assert_int_equal(decode(LODE_OP_COMMIT,
				build(&committing, sizeof(committing), NULL, 0, NULL, 0), 0, NULL),
			 0);
}

static void test_listings_ask_for_one_to_the_most_entries_and_readdir_for_attrs(void **state)
{
	static const struct value_case entries[] = {
	    {0, -EINVAL}, {1, 0}, {LODE_READDIR_MAX, 0}, {LODE_READDIR_MAX + 1, -EINVAL}};
	static const struct value_case objects[] = {
	    {0, -EINVAL}, {1, 0}, {LODE_OBJLIST_MAX, 0}, {LODE_OBJLIST_MAX + 1, -EINVAL}};
	static const struct value_case flags[] = {
	    {0, 0}, {LODE_READDIR_ATTRS, 0}, {2, -EPROTO}, {0x80000000u, -EPROTO}};
	const struct lode_wire_readdir_req most = {.ino = 1, .max_entries = LODE_READDIR_MAX};

	(void)state;
	EXPECT_FIELD(LODE_OP_READDIR, NULL, struct lode_wire_readdir_req, max_entries, entries);
	EXPECT_FIELD(LODE_OP_READDIR, &most, struct lode_wire_readdir_req, flags, flags);
	EXPECT_FIELD(LODE_OP_ORPHAN_LIST, NULL, struct lode_wire_orphan_req, max, objects);
	EXPECT_FIELD(LODE_OP_OBJ_LIST, NULL, struct lode_wire_obj_list_req, max, objects);
}

static void test_fsck_pages_and_fixes_are_bounded(void **state)
{
	static const struct value_case whats[] = {{0, -EINVAL},
						  {LODE_FSCK_NAMESPACE, 0},
						  {LODE_FSCK_PATH, 0},
						  {LODE_FSCK_PATH + 1, -EINVAL}};
	static const struct value_case maxes[] = {
	    {0, -EINVAL}, {1, 0}, {LODE_FSCK_MAX, 0}, {LODE_FSCK_MAX + 1, -EINVAL}};
	static const struct value_case actions[] = {{0, -EINVAL},
						    {LODE_FSCK_FIX_NLINK, 0},
						    {LODE_FSCK_FIX_DEGRADE, 0},
						    {LODE_FSCK_FIX_DEGRADE + 1, -EINVAL}};
	static const struct value_case indexes[] = {
	    {0, 0}, {LODE_LAYOUT_TARGETS_MAX - 1, 0}, {LODE_LAYOUT_TARGETS_MAX, -EINVAL}};

	(void)state;
	EXPECT_FIELD(LODE_OP_FSCK, NULL, struct lode_wire_fsck_req, what, whats);
	EXPECT_FIELD(LODE_OP_FSCK, NULL, struct lode_wire_fsck_req, max, maxes);
	EXPECT_FIELD(LODE_OP_FSCK_FIX, NULL, struct lode_wire_fsck_fix_req, action, actions);
	EXPECT_FIELD(LODE_OP_FSCK_FIX, NULL, struct lode_wire_fsck_fix_req, index, indexes);
}

static void test_scrub_requests_are_bounded(void **state)
{
	static const struct value_case actions[] = {{0, -EINVAL},
						    {LODE_SCRUB_START, 0},
						    {LODE_SCRUB_CANCEL, 0},
						    {LODE_SCRUB_CANCEL + 1, -EINVAL}};
	static const struct value_case maxes[] = {
	    {0, 0}, {1, 0}, {LODE_SCRUB_BAD_MAX, 0}, {LODE_SCRUB_BAD_MAX + 1, -EINVAL}};
	static const struct value_case bad[] = {{0, -EINVAL}, {1, 0}, {UINT32_MAX, 0}};

	(void)state;
	EXPECT_FIELD(LODE_OP_OBJ_SCRUB, NULL, struct lode_wire_scrub_req, action, actions);
	EXPECT_FIELD(LODE_OP_OBJ_SCRUB_STATUS, NULL, struct lode_wire_scrub_status_req, max, maxes);
	EXPECT_FIELD(LODE_OP_SCRUB_REPORT, NULL, struct lode_wire_scrub_report_req, bad_chunks,
		     bad);
}

static void test_backup_pages_are_bounded(void **state)
{
	static const struct value_case maxes[] = {
	    {0, -EINVAL}, {1, 0}, {LODE_BACKUP_PAGE_MAX, 0}, {LODE_BACKUP_PAGE_MAX + 1, -EINVAL}};

	(void)state;
	EXPECT_FIELD(LODE_OP_BACKUP_READ, NULL, struct lode_wire_backup_read_req, max, maxes);
}

static void test_moves_and_target_states_are_bounded(void **state)
{
	static const struct value_case phases[] = {{0, -EINVAL},
						   {LODE_MOVE_BEGIN, 0},
						   {LODE_MOVE_ABORT, 0},
						   {LODE_MOVE_ABORT + 1, -EINVAL}};
	static const struct value_case indexes[] = {
	    {0, 0}, {LODE_LAYOUT_TARGETS_MAX - 1, 0}, {LODE_LAYOUT_TARGETS_MAX, -EINVAL}};
	/* moving a copy onto the target it is on, or from or to no target, means nothing */
	static const struct value_case to[] = {{0, -EINVAL}, {1, -EINVAL}, {3, 0}};
	static const struct value_case admins[] = {
	    {LODE_TARGET_ACTIVE, 0}, {LODE_TARGET_REMOVED, 0}, {LODE_TARGET_REMOVED + 1, -EINVAL}};
	static const struct value_case ids[] = {{0, -EINVAL}, {1, 0}};
	static const struct value_case maxes[] = {
	    {0, -EINVAL}, {1, 0}, {LODE_OBJLIST_MAX, 0}, {LODE_OBJLIST_MAX + 1, -EINVAL}};
	static const struct value_case flags[] = {{0, 0}, {LODE_MOVE_LIST_OLD, 0}, {2, -EINVAL}};

	(void)state;
	EXPECT_FIELD(LODE_OP_MOVE, NULL, struct lode_wire_move_req, phase, phases);
	EXPECT_FIELD(LODE_OP_MOVE, NULL, struct lode_wire_move_req, index, indexes);
	EXPECT_FIELD(LODE_OP_MOVE, NULL, struct lode_wire_move_req, new_target, to);
	EXPECT_FIELD(LODE_OP_TARGET_STATE, NULL, struct lode_wire_target_state_req, admin, admins);
	EXPECT_FIELD(LODE_OP_TARGET_STATE, NULL, struct lode_wire_target_state_req, target_id, ids);
	EXPECT_FIELD(LODE_OP_MOVE_LIST, NULL, struct lode_wire_move_list_req, max, maxes);
	EXPECT_FIELD(LODE_OP_MOVE_LIST, NULL, struct lode_wire_move_list_req, flags, flags);
}

static void test_orphan_done_carries_whole_object_ids_up_to_a_page(void **state)
{
	static const struct value_case data[] = {
	    {0, 0},	   {72, 0},	  {24ull * LODE_OBJLIST_MAX, 0},
	    {23, -EPROTO}, {25, -EPROTO}, {24ull * (LODE_OBJLIST_MAX + 1), -EPROTO}};
	const struct lode_wire_orphan_req r = {.target_id = 1, .max = LODE_OBJLIST_MAX};
	uint32_t len = build(&r, sizeof(r), NULL, 0, NULL, 0);

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(data); i++) {
		struct lode_msg m;

		assert_int_equal(decode(LODE_OP_ORPHAN_DONE, len, data[i].v, &m), data[i].want);
		if (!data[i].want)
			assert_int_equal(m.count, data[i].v / sizeof(struct lode_wire_objid));
	}
	/* the same body is no LOOKUP */
	assert_int_equal(decode(LODE_OP_LOOKUP, len, 0, NULL), -EPROTO);
}

/* CLOSE_MANY: whole references, one to LODE_CLOSE_MANY_MAX of them, and no body. */
static void test_close_many_carries_one_to_the_most_whole_handles(void **state)
{
	const uint64_t ref = sizeof(struct lode_wire_close_ref);
	struct lode_msg m;

	(void)state;
	assert_int_equal(decode(LODE_OP_CLOSE_MANY, 0, ref, &m), 0);
	assert_int_equal(m.count, 1);
	assert_int_equal(decode(LODE_OP_CLOSE_MANY, 0, LODE_CLOSE_MANY_MAX * ref, &m), 0);
	assert_int_equal(m.count, LODE_CLOSE_MANY_MAX);
	assert_int_equal(decode(LODE_OP_CLOSE_MANY, 0, 0, NULL), -EPROTO);
	assert_int_equal(decode(LODE_OP_CLOSE_MANY, 0, ref + 8, NULL), -EPROTO);
	assert_int_equal(decode(LODE_OP_CLOSE_MANY, 0, (LODE_CLOSE_MANY_MAX + 1) * ref, NULL),
			 -EPROTO);
	assert_int_equal(decode(LODE_OP_CLOSE_MANY, 8, ref, NULL), -EPROTO);
}

static void test_xattr_value_comes_with_setxattr_only_and_up_to_its_limit(void **state)
{
	static const struct value_case data[] = {{0, 0},
						 {10, 0},
						 {LODE_XATTR_VALUE_MAX, 0},
						 {LODE_XATTR_VALUE_MAX + 1ull, -E2BIG},
						 {LODE_DATA_MAX, -E2BIG}};
	const struct req_case *c = req_case(LODE_OP_SETXATTR);
	uint32_t len = build_good(c);

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(data); i++)
		assert_int_equal(decode(LODE_OP_SETXATTR, len, data[i].v, NULL), data[i].want);
	/* GETXATTR, LISTXATTR, REMOVEXATTR: see test_every_request_without_bulk_data_... */
}

static void test_xattr_flags_belong_to_setxattr_and_listxattr_takes_no_name(void **state)
{
	static const struct value_case set[] = {
	    {0, 0}, {LODE_XATTR_CREATE, 0}, {LODE_XATTR_REPLACE, 0}, {0x4, -EINVAL}};
	static const struct value_case others[] = {
	    {0, 0}, {LODE_XATTR_CREATE, -EPROTO}, {LODE_XATTR_REPLACE, -EPROTO}};
	const struct lode_wire_xattr_req r = {.ino = 1, .name_len = 6};

	(void)state;
	EXPECT_FIELD(LODE_OP_SETXATTR, NULL, struct lode_wire_xattr_req, flags, set);
	EXPECT_FIELD(LODE_OP_GETXATTR, NULL, struct lode_wire_xattr_req, flags, others);
	EXPECT_FIELD(LODE_OP_LISTXATTR, NULL, struct lode_wire_xattr_req, flags, others);
	EXPECT_FIELD(LODE_OP_REMOVEXATTR, NULL, struct lode_wire_xattr_req, flags, others);
	assert_int_equal(
	    decode(LODE_OP_LISTXATTR, build(&r, sizeof(r), "user.a", 6, NULL, 0), 0, NULL),
	    -EPROTO);
	/* the same body is no LOOKUP */
	assert_int_equal(decode(LODE_OP_LOOKUP, sizeof(r) + 6, 0, NULL), -EPROTO);
}

static void test_report_copy_needs_an_inode_a_target_and_a_known_kind(void **state)
{
	static const struct value_case kinds[] = {{LODE_REPORT_WRITE_FAILED, 0},
						  {LODE_REPORT_BAD_DATA, 0},
						  {0, -EINVAL},
						  {3, -EINVAL},
						  {9, -EINVAL}};
	static const struct value_case nonzero[] = {{1, 0}, {0, -EPROTO}};

	(void)state;
	EXPECT_FIELD(LODE_OP_REPORT_COPY, NULL, struct lode_wire_report_req, kind, kinds);
	EXPECT_FIELD(LODE_OP_REPORT_COPY, NULL, struct lode_wire_report_req, ino, nonzero);
	EXPECT_FIELD(LODE_OP_REPORT_COPY, NULL, struct lode_wire_report_req, target_id, nonzero);
	/* length, reserved and data: the test_every_request_... tests */
}

static void test_set_copy_needs_an_index_in_the_layout_and_both_targets(void **state)
{
	static const struct value_case index[] = {{0, 0},
						  {LODE_LAYOUT_TARGETS_MAX - 1, 0},
						  {LODE_LAYOUT_TARGETS_MAX, -EINVAL},
						  {UINT32_MAX, -EINVAL}};
	static const struct value_case target[] = {{1, 0}, {UINT32_MAX, 0}, {0, -EINVAL}};
	static const struct value_case ino[] = {{1, 0}, {0, -EPROTO}};

	(void)state;
	EXPECT_FIELD(LODE_OP_LAYOUT_SET_COPY, NULL, struct lode_wire_set_copy_req, index, index);
	EXPECT_FIELD(LODE_OP_LAYOUT_SET_COPY, NULL, struct lode_wire_set_copy_req, old_target,
		     target);
	EXPECT_FIELD(LODE_OP_LAYOUT_SET_COPY, NULL, struct lode_wire_set_copy_req, new_target,
		     target);
	EXPECT_FIELD(LODE_OP_LAYOUT_SET_COPY, NULL, struct lode_wire_set_copy_req, ino, ino);
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

static void test_create_checks_its_flags_and_its_layout_markers(void **state)
{
	static const struct value_case flags[] = {
	    {LODE_OPEN_WRITE, 0},
	    {LODE_OPEN_WRITE | LODE_OPEN_CREATE | LODE_OPEN_EXCL, 0},
	    {LODE_OPEN_ALL_ & ~LODE_OPEN_EXCLUSIVE, 0},
	    {LODE_OPEN_WRITE | LODE_OPEN_EXCLUSIVE, -EINVAL}, /* OPEN's, not CREATE's */
	    {0x40, -EINVAL}};
	static const struct value_case markers[] = {{2, -EPROTO}, {UINT16_MAX, -EPROTO}};
	static const struct value_case targets_alone[] = {{1, -EINVAL}}; /* without a layout */

	(void)state;
	EXPECT_FIELD(LODE_OP_CREATE, NULL, struct lode_wire_create_req, flags, flags);
	EXPECT_FIELD(LODE_OP_CREATE, NULL, struct lode_wire_create_req, has_layout, markers);
	EXPECT_FIELD(LODE_OP_CREATE, NULL, struct lode_wire_create_req, has_targets, markers);
	EXPECT_FIELD(LODE_OP_CREATE, NULL, struct lode_wire_create_req, has_targets, targets_alone);
}

static int decode_create(const struct lode_wire_create_req *r)
{
	return decode(LODE_OP_CREATE, build_req(req_case(LODE_OP_CREATE), r, -1, NULL, 0), 0, NULL);
}

static void test_create_takes_a_layout_with_its_targets_or_with_none(void **state)
{
	struct lode_wire_create_req r = {.parent = 1, .mode = 0644, .flags = LODE_OPEN_WRITE};

	(void)state;
	r.has_layout = 1;
	r.has_targets = 1;
	r.layout = good_layout();
	assert_int_equal(decode_create(&r), 0);
	/* without has_targets the MDS chooses the targets: unused, they must be zero */
	r.has_targets = 0;
	assert_int_equal(decode_create(&r), -EINVAL);
	r.layout.stripe_count = 0;
	assert_int_equal(decode_create(&r), -EINVAL);
	r.layout = good_layout();
	r.layout.mirror_count = 0;
	assert_int_equal(decode_create(&r), -EINVAL);
	memset(r.layout.targets, 0, sizeof(r.layout.targets));
	r.layout.mirror_count = 2;
	assert_int_equal(decode_create(&r), 0);
	/* without a layout, the whole layout is unused */
	r.has_layout = 0;
	assert_int_equal(decode_create(&r), -EINVAL);
	memset(&r.layout, 0, sizeof(r.layout));
	assert_int_equal(decode_create(&r), 0);
}

/* Each layout is checked by lode_layout_check() and as a CREATE's layout with its targets. */
static void test_create_and_layout_check_refuse_each_bad_layout_field(void **state)
{
	static const struct {
		uint32_t stripe_size;
		uint16_t stripes, mirrors;
		unsigned targets; /* targets[0..targets) are set */
		unsigned stray;	  /* and targets[stray - 1], if not 0 */
		int want;
	} cases[] = {
	    {4 * CHUNK, 4, 2, 8, 0, 0},
	    {4 * CHUNK, 1, 1, 1, 0, 0},
	    {4 * CHUNK, 8, 8, 8, 0, 0}, /* 64 targets */
	    {1u << 30, 4, 2, 8, 0, 0},
	    {4 * CHUNK, 0, 2, 8, 0, -EINVAL},
	    {4 * CHUNK, 4, 0, 8, 0, -EINVAL},
	    {0, 4, 2, 8, 0, -EINVAL},
	    {CHUNK - 1, 4, 2, 8, 0, -EINVAL},
	    {CHUNK / 2, 4, 2, 8, 0, -EINVAL},
	    {CHUNK + 4096, 4, 2, 8, 0, -EINVAL},
	    {(1u << 30) + CHUNK, 4, 2, 8, 0, -EINVAL},
	    {4 * CHUNK, 13, 5, 8, 0, -EINVAL}, /* 65 targets */
	    {4 * CHUNK, 65, 1, 8, 0, -EINVAL},
	    {4 * CHUNK, UINT16_MAX, UINT16_MAX, 8, 0, -EINVAL}, /* the product must not wrap */
	    {4 * CHUNK, 1, 1, 1, 2, -EINVAL},			/* an unused target set */
	    {4 * CHUNK, 4, 2, 8, 9, -EINVAL},
	    {4 * CHUNK, 4, 2, 8, LODE_LAYOUT_TARGETS_MAX, -EINVAL},
	};
	struct lode_wire_create_req r = {
	    .parent = 1, .mode = 0644, .flags = LODE_OPEN_WRITE, .has_layout = 1, .has_targets = 1};

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		struct lode_wire_layout *l = &r.layout;

		memset(l, 0, sizeof(*l));
		l->stripe_size = cases[k].stripe_size;
		l->stripe_count = cases[k].stripes;
		l->mirror_count = cases[k].mirrors;
		l->generation = 1;
		for (unsigned i = 0; i < cases[k].targets; i++)
			l->targets[i] = i + 1;
		if (cases[k].stray)
			l->targets[cases[k].stray - 1] = 99;
		if (lode_layout_check(l) != cases[k].want || decode_create(&r) != cases[k].want)
			fail_msg("layout case %zu: want %d", k, cases[k].want);
	}
}

/* ---- objects ---- */

static void test_obj_read_checks_offset_length_and_flags(void **state)
{
	static const struct value_case flags[] = {
	    {0, 0}, {LODE_OBJ_READ_HELD, 0}, {2, -EPROTO}, {UINT32_MAX, -EPROTO}};
	static const struct value_case offsets[] = {
	    {0, 0}, {CHUNK, 0}, {1, -EINVAL}, {512, -EINVAL}, {CHUNK + 512, -EINVAL}};
	static const struct value_case lengths[] = {{1, 0},
						    {100, 0},
						    {LODE_DATA_MAX, 0},
						    {0, -EINVAL},
						    {LODE_DATA_MAX + 1, -EINVAL},
						    {UINT32_MAX, -EINVAL}};

	(void)state;
	EXPECT_FIELD(LODE_OP_OBJ_READ, NULL, struct lode_wire_obj_read_req, offset, offsets);
	EXPECT_FIELD(LODE_OP_OBJ_READ, NULL, struct lode_wire_obj_read_req, length, lengths);
	EXPECT_FIELD(LODE_OP_OBJ_READ, NULL, struct lode_wire_obj_read_req, flags, flags);
	/* an offset past int64: test_sizes_and_offsets_past_int64_max_are_too_big */
}

/* OBJ_WRITE body: struct + nsums checksums (0x1000, 0x1001, ...) */
static uint32_t build_write(uint64_t offset, uint32_t nchunks, uint32_t nsums, uint32_t flags)
{
	struct lode_wire_obj_write_req r = {
	    .obj = good_obj, .offset = offset, .flags = flags, .nchunks = nchunks};

	memset(body_mem.b, 0, sizeof(body_mem.b));
	memcpy(body_mem.b, &r, sizeof(r));
	for (uint32_t i = 0; i < nsums; i++)
		poke(body_mem.b + sizeof(r) + 8 * i, 8, 0x1000 + i);
	return (uint32_t)(sizeof(r) + 8ull * nsums);
}

/* Decodes the OBJ_WRITE in BODY: the checksums follow the struct, then the chain if any. */
static int dec_write(uint32_t len, uint64_t data_len)
{
	const struct lode_wire_obj_write_req *req;
	struct lode_msg m;
	int rc = decode(LODE_OP_OBJ_WRITE, len, data_len, &m);

	if (rc)
		return rc;
	req = m.fixed;
	assert_ptr_equal(m.sums, (const char *)BODY + sizeof(*req));
	for (uint32_t i = 0; i < req->nchunks; i++)
		assert_int_equal(m.sums[i], 0x1000 + i);
	if (req->flags & LODE_OBJ_F_CHAIN)
		assert_ptr_equal(m.chain, m.sums + req->nchunks);
	else
		assert_null(m.chain);
	return 0;
}

static void test_obj_write_checks_its_checksums_data_offset_and_flags(void **state)
{
	static const struct {
		uint64_t offset;
		uint32_t nchunks, nsums, flags;
		uint32_t cut; /* bytes taken off the body's end */
		uint64_t data_len;
		int want;
	} cases[] = {
	    /* one checksum per chunk, the last one partial */
	    {0, 1, 1, 0, 0, CHUNK, 0},
	    {CHUNK, 1, 1, LODE_OBJ_F_SYNC, 0, 100, 0},
	    {7ull * CHUNK, 3, 3, 0, 0, 2ull * CHUNK + 1, 0},
	    {0, 64, 64, 0, 0, LODE_DATA_MAX, 0},
	    {0, 2, 2, 0, 0, CHUNK, -EPROTO},
	    {0, 1, 1, 0, 0, CHUNK + 1, -EPROTO},
	    {0, 0, 0, 0, 0, 1, -EPROTO},
	    /* nchunks right, but the checksums in the body are not */
	    {0, 2, 1, 0, 0, 2 * CHUNK, -EPROTO},
	    {0, 2, 3, 0, 0, 2 * CHUNK, -EPROTO},
	    {0, 2, 2, 0, 1, 2 * CHUNK, -EPROTO},
	    {0, 1, 1, 0, 9, CHUNK, -EPROTO},
	    {0, 1, 1, 0, 41, 0, -EPROTO},
	    /* data: at least a byte, at most a frame's */
	    {0, 0, 0, 0, 0, 0, -EPROTO},
	    {0, 65, 65, 0, 0, LODE_DATA_MAX + 1ull, -EPROTO},
	    {0, 1, 1, 0, 0, UINT64_MAX, -EPROTO},
	    /* a chunk-aligned offset, the end within int64 */
	    {1, 1, 1, 0, 0, CHUNK, -EINVAL},
	    {CHUNK + 4096, 1, 1, 0, 0, 10, -EINVAL},
	    {CHUNK / 2, 1, 1, 0, 0, 10, -EINVAL},
	    {TOP_OFFSET - CHUNK, 1, 1, 0, 0, CHUNK, 0},
	    {TOP_OFFSET, 1, 1, 0, 0, CHUNK, -EFBIG},
	    {UINT64_MAX - CHUNK + 1, 1, 1, 0, 0, CHUNK, -EFBIG},
	    /* a merge starts anywhere: one checksum per chunk its bytes touch */
	    {1, 1, 1, LODE_OBJ_F_MERGE, 0, 1000, 0},
	    {CHUNK - 10, 2, 2, LODE_OBJ_F_MERGE, 0, 20, 0},
	    {CHUNK - 10, 1, 1, LODE_OBJ_F_MERGE, 0, 20, -EPROTO},
	    {CHUNK / 2, 65, 65, LODE_OBJ_F_MERGE, 0, LODE_DATA_MAX, 0},
	    {CHUNK / 2, 1, 1, LODE_OBJ_F_MERGE, 0, 0, -EPROTO},
	    {(uint64_t)INT64_MAX - 5, 2, 2, LODE_OBJ_F_MERGE, 0, 20, -EFBIG},
	    {0, 1, 1, LODE_OBJ_F_LAZY, 0, CHUNK, 0},
	    {0, 1, 1, LODE_OBJ_F_LAZY | LODE_OBJ_F_SYNC, 0, CHUNK, 0},
	    /* unknown flags */
	    {0, 1, 1, 0x10, 0, CHUNK, -EPROTO},
	    {0, 1, 1, 0x80000000u, 0, CHUNK, -EPROTO},
	};

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		uint32_t len =
		    build_write(cases[k].offset, cases[k].nchunks, cases[k].nsums, cases[k].flags);
		int rc = dec_write(len - cases[k].cut, cases[k].data_len);

		if (rc != cases[k].want)
			fail_msg("write case %zu: got %d, want %d", k, rc, cases[k].want);
	}
}

/* ---- forwarding chains ---- */

/* Appends a chain of n hops (targets 11, 12, ..., addresses "tcp://127.0.0.1:40000", ...) for
 * receiver `self` at body offset off; returns the body length. */
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

/* A chained fsync: the chain starts right after the object id. */
#define CF_CHAIN (sizeof(struct lode_wire_objid))
static uint32_t build_chained_fsync(unsigned hops)
{
	build(&good_obj, sizeof(good_obj), NULL, 0, NULL, 0);
	return put_chain(CF_CHAIN, 10, hops, 1000);
}

static int dec_fsync(uint32_t len, uint64_t data_len)
{
	struct lode_msg m;
	int rc = decode(LODE_OP_OBJ_FSYNC, len, data_len, &m);

	if (!rc)
		assert_ptr_equal(m.chain, len > CF_CHAIN ? (const char *)BODY + CF_CHAIN : NULL);
	return rc;
}

static void test_obj_write_accepts_a_chain_of_zero_to_the_most_hops(void **state)
{
	const struct lode_wire_chain *c;
	struct lode_msg m;

	(void)state;
	for (unsigned n = 0; n <= LODE_CHAIN_MAX; n++)
		assert_int_equal(dec_write(build_chained_write(n), CHUNK), 0);
	assert_int_equal(decode(LODE_OP_OBJ_WRITE, build_chained_write(2), CHUNK, &m), 0);
	c = m.chain;
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

static void test_obj_fsync_takes_a_plain_or_a_chained_body(void **state)
{
	uint32_t len;

	(void)state;
	assert_int_equal(dec_fsync(CF_CHAIN, 0), 0);
	assert_int_equal(dec_fsync(build_chained_fsync(0), 0), 0);
	assert_int_equal(dec_fsync(build_chained_fsync(LODE_CHAIN_MAX), 0), 0);
	assert_int_equal(dec_fsync(build_chained_fsync(2), 1), -EPROTO);
	/* bytes after the id that are no chain */
	assert_int_equal(dec_fsync(CF_CHAIN + 8, 0), -EPROTO);
	assert_int_equal(dec_fsync(build_chained_fsync(2) - 3, 0), -EPROTO);
	len = build_chained_fsync(1);
	((struct lode_wire_objid *)BODY)->ino = 0;
	assert_int_equal(dec_fsync(len, 0), -EPROTO);
}

#define HOP(i, f)                                                                                  \
	sizeof(struct lode_wire_chain) + (i) * sizeof(struct lode_wire_chain_hop) +                \
	    offsetof(struct lode_wire_chain_hop, f),                                               \
	    sizeof(((struct lode_wire_chain_hop *)0)->f)
#define HOP_ADDR(i, k)                                                                             \
	sizeof(struct lode_wire_chain) + (i) * sizeof(struct lode_wire_chain_hop) +                \
	    offsetof(struct lode_wire_chain_hop, addr) + (k),                                      \
	    1

/* Each case is one field of a chain of three hops (11, 12, 13, for receiver 10) changed: in a
 * chained OBJ_WRITE, in a chained OBJ_FSYNC, and the chain alone. */
static void test_chained_requests_check_every_field_of_their_chain(void **state)
{
	static const struct {
		uint16_t off;
		uint8_t size; /* 0: nothing changed */
		uint64_t v;
		int want;
	} cases[] = {
	    {0, 0, 0, 0}, /* nothing changed */
	    {AT(struct lode_wire_chain, reserved0), 1, -EPROTO},
	    {AT(struct lode_wire_chain, reserved1), 1, -EPROTO},
	    {HOP(1, reserved), 1, -EPROTO},
	    /* an address's padding: bytes after addr_len must be zero */
	    {HOP_ADDR(0, LODE_ADDR_MAX), 'x', -EPROTO},
	    {HOP(0, addr_len), sizeof("tcp://127.0.0.1:40000") - 2, -EPROTO}, /* a char cut off */
	    {HOP(1, target_id), 0, -EINVAL},
	    {HOP(1, addr_len), LODE_ADDR_MAX + 1, -EINVAL},
	    {HOP_ADDR(1, 3), '\0', -EINVAL}, /* a NUL inside the address */
	    {HOP_ADDR(1, 3), ' ', -EINVAL},
	    {HOP_ADDR(1, 3), 0x7f, -EINVAL},
	    {AT(struct lode_wire_chain, timeout_ms), 0, -EINVAL},
	    {AT(struct lode_wire_chain, timeout_ms), LODE_CHAIN_TIMEOUT_MAX + 1, -EINVAL},
	    {AT(struct lode_wire_chain, timeout_ms), LODE_CHAIN_TIMEOUT_MAX, 0},
	    /* a target twice, or the receiver again: the data would loop */
	    {HOP(2, target_id), 11, -ELOOP},
	    {HOP(0, target_id), 12, -ELOOP},
	    {HOP(1, target_id), 10, -ELOOP},
	    /* an unchecked receiver (self 0) with distinct hops is fine */
	    {AT(struct lode_wire_chain, self_target), 0, 0},
	};
	uint32_t len;

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		for (int fsync = 0; fsync < 2; fsync++) {
			const uint32_t at = fsync ? CF_CHAIN : CW_CHAIN;
			const uint32_t end =
			    fsync ? build_chained_fsync(3) : build_chained_write(3);
			const struct lode_wire_chain *c = SENT(struct lode_wire_chain);
			int rc;

			poke(body_mem.b + at + cases[k].off, cases[k].size, cases[k].v);
			rc = fsync ? dec_fsync(end, 0) : dec_write(end, CHUNK);
			if (rc != cases[k].want)
				fail_msg("chain case %zu in %s: got %d, want %d", k,
					 fsync ? "OBJ_FSYNC" : "OBJ_WRITE", rc, cases[k].want);
			rc = lode_dec_chain(body_mem.b + at, end - at, &c);
			assert_int_equal(rc, cases[k].want);
			assert_ptr_equal(c, rc ? SENTINEL : body_mem.b + at);
		}
	}
	/* an empty address, its padding zero */
	len = build_chained_write(2);
	hop_at(CW_CHAIN, 1)->addr_len = 0;
	memset(hop_at(CW_CHAIN, 1)->addr, 0, LODE_ADDR_MAX + 1);
	assert_int_equal(dec_write(len, CHUNK), -EINVAL);
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

static void test_a_target_list_is_whole_only_with_as_many_records_as_its_count(void **state)
{
	struct lode_wire_target *second = (struct lode_wire_target *)(void *)(page_mem.b + 72);
	size_t len = two_targets();

	(void)state;
	assert_int_equal(lode_target_list_check(page_mem.b, len, 2), 0);
	assert_int_equal(lode_target_list_check(page_mem.b, len, 1), -EPROTO);
	assert_int_equal(lode_target_list_check(page_mem.b, len, 3), -EPROTO);
	assert_int_equal(lode_target_list_check(page_mem.b, 0, 0), 0);
	assert_int_equal(lode_target_list_check(page_mem.b, 72, 1), 0);
	assert_int_equal(lode_target_list_check(page_mem.b, len - 1, 2), -EPROTO); /* cut */
	second->state = 9; /* the first record is good, the second is not */
	assert_int_equal(lode_target_list_check(page_mem.b, len, 2), -EPROTO);
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

static void test_obj_read_rep_carries_a_checksum_per_chunk_and_no_more_than_asked(void **state)
{
	static const struct {
		uint32_t nchunks, nsums, cut; /* cut: bytes taken off the body's end */
		uint64_t data_len;
		uint32_t length; /* asked for */
		int want;
	} cases[] = {
	    {0, 0, 0, 0, CHUNK, 0},
	    {1, 1, 0, 100, CHUNK, 0},
	    {2, 2, 0, 2 * CHUNK, 2 * CHUNK, 0},
	    /* data longer than asked for */
	    {1, 1, 0, 101, 100, -EPROTO},
	    {2, 2, 0, CHUNK + 1, CHUNK, -EPROTO},
	    {1, 1, 0, 1, 0, -EPROTO},
	    /* checksums not matching the data */
	    {2, 2, 0, CHUNK, CHUNK, -EPROTO},
	    {1, 2, 0, CHUNK, CHUNK, -EPROTO},
	    {1, 0, 0, CHUNK, CHUNK, -EPROTO},
	    {0, 0, 1, 0, CHUNK, -EPROTO},
	};

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		const struct lode_wire_obj_read_rep *rep = SENT(struct lode_wire_obj_read_rep);
		const uint64_t *sums = SENT(uint64_t);
		uint32_t len = build_read_rep(cases[k].nchunks, cases[k].nsums) - cases[k].cut;
		int rc = lode_dec_obj_read_rep(BODY, len, cases[k].data_len, cases[k].length, &rep,
					       &sums);

		if (rc != cases[k].want)
			fail_msg("read reply case %zu: got %d, want %d", k, rc, cases[k].want);
		assert_ptr_equal(rep, rc ? SENTINEL : BODY);
		assert_ptr_equal(sums, rc ? SENTINEL : (const char *)BODY + 16);
	}
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

/* What a decoded request points at lies inside its body; a chain ends it. */
static void expect_msg_inside(const struct lode_msg *m, const unsigned char *body, uint32_t len)
{
	for (int i = 0; i < 2; i++)
		if (m->name[i].ptr)
			expect_name_inside(&m->name[i], body, len);
	if (m->sums)
		assert_true((const unsigned char *)m->sums +
				8 * ((const struct lode_wire_obj_write_req *)m->fixed)->nchunks <=
			    body + len);
	if (m->chain)
		assert_true((const unsigned char *)m->chain + lode_chain_size(m->chain->count) ==
			    body + len);
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
	default: { /* a well-formed request of the table above, mutated */
		const struct req_case *c = &reqs[rnd() % ARRAY_SIZE(reqs)];
		int flips = (int)(rnd() % 4);

		len = build_good(c);
		for (int i = 0; i < flips && len; i++)
			body_mem.b[rnd() % len] = (unsigned char)rnd();
		if (rnd() % 4 == 0)
			len = (uint32_t)((int)len + (int)(rnd() % 17) - 8);
		if (len > cap)
			len = 0;
		memcpy(out, body_mem.b, len);
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
		struct lode_msg m;
		struct lode_name n1;
		const void *p, *q;
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
		/* every request opcode, then one at random (most of them unknown) */
		for (size_t k = 0; k <= ARRAY_SIZE(reqs); k++) {
			uint8_t op = k < ARRAY_SIZE(reqs) ? reqs[k].op : (uint8_t)rnd();

			CHECK(lode_msg_decode(op, body, len, dl, &m), lode_op_name(op));
			if (!rc)
				expect_msg_inside(&m, body, len);
		}
		CHECK(lode_dec_chain(body, len, &ch), "chain");
		CHECK(lode_dec_obj_chain_rep(body, len, (unsigned)(rnd() % 10),
					     (const struct lode_wire_obj_chain_rep **)&p),
		      "obj_chain_rep");
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

static void test_target_next_rejects_a_record_with_non_zero_reserved_or_unknown_states(void **state)
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
	first->admin = LODE_TARGET_REMOVED + 1; /* no such state */
	pos = 0;
	assert_int_equal(lode_target_next(page_mem.b, len, &pos, &t, &a), -EPROTO);
	first->admin = LODE_TARGET_DRAINING;
	for (uint32_t s = 0; s < 5; s++) {
		first->state = s;
		pos = 0;
		assert_int_equal(lode_target_next(page_mem.b, len, &pos, &t, &a),
				 s == LODE_TARGET_UP || s == LODE_TARGET_DOWN ? 1 : -EPROTO);
	}
	first->state = LODE_TARGET_DOWN;
	first->target_id = 0; /* no target has id 0 */
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
	    cmocka_unit_test(
		test_target_next_rejects_a_record_with_non_zero_reserved_or_unknown_states),
	    cmocka_unit_test(test_obj_read_rep_rejects_non_zero_reserved),
	};
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hdr_check_accepts_a_well_formed_request_and_reply),
	    cmocka_unit_test(test_hdr_check_rejects_an_unknown_opcode),
	    cmocka_unit_test(test_hdr_check_rejects_each_malformed_field),
	    cmocka_unit_test(test_hdr_bounds_follow_each_opcodes_row),
	    cmocka_unit_test(test_status_round_trips_every_wire_errno),
	    cmocka_unit_test(test_status_maps_unknown_codes_to_eio),
	    cmocka_unit_test(test_status_zero_is_never_an_error_and_an_error_is_never_zero),
	    cmocka_unit_test(test_every_known_opcode_has_a_request_case_and_no_other_decodes),
	    cmocka_unit_test(test_every_request_decodes_its_well_formed_body_in_place),
	    cmocka_unit_test(test_every_request_refuses_a_body_shorter_or_longer_than_its_parts),
	    cmocka_unit_test(test_every_request_refuses_a_name_length_that_does_not_match_its_body),
	    cmocka_unit_test(test_every_request_without_bulk_data_refuses_data),
	    cmocka_unit_test(
		test_every_request_refuses_a_reserved_field_set_or_a_required_one_zero),
	    cmocka_unit_test(test_a_cred_refuses_too_many_groups_or_stray_ones),
	    cmocka_unit_test(test_hdr_check_takes_a_capability_only_on_object_data_requests),
	    cmocka_unit_test(test_hdr_check_takes_lazy_only_on_namespace_changes),
	    cmocka_unit_test(test_hdr_check_takes_grants_only_where_a_name_is_added),
	    cmocka_unit_test(test_every_path_component_in_a_request_obeys_the_name_rules),
	    cmocka_unit_test(test_symlink_targets_addresses_and_xattr_names_follow_their_own_rules),
	    cmocka_unit_test(test_auth_accepts_the_steps_roles_and_flags_it_knows),
	    cmocka_unit_test(test_each_opcode_row_names_the_roles_that_may_send_it),
	    cmocka_unit_test(test_hello_accepts_both_roles_and_rejects_others),
	    cmocka_unit_test(test_modes_carry_permission_bits_only),
	    cmocka_unit_test(test_mknod_takes_special_types_only),
	    cmocka_unit_test(test_a_commit_carries_blocks_only_with_the_size),
	    cmocka_unit_test(test_obj_allocate_takes_a_non_empty_range_inside_int64),
	    cmocka_unit_test(test_sizes_and_offsets_past_int64_max_are_too_big),
	    cmocka_unit_test(test_setattr_checks_valid_bits_and_only_the_fields_they_name),
	    cmocka_unit_test(test_open_accepts_reads_writes_and_truncating_writes_only),
	    cmocka_unit_test(test_commit_and_close_take_renew_set_or_extend),
	    cmocka_unit_test(test_rename_refuses_unknown_and_contradictory_flags),
	    cmocka_unit_test(test_listings_ask_for_one_to_the_most_entries_and_readdir_for_attrs),
	    cmocka_unit_test(test_orphan_done_carries_whole_object_ids_up_to_a_page),
	    cmocka_unit_test(test_fsck_pages_and_fixes_are_bounded),
	    cmocka_unit_test(test_scrub_requests_are_bounded),
	    cmocka_unit_test(test_backup_pages_are_bounded),
	    cmocka_unit_test(test_moves_and_target_states_are_bounded),
	    cmocka_unit_test(test_close_many_carries_one_to_the_most_whole_handles),
	    cmocka_unit_test(test_xattr_value_comes_with_setxattr_only_and_up_to_its_limit),
	    cmocka_unit_test(test_xattr_flags_belong_to_setxattr_and_listxattr_takes_no_name),
	    cmocka_unit_test(test_report_copy_needs_an_inode_a_target_and_a_known_kind),
	    cmocka_unit_test(test_set_copy_needs_an_index_in_the_layout_and_both_targets),
	    cmocka_unit_test(test_create_checks_its_flags_and_its_layout_markers),
	    cmocka_unit_test(test_create_takes_a_layout_with_its_targets_or_with_none),
	    cmocka_unit_test(test_create_and_layout_check_refuse_each_bad_layout_field),
	    cmocka_unit_test(test_obj_read_checks_offset_length_and_flags),
	    cmocka_unit_test(test_obj_write_checks_its_checksums_data_offset_and_flags),
	    cmocka_unit_test(test_obj_write_accepts_a_chain_of_zero_to_the_most_hops),
	    cmocka_unit_test(test_obj_write_rejects_a_chain_of_the_wrong_shape),
	    cmocka_unit_test(test_obj_fsync_takes_a_plain_or_a_chained_body),
	    cmocka_unit_test(test_chained_requests_check_every_field_of_their_chain),
	    cmocka_unit_test(test_obj_chain_rep_accepts_one_status_per_copy_and_nothing_else),
	    cmocka_unit_test(test_readdir_next_walks_well_formed_records),
	    cmocka_unit_test(test_readdir_next_rejects_a_record_cut_short),
	    cmocka_unit_test(test_readdir_next_rejects_a_name_length_past_the_end),
	    cmocka_unit_test(test_readdir_next_rejects_a_record_with_a_bad_name),
	    cmocka_unit_test(test_readdir_rep_counts_the_records_it_announces),
	    cmocka_unit_test(test_readdirplus_records_carry_matching_attributes),
	    cmocka_unit_test(test_target_next_walks_well_formed_records),
	    cmocka_unit_test(test_target_next_rejects_truncated_and_malformed_records),
	    cmocka_unit_test(test_a_target_list_is_whole_only_with_as_many_records_as_its_count),
	    cmocka_unit_test(test_obj_read_rep_carries_a_checksum_per_chunk_and_no_more_than_asked),
	    cmocka_unit_test(test_chunk_sum_counts_bytes_past_the_end_as_zero),
	    cmocka_unit_test(test_chunk_sum_of_a_longer_buffer_covers_one_chunk),
	    cmocka_unit_test(test_chunk_sum_avx2_equals_libxxhash),
	    cmocka_unit_test(test_buf_put_fails_sticky_once_full),
	    cmocka_unit_test(test_decoders_never_crash_on_random_bodies),
	};

	int failed;

	(void)argc;
	(void)argv;
	failed = cmocka_run_group_tests(tests, setup_names, NULL);
	failed += cmocka_run_group_tests_name("regressions", regressions, setup_names, NULL);
	return failed ? 1 : 0;
}
