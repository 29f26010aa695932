/* SPDX-License-Identifier: MIT */
/* lodectl mkdir, rmdir, mv, ln: one namespace operation each, on absolute cluster paths. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lodectl.h"

/* Makes path's missing parents, then path; an existing directory is fine. */
static int mkdir_parents(struct lodectl *ctl, const char *path)
{
	char p[PATH_MAX];
	struct lode_stat st;
	int rc;

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;

		*s = 0;
		rc = lode_mkdir(ctl->client, p, 0755);
		if (rc == -EEXIST)
			rc = lode_stat(ctl->client, p, &st) ? -EEXIST
			     : S_ISDIR(st.mode)		    ? 0
							    : -ENOTDIR;
		*s = c;
		if (rc || !c)
			return rc;
		while (s[1] == '/')
			s++;
		if (!s[1])
			return 0;
	}
}

int cmd_mkdir(struct lodectl *ctl, int argc, char **argv)
{
	bool parents = false;
	const struct lodectl_opt opts[] = {
	    {"--parents", "-p", LODECTL_OPT_FLAG, &parents, 0, 0},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	char *pos[1];
	int rc;

	if (lodectl_parse(ctl, argc, argv, opts, 1, 1, pos) < 0)
		return ctl->exit;
	if (!lodectl_cluster_path_ok(ctl, pos[0]))
		return LODECTL_EXIT_USAGE;
	json_add_str(ctl->out, "path", pos[0]);
	rc = parents ? mkdir_parents(ctl, pos[0]) : lode_mkdir(ctl->client, pos[0], 0755);
	return rc ? lodectl_fail(ctl, rc, "%s", pos[0]) : 0;
}

int cmd_rmdir(struct lodectl *ctl, int argc, char **argv)
{
	char *pos[1];
	int rc;

	if (lodectl_parse(ctl, argc, argv, NULL, 1, 1, pos) < 0)
		return ctl->exit;
	if (!lodectl_cluster_path_ok(ctl, pos[0]))
		return LODECTL_EXIT_USAGE;
	json_add_str(ctl->out, "path", pos[0]);
	rc = lode_rmdir(ctl->client, pos[0]);
	return rc ? lodectl_fail(ctl, rc, "%s", pos[0]) : 0;
}

int cmd_mv(struct lodectl *ctl, int argc, char **argv)
{
	bool no_clobber = false;
	const struct lodectl_opt opts[] = {
	    {"--no-clobber", "-n", LODECTL_OPT_FLAG, &no_clobber, 0, 0},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	char *pos[2];
	int rc;

	if (lodectl_parse(ctl, argc, argv, opts, 2, 2, pos) < 0)
		return ctl->exit;
	if (!lodectl_cluster_path_ok(ctl, pos[0]) || !lodectl_cluster_path_ok(ctl, pos[1]))
		return LODECTL_EXIT_USAGE;
	json_add_str(ctl->out, "from", pos[0]);
	json_add_str(ctl->out, "to", pos[1]);
	rc = lode_rename(ctl->client, pos[0], pos[1], no_clobber ? LODE_RENAME_NOREPLACE_FLAG : 0);
	return rc ? lodectl_fail(ctl, rc, "%s -> %s", pos[0], pos[1]) : 0;
}

int cmd_ln(struct lodectl *ctl, int argc, char **argv)
{
	bool symbolic = false;
	const struct lodectl_opt opts[] = {
	    {"--symbolic", "-s", LODECTL_OPT_FLAG, &symbolic, 0, 0},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	char *pos[2];
	int rc;

	if (lodectl_parse(ctl, argc, argv, opts, 2, 2, pos) < 0)
		return ctl->exit;
	/* a symlink's target is stored as given: relative targets are what symlinks are for */
	if ((!symbolic && !lodectl_cluster_path_ok(ctl, pos[0])) ||
	    !lodectl_cluster_path_ok(ctl, pos[1]))
		return LODECTL_EXIT_USAGE;
	json_add_str(ctl->out, "target", pos[0]);
	json_add_str(ctl->out, "path", pos[1]);
	json_add_bool(ctl->out, "symbolic", symbolic);
	rc = symbolic ? lode_symlink(ctl->client, pos[0], pos[1])
		      : lode_link(ctl->client, pos[0], pos[1]);
	return rc ? lodectl_fail(ctl, rc, "%s", pos[1]) : 0;
}
