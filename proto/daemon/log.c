/* SPDX-License-Identifier: MIT */
/* Daemon logging to stderr: one write() per line so that threads do not interleave. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "log.h"

static const char *log_prog = "lode";
static enum lode_log_level log_max = LODE_LOG_INFO;

void lode_log_init(const char *prog, enum lode_log_level max)
{
	log_prog = prog;
	log_max = max;
}

void lode_log(enum lode_log_level lvl, const char *fmt, ...)
{
	static const char *const names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
	char line[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if (lvl > log_max)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%03ld %-5s %s: ", tm.tm_hour, tm.tm_min,
		     tm.tm_sec, ts.tv_nsec / 1000000, names[lvl], log_prog);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

void lode_log_conn_error(void *ctx, const char *transport, int err)
{
	(void)ctx;
	LODE_WARN("%s: cannot set up an accepted connection: %s", transport, strerror(-err));
}

/*
 * Frames a peer should not have sent are refused on the header; the daemon says so, at most
 * once a second (a peer sending garbage in a loop must not flood the log), with the count
 * of those it did not print.
 */
int lode_log_check_header(void *ctx, const struct lode_wire_hdr *hdr)
{
	static _Atomic int64_t last_s;
	static _Atomic uint64_t quiet;
	struct timespec ts;
	int64_t prev;
	int rc = lode_hdr_check_bounds(hdr);

	(void)ctx;
	if (!rc)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	prev = atomic_load(&last_s);
	if (ts.tv_sec == prev || !atomic_compare_exchange_strong(&last_s, &prev, ts.tv_sec)) {
		atomic_fetch_add(&quiet, 1);
		return rc;
	}
	LODE_WARN("refused a %s request announcing %u body and %llu data bytes: %s (closing its "
		  "connection; %llu more refused since the last line)",
		  lode_op_name(hdr->opcode), hdr->body_len, (unsigned long long)hdr->data_len,
		  strerror(-rc), (unsigned long long)atomic_exchange(&quiet, 0));
	return rc;
}
