/* SPDX-License-Identifier: MIT */
/*
 * liblode data path: striped reads and writes with many requests in flight.
 *
 * A file range is cut into pieces, each inside one stripe unit and at most IO_MAX bytes,
 * and each piece becomes one OBJ_READ or OBJ_WRITE (per mirror) to the target that holds
 * it. Up to max_inflight pieces are in flight at once, across all the file's targets;
 * completions run on the I/O thread of the connection (liblode has several, each with a
 * connection to every OSS, used in turn), which verifies checksums and copies (only when
 * a piece does not line up with chunk boundaries: aligned pieces land in the caller's
 * buffer directly) and then lets the next piece go. The copies of one write piece may
 * complete on different threads at once.
 *
 * Reads fail over: a piece whose target errs, times out or returns data that does not
 * match its checksums is retried on the next mirror; only when every copy failed does the
 * read fail, with -EIO for corruption. Corrupt data is never copied to the caller.
 *
 * Writes and fsyncs reach the copies of a mirrored stripe in one of two ways (see
 * lode_set_replication): fan-out sends one request per copy; chain sends one request to
 * the first live copy with the others as its forwarding chain, and the OSS pass it on.
 * Both record a copy that failed the same way, before the write is acknowledged.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "codec.h"

#define CHUNK	 LODE_CHUNK_SIZE
#define SUMS_MAX (LODE_DATA_MAX / LODE_CHUNK_SIZE + 2)

static uint64_t round_down(uint64_t x, uint64_t a)
{
	return x - x % a;
}

static uint64_t round_up(uint64_t x, uint64_t a)
{
	return round_down(x + a - 1, a);
}

uint64_t object_size_for(const struct lode_wire_layout *l, uint64_t file_size, unsigned stripe)
{
	uint64_t ss = l->stripe_size, row = ss * l->stripe_count;
	uint64_t full = file_size / row, rem = file_size % row;
	uint64_t part = rem > (uint64_t)stripe * ss ? rem - (uint64_t)stripe * ss : 0;

	return full * ss + (part < ss ? part : ss);
}

/* Where file offset `off` lives: stripe index and offset inside that stripe's object. */
static void map_offset(const struct lode_wire_layout *l, uint64_t off, unsigned *stripe,
		       uint64_t *obj_off)
{
	uint64_t unit = off / l->stripe_size;

	*stripe = (unsigned)(unit % l->stripe_count);
	*obj_off = (unit / l->stripe_count) * l->stripe_size + off % l->stripe_size;
}

/* The piece of [off, off + len) that starts at off + pos: inside one stripe unit and at most
 * IO_MAX bytes. Returns its length; *stripe and *obj_off say where it lives. */
static uint64_t next_piece(const struct lode_wire_layout *l, uint64_t off, uint64_t pos,
			   uint64_t len, unsigned *stripe, uint64_t *obj_off)
{
	uint64_t file_off = off + pos, in_unit = l->stripe_size - file_off % l->stripe_size;
	uint64_t n = len - pos;

	map_offset(l, file_off, stripe, obj_off);
	if (n > in_unit)
		n = in_unit;
	return n < IO_MAX ? n : IO_MAX;
}

/* ---- in-flight window ---- */

struct window {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned inflight; /* protected by lock */
	int error;	   /* protected by lock: first error */
};

static void window_init(struct window *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->inflight = 0;
	w->error = 0;
}

static void window_destroy(struct window *w)
{
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
}

/* Waits until fewer than max are in flight, then counts one more. Returns the first error
 * so far (the caller stops submitting). */
static int window_enter(struct window *w, unsigned max)
{
	int rc;

	pthread_mutex_lock(&w->lock);
	while (w->inflight >= max && !w->error)
		pthread_cond_wait(&w->cond, &w->lock);
	rc = w->error;
	if (!rc)
		w->inflight++;
	pthread_mutex_unlock(&w->lock);
	return rc;
}

static void window_leave(struct window *w, int err)
{
	pthread_mutex_lock(&w->lock);
	if (err && !w->error)
		w->error = err;
	w->inflight--;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static int window_drain(struct window *w)
{
	int rc;

	pthread_mutex_lock(&w->lock);
	while (w->inflight)
		pthread_cond_wait(&w->cond, &w->lock);
	rc = w->error;
	pthread_mutex_unlock(&w->lock);
	return rc;
}

/* ---- reads ---- */

struct read_piece {
	struct lode_call call;
	struct lode_file *f;
	struct window *w;
	struct lode_wire_obj_read_req req;
	char rbody[sizeof(struct lode_wire_obj_read_rep) + 8 * SUMS_MAX];
	char *dst;     /* caller's bytes for this piece */
	uint32_t head; /* bytes of the reply before dst's first byte */
	uint32_t len;  /* bytes wanted */
	char *bounce;  /* reply buffer when the piece is not chunk aligned, else NULL */
	unsigned stripe;
	unsigned first;	 /* the copy tried first (spreads readers over the copies) */
	unsigned mirror; /* the copy being tried */
	uint64_t tried;	 /* copies tried, by mirror number */
	bool reread;	 /* a mismatch was read again from the same copy */
	int last_err;
};

static void read_piece_submit(struct read_piece *p);

/* Checks every chunk of the reply against its checksum. */
static int verify(const char *data, uint64_t len, const uint64_t *sums)
{
	for (uint64_t off = 0, i = 0; off < len; off += CHUNK, i++) {
		uint64_t n = len - off < CHUNK ? len - off : CHUNK;

		if (lode_chunk_sum(data + off, n) != sums[i])
			return -EBADMSG;
	}
	return 0;
}

/* Picks the next copy to try: first the ones neither degraded nor on a target known to be
 * down, then (rather than fail) the rest. Returns -1 when every copy has been tried. */
static int next_copy(struct lode_file *f, unsigned stripe, unsigned first, uint64_t tried)
{
	unsigned mc = f->layout.mirror_count;
	uint64_t degraded;

	pthread_mutex_lock(&f->lock);
	degraded = f->degraded;
	pthread_mutex_unlock(&f->lock);
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned k = 0; k < mc; k++) {
			unsigned m = (first + k) % mc, idx = stripe * mc + m;

			if (tried & (1ull << m))
				continue;
			if (pass == 0 && ((degraded & (1ull << idx)) ||
					  !target_is_up(f->c, f->layout.targets[idx])))
				continue;
			return (int)m;
		}
	}
	return -1;
}

