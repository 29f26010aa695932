/* SPDX-License-Identifier: MIT */
/*
 * The per-thread io_uring event loop.
 *
 * Turn structure: submit everything queued and wait for at least one completion, then
 * drain every completion that is ready, calling each operation's callback, and advance
 * the completion queue once. Callbacks queue new SQEs, which go out on the next turn.
 *
 * Cross-thread messages: other threads push onto a mutex-protected list and write the
 * loop's eventfd; the loop keeps a read posted on that eventfd and runs the list when it
 * completes. The mutex is only taken by lode_loop_post(), never by the loop's hot path
 * unless a message is waiting.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "loop.h"

struct post_msg {
	void (*fn)(void *arg);
	void *arg;
	struct post_msg *next;
};

struct lode_loop {
	struct io_uring ring;
	int efd;
	uint64_t efd_val;
	struct lode_io efd_io;
	bool stopping;

	pthread_mutex_t post_lock;
	struct post_msg *post_head; /* protected by post_lock */
	struct post_msg *post_tail; /* protected by post_lock */
};

static __thread struct lode_loop *current_loop;

uint64_t lode_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int64_t lode_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct lode_loop *lode_loop_current(void)
{
	return current_loop;
}

struct io_uring_sqe *lode_loop_sqe(struct lode_loop *loop, struct lode_io *io)
{
	struct io_uring_sqe *sqe;

	while (!(sqe = io_uring_get_sqe(&loop->ring)))
		io_uring_submit(&loop->ring);
	io_uring_sqe_set_data(sqe, io);
	return sqe;
}

static void run_posted(struct lode_loop *loop)
{
	struct post_msg *m;

	pthread_mutex_lock(&loop->post_lock);
	m = loop->post_head;
	loop->post_head = loop->post_tail = NULL;
	pthread_mutex_unlock(&loop->post_lock);
	while (m) {
		struct post_msg *next = m->next;

		m->fn(m->arg);
		free(m);
		m = next;
	}
}

static void efd_arm(struct lode_loop *loop);

void lode_loop_run_pending(struct lode_loop *loop)
{
	run_posted(loop);
}

static void efd_done(struct lode_io *io, int res)
{
	struct lode_loop *loop = lode_container_of(io, struct lode_loop, efd_io);

	(void)res;
	run_posted(loop);
	efd_arm(loop);
}

static void efd_arm(struct lode_loop *loop)
{
	struct io_uring_sqe *sqe = lode_loop_sqe(loop, &loop->efd_io);

	io_uring_prep_read(sqe, loop->efd, &loop->efd_val, sizeof(loop->efd_val), 0);
}

int lode_loop_create(struct lode_loop **out, unsigned entries)
{
	struct io_uring_params p = {0};
	struct lode_loop *loop;
	int rc;

	loop = calloc(1, sizeof(*loop));
	if (!loop)
		return -ENOMEM;
	p.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN;
	p.flags |= IORING_SETUP_CQSIZE;
	p.cq_entries = entries * 4;
	rc = io_uring_queue_init_params(entries, &loop->ring, &p);
	if (rc == -EINVAL) {
		/* older kernels: no SUBMIT_ALL/COOP_TASKRUN */
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_CQSIZE;
		p.cq_entries = entries * 4;
		rc = io_uring_queue_init_params(entries, &loop->ring, &p);
	}
	if (rc < 0)
		goto err_free;
	loop->efd = eventfd(0, EFD_CLOEXEC);
	if (loop->efd < 0) {
		rc = -errno;
		goto err_ring;
	}
	pthread_mutex_init(&loop->post_lock, NULL);
	loop->efd_io.cb = efd_done;
	efd_arm(loop);
	*out = loop;
	return 0;

err_ring:
	io_uring_queue_exit(&loop->ring);
err_free:
	free(loop);
	return rc;
}

