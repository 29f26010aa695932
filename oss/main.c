/* SPDX-License-Identifier: MIT */
/*
 * lode-oss: one storage target. Serves OBJ_* requests from DATA/objects on --threads
 * workers and keeps itself registered with the MDS. SIGTERM/SIGINT stop it cleanly;
 * acknowledged synchronous writes are on disk whatever way it stops.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "addr.h"
#include "conf.h"
#include "config.h"
#include "daemon.h"
#include "daemon_auth.h"
#include "daemon_metrics.h"
#include "handlers.h"
#include "log.h"
#include "mds_link.h"
#include "scrub.h"
#include "objstore.h"
#include "server.h"

#define PROG "lode-oss"

static const char usage[] =
    "usage: " PROG " --data DIR --listen tcp://HOST:PORT --mds tcp://HOST:PORT [options]\n"
    "       " PROG " --config FILE [options that override the file's]\n"
    "\n"
    "  --config FILE       read options from FILE, `key = value` lines with the long\n"
    "                      option names as keys (docs/config.md)\n"
    "  --data DIR          object store directory (created if missing)\n"
    "  --listen ADDR       address to serve on, tcp://HOST:PORT or rdma://HOST:PORT (port 0\n"
    "                      picks a free one; repeat to serve on up to 3)\n"
    "  --mds ADDR          metadata server to register with\n"
    "  --advertise ADDR    address clients should use (default: the first bound address)\n"
    "  --key FILE          the cluster key (`lodectl key generate FILE`): every\n"
    "                      connection must prove it; also proved to the MDS and the\n"
    "                      next copy of a chained write\n"
    "  --insecure          serve without authentication: anyone may ask anything\n"
    "                      (one of --key and --insecure is required)\n"
    "  --threads N         worker threads (default 2)\n"
    "  --capacity BYTES    the size this target reports (K, M, G, T suffixes): at most\n"
    "                      its file system's, with its objects' bytes as used (default:\n"
    "                      the file system's size and use); for targets sharing a disk\n"
    "  --reserve BYTES     keep this much of the file system free (K, M, G, T suffixes;\n"
    "                      0: none; default 1%, at most 1G): with less free, the MDS\n"
    "                      places no new files or copies here, and writes to the files\n"
    "                      here complete in the reserve\n"
    "  --direct-reads on|off\n"
    "                      read large ranges nobody has cached straight from the disk,\n"
    "                      past the page cache (default on, where the kernel can tell\n"
    "                      what is cached: Linux 6.5 and later)\n"
    "  --port-file FILE    write the bound address to FILE once listening\n"
    "  --log-level L       err, warn, info (default) or debug\n"
    "  --metrics HOST:PORT serve Prometheus metrics on http://HOST:PORT/metrics\n"
    "                      (off by default; port 0: any free port)\n"
    "  --metrics-port-file FILE\n"
    "                      write the metrics HOST:PORT into FILE once listening\n"
    "  --version           print the version and exit\n"
    "  --help              print this help and exit\n";

struct args {
	const char *data;
	const char *listen[4]; /* NULL-terminated */
	unsigned nlisten;
	const char *mds;
	const char *advertise;
	const char *port_file;
	const char *metrics, *metrics_port_file;
	unsigned threads;
	uint64_t capacity; /* 0: the file system's */
	uint64_t reserve;  /* LODE_OSS_RESERVE_DEFAULT: 1%, at most 1 GiB */
	enum lode_log_level level;
	const char *key_file;
	bool insecure;
	bool no_direct_reads;
};

static void __attribute__((noreturn, format(printf, 1, 2))) bad_args(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": %s", lode_conf_where_getopt());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(2);
}

static void check_addr(const char *opt, const char *addr)
{
	struct lode_addr a;

	if (strlen(addr) > LODE_ADDR_MAX || lode_addr_parse(addr, &a))
		bad_args("%s: bad address '%s'", opt, addr);
}

