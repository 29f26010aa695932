/* SPDX-License-Identifier: MIT */
/*
 * lodectl key generate, key derive: the key files of docs/security.md.
 *
 *   lodectl key generate FILE              a new random cluster key (mode 0600)
 *   lodectl key derive --role ROLE IN OUT  ROLE's key (client, target, admin) from the
 *                                          cluster key IN, so a node need not hold it
 *   lodectl key derive --group NAME IN OUT client group NAME's key: its holder is a client
 *                                          whose identity the MDS binds (--client-group)
 *
 * Neither overwrites a file. The format and the derivation are proto/net/auth.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "lodectl.h"

int cmd_key_generate(struct lodectl *ctl, int argc, char **argv)
{
	char *pos[1], why[256];

	if (lodectl_parse(ctl, argc, argv, NULL, 1, 1, pos) < 0)
		return ctl->exit;
	if (lode_key_generate(pos[0], why, sizeof(why)))
		return lodectl_fail_as(ctl, -EIO, "%s", why);
	json_add_str(ctl->out, "file", pos[0]);
	json_add_str(ctl->out, "role", "cluster");
	if (!ctl->json && !ctl->quiet)
		printf("wrote a new cluster key to %s (mode 0600)\n", pos[0]);
	return 0;
}

int cmd_key_derive(struct lodectl *ctl, int argc, char **argv)
{
	const char *role_name = NULL, *group = NULL;
	const struct lodectl_opt opts[] = {
	    {"--role", NULL, LODECTL_OPT_STRING, &role_name, 0, 0},
	    {"--group", NULL, LODECTL_OPT_STRING, &group, 0, 0},
	    {NULL, NULL, 0, NULL, 0, 0},
	};
	struct lode_keyring kr;
	char *pos[2], why[256];
	unsigned role = 0;

	if (lodectl_parse(ctl, argc, argv, opts, 2, 2, pos) < 0)
		return ctl->exit;
	if (group && role_name)
		return lodectl_usage_error(ctl, "give --role or --group, not both");
	if (group) {
		if (lode_keyring_load(pos[0], &kr, why, sizeof(why)) ||
		    lode_key_write_group(&kr, group, pos[1], why, sizeof(why)))
			return lodectl_fail_as(ctl, -EIO, "%s", why);
		json_add_str(ctl->out, "file", pos[1]);
		json_add_str(ctl->out, "role", "client");
		json_add_str(ctl->out, "group", group);
		if (!ctl->json && !ctl->quiet)
			printf("wrote client group %s's key to %s (mode 0600)\n", group, pos[1]);
		return 0;
	}
	for (unsigned r = LODE_AUTH_CLIENT; role_name && r < LODE_AUTH_ROLES_; r++)
		if (!strcmp(role_name, lode_auth_role_name(r)))
			role = r;
	if (!role)
		return lodectl_usage_error(ctl, "--role wants client, target or admin (or --group "
						"NAME for a client group)");
	if (lode_keyring_load(pos[0], &kr, why, sizeof(why)) ||
	    lode_key_write_role(&kr, role, pos[1], why, sizeof(why)))
		return lodectl_fail_as(ctl, -EIO, "%s", why);
	json_add_str(ctl->out, "file", pos[1]);
	json_add_str(ctl->out, "role", role_name);
	if (!ctl->json && !ctl->quiet)
		printf("wrote the %s key to %s (mode 0600)\n", role_name, pos[1]);
	return 0;
}
