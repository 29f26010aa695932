/* SPDX-License-Identifier: MIT */
/*
 * lode_store: the MDS's LMDB environment and its named databases (see mds_spec.h).
 *
 * This is the boundary where LMDB return codes become negative errno (MDB_NOTFOUND ->
 * -ENOENT, MDB_KEYEXIST -> -EEXIST, MDB_MAP_FULL -> -ENOSPC, ...): no MDB_* code leaves
 * this file. Every function returns 0 or a negative errno and writes its outputs only on
 * success. Values are copied out before the call returns, so nothing a caller holds
 * points into the map once its transaction ends.
 *
 * Transactions: any thread may run read-only transactions; write transactions belong to
 * the writer (mds/writer.c), one batch at a time. A write transaction may
 * have nested children, so a failed operation rolls back alone.
 */
#ifndef LODE_MDS_STORE_H
#define LODE_MDS_STORE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

struct lode_store;
typedef struct MDB_txn MDB_txn;

enum lode_db {
	LODE_DB_META,
	LODE_DB_INODES,
	LODE_DB_DIRENTS,
	LODE_DB_COOKIES,
	LODE_DB_SYMLINKS,
	LODE_DB_XATTRS,
	LODE_DB_TARGETS,
	LODE_DB_ORPHANS,
	LODE_DB_MOVES,
	LODE_DB_COUNT_,
};

/* A transaction: declare on the stack, begin, then commit or abort exactly once. */
struct lode_txn {
	struct lode_store *st;
	MDB_txn *txn;
	/* A write txn's start in the store's record of changes (store_log.h): an abort drops
	 * what it recorded. SIZE_MAX for a read txn. */
	size_t mark;
	bool top; /* a top-level write txn */
};

struct lode_store_opts {
	const char *dir;      /* an existing directory */
	uint64_t map_size;    /* 0: 64 GiB (sparse; the file grows as data is written) */
	unsigned max_readers; /* 0: 256 */
	/* A sync is a checkpoint (store_log.h) once this many commits were logged since the
	 * last (0: 128), or 2 s went by, or the log is half full. */
	unsigned checkpoint_commits;
	int format; /* 1: format a store that has no format version even if not empty */
};

/*
 * Opens (creating at first use) the environment in opts->dir. A fresh environment (no data
 * file yet, or opts->format) gets the format version, a random cluster id, and the root
 * directory (ino 1, 0755 root:root, default layout 1 MiB x all-up-targets (0) x 1 mirror).
 * Fails closed on a damaged store: -EUCLEAN when the data file is shorter than LMDB's meta
 * page says, when a store with data has no format version, or when the cluster id fails its
 * checksum. Returns 0, -EPROTONOSUPPORT when the data's format is newer than this server's,
 * or another -errno; on failure `why` (if non-NULL) holds a one-line reason.
 */
int lode_store_open(const struct lode_store_opts *opts, struct lode_store **out, char *why,
		    size_t why_len);
/*
 * Walks every page the newest meta page of the LMDB data file at path reaches, reading it
 * with pread() (never through a map), and checks what LMDB would otherwise trust: each page
 * says its own number, has the type its parent expects, holds its nodes inside itself, sits
 * at its tree's depth, lies inside the pages in use and is reached once; free-list records
 * name pages in use range. psize: LMDB's page size. Returns 0, -EUCLEAN with the first
 * damage found in why, or another -errno. lode_store_open() runs it before any page is
 * mapped, so a damaged page header is an error, not a crash inside LMDB.
 */
int lode_store_check_pages(const char *path, unsigned psize, char *why, size_t why_len);

/* Closes the environment. No transaction may be open. NULL is accepted. */
void lode_store_close(struct lode_store *st);
uint64_t lode_store_cluster_id(const struct lode_store *st);

/* Begins a read-only transaction. */
int lode_store_read_begin(struct lode_store *st, struct lode_txn *t);
/* Begins a write transaction, nested in `parent` if non-NULL. Once a sync failed, a
 * top-level one fails with that sync's error (lode_store_sync). */
int lode_store_write_begin(struct lode_store *st, struct lode_txn *parent, struct lode_txn *t);
/* Commits. A top-level write txn is then visible to every new transaction, written to the
 * data file and recorded in the commit log (store_log.h), but not synced: it is durable
 * once lode_store_sync() returns. A crash of the process loses nothing; a crash of the
 * machine before the sync undoes the commits since the last one, and never breaks the
 * store (store_sync.h). The txn is gone either way. */
int lode_store_commit(struct lode_txn *t);
/* Makes every commit so far durable: one sync of the commit log, or now and then a
 * checkpoint (the data file synced and the snapshot recorded in the sync record; the log
 * starts over). The writer only, between batches (or while no write txn can run). Returns 0
 * or -errno. Once a sync failed, every later sync and write transaction fails with its
 * error, and the next open of the store rolls back to the last recorded snapshot and
 * replays what the log held before the failure (store_sync.h, store_log.h). */
int lode_store_sync(struct lode_store *st);
/* Starts writing the data file's dirty pages to disk and returns without waiting. A
 * checkpoint's fdatasync runs while no commit can (the writer's batch lock), and what it
 * has to write piled up since the last one: a storm of lazy creates left 64 ms of it at a
 * checkpoint, 10 ms between checkpoints of durable ones (one per 128 commits), and every
 * change of the MDS waited that long. Written ahead, without the lock, it leaves the
 * checkpoint little to do. Durability is unchanged: only the checkpoint vouches for the
 * pages, and a write error still reaches its fdatasync. Any thread, no lock needed. */
