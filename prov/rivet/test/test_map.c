/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of rivet_map.c: the address -> u64 map (families, ports,
 * scope ids, v4-mapped addresses, many entries) and the u32 -> pointer map.
 */
#include <arpa/inet.h>
#include <sys/un.h>
#include <criterion/criterion.h>

#include "rivet_map.h"

static union rivet_sockaddr map_in(const char *ip, uint16_t port)
{
	union rivet_sockaddr a = { 0 };

	a.sin.sin_family = AF_INET;
	a.sin.sin_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET, ip, &a.sin.sin_addr), 1);
	return a;
}

static union rivet_sockaddr map_in6(const char *ip, uint16_t port)
{
	union rivet_sockaddr a = { 0 };

	a.sin6.sin6_family = AF_INET6;
	a.sin6.sin6_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET6, ip, &a.sin6.sin6_addr), 1);
	return a;
}

Test(map, addr_insert_lookup_remove)
{
	struct rivet_addr_map m;
	union rivet_sockaddr a = map_in("10.0.0.1", 7000);
	uint64_t v = 0;

	rivet_addr_map_construct(&m);
	cr_assert_eq(rivet_addr_map_count(&m), 0);
	cr_assert_eq(rivet_addr_map_lookup(&m, &a.sa, &v), -FI_ENOENT);
	cr_assert_eq(rivet_addr_map_insert(&m, &a.sa, 42), 0);
	cr_assert_eq(rivet_addr_map_insert(&m, &a.sa, 43), -FI_EALREADY);
	cr_assert_eq(rivet_addr_map_lookup(&m, &a.sa, &v), 0);
	cr_assert_eq(v, 42);
	cr_assert_eq(rivet_addr_map_count(&m), 1);
	cr_assert_eq(rivet_addr_map_remove(&m, &a.sa), 0);
	cr_assert_eq(rivet_addr_map_remove(&m, &a.sa), -FI_ENOENT);
	cr_assert_eq(rivet_addr_map_count(&m), 0);
	rivet_addr_map_destruct(&m);
}

Test(map, addr_ports_and_families_differ)
{
	struct rivet_addr_map m;
	union rivet_sockaddr a = map_in("10.0.0.1", 7000);
	union rivet_sockaddr b = map_in("10.0.0.1", 7001);
	union rivet_sockaddr c = map_in6("fe80::1", 7000);
	union rivet_sockaddr d = map_in6("fe80::1", 7000);
	uint64_t v;

	d.sin6.sin6_scope_id = 3;
	rivet_addr_map_construct(&m);
	cr_assert_eq(rivet_addr_map_insert(&m, &a.sa, 1), 0);
	cr_assert_eq(rivet_addr_map_insert(&m, &b.sa, 2), 0);
	cr_assert_eq(rivet_addr_map_insert(&m, &c.sa, 3), 0);
	cr_assert_eq(rivet_addr_map_insert(&m, &d.sa, 4), 0);
	cr_assert_eq(rivet_addr_map_lookup(&m, &b.sa, &v), 0);
	cr_assert_eq(v, 2);
	cr_assert_eq(rivet_addr_map_lookup(&m, &d.sa, &v), 0);
	cr_assert_eq(v, 4);
	/* flowinfo is not part of the key */
	c.sin6.sin6_flowinfo = htonl(0x12345);
	cr_assert_eq(rivet_addr_map_lookup(&m, &c.sa, &v), 0);
	cr_assert_eq(v, 3);
	cr_assert_eq(rivet_addr_map_count(&m), 4);
	rivet_addr_map_destruct(&m);
	cr_assert_eq(rivet_addr_map_count(&m), 0);
}

Test(map, addr_v4_mapped_is_v4)
{
	struct rivet_addr_map m;
	union rivet_sockaddr a = map_in("192.168.1.5", 80);
	union rivet_sockaddr b = map_in6("::ffff:192.168.1.5", 80);
	uint64_t v;

	rivet_addr_map_construct(&m);
	cr_assert_eq(rivet_addr_map_insert(&m, &b.sa, 9), 0);
	cr_assert_eq(rivet_addr_map_lookup(&m, &a.sa, &v), 0);
	cr_assert_eq(v, 9);
	cr_assert_eq(rivet_addr_map_insert(&m, &a.sa, 10), -FI_EALREADY);
	cr_assert(rivet_addr_map_same(&a.sa, &b.sa));
	b = map_in("192.168.1.5", 81);
	cr_assert_not(rivet_addr_map_same(&a.sa, &b.sa));
	rivet_addr_map_destruct(&m);
}

