/* SPDX-License-Identifier: MIT */
/*
 * DGRAM endpoint lifecycle: open, bind (the AV here, CQs and counters as
 * MSG endpoints do), enable (a UD QP with rivet's QKey, moved to RTS, and
 * the per-slot GRH and tail buffers), the name, the address handles and
 * close.  The data path is in rivet_dgram.c and rivet_msg.c.
 */
#include <stdlib.h>

#include "rivet_dgram.h"

static struct rivet_dgram *to_rud(struct fid *fid)
{
	return container_of(fid, struct rivet_ep, ep_fid.fid)->ud;
}

/* ---- address handles ---- */

static void rivet_dgram_ah_lock(struct rivet_dgram *ud)
{
	if (ud->ah_locking)
		pthread_mutex_lock(&ud->ah_lock);
}

static void rivet_dgram_ah_unlock(struct rivet_dgram *ud)
{
	if (ud->ah_locking)
		pthread_mutex_unlock(&ud->ah_lock);
}

static int rivet_dgram_ah_make(struct rivet_dgram *ud, fi_addr_t dest,
			       struct rivet_ud_ah *out)
{
	const struct rivet_dev *dev = ud->ep->domain->dev;
	struct ibv_ah_attr attr = { .port_num = dev->port_num };
	union rivet_sockaddr sa;
	uint32_t qpn;
	uint16_t lid;
	int ret;

	out->ah = NULL;
	if (rivet_av_addr(ud->av, dest, &sa) ||
	    rivet_ud_addr_decode(&sa.sa, attr.grh.dgid.raw, &qpn, &lid))
		return -FI_EINVAL;
	attr.is_global = 1;
	attr.grh.sgid_index = (uint8_t)ud->gid_index;
	attr.grh.hop_limit = 64;
	if (ud->ep->tos >= 0)
		attr.grh.traffic_class = (uint8_t)ud->ep->tos;
	attr.dlid = lid;
	ret = rivet_verbs_ah_create(ud->ep->domain->pd, &attr, &out->ah);
	if (ret)
		return ret;
	out->qpn = qpn;
	return 0;
}

static int rivet_dgram_ah_grow(struct rivet_dgram *ud, size_t n)
{
	struct rivet_ud_ah *ahs;
	size_t cap = RIVET_MAX(n, ud->nahs * 2);

	ahs = realloc(ud->ahs, cap * sizeof(*ahs));
	if (!ahs)
		return -FI_ENOMEM;
	memset(ahs + ud->nahs, 0, (cap - ud->nahs) * sizeof(*ahs));
	ud->ahs = ahs;
	ud->nahs = cap;
	return 0;
}

int rivet_dgram_ah_get(struct rivet_dgram *ud, fi_addr_t dest,
		       struct ibv_ah **ah_p, uint32_t *qpn_p)
{
	struct rivet_ud_ah made;
	int ret = 0;

	if (!ud->av || dest == FI_ADDR_UNSPEC)
		return -FI_EINVAL;
	rivet_dgram_ah_lock(ud);
	if (dest < ud->nahs && ud->ahs[dest].ah)
		goto found;
	/* the address is checked before the array grows to its index */
	ret = rivet_dgram_ah_make(ud, dest, &made);
	if (!ret && dest >= ud->nahs)
		ret = rivet_dgram_ah_grow(ud, (size_t)dest + 1);
	if (ret) {
		if (made.ah && ret == -FI_ENOMEM)
			rivet_verbs_ah_destroy(made.ah);
		rivet_dgram_ah_unlock(ud);
		return ret;
	}
	ud->ahs[dest] = made;
found:
	*ah_p = ud->ahs[dest].ah;
	*qpn_p = ud->ahs[dest].qpn;
	rivet_dgram_ah_unlock(ud);
	return 0;
}

