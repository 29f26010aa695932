/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: the kernel's requests over io_uring (FUSE-over-io_uring, Linux 6.14 and
 * later, with the fuse module's enable_uring parameter set), for a mount with -o io_uring.
 *
 * Why: through /dev/fuse a request wakes one of libfuse's request threads, wherever the
 * scheduler puts it, and the reply wakes the caller again. On a virtual machine a wakeup
 * of an idle CPU costs tens of microseconds (a halted virtual CPU), and a metadata call
 * through the mount is mostly such wakeups. Over io_uring the kernel keeps one queue per
 * CPU and hands a request to the queue of the CPU its caller runs on; here each queue is
 * served by threads bound to that CPU, so the request and its reply switch between two
 * threads of one CPU, which the caller was leaving anyway.
 *
 * How: the INIT reply takes FUSE_OVER_IO_URING only once a ring per thread is made
 * (fuse_dev.c; lf_uring_prepare); then up to LF_URING_THREADS threads per possible CPU,
 * bound to it, each register an entry: a 288-byte header buffer (the request's
 * fuse_in_header, its first argument, and the ring's own fields) and a payload buffer (the
 * other arguments). The kernel holds every request of the mount until each queue has an
 * entry, and falls back to /dev/fuse if it refuses one. A request is laid out as
 * /dev/fuse would have delivered it (header, first argument, payload, contiguous: the
 * payload buffer has room for the other two in front of it) and handed to libfuse, whose
 * reply comes back through fuse_dev.c's writev hook: if it answers a ring request, it goes
 * into that entry's buffers and is committed with the fetch of the next request (one
 * system call). FORGETs and INTERRUPTs still come through /dev/fuse, and notifications go
 * there.
 *
 * Entries and threads. The kernel gives a request only to an entry waiting for one, and
 * a thread serves its entries one request at a time: a thread busy with a slow request
 * (an MDS failover, a read from a dead OSS until its timeout) holds back only what came
 * to its own entries. A CPU's queue starts with LF_URING_THREADS threads and keeps
 * LF_URING_SPARE entries waiting: a thread that takes a request leaving fewer starts
 * more (up to max_threads a queue, max_threads past the first ones in all), as libfuse
 * keeps idle threads. The kernel hands a new request straight to a waiting entry (the one
 * that waited least); with none waiting it queues the request, and hands queued ones out
 * only when a reply is committed on that queue, not when an entry is registered. So a
 * queue that ran out while its threads were stuck on a server (reads from a stopped OSS,
 * until the mount's timeout) would hold every other call made on that CPU until one came
 * back.
 *
 * So a thread serves a request itself only if other entries of its queue wait and it has
 * no other entry (waiting, or held by a request answered elsewhere, whose commit would
 * wait too); else it hands the request off: to a thread started for it, which takes the
 * request's entry as its own, and the thread registers another entry unless one of its
 * own waits. Threads never end before the mount (an entry cannot be given back to the
 * kernel), so the mount starts max_threads such over its life; then the thread serves the
 * request itself. The spares keep that rare, and
 * each reply on the queue hands out one queued request. The kernel does the work of a
 * command (copying the next request into the entry) on the thread that submitted it, and
 * sends an entry's next request to the ring its last command came through: so only an
 * entry's own thread commits its replies (a reply made elsewhere wakes it to do so), and
 * the thread a request was handed to commits its reply through its own ring, which the
 * entry belongs to from then on. A request answered later by another thread
 * (fuse_defer.c: an open that waits for a lock, or hands the kernel pages) keeps its entry
 * until then, and that wait may be for a READ on the same queue (a page the store needs
 * is locked until its READ is answered): its thread waits for the reply, as the queue's
 * spares serve the rest, unless the queue is short of them (it could not grow), when
 * the thread registers another entry. A thread with two entries hands off what comes to
 * either, which leaves it one (two again if the other is held by a deferred request and
 * it must register another). A thread whose
 * request was answered here keeps its one entry, even when the commit came back with the
 * next request. Registering another entry in either case made every thread of a busy
 * mount a two-entry one that hands off all it gets (a third of the 64 KiB storm's files/s
 * at 8 processes).
 *
 * The kick. Whatever the spares, a burst can take a queue's last waiting entry before the
 * threads it makes start register theirs; what comes meanwhile is queued, and with every
 * thread stuck nothing commits (a listing waited 30 s behind stuck reads in 3 of 15 runs).
 * So once a queue grew, or a thread registered an entry while none of its own waited, the
 * kicker thread starts a thread bound to that CPU that asks the kernel for the attributes
 * of the mount's root (statx, AT_STATX_FORCE_SYNC): a request that goes to an entry
 * waiting there, answered at once (kick_answered), whose commit fetches a queued request
 * if there is one; again while such commits did, or while a kick is itself queued (up to
 * KICKS_MAX at once; lode_fuse_uring_kicks_total). A kick still queued when the mount
 * stops ends with the connection.
 */
#include <errno.h>
#include <liburing.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lode_fuse.h"

/* The kernel's interface (include/uapi/linux/fuse.h, protocol 7.42), absent from older
 * headers such as Debian 12's. */
#define LF_URING_HDR_IN_OUT 128
#define LF_URING_OP_IN	    128
#define LF_URING_REGISTER   1
#define LF_URING_COMMIT	    2

struct lf_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;
	uint32_t payload_sz;
	uint32_t padding;
	uint64_t reserved;
};

struct lf_uring_req_header {
	char in_out[LF_URING_HDR_IN_OUT]; /* fuse_in_header, or our fuse_out_header */
	char op_in[LF_URING_OP_IN];	  /* the request's first argument */
	struct lf_uring_ent_in_out ring;
};

