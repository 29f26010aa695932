/* SPDX-License-Identifier: MIT */
/*
 * lode_io: liblode's own data path, without FUSE, for tools/bench/run.sh.
 *
 *   lode_io --mds ADDR write [--mirrors M] [--stripe-count N] [--req B]
 *           [--replication fanout|chain] --size B PATH...
 *       one writer thread per PATH; each creates its file with an explicit layout
 *       (lode_create_with_layout; 1 MiB stripes, over every target up unless told),
 *       writes SIZE bytes in REQ-sized lode_pwrite calls, fsyncs and closes it. How the
 *       copies are written is liblode's default ($LODE_REPLICATION) unless told.
 *   lode_io --mds ADDR read [--threads N] [--req B] [--len B] PATH...
 *       one PATH: N threads read distinct, contiguous ranges of it (of its first LEN bytes
 *       if given);
 *       several PATHs: N threads (default: one per PATH), thread i reads PATHs i, i+N, ...
 *       Every read is lode_pread of REQ bytes (default 16 MiB, at most 64 GiB: a whole
 *       model in one call) into a per-thread buffer, faulted in before the clock starts;
 *       with --stream 1, lode_read_stream instead (liblode-loader's path to the host: the
 *       same pieces, many in flight, each landing in place).
 *
 * Prints "bytes=N seconds=S busiest_thread=NAME:T client_cpu=C machine_busy=B
 * machine_iowait=W machine_idle=I" (the clock runs from the first open to the last close;
 * C: CPU seconds, user + system, this process used meanwhile: the client's own cost, which
 * chained replication should lower for mirrored writes; T: the CPU seconds of the
 * process's busiest live thread, e.g. liblode's rpc thread, which bounds the rate once it
 * nears the wall time; B, W, I: the shares of the whole machine's CPU time meanwhile that
 * were busy, waiting for I/O and idle, which say whether the CPUs or the disk held it).
 */
#include "util.h"

#include <lode/lode.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAX_THREADS 64
#define MAX_PATHS   256

struct job {
	struct lode_client *c;
	struct lode_file *shared; /* one file read by several threads, or NULL */
	char **paths;
	int npaths, first, stride;
	uint64_t off, len; /* the range of `shared` this thread reads */
	uint64_t size;	   /* write: bytes per file */
	size_t req;
	char *buf;   /* read: REQ bytes, faulted in before the clock starts */
	bool stream; /* read with lode_read_stream (the loader's host path), not lode_pread */
	struct lode_layout layout;
	uint64_t bytes;	  /* out */
	int err;	  /* out: first -errno */
	const char *what; /* out: where err happened */
};

/* The live thread of this process that used the most CPU (user + system) so far. */
static double busiest_thread(char *name, size_t len)
{
	long hz = sysconf(_SC_CLK_TCK);
	double best = 0;
	DIR *d = opendir("/proc/self/task");

	snprintf(name, len, "?");
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));) {
		char path[300], buf[1024], *open_paren, *close_paren;
		unsigned long ut, st;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(buf, sizeof(buf), f)) {
			fclose(f);
			continue;
		}
		fclose(f);
		open_paren = strchr(buf, '(');
		close_paren = strrchr(buf, ')');
		/* after "(comm) ": state and 10 more fields, then utime and stime */
		if (!open_paren || !close_paren ||
		    sscanf(close_paren + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			   &ut, &st) != 2)
			continue;
		if ((double)(ut + st) / (double)hz > best) {
			best = (double)(ut + st) / (double)hz;
			*close_paren = 0;
			snprintf(name, len, "%s", open_paren + 1);
		}
	}
	closedir(d);
	return best;
}

static int piece_ignore(void *arg, uint64_t off, void *data, size_t len)
{
	(void)arg;
	(void)off;
	(void)data;
	(void)len;
	return 0;
}

static int read_range(struct job *j, struct lode_file *f, char *buf, uint64_t off, uint64_t len)
{
	while (len) {
		size_t n = len < j->req ? (size_t)len : j->req;
		ssize_t r = j->stream ? lode_read_stream(f, buf, n, off, piece_ignore, NULL)
				      : lode_pread(f, buf, n, off);

		if (r < 0)
			return (int)r;
		if (r == 0)
			return -ENODATA; /* shorter than its size said */
		off += (uint64_t)r;
		len -= (uint64_t)r;
		j->bytes += (uint64_t)r;
	}
	return 0;
}

