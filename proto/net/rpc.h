/* SPDX-License-Identifier: MIT */
/*
 * lode_rpc: the calling side, used by liblode, by lode-oss (to reach the MDS) and by tools.
 *
 * A lode_rpc owns one I/O thread with its own lode_loop and any number of connections to
 * servers. Calls are submitted from any thread; many are in flight per connection, matched
 * by request id. The reply's body lands in call->reply_body and its bulk data directly in
 * call->reply_data (the caller's buffer: no intermediate copy).
 *
 * A connection that breaks fails all its calls with -ECONNRESET (or the socket's error);
 * the next call on it reconnects. A call whose deadline passes fails with -ETIMEDOUT and
 * closes its connection (so that late data can never land in a buffer the caller reused).
 *
 * Every connection starts with the handshake (lode_rpc_set_auth); calls wait behind it. A
 * server that does not prove the key, or refuses this side's, fails them with -EACCES.
 */
#ifndef LODE_PROTO_RPC_H
#define LODE_PROTO_RPC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "wire_spec.h"

struct lode_rpc;
struct lode_rpc_conn;

struct lode_call {
	/* request, set by the caller */
	uint8_t opcode;
	const void *body;
	uint32_t body_len;
	const struct iovec *data; /* request bulk data, may be NULL */
	int data_iovcnt;
	/* object data requests: the capability sent with it (LODE_WIRE_F_CAP), or NULL; read
	 * when the call is sent, so it must stay valid until done() */
	const struct lode_wire_cap *cap;
	/* MDS namespace changes: may be answered before they are durable (LODE_WIRE_F_LAZY) */
	bool lazy;
	/* MDS requests that add a name: sent LODE_WIRE_F_GRANT with this token (wire_spec.h) */
	bool grant_flag;
	uint64_t grant;
	/* where the reply goes, set by the caller */
	void *reply_body;
	uint32_t reply_body_max; /* a longer reply body fails the call with -EPROTO */
	void *reply_data;
	uint64_t reply_data_max; /* longer reply data fails the call with -EPROTO */
	unsigned timeout_ms;	 /* 0: the rpc's default */
	/* completion, set by the caller for lode_rpc_submit() */
	void (*done)(struct lode_call *call);
	void *arg;
	/* results, valid in done() and after lode_rpc_call() */
	int status; /* 0, or negative errno (from the server's status or the transport) */
	uint32_t reply_body_len;
	uint64_t reply_data_len;
	bool reply_grant_flag; /* the reply carried LODE_WIRE_F_GRANT */
	uint64_t reply_grant;  /* and this token (MKDIR) */
	/* private */
	uint64_t req_id_;
	uint64_t deadline_ms_;
	struct lode_call *next_;
	struct lode_rpc_conn *conn_;
};

/* Creates the rpc with its I/O thread. default_timeout_ms applies to calls without one.
 * Returns 0 or -errno. */
int lode_rpc_create(struct lode_rpc **out, unsigned default_timeout_ms);
/* Fails every pending call with -ESHUTDOWN, stops the thread and frees everything, the
 * connections included. NULL is accepted. */
void lode_rpc_destroy(struct lode_rpc *rpc);

struct lode_keyring;
/*
 * What this rpc's connections prove in their handshake (proto/net/auth.h): role's key from
 * keys, or no key (keys NULL: a server without keys serves it, one with keys refuses it
 * with -EACCES). Default: no key, role LODE_ROLE_CLIENT. Call before the first call. A copy
 * of the key is kept. Returns 0 or -ENOKEY (keys does not hold role, or role unknown).
 */
int lode_rpc_set_auth(struct lode_rpc *rpc, const struct lode_keyring *keys, unsigned role);
/* The flags the server gave in conn's last handshake: LODE_AUTH_F_INSECURE when it runs
 * without a key. Any thread. */
unsigned lode_rpc_conn_server_flags(const struct lode_rpc_conn *conn);

/* A connection handle for addr ("tcp://HOST:PORT"). Connects lazily on the first call and
 * reconnects after a failure. Returns 0, -EINVAL for a malformed address,
 * -EPROTONOSUPPORT for a transport not built in, or -ENOMEM. */
int lode_rpc_conn_open(struct lode_rpc *rpc, const char *addr, struct lode_rpc_conn **out);
/* Closes it, failing its pending calls with -ESHUTDOWN. NULL is accepted. */
void lode_rpc_conn_close(struct lode_rpc_conn *conn);
const char *lode_rpc_conn_addr(const struct lode_rpc_conn *conn);

/* Submits a call; call->done(call) runs on the rpc's I/O thread when it completes (also
 * on failure). The call and its buffers must stay valid until then. A call with an unknown
 * opcode or a body or data over the wire's limits fails alone with -EMSGSIZE. */
void lode_rpc_submit(struct lode_rpc_conn *conn, struct lode_call *call);

/* Submits and waits. Returns call->status. done/arg are overwritten. */
int lode_rpc_call(struct lode_rpc_conn *conn, struct lode_call *call);
/* As lode_rpc_call, but made on the caller's thread over a blocking connection of its own
 * to conn's address, for calls whose latency is mostly thread wakeups (rpc_direct.h): an
 * MDS call, a small read the caller waits for; a transport other than TCP or more data
 * iovecs than LODE_DIRECT_IOV_MAX make it through the I/O thread. The calls of one thread are in
 * order; calls of different threads may take different connections, so they have no
 * order between them, as with lode_rpc_submit. */
int lode_rpc_call_direct(struct lode_rpc_conn *conn, struct lode_call *call);

/* A group of calls to wait for together: init, submit each with lode_rpc_batch_add(),
 * then lode_rpc_batch_wait() returns when all have completed. */
struct lode_rpc_batch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int pending;	 /* protected by lock */
	int first_error; /* protected by lock */
};
void lode_rpc_batch_init(struct lode_rpc_batch *b);
void lode_rpc_batch_add(struct lode_rpc_batch *b, struct lode_rpc_conn *conn,
			struct lode_call *call);
/* Waits for every call added; returns 0 or the first error among them. */
int lode_rpc_batch_wait(struct lode_rpc_batch *b);
void lode_rpc_batch_destroy(struct lode_rpc_batch *b);

/* Shorthand: a call with only a body and a fixed reply body. */
int lode_rpc_simple(struct lode_rpc_conn *conn, uint8_t opcode, const void *body, uint32_t body_len,
		    void *reply_body, uint32_t reply_body_max);

#endif
