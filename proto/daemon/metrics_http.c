/* SPDX-License-Identifier: MIT */
/*
 * The metrics endpoint: GET /metrics over HTTP, served by libmicrohttpd on one internal
 * thread (so scrapes never run at once and collectors need no lock against each other).
 *
 * The socket is ours: bound and listening before libmicrohttpd starts, so a program reports
 * a bad or busy address before it starts anything else, and lode-fuse can bind in the
 * foreground and serve after it forks (a thread would not survive the fork).
 *
 * Bounds, since anything that can reach the port can connect: at most 32 connections, each
 * closed after 10 s idle; requests other than GET/HEAD of /metrics get 404 or 405 and no work.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "daemon.h"
#include "metrics.h"

#define HTTP_MAX_CONNS	  32
#define HTTP_IDLE_SECONDS 10

struct lode_metrics_http {
	int fd;
	struct MHD_Daemon *d;
	struct lode_metrics *m;
};

static void __attribute__((format(printf, 3, 4)))
say(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

/* "HOST:PORT" or "[V6]:PORT" -> host and port strings; the port must be numeric. */
static int split(const char *hp, char *host, size_t host_len, char *port, size_t port_len)
{
	const char *colon, *h = hp;
	size_t hl;

	if (hp[0] == '[') {
		const char *end = strchr(hp, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		h = hp + 1;
		hl = (size_t)(end - h);
		colon = end + 1;
	} else {
		colon = strrchr(hp, ':');
		if (!colon || memchr(hp, ':', (size_t)(colon - hp)))
			return -EINVAL; /* no port, or a bare IPv6 address */
		hl = (size_t)(colon - hp);
	}
	if (hl == 0 || hl >= host_len || strlen(colon + 1) >= port_len || !colon[1])
		return -EINVAL;
	for (const char *p = colon + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	if (strtoul(colon + 1, NULL, 10) > 65535)
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	strcpy(port, colon + 1);
	return 0;
}

int lode_metrics_http_open(struct lode_metrics_http **out, const char *hostport,
			   const char *port_file, char *bound, size_t bound_len, char *why,
			   size_t why_len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port[8], num[INET6_ADDRSTRLEN];
	struct lode_metrics_http *h;
	int fd, rc, one = 1;

	if (split(hostport, host, sizeof(host), port, sizeof(port))) {
		say(why, why_len, "--metrics wants HOST:PORT (e.g. 127.0.0.1:9100), not '%s'",
		    hostport);
		return -EINVAL;
	}
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		say(why, why_len, "--metrics: cannot resolve '%s': %s", host, gai_strerror(rc));
		return -EINVAL;
	}
	/* the first address only: listen where told, not on every address a name has */
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto err_ai;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		rc = -errno;
		goto err_fd;
	}
	freeaddrinfo(ai);
	h = calloc(1, sizeof(*h));
	if (!h) {
		close(fd);
		return -ENOMEM;
	}
	h->fd = fd;
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, num, sizeof(num));
		snprintf(bound, bound_len, "[%s]:%u", num, ntohs(s6->sin6_port));
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, num, sizeof(num));
		snprintf(bound, bound_len, "%s:%u", num, ntohs(s4->sin_port));
	}
	if (port_file) {
		rc = lode_write_port_file(port_file, bound);
		if (rc) {
			say(why, why_len, "cannot write %s: %s", port_file, strerror(-rc));
			lode_metrics_http_close(h);
			return rc;
		}
	}
	*out = h;
	return 0;

err_fd:
	close(fd);
err_ai:
	say(why, why_len, "--metrics: cannot listen on %s: %s", hostport, strerror(-rc));
	freeaddrinfo(ai);
	return rc;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	struct lode_metrics_http *h = cls;
	static const char not_found[] = "not found: metrics are at /metrics\n";
	static const char not_allowed[] = "only GET and HEAD\n";
	struct MHD_Response *r;
	unsigned code = MHD_HTTP_OK;
	enum MHD_Result ret;
	char *text = NULL;
	size_t len = 0;

	(void)version, (void)upload, (void)state;
	if (*upload_len) {
		*upload_len = 0; /* a body is read and dropped */
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
		r = MHD_create_response_from_buffer(sizeof(not_allowed) - 1, (void *)not_allowed,
						    MHD_RESPMEM_PERSISTENT);
	} else if (strcmp(url, "/metrics")) {
		code = MHD_HTTP_NOT_FOUND;
		r = MHD_create_response_from_buffer(sizeof(not_found) - 1, (void *)not_found,
						    MHD_RESPMEM_PERSISTENT);
	} else {
		text = lode_metrics_render(h->m, &len);
		if (!text)
			return MHD_NO; /* out of memory: close, rather than serve a partial page */
		r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
		if (!r)
			free(text);
	}
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				code == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8"
						    : "text/plain; charset=utf-8");
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

int lode_metrics_http_start(struct lode_metrics_http *h, struct lode_metrics *m)
{
	/* MHD_stop_daemon() closes the listening socket, given or not; whether a failed start
	 * does is not documented. So it gets a duplicate: at worst a failed start (the program
	 * then exits) leaks that one, and the original is never closed twice. */
	int fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	h->m = m;
	h->d = MHD_start_daemon(
	    MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, answer, h, MHD_OPTION_LISTEN_SOCKET,
	    (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNS,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_SECONDS, MHD_OPTION_END);
	if (!h->d)
		return -EIO;
	close(h->fd);
	h->fd = -1;
	return 0;
}

void lode_metrics_http_close(struct lode_metrics_http *h)
{
	if (!h)
		return;
	if (h->d)
		MHD_stop_daemon(h->d); /* closes its listening socket */
	if (h->fd >= 0)
		close(h->fd);
	free(h);
}
