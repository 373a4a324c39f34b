/* SPDX-License-Identifier: MIT */
/*
 * DGRAM endpoints' pure helpers: their names (a sockaddr_in6 carrying the
 * GID, the UD QPN and the LID), the MTU in bytes, and what a UD receive
 * got.  No verbs calls, no locks; unit tested in test/test_ud_addr.c.
 */
#include <arpa/inet.h>

#include "rivet.h"

int rivet_ud_addr_from_ip(const struct sockaddr *ip, struct sockaddr_in6 *out)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ip;

	if (!ip || !out)
		return -FI_EINVAL;
	if (ip->sa_family == AF_INET6) {
		*out = *(const struct sockaddr_in6 *)ip;
		out->sin6_port = 0;
		out->sin6_flowinfo = 0;
		out->sin6_scope_id = 0;
		return 0;
	}
	if (ip->sa_family != AF_INET)
		return -FI_EINVAL;
	memset(out, 0, sizeof(*out));
	out->sin6_family = AF_INET6;
	out->sin6_addr.s6_addr[10] = 0xff;
	out->sin6_addr.s6_addr[11] = 0xff;
	memcpy(&out->sin6_addr.s6_addr[12], &sin->sin_addr, 4);
	return 0;
}

void rivet_ud_addr_encode(const uint8_t gid[16], uint32_t qpn, uint16_t lid,
			  struct sockaddr_in6 *out)
{
	uint16_t port = (uint16_t)(qpn & 0xffff);

	memset(out, 0, sizeof(*out));
	out->sin6_family = AF_INET6;
	memcpy(&out->sin6_addr, gid, 16);
	out->sin6_flowinfo = htonl(qpn & RIVET_UD_QPN_MAX);
	out->sin6_scope_id = lid;
	out->sin6_port = htons(port ? port : 0xffff);
}

int rivet_ud_addr_decode(const struct sockaddr *sa, uint8_t gid_p[16],
			 uint32_t *qpn_p, uint16_t *lid_p)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
	uint32_t qpn;

	if (!sa || sa->sa_family != AF_INET6)
		return -FI_EINVAL;
	qpn = ntohl(sin6->sin6_flowinfo);
	/* QPN 0 and 1 are the management QPs: never a DGRAM endpoint */
	if (qpn < 2 || qpn > RIVET_UD_QPN_MAX || sin6->sin6_scope_id > 0xffff)
		return -FI_EINVAL;
	memcpy(gid_p, &sin6->sin6_addr, 16);
	*qpn_p = qpn;
	*lid_p = (uint16_t)sin6->sin6_scope_id;
	return 0;
}

bool rivet_ud_addr_is_service(const struct sockaddr *sa)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

	if (!sa)
		return false;
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port != 0;
	return sa->sa_family == AF_INET6 && !sin6->sin6_flowinfo &&
	       sin6->sin6_port;
}

int rivet_ud_addr_to_ip(const struct sockaddr *sa, union rivet_sockaddr *out)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

	if (!sa || !out)
		return -FI_EINVAL;
	memset(out, 0, sizeof(*out));
	if (sa->sa_family == AF_INET) {
		out->sin = *(const struct sockaddr_in *)sa;
		return 0;
	}
	if (sa->sa_family != AF_INET6)
		return -FI_EINVAL;
	if (!IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
		out->sin6.sin6_family = AF_INET6;
		out->sin6.sin6_port = sin6->sin6_port;
		out->sin6.sin6_addr = sin6->sin6_addr;
		return 0;
	}
	out->sin.sin_family = AF_INET;
	out->sin.sin_port = sin6->sin6_port;
	memcpy(&out->sin.sin_addr, &sin6->sin6_addr.s6_addr[12], 4);
	return 0;
}

void rivet_ud_grh_sgid(const uint8_t grh[RIVET_UD_GRH_LEN], bool ipv4,
		       uint8_t gid_p[16])
{
	if (ipv4) {	/* 20 bytes unused, then the IPv4 header: saddr at 12 */
		memset(gid_p, 0, 10);
		gid_p[10] = 0xff;
		gid_p[11] = 0xff;
		memcpy(gid_p + 12, grh + 20 + 12, 4);
		return;
	}
	memcpy(gid_p, grh + 8, 16);	/* the GRH's SGID */
}

size_t rivet_ud_mtu_bytes(int mtu)
{
	if (mtu < 1 || mtu > 5)
		return 0;
	return (size_t)128 << mtu;
}

int rivet_ud_recv_len(uint32_t byte_len, size_t hdr_len, size_t posted,
		      size_t *len_p, size_t *olen_p)
{
	size_t got = byte_len > hdr_len ? byte_len - hdr_len : 0;

	if (got > posted) {
		*len_p = posted;
		*olen_p = got - posted;
		return -FI_ETRUNC;
	}
	*len_p = got;
	*olen_p = 0;
	return 0;
}
