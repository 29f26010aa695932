/* SPDX-License-Identifier: MIT */
/*
 * liblode namespace calls: path resolution (one LOOKUP per component, symlinks followed
 * as the kernel would) and one MDS request per operation.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client.h"
#include "rpc.h"
#include "codec.h"

#define SYMLOOP_MAX 40
#define DEPTH_MAX   256

int lode_ll_lookup(struct lode_client *c, uint64_t parent, const char *name, struct lode_stat *st)
{
	struct lode_wire_lookup_req req = {.parent = parent, .cred = lode_client_cred(c)};
	char body[sizeof(req) + LODE_NAME_MAX];
	struct lode_wire_attr attr;
	size_t len = strlen(name);
	int rc;

	rc = lode_name_check(name, len);
	if (rc)
		return rc;
	/* a name missing from a directory this client holds a grant of (grant.c) */
	if (lode_client_grant_says_missing(c, parent, name, len, &req.cred))
		return -ENOENT;
	req.name_len = (uint16_t)len;
	memcpy(body, &req, sizeof(req));
	memcpy(body + sizeof(req), name, len);
	rc = lode_client_mds_call(c, LODE_OP_LOOKUP, body, (uint32_t)(sizeof(req) + len), NULL, 0,
				  &attr, sizeof(attr), NULL, 0, NULL);
	if (rc)
		return rc;
	lode_client_attr_to_stat(&attr, st);
	return 0;
}

int lode_ll_getattr(struct lode_client *c, uint64_t ino, struct lode_stat *st)
{
	struct lode_wire_getattr_req req = {.ino = ino};
	struct lode_wire_attr attr;
	int rc;

	rc = lode_client_mds_call(c, LODE_OP_GETATTR, &req, sizeof(req), NULL, 0, &attr,
				  sizeof(attr), NULL, 0, NULL);
	if (rc)
		return rc;
	lode_client_attr_to_stat(&attr, st);
	return 0;
}

static ssize_t ll_readlink(struct lode_client *c, uint64_t ino, char *buf, size_t size)
{
	struct lode_wire_getattr_req req = {.ino = ino};
	char target[LODE_SYMLINK_MAX];
	uint64_t len = 0;
	int rc;

	rc = lode_client_mds_call(c, LODE_OP_READLINK, &req, sizeof(req), NULL, 0, NULL, 0, target,
				  sizeof(target), &len);
	if (rc)
		return rc;
	if (len > size)
		len = size;
	memcpy(buf, target, len);
	return (ssize_t)len;
}

/*
 * Walks path from the root. Components are pushed on a stack of directory inodes so that
 * ".." works (the root is its own parent). A symlink met where it must be followed is
 * replaced by its target: the rest of the path is appended to the target and the walk
 * goes on (from the root for an absolute target).
 *
 * stop_before_last: resolve every component but the last and return its name in *last.
 */
static int walk(struct lode_client *c, const char *path, int follow_last, int stop_before_last,
		struct lode_stat *out, uint64_t *parent_out, char *last)
{
	uint64_t stack[DEPTH_MAX];
	int depth = 0, loops = 0, rc = 0;
	char *buf, *p;
	struct lode_stat cur;

