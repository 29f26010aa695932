/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the MDS's replay of its commit log at open (mds/store_log.c, and replay_entries
 * and the open's checks in mds/store.c): what a damaged disk, or a log written by a buggy
 * MDS, holds. The harness frames and seals each record (magic, epoch, sequence, the data
 * file's inode, checksum) so that the payloads reach the replay instead of stopping at
 * the checksum; the framing is damaged on purpose through each record's flags.
 *
 * Once per process: a template store (fresh, one commit more, closed cleanly) in a
 * directory under /dev/shm where there is one (an open syncs; tmpfs makes that free), else
 * /tmp. Per input: a copy of the template, a data.log built from the input, then
 * lode_store_open. Checked: nothing crashes or reads out of bounds; an open that fails
 * says why; a store that opens takes a commit, and opens again after it is closed or says
 * why not.
 *
 * Input: records [flags u8][len u16 LE][payload: len bytes]...; a record's txnid is the
 * store's last + 1 + its index (the next commits, which the open replays), plus the signed
 * byte after the flags when flag 1 is set. Flags: 1 txnid moved, 2 sequence number off by
 * one, 4 checksum broken, 8 another data file's inode, 16 magic broken.
 * A payload is entries [op u8][db u8][2 bytes][key_len u32 LE][value_len u32 LE][key][value]
 * (op 1 put, 2 delete, 3 delete every key with that prefix), as mds/store.c writes them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "fixture.h"
#include "fuzz.h"
#include "store.h"
#include "store_log.h"
#include "store_sync.h"

#define LOG_MAGIC 0x474f4c4cu /* "LLOG", mds/store_log.c */

static char tmpl[96], work[128];
static uint64_t tmpl_last;
static uint8_t log_buf[LODE_LOG_SIZE];

static void cleanup(void)
{
	if (work[0])
		fixture_tmpdir_remove(work);
	if (tmpl[0])
		fixture_tmpdir_remove(tmpl);
}

static int make_dir(char *dir, size_t size, const char *prefix)
{
	struct stat sb;

	if (!stat("/dev/shm", &sb) && S_ISDIR(sb.st_mode)) {
		snprintf(dir, size, "/dev/shm/%s-XXXXXX", prefix);
		if (mkdtemp(dir))
			return 0;
	}
	return fixture_tmpdir_make(dir, size, prefix);
}

static int open_store(const char *dir, struct lode_store **st, char *why, size_t why_len)
{
	struct lode_store_opts o = {.dir = dir, .map_size = 64ull << 20};

	why[0] = 0;
	return lode_store_open(&o, st, why, why_len);
}

/* One change, committed: the store takes commits. */
static int commit_one(struct lode_store *st)
{
	static const char key[] = "fuzz-mds-log";
	struct lode_txn t;
	int rc = lode_store_write_begin(st, NULL, &t);

	if (rc)
		return rc;
	rc = lode_kv_put(&t, LODE_DB_XATTRS, key, sizeof(key), "v", 1, 0);
	if (rc) {
		lode_store_abort(&t);
		return rc;
	}
	return lode_store_commit(&t);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct lode_store *st;
	char why[256];

	(void)argc, (void)argv;
	if (make_dir(tmpl, sizeof(tmpl), "lode-fuzz-log")) {
		fprintf(stderr, "fuzz_mds_log: cannot make a directory\n");
		exit(1);
	}
	atexit(cleanup);
	if (open_store(tmpl, &st, why, sizeof(why)) || commit_one(st)) {
		fprintf(stderr, "fuzz_mds_log: cannot make the template store: %s\n", why);
		exit(1);
	}
	tmpl_last = lode_store_last_txnid(st);
	lode_store_close(st);
	return 0;
}

/* The template's files, but its log and LMDB's lock file, into a new work directory. */
static int copy_template(void)
{
	char from[512], to[512];
	struct dirent *e;
	DIR *d;
	int rc = 0;

	if (make_dir(work, sizeof(work), "lode-fuzz-log-run"))
		return -EIO;
	d = opendir(tmpl);
	if (!d)
		return -errno;
	while (!rc && (e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "data.log") ||
		    !strcmp(e->d_name, "lock.mdb"))
			continue;
		snprintf(from, sizeof(from), "%s/%s", tmpl, e->d_name);
		snprintf(to, sizeof(to), "%s/%s", work, e->d_name);
		rc = lode_store_copy_file(from, to);
	}
	closedir(d);
	return rc;
}

