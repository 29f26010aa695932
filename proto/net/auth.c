/* SPDX-License-Identifier: MIT */
/*
 * Key files and handshake proofs (auth.h says what and why). Every primitive is
 * libsodium's: keyed BLAKE2b (crypto_generichash) for derivation and proofs,
 * randombytes_buf for keys and nonces, sodium_memcmp to compare, sodium_memzero to forget.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "codec.h"
#include "cap.h"
#include "wire_spec.h"

_Static_assert(LODE_AUTH_CLIENT == LODE_ROLE_CLIENT && LODE_AUTH_TARGET == LODE_ROLE_OSS &&
		   LODE_AUTH_ADMIN == LODE_ROLE_ADMIN,
	       "auth roles are the wire's roles");

#define KEY_MAGIC "lode-key-v1"
/* "lode-key-v1 cluster " + 64 hex + "\n", with room to spare for a malformed line */
#define LINE_MAX_ 160

static const char *const role_names[LODE_AUTH_ROLES_] = {
    [LODE_AUTH_CLIENT] = "client",
    [LODE_AUTH_TARGET] = "target",
    [LODE_AUTH_ADMIN] = "admin",
};

static int sodium_ready(void)
{
	/* thread-safe and idempotent; returns -1 only when no entropy source works */
	return sodium_init() < 0 ? -EIO : 0;
}

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

const char *lode_auth_role_name(unsigned role)
{
	return role < LODE_AUTH_ROLES_ && role_names[role] ? role_names[role] : "?";
}

static void derive(const uint8_t cluster[LODE_KEY_BYTES], unsigned role,
		   uint8_t out[LODE_KEY_BYTES])
{
	char label[32];
	int n = snprintf(label, sizeof(label), "lode role %s", role_names[role]);

	crypto_generichash(out, LODE_KEY_BYTES, (const unsigned char *)label, (size_t)n, cluster,
			   LODE_KEY_BYTES);
}

static void derive_group(const uint8_t cluster[LODE_KEY_BYTES], const char *group,
			 uint8_t out[LODE_KEY_BYTES])
{
	char label[64];
	int n = snprintf(label, sizeof(label), "lode client group %s", group);

	crypto_generichash(out, LODE_KEY_BYTES, (const unsigned char *)label, (size_t)n, cluster,
			   LODE_KEY_BYTES);
}

static unsigned role_by_name(const char *s)
{
	for (unsigned r = 1; r < LODE_AUTH_ROLES_; r++)
		if (!strcmp(s, role_names[r]))
			return r;
	return 0;
}

int lode_keyring_load(const char *path, struct lode_keyring *out, char *err, size_t errlen)
{
	char line[LINE_MAX_ + 1], kind[48], hex[LINE_MAX_];
	uint8_t key[LODE_KEY_BYTES];
	struct lode_keyring kr = {0};
	struct stat st;
	size_t bin_len = 0;
	ssize_t n;
	int fd, rc;

	rc = sodium_ready();
	if (rc)
		return fail(err, errlen, rc, "libsodium cannot start (no entropy source)");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return fail(err, errlen, -errno, "key file %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(err, errlen, -EINVAL, "key file %s: not a regular file", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return fail(err, errlen, -EPERM,
			    "key file %s: mode %04o lets group or others read it; chmod 600 it",
			    path, (unsigned)(st.st_mode & 07777));
	}
	n = read(fd, line, LINE_MAX_);
	close(fd);
	if (n < 0)
		return fail(err, errlen, -errno, "key file %s: %s", path, strerror(errno));
	line[n] = 0;
	if (n == LINE_MAX_ || strlen(line) != (size_t)n ||
	    sscanf(line, KEY_MAGIC " %47s %159s", kind, hex) != 2 || strlen(hex) != 64 ||
	    sodium_hex2bin(key, sizeof(key), hex, 64, NULL, &bin_len, NULL) || bin_len != 32) {
		sodium_memzero(line, sizeof(line));
		sodium_memzero(hex, sizeof(hex));
		return fail(err, errlen, -EINVAL,
			    "key file %s: not a Lode key (want one line '" KEY_MAGIC
			    " cluster|client|client:GROUP|target|admin <64 hex digits>')",
			    path);
	}
	{
		/* exactly "MAGIC KIND HEX" and an optional newline: nothing else in the file */
		size_t want = strlen(KEY_MAGIC) + 1 + strlen(kind) + 1 + 64;

		if (((size_t)n != want && ((size_t)n != want + 1 || line[want] != '\n')) ||
		    line[strlen(KEY_MAGIC)] != ' ') {
			sodium_memzero(line, sizeof(line));
			sodium_memzero(key, sizeof(key));
			return fail(err, errlen, -EINVAL,
				    "key file %s: not a Lode key (extra characters on its line)",
				    path);
		}
	}
	sodium_memzero(line, sizeof(line));
	sodium_memzero(hex, sizeof(hex));
	if (!strcmp(kind, "cluster")) {
		kr.cluster = true;
		memcpy(kr.cluster_key, key, LODE_KEY_BYTES);
		lode_cap_key_derive(key, kr.cap_key);
		for (unsigned r = 1; r < LODE_AUTH_ROLES_; r++) {
			derive(key, r, kr.key[r]);
			kr.held |= LODE_ROLE_BIT(r);
		}
	} else if (!strncmp(kind, "client:", 7)) {
		if (!lode_group_name_ok(kind + 7)) {
			sodium_memzero(key, sizeof(key));
			return fail(err, errlen, -EINVAL,
				    "key file %s: '%s' is not a client group (1 to 31 of a-z, 0-9, "
				    "'_' and '-')",
				    path, kind + 7);
		}
		memcpy(kr.key[LODE_AUTH_CLIENT], key, LODE_KEY_BYTES);
		kr.held = LODE_ROLE_BIT(LODE_AUTH_CLIENT);
		memcpy(kr.group, kind + 7, strlen(kind + 7) + 1); /* checked: at most 31 */
	} else {
		unsigned r = role_by_name(kind);

		if (!r) {
			sodium_memzero(key, sizeof(key));
			return fail(err, errlen, -EINVAL,
				    "key file %s: unknown key kind '%s' (cluster, client, "
				    "client:GROUP, target or admin)",
				    path, kind);
		}
		memcpy(kr.key[r], key, LODE_KEY_BYTES);
		kr.held = LODE_ROLE_BIT(r);
	}
	sodium_memzero(key, sizeof(key));
	*out = kr;
	sodium_memzero(&kr, sizeof(kr));
	return 0;
}