struct lf_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

_Static_assert(sizeof(struct lf_uring_req_header) == 288, "FUSE ring header");
_Static_assert(sizeof(struct lf_uring_cmd_req) == 24, "FUSE ring command");

/* Room in front of the payload for the header and the first argument, laid out there. */
#define HEADROOM (sizeof(struct fuse_in_header) + LF_URING_OP_IN)
/* The most entries a thread registers (each a payload buffer, touched as used). */
#define ENTS_MAX 256

/* What a NOP's user_data says to the thread it wakes (a command's is its entry). */
#define WAKE_STOP   0
#define WAKE_COMMIT 1

struct lf_uring_ent {
	struct lf_uring_thread *t;
	struct lf_uring_req_header *hdr;
	char *payload;
	char *region; /* hdr, then HEADROOM, then the payload (mmap) */
	size_t region_len;
	struct iovec iov[2];
	_Atomic uint64_t unique; /* the request in service; 0: none */
	_Atomic uint64_t commit; /* its reply, made on another thread, to commit */
	bool served;		 /* a request came: the kernel took the entry */
	bool fetched;		 /* its commit came back with a queued request (committed) */
};

/* A request handed off (hand_off): its entry, its buffer there, and what times it. */
struct lf_uring_handoff {
	struct lf_uring_ent *e;
	struct fuse_buf fb;
	uint64_t unique;
	uint32_t opcode;
};

struct lf_uring_thread {
	struct lf_uring *u;
	unsigned qid;
	struct lf_uring_handoff first; /* a thread started for a request: it (e: NULL if not) */
	pthread_t th;
	bool started;
	struct io_uring ring;
	bool ring_ok;
	pthread_mutex_t sq_lock; /* the ring's submission queue: a deferred reply's thread too */
	unsigned waiting;	 /* entries waiting for a request (ring_main's thread) */
	unsigned nents;		 /* entries registered (ring_main's thread) */
	unsigned errors;	 /* entries registered again (ring_main) */
};

/* A kick (kick_start): its thread, and the statx's outcome. Freed by the kicker once
 * done, or by its own thread if the mount stopped first (lf_uring_stop). */
#define KICKS_MAX 16
enum { KICK_RUNNING, KICK_DONE, KICK_LEFT };
struct lf_uring_kick {
	pthread_t th;
	_Atomic pid_t tid; /* its thread's while its statx is in flight, for is_kick; else -1 */
	_Atomic int state;
	int err;	     /* the statx's errno (KICK_DONE) */
	char path[PATH_MAX]; /* the mount point's realpath */
};

/* A CPU's queue: its threads and how many of their entries wait for a request. */
struct lf_uring_queue {
	_Atomic int waiting; /* entries registered or committed, no request in them yet */
	_Atomic int pending; /* threads started that have not registered their entry yet */
	unsigned threads;    /* started (lf_uring's lock) */
	unsigned handed;     /* of them, started for a request handed off (lock) */
	double retry_s;	     /* after a thread could not be started: not before (lock) */
	_Atomic bool full;   /* at max_q, or the mount at its cap: starts no more */
	bool kick;	     /* it may hold queued requests: the kicker's (lock) */
	_Atomic uint64_t kicks_answered, kicks_fetched; /* kicks answered; their commits that
							 * came back with a request */
};

struct lf_uring {
	struct lode_fuse *lf;
	int fd;
	size_t payload_max;
	unsigned nq, per_q, max_q; /* queues, threads a queue at the start and at most */
	unsigned slots;		   /* a queue's: max_q, then max_threads for hand-offs */
	int spare;		  /* entries a queue keeps waiting: LF_URING_SPARE, per_q at most */
	_Atomic bool quiescing;	  /* no more threads or hand-offs (lf_uring_quiesce) */
	_Atomic bool stopping;	  /* the ring threads end at their next completion */
	struct lf_uring_queue *q; /* nq */
	struct lf_uring_thread **t; /* nq * slots, queue by queue; NULL: none there yet */
	pthread_mutex_t lock;	    /* ents */
	struct lf_uring_ent **ents;
	unsigned nents, cap;
	unsigned grown;	    /* threads started past the first ones for spares, all queues (lock) */
	unsigned handed;    /* threads started for a request handed off, all queues (lock) */
	pthread_t kicker;   /* see kick_main */
	unsigned kick_next; /* the queue kick_main looks at first (lock) */
	struct lf_uring_kick *kicks[KICKS_MAX]; /* (lock); NULL: a free slot */
	bool kicker_started;
	bool kicker_stop;	  /* (lock) */
	pthread_cond_t kick_cond; /* a queue to kick, or the stop (lock) */
};

static _Thread_local struct lf_uring_ent *serving; /* the ring thread's request now */

/* For metrics, outside struct lf_uring, which is freed at unmount while they may be read */
static _Atomic uint64_t threads_running, handoffs_made, kicks_made;

void lf_uring_counts(uint64_t *threads, uint64_t *handoffs, uint64_t *kicks)
{
	*threads = atomic_load(&threads_running);
	*handoffs = atomic_load(&handoffs_made);
	*kicks = atomic_load(&kicks_made);
}

/* Whether a request from thread pid is a kick's (thread ids are unique while they run). */
static bool is_kick(struct lf_uring *u, uint32_t pid)
{
	bool found = false;

	pthread_mutex_lock(&u->lock);
	for (unsigned i = 0; i < KICKS_MAX && !found; i++)
		found = u->kicks[i] && (uint32_t)atomic_load(&u->kicks[i]->tid) == pid;
	pthread_mutex_unlock(&u->lock);
	return found;
}

