/* SPDX-License-Identifier: MIT */
/*
 * The commit log (DIR/data.log): what makes a commit durable with one fdatasync.
 *
 * Without it, making a commit durable syncs the data file and then the sync record
 * (store_sync.h): two syncs, the first of many scattered pages. With it, every top-level
 * commit also appends a record of what it changed (its puts and deletes, store.c) to this
 * file, and making commits durable is one fdatasync of the log. Now and then (a
 * checkpoint, store.c) the store syncs the data file and the sync record as before, and
 * the log starts over from its beginning.
 *
 * Why replaying the log is sound. The synced snapshot stays whole on disk (the store's pin,
 * store_sync.h), so after a power cut the store opens at the snapshot of the last
 * checkpoint, T, and the log holds, in order, every commit since (each record names the
 * LMDB transaction id its commit made). Replaying the records past the store's last
 * transaction, each as one commit, rebuilds exactly the commits after T that reached the
 * disk. After only a crash of the process nothing is rolled back and every record is at or
 * below the store's last transaction: none is replayed.
 *
 * The file has a fixed size, written with zeros when it is created, so that an append
 * overwrites blocks already allocated and its fdatasync writes no file metadata. Each
 * record is {magic u32, payload length u32, epoch u64, seq u64, txnid u64, the data file's
 * inode u64 and device u64, payload, xxh3-64 of all before}. An epoch is a random number
 * drawn at each start over (rewind). Reading starts at offset 0 and stops at the first
 * record that is torn (checksum), of another epoch (left over from before the last
 * rewind), out of sequence, or for another data file (a restored store; by inode only,
 * since a device's number may change when the machine restarts): a record is never
 * applied unless every record before it in its epoch was.
 */
#ifndef LODE_MDS_STORE_LOG_H
#define LODE_MDS_STORE_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LODE_LOG_SIZE  (4u << 20) /* the file */
#define LODE_LOG_HDR   48u	  /* a record's header; the payload follows */
#define LODE_LOG_TRAIL 8u	  /* its checksum */

struct lode_store_log;

/* Opens DIR/data.log (creating it, full size and synced) for the data file data_fd.
 * Returns 0 and *out, or -errno. */
int lode_store_log_open(const char *dir, int data_fd, struct lode_store_log **out);
void lode_store_log_close(struct lode_store_log *l);

/*
 * Calls apply for each whole record of the log's current epoch, in order: txnid and its
 * payload. Stops at the first record that is not whole, and returns what apply returned if
 * that was not 0. Then appends go after the last whole record. Returns 0 or -errno.
 */
typedef int (*lode_log_apply_fn)(void *arg, uint64_t txnid, const uint8_t *payload, size_t len);
int lode_store_log_replay(struct lode_store_log *l, lode_log_apply_fn apply, void *arg);

/* Whether a record of payload_len more fits before the end of the file. */
bool lode_store_log_fits(const struct lode_store_log *l, size_t payload_len);
/*
 * Appends a record, not synced: rec holds LODE_LOG_HDR bytes (filled here), payload_len of
 * payload, and LODE_LOG_TRAIL bytes of room. The caller checked it fits. Returns 0 or
 * -errno (nothing is then appended).
 */
int lode_store_log_append(struct lode_store_log *l, uint64_t txnid, uint8_t *rec,
			  size_t payload_len);
/* Syncs every record appended. Returns 0 or -errno. */
int lode_store_log_sync(struct lode_store_log *l);
/* Starts a new epoch at offset 0: the caller has made every record before durable in the
 * data file (a checkpoint). */
void lode_store_log_rewind(struct lode_store_log *l);
/* After a failed sync: zeros (in the page cache) what the last good sync did not cover, so
 * that a restart in this boot does not replay commits answered with an error. Returns 0 or
 * -errno. */
int lode_store_log_poison(struct lode_store_log *l);
/* Bytes appended since the last rewind. */
size_t lode_store_log_used(const struct lode_store_log *l);

#endif
