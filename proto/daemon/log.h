/* SPDX-License-Identifier: MIT */
/*
 * Daemon logging: one line per event to stderr, "DATE-TIME LEVEL prog: message", or under
 * systemd "<N>message" (log.c says when and why). Libraries (liblode, proto) do not log;
 * daemons log where they decide.
 */
#ifndef LODE_PROTO_LOG_H
#define LODE_PROTO_LOG_H

#include <stdbool.h>
#include <stdint.h>

enum lode_log_level { LODE_LOG_ERR, LODE_LOG_WARN, LODE_LOG_INFO, LODE_LOG_DEBUG };

/* Sets the program name and the most verbose level printed, and picks the format for what
 * stderr is now: call it again after redirecting stderr. */
void lode_log_init(const char *prog, enum lode_log_level max);
/* True when stderr is systemd's journal stream (JOURNAL_STREAM names its device and inode). */
bool lode_log_stderr_is_journal(void);
void lode_log(enum lode_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* log_hooks.c, for servers only (they need the wire format): */
/* For lode_server_ops.on_conn_error: a WARN line for a connection refused or not set up, at
 * most one a second. */
void lode_log_conn_error(void *ctx, const char *transport, int err);
/* For lode_server_ops.check_header: each opcode's bounds (lode_hdr_check_bounds), and a WARN
 * line, at most one a second, for what it refuses. */
struct lode_wire_hdr;
int lode_log_check_header(void *ctx, const struct lode_wire_hdr *hdr);
/* For lode_server_ops.on_auth_fail: a WARN line for a failed handshake or a request its
 * connection's role may not send, at most one a second. */
void lode_log_auth_fail(void *ctx, const char *transport, uint32_t peer, const char *why);

#define LODE_ERR(...)	lode_log(LODE_LOG_ERR, __VA_ARGS__)
#define LODE_WARN(...)	lode_log(LODE_LOG_WARN, __VA_ARGS__)
#define LODE_INFO(...)	lode_log(LODE_LOG_INFO, __VA_ARGS__)
#define LODE_DEBUG(...) lode_log(LODE_LOG_DEBUG, __VA_ARGS__)

#endif
