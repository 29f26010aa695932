/* SPDX-License-Identifier: MIT */
/*
 * The namespace check behind `lodectl fsck` (FSCK, FSCK_FIX): admin only.
 *
 * FSCK answers one page at a time, each in one read-only LMDB transaction of its own, so
 * a page sees one consistent snapshot and never holds up the writer (LMDB readers do not
 * block it) nor other readers. Pages follow inode numbers.
 *
 * The namespace page covers an inode range [lo, lo + width): it scans every entry once
 * (counting the entries that lead to each inode of the range, and checking the entries
 * whose directory is in the range: their inode exists, their cookie record matches),
 * then the cookie records and the inodes and orphan records of the range. An entry scan
 * per page makes the cost pages x entries; the width grows with the inode count
 * (next_ino / FSCK_PAGES, at least FSCK_WIDTH_MIN) so that a whole check is at most
 * FSCK_PAGES + 1 scans of the entries: linear in the namespace, with counters for one
 * range (16 bytes per inode number) in memory. Past FSCK_WIDTH_MAX inode numbers per page
 * (some 100 million files) the scans would grow with the square.
 *
 * Only findings travel: a healthy namespace answers empty pages. FSCK_FILES and
 * FSCK_ORPHANS stream the layouts the client compares with the OSS inventories.
 *
 * FSCK_FIX checks its finding again inside the writer's transaction and changes nothing
 * if it is gone (a concurrent operation fixed or removed it).
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ns_internal.h"

#define FSCK_PAGES     8
#define FSCK_WIDTH_MIN 65536ull
#define FSCK_WIDTH_MAX (1ull << 22)
#define FSCK_DEPTH_MAX 4096 /* deeper parent chains count as a cycle */

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static int next_ino(struct lode_txn *t, uint64_t *out)
{
	uint64_t v = 0;
	size_t len;
	int rc = lode_kv_get(t, LODE_DB_META, "next_ino", 8, &v, sizeof(v), &len);

	if (rc)
		return rc;
	if (len != sizeof(v))
		return -EIO;
	*out = v;
	return 0;
}

/* ---- the known targets ---- */

struct known {
	uint32_t ids[LODE_TARGETS_MAX];
	unsigned n;
};

/* A target counts as known while it is in the cluster: a removed one (lodectl target
 * remove) holds nothing a layout may name, so a copy there is as lost as on an unknown one. */
static int known_cb(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct known *kn = arg;
	struct lode_disk_target d;

	(void)k, (void)klen;
	if (vlen < offsetof(struct lode_disk_target, bytes_total) || kn->n >= LODE_TARGETS_MAX)
		return 0;
	memcpy(&d, v, offsetof(struct lode_disk_target, bytes_total));
	if (d.admin != LODE_TARGET_REMOVED)
		kn->ids[kn->n++] = d.target_id;
	return 0;
}

static int known_load(struct lode_txn *t, struct known *kn)
{
	kn->n = 0;
	return lode_kv_scan(t, LODE_DB_TARGETS, NULL, 0, NULL, 0, known_cb, kn);
}

static bool known_has(const struct known *kn, uint32_t id)
{
	for (unsigned i = 0; i < kn->n; i++)
		if (kn->ids[i] == id)
			return true;
	return false;
}

/* ---- findings out ---- */

struct page {
	struct lode_txn *t;
	uint64_t lo, hi;
	uint32_t *refs;	   /* entries leading to ino lo + i */
	uint32_t *subdirs; /* entries of directory lo + i that are directories */
	uint32_t *entries; /* entries of directory lo + i */
	uint32_t *cookies; /* cookie records of directory lo + i */
	struct known known;
	char *buf;
	size_t cap, len;
	uint32_t count, max;
	uint64_t checked;
};

