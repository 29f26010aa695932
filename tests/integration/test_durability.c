/* SPDX-License-Identifier: MIT */
/*
 * Never lose a checkpoint: two copies of every stripe (the default with 3 OSS), and each
 * test kills or corrupts something and checks that no acknowledged byte is lost or
 * returned wrong. Every test prints the bytes it verified.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster_client.h"
#include "lode/lode.h"

#define MiB (1ull << 20)

static struct test_cluster tc;

static unsigned degraded_copies(struct lode_client *c, const char *path)
{
	struct lode_layout l;
	uint64_t d;

	assert_int_equal(lode_layout_info(c, path, &l, &d), 0);
	return (unsigned)__builtin_popcountll(d);
}

static void oss_name(uint32_t target_id, char *out, size_t len)
{
	/* lodectl local starts oss0, oss1, ... in order and the MDS numbers them from 1 */
	snprintf(out, len, "oss%u", target_id - 1);
}

struct reader {
	struct lode_client *c;
	const char *path;
	uint64_t size, seed, verified;
	volatile int progress; /* MiB read so far */
	int failed;
};

static void *read_all(void *arg)
{
	struct reader *r = arg;
	struct lode_file *f;
	char *buf = malloc(4 * MiB);

	r->failed = 1;
	if (!buf || lode_open(r->c, r->path, O_RDONLY, 0, &f))
		return NULL;
	for (uint64_t off = 0; off < r->size; off += 4 * MiB) {
		size_t n = r->size - off < 4 * MiB ? (size_t)(r->size - off) : 4 * MiB;

		if (lode_pread(f, buf, n, off) != (ssize_t)n ||
		    pattern_check(buf, n, r->seed, off) >= 0) {
			fprintf(stderr, "reader: bad read at %" PRIu64 "\n", off);
			lode_close(f);
			free(buf);
			return NULL;
		}
		r->verified += n;
		r->progress = (int)((off + n) / MiB);
	}
	lode_close(f);
	free(buf);
	r->failed = 0;
	return NULL;
}

static void test_kill_9_of_an_oss_during_a_2gib_read_loses_nothing(void **state)
{
	const uint64_t size = 2048 * MiB;
	struct lode_client *c = cluster_client(&tc, 3000);
	struct reader r = {.c = c, .path = "/ckpt", .size = size, .seed = 41};
	pthread_t th;

	(void)state;
	cluster_write_file(c, "/ckpt", size, 41, 8 * MiB, NULL);
	assert_int_equal(pthread_create(&th, NULL, read_all, &r), 0);
	while (r.progress < 256 && !r.failed)
		usleep(10000);
	assert_int_equal(cluster_kill(&tc, "oss1", 1), 0);
	pthread_join(th, NULL);
	assert_false(r.failed);
	assert_int_equal(r.verified, size);
	printf("verified %" PRIu64 " bytes read across the kill of oss1\n", r.verified);
	/* a second full read with the OSS still dead goes straight to the survivors */
	printf("verified %" PRIu64 " more bytes with oss1 down\n",
	       cluster_check_file(c, "/ckpt", size, 41, 8 * MiB));
	assert_int_equal(cluster_restart(&tc), 0);
	lode_disconnect(c);
}

struct writer {
	struct lode_client *c;
	uint64_t size;
	volatile int progress;
	int write_rc, close_rc;
};

static void *write_all(void *arg)
{
	struct writer *w = arg;
	struct lode_file *f;
	char *buf = malloc(4 * MiB);

	w->write_rc = -ENOMEM;
	if (!buf)
		return NULL;
	w->write_rc = lode_open(w->c, "/during-kill", O_WRONLY | O_CREAT | O_TRUNC, 0644, &f);
	if (w->write_rc)
		goto out;
	for (uint64_t off = 0; off < w->size; off += 4 * MiB) {
		ssize_t n;

		pattern_fill(buf, 4 * MiB, 51, off);
		n = lode_pwrite(f, buf, 4 * MiB, off);
		if (n != (ssize_t)(4 * MiB)) {
			w->write_rc = (int)n;
			break;
		}
		w->progress = (int)((off + 4 * MiB) / MiB);
	}
	w->close_rc = lode_fsync(f);
	{
		int rc = lode_close(f);

		if (!w->close_rc)
			w->close_rc = rc;
	}
out:
	free(buf);
	return NULL;
}