/* Wants queue qid kicked (kick_main); u's lock held. */
static void kick_want_locked(struct lf_uring *u, unsigned qid)
{
	u->q[qid].kick = true;
	pthread_cond_signal(&u->kick_cond);
}

static void kick_want(struct lf_uring *u, unsigned qid)
{
	pthread_mutex_lock(&u->lock);
	kick_want_locked(u, qid);
	pthread_mutex_unlock(&u->lock);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* t's entries waiting for a request change by d (t's thread). */
static void waiting_add(struct lf_uring_thread *t, int d)
{
	t->waiting += (unsigned)d;
	atomic_fetch_add(&t->u->q[t->qid].waiting, d);
}

/* Entries of queue qid waiting for a request, or about to. */
static int queue_spare(struct lf_uring *u, unsigned qid)
{
	return atomic_load(&u->q[qid].waiting) + atomic_load(&u->q[qid].pending);
}

/* e's reply was committed (e's thread). The kernel hands a queued request to the entry
 * within that system call if it holds one, and its completion is then in the ring already:
 * only an entry that got none is counted waiting, so that requests queued while none
 * waited (they are handed out only by commits) do not make the queue look better off
 * than it is. Returns whether the commit came back with a request. */
static bool committed(struct lf_uring_ent *e)
{
	struct io_uring_cqe *cqe;
	unsigned head;

	io_uring_for_each_cqe(&e->t->ring, head, cqe)
	{
		if (cqe->user_data == (uintptr_t)e) {
			e->fetched = true;
			return cqe->res >= 0; /* a request, not an error */
		}
	}
	waiting_add(e->t, 1);
	return false;
}

/* The possible CPUs: the kernel's queue count (num_possible_cpus). */
static unsigned possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	unsigned lo, hi, n = 0;

	if (!f)
		return (unsigned)sysconf(_SC_NPROCESSORS_CONF);
	/* "0-63" or "0" (or a list, "0-3,8-11"): the highest one plus one */
	for (int c; fscanf(f, "%u", &lo) == 1;) {
		hi = lo;
		c = fgetc(f);
		if (c == '-' && fscanf(f, "%u", &hi) == 1)
			c = fgetc(f);
		if (hi + 1 > n)
			n = hi + 1;
		if (c != ',')
			break;
	}
	fclose(f);
	return n ? n : 1;
}

/* A free SQE of t's ring, with its submission lock held (any thread); NULL if none. */
static struct io_uring_sqe *sqe_take(struct lf_uring_thread *t)
{
	struct io_uring_sqe *sqe;

	pthread_mutex_lock(&t->sq_lock);
	sqe = io_uring_get_sqe(&t->ring);
	if (!sqe)
		pthread_mutex_unlock(&t->sq_lock);
	return sqe;
}

/* Submits what sqe_take gave, and drops the lock. Returns 0 or -errno. */
static int sqe_submit(struct lf_uring_thread *t)
{
	int rc = io_uring_submit(&t->ring);

	pthread_mutex_unlock(&t->sq_lock);
	return rc < 0 ? rc : 0;
}

/* Submits a command for e (REGISTER or COMMIT_AND_FETCH) on its thread's ring: only
 * that thread. Returns 0 or -errno. */
static int submit_cmd(struct lf_uring_ent *e, uint32_t op, uint64_t commit_id)
{
	struct lf_uring_thread *t = e->t;
	struct io_uring_sqe *sqe = sqe_take(t);
	struct lf_uring_cmd_req *cr;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = t->u->fd;
	sqe->cmd_op = op;
	sqe->user_data = (uintptr_t)e;
	cr = (struct lf_uring_cmd_req *)sqe->cmd;
	cr->qid = (uint16_t)t->qid;
	cr->commit_id = commit_id;
	if (op == LF_URING_REGISTER) {
		sqe->addr = (uintptr_t)e->iov;
		sqe->len = 2;
	}
	return sqe_submit(t);
}

/* Wakes t's thread (any thread). */
static int submit_nop(struct lf_uring_thread *t, uint64_t why)
{
	struct io_uring_sqe *sqe = sqe_take(t);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_nop(sqe);
	sqe->user_data = why;
	return sqe_submit(t);
}

static void ent_free(struct lf_uring_ent *e)
{
	if (e->region)
		munmap(e->region, e->region_len);
	free(e);
}

/* A new entry of t, listed (not registered). */
static struct lf_uring_ent *ent_new(struct lf_uring_thread *t)
{
	struct lf_uring *u = t->u;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t front = (sizeof(struct lf_uring_req_header) + HEADROOM + page - 1) / page * page;
	struct lf_uring_ent *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->t = t;
	e->region_len = front + u->payload_max;
	e->region =
	    mmap(NULL, e->region_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->region == MAP_FAILED) {
		free(e);
		return NULL;
	}
	e->hdr = (struct lf_uring_req_header *)e->region;
	e->payload = e->region + front;
	e->iov[0] = (struct iovec){e->hdr, sizeof(*e->hdr)};
	e->iov[1] = (struct iovec){e->payload, u->payload_max};
	pthread_mutex_lock(&u->lock);
	if (u->nents == u->cap) {
		unsigned cap = u->cap ? 2 * u->cap : 64;
		struct lf_uring_ent **n = realloc(u->ents, cap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&u->lock);
			ent_free(e);
			return NULL;
		}
		u->ents = n;
		u->cap = cap;
	}
	u->ents[u->nents++] = e;
	pthread_mutex_unlock(&u->lock);
	return e;
}

