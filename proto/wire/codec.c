/* SPDX-License-Identifier: MIT */
/*
 * Bounds-checked decoders for every Lode message.
 *
 * The pattern is the same everywhere: the body must hold the opcode's fixed struct, the
 * names it announces must fit exactly in what follows, reserved fields must be zero, and
 * data must be absent unless the opcode carries data. Nothing is read before its length
 * has been checked against what was received.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "codec.h"
#include "config.h"

/* ---- status mapping ---- */

static const int wire_errnos[] = {
    EPERM,     ENOENT,	   EIO,		 EBADF,	    EAGAIN,	  ENOMEM,   EACCES,	  EBUSY,
    EEXIST,    EXDEV,	   ENOTDIR,	 EISDIR,    EINVAL,	  EFBIG,    ENOSPC,	  EROFS,
    EMLINK,    ERANGE,	   ENAMETOOLONG, ENOSYS,    ENOTEMPTY,	  ELOOP,    ENODATA,	  EPROTO,
    EBADMSG,   EOVERFLOW,  EOPNOTSUPP,	 ETIMEDOUT, ECONNREFUSED, ESTALE,   EDQUOT,	  ECANCELED,
    ESHUTDOWN, ECONNRESET, ENXIO,	 E2BIG,	    ETXTBSY,	  EMSGSIZE, EHOSTUNREACH,
};

static int wire_errno_known(int e)
{
	for (size_t i = 0; i < sizeof(wire_errnos) / sizeof(wire_errnos[0]); i++)
		if (wire_errnos[i] == e)
			return 1;
	return 0;
}

int32_t lode_status_from_errno(int neg_errno)
{
	if (neg_errno >= 0)
		return LODE_S_OK;
	if (neg_errno == INT32_MIN)
		return EIO;
	return wire_errno_known(-neg_errno) ? -neg_errno : EIO;
}

int lode_status_to_errno(int32_t status)
{
	if (status == LODE_S_OK)
		return 0;
	if (status < 0 || !wire_errno_known(status))
		return -EIO;
	return -status;
}

/* ---- header ---- */

static const char *const op_names[LODE_OP_MAX_] = {
    [LODE_OP_HELLO] = "HELLO",
    [LODE_OP_PING] = "PING",
    [LODE_OP_LOOKUP] = "LOOKUP",
    [LODE_OP_GETATTR] = "GETATTR",
    [LODE_OP_SETATTR] = "SETATTR",
    [LODE_OP_CREATE] = "CREATE",
    [LODE_OP_MKDIR] = "MKDIR",
    [LODE_OP_UNLINK] = "UNLINK",
    [LODE_OP_RMDIR] = "RMDIR",
    [LODE_OP_RENAME] = "RENAME",
    [LODE_OP_LINK] = "LINK",
    [LODE_OP_SYMLINK] = "SYMLINK",
    [LODE_OP_READLINK] = "READLINK",
    [LODE_OP_READDIR] = "READDIR",
    [LODE_OP_STATFS] = "STATFS",
    [LODE_OP_SETXATTR] = "SETXATTR",
    [LODE_OP_GETXATTR] = "GETXATTR",
    [LODE_OP_LISTXATTR] = "LISTXATTR",
    [LODE_OP_REMOVEXATTR] = "REMOVEXATTR",
    [LODE_OP_OPEN] = "OPEN",
    [LODE_OP_CLOSE] = "CLOSE",
    [LODE_OP_COMMIT] = "COMMIT",
    [LODE_OP_TARGET_REGISTER] = "TARGET_REGISTER",
    [LODE_OP_TARGET_HEARTBEAT] = "TARGET_HEARTBEAT",
    [LODE_OP_TARGET_LIST] = "TARGET_LIST",
    [LODE_OP_ORPHAN_LIST] = "ORPHAN_LIST",
    [LODE_OP_ORPHAN_DONE] = "ORPHAN_DONE",
    [LODE_OP_REPORT_COPY] = "REPORT_COPY",
    [LODE_OP_LAYOUT_GET] = "LAYOUT_GET",
    [LODE_OP_LAYOUT_SET_COPY] = "LAYOUT_SET_COPY",
    [LODE_OP_OBJ_WRITE] = "OBJ_WRITE",
    [LODE_OP_OBJ_READ] = "OBJ_READ",
    [LODE_OP_OBJ_TRUNCATE] = "OBJ_TRUNCATE",
    [LODE_OP_OBJ_REMOVE] = "OBJ_REMOVE",
    [LODE_OP_OBJ_STAT] = "OBJ_STAT",
    [LODE_OP_OBJ_LIST] = "OBJ_LIST",
    [LODE_OP_OBJ_FSYNC] = "OBJ_FSYNC",
};

