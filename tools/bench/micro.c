/* SPDX-License-Identifier: MIT */
/*
 * micro: what one core of this machine does per byte or per operation, for the "what
 * limits what" measurements in docs/benchmarks.md (tools/bench/limits.sh runs it).
 *
 *   micro memcpy [--size B]    memcpy between two 16 MiB buffers, SIZE bytes in all
 *   micro xxh3 [--size B]      lode_chunk_sum (xxh3-64 per 64 KiB chunk, liblode's and
 *                              lode-oss's checksum) over a 16 MiB buffer, SIZE bytes in all
 *   micro fsync [--count N] DIR
 *                              N times: a 4 KiB pwrite to a file in DIR and fdatasync, the
 *                              cost of one durable commit on DIR's disk (the file is removed)
 *   micro cap [--count N]      N times: the OSS's check of a capability (lode_cap_check:
 *                              keyed BLAKE2b of 32 bytes, compared in constant time)
 *
 * Prints "bytes=N seconds=S" (memcpy, xxh3) or "ops=N seconds=S" (fsync, cap), one thread.
 */
#include "util.h"

#include "cap.h"
#include "codec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF (16u << 20)

static void usage(void)
{
	fprintf(stderr, "usage: micro memcpy|xxh3 [--size B] | micro fsync [--count N] DIR | "
			"micro cap [--count N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t size = 8ull << 30, count = 2000, done = 0, sum = 0;
	const char *cmd, *dir = NULL;
	double t0, t1;
	int i;

	if (argc < 2)
		usage();
	cmd = argv[1];
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc) {
			if (bench_parse_size("--size", argv[++i], BUF, 1ull << 40, &size))
				usage();
		} else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
			if (bench_parse_size("--count", argv[++i], 1, 1000000, &count))
				usage();
		} else if (argv[i][0] != '-' && !dir) {
			dir = argv[i];
		} else {
			usage();
		}
	}
	bench_watchdog(600);

	if (!strcmp(cmd, "memcpy") || !strcmp(cmd, "xxh3")) {
		char *a = bench_alloc(BUF), *b = bench_alloc(BUF);
		int copy = !strcmp(cmd, "memcpy");

		bench_fill(a, BUF, 3);
		t0 = bench_now();
		for (; done < size; done += BUF) {
			if (copy) {
				memcpy(b, a, BUF);
				a[done / BUF % BUF] ^= b[BUF - 1]; /* keeps each copy needed */
			} else {
				for (size_t off = 0; off < BUF; off += LODE_CHUNK_SIZE)
					sum ^= lode_chunk_sum(a + off, LODE_CHUNK_SIZE);
			}
		}
		t1 = bench_now();
		printf("bytes=%llu seconds=%.6f check=%llu\n", (unsigned long long)done, t1 - t0,
		       (unsigned long long)(sum & 1));
		free(a);
		free(b);
		return 0;
	}
	if (!strcmp(cmd, "fsync") && dir) {
		char path[4096], *buf = bench_alloc(4096);
		int fd;

		snprintf(path, sizeof(path), "%s/micro-fsync.%d", dir, (int)getpid());
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			bench_die("micro: %s: %s", path, strerror(errno));
		unlink(path);
		t0 = bench_now();
		for (; done < count; done++) {
			if (pwrite(fd, buf, 4096, (off_t)(done % 256) * 4096) != 4096 ||
			    fdatasync(fd))
				bench_die("micro: write+fdatasync: %s", strerror(errno));
		}
		t1 = bench_now();
		close(fd);
		printf("ops=%llu seconds=%.6f\n", (unsigned long long)done, t1 - t0);
		free(buf);
		return 0;
	}
	if (!strcmp(cmd, "cap")) {
		uint8_t key[LODE_KEY_BYTES] = {1, 2, 3};
		struct lode_wire_cap cap = {.ino = 7, .generation = 1, .rights = LODE_CAP_READ};
		int bad = 0;

		cap.expiry_ms = lode_cap_now_ms() + 3600000;
		lode_cap_sign(key, &cap);
		t0 = bench_now();
		for (; done < count; done++)
			bad |= lode_cap_check(key, &cap, 7, 1, LODE_CAP_READ, lode_cap_now_ms());
		t1 = bench_now();
		printf("ops=%llu seconds=%.6f check=%d\n", (unsigned long long)done, t1 - t0, bad);
		return 0;
	}
	usage();
}
