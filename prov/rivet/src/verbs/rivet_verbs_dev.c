/* SPDX-License-Identifier: MIT */
/*
 * The verbs seam for discovery: one scan of the verbs devices librdmacm
 * knows, their active ports, real limits (including the inline size a QP
 * really accepts) and the IP addresses that rdma_cm binds to each of
 * them; which device routes to an address, and from which local one; a
 * port's link layer.  Real in the unit tests too (they build struct
 * rivet_dev by hand).
 */
#include <ifaddrs.h>
#include <net/if.h>
#include <stdlib.h>

#include "rivet.h"

/* rxe (6.12) cannot register a region over 1 GiB; real HCAs go further, but
 * no application gets a message larger than the region it can register. */
#define RIVET_MAX_MSG_CAP (1ULL << 30)

static struct rivet_devs g_devs;
static pthread_once_t g_scan_once = PTHREAD_ONCE_INIT;
static int g_scan_ret;
static struct ibv_context **g_rdma_ctxs;

static uint32_t rivet_dev_try_inline(struct ibv_pd *pd, struct ibv_cq *cq,
				     uint32_t sge, uint32_t size)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = 16,
			.max_recv_wr = 16,
			.max_send_sge = sge,
			.max_recv_sge = sge,
			.max_inline_data = size,
		},
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &attr);

	if (!qp)
		return 0;
	size = attr.cap.max_inline_data;
	ibv_destroy_qp(qp);
	return size ? size : 1;	/* 1: "a QP with 0 inline works" */
}

/* The largest inline size an RC QP really accepts; devices differ and some
 * refuse what they advertise, so ask by creating QPs. */
static uint32_t rivet_dev_probe_inline(struct rivet_dev *dev)
{
	struct ibv_pd *pd = ibv_alloc_pd(dev->ctx);
	struct ibv_cq *cq = NULL;
	uint32_t sge = RIVET_MIN((uint32_t)dev->attr.max_sge,
				 RIVET_IOV_LIMIT_MAX);
	uint32_t size, got = 0;

	if (!pd)
		return 0;
	cq = ibv_create_cq(dev->ctx, 32, NULL, NULL, 0);
	if (!cq)
		goto out;
	for (size = RIVET_MAX_INLINE_PROBE; size >= 16; size /= 2) {
		got = rivet_dev_try_inline(pd, cq, sge, size);
		if (got >= size)
			break;
		got = 0;
	}
	ibv_destroy_cq(cq);
out:
	ibv_dealloc_pd(pd);
	return got;
}

static int rivet_dev_construct(struct rivet_dev *dev, struct ibv_context *ctx)
{
	uint8_t p;

	memset(dev, 0, sizeof(*dev));
	dev->ctx = ctx;
	snprintf(dev->name, sizeof(dev->name), "%s",
		 ibv_get_device_name(ctx->device));
	if (ibv_query_device(ctx, &dev->attr)) {
		RIVET_WARN_ERRNO(CORE, "ibv_query_device", errno);
		return -FI_ENODEV;
	}
	for (p = 1; p <= dev->attr.phys_port_cnt; p++) {
		if (ibv_query_port(ctx, p, &dev->port_attr))
			continue;
		if (dev->port_attr.state == IBV_PORT_ACTIVE) {
			dev->port_num = p;
			break;
		}
	}
	if (!dev->port_num) {
		RIVET_INFO(CORE, "%s: no active port\n", dev->name);
		return -FI_ENODEV;
	}
	dev->max_msg_size = RIVET_MIN((uint64_t)dev->port_attr.max_msg_sz,
				      RIVET_MAX_MSG_CAP);
	dev->max_inline = rivet_dev_probe_inline(dev);
	RIVET_INFO(CORE, "%s: port %u, max_qp_wr %d, max_sge %d, inline %u\n",
		   dev->name, dev->port_num, dev->attr.max_qp_wr,
		   dev->attr.max_sge, dev->max_inline);
	return 0;
}

static struct rivet_dev *rivet_devs_find_ctx(struct ibv_context *ctx)
{
	size_t i;

	for (i = 0; i < g_devs.ndevs; i++)
		if (g_devs.devs[i].ctx == ctx ||
		    !strcmp(g_devs.devs[i].name,
			    ibv_get_device_name(ctx->device)))
			return &g_devs.devs[i];
	return NULL;
}

static unsigned int rivet_prefix_len(const struct sockaddr *mask)
{
	const uint8_t *b;
	size_t n, i;
	unsigned int bits = 0;

	if (!mask)
		return 0;
	if (mask->sa_family == AF_INET) {
		b = (const uint8_t *)&((const struct sockaddr_in *)mask)->sin_addr;
		n = 4;
	} else {
		b = (const uint8_t *)&((const struct sockaddr_in6 *)mask)->sin6_addr;
		n = 16;
	}
	for (i = 0; i < n; i++)
		bits += __builtin_popcount(b[i]);
	return bits;
}

