/* SPDX-License-Identifier: MIT */
/*
 * Daemon logging to stderr: one write() per line so that threads do not interleave.
 *
 * Two formats, chosen at lode_log_init():
 * - on a terminal or a file: "2026-12-01T08:55:02.123+00:00 INFO  lode-mds: message", a full
 *   local date and time with milliseconds and the zone, so that a line found in a file days
 *   later still says when it happened;
 * - under systemd, whose journal stamps every line itself: "<6>message", the sd-daemon(3)
 *   level prefix the journal turns into the entry's priority. systemd says stderr is the
 *   journal by setting JOURNAL_STREAM to the device and inode of that stream; a daemon whose
 *   stderr was redirected elsewhere inherits the variable, so it counts only while stderr is
 *   still that stream.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *log_prog = "lode";
static enum lode_log_level log_max = LODE_LOG_INFO;
static bool log_journal;

bool lode_log_stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char end;

	if (!js || sscanf(js, "%llu:%llu%c", &dev, &ino, &end) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st))
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void lode_log_init(const char *prog, enum lode_log_level max)
{
	log_prog = prog;
	log_max = max;
	log_journal = lode_log_stderr_is_journal();
}

/* "2026-12-01T08:55:02.123+01:00": ISO 8601, local time, milliseconds, the zone's offset. */
static int format_time(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	int off, n;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	off = (int)(tm.tm_gmtoff / 60);
	n = snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03d%c%02d:%02d", tm.tm_year + 1900,
		     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     (int)(ts.tv_nsec / 1000000), off < 0 ? '-' : '+', abs(off) / 60,
		     abs(off) % 60);
	return n < 0 ? 0 : n;
}

void lode_log(enum lode_log_level lvl, const char *fmt, ...)
{
	static const char *const names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
	/* sd-daemon(3): <3> SD_ERR, <4> SD_WARNING, <6> SD_INFO, <7> SD_DEBUG */
	static const char *const journal[] = {"<3>", "<4>", "<6>", "<7>"};
	char line[1024], when[64];
	va_list ap;
	int n;

	if (lvl > log_max)
		return;
	if (log_journal) {
		n = snprintf(line, sizeof(line), "%s", journal[lvl]);
	} else {
		format_time(when, sizeof(when));
		n = snprintf(line, sizeof(line), "%s %-5s %s: ", when, names[lvl], log_prog);
	}
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
