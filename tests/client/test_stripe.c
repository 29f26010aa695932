/* SPDX-License-Identifier: MIT */
/*
 * liblode's stripe arithmetic (client/stripe.c) against the formula of docs/design.md:
 * byte off lives in stripe (off / stripe_size) % stripe_count, at object offset
 * (off / (stripe_size * stripe_count)) * stripe_size + off % stripe_size. Small layouts
 * are checked byte by byte against that formula written out here; large ones at chosen
 * offsets. Linked against the stripe code alone: no cluster, no client.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stripe.h"

#define KiB (1024ull)
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)
#define TiB (1024ull * GiB)

static struct lode_wire_layout layout(uint32_t stripe_size, uint16_t stripe_count)
{
	struct lode_wire_layout l;

	memset(&l, 0, sizeof(l));
	l.stripe_size = stripe_size;
	l.stripe_count = stripe_count;
	l.mirror_count = 1;
	return l;
}

/* The design's formula, written out independently of client/stripe.c. */
static unsigned formula_stripe(uint64_t ss, uint64_t sc, uint64_t off)
{
	return (unsigned)((off / ss) % sc);
}

static uint64_t formula_obj_off(uint64_t ss, uint64_t sc, uint64_t off)
{
	return (off / (ss * sc)) * ss + off % ss;
}

static void assert_maps_to(const struct lode_wire_layout *l, uint64_t off, unsigned stripe,
			   uint64_t obj_off)
{
	unsigned s = ~0u;
	uint64_t o = ~0ull;

	lode_client_stripe_map(l, off, &s, &o);
	assert_int_equal(s, stripe);
	assert_int_equal(o, obj_off);
}

static void test_first_bytes_of_each_unit_go_round_robin_then_down_a_row(void **state)
{
	struct lode_wire_layout l = layout(1 * MiB, 3);

	(void)state;
	assert_maps_to(&l, 0, 0, 0);
	assert_maps_to(&l, 1 * MiB, 1, 0);
	assert_maps_to(&l, 2 * MiB, 2, 0);
	assert_maps_to(&l, 3 * MiB, 0, 1 * MiB); /* second row */
	assert_maps_to(&l, 4 * MiB + 5, 1, 1 * MiB + 5);
	assert_maps_to(&l, 3 * MiB - 1, 2, 1 * MiB - 1); /* last byte of the first row */
}

static void test_every_byte_of_small_layouts_maps_by_the_formula(void **state)
{
	(void)state;
	for (uint32_t ss = 1; ss <= 7; ss++) {
		for (uint16_t sc = 1; sc <= 5; sc++) {
			struct lode_wire_layout l = layout(ss, sc);

			for (uint64_t off = 0; off < 4ull * ss * sc + 3; off++)
				assert_maps_to(&l, off, formula_stripe(ss, sc, off),
					       formula_obj_off(ss, sc, off));
		}
	}
}

static void test_with_one_stripe_the_object_offset_is_the_file_offset(void **state)
{
	struct lode_wire_layout l = layout(4 * MiB, 1);
	const uint64_t offs[] = {0, 1, 4 * MiB - 1, 4 * MiB, 4 * MiB + 1, 5 * GiB + 12345, 3 * TiB};

	(void)state;
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		assert_maps_to(&l, offs[i], 0, offs[i]);
}

static void test_offsets_of_a_multi_terabyte_file_do_not_overflow(void **state)
{
	/* the widest layout the wire allows, units of 4 GiB - 64 KiB: 32-bit products of
	 * stripe_size and stripe_count would wrap */
	struct lode_wire_layout l = layout(0xffff0000u, 64);
	uint64_t ss = l.stripe_size, sc = l.stripe_count;
	const uint64_t offs[] = {ss * sc - 1, ss * sc, 7 * TiB + 3, 40 * TiB + ss - 1};

	(void)state;
	assert_true(ss * sc > UINT32_MAX);
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		assert_maps_to(&l, offs[i], formula_stripe(ss, sc, offs[i]),
			       formula_obj_off(ss, sc, offs[i]));
}

/* Walks [off, off + len) piece by piece and checks that the pieces cover it once, in
 * order, each inside one stripe unit, at most IO_MAX, and placed by the formula. Returns
 * how many pieces there were. */
static unsigned check_pieces(const struct lode_wire_layout *l, uint64_t off, uint64_t len)
{
	uint64_t ss = l->stripe_size, sc = l->stripe_count, pos = 0;
	unsigned pieces = 0;

	while (pos < len) {
		unsigned stripe = ~0u;
		uint64_t obj_off = ~0ull;
		uint64_t n = lode_client_stripe_piece(l, off, pos, len, &stripe, &obj_off);
		uint64_t first = off + pos, last = first + n - 1;

		assert_true(n > 0);
		assert_true(n <= IO_MAX);
		assert_true(pos + n <= len);
		assert_int_equal(first / ss, last / ss); /* one stripe unit */
		assert_int_equal(stripe, formula_stripe(ss, sc, first));
		assert_int_equal(obj_off, formula_obj_off(ss, sc, first));
		/* and the rest of the piece is contiguous in that object */
		assert_int_equal(formula_stripe(ss, sc, last), stripe);
		assert_int_equal(formula_obj_off(ss, sc, last), obj_off + n - 1);
		pos += n;
		pieces++;
	}
	assert_int_equal(pos, len);
	return pieces;
}

