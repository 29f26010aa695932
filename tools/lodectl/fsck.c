/* SPDX-License-Identifier: MIT */
/*
 * lodectl fsck: checks the whole cluster online, and with --repair fixes what it can.
 *
 * 1. Namespace: the MDS checks itself (FSCK NAMESPACE pages, mds/ns_fsck.c) and sends
 *    only its findings.
 * 2. Objects: the layouts of every file (FSCK FILES, in inode order) are merged with every
 *    OSS's inventory (OBJ_LIST, in (ino, generation, stripe) order), one page of each at a
 *    time: objects no file names and no orphan or move record explains are strays; copies a file's
 *    size needs that no OSS holds are missing, shorter ones short; stripes with fewer good
 *    copies than the layout asks are under-replicated.
 * 3. Files change while this runs (writers, deletes, repairs elsewhere), so a finding of
 *    step 2 counts only when it holds twice more, 0.3 s apart, against the MDS and the OSS
 *    as they are then. A stray is removed only if its inode number was handed out before
 *    fsck began, and the MDS then knows no file and no orphan that names it: the only
 *    writer of an object is the holder of its file's lease, and a file whose layout no
 *    longer names the object (or that no longer exists) cannot be written there again.
 *
 * Exit status as e2fsck's: 0 clean, 1 errors found and all fixed, 4 errors left, 8 an
 * operational error (the MDS or an OSS unreachable, a target down), 2 bad usage.
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

#define EXIT_CLEAN 0
#define EXIT_FIXED 1
#define EXIT_LEFT  4
#define EXIT_OPER  8

#define PAGE_FILES  4096
#define RECHECKS    2
#define RECHECK_GAP 300000000L /* ns between rechecks */

struct tgt {
	uint32_t id;
	char addr[128];
	struct lode_rpc_conn *conn;
	struct lode_wire_objinfo *page; /* LODE_OBJLIST_MAX */
	uint32_t n, i;
	bool eof;
	struct lode_wire_objid after;
};

/* A finding of the object cross-check, to be confirmed and maybe fixed. */
enum obj_kind { OBJ_STRAY = 1, OBJ_MISSING, OBJ_SHORT, OBJ_UNDER };

struct cand {
	enum obj_kind kind;
	uint32_t target; /* STRAY, MISSING, SHORT: where */
	uint32_t index;	 /* MISSING, SHORT: the copy */
	struct lode_wire_objid obj;
	uint64_t want, have; /* SHORT: bytes; UNDER: copies */
};

struct fsck {
	struct lodectl *ctl;
	bool repair;
	struct lode_rpc *rpc;
	struct lode_rpc_conn *mds;
	struct tgt *t;
	unsigned nt;
	uint64_t start_ino; /* next_ino when fsck began */
	/* orphan records (ino, generation), in order */
	uint64_t (*orph)[2];
	size_t norph, corph;
	struct cand *cand;
	size_t ncand, ccand;
	/* inodes to hand to lode_repair */
	uint64_t *fix;
	size_t nfix, cfix;
	/* --remove-lost: files with a stripe no good copy of which is left, to unlink */
	bool remove_lost;
	uint64_t *lost;
	size_t nlost, clost;
	uint64_t inodes, files, objects, found, fixed, left;
	bool oper; /* an operational error */
	json_object *findings;
	struct lodectl_progress *prog;
};

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *np;

	if (n < *cap)
		return 0;
	np = realloc(*p, (*cap ? *cap * 2 : 64) * size);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = *cap ? *cap * 2 : 64;
	return 0;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L};

	nanosleep(&ts, NULL);
}

/* ---- findings, in words and in JSON ---- */

static const char *ns_kind_name(uint32_t k)
{
	static const char *names[] = {
	    [LODE_FSCK_DANGLING] = "dangling_entry", [LODE_FSCK_NLINK] = "link_count",
	    [LODE_FSCK_UNLINKED] = "unlinked_inode", [LODE_FSCK_BAD_PARENT] = "bad_parent",
	    [LODE_FSCK_COOKIE] = "cookie_index",     [LODE_FSCK_BAD_TARGET] = "unknown_target",
	    [LODE_FSCK_SAME_TARGET] = "same_target", [LODE_FSCK_BAD_MASK] = "degraded_mask",
	    [LODE_FSCK_BAD_LAYOUT] = "bad_layout",   [LODE_FSCK_BAD_ORPHAN] = "bad_orphan",
	};

	return k < sizeof(names) / sizeof(names[0]) && names[k] ? names[k] : "unknown";
}

static const char *obj_kind_name(enum obj_kind k)
{
	switch (k) {
	case OBJ_STRAY:
		return "stray_object";
	case OBJ_MISSING:
		return "missing_object";
	case OBJ_SHORT:
		return "short_object";
	case OBJ_UNDER:
		return "under_replicated";
	}
	return "unknown";
}

static void report(struct fsck *f, json_object *o, const char *kind, bool fixed, const char *text)
{
	json_add_str(o, "kind", kind);
	json_add_bool(o, "fixed", fixed);
	json_object_array_add(f->findings, o);
	f->found++;
	if (fixed)
		f->fixed++;
	else
		f->left++;
	if (!f->ctl->json && !f->ctl->quiet)
		printf("%s: %s%s\n", kind, text, fixed ? " (fixed)" : "");
}

