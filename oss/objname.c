/* SPDX-License-Identifier: MIT */
/*
 * Object store: what an object's files are called and where they live. Names are made from
 * the object's numbers only, fixed width and lower case (objstore.h), and a name is accepted
 * back only in that canonical form, in the directory its ino maps to.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "objstore_impl.h"

int lode_objid_cmp(const struct lode_wire_objid *a, const struct lode_wire_objid *b)
{
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	if (a->generation != b->generation)
		return a->generation < b->generation ? -1 : 1;
	if (a->stripe != b->stripe)
		return a->stripe < b->stripe ? -1 : 1;
	return 0;
}

void objstore_name(const struct lode_wire_objid *id, char *buf, bool sum)
{
	snprintf(buf, OBJ_NAME_BUF, "%016" PRIx64 ".%016" PRIx64 ".%08" PRIx32 "%s", id->ino,
		 id->generation, id->stripe, sum ? ".sum" : "");
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool parse_hex(const char *s, unsigned ndigits, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < ndigits; i++) {
		int d = hexval(s[i]);

		if (d < 0)
			return false;
		v = v << 4 | (unsigned)d;
	}
	*out = v;
	return true;
}

/* Accepts only the canonical data-file name, in the directory its ino maps to. */
bool objstore_parse_name(const char *name, unsigned dir, struct lode_wire_objid *id)
{
	uint64_t ino, gen, stripe;

	if (strlen(name) != OBJ_NAME_LEN || name[16] != '.' || name[33] != '.')
		return false;
	if (!parse_hex(name, 16, &ino) || !parse_hex(name + 17, 16, &gen) ||
	    !parse_hex(name + 34, 8, &stripe))
		return false;
	if ((ino % NDIRS) != dir)
		return false;
	id->ino = ino;
	id->generation = gen;
	id->stripe = (uint32_t)stripe;
	id->reserved = 0;
	return true;
}

pthread_mutex_t *objstore_lock(struct lode_objstore *st, const struct lode_wire_objid *id)
{
	uint64_t h =
	    id->ino * 0x9e3779b97f4a7c15ull ^ id->generation * 0xc2b2ae3d27d4eb4full ^ id->stripe;

	return &st->locks[(h >> 32) % NLOCKS];
}

int objstore_dirfd(const struct lode_objstore *st, const struct lode_wire_objid *id)
{
	return st->dirfd[id->ino % NDIRS];
}
