/* SPDX-License-Identifier: MIT */
/*
 * RDM endpoint lifecycle: open (with its rdma_cm listener, so the name is
 * known at once), bind (AV, CQs, counters), enable (verbs CQ, SRQ, the
 * registered slab of bounce buffers and staging slots), options, close.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

#include "rivet_rdm.h"

#define RIVET_RDM_BACKLOG 1024

static int rivet_rdm_bind_cq(struct rivet_rdm_ep *ep, struct rivet_cq *cq,
			     uint64_t flags)
{
	if (ep->sep)	/* a context has one direction */
		flags &= ep->sep_rx ? ~(uint64_t)FI_TRANSMIT : ~(uint64_t)FI_RECV;
	if (!(flags & (FI_TRANSMIT | FI_RECV)) ||
	    (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)))
		return -FI_EBADFLAGS;
	if (((flags & FI_TRANSMIT) && ep->tx_cq) ||
	    ((flags & FI_RECV) && ep->rx_cq) || cq->domain != ep->domain)
		return -FI_EINVAL;
	if (flags & FI_TRANSMIT) {
		ep->tx_cq = cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&cq->refcnt, 1);
	}
	if (flags & FI_RECV) {
		ep->rx_cq = cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&cq->refcnt, 1);
	}
	return 0;
}

/* The counter slots an fi_ep_bind flag names (FI_READ, FI_WRITE: the
 * RMA operations and atomics this endpoint starts; FI_REMOTE_READ,
 * FI_REMOTE_WRITE: those targeting it, with FI_RMA_EVENT). */
static struct rivet_cntr **rivet_rdm_cntr_slot(struct rivet_rdm_ep *ep,
					       uint64_t flag)
{
	switch (flag) {
	case FI_SEND:
		return &ep->send_cntr;
	case FI_RECV:
		return &ep->recv_cntr;
	case FI_READ:
		return &ep->read_cntr;
	case FI_REMOTE_READ:
		return &ep->rread_cntr;
	case FI_REMOTE_WRITE:
		return &ep->rwrite_cntr;
	default:
		return &ep->write_cntr;
	}
}

#define RIVET_RDM_CNTR_FLAGS (FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
			      FI_REMOTE_READ | FI_REMOTE_WRITE)

static int rivet_rdm_bind_cntr(struct rivet_rdm_ep *ep,
			       struct rivet_cntr *cntr, uint64_t flags)
{
	static const uint64_t all[] = { FI_SEND, FI_RECV, FI_READ, FI_WRITE,
					FI_REMOTE_READ, FI_REMOTE_WRITE };
	size_t i;

	if (!flags || (flags & ~RIVET_RDM_CNTR_FLAGS))
		return -FI_EBADFLAGS;
	/* remote counters count nothing without FI_RMA_EVENT */
	if ((flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) && !ep->rma_event)
		return -FI_EINVAL;
	for (i = 0; i < 6; i++)
		if ((flags & all[i]) && *rivet_rdm_cntr_slot(ep, all[i]))
			return -FI_EINVAL;
	for (i = 0; i < 6; i++) {
		if (!(flags & all[i]))
			continue;
		*rivet_rdm_cntr_slot(ep, all[i]) = cntr;
		atomic_fetch_add(&cntr->refcnt, 1);
	}
	return 0;
}

