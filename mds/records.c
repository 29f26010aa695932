/* SPDX-License-Identifier: MIT */
/*
 * How the namespace's records are keyed, read back and checked (see records.h and the
 * table in mds_spec.h). Fixed-size values are read into their struct only when LMDB's
 * length matches it exactly; variable ones are bounded before they are copied.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "codec.h"
#include "records.h"

/* ---- keys ---- */

static void ino_key(unsigned char key[8], uint64_t ino)
{
	lode_be64_put(key, ino);
}

/* inode number + name: dirents and xattrs */
static size_t name_key(unsigned char *key, uint64_t ino, const char *name, size_t len)
{
	lode_be64_put(key, ino);
	memcpy(key + 8, name, len);
	return 8 + len;
}

/* two big-endian numbers: cookies (parent, cookie) and orphans (ino, generation) */
static void pair_key(unsigned char key[16], uint64_t a, uint64_t b)
{
	lode_be64_put(key, a);
	lode_be64_put(key + 8, b);
}

/* Reads a fixed-size value: -EIO when the stored one has another length. */
static int get_fixed(struct lode_txn *t, enum lode_db db, const void *key, size_t klen, void *out,
		     size_t size)
{
	size_t len;
	int rc = lode_kv_get(t, db, key, klen, out, size, &len);

	if (!rc && len != size)
		rc = -EIO;
	return rc;
}

/* ---- inodes ---- */

/* A regular file's copies are found at targets[stripe * mirror_count + mirror]: a damaged
 * record's counts must not take those indexes past the array. */
static bool file_layout_ok(const struct lode_disk_inode *in)
{
	const struct lode_disk_layout *l = &in->layout;

	return !S_ISREG(in->mode) ||
	       (l->stripe_count && l->mirror_count &&
		(unsigned)l->stripe_count * l->mirror_count <= LODE_LAYOUT_TARGETS_MAX);
}

size_t lode_rec_inode_encode(const struct lode_disk_inode *in, void *buf)
{
	unsigned n = LODE_LAYOUT_TARGETS_MAX;

	while (n && !in->layout.targets[n - 1])
		n--;
	memcpy(buf, in, LODE_DISK_INODE_HEAD + 4 * n);
	return LODE_DISK_INODE_HEAD + 4 * n;
}

int lode_rec_inode_decode(const void *v, size_t vlen, struct lode_disk_inode *out)
{
	if (vlen < LODE_DISK_INODE_HEAD || vlen > sizeof(*out) || (vlen - LODE_DISK_INODE_HEAD) % 4)
		return -EIO;
	memset(out, 0, sizeof(*out));
	memcpy(out, v, vlen);
	return 0;
}

int lode_rec_inode_get(struct lode_txn *t, uint64_t ino, struct lode_disk_inode *out)
{
	struct lode_disk_inode in;
	unsigned char key[8];
	size_t len;
	int rc;

	ino_key(key, ino);
	rc = lode_kv_get(t, LODE_DB_INODES, key, sizeof(key), &in, sizeof(in), &len);
	if (!rc)
		rc = lode_rec_inode_decode(&in, len, out);
	if (!rc && !file_layout_ok(out))
		rc = -EIO;
	return rc;
}

int lode_rec_inode_put(struct lode_txn *t, uint64_t ino, const struct lode_disk_inode *in)
{
	struct lode_disk_inode buf;
	unsigned char key[8];
	size_t len = lode_rec_inode_encode(in, &buf);

	ino_key(key, ino);
	return lode_kv_put(t, LODE_DB_INODES, key, sizeof(key), &buf, len, 0);
}

int lode_rec_inode_erase(struct lode_txn *t, uint64_t ino)
{
	unsigned char key[8];
	int rc;

	ino_key(key, ino);
	rc = lode_kv_del_prefix(t, LODE_DB_XATTRS, key, sizeof(key));
	if (rc)
		return rc;
	return lode_kv_del(t, LODE_DB_INODES, key, sizeof(key));
}

/* ---- directory entries ---- */

int lode_rec_dirent_get(struct lode_txn *t, uint64_t parent, const char *name, size_t len,
			struct lode_disk_dirent *out)
{
	unsigned char key[LODE_REC_KEY_MAX];
	size_t klen = name_key(key, parent, name, len);

	return get_fixed(t, LODE_DB_DIRENTS, key, klen, out, sizeof(*out));
}

/* The cookies record of entry d: the entry, then its name. */
static int put_cookie(struct lode_txn *t, uint64_t parent, const struct lode_disk_dirent *d,
		      const char *name, size_t len, unsigned flags)
{
	unsigned char ckey[16];
	unsigned char cval[sizeof(struct lode_disk_dirent) + LODE_NAME_MAX];

	pair_key(ckey, parent, d->cookie);
	memcpy(cval, d, sizeof(*d));
	memcpy(cval + sizeof(*d), name, len);
	return lode_kv_put(t, LODE_DB_COOKIES, ckey, sizeof(ckey), cval, sizeof(*d) + len, flags);
}

