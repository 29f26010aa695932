/* SPDX-License-Identifier: MIT */
/*
 * liblode's file API: open and create at the MDS, fsync, flush, truncate, close and the
 * attributes of an open file. A handle's state (commit, lease, reports) is handle.c's;
 * its data goes through readahead.c and write.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "io.h"

static uint32_t open_flags_to_wire(int flags)
{
	switch (flags & O_ACCMODE) {
	case O_RDONLY:
		return LODE_OPEN_READ;
	case O_WRONLY:
		return LODE_OPEN_WRITE;
	default:
		return LODE_OPEN_READ | LODE_OPEN_WRITE;
	}
}

/* The handle for an OPEN or CREATE reply, truncated first for O_TRUNC (objects before the
 * size, as every truncate). */
static int open_finish(struct lode_client *c, const struct lode_wire_open_rep *rep,
		       uint64_t sent_ms, int flags, int handle_flags, struct lode_file **out)
{
	struct lode_file *f;
	int rc;

	rc = lode_client_file_new(c, rep, sent_ms, handle_flags, &f);
	if (rc)
		return rc;
	/* O_TRUNC empties the file whatever the access mode (Linux truncates on O_RDONLY too,
	 * when the caller may write): here whenever the handle can write */
	if ((flags & O_TRUNC) && (handle_flags & O_ACCMODE) != O_RDONLY) {
		rc = lode_ftruncate(f, 0);
		if (rc) {
			lode_close(f);
			return rc;
		}
	}
	*out = f;
	return 0;
}

int lode_ll_open(struct lode_client *c, uint64_t ino, int flags, struct lode_file **out)
{
	return lode_client_ll_open(c, ino, flags, 0, out);
}

int lode_client_ll_open(struct lode_client *c, uint64_t ino, int flags, uint32_t wire_flags,
			struct lode_file **out)
{
	struct lode_wire_open_req req = {.ino = ino, .cred = lode_client_cred(c)};
	struct lode_wire_open_rep rep;
	uint64_t sent_ms;
	int rc;

	if ((flags & O_TRUNC) && (flags & O_ACCMODE) == O_RDONLY) {
		/* Linux truncates on O_RDONLY|O_TRUNC too, if the caller may write the file */
		rc = lode_ll_truncate(c, ino, 0);
		if (rc)
			return rc;
	}
	req.flags = open_flags_to_wire(flags) | wire_flags;
	sent_ms = lode_now_ms();
	/* an open for writing takes a lease and may give the file its objects: with
	 * lazy_data, as unsynced as the data written through them. (O_TRUNC is not sent:
	 * open_finish truncates with a commit of its own, which lazy_namespace decides.
	 * repair and move open through here too; their final commits are durable.) */
	if (wire_flags & LODE_OPEN_EXCLUSIVE)
		lode_client_closes_flush(c); /* our own closed handles count against it */
	for (unsigned wait_ms = 2 * CLOSE_DELAY_MS;; wait_ms *= 2) {
		rc = lode_client_mds_call_as(c, LODE_OP_OPEN, c->lazy || c->lazy_data, &req,
					     sizeof(req), NULL, 0, &rep, sizeof(rep));
		/* a writer that closed a moment ago may have its lease in its closer's queue:
		 * an exclusive open waits out a few of its delays before it reports EBUSY */
		if (rc != -EBUSY || !(wire_flags & LODE_OPEN_EXCLUSIVE) ||
		    wait_ms > 16 * CLOSE_DELAY_MS)
			break;
		usleep(wait_ms * 1000);
		sent_ms = lode_now_ms();
	}
	if (rc)
		return rc;
	rc = open_finish(c, &rep, sent_ms, flags, flags, out);
	if (!rc)
		(*out)->exclusive = (wire_flags & LODE_OPEN_EXCLUSIVE) != 0;
	return rc;
}

