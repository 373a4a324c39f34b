/* SPDX-License-Identifier: MIT */
/*
 * fi_getinfo for rivet: resolves node/service/FI_SOURCE and the hints'
 * addresses to the devices that own them, then asks rivet_info.c for the
 * matched fi_info of each endpoint type per (device, address): RDM, MSG.
 */
#include <netdb.h>
#include <stdlib.h>

#include "rivet.h"

#define RIVET_RESOLVE_TIMEOUT_MS 2000

struct rivet_getinfo_req {
	union rivet_sockaddr src, dst, route_src;
	bool has_src, has_dst;
	struct ibv_context *route_ctx;	/* device that reaches dst */
};

static int rivet_gai(const char *node, const char *service, uint64_t flags,
		     const struct fi_info *hints, bool passive,
		     union rivet_sockaddr *out)
{
	struct addrinfo ai = { .ai_socktype = SOCK_STREAM }, *res;
	uint32_t fmt = hints ? hints->addr_format : FI_FORMAT_UNSPEC;
	int ret;

	ai.ai_family = fmt == FI_SOCKADDR_IN ? AF_INET :
		       fmt == FI_SOCKADDR_IN6 ? AF_INET6 : AF_UNSPEC;
	/* an IPv6 format asked for (a DGRAM name's, say) takes an IPv4 node
	 * as its mapped address */
	ai.ai_flags = (passive ? AI_PASSIVE : 0) |
		      ((flags & FI_NUMERICHOST) ? AI_NUMERICHOST : 0) |
		      (ai.ai_family == AF_INET6 ? AI_V4MAPPED : 0);
	ret = getaddrinfo(node, service, &ai, &res);
	if (ret) {
		RIVET_INFO(CORE, "getaddrinfo(%s, %s): %s\n",
			   node ? node : "-", service ? service : "-",
			   gai_strerror(ret));
		return -FI_ENODATA;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out, res->ai_addr, RIVET_MIN(res->ai_addrlen, sizeof(*out)));
	freeaddrinfo(res);
	return 0;
}

static int rivet_getinfo_copy_addr(const void *addr, size_t len,
				   union rivet_sockaddr *out)
{
	const struct sockaddr *sa = addr;

	if (len < sizeof(sa->sa_family) || !rivet_addr_len(sa) ||
	    len < rivet_addr_len(sa))
		return -FI_EINVAL;
	memset(out, 0, sizeof(*out));
	memcpy(out, addr, rivet_addr_len(sa));
	return 0;
}

/* An IPv4-mapped IPv6 address (a DGRAM name: rivet.h) as the plain IPv4
 * address that rdma_cm routes, without its port (the QPN's bits). */
static void rivet_getinfo_unmap(const union rivet_sockaddr *in,
				union rivet_sockaddr *out)
{
	const struct sockaddr_in6 *sin6 = &in->sin6;

	*out = *in;
	if (in->sa.sa_family != AF_INET6 ||
	    !IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr))
		return;
	memset(out, 0, sizeof(*out));
	out->sin.sin_family = AF_INET;
	memcpy(&out->sin.sin_addr, &sin6->sin6_addr.s6_addr[12], 4);
}

/* Which device routes to dst, and from which local address. */
static int rivet_getinfo_route(struct rivet_getinfo_req *req)
{
	union rivet_sockaddr rsrc, rdst;
	struct sockaddr *src = req->has_src ? &rsrc.sa : NULL;

	rivet_getinfo_unmap(&req->src, &rsrc);
	rivet_getinfo_unmap(&req->dst, &rdst);
	return rivet_verbs_route(src, &rdst.sa, RIVET_RESOLVE_TIMEOUT_MS,
				 &req->route_ctx, &req->route_src);
}

static int rivet_getinfo_addrs(const char *node, const char *service,
			       uint64_t flags, const struct fi_info *hints,
			       struct rivet_getinfo_req *req)
{
	int ret;

