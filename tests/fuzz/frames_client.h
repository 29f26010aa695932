/* SPDX-License-Identifier: MIT */
/*
 * The client side of the handler harnesses (fuzz_mds_handler.c, fuzz_oss_handler.c): turns
 * a fuzz input into request frames, sends them on a loopback connection to a server in this
 * process, and reads every reply. The connection is kept for the next input while the
 * server keeps it open (as a real client's is); after the server closed it, the next input
 * opens another.
 *
 * Input: frames [opcode u8][body_len u16 LE][data_len u16 LE][body][data]... (lengths cut
 * to what the input holds). The opcode's top bit sends the frame LODE_WIRE_F_LAZY where the
 * opcode may be lazy, and LODE_WIRE_F_GRANT (no token) where it adds a name. An opcode the wire
 * does not know is mapped onto one it does, so that inputs are not wasted on frames every server
 * closes at once; headers are always well formed (the header's own checks have harnesses of their
 * own).
 *
 * Checked: every reply is a well-formed reply frame for a request sent on this connection,
 * each request is answered at most once, and all are answered unless the server closed the
 * connection (which it does only for a request its opcode's bounds refuse). A server that
 * neither answers nor closes within 20 s is a hang: abort.
 */
#ifndef LODE_TESTS_FUZZ_FRAMES_CLIENT_H
#define LODE_TESTS_FUZZ_FRAMES_CLIENT_H

#include <stddef.h>
#include <stdint.h>

/* Called on each request body before it is sent (may rewrite it in place), or NULL. */
typedef void (*fuzz_frame_patch_fn)(uint8_t opcode, void *body, uint32_t body_len,
				    uint64_t data_len);

/* A new non-blocking TCP connection to addr ("tcp://127.0.0.1:PORT"), from a source address
 * taken in turn from 127.0.0.1 .. 127.0.0.254 (so that TIME_WAIT never runs out of ports),
 * closed with a reset. Aborts when it cannot connect within 30 s. */
int fuzz_dial(const char *addr);

/* addr: "tcp://127.0.0.1:PORT". Returns the number of replies read. */
unsigned fuzz_frames_run(const char *addr, const uint8_t *data, size_t size,
			 fuzz_frame_patch_fn patch);

struct lode_server;
/* Waits until srv holds no request: those of a connection it closed run on (an object
 * server's fsync, say) and would otherwise cross into the next input, or be cut off by
 * the stop at exit and leak. Aborts after 30 s: a request that never ends is a hang. */
void fuzz_wait_idle(struct lode_server *srv);

#endif