int lode_ll_create(struct lode_client *c, uint64_t parent, const char *name, int flags,
		   uint32_t mode, const struct lode_layout *layout, struct lode_file **out)
{
	struct lode_wire_create_req req = {.parent = parent, .cred = lode_client_cred(c)};
	char body[sizeof(req) + LODE_NAME_MAX];
	struct lode_wire_open_rep rep;
	size_t nlen = strlen(name);
	uint64_t sent_ms;
	int rc;

	rc = lode_name_check(name, nlen);
	if (rc)
		return rc;
	req.mode = mode & 07777;
	req.flags = open_flags_to_wire(flags) | LODE_OPEN_WRITE;
	req.flags |= (flags & O_EXCL) ? LODE_OPEN_EXCL : LODE_OPEN_CREATE;
	req.name_len = (uint16_t)nlen;
	if (layout) {
		req.has_layout = 1;
		req.layout.stripe_size = layout->stripe_size;
		req.layout.stripe_count = layout->stripe_count;
		req.layout.mirror_count = layout->mirror_count;
		for (unsigned i = 0; i < LODE_LAYOUT_TARGETS_MAX; i++)
			if (layout->targets[i])
				req.has_targets = 1;
		if (req.has_targets)
			memcpy(req.layout.targets, layout->targets, sizeof(req.layout.targets));
		rc = lode_layout_check(&req.layout);
		if (rc)
			return rc;
	}
	memcpy(body, &req, sizeof(req));
	memcpy(body + sizeof(req), name, nlen);
	rc = lode_client_mds_call_name(c, LODE_OP_CREATE, parent, name, nlen, body,
				       (uint32_t)(sizeof(req) + nlen), &rep, sizeof(rep), NULL,
				       &sent_ms);
	if (rc)
		return rc;
	/* the handle is a write handle (CREATE always opens for writing, so that O_TRUNC of
	 * an existing file works); reads are allowed if the caller asked for them */
	rc = open_finish(c, &rep, sent_ms, flags, (flags & O_ACCMODE) == O_RDONLY ? O_RDWR : flags,
			 out);
	if (!rc && (flags & O_EXCL) && !(flags & O_TRUNC)) {
		/* a new file: its objects hold only what this handle writes */
		pthread_mutex_lock(&(*out)->lock);
		(*out)->stored_exact = true;
		pthread_mutex_unlock(&(*out)->lock);
	}
	return rc;
}

int lode_open(struct lode_client *c, const char *path, int flags, uint32_t mode,
	      struct lode_file **out)
{
	char name[LODE_NAME_MAX + 1];
	uint64_t parent, ino;
	int rc;

	if (flags & O_CREAT) {
		rc = lode_client_resolve_parent(c, path, &parent, name);
		if (rc)
			return rc == -EINVAL ? -EISDIR : rc;
		/* O_CREAT|O_TRUNC is nearly always of a new name: asked exclusively first, a
		 * new file needs no truncate (an OBJ_TRUNCATE per object and a COMMIT); a name
		 * that exists by now gets the caller's own flags (lode-fuse's create does so) */
		if ((flags & O_TRUNC) && !(flags & O_EXCL)) {
			rc = lode_ll_create(c, parent, name, (flags & ~O_TRUNC) | O_EXCL, mode,
					    NULL, out);
			if (rc != -EEXIST)
				return rc;
		}
		return lode_ll_create(c, parent, name, flags, mode, NULL, out);
	}
	/* the name may be deleted or renamed over between the lookup and the open (-ESTALE):
	 * then look it up once more */
	for (int tries = 0;; tries++) {
		rc = lode_client_resolve_regular(c, path, &ino);
		if (!rc)
			rc = lode_ll_open(c, ino, flags, out);
		if (rc != -ESTALE || tries == 1)
			return rc;
	}
}

int lode_create_with_layout(struct lode_client *c, const char *path, uint32_t mode,
			    const struct lode_layout *layout, struct lode_file **out)
{
	char name[LODE_NAME_MAX + 1];
	uint64_t parent;
	int rc;

	rc = lode_client_resolve_parent(c, path, &parent, name);
	if (rc)
		return rc == -EINVAL ? -EEXIST : rc;
	return lode_ll_create(c, parent, name, O_RDWR | O_CREAT | O_EXCL, mode, layout, out);
}

static int fsync_locked(struct lode_file *f)
{
	uint64_t stripes;
	int rc, commit_rc;

	pthread_mutex_lock(&f->lock);
	stripes = f->dirty_stripes;
	f->dirty_stripes = 0;
	pthread_mutex_unlock(&f->lock);
	/* lazy_data: the writes' replies said every live copy's server holds them, which is
	 * all this client promises; the size is committed alike, without a sync */
	if (f->c->lazy_data)
		return lode_client_file_commit(f, LODE_OP_COMMIT, false);
	/* the COMMIT is durable, and so is everything committed before it: this handle's
	 * earlier lazy COMMITs (close, flush) and those of other clients */
	if (!stripes)
		return lode_client_file_commit(f, LODE_OP_COMMIT, true);
	rc = lode_client_objects_fsync_commit(f, stripes, &commit_rc);
	if (rc) {
		pthread_mutex_lock(&f->lock);
		f->dirty_stripes |= stripes;
		pthread_mutex_unlock(&f->lock);
		return rc;
	}
	return commit_rc;
}