	if (node || service) {
		bool src = (flags & FI_SOURCE) || !node;

		ret = rivet_gai(node, service, flags, hints, src,
				src ? &req->src : &req->dst);
		if (ret)
			return ret;
		req->has_src = src;
		req->has_dst = !src;
	}
	if (hints && hints->src_addr && !req->has_src) {
		ret = rivet_getinfo_copy_addr(hints->src_addr,
					      hints->src_addrlen, &req->src);
		if (ret)
			return ret;
		req->has_src = true;
	}
	if (hints && hints->dest_addr && !req->has_dst) {
		ret = rivet_getinfo_copy_addr(hints->dest_addr,
					      hints->dest_addrlen, &req->dst);
		if (ret)
			return ret;
		req->has_dst = true;
	}
	return req->has_dst ? rivet_getinfo_route(req) : 0;
}

static bool rivet_addr_is_any(const struct sockaddr *sa)
{
	static const struct in6_addr any6 = IN6ADDR_ANY_INIT;

	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &any6,
		       sizeof(any6));
}

static bool rivet_getinfo_addr_ok(const struct rivet_getinfo_req *req,
				  const struct rivet_dev *dev,
				  const struct rivet_dev_addr *a)
{
	if (req->has_dst)
		return rivet_dev_lookup_ctx(req->route_ctx) == dev &&
		       rivet_addr_same_ip(&req->route_src.sa, &a->addr.sa);
	if (req->has_src && !rivet_addr_is_any(&req->src.sa))
		return rivet_addr_same_ip(&req->src.sa, &a->addr.sa);
	if (req->has_src)
		return req->src.sa.sa_family == a->addr.sa.sa_family;
	return true;
}

static void rivet_getinfo_limits(const struct rivet_dev *dev,
				 const struct sockaddr *src, char *fabric_name,
				 size_t name_len, unsigned int prefix_len,
				 struct rivet_info_limits *lim)
{
	rivet_addr_subnet_name(src, prefix_len, fabric_name, name_len);
	*lim = (struct rivet_info_limits) {
		.fabric_name = fabric_name,
		.domain_name = dev->name,
		.src_addr = src,
		.max_qp_wr = dev->attr.max_qp_wr,
		.max_sge = dev->attr.max_sge,
		.max_inline = dev->max_inline,
		.max_msg_size = dev->max_msg_size,
		.max_cqe = dev->attr.max_cqe,
		.max_cq = dev->attr.max_cq,
		.max_qp = dev->attr.max_qp,
		.max_mr = dev->attr.max_mr,
		.max_mr_size = dev->attr.max_mr_size,
		.atomics = dev->attr.atomic_cap != IBV_ATOMIC_NONE,
		.ud_mtu = rivet_ud_mtu_bytes(dev->port_attr.active_mtu),
	};
}

static int rivet_getinfo_dup_addr(const struct sockaddr *sa, void **addr_p,
				  size_t *len_p)
{
	size_t len = rivet_addr_len(sa);

	free(*addr_p);
	*addr_p = malloc(len);
	if (!*addr_p)
		return -FI_ENOMEM;
	memcpy(*addr_p, sa, len);
	*len_p = len;
	return 0;
}

/* A DGRAM info gives node/service as a DGRAM service address (rivet.h:
 * the IP and the port, no QPN), which an AV resolves by SIDR; the QPN
 * itself comes from fi_getname. */
static void rivet_getinfo_ud_addr(const struct fi_info *fi,
				  union rivet_sockaddr *sa)
{
	struct sockaddr_in6 ud;
	uint8_t gid[16];
	uint32_t qpn;
	uint16_t lid;

	if (fi->ep_attr->type != FI_EP_DGRAM ||
	    !rivet_ud_addr_decode(&sa->sa, gid, &qpn, &lid) ||
	    rivet_ud_addr_from_ip(&sa->sa, &ud))
		return;	/* a DGRAM name from the hints stays as it is */
	/* the port stays: a service address (rivet_ud_resolve) */
	ud.sin6_port = htons(rivet_addr_port(&sa->sa));
	memset(sa, 0, sizeof(*sa));
	memcpy(sa, &ud, sizeof(ud));
}

