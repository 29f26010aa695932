/* SPDX-License-Identifier: MIT */
/*
 * The OSS's scrub (see scrub.h): one thread per running scrub, with its own loop, its own
 * I/O context on the store and its own connection to the MDS, so that neither the workers
 * that serve clients nor the MDS link's heartbeats ever wait for it.
 *
 * It lists the store twice: once for the totals that progress and ETA are measured against,
 * then page by page to read each object in READ_STEP pieces through lode_objstore_read_disk:
 * past the page cache where the file system allows, so that what is checked is what the
 * disk holds, not a cached copy, and the readers' cached data is not pushed out by every
 * object of the store. No lock is held across a first read, so clients go on. Each chunk's
 * bytes are summed and compared with the stored checksum. A write racing the read can show
 * new bytes with the old checksum for a moment (data is stored before its checksums), so a
 * piece with a bad chunk is read again after RECHECK_MS, holding its chunks against writes
 * as writes hold them against each other (objlock.c), and counts only if it is still bad:
 * a rewrite that never pauses cannot make a good copy look bad. Throttling: after each
 * piece the thread sleeps until the bytes read so far, at `rate`, would have taken as long
 * as the scrub has run.
 */
#include "scrub.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "handlers.h"
#include "log.h"
#include "loop.h"
#include "rpc.h"

#define READ_STEP      (1u << 20) /* bytes per read: the throttle's granularity */
#define LIST_PAGE      1024
#define RECHECK_MS     100
#define RPC_TIMEOUT_MS 3000

/* DATA/scrub.last: the last scrub's result, so that a restarted OSS still tells it. */
#define LAST_NAME    "scrub.last"
#define LAST_TMP     "scrub.last.tmp"
#define LAST_MAGIC   "LODESCRB"
#define LAST_VERSION 1

struct last_hdr {
	char magic[8];
	uint32_t version;
	uint32_t count; /* lode_wire_scrub_bad records after the status */
};

struct lode_oss_scrub {
	struct lode_objstore *st;
	struct lode_oss *oss;
	char *mds_addr;
	char *data_dir; /* NULL: results are not kept on disk */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* signalled on cancel */
	/* protected by lock */
	pthread_t thread;
	bool joinable; /* a thread was started and not joined yet */
	bool cancel;
	struct lode_wire_scrub_status s;
	struct lode_wire_scrub_bad bad[LODE_SCRUB_BAD_MAX];
};

