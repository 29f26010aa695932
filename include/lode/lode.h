/* SPDX-License-Identifier: MIT */
/*
 * liblode: the native client of the Lode parallel file system.
 *
 * Conventions, for every function here:
 * - Return 0 (or a byte count) on success and a negative errno on failure, the same codes
 *   a local Linux file system gives (-ENOENT, -EEXIST, -ENOTDIR, -EISDIR, -ENOTEMPTY,
 *   -ENAMETOOLONG, -EACCES, ...), plus -ETIMEDOUT / -ECONNREFUSED / -EIO when a server
 *   cannot be reached. Corrupt data is never returned: it is -EIO, never bytes.
 * - Output parameters are written only on success. Pointers passed in (buffers, names,
 *   structs) are only used during the call: liblode keeps none of them, and nothing it
 *   returns needs freeing except what its own close/disconnect call frees.
 * - Paths are absolute within the cluster ("/models/llama/shard-0.safetensors"); "/" is
 *   the root. Path functions follow symlinks in every component but the last, and in the
 *   last where the POSIX call they mirror does (lode_stat follows, lode_lstat does not).
 * - A lode_client may be used from many threads at once. A lode_file may be used from
 *   many threads at once for pread/pwrite; closing it while another thread uses it is a
 *   bug. Each call blocks its thread until done, at most about the client's timeout_ms
 *   per request to an unreachable server. An MDS that refuses connections (it is gone, or
 *   restarting) is retried for 3 s from the first refusal, so calls ride over a restart;
 *   past that they fail with -ECONNREFUSED at once, until the MDS answers again.
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
	/* the key file every connection proves (docs/security.md): a cluster key or one
	 * role's key; NULL: LODE_KEY_FILE from the environment, if set; "": no key (only a
	 * cluster run --insecure answers). With a cluster or admin key the client connects
	 * as an admin, else as a client. */
	const char *key_file;
	/* 1: namespace changes (create, rename, unlink, setattr, close, ...) may be answered
	 * before they are durable at the MDS; lode_fsync and lode_sync make them durable, and
	 * the MDS does within a second (docs/fuse.md, "lazy namespace"). A crash of the MDS's
	 * process loses none of them; a crash of its machine may lose the last second's.
	 * 0 (default): every change is durable when its call returns. */
	int lazy_namespace;
	/* 1: lode_fsync of a file written through this client returns once every copy's
	 * object server holds the data (in its page cache: written, not synced) and the MDS
	 * has committed the size, without syncing either (docs/fuse.md, "lazy data"). A crash
	 * of every server's process loses none of it; a power cut of every machine holding a
	 * copy may lose what their kernels had not written back (vm.dirty_expire_centisecs,
	 * 30 s by default): such a file may then read as zeros or as what it held before,
	 * as a local file's unsynced writes do after a crash, or as -EIO where a copy's
	 * data reached the disk and its checksums did not; a disk error during that
	 * writeback reaches no caller.
	 * 0 (default): lode_fsync returns once every copy is on disk. */
	int lazy_data;
};

/* Connects to the cluster whose MDS listens at mds_addr ("tcp://HOST:PORT",
 * "rdma://HOST:PORT" or "HOST:PORT"); opts may be NULL for every default. Checks that the
 * MDS answers. Returns 0 and *out (the caller's until lode_disconnect), or -ECONNREFUSED /
 * -ETIMEDOUT (no MDS answers), -EPROTO (what answers is not an MDS), -ENOMEM; for the key:
 * -EACCES (the cluster refused the key, or needs one and none was given, or runs
 * --insecure and cannot prove the key given), -ENOENT / -EPERM (the key file is missing,
 * or group or others may read it), -EINVAL (not a Lode key file). Object servers are
 * connected on first use. A client runs threads of its own (I/O, batched closes) and
 * belongs to the process that connected it: a child made by fork() connects its own. */
LODE_API int lode_connect(const char *mds_addr, const struct lode_client_opts *opts,
			  struct lode_client **out);
/* What lode_probe() finds at an address. */
#define LODE_SERVER_MDS 1
#define LODE_SERVER_OSS 2
/* Asks the Lode server at addr what it is, without connecting a client: *role is
 * LODE_SERVER_MDS, LODE_SERVER_OSS (or another number, from a newer server). For a tool to
 * say why lode_connect() failed with -EPROTO. key_file as lode_client_opts.key_file (NULL:
 * $LODE_KEY_FILE; "": none): a server that checks keys answers only a peer proving one.
 * timeout_ms 0: 30000. Returns 0, -EINVAL (addr does not parse or its host does not
 * resolve), -ECONNREFUSED / -ETIMEDOUT, -EPROTO (what answers does not speak Lode's
 * protocol), -EACCES (the key), ... */