/* fi_av_remove: the slot may name another peer next; its AH goes. */
static void rivet_dgram_addr_removed(struct rivet_av_listener *l,
				     fi_addr_t addr)
{
	struct rivet_dgram *ud = container_of(l, struct rivet_dgram, listener);

	rivet_dgram_ah_lock(ud);
	if (addr < ud->nahs && ud->ahs[addr].ah) {
		rivet_verbs_ah_destroy(ud->ahs[addr].ah);
		ud->ahs[addr].ah = NULL;
	}
	rivet_dgram_ah_unlock(ud);
}

static void rivet_dgram_ahs_destroy(struct rivet_dgram *ud)
{
	size_t i;

	for (i = 0; i < ud->nahs; i++)
		if (ud->ahs[i].ah)
			rivet_verbs_ah_destroy(ud->ahs[i].ah);
	free(ud->ahs);
	ud->ahs = NULL;
	ud->nahs = 0;
}

/* ---- bind ---- */

static int rivet_dgram_ep_bind(struct fid *fid, struct fid *bfid,
			       uint64_t flags)
{
	struct rivet_ep *ep = container_of(fid, struct rivet_ep, ep_fid.fid);
	struct rivet_dgram *ud = ep->ud;
	struct rivet_av *av;
	int ret;

	if (!bfid || bfid->fclass != FI_CLASS_AV)
		return rivet_ep_bind(fid, bfid, flags);
	if (ep->state != RIVET_EP_IDLE)
		return -FI_EOPBADSTATE;
	av = container_of(bfid, struct rivet_av, av_fid.fid);
	if (ud->av || av->domain != ep->domain)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	ret = rivet_av_bind_ep(av, &ud->listener);
	if (ret)
		return ret;
	ud->av = av;
	return 0;
}

/* ---- enable ---- */

/* The GID of the endpoint's address: on RoCE the entry that holds its IP
 * (RoCE v2 preferred), on IB the port's GID 0 and its LID. */
static int rivet_dgram_gid(struct rivet_ep *ep, struct rivet_dgram *ud)
{
	const struct rivet_dev *dev = ep->domain->dev;
	const struct sockaddr *ip = ep->src.sa.sa_family ?
				    &ep->src.sa : &dev->addrs[0].addr.sa;
	struct ibv_gid_entry ent;
	struct sockaddr_in6 want;
	int i, any = -1;

	ud->lid = dev->port_attr.lid;
	if (dev->port_attr.link_layer != IBV_LINK_LAYER_ETHERNET) {
		ud->gid_index = 0;
		return rivet_verbs_gid(dev->ctx, dev->port_num, 0, &ud->gid);
	}
	if (!dev->naddrs || rivet_ud_addr_from_ip(ip, &want))
		return -FI_EADDRNOTAVAIL;
	for (i = 0; i < dev->port_attr.gid_tbl_len; i++) {
		if (rivet_verbs_gid_entry(dev->ctx, dev->port_num, i, &ent) ||
		    memcmp(ent.gid.raw, want.sin6_addr.s6_addr, 16))
			continue;
		if (ent.gid_type == IBV_GID_TYPE_ROCE_V2) {
			any = i;
			break;
		}
		if (any < 0)
			any = i;
	}
	if (any < 0) {
		RIVET_WARN(EP_CTRL, "no GID of %s holds the address\n",
			   dev->name);
		return -FI_EADDRNOTAVAIL;
	}
	ud->gid_index = any;
	memcpy(ud->gid.raw, want.sin6_addr.s6_addr, 16);
	ud->roce_ipv4 = IN6_IS_ADDR_V4MAPPED(&want.sin6_addr);
	return 0;
}

