/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse internals: the mount's state, the table of files this mount writes, and the
 * helpers every operation family shares. Nothing here is public.
 *
 * FUSE inode numbers are Lode inode numbers (the root is 1 on both sides), so the daemon
 * keeps no inode table and ignores forget: every request names the MDS's own inode.
 *
 * Files call each other one way only, top to bottom:
 *   main.c          options, mounting, the table of operations
 *   fuse_entry.c, fuse_attr.c, fuse_dir.c, fuse_file.c, fuse_xattr.c
 *                   one family of operations each (fuse_attr.c asks fuse_file.c for the
 *                   writer behind an open handle)
 *   fuse_writer.c   the shared write handles, write-behind, attributes with our size
 *   fuse_defer.c    waits for a lock, taken off the request threads
 *   fuse_state.c    requests and credentials, replies, logging, page-cache versions
 *   fuse_metrics.c  counters of reads, writes, cache and errors; --metrics's collector
 *   liblode         (lode/lode.h only)
 */
#ifndef LODE_FUSE_H
#define LODE_FUSE_H

#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "lode/lode.h"

#define LF_IO_MAX (1u << 20) /* max_write and the largest read the kernel sends */
/* a file this small opened for reading, its pages not cached, is read at open (lf_open) */
#define LF_STORE_MAX (128u * 1024)
#define LF_WB_MAX    (16u << 20) /* write-behind: contiguous writes gathered per liblode call */
/* A write at least this large that does not follow the buffered one goes to liblode at once,
 * beside other such writes, instead of ending the buffer: the N-to-1 pattern (many threads
 * of one mount writing interleaved records of one file) would otherwise write one record at
 * a time (measured: tools/bench/shared-write.sh, docs/benchmarks.md). */
#define LF_WB_DIRECT_MIN  (1u << 20)
#define LF_WRITER_BUCKETS 256u
#define LF_CVER_SLOTS	  65536u /* remembered (mtime, size) of cached files, direct mapped */
#define LF_OLOCKS	  64u	 /* locks of opens' caching decisions, by inode */
#define LF_HOPEN_SLOTS	  4096u	 /* counts of open handles, by inode, shared on collision */
#define LF_DEFER_THREADS  16u	 /* threads that wait for locks for requests (fuse_defer.c) */
#define LF_SQUASH_ID	  65534u
#define LF_GROUPS_MAX	  32u	/* supplementary groups sent per request (the wire's limit) */
#define LF_GROUPS_SLOTS	  1024u /* cached group lists, direct mapped by pid */
#define LF_GROUPS_TTL_MS  1000u /* how long a process's group list is trusted */
#define LF_LEASE_WAIT_MS  2000u /* how long an open waits for another mount's lease to go */

enum lf_level { LF_ERR, LF_WARN, LF_INFO };

struct lf_opts {
	const char *mds; /* as given to --mds */
	const char *mountpoint;
	double attr_timeout;	 /* seconds the kernel may trust attributes */
	double entry_timeout;	 /* seconds the kernel may trust a name -> inode */
	double negative_timeout; /* seconds it may trust that a name is missing (0: never) */
	unsigned timeout_s;	 /* how long a call waits for an unreachable server */
	unsigned max_threads;
	unsigned read_ahead_kb; /* kernel readahead of this mount; 0: leave it */
	int replication;	/* LODE_REPLICATION_*: how writes reach the copies */
	char *mount_abs;	/* the mount point as /proc/self/mountinfo shows it */
	char *mount_real;	/* its realpath, whatever its characters (NULL: none) */
	int root_squash;
	int lazy_namespace; /* -o namespace=lazy: changes durable at fsync, fsyncdir or 1 s */
	int lazy_data;	    /* -o data=lazy: fsync returns with the data on every copy's server */
	int io_uring;	    /* -o io_uring: requests over io_uring where the kernel offers (1), or
			     * else no mount (2, io_uring=require) */
	int ro;
	int foreground;
	int debug;
	const char *metrics;	       /* --metrics HOST:PORT, or NULL */
	const char *metrics_port_file; /* --metrics-port-file FILE, or NULL */
	const char *key_file;	       /* --key FILE; "" for --insecure; NULL: $LODE_KEY_FILE */
};