LODE_API int lode_probe(const char *addr, const char *key_file, unsigned timeout_ms,
			uint32_t *role);
/* Closes every connection and frees c, once the MDS has the write leases of closed files
 * back (lode_close queues those with nothing to commit). Close every file of c first, and
 * call it when no other thread uses c any more. NULL is accepted. */
LODE_API void lode_disconnect(struct lode_client *c);

/*
 * Credentials. Every request carries a uid and gid, which the MDS checks permissions
 * against (within what the cluster key allows). They come from, first match wins:
 * 1. the calling thread's override (lode_thread_creds_set), whatever client it calls;
 * 2. the client's credentials: lode_client_opts.uid/gid, the process's effective ids
 *    (with its supplementary groups), or what lode_client_set_creds set last (no
 *    supplementary groups).
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
/* lode_thread_creds_set() with supplementary groups: the MDS grants what any of them
 * may (a group's mode bits, chgrp by an owner to one of them). At most 32 are sent (the
 * first ones); lode_thread_creds_set() sends none. groups is copied. */
LODE_API void lode_thread_creds_set_groups(uint32_t uid, uint32_t gid, unsigned ngroups,
					   const uint32_t *groups);
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
/* Forgets the buffer registered at buf (the start lode_buffer_register was given); call it
 * when no I/O into the buffer is in flight. Returns 0 or -ENOENT. Registration is
 * process-wide, for every client. */
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
/* Sets the mode of c for writes and fsyncs started from now on, by any thread. Returns 0
 * or -EINVAL for an unknown mode. */
LODE_API int lode_set_replication(struct lode_client *c, int mode);
/* The mode writes use now (never LODE_REPLICATION_DEFAULT). Never fails. */
LODE_API int lode_replication(struct lode_client *c);
/* "fanout", "chain" or "default" to its mode; -EINVAL for anything else. */
LODE_API int lode_replication_from_name(const char *name);
/* The name of a mode ("fanout", "chain"; "default" for 0), or "?": a static string. */
LODE_API const char *lode_replication_name(int mode);

/* A file's or directory's attributes, as the MDS keeps them. */
struct lode_stat {
	uint64_t ino;
	uint64_t size;
	uint64_t blocks; /* 512-byte units */
	uint32_t mode;	 /* S_IFMT | permissions */
	uint32_t uid, gid, nlink;
	int64_t atime_ns, mtime_ns, ctime_ns;
	uint64_t generation; /* of the layout: changes when the file's objects are replaced */
	uint32_t rdev;	     /* device nodes: the device, as Linux's 32-bit dev_t; else 0 */
	uint32_t reserved0;
	uint64_t reserved[6]; /* zero; new fields go here */
};

/* Where a file's data lives: byte off is in stripe (off / stripe_size) % stripe_count, at
 * object offset (off / (stripe_size * stripe_count)) * stripe_size + off % stripe_size. */
struct lode_layout {
	uint32_t stripe_size;  /* bytes, a multiple of 64 KiB */
	uint16_t stripe_count; /* objects the file is striped over */
	uint16_t mirror_count; /* copies of each object */
	uint64_t generation;
	/* stripe i, copy m: targets[i * mirror_count + m] */
	uint32_t targets[LODE_MAX_TARGETS_PER_LAYOUT];
	uint64_t reserved[4]; /* zero; new fields go here */
};

#define LODE_STATFS_INSECURE 0x1u /* the MDS runs --insecure: it checks no key */
struct lode_statfs {
	uint64_t bytes_total, bytes_free;
	uint64_t files, files_free;
	uint32_t targets_up, targets_total;
	uint32_t name_max, block_size;
	uint32_t flags; /* LODE_STATFS_*, from the MDS's handshake */
	uint32_t reserved32;
	uint64_t reserved[1]; /* zero; new fields go here */
};