static int rivet_rdm_ep_bind(struct fid *fid, struct fid *bfid,
			     uint64_t flags)
{
	struct rivet_rdm_ep *ep = container_of(fid, struct rivet_rdm_ep,
					       ep_fid.fid);
	struct rivet_cntr *cntr;
	struct rivet_eq *eq;
	struct rivet_av *av;

	if (!bfid)
		return -FI_EINVAL;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	/* fi_endpoint(3): what an endpoint binds is of its own domain (an
	 * EQ: of its fabric) */
	switch (bfid->fclass) {
	case FI_CLASS_AV:
		av = container_of(bfid, struct rivet_av, av_fid.fid);
		if (ep->av || av->domain != ep->domain)
			return -FI_EINVAL;
		ep->av = av;
		atomic_fetch_add(&ep->av->refcnt, 1);
		return 0;
	case FI_CLASS_CQ:
		return rivet_rdm_bind_cq(ep, container_of(bfid,
				struct rivet_cq, cq_fid.fid), flags);
	case FI_CLASS_CNTR:
		cntr = container_of(bfid, struct rivet_cntr, cntr_fid.fid);
		if (cntr->domain != ep->domain)
			return -FI_EINVAL;
		return rivet_rdm_bind_cntr(ep, cntr, flags);
	case FI_CLASS_SRX_CTX:
		return rivet_rdm_srx_bind(ep, container_of(bfid,
				struct rivet_rdm_srx, ep_fid.fid));
	case FI_CLASS_STX_CTX:
		return rivet_stx_bind(ep->domain, bfid, &ep->stx,
				      &ep->tx_size);
	case FI_CLASS_EQ:
		/* nothing to report on an RDM endpoint's EQ */
		eq = container_of(bfid, struct rivet_eq, eq_fid.fid);
		return eq->fabric == ep->domain->fabric ? 0 : -FI_EINVAL;
	default:
		return -FI_EINVAL;
	}
}

static int rivet_rdm_slab_construct(struct rivet_rdm_ep *ep)
{
	size_t n = ep->srq_size + ep->tx_size + RIVET_RDM_CTRL_BUDGET;
	size_t i;
	int ret;

	if (posix_memalign((void **)&ep->slab, 4096, n * ep->slot_size))
		return -FI_ENOMEM;
	/* defined once for valgrind: what the NIC writes into the receive
	 * buffers later is never marked (the cost of a mark per message) */
	memset(ep->slab, 0, n * ep->slot_size);
	ret = rivet_verbs_mr_reg(ep->domain->pd, ep->slab, n * ep->slot_size,
				 IBV_ACCESS_LOCAL_WRITE, &ep->slab_mr);
	if (ret)
		return ret;
	ep->rxbufs = calloc(ep->srq_size, sizeof(*ep->rxbufs));
	ep->ctrlbufs = calloc(RIVET_RDM_CTRL_BUDGET, sizeof(*ep->ctrlbufs));
	ep->tx_ops = calloc(ep->tx_size, sizeof(*ep->tx_ops));
	if (!ep->rxbufs || !ep->ctrlbufs || !ep->tx_ops)
		return -FI_ENOMEM;
	for (i = 0; i < ep->srq_size; i++) {
		ep->rxbufs[i].kind = RIVET_WR_RXBUF;
		ep->rxbufs[i].data = ep->slab + i * ep->slot_size;
	}
	for (i = 0; i < ep->tx_size; i++) {
		ep->tx_ops[i].kind = RIVET_WR_TX;
		ep->tx_ops[i].index = i;
		ep->tx_ops[i].buf = ep->slab + (ep->srq_size + i) *
				    ep->slot_size;
		LL_PREPEND(ep->tx_free, &ep->tx_ops[i]);
	}
	for (i = 0; i < RIVET_RDM_CTRL_BUDGET; i++) {
		ep->ctrlbufs[i].kind = RIVET_WR_CTRL;
		ep->ctrlbufs[i].data = ep->slab + (ep->srq_size + ep->tx_size +
						   i) * ep->slot_size;
		LL_PREPEND(ep->ctrl_free_list, &ep->ctrlbufs[i]);
	}
	ep->ctrl_free = RIVET_RDM_CTRL_BUDGET;
	return 0;
}

/* The short paths' flags (struct rivet_rdm_ep): at enable, and when
 * FI_SETOPSFLAG changes the op flags (what else they cover, the lock,
 * the receive context and the counters, is fixed by then). */