Test(map, addr_rejects_other_families)
{
	struct rivet_addr_map m;
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	uint64_t v;

	rivet_addr_map_construct(&m);
	cr_assert_eq(rivet_addr_map_insert(&m, (struct sockaddr *)&un, 1),
		     -FI_EINVAL);
	cr_assert_eq(rivet_addr_map_insert(&m, NULL, 1), -FI_EINVAL);
	cr_assert_eq(rivet_addr_map_lookup(&m, (struct sockaddr *)&un, &v),
		     -FI_EINVAL);
	cr_assert_eq(rivet_addr_map_remove(&m, NULL), -FI_EINVAL);
	cr_assert_not(rivet_addr_map_same((struct sockaddr *)&un,
					  (struct sockaddr *)&un));
	rivet_addr_map_destruct(&m);
}

Test(map, addr_many)
{
	enum { N = 20000 };
	struct rivet_addr_map m;
	union rivet_sockaddr a;
	uint64_t v, i;
	char ip[64];

	rivet_addr_map_construct(&m);
	for (i = 0; i < N; i++) {
		if (i & 1) {
			snprintf(ip, sizeof(ip), "10.%u.%u.1",
				 (unsigned)(i >> 8) & 0xff, (unsigned)i & 0xff);
			a = map_in(ip, (uint16_t)(1000 + i % 7));
		} else {
			snprintf(ip, sizeof(ip), "fd00::%x:%x",
				 (unsigned)(i >> 16), (unsigned)i & 0xffff);
			a = map_in6(ip, 5000);
		}
		cr_assert_eq(rivet_addr_map_insert(&m, &a.sa, i), 0, "%s", ip);
	}
	cr_assert_eq(rivet_addr_map_count(&m), N);
	for (i = 0; i < N; i += 2) {
		snprintf(ip, sizeof(ip), "fd00::%x:%x", (unsigned)(i >> 16),
			 (unsigned)i & 0xffff);
		a = map_in6(ip, 5000);
		cr_assert_eq(rivet_addr_map_lookup(&m, &a.sa, &v), 0);
		cr_assert_eq(v, i);
		cr_assert_eq(rivet_addr_map_remove(&m, &a.sa), 0);
	}
	cr_assert_eq(rivet_addr_map_count(&m), N / 2);
	a = map_in("10.0.3.1", (uint16_t)(1000 + 3 % 7));
	cr_assert_eq(rivet_addr_map_lookup(&m, &a.sa, &v), 0);
	cr_assert_eq(v, 3);
	rivet_addr_map_destruct(&m);
}

Test(map, u32)
{
	struct rivet_u32_map m;
	int x, y;
	uint32_t i;

	rivet_u32_map_construct(&m);
	cr_assert_null(rivet_u32_map_lookup(&m, 5));
	cr_assert_eq(rivet_u32_map_insert(&m, 5, &x), 0);
	cr_assert_eq(rivet_u32_map_insert(&m, 5, &y), -FI_EALREADY);
	cr_assert_eq(rivet_u32_map_insert(&m, 6, NULL), -FI_EINVAL);
	cr_assert_eq(rivet_u32_map_lookup(&m, 5), &x);
	cr_assert_eq(rivet_u32_map_insert(&m, 0xffffff, &y), 0);
	cr_assert_eq(rivet_u32_map_lookup(&m, 0xffffff), &y);
	cr_assert_eq(rivet_u32_map_remove(&m, 5), 0);
	cr_assert_eq(rivet_u32_map_remove(&m, 5), -FI_ENOENT);
	cr_assert_null(rivet_u32_map_lookup(&m, 5));
	for (i = 100; i < 10100; i++)
		cr_assert_eq(rivet_u32_map_insert(&m, i, &x), 0);
	cr_assert_eq(rivet_u32_map_count(&m), 10001);
	rivet_u32_map_destruct(&m);
	cr_assert_eq(rivet_u32_map_count(&m), 0);
}
