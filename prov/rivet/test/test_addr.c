/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of rivet_addr.c: lengths, formats, ports, the fi_av_straddr
 * strings and their parsing, same-IP and subnet arithmetic.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>

#include "rivet.h"

static union rivet_sockaddr sa_parse(const char *s)
{
	union rivet_sockaddr a;

	cr_assert_eq(rivet_addr_parse(s, &a), 0, "parse %s", s);
	return a;
}

static union rivet_sockaddr sa_in(const char *ip, uint16_t port)
{
	union rivet_sockaddr a = { 0 };

	a.sin.sin_family = AF_INET;
	a.sin.sin_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET, ip, &a.sin.sin_addr), 1);
	return a;
}

static union rivet_sockaddr sa_in6(const char *ip, uint16_t port)
{
	union rivet_sockaddr a = { 0 };

	a.sin6.sin6_family = AF_INET6;
	a.sin6.sin6_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET6, ip, &a.sin6.sin6_addr), 1);
	return a;
}

Test(addr, len_and_format)
{
	union rivet_sockaddr v4 = sa_in("10.0.0.1", 1), v6 = sa_in6("::1", 1);
	union rivet_sockaddr other = { 0 };

	other.sa.sa_family = AF_UNIX;
	cr_assert_eq(rivet_addr_len(&v4.sa), sizeof(struct sockaddr_in));
	cr_assert_eq(rivet_addr_len(&v6.sa), sizeof(struct sockaddr_in6));
	cr_assert_eq(rivet_addr_len(&other.sa), 0);
	cr_assert_eq(rivet_addr_len(NULL), 0);
	cr_assert_eq(rivet_addr_format(&v4.sa), FI_SOCKADDR_IN);
	cr_assert_eq(rivet_addr_format(&v6.sa), FI_SOCKADDR_IN6);
	cr_assert_eq(rivet_addr_format(&other.sa), FI_FORMAT_UNSPEC);
	cr_assert_eq(rivet_addr_format(NULL), FI_FORMAT_UNSPEC);
}

Test(addr, port_host_order)
{
	union rivet_sockaddr v4 = sa_in("10.0.0.1", 1234);
	union rivet_sockaddr v6 = sa_in6("fe80::1", 4321);

	cr_assert_eq(rivet_addr_port(&v4.sa), 1234);
	cr_assert_eq(rivet_addr_port(&v6.sa), 4321);
	rivet_addr_set_port(&v4.sa, 65535);
	rivet_addr_set_port(&v6.sa, 7);
	cr_assert_eq(v4.sin.sin_port, htons(65535));
	cr_assert_eq(v6.sin6.sin6_port, htons(7));
	cr_assert_eq(rivet_addr_port(NULL), 0);
}

Test(addr, str_like_straddr)
{
	union rivet_sockaddr v4 = sa_in("10.0.0.1", 1234);
	union rivet_sockaddr v6 = sa_in6("fe80::1", 1234);
	char buf[64];
	size_t len = sizeof(buf);

	cr_assert_eq(rivet_addr_str(&v4.sa, buf, &len), 0);
	cr_assert_str_eq(buf, "fi_sockaddr_in://10.0.0.1:1234");
	cr_assert_eq(len, strlen(buf) + 1);
	len = sizeof(buf);
	cr_assert_eq(rivet_addr_str(&v6.sa, buf, &len), 0);
	cr_assert_str_eq(buf, "fi_sockaddr_in6://[fe80::1]:1234");
	cr_assert_eq(len, strlen(buf) + 1);
}

Test(addr, str_truncates_and_sizes)
{
	union rivet_sockaddr v4 = sa_in("10.0.0.1", 1234);
	const char *full = "fi_sockaddr_in://10.0.0.1:1234";
	char buf[8];
	size_t len = sizeof(buf);

	cr_assert_eq(rivet_addr_str(&v4.sa, buf, &len), 0);
	cr_assert_eq(len, strlen(full) + 1);
	cr_assert_str_eq(buf, "fi_sock");
	len = 0;
	cr_assert_eq(rivet_addr_str(&v4.sa, NULL, &len), 0);
	cr_assert_eq(len, strlen(full) + 1);
}

Test(addr, str_rejects_unknown)
{
	union rivet_sockaddr other = { 0 };
	char buf[64];
	size_t len = sizeof(buf);

	other.sa.sa_family = AF_UNIX;
	cr_assert_eq(rivet_addr_str(&other.sa, buf, &len), -FI_EINVAL);
	cr_assert_eq(len, sizeof(buf), "len untouched on error");
	cr_assert_eq(rivet_addr_str(NULL, buf, &len), -FI_EINVAL);
	cr_assert_eq(rivet_addr_str(&other.sa, buf, NULL), -FI_EINVAL);
}

