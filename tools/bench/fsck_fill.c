/* SPDX-License-Identifier: MIT */
/*
 * fsck_fill MDS DIR COUNT SIZE [THREADS]: creates COUNT files of SIZE bytes under DIR
 * (1000 per subdirectory) through liblode, to measure `lodectl fsck` on a namespace of that
 * size (tools/bench/fsck.sh). Prints the files made per second.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lode/lode.h"

struct fill {
	struct lode_client *c;
	const char *dir;
	unsigned long count;
	size_t size;
	char *data;
	atomic_ulong next;
	atomic_int failed;
};

static void *worker(void *arg)
{
	struct fill *f = arg;
	char path[4096];

	for (;;) {
		unsigned long i = atomic_fetch_add(&f->next, 1);
		struct lode_file *fl = NULL;
		int rc;

		if (i >= f->count)
			return NULL;
		snprintf(path, sizeof(path), "%s/d%lu/f%lu", f->dir, i / 1000, i);
		rc = lode_open(f->c, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, &fl);
		if (!rc && f->size && lode_pwrite(fl, f->data, f->size, 0) != (ssize_t)f->size)
			rc = -EIO;
		if (fl) {
			int rc2 = lode_close(fl);

			rc = rc ? rc : rc2;
		}
		if (rc && atomic_fetch_add(&f->failed, 1) < 5)
			fprintf(stderr, "%s: %s\n", path, strerror(-rc));
	}
}

int main(int argc, char **argv)
{
	struct fill f = {0};
	unsigned threads = argc > 5 ? (unsigned)atoi(argv[5]) : 4;
	pthread_t tid[64];
	struct timespec t0, t1;
	char path[4096];
	double secs;
	int rc;

	if (argc < 5 || threads < 1 || threads > 64) {
		fprintf(stderr, "usage: fsck_fill MDS DIR COUNT SIZE [THREADS]\n");
		return 2;
	}
	f.dir = argv[2];
	f.count = strtoul(argv[3], NULL, 10);
	f.size = strtoul(argv[4], NULL, 10);
	f.data = calloc(1, f.size ? f.size : 1);
	rc = lode_connect(argv[1], NULL, &f.c);
	if (rc || !f.data) {
		fprintf(stderr, "cannot connect to %s: %s\n", argv[1], strerror(-rc));
		return 1;
	}
	memset(f.data, 'x', f.size);
	lode_mkdir(f.c, f.dir, 0755);
	for (unsigned long d = 0; d * 1000 < f.count; d++) {
		snprintf(path, sizeof(path), "%s/d%lu", f.dir, d);
		rc = lode_mkdir(f.c, path, 0755);
		if (rc && rc != -EEXIST) {
			fprintf(stderr, "%s: %s\n", path, strerror(-rc));
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, worker, &f);
	for (unsigned i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("created %lu files of %zu bytes in %.1f s (%.0f/s), %d failed\n", f.count, f.size,
	       secs, (double)f.count / secs, atomic_load(&f.failed));
	lode_disconnect(f.c);
	free(f.data);
	return atomic_load(&f.failed) ? 1 : 0;
}
