/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse: mounts a Lode cluster with the low-level libfuse API.
 *
 *   lode-fuse --mds tcp://HOST:PORT MOUNTPOINT [-f] [-d] [-o OPTIONS] [--log FILE]
 *             [--metrics HOST:PORT [--metrics-port-file FILE]]
 *   lode-fuse --config FILE MOUNTPOINT [options that override the file's]
 *
 * Order of start-up, and why: arguments are checked and the MDS is asked once while the
 * terminal still sees our messages; then the kernel mount, then fuse_daemonize() (a
 * fork: liblode's I/O thread would not survive it, so the probing client is closed
 * before and the real one connected after); then the multi-threaded loop. SIGTERM,
 * SIGINT and SIGHUP end the loop (fuse_set_signal_handlers), as does `fusermount3 -u`;
 * either way we unmount and commit what open writers still hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "auth.h"
#include "conf.h"
#include "config.h"
#include "log.h"
#include "lode_fuse.h"
#include "metrics.h"

/*
 * lode-fuse's long options: the keys a --config file may use (proto/daemon/conf.h); an
 * option added to parse_args() belongs here too. `options` is -o, `foreground` -f, `debug`
 * -d; -o given on the command line adds to the file's `options` (the later value of one
 * mount option wins), --options replaces them.
 */
static const struct option conf_keys[] = {
    {"mds", required_argument, NULL, 0},
    {"options", required_argument, NULL, 0},
    {"foreground", no_argument, NULL, 0},
    {"debug", no_argument, NULL, 0},
    {"log", required_argument, NULL, 0},
    {"metrics", required_argument, NULL, 0},
    {"metrics-port-file", required_argument, NULL, 0},
    {"key", required_argument, NULL, 0},
    {"insecure", no_argument, NULL, 0},
    {"config", required_argument, NULL, 0},
    {"help", no_argument, NULL, 0},
    {"version", no_argument, NULL, 0},
    {0},
};

static char *log_path;		/* --log FILE or -o log=FILE: the last one given */
static const char *parsing_arg; /* the argument parse_args() is at, for bad() */

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: lode-fuse --mds tcp://HOST:PORT MOUNTPOINT [-f] [-d] [-o OPTIONS]\n"
	    "\n"
	    "  --mds ADDR          metadata server of the cluster to mount\n"
	    "  --key FILE          the key to prove to the cluster (default: $LODE_KEY_FILE)\n"
	    "  --insecure          prove no key (a cluster run --insecure)\n"
	    "  -f                  stay in the foreground\n"
	    "  -d                  debug: foreground, and libfuse traces every request\n"
	    "  --config FILE       read options from FILE, `key = value` lines: mds, options,\n"
	    "                      foreground, debug, log, metrics (docs/config.md)\n"
	    "  --log FILE          once mounted, log to FILE (appended) instead of stderr, or\n"
	    "                      instead of syslog when detached\n"
	    "  --metrics HOST:PORT serve Prometheus metrics on http://HOST:PORT/metrics\n"
	    "                      (off by default; port 0: any free port)\n"
	    "  --metrics-port-file FILE\n"
	    "                      write the metrics HOST:PORT into FILE once listening\n"
	    "  -o OPT[,OPT...]     mount options (also --options OPTS):\n"
	    "     attr_timeout=S   seconds the kernel caches attributes (default 1)\n"
	    "     entry_timeout=S  seconds the kernel caches names (default 1)\n"
	    "     negative_timeout=S  seconds the kernel caches that a name is missing\n"
	    "                      (default 0: names other clients create show at once)\n"
	    "     timeout=S        seconds a call waits for an unreachable server (default 30)\n"
	    "     max_threads=N    request threads at most (default 64)\n"
	    "     read_ahead_kb=N  kernel readahead of the mount (default 16384; 0: kernel's)\n"
	    "     replication=M    fanout or chain: how writes reach a file's copies (default:\n"
	    "                      $LODE_REPLICATION, else liblode's)\n"
	    "     root_squash      uid/gid 0 act as 65534 towards the cluster\n"
	    "     namespace=M      durable (default): every create, rename, unlink... is\n"
	    "                      durable when it returns; lazy: durable at the next fsync,\n"
	    "                      fsync of a directory, or within a second (docs/fuse.md)\n"
	    "     data=M           durable (default): fsync returns once every copy is on\n"
	    "                      disk; lazy: once every copy's server holds it, unsynced\n"
	    "                      (survives kill -9 of every server, not a power cut)\n"
	    "     io_uring         the kernel's requests over io_uring, a queue per CPU\n"
	    "                      (Linux 6.14+, fuse module's enable_uring=Y; else through\n"
	    "                      /dev/fuse); io_uring=require: else no mount\n"
	    "     log=FILE         as --log FILE (for mount -t lode and fstab)\n"
	    "     key=FILE         as --key FILE (for mount -t lode and fstab)\n"
	    "     metrics=HOST:PORT  as --metrics (for fstab and mount -t lode)\n"
	    "     ro, allow_other, and the other generic FUSE mount options\n"
	    "  --help, --version\n");
}

