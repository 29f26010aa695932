/* SPDX-License-Identifier: MIT */
/* The log lines a server's hooks (lode_server_ops) print about what peers did wrong, each at
 * most once a second. Apart from log.c because these need the wire format and lode-fuse,
 * which shares log.c, does not. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "codec.h"
#include "log.h"

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

void lode_log_auth_fail(void *ctx, const char *transport, uint32_t peer, const char *why)
{
	static struct ratelimit rl;
	char addr[INET_ADDRSTRLEN] = "?";
	uint64_t quiet;

	(void)ctx;
	if (!ratelimit_pass(&rl, &quiet))
		return;
	if (peer)
		inet_ntop(AF_INET, &peer, addr, sizeof(addr));
	LODE_WARN("%s peer %s refused: %s (%llu more refusals since the last line)", transport,
		  addr, why, (unsigned long long)quiet);
}
