/* SPDX-License-Identifier: MIT */
/* Parsing of "tcp://HOST:PORT" transport addresses. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"

int lode_addr_parse(const char *addr, struct lode_addr *out)
{
	struct lode_addr a = {.scheme = LODE_SCHEME_TCP};
	char host[256];
	const char *colon;
	char *end;
	unsigned long port;
	size_t hlen;

	if (!addr)
		return -EINVAL;
	if (!strncmp(addr, "tcp://", 6)) {
		addr += 6;
	} else if (!strncmp(addr, "rdma://", 7)) {
		a.scheme = LODE_SCHEME_RDMA;
		addr += 7;
	} else if (strstr(addr, "://")) {
		return -EINVAL;
	}
	colon = strrchr(addr, ':');
	if (!colon || colon == addr)
		return -EINVAL;
	hlen = (size_t)(colon - addr);
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, hlen);
	host[hlen] = 0;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port > 65535)
		return -EINVAL;
	a.sin.sin_family = AF_INET;
	a.sin.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &a.sin.sin_addr) != 1) {
		struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
		struct addrinfo *res;

		if (getaddrinfo(host, NULL, &hints, &res))
			return -EINVAL;
		a.sin.sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
		freeaddrinfo(res);
	}
	*out = a;
	return 0;
}

void lode_addr_format(const struct lode_addr *a, char *buf, size_t len)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->sin.sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s://%s:%u", a->scheme == LODE_SCHEME_RDMA ? "rdma" : "tcp", ip,
		 ntohs(a->sin.sin_port));
}
