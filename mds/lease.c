/* SPDX-License-Identifier: MIT */
/*
 * Write handles and leases: each handle sits on two hash chains, one by handle id (for
 * COMMIT/CLOSE) and one by inode (to find the other writers of a file at OPEN).
 *
 * A write handle's number is all that CAP_GET for writing, COMMIT and CLOSE ask of a
 * writer (whoever names it holds the lease), so it is 63 random bits from the kernel's
 * generator, never a count another client could guess from its own handles. Read handles
 * hold nothing and stay a count.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/random.h>

#include "lease.h"

#define NBUCKETS 1024u

struct handle {
	struct handle *next;	 /* chain by id */
	struct handle *next_ino; /* chain by inode */
	uint64_t id;
	uint64_t ino;
	uint64_t expires_ms;
	int holds;	/* 0 once another handle took the lease over */
	bool exclusive; /* LODE_OPEN_EXCLUSIVE: the file's only writer */
};

/* A handle not renewed for this many lease periods belongs to a client that is gone (no
 * connection-closed callback tells us): it is forgotten at the next sweep. */
#define DEAD_LEASES 10u
#define SWEEP_EVERY 256u

#define RANDOM_IDS 64u /* handle numbers drawn per getrandom() */

struct lode_leases {
	unsigned lease_ms;
	unsigned count;
	unsigned acquires;
	unsigned nrandom; /* unused numbers left in random[] */
	uint64_t random[RANDOM_IDS];
	struct handle *by_id[NBUCKETS];
	struct handle *by_ino[NBUCKETS];
};

static _Atomic uint64_t next_handle = 1;

uint64_t lode_lease_read_handle(void)
{
	return atomic_fetch_add(&next_handle, 1) | LODE_LEASE_READ_BIT;
}

int lode_leases_create(struct lode_leases **out, unsigned lease_ms)
{
	struct lode_leases *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return -ENOMEM;
	ls->lease_ms = lease_ms ? lease_ms : LODE_LEASE_MS;
	*out = ls;
	return 0;
}

void lode_leases_destroy(struct lode_leases *ls)
{
	if (!ls)
		return;
	for (unsigned b = 0; b < NBUCKETS; b++) {
		struct handle *h = ls->by_id[b];

		while (h) {
			struct handle *next = h->next;

			free(h);
			h = next;
		}
	}
	free(ls);
}

unsigned lode_leases_ms(const struct lode_leases *ls)
{
	return ls->lease_ms;
}

unsigned lode_leases_count(const struct lode_leases *ls)
{
	return ls->count;
}

static unsigned bucket(uint64_t v)
{
	return (unsigned)((v * 0x9e3779b97f4a7c15ull) >> 54) % NBUCKETS;
}

static struct handle *find(struct lode_leases *ls, uint64_t id)
{
	struct handle *h;

	for (h = ls->by_id[bucket(id)]; h; h = h->next) {
		if (h->id == id)
			return h;
	}
	return NULL;
}

/*
 * Whether a new write handle of ino (exclusive or not) must wait: another handle of ino
 * holds an unexpired lease that conflicts with it (one of the two is exclusive). Handles
 * whose lease expired and that conflict are taken over (their commits fail with -ESTALE
 * from then on) when take is set.
 */
static bool conflicts(struct lode_leases *ls, uint64_t ino, bool exclusive, uint64_t now_ms,
		      bool take)
{
	bool busy = false;

	for (struct handle *h = ls->by_ino[bucket(ino)]; h; h = h->next_ino) {
		if (h->ino != ino || !h->holds || !(exclusive || h->exclusive))
			continue;
		if (h->expires_ms > now_ms)
			busy = true;
		else if (take)
			h->holds = 0;
	}
	return busy;
}

static void unlink_ino(struct lode_leases *ls, struct handle *h)
{
	struct handle **pp;

	for (pp = &ls->by_ino[bucket(h->ino)]; *pp != h; pp = &(*pp)->next_ino)
		;
	*pp = h->next_ino;
}

static void sweep(struct lode_leases *ls, uint64_t now_ms)
{
	uint64_t dead = (uint64_t)ls->lease_ms * DEAD_LEASES;

	for (unsigned b = 0; b < NBUCKETS; b++) {
		struct handle **pp = &ls->by_id[b];

		while (*pp) {
			struct handle *h = *pp;

			if (h->expires_ms + dead >= now_ms) {
				pp = &h->next;
				continue;
			}
			*pp = h->next;
			unlink_ino(ls, h);
			free(h);
			ls->count--;
		}
	}
}

/* A number for a new write handle: random, not 0, no read bit, not in use. */
static int new_id(struct lode_leases *ls, uint64_t *out)
{
	for (;;) {
		uint64_t id;

		if (!ls->nrandom) {
			ssize_t n = getrandom(ls->random, sizeof(ls->random), 0);

			if (n != (ssize_t)sizeof(ls->random))
				return n < 0 ? -errno : -EIO;
			ls->nrandom = RANDOM_IDS;
		}
		id = ls->random[--ls->nrandom] & ~LODE_LEASE_READ_BIT;
		if (id && !find(ls, id)) {
			*out = id;
			return 0;
		}
	}
}

int lode_lease_acquire(struct lode_leases *ls, uint64_t ino, uint64_t now_ms, bool exclusive,
		       uint64_t *handle)
{
	struct handle *h;
	uint64_t id = 0;
	unsigned b;
	int rc;

	/* sweep first: it may free handles conflicts() would look at */
	if (++ls->acquires % SWEEP_EVERY == 0)
		sweep(ls, now_ms);
	if (conflicts(ls, ino, exclusive, now_ms, false))
		return -EBUSY;
	rc = new_id(ls, &id);
	if (rc)
		return rc;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	conflicts(ls, ino, exclusive, now_ms, true);
	h->id = id;
	h->ino = ino;
	h->expires_ms = now_ms + ls->lease_ms;
	h->holds = 1;
	h->exclusive = exclusive;
	b = bucket(h->id);
	h->next = ls->by_id[b];
	ls->by_id[b] = h;
	b = bucket(ino);
	h->next_ino = ls->by_ino[b];
	ls->by_ino[b] = h;
	ls->count++;
	*handle = h->id;
	return 0;
}

int lode_lease_renew(struct lode_leases *ls, uint64_t handle, uint64_t ino, uint64_t now_ms)
{
	struct handle *h = find(ls, handle);

	if (!h || h->ino != ino)
		return -EBADF;
	if (!h->holds)
		return -ESTALE;
	h->expires_ms = now_ms + ls->lease_ms;
	return 0;
}

int lode_lease_renew_exclusive(struct lode_leases *ls, uint64_t handle, uint64_t ino,
			       uint64_t now_ms)
{
	int rc = lode_lease_renew(ls, handle, ino, now_ms);
	struct handle *h;

	if (rc)
		return rc;
	h = find(ls, handle);
	return h->exclusive ? 0 : -EBUSY;
}

int lode_lease_release(struct lode_leases *ls, uint64_t handle, uint64_t ino)
{
	struct handle **pp;

	for (pp = &ls->by_id[bucket(handle)]; *pp; pp = &(*pp)->next) {
		struct handle *h = *pp;

		if (h->id != handle)
			continue;
		if (h->ino != ino)
			return -EBADF;
		*pp = h->next;
		unlink_ino(ls, h);
		free(h);
		ls->count--;
		return 0;
	}
	return -EBADF;
}