static bool rivet_ifa_wanted(const struct ifaddrs *ifa)
{
	if (!ifa->ifa_addr || (ifa->ifa_flags & IFF_LOOPBACK) ||
	    !(ifa->ifa_flags & IFF_UP))
		return false;
	if (ifa->ifa_addr->sa_family != AF_INET &&
	    (ifa->ifa_addr->sa_family != AF_INET6 || !g_rivet_params.ipv6))
		return false;
	if (g_rivet_params.iface && strcmp(g_rivet_params.iface, ifa->ifa_name))
		return false;
	return true;
}

/* rdma_cm tells which device owns an address: bind an id to it. */
static void rivet_devs_add_addr(const struct ifaddrs *ifa)
{
	struct rdma_cm_id *id;
	struct rivet_dev *dev;
	struct rivet_dev_addr *a;

	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP))
		return;
	if (rdma_bind_addr(id, ifa->ifa_addr) || !id->verbs)
		goto out;
	dev = rivet_devs_find_ctx(id->verbs);
	if (!dev || dev->naddrs >= sizeof(dev->addrs) / sizeof(dev->addrs[0]))
		goto out;
	a = &dev->addrs[dev->naddrs++];
	memcpy(&a->addr, ifa->ifa_addr, rivet_addr_len(ifa->ifa_addr));
	rivet_addr_set_port(&a->addr.sa, 0);
	a->prefix_len = rivet_prefix_len(ifa->ifa_netmask);
	snprintf(a->ifname, sizeof(a->ifname), "%s", ifa->ifa_name);
out:
	rdma_destroy_id(id);
}

static void rivet_devs_scan_addrs(void)
{
	struct ifaddrs *ifas, *ifa;
	int family;

	if (getifaddrs(&ifas)) {
		RIVET_WARN_ERRNO(CORE, "getifaddrs", errno);
		return;
	}
	/* IPv4 first, so that the first fi_info is the common case */
	for (family = AF_INET; family; family = family == AF_INET ? AF_INET6 : 0)
		for (ifa = ifas; ifa; ifa = ifa->ifa_next)
			if (rivet_ifa_wanted(ifa) &&
			    ifa->ifa_addr->sa_family == family)
				rivet_devs_add_addr(ifa);
	freeifaddrs(ifas);
}

static void rivet_devs_scan(void)
{
	int n = 0, i;

	g_rdma_ctxs = rdma_get_devices(&n);
	if (!g_rdma_ctxs || n <= 0) {
		RIVET_INFO(CORE, "no RDMA devices found\n");
		g_scan_ret = -FI_ENODATA;
		return;
	}
	for (i = 0; i < n && g_devs.ndevs < 8; i++)
		if (!rivet_dev_construct(&g_devs.devs[g_devs.ndevs],
					 g_rdma_ctxs[i]))
			g_devs.ndevs++;
	rivet_devs_scan_addrs();
	for (i = 0; i < (int)g_devs.ndevs; i++)
		if (!g_devs.devs[i].naddrs)
			RIVET_INFO(CORE, "%s: no IP address; not usable\n",
				   g_devs.devs[i].name);
	g_scan_ret = g_devs.ndevs ? 0 : -FI_ENODATA;
}

int rivet_devs_get(const struct rivet_devs **devs_p)
{
	pthread_once(&g_scan_once, rivet_devs_scan);
	if (g_scan_ret)
		return g_scan_ret;
	*devs_p = &g_devs;
	return 0;
}

struct rivet_dev *rivet_dev_lookup_ctx(struct ibv_context *ctx)
{
	const struct rivet_devs *devs;

	if (rivet_devs_get(&devs))
		return NULL;
	return rivet_devs_find_ctx(ctx);
}

const struct rivet_dev *rivet_dev_lookup_name(const char *name)
{
	const struct rivet_devs *devs;
	size_t i;

	if (!name || rivet_devs_get(&devs))
		return NULL;
	for (i = 0; i < devs->ndevs; i++)
		if (!strcmp(devs->devs[i].name, name))
			return &devs->devs[i];
	return NULL;
}

void rivet_devs_finalize(void)
{
	if (g_rdma_ctxs)
		rdma_free_devices(g_rdma_ctxs);
	g_rdma_ctxs = NULL;
}

int rivet_verbs_route(const struct sockaddr *src, const struct sockaddr *dst,
		      int timeout_ms, struct ibv_context **ctx_p,
		      union rivet_sockaddr *local_p)
{
	struct rdma_cm_id *id;
	struct sockaddr *local;
	int ret;

	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP))
		return -FI_ENODATA;
	ret = rdma_resolve_addr(id, (struct sockaddr *)src,
				(struct sockaddr *)dst, timeout_ms);
	if (ret || !id->verbs) {
		RIVET_INFO(CORE, "rdma_resolve_addr: no RDMA route (%d)\n",
			   ret ? errno : 0);
		rdma_destroy_id(id);
		return -FI_ENODATA;
	}
	*ctx_p = id->verbs;
	local = rdma_get_local_addr(id);
	memcpy(local_p, local, rivet_addr_len(local));
	rdma_destroy_id(id);
	return 0;
}

bool rivet_verbs_port_ethernet(struct ibv_context *ctx, uint8_t port)
{
	struct ibv_port_attr pa;

	return !ibv_query_port(ctx, port, &pa) &&
	       pa.link_layer == IBV_LINK_LAYER_ETHERNET;
}