static void test_kill_9_of_an_oss_during_a_write_then_repair_restores_redundancy(void **state)
{
	const uint64_t size = 512 * MiB;
	struct lode_client *c = cluster_client(&tc, 3000);
	struct writer w = {.c = c, .size = size};
	struct lode_repair_result rr;
	struct lode_layout l;
	uint64_t d, verified = 0;
	pthread_t th;
	char name[16];

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, write_all, &w), 0);
	while (w.progress < 128 && !w.write_rc)
		usleep(5000);
	assert_int_equal(cluster_kill(&tc, "oss2", 1), 0);
	pthread_join(th, NULL);
	if (w.write_rc || w.close_rc) {
		/* allowed: an error. Not allowed: success with wrong bytes (checked below) */
		printf("writer saw an error (write %d, close %d)\n", w.write_rc, w.close_rc);
		assert_int_equal(cluster_restart(&tc), 0);
		lode_disconnect(c);
		return;
	}
	/* success: every byte reads back from the survivors */
	verified += cluster_check_file(c, "/during-kill", size, 51, 8 * MiB);
	assert_true(degraded_copies(c, "/during-kill") > 0);

	/* the OSS comes back; repair refills its copies from the good ones */
	assert_int_equal(cluster_restart(&tc), 0);
	sleep(2); /* its heartbeat marks it up at the MDS */
	assert_int_equal(lode_repair(c, "/during-kill", &rr), 0);
	assert_true(rr.copies_degraded > 0);
	assert_int_equal(rr.copies_repaired, rr.copies_degraded);
	assert_int_equal(degraded_copies(c, "/during-kill"), 0);
	printf("repair copied %" PRIu64 " bytes into %u copies\n", rr.bytes_copied,
	       rr.copies_repaired);

	/* full redundancy: lose any other OSS and every byte still reads back */
	assert_int_equal(lode_layout_info(c, "/during-kill", &l, &d), 0);
	oss_name(l.targets[0] == 3 ? l.targets[1] : l.targets[0], name, sizeof(name));
	assert_int_equal(cluster_kill(&tc, name, 1), 0);
	verified += cluster_check_file(c, "/during-kill", size, 51, 8 * MiB);
	assert_int_equal(cluster_restart(&tc), 0);
	printf("verified %" PRIu64 " bytes; nothing acknowledged was lost\n", verified);
	lode_disconnect(c);
}

/* Reads the 1 MiB at the start of path into buf: the read's result. */
static ssize_t read_mib(struct lode_client *c, const char *path, char *buf)
{
	struct lode_file *f;
	ssize_t n;

	assert_int_equal(lode_open(c, path, O_RDONLY, 0, &f), 0);
	n = lode_pread(f, buf, MiB, 0);
	assert_int_equal(lode_close(f), 0);
	return n;
}

/* A copy that missed a write keeps its old bytes, and their checksums still verify: with
 * the good copy's OSS down, reading the file must fail rather than return them. Once the
 * good copy is back, or repair has refilled the other, the new bytes read back. */
