/* SPDX-License-Identifier: MIT */
/*
 * liblode: a handle's capability for its file's objects (proto/net/cap.h). The OSS
 * serves a client's object request only with a capability the MDS signed: read for a
 * read-only handle; read and write for a write handle, which the MDS grants only to the
 * holder of the file's write lease. It comes with the OPEN or CREATE reply that made the
 * handle (from CAP_GET if that reply had none) and is renewed by CAP_GET before it
 * expires: once two thirds of its lifetime have passed, the next request on a caller's
 * thread fetches a new one, so a file open for days (or a read spanning many lifetimes)
 * goes on without an error. Requests copy it, so a renewal never changes the bytes of a
 * request in flight; a request that still meets an expired one fails with -EKEYEXPIRED,
 * and the operation renews and runs once more. A renewal the MDS cannot answer (it is
 * restarting) leaves the one held in use until it expires: the data path does not stop
 * with the MDS.
 */
#include <errno.h>
#include <string.h>

#include "client.h"
#include "io.h"

/* Whether rep is a capability for f's objects. */
static bool cap_fits(const struct lode_file *f, const struct lode_wire_cap_rep *rep)
{
	return rep->cap.ino == f->ino && rep->cap.generation == f->layout.generation &&
	       rep->lifetime_ms;
}

/* Makes rep f's capability (f->lock held). Its lifetime is counted from sent_ms, before
 * the request that brought it: the MDS's clock started no earlier. */
static void cap_take(struct lode_file *f, const struct lode_wire_cap_rep *rep, uint64_t sent_ms)
{
	uint64_t got = lode_now_ms();

	f->cap = rep->cap;
	f->cap_fetched_ms = got;
	f->cap_renew_ms = sent_ms + (uint64_t)rep->lifetime_ms * 2 / 3;
	if (f->cap_renew_ms <= got)
		f->cap_renew_ms = got + 1;
	f->cap_expire_ms = sent_ms + rep->lifetime_ms;
}

void lode_client_file_cap_init(struct lode_file *f, const struct lode_wire_cap_rep *rep,
			       uint64_t sent_ms)
{
	if (!cap_fits(f, rep))
		return; /* none: the first object request fetches one */
	pthread_mutex_lock(&f->lock);
	cap_take(f, rep, sent_ms);
	pthread_mutex_unlock(&f->lock);
}

int lode_client_file_cap(struct lode_file *f, bool force, struct lode_wire_cap *out)
{
	struct lode_wire_cap_req req = {
	    .ino = f->ino, .handle = f->handle, .generation = f->layout.generation};
	struct lode_wire_cap_rep rep;
	uint64_t now = lode_now_ms();
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	if (!force && f->cap_renew_ms && now < f->cap_renew_ms) {
		*out = f->cap;
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	pthread_mutex_unlock(&f->lock);

	/* one fetch at a time per handle: the others wait and take its result */
	pthread_mutex_lock(&f->cap_lock);
	pthread_mutex_lock(&f->lock);
	if (f->cap_renew_ms && now < f->cap_renew_ms && (!force || f->cap_fetched_ms >= now)) {
		*out = f->cap;
		pthread_mutex_unlock(&f->lock);
		pthread_mutex_unlock(&f->cap_lock);
		return 0;
	}
	pthread_mutex_unlock(&f->lock);
	req.cred = lode_client_cred(f->c);
	req.rights =
	    (f->flags & 3) == 0 /* O_RDONLY */ ? LODE_CAP_READ : LODE_CAP_READ | LODE_CAP_WRITE;
	rc = lode_client_mds_call(f->c, LODE_OP_CAP_GET, &req, sizeof(req), NULL, 0, &rep,
				  sizeof(rep), NULL, 0, NULL);
	if (!rc && !cap_fits(f, &rep))
		rc = -EPROTO;
	if (!rc) {
		pthread_mutex_lock(&f->lock);
		cap_take(f, &rep, now);
		if (rep.cap.rights & LODE_CAP_WRITE) /* CAP_GET renewed the lease too */
			f->lease_renewed_ms = now;
		*out = f->cap;
		pthread_mutex_unlock(&f->lock);
	} else if (!force) {
		/* the MDS cannot renew it now (restarting, say): the one held serves until it
		 * expires, as the data path never waits for the MDS otherwise */
		pthread_mutex_lock(&f->lock);
		if (f->cap_renew_ms && lode_now_ms() < f->cap_expire_ms) {
			*out = f->cap;
			rc = 0;
		}
		pthread_mutex_unlock(&f->lock);
	}
	pthread_mutex_unlock(&f->cap_lock);
	return rc;
}
