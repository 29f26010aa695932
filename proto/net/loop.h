/* SPDX-License-Identifier: MIT */
/*
 * lode_loop: one io_uring event loop per thread.
 *
 * Everything a Lode thread waits for (socket I/O, disk I/O, timers, messages from other
 * threads) is an SQE on its own ring whose user_data points to a struct lode_io. When the
 * CQE arrives the loop calls io->cb(io, cqe->res) on the loop's thread. Embed struct
 * lode_io in the object that owns the operation and recover it with container_of().
 *
 * Only lode_loop_post() and lode_loop_stop() may be called from other threads; all other
 * functions are for the loop's own thread (or before lode_loop_run() starts).
 */
#ifndef LODE_PROTO_LOOP_H
#define LODE_PROTO_LOOP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define lode_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

struct lode_loop;
struct io_uring_sqe;

struct lode_io {
	void (*cb)(struct lode_io *io, int res); /* res: cqe->res (bytes or -errno) */
};

/* Creates a loop with a ring of `entries` SQEs. Returns 0 or -errno. */
int lode_loop_create(struct lode_loop **out, unsigned entries);
/* Destroys a loop that is not running. NULL is accepted. */
void lode_loop_destroy(struct lode_loop *loop);

/* Runs until lode_loop_stop(). Returns 0, or -errno if the ring itself failed. A stopped
 * loop may be run again. */
int lode_loop_run(struct lode_loop *loop);
/* Asks the loop to return from lode_loop_run() soon. Any thread. */
void lode_loop_stop(struct lode_loop *loop);
/* Runs fn(arg) on the loop's thread soon. Any thread; never fails (allocates a small node;
 * aborts on out-of-memory). Functions posted before lode_loop_stop() still run. */
void lode_loop_post(struct lode_loop *loop, void (*fn)(void *arg), void *arg);
/* Runs, on the calling thread, the functions posted to a loop that is not running (so that
 * nothing posted is lost before lode_loop_destroy()). */
void lode_loop_run_pending(struct lode_loop *loop);
/* The loop whose lode_loop_run() is executing on this thread, or NULL. */
struct lode_loop *lode_loop_current(void);

/* A fresh SQE with user_data = io, flushing the ring if it is full. Never NULL. The caller
 * fills in the operation (io_uring_prep_*); the loop submits it on its next turn. */
struct io_uring_sqe *lode_loop_sqe(struct lode_loop *loop, struct lode_io *io);

/* Cancels the operation io has in flight; its callback then runs with -ECANCELED (or its
 * own result, if it completed first). */
void lode_loop_cancel(struct lode_loop *loop, struct lode_io *io);

/* Convenience wrappers around lode_loop_sqe() for disk I/O (len < 4 GiB: one SQE). */
void lode_loop_pread(struct lode_loop *loop, struct lode_io *io, int fd, void *buf, size_t len,
		     off_t off);
void lode_loop_pwrite(struct lode_loop *loop, struct lode_io *io, int fd, const void *buf,
		      size_t len, off_t off);
void lode_loop_fsync(struct lode_loop *loop, struct lode_io *io, int fd, int datasync);
/* sync_file_range(2) of [off, off + len) with flags (SYNC_FILE_RANGE_*). */
void lode_loop_sync_range(struct lode_loop *loop, struct lode_io *io, int fd, off_t off, size_t len,
			  unsigned flags);
/* Calls io->cb(io, -ETIME) after ms milliseconds (res is -ETIME on expiry, -ECANCELED if
 * cancelled). The timespec lives in ts, which must stay valid until the callback. */
struct lode_timer {
	struct lode_io io;
	int64_t ts_[2];
};
void lode_loop_timer(struct lode_loop *loop, struct lode_timer *t, unsigned ms);

/* Monotonic milliseconds. */
uint64_t lode_now_ms(void);
/* Wall-clock nanoseconds since the epoch. */
int64_t lode_now_ns(void);

#endif