static void test_a_copy_that_missed_a_write_is_never_read_in_place_of_the_good_one(void **state)
{
	struct lode_layout l = {
	    .stripe_size = 4 * MiB, .stripe_count = 1, .mirror_count = 2, .targets = {1, 2}};
	struct lode_client *c = cluster_client(&tc, 3000);
	char *buf = malloc(MiB), *got = malloc(MiB);
	struct lode_repair_result rr;
	struct lode_file *f, *held;
	uint64_t d;
	ssize_t n;

	(void)state;
	assert_non_null(buf);
	assert_non_null(got);
	memset(buf, 'a', MiB);
	assert_int_equal(lode_create_with_layout(c, "/missed", 0644, &l, &f), 0);
	assert_int_equal(lode_pwrite(f, buf, MiB, 0), MiB);
	assert_int_equal(lode_close(f), 0);

	/* the second copy's OSS is down while the bytes are rewritten: it misses them */
	assert_int_equal(cluster_kill(&tc, "oss1", 1), 0);
	memset(buf, 'b', MiB);
	assert_int_equal(lode_open(c, "/missed", O_WRONLY, 0, &f), 0);
	assert_int_equal(lode_pwrite(f, buf, MiB, 0), MiB);
	assert_int_equal(lode_close(f), 0);
	assert_int_equal(lode_layout_info(c, "/missed", &l, &d), 0);
	assert_int_equal(d, 2);
	assert_int_equal(cluster_restart(&tc), 0);

	/* now only the copy that missed them is up: an error, never the old bytes */
	assert_int_equal(cluster_kill(&tc, "oss0", 1), 0);
	memset(got, 0, MiB);
	n = read_mib(c, "/missed", got);
	printf("with only the stale copy up, the read returned %zd\n", n);
	assert_true(n < 0);
	assert_int_equal(cluster_restart(&tc), 0);
	assert_int_equal(read_mib(c, "/missed", got), MiB);
	assert_memory_equal(got, buf, MiB);
	/* a reader that opens now learns the second copy is degraded, and keeps the file */
	assert_int_equal(lode_open(c, "/missed", O_RDONLY, 0, &held), 0);

	/* repaired, the other copy alone has them */
	cluster_wait_targets_up(c, 3);
	assert_int_equal(lode_repair(c, "/missed", &rr), 0);
	assert_int_equal(rr.copies_repaired, 1);
	assert_int_equal(cluster_kill(&tc, "oss0", 1), 0);
	memset(got, 0, MiB);
	assert_int_equal(read_mib(c, "/missed", got), MiB);
	assert_memory_equal(got, buf, MiB);
	/* and the reader holding it since before the repair, with the copy it still took as
	 * degraded the only one up: it asks the MDS again (its layout is over a second old)
	 * rather than fail */
	usleep(1100 * 1000);
	memset(got, 0, MiB);
	assert_int_equal(lode_pread(held, got, MiB, 0), MiB);
	assert_memory_equal(got, buf, MiB);
	assert_int_equal(lode_close(held), 0);
	assert_int_equal(cluster_restart(&tc), 0);
	printf("verified %d bytes from each copy in turn\n", 2 * (int)MiB);
	free(buf);
	free(got);
	lode_disconnect(c);
}

/* Sends sig to OSS `oss` of the test's cluster (its pid file). */
static void signal_oss(int oss, int sig)
{
	char path[600], buf[32] = "";
	FILE *pf;

	snprintf(path, sizeof(path), "%s/oss%d/pid", tc.dir, oss);
	pf = fopen(path, "r");
	assert_non_null(pf);
	assert_non_null(fgets(buf, sizeof(buf), pf));
	fclose(pf);
	assert_int_equal(kill((pid_t)atol(buf), sig), 0);
}

/* A write fails on both copies of a stripe: the second copy's OSS is known down (killed),
 * the first one's is stopped and times out. The MDS keeps one copy good (the last one
 * reported); it must be the one still reachable, so that once the stopped OSS runs again
 * the file reads back, though the other OSS is still down. */