/*
 * One liblode write handle per inode this mount has open for writing, shared by every
 * FUSE open of that inode: the MDS would give each open a handle of its own (a file may
 * have many writers), but one per mount keeps one write-behind, one size for getattr and
 * readers before it is committed, and one commit per flush.
 */
struct lf_writer {
	uint64_t ino;
	struct lode_file *f; /* opened O_RDWR when the MDS allowed it, else O_WRONLY */
	bool readable;
	/* Setuid/setgid (see lf_kill_privs): the file's mode as last seen, and the uid + 1 of
	 * the last writer found not to clear them, so that a write checks only when a
	 * privilege bit is set. */
	_Atomic uint32_t mode;
	_Atomic uint32_t privs_kept_for;
	unsigned refs;		/* protected by lode_fuse.wlock: opens plus transient users */
	bool closing;		/* protected by lode_fuse.wlock: lode_close() in progress */
	struct lf_writer *next; /* protected by lode_fuse.wlock */

	/* Write-behind (see fuse_file.c): contiguous writes gathered into one buffer and
	 * handed to liblode as one striped write. */
	pthread_mutex_t wb_lock;
	pthread_cond_t wb_cond;	 /* the write in flight finished */
	char *wb;		 /* protected by wb_lock: LF_WB_MAX bytes, or NULL */
	uint64_t wb_off, wb_len; /* protected by wb_lock: file range the buffer holds */
	uint64_t last_end;	 /* protected by wb_lock: where the last write ended */
	char *spare;		 /* protected by wb_lock: a free buffer, or NULL */
	bool inflight;		 /* protected by wb_lock: a flush thread owns fl_* */
	char *fl_buf;		 /* the buffer in flight: owned by the flush thread */
	uint64_t fl_off, fl_len;
	int wb_err; /* protected by wb_lock: first failed write-behind, -errno */
};

/* fi->fh of a file: the shared writer if opened for writing, and a read handle when the
 * writer cannot read (or there is none). */
struct lf_handle {
	struct lf_writer *w;
	struct lode_file *rf;
	uint64_t ino;	    /* counted in lf->hopen (0: not yet) */
	bool write_through; /* O_DIRECT, O_SYNC or O_DSYNC: no write-behind */
};

/* What this mount last saw of a file whose pages the kernel may have cached. */
struct lf_cver {
	uint64_t ino;
	int64_t mtime_ns;
	uint64_t size;
	/* the attributes last given to the kernel for kino, by LOOKUP or GETATTR (kino 0:
	 * none, or this mount changed the file since) */
	uint64_t kino, ksize;
	int64_t kmtime_ns, kctime_ns;
	uint32_t kmode, kuid, kgid;
	/* the newest version of vino any open here found (lf_version_newest) */
	uint64_t vino, vsize;
	int64_t vctime_ns, vmtime_ns;
	/* the largest size given to the kernel for maxino since the newest open dropped
	 * its attributes (maxino 0: none known) */
	uint64_t maxino, maxsize;
	/* the smallest size given to the kernel for minino since this mount first told it
	 * of the file (minino another file's: unknown; minsize 0 once this mount changed
	 * it, lf_kattr_forget) */
	uint64_t minino, minsize;
};

/* A process's supplementary groups as /proc gave them, for LF_GROUPS_TTL_MS. */
struct lf_groups {
	uint32_t pid, uid, gid;
	uint64_t until_ms;
	unsigned n;
	uint32_t g[LF_GROUPS_MAX];
};

/* A directory some process has open (opendir), with its attributes as of its last
 * GETATTR: once the directory is removed, fstat of the open one still answers, nlink 0. */
struct lf_odir {
	uint64_t ino;
	unsigned refs;
	struct lode_stat st;
	struct lf_odir *next;
};

/* A directory's attributes from a reply, or a file's from an open, and when (fuse_dirattr.c). */
#define LF_DIRATTR_SLOTS 256
struct lf_dirattr {
	struct lode_stat st; /* st.ino 0: empty */
	uint64_t gen;	     /* lode_fuse.agen when learned: valid while it is the same */
	double learned_s;    /* CLOCK_MONOTONIC */
};

