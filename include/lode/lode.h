/* SPDX-License-Identifier: MIT */
/*
 * liblode: the native client of the Lode parallel file system.
 *
 * Conventions, for every function here:
 * - Return 0 (or a byte count) on success and a negative errno on failure, the same codes
 *   a local Linux file system gives (-ENOENT, -EEXIST, -ENOTDIR, -EISDIR, -ENOTEMPTY,
 *   -ENAMETOOLONG, -EACCES, ...), plus -ETIMEDOUT / -ECONNREFUSED / -EIO when a server
 *   cannot be reached, and -EBADMSG... never: corrupt data is never returned (-EIO).
 * - Output parameters are written only on success.
 * - Paths are absolute within the cluster ("/models/llama/shard-0.safetensors"); "/" is
 *   the root. Path functions follow symlinks in every component but the last, and in the
 *   last where the POSIX call they mirror does (lode_stat follows, lode_lstat does not).
 * - A lode_client may be used from many threads at once. A lode_file may be used from
 *   many threads at once for pread/pwrite; closing it while another thread uses it is a
 *   bug.
 * - Functions with "_ll_" take inode numbers instead of paths (what lode-fuse uses).
 */
#ifndef LODE_LODE_H
#define LODE_LODE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks what liblode exports: the library is built with every other symbol hidden. */
#if defined(__GNUC__) && __GNUC__ >= 4
#define LODE_API __attribute__((visibility("default")))
#else
#define LODE_API
#endif

#define LODE_ROOT_INO		    1
#define LODE_MAX_TARGETS_PER_LAYOUT 64

struct lode_client;
struct lode_file;

/*
 * Public structs only grow, and only at the end. lode_client_opts carries its own size;
 * every other struct ends in reserved space that new fields take over, so that its size
 * never changes (arrays of it, and programs built against an older lode.h, keep working).
 * liblode zeroes the reserved space of what it fills in; a caller passing a struct in
 * zeroes it (= {0}), since a later liblode may give those bytes a meaning where zero is
 * today's behaviour. The sizes are checked at the end of this header.
 */

/* Options of lode_connect(). Zero means "default" for every field. The struct only grows
 * at the end; set size to sizeof(struct lode_client_opts). */
struct lode_client_opts {
	size_t size;
	unsigned timeout_ms;   /* per request, before -ETIMEDOUT; default 30000 */
	unsigned max_inflight; /* data requests in flight per file operation; default 64 */
	uint32_t uid, gid;     /* credentials for permission checks; default: the process's */
	int use_process_creds; /* 1: uid/gid above are ignored */
	/* threads that receive and verify object data, each with its own connection to every
	 * OSS; default: LODE_IO_THREADS from the environment, else one per CPU (at most 4) */
	unsigned io_threads;
};

/* Connects to the cluster whose MDS listens at mds_addr ("tcp://HOST:PORT" or
 * "HOST:PORT"). Checks that the MDS answers. Returns 0 and *out, or -errno. */
LODE_API int lode_connect(const char *mds_addr, const struct lode_client_opts *opts,
			  struct lode_client **out);
/* Closes every connection. Close every file first. NULL is accepted. */
LODE_API void lode_disconnect(struct lode_client *c);

/*
 * Credentials. Every request carries a uid and gid, which the MDS checks permissions
 * against (within what the cluster key allows). They come from, first match wins:
 * 1. the calling thread's override (lode_thread_creds_set), whatever client it calls;
 * 2. the client's credentials: lode_client_opts.uid/gid, the process's effective ids, or
 *    what lode_client_set_creds set last.
 */
/* Sets the client's credentials for requests that any thread without an override starts
 * from now on; a request already sent keeps the ones it had. Safe from any thread. */
LODE_API void lode_client_set_creds(struct lode_client *c, uint32_t uid, uint32_t gid);
/* Overrides the credentials of every request the calling thread starts from now on, on
 * every lode_client, until lode_thread_creds_clear() or another lode_thread_creds_set():
 * for a server that acts for a different user per request (lode-fuse sets the caller's
 * before each operation). Other threads are not affected. The override lives in
 * thread-local storage: nothing to free, and it ends with the thread. */
