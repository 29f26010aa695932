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
 * directory; a file's layout is fixed at its creation. Setting names the fields to change
 * (the others keep their values); an empty value, or removing the xattr, makes all three
 * automatic again. A layout no file could be placed with (more copies than the cluster has
 * targets, more objects than a layout holds) is refused with -EINVAL.
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

/*
 * Parses the text form into *l, changing only the fields it names ("mirror_count=1" keeps
 * the stripe size and count); an empty value names none and resets all to automatic.
 * Unknown keys, bad numbers and a key given twice are -EINVAL, with the reason in why.
 */
static int layout_xattr_parse(const void *value, size_t len, struct lode_disk_layout *l, char *why,
			      size_t why_len)
{
	char buf[128], *save = NULL, *tok;
	unsigned long v[3];
	bool given[3] = {false, false, false};
	static const char *const keys[3] = {"stripe_size", "stripe_count", "mirror_count"};

	if (len >= sizeof(buf)) {
		snprintf(why, why_len, "value longer than %zu bytes", sizeof(buf) - 1);
		return -EINVAL;
	}
	if (len == 0) {
		l->stripe_size = 0;
		l->stripe_count = 0;
		l->mirror_count = 0;
		return 0;
	}
	memcpy(buf, value, len);
	buf[len] = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		int k;

		if (!eq) {
			snprintf(why, why_len, "'%.32s' is not KEY=NUMBER", tok);
			return -EINVAL;
		}
		*eq = 0;
		for (k = 0; k < 3 && strcmp(tok, keys[k]); k++)
			;
		if (k == 3) {
			snprintf(why, why_len,
				 "unknown key '%.32s' (stripe_size, stripe_count, mirror_count)",
				 tok);
			return -EINVAL;
		}
		if (given[k]) {
			snprintf(why, why_len, "%s given twice", keys[k]);
			return -EINVAL;
		}
		errno = 0;
		v[k] = strtoul(eq + 1, &end, 10);
		if (!eq[1] || eq[1] == '-' || errno || *end || v[k] > UINT32_MAX) {
			snprintf(why, why_len, "%s wants a number, not '%.32s'", keys[k], eq + 1);
			return -EINVAL;
		}
		given[k] = true;
	}
	if (given[0] && v[0] && !lode_ns_stripe_size_ok((uint32_t)v[0])) {
		snprintf(why, why_len, "stripe_size %lu is not a multiple of %u up to 1 GiB", v[0],
			 LODE_CHUNK_SIZE);
		return -EINVAL;
	}
	if ((given[1] && v[1] > LODE_LAYOUT_TARGETS_MAX) ||
	    (given[2] && v[2] > LODE_LAYOUT_TARGETS_MAX)) {
		snprintf(why, why_len, "a layout holds at most %u objects",
			 LODE_LAYOUT_TARGETS_MAX);
		return -EINVAL;
	}
	if (given[0])
		l->stripe_size = (uint32_t)v[0];
	if (given[1])
		l->stripe_count = (uint16_t)v[1];
	if (given[2])
		l->mirror_count = (uint16_t)v[2];
	return 0;
}

/* Whether files could ever be placed with layout l on a cluster of ntargets targets (0:
 * none known yet, nothing to check against). */
static int layout_satisfiable(const struct lode_disk_layout *l, unsigned ntargets, char *why,
			      size_t why_len)
{
	unsigned stripes = l->stripe_count ? l->stripe_count : 1;
	unsigned mirrors = l->mirror_count ? l->mirror_count : 1;

	if (stripes * mirrors > LODE_LAYOUT_TARGETS_MAX) {
		snprintf(why, why_len, "%u stripes of %u copies: a layout holds at most %u objects",
			 stripes, mirrors, LODE_LAYOUT_TARGETS_MAX);
		return -EINVAL;
	}
	if (ntargets && l->mirror_count > ntargets) {
		snprintf(why, why_len,
			 "%u copies need %u distinct storage targets; the cluster has %u",
			 l->mirror_count, l->mirror_count, ntargets);
		return -EINVAL;
	}
	return 0;
}

int lode_ns_layout_set(struct lode_txn *t, const lode_cred *c, uint64_t ino, const void *value,
		       size_t len, uint32_t flags, unsigned ntargets, char *why, size_t why_len)
{
	struct lode_disk_inode in;
	struct lode_disk_layout l;
	int rc;

	why[0] = 0;
	if (flags & ~(LODE_XATTR_CREATE | LODE_XATTR_REPLACE))
		return -EINVAL;
	rc = lode_rec_inode_get(t, ino, &in);
	if (rc)
		return rc;
	if (!S_ISDIR(in.mode))
		return S_ISREG(in.mode) ? -EPERM : -EOPNOTSUPP; /* a file's layout is fixed */
	if (!lode_perm_is_owner(c, &in))
		return -EPERM;
	if (flags & LODE_XATTR_CREATE)
		return -EEXIST; /* every directory has one */
	l = in.layout;
	rc = layout_xattr_parse(value, len, &l, why, why_len);
	if (!rc)
		rc = layout_satisfiable(&l, ntargets, why, why_len);
	if (rc)
		return rc;
	in.layout.stripe_size = l.stripe_size;
	in.layout.stripe_count = l.stripe_count;
	in.layout.mirror_count = l.mirror_count;
	in.ctime_ns = lode_ns_now();
	return lode_rec_inode_put(t, ino, &in);
}

int lode_ns_layout_xattr_set(struct lode_txn *t, const lode_cred *c, uint64_t ino,
			     const void *value, size_t len, uint32_t flags)
{
	char why[160];

	return lode_ns_layout_set(t, c, ino, value, len, flags, 0, why, sizeof(why));
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
