/* SPDX-License-Identifier: MIT */
/*
 * Direct calls: a call made on the caller's own thread, over a blocking TCP connection
 * that it has to itself for the call, instead of through the rpc's I/O thread.
 *
 * Why: a call through the I/O thread wakes that thread to send it, and the reply wakes it
 * again, then the caller: three thread wakeups besides the server's. On a virtual machine
 * a wakeup costs tens of microseconds, and a metadata call (a LOOKUP, an UNLINK) is almost
 * nothing but wakeups: about 100 us a round trip over loopback, where a blocking socket
 * takes one wakeup, the reply's. For calls one at a time per thread, with small bodies, as
 * liblode's MDS calls are (lode_rpc_call_direct, rpc.h).
 *
 * A pool keeps idle connections to one address, each with its handshake done (auth.h, the
 * same as rpc.c's). A call takes one (or opens one), sends the whole frame, reads the
 * reply into the call's buffers and gives the connection back. Any transport error or a
 * reply that does not fit closes that connection and every idle one (after a server
 * restart they are all dead: the caller's retry then connects anew at once). A call past
 * its deadline fails with -ETIMEDOUT and its connection is closed, as rpc.c does, so no
 * late reply can land in a buffer the caller reused.
 */
#ifndef LODE_PROTO_RPC_DIRECT_H
#define LODE_PROTO_RPC_DIRECT_H

#include <stdbool.h>
#include <stdint.h>

#include "addr.h"
#include "auth.h"

struct lode_call;
struct lode_direct_pool;

/* The most data iovecs of a direct call. */
#define LODE_DIRECT_IOV_MAX 62

/* What every connection of a pool proves (rpc.c's lode_rpc_set_auth). */
struct lode_direct_auth {
	unsigned role;
	bool has_key;
	uint8_t key[LODE_KEY_BYTES];
	char group[32];
};

/* A pool for addr (TCP). server_flags, if not NULL, gets each handshake's flags
 * (atomically). Returns 0 or -ENOMEM. */
int lode_direct_pool_create(const struct lode_addr *addr, const struct lode_direct_auth *auth,
			    unsigned default_timeout_ms, unsigned *server_flags,
			    struct lode_direct_pool **out);
/* Closes every idle connection and frees the pool; no call may be running. NULL is
 * accepted. */
void lode_direct_pool_destroy(struct lode_direct_pool *p);

/*
 * Makes call (opcode, body, cap, data in at most LODE_DIRECT_IOV_MAX iovecs, lazy, grant,
 * reply buffers, timeout_ms; not done or arg) on the calling thread. Returns call->status:
 * 0, the server's error, or the transport's (-ECONNREFUSED, -ECONNRESET, -ETIMEDOUT,
 * -EACCES for a failed handshake, -EPROTO for a reply that does not fit, -EMSGSIZE for a
 * request over the wire's limits).
 */
int lode_direct_call(struct lode_direct_pool *p, struct lode_call *call);

#endif