static void rivet_rdm_ep_plain(struct rivet_rdm_ep *ep)
{
	ep->nolock_ready = ep->enabled && !ep->locking;
	ep->rx_plain = ep->nolock_ready &&
		       ep->ep_fid.fid.fclass == FI_CLASS_EP && !ep->srx &&
		       !(ep->rx_op_flags & RIVET_RDM_RX_SPECIAL);
	ep->tx_plain = ep->nolock_ready && !ep->send_cntr;
	ep->rx_report = !ep->own_rxq.rx_selective ||
			(ep->rx_op_flags & FI_COMPLETION);
}

static bool rivet_rdm_ep_auto(const struct rivet_rdm_ep *ep)
{
	const struct fi_domain_attr *d = ep->info->domain_attr;

	return d && d->data_progress == FI_PROGRESS_AUTO;
}

static int rivet_rdm_verbs_construct(struct rivet_rdm_ep *ep)
{
	const struct rivet_dev *dev = ep->domain->dev;
	int cqe;
	size_t i;
	int ret;

	ep->srq_size = RIVET_MIN(g_rivet_params.rdm_rx_bufs,
				 (size_t)dev->attr.max_srq_wr);
	/* a transmit context takes answers only (FINs, atomics' results) */
	if (ep->sep && !ep->sep_rx)
		ep->srq_size = RIVET_MIN(ep->srq_size, RIVET_SEP_TX_SRQ);
	cqe = RIVET_MIN((size_t)dev->attr.max_cqe,
			ep->srq_size + ep->tx_size + RIVET_RDM_CTRL_BUDGET + 64);
	if (rivet_rdm_ep_auto(ep)) {
		ret = rivet_verbs_channel_create(dev->ctx, &ep->comp_channel);
		if (!ret)
			ret = rivet_wait_nonblock(ep->comp_channel->fd);
		if (ret)
			return ret;
	}
	ret = rivet_verbs_cq_create(dev->ctx, cqe, NULL, ep->comp_channel,
				    &ep->ibv_cq);
	if (!ret)
		ret = rivet_verbs_srq_create(ep->domain->pd,
					     (uint32_t)ep->srq_size, 1, &ep->srq);
	if (!ret)
		ret = rivet_rdm_slab_construct(ep);
	if (ret)
		return ret;
	for (i = 0; i < ep->srq_size; i++) {
		ret = rivet_rdm_srq_post(ep, &ep->rxbufs[i]);
		if (ret)
			return ret;
	}
	/* buffers given back wait for a batch: an eighth of them at most */
	ep->srq_batch = (unsigned int)RIVET_MAX(1, RIVET_MIN(
		(size_t)RIVET_RDM_SRQ_BATCH, ep->srq_size / 8));
	ep->srq_npend = 0;
	for (i = 0; i < ep->srq_batch; i++) {
		ep->srq_sge[i] = (struct ibv_sge) {
			.length = (uint32_t)ep->slot_size,
			.lkey = ep->slab_mr->lkey,
		};
		ep->srq_wr[i] = (struct ibv_recv_wr) {
			.sg_list = &ep->srq_sge[i], .num_sge = 1,
			.next = i + 1 < ep->srq_batch ? &ep->srq_wr[i + 1] :
							NULL,
		};
	}
	return 0;
}

/* Directions without a CQ still need one for counters to progress. */
/* The endpoint's counters by their bind flags, the transmit ones (whose
 * completions are in tx_cq) first. */
static const uint64_t g_rivet_rdm_cntr_flag[] = {
	FI_SEND, FI_READ, FI_WRITE, FI_RECV, FI_REMOTE_READ, FI_REMOTE_WRITE,
};
#define RIVET_RDM_NCNTRS 6

static struct rivet_cntr **rivet_rdm_ep_cntr(struct rivet_rdm_ep *ep, int i)
{
	return rivet_rdm_cntr_slot(ep, g_rivet_rdm_cntr_flag[i]);
}

static struct rivet_cq *rivet_rdm_ep_cntr_cq(struct rivet_rdm_ep *ep, int i)
{
	return i < 3 ? ep->tx_cq : ep->rx_cq;
}