/* What one run's thread owns. */
struct run {
	struct lode_oss_scrub *s;
	uint64_t rate;
	struct lode_loop *loop;
	struct lode_objstore_io *io;
	struct lode_rpc *rpc;
	struct lode_rpc_conn *mds;
	struct lode_wire_objinfo *page;
	int64_t t0_ns; /* monotonic, for the throttle */
	uint64_t read; /* bytes read so far, for the throttle */
	/* the read in flight */
	bool done;
	int status;
	struct lode_obj_result res;
	struct lode_obj_range range; /* a recheck's hold on its chunks */
	bool held;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sleeps until monotonic `until_ns` or a cancel; returns true when cancelled. */
static bool sleep_until(struct lode_oss_scrub *s, int64_t until_ns)
{
	struct timespec ts = {.tv_sec = until_ns / 1000000000, .tv_nsec = until_ns % 1000000000};
	bool c;

	pthread_mutex_lock(&s->lock);
	while (!s->cancel && pthread_cond_timedwait(&s->cond, &s->lock, &ts) != ETIMEDOUT)
		;
	c = s->cancel;
	pthread_mutex_unlock(&s->lock);
	return c;
}

static bool cancelled(struct lode_oss_scrub *s)
{
	bool c;

	pthread_mutex_lock(&s->lock);
	c = s->cancel;
	pthread_mutex_unlock(&s->lock);
	return c;
}

static void read_done(void *arg, int status, struct lode_obj_result *res)
{
	struct run *r = arg;

	r->done = true;
	r->status = status;
	if (!status)
		r->res = *res; /* data and sums are ours now */
	lode_loop_stop(r->loop);
}

/* One piece of an object, read from the disk. Returns 0 (r->res holds it) or -errno. */
static int read_piece(struct run *r, const struct lode_wire_objid *id, uint64_t off)
{
	int rc;

	memset(&r->res, 0, sizeof(r->res));
	r->done = false;
	lode_objstore_read_disk(r->io, id, off, READ_STEP, read_done, r);
	while (!r->done) {
		rc = lode_loop_run(r->loop);
		if (rc)
			return rc;
	}
	return r->status;
}

static void range_granted(struct lode_obj_range *rg)
{
	struct run *r = lode_container_of(rg, struct run, range);

	r->held = true;
	lode_loop_stop(r->loop);
}

/* The same read held against writes of its chunks, as they hold them against each other:
 * bytes and checksums of one moment. A queued hold cannot be given up, so this waits for it
 * whatever the loop says. */
static int read_piece_held(struct run *r, const struct lode_wire_objid *id, uint64_t off)
{
	int rc;

	memset(&r->range, 0, sizeof(r->range));
	r->range.id = *id;
	r->range.first = off / LODE_CHUNK_SIZE;
	r->range.end = (off + READ_STEP + LODE_CHUNK_SIZE - 1) / LODE_CHUNK_SIZE;
	r->range.loop = r->loop;
	r->range.granted = range_granted;
	r->held = lode_objstore_range_lock(r->s->st, &r->range);
	while (!r->held)
		lode_loop_run(r->loop);
	rc = read_piece(r, id, off);
	lode_objstore_range_unlock(r->s->st, &r->range);
	return rc;
}

static void piece_free(struct run *r)
{
	lode_obj_result_free_data(&r->res);
	free(r->res.sums);
	memset(&r->res, 0, sizeof(r->res));
}

/* Chunks of the piece in r->res whose bytes do not match their checksum; the first one's
 * index (within the piece) in *first. */
static uint32_t bad_chunks(const struct run *r, uint32_t *first)
{
	uint32_t nbad = 0;

	for (uint32_t i = 0; i < r->res.nchunks; i++) {
		size_t at = (size_t)i * LODE_CHUNK_SIZE;
		size_t len = r->res.data_len > at ? r->res.data_len - at : 0;

		if (len > LODE_CHUNK_SIZE)
			len = LODE_CHUNK_SIZE;
		if (lode_chunk_sum((const char *)r->res.data + at, len) == r->res.sums[i])
			continue;
		if (!nbad)
			*first = i;
		nbad++;
	}
	return nbad;
}

/* Tells the MDS; returns the wire status of its answer. */
static int32_t report(struct run *r, const struct lode_wire_objid *id, uint64_t first,
		      uint32_t nbad)
{
	struct lode_wire_scrub_report_req q = {.obj = *id, .bad_chunks = nbad, .first_bad = first};
	int rc;

	q.target_id = atomic_load(&r->s->oss->target_id);
	if (!q.target_id)
		rc = -EAGAIN; /* not registered with the MDS yet */
	else
		rc = lode_rpc_simple(r->mds, LODE_OP_SCRUB_REPORT, &q, sizeof(q), NULL, 0);
	if (rc)
		LODE_WARN("scrub: object %llx.%llx.%x has %u bad chunks from chunk %llu; telling "
			  "the MDS failed: %s",
			  (unsigned long long)id->ino, (unsigned long long)id->generation,
			  id->stripe, nbad, (unsigned long long)first, strerror(-rc));
	else
		LODE_WARN("scrub: object %llx.%llx.%x has %u bad chunks from chunk %llu; the MDS "
			  "marked the copy degraded",
			  (unsigned long long)id->ino, (unsigned long long)id->generation,
			  id->stripe, nbad, (unsigned long long)first);
	return lode_status_from_errno(rc);
}

static void found_bad(struct run *r, const struct lode_wire_objid *id, uint64_t first,
		      uint32_t nbad)
{
	struct lode_oss_scrub *s = r->s;
	int32_t st = report(r, id, first, nbad);

	pthread_mutex_lock(&s->lock);
	if (s->s.bad_objects < LODE_SCRUB_BAD_MAX) {
		struct lode_wire_scrub_bad *b = &s->bad[s->s.bad_objects];

		memset(b, 0, sizeof(*b));
		b->obj = *id;
		b->first_bad = first;
		b->bad_chunks = nbad;
		b->report = st;
	}
	s->s.bad_objects++;
	s->s.bad_chunks += nbad;
	if (!st)
		s->s.reported++;
	pthread_mutex_unlock(&s->lock);
}

/* Waits as long as the throttle asks; returns true when cancelled meanwhile. */
static bool throttle(struct run *r, uint64_t bytes)
{
	r->read += bytes;
	if (!r->rate)
		return cancelled(r->s);
	return sleep_until(r->s, r->t0_ns + (int64_t)((double)r->read / (double)r->rate * 1e9));
}

/* Reads and checks one object. Returns 0, 1 when cancelled, or -errno (the store failed). */
static int scrub_object(struct run *r, const struct lode_wire_objinfo *o)
{
	struct lode_oss_scrub *s = r->s;
	uint64_t first = 0, nbad = 0;

	for (uint64_t off = 0;; off += READ_STEP) {
		uint32_t f = 0, n;
		uint64_t got;
		int rc = read_piece(r, &o->obj, off);

		if (rc == -EBADMSG) {
			/* a chunk with a checksum and no data: lost bytes */
			if (!nbad)
				first = off / LODE_CHUNK_SIZE;
			nbad++;
			break;
		}
		if (rc == -ENOENT)
			break; /* removed meanwhile */
		if (rc)
			return rc;
		n = bad_chunks(r, &f);
		if (n) {
			piece_free(r);
			if (sleep_until(s, mono_ns() + RECHECK_MS * 1000000L))
				return 1;
			rc = read_piece_held(r, &o->obj, off);
			if (rc)
				return rc == -ENOENT ? 0 : rc;
			n = bad_chunks(r, &f);
		}
		if (n) {
			if (!nbad)
				first = off / LODE_CHUNK_SIZE + f;
			nbad += n;
		}
		got = r->res.data_len;
		piece_free(r);
		pthread_mutex_lock(&s->lock);
		s->s.bytes_checked += got;
		if (s->s.bytes_checked > s->s.bytes_total)
			s->s.bytes_total = s->s.bytes_checked;
		pthread_mutex_unlock(&s->lock);
		if (throttle(r, got))
			return 1;
		if (got < READ_STEP)
			break;
	}
	if (nbad)
		found_bad(r, &o->obj, first, nbad > UINT32_MAX ? UINT32_MAX : (uint32_t)nbad);
	pthread_mutex_lock(&s->lock);
	s->s.objects_checked++;
	if (s->s.objects_checked > s->s.objects_total)
		s->s.objects_total = s->s.objects_checked;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Totals for progress: every object and its size, as listed now. */
static int count_all(struct run *r)
{
	struct lode_wire_objid after = {0};
	uint64_t objects = 0, bytes = 0;
	int eof = 0;

	while (!eof) {
		int n = lode_objstore_list(r->s->st, &after, LIST_PAGE, r->page, &eof);

		if (n < 0)
			return n;
		for (int i = 0; i < n; i++)
			bytes += r->page[i].size;
		objects += (uint64_t)n;
		if (n)
			after = r->page[n - 1].obj;
		if (cancelled(r->s))
			return 1;
	}
	pthread_mutex_lock(&r->s->lock);
	r->s->s.objects_total = objects;
	r->s->s.bytes_total = bytes;
	pthread_mutex_unlock(&r->s->lock);
	return 0;
}

static int scrub_all(struct run *r)
{
	struct lode_wire_objid after = {0};
	int eof = 0, rc;

	rc = count_all(r);
	if (rc)
		return rc;
	r->t0_ns = mono_ns();
	while (!eof) {
		int n = lode_objstore_list(r->s->st, &after, LIST_PAGE, r->page, &eof);

		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			rc = scrub_object(r, &r->page[i]);
			if (rc)
				return rc;
		}
		if (n)
			after = r->page[n - 1].obj;
	}
	return 0;
}

static int run_setup(struct run *r)
{
	struct lode_oss *oss = r->s->oss;
	int rc;

	r->page = malloc(LIST_PAGE * sizeof(*r->page));
	if (!r->page)
		return -ENOMEM;
	rc = lode_loop_create(&r->loop, 64);
	if (!rc)
		rc = lode_objstore_io_create(r->s->st, r->loop, 16, &r->io);
	if (!rc)
		rc = lode_rpc_create(&r->rpc, RPC_TIMEOUT_MS);
	if (!rc)
		rc = lode_rpc_set_auth(r->rpc, oss->keys, LODE_ROLE_OSS);
	if (!rc)
		rc = lode_rpc_conn_open(r->rpc, r->s->mds_addr, &r->mds);
	return rc;
}

static void run_teardown(struct run *r)
{
	lode_rpc_destroy(r->rpc);
	lode_objstore_io_destroy(r->io);
	if (r->loop)
		lode_loop_run_pending(r->loop);
	lode_loop_destroy(r->loop);
	free(r->page);
}

/* Writes the result, ended in state `end`, to DATA/scrub.last (tmp, fsync, rename): an OSS
 * that restarts tells the last scrub it finished, not "never". Only the scrub's own thread
 * writes it, and the next start joins that thread first, so writes never overlap. It runs
 * before the end is published, so whoever sees the scrub ended finds its result on disk. */
static void save_last(struct lode_oss_scrub *s, uint32_t end)
{
	struct last_hdr h = {.magic = LAST_MAGIC, .version = LAST_VERSION};
	struct lode_wire_scrub_status st;
	struct lode_wire_scrub_bad *bad = NULL;
	struct iovec iov[3];
	ssize_t want, n;
	int dirfd, fd, err = 0;

	if (!s->data_dir)
		return;
	bad = malloc(LODE_SCRUB_BAD_MAX * sizeof(*bad));
	if (!bad)
		return;
	lode_oss_scrub_status(s, &st, bad, LODE_SCRUB_BAD_MAX);
	st.state = end;
	h.count = st.count;
	iov[0] = (struct iovec){.iov_base = &h, .iov_len = sizeof(h)};
	iov[1] = (struct iovec){.iov_base = &st, .iov_len = sizeof(st)};
	iov[2] = (struct iovec){.iov_base = bad, .iov_len = (size_t)st.count * sizeof(*bad)};
	want = (ssize_t)(iov[0].iov_len + iov[1].iov_len + iov[2].iov_len);
	dirfd = open(s->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		err = -errno;
		goto out;
	}
	fd = openat(dirfd, LAST_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto out_dir;
	}
	n = writev(fd, iov, 3);
	if (n != want)
		err = n < 0 ? -errno : -EIO;
	if (!err && fsync(fd) < 0)
		err = -errno;
	close(fd);
	if (!err && renameat(dirfd, LAST_TMP, dirfd, LAST_NAME) < 0)
		err = -errno;
	if (err)
		unlinkat(dirfd, LAST_TMP, 0);
out_dir:
	close(dirfd);
out:
	if (err)
		LODE_WARN("scrub: keeping the result in %s/%s: %s", s->data_dir, LAST_NAME,
			  strerror(-err));
	free(bad);
}

/* Reads DATA/scrub.last, if any, into s (before any scrub runs). A file that is not one
 * this version wrote is ignored, with a warning. */
static void load_last(struct lode_oss_scrub *s)
{
	struct last_hdr h;
	struct lode_wire_scrub_status st;
	char path[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", s->data_dir, LAST_NAME);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, &h, sizeof(h));
	if (n != sizeof(h) || memcmp(h.magic, LAST_MAGIC, 8) || h.version != LAST_VERSION ||
	    h.count > LODE_SCRUB_BAD_MAX)
		goto bad;
	n = read(fd, &st, sizeof(st));
	if (n != sizeof(st) || st.count != h.count ||
	    (st.state != LODE_SCRUB_DONE && st.state != LODE_SCRUB_CANCELLED &&
	     st.state != LODE_SCRUB_FAILED) ||
	    st.count != (st.bad_objects < LODE_SCRUB_BAD_MAX ? st.bad_objects : LODE_SCRUB_BAD_MAX))
		goto bad;
	n = read(fd, s->bad, (size_t)h.count * sizeof(s->bad[0]));
	if (n != (ssize_t)(h.count * sizeof(s->bad[0])) || read(fd, &h, 1) != 0)
		goto bad;
	close(fd);
	st.count = 0;
	s->s = st;
	return;
bad:
	close(fd);
	memset(s->bad, 0, sizeof(s->bad));
	LODE_WARN("scrub: ignoring %s: not a scrub result this OSS wrote", path);
}

static void *scrub_main(void *arg)
{
	struct run *r = arg;
	struct lode_oss_scrub *s = r->s;
	uint32_t end;
	int rc;

	rc = run_setup(r);
	if (!rc)
		rc = scrub_all(r);
	run_teardown(r);
	pthread_mutex_lock(&s->lock);
	s->s.finished = (uint64_t)lode_now_ns();
	if (rc == 1 || (rc == 0 && s->cancel))
		end = LODE_SCRUB_CANCELLED;
	else if (rc) {
		end = LODE_SCRUB_FAILED;
		s->s.error = lode_status_from_errno(rc);
	} else {
		end = LODE_SCRUB_DONE;
	}
	pthread_mutex_unlock(&s->lock);
	save_last(s, end);
	pthread_mutex_lock(&s->lock);
	s->s.state = end;
	LODE_INFO("scrub %llu %s: %llu objects, %llu bytes checked, %llu bad objects "
		  "(%llu chunks)%s%s",
		  (unsigned long long)s->s.run,
		  s->s.state == LODE_SCRUB_DONE	       ? "done"
		  : s->s.state == LODE_SCRUB_CANCELLED ? "cancelled"
						       : "failed",
		  (unsigned long long)s->s.objects_checked, (unsigned long long)s->s.bytes_checked,
		  (unsigned long long)s->s.bad_objects, (unsigned long long)s->s.bad_chunks,
		  rc < 0 ? ": " : "", rc < 0 ? strerror(-rc) : "");
	pthread_mutex_unlock(&s->lock);
	free(r);
	return NULL;
}

int lode_oss_scrub_create(struct lode_oss_scrub **out, struct lode_objstore *st,
			  struct lode_oss *oss, const char *mds_addr, const char *data_dir)
{
	struct lode_oss_scrub *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;

	if (!s)
		return -ENOMEM;
	s->mds_addr = strdup(mds_addr);
	s->data_dir = data_dir ? strdup(data_dir) : NULL;
	if (!s->mds_addr || (data_dir && !s->data_dir)) {
		free(s->mds_addr);
		free(s->data_dir);
		free(s);
		return -ENOMEM;
	}
	if (s->data_dir)
		load_last(s);
	s->st = st;
	s->oss = oss;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	*out = s;
	return 0;
}

void lode_oss_scrub_destroy(struct lode_oss_scrub *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->cancel = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->joinable)
		pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s->mds_addr);
	free(s->data_dir);
	free(s);
}

