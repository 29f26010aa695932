/* SPDX-License-Identifier: MIT */
/*
 * READDIR and READDIRPLUS: a directory listed in cookie order from a cookie on. Cookies
 * are never reused, so a listing that goes on across changes never misses an entry that
 * stayed put; each page is one read txn, so an entry and its attributes agree.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_internal.h"

struct readdir_ctx {
	struct lode_txn *t;
	bool attrs; /* direntplus records */
	unsigned char *buf;
	size_t cap;
	size_t used;
	uint32_t count;
	uint32_t max;
	int more;
};

static int readdir_one(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct readdir_ctx *r = arg;
	struct lode_disk_dirent d;
	struct lode_wire_direntplus w = {0};
	size_t name_len, rec, fixed = r->attrs ? sizeof(w) : sizeof(w.d);
	const void *src = r->attrs ? (const void *)&w : (const void *)&w.d;
	const char *name;
	int rc = lode_rec_cookie_decode(k, klen, v, vlen, &d, &name, &name_len);

	if (rc)
		return rc;
	if (r->count == r->max) {
		r->more = 1;
		return 1;
	}
	rec = r->attrs ? LODE_NS_DIRENTPLUS_REC(name_len) : LODE_NS_DIRENT_REC(name_len);
	if (r->used + rec > r->cap) {
		r->more = 1;
		return 1;
	}
	w.d.ino = d.ino;
	w.d.cookie = d.cookie;
	w.d.mode = d.mode;
	w.d.name_len = (uint16_t)name_len;
	if (r->attrs) {
		/* same snapshot as the entry: its inode must exist */
		rc = lode_ns_getattr(r->t, d.ino, &w.attr);
		if (rc)
			return rc == -ENOENT ? -EIO : rc;
		if ((w.attr.mode & S_IFMT) != d.mode)
			return -EIO;
	}
	memcpy(r->buf + r->used, src, fixed);
	memcpy(r->buf + r->used + fixed, name, name_len);
	memset(r->buf + r->used + fixed + name_len, 0, rec - fixed - name_len);
	r->used += rec;
	r->count++;
	return 0;
}

static int readdir_page(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint64_t cookie,
			uint32_t max, bool attrs, void *buf, size_t cap, size_t *used,
			uint32_t *count, int *eof)
{
	struct readdir_ctx r = {.t = t, .attrs = attrs, .buf = buf, .cap = cap, .max = max};
	struct lode_disk_inode dir;
	unsigned char start[16];
	int rc;

	if (max == 0 || max > LODE_READDIR_MAX)
		return -EINVAL;
	rc = lode_ns_get_dir(t, c, ino, LODE_MAY_R, &dir);
	if (rc)
		return rc;
	if (cookie != UINT64_MAX) {
		/* the directory's cookies (the key's first 8 bytes), from the next one on */
		lode_rec_cookie_key(start, ino, cookie + 1);
		rc = lode_kv_scan(t, LODE_DB_COOKIES, start, 8, start, sizeof(start), readdir_one,
				  &r);
		if (rc)
			return rc;
	}
	if (r.count == 0 && r.more)
		return -EINVAL; /* cap too small for even one entry */
	*used = r.used;
	*count = r.count;
	*eof = !r.more;
	return 0;
}

int lode_ns_readdir(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint64_t cookie,
		    uint32_t max, void *buf, size_t cap, size_t *used, uint32_t *count, int *eof)
{
	return readdir_page(t, c, ino, cookie, max, false, buf, cap, used, count, eof);
}

int lode_ns_readdirplus(struct lode_txn *t, const lode_cred *c, uint64_t ino, uint64_t cookie,
			uint32_t max, void *buf, size_t cap, size_t *used, uint32_t *count,
			int *eof)
{
	return readdir_page(t, c, ino, cookie, max, true, buf, cap, used, count, eof);
}