/* Registers a new entry of t (its thread). Returns 0 or -errno. */
static int ent_add(struct lf_uring_thread *t)
{
	struct lf_uring_ent *e;
	int rc;

	if (t->nents >= ENTS_MAX)
		return -ENOSPC;
	e = ent_new(t);
	if (!e)
		return -ENOMEM;
	rc = submit_cmd(e, LF_URING_REGISTER, 0);
	if (!rc) {
		waiting_add(t, 1);
		t->nents++;
	}
	return rc; /* a listed entry never registered stays until the stop */
}

static struct lf_uring_thread *thread_new(struct lf_uring *u, unsigned qid, unsigned k, int *err);
static bool thread_start(struct lf_uring_thread *t);

/* Registers another entry of t (its thread) if none of its entries waits: one held by a
 * request answered elsewhere, or handed off, must not leave the thread with none. */
static void keep_one_waiting(struct lf_uring_thread *t)
{
	static _Atomic bool told;

	if (t->waiting)
		return;
	if (!ent_add(t)) {
		/* what came while the queue had none waiting is handed out by a commit only */
		kick_want(t->u, t->qid);
		return;
	}
	if (!atomic_exchange(&told, true))
		lf_log(LF_ERR,
		       "io_uring queue %u: cannot register another entry; requests on this "
		       "CPU wait for those in service",
		       t->qid);
}

/* Serves h's request on this thread, its entry's: libfuse answers it, here or later
 * (deferred). */
static void serve_here(const struct lf_uring_handoff *h)
{
	struct lf_uring_thread *t = h->e->t;
	struct fuse_buf fb = h->fb;

	serving = h->e;
	lf_dev_request_begin(h->unique, h->opcode);
	fuse_session_process_buf(t->u->lf->se, &fb);
	serving = NULL;
	/* answered here, e is waiting again or has its next request already, and needs no
	 * other. Answered later (deferred), the thread waits for that reply to commit it,
	 * unless its queue is short of spares (it could not grow): see the top of this file */
	if (atomic_load_explicit(&h->e->unique, memory_order_acquire) &&
	    queue_spare(t->u, t->qid) < t->u->spare)
		keep_one_waiting(t);
}

/* Hands h's request to a thread started for it, whose entry its entry becomes: that
 * thread commits the reply through its own ring, and the kernel then sends the entry's
 * next requests there; this thread has one entry fewer. Up to max_threads such threads
 * in all, unless the mount stops. Returns whether it did; else the caller serves it. */
static bool hand_off(const struct lf_uring_handoff *h)
{
	struct lf_uring_thread *t = h->e->t, *s = NULL;
	struct lf_uring *u = t->u;
	struct lf_uring_queue *q = &u->q[t->qid];
	int err = 0;

	pthread_mutex_lock(&u->lock);
	if (!atomic_load(&u->quiescing) && u->handed < u->lf->o.max_threads &&
	    now_s() >= q->retry_s)
		s = thread_new(u, t->qid, q->threads, &err);
	if (s) {
		q->threads++; /* its slot is taken even if it does not start */
		q->handed++;
		u->handed++;
		s->first = *h;
		s->nents = 1;
		h->e->t = s; /* under the lock: commit_deferred finds entries by thread */
		if (!thread_start(s)) {
			h->e->t = t;
			s = NULL;
			err = -EAGAIN;
		}
	}
	if (err) {
		q->retry_s = now_s() + 1;
		lf_log(LF_WARN, "io_uring queue %u: cannot start a thread for a request", t->qid);
	}
	pthread_mutex_unlock(&u->lock);
	if (!s)
		return false;
	t->nents--;
	atomic_fetch_add(&handoffs_made, 1);
	return true;
}

/* Answers the request in e with error err, here (e's thread). Returns whether the commit
 * came back with the next request. */
static bool answer_err(struct lf_uring_ent *e, uint64_t unique, int err)
{
	struct fuse_out_header oh = {.len = sizeof(oh), .error = -err, .unique = unique};

	memcpy(e->hdr->in_out, &oh, sizeof(oh));
	e->hdr->ring.payload_sz = 0;
	if (submit_cmd(e, LF_URING_COMMIT, unique)) {
		lf_log(LF_ERR, "io_uring queue %u: cannot commit a reply", e->t->qid);
		return false;
	}
	return committed(e);
}

/* If the request in e is a kick's (kick_start), answers it here: its commit is all it is
 * for (neither the MDS nor libfuse, nor the queue's spares). Returns whether it was. */
static bool kick_answered(struct lf_uring_ent *e)
{
	struct lf_uring_queue *q = &e->t->u->q[e->t->qid];
	struct fuse_in_header ih;
	bool fetched;

	memcpy(&ih, e->hdr->in_out, sizeof(ih));
	if (ih.opcode != FUSE_GETATTR || ih.nodeid != FUSE_ROOT_ID || !is_kick(e->t->u, ih.pid))
		return false;
	fetched = answer_err(e, ih.unique, EAGAIN);
	/* in this order: the kicker reads the second once the first moved */
	atomic_fetch_add(&q->kicks_fetched, fetched);
	atomic_fetch_add(&q->kicks_answered, 1);
	return true;
}

