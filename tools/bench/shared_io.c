/* SPDX-License-Identifier: MIT */
/*
 * shared_io: the N-to-1 against N-to-N write benchmark (tools/bench/shared-write.sh).
 *
 *   shared_io n1 --writers N --size B --rec B DIR...   one file, DIR[0]/shared, opened by
 *       every writer through DIR[i % ndirs] (mounts of one cluster); writer i writes the
 *       records r = i, i + N, ... of rec bytes at r * rec (disjoint, interleaved ranges, as
 *       MPI-IO's and IOR's shared-file mode), size bytes in all per writer
 *   shared_io nn --writers N --size B --rec B DIR...   one file per writer, DIR[i % ndirs]/
 *       file.i, written sequentially in records of rec bytes
 *
 * Every writer opens before any writes, closes (which commits) before the clock stops.
 * Prints "bytes=... seconds=..." (util.h's format).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

struct writer {
	pthread_t t;
	int fd;
	unsigned id;
	int err;
	char *buf;
};

static unsigned nwriters = 8;
static uint64_t per_writer = 64ull << 20, rec = 1ull << 20;
static int shared;
static pthread_barrier_t start;

static void *write_records(void *arg)
{
	struct writer *w = arg;
	uint64_t nrec = per_writer / rec;

	pthread_barrier_wait(&start);
	for (uint64_t k = 0; k < nrec && !w->err; k++) {
		uint64_t r = shared ? k * nwriters + w->id : k;
		ssize_t n = pwrite(w->fd, w->buf, rec, (off_t)(r * rec));

		if (n != (ssize_t)rec)
			w->err = n < 0 ? errno : EIO;
	}
	if (close(w->fd) && !w->err)
		w->err = errno;
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: shared_io n1|nn [--writers N] [--size B] [--rec B] DIR...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct writer *ws;
	double t0, t1;
	int i, ndirs;

	if (argc < 3 || (strcmp(argv[1], "n1") && strcmp(argv[1], "nn")))
		usage();
	shared = !strcmp(argv[1], "n1");
	for (i = 2; i < argc && argv[i][0] == '-'; i += 2) {
		uint64_t v;

		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--writers")) {
			if (bench_parse_size("--writers", argv[i + 1], 1, 256, &v))
				return 2;
			nwriters = (unsigned)v;
		} else if (!strcmp(argv[i], "--size")) {
			if (bench_parse_size("--size", argv[i + 1], 4096, 1ull << 40, &per_writer))
				return 2;
		} else if (!strcmp(argv[i], "--rec")) {
			if (bench_parse_size("--rec", argv[i + 1], 1, 64ull << 20, &rec))
				return 2;
		} else {
			usage();
		}
	}
	ndirs = argc - i;
	if (ndirs < 1 || per_writer < rec)
		usage();
	bench_watchdog(900);
	ws = calloc(nwriters, sizeof(*ws));
	if (!ws)
		bench_die("shared_io: out of memory");
	if (shared) { /* created once, through the first mount */
		char p[4096];
		int fd;

		snprintf(p, sizeof(p), "%s/shared", argv[i]);
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || close(fd))
			bench_die("shared_io: create %s: %s", p, strerror(errno));
	}
	pthread_barrier_init(&start, NULL, nwriters + 1);
	for (unsigned w = 0; w < nwriters; w++) {
		char p[4096];

		if (shared)
			snprintf(p, sizeof(p), "%s/shared", argv[i + (int)(w % (unsigned)ndirs)]);
		else
			snprintf(p, sizeof(p), "%s/file.%u", argv[i + (int)(w % (unsigned)ndirs)],
				 w);
		ws[w].id = w;
		ws[w].fd = open(p, shared ? O_WRONLY : O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (ws[w].fd < 0)
			bench_die("shared_io: open %s: %s", p, strerror(errno));
		ws[w].buf = bench_alloc(rec);
		bench_fill(ws[w].buf, rec, w + 1);
		if (pthread_create(&ws[w].t, NULL, write_records, &ws[w]))
			bench_die("shared_io: cannot start a writer");
	}
	t0 = bench_now();
	pthread_barrier_wait(&start);
	for (unsigned w = 0; w < nwriters; w++)
		pthread_join(ws[w].t, NULL);
	t1 = bench_now();
	for (unsigned w = 0; w < nwriters; w++)
		if (ws[w].err)
			bench_die("shared_io: writer %u: %s", w, strerror(ws[w].err));
	printf("bytes=%llu seconds=%.6f\n", (unsigned long long)(per_writer / rec * rec * nwriters),
	       t1 - t0);
	return 0;
}