int lode_oss_scrub_start(struct lode_oss_scrub *s, uint64_t rate)
{
	struct run *r;
	uint64_t run;
	int rc;

	pthread_mutex_lock(&s->lock);
	if (s->s.state == LODE_SCRUB_RUNNING) {
		pthread_mutex_unlock(&s->lock);
		return -EBUSY;
	}
	if (s->joinable) {
		/* the last run has set its result: its thread only returns now */
		pthread_join(s->thread, NULL);
		s->joinable = false;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		pthread_mutex_unlock(&s->lock);
		return -ENOMEM;
	}
	r->s = s;
	r->rate = rate;
	run = s->s.run + 1;
	memset(&s->s, 0, sizeof(s->s));
	s->s.run = run;
	s->s.state = LODE_SCRUB_RUNNING;
	s->s.started = (uint64_t)lode_now_ns();
	s->s.rate = rate;
	s->cancel = false;
	rc = -pthread_create(&s->thread, NULL, scrub_main, r);
	if (rc) {
		s->s.state = LODE_SCRUB_FAILED;
		s->s.error = lode_status_from_errno(rc);
		s->s.finished = s->s.started;
		free(r);
	} else {
		s->joinable = true;
		LODE_INFO("scrub %llu started, at most %llu bytes/s (0: unthrottled)",
			  (unsigned long long)s->s.run, (unsigned long long)rate);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void lode_oss_scrub_cancel(struct lode_oss_scrub *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->s.state == LODE_SCRUB_RUNNING) {
		s->cancel = true;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
}

void lode_oss_scrub_status(struct lode_oss_scrub *s, struct lode_wire_scrub_status *st,
			   struct lode_wire_scrub_bad *bad, uint32_t max)
{
	uint64_t n;

	pthread_mutex_lock(&s->lock);
	*st = s->s;
	n = s->s.bad_objects < LODE_SCRUB_BAD_MAX ? s->s.bad_objects : LODE_SCRUB_BAD_MAX;
	if (n > max)
		n = max;
	if (n)
		memcpy(bad, s->bad, (size_t)n * sizeof(*bad));
	pthread_mutex_unlock(&s->lock);
	st->count = (uint32_t)n;
}
