/* SPDX-License-Identifier: MIT */
/*
 * lodectl key: makes the key files of docs/security.md.
 *
 *   lodectl key generate FILE              a new random cluster key (mode 0600)
 *   lodectl key derive --role ROLE IN OUT  ROLE's key (client, target, admin) from the
 *                                          cluster key IN, so a node need not hold it
 *
 * Neither overwrites a file. The format and the derivation are proto/net/auth.c's.
 */
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "key.h"

static int usage(void)
{
	fprintf(stderr, "lodectl: usage: lodectl key generate FILE | key derive --role "
			"client|target|admin CLUSTER_KEY_FILE OUT_FILE\n");
	return 2;
}

int lodectl_key_main(int argc, char **argv)
{
	struct lode_keyring kr;
	char why[256];
	unsigned role = 0;

	if (argc == 3 && !strcmp(argv[1], "generate")) {
		if (lode_key_generate(argv[2], why, sizeof(why))) {
			fprintf(stderr, "lodectl: %s\n", why);
			return 1;
		}
		return 0;
	}
	if (argc != 6 || strcmp(argv[1], "derive") || strcmp(argv[2], "--role"))
		return usage();
	for (unsigned r = LODE_AUTH_CLIENT; r < LODE_AUTH_ROLES_; r++)
		if (!strcmp(argv[3], lode_auth_role_name(r)))
			role = r;
	if (!role)
		return usage();
	if (lode_keyring_load(argv[4], &kr, why, sizeof(why)) ||
	    lode_key_write_role(&kr, role, argv[5], why, sizeof(why))) {
		fprintf(stderr, "lodectl: %s\n", why);
		return 1;
	}
	return 0;
}

void lodectl_key_connect_error(const char *mds, const char *key_file, int rc)
{
	char why[256];

	fprintf(stderr, "lodectl: cannot reach the MDS at %s: %s\n", mds,
		lode_auth_explain(rc, key_file, why, sizeof(why)));
}
