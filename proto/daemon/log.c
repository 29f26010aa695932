/* SPDX-License-Identifier: MIT */
/* Daemon logging to stderr: one write() per line so that threads do not interleave. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
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

/*
 * A line about what a peer did wrong is printed at most once a second: a peer doing it in a
 * loop must not flood the log. Returns true when this one may be printed; *quieted gets the
 * count of those suppressed since the last one printed.
 */
struct ratelimit {
	_Atomic int64_t last_s;
	_Atomic uint64_t quiet;
};

static bool ratelimit_pass(struct ratelimit *r, uint64_t *quieted)
{
	struct timespec ts;
	int64_t prev;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	prev = atomic_load(&r->last_s);
	if (ts.tv_sec == prev || !atomic_compare_exchange_strong(&r->last_s, &prev, ts.tv_sec)) {
		atomic_fetch_add(&r->quiet, 1);
		return false;
	}
	*quieted = atomic_exchange(&r->quiet, 0);
	return true;
}

void lode_log_conn_error(void *ctx, const char *transport, int err)
{
	static struct ratelimit rl;
	uint64_t quiet;

	(void)ctx;
	if (!ratelimit_pass(&rl, &quiet))
		return;
	LODE_WARN("%s: refused an accepted connection: %s (%llu more since the last line)",
		  transport,
		  err == -EMFILE   ? "too many connections"
		  : err == -EUSERS ? "too many connections from one peer"
				   : strerror(-err),
		  (unsigned long long)quiet);
}

int lode_log_check_header(void *ctx, const struct lode_wire_hdr *hdr)
{
	static struct ratelimit rl;
	uint64_t quiet;
	int rc = lode_hdr_check_bounds(hdr);

	(void)ctx;
	if (!rc || !ratelimit_pass(&rl, &quiet))
		return rc;
	LODE_WARN("refused a %s request announcing %u body and %llu data bytes: %s (closing its "
		  "connection; %llu more refused since the last line)",
		  lode_op_name(hdr->opcode), hdr->body_len, (unsigned long long)hdr->data_len,
		  strerror(-rc), (unsigned long long)quiet);
	return rc;
}