static int write_key(const char *path, const char *kind, const uint8_t key[LODE_KEY_BYTES],
		     char *err, size_t errlen)
{
	char hex[2 * LODE_KEY_BYTES + 1], line[LINE_MAX_];
	int fd, n, rc = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(err, errlen, -errno, "%s: %s%s", path, strerror(errno),
			    errno == EEXIST ? " (a key file is never overwritten)" : "");
	sodium_bin2hex(hex, sizeof(hex), key, LODE_KEY_BYTES);
	n = snprintf(line, sizeof(line), KEY_MAGIC " %s %s\n", kind, hex);
	/* the mode given to open is filtered by umask: set it exactly */
	if (fchmod(fd, 0600) || write(fd, line, (size_t)n) != n || fsync(fd))
		rc = -errno ? -errno : -EIO;
	sodium_memzero(hex, sizeof(hex));
	sodium_memzero(line, sizeof(line));
	if (close(fd) && !rc)
		rc = -errno;
	if (rc) {
		unlink(path);
		return fail(err, errlen, rc, "%s: %s", path, strerror(-rc));
	}
	return 0;
}

int lode_key_generate(const char *path, char *err, size_t errlen)
{
	uint8_t key[LODE_KEY_BYTES];
	int rc = sodium_ready();

	if (rc)
		return fail(err, errlen, rc, "libsodium cannot start (no entropy source)");
	randombytes_buf(key, sizeof(key));
	rc = write_key(path, "cluster", key, err, errlen);
	sodium_memzero(key, sizeof(key));
	return rc;
}

int lode_key_write_role(const struct lode_keyring *kr, unsigned role, const char *path, char *err,
			size_t errlen)
{
	const uint8_t *k = lode_keyring_key(kr, role);

	if (!k)
		return fail(err, errlen, -ENOKEY, "the key given does not hold the %s key",
			    lode_auth_role_name(role));
	return write_key(path, role_names[role], k, err, errlen);
}

int lode_keyring_group_key(const struct lode_keyring *kr, const char *group,
			   uint8_t out[LODE_KEY_BYTES])
{
	uint8_t cluster[LODE_KEY_BYTES];

	if (!lode_group_name_ok(group))
		return -EINVAL;
	if (kr && kr->group[0] && !strcmp(kr->group, group)) {
		memcpy(out, kr->key[LODE_AUTH_CLIENT], LODE_KEY_BYTES);
		return 0;
	}
	if (!kr || !kr->cluster)
		return -ENOKEY;
	memcpy(cluster, kr->cluster_key, LODE_KEY_BYTES);
	derive_group(cluster, group, out);
	sodium_memzero(cluster, sizeof(cluster));
	return 0;
}

int lode_key_write_group(const struct lode_keyring *kr, const char *group, const char *path,
			 char *err, size_t errlen)
{
	uint8_t k[LODE_KEY_BYTES];
	char kind[8 + LODE_GROUP_NAME_MAX];
	int rc = lode_keyring_group_key(kr, group, k);

	if (rc == -EINVAL)
		return fail(err, errlen, rc,
			    "'%s' is not a client group name (1 to 31 of a-z, 0-9, '_' and '-')",
			    group);
	if (rc)
		return fail(err, errlen, rc, "a group's key derives from the cluster key only");
	snprintf(kind, sizeof(kind), "client:%s", group);
	rc = write_key(path, kind, k, err, errlen);
	sodium_memzero(k, sizeof(k));
	return rc;
}

