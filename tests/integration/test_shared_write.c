/* SPDX-License-Identifier: MIT */
/*
 * Many writers of one file (N-to-1, as MPI-IO, HDF5 and IOR's shared-file mode write
 * checkpoints) from two liblode clients of a real cluster: disjoint records that share
 * chunks land intact, the size is the largest end written, every open after the last close
 * sees the union, and writers whose writes overlap get, for each chunk-aligned write, one
 * writer's bytes with checksums that verify, on every copy alike. And readers racing a
 * writer of the same chunks through the same handle get, for each chunk, the bytes of one
 * write whole, with no copy marked degraded; so do readers on another client.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster_client.h"
#include "lode/lode.h"
#include "pattern.h"

#define CHUNK	 65536u
#define WRITERS	 8
#define REC	 1000u /* records share chunks, and straddle chunk and stripe boundaries */
#define NREC	 2400u /* 2.4 MB over 2 stripes of 128 KiB */
#define SEED	 77
#define OVL_SIZE (1u << 20)

static struct test_cluster tc;
static struct lode_client *clients[2];

static int group_up(void **state)
{
	*state = &tc;
	if (cluster_test_up(state))
		return -1;
	clients[0] = cluster_client(&tc, 10000);
	clients[1] = cluster_client(&tc, 10000);
	return 0;
}

static int group_down(void **state)
{
	lode_disconnect(clients[0]);
	lode_disconnect(clients[1]);
	return cluster_test_down(state);
}

/* Two stripes of 128 KiB, two copies each, on the cluster's three targets. */
static void create_striped(const char *path)
{
	struct lode_layout l = {.stripe_size = 2 * CHUNK, .stripe_count = 2, .mirror_count = 2};
	struct lode_file *f;

	assert_int_equal(lode_create_with_layout(clients[0], path, 0644, &l, &f), 0);
	assert_int_equal(lode_close(f), 0);
}

struct writer {
	pthread_t thread;
	unsigned id;
	const char *path;
	struct lode_file *f; /* opened by the test, before any writer starts */
	int rc;
};

/* Writer i writes records i, i + WRITERS, ... of the pattern, then closes. */
static void *record_writer(void *arg)
{
	struct writer *w = arg;
	char rec[REC];

	for (unsigned r = w->id; r < NREC && !w->rc; r += WRITERS) {
		uint64_t off = (uint64_t)r * REC;
		ssize_t n;

		pattern_fill(rec, REC, SEED, off);
		n = lode_pwrite(w->f, rec, REC, off);
		if (n != (ssize_t)REC)
			w->rc = n < 0 ? (int)n : -EIO;
	}
	if (lode_close(w->f) && !w->rc)
		w->rc = -EIO;
	return NULL;
}

static void test_eight_writers_on_two_clients_write_interleaved_records_of_one_file(void **state)
{
	struct writer w[WRITERS];
	struct lode_stat st;

	(void)state;
	create_striped("/n1");
	/* every writer has the file open for writing at once, half on each client */
	for (unsigned i = 0; i < WRITERS; i++) {
		w[i] = (struct writer){.id = i, .path = "/n1"};
		assert_int_equal(lode_open(clients[i % 2], "/n1", O_WRONLY, 0, &w[i].f), 0);
	}
	for (unsigned i = 0; i < WRITERS; i++)
		assert_int_equal(pthread_create(&w[i].thread, NULL, record_writer, &w[i]), 0);
	for (unsigned i = 0; i < WRITERS; i++) {
		assert_int_equal(pthread_join(w[i].thread, NULL), 0);
		assert_int_equal(w[i].rc, 0);
	}
	/* close-to-open: any open after the last close sees the union, on either client */
	assert_int_equal(lode_stat(clients[1], "/n1", &st), 0);
	assert_int_equal(st.size, (uint64_t)NREC * REC);
	for (unsigned k = 0; k < 2; k++)
		assert_int_equal(cluster_check_file(clients[k], "/n1", (uint64_t)NREC * REC, SEED,
						    3 * CHUNK + 17),
				 (uint64_t)NREC * REC);
}