static void __attribute__((noreturn, format(printf, 1, 2))) bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "lode-fuse: %s", lode_conf_where(parsing_arg));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(2);
}

static double parse_seconds(const char *name, const char *v)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || *end || !(d >= 0) || d > 86400)
		bad("bad value for %s: '%s'", name, v);
	return d;
}

static unsigned parse_uint(const char *name, const char *v, unsigned lo, unsigned hi)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || end == v || *end || *v == '-' || n < lo || n > hi)
		bad("bad value for %s: '%s' (%u..%u)", name, v, lo, hi);
	return (unsigned)n;
}

/* mount(8) and fstab words that mean nothing to FUSE or to us. */
static bool mount_only(const char *opt)
{
	static const char *const words[] = {"defaults", "auto",	 "noauto", "_netdev", "nofail",
					    "user",	"users", "nouser", "owner",   "group"};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(opt, words[i]))
			return true;
	return !strncmp(opt, "x-", 2) || !strncmp(opt, "comment=", 8);
}

static void append(char **list, const char *opt)
{
	size_t old = *list ? strlen(*list) : 0;
	char *n = realloc(*list, old + strlen(opt) + 2);

	if (!n) {
		fputs("lode-fuse: out of memory\n", stderr);
		exit(1);
	}
	if (old)
		n[old++] = ',';
	strcpy(n + old, opt);
	*list = n;
}

static void set_log_path(const char *path)
{
	free(log_path);
	log_path = strdup(path);
	if (!log_path)
		bad("out of memory");
}

