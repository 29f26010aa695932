/* SPDX-License-Identifier: MIT */
/*
 * lodectl: the admin and user command line of Lode.
 *
 *   lodectl [--mds ADDR] COMMAND ...   (ADDR may also come from $LODE_MDS)
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "key.h"
#include "load.h"
#include "local_cluster.h"
#include "lode/lode.h"

#define COPY_BUF (16u << 20)

static const char *mds_addr;

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: lodectl [--mds tcp://HOST:PORT] [--timeout MS] [--key FILE | --insecure]\n"
	    "               COMMAND [ARGS]\n"
	    "\n"
	    "cluster:\n"
	    "  status                       the MDS and every OSS, with capacity and state\n"
	    "  df                           space of the whole cluster\n"
	    "  local up DIR [--oss N] [--orphan-grace S]\n                               start a "
	    "local cluster on loopback (prints the MDS)\n"
	    "  local down DIR               stop it\n"
	    "  local kill DIR NAME [-9]     stop one daemon of it (mds, oss0, ...)\n"
	    "  key generate FILE            a new cluster key (mode 0600)\n"
	    "  key derive --role ROLE IN OUT  one role's key (client, target, admin)\n"
	    "files:\n"
	    "  put LOCAL REMOTE [--stripe-size BYTES] [--stripe-count N] [--mirrors N]\n"
	    "  get REMOTE LOCAL\n"
	    "  ls [-l] PATH\n"
	    "  stat PATH                    attributes, layout and degraded copies\n"
	    "  repair PATH                  re-replicate a file's degraded copies\n"
	    "  load PATH... [--to host|cuda:N] [--verify] [--json]\n"
	    "                               load files or a model directory into memory\n"
	    "  mkdir PATH | rm PATH | rmdir PATH | mv FROM TO\n"
	    "\n"
	    "The MDS address comes from --mds or $LODE_MDS. --timeout: how long a request waits\n"
	    "for an unreachable server before failing (default 30000 ms). The key proved to the\n"
	    "cluster comes from --key or $LODE_KEY_FILE (--insecure: none).\n");
}

static int fail(const char *what, const char *path, int rc)
{
	fprintf(stderr, "lodectl: %s %s: %s\n", what, path ? path : "", strerror(-rc));
	return 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static void print_rate(const char *verb, uint64_t bytes, double secs)
{
	fprintf(stderr, "%s %" PRIu64 " bytes in %.2f s: %.2f GB/s\n", verb, bytes, secs,
		secs > 0 ? (double)bytes / secs / 1e9 : 0.0);
}

static int cmd_put(struct lode_client *c, int argc, char **argv)
{
	struct lode_layout layout = {0};
	int have_layout = 0, fd, rc;
	uint64_t v, off = 0;
	struct lode_file *f;
	double t0 = 0;
	char *buf;

	if (argc < 3) {
		fprintf(stderr, "lodectl: put LOCAL REMOTE [options]\n");
		return 2;
	}
	layout.stripe_size = 1u << 20;
	layout.mirror_count = 1;
	for (int i = 3; i < argc; i++) {
		if (i + 1 >= argc || parse_size(argv[i + 1], &v)) {
			fprintf(stderr, "lodectl: put: bad option '%s'\n", argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--stripe-size"))
			layout.stripe_size = (uint32_t)v;
		else if (!strcmp(argv[i], "--stripe-count"))
			layout.stripe_count = (uint16_t)v;
		else if (!strcmp(argv[i], "--mirrors"))
			layout.mirror_count = (uint16_t)v;
		else {
			fprintf(stderr, "lodectl: put: unknown option '%s'\n", argv[i]);
			return 2;
		}
		have_layout = 1;
		i++;
	}
	if (have_layout && !layout.stripe_count) {
		struct lode_statfs sf;

		rc = lode_statfs(c, &sf);
		if (rc)
			return fail("statfs", "", rc);
		layout.stripe_count = (uint16_t)(sf.targets_up ? sf.targets_up : 1);
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0)
		return fail("open", argv[1], -errno);
	buf = aligned_alloc(4096, COPY_BUF);
	if (!buf) {
		close(fd);
		return fail("put", "", -ENOMEM);
	}
	if (have_layout) {
		rc = lode_create_with_layout(c, argv[2], 0644, &layout, &f);
		if (rc == -EEXIST) {
			lode_unlink(c, argv[2]);
			rc = lode_create_with_layout(c, argv[2], 0644, &layout, &f);
		}
	} else {
		rc = lode_open(c, argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644, &f);
	}
	if (rc) {
		free(buf);
		close(fd);
		return fail("create", argv[2], rc);
	}
	t0 = now_s();
	for (;;) {
		ssize_t n = read(fd, buf, COPY_BUF), w;

		if (n < 0) {
			rc = -errno;
			fail("read", argv[1], rc);
			break;
		}
		if (n == 0)
			break;
		w = lode_pwrite(f, buf, (size_t)n, off);
		if (w < 0) {
			rc = (int)w;
			fail("write", argv[2], rc);
			break;
		}
		off += (uint64_t)n;
	}
	if (!rc) {
		rc = lode_fsync(f);
		if (rc)
			fail("fsync", argv[2], rc);
	}
	{
		int rc2 = lode_close(f);

		if (!rc && rc2)
			rc = fail("close", argv[2], rc2) ? rc2 : rc2;
	}
	if (!rc)
		print_rate("put", off, now_s() - t0);
	free(buf);
	close(fd);
	return rc ? 1 : 0;
}

static int cmd_get(struct lode_client *c, int argc, char **argv)
{
	struct lode_file *f;
	char tmp[PATH_MAX + 32];
	uint64_t off = 0;
	bool to_file;
	int fd, rc = 0;
	double t0 = 0;
	char *buf;

	if (argc != 3) {
		fprintf(stderr, "lodectl: get REMOTE LOCAL\n");
		return 2;
	}
	rc = lode_open(c, argv[1], O_RDONLY, 0, &f);
	if (rc)
		return fail("open", argv[1], rc);
	/* into a temporary name beside LOCAL, renamed over it once complete: a failed get
	 * leaves no partial file behind, and an existing LOCAL as it was */
	to_file = strcmp(argv[2], "-") != 0;
	if (to_file)
		snprintf(tmp, sizeof(tmp), "%s.lodectl-get.%d", argv[2], (int)getpid());
	fd = to_file ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : STDOUT_FILENO;
	if (fd < 0) {
		lode_close(f);
		return fail("create", argv[2], -errno);
	}
	buf = aligned_alloc(4096, COPY_BUF);
	if (!buf) {
		rc = fail("get", "", -ENOMEM);
		goto out;
	}
	t0 = now_s();
	for (;;) {
		ssize_t n = lode_pread(f, buf, COPY_BUF, off);

		if (n < 0) {
			rc = (int)n;
			fail("read", argv[1], rc);
			break;
		}
		if (n == 0)
			break;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(fd, buf + done, (size_t)(n - done));

			if (w < 0) {
				rc = -errno;
				fail("write", argv[2], rc);
				goto out;
			}
			done += w;
		}
		off += (uint64_t)n;
	}
