/* SPDX-License-Identifier: MIT */
/*
 * lodectl's argument parsing: every command declares its options as a table and how many
 * positional arguments it takes; one parser answers --help, refuses what is unknown, extra
 * or out of range with a one-line reason (exit status 2), and accepts the options every
 * command shares (--json, --quiet, --mds, --timeout) before or after the command's name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lodectl.h"

int lodectl_parse_number(const char *s, bool size, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned shift = 0;
	unsigned long long v;
	char *end;

	/* strtoull takes "-5" as a huge number and " 5" as 5: digits only */
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	if (size && *end) {
		switch (*end) {
		case 'k':
		case 'K':
			shift = 10;
			break;
		case 'm':
		case 'M':
			shift = 20;
			break;
		case 'g':
		case 'G':
			shift = 30;
			break;
		default:
			return -EINVAL;
		}
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
	}
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	v <<= shift;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

bool lodectl_cluster_path_ok(struct lodectl *ctl, const char *path)
{
	if (path[0] == '/')
		return true;
	lodectl_usage_error(ctl, "'%s': paths in the cluster are absolute (start with /)", path);
	return false;
}

/* The options every command takes, whatever its table says. */
static bool common_opts;
static uint64_t common_timeout;
static const char *common_mds;
static const char *common_key;
static bool common_insecure;

static int set_value(struct lodectl *ctl, const struct lodectl_opt *o, const char *name,
		     const char *val)
{
	int rc;

	switch (o->kind) {
	case LODECTL_OPT_FLAG:
		*(bool *)o->dest = true;
		return 0;
	case LODECTL_OPT_STRING:
		*(const char **)o->dest = val;
		return 0;
	case LODECTL_OPT_UINT:
	case LODECTL_OPT_SIZE:
		rc = lodectl_parse_number(val, o->kind == LODECTL_OPT_SIZE, o->min, o->max,
					  (uint64_t *)o->dest);
		if (rc == -ERANGE) {
			lodectl_usage_error(ctl, "%s: '%s' is out of range (%llu..%llu%s)", name,
					    val, (unsigned long long)o->min,
					    (unsigned long long)o->max,
					    o->kind == LODECTL_OPT_SIZE ? " bytes" : "");
			return -1;
		}
		if (rc) {
			lodectl_usage_error(ctl, "%s: '%s' is not a %s", name, val,
					    o->kind == LODECTL_OPT_SIZE
						? "size (digits, then K, M or G)"
						: "number (digits only)");
			return -1;
		}
		return 0;
	}
	return -1;
}

static const struct lodectl_opt *find_opt(const struct lodectl_opt *opts, const char *name,
					  size_t len)
{
	for (const struct lodectl_opt *o = opts; o && o->name; o++) {
		if (strlen(o->name) == len && !strncmp(o->name, name, len))
			return o;
		if (o->alias && strlen(o->alias) == len && !strncmp(o->alias, name, len))
			return o;
	}
	return NULL;
}

int lodectl_parse(struct lodectl *ctl, int argc, char **argv, const struct lodectl_opt *opts,
		  int min_pos, int max_pos, char **pos)
{
	const struct lodectl_opt common[] = {
	    {"--json", NULL, LODECTL_OPT_FLAG, &ctl->json, 0, 0},
	    {"--quiet", "-q", LODECTL_OPT_FLAG, &ctl->quiet, 0, 0},
	    {"--mds", NULL, LODECTL_OPT_STRING, &common_mds, 0, 0},
	    {"--timeout", NULL, LODECTL_OPT_UINT, &common_timeout, 1, 3600000},
	    {"--key", NULL, LODECTL_OPT_STRING, &common_key, 0, 0},
	    {"--insecure", NULL, LODECTL_OPT_FLAG, &common_insecure, 0, 0},
	    {"--help", "-h", LODECTL_OPT_FLAG, &common_opts, 0, 0},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	bool options_done = false;
	int npos = 0;

	ctl->exit = LODECTL_EXIT_USAGE;
	common_opts = false;
	common_timeout = 0;
	common_mds = NULL;
	common_key = NULL;
	common_insecure = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq, *val = NULL;
		const struct lodectl_opt *o;
		size_t len;

		if (options_done || a[0] != '-' || !strcmp(a, "-")) {
			if (npos >= max_pos) {
				lodectl_usage_error(ctl, "unexpected argument '%s'", a);
				return -1;
			}
			pos[npos++] = argv[i];
			continue;
		}
		if (!strcmp(a, "--")) {
			options_done = true;
			continue;
		}
		eq = strncmp(a, "--", 2) ? NULL : strchr(a, '=');
		len = eq ? (size_t)(eq - a) : strlen(a);
		o = find_opt(opts, a, len);
		if (!o)
			o = find_opt(common, a, len);
		if (!o) {
			lodectl_usage_error(ctl, "unknown option '%.*s'", (int)len, a);
			return -1;
		}
		if (o->kind == LODECTL_OPT_FLAG) {
			if (eq) {
				lodectl_usage_error(ctl, "%s takes no value", o->name);
				return -1;
			}
		} else if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			lodectl_usage_error(ctl, "%s needs a value", o->name);
			return -1;
		}
		if (set_value(ctl, o, o->name, val))
			return -1;
	}
	if (common_opts && ctl->json) {
		json_add_str(ctl->out, "usage", ctl->cmd->usage);
		ctl->exit = 0;
		return -1;
	}
	if (common_opts) {
		printf("usage: lodectl %s\n", ctl->cmd->usage);
		printf("\nEvery command also takes --json (one JSON document on stdout), --quiet, "
		       "--mds ADDR,\n--timeout MS and --key FILE or --insecure; see lodectl "
		       "--help.\n");
		ctl->exit = 0;
		return -1;
	}
	if (common_mds)
		ctl->mds_addr = common_mds;
	if (common_timeout)
		ctl->timeout_ms = (unsigned)common_timeout;
	if (common_key)
		ctl->key_file = common_key;
	if (common_insecure)
		ctl->key_file = "";
	if (npos < min_pos) {
		lodectl_usage_error(ctl, "missing argument%s (usage: lodectl %.*s)",
				    min_pos - npos > 1 ? "s" : "",
				    (int)strcspn(ctl->cmd->usage, "\n"), ctl->cmd->usage);
		return -1;
	}
	if (ctl->cmd->cluster) {
		ctl->exit = lodectl_connect(ctl);
		if (ctl->exit)
			return -1;
	}
	return npos;
}