static void serve(struct lf_uring_ent *e, bool handoff)
{
	struct lf_uring_thread *t = e->t;
	struct fuse_in_header ih;
	uint32_t psz = e->hdr->ring.payload_sz;
	size_t arg0;
	char *lin;
	struct fuse_buf fb = {0};
	struct lf_uring_handoff h;

	memcpy(&ih, e->hdr->in_out, sizeof(ih));
	if (psz > t->u->payload_max || ih.len < sizeof(ih) + psz ||
	    (arg0 = ih.len - sizeof(ih) - psz) > LF_URING_OP_IN) {
		/* not what the kernel sends: answer it EIO rather than guess */
		lf_log(LF_ERR, "io_uring: a request of opcode %u with length %u and payload %u",
		       ih.opcode, ih.len, psz);
		answer_err(e, ih.unique, EIO);
		return;
	}
	lin = e->payload - sizeof(ih) - arg0;
	memcpy(lin, &ih, sizeof(ih));
	memcpy(lin + sizeof(ih), e->hdr->op_in, arg0);
	fb.mem = lin;
	fb.size = ih.len;
	atomic_store_explicit(&e->unique, ih.unique, memory_order_release);
	h = (struct lf_uring_handoff){e, fb, ih.unique, ih.opcode};
	if (handoff && hand_off(&h))
		keep_one_waiting(t);
	else
		serve_here(&h);
}

/* Commits the replies other threads made for t's entries (ring_main's thread). */
static void commit_deferred(struct lf_uring_thread *t)
{
	struct lf_uring *u = t->u;

	pthread_mutex_lock(&u->lock);
	for (unsigned i = 0; i < u->nents; i++) {
		struct lf_uring_ent *e = u->ents[i];
		uint64_t id;

		if (e->t != t || !atomic_load_explicit(&e->commit, memory_order_acquire))
			continue;
		id = atomic_exchange(&e->commit, 0);
		if (!submit_cmd(e, LF_URING_COMMIT, id))
			committed(e);
		else
			lf_log(LF_ERR, "io_uring queue %u: cannot commit a reply", t->qid);
	}
	pthread_mutex_unlock(&u->lock);
}

static void *ring_main(void *arg);

/* Thread k of queue qid, its ring made (not started), in its slot. NULL: *err says why. */
static struct lf_uring_thread *thread_new(struct lf_uring *u, unsigned qid, unsigned k, int *err)
{
	struct lf_uring_thread *t = calloc(1, sizeof(*t));
	struct io_uring_params p = {.flags = IORING_SETUP_SQE128};

	*err = -ENOMEM;
	if (!t)
		return NULL;
	t->u = u;
	t->qid = qid;
	pthread_mutex_init(&t->sq_lock, NULL);
	/* a command per entry at most in flight, and the wakeups */
	*err = io_uring_queue_init_params(64, &t->ring, &p);
	if (*err) {
		pthread_mutex_destroy(&t->sq_lock);
		free(t);
		return NULL;
	}
	t->ring_ok = true;
	u->t[qid * u->slots + k] = t;
	return t;
}

/* Starts t's thread, bound to its queue's CPU where the cpuset allows (else anywhere).
 * Returns whether it runs. */
static bool thread_start(struct lf_uring_thread *t)
{
	pthread_attr_t a;
	cpu_set_t set;
	int rc;

	pthread_attr_init(&a);
	CPU_ZERO(&set);
	CPU_SET(t->qid, &set);
	rc = pthread_attr_setaffinity_np(&a, sizeof(set), &set);
	if (!rc)
		rc = pthread_create(&t->th, &a, ring_main, t);
	pthread_attr_destroy(&a);
	if (rc)
		rc = pthread_create(&t->th, NULL, ring_main, t);
	t->started = !rc;
	if (t->started)
		atomic_fetch_add(&threads_running, 1);
	return t->started;
}

/* Whether queue q may start no more threads for spares: max_q of its own (those started
 * for hand-offs apart), or max_threads past the first ones on the mount (u's lock). */
static bool growth_capped(const struct lf_uring *u, const struct lf_uring_queue *q)
{
	return q->threads - q->handed >= u->max_q || u->grown >= u->lf->o.max_threads;
}

/* Starts threads for queue qid until LF_URING_SPARE of its entries wait or are about to,
 * unless the queue has max_q, the mount has started max_threads past the first ones (each
 * holds a ring's descriptor), or it stops. Any ring thread. */
static void queue_keep_spare(struct lf_uring *u, unsigned qid)
{
	struct lf_uring_queue *q = &u->q[qid];
	int err;

	/* the caps read without the lock first: once one is reached, no request takes it */
	if (queue_spare(u, qid) >= u->spare || atomic_load(&q->full))
		return;
	pthread_mutex_lock(&u->lock);
	if (growth_capped(u, q))
		atomic_store(&q->full, true);
	while (!atomic_load(&u->quiescing) && !atomic_load(&q->full) &&
	       queue_spare(u, qid) < u->spare && now_s() >= q->retry_s) {
		struct lf_uring_thread *t = thread_new(u, qid, q->threads, &err);

		if (t) {
			q->threads++; /* its slot is taken even if it does not start */
			u->grown++;
			atomic_fetch_add(&q->pending, 1);
			if (growth_capped(u, q))
				atomic_store(&q->full, true);
		}
		if (!t || !thread_start(t)) {
			if (t)
				atomic_fetch_sub(&q->pending, 1);
			q->retry_s = now_s() + 1; /* not at every request meanwhile */
			lf_log(LF_WARN, "io_uring queue %u: cannot start another thread", qid);
			break;
		}
		kick_want_locked(u, qid); /* it ran low: requests may have been queued meanwhile */
	}
	pthread_mutex_unlock(&u->lock);
}

