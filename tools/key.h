/* SPDX-License-Identifier: MIT */
/* lodectl key ...: cluster and role key files (docs/security.md). */
#ifndef LODE_TOOLS_KEY_H
#define LODE_TOOLS_KEY_H

/* `lodectl key generate FILE | derive --role ROLE IN OUT`; argv[0] is "key". Returns the
 * exit status. */
int lodectl_key_main(int argc, char **argv);

/* Prints "lodectl: cannot reach the MDS at ADDR: WHY" for lode_connect's rc, saying what
 * is wrong with the key when that is why (key_file as in lode_client_opts). */
void lodectl_key_connect_error(const char *mds, const char *key_file, int rc);

#endif
