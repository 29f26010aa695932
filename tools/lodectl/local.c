/* SPDX-License-Identifier: MIT */
/* lodectl local up, down, kill: the command line of tools/local_cluster.c, a whole cluster
 * on loopback with its data in one directory (what the quick start and the tests use). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../local_cluster.h"
#include "lodectl.h"

/* Writes value into DIR/name: an MDS option remembered for restarts (local_cluster.c). */
static int remember(struct lodectl *ctl, const char *dir, const char *name, uint64_t value)
{
	char path[PATH_MAX], val[32];
	FILE *fp;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return lodectl_fail_as(ctl, -errno, "cannot create %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)value);
	fp = fopen(path, "w");
	if (!fp || fputs(val, fp) < 0 || fclose(fp))
		return lodectl_fail_as(ctl, -EIO, "cannot write %s", path);
	return 0;
}

int cmd_local_up(struct lodectl *ctl, int argc, char **argv)
{
	uint64_t noss = 0, capacity = 0;
	const char *grace = NULL;
	uint64_t cap_life = 0, lease = 0;
	const struct lodectl_opt opts[] = {
	    {"--oss", NULL, LODECTL_OPT_UINT, &noss, 1, 64},
	    {"--orphan-grace", NULL, LODECTL_OPT_STRING, &grace, 0, 0},
	    {"--capacity", NULL, LODECTL_OPT_SIZE, &capacity, 1, UINT64_MAX},
	    {"--cap-lifetime", NULL, LODECTL_OPT_UINT, &cap_life, 1, 30 * 86400},
	    {"--lease", NULL, LODECTL_OPT_UINT, &lease, 2, 86400},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	char *pos[1], mds[160], key[PATH_MAX], err[512] = "", cap[32];
	uint64_t g;
	int rc;

	if (lodectl_parse(ctl, argc, argv, opts, 1, 1, pos) < 0)
		return ctl->exit;
	if (grace && lodectl_parse_number(grace, false, 0, UINT32_MAX, &g))
		return lodectl_usage_error(ctl, "--orphan-grace: '%s' is not a number of seconds",
					   grace);
	/* the MDS's --cap-lifetime and --lease, remembered in DIR for restarts */
	if (cap_life && remember(ctl, pos[0], "cap-lifetime", cap_life))
		return ctl->exit;
	if (lease && remember(ctl, pos[0], "lease", lease))
		return ctl->exit;
	/* the common --insecure: a cluster that checks no key (remembered in DIR) */
	snprintf(cap, sizeof(cap), "%" PRIu64, capacity);
	rc = local_up(pos[0], (int)noss, grace, ctl->key_file && !ctl->key_file[0],
		      capacity ? cap : NULL, mds, sizeof(mds), key, sizeof(key), err, sizeof(err));
	if (rc)
		return lodectl_fail_as(ctl, rc, "%s", err);
	json_add_str(ctl->out, "dir", pos[0]);
	json_add_str(ctl->out, "mds", mds);
	if (key[0])
		json_add_str(ctl->out, "key_file", key);
	else
		json_add_null(ctl->out, "key_file");
	if (!ctl->json) {
		/* stdout is the address alone (scripts take it); how clients get in: stderr */
		if (key[0])
			fprintf(stderr,
				"lodectl: clients prove the cluster key: export "
				"LODE_KEY_FILE=%s\n",
				key);
		else
			fprintf(stderr, "lodectl: the cluster runs --insecure: it checks no key\n");
		printf("%s\n", mds);
	}
	return 0;
}

int cmd_local_add_oss(struct lodectl *ctl, int argc, char **argv)
{
	uint64_t capacity = 0;
	const struct lodectl_opt opts[] = {
	    {"--capacity", NULL, LODECTL_OPT_SIZE, &capacity, 1, UINT64_MAX},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	char *pos[1], addr[160], err[512] = "", cap[32], name[16];
	int rc, index = -1;

	if (lodectl_parse(ctl, argc, argv, opts, 1, 1, pos) < 0)
		return ctl->exit;
	snprintf(cap, sizeof(cap), "%" PRIu64, capacity);
	rc = local_add_oss(pos[0], capacity ? cap : NULL, addr, sizeof(addr), &index, err,
			   sizeof(err));
	if (rc)
		return lodectl_fail_as(ctl, rc, "%s", err);
	snprintf(name, sizeof(name), "oss%d", index);
	json_add_str(ctl->out, "dir", pos[0]);
	json_add_str(ctl->out, "name", name);
	json_add_str(ctl->out, "addr", addr);
	if (capacity)
		json_add_u64(ctl->out, "capacity", capacity);
	else
		json_add_null(ctl->out, "capacity");
	if (!ctl->json)
		printf("%s %s\n", name, addr);
	return 0;
}

int cmd_local_down(struct lodectl *ctl, int argc, char **argv)
{
	char *pos[1], err[512] = "";
	int rc;

	if (lodectl_parse(ctl, argc, argv, NULL, 1, 1, pos) < 0)
		return ctl->exit;
	rc = local_down(pos[0], err, sizeof(err));
	if (rc)
		return lodectl_fail_as(ctl, rc, "%s", err);
	json_add_str(ctl->out, "dir", pos[0]);
	return 0;
}

int cmd_local_kill(struct lodectl *ctl, int argc, char **argv)
{
	bool nine = false;
	const struct lodectl_opt opts[] = {
	    {"-9", "--kill", LODECTL_OPT_FLAG, &nine, 0, 0},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	char *pos[2], err[512] = "";
	const char *name;
	int rc;

	if (lodectl_parse(ctl, argc, argv, opts, 2, 2, pos) < 0)
		return ctl->exit;
	name = pos[1];
	if (strcmp(name, "mds") && (strncmp(name, "oss", 3) || !name[3] ||
				    strspn(name + 3, "0123456789") != strlen(name + 3)))
		return lodectl_usage_error(ctl, "unknown daemon '%s' (mds, oss0, oss1, ...)", name);
	rc = local_kill(pos[0], name, nine ? SIGKILL : SIGTERM, err, sizeof(err));
	if (rc)
		return lodectl_fail_as(ctl, rc, "%s", err);
	json_add_str(ctl->out, "dir", pos[0]);
	json_add_str(ctl->out, "daemon", name);
	json_add_str(ctl->out, "signal", nine ? "KILL" : "TERM");
	return 0;
}