static void test_when_every_copy_fails_the_reachable_one_stays_good(void **state)
{
	struct lode_layout l = {
	    .stripe_size = 4 * MiB, .stripe_count = 1, .mirror_count = 2, .targets = {1, 2}};
	struct lode_client *c = cluster_client(&tc, 3000), *c2;
	char *buf = malloc(MiB), *got = malloc(MiB);
	struct lode_file *f;
	uint64_t d;

	(void)state;
	assert_non_null(buf);
	assert_non_null(got);
	memset(buf, 'a', MiB);
	assert_int_equal(lode_create_with_layout(c, "/both", 0644, &l, &f), 0);
	assert_int_equal(lode_pwrite(f, buf, MiB, 0), MiB);
	assert_int_equal(lode_close(f), 0);

	/* the second copy's OSS dies, and the MDS knows it (a probe finds nothing there) */
	assert_int_equal(cluster_kill(&tc, "oss1", 1), 0);
	for (int waited = 0;; waited++) {
		struct lode_target_info t[4];
		int n = lode_targets(c, t, 4), down = 0;

		for (int i = 0; i < n && i < 4; i++)
			down += t[i].id == 2 && !t[i].up;
		if (down)
			break;
		assert_true(waited < 300);
		usleep(100 * 1000);
	}
	/* a client that knows: the second copy is skipped, the first one's OSS is stopped */
	c2 = cluster_client(&tc, 1000);
	assert_int_equal(lode_open(c2, "/both", O_WRONLY, 0, &f), 0);
	signal_oss(0, SIGSTOP);
	memset(buf, 'b', MiB);
	assert_true(lode_pwrite(f, buf, MiB, 0) < 0);
	signal_oss(0, SIGCONT);
	lode_close(f);
	lode_disconnect(c2);
	assert_int_equal(lode_layout_info(c, "/both", &l, &d), 0);
	printf("degraded copies after the write that failed on both: %#llx\n",
	       (unsigned long long)d);
	assert_int_equal(d, 2);

	/* the failed write is not acknowledged: either bytes may be there, but the file reads */
	memset(got, 0, MiB);
	assert_int_equal(read_mib(c, "/both", got), MiB);
	assert_true(got[0] == 'a' || got[0] == 'b');
	assert_int_equal(cluster_restart(&tc), 0);
	free(buf);
	free(got);
	lode_disconnect(c);
}

/* The object file of one copy of stripe `stripe` of inode ino on OSS `oss`. */
static int object_path(int oss, uint64_t ino, unsigned stripe, char *out, size_t len)
{
	snprintf(out, len, "%s/oss%d/objects/%02x/%016" PRIx64 ".%016x.%08x", tc.dir, oss,
		 (unsigned)(ino % 256), ino, 1u, stripe);
	return access(out, F_OK);
}

static void test_flipped_bytes_on_an_oss_disk_are_never_returned_and_get_reported(void **state)
{
	const uint64_t size = 64 * MiB;
	struct lode_client *c = cluster_client(&tc, 3000);
	struct lode_repair_result rr;
	struct lode_layout l;
	struct lode_stat st;
	char path[512];
	uint64_t d;
	int fd, oss;

	(void)state;
	cluster_write_file(c, "/flipped", size, 61, 8 * MiB, NULL);
	assert_int_equal(lode_stat(c, "/flipped", &st), 0);
	assert_int_equal(lode_layout_info(c, "/flipped", &l, &d), 0);
	/* corrupt both chunks' worth of bytes in the first copy of every stripe */
	for (unsigned s = 0; s < l.stripe_count; s++) {
		oss = (int)l.targets[s * l.mirror_count] - 1;
		assert_int_equal(object_path(oss, st.ino, s, path, sizeof(path)), 0);
		fd = open(path, O_WRONLY);
		assert_true(fd >= 0);
		assert_int_equal(pwrite(fd, "garbage!", 8, 100000), 8);
		assert_int_equal(pwrite(fd, "garbage!", 8, 5 * MiB + 3), 8);
		close(fd);
	}
	/* drop the OSS page cache copy so the bad bytes are what the OSS reads */
	assert_int_equal(system("sync; echo 1 > /proc/sys/vm/drop_caches"), 0);
	printf("verified %" PRIu64 " bytes with every stripe's first copy corrupted\n",
	       cluster_check_file(c, "/flipped", size, 61, 8 * MiB));
	/* the bad copies were reported: the MDS marks them degraded */
	assert_int_equal(degraded_copies(c, "/flipped"), l.stripe_count);
	assert_int_equal(lode_repair(c, "/flipped", &rr), 0);
	assert_int_equal(rr.copies_repaired, l.stripe_count);
	assert_int_equal(degraded_copies(c, "/flipped"), 0);
	printf("verified %" PRIu64 " bytes after repair\n",
	       cluster_check_file(c, "/flipped", size, 61, 8 * MiB));
	lode_disconnect(c);
}