static void add(struct page *p, const struct lode_wire_fsck_finding *f, const char *name,
		size_t name_len)
{
	size_t rec = pad8(sizeof(*f) + name_len);
	struct lode_wire_fsck_finding w = *f;

	if (p->count >= p->max || p->len + rec > p->cap)
		return; /* past what the client asked for: the next check finds it again */
	w.name_len = (uint16_t)name_len;
	memset(p->buf + p->len, 0, rec);
	memcpy(p->buf + p->len, &w, sizeof(w));
	if (name_len)
		memcpy(p->buf + p->len + sizeof(w), name, name_len);
	p->len += rec;
	p->count++;
}

static bool in_range(const struct page *p, uint64_t ino)
{
	return ino >= p->lo && ino < p->hi;
}

/* Every entry: count it for its inode and its directory; check the range's directories'. */
static int entry_cb(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct page *p = arg;
	struct lode_disk_dirent d;
	uint64_t parent;
	const char *name = (const char *)k + 8;
	size_t name_len = klen - 8;

	if (klen < 9 || vlen != sizeof(d))
		return -EIO;
	memcpy(&d, v, sizeof(d));
	parent = lode_be64_get(k);
	if (in_range(p, d.ino))
		p->refs[d.ino - p->lo]++;
	if (in_range(p, parent)) {
		struct lode_disk_inode in;
		unsigned char ck[16];
		struct lode_disk_dirent cd;
		const char *cname;
		size_t clen, cvlen;
		char cv[sizeof(cd) + LODE_NAME_MAX];
		int rc;

		p->entries[parent - p->lo]++;
		if (S_ISDIR(d.mode))
			p->subdirs[parent - p->lo]++;
		rc = lode_rec_inode_get(p->t, d.ino, &in);
		if (rc == -ENOENT) {
			struct lode_wire_fsck_finding f = {.kind = LODE_FSCK_DANGLING,
							   .ino = d.ino,
							   .parent = parent,
							   .cookie = d.cookie};

			add(p, &f, name, name_len);
		} else if (rc) {
			return rc;
		}
		lode_rec_cookie_key(ck, parent, d.cookie);
		rc = lode_kv_get(p->t, LODE_DB_COOKIES, ck, sizeof(ck), cv, sizeof(cv), &cvlen);
		if (rc && rc != -ENOENT)
			return rc;
		if (rc || cvlen > sizeof(cv) ||
		    lode_rec_cookie_decode(ck, sizeof(ck), cv, cvlen, &cd, &cname, &clen) ||
		    cd.ino != d.ino || clen != name_len || memcmp(cname, name, clen)) {
			struct lode_wire_fsck_finding f = {.kind = LODE_FSCK_COOKIE,
							   .ino = d.ino,
							   .parent = parent,
							   .cookie = d.cookie};

			add(p, &f, name, name_len);
		}
	}
	return 0;
}

static int cookie_cb(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct page *p = arg;
	uint64_t parent;

	(void)v, (void)vlen;
	if (klen != 16)
		return -EIO;
	parent = lode_be64_get(k);
	if (parent >= p->hi)
		return 1;
	if (in_range(p, parent))
		p->cookies[parent - p->lo]++;
	return 0;
}

static void check_layout(struct page *p, uint64_t ino, const struct lode_disk_inode *in)
{
	const struct lode_disk_layout *l = &in->layout;
	unsigned n = (unsigned)l->stripe_count * l->mirror_count;
	struct lode_wire_fsck_finding f = {.ino = ino};

	if (!l->stripe_count || !l->mirror_count || n > LODE_LAYOUT_TARGETS_MAX ||
	    !lode_ns_stripe_size_ok(l->stripe_size)) {
		f.kind = LODE_FSCK_BAD_LAYOUT;
		add(p, &f, NULL, 0);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		if (!known_has(&p->known, l->targets[i])) {
			f.kind = LODE_FSCK_BAD_TARGET;
			f.index = i;
			f.found = l->targets[i];
			add(p, &f, NULL, 0);
		}
		for (unsigned j = i - i % l->mirror_count; j < i; j++)
			if (l->targets[j] == l->targets[i]) {
				f.kind = LODE_FSCK_SAME_TARGET;
				f.index = i;
				f.found = l->targets[i];
				add(p, &f, NULL, 0);
			}
	}
	if (n < 64 && (in->degraded >> n)) {
		f.kind = LODE_FSCK_BAD_MASK;
		f.found = in->degraded;
		f.expected = (1ull << n) - 1;
		add(p, &f, NULL, 0);
	}
}