/* ---- talking to the MDS and the OSSes ---- */

int lodectl_fsck_page(struct lode_rpc_conn *mds, uint32_t what, uint64_t cursor, uint32_t max,
		      struct lode_wire_fsck_rep *rep, void *data, size_t cap)
{
	struct lode_wire_fsck_req q = {.what = what, .max = max, .cursor = cursor};
	struct lode_call c = {.opcode = LODE_OP_FSCK,
			      .body = &q,
			      .body_len = sizeof(q),
			      .reply_body = rep,
			      .reply_body_max = sizeof(*rep),
			      .reply_data = data,
			      .reply_data_max = cap};
	int rc = lode_rpc_call(mds, &c);

	if (!rc && c.reply_body_len != sizeof(*rep))
		rc = -EPROTO;
	return rc ? rc : (int)c.reply_data_len;
}

static int mds_page(struct fsck *f, uint32_t what, uint64_t cursor, uint32_t max,
		    struct lode_wire_fsck_rep *rep, void *data, size_t cap)
{
	return lodectl_fsck_page(f->mds, what, cursor, max, rep, data, cap);
}

static int mds_fix(struct fsck *f, uint32_t action, uint64_t ino, uint64_t parent, uint64_t cookie,
		   uint32_t index, bool *fixed)
{
	struct lode_wire_fsck_fix_req q = {
	    .action = action, .index = index, .ino = ino, .parent = parent, .cookie = cookie};
	struct lode_wire_fsck_fix_rep rep = {0};
	int rc = lode_rpc_simple(f->mds, LODE_OP_FSCK_FIX, &q, sizeof(q), &rep, sizeof(rep));

	if (!rc)
		*fixed = rep.fixed != 0;
	return rc;
}

static int want_fix(struct fsck *f, uint64_t ino)
{
	for (size_t i = 0; i < f->nfix; i++)
		if (f->fix[i] == ino)
			return 0;
	if (grow((void **)&f->fix, &f->cfix, f->nfix, sizeof(*f->fix)))
		return -ENOMEM;
	f->fix[f->nfix++] = ino;
	return 0;
}

static int add_lost(struct fsck *f, uint64_t ino)
{
	for (size_t i = 0; i < f->nlost; i++)
		if (f->lost[i] == ino)
			return 0;
	if (grow((void **)&f->lost, &f->clost, f->nlost, sizeof(*f->lost)))
		return -ENOMEM;
	f->lost[f->nlost++] = ino;
	return 0;
}

static struct tgt *tgt_by_id(struct fsck *f, uint32_t id)
{
	for (unsigned i = 0; i < f->nt; i++)
		if (f->t[i].id == id)
			return &f->t[i];
	return NULL;
}

static int obj_stat(struct tgt *t, const struct lode_wire_objid *id, uint64_t *size)
{
	struct lode_wire_obj_rep rep;
	int rc = lode_rpc_simple(t->conn, LODE_OP_OBJ_STAT, id, sizeof(*id), &rep, sizeof(rep));

	if (!rc)
		*size = rep.object_size;
	return rc;
}

/* The next object of t's inventory, or NULL at its end (or on error: f->oper). */
static const struct lode_wire_objinfo *peek(struct fsck *f, struct tgt *t)
{
	if (t->i < t->n)
		return &t->page[t->i];
	while (!t->eof) {
		struct lode_wire_obj_list_req q = {.after = t->after, .max = LODE_OBJLIST_MAX};
		struct lode_wire_obj_list_rep rep;
		struct lode_call c = {.opcode = LODE_OP_OBJ_LIST,
				      .body = &q,
				      .body_len = sizeof(q),
				      .reply_body = &rep,
				      .reply_body_max = sizeof(rep),
				      .reply_data = t->page,
				      .reply_data_max = LODE_OBJLIST_MAX * sizeof(*t->page)};
		int rc = lode_rpc_call(t->conn, &c);

		if (!rc && (c.reply_body_len != sizeof(rep) ||
			    c.reply_data_len != rep.count * sizeof(*t->page)))
			rc = -EPROTO;
		if (rc) {
			lodectl_fail(f->ctl, rc, "cannot list the objects of target %u (%s)", t->id,
				     t->addr);
			f->oper = true;
			t->eof = true;
			t->n = t->i = 0;
			return NULL;
		}
		t->n = rep.count;
		t->i = 0;
		t->eof = rep.eof || rep.count == 0;
		if (t->n) {
			t->after = t->page[t->n - 1].obj;
			return &t->page[0];
		}
	}
	return NULL;
}

