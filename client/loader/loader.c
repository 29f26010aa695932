/* SPDX-License-Identifier: MIT */
/*
 * liblode-loader: reading file ranges into the loader's memory.
 *
 * To the host, one lode_read_stream puts every piece at its final place: nothing is
 * copied. To a device, the range is taken a chunk at a time into the next of a ring of
 * pinned buffers (slots). Pieces arrive verified and in any order; the loader counts the
 * bytes landed per 64 KiB granule, and as the complete prefix of the chunk grows by
 * copy_min bytes it starts an asynchronous copy of that run to the device on the slot's
 * stream, so the copy engines work while the rest of the chunk and the next chunks are
 * read. After a chunk's last copy the slot is marked; the slot's buffer is read into
 * again only once the mark is done. A read returns when its last copy is done.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "copier.h"
#include "lode/loader.h"

#define MiB	 (1ull << 20)
#define GRANULE	 (64u * 1024)
#define CHUNK	 (64 * MiB)
#define BUFFERS	 4
#define STREAMS	 2
#define COPY_MIN (16 * MiB)
#define HUGE	 (2 * MiB)

struct lode_loader {
	struct lode_client *c;
	char target[32];
	struct copier cp; /* ops NULL for "host" */
	size_t chunk, copy_min;
	unsigned nbuf, nstreams;
	void **buf;	      /* pinned buffers, one per slot */
	bool *busy;	      /* the slot's copies were marked and not yet waited for */
	uint32_t *landed;     /* bytes landed per granule of the chunk being read */
	unsigned next_slot;   /* where the next chunk goes */
	pthread_mutex_t lock; /* one device read at a time: they share the buffers */
	_Atomic uint64_t bytes, copies;
};

/* One chunk being read into a slot and copied out of it. */
struct chunk_io {
	struct lode_loader *l;
	unsigned slot, stream;
	char *stage, *dst;
	uint64_t base; /* file offset of stage[0] */
	size_t len;
	size_t prefix; /* stage[0, prefix) has landed */
	size_t copied; /* stage[0, copied) is being copied */
	int err;
};

static size_t granule_len(const struct chunk_io *io, size_t g)
{
	size_t start = g * GRANULE;

	return io->len - start < GRANULE ? io->len - start : GRANULE;
}

static int copy_out(struct chunk_io *io, size_t upto)
{
	struct lode_loader *l = io->l;
	int rc;

	if (upto <= io->copied)
		return 0;
	rc = l->cp.ops->copy(&l->cp, io->stream, io->dst + io->copied, io->stage + io->copied,
			     upto - io->copied);
	if (rc)
		return rc;
	atomic_fetch_add(&l->bytes, upto - io->copied);
	atomic_fetch_add(&l->copies, 1);
	io->copied = upto;
	return 0;
}

/* A verified piece landed in the chunk's buffer: extend the complete prefix, and copy it
 * out once it has grown by copy_min. */
static int chunk_piece(void *arg, uint64_t off, void *buf, size_t len)
{
	struct chunk_io *io = arg;
	size_t rel = (size_t)(off - io->base), end = rel + len;
	uint32_t *landed = io->l->landed;

	(void)buf;
	while (rel < end) {
		size_t g = rel / GRANULE, gend = (g + 1) * GRANULE;
		size_t n = (gend < end ? gend : end) - rel;

		landed[g] += (uint32_t)n;
		rel += n;
	}
	while (io->prefix < io->len &&
	       landed[io->prefix / GRANULE] == granule_len(io, io->prefix / GRANULE))
		io->prefix = (io->prefix / GRANULE + 1) * GRANULE < io->len
				 ? (io->prefix / GRANULE + 1) * GRANULE
				 : io->len;
	if (io->prefix - io->copied >= io->l->copy_min)
		return copy_out(io, io->prefix);
	return 0;
}

static int slot_wait(struct lode_loader *l, unsigned slot)
{
	if (!l->busy[slot])
		return 0;
	l->busy[slot] = false;
	return l->cp.ops->wait(&l->cp, slot);
}

