/* SPDX-License-Identifier: MIT */
/*
 * The message table: one row per opcode, saying what a request body looks like, and the one
 * decoder that walks it.
 *
 * A row gives the fixed struct's size, the names that follow it (where each one's length
 * field sits in the struct, and what kind of name it is), the reserved fields that must be
 * zero, what bulk data the opcode may carry, and an optional check of the values that only
 * that opcode knows (flags, modes, ranges, what follows the struct when it is not names).
 * lode_msg_decode() applies them in that order, so a frame is checked the same way whatever
 * its opcode: shape first (-EPROTO), then names, then values.
 *
 * A new opcode is its structs in wire_spec.h, one row here, and one row in the table of the
 * server that answers it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "codec.h"

/* What a name that follows the fixed struct may hold. */
enum name_kind {
	NAME_ENTRY = 1, /* a path component: lode_name_check */
	NAME_XATTR,	/* an xattr name: lode_xattr_name_check */
	NAME_EMPTY,	/* the length field must be 0 (LISTXATTR) */
	NAME_SYMLINK,	/* a symlink target: 1..LODE_SYMLINK_MAX bytes, no NUL */
	NAME_ADDR,	/* a server address: 1..LODE_ADDR_MAX bytes, no NUL */
};

/* What bulk data may follow the body. */
enum data_kind {
	DATA_NONE,	 /* none: data_len 0 */
	DATA_XATTR,	 /* an xattr value, <= LODE_XATTR_VALUE_MAX (-E2BIG) */
	DATA_OBJIDS,	 /* whole lode_wire_objid records, at most LODE_OBJLIST_MAX */
	DATA_OBJECT,	 /* object bytes: 1..LODE_DATA_MAX */
	DATA_CLOSE_REFS, /* 1..LODE_CLOSE_MANY_MAX whole lode_wire_close_ref records */
};

struct msg_spec {
	const char *name;
	uint16_t fixed; /* bytes of the opcode's fixed struct */
	uint8_t data;	/* enum data_kind */
	uint8_t rest;	/* 1: check() validates what follows the struct (no names) */
	struct {
		uint16_t len_off; /* offset of the u16 length field in the struct */
		uint8_t kind;	  /* enum name_kind; 0 ends the list */
	} names[2];
	struct {
		uint16_t off;
		uint8_t size; /* 0 ends the list */
	} zero[3];
	uint16_t cred; /* 1 + offset of the struct's lode_wire_cred; 0: it has none */
	/* Values only this opcode knows. body_len is the whole body's. Returns 0 or -errno. */
	int (*check)(struct lode_msg *m, uint32_t body_len, uint64_t data_len);
	/* Roles whose connections may send it (LODE_ROLE_BIT of LODE_ROLE_*); 0: clients and
	 * admins, what most opcodes allow. Enforced by the server (proto/net/server.c). */
	uint8_t roles;
};

#define RB(r)	 (1u << (r))
#define R_ANY	 (RB(LODE_ROLE_CLIENT) | RB(LODE_ROLE_OSS) | RB(LODE_ROLE_ADMIN))
#define R_TARGET RB(LODE_ROLE_OSS)
#define R_ADMIN	 RB(LODE_ROLE_ADMIN)
#define R_USER	 (RB(LODE_ROLE_CLIENT) | RB(LODE_ROLE_ADMIN))

#define NAME(T, f, k)                                                                              \
	{                                                                                          \
		offsetof(T, f), k                                                                  \
	}
#define CRED(T) .cred = offsetof(T, cred) + 1
#define ZERO(T, f)                                                                                 \
	{                                                                                          \
		offsetof(T, f), sizeof(((T *)0)->f)                                                \
	}

/* A cred's group list: ngroups within bounds, unused slots and reserved zero. */
static int cred_ok(const struct lode_wire_cred *c)
{
	struct lode_wire_cred v;

	memcpy(&v, c, sizeof(v)); /* the body is not necessarily aligned for it */
	if (v.reserved || v.ngroups > LODE_CRED_GROUPS_MAX)
		return -EPROTO;
	for (unsigned i = v.ngroups; i < LODE_CRED_GROUPS_MAX; i++)
		if (v.groups[i])
			return -EPROTO;
	return 0;
}

/* ---- the values each opcode checks ---- */

static int check_hello(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_hello_req *r = m->fixed;

	(void)blen, (void)dlen;
	return r->role == LODE_ROLE_CLIENT || r->role == LODE_ROLE_OSS ? 0 : -EINVAL;
}

bool lode_group_name_ok(const char *name)
{
	size_t n = strnlen(name, LODE_GROUP_NAME_MAX);

	if (n == 0 || n >= LODE_GROUP_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '_' || name[i] == '-'))
			return false;
	return true;
}

static int check_auth(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_auth_req *r = m->fixed;

	(void)blen, (void)dlen;
	if ((r->step != 1 && r->step != 2) || r->flags & ~LODE_AUTH_F_NOKEY)
		return -EINVAL;
	if (r->role < LODE_ROLE_CLIENT || r->role > LODE_ROLE_ADMIN)
		return -EINVAL;
	if (r->step == 1 && r->group[0]) {
		/* a client group: a name, NUL padded to the end, and only for a client */
		size_t n = strnlen(r->group, sizeof(r->group));

		if (!lode_group_name_ok(r->group) || r->role != LODE_ROLE_CLIENT)
			return -EINVAL;
		for (size_t i = n; i < sizeof(r->group); i++)
			if (r->group[i])
				return -EPROTO;
	} else if (r->step == 1) {
		for (size_t i = 0; i < sizeof(r->group); i++)
			if (r->group[i])
				return -EPROTO;
	}
	return 0;
}