static void write_at(struct lode_file *f, uint64_t off, size_t len, uint64_t seed)
{
	char *b = malloc(len);

	assert_non_null(b);
	pattern_fill(b, len, seed, off);
	assert_int_equal(lode_pwrite(f, b, len, off), (ssize_t)len);
	free(b);
}

static void test_the_size_is_the_largest_end_whoever_closes_last_and_truncate_sets_it(void **state)
{
	struct lode_file *a, *b, *r;
	struct lode_stat st;
	char buf[300];

	(void)state;
	create_striped("/ends");
	assert_int_equal(lode_open(clients[0], "/ends", O_WRONLY, 0, &a), 0);
	assert_int_equal(lode_open(clients[1], "/ends", O_WRONLY, 0, &b), 0);
	write_at(a, 0, 10000, 1);
	write_at(b, 300000, 200, 2); /* the far end, in the other stripe */
	assert_int_equal(lode_close(b), 0);
	/* the writer that wrote less closes last: it does not cut the other's bytes off */
	assert_int_equal(lode_close(a), 0);
	assert_int_equal(lode_stat(clients[0], "/ends", &st), 0);
	assert_int_equal(st.size, 300200);
	assert_int_equal(lode_open(clients[0], "/ends", O_RDONLY, 0, &r), 0);
	assert_int_equal(lode_pread(r, buf, 200, 300000), 200);
	assert_int_equal(pattern_check(buf, 200, 2, 300000), -1);
	assert_int_equal(lode_pread(r, buf, 300, 9900), 300);
	assert_int_equal(pattern_check(buf, 100, 1, 9900), -1);
	for (unsigned i = 100; i < 300; i++)
		assert_int_equal(buf[i], 0); /* the gap between the writers reads as zeros */
	assert_int_equal(lode_close(r), 0);
	/* a truncate is still authoritative, with another writer open */
	assert_int_equal(lode_open(clients[1], "/ends", O_WRONLY, 0, &b), 0);
	assert_int_equal(lode_truncate(clients[0], "/ends", 5000), 0);
	assert_int_equal(lode_close(b), 0);
	assert_int_equal(lode_stat(clients[0], "/ends", &st), 0);
	assert_int_equal(st.size, 5000);
}

struct overlapper {
	pthread_t thread;
	struct lode_file *f;
	unsigned id;
	int rc;
};

/* Whole chunks of one byte value (its id), over the same megabyte as every other
 * overlapper, in writes of 1 to 4 chunks at chunk-aligned offsets. */
static void *overlap_writer(void *arg)
{
	struct overlapper *o = arg;
	char *b = malloc(4 * CHUNK);
	unsigned x = o->id * 2654435761u + 1;

	if (!b) {
		o->rc = -ENOMEM;
		return NULL;
	}
	memset(b, 'A' + (int)o->id, 4 * CHUNK);
	for (unsigned i = 0; i < 60 && !o->rc; i++) {
		size_t n = (size_t)(1 + (x >> 8) % 4) * CHUNK;
		uint64_t off = (uint64_t)((x >> 16) % (OVL_SIZE / CHUNK - 3)) * CHUNK;
		ssize_t w = lode_pwrite(o->f, b, n, off);

		if (w != (ssize_t)n)
			o->rc = w < 0 ? (int)w : -EIO;
		x = x * 1103515245u + 12345u;
	}
	free(b);
	if (lode_close(o->f) && !o->rc)
		o->rc = -EIO;
	return NULL;
}

/* Reads the whole overlapped file (any read failure fails the test, a checksum error
 * included) and checks that each chunk holds one writer's bytes; into out. */