static int rivet_getinfo_set_addrs(struct fi_info *fi,
				   const struct rivet_getinfo_req *req,
				   const struct sockaddr *src)
{
	union rivet_sockaddr s, d;
	int ret;

	memcpy(&s, src, rivet_addr_len(src));
	if (req->has_src)
		rivet_addr_set_port(&s.sa, rivet_addr_port(&req->src.sa));
	rivet_getinfo_ud_addr(fi, &s);
	ret = rivet_getinfo_dup_addr(&s.sa, &fi->src_addr, &fi->src_addrlen);
	if (ret || !req->has_dst)
		return ret;
	memcpy(&d, &req->dst, sizeof(d));
	rivet_getinfo_ud_addr(fi, &d);
	return rivet_getinfo_dup_addr(&d.sa, &fi->dest_addr,
				      &fi->dest_addrlen);
}

/* One (device, address): the infos of every type that the hints select,
 * then their addresses. */
static int rivet_getinfo_one(const struct rivet_dev *dev,
			     const struct rivet_dev_addr *a,
			     const struct rivet_getinfo_req *req,
			     const struct fi_info *hints, uint32_t version,
			     struct fi_info **list_p)
{
	struct rivet_info_limits lim;
	struct fi_info *list, *fi;
	char fabric_name[64];
	int ret;

	rivet_getinfo_limits(dev, &a->addr.sa, fabric_name,
			     sizeof(fabric_name), a->prefix_len, &lim);
	ret = rivet_info_select(&lim, hints, version, &list);
	if (ret)
		return ret;
	for (fi = list; fi; fi = fi->next) {
		ret = rivet_getinfo_set_addrs(fi, req, &a->addr.sa);
		if (ret) {
			fi_freeinfo(list);
			return ret;
		}
	}
	*list_p = list;
	return 0;
}

/*
 * The core walks its built-in providers before third-party ones, so its
 * ofi_rxm (layered over rivet's MSG) would be listed before rivet's native
 * RDM, and MPI takes the first match.  A utility provider asking for a
 * base provider calls with the core's internal OFI_CORE_PROV_ONLY flag
 * (bit 59) and excludes itself by name ("^ofi_rxm"): rivet declines such
 * calls unless FI_RIVET_UTIL_LAYERING is set (for comparisons).
 */
#define RIVET_CORE_PROV_ONLY (1ULL << 59)

static bool rivet_getinfo_from_util(uint64_t flags,
				    const struct fi_info *hints)
{
	const char *name = hints && hints->fabric_attr ?
			   hints->fabric_attr->prov_name : NULL;

	return (flags & RIVET_CORE_PROV_ONLY) ||
	       (name && strstr(name, "^ofi_"));
}

int rivet_getinfo(uint32_t version, const char *node, const char *service,
		  uint64_t flags, const struct fi_info *hints,
		  struct fi_info **info_p)
{
	struct rivet_getinfo_req req = { 0 };
	const struct rivet_devs *devs;
	struct fi_info *head = NULL, **tail = &head;
	int ret, first_err = -FI_ENODATA;
	size_t d, i;

	if (!g_rivet_params.util_layering &&
	    rivet_getinfo_from_util(flags, hints)) {
		RIVET_INFO(CORE, "not offered as a utility provider's base "
			   "(FI_RIVET_UTIL_LAYERING=1 allows it)\n");
		return -FI_ENODATA;
	}
	ret = rivet_devs_get(&devs);
	if (ret)
		return -FI_ENODATA;
	ret = rivet_getinfo_addrs(node, service, flags, hints, &req);
	if (ret)
		return ret;
	for (d = 0; d < devs->ndevs; d++) {
		const struct rivet_dev *dev = &devs->devs[d];

		for (i = 0; i < dev->naddrs; i++) {
			if (!rivet_getinfo_addr_ok(&req, dev, &dev->addrs[i]))
				continue;
			ret = rivet_getinfo_one(dev, &dev->addrs[i], &req,
						hints, version, tail);
			if (ret && ret != -FI_ENODATA)
				first_err = ret;
			while (*tail)
				tail = &(*tail)->next;
		}
	}
	if (!head)
		return first_err;
	*info_p = head;
	return 0;
}
