/* SPDX-License-Identifier: MIT */
/*
 * lodectl drain, target list|remove|undrain, rebalance: moving copies between targets.
 *
 * Every move is lode_move_copy() (client/move.c): copy, verify, switch the layout at the
 * MDS if it is still what was read, and leave the old object to its target to delete after
 * the orphan grace. These commands decide what to move where. They read every file's
 * layout from the MDS (the FSCK_FILES pages, one read-only snapshot per page, so clients
 * are never held up) and account each target's use from the layouts: the copies it holds,
 * each an object's length. That figure is exact at once, where the targets' own reports
 * trail by seconds and still count old copies waiting for the grace; a second run after a
 * killed one plans from what was really switched.
 *
 * A file whose write lease is held (a writer at work) is skipped with EBUSY and tried again
 * once a second for up to --wait seconds: movers never take a file from its writer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "auth.h"
#include "lodectl.h"
#include "rpc.h"
#include "wire_spec.h"

#define PAGE_FILES 4096
#define MIB	   ((double)(1u << 20))
/* rebalance aims this close to the mean (points of used fraction): inside the 5 promised */
#define AIM_POINTS 2.0

struct mfile {
	struct lode_wire_fsck_file h;
	uint32_t targets[LODE_LAYOUT_TARGETS_MAX];
	uint64_t planned; /* rebalance: copies the plan moves (one per stripe at most) */
};

struct mtarget {
	uint32_t id;
	bool up, active;
	uint64_t total; /* as the target reports it (its --capacity, or its disk) */
	uint64_t used;	/* from the layouts: bytes of the copies it holds */
	uint64_t free;	/* as the target reports it (less its reserve), less what the plan
			 * puts on it */
	size_t cursor;	/* rebalance's plan: files before it have nothing more to give */
	char addr[128];
};

/* One planned move. */
struct mmove {
	uint64_t ino;
	uint32_t index, from, to;
	uint64_t bytes;
	bool done;
};

struct mover {
	struct lodectl *ctl;
	struct lode_rpc *rpc;
	struct lode_rpc_conn *mds;
	struct mfile *files;
	size_t nfiles, fcap;
	struct mtarget *t;
	unsigned nt;
	struct mmove *moves;
	size_t nmoves, mcap;
	double rate; /* bytes/s, 0: no limit */
	uint64_t wait_s;
	/* results */
	uint64_t bytes_moved, copies_moved, cleaned;
	double t0;
};

static uint64_t object_len(const struct mfile *f, unsigned stripe)
{
	uint64_t ss = f->h.stripe_size, row = ss * f->h.stripe_count;
	uint64_t full = f->h.size / row, rem = f->h.size % row;
	uint64_t part = rem > (uint64_t)stripe * ss ? rem - (uint64_t)stripe * ss : 0;

	return full * ss + (part < ss ? part : ss);
}

/* The mover's own connection proves the key lodectl's client does, in its best role:
 * FSCK pages are for admins. */
static int mover_connect(struct mover *m)
{
	const char *path = m->ctl->key_file ? m->ctl->key_file : getenv("LODE_KEY_FILE");
	struct lode_keyring kr;
	char why[256];
	int rc = lode_rpc_create(&m->rpc, m->ctl->timeout_ms ? m->ctl->timeout_ms : 30000);

	if (rc)
		return lodectl_fail(m->ctl, rc, "cannot start the rpc client"), rc;
	if (!path || !*path) {
		rc = lode_rpc_set_auth(m->rpc, NULL, LODE_ROLE_ADMIN);
	} else {
		rc = lode_keyring_load(path, &kr, why, sizeof(why));
		if (rc)
			return lodectl_fail_as(m->ctl, rc, "%s", why), rc;
		rc = lode_rpc_set_auth(m->rpc, &kr, lode_keyring_best_role(&kr));
		sodium_memzero(&kr, sizeof(kr));
	}
	if (!rc)
		rc = lode_rpc_conn_open(m->rpc, m->ctl->mds_addr, &m->mds);
	if (rc)
		return lodectl_fail(m->ctl, rc, "cannot reach the MDS at %s", m->ctl->mds_addr), rc;
	return 0;
}

