/* SPDX-License-Identifier: MIT */
/* Daemon logging to stderr: one write() per line so that threads do not interleave. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
