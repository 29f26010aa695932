/* SPDX-License-Identifier: MIT */
/*
 * lodectl put, get, ls, stat, rm: files in and out of the cluster.
 *
 * put and get never leave a half-written file under the name asked for: each file goes
 * to a temporary name beside it and is renamed over it once complete (a reader of the
 * cluster sees the old file or the new one, the publish step of "write to a temporary
 * name, then rename"), and a failure removes the temporary. With -r the files of a
 * directory tree are listed first (so the progress bar knows the total), the directories
 * made, then the files copied by --jobs threads sharing one client.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lodectl.h"

#define COPY_BUF  (16u << 20) /* per file copied at once: 16 stripes of 1 MiB in flight */
#define MAX_JOBS  16
#define PAGE_ENTS 256 /* readdirplus entries per request */

/* One file to copy, with its size when listed (the progress bar's total). */
struct job {
	char *src, *dst;
	uint64_t size;
};

struct copier {
	struct lodectl *ctl;
	bool put; /* local -> cluster; else cluster -> local */
	struct lode_layout layout;
	bool have_layout;
	mode_t umask; /* applied to the source's permission bits, as cp does */
	struct lodectl_progress *progress;
	struct job *jobs;
	size_t njobs, cap;
	pthread_mutex_t lock;
	/* protected by lock */
	size_t next;
	uint64_t bytes, files;
	int rc; /* first error: the exit status */
	json_object *copied;
};

/* Set by SIGINT, SIGTERM or SIGHUP while files are copied: each copy stops at its next
 * block and removes its temporary, so an interrupted put or get leaves no partial file. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static int add_job(struct copier *cp, const char *src, const char *dst, uint64_t size)
{
	struct job *j;

	if (cp->njobs == cp->cap) {
		size_t cap = cp->cap ? cp->cap * 2 : 64;
		struct job *n = realloc(cp->jobs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		cp->jobs = n;
		cp->cap = cap;
	}
	j = &cp->jobs[cp->njobs];
	j->src = strdup(src);
	j->dst = strdup(dst);
	j->size = size;
	if (!j->src || !j->dst) {
		free(j->src);
		free(j->dst);
		return -ENOMEM;
	}
	cp->njobs++;
	return 0;
}

static void copier_free(struct copier *cp)
{
	for (size_t i = 0; i < cp->njobs; i++) {
		free(cp->jobs[i].src);
		free(cp->jobs[i].dst);
	}
	free(cp->jobs);
	pthread_mutex_destroy(&cp->lock);
}

static int join_path(char *out, size_t size, const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	int n = snprintf(out, size, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static const char *base_name(const char *path)
{
	size_t len = strlen(path);
	const char *s;

	while (len > 1 && path[len - 1] == '/')
		len--;
	for (s = path + len; s > path && s[-1] != '/'; s--)
		;
	return s;
}

/* Writes all of buf to fd. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* ---- one file ---- */

/* The temporary name of a put's destination: beside it (same directory, so the same
 * default layout and an atomic rename), unique per process and job; NAME.lodectl-put.PID.J,
 * or .lodectl-put.PID.J where NAME is too long to take the suffix. */