/* A kick's thread (kick_start), whose statx may itself be queued. */
static void *kick_run(void *arg)
{
	struct lf_uring_kick *k = arg;
	struct statx stx;

	atomic_store(&k->tid, gettid());
	errno = 0;
	statx(AT_FDCWD, k->path, AT_STATX_FORCE_SYNC, STATX_TYPE, &stx);
	k->err = errno;
	/* answered: no request of this thread id (reused once it ends) is a kick's now */
	atomic_store(&k->tid, -1);
	if (atomic_exchange(&k->state, KICK_DONE) == KICK_LEFT)
		free(k); /* the mount stopped first: nobody else has it */
	return NULL;
}

/* Joins and frees the kicks done (the kicker's thread). */
static void kicks_reap(struct lf_uring *u)
{
	for (unsigned i = 0; i < KICKS_MAX; i++) {
		struct lf_uring_kick *k = u->kicks[i];

		if (!k || atomic_load(&k->state) != KICK_DONE)
			continue;
		pthread_mutex_lock(&u->lock);
		u->kicks[i] = NULL;
		pthread_mutex_unlock(&u->lock);
		pthread_join(k->th, NULL);
		free(k);
	}
}

/* A kick of queue qid: a thread bound to that CPU that statx()es the mount's root, in
 * *kp. Returns 0, -EBUSY if KICKS_MAX are still queued, or another -errno if none can be
 * started there (a CPU outside this process's cpuset, say). The kicker's thread. */
static int kick_start(struct lf_uring *u, unsigned qid, struct lf_uring_kick **kp)
{
	struct lf_uring_kick *k;
	unsigned slot = 0;
	pthread_attr_t a;
	cpu_set_t set;
	int rc;

	kicks_reap(u);
	while (slot < KICKS_MAX && u->kicks[slot])
		slot++;
	if (slot == KICKS_MAX)
		return -EBUSY;
	if (!u->lf->o.mount_real)
		return -ENOENT;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	snprintf(k->path, sizeof(k->path), "%s", u->lf->o.mount_real);
	atomic_store(&k->tid, -1);
	atomic_store(&k->state, KICK_RUNNING);
	pthread_attr_init(&a);
	CPU_ZERO(&set);
	CPU_SET(qid, &set);
	/* listed before it runs: its request may reach a ring thread at once */
	pthread_mutex_lock(&u->lock);
	u->kicks[slot] = k;
	/* not in this cpuset: nor are the callers the kernel queues there */
	rc = pthread_attr_setaffinity_np(&a, sizeof(set), &set);
	if (!rc)
		rc = pthread_create(&k->th, &a, kick_run, k);
	if (rc)
		u->kicks[slot] = NULL;
	pthread_mutex_unlock(&u->lock);
	pthread_attr_destroy(&a);
	if (rc) {
		free(k);
		return -rc;
	}
	atomic_fetch_add(&kicks_made, 1);
	*kp = k;
	return 0;
}

/* Makes the kernel hand out what it queued on queue qid: a GETATTR of the mount's root
 * from that CPU (kick_start), which goes to an entry waiting there (the threads just
 * started have registered theirs by then), is answered at once (kick_answered), and whose
 * commit fetches a queued request if there is one; again while they did. A kick that finds
 * no entry waiting is queued too: the next one, from another thread, frees the oldest
 * queued request. Returns false if it must be tried again later (KICKS_MAX queued). On the
 * kicker's thread. */
static bool kick_queue(struct lf_uring *u, unsigned qid)
{
	struct lf_uring_queue *q = &u->q[qid];

	for (int i = 0; i < 1000 && atomic_load(&q->pending) > 0; i++) {
		if (atomic_load(&u->quiescing))
			return true;
		usleep(1000);
	}
	for (int n = 0; n < 64 && !atomic_load(&u->quiescing); n++) {
		uint64_t answered = atomic_load(&q->kicks_answered);
		uint64_t fetched = atomic_load(&q->kicks_fetched);
		struct lf_uring_kick *k;
		int rc = kick_start(u, qid, &k);

		if (rc == -EBUSY)
			return false;
		if (rc) {
			static _Atomic bool told;

			if (!atomic_exchange(&told, true))
				lf_log(LF_WARN, "io_uring queue %u: cannot kick it: %s", qid,
				       strerror(-rc));
			return true;
		}
		for (int i = 0; i < 50 && atomic_load(&q->kicks_answered) == answered; i++) {
			if (atomic_load(&k->state) == KICK_DONE && k->err != EAGAIN)
				return true; /* answered elsewhere: the mount is gone */
			usleep(1000);
		}
		if (atomic_load(&q->kicks_answered) == answered)
			continue; /* queued itself: kick again */
		if (atomic_load(&q->kicks_fetched) == fetched)
			break; /* nothing was queued */
	}
	return true;
}

/* The kicker: kicks each queue that grew (queue_keep_spare) or registered an entry while it
 * had none waiting (keep_one_waiting), until lf_uring_quiesce. */