/* One storage target (one OSS data directory) as the MDS last saw it. */
struct lode_target_info {
	uint32_t id;
	int up;
	uint64_t bytes_total, bytes_free, objects;
	uint64_t last_seen_ms;
	char addr[128];	      /* NUL-terminated, cut to fit */
	uint32_t admin;	      /* LODE_TARGET_ADMIN_*: placed on, draining, or removed */
	uint32_t reserved0;   /* zero */
	uint64_t reserved[2]; /* zero; new fields go here */
};

/* lode_target_info.admin, apart from up/down: new files and moved copies go only to ACTIVE
 * targets; a DRAINING one is still read from while lodectl drain moves its copies off; a
 * REMOVED one held nothing when it was removed. (The values of LODE_TARGET_ACTIVE etc. on
 * the wire.) */
#define LODE_TARGET_ADMIN_ACTIVE   0
#define LODE_TARGET_ADMIN_DRAINING 1
#define LODE_TARGET_ADMIN_REMOVED  2

/* ---- namespace by path ----
 * Each resolves path with one MDS lookup per component (no cache: the answer is as fresh
 * as the MDS's), then makes one request. Errors as the POSIX call of the same name. */

/* The attributes of path, following a symlink in the last component. Returns 0, or
 * -ENOENT, -ENOTDIR, -ELOOP, -ENAMETOOLONG, -EACCES for the path. */
LODE_API int lode_stat(struct lode_client *c, const char *path, struct lode_stat *st);
/* As lode_stat, but a symlink in the last component is described, not followed. */
LODE_API int lode_lstat(struct lode_client *c, const char *path, struct lode_stat *st);
/* Creates a directory (mode: permission bits only). Returns 0, -EEXIST (also for "/"),
 * -ENOENT (no parent), ... */
LODE_API int lode_mkdir(struct lode_client *c, const char *path, uint32_t mode);
/* Removes a name of a non-directory. Returns 0, -ENOENT, -EISDIR (a directory, or "/"),
 * ... */
LODE_API int lode_unlink(struct lode_client *c, const char *path);
/* Removes an empty directory. Returns 0, -ENOTEMPTY, -ENOTDIR, -EBUSY ("/"), ... */
LODE_API int lode_rmdir(struct lode_client *c, const char *path);
#define LODE_RENAME_NOREPLACE_FLAG 1 /* -EEXIST if `to` exists (RENAME_NOREPLACE) */
#define LODE_RENAME_EXCHANGE_FLAG  2 /* swap from and to, both must exist (RENAME_EXCHANGE) */
/* Renames atomically: a reader sees the old or the new name, never neither (the publish
 * step of "write to a temporary name, then rename"). flags: 0 or one LODE_RENAME_*_FLAG;
 * -EINVAL for both or others. Returns 0, or the errors of rename(2): -ENOENT, -EEXIST,
 * -ENOTEMPTY, -EISDIR, -ENOTDIR, -EBUSY ("/"), ... */
LODE_API int lode_rename(struct lode_client *c, const char *from, const char *to, unsigned flags);
/* Adds newpath as another name of existing (not followed if a symlink). Returns 0, or the
 * errors of link(2): -EEXIST, -ENOENT, ... */
LODE_API int lode_link(struct lode_client *c, const char *existing, const char *newpath);
/* Creates linkpath as a symlink to target (stored as given, up to 4095 bytes: else
 * -ENAMETOOLONG; -ENOENT for an empty target). Returns 0, -EEXIST, ... */
LODE_API int lode_symlink(struct lode_client *c, const char *target, const char *linkpath);
/* Copies the target of the symlink at path into buf, at most size bytes, not
 * NUL-terminated, and returns how many it copied (the target is cut to size), or -EINVAL
 * (not a symlink), -ENOENT, ... */
LODE_API ssize_t lode_readlink(struct lode_client *c, const char *path, char *buf, size_t size);
/* Sets the permission bits (mode & 07777) of path, following a symlink. Returns 0, or the
 * errors of chmod(2): -EPERM (not the owner), -ENOENT, ... */
LODE_API int lode_chmod(struct lode_client *c, const char *path, uint32_t mode);
/* Sets owner and group of path, following a symlink; (uint32_t)-1 leaves one as it is.
 * Returns 0, -EPERM, -ENOENT, ... */
LODE_API int lode_chown(struct lode_client *c, const char *path, uint32_t uid, uint32_t gid);
/* Times in ns since the epoch; LODE_UTIME_NOW or LODE_UTIME_OMIT as in utimensat. */
#define LODE_UTIME_NOW	INT64_MIN
#define LODE_UTIME_OMIT (INT64_MIN + 1)
/* Sets the access and modification times of path, following a symlink. Returns 0,
 * -EPERM, -EACCES, -ENOENT, ... */