static bool orphan_has(const struct fsck *f, uint64_t ino, uint64_t gen)
{
	size_t lo = 0, hi = f->norph;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const uint64_t *o = f->orph[mid];

		if (o[0] == ino && o[1] == gen)
			return true;
		if (o[0] < ino || (o[0] == ino && o[1] < gen))
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static int add_cand(struct fsck *f, const struct cand *c)
{
	if (grow((void **)&f->cand, &f->ccand, f->ncand, sizeof(*f->cand)))
		return -ENOMEM;
	f->cand[f->ncand++] = *c;
	return 0;
}

static int stray(struct fsck *f, struct tgt *t, const struct lode_wire_objinfo *o)
{
	struct cand c = {.kind = OBJ_STRAY, .target = t->id, .obj = o->obj};

	if (orphan_has(f, o->obj.ino, o->obj.generation))
		return 0; /* a deleted file's, removed after the orphan grace */
	return add_cand(f, &c);
}

/* ---- one file's copies, as the MDS and the OSSes see them now ---- */

struct file {
	struct lode_wire_fsck_file h;
	uint32_t targets[LODE_LAYOUT_TARGETS_MAX];
};

static size_t file_rec_len(const struct lode_wire_fsck_file *h)
{
	return (sizeof(*h) + 4u * h->stripe_count * h->mirror_count + 7) & ~(size_t)7;
}

static uint64_t object_len(const struct file *fl, unsigned stripe)
{
	uint64_t ss = fl->h.stripe_size, row = ss * fl->h.stripe_count;
	uint64_t full = fl->h.size / row, rem = fl->h.size % row;
	uint64_t part = rem > (uint64_t)stripe * ss ? rem - (uint64_t)stripe * ss : 0;

	return full * ss + (part < ss ? part : ss);
}

/* Compares fl's copies with have[] (object sizes, UINT64_MAX: absent): candidates out. */
static int judge(struct fsck *f, const struct file *fl, const uint64_t *have)
{
	unsigned mc = fl->h.mirror_count;

	for (unsigned s = 0; s < fl->h.stripe_count; s++) {
		uint64_t want = object_len(fl, s);
		unsigned good = 0;

		for (unsigned m = 0; m < mc; m++) {
			unsigned k = s * mc + m;
			struct cand c = {
			    .target = fl->targets[k],
			    .index = k,
			    .obj = {.ino = fl->h.ino, .generation = fl->h.generation, .stripe = s},
			    .want = want,
			    .have = have[k]};

			if (fl->h.degraded & (1ull << k))
				continue;
			if (!tgt_by_id(f, fl->targets[k]))
				continue; /* an unknown target: the namespace check's finding */
			if (want && have[k] == UINT64_MAX)
				c.kind = OBJ_MISSING;
			else if (want && have[k] < want)
				c.kind = OBJ_SHORT;
			if (c.kind) {
				if (add_cand(f, &c))
					return -ENOMEM;
				continue;
			}
			good++;
		}
		if (good < mc) {
			struct cand c = {
			    .kind = OBJ_UNDER,
			    .obj = {.ino = fl->h.ino, .generation = fl->h.generation, .stripe = s},
			    .want = mc,
			    .have = good};

			if (add_cand(f, &c))
				return -ENOMEM;
		}
	}
	return 0;
}

/* One file record against every target's inventory. */
static int merge_file(struct fsck *f, const struct file *fl)
{
	unsigned n = (unsigned)fl->h.stripe_count * fl->h.mirror_count;
	uint64_t have[LODE_LAYOUT_TARGETS_MAX];
	const struct lode_wire_objinfo *o;
	int rc;

	for (unsigned k = 0; k < n; k++)
		have[k] = UINT64_MAX;
	for (unsigned i = 0; i < f->nt; i++) {
		struct tgt *t = &f->t[i];

		while ((o = peek(f, t)) && o->obj.ino <= fl->h.ino) {
			bool named = false;

			f->objects++;
			if (o->obj.ino == fl->h.ino && o->obj.generation == fl->h.generation &&
			    o->obj.stripe < fl->h.stripe_count) {
				for (unsigned m = 0; m < fl->h.mirror_count; m++) {
					unsigned k = o->obj.stripe * fl->h.mirror_count + m;

					if (fl->targets[k] == t->id) {
						have[k] = o->size;
						named = true;
					}
				}
			}
			if (!named && (rc = stray(f, t, o)))
				return rc;
			t->i++;
		}
	}
	return judge(f, fl, have);
}

/* ---- confirming a candidate against the cluster as it is now ---- */

/* The file record of ino now (0), or -ENOENT when no linked regular file has it. */
static int file_now(struct fsck *f, uint64_t ino, struct file *fl)
{
	char buf[sizeof(struct file) + 8];
	struct lode_wire_fsck_rep rep;
	int n = mds_page(f, LODE_FSCK_FILES, ino, 1, &rep, buf, sizeof(buf));

	if (n < 0)
		return n;
	if (rep.count == 0 || (size_t)n < sizeof(fl->h))
		return -ENOENT;
	memcpy(&fl->h, buf, sizeof(fl->h));
	if (fl->h.ino != ino)
		return -ENOENT;
	if ((size_t)n < file_rec_len(&fl->h))
		return -EPROTO;
	memcpy(fl->targets, buf + sizeof(fl->h), 4u * fl->h.stripe_count * fl->h.mirror_count);
	return 0;
}

static int orphan_now(struct fsck *f, uint64_t ino, uint64_t gen, bool *has)
{
	char buf[64 * (sizeof(struct file) + 8)];
	struct lode_wire_fsck_rep rep;
	int n = mds_page(f, LODE_FSCK_ORPHANS, ino, 1, &rep, buf, sizeof(buf));
	size_t pos = 0;

	if (n < 0)
		return n;
	*has = false;
	for (uint32_t i = 0; i < rep.count && pos + sizeof(struct lode_wire_fsck_file) <= (size_t)n;
	     i++) {
		struct lode_wire_fsck_file h;

		memcpy(&h, buf + pos, sizeof(h));
		if (h.ino == ino && h.generation == gen)
			*has = true;
		pos += file_rec_len(&h);
	}
	return 0;
}

/* Whether a move of copies (lodectl drain, rebalance) accounts for the object on target:
 * a move under way writes it, or a finished one left it for its target to delete after
 * the orphan grace. Either way it is no stray. */
static int moving_now(struct fsck *f, const struct lode_wire_objid *obj, uint32_t target, bool *has)
{
	struct lode_wire_move_list_req q = {.max = 256,
					    .flags = LODE_MOVE_LIST_OLD,
					    .ino = obj->ino,
					    .generation = obj->generation};
	struct lode_wire_move_entry e[256];
	struct lode_wire_orphan_list_rep rep;
	struct lode_call c = {.opcode = LODE_OP_MOVE_LIST,
			      .body = &q,
			      .body_len = sizeof(q),
			      .reply_body = &rep,
			      .reply_body_max = sizeof(rep),
			      .reply_data = e,
			      .reply_data_max = sizeof(e)};
	int rc = lode_rpc_call(f->mds, &c);

	if (!rc && (c.reply_body_len != sizeof(rep) || rep.count > q.max ||
		    c.reply_data_len != rep.count * sizeof(e[0])))
		rc = -EPROTO;
	if (rc)
		return rc;
	*has = false;
	for (uint32_t i = 0; i < rep.count; i++)
		if (e[i].stripe == obj->stripe && e[i].target == target)
			*has = true;
	return 0;
}

/* 1 if the candidate still holds, 0 if not, or -errno. */
static int holds(struct fsck *f, const struct cand *c)
{
	struct file fl;
	struct tgt *t = tgt_by_id(f, c->target);
	uint64_t size;
	bool orphan;
	int rc = file_now(f, c->obj.ino, &fl);

	if (rc && rc != -ENOENT)
		return rc;
	if (c->kind == OBJ_STRAY) {
		if (!rc && fl.h.generation == c->obj.generation &&
		    c->obj.stripe < fl.h.stripe_count)
			for (unsigned m = 0; m < fl.h.mirror_count; m++)
				if (fl.targets[c->obj.stripe * fl.h.mirror_count + m] == c->target)
					return 0;
		rc = orphan_now(f, c->obj.ino, c->obj.generation, &orphan);
		if (rc)
			return rc;
		if (orphan)
			return 0;
		rc = moving_now(f, &c->obj, c->target, &orphan);
		if (rc)
			return rc;
		if (orphan)
			return 0;
		rc = obj_stat(t, &c->obj, &size);
		return rc == -ENOENT ? 0 : rc ? rc : 1;
	}
	if (rc == -ENOENT || fl.h.generation != c->obj.generation)
		return 0; /* deleted or replaced meanwhile */
	if (c->kind == OBJ_UNDER) {
		unsigned mc = fl.h.mirror_count, good = 0;

		for (unsigned m = 0; m < mc; m++)
			if (!(fl.h.degraded & (1ull << (c->obj.stripe * mc + m))))
				good++;
		/* missing and short copies are candidates of their own; degraded ones here */
		return good < mc;
	}
	if (fl.targets[c->index] != c->target || (fl.h.degraded & (1ull << c->index)))
		return 0; /* moved or marked meanwhile */
	rc = obj_stat(t, &c->obj, &size);
	if (rc == -ENOENT)
		return object_len(&fl, c->obj.stripe) > 0;
	if (rc)
		return rc;
	return size < object_len(&fl, c->obj.stripe);
}

/* ---- the passes ---- */

/* Hands fn each page of what (LODE_FSCK_*), max records a page, from the first to the
 * last or until fn returns non-zero: -errno, or 1 to stop. Returns 0 or -errno. */
typedef int (*page_fn)(struct fsck *f, uint64_t cursor, const struct lode_wire_fsck_rep *rep,
		       const char *buf, size_t n);

static int each_page(struct fsck *f, uint32_t what, uint32_t max, page_fn fn)
{
	size_t cap = LODE_DATA_MAX;
	char *buf = malloc(cap);
	uint64_t cursor = 0;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		struct lode_wire_fsck_rep rep;
		int n = mds_page(f, what, cursor, max, &rep, buf, cap);

		if (n < 0) {
			rc = n;
			break;
		}
		rc = fn(f, cursor, &rep, buf, (size_t)n);
		if (rc || rep.eof)
			break;
		cursor = rep.next;
	}
	free(buf);
	return rc < 0 ? rc : 0;
}