static void mover_free(struct mover *m)
{
	if (m->rpc)
		lode_rpc_destroy(m->rpc);
	free(m->files);
	free(m->t);
	free(m->moves);
}

static struct mtarget *target_of(struct mover *m, uint32_t id)
{
	for (unsigned i = 0; i < m->nt; i++)
		if (m->t[i].id == id)
			return &m->t[i];
	return NULL;
}

/* The targets as the MDS knows them now (used is filled by load_files). */
static int load_targets(struct mover *m)
{
	struct lode_target_info *ti = calloc(LODE_TARGETS_MAX, sizeof(*ti));
	int n;

	if (!ti)
		return -ENOMEM;
	n = lode_targets(m->ctl->client, ti, LODE_TARGETS_MAX);
	if (n < 0) {
		free(ti);
		return n;
	}
	free(m->t);
	m->t = calloc((size_t)n + 1, sizeof(*m->t));
	if (!m->t) {
		free(ti);
		return -ENOMEM;
	}
	m->nt = 0;
	for (int i = 0; i < n && i < LODE_TARGETS_MAX; i++) {
		struct mtarget *t = &m->t[m->nt++];

		t->id = ti[i].id;
		t->up = ti[i].up;
		t->active = ti[i].admin == LODE_TARGET_ADMIN_ACTIVE;
		t->total = ti[i].bytes_total;
		t->free = ti[i].bytes_free;
		snprintf(t->addr, sizeof(t->addr), "%s", ti[i].addr);
	}
	free(ti);
	return 0;
}

/* Every regular file's layout, page by page, and each target's use from them. */
static int load_files(struct mover *m)
{
	size_t cap = LODE_DATA_MAX;
	char *buf = malloc(cap);
	uint64_t cursor = 0;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	m->nfiles = 0;
	for (unsigned i = 0; i < m->nt; i++)
		m->t[i].used = 0;
	for (;;) {
		struct lode_wire_fsck_rep rep;
		size_t pos = 0, got;

		rc = lodectl_fsck_page(m->mds, LODE_FSCK_FILES, cursor, PAGE_FILES, &rep, buf, cap);
		if (rc < 0)
			break;
		got = (size_t)rc;
		rc = 0;
		for (uint32_t i = 0; i < rep.count; i++) {
			struct mfile f;
			size_t n, len;

			if (pos + sizeof(f.h) > got) {
				rc = -EPROTO;
				goto out;
			}
			memcpy(&f.h, buf + pos, sizeof(f.h));
			n = (size_t)f.h.stripe_count * f.h.mirror_count;
			len = (sizeof(f.h) + 4 * n + 7) & ~(size_t)7;
			if (n == 0 || n > LODE_LAYOUT_TARGETS_MAX || !f.h.stripe_size ||
			    pos + len > got) {
				rc = -EPROTO;
				goto out;
			}
			memset(f.targets, 0, sizeof(f.targets));
			f.planned = 0;
			memcpy(f.targets, buf + pos + sizeof(f.h), 4 * n);
			pos += len;
			if (m->nfiles == m->fcap) {
				size_t nc = m->fcap ? m->fcap * 2 : 256;
				struct mfile *nf = realloc(m->files, nc * sizeof(*nf));

				if (!nf) {
					rc = -ENOMEM;
					goto out;
				}
				m->files = nf;
				m->fcap = nc;
			}
			m->files[m->nfiles++] = f;
			for (unsigned k = 0; k < n; k++) {
				struct mtarget *t = target_of(m, f.targets[k]);

				if (t)
					t->used += object_len(&f, k / f.h.mirror_count);
			}
		}
		if (rep.eof || rep.count == 0)
			break;
		cursor = rep.next;
	}
out:
	free(buf);
	return rc;
}

static bool stripe_holds(const struct mfile *f, unsigned index, uint32_t id)
{
	unsigned mc = f->h.mirror_count, first = index - index % mc;

	for (unsigned k = first; k < first + mc; k++)
		if (f->targets[k] == id)
			return true;
	return false;
}

static double fraction(const struct mtarget *t)
{
	return t->total ? (double)t->used / (double)t->total : 0;
}

