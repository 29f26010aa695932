/* SPDX-License-Identifier: MIT */
/*
 * Directory grants (client/grant.c, mds/grant.h) against a real local cluster: a client
 * that made a directory answers lookups of names missing there itself, and another
 * client's new name there is never hidden from it once that client's call returned
 * (close-to-open across clients, the promise grants must keep).
 *
 * liblode is linked from its sources with lode_rpc_call_direct wrapped (-Wl,--wrap), so the
 * test counts the LOOKUPs each client really sends to the MDS.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client.h"
#include "cluster.h"
#include "lode/lode.h"
#include "rpc.h"

static struct test_cluster tc;
static _Atomic unsigned lookups_sent; /* LOOKUPs sent to the MDS, all clients */

int __real_lode_rpc_call_direct(struct lode_rpc_conn *conn, struct lode_call *call);
int __wrap_lode_rpc_call_direct(struct lode_rpc_conn *conn, struct lode_call *call);

int __wrap_lode_rpc_call_direct(struct lode_rpc_conn *conn, struct lode_call *call)
{
	if (call->opcode == LODE_OP_LOOKUP)
		lookups_sent++;
	return __real_lode_rpc_call_direct(conn, call);
}

static int setup(void **state)
{
	(void)state;
	return cluster_up(&tc, 2) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	cluster_down(&tc);
	return 0;
}

static struct lode_client *client(void)
{
	struct lode_client_opts o = {.size = sizeof(o), .timeout_ms = 10000};
	struct lode_client *c;

	assert_int_equal(lode_connect(tc.mds, &o, &c), 0);
	return c;
}

static void create(struct lode_client *c, const char *path)
{
	struct lode_file *f;

	assert_int_equal(lode_open(c, path, O_CREAT | O_EXCL | O_WRONLY, 0644, &f), 0);
	assert_int_equal(lode_close(f), 0);
}