static int namespace_page(struct fsck *f, uint64_t cursor, const struct lode_wire_fsck_rep *rep,
			  const char *buf, size_t n)
{
	size_t pos = 0;
	int rc;

	if (!cursor) {
		f->start_ino = rep->next_ino;
		lodectl_progress_total(f->prog, rep->next_ino);
	}
	f->inodes += rep->checked;
	lodectl_progress_add(f->prog, rep->checked);
	for (uint32_t i = 0; i < rep->count; i++) {
		struct lode_wire_fsck_finding w;
		json_object *o = json_object_new_object();
		char name[LODE_NAME_MAX + 1] = "", shown[4 * LODE_NAME_MAX + 1], text[1200];
		uint32_t action = 0;
		bool fixed = false;

		if (pos + sizeof(w) > n) {
			json_object_put(o);
			return -EPROTO;
		}
		memcpy(&w, buf + pos, sizeof(w));
		if (w.name_len > LODE_NAME_MAX || pos + sizeof(w) + w.name_len > n) {
			json_object_put(o);
			return -EPROTO;
		}
		memcpy(name, buf + pos + sizeof(w), w.name_len);
		pos += (sizeof(w) + w.name_len + 7) & ~(size_t)7;
		json_add_u64(o, "ino", w.ino);
		if (w.parent)
			json_add_u64(o, "parent", w.parent);
		if (w.name_len)
			json_add_str(o, "name", name);
		switch (w.kind) {
		case LODE_FSCK_DANGLING:
			action = LODE_FSCK_FIX_DANGLING;
			snprintf(text, sizeof(text),
				 "entry '%s' in directory %" PRIu64 " leads to inode %" PRIu64
				 ", which does not exist",
				 lodectl_shown_name(name, shown, sizeof(shown)), w.parent, w.ino);
			break;
		case LODE_FSCK_NLINK:
			action = LODE_FSCK_FIX_NLINK;
			json_add_u64(o, "expected", w.expected);
			json_add_u64(o, "found", w.found);
			snprintf(text, sizeof(text),
				 "inode %" PRIu64 " has link count %" PRIu64
				 ", its entries say %" PRIu64,
				 w.ino, w.found, w.expected);
			break;
		case LODE_FSCK_UNLINKED:
			action = LODE_FSCK_FIX_RELINK;
			snprintf(text, sizeof(text),
				 "inode %" PRIu64 " has links but no entry leads to it", w.ino);
			break;
		case LODE_FSCK_BAD_TARGET:
			action = LODE_FSCK_FIX_DEGRADE;
			json_add_u64(o, "copy", w.index);
			json_add_u64(o, "target", w.found);
			snprintf(text, sizeof(text),
				 "file %" PRIu64 ": copy %u is on target %" PRIu64
				 ", which the cluster does not know",
				 w.ino, w.index, w.found);
			break;
		default:
			json_add_u64(o, "expected", w.expected);
			json_add_u64(o, "found", w.found);
			snprintf(text, sizeof(text),
				 "inode %" PRIu64 ": expected %" PRIu64 ", found %" PRIu64
				 " (not repaired by fsck)",
				 w.ino, w.expected, w.found);
			break;
		}
		if (f->repair && action) {
			rc = mds_fix(f, action, w.ino, w.parent, w.cookie, w.index, &fixed);
			if (rc) {
				json_object_put(o);
				return rc;
			}
			if (fixed && action == LODE_FSCK_FIX_DEGRADE) {
				/* the copy is degraded now: lode_repair rebuilds it */
				rc = want_fix(f, w.ino);
				if (rc) {
					json_object_put(o);
					return rc;
				}
				fixed = false; /* counted when the repair succeeds */
				json_add_bool(o, "repair_pending", true);
			}
		}
		report(f, o, ns_kind_name(w.kind), fixed, text);
	}
	return 0;
}