/* A directory's parent chain reaches the root through directories, within the depth. */
static int check_chain(struct page *p, uint64_t ino, const struct lode_disk_inode *in, bool *ok)
{
	uint64_t cur = in->parent;

	*ok = false;
	for (int depth = 0; depth < FSCK_DEPTH_MAX; depth++) {
		struct lode_disk_inode up;
		int rc;

		if (cur == ino)
			return 0; /* a cycle through itself */
		rc = lode_rec_inode_get(p->t, cur, &up);
		if (rc == -ENOENT)
			return 0;
		if (rc)
			return rc;
		if (!S_ISDIR(up.mode))
			return 0;
		if (cur == LODE_MDS_ROOT_INO) {
			*ok = true;
			return 0;
		}
		cur = up.parent;
	}
	return 0;
}

static int inode_cb(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct page *p = arg;
	struct lode_disk_inode in;
	struct lode_wire_fsck_finding f = {0};
	uint64_t ino, i;

	if (klen != 8 || lode_rec_inode_decode(v, vlen, &in))
		return -EIO;
	ino = lode_be64_get(k);
	if (ino >= p->hi)
		return 1;
	i = ino - p->lo;
	p->checked++;
	f.ino = ino;
	if (S_ISDIR(in.mode)) {
		bool root = ino == LODE_MDS_ROOT_INO, ok = root;
		int rc;

		if (!root && p->refs[i] == 0) {
			f.kind = LODE_FSCK_UNLINKED;
			add(p, &f, NULL, 0);
		} else if (!root) {
			rc = check_chain(p, ino, &in, &ok);
			if (rc)
				return rc;
		}
		if ((!root && p->refs[i] > 1) || (p->refs[i] && !ok)) {
			f.kind = LODE_FSCK_BAD_PARENT;
			f.expected = 1;
			f.found = p->refs[i];
			f.parent = in.parent;
			add(p, &f, NULL, 0);
		}
		if (in.nlink != 2 + p->subdirs[i]) {
			f.kind = LODE_FSCK_NLINK;
			f.expected = 2 + p->subdirs[i];
			f.found = in.nlink;
			add(p, &f, NULL, 0);
		}
		if (p->entries[i] != p->cookies[i]) {
			f.kind = LODE_FSCK_COOKIE;
			f.parent = ino;
			f.expected = p->entries[i];
			f.found = p->cookies[i];
			add(p, &f, NULL, 0);
		}
		return 0;
	}
	if (p->refs[i] == 0 && in.nlink > 0) {
		f.kind = LODE_FSCK_UNLINKED;
		f.found = in.nlink;
		add(p, &f, NULL, 0);
	} else if (p->refs[i] != in.nlink) {
		f.kind = LODE_FSCK_NLINK;
		f.expected = p->refs[i];
		f.found = in.nlink;
		add(p, &f, NULL, 0);
	}
	if (S_ISREG(in.mode))
		check_layout(p, ino, &in);
	return 0;
}

static int orphan_cb(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct page *p = arg;
	struct lode_disk_orphan o;
	struct lode_disk_inode in;
	uint64_t ino, gen;
	unsigned n;
	int rc = lode_rec_orphan_decode(k, klen, v, vlen, &ino, &gen, &o);

	if (rc)
		return rc;
	if (ino >= p->hi)
		return 1;
	p->checked++;
	n = (unsigned)o.layout.stripe_count * o.layout.mirror_count;
	rc = lode_rec_inode_get(p->t, ino, &in);
	if (rc && rc != -ENOENT)
		return rc;
	/* an orphan's inode is gone, or kept unlinked (nlink 0) for a program that has it open */
	if (n == 0 || n > LODE_LAYOUT_TARGETS_MAX || (n < 64 && (o.pending >> n)) ||
	    (!rc && in.nlink > 0 && in.layout.generation == gen)) {
		struct lode_wire_fsck_finding f = {
		    .kind = LODE_FSCK_BAD_ORPHAN, .ino = ino, .expected = gen, .found = o.pending};

		add(p, &f, NULL, 0);
	}
	return 0;
}