static int rivet_rdm_ep_cqs(struct rivet_rdm_ep *ep)
{
	int ret, i;

	if (!ep->tx_cq) {
		ret = rivet_cq_open_hidden(ep->domain, 16, &ep->tx_cq);
		if (ret)
			return ret;
		ep->tx_selective = true;
	}
	if (!ep->rx_cq) {
		ret = rivet_cq_open_hidden(ep->domain, 16, &ep->rx_cq);
		if (ret)
			return ret;
		ep->rx_selective = true;
	}
	ret = rivet_cq_add_source(ep->tx_cq, &ep->psrc);
	if (!ret && ep->rx_cq != ep->tx_cq)
		ret = rivet_cq_add_source(ep->rx_cq, &ep->psrc);
	for (i = 0; !ret && i < RIVET_RDM_NCNTRS; i++)
		if (*rivet_rdm_ep_cntr(ep, i))
			ret = rivet_cntr_attach_cq(*rivet_rdm_ep_cntr(ep, i),
						   rivet_rdm_ep_cntr_cq(ep, i));
	return ret;
}

static int rivet_rdm_ep_enable(struct rivet_rdm_ep *ep)
{
	int ret;

	if (ep->enabled)
		return 0;
	if (!ep->av && ep->sep) {	/* a context: its endpoint's AV */
		ep->av = rivet_sep_av(ep->sep);
		if (ep->av)
			atomic_fetch_add(&ep->av->refcnt, 1);
	}
	if (!ep->av)
		return -FI_ENOAV;
	if (ep->av->attr.rx_ctx_bits)
		ep->rx_shift = 64 - (unsigned int)ep->av->attr.rx_ctx_bits;
	ret = rivet_rdm_verbs_construct(ep);
	if (!ret)
		ret = rivet_rdm_ep_cqs(ep);
	if (!ret)
		ret = rivet_av_bind_ep(ep->av, &ep->av_listener);
	if (ret)
		return ret;
	ep->own_rxq.rx_selective = ep->rx_selective;
	if (ep->srx) {
		ret = rivet_rdm_srx_attach(ep);
		if (ret)
			return ret;
	}
	ep->enabled = true;
	rivet_rdm_ep_plain(ep);
	if (!rivet_rdm_ep_auto(ep))
		return 0;
	/* our thread writes their completions: whatever the threading
	 * level spared them, the CQs need their locks now (the application
	 * does not use them during this call: its threading level says so)
	 */
	rivet_cq_need_lock(ep->tx_cq);
	rivet_cq_need_lock(ep->rx_cq);
	return rivet_rdm_thread_start(ep);
}

