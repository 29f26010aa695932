/* SPDX-License-Identifier: MIT */
/*
 * lodectl's output: errors (a line on stderr, or the "error" member of the JSON document),
 * the JSON document itself, and the formats the commands share (names safe for a terminal,
 * times, sizes, modes).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lodectl.h"

/* recursive put and get report from several threads */
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

static void report(struct lodectl *ctl, const char *code, int err, const char *msg)
{
	json_object *e;

	pthread_mutex_lock(&report_lock);
	if (!ctl->json) {
		fprintf(stderr, "lodectl%s%s: %s\n", ctl->cmd ? " " : "",
			ctl->cmd ? ctl->cmd->name : "", msg);
	} else if (!ctl->failed) { /* the first error is the one that explains */
		e = json_object_new_object();
		json_add_str(e, "code", code);
		if (err)
			json_add_i64(e, "errno", err);
		json_add_str(e, "message", msg);
		json_object_object_add(ctl->out, "error", e);
	}
	ctl->failed = true;
	pthread_mutex_unlock(&report_lock);
}

static int fail(struct lodectl *ctl, int rc, bool add_reason, const char *fmt, va_list ap)
{
	char msg[1024];
	const char *code = rc ? strerrorname_np(-rc) : NULL;
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);

	if (add_reason && rc && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s", strerror(-rc));
	report(ctl, code ? code : "EIO", rc ? -rc : 0, msg);
	return LODECTL_EXIT_FAIL;
}

int lodectl_fail(struct lodectl *ctl, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fail(ctl, rc, true, fmt, ap);
	va_end(ap);
	return LODECTL_EXIT_FAIL;
}

int lodectl_fail_as(struct lodectl *ctl, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fail(ctl, rc, false, fmt, ap);
	va_end(ap);
	return LODECTL_EXIT_FAIL;
}

int lodectl_usage_error(struct lodectl *ctl, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, " (see lodectl %s%s--help)",
			 ctl->cmd ? ctl->cmd->name : "", ctl->cmd ? " " : "");
	report(ctl, "EUSAGE", 0, msg);
	return LODECTL_EXIT_USAGE;
}

void lodectl_note(struct lodectl *ctl, const char *fmt, ...)
{
	va_list ap;

	if (ctl->json || ctl->quiet)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

void lodectl_json_print(struct lodectl *ctl)
{
	if (!ctl->json || !ctl->out)
		return;
	fputs(json_object_to_json_string_ext(ctl->out, JSON_C_TO_STRING_PRETTY |
							   JSON_C_TO_STRING_SPACED |
							   JSON_C_TO_STRING_NOSLASHESCAPE),
	      stdout);
	fputc('\n', stdout);
	fflush(stdout);
}

void json_add_str(json_object *obj, const char *key, const char *val)
{
	json_object_object_add(obj, key, val ? json_object_new_string(val) : NULL);
}

void json_add_u64(json_object *obj, const char *key, uint64_t val)
{
	json_object_object_add(obj, key, json_object_new_uint64(val));
}

void json_add_i64(json_object *obj, const char *key, int64_t val)
{
	json_object_object_add(obj, key, json_object_new_int64(val));
}

void json_add_bool(json_object *obj, const char *key, bool val)
{
	json_object_object_add(obj, key, json_object_new_boolean(val));
}

void json_add_double(json_object *obj, const char *key, double val)
{
	char s[64];

	/* microseconds are plenty, and "0.052407" reads better than 17 digits */
	snprintf(s, sizeof(s), "%.6f", val);
	json_object_object_add(obj, key, json_object_new_double_s(val, s));
}

void json_add_null(json_object *obj, const char *key)
{
	json_object_object_add(obj, key, NULL);
}

const char *lodectl_type_name(uint32_t mode)
{
	return S_ISREG(mode)   ? "file"
	       : S_ISDIR(mode) ? "directory"
	       : S_ISLNK(mode) ? "symlink"
			       : "other";
}

void lodectl_mode_string(uint32_t mode, char *s)
{
	const char *rwx = "rwxrwxrwx";

	s[0] = S_ISDIR(mode) ? 'd' : S_ISLNK(mode) ? 'l' : S_ISREG(mode) ? '-' : '?';
	for (int i = 0; i < 9; i++)
		s[i + 1] = (mode & (1u << (8 - i))) ? rwx[i] : '-';
	s[10] = 0;
}

/* A file name may hold any byte but '/' and NUL, and some would move the cursor or retitle
 * the window. */
const char *lodectl_shown_name(const char *name, char *buf, size_t size)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)name; *p && o + 5 < size; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '\\')
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", *p);
		else
			buf[o++] = (char)*p;
	}
	buf[o] = '\0';
	return buf;
}

void lodectl_time_string(int64_t ns, bool iso, char *buf, size_t size)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	if (ns < 0 && ns % 1000000000)
		t--;
	if (iso ? !gmtime_r(&t, &tm) : !localtime_r(&t, &tm)) {
		snprintf(buf, size, "?");
		return;
	}
	strftime(buf, size, iso ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M", &tm);
}

void lodectl_bytes_string(uint64_t bytes, char *buf, size_t size)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, size, "%.1f %s", v, units[u]);
}

double lodectl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
