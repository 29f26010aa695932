/* SPDX-License-Identifier: MIT */
/*
 * The page walk behind lode_store_check_pages() (store.h): every page the newest meta page
 * reaches, read with pread() into a buffer of our own, checked against LMDB's on-disk
 * format before LMDB maps and trusts it.
 *
 * LMDB's format (0.9, 64-bit, the one Debian ships), as far as the walk needs it:
 * - a page starts with a 16-byte header: page number (u64), pad (u16), flags (u16), then
 *   lower and upper (u16 each: the end of the node offsets and the start of the nodes) or,
 *   on an overflow page, the number of pages of the run (u32);
 * - a branch or leaf page holds (lower - 16) / 2 node offsets (u16, from the page start);
 *   a node is lo, hi, flags, ksize (u16 each), then the key, then (leaf) the data. A branch
 *   node's child page number is lo | hi << 16 | flags << 32; a leaf node's data size is
 *   lo | hi << 16, and with F_BIGDATA its data is the u64 number of the first overflow page;
 *   with F_SUBDATA it is a database record (a named database, in the main one);
 * - pages 0 and 1 are meta pages: magic and version at 16, the free and main database
 *   records (48 bytes each: pad u32, flags u16, depth u16, 4 counters, entries, root) at
 *   40, the last page in use at 136 and the transaction id at 144; the newer one is live;
 * - the free database maps transaction ids to lists of page numbers (a count, then that
 *   many u64).
 * Every reached page must say its own number, have the type its parent expects, hold its
 * nodes inside itself, sit at the depth its database record says, and be reached once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

#define HDR	     16u
#define NODE_HDR     8u
#define DB_REC	     48u
#define MAX_DEPTH    32u /* LMDB's cursor stack */
#define META_MAGIC   0xBEEFC0DEu
#define META_VERSION 1u

#define P_BRANCH   0x01u
#define P_LEAF	   0x02u
#define P_OVERFLOW 0x04u
#define P_TYPE	   0x6fu /* branch, leaf, overflow, meta, leaf2, sub-page */

#define F_BIGDATA 0x01u
#define F_SUBDATA 0x02u
#define F_DUPDATA 0x04u
#define P_INVALID UINT64_MAX

#define NBUF (2 * MAX_DEPTH + 1)

struct walk {
	int fd;
	unsigned psize;
	uint64_t last;	    /* last page in use */
	uint8_t *seen;	    /* a bit per page */
	bool in_named;	    /* walking a named database (its buffers are the second half) */
	uint8_t *buf[NBUF]; /* a page per level of the main tree, of a named one, and
			     * one for overflow runs */
	char *why;
	size_t why_len;
};

static uint16_t u16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

__attribute__((format(printf, 2, 3))) static int damaged(struct walk *w, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	n = (size_t)snprintf(w->why, w->why_len, "data.mdb is damaged: ");
	if (n < w->why_len) {
		va_start(ap, fmt);
		vsnprintf(w->why + n, w->why_len - n, fmt, ap);
		va_end(ap);
	}
	return -EUCLEAN;
}

static int read_at(struct walk *w, uint8_t *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(w->fd, buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int rc = -errno;

			snprintf(w->why, w->why_len, "cannot read data.mdb: %s", strerror(-rc));
			return rc;
		}
		if (n == 0)
			return damaged(w, "it ends at byte %llu, inside a page in use",
				       (unsigned long long)(off + done));
		done += (size_t)n;
	}
	return 0;
}

/* Claims pages [pgno, pgno + n) for the one reference being followed. */
static int claim(struct walk *w, uint64_t pgno, uint64_t n, const char *what)
{
	if (pgno < 2 || n == 0 || pgno > w->last || n > w->last - pgno + 1)
		return damaged(w, "%s names page %llu, outside the pages in use (2..%llu)", what,
			       (unsigned long long)pgno, (unsigned long long)w->last);
	for (uint64_t p = pgno; p < pgno + n; p++) {
		if (w->seen[p / 8] & (1u << (p % 8)))
			return damaged(w, "page %llu is reached twice (%s)", (unsigned long long)p,
				       what);
		w->seen[p / 8] |= (uint8_t)(1u << (p % 8));
	}
	return 0;
}