int lode_rec_dirent_add(struct lode_txn *t, uint64_t parent, struct lode_disk_inode *dir,
			const char *name, size_t len, uint64_t ino, uint32_t mode)
{
	unsigned char key[LODE_REC_KEY_MAX];
	struct lode_disk_dirent d = {
	    .ino = ino, .cookie = dir->next_cookie++, .mode = mode & S_IFMT};
	size_t klen = name_key(key, parent, name, len);
	int rc;

	rc = lode_kv_put(t, LODE_DB_DIRENTS, key, klen, &d, sizeof(d), LODE_KV_NOOVERWRITE);
	if (rc)
		return rc;
	return put_cookie(t, parent, &d, name, len, LODE_KV_NOOVERWRITE);
}

int lode_rec_dirent_del(struct lode_txn *t, uint64_t parent, const char *name, size_t len,
			const struct lode_disk_dirent *d)
{
	unsigned char key[LODE_REC_KEY_MAX], ckey[16];
	size_t klen = name_key(key, parent, name, len);
	int rc = lode_kv_del(t, LODE_DB_DIRENTS, key, klen);

	if (rc)
		return rc;
	pair_key(ckey, parent, d->cookie);
	return lode_kv_del(t, LODE_DB_COOKIES, ckey, sizeof(ckey));
}

int lode_rec_dirent_retarget(struct lode_txn *t, uint64_t parent, const char *name, size_t len,
			     const struct lode_disk_dirent *old, uint64_t ino, uint32_t mode)
{
	unsigned char key[LODE_REC_KEY_MAX];
	struct lode_disk_dirent d = *old;
	size_t klen = name_key(key, parent, name, len);
	int rc;

	d.ino = ino;
	d.mode = mode & S_IFMT;
	rc = lode_kv_put(t, LODE_DB_DIRENTS, key, klen, &d, sizeof(d), 0);
	if (rc)
		return rc;
	return put_cookie(t, parent, &d, name, len, 0);
}

static int stop_at_first(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	(void)k, (void)klen, (void)v, (void)vlen;
	*(int *)arg = 1;
	return 1;
}

int lode_rec_dir_empty(struct lode_txn *t, uint64_t ino)
{
	unsigned char prefix[8];
	int found = 0;
	int rc;

	ino_key(prefix, ino);
	rc = lode_kv_scan(t, LODE_DB_DIRENTS, prefix, sizeof(prefix), NULL, 0, stop_at_first,
			  &found);
	return rc ? rc : !found;
}

void lode_rec_cookie_key(unsigned char key[16], uint64_t parent, uint64_t cookie)
{
	pair_key(key, parent, cookie);
}

int lode_rec_cookie_decode(const void *k, size_t klen, const void *v, size_t vlen,
			   struct lode_disk_dirent *d, const char **name, size_t *name_len)
{
	(void)k;
	if (klen != 16 || vlen < sizeof(*d) || vlen > sizeof(*d) + LODE_NAME_MAX ||
	    lode_name_check((const char *)v + sizeof(*d), vlen - sizeof(*d)))
		return -EIO;
	memcpy(d, v, sizeof(*d));
	*name = (const char *)v + sizeof(*d);
	*name_len = vlen - sizeof(*d);
	return 0;
}

/* ---- symlink targets ---- */

int lode_rec_symlink_put(struct lode_txn *t, uint64_t ino, const char *target, size_t len)
{
	unsigned char key[8];

	ino_key(key, ino);
	return lode_kv_put(t, LODE_DB_SYMLINKS, key, sizeof(key), target, len, 0);
}

int lode_rec_symlink_get(struct lode_txn *t, uint64_t ino, char *buf, size_t cap, size_t *len)
{
	unsigned char key[8];
	size_t vlen;
	int rc;

	ino_key(key, ino);
	rc = lode_kv_get(t, LODE_DB_SYMLINKS, key, sizeof(key), buf, cap, &vlen);
	if (rc)
		return rc;
	if (vlen > cap)
		return -ERANGE;
	*len = vlen;
	return 0;
}

int lode_rec_symlink_del(struct lode_txn *t, uint64_t ino)
{
	unsigned char key[8];

	ino_key(key, ino);
	return lode_kv_del(t, LODE_DB_SYMLINKS, key, sizeof(key));
}

/* ---- xattrs ---- */

size_t lode_rec_xattr_key(unsigned char *key, uint64_t ino, const char *name, size_t len)
{
	return name_key(key, ino, name, len);
}

int lode_rec_xattr_key_decode(const void *k, size_t klen, const char **name, size_t *len)
{
	if (klen <= 8)
		return -EIO;
	*name = (const char *)k + 8;
	*len = klen - 8;
	return 0;
}

/* ---- orphans ---- */

int lode_rec_orphan_get(struct lode_txn *t, uint64_t ino, uint64_t generation,
			struct lode_disk_orphan *out)
{
	unsigned char key[16];

	pair_key(key, ino, generation);
	return get_fixed(t, LODE_DB_ORPHANS, key, sizeof(key), out, sizeof(*out));
}

