/* SPDX-License-Identifier: MIT */
/*
 * fs_io: the POSIX side of tools/bench/run.sh, for any mounted file system (a lode-fuse
 * mount, tmpfs, the local disk, the null FUSE file system, or a peer's mount).
 *
 *   fs_io write [--direct] [--fsync] [--bs B] --size B PATH...
 *       one writer thread per PATH, SIZE bytes each in BS-sized write()s; --fsync
 *       fsyncs before close (inside the clock).
 *   fs_io read [--direct] [--drop] [--threads N] [--bs B] [--len B] PATH...
 *       one PATH: N threads read distinct, contiguous ranges of it (of its first LEN
 *       bytes if given) with pread();
 *       several PATHs: N threads (default one per PATH), thread i reads PATHs i, i+N, ...
 *       --drop first evicts the files' pages from this machine's page cache
 *       (posix_fadvise DONTNEED: that file's pages only, not the whole cache).
 *   fs_io mkmodel --size B PATH       writes a safetensors file of about SIZE bytes
 *   fs_io model [--mmap] [--drop] PATH
 *       loads it as a loader does: the 8-byte header length, the JSON header, then every
 *       tensor in file order, by pread() into one (pre-faulted) buffer, or with --mmap by
 *       touching every page of each tensor in a read-only mapping.
 *   fs_io meta --count N [--stat-via DIR2 [--threads T]] DIR
 *       create, stat, readdir, unlink of N files in DIR; with --stat-via, before the
 *       unlinks, T threads (default 8) stat them all through DIR2, the same directory seen
 *       by another mount, which never had the names (a loader's workers scanning a dataset
 *       directory another node wrote): "stat_via_ops=N", thread i taking names i, i+T, ...
 *   fs_io small --count N --size B [--read-via DIR2] DIR
 *       N files of SIZE bytes: create+write+close each, then (after --drop of each)
 *       open+read+close each; with --read-via, then open+read+close each through DIR2,
 *       the same directory seen by another mount, which never had the files (a dataset
 *       written by one node and read by another): "read_via_files=N".
 *
 * Data results are "bytes=N seconds=S"; the others name their own keys.
 */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_THREADS 64
#define MAX_PATHS   256
#define MAX_TENSORS 4096
#define MAX_HEADER  (16u << 20)

static struct {
	int direct, fsync, drop, mmap;
	uint64_t bs, size, threads, count, len;
	const char *read_via, *stat_via;
} opt = {.bs = 1u << 20};

struct job {
	char **paths;
	int npaths, first, stride;
	int shared_fd; /* -1, or one file read by several threads */
	uint64_t off, len;
	uint64_t bytes; /* out */
	int err;	/* out: errno of the first failure */
	const char *what;
};

static void drop_file(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		bench_die("fs_io: open %s: %s", path, strerror(errno));
	/* write back anything dirty first: DONTNEED leaves dirty pages in place */
	fdatasync(fd);
	errno = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (errno)
		bench_die("fs_io: fadvise %s: %s", path, strerror(errno));
	close(fd);
}

