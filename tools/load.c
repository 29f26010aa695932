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
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include "load.h"
#include "lode/loader.h"

#define VERIFY_CHUNK (64u << 20)

struct loaded {
	char *path;
	void *mem; /* the loader's memory: the data section, or the whole file */
	uint64_t off, len;
	unsigned tensors;
	double seconds;
};

struct load_job {
	struct lode_client *c;
	struct lode_loader *l;
	struct loaded *files;
	size_t count, cap;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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
		fprintf(stderr, "lodectl: load %s: %s\n", path, strerror(-rc));
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
		fprintf(stderr, "lodectl: load %s: %s\n", path, strerror(-rc));
	return rc;
}

static bool is_safetensors(const char *path)
{
	size_t n = strlen(path);

	return n >= 12 && !strcmp(path + n - 12, ".safetensors");
}

/* Reads and checks a safetensors header; fills the data range and the tensor count. */
static int header_read(struct lode_file *f, uint64_t size, struct loaded *out, const char *path)
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
		fprintf(stderr, "lodectl: load %s: not a valid safetensors file: %s\n", path, err);
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
	double t0 = now_s();
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
		rc = header_read(f, size, ld, ld->path);
		if (rc) {
			lode_close(f);
			return rc == -EBADMSG ? -EBADMSG : rc;
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
	ld->seconds = now_s() - t0;
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

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: lodectl load PATH... [--to host|cuda:N] [--verify] [--json]\n"
	    "\n"
	    "Loads files, or every file under a directory, into memory the way an inference\n"
	    "server does, and prints files, tensors, bytes, seconds and GB/s. A *.safetensors\n"
	    "file is parsed and checked first (every tensor inside the file, sizes matching\n"
	    "shapes, no overlap) and its data lands in one allocation; other files load whole.\n"
	    "  --to host      host memory (default): pieces land in place, verified\n"
	    "  --to cuda:N    GPU N: pinned buffers, asynchronous copies on several streams\n"
	    "  --to staged    the GPU pipeline with host memory behind it (no GPU needed)\n"
	    "  --verify       compare what was loaded with a second read (back from the GPU)\n"
	    "  --json         one JSON document on stdout\n");
}

int lodectl_load(struct lode_client *c, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"to", required_argument, NULL, 't'},
	    {"verify", no_argument, NULL, 'v'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct lode_loader_opts lo = {.to = "host"};
	struct load_job j = {.c = c};
	bool verify = false, json = false;
	uint64_t bytes = 0, bad_at = 0;
	unsigned tensors = 0;
	double t0, secs;
	int opt, rc = 0;

	optind = 0; /* glibc: 0 restarts getopt from scratch */
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			lo.to = optarg;
			break;
		case 'v':
			verify = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "lodectl: load: no PATH (see lodectl load --help)\n");
		return 2;
	}
	rc = lode_loader_new(c, &lo, &j.l);
	if (rc) {
		fprintf(stderr, "lodectl: load: cannot load into '%s': %s\n", lo.to,
			rc == -EINVAL	? "not host, staged or cuda:N"
			: rc == -ENODEV ? "no such GPU, or this build has no CUDA"
					: strerror(-rc));
		return rc == -EINVAL ? 2 : 1;
	}
	for (int i = optind; !rc && i < argc; i++)
		rc = collect(&j, argv[i], 0);
	t0 = now_s();
	for (size_t i = 0; !rc && i < j.count; i++) {
		rc = load_one(&j, &j.files[i]);
		if (rc && rc != -EBADMSG)
			fprintf(stderr, "lodectl: load %s: %s%s%s\n", j.files[i].path,
				strerror(-rc), *lode_loader_error(j.l) ? ": " : "",
				lode_loader_error(j.l));
		bytes += j.files[i].len;
		tensors += j.files[i].tensors;
	}
	secs = now_s() - t0;
	for (size_t i = 0; !rc && verify && i < j.count; i++) {
		rc = verify_one(&j, &j.files[i], &bad_at);
		if (rc == -EILSEQ)
			fprintf(stderr,
				"lodectl: load %s: loaded bytes differ from a second read "
				"at offset %llu\n",
				j.files[i].path, (unsigned long long)bad_at);
		else if (rc)
			fprintf(stderr, "lodectl: load %s: verify: %s\n", j.files[i].path,
				strerror(-rc));
	}
	if (!rc && json) {
		struct json_object *o = json_object_new_object(), *a = json_object_new_array();

		json_object_object_add(o, "to", json_object_new_string(lo.to));
		json_object_object_add(o, "files", json_object_new_int64((int64_t)j.count));
		json_object_object_add(o, "tensors", json_object_new_int64(tensors));
		json_object_object_add(o, "bytes", json_object_new_int64((int64_t)bytes));
		json_object_object_add(o, "seconds", json_object_new_double(secs));
		json_object_object_add(o, "gb_per_s",
				       json_object_new_double(secs > 0 ? bytes / secs / 1e9 : 0));
		json_object_object_add(o, "verified", json_object_new_boolean(verify));
		for (size_t i = 0; i < j.count; i++) {
			struct json_object *e = json_object_new_object();

			json_object_object_add(e, "path", json_object_new_string(j.files[i].path));
			json_object_object_add(e, "bytes",
					       json_object_new_int64((int64_t)j.files[i].len));
			json_object_object_add(e, "tensors",
					       json_object_new_int64(j.files[i].tensors));
			json_object_object_add(e, "seconds",
					       json_object_new_double(j.files[i].seconds));
			json_object_array_add(a, e);
		}
		json_object_object_add(o, "per_file", a);
		printf("%s\n", json_object_to_json_string_ext(
				   o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else if (!rc) {
		printf("loaded %zu files, %u tensors, %.3f GiB into %s in %.2f s: %.2f GB/s\n",
		       j.count, tensors, bytes / 1073741824.0, lo.to, secs,
		       secs > 0 ? bytes / secs / 1e9 : 0);
		if (verify)
			printf("verified: every byte matches a second read\n");
	}
	for (size_t i = 0; i < j.count; i++) {
		lode_loader_release(j.l, j.files[i].mem);
		free(j.files[i].path);
	}
	free(j.files);
	lode_loader_free(j.l);
	return rc ? 1 : 0;
}