static int check_namespace(struct fsck *f)
{
	return each_page(f, LODE_FSCK_NAMESPACE, 8192, namespace_page);
}

/* The orphans the MDS keeps (inode, generation): their objects are not strays. */
static int orphans_page(struct fsck *f, uint64_t cursor, const struct lode_wire_fsck_rep *rep,
			const char *buf, size_t n)
{
	size_t pos = 0;

	(void)cursor;
	for (uint32_t i = 0; i < rep->count && pos + sizeof(struct lode_wire_fsck_file) <= n; i++) {
		struct lode_wire_fsck_file h;

		memcpy(&h, buf + pos, sizeof(h));
		pos += file_rec_len(&h);
		if (grow((void **)&f->orph, &f->corph, f->norph, sizeof(*f->orph)))
			return -ENOMEM;
		f->orph[f->norph][0] = h.ino;
		f->orph[f->norph][1] = h.generation;
		f->norph++;
	}
	return 0;
}

static int load_orphans(struct fsck *f)
{
	return each_page(f, LODE_FSCK_ORPHANS, PAGE_FILES, orphans_page);
}

static int objects_page(struct fsck *f, uint64_t cursor, const struct lode_wire_fsck_rep *rep,
			const char *buf, size_t n)
{
	size_t pos = 0;
	int rc;

	(void)cursor;
	for (uint32_t i = 0; i < rep->count; i++) {
		struct file fl;
		size_t len;

		if (pos + sizeof(fl.h) > n)
			return -EPROTO;
		memcpy(&fl.h, buf + pos, sizeof(fl.h));
		len = file_rec_len(&fl.h);
		if ((unsigned)fl.h.stripe_count * fl.h.mirror_count > LODE_LAYOUT_TARGETS_MAX ||
		    !fl.h.stripe_size || pos + len > n)
			return -EPROTO;
		memcpy(fl.targets, buf + pos + sizeof(fl.h),
		       4u * fl.h.stripe_count * fl.h.mirror_count);
		pos += len;
		f->files++;
		rc = merge_file(f, &fl);
		if (rc)
			return rc;
	}
	return f->oper ? 1 : 0; /* 1: stop paging */
}

