/* SPDX-License-Identifier: MIT */
/*
 * tcp_pair: the loopback ceiling for liblode's data path. A sender thread writes SIZE bytes
 * in 1 MiB write()s over a TCP connection on 127.0.0.1 to a receiver thread that read()s
 * them into a 1 MiB buffer: the same bytes a Lode read moves from an OSS to the client,
 * without protocol, checksums or striping. Prints "bytes=N seconds=S".
 *
 * Usage: tcp_pair --size BYTES [--bs BYTES] [--timeout S]
 */
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct side {
	int fd;
	uint64_t size;
	size_t bs;
	int err; /* errno of the first failure, 0 if none */
};

static void *sender(void *arg)
{
	struct side *s = arg;
	char *buf = bench_alloc(s->bs);
	uint64_t left = s->size;

	bench_fill(buf, s->bs, 1);
	while (left) {
		size_t n = left < s->bs ? (size_t)left : s->bs;
		ssize_t w = write(s->fd, buf, n);

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
		ssize_t r = read(s->fd, buf, s->bs);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			s->err = r < 0 ? errno : EPIPE;
			break;
		}
		got += (uint64_t)r;
	}
	free(buf);
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: tcp_pair --size BYTES [--bs BYTES] [--timeout S]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t size = 0, bs = 1 << 20, timeout = 600;
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);
	struct side tx = {0}, rx = {0};
	pthread_t tt, rt;
	int lfd, one = 1;
	double t0, t1;

	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--size")) {
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