/* A failure that says nothing about the copy's data (the server is gone or slow). */
static bool unreachable(int rc)
{
	return rc == -ECONNRESET || rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -EPIPE ||
	       rc == -ESHUTDOWN || rc == -EHOSTUNREACH || rc == -ENXIO || rc == -ECONNABORTED;
}

static void read_piece_done(struct lode_call *call)
{
	struct read_piece *p = lode_container_of(call, struct read_piece, call);
	const struct lode_wire_obj_read_rep *rep;
	const uint64_t *sums;
	char *data = p->bounce ? p->bounce : p->dst;
	uint64_t got = call->reply_data_len;
	int rc = call->status, next;

	if (!rc)
		rc = lode_dec_obj_read_rep(p->rbody, call->reply_body_len, got, p->req.length, &rep,
					   &sums);
	if (!rc)
		rc = verify(data, got, sums);
	if (rc) {
		struct lode_file *f = p->f;

		p->last_err = rc;
		if (rc == -EBADMSG && !p->reread) {
			/* a write racing this read can make bytes and checksums disagree for a
			 * moment: read once more before calling the copy bad */
			p->reread = true;
			read_piece_submit(p);
			return;
		}
		p->reread = false;
		if (rc == -EBADMSG) /* bad bytes on that copy: the MDS hears of it, for repair */
			file_report(f, p->stripe * f->layout.mirror_count + p->mirror,
				    LODE_REPORT_BAD_DATA);
		if (unreachable(rc))
			target_suspect(
			    f->c,
			    f->layout.targets[p->stripe * f->layout.mirror_count + p->mirror]);
		next = next_copy(f, p->stripe, p->first, p->tried);
		if (next >= 0) {
			p->mirror = (unsigned)next;
			read_piece_submit(p);
			return;
		}
		/* corruption on every copy is an I/O error to the application */
		window_leave(p->w, rc == -EBADMSG || rc == -EPROTO ? -EIO : rc);
		free(p->bounce);
		free(p);
		return;
	}
	/* bytes the object does not have (a hole, or the end of a sparse file) read as 0 */
	if (p->bounce) {
		uint64_t avail = got > p->head ? got - p->head : 0;

		if (avail > p->len)
			avail = p->len;
		memcpy(p->dst, p->bounce + p->head, avail);
		memset(p->dst + avail, 0, p->len - avail);
	} else if (got < p->len) {
		memset(p->dst + got, 0, p->len - got);
	}
	window_leave(p->w, 0);
	free(p->bounce);
	free(p);
}

static void read_piece_submit(struct read_piece *p)
{
	struct lode_file *f = p->f;
	uint32_t tid = f->layout.targets[p->stripe * f->layout.mirror_count + p->mirror];
	struct lode_rpc_conn *conn;
	int rc;

	p->tried |= 1ull << p->mirror;
	rc = target_conn(f->c, tid, &conn);
	if (rc) {
		p->call.status = rc;
		p->call.reply_data_len = 0;
		p->call.reply_body_len = 0;
		/* same path as a failed call: try the next copy or give up */
		read_piece_done(&p->call);
		return;
	}
	memset(&p->call, 0, sizeof(p->call));
	p->call.opcode = LODE_OP_OBJ_READ;
	p->call.body = &p->req;
	p->call.body_len = sizeof(p->req);
	p->call.reply_body = p->rbody;
	p->call.reply_body_max = sizeof(p->rbody);
	p->call.reply_data = p->bounce ? p->bounce : p->dst;
	p->call.reply_data_max = p->req.length;
	p->call.done = read_piece_done;
	lode_rpc_submit(conn, &p->call);
}

/* Starts a read piece on its best copy. */
static void read_piece_start(struct read_piece *p, unsigned first)
{
	int m;

	p->first = first % p->f->layout.mirror_count;
	m = next_copy(p->f, p->stripe, p->first, 0);
	p->mirror = (unsigned)(m < 0 ? 0 : m);
	read_piece_submit(p);
}

/* Starts reading [off, off + len) of the objects into buf (zeros where no data was
 * written); every piece started is counted in w. Returns 0, or the error that stopped it
 * from starting the rest (window_drain(w) waits for what did start). */
static int objects_read_start(struct lode_file *f, struct window *w, char *buf, uint64_t len,
			      uint64_t off)
{
	const struct lode_wire_layout *l = &f->layout;
	uint64_t pos = 0;
	int rc = 0;

	while (pos < len) {
		uint64_t obj_off, n, aligned;
		struct read_piece *p;
		unsigned stripe;

		n = next_piece(l, off, pos, len, &stripe, &obj_off);
		aligned = round_down(obj_off, CHUNK);
		rc = window_enter(w, f->c->max_inflight);
		if (rc)
			break;
		p = calloc(1, sizeof(*p));
		if (!p) {
			window_leave(w, -ENOMEM);
			rc = -ENOMEM;
			break;
		}
		p->f = f;
		p->w = w;
		p->stripe = stripe;
		p->dst = buf + pos;
		p->head = (uint32_t)(obj_off - aligned);
		p->len = (uint32_t)n;
		p->req.obj.ino = f->ino;
		p->req.obj.generation = l->generation;
		p->req.obj.stripe = stripe;
		p->req.offset = aligned;
		p->req.length = (uint32_t)round_up(p->head + n, CHUNK);
		if (p->head || n % CHUNK) {
			p->bounce = malloc(p->req.length);
			if (!p->bounce) {
				free(p);
				window_leave(w, -ENOMEM);
				rc = -ENOMEM;
				break;
			}
		}
		/* One copy per file, picked by inode number so that files spread over the
		 * copies: a reader then reads each object from start to end, as the OSS's
		 * page-cache read-ahead and the disk want. Taking copies in turn by stripe unit
		 * read every other unit of each object: 1 MiB disk reads instead of 4 MiB,
		 * 0.65-0.86x of the disk's own rate cold (docs/benchmarks.md). */
		read_piece_start(p, (unsigned)f->ino);
		pos += n;
	}
	return rc;
}