static int check_setattr(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_setattr_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (r->valid & ~LODE_SETATTR_ALL_)
		return -EINVAL;
	if ((r->valid & LODE_SETATTR_MODE) && (r->mode & ~07777u))
		return -EINVAL;
	if ((r->valid & LODE_SETATTR_SIZE) && r->size > (uint64_t)INT64_MAX)
		return -EFBIG;
	return 0;
}

static int check_create(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_create_req *r = m->fixed;
	struct lode_wire_layout l;

	(void)blen, (void)dlen;
	if (r->has_layout > 1 || r->has_targets > 1)
		return -EPROTO;
	/* a new file has no other writer to exclude: LODE_OPEN_EXCLUSIVE is OPEN's */
	if ((r->flags & ~(LODE_OPEN_ALL_ & ~LODE_OPEN_EXCLUSIVE)) || (r->mode & ~07777u))
		return -EINVAL;
	if (r->has_targets && !r->has_layout)
		return -EINVAL;
	if (!r->has_layout) {
		static const struct lode_wire_layout zero;

		/* unused means zero, like any reserved field */
		return memcmp(&r->layout, &zero, sizeof(zero)) ? -EINVAL : 0;
	}
	l = r->layout;
	if (!r->has_targets) {
		for (unsigned i = 0; i < LODE_LAYOUT_TARGETS_MAX; i++)
			if (l.targets[i])
				return -EINVAL;
	}
	return lode_layout_check(&l);
}

static int check_open(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	uint32_t f = ((const struct lode_wire_open_req *)m->fixed)->flags;

	(void)blen, (void)dlen;
	if (f & ~(LODE_OPEN_READ | LODE_OPEN_WRITE | LODE_OPEN_TRUNC | LODE_OPEN_EXCLUSIVE))
		return -EINVAL;
	if ((f & LODE_OPEN_EXCLUSIVE) && !(f & LODE_OPEN_WRITE))
		return -EINVAL;
	if (!(f & (LODE_OPEN_READ | LODE_OPEN_WRITE)))
		return -EINVAL;
	if ((f & LODE_OPEN_TRUNC) && !(f & LODE_OPEN_WRITE))
		return -EINVAL;
	return 0;
}

static int check_commit(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_commit_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (r->commit > LODE_COMMIT_EXTEND || (!r->commit && r->blocks_p1))
		return -EPROTO;
	return r->size > (uint64_t)INT64_MAX ? -EFBIG : 0;
}

static int check_mode(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	(void)blen, (void)dlen;
	return ((const struct lode_wire_mkdir_req *)m->fixed)->mode & ~07777u ? -EINVAL : 0;
}

static int check_mknod(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_mknod_req *r = m->fixed;
	uint32_t type = r->mode & S_IFMT;

	(void)blen, (void)dlen;
	if (r->mode & ~(S_IFMT | 07777u))
		return -EINVAL;
	if (type != S_IFIFO && type != S_IFSOCK && type != S_IFCHR && type != S_IFBLK)
		return -EINVAL;
	return 0;
}

static int check_rename(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	uint32_t f = ((const struct lode_wire_rename_req *)m->fixed)->flags;

	(void)blen, (void)dlen;
	if (f & ~(LODE_RENAME_NOREPLACE | LODE_RENAME_EXCHANGE))
		return -EINVAL;
	return f == (LODE_RENAME_NOREPLACE | LODE_RENAME_EXCHANGE) ? -EINVAL : 0;
}

static int check_readdir(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_readdir_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (r->flags & ~LODE_READDIR_ATTRS)
		return -EPROTO;
	return r->max_entries == 0 || r->max_entries > LODE_READDIR_MAX ? -EINVAL : 0;
}

static int check_setxattr(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	uint32_t f = ((const struct lode_wire_xattr_req *)m->fixed)->flags;

	(void)blen, (void)dlen;
	return f & ~(LODE_XATTR_CREATE | LODE_XATTR_REPLACE) ? -EINVAL : 0;
}

static int check_no_xattr_flags(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	(void)blen, (void)dlen;
	return ((const struct lode_wire_xattr_req *)m->fixed)->flags ? -EPROTO : 0;
}

static int check_orphan_list(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	uint32_t max = ((const struct lode_wire_orphan_req *)m->fixed)->max;

	(void)blen, (void)dlen;
	return max == 0 || max > LODE_OBJLIST_MAX ? -EINVAL : 0;
}

static int check_fsck(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_fsck_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (r->what < LODE_FSCK_NAMESPACE || r->what > LODE_FSCK_PATH)
		return -EINVAL;
	return r->max == 0 || r->max > LODE_FSCK_MAX ? -EINVAL : 0;
}

static int check_fsck_fix(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_fsck_fix_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (r->action < LODE_FSCK_FIX_NLINK || r->action > LODE_FSCK_FIX_DEGRADE)
		return -EINVAL;
	if (r->index >= LODE_LAYOUT_TARGETS_MAX)
		return -EINVAL;
	return 0;
}