	if (!path || path[0] != '/')
		return -EINVAL;
	if (strlen(path) >= 4096)
		return -ENAMETOOLONG;
	buf = malloc(2 * 4096 + 2);
	if (!buf)
		return -ENOMEM;
	strcpy(buf, path);
	stack[0] = LODE_ROOT_INO;
	rc = lode_ll_getattr(c, LODE_ROOT_INO, &cur);
	if (rc)
		goto out;
	p = buf;
	for (;;) {
		char *name, *slash;
		struct lode_stat st;
		size_t nlen;
		bool is_last;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		name = p;
		slash = strchr(p, '/');
		nlen = slash ? (size_t)(slash - p) : strlen(p);
		p += nlen;
		while (*p == '/')
			p++;
		is_last = *p == 0;
		if (!S_ISDIR(cur.mode)) {
			rc = -ENOTDIR;
			goto out;
		}
		if (nlen > LODE_NAME_MAX) {
			rc = -ENAMETOOLONG;
			goto out;
		}
		if (is_last && stop_before_last) {
			if ((nlen == 1 && name[0] == '.') ||
			    (nlen == 2 && name[0] == '.' && name[1] == '.')) {
				rc = -EINVAL;
				goto out;
			}
			memcpy(last, name, nlen);
			last[nlen] = 0;
			*parent_out = stack[depth];
			goto out;
		}
		if (nlen == 1 && name[0] == '.')
			continue;
		if (nlen == 2 && name[0] == '.' && name[1] == '.') {
			if (depth > 0)
				depth--;
			rc = lode_ll_getattr(c, stack[depth], &cur);
			if (rc)
				goto out;
			continue;
		}
		{
			char nm[LODE_NAME_MAX + 1];

			memcpy(nm, name, nlen);
			nm[nlen] = 0;
			rc = lode_ll_lookup(c, stack[depth], nm, &st);
		}
		if (rc)
			goto out;
		if (S_ISLNK(st.mode) && (!is_last || follow_last)) {
			char target[LODE_SYMLINK_MAX + 1];
			ssize_t tl;
			size_t rest = strlen(p);

			if (++loops > SYMLOOP_MAX) {
				rc = -ELOOP;
				goto out;
			}
			tl = ll_readlink(c, st.ino, target, LODE_SYMLINK_MAX);
			if (tl < 0) {
				rc = (int)tl;
				goto out;
			}
			if ((size_t)tl + 1 + rest >= 2 * 4096) {
				rc = -ENAMETOOLONG;
				goto out;
			}
			memmove(buf + tl + 1, p, rest + 1);
			memcpy(buf, target, (size_t)tl);
			buf[tl] = '/';
			p = buf;
			if (target[0] == '/') {
				depth = 0;
				rc = lode_ll_getattr(c, LODE_ROOT_INO, &cur);
				if (rc)
					goto out;
			}
			continue;
		}
		if (depth + 1 >= DEPTH_MAX) {
			rc = -ENAMETOOLONG;
			goto out;
		}
		stack[++depth] = st.ino;
		cur = st;
	}
	if (stop_before_last) {
		/* the path named the root or ended in "." or "..": no last component */
		rc = -EINVAL;
		goto out;
	}
	if (out)
		*out = cur;
out:
	free(buf);
	return rc;
}

int lode_client_resolve_parent(struct lode_client *c, const char *path, uint64_t *parent,
			       char *name)
{
	return walk(c, path, 0, 1, NULL, parent, name);
}

int lode_client_resolve_regular(struct lode_client *c, const char *path, uint64_t *ino)
{
	struct lode_stat st;
	int rc = lode_stat(c, path, &st);

	if (rc)
		return rc;
	if (S_ISDIR(st.mode))
		return -EISDIR;
	if (!S_ISREG(st.mode))
		return -EINVAL;
	*ino = st.ino;
	return 0;
}

int lode_stat(struct lode_client *c, const char *path, struct lode_stat *st)
{
	return walk(c, path, 1, 0, st, NULL, NULL);
}

int lode_lstat(struct lode_client *c, const char *path, struct lode_stat *st)
{
	return walk(c, path, 0, 0, st, NULL, NULL);
}

/* Builds "fixed struct + names" bodies. */
static uint32_t body2(char *out, const void *fixed, size_t flen, const char *a, size_t alen,
		      const char *b, size_t blen)
{
	memcpy(out, fixed, flen);
	memcpy(out + flen, a, alen);
	if (blen)
		memcpy(out + flen + alen, b, blen);
	return (uint32_t)(flen + alen + blen);
}

static int attr_reply(int rc, const struct lode_wire_attr *attr, struct lode_stat *st)
{
	if (!rc && st)
		lode_client_attr_to_stat(attr, st);
	return rc;
}