/* Reads [off, off + len) of the objects into buf (zeros where no data was written). */
static int objects_read(struct lode_file *f, char *buf, uint64_t len, uint64_t off)
{
	struct window w;
	int rc, rc2;

	window_init(&w);
	rc = objects_read_start(f, &w, buf, len, off);
	rc2 = window_drain(&w);
	window_destroy(&w);
	return rc ? rc : rc2;
}

/* ---- sequential read-ahead ----
 *
 * A reader that waits for each read before it asks for the next (an O_DIRECT reader
 * through the mount, a loader's small preads) has one request in flight: the stream runs
 * at one request's latency. After RA_AFTER sequential reads of at most RA_READ_MAX bytes
 * on a read-only handle, the next RA_WINDOWS windows of RA_WINDOW bytes are read ahead
 * (each window's pieces go to different OSS and I/O threads) and reads are served from
 * them; a read elsewhere stops it. A handle whose reads overlap in time (the kernel's own
 * readahead, a caller that pipelines) turns it off for good: it would only add a copy.
 *
 * Coherence: a window records the client's write_gen when it starts and is served only if
 * no write or truncate of this client started or ended since; data from other clients
 * follows close-to-open, as every read of an open handle does.
 */
#define RA_WINDOW   (2ull << 20)
#define RA_WINDOWS  4
#define RA_READ_MAX (1ull << 20)
#define RA_AFTER    3

struct ra_window {
	struct window w;
	char *buf; /* RA_WINDOW bytes, allocated on first use */
	uint64_t off;
	uint64_t len; /* 0: holds nothing */
	uint64_t gen; /* write_gen when it started */
	bool pending; /* started, not drained yet */
	int err;
};

struct readahead {
	pthread_mutex_t lock;
	uint64_t next; /* where a sequential reader reads next */
	unsigned seq;  /* sequential reads in a row */
	struct ra_window win[RA_WINDOWS];
};

void client_write_gen_bump(struct lode_client *c)
{
	atomic_fetch_add_explicit(&c->write_gen, 1, memory_order_acq_rel);
}

static void ra_wait(struct ra_window *x)
{
	if (x->pending) {
		int rc = window_drain(&x->w);

		if (!x->err)
			x->err = rc;
		x->pending = false;
	}
}

void readahead_free(struct lode_file *f)
{
	struct readahead *ra = f->ra;

	if (!ra)
		return;
	for (unsigned i = 0; i < RA_WINDOWS; i++) {
		ra_wait(&ra->win[i]);
		window_destroy(&ra->win[i].w);
		free(ra->win[i].buf);
	}
	pthread_mutex_destroy(&ra->lock);
	free(ra);
	f->ra = NULL;
}

/* The handle's read-ahead, allocated on first use; NULL when off or out of memory. */
static struct readahead *ra_get(struct lode_file *f)
{
	struct readahead *ra;

	pthread_mutex_lock(&f->lock);
	ra = f->ra;
	if (!ra) {
		ra = calloc(1, sizeof(*ra));
		if (ra) {
			pthread_mutex_init(&ra->lock, NULL);
			for (unsigned i = 0; i < RA_WINDOWS; i++)
				window_init(&ra->win[i].w);
			f->ra = ra;
		}
	}
	pthread_mutex_unlock(&f->lock);
	return ra;
}

/* The valid window holding byte off, or NULL. */
static struct ra_window *ra_find(struct readahead *ra, uint64_t off)
{
	for (unsigned i = 0; i < RA_WINDOWS; i++) {
		struct ra_window *x = &ra->win[i];

		if (x->len && off >= x->off && off < x->off + x->len)
			return x;
	}
	return NULL;
}

/* Copies [off, off + len) out of the windows if they hold all of it, good and current.
 * With ra->lock held. */
static bool ra_serve(struct lode_file *f, struct readahead *ra, char *buf, uint64_t len,
		     uint64_t off)
{
	uint64_t pos = 0;

	while (pos < len) {
		struct ra_window *x = ra_find(ra, off + pos);
		uint64_t n;

		if (!x)
			return false;
		ra_wait(x);
		if (x->err ||
		    x->gen != atomic_load_explicit(&f->c->write_gen, memory_order_acquire)) {
			x->len = 0; /* failed (the read path fails over and reports) or stale */
			x->err = 0;
			return false;
		}
		n = x->off + x->len - (off + pos);
		if (n > len - pos)
			n = len - pos;
		memcpy(buf + pos, x->buf + (off + pos - x->off), n);
		pos += n;
	}
	atomic_fetch_add_explicit(&f->ra_served, len, memory_order_relaxed);
	return true;
}

/* After a read of [off, off + len): follows a sequential reader, stops for others. With
 * ra->lock held. */