/* A pool of the mount's own threads (fuse_defer.c), for requests that wait for a lock. */
struct lf_deferred;
struct lf_defer {
	pthread_mutex_t lock;
	pthread_cond_t cond;		 /* work queued, or stop */
	struct lf_deferred *head, *tail; /* protected by lock */
	unsigned nthreads, idle, queued; /* protected by lock */
	bool stop;			 /* protected by lock: no more work taken */
	unsigned max;			 /* threads at most */
	pthread_t *threads;		 /* [0, nthreads) of max */
};

struct lode_fuse {
	struct lode_client *c;
	struct fuse_session *se;
	struct lf_opts o;

	pthread_mutex_t wlock;
	pthread_cond_t wcond;			      /* a closing writer left the table */
	struct lf_writer *writers[LF_WRITER_BUCKETS]; /* protected by wlock */

	pthread_mutex_t clock;
	struct lf_cver *cver; /* protected by clock */
	/* per file (ino % LF_OLOCKS): held across an open's caching decision and what it
	 * tells the kernel (open_cache_flags), and across store_small's check and store.
	 * Never waited for on a request thread (open_finish_or_defer, fuse_file.c). */
	pthread_mutex_t olock[LF_OLOCKS];
	struct lf_defer defer;
	struct lf_uring *uring;		   /* FUSE-over-io_uring's queues (fuse_uring.c), or NULL */
	atomic_uint hopen[LF_HOPEN_SLOTS]; /* open handles, by inode (ino % LF_HOPEN_SLOTS) */

	pthread_mutex_t dlock;
	struct lf_odir *odirs[LF_WRITER_BUCKETS]; /* protected by dlock */

	pthread_mutex_t glock;
	struct lf_groups *groups; /* protected by glock: LF_GROUPS_SLOTS */

	pthread_mutex_t alock;
	uint64_t agen;	    /* protected by alock */
	uint64_t ogen;	    /* protected by alock: agen's changes and a file's alone */
	unsigned ainflight; /* protected by alock: changes running */
	struct lf_dirattr attrs[LF_DIRATTR_SLOTS]; /* protected by alock */

	atomic_int unreachable;	  /* 1 after a call failed for want of a server */
	atomic_int readahead_set; /* 1 once the readahead of the mount was set */
};

/* fuse_dirattr.c: a directory's attributes from the last create, unlink or rename in it,
 * and a file's from a read-only open, for the kernel's next GETATTRs of it. Any thread. */
/* Before a change to directories (a create, unlink, rename, mkdir, setattr, xattr): its
 * generation. */
uint64_t lf_dirattr_begin(struct lode_fuse *lf);
/* After it (whatever its result): st[0..n) are the directories' attributes its reply gave
 * (ino 0: none), kept unless another change ran beside it. */
void lf_dirattr_end(struct lode_fuse *lf, uint64_t gen, const struct lode_stat *st, unsigned n);
/* Before an open's call to the MDS: the generation now (0 while a change runs). */
uint64_t lf_dirattr_peek(struct lode_fuse *lf);
/* An open's attributes st, asked for from the MDS after lf_dirattr_peek gave gen (0:
 * nothing to offer: a writer's open, or a change was running): kept if no change began
 * since and no open here found a newer version. Returns whether st is the newest
 * (lf_version_newest), offered or not. */
bool lf_dirattr_offer(struct lode_fuse *lf, uint64_t gen, const struct lode_stat *st);
/* This mount changed file ino (its writer's last close, a truncating open), after the
 * change reached the MDS: drops its entry, and no open's attributes fetched before are
 * kept. */
void lf_dirattr_forget(struct lode_fuse *lf, uint64_t ino);
/* The entry for ino, if still good, and the seconds left of attr_timeout. */
bool lf_dirattr_get(struct lode_fuse *lf, uint64_t ino, struct lode_stat *st, double *ttl);

/* fuse_defer.c: runs fn on a copy of arg's len bytes (freed after) on one of the mount's
 * own threads, which may wait for a lock that request threads must not (a request it
 * answers is answered from there). 0, or -errno if it cannot (fn not run). */