static int check_objects(struct fsck *f)
{
	int rc = each_page(f, LODE_FSCK_FILES, PAGE_FILES, objects_page);

	if (rc || f->oper)
		return rc;
	/* what is left past the last file's inode names no file */
	for (unsigned i = 0; i < f->nt; i++) {
		const struct lode_wire_objinfo *o;

		while ((o = peek(f, &f->t[i]))) {
			f->objects++;
			rc = stray(f, &f->t[i], o);
			if (rc)
				return rc;
			f->t[i].i++;
		}
	}
	return 0;
}

/* Confirms each candidate (RECHECKS times, RECHECK_GAP apart), then reports and fixes. */
static int settle(struct fsck *f)
{
	for (int round = 0; round < RECHECKS && f->ncand; round++) {
		size_t kept = 0;

		sleep_ns(RECHECK_GAP);
		for (size_t i = 0; i < f->ncand; i++) {
			int rc = holds(f, &f->cand[i]);

			if (rc < 0)
				return rc;
			if (rc)
				f->cand[kept++] = f->cand[i];
		}
		f->ncand = kept;
	}
	for (size_t i = 0; i < f->ncand; i++) {
		const struct cand *c = &f->cand[i];
		json_object *o = json_object_new_object();
		char text[256];
		bool fixed = false;
		int rc = 0;

		json_add_u64(o, "ino", c->obj.ino);
		json_add_u64(o, "generation", c->obj.generation);
		json_add_u64(o, "stripe", c->obj.stripe);
		if (c->kind != OBJ_UNDER)
			json_add_u64(o, "target", c->target);
		switch (c->kind) {
		case OBJ_STRAY:
			snprintf(text, sizeof(text),
				 "object %" PRIu64 ".%" PRIu64 ".%u on target %u: no file names it",
				 c->obj.ino, c->obj.generation, c->obj.stripe, c->target);
			/* never one of an inode handed out since fsck began */
			if (f->repair && c->obj.ino < f->start_ino) {
				struct lode_wire_obj_rep rep;

				rc = lode_rpc_simple(tgt_by_id(f, c->target)->conn,
						     LODE_OP_OBJ_REMOVE, &c->obj, sizeof(c->obj),
						     &rep, sizeof(rep));
				fixed = rc == 0;
			}
			break;
		case OBJ_MISSING:
		case OBJ_SHORT:
			json_add_u64(o, "bytes_expected", c->want);
			if (c->kind == OBJ_SHORT)
				json_add_u64(o, "bytes_found", c->have);
			snprintf(text, sizeof(text),
				 "file %" PRIu64 " stripe %u: the copy on target %u %s %" PRIu64
				 " bytes",
				 c->obj.ino, c->obj.stripe, c->target,
				 c->kind == OBJ_SHORT ? "is shorter than" : "is missing, of",
				 c->want);
			if (f->repair) {
				/* degraded, then rebuilt from a good copy (EBUSY: it is the last)
				 */
				struct lode_wire_report_req q = {.ino = c->obj.ino,
								 .generation = c->obj.generation,
								 .stripe = c->obj.stripe,
								 .target_id = c->target,
								 .kind = LODE_REPORT_BAD_DATA};

				rc = lode_rpc_simple(f->mds, LODE_OP_REPORT_COPY, &q, sizeof(q),
						     NULL, 0);
				if (!rc)
					rc = want_fix(f, c->obj.ino);
				if (!rc)
					json_add_bool(o, "repair_pending", true);
				/* EBUSY: the MDS keeps the last good copy of a stripe, so none
				 * is left to rebuild from: the file's data is lost */
				if (rc == -EBUSY && f->remove_lost) {
					rc = add_lost(f, c->obj.ino);
					if (!rc)
						json_add_bool(o, "lost", true);
				}
				rc = rc == -EBUSY ? 0 : rc;
			}
			break;
		case OBJ_UNDER:
			json_add_u64(o, "copies_wanted", c->want);
			json_add_u64(o, "copies_good", c->have);
			snprintf(text, sizeof(text),
				 "file %" PRIu64 " stripe %u: %" PRIu64 " good copies of %" PRIu64,
				 c->obj.ino, c->obj.stripe, c->have, c->want);
			if (f->repair) {
				rc = want_fix(f, c->obj.ino);
				if (!rc)
					json_add_bool(o, "repair_pending", true);
			}
			break;
		}
		if (rc < 0 && rc != -ENOENT) {
			json_object_put(o);
			return rc;
		}
		report(f, o, obj_kind_name(c->kind), fixed, text);
	}
	f->ncand = 0;
	return 0;
}

