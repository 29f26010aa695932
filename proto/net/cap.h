/* SPDX-License-Identifier: MIT */
/*
 * Capabilities: what the MDS allows a client to do with one file's objects, which the OSS
 * checks locally before it touches an object (the cephx pattern; see docs/security.md).
 *
 * A capability (struct lode_wire_cap) names (inode, layout generation), rights (read,
 * write) and an expiry (wall clock), and carries a MAC under the capability key:
 *   K_cap = BLAKE2b-256(key = cluster key, "lode capability v1")
 *   mac   = BLAKE2b-256(key = K_cap, the first 32 bytes of the capability)
 * K_cap is derived from the cluster key only, not from any role's key: the MDS and the OSS
 * (which must hold the cluster key) can make and check capabilities; a node given a
 * client key (or an admin or target key) cannot mint one.
 */
#ifndef LODE_PROTO_CAP_H
#define LODE_PROTO_CAP_H

#include <stdbool.h>
#include <stdint.h>

#include "auth.h"
#include "wire_spec.h"

/* Derives K_cap from a cluster key. */
void lode_cap_key_derive(const uint8_t cluster[LODE_KEY_BYTES], uint8_t out[LODE_KEY_BYTES]);

/* Fills cap's mac under key (the other fields set by the caller, reserved zero). */
void lode_cap_sign(const uint8_t key[LODE_KEY_BYTES], struct lode_wire_cap *cap);

/*
 * Checks cap for an operation needing rights on object (ino, generation) at now_ms (wall
 * clock). Returns 0; -EACCES when it is forged, for another file or generation, or lacks a
 * right; -EKEYEXPIRED when it is genuine but past its expiry (the client renews and
 * retries). The MAC is compared in constant time.
 */
int lode_cap_check(const uint8_t key[LODE_KEY_BYTES], const struct lode_wire_cap *cap, uint64_t ino,
		   uint64_t generation, uint32_t rights, uint64_t now_ms);

/* lode_cap_check without the MAC: for a capability already found genuine (the same bytes,
 * on the same connection). */
int lode_cap_check_fields(const struct lode_wire_cap *cap, uint64_t ino, uint64_t generation,
			  uint32_t rights, uint64_t now_ms);

/* Wall clock in ms since the epoch (what expiry_ms is measured in). */
uint64_t lode_cap_now_ms(void);

#endif
