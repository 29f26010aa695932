/* SPDX-License-Identifier: MIT */
/*
 * Config files: `key = value` lines turned into the long options they name (conf.h says the
 * format and the rules). The file is checked line by line against the program's own option
 * table, so a misspelt key is an error with its file and line, not a silently ignored line;
 * values are checked by the program's option parser, whose errors lode_conf_where() lets
 * name the line too.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

/* One option made from a line of the file. */
struct conf_arg {
	char *arg;   /* "--key=value" or "--key", an element of the new argv */
	char *where; /* "FILE:LINE: " */
	const struct option *opt;
};

/* what lode_conf_where() searches; set once by lode_conf_load() (start-up, one thread) */
static struct conf_arg *conf_args;
static size_t conf_nargs;
static char **conf_argv;
static int conf_argc;

static int __attribute__((format(printf, 3, 4))) fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The option a command-line `--name` means: its exact name, or a prefix of exactly one. */
static const struct option *find_opt(const struct option *opts, const char *name, size_t len)
{
	const struct option *hit = NULL;

	for (const struct option *o = opts; o->name; o++) {
		if (strncmp(o->name, name, len))
			continue;
		if (strlen(o->name) == len)
			return o;
		if (hit)
			return NULL; /* ambiguous: getopt_long will say so */
		hit = o;
	}
	return hit;
}

static char *trim(char *s)
{
	char *end = s + strlen(s);

	while (*s == ' ' || *s == '\t')
		s++;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
		*--end = 0;
	return s;
}

static bool is_word(const char *v, const char *const *words)
{
	for (; *words; words++)
		if (!strcmp(v, *words))
			return true;
	return false;
}

/* One line of the file: nothing (blank, comment, `switch = false`), or one option in *out. */
static int parse_line(const struct option *opts, char *line, const char *where,
		      struct conf_arg *out, bool *have, char *why, size_t why_len)
{
	static const char *const yes[] = {"true", "yes", "on", "1", NULL};
	static const char *const no[] = {"false", "no", "off", "0", NULL};
	const struct option *opt = NULL;
	char *key, *value = NULL, *eq;
	size_t vlen;

	*have = false;
	key = trim(line);
	if (!*key || *key == '#')
		return 0;
	eq = strchr(key, '=');
	if (eq) {
		*eq = 0;
		value = trim(eq + 1);
		key = trim(key);
		vlen = strlen(value);
		if (vlen >= 2 && value[0] == '"' && value[vlen - 1] == '"') {
			value[vlen - 1] = 0;
			value++;
		}
	}
	if (!strncmp(key, "--", 2))
		return fail(why, why_len, "%swrite the key without its dashes: '%s'", where,
			    key + 2);
	for (const struct option *o = opts; o->name; o++)
		if (!strcmp(o->name, key))
			opt = o;
	if (!opt)
		return fail(why, why_len, "%sunknown key '%s'", where, key);
	if (!strcmp(key, "config"))
		return fail(why, why_len, "%sa config file cannot name another one", where);
	if (!strcmp(key, "help") || !strcmp(key, "version"))
		return fail(why, why_len, "%s'%s' is not taken from a config file", where, key);
	if (opt->has_arg == no_argument) {
		if (value && is_word(value, no))
			return 0;
		if (value && !is_word(value, yes))
			return fail(why, why_len, "%s'%s' is a switch: true or false, not '%s'",
				    where, key, value);
		value = NULL;
	} else if (opt->has_arg == required_argument && (!value || !*value)) {
		return fail(why, why_len, "%s'%s' needs a value: %s = VALUE", where, key, key);
	}
	if ((value ? asprintf(&out->arg, "--%s=%s", key, value)
		   : asprintf(&out->arg, "--%s", key)) < 0)
		return -ENOMEM;
	out->where = strdup(where);
	if (!out->where) {
		free(out->arg);
		return -ENOMEM;
	}
	out->opt = opt;
	*have = true;
	return 0;
}