int lode_fsync(struct lode_file *f)
{
	int rc;

	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return lode_sync(f->c);
	/* one at a time: the stripes an fsync in flight took are not synced yet */
	pthread_mutex_lock(&f->fsync_lock);
	rc = fsync_locked(f);
	pthread_mutex_unlock(&f->fsync_lock);
	return rc;
}

int lode_file_parent_stat(struct lode_file *f, struct lode_stat *st)
{
	if (!f->parent.ino)
		return -ENODATA;
	lode_client_attr_to_stat(&f->parent, st);
	return 0;
}

int lode_sync(struct lode_client *c)
{
	/* also on a durable client: closes (its own and others') are answered before they
	 * are durable */
	return lode_client_mds_call(c, LODE_OP_SYNC, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL);
}

int lode_flush(struct lode_file *f)
{
	bool dirty;

	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return 0;
	pthread_mutex_lock(&f->lock);
	dirty = f->dirty_meta;
	pthread_mutex_unlock(&f->lock);
	return dirty ? lode_client_file_commit(f, LODE_OP_COMMIT, false) : 0;
}

/* Sets the size (grow_only: only if that grows the file, decided under rw: *grown says
 * whether it did), with its commit. */
static int truncate_to(struct lode_file *f, uint64_t size, bool grow_only, bool *grown)
{
	int rc = 0;

	pthread_rwlock_wrlock(&f->rw);
	if (grow_only) {
		pthread_mutex_lock(&f->lock);
		*grown = size > f->size;
		pthread_mutex_unlock(&f->lock);
		if (!*grown)
			goto out; /* a write beside this one got further: never cut it */
	}
	rc = lode_client_objects_truncate(f, size);
	if (!rc) {
		pthread_mutex_lock(&f->lock);
		f->size = size;
		f->mtime_ns = lode_now_ns();
		f->dirty_meta = true;
		f->meta_gen++;
		f->size_set = true; /* committed as is, not as the largest end */
		/* the truncate changed every object's size (and its last chunk's checksum) in
		 * the OSS's page cache only: the next fsync must sync them all */
		f->dirty_stripes = ~0ull;
		pthread_mutex_unlock(&f->lock);
		rc = lode_client_file_commit(f, LODE_OP_COMMIT, !f->c->lazy);
	}
out:
	pthread_rwlock_unlock(&f->rw);
	return rc;
}

int lode_ftruncate(struct lode_file *f, uint64_t size)
{
	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (size > (uint64_t)INT64_MAX)
		return -EFBIG;
	return truncate_to(f, size, false, NULL);
}

/* Writes zeros over [off, end) below the file's size: through the normal write path, so
 * that every copy and its checksums agree. The size is read under the write's own lock,
 * piece by piece: a truncate between two pieces is never undone by the next. */
static int write_zeros(struct lode_file *f, uint64_t off, uint64_t end)
{
	size_t piece = end - off < (1u << 20) ? (size_t)(end - off) : (1u << 20);
	char *zeros = calloc(1, piece ? piece : 1);
	int rc = 0;

	if (!zeros)
		return -ENOMEM;
	while (off < end && !rc) {
		size_t n = end - off < piece ? (size_t)(end - off) : piece;
		ssize_t w = lode_client_pwrite_within_size(f, zeros, n, off);

		if (w <= 0) {
			rc = (int)w; /* 0: the file ends before off now */
			break;
		}
		off += (uint64_t)w;
	}
	free(zeros);
	return rc;
}

int lode_fallocate(struct lode_file *f, int mode, uint64_t off, uint64_t len)
{
	const int known = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE;
	uint64_t end;
	int rc = 0;

	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (mode & ~known)
		return -EOPNOTSUPP;
	/* as Linux: a hole is punched inside the size, and only with KEEP_SIZE */
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	if (len == 0)
		return -EINVAL;
	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
		return -EFBIG;
	end = off + len;
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		uint64_t size = lode_file_size(f);

		/* inside the size it starts with (bytes appended meanwhile are not punched), and
		 * inside the size each piece sees (a truncate meanwhile is not undone) */
		if (end > size)
			end = size;
		return off < end ? write_zeros(f, off, end) : 0;
	}
	rc = lode_client_objects_allocate(f, off, end);
	if (rc)
		return rc;
	/* the allocation (and the objects it created) is durable with the next fsync */
	pthread_mutex_lock(&f->lock);
	f->dirty_stripes = ~0ull;
	pthread_mutex_unlock(&f->lock);
	if (!(mode & FALLOC_FL_KEEP_SIZE)) {
		bool grown;

		rc = truncate_to(f, end, true, &grown);
		if (rc || grown)
			return rc;
	}
	/* commit (mtime unchanged, ctime now), which measures what the file takes now */
	pthread_mutex_lock(&f->lock);
	f->dirty_meta = true;
	f->meta_gen++;
	pthread_mutex_unlock(&f->lock);
	return lode_client_file_commit(f, LODE_OP_COMMIT, !f->c->lazy);
}

