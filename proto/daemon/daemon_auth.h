/* SPDX-License-Identifier: MIT */
/*
 * The daemons' --key FILE / --insecure (lode-mds, lode-oss): which keys connections must
 * prove. A server needs the cluster key (it answers every role); running without a key is
 * an explicit --insecure, never a default.
 */
#ifndef LODE_PROTO_DAEMON_AUTH_H
#define LODE_PROTO_DAEMON_AUTH_H

#include <stdbool.h>

#include "auth.h"

/*
 * From the options: key_file (NULL if not given) and insecure. Loads the cluster key into
 * *kr and returns 0 (*secure true), or returns 0 with *secure false for --insecure (and logs
 * a warning; call after lode_log_init). On a bad combination or key file, prints a one-line
 * reason to stderr as "prog: ..." and returns 2, the exit status for bad arguments.
 */
int lode_daemon_keys(const char *prog, const char *key_file, bool insecure, struct lode_keyring *kr,
		     bool *secure);

#endif
