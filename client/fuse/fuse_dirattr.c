/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: a directory's attributes as the last create, unlink or rename in it left them,
 * and a file's as a read-only open found them.
 *
 * After every create the kernel drops what it knows of the parent directory's attributes
 * (its mtime moved) and asks for them again before the next path walk through it:
 * default_permissions checks search permission with them. That GETATTR was one of the
 * three MDS round trips of every create, and so for unlinks and renames. The MDS's
 * CREATE, UNLINK, RMDIR and RENAME replies carry the directories' attributes as they are
 * after the change (lode_file_parent_stat, lode_ll_remove_dirs, lode_ll_rename_dirs), so
 * the GETATTRs of such a directory are answered from them, within attr_timeout, until
 * this mount's next change begins: what a GETATTR to the MDS would have said unless
 * another client changed the directory since, which attr_timeout allows for anyway. Not
 * once only: processes walking through the directory while it changes each find its
 * attributes dropped and ask at the same time, before the first answer is cached (0.7
 * GETATTRs a file reached the MDS in a 64-process storm in one directory, none after).
 *
 * Every change to a directory through this mount (create, unlink, rename, mkdir, setattr,
 * xattrs, ...) runs between lf_dirattr_begin and lf_dirattr_end, each of which begins a
 * new generation: an entry is good only in the generation its change ended in, so any
 * later change makes it stale, and a change keeps what its reply said only if no other
 * change began, ended or ran beside it (its reply might then be older than the other's
 * effect at the MDS). Concurrent changes thus cost the GETATTR they always did.
 *
 * A read-only open that drops the kernel's pages drops its attributes too, and the first
 * read asks for them again: the open's own attributes answer that GETATTR
 * (lf_dirattr_offer), by the same rule: kept only if no change of this mount began or ran
 * while the open asked the MDS, good until the next one begins. Changes to a file alone
 * (a writer's last close, a truncating open) count for these (ogen) but leave the
 * directories' entries be: each forgets the file's entry once made (lf_dirattr_forget), and
 * a file that is being written is never answered from here (lf_getattr_op).
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

uint64_t lf_dirattr_begin(struct lode_fuse *lf)
{
	uint64_t g;

	pthread_mutex_lock(&lf->alock);
	lf->ainflight++;
	lf->ogen++;
	g = ++lf->agen; /* every entry learned before is of an older generation now */
	pthread_mutex_unlock(&lf->alock);
	return g;
}

void lf_dirattr_end(struct lode_fuse *lf, uint64_t gen, const struct lode_stat *st, unsigned n)
{
	pthread_mutex_lock(&lf->alock);
	/* kept only when no other change ran beside this one: one that overlapped it may
	 * have reached the MDS after it, and then these attributes are older than it */
	bool alone = lf->ainflight == 1 && lf->agen == gen;

	lf->agen++;
	lf->ogen++;
	for (unsigned i = 0; alone && i < n; i++) {
		struct lf_dirattr *e = &lf->attrs[st[i].ino % LF_DIRATTR_SLOTS];

		if (!st[i].ino)
			continue;
		e->st = st[i];
		e->gen = lf->agen;
		e->learned_s = now_s();
	}
	lf->ainflight--;
	pthread_mutex_unlock(&lf->alock);
}

uint64_t lf_dirattr_peek(struct lode_fuse *lf)
{
	uint64_t g;

	pthread_mutex_lock(&lf->alock);
	g = lf->ainflight ? 0 : lf->ogen;
	pthread_mutex_unlock(&lf->alock);
	return g;
}

bool lf_dirattr_offer(struct lode_fuse *lf, uint64_t gen, const struct lode_stat *st)
{
	struct lf_dirattr *e = &lf->attrs[st->ino % LF_DIRATTR_SLOTS];
	bool newest;

	/* never older than what another open found, even once that one's entry expired or
	 * left its slot: the kernel would take it for the next GETATTR sent after this
	 * open dropped its attributes, and shrink the file under a reader */
	pthread_mutex_lock(&lf->alock);
	newest = lf_version_newest(lf, st);
	if (newest && gen && st->ino && lf->ogen == gen && !lf->ainflight) {
		e->st = *st;
		e->gen = lf->agen;
		e->learned_s = now_s();
	}
	pthread_mutex_unlock(&lf->alock);
	return newest;
}

void lf_dirattr_forget(struct lode_fuse *lf, uint64_t ino)
{
	struct lf_dirattr *e = &lf->attrs[ino % LF_DIRATTR_SLOTS];

	pthread_mutex_lock(&lf->alock);
	lf->ogen++; /* an open's attributes fetched before now are older than the change */
	if (e->st.ino == ino)
		memset(e, 0, sizeof(*e));
	pthread_mutex_unlock(&lf->alock);
}

bool lf_dirattr_get(struct lode_fuse *lf, uint64_t ino, struct lode_stat *st, double *ttl)
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
		} else {
			memset(e, 0, sizeof(*e));
		}
	}
	pthread_mutex_unlock(&lf->alock);
	return found;
}