static int rivet_rdm_ep_control(struct fid *fid, int command, void *arg)
{
	struct rivet_rdm_ep *ep = container_of(fid, struct rivet_rdm_ep,
					       ep_fid.fid);
	uint64_t *flags = arg;
	int ret;

	switch (command) {
	case FI_ALIAS:
		return rivet_rdm_alias_open(ep, arg);
	case FI_ENABLE:
		rivet_rdm_lock(ep);
		ret = rivet_rdm_ep_enable(ep);
		rivet_rdm_unlock(ep);
		return ret;
	case FI_GETOPSFLAG:
		if (!flags || ((*flags & FI_TRANSMIT) && (*flags & FI_RECV)))
			return -FI_EINVAL;
		*flags = (*flags & FI_RECV) ? ep->rx_op_flags :
					      ep->tx_op_flags;
		return 0;
	case FI_SETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		if ((*flags & FI_TRIGGER) && !(ep->caps & FI_TRIGGER))
			return -FI_EINVAL;
		if (*flags & FI_RECV)
			ep->rx_op_flags = *flags & ~FI_RECV;
		else
			ep->tx_op_flags = *flags & ~FI_TRANSMIT;
		rivet_rdm_ep_plain(ep);
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static void rivet_rdm_ep_release_cq(struct rivet_rdm_ep *ep,
				    struct rivet_cq *cq)
{
	if (!cq)
		return;
	rivet_cq_del_source(cq, &ep->psrc);
	if (cq->hidden)
		rivet_cq_close_hidden(cq);
	else
		atomic_fetch_sub(&cq->refcnt, 1);
}

static void rivet_rdm_ep_release_refs(struct rivet_rdm_ep *ep)
{
	struct rivet_cntr *cntr;
	int i;

	for (i = 0; i < RIVET_RDM_NCNTRS; i++) {
		cntr = *rivet_rdm_ep_cntr(ep, i);
		if (!cntr)
			continue;
		if (ep->enabled)
			rivet_cntr_detach_cq(cntr, rivet_rdm_ep_cntr_cq(ep, i));
		atomic_fetch_sub(&cntr->refcnt, 1);
	}
	/* a CQ bound for both directions holds two references */
	rivet_rdm_ep_release_cq(ep, ep->rx_cq);
	rivet_rdm_ep_release_cq(ep, ep->tx_cq);
	if (ep->av)
		atomic_fetch_sub(&ep->av->refcnt, 1);
	atomic_fetch_sub(&ep->domain->refcnt, 1);
}

static int rivet_rdm_ep_close(struct fid *fid)
{
	struct rivet_rdm_ep *ep = container_of(fid, struct rivet_rdm_ep,
					       ep_fid.fid);
	size_t i;

	if (atomic_load(&ep->naliases))
		return -FI_EBUSY;	/* fi_endpoint(3): aliases first */
	rivet_rdm_thread_stop(ep);
	rivet_rdm_ep_settle(ep);
	/* its triggered operations still waiting go */
	rivet_trig_drop_ep(ep->domain, &ep->ep_fid);
	if (ep->sep)	/* no request reaches it any more */
		rivet_sep_ctx_closed(ep);
	if (ep->tx_cq)
		rivet_cq_del_source(ep->tx_cq, &ep->psrc);
	if (ep->rx_cq)
		rivet_cq_del_source(ep->rx_cq, &ep->psrc);
	/* no fi_av_remove callback may reach the connections any more */
	if (ep->av && ep->enabled)
		rivet_av_unbind_ep(ep->av, &ep->av_listener);
	/* a shared receive context's other endpoints go on meanwhile */
	if (ep->srx) {
		rivet_rdm_lock(ep);
		rivet_rdm_srx_detach(ep);
	}
	for (i = 0; i < ep->nconns; i++)
		if (ep->conns[i])
			rivet_conn_destroy(ep->conns[i]);
	/* registrations of operations that never completed (rendezvous
	 * sends, RMA without descriptors, receives whose FIN was not yet
	 * acknowledged) go before the PD can */
	for (i = 0; ep->ctrlbufs && i < RIVET_RDM_CTRL_BUDGET; i++)
		if (ep->ctrlbufs[i].rndv)
			rivet_rndv_drop(ep, ep->ctrlbufs[i].rndv);
	if (ep->srx) {
		rivet_rdm_unlock(ep);
		rivet_rdm_srx_unbind(ep);
	}
	for (i = 0; ep->tx_ops && i < ep->tx_size; i++)
		rivet_tx_op_release(ep, &ep->tx_ops[i]);
	if (ep->listen_id)
		rivet_verbs_cm_id_destroy(ep->listen_id);
	if (ep->srq)
		rivet_verbs_srq_destroy(ep->srq);
	if (ep->ibv_cq)
		rivet_verbs_cq_destroy(ep->ibv_cq);
	rivet_verbs_channel_destroy(ep->comp_channel);
	if (ep->slab_mr)
		rivet_verbs_mr_dereg(ep->slab_mr);
	rivet_verbs_cm_channel_destroy(ep->cm_channel);
	rivet_rdm_rxq_destruct(&ep->own_rxq);
	rivet_stx_release(ep->stx);
	rivet_rdm_ep_release_refs(ep);
	free(ep->slab);
	free(ep->rxbufs);
	free(ep->ctrlbufs);
	free(ep->tx_ops);
	free(ep->conns);
	free(ep->tx_conns);
	rivet_conn_slots_free(ep);
	pthread_mutex_destroy(&ep->lock);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static int rivet_rdm_ep_getopt(fid_t fid, int level, int optname,
			       void *optval, size_t *optlen)
{
	struct rivet_rdm_ep *ep = container_of(fid, struct rivet_rdm_ep,
					       ep_fid.fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t)) {
		if (optlen)
			*optlen = sizeof(size_t);
		return -FI_ETOOSMALL;
	}
	*(size_t *)optval = ep->min_multi_recv;
	*optlen = sizeof(size_t);
	return 0;
}

static int rivet_rdm_ep_setopt(fid_t fid, int level, int optname,
			       const void *optval, size_t optlen)
{
	struct rivet_rdm_ep *ep = container_of(fid, struct rivet_rdm_ep,
					       ep_fid.fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || optlen != sizeof(size_t))
		return -FI_EINVAL;
	ep->min_multi_recv = *(const size_t *)optval;
	return 0;
}

static ssize_t rivet_rdm_ep_cancel(fid_t fid, void *context)
{
	return rivet_rdm_cancel(container_of(fid, struct rivet_rdm_ep,
					     ep_fid.fid), context);
}

static ssize_t rivet_rdm_ep_rx_size_left(struct fid_ep *fid)
{
	struct rivet_rdm_ep *ep = to_rrdm(fid);

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	return ep->rxq->rx_size > ep->rxq->rx_ops_used ?
	       ep->rxq->rx_size - ep->rxq->rx_ops_used : 0;
}

static ssize_t rivet_rdm_ep_tx_size_left(struct fid_ep *fid)
{
	struct rivet_rdm_ep *ep = to_rrdm(fid);
	struct rivet_tx_op *op;
	ssize_t n = 0;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	rivet_rdm_lock(ep);
	LL_COUNT(ep->tx_free, op, n);
	rivet_rdm_unlock(ep);
	return n;
}

static int rivet_rdm_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct rivet_rdm_ep *ep = container_of(fid, struct rivet_rdm_ep,
					       ep_fid.fid);

	return rivet_addr_copy_name(&ep->name.sa, addr, addrlen);
}

static int rivet_rdm_ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;	/* the listener is bound at open */
}