int lode_rec_orphan_put(struct lode_txn *t, uint64_t ino, uint64_t generation,
			const struct lode_disk_orphan *o)
{
	unsigned char key[16];

	pair_key(key, ino, generation);
	return lode_kv_put(t, LODE_DB_ORPHANS, key, sizeof(key), o, sizeof(*o), 0);
}

int lode_rec_orphan_del(struct lode_txn *t, uint64_t ino, uint64_t generation)
{
	unsigned char key[16];

	pair_key(key, ino, generation);
	return lode_kv_del(t, LODE_DB_ORPHANS, key, sizeof(key));
}

int lode_rec_orphan_decode(const void *k, size_t klen, const void *v, size_t vlen, uint64_t *ino,
			   uint64_t *generation, struct lode_disk_orphan *out)
{
	if (klen != 16 || vlen != sizeof(*out))
		return -EIO;
	memcpy(out, v, sizeof(*out));
	*ino = lode_be64_get(k);
	*generation = lode_be64_get((const char *)k + 8);
	return 0;
}

/* ---- moves ---- */

static void move_key(unsigned char key[24], uint64_t ino, uint64_t generation, uint32_t stripe,
		     uint32_t target)
{
	pair_key(key, ino, generation);
	for (int i = 0; i < 4; i++) {
		key[16 + i] = (unsigned char)(stripe >> (24 - 8 * i));
		key[20 + i] = (unsigned char)(target >> (24 - 8 * i));
	}
}

static uint32_t be32_at(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int lode_rec_move_get(struct lode_txn *t, uint64_t ino, uint64_t generation, uint32_t stripe,
		      uint32_t target, struct lode_disk_move *out)
{
	unsigned char key[24];

	move_key(key, ino, generation, stripe, target);
	return get_fixed(t, LODE_DB_MOVES, key, sizeof(key), out, sizeof(*out));
}

int lode_rec_move_put(struct lode_txn *t, uint64_t ino, uint64_t generation, uint32_t stripe,
		      uint32_t target, const struct lode_disk_move *m)
{
	unsigned char key[24];

	move_key(key, ino, generation, stripe, target);
	return lode_kv_put(t, LODE_DB_MOVES, key, sizeof(key), m, sizeof(*m), 0);
}

int lode_rec_move_del(struct lode_txn *t, uint64_t ino, uint64_t generation, uint32_t stripe,
		      uint32_t target)
{
	unsigned char key[24];

	move_key(key, ino, generation, stripe, target);
	return lode_kv_del(t, LODE_DB_MOVES, key, sizeof(key));
}

int lode_rec_move_decode(const void *k, size_t klen, const void *v, size_t vlen,
			 struct lode_wire_move_entry *e, struct lode_disk_move *out)
{
	const unsigned char *key = k;

	if (klen != 24 || vlen != sizeof(*out))
		return -EIO;
	memcpy(out, v, sizeof(*out));
	if (out->kind != LODE_MOVE_INTENT && out->kind != LODE_MOVE_OLD)
		return -EIO;
	e->ino = lode_be64_get(key);
	e->generation = lode_be64_get(key + 8);
	e->stripe = be32_at(key + 16);
	e->target = be32_at(key + 20);
	return 0;
}

/* ---- what the wire shows ---- */

void lode_rec_to_attr(uint64_t ino, const struct lode_disk_inode *in, struct lode_wire_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->size = in->size;
	if (S_ISDIR(in->mode))
		a->blocks = 8;
	else if (S_ISREG(in->mode) && in->blocks_p1)
		a->blocks = in->blocks_p1 - 1; /* what the data takes: holes take nothing */
	else
		a->blocks = (in->size + 511) / 512;
	a->atime_ns = in->atime_ns;
	a->mtime_ns = in->mtime_ns;
	a->ctime_ns = in->ctime_ns;
	a->mode = in->mode;
	a->uid = in->uid;
	a->gid = in->gid;
	a->nlink = in->nlink;
	a->rdev = (S_ISCHR(in->mode) || S_ISBLK(in->mode)) ? in->rdev : 0;
	a->generation = S_ISREG(in->mode) ? in->layout.generation : 0;
}

void lode_rec_to_layout(const struct lode_disk_inode *in, struct lode_wire_layout *l)
{
	memset(l, 0, sizeof(*l));
	if (!S_ISREG(in->mode))
		return;
	l->stripe_size = in->layout.stripe_size;
	l->stripe_count = in->layout.stripe_count;
	l->mirror_count = in->layout.mirror_count;
	l->generation = in->layout.generation;
	memcpy(l->targets, in->layout.targets, sizeof(l->targets));
}

void lode_rec_to_layout_rep(uint64_t ino, const struct lode_disk_inode *in,
			    struct lode_wire_layout_rep *out)
{
	memset(out, 0, sizeof(*out));
	lode_rec_to_attr(ino, in, &out->attr);
	lode_rec_to_layout(in, &out->layout);
	out->degraded = S_ISREG(in->mode) ? in->degraded : 0;
}
