/* SPDX-License-Identifier: MIT */
/*
 * lode_server: the request side of a Lode daemon, independent of the transport.
 *
 * A server listens on one or more addresses ("tcp://HOST:PORT"; port 0 picks a free one)
 * and runs `threads` worker threads, each with its own lode_loop. Connections are spread
 * over the workers; a connection lives on one worker for its lifetime. Every complete,
 * well-formed request frame is handed to ops->on_request() on the connection's worker
 * thread, which must eventually answer it exactly once with lode_req_reply() (from any
 * thread). Frames that fail the header checks (bad magic or version, unknown opcode,
 * lengths over the limits, a reply flag, non-zero reserved bits) close that connection;
 * body checks are the handler's job, through proto/codec.h, answered with an error.
 *
 * With keys (opts.keys), a connection is served only after the AUTH handshake
 * (proto/net/auth.h), and only the opcodes its role may send reach on_request.
 */
#ifndef LODE_PROTO_SERVER_H
#define LODE_PROTO_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "wire_spec.h"

struct lode_server;
struct lode_req;

struct lode_server_ops {
	/* A request arrived. Runs on the worker thread of the request's connection. */
	void (*on_request)(void *ctx, struct lode_req *req);
	/* Optional: called once on each worker thread before it serves, with its loop. */
	void (*on_worker_start)(void *ctx, unsigned worker, struct lode_loop *loop);
	/* Optional: an accepted connection could not be set up (err < 0: -ENOMEM, a transport
	 * error); it is dropped. Any worker thread. Library code does not log: a daemon that
	 * wants a log line says so here. */
	void (*on_conn_error)(void *ctx, const char *transport, int err);
	/* Optional: a request header passed the framing checks; return non-zero to close the
	 * connection before its body and data are received (nothing is allocated for it). The
	 * daemons check each opcode's bounds here (lode_hdr_check_bounds). Worker thread. */
	int (*check_header)(void *ctx, const struct lode_wire_hdr *hdr);
	/* Optional: a peer failed the handshake or sent what its role may not (why says which,
	 * naming the role or opcode); the connection is closed, or the request answered EACCES.
	 * peer: its IPv4 address in network order, 0 if unknown. Worker thread. */
	void (*on_auth_fail)(void *ctx, const char *transport, uint32_t peer, const char *why);
};

struct lode_server_opts {
	const char *listen[4]; /* NULL-terminated list of addresses, at least one */
	unsigned threads;      /* worker threads, >= 1 */
	const struct lode_server_ops *ops;
	void *ctx;
	/* What one peer can hold (0: the default in brackets). A connection past a cap is
	 * closed at accept, reported through ops->on_conn_error (-EMFILE, -EUSERS). */
	unsigned max_conns;	     /* connections in all [16384] */
	unsigned max_conns_per_peer; /* from one IPv4 address [1024] */
	unsigned first_frame_ms;     /* a new connection's first frame, complete [10000] */
	unsigned frame_ms;	     /* any frame, from its header to its last byte [60000] */
	uint64_t max_request_bytes;  /* request memory held, all connections [1 GiB] */
	/* The keys connections must prove (proto/net/auth.h), copied at start; NULL: none
	 * (insecure: any peer may send anything, and AUTH is answered LODE_AUTH_F_INSECURE).
	 * With keys, a connection's first frame must be AUTH, the handshake must complete
	 * within first_frame_ms, and each request must be one its role may send
	 * (lode_op_roles), else EACCES. */
	const struct lode_keyring *keys;
};

/* Binds every address and starts the workers. Returns 0 or -errno (-EINVAL for a bad
 * address, -EADDRINUSE, ...). On failure nothing is left running. */
int lode_server_start(struct lode_server **out, const struct lode_server_opts *opts);
/* The address actually bound for listen[i] (with the real port), as "tcp://HOST:PORT". */
const char *lode_server_address(const struct lode_server *srv, unsigned i);
/* Stops the workers, closes every connection and frees the server. Requests still held
 * by handlers may be answered afterwards, from any thread: those replies are dropped, and
 * the last of them frees what is left of the server. NULL is accepted. */
void lode_server_stop(struct lode_server *srv);
/* Requests handed to the handlers and not yet freed (answered, or dropped with their
 * connection): 0 when the server is idle. */
uint64_t lode_server_live_requests(const struct lode_server *srv);

/*
 * What a server has answered, summed over its workers. Each worker counts its own requests
 * (one writer per counter, relaxed atomics, no shared cache line), so counting costs the hot
 * path a clock read and a few additions; this sum is for a metrics scrape, not for decisions.
 * A request is counted when its reply is handed to its connection's worker; its latency runs
 * from its frame's last byte to then (handler, disk, group commit; not the reply's send).
 */