/* stat of path: its result, and whether it went to the MDS (1) or was answered here (0) */
static int stat_sent(struct lode_client *c, const char *path, int *sent)
{
	struct lode_stat st;
	unsigned before = lookups_sent;
	int rc = lode_stat(c, path, &st);

	*sent = lookups_sent - before > 0;
	return rc;
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * A grant lasts LODE_GRANT_MS from the send of the call that made or renewed it, so whether
 * a lookup soon after is answered from it depends on how busy the machine is. The test
 * notes when the holder's last such call left (renewed_at); a missing name looked up well
 * within a grant's life must be answered by the holder itself. Past that, either answer is
 * right, and the test asserts only ENOENT.
 */
static uint64_t renewed_at;

static int mkdir_held(struct lode_client *c, const char *path, uint32_t mode)
{
	renewed_at = ms_now();
	return lode_mkdir(c, path, mode);
}

static void expect_missing_here(struct lode_client *c, const char *path)
{
	uint64_t before = atomic_load(&c->grant_answers);

	assert_int_equal(lode_stat(c, path, &(struct lode_stat){0}), -ENOENT);
	if (ms_now() - renewed_at < LODE_GRANT_MS / 2)
		assert_int_equal(atomic_load(&c->grant_answers), before + 1);
}

static void test_the_maker_of_a_directory_answers_missing_names_itself(void **state)
{
	struct lode_client *a = client();
	uint64_t answers;
	int sent;

	(void)state;
	assert_int_equal(mkdir_held(a, "/mine", 0755), 0);
	/* the walk looks up "mine" at the MDS; "nope" is answered here */
	expect_missing_here(a, "/mine/nope");
	/* a name this client added is asked for at the MDS, and found */
	renewed_at = ms_now();
	create(a, "/mine/f");
	answers = atomic_load(&a->grant_answers);
	assert_int_equal(stat_sent(a, "/mine/f", &sent), 0);
	assert_int_equal(sent, 1);
	renewed_at = ms_now();
	assert_int_equal(lode_mkdir(a, "/mine/sub", 0755), 0);
	assert_int_equal(lode_symlink(a, "f", "/mine/ln"), 0);
	assert_int_equal(lode_rename(a, "/mine/f", "/mine/g", 0), 0);
	for (const char *const *p = (const char *const[]){"/mine/sub", "/mine/ln", "/mine/g", NULL};
	     *p; p++)
		assert_int_equal(lode_lstat(a, *p, &(struct lode_stat){0}), 0);
	assert_int_equal(atomic_load(&a->grant_answers), answers);
	/* the rename renewed the grant: still answered here */
	renewed_at = ms_now();
	assert_int_equal(lode_rename(a, "/mine/g", "/mine/h", 0), 0);
	expect_missing_here(a, "/mine/other");
	lode_disconnect(a);
}

/* Another client's new name in a granted directory: its call returns only once the
 * holder has stopped answering from its grant, so the holder finds the name right after. */
static void test_another_clients_name_is_seen_by_the_holder_as_soon_as_it_is_made(void **state)
{
	static const char *const ops[] = {"create", "mkdir", "symlink", "link", "rename"};
	struct lode_client *a = client(), *b = client();

	(void)state;
	create(b, "/b-file");
	create(b, "/b-moved");
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		char dir[64], name[96];
		unsigned answers;
		uint64_t t0;
		int sent, rc;

		snprintf(dir, sizeof(dir), "/held-%s", ops[i]);
		snprintf(name, sizeof(name), "%s/x", dir);
		assert_int_equal(mkdir_held(a, dir, 0755), 0);
		expect_missing_here(a, name);
		answers = atomic_load(&a->grant_answers);
		t0 = ms_now();
		if (!strcmp(ops[i], "create"))
			create(b, name);
		else if (!strcmp(ops[i], "mkdir"))
			assert_int_equal(lode_mkdir(b, name, 0755), 0);
		else if (!strcmp(ops[i], "symlink"))
			assert_int_equal(lode_symlink(b, "target", name), 0);
		else if (!strcmp(ops[i], "link"))
			assert_int_equal(lode_link(b, "/b-file", name), 0);
		else
			assert_int_equal(lode_rename(b, "/b-moved", name, 0), 0);
		/* held at most a grant's life, not refused */
		if (ms_now() - t0 > 10000)
			fail_msg("%s waited %llu ms", ops[i], (unsigned long long)(ms_now() - t0));
		rc = lode_lstat(a, name, &(struct lode_stat){0});
		if (rc)
			fail_msg("after another client's %s, the holder's lookup says %s", ops[i],
				 strerror(-rc));
		/* the grant is gone: the holder's lookups of missing names go to the MDS */
		snprintf(name, sizeof(name), "%s/y", dir);
		assert_int_equal(stat_sent(a, name, &sent), -ENOENT);
		assert_int_equal(sent, 1);
		assert_int_equal(atomic_load(&a->grant_answers), answers);
		/* and its own names there are taken, with no grant renewed */
		snprintf(name, sizeof(name), "%s/z", dir);
		create(a, name);
		snprintf(name, sizeof(name), "%s/w", dir);
		assert_int_equal(stat_sent(a, name, &sent), -ENOENT);
		assert_int_equal(sent, 1);
		if (!strcmp(ops[i], "rename"))
			create(b, "/b-moved");
	}
	lode_disconnect(b);
	lode_disconnect(a);
}

/* Two clients racing names into one directory: every name either made is found by both. */
struct racer {
	struct lode_client *c;
	const char *tag;
};

static void *race(void *arg)
{
	struct racer *r = arg;

	for (int i = 0; i < 40; i++) {
		char path[64];
		struct lode_file *f;

		snprintf(path, sizeof(path), "/raced/%s-%d", r->tag, i);
		if (lode_open(r->c, path, O_CREAT | O_EXCL | O_WRONLY, 0644, &f) || lode_close(f))
			return (void *)1;
	}
	return NULL;
}

static void test_names_raced_in_by_two_clients_are_all_found_by_both(void **state)
{
	struct lode_client *a = client(), *b = client();
	struct racer ra = {a, "a"}, rb = {b, "b"};
	pthread_t ta, tb;
	void *ea, *eb;

	(void)state;
	assert_int_equal(mkdir_held(a, "/raced", 0755), 0);
	assert_int_equal(pthread_create(&ta, NULL, race, &ra), 0);
	assert_int_equal(pthread_create(&tb, NULL, race, &rb), 0);
	pthread_join(ta, &ea);
	pthread_join(tb, &eb);
	assert_null(ea);
	assert_null(eb);
	for (int i = 0; i < 40; i++)
		for (int w = 0; w < 2; w++) {
			char path[64];

			snprintf(path, sizeof(path), "/raced/%s-%d", w ? "b" : "a", i);
			assert_int_equal(lode_stat(a, path, &(struct lode_stat){0}), 0);
			assert_int_equal(lode_stat(b, path, &(struct lode_stat){0}), 0);
		}
	lode_disconnect(b);
	lode_disconnect(a);
}