static int rivet_dgram_qp_create(struct rivet_ep *ep)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = ep->tx_cq->ibv_cq,
		.recv_cq = ep->rx_cq->ibv_cq,
		.qp_type = IBV_QPT_UD,
		.cap = {
			.max_send_wr = ep->tx_size,
			.max_recv_wr = ep->rx_size,
			.max_send_sge = ep->iov_limit,
			.max_recv_sge = ep->iov_limit + 2,
			.max_inline_data = ep->domain->dev->max_inline,
		},
	};
	int ret;

	if (ep->srx) {		/* receives come from the context's SRQ */
		attr.srq = ep->srx->srq;
		attr.cap.max_recv_wr = attr.cap.max_recv_sge = 0;
	}
	ret = rivet_verbs_ud_qp_create(ep->domain->pd, &attr,
				       ep->domain->dev->port_num,
				       RIVET_UD_QKEY, &ep->qp);
	if (ret)
		return ret;
	ep->inline_size = attr.cap.max_inline_data;
	RIVET_DBG(EP_CTRL, "ud qp 0x%x created\n", ep->qp->qp_num);
	return ep->srx ? rivet_srx_attach(ep) : 0;
}

static int rivet_dgram_extra_construct(struct rivet_ep *ep,
				       struct rivet_dgram *ud)
{
	size_t len;

	ud->extra_stride = (RIVET_UD_GRH_LEN + ud->mtu + 63) & ~(size_t)63;
	len = ud->extra_stride * ep->rx_size;
	if (posix_memalign((void **)&ud->rx_extra, 4096, len))
		return -FI_ENOMEM;
	return rivet_verbs_mr_reg(ep->domain->pd, ud->rx_extra, len,
				  IBV_ACCESS_LOCAL_WRITE, &ud->rx_extra_mr);
}

static int rivet_dgram_ep_enable(struct rivet_ep *ep)
{
	struct rivet_dgram *ud = ep->ud;
	int ret;

	if (ep->state != RIVET_EP_IDLE)
		return 0;
	if (!ud->av)
		return -FI_ENOAV;
	ret = rivet_dgram_gid(ep, ud);
	if (!ret)
		ret = rivet_ep_hidden_cqs(ep);
	if (!ret)
		ret = rivet_dgram_qp_create(ep);
	if (!ret)
		ret = rivet_ep_ring_construct(&ep->tx_ring, ep->tx_size);
	if (!ret)
		ret = rivet_ep_ring_construct(&ep->rx_ring, ep->rx_size);
	if (!ret)
		ret = rivet_ep_bounce_construct(ep);
	if (!ret)
		ret = rivet_dgram_extra_construct(ep, ud);
	if (!ret)
		ret = rivet_dgram_early_start(ep);
	if (!ret)
		ret = rivet_dgram_listen(ep);
	if (ret)
		return ret;
	rivet_ep_attach_cntrs(ep, true);
	ep->state = RIVET_EP_ENABLED;
	return 0;
}

static int rivet_dgram_ep_control(struct fid *fid, int command, void *arg)
{
	struct rivet_ep *ep = container_of(fid, struct rivet_ep, ep_fid.fid);

	if (command == FI_ENABLE)
		return rivet_dgram_ep_enable(ep);
	return rivet_ep_control(fid, command, arg);
}

/* ---- name ---- */

static int rivet_dgram_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct rivet_ep *ep = container_of(fid, struct rivet_ep, ep_fid.fid);
	struct sockaddr_in6 name;
	size_t len = sizeof(name);

	if (!addrlen)
		return -FI_EINVAL;
	if (!ep->qp)		/* the QPN is the name: known once enabled */
		return -FI_EOPBADSTATE;
	rivet_ud_addr_encode(ep->ud->gid.raw, ep->qp->qp_num, ep->ud->lid,
			     &name);
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &name, len);
	*addrlen = len;
	return 0;
}

static int rivet_dgram_ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;	/* the device picks the QPN */
}

/* ---- close ---- */