static int check_backup_read(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_backup_read_req *r = m->fixed;

	(void)blen, (void)dlen;
	return r->max == 0 || r->max > LODE_BACKUP_PAGE_MAX ? -EINVAL : 0;
}

static int check_report(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_report_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (r->ino == 0 || r->target_id == 0)
		return -EPROTO;
	if (r->kind != LODE_REPORT_WRITE_FAILED && r->kind != LODE_REPORT_BAD_DATA)
		return -EINVAL;
	return 0;
}

static int check_set_copy(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_set_copy_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (r->ino == 0)
		return -EPROTO;
	if (r->index >= LODE_LAYOUT_TARGETS_MAX || !r->old_target || !r->new_target)
		return -EINVAL;
	return 0;
}

static int check_scrub_report(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_scrub_report_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (r->obj.ino == 0 || r->obj.reserved || r->target_id == 0)
		return -EPROTO;
	return r->bad_chunks == 0 ? -EINVAL : 0;
}

static int check_scrub(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_scrub_req *r = m->fixed;

	(void)blen, (void)dlen;
	return r->action != LODE_SCRUB_START && r->action != LODE_SCRUB_CANCEL ? -EINVAL : 0;
}

static int check_scrub_status(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_scrub_status_req *r = m->fixed;

	(void)blen, (void)dlen;
	return r->max > LODE_SCRUB_BAD_MAX ? -EINVAL : 0;
}

static int check_move(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_move_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (r->ino == 0)
		return -EPROTO;
	if (r->phase < LODE_MOVE_BEGIN || r->phase > LODE_MOVE_ABORT)
		return -EINVAL;
	if (r->index >= LODE_LAYOUT_TARGETS_MAX || !r->new_target)
		return -EINVAL;
	if (r->phase != LODE_MOVE_ABORT && (!r->old_target || r->old_target == r->new_target))
		return -EINVAL;
	return 0;
}

static int check_target_state(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_target_state_req *r = m->fixed;

	(void)blen, (void)dlen;
	return r->target_id == 0 || r->admin > LODE_TARGET_REMOVED ? -EINVAL : 0;
}

static int check_move_list(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_move_list_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (r->flags & ~LODE_MOVE_LIST_OLD)
		return -EINVAL;
	return r->max == 0 || r->max > LODE_OBJLIST_MAX ? -EINVAL : 0;
}

/* Object ids: ino is never 0 and reserved is 0; the OBJ_* structs start with one. */
static int objid_ok(const struct lode_wire_objid *o)
{
	return o->reserved == 0 && o->ino != 0;
}

static int check_objid(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	(void)blen, (void)dlen;
	return objid_ok(m->fixed) ? 0 : -EPROTO;
}

static int check_cap_get(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_cap_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (!r->ino)
		return -EPROTO;
	return r->rights && !(r->rights & ~LODE_CAP_ALL_) ? 0 : -EINVAL;
}

/* OBJ_WRITE: nchunks checksums follow the struct, then a chain with LODE_OBJ_F_CHAIN. */
static int check_obj_write(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_obj_write_req *r = m->fixed;
	uint64_t nchunks = (dlen + LODE_CHUNK_SIZE - 1) / LODE_CHUNK_SIZE;
	uint64_t fixed, head;
	int rc;

	if (!objid_ok(&r->obj) || (r->flags & ~LODE_OBJ_F_ALL_))
		return -EPROTO;
	if (r->flags & LODE_OBJ_F_MERGE) {
		/* the chunks the bytes touch, wherever they start */
		if (!dlen)
			return -EPROTO;
		head = r->offset % LODE_CHUNK_SIZE;
		nchunks = (head + dlen + LODE_CHUNK_SIZE - 1) / LODE_CHUNK_SIZE;
	}
	fixed = sizeof(*r) + nchunks * sizeof(uint64_t);
	if (r->nchunks != nchunks || blen < fixed)
		return -EPROTO;
	if (r->flags & LODE_OBJ_F_CHAIN) {
		rc = lode_dec_chain((const char *)r + fixed, blen - fixed, &m->chain);
		if (rc)
			return rc;
	} else if (blen != fixed) {
		return -EPROTO;
	}
	if (r->offset % LODE_CHUNK_SIZE && !(r->flags & LODE_OBJ_F_MERGE))
		return -EINVAL;
	if (r->offset > (uint64_t)INT64_MAX - dlen)
		return -EFBIG;
	m->sums = (const uint64_t *)(r + 1);
	return 0;
}

static int check_obj_read(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_obj_read_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (!objid_ok(&r->obj) || (r->flags & ~LODE_OBJ_READ_ALL_))
		return -EPROTO;
	if (r->offset % LODE_CHUNK_SIZE || r->length == 0 || r->length > LODE_DATA_MAX)
		return -EINVAL;
	return r->offset > (uint64_t)INT64_MAX - r->length ? -EFBIG : 0;
}

static int check_obj_truncate(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_obj_truncate_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (!objid_ok(&r->obj))
		return -EPROTO;
	return r->size > (uint64_t)INT64_MAX ? -EFBIG : 0;
}

/* OBJ_FSYNC: an objid, then a forwarding chain when the body is longer. */
static int check_obj_fsync(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_objid *o = m->fixed;

	(void)dlen;
	if (!objid_ok(o))
		return -EPROTO;
	if (blen == sizeof(*o))
		return 0;
	return lode_dec_chain(o + 1, blen - sizeof(*o), &m->chain);
}

