/* SPDX-License-Identifier: MIT */
/*
 * lodectl load PATH... [--to host|staged|cuda:N] [--verify] [--json]: loads files, or every
 * file under a model directory, into host or GPU memory with liblode-loader, the way an
 * inference server would, and says how long it took. A safetensors file is parsed and
 * checked first (every tensor placed inside one allocation per file); any other file is
 * loaded whole. --verify reads every file a second time with lode_pread and compares it
 * with what was loaded (copied back from the device for cuda).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lode/loader.h"
#include "lodectl.h"

#define VERIFY_CHUNK   (64u << 20)
#define LOAD_PATHS_MAX 256

struct loaded {
	char *path;
	void *mem; /* the loader's memory: the data section, or the whole file */
	uint64_t off, len;
	unsigned tensors;
	double seconds;
};

struct load_job {
	struct lodectl *ctl;
	struct lode_client *c;
	struct lode_loader *l;
	struct loaded *files;
	size_t count, cap;
};

static int add_path(struct load_job *j, const char *path)
{
	if (j->count == j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 16;
		struct loaded *n = realloc(j->files, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		j->files = n;
		j->cap = cap;
	}
	memset(&j->files[j->count], 0, sizeof(j->files[0]));
	j->files[j->count].path = strdup(path);
	if (!j->files[j->count].path)
		return -ENOMEM;
	j->count++;
	return 0;
}

struct dir_walk {
	struct load_job *j;
	const char *dir;
	char **names;
	size_t count, cap;
};

static int dir_entry(void *arg, const char *name, uint64_t ino, uint32_t mode)
{
	struct dir_walk *w = arg;

	(void)ino;
	(void)mode;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (w->count == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		char **n = realloc(w->names, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->names = n;
		w->cap = cap;
	}
	w->names[w->count] = strdup(name);
	return w->names[w->count++] ? 0 : -ENOMEM;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds path, or every regular file under it (sorted by name), to the job. */
static int collect(struct load_job *j, const char *path, int depth)
{
	struct dir_walk w = {.j = j, .dir = path};
	struct lode_stat st;
	int rc;

	rc = lode_stat(j->c, path, &st);
	if (rc) {
		lodectl_fail(j->ctl, rc, "%s", path);
		return rc;
	}
	if ((st.mode & S_IFMT) == S_IFREG)
		return add_path(j, path);
	if ((st.mode & S_IFMT) != S_IFDIR || depth > 16)
		return 0;
	rc = lode_readdir(j->c, path, dir_entry, &w);
	if (!rc)
		qsort(w.names, w.count, sizeof(*w.names), by_name);
	for (size_t i = 0; i < w.count; i++) {
		char child[4096];

		if (!rc) {
			snprintf(child, sizeof(child), "%s%s%s", path,
				 path[strlen(path) - 1] == '/' ? "" : "/", w.names[i]);
			rc = collect(j, child, depth + 1);
		}
		free(w.names[i]);
	}
	free(w.names);
	if (rc == -ENOMEM)
		lodectl_fail(j->ctl, rc, "%s", path);
	return rc;
}

static bool is_safetensors(const char *path)
{
	size_t n = strlen(path);

	return n >= 12 && !strcmp(path + n - 12, ".safetensors");
}

/* Reads and checks a safetensors header; fills the data range and the tensor count. */
static int header_read(struct load_job *j, struct lode_file *f, uint64_t size, struct loaded *out,
		       const char *path)
{
	char first[8], err[256] = "", *head = first;
	struct lode_st_header h;
	size_t need = 0;
	ssize_t got;
	int rc;

	got = lode_pread(f, first, sizeof(first), 0);
	if (got < 0)
		return (int)got;
	rc = lode_st_parse(first, (size_t)got, size, &h, &need, err, sizeof(err));
	if (rc == -EAGAIN) {
		head = malloc(need);
		if (!head)
			return -ENOMEM;
		got = lode_pread(f, head, need, 0);
		rc = got < 0 ? (int)got
			     : lode_st_parse(head, (size_t)got, size, &h, NULL, err, sizeof(err));
		free(head);
	}
	if (rc == -EBADMSG)
		lodectl_fail_as(j->ctl, rc, "%s: not a valid safetensors file: %s", path, err);
	if (rc)
		return rc;
	out->off = h.data_offset;
	out->len = h.data_len;
	out->tensors = h.count;
	lode_st_header_free(&h);
	return 0;
}

static int load_one(struct load_job *j, struct loaded *ld)
{
	struct lode_file *f;
	double t0 = lodectl_now();
	uint64_t size;
	ssize_t got;
	int rc;

	rc = lode_open(j->c, ld->path, O_RDONLY, 0, &f);
	if (rc)
		return rc;
	size = lode_file_size(f);
	ld->off = 0;
	ld->len = size;
	if (is_safetensors(ld->path)) {
		rc = header_read(j, f, size, ld, ld->path);
		if (rc) {
			lode_close(f);
			return rc;
		}
	}
	rc = lode_loader_alloc(j->l, (size_t)ld->len, &ld->mem);
	if (!rc) {
		got = lode_loader_read(j->l, f, ld->mem, (size_t)ld->len, ld->off);
		if (got >= 0 && (uint64_t)got != ld->len)
			got = -EIO; /* the file shrank while it was loaded */
		rc = got < 0 ? (int)got : 0;
	}
	lode_close(f);
	ld->seconds = lodectl_now() - t0;
	return rc;
}

/* Compares what was loaded with a second, plain read of the same bytes. */
static int verify_one(struct load_job *j, const struct loaded *ld, uint64_t *bad_at)
{
	char *a = malloc(VERIFY_CHUNK), *b = malloc(VERIFY_CHUNK);
	struct lode_file *f = NULL;
	int rc = a && b ? 0 : -ENOMEM;

	if (!rc)
		rc = lode_open(j->c, ld->path, O_RDONLY, 0, &f);
	for (uint64_t pos = 0; !rc && pos < ld->len; pos += VERIFY_CHUNK) {
		size_t n = ld->len - pos < VERIFY_CHUNK ? (size_t)(ld->len - pos) : VERIFY_CHUNK;
		ssize_t got = lode_pread(f, b, n, ld->off + pos);

		if (got < 0) {
			rc = (int)got;
			break;
		}
		rc = lode_loader_to_host(j->l, a, (char *)ld->mem + pos, n);
		if (rc)
			break;
		if ((size_t)got != n || memcmp(a, b, n)) {
			size_t i = 0;

			while (i < (size_t)got && a[i] == b[i])
				i++;
			*bad_at = ld->off + pos + i;
			rc = -EILSEQ;
		}
	}
	lode_close(f);
	free(a);
	free(b);
	return rc;
}

int cmd_load(struct lodectl *ctl, int argc, char **argv)
{
	const char *to = "host";
	bool verify = false;
	struct lodectl_opt opts[] = {
	    {"--to", NULL, LODECTL_OPT_STRING, &to, 0, 0},
	    {"--verify", NULL, LODECTL_OPT_FLAG, &verify, 0, 0},
	    {0},
	};
	struct lode_loader_opts lo = {0};
	struct load_job j = {.ctl = ctl, .c = ctl->client};
	struct lodectl_progress *prog;
	uint64_t bytes = 0, bad_at = 0;
	unsigned tensors = 0;
	char *pos[LOAD_PATHS_MAX];
	double t0, secs;
	int n, rc = 0;

	n = lodectl_parse(ctl, argc, argv, opts, 1, LOAD_PATHS_MAX, pos);
	if (n < 0)
		return ctl->exit;
	for (int i = 0; i < n; i++)
		if (!lodectl_cluster_path_ok(ctl, pos[i]))
			return LODECTL_EXIT_USAGE;
	lo.to = to;
	j.c = ctl->client;
	rc = lode_loader_new(j.c, &lo, &j.l);
	if (rc == -EINVAL)
		return lodectl_usage_error(ctl, "--to %s: not host, staged or cuda:N", to);
	if (rc)
		return lodectl_fail_as(ctl, rc, "cannot load into %s: %s", to,
				       rc == -ENODEV ? "no such GPU, or this build has no CUDA"
						     : strerror(-rc));
	for (int i = 0; !rc && i < n; i++)
		rc = collect(&j, pos[i], 0);
	prog = rc ? NULL : lodectl_progress_start(ctl, "load", 0);
	t0 = lodectl_now();
	for (size_t i = 0; !rc && i < j.count; i++) {
		rc = load_one(&j, &j.files[i]);
		if (rc && rc != -EBADMSG)
			lodectl_fail_as(ctl, rc, "%s: %s%s%s", j.files[i].path, strerror(-rc),
					*lode_loader_error(j.l) ? ": " : "",
					lode_loader_error(j.l));
		bytes += j.files[i].len;
		tensors += j.files[i].tensors;
		if (prog) {
			lodectl_progress_total(prog, bytes);
			lodectl_progress_add(prog, j.files[i].len);
		}
	}
	secs = lodectl_now() - t0;
	lodectl_progress_end(prog);
	for (size_t i = 0; !rc && verify && i < j.count; i++) {
		rc = verify_one(&j, &j.files[i], &bad_at);
		if (rc == -EILSEQ)
			lodectl_fail_as(ctl, rc,
					"%s: loaded bytes differ from a second read at offset %llu",
					j.files[i].path, (unsigned long long)bad_at);
		else if (rc)
			lodectl_fail(ctl, rc, "%s: verify", j.files[i].path);
	}
	if (!rc) {
		json_object *a = json_object_new_array();

		json_add_str(ctl->out, "to", to);
		json_add_u64(ctl->out, "files", j.count);
		json_add_u64(ctl->out, "tensors", tensors);
		json_add_u64(ctl->out, "bytes", bytes);
		json_add_double(ctl->out, "seconds", secs);
		json_add_double(ctl->out, "gb_per_s", secs > 0 ? bytes / secs / 1e9 : 0);
		json_add_bool(ctl->out, "verified", verify);
		for (size_t i = 0; i < j.count; i++) {
			json_object *e = json_object_new_object();

			json_add_str(e, "path", j.files[i].path);
			json_add_u64(e, "bytes", j.files[i].len);
			json_add_u64(e, "tensors", j.files[i].tensors);
			json_add_double(e, "seconds", j.files[i].seconds);
			json_object_array_add(a, e);
		}
		json_object_object_add(ctl->out, "per_file", a);
		if (!ctl->json) {
			printf("loaded %zu files, %u tensors, %.3f GiB into %s in %.2f s: %.2f "
			       "GB/s\n",
			       j.count, tensors, bytes / 1073741824.0, to, secs,
			       secs > 0 ? bytes / secs / 1e9 : 0);
			if (verify)
				printf("verified: every byte matches a second read\n");
		}
	}
	for (size_t i = 0; i < j.count; i++) {
		lode_loader_release(j.l, j.files[i].mem);
		free(j.files[i].path);
	}
	free(j.files);
	lode_loader_free(j.l);
	return rc ? LODECTL_EXIT_FAIL : 0;
}