LODE_API int lode_utimens(struct lode_client *c, const char *path, int64_t atime_ns,
			  int64_t mtime_ns);
/* Truncates (or extends with zeros) the regular file at path: its objects first, then its
 * size, under the file's write lease (-EBUSY while another client writes it). Returns 0,
 * -EISDIR, -EINVAL (not a regular file), -EFBIG, -ENOENT, ... */
LODE_API int lode_truncate(struct lode_client *c, const char *path, uint64_t size);
/* Capacity and use of the whole cluster, as the MDS sums up its targets. Returns 0 or
 * -errno; *out is written only on success. */
LODE_API int lode_statfs(struct lode_client *c, struct lode_statfs *out);

/* Called by lode_readdir for each entry; name is valid during the call only. */
typedef int (*lode_dirent_fn)(void *arg, const char *name, uint64_t ino, uint32_t mode);
/* Calls fn for each entry of the directory at path (without "." and ".."), in a stable
 * order, page by page from the MDS (entries added or removed meanwhile may or may not
 * show). A non-zero return from fn stops the walk and is returned. Returns 0, or
 * -ENOTDIR, -ENOENT, -ENOMEM, or an error of a later page (after fn saw earlier ones). */
LODE_API int lode_readdir(struct lode_client *c, const char *path, lode_dirent_fn fn, void *arg);

/* Extended attributes: names up to 255 bytes, values up to 64 KiB (-E2BIG beyond). Path
 * calls follow symlinks, as setxattr(2) does. */
#define LODE_XATTR_CREATE_FLAG	1 /* -EEXIST if it exists (XATTR_CREATE) */
#define LODE_XATTR_REPLACE_FLAG 2 /* -ENODATA if it does not (XATTR_REPLACE) */
/* Sets attribute name to the size bytes at value. Returns 0, -EEXIST, -ENODATA,
 * -E2BIG, -ENOSPC, -EPERM, ... */
LODE_API int lode_setxattr(struct lode_client *c, const char *path, const char *name,
			   const void *value, size_t size, unsigned flags);
/* size 0: returns the value's length. Otherwise copies it into value and returns its
 * length, or -ERANGE if size is too small, -ENODATA if absent. */
LODE_API ssize_t lode_getxattr(struct lode_client *c, const char *path, const char *name,
			       void *value, size_t size);
/* The attribute names of path, each NUL-terminated, one after the other; same size rules
 * as lode_getxattr. */
LODE_API ssize_t lode_listxattr(struct lode_client *c, const char *path, char *list, size_t size);
/* Removes an attribute. Returns 0, -ENODATA (absent), -EPERM, ... */
LODE_API int lode_removexattr(struct lode_client *c, const char *path, const char *name);

/* ---- files ----
 * A lode_file is the caller's from a successful open or create until lode_close(). Many
 * threads may pread and pwrite one handle at once (writes that overlap land in some order,
 * each chunk whole); lode_close, and freeing the client, only after every other call on it
 * has returned. */

/* Opens the file at path. flags: O_RDONLY/O_WRONLY/O_RDWR, O_CREAT (mode: the new file's
 * permission bits), O_EXCL, O_TRUNC (O_APPEND is the caller's business: pass the offset).
 * A handle open for writing holds the file's single-writer lease: another client's open
 * for writing fails with -EBUSY until it is closed. Returns 0 and *out, or -ENOENT,
 * -EEXIST (O_EXCL), -EISDIR, -EINVAL (not a regular file), -EACCES, -EBUSY, ... */
LODE_API int lode_open(struct lode_client *c, const char *path, int flags, uint32_t mode,
		       struct lode_file **out);
/* Creates a new file (O_CREAT|O_EXCL semantics, opened O_RDWR) with an explicit layout:
 * stripe_size, stripe_count and mirror_count are taken from layout; targets too if any is
 * non-zero, otherwise the MDS places the objects. layout is only read during the call.
 * Returns 0 and *out, -EEXIST, -EINVAL (a layout liblode or the MDS refuses), ... */
LODE_API int lode_create_with_layout(struct lode_client *c, const char *path, uint32_t mode,
				     const struct lode_layout *layout, struct lode_file **out);