static int check_obj_allocate(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_obj_allocate_req *r = m->fixed;

	(void)blen, (void)dlen;
	if (!objid_ok(&r->obj))
		return -EPROTO;
	if (r->length == 0)
		return -EINVAL;
	return r->offset > (uint64_t)INT64_MAX || r->length > (uint64_t)INT64_MAX - r->offset
		   ? -EFBIG
		   : 0;
}

static int check_obj_list(struct lode_msg *m, uint32_t blen, uint64_t dlen)
{
	const struct lode_wire_obj_list_req *r = m->fixed;

	(void)blen, (void)dlen;
	return r->max == 0 || r->max > LODE_OBJLIST_MAX ? -EINVAL : 0;
}

/* ---- the table ---- */

#define LOOKUP_LIKE(nm)                                                                            \
	{                                                                                          \
		.name = nm, .fixed = sizeof(struct lode_wire_lookup_req),                          \
		.names = {NAME(struct lode_wire_lookup_req, name_len, NAME_ENTRY)},                \
		CRED(struct lode_wire_lookup_req),                                                 \
		.zero = {ZERO(struct lode_wire_lookup_req, reserved0),                             \
			 ZERO(struct lode_wire_lookup_req, reserved1)},                            \
	}
#define BY_INO(nm)                                                                                 \
	{                                                                                          \
		.name = nm, .fixed = sizeof(struct lode_wire_getattr_req)                          \
	}
#define XATTR(nm, k, ck, d)                                                                        \
	{                                                                                          \
		.name = nm, .fixed = sizeof(struct lode_wire_xattr_req), .data = d,                \
		.names = {NAME(struct lode_wire_xattr_req, name_len, k)},                          \
		CRED(struct lode_wire_xattr_req),                                                  \
		.zero = {ZERO(struct lode_wire_xattr_req, reserved0),                              \
			 ZERO(struct lode_wire_xattr_req, reserved1)},                             \
		.check = ck,                                                                       \
	}
#define COMMIT_LIKE(nm)                                                                            \
	{                                                                                          \
		.name = nm, .fixed = sizeof(struct lode_wire_commit_req),                          \
		.zero = {ZERO(struct lode_wire_commit_req, reserved)}, .check = check_commit,      \
	}
#define OBJID(nm, r)                                                                               \
	{                                                                                          \
		.name = nm, .fixed = sizeof(struct lode_wire_objid), .check = check_objid,         \
		.roles = r                                                                         \
	}

