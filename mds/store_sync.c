/* SPDX-License-Identifier: MIT */
/*
 * The sync record: see store_sync.h for why. A slot is
 *   magic u64, version u32, psize u32, seq u64, txnid u64, dev u64, ino u64,
 *   boot[40] (the boot id), then the two meta pages (2 x psize), then xxh3-64 of all before.
 * Slot i lives at i * SLOT; the one with the higher seq and a good checksum counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "daemon.h"
#include "store_sync.h"

#define MAGIC	     0x434e5953454c4f4cull /* "LOLESYNC" */
#define VERSION	     1u
#define PSIZE_MAX    32768u
#define SLOT	     (2 * PSIZE_MAX + 4096)
#define META_TXNID   144u /* where an LMDB meta page keeps its transaction id */
#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"
#define SYNC_FAILED  "sync-failed" /* a slot's boot after a failed sync: no boot's id */

struct slot_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t psize;
	uint64_t seq;
	uint64_t txnid;
	uint64_t dev;
	uint64_t ino;
	char boot[40];
};
_Static_assert(sizeof(struct slot_hdr) == 88, "sync slot header");

struct lode_sync_record {
	int fd;
	int data_fd;
	unsigned psize;
	uint64_t seq; /* of the last slot written */
	uint64_t dev, ino;
	char boot[40];
	uint8_t *buf; /* one slot */
};

/* This boot's id; LODE_MDS_BOOT_ID stands in for it (tests simulate a restart). */
static void boot_id(char out[40])
{
	const char *env = getenv("LODE_MDS_BOOT_ID");
	int fd;
	ssize_t n = 0;

	memset(out, 0, 40);
	if (env && *env) {
		strncpy(out, env, 39);
		return;
	}
	fd = open(BOOT_ID_PATH, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, out, 39);
		close(fd);
	}
	if (n > 0 && out[n - 1] == '\n')
		out[n - 1] = 0;
}

static size_t slot_len(unsigned psize)
{
	return sizeof(struct slot_hdr) + 2 * (size_t)psize + 8;
}

static int pread_all(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		done += (size_t)n;
	}
	return 0;
}

/* Reads slot i into buf (SLOT bytes); 0 when it is whole, else -EBADMSG or -errno. */
static int slot_read(int fd, unsigned i, uint8_t *buf)
{
	struct slot_hdr h;
	uint64_t sum;
	int rc = pread_all(fd, buf, sizeof(h), (off_t)i * SLOT);

	if (rc)
		return rc == -ENODATA ? -EBADMSG : rc;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != MAGIC || h.version != VERSION || h.psize < 512 || h.psize > PSIZE_MAX ||
	    (h.psize & (h.psize - 1)))
		return -EBADMSG;
	rc = pread_all(fd, buf, slot_len(h.psize), (off_t)i * SLOT);
	if (rc)
		return rc == -ENODATA ? -EBADMSG : rc;
	memcpy(&sum, buf + slot_len(h.psize) - 8, 8);
	return sum == XXH3_64bits(buf, slot_len(h.psize) - 8) ? 0 : -EBADMSG;
}

/* Leaves the newest whole slot of the record fd in buf (SLOT bytes) and its header in *h.
 * Returns the slot's index, or -ENOENT when neither slot is whole, or -errno when one could
 * not be read (a slot not read could be the newest). */
static int newest_slot(int fd, uint8_t *buf, struct slot_hdr *h)
{
	int best = -ENOENT, rc;
	uint64_t seq = 0;

	for (unsigned i = 0; i < 2; i++) {
		rc = slot_read(fd, i, buf);
		if (rc == -EBADMSG)
			continue;
		if (rc)
			return rc;
		memcpy(h, buf, sizeof(*h));
		if (best < 0 || h->seq > seq) {
			best = (int)i;
			seq = h->seq;
		}
	}
	if (best == 0) { /* reading slot 1 wrote over it */
		rc = slot_read(fd, 0, buf);
		if (rc)
			return rc;
	}
	if (best >= 0)
		memcpy(h, buf, sizeof(*h));
	return best;
}

int lode_sync_record_open(const char *dir, int data_fd, unsigned psize,
			  struct lode_sync_record **out)
{
	struct lode_sync_record *r;
	char path[4096];
	struct stat sb;