static struct fi_ops g_rivet_rdm_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_rdm_ep_close,
	.bind = rivet_rdm_ep_bind,
	.control = rivet_rdm_ep_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_ep g_rivet_rdm_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = rivet_rdm_ep_cancel,
	.getopt = rivet_rdm_ep_getopt,
	.setopt = rivet_rdm_ep_setopt,
	.tx_ctx = rivet_no_tx_ctx,
	.rx_ctx = rivet_no_rx_ctx,
	.rx_size_left = rivet_rdm_ep_rx_size_left,
	.tx_size_left = rivet_rdm_ep_tx_size_left,
};

static struct fi_ops_cm g_rivet_rdm_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = rivet_rdm_ep_setname,
	.getname = rivet_rdm_ep_getname,
	.getpeer = rivet_no_getpeer,
	.connect = rivet_no_connect,
	.listen = rivet_no_listen,
	.accept = rivet_no_accept,
	.reject = rivet_no_reject,
	.shutdown = rivet_no_shutdown,
	.join = rivet_no_join,
};

/* The listener is made at open: the endpoint's name exists at once. */
int rivet_rdm_listen(struct rivet_domain *dom, const struct fi_info *info,
		     int tos, struct rdma_event_channel **channel_p,
		     struct rdma_cm_id **id_p, union rivet_sockaddr *name)
{
	const struct rivet_dev *dev = dom->dev;
	union rivet_sockaddr src;
	int ret;