int lf_defer(struct lode_fuse *lf, void (*fn)(void *arg), const void *arg, size_t len);
/* 0 or -ENOMEM. */
int lf_defer_init(struct lode_fuse *lf);
/* When no request thread is left: runs what is queued, then ends the threads; work
 * offered after is refused (-ESHUTDOWN). */
void lf_defer_stop(struct lode_fuse *lf);
void lf_defer_fini(struct lode_fuse *lf);

/* Metrics (fuse_metrics.c): counted always, served with --metrics HOST:PORT. Any thread. */
uint64_t lf_metrics_now_ns(void);
/* A read returned bytes, readahead_bytes of them from liblode's read-ahead; it began at
 * start_ns (lf_metrics_now_ns). */
void lf_metrics_read(uint64_t bytes, uint64_t readahead_bytes, uint64_t start_ns);
void lf_metrics_write(uint64_t bytes);
/* An open kept (true) or dropped the kernel's cached pages of the file. */
void lf_metrics_open_cache(bool kept);
/* An open was finished off a request thread (fuse_file.c, open_finish_or_defer). */
void lf_metrics_open_deferred(void);
/* A request answered with errno err (> 0). */
void lf_metrics_error(int err);
/* The kernel sent a request of this FUSE opcode (fuse_dev.c, as it reads each one). */
void lf_metrics_request(uint32_t opcode);
/* The reply to a request of that opcode went out ns nanoseconds after it was read. */
void lf_metrics_request_done(uint32_t opcode, uint64_t ns);
/* The lode_metrics_collect_fn of lode-fuse (arg unused). */
struct lode_metrics_buf;
void lf_metrics_collect(void *arg, struct lode_metrics_buf *b);

/* fuse_dev.c: after fuse_session_mount(), routes the session's /dev/fuse I/O through
 * lode-fuse so that INIT takes the flags libfuse 3.14 leaves out (FUSE_PARALLEL_DIROPS,
 * FUSE_HANDLE_KILLPRIV_V2, FUSE_DIRECT_IO_ALLOW_MMAP), and requests are counted. 0 or
 * -errno. */
int lf_dev_hook(struct lode_fuse *lf);
/* A ring thread's request (fuse_uring.c), timed as fuse_dev.c times what it reads. */
void lf_dev_request_begin(uint64_t unique, uint32_t opcode);
/* The kernel refused a ring entry, and serves the mount through /dev/fuse. */
void lf_dev_uring_refused(void);

/* ---- fuse_uring.c: requests over io_uring (-o io_uring) ---- */

/* Threads a CPU queue starts with, each serving one request at a time; and the entries
 * it keeps waiting for requests, starting threads (up to max_threads) while fewer do. */
#define LF_URING_THREADS 4
#define LF_URING_SPARE	 4
struct lf_uring;
/* Makes the queues' rings and buffers for /dev/fuse fd, before the INIT reply takes
 * FUSE_OVER_IO_URING; payload_max is the kernel's largest request or reply body. Returns 0
 * or -errno. */
int lf_uring_prepare(struct lode_fuse *lf, int fd, size_t payload_max);
/* After that INIT reply: starts their threads, each of which registers its entry. */
void lf_uring_start(struct lode_fuse *lf);
/* Once the session loop ended, before lf_defer_stop: no more threads, hand-offs or
 * kicks. */
void lf_uring_quiesce(struct lode_fuse *lf);
/* After lf_defer_stop (deferred replies go to the rings): stops and joins the threads,
 * and frees the rings. */
void lf_uring_stop(struct lode_fuse *lf);
/* If iov (a reply) answers a ring request: puts it in its entry and commits it, setting
 * *written as writev would. Returns whether it did. */
bool lf_uring_reply(struct lode_fuse *lf, const struct iovec *iov, int count, ssize_t *written);
/* Ring threads started so far (all queues; the process's one mount), requests handed
 * to threads of their own because their queue had no other entry waiting, and the
 * kicker's GETATTRs (fuse_uring.c). Any thread. */
void lf_uring_counts(uint64_t *threads, uint64_t *handoffs, uint64_t *kicks);
/* Whether the kernel lets MAP_SHARED map a direct_io (O_DIRECT) open: FOPEN_DIRECT_IO
 * then; otherwise O_DIRECT opens use page-cache mode (the kernel still bypasses it). */