/* --remove-lost: unlinks every name of each file whose data is lost (after a restore from
 * a backup: the files deleted since). Its objects become orphans, removed as a delete's. */
static int remove_lost(struct fsck *f)
{
	char *path = malloc(4097);

	if (!path)
		return -ENOMEM;
	for (size_t i = 0; i < f->nlost; i++) {
		/* one name a round: a file with hard links has several */
		for (unsigned round = 0; round < 1024; round++) {
			struct lode_wire_fsck_rep rep;
			int n = mds_page(f, LODE_FSCK_PATH, f->lost[i], 1, &rep, path, 4096);
			int rc;

			if (n < 0) {
				free(path);
				return n;
			}
			if (n == 0)
				break; /* no name leads to it any more */
			path[n] = '\0';
			rc = lode_unlink(f->ctl->client, path);
			if (rc) {
				lodectl_note(f->ctl, "cannot remove the lost file %s: %s\n", path,
					     strerror(-rc));
				break;
			}
			lodectl_note(f->ctl, "removed %s: its data is lost\n", path);
		}
	}
	free(path);
	return 0;
}

/* lode_repair for each file that needs it: one finding fewer left per file repaired. */
static int rebuild(struct fsck *f, unsigned *moved)
{
	char *path = malloc(4097);

	if (!path)
		return -ENOMEM;
	*moved = 0;
	for (size_t i = 0; i < f->nfix; i++) {
		struct lode_wire_fsck_rep rep;
		struct lode_repair_result res = {0};
		int n = mds_page(f, LODE_FSCK_PATH, f->fix[i], 1, &rep, path, 4096);
		int rc;

		if (n < 0) {
			free(path);
			return n;
		}
		path[n] = '\0';
		if (n == 0)
			continue; /* no name leads to it any more */
		rc = lode_repair(f->ctl->client, path, &res);
		if (rc == 0 && res.copies_repaired == res.copies_degraded) {
			lodectl_note(f->ctl, "repaired %s: %u copies\n", path, res.copies_repaired);
			*moved += res.copies_repaired;
		} else {
			lodectl_note(f->ctl, "cannot repair %s: %s\n", path,
				     rc ? strerror(-rc) : "some copies stay degraded");
		}
	}
	free(path);
	return 0;
}

/* fsck's own connections prove the key lodectl's client does (--key, $LODE_KEY_FILE or
 * --insecure), in the best role it holds: FSCK and FSCK_FIX are for admins. */
static int rpc_auth(struct fsck *f)
{
	const char *path = f->ctl->key_file ? f->ctl->key_file : getenv("LODE_KEY_FILE");
	struct lode_keyring kr;
	char why[256];
	int rc;

	if (!path || !*path)
		return lode_rpc_set_auth(f->rpc, NULL, LODE_ROLE_ADMIN);
	rc = lode_keyring_load(path, &kr, why, sizeof(why));
	if (rc)
		return lodectl_fail_as(f->ctl, rc, "%s", why), rc;
	rc = lode_rpc_set_auth(f->rpc, &kr, lode_keyring_best_role(&kr));
	sodium_memzero(&kr, sizeof(kr));
	return rc;
}

static int connect_all(struct fsck *f)
{
	struct lode_target_info *ti = calloc(LODE_TARGETS_MAX, sizeof(*ti));
	int n, rc;

	if (!ti)
		return -ENOMEM;
	rc = lode_rpc_create(&f->rpc, f->ctl->timeout_ms ? f->ctl->timeout_ms : 30000);
	if (!rc)
		rc = rpc_auth(f);
	if (!rc)
		rc = lode_rpc_conn_open(f->rpc, f->ctl->mds_addr, &f->mds);
	if (rc) {
		free(ti);
		return lodectl_fail(f->ctl, rc, "cannot reach the MDS at %s", f->ctl->mds_addr), rc;
	}
	n = lode_targets(f->ctl->client, ti, LODE_TARGETS_MAX);
	if (n < 0) {
		free(ti);
		return lodectl_fail(f->ctl, n, "cannot list the targets"), n;
	}
	f->t = calloc((size_t)n + 1, sizeof(*f->t));
	if (!f->t) {
		free(ti);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		struct tgt *t;

		/* a removed target held nothing when it went, and may be gone for good: its
		 * objects are no longer the cluster's (layouts that name it are the namespace
		 * check's finding) */
		if (ti[i].admin == LODE_TARGET_ADMIN_REMOVED)
			continue;
		t = &f->t[f->nt++];
		t->id = ti[i].id;
		snprintf(t->addr, sizeof(t->addr), "%s", ti[i].addr);
		t->page = malloc(LODE_OBJLIST_MAX * sizeof(*t->page));
		if (!t->page) {
			free(ti);
			return -ENOMEM;
		}
		if (!ti[i].up) {
			free(ti);
			lodectl_fail_as(f->ctl, -EHOSTDOWN,
					"target %u (%s) is down: its objects cannot be checked",
					t->id, t->addr);
			return -EHOSTDOWN;
		}
		rc = lode_rpc_conn_open(f->rpc, t->addr, &t->conn);
		if (rc) {
			free(ti);
			lodectl_fail(f->ctl, rc, "cannot reach target %u at %s", t->id, t->addr);
			return rc;
		}
	}
	free(ti);
	return 0;
}

