/* SPDX-License-Identifier: MIT */
/*
 * liblode-loader: the safetensors header. A file is an 8-byte little-endian header length
 * N, N bytes of JSON (an object: "__metadata__" maps strings to strings, every other key
 * is a tensor {"dtype", "shape", "data_offsets": [begin, end]}, offsets relative to the
 * data after the header), then the data. Everything a peer could have written wrong is
 * checked here, before a byte is placed: the header inside the file, the JSON, each dtype,
 * each size against its shape, each tensor inside the data, no two overlapping.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "lode/loader.h"

static const struct {
	const char *name;
	unsigned size;
} dtypes[] = {
    {"F64", 8},	 {"F32", 4},	 {"F16", 2},	 {"BF16", 2}, {"I64", 8},     {"I32", 4},
    {"I16", 2},	 {"I8", 1},	 {"U64", 8},	 {"U32", 4},  {"U16", 2},     {"U8", 1},
    {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"C64", 8},  {"F8_E8M0", 1},
};

static int bad(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (err && err_len) {
		va_start(ap, fmt);
		vsnprintf(err, err_len, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static int by_begin(const void *a, const void *b)
{
	const struct lode_st_tensor *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* A JSON integer that is exact and not negative. */
static int get_u64(struct json_object *o, uint64_t *out)
{
	int64_t v;

	if (!json_object_is_type(o, json_type_int))
		return -1;
	errno = 0;
	v = json_object_get_int64(o);
	if (v < 0 || errno)
		return -1;
	/* json-c clamps what does not fit in int64 to INT64_MAX */
	if (v == INT64_MAX)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static int tensor_parse(const char *name, struct json_object *o, uint64_t data_len,
			struct lode_st_tensor *t, char *err, size_t err_len)
{
	struct json_object *dtype, *shape, *offs;
	uint64_t elems = 1;
	const char *d;
	size_t i;

	if (!json_object_is_type(o, json_type_object))
		return bad(err, err_len, "tensor '%s': not an object", name);
	if (!json_object_object_get_ex(o, "dtype", &dtype) ||
	    !json_object_is_type(dtype, json_type_string))
		return bad(err, err_len, "tensor '%s': no dtype", name);
	d = json_object_get_string(dtype);
	t->dtype = NULL;
	for (i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (!strcmp(d, dtypes[i].name)) {
			t->dtype = dtypes[i].name;
			t->elem_size = dtypes[i].size;
		}
	if (!t->dtype)
		return bad(err, err_len, "tensor '%s': unknown dtype '%.32s'", name, d);
	if (!json_object_object_get_ex(o, "shape", &shape) ||
	    !json_object_is_type(shape, json_type_array))
		return bad(err, err_len, "tensor '%s': no shape", name);
	t->ndim = (unsigned)json_object_array_length(shape);
	if (t->ndim > LODE_ST_MAX_DIMS)
		return bad(err, err_len, "tensor '%s': %u dimensions (at most %d)", name, t->ndim,
			   LODE_ST_MAX_DIMS);
	for (i = 0; i < t->ndim; i++) {
		if (get_u64(json_object_array_get_idx(shape, i), &t->shape[i]))
			return bad(err, err_len, "tensor '%s': shape[%zu] is not a size", name, i);
		if (t->shape[i] && elems > UINT64_MAX / t->shape[i])
			return bad(err, err_len, "tensor '%s': shape too large", name);
		elems *= t->shape[i];
	}
	if (elems > UINT64_MAX / t->elem_size)
		return bad(err, err_len, "tensor '%s': shape too large", name);
	if (!json_object_object_get_ex(o, "data_offsets", &offs) ||
	    !json_object_is_type(offs, json_type_array) || json_object_array_length(offs) != 2 ||
	    get_u64(json_object_array_get_idx(offs, 0), &t->begin) ||
	    get_u64(json_object_array_get_idx(offs, 1), &t->end))
		return bad(err, err_len, "tensor '%s': data_offsets is not [begin, end]", name);
	if (t->begin > t->end)
		return bad(err, err_len, "tensor '%s': data_offsets [%llu, %llu] run backwards",
			   name, (unsigned long long)t->begin, (unsigned long long)t->end);
	if (t->end > data_len)
		return bad(err, err_len,
			   "tensor '%s': data_offsets [%llu, %llu] past the end of the data (%llu "
			   "bytes)",
			   name, (unsigned long long)t->begin, (unsigned long long)t->end,
			   (unsigned long long)data_len);
	if (t->end - t->begin != elems * t->elem_size)
		return bad(err, err_len,
			   "tensor '%s': %llu bytes of data, but %s with this shape needs %llu",
			   name, (unsigned long long)(t->end - t->begin), t->dtype,
			   (unsigned long long)(elems * t->elem_size));
	t->name = strdup(name);
	return t->name ? 0 : -ENOMEM;
}

int lode_st_parse(const void *head, size_t head_len, uint64_t file_size, struct lode_st_header *out,
		  size_t *need, char *err, size_t err_len)
{
	const unsigned char *p = head;
	struct lode_st_header h = {0};
	struct json_tokener *tok;
	struct json_object *root;
	uint64_t n = 0;
	size_t used;
	int rc = 0;

	if (file_size < 8 || head_len < 8)
		return bad(err, err_len, "%llu bytes: too short for a safetensors header",
			   (unsigned long long)(file_size < head_len ? file_size : head_len));
	for (int i = 7; i >= 0; i--)
		n = n << 8 | p[i];
	if (n > file_size - 8)
		return bad(err, err_len, "header length %llu is larger than the file (%llu bytes)",
			   (unsigned long long)n, (unsigned long long)file_size);
	if (n > LODE_ST_HEADER_MAX)
		return bad(err, err_len, "header length %llu is over the %u bytes allowed",
			   (unsigned long long)n, LODE_ST_HEADER_MAX);
	if (n < 2)
		return bad(err, err_len, "header length %llu cannot hold a JSON object",
			   (unsigned long long)n);
	if (head_len < 8 + n) {
		if (need)
			*need = (size_t)(8 + n);
		return -EAGAIN;
	}
	h.data_offset = 8 + n;
	h.data_len = file_size - h.data_offset;

	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	root = json_tokener_parse_ex(tok, (const char *)p + 8, (int)n);
	used = tok->char_offset;
	if (!root || json_tokener_get_error(tok) != json_tokener_success) {
		rc = bad(err, err_len, "header is not JSON (%s at byte %zu)",
			 json_tokener_error_desc(json_tokener_get_error(tok)), used);
		json_tokener_free(tok);
		json_object_put(root);
		return rc;
	}
	json_tokener_free(tok);
	/* the format pads the header with spaces; anything else after the object is wrong */
	for (size_t i = used; i < n; i++)
		if (p[8 + i] != ' ' && p[8 + i] != '\n' && p[8 + i] != '\t' && p[8 + i] != '\r') {
			json_object_put(root);
			return bad(err, err_len, "bytes after the header's JSON object (at %zu)",
				   i);
		}
	if (!json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return bad(err, err_len, "header is not a JSON object");
	}

	h.tensors = calloc((size_t)json_object_object_length(root) + 1, sizeof(*h.tensors));
	if (!h.tensors) {
		json_object_put(root);
		return -ENOMEM;
	}
	json_object_object_foreach(root, key, val)
	{
		if (!strcmp(key, "__metadata__")) {
			if (!json_object_is_type(val, json_type_object)) {
				rc = bad(err, err_len, "__metadata__ is not an object");
				break;
			}
			continue;
		}
		rc = tensor_parse(key, val, h.data_len, &h.tensors[h.count], err, err_len);
		if (rc)
			break;
		h.count++;
	}
	json_object_put(root);
	if (!rc) {
		qsort(h.tensors, h.count, sizeof(*h.tensors), by_begin);
		const struct lode_st_tensor *last = NULL; /* the one reaching furthest so far */

		for (unsigned i = 0; i < h.count; i++) {
			const struct lode_st_tensor *b = &h.tensors[i];

			if (b->end == b->begin) /* no bytes: takes no room, overlaps nothing */
				continue;
			if (last && last->end > b->begin) {
				rc = bad(err, err_len,
					 "tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] overlap",
					 last->name, (unsigned long long)last->begin,
					 (unsigned long long)last->end, b->name,
					 (unsigned long long)b->begin, (unsigned long long)b->end);
				break;
			}
			if (!last || b->end > last->end)
				last = b;
		}
	}
	if (rc) {
		lode_st_header_free(&h);
		return rc;
	}
	*out = h;
	return 0;
}

void lode_st_header_free(struct lode_st_header *h)
{
	if (!h || !h->tensors)
		return;
	for (unsigned i = 0; i < h->count; i++)
		free((char *)h->tensors[i].name);
	free(h->tensors);
	h->tensors = NULL;
	h->count = 0;
}