/* "64M", "10G", "4096": bytes with an optional binary suffix. Returns 0 or -EINVAL. */
static int parse_bytes(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end) {
		const char *units = "KMGT", *u = strchr(units, end[0] & ~0x20);

		if (!u || !end[0])
			return -EINVAL;
		shift = 10 * (unsigned)(u - units + 1);
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static void parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
	    {"data", required_argument, NULL, 'd'},
	    {"listen", required_argument, NULL, 'l'},
	    {"mds", required_argument, NULL, 'm'},
	    {"advertise", required_argument, NULL, 'a'},
	    {"threads", required_argument, NULL, 't'},
	    {"capacity", required_argument, NULL, 'c'},
	    {"reserve", required_argument, NULL, 'r'},
	    {"port-file", required_argument, NULL, 'p'},
	    {"log-level", required_argument, NULL, 'L'},
	    {"config", required_argument, NULL, 'C'},
	    {"metrics", required_argument, NULL, 'M'},
	    {"metrics-port-file", required_argument, NULL, 'P'},
	    {"key", required_argument, NULL, 'K'},
	    {"insecure", no_argument, NULL, 'I'},
	    {"direct-reads", required_argument, NULL, 'D'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	char *end, why[256];
	long n;
	int c;

	if (lode_conf_load(opts, &argc, &argv, why, sizeof(why)))
		bad_args("%s", why);
	memset(a, 0, sizeof(*a));
	a->threads = 2;
	a->reserve = LODE_OSS_RESERVE_DEFAULT;
	a->level = LODE_LOG_INFO;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			a->data = optarg;
			break;
		case 'l':
			if (a->nlisten == 3)
				bad_args("at most 3 --listen addresses");
			check_addr("--listen", optarg);
			a->listen[a->nlisten++] = optarg;
			break;
		case 'm':
			check_addr("--mds", optarg); /* here, where an error names its line */
			a->mds = optarg;
			break;
		case 'a':
			check_addr("--advertise", optarg);
			a->advertise = optarg;
			break;
		case 'p':
			a->port_file = optarg;
			break;
		case 'M':
			a->metrics = optarg;
			break;
		case 'P':
			a->metrics_port_file = optarg;
			break;
		case 'K':
			a->key_file = optarg;
			break;
		case 'I':
			a->insecure = true;
			break;
		case 'D':
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				bad_args("--direct-reads: expected on or off, got '%s'", optarg);
			a->no_direct_reads = !strcmp(optarg, "off");
			break;
		case 't':
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || n < 1 || n > LODE_OSS_WORKERS_MAX)
				bad_args("--threads: expected 1..%d, got '%s'",
					 LODE_OSS_WORKERS_MAX, optarg);
			a->threads = (unsigned)n;
			break;
		case 'c':
			if (parse_bytes(optarg, &a->capacity) || !a->capacity)
				bad_args("--capacity: expected a number of bytes with an optional "
					 "K, M, G or T suffix, got '%s'",
					 optarg);
			break;
		case 'r':
			if (parse_bytes(optarg, &a->reserve) ||
			    a->reserve == LODE_OSS_RESERVE_DEFAULT)
				bad_args("--reserve: expected a number of bytes with an optional "
					 "K, M, G or T suffix, got '%s'",
					 optarg);
			break;
		case 'L':
			if (!strcmp(optarg, "err"))
				a->level = LODE_LOG_ERR;
			else if (!strcmp(optarg, "warn"))
				a->level = LODE_LOG_WARN;
			else if (!strcmp(optarg, "info"))
				a->level = LODE_LOG_INFO;
			else if (!strcmp(optarg, "debug"))
				a->level = LODE_LOG_DEBUG;
			else
				bad_args("--log-level: expected err, warn, info or debug, got '%s'",
					 optarg);
			break;
		case 'C': /* read by lode_conf_load() */
			break;
		case 'V':
			printf(PROG " %s\n", LODE_VERSION);
			exit(0);
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case ':':
			bad_args("%s needs an argument", argv[optind - 1]);
		default:
			bad_args("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bad_args("unexpected argument '%s'", argv[optind]);
	if (!a->data || !*a->data)
		bad_args("--data is required");
	if (!a->nlisten)
		bad_args("--listen is required");
	if (!a->mds)
		bad_args("--mds is required");
	if (a->metrics_port_file && !a->metrics)
		bad_args("--metrics-port-file needs --metrics HOST:PORT");
}

int main(int argc, char **argv)
{
	struct lode_server_opts sopts = {0};
	struct lode_mds_link_opts lopts = {0};
	struct lode_server *srv = NULL;
	struct lode_mds_link *link = NULL;
	struct lode_oss_scrub *scrub = NULL;
	struct lode_objstore *st = NULL;
	struct lode_daemon_metrics *dm = NULL;
	static struct lode_oss oss;
	static struct lode_keyring keys;
	bool secure = false;
	const char *bound;
	uint8_t uuid[16];
	char why[256];
	sigset_t sigs;
	struct args a;
	int sig, err;

	/*
	 * Every read and write moves up to 4 MiB through a heap buffer. glibc serves blocks
	 * that large with a fresh mmap each time, so every request paid page faults and page
	 * zeroing (a quarter of the OSS's CPU on reads). Keep them on the heap, reused.
	 */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);

	parse_args(argc, argv, &a);
	lode_log_init(PROG, a.level);
	err = lode_daemon_keys(PROG, a.key_file, a.insecure, &keys, &secure);
	if (err)
		return err;

	/* Every thread started from here on inherits the mask, so only sigwait() below
	 * sees SIGTERM/SIGINT. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	err = lode_make_dirs(a.data, 0755);
	if (err) {
		LODE_ERR("creating %s: %s", a.data, strerror(-err));
		return 1;
	}
	lode_raise_fd_limit();
	err = lode_lock_data_dir(a.data, PROG, why, sizeof(why));
	if (err) {
		LODE_ERR("%s", why);
		return 1;
	}
	err = lode_objstore_open(&st, a.data);
	if (err) {
		LODE_ERR("opening the object store in %s: %s", a.data, strerror(-err));
		return 1;
	}
	if (lode_objstore_set_direct_reads(st, !a.no_direct_reads))
		LODE_INFO("direct reads: on (large ranges nobody has cached are read past the "
			  "page cache)");
	else
		LODE_INFO("direct reads: off (%s)",
			  a.no_direct_reads ? "--direct-reads off"
					    : "this kernel cannot say what is cached: no "
					      "cachestat(2) before Linux 6.5");
	err = lode_oss_uuid_load(a.data, uuid);
	if (err) {
		LODE_ERR("%s/oss.uuid: %s", a.data, strerror(-err));
		goto out_store;
	}
	lode_oss_init(&oss, st);
	oss.keys = secure ? &keys : NULL;
	err = lode_oss_scrub_create(&scrub, st, &oss, a.mds, a.data);
	if (err) {
		LODE_ERR("preparing the scrub: %s", strerror(-err));
		goto out_store;
	}
	oss.scrub = scrub;
	oss.hops_checked = secure; /* chained requests go only to targets the MDS lists */
	sopts.keys = oss.keys;
	memcpy(sopts.listen, a.listen, sizeof(a.listen));
	sopts.threads = a.threads;
	sopts.ops = &lode_oss_server_ops;
	sopts.ctx = &oss;
	err = lode_server_start(&srv, &sopts);
	if (err) {
		LODE_ERR("listening on %s%s: %s", a.listen[0], a.nlisten > 1 ? " and others" : "",
			 strerror(-err));
		goto out_oss;
	}
	for (unsigned i = 0; i < a.nlisten; i++)
		LODE_INFO("listening on %s", lode_server_address(srv, i));
	bound = lode_server_address(srv, 0); /* clients are told the first, unless --advertise */
	if (!a.advertise && !strncmp(bound, "tcp://0.0.0.0:", 14))
		LODE_WARN("advertising %s to clients: give --advertise to name a reachable host",
			  bound);

	lopts.mds_addr = a.mds;
	lopts.advertise = a.advertise ? a.advertise : bound;
	lopts.data_dir = a.data;
	lopts.uuid = uuid;
	lopts.st = st;
	lopts.oss = &oss;
	lopts.capacity = a.capacity;
	lopts.reserve = a.reserve;
	if (a.metrics) {
		err = lode_daemon_metrics_start(&dm, PROG, a.metrics, a.metrics_port_file, srv,
						lode_oss_metrics_collect, &oss);
		if (err)
			goto out_server;
	}
	err = lode_mds_link_start(&link, &lopts);
	if (err) {
		LODE_ERR("starting the MDS link to %s: %s", a.mds, strerror(-err));
		goto out_server;
	}
	if (a.port_file) {
		err = lode_write_port_file(a.port_file, bound);
		if (err) {
			LODE_ERR("writing %s: %s", a.port_file, strerror(-err));
			goto out_link;
		}
	}

	do {
		err = sigwait(&sigs, &sig);
	} while (err == EINTR);
	LODE_INFO("stopping on signal %d", err ? 0 : sig);
	err = 0;

out_link:
	lode_mds_link_stop(link);
out_server:
	lode_daemon_metrics_stop(dm);
	lode_server_stop(srv);
out_oss:
	lode_oss_scrub_destroy(scrub); /* after the server: no OBJ_SCRUB can start one now */
	lode_oss_fini(&oss);
out_store:
	lode_objstore_close(st);
	return err ? 1 : 0;
}
