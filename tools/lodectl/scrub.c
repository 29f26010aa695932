/* SPDX-License-Identifier: MIT */
/*
 * lodectl scrub: every OSS (or one, --target) reads its objects from its own disk and
 * verifies each chunk against its stored checksum, online and throttled (oss/scrub.c).
 *
 * lodectl only starts the scrubs (OBJ_SCRUB), follows them (OBJ_SCRUB_STATUS, a few times
 * a second, for the progress bar) and reports what they found. Each OSS tells the MDS of
 * its bad copies itself (SCRUB_REPORT), which marks them degraded as a reader's report
 * would; with --repair lodectl then hands each affected file to lode_repair, the same
 * engine as `lodectl repair`, which rewrites the degraded copies from a good one.
 *
 * Exit status as fsck's: 0 clean, 1 bad copies found and all repaired, 4 bad copies left,
 * 8 an operational error (the MDS or an OSS unreachable, a target down, a scrub failed),
 * 2 bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "auth.h"
#include "codec.h"
#include "lodectl.h"
#include "rpc.h"
#include "wire_spec.h"

#define EXIT_CLEAN 0
#define EXIT_FIXED 1
#define EXIT_LEFT  4
#define EXIT_OPER  8

#define RATE_DEFAULT 64		/* MiB/s per target */
#define RATE_MAX     (1u << 20) /* MiB/s: 1 TiB/s, more than any disk */
#define POLL_NS	     200000000L

/* Set by SIGINT, SIGTERM or SIGHUP while the scrubs run: lodectl cancels the ones it
 * started instead of leaving them to read on with nobody waiting. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

struct stgt {
	uint32_t id;
	char addr[128];
	struct lode_rpc_conn *conn;
	bool running;
	bool ours;	/* started by this lodectl (not one it follows) */
	uint64_t run;	/* the scrub's number on that OSS */
	uint64_t shown; /* bytes_checked added to the progress */
	struct lode_wire_scrub_status st;
	struct lode_wire_scrub_bad *bad; /* st.count */
};

struct scrub {
	struct lodectl *ctl;
	struct lode_rpc *rpc;
	struct lode_rpc_conn *mds;
	struct stgt *t;
	unsigned nt;
	bool oper;
};

/* Connections that prove the key lodectl's client does, in the best role it holds:
 * OBJ_SCRUB and FSCK are for admins. */
static int rpc_open(struct lodectl *ctl, unsigned timeout_ms, struct lode_rpc **out)
{
	const char *path = ctl->key_file ? ctl->key_file : getenv("LODE_KEY_FILE");
	struct lode_keyring kr;
	char why[256];
	int rc;

	rc = lode_rpc_create(out, ctl->timeout_ms ? ctl->timeout_ms : timeout_ms);
	if (rc)
		return rc;
	if (!path || !*path)
		return lode_rpc_set_auth(*out, NULL, LODE_ROLE_ADMIN);
	rc = lode_keyring_load(path, &kr, why, sizeof(why));
	if (rc) {
		lodectl_fail_as(ctl, rc, "%s", why);
		return rc;
	}
	rc = lode_rpc_set_auth(*out, &kr, lode_keyring_best_role(&kr));
	sodium_memzero(&kr, sizeof(kr));
	return rc;
}

static int status_call(struct lode_rpc_conn *conn, uint32_t max, struct lode_wire_scrub_status *st,
		       struct lode_wire_scrub_bad *bad)
{
	struct lode_wire_scrub_status_req q = {.max = max};
	struct lode_call c = {.opcode = LODE_OP_OBJ_SCRUB_STATUS,
			      .body = &q,
			      .body_len = sizeof(q),
			      .reply_body = st,
			      .reply_body_max = sizeof(*st),
			      .reply_data = bad,
			      .reply_data_max = bad ? (uint64_t)max * sizeof(*bad) : 0};
	int rc = lode_rpc_call(conn, &c);

	if (rc)
		return rc;
	if (c.reply_body_len != sizeof(*st) || st->count > max ||
	    c.reply_data_len != (uint64_t)st->count * sizeof(*bad))
		return -EPROTO;
	return 0;
}