static int put_temp_name(char *out, size_t size, const char *dst, size_t job)
{
	const char *base = base_name(dst);
	bool short_form = strlen(base) > 200;
	int n = snprintf(out, size, "%.*s%s.lodectl-put.%d.%zu", (int)(base - dst), dst,
			 short_form ? "" : base, (int)getpid(), job);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int put_one(struct copier *cp, const char *src, const char *dst, size_t job, char *buf,
		   uint64_t *bytes)
{
	struct lodectl *ctl = cp->ctl;
	char tmp[PATH_MAX + 64];
	struct lode_file *f;
	uint64_t off = 0;
	struct stat st;
	uint32_t mode;
	int fd, rc, rc2;

	fd = strcmp(src, "-") ? open(src, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	if (fd < 0)
		return lodectl_fail(ctl, -errno, "cannot open %s", src);
	if (fstat(fd, &st)) {
		rc = lodectl_fail(ctl, -errno, "cannot stat %s", src);
		goto out_fd;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = lodectl_fail_as(ctl, -EISDIR, "%s is a directory (put -r copies a directory)",
				     src);
		goto out_fd;
	}
	mode = (S_ISREG(st.st_mode) ? st.st_mode & 0777 : 0666) & ~cp->umask;
	rc = put_temp_name(tmp, sizeof(tmp), dst, job);
	if (rc) {
		rc = lodectl_fail(ctl, rc, "%s", dst);
		goto out_fd;
	}
	if (cp->have_layout) {
		rc = lode_create_with_layout(ctl->client, tmp, mode, &cp->layout, &f);
		if (rc == -EEXIST) { /* left by a put that died */
			lode_unlink(ctl->client, tmp);
			rc = lode_create_with_layout(ctl->client, tmp, mode, &cp->layout, &f);
		}
	} else {
		rc = lode_open(ctl->client, tmp, O_WRONLY | O_CREAT | O_EXCL, mode, &f);
		if (rc == -EEXIST) {
			lode_unlink(ctl->client, tmp);
			rc = lode_open(ctl->client, tmp, O_WRONLY | O_CREAT | O_EXCL, mode, &f);
		}
	}
	if (rc) {
		rc = lodectl_fail(ctl, rc, "cannot create %s", dst);
		goto out_fd;
	}
	for (;;) {
		ssize_t n = interrupted ? (errno = EINTR, -1) : read(fd, buf, COPY_BUF), w;

		if (n < 0 && errno == EINTR && !interrupted)
			continue;
		if (n < 0 && interrupted) {
			rc = lodectl_fail_as(ctl, -EINTR, "interrupted: %s left as it was", dst);
			break;
		}
		if (n < 0) {
			rc = lodectl_fail(ctl, -errno, "cannot read %s", src);
			break;
		}
		if (n == 0)
			break;
		w = lode_pwrite(f, buf, (size_t)n, off);
		if (w < 0) {
			rc = lodectl_fail(ctl, (int)w, "cannot write %s", dst);
			break;
		}
		off += (uint64_t)n;
		lodectl_progress_add(cp->progress, (uint64_t)n);
	}
	if (!rc) {
		rc2 = lode_fsync(f);
		if (rc2)
			rc = lodectl_fail(ctl, rc2, "cannot write %s", dst);
	}
	rc2 = lode_close(f);
	if (!rc && rc2)
		rc = lodectl_fail(ctl, rc2, "cannot write %s", dst);
	if (!rc) {
		rc2 = lode_rename(ctl->client, tmp, dst, 0);
		if (rc2)
			rc = lodectl_fail(ctl, rc2, "cannot rename the copy to %s", dst);
	}
	if (rc)
		lode_unlink(ctl->client, tmp);
	else
		*bytes = off;
out_fd:
	if (fd != STDIN_FILENO)
		close(fd);
	return rc;
}

static int get_one(struct copier *cp, const char *src, const char *dst, char *buf, uint64_t *bytes)
{
	struct lodectl *ctl = cp->ctl;
	char tmp[PATH_MAX + 64];
	bool to_file = strcmp(dst, "-") != 0;
	struct lode_stat st;
	struct lode_file *f;
	uint64_t off = 0;
	int fd, rc = 0;

	rc = lode_open(ctl->client, src, O_RDONLY, 0, &f);
	if (rc)
		return lodectl_fail(ctl, rc, "cannot open %s", src);
	if (to_file && (size_t)snprintf(tmp, sizeof(tmp), "%s.lodectl-get.%d", dst,
					(int)getpid()) >= sizeof(tmp)) {
		lode_close(f);
		return lodectl_fail(ctl, -ENAMETOOLONG, "%s", dst);
	}
	lode_file_stat_cached(f, &st);
	/* the file's permission bits, less the umask (open applies it), as cp does */
	fd = to_file ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.mode & 0777)
		     : STDOUT_FILENO;
	if (fd < 0) {
		rc = lodectl_fail(ctl, -errno, "cannot create %s", dst);
		lode_close(f);
		return rc;
	}
	for (;;) {
		ssize_t n = interrupted ? -EINTR : lode_pread(f, buf, COPY_BUF, off);
		int wrc;

		if (n < 0 && interrupted) {
			rc = lodectl_fail_as(ctl, -EINTR, "interrupted: %s left as it was", dst);
			break;
		}
		if (n < 0) {
			rc = lodectl_fail(ctl, (int)n, "cannot read %s", src);
			break;
		}
		if (n == 0)
			break;
		wrc = write_all(fd, buf, (size_t)n);
		if (wrc) {
			rc = lodectl_fail(ctl, wrc, "cannot write %s", dst);
			break;
		}
		off += (uint64_t)n;
		lodectl_progress_add(cp->progress, (uint64_t)n);
	}
	if (to_file) {
		if (close(fd) && !rc)
			rc = lodectl_fail(ctl, -errno, "cannot write %s", dst);
		if (!rc && rename(tmp, dst))
			rc = lodectl_fail(ctl, -errno, "cannot rename the copy to %s", dst);
		if (rc)
			unlink(tmp);
	}
	lode_close(f);
	if (!rc)
		*bytes = off;
	return rc;
}

/* ---- many files ---- */

static void *copy_worker(void *arg)
{
	struct copier *cp = arg;
	char *buf = aligned_alloc(4096, COPY_BUF);

	if (!buf) {
		pthread_mutex_lock(&cp->lock);
		if (!cp->rc)
			cp->rc = lodectl_fail(cp->ctl, -ENOMEM, "cannot copy");
		pthread_mutex_unlock(&cp->lock);
		return NULL;
	}
	for (;;) {
		uint64_t bytes = 0;
		size_t i;
		int rc;

		pthread_mutex_lock(&cp->lock);
		i = cp->next < cp->njobs && !interrupted ? cp->next++ : SIZE_MAX;
		pthread_mutex_unlock(&cp->lock);
		if (i == SIZE_MAX)
			break;
		rc = cp->put ? put_one(cp, cp->jobs[i].src, cp->jobs[i].dst, i, buf, &bytes)
			     : get_one(cp, cp->jobs[i].src, cp->jobs[i].dst, buf, &bytes);
		pthread_mutex_lock(&cp->lock);
		if (rc && !cp->rc)
			cp->rc = rc;
		if (!rc) {
			json_object *o = json_object_new_object();

			json_add_str(o, "from", cp->jobs[i].src);
			json_add_str(o, "to", cp->jobs[i].dst);
			json_add_u64(o, "bytes", bytes);
			json_object_array_add(cp->copied, o);
			cp->bytes += bytes;
			cp->files++;
		}
		pthread_mutex_unlock(&cp->lock);
	}
	free(buf);
	return NULL;
}

/* Copies every job with up to jobs threads (the calling one among them), then reports. */
static int run_copies(struct copier *cp, const char *verb, unsigned jobs)
{
	struct lodectl *ctl = cp->ctl;
	pthread_t tid[MAX_JOBS];
	unsigned started = 0;
	uint64_t total = 0;
	double t0 = lodectl_now(), secs;
	char size[32];

	struct sigaction sa = {.sa_handler = on_signal}, old[3];
	static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};

	for (size_t i = 0; i < cp->njobs; i++)
		total += cp->jobs[i].size;
	for (int k = 0; k < 3; k++)
		sigaction(sigs[k], &sa, &old[k]); /* no SA_RESTART: a read of stdin returns */
	cp->progress = lodectl_progress_start(ctl, verb, total);
	if (jobs > cp->njobs)
		jobs = (unsigned)cp->njobs;
	for (unsigned k = 1; k < jobs; k++)
		if (!pthread_create(&tid[started], NULL, copy_worker, cp))
			started++;
	copy_worker(cp);
	for (unsigned k = 0; k < started; k++)
		pthread_join(tid[k], NULL);
	for (int k = 0; k < 3; k++)
		sigaction(sigs[k], &old[k], NULL);
	lodectl_progress_end(cp->progress);
	secs = lodectl_now() - t0;
	json_add_u64(ctl->out, "files", cp->files);
	json_add_u64(ctl->out, "bytes", cp->bytes);
	json_add_double(ctl->out, "seconds", secs);
	json_object_object_add(ctl->out, "copied", json_object_get(cp->copied));
	lodectl_bytes_string(cp->bytes, size, sizeof(size));
	lodectl_note(ctl, "%s %" PRIu64 " file%s, %s (%" PRIu64 " bytes) in %.2f s: %.2f GB/s\n",
		     verb, cp->files, cp->files == 1 ? "" : "s", size, cp->bytes, secs,
		     secs > 0 ? (double)cp->bytes / secs / 1e9 : 0.0);
	if (interrupted) /* as the shell would report it */
		return 128 + interrupted;
	return cp->rc ? LODECTL_EXIT_FAIL : 0;
}

