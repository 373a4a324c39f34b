/* SPDX-License-Identifier: MIT */
/*
 * Socket address helpers: lengths, ports, the "fi_sockaddr_in://" strings
 * that fi_av_straddr prints and their parsing, subnet arithmetic.  Pure
 * functions (no verbs), unit tested in test/test_addr.c.
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "rivet.h"

/* An IP address as bytes, for comparisons that ignore the port. */
struct rivet_ip {
	int family;
	const uint8_t *bytes;
	unsigned int bits;
};

static const struct {
	const char *prefix;
	int family;		/* AF_UNSPEC: either */
} g_addr_prefixes[] = {
	{ "fi_sockaddr_in://", AF_INET },
	{ "fi_sockaddr_in6://", AF_INET6 },
	{ "fi_sockaddr://", AF_UNSPEC },
};

size_t rivet_addr_len(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

uint32_t rivet_addr_format(const struct sockaddr *sa)
{
	if (!sa)
		return FI_FORMAT_UNSPEC;
	switch (sa->sa_family) {
	case AF_INET:
		return FI_SOCKADDR_IN;
	case AF_INET6:
		return FI_SOCKADDR_IN6;
	default:
		return FI_FORMAT_UNSPEC;
	}
}

uint16_t rivet_addr_port(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	case AF_INET6:
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	default:
		return 0;
	}
}

void rivet_addr_set_port(struct sockaddr *sa, uint16_t port)
{
	if (!sa)
		return;
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

/* Formats like fi_av_straddr; *len: buffer size in, size needed out. */
int rivet_addr_str(const struct sockaddr *sa, char *buf, size_t *len)
{
	char ip[INET6_ADDRSTRLEN];
	int n;

	if (!sa || !len || (!buf && *len))
		return -FI_EINVAL;
	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
			  ip, sizeof(ip));
		n = snprintf(buf, *len, "fi_sockaddr_in://%s:%u", ip,
			     rivet_addr_port(sa));
	} else if (sa->sa_family == AF_INET6) {
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)sa)->sin6_addr, ip,
			  sizeof(ip));
		n = snprintf(buf, *len, "fi_sockaddr_in6://[%s]:%u", ip,
			     rivet_addr_port(sa));
	} else {
		return -FI_EINVAL;
	}
	if (n < 0)
		return -FI_EINVAL;
	*len = (size_t)n + 1;
	return 0;
}

/* 1 to 5 decimal digits, nothing else (strtoul would take " +5"). */
static int rivet_addr_parse_port(const char *s, uint16_t *port_p)
{
	unsigned long v = 0;
	size_t i;

	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 5)
			return -FI_EINVAL;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (!i || v > UINT16_MAX)
		return -FI_EINVAL;
	*port_p = (uint16_t)v;
	return 0;
}

/* "%2" or "%eth0" after a link-local IPv6 address */
static int rivet_addr_parse_scope(const char *s, uint32_t *scope_p)
{
	unsigned long v;
	char *end;

	if (!*s)
		return -FI_EINVAL;
	if (s[0] >= '0' && s[0] <= '9') {
		v = strtoul(s, &end, 10);
		if (*end || v > UINT32_MAX)
			return -FI_EINVAL;
	} else {
		v = if_nametoindex(s);
		if (!v)
			return -FI_EINVAL;
	}
	*scope_p = (uint32_t)v;
	return 0;
}

static int rivet_addr_parse_host(const char *host, size_t len, int family,
				 union rivet_sockaddr *a)
{
	char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 1];
	char *scope;

	if (!len || len >= sizeof(buf))
		return -FI_EINVAL;
	memcpy(buf, host, len);
	buf[len] = '\0';
	if (family == AF_INET) {
		if (inet_pton(AF_INET, buf, &a->sin.sin_addr) != 1)
			return -FI_EINVAL;
		a->sin.sin_family = AF_INET;
		return 0;
	}
	scope = strchr(buf, '%');
	if (scope)
		*scope++ = '\0';
	if (inet_pton(AF_INET6, buf, &a->sin6.sin6_addr) != 1)
		return -FI_EINVAL;
	a->sin6.sin6_family = AF_INET6;
	return scope ? rivet_addr_parse_scope(scope, &a->sin6.sin6_scope_id) :
		       0;
}

/* "[v6]" or "[v6]:port" */
static int rivet_addr_parse_bracket(const char *s, union rivet_sockaddr *a)
{
	const char *end = strchr(s, ']');
	uint16_t port = 0;
	int ret;

	if (!end)
		return -FI_EINVAL;
	ret = rivet_addr_parse_host(s + 1, (size_t)(end - s - 1), AF_INET6, a);
	if (ret)
		return ret;
	if (end[1] == ':')
		ret = rivet_addr_parse_port(end + 2, &port);
	else if (end[1])
		ret = -FI_EINVAL;
	if (ret)
		return ret;
	rivet_addr_set_port(&a->sa, port);
	return 0;
}