static const struct msg_spec msgs[LODE_OP_MAX_] = {
    [LODE_OP_HELLO] = {.name = "HELLO",
		       .fixed = sizeof(struct lode_wire_hello_req),
		       .zero = {ZERO(struct lode_wire_hello_req, reserved)},
		       .check = check_hello,
		       .roles = R_ANY},
    [LODE_OP_PING] = {.name = "PING", .roles = R_ANY},
    [LODE_OP_AUTH] = {.name = "AUTH",
		      .fixed = sizeof(struct lode_wire_auth_req),
		      .zero = {ZERO(struct lode_wire_auth_req, reserved)},
		      .check = check_auth,
		      .roles = R_ANY},
    [LODE_OP_LOOKUP] = LOOKUP_LIKE("LOOKUP"),
    [LODE_OP_GETATTR] = BY_INO("GETATTR"),
    [LODE_OP_SETATTR] = {.name = "SETATTR",
			 .fixed = sizeof(struct lode_wire_setattr_req),
			 CRED(struct lode_wire_setattr_req),
			 .check = check_setattr},
    [LODE_OP_CREATE] = {.name = "CREATE",
			.fixed = sizeof(struct lode_wire_create_req),
			CRED(struct lode_wire_create_req),
			.names = {NAME(struct lode_wire_create_req, name_len, NAME_ENTRY)},
			.zero = {ZERO(struct lode_wire_create_req, reserved)},
			.check = check_create},
    [LODE_OP_MKDIR] = {.name = "MKDIR",
		       .fixed = sizeof(struct lode_wire_mkdir_req),
		       CRED(struct lode_wire_mkdir_req),
		       .names = {NAME(struct lode_wire_mkdir_req, name_len, NAME_ENTRY)},
		       .zero = {ZERO(struct lode_wire_mkdir_req, reserved)},
		       .check = check_mode},
    [LODE_OP_UNLINK] = LOOKUP_LIKE("UNLINK"),
    [LODE_OP_RMDIR] = LOOKUP_LIKE("RMDIR"),
    [LODE_OP_RENAME] = {.name = "RENAME",
			.fixed = sizeof(struct lode_wire_rename_req),
			CRED(struct lode_wire_rename_req),
			.names = {NAME(struct lode_wire_rename_req, old_name_len, NAME_ENTRY),
				  NAME(struct lode_wire_rename_req, new_name_len, NAME_ENTRY)},
			.check = check_rename},
    [LODE_OP_LINK] = {.name = "LINK",
		      .fixed = sizeof(struct lode_wire_link_req),
		      CRED(struct lode_wire_link_req),
		      .names = {NAME(struct lode_wire_link_req, name_len, NAME_ENTRY)},
		      .zero = {ZERO(struct lode_wire_link_req, reserved0),
			       ZERO(struct lode_wire_link_req, reserved1)}},
    [LODE_OP_SYMLINK] = {.name = "SYMLINK",
			 .fixed = sizeof(struct lode_wire_symlink_req),
			 CRED(struct lode_wire_symlink_req),
			 .names = {NAME(struct lode_wire_symlink_req, name_len, NAME_ENTRY),
				   NAME(struct lode_wire_symlink_req, target_len, NAME_SYMLINK)},
			 .zero = {ZERO(struct lode_wire_symlink_req, reserved)}},
    [LODE_OP_READLINK] = BY_INO("READLINK"),
    [LODE_OP_READDIR] = {.name = "READDIR",
			 .fixed = sizeof(struct lode_wire_readdir_req),
			 CRED(struct lode_wire_readdir_req),
			 .check = check_readdir},
    [LODE_OP_STATFS] = {.name = "STATFS"},
    [LODE_OP_SETXATTR] = XATTR("SETXATTR", NAME_XATTR, check_setxattr, DATA_XATTR),
    [LODE_OP_GETXATTR] = XATTR("GETXATTR", NAME_XATTR, check_no_xattr_flags, DATA_NONE),
    [LODE_OP_LISTXATTR] = XATTR("LISTXATTR", NAME_EMPTY, check_no_xattr_flags, DATA_NONE),
    [LODE_OP_REMOVEXATTR] = XATTR("REMOVEXATTR", NAME_XATTR, check_no_xattr_flags, DATA_NONE),
    [LODE_OP_OPEN] = {.name = "OPEN",
		      .fixed = sizeof(struct lode_wire_open_req),
		      CRED(struct lode_wire_open_req),
		      .zero = {ZERO(struct lode_wire_open_req, reserved)},
		      .check = check_open},
    [LODE_OP_CLOSE] = COMMIT_LIKE("CLOSE"),
    [LODE_OP_COMMIT] = COMMIT_LIKE("COMMIT"),
    [LODE_OP_CLOSE_MANY] = {.name = "CLOSE_MANY", .data = DATA_CLOSE_REFS},
    [LODE_OP_TARGET_REGISTER] = {.name = "TARGET_REGISTER",
				 .fixed = sizeof(struct lode_wire_target_register_req),
				 .names = {NAME(struct lode_wire_target_register_req, addr_len,
						NAME_ADDR)},
				 .zero = {ZERO(struct lode_wire_target_register_req, reserved0),
					  ZERO(struct lode_wire_target_register_req, reserved1)},
				 .roles = R_TARGET},
    [LODE_OP_TARGET_HEARTBEAT] = {.name = "TARGET_HEARTBEAT",
				  .fixed = sizeof(struct lode_wire_target_heartbeat_req),
				  .zero = {ZERO(struct lode_wire_target_heartbeat_req, reserved)},
				  .roles = R_TARGET},
    [LODE_OP_TARGET_LIST] = {.name = "TARGET_LIST", .roles = R_ANY},
    [LODE_OP_ORPHAN_LIST] = {.name = "ORPHAN_LIST",
			     .fixed = sizeof(struct lode_wire_orphan_req),
			     .check = check_orphan_list,
			     .roles = R_TARGET},
    [LODE_OP_ORPHAN_DONE] = {.name = "ORPHAN_DONE",
			     .fixed = sizeof(struct lode_wire_orphan_req),
			     .data = DATA_OBJIDS,
			     .roles = R_TARGET},
    [LODE_OP_REPORT_COPY] = {.name = "REPORT_COPY",
			     .fixed = sizeof(struct lode_wire_report_req),
			     .zero = {ZERO(struct lode_wire_report_req, reserved)},
			     .check = check_report},
    [LODE_OP_LAYOUT_GET] = BY_INO("LAYOUT_GET"),
    [LODE_OP_LAYOUT_SET_COPY] = {.name = "LAYOUT_SET_COPY",
				 .fixed = sizeof(struct lode_wire_set_copy_req),
				 .zero = {ZERO(struct lode_wire_set_copy_req, reserved)},
				 .check = check_set_copy,
				 .roles = R_ADMIN},
    /* FSCK and FSCK_FIX: admins only */
    [LODE_OP_FSCK] = {.name = "FSCK",
		      .fixed = sizeof(struct lode_wire_fsck_req),
		      .zero = {ZERO(struct lode_wire_fsck_req, reserved)},
		      .check = check_fsck,
		      .roles = R_ADMIN},
    [LODE_OP_FSCK_FIX] = {.name = "FSCK_FIX",
			  .fixed = sizeof(struct lode_wire_fsck_fix_req),
			  .check = check_fsck_fix,
			  .roles = R_ADMIN},
    /* SCRUB_REPORT: from an OSS's scrub only */
    [LODE_OP_SCRUB_REPORT] = {.name = "SCRUB_REPORT",
			      .fixed = sizeof(struct lode_wire_scrub_report_req),
			      .check = check_scrub_report,
			      .roles = R_TARGET},
    /* BACKUP_START and BACKUP_READ: admins only */
    [LODE_OP_BACKUP_START] = {.name = "BACKUP_START",
			      .fixed = sizeof(struct lode_wire_backup_start_req),
			      .zero = {ZERO(struct lode_wire_backup_start_req, reserved)},
			      .roles = R_ADMIN},
    [LODE_OP_BACKUP_READ] = {.name = "BACKUP_READ",
			     .fixed = sizeof(struct lode_wire_backup_read_req),
			     .zero = {ZERO(struct lode_wire_backup_read_req, reserved)},
			     .check = check_backup_read,
			     .roles = R_ADMIN},
    /* moving copies (lodectl drain, rebalance): admins only */
    [LODE_OP_MOVE] = {.name = "MOVE",
		      .fixed = sizeof(struct lode_wire_move_req),
		      .check = check_move,
		      .roles = R_ADMIN},
    [LODE_OP_TARGET_STATE] = {.name = "TARGET_STATE",
			      .fixed = sizeof(struct lode_wire_target_state_req),
			      .check = check_target_state,
			      .roles = R_ADMIN},
    [LODE_OP_SYNC] = {.name = "SYNC", .roles = R_USER},
    [LODE_OP_GRANT_RETURN] = {.name = "GRANT_RETURN",
			      .fixed = sizeof(struct lode_wire_grant_return_req),
			      .roles = R_USER},
    [LODE_OP_MOVE_LIST] = {.name = "MOVE_LIST",
			   .fixed = sizeof(struct lode_wire_move_list_req),
			   .check = check_move_list,
			   .roles = R_ADMIN},
    [LODE_OP_MKNOD] = {.name = "MKNOD",
		       .fixed = sizeof(struct lode_wire_mknod_req),
		       CRED(struct lode_wire_mknod_req),
		       .names = {NAME(struct lode_wire_mknod_req, name_len, NAME_ENTRY)},
		       .zero = {ZERO(struct lode_wire_mknod_req, reserved0),
				ZERO(struct lode_wire_mknod_req, reserved1)},
		       .check = check_mknod},
    [LODE_OP_CAP_GET] = {.name = "CAP_GET",
			 .fixed = sizeof(struct lode_wire_cap_req),
			 CRED(struct lode_wire_cap_req),
			 .zero = {ZERO(struct lode_wire_cap_req, reserved)},
			 .check = check_cap_get},
    [LODE_OP_OBJ_WRITE] = {.name = "OBJ_WRITE",
			   .fixed = sizeof(struct lode_wire_obj_write_req),
			   .data = DATA_OBJECT,
			   .rest = 1,
			   .check = check_obj_write,
			   .roles = R_ANY},
    [LODE_OP_OBJ_READ] = {.name = "OBJ_READ",
			  .fixed = sizeof(struct lode_wire_obj_read_req),
			  .check = check_obj_read,
			  .roles = R_ANY},
    [LODE_OP_OBJ_TRUNCATE] = {.name = "OBJ_TRUNCATE",
			      .fixed = sizeof(struct lode_wire_obj_truncate_req),
			      .check = check_obj_truncate,
			      .roles = R_ANY},
    [LODE_OP_OBJ_ALLOCATE] = {.name = "OBJ_ALLOCATE",
			      .fixed = sizeof(struct lode_wire_obj_allocate_req),
			      .check = check_obj_allocate,
			      .roles = R_ANY},
    /* removing and listing objects are the targets' and admins' (orphans, fsck): a client
     * reaches objects only through a capability, for its own files */
    [LODE_OP_OBJ_REMOVE] = OBJID("OBJ_REMOVE", R_TARGET | R_ADMIN),
    [LODE_OP_OBJ_STAT] = OBJID("OBJ_STAT", R_ANY),
    [LODE_OP_OBJ_LIST] = {.name = "OBJ_LIST",
			  .fixed = sizeof(struct lode_wire_obj_list_req),
			  .zero = {ZERO(struct lode_wire_obj_list_req, reserved),
				   ZERO(struct lode_wire_obj_list_req, after.reserved)},
			  .check = check_obj_list,
			  .roles = R_TARGET | R_ADMIN},
    [LODE_OP_OBJ_FSYNC] = {.name = "OBJ_FSYNC",
			   .fixed = sizeof(struct lode_wire_objid),
			   .rest = 1,
			   .check = check_obj_fsync,
			   .roles = R_ANY},
    /* OBJ_SCRUB and OBJ_SCRUB_STATUS: admins only */
    [LODE_OP_OBJ_SCRUB] = {.name = "OBJ_SCRUB",
			   .fixed = sizeof(struct lode_wire_scrub_req),
			   .zero = {ZERO(struct lode_wire_scrub_req, reserved),
				    ZERO(struct lode_wire_scrub_req, reserved1)},
			   .check = check_scrub,
			   .roles = R_ADMIN},
    [LODE_OP_OBJ_SCRUB_STATUS] = {.name = "OBJ_SCRUB_STATUS",
				  .fixed = sizeof(struct lode_wire_scrub_status_req),
				  .zero = {ZERO(struct lode_wire_scrub_status_req, reserved)},
				  .check = check_scrub_status,
				  .roles = R_ADMIN},
};