static int read_range(struct job *j, int fd, char *buf, uint64_t off, uint64_t len, int to_eof)
{
	while (len || to_eof) {
		size_t n = (!to_eof && len < opt.bs) ? (size_t)len : (size_t)opt.bs;
		ssize_t r = pread(fd, buf, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno;
		if (r == 0)
			return to_eof ? 0 : ENODATA;
		off += (uint64_t)r;
		if (!to_eof)
			len -= (uint64_t)r;
		j->bytes += (uint64_t)r;
	}
	return 0;
}

static int open_flags(int base)
{
	return base | (opt.direct ? O_DIRECT : 0);
}

static void *reader(void *arg)
{
	struct job *j = arg;
	char *buf = bench_alloc(opt.bs);

	if (j->shared_fd >= 0) {
		j->what = j->paths[0];
		j->err = read_range(j, j->shared_fd, buf, j->off, j->len, 0);
		goto out;
	}
	for (int i = j->first; i < j->npaths && !j->err; i += j->stride) {
		int fd = open(j->paths[i], open_flags(O_RDONLY));

		j->what = j->paths[i];
		if (fd < 0) {
			j->err = errno;
			break;
		}
		j->err = read_range(j, fd, buf, 0, 0, 1);
		close(fd);
	}
out:
	free(buf);
	return NULL;
}

static void *writer(void *arg)
{
	struct job *j = arg;
	const char *path = j->paths[j->first];
	char *buf = bench_alloc(opt.bs);
	uint64_t off = 0;
	int fd;

	bench_fill(buf, opt.bs, (uint64_t)j->first + 11);
	j->what = path;
	fd = open(path, open_flags(O_WRONLY | O_CREAT | O_TRUNC), 0644);
	if (fd < 0) {
		j->err = errno;
		goto out;
	}
	while (off < opt.size) {
		size_t n = opt.size - off < opt.bs ? (size_t)(opt.size - off) : (size_t)opt.bs;
		ssize_t w = write(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			j->err = w < 0 ? errno : EIO;
			break;
		}
		off += (uint64_t)w;
		j->bytes += (uint64_t)w;
	}
	if (!j->err && opt.fsync && fsync(fd))
		j->err = errno;
	if (close(fd) && !j->err)
		j->err = errno;
out:
	free(buf);
	return NULL;
}

static int run_data(int writing, char **paths, int npaths)
{
	static struct job jobs[MAX_THREADS];
	pthread_t tids[MAX_THREADS];
	int nthreads, shared_fd = -1, i;
	uint64_t total = 0;
	double t0, t1;

	if (npaths < 1 || npaths > MAX_PATHS)
		bench_die("fs_io: 1 to %d paths", MAX_PATHS);
	if (writing) {
		if (!opt.size || npaths > MAX_THREADS)
			bench_die("fs_io: write needs --size and at most %d paths", MAX_THREADS);
		nthreads = npaths;
	} else {
		nthreads = opt.threads ? (int)opt.threads : (npaths == 1 ? 1 : npaths);
		if (npaths > 1 && nthreads > npaths)
			nthreads = npaths;
		if (opt.drop) {
			for (i = 0; i < npaths; i++)
				drop_file(paths[i]);
		}
	}
	t0 = bench_now();
	if (!writing && npaths == 1) {
		struct stat st;
		uint64_t per;

		shared_fd = open(paths[0], open_flags(O_RDONLY));
		if (shared_fd < 0 || fstat(shared_fd, &st))
			bench_die("fs_io: open %s: %s", paths[0], strerror(errno));
		if (opt.len && opt.len < (uint64_t)st.st_size)
			st.st_size = (off_t)opt.len;
		per = ((uint64_t)st.st_size / (uint64_t)nthreads + opt.bs - 1) / opt.bs * opt.bs;
		for (i = 0; i < nthreads; i++) {
			uint64_t off = per * (uint64_t)i, fsize = (uint64_t)st.st_size;

			jobs[i].off = off < fsize ? off : fsize;
			jobs[i].len = off >= fsize ? 0 : (fsize - off < per ? fsize - off : per);
		}
	}
	for (i = 0; i < nthreads; i++) {
		struct job *j = &jobs[i];

		j->paths = paths;
		j->npaths = npaths;
		j->first = i;
		j->stride = nthreads;
		j->shared_fd = shared_fd;
		if (pthread_create(&tids[i], NULL, writing ? writer : reader, j))
			bench_die("fs_io: cannot start thread %d", i);
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	if (shared_fd >= 0)
		close(shared_fd);
	t1 = bench_now();
	for (i = 0; i < nthreads; i++) {
		if (jobs[i].err)
			bench_die("fs_io: %s %s: %s", writing ? "write" : "read",
				  jobs[i].what ? jobs[i].what : "", strerror(jobs[i].err));
		total += jobs[i].bytes;
	}
	printf("bytes=%llu seconds=%.6f\n", (unsigned long long)total, t1 - t0);
	return 0;
}

/* ---- safetensors ---- */

static void write_all(int fd, const void *buf, size_t len, const char *path)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			bench_die("fs_io: write %s: %s", path, w < 0 ? strerror(errno) : "short");
		p += w;
		len -= (size_t)w;
	}
}

/*
 * Tensor sizes cycle through 1 MiB .. 256 MiB in the mix a transformer checkpoint has (many
 * small norms and biases, some large projections and embeddings), truncated to what is left.
 */