/* Reads up to len bytes at off into buf; returns the bytes read (short only at end of
 * file, as this handle knows it; 0 at or past it) or -errno: -EBADF for a write-only
 * handle, -EIO when no copy of some byte could be read and verified. Data is verified
 * against its checksums end to end, and a copy that fails is skipped for another: corrupt
 * bytes never reach buf. On error buf may hold part of the data. */
LODE_API ssize_t lode_pread(struct lode_file *f, void *buf, size_t len, uint64_t off);
/* One piece of a streamed read: [off, off + len) of the file, verified against its
 * checksums, now at buf (inside the caller's buffer, at its final place). Returns 0 to go
 * on, or -errno to stop the stream (lode_read_stream returns it). It must not read or
 * write through the handle being streamed (it may through any other). */
typedef int (*lode_piece_fn)(void *arg, uint64_t off, void *buf, size_t len);
/* Reads up to len bytes at off into buf, as lode_pread, with many pieces (at most 1 MiB,
 * inside one stripe unit) in flight across the file's targets, and hands each piece to fn
 * on the calling thread as soon as it has landed and been verified, in completion order,
 * while the next pieces are read: a consumer (a copy to a GPU, a parser) overlaps with
 * the reads, and no byte is copied on the host. Returns the bytes read (short only at end
 * of file) or -errno: -EBADF (write-only handle), -EINVAL (no buf or fn), -EIO, or what fn
 * returned. On error nothing is in flight any more when it returns; pieces already handed
 * to fn stay valid, the rest of buf is undefined. Each piece is handed over once: copies
 * that move while the stream runs are followed (the pieces not handed over yet are read
 * again from their new place). */
LODE_API ssize_t lode_read_stream(struct lode_file *f, void *buf, size_t len, uint64_t off,
				  lode_piece_fn fn, void *arg);
/* Bytes of this handle's reads served from its read-ahead. A read-only handle read
 * sequentially, one read at a time, in reads of at most 1 MiB, reads the next 8 MiB ahead;
 * any write or truncate by this client discards what was read ahead, and a read elsewhere
 * or two reads at once stop it. Never fails. */
LODE_API uint64_t lode_readahead_bytes(const struct lode_file *f);
/* Writes len bytes from buf at off, to every live copy; returns len (never short) or
 * -errno: -EBADF (read-only handle), -EFBIG, -ENOSPC, -EIO (no copy of a stripe took it).
 * A copy that failed is recorded as degraded at the MDS before this returns. The bytes
 * are on the object servers, not yet durable (lode_fsync), and other clients see them
 * after the size is committed (lode_flush, lode_fsync, lode_close). buf is only read
 * during the call. */
LODE_API ssize_t lode_pwrite(struct lode_file *f, const void *buf, size_t len, uint64_t off);
/* Makes everything written durable on every live copy and commits the size and mtime to
 * the MDS, durably (a read-only handle: lode_sync). With lazy_data, only commits the size
 * and mtime, without a sync: the data is on every live copy's server already. Returns 0
 * or -errno (-EIO: a stripe has no copy left that took it). */
LODE_API int lode_fsync(struct lode_file *f);
/* Makes every change the MDS has answered for durable: this client's lazy namespace
 * changes (lazy_namespace) and the sizes that closes and flushes published, of every
 * client (one round trip; a sync at the MDS only if something is not durable yet).
 * Returns 0 or -errno. */
LODE_API int lode_sync(struct lode_client *c);
/* Commits the size and mtime written so far to the MDS (what a reader opening after this
 * sees), without making the data or the size durable (lode_fsync does): close-to-open
 * without the cost of a sync. Returns 0 (also when there is nothing to commit) or -errno. */
LODE_API int lode_flush(struct lode_file *f);
/* Sets the size of an open file, cutting or extending with zeros: objects first, then
 * metadata (committed at once). Returns 0, -EBADF (read-only handle), -EFBIG, ... */
LODE_API int lode_ftruncate(struct lode_file *f, uint64_t size);
/* fallocate(2) on an open file. mode 0: reserve disk space for [off, off + len) on every
 * copy, then extend the size to off + len if it is smaller, so that writes there cannot
 * fail with ENOSPC half way; FALLOC_FL_KEEP_SIZE: reserve only; FALLOC_FL_PUNCH_HOLE |
 * FALLOC_FL_KEEP_SIZE: the range (within the size) reads as zeros from then on, on every
 * copy, checksums included (written as zeros: the space stays allocated). Returns 0,
 * -EBADF (read-only handle), -EINVAL (len 0), -EFBIG, -ENOSPC, -EOPNOTSUPP (another mode,
 * or a target whose file system cannot reserve), ... */