static int namespace_page(struct lode_txn *t, uint64_t lo, uint64_t top, struct page *p)
{
	uint64_t width = top / FSCK_PAGES + 1;
	unsigned char key[8];
	int rc;

	if (width < FSCK_WIDTH_MIN)
		width = FSCK_WIDTH_MIN;
	if (width > FSCK_WIDTH_MAX)
		width = FSCK_WIDTH_MAX;
	p->t = t;
	p->lo = lo;
	p->hi = lo + width;
	p->refs = calloc(width * 4, sizeof(uint32_t));
	if (!p->refs)
		return -ENOMEM;
	p->subdirs = p->refs + width;
	p->entries = p->subdirs + width;
	p->cookies = p->entries + width;
	rc = known_load(t, &p->known);
	if (!rc)
		rc = lode_kv_scan(t, LODE_DB_DIRENTS, NULL, 0, NULL, 0, entry_cb, p);
	lode_be64_put(key, lo);
	if (!rc)
		rc = lode_kv_scan(t, LODE_DB_COOKIES, NULL, 0, key, sizeof(key), cookie_cb, p);
	if (!rc)
		rc = lode_kv_scan(t, LODE_DB_INODES, NULL, 0, key, sizeof(key), inode_cb, p);
	if (!rc) {
		unsigned char okey[16];

		lode_be64_put(okey, lo);
		memset(okey + 8, 0, 8);
		rc = lode_kv_scan(t, LODE_DB_ORPHANS, NULL, 0, okey, sizeof(okey), orphan_cb, p);
	}
	free(p->refs);
	p->refs = NULL;
	return rc;
}

/* ---- layouts for the cross-check ---- */

static size_t file_rec(const struct lode_disk_layout *l)
{
	return pad8(sizeof(struct lode_wire_fsck_file) +
		    4u * (unsigned)l->stripe_count * l->mirror_count);
}

static void put_file(struct page *p, uint64_t ino, uint64_t gen, uint64_t size, uint64_t mask,
		     uint32_t nlink, const struct lode_disk_layout *l)
{
	struct lode_wire_fsck_file f = {.ino = ino,
					.size = size,
					.generation = gen,
					.degraded = mask,
					.stripe_size = l->stripe_size,
					.stripe_count = l->stripe_count,
					.mirror_count = l->mirror_count,
					.nlink = nlink};
	size_t rec = file_rec(l);

	memset(p->buf + p->len, 0, rec);
	memcpy(p->buf + p->len, &f, sizeof(f));
	memcpy(p->buf + p->len + sizeof(f), l->targets,
	       4u * (unsigned)l->stripe_count * l->mirror_count);
	p->len += rec;
	p->count++;
}

static bool layout_sane(const struct lode_disk_layout *l)
{
	unsigned n = (unsigned)l->stripe_count * l->mirror_count;

	return n > 0 && n <= LODE_LAYOUT_TARGETS_MAX;
}

struct stream {
	struct page *p;
	uint64_t next;
	bool full;
};

static int file_cb(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct stream *s = arg;
	struct lode_disk_inode in;
	uint64_t ino;

	if (klen != 8 || lode_rec_inode_decode(v, vlen, &in))
		return -EIO;
	ino = lode_be64_get(k);
	if (s->p->count >= s->p->max) {
		s->next = ino;
		s->full = true;
		return 1;
	}
	s->p->checked++;
	if (S_ISREG(in.mode) && in.nlink > 0 && layout_sane(&in.layout))
		put_file(s->p, ino, in.layout.generation, in.size, in.degraded, in.nlink,
			 &in.layout);
	return 0;
}

