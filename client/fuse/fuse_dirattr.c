/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: a directory's attributes as the last create in it left them.
 *
 * After every create the kernel drops what it knows of the parent directory's attributes
 * (its mtime moved) and asks for them again before the next path walk through it:
 * default_permissions checks search permission with them. That GETATTR was one of the
 * three MDS round trips of every create. The MDS's CREATE reply carries the parent's
 * attributes as they are after the create (lode_file_parent_stat), so the next GETATTR of
 * that directory is answered from them, once, within attr_timeout of the create: what a
 * GETATTR to the MDS would have said unless another client changed the directory since,
 * which attr_timeout allows for anyway.
 *
 * This mount's own other changes to any directory (unlink, rename, mkdir, setattr, ...)
 * forget every entry, at their start and their end (lf_dirattr_forget): a create whose
 * reply arrived around one of them keeps nothing, since its parent's attributes may be
 * from before it.
 */
#include <string.h>
#include <time.h>

#include "lode_fuse.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t lf_dirattr_gen(struct lode_fuse *lf)
{
	uint64_t g;

	pthread_mutex_lock(&lf->alock);
	g = lf->agen;
	pthread_mutex_unlock(&lf->alock);
	return g;
}

void lf_dirattr_forget(struct lode_fuse *lf)
{
	pthread_mutex_lock(&lf->alock);
	lf->agen++; /* every entry learned before is of an older generation now */
	pthread_mutex_unlock(&lf->alock);
}

void lf_dirattr_learn(struct lode_fuse *lf, uint64_t gen, const struct lode_stat *st)
{
	struct lf_dirattr *e = &lf->attrs[st->ino % LF_DIRATTR_SLOTS];

	pthread_mutex_lock(&lf->alock);
	/* nothing changed through this mount since the create began; of two creates, the
	 * later attributes win */
	if (gen == lf->agen &&
	    (e->gen != gen || e->st.ino != st->ino || e->st.ctime_ns <= st->ctime_ns)) {
		e->st = *st;
		e->gen = gen;
		e->learned_s = now_s();
	}
	pthread_mutex_unlock(&lf->alock);
}

bool lf_dirattr_take(struct lode_fuse *lf, uint64_t ino, struct lode_stat *st, double *ttl)
{
	struct lf_dirattr *e = &lf->attrs[ino % LF_DIRATTR_SLOTS];
	bool found = false;

	pthread_mutex_lock(&lf->alock);
	if (e->st.ino == ino && ino && e->gen == lf->agen) {
		double left = lf->o.attr_timeout - (now_s() - e->learned_s);

		if (left > 0) {
			*st = e->st;
			*ttl = left;
			found = true;
		}
		memset(e, 0, sizeof(*e)); /* once */
	}
	pthread_mutex_unlock(&lf->alock);
	return found;
}