static int mkmodel(const char *path)
{
	static const unsigned mib[] = {1, 48, 4, 192, 2, 96, 16, 256, 1, 64, 8, 128, 32};
	uint64_t sizes[MAX_TENSORS], off = 0, hlen, total = opt.size;
	size_t cap = MAX_HEADER, used = 0;
	char *hdr = malloc(cap), *buf;
	unsigned n = 0;
	int fd;

	if (!hdr)
		bench_die("fs_io: out of memory");
	while (off < total && n < MAX_TENSORS) {
		uint64_t s = (uint64_t)mib[n % (sizeof(mib) / sizeof(mib[0]))] << 20;

		if (s > total - off)
			s = total - off;
		sizes[n++] = s;
		off += s;
	}
	used += (size_t)snprintf(hdr + used, cap - used, "{\"__metadata__\":{\"format\":\"pt\"}");
	off = 0;
	for (unsigned i = 0; i < n; i++) {
		used +=
		    (size_t)snprintf(hdr + used, cap - used,
				     ",\"layer.%u.weight\":{\"dtype\":\"U8\",\"shape\":[%" PRIu64
				     "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
				     i, sizes[i], off, off + sizes[i]);
		off += sizes[i];
		if (used + 256 >= cap)
			bench_die("fs_io: header too large");
	}
	hdr[used++] = '}';
	while (used % 8) /* the format pads the header with spaces to 8 bytes */
		hdr[used++] = ' ';
	hlen = used;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		bench_die("fs_io: create %s: %s", path, strerror(errno));
	write_all(fd, &hlen, 8, path); /* little-endian on every machine we run on */
	write_all(fd, hdr, used, path);
	buf = bench_alloc(opt.bs);
	for (uint64_t left = total, k = 0; left; k++) {
		size_t c = left < opt.bs ? (size_t)left : (size_t)opt.bs;

		bench_fill(buf, c, k);
		write_all(fd, buf, c, path);
		left -= c;
	}
	if (fsync(fd) || close(fd))
		bench_die("fs_io: close %s: %s", path, strerror(errno));
	free(buf);
	free(hdr);
	printf("tensors=%u bytes=%" PRIu64 "\n", n, total + 8 + hlen);
	return 0;
}

/* Collects every "data_offsets":[a,b] of the header, in order of appearance. */
static unsigned parse_offsets(const char *h, uint64_t (*out)[2])
{
	static const char key[] = "\"data_offsets\":[";
	unsigned n = 0;

	for (const char *p = strstr(h, key); p && n < MAX_TENSORS; p = strstr(p, key)) {
		char *end;

		p += sizeof(key) - 1;
		out[n][0] = strtoull(p, &end, 10);
		if (*end != ',')
			bench_die("fs_io: bad safetensors header");
		out[n][1] = strtoull(end + 1, &end, 10);
		if (*end != ']' || out[n][1] < out[n][0])
			bench_die("fs_io: bad safetensors header");
		n++;
		p = end;
	}
	return n;
}