void lode_store_writeback(struct lode_store *st);
/* Writes the data file's dirty pages and waits for them (an fdatasync), without the lock a
 * checkpoint holds: the writer's flusher thread calls it just before a lazy sync that
 * checkpoints, so that the checkpoint's own fdatasync has only what was changed meanwhile
 * to write. Vouches for nothing; a write error it sees (which no later fdatasync of the
 * file would report) fails the next checkpoint. Any thread, no lock needed, concurrently
 * with commits. */
void lode_store_flush(struct lode_store *st);
/* Whether the next lode_store_sync() will be a checkpoint by its count of commits or its
 * time (it may also be one because the log is half full). Any thread; a hint only. */
bool lode_store_checkpoint_due(struct lode_store *st);
/* What the store's syncs cost: fdatasyncs of the commit log, and checkpoints (two
 * fdatasyncs each: the data file, the sync record). Any thread. */
struct lode_store_stats {
	uint64_t log_syncs;
	uint64_t checkpoints;
};
void lode_store_stats(struct lode_store *st, struct lode_store_stats *out);
/* What lode_store_open() did that an operator should hear of (a rollback after a power
 * cut), or "". */
const char *lode_store_open_note(const struct lode_store *st);
/* The id of the last write transaction that changed the database. A commit that changed
 * nothing leaves it (LMDB then writes and syncs nothing). Any thread. */
uint64_t lode_store_last_txnid(struct lode_store *st);
/* Aborts; accepts a txn whose begin failed (t->txn NULL). */
void lode_store_abort(struct lode_txn *t);

/* Converts an LMDB return code to 0 or a negative errno. */
int lode_store_errno(int mdb_rc);

/*
 * Key-value access. get copies at most `cap` bytes of the value into buf and sets *vlen to
 * the value's full length (buf may be NULL when cap is 0). put flags: LODE_KV_NOOVERWRITE
 * makes an existing key -EEXIST.
 */
#define LODE_KV_NOOVERWRITE 0x1u
int lode_kv_get(struct lode_txn *t, enum lode_db db, const void *key, size_t klen, void *buf,
		size_t cap, size_t *vlen);
int lode_kv_put(struct lode_txn *t, enum lode_db db, const void *key, size_t klen, const void *val,
		size_t vlen, unsigned flags);
/* Returns 0 or -ENOENT if absent. */
int lode_kv_del(struct lode_txn *t, enum lode_db db, const void *key, size_t klen);
/* Deletes every key that starts with prefix. */
int lode_kv_del_prefix(struct lode_txn *t, enum lode_db db, const void *prefix, size_t plen);

/*
 * Calls cb for each key >= start (start begins with prefix; NULL means prefix) that starts
 * with prefix, in key order. k and v are valid only during the callback (they point into
 * the map): copy what you keep. cb returns 0 to go on, > 0 to stop, < 0 to fail with that
 * errno. The callback must not modify db. Returns 0 or the negative errno.
 */
typedef int (*lode_kv_scan_cb)(void *arg, const void *k, size_t klen, const void *v, size_t vlen);
int lode_kv_scan(struct lode_txn *t, enum lode_db db, const void *prefix, size_t plen,
		 const void *start, size_t slen, lode_kv_scan_cb cb, void *arg);
/* Number of keys in db. */
int lode_kv_count(struct lode_txn *t, enum lode_db db, uint64_t *count);

/* Big-endian key helpers. */
static inline void lode_be64_put(void *p, uint64_t v)
{
	unsigned char *b = p;

	for (int i = 7; i >= 0; i--, v >>= 8)
		b[i] = (unsigned char)v;
}

static inline uint64_t lode_be64_get(const void *p)
{
	const unsigned char *b = p;
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | b[i];
	return v;
}

/* meta counters, for write transactions: hands out the next value and advances it. */
int lode_store_alloc_ino(struct lode_txn *t, uint64_t *ino);
int lode_store_alloc_target_id(struct lode_txn *t, uint32_t *id);

/* ---- backup and restore (lodectl mds backup, lode-mds --restore) ---- */

/* Writes a compacted copy of the store to fd, in one read transaction: writers go on and
 * the copy is the store as it was when it began. Blocks until done. Returns 0 or -errno. */
int lode_store_copy_compact(struct lode_store *st, int fd);

/* Inode numbers skipped past a backup's next_ino when the store it replaces cannot tell
 * how many were handed out since (it is lost, unreadable or another cluster's): files
 * created after the backup left objects numbered from there, and a new file must never
 * meet one. 2^32 creates between a backup and its restore is taken as impossible. */
#define LODE_RESTORE_INO_GAP (1ull << 32)

struct lode_restore_info {
	uint64_t cluster_id;
	uint64_t backup_next_ino; /* the backup's */
	uint64_t next_ino;	  /* the restored store's */
	bool had_store;		  /* the store replaced was readable and of the same cluster */
};

/*
 * Replaces the store in dir (no server may have it open: hold the directory's lock) with
 * the backup file: checks the backup is a store this server reads, copies it in as
 * dir/data.mdb (durably; the old one is kept as dir/data.mdb.pre-restore), and sets its
 * next inode number past every one handed out before: the replaced store's, if readable
 * and of the same cluster (and its next target id), else the backup's plus
 * LODE_RESTORE_INO_GAP. Returns 0 with info filled, or -errno with a reason in why.
 */
int lode_store_restore(const char *dir, const char *backup, struct lode_restore_info *info,
		       char *why, size_t why_len);

#endif