static void read_overlapped(struct lode_client *c, const char *path, char *out)
{
	struct lode_file *f;

	assert_int_equal(lode_open(c, path, O_RDONLY, 0, &f), 0);
	assert_int_equal(lode_pread(f, out, OVL_SIZE, 0), OVL_SIZE);
	assert_int_equal(lode_close(f), 0);
	for (unsigned k = 0; k < OVL_SIZE / CHUNK; k++)
		for (unsigned i = 1; i < CHUNK; i++)
			if (out[k * CHUNK + i] != out[k * CHUNK])
				fail_msg("chunk %u mixes bytes of two writers at %u", k, i);
}

/*
 * A copy may miss writes under load (a forward to it timed out): the writer then had it
 * marked degraded before its write returned, and the copies may differ. That copy must
 * never be read alone (with the good copy's OSS down the read fails), and repair makes
 * the copies alike again.
 */
static void repair_if_degraded(const char *path)
{
	struct lode_repair_result rr;
	struct lode_layout l;
	struct lode_client *c;
	struct lode_file *f;
	char *buf = malloc(OVL_SIZE);
	uint64_t d;
	int good;

	assert_non_null(buf);
	assert_int_equal(lode_layout_info(clients[0], path, &l, &d), 0);
	if (!d) {
		free(buf);
		return;
	}
	assert_int_not_equal(d, 3); /* the last good copy is never marked degraded */
	good = d == 1 ? 1 : 0;
	printf("copy %d was marked degraded by a failed write: repairing it first\n", !good);
	assert_int_equal(cluster_kill(&tc, good ? "oss1" : "oss0", 1), 0);
	c = cluster_client(&tc, 10000);
	assert_int_equal(lode_open(c, path, O_RDONLY, 0, &f), 0);
	assert_true(lode_pread(f, buf, OVL_SIZE, 0) < 0);
	assert_int_equal(lode_close(f), 0);
	lode_disconnect(c);
	assert_int_equal(cluster_restart(&tc), 0);
	cluster_wait_targets_up(clients[0], 3);
	assert_int_equal(lode_repair(clients[0], path, &rr), 0);
	assert_int_equal(rr.copies_repaired, 1);
	free(buf);
}

static void
test_overlapping_writers_leave_whole_chunks_of_one_writer_alike_on_both_copies(void **state)
{
	struct lode_layout l = {
	    .stripe_size = OVL_SIZE, .stripe_count = 1, .mirror_count = 2, .targets = {1, 2}};
	struct overlapper o[4];
	char *both = malloc(OVL_SIZE), *one = malloc(OVL_SIZE);
	struct lode_file *f;

	(void)state;
	assert_non_null(both);
	assert_non_null(one);
	/* No wait after the cluster's start: for up to a second a head may not know the
	 * next copy's target yet and cannot forward to it (each OSS fetches the MDS's table
	 * with its heartbeat); the client must then send the write through the head again,
	 * not to that copy alone (client-chain-order), or the copies end different. */
	assert_int_equal(lode_create_with_layout(clients[0], "/ovl", 0644, &l, &f), 0);
	write_at(f, 0, OVL_SIZE, 5);
	assert_int_equal(lode_close(f), 0);
	for (unsigned i = 0; i < 4; i++) {
		o[i] = (struct overlapper){.id = i};
		assert_int_equal(lode_open(clients[i % 2], "/ovl", O_WRONLY, 0, &o[i].f), 0);
	}
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&o[i].thread, NULL, overlap_writer, &o[i]), 0);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(o[i].thread, NULL), 0);
		assert_int_equal(o[i].rc, 0);
	}
	/* what a reader gets, and then each copy alone: the two copies took the writes in
	 * the chain head's order, so they hold the same bytes */
	read_overlapped(clients[0], "/ovl", both);
	repair_if_degraded("/ovl");
	for (unsigned keep = 0; keep < 2; keep++) {
		struct lode_client *c;

		assert_int_equal(cluster_kill(&tc, keep ? "oss0" : "oss1", 1), 0);
		c = cluster_client(&tc, 10000);
		read_overlapped(c, "/ovl", one);
		lode_disconnect(c);
		assert_int_equal(cluster_restart(&tc), 0);
		assert_memory_equal(one, both, OVL_SIZE);
	}
	free(both);
	free(one);
}