static ssize_t staged_read(struct lode_loader *l, struct lode_file *f, char *dst, size_t len,
			   uint64_t off)
{
	size_t pos = 0;
	int rc = 0;

	pthread_mutex_lock(&l->lock);
	while (pos < len) {
		unsigned slot = l->next_slot;
		struct chunk_io io = {
		    .l = l,
		    .slot = slot,
		    .stream = slot % l->nstreams,
		    .stage = l->buf[slot],
		    .dst = dst + pos,
		    .base = off + pos,
		    .len = len - pos < l->chunk ? len - pos : l->chunk,
		};
		bool ended;
		ssize_t got;

		rc = slot_wait(l, slot);
		if (rc)
			break;
		memset(l->landed, 0, sizeof(*l->landed) * (l->chunk / GRANULE + 1));
		got = lode_read_stream(f, io.stage, io.len, io.base, chunk_piece, &io);
		if (got < 0) {
			/* copies of the part that landed may be in flight: mark the slot, so that
			 * they are waited for below before dst is the caller's again */
			rc = (int)got;
			if (io.copied && !l->cp.ops->mark(&l->cp, io.stream, slot))
				l->busy[slot] = true;
			break;
		}
		ended = (size_t)got < io.len; /* the file shrank since the open */
		io.len = (size_t)got;
		/* the rest of the chunk, then the slot's mark */
		rc = copy_out(&io, io.len);
		if (!rc)
			rc = l->cp.ops->mark(&l->cp, io.stream, slot);
		if (rc)
			break;
		l->busy[slot] = true;
		l->next_slot = (slot + 1) % l->nbuf;
		pos += io.len;
		if (ended)
			break;
	}
	/* dst is the caller's when this returns: every copy done (or failed) */
	for (unsigned s = 0; s < l->nbuf; s++) {
		int rc2 = slot_wait(l, s);

		if (!rc)
			rc = rc2;
	}
	pthread_mutex_unlock(&l->lock);
	return rc ? rc : (ssize_t)pos;
}

static int count_piece(void *arg, uint64_t off, void *buf, size_t len)
{
	(void)arg;
	(void)off;
	(void)buf;
	(void)len;
	return 0;
}

ssize_t lode_loader_read(struct lode_loader *l, struct lode_file *f, void *dst, size_t len,
			 uint64_t off)
{
	uint64_t size = lode_file_size(f);

	if (!dst && len)
		return -EINVAL;
	if (off >= size || !len)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	if (!l->cp.ops)
		return lode_read_stream(f, dst, len, off, count_piece, NULL);
	return staged_read(l, f, dst, len, off);
}