LODE_API void lode_thread_creds_set(uint32_t uid, uint32_t gid);
/* Drops the calling thread's override: its requests use the client's credentials again. */
LODE_API void lode_thread_creds_clear(void);

/*
 * Declares [buf, buf + len) a long-lived I/O buffer (a model loader's staging buffer, a
 * pool of read buffers). Over RDMA, a buffer is registered with the device once and reused
 * for every read and write inside it; other buffers are registered for each I/O. Over TCP
 * this changes nothing. Unregister before freeing the memory. Returns 0, or -EINVAL (empty,
 * or overlapping a registered buffer), -ENOMEM.
 */
LODE_API int lode_buffer_register(void *buf, size_t len);
/* Forgets the buffer registered at buf. Returns 0 or -ENOENT. */
LODE_API int lode_buffer_unregister(void *buf);

/*
 * How writes reach the copies of a mirrored file:
 * - LODE_REPLICATION_FANOUT: the client sends each piece to every copy itself;
 * - LODE_REPLICATION_CHAIN: the client sends it once, to the first live copy, whose OSS
 *   passes it on to the next copy, and so on; the answer says how every copy fared.
 * Either way a write (and fsync) succeeds only once every live copy has it, and a copy that
 * failed is recorded as degraded at the MDS first. LODE_REPLICATION_DEFAULT follows the
 * environment variable LODE_REPLICATION ("fanout" or "chain") when set, else the built-in
 * default (the one that measured faster; see docs/benchmarks.md).
 */
#define LODE_REPLICATION_DEFAULT 0
#define LODE_REPLICATION_FANOUT	 1
#define LODE_REPLICATION_CHAIN	 2
/* Sets it for writes started from now on. Returns 0 or -EINVAL for an unknown mode. */
LODE_API int lode_set_replication(struct lode_client *c, int mode);
/* The mode writes use now (never LODE_REPLICATION_DEFAULT). */
LODE_API int lode_replication(struct lode_client *c);
/* "fanout", "chain" or "default" to its mode; -EINVAL for anything else. */
LODE_API int lode_replication_from_name(const char *name);
/* The name of a mode ("fanout", "chain"; "default" for 0), or "?" */
LODE_API const char *lode_replication_name(int mode);

struct lode_stat {
	uint64_t ino;
	uint64_t size;
	uint64_t blocks; /* 512-byte units */
	uint32_t mode;	 /* S_IFMT | permissions */
	uint32_t uid, gid, nlink;
	int64_t atime_ns, mtime_ns, ctime_ns;
	uint64_t generation;
	uint64_t reserved[7]; /* zero; new fields go here */
};

struct lode_layout {
	uint32_t stripe_size;  /* bytes, a multiple of 64 KiB */
	uint16_t stripe_count; /* objects the file is striped over */
	uint16_t mirror_count; /* copies of each object */
	uint64_t generation;
	/* stripe i, copy m: targets[i * mirror_count + m] */
	uint32_t targets[LODE_MAX_TARGETS_PER_LAYOUT];
	uint64_t reserved[4]; /* zero; new fields go here */
};

struct lode_statfs {
	uint64_t bytes_total, bytes_free;
	uint64_t files, files_free;
	uint32_t targets_up, targets_total;
	uint32_t name_max, block_size;
	uint64_t reserved[2]; /* zero; new fields go here */
};

struct lode_target_info {
	uint32_t id;
	int up;
	uint64_t bytes_total, bytes_free, objects;
	uint64_t last_seen_ms;
	char addr[128];
	uint64_t reserved[3]; /* zero; new fields go here */
};

