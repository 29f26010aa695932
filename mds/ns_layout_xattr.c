/* SPDX-License-Identifier: MIT */
/*
 * The virtual xattr "user.lode.layout": how a directory's default layout (or a file's
 * layout) reads and is set as text.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_internal.h"

/*
 * "user.lode.layout": a directory's default layout for the files created in it from now on
 * (and the subdirectories made in it), or a file's layout, as text:
 * "stripe_size=1048576,stripe_count=4,mirror_count=2" (0: automatic). It is not stored as
 * an xattr: it reads and writes the inode's layout. Only the owner (or root) sets it, on a
 * directory; a file's layout is fixed at its creation.
 */
#define LAYOUT_XATTR "user.lode.layout"

bool lode_ns_is_layout_xattr(const char *name, size_t len)
{
	return len == sizeof(LAYOUT_XATTR) - 1 && !memcmp(name, LAYOUT_XATTR, len);
}

static int layout_xattr_format(const struct lode_disk_inode *in, char *buf, size_t size)
{
	return snprintf(buf, size, "stripe_size=%u,stripe_count=%u,mirror_count=%u",
			(unsigned)in->layout.stripe_size, (unsigned)in->layout.stripe_count,
			(unsigned)in->layout.mirror_count);
}

/* Parses the text form; every key is optional (absent: 0, automatic). */
static int layout_xattr_parse(const void *value, size_t len, struct lode_disk_layout *out)
{
	char buf[128], *save = NULL, *tok;
	unsigned long v[3] = {0, 0, 0};
	static const char *const keys[3] = {"stripe_size", "stripe_count", "mirror_count"};

	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, value, len);
	buf[len] = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		int k;

		if (!eq)
			return -EINVAL;
		*eq = 0;
		for (k = 0; k < 3 && strcmp(tok, keys[k]); k++)
			;
		if (k == 3 || !eq[1])
			return -EINVAL;
		errno = 0;
		v[k] = strtoul(eq + 1, &end, 10);
		if (errno || *end || v[k] > UINT32_MAX)
			return -EINVAL;
	}
	if ((v[0] && !lode_ns_stripe_size_ok((uint32_t)v[0])) || v[1] > LODE_LAYOUT_TARGETS_MAX ||
	    v[2] > LODE_LAYOUT_TARGETS_MAX ||
	    (v[1] ? v[1] : 1) * (v[2] ? v[2] : 1) > LODE_LAYOUT_TARGETS_MAX)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->stripe_size = (uint32_t)v[0];
	out->stripe_count = (uint16_t)v[1];
	out->mirror_count = (uint16_t)v[2];
	return 0;
}

int lode_ns_layout_xattr_set(struct lode_txn *t, const lode_cred *c, uint64_t ino,
			     const void *value, size_t len, uint32_t flags)
{
	struct lode_disk_inode in;
	struct lode_disk_layout l;
	int rc = lode_rec_inode_get(t, ino, &in);

	if (rc)
		return rc;
	if (!S_ISDIR(in.mode))
		return S_ISREG(in.mode) ? -EPERM : -EOPNOTSUPP; /* a file's layout is fixed */
	if (!lode_perm_is_owner(c, &in))
		return -EPERM;
	if (flags & LODE_XATTR_CREATE)
		return -EEXIST; /* every directory has one */
	rc = layout_xattr_parse(value, len, &l);
	if (rc)
		return rc;
	in.layout.stripe_size = l.stripe_size;
	in.layout.stripe_count = l.stripe_count;
	in.layout.mirror_count = l.mirror_count;
	in.ctime_ns = lode_ns_now();
	return lode_rec_inode_put(t, ino, &in);
}

int lode_ns_layout_xattr_get(const struct lode_disk_inode *in, void *buf, size_t size, size_t *len)
{
	char text[128];
	int n;

	if (!S_ISDIR(in->mode) && !S_ISREG(in->mode))
		return -ENODATA;
	n = layout_xattr_format(in, text, sizeof(text));
	if (size && size < (size_t)n)
		return -ERANGE;
	if (size)
		memcpy(buf, text, (size_t)n);
	*len = (size_t)n;
	return 0;
}