/* ---- by inode ---- */

int lode_ll_mkdir(struct lode_client *c, uint64_t parent, const char *name, uint32_t mode,
		  struct lode_stat *st)
{
	struct lode_wire_mkdir_req req = {.parent = parent, .cred = lode_client_cred(c)};
	char body[sizeof(req) + LODE_NAME_MAX];
	struct lode_wire_attr attr;
	size_t nlen = strlen(name);
	uint64_t token, sent_ms;
	uint32_t len;
	int rc;

	rc = lode_name_check(name, nlen);
	if (rc)
		return rc;
	req.mode = mode & 07777;
	req.name_len = (uint16_t)nlen;
	len = body2(body, &req, sizeof(req), name, nlen, NULL, 0);
	rc = lode_client_mds_call_name(c, LODE_OP_MKDIR, parent, name, nlen, body, len, &attr,
				       sizeof(attr), &token, &sent_ms);
	if (!rc)
		lode_client_grant_new(c, &attr, token, sent_ms, &req.cred);
	return attr_reply(rc, &attr, st);
}

int lode_ll_mknod(struct lode_client *c, uint64_t parent, const char *name, uint32_t mode,
		  uint32_t rdev, struct lode_stat *st)
{
	struct lode_wire_mknod_req req = {.parent = parent, .cred = lode_client_cred(c)};
	char body[sizeof(req) + LODE_NAME_MAX];
	struct lode_wire_attr attr;
	size_t nlen = strlen(name);
	uint32_t len;
	int rc;

	rc = lode_name_check(name, nlen);
	if (rc)
		return rc;
	req.mode = mode;
	req.rdev = rdev;
	req.name_len = (uint16_t)nlen;
	len = body2(body, &req, sizeof(req), name, nlen, NULL, 0);
	rc = lode_client_mds_call_name(c, LODE_OP_MKNOD, parent, name, nlen, body, len, &attr,
				       sizeof(attr), NULL, NULL);
	return attr_reply(rc, &attr, st);
}

/* A reply's lode_wire_dirs_rep into after[0..n-1] (zero where it said nothing). */
static void dirs_out(const struct lode_wire_dirs_rep *rep, struct lode_stat *after, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		memset(&after[i], 0, sizeof(after[i]));
		if (rep->dir[i].ino)
			lode_client_attr_to_stat(&rep->dir[i], &after[i]);
	}
}

static int ll_remove(struct lode_client *c, uint64_t parent, const char *name, uint8_t op,
		     struct lode_stat *after)
{
	struct lode_wire_lookup_req req = {.parent = parent, .cred = lode_client_cred(c)};
	struct lode_wire_dirs_rep rep;
	char body[sizeof(req) + LODE_NAME_MAX];
	size_t nlen = strlen(name);
	uint32_t len;
	int rc;

	rc = lode_name_check(name, nlen);
	if (rc)
		return rc;
	req.name_len = (uint16_t)nlen;
	len = body2(body, &req, sizeof(req), name, nlen, NULL, 0);
	rc = lode_client_mds_call(c, op, body, len, NULL, 0, &rep, sizeof(rep), NULL, 0, NULL);
	if (!rc && after)
		dirs_out(&rep, after, 1);
	return rc;
}

int lode_ll_unlink(struct lode_client *c, uint64_t parent, const char *name)
{
	return ll_remove(c, parent, name, LODE_OP_UNLINK, NULL);
}

int lode_ll_rmdir(struct lode_client *c, uint64_t parent, const char *name)
{
	return ll_remove(c, parent, name, LODE_OP_RMDIR, NULL);
}

int lode_ll_remove_dirs(struct lode_client *c, uint64_t parent, const char *name, int dir,
			struct lode_stat *parent_after)
{
	return ll_remove(c, parent, name, dir ? LODE_OP_RMDIR : LODE_OP_UNLINK, parent_after);
}

