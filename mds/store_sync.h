/* SPDX-License-Identifier: MIT */
/*
 * The sync record (DIR/data.sync): what lets the MDS commit without fsync and still never
 * open a torn store after a power cut.
 *
 * The store's commits skip LMDB's own syncs (MDB_NOSYNC). A commit whose client waits for
 * durability is followed by lode_store_sync(), which syncs the data file and then writes
 * this record: the transaction now durable, the two meta pages that name it, the data
 * file's identity and the machine's boot id. The commits after it (a lazy namespace's,
 * LODE_WIRE_F_LAZY) stay in the page cache until the next sync. A power cut may then leave
 * on disk a meta page whose tree pages never got there. Two things make that harmless:
 * - while it runs, the store holds a read transaction on the recorded snapshot, so no
 *   commit reuses one of its pages: that snapshot stays whole on disk;
 * - at open, a record from another boot (the machine restarted: its page cache is gone)
 *   puts its meta pages back, so LMDB opens the recorded snapshot. Only what was never
 *   synced is lost: changes answered lazily. A record from this boot means only the
 *   process died; the page cache holds every commit, and nothing is rolled back.
 * After a failed sync the page cache cannot be trusted either (pages whose write failed
 * stay cached, marked clean): the record is then marked as from no boot
 * (lode_sync_record_poison), so the next open rolls back to it even in this boot.
 * The record has two slots, written in turn and each checksummed, so a cut during its
 * write leaves the other.
 */
#ifndef LODE_MDS_STORE_SYNC_H
#define LODE_MDS_STORE_SYNC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct lode_sync_record;

/* Opens (creating) DIR/data.sync for the data file data_fd of page size psize. Returns 0
 * and *out, or -errno. */
int lode_sync_record_open(const char *dir, int data_fd, unsigned psize,
			  struct lode_sync_record **out);
/* Records txnid as durable: copies the data file's meta pages (synced by the caller) into
 * the next slot and syncs it. Returns 0 or -errno. */
int lode_sync_record_write(struct lode_sync_record *r, uint64_t txnid);
/* After a sync failed: marks the newest whole slot as from no boot, in the page cache only
 * (the disk is in doubt; after a reboot any record is from another boot anyway), so that
 * the next open rolls back to it as after a power cut. Returns 0 or -errno. */
int lode_sync_record_poison(struct lode_sync_record *r);
void lode_sync_record_close(struct lode_sync_record *r);

/* fsync of the directory dir, so that the names made in it are durable. 0 or -errno. */
int lode_store_sync_dir(const char *dir);
/* Copies the file from to to (created 0600, or truncated), synced. Returns 0 or -errno. */
int lode_store_copy_file(const char *from, const char *to);

/*
 * Before the environment in dir is opened: if the record is for this data file and from
 * another boot, writes its meta pages back into the data file (and syncs it), so that the
 * recorded snapshot is the newest. note (if non-NULL) then says what was rolled back;
 * else it is empty. A missing record, one for another file (a restored store) or from
 * this boot changes nothing. Returns 0 or -errno (why says).
 */
int lode_sync_record_recover(const char *dir, char *note, size_t note_len, char *why,
			     size_t why_len);

#endif