/* Takes our options out of one -o list; the rest goes to libfuse, which checks them. */
static void parse_o(struct lf_opts *o, const char *arg, char **fuse_opts)
{
	char *copy = strdup(arg), *save = NULL, *opt;

	if (!copy)
		bad("out of memory");
	for (opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(opt, '=');
		const char *v = eq ? eq + 1 : NULL;

		if (eq)
			*eq = 0;
		if (!strcmp(opt, "attr_timeout") && v)
			o->attr_timeout = parse_seconds(opt, v);
		else if (!strcmp(opt, "entry_timeout") && v)
			o->entry_timeout = parse_seconds(opt, v);
		else if (!strcmp(opt, "negative_timeout") && v)
			o->negative_timeout = parse_seconds(opt, v);
		else if (!strcmp(opt, "timeout") && v)
			o->timeout_s = parse_uint(opt, v, 1, 86400);
		else if (!strcmp(opt, "read_ahead_kb") && v)
			o->read_ahead_kb = parse_uint(opt, v, 0, 1u << 20);
		else if (!strcmp(opt, "max_threads") && v)
			o->max_threads = parse_uint(opt, v, 1, 1024);
		else if (!strcmp(opt, "replication") && v) {
			o->replication = lode_replication_from_name(v);
			if (o->replication < 0)
				bad("replication: expected fanout or chain, got '%s'", v);
		} else if (!strcmp(opt, "log") && v) {
			if (!*v)
				bad("log= needs a file name");
			set_log_path(v); /* --log for mount(8) and fstab */
		} else if (!strcmp(opt, "key") && v) {
			if (!*v)
				bad("key= needs a file name");
			o->key_file = strdup(v); /* --key for mount(8) and fstab */
			if (!o->key_file)
				bad("out of memory");
		} else if (!strcmp(opt, "metrics") && v) {
			o->metrics = strdup(v); /* for the life of the process, like argv */
			if (!o->metrics)
				bad("out of memory");
		} else if (!strcmp(opt, "io_uring")) {
			if (v && strcmp(v, "require"))
				bad("io_uring: expected no value or require, got '%s'", v);
			o->io_uring = v ? 2 : 1;
		} else if (!strcmp(opt, "root_squash") && !v)
			o->root_squash = 1;
		else if (!strcmp(opt, "no_root_squash") && !v)
			o->root_squash = 0;
		else if (!strcmp(opt, "namespace") && v) {
			if (strcmp(v, "lazy") && strcmp(v, "durable"))
				bad("namespace: expected durable or lazy, got '%s'", v);
			o->lazy_namespace = !strcmp(v, "lazy");
		} else if (!strcmp(opt, "data") && v) {
			if (strcmp(v, "lazy") && strcmp(v, "durable"))
				bad("data: expected durable or lazy, got '%s'", v);
			o->lazy_data = !strcmp(v, "lazy");
		} else if (!strcmp(opt, "attr_timeout") || !strcmp(opt, "entry_timeout") ||
			   !strcmp(opt, "negative_timeout") || !strcmp(opt, "timeout") ||
			   !strcmp(opt, "max_threads") || !strcmp(opt, "read_ahead_kb") ||
			   !strcmp(opt, "replication") || !strcmp(opt, "root_squash") ||
			   !strcmp(opt, "no_root_squash") || !strcmp(opt, "log") ||
			   !strcmp(opt, "metrics") || !strcmp(opt, "namespace") ||
			   !strcmp(opt, "data"))
			bad("option %s %s a value", opt, v ? "takes no" : "needs");
		else if (!strcmp(opt, "default_permissions") || mount_only(opt))
			continue;
		else {
			if (!strcmp(opt, "ro"))
				o->ro = 1;
			else if (!strcmp(opt, "rw"))
				o->ro = 0;
			if (eq)
				*eq = '=';
			append(fuse_opts, opt);
		}
	}
	free(copy);
}

/* "--NAME VALUE" or "--NAME=VALUE" at argv[*i]: the value (*i moved past it), else NULL. */
static const char *long_value(int argc, char **argv, int *i, const char *name)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (strncmp(a, "--", 2) || strncmp(a + 2, name, n) || (a[2 + n] && a[2 + n] != '='))
		return NULL;
	if (a[2 + n] == '=')
		return a + 3 + n;
	if (++*i == argc)
		bad("%s needs a value", a);
	return argv[*i];
}