	if (psize < 512 || psize > PSIZE_MAX || fstat(data_fd, &sb))
		return psize > PSIZE_MAX ? -EINVAL : -errno;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->buf = calloc(1, SLOT);
	if (!r->buf) {
		free(r);
		return -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/data.sync", dir);
	r->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (r->fd < 0) {
		int rc = -errno;

		free(r->buf);
		free(r);
		return rc;
	}
	{
		struct slot_hdr h;
		int rc = newest_slot(r->fd, r->buf, &h);

		if (rc < 0 && rc != -ENOENT) {
			/* the next slot written must outnumber the newest: unknown */
			lode_sync_record_close(r);
			return rc;
		}
		if (rc >= 0)
			r->seq = h.seq;
	}
	r->data_fd = data_fd;
	r->psize = psize;
	r->dev = (uint64_t)sb.st_dev;
	r->ino = (uint64_t)sb.st_ino;
	boot_id(r->boot);
	*out = r;
	return 0;
}

int lode_sync_record_write(struct lode_sync_record *r, uint64_t txnid)
{
	struct slot_hdr h = {.magic = MAGIC,
			     .version = VERSION,
			     .psize = r->psize,
			     .seq = r->seq + 1,
			     .txnid = txnid,
			     .dev = r->dev,
			     .ino = r->ino};
	size_t len = slot_len(r->psize);
	uint64_t sum;
	int rc;

	memcpy(h.boot, r->boot, sizeof(h.boot));
	memcpy(r->buf, &h, sizeof(h));
	rc = pread_all(r->data_fd, r->buf + sizeof(h), 2 * (size_t)r->psize, 0);
	if (rc)
		return rc == -ENODATA ? -EIO : rc;
	sum = XXH3_64bits(r->buf, len - 8);
	memcpy(r->buf + len - 8, &sum, 8);
	rc = lode_pwrite_all(r->fd, r->buf, len, (off_t)(h.seq % 2) * SLOT);
	if (!rc && fdatasync(r->fd))
		rc = -errno;
	if (!rc)
		r->seq = h.seq;
	return rc;
}

int lode_sync_record_poison(struct lode_sync_record *r)
{
	struct slot_hdr h;
	int best = newest_slot(r->fd, r->buf, &h);
	uint64_t sum;
	size_t len;

	if (best == -ENOENT)
		return 0; /* none whole: the next open rolls nothing back, and has nothing to */
	if (best < 0)
		return best;
	/* into the other slot, as the next one: the slot it copies stays whole whatever
	 * happens to this write */
	memset(h.boot, 0, sizeof(h.boot));
	memcpy(h.boot, SYNC_FAILED, sizeof(SYNC_FAILED));
	h.seq++;
	memcpy(r->buf, &h, sizeof(h));
	len = slot_len(h.psize);
	sum = XXH3_64bits(r->buf, len - 8);
	memcpy(r->buf + len - 8, &sum, 8);
	return lode_pwrite_all(r->fd, r->buf, len, (off_t)(h.seq % 2) * SLOT);
}

void lode_sync_record_close(struct lode_sync_record *r)
{
	if (!r)
		return;
	close(r->fd);
	free(r->buf);
	free(r);
}

int lode_store_copy_file(const char *from, const char *to)
{
	char buf[1 << 16];
	int in, out, rc = 0;
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			rc = errno ? -errno : -EIO;
			break;
		}
	if (n < 0)
		rc = -errno;
	if (!rc && fsync(out))
		rc = -errno;
	close(in);
	if (close(out) && !rc)
		rc = -errno;
	return rc;
}

int lode_store_sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		rc = -errno;
	close(fd);
	return rc;
}

/* Copies the data file's two meta pages, the newest naming transaction newest, to
 * DIR/NAME, synced: NAME is data.mdb.metas-before-rollback.NEWEST, so that a later
 * rollback (another power cut before anyone looked) keeps this one's pages too. */
