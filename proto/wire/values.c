/* SPDX-License-Identifier: MIT */
/*
 * Values and names: the wire status codes (the only place errno and wire status meet),
 * path components, xattr names and layouts, checked the same way by every decoder, and the
 * buffer that encoders append a body to.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "codec.h"

/* ---- status mapping ---- */

static const int wire_errnos[] = {
    EPERM,	  ENOENT,  EIO,	     EBADF,	   EAGAIN,	 ENOMEM,     EACCES,
    EBUSY,	  EEXIST,  EXDEV,    ENOTDIR,	   EISDIR,	 EINVAL,     EFBIG,
    ENOSPC,	  EROFS,   EMLINK,   ERANGE,	   ENAMETOOLONG, ENOSYS,     ENOTEMPTY,
    ELOOP,	  ENODATA, EPROTO,   EBADMSG,	   EOVERFLOW,	 EOPNOTSUPP, ETIMEDOUT,
    ECONNREFUSED, ESTALE,  EDQUOT,   ECANCELED,	   ESHUTDOWN,	 ECONNRESET, ENXIO,
    E2BIG,	  ETXTBSY, EMSGSIZE, EHOSTUNREACH, EKEYEXPIRED,
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
