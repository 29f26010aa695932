/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes: SETXATTR, GETXATTR, LISTXATTR, REMOVEXATTR, with Linux's rules for
 * the user., trusted. and security. namespaces. "user.lode.layout" is not stored here but
 * answered from the inode's layout (ns_layout_xattr.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_internal.h"

enum xattr_ns { XNS_USER, XNS_TRUSTED, XNS_SECURITY };

static int xattr_namespace(const char *name, size_t len, enum xattr_ns *ns)
{
	int rc = lode_xattr_name_check(name, len);

	if (rc)
		return rc;
	/* a known prefix with nothing after it is an invalid name, as on Linux */
	if ((len == 5 && !memcmp(name, "user.", 5)) || (len == 8 && !memcmp(name, "trusted.", 8)) ||
	    (len == 9 && !memcmp(name, "security.", 9)))
		return -EINVAL;
	if (len > 5 && !memcmp(name, "user.", 5))
		*ns = XNS_USER;
	else if (len > 8 && !memcmp(name, "trusted.", 8))
		*ns = XNS_TRUSTED;
	else if (len > 9 && !memcmp(name, "security.", 9))
		*ns = XNS_SECURITY;
	else
		return -EOPNOTSUPP;
	return 0;
}

/* Linux's rules, minus capabilities: user.* follows the file's r/w bits (and exists only
 * on regular files and directories), trusted.* is root's, security.* may be read by anyone
 * and written by the owner. */
static int xattr_may(const lode_cred *c, const struct lode_disk_inode *in, enum xattr_ns ns,
		     int write)
{
	switch (ns) {
	case XNS_USER:
		if (!S_ISREG(in->mode) && !S_ISDIR(in->mode))
			return write ? -EPERM : -ENODATA;
		if (write && (in->mode & S_ISVTX) && S_ISDIR(in->mode) &&
		    !lode_perm_is_owner(c, in))
			return -EPERM;
		return lode_perm_may(c, in, write ? LODE_MAY_W : LODE_MAY_R);
	case XNS_TRUSTED:
		if (c->uid == 0)
			return 0;
		return write ? -EPERM : -ENODATA;
	case XNS_SECURITY:
		return !write || lode_perm_is_owner(c, in) ? 0 : -EPERM;
	}
	return -EOPNOTSUPP;
}

static int xattr_prep(struct lode_txn *t, const lode_cred *c, uint64_t ino, const char *name,
		      size_t len, int write, unsigned char *key, size_t *klen,
		      struct lode_disk_inode *in)
{
	enum xattr_ns ns;
	int rc = xattr_namespace(name, len, &ns);

	if (rc)
		return rc;
	rc = lode_rec_inode_get(t, ino, in);
	if (rc)
		return rc;
	rc = xattr_may(c, in, ns, write);
	if (rc)
		return rc;
	*klen = lode_rec_xattr_key(key, ino, name, len);
	return 0;
}

int lode_ns_setxattr(struct lode_txn *t, const lode_cred *c, uint64_t ino, const char *name,
		     size_t name_len, const void *value, size_t value_len, uint32_t flags)
{
	struct lode_disk_inode in;
	unsigned char key[LODE_REC_KEY_MAX];
	size_t klen, vlen;
	int rc;

	if (flags & ~(LODE_XATTR_CREATE | LODE_XATTR_REPLACE))
		return -EINVAL;
	if (value_len > LODE_XATTR_VALUE_MAX)
		return -E2BIG;
	if (lode_ns_is_layout_xattr(name, name_len))
		return lode_ns_layout_xattr_set(t, c, ino, value, value_len, flags);
	rc = xattr_prep(t, c, ino, name, name_len, 1, key, &klen, &in);
	if (rc)
		return rc;
	rc = lode_kv_get(t, LODE_DB_XATTRS, key, klen, NULL, 0, &vlen);
	if (rc && rc != -ENOENT)
		return rc;
	if (rc == 0 && (flags & LODE_XATTR_CREATE))
		return -EEXIST;
	if (rc == -ENOENT && (flags & LODE_XATTR_REPLACE))
		return -ENODATA;
	rc = lode_kv_put(t, LODE_DB_XATTRS, key, klen, value, value_len, 0);
	if (rc)
		return rc;
	in.ctime_ns = lode_ns_now();
	return lode_rec_inode_put(t, ino, &in);
}

int lode_ns_getxattr(struct lode_txn *t, const lode_cred *c, uint64_t ino, const char *name,
		     size_t name_len, void *buf, size_t size, size_t *len)
{
	struct lode_disk_inode in;
	unsigned char key[LODE_REC_KEY_MAX];
	size_t klen, vlen;
	int rc = xattr_prep(t, c, ino, name, name_len, 0, key, &klen, &in);

	if (rc)
		return rc;
	if (lode_ns_is_layout_xattr(name, name_len))
		return lode_ns_layout_xattr_get(&in, buf, size, len);
	rc = lode_kv_get(t, LODE_DB_XATTRS, key, klen, NULL, 0, &vlen);
	if (rc)
		return rc == -ENOENT ? -ENODATA : rc;
	if (size && size < vlen)
		return -ERANGE;
	if (size) {
		rc = lode_kv_get(t, LODE_DB_XATTRS, key, klen, buf, size, &vlen);
		if (rc)
			return rc;
	}
	*len = vlen;
	return 0;
}

struct list_ctx {
	const lode_cred *c;
	char *buf;
	size_t size;
	size_t len;
};

static int list_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct list_ctx *l = arg;
	const char *name;
	size_t nlen;

	(void)v, (void)vlen;
	if (lode_rec_xattr_key_decode(k, klen, &name, &nlen))
		return -EIO;
	if (l->c->uid != 0 && nlen > 8 && !memcmp(name, "trusted.", 8))
		return 0;
	if (l->size) {
		if (l->len + nlen + 1 > l->size)
			return -ERANGE;
		memcpy(l->buf + l->len, name, nlen);
		l->buf[l->len + nlen] = '\0';
	}
	l->len += nlen + 1;
	return 0;
}

int lode_ns_listxattr(struct lode_txn *t, const lode_cred *c, uint64_t ino, void *buf, size_t size,
		      size_t *len)
{
	struct list_ctx l = {.c = c, .buf = buf, .size = size};
	struct lode_disk_inode in;
	unsigned char prefix[8];
	int rc = lode_rec_inode_get(t, ino, &in);

	if (rc)
		return rc;
	lode_rec_xattr_key(prefix, ino, "", 0);
	rc = lode_kv_scan(t, LODE_DB_XATTRS, prefix, sizeof(prefix), NULL, 0, list_one, &l);
	if (rc)
		return rc;
	*len = l.len;
	return 0;
}

int lode_ns_removexattr(struct lode_txn *t, const lode_cred *c, uint64_t ino, const char *name,
			size_t name_len)
{
	struct lode_disk_inode in;
	unsigned char key[LODE_REC_KEY_MAX];
	size_t klen;
	int rc;

	if (lode_ns_is_layout_xattr(name, name_len))
		return lode_ns_layout_xattr_set(t, c, ino, "", 0, 0); /* back to automatic */
	rc = xattr_prep(t, c, ino, name, name_len, 1, key, &klen, &in);
	if (rc)
		return rc;
	rc = lode_kv_del(t, LODE_DB_XATTRS, key, klen);
	if (rc)
		return rc == -ENOENT ? -ENODATA : rc;
	in.ctime_ns = lode_ns_now();
	return lode_rec_inode_put(t, ino, &in);
}
