/* SPDX-License-Identifier: MIT */
/*
 * liblode-loader's safetensors header parser against hand-made files: a good one (with
 * metadata, padding and tensors out of order) is placed tensor by tensor, and every kind
 * of malformed header is refused with its own reason, never a crash or a bad placement:
 * a header length larger than the file, offsets past the data, overlapping tensors, sizes
 * that do not match the shape, unknown dtypes, broken JSON.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lode/loader.h"

/* A file image: the 8-byte length, the JSON (padded with spaces to pad bytes), then
 * data_len bytes of data. */
static unsigned char *image(const char *json, size_t pad, uint64_t data_len, size_t *len)
{
	size_t n = strlen(json) + pad;
	unsigned char *p = calloc(1, 8 + n + data_len);

	assert_non_null(p);
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)((uint64_t)n >> (8 * i));
	memcpy(p + 8, json, strlen(json));
	memset(p + 8 + strlen(json), ' ', pad);
	*len = 8 + n + data_len;
	return p;
}

/* Parses json + data_len bytes of data; returns the result and the reason in err. */
static int parse(const char *json, uint64_t data_len, struct lode_st_header *h, char *err)
{
	size_t len;
	unsigned char *p = image(json, 0, data_len, &len);
	int rc;

	err[0] = 0;
	rc = lode_st_parse(p, len, len, h, NULL, err, 256);
	free(p);
	return rc;
}

static void refused(const char *json, uint64_t data_len, const char *reason)
{
	struct lode_st_header h;
	char err[256];

	assert_int_equal(parse(json, data_len, &h, err), -EBADMSG);
	if (!strstr(err, reason))
		fail_msg("'%s' refused with '%s', wanted '%s'", json, err, reason);
}

static void test_a_good_header_places_every_tensor(void **state)
{
	const char *json = "{\"__metadata__\":{\"format\":\"pt\"},"
			   "\"b\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[16,28]},"
			   "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
			   "\"empty\":{\"dtype\":\"I64\",\"shape\":[0,5],\"data_offsets\":[28,28]},"
			   "\"scalar\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[28,29]}}";
	struct lode_st_header h;
	unsigned char *p;
	size_t len;

	(void)state;
	p = image(json, 5, 29, &len);
	assert_int_equal(lode_st_parse(p, len, len, &h, NULL, NULL, 0), 0);
	assert_int_equal(h.data_offset, 8 + strlen(json) + 5);
	assert_int_equal(h.data_len, 29);
	assert_int_equal(h.count, 4);
	/* sorted by where they start */
	assert_string_equal(h.tensors[0].name, "a");
	assert_string_equal(h.tensors[0].dtype, "F32");
	assert_int_equal(h.tensors[0].ndim, 1);
	assert_int_equal(h.tensors[0].shape[0], 4);
	assert_string_equal(h.tensors[1].name, "b");
	assert_int_equal(h.tensors[1].elem_size, 2);
	assert_int_equal(h.tensors[1].begin, 16);
	assert_int_equal(h.tensors[1].end, 28);
	assert_int_equal(h.tensors[1].shape[1], 3);
	assert_int_equal(h.tensors[2].end - h.tensors[2].begin, 0);
	assert_string_equal(h.tensors[3].name, "scalar");
	assert_int_equal(h.tensors[3].ndim, 0);
	lode_st_header_free(&h);
	free(p);
}

static void test_a_short_buffer_asks_for_the_whole_header(void **state)
{
	const char *json = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
	struct lode_st_header h;
	size_t len, need = 0;
	unsigned char *p = image(json, 0, 4, &len);

	(void)state;
	assert_int_equal(lode_st_parse(p, 8, len, &h, &need, NULL, 0), -EAGAIN);
	assert_int_equal(need, 8 + strlen(json));
	assert_int_equal(lode_st_parse(p, need, len, &h, NULL, NULL, 0), 0);
	assert_int_equal(h.count, 1);
	lode_st_header_free(&h);
	free(p);
}

static void test_a_header_length_past_the_file_is_refused(void **state)
{
	unsigned char p[64] = {0};
	struct lode_st_header h;
	char err[256];

	(void)state;
	p[0] = 200; /* 200 bytes of header in a 64-byte file */
	assert_int_equal(lode_st_parse(p, sizeof(p), sizeof(p), &h, NULL, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "larger than the file"));
	/* a length near 2^64 must not wrap around */
	memset(p, 0xff, 8);
	assert_int_equal(lode_st_parse(p, sizeof(p), sizeof(p), &h, NULL, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "larger than the file"));
	assert_int_equal(lode_st_parse(p, 5, 5, &h, NULL, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "too short"));
}

static void test_offsets_past_the_end_of_the_data_are_refused(void **state)
{
	(void)state;
	refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}", 20,
		"past the end of the data");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[4,3]}}", 20,
		"run backwards");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,0]}}", 20,
		"data_offsets is not");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", 20,
		"data_offsets is not");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0, 1.5]}}", 20,
		"data_offsets is not");
}

static void test_overlapping_tensors_are_refused(void **state)
{
	(void)state;
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[10],\"data_offsets\":[0,10]},"
		"\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[8,12]}}",
		16, "overlap");
	/* an empty tensor between them must not hide the overlap */
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[10],\"data_offsets\":[0,10]},"
		"\"e\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[2,2]},"
		"\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[5,7]}}",
		16, "overlap");
	/* the same bytes twice */
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
		"\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
		16, "overlap");
}

static void test_sizes_and_dtypes_that_do_not_match_are_refused(void **state)
{
	(void)state;
	refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}}", 16,
		"needs 16");
	refused("{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,2]}}", 16,
		"unknown dtype 'Q4'");
	refused("{\"a\":{\"shape\":[2],\"data_offsets\":[0,2]}}", 16, "no dtype");
	refused("{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,2]}}", 16, "no shape");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[-2],\"data_offsets\":[0,2]}}", 16,
		"is not a size");
	/* a shape whose byte count overflows 64 bits */
	refused("{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],"
		"\"data_offsets\":[0,8]}}",
		16, "too large");
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}",
		16, "dimensions");
}

static void test_broken_json_is_refused(void **state)
{
	(void)state;
	refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}", 4, "not JSON");
	refused("[1,2,3]", 4, "not a JSON object");
	refused("{\"a\":3}", 4, "not an object");
	refused("{\"__metadata__\":[1]}", 4, "__metadata__");
	refused("{}xx", 4, "bytes after");
	refused("{", 4, "cannot hold");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_good_header_places_every_tensor),
	    cmocka_unit_test(test_a_short_buffer_asks_for_the_whole_header),
	    cmocka_unit_test(test_a_header_length_past_the_file_is_refused),
	    cmocka_unit_test(test_offsets_past_the_end_of_the_data_are_refused),
	    cmocka_unit_test(test_overlapping_tensors_are_refused),
	    cmocka_unit_test(test_sizes_and_dtypes_that_do_not_match_are_refused),
	    cmocka_unit_test(test_broken_json_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
