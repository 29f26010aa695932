/* SPDX-License-Identifier: MIT */
/*
 * lodectl: the admin and user command line of Lode.
 *
 *   lodectl [--mds ADDR] [--timeout MS] [--json] [--quiet] COMMAND [ARGS]
 *
 * One row per command in commands[] below: its name, handler, summary and help, and
 * whether it talks to the cluster. A handler lives in the file of its group (files.c,
 * namespace.c, admin.c, local.c); lodectl.h says how to add one. Exit status: 0 done, 1
 * failed, 2 bad usage. docs/lodectl.md documents every command and its JSON fields.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "config.h"
#include "lodectl.h"

static int cmd_help(struct lodectl *ctl, int argc, char **argv);
static bool is_group(const char *word);

static const struct lodectl_cmd commands[] = {
    {"status", cmd_status, "the MDS and every OSS: state, capacity, last heartbeat",
     "status\n  The MDS and every storage target it knows: state, address, capacity, objects,\n"
     "  and how long ago it was last heard from (\"never\" since the MDS started).",
     true},
    {"df", cmd_df, "space and files of the whole cluster",
     "df\n  Bytes total, used and free of the whole cluster, and the files in use.", true},
    {"put", cmd_put, "copy local files into the cluster",
     "put [OPTIONS] LOCAL REMOTE\n"
     "  Copies the file LOCAL (- for stdin) to REMOTE, written under a temporary name and\n"
     "  renamed over REMOTE once complete. A REMOTE that is a directory (or ends in /)\n"
     "  receives LOCAL's name.\n"
     "  -r, --recursive       LOCAL is a directory: REMOTE becomes a copy of it (created\n"
     "                        if missing), files copied in parallel\n"
     "  -j, --jobs N          files copied at once with -r (default 4)\n"
     "  --stripe-size BYTES   a multiple of 64K (default: the directory's layout)\n"
     "  --stripe-count N      objects each file is striped over\n"
     "  --mirrors N           copies of each object",
     true},
    {"get", cmd_get, "copy files out of the cluster",
     "get [OPTIONS] REMOTE LOCAL\n"
     "  Copies REMOTE to the local file LOCAL (- for stdout), written under a temporary\n"
     "  name and renamed over LOCAL once complete: a failed get leaves LOCAL as it was. A\n"
     "  LOCAL that is a directory receives REMOTE's name.\n"
     "  -r, --recursive       REMOTE is a directory: LOCAL becomes a copy of it\n"
     "  -j, --jobs N          files copied at once with -r (default 4)",
     true},
    {"load", cmd_load, "load files or a model directory into host or GPU memory",
     "load [OPTIONS] PATH...\n"
     "  Loads files, or every file under a directory, into memory the way an inference\n"
     "  server does, and prints files, tensors, bytes, seconds and GB/s. A *.safetensors\n"
     "  file is parsed and checked first (every tensor inside the file, sizes matching\n"
     "  shapes, no overlap) and its data lands in one allocation; other files load whole.\n"
     "  --to host           host memory (default): pieces land in place, verified\n"
     "  --to cuda:N         GPU N: pinned buffers, asynchronous copies on several streams\n"
     "  --to staged         the GPU pipeline with host memory behind it (no GPU needed)\n"
     "  --verify            compare what was loaded with a second read (back from the GPU)",
     true},
    {"ls", cmd_ls, "list a directory",
     "ls [-l] [PATH]\n  The entries of the directory PATH (default /).\n"
     "  -l, --long            mode, links, owner, size, modification time",
     true},
    {"stat", cmd_stat, "attributes, layout and degraded copies of a path",
     "stat PATH\n  Attributes of PATH (a symlink is described, not followed); for a file its\n"
     "  layout, the target of every copy and which copies are degraded.",
     true},
    {"rm", cmd_rm, "remove files (and directories with -r)",
     "rm [-r] PATH\n  Removes the file (or symlink) PATH.\n"
     "  -r, --recursive       PATH may be a directory: remove it and everything under it",
     true},
    {"mkdir", cmd_mkdir, "create a directory",
     "mkdir [-p] PATH\n  Creates the directory PATH.\n"
     "  -p, --parents         create missing parents too; no error if PATH exists",
     true},
    {"rmdir", cmd_rmdir, "remove an empty directory",
     "rmdir PATH\n  Removes the empty directory PATH.", true},
    {"mv", cmd_mv, "rename atomically",
     "mv FROM TO\n  Renames FROM to TO atomically (replacing TO if it exists).\n"
     "  -n, --no-clobber      fail if TO exists",
     true},
    {"ln", cmd_ln, "create a hard or symbolic link",
     "ln [-s] TARGET PATH\n  Makes PATH another name of the file TARGET.\n"
     "  -s, --symbolic        make PATH a symlink holding TARGET (as given) instead",
     true},
    {"repair", cmd_repair, "re-replicate a file's degraded copies",
     "repair PATH\n  Copies every degraded copy of the file PATH back from a good copy (onto its\n"
     "  own target when it is up again, else onto another). Exit status 1 when some copy\n"
     "  stays degraded.",
     true},
    {"fsck", cmd_fsck, "check the whole cluster online (and --repair it)",
     "fsck [--repair [--remove-lost]]\n"
     "  Checks the namespace inside the MDS (entries lead to inodes, link counts, one parent\n"
     "  and no cycle per directory, the readdir cookie index, orphan records, layouts name\n"
     "  known targets, distinct per stripe, degraded masks within the layout), then every\n"
     "  OSS's objects against the layouts: strays (no file names them), missing and short\n"
     "  objects, stripes with fewer good copies than the layout asks. Online: clients go on.\n"
     "  --repair              fix what can be: link counts, dangling entries (removed),\n"
     "                        inodes no entry leads to (linked as /lost+found.INO), copies\n"
     "                        re-replicated from a good one, strays removed\n"
     "  --remove-lost         with --repair: remove files a stripe of which has no good\n"
     "                        copy left (their data is lost; after a restore from a\n"
     "                        backup: the files deleted since)\n"
     "  Exit status: 0 clean, 1 errors found and all fixed, 4 errors left, 8 operational\n"
     "  error (the MDS or an OSS unreachable, a target down), 2 bad usage.",
     true},
    {"scrub", cmd_scrub, "verify every chunk at rest on the OSSes (and --repair bad copies)",
     "scrub [--repair] [--rate MIB_S] [--target ID]\n"
     "  Each OSS (or only target ID) reads its objects from its own disk and verifies every\n"
     "  chunk against its stored checksum, online: clients go on, at most MIB_S MiB/s per\n"
     "  target. Each bad copy is reported to the MDS, which marks it degraded (readers then\n"
     "  use the other copies), and listed here. Progress and the last result per target\n"
     "  also show in `lodectl status`.\n"
     "  --repair              then rewrite the bad copies from a good one (lodectl repair)\n"
     "  --rate MIB_S          read at most this many MiB/s per target (default 64; 0: no\n"
     "                        limit; at most 1048576)\n"
     "  --target ID           scrub only that target\n"
     "  Interrupted, it cancels the scrubs it started.\n"
     "  Exit status: 0 clean, 1 bad copies found and all repaired, 4 bad copies left, 8\n"
     "  operational error (the MDS or an OSS unreachable, a target down, a scrub failed),\n"
     "  2 bad usage.",
     true},
    {"mds backup", cmd_mds_backup, "an online copy of the namespace (restore: docs/lodectl.md)",
     "mds backup FILE\n"
     "  Copies the MDS's namespace into FILE while clients go on: a compacted copy of its\n"
     "  store as of one moment, sent over this connection (lodectl may run anywhere),\n"
     "  checked against the MDS's BLAKE2b-256 of it, written durably under a temporary\n"
     "  name and renamed to FILE. Needs the admin key. Restore, offline:\n"
     "  `lode-mds --data DIR --restore FILE`, start it, then `lodectl fsck --repair`.",
     true},
    {"drain", cmd_drain, "move every copy off a target, so that it can be removed",
     "drain TARGET [--wait S] [--rate MB/s]\n"
     "  Marks the target draining (no new files or copies go to it; it is still read\n"
     "  from), then moves every copy it holds to the least used target that may take it,\n"
     "  each safely: copied, verified, switched at the MDS, the old object deleted by its\n"
     "  target after the orphan grace. A file being written is tried again once a second\n"
     "  until its writer closes it. Run again after an interruption: it resumes.\n"
     "  --wait S              how long to keep trying files held by a writer (300)\n"
     "  --rate MB/s           copy at most this fast on average\n"
     "  Exit status 1 when copies are left on the target.",
     true},
    {"target list", cmd_target_list, "every target: state, use and objects",
     "target list\n  Every storage target: state (up, down, draining, removed), address,\n"
     "  capacity, bytes used and objects, as the targets last reported.",
     true},
    {"target remove", cmd_target_remove, "remove a drained target from the cluster",
     "target remove TARGET\n  Marks a drained target removed. Refused while any layout\n"
     "  names it or objects wait to be deleted from it (drain it, and let the orphan\n"
     "  grace pass).",
     true},
    {"target undrain", cmd_target_undrain, "let a draining target take new copies again",
     "target undrain TARGET\n  Makes a draining (or removed) target active again.", true},
    {"rebalance", cmd_rebalance, "even out the targets' use by moving copies",
     "rebalance [--dry-run] [--rate MB/s] [--wait S]\n"
     "  Moves copies from the fullest targets to the emptiest, until every active target's\n"
     "  used fraction is within a few points of the mean (5 at most), moving only bytes\n"
     "  above the mean. Use is counted from the layouts; capacity is what each target\n"
     "  reports. Each move is drain's safe move; a run killed at any point is completed by\n"
     "  the next.\n"
     "  -n, --dry-run         print the plan, move nothing\n"
     "  --rate MB/s           copy at most this fast on average\n"
     "  --wait S              how long to keep trying files held by a writer (300)",
     true},
    {"local up", cmd_local_up, "start a local cluster on loopback (prints the MDS)",
     "local up DIR [--oss N] [--orphan-grace S] [--capacity BYTES] [--cap-lifetime S]\n"
     "       [--lease S] [--insecure]\n"
     "  Starts what is not running of a cluster on 127.0.0.1 with its data under DIR and\n"
     "  prints the MDS address once every OSS has registered. Options given once stay\n"
     "  with DIR. LODE_LOCAL_LISTEN=rdma://HOST starts a new cluster on that transport.\n"
     "  The first start makes DIR/cluster.key, which every daemon is given and clients\n"
     "  prove (export LODE_KEY_FILE=DIR/cluster.key, printed on stderr); with --insecure\n"
     "  the cluster checks no key.\n"
     "  --oss N               object servers (1..64; default 3, or DIR's count)\n"
     "  --orphan-grace S      the MDS's --orphan-grace\n"
     "  --capacity BYTES      the size each OSS declares (lode-oss --capacity; K, M, G):\n"
     "                        on one machine every OSS shares a disk, this gives each a\n"
     "                        size of its own (kept with each OSS's directory)\n"
     "  --cap-lifetime S      the MDS's --cap-lifetime (how long a data capability lasts)\n"
     "  --lease S             the MDS's --lease (how long a writer's lease lasts unrenewed)",
     false},
    {"local add-oss", cmd_local_add_oss, "start one more OSS in a running local cluster",
     "local add-oss DIR [--capacity BYTES]\n"
     "  Starts one more OSS (DIR/ossN, the next number) for the running local cluster in\n"
     "  DIR, waits until the MDS sees it up and prints its name and address. `local up`\n"
     "  restarts it and `local down` stops it with the others.\n"
     "  --capacity BYTES      the size it declares (lode-oss --capacity)",
     false},
    {"local down", cmd_local_down, "stop a local cluster",
     "local down DIR\n  Stops every daemon of the local cluster in DIR (SIGTERM, then SIGKILL).",
     false},
    {"local kill", cmd_local_kill, "stop one daemon of a local cluster",
     "local kill DIR NAME [-9]\n  Stops one daemon (mds, oss0, oss1, ...) of the local cluster "
     "in DIR.\n  -9                    with SIGKILL, at once (else SIGTERM)",
     false},
    {"key generate", cmd_key_generate, "make a new cluster key file",
     "key generate FILE\n  Writes a new random cluster key to FILE (mode 0600; an existing file "
     "is\n"
     "  never overwritten). Every daemon and client of the cluster proves it\n"
     "  (docs/security.md).",
     false},
    {"key derive", cmd_key_derive, "make one role's key file from the cluster key",
     "key derive --role ROLE CLUSTER_KEY OUT\n"
     "       key derive --group NAME CLUSTER_KEY OUT\n"
     "  Writes ROLE's key (client, target or admin), derived from the cluster key file\n"
     "  CLUSTER_KEY, to OUT (mode 0600): a node holding it connects in that role only.\n"
     "  With --group, client group NAME's key: a client whose callers' identity the MDS\n"
     "  binds by its --client-group NAME rule (docs/security.md).\n"
     "  --role ROLE           client, target or admin\n"
     "  --group NAME          a client group (1 to 31 of a-z, 0-9, '_' and '-')",
     false},
    {"help", cmd_help, "help on a command", "help [COMMAND]\n  lodectl --help, or COMMAND's help.",
     false},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* Whether word names a group of commands ("local" of "local up"). */
