/* SPDX-License-Identifier: MIT */
/*
 * lode_leases: open write handles of files and their leases, in memory.
 *
 * Touched only in the writer's run()/done(), one op at a time (no lock of its own): OPEN/CREATE
 * with LODE_OPEN_WRITE take a write handle, COMMIT renews its lease, CLOSE releases it. A file may
 * have many write handles at once (N-to-1 writers: MPI-IO, HDF5, IOR's shared file), from any
 * number of clients; what their writes make of the data is the OSS's business (per-object
 * serialization, docs/design.md "Many writers of one file"), and their commits only ever
 * grow the size (LODE_COMMIT_EXTEND). A handle opened with LODE_OPEN_EXCLUSIVE (a repair,
 * which copies objects that no write may change meanwhile) is the file's only writer: it
 * waits for no other live handle, and every other write open waits for it (-EBUSY).
 *
 * A lease not renewed within lease_ms no longer counts against an exclusive open (nor an
 * exclusive one against others): the conflicting open takes it over, and the old handle
 * then stays valid for CLOSE but its commits fail with -ESTALE. Read handles are not
 * tracked here: they are numbered by lode_lease_read_handle() (any thread) and carry
 * LODE_LEASE_READ_BIT, so a CLOSE can tell them apart without the writer.
 *
 * Handles and leases do not survive a restart: a writer that finds its handle unknown
 * (-EBADF) must open again.
 */
#ifndef LODE_MDS_LEASE_H
#define LODE_MDS_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#define LODE_LEASE_MS	    60000u
#define LODE_LEASE_READ_BIT (1ull << 63)

struct lode_leases;

/* lease_ms 0 means LODE_LEASE_MS. Returns 0 or -ENOMEM. */
int lode_leases_create(struct lode_leases **out, unsigned lease_ms);
void lode_leases_destroy(struct lode_leases *ls);
unsigned lode_leases_ms(const struct lode_leases *ls);

/* A fresh read handle. Any thread. */
uint64_t lode_lease_read_handle(void);

/* A new write handle of ino, exclusive or shared. -EBUSY while a conflicting handle (an
 * exclusive one, or for an exclusive request any other) holds an unexpired lease; -ENOMEM. */
int lode_lease_acquire(struct lode_leases *ls, uint64_t ino, uint64_t now_ms, bool exclusive,
		       uint64_t *handle);
/* Checks that handle is a live write handle of ino holding the lease, and renews it.
 * -EBADF: unknown handle or another inode; -ESTALE: the lease was taken over. */
int lode_lease_renew(struct lode_leases *ls, uint64_t handle, uint64_t ino, uint64_t now_ms);
/* As lode_lease_renew, and -EBUSY unless the handle is exclusive (no write can race it). */
int lode_lease_renew_exclusive(struct lode_leases *ls, uint64_t handle, uint64_t ino,
			       uint64_t now_ms);
/* Forgets the handle (-EBADF if unknown or of another inode). */
int lode_lease_release(struct lode_leases *ls, uint64_t handle, uint64_t ino);
/* Number of live write handles (for tests and logs). */
unsigned lode_leases_count(const struct lode_leases *ls);

#endif