LODE_API int lode_fallocate(struct lode_file *f, int mode, uint64_t off, uint64_t len);
/* Commits size and mtime if written (visible at once, durable with the next lode_fsync or
 * lode_sync, or within a second), releases the lease and frees f. Returns the first
 * error of that commit; f is freed either way. NULL is accepted. Closing a read-only
 * handle sends nothing to the MDS (it holds nothing there) and returns 0; a write handle
 * with nothing left to commit (after lode_flush or lode_fsync) gives its lease back with
 * other closes of the client within 5 ms, and returns 0. */
LODE_API int lode_close(struct lode_file *f);
/* The file's attributes fresh from the MDS (one request), with the size and mtime this
 * handle has written and not yet committed. Returns 0 or -errno (-ENOENT or -ESTALE when
 * the file is gone); *st is written only on success. Compare lode_file_stat_cached(). */
LODE_API int lode_fstat(struct lode_file *f, struct lode_stat *st);
/* The attributes the open returned, with the size and mtime this handle has written since:
 * no request to the MDS, so it cannot fail; changes made by others since the open (a chmod,
 * a link) do not show. For a file this handle just created, that is the whole truth.
 * lode_fstat() asks the MDS instead. */
LODE_API void lode_file_stat_cached(struct lode_file *f, struct lode_stat *st);
/* The layout the open returned (no request, cannot fail). */
LODE_API void lode_file_layout(const struct lode_file *f, struct lode_layout *out);
/* The size as this handle knows it: the open's, moved by its own writes and truncates
 * (no request; another client's writes show only after a new open). */
LODE_API uint64_t lode_file_size(const struct lode_file *f);
/* For a read-only handle: asks the MDS for the file's size (one request) and, if the same
 * file grew since the open (not one rewritten over it), reads up to that size from here
 * on, as a new open would. *size is the handle's size after. A write handle knows its size
 * already (no request). Returns 0 or -errno (*size set either way); a file deleted since
 * keeps the open's size. */
LODE_API int lode_file_grow(struct lode_file *f, uint64_t *size);

/* ---- copies ---- */

/* The layout of the file at path (not followed if a symlink) and its degraded copies: bit
 * i of *degraded set when the copy in layout->targets[i] misses data (a write to it
 * failed or it returned bad data). Returns 0 or -errno; outputs written only on success. */
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
 * degraded (copies_repaired < copies_degraded) without an error. out may be NULL.
 * Returns 0 or -errno. */
LODE_API int lode_repair(struct lode_client *c, const char *path, struct lode_repair_result *out);

/* Called as work proceeds: done of total bytes (done <= total; total may be 0). */
typedef void (*lode_progress_fn)(void *arg, uint64_t done, uint64_t total);
/* As lode_repair, calling fn (if not NULL) from the calling thread as bytes are copied:
 * total is the size of every degraded copy, and done reaches it when the repair ends
 * (copies given up on count as done). */
LODE_API int lode_repair_progress(struct lode_client *c, const char *path,
				  struct lode_repair_result *out, lode_progress_fn fn, void *arg);

/* ---- moving copies (lodectl drain, rebalance) ---- */

/* Moves copy `index` of inode ino (layout.targets[index], which must be old_target) to
 * target new_target: records the move at the MDS, copies the object from old_target
 * verified against its checksums, makes it durable, switches the layout (one MDS
 * transaction, conditional on the layout being unchanged), and leaves the old object to
 * old_target to delete after the orphan grace (readers that opened the file before finish
 * from it). Holds the file's write lease meanwhile. *bytes (may be NULL) gets the bytes
 * copied. Returns 0; -EBUSY: a writer holds the file (try again later); -ESTALE: the
 * layout changed meanwhile (read it again); -EAGAIN: no good copy of the stripe is up to
 * copy from (a degraded copy, or one on a target that is down, is copied from another);
 * -EBUSY also when an old copy of the stripe still waits for deletion on new_target; -EINVAL:
 * new_target may not take it; -ESTALE from the open: the file is gone; or another -errno. On
 * failure the destination object is removed again and nothing changed. */
