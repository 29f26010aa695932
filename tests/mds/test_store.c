/* SPDX-License-Identifier: MIT */
/*
 * The MDS store fails closed on a damaged data directory: a truncated data.mdb, a store
 * whose format version is gone, or a cluster id that fails its checksum is refused with a
 * reason, never mapped blindly (SIGBUS) nor formatted over (a new cluster on old data).
 * Damage is done with LMDB itself or by cutting the file, in a temporary directory.
 */
#include <errno.h>
#include <lmdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "store.h"

struct fx {
	char dir[64];
	char why[256];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || fixture_tmpdir_make(f->dir, sizeof(f->dir), "lode-store-test")) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	fixture_tmpdir_remove(f->dir);
	free(f);
	return 0;
}

static int open_store(struct fx *f, int format, uint64_t *cluster_id)
{
	struct lode_store_opts o = {.dir = f->dir, .map_size = 64ull << 20, .format = format};
	struct lode_store *st = NULL;
	int rc;

	f->why[0] = '\0';
	rc = lode_store_open(&o, &st, f->why, sizeof(f->why));
	if (!rc) {
		if (cluster_id)
			*cluster_id = lode_store_cluster_id(st);
		lode_store_close(st);
	}
	return rc;
}

/* Changes the meta database with LMDB directly: val NULL deletes the key. */
static void poke_meta(struct fx *f, const char *key, const void *val, size_t len)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = {.mv_size = strlen(key), .mv_data = (void *)key};
	MDB_val v = {.mv_size = len, .mv_data = (void *)val};

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 16), 0);
	assert_int_equal(mdb_env_set_mapsize(env, 64ull << 20), 0);
	assert_int_equal(mdb_env_open(env, f->dir, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
	if (val)
		assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	else
		assert_int_equal(mdb_del(txn, dbi, &k, NULL), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static void get_meta(struct fx *f, const char *key, void *val, size_t len)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = {.mv_size = strlen(key), .mv_data = (void *)key}, v;

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 16), 0);
	assert_int_equal(mdb_env_open(env, f->dir, MDB_RDONLY, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
	assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
	assert_int_equal(v.mv_size, len);
	memcpy(val, v.mv_data, len);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

static void test_an_empty_directory_is_formatted_and_reopened_with_the_same_cluster_id(void **state)
{
	struct fx *f = *state;
	uint64_t a = 0, b = 0;

	assert_int_equal(open_store(f, 0, &a), 0);
	assert_true(a != 0);
	assert_int_equal(open_store(f, 0, &b), 0);
	assert_true(a == b);
}

static void test_a_store_that_lost_its_format_version_is_refused_not_formatted(void **state)
{
	struct fx *f = *state;
	uint64_t a = 0, b = 0;

	assert_int_equal(open_store(f, 0, &a), 0);
	poke_meta(f, "format_version", NULL, 0);
	assert_int_equal(open_store(f, 0, NULL), -EUCLEAN);
	assert_non_null(strstr(f->why, "no format version"));
	/* still refused the second time: nothing was written */
	assert_int_equal(open_store(f, 0, NULL), -EUCLEAN);
	/* an explicit format makes a new cluster */
	assert_int_equal(open_store(f, 1, &b), 0);
	assert_true(b != 0 && b != a);
}

static void test_a_format_version_of_zero_is_refused(void **state)
{
	struct fx *f = *state;
	uint32_t zero = 0;

	assert_int_equal(open_store(f, 0, NULL), 0);
	poke_meta(f, "format_version", &zero, sizeof(zero));
	assert_int_equal(open_store(f, 0, NULL), -EUCLEAN);
}

static void test_a_cluster_id_with_a_flipped_bit_is_refused(void **state)
{
	struct fx *f = *state;
	uint64_t rec[2];

	assert_int_equal(open_store(f, 0, NULL), 0);
	get_meta(f, "cluster_id", rec, sizeof(rec));
	rec[0] ^= 1ull << 17;
	poke_meta(f, "cluster_id", rec, sizeof(rec));
	assert_int_equal(open_store(f, 0, NULL), -EUCLEAN);
	assert_non_null(strstr(f->why, "cluster id is damaged"));
}

static void test_a_bare_cluster_id_from_an_older_store_gets_its_checksum(void **state)
{
	struct fx *f = *state;
	uint64_t id = 0x1234567890abcdefull, got = 0, rec[2];

	assert_int_equal(open_store(f, 0, NULL), 0);
	poke_meta(f, "cluster_id", &id, sizeof(id));
	assert_int_equal(open_store(f, 0, &got), 0);
	assert_true(got == id);
	get_meta(f, "cluster_id", rec, sizeof(rec));
	assert_true(rec[0] == id);
	assert_int_equal(open_store(f, 0, &got), 0);
	assert_true(got == id);
}

static void test_a_truncated_data_file_is_refused_before_any_page_is_read(void **state)
{
	struct fx *f = *state;
	char path[128];
	struct stat sb;

	assert_int_equal(open_store(f, 0, NULL), 0);
	snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
	assert_int_equal(stat(path, &sb), 0);
	/* keep the two meta pages, cut the rest: every data page is past the end */
	assert_int_equal(truncate(path, 2 * 4096), 0);
	assert_int_equal(open_store(f, 0, NULL), -EUCLEAN);
	assert_non_null(strstr(f->why, "truncated"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
		test_an_empty_directory_is_formatted_and_reopened_with_the_same_cluster_id, setup,
		teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_store_that_lost_its_format_version_is_refused_not_formatted, setup,
		teardown),
	    cmocka_unit_test_setup_teardown(test_a_format_version_of_zero_is_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_cluster_id_with_a_flipped_bit_is_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_bare_cluster_id_from_an_older_store_gets_its_checksum, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_truncated_data_file_is_refused_before_any_page_is_read, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