static int keep_metas(const char *dir, int dfd, unsigned psize, uint64_t newest, char *name,
		      size_t name_len)
{
	char path[4096];
	uint8_t *buf = malloc(2 * (size_t)psize);
	int fd, rc;

	if (!buf)
		return -ENOMEM;
	snprintf(name, name_len, "data.mdb.metas-before-rollback.%llu", (unsigned long long)newest);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	rc = pread_all(dfd, buf, 2 * (size_t)psize, 0);
	fd = rc ? -1 : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (!rc && fd < 0)
		rc = -errno;
	if (!rc)
		rc = lode_pwrite_all(fd, buf, 2 * (size_t)psize, 0);
	if (!rc && fsync(fd))
		rc = -errno;
	if (fd >= 0)
		close(fd);
	free(buf);
	/* and its name, before the pages it saves are overwritten */
	return rc ? rc : lode_store_sync_dir(dir);
}

int lode_sync_record_recover(const char *dir, char *note, size_t note_len, char *why,
			     size_t why_len)
{
	char path[4096], boot[40];
	uint8_t *buf = malloc(SLOT), cur[2][META_TXNID + 8];
	int rc = 0, fd = -1, dfd = -1;
	struct slot_hdr h;
	struct stat sb;

	if (note_len)
		note[0] = 0;
	if (!buf) {
		rc = -ENOMEM;
		snprintf(why, why_len, "out of memory");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/data.sync", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto out; /* none yet: an older lode-mds synced every commit */
	rc = newest_slot(fd, buf, &h);
	if (rc == -ENOENT) {
		rc = 0;
		goto out; /* never written whole: no commit ever went unsynced after it */
	}
	if (rc < 0) {
		snprintf(why, why_len, "cannot read %s: %s", path, strerror(-rc));
		goto out;
	}
	rc = 0;
	boot_id(boot);
	if (!memcmp(boot, h.boot, sizeof(boot)))
		goto out; /* the same boot: the page cache kept every commit */
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	dfd = open(path, O_RDWR | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &sb)) {
		rc = -errno;
		snprintf(why, why_len, "cannot open %s: %s", path, strerror(-rc));
		goto out;
	}
	/* Another data file (restored, or copied here) is not ours to touch. By its inode
	 * alone: the device's number may differ after a restart (NVMe drives enumerated in
	 * another order, device-mapper minors), which is exactly when the record matters. */
	if ((uint64_t)sb.st_ino != h.ino)
		goto out;
	rc = pread_all(dfd, cur[0], sizeof(cur[0]), 0);
	if (!rc)
		rc = pread_all(dfd, cur[1], sizeof(cur[1]), h.psize);
	if (rc) {
		snprintf(why, why_len, "cannot read %s's meta pages: %s", path, strerror(-rc));
		goto out;
	}
	{
		uint64_t t0, t1, newest;
		const uint8_t *metas = buf + sizeof(struct slot_hdr);
		char kept[64];

		memcpy(&t0, cur[0] + META_TXNID, 8);
		memcpy(&t1, cur[1] + META_TXNID, 8);
		newest = t0 > t1 ? t0 : t1;
		if (newest <= h.txnid)
			goto out; /* synced up to its last commit: nothing to undo */
		/* keep the meta pages that go, so that the rollback can be undone by hand */
		rc = keep_metas(dir, dfd, h.psize, newest, kept, sizeof(kept));
		if (rc) {
			snprintf(why, why_len, "cannot save %s's meta pages before a rollback: %s",
				 path, strerror(-rc));
			goto out;
		}
		rc = lode_pwrite_all(dfd, metas, 2 * (size_t)h.psize, 0);
		if (!rc && fdatasync(dfd))
			rc = -errno;
		if (rc) {
			snprintf(why, why_len, "cannot write %s's meta pages back: %s", path,
				 strerror(-rc));
			goto out;
		}
		snprintf(note, note_len,
			 "%s before transactions %llu..%llu were synced (changes of lazy "
			 "clients, and of requests answered with the sync's error): the store is "
			 "back at transaction %llu, its last durable one (the meta pages it "
			 "replaced are in %s)",
			 strcmp(h.boot, SYNC_FAILED) ? "the machine restarted"
						     : "a sync of the store failed",
			 (unsigned long long)h.txnid + 1, (unsigned long long)newest,
			 (unsigned long long)h.txnid, kept);
	}
out:
	if (dfd >= 0)
		close(dfd);
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}