	ret = rivet_verbs_cm_channel_create(channel_p);
	if (!ret)
		ret = rivet_wait_nonblock((*channel_p)->fd);
	if (ret)
		return ret;
	memset(&src, 0, sizeof(src));
	if (info->src_addr && rivet_addr_len(info->src_addr))
		memcpy(&src, info->src_addr, rivet_addr_len(info->src_addr));
	else
		memcpy(&src, &dev->addrs[0].addr,
		       rivet_addr_len(&dev->addrs[0].addr.sa));
	return rivet_verbs_cm_listen(*channel_p, &src.sa, tos,
				     RIVET_RDM_BACKLOG, dev->ctx, id_p, name);
}

/* Not 0 (an older peer's), unlikely to repeat across restarts. */
static uint32_t rivet_rdm_incarnation(void)
{
	uint32_t v = 0;

	while (!v)
		if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
			v = (uint32_t)rivet_now_ns() ^ ((uint32_t)getpid() << 16);
	return v;
}

static void rivet_rdm_ep_construct(struct rivet_rdm_ep *ep,
				   struct rivet_domain *dom,
				   const struct fi_info *info)
{
	const struct rivet_dev *dev = dom->dev;
	size_t room;

	ep->domain = dom;
	ep->incarnation = rivet_rdm_incarnation();
	pthread_mutex_init(&ep->lock, NULL);
	ep->lockp = &ep->lock;
	ep->locking = dom->threading != FI_THREAD_DOMAIN ||
		      (info->domain_attr &&
		       info->domain_attr->data_progress == FI_PROGRESS_AUTO);
	ep->caps = info->caps;
	ep->rma_event = (info->caps |
			 (info->rx_attr ? info->rx_attr->caps : 0)) &
			FI_RMA_EVENT;
	ep->tx_size = info->tx_attr && info->tx_attr->size ?
		      info->tx_attr->size : g_rivet_params.tx_size;
	ep->rx_size = info->rx_attr && info->rx_attr->size ?
		      info->rx_attr->size : g_rivet_params.rx_size;
	/* the receive side's caps (a scalable endpoint's receive context
	 * narrows them), else the endpoint's */
	rivet_rdm_rxq_construct(&ep->own_rxq, ep->rx_size,
				info->rx_attr && info->rx_attr->caps ?
				info->rx_attr->caps : info->caps,
				dom->fabric->api_version);
	ep->rxq = &ep->own_rxq;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->eager_size = g_rivet_params.eager_size;
	ep->max_msg_size = info->ep_attr && info->ep_attr->max_msg_size ?
			   info->ep_attr->max_msg_size : (1ULL << 30);
	ep->max_inline = dev->max_inline;
	/* header and payload inline, the payload at most the inject size */
	ep->inj_lim = ep->max_inline < sizeof(struct rivet_wire_hdr) ? 0 :
		      RIVET_MIN((size_t)RIVET_RDM_INJECT_SIZE,
				ep->max_inline -
				sizeof(struct rivet_wire_hdr)) + 1;
	/* the short path's injects take send queue slots of their own */
	room = (size_t)dev->attr.max_qp_wr;
	room = room > ep->tx_size + RIVET_RDM_CTRL_BUDGET ?
	       room - ep->tx_size - RIVET_RDM_CTRL_BUDGET : 0;
	ep->inj_max = (unsigned int)RIVET_MIN(room, RIVET_RDM_INJ_MAX);
	/* a signaled one among any inj_max in a row: inj_out always comes
	 * down again */
	ep->inj_signal = RIVET_MAX(1U, RIVET_MIN(ep->inj_max,
						 RIVET_RDM_INJ_SIGNAL));
	ep->rdma_seg = rivet_rdma_seg_default(g_rivet_params.rdma_seg,
					      dev->attr.vendor_id,
					      rivet_ud_mtu_bytes(
						dev->port_attr.active_mtu));
	ep->confirm = rivet_confirm_default(g_rivet_params.confirm,
					    dev->attr.vendor_id,
					    ep->rdma_seg != SIZE_MAX);
	ep->zero_read_key0 = dev->attr.vendor_id == RIVET_VENDOR_RXE;
	ep->min_multi_recv = 64;
	ep->slot_size = (sizeof(struct rivet_wire_hdr) +
			 RIVET_MAX(ep->eager_size,
				   sizeof(struct rivet_wire_atomic) +
				   RIVET_ATOMIC_MAX_BYTES) + 63) & ~63UL;
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.ops = &g_rivet_rdm_ep_fi_ops;
	ep->ep_fid.ops = &g_rivet_rdm_ep_ops;
	ep->ep_fid.cm = &g_rivet_rdm_cm_ops;
	ep->ep_fid.msg = &g_rivet_rdm_msg_ops;
	ep->ep_fid.tagged = &g_rivet_rdm_tagged_ops;
	ep->ep_fid.rma = &g_rivet_rdm_rma_ops;
	ep->ep_fid.atomic = &g_rivet_rdm_atomic_ops;
	ep->ep_fid.collective = &g_rivet_no_collective_ops;
}