static void ra_plan(struct lode_file *f, struct readahead *ra, uint64_t off, uint64_t len,
		    uint64_t size)
{
	uint64_t covered, want;

	if (off != ra->next) {
		ra->seq = 0;
		ra->next = off + len;
		return;
	}
	ra->next = off + len;
	if (++ra->seq < RA_AFTER)
		return;
	want = ra->next + RA_WINDOWS * RA_WINDOW;
	if (want > size)
		want = size;
	/* what the windows already hold from next on */
	covered = ra->next;
	for (struct ra_window *x; covered < want && (x = ra_find(ra, covered));)
		covered = x->off + x->len;
	while (covered < want) {
		struct ra_window *x = NULL;

		/* a window holding nothing, or only bytes behind the reader */
		for (unsigned i = 0; i < RA_WINDOWS && !x; i++)
			if (!ra->win[i].len || ra->win[i].off + ra->win[i].len <= ra->next)
				x = &ra->win[i];
		if (!x)
			break;
		ra_wait(x);
		if (!x->buf)
			x->buf = malloc(RA_WINDOW);
		if (!x->buf)
			break;
		x->off = covered;
		x->len = want - covered < RA_WINDOW ? want - covered : RA_WINDOW;
		x->gen = atomic_load_explicit(&f->c->write_gen, memory_order_acquire);
		x->err = objects_read_start(f, &x->w, x->buf, x->len, x->off);
		x->pending = true;
		covered += x->len;
	}
}

ssize_t lode_pread(struct lode_file *f, void *buf, size_t len, uint64_t off)
{
	struct readahead *ra = NULL;
	bool served = false;
	uint64_t size;
	int rc = 0;

	if ((f->flags & 3) == 1 /* O_WRONLY */)
		return -EBADF;
	pthread_mutex_lock(&f->lock);
	size = f->size;
	pthread_mutex_unlock(&f->lock);
	if (off >= size || len == 0)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	targets_maybe_refresh(f->c);
	if (len > (size_t)SSIZE_MAX)
		len = SSIZE_MAX;
	if (atomic_fetch_add(&f->readers, 1))
		atomic_store(&f->ra_off, true);
	if ((f->flags & 3) == 0 /* O_RDONLY */ && len <= RA_READ_MAX && !atomic_load(&f->ra_off))
		ra = ra_get(f);
	if (ra) {
		pthread_mutex_lock(&ra->lock);
		served = ra_serve(f, ra, buf, len, off);
		if (!served)
			pthread_mutex_unlock(&ra->lock);
	}
	if (!served) {
		pthread_rwlock_rdlock(&f->rw);
		rc = objects_read(f, buf, len, off);
		pthread_rwlock_unlock(&f->rw);
		if (ra)
			pthread_mutex_lock(&ra->lock);
	}
	if (ra) {
		if (!rc && !atomic_load(&f->ra_off))
			ra_plan(f, ra, off, len, size);
		pthread_mutex_unlock(&ra->lock);
	}
	atomic_fetch_sub(&f->readers, 1);
	file_reports_flush(f); /* advisory for reads: the data returned was good */
	return rc ? rc : (ssize_t)len;
}

uint64_t lode_readahead_bytes(const struct lode_file *f)
{
	return atomic_load_explicit(&f->ra_served, memory_order_relaxed);
}

/* ---- replication mode ---- */

/* What LODE_REPLICATION_DEFAULT means when the environment does not say. Chain: on the
 * 2-core bench machine both modes write 2 copies equally fast (the servers' CPU limits
 * both), but the client spends a third less CPU per GiB, and it sends each byte once
 * instead of once per copy, which is what limits a client's writes on a real network
 * (docs/benchmarks.md). */
#define REPLICATION_BUILTIN LODE_REPLICATION_CHAIN

static int env_mode;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void env_read(void)
{
	const char *v = getenv("LODE_REPLICATION");
	int m = v ? lode_replication_from_name(v) : 0;

	env_mode = m > 0 ? m : 0; /* an unknown value is ignored, like an unset one */
}

int lode_replication_from_name(const char *name)
{
	if (!strcmp(name, "fanout"))
		return LODE_REPLICATION_FANOUT;
	if (!strcmp(name, "chain"))
		return LODE_REPLICATION_CHAIN;
	if (!strcmp(name, "default"))
		return LODE_REPLICATION_DEFAULT;
	return -EINVAL;
}

const char *lode_replication_name(int mode)
{
	switch (mode) {
	case LODE_REPLICATION_DEFAULT:
		return "default";
	case LODE_REPLICATION_FANOUT:
		return "fanout";
	case LODE_REPLICATION_CHAIN:
		return "chain";
	default:
		return "?";
	}
}

int lode_set_replication(struct lode_client *c, int mode)
{
	if (mode != LODE_REPLICATION_DEFAULT && mode != LODE_REPLICATION_FANOUT &&
	    mode != LODE_REPLICATION_CHAIN)
		return -EINVAL;
	atomic_store(&c->replication, mode);
	return 0;
}

int lode_replication(struct lode_client *c)
{
	int m = atomic_load(&c->replication);

	if (m)
		return m;
	pthread_once(&env_once, env_read);
	return env_mode ? env_mode : REPLICATION_BUILTIN;
}

/* ---- chained requests ---- */

/*
 * One chained OBJ_WRITE or OBJ_FSYNC of one stripe: sent to the first copy of idx[] with
 * the others as its chain (proto/wire_spec.h), answered with every copy's status. A copy
 * the request did not reach (ECANCELED; or every copy, when the head refused or broke the
 * connection) gets it again in a next round, as a shorter chain headed by the first of
 * them: each round drops at least its head, so there are at most n rounds. A head that
 * timed out may still forward the request late, so then every copy of the round counts as
 * failed instead. Rounds after the first are sent from an I/O thread, which must not
 * wait: every connection and address is resolved up front.
 */
struct chain {
	struct lode_call call;
	struct lode_file *f;
	uint8_t op;
	unsigned n;			  /* copies in this round */
	unsigned idx[LODE_CHAIN_MAX + 1]; /* their layout indexes, head first */
	struct lode_rpc_conn *conn[LODE_CHAIN_MAX + 1];
	struct lode_wire_chain_hop hop[LODE_CHAIN_MAX + 1]; /* their ids and addresses */
	const struct iovec *data;	  /* OBJ_WRITE: the bytes, valid until finish */
	size_t fixed_len;		  /* body bytes before the chain */
	uint64_t body[LODE_BODY_MAX / 8]; /* the request: fixed part, then the chain */
	struct lode_wire_obj_chain_rep rep;
	/* results: written by one completion at a time (a resubmission follows the last) */
	unsigned good; /* copies that took it */
	int err;       /* a failure that fails the operation itself */
	int copy_err;  /* the last failure of one copy (recorded as degraded) */
	void (*finish)(struct chain *ch);
	void *arg;
};