/* Whether a close must commit: a size or mtime not yet published. */
static bool close_needs_commit(struct lode_file *f)
{
	bool dirty;

	pthread_mutex_lock(&f->lock);
	dirty = f->dirty_meta;
	pthread_mutex_unlock(&f->lock);
	return dirty;
}

int lode_close(struct lode_file *f)
{
	int rc;

	if (!f)
		return 0;
	lode_client_readahead_free(f);
	/* a read handle holds nothing at the MDS (no lease, nothing to commit: its CLOSE
	 * would only answer the attributes), so its close costs no round trip; a shared
	 * write handle with nothing to commit only gives its lease back, with others
	 * (closer.c). An exclusive one (repair, move) keeps every writer out until the MDS
	 * has it back: its close goes at once. */
	if ((f->flags & O_ACCMODE) == O_RDONLY)
		rc = 0;
	else if (!f->exclusive && !close_needs_commit(f) &&
		 lode_client_close_defer(f->c, f->ino, f->handle))
		rc = 0;
	else
		rc = lode_client_file_commit(f, LODE_OP_CLOSE, false);
	lode_client_file_free(f);
	return rc;
}

int lode_fstat(struct lode_file *f, struct lode_stat *st)
{
	int rc = lode_ll_getattr(f->c, f->ino, st);

	if (!rc) {
		pthread_mutex_lock(&f->lock);
		if (f->dirty_meta) {
			/* a write changes ctime with mtime, as on a local file system */
			st->size = f->size;
			st->mtime_ns = f->mtime_ns;
			if (st->ctime_ns < f->mtime_ns)
				st->ctime_ns = f->mtime_ns;
		}
		pthread_mutex_unlock(&f->lock);
	}
	return rc;
}

void lode_file_stat_cached(struct lode_file *f, struct lode_stat *st)
{
	lode_client_attr_to_stat(&f->attr, st);
	pthread_mutex_lock(&f->lock);
	st->size = f->size;
	st->mtime_ns = f->mtime_ns;
	if (st->ctime_ns < f->mtime_ns)
		st->ctime_ns = f->mtime_ns;
	st->blocks = (f->size + 511) / 512;
	pthread_mutex_unlock(&f->lock);
}

void lode_file_layout(const struct lode_file *f, struct lode_layout *out)
{
	memset(out, 0, sizeof(*out));
	out->stripe_size = f->layout.stripe_size;
	out->stripe_count = f->layout.stripe_count;
	out->mirror_count = f->layout.mirror_count;
	out->generation = f->layout.generation;
	pthread_mutex_lock(&((struct lode_file *)f)->lock); /* lode_client_layout_refresh */
	memcpy(out->targets, f->layout.targets, sizeof(out->targets));
	pthread_mutex_unlock(&((struct lode_file *)f)->lock);
}

uint64_t lode_file_size(const struct lode_file *f)
{
	return f->size;
}

/* ---- truncate by inode or path: an open for writing, then lode_ftruncate ---- */

int lode_ll_truncate(struct lode_client *c, uint64_t ino, uint64_t size)
{
	struct lode_file *f;
	int rc, rc2;

	rc = lode_ll_open(c, ino, O_WRONLY, &f);
	if (rc)
		return rc;
	rc = lode_ftruncate(f, size);
	rc2 = lode_close(f);
	return rc ? rc : rc2;
}

int lode_truncate(struct lode_client *c, const char *path, uint64_t size)
{
	uint64_t ino;
	int rc;

	for (int tries = 0;; tries++) {
		rc = lode_client_resolve_regular(c, path, &ino);
		if (!rc)
			rc = lode_ll_truncate(c, ino, size);
		if (rc != -ESTALE || tries == 1)
			return rc;
	}
}