static void *kick_main(void *arg)
{
	struct lf_uring *u = arg;

	pthread_mutex_lock(&u->lock);
	while (!u->kicker_stop) {
		unsigned i, qid = 0;

		/* round robin: a queue whose kicks stay queued holds back no other */
		for (i = 0; i < u->nq; i++) {
			qid = (u->kick_next + i) % u->nq;
			if (u->q[qid].kick)
				break;
		}
		if (i == u->nq) {
			pthread_cond_wait(&u->kick_cond, &u->lock);
			continue;
		}
		u->kick_next = qid + 1;
		u->q[qid].kick = false;
		pthread_mutex_unlock(&u->lock);
		if (!kick_queue(u, qid)) {
			/* every kick is queued behind calls stuck somewhere: again in 100 ms */
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_mutex_lock(&u->lock);
			u->q[qid].kick = true;
			if (!u->kicker_stop)
				pthread_cond_timedwait(&u->kick_cond, &u->lock, &ts);
			continue;
		}
		pthread_mutex_lock(&u->lock);
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

static void *ring_main(void *arg)
{
	struct lf_uring_thread *t = arg;
	struct lf_uring *u = t->u;

	if (t->first.e) {
		/* started for a request handed off: its entry is this thread's */
		serve_here(&t->first);
	} else {
		/* registered by this thread, which the kernel's work for the entry then runs
		 * on */
		int rc0 = ent_add(t);

		atomic_fetch_sub(&u->q[t->qid].pending, 1);
		if (rc0) {
			lf_log(LF_ERR, "io_uring queue %u: cannot register an entry", t->qid);
			atomic_fetch_sub(&threads_running, 1);
			return NULL;
		}
	}
	for (;;) {
		struct io_uring_cqe *cqe;
		struct lf_uring_ent *e;
		int rc = io_uring_wait_cqe(&t->ring, &cqe);
		int res;

		if (rc == -EINTR)
			continue;
		if (rc < 0)
			break;
		res = cqe->res;
		e = (struct lf_uring_ent *)(uintptr_t)cqe->user_data;
		io_uring_cqe_seen(&t->ring, cqe);
		if (atomic_load(&u->stopping))
			break;
		if (cqe->user_data == WAKE_COMMIT) {
			commit_deferred(t);
			continue;
		}
		if (cqe->user_data == WAKE_STOP)
			continue;
		if (e->fetched)
			e->fetched = false; /* never counted waiting */
		else
			waiting_add(t, -1);
		if (res == -ENOTCONN || res == -ECANCELED || res == -ECONNABORTED)
			break; /* the mount is going */
		if (res < 0 && !e->served) {
			/* the kernel refused the entry: it then serves the mount through
			 * /dev/fuse */
			lf_log(LF_ERR, "io_uring queue %u: the kernel refused an entry: %s", t->qid,
			       strerror(-res));
			lf_dev_uring_refused();
			if (u->lf->o.io_uring > 1) {
				lf_log(LF_ERR, "io_uring=require: unmounting");
				fuse_session_exit(u->lf->se);
			}
			break;
		}
		if (res < 0) {
			/* a commit the kernel refused (its request gone, an interrupted one): the
			 * entry is the kernel's no more; register it again, as at the start */
			lf_log(LF_ERR, "io_uring queue %u: %s; registering the entry again", t->qid,
			       strerror(-res));
			atomic_store_explicit(&e->unique, 0, memory_order_release);
			if (++t->errors > 100 || submit_cmd(e, LF_URING_REGISTER, 0)) {
				lf_log(LF_ERR, "io_uring queue %u: a thread stops", t->qid);
				break;
			}
			waiting_add(t, 1);
			kick_want(u, t->qid); /* a registration hands out nothing queued */
			continue;
		}
		e->served = true;
		t->errors = 0;
		if (kick_answered(e))
			continue;
		queue_keep_spare(u, t->qid);
		/* served here only if other entries of the queue wait and this thread has no
		 * other entry: a request the kernel put in one of its own would wait for this
		 * one, and so would the commit of a reply made elsewhere for one it holds */
		serve(e, t->nents > 1 || atomic_load(&u->q[t->qid].waiting) <= 0);
	}
	/* its entries wait no more (if the mount goes on, what the kernel puts in them is
	 * lost: the log says why above) */
	waiting_add(t, -(int)t->waiting);
	atomic_fetch_sub(&threads_running, 1);
	return NULL;
}

/* The entry of a request in service, by its unique id; NULL if none. */
static struct lf_uring_ent *ent_of(struct lf_uring *u, uint64_t unique)
{
	struct lf_uring_ent *e = serving, *found = NULL;

	if (e && e->t->u == u && atomic_load_explicit(&e->unique, memory_order_acquire) == unique)
		return e;
	pthread_mutex_lock(&u->lock);
	for (unsigned i = 0; i < u->nents && !found; i++)
		if (atomic_load_explicit(&u->ents[i]->unique, memory_order_acquire) == unique)
			found = u->ents[i];
	pthread_mutex_unlock(&u->lock);
	return found;
}

bool lf_uring_reply(struct lode_fuse *lf, const struct iovec *iov, int count, ssize_t *written)
{
	struct lf_uring *u = lf->uring;
	const struct fuse_out_header *oh = iov[0].iov_base;
	size_t body = 0, total = iov[0].iov_len;
	struct fuse_out_header out;
	struct lf_uring_ent *e;
	int rc;

	if (!u || iov[0].iov_len < sizeof(*oh) || !oh->unique)
		return false;
	e = ent_of(u, oh->unique);
	if (!e)
		return false;
	for (int i = 1; i < count; i++)
		total += iov[i].iov_len;
	if (total - iov[0].iov_len > u->payload_max) {
		*written = -1;
		errno = EINVAL;
		return true;
	}
	for (int i = 1; i < count; i++) {
		memcpy(e->payload + body, iov[i].iov_base, iov[i].iov_len);
		body += iov[i].iov_len;
	}
	out = *oh;
	out.len = (uint32_t)(sizeof(out) + body);
	memcpy(e->hdr->in_out, &out, sizeof(out));
	e->hdr->ring.payload_sz = (uint32_t)body;
	atomic_store_explicit(&e->unique, 0, memory_order_release);
	if (e == serving) {
		rc = submit_cmd(e, LF_URING_COMMIT, oh->unique);
		if (!rc)
			committed(e);
	} else {
		/* only the entry's thread may commit (see the top of this file) */
		atomic_store_explicit(&e->commit, oh->unique, memory_order_release);
		rc = submit_nop(e->t, WAKE_COMMIT);
		/* not woken: take the reply back, unless the thread committed it meanwhile (woken
		 * for another) */
		if (rc && !atomic_exchange(&e->commit, 0))
			rc = 0;
	}
	if (rc) {
		*written = -1;
		errno = EIO;
		return true;
	}
	*written = (ssize_t)total;
	return true;
}

void lf_uring_quiesce(struct lode_fuse *lf)
{
	struct lf_uring *u = lf->uring;

	if (!u)
		return;
	/* under the lock: no queue grows after this (queue_keep_spare looks under it) */
	pthread_mutex_lock(&u->lock);
	atomic_store(&u->quiescing, true);
	u->kicker_stop = true;
	pthread_cond_signal(&u->kick_cond);
	pthread_mutex_unlock(&u->lock);
	/* its GETATTR is answered: the ring threads run until lf_uring_stop */
	if (u->kicker_started) {
		pthread_join(u->kicker, NULL);
		u->kicker_started = false;
	}
}

void lf_uring_stop(struct lode_fuse *lf)
{
	struct lf_uring *u = lf->uring;
	unsigned n;

	if (!u)
		return;
	lf_uring_quiesce(lf);
	atomic_store(&u->stopping, true);
	n = u->nq * u->slots;
	for (unsigned i = 0; i < n; i++) {
		struct lf_uring_thread *t = u->t[i];

		if (!t || !t->started)
			continue;
		submit_nop(t, WAKE_STOP);
		pthread_join(t->th, NULL);
	}
	/* a kick still in flight (queued behind calls that never came back) ends when the
	 * connection does, and frees itself */
	for (unsigned i = 0; i < KICKS_MAX; i++) {
		struct lf_uring_kick *k = u->kicks[i];
		pthread_t th;

		if (!k)
			continue;
		th = k->th;
		if (atomic_exchange(&k->state, KICK_LEFT) == KICK_DONE) {
			pthread_join(th, NULL);
			free(k);
		} else {
			pthread_detach(th);
		}
	}
	lf->uring = NULL;
	for (unsigned i = 0; i < n; i++) {
		struct lf_uring_thread *t = u->t[i];

		if (!t)
			continue;
		if (t->ring_ok)
			io_uring_queue_exit(&t->ring);
		pthread_mutex_destroy(&t->sq_lock);
		free(t);
	}
	for (unsigned i = 0; i < u->nents; i++)
		ent_free(u->ents[i]);
	free(u->ents);
	pthread_cond_destroy(&u->kick_cond);
	pthread_mutex_destroy(&u->lock);
	free(u->q);
	free(u->t);
	free(u);
}

int lf_uring_prepare(struct lode_fuse *lf, int fd, size_t payload_max)
{
	struct lf_uring *u = calloc(1, sizeof(*u));
	int rc = 0;

	if (!u)
		return -ENOMEM;
	u->lf = lf;
	u->fd = fd;
	u->payload_max = payload_max;
	u->nq = possible_cpus();
	/* at the start up to LF_URING_THREADS a CPU, about 64 in all, at least 2 a CPU; at
	 * most max_threads a CPU (queue_keep_spare) */
	u->per_q = 64 / u->nq;
	if (u->per_q > LF_URING_THREADS)
		u->per_q = LF_URING_THREADS;
	if (u->per_q < 2)
		u->per_q = 2;
	u->max_q = lf->o.max_threads > u->per_q ? lf->o.max_threads : u->per_q;
	u->spare = LF_URING_SPARE < u->per_q ? LF_URING_SPARE : (int)u->per_q;
	u->q = calloc(u->nq, sizeof(*u->q));
	u->slots = u->max_q + lf->o.max_threads;
	u->t = calloc((size_t)u->nq * u->slots, sizeof(*u->t));
	if (!u->q || !u->t) {
		free(u->q);
		free(u->t);
		free(u);
		return -ENOMEM;
	}
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->kick_cond, NULL);
	lf->uring = u;
	for (unsigned qid = 0; qid < u->nq && !rc; qid++)
		for (unsigned k = 0; k < u->per_q && !rc; k++)
			if (thread_new(u, qid, k, &rc))
				u->q[qid].threads++;
	if (rc)
		lf_uring_stop(lf);
	return rc;
}

void lf_uring_start(struct lode_fuse *lf)
{
	struct lf_uring *u = lf->uring;

	/* each thread registers its entry (ring_main); the kernel holds every request of the
	 * mount until each queue has one, and one it refuses makes it serve the mount
	 * through /dev/fuse. Under the lock: a first request may make a queue grow into the
	 * slots after these meanwhile (queue_keep_spare), and those are started there. */
	pthread_mutex_lock(&u->lock);
	for (unsigned qid = 0; qid < u->nq; qid++)
		for (unsigned k = 0; k < u->per_q; k++) {
			struct lf_uring_thread *t = u->t[qid * u->slots + k];

			if (!t)
				continue;
			atomic_fetch_add(&u->q[qid].pending, 1);
			if (!thread_start(t))
				atomic_fetch_sub(&u->q[qid].pending, 1);
		}
	u->kicker_started = !pthread_create(&u->kicker, NULL, kick_main, u);
	if (!u->kicker_started)
		lf_log(LF_WARN, "io_uring: no kicker thread; a queue that ran dry may hold "
				"requests until its next reply");
	pthread_mutex_unlock(&u->lock);
}
