/* SPDX-License-Identifier: MIT */
/*
 * fsx DIR [-s SEED] [-n OPS] [-t SECONDS] [-m MIN_OPS] [-f FILES] [-z MAXSIZE]
 *
 * A data-integrity soak in the spirit of fsx (Avadis Tevanian's file system exerciser):
 * random writes, truncates, reads, mmap reads, mmap writes, fsyncs and reopens on a few
 * files in DIR, every read checked against an in-memory model of what each file must hold.
 * Stops after OPS operations or SECONDS, whichever comes first, and fails if fewer than
 * MIN_OPS ran. On a mismatch it prints the first differing offset and the tail of the
 * operation log, and exits 1. Same seed, same operations.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOG_LEN 64

struct file {
	char path[512];
	int fd;
	unsigned char *model; /* what the file must contain, maxsize bytes */
	size_t size;
};

static uint64_t rng;
static size_t maxsize = 1 << 20;
static long page;
static uint64_t opno;
static char oplog[LOG_LEN][160];

/* Percent of each operation: write, truncate, read, mmap read, mmap write, fsync, reopen
 * (with a full read), stat. Truncate, fsync and reopen cost an MDS commit each; they stay
 * frequent enough to interleave with everything, rare enough for 100,000 in 4 minutes. */
static const unsigned mix[8] = {30, 6, 28, 14, 11, 3, 2, 6};

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static void logop(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(oplog[opno % LOG_LEN], sizeof(oplog[0]), fmt, ap);
	va_end(ap);
}

static void __attribute__((noreturn)) die(const char *fmt, ...)
{
	va_list ap;
	uint64_t first = opno >= LOG_LEN ? opno - LOG_LEN + 1 : 0;

	fputs("fsx: FAIL: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\nfsx: the last %d operations:\n", (int)(opno - first + 1));
	for (uint64_t i = first; i <= opno; i++)
		printf("  %8" PRIu64 " %s\n", i, oplog[i % LOG_LEN]);
	fflush(stdout);
	exit(1);
}

static void check(struct file *f, const unsigned char *got, size_t off, size_t len, const char *how)
{
	if (!memcmp(got, f->model + off, len))
		return;
	for (size_t i = 0; i < len; i++)
		if (got[i] != f->model[off + i])
			die("%s of %s [%zu, +%zu): first differing offset %zu: expected 0x%02x, "
			    "got "
			    "0x%02x (file size in the model %zu)",
			    how, f->path, off, len, off + i, f->model[off + i], got[i], f->size);
}

/* Lengths: mostly small, sometimes large; offsets: anywhere, near EOF, or on the 64 KiB
 * chunk edges the data path widens writes to. */
static size_t pick_len(void)
{
	switch (below(16)) {
	case 0:
		return 1 + below(256 * 1024);
	case 1:
	case 2:
	case 3:
		return 1 + below(65536);
	default:
		return 1 + below(4096);
	}
}

static size_t pick_off(const struct file *f, size_t len)
{
	size_t off;

	switch (below(4)) {
	case 0:
		off = f->size ? below(f->size) : 0;
		break;
	case 1:
		off = (below(maxsize / 65536 + 1) * 65536) + below(3) - 1;
		break;
	case 2:
		off = f->size + below(8192);
		break;
	default:
		off = below(maxsize);
		break;
	}
	if (off > maxsize)
		off = maxsize;
	if (off + len > maxsize)
		off = maxsize - len;
	return off;
}

static void fill(unsigned char *b, size_t len, size_t off)
{
	uint64_t x = opno * 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < len; i++) {
		uint64_t v = x + (off + i) * 0xbf58476d1ce4e5b9ull;

		b[i] = (unsigned char)((v >> 32) ^ (v >> 56));
	}
}

static void op_write(struct file *f, unsigned char *buf)
{
	size_t len = pick_len(), off = pick_off(f, len);
	ssize_t n;

	logop("write   %s off %zu len %zu (size %zu)", f->path, off, len, f->size);
	fill(buf, len, off);
	n = pwrite(f->fd, buf, len, (off_t)off);
	if (n != (ssize_t)len)
		die("pwrite %s off %zu len %zu returned %zd (%s)", f->path, off, len, n,
		    strerror(errno));
	if (off > f->size)
		memset(f->model + f->size, 0, off - f->size);
	memcpy(f->model + off, buf, len);
	if (off + len > f->size)
		f->size = off + len;
}