const uint8_t *lode_keyring_key(const struct lode_keyring *kr, unsigned role)
{
	if (!kr || role == 0 || role >= LODE_AUTH_ROLES_ || !(kr->held & LODE_ROLE_BIT(role)))
		return NULL;
	return kr->key[role];
}

unsigned lode_keyring_best_role(const struct lode_keyring *kr)
{
	if (lode_keyring_key(kr, LODE_AUTH_ADMIN))
		return LODE_AUTH_ADMIN;
	if (lode_keyring_key(kr, LODE_AUTH_CLIENT))
		return LODE_AUTH_CLIENT;
	if (lode_keyring_key(kr, LODE_AUTH_TARGET))
		return LODE_AUTH_TARGET;
	return 0;
}

void lode_auth_nonce(uint8_t *buf, size_t n)
{
	if (sodium_ready())
		abort(); /* no entropy: nothing safe to hand out */
	randombytes_buf(buf, n);
}

void lode_auth_proof(const uint8_t key[LODE_KEY_BYTES], bool server, unsigned role,
		     const uint8_t cnonce[LODE_NONCE_BYTES], const uint8_t snonce[LODE_NONCE_BYTES],
		     uint8_t out[LODE_PROOF_BYTES])
{
	static const char label_s[] = "lode server", label_c[] = "lode client";
	crypto_generichash_state st;
	uint8_t r[4] = {(uint8_t)role, (uint8_t)(role >> 8), (uint8_t)(role >> 16),
			(uint8_t)(role >> 24)};

	crypto_generichash_init(&st, key, LODE_KEY_BYTES, LODE_PROOF_BYTES);
	/* the labels have the same length, so the fields after them cannot shift */
	crypto_generichash_update(&st, (const unsigned char *)(server ? label_s : label_c),
				  sizeof(label_s) - 1);
	crypto_generichash_update(&st, r, sizeof(r));
	crypto_generichash_update(&st, server ? cnonce : snonce, LODE_NONCE_BYTES);
	crypto_generichash_update(&st, server ? snonce : cnonce, LODE_NONCE_BYTES);
	crypto_generichash_final(&st, out, LODE_PROOF_BYTES);
	sodium_memzero(&st, sizeof(st));
}

bool lode_auth_verify(const uint8_t key[LODE_KEY_BYTES], bool server, unsigned role,
		      const uint8_t cnonce[LODE_NONCE_BYTES],
		      const uint8_t snonce[LODE_NONCE_BYTES], const uint8_t proof[LODE_PROOF_BYTES])
{
	uint8_t want[LODE_PROOF_BYTES];
	bool ok;

	lode_auth_proof(key, server, role, cnonce, snonce, want);
	ok = sodium_memcmp(want, proof, LODE_PROOF_BYTES) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}

int lode_auth_check_server(uint32_t body_len, const struct lode_wire_auth_rep *rep,
			   const uint8_t *key, unsigned role,
			   const uint8_t cnonce[LODE_NONCE_BYTES], bool *step2,
			   uint8_t proof[LODE_PROOF_BYTES])
{
	*step2 = false;
	if (body_len != sizeof(*rep) || rep->reserved || (rep->flags & ~LODE_AUTH_F_INSECURE))
		return -EPROTO;
	if (rep->flags & LODE_AUTH_F_INSECURE)
		return key ? -EACCES : 0;
	if (!key || !lode_auth_verify(key, true, role, cnonce, rep->nonce, rep->proof))
		return -EACCES;
	lode_auth_proof(key, false, role, cnonce, rep->nonce, proof);
	*step2 = true;
	return 0;
}

const char *lode_auth_explain(int rc, const char *key_file, char *buf, size_t len)
{
	struct lode_keyring kr;

	if (!key_file)
		key_file = getenv("LODE_KEY_FILE");
	if (key_file && !*key_file)
		key_file = NULL;
	if (key_file && lode_keyring_load(key_file, &kr, buf, len))
		return buf;
	sodium_memzero(&kr, sizeof(kr));
	if (rc == -EACCES && key_file)
		snprintf(buf, len,
			 "the cluster refused the key in %s (a wrong key, or a cluster run "
			 "--insecure, which cannot prove it)",
			 key_file);
	else if (rc == -EACCES)
		snprintf(buf, len,
			 "the cluster needs a key and none was given (--key FILE, or "
			 "LODE_KEY_FILE=FILE; a local cluster's is DIR/cluster.key)");
	else
		snprintf(buf, len, "%s", strerror(-rc));
	return buf;
}