static bool is_group(const char *word)
{
	size_t len = strlen(word);

	for (size_t k = 0; k < NCOMMANDS; k++)
		if (!strncmp(commands[k].name, word, len) && commands[k].name[len] == ' ')
			return true;
	return false;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: lodectl [--mds tcp://HOST:PORT] [--timeout MS] [--key FILE | --insecure]\n"
		"               [--json] [--quiet] COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
		"\noptions (before or after COMMAND):\n"
		"  --mds ADDR    the MDS (tcp://HOST:PORT, rdma://HOST:PORT or HOST:PORT); default "
		"$LODE_MDS\n"
		"  --timeout MS  how long a request waits for an unreachable server (1..3600000;\n"
		"                default 30000)\n"
		"  --key FILE    the key proved to the cluster (a cluster or role key file);\n"
		"                default $LODE_KEY_FILE (docs/security.md)\n"
		"  --insecure    prove no key (a cluster started --insecure)\n"
		"  --json        one JSON document on stdout, errors included (docs/lodectl.md)\n"
		"  -q, --quiet   no progress and no summary lines\n"
		"  --version     lodectl's version\n"
		"\n`lodectl COMMAND --help` describes a command. Exit status: 0 done, 1 failed,\n"
		"2 bad usage.\n");
}

static const struct lodectl_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static int cmd_help(struct lodectl *ctl, int argc, char **argv)
{
	const struct lodectl_cmd *cmd;
	char *pos[2], name[64];
	int n = lodectl_parse(ctl, argc, argv, NULL, 0, 2, pos);

	if (n < 0)
		return ctl->exit;
	if (n == 0 && ctl->json) {
		json_object *list = json_object_new_array();

		for (size_t i = 0; i < NCOMMANDS; i++) {
			json_object *o = json_object_new_object();

			json_add_str(o, "name", commands[i].name);
			json_add_str(o, "summary", commands[i].summary);
			json_add_str(o, "usage", commands[i].usage);
			json_object_array_add(list, o);
		}
		json_object_object_add(ctl->out, "commands", list);
		return 0;
	}
	if (n == 0) {
		usage(stdout);
		return 0;
	}
	snprintf(name, sizeof(name), "%s%s%s", pos[0], n > 1 ? " " : "", n > 1 ? pos[1] : "");
	cmd = find_cmd(name);
	if (!cmd)
		return lodectl_usage_error(ctl, "no command '%s'", name);
	if (ctl->json) {
		json_add_str(ctl->out, "name", cmd->name);
		json_add_str(ctl->out, "summary", cmd->summary);
		json_add_str(ctl->out, "usage", cmd->usage);
	} else {
		printf("usage: lodectl %s\n", cmd->usage);
	}
	return 0;
}