/* A failure that says the copy is unusable, not that the request was wrong. */
static bool copy_failure(int rc);

/* The chain hop of target id: its address as the target list has it. */
static int target_hop(struct lode_client *c, uint32_t id, struct lode_wire_chain_hop *h)
{
	int rc = -ENXIO;

	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->ntargets; i++) {
		size_t len = strlen(c->targets[i].addr);

		if (c->targets[i].id != id)
			continue;
		if (len && len <= LODE_ADDR_MAX) {
			memset(h, 0, sizeof(*h));
			h->target_id = id;
			h->addr_len = (uint16_t)len;
			memcpy(h->addr, c->targets[i].addr, len);
			rc = 0;
		}
		break;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Adds copy idx to the chain (caller thread: it may ask the MDS for the target list).
 * Returns 0, or -errno when the copy cannot be reached at all. */
static int chain_add(struct chain *ch, unsigned idx)
{
	uint32_t tid = ch->f->layout.targets[idx];
	int rc;

	rc = target_conn(ch->f->c, tid, &ch->conn[ch->n]);
	if (!rc)
		rc = target_hop(ch->f->c, tid, &ch->hop[ch->n]);
	if (rc)
		return rc;
	ch->idx[ch->n++] = idx;
	return 0;
}

static void chain_copy_failed(struct chain *ch, unsigned k, int rc)
{
	ch->copy_err = rc;
	file_report(ch->f, ch->idx[k], LODE_REPORT_WRITE_FAILED);
	if (unreachable(rc))
		target_suspect(ch->f->c, ch->f->layout.targets[ch->idx[k]]);
}

/* Keeps the copies whose bit is set in keep, in order, for the next round. */
static void chain_keep(struct chain *ch, unsigned keep)
{
	unsigned j = 0;

	for (unsigned k = 0; k < ch->n; k++) {
		if (!(keep & (1u << k)))
			continue;
		ch->idx[j] = ch->idx[k];
		ch->conn[j] = ch->conn[k];
		ch->hop[j] = ch->hop[k];
		j++;
	}
	ch->n = j;
}

static void chain_done(struct lode_call *call);

static void chain_submit(struct chain *ch)
{
	unsigned t = ch->f->c->timeout_ms;
	struct lode_wire_chain hdr = {
	    .self_target = ch->hop[0].target_id,
	    .count = (uint16_t)(ch->n - 1),
	    /* the head must give up on its downstream before we give up on the head */
	    .timeout_ms = t < 4 ? 1 : t - t / 4,
	};
	char *b = (char *)ch->body + ch->fixed_len;

	if (hdr.timeout_ms > LODE_CHAIN_TIMEOUT_MAX)
		hdr.timeout_ms = LODE_CHAIN_TIMEOUT_MAX;
	memcpy(b, &hdr, sizeof(hdr));
	memcpy(b + sizeof(hdr), &ch->hop[1], (ch->n - 1) * sizeof(ch->hop[0]));
	memset(&ch->call, 0, sizeof(ch->call));
	ch->call.opcode = ch->op;
	ch->call.body = ch->body;
	ch->call.body_len = (uint32_t)(ch->fixed_len + lode_chain_size(ch->n - 1));
	if (ch->data) {
		ch->call.data = ch->data;
		ch->call.data_iovcnt = 1;
	}
	ch->call.reply_body = &ch->rep;
	ch->call.reply_body_max = sizeof(ch->rep);
	ch->call.done = chain_done;
	lode_rpc_submit(ch->conn[0], &ch->call);
}

/* The whole request failed at the head: which copies are known failed, which to retry. */
static unsigned chain_head_failed(struct chain *ch, int rc)
{
	if (rc == -ETIMEDOUT) {
		/* the head may still be working on it, and forward it late */
		for (unsigned k = 0; k < ch->n; k++)
			chain_copy_failed(ch, k, rc);
		return 0;
	}
	if (unreachable(rc)) {
		/* nothing reached the others through it (or the same bytes did) */
		chain_copy_failed(ch, 0, rc);
		return ((1u << ch->n) - 1) & ~1u;
	}
	/* refused as a request (a malformed chain, a stale address, no memory): an error of
	 * the operation, as the same answer from one copy in fan-out */
	if (!ch->err)
		ch->err = rc == -EBADMSG ? -EIO : rc;
	return 0;
}

static void chain_done(struct lode_call *call)
{
	struct chain *ch = lode_container_of(call, struct chain, call);
	const struct lode_wire_obj_chain_rep *rep;
	unsigned retry = 0;
	int rc = call->status;

	if (!rc)
		rc = lode_dec_obj_chain_rep(&ch->rep, call->reply_body_len, ch->n - 1, &rep);
	if (rc) {
		retry = chain_head_failed(ch, rc);
	} else {
		for (unsigned k = 0; k < ch->n; k++) {
			int st = lode_status_to_errno(rep->status[k]);

			if (!st)
				ch->good++;
			else if (st == -ECANCELED)
				retry |= 1u << k;
			else if (copy_failure(st))
				chain_copy_failed(ch, k, st);
			else if (!ch->err)
				ch->err = st == -EBADMSG ? -EIO : st;
		}
	}
	if (retry && !ch->err) {
		chain_keep(ch, retry);
		chain_submit(ch);
		return;
	}
	ch->finish(ch);
}

/* ---- writes ---- */

struct write_piece {
	struct chain *chain; /* owned: chain replication, instead of calls[] */
	struct lode_call calls[LODE_LAYOUT_TARGETS_MAX];
	struct lode_wire_obj_rep reps[LODE_LAYOUT_TARGETS_MAX];
	unsigned idx[LODE_LAYOUT_TARGETS_MAX]; /* layout index of each call's copy */
	struct lode_file *f;
	struct window *w;
	unsigned ncalls;
	/* calls completed: they complete on several I/O threads at once, so each call keeps
	 * its own status and the last one to complete sums them up */
	_Atomic unsigned done;
	unsigned good; /* copies that stored the piece (set when all are done) */
	int err;       /* a failure that fails the write itself (set when all are done) */
	int copy_err;  /* the last failure of one copy (set when all are done) */
	struct lode_wire_obj_write_req *req; /* followed by the sums: the request body */
	struct iovec iov;
	char *bounce; /* owned: the merged chunk data for a read-modify-write */
};

/*
 * A copy that cannot be reached (or whose disk failed) does not fail the write while
 * another copy stored it: that copy is reported degraded to the MDS before the write is
 * acknowledged, and readers skip it until a repair. A full disk or a checksum rejected in
 * transit fails the write itself.
 */
static bool copy_failure(int rc)
{
	return unreachable(rc) || rc == -EIO;
}

static void write_piece_end(struct write_piece *p)
{
	if (!p->err && !p->good)
		p->err = p->copy_err ? p->copy_err : -EIO; /* no copy has it */
	window_leave(p->w, p->err);
	free(p->chain);
	free(p->bounce);
	free(p->req);
	free(p);
}

static void write_call_done(struct lode_call *call)
{
	struct write_piece *p = call->arg;
	unsigned i = (unsigned)(call - p->calls);

	if (copy_failure(call->status)) {
		file_report(p->f, p->idx[i], LODE_REPORT_WRITE_FAILED);
		if (unreachable(call->status))
			target_suspect(p->f->c, p->f->layout.targets[p->idx[i]]);
	}
	/* acq_rel: the last call sees every other call's status */
	if (atomic_fetch_add_explicit(&p->done, 1, memory_order_acq_rel) + 1 < p->ncalls)
		return;
	for (unsigned k = 0; k < p->ncalls; k++) {
		int st = p->calls[k].status;

		if (!st)
			p->good++;
		else if (copy_failure(st))
			p->copy_err = st;
		else if (!p->err)
			p->err = st == -EBADMSG ? -EIO : st;
	}
	write_piece_end(p);
}

static void write_chain_finish(struct chain *ch)
{
	struct write_piece *p = ch->arg;

	p->good = ch->good;
	p->err = ch->err;
	p->copy_err = ch->copy_err;
	write_piece_end(p);
}

/* Reads [start, start + len) of one stripe object into buf, verified, zeros where the
 * object has no data. start is chunk aligned. */
static int object_read_sync(struct lode_file *f, unsigned stripe, uint64_t start, char *buf,
			    uint64_t len)
{
	struct read_piece *p;
	struct window w;
	int rc;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	window_init(&w);
	window_enter(&w, 1);
	p->f = f;
	p->w = &w;
	p->stripe = stripe;
	p->dst = buf;
	p->len = (uint32_t)len;
	p->req.obj.ino = f->ino;
	p->req.obj.generation = f->layout.generation;
	p->req.obj.stripe = stripe;
	p->req.offset = start;
	p->req.length = (uint32_t)round_up(len, CHUNK);
	if (len % CHUNK) {
		p->bounce = malloc(p->req.length);
		if (!p->bounce) {
			free(p);
			window_destroy(&w);
			return -ENOMEM;
		}
	}
	read_piece_start(p, 0);
	rc = window_drain(&w);
	window_destroy(&w);
	return rc;
}

/* Sends a prepared piece (its live copies in idx[]) as one chained request. */
static int write_piece_chain(struct write_piece *p, uint64_t nchunks)
{
	struct lode_file *f = p->f;
	size_t fixed = sizeof(*p->req) + nchunks * sizeof(uint64_t);
	struct chain *ch;
	int rc;

	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		rc = -ENOMEM;
		goto err_free;
	}
	p->chain = ch;
	ch->f = f;
	ch->op = LODE_OP_OBJ_WRITE;
	ch->data = &p->iov;
	ch->finish = write_chain_finish;
	ch->arg = p;
	for (unsigned m = 0; m < p->ncalls; m++) {
		if (chain_add(ch, p->idx[m]))
			file_report(f, p->idx[m], LODE_REPORT_WRITE_FAILED);
	}
	if (!ch->n) {
		rc = -EIO; /* every copy of this stripe is gone */
		goto err_free;
	}
	p->req->flags |= LODE_OBJ_F_CHAIN;
	memcpy(ch->body, p->req, fixed);
	ch->fixed_len = fixed;
	rc = window_enter(p->w, f->c->max_inflight);
	if (rc)
		goto err_free;
	/* p may be freed by the completion: nothing reads it after this */
	chain_submit(ch);
	return 0;

err_free:
	free(p->chain);
	free(p->bounce);
	free(p->req);
	free(p);
	return rc;
}