bool lf_dio_mmap(void);
/* Whether the kernel leaves dropping setuid, setgid and capabilities on write, truncate
 * and chown to us and stops asking for security.capability before every write. */
bool lf_killpriv_v2(void);
/* Whether the mount's requests come over io_uring (fuse_uring.c). */
bool lf_io_uring(void);
/* Whether the kernel looks names up in one directory in parallel. */
bool lf_parallel_dirops(void);

/* Set once daemonized without --log: lf_log() goes to syslog from then on; else it
 * writes lode_log() lines (proto/daemon/log.h) to stderr. */
extern bool lf_log_syslog;
void lf_log(enum lf_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The mount of a request, with the caller's credentials (squashed if asked; with its
 * supplementary groups, read from /proc and cached briefly) set as this thread's override
 * (lode_thread_creds_set_groups) for the liblode calls it makes next. */
struct lode_fuse *lf_req(fuse_req_t req);
/* The uid lf_req() set for this thread's calls, and whether gid is one of its groups. */
uint32_t lf_caller_uid(void);
bool lf_caller_in_group(uint32_t gid);
/* Replies a negative errno from liblode, mapped for the application; never replies 0. */
void lf_reply_err(fuse_req_t req, int rc);
/* Replies the status of a call with nothing to return: success for 0, else lf_reply_err. */
void lf_reply_status(fuse_req_t req, int rc);
/* On a read-only mount (-o ro), answers a mutation EROFS and returns true. */
bool lf_refuse_ro(fuse_req_t req, const struct lode_fuse *lf);
/* Notes that a server answered (for the "reachable again" log line). */
void lf_ok(struct lode_fuse *lf);

void lf_stat_to_attr(const struct lode_stat *st, struct stat *out);
void lf_reply_entry(fuse_req_t req, struct lode_fuse *lf, const struct lode_stat *st);
void lf_fill_entry(struct lode_fuse *lf, const struct lode_stat *st, struct fuse_entry_param *e);

/* Whether the kernel may keep the cached pages of ino, given its attributes now; records
 * them as what the cache holds from here on. */
bool lf_cache_keep(struct lode_fuse *lf, uint64_t ino, int64_t mtime_ns, uint64_t size);
void lf_cache_forget(struct lode_fuse *lf, uint64_t ino);
/* The attributes of st were given to the kernel (a LOOKUP's or GETATTR's reply). */
void lf_kattr_note(struct lode_fuse *lf, const struct lode_stat *st);
/* This mount changed ino or is about to (a writer gone, a setattr): what the kernel holds of
 * its attributes may differ from what it was given, and an open's (lf_dirattr_offer) are
 * older. */
void lf_kattr_forget(struct lode_fuse *lf, uint64_t ino);
/* Every reply that gives the kernel a file's attributes passes st here first. */
void lf_ksize_told(struct lode_fuse *lf, const struct lode_stat *st);
/* The newest open of ino dropped the kernel's attributes: it knows it is size bytes. */
void lf_ksize_reset(struct lode_fuse *lf, uint64_t ino, uint64_t size);
/* Whether the kernel may believe file ino is longer than end (unknown: yes). */
bool lf_ksize_beyond(struct lode_fuse *lf, uint64_t ino, uint64_t end);
/* Whether the kernel may believe file ino is shorter than size (unknown: yes). */
bool lf_ksize_below(struct lode_fuse *lf, uint64_t ino, uint64_t size);
/* Whether st is no older than any version of its file an open of this mount found
 * (ctime, then mtime, then size), noting it as the newest if so. */
bool lf_version_newest(struct lode_fuse *lf, const struct lode_stat *st);
/* Whether the attributes last given to the kernel for st->ino are st's (size, times,
 * mode, owner): likely what the kernel holds, not certainly (fuse_state.c). */
bool lf_kattr_same(struct lode_fuse *lf, const struct lode_stat *st);

/* fuse_writer.c: the shared write handles and their write-behind */

/* Clears setuid and setgid of a regular file as Linux does when someone without
 * CAP_FSETID (here: uid 0) writes or truncates it, or when anyone chowns it (chown):
 * setuid always, setgid when the group may execute or the caller is neither in the file's
 * group nor root. st: the file's attributes now; on return st->mode is the mode it has.
 * Uses the credentials lf_req() set. 0 or -errno. */
