/* SPDX-License-Identifier: MIT */
/*
 * The LMDB environment of lode-mds. Everything that talks to LMDB directly lives here, so
 * that MDB_* return codes are turned into negative errno in exactly one place.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lmdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "mds_spec.h"
#include "store.h"
#include "store_log.h"
#include "store_sync.h"

#define DEFAULT_MAP_SIZE (64ull << 30)
/* A sync is a checkpoint (store_log.h) once this many commits or milliseconds went by since
 * the last, or the log is half full: until then the pin keeps commits from reusing the
 * synced snapshot's pages, so these bound how much the data file grows meanwhile. */
#define CKPT_COMMITS 128u
#define CKPT_MS	     2000u

/* A change recorded for the commit log: {op u8, db u8, 0 u16, klen u32, vlen u32, key,
 * value}. */
enum redo_op { REDO_PUT = 1, REDO_DEL = 2, REDO_DEL_PREFIX = 3 };
#define REDO_ENTRY 12u
#define REDO_KEEP  (4u << 20) /* the biggest change buffer kept between commits */

struct lode_store {
	MDB_env *env;
	MDB_dbi dbi[LODE_DB_COUNT_];
	uint64_t cluster_id; /* read-only after open */
	/* The last durable snapshot (store_sync.h): the sync record names it, and pin, a read
	 * transaction on it, keeps commits from reusing its pages. Writer thread only. */
	struct lode_sync_record *rec;
	MDB_txn *pin;
	int sync_failed;  /* the first failed sync's -errno: no sync nor write is tried again */
	int flush_failed; /* atomic: a failed lode_store_flush()'s -errno, for the checkpoint */
	/* The commit log (store_log.h), on once the store is open: the changes of the write
	 * txn in progress (LODE_LOG_HDR bytes of room first), commits and time since the last
	 * checkpoint. Writer thread only. */
	struct lode_store_log *log;
	bool log_on;
	uint8_t *redo;
	size_t redo_len, redo_cap;
	uint64_t ckpt_commits, ckpt_ms; /* written by the writer, read atomically */
	unsigned ckpt_every;		/* commits: CKPT_COMMITS or the opts' */
	struct lode_store_stats stats;	/* written by the writer, read atomically */
	char note[512];			/* what lode_store_open() found worth saying, or "" */
};

static const char *const db_names[LODE_DB_COUNT_] = {
    [LODE_DB_META] = "meta",	   [LODE_DB_INODES] = "inodes",	    [LODE_DB_DIRENTS] = "dirents",
    [LODE_DB_COOKIES] = "cookies", [LODE_DB_SYMLINKS] = "symlinks", [LODE_DB_XATTRS] = "xattrs",
    [LODE_DB_TARGETS] = "targets", [LODE_DB_ORPHANS] = "orphans",   [LODE_DB_MOVES] = "moves",
};

int lode_store_errno(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_KEYEXIST:
		return -EEXIST;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
	case MDB_PAGE_FULL:
		return -ENOSPC;
	case MDB_READERS_FULL:
	case MDB_TLS_FULL:
		return -EAGAIN;
	case MDB_DBS_FULL:
		return -EMFILE;
	case MDB_BAD_VALSIZE:
		return -EINVAL;
	case MDB_VERSION_MISMATCH:
	case MDB_INVALID:
	case MDB_INCOMPATIBLE:
		return -EPROTO;
	case MDB_MAP_RESIZED:
		return -ESTALE;
	case MDB_PAGE_NOTFOUND:
	case MDB_CORRUPTED:
	case MDB_PANIC:
	case MDB_BAD_RSLOT:
	case MDB_BAD_TXN:
	case MDB_BAD_DBI:
	case MDB_CURSOR_FULL:
		return -EIO;
	default:
		/* LMDB passes system errors through as positive errno values */
		return rc > 0 ? -rc : -EIO;
	}
}

uint64_t lode_store_cluster_id(const struct lode_store *st)
{
	return st->cluster_id;
}

static int txn_begin(struct lode_store *st, MDB_txn *parent, unsigned flags, struct lode_txn *t)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(st->env, parent, flags, &txn);

	t->st = st;
	t->txn = NULL;
	t->mark = SIZE_MAX;
	t->top = false;
	if (rc)
		return lode_store_errno(rc);
	t->txn = txn;
	return 0;
}

int lode_store_read_begin(struct lode_store *st, struct lode_txn *t)
{
	return txn_begin(st, NULL, MDB_RDONLY, t);
}

