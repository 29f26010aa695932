/* SPDX-License-Identifier: MIT */
/* Transport addresses: "tcp://HOST:PORT" (HOST an IPv4 literal or a name; port 0..65535).
 * "HOST:PORT" without a scheme means tcp. */
#ifndef LODE_PROTO_ADDR_H
#define LODE_PROTO_ADDR_H

#include <netinet/in.h>

enum lode_scheme { LODE_SCHEME_TCP = 1, LODE_SCHEME_RDMA = 2 };

struct lode_addr {
	enum lode_scheme scheme;
	struct sockaddr_in sin;
};

/* Parses and resolves addr. Returns 0, or -EINVAL with nothing written. */
int lode_addr_parse(const char *addr, struct lode_addr *out);
/* Formats as "tcp://A.B.C.D:PORT" into buf (>= 48 bytes). */
void lode_addr_format(const struct lode_addr *a, char *buf, size_t len);

#endif