/* ---- opcodes and headers ---- */

int lode_op_known(unsigned opcode)
{
	return opcode < LODE_OP_MAX_ && msgs[opcode].name != NULL;
}

unsigned lode_op_roles(unsigned opcode)
{
	if (!lode_op_known(opcode))
		return 0;
	return msgs[opcode].roles ? msgs[opcode].roles : R_USER;
}

int lode_op_takes_cap(unsigned opcode)
{
	switch (opcode) {
	case LODE_OP_OBJ_WRITE:
	case LODE_OP_OBJ_READ:
	case LODE_OP_OBJ_TRUNCATE:
	case LODE_OP_OBJ_ALLOCATE:
	case LODE_OP_OBJ_STAT:
	case LODE_OP_OBJ_FSYNC:
	case LODE_OP_REPORT_COPY: /* a client proves it may read the file it reports on */
		return 1;
	}
	return 0;
}

const char *lode_op_name(unsigned opcode)
{
	return lode_op_known(opcode) ? msgs[opcode].name : "?";
}

/* The longest name of each kind. */
static size_t name_max(uint8_t kind)
{
	switch (kind) {
	case NAME_ENTRY:
		return LODE_NAME_MAX;
	case NAME_XATTR:
		return LODE_XATTR_NAME_MAX;
	case NAME_SYMLINK:
		return LODE_SYMLINK_MAX;
	case NAME_ADDR:
		return LODE_ADDR_MAX;
	}
	return 0;
}