/*
 * Writes [obj_off, obj_off + n) of one stripe object from src, to every copy. The request
 * must start on a chunk boundary and end on one unless it ends at or past the object's
 * end (obj_size, as this writer knows it): a piece that does not is widened to whole
 * chunks, and the bytes it does not change are read back first (verified) and merged.
 * The caller holds f->rw exclusively when a piece needs that.
 */
static int write_piece(struct lode_file *f, struct window *w, unsigned stripe, uint64_t obj_off,
		       const char *src, uint64_t n, uint64_t obj_size)
{
	const struct lode_wire_layout *l = &f->layout;
	uint64_t start = round_down(obj_off, CHUNK), end = obj_off + n, len, nchunks;
	struct write_piece *p;
	const char *data = src;
	uint64_t *sums;
	int rc;

	if (end < obj_size && end % CHUNK) {
		end = round_up(end, CHUNK);
		if (end > obj_size)
			end = obj_size;
	}
	len = end - start;
	nchunks = (len + CHUNK - 1) / CHUNK;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->req = malloc(sizeof(*p->req) + nchunks * sizeof(uint64_t));
	if (!p->req) {
		rc = -ENOMEM;
		goto err_free;
	}
	if (start != obj_off || end != obj_off + n) {
		p->bounce = malloc(len);
		if (!p->bounce) {
			rc = -ENOMEM;
			goto err_free;
		}
		rc = object_read_sync(f, stripe, start, p->bounce, len);
		if (rc)
			goto err_free;
		memcpy(p->bounce + (obj_off - start), src, n);
		data = p->bounce;
	}
	memset(p->req, 0, sizeof(*p->req));
	p->req->obj.ino = f->ino;
	p->req->obj.generation = l->generation;
	p->req->obj.stripe = stripe;
	p->req->offset = start;
	p->req->nchunks = (uint32_t)nchunks;
	sums = (uint64_t *)(p->req + 1);
	for (uint64_t i = 0; i < nchunks; i++) {
		uint64_t off = i * CHUNK;

		sums[i] = lode_chunk_sum(data + off, len - off < CHUNK ? len - off : CHUNK);
	}
	p->iov.iov_base = (void *)data;
	p->iov.iov_len = len;
	p->w = w;
	p->f = f;
	p->ncalls = 0;
	{
		uint64_t degraded;

		pthread_mutex_lock(&f->lock);
		degraded = f->degraded | f->report_pending;
		pthread_mutex_unlock(&f->lock);
		for (unsigned m = 0; m < l->mirror_count; m++) {
			unsigned idx = stripe * l->mirror_count + m;
			struct lode_call *call = &p->calls[p->ncalls];

			if (degraded & (1ull << idx))
				continue; /* a repair will refill it from a good copy */
			if (!target_is_up(f->c, l->targets[idx])) {
				/* known down: skip the wait, the copy is degraded from here on */
				file_report(f, idx, LODE_REPORT_WRITE_FAILED);
				continue;
			}
			rc = target_conn(f->c, l->targets[idx], &call->conn_);
			if (rc) {
				file_report(f, idx, LODE_REPORT_WRITE_FAILED);
				continue;
			}
			p->idx[p->ncalls++] = idx;
		}
	}
	if (!p->ncalls) {
		rc = -EIO; /* every copy of this stripe is gone: nothing can hold the data */
		goto err_free;
	}
	if (p->ncalls > 1 && p->ncalls <= LODE_CHAIN_MAX + 1 &&
	    lode_replication(f->c) == LODE_REPLICATION_CHAIN)
		return write_piece_chain(p, nchunks);
	rc = window_enter(w, f->c->max_inflight);
	if (rc)
		goto err_free;
	/* p may be freed by the completion of its last call: nothing reads it after that */
	for (unsigned m = 0, ncalls = p->ncalls; m < ncalls; m++) {
		struct lode_call *call = &p->calls[m];
		struct lode_rpc_conn *conn = call->conn_;

		call->opcode = LODE_OP_OBJ_WRITE;
		call->body = p->req;
		call->body_len = (uint32_t)(sizeof(*p->req) + nchunks * sizeof(uint64_t));
		call->data = &p->iov;
		call->data_iovcnt = 1;
		call->reply_body = &p->reps[m];
		call->reply_body_max = sizeof(p->reps[m]);
		call->done = write_call_done;
		call->arg = p;
		lode_rpc_submit(conn, call);
	}
	return 0;

err_free:
	free(p->bounce);
	free(p->req);
	free(p);
	return rc;
}