static void pread_all(int fd, char *buf, uint64_t len, uint64_t off, const char *path)
{
	while (len) {
		ssize_t r = pread(fd, buf, len, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			bench_die("fs_io: read %s: %s", path, r < 0 ? strerror(errno) : "short");
		buf += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
}

static int model(const char *path)
{
	static uint64_t offs[MAX_TENSORS][2];
	uint64_t hlen, data_len = 0, sum = 0;
	struct stat st;
	unsigned n;
	double t0, t1;
	char *hdr, *buf = NULL;
	int fd;

	if (opt.drop)
		drop_file(path);
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		bench_die("fs_io: open %s: %s", path, strerror(errno));
	if (!opt.mmap) {
		/* the destination (host memory a loader already holds) is faulted in untimed */
		buf = bench_alloc((size_t)st.st_size);
	}
	t0 = bench_now();
	if (opt.mmap) {
		const unsigned char *m =
		    mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m == MAP_FAILED)
			bench_die("fs_io: mmap %s: %s", path, strerror(errno));
		memcpy(&hlen, m, 8);
		if (hlen > MAX_HEADER || 8 + hlen > (uint64_t)st.st_size)
			bench_die("fs_io: %s: bad header length", path);
		hdr = malloc(hlen + 1);
		if (!hdr)
			bench_die("fs_io: out of memory");
		memcpy(hdr, m + 8, hlen);
		hdr[hlen] = 0;
		n = parse_offsets(hdr, offs);
		for (unsigned i = 0; i < n; i++) {
			uint64_t a = 8 + hlen + offs[i][0], b = 8 + hlen + offs[i][1];

			if (b > (uint64_t)st.st_size)
				bench_die("fs_io: %s: tensor past the end", path);
			for (uint64_t p = a; p < b; p += 4096)
				sum += m[p];
			data_len += b - a;
		}
		munmap((void *)m, (size_t)st.st_size);
	} else {
		pread_all(fd, (char *)&hlen, 8, 0, path);
		if (hlen > MAX_HEADER || 8 + hlen > (uint64_t)st.st_size)
			bench_die("fs_io: %s: bad header length", path);
		hdr = malloc(hlen + 1);
		if (!hdr)
			bench_die("fs_io: out of memory");
		pread_all(fd, hdr, hlen, 8, path);
		hdr[hlen] = 0;
		n = parse_offsets(hdr, offs);
		for (unsigned i = 0; i < n; i++) {
			uint64_t len = offs[i][1] - offs[i][0];

			if (8 + hlen + offs[i][1] > (uint64_t)st.st_size)
				bench_die("fs_io: %s: tensor past the end", path);
			pread_all(fd, buf + offs[i][0], len, 8 + hlen + offs[i][0], path);
			data_len += len;
		}
		sum = (unsigned char)buf[0];
	}
	t1 = bench_now();
	close(fd);
	free(hdr);
	free(buf);
	printf("tensors=%u bytes=%" PRIu64 " seconds=%.6f check=%" PRIu64 "\n", n,
	       data_len + 8 + hlen, t1 - t0, sum & 1);
	return 0;
}

/* ---- metadata ---- */

static char *name_of(const char *dir, uint64_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%s/f%07" PRIu64, dir, i);
	return buf;
}

struct stat_job {
	uint64_t first, stride;
};

static void *stat_each(void *arg)
{
	const struct stat_job *j = arg;
	char p[4096];
	struct stat st;

	for (uint64_t i = j->first; i < opt.count; i += j->stride) {
		if (stat(name_of(opt.stat_via, i, p, sizeof(p)), &st))
			bench_die("fs_io: stat %s: %s", p, strerror(errno));
	}
	return NULL;
}

/* meta's --stat-via: opt.threads threads stat every name through the other mount; the
 * seconds it took */
static double stat_via(void)
{
	uint64_t n = opt.threads ? opt.threads : 8;
	pthread_t th[MAX_THREADS];
	struct stat_job jobs[MAX_THREADS];
	double t0 = bench_now();

	for (uint64_t k = 0; k < n; k++) {
		jobs[k] = (struct stat_job){.first = k, .stride = n};
		if (pthread_create(&th[k], NULL, stat_each, &jobs[k]))
			bench_die("fs_io: pthread_create failed");
	}
	for (uint64_t k = 0; k < n; k++)
		pthread_join(th[k], NULL);
	return bench_now() - t0;
}

static int meta(const char *dir)
{
	char p[4096];
	double t0, t[4], via = 0;
	uint64_t seen = 0;
	struct stat st;
	DIR *d;

	t0 = bench_now();
	for (uint64_t i = 0; i < opt.count; i++) {
		int fd = open(name_of(dir, i, p, sizeof(p)), O_WRONLY | O_CREAT | O_EXCL, 0644);

		if (fd < 0 || close(fd))
			bench_die("fs_io: create %s: %s", p, strerror(errno));
	}
	t[0] = bench_now();
	for (uint64_t i = 0; i < opt.count; i++) {
		if (stat(name_of(dir, i, p, sizeof(p)), &st))
			bench_die("fs_io: stat %s: %s", p, strerror(errno));
	}
	t[1] = bench_now();
	d = opendir(dir);
	if (!d)
		bench_die("fs_io: opendir %s: %s", dir, strerror(errno));
	for (struct dirent *e; (e = readdir(d));)
		seen += e->d_name[0] == 'f';
	closedir(d);
	if (seen != opt.count)
		bench_die("fs_io: readdir %s: %" PRIu64 " entries, expected %" PRIu64, dir, seen,
			  opt.count);
	if (opt.stat_via)
		via = stat_via();
	t[2] = bench_now();
	for (uint64_t i = 0; i < opt.count; i++) {
		if (unlink(name_of(dir, i, p, sizeof(p))))
			bench_die("fs_io: unlink %s: %s", p, strerror(errno));
	}
	t[3] = bench_now();
	printf("create_ops=%.1f stat_ops=%.1f readdir_ops=%.1f unlink_ops=%.1f",
	       (double)opt.count / (t[0] - t0), (double)opt.count / (t[1] - t[0]),
	       (double)opt.count / (t[2] - t[1] - via), (double)opt.count / (t[3] - t[2]));
	if (opt.stat_via)
		printf(" stat_via_ops=%.1f", (double)opt.count / via);
	printf("\n");
	return 0;
}

/* open+read+close of each of small()'s files in dir */
static void read_each(const char *dir, char *buf)
{
	char p[4096];

	for (uint64_t i = 0; i < opt.count; i++) {
		int fd = open(name_of(dir, i, p, sizeof(p)), O_RDONLY);

		if (fd < 0)
			bench_die("fs_io: open %s: %s", p, strerror(errno));
		pread_all(fd, buf, opt.size, 0, p);
		close(fd);
	}
}

static int small(const char *dir)
{
	char p[4096], *buf = bench_alloc(opt.size);
	double t0, t1, t2, t3, t4;

	bench_fill(buf, opt.size, 5);
	t0 = bench_now();
	for (uint64_t i = 0; i < opt.count; i++) {
		int fd = open(name_of(dir, i, p, sizeof(p)), O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0)
			bench_die("fs_io: create %s: %s", p, strerror(errno));
		write_all(fd, buf, opt.size, p);
		if (close(fd))
			bench_die("fs_io: close %s: %s", p, strerror(errno));
	}
	t1 = bench_now();
	for (uint64_t i = 0; i < opt.count; i++)
		drop_file(name_of(dir, i, p, sizeof(p)));
	t2 = bench_now();
	read_each(dir, buf);
	t3 = bench_now();
	if (opt.read_via)
		read_each(opt.read_via, buf);
	t4 = bench_now();
	for (uint64_t i = 0; i < opt.count; i++)
		unlink(name_of(dir, i, p, sizeof(p)));
	free(buf);
	printf("write_files=%.1f read_files=%.1f", (double)opt.count / (t1 - t0),
	       (double)opt.count / (t3 - t2));
	if (opt.read_via)
		printf(" read_via_files=%.1f", (double)opt.count / (t4 - t3));
	printf("\n");
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fs_io write [--direct] [--fsync] [--bs B] --size B PATH...\n"
		"       fs_io read [--direct] [--drop] [--threads N] [--bs B] [--len B] PATH...\n"
		"       fs_io mkmodel --size B PATH | model [--mmap] [--drop] PATH\n"
		"       fs_io meta --count N [--stat-via DIR2 [--threads T]] DIR\n"
		"       fs_io small --count N --size B [--read-via DIR2] DIR\n"
		"       (any command: --timeout S, default 900)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t timeout = 900;
	const char *cmd;
	int i, rc;

	if (argc < 2)
		usage();
	cmd = argv[1];
	for (i = 2; i < argc && argv[i][0] == '-'; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";

		rc = 0;
		if (!strcmp(o, "--direct"))
			opt.direct = 1;
		else if (!strcmp(o, "--fsync"))
			opt.fsync = 1;
		else if (!strcmp(o, "--drop"))
			opt.drop = 1;
		else if (!strcmp(o, "--mmap"))
			opt.mmap = 1;
		else if (!strcmp(o, "--bs") && ++i)
			rc = bench_parse_size(o, v, 4096, 256u << 20, &opt.bs);
		else if (!strcmp(o, "--size") && ++i)
			rc = bench_parse_size(o, v, 1, 1ull << 40, &opt.size);
		else if (!strcmp(o, "--len") && ++i)
			rc = bench_parse_size(o, v, 1, 1ull << 44, &opt.len);
		else if (!strcmp(o, "--threads") && ++i)
			rc = bench_parse_size(o, v, 1, MAX_THREADS, &opt.threads);
		else if (!strcmp(o, "--count") && ++i)
			rc = bench_parse_size(o, v, 1, 10000000, &opt.count);
		else if (!strcmp(o, "--read-via") && ++i)
			opt.read_via = v;
		else if (!strcmp(o, "--stat-via") && ++i)
			opt.stat_via = v;
		else if (!strcmp(o, "--timeout") && ++i)
			rc = bench_parse_size(o, v, 1, 86400, &timeout);
		else
			rc = -1;
		if (rc)
			usage();
	}
	bench_watchdog((unsigned)timeout);
	if (!strcmp(cmd, "write") || !strcmp(cmd, "read"))
		return run_data(cmd[0] == 'w', argv + i, argc - i);
	if (i + 1 != argc)
		usage();
	if (!strcmp(cmd, "mkmodel") && opt.size)
		return mkmodel(argv[i]);
	if (!strcmp(cmd, "model"))
		return model(argv[i]);
	if (!strcmp(cmd, "meta") && opt.count)
		return meta(argv[i]);
	if (!strcmp(cmd, "small") && opt.count && opt.size && opt.size <= (64u << 20))
		return small(argv[i]);
	usage();
}