static const struct {
	const char *str;
	int family;
	const char *ip;
	uint16_t port;
} g_good[] = {
	{ "fi_sockaddr_in://10.0.0.1:1234", AF_INET, "10.0.0.1", 1234 },
	{ "fi_sockaddr_in6://[fe80::1]:1234", AF_INET6, "fe80::1", 1234 },
	{ "fi_sockaddr://10.31.6.12:7471", AF_INET, "10.31.6.12", 7471 },
	{ "fi_sockaddr://[::1]:9", AF_INET6, "::1", 9 },
	{ "FI_SOCKADDR_IN://1.2.3.4:5", AF_INET, "1.2.3.4", 5 },
	{ "10.0.0.1:1234", AF_INET, "10.0.0.1", 1234 },
	{ "[::1]:5", AF_INET6, "::1", 5 },
	{ "[::1]", AF_INET6, "::1", 0 },
	{ "10.0.0.1", AF_INET, "10.0.0.1", 0 },
	{ "::1", AF_INET6, "::1", 0 },
	{ "fe80::1:2", AF_INET6, "fe80::1:2", 0 },
	{ "0.0.0.0:0", AF_INET, "0.0.0.0", 0 },
	{ "255.255.255.255:65535", AF_INET, "255.255.255.255", 65535 },
};

Test(addr, parse_good)
{
	size_t i;

	for (i = 0; i < sizeof(g_good) / sizeof(g_good[0]); i++) {
		union rivet_sockaddr a = sa_parse(g_good[i].str), want;

		want = g_good[i].family == AF_INET ?
			       sa_in(g_good[i].ip, g_good[i].port) :
			       sa_in6(g_good[i].ip, g_good[i].port);
		cr_assert_eq(a.sa.sa_family, g_good[i].family, "%s",
			     g_good[i].str);
		cr_assert(rivet_addr_same_ip(&a.sa, &want.sa), "%s",
			  g_good[i].str);
		cr_assert_eq(rivet_addr_port(&a.sa), g_good[i].port, "%s",
			     g_good[i].str);
	}
}

Test(addr, parse_scope)
{
	union rivet_sockaddr a = sa_parse("[fe80::1%3]:77");

	cr_assert_eq(a.sin6.sin6_scope_id, 3);
	cr_assert_eq(rivet_addr_port(&a.sa), 77);
	a = sa_parse("fe80::1%lo");
	cr_assert_neq(a.sin6.sin6_scope_id, 0);
}

static const char *const g_garbage[] = {
	"", "abc", "10.0.0.1:", "10.0.0.1:65536", "10.0.0.1:12a",
	"10.0.0.1: 5", "10.0.0.1:+5", "10.0.0.1:-1", "10.0.0.1:000001",
	"10.0.0.256", "10.0.0", ":5", "[::1", "[::1]x", "[::1]:", "[]:5",
	"[10.0.0.1]:5", "[::1]:5:6", "fi_sockaddr_in://[::1]:5",
	"fi_sockaddr_in6://10.0.0.1:5", "fi_sockaddr_ib://10.0.0.1:5",
	"fi_sockaddr_in://", "[fe80::1%]:5", "[fe80::1%nosuchif0]:5",
	"10.0.0.1%2:5", "localhost:5", "10.0.0.1:5/x", "10.0.0.1:5?qos=3",
};

Test(addr, parse_garbage)
{
	union rivet_sockaddr a, sentinel;
	size_t i;

	memset(&sentinel, 0xa5, sizeof(sentinel));
	for (i = 0; i < sizeof(g_garbage) / sizeof(g_garbage[0]); i++) {
		a = sentinel;
		cr_assert_eq(rivet_addr_parse(g_garbage[i], &a), -FI_EINVAL,
			     "\"%s\"", g_garbage[i]);
		cr_assert(!memcmp(&a, &sentinel, sizeof(a)),
			  "output set on error for \"%s\"", g_garbage[i]);
	}
	cr_assert_eq(rivet_addr_parse(NULL, &a), -FI_EINVAL);
	cr_assert_eq(rivet_addr_parse("1.2.3.4", NULL), -FI_EINVAL);
}

Test(addr, str_parse_round_trip)
{
	union rivet_sockaddr in[] = { sa_in("192.168.7.9", 42),
				      sa_in6("2001:db8::17", 65000) };
	size_t i;

	for (i = 0; i < 2; i++) {
		char buf[80];
		size_t len = sizeof(buf);
		union rivet_sockaddr out;

		cr_assert_eq(rivet_addr_str(&in[i].sa, buf, &len), 0);
		out = sa_parse(buf);
		cr_assert(rivet_addr_same_ip(&in[i].sa, &out.sa), "%s", buf);
		cr_assert_eq(rivet_addr_port(&out.sa),
			     rivet_addr_port(&in[i].sa));
	}
}

Test(addr, same_ip)
{
	union rivet_sockaddr a = sa_in("10.0.0.1", 1), b = sa_in("10.0.0.1", 2);
	union rivet_sockaddr c = sa_in("10.0.0.2", 1);
	union rivet_sockaddr m = sa_in6("::ffff:10.0.0.1", 3);
	union rivet_sockaddr x = sa_in6("fe80::1", 1), y = sa_in6("fe80::1", 9);

	cr_assert(rivet_addr_same_ip(&a.sa, &b.sa), "port is ignored");
	cr_assert_not(rivet_addr_same_ip(&a.sa, &c.sa));
	cr_assert(rivet_addr_same_ip(&a.sa, &m.sa), "v4-mapped");
	cr_assert(rivet_addr_same_ip(&m.sa, &a.sa), "v4-mapped");
	cr_assert(rivet_addr_same_ip(&x.sa, &y.sa));
	cr_assert_not(rivet_addr_same_ip(&a.sa, &x.sa));
	cr_assert_not(rivet_addr_same_ip(&a.sa, NULL));
}

