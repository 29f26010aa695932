/* SPDX-License-Identifier: MIT */
/*
 * --metrics HOST:PORT of lode-mds and lode-oss: the metrics of their request server (see
 * daemon_metrics.c and docs/metrics.md) plus the daemon's own collector, served over HTTP.
 */
#ifndef LODE_PROTO_DAEMON_METRICS_H
#define LODE_PROTO_DAEMON_METRICS_H

#include "metrics.h"

struct lode_server;
struct lode_daemon_metrics;

/*
 * Listens on hostport, writes "HOST:PORT" (the real port) into port_file when not NULL,
 * prints "PROG: metrics on http://HOST:PORT/metrics" to stderr and serves the metrics of srv
 * and then those fn writes (NULL: none). srv must outlive the endpoint: stop it first.
 * Returns 0, or -errno after logging a one-line reason.
 */
int lode_daemon_metrics_start(struct lode_daemon_metrics **out, const char *prog,
			      const char *hostport, const char *port_file, struct lode_server *srv,
			      lode_metrics_collect_fn fn, void *arg);
/* Stops serving and frees dm. NULL is accepted. */
void lode_daemon_metrics_stop(struct lode_daemon_metrics *dm);

#endif