int lode_ll_rename(struct lode_client *c, uint64_t parent, const char *name, uint64_t new_parent,
		   const char *new_name, unsigned flags)
{
	return lode_ll_rename_dirs(c, parent, name, new_parent, new_name, flags, NULL);
}

int lode_ll_rename_dirs(struct lode_client *c, uint64_t parent, const char *name,
			uint64_t new_parent, const char *new_name, unsigned flags,
			struct lode_stat after[2])
{
	struct lode_wire_rename_req req = {.old_parent = parent, .new_parent = new_parent};
	struct lode_wire_dirs_rep rep;
	char body[sizeof(req) + 2 * LODE_NAME_MAX];
	size_t alen = strlen(name), blen = strlen(new_name);
	uint32_t len;
	int rc;

	if (flags & ~(unsigned)(LODE_RENAME_NOREPLACE_FLAG | LODE_RENAME_EXCHANGE_FLAG) ||
	    flags == (LODE_RENAME_NOREPLACE_FLAG | LODE_RENAME_EXCHANGE_FLAG))
		return -EINVAL;
	rc = lode_name_check(name, alen);
	if (!rc)
		rc = lode_name_check(new_name, blen);
	if (rc)
		return rc;
	req.cred = lode_client_cred(c);
	req.old_name_len = (uint16_t)alen;
	req.new_name_len = (uint16_t)blen;
	req.flags = (flags & LODE_RENAME_NOREPLACE_FLAG ? LODE_RENAME_NOREPLACE : 0) |
		    (flags & LODE_RENAME_EXCHANGE_FLAG ? LODE_RENAME_EXCHANGE : 0);
	len = body2(body, &req, sizeof(req), name, alen, new_name, blen);
	rc = lode_client_mds_call_name(c, LODE_OP_RENAME, new_parent, new_name, blen, body, len,
				       &rep, sizeof(rep), NULL, NULL);
	if (!rc && after)
		dirs_out(&rep, after, 2);
	return rc;
}

int lode_ll_link(struct lode_client *c, uint64_t ino, uint64_t new_parent, const char *new_name,
		 struct lode_stat *st)
{
	struct lode_wire_link_req req = {.ino = ino, .new_parent = new_parent};
	char body[sizeof(req) + LODE_NAME_MAX];
	struct lode_wire_attr attr;
	size_t nlen = strlen(new_name);
	uint32_t len;
	int rc;

	rc = lode_name_check(new_name, nlen);
	if (rc)
		return rc;
	req.cred = lode_client_cred(c);
	req.name_len = (uint16_t)nlen;
	len = body2(body, &req, sizeof(req), new_name, nlen, NULL, 0);
	rc = lode_client_mds_call_name(c, LODE_OP_LINK, new_parent, new_name, nlen, body, len,
				       &attr, sizeof(attr), NULL, NULL);
	return attr_reply(rc, &attr, st);
}

int lode_ll_symlink(struct lode_client *c, const char *target, uint64_t parent, const char *name,
		    struct lode_stat *st)
{
	struct lode_wire_symlink_req req = {.parent = parent};
	struct lode_wire_attr attr;
	size_t tlen = strlen(target), nlen = strlen(name);
	uint32_t len;
	char *body;
	int rc;

	rc = lode_name_check(name, nlen);
	if (rc)
		return rc;
	if (tlen == 0)
		return -ENOENT;
	if (tlen > LODE_SYMLINK_MAX)
		return -ENAMETOOLONG;
	body = malloc(sizeof(req) + nlen + tlen);
	if (!body)
		return -ENOMEM;
	req.cred = lode_client_cred(c);
	req.name_len = (uint16_t)nlen;
	req.target_len = (uint16_t)tlen;
	len = body2(body, &req, sizeof(req), name, nlen, target, tlen);
	rc = lode_client_mds_call_name(c, LODE_OP_SYMLINK, parent, name, nlen, body, len, &attr,
				       sizeof(attr), NULL, NULL);
	free(body);
	return attr_reply(rc, &attr, st);
}

