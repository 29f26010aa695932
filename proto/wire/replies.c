/* SPDX-License-Identifier: MIT */
/*
 * Reply-side decoders used by clients: what a server sent back is checked as strictly as a
 * request, and record pages (readdir entries, targets) are walked one bounded record at a
 * time.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "codec.h"

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
	if (((const struct lode_wire_target *)rec)->target_id == 0 ||
	    (((const struct lode_wire_target *)rec)->state != LODE_TARGET_UP &&
	     ((const struct lode_wire_target *)rec)->state != LODE_TARGET_DOWN) ||
	    ((const struct lode_wire_target *)rec)->admin > LODE_TARGET_REMOVED ||
	    ((const struct lode_wire_target *)rec)->reserved1)
		return -EPROTO;
	*t = rec;
	*addr = n;
	return 1;
}

int lode_target_list_check(const void *data, uint64_t data_len, uint32_t count)
{
	const struct lode_wire_target *t;
	struct lode_name addr;
	uint64_t pos = 0, n = 0;
	int rc;

	while ((rc = lode_target_next(data, data_len, &pos, &t, &addr)) == 1)
		n++;
	return rc < 0 || n != count ? -EPROTO : 0;
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