struct storm {
	int id;
	int acked;
	char acked_names[3000][24];
	int created_after_error;
};

static void *create_storm(void *arg)
{
	struct storm *s = arg;
	struct lode_client *c = cluster_client(&tc, 4000);
	char dir[32];

	snprintf(dir, sizeof(dir), "/storm%d", s->id);
	for (int i = 0; i < 2500; i++) {
		char path[64];
		struct lode_file *f;
		int rc;

		snprintf(path, sizeof(path), "%s/f%d", dir, i);
		rc = lode_open(c, path, O_WRONLY | O_CREAT | O_EXCL, 0644, &f);
		if (rc == 0) {
			lode_close(f);
		} else if (rc != -EEXIST) {
			continue; /* not acknowledged: may or may not exist */
		}
		/* EEXIST on a retried create means it was created: count it too */
		snprintf(s->acked_names[s->acked++], 24, "f%d", i);
	}
	lode_disconnect(c);
	return NULL;
}

static int count_entry(void *arg, const char *name, uint64_t ino, uint32_t mode)
{
	(void)name;
	(void)ino;
	(void)mode;
	++*(int *)arg;
	return 0;
}

static void test_kill_9_of_the_mds_during_10000_creates_loses_no_acknowledged_one(void **state)
{
	struct storm *s = calloc(4, sizeof(*s));
	struct lode_client *c = cluster_client(&tc, 10000);
	pthread_t th[4];
	int total = 0;

	(void)state;
	assert_non_null(s);
	for (int i = 0; i < 4; i++) {
		char dir[32];

		snprintf(dir, sizeof(dir), "/storm%d", i);
		assert_int_equal(lode_mkdir(c, dir, 0755), 0);
		s[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, create_storm, &s[i]), 0);
	}
	while (s[0].acked + s[1].acked + s[2].acked + s[3].acked < 3000)
		usleep(2000);
	assert_int_equal(cluster_kill(&tc, "mds", 1), 0);
	usleep(300000);
	assert_int_equal(cluster_restart(&tc), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++) {
		int n = 0;
		char dir[32];

		snprintf(dir, sizeof(dir), "/storm%d", i);
		for (int k = 0; k < s[i].acked; k++) {
			char path[64];
			struct lode_stat st;

			snprintf(path, sizeof(path), "%s/%s", dir, s[i].acked_names[k]);
			if (lode_stat(c, path, &st))
				fail_msg("acknowledged create %s is gone after the MDS restart",
					 path);
		}
		/* the directory lists exactly what exists, each once */
		assert_int_equal(lode_readdir(c, dir, count_entry, &n), 0);
		assert_true(n >= s[i].acked && n <= 2500);
		total += s[i].acked;
	}
	printf("%d acknowledged creates, all present after kill -9 of the MDS\n", total);
	assert_true(total >= 3000);
	free(s);
	lode_disconnect(c);
}