ssize_t lode_ll_readlink(struct lode_client *c, uint64_t ino, char *buf, size_t size)
{
	return ll_readlink(c, ino, buf, size);
}

int lode_ll_setattr(struct lode_client *c, uint64_t ino, const struct lode_setattr *sa,
		    struct lode_stat *st)
{
	struct lode_wire_setattr_req req = {.ino = ino, .cred = lode_client_cred(c)};
	struct lode_wire_attr attr;
	int rc;

	_Static_assert(LODE_SET_MODE == LODE_SETATTR_MODE && LODE_SET_CTIME == LODE_SETATTR_CTIME &&
			   LODE_SET_SIZE == LODE_SETATTR_SIZE &&
			   LODE_SET_MTIME_NOW == LODE_SETATTR_MTIME_NOW,
		       "public setattr bits are the wire's");
	req.valid = sa->valid;
	req.mode = sa->mode & 07777;
	req.uid = sa->uid;
	req.gid = sa->gid;
	req.size = sa->size;
	req.atime_ns = sa->atime_ns;
	req.mtime_ns = sa->mtime_ns;
	req.ctime_ns = sa->ctime_ns;
	if (sa->valid & (LODE_SETATTR_MODE | LODE_SETATTR_UID | LODE_SETATTR_GID)) {
		/* who may look names up there changes */
		uint64_t token = lode_client_grant_drop(c, ino);

		if (token)
			lode_client_grant_return(c, ino, token);
	}
	rc = lode_client_mds_call(c, LODE_OP_SETATTR, &req, sizeof(req), NULL, 0, &attr,
				  sizeof(attr), NULL, 0, NULL);
	return attr_reply(rc, &attr, st);
}

static void dirent_from_wire(struct lode_dirent *d, const struct lode_wire_dirent *e,
			     const struct lode_name *n)
{
	memset(d, 0, sizeof(*d));
	d->ino = e->ino;
	d->cookie = e->cookie;
	d->mode = e->mode;
	memcpy(d->name, n->ptr, n->len);
	d->name[n->len] = 0;
}

/* One READDIR page into out (plain entries) or outp (with attributes). */
static int readdir_page(struct lode_client *c, uint64_t ino, uint64_t cookie,
			struct lode_dirent *out, struct lode_direntplus *outp, int max, int *eof)
{
	struct lode_wire_readdir_req req = {
	    .ino = ino, .cookie = cookie, .cred = lode_client_cred(c)};
	size_t fixed = outp ? sizeof(struct lode_wire_direntplus) : sizeof(struct lode_wire_dirent);
	const struct lode_wire_readdir_rep *rep;
	struct lode_wire_readdir_rep repbuf;
	struct lode_name n;
	uint64_t dlen = 0, pos = 0;
	size_t cap;
	char *data;
	int rc, count = 0;

	if (max <= 0)
		return -EINVAL;
	if (max > LODE_READDIR_MAX)
		max = LODE_READDIR_MAX;
	req.max_entries = (uint32_t)max;
	req.flags = outp ? LODE_READDIR_ATTRS : 0;
	cap = (size_t)max * (fixed + LODE_NAME_MAX + 8);
	data = malloc(cap);
	if (!data)
		return -ENOMEM;
	rc = lode_client_mds_call(c, LODE_OP_READDIR, &req, sizeof(req), NULL, 0, &repbuf,
				  sizeof(repbuf), data, cap, &dlen);
	if (!rc)
		rc = outp ? lode_dec_readdirplus_rep(&repbuf, sizeof(repbuf), data, dlen, &rep)
			  : lode_dec_readdir_rep(&repbuf, sizeof(repbuf), data, dlen, &rep);
	if (rc)
		goto out;
	while (count < max) {
		if (outp) {
			const struct lode_wire_direntplus *e;

			rc = lode_readdirplus_next(data, dlen, &pos, &e, &n);
			if (rc != 1)
				break;
			memset(&outp[count], 0, sizeof(outp[count]));
			dirent_from_wire(&outp[count].d, &e->d, &n);
			lode_client_attr_to_stat(&e->attr, &outp[count].st);
		} else {
			const struct lode_wire_dirent *e;

			rc = lode_readdir_next(data, dlen, &pos, &e, &n);
			if (rc != 1)
				break;
			dirent_from_wire(&out[count], e, &n);
		}
		count++;
	}
	if (rc < 0)
		goto out;
	*eof = rep->eof != 0;
	rc = count;
out:
	free(data);
	return rc;
}

