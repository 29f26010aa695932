/* SPDX-License-Identifier: MIT */
/* Small helpers the Lode daemons share at start-up. */
#ifndef LODE_PROTO_DAEMON_H
#define LODE_PROTO_DAEMON_H

#include <sys/types.h>

/* mkdir -p: parents 0755, the last component `mode`. Returns 0 or -errno. */
int lode_make_dirs(const char *path, mode_t mode);
/* Writes addr and a newline into path atomically (a temporary name, fsync, rename): a
 * process waiting for the file sees all of it or none. Returns 0 or -errno. */
int lode_write_port_file(const char *path, const char *addr);

#endif