/* The most bulk data of each kind. */
static uint64_t data_max(uint8_t kind)
{
	switch (kind) {
	case DATA_XATTR:
		return LODE_XATTR_VALUE_MAX;
	case DATA_OBJIDS:
		return (uint64_t)LODE_OBJLIST_MAX * sizeof(struct lode_wire_objid);
	case DATA_OBJECT:
		return LODE_DATA_MAX;
	case DATA_CLOSE_REFS:
		return LODE_CLOSE_MANY_MAX * sizeof(struct lode_wire_close_ref);
	}
	return 0;
}

/* What may follow the fixed struct of an opcode whose check() reads the rest: checksums of
 * the largest write, then the longest chain. */
#define REST_MAX                                                                                   \
	(8u * (LODE_DATA_MAX / LODE_CHUNK_SIZE) + sizeof(struct lode_wire_chain) +                 \
	 LODE_CHAIN_MAX * sizeof(struct lode_wire_chain_hop))

/*
 * The largest body and data a request of this opcode can carry, from its row: a receiver
 * checks them on the header, before it allocates anything, so a peer that announces 4 MiB
 * for a LOOKUP is refused at once instead of being given the memory.
 */
static void request_bounds(const struct msg_spec *s, size_t *body, uint64_t *data)
{
	size_t b = s->fixed;

	if (s->rest)
		b += REST_MAX;
	for (unsigned i = 0; i < 2 && s->names[i].kind; i++)
		b += name_max(s->names[i].kind);
	*body = b < LODE_BODY_MAX ? b : LODE_BODY_MAX;
	*data = data_max(s->data);
}

int lode_op_may_be_lazy(unsigned opcode)
{
	switch (opcode) {
	case LODE_OP_SETATTR:
	case LODE_OP_CREATE:
	case LODE_OP_MKDIR:
	case LODE_OP_MKNOD:
	case LODE_OP_UNLINK:
	case LODE_OP_RMDIR:
	case LODE_OP_RENAME:
	case LODE_OP_LINK:
	case LODE_OP_SYMLINK:
	case LODE_OP_SETXATTR:
	case LODE_OP_REMOVEXATTR:
	case LODE_OP_OPEN:
	case LODE_OP_CLOSE:
	case LODE_OP_CLOSE_MANY:
	case LODE_OP_COMMIT:
		return 1;
	}
	return 0;
}

int lode_op_adds_name(unsigned opcode)
{
	switch (opcode) {
	case LODE_OP_CREATE:
	case LODE_OP_MKDIR:
	case LODE_OP_MKNOD:
	case LODE_OP_SYMLINK:
	case LODE_OP_LINK:
	case LODE_OP_RENAME:
		return 1;
	}
	return 0;
}

/* The grant flag and token (LODE_WIRE_F_GRANT): on requests and replies of the ops that add a
 * name; a token in a reply only as a MKDIR's new grant. */
static bool grant_ok(const struct lode_wire_hdr *hdr, int expect_reply)
{
	if ((hdr->flags & LODE_WIRE_F_GRANT) && !lode_op_adds_name(hdr->opcode))
		return false;
	if (expect_reply)
		return hdr->grant == 0 || hdr->opcode == LODE_OP_MKDIR;
	return hdr->grant == 0 || (hdr->flags & LODE_WIRE_F_GRANT);
}

int lode_hdr_check(const struct lode_wire_hdr *hdr, int expect_reply)
{
	if (hdr->magic != LODE_WIRE_MAGIC || hdr->version != LODE_WIRE_VERSION)
		return -EPROTO;
	if (!lode_op_known(hdr->opcode))
		return -EPROTO;
	if (expect_reply
		? (hdr->flags & ~LODE_WIRE_F_GRANT) != LODE_WIRE_F_REPLY
		: (hdr->flags & ~(LODE_WIRE_F_CAP | LODE_WIRE_F_LAZY | LODE_WIRE_F_GRANT)) ||
		      ((hdr->flags & LODE_WIRE_F_CAP) &&
		       (!lode_op_takes_cap(hdr->opcode) ||
			hdr->body_len < sizeof(struct lode_wire_cap))) ||
		      ((hdr->flags & LODE_WIRE_F_LAZY) && !lode_op_may_be_lazy(hdr->opcode)))
		return -EPROTO;
	if (!grant_ok(hdr, expect_reply))
		return -EPROTO;
	if (!expect_reply && hdr->status != 0)
		return -EPROTO;
	if (hdr->body_len > LODE_BODY_MAX || hdr->data_len > LODE_DATA_MAX)
		return -EPROTO;
	return 0;
}