/* Why addr cannot name a server, in words, or NULL when it can (a resolvable HOST:PORT). */
static const char *address_problem(const char *addr, char *why, size_t size)
{
	const char *rest = addr, *colon, *sep = strstr(addr, "://");
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
	char host[256];
	uint64_t port;
	size_t hlen;

	if (sep) {
		if (strncmp(addr, "tcp://", 6) && strncmp(addr, "rdma://", 7)) {
			snprintf(why, size, "unknown transport '%.*s://' (tcp:// or rdma://)",
				 (int)(sep - addr), addr);
			return why;
		}
		rest = sep + 3;
	}
	colon = strrchr(rest, ':');
	if (!colon || colon == rest) {
		snprintf(why, size, "expected HOST:PORT");
		return why;
	}
	if (lodectl_parse_number(colon + 1, false, 1, 65535, &port)) {
		snprintf(why, size, "the port '%s' is not a number in 1..65535", colon + 1);
		return why;
	}
	hlen = (size_t)(colon - rest);
	if (hlen >= sizeof(host)) {
		snprintf(why, size, "the host name is too long");
		return why;
	}
	memcpy(host, rest, hlen);
	host[hlen] = 0;
	if (getaddrinfo(host, NULL, &hints, &res)) {
		snprintf(why, size, "cannot resolve the host '%s'", host);
		return why;
	}
	freeaddrinfo(res);
	return NULL;
}

