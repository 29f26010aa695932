/* SPDX-License-Identifier: MIT */
/*
 * dropfs: a FUSE file system over a backing directory that loses, like a disk after a power
 * cut, everything that was never synced. For the power-cut tests (test_powercut.sh).
 *
 *   dropfs BACKING MOUNTPOINT [FUSE options]      (runs in the foreground)
 *
 * File contents and sizes are durable only once synced: the first write, truncate or
 * fallocate of a file copies it into this process's memory, where every later change and
 * read of it happens, and fsync() (or fdatasync) of the file writes it back to BACKING and
 * syncs it there. Killing dropfs with SIGKILL is the power cut: what was in memory is gone,
 * BACKING holds what was synced.
 *
 * Names are durable only once their directory is synced, as POSIX has it: a name made by
 * create, mkdir or rename is kept only if fsync() of its directory came after. create,
 * mkdir, unlink and rename happen in BACKING at once (carrying a file's unsynced content
 * with its name), and each new name is noted in the journal BACKING.names ("+PATH"), each
 * directory sync too ("!DIR"); the journal is appended to at once, so it survives the
 * kill. The next dropfs on BACKING is the boot after the cut: before it mounts, it removes
 * every noted name that no later sync of its directory covered (a directory with all
 * under it), and empties the journal. A removal is durable at once (stricter than a disk,
 * which may bring a name back), and a renamed directory's unsynced names are not followed.
 * This is a test tool: a file's unsynced copy lives whole in memory, and a path in the
 * journal may not hold a newline.
 *
 * A slow disk, for a cut in the middle of a sync: with DROPFS_SLOW_FSYNC=FILE, while FILE
 * holds a number N, each fsync() of a file first sleeps N ms. Other calls go on meanwhile:
 * FUSE's threads serve them, one at a time (one lock around every call but that sleep).
 */
#define FUSE_USE_VERSION 35
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <linux/falloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int backing = -1; /* the backing directory */
static int journal = -1; /* BACKING.names: names made, and directories synced */

/* A file whose content changed since its last sync. */
struct dirty {
	char *path; /* relative to the backing directory */
	uint8_t *buf;
	size_t len, cap;
	struct dirty *next;
};
static struct dirty *dirties;

static const char *rel(const char *path)
{
	return path[1] ? path + 1 : ".";
}

static struct dirty *find(const char *path)
{
	for (struct dirty *d = dirties; d; d = d->next)
		if (!strcmp(d->path, rel(path)))
			return d;
	return NULL;
}

static int reserve(struct dirty *d, size_t len)
{
	size_t cap = d->cap ? d->cap : 4096;
	uint8_t *b;

	if (len <= d->cap)
		return 0;
	while (cap < len)
		cap *= 2;
	b = realloc(d->buf, cap);
	if (!b)
		return -ENOMEM;
	memset(b + d->cap, 0, cap - d->cap);
	d->buf = b;
	d->cap = cap;
	return 0;
}

/* The file's unsynced copy, made from BACKING at its first change. */
static int load(const char *path, struct dirty **out)
{
	struct dirty *d = find(path);
	struct stat st;
	int fd, rc = 0;

	if (d) {
		*out = d;
		return 0;
	}
	fd = openat(backing, rel(path), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(rel(path))) || fstat(fd, &st)) {
		rc = d ? -errno : -ENOMEM;
		goto fail;
	}
	rc = reserve(d, (size_t)st.st_size);
	for (size_t done = 0; !rc && done < (size_t)st.st_size;) {
		ssize_t n = pread(fd, d->buf + done, (size_t)st.st_size - done, (off_t)done);

		if (n <= 0)
			rc = n < 0 ? -errno : -EIO;
		else
			done += (size_t)n;
	}
	if (rc)
		goto fail;
	d->len = (size_t)st.st_size;
	close(fd);
	d->next = dirties;
	dirties = d;
	*out = d;
	return 0;
fail:
	close(fd);
	if (d)
		free(d->path), free(d->buf), free(d);
	return rc ? rc : -ENOMEM;
}

static void forget(const char *path)
{
	for (struct dirty **p = &dirties; *p; p = &(*p)->next)
		if (!strcmp((*p)->path, rel(path))) {
			struct dirty *d = *p;

			*p = d->next;
			free(d->path), free(d->buf), free(d);
			return;
		}
}