int lode_op_known(unsigned opcode)
{
	return opcode < LODE_OP_MAX_ && op_names[opcode] != NULL;
}

const char *lode_op_name(unsigned opcode)
{
	return lode_op_known(opcode) ? op_names[opcode] : "?";
}

int lode_hdr_check(const struct lode_wire_hdr *hdr, int expect_reply)
{
	if (hdr->magic != LODE_WIRE_MAGIC || hdr->version != LODE_WIRE_VERSION)
		return -EPROTO;
	if (!lode_op_known(hdr->opcode))
		return -EPROTO;
	if (hdr->flags != (expect_reply ? LODE_WIRE_F_REPLY : 0))
		return -EPROTO;
	if (hdr->reserved != 0)
		return -EPROTO;
	if (!expect_reply && hdr->status != 0)
		return -EPROTO;
	if (hdr->body_len > LODE_BODY_MAX || hdr->data_len > LODE_DATA_MAX)
		return -EPROTO;
	return 0;
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

/* ---- names ---- */

int lode_name_check(const char *name, size_t len)
{
	if (len == 0)
		return -EINVAL;
	if (len > LODE_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return -EINVAL;
	return 0;
}

int lode_xattr_name_check(const char *name, size_t len)
{
	if (len == 0)
		return -EINVAL;
	if (len > LODE_XATTR_NAME_MAX)
		return -ERANGE;
	if (memchr(name, '\0', len))
		return -EINVAL;
	return 0;
}

/* ---- generic body shape ---- */

/*
 * Checks that body holds a struct of `fixed` bytes followed by exactly the names whose
 * lengths are given (n of them), and that there is no data where none is allowed.
 * Fills names[i] to point into the body.
 */
static int body_shape(const void *body, uint32_t len, size_t fixed, const uint16_t *lens,
		      struct lode_name *names, int n)
{
	size_t need = fixed;

	if (!body && len)
		return -EPROTO;
	if (len < fixed)
		return -EPROTO;
	for (int i = 0; i < n; i++)
		need += lens[i];
	if (need != len)
		return -EPROTO;
	need = fixed;
	for (int i = 0; i < n; i++) {
		names[i].ptr = (const char *)body + need;
		names[i].len = lens[i];
		need += lens[i];
	}
	return 0;
}

static int no_data(uint64_t data_len)
{
	return data_len ? -EPROTO : 0;
}

static int cred_ok(const struct lode_wire_cred *c)
{
	(void)c; /* every uid/gid is representable */
	return 1;
}

#define RESERVED_ZERO(x) ((x) == 0)

int lode_dec_hello(const void *body, uint32_t len, uint64_t data_len,
		   const struct lode_wire_hello_req **req)
{
	const struct lode_wire_hello_req *r = body;

	if (len != sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved))
		return -EPROTO;
	if (r->role != LODE_ROLE_CLIENT && r->role != LODE_ROLE_OSS)
		return -EINVAL;
	*req = r;
	return 0;
}

int lode_dec_lookup(const void *body, uint32_t len, uint64_t data_len,
		    const struct lode_wire_lookup_req **req, struct lode_name *name)
{
	const struct lode_wire_lookup_req *r = body;
	struct lode_name n;
	int rc;

	if (len < sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved0) || !RESERVED_ZERO(r->reserved1) || !cred_ok(&r->cred))
		return -EPROTO;
	rc = body_shape(body, len, sizeof(*r), &r->name_len, &n, 1);
	if (rc)
		return rc;
	rc = lode_name_check(n.ptr, n.len);
	if (rc)
		return rc;
	*req = r;
	*name = n;
	return 0;
}