LODE_API int lode_move_copy(struct lode_client *c, uint64_t ino, unsigned index,
			    uint32_t old_target, uint32_t new_target, uint64_t *bytes);
/* Finishes what a killed mover left: removes every destination object of a move begun and
 * never committed, and forgets the move. Returns how many, or -errno (the rest stay for a
 * later call). */
LODE_API int lode_move_cleanup(struct lode_client *c);
/* Sets a target's administrative state (LODE_TARGET_ADMIN_*). REMOVED only from DRAINING
 * and only once nothing needs the target; else -EBUSY. Admin keys only. Returns 0 or
 * -errno (-ENOENT: no such target). */
LODE_API int lode_target_set_admin(struct lode_client *c, uint32_t target_id, unsigned admin);

/* ---- cluster ---- */

/* Fills up to max entries of out with the cluster's targets; returns how many the
 * cluster has (may exceed max: call again with more room), or -errno. */
LODE_API int lode_targets(struct lode_client *c, struct lode_target_info *out, int max);

/* ---- by inode (lode-fuse) ----
 * The same operations on (parent inode, name) or an inode, with no path walk: what a
 * FUSE daemon gets from the kernel. name is one component (1..255 bytes, no '/': else
 * -EINVAL or -ENAMETOOLONG). Attributes outputs marked "may be NULL" are skipped when
 * NULL; all are written only on success. */

/* The attributes of name in directory parent. Returns 0, -ENOENT, -ENOTDIR, -EACCES, ... */
LODE_API int lode_ll_lookup(struct lode_client *c, uint64_t parent, const char *name,
			    struct lode_stat *st);
/* The attributes of inode ino. Returns 0 or -ENOENT (no such inode), ... */
LODE_API int lode_ll_getattr(struct lode_client *c, uint64_t ino, struct lode_stat *st);
/* Opens inode ino (flags as lode_open, without O_CREAT). Returns 0 and *out; -ESTALE when
 * the inode is gone or no name leads to it any more (another client deleted it or renamed
 * a file over it): look the name up again. */
LODE_API int lode_ll_open(struct lode_client *c, uint64_t ino, int flags, struct lode_file **out);
/* Creates name in parent and opens it: O_EXCL fails with -EEXIST if it exists, otherwise
 * an existing file is opened (and emptied with O_TRUNC). The handle is always open for
 * writing (and for reading unless flags say O_WRONLY). layout: NULL for the directory's
 * default, else as lode_create_with_layout. Returns 0 and *out, -EEXIST, -EBUSY (another
 * writer holds the file's lease), -EISDIR, ... */
LODE_API int lode_ll_create(struct lode_client *c, uint64_t parent, const char *name, int flags,
			    uint32_t mode, const struct lode_layout *layout,
			    struct lode_file **out);
/* The attributes the directory a handle was created in had right after lode_ll_create
 * made it (its mtime and ctime moved), as the MDS answered: lode-fuse gives them to the
 * kernel, which asks for them after every create. Returns 0, or -ENODATA for a handle
 * that lode_ll_create did not make. */
LODE_API int lode_file_parent_stat(struct lode_file *f, struct lode_stat *st);
/* Creates directory name in parent; st (may be NULL) receives the new inode's attributes.
 * Returns 0, -EEXIST, ... */
LODE_API int lode_ll_mkdir(struct lode_client *c, uint64_t parent, const char *name, uint32_t mode,
			   struct lode_stat *st);
/* Creates a FIFO, UNIX socket or device node name in parent: mode is S_IFIFO, S_IFSOCK,
 * S_IFCHR or S_IFBLK with the permissions; rdev (devices) as Linux's 32-bit dev_t. Lode
 * stores them; the kernel of whoever opens one gives it its behaviour (lode_open of one
 * answers -ENXIO). Devices need uid 0 (-EPERM). st (may be NULL) receives the attributes.
 * Returns 0, -EEXIST, -EINVAL (another type), ... */
LODE_API int lode_ll_mknod(struct lode_client *c, uint64_t parent, const char *name, uint32_t mode,
			   uint32_t rdev, struct lode_stat *st);
/* As lode_unlink, for name in parent. */
LODE_API int lode_ll_unlink(struct lode_client *c, uint64_t parent, const char *name);
/* As lode_rmdir, for name in parent. */
LODE_API int lode_ll_rmdir(struct lode_client *c, uint64_t parent, const char *name);
/* As lode_rename, for name in parent to new_name in new_parent. */
LODE_API int lode_ll_rename(struct lode_client *c, uint64_t parent, const char *name,
			    uint64_t new_parent, const char *new_name, unsigned flags);
