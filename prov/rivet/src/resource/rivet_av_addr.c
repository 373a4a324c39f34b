/* SPDX-License-Identifier: MIT */
/*
 * The address vector's pure helpers: what fi_av_insert's array holds, which
 * addresses an AV takes, fi_av_insertsym's address and name sequences, and
 * name resolution.  No verbs, no locks; unit tested in test/test_av.c.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>

#include "rivet_av.h"

int rivet_av_format_family(uint32_t format)
{
	switch (format) {
	case FI_SOCKADDR_IN:
		return AF_INET;
	case FI_SOCKADDR_IN6:
		return AF_INET6;
	default:
		return AF_UNSPEC;	/* FI_SOCKADDR: either */
	}
}

/* FI_SOCKADDR arrays hold each address at its own size, back to back. */
size_t rivet_av_entry_len(const void *buf, uint32_t format)
{
	sa_family_t family;

	switch (format) {
	case FI_SOCKADDR_IN:
		return sizeof(struct sockaddr_in);
	case FI_SOCKADDR_IN6:
		return sizeof(struct sockaddr_in6);
	default:
		memcpy(&family, (const char *)buf +
		       offsetof(struct sockaddr, sa_family), sizeof(family));
		if (family == AF_INET)
			return sizeof(struct sockaddr_in);
		return family == AF_INET6 ? sizeof(struct sockaddr_in6) : 0;
	}
}

static bool rivet_av_is_wildcard(const struct sockaddr *sa)
{
	static const uint8_t v4any_mapped[16] = {
		[10] = 0xff, [11] = 0xff
	};
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr) ||
	       !memcmp(&sin6->sin6_addr, v4any_mapped, 16);
}

int rivet_av_addr_check(const struct sockaddr *sa, uint32_t format)
{
	int family = rivet_av_format_family(format);

	if (!sa || !rivet_addr_len(sa))
		return -FI_EINVAL;
	if (family != AF_UNSPEC && sa->sa_family != family)
		return -FI_EINVAL;
	if (!rivet_addr_port(sa) || rivet_av_is_wildcard(sa))
		return -FI_EADDRNOTAVAIL;
	return 0;
}

/* Adds n to a big-endian byte string; -FI_EINVAL when it overflows. */
static int rivet_av_bytes_add(uint8_t *bytes, size_t len, size_t n)
{
	uint64_t carry = n;
	size_t i;

	for (i = len; i-- > 0 && carry;) {
		carry += bytes[i];
		bytes[i] = (uint8_t)carry;
		carry >>= 8;
	}
	return carry ? -FI_EINVAL : 0;
}

int rivet_av_sym_addr(const struct sockaddr *base, size_t node, size_t svc,
		      union rivet_sockaddr *out_p)
{
	size_t len = rivet_addr_len(base);
	union rivet_sockaddr a;
	size_t port;
	int ret;

	if (!len || !out_p)
		return -FI_EINVAL;
	memset(&a, 0, sizeof(a));
	memcpy(&a, base, len);
	port = rivet_addr_port(base);
	if (svc > UINT16_MAX || port + svc > UINT16_MAX)
		return -FI_EINVAL;
	if (a.sa.sa_family == AF_INET)
		ret = rivet_av_bytes_add((uint8_t *)&a.sin.sin_addr, 4, node);
	else
		ret = rivet_av_bytes_add(a.sin6.sin6_addr.s6_addr, 16, node);
	if (ret)
		return ret;
	rivet_addr_set_port(&a.sa, (uint16_t)(port + svc));
	*out_p = a;
	return 0;
}

int rivet_av_sym_name(const char *node, size_t idx, char *buf, size_t len)
{
	size_t n, digits, i;
	unsigned long long num = 0;
	int ret;

	if (!node || !buf)
		return -FI_EINVAL;
	n = strlen(node);
	for (digits = 0; digits < n; digits++)
		if (node[n - 1 - digits] < '0' || node[n - 1 - digits] > '9')
			break;
	if (!digits && idx)
		return -FI_EINVAL;
	if (digits > 18 || idx > 1000000000000000000ULL)
		return -FI_EINVAL;
	for (i = n - digits; i < n; i++)
		num = num * 10 + (unsigned long long)(node[i] - '0');
	if (!digits)
		ret = snprintf(buf, len, "%s", node);
	else
		ret = snprintf(buf, len, "%.*s%0*llu", (int)(n - digits), node,
			       (int)digits, num + idx);
	if (ret < 0)
		return -FI_EINVAL;
	return (size_t)ret < len ? 0 : -FI_ETOOSMALL;
}

int rivet_av_service_check(const char *service)
{
	unsigned long port = 0;
	const char *p;

	if (!service || !*service)
		return -FI_EINVAL;
	for (p = service; *p; p++) {
		if (*p < '0' || *p > '9')
			return -FI_EINVAL;
		port = port * 10 + (unsigned long)(*p - '0');
		if (port > 65535)
			return -FI_EINVAL;
	}
	return 0;
}

int rivet_av_resolve(const char *node, const char *service, uint32_t format,
		     union rivet_sockaddr *out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	int ret;

	hints.ai_family = rivet_av_format_family(format);
	if (hints.ai_family == AF_INET6)
		hints.ai_flags = AI_V4MAPPED;
	ret = getaddrinfo(node, service, &hints, &ai);
	if (ret) {
		RIVET_DBG(AV, "getaddrinfo(%s, %s): %s\n", node,
			  service ? service : "-", gai_strerror(ret));
		return -FI_EADDRNOTAVAIL;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out, ai->ai_addr, RIVET_MIN((size_t)ai->ai_addrlen,
					   sizeof(*out)));
	freeaddrinfo(ai);
	return 0;
}

bool rivet_av_is_numeric(const char *node)
{
	struct in6_addr a;

	return inet_pton(AF_INET, node, &a) == 1 ||
	       inet_pton(AF_INET6, node, &a) == 1;
}

/* Node i of a symmetric insert: numeric addresses count up from node 0's,
 * host names by their numeric suffix. */
void rivet_av_node_resolve(const char *node, const char *service,
			   uint32_t format, struct rivet_av_node *nodes, size_t i)
{
	char name[NI_MAXHOST];
	struct rivet_av_node *n = &nodes[i];

	if (!i) {
		n->err = rivet_av_resolve(node, service, format, &n->addr);
	} else if (rivet_av_is_numeric(node)) {
		n->err = nodes[0].err ? nodes[0].err :
			 rivet_av_sym_addr(&nodes[0].addr.sa, i, 0, &n->addr);
	} else {
		n->err = rivet_av_sym_name(node, i, name, sizeof(name));
		if (!n->err)
			n->err = rivet_av_resolve(name, service, format,
						  &n->addr);
	}
}
