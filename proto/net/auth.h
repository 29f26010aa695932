/* SPDX-License-Identifier: MIT */
/*
 * Cluster keys and the connection handshake's proofs (libsodium; no primitive of our own).
 *
 * A cluster key is 32 random bytes. Each role has its own key, derived from the cluster key
 * with keyed BLAKE2b: K_role = BLAKE2b-256(key = cluster key, "lode role " + role name). A
 * key file holds one line, "lode-key-v1 ROLE HEX64", where ROLE is "cluster" (every role's
 * key can be derived) or one role's name ("client", "target", "admin": that role only), so
 * a client node need not hold the cluster key. A key file that group or others may access,
 * or that is not exactly that line, is refused.
 *
 * Client groups: ROLE "client:NAME" is the key of client group NAME, K_NAME =
 * BLAKE2b-256(key = cluster key, "lode client group " + NAME). A node holding it proves it
 * is a client of group NAME, and the MDS applies what its configuration binds to NAME (a
 * uid/gid range, or squashing; mds/identity.h). A group key derives nothing else, so a
 * node given one cannot pass for a plain client or another group. Servers holding the
 * cluster key derive any group's key when a client names its group in AUTH step 1.
 *
 * The handshake (server.c accepts, rpc.c connects) proves that both ends hold K_role:
 *   client -> server  AUTH step 1: role, client nonce Nc (32 random bytes)
 *   server -> client  reply: server nonce Ns, proof_s = MAC(K_role, "lode server" role Nc Ns)
 *   client -> server  AUTH step 2: proof_c = MAC(K_role, "lode client" role Ns Nc)
 * MAC is keyed BLAKE2b-256; proofs are compared in constant time. No key crosses the wire,
 * and a recorded handshake replayed on a new connection fails: the server's nonce is new.
 */
#ifndef LODE_PROTO_AUTH_H
#define LODE_PROTO_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LODE_KEY_BYTES	 32
#define LODE_NONCE_BYTES 32
#define LODE_PROOF_BYTES 32

/* Roles a connection can hold (the values travel in AUTH and HELLO). */
#define LODE_AUTH_CLIENT 1u
#define LODE_AUTH_TARGET 2u
#define LODE_AUTH_ADMIN	 3u
#define LODE_AUTH_ROLES_ 4u /* one past the last */

/* Bit of a role in a role mask (proto/wire's per-opcode table). */
#define LODE_ROLE_BIT(r) (1u << (r))

/* The keys a program holds: one per role it can prove. */
struct lode_keyring {
	bool cluster;				       /* loaded from a cluster key: every role */
	uint8_t cluster_key[LODE_KEY_BYTES];	       /* then: the cluster key (client groups) */
	unsigned held;				       /* role bits */
	uint8_t key[LODE_AUTH_ROLES_][LODE_KEY_BYTES]; /* by role */
	char group[32];			 /* a client group's key file: its name (key[client] is the
					  * group's key); else "" */
	uint8_t cap_key[LODE_KEY_BYTES]; /* capabilities (cap.h): with a cluster key only */
};

/*
 * The key of client group `group` into out: derived when kr holds the cluster key, copied
 * when kr is that group's key file. Returns 0, -EINVAL for a bad name, -ENOKEY otherwise.
 */
int lode_keyring_group_key(const struct lode_keyring *kr, const char *group,
			   uint8_t out[LODE_KEY_BYTES]);

/* Writes client group `group`'s key of kr (see lode_keyring_group_key) to path as a key file
 * "client:GROUP" (mode 0600, -EEXIST if it exists). Returns 0 or -errno with a reason. */
int lode_key_write_group(const struct lode_keyring *kr, const char *group, const char *path,
			 char *err, size_t errlen);

/* "client", "target", "admin", or "?" for anything else. */
const char *lode_auth_role_name(unsigned role);

/*
 * Reads a key file into *out. Returns 0, or -errno with a one-line reason in err: -ENOENT
 * (missing), -EPERM (group or others may access it), -EINVAL (not a Lode key file). The
 * reason names the file. Output written only on success.
 */
int lode_keyring_load(const char *path, struct lode_keyring *out, char *err, size_t errlen);

/* Writes a new random cluster key to path (mode 0600), refusing an existing file (-EEXIST).
 * Returns 0 or -errno with a reason in err. */
int lode_key_generate(const char *path, char *err, size_t errlen);

/* Writes role's key of kr (which must hold it: else -ENOKEY) to path as a one-role key
 * file (mode 0600, -EEXIST if it exists). Returns 0 or -errno with a reason in err. */
int lode_key_write_role(const struct lode_keyring *kr, unsigned role, const char *path, char *err,
			size_t errlen);

/* The key of role, or NULL when kr does not hold it. */
const uint8_t *lode_keyring_key(const struct lode_keyring *kr, unsigned role);

/* The role a tool connects with: admin if kr holds it, else client, else target. */
unsigned lode_keyring_best_role(const struct lode_keyring *kr);

/* Fills buf with n unpredictable bytes (randombytes_buf). */
void lode_auth_nonce(uint8_t *buf, size_t n);

/* The server's (server = true) or the client's proof for role over the two nonces. */
void lode_auth_proof(const uint8_t key[LODE_KEY_BYTES], bool server, unsigned role,
		     const uint8_t cnonce[LODE_NONCE_BYTES], const uint8_t snonce[LODE_NONCE_BYTES],
		     uint8_t out[LODE_PROOF_BYTES]);

/* True when proof is the expected one (constant-time compare). */
bool lode_auth_verify(const uint8_t key[LODE_KEY_BYTES], bool server, unsigned role,
		      const uint8_t cnonce[LODE_NONCE_BYTES],
		      const uint8_t snonce[LODE_NONCE_BYTES],
		      const uint8_t proof[LODE_PROOF_BYTES]);

struct lode_wire_auth_rep;
/*
 * The client's check of the server's answer to AUTH step 1 (body_len bytes in rep; a
 * refusal's status is the caller's to check), for the connecting sides (rpc.c,
 * rpc_direct.c). key: the client's key for role, or NULL when it holds none; cnonce: what
 * it sent. Returns 0 when the server is accepted, with *step2 true when the client must
 * now send AUTH step 2 with proof (filled here); -EACCES when the server proves no key,
 * or none where this client holds one (an insecure server: anyone could claim to be
 * one); -EPROTO for a malformed answer.
 */
int lode_auth_check_server(uint32_t body_len, const struct lode_wire_auth_rep *rep,
			   const uint8_t *key, unsigned role,
			   const uint8_t cnonce[LODE_NONCE_BYTES], bool *step2,
			   uint8_t proof[LODE_PROOF_BYTES]);

/*
 * Why a connection failed with rc, in words, for a tool to print: the key file's problem if
 * it has one (key_file, or LODE_KEY_FILE when NULL; "" for none), "the cluster refused the
 * key ..." or "the cluster needs a key ..." for -EACCES, else strerror. Returns buf.
 */
const char *lode_auth_explain(int rc, const char *key_file, char *buf, size_t len);

#endif
