/* SPDX-License-Identifier: MIT */
/*
 * Client groups' identity rules (mds/identity.h): what `--client-group` accepts and refuses,
 * and what a request's credentials become under each rule.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "identity.h"

static struct lode_wire_cred cred(uint32_t uid, uint32_t gid, unsigned n, const uint32_t *groups)
{
	struct lode_wire_cred c = {.uid = uid, .gid = gid, .ngroups = n};

	if (n)
		memcpy(c.groups, groups, n * sizeof(*groups));
	return c;
}

static void test_rules_are_parsed_and_bad_ones_refused_with_a_reason(void **state)
{
	struct lode_identity id = {0};
	char why[256];

	(void)state;
	assert_int_equal(lode_identity_add(&id, "gpu-a:squash=root", why, sizeof(why)), 0);
	assert_int_equal(lode_identity_add(&id, "team_b:uids=1000-1999", why, sizeof(why)), 0);
	assert_int_equal(id.rule[1].gid_lo, 1000); /* gids follow the uids */
	assert_int_equal(id.rule[1].gid_hi, 1999);
	assert_int_equal(
	    lode_identity_add(&id, "c:uids=5-6,gids=100-200,squash=root", why, sizeof(why)), 0);
	assert_int_equal(lode_identity_add(&id, "d:squash=all", why, sizeof(why)), 0);
	assert_int_equal(id.n, 4);

	static const char *const bad[] = {
	    "nocolon",	     "Upper:squash=root",   ":squash=root",	     "e:",
	    "e:squash=some", "e:uids=9-1",	    "e:uids=1-2,uids=3-4",   "e:gids=1-2",
	    "e:uids=-1-5",   "e:uids=1-4294967295", "e:squash=all,uids=1-2", "e:color=red",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		assert_int_equal(lode_identity_add(&id, bad[i], why, sizeof(why)), -EINVAL);
		assert_true(why[0] != 0);
	}
	assert_int_equal(lode_identity_add(&id, "gpu-a:squash=all", why, sizeof(why)), -EEXIST);
	assert_int_equal(id.n, 4);
}

static void test_root_squash_makes_root_nobody_and_leaves_others(void **state)
{
	struct lode_identity id = {0};
	uint32_t g[] = {0, 27, 100};
	struct lode_wire_cred c = cred(0, 0, 3, g);
	char why[256];

	(void)state;
	assert_int_equal(lode_identity_add(&id, "g:squash=root", why, sizeof(why)), 0);
	assert_int_equal(lode_identity_apply(&id, "g", &c, why, sizeof(why)), 0);
	assert_int_equal(c.uid, LODE_ANON_ID);
	assert_int_equal(c.gid, LODE_ANON_ID);
	assert_int_equal(c.ngroups, 2); /* group 0 dropped */
	assert_int_equal(c.groups[0], 27);
	assert_int_equal(c.groups[1], 100);
	assert_int_equal(c.groups[2], 0);
	c = cred(1000, 1000, 1, (uint32_t[]){44});
	assert_int_equal(lode_identity_apply(&id, "g", &c, why, sizeof(why)), 0);
	assert_int_equal(c.uid, 1000);
	assert_int_equal(c.ngroups, 1);
}

static void test_squash_all_makes_everyone_nobody(void **state)
{
	struct lode_identity id = {0};
	struct lode_wire_cred c = cred(1234, 55, 2, (uint32_t[]){1, 2});
	char why[256];

	(void)state;
	assert_int_equal(lode_identity_add(&id, "g:squash=all", why, sizeof(why)), 0);
	assert_int_equal(lode_identity_apply(&id, "g", &c, why, sizeof(why)), 0);
	assert_int_equal(c.uid, LODE_ANON_ID);
	assert_int_equal(c.gid, LODE_ANON_ID);
	assert_int_equal(c.ngroups, 0);
	assert_int_equal(c.groups[0], 0);
}

static void test_ranges_refuse_ids_outside_and_drop_outside_groups(void **state)
{
	struct lode_identity id = {0};
	struct lode_wire_cred c;
	char why[256];

	(void)state;
	assert_int_equal(lode_identity_add(&id, "t:uids=1000-1999,gids=500-600", why, sizeof(why)),
			 0);
	c = cred(1500, 550, 3, (uint32_t[]){501, 0, 700});
	assert_int_equal(lode_identity_apply(&id, "t", &c, why, sizeof(why)), 0);
	assert_int_equal(c.uid, 1500);
	assert_int_equal(c.ngroups, 1);
	assert_int_equal(c.groups[0], 501);
	assert_int_equal(c.groups[1], 0);

	c = cred(0, 550, 0, NULL);
	assert_int_equal(lode_identity_apply(&id, "t", &c, why, sizeof(why)), -EACCES);
	assert_non_null(strstr(why, "may not act as uid 0"));
	c = cred(1500, 0, 0, NULL);
	assert_int_equal(lode_identity_apply(&id, "t", &c, why, sizeof(why)), -EACCES);
	assert_non_null(strstr(why, "gid 0"));
	c = cred(2000, 550, 0, NULL);
	assert_int_equal(lode_identity_apply(&id, "t", &c, why, sizeof(why)), -EACCES);
}

static void test_root_squash_before_ranges(void **state)
{
	struct lode_identity id = {0};
	struct lode_wire_cred c = cred(0, 0, 0, NULL);
	char why[256];

	(void)state;
	/* root becomes nobody, then nobody must lie in the range */
	assert_int_equal(
	    lode_identity_add(&id, "in:uids=65534-65534,squash=root", why, sizeof(why)), 0);
	assert_int_equal(lode_identity_add(&id, "out:uids=1000-1999,squash=root", why, sizeof(why)),
			 0);
	assert_int_equal(lode_identity_apply(&id, "in", &c, why, sizeof(why)), 0);
	assert_int_equal(c.uid, LODE_ANON_ID);
	c = cred(0, 0, 0, NULL);
	assert_int_equal(lode_identity_apply(&id, "out", &c, why, sizeof(why)), -EACCES);
}

static void test_unknown_groups_are_refused_and_plain_keys_untouched(void **state)
{
	struct lode_identity id = {0};
	struct lode_wire_cred c = cred(0, 0, 1, (uint32_t[]){0}), before = c;
	char why[256];

	(void)state;
	assert_int_equal(lode_identity_add(&id, "g:squash=root", why, sizeof(why)), 0);
	assert_int_equal(lode_identity_apply(&id, "ghost", &c, why, sizeof(why)), -EACCES);
	assert_non_null(strstr(why, "no rule"));
	assert_int_equal(lode_identity_apply(NULL, "g", &c, why, sizeof(why)), -EACCES);
	assert_int_equal(lode_identity_apply(&id, "", &c, why, sizeof(why)), 0);
	assert_memory_equal(&c, &before, sizeof(c));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules_are_parsed_and_bad_ones_refused_with_a_reason),
	    cmocka_unit_test(test_root_squash_makes_root_nobody_and_leaves_others),
	    cmocka_unit_test(test_squash_all_makes_everyone_nobody),
	    cmocka_unit_test(test_ranges_refuse_ids_outside_and_drop_outside_groups),
	    cmocka_unit_test(test_root_squash_before_ranges),
	    cmocka_unit_test(test_unknown_groups_are_refused_and_plain_keys_untouched),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
