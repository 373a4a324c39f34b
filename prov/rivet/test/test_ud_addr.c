/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of rivet_ud_addr.c: DGRAM names (GID, QPN, LID in a
 * sockaddr_in6), the MTU in bytes, and what a UD receive reports.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>

#include "rivet.h"

static const uint8_t g_gid[16] = {
	[10] = 0xff, [11] = 0xff, [12] = 10, [13] = 77, [14] = 0, [15] = 1
};

Test(ud_addr, from_ipv4_is_mapped)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(9228) };
	struct sockaddr_in6 out;
	char buf[64];

	inet_pton(AF_INET, "10.77.0.1", &sin.sin_addr);
	cr_assert_eq(rivet_ud_addr_from_ip((struct sockaddr *)&sin, &out), 0);
	cr_assert_eq(out.sin6_family, AF_INET6);
	cr_assert_eq(out.sin6_port, 0, "no QPN yet");
	cr_assert_eq(out.sin6_flowinfo, 0);
	inet_ntop(AF_INET6, &out.sin6_addr, buf, sizeof(buf));
	cr_assert_str_eq(buf, "::ffff:10.77.0.1");
	cr_assert_arr_eq(out.sin6_addr.s6_addr, g_gid, 16);
}

Test(ud_addr, from_ipv6_keeps_address_drops_rest)
{
	struct sockaddr_in6 in = { .sin6_family = AF_INET6,
				   .sin6_port = htons(1),
				   .sin6_flowinfo = 7, .sin6_scope_id = 3 };
	struct sockaddr_in6 out;

	inet_pton(AF_INET6, "fe80::1", &in.sin6_addr);
	cr_assert_eq(rivet_ud_addr_from_ip((struct sockaddr *)&in, &out), 0);
	cr_assert_arr_eq(&out.sin6_addr, &in.sin6_addr, 16);
	cr_assert_eq(out.sin6_port, 0);
	cr_assert_eq(out.sin6_flowinfo, 0);
	cr_assert_eq(out.sin6_scope_id, 0);
}

Test(ud_addr, from_ip_rejects)
{
	struct sockaddr sa = { .sa_family = AF_UNIX };
	struct sockaddr_in6 out;

	cr_assert_eq(rivet_ud_addr_from_ip(&sa, &out), -FI_EINVAL);
	cr_assert_eq(rivet_ud_addr_from_ip(NULL, &out), -FI_EINVAL);
}

Test(ud_addr, round_trip)
{
	static const uint32_t qpns[] = { 2, 0x11, 0xffff, 0x10000, 0xabcdef,
					 RIVET_UD_QPN_MAX };
	struct sockaddr_in6 name;
	uint8_t gid[16];
	uint32_t qpn;
	uint16_t lid;
	size_t i;

	for (i = 0; i < sizeof(qpns) / sizeof(qpns[0]); i++) {
		rivet_ud_addr_encode(g_gid, qpns[i], 0x1234, &name);
		cr_assert_eq(name.sin6_family, AF_INET6);
		cr_assert_neq(name.sin6_port, 0, "AVs refuse port 0");
		cr_assert_eq(rivet_ud_addr_decode((struct sockaddr *)&name,
						  gid, &qpn, &lid), 0);
		cr_assert_eq(qpn, qpns[i]);
		cr_assert_eq(lid, 0x1234);
		cr_assert_arr_eq(gid, g_gid, 16);
	}
	rivet_ud_addr_encode(g_gid, 0x11, 0, &name);
	cr_assert_eq(ntohs(name.sin6_port), 0x11, "the port shows the QPN");
	rivet_ud_addr_encode(g_gid, 0x10000, 0, &name);
	cr_assert_eq(ntohs(name.sin6_port), 0xffff);
}

Test(ud_addr, decode_rejects)
{
	struct sockaddr_in6 name;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	uint8_t gid[16];
	uint32_t qpn;
	uint16_t lid;

	rivet_ud_addr_from_ip((struct sockaddr *)&sin, &name);
	cr_assert_eq(rivet_ud_addr_decode((struct sockaddr *)&name, gid,
					  &qpn, &lid), -FI_EINVAL,
		     "an fi_getinfo address names no QP");
	cr_assert_eq(rivet_ud_addr_decode((struct sockaddr *)&sin, gid,
					  &qpn, &lid), -FI_EINVAL);
	rivet_ud_addr_encode(g_gid, 1, 0, &name);
	cr_assert_eq(rivet_ud_addr_decode((struct sockaddr *)&name, gid,
					  &qpn, &lid), -FI_EINVAL, "QP1");
	name.sin6_flowinfo = htonl(0x1000000);
	cr_assert_eq(rivet_ud_addr_decode((struct sockaddr *)&name, gid,
					  &qpn, &lid), -FI_EINVAL, "25 bits");
	rivet_ud_addr_encode(g_gid, 0x20, 0, &name);
	name.sin6_scope_id = 0x10000;
	cr_assert_eq(rivet_ud_addr_decode((struct sockaddr *)&name, gid,
					  &qpn, &lid), -FI_EINVAL, "LID");
	cr_assert_eq(rivet_ud_addr_decode(NULL, gid, &qpn, &lid), -FI_EINVAL);
}