static int add_move(struct mover *m, const struct mfile *f, unsigned index, uint32_t to)
{
	struct mmove *mv;

	if (m->nmoves == m->mcap) {
		size_t nc = m->mcap ? m->mcap * 2 : 256;
		struct mmove *nm = realloc(m->moves, nc * sizeof(*nm));

		if (!nm)
			return -ENOMEM;
		m->moves = nm;
		m->mcap = nc;
	}
	mv = &m->moves[m->nmoves++];
	*mv = (struct mmove){.ino = f->h.ino,
			     .index = index,
			     .from = f->targets[index],
			     .to = to,
			     .bytes = object_len(f, index / f->h.mirror_count)};
	return 0;
}

/* The active, up target with the lowest used fraction that may take copy index of f (len
 * bytes) and has room for it. */
static struct mtarget *least_used(struct mover *m, const struct mfile *f, unsigned index,
				  uint64_t len)
{
	struct mtarget *best = NULL;

	for (unsigned i = 0; i < m->nt; i++) {
		struct mtarget *t = &m->t[i];

		if (!t->up || !t->active || !t->total || stripe_holds(f, index, t->id))
			continue;
		if (t->free < len || t->free - len < LODE_TARGET_FULL_BYTES)
			continue; /* full, or would be: its reserve stays free */
		if (!best || fraction(t) < fraction(best))
			best = t;
	}
	return best;
}

static void sleep_s(double s)
{
	struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (long)s) * 1e9)};

	nanosleep(&ts, NULL);
}

/*
 * Runs the planned moves. A move whose file a writer holds or that waits for an old
 * copy's deletion (EBUSY), or that has no good copy up to read (EAGAIN), is tried again once a
 * second for up to wait_s seconds; a move whose copy changed meanwhile (ESTALE) is dropped (the
 * next run plans afresh). Returns the moves not done.
 */
static size_t run_moves(struct mover *m, struct lodectl_progress *p, int *first_err)
{
	double deadline = lodectl_now() + (double)m->wait_s;
	size_t left;

	for (;;) {
		left = 0;
		for (size_t i = 0; i < m->nmoves; i++) {
			struct mmove *mv = &m->moves[i];
			uint64_t bytes = 0;
			int rc;

			if (mv->done)
				continue;
			rc = lode_move_copy(m->ctl->client, mv->ino, mv->index, mv->from, mv->to,
					    &bytes);
			if (rc == -EBUSY || rc == -EAGAIN) {
				left++;
				continue;
			}
			mv->done = true;
			if (rc == 0) {
				m->bytes_moved += bytes;
				m->copies_moved++;
				lodectl_progress_add(p, mv->bytes);
				if (m->rate > 0) { /* --rate: keep the average under it */
					double ahead = (double)m->bytes_moved / m->rate -
						       (lodectl_now() - m->t0);

					if (ahead > 0)
						sleep_s(ahead);
				}
			} else if (rc == -ESTALE) {
				lodectl_progress_add(p, mv->bytes); /* changed or gone: replanned */
			} else if (!*first_err) {
				*first_err = rc;
				lodectl_progress_add(p, mv->bytes);
			}
		}
		if (!left || lodectl_now() >= deadline)
			break;
		sleep_s(1);
	}
	return left;
}

static int begin(struct mover *m, struct lodectl *ctl)
{
	int rc;

	m->ctl = ctl;
	m->t0 = lodectl_now();
	rc = mover_connect(m);
	if (rc)
		return rc;
	/* first what a killed run left: destination objects of moves never switched */
	rc = lode_move_cleanup(ctl->client);
	if (rc < 0)
		return lodectl_fail(ctl, rc, "cannot clean up the moves an earlier run left"), rc;
	m->cleaned = (uint64_t)rc;
	rc = load_targets(m);
	if (!rc)
		rc = load_files(m);
	if (rc)
		return lodectl_fail(ctl, rc, "cannot read the layouts from the MDS"), rc;
	return 0;
}

static bool parse_target(struct lodectl *ctl, const char *s, uint32_t *id)
{
	uint64_t v;

	if (lodectl_parse_number(s, false, 1, UINT32_MAX, &v)) {
		lodectl_usage_error(ctl, "TARGET must be a target id (lodectl target list): %s", s);
		return false;
	}
	*id = (uint32_t)v;
	return true;
}