/* ---- namespace by path ---- */
LODE_API int lode_stat(struct lode_client *c, const char *path, struct lode_stat *st);
LODE_API int lode_lstat(struct lode_client *c, const char *path, struct lode_stat *st);
LODE_API int lode_mkdir(struct lode_client *c, const char *path, uint32_t mode);
LODE_API int lode_unlink(struct lode_client *c, const char *path);
LODE_API int lode_rmdir(struct lode_client *c, const char *path);
#define LODE_RENAME_NOREPLACE_FLAG 1
#define LODE_RENAME_EXCHANGE_FLAG  2
LODE_API int lode_rename(struct lode_client *c, const char *from, const char *to, unsigned flags);
LODE_API int lode_link(struct lode_client *c, const char *existing, const char *newpath);
LODE_API int lode_symlink(struct lode_client *c, const char *target, const char *linkpath);
/* Copies the target (not NUL-terminated if it fills buf) and returns its length. */
LODE_API ssize_t lode_readlink(struct lode_client *c, const char *path, char *buf, size_t size);
LODE_API int lode_chmod(struct lode_client *c, const char *path, uint32_t mode);
LODE_API int lode_chown(struct lode_client *c, const char *path, uint32_t uid, uint32_t gid);
/* Times in ns since the epoch; LODE_UTIME_NOW or LODE_UTIME_OMIT as in utimensat. */
#define LODE_UTIME_NOW	INT64_MIN
#define LODE_UTIME_OMIT (INT64_MIN + 1)
LODE_API int lode_utimens(struct lode_client *c, const char *path, int64_t atime_ns,
			  int64_t mtime_ns);
/* Truncates (or extends with zeros) a regular file: its objects first, then its size. */
LODE_API int lode_truncate(struct lode_client *c, const char *path, uint64_t size);
LODE_API int lode_statfs(struct lode_client *c, struct lode_statfs *out);

/* Calls fn for each entry of a directory (without "." and ".."), in a stable order; a
 * non-zero return from fn stops the walk and is returned. */
typedef int (*lode_dirent_fn)(void *arg, const char *name, uint64_t ino, uint32_t mode);
LODE_API int lode_readdir(struct lode_client *c, const char *path, lode_dirent_fn fn, void *arg);

#define LODE_XATTR_CREATE_FLAG	1
#define LODE_XATTR_REPLACE_FLAG 2
LODE_API int lode_setxattr(struct lode_client *c, const char *path, const char *name,
			   const void *value, size_t size, unsigned flags);
/* size 0: returns the value's length. Otherwise copies it and returns its length, or
 * -ERANGE if size is too small, -ENODATA if absent. */
LODE_API ssize_t lode_getxattr(struct lode_client *c, const char *path, const char *name,
			       void *value, size_t size);
/* NUL-separated names, same size rules as lode_getxattr. */
LODE_API ssize_t lode_listxattr(struct lode_client *c, const char *path, char *list, size_t size);
LODE_API int lode_removexattr(struct lode_client *c, const char *path, const char *name);

/* ---- files ---- */

/* flags: O_RDONLY/O_WRONLY/O_RDWR, O_CREAT, O_EXCL, O_TRUNC (O_APPEND is the caller's
 * business: pass the offset). A handle open for writing holds the file's single-writer
 * lease: another client's open for writing fails with -EBUSY until it is closed. */
LODE_API int lode_open(struct lode_client *c, const char *path, int flags, uint32_t mode,
		       struct lode_file **out);
/* Creates a new file (O_CREAT|O_EXCL semantics) with an explicit layout: stripe_size,
 * stripe_count and mirror_count are taken from layout; targets too if any is non-zero,
 * otherwise the MDS places the objects. */
LODE_API int lode_create_with_layout(struct lode_client *c, const char *path, uint32_t mode,
				     const struct lode_layout *layout, struct lode_file **out);

/* Reads up to len bytes at off; returns the bytes read (short only at end of file) or
 * -errno. Data is verified against its checksums end to end; a mismatch is -EIO. */
LODE_API ssize_t lode_pread(struct lode_file *f, void *buf, size_t len, uint64_t off);
/* Bytes of this handle's reads served from its read-ahead. A read-only handle read
 * sequentially, one read at a time, in reads of at most 1 MiB, reads the next 8 MiB ahead;
 * any write or truncate by this client discards what was read ahead, and a read elsewhere
 * or two reads at once stop it. */
LODE_API uint64_t lode_readahead_bytes(const struct lode_file *f);
/* Writes len bytes at off; returns len or -errno. */
LODE_API ssize_t lode_pwrite(struct lode_file *f, const void *buf, size_t len, uint64_t off);
/* Makes everything written durable on every object server and commits the size and
 * mtime to the MDS. */