/* ORPHANS: degraded carries the record's pending mask, size 0. A page ends between two
 * inodes, never between two generations of one. */
static int orphan_file_cb(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct stream *s = arg;
	struct lode_disk_orphan o;
	uint64_t ino, gen;
	int rc = lode_rec_orphan_decode(k, klen, v, vlen, &ino, &gen, &o);

	if (rc)
		return rc;
	if (s->p->count >= s->p->max && ino != s->next - 1) {
		s->next = ino;
		s->full = true;
		return 1;
	}
	if (s->p->len + file_rec(&o.layout) > s->p->cap) {
		s->next = ino; /* cannot happen with the capacity given: stop rather than split */
		s->full = true;
		return 1;
	}
	s->p->checked++;
	s->next = ino + 1;
	if (layout_sane(&o.layout))
		put_file(s->p, ino, gen, 0, o.pending, 0, &o.layout);
	return 0;
}

/* ---- a path for an inode (repairs need one: lode_repair works on paths) ---- */

struct find {
	uint64_t ino, parent;
	char name[LODE_NAME_MAX + 1];
	size_t len;
};

static int find_cb(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct find *fd = arg;
	struct lode_disk_dirent d;

	if (klen < 9 || vlen != sizeof(d) || klen - 8 > LODE_NAME_MAX)
		return -EIO;
	memcpy(&d, v, sizeof(d));
	if (d.ino != fd->ino)
		return 0;
	fd->parent = lode_be64_get(k);
	fd->len = klen - 8;
	memcpy(fd->name, (const char *)k + 8, fd->len);
	return 1;
}

/* Builds the path backwards from the end of buf. Costs a scan of the entries for a file
 * and of one directory per level: for the few files a repair touches. */
static int path_of(struct lode_txn *t, uint64_t ino, char *buf, size_t cap, size_t *len)
{
	size_t pos = cap;
	struct find fd = {.ino = ino};
	unsigned char key[8];
	int rc, depth = 0;

	if (ino == LODE_MDS_ROOT_INO) {
		buf[0] = '/';
		*len = 1;
		return 0;
	}
	rc = lode_kv_scan(t, LODE_DB_DIRENTS, NULL, 0, NULL, 0, find_cb, &fd);
	if (rc < 0)
		return rc;
	while (fd.len) {
		if (pos < fd.len + 1 || depth++ > FSCK_DEPTH_MAX)
			return -ENAMETOOLONG;
		pos -= fd.len;
		memcpy(buf + pos, fd.name, fd.len);
		buf[--pos] = '/';
		if (fd.parent == LODE_MDS_ROOT_INO) {
			memmove(buf, buf + pos, cap - pos);
			*len = cap - pos;
			return 0;
		}
		fd.ino = fd.parent;
		fd.len = 0;
		{
			struct lode_disk_inode dir;

			rc = lode_rec_inode_get(t, fd.ino, &dir);
			if (rc)
				return rc == -ENOENT ? 0 : rc;
			lode_be64_put(key, dir.parent);
			rc = lode_kv_scan(t, LODE_DB_DIRENTS, key, sizeof(key), NULL, 0, find_cb,
					  &fd);
			if (rc < 0)
				return rc;
		}
	}
	*len = 0; /* no name leads to it */
	return 0;
}

int lode_ns_fsck(struct lode_txn *t, const struct lode_wire_fsck_req *q,
		 struct lode_wire_fsck_rep *rep, void **data, size_t *data_len)
{
	struct page p = {.max = q->max};
	uint64_t top;
	int rc = next_ino(t, &top);