#define LODE_SERVER_LAT_BOUNDS 17
/* Upper bounds of the latency buckets, in seconds, ascending (the last bucket is above). */
extern const double lode_server_lat_bounds[LODE_SERVER_LAT_BOUNDS];

struct lode_server_op_stats {
	uint64_t requests;			  /* answered */
	uint64_t errors;			  /* answered with a non-zero status */
	uint64_t lat[LODE_SERVER_LAT_BOUNDS + 1]; /* answered per latency bucket, not cumulative */
	uint64_t lat_sum_ns;
	uint64_t rx_bytes; /* request frames: header, body and data */
	uint64_t tx_bytes; /* reply frames: header, body and data */
};

struct lode_server_stats {
	uint64_t received; /* requests handed to ops->on_request */
	uint64_t answered; /* of those, answered (in flight: received - answered) */
	uint64_t conns;	   /* connections open now */
	struct lode_server_op_stats op[LODE_OP_MAX_];
};

/* Fills *out (about 12 KiB) with the sums so far. Any thread, while the server runs. */
void lode_server_stats(const struct lode_server *srv, struct lode_server_stats *out);

/* The request's header, body (hdr.body_len bytes) and bulk data (hdr.data_len bytes).
 * Valid until lode_req_reply(). Body and data are 8-byte aligned. */
const struct lode_wire_hdr *lode_req_hdr(const struct lode_req *req);
const void *lode_req_body(const struct lode_req *req);
const void *lode_req_data(const struct lode_req *req);
/* The loop of the worker that received the request (for disk I/O on that thread). */
struct lode_loop *lode_req_loop(const struct lode_req *req);
/* The role the request's connection proved (LODE_ROLE_*), or 0 on a server without keys. */
unsigned lode_req_role(const struct lode_req *req);
/* The client group whose key the request's connection proved (auth.h), or "". */
const char *lode_req_group(const struct lode_req *req);
/* An identifier of the connection, unique for the server's lifetime. */
uint64_t lode_req_conn_id(const struct lode_req *req);
/* The capability the request carried (LODE_WIRE_F_CAP; taken off its body, which
 * lode_req_hdr's body_len no longer counts), or NULL. Valid until lode_req_reply(). Its
 * bytes are as received: the caller checks it (proto/net/cap.h). Not 8-byte aligned
 * unless the body's own length is a multiple of 8. */
const struct lode_wire_cap *lode_req_cap(const struct lode_req *req);
/* A few capabilities per connection that the daemon found genuine, so that it checks a
 * capability's MAC once per connection rather than per request: lode_req_cap_known says
 * whether req's capability is byte for byte one remembered on its connection (false when
 * it has none); lode_req_cap_remember remembers it (the oldest is forgotten first). Worker
 * thread of the request only, before the reply. */
bool lode_req_cap_known(const struct lode_req *req);
void lode_req_cap_remember(struct lode_req *req);

/*
 * Answers the request and frees it. Any thread. status is 0 or a negative errno (turned
 * into a wire status here; never pass a positive value). body is copied. data (data_len
 * bytes) is sent after the body: if data_free is non-NULL the reply takes ownership of data
 * and calls data_free(data) once it is sent or dropped; if NULL, data is copied first.
 * If the connection has gone, the reply is dropped (and data freed).
 */
void lode_req_reply(struct lode_req *req, int status, const void *body, size_t body_len, void *data,
		    size_t data_len, void (*data_free)(void *));

/*
 * A successful reply whose data is len bytes of the file fd from off, sent without a copy
 * through user space. release(arg) runs on the request's worker thread once the bytes are
 * sent or dropped; fd must stay open until then. Worker thread of the request only.
 */
void lode_req_reply_file(struct lode_req *req, const void *body, size_t body_len, int fd,
			 uint64_t off, uint32_t len, void (*release)(void *arg), void *arg);

/* What the reply to a request that adds a name says of directory grants (wire_spec.h,
 * LODE_WIRE_F_GRANT): renewed, the grant whose token the request carried was renewed;
 * grant, a MKDIR's new directory's token (0: none). Ignored for other opcodes. Call
 * before lode_req_reply(). */
void lode_req_reply_grant(struct lode_req *req, bool renewed, uint64_t grant);

/* Shorthand for an error reply with no body and no data. */
static inline void lode_req_reply_err(struct lode_req *req, int status)
{
	lode_req_reply(req, status, NULL, 0, NULL, 0, NULL);
}

#endif