static void json_targets(struct mover *m, json_object *arr)
{
	for (unsigned i = 0; i < m->nt; i++) {
		json_object *o = json_object_new_object();

		json_add_u64(o, "id", m->t[i].id);
		json_add_u64(o, "bytes_total", m->t[i].total);
		json_add_u64(o, "bytes_held", m->t[i].used);
		json_add_double(o, "used_percent", 100 * fraction(&m->t[i]));
		json_object_array_add(arr, o);
	}
}

/* ---- lodectl drain ---- */

int cmd_drain(struct lodectl *ctl, int argc, char **argv)
{
	struct mover m = {0};
	uint64_t wait_s = 300, rate_mb = 0, total = 0, left_copies = 0;
	const struct lodectl_opt opts[] = {
	    {"--wait", NULL, LODECTL_OPT_UINT, &wait_s, 0, 86400},
	    {"--rate", NULL, LODECTL_OPT_UINT, &rate_mb, 1, 1u << 20},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	struct lodectl_progress *p;
	struct mtarget *src;
	char *pos[1];
	uint32_t id;
	size_t left;
	int rc, err = 0;

	if (lodectl_parse(ctl, argc, argv, opts, 1, 1, pos) < 0)
		return ctl->exit;
	if (!parse_target(ctl, pos[0], &id))
		return LODECTL_EXIT_USAGE;
	rc = lode_target_set_admin(ctl->client, id, LODE_TARGET_ADMIN_DRAINING);
	if (rc)
		return lodectl_fail(ctl, rc, "cannot mark target %u draining", id);
	m.wait_s = wait_s;
	m.rate = (double)rate_mb * MIB;
	if (begin(&m, ctl)) {
		mover_free(&m);
		return LODECTL_EXIT_FAIL;
	}
	src = target_of(&m, id);
	/* every copy on the target, each to the least used target that may take it */
	for (size_t i = 0; i < m.nfiles && src; i++) {
		struct mfile *f = &m.files[i];

		for (unsigned k = 0; k < (unsigned)f->h.stripe_count * f->h.mirror_count; k++) {
			struct mtarget *to;
			uint64_t len = object_len(f, k / f->h.mirror_count);

			if (f->targets[k] != id)
				continue;
			to = least_used(&m, f, k, len);
			if (!to) {
				left_copies++;
				continue;
			}
			rc = add_move(&m, f, k, to->id);
			if (rc) {
				mover_free(&m);
				return lodectl_fail(ctl, rc, "cannot plan the drain");
			}
			to->used += len;
			to->free -= len;
			src->used -= len;
			total += len;
		}
	}
	p = lodectl_progress_start(ctl, "drain", total);
	left = run_moves(&m, p, &err);
	lodectl_progress_end(p);
	/* what the MDS says now: the target holds nothing, or what */
	rc = load_targets(&m);
	if (!rc)
		rc = load_files(&m);
	if (rc) {
		mover_free(&m);
		return lodectl_fail(ctl, rc, "cannot read the layouts back");
	}
	src = target_of(&m, id);
	left_copies = 0;
	for (size_t i = 0; i < m.nfiles; i++)
		for (unsigned k = 0;
		     k < (unsigned)m.files[i].h.stripe_count * m.files[i].h.mirror_count; k++)
			if (m.files[i].targets[k] == id)
				left_copies++;
	json_add_u64(ctl->out, "target", id);
	json_add_u64(ctl->out, "copies_moved", m.copies_moved);
	json_add_u64(ctl->out, "bytes_moved", m.bytes_moved);
	json_add_u64(ctl->out, "copies_left", left_copies);
	json_add_u64(ctl->out, "moves_busy", left);
	json_add_u64(ctl->out, "moves_cleaned_up", m.cleaned);
	if (!ctl->json && !ctl->quiet)
		printf("target %u: %" PRIu64 " copies moved (%.1f MiB), %" PRIu64 " left%s\n", id,
		       m.copies_moved, (double)m.bytes_moved / MIB, left_copies,
		       left_copies ? "" : "; it may be removed (lodectl target remove)");
	mover_free(&m);
	if (err)
		return lodectl_fail(ctl, err, "some copies could not be moved");
	if (left_copies)
		return lodectl_fail_as(ctl, -EBUSY,
				       "%" PRIu64 " copies are still on target %u (%zu held by a "
				       "writer, or no target could take them): run it again",
				       left_copies, id, left);
	return 0;
}

/* ---- lodectl target list, remove, undrain ---- */

static const char *state_name(const struct lode_target_info *t)
{
	if (t->admin == LODE_TARGET_ADMIN_REMOVED)
		return "removed";
	if (t->admin == LODE_TARGET_ADMIN_DRAINING)
		return "draining";
	return t->up ? "up" : "down";
}

int cmd_target_list(struct lodectl *ctl, int argc, char **argv)
{
	struct lode_target_info *t;
	json_object *arr;
	int n;

	if (lodectl_parse(ctl, argc, argv, NULL, 0, 0, NULL) < 0)
		return ctl->exit;
	t = calloc(LODE_TARGETS_MAX, sizeof(*t));
	if (!t)
		return lodectl_fail(ctl, -ENOMEM, "cannot list the targets");
	n = lode_targets(ctl->client, t, LODE_TARGETS_MAX);
	if (n < 0) {
		free(t);
		return lodectl_fail(ctl, n, "cannot list the targets");
	}
	arr = json_object_new_array();
	json_object_object_add(ctl->out, "targets", arr);
	if (!ctl->json)
		printf("%-6s %-9s %-24s %12s %12s %6s %9s\n", "target", "state", "address",
		       "total_MiB", "used_MiB", "use%", "objects");
	for (int i = 0; i < n && i < LODE_TARGETS_MAX; i++) {
		json_object *o = json_object_new_object();
		uint64_t used =
		    t[i].bytes_total >= t[i].bytes_free ? t[i].bytes_total - t[i].bytes_free : 0;
		double pct = t[i].bytes_total ? 100.0 * (double)used / (double)t[i].bytes_total : 0;

		json_add_u64(o, "id", t[i].id);
		json_add_str(o, "state", state_name(&t[i]));
		json_add_bool(o, "up", t[i].up);
		json_add_str(o, "address", t[i].addr);
		json_add_u64(o, "bytes_total", t[i].bytes_total);
		json_add_u64(o, "bytes_used", used);
		json_add_double(o, "used_percent", pct);
		json_add_u64(o, "objects", t[i].objects);
		json_object_array_add(arr, o);
		if (!ctl->json)
			printf("%-6u %-9s %-24s %12.1f %12.1f %5.1f%% %9" PRIu64 "\n", t[i].id,
			       state_name(&t[i]), t[i].addr, (double)t[i].bytes_total / MIB,
			       (double)used / MIB, pct, t[i].objects);
	}
	free(t);
	return 0;
}

static int set_admin(struct lodectl *ctl, int argc, char **argv, unsigned admin, const char *verb)
{
	char *pos[1];
	uint32_t id;
	int rc;

	if (lodectl_parse(ctl, argc, argv, NULL, 1, 1, pos) < 0)
		return ctl->exit;
	if (!parse_target(ctl, pos[0], &id))
		return LODECTL_EXIT_USAGE;
	rc = lode_target_set_admin(ctl->client, id, admin);
	if (rc == -EBUSY && admin == LODE_TARGET_ADMIN_REMOVED)
		return lodectl_fail_as(ctl, rc,
				       "target %u still holds copies or objects waiting for "
				       "deletion, or is not draining: lodectl drain %u first (and "
				       "wait for the orphan grace)",
				       id, id);
	if (rc)
		return lodectl_fail(ctl, rc, "cannot %s target %u", verb, id);
	json_add_u64(ctl->out, "target", id);
	json_add_str(ctl->out, "state", admin == LODE_TARGET_ADMIN_REMOVED ? "removed" : "active");
	if (!ctl->json && !ctl->quiet)
		printf("target %u %s\n", id,
		       admin == LODE_TARGET_ADMIN_REMOVED ? "removed" : "takes new copies again");
	return 0;
}

int cmd_target_remove(struct lodectl *ctl, int argc, char **argv)
{
	return set_admin(ctl, argc, argv, LODE_TARGET_ADMIN_REMOVED, "remove");
}

int cmd_target_undrain(struct lodectl *ctl, int argc, char **argv)
{
	return set_admin(ctl, argc, argv, LODE_TARGET_ADMIN_ACTIVE, "undrain");
}

/* ---- lodectl rebalance ---- */

/*
 * The plan: the mean used fraction over the active, up targets. While the fullest target is
 * above the mean + AIM_POINTS or the emptiest below the mean - AIM_POINTS, one copy of the
 * fullest goes to the least used target below the mean that may take it, if it fits there
 * under the mean + AIM_POINTS and leaves the source above the mean - AIM_POINTS. Bytes move
 * only from above the mean to below it, so the bytes moved stay within the bytes above the
 * mean plus at most one object per target.
 */
static bool stripe_planned(const struct mfile *f, unsigned index)
{
	unsigned mc = f->h.mirror_count, first = index - index % mc;

	for (unsigned k = first; k < first + mc; k++)
		if (f->planned & (1ull << k))
			return true;
	return false;
}

static int plan_rebalance(struct mover *m, double *mean_out, uint64_t *above_out)
{
	uint64_t used = 0, total = 0, above = 0;
	double mean, aim = AIM_POINTS / 100;

	for (unsigned i = 0; i < m->nt; i++)
		if (m->t[i].up && m->t[i].active && m->t[i].total) {
			used += m->t[i].used;
			total += m->t[i].total;
		}
	if (!total)
		return -ENODEV;
	mean = (double)used / (double)total;
	for (unsigned i = 0; i < m->nt; i++) {
		struct mtarget *t = &m->t[i];

		if (t->up && t->active && t->total && fraction(t) > mean)
			above += t->used - (uint64_t)(mean * (double)t->total);
	}
	*mean_out = mean;
	*above_out = above;
	for (;;) {
		struct mtarget *src = NULL, *low = NULL;
		bool moved = false;

		for (unsigned i = 0; i < m->nt; i++) {
			struct mtarget *t = &m->t[i];

			if (!t->up || !t->active || !t->total)
				continue;
			if (!src || fraction(t) > fraction(src))
				src = t;
			if (!low || fraction(t) < fraction(low))
				low = t;
		}
		/* done when the fullest and the emptiest are both near the mean */
		if (!src || (fraction(src) <= mean + aim && fraction(low) >= mean - aim))
			break;
		if (fraction(src) <= mean)
			break;
		/* one copy off src, the next that fits where it goes: destinations only fill
		 * up, so a copy that fits nowhere now never will, and the scan goes on from
		 * where it stopped (the plan is linear in the files). A stripe moves one copy
		 * per run: a copy moved onto a target another of its copies just left would
		 * wait for the old object's deletion. */
		for (; src->cursor < m->nfiles && !moved; src->cursor++) {
			struct mfile *f = &m->files[src->cursor];

			for (unsigned k = 0; k < (unsigned)f->h.stripe_count * f->h.mirror_count;
			     k++) {
				uint64_t len = object_len(f, k / f->h.mirror_count);
				struct mtarget *to;
				int rc;

				if (f->targets[k] != src->id || len == 0 || stripe_planned(f, k))
					continue;
				to = least_used(m, f, k, len);
				/* only from above the mean to below it: shuffling copies between
				 * targets near the mean would move bytes for nothing */
				if (!to || to == src || fraction(to) >= mean ||
				    (double)(to->used + len) / (double)to->total > mean + aim ||
				    (double)(src->used - len) / (double)src->total < mean - aim)
					continue;
				rc = add_move(m, f, k, to->id);
				if (rc)
					return rc;
				f->targets[k] = to->id;
				f->planned |= 1ull << k;
				to->used += len;
				to->free -= len;
				src->used -= len;
				moved = true;
				break;
			}
			if (moved)
				break; /* the file may have more copies on src */
		}
		if (!moved)
			break; /* nothing on the fullest fits anywhere: as good as it gets */
	}
	return 0;
}

int cmd_rebalance(struct lodectl *ctl, int argc, char **argv)
{
	struct mover m = {0};
	bool dry_run = false;
	uint64_t rate_mb = 0, wait_s = 300, above = 0, planned = 0;
	const struct lodectl_opt opts[] = {
	    {"--dry-run", "-n", LODECTL_OPT_FLAG, &dry_run, 0, 0},
	    {"--rate", NULL, LODECTL_OPT_UINT, &rate_mb, 1, 1u << 20},
	    {"--wait", NULL, LODECTL_OPT_UINT, &wait_s, 0, 86400},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	struct lodectl_progress *p;
	json_object *arr, *before, *after;
	double mean = 0;
	size_t left;
	int rc, err = 0;

	if (lodectl_parse(ctl, argc, argv, opts, 0, 0, NULL) < 0)
		return ctl->exit;
	m.wait_s = wait_s;
	m.rate = (double)rate_mb * MIB;
	if (begin(&m, ctl)) {
		mover_free(&m);
		return LODECTL_EXIT_FAIL;
	}
	before = json_object_new_array();
	json_targets(&m, before);
	rc = plan_rebalance(&m, &mean, &above);
	if (rc) {
		json_object_put(before);
		mover_free(&m);
		return lodectl_fail(ctl, rc, "no target up with a known capacity to plan with");
	}
	for (size_t i = 0; i < m.nmoves; i++)
		planned += m.moves[i].bytes;
	json_add_bool(ctl->out, "dry_run", dry_run);
	json_add_double(ctl->out, "mean_used_percent", 100 * mean);
	json_add_u64(ctl->out, "bytes_above_mean", above);
	json_add_u64(ctl->out, "bytes_planned", planned);
	json_add_u64(ctl->out, "moves_planned", m.nmoves);
	json_add_u64(ctl->out, "moves_cleaned_up", m.cleaned);
	json_object_object_add(ctl->out, "targets_before", before);
	after = json_object_new_array();
	json_targets(&m, after);
	json_object_object_add(ctl->out, "targets_planned", after);
	if (dry_run) {
		arr = json_object_new_array();
		json_object_object_add(ctl->out, "plan", arr);
		for (size_t i = 0; i < m.nmoves; i++) {
			json_object *o = json_object_new_object();

			json_add_u64(o, "ino", m.moves[i].ino);
			json_add_u64(o, "copy", m.moves[i].index);
			json_add_u64(o, "from", m.moves[i].from);
			json_add_u64(o, "to", m.moves[i].to);
			json_add_u64(o, "bytes", m.moves[i].bytes);
			json_object_array_add(arr, o);
			if (!ctl->json)
				printf("move inode %" PRIu64 " copy %u: target %u -> %u (%" PRIu64
				       " bytes)\n",
				       m.moves[i].ino, m.moves[i].index, m.moves[i].from,
				       m.moves[i].to, m.moves[i].bytes);
		}
		if (!ctl->json) {
			printf("mean use %.1f%%; %.1f MiB above it; plan: %zu moves, %.1f MiB\n",
			       100 * mean, (double)above / MIB, m.nmoves, (double)planned / MIB);
			for (unsigned i = 0; i < m.nt; i++)
				printf("target %u: %.1f%% after the plan\n", m.t[i].id,
				       100 * fraction(&m.t[i]));
		}
		mover_free(&m);
		return 0;
	}
	p = lodectl_progress_start(ctl, "rebalance", planned);
	left = run_moves(&m, p, &err);
	lodectl_progress_end(p);
	json_add_u64(ctl->out, "copies_moved", m.copies_moved);
	json_add_u64(ctl->out, "bytes_moved", m.bytes_moved);
	json_add_u64(ctl->out, "moves_busy", left);
	if (!ctl->json && !ctl->quiet)
		printf("rebalance: %" PRIu64 " copies moved (%.1f MiB; %.1f MiB were above the "
		       "mean of %.1f%%), %zu left busy\n",
		       m.copies_moved, (double)m.bytes_moved / MIB, (double)above / MIB, 100 * mean,
		       left);
	mover_free(&m);
	if (err)
		return lodectl_fail(ctl, err, "some copies could not be moved");
	if (left)
		return lodectl_fail_as(ctl, -EBUSY,
				       "%zu moves wait for a writer to finish: run it again", left);
	return 0;
}
