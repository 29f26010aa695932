/* SPDX-License-Identifier: MIT */
/*
 * liblode namespace calls: path resolution (one LOOKUP per component, symlinks followed
 * as the kernel would) and one MDS request per operation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client.h"
#include "codec.h"

#define SYMLOOP_MAX 40
#define DEPTH_MAX 256

int lode_ll_lookup(struct lode_client *c, uint64_t parent, const char *name,
		   struct lode_stat *st)
{
	struct lode_wire_lookup_req req = {.parent = parent, .cred = client_cred(c)};
	char body[sizeof(req) + LODE_NAME_MAX];
	struct lode_wire_attr attr;
	size_t len = strlen(name);
	int rc;

	rc = lode_name_check(name, len);
	if (rc)
		return rc;
	req.name_len = (uint16_t)len;
	memcpy(body, &req, sizeof(req));
	memcpy(body + sizeof(req), name, len);
	rc = mds_call(c, LODE_OP_LOOKUP, body, (uint32_t)(sizeof(req) + len), NULL, 0, &attr,
		      sizeof(attr), NULL, 0, NULL);
	if (rc)
		return rc;
	attr_to_stat(&attr, st);
	return 0;
}

int lode_ll_getattr(struct lode_client *c, uint64_t ino, struct lode_stat *st)
{
	struct lode_wire_getattr_req req = {.ino = ino};
	struct lode_wire_attr attr;
	int rc;

	rc = mds_call(c, LODE_OP_GETATTR, &req, sizeof(req), NULL, 0, &attr, sizeof(attr), NULL,
		      0, NULL);
	if (rc)
		return rc;
	attr_to_stat(&attr, st);
	return 0;
}

static ssize_t ll_readlink(struct lode_client *c, uint64_t ino, char *buf, size_t size)
{
	struct lode_wire_getattr_req req = {.ino = ino};
	char target[LODE_SYMLINK_MAX];
	uint64_t len = 0;
	int rc;

	rc = mds_call(c, LODE_OP_READLINK, &req, sizeof(req), NULL, 0, NULL, 0, target,
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

int resolve_parent(struct lode_client *c, const char *path, uint64_t *parent, char *name)
{
	return walk(c, path, 0, 1, NULL, parent, name);
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

int lode_mkdir(struct lode_client *c, const char *path, uint32_t mode)
{
	struct lode_wire_mkdir_req req = {.cred = client_cred(c), .mode = mode & 07777};
	char name[LODE_NAME_MAX + 1], body[sizeof(req) + LODE_NAME_MAX];
	struct lode_wire_attr attr;
	uint32_t len;
	int rc;

	rc = resolve_parent(c, path, &req.parent, name);
	if (rc)
		return rc == -EINVAL ? -EEXIST : rc;
	req.name_len = (uint16_t)strlen(name);
	len = body2(body, &req, sizeof(req), name, req.name_len, NULL, 0);
	return mds_call(c, LODE_OP_MKDIR, body, len, NULL, 0, &attr, sizeof(attr), NULL, 0,
			NULL);
}

static int remove_op(struct lode_client *c, const char *path, uint8_t op)
{
	struct lode_wire_lookup_req req = {.cred = client_cred(c)};
	char name[LODE_NAME_MAX + 1], body[sizeof(req) + LODE_NAME_MAX];
	uint32_t len;
	int rc;

	rc = resolve_parent(c, path, &req.parent, name);
	if (rc)
		return rc;
	req.name_len = (uint16_t)strlen(name);
	len = body2(body, &req, sizeof(req), name, req.name_len, NULL, 0);
	return mds_call(c, op, body, len, NULL, 0, NULL, 0, NULL, 0, NULL);
}

int lode_unlink(struct lode_client *c, const char *path)
{
	return remove_op(c, path, LODE_OP_UNLINK);
}

int lode_rmdir(struct lode_client *c, const char *path)
{
	int rc = remove_op(c, path, LODE_OP_RMDIR);

	/* rmdir("/") is EBUSY on Linux; rmdir("x/.") is EINVAL */
	if (rc == -EINVAL && !strcmp(path, "/"))
		return -EBUSY;
	return rc;
}

int lode_rename(struct lode_client *c, const char *from, const char *to, unsigned flags)
{
	struct lode_wire_rename_req req = {.cred = client_cred(c)};
	char a[LODE_NAME_MAX + 1], b[LODE_NAME_MAX + 1];
	char body[sizeof(req) + 2 * LODE_NAME_MAX];
	uint32_t len;
	int rc;

	if (flags & ~(unsigned)(LODE_RENAME_NOREPLACE_FLAG | LODE_RENAME_EXCHANGE_FLAG))
		return -EINVAL;
	rc = resolve_parent(c, from, &req.old_parent, a);
	if (!rc)
		rc = resolve_parent(c, to, &req.new_parent, b);
	if (rc)
		return rc;
	req.old_name_len = (uint16_t)strlen(a);
	req.new_name_len = (uint16_t)strlen(b);
	req.flags = (flags & LODE_RENAME_NOREPLACE_FLAG ? LODE_RENAME_NOREPLACE : 0) |
		    (flags & LODE_RENAME_EXCHANGE_FLAG ? LODE_RENAME_EXCHANGE : 0);
	len = body2(body, &req, sizeof(req), a, req.old_name_len, b, req.new_name_len);
	return mds_call(c, LODE_OP_RENAME, body, len, NULL, 0, NULL, 0, NULL, 0, NULL);
}

