/* SPDX-License-Identifier: MIT */
/*
 * Metrics of a Lode program in the Prometheus text format (version 0.0.4), served over HTTP.
 *
 * Nothing is counted here. A program keeps its own counters where counting is cheap (per
 * worker, or atomics) and registers collectors: functions that, at each scrape, read those
 * counters and write metric families into a lode_metrics_buf. Scrapes are serialized (one
 * HTTP thread), so a collector needs no lock of its own against another scrape; what it reads
 * from other threads it reads with atomic loads.
 *
 * Names follow Prometheus's conventions: a lode_ prefix, base units (_seconds, _bytes),
 * _total for counters. docs/metrics.md lists every metric; keep it true.
 *
 * This library links libmicrohttpd and nothing of Lode, so lode-fuse can use it as well as
 * the daemons.
 */
#ifndef LODE_PROTO_METRICS_H
#define LODE_PROTO_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct lode_metrics;
struct lode_metrics_buf;
struct lode_metrics_http;

/* A collector: writes its families into b. Runs on the HTTP thread, one scrape at a time. */
typedef void (*lode_metrics_collect_fn)(void *arg, struct lode_metrics_buf *b);

/* An empty registry. Returns 0 or -ENOMEM. */
int lode_metrics_create(struct lode_metrics **out);
/* Adds a collector (at most 16); collectors run in the order added. Call before serving.
 * Returns 0, -ENOSPC or -EINVAL. */
int lode_metrics_add(struct lode_metrics *m, lode_metrics_collect_fn fn, void *arg);
/* NULL is accepted. Stop the HTTP endpoint first. */
void lode_metrics_destroy(struct lode_metrics *m);
/* Runs every collector. Returns the text (malloc'd, NUL-terminated, *len bytes without the
 * NUL), or NULL when out of memory. */
char *lode_metrics_render(struct lode_metrics *m, size_t *len);

/* ---- for collectors ---- */

/* The HELP and TYPE lines of a family; type is "counter", "gauge" or "histogram". Once per
 * family, before its samples, and each family's samples together. */
void lode_metrics_family(struct lode_metrics_buf *b, const char *name, const char *type,
			 const char *help);
/* One sample: name{labels} value. labels is NULL or the text between the braces, as
 * lode_metrics_labels() builds it. */
void lode_metrics_sample(struct lode_metrics_buf *b, const char *name, const char *labels,
			 double value);
void lode_metrics_sample_u64(struct lode_metrics_buf *b, const char *name, const char *labels,
			     uint64_t value);
/*
 * A histogram's samples: name_bucket for each bound and +Inf, name_sum, name_count.
 * counts[] has nbounds + 1 entries, each the observations in its own bucket (not cumulative;
 * the last is above every bound); they are summed here, so +Inf always equals _count. bounds
 * ascend.
 */
void lode_metrics_histogram(struct lode_metrics_buf *b, const char *name, const char *labels,
			    const double *bounds, unsigned nbounds, const uint64_t *counts,
			    double sum);
/* Builds a label list: key="value" pairs (n of them, keys then values alternating in kv),
 * escaping backslash, quote and newline in the values. Truncates to fit out (out_len >= 1). */
void lode_metrics_labels(char *out, size_t out_len, unsigned n, const char *const *kv);

/* ---- the HTTP endpoint ---- */

/*
 * Binds and listens on HOST:PORT ("127.0.0.1:9100", "[::1]:0", "localhost:9100"; port 0:
 * a free one), without serving yet, so a program can say where before it forks (lode-fuse)
 * and fail with a clear reason before it starts anything. bound gets "HOST:PORT" with the
 * real port; so does port_file (unless NULL), written atomically (a temporary name, then
 * rename), so that a test waiting for it reads all of it or nothing. Returns 0 or -errno
 * (-EINVAL for a malformed address), with a one-line reason in why. Nothing but the one
 * address given is listened on.
 */
int lode_metrics_http_open(struct lode_metrics_http **out, const char *hostport,
			   const char *port_file, char *bound, size_t bound_len, char *why,
			   size_t why_len);
/* Serves GET /metrics from m on a thread of its own. Returns 0 or -errno. */
int lode_metrics_http_start(struct lode_metrics_http *h, struct lode_metrics *m);
/* Stops serving, closes the socket and frees h. NULL is accepted. */
void lode_metrics_http_close(struct lode_metrics_http *h);

#endif