static const char *state_name(uint32_t s)
{
	switch (s) {
	case LODE_SCRUB_NEVER:
		return "never";
	case LODE_SCRUB_RUNNING:
		return "running";
	case LODE_SCRUB_DONE:
		return "done";
	case LODE_SCRUB_CANCELLED:
		return "cancelled";
	case LODE_SCRUB_FAILED:
		return "failed";
	}
	return "unknown";
}

static const char *errno_name(int e)
{
	switch (e) {
	case 0:
		return "ok";
	case ENOENT:
		return "ENOENT";
	case ESTALE:
		return "ESTALE";
	case EBUSY:
		return "EBUSY";
	case EAGAIN:
		return "EAGAIN";
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case EACCES:
		return "EACCES";
	}
	return "EIO";
}

/* ---- lodectl status: each target's last scrub ---- */

struct lodectl_scrub_peek {
	struct lodectl *ctl;
	struct lode_rpc *rpc;
	char *lines;
	size_t len;
};

struct lodectl_scrub_peek *lodectl_scrub_peek_open(struct lodectl *ctl)
{
	struct lodectl_scrub_peek *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->ctl = ctl;
	if (rpc_open(ctl, 3000, &p->rpc)) {
		free(p);
		return NULL;
	}
	return p;
}

static void peek_line(struct lodectl_scrub_peek *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void peek_line(struct lodectl_scrub_peek *p, const char *fmt, ...)
{
	char buf[512], *n;
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if ((size_t)len >= sizeof(buf))
		len = sizeof(buf) - 1;
	n = realloc(p->lines, p->len + (size_t)len + 1);
	if (!n)
		return;
	memcpy(n + p->len, buf, (size_t)len + 1);
	p->lines = n;
	p->len += (size_t)len;
}

void lodectl_scrub_peek_target(struct lodectl_scrub_peek *p, uint32_t id, const char *addr, bool up,
			       json_object *target)
{
	struct lode_wire_scrub_status st;
	struct lode_rpc_conn *conn = NULL;
	json_object *o;
	char when[32], bytes[32];
	int rc;

	if (!p || !up) {
		json_add_null(target, "scrub");
		return;
	}
	rc = lode_rpc_conn_open(p->rpc, addr, &conn);
	if (!rc)
		rc = status_call(conn, 0, &st, NULL);
	lode_rpc_conn_close(conn);
	if (rc) {
		json_add_null(target, "scrub");
		peek_line(p, "  target %u: scrub status unknown: %s\n", id, strerror(-rc));
		return;
	}
	o = json_object_new_object();
	json_add_str(o, "state", state_name(st.state));
	json_add_u64(o, "run", st.run);
	json_add_u64(o, "started_ns", st.started);
	json_add_u64(o, "finished_ns", st.finished);
	json_add_u64(o, "rate", st.rate);
	json_add_u64(o, "objects_total", st.objects_total);
	json_add_u64(o, "bytes_total", st.bytes_total);
	json_add_u64(o, "objects_checked", st.objects_checked);
	json_add_u64(o, "bytes_checked", st.bytes_checked);
	json_add_u64(o, "bad_objects", st.bad_objects);
	json_add_u64(o, "bad_chunks", st.bad_chunks);
	json_add_u64(o, "reported", st.reported);
	if (st.state == LODE_SCRUB_FAILED)
		json_add_str(o, "error", strerror(-lode_status_to_errno(st.error)));
	json_object_object_add(target, "scrub", o);
	if (st.state == LODE_SCRUB_NEVER) {
		peek_line(p, "  target %u: never scrubbed since the OSS started\n", id);
		return;
	}
	lodectl_time_string((int64_t)(st.finished ? st.finished : st.started), false, when,
			    sizeof(when));
	lodectl_bytes_string(st.bytes_checked, bytes, sizeof(bytes));
	if (st.state == LODE_SCRUB_RUNNING)
		peek_line(p,
			  "  target %u: running since %s: %" PRIu64 " of %" PRIu64
			  " objects (%s), %" PRIu64 " bad\n",
			  id, when, st.objects_checked, st.objects_total, bytes, st.bad_objects);
	else
		peek_line(p,
			  "  target %u: %s %s: %" PRIu64 " objects (%s), %" PRIu64
			  " bad objects (%" PRIu64 " chunks)\n",
			  id, state_name(st.state), when, st.objects_checked, bytes, st.bad_objects,
			  st.bad_chunks);
}

void lodectl_scrub_peek_close(struct lodectl_scrub_peek *p)
{
	if (!p)
		return;
	if (!p->ctl->json && !p->ctl->quiet && p->len)
		printf("scrub:\n%s", p->lines);
	lode_rpc_destroy(p->rpc);
	free(p->lines);
	free(p);
}

/* ---- lodectl scrub ---- */

static int connect_all(struct scrub *s, bool one, uint32_t only)
{
	struct lode_target_info *ti = calloc(LODE_TARGETS_MAX, sizeof(*ti));
	int n, rc;

	if (!ti)
		return -ENOMEM;
	rc = rpc_open(s->ctl, 30000, &s->rpc);
	if (rc) {
		free(ti);
		if (!s->ctl->failed)
			lodectl_fail(s->ctl, rc, "cannot set up the connections");
		return rc;
	}
	rc = lode_rpc_conn_open(s->rpc, s->ctl->mds_addr, &s->mds);
	if (rc) {
		free(ti);
		return lodectl_fail(s->ctl, rc, "cannot reach the MDS at %s", s->ctl->mds_addr), rc;
	}
	n = lode_targets(s->ctl->client, ti, LODE_TARGETS_MAX);
	if (n < 0) {
		free(ti);
		return lodectl_fail(s->ctl, n, "cannot list the targets"), n;
	}
	s->t = calloc((size_t)n + 1, sizeof(*s->t));
	if (!s->t) {
		free(ti);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		struct stgt *t;

		if (one && ti[i].id != only)
			continue;
		t = &s->t[s->nt++];
		t->id = ti[i].id;
		snprintf(t->addr, sizeof(t->addr), "%s", ti[i].addr);
		if (!ti[i].up) {
			free(ti);
			lodectl_fail_as(s->ctl, -EHOSTDOWN,
					"target %u (%s) is down: its objects cannot be scrubbed",
					t->id, t->addr);
			return -EHOSTDOWN;
		}
		rc = lode_rpc_conn_open(s->rpc, t->addr, &t->conn);
		if (rc) {
			free(ti);
			lodectl_fail(s->ctl, rc, "cannot reach target %u at %s", t->id, t->addr);
			return rc;
		}
	}
	free(ti);
	if (one && !s->nt) {
		lodectl_fail_as(s->ctl, -ENOENT,
				"no target %u in this cluster (see lodectl status)", only);
		return -ENOENT;
	}
	return 0;
}

static int start_all(struct scrub *s, uint64_t rate)
{
	for (unsigned i = 0; i < s->nt; i++) {
		struct stgt *t = &s->t[i];
		struct lode_wire_scrub_req q = {.action = LODE_SCRUB_START, .rate = rate};
		int rc = lode_rpc_simple(t->conn, LODE_OP_OBJ_SCRUB, &q, sizeof(q), &t->st,
					 sizeof(t->st));

		t->ours = rc == 0;
		if (rc == -EBUSY) {
			/* one runs already (another lodectl's): follow it */
			rc = status_call(t->conn, 0, &t->st, NULL);
			if (!rc)
				lodectl_note(
				    s->ctl, "target %u: a scrub is running already; following it\n",
				    t->id);
		}
		if (rc) {
			return lodectl_fail(s->ctl, rc, "cannot start the scrub of target %u at %s",
					    t->id, t->addr),
			       rc;
		}
		t->run = t->st.run;
		t->running = true;
	}
	return 0;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Cancels the scrubs this lodectl started that still run. */
static void cancel_ours(struct scrub *s)
{
	for (unsigned i = 0; i < s->nt; i++) {
		struct stgt *t = &s->t[i];
		struct lode_wire_scrub_req q = {.action = LODE_SCRUB_CANCEL};

		if (t->running && t->ours)
			lode_rpc_simple(t->conn, LODE_OP_OBJ_SCRUB, &q, sizeof(q), NULL, 0);
	}
}

/* Polls until every scrub has ended, feeding the progress bar. */
static int follow(struct scrub *s, struct lodectl_progress *prog)
{
	unsigned left = s->nt;

	while (left) {
		uint64_t total = 0;

		sleep_ns(POLL_NS);
		if (interrupted) {
			cancel_ours(s);
			return lodectl_fail_as(s->ctl, -EINTR,
					       "interrupted: the scrubs it started are cancelled"),
			       -EINTR;
		}
		for (unsigned i = 0; i < s->nt; i++) {
			struct stgt *t = &s->t[i];
			int rc;

			if (t->running) {
				rc = status_call(t->conn, 0, &t->st, NULL);
				if (rc)
					return lodectl_fail(s->ctl, rc,
							    "lost the scrub of target %u at %s",
							    t->id, t->addr),
					       rc;
				if (t->st.run != t->run)
					return lodectl_fail_as(s->ctl, -ESTALE,
							       "target %u restarted or began "
							       "another scrub meanwhile",
							       t->id),
					       -ESTALE;
				if (t->st.state != LODE_SCRUB_RUNNING) {
					t->running = false;
					left--;
				}
			}
			total += t->st.bytes_total;
			if (t->st.bytes_checked > t->shown) {
				lodectl_progress_total(prog, total);
				lodectl_progress_add(prog, t->st.bytes_checked - t->shown);
				t->shown = t->st.bytes_checked;
			}
		}
		lodectl_progress_total(prog, total);
	}
	return 0;
}

/* The ends of the scrubs: each target's bad objects. */
static int collect(struct scrub *s)
{
	for (unsigned i = 0; i < s->nt; i++) {
		struct stgt *t = &s->t[i];
		int rc;

		t->bad = calloc(LODE_SCRUB_BAD_MAX, sizeof(*t->bad));
		if (!t->bad)
			return -ENOMEM;
		rc = status_call(t->conn, LODE_SCRUB_BAD_MAX, &t->st, t->bad);
		if (rc)
			return lodectl_fail(s->ctl, rc, "cannot read the scrub of target %u",
					    t->id),
			       rc;
	}
	return 0;
}

/* The path of inode ino ("" when no name leads to it), from the MDS. */
static int path_of(struct scrub *s, uint64_t ino, char *path, size_t cap)
{
	struct lode_wire_fsck_rep rep;
	int n = lodectl_fsck_page(s->mds, LODE_FSCK_PATH, ino, 1, &rep, path, cap - 1);

	if (n < 0)
		return n;
	path[n] = '\0';
	return 0;
}

/* Files handed to lode_repair already, and whether that repaired them. */
struct repaired {
	uint64_t ino;
	bool ok;
};

/* lode_repair of the file of a bad copy, once per file. Returns whether every degraded
 * copy of it is whole again. */
static bool repair_file(struct scrub *s, uint64_t ino, const char *path, struct repaired **done,
			size_t *ndone)
{
	struct lode_repair_result res = {0};
	struct repaired *n;
	bool ok;
	int rc;

	for (size_t i = 0; i < *ndone; i++)
		if ((*done)[i].ino == ino)
			return (*done)[i].ok;
	rc = lode_repair(s->ctl->client, path, &res);
	ok = rc == 0 && res.copies_repaired == res.copies_degraded;
	if (ok)
		lodectl_note(s->ctl, "repaired %s: %u copies\n", path, res.copies_repaired);
	else
		lodectl_note(s->ctl, "cannot repair %s: %s\n", path,
			     rc ? strerror(-rc) : "some copies stay degraded");
	n = realloc(*done, (*ndone + 1) * sizeof(**done));
	if (n) {
		*done = n;
		n[(*ndone)++] = (struct repaired){.ino = ino, .ok = ok};
	}
	return ok;
}

/* Prints and records every bad copy; with repair, repairs their files. */
static int findings(struct scrub *s, bool repair, uint64_t *found, uint64_t *fixed)
{
	json_object *arr = json_object_new_array();
	struct repaired *done = NULL;
	size_t ndone = 0;
	char *path = malloc(4097);

	json_object_object_add(s->ctl->out, "bad", arr);
	if (!path)
		return -ENOMEM;
	for (unsigned i = 0; i < s->nt; i++) {
		struct stgt *t = &s->t[i];

		for (uint32_t j = 0; j < t->st.count; j++) {
			const struct lode_wire_scrub_bad *b = &t->bad[j];
			int report = -lode_status_to_errno(b->report);
			json_object *o = json_object_new_object();
			bool fixed_one = false;
			char shown[4200];
			int rc = path_of(s, b->obj.ino, path, 4097);

			if (rc)
				path[0] = '\0';
			(*found)++;
			if (repair && report == 0 && path[0])
				fixed_one = repair_file(s, b->obj.ino, path, &done, &ndone);
			if (fixed_one)
				(*fixed)++;
			json_add_u64(o, "target", t->id);
			json_add_u64(o, "ino", b->obj.ino);
			json_add_u64(o, "generation", b->obj.generation);
			json_add_u64(o, "stripe", b->obj.stripe);
			if (path[0])
				json_add_str(o, "path", path);
			else
				json_add_null(o, "path");
			json_add_u64(o, "first_bad_chunk", b->first_bad);
			json_add_u64(o, "bad_chunks", b->bad_chunks);
			json_add_bool(o, "degraded", report == 0);
			json_add_str(o, "report", errno_name(report));
			json_add_bool(o, "repaired", fixed_one);
			json_object_array_add(arr, o);
			if (s->ctl->json || s->ctl->quiet)
				continue;
			printf("bad copy: target %u, %s (inode %" PRIu64 ", stripe %u): %u bad "
			       "chunks from chunk %" PRIu64 "; %s%s\n",
			       t->id,
			       path[0] ? lodectl_shown_name(path, shown, sizeof(shown))
				       : "(no name)",
			       (uint64_t)b->obj.ino, b->obj.stripe, b->bad_chunks, b->first_bad,
			       report == 0	 ? "the copy is degraded"
			       : report == EBUSY ? "the stripe's last good copy: not marked"
			       : report == ENOENT || report == ESTALE ? "the file or copy is gone"
								      : "the MDS was not told",
			       fixed_one ? " (repaired)" : "");
		}
		if (t->st.bad_objects > t->st.count) {
			/* more than an OSS remembers: counted, not named */
			*found += t->st.bad_objects - t->st.count;
			lodectl_note(s->ctl,
				     "target %u: %" PRIu64 " more bad objects (see its log)\n",
				     t->id, t->st.bad_objects - t->st.count);
		}
	}
	free(done);
	free(path);
	return 0;
}

static void summary(struct scrub *s)
{
	json_object *arr = json_object_new_array();

	json_object_object_add(s->ctl->out, "targets", arr);
	for (unsigned i = 0; i < s->nt; i++) {
		const struct stgt *t = &s->t[i];
		json_object *o = json_object_new_object();
		double secs = t->st.finished > t->st.started
				  ? (double)(t->st.finished - t->st.started) / 1e9
				  : 0;
		char bytes[32];

		json_add_u64(o, "id", t->id);
		json_add_str(o, "address", t->addr);
		json_add_str(o, "state", state_name(t->st.state));
		if (t->st.state == LODE_SCRUB_FAILED)
			json_add_str(o, "error", strerror(-lode_status_to_errno(t->st.error)));
		json_add_u64(o, "rate", t->st.rate);
		json_add_u64(o, "objects_checked", t->st.objects_checked);
		json_add_u64(o, "bytes_checked", t->st.bytes_checked);
		json_add_u64(o, "bad_objects", t->st.bad_objects);
		json_add_u64(o, "bad_chunks", t->st.bad_chunks);
		json_add_double(o, "seconds", secs);
		json_add_double(o, "bytes_per_s",
				secs > 0 ? (double)t->st.bytes_checked / secs : 0);
		json_object_array_add(arr, o);
		if (t->st.state != LODE_SCRUB_DONE)
			s->oper = true;
		if (s->ctl->json || s->ctl->quiet)
			continue;
		lodectl_bytes_string(t->st.bytes_checked, bytes, sizeof(bytes));
		printf("target %u: %s, %" PRIu64 " objects, %s in %.2f s (%.1f MiB/s), %" PRIu64
		       " bad objects (%" PRIu64 " chunks)%s%s\n",
		       t->id, state_name(t->st.state), t->st.objects_checked, bytes, secs,
		       secs > 0 ? (double)t->st.bytes_checked / secs / (1 << 20) : 0,
		       t->st.bad_objects, t->st.bad_chunks,
		       t->st.state == LODE_SCRUB_FAILED ? ": " : "",
		       t->st.state == LODE_SCRUB_FAILED
			   ? strerror(-lode_status_to_errno(t->st.error))
			   : "");
	}
}

int cmd_scrub(struct lodectl *ctl, int argc, char **argv)
{
	bool repair = false;
	uint64_t rate = RATE_DEFAULT, target = 0;
	const struct lodectl_opt opts[] = {
	    {"--repair", NULL, LODECTL_OPT_FLAG, &repair},
	    {"--rate", NULL, LODECTL_OPT_UINT, &rate, 0, RATE_MAX},
	    {"--target", NULL, LODECTL_OPT_UINT, &target, 1, UINT32_MAX},
	    {NULL}};
	struct scrub s = {.ctl = ctl};
	struct lodectl_progress *prog = NULL;
	uint64_t found = 0, fixed = 0;
	int rc, status;

	if (lodectl_parse(ctl, argc, argv, opts, 0, 0, NULL) < 0)
		return ctl->exit == LODECTL_EXIT_FAIL ? EXIT_OPER : ctl->exit;
	rc = connect_all(&s, target != 0, (uint32_t)target);
	if (!rc)
		rc = start_all(&s, rate << 20);
	if (!rc) {
		struct sigaction sa = {.sa_handler = on_signal}, old[3];
		static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};

		for (int k = 0; k < 3; k++)
			sigaction(sigs[k], &sa, &old[k]);
		prog = lodectl_progress_start(ctl, "scrub", 0);
		rc = follow(&s, prog);
		lodectl_progress_end(prog);
		for (int k = 0; k < 3; k++)
			sigaction(sigs[k], &old[k], NULL);
	}
	if (!rc)
		rc = collect(&s);
	if (!rc) {
		summary(&s);
		rc = findings(&s, repair, &found, &fixed);
		if (rc)
			lodectl_fail(ctl, rc, "scrub stopped");
	}
	json_add_bool(ctl->out, "repair", repair);
	json_add_u64(ctl->out, "rate", rate << 20);
	json_add_u64(ctl->out, "bad_copies", found);
	json_add_u64(ctl->out, "repaired", fixed);
	json_add_u64(ctl->out, "left", found - fixed);
	for (unsigned i = 0; i < s.nt; i++)
		free(s.t[i].bad);
	free(s.t);
	lode_rpc_destroy(s.rpc); /* closes the connections */
	if (rc || s.oper)
		status = EXIT_OPER;
	else if (found > fixed)
		status = EXIT_LEFT;
	else if (found)
		status = EXIT_FIXED;
	else
		status = EXIT_CLEAN;
	json_add_u64(ctl->out, "exit", (uint64_t)status);
	if (!ctl->json && !ctl->quiet && !rc)
		printf("scrub: %u targets: %" PRIu64 " bad copies, %" PRIu64 " repaired, %" PRIu64
		       " left\n",
		       s.nt, found, fixed, found - fixed);
	return status;
}
