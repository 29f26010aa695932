/* SPDX-License-Identifier: MIT */
/*
 * The metrics every Lode daemon serves (requests, errors and latency per opcode, bytes on the
 * wire, requests in flight, connections, build info), read from lode_server_stats() at each
 * scrape, and the --metrics start-up the daemons share: bind, say where, write the port file,
 * serve.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "config.h"
#include "daemon_metrics.h"
#include "log.h"
#include "server.h"

struct lode_daemon_metrics {
	const char *prog;
	struct lode_server *srv;
	struct lode_metrics *m;
	struct lode_metrics_http *http;
	struct lode_server_stats *stats; /* scratch for one scrape (HTTP thread only) */
};

/* op="lookup": the opcode's name as proto/wire spells it, in lower case. */
static void op_label(unsigned op, char *out, size_t len)
{
	char name[32];
	const char *kv[2] = {"op", name};
	const char *n = lode_op_name(op);
	size_t i;

	for (i = 0; n[i] && i + 1 < sizeof(name); i++)
		name[i] = (char)tolower((unsigned char)n[i]);
	name[i] = '\0';
	lode_metrics_labels(out, len, 1, kv);
}

static void collect_server(void *arg, struct lode_metrics_buf *b)
{
	struct lode_daemon_metrics *dm = arg;
	struct lode_server_stats *st = dm->stats;
	const char *kv[4] = {"program", dm->prog, "version", LODE_VERSION};
	char l[128];
	double bounds[LODE_SERVER_LAT_BOUNDS];

	lode_server_stats(dm->srv, st);
	lode_metrics_labels(l, sizeof(l), 2, kv);
	lode_metrics_family(b, "lode_build_info", "gauge",
			    "Always 1; the labels say which program and version this is.");
	lode_metrics_sample(b, "lode_build_info", l, 1);

	lode_metrics_family(b, "lode_requests_total", "counter",
			    "Requests answered, by opcode (errors included).");
	for (unsigned o = 0; o < LODE_OP_MAX_; o++) {
		if (!st->op[o].requests)
			continue;
		op_label(o, l, sizeof(l));
		lode_metrics_sample_u64(b, "lode_requests_total", l, st->op[o].requests);
	}
	lode_metrics_family(b, "lode_request_errors_total", "counter",
			    "Requests answered with an error status, by opcode.");
	for (unsigned o = 0; o < LODE_OP_MAX_; o++) {
		if (!st->op[o].requests)
			continue;
		op_label(o, l, sizeof(l));
		lode_metrics_sample_u64(b, "lode_request_errors_total", l, st->op[o].errors);
	}
	for (unsigned i = 0; i < LODE_SERVER_LAT_BOUNDS; i++)
		bounds[i] = lode_server_lat_bounds[i];
	lode_metrics_family(b, "lode_request_duration_seconds", "histogram",
			    "Time from a request's last byte received to its reply, by opcode.");
	for (unsigned o = 0; o < LODE_OP_MAX_; o++) {
		if (!st->op[o].requests)
			continue;
		op_label(o, l, sizeof(l));
		lode_metrics_histogram(b, "lode_request_duration_seconds", l, bounds,
				       LODE_SERVER_LAT_BOUNDS, st->op[o].lat,
				       (double)st->op[o].lat_sum_ns / 1e9);
	}
	lode_metrics_family(b, "lode_network_receive_bytes_total", "counter",
			    "Bytes of request frames received (header, body, data), by opcode.");
	for (unsigned o = 0; o < LODE_OP_MAX_; o++) {
		if (!st->op[o].rx_bytes)
			continue;
		op_label(o, l, sizeof(l));
		lode_metrics_sample_u64(b, "lode_network_receive_bytes_total", l,
					st->op[o].rx_bytes);
	}
	lode_metrics_family(b, "lode_network_transmit_bytes_total", "counter",
			    "Bytes of reply frames sent (header, body, data), by opcode.");
	for (unsigned o = 0; o < LODE_OP_MAX_; o++) {
		if (!st->op[o].requests)
			continue;
		op_label(o, l, sizeof(l));
		lode_metrics_sample_u64(b, "lode_network_transmit_bytes_total", l,
					st->op[o].tx_bytes);
	}
	lode_metrics_family(b, "lode_requests_in_flight", "gauge",
			    "Requests received and not yet answered.");
	lode_metrics_sample_u64(b, "lode_requests_in_flight", NULL, st->received - st->answered);
	lode_metrics_family(b, "lode_connections", "gauge", "Connections open now.");
	lode_metrics_sample_u64(b, "lode_connections", NULL, st->conns);
}

int lode_daemon_metrics_start(struct lode_daemon_metrics **out, const char *prog,
			      const char *hostport, const char *port_file, struct lode_server *srv,
			      lode_metrics_collect_fn fn, void *arg)
{
	struct lode_daemon_metrics *dm = calloc(1, sizeof(*dm));
	char bound[128], why[256];
	int rc;

	if (!dm || !(dm->stats = malloc(sizeof(*dm->stats)))) {
		rc = -ENOMEM;
		goto err;
	}
	dm->prog = prog;
	dm->srv = srv;
	rc = lode_metrics_create(&dm->m);
	if (rc || (rc = lode_metrics_add(dm->m, collect_server, dm)) ||
	    (fn && (rc = lode_metrics_add(dm->m, fn, arg))))
		goto err;
	rc = lode_metrics_http_open(&dm->http, hostport, port_file, bound, sizeof(bound), why,
				    sizeof(why));
	if (rc) {
		LODE_ERR("%s", why);
		goto err;
	}
	rc = lode_metrics_http_start(dm->http, dm->m);
	if (rc) {
		LODE_ERR("cannot serve metrics on %s: %s", bound, strerror(-rc));
		goto err;
	}
	fprintf(stderr, "%s: metrics on http://%s/metrics\n", prog, bound);
	*out = dm;
	return 0;

err:
	lode_daemon_metrics_stop(dm);
	return rc;
}

void lode_daemon_metrics_stop(struct lode_daemon_metrics *dm)
{
	if (!dm)
		return;
	lode_metrics_http_close(dm->http);
	lode_metrics_destroy(dm->m);
	free(dm->stats);
	free(dm);
}