int lode_dec_getattr(const void *body, uint32_t len, uint64_t data_len,
		     const struct lode_wire_getattr_req **req)
{
	if (len != sizeof(**req) || no_data(data_len))
		return -EPROTO;
	*req = body;
	return 0;
}

int lode_dec_setattr(const void *body, uint32_t len, uint64_t data_len,
		     const struct lode_wire_setattr_req **req)
{
	const struct lode_wire_setattr_req *r = body;

	if (len != sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (r->valid & ~LODE_SETATTR_ALL_)
		return -EINVAL;
	if ((r->valid & LODE_SETATTR_MODE) && (r->mode & ~07777u))
		return -EINVAL;
	if ((r->valid & LODE_SETATTR_SIZE) && r->size > (uint64_t)INT64_MAX)
		return -EFBIG;
	*req = r;
	return 0;
}

int lode_layout_check(const struct lode_wire_layout *l)
{
	unsigned n;

	if (l->stripe_size == 0 || l->stripe_size % LODE_CHUNK_SIZE || l->stripe_size > (1u << 30))
		return -EINVAL;
	if (l->stripe_count == 0 || l->mirror_count == 0)
		return -EINVAL;
	n = (unsigned)l->stripe_count * l->mirror_count;
	if (n > LODE_LAYOUT_TARGETS_MAX)
		return -EINVAL;
	for (unsigned i = n; i < LODE_LAYOUT_TARGETS_MAX; i++)
		if (l->targets[i])
			return -EINVAL;
	return 0;
}

int lode_dec_create(const void *body, uint32_t len, uint64_t data_len,
		    const struct lode_wire_create_req **req, struct lode_name *name)
{
	const struct lode_wire_create_req *r = body;
	struct lode_name n;
	int rc;

	if (len < sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved) || r->has_layout > 1 || r->has_targets > 1)
		return -EPROTO;
	if (r->flags & ~LODE_OPEN_ALL_)
		return -EINVAL;
	if (r->mode & ~07777u)
		return -EINVAL;
	rc = body_shape(body, len, sizeof(*r), &r->name_len, &n, 1);
	if (rc)
		return rc;
	rc = lode_name_check(n.ptr, n.len);
	if (rc)
		return rc;
	if (r->has_targets && !r->has_layout)
		return -EINVAL;
	if (!r->has_layout) {
		static const struct lode_wire_layout zero;

		if (memcmp(&r->layout, &zero, sizeof(zero)))
			return -EINVAL; /* unused means zero, like any reserved field */
	} else if (!r->has_targets) {
		for (unsigned i = 0; i < LODE_LAYOUT_TARGETS_MAX; i++)
			if (r->layout.targets[i])
				return -EINVAL;
	}
	if (r->has_layout) {
		struct lode_wire_layout l = r->layout;

		if (!r->has_targets)
			memset(l.targets, 0, sizeof(l.targets));
		rc = lode_layout_check(&l);
		if (rc)
			return rc;
	}
	*req = r;
	*name = n;
	return 0;
}

int lode_dec_open(const void *body, uint32_t len, uint64_t data_len,
		  const struct lode_wire_open_req **req)
{
	const struct lode_wire_open_req *r = body;

	if (len != sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved))
		return -EPROTO;
	if (r->flags & ~(LODE_OPEN_READ | LODE_OPEN_WRITE | LODE_OPEN_TRUNC))
		return -EINVAL;
	if (!(r->flags & (LODE_OPEN_READ | LODE_OPEN_WRITE)))
		return -EINVAL;
	if ((r->flags & LODE_OPEN_TRUNC) && !(r->flags & LODE_OPEN_WRITE))
		return -EINVAL;
	*req = r;
	return 0;
}