int lodectl_connect(struct lodectl *ctl)
{
	struct lode_client_opts copts = {.size = sizeof(copts), .use_process_creds = 1};
	sigset_t block, old;
	char why[320];
	uint32_t role;
	int rc;

	if (!ctl->mds_addr || !ctl->mds_addr[0])
		return lodectl_usage_error(ctl, "no MDS address: give --mds or set LODE_MDS");
	if (address_problem(ctl->mds_addr, why, sizeof(why)))
		return lodectl_fail_as(ctl, -EINVAL, "cannot parse address '%s': %s", ctl->mds_addr,
				       why);
	copts.timeout_ms = ctl->timeout_ms;
	copts.key_file = ctl->key_file;
	/* liblode's threads start here: with SIGINT and co blocked, so that they never take a
	 * signal meant to interrupt a copy (files.c) away from the thread copying */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	rc = lode_connect(ctl->mds_addr, &copts, &ctl->client);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!rc)
		return 0;
	if (rc == -EPROTO) {
		int prc = lode_probe(ctl->mds_addr, ctl->key_file, ctl->timeout_ms, &role);

		if (!prc && role == LODE_SERVER_OSS)
			return lodectl_fail_as(ctl, rc,
					       "%s is not a Lode MDS (it answered as a Lode OSS)",
					       ctl->mds_addr);
		if (!prc)
			return lodectl_fail_as(
			    ctl, rc,
			    "%s is not a Lode MDS (it answered as a Lode server of "
			    "role %u)",
			    ctl->mds_addr, role);
		return lodectl_fail_as(ctl, rc,
				       "%s is not a Lode MDS (what answers there does not speak "
				       "Lode's protocol)",
				       ctl->mds_addr);
	}
	return lodectl_fail_as(ctl, rc, "cannot reach the MDS at %s: %s", ctl->mds_addr,
			       lode_auth_explain(rc, ctl->key_file, why, sizeof(why)));
}