/* lode_ll_unlink (dir 0) or lode_ll_rmdir (dir 1) that also gives the parent's attributes
 * after the change in *parent_after. */
LODE_API int lode_ll_remove_dirs(struct lode_client *c, uint64_t parent, const char *name, int dir,
				 struct lode_stat *parent_after);
/* lode_ll_rename that also gives the attributes after it of parent in after[0] and of
 * new_parent, when it is another directory, in after[1] (else ino 0). */
LODE_API int lode_ll_rename_dirs(struct lode_client *c, uint64_t parent, const char *name,
				 uint64_t new_parent, const char *new_name, unsigned flags,
				 struct lode_stat after[2]);
/* Adds new_name in new_parent as a name of ino; st (may be NULL) receives its attributes.
 * -ESTALE when ino is gone or has no name left (as lode_ll_open). */
LODE_API int lode_ll_link(struct lode_client *c, uint64_t ino, uint64_t new_parent,
			  const char *new_name, struct lode_stat *st);
/* Creates symlink name in parent pointing at target (as lode_symlink); st (may be NULL)
 * receives its attributes. */
LODE_API int lode_ll_symlink(struct lode_client *c, const char *target, uint64_t parent,
			     const char *name, struct lode_stat *st);
/* As lode_readlink, for inode ino. */
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
	uint32_t valid; /* LODE_SET_*: which fields below to apply */
	uint32_t mode, uid, gid;
	uint64_t size;
	int64_t atime_ns, mtime_ns, ctime_ns;
	uint64_t reserved[2]; /* zero; new fields go here, with a new LODE_SET_* bit */
};
/* Changes the attributes sa->valid names, in one MDS transaction; st (may be NULL)
 * receives them afterwards. sa is only read during the call. Returns 0, -EPERM, -EACCES,
 * -ENOENT, ... */
LODE_API int lode_ll_setattr(struct lode_client *c, uint64_t ino, const struct lode_setattr *sa,
			     struct lode_stat *st);
/* As lode_truncate, for inode ino (-ESTALE as lode_ll_open). */
LODE_API int lode_ll_truncate(struct lode_client *c, uint64_t ino, uint64_t size);

struct lode_dirent {
	uint64_t ino;
	uint64_t cookie;      /* pass the last one seen to continue after it */
	uint32_t mode;	      /* S_IFMT bits */
	char name[256];	      /* NUL-terminated */
	uint8_t reserved[28]; /* zero; new fields go here */
};
/* Up to max entries (1..1024 per call: more is cut to 1024; 0 or less is -EINVAL) with
 * cookies after `cookie` (0: from the start) into out. Returns how many, and sets *eof
 * when the directory has no more. Real entries only, no "." or "..". */
LODE_API int lode_ll_readdir(struct lode_client *c, uint64_t ino, uint64_t cookie,
			     struct lode_dirent *out, int max, int *eof);
/* An entry with its attributes (lode_ll_readdirplus). */
struct lode_direntplus {
	struct lode_dirent d;
	struct lode_stat st;
	uint64_t reserved[2]; /* zero; new fields go here */
};
/* As lode_ll_readdir, with each entry's attributes, read by the MDS in the same snapshot
 * as the listing (one call per page, where a getattr per entry would be one call each). */
LODE_API int lode_ll_readdirplus(struct lode_client *c, uint64_t ino, uint64_t cookie,
				 struct lode_direntplus *out, int max, int *eof);

/* As lode_setxattr, for inode ino. */
LODE_API int lode_ll_setxattr(struct lode_client *c, uint64_t ino, const char *name,
			      const void *value, size_t size, unsigned flags);
/* As lode_getxattr, for inode ino. */
LODE_API ssize_t lode_ll_getxattr(struct lode_client *c, uint64_t ino, const char *name,
				  void *value, size_t size);
/* As lode_listxattr, for inode ino. */
LODE_API ssize_t lode_ll_listxattr(struct lode_client *c, uint64_t ino, char *list, size_t size);
/* As lode_removexattr, for inode ino. */
LODE_API int lode_ll_removexattr(struct lode_client *c, uint64_t ino, const char *name);

/* The library's version ("0.1.0"): a static string, never freed. */
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