#define RACE_SIZE   (4 * CHUNK)
#define RACE_WRITES 400

struct racer {
	pthread_t thread;
	struct lode_file *f;
	int rc;
	unsigned reads;
	char why[128];
};

static volatile bool race_over;

/* Reads the first RACE_SIZE bytes again and again: each chunk must hold one write's byte. */
static void *race_reader(void *arg)
{
	struct racer *r = arg;
	char *buf = malloc(RACE_SIZE);

	if (!buf) {
		r->rc = -ENOMEM;
		return NULL;
	}
	while (!race_over && !r->rc) {
		ssize_t n = lode_pread(r->f, buf, RACE_SIZE, 0);

		if (n != RACE_SIZE) {
			r->rc = n < 0 ? (int)n : -EIO;
			snprintf(r->why, sizeof(r->why), "read %zd of %u bytes", n, RACE_SIZE);
			break;
		}
		for (unsigned k = 0; k < RACE_SIZE / CHUNK && !r->rc; k++)
			for (unsigned i = 1; i < CHUNK; i++)
				if (buf[k * CHUNK + i] != buf[k * CHUNK]) {
					r->rc = -EILSEQ;
					snprintf(r->why, sizeof(r->why),
						 "chunk %u mixes two writes at byte %u", k, i);
					break;
				}
		r->reads++;
	}
	free(buf);
	return NULL;
}

/*
 * Two readers loop over the first RACE_SIZE bytes through rf while RACE_WRITES full-chunk
 * writes through wf rewrite them: every read gets whole chunks, and no copy ends degraded.
 */
static void race(struct lode_file *wf, struct lode_file *rf, const char *path, const char *how)
{
	struct racer r[2] = {0};
	struct lode_layout l;
	char *b = malloc(CHUNK);
	uint64_t degraded = 99;
	unsigned reads = 0;

	assert_non_null(b);
	race_over = false;
	for (unsigned i = 0; i < 2; i++) {
		r[i].f = rf;
		assert_int_equal(pthread_create(&r[i].thread, NULL, race_reader, &r[i]), 0);
	}
	for (unsigned w = 0; w < RACE_WRITES && !r[0].rc && !r[1].rc; w++) {
		memset(b, 'b' + w % 20, CHUNK);
		assert_int_equal(lode_pwrite(wf, b, CHUNK, (w % (RACE_SIZE / CHUNK)) * CHUNK),
				 CHUNK);
	}
	race_over = true;
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(r[i].thread, NULL), 0);
		if (r[i].rc)
			fail_msg("reader %u: %s (%s)", i, r[i].why, strerror(-r[i].rc));
		reads += r[i].reads;
	}
	printf("%u writes raced by %u reads of the same chunks, %s\n", RACE_WRITES, reads, how);
	assert_int_equal(lode_layout_info(clients[0], path, &l, &degraded), 0);
	assert_int_equal(degraded, 0);
	free(b);
}

/* A file of RACE_SIZE bytes on one stripe of two copies, open for writing on clients[1]. */
static struct lode_file *race_file(const char *path)
{
	struct lode_layout l = {
	    .stripe_size = OVL_SIZE, .stripe_count = 1, .mirror_count = 2, .targets = {1, 2}};
	struct lode_file *f;
	char *b = malloc(CHUNK);

	assert_non_null(b);
	assert_int_equal(lode_create_with_layout(clients[1], path, 0644, &l, &f), 0);
	memset(b, 'a', CHUNK);
	for (unsigned k = 0; k < RACE_SIZE / CHUNK; k++)
		assert_int_equal(lode_pwrite(f, b, CHUNK, k * CHUNK), CHUNK);
	assert_int_equal(lode_fsync(f), 0);
	free(b);
	return f;
}