/* Another client's name, held at the MDS while the grant it ended may still be valid. */
static void *create_other(void *arg)
{
	struct lode_file *f;

	if (lode_open(arg, "/given/b", O_CREAT | O_EXCL | O_WRONLY, 0644, &f) || lode_close(f))
		return (void *)1;
	return NULL;
}

/*
 * A holder still adding names when another client's name ends its grant learns it from its
 * next name's reply (not renewed, and not held: only the others wait). It drops the grant
 * and gives it back (GRANT_RETURN), so the other name goes on then instead of waiting out
 * the grant's life; once, and the holder asks the MDS from then on.
 */
static void test_a_holder_told_its_grant_ended_gives_it_back(void **state)
{
	struct lode_client *a = client(), *b = client();
	pthread_t tb;
	void *eb;
	int sent, i;

	(void)state;
	assert_int_equal(mkdir_held(a, "/given", 0755), 0);
	assert_int_equal(pthread_create(&tb, NULL, create_other, b), 0);
	for (i = 0; i < 20000 && !atomic_load(&a->grants_returned); i++) {
		char path[64];

		snprintf(path, sizeof(path), "/given/a-%d", i);
		create(a, path);
	}
	pthread_join(tb, &eb);
	assert_null(eb);
	assert_int_equal(atomic_load(&a->grants_returned), 1);
	assert_int_equal(lode_stat(a, "/given/b", &(struct lode_stat){0}), 0);
	create(a, "/given/a-last");
	assert_int_equal(stat_sent(a, "/given/c", &sent), -ENOENT);
	assert_int_equal(sent, 1);
	assert_int_equal(atomic_load(&a->grants_returned), 1);
	lode_disconnect(b);
	lode_disconnect(a);
}

/* Only the credentials that made the directory are answered from its grant. */
static void test_other_credentials_ask_the_mds(void **state)
{
	struct lode_client *a = client();
	uint64_t answers;
	int sent;

	(void)state;
	assert_int_equal(mkdir_held(a, "/private", 0700), 0);
	lode_thread_creds_set(1000, 1000);
	assert_int_equal(stat_sent(a, "/private/x", &sent), -EACCES);
	assert_int_equal(sent, 1);
	lode_thread_creds_clear();
	expect_missing_here(a, "/private/x");
	/* a change of its permissions ends what the holder answers itself, and it gives the
	 * grant back */
	assert_int_equal(lode_chmod(a, "/private", 0755), 0);
	assert_int_equal(atomic_load(&a->grants_returned), 1);
	answers = atomic_load(&a->grant_answers);
	assert_int_equal(stat_sent(a, "/private/x", &sent), -ENOENT);
	assert_int_equal(sent, 1);
	assert_int_equal(atomic_load(&a->grant_answers), answers);
	lode_disconnect(a);
}

/* A restarted MDS knows no grant: the holder's next name is not renewed, and another
 * client's name there is found by the holder. */
static void test_a_restarted_mds_ends_every_grant(void **state)
{
	struct lode_client *a = client(), *b;
	int sent;

	(void)state;
	assert_int_equal(lode_mkdir(a, "/before", 0755), 0);
	assert_int_equal(cluster_kill(&tc, "mds", 1), 0);
	assert_int_equal(cluster_restart(&tc), 0);
	b = client();
	create(b, "/before/x");
	assert_int_equal(lode_stat(a, "/before/x", &(struct lode_stat){0}), 0);
	create(a, "/before/y");
	assert_int_equal(stat_sent(a, "/before/z", &sent), -ENOENT);
	assert_int_equal(sent, 1);
	lode_disconnect(b);
	lode_disconnect(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_maker_of_a_directory_answers_missing_names_itself),
	    cmocka_unit_test(test_another_clients_name_is_seen_by_the_holder_as_soon_as_it_is_made),
	    cmocka_unit_test(test_names_raced_in_by_two_clients_are_all_found_by_both),
	    cmocka_unit_test(test_a_holder_told_its_grant_ended_gives_it_back),
	    cmocka_unit_test(test_other_credentials_ask_the_mds),
	    cmocka_unit_test(test_a_restarted_mds_ends_every_grant),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