/* Reads page pgno into buf and checks its header: its own number and its type. */
static int read_page(struct walk *w, uint8_t *buf, uint64_t pgno, unsigned type)
{
	int rc = read_at(w, buf, w->psize, pgno * w->psize);

	if (rc)
		return rc;
	if (u64(buf) != pgno)
		return damaged(w, "page %llu says it is page %llu", (unsigned long long)pgno,
			       (unsigned long long)u64(buf));
	if ((u16(buf + 10) & P_TYPE) != type)
		return damaged(w, "page %llu has flags 0x%x where a %s page belongs",
			       (unsigned long long)pgno, u16(buf + 10),
			       type == P_BRANCH ? "branch"
			       : type == P_LEAF ? "leaf"
						: "overflow");
	return 0;
}

/* A free-list value: a count, then that many page numbers, each in use range. */
static int check_idl(struct walk *w, const uint8_t *v, uint64_t len, uint64_t pgno)
{
	uint64_t n;

	if (len < 8 || len % 8 || (n = u64(v)) != len / 8 - 1)
		return damaged(w, "a free-list record on page %llu is malformed",
			       (unsigned long long)pgno);
	for (uint64_t i = 1; i <= n; i++) {
		uint64_t p = u64(v + i * 8);

		if (p < 2 || p > w->last)
			return damaged(w, "the free list names page %llu, outside the file",
				       (unsigned long long)p);
	}
	return 0;
}

enum tree { TREE_FREE, TREE_MAIN, TREE_NAMED };

static int walk_db(struct walk *w, const uint8_t *rec, enum tree tree, const char *name);

/* A leaf node's value in an overflow run: claim the run, check its header and, for the free
 * list, its content. */
static int walk_overflow(struct walk *w, uint64_t ov, uint64_t dsize, bool freelist)
{
	uint64_t pages = (HDR - 1 + dsize) / w->psize + 1;
	uint8_t *buf = w->buf[NBUF - 1];
	int rc;

	rc = claim(w, ov, pages, "an overflow value");
	if (!rc)
		rc = read_page(w, buf, ov, P_OVERFLOW);
	if (rc)
		return rc;
	if (u32(buf + 12) != pages)
		return damaged(w, "overflow page %llu says it runs %u pages, its value needs %llu",
			       (unsigned long long)ov, u32(buf + 12), (unsigned long long)pages);
	if (freelist) {
		uint8_t *v = malloc(dsize);

		if (!v) {
			snprintf(w->why, w->why_len, "out of memory checking data.mdb");
			return -ENOMEM;
		}
		rc = read_at(w, v, dsize, ov * w->psize + HDR);
		if (!rc)
			rc = check_idl(w, v, dsize, ov);
		free(v);
	}
	return rc;
}