static void reset_targets(struct fsck *f)
{
	for (unsigned i = 0; i < f->nt; i++) {
		struct tgt *t = &f->t[i];

		t->n = t->i = 0;
		t->eof = false;
		memset(&t->after, 0, sizeof(t->after));
	}
}

static int one_pass(struct fsck *f)
{
	int rc;

	f->norph = 0;
	reset_targets(f);
	rc = check_namespace(f);
	if (!rc)
		rc = load_orphans(f);
	if (!rc)
		rc = check_objects(f);
	if (!rc && !f->oper)
		rc = settle(f);
	return rc;
}

int cmd_fsck(struct lodectl *ctl, int argc, char **argv)
{
	bool repair = false, lost = false;
	const struct lodectl_opt opts[] = {{"--repair", NULL, LODECTL_OPT_FLAG, &repair},
					   {"--remove-lost", NULL, LODECTL_OPT_FLAG, &lost},
					   {NULL}};
	struct fsck f = {.ctl = ctl};
	double t0, secs = 0;
	int rc, status;

	if (lodectl_parse(ctl, argc, argv, opts, 0, 0, NULL) < 0)
		return ctl->exit == LODECTL_EXIT_FAIL ? EXIT_OPER : ctl->exit;
	if (lost && !repair)
		return lodectl_usage_error(ctl, "--remove-lost is a repair: give --repair too");
	f.repair = repair;
	f.remove_lost = lost;
	f.findings = json_object_new_array();
	t0 = lodectl_now();
	rc = connect_all(&f);
	if (rc) {
		json_object_put(f.findings);
		goto close;
	}
	f.prog = lodectl_progress_start_count(ctl, "fsck", "inodes", 0);
	rc = one_pass(&f);
	if (!rc && !f.oper && repair && (f.nfix || f.nlost)) {
		/* rebuild degraded copies, then look again: what a rebuild moved away is a
		 * stray now, and the findings it fixed are gone */
		unsigned moved;
		uint64_t found = f.found;
		json_object *first = f.findings;

		rc = remove_lost(&f);
		if (!rc)
			rc = rebuild(&f, &moved);
		if (!rc) {
			f.findings = json_object_new_array();
			f.found = f.fixed = f.left = 0;
			f.nfix = f.nlost = 0;
			f.inodes = f.files = f.objects = 0;
			rc = one_pass(&f);
			for (size_t i = 0; i < json_object_array_length(f.findings); i++)
				json_object_array_add(
				    first,
				    json_object_get(json_object_array_get_idx(f.findings, i)));
			json_object_put(f.findings);
			f.findings = first;
			/* what the second pass still finds is left; the rest of the first
			 * pass's findings were fixed, and so was what the second pass fixed
			 * (strays the rebuild left behind) */
			f.found = found + f.fixed;
			f.fixed = f.found - f.left;
		}
	}
	lodectl_progress_end(f.prog);
	secs = lodectl_now() - t0;
	json_object_object_add(ctl->out, "findings", f.findings);
	json_add_bool(ctl->out, "repair", repair);
	json_add_u64(ctl->out, "inodes", f.inodes);
	json_add_u64(ctl->out, "files", f.files);
	json_add_u64(ctl->out, "objects", f.objects);
	json_add_u64(ctl->out, "targets", f.nt);
	json_add_u64(ctl->out, "errors_found", f.found);
	json_add_u64(ctl->out, "errors_fixed", f.fixed);
	json_add_u64(ctl->out, "errors_left", f.left);
	json_add_double(ctl->out, "seconds", secs);
	json_add_double(ctl->out, "files_per_s", secs > 0 ? (double)f.files / secs : 0);
	json_add_double(ctl->out, "objects_per_s", secs > 0 ? (double)f.objects / secs : 0);
	if (rc && !f.oper)
		lodectl_fail(ctl, rc, "fsck stopped");
close:
	for (unsigned i = 0; i < f.nt; i++)
		free(f.t[i].page);
	free(f.t);
	lode_rpc_destroy(f.rpc); /* closes the connections */
	free(f.orph);
	free(f.cand);
	free(f.fix);
	free(f.lost);
	if (rc || f.oper)
		status = EXIT_OPER;
	else if (f.left)
		status = EXIT_LEFT;
	else if (f.found)
		status = EXIT_FIXED;
	else
		status = EXIT_CLEAN;
	json_add_u64(ctl->out, "exit", (uint64_t)status);
	if (!ctl->json && !ctl->quiet && !rc && !f.oper)
		printf("fsck: %" PRIu64 " inodes, %" PRIu64 " files, %" PRIu64
		       " objects on %u targets in %.2f s (%.0f files/s, %.0f objects/s): %" PRIu64
		       " errors, %" PRIu64 " fixed, %" PRIu64 " left\n",
		       f.inodes, f.files, f.objects, f.nt, secs, secs > 0 ? f.files / secs : 0,
		       secs > 0 ? f.objects / secs : 0, f.found, f.fixed, f.left);
	return status;
}