static void parse_args(int argc, char **argv, struct lf_opts *o, char **fuse_opts)
{
	char why[256];

	if (lode_conf_load(conf_keys, &argc, &argv, why, sizeof(why)))
		bad("%s", why);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;

		parsing_arg = a;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
			printf("lode-fuse %s (liblode %s, libfuse %s)\n", LODE_VERSION,
			       lode_version(), fuse_pkgversion());
			exit(0);
		} else if (!strcmp(a, "--mds")) {
			if (++i == argc)
				bad("--mds needs an address");
			o->mds = argv[i];
		} else if (!strncmp(a, "--mds=", 6)) {
			o->mds = a + 6;
		} else if (!strcmp(a, "--metrics")) {
			if (++i == argc)
				bad("--metrics needs HOST:PORT");
			o->metrics = argv[i];
		} else if (!strcmp(a, "--metrics-port-file")) {
			if (++i == argc)
				bad("--metrics-port-file needs a file");
			o->metrics_port_file = argv[i];
		} else if ((v = long_value(argc, argv, &i, "key"))) {
			if (!*v)
				bad("--key needs a file name");
			o->key_file = v;
		} else if (!strcmp(a, "--insecure")) {
			o->key_file = ""; /* liblode: no key, whatever LODE_KEY_FILE says */
		} else if (!strcmp(a, "-o")) {
			if (++i == argc)
				bad("-o needs options");
			parse_o(o, argv[i], fuse_opts);
		} else if (!strncmp(a, "-o", 2)) {
			parse_o(o, a + 2, fuse_opts);
		} else if (!strcmp(a, "-f")) {
			o->foreground = 1;
		} else if (!strcmp(a, "-d")) {
			o->foreground = 1;
			o->debug = 1;
		} else if (!strcmp(a, "--foreground") || !strcmp(a, "--debug")) {
			o->foreground = 1;
			o->debug |= a[2] == 'd';
		} else if ((v = long_value(argc, argv, &i, "options"))) {
			parse_o(o, v, fuse_opts);
		} else if ((v = long_value(argc, argv, &i, "log"))) {
			if (!*v)
				bad("--log needs a file name");
			set_log_path(v);
		} else if (long_value(argc, argv, &i, "config")) {
			continue; /* read by lode_conf_load() */
		} else if (a[0] == '-') {
			bad("unknown option '%s'", a);
		} else if (!o->mountpoint) {
			o->mountpoint = a;
		} else {
			bad("unexpected argument '%s'", a);
		}
	}
	parsing_arg = NULL;
	if (!o->mds)
		bad("--mds tcp://HOST:PORT is required");
	if (!*o->mds || strchr(o->mds, ','))
		bad("bad MDS address '%s'", o->mds);
	if (!o->mountpoint)
		bad("no mount point given");
	if (o->metrics_port_file && !o->metrics)
		bad("--metrics-port-file needs --metrics HOST:PORT");
}

static void lf_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* 1 MiB requests: libfuse derives max_pages (256) from max_write */
	conn->max_write = LF_IO_MAX;
	conn->max_read = 0; /* no limit below max_pages */
	/* the kernel's readahead proposal is the most it accepts; keep it */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->time_gran = 1;
	/* page-cache mode stays write-through: the kernel must not own size and mtime,
	 * other clients read what the MDS commits */
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	/* parallel lookups in a directory, and setuid/setgid cleared by us on write, truncate
	 * and chown (lf_kill_privs): libfuse 3.14 would drop both from its reply, so
	 * fuse_dev.c adds them (FUSE_PARALLEL_DIROPS, FUSE_HANDLE_KILLPRIV_V2) */
	conn->want &=
	    ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE |
			FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	/* a symlink's target never changes in Lode (a new one is a new inode) */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* and a changed mtime or size seen on an attribute refresh drops cached pages */
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
}

static const struct fuse_lowlevel_ops ops = {
    .init = lf_init,
    .lookup = lf_lookup,
    .forget = lf_forget,
    .forget_multi = lf_forget_multi,
    .getattr = lf_getattr_op,
    .setattr = lf_setattr,
    .readlink = lf_readlink,
    .mknod = lf_mknod,
    .mkdir = lf_mkdir,
    .unlink = lf_unlink,
    .rmdir = lf_rmdir,
    .symlink = lf_symlink,
    .rename = lf_rename,
    .link = lf_link,
    .open = lf_open,
    .read = lf_read,
    .write = lf_write,
    .flush = lf_flush,
    .fallocate = lf_fallocate,
    .release = lf_release,
    .fsync = lf_fsync,
    .opendir = lf_opendir,
    .readdir = lf_readdir,
    .releasedir = lf_releasedir,
    .fsyncdir = lf_fsyncdir,
    .statfs = lf_statfs,
    .setxattr = lf_setxattr,
    .getxattr = lf_getxattr,
    .listxattr = lf_listxattr,
    .removexattr = lf_removexattr,
    .create = lf_create,
    .readdirplus = lf_readdirplus,
};