static void op_truncate(struct file *f)
{
	size_t to = below(4) ? below(f->size + 65536) : below(maxsize);
	struct stat st;

	if (to > maxsize)
		to = maxsize;
	logop("trunc   %s from %zu to %zu", f->path, f->size, to);
	if (ftruncate(f->fd, (off_t)to))
		die("ftruncate %s to %zu: %s", f->path, to, strerror(errno));
	if (to > f->size)
		memset(f->model + f->size, 0, to - f->size);
	f->size = to;
	if (fstat(f->fd, &st) || (size_t)st.st_size != to)
		die("fstat %s after ftruncate to %zu says %lld", f->path, to,
		    (long long)st.st_size);
}

static void op_read(struct file *f, unsigned char *buf)
{
	size_t len = pick_len(), off = pick_off(f, len), want;
	ssize_t n;

	logop("read    %s off %zu len %zu (size %zu)", f->path, off, len, f->size);
	want = off >= f->size ? 0 : (off + len > f->size ? f->size - off : len);
	n = pread(f->fd, buf, len, (off_t)off);
	if (n != (ssize_t)want)
		die("pread %s off %zu len %zu returned %zd (%s), expected %zu (size %zu)", f->path,
		    off, len, n, n < 0 ? strerror(errno) : "short", want, f->size);
	check(f, buf, off, want, "read");
}

static void op_mmap(struct file *f, int writing, unsigned char *buf)
{
	size_t len, off, moff, mlen;
	unsigned char *m;

	if (!f->size) {
		logop("mmap    %s skipped: empty", f->path);
		return;
	}
	len = pick_len();
	if (len > f->size)
		len = 1 + below(f->size);
	off = below(f->size - len + 1);
	moff = off - off % (size_t)page;
	mlen = off + len - moff;
	logop("mmap-%s %s off %zu len %zu (size %zu)", writing ? "wr" : "rd", f->path, off, len,
	      f->size);
	m = mmap(NULL, mlen, writing ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, f->fd,
		 (off_t)moff);
	if (m == MAP_FAILED)
		die("mmap %s off %zu len %zu: %s", f->path, moff, mlen, strerror(errno));
	if (writing) {
		fill(buf, len, off);
		memcpy(m + (off - moff), buf, len);
		memcpy(f->model + off, buf, len);
		if (below(2) && msync(m, mlen, below(2) ? MS_SYNC : MS_ASYNC))
			die("msync %s: %s", f->path, strerror(errno));
	} else {
		check(f, m + (off - moff), off, len, "mmap read");
	}
	if (munmap(m, mlen))
		die("munmap: %s", strerror(errno));
}

static void verify_all(struct file *f, unsigned char *buf, const char *why)
{
	struct stat st;
	ssize_t n;

	if (fstat(f->fd, &st) || (size_t)st.st_size != f->size)
		die("%s: fstat %s says size %lld, the model %zu", why, f->path,
		    (long long)st.st_size, f->size);
	n = pread(f->fd, buf, maxsize + 1, 0);
	if (n != (ssize_t)f->size)
		die("%s: reading all of %s returned %zd, expected %zu", why, f->path, n, f->size);
	check(f, buf, 0, f->size, why);
}

