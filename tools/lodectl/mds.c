/* SPDX-License-Identifier: MIT */
/*
 * lodectl mds backup FILE: an online copy of the MDS's namespace over the admin's
 * connection (BACKUP_START, then BACKUP_READ pages; mds/backup.c makes the copy). FILE is
 * written under a temporary name, checked against the MDS's BLAKE2b-256 of the copy,
 * made durable and renamed into place: a failed backup leaves FILE as it was. The
 * restore is offline: `lode-mds --data DIR --restore FILE` (docs/lodectl.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "lodectl.h"
#include "rpc.h"
#include "wire_spec.h"

#define POLL_MS 50
/* the first meta page of an LMDB data file: a 16-byte page header, then its magic */
#define LMDB_MAGIC	  0xBEEFC0DEu
#define LMDB_MAGIC_OFFSET 16

static int admin_conn(struct lodectl *ctl, struct lode_rpc **rpc, struct lode_rpc_conn **conn)
{
	const char *path = ctl->key_file ? ctl->key_file : getenv("LODE_KEY_FILE");
	struct lode_keyring kr;
	char why[256];
	int rc;

	rc = lode_rpc_create(rpc, ctl->timeout_ms ? ctl->timeout_ms : 30000);
	if (rc)
		return lodectl_fail(ctl, rc, "cannot start the rpc client"), rc;
	if (!path || !*path) {
		rc = lode_rpc_set_auth(*rpc, NULL, LODE_ROLE_ADMIN);
	} else {
		rc = lode_keyring_load(path, &kr, why, sizeof(why));
		if (rc)
			return lodectl_fail_as(ctl, rc, "%s", why), rc;
		rc = lode_rpc_set_auth(*rpc, &kr, lode_keyring_best_role(&kr));
		sodium_memzero(&kr, sizeof(kr));
	}
	if (!rc)
		rc = lode_rpc_conn_open(*rpc, ctl->mds_addr, conn);
	if (rc)
		return lodectl_fail(ctl, rc, "cannot reach the MDS at %s", ctl->mds_addr), rc;
	return 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Receives copy `id` into fd; sets its size and checks its sum. Returns 0 or -errno, the
 * failure reported. */
static int receive(struct lodectl *ctl, struct lode_rpc_conn *conn, uint64_t id, int fd, void *buf,
		   uint64_t *size, uint8_t hash[32])
{
	struct lode_wire_backup_read_rep rep, first = {0};
	crypto_generichash_state h;
	uint64_t off = 0;
	uint8_t got[32];
	int rc;

	crypto_generichash_init(&h, NULL, 0, 32);
	for (;;) {
		struct lode_wire_backup_read_req q = {
		    .backup_id = id, .offset = off, .max = LODE_BACKUP_PAGE_MAX};
		struct lode_call c = {.opcode = LODE_OP_BACKUP_READ,
				      .body = &q,
				      .body_len = sizeof(q),
				      .reply_body = &rep,
				      .reply_body_max = sizeof(rep),
				      .reply_data = buf,
				      .reply_data_max = LODE_BACKUP_PAGE_MAX};

		rc = lode_rpc_call(conn, &c);
		if (rc == -ESTALE)
			return lodectl_fail_as(ctl, rc,
					       "the MDS no longer holds this backup (restarted, or "
					       "another backup began): run it again"),
			       rc;
		if (rc)
			return lodectl_fail(ctl, rc, "the MDS could not make the backup"), rc;
		if (c.reply_body_len != sizeof(rep))
			return lodectl_fail(ctl, -EPROTO, "a malformed BACKUP_READ reply"), -EPROTO;
		if (!rep.ready) {
			sleep_ms(POLL_MS);
			continue;
		}
		if (!off)
			first = rep;
		/* every page describes the same copy and moves on, up to its end */
		if (rep.size != first.size || memcmp(rep.hash, first.hash, 32) ||
		    (off < rep.size && !c.reply_data_len) || c.reply_data_len > rep.size - off)
			return lodectl_fail(ctl, -EPROTO, "inconsistent BACKUP_READ pages"),
			       -EPROTO;
		if (!off && (c.reply_data_len < LMDB_MAGIC_OFFSET + 4 ||
			     *(uint32_t *)((char *)buf + LMDB_MAGIC_OFFSET) != LMDB_MAGIC))
			return lodectl_fail_as(ctl, -EPROTO,
					       "the copy the MDS sent is not an LMDB file"),
			       -EPROTO;
		rc = write_all(fd, buf, c.reply_data_len);
		if (rc)
			return lodectl_fail(ctl, rc, "cannot write the backup"), rc;
		crypto_generichash_update(&h, buf, c.reply_data_len);
		off += c.reply_data_len;
		if (off == rep.size)
			break;
	}
	crypto_generichash_final(&h, got, sizeof(got));
	if (memcmp(got, first.hash, sizeof(got)))
		return lodectl_fail_as(ctl, -EIO,
				       "the copy received does not match the MDS's checksum"),
		       -EIO;
	*size = off;
	memcpy(hash, got, sizeof(got));
	return 0;
}

int cmd_mds_backup(struct lodectl *ctl, int argc, char **argv)
{
	struct lode_wire_backup_start_req sq = {0};
	struct lode_wire_backup_start_rep sr = {0};
	struct lode_rpc *rpc = NULL;
	struct lode_rpc_conn *conn = NULL;
	char *pos[1], tmp[PATH_MAX], dirbuf[PATH_MAX], hex[65];
	uint8_t hash[32];
	uint64_t size = 0;
	double t0 = lodectl_now();
	void *buf = NULL;
	int fd = -1, dfd, rc;

	if (lodectl_parse(ctl, argc, argv, NULL, 1, 1, pos) < 0)
		return ctl->exit;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.lodectl-backup.%d", pos[0], (int)getpid()) >=
	    sizeof(tmp))
		return lodectl_usage_error(ctl, "%s: the path is too long", pos[0]);
	rc = admin_conn(ctl, &rpc, &conn);
	if (rc)
		goto out;
	rc = lode_rpc_simple(conn, LODE_OP_BACKUP_START, &sq, sizeof(sq), &sr, sizeof(sr));
	if (rc) {
		if (rc == -EBUSY)
			lodectl_fail_as(ctl, rc, "the MDS is making another backup: try again");
		else if (rc == -EACCES || rc == -EPERM)
			lodectl_fail_as(ctl, rc, "the MDS refused: a backup needs the admin key");
		else
			lodectl_fail(ctl, rc, "the MDS could not begin a backup");
		goto out;
	}
	buf = malloc(LODE_BACKUP_PAGE_MAX);
	if (!buf) {
		rc = -ENOMEM;
		lodectl_fail(ctl, rc, "out of memory");
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		lodectl_fail(ctl, rc, "cannot create %s", tmp);
		goto out;
	}
	rc = receive(ctl, conn, sr.backup_id, fd, buf, &size, hash);
	if (!rc && fsync(fd)) {
		rc = -errno;
		lodectl_fail(ctl, rc, "cannot write %s", tmp);
	}
	if (close(fd) && !rc) {
		rc = -errno;
		lodectl_fail(ctl, rc, "cannot write %s", tmp);
	}
	fd = -1;
	if (!rc && rename(tmp, pos[0])) {
		rc = -errno;
		lodectl_fail(ctl, rc, "cannot rename %s to %s", tmp, pos[0]);
	}
	if (rc) {
		unlink(tmp);
		goto out;
	}
	snprintf(dirbuf, sizeof(dirbuf), "%s", pos[0]);
	dfd = open(dirname(dirbuf), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd); /* the rename is durable too */
		close(dfd);
	}
	sodium_bin2hex(hex, sizeof(hex), hash, sizeof(hash));
	json_add_str(ctl->out, "file", pos[0]);
	json_add_u64(ctl->out, "bytes", size);
	json_add_str(ctl->out, "blake2b", hex);
	json_add_double(ctl->out, "seconds", lodectl_now() - t0);
	if (!ctl->json && !ctl->quiet)
		printf("%s: %" PRIu64 " bytes, blake2b-256 %s\n", pos[0], size, hex);
out:
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	free(buf);
	lode_rpc_destroy(rpc);
	return rc ? LODECTL_EXIT_FAIL : 0;
}