LODE_API int lode_fsync(struct lode_file *f);
/* Commits the size and mtime written so far to the MDS (what a reader opening after this
 * sees), without making the data durable: close-to-open without the cost of fsync. */
LODE_API int lode_flush(struct lode_file *f);
/* Sets the size of an open file (objects first, then metadata). */
LODE_API int lode_ftruncate(struct lode_file *f, uint64_t size);
/* Commits size and mtime if written, releases the lease and frees f. Returns the first
 * error of that commit; f is freed either way. NULL is accepted. */
LODE_API int lode_close(struct lode_file *f);
/* The file's attributes fresh from the MDS (one request), with the size and mtime this
 * handle has written and not yet committed. Returns 0 or -errno (-ESTALE when the file
 * is gone: -ENOENT or -ESTALE); *st is written only on success. Compare lode_file_stat_cached(). */
LODE_API int lode_fstat(struct lode_file *f, struct lode_stat *st);
/* The attributes the open returned, with the size and mtime this handle has written since:
 * no request to the MDS, so it cannot fail; changes made by others since the open (a chmod,
 * a link) do not show. For a file this handle just created, that is the whole truth.
 * lode_fstat() asks the MDS instead. */
LODE_API void lode_file_stat_cached(struct lode_file *f, struct lode_stat *st);
LODE_API void lode_file_layout(const struct lode_file *f, struct lode_layout *out);
LODE_API uint64_t lode_file_size(const struct lode_file *f);

/* ---- copies ---- */

/* A file's layout and its degraded copies: bit i of *degraded set when the copy in
 * layout->targets[i] misses data (a write to it failed or it returned bad data). */
LODE_API int lode_layout_info(struct lode_client *c, const char *path, struct lode_layout *layout,
			      uint64_t *degraded);

struct lode_repair_result {
	unsigned copies_degraded; /* before the repair */
	unsigned copies_repaired;
	uint64_t bytes_copied;
	uint64_t reserved[6]; /* zero; new fields go here */
};
/* Re-replicates the file's degraded copies from good copies onto healthy targets (the
 * copy's own target when it is up again). Holds the file's write lease meanwhile (-EBUSY
 * while someone writes it). Copies with no good source or no target to go to stay
 * degraded (copies_repaired < copies_degraded) without an error. */
LODE_API int lode_repair(struct lode_client *c, const char *path, struct lode_repair_result *out);

/* ---- cluster ---- */

/* Fills up to max targets; returns how many the cluster has (may exceed max). */
LODE_API int lode_targets(struct lode_client *c, struct lode_target_info *out, int max);

/* ---- by inode (lode-fuse) ---- */
LODE_API int lode_ll_lookup(struct lode_client *c, uint64_t parent, const char *name,
			    struct lode_stat *st);
LODE_API int lode_ll_getattr(struct lode_client *c, uint64_t ino, struct lode_stat *st);
/* -ESTALE when the inode is gone or no name leads to it any more (another client deleted
 * it or renamed a file over it): look the name up again. */
LODE_API int lode_ll_open(struct lode_client *c, uint64_t ino, int flags, struct lode_file **out);
LODE_API int lode_ll_create(struct lode_client *c, uint64_t parent, const char *name, int flags,
			    uint32_t mode, const struct lode_layout *layout,
			    struct lode_file **out);
/* st (may be NULL) receives the new inode's attributes. */
LODE_API int lode_ll_mkdir(struct lode_client *c, uint64_t parent, const char *name, uint32_t mode,
			   struct lode_stat *st);
LODE_API int lode_ll_unlink(struct lode_client *c, uint64_t parent, const char *name);
LODE_API int lode_ll_rmdir(struct lode_client *c, uint64_t parent, const char *name);
LODE_API int lode_ll_rename(struct lode_client *c, uint64_t parent, const char *name,
			    uint64_t new_parent, const char *new_name, unsigned flags);
/* -ESTALE when ino is gone or has no name left (as lode_ll_open). */
LODE_API int lode_ll_link(struct lode_client *c, uint64_t ino, uint64_t new_parent,
			  const char *new_name, struct lode_stat *st);
