/* SPDX-License-Identifier: MIT */
/*
 * tcp_pair: the loopback ceiling for liblode's data path. A sender thread writes SIZE bytes
 * in 1 MiB write()s over a TCP connection on 127.0.0.1 to a receiver thread that read()s
 * them into a 1 MiB buffer: the same bytes a Lode read moves from an OSS to the client,
 * without protocol, checksums or striping. Prints "bytes=N seconds=S".
 *
 * Two options add one of the costs a Lode read has, to measure what each costs here:
 * --splice FILE: the sender moves FILE's bytes (again from its start as often as SIZE
 * needs) file -> pipe -> socket with splice(), as lode-oss sends object data, instead of
 * write() from a buffer; --verify: the receiver reads whole BS blocks and computes the
 * xxh3-64 of every 64 KiB chunk of each (lode_chunk_sum), as liblode verifies a reply.
 * --pread FILE: the sender pread()s FILE into its buffer and write()s that, the other way
 * a server can send a cached file (one more copy, no pipe).
 *
 * Usage: tcp_pair --size BYTES [--bs BYTES] [--timeout S] [--splice FILE | --pread FILE]
 *                 [--verify]
 */
#include "util.h"

#include "codec.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct side {
	int fd;
	uint64_t size;
	size_t bs;
	int file_fd; /* sender: splice (or pread) from this file, or -1 */
	int use_pread;
	uint64_t file_size;
	int verify;   /* receiver: checksum every chunk */
	uint64_t sum; /* receiver: keeps the checksums from being optimized away */
	int err;      /* errno of the first failure, 0 if none */
};

/* Moves s->size bytes of the file into the socket through a pipe, never into user space. */
static void splice_send(struct side *s)
{
	int p[2];
	uint64_t left = s->size;
	loff_t off = 0;

	if (pipe(p)) {
		s->err = errno;
		return;
	}
	fcntl(p[1], F_SETPIPE_SZ, (int)s->bs); /* best effort, as lode-oss does */
	while (left && !s->err) {
		size_t n = left < s->bs ? (size_t)left : s->bs;
		ssize_t in, out;

		if ((uint64_t)off >= s->file_size)
			off = 0;
		if (n > s->file_size - (uint64_t)off)
			n = (size_t)(s->file_size - (uint64_t)off);
		in = splice(s->file_fd, &off, p[1], NULL, n, SPLICE_F_MOVE);
		if (in <= 0) {
			s->err = in < 0 ? errno : EIO;
			break;
		}
		while (in) {
			out = splice(p[0], NULL, s->fd, NULL, (size_t)in,
				     SPLICE_F_MOVE | SPLICE_F_MORE);
			if (out < 0 && errno == EINTR)
				continue;
			if (out <= 0) {
				s->err = out < 0 ? errno : EPIPE;
				break;
			}
			in -= out;
			left -= (uint64_t)out;
		}
	}
	close(p[0]);
	close(p[1]);
}

static void *sender(void *arg)
{
	struct side *s = arg;
	char *buf = bench_alloc(s->bs);
	uint64_t left = s->size;

	bench_fill(buf, s->bs, 1);
	if (s->file_fd >= 0 && !s->use_pread) {
		splice_send(s);
		left = 0;
	}
	while (left) {
		size_t n = left < s->bs ? (size_t)left : s->bs;
		ssize_t w;

		if (s->use_pread) {
			off_t off = (off_t)((s->size - left) % s->file_size);

			if ((uint64_t)off + n > s->file_size)
				n = (size_t)(s->file_size - (uint64_t)off);
			if (pread(s->file_fd, buf, n, off) != (ssize_t)n) {
				s->err = EIO;
				break;
			}
		}
		w = write(s->fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			s->err = w < 0 ? errno : EPIPE;
			break;
		}
		left -= (uint64_t)w;
	}
	shutdown(s->fd, SHUT_WR);
	free(buf);
	return NULL;
}

static void *receiver(void *arg)
{
	struct side *s = arg;
	char *buf = bench_alloc(s->bs);
	uint64_t got = 0;

	while (got < s->size) {
		size_t want = s->size - got < s->bs ? (size_t)(s->size - got) : s->bs;
		ssize_t r = recv(s->fd, buf, want, s->verify ? MSG_WAITALL : 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			s->err = r < 0 ? errno : EPIPE;
			break;
		}
		got += (uint64_t)r;
		for (size_t off = 0; s->verify && off < (size_t)r; off += LODE_CHUNK_SIZE)
			s->sum ^= lode_chunk_sum(buf + off, (size_t)r - off < LODE_CHUNK_SIZE
								? (size_t)r - off
								: LODE_CHUNK_SIZE);
	}
	free(buf);
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: tcp_pair --size BYTES [--bs BYTES] [--timeout S] "
			"[--splice FILE | --pread FILE] [--verify]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t size = 0, bs = 1 << 20, timeout = 600;
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);
	struct side tx = {.file_fd = -1}, rx = {.file_fd = -1};
	pthread_t tt, rt;
	int lfd, one = 1;
	double t0, t1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--verify")) {
			rx.verify = 1;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--splice") || !strcmp(argv[i], "--pread")) {
			struct stat st;

			tx.use_pread = !strcmp(argv[i], "--pread");
			tx.file_fd = open(argv[++i], O_RDONLY);
			if (tx.file_fd < 0 || fstat(tx.file_fd, &st) || st.st_size <= 0)
				bench_die("tcp_pair: %s: %s", argv[i],
					  tx.file_fd < 0 ? strerror(errno) : "empty or unreadable");
			tx.file_size = (uint64_t)st.st_size;
		} else if (!strcmp(argv[i], "--size")) {
			if (bench_parse_size("--size", argv[++i], 1, 1ull << 40, &size))
				usage();
		} else if (!strcmp(argv[i], "--bs")) {
			if (bench_parse_size("--bs", argv[++i], 4096, 256u << 20, &bs))
				usage();
		} else if (!strcmp(argv[i], "--timeout")) {
			if (bench_parse_size("--timeout", argv[++i], 1, 86400, &timeout))
				usage();
		} else {
			usage();
		}
	}
	if (!size)
		usage();
	bench_watchdog((unsigned)timeout);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen))
		bench_die("tcp_pair: listen on 127.0.0.1: %s", strerror(errno));
	tx.fd = socket(AF_INET, SOCK_STREAM, 0);
	if (tx.fd < 0 || connect(tx.fd, (struct sockaddr *)&a, sizeof(a)))
		bench_die("tcp_pair: connect: %s", strerror(errno));
	rx.fd = accept(lfd, NULL, NULL);
	if (rx.fd < 0)
		bench_die("tcp_pair: accept: %s", strerror(errno));
	close(lfd);
	setsockopt(tx.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	tx.size = rx.size = size;
	tx.bs = rx.bs = (size_t)bs;

	t0 = bench_now();
	if (pthread_create(&rt, NULL, receiver, &rx) || pthread_create(&tt, NULL, sender, &tx))
		bench_die("tcp_pair: cannot start threads");
	pthread_join(tt, NULL);
	pthread_join(rt, NULL);
	t1 = bench_now();
	if (tx.err || rx.err)
		bench_die("tcp_pair: %s", strerror(tx.err ? tx.err : rx.err));
	printf("bytes=%llu seconds=%.6f\n", (unsigned long long)size, t1 - t0);
	close(tx.fd);
	close(rx.fd);
	return 0;
}
