/* SPDX-License-Identifier: MIT */
/*
 * Directory grants, the MDS's table (mds/grant.h): who is renewed, who waits and how long,
 * and what a new MDS assumes of grants given before it started. Times are passed in, so
 * nothing here sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "grant.h"

#define LIFE  250u
#define START 1000000u /* the MDS started then */
#define LATER (START + LIFE)

static void test_the_holder_renews_and_everyone_else_waits_for_the_lapse(void **state)
{
	struct lode_grants *g;
	uint64_t tok, other;
	bool renewed;

	(void)state;
	assert_int_equal(lode_grants_create(&g, LIFE, LIFE, START), 0);
	tok = lode_grants_give(g, 42, LATER);
	assert_true(tok != 0);
	other = lode_grants_give(g, 43, LATER);
	assert_true(other != 0 && other != tok);
	assert_int_equal(lode_grants_give(g, 42, LATER), 0); /* one grant per directory */
	/* the holder: renewed, again and again, past the first life */
	assert_int_equal(lode_grants_enter(g, 42, tok, LATER + 100, &renewed), 0);
	assert_true(renewed);
	assert_int_equal(lode_grants_enter(g, 42, tok, LATER + 300, &renewed), 0);
	assert_true(renewed);
	/* a directory without a grant: nobody waits */
	assert_int_equal(lode_grants_enter(g, 7, 0, LATER + 300, &renewed), 0);
	assert_false(renewed);
	/* another grant's token is not this one's: it waits out the life from the renewal */
	assert_int_equal(lode_grants_enter(g, 42, other, LATER + 310, &renewed), 240);
	assert_false(renewed);
	/* the grant is ended: the holder is renewed no more, and its own name goes on (its
	 * reply tells it so); everyone else waits */
	assert_int_equal(lode_grants_enter(g, 42, tok, LATER + 320, &renewed), 0);
	assert_false(renewed);
	assert_int_equal(lode_grants_enter(g, 42, 0, LATER + 549, &renewed), 1);
	/* lapsed: gone, and never renewed again */
	assert_int_equal(lode_grants_enter(g, 42, 0, LATER + 550, &renewed), 0);
	assert_int_equal(lode_grants_enter(g, 42, tok, LATER + 560, &renewed), 0);
	assert_false(renewed);
	assert_int_equal(lode_grants_count(g), 1);
	lode_grants_destroy(g);
}

/* A holder told its grant ended gives it back (GRANT_RETURN): it has lapsed at once, and
 * what waited for it goes on. Any other token, or none, gives nothing back. */
static void test_a_grant_given_back_has_lapsed_at_once(void **state)
{
	struct lode_grants *g;
	uint64_t tok;
	bool renewed;

	(void)state;
	assert_int_equal(lode_grants_create(&g, LIFE, LIFE, START), 0);
	tok = lode_grants_give(g, 42, LATER);
	assert_int_equal(lode_grants_enter(g, 42, tok, LATER + 10, &renewed), 0);
	assert_true(renewed);
	/* another client's name ends it, and waits out the life from the renewal */
	assert_int_equal(lode_grants_enter(g, 42, 0, LATER + 20, &renewed), 240);
	assert_false(lode_grants_return(g, 42, tok + 1));
	assert_false(lode_grants_return(g, 42, 0));
	assert_false(lode_grants_return(g, 43, tok));
	assert_int_equal(lode_grants_enter(g, 42, 0, LATER + 30, &renewed), 230);
	/* the holder's next name goes on, not renewed; it gives the grant back */
	assert_int_equal(lode_grants_enter(g, 42, tok, LATER + 40, &renewed), 0);
	assert_false(renewed);
	assert_true(lode_grants_return(g, 42, tok));
	assert_int_equal(lode_grants_enter(g, 42, 0, LATER + 41, &renewed), 0);
	assert_false(renewed);
	/* never renewed again */
	assert_int_equal(lode_grants_enter(g, 42, tok, LATER + 42, &renewed), 0);
	assert_false(renewed);
	/* given back before anyone ended it (a chmod by the holder): the same */
	tok = lode_grants_give(g, 44, LATER);
	assert_true(lode_grants_return(g, 44, tok));
	assert_int_equal(lode_grants_enter(g, 44, 0, LATER + 1, &renewed), 0);
	assert_int_equal(lode_grants_enter(g, 44, tok, LATER + 2, &renewed), 0);
	assert_false(renewed);
	lode_grants_destroy(g);
}

/* A grant that lapsed with no other name added is renewed by its holder's next name: the
 * holder answered nothing from it meanwhile, and nothing was added that it misses. */
static void test_a_lapsed_grant_nobody_touched_is_renewed_by_its_holder(void **state)
{
	struct lode_grants *g;
	uint64_t tok;
	bool renewed;

	(void)state;
	assert_int_equal(lode_grants_create(&g, LIFE, LIFE, START), 0);
	tok = lode_grants_give(g, 9, LATER);
	assert_int_equal(lode_grants_enter(g, 9, tok, LATER + 5000, &renewed), 0);
	assert_true(renewed);
	lode_grants_destroy(g);
}

/* Grants of an MDS before this one may still be valid at their holders for a life after the
 * start: every name waits for that, then nobody does. */
static void test_a_new_mds_holds_every_name_for_a_life_after_its_start(void **state)
{
	struct lode_grants *g;
	bool renewed;

	(void)state;
	assert_int_equal(lode_grants_create(&g, LIFE, LIFE, START), 0);
	assert_int_equal(lode_grants_enter(g, 5, 0, START, &renewed), LIFE);
	assert_int_equal(lode_grants_enter(g, 5, 12345, START + 200, &renewed), 50);
	assert_false(renewed);
	assert_int_equal(lode_grants_enter(g, 5, 12345, START + LIFE, &renewed), 0);
	assert_false(renewed);
	lode_grants_destroy(g);
}

/* The table is bounded: lapsed grants make room, valid ones are never dropped for it. */
static void test_the_table_drops_only_lapsed_grants_when_full(void **state)
{
	struct lode_grants *g;
	uint64_t first;
	bool renewed;
	unsigned given = 0;

	(void)state;
	assert_int_equal(lode_grants_create(&g, LIFE, LIFE, START), 0);
	first = lode_grants_give(g, 1, LATER);
	for (uint64_t d = 2; d < 200000; d++)
		given += lode_grants_give(g, d, LATER) != 0;
	assert_true(given < 200000 - 2);
	assert_int_equal(lode_grants_count(g), given + 1);
	/* still valid: renewed */
	assert_int_equal(lode_grants_enter(g, 1, first, LATER + 10, &renewed), 0);
	assert_true(renewed);
	/* once they lapse, a give makes room */
	assert_true(lode_grants_give(g, 300000, LATER + 10 * LIFE) != 0);
	assert_int_equal(lode_grants_count(g), 1);
	lode_grants_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_holder_renews_and_everyone_else_waits_for_the_lapse),
	    cmocka_unit_test(test_a_grant_given_back_has_lapsed_at_once),
	    cmocka_unit_test(test_a_lapsed_grant_nobody_touched_is_renewed_by_its_holder),
	    cmocka_unit_test(test_a_new_mds_holds_every_name_for_a_life_after_its_start),
	    cmocka_unit_test(test_the_table_drops_only_lapsed_grants_when_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