int lf_kill_privs(struct lode_fuse *lf, struct lode_stat *st, bool chown);
/* Before a write through w by the caller of req: lf_kill_privs when the file has a
 * privilege bit to lose. 0 or -errno. */
int lf_writer_kill_privs(struct lode_fuse *lf, fuse_req_t req, struct lf_writer *w);
/* The writer of ino with a reference taken, or NULL; waits out one that is closing. */
struct lf_writer *lf_writer_find(struct lode_fuse *lf, uint64_t ino);
/* Whether this mount has a writer of ino (after one that is closing is gone). */
bool lf_writer_exists(struct lode_fuse *lf, uint64_t ino);
/* lode_ll_open() and lode_ll_truncate() that wait up to LF_LEASE_WAIT_MS for a write
 * lease another mount is giving back (it closed the file; its RELEASE is on the way). */
int lf_open_lease(struct lode_fuse *lf, uint64_t ino, int flags, struct lode_file **out);
int lf_truncate_lease(struct lode_fuse *lf, uint64_t ino, uint64_t size);
/* The writer of ino, opened now (flags: the FUSE open's; O_TRUNC truncates) if this
 * mount has none, with a reference taken. Returns 0 or -errno. */
int lf_writer_open(struct lode_fuse *lf, uint64_t ino, int flags, struct lf_writer **out);
/* Enters a handle that lode_ll_create() opened (a new file has no writer yet); the writer
 * owns f from then on. Returns 0 or -ENOMEM (f is then still the caller's). */
int lf_writer_adopt(struct lode_fuse *lf, struct lode_file *f, bool readable,
		    struct lf_writer **out);
/* Hands buffered writes to liblode, so that reads, attributes and truncates see them.
 * Failures stay recorded for the next write, flush or fsync. */
void lf_writer_drain(struct lf_writer *w);
/* Drains, and returns (and forgets) the first write-behind failure; free_buffer gives
 * the buffers back (an idle open file keeps no 16 MiB). */
int lf_writer_sync_err(struct lf_writer *w, bool free_buffer);
/* A FUSE write: gathered for write-behind, or written through. Returns size or -errno. */
ssize_t lf_writer_write(struct lf_writer *w, const char *buf, size_t size, uint64_t pos,
			bool write_through);
/* Drops a reference; the last one closes the liblode handle. Returns lode_close()'s
 * result when it closed, else 0. */
int lf_writer_put(struct lode_fuse *lf, struct lf_writer *w);
/* Attributes as this mount knows them: the MDS's, with the size of our own writer. */
int lf_getattr(struct lode_fuse *lf, uint64_t ino, struct lode_stat *st);
void lf_fix_size(struct lode_fuse *lf, struct lode_stat *st);

/* fuse_entry.c */
void lf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void lf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void lf_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void lf_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void lf_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void lf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void lf_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void lf_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags);
void lf_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void lf_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void lf_readlink(fuse_req_t req, fuse_ino_t ino);

/* fuse_attr.c */
void lf_getattr_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void lf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		struct fuse_file_info *fi);
void lf_statfs(fuse_req_t req, fuse_ino_t ino);

/* fuse_dir.c */
/* The attributes of ino as of when it was open as a directory and last seen, with nlink 0,
 * for a directory since removed; false if no process has it open. */
bool lf_odir_removed_attr(struct lode_fuse *lf, uint64_t ino, struct lode_stat *st);
/* Records fresh attributes of a directory, if it is open. */
void lf_odir_note(struct lode_fuse *lf, const struct lode_stat *st);
void lf_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void lf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void lf_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void lf_releasedir_ino(struct lode_fuse *lf, uint64_t ino);
void lf_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void lf_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);

/* fuse_file.c */
void lf_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi);
void lf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void lf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void lf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi);
void lf_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
		  struct fuse_file_info *fi);
void lf_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void lf_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void lf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* For setattr: the writer behind an open handle, or NULL. */
struct lf_writer *lf_handle_writer(struct fuse_file_info *fi);

/* fuse_xattr.c */
void lf_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
		 int flags);
void lf_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void lf_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void lf_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

#endif