static int rivet_dgram_ep_close(struct fid *fid)
{
	struct rivet_ep *ep = container_of(fid, struct rivet_ep, ep_fid.fid);
	struct rivet_dgram *ud = to_rud(fid);

	rivet_dgram_unlisten(ep);
	rivet_srx_release(ep);	/* before the QP goes */
	if (ud->av)
		rivet_av_unbind_ep(ud->av, &ud->listener);
	ud->av = NULL;	/* the flush below reports no sources */
	if (ep->qp)
		rivet_ep_destroy_qp(ep);
	rivet_dgram_early_free(ud);	/* after its slots flushed */
	rivet_dgram_ahs_destroy(ud);
	if (ud->rx_extra_mr)
		rivet_verbs_mr_dereg(ud->rx_extra_mr);
	free(ud->rx_extra);
	pthread_mutex_destroy(&ud->ah_lock);
	free(ud);
	ep->ud = NULL;
	return rivet_ep_close(fid);
}

/* ---- open ---- */

static struct fi_ops g_rivet_dgram_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_dgram_ep_close,
	.bind = rivet_dgram_ep_bind,
	.control = rivet_dgram_ep_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_cm g_rivet_dgram_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = rivet_dgram_ep_setname,
	.getname = rivet_dgram_ep_getname,
	.getpeer = rivet_no_getpeer,
	.connect = rivet_no_connect,
	.listen = rivet_no_listen,
	.accept = rivet_no_accept,
	.reject = rivet_no_reject,
	.shutdown = rivet_no_shutdown,
	.join = rivet_no_join,
};

static int rivet_dgram_construct(struct rivet_ep *ep, struct rivet_dgram *ud,
				 const struct fi_info *info)
{
	const struct rivet_dev *dev = ep->domain->dev;

	if (dev->attr.max_sge < 3)
		return -FI_ENODATA;
	ep->iov_limit = RIVET_MIN((size_t)dev->attr.max_sge - 2,
				  RIVET_DGRAM_IOV_LIMIT);
	ud->ep = ep;
	ud->mtu = info->ep_attr->max_msg_size;
	if (!ud->mtu || ud->mtu > rivet_ud_mtu_bytes(dev->port_attr.active_mtu))
		return -FI_EINVAL;
	ud->listener.removed = rivet_dgram_addr_removed;
	ud->want_source = info->caps & FI_SOURCE;
	/* fi_getinfo gave FI_MSG_PREFIX only to who asked (msg_prefix_size
	 * is the GRH's) */
	if ((info->mode | (info->rx_attr ? info->rx_attr->mode : 0) |
	     (info->tx_attr ? info->tx_attr->mode : 0)) & FI_MSG_PREFIX)
		ep->prefix = RIVET_UD_GRH_LEN;
	ud->source.resolve = rivet_dgram_src_resolve;
	ud->ah_locking = ep->domain->threading != FI_THREAD_DOMAIN;
	pthread_mutex_init(&ud->ah_lock, NULL);
	ep->ud = ud;
	return 0;
}

int rivet_dgram_ep_open(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **ep_p, void *context)
{
	struct rivet_domain *dom = to_rdomain(domain);
	struct rivet_dgram *ud;
	struct rivet_ep *ep;
	int ret;

	if (info->handle)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	ud = calloc(1, sizeof(*ud));
	if (!ep || !ud) {
		ret = -FI_ENOMEM;
		goto free_ep;
	}
	ret = rivet_ep_construct(ep, dom, info);
	if (!ret)
		ret = rivet_dgram_construct(ep, ud, info);
	if (ret)
		goto free_ep;
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &g_rivet_dgram_fi_ops;
	ep->ep_fid.ops = &g_rivet_ep_ops;
	ep->ep_fid.cm = &g_rivet_dgram_cm_ops;
	ep->ep_fid.msg = &g_rivet_dgram_msg_ops;
	ep->ep_fid.rma = &g_rivet_no_rma_ops;
	ep->ep_fid.atomic = &g_rivet_no_atomic_ops;
	ep->ep_fid.tagged = &g_rivet_no_tagged_ops;
	ep->ep_fid.collective = &g_rivet_no_collective_ops;
	atomic_fetch_add(&dom->refcnt, 1);
	*ep_p = &ep->ep_fid;
	return 0;
free_ep:
	if (ep && ep->info)
		fi_freeinfo(ep->info);
	free(ud);
	free(ep);
	return ret;
}
