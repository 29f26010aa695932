/* SPDX-License-Identifier: MIT */
/* The commit log: see store_log.h for its format and why replaying it is sound. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "daemon.h"
#include "store_log.h"
#include "store_sync.h"

#define MAGIC 0x474f4c4cu /* "LLOG" */

struct rec_hdr {
	uint32_t magic;
	uint32_t len; /* payload bytes */
	uint64_t epoch;
	uint64_t seq;
	uint64_t txnid;
	uint64_t ino, dev; /* of the data file */
};
_Static_assert(sizeof(struct rec_hdr) == LODE_LOG_HDR, "log record header");

struct lode_store_log {
	int fd;
	uint64_t ino, dev;
	uint64_t epoch;
	uint64_t seq;	 /* of the next record */
	uint64_t off;	 /* where the next record goes */
	uint64_t synced; /* what the last good sync covered, from 0 */
};

static uint64_t new_epoch(void)
{
	uint64_t e = 0;

	while (!e && getrandom(&e, sizeof(e), GRND_NONBLOCK) != (ssize_t)sizeof(e)) {
		/* no entropy yet (early boot): the clock and this process, hashed */
		struct timespec ts[2];

		clock_gettime(CLOCK_REALTIME, &ts[0]);
		clock_gettime(CLOCK_MONOTONIC, &ts[1]);
		e = XXH3_64bits_withSeed(ts, sizeof(ts), (uint64_t)getpid());
	}
	return e;
}

/* Writes zeros over [from, to) of fd. Returns 0 or -errno. */
static int write_zeros(int fd, uint64_t from, uint64_t to)
{
	static const char zeros[1 << 16];
	int rc = 0;

	for (uint64_t off = from; off < to && !rc; off += sizeof(zeros)) {
		size_t n = to - off < sizeof(zeros) ? (size_t)(to - off) : sizeof(zeros);

		rc = lode_pwrite_all(fd, zeros, n, (off_t)off);
	}
	return rc;
}

/* Writes zeros from the file's end to LODE_LOG_SIZE, then syncs it and its directory. */
static int fill(int fd, const char *dir, uint64_t from)
{
	int rc = write_zeros(fd, from, LODE_LOG_SIZE);

	if (!rc && fsync(fd))
		rc = -errno;
	return rc ? rc : lode_store_sync_dir(dir);
}

int lode_store_log_open(const char *dir, int data_fd, struct lode_store_log **out)
{
	struct lode_store_log *l;
	struct stat sb, db;
	char path[4096];
	int rc = 0;

	if (fstat(data_fd, &db))
		return -errno;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/data.log", dir);
	l->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (l->fd < 0 || fstat(l->fd, &sb))
		rc = -errno;
	if (!rc && (uint64_t)sb.st_size < LODE_LOG_SIZE)
		rc = fill(l->fd, dir, (uint64_t)sb.st_size);
	if (rc) {
		if (l->fd >= 0)
			close(l->fd);
		free(l);
		return rc;
	}
	/* whatever size the file grew to, LODE_LOG_SIZE of it is read and written */
	l->ino = (uint64_t)db.st_ino;
	l->dev = (uint64_t)db.st_dev;
	l->epoch = new_epoch();
	*out = l;
	return 0;
}

void lode_store_log_close(struct lode_store_log *l)
{
	if (!l)
		return;
	close(l->fd);
	free(l);
}

int lode_store_log_replay(struct lode_store_log *l, lode_log_apply_fn apply, void *arg)
{
	uint8_t *buf = malloc(LODE_LOG_SIZE);
	uint64_t off = 0, epoch = 0, seq = 0;
	ssize_t got;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	got = pread(l->fd, buf, LODE_LOG_SIZE, 0);
	if (got < 0) {
		rc = -errno;
		free(buf);
		return rc;
	}
	while (off + LODE_LOG_HDR + LODE_LOG_TRAIL <= (uint64_t)got) {
		struct rec_hdr h;
		uint64_t sum, end;

		memcpy(&h, buf + off, sizeof(h));
		end = off + LODE_LOG_HDR + (uint64_t)h.len;
		if (h.magic != MAGIC || end + LODE_LOG_TRAIL > (uint64_t)got)
			break;
		memcpy(&sum, buf + end, sizeof(sum));
		if (sum != XXH3_64bits(buf + off, (size_t)(end - off)))
			break; /* torn */
		if (off == 0) {
			epoch = h.epoch;
			seq = h.seq;
		}
		/* the data file by its inode alone: a device's number may change when the
		 * machine restarts (NVMe drives enumerated in another order), and a restore
		 * replaces the file (a new inode) */
		if (h.epoch != epoch || h.seq != seq || h.ino != l->ino)
			break; /* from before the last rewind, or for another data file */
		rc = apply(arg, h.txnid, buf + off + LODE_LOG_HDR, h.len);
		if (rc)
			break;
		off = end + LODE_LOG_TRAIL;
		seq++;
	}
	free(buf);
	/* (the open's checkpoint rewinds before anything is appended) */
	if (off) {
		l->epoch = epoch;
		l->seq = seq;
	}
	l->off = l->synced = off;
	return rc;
}

bool lode_store_log_fits(const struct lode_store_log *l, size_t payload_len)
{
	return l->off + LODE_LOG_HDR + payload_len + LODE_LOG_TRAIL <= LODE_LOG_SIZE;
}

int lode_store_log_append(struct lode_store_log *l, uint64_t txnid, uint8_t *rec,
			  size_t payload_len)
{
	struct rec_hdr h = {.magic = MAGIC,
			    .len = (uint32_t)payload_len,
			    .epoch = l->epoch,
			    .seq = l->seq,
			    .txnid = txnid,
			    .ino = l->ino,
			    .dev = l->dev};
	size_t len = LODE_LOG_HDR + payload_len;
	uint64_t sum;
	int rc;

	if (payload_len > UINT32_MAX || !lode_store_log_fits(l, payload_len))
		return -ENOSPC;
	memcpy(rec, &h, sizeof(h));
	sum = XXH3_64bits(rec, len);
	memcpy(rec + len, &sum, sizeof(sum));
	rc = lode_pwrite_all(l->fd, rec, len + LODE_LOG_TRAIL, (off_t)l->off);
	if (rc)
		return rc;
	l->off += len + LODE_LOG_TRAIL;
	l->seq++;
	return 0;
}

int lode_store_log_sync(struct lode_store_log *l)
{
	uint64_t off = l->off;

	if (off == l->synced)
		return 0;
	if (fdatasync(l->fd))
		return -errno;
	l->synced = off;
	return 0;
}

void lode_store_log_rewind(struct lode_store_log *l)
{
	l->epoch = new_epoch();
	l->off = l->synced = 0;
}

int lode_store_log_poison(struct lode_store_log *l)
{
	return write_zeros(l->fd, l->synced, l->off);
}

size_t lode_store_log_used(const struct lode_store_log *l)
{
	return (size_t)l->off;
}