int lode_ll_readdir(struct lode_client *c, uint64_t ino, uint64_t cookie, struct lode_dirent *out,
		    int max, int *eof)
{
	return readdir_page(c, ino, cookie, out, NULL, max, eof);
}

int lode_ll_readdirplus(struct lode_client *c, uint64_t ino, uint64_t cookie,
			struct lode_direntplus *out, int max, int *eof)
{
	return readdir_page(c, ino, cookie, NULL, out, max, eof);
}

/* ---- by path ---- */

/* Resolves the parent of path and runs fn on (parent, last name). */
#define WITH_PARENT(c, path, parent, name, on_root_err)                                            \
	char name[LODE_NAME_MAX + 1];                                                              \
	uint64_t parent;                                                                           \
	int rc_ = lode_client_resolve_parent(c, path, &parent, name);                              \
	if (rc_)                                                                                   \
	return rc_ == -EINVAL ? (on_root_err) : rc_

int lode_mkdir(struct lode_client *c, const char *path, uint32_t mode)
{
	WITH_PARENT(c, path, parent, name, -EEXIST);
	return lode_ll_mkdir(c, parent, name, mode, NULL);
}

int lode_unlink(struct lode_client *c, const char *path)
{
	WITH_PARENT(c, path, parent, name, -EISDIR);
	return lode_ll_unlink(c, parent, name);
}

int lode_rmdir(struct lode_client *c, const char *path)
{
	/* rmdir("/") is EBUSY on Linux; rmdir("x/.") is EINVAL */
	WITH_PARENT(c, path, parent, name, !strcmp(path, "/") ? -EBUSY : -EINVAL);
	return lode_ll_rmdir(c, parent, name);
}

int lode_rename(struct lode_client *c, const char *from, const char *to, unsigned flags)
{
	char b[LODE_NAME_MAX + 1];
	uint64_t new_parent;
	int rc;

	WITH_PARENT(c, from, parent, name, -EBUSY);
	rc = lode_client_resolve_parent(c, to, &new_parent, b);
	if (rc)
		return rc == -EINVAL ? -EBUSY : rc;
	return lode_ll_rename(c, parent, name, new_parent, b, flags);
}

int lode_link(struct lode_client *c, const char *existing, const char *newpath)
{
	struct lode_stat st;
	int rc;

	/* -ESTALE: existing was deleted or renamed over since its lookup; once more */
	for (int tries = 0;; tries++) {
		rc = lode_lstat(c, existing, &st);
		if (rc)
			return rc;
		{
			WITH_PARENT(c, newpath, parent, name, -EEXIST);
			rc = lode_ll_link(c, st.ino, parent, name, NULL);
		}
		if (rc != -ESTALE || tries == 1)
			return rc;
	}
}

int lode_symlink(struct lode_client *c, const char *target, const char *linkpath)
{
	if (!*target)
		return -ENOENT;
	{
		WITH_PARENT(c, linkpath, parent, name, -EEXIST);
		return lode_ll_symlink(c, target, parent, name, NULL);
	}
}

ssize_t lode_readlink(struct lode_client *c, const char *path, char *buf, size_t size)
{
	struct lode_stat st;
	int rc;

	rc = lode_lstat(c, path, &st);
	if (rc)
		return rc;
	if (!S_ISLNK(st.mode))
		return -EINVAL;
	return ll_readlink(c, st.ino, buf, size);
}