/* Reads path into conf_args. */
static int read_file(const struct option *opts, const char *path, char *why, size_t why_len)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, where[4200];
	size_t cap = 0, alloc = 0;
	unsigned lineno = 0;
	ssize_t len;
	int rc = 0;

	if (!f) {
		rc = -errno;
		snprintf(why, why_len, "cannot read config file %s: %s", path, strerror(-rc));
		return rc;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		struct conf_arg a;
		bool have;

		lineno++;
		snprintf(where, sizeof(where), "%s:%u: ", path, lineno);
		if (memchr(line, 0, (size_t)len)) {
			rc = fail(why, why_len, "%snot a line of text", where);
			break;
		}
		rc = parse_line(opts, line, where, &a, &have, why, why_len);
		if (rc)
			break;
		if (!have)
			continue;
		if (conf_nargs == alloc) {
			size_t n = alloc ? 2 * alloc : 16;
			struct conf_arg *na = realloc(conf_args, n * sizeof(*na));

			if (!na) {
				free(a.arg);
				free(a.where);
				rc = -ENOMEM;
				break;
			}
			conf_args = na;
			alloc = n;
		}
		conf_args[conf_nargs++] = a;
	}
	if (!rc && ferror(f)) {
		rc = -EIO;
		snprintf(why, why_len, "cannot read config file %s: %s", path, strerror(EIO));
	}
	if (rc == -ENOMEM)
		snprintf(why, why_len, "reading %s: %s", path, strerror(ENOMEM));
	free(line);
	fclose(f);
	return rc;
}

int lode_conf_load(const struct option *opts, int *argc, char ***argv, char *why, size_t why_len)
{
	const struct option **given; /* the options the command line names */
	const char *path = NULL;
	int n = *argc, ngiven = 0, out;
	char **nargv;
	int rc;

	given = calloc((size_t)n + 1, sizeof(*given));
	if (!given)
		return fail(why, why_len, "%s", strerror(ENOMEM));
	for (int i = 1; i < n; i++) {
		const char *a = (*argv)[i], *eq;
		const struct option *o;

		if (!strcmp(a, "--"))
			break;
		if (strncmp(a, "--", 2))
			continue; /* a short option or an operand */
		eq = strchr(a, '=');
		o = find_opt(opts, a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
		if (!o)
			continue; /* getopt_long will refuse it */
		given[ngiven++] = o;
		if (!strcmp(o->name, "config")) {
			if (path) {
				free(given);
				return fail(why, why_len, "one --config at most");
			}
			path = eq ? eq + 1 : (i + 1 < n ? (*argv)[i + 1] : NULL);
			if (!path) {
				free(given);
				return 0; /* getopt_long will say it needs a value */
			}
		}
		if (!eq && o->has_arg == required_argument)
			i++; /* its value, whatever it looks like */
	}
	if (!path) {
		free(given);
		return 0;
	}
	rc = read_file(opts, path, why, why_len);
	if (rc) {
		free(given);
		return rc;
	}

	nargv = calloc((size_t)n + conf_nargs + 1, sizeof(*nargv));
	if (!nargv) {
		free(given);
		return fail(why, why_len, "%s", strerror(ENOMEM));
	}
	nargv[0] = (*argv)[0];
	out = 1;
	for (size_t k = 0; k < conf_nargs; k++) {
		bool overridden = false;

		for (int g = 0; g < ngiven; g++)
			overridden |= given[g] == conf_args[k].opt;
		if (!overridden)
			nargv[out++] = conf_args[k].arg;
	}
	for (int i = 1; i < n; i++)
		nargv[out++] = (*argv)[i];
	nargv[out] = NULL;
	free(given);
	conf_argv = nargv;
	conf_argc = out;
	*argc = out;
	*argv = nargv;
	return 0;
}

const char *lode_conf_where(const char *arg)
{
	for (size_t k = 0; arg && k < conf_nargs; k++)
		if (conf_args[k].arg == arg)
			return conf_args[k].where;
	return "";
}

const char *lode_conf_where_getopt(void)
{
	if (!conf_argv || optind < 1 || optind > conf_argc)
		return "";
	return lode_conf_where(conf_argv[optind - 1]);
}