static void *reader(void *arg)
{
	struct job *j = arg;
	char *buf = j->buf;

	if (j->shared) {
		j->err = read_range(j, j->shared, buf, j->off, j->len);
		j->what = "read";
		goto out;
	}
	for (int i = j->first; i < j->npaths && !j->err; i += j->stride) {
		struct lode_file *f;

		j->what = j->paths[i];
		j->err = lode_open(j->c, j->paths[i], O_RDONLY, 0, &f);
		if (j->err)
			break;
		j->err = read_range(j, f, buf, 0, lode_file_size(f));
		lode_close(f);
	}
out:
	return NULL;
}

static void *writer(void *arg)
{
	struct job *j = arg;
	/* no bigger than the file: 64 threads filling 16 MiB each for a 64 KiB file would
	 * spend the benchmark's time in page faults, not in what it measures */
	size_t blen = j->size < j->req ? (size_t)j->size : j->req;
	char *buf = bench_alloc(blen ? blen : 1);
	const char *path = j->paths[j->first];
	struct lode_file *f;
	uint64_t off = 0;
	int rc;

	bench_fill(buf, blen, (uint64_t)j->first + 7);
	j->what = path;
	rc = lode_create_with_layout(j->c, path, 0644, &j->layout, &f);
	if (rc == -EEXIST) {
		lode_unlink(j->c, path);
		rc = lode_create_with_layout(j->c, path, 0644, &j->layout, &f);
	}
	if (rc)
		goto out;
	while (off < j->size) {
		size_t n = j->size - off < blen ? (size_t)(j->size - off) : blen;
		ssize_t w = lode_pwrite(f, buf, n, off);

		if (w < 0) {
			rc = (int)w;
			break;
		}
		off += (uint64_t)w;
		j->bytes += (uint64_t)w;
	}
	if (!rc)
		rc = lode_fsync(f);
	{
		int rc2 = lode_close(f);

		if (!rc)
			rc = rc2;
	}
out:
	j->err = rc;
	free(buf);
	return NULL;
}

/* CPU seconds (user + system) of this process so far. */
static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

/* The machine's CPU time so far, in ticks: busy (everything but idle and iowait), idle,
 * iowait. Zeros if /proc/stat cannot be read. */
