/* SPDX-License-Identifier: MIT */
/*
 * The metrics registry and the Prometheus text it renders: a list of collectors and a
 * growing buffer they print into. An allocation that fails marks the buffer, and the whole
 * scrape is refused rather than served truncated (a missing sample would read as a reset).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

#define MAX_COLLECTORS 16

struct lode_metrics {
	unsigned n;
	struct {
		lode_metrics_collect_fn fn;
		void *arg;
	} c[MAX_COLLECTORS];
};

struct lode_metrics_buf {
	char *p;
	size_t len, cap;
	int failed;
};

int lode_metrics_create(struct lode_metrics **out)
{
	struct lode_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	*out = m;
	return 0;
}

int lode_metrics_add(struct lode_metrics *m, lode_metrics_collect_fn fn, void *arg)
{
	if (!fn)
		return -EINVAL;
	if (m->n == MAX_COLLECTORS)
		return -ENOSPC;
	m->c[m->n].fn = fn;
	m->c[m->n].arg = arg;
	m->n++;
	return 0;
}

void lode_metrics_destroy(struct lode_metrics *m)
{
	free(m);
}

static void __attribute__((format(printf, 2, 3)))
put(struct lode_metrics_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = 1;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap * 2 + (size_t)n;
		char *p = realloc(b->p, cap);

		if (!p) {
			b->failed = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

char *lode_metrics_render(struct lode_metrics *m, size_t *len)
{
	struct lode_metrics_buf b = {.cap = 16384};

	b.p = malloc(b.cap);
	if (!b.p)
		return NULL;
	b.p[0] = '\0';
	for (unsigned i = 0; i < m->n; i++)
		m->c[i].fn(m->c[i].arg, &b);
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}

void lode_metrics_family(struct lode_metrics_buf *b, const char *name, const char *type,
			 const char *help)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void lode_metrics_sample(struct lode_metrics_buf *b, const char *name, const char *labels,
			 double value)
{
	char v[32];

	if (isnan(value))
		snprintf(v, sizeof(v), "NaN");
	else if (isinf(value))
		snprintf(v, sizeof(v), value > 0 ? "+Inf" : "-Inf");
	else
		snprintf(v, sizeof(v), "%.17g", value);
	if (labels && *labels)
		put(b, "%s{%s} %s\n", name, labels, v);
	else
		put(b, "%s %s\n", name, v);
}

void lode_metrics_sample_u64(struct lode_metrics_buf *b, const char *name, const char *labels,
			     uint64_t value)
{
	if (labels && *labels)
		put(b, "%s{%s} %llu\n", name, labels, (unsigned long long)value);
	else
		put(b, "%s %llu\n", name, (unsigned long long)value);
}

void lode_metrics_histogram(struct lode_metrics_buf *b, const char *name, const char *labels,
			    const double *bounds, unsigned nbounds, const uint64_t *counts,
			    double sum)
{
	const char *sep = labels && *labels ? "," : "";
	const char *l = labels ? labels : "";
	uint64_t cum = 0;

	for (unsigned i = 0; i <= nbounds; i++) {
		char le[32];

		cum += counts[i];
		if (i < nbounds)
			snprintf(le, sizeof(le), "%.6g", bounds[i]);
		else
			snprintf(le, sizeof(le), "+Inf");
		put(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, l, sep, le,
		    (unsigned long long)cum);
	}
	if (*l) {
		put(b, "%s_sum{%s} %.17g\n", name, l, sum);
		put(b, "%s_count{%s} %llu\n", name, l, (unsigned long long)cum);
	} else {
		put(b, "%s_sum %.17g\n", name, sum);
		put(b, "%s_count %llu\n", name, (unsigned long long)cum);
	}
}

void lode_metrics_labels(char *out, size_t out_len, unsigned n, const char *const *kv)
{
	size_t o = 0;

	out[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		const char *k = kv[2 * i], *v = kv[2 * i + 1];
		int w = snprintf(out + o, out_len - o, "%s%s=\"", i ? "," : "", k);

		if (w < 0 || (size_t)w + 2 > out_len - o) {
			out[o] = '\0'; /* no room for this pair: leave it out whole */
			return;
		}
		o += (size_t)w;
		/* a value too long is cut, but its quote is always closed */
		for (; *v; v++) {
			const char *esc = *v == '\\'   ? "\\\\"
					  : *v == '"'  ? "\\\""
					  : *v == '\n' ? "\\n"
						       : NULL;
			size_t need = esc ? 2 : 1;

			if (o + need + 2 > out_len)
				break;
			if (esc)
				memcpy(out + o, esc, 2);
			else
				out[o] = *v;
			o += need;
		}
		out[o++] = '"';
		out[o] = '\0';
	}
}