	if (rc)
		return rc;
	memset(rep, 0, sizeof(*rep));
	rep->next_ino = top;
	if (q->what == LODE_FSCK_PATH) {
		p.cap = 4096;
		p.buf = malloc(p.cap);
		if (!p.buf)
			return -ENOMEM;
		rc = path_of(t, q->cursor, p.buf, p.cap, &p.len);
		rep->eof = 1;
	} else if (q->what == LODE_FSCK_NAMESPACE) {
		p.cap =
		    (size_t)q->max * pad8(sizeof(struct lode_wire_fsck_finding) + LODE_NAME_MAX);
		if (p.cap > LODE_DATA_MAX)
			p.cap = LODE_DATA_MAX;
		p.buf = malloc(p.cap);
		if (!p.buf)
			return -ENOMEM;
		rc = namespace_page(t, q->cursor ? q->cursor : 1, top, &p);
		rep->next = p.hi;
		rep->eof = p.hi >= top;
	} else {
		struct stream s = {.p = &p};
		unsigned char key[16] = {0};
		bool files = q->what == LODE_FSCK_FILES;

		p.cap = ((size_t)q->max + 64) *
			pad8(sizeof(struct lode_wire_fsck_file) + 4 * LODE_LAYOUT_TARGETS_MAX);
		if (p.cap > LODE_DATA_MAX)
			p.cap = LODE_DATA_MAX;
		if (q->max > p.cap / 304 - 64)
			p.max = (uint32_t)(p.cap / 304 - 64);
		p.buf = malloc(p.cap);
		if (!p.buf)
			return -ENOMEM;
		lode_be64_put(key, q->cursor);
		rc = lode_kv_scan(t, files ? LODE_DB_INODES : LODE_DB_ORPHANS, NULL, 0, key,
				  files ? 8 : 16, files ? file_cb : orphan_file_cb, &s);
		rep->next = s.next;
		rep->eof = !s.full;
	}
	if (rc < 0) {
		free(p.buf);
		return rc;
	}
	rep->count = p.count;
	rep->checked = p.checked;
	*data = p.buf;
	*data_len = p.len;
	return 0;
}

/* ---- repairs, in the writer's transaction ---- */

struct count {
	uint64_t ino;
	uint32_t refs, subdirs;
};

static int count_cb(void *arg, const void *k, size_t klen, const void *v, size_t vlen)
{
	struct count *c = arg;
	struct lode_disk_dirent d;

	if (klen < 9 || vlen != sizeof(d))
		return -EIO;
	memcpy(&d, v, sizeof(d));
	if (d.ino == c->ino)
		c->refs++;
	if (lode_be64_get(k) == c->ino && S_ISDIR(d.mode))
		c->subdirs++;
	return 0;
}

static int fix_nlink(struct lode_txn *t, uint64_t ino, uint32_t *fixed)
{
	struct lode_disk_inode in;
	struct count c = {.ino = ino};
	uint32_t want;
	int rc = lode_rec_inode_get(t, ino, &in);

	if (rc)
		return rc == -ENOENT ? 0 : rc;
	rc = lode_kv_scan(t, LODE_DB_DIRENTS, NULL, 0, NULL, 0, count_cb, &c);
	if (rc)
		return rc;
	if (S_ISDIR(in.mode))
		want = 2 + c.subdirs;
	else if (c.refs == 0)
		return 0; /* no entry: RELINK's case, not a count to set */
	else
		want = c.refs;
	if (in.nlink == want)
		return 0;
	in.nlink = want;
	in.ctime_ns = lode_ns_now();
	*fixed = 1;
	return lode_rec_inode_put(t, ino, &in);
}