int rivet_rdm_ep_alloc(struct rivet_domain *dom, struct fi_info *info,
			      void *context, struct rivet_rdm_ep **ep_p)
{
	struct rivet_rdm_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	rivet_rdm_ep_construct(ep, dom, info);
	ep->psrc = (struct rivet_progress_src) {
		.progress = rivet_rdm_ep_progress,
		.progress_cm = rivet_rdm_ep_progress_cm,
		.read = rivet_rdm_ep_read,
	};
	ep->av_listener.removed = rivet_rdm_ep_addr_removed;
	if (rivet_tclass_tos(rivet_info_tclass(info), &ep->tos)) {
		fi_freeinfo(ep->info);
		free(ep);
		return -FI_EINVAL;
	}
	/* an RMA event message goes inline, behind the RDMA work request */
	if (ep->rma_event && ep->max_inline < sizeof(struct rivet_wire_hdr) +
					      sizeof(struct rivet_wire_rma_event)) {
		fi_freeinfo(ep->info);
		free(ep);
		return -FI_EOPNOTSUPP;
	}
	ep->ep_fid.fid.context = context;
	atomic_fetch_add(&dom->refcnt, 1);
	*ep_p = ep;
	return 0;
}

int rivet_rdm_ep_open(struct fid_domain *domain, struct fi_info *info,
		      struct fid_ep **ep_p, void *context)
{
	struct rivet_rdm_ep *ep;
	int ret;

	ret = rivet_rdm_ep_alloc(to_rdomain(domain), info, context, &ep);
	if (ret)
		return ret;
	ret = rivet_rdm_listen(ep->domain, info, ep->tos, &ep->cm_channel,
			       &ep->listen_id, &ep->name);
	if (ret) {
		rivet_rdm_ep_close(&ep->ep_fid.fid);
		return ret;
	}
	*ep_p = &ep->ep_fid;
	return 0;
}

/* fi_av_remove: connections to the address are torn down, operations
 * queued on them fail, and later sends to the index reconnect. */
void rivet_rdm_ep_addr_removed(struct rivet_av_listener *l, fi_addr_t addr)
{
	struct rivet_rdm_ep *ep = container_of(l, struct rivet_rdm_ep,
					       av_listener);
	struct rivet_conn *conn;
	uint16_t rx_idx;
	size_t i;

	rivet_rdm_lock(ep);
	for (i = 0; i < ep->nconns; i++) {
		conn = ep->conns[i];
		/* to any of the peer's receive contexts (fi_rx_addr) */
		if (rivet_conn_base(ep, conn->addr, &rx_idx) != addr ||
		    conn->state == RIVET_CONN_CLOSED)
			continue;
		if (conn->id)
			rivet_verbs_cm_disconnect(conn->id);
		rivet_conn_fail(conn, FI_ECONNABORTED);
		conn->addr = FI_ADDR_NOTAVAIL;
	}
	rivet_rdm_unlock(ep);
}