/* Builds data.log from the input into log_buf: returns the bytes used. */
static size_t build_log(struct fuzz_in *in, uint64_t ino)
{
	size_t off = 0;

	for (uint64_t k = 0; in->left; k++) {
		unsigned flags = (unsigned)fuzz_take(in, 1);
		int8_t delta = (flags & 1) ? (int8_t)fuzz_take(in, 1) : 0;
		uint32_t len = (uint32_t)fuzz_take(in, 2);
		uint64_t h[6];
		uint32_t hdr32[2] = {(flags & 16) ? LOG_MAGIC ^ 1 : LOG_MAGIC, len};
		uint64_t sum;

		if (len > in->left)
			len = (uint32_t)in->left;
		hdr32[1] = len;
		if (off + LODE_LOG_HDR + len + LODE_LOG_TRAIL > sizeof(log_buf))
			break;
		h[0] = 0x6c6f64656c6f6721ull;			     /* epoch */
		h[1] = k + ((flags & 2) ? 1 : 0);		     /* seq */
		h[2] = tmpl_last + 1 + k + (uint64_t)(int64_t)delta; /* txnid */
		h[3] = ino + ((flags & 8) ? 1 : 0);
		h[4] = 0; /* dev: not compared */
		memcpy(log_buf + off, hdr32, sizeof(hdr32));
		memcpy(log_buf + off + sizeof(hdr32), h, 5 * sizeof(uint64_t));
		memcpy(log_buf + off + LODE_LOG_HDR, in->p, len);
		in->p += len;
		in->left -= len;
		sum = XXH3_64bits(log_buf + off, LODE_LOG_HDR + len) ^ ((flags & 4) ? 1 : 0);
		memcpy(log_buf + off + LODE_LOG_HDR + len, &sum, sizeof(sum));
		off += LODE_LOG_HDR + len + LODE_LOG_TRAIL;
	}
	return off;
}

static int write_log(size_t used)
{
	char path[512];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/data.log", work);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* full size, so the open does not fill it; the rest reads as zeros */
	if ((used && write(fd, log_buf, used) != (ssize_t)used) || ftruncate(fd, LODE_LOG_SIZE))
		rc = -EIO;
	close(fd);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	struct lode_store *st = NULL;
	char path[512], why[512];
	struct stat sb;
	int rc;

	if (copy_template()) {
		fprintf(stderr, "fuzz_mds_log: cannot copy the template store\n");
		abort();
	}
	snprintf(path, sizeof(path), "%s/data.mdb", work);
	if (stat(path, &sb) || write_log(build_log(&in, (uint64_t)sb.st_ino))) {
		fprintf(stderr, "fuzz_mds_log: cannot write %s/data.log\n", work);
		abort();
	}
	rc = open_store(work, &st, why, sizeof(why));
	/* an open that fails says why */
	FUZZ_ASSERT(rc <= 0);
	FUZZ_ASSERT(rc == 0 || why[0]);
	if (!rc) {
		FUZZ_ASSERT(lode_store_last_txnid(st) >= tmpl_last);
		/* a store that opened takes a change, and opens again or says why not */
		FUZZ_ASSERT(commit_one(st) == 0);
		lode_store_close(st);
		rc = open_store(work, &st, why, sizeof(why));
		FUZZ_ASSERT(rc == 0 || why[0]);
		if (!rc)
			lode_store_close(st);
	}
	fixture_tmpdir_remove(work);
	work[0] = 0;
	return 0;
}