out:
	free(buf);
	if (to_file) {
		if (close(fd) && !rc)
			rc = fail("close", argv[2], -errno);
		if (!rc && rename(tmp, argv[2]))
			rc = fail("rename", argv[2], -errno);
		if (rc)
			unlink(tmp);
	}
	if (!rc)
		print_rate("get", off, now_s() - t0);
	lode_close(f);
	return rc ? 1 : 0;
}

static char type_char(uint32_t mode)
{
	return S_ISDIR(mode) ? 'd' : S_ISLNK(mode) ? 'l' : '-';
}

static void mode_string(uint32_t mode, char *s)
{
	const char *rwx = "rwxrwxrwx";

	s[0] = type_char(mode);
	for (int i = 0; i < 9; i++)
		s[i + 1] = (mode & (1u << (8 - i))) ? rwx[i] : '-';
	s[10] = 0;
}

struct ls_ctx {
	struct lode_client *c;
	const char *dir;
	int long_format;
};

/* A name as a terminal may show it: control bytes, DEL and backslash as \xNN (a file name
 * may hold any byte but '/' and NUL, and some would move the cursor or retitle the window). */
static const char *shown_name(const char *name, char *buf, size_t size)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)name; *p && o + 5 < size; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '\\')
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", *p);
		else
			buf[o++] = (char)*p;
	}
	buf[o] = '\0';
	return buf;
}