Test(ud_addr, grh_sgid)
{
	uint8_t grh[RIVET_UD_GRH_LEN] = { 0 }, gid[16];
	size_t i;

	/* RoCE v2 over IPv4: an IPv4 header at byte 20, saddr 10.77.0.1 */
	grh[20] = 0x45;
	grh[32] = 10;
	grh[33] = 77;
	grh[34] = 0;
	grh[35] = 1;
	rivet_ud_grh_sgid(grh, true, gid);
	cr_assert_arr_eq(gid, g_gid, 16);
	/* IB or RoCE over IPv6: the GRH's SGID at byte 8 */
	for (i = 0; i < 16; i++)
		grh[8 + i] = (uint8_t)(0xf0 + i);
	rivet_ud_grh_sgid(grh, false, gid);
	cr_assert_arr_eq(gid, grh + 8, 16);
}

Test(ud_addr, service_addresses)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(9228) };
	struct sockaddr_in6 svc, name;
	union rivet_sockaddr ip;

	inet_pton(AF_INET, "10.77.0.1", &sin.sin_addr);
	rivet_ud_addr_from_ip((struct sockaddr *)&sin, &svc);
	cr_assert_not(rivet_ud_addr_is_service((struct sockaddr *)&svc),
		      "port 0");
	svc.sin6_port = htons(9228);
	cr_assert(rivet_ud_addr_is_service((struct sockaddr *)&svc));
	cr_assert(rivet_ud_addr_is_service((struct sockaddr *)&sin));
	rivet_ud_addr_encode(g_gid, 0x22, 0, &name);
	cr_assert_not(rivet_ud_addr_is_service((struct sockaddr *)&name),
		      "a name has its QPN");
	cr_assert_not(rivet_ud_addr_is_service(NULL));

	cr_assert_eq(rivet_ud_addr_to_ip((struct sockaddr *)&svc, &ip), 0);
	cr_assert_eq(ip.sa.sa_family, AF_INET, "mapped: plain IPv4");
	cr_assert_eq(ip.sin.sin_port, htons(9228));
	cr_assert_eq(ip.sin.sin_addr.s_addr, sin.sin_addr.s_addr);
	inet_pton(AF_INET6, "fe80::2", &svc.sin6_addr);
	svc.sin6_flowinfo = htonl(5);
	cr_assert_eq(rivet_ud_addr_to_ip((struct sockaddr *)&svc, &ip), 0);
	cr_assert_eq(ip.sa.sa_family, AF_INET6);
	cr_assert_eq(ip.sin6.sin6_flowinfo, 0);
	cr_assert_arr_eq(&ip.sin6.sin6_addr, &svc.sin6_addr, 16);
	cr_assert_eq(rivet_ud_addr_to_ip(NULL, &ip), -FI_EINVAL);
}

Test(ud_addr, mtu_bytes)
{
	cr_assert_eq(rivet_ud_mtu_bytes(IBV_MTU_256), 256);
	cr_assert_eq(rivet_ud_mtu_bytes(IBV_MTU_1024), 1024);
	cr_assert_eq(rivet_ud_mtu_bytes(IBV_MTU_4096), 4096);
	cr_assert_eq(rivet_ud_mtu_bytes(0), 0);
	cr_assert_eq(rivet_ud_mtu_bytes(6), 0);
}

Test(ud_addr, recv_len)
{
	size_t len, olen;

	cr_assert_eq(rivet_ud_recv_len(40 + 100, 40, 100, &len, &olen), 0);
	cr_assert_eq(len, 100);
	cr_assert_eq(olen, 0);
	cr_assert_eq(rivet_ud_recv_len(40 + 10, 40, 100, &len, &olen), 0);
	cr_assert_eq(len, 10);
	cr_assert_eq(rivet_ud_recv_len(40, 40, 100, &len, &olen), 0);
	cr_assert_eq(len, 0, "an empty datagram");
	cr_assert_eq(rivet_ud_recv_len(40 + 1024, 40, 64, &len, &olen),
		     -FI_ETRUNC);
	cr_assert_eq(len, 64, "what was placed");
	cr_assert_eq(olen, 960, "what did not fit");
	/* an RC receive: no header */
	cr_assert_eq(rivet_ud_recv_len(4096, 0, 4096, &len, &olen), 0);
	cr_assert_eq(len, 4096);
	cr_assert_eq(rivet_ud_recv_len(10, 40, 100, &len, &olen), 0);
	cr_assert_eq(len, 0, "shorter than its header: nothing");
}