static int walk_page(struct walk *w, uint64_t pgno, unsigned depth, unsigned want_depth,
		     bool freelist)
{
	uint8_t *p = w->buf[(w->in_named ? MAX_DEPTH : 0) + depth - 1];
	unsigned lower, upper, n;
	bool leaf;
	int rc;

	if (depth > want_depth || depth > MAX_DEPTH)
		return damaged(w, "page %llu lies deeper (%u) than its tree (%u)",
			       (unsigned long long)pgno, depth, want_depth);
	leaf = depth == want_depth;
	rc = claim(w, pgno, 1, "a tree page");
	if (!rc)
		rc = read_page(w, p, pgno, leaf ? P_LEAF : P_BRANCH);
	if (rc)
		return rc;
	lower = u16(p + 12);
	upper = u16(p + 14);
	if (lower < HDR || lower > upper || upper > w->psize || (lower - HDR) % 2)
		return damaged(w, "page %llu has bounds %u..%u", (unsigned long long)pgno, lower,
			       upper);
	n = (lower - HDR) / 2;
	if (!leaf && n == 0)
		return damaged(w, "branch page %llu is empty", (unsigned long long)pgno);
	for (unsigned i = 0; i < n; i++) {
		unsigned off = u16(p + HDR + 2 * i), flags, ksize;
		uint64_t end;
		const uint8_t *node;

		if (off < upper || off + NODE_HDR > w->psize)
			return damaged(w, "node %u of page %llu is at %u, outside %u..%u", i,
				       (unsigned long long)pgno, off, upper, w->psize);
		node = p + off;
		flags = u16(node + 4);
		ksize = u16(node + 6);
		end = (uint64_t)off + NODE_HDR + ksize;
		if (!leaf) {
			uint64_t child =
			    u16(node) | (uint64_t)u16(node + 2) << 16 | (uint64_t)flags << 32;

			if (end > w->psize)
				return damaged(w, "node %u of page %llu runs past its page", i,
					       (unsigned long long)pgno);
			rc = walk_page(w, child, depth + 1, want_depth, freelist);
			if (rc)
				return rc;
			continue;
		}
		uint64_t dsize = u16(node) | (uint64_t)u16(node + 2) << 16;
		const uint8_t *data = node + NODE_HDR + ksize;

		if (flags & ~(F_BIGDATA | F_SUBDATA) || (flags & F_DUPDATA))
			return damaged(w, "node %u of page %llu has flags 0x%x", i,
				       (unsigned long long)pgno, flags);
		if (end + ((flags & F_BIGDATA) ? 8 : dsize) > w->psize)
			return damaged(w, "node %u of page %llu runs past its page", i,
				       (unsigned long long)pgno);
		if (flags & F_BIGDATA) {
			rc = walk_overflow(w, u64(data), dsize, freelist);
		} else if (flags & F_SUBDATA) {
			char name[64];

			if (dsize != DB_REC || freelist)
				return damaged(w, "node %u of page %llu is a bad database record",
					       i, (unsigned long long)pgno);
			snprintf(name, sizeof(name), "database %.*s", ksize > 32 ? 32 : (int)ksize,
				 (const char *)node + NODE_HDR);
			rc = walk_db(w, data, TREE_NAMED, name);
		} else if (freelist) {
			rc = check_idl(w, data, dsize, pgno);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* A database record (48 bytes): walk its tree from its root, if it has one. */
static int walk_db(struct walk *w, const uint8_t *rec, enum tree tree, const char *name)
{
	unsigned depth = u16(rec + 6);
	uint64_t root = u64(rec + 40);
	int rc;

	if (root == P_INVALID)
		return 0;
	if (depth == 0 || depth > MAX_DEPTH)
		return damaged(w, "%s has depth %u", name, depth);
	/* Named databases live in the main one's leaves; their walk uses the second half of
	 * the level buffers, while the main tree's path stays in the first. */
	if (w->in_named)
		return damaged(w, "%s is nested in a named database", name);
	w->in_named = tree == TREE_NAMED;
	rc = walk_page(w, root, 1, depth, tree == TREE_FREE);
	w->in_named = false;
	return rc;
}

int lode_store_check_pages(const char *path, unsigned psize, char *why, size_t why_len)
{
	struct walk w = {.psize = psize, .why = why, .why_len = why_len};
	uint8_t meta[2][256], rec[2][DB_REC];
	int rc, live;

	if (psize < 512 || psize > 65536 || (psize & (psize - 1))) {
		snprintf(why, why_len, "data.mdb has a page size of %u", psize);
		return -EUCLEAN;
	}
	w.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (w.fd < 0) {
		rc = -errno;
		snprintf(why, why_len, "cannot open %s: %s", path, strerror(-rc));
		return rc;
	}
	rc = read_at(&w, meta[0], sizeof(meta[0]), 0);
	if (!rc)
		rc = read_at(&w, meta[1], sizeof(meta[1]), psize);
	if (rc)
		goto out;
	for (int i = 0; i < 2; i++)
		if (u32(meta[i] + 16) != META_MAGIC || u32(meta[i] + 20) != META_VERSION) {
			rc = damaged(&w, "meta page %d is not an LMDB meta page", i);
			goto out;
		}
	live = u64(meta[1] + 144) > u64(meta[0] + 144);
	w.last = u64(meta[live] + 136);
	if (w.last < 1 || w.last > (UINT64_MAX / psize) - 1) {
		rc = damaged(&w, "its meta page names %llu pages", (unsigned long long)w.last);
		goto out;
	}
	w.seen = calloc(w.last / 8 + 1, 1);
	for (unsigned i = 0; i < NBUF; i++)
		w.buf[i] = malloc(psize);
	for (unsigned i = 0; w.seen && i < NBUF; i++)
		if (!w.buf[i])
			w.seen = (free(w.seen), NULL);
	if (!w.seen) {
		snprintf(why, why_len, "out of memory checking data.mdb");
		rc = -ENOMEM;
		goto free_bufs;
	}
	memcpy(rec[0], meta[live] + 40, DB_REC);
	memcpy(rec[1], meta[live] + 40 + DB_REC, DB_REC);
	rc = walk_db(&w, rec[0], TREE_FREE, "the free list");
	if (!rc)
		rc = walk_db(&w, rec[1], TREE_MAIN, "the main database");
free_bufs:
	free(w.seen);
	for (unsigned i = 0; i < NBUF; i++)
		free(w.buf[i]);
out:
	close(w.fd);
	return rc;
}