void lode_loop_destroy(struct lode_loop *loop)
{
	struct post_msg *m, *next;

	if (!loop)
		return;
	for (m = loop->post_head; m; m = next) {
		next = m->next;
		free(m);
	}
	io_uring_queue_exit(&loop->ring);
	close(loop->efd);
	pthread_mutex_destroy(&loop->post_lock);
	free(loop);
}

void lode_loop_post(struct lode_loop *loop, void (*fn)(void *arg), void *arg)
{
	struct post_msg *m = malloc(sizeof(*m));
	uint64_t one = 1;
	bool was_empty;

	if (!m)
		abort();
	m->fn = fn;
	m->arg = arg;
	m->next = NULL;
	pthread_mutex_lock(&loop->post_lock);
	was_empty = loop->post_head == NULL;
	if (loop->post_tail)
		loop->post_tail->next = m;
	else
		loop->post_head = m;
	loop->post_tail = m;
	pthread_mutex_unlock(&loop->post_lock);
	if (was_empty && write(loop->efd, &one, sizeof(one)) < 0)
		abort(); /* an eventfd write only fails on overflow, after 2^64 posts */
}

static void stop_fn(void *arg)
{
	((struct lode_loop *)arg)->stopping = true;
}

void lode_loop_stop(struct lode_loop *loop)
{
	lode_loop_post(loop, stop_fn, loop);
}

int lode_loop_run(struct lode_loop *loop)
{
	struct io_uring_cqe *cqe;
	int rc = 0;

	current_loop = loop;
	loop->stopping = false;
	while (!loop->stopping) {
		unsigned head, n = 0;

		rc = io_uring_submit_and_wait(&loop->ring, 1);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY && rc != -ETIME)
			break;
		rc = 0;
		io_uring_for_each_cqe(&loop->ring, head, cqe)
		{
			struct lode_io *io = io_uring_cqe_get_data(cqe);
			int res = cqe->res;

			n++;
			if (io)
				io->cb(io, res);
		}
		io_uring_cq_advance(&loop->ring, n);
	}
	/* run what was posted before the stop so that nothing posted is lost */
	run_posted(loop);
	current_loop = NULL;
	return rc;
}

void lode_loop_cancel(struct lode_loop *loop, struct lode_io *io)
{
	struct io_uring_sqe *sqe = lode_loop_sqe(loop, NULL);

	io_uring_prep_cancel(sqe, io, 0);
	io_uring_sqe_set_data(sqe, NULL);
}

void lode_loop_pread(struct lode_loop *loop, struct lode_io *io, int fd, void *buf, size_t len,
		     off_t off)
{
	io_uring_prep_read(lode_loop_sqe(loop, io), fd, buf, (unsigned)len, (uint64_t)off);
}

void lode_loop_pwrite(struct lode_loop *loop, struct lode_io *io, int fd, const void *buf,
		      size_t len, off_t off)
{
	io_uring_prep_write(lode_loop_sqe(loop, io), fd, buf, (unsigned)len, (uint64_t)off);
}

void lode_loop_fsync(struct lode_loop *loop, struct lode_io *io, int fd, int datasync)
{
	io_uring_prep_fsync(lode_loop_sqe(loop, io), fd, datasync ? IORING_FSYNC_DATASYNC : 0);
}

void lode_loop_sync_range(struct lode_loop *loop, struct lode_io *io, int fd, off_t off, size_t len,
			  unsigned flags)
{
	io_uring_prep_sync_file_range(lode_loop_sqe(loop, io), fd, (unsigned)len, off, (int)flags);
}

void lode_loop_timer(struct lode_loop *loop, struct lode_timer *t, unsigned ms)
{
	struct __kernel_timespec *ts = (struct __kernel_timespec *)t->ts_;

	_Static_assert(sizeof(t->ts_) >= sizeof(*ts), "timer storage");
	ts->tv_sec = ms / 1000;
	ts->tv_nsec = (long long)(ms % 1000) * 1000000;
	io_uring_prep_timeout(lode_loop_sqe(loop, &t->io), ts, 0, 0);
}