static void op_reopen(struct file *f, unsigned char *buf)
{
	logop("reopen  %s (size %zu)", f->path, f->size);
	if (close(f->fd))
		die("close %s: %s", f->path, strerror(errno));
	f->fd = open(f->path, O_RDWR);
	if (f->fd < 0)
		die("reopen %s: %s", f->path, strerror(errno));
	verify_all(f, buf, "read after reopen");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	uint64_t seed = (uint64_t)time(NULL), nops = 100000, min_ops = 0;
	double seconds = 240, t0;
	int nfiles = 4, c;
	uint64_t counts[8] = {0};
	double spent[8] = {0}, t1;
	static const char *const names[] = {"write",	  "truncate", "read",	"mmap-read",
					    "mmap-write", "fsync",    "reopen", "stat"};
	struct file *files;
	unsigned char *buf;

	while ((c = getopt(argc, argv, "s:n:t:m:f:z:")) != -1) {
		switch (c) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			nops = strtoull(optarg, NULL, 0);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'm':
			min_ops = strtoull(optarg, NULL, 0);
			break;
		case 'f':
			nfiles = atoi(optarg);
			break;
		case 'z':
			maxsize = strtoull(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr,
				"usage: fsx DIR [-s SEED] [-n OPS] [-t SECONDS] [-m MIN_OPS] "
				"[-f FILES] [-z MAXSIZE]\n");
			return 2;
		}
	}
	if (optind != argc - 1 || nfiles < 1 || maxsize < 300 * 1024) {
		fprintf(stderr, "fsx: one DIR, at least one file, MAXSIZE >= 300 KiB\n");
		return 2;
	}
	page = sysconf(_SC_PAGESIZE);
	rng = seed ? seed : 1;
	printf("fsx: seed %" PRIu64 ", %" PRIu64 " operations or %.0f s, %d files of at most %zu "
	       "bytes in %s\n",
	       seed, nops, seconds, nfiles, maxsize, argv[optind]);
	fflush(stdout);
	files = calloc((size_t)nfiles, sizeof(*files));
	buf = malloc(maxsize + 1);
	if (!files || !buf)
		return 1;
	for (int i = 0; i < nfiles; i++) {
		struct file *f = &files[i];

		snprintf(f->path, sizeof(f->path), "%s/fsx-%d", argv[optind], i);
		f->model = calloc(1, maxsize);
		f->fd = open(f->path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (!f->model || f->fd < 0)
			die("create %s: %s", f->path, strerror(errno));
	}
	t0 = now();
	for (opno = 0; opno < nops; opno++) {
		struct file *f = &files[below((uint64_t)nfiles)];
		unsigned k = (unsigned)below(100);
		int op = 0;

		for (unsigned acc = mix[0]; k >= acc; acc += mix[++op])
			;

		counts[op]++;
		t1 = now();
		switch (op) {
		case 0:
			op_write(f, buf);
			break;
		case 1:
			op_truncate(f);
			break;
		case 2:
			op_read(f, buf);
			break;
		case 3:
			op_mmap(f, 0, buf);
			break;
		case 4:
			op_mmap(f, 1, buf);
			break;
		case 5:
			logop("fsync   %s", f->path);
			if (fsync(f->fd))
				die("fsync %s: %s", f->path, strerror(errno));
			break;
		case 6:
			op_reopen(f, buf);
			break;
		default: {
			struct stat st;

			logop("stat    %s (size %zu)", f->path, f->size);
			if (stat(f->path, &st) || (size_t)st.st_size != f->size)
				die("stat %s says size %lld, the model %zu", f->path,
				    (long long)st.st_size, f->size);
		}
		}
		spent[op] += now() - t1;
		if (opno % 10000 == 9999) {
			printf("fsx: %" PRIu64 " operations, %.1f s\n", opno + 1, now() - t0);
			fflush(stdout);
		}
		if ((opno & 1023) == 1023 && now() - t0 > seconds) {
			opno++;
			break;
		}
	}
	printf("fsx: %" PRIu64 " operations in %.1f s:", opno, now() - t0);
	for (int i = 0; i < 8; i++)
		printf(" %s %" PRIu64 " (%.1f s)", names[i], counts[i], spent[i]);
	putchar('\n');
	for (int i = 0; i < nfiles; i++) {
		logop("final close, reopen and full read of %s", files[i].path);
		op_reopen(&files[i], buf);
		close(files[i].fd);
		free(files[i].model);
	}
	free(files);
	free(buf);
	if (opno < min_ops) {
		printf("fsx: FAIL: only %" PRIu64 " of the required %" PRIu64 " operations ran in "
		       "%.0f s (seed %" PRIu64 ")\n",
		       opno, min_ops, seconds, seed);
		return 1;
	}
	printf("fsx: OK, no mismatch (seed %" PRIu64 ")\n", seed);
	return 0;
}
