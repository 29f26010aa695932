/* SPDX-License-Identifier: MIT */
/* The daemons' --key / --insecure: daemon_auth.h. */
#include <stdio.h>

#include "daemon_auth.h"
#include "log.h"

int lode_daemon_keys(const char *prog, const char *key_file, bool insecure, struct lode_keyring *kr,
		     bool *secure)
{
	char why[256];

	if (key_file && insecure) {
		fprintf(stderr, "%s: --key and --insecure exclude each other\n", prog);
		return 2;
	}
	if (insecure) {
		LODE_WARN("running --insecure: any process that reaches this server's port is "
			  "believed, whatever it asks");
		*secure = false;
		return 0;
	}
	if (!key_file) {
		fprintf(stderr,
			"%s: give --key FILE (the cluster key, from `lodectl key generate FILE`) "
			"or --insecure to serve without authentication\n",
			prog);
		return 2;
	}
	if (lode_keyring_load(key_file, kr, why, sizeof(why))) {
		fprintf(stderr, "%s: %s\n", prog, why);
		return 2;
	}
	if (!kr->cluster) {
		fprintf(stderr,
			"%s: %s holds one role's key; a server needs the cluster key (lode-key-v1 "
			"cluster ...)\n",
			prog, key_file);
		return 2;
	}
	*secure = true;
	return 0;
}