static int ls_entry(void *arg, const char *name, uint64_t ino, uint32_t mode)
{
	struct ls_ctx *ls = arg;
	char path[8192], ms[11], shown[4 * 255 + 8];
	struct lode_stat st;

	(void)ino;
	if (!ls->long_format) {
		printf("%s%s\n", shown_name(name, shown, sizeof(shown)), S_ISDIR(mode) ? "/" : "");
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s", strcmp(ls->dir, "/") ? ls->dir : "", name);
	if (lode_lstat(ls->c, path, &st)) {
		printf("?????????? %s\n", shown_name(name, shown, sizeof(shown)));
		return 0;
	}
	mode_string(st.mode, ms);
	printf("%s %3u %5u %5u %14" PRIu64 " %s\n", ms, st.nlink, st.uid, st.gid, st.size,
	       shown_name(name, shown, sizeof(shown)));
	return 0;
}

static int cmd_ls(struct lode_client *c, int argc, char **argv)
{
	struct ls_ctx ls = {.c = c, .dir = "/"};
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-l"))
			ls.long_format = 1;
		else
			ls.dir = argv[i];
	}
	rc = lode_readdir(c, ls.dir, ls_entry, &ls);
	return rc ? fail("ls", ls.dir, rc) : 0;
}

static int cmd_stat(struct lode_client *c, int argc, char **argv)
{
	struct lode_stat st;
	char ms[11];
	int rc;

	if (argc != 2) {
		fprintf(stderr, "lodectl: stat PATH\n");
		return 2;
	}
	rc = lode_lstat(c, argv[1], &st);
	if (rc)
		return fail("stat", argv[1], rc);
	mode_string(st.mode, ms);
	printf("path:   %s\ninode:  %" PRIu64 "\nsize:   %" PRIu64 "\nmode:   %s (%04o)\n"
	       "owner:  %u:%u\nlinks:  %u\nmtime:  %" PRId64 ".%09" PRId64 "\n",
	       argv[1], st.ino, st.size, ms, st.mode & 07777, st.uid, st.gid, st.nlink,
	       st.mtime_ns / 1000000000, st.mtime_ns % 1000000000);
	if (S_ISREG(st.mode)) {
		struct lode_layout l;
		uint64_t degraded;
		unsigned nbad = 0;

		rc = lode_layout_info(c, argv[1], &l, &degraded);
		if (rc)
			return fail("layout", argv[1], rc);
		printf("layout: stripe_size=%u stripe_count=%u mirror_count=%u generation=%" PRIu64
		       "\n",
		       l.stripe_size, l.stripe_count, l.mirror_count, l.generation);
		for (unsigned s = 0; s < l.stripe_count; s++) {
			printf("  stripe %u: targets", s);
			for (unsigned m = 0; m < l.mirror_count; m++) {
				unsigned i = s * l.mirror_count + m;

				printf(" %u%s", l.targets[i],
				       (degraded >> i) & 1 ? " (degraded)" : "");
				nbad += (degraded >> i) & 1;
			}
			printf("\n");
		}
		printf("copies: %u of %u degraded%s\n", nbad,
		       (unsigned)l.stripe_count * l.mirror_count,
		       nbad ? " (lodectl repair PATH restores them)" : "");
	}
	return 0;
}

static int cmd_repair(struct lode_client *c, int argc, char **argv)
{
	struct lode_repair_result r;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "lodectl: repair PATH\n");
		return 2;
	}
	rc = lode_repair(c, argv[1], &r);
	if (rc)
		return fail("repair", argv[1], rc);
	printf("%s: %u of %u degraded copies repaired, %" PRIu64 " bytes copied\n", argv[1],
	       r.copies_repaired, r.copies_degraded, r.bytes_copied);
	return r.copies_repaired == r.copies_degraded ? 0 : 1;
}

static int cmd_status(struct lode_client *c)
{
	struct lode_target_info t[256];
	struct lode_statfs sf;
	int n, rc;

	rc = lode_statfs(c, &sf);
	if (rc)
		return fail("statfs", "", rc);
	n = lode_targets(c, t, 256);
	if (n < 0)
		return fail("targets", "", n);
	printf("mds %s: up, %u of %u targets up, %.1f of %.1f GiB free\n", mds_addr, sf.targets_up,
	       sf.targets_total, (double)sf.bytes_free / (1u << 30),
	       (double)sf.bytes_total / (1u << 30));
	if (sf.flags & LODE_STATFS_INSECURE)
		printf("security: INSECURE (the MDS runs --insecure: it checks no key)\n");
	printf("%-6s %-5s %-24s %12s %12s %9s %10s\n", "target", "state", "address", "total_GiB",
	       "free_GiB", "objects", "seen_ms");
	for (int i = 0; i < n && i < 256; i++)
		printf("%-6u %-5s %-24s %12.1f %12.1f %9" PRIu64 " %10" PRIu64 "\n", t[i].id,
		       t[i].up ? "up" : "down", t[i].addr, (double)t[i].bytes_total / (1u << 30),
		       (double)t[i].bytes_free / (1u << 30), t[i].objects, t[i].last_seen_ms);
	return 0;
}

