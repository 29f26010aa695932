/* SPDX-License-Identifier: MIT */
/* Test fixture for the unit tests: see fixture.h. */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "codec.h"
#include "fixture.h"
#include "loop.h"

int fixture_tmpdir_make(char *dir, size_t size, const char *prefix)
{
	int n = snprintf(dir, size, "/tmp/%s-XXXXXX", prefix);

	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	if (!mkdtemp(dir))
		return -errno;
	return 0;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void fixture_tmpdir_remove(const char *dir)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

bool fixture_fd_named(int fd, const char *suffix)
{
	char link[64], path[4096];
	size_t len = strlen(suffix);
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		return false;
	path[n] = 0;
	return (size_t)n >= len && !strcmp(path + n - len, suffix);
}

void fixture_skip_without_io_uring(void)
{
	struct lode_loop *loop;
	int err = lode_loop_create(&loop, 8);

	if (err) {
		fprintf(stderr, "SKIP: io_uring is not available here (lode_loop_create: %s)\n",
			strerror(-err));
		exit(77);
	}
	lode_loop_destroy(loop);
}

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

unsigned fixture_wait_count(pthread_mutex_t *lock, pthread_cond_t *cond, const unsigned *count,
			    unsigned want, unsigned ms)
{
	unsigned long long end = now_ms() + ms;
	unsigned seen;

	pthread_mutex_lock(lock);
	while (*count < want && now_ms() < end) {
		struct timespec ts;

		/* short sleeps on the realtime clock: a clock step cannot stretch the wait */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(cond, lock, &ts);
	}
	seen = *count;
	pthread_mutex_unlock(lock);
	return seen;
}

size_t fixture_target_record(void *buf, uint32_t id, uint32_t state, const char *addr)
{
	struct lode_wire_target t = {.target_id = id,
				     .state = state,
				     .bytes_total = 1 << 30,
				     .bytes_free = 1 << 29,
				     .addr_len = (uint16_t)strlen(addr)};
	size_t len = (sizeof(t) + t.addr_len + 7) / 8 * 8;

	memset(buf, 0, len);
	memcpy(buf, &t, sizeof(t));
	memcpy((char *)buf + sizeof(t), addr, t.addr_len);
	return len;
}

struct lode_wire_objid fixture_oid(uint64_t ino, uint64_t gen, uint32_t stripe)
{
	struct lode_wire_objid id = {.ino = ino, .generation = gen, .stripe = stripe};

	return id;
}

char *fixture_pattern(size_t len, uint64_t seed)
{
	char *p = malloc(len ? len : 1);

	assert_non_null(p);
	pattern_fill(p, len, seed, 0);
	return p;
}

void fixture_chunk_sums(const void *data, size_t len, uint64_t *sums)
{
	for (size_t pos = 0, i = 0; pos < len; pos += LODE_CHUNK_SIZE, i++) {
		size_t n = len - pos < LODE_CHUNK_SIZE ? len - pos : LODE_CHUNK_SIZE;

		sums[i] = lode_chunk_sum((const char *)data + pos, n);
	}
}

int fixture_rpc_connect(const char *addr, unsigned timeout_ms, struct lode_rpc **rpc,
			struct lode_rpc_conn **conn)
{
	struct lode_rpc *r;
	int err;

	err = lode_rpc_create(&r, timeout_ms);
	if (err)
		return err;
	err = lode_rpc_conn_open(r, addr, conn);
	if (err) {
		lode_rpc_destroy(r);
		return err;
	}
	*rpc = r;
	return 0;
}