int lode_dec_commit(const void *body, uint32_t len, uint64_t data_len,
		    const struct lode_wire_commit_req **req)
{
	const struct lode_wire_commit_req *r = body;

	if (len != sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved) || r->commit > 1)
		return -EPROTO;
	if (r->size > (uint64_t)INT64_MAX)
		return -EFBIG;
	*req = r;
	return 0;
}

int lode_dec_mkdir(const void *body, uint32_t len, uint64_t data_len,
		   const struct lode_wire_mkdir_req **req, struct lode_name *name)
{
	const struct lode_wire_mkdir_req *r = body;
	struct lode_name n;
	int rc;

	if (len < sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved))
		return -EPROTO;
	if (r->mode & ~07777u)
		return -EINVAL;
	rc = body_shape(body, len, sizeof(*r), &r->name_len, &n, 1);
	if (rc)
		return rc;
	rc = lode_name_check(n.ptr, n.len);
	if (rc)
		return rc;
	*req = r;
	*name = n;
	return 0;
}

int lode_dec_rename(const void *body, uint32_t len, uint64_t data_len,
		    const struct lode_wire_rename_req **req, struct lode_name *old_name,
		    struct lode_name *new_name)
{
	const struct lode_wire_rename_req *r = body;
	struct lode_name n[2];
	uint16_t lens[2];
	int rc;

	if (len < sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (r->flags & ~(LODE_RENAME_NOREPLACE | LODE_RENAME_EXCHANGE))
		return -EINVAL;
	if (r->flags == (LODE_RENAME_NOREPLACE | LODE_RENAME_EXCHANGE))
		return -EINVAL;
	lens[0] = r->old_name_len;
	lens[1] = r->new_name_len;
	rc = body_shape(body, len, sizeof(*r), lens, n, 2);
	if (rc)
		return rc;
	rc = lode_name_check(n[0].ptr, n[0].len);
	if (!rc)
		rc = lode_name_check(n[1].ptr, n[1].len);
	if (rc)
		return rc;
	*req = r;
	*old_name = n[0];
	*new_name = n[1];
	return 0;
}

int lode_dec_link(const void *body, uint32_t len, uint64_t data_len,
		  const struct lode_wire_link_req **req, struct lode_name *name)
{
	const struct lode_wire_link_req *r = body;
	struct lode_name n;
	int rc;

	if (len < sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved0) || !RESERVED_ZERO(r->reserved1))
		return -EPROTO;
	rc = body_shape(body, len, sizeof(*r), &r->name_len, &n, 1);
	if (rc)
		return rc;
	rc = lode_name_check(n.ptr, n.len);
	if (rc)
		return rc;
	*req = r;
	*name = n;
	return 0;
}

int lode_dec_symlink(const void *body, uint32_t len, uint64_t data_len,
		     const struct lode_wire_symlink_req **req, struct lode_name *name,
		     struct lode_name *target)
{
	const struct lode_wire_symlink_req *r = body;
	struct lode_name n[2];
	uint16_t lens[2];
	int rc;

	if (len < sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved))
		return -EPROTO;
	lens[0] = r->name_len;
	lens[1] = r->target_len;
	rc = body_shape(body, len, sizeof(*r), lens, n, 2);
	if (rc)
		return rc;
	rc = lode_name_check(n[0].ptr, n[0].len);
	if (rc)
		return rc;
	if (n[1].len == 0)
		return -ENOENT;
	if (n[1].len > LODE_SYMLINK_MAX)
		return -ENAMETOOLONG;
	if (memchr(n[1].ptr, '\0', n[1].len))
		return -EINVAL;
	*req = r;
	*name = n[0];
	*target = n[1];
	return 0;
}