static void machine_cpu(unsigned long long t[3])
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");

	t[0] = t[1] = t[2] = 0;
	if (!f)
		return;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) == 8) {
		t[0] = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
		t[1] = v[3];
		t[2] = v[4];
	}
	fclose(f);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: lode_io --mds ADDR write [--mirrors M] [--stripe-count N] [--req B] "
		"[--replication fanout|chain] --size B PATH...\n"
		"       lode_io --mds ADDR read [--threads N] [--req B] [--len B] [--stream 0|1] "
		"PATH...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t size = 0, req = 16u << 20, mirrors = 1, stripes = 0, threads = 0, timeout = 900;
	uint64_t len = 0, stream = 0;
	static struct job jobs[MAX_THREADS];
	pthread_t tids[MAX_THREADS];
	struct lode_client *c;
	struct lode_file *shared = NULL;
	const char *mds = getenv("LODE_MDS");
	uint64_t total = 0;
	char **paths;
	int npaths, nthreads, writing, i, rc, replication = LODE_REPLICATION_DEFAULT;
	double t0, t1, cpu0, cpu1, busiest;
	unsigned long long m0[3], m1[3], mtotal;
	char busiest_name[64];

	for (i = 1; i < argc && argv[i][0] == '-'; i += 2) {
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--mds"))
			mds = argv[i + 1];
		else if (!strcmp(argv[i], "--timeout")) {
			if (bench_parse_size("--timeout", argv[i + 1], 1, 86400, &timeout))
				usage();
		} else
			usage();
	}
	if (!mds || i >= argc)
		usage();
	writing = !strcmp(argv[i], "write");
	if (!writing && strcmp(argv[i], "read"))
		usage();
	for (i++; i < argc && argv[i][0] == '-'; i += 2) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		if (!strcmp(o, "--size") && writing)
			rc = bench_parse_size(o, v, 1, 1ull << 40, &size);
		else if (!strcmp(o, "--mirrors") && writing)
			rc = bench_parse_size(o, v, 1, 8, &mirrors);
		else if (!strcmp(o, "--replication") && writing)
			rc = (replication = lode_replication_from_name(v)) < 0 ? -1 : 0;
		else if (!strcmp(o, "--stripe-count") && writing)
			rc = bench_parse_size(o, v, 1, LODE_MAX_TARGETS_PER_LAYOUT, &stripes);
		else if (!strcmp(o, "--threads") && !writing)
			rc = bench_parse_size(o, v, 1, MAX_THREADS, &threads);
		else if (!strcmp(o, "--stream") && !writing)
			rc = bench_parse_size(o, v, 0, 1, &stream);
		else if (!strcmp(o, "--len") && !writing)
			rc = bench_parse_size(o, v, 1, 1ull << 44, &len);
		else if (!strcmp(o, "--req"))
			rc = bench_parse_size(o, v, 4096, 64ull << 30,
					      &req); /* one read of a model */
		else
			rc = -1;
		if (rc)
			usage();
	}
	paths = argv + i;
	npaths = argc - i;
	if (npaths < 1 || npaths > MAX_PATHS || (writing && (!size || npaths > MAX_THREADS)))
		usage();
	bench_watchdog((unsigned)timeout);

	rc = lode_connect(mds, NULL, &c);
	if (rc)
		bench_die("lode_io: connect %s: %s", mds, strerror(-rc));
	lode_set_replication(c, replication);
	if (writing) {
		nthreads = npaths;
	} else if (npaths == 1) {
		nthreads = threads ? (int)threads : 1;
	} else {
		nthreads = threads ? (int)threads : npaths;
		if (nthreads > npaths)
			nthreads = npaths;
	}
	if (writing && !stripes) {
		struct lode_statfs sf;

		rc = lode_statfs(c, &sf);
		if (rc)
			bench_die("lode_io: statfs: %s", strerror(-rc));
		stripes = sf.targets_up ? sf.targets_up : 1;
	}

	/* each reader's buffer (host memory a loader already holds) is faulted in untimed */
	for (i = 0; !writing && i < nthreads; i++)
		jobs[i].buf = bench_alloc((size_t)req);
	cpu0 = cpu_seconds();
	machine_cpu(m0);
	t0 = bench_now();
	if (!writing && npaths == 1) {
		uint64_t fsize, per;

		rc = lode_open(c, paths[0], O_RDONLY, 0, &shared);
		if (rc)
			bench_die("lode_io: open %s: %s", paths[0], strerror(-rc));
		fsize = lode_file_size(shared);
		if (len && len < fsize)
			fsize = len;
		/* ranges of whole requests, the last thread takes the remainder */
		per = (fsize / (uint64_t)nthreads + req - 1) / req * req;
		for (i = 0; i < nthreads; i++) {
			uint64_t off = per * (uint64_t)i;

			jobs[i].off = off < fsize ? off : fsize;
			jobs[i].len = off >= fsize ? 0 : (fsize - off < per ? fsize - off : per);
		}
	}
	for (i = 0; i < nthreads; i++) {
		struct job *j = &jobs[i];

		j->c = c;
		j->shared = shared;
		j->paths = paths;
		j->npaths = npaths;
		j->first = i;
		j->stride = nthreads;
		j->size = size;
		j->req = (size_t)req;
		j->stream = stream;
		j->layout.stripe_size = 1u << 20;
		j->layout.stripe_count = (uint16_t)stripes;
		j->layout.mirror_count = (uint16_t)mirrors;
		if (pthread_create(&tids[i], NULL, writing ? writer : reader, j))
			bench_die("lode_io: cannot start thread %d", i);
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	if (shared)
		lode_close(shared);
	t1 = bench_now();
	cpu1 = cpu_seconds();
	machine_cpu(m1);
	busiest = busiest_thread(busiest_name, sizeof(busiest_name));
	for (i = 0; i < nthreads; i++)
		free(jobs[i].buf);
	for (i = 0; i < nthreads; i++) {
		if (jobs[i].err)
			bench_die("lode_io: %s %s: %s", writing ? "write" : "read",
				  jobs[i].what ? jobs[i].what : "", strerror(-jobs[i].err));
		total += jobs[i].bytes;
	}
	lode_disconnect(c);
	for (i = 0; i < 3; i++)
		m1[i] -= m0[i];
	mtotal = m1[0] + m1[1] + m1[2];
	printf("bytes=%llu seconds=%.6f busiest_thread=%s:%.3f client_cpu=%.3f "
	       "machine_busy=%.2f machine_iowait=%.2f machine_idle=%.2f\n",
	       (unsigned long long)total, t1 - t0, busiest_name, busiest, cpu1 - cpu0,
	       mtotal ? (double)m1[0] / mtotal : 0, mtotal ? (double)m1[2] / mtotal : 0,
	       mtotal ? (double)m1[1] / mtotal : 0);
	return 0;
}