/*
 * Reads of chunks a write of the same handle is rewriting (a mount's shared writer: the
 * kernel reads pages of a file while it writes others back). The OSS reads a chunk's
 * checksum, then sends its bytes from the page cache, which the write changes in place: the
 * reader saw one write's bytes with another's checksum, took the copy for corrupt, had it
 * marked degraded (bad data), and failed with EIO once both copies were (fsx through the
 * mount, under load). Reads and writes of a handle now take turns.
 */
static void test_reads_racing_writes_of_one_handle_see_whole_writes(void **state)
{
	struct lode_file *f = race_file("/race");

	(void)state;
	race(f, f, "/race", "one handle");
	assert_int_equal(lode_close(f), 0);
}

/*
 * The same race between two clients, which share no handle: a reader that finds bytes and
 * checksums apart reads the chunk once more, held against writes at the OSS, and so never
 * takes a good copy for bad (both copies were marked degraded and the read failed with EIO
 * before that second read was held).
 */
static void test_reads_racing_another_clients_writes_keep_every_copy(void **state)
{
	struct lode_file *w = race_file("/race2"), *r;

	(void)state;
	assert_int_equal(lode_open(clients[0], "/race2", O_RDONLY, 0, &r), 0);
	race(w, r, "/race2", "two clients");
	assert_int_equal(lode_close(r), 0);
	assert_int_equal(lode_close(w), 0);
}

/*
 * A close with nothing left to commit is queued and sent with others (client/closer.c):
 * the lease it gives back must be back whenever an exclusive open (a repair) comes, from
 * another client at once or from the closing client itself; a writer that still holds
 * its handle keeps the repair out. The repair's own exclusive lease is given back before
 * it returns (writers do not retry).
 */
static void test_a_writers_lease_is_back_for_a_repair_right_after_its_close(void **state)
{
	struct lode_repair_result rr;
	char path[64], buf[4096];
	struct lode_file *f;

	(void)state;
	memset(buf, 7, sizeof(buf));
	for (unsigned i = 0; i < 40; i++) {
		snprintf(path, sizeof(path), "/leased%u", i);
		assert_int_equal(lode_open(clients[0], path, O_WRONLY | O_CREAT | O_EXCL, 0644, &f),
				 0);
		assert_int_equal(lode_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		if (i % 2)
			assert_int_equal(lode_fsync(f), 0); /* committed: the close is queued */
		assert_int_equal(lode_close(f), 0);
		assert_int_equal(lode_repair(clients[i % 4 < 2], path, &rr), 0);
		assert_int_equal(rr.copies_repaired, 0);
		/* and the repair's exclusive lease is back when it returns: writers of either
		 * client open at once (they do not wait out an exclusive holder) */
		for (unsigned k = 0; k < 2; k++) {
			assert_int_equal(lode_open(clients[k], path, O_WRONLY, 0, &f), 0);
			assert_int_equal(lode_close(f), 0);
		}
	}
	assert_int_equal(lode_open(clients[0], "/leased0", O_WRONLY, 0, &f), 0);
	assert_int_equal(lode_repair(clients[1], "/leased0", &rr), -EBUSY);
	assert_int_equal(lode_flush(f), 0);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_repair(clients[1], "/leased0", &rr), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reads_racing_writes_of_one_handle_see_whole_writes),
	    cmocka_unit_test(test_reads_racing_another_clients_writes_keep_every_copy),
	    cmocka_unit_test(
		test_eight_writers_on_two_clients_write_interleaved_records_of_one_file),
	    cmocka_unit_test(
		test_the_size_is_the_largest_end_whoever_closes_last_and_truncate_sets_it),
	    cmocka_unit_test(
		test_overlapping_writers_leave_whole_chunks_of_one_writer_alike_on_both_copies),
	    cmocka_unit_test(test_a_writers_lease_is_back_for_a_repair_right_after_its_close),
	};

	return cmocka_run_group_tests(tests, group_up, group_down);
}