static void test_a_range_spanning_stripes_and_rows_is_cut_at_every_unit(void **state)
{
	struct lode_wire_layout l = layout(1 * MiB, 4);

	(void)state;
	/* from the middle of stripe 1, row 0, to the middle of stripe 2, row 1 */
	assert_int_equal(check_pieces(&l, 1 * MiB + 512 * KiB, 5 * MiB), 6);
	/* exactly two rows, aligned */
	assert_int_equal(check_pieces(&l, 0, 8 * MiB), 8);
	/* one byte either side of a unit boundary */
	assert_int_equal(check_pieces(&l, 2 * MiB - 1, 2), 2);
}

static void test_pieces_of_units_larger_than_io_max_are_cut_at_io_max(void **state)
{
	struct lode_wire_layout l = layout(4 * MiB, 2);

	(void)state;
	assert_int_equal(check_pieces(&l, 0, 8 * MiB), 8);
	/* unaligned: 1 MiB - 1 to the first cut, then whole requests, then the unit's end */
	assert_int_equal(check_pieces(&l, 1, 4 * MiB - 1), 4);
}

static void test_with_one_stripe_pieces_are_cut_at_io_max_only(void **state)
{
	struct lode_wire_layout l = layout(64 * KiB, 1);

	(void)state;
	/* 64 KiB units: one piece per unit even with one object */
	assert_int_equal(check_pieces(&l, 0, 1 * MiB), 16);
	l = layout(8 * MiB, 1);
	assert_int_equal(check_pieces(&l, 0, 8 * MiB), 8);
}

static void test_the_last_partial_chunk_ends_the_last_piece(void **state)
{
	struct lode_wire_layout l = layout(1 * MiB, 3);
	unsigned stripe;
	uint64_t obj_off, n;

	(void)state;
	/* a range ending 1000 bytes into a unit: its last piece is those 1000 bytes */
	n = lode_client_stripe_piece(&l, 0, 4 * MiB, 4 * MiB + 1000, &stripe, &obj_off);
	assert_int_equal(n, 1000);
	assert_int_equal(stripe, 1);
	assert_int_equal(obj_off, 1 * MiB);
	assert_int_equal(check_pieces(&l, 0, 4 * MiB + 1000), 5);
	/* every small layout, every short range */
	for (uint32_t ss = 1; ss <= 5; ss++)
		for (uint16_t sc = 1; sc <= 4; sc++) {
			l = layout(ss, sc);
			for (uint64_t off = 0; off < 2ull * ss * sc; off++)
				for (uint64_t len = 1; len <= 3ull * ss * sc; len++)
					check_pieces(&l, off, len);
		}
}

/* The object sizes a file of size bytes gives, counted byte by byte. */
static void count_object_sizes(uint64_t ss, uint64_t sc, uint64_t size, uint64_t *sizes)
{
	memset(sizes, 0, sc * sizeof(*sizes));
	for (uint64_t off = 0; off < size; off++) {
		unsigned s = formula_stripe(ss, sc, off);
		uint64_t end = formula_obj_off(ss, sc, off) + 1;

		if (end > sizes[s])
			sizes[s] = end;
	}
}

static void test_object_sizes_are_what_each_stripe_holds_of_the_file(void **state)
{
	uint64_t want[8];

	(void)state;
	for (uint32_t ss = 1; ss <= 6; ss++)
		for (uint16_t sc = 1; sc <= 8; sc++) {
			struct lode_wire_layout l = layout(ss, sc);

			for (uint64_t size = 0; size <= 3ull * ss * sc + 1; size++) {
				count_object_sizes(ss, sc, size, want);
				for (unsigned s = 0; s < sc; s++)
					assert_int_equal(lode_client_object_size(&l, size, s),
							 want[s]);
			}
		}
}

static void test_object_sizes_of_a_large_file_with_a_partial_last_unit(void **state)
{
	struct lode_wire_layout l = layout(1 * MiB, 4);
	uint64_t size = 10 * GiB + 2 * MiB + 300; /* 2560 full rows, then 2 MiB + 300 bytes */

	(void)state;
	assert_int_equal(lode_client_object_size(&l, size, 0), 2560 * MiB + 1 * MiB);
	assert_int_equal(lode_client_object_size(&l, size, 1), 2560 * MiB + 1 * MiB);
	assert_int_equal(lode_client_object_size(&l, size, 2), 2560 * MiB + 300);
	assert_int_equal(lode_client_object_size(&l, size, 3), 2560 * MiB);
	assert_int_equal(lode_client_object_size(&l, 0, 3), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_bytes_of_each_unit_go_round_robin_then_down_a_row),
	    cmocka_unit_test(test_every_byte_of_small_layouts_maps_by_the_formula),
	    cmocka_unit_test(test_with_one_stripe_the_object_offset_is_the_file_offset),
	    cmocka_unit_test(test_offsets_of_a_multi_terabyte_file_do_not_overflow),
	    cmocka_unit_test(test_a_range_spanning_stripes_and_rows_is_cut_at_every_unit),
	    cmocka_unit_test(test_pieces_of_units_larger_than_io_max_are_cut_at_io_max),
	    cmocka_unit_test(test_with_one_stripe_pieces_are_cut_at_io_max_only),
	    cmocka_unit_test(test_the_last_partial_chunk_ends_the_last_piece),
	    cmocka_unit_test(test_object_sizes_are_what_each_stripe_holds_of_the_file),
	    cmocka_unit_test(test_object_sizes_of_a_large_file_with_a_partial_last_unit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
