/* SPDX-License-Identifier: MIT */
/* Test fixture: a lode-oss in this process and a client of it; see oss_fixture.h. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "codec.h"
#include "fixture.h"
#include "oss_fixture.h"

int oss_fixture_store_open(char *dir, size_t size, const char *prefix, struct lode_objstore **st)
{
	int err;

	err = fixture_tmpdir_make(dir, size, prefix);
	if (err)
		return err;
	err = lode_objstore_open(st, dir);
	if (err)
		fixture_tmpdir_remove(dir);
	return err;
}

void oss_fixture_store_close(const char *dir, struct lode_objstore *st)
{
	lode_objstore_close(st);
	fixture_tmpdir_remove(dir);
}

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* Linux 6.5, the same number on every architecture */
#endif

long oss_fixture_pages(const char *path, uint64_t off, uint64_t len, bool dirty)
{
	struct {
		uint64_t off, len;
	} range = {off, len};
	struct {
		uint64_t cache, dirty, writeback, evicted, recently_evicted;
	} cs;
	struct statfs sfs;
	int fd = open(path, O_RDONLY);
	long r = -1;

	if (fd < 0)
		return -1;
	if (!fstatfs(fd, &sfs) && sfs.f_type != TMPFS_MAGIC &&
	    !syscall(__NR_cachestat, fd, &range, &cs, 0))
		r = (long)(dirty ? cs.dirty : cs.cache);
	close(fd);
	return r;
}

long oss_fixture_uncache(const char *path)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fdatasync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	close(fd);
	return oss_fixture_pages(path, 0, 0, false);
}

struct oss_fixture *oss_fixture_new(void)
{
	struct oss_fixture *f = calloc(1, sizeof(*f));
	struct lode_server_opts so = {.threads = 2, .ops = &lode_oss_server_ops};

	if (!f)
		return NULL;
	if (oss_fixture_store_open(f->dir, sizeof(f->dir), "lode-osshdl", &f->st))
		goto err_free;
	lode_oss_init(&f->oss, f->st);
	so.listen[0] = "tcp://127.0.0.1:0";
	so.ctx = &f->oss;
	if (lode_server_start(&f->srv, &so))
		goto err_store;
	if (fixture_rpc_connect(lode_server_address(f->srv, 0), 5000, &f->rpc, &f->conn))
		goto err_srv;
	return f;

err_srv:
	lode_server_stop(f->srv);
	lode_oss_fini(&f->oss);
err_store:
	oss_fixture_store_close(f->dir, f->st);
err_free:
	free(f);
	return NULL;
}

void oss_fixture_free(struct oss_fixture *f)
{
	if (!f)
		return;
	lode_rpc_destroy(f->rpc);
	lode_server_stop(f->srv);
	lode_oss_fini(&f->oss);
	oss_fixture_store_close(f->dir, f->st);
	free(f);
}

int oss_fixture_write(struct oss_fixture *f, struct lode_wire_objid id, uint64_t off,
		      const char *data, size_t len, int corrupt_sum)
{
	uint32_t n = (uint32_t)((len + LODE_CHUNK_SIZE - 1) / LODE_CHUNK_SIZE);
	uint64_t
	    body[(sizeof(struct lode_wire_obj_write_req) + 8 * (LODE_DATA_MAX / LODE_CHUNK_SIZE)) /
		 8] = {0};
	struct lode_wire_obj_write_req *req = (void *)body;
	uint64_t *sums = (uint64_t *)(req + 1);
	struct lode_wire_obj_rep rep;
	struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
	struct lode_call call = {
	    .opcode = LODE_OP_OBJ_WRITE,
	    .body = body,
	    .body_len = (uint32_t)(sizeof(*req) + 8 * n),
	    .data = &iov,
	    .data_iovcnt = 1,
	    .reply_body = &rep,
	    .reply_body_max = sizeof(rep),
	};

	assert_true(len <= LODE_DATA_MAX);
	req->obj = id;
	req->offset = off;
	req->nchunks = n;
	fixture_chunk_sums(data, len, sums);
	if (corrupt_sum)
		sums[0] ^= 1;
	return lode_rpc_call(f->conn, &call);
}

int oss_fixture_read(struct lode_rpc_conn *conn, struct lode_wire_objid id, uint64_t off,
		     uint32_t len, void *data, struct oss_fixture_read_rep *rep)
{
	uint64_t
	    body[(sizeof(struct lode_wire_obj_read_rep) + 8 * (LODE_DATA_MAX / LODE_CHUNK_SIZE)) /
		 8];
	struct lode_wire_obj_read_req req = {.obj = id, .offset = off, .length = len};
	struct lode_call call = {
	    .opcode = LODE_OP_OBJ_READ,
	    .body = &req,
	    .body_len = sizeof(req),
	    .reply_body = body,
	    .reply_body_max = sizeof(body),
	    .reply_data = data,
	    .reply_data_max = len,
	};
	const struct lode_wire_obj_read_rep *r;
	const uint64_t *sums;
	int err;

	assert_true(len <= LODE_DATA_MAX);
	err = lode_rpc_call(conn, &call);
	if (err)
		return err;
	assert_int_equal(lode_dec_obj_read_rep(body, call.reply_body_len, call.reply_data_len,
					       req.length, &r, &sums),
			 0);
	rep->object_size = r->object_size;
	rep->nchunks = r->nchunks;
	memcpy(rep->sums, sums, (size_t)r->nchunks * 8);
	rep->data_len = call.reply_data_len;
	return 0;
}