int lode_dec_readdir(const void *body, uint32_t len, uint64_t data_len,
		     const struct lode_wire_readdir_req **req)
{
	const struct lode_wire_readdir_req *r = body;

	if (len != sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (r->flags & ~LODE_READDIR_ATTRS)
		return -EPROTO;
	if (r->max_entries == 0 || r->max_entries > LODE_READDIR_MAX)
		return -EINVAL;
	*req = r;
	return 0;
}

int lode_dec_statfs(const void *body, uint32_t len, uint64_t data_len)
{
	(void)body;
	return (len || data_len) ? -EPROTO : 0;
}

int lode_dec_xattr(uint8_t opcode, const void *body, uint32_t len, uint64_t data_len,
		   const struct lode_wire_xattr_req **req, struct lode_name *name)
{
	const struct lode_wire_xattr_req *r = body;
	struct lode_name n;
	int rc;

	if (len < sizeof(*r))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved0) || !RESERVED_ZERO(r->reserved1))
		return -EPROTO;
	if (opcode == LODE_OP_SETXATTR) {
		if (data_len > LODE_XATTR_VALUE_MAX)
			return -E2BIG;
		if (r->flags & ~(LODE_XATTR_CREATE | LODE_XATTR_REPLACE))
			return -EINVAL;
	} else if (data_len || r->flags) {
		return -EPROTO;
	}
	if (opcode != LODE_OP_SETXATTR && opcode != LODE_OP_GETXATTR &&
	    opcode != LODE_OP_LISTXATTR && opcode != LODE_OP_REMOVEXATTR)
		return -EPROTO;
	rc = body_shape(body, len, sizeof(*r), &r->name_len, &n, 1);
	if (rc)
		return rc;
	if (opcode == LODE_OP_LISTXATTR) {
		if (n.len)
			return -EPROTO;
	} else {
		rc = lode_xattr_name_check(n.ptr, n.len);
		if (rc)
			return rc;
	}
	*req = r;
	*name = n;
	return 0;
}

int lode_dec_target_register(const void *body, uint32_t len, uint64_t data_len,
			     const struct lode_wire_target_register_req **req,
			     struct lode_name *addr)
{
	const struct lode_wire_target_register_req *r = body;
	struct lode_name n;
	int rc;

	if (len < sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved0) || !RESERVED_ZERO(r->reserved1))
		return -EPROTO;
	rc = body_shape(body, len, sizeof(*r), &r->addr_len, &n, 1);
	if (rc)
		return rc;
	if (n.len == 0 || n.len > LODE_ADDR_MAX || memchr(n.ptr, '\0', n.len))
		return -EINVAL;
	*req = r;
	*addr = n;
	return 0;
}

int lode_dec_target_heartbeat(const void *body, uint32_t len, uint64_t data_len,
			      const struct lode_wire_target_heartbeat_req **req)
{
	const struct lode_wire_target_heartbeat_req *r = body;

	if (len != sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved))
		return -EPROTO;
	*req = r;
	return 0;
}

int lode_dec_target_list(const void *body, uint32_t len, uint64_t data_len)
{
	(void)body;
	return (len || data_len) ? -EPROTO : 0;
}

int lode_dec_orphan(uint8_t opcode, const void *body, uint32_t len, uint64_t data_len,
		    const struct lode_wire_orphan_req **req, uint32_t *n_objids)
{
	const struct lode_wire_orphan_req *r = body;

	if (len != sizeof(*r))
		return -EPROTO;
	if (opcode == LODE_OP_ORPHAN_LIST) {
		if (data_len)
			return -EPROTO;
		if (r->max == 0 || r->max > LODE_OBJLIST_MAX)
			return -EINVAL;
	} else if (opcode == LODE_OP_ORPHAN_DONE) {
		if (data_len % sizeof(struct lode_wire_objid) ||
		    data_len / sizeof(struct lode_wire_objid) > LODE_OBJLIST_MAX)
			return -EPROTO;
	} else {
		return -EPROTO;
	}
	*req = r;
	*n_objids = (uint32_t)(data_len / sizeof(struct lode_wire_objid));
	return 0;
}

int lode_dec_report(const void *body, uint32_t len, uint64_t data_len,
		    const struct lode_wire_report_req **req)
{
	const struct lode_wire_report_req *r = body;

	if (len != sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved) || r->ino == 0 || r->target_id == 0)
		return -EPROTO;
	if (r->kind != LODE_REPORT_WRITE_FAILED && r->kind != LODE_REPORT_BAD_DATA)
		return -EINVAL;
	*req = r;
	return 0;
}