int lode_link(struct lode_client *c, const char *existing, const char *newpath)
{
	struct lode_wire_link_req req = {.cred = client_cred(c)};
	char name[LODE_NAME_MAX + 1], body[sizeof(req) + LODE_NAME_MAX];
	struct lode_wire_attr attr;
	struct lode_stat st;
	uint32_t len;
	int rc;

	rc = lode_lstat(c, existing, &st);
	if (rc)
		return rc;
	rc = resolve_parent(c, newpath, &req.new_parent, name);
	if (rc)
		return rc == -EINVAL ? -EEXIST : rc;
	req.ino = st.ino;
	req.name_len = (uint16_t)strlen(name);
	len = body2(body, &req, sizeof(req), name, req.name_len, NULL, 0);
	return mds_call(c, LODE_OP_LINK, body, len, NULL, 0, &attr, sizeof(attr), NULL, 0, NULL);
}

int lode_symlink(struct lode_client *c, const char *target, const char *linkpath)
{
	struct lode_wire_symlink_req req = {.cred = client_cred(c)};
	char name[LODE_NAME_MAX + 1];
	char *body;
	struct lode_wire_attr attr;
	size_t tlen = strlen(target);
	uint32_t len;
	int rc;

	if (tlen == 0)
		return -ENOENT;
	if (tlen > LODE_SYMLINK_MAX)
		return -ENAMETOOLONG;
	rc = resolve_parent(c, linkpath, &req.parent, name);
	if (rc)
		return rc == -EINVAL ? -EEXIST : rc;
	body = malloc(sizeof(req) + LODE_NAME_MAX + tlen);
	if (!body)
		return -ENOMEM;
	req.name_len = (uint16_t)strlen(name);
	req.target_len = (uint16_t)tlen;
	len = body2(body, &req, sizeof(req), name, req.name_len, target, tlen);
	rc = mds_call(c, LODE_OP_SYMLINK, body, len, NULL, 0, &attr, sizeof(attr), NULL, 0, NULL);
	free(body);
	return rc;
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

static int setattr(struct lode_client *c, const char *path, struct lode_wire_setattr_req *req)
{
	struct lode_wire_attr attr;
	struct lode_stat st;
	int rc;

	rc = lode_stat(c, path, &st);
	if (rc)
		return rc;
	req->ino = st.ino;
	req->cred = client_cred(c);
	return mds_call(c, LODE_OP_SETATTR, req, sizeof(*req), NULL, 0, &attr, sizeof(attr),
			NULL, 0, NULL);
}

int lode_chmod(struct lode_client *c, const char *path, uint32_t mode)
{
	struct lode_wire_setattr_req req = {.valid = LODE_SETATTR_MODE, .mode = mode & 07777};

	return setattr(c, path, &req);
}

int lode_chown(struct lode_client *c, const char *path, uint32_t uid, uint32_t gid)
{
	struct lode_wire_setattr_req req = {.uid = uid, .gid = gid};

	if (uid != (uint32_t)-1)
		req.valid |= LODE_SETATTR_UID;
	if (gid != (uint32_t)-1)
		req.valid |= LODE_SETATTR_GID;
	return setattr(c, path, &req);
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
	struct lode_wire_setattr_req req = {0};

	req.valid |= time_bits(atime_ns, LODE_SETATTR_ATIME, LODE_SETATTR_ATIME_NOW,
			       &req.atime_ns);
	req.valid |= time_bits(mtime_ns, LODE_SETATTR_MTIME, LODE_SETATTR_MTIME_NOW,
			       &req.mtime_ns);
	return setattr(c, path, &req);
}

int lode_truncate(struct lode_client *c, const char *path, uint64_t size)
{
	struct lode_file *f;
	int rc, rc2;

	rc = lode_open(c, path, 01 /* O_WRONLY */, 0, &f);
	if (rc)
		return rc;
	rc = lode_ftruncate(f, size);
	rc2 = lode_close(f);
	return rc ? rc : rc2;
}

int lode_statfs(struct lode_client *c, struct lode_statfs *out)
{
	struct lode_wire_statfs_rep rep;
	int rc;

	rc = mds_call(c, LODE_OP_STATFS, NULL, 0, NULL, 0, &rep, sizeof(rep), NULL, 0, NULL);
	if (rc)
		return rc;
	out->bytes_total = rep.bytes_total;
	out->bytes_free = rep.bytes_free;
	out->files = rep.files;
	out->files_free = rep.files_free;
	out->targets_up = rep.targets_up;
	out->targets_total = rep.targets_total;
	out->name_max = rep.name_max;
	out->block_size = rep.block_size;
	return 0;
}

int lode_readdir(struct lode_client *c, const char *path, lode_dirent_fn fn, void *arg)
{
	struct lode_wire_readdir_req req = {.cred = client_cred(c), .max_entries = 256};
	size_t cap = 256 * (sizeof(struct lode_wire_dirent) + LODE_NAME_MAX + 8);
	const struct lode_wire_readdir_rep *rep;
	struct lode_wire_readdir_rep repbuf;
	struct lode_stat st;
	char *data;
	int rc;

	rc = lode_stat(c, path, &st);
	if (rc)
		return rc;
	if (!S_ISDIR(st.mode))
		return -ENOTDIR;
	data = malloc(cap);
	if (!data)
		return -ENOMEM;
	req.ino = st.ino;
	for (;;) {
		const struct lode_wire_dirent *e;
		struct lode_name n;
		uint64_t dlen = 0, pos = 0;

		rc = mds_call(c, LODE_OP_READDIR, &req, sizeof(req), NULL, 0, &repbuf,
			      sizeof(repbuf), data, cap, &dlen);
		if (rc)
			break;
		rc = lode_dec_readdir_rep(&repbuf, sizeof(repbuf), data, dlen, &rep);
		if (rc)
			break;
		while ((rc = lode_readdir_next(data, dlen, &pos, &e, &n)) == 1) {
			char nm[LODE_NAME_MAX + 1];

			memcpy(nm, n.ptr, n.len);
			nm[n.len] = 0;
			req.cookie = e->cookie;
			rc = fn(arg, nm, e->ino, e->mode);
			if (rc)
				goto out;
		}
		if (rc < 0 || rep->eof)
			break;
	}
out:
	free(data);
	return rc;
}

/* ---- xattrs ---- */

static int xattr_call(struct lode_client *c, uint8_t op, const char *path, const char *name,
		      const void *value, size_t size, unsigned flags, void *out, size_t outsize,
		      uint32_t *outlen)
{
	struct lode_wire_xattr_req req = {.cred = client_cred(c), .flags = flags};
	char body[sizeof(req) + LODE_XATTR_NAME_MAX];
	struct lode_wire_xattr_rep rep;
	struct iovec iov = {(void *)value, size};
	size_t nlen = name ? strlen(name) : 0;
	struct lode_stat st;
	uint64_t dlen = 0;
	int rc;

	if (name) {
		rc = lode_xattr_name_check(name, nlen);
		if (rc)
			return rc;
	}
	if (size > LODE_XATTR_VALUE_MAX || outsize > UINT32_MAX)
		return -E2BIG;
	rc = lode_stat(c, path, &st);
	if (rc)
		return rc;
	req.ino = st.ino;
	req.name_len = (uint16_t)nlen;
	req.size = (uint32_t)outsize;
	memcpy(body, &req, sizeof(req));
	if (nlen)
		memcpy(body + sizeof(req), name, nlen);
	if (op == LODE_OP_GETXATTR || op == LODE_OP_LISTXATTR) {
		rc = mds_call(c, op, body, (uint32_t)(sizeof(req) + nlen), NULL, 0, &rep,
			      sizeof(rep), out, outsize, &dlen);
		if (!rc)
			*outlen = rep.size;
		return rc;
	}
	return mds_call(c, op, body, (uint32_t)(sizeof(req) + nlen), size ? &iov : NULL,
			size ? 1 : 0, NULL, 0, NULL, 0, NULL);
}

int lode_setxattr(struct lode_client *c, const char *path, const char *name, const void *value,
		  size_t size, unsigned flags)
{
	unsigned wf = (flags & LODE_XATTR_CREATE_FLAG ? LODE_XATTR_CREATE : 0) |
		      (flags & LODE_XATTR_REPLACE_FLAG ? LODE_XATTR_REPLACE : 0);

	return xattr_call(c, LODE_OP_SETXATTR, path, name, value, size, wf, NULL, 0, NULL);
}

ssize_t lode_getxattr(struct lode_client *c, const char *path, const char *name, void *value,
		      size_t size)
{
	uint32_t len = 0;
	int rc = xattr_call(c, LODE_OP_GETXATTR, path, name, NULL, 0, 0, value, size, &len);

	return rc ? rc : (ssize_t)len;
}

ssize_t lode_listxattr(struct lode_client *c, const char *path, char *list, size_t size)
{
	uint32_t len = 0;
	int rc = xattr_call(c, LODE_OP_LISTXATTR, path, NULL, NULL, 0, 0, list, size, &len);

	return rc ? rc : (ssize_t)len;
}

int lode_removexattr(struct lode_client *c, const char *path, const char *name)
{
	return xattr_call(c, LODE_OP_REMOVEXATTR, path, name, NULL, 0, 0, NULL, 0, NULL);
}