void lode_loader_free(struct lode_loader *l)
{
	if (!l)
		return;
	if (l->cp.ops) {
		for (unsigned s = 0; l->buf && s < l->nbuf; s++) {
			slot_wait(l, s);
			if (l->buf[s]) {
				lode_buffer_unregister(l->buf[s]);
				l->cp.ops->pinned_release(&l->cp, l->buf[s]);
			}
		}
		l->cp.ops->close(&l->cp);
	}
	free(l->buf);
	free(l->busy);
	free(l->landed);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* "host", "staged" or "cuda:N": the copier and the device number. */
static int target_parse(const char *to, const struct copier_ops **ops, int *device)
{
	char *end;
	long n;

	*ops = NULL;
	*device = 0;
	if (!to || !strcmp(to, "host"))
		return 0;
	if (!strcmp(to, "staged")) {
		*ops = &lode_copier_staged;
		return 0;
	}
	if (strncmp(to, "cuda", 4))
		return -EINVAL;
	if (to[4] == ':') {
		errno = 0;
		n = strtol(to + 5, &end, 10);
		if (errno || end == to + 5 || *end || n < 0 || n > 1023)
			return -EINVAL;
		*device = (int)n;
	} else if (to[4]) {
		return -EINVAL;
	}
#ifdef LODE_HAVE_CUDA
	*ops = &lode_copier_cuda;
	return 0;
#else
	return -ENODEV;
#endif
}

int lode_loader_new(struct lode_client *c, const struct lode_loader_opts *o,
		    struct lode_loader **out)
{
	struct lode_loader_opts d = {0};
	const struct copier_ops *ops;
	struct lode_loader *l;
	int device, rc;

	if (!o)
		o = &d;
	rc = target_parse(o->to, &ops, &device);
	if (rc)
		return rc;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	pthread_mutex_init(&l->lock, NULL);
	l->c = c;
	snprintf(l->target, sizeof(l->target), "%s", o->to ? o->to : "host");
	l->chunk = o->chunk_bytes ? o->chunk_bytes : CHUNK;
	l->chunk = (l->chunk + GRANULE - 1) / GRANULE * GRANULE;
	l->nbuf = o->buffers ? o->buffers : BUFFERS;
	l->nstreams = o->streams ? o->streams : STREAMS;
	l->copy_min = o->copy_min ? o->copy_min : COPY_MIN;
	if (!ops) {
		*out = l;
		return 0;
	}
	l->cp.ops = ops;
	rc = ops->open(&l->cp, device, l->nstreams, l->nbuf);
	if (rc) {
		l->cp.ops = NULL;
		lode_loader_free(l);
		return rc;
	}
	l->buf = calloc(l->nbuf, sizeof(*l->buf));
	l->busy = calloc(l->nbuf, sizeof(*l->busy));
	l->landed = calloc(l->chunk / GRANULE + 1, sizeof(*l->landed));
	if (!l->buf || !l->busy || !l->landed) {
		lode_loader_free(l);
		return -ENOMEM;
	}
	for (unsigned s = 0; s < l->nbuf; s++) {
		rc = ops->pinned_alloc(&l->cp, l->chunk, &l->buf[s]);
		if (rc) {
			lode_loader_free(l);
			return rc;
		}
		/* registered once: RDMA reads land in it without a bounce */
		lode_buffer_register(l->buf[s], l->chunk);
	}
	*out = l;
	return 0;
}

const char *lode_loader_target(const struct lode_loader *l)
{
	return l->target;
}

bool lode_loader_on_device(const struct lode_loader *l)
{
	return l->cp.ops && l->cp.ops != &lode_copier_staged;
}

const char *lode_loader_error(const struct lode_loader *l)
{
	return l->cp.error;
}

/* Host memory for weights: 2 MiB aligned and backed by huge pages where the kernel has
 * them, so that the first write of each 2 MiB is one page fault, not 512. Measured with
 * lodectl load of 1 GiB, OSS warm, 5 alternating runs on this 2-CPU machine: 0.43-0.70 s
 * with huge pages against 0.62-1.04 s without (the receiving threads' page faults). */
static int host_alloc(size_t len, void **out)
{
	size_t align = len >= HUGE ? HUGE : 4096;

	if (posix_memalign(out, align, len ? len : 1))
		return -ENOMEM;
	if (len >= HUGE)
		madvise(*out, len - len % HUGE, MADV_HUGEPAGE); /* advice: fine if refused */
	return 0;
}

int lode_loader_alloc(struct lode_loader *l, size_t len, void **out)
{
	if (l->cp.ops)
		return l->cp.ops->alloc(&l->cp, len, out);
	return host_alloc(len, out);
}

void lode_loader_release(struct lode_loader *l, void *p)
{
	if (!p)
		return;
	if (l->cp.ops)
		l->cp.ops->release(&l->cp, p);
	else
		free(p);
}

int lode_loader_to_host(struct lode_loader *l, void *dst, const void *src, size_t len)
{
	if (l->cp.ops)
		return l->cp.ops->to_host(&l->cp, dst, src, len);
	memcpy(dst, src, len);
	return 0;
}

void lode_loader_counters(const struct lode_loader *l, uint64_t *bytes, uint64_t *copies)
{
	*bytes = atomic_load(&l->bytes);
	*copies = atomic_load(&l->copies);
}