static int resize(struct dirty *d, size_t len)
{
	int rc = reserve(d, len);

	if (rc)
		return rc;
	if (len < d->len)
		memset(d->buf + len, 0, d->len - len);
	d->len = len;
	return 0;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct dirty *d = find(path);

	(void)fi;
	if (fstatat(backing, rel(path), st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (d) {
		st->st_size = (off_t)d->len;
		st->st_blocks = (blkcnt_t)((d->len + 511) / 512);
	}
	return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	int fd = openat(backing, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir;
	struct dirent *e;

	(void)off, (void)fi, (void)flags;
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	while ((e = readdir(dir)))
		fill(buf, e->d_name, NULL, 0, 0);
	closedir(dir);
	return 0;
}

/* Notes a new name ('+') or a directory synced ('!'). Written under dropfs's lock, as whole
 * lines with O_APPEND. */
static int note(char kind, const char *path)
{
	return dprintf(journal, "%c%s\n", kind, rel(path)) < 0 ? -EIO : 0;
}

static int fs_mkdir(const char *path, mode_t mode)
{
	if (mkdirat(backing, rel(path), mode))
		return -errno;
	return note('+', path);
}

static int fs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	int fd = openat(backing, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	(void)fi;
	if (fd < 0)
		return -errno;
	if (datasync ? fdatasync(fd) : fsync(fd))
		rc = -errno;
	close(fd);
	return rc ? rc : note('!', path);
}

static int fs_rmdir(const char *path)
{
	return unlinkat(backing, rel(path), AT_REMOVEDIR) ? -errno : 0;
}

static int fs_unlink(const char *path)
{
	if (unlinkat(backing, rel(path), 0))
		return -errno;
	forget(path);
	return 0;
}

static int fs_rename(const char *from, const char *to, unsigned int flags)
{
	size_t flen = strlen(rel(from));

	if (flags)
		return -EINVAL;
	if (renameat(backing, rel(from), backing, rel(to)))
		return -errno;
	forget(to);
	if (note('+', to))
		return -EIO;
	/* the file, or everything under the directory, keeps its unsynced content */
	for (struct dirty *d = dirties; d; d = d->next)
		if (!strncmp(d->path, rel(from), flen) &&
		    (!d->path[flen] || d->path[flen] == '/')) {
			char *p = malloc(strlen(rel(to)) + strlen(d->path + flen) + 1);

			if (!p)
				return -ENOMEM;
			sprintf(p, "%s%s", rel(to), d->path + flen);
			free(d->path);
			d->path = p;
		}
	return 0;
}

static int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)fi;
	return fchmodat(backing, rel(path), mode, 0) ? -errno : 0;
}

static int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	(void)fi;
	return fchownat(backing, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

static int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	(void)fi;
	return utimensat(backing, rel(path), tv, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct dirty *d;
	int rc = load(path, &d);

	(void)fi;
	return rc ? rc : resize(d, (size_t)size);
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int fd =
	    openat(backing, rel(path), O_WRONLY | O_CREAT | O_CLOEXEC | (fi->flags & O_EXCL), mode);

	if (fd < 0)
		return -errno;
	close(fd);
	if (note('+', path))
		return -EIO;
	return (fi->flags & O_TRUNC) ? fs_truncate(path, 0, fi) : 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(backing, rel(path), O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	if (note('+', path))
		return -EIO;
	return (fi->flags & O_TRUNC) ? fs_truncate(path, 0, fi) : 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct dirty *d = find(path);
	ssize_t n;
	int fd;

	(void)fi;
	if (d) {
		if ((size_t)off >= d->len)
			return 0;
		if (size > d->len - (size_t)off)
			size = d->len - (size_t)off;
		memcpy(buf, d->buf + off, size);
		return (int)size;
	}
	fd = openat(backing, rel(path), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, size, off);
	n = n < 0 ? -errno : n;
	close(fd);
	return (int)n;
}

static int fs_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct dirty *d;
	int rc = load(path, &d);

	(void)fi;
	if (!rc)
		rc = reserve(d, (size_t)off + size);
	if (rc)
		return rc;
	memcpy(d->buf + off, buf, size);
	if ((size_t)off + size > d->len)
		d->len = (size_t)off + size;
	return (int)size;
}

static int fs_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	struct dirty *d;
	int rc = load(path, &d);

	(void)fi;
	if (rc)
		return rc;
	if (mode == 0 && (size_t)(off + len) > d->len)
		return resize(d, (size_t)(off + len));
	if (mode == 0 || mode == FALLOC_FL_KEEP_SIZE)
		return 0;
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
		if ((size_t)off < d->len)
			memset(d->buf + off, 0,
			       (size_t)(off + len) > d->len ? d->len - (size_t)off : (size_t)len);
		return 0;
	}
	return -EOPNOTSUPP;
}