/* One OSS whose data directory is a 48 MiB file system of its own. */
static int setup_small_disk(void **state)
{
	char path[512], cmd[1024];
	const char *tmp = getenv("TMPDIR");
	FILE *p;

	(void)state;
	memset(&tc, 0, sizeof(tc));
	snprintf(tc.dir, sizeof(tc.dir), "%s/lode-enospc-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(tc.dir))
		return -1;
	snprintf(path, sizeof(path), "%s/oss0", tc.dir);
	if (mkdir(path, 0755) || mount("lode-test", path, "tmpfs", 0, "size=48m")) {
		fprintf(stderr, "setup: cannot mount a 48 MiB tmpfs at %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	tc.noss = 1;
	snprintf(cmd, sizeof(cmd), "%s local up %s --oss 1 --orphan-grace 1",
		 getenv("LODECTL") ? getenv("LODECTL") : "lodectl", tc.dir);
	p = popen(cmd, "r");
	if (!p || !fgets(tc.mds, sizeof(tc.mds), p)) {
		if (p)
			pclose(p);
		return -1;
	}
	tc.mds[strcspn(tc.mds, "\n")] = 0;
	cluster_use_key(&tc);
	return pclose(p) ? -1 : 0;
}

static int teardown_small_disk(void **state)
{
	char path[512], cmd[1024];

	(void)state;
	snprintf(path, sizeof(path), "%s/oss0", tc.dir);
	snprintf(cmd, sizeof(cmd), "%s local down %s >/dev/null 2>&1",
		 getenv("LODECTL") ? getenv("LODECTL") : "lodectl", tc.dir);
	if (system(cmd)) {
	}
	umount2(path, MNT_DETACH);
	cluster_down(&tc);
	return 0;
}

static void test_a_full_oss_disk_gives_enospc_harms_no_other_file_and_recovers(void **state)
{
	struct lode_client *c = cluster_client(&tc, 5000);
	struct lode_file *f;
	char *buf = malloc(4 * MiB);
	uint64_t off;
	ssize_t n = 0;

	(void)state;
	assert_non_null(buf);
	cluster_write_file(c, "/keep", 8 * MiB, 71, 8 * MiB, NULL);
	assert_int_equal(lode_open(c, "/fill", O_WRONLY | O_CREAT, 0644, &f), 0);
	for (off = 0; off < 256 * MiB; off += 4 * MiB) {
		pattern_fill(buf, 4 * MiB, 72, off);
		n = lode_pwrite(f, buf, 4 * MiB, off);
		if (n < 0)
			break;
	}
	assert_int_equal(n, -ENOSPC);
	printf("ENOSPC after %" PRIu64 " MiB\n", (uint64_t)(off / MiB));
	lode_close(f);
	/* the file written before is untouched */
	printf("verified %" PRIu64 " bytes of the other file\n",
	       cluster_check_file(c, "/keep", 8 * MiB, 71, 8 * MiB));
	/* free the space: the OSS reclaims the deleted file's objects, then writing works */
	assert_int_equal(lode_unlink(c, "/fill"), 0);
	for (int i = 0; i < 300; i++) {
		struct lode_file *g;

		if (!lode_open(c, "/again", O_WRONLY | O_CREAT | O_TRUNC, 0644, &g)) {
			pattern_fill(buf, 4 * MiB, 73, 0);
			n = lode_pwrite(g, buf, 4 * MiB, 0);
			for (off = 4 * MiB; n > 0 && off < 24 * MiB; off += 4 * MiB) {
				pattern_fill(buf, 4 * MiB, 73, off);
				n = lode_pwrite(g, buf, 4 * MiB, off);
			}
			if (lode_close(g) == 0 && n > 0)
				break;
		}
		usleep(100000);
	}
	assert_true(n > 0);
	printf("verified %" PRIu64 " bytes written after the space was freed\n",
	       cluster_check_file(c, "/again", 24 * MiB, 73, 8 * MiB));
	free(buf);
	lode_disconnect(c);
}

int main(void)
{
	/* each test on a cluster of its own: 3 OSS, --orphan-grace 1 */
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_prestate_setup_teardown(fn, cluster_test_up, cluster_test_down, &tc)
	    T(test_kill_9_of_an_oss_during_a_2gib_read_loses_nothing),
	    T(test_kill_9_of_an_oss_during_a_write_then_repair_restores_redundancy),
	    T(test_a_copy_that_missed_a_write_is_never_read_in_place_of_the_good_one),
	    T(test_when_every_copy_fails_the_reachable_one_stays_good),
	    T(test_flipped_bytes_on_an_oss_disk_are_never_returned_and_get_reported),
	    T(test_kill_9_of_the_mds_during_10000_creates_loses_no_acknowledged_one),
	    cmocka_unit_test_setup_teardown(
		test_a_full_oss_disk_gives_enospc_harms_no_other_file_and_recovers,
		setup_small_disk, teardown_small_disk),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