/* Whether argv (up to a "--") asks for JSON: known before any error must be reported. */
static bool wants_json(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	struct lodectl ctl = {.mds_addr = getenv("LODE_MDS")};
	char name[64];
	uint64_t v;
	int i, rc;

	ctl.json = wants_json(argc, argv);
	ctl.out = json_object_new_object();
	/* the options before the command */
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *val = strchr(a, '=');
		size_t len = val ? (size_t)(val - a) : strlen(a);

		if (val)
			val++;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			rc = 0;
			goto out;
		} else if (!strcmp(a, "--version")) {
			if (ctl.json)
				json_add_str(ctl.out, "version", LODE_VERSION);
			else
				printf("lodectl %s\n", LODE_VERSION);
			rc = 0;
			goto out;
		} else if (!strcmp(a, "--json")) {
			ctl.json = true;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			ctl.quiet = true;
		} else if (!strcmp(a, "--insecure")) {
			ctl.key_file = "";
		} else if (len == 5 && !strncmp(a, "--key", 5)) {
			if (!val && i + 1 >= argc) {
				rc = lodectl_usage_error(&ctl, "--key needs a file");
				goto out;
			}
			ctl.key_file = val ? val : argv[++i];
		} else if ((len == 5 && !strncmp(a, "--mds", 5)) ||
			   (len == 9 && !strncmp(a, "--timeout", 9))) {
			if (!val && i + 1 >= argc) {
				rc = lodectl_usage_error(&ctl, "%.*s needs a value", (int)len, a);
				goto out;
			}
			if (!val)
				val = argv[++i];
			if (len == 5) {
				ctl.mds_addr = val;
			} else if (lodectl_parse_number(val, false, 1, 3600000, &v)) {
				rc = lodectl_usage_error(
				    &ctl,
				    "--timeout: '%s' is not a number of milliseconds in "
				    "1..3600000",
				    val);
				goto out;
			} else {
				ctl.timeout_ms = (unsigned)v;
			}
		} else {
			rc = lodectl_usage_error(&ctl, "unknown option '%s'", a);
			goto out;
		}
	}
	if (i >= argc) {
		rc = lodectl_usage_error(&ctl, "no command");
		goto out;
	}
	snprintf(name, sizeof(name), "%s", argv[i]);
	if (is_group(argv[i])) {
		/* a group: "local up", "key generate", "mds backup" and co; the group alone, or
		 * with --help, lists them */
		const char *group = argv[i];
		size_t glen = strlen(group);

		if (i + 1 >= argc || argv[i + 1][0] == '-') {
			bool help = i + 1 < argc &&
				    (!strcmp(argv[i + 1], "--help") || !strcmp(argv[i + 1], "-h"));
			char subs[128] = "";

			for (size_t k = 0; k < NCOMMANDS; k++) {
				if (strncmp(commands[k].name, group, glen) ||
				    commands[k].name[glen] != ' ')
					continue;
				if (help && !ctl.json)
					printf("usage: lodectl %s\n\n", commands[k].usage);
				snprintf(subs + strlen(subs), sizeof(subs) - strlen(subs), "%s%s",
					 subs[0] ? ", " : "", commands[k].name + glen + 1);
			}
			rc = help ? 0
				  : lodectl_usage_error(&ctl, "%s wants one of: %s", group, subs);
			goto out;
		}
		snprintf(name, sizeof(name), "%s %s", group, argv[i + 1]);
		i++;
	}
	ctl.cmd = find_cmd(name);
	if (!ctl.cmd) {
		rc = lodectl_usage_error(&ctl, "unknown command '%s'", name);
		goto out;
	}
	json_add_str(ctl.out, "command", ctl.cmd->name);
	rc = ctl.cmd->run(&ctl, argc - i, argv + i);
out:
	if (rc && ctl.json && !ctl.failed)
		lodectl_fail(&ctl, 0, "failed");
	lodectl_json_print(&ctl);
	lode_disconnect(ctl.client);
	json_object_put(ctl.out);
	return rc;
}
