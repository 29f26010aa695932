/* SPDX-License-Identifier: MIT */
/*
 * lode_leases: open write handles and the single-writer lease of each file, in memory.
 *
 * Touched only by the writer thread (no lock): OPEN/CREATE with LODE_OPEN_WRITE take the
 * lease, COMMIT renews it, CLOSE releases it. A lease not renewed within lease_ms may be
 * taken over by another writer; the old handle then stays valid for CLOSE but its commits
 * fail with -ESTALE. Read handles are not tracked here: they are numbered by
 * lode_lease_read_handle() (any thread) and carry LODE_LEASE_READ_BIT, so a CLOSE can tell
 * them apart without the writer.
 *
 * Handles and leases do not survive a restart: a writer that finds its handle unknown
 * (-EBADF) must open again.
 */
#ifndef LODE_MDS_LEASE_H
#define LODE_MDS_LEASE_H

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

/* Takes ino's write lease for a new handle. -EBUSY while another handle holds an unexpired
 * lease; -ENOMEM. */
int lode_lease_acquire(struct lode_leases *ls, uint64_t ino, uint64_t now_ms, uint64_t *handle);
/* Checks that handle is a live write handle of ino holding the lease, and renews it.
 * -EBADF: unknown handle or another inode; -ESTALE: the lease was taken over. */
int lode_lease_renew(struct lode_leases *ls, uint64_t handle, uint64_t ino, uint64_t now_ms);
/* Forgets the handle (-EBADF if unknown or of another inode). */
int lode_lease_release(struct lode_leases *ls, uint64_t handle, uint64_t ino);
/* Number of live write handles (for tests and logs). */
unsigned lode_leases_count(const struct lode_leases *ls);

#endif