int lode_hdr_check_bounds(const struct lode_wire_hdr *hdr)
{
	size_t body_max;
	uint64_t dmax;

	if (!lode_op_known(hdr->opcode))
		return -EPROTO;
	request_bounds(&msgs[hdr->opcode], &body_max, &dmax);
	if (hdr->flags & LODE_WIRE_F_CAP)
		body_max += sizeof(struct lode_wire_cap);
	return hdr->body_len > body_max || hdr->data_len > dmax ? -EMSGSIZE : 0;
}

void lode_hdr_init(struct lode_wire_hdr *hdr, uint8_t opcode, uint64_t req_id, uint32_t body_len,
		   uint64_t data_len)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->magic = LODE_WIRE_MAGIC;
	hdr->version = LODE_WIRE_VERSION;
	hdr->opcode = opcode;
	hdr->req_id = req_id;
	hdr->body_len = body_len;
	hdr->data_len = data_len;
}

/* ---- the decoder ---- */

static int data_ok(uint8_t kind, uint64_t data_len, uint32_t *count)
{
	switch (kind) {
	case DATA_NONE:
		return data_len ? -EPROTO : 0;
	case DATA_XATTR:
		return data_len > LODE_XATTR_VALUE_MAX ? -E2BIG : 0;
	case DATA_OBJIDS:
		if (data_len % sizeof(struct lode_wire_objid) ||
		    data_len / sizeof(struct lode_wire_objid) > LODE_OBJLIST_MAX)
			return -EPROTO;
		*count = (uint32_t)(data_len / sizeof(struct lode_wire_objid));
		return 0;
	case DATA_OBJECT:
		return data_len == 0 || data_len > LODE_DATA_MAX ? -EPROTO : 0;
	case DATA_CLOSE_REFS:
		if (data_len == 0 || data_len % sizeof(struct lode_wire_close_ref) ||
		    data_len / sizeof(struct lode_wire_close_ref) > LODE_CLOSE_MANY_MAX)
			return -EPROTO;
		*count = (uint32_t)(data_len / sizeof(struct lode_wire_close_ref));
		return 0;
	}
	return -EPROTO;
}

static int name_ok(uint8_t kind, const struct lode_name *n)
{
	switch (kind) {
	case NAME_ENTRY:
		return lode_name_check(n->ptr, n->len);
	case NAME_XATTR:
		return lode_xattr_name_check(n->ptr, n->len);
	case NAME_EMPTY:
		return n->len ? -EPROTO : 0;
	case NAME_SYMLINK:
		if (n->len == 0)
			return -ENOENT;
		if (n->len > LODE_SYMLINK_MAX)
			return -ENAMETOOLONG;
		return memchr(n->ptr, '\0', n->len) ? -EINVAL : 0;
	case NAME_ADDR:
		return lode_addr_check(n->ptr, n->len);
	}
	return -EPROTO;
}

int lode_addr_check(const char *addr, size_t len)
{
	if (len == 0 || len > LODE_ADDR_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (addr[i] <= ' ' || addr[i] > '~')
			return -EINVAL;
	return 0;
}

int lode_msg_decode(uint8_t opcode, const void *body, uint32_t len, uint64_t data_len,
		    struct lode_msg *out)
{
	const struct msg_spec *s;
	struct lode_msg m = {.fixed = body};
	const char *p = body;
	size_t need;
	int rc;

	if (!lode_op_known(opcode))
		return -EPROTO;
	s = &msgs[opcode];
	if ((!body && len) || len < s->fixed)
		return -EPROTO;
	rc = data_ok(s->data, data_len, &m.count);
	if (rc)
		return rc;
	for (unsigned i = 0; i < 3 && s->zero[i].size; i++) {
		const uint8_t *f = (const uint8_t *)p + s->zero[i].off;

		for (unsigned k = 0; k < s->zero[i].size; k++)
			if (f[k])
				return -EPROTO;
	}
	if (s->cred) {
		rc = cred_ok((const struct lode_wire_cred *)(const void *)(p + s->cred - 1));
		if (rc)
			return rc;
	}
	/* the names follow the struct back to back and fill the body exactly */
	need = s->fixed;
	for (unsigned i = 0; i < 2 && s->names[i].kind; i++) {
		uint16_t nlen;

		memcpy(&nlen, p + s->names[i].len_off, sizeof(nlen));
		m.name[i].ptr = p + need;
		m.name[i].len = nlen;
		need += nlen;
	}
	if (!s->rest && need != len)
		return -EPROTO;
	for (unsigned i = 0; i < 2 && s->names[i].kind; i++) {
		rc = name_ok(s->names[i].kind, &m.name[i]);
		if (rc)
			return rc;
	}
	if (s->check) {
		rc = s->check(&m, len, data_len);
		if (rc)
			return rc;
	}
	if (!len)
		m.fixed = NULL;
	*out = m;
	return 0;
}

size_t lode_msg_cred_offset(unsigned opcode)
{
	return lode_op_known(opcode) ? msgs[opcode].cred : 0;
}