/* DROPFS_SLOW_FSYNC: sleeps as many ms as its file says, if it is there. */
static void slow_fsync(void)
{
	const char *path = getenv("DROPFS_SLOW_FSYNC");
	char text[32];
	ssize_t n = 0;
	int fd;

	fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
	}
	if (n > 0) {
		text[n] = 0;
		usleep((useconds_t)strtoul(text, NULL, 10) * 1000u);
	}
}

/* The file's unsynced copy goes to BACKING, synced there; then it is durable. */
static int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct dirty *d;
	int fd, rc = 0;

	(void)datasync, (void)fi;
	d = find(path);
	if (!d)
		return 0;
	fd = openat(backing, rel(path), O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (size_t done = 0; !rc && done < d->len;) {
		ssize_t n = pwrite(fd, d->buf + done, d->len - done, (off_t)done);

		if (n <= 0)
			rc = n < 0 ? -errno : -EIO;
		else
			done += (size_t)n;
	}
	if (!rc && (ftruncate(fd, (off_t)d->len) || fsync(fd)))
		rc = -errno;
	close(fd);
	if (!rc)
		forget(path);
	return rc;
}

static int fs_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	return fstatvfs(backing, st) ? -errno : 0;
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->use_ino = 0;
	cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 0;
	return NULL;
}

/* Every call runs under one lock (the dirty list and the journal have no other). */
static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
#define LOCKED(op, params, ...)                                                                    \
	static int op##_locked params                                                              \
	{                                                                                          \
		int rc;                                                                            \
		pthread_mutex_lock(&big);                                                          \
		rc = op(__VA_ARGS__);                                                              \
		pthread_mutex_unlock(&big);                                                        \
		return rc;                                                                         \
	}
LOCKED(fs_getattr, (const char *p, struct stat *st, struct fuse_file_info *fi), p, st, fi)
LOCKED(fs_readdir,
       (const char *p, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
	enum fuse_readdir_flags fl),
       p, buf, fill, off, fi, fl)
LOCKED(fs_mkdir, (const char *p, mode_t m), p, m)
LOCKED(fs_rmdir, (const char *p), p)
LOCKED(fs_unlink, (const char *p), p)
LOCKED(fs_rename, (const char *a, const char *b, unsigned fl), a, b, fl)
LOCKED(fs_chmod, (const char *p, mode_t m, struct fuse_file_info *fi), p, m, fi)
LOCKED(fs_chown, (const char *p, uid_t u, gid_t g, struct fuse_file_info *fi), p, u, g, fi)
LOCKED(fs_utimens, (const char *p, const struct timespec tv[2], struct fuse_file_info *fi), p, tv,
       fi)
LOCKED(fs_truncate, (const char *p, off_t sz, struct fuse_file_info *fi), p, sz, fi)
LOCKED(fs_create, (const char *p, mode_t m, struct fuse_file_info *fi), p, m, fi)
LOCKED(fs_open, (const char *p, struct fuse_file_info *fi), p, fi)
LOCKED(fs_read, (const char *p, char *buf, size_t n, off_t off, struct fuse_file_info *fi), p, buf,
       n, off, fi)
LOCKED(fs_write, (const char *p, const char *buf, size_t n, off_t off, struct fuse_file_info *fi),
       p, buf, n, off, fi)
LOCKED(fs_fallocate, (const char *p, int m, off_t off, off_t len, struct fuse_file_info *fi), p, m,
       off, len, fi)
LOCKED(fs_fsyncdir, (const char *p, int ds, struct fuse_file_info *fi), p, ds, fi)
LOCKED(fs_statfs, (const char *p, struct statvfs *st), p, st)

/* The slow disk's wait is outside the lock: the rest of the file system goes on. */
static int fs_fsync_locked(const char *p, int ds, struct fuse_file_info *fi)
{
	int rc;

	slow_fsync();
	pthread_mutex_lock(&big);
	rc = fs_fsync(p, ds, fi);
	pthread_mutex_unlock(&big);
	return rc;
}

