/* SPDX-License-Identifier: MIT */
/* Helpers shared by the benchmark's C programs; see util.h. */
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int bench_parse_size(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		goto bad;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	case 't':
	case 'T':
		shift = 40;
		end++;
		break;
	default:
		break;
	}
	if (*end && strcmp(end, "iB") && strcmp(end, "B"))
		goto bad;
	if (shift && v > (UINT64_MAX >> shift))
		goto bad;
	v <<= shift;
	if (v < min || v > max)
		goto bad;
	*out = v;
	return 0;
bad:
	fprintf(stderr, "bad %s '%s' (expected a number in [%llu, %llu], K/M/G/T allowed)\n", what,
		s, (unsigned long long)min, (unsigned long long)max);
	return -1;
}

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_alarm(int sig)
{
	static const char msg[] = "benchmark helper: watchdog expired, giving up\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing left to tell */
	}
	_exit(3);
}

void bench_watchdog(unsigned seconds)
{
	signal(SIGALRM, on_alarm);
	alarm(seconds);
}

void bench_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void bench_fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	unsigned char *p = buf;
	size_t i;

	/* xorshift64: fast, and not something a transport could compress */
	for (i = 0; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	for (; i < len; i++)
		p[i] = (unsigned char)(x >> (8 * (i & 7)));
}

void *bench_alloc(size_t len)
{
	size_t rounded = (len + 4095) & ~(size_t)4095;
	void *p = aligned_alloc(4096, rounded ? rounded : 4096);

	if (!p)
		bench_die("out of memory allocating %zu bytes", len);
	/* fault the pages in now, so that no timed loop pays for it */
	memset(p, 0, rounded);
	return p;
}