int lode_store_write_begin(struct lode_store *st, struct lode_txn *parent, struct lode_txn *t)
{
	/* after a failed sync nothing more is committed: see lode_store_sync */
	int rc;

	if (!parent && st->sync_failed) {
		*t = (struct lode_txn){.st = st, .mark = SIZE_MAX}; /* an abort does nothing */
		return st->sync_failed;
	}
	rc = txn_begin(st, parent ? parent->txn : NULL, 0, t);
	if (rc)
		return rc;
	if (!parent)
		st->redo_len = LODE_LOG_HDR;
	t->mark = st->redo_len;
	t->top = !parent;
	return 0;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Records a change of t for the commit log (a no-op until the log is on). 0 or -ENOMEM. */
static int redo_add(struct lode_txn *t, enum redo_op op, enum lode_db db, const void *key,
		    size_t klen, const void *val, size_t vlen)
{
	struct lode_store *st = t->st;
	size_t need = REDO_ENTRY + klen + vlen;
	uint8_t *p;
	uint32_t k32 = (uint32_t)klen, v32 = (uint32_t)vlen;

	if (!st->log_on || t->mark == SIZE_MAX)
		return 0;
	if (klen > UINT32_MAX || vlen > UINT32_MAX)
		return -EINVAL;
	if (st->redo_len + need + LODE_LOG_TRAIL > st->redo_cap) {
		size_t cap = st->redo_cap ? st->redo_cap : 1u << 16;

		while (cap < st->redo_len + need + LODE_LOG_TRAIL)
			cap *= 2;
		p = realloc(st->redo, cap);
		if (!p)
			return -ENOMEM;
		st->redo = p;
		st->redo_cap = cap;
	}
	p = st->redo + st->redo_len;
	p[0] = (uint8_t)op;
	p[1] = (uint8_t)db;
	p[2] = p[3] = 0;
	memcpy(p + 4, &k32, 4);
	memcpy(p + 8, &v32, 4);
	memcpy(p + REDO_ENTRY, key, klen);
	if (vlen)
		memcpy(p + REDO_ENTRY + klen, val, vlen);
	st->redo_len += need;
	return 0;
}

/* The failed sync's consequences (see lode_store_sync), whichever sync it was. */
static int sync_failed(struct lode_store *st, int rc)
{
	int prc;

	st->sync_failed = rc;
	/* the next open rolls back to the record, even in this boot */
	prc = lode_sync_record_poison(st->rec);
	if (prc)
		fprintf(stderr,
			"lode-mds: marking the sync record after the failed sync failed too (%s): "
			"a restart of the MDS in this boot would not roll back to the last "
			"recorded sync; reboot the machine before restarting it\n",
			strerror(-prc));
	/* and replays none of the commits answered with this error */
	prc = st->log ? lode_store_log_poison(st->log) : 0;
	if (prc)
		fprintf(stderr,
			"lode-mds: erasing the commit log's unsynced end after the failed sync "
			"failed (%s): a restart of the MDS in this boot could bring back changes "
			"answered with an error; reboot the machine before restarting it\n",
			strerror(-prc));
	return rc;
}

/* Syncs the data file and records its snapshot as durable; the log starts over. */
static int checkpoint(struct lode_store *st)
{
	MDB_envinfo info;
	int rc;

	/* a write error that a flush saw is reported to no later fdatasync of the file */
	rc = __atomic_exchange_n(&st->flush_failed, 0, __ATOMIC_RELAXED);
	if (rc)
		return sync_failed(st, rc);
	rc = lode_store_errno(mdb_env_sync(st->env, 1));
	if (!rc)
		rc = lode_store_errno(mdb_env_info(st->env, &info));
	if (!rc)
		rc = lode_sync_record_write(st->rec, (uint64_t)info.me_last_txnid);
	if (rc)
		return sync_failed(st, rc);
	__atomic_store_n(&st->stats.checkpoints, st->stats.checkpoints + 1, __ATOMIC_RELAXED);
	if (st->log)
		lode_store_log_rewind(st->log);
	__atomic_store_n(&st->ckpt_commits, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&st->ckpt_ms, mono_ms(), __ATOMIC_RELAXED);
	/* The pin moves to the snapshot just made durable. Without it a commit could reuse
	 * that snapshot's pages: if it cannot be taken, the store takes no more changes (the
	 * snapshot itself is durable, so nothing needs rolling back). */
	if (st->pin) {
		mdb_txn_reset(st->pin);
		rc = lode_store_errno(mdb_txn_renew(st->pin));
		if (rc) {
			mdb_txn_abort(st->pin);
			st->pin = NULL;
		}
	}
	if (!st->pin)
		rc = lode_store_errno(mdb_txn_begin(st->env, NULL, MDB_RDONLY, &st->pin));
	if (rc)
		st->sync_failed = rc;
	return rc;
}

int lode_store_commit(struct lode_txn *t)
{
	struct lode_store *st = t->st;
	bool changes = t->top && st->log_on && st->redo_len > LODE_LOG_HDR;
	size_t payload = st->redo_len - LODE_LOG_HDR;
	int rc = lode_store_errno(mdb_txn_commit(t->txn));

	t->txn = NULL;
	if (rc && !t->top)
		st->redo_len = t->mark; /* a child that failed to commit was aborted */
	if (rc || !changes)
		return rc;
	/* In the log, or (too big for what is left of it, or its write failed) made durable
	 * in the data file now: a commit the log misses must never be followed by one it
	 * holds (store_log.h). */
	__atomic_store_n(&st->ckpt_commits, st->ckpt_commits + 1, __ATOMIC_RELAXED);
	if (lode_store_log_fits(st->log, payload) &&
	    !lode_store_log_append(st->log, lode_store_last_txnid(st), st->redo, payload))
		rc = 0;
	else
		rc = checkpoint(st);
	if (st->redo_cap > REDO_KEEP) {
		/* a batch of big values is rare: its buffer is not kept */
		free(st->redo);
		st->redo = NULL;
		st->redo_cap = 0;
	}
	return rc;
}

int lode_store_sync(struct lode_store *st)
{
	int rc;

	/* a later success would vouch for pages the failed one could not write */
	if (st->sync_failed)
		return st->sync_failed;
	if (lode_store_checkpoint_due(st) || lode_store_log_used(st->log) > LODE_LOG_SIZE / 2)
		return checkpoint(st);
	rc = lode_store_log_sync(st->log);
	if (rc)
		return sync_failed(st, rc);
	__atomic_store_n(&st->stats.log_syncs, st->stats.log_syncs + 1, __ATOMIC_RELAXED);
	return 0;
}

/*
 * SYNC_FILE_RANGE_WRITE only starts the writes (WB_SYNC_NONE: pages already being written
 * are passed over) and neither waits for them nor looks at their errors; the flags that
 * wait (WAIT_BEFORE, WAIT_AFTER) would also take a write error as reported on this file,
 * and the checkpoint's fdatasync, which must see it, would then succeed.
 */
void lode_store_writeback(struct lode_store *st)
{
	int fd;

	if (mdb_env_get_fd(st->env, &fd))
		return;
	(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

bool lode_store_checkpoint_due(struct lode_store *st)
{
	return !st->log_on ||
	       __atomic_load_n(&st->ckpt_commits, __ATOMIC_RELAXED) >= st->ckpt_every ||
	       mono_ms() - __atomic_load_n(&st->ckpt_ms, __ATOMIC_RELAXED) >= CKPT_MS;
}

void lode_store_flush(struct lode_store *st)
{
	int rc = lode_store_errno(mdb_env_sync(st->env, 1));

	if (rc)
		__atomic_store_n(&st->flush_failed, rc, __ATOMIC_RELAXED);
}

void lode_store_stats(struct lode_store *st, struct lode_store_stats *out)
{
	out->log_syncs = __atomic_load_n(&st->stats.log_syncs, __ATOMIC_RELAXED);
	out->checkpoints = __atomic_load_n(&st->stats.checkpoints, __ATOMIC_RELAXED);
}

const char *lode_store_open_note(const struct lode_store *st)
{
	return st->note;
}

uint64_t lode_store_last_txnid(struct lode_store *st)
{
	MDB_envinfo info;

	if (mdb_env_info(st->env, &info))
		return 0;
	return (uint64_t)info.me_last_txnid;
}

void lode_store_abort(struct lode_txn *t)
{
	if (t->txn)
		mdb_txn_abort(t->txn);
	t->txn = NULL;
	if (t->mark != SIZE_MAX && t->st)
		t->st->redo_len = t->mark; /* what it recorded is undone */
}

int lode_kv_get(struct lode_txn *t, enum lode_db db, const void *key, size_t klen, void *buf,
		size_t cap, size_t *vlen)
{
	MDB_val k = {.mv_size = klen, .mv_data = (void *)key};
	MDB_val v;
	int rc = mdb_get(t->txn, t->st->dbi[db], &k, &v);

	if (rc)
		return lode_store_errno(rc);
	if (cap)
		memcpy(buf, v.mv_data, v.mv_size < cap ? v.mv_size : cap);
	if (vlen)
		*vlen = v.mv_size;
	return 0;
}

int lode_kv_put(struct lode_txn *t, enum lode_db db, const void *key, size_t klen, const void *val,
		size_t vlen, unsigned flags)
{
	MDB_val k = {.mv_size = klen, .mv_data = (void *)key};
	MDB_val v = {.mv_size = vlen, .mv_data = (void *)val};
	int rc = lode_store_errno(mdb_put(t->txn, t->st->dbi[db], &k, &v,
					  flags & LODE_KV_NOOVERWRITE ? MDB_NOOVERWRITE : 0));

	return rc ? rc : redo_add(t, REDO_PUT, db, key, klen, val, vlen);
}

int lode_kv_del(struct lode_txn *t, enum lode_db db, const void *key, size_t klen)
{
	MDB_val k = {.mv_size = klen, .mv_data = (void *)key};
	int rc = lode_store_errno(mdb_del(t->txn, t->st->dbi[db], &k, NULL));

	return rc ? rc : redo_add(t, REDO_DEL, db, key, klen, NULL, 0);
}

static int has_prefix(const MDB_val *k, const void *prefix, size_t plen)
{
	return k->mv_size >= plen && (plen == 0 || memcmp(k->mv_data, prefix, plen) == 0);
}

int lode_kv_del_prefix(struct lode_txn *t, enum lode_db db, const void *prefix, size_t plen)
{
	MDB_cursor *cur;
	MDB_val k = {.mv_size = plen, .mv_data = (void *)prefix};
	MDB_val v;
	int rc = mdb_cursor_open(t->txn, t->st->dbi[db], &cur);

	if (rc)
		return lode_store_errno(rc);
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0 && has_prefix(&k, prefix, plen)) {
		rc = mdb_cursor_del(cur, 0);
		if (rc)
			break;
		/* after a delete, MDB_NEXT yields the key that followed the deleted one */
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND)
		return lode_store_errno(rc);
	return redo_add(t, REDO_DEL_PREFIX, db, prefix, plen, NULL, 0);
}

int lode_kv_scan(struct lode_txn *t, enum lode_db db, const void *prefix, size_t plen,
		 const void *start, size_t slen, lode_kv_scan_cb cb, void *arg)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(t->txn, t->st->dbi[db], &cur);

	if (rc)
		return lode_store_errno(rc);
	if (!start) {
		start = prefix;
		slen = plen;
	}
	k.mv_size = slen;
	k.mv_data = (void *)start;
	if (slen)
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	else
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == 0 && has_prefix(&k, prefix, plen)) {
		int r = cb(arg, k.mv_data, k.mv_size, v.mv_data, v.mv_size);

		if (r) {
			mdb_cursor_close(cur);
			return r < 0 ? r : 0;
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : lode_store_errno(rc);
}

int lode_kv_count(struct lode_txn *t, enum lode_db db, uint64_t *count)
{
	MDB_stat s;
	int rc = mdb_stat(t->txn, t->st->dbi[db], &s);

	if (rc)
		return lode_store_errno(rc);
	*count = s.ms_entries;
	return 0;
}

static int meta_get_u64(struct lode_txn *t, const char *key, uint64_t *out)
{
	uint64_t v = 0;
	size_t len;
	int rc = lode_kv_get(t, LODE_DB_META, key, strlen(key), &v, sizeof(v), &len);

	if (rc)
		return rc;
	if (len != sizeof(v))
		return -EIO;
	*out = v;
	return 0;
}

static int meta_put_u64(struct lode_txn *t, const char *key, uint64_t v)
{
	return lode_kv_put(t, LODE_DB_META, key, strlen(key), &v, sizeof(v), 0);
}

int lode_store_alloc_ino(struct lode_txn *t, uint64_t *ino)
{
	uint64_t next;
	int rc = meta_get_u64(t, "next_ino", &next);

	if (rc)
		return rc == -ENOENT ? -EIO : rc;
	rc = meta_put_u64(t, "next_ino", next + 1);
	if (rc)
		return rc;
	*ino = next;
	return 0;
}

int lode_store_alloc_target_id(struct lode_txn *t, uint32_t *id)
{
	uint64_t next;
	int rc = meta_get_u64(t, "next_target_id", &next);

	if (rc)
		return rc == -ENOENT ? -EIO : rc;
	if (next > UINT32_MAX)
		return -ENOSPC;
	rc = meta_put_u64(t, "next_target_id", next + 1);
	if (rc)
		return rc;
	*id = (uint32_t)next;
	return 0;
}

static int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The cluster id is kept with a checksum: {id, xxh3-64 of id}. A damaged id would make every
 * OSS refuse the MDS (or, worse, accept another cluster's), so it is checked at each open.
 * Stores written before the checksum hold the bare id, which is checked in at first open.
 */
struct cluster_id_rec {
	uint64_t id;
	uint64_t check;
};

static int put_cluster_id(struct lode_txn *t, uint64_t id)
{
	struct cluster_id_rec r = {.id = id, .check = XXH3_64bits(&id, sizeof(id))};

	return lode_kv_put(t, LODE_DB_META, "cluster_id", 10, &r, sizeof(r), 0);
}

static int get_cluster_id(struct lode_txn *t, uint64_t *id, char *why, size_t why_len)
{
	struct cluster_id_rec r = {0};
	size_t len;
	int rc = lode_kv_get(t, LODE_DB_META, "cluster_id", 10, &r, sizeof(r), &len);

	if (rc) {
		snprintf(why, why_len, "cannot read the cluster id: %s", strerror(-rc));
		return rc == -ENOENT ? -EUCLEAN : rc;
	}
	if (len == sizeof(r.id) && r.id) {
		rc = put_cluster_id(t, r.id); /* a store from before the checksum */
		if (rc) {
			snprintf(why, why_len, "cannot write the cluster id: %s", strerror(-rc));
			return rc;
		}
	} else if (len != sizeof(r) || !r.id || r.check != XXH3_64bits(&r.id, sizeof(r.id))) {
		snprintf(why, why_len, "the cluster id is damaged (its checksum does not match)");
		return -EUCLEAN;
	}
	*id = r.id;
	return 0;
}

/* First open: everything a fresh file system needs, in the caller's write txn. */
static int format_fresh(struct lode_txn *t, uint64_t *cluster_id)
{
	uint32_t version = LODE_MDS_FORMAT_VERSION;
	struct lode_disk_inode root = {0};
	unsigned char key[8];
	uint64_t id = 0;
	int64_t now = wall_ns();
	int rc;

	while (id == 0) {
		if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
			return -errno;
	}
	rc = lode_kv_put(t, LODE_DB_META, "format_version", 14, &version, sizeof(version), 0);
	if (!rc)
		rc = put_cluster_id(t, id);
	if (!rc)
		rc = meta_put_u64(t, "next_ino", LODE_MDS_ROOT_INO + 1);
	if (!rc)
		rc = meta_put_u64(t, "next_target_id", 1);
	if (rc)
		return rc;

	root.mode = S_IFDIR | 0755;
	root.nlink = 2;
	root.atime_ns = root.mtime_ns = root.ctime_ns = now;
	root.parent = LODE_MDS_ROOT_INO;
	root.next_cookie = LODE_MDS_FIRST_COOKIE;
	root.layout.stripe_size = 1u << 20;
	root.layout.stripe_count = 0;
	root.layout.mirror_count = 0; /* automatic: 2 copies once 2 targets exist */
	lode_be64_put(key, LODE_MDS_ROOT_INO);
	rc = lode_kv_put(t, LODE_DB_INODES, key, sizeof(key), &root, sizeof(root), 0);
	if (rc)
		return rc;
	*cluster_id = id;
	return 0;
}

/*
 * The handle of every named db, in txn. With create, a missing db is created; without, it
 * is left unopened (its handle stays 0, LMDB's free list, which refuses user writes). 0 or
 * -errno with why set.
 */
static int open_handles(struct lode_store *st, MDB_txn *txn, bool create, char *why, size_t why_len)
{
	for (int i = 0; i < LODE_DB_COUNT_; i++) {
		int rc = lode_store_errno(
		    mdb_dbi_open(txn, db_names[i], create ? MDB_CREATE : 0, &st->dbi[i]));

		if (rc == -ENOENT && !create)
			continue;
		if (rc) {
			snprintf(why, why_len, "cannot open database %s: %s", db_names[i],
				 strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/*
 * Opens the named dbs and checks (or writes) the format, all in one write txn. A store is
 * formatted only when it was empty before this open (no data file), or when the caller asks
 * (format): a store that holds data but no readable format version is damaged, and
 * formatting it would replace its cluster (new id, inode numbers from 1) silently.
 */
static int open_dbs(struct lode_store *st, int was_empty, int format, char *why, size_t why_len)
{
	struct lode_txn t;
	uint32_t version = 0;
	size_t len;
	int rc;

	rc = lode_store_write_begin(st, NULL, &t);
	if (rc) {
		snprintf(why, why_len, "cannot begin a transaction: %s", strerror(-rc));
		return rc;
	}
	rc = open_handles(st, t.txn, true, why, why_len);
	if (rc)
		goto abort_txn;

	rc = lode_kv_get(&t, LODE_DB_META, "format_version", 14, &version, sizeof(version), &len);
	if (rc == -ENOENT && (was_empty || format)) {
		rc = format_fresh(&t, &st->cluster_id);
		if (rc) {
			snprintf(why, why_len, "cannot format a fresh store: %s", strerror(-rc));
			goto abort_txn;
		}
	} else if (rc == -ENOENT) {
		rc = -EUCLEAN;
		snprintf(
		    why, why_len,
		    "the store holds data but no format version: it is damaged or not "
		    "Lode's; refusing to format over it (--format would, losing its namespace)");
		goto abort_txn;
	} else if (rc || len != sizeof(version) || version == 0) {
		rc = rc ? rc : -EUCLEAN;
		snprintf(why, why_len, "cannot read the format version: %s", strerror(-rc));
		goto abort_txn;
	} else if (version > LODE_MDS_FORMAT_VERSION) {
		rc = -EPROTONOSUPPORT;
		snprintf(why, why_len,
			 "data format version %u is newer than this lode-mds supports (%u): "
			 "run a newer lode-mds",
			 version, LODE_MDS_FORMAT_VERSION);
		goto abort_txn;
	} else {
		rc = get_cluster_id(&t, &st->cluster_id, why, why_len);
		if (rc)
			goto abort_txn;
		if (version < LODE_MDS_FORMAT_VERSION) {
			/* what this server writes from now on, an older one would misread
			 * (mds_spec.h): stamped before anything is written */
			uint32_t now = LODE_MDS_FORMAT_VERSION;
			size_t n = strlen(st->note);

			rc = lode_kv_put(&t, LODE_DB_META, "format_version", 14, &now, sizeof(now),
					 0);
			if (rc) {
				snprintf(why, why_len, "cannot update the format version: %s",
					 strerror(-rc));
				goto abort_txn;
			}
			snprintf(st->note + n, sizeof(st->note) - n,
				 "%sdata format version %u updated to %u (an older lode-mds will "
				 "refuse this store from now on)",
				 n ? "; " : "", version, LODE_MDS_FORMAT_VERSION);
		}
	}

	rc = lode_store_commit(&t);
	if (!rc)
		rc = lode_store_sync(st);
	if (rc)
		snprintf(why, why_len, "cannot commit: %s", strerror(-rc));
	return rc;

abort_txn:
	lode_store_abort(&t);
	return rc;
}

/*
 * LMDB maps its file and trusts it: a data file shorter than the pages its meta page names
 * (a truncated copy, a disk that lost its tail) ends in SIGBUS at the first read past the
 * end. So the file's size is checked against LMDB's own view (the last page in use, read
 * from the meta pages with read(), not through the map) before any page is touched.
 */
static int check_size(struct lode_store *st, const char *path, char *why, size_t why_len)
{
	MDB_envinfo info;
	MDB_stat ms;
	struct stat sb;
	uint64_t need;
	int rc;

	rc = lode_store_errno(mdb_env_info(st->env, &info));
	if (!rc)
		rc = lode_store_errno(mdb_env_stat(st->env, &ms));
	if (rc) {
		snprintf(why, why_len, "cannot read LMDB's view of the store: %s", strerror(-rc));
		return rc;
	}
	if (stat(path, &sb)) {
		rc = -errno;
		snprintf(why, why_len, "cannot stat %s: %s", path, strerror(-rc));
		return rc;
	}
	need = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	if ((uint64_t)sb.st_size < need) {
		snprintf(why, why_len,
			 "%s is %llu bytes but its last page in use ends at %llu: the file was "
			 "truncated; restore it from a backup",
			 path, (unsigned long long)sb.st_size, (unsigned long long)need);
		return -EUCLEAN;
	}
	return 0;
}

/* Every page in use, before LMDB reads one (store_pages.c). */
static int check_pages(struct lode_store *st, const char *path, char *why, size_t why_len)
{
	MDB_stat ms;
	int rc = lode_store_errno(mdb_env_stat(st->env, &ms));

	if (rc) {
		snprintf(why, why_len, "cannot read LMDB's view of the store: %s", strerror(-rc));
		return rc;
	}
	return lode_store_check_pages(path, ms.ms_psize, why, why_len);
}

/* Applying the commit log at open (store_log.h): the records past the store's last
 * transaction, each as one commit, which must make the transaction the record names. */
struct replay {
	struct lode_store *st;
	unsigned applied;
	char *why;
	size_t why_len;
};

/* Applies one record's changes in t, through the same calls that recorded them. 0 or
 * -errno (-EBADMSG: an entry that does not parse). */
static int replay_entries(struct lode_txn *t, const uint8_t *p, size_t len)
{
	while (len) {
		uint32_t klen, vlen;
		const uint8_t *key = p + REDO_ENTRY;
		enum lode_db db;
		int rc;

		if (len < REDO_ENTRY)
			return -EBADMSG;
		db = (enum lode_db)p[1];
		memcpy(&klen, p + 4, 4);
		memcpy(&vlen, p + 8, 4);
		if (p[1] >= LODE_DB_COUNT_ || (uint64_t)klen + vlen > len - REDO_ENTRY)
			return -EBADMSG;
		switch (p[0]) {
		case REDO_PUT:
			rc = lode_kv_put(t, db, key, klen, key + klen, vlen, 0);
			break;
		case REDO_DEL:
			rc = lode_kv_del(t, db, key, klen);
			break;
		case REDO_DEL_PREFIX:
			rc = lode_kv_del_prefix(t, db, key, klen);
			break;
		default:
			return -EBADMSG;
		}
		if (rc)
			return rc;
		p += REDO_ENTRY + klen + vlen;
		len -= REDO_ENTRY + klen + vlen;
	}
	return 0;
}

static int replay_record(void *arg, uint64_t txnid, const uint8_t *p, size_t len)
{
	struct replay *r = arg;
	uint64_t last = lode_store_last_txnid(r->st);
	struct lode_txn t;
	int rc;

	if (txnid <= last)
		return 0; /* in the store already */
	/* the log is not on yet: these commits record nothing */
	rc = lode_store_write_begin(r->st, NULL, &t);
	if (rc)
		goto fail;
	if ((uint64_t)mdb_txn_id(t.txn) != txnid) {
		lode_store_abort(&t);
		snprintf(r->why, r->why_len,
			 "the commit log's record of transaction %llu follows transaction %llu "
			 "of the store: a transaction is missing from the log",
			 (unsigned long long)txnid, (unsigned long long)last);
		return -EUCLEAN;
	}
	rc = replay_entries(&t, p, len);
	if (rc) {
		lode_store_abort(&t);
		goto fail;
	}
	rc = lode_store_commit(&t);
	if (rc)
		goto fail;
	r->applied++;
	return 0;
fail:
	snprintf(r->why, r->why_len, "cannot replay transaction %llu of the commit log: %s",
		 (unsigned long long)txnid, strerror(-rc));
	return rc;
}

/*
 * Opens the commit log and replays what it holds past the store's last transaction (after
 * a power cut). The checkpoint of the open that follows (open_dbs) makes that durable and
 * starts the log over; only then does the log take commits (log_on).
 */
static int open_log(struct lode_store *st, const char *dir, int was_empty, char *why,
		    size_t why_len)
{
	struct replay r = {.st = st, .why = why, .why_len = why_len};
	MDB_txn *txn;
	int fd, rc = lode_store_errno(mdb_env_get_fd(st->env, &fd));

	if (!rc)
		rc = lode_store_log_open(dir, fd, &st->log);
	if (rc) {
		snprintf(why, why_len, "cannot open %s/data.log: %s", dir, strerror(-rc));
		return rc;
	}
	if (was_empty)
		return 0;
	/* the databases' handles, for the records to name; every one exists once a commit
	 * was logged (each open creates them all, and checkpoints, before the log is on) */
	rc = lode_store_errno(mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn));
	if (rc) {
		snprintf(why, why_len, "cannot open the databases: %s", strerror(-rc));
		return rc;
	}
	rc = open_handles(st, txn, false, why, why_len);
	if (rc) {
		mdb_txn_abort(txn);
		return rc;
	}
	rc = lode_store_errno(mdb_txn_commit(txn));
	if (rc) {
		snprintf(why, why_len, "cannot open the databases: %s", strerror(-rc));
		return rc;
	}
	/* The replay's commits must not reuse the pages of the snapshot the store opened at:
	 * until the open's checkpoint records them, that snapshot is what a failed open rolls
	 * back to (store_sync.h). The checkpoint moves this pin. */
	rc = lode_store_errno(mdb_txn_begin(st->env, NULL, MDB_RDONLY, &st->pin));
	if (rc) {
		snprintf(why, why_len, "cannot hold the store's snapshot: %s", strerror(-rc));
		return rc;
	}
	rc = lode_store_log_replay(st->log, replay_record, &r);
	if (rc) {
		if (!why[0])
			snprintf(why, why_len, "cannot read %s/data.log: %s", dir, strerror(-rc));
		return rc;
	}
	if (r.applied) {
		size_t n = strlen(st->note);

		snprintf(st->note + n, sizeof(st->note) - n,
			 "%sreplayed %u commits from the commit log", n ? "; " : "", r.applied);
	}
	return 0;
}

/* Opens the sync record of the environment just opened (store_sync.h). */
static int open_record(struct lode_store *st, const char *dir, char *why, size_t why_len)
{
	MDB_stat ms;
	int fd, rc = lode_store_errno(mdb_env_get_fd(st->env, &fd));

	if (!rc)
		rc = lode_store_errno(mdb_env_stat(st->env, &ms));
	if (!rc)
		rc = lode_sync_record_open(dir, fd, ms.ms_psize, &st->rec);
	if (rc)
		snprintf(why, why_len, "cannot open %s/data.sync: %s", dir, strerror(-rc));
	return rc;
}

int lode_store_open(const struct lode_store_opts *opts, struct lode_store **out, char *why,
		    size_t why_len)
{
	struct lode_store *st;
	char dummy[1], path[4096];
	struct stat sb;
	int was_empty;
	int rc;

	if (!why) {
		why = dummy;
		why_len = sizeof(dummy);
	}
	if (why_len)
		why[0] = '\0';
	st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	st->ckpt_every = opts->checkpoint_commits ? opts->checkpoint_commits : CKPT_COMMITS;
	rc = lode_store_errno(mdb_env_create(&st->env));
	if (rc) {
		snprintf(why, why_len, "mdb_env_create: %s", strerror(-rc));
		goto free_st;
	}
	rc = lode_store_errno(
	    mdb_env_set_mapsize(st->env, opts->map_size ? opts->map_size : DEFAULT_MAP_SIZE));
	if (!rc)
		rc = lode_store_errno(mdb_env_set_maxdbs(st->env, LODE_DB_COUNT_ + 4));
	if (!rc)
		rc = lode_store_errno(
		    mdb_env_set_maxreaders(st->env, opts->max_readers ? opts->max_readers : 256));
	if (rc) {
		snprintf(why, why_len, "cannot configure LMDB: %s", strerror(-rc));
		goto close_env;
	}
	snprintf(path, sizeof(path), "%s/data.mdb", opts->dir);
	was_empty = stat(path, &sb) == -1 || sb.st_size == 0;
	if (!was_empty) {
		/* a power cut may have left commits that were never synced half on disk */
		rc = lode_sync_record_recover(opts->dir, st->note, sizeof(st->note), why, why_len);
		if (rc)
			goto close_env;
	}
	/* commits sync only when a client waits for it: lode_store_sync (store_sync.h) */
	rc = lode_store_errno(mdb_env_open(st->env, opts->dir, MDB_NOSYNC | MDB_NOTLS, 0600));
	if (rc) {
		snprintf(why, why_len, "cannot open LMDB environment in %s: %s", opts->dir,
			 strerror(-rc));
		goto close_env;
	}
	rc = check_size(st, path, why, why_len);
	if (!rc && !was_empty)
		rc = check_pages(st, path, why, why_len);
	if (!rc)
		rc = open_record(st, opts->dir, why, why_len);
	if (!rc)
		rc = open_log(st, opts->dir, was_empty, why, why_len);
	if (!rc)
		rc = open_dbs(st, was_empty, opts->format, why, why_len);
	if (rc)
		goto close_env;
	st->log_on = true;
	*out = st;
	return 0;

close_env:
	if (st->pin)
		mdb_txn_abort(st->pin);
	mdb_env_close(st->env);
	lode_sync_record_close(st->rec);
	lode_store_log_close(st->log);
free_st:
	free(st);
	return rc;
}

void lode_store_close(struct lode_store *st)
{
	if (!st)
		return;
	/* what lazy clients were answered for, too, and in the data file: the next open
	 * replays nothing */
	if (!st->sync_failed)
		checkpoint(st);
	if (st->pin)
		mdb_txn_abort(st->pin);
	mdb_env_close(st->env);
	lode_sync_record_close(st->rec);
	lode_store_log_close(st->log);
	free(st->redo);
	free(st);
}

/* ---- backup and restore ---- */

int lode_store_copy_compact(struct lode_store *st, int fd)
{
	/* one read transaction: the writer goes on, the copy is that moment's store */
	return lode_store_errno(mdb_env_copyfd2(st->env, fd, MDB_CP_COMPACT));
}

/* What a restore needs from a store's meta db. */
struct meta_info {
	uint32_t version;
	uint64_t cluster_id;
	uint64_t next_ino;
	uint64_t next_target_id;
};

static int meta_val(MDB_txn *txn, MDB_dbi dbi, const char *key, void *out, size_t min, size_t max)
{
	MDB_val k = {strlen(key), (void *)key}, v;
	int rc = lode_store_errno(mdb_get(txn, dbi, &k, &v));

	if (rc)
		return rc;
	if (v.mv_size < min || v.mv_size > max)
		return -EUCLEAN;
	memcpy(out, v.mv_data, min);
	return 0;
}

/*
 * Opens the store at path (a data file with nosubdir, else a directory), reads its meta
 * db, and with `set` writes next_ino and next_target_id from *set. No lock file is used:
 * the caller holds the data directory's lock (or the file is its own). Returns 0 or
 * -errno with why set.
 */
static int meta_access(const char *path, bool nosubdir, struct meta_info *out,
		       const struct meta_info *set, char *why, size_t why_len)
{
	unsigned flags = MDB_NOLOCK | (nosubdir ? MDB_NOSUBDIR : 0) | (set ? 0 : MDB_RDONLY);
	struct meta_info mi = {0};
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	int rc;

	rc = lode_store_errno(mdb_env_create(&env));
	if (rc) {
		snprintf(why, why_len, "mdb_env_create: %s", strerror(-rc));
		return rc;
	}
	rc = lode_store_errno(mdb_env_set_maxdbs(env, LODE_DB_COUNT_ + 4));
	if (!rc)
		rc = lode_store_errno(mdb_env_set_mapsize(env, DEFAULT_MAP_SIZE));
	if (!rc)
		rc = lode_store_errno(mdb_env_open(env, path, flags, 0600));
	if (rc) {
		snprintf(why, why_len, "%s: not an LMDB store (%s)", path, strerror(-rc));
		goto close_env;
	}
	rc = lode_store_errno(mdb_txn_begin(env, NULL, set ? 0 : MDB_RDONLY, &txn));
	if (!rc)
		rc = lode_store_errno(mdb_dbi_open(txn, db_names[LODE_DB_META], 0, &dbi));
	if (rc) {
		snprintf(why, why_len, "%s: no meta database (%s)", path, strerror(-rc));
		goto close_env;
	}
	rc = meta_val(txn, dbi, "format_version", &mi.version, sizeof(mi.version),
		      sizeof(mi.version));
	if (!rc)
		rc = meta_val(txn, dbi, "cluster_id", &mi.cluster_id, sizeof(uint64_t),
			      sizeof(struct cluster_id_rec));
	if (!rc)
		rc = meta_val(txn, dbi, "next_ino", &mi.next_ino, sizeof(uint64_t),
			      sizeof(uint64_t));
	if (!rc)
		rc = meta_val(txn, dbi, "next_target_id", &mi.next_target_id, sizeof(uint64_t),
			      sizeof(uint64_t));
	if (rc) {
		snprintf(why, why_len, "%s: the meta database is incomplete (%s)", path,
			 strerror(-rc));
		goto abort_txn;
	}
	if (!mi.version || mi.version > LODE_MDS_FORMAT_VERSION || !mi.cluster_id) {
		rc = -EUCLEAN;
		snprintf(why, why_len, "%s: format version %u is not one this lode-mds reads", path,
			 mi.version);
		goto abort_txn;
	}
	if (set) {
		MDB_val k = {8, "next_ino"}, v = {8, (void *)&set->next_ino};

		rc = lode_store_errno(mdb_put(txn, dbi, &k, &v, 0));
		k = (MDB_val){14, "next_target_id"};
		v = (MDB_val){8, (void *)&set->next_target_id};
		if (!rc)
			rc = lode_store_errno(mdb_put(txn, dbi, &k, &v, 0));
		if (!rc) {
			rc = lode_store_errno(mdb_txn_commit(txn)); /* frees txn either way */
			txn = NULL;
		}
		if (!rc)
			rc = lode_store_errno(mdb_env_sync(env, 1));
		if (rc) {
			snprintf(why, why_len, "%s: cannot write the counters: %s", path,
				 strerror(-rc));
			goto abort_txn;
		}
	}
	*out = mi;
abort_txn: /* a read txn, or a write txn that failed before its commit */
	if (txn)
		mdb_txn_abort(txn);
close_env:
	mdb_env_close(env);
	return rc;
}

int lode_store_restore(const char *dir, const char *backup, struct lode_restore_info *info,
		       char *why, size_t why_len)
{
	char tmp[PATH_MAX], data[PATH_MAX], old[PATH_MAX], lock[PATH_MAX], ignore[256];
	struct meta_info b, o, set;
	bool have_old;
	int rc;

	snprintf(tmp, sizeof(tmp), "%s/data.mdb.restore", dir);
	snprintf(data, sizeof(data), "%s/data.mdb", dir);
	snprintf(old, sizeof(old), "%s/data.mdb.pre-restore", dir);
	snprintf(lock, sizeof(lock), "%s/lock.mdb", dir);
	/* the backup must be a store this server reads, before anything changes */
	rc = meta_access(backup, true, &b, NULL, why, why_len);
	if (rc)
		return rc;
	/* the store it replaces, if readable and of the same cluster, knows every inode number
	 * handed out since the backup */
	have_old = !access(data, F_OK) &&
		   !meta_access(dir, false, &o, NULL, ignore, sizeof(ignore)) &&
		   o.cluster_id == b.cluster_id;
	set = b;
	if (have_old) {
		set.next_ino = o.next_ino > b.next_ino ? o.next_ino : b.next_ino;
		set.next_target_id =
		    o.next_target_id > b.next_target_id ? o.next_target_id : b.next_target_id;
	} else {
		/* files created after the backup left objects numbered from b.next_ino: skip
		 * far past them, so that no new file's objects meet one (fsck removes them) */
		set.next_ino = b.next_ino + LODE_RESTORE_INO_GAP;
	}
	rc = lode_store_copy_file(backup, tmp);
	if (rc) {
		snprintf(why, why_len, "cannot copy %s to %s: %s", backup, tmp, strerror(-rc));
		goto unlink_tmp;
	}
	rc = meta_access(tmp, true, &o, &set, why, why_len);
	if (rc)
		goto unlink_tmp;
	if (!access(data, F_OK) && rename(data, old)) {
		rc = -errno;
		snprintf(why, why_len, "cannot move %s aside: %s", data, strerror(-rc));
		goto unlink_tmp;
	}
	if (rename(tmp, data)) {
		rc = -errno;
		snprintf(why, why_len, "cannot rename %s to %s: %s", tmp, data, strerror(-rc));
		goto unlink_tmp;
	}
	unlink(lock); /* the reader table of the store that was */
	snprintf(lock, sizeof(lock), "%s/data.sync", dir);
	unlink(lock); /* and its sync record (store_sync.h): it names the old data file */
	snprintf(lock, sizeof(lock), "%s/data.log", dir);
	unlink(lock); /* and its commit log (store_log.h), which holds the old file's commits */
	(void)lode_store_sync_dir(dir);
	info->cluster_id = b.cluster_id;
	info->backup_next_ino = b.next_ino;
	info->next_ino = set.next_ino;
	info->had_store = have_old;
	return 0;

unlink_tmp:
	unlink(tmp);
	return rc;
}