static const struct fuse_operations ops = {
    .init = fs_init,
    .getattr = fs_getattr_locked,
    .readdir = fs_readdir_locked,
    .mkdir = fs_mkdir_locked,
    .rmdir = fs_rmdir_locked,
    .unlink = fs_unlink_locked,
    .rename = fs_rename_locked,
    .chmod = fs_chmod_locked,
    .chown = fs_chown_locked,
    .utimens = fs_utimens_locked,
    .truncate = fs_truncate_locked,
    .create = fs_create_locked,
    .open = fs_open_locked,
    .read = fs_read_locked,
    .write = fs_write_locked,
    .fallocate = fs_fallocate_locked,
    .fsync = fs_fsync_locked,
    .fsyncdir = fs_fsyncdir_locked,
    .statfs = fs_statfs_locked,
};

/* Removes name (under at), and everything under it if it is a directory. */
static int remove_tree(int at, const char *name)
{
	struct dirent *e;
	DIR *dir;
	int fd, rc = 0;

	if (!unlinkat(at, name, 0) || errno == ENOENT)
		return 0;
	if (errno != EISDIR)
		return -errno;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -ENOMEM;
	}
	while (!rc && (e = readdir(dir)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			rc = remove_tree(dirfd(dir), e->d_name);
	closedir(dir);
	if (!rc && unlinkat(at, name, AT_REMOVEDIR) && errno != ENOENT)
		rc = -errno;
	return rc;
}

/* Whether path's directory is dir (both relative to BACKING, "." its root). */
static bool in_dir(const char *path, const char *dir)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	return slash ? strlen(dir) == n && !strncmp(path, dir, n) : !strcmp(dir, ".");
}

/* The boot after a cut: removes the names the journal holds unsynced, then empties it. */
static int boot(const char *journal_path)
{
	char **pending = NULL, *line = NULL;
	size_t n = 0, cap = 0, len = 0;
	ssize_t got;
	int rc = 0;
	FILE *in = fopen(journal_path, "re");

	if (!in)
		return errno == ENOENT ? 0 : -errno;
	while ((got = getline(&line, &len, in)) > 1) {
		line[got - 1] = 0;
		if (line[0] == '+') {
			if (n == cap) {
				size_t more = cap ? 2 * cap : 64;
				char **p = realloc(pending, more * sizeof(*p));

				if (!p) {
					rc = -ENOMEM;
					break;
				}
				pending = p;
				cap = more;
			}
			if (!(pending[n] = strdup(line + 1))) {
				rc = -ENOMEM;
				break;
			}
			n++;
		} else if (line[0] == '!') {
			for (size_t i = 0; i < n;)
				if (in_dir(pending[i], line + 1)) {
					free(pending[i]);
					pending[i] = pending[--n];
				} else {
					i++;
				}
		}
	}
	fclose(in);
	free(line);
	for (size_t i = 0; i < n; i++) {
		if (!rc) {
			rc = remove_tree(backing, pending[i]);
			if (rc)
				fprintf(stderr, "dropfs: removing unsynced %s: %s\n", pending[i],
					strerror(-rc));
		}
		free(pending[i]);
	}
	free(pending);
	if (!rc && truncate(journal_path, 0) && errno != ENOENT)
		rc = -errno;
	return rc;
}

int main(int argc, char **argv)
{
	char journal_path[4096];
	char *args[argc + 1];
	int n = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: dropfs BACKING MOUNTPOINT [FUSE options]\n");
		return 2;
	}
	backing = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (backing < 0) {
		fprintf(stderr, "dropfs: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (snprintf(journal_path, sizeof(journal_path), "%s.names", argv[1]) >=
	    (int)sizeof(journal_path)) {
		fprintf(stderr, "dropfs: %s: path too long\n", argv[1]);
		return 1;
	}
	if (boot(journal_path)) {
		fprintf(stderr, "dropfs: %s: could not apply the last cut to its names\n", argv[1]);
		return 1;
	}
	journal = open(journal_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (journal < 0) {
		fprintf(stderr, "dropfs: %s: %s\n", journal_path, strerror(errno));
		return 1;
	}
	args[n++] = argv[0];
	for (int i = 2; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	return fuse_main(n, args, &ops, NULL);
}