static int path_setattr(struct lode_client *c, const char *path, const struct lode_setattr *sa)
{
	struct lode_stat st;
	int rc;

	rc = lode_stat(c, path, &st);
	if (rc)
		return rc;
	return lode_ll_setattr(c, st.ino, sa, NULL);
}

int lode_chmod(struct lode_client *c, const char *path, uint32_t mode)
{
	struct lode_setattr sa = {.valid = LODE_SET_MODE, .mode = mode};

	return path_setattr(c, path, &sa);
}

int lode_chown(struct lode_client *c, const char *path, uint32_t uid, uint32_t gid)
{
	struct lode_setattr sa = {.uid = uid, .gid = gid};

	if (uid != (uint32_t)-1)
		sa.valid |= LODE_SET_UID;
	if (gid != (uint32_t)-1)
		sa.valid |= LODE_SET_GID;
	return path_setattr(c, path, &sa);
}

static uint32_t time_bits(int64_t t, uint32_t set, uint32_t now, int64_t *out)
{
	if (t == LODE_UTIME_OMIT)
		return 0;
	if (t == LODE_UTIME_NOW)
		return now;
	*out = t;
	return set;
}

int lode_utimens(struct lode_client *c, const char *path, int64_t atime_ns, int64_t mtime_ns)
{
	struct lode_setattr sa = {0};

	sa.valid |= time_bits(atime_ns, LODE_SET_ATIME, LODE_SET_ATIME_NOW, &sa.atime_ns);
	sa.valid |= time_bits(mtime_ns, LODE_SET_MTIME, LODE_SET_MTIME_NOW, &sa.mtime_ns);
	return path_setattr(c, path, &sa);
}

int lode_statfs(struct lode_client *c, struct lode_statfs *out)
{
	struct lode_wire_statfs_rep rep;
	int rc;

	rc = lode_client_mds_call(c, LODE_OP_STATFS, NULL, 0, NULL, 0, &rep, sizeof(rep), NULL, 0,
				  NULL);
	if (rc)
		return rc;
	memset(out, 0, sizeof(*out));
	out->bytes_total = rep.bytes_total;
	out->bytes_free = rep.bytes_free;
	out->files = rep.files;
	out->files_free = rep.files_free;
	out->targets_up = rep.targets_up;
	out->targets_total = rep.targets_total;
	out->name_max = rep.name_max;
	out->block_size = rep.block_size;
	if (lode_rpc_conn_server_flags(c->mds) & LODE_AUTH_F_INSECURE)
		out->flags |= LODE_STATFS_INSECURE;
	return 0;
}