/* Does [off, off + len) need a read-modify-write somewhere? Only its two ends can. */
static bool needs_rmw(const struct lode_wire_layout *l, uint64_t off, uint64_t len)
{
	/* stripe units are chunk multiples, so file and object offsets share alignment */
	(void)l;
	return off % CHUNK || (off + len) % CHUNK;
}

ssize_t lode_pwrite(struct lode_file *f, const void *buf, size_t len, uint64_t off)
{
	const struct lode_wire_layout *l = &f->layout;
	uint64_t size, pos = 0, stripes = 0;
	bool exclusive;
	struct window w;
	int rc = 0, rc2;

	if ((f->flags & 3) == 0 /* O_RDONLY */)
		return -EBADF;
	if (len == 0)
		return 0;
	if (len > (size_t)SSIZE_MAX || off > (uint64_t)INT64_MAX - len)
		return -EFBIG;
	targets_maybe_refresh(f->c);
	client_write_gen_bump(f->c); /* read-ahead fetched from now on may miss this write */
	exclusive = needs_rmw(l, off, len);
	if (exclusive)
		pthread_rwlock_wrlock(&f->rw);
	else
		pthread_rwlock_rdlock(&f->rw);
	pthread_mutex_lock(&f->lock);
	size = f->size;
	pthread_mutex_unlock(&f->lock);
	window_init(&w);
	while (pos < len) {
		uint64_t obj_off, n;
		unsigned stripe;

		n = next_piece(l, off, pos, len, &stripe, &obj_off);
		rc = write_piece(f, &w, stripe, obj_off, (const char *)buf + pos, n,
				 object_size_for(l, size, stripe));
		if (rc)
			break;
		stripes |= 1ull << (stripe % 64);
		pos += n;
	}
	rc2 = window_drain(&w);
	if (!rc)
		rc = rc2;
	window_destroy(&w);
	/* copies that missed this write are recorded as degraded before we acknowledge it */
	rc2 = file_reports_flush(f);
	if (!rc)
		rc = rc2;
	if (!rc) {
		pthread_mutex_lock(&f->lock);
		if (off + len > f->size)
			f->size = off + len;
		f->mtime_ns = lode_now_ns();
		f->dirty_meta = true;
		f->dirty_stripes |= stripes;
		pthread_mutex_unlock(&f->lock);
	}
	pthread_rwlock_unlock(&f->rw);
	client_write_gen_bump(f->c); /* and read-ahead started during it may too */
	if (!rc)
		rc = file_lease_renew_if_due(f);
	return rc ? rc : (ssize_t)len;
}

