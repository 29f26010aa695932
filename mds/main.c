/* SPDX-License-Identifier: MIT */
/*
 * lode-mds: the metadata server daemon.
 *
 *   lode-mds --data DIR --listen tcp://HOST:PORT [--threads N] [--log-level LEVEL]
 *            [--port-file FILE] [--target-timeout MS] [--orphan-grace SECONDS]
 *            [--cap-lifetime SECONDS] [--lease SECONDS]
 *            (--key FILE | --insecure)
 *   lode-mds --config FILE [options that override the file's]
 *            [--metrics HOST:PORT [--metrics-port-file FILE]]
 *
 * Signals: SIGTERM and SIGINT are blocked in every thread and taken by sigwait() in the
 * main thread, which then stops the server (no new requests), drains the writer (every
 * queued mutation is committed or failed) and closes the LMDB environment.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <limits.h>
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
#include "identity.h"
#include "log.h"
#include "server.h"
#include "store.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: lode-mds --data DIR --listen tcp://HOST:PORT [options]\n"
		"\n"
		"  --config FILE       read options from FILE, `key = value` lines with the long\n"
		"                      option names as keys (docs/config.md); options given\n"
		"                      here override the file's\n"
		"  --data DIR          LMDB data directory (created if missing)\n"
		"  --listen ADDR       address to serve, tcp://HOST:PORT or rdma://HOST:PORT\n"
		"                      (port 0: any free port; repeat to serve on up to 3)\n"
		"  --key FILE          the cluster key (`lodectl key generate FILE`): every\n"
		"                      connection must prove it, and its role (client, target,\n"
		"                      admin) bounds what it may ask\n"
		"  --insecure          serve without authentication: anyone may ask anything\n"
		"                      (one of --key and --insecure is required)\n"
		"  --client-group NAME:RULE\n"
		"                      what a node holding client group NAME's key (`lodectl key\n"
		"                      derive --group NAME`) may claim: squash=root, squash=all,\n"
		"                      or uids=LO-HI[,gids=LO-HI][,squash=root]; repeat per group\n"
		"                      (docs/security.md)\n"
		"  --threads N         worker threads (default 4)\n"
		"  --log-level LEVEL   err, warn, info (default) or debug\n"
		"  --port-file FILE    write the bound address into FILE once listening\n"
		"  --target-timeout MS a storage target silent for MS is DOWN (default 30000);\n"
		"                      one silent past 5 s is late: still used, and probed\n"
		"  --orphan-grace S    objects of deleted files are handed to their targets for\n"
		"                      deletion after S seconds (default 60)\n"
		"  --cap-lifetime S    capabilities for file data expire after S seconds\n"
		"                      (default 3600); clients renew them before. Write\n"
		"                      rights last three quarters of a lease at most\n"
		"  --lease S           a writer that leaves its write lease unrenewed for S\n"
		"                      seconds (it renews as it writes) may lose it to a repair\n"
		"                      or a move (default 60)\n"
		"  --metrics HOST:PORT serve Prometheus metrics on http://HOST:PORT/metrics\n"
		"                      (off by default; port 0: any free port)\n"
		"  --metrics-port-file FILE\n"
		"                      write the metrics HOST:PORT into FILE once listening\n"
		"  --format            format the store even though it holds data but no format\n"
		"                      version (a damaged store: its namespace is lost)\n"
		"  --restore FILE      replace the store in --data with the backup FILE\n"
		"                      (`lodectl mds backup`) and exit; the MDS must be stopped.\n"
		"                      Then start it and run `lodectl fsck --repair\n"
		"                      --remove-lost`\n"
		"  --version           print the version and exit\n"
		"  --help              print this help and exit\n");
}

static int __attribute__((format(printf, 1, 2))) bad_args(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "lode-mds: %s", lode_conf_where_getopt());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	return 2;
}

/* A decimal number in [min, max]. */
static int parse_num(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || n < min || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

static int parse_level(const char *s, enum lode_log_level *out)
{
	static const char *const names[] = {"err", "warn", "info", "debug"};

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i])) {
			*out = (enum lode_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* lode-mds --data DIR --restore FILE: offline, under the data directory's lock. */
static int do_restore(const char *data, const char *file)
{
	struct lode_restore_info ri;
	char why[512];
	int rc;

	lode_log_init("lode-mds", LODE_LOG_INFO);
	rc = lode_make_dirs(data, 0700);
	if (rc) {
		LODE_ERR("cannot create data directory %s: %s", data, strerror(-rc));
		return 1;
	}
	rc = lode_lock_data_dir(data, "lode-mds", why, sizeof(why));
	if (rc) {
		LODE_ERR("%s (stop the MDS before a restore)", why);
		return 1;
	}
	rc = lode_store_restore(data, file, &ri, why, sizeof(why));
	if (rc) {
		LODE_ERR("restore: %s", why);
		return 1;
	}
	LODE_INFO(
	    "restored %s into %s (cluster id %016llx); inode numbers go on from %llu (the "
	    "backup's: %llu; %s); start lode-mds, then run `lodectl fsck --repair --remove-lost`",
	    file, data, (unsigned long long)ri.cluster_id, (unsigned long long)ri.next_ino,
	    (unsigned long long)ri.backup_next_ino,
	    ri.had_store ? "the replaced store's count" : "no store to ask: a gap of 2^32");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"data", required_argument, NULL, 'd'},
	    {"listen", required_argument, NULL, 'l'},
	    {"threads", required_argument, NULL, 't'},
	    {"log-level", required_argument, NULL, 'L'},
	    {"port-file", required_argument, NULL, 'p'},
	    {"target-timeout", required_argument, NULL, 'T'},
	    {"orphan-grace", required_argument, NULL, 'G'},
	    {"cap-lifetime", required_argument, NULL, 'c'},
	    {"lease", required_argument, NULL, 'e'},
	    {"format", no_argument, NULL, 'F'},
	    {"restore", required_argument, NULL, 'R'},
	    {"config", required_argument, NULL, 'C'},
	    {"metrics", required_argument, NULL, 'M'},
	    {"metrics-port-file", required_argument, NULL, 'P'},
	    {"key", required_argument, NULL, 'K'},
	    {"insecure", no_argument, NULL, 'I'},
	    {"client-group", required_argument, NULL, 'g'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	const char *data = NULL, *listen[4] = {0}, *port_file = NULL;
	const char *metrics = NULL, *metrics_port_file = NULL, *key_file = NULL, *restore = NULL;
	struct lode_daemon_metrics *dm = NULL;
	static struct lode_keyring keys;
	static struct lode_identity identity;
	bool insecure = false, secure = false;
	unsigned nlisten = 0;
	enum lode_log_level level = LODE_LOG_INFO;
	struct lode_mds_opts mopts = {.orphan_grace_ns = -1};
	struct lode_server_ops ops = {.on_request = lode_mds_on_request,
				      .on_conn_error = lode_log_conn_error,
				      .check_header = lode_log_check_header,
				      .on_auth_fail = lode_log_auth_fail};
	struct lode_server_opts sopts = {.threads = 4, .ops = &ops};
	struct lode_server *srv;
	struct lode_mds mds = {0};
	struct lode_addr addr;
	unsigned long num;
	char why[256];
	sigset_t sigs;
	int opt, sig, rc;

	if (lode_conf_load(longopts, &argc, &argv, why, sizeof(why)))
		return bad_args("%s", why);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			data = optarg;
			break;
		case 'l':
			if (nlisten == 3)
				return bad_args("at most 3 --listen addresses");
			if (lode_addr_parse(optarg, &addr))
				return bad_args("cannot use '%s' as a listen address "
						"(tcp://HOST:PORT or rdma://HOST:PORT)",
						optarg);
			listen[nlisten++] = optarg;
			break;
		case 't':
			if (parse_num(optarg, 1, 256, &num))
				return bad_args("--threads wants a number from 1 to 256, not '%s'",
						optarg);
			sopts.threads = (unsigned)num;
			break;
		case 'T':
			if (parse_num(optarg, 1, 3600000, &num))
				return bad_args("--target-timeout wants milliseconds, not '%s'",
						optarg);
			mopts.down_ms = (unsigned)num;
			break;
		case 'G':
			if (parse_num(optarg, 0, 30 * 86400, &num))
				return bad_args("--orphan-grace wants seconds, not '%s'", optarg);
			mopts.orphan_grace_ns = (int64_t)num * 1000000000;
			break;
		case 'c':
			if (parse_num(optarg, 1, 30 * 86400, &num))
				return bad_args("--cap-lifetime wants seconds, not '%s'", optarg);
			mds.cap_lifetime_ms = (unsigned)num * 1000;
			break;
		case 'e':
			if (parse_num(optarg, 2, 86400, &num))
				return bad_args("--lease wants seconds from 2 to 86400, not '%s'",
						optarg);
			mopts.lease_ms = (unsigned)num * 1000;
			break;
		case 'F':
			mopts.format = 1;
			break;
		case 'R':
			restore = optarg;
			break;
		case 'C': /* read by lode_conf_load() */
			break;
		case 'L':
			if (parse_level(optarg, &level))
				return bad_args("unknown log level '%s'", optarg);
			break;
		case 'p':
			port_file = optarg;
			break;
		case 'M':
			metrics = optarg;
			break;
		case 'P':
			metrics_port_file = optarg;
			break;
		case 'K':
			key_file = optarg;
			break;
		case 'I':
			insecure = true;
			break;
		case 'g':
			if (lode_identity_add(&identity, optarg, why, sizeof(why)))
				return bad_args("%s", why);
			mopts.identity = &identity;
			break;
		case 'V':
			printf("lode-mds %s\n", LODE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return bad_args("unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad_args("unexpected argument '%s'", argv[optind]);
	if (!data)
		return bad_args("missing --data DIR");
	if (restore)
		return do_restore(data, restore);
	if (!nlisten)
		return bad_args("missing --listen tcp://HOST:PORT");
	if (metrics_port_file && !metrics)
		return bad_args("--metrics-port-file needs --metrics HOST:PORT");

	lode_log_init("lode-mds", level);
	rc = lode_daemon_keys("lode-mds", key_file, insecure, &keys, &secure);
	if (rc)
		return rc;
	rc = lode_make_dirs(data, 0700);
	if (rc) {
		LODE_ERR("cannot create data directory %s: %s", data, strerror(-rc));
		return 1;
	}
	lode_raise_fd_limit();
	rc = lode_lock_data_dir(data, "lode-mds", why, sizeof(why));
	if (rc) {
		LODE_ERR("%s", why);
		return 1;
	}

	/* block the stop signals before any thread starts, so only sigwait() sees them */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	mopts.dir = data;
	mopts.cap_lifetime_ms = mds.cap_lifetime_ms;
	mopts.cap_key = secure ? keys.cap_key : NULL;
	mopts.keys = secure ? &keys : NULL;
	rc = lode_mds_init(&mds, &mopts, why, sizeof(why));
	if (rc) {
		LODE_ERR("%s", why[0] ? why : strerror(-rc));
		return 1;
	}
	LODE_INFO("data in %s, cluster id %016llx", data, (unsigned long long)mds.cluster_id);

	memcpy(sopts.listen, listen, sizeof(listen));
	sopts.ctx = &mds;
	sopts.keys = secure ? &keys : NULL;
	rc = lode_server_start(&srv, &sopts);
	if (rc) {
		LODE_ERR("cannot listen on %s%s: %s", listen[0], nlisten > 1 ? " and others" : "",
			 strerror(-rc));
		goto fini;
	}
	for (unsigned i = 0; i < nlisten; i++)
		LODE_INFO("listening on %s", lode_server_address(srv, i));
	if (metrics) {
		rc = lode_daemon_metrics_start(&dm, "lode-mds", metrics, metrics_port_file, srv,
					       lode_mds_metrics_collect, &mds);
		if (rc)
			goto stop_server;
	}
	if (port_file) {
		rc = lode_write_port_file(port_file, lode_server_address(srv, 0));
		if (rc) {
			LODE_ERR("cannot write %s: %s", port_file, strerror(-rc));
			goto stop_server;
		}
	}

	while (sigwait(&sigs, &sig) != 0)
		;
	LODE_INFO("%s: stopping", strsignal(sig));
	rc = 0;

stop_server:
	lode_daemon_metrics_stop(dm);
	lode_server_stop(srv);
fini:
	lode_mds_fini(&mds);
	return rc ? 1 : 0;
}