int lode_readdir(struct lode_client *c, const char *path, lode_dirent_fn fn, void *arg)
{
	struct lode_dirent *ents;
	struct lode_stat st;
	uint64_t cookie = 0;
	int rc, eof = 0;

	rc = lode_stat(c, path, &st);
	if (rc)
		return rc;
	if (!S_ISDIR(st.mode))
		return -ENOTDIR;
	ents = malloc(256 * sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	while (!eof) {
		int n = lode_ll_readdir(c, st.ino, cookie, ents, 256, &eof);

		if (n < 0) {
			rc = n;
			break;
		}
		for (int i = 0; i < n; i++) {
			cookie = ents[i].cookie;
			rc = fn(arg, ents[i].name, ents[i].ino, ents[i].mode);
			if (rc)
				goto out;
		}
	}
out:
	free(ents);
	return rc;
}

/* ---- xattrs ---- */

static int xattr_call(struct lode_client *c, uint8_t op, uint64_t ino, const char *name,
		      const void *value, size_t size, unsigned flags, void *out, size_t outsize,
		      uint32_t *outlen)
{
	struct lode_wire_xattr_req req = {.ino = ino, .cred = lode_client_cred(c), .flags = flags};
	char body[sizeof(req) + LODE_XATTR_NAME_MAX];
	struct lode_wire_xattr_rep rep;
	struct iovec iov = {(void *)value, size};
	size_t nlen = name ? strlen(name) : 0;
	uint64_t dlen = 0;
	int rc;

	if (name) {
		rc = lode_xattr_name_check(name, nlen);
		if (rc)
			return rc;
	}
	if (size > LODE_XATTR_VALUE_MAX)
		return -E2BIG;
	if (outsize > LODE_XATTR_VALUE_MAX + 0u && op == LODE_OP_GETXATTR)
		outsize = LODE_XATTR_VALUE_MAX;
	if (outsize > UINT32_MAX)
		outsize = UINT32_MAX;
	req.name_len = (uint16_t)nlen;
	req.size = (uint32_t)outsize;
	memcpy(body, &req, sizeof(req));
	if (nlen)
		memcpy(body + sizeof(req), name, nlen);
	if (op == LODE_OP_GETXATTR || op == LODE_OP_LISTXATTR) {
		rc = lode_client_mds_call(c, op, body, (uint32_t)(sizeof(req) + nlen), NULL, 0,
					  &rep, sizeof(rep), out, outsize, &dlen);
		if (!rc)
			*outlen = rep.size;
		return rc;
	}
	return lode_client_mds_call(c, op, body, (uint32_t)(sizeof(req) + nlen), size ? &iov : NULL,
				    size ? 1 : 0, NULL, 0, NULL, 0, NULL);
}

int lode_ll_setxattr(struct lode_client *c, uint64_t ino, const char *name, const void *value,
		     size_t size, unsigned flags)
{
	unsigned wf = (flags & LODE_XATTR_CREATE_FLAG ? LODE_XATTR_CREATE : 0) |
		      (flags & LODE_XATTR_REPLACE_FLAG ? LODE_XATTR_REPLACE : 0);

	return xattr_call(c, LODE_OP_SETXATTR, ino, name, value, size, wf, NULL, 0, NULL);
}

ssize_t lode_ll_getxattr(struct lode_client *c, uint64_t ino, const char *name, void *value,
			 size_t size)
{
	uint32_t len = 0;
	int rc = xattr_call(c, LODE_OP_GETXATTR, ino, name, NULL, 0, 0, value, size, &len);

	return rc ? rc : (ssize_t)len;
}

ssize_t lode_ll_listxattr(struct lode_client *c, uint64_t ino, char *list, size_t size)
{
	uint32_t len = 0;
	int rc = xattr_call(c, LODE_OP_LISTXATTR, ino, NULL, NULL, 0, 0, list, size, &len);

	return rc ? rc : (ssize_t)len;
}

int lode_ll_removexattr(struct lode_client *c, uint64_t ino, const char *name)
{
	return xattr_call(c, LODE_OP_REMOVEXATTR, ino, name, NULL, 0, 0, NULL, 0, NULL);
}

/* Path xattr calls follow symlinks, as setxattr(2) and friends do. */
#define XATTR_BY_PATH(c, path, call)                                                               \
	do {                                                                                       \
		struct lode_stat st_;                                                              \
		int rc_ = lode_stat(c, path, &st_);                                                \
		if (rc_)                                                                           \
			return rc_;                                                                \
		return call;                                                                       \
	} while (0)

int lode_setxattr(struct lode_client *c, const char *path, const char *name, const void *value,
		  size_t size, unsigned flags)
{
	XATTR_BY_PATH(c, path, lode_ll_setxattr(c, st_.ino, name, value, size, flags));
}

ssize_t lode_getxattr(struct lode_client *c, const char *path, const char *name, void *value,
		      size_t size)
{
	XATTR_BY_PATH(c, path, lode_ll_getxattr(c, st_.ino, name, value, size));
}

ssize_t lode_listxattr(struct lode_client *c, const char *path, char *list, size_t size)
{
	XATTR_BY_PATH(c, path, lode_ll_listxattr(c, st_.ino, list, size));
}

int lode_removexattr(struct lode_client *c, const char *path, const char *name)
{
	XATTR_BY_PATH(c, path, lode_ll_removexattr(c, st_.ino, name));
}