static const struct {
	const char *addr, *net;
	unsigned int prefix;
	bool in;
} g_subnets[] = {
	{ "10.77.0.5", "10.77.0.0", 24, true },
	{ "10.77.1.5", "10.77.0.0", 24, false },
	{ "10.77.1.5", "10.77.0.0", 23, true },
	{ "10.77.2.5", "10.77.0.0", 23, false },
	{ "10.77.0.5", "10.77.0.5", 32, true },
	{ "10.77.0.6", "10.77.0.5", 32, false },
	{ "10.77.0.6", "10.77.0.5", 40, false },
	{ "192.168.1.1", "10.0.0.0", 0, true },
	{ "10.0.0.129", "10.0.0.128", 25, true },
	{ "10.0.0.127", "10.0.0.128", 25, false },
	{ "fe80::1234", "fe80::", 64, true },
	{ "fe80:0:0:1::1", "fe80::", 64, false },
	{ "2001:db8::1", "2001:db8::", 33, true },
	{ "10.0.0.1", "::ffff:10.0.0.0", 120, false },
	{ "fe80::1", "10.0.0.0", 0, false },
};

Test(addr, in_subnet)
{
	size_t i;

	for (i = 0; i < sizeof(g_subnets) / sizeof(g_subnets[0]); i++) {
		union rivet_sockaddr a = sa_parse(g_subnets[i].addr);
		union rivet_sockaddr n = sa_parse(g_subnets[i].net);

		cr_assert_eq(rivet_addr_in_subnet(&a.sa, &n.sa,
						  g_subnets[i].prefix),
			     g_subnets[i].in, "%s in %s/%u", g_subnets[i].addr,
			     g_subnets[i].net, g_subnets[i].prefix);
	}
}

static const struct {
	const char *addr;
	unsigned int prefix;
	const char *name;
} g_names[] = {
	{ "10.77.0.5", 24, "10.77.0.0/24" },
	{ "10.77.1.5", 23, "10.77.0.0/23" },
	{ "10.77.1.5", 32, "10.77.1.5/32" },
	{ "10.77.1.5", 0, "0.0.0.0/0" },
	{ "10.77.1.5", 99, "10.77.1.5/32" },
	{ "fe80::1234", 64, "fe80::/64" },
	{ "2001:db8:ffff::1", 36, "2001:db8:f000::/36" },
};

Test(addr, subnet_name)
{
	char buf[64];
	size_t i;

	for (i = 0; i < sizeof(g_names) / sizeof(g_names[0]); i++) {
		union rivet_sockaddr a = sa_parse(g_names[i].addr);

		rivet_addr_subnet_name(&a.sa, g_names[i].prefix, buf,
				       sizeof(buf));
		cr_assert_str_eq(buf, g_names[i].name);
	}
}

Test(addr, subnet_name_edges)
{
	union rivet_sockaddr a = sa_parse("10.77.0.5"), other = { 0 };
	char buf[6];

	rivet_addr_subnet_name(&a.sa, 24, buf, sizeof(buf));
	cr_assert_str_eq(buf, "10.77", "truncated, terminated");
	other.sa.sa_family = AF_UNIX;
	rivet_addr_subnet_name(&other.sa, 24, buf, sizeof(buf));
	cr_assert_str_eq(buf, "");
	rivet_addr_subnet_name(&a.sa, 24, NULL, 0);
}

/* fi_getname(3)'s contract for every named object: too small a buffer
 * says how big, no address yet is -FI_EADDRNOTAVAIL. */
Test(addr, copy_name)
{
	union rivet_sockaddr v6 = sa_in6("fe80::1", 7), out, none = { 0 };
	size_t len = 4;

	cr_assert_eq(rivet_addr_copy_name(&v6.sa, &out, NULL), -FI_EINVAL);
	cr_assert_eq(rivet_addr_copy_name(&v6.sa, &out, &len), -FI_ETOOSMALL);
	cr_assert_eq(len, sizeof(struct sockaddr_in6));
	cr_assert_eq(rivet_addr_copy_name(&v6.sa, NULL, &len), -FI_ETOOSMALL);
	cr_assert_eq(rivet_addr_copy_name(&v6.sa, &out, &len), 0);
	cr_assert_eq(len, sizeof(struct sockaddr_in6));
	cr_assert_eq(memcmp(&out, &v6, len), 0);
	cr_assert_eq(rivet_addr_copy_name(NULL, &out, &len),
		     -FI_EADDRNOTAVAIL);
	cr_assert_eq(rivet_addr_copy_name(&none.sa, &out, &len),
		     -FI_EADDRNOTAVAIL);
}