static int fix_dangling(struct lode_txn *t, uint64_t parent, uint64_t cookie, uint32_t *fixed)
{
	unsigned char ck[16];
	char cv[sizeof(struct lode_disk_dirent) + LODE_NAME_MAX];
	struct lode_disk_dirent cd, d;
	struct lode_disk_inode in;
	const char *name;
	size_t vlen, len;
	int rc;

	lode_rec_cookie_key(ck, parent, cookie);
	rc = lode_kv_get(t, LODE_DB_COOKIES, ck, sizeof(ck), cv, sizeof(cv), &vlen);
	if (rc)
		return rc == -ENOENT ? 0 : rc;
	rc = lode_rec_cookie_decode(ck, sizeof(ck), cv, vlen > sizeof(cv) ? sizeof(cv) : vlen, &cd,
				    &name, &len);
	if (rc)
		return rc;
	rc = lode_rec_dirent_get(t, parent, name, len, &d);
	if (rc)
		return rc == -ENOENT ? 0 : rc;
	rc = lode_rec_inode_get(t, d.ino, &in);
	if (rc != -ENOENT)
		return rc; /* it leads somewhere (again) */
	rc = lode_rec_dirent_del(t, parent, name, len, &d);
	if (!rc && S_ISDIR(d.mode))
		rc = lode_ns_touch_dir(t, parent, -1, lode_ns_now());
	if (!rc)
		*fixed = 1;
	return rc;
}

static int fix_relink(struct lode_txn *t, uint64_t ino, uint32_t *fixed)
{
	struct lode_disk_inode in, root;
	struct count c = {.ino = ino};
	char name[40];
	int len, rc = lode_rec_inode_get(t, ino, &in);

	if (rc)
		return rc == -ENOENT ? 0 : rc;
	rc = lode_kv_scan(t, LODE_DB_DIRENTS, NULL, 0, NULL, 0, count_cb, &c);
	if (rc)
		return rc;
	if (c.refs || (!S_ISDIR(in.mode) && in.nlink == 0))
		return 0; /* named again, or unlinked on purpose */
	rc = lode_rec_inode_get(t, LODE_MDS_ROOT_INO, &root);
	if (rc)
		return rc;
	len = snprintf(name, sizeof(name), "lost+found.%" PRIu64, ino);
	rc = lode_rec_dirent_add(t, LODE_MDS_ROOT_INO, &root, name, (size_t)len, ino, in.mode);
	if (rc)
		return rc;
	root.mtime_ns = root.ctime_ns = lode_ns_now();
	if (S_ISDIR(in.mode)) {
		root.nlink++;
		in.parent = LODE_MDS_ROOT_INO;
	} else {
		in.nlink = 1;
	}
	in.ctime_ns = root.ctime_ns;
	rc = lode_rec_inode_put(t, LODE_MDS_ROOT_INO, &root);
	if (!rc)
		rc = lode_rec_inode_put(t, ino, &in);
	if (!rc)
		*fixed = 1;
	return rc;
}

static int fix_degrade(struct lode_txn *t, uint64_t ino, uint32_t index, uint32_t *fixed)
{
	struct lode_disk_inode in;
	struct known kn;
	int rc = lode_rec_inode_get(t, ino, &in);

	if (rc)
		return rc == -ENOENT ? 0 : rc;
	if (!S_ISREG(in.mode) || index >= (unsigned)in.layout.stripe_count * in.layout.mirror_count)
		return 0;
	rc = known_load(t, &kn);
	if (rc)
		return rc;
	if (known_has(&kn, in.layout.targets[index]) || (in.degraded & (1ull << index)))
		return 0;
	in.degraded |= 1ull << index;
	*fixed = 1;
	return lode_rec_inode_put(t, ino, &in);
}

int lode_ns_fsck_fix(struct lode_txn *t, const struct lode_wire_fsck_fix_req *q,
		     struct lode_wire_fsck_fix_rep *rep)
{
	uint32_t fixed = 0;
	int rc = -EINVAL;

	switch (q->action) {
	case LODE_FSCK_FIX_NLINK:
		rc = fix_nlink(t, q->ino, &fixed);
		break;
	case LODE_FSCK_FIX_DANGLING:
		rc = fix_dangling(t, q->parent, q->cookie, &fixed);
		break;
	case LODE_FSCK_FIX_RELINK:
		rc = fix_relink(t, q->ino, &fixed);
		break;
	case LODE_FSCK_FIX_DEGRADE:
		rc = fix_degrade(t, q->ino, q->index, &fixed);
		break;
	}
	if (rc)
		return rc;
	*rep = (struct lode_wire_fsck_fix_rep){.fixed = fixed};
	return 0;
}