/* "v4", "v4:port", or a bare "v6" (which cannot carry a port) */
static int rivet_addr_parse_plain(const char *s, union rivet_sockaddr *a)
{
	const char *colon = strchr(s, ':');
	uint16_t port;
	int ret;

	if (!colon)
		return rivet_addr_parse_host(s, strlen(s), AF_INET, a);
	if (strchr(colon + 1, ':'))
		return rivet_addr_parse_host(s, strlen(s), AF_INET6, a);
	ret = rivet_addr_parse_host(s, (size_t)(colon - s), AF_INET, a);
	if (!ret)
		ret = rivet_addr_parse_port(colon + 1, &port);
	if (ret)
		return ret;
	rivet_addr_set_port(&a->sa, port);
	return 0;
}

int rivet_addr_parse(const char *str, union rivet_sockaddr *out_p)
{
	union rivet_sockaddr a;
	int family = AF_UNSPEC;
	size_t i, n;
	int ret;

	if (!str || !out_p)
		return -FI_EINVAL;
	for (i = 0; i < sizeof(g_addr_prefixes) / sizeof(g_addr_prefixes[0]);
	     i++) {
		n = strlen(g_addr_prefixes[i].prefix);
		if (!strncasecmp(str, g_addr_prefixes[i].prefix, n)) {
			family = g_addr_prefixes[i].family;
			str += n;
			break;
		}
	}
	memset(&a, 0, sizeof(a));
	ret = str[0] == '[' ? rivet_addr_parse_bracket(str, &a) :
			      rivet_addr_parse_plain(str, &a);
	if (ret)
		return ret;
	if (family != AF_UNSPEC && a.sa.sa_family != family)
		return -FI_EINVAL;
	*out_p = a;
	return 0;
}

/* map: see an IPv4-mapped IPv6 address as the IPv4 address it carries */
static bool rivet_addr_ip(const struct sockaddr *sa, bool map,
			  struct rivet_ip *ip)
{
	const struct in6_addr *a6;

	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		ip->family = AF_INET;
		ip->bytes = (const uint8_t *)&((const struct sockaddr_in *)sa)
				    ->sin_addr;
		ip->bits = 32;
		return true;
	}
	if (sa->sa_family != AF_INET6)
		return false;
	a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (map && IN6_IS_ADDR_V4MAPPED(a6)) {
		ip->family = AF_INET;
		ip->bytes = a6->s6_addr + 12;
		ip->bits = 32;
	} else {
		ip->family = AF_INET6;
		ip->bytes = a6->s6_addr;
		ip->bits = 128;
	}
	return true;
}

bool rivet_addr_same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	struct rivet_ip x, y;

	if (!rivet_addr_ip(a, true, &x) || !rivet_addr_ip(b, true, &y))
		return false;
	return x.family == y.family && !memcmp(x.bytes, y.bytes, x.bits / 8);
}

bool rivet_addr_in_subnet(const struct sockaddr *a, const struct sockaddr *net,
			  unsigned int prefix_len)
{
	struct rivet_ip x, n;
	unsigned int full, rem;
	uint8_t mask;

	if (!rivet_addr_ip(a, false, &x) || !rivet_addr_ip(net, false, &n) ||
	    x.family != n.family)
		return false;
	prefix_len = RIVET_MIN(prefix_len, x.bits);
	full = prefix_len / 8;
	rem = prefix_len % 8;
	if (memcmp(x.bytes, n.bytes, full))
		return false;
	if (!rem)
		return true;
	mask = (uint8_t)(0xff << (8 - rem));
	return !((x.bytes[full] ^ n.bytes[full]) & mask);
}

/* "10.77.0.0/24", "fe80::/64": the network that sa/prefix_len lies in */
void rivet_addr_subnet_name(const struct sockaddr *sa, unsigned int prefix_len,
			    char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	uint8_t masked[16] = { 0 };
	struct rivet_ip x;
	unsigned int i;

	if (!buf || !len)
		return;
	buf[0] = '\0';
	if (!rivet_addr_ip(sa, false, &x))
		return;
	prefix_len = RIVET_MIN(prefix_len, x.bits);
	for (i = 0; i < x.bits / 8; i++) {
		unsigned int done = i * 8;
		unsigned int keep = prefix_len > done ?
				    RIVET_MIN(8, prefix_len - done) : 0;

		masked[i] = x.bytes[i] & (uint8_t)(0xff00 >> keep);
	}
	if (!inet_ntop(x.family, masked, ip, sizeof(ip)))
		return;
	snprintf(buf, len, "%s/%u", ip, prefix_len);
}

/* fi_getname/fi_getpeer: sa (NULL: none yet) into the caller's buffer. */
int rivet_addr_copy_name(const struct sockaddr *sa, void *addr,
			 size_t *addrlen)
{
	size_t len = sa ? rivet_addr_len(sa) : 0;

	if (!addrlen)
		return -FI_EINVAL;
	if (!len)
		return -FI_EADDRNOTAVAIL;
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, sa, len);
	*addrlen = len;
	return 0;
}
