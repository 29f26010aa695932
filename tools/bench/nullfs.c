/* SPDX-License-Identifier: MIT */
/*
 * nullfs: the ceiling of any FUSE client on this kernel, for tools/bench/run.sh.
 *
 * A libfuse 3 low-level file system with one regular file, /data, of --size bytes, whose
 * reads are answered from one static 1 MiB buffer: no storage, no network, no copy but
 * the one FUSE itself makes. It negotiates what lode-fuse does (1 MiB requests through
 * max_write/max_pages, no max_read limit below that, async direct I/O) and runs
 * multi-threaded, so that a read through lode-fuse compared with a read of nullfs in the
 * same mode (page cache, or O_DIRECT, which nullfs answers with direct_io) shows what
 * Lode costs over FUSE itself. Writes are accepted and discarded.
 *
 * Usage: nullfs --size BYTES [--threads N] MOUNTPOINT   (stays in the foreground;
 * SIGTERM/SIGINT or fusermount3 -u unmount)
 */
#include "util.h"

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DATA_INO 2
#define IO_MAX	 (1u << 20)

static uint64_t file_size;
static char zero_page[IO_MAX]; /* written once at start, read-only after */

static void fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = (off_t)file_size;
		st->st_blocks = (blkcnt_t)((file_size + 511) / 512);
	}
	st->st_blksize = IO_MAX;
}

static void nf_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = IO_MAX; /* libfuse derives max_pages (256) from it */
	conn->max_read = 0;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE | FUSE_CAP_WRITEBACK_CACHE);
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
}

static void nf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = {0};

	if (parent != FUSE_ROOT_ID || strcmp(name, "data")) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	e.ino = DATA_INO;
	e.attr_timeout = 3600;
	e.entry_timeout = 3600;
	fill_stat(DATA_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void nf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != DATA_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void nf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	(void)attr;
	(void)to_set;
	nf_getattr(req, ino, fi); /* sizes and times are fixed; O_TRUNC is harmless */
}

static void nf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != DATA_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* the same choice lode-fuse makes: O_DIRECT bypasses the page cache, other opens keep
	 * what is cached (the content never changes) */
	fi->direct_io = (fi->flags & O_DIRECT) != 0;
	fi->keep_cache = !fi->direct_io;
	fuse_reply_open(req, fi);
}

static void nf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	uint64_t o = (uint64_t)off;
	size_t n;

	(void)ino;
	(void)fi;
	n = o >= file_size ? 0 : (file_size - o < size ? (size_t)(file_size - o) : size);
	if (n > IO_MAX)
		n = IO_MAX; /* never more than max_pages asks for; a short read is legal */
	fuse_reply_buf(req, zero_page, n);
}

static void nf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)off;
	(void)fi;
	fuse_reply_write(req, size);
}

static void nf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	static const char *names[] = {".", "..", "data"};
	char buf[512];
	size_t used = 0;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (size > sizeof(buf))
		size = sizeof(buf);
	for (off_t i = off; i < 3; i++) {
		struct stat st = {0};
		size_t e;

		st.st_ino = i == 2 ? DATA_INO : FUSE_ROOT_ID;
		st.st_mode = i == 2 ? S_IFREG : S_IFDIR;
		e = fuse_add_direntry(req, buf + used, size - used, names[i], &st, i + 1);
		if (e > size - used)
			break;
		used += e;
	}
	fuse_reply_buf(req, buf, used);
}

static const struct fuse_lowlevel_ops ops = {
    .init = nf_init,
    .lookup = nf_lookup,
    .getattr = nf_getattr,
    .setattr = nf_setattr,
    .open = nf_open,
    .read = nf_read,
    .write = nf_write,
    .readdir = nf_readdir,
};

static void usage(void)
{
	fprintf(stderr, "usage: nullfs --size BYTES [--threads N] MOUNTPOINT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	char *fargv[] = {argv[0], "-o", "fsname=lode-bench-nullfs,subtype=nullfs", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	const char *mnt = NULL;
	uint64_t threads = 16;
	int rc = 1, i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc) {
			if (bench_parse_size("--size", argv[++i], 1, 1ull << 44, &file_size))
				usage();
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			if (bench_parse_size("--threads", argv[++i], 1, 256, &threads))
				usage();
		} else if (argv[i][0] != '-' && !mnt) {
			mnt = argv[i];
		} else {
			usage();
		}
	}
	if (!mnt || !file_size)
		usage();
	bench_fill(zero_page, sizeof(zero_page), 3);

	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		bench_die("nullfs: cannot create the FUSE session");
	if (fuse_set_signal_handlers(se))
		goto out_destroy;
	if (fuse_session_mount(se, mnt)) {
		fprintf(stderr, "nullfs: cannot mount %s\n", mnt);
		goto out_signals;
	}
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		goto out_unmount;
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, (unsigned)threads);
	fuse_loop_cfg_set_idle_threads(cfg, (unsigned)threads);
	rc = fuse_session_loop_mt(se, cfg) ? 1 : 0;
	fuse_loop_cfg_destroy(cfg);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_destroy:
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	return rc;
}