static int copier_init(struct copier *cp, struct lodectl *ctl, bool put)
{
	memset(cp, 0, sizeof(*cp));
	cp->ctl = ctl;
	cp->put = put;
	cp->umask = umask(0);
	umask(cp->umask);
	pthread_mutex_init(&cp->lock, NULL);
	cp->copied = json_object_new_array();
	return 0;
}

/* Makes the cluster directory path (EEXIST on a directory is fine). */
static int remote_mkdir(struct lodectl *ctl, const char *path)
{
	struct lode_stat st;
	int rc = lode_mkdir(ctl->client, path, 0755);

	if (rc == -EEXIST && !lode_stat(ctl->client, path, &st) && S_ISDIR(st.mode))
		rc = 0;
	else if (rc == -EEXIST)
		rc = -ENOTDIR;
	return rc ? lodectl_fail(ctl, rc, "cannot create the directory %s", path) : 0;
}

/* Lists the local tree under src into jobs for dst, making its directories in the cluster
 * as it goes (a parent before its children) and its symlinks. */
static int walk_local(struct copier *cp, const char *src, const char *dst, int depth)
{
	struct lodectl *ctl = cp->ctl;
	char s[PATH_MAX], d[PATH_MAX];
	struct dirent *e;
	int rc = 0;
	DIR *dir;

	if (depth > 256)
		return lodectl_fail(ctl, -ELOOP, "%s is nested too deep", src);
	rc = remote_mkdir(ctl, dst);
	if (rc)
		return rc;
	dir = opendir(src);
	if (!dir)
		return lodectl_fail(ctl, -errno, "cannot read the directory %s", src);
	while (!rc && (errno = 0, e = readdir(dir))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (join_path(s, sizeof(s), src, e->d_name) ||
		    join_path(d, sizeof(d), dst, e->d_name)) {
			rc = lodectl_fail(ctl, -ENAMETOOLONG, "%s/%s", src, e->d_name);
			break;
		}
		if (lstat(s, &st)) {
			rc = lodectl_fail(ctl, -errno, "cannot stat %s", s);
		} else if (S_ISDIR(st.st_mode)) {
			rc = walk_local(cp, s, d, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			rc = add_job(cp, s, d, (uint64_t)st.st_size);
			if (rc)
				rc = lodectl_fail(ctl, rc, "cannot list %s", s);
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlink(s, target, sizeof(target) - 1);

			if (n < 0) {
				rc = lodectl_fail(ctl, -errno, "cannot read the symlink %s", s);
				continue;
			}
			target[n] = 0;
			lode_unlink(ctl->client, d); /* replaced, as a file would be */
			rc = lode_symlink(ctl->client, target, d);
			if (rc)
				rc = lodectl_fail(ctl, rc, "cannot create the symlink %s", d);
		} else {
			lodectl_note(ctl,
				     "lodectl put: skipping %s (not a file, directory or "
				     "symlink)\n",
				     s);
		}
	}
	if (!rc && errno)
		rc = lodectl_fail(ctl, -errno, "cannot read the directory %s", src);
	closedir(dir);
	return rc;
}

/* As walk_local, for a tree in the cluster (directory ino at src) copied out to dst. */
static int walk_remote(struct copier *cp, uint64_t ino, const char *src, const char *dst, int depth)
{
	struct lodectl *ctl = cp->ctl;
	struct lode_direntplus *ents;
	char s[PATH_MAX], d[PATH_MAX];
	uint64_t cookie = 0;
	int eof = 0, rc = 0;

	if (depth > 256)
		return lodectl_fail(ctl, -ELOOP, "%s is nested too deep", src);
	if (mkdir(dst, 0755) && errno != EEXIST)
		return lodectl_fail(ctl, -errno, "cannot create the directory %s", dst);
	ents = malloc(PAGE_ENTS * sizeof(*ents));
	if (!ents)
		return lodectl_fail(ctl, -ENOMEM, "cannot list %s", src);
	while (!rc && !eof) {
		int n = lode_ll_readdirplus(ctl->client, ino, cookie, ents, PAGE_ENTS, &eof);

		if (n < 0) {
			rc = lodectl_fail(ctl, n, "cannot list %s", src);
			break;
		}
		if (n == 0)
			break;
		for (int i = 0; i < n && !rc; i++) {
			const struct lode_direntplus *e = &ents[i];

			cookie = e->d.cookie;
			if (join_path(s, sizeof(s), src, e->d.name) ||
			    join_path(d, sizeof(d), dst, e->d.name)) {
				rc = lodectl_fail(ctl, -ENAMETOOLONG, "%s/%s", src, e->d.name);
			} else if (S_ISDIR(e->st.mode)) {
				rc = walk_remote(cp, e->st.ino, s, d, depth + 1);
			} else if (S_ISREG(e->st.mode)) {
				rc = add_job(cp, s, d, e->st.size);
				if (rc)
					rc = lodectl_fail(ctl, rc, "cannot list %s", s);
			} else if (S_ISLNK(e->st.mode)) {
				char target[PATH_MAX];
				ssize_t len =
				    lode_readlink(ctl->client, s, target, sizeof(target) - 1);

				if (len < 0) {
					rc = lodectl_fail(ctl, (int)len,
							  "cannot read the symlink %s", s);
					continue;
				}
				target[len] = 0;
				unlink(d);
				if (symlink(target, d))
					rc = lodectl_fail(ctl, -errno,
							  "cannot create the symlink %s", d);
			}
		}
	}
	free(ents);
	return rc;
}

static const struct lodectl_opt layout_opts[] = {
    {"--recursive", "-r", LODECTL_OPT_FLAG, NULL, 0, 0},
    {"--jobs", "-j", LODECTL_OPT_UINT, NULL, 1, MAX_JOBS},
    {"--stripe-size", NULL, LODECTL_OPT_SIZE, NULL, 64 << 10, 1u << 30},
    {"--stripe-count", NULL, LODECTL_OPT_UINT, NULL, 1, LODE_MAX_TARGETS_PER_LAYOUT},
    {"--mirrors", NULL, LODECTL_OPT_UINT, NULL, 1, LODE_MAX_TARGETS_PER_LAYOUT},
    {NULL, NULL, 0, NULL, 0, 0},
};

int cmd_put(struct lodectl *ctl, int argc, char **argv)
{
	uint64_t jobs = 4, stripe_size = 0, stripe_count = 0, mirrors = 0;
	bool recursive = false;
	struct lodectl_opt opts[6];
	char *pos[2], dst[PATH_MAX];
	struct lode_stat st;
	struct copier cp;
	struct stat lst;
	int n, rc;

	memcpy(opts, layout_opts, sizeof(opts));
	opts[0].dest = &recursive;
	opts[1].dest = &jobs;
	opts[2].dest = &stripe_size;
	opts[3].dest = &stripe_count;
	opts[4].dest = &mirrors;
	n = lodectl_parse(ctl, argc, argv, opts, 2, 2, pos);
	if (n < 0)
		return ctl->exit;
	if (!lodectl_cluster_path_ok(ctl, pos[1]))
		return LODECTL_EXIT_USAGE;
	if (stripe_size % (64 << 10))
		return lodectl_usage_error(ctl, "--stripe-size must be a multiple of 64K");
	if (strcmp(pos[0], "-") && stat(pos[0], &lst))
		return lodectl_fail(ctl, -errno, "cannot open %s", pos[0]);
	if (recursive && (!strcmp(pos[0], "-") || !S_ISDIR(lst.st_mode)))
		return lodectl_usage_error(ctl, "put -r copies a directory: %s is not one", pos[0]);
	if (!recursive && strcmp(pos[0], "-") && S_ISDIR(lst.st_mode))
		return lodectl_fail_as(ctl, -EISDIR,
				       "%s is a directory (put -r copies a directory)", pos[0]);
	if (stripe_count * (mirrors ? mirrors : 1) > LODE_MAX_TARGETS_PER_LAYOUT)
		return lodectl_usage_error(ctl, "--stripe-count times --mirrors is at most %d",
					   LODE_MAX_TARGETS_PER_LAYOUT);
	copier_init(&cp, ctl, true);
	if (stripe_size || stripe_count || mirrors) {
		struct lode_statfs sf;

		cp.have_layout = true;
		cp.layout.stripe_size = stripe_size ? (uint32_t)stripe_size : 1u << 20;
		cp.layout.mirror_count = mirrors ? (uint16_t)mirrors : 1;
		cp.layout.stripe_count = (uint16_t)stripe_count;
		rc = lode_statfs(ctl->client, &sf);
		if (rc) {
			rc = lodectl_fail(ctl, rc, "cannot ask the cluster for its targets");
			goto out;
		}
		/* each copy of an object on its own target: say so here, not ENOSPC later */
		if (cp.layout.mirror_count > sf.targets_total) {
			rc = lodectl_fail_as(ctl, -EINVAL,
					     "--mirrors %u: the cluster has %u storage target%s, "
					     "and each copy needs its own",
					     cp.layout.mirror_count, sf.targets_total,
					     sf.targets_total == 1 ? "" : "s");
			goto out;
		}
		if (!stripe_count) {
			unsigned fit = LODE_MAX_TARGETS_PER_LAYOUT / cp.layout.mirror_count;

			cp.layout.stripe_count = (uint16_t)(sf.targets_up ? sf.targets_up : 1);
			if (cp.layout.stripe_count > fit)
				cp.layout.stripe_count = (uint16_t)fit;
		}
	}
	snprintf(dst, sizeof(dst), "%s", pos[1]);
	if (recursive) {
		rc = walk_local(&cp, pos[0], dst, 0);
	} else {
		/* into a directory: under LOCAL's name */
		size_t len = strlen(dst);
		bool into_dir = len > 1 && dst[len - 1] == '/';

		if (!into_dir && !lode_stat(ctl->client, dst, &st) && S_ISDIR(st.mode))
			into_dir = true;
		if (into_dir && !strcmp(pos[0], "-")) {
			rc = lodectl_usage_error(ctl,
						 "put - %s: name the file to write, not a "
						 "directory",
						 pos[1]);
			goto out;
		}
		if (into_dir && join_path(dst, sizeof(dst), pos[1], base_name(pos[0]))) {
			rc = lodectl_fail(ctl, -ENAMETOOLONG, "%s", pos[1]);
			goto out;
		}
		rc = add_job(&cp, pos[0], dst, strcmp(pos[0], "-") ? (uint64_t)lst.st_size : 0);
		if (!rc && !strcmp(pos[0], "-")) {
			struct stat in;

			/* stdin's size when it is a file, for the progress bar */
			cp.jobs[0].size = !fstat(STDIN_FILENO, &in) && S_ISREG(in.st_mode)
					      ? (uint64_t)in.st_size
					      : 0;
		}
		if (rc)
			rc = lodectl_fail(ctl, rc, "put");
	}
	if (!rc)
		rc = run_copies(&cp, "put", (unsigned)jobs);
out:
	json_object_put(cp.copied);
	copier_free(&cp);
	return rc;
}

int cmd_get(struct lodectl *ctl, int argc, char **argv)
{
	const struct lodectl_opt opts[] = {
	    {"--recursive", "-r", LODECTL_OPT_FLAG, NULL, 0, 0},
	    {"--jobs", "-j", LODECTL_OPT_UINT, NULL, 1, MAX_JOBS},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	struct lodectl_opt o[3];
	bool recursive = false;
	uint64_t jobs = 4;
	char *pos[2], dst[PATH_MAX];
	struct lode_stat st;
	struct copier cp;
	struct stat lst;
	int n, rc;

	memcpy(o, opts, sizeof(o));
	o[0].dest = &recursive;
	o[1].dest = &jobs;
	n = lodectl_parse(ctl, argc, argv, o, 2, 2, pos);
	if (n < 0)
		return ctl->exit;
	if (!lodectl_cluster_path_ok(ctl, pos[0]))
		return LODECTL_EXIT_USAGE;
	if (!strcmp(pos[1], "-") && ctl->json)
		return lodectl_usage_error(ctl, "get to stdout (-) cannot also print --json there");
	if (!strcmp(pos[1], "-") && recursive)
		return lodectl_usage_error(ctl, "get -r copies to a directory, not to stdout");
	rc = lode_stat(ctl->client, pos[0], &st);
	if (rc)
		return lodectl_fail(ctl, rc, "%s", pos[0]);
	if (recursive && !S_ISDIR(st.mode))
		return lodectl_usage_error(ctl, "get -r copies a directory: %s is not one", pos[0]);
	if (!recursive && S_ISDIR(st.mode))
		return lodectl_fail_as(ctl, -EISDIR,
				       "%s is a directory (get -r copies a directory)", pos[0]);
	copier_init(&cp, ctl, false);
	snprintf(dst, sizeof(dst), "%s", pos[1]);
	if (recursive) {
		rc = walk_remote(&cp, st.ino, pos[0], dst, 0);
	} else {
		if (strcmp(dst, "-") && !stat(dst, &lst) && S_ISDIR(lst.st_mode) &&
		    join_path(dst, sizeof(dst), pos[1], base_name(pos[0]))) {
			rc = lodectl_fail(ctl, -ENAMETOOLONG, "%s", pos[1]);
			goto out;
		}
		rc = add_job(&cp, pos[0], dst, st.size);
		if (rc)
			rc = lodectl_fail(ctl, rc, "get");
	}
	if (!rc)
		rc = run_copies(&cp, "get", (unsigned)jobs);
out:
	json_object_put(cp.copied);
	copier_free(&cp);
	return rc;
}

/* ---- ls, stat ---- */

static json_object *stat_json(const char *name, const struct lode_stat *st)
{
	json_object *o = json_object_new_object();
	char t[64];

	json_add_str(o, "name", name);
	json_add_str(o, "type", lodectl_type_name(st->mode));
	json_add_u64(o, "inode", st->ino);
	json_add_u64(o, "mode", st->mode & 07777);
	json_add_u64(o, "size", st->size);
	json_add_u64(o, "nlink", st->nlink);
	json_add_u64(o, "uid", st->uid);
	json_add_u64(o, "gid", st->gid);
	json_add_i64(o, "atime_ns", st->atime_ns);
	json_add_i64(o, "mtime_ns", st->mtime_ns);
	json_add_i64(o, "ctime_ns", st->ctime_ns);
	lodectl_time_string(st->mtime_ns, true, t, sizeof(t));
	json_add_str(o, "mtime", t);
	return o;
}

static void ls_print(struct lodectl *ctl, bool long_format, const char *dir, const char *name,
		     const struct lode_stat *st, json_object *entries)
{
	char shown[4 * 255 + 8], ms[11], when[32], target[PATH_MAX], path[PATH_MAX];
	ssize_t tlen = -1;

	if (S_ISLNK(st->mode) && (long_format || ctl->json)) {
		if (dir)
			join_path(path, sizeof(path), dir, name);
		tlen = lode_readlink(ctl->client, dir ? path : name, target, sizeof(target) - 1);
		if (tlen >= 0)
			target[tlen] = 0;
	}
	if (ctl->json) {
		json_object *o = stat_json(name, st);

		if (tlen >= 0)
			json_add_str(o, "target", target);
		json_object_array_add(entries, o);
		return;
	}
	lodectl_shown_name(name, shown, sizeof(shown));
	if (!long_format) {
		printf("%s%s\n", shown, S_ISDIR(st->mode) ? "/" : "");
		return;
	}
	lodectl_mode_string(st->mode, ms);
	lodectl_time_string(st->mtime_ns, false, when, sizeof(when));
	printf("%s %3u %5u %5u %14" PRIu64 " %s %s", ms, st->nlink, st->uid, st->gid, st->size,
	       when, shown);
	if (tlen >= 0) {
		char shown_target[4 * PATH_MAX];

		printf(" -> %s", lodectl_shown_name(target, shown_target, sizeof(shown_target)));
	}
	printf("\n");
}

int cmd_ls(struct lodectl *ctl, int argc, char **argv)
{
	bool long_format = false;
	const struct lodectl_opt opts[] = {
	    {"--long", "-l", LODECTL_OPT_FLAG, &long_format, 0, 0},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	struct lode_direntplus *ents;
	json_object *entries;
	char *pos[1] = {"/"};
	struct lode_stat st;
	uint64_t cookie = 0;
	int n, eof = 0, rc = 0;

	n = lodectl_parse(ctl, argc, argv, opts, 0, 1, pos);
	if (n < 0)
		return ctl->exit;
	if (!lodectl_cluster_path_ok(ctl, pos[0]))
		return LODECTL_EXIT_USAGE;
	rc = lode_lstat(ctl->client, pos[0], &st);
	if (rc)
		return lodectl_fail(ctl, rc, "%s", pos[0]);
	entries = json_object_new_array();
	json_add_str(ctl->out, "path", pos[0]);
	json_object_object_add(ctl->out, "entries", entries);
	if (!S_ISDIR(st.mode)) { /* as ls: a file lists itself */
		ls_print(ctl, long_format, NULL, pos[0], &st, entries);
		return 0;
	}
	ents = malloc(PAGE_ENTS * sizeof(*ents));
	if (!ents)
		return lodectl_fail(ctl, -ENOMEM, "%s", pos[0]);
	while (!eof) {
		n = lode_ll_readdirplus(ctl->client, st.ino, cookie, ents, PAGE_ENTS, &eof);
		if (n < 0) {
			rc = lodectl_fail(ctl, n, "%s", pos[0]);
			break;
		}
		if (n == 0)
			break;
		for (int i = 0; i < n; i++) {
			cookie = ents[i].d.cookie;
			ls_print(ctl, long_format, pos[0], ents[i].d.name, &ents[i].st, entries);
		}
	}
	free(ents);
	return rc;
}

int cmd_stat(struct lodectl *ctl, int argc, char **argv)
{
	struct lode_layout l;
	struct lode_stat st;
	uint64_t degraded;
	unsigned nbad = 0;
	json_object *o, *lj, *stripes;
	char *pos[1], ms[11], when[64];
	int n, rc;

	n = lodectl_parse(ctl, argc, argv, NULL, 1, 1, pos);
	if (n < 0)
		return ctl->exit;
	if (!lodectl_cluster_path_ok(ctl, pos[0]))
		return LODECTL_EXIT_USAGE;
	rc = lode_lstat(ctl->client, pos[0], &st);
	if (rc)
		return lodectl_fail(ctl, rc, "%s", pos[0]);
	json_add_str(ctl->out, "path", pos[0]);
	o = stat_json(*base_name(pos[0]) ? base_name(pos[0]) : "/", &st);
	json_object_object_foreach(o, key, val)
	    json_object_object_add(ctl->out, key, json_object_get(val));
	json_object_put(o);
	if (!ctl->json) {
		lodectl_mode_string(st.mode, ms);
		lodectl_time_string(st.mtime_ns, true, when, sizeof(when));
		printf("path:   %s\ninode:  %" PRIu64 "\nsize:   %" PRIu64 "\nmode:   %s (%04o)\n"
		       "owner:  %u:%u\nlinks:  %u\nmtime:  %s (%" PRId64 ".%09" PRId64 ")\n",
		       pos[0], st.ino, st.size, ms, st.mode & 07777, st.uid, st.gid, st.nlink, when,
		       st.mtime_ns / 1000000000, st.mtime_ns % 1000000000);
	}
	if (S_ISLNK(st.mode)) {
		char target[PATH_MAX];
		ssize_t len = lode_readlink(ctl->client, pos[0], target, sizeof(target) - 1);

		if (len < 0)
			return lodectl_fail(ctl, (int)len, "%s", pos[0]);
		target[len] = 0;
		json_add_str(ctl->out, "target", target);
		if (!ctl->json) {
			char shown[4 * PATH_MAX];

			printf("target: %s\n", lodectl_shown_name(target, shown, sizeof(shown)));
		}
	}
	if (!S_ISREG(st.mode))
		return 0;
	rc = lode_layout_info(ctl->client, pos[0], &l, &degraded);
	if (rc)
		return lodectl_fail(ctl, rc, "cannot read the layout of %s", pos[0]);
	lj = json_object_new_object();
	json_add_u64(lj, "stripe_size", l.stripe_size);
	json_add_u64(lj, "stripe_count", l.stripe_count);
	json_add_u64(lj, "mirror_count", l.mirror_count);
	json_add_u64(lj, "generation", l.generation);
	stripes = json_object_new_array();
	json_object_object_add(lj, "stripes", stripes);
	json_object_object_add(ctl->out, "layout", lj);
	if (!ctl->json)
		printf("layout: stripe_size=%u stripe_count=%u mirror_count=%u generation=%" PRIu64
		       "\n",
		       l.stripe_size, l.stripe_count, l.mirror_count, l.generation);
	for (unsigned s = 0; s < l.stripe_count; s++) {
		json_object *copies = json_object_new_array();

		json_object_array_add(stripes, copies);
		if (!ctl->json)
			printf("  stripe %u: targets", s);
		for (unsigned m = 0; m < l.mirror_count; m++) {
			unsigned i = s * l.mirror_count + m;
			bool bad = i < 64 && ((degraded >> i) & 1);
			json_object *c = json_object_new_object();

			json_add_u64(c, "target", l.targets[i]);
			json_add_bool(c, "degraded", bad);
			json_object_array_add(copies, c);
			if (!ctl->json)
				printf(" %u%s", l.targets[i], bad ? " (degraded)" : "");
			nbad += bad;
		}
		if (!ctl->json)
			printf("\n");
	}
	json_add_u64(ctl->out, "copies_total", (unsigned)l.stripe_count * l.mirror_count);
	json_add_u64(ctl->out, "copies_degraded", nbad);
	if (!ctl->json)
		printf("copies: %u of %u degraded%s\n", nbad,
		       (unsigned)l.stripe_count * l.mirror_count,
		       nbad ? " (lodectl repair PATH restores them)" : "");
	return 0;
}

/* ---- rm ---- */

struct names {
	char **v;
	size_t n, cap;
};

static int collect_name(void *arg, const char *name, uint64_t ino, uint32_t mode)
{
	struct names *ns = arg;

	(void)ino, (void)mode;
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 64;
		char **v = realloc(ns->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	ns->v[ns->n] = strdup(name);
	if (!ns->v[ns->n])
		return -ENOMEM;
	ns->n++;
	return 0;
}

/* Removes path and, for a directory, everything under it: the names of a directory are
 * listed whole first, then removed (removing while the listing pages on could skip some). */
static int remove_tree(struct lodectl *ctl, const char *path, uint64_t *files, uint64_t *dirs,
		       int depth)
{
	struct names ns = {0};
	struct lode_stat st;
	char child[PATH_MAX];
	int rc = lode_lstat(ctl->client, path, &st);

	if (rc)
		return lodectl_fail(ctl, rc, "%s", path);
	if (!S_ISDIR(st.mode)) {
		rc = lode_unlink(ctl->client, path);
		if (rc)
			return lodectl_fail(ctl, rc, "cannot remove %s", path);
		++*files;
		return 0;
	}
	if (depth > 256)
		return lodectl_fail(ctl, -ELOOP, "%s is nested too deep", path);
	rc = lode_readdir(ctl->client, path, collect_name, &ns);
	if (rc)
		rc = lodectl_fail(ctl, rc, "cannot list %s", path);
	for (size_t i = 0; i < ns.n; i++) {
		if (!rc && join_path(child, sizeof(child), path, ns.v[i]))
			rc = lodectl_fail(ctl, -ENAMETOOLONG, "%s/%s", path, ns.v[i]);
		if (!rc)
			rc = remove_tree(ctl, child, files, dirs, depth + 1);
		free(ns.v[i]);
	}
	free(ns.v);
	if (rc)
		return rc;
	rc = lode_rmdir(ctl->client, path);
	if (rc)
		return lodectl_fail(ctl, rc, "cannot remove the directory %s", path);
	++*dirs;
	return 0;
}

int cmd_rm(struct lodectl *ctl, int argc, char **argv)
{
	bool recursive = false;
	const struct lodectl_opt opts[] = {
	    {"--recursive", "-r", LODECTL_OPT_FLAG, &recursive, 0, 0},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	uint64_t files = 0, dirs = 0;
	char *pos[1];
	int n, rc;

	n = lodectl_parse(ctl, argc, argv, opts, 1, 1, pos);
	if (n < 0)
		return ctl->exit;
	if (!lodectl_cluster_path_ok(ctl, pos[0]))
		return LODECTL_EXIT_USAGE;
	json_add_str(ctl->out, "path", pos[0]);
	if (recursive) {
		if (pos[0][strspn(pos[0], "/")] == 0)
			return lodectl_usage_error(ctl, "refusing to remove / recursively");
		rc = remove_tree(ctl, pos[0], &files, &dirs, 0);
	} else {
		rc = lode_unlink(ctl->client, pos[0]);
		if (rc == -EISDIR)
			rc = lodectl_fail_as(ctl, rc,
					     "%s is a directory (rm -r removes it and everything "
					     "under it, rmdir an empty one)",
					     pos[0]);
		else if (rc)
			rc = lodectl_fail(ctl, rc, "%s", pos[0]);
		else
			files = 1;
	}
	json_add_u64(ctl->out, "files_removed", files);
	json_add_u64(ctl->out, "directories_removed", dirs);
	return rc;
}