static int connect_cluster(struct lode_fuse *lf)
{
	struct lode_client_opts co = {
	    .size = sizeof(co),
	    .timeout_ms = lf->o.timeout_s * 1000,
	    .use_process_creds = 1, /* each request sets its caller's: lode_thread_creds_set() */
	    .key_file = lf->o.key_file,
	    .lazy_namespace = lf->o.lazy_namespace,
	    .lazy_data = lf->o.lazy_data,
	};

	int rc = lode_connect(lf->o.mds, &co, &lf->c);

	if (!rc)
		lode_set_replication(lf->c, lf->o.replication); /* checked when parsed */
	return rc;
}

/* Commits and closes what writers are still open when the loop ends (SIGTERM with files
 * open): their size and mtime would otherwise be lost with the lease. */
static void close_writers(struct lode_fuse *lf)
{
	for (unsigned b = 0; b < LF_WRITER_BUCKETS; b++) {
		while (lf->writers[b]) {
			struct lf_writer *w = lf->writers[b];

			lf->writers[b] = w->next;
			if (w->f)
				lf_writer_drain(w);
			if (w->f && lode_close(w->f))
				lf_log(LF_WARN, "inode %llu: size of its last writes not committed",
				       (unsigned long long)w->ino);
			pthread_cond_destroy(&w->wb_cond);
			pthread_mutex_destroy(&w->wb_lock);
			free(w->wb);
			free(w->spare);
			free(w);
		}
	}
}

/* "tcp://HOST:PORT" -> "HOST:PORT", what mount(8) and df show as the source. */
static const char *source_name(const char *mds)
{
	const char *p = strstr(mds, "://");

	return p ? p + 3 : mds;
}

/* mountinfo writes a space, tab, newline or backslash in a path as an octal escape
 * (backslash and three digits): decode them in place. */
static void unescape_octal(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = 0;
}

/*
 * Whether Lode is what one sees at dir (absolute, resolved) now: the last mount of dir in
 * /proc/self/mountinfo is the top one. A second lode-fuse there would stack a mount on top of
 * the first, hiding it and whatever its users have open. src gets the first's source.
 */
static bool lode_mounted_at(const char *dir, char *src, size_t src_len)
{
	char *line = NULL;
	size_t cap = 0;
	bool lode = false;
	FILE *mi = fopen("/proc/self/mountinfo", "r");

	if (!mi)
		return false; /* no /proc: nothing to compare with; the mount decides */
	while (getline(&line, &cap, mi) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS */
		char *save = NULL, *mnt = NULL, *sep, *type, *source;

		sep = strstr(line, " - ");
		if (!sep)
			continue;
		*sep = 0;
		strtok_r(line, " ", &save);
		for (int f = 0; f < 4; f++)
			mnt = strtok_r(NULL, " ", &save);
		if (!mnt)
			continue;
		unescape_octal(mnt);
		if (strcmp(mnt, dir))
			continue;
		save = NULL;
		type = strtok_r(sep + 3, " ", &save);
		source = strtok_r(NULL, " ", &save);
		lode = type && !strcmp(type, "fuse.lode");
		snprintf(src, src_len, "%s", lode && source ? source : "");
	}
	free(line);
	fclose(mi);
	return lode;
}