static int cmd_df(struct lode_client *c)
{
	struct lode_statfs sf;
	int rc = lode_statfs(c, &sf);

	if (rc)
		return fail("statfs", "", rc);
	printf("%-20s %14s %14s %14s\n", "cluster", "size_GiB", "free_GiB", "files");
	printf("%-20s %14.1f %14.1f %14" PRIu64 "\n", mds_addr, (double)sf.bytes_total / (1u << 30),
	       (double)sf.bytes_free / (1u << 30), sf.files);
	return 0;
}

static int cmd_simple(struct lode_client *c, int argc, char **argv)
{
	const char *cmd = argv[0];
	int rc;

	if (!strcmp(cmd, "mv")) {
		if (argc != 3) {
			fprintf(stderr, "lodectl: mv FROM TO\n");
			return 2;
		}
		rc = lode_rename(c, argv[1], argv[2], 0);
		return rc ? fail("mv", argv[1], rc) : 0;
	}
	if (argc != 2) {
		fprintf(stderr, "lodectl: %s PATH\n", cmd);
		return 2;
	}
	if (!strcmp(cmd, "mkdir"))
		rc = lode_mkdir(c, argv[1], 0755);
	else if (!strcmp(cmd, "rm"))
		rc = lode_unlink(c, argv[1]);
	else
		rc = lode_rmdir(c, argv[1]);
	return rc ? fail(cmd, argv[1], rc) : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"mds", required_argument, NULL, 'm'},
	    {"timeout", required_argument, NULL, 't'},
	    {"key", required_argument, NULL, 'k'},
	    {"insecure", no_argument, NULL, 'I'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {0},
	};
	struct lode_client_opts copts = {.size = sizeof(copts), .use_process_creds = 1};
	struct lode_client *c;
	const char *cmd;
	char *end;
	int opt, rc;

	mds_addr = getenv("LODE_MDS");
	while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			mds_addr = optarg;
			break;
		case 't':
			copts.timeout_ms = (unsigned)strtoul(optarg, &end, 10);
			if (*end || !copts.timeout_ms) {
				fprintf(stderr, "lodectl: --timeout wants milliseconds > 0\n");
				return 2;
			}
			break;
		case 'k':
		case 'I':
			copts.key_file = opt == 'k' ? optarg : ""; /* "": no key */
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("lodectl %s\n", LODE_VERSION);
			return 0;
		default:
			fprintf(stderr, "lodectl: bad arguments (see lodectl --help)\n");
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "lodectl: no command (see lodectl --help)\n");
		return 2;
	}
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	if (!strcmp(cmd, "local"))
		return local_main(argc, argv);
	if (!strcmp(cmd, "key"))
		return lodectl_key_main(argc, argv);
	if (strcmp(cmd, "status") && strcmp(cmd, "df") && strcmp(cmd, "put") &&
	    strcmp(cmd, "get") && strcmp(cmd, "ls") && strcmp(cmd, "stat") &&
	    strcmp(cmd, "mkdir") && strcmp(cmd, "rm") && strcmp(cmd, "rmdir") &&
	    strcmp(cmd, "mv") && strcmp(cmd, "repair") && strcmp(cmd, "load")) {
		fprintf(stderr, "lodectl: unknown command '%s' (see lodectl --help)\n", cmd);
		return 2;
	}
	if (!mds_addr) {
		fprintf(stderr, "lodectl: no MDS address: give --mds or set LODE_MDS\n");
		return 2;
	}
	rc = lode_connect(mds_addr, &copts, &c);
	if (rc) {
		lodectl_key_connect_error(mds_addr, copts.key_file, rc);
		return 1;
	}
	if (!strcmp(cmd, "status"))
		rc = cmd_status(c);
	else if (!strcmp(cmd, "df"))
		rc = cmd_df(c);
	else if (!strcmp(cmd, "put"))
		rc = cmd_put(c, argc, argv);
	else if (!strcmp(cmd, "get"))
		rc = cmd_get(c, argc, argv);
	else if (!strcmp(cmd, "ls"))
		rc = cmd_ls(c, argc, argv);
	else if (!strcmp(cmd, "stat"))
		rc = cmd_stat(c, argc, argv);
	else if (!strcmp(cmd, "repair"))
		rc = cmd_repair(c, argc, argv);
	else if (!strcmp(cmd, "load"))
		rc = lodectl_load(c, argc, argv);
	else
		rc = cmd_simple(c, argc, argv);
	lode_disconnect(c);
	return rc;
}