LODE_API int lode_ll_symlink(struct lode_client *c, const char *target, uint64_t parent,
			     const char *name, struct lode_stat *st);
LODE_API ssize_t lode_ll_readlink(struct lode_client *c, uint64_t ino, char *buf, size_t size);

#define LODE_SET_MODE	   0x01u
#define LODE_SET_UID	   0x02u
#define LODE_SET_GID	   0x04u
#define LODE_SET_SIZE	   0x08u /* metadata only: use lode_ll_truncate / lode_ftruncate for files */
#define LODE_SET_ATIME	   0x10u
#define LODE_SET_MTIME	   0x20u
#define LODE_SET_ATIME_NOW 0x40u
#define LODE_SET_MTIME_NOW 0x80u
#define LODE_SET_CTIME	   0x100u
struct lode_setattr {
	uint32_t valid; /* LODE_SET_* */
	uint32_t mode, uid, gid;
	uint64_t size;
	int64_t atime_ns, mtime_ns, ctime_ns;
	uint64_t reserved[2]; /* zero; new fields go here, with a new LODE_SET_* bit */
};
/* Changes attributes; st (may be NULL) receives them afterwards. */
LODE_API int lode_ll_setattr(struct lode_client *c, uint64_t ino, const struct lode_setattr *sa,
			     struct lode_stat *st);
/* Truncates or extends a regular file: objects first, then its size. */
LODE_API int lode_ll_truncate(struct lode_client *c, uint64_t ino, uint64_t size);

struct lode_dirent {
	uint64_t ino;
	uint64_t cookie; /* pass the last one seen to continue after it */
	uint32_t mode;	 /* S_IFMT bits */
	char name[256];
	uint8_t reserved[28]; /* zero; new fields go here */
};
/* Up to max entries with cookies after `cookie` (0: from the start). Returns how many,
 * and sets *eof when the directory has no more. Real entries only, no "." or "..". */
LODE_API int lode_ll_readdir(struct lode_client *c, uint64_t ino, uint64_t cookie,
			     struct lode_dirent *out, int max, int *eof);
/* The same with each entry's attributes, read by the MDS in the same snapshot as the
 * listing (one call per page, where a getattr per entry would be one call each). */
struct lode_direntplus {
	struct lode_dirent d;
	struct lode_stat st;
	uint64_t reserved[2]; /* zero; new fields go here */
};
LODE_API int lode_ll_readdirplus(struct lode_client *c, uint64_t ino, uint64_t cookie,
				 struct lode_direntplus *out, int max, int *eof);

LODE_API int lode_ll_setxattr(struct lode_client *c, uint64_t ino, const char *name,
			      const void *value, size_t size, unsigned flags);
LODE_API ssize_t lode_ll_getxattr(struct lode_client *c, uint64_t ino, const char *name,
				  void *value, size_t size);
LODE_API ssize_t lode_ll_listxattr(struct lode_client *c, uint64_t ino, char *list, size_t size);
LODE_API int lode_ll_removexattr(struct lode_client *c, uint64_t ino, const char *name);

/* The library's version string. */
LODE_API const char *lode_version(void);

/* The sizes the reserved space keeps constant (LP64): a change here breaks the ABI. */
#if defined(__LP64__) && !defined(__cplusplus)
_Static_assert(sizeof(struct lode_stat) == 128, "lode_stat grew: use its reserved space");
_Static_assert(sizeof(struct lode_layout) == 304, "lode_layout grew: use its reserved space");
_Static_assert(sizeof(struct lode_statfs) == 64, "lode_statfs grew: use its reserved space");
_Static_assert(sizeof(struct lode_target_info) == 192,
	       "lode_target_info grew: use its reserved space");
_Static_assert(sizeof(struct lode_repair_result) == 64,
	       "lode_repair_result grew: use its reserved space");
_Static_assert(sizeof(struct lode_setattr) == 64, "lode_setattr grew: use its reserved space");
_Static_assert(sizeof(struct lode_dirent) == 304, "lode_dirent grew: use its reserved space");
_Static_assert(sizeof(struct lode_direntplus) == 448,
	       "lode_direntplus grew: use its reserved space");
#endif

#ifdef __cplusplus
}
#endif

#endif
