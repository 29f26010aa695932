/* SPDX-License-Identifier: MIT */
/* Small helpers the Lode daemons share: start-up, and whole writes. */
#ifndef LODE_PROTO_DAEMON_H
#define LODE_PROTO_DAEMON_H

#include <sys/types.h>

/* mkdir -p: parents 0755, the last component `mode`. Returns 0 or -errno. */
int lode_make_dirs(const char *path, mode_t mode);
/* Writes addr and a newline into path atomically (a temporary name, fsync, rename): a
 * process waiting for the file sees all of it or none. Returns 0 or -errno. */
int lode_write_port_file(const char *path, const char *addr);

/*
 * Takes the exclusive lock of a data directory (DIR/lode.lock, flock), held until the process
 * exits, so that no two daemons ever serve one directory (two MDS on one LMDB, two OSS as one
 * target). The kernel drops it when the holder dies, even by kill -9. Returns 0, or -EBUSY when
 * another process holds it (why says which pid), or -errno; why gets a one-line reason.
 */
int lode_lock_data_dir(const char *dir, const char *prog, char *why, size_t why_len);

/* Raises the soft limit of open descriptors to the hard one (a connection is one). */
void lode_raise_fd_limit(void);

/* Writes len bytes of buf at off, through short writes and EINTR; a write that makes no
 * progress is a device failure (-EIO). Returns 0 or -errno. */
int lode_pwrite_all(int fd, const void *buf, size_t len, off_t off);

#endif