/* ---- truncate and fsync: one request per object copy (or one chain per stripe) ---- */

struct obj_op {
	struct lode_call call;
	struct window *w;
	struct lode_file *f;
	unsigned idx; /* layout index of the copy */
	union {
		struct lode_wire_obj_truncate_req trunc;
		struct lode_wire_objid id;
	} req;
	struct lode_wire_obj_rep rep;
};

static void obj_op_done(struct lode_call *call)
{
	struct obj_op *o = lode_container_of(call, struct obj_op, call);
	int rc = call->status;

	/* a copy that cannot take it is degraded, as for writes; the stripe check follows */
	if (rc && copy_failure(rc)) {
		file_report(o->f, o->idx, LODE_REPORT_WRITE_FAILED);
		rc = 0;
	}
	window_leave(o->w, rc);
	free(o);
}

static void fsync_chain_finish(struct chain *ch)
{
	/* copies that failed are reported; objects_each checks that each stripe kept one */
	window_leave(ch->arg, ch->err);
	free(ch);
}

/* One chained OBJ_FSYNC for the live copies of stripe s. */
static int fsync_chain(struct lode_file *f, struct window *w, unsigned s, uint64_t degraded)
{
	const struct lode_wire_layout *l = &f->layout;
	struct lode_wire_objid id = {.ino = f->ino, .generation = l->generation, .stripe = s};
	struct chain *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return -ENOMEM;
	ch->f = f;
	ch->op = LODE_OP_OBJ_FSYNC;
	ch->finish = fsync_chain_finish;
	ch->arg = w;
	for (unsigned m = 0; m < l->mirror_count; m++) {
		unsigned idx = s * l->mirror_count + m;

		if (degraded & (1ull << idx))
			continue;
		if (chain_add(ch, idx))
			file_report(f, idx, LODE_REPORT_WRITE_FAILED);
	}
	if (!ch->n) {
		free(ch); /* no copy left: the stripe check fails it */
		return 0;
	}
	memcpy(ch->body, &id, sizeof(id));
	ch->fixed_len = sizeof(id);
	window_enter(w, UINT32_MAX);
	chain_submit(ch);
	return 0;
}

static int objects_each(struct lode_file *f, uint8_t op, uint64_t stripes, uint64_t new_size)
{
	const struct lode_wire_layout *l = &f->layout;
	uint64_t degraded;
	struct window w;
	bool chained;
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	degraded = f->degraded | f->report_pending;
	pthread_mutex_unlock(&f->lock);
	chained = op == LODE_OP_OBJ_FSYNC && l->mirror_count > 1 &&
		  l->mirror_count <= LODE_CHAIN_MAX + 1 &&
		  lode_replication(f->c) == LODE_REPLICATION_CHAIN;
	window_init(&w);
	for (unsigned s = 0; s < l->stripe_count && !rc; s++) {
		if (!(stripes & (1ull << (s % 64))))
			continue;
		if (chained) {
			rc = fsync_chain(f, &w, s, degraded);
			continue;
		}
		for (unsigned m = 0; m < l->mirror_count && !rc; m++) {
			unsigned idx = s * l->mirror_count + m;
			struct lode_rpc_conn *conn;
			struct obj_op *o;

			if (degraded & (1ull << idx))
				continue;
			if (target_conn(f->c, l->targets[idx], &conn)) {
				file_report(f, idx, LODE_REPORT_WRITE_FAILED);
				continue;
			}
			o = calloc(1, sizeof(*o));
			if (!o) {
				rc = -ENOMEM;
				break;
			}
			o->w = &w;
			o->f = f;
			o->idx = idx;
			o->req.id.ino = f->ino;
			o->req.id.generation = l->generation;
			o->req.id.stripe = s;
			if (op == LODE_OP_OBJ_TRUNCATE) {
				o->req.trunc.size = object_size_for(l, new_size, s);
				o->call.body_len = sizeof(o->req.trunc);
			} else {
				o->call.body_len = sizeof(o->req.id);
			}
			o->call.opcode = op;
			o->call.body = &o->req;
			o->call.reply_body = &o->rep;
			o->call.reply_body_max = sizeof(o->rep);
			o->call.done = obj_op_done;
			window_enter(&w, UINT32_MAX);
			lode_rpc_submit(conn, &o->call);
		}
	}
	{
		int rc2 = window_drain(&w);

		if (!rc)
			rc = rc2;
	}
	window_destroy(&w);
	if (!rc)
		rc = file_reports_flush(f);
	/* every stripe touched must still have a copy that took the operation */
	pthread_mutex_lock(&f->lock);
	degraded = f->degraded;
	pthread_mutex_unlock(&f->lock);
	for (unsigned s = 0; s < l->stripe_count && !rc; s++) {
		uint64_t all = (l->mirror_count >= 64 ? ~0ull : (1ull << l->mirror_count) - 1)
			       << (s * l->mirror_count);

		if ((stripes & (1ull << (s % 64))) && (degraded & all) == all)
			rc = -EIO;
	}
	return rc;
}

int objects_truncate(struct lode_file *f, uint64_t new_size)
{
	int rc;

	client_write_gen_bump(f->c); /* as for a write */
	rc = objects_each(f, LODE_OP_OBJ_TRUNCATE, ~0ull, new_size);
	client_write_gen_bump(f->c);
	return rc;
}

int objects_fsync(struct lode_file *f, uint64_t stripes)
{
	return objects_each(f, LODE_OP_OBJ_FSYNC, stripes, 0);
}