int lode_dec_set_copy(const void *body, uint32_t len, uint64_t data_len,
		      const struct lode_wire_set_copy_req **req)
{
	const struct lode_wire_set_copy_req *r = body;

	if (len != sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved) || r->ino == 0)
		return -EPROTO;
	if (r->index >= LODE_LAYOUT_TARGETS_MAX || !r->old_target || !r->new_target)
		return -EINVAL;
	*req = r;
	return 0;
}

/* ---- objects ---- */

static int objid_ok(const struct lode_wire_objid *o)
{
	return o->reserved == 0 && o->ino != 0;
}

/* ---- forwarding chains ---- */

static int chain_addr_ok(const struct lode_wire_chain_hop *h)
{
	if (h->addr_len == 0 || h->addr_len > LODE_ADDR_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < h->addr_len; i++)
		if (h->addr[i] <= ' ' || h->addr[i] > '~')
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
	if (!RESERVED_ZERO(c->reserved0) || !RESERVED_ZERO(c->reserved1))
		return -EPROTO;
	if (c->count > LODE_CHAIN_MAX)
		return -EINVAL;
	if (len != lode_chain_size(c->count))
		return -EPROTO;
	if (c->timeout_ms == 0 || c->timeout_ms > LODE_CHAIN_TIMEOUT_MAX)
		return -EINVAL;
	h = lode_chain_hops(c);
	for (unsigned i = 0; i < c->count; i++) {
		if (!RESERVED_ZERO(h[i].reserved))
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

int lode_dec_obj_write(const void *body, uint32_t len, uint64_t data_len,
		       const struct lode_wire_obj_write_req **req, const uint64_t **sums,
		       const struct lode_wire_chain **chain)
{
	const struct lode_wire_obj_write_req *r = body;
	const struct lode_wire_chain *c = NULL;
	uint64_t nchunks, fixed;
	int rc;

	if (!body || len < sizeof(*r))
		return -EPROTO;
	if (!objid_ok(&r->obj) || (r->flags & ~LODE_OBJ_F_ALL_))
		return -EPROTO;
	if (data_len == 0 || data_len > LODE_DATA_MAX)
		return -EPROTO;
	nchunks = (data_len + LODE_CHUNK_SIZE - 1) / LODE_CHUNK_SIZE;
	fixed = sizeof(*r) + nchunks * sizeof(uint64_t);
	if (r->nchunks != nchunks || len < fixed)
		return -EPROTO;
	if (r->flags & LODE_OBJ_F_CHAIN) {
		rc = lode_dec_chain((const char *)body + fixed, len - fixed, &c);
		if (rc)
			return rc;
	} else if (len != fixed) {
		return -EPROTO;
	}
	if (r->offset % LODE_CHUNK_SIZE)
		return -EINVAL;
	if (r->offset > (uint64_t)INT64_MAX - data_len)
		return -EFBIG;
	*req = r;
	*sums = (const uint64_t *)(r + 1);
	*chain = c;
	return 0;
}

int lode_dec_obj_read(const void *body, uint32_t len, uint64_t data_len,
		      const struct lode_wire_obj_read_req **req)
{
	const struct lode_wire_obj_read_req *r = body;

	if (len != sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!objid_ok(&r->obj) || !RESERVED_ZERO(r->reserved))
		return -EPROTO;
	if (r->offset % LODE_CHUNK_SIZE || r->length == 0 || r->length > LODE_DATA_MAX)
		return -EINVAL;
	if (r->offset > (uint64_t)INT64_MAX - r->length)
		return -EFBIG;
	*req = r;
	return 0;
}

int lode_dec_obj_truncate(const void *body, uint32_t len, uint64_t data_len,
			  const struct lode_wire_obj_truncate_req **req)
{
	const struct lode_wire_obj_truncate_req *r = body;

	if (len != sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!objid_ok(&r->obj))
		return -EPROTO;
	if (r->size > (uint64_t)INT64_MAX)
		return -EFBIG;
	*req = r;
	return 0;
}

int lode_dec_objid(const void *body, uint32_t len, uint64_t data_len,
		   const struct lode_wire_objid **obj)
{
	const struct lode_wire_objid *o = body;

	if (len != sizeof(*o) || no_data(data_len))
		return -EPROTO;
	if (!objid_ok(o))
		return -EPROTO;
	*obj = o;
	return 0;
}

int lode_dec_obj_fsync(const void *body, uint32_t len, uint64_t data_len,
		       const struct lode_wire_objid **obj, const struct lode_wire_chain **chain)
{
	const struct lode_wire_objid *o = body;
	const struct lode_wire_chain *c = NULL;
	int rc;

	if (!body || len < sizeof(*o) || no_data(data_len))
		return -EPROTO;
	if (!objid_ok(o))
		return -EPROTO;
	if (len > sizeof(*o)) {
		rc = lode_dec_chain(o + 1, len - sizeof(*o), &c);
		if (rc)
			return rc;
	}
	*obj = o;
	*chain = c;
	return 0;
}

int lode_dec_obj_list(const void *body, uint32_t len, uint64_t data_len,
		      const struct lode_wire_obj_list_req **req)
{
	const struct lode_wire_obj_list_req *r = body;

	if (len != sizeof(*r) || no_data(data_len))
		return -EPROTO;
	if (!RESERVED_ZERO(r->reserved) || !RESERVED_ZERO(r->after.reserved))
		return -EPROTO;
	if (r->max == 0 || r->max > LODE_OBJLIST_MAX)
		return -EINVAL;
	*req = r;
	return 0;
}

/* ---- replies ---- */

static int readdir_rep_check(const void *body, uint32_t len, const void *data, uint64_t data_len,
			     bool plus, const struct lode_wire_readdir_rep **rep)
{
	const struct lode_wire_readdir_rep *r = body;
	const struct lode_wire_direntplus *ep;
	const struct lode_wire_dirent *e;
	struct lode_name n;
	uint64_t pos = 0;
	uint32_t count = 0;
	int rc;

	if (len != sizeof(*r) || r->eof > 1 || r->count > LODE_READDIR_MAX)
		return -EPROTO;
	while ((rc = plus ? lode_readdirplus_next(data, data_len, &pos, &ep, &n)
			  : lode_readdir_next(data, data_len, &pos, &e, &n)) == 1)
		count++;
	if (rc < 0 || count != r->count)
		return -EPROTO;
	*rep = r;
	return 0;
}

int lode_dec_readdir_rep(const void *body, uint32_t len, const void *data, uint64_t data_len,
			 const struct lode_wire_readdir_rep **rep)
{
	return readdir_rep_check(body, len, data, data_len, false, rep);
}

int lode_dec_readdirplus_rep(const void *body, uint32_t len, const void *data, uint64_t data_len,
			     const struct lode_wire_readdir_rep **rep)
{
	return readdir_rep_check(body, len, data, data_len, true, rep);
}

static uint64_t pad8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

/* Records are: fixed struct, name, zero padding to a multiple of 8 bytes. */
static int record_next(const void *data, uint64_t data_len, uint64_t *pos, size_t fixed,
		       size_t name_len_off, const void **rec, struct lode_name *name)
{
	const char *p = data;
	uint16_t nlen;
	uint64_t end;

	if (*pos == data_len)
		return 0;
	if (*pos > data_len || data_len - *pos < fixed)
		return -EPROTO;
	memcpy(&nlen, p + *pos + name_len_off, sizeof(nlen));
	end = *pos + pad8(fixed + nlen);
	if (end > data_len)
		return -EPROTO;
	for (uint64_t i = *pos + fixed + nlen; i < end; i++)
		if (p[i])
			return -EPROTO;
	*rec = p + *pos;
	name->ptr = p + *pos + fixed;
	name->len = nlen;
	*pos = end;
	return 1;
}

int lode_readdir_next(const void *data, uint64_t data_len, uint64_t *pos,
		      const struct lode_wire_dirent **ent, struct lode_name *name)
{
	const void *rec;
	struct lode_name n;
	int rc;

	rc = record_next(data, data_len, pos, sizeof(**ent),
			 offsetof(struct lode_wire_dirent, name_len), &rec, &n);
	if (rc <= 0)
		return rc;
	if (lode_name_check(n.ptr, n.len) || ((const struct lode_wire_dirent *)rec)->reserved)
		return -EPROTO;
	*ent = rec;
	*name = n;
	return 1;
}

int lode_readdirplus_next(const void *data, uint64_t data_len, uint64_t *pos,
			  const struct lode_wire_direntplus **ent, struct lode_name *name)
{
	const struct lode_wire_direntplus *e;
	const void *rec;
	struct lode_name n;
	int rc;

	rc = record_next(data, data_len, pos, sizeof(**ent),
			 offsetof(struct lode_wire_direntplus, d.name_len), &rec, &n);
	if (rc <= 0)
		return rc;
	e = rec;
	if (lode_name_check(n.ptr, n.len) || e->d.reserved || e->attr.ino != e->d.ino ||
	    (e->attr.mode & S_IFMT) != e->d.mode)
		return -EPROTO;
	*ent = e;
	*name = n;
	return 1;
}

int lode_target_next(const void *data, uint64_t data_len, uint64_t *pos,
		     const struct lode_wire_target **t, struct lode_name *addr)
{
	const void *rec;
	struct lode_name n;
	int rc;

	rc = record_next(data, data_len, pos, sizeof(**t),
			 offsetof(struct lode_wire_target, addr_len), &rec, &n);
	if (rc <= 0)
		return rc;
	if (n.len == 0 || n.len > LODE_ADDR_MAX || memchr(n.ptr, '\0', n.len))
		return -EPROTO;
	if (((const struct lode_wire_target *)rec)->reserved0 ||
	    ((const struct lode_wire_target *)rec)->reserved1)
		return -EPROTO;
	*t = rec;
	*addr = n;
	return 1;
}

int lode_dec_obj_read_rep(const void *body, uint32_t len, uint64_t data_len, uint32_t length,
			  const struct lode_wire_obj_read_rep **rep, const uint64_t **sums)
{
	const struct lode_wire_obj_read_rep *r = body;
	uint64_t want;

	if (len < sizeof(*r) || data_len > length || r->reserved)
		return -EPROTO;
	want = (data_len + LODE_CHUNK_SIZE - 1) / LODE_CHUNK_SIZE;
	if (r->nchunks != want || len != sizeof(*r) + want * sizeof(uint64_t))
		return -EPROTO;
	*rep = r;
	*sums = (const uint64_t *)(r + 1);
	return 0;
}

/* ---- checksums ---- */

uint64_t lode_chunk_sum(const void *buf, size_t len)
{
	static const char zeros[LODE_CHUNK_SIZE];
	XXH3_state_t st;

	if (len >= LODE_CHUNK_SIZE) {
#if LODE_HAVE_AVX2_SUM
		/* every byte read or written is summed: this halves xxh3's cost */
		if (__builtin_cpu_supports("avx2"))
			return lode_chunk_sum_avx2(buf);
#endif
		return XXH3_64bits(buf, LODE_CHUNK_SIZE);
	}
	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, buf, len);
	XXH3_64bits_update(&st, zeros, LODE_CHUNK_SIZE - len);
	return XXH3_64bits_digest(&st);
}

/* ---- encoding ---- */

void lode_buf_init(struct lode_buf *b, void *mem, size_t cap)
{
	b->p = mem;
	b->len = 0;
	b->cap = cap;
	b->err = 0;
}

void lode_buf_put(struct lode_buf *b, const void *src, size_t len)
{
	if (len == 0)
		return;
	if (b->err || len > b->cap - b->len) {
		b->err = -ENOSPC;
		return;
	}
	memcpy(b->p + b->len, src, len);
	b->len += len;
}