int main(int argc, char **argv)
{
	static struct lode_fuse lf_storage;
	struct lode_fuse *lf = &lf_storage;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *cfg = NULL;
	struct lode_metrics_http *mhttp = NULL;
	struct lode_metrics *mreg = NULL;
	char *fuse_opts = NULL, *base = NULL;
	char *real, other[256];
	struct stat mst;
	int rc, ret = 1, log_fd = -1;

	lf->o.attr_timeout = 1.0;
	lf->o.entry_timeout = 1.0;
	lf->o.timeout_s = 30;
	lf->o.max_threads = 64;
	lf->o.read_ahead_kb = 16384;
	lode_log_init("lode-fuse", LODE_LOG_INFO);
	parse_args(argc, argv, &lf->o, &fuse_opts);
	if (stat(lf->o.mountpoint, &mst))
		bad("mount point %s: %s", lf->o.mountpoint, strerror(errno));
	if (!S_ISDIR(mst.st_mode))
		bad("mount point %s: not a directory", lf->o.mountpoint);
	/* absolute: fuse_daemonize() changes to /; mountinfo has no spaces (\\040) here */
	lf->o.mount_abs = realpath(lf->o.mountpoint, NULL);
	if (lf->o.mount_abs && strpbrk(lf->o.mount_abs, " \t\n\\")) {
		free(lf->o.mount_abs);
		lf->o.mount_abs = NULL;
	}
	real = realpath(lf->o.mountpoint, NULL);
	if (real && lode_mounted_at(real, other, sizeof(other))) {
		fprintf(stderr,
			"lode-fuse: %s is already a Lode mount (of %s); unmount it first "
			"(umount %s)\n",
			lf->o.mountpoint, other, lf->o.mountpoint);
		free(real);
		free(lf->o.mount_abs);
		return 1;
	}
	lf->o.mount_real = real;
	if (log_path) {
		/* opened now, so that a bad path is said on the terminal */
		log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
		if (log_fd < 0) {
			fprintf(stderr, "lode-fuse: --log %s: %s\n", log_path, strerror(errno));
			free(lf->o.mount_abs);
			free(lf->o.mount_real);
			return 1;
		}
	}

	pthread_mutex_init(&lf->wlock, NULL);
	pthread_cond_init(&lf->wcond, NULL);
	pthread_mutex_init(&lf->clock, NULL);
	for (unsigned i = 0; i < LF_OLOCKS; i++)
		pthread_mutex_init(&lf->olock[i], NULL);
	if (lf_defer_init(lf)) {
		fputs("lode-fuse: out of memory\n", stderr);
		return 1;
	}
	pthread_mutex_init(&lf->glock, NULL);
	pthread_mutex_init(&lf->dlock, NULL);
	pthread_mutex_init(&lf->alock, NULL);
	lf->ogen = 1; /* 0: what lf_dirattr_peek says while a change runs */
	lf->cver = calloc(LF_CVER_SLOTS, sizeof(*lf->cver));
	lf->groups = calloc(LF_GROUPS_SLOTS, sizeof(*lf->groups));
	if (!lf->cver || !lf->groups) {
		fputs("lode-fuse: out of memory\n", stderr);
		return 1;
	}

	/* bound now, so a bad or busy address is said on the terminal; served after the fork */
	if (lf->o.metrics) {
		char bound[128], why[256];

		rc = lode_metrics_http_open(&mhttp, lf->o.metrics, lf->o.metrics_port_file, bound,
					    sizeof(bound), why, sizeof(why));
		if (rc) {
			fprintf(stderr, "lode-fuse: %s\n", why);
			goto out_free;
		}
		fprintf(stderr, "lode-fuse: metrics on http://%s/metrics\n", bound);
	}

	/* ask the MDS now, while the caller still sees what we print */
	rc = connect_cluster(lf);
	if (rc) {
		char why[256];

		fprintf(stderr, "lode-fuse: cannot reach the MDS at %s: %s\n", lf->o.mds,
			lode_auth_explain(rc, lf->o.key_file, why, sizeof(why)));
		goto out_free;
	}
	if (!lf->o.foreground) {
		lode_disconnect(lf->c);
		lf->c = NULL;
	}

	if (asprintf(&base, "default_permissions,fsname=%s,subtype=lode", source_name(lf->o.mds)) <
	    0)
		goto out_free;
	if (fuse_opt_add_arg(&args, argv[0]) || fuse_opt_add_arg(&args, "-o") ||
	    fuse_opt_add_arg(&args, base) ||
	    (fuse_opts && (fuse_opt_add_arg(&args, "-o") || fuse_opt_add_arg(&args, fuse_opts))) ||
	    (lf->o.debug && fuse_opt_add_arg(&args, "-d")))
		goto out_free;
	lf->se = fuse_session_new(&args, &ops, sizeof(ops), lf);
	if (!lf->se) {
		/* libfuse said which option it did not take */
		ret = 2;
		goto out_free;
	}
	if (fuse_set_signal_handlers(lf->se))
		goto out_session;
	if (fuse_session_mount(lf->se, lf->o.mountpoint)) {
		fprintf(stderr, "lode-fuse: cannot mount on %s\n", lf->o.mountpoint);
		goto out_signals;
	}
	rc = lf_dev_hook(lf);
	if (rc)
		lf_log(LF_WARN,
		       "cannot hook /dev/fuse I/O (%s): mmap of O_DIRECT opens will "
		       "use page-cache mode",
		       strerror(-rc));
	if (fuse_daemonize(lf->o.foreground))
		goto out_unmount;
	if (log_fd >= 0) {
		/* fuse_daemonize() pointed stderr at /dev/null; libfuse's -d traces follow it */
		if (dup2(log_fd, STDERR_FILENO) < 0)
			goto out_unmount;
		close(log_fd);
		log_fd = -1;
		lode_log_init("lode-fuse", LODE_LOG_INFO);
	} else if (!lf->o.foreground) {
		openlog("lode-fuse", LOG_PID, LOG_DAEMON);
		lf_log_syslog = true;
	}
	lf_log(LF_INFO, "mounted %s on %s%s", lf->o.mds, lf->o.mountpoint,
	       lf->o.ro ? " read-only" : "");
	if (!lf->c) {
		rc = connect_cluster(lf);
		if (rc) {
			lf_log(LF_ERR, "cannot reach the MDS at %s: %s", lf->o.mds, strerror(-rc));
			goto out_unmount;
		}
	}

	if (mhttp &&
	    (lode_metrics_create(&mreg) || lode_metrics_add(mreg, lf_metrics_collect, lf) ||
	     lode_metrics_http_start(mhttp, mreg))) {
		lf_log(LF_ERR, "cannot serve metrics on %s", lf->o.metrics);
		goto out_unmount;
	}

	cfg = fuse_loop_cfg_create();
	if (!cfg)
		goto out_unmount;
	fuse_loop_cfg_set_max_threads(cfg, lf->o.max_threads);
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	rc = fuse_session_loop_mt(lf->se, cfg);
	fuse_loop_cfg_destroy(cfg);
	lf_uring_quiesce(lf); /* no more ring threads, hand-offs or kicks */
	lf_defer_stop(lf);    /* libfuse's threads are gone: a ring thread's deferral now fails */
	lf_uring_stop(lf);    /* after the deferred replies, which may go to a ring */
	/* io_uring=require without io_uring (the kernel did not offer it, or refused an
	 * entry) ended the session: that mount failed, which the exit status says too */
	if (lf->o.io_uring > 1 && !lf_io_uring())
		rc = -1;
	ret = rc < 0 ? 1 : 0;
	lf_log(LF_INFO, "unmounting %s%s", lf->o.mountpoint, rc < 0 ? " after an error" : "");

out_unmount:
	fuse_session_unmount(lf->se);
out_signals:
	fuse_remove_signal_handlers(lf->se);
out_session:
	fuse_session_destroy(lf->se);
out_free:
	if (log_fd >= 0)
		close(log_fd);
	lode_metrics_http_close(mhttp);
	lode_metrics_destroy(mreg);
	if (lf->c)
		close_writers(lf);
	lode_disconnect(lf->c);
	fuse_opt_free_args(&args);
	free(fuse_opts);
	free(base);
	free(lf->cver);
	free(lf->groups);
	for (unsigned i = 0; i < LF_WRITER_BUCKETS; i++) {
		while (lf->odirs[i]) {
			struct lf_odir *d = lf->odirs[i];

			lf->odirs[i] = d->next;
			free(d);
		}
	}
	lf_defer_fini(lf);
	pthread_mutex_destroy(&lf->glock);
	pthread_mutex_destroy(&lf->dlock);
	pthread_mutex_destroy(&lf->alock);
	free(lf->o.mount_abs);
	free(lf->o.mount_real);
	pthread_mutex_destroy(&lf->clock);
	for (unsigned i = 0; i < LF_OLOCKS; i++)
		pthread_mutex_destroy(&lf->olock[i]);
	pthread_cond_destroy(&lf->wcond);
	pthread_mutex_destroy(&lf->wlock);
	return ret;
}
