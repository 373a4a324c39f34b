/* SPDX-License-Identifier: MIT */
/*
 * MSG endpoint lifecycle: open, bind (EQ, CQs, counters), enable (rdma_cm
 * id + RC QP + work-request rings + inject bounce buffers), options and
 * close.  Connection management is in rivet_msg_cm.c, data ops in rivet_msg.c
 * and rivet_msg_rma.c.
 */
#include <stdlib.h>

#include "rivet.h"

#define RIVET_CQ_BIND_FLAGS (FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)
#define RIVET_CNTR_BIND_FLAGS (FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
			       FI_REMOTE_READ | FI_REMOTE_WRITE)

static int rivet_ep_bind_cq(struct rivet_ep *ep, struct rivet_cq *cq,
			    uint64_t flags)
{
	if (!(flags & (FI_TRANSMIT | FI_RECV)) ||
	    (flags & ~RIVET_CQ_BIND_FLAGS))
		return -FI_EBADFLAGS;
	if (((flags & FI_TRANSMIT) && ep->tx_cq) ||
	    ((flags & FI_RECV) && ep->rx_cq))
		return -FI_EINVAL;
	if (cq->domain != ep->domain)
		return -FI_EINVAL;
	if (flags & FI_TRANSMIT) {
		ep->tx_cq = cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&cq->refcnt, 1);
		atomic_fetch_add(&cq->msg_eps, 1);
	}
	if (flags & FI_RECV) {
		ep->rx_cq = cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&cq->refcnt, 1);
		atomic_fetch_add(&cq->msg_eps, 1);
	}
	rivet_cq_fast_update(cq);
	return 0;
}

static int rivet_ep_bind_cntr(struct rivet_ep *ep, struct rivet_cntr *cntr,
			      uint64_t flags)
{
	struct rivet_cntr **slots[] = {
		&ep->send_cntr, &ep->recv_cntr, &ep->read_cntr,
		&ep->write_cntr, &ep->rread_cntr, &ep->rwrite_cntr,
	};
	const uint64_t bits[] = {
		FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ,
		FI_REMOTE_WRITE,
	};
	size_t i;

	if (!flags || (flags & ~RIVET_CNTR_BIND_FLAGS))
		return -FI_EBADFLAGS;
	for (i = 0; i < 6; i++)
		if ((flags & bits[i]) && *slots[i])
			return -FI_EINVAL;
	for (i = 0; i < 6; i++) {
		if (!(flags & bits[i]))
			continue;
		*slots[i] = cntr;
		atomic_fetch_add(&cntr->refcnt, 1);
	}
	return 0;
}

int rivet_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct rivet_ep *ep = container_of(fid, struct rivet_ep, ep_fid.fid);
	struct rivet_cntr *cntr;
	struct rivet_eq *eq;

	if (!bfid)
		return -FI_EINVAL;
	if (ep->state != RIVET_EP_IDLE)
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_EQ:
		eq = container_of(bfid, struct rivet_eq, eq_fid.fid);
		if (ep->eq || eq->fabric != ep->domain->fabric)
			return -FI_EINVAL;
		ep->eq = eq;
		rivet_eq_set_cm_handler(eq, rivet_cm_handle_event);
		atomic_fetch_add(&eq->refcnt, 1);
		return 0;
	case FI_CLASS_CQ:
		return rivet_ep_bind_cq(ep, container_of(bfid, struct rivet_cq,
							 cq_fid.fid), flags);
	case FI_CLASS_CNTR:
		cntr = container_of(bfid, struct rivet_cntr, cntr_fid.fid);
		if (cntr->domain != ep->domain)
			return -FI_EINVAL;	/* fi_endpoint(3) */
		return rivet_ep_bind_cntr(ep, cntr, flags);
	case FI_CLASS_SRX_CTX:
		/* the context's receives have no prefix */
		if (ep->prefix)
			return -FI_EOPNOTSUPP;
		return rivet_srx_bind(ep, bfid);
	case FI_CLASS_STX_CTX:
		return rivet_stx_bind(ep->domain, bfid, &ep->stx,
				      &ep->tx_size);
	default:
		return -FI_EINVAL;
	}
}

int rivet_ep_ring_construct(struct rivet_wr_ring *ring, size_t size)
{
	ring->ctxs = calloc(size, sizeof(*ring->ctxs));
	if (!ring->ctxs)
		return -FI_ENOMEM;
	ring->size = size;
	atomic_init(&ring->head, 0);
	atomic_init(&ring->tail, 0);
	return 0;
}

int rivet_ep_bounce_construct(struct rivet_ep *ep)
{
	size_t len = ep->tx_size * ep->inject_size;
	int ret;

	if (ep->inject_size <= ep->inline_size)
		return 0;
	if (posix_memalign((void **)&ep->bounce, 4096, len))
		return -FI_ENOMEM;
	ret = rivet_verbs_mr_reg(ep->domain->pd, ep->bounce, len,
				 IBV_ACCESS_LOCAL_WRITE, &ep->bounce_mr);
	if (ret) {
		free(ep->bounce);
		ep->bounce = NULL;
	}
	return ret;
}

/* Verbs atomics always write the old value somewhere: fi_atomic's (which
 * nobody asked for) lands in the slot's scratch word. */
static int rivet_ep_scratch_construct(struct rivet_ep *ep)
{
	size_t len = ep->tx_size * sizeof(*ep->scratch);
	int ret;

	if (posix_memalign((void **)&ep->scratch, 4096, len))
		return -FI_ENOMEM;
	ret = rivet_verbs_mr_reg(ep->domain->pd, ep->scratch, len,
				 IBV_ACCESS_LOCAL_WRITE, &ep->scratch_mr);
	if (ret) {
		free(ep->scratch);
		ep->scratch = NULL;
	}
	return ret;
}

/* Endpoints may leave a direction without a CQ: give it a hidden one so the
 * QP has somewhere to complete and counters still count. */
int rivet_ep_hidden_cqs(struct rivet_ep *ep)
{
	int ret;

	if (!ep->tx_cq) {
		ret = rivet_cq_open_hidden(ep->domain, ep->tx_size,
					   &ep->tx_cq);
		if (ret)
			return ret;
		ep->tx_selective = true;
	}
	if (!ep->rx_cq) {
		ret = rivet_cq_open_hidden(ep->domain, ep->rx_size,
					   &ep->rx_cq);
		if (ret)
			return ret;
		ep->rx_selective = true;
	}
	return 0;
}

void rivet_ep_attach_cntrs(struct rivet_ep *ep, bool attach)
{
	struct rivet_cntr *tx[] = { ep->send_cntr, ep->read_cntr,
				    ep->write_cntr };
	struct rivet_cntr *rx[] = { ep->recv_cntr, ep->rread_cntr,
				    ep->rwrite_cntr };
	size_t i;

	for (i = 0; i < 3; i++) {
		if (tx[i] && attach)
			rivet_cntr_attach_cq(tx[i], ep->tx_cq);
		else if (tx[i])
			rivet_cntr_detach_cq(tx[i], ep->tx_cq);
		if (rx[i] && attach)
			rivet_cntr_attach_cq(rx[i], ep->rx_cq);
		else if (rx[i])
			rivet_cntr_detach_cq(rx[i], ep->rx_cq);
	}
}

static int rivet_ep_create_id(struct rivet_ep *ep)
{
	const struct rivet_dev *dev = ep->domain->dev;
	int ret;

	if (ep->connreq) {
		ep->id = ep->connreq->id;
		ep->id->context = &ep->ep_fid.fid;
		return ep->id->channel == ep->eq->channel ? 0 :
		       rivet_verbs_cm_migrate(ep->id, ep->eq->channel);
	}
	ret = rivet_verbs_cm_id_create(ep->eq->channel, &ep->ep_fid.fid,
				       RDMA_PS_TCP, &ep->id);
	if (ret)
		return ret;
	rivet_id_set_tos(ep->id, ep->tos);
	rivet_id_set_ack_timeout(ep->id);
	if (!ep->src.sa.sa_family) {
		memcpy(&ep->src, &dev->addrs[0].addr,
		       rivet_addr_len(&dev->addrs[0].addr.sa));
	}
	ret = rivet_verbs_cm_bind(ep->id, &ep->src.sa);
	if (ret) {
		rivet_verbs_cm_id_destroy(ep->id);
		ep->id = NULL;
	}
	return ret;
}

static int rivet_ep_create_qp(struct rivet_ep *ep)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = ep->tx_cq->ibv_cq,
		.recv_cq = ep->rx_cq->ibv_cq,
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = ep->tx_size,
			.max_recv_wr = ep->rx_size,
			.max_send_sge = ep->iov_limit,
			.max_recv_sge = ep->iov_limit,
			.max_inline_data = ep->domain->dev->max_inline,
		},
	};
	int ret;

	if (ep->id->verbs != ep->domain->dev->ctx) {
		RIVET_WARN(EP_CTRL, "endpoint address is not on device %s\n",
			   ep->domain->dev->name);
		return -FI_EINVAL;
	}
	if (ep->srx) {		/* receives come from the context's SRQ */
		attr.srq = ep->srx->srq;
		attr.cap.max_recv_wr = attr.cap.max_recv_sge = 0;
	}
	ret = rivet_verbs_cm_qp_create_plain(ep->id, ep->domain->pd, &attr);
	if (ret)
		return ret;
	ep->qp = ep->id->qp;
	ep->inline_size = attr.cap.max_inline_data;
	RIVET_DBG(EP_CTRL, "qp 0x%x created\n", ep->qp->qp_num);
	return ep->srx ? rivet_srx_attach(ep) : 0;
}

int rivet_ep_enable(struct rivet_ep *ep)
{
	int ret;

	if (ep->state != RIVET_EP_IDLE)
		return 0;
	if (!ep->eq)
		return -FI_ENOEQ;
	ret = rivet_ep_hidden_cqs(ep);
	if (ret)
		return ret;
	ret = rivet_ep_create_id(ep);
	if (ret)
		return ret;
	ret = rivet_ep_create_qp(ep);
	if (ret)
		return ret;
	ret = rivet_ep_ring_construct(&ep->tx_ring, ep->tx_size);
	if (!ret)
		ret = rivet_ep_ring_construct(&ep->rx_ring, ep->rx_size);
	if (!ret)
		ret = rivet_ep_bounce_construct(ep);
	if (!ret)
		ret = rivet_ep_scratch_construct(ep);
	if (ret)
		return ret;
	rivet_ep_attach_cntrs(ep, true);
	ep->state = RIVET_EP_ENABLED;
	return 0;
}

int rivet_ep_control(struct fid *fid, int command, void *arg)
{
	struct rivet_ep *ep = container_of(fid, struct rivet_ep, ep_fid.fid);
	uint64_t *flags = arg;

	switch (command) {
	case FI_ENABLE:
		return rivet_ep_enable(ep);
	case FI_GETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		if ((*flags & FI_TRANSMIT) && (*flags & FI_RECV))
			return -FI_EINVAL;
		*flags = (*flags & FI_RECV) ? ep->rx_op_flags :
					      ep->tx_op_flags;
		return 0;
	case FI_SETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		if (*flags & FI_RECV)
			ep->rx_op_flags = *flags & ~FI_RECV;
		else
			ep->tx_op_flags = *flags & ~FI_TRANSMIT;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static void rivet_ep_release_refs(struct rivet_ep *ep)
{
	struct rivet_cntr *cntrs[] = {
		ep->send_cntr, ep->recv_cntr, ep->read_cntr,
		ep->write_cntr, ep->rread_cntr, ep->rwrite_cntr,
	};
	size_t i;

	for (i = 0; i < 6; i++)
		if (cntrs[i])
			atomic_fetch_sub(&cntrs[i]->refcnt, 1);
	if (ep->eq)
		atomic_fetch_sub(&ep->eq->refcnt, 1);
	if (ep->tx_cq && ep->tx_cq->hidden)
		rivet_cq_close_hidden(ep->tx_cq);
	else if (ep->tx_cq)
		rivet_cq_unbind_msg(ep->tx_cq);
	if (ep->rx_cq && ep->rx_cq->hidden)
		rivet_cq_close_hidden(ep->rx_cq);
	else if (ep->rx_cq)
		rivet_cq_unbind_msg(ep->rx_cq);
	atomic_fetch_sub(&ep->domain->refcnt, 1);
}

static bool rivet_ep_rings_empty(struct rivet_ep *ep)
{
	return rivet_wr_ring_left(&ep->tx_ring) == ep->tx_ring.size &&
	       rivet_wr_ring_left(&ep->rx_ring) == ep->rx_ring.size;
}

/*
 * Moves the QP to the error state so that every posted work request
 * flushes, reaps those completions (bounded), then destroys the QP and
 * drops what the CQs still hold for this endpoint.  Credits of requests
 * that never completed go back to their CQ.
 */
void rivet_ep_destroy_qp(struct rivet_ep *ep)
{
	int i;

	if (!rivet_verbs_qp_to_error(ep->qp))
		for (i = 0; i < 1000 && !rivet_ep_rings_empty(ep); i++) {
			rivet_cq_progress(ep->tx_cq);
			rivet_cq_progress(ep->rx_cq);
		}
	if (ep->id)
		rivet_verbs_cm_qp_destroy(ep->id);
	else
		rivet_verbs_qp_destroy(ep->qp);	/* DGRAM: a QP of its own */
	ep->qp = NULL;
	rivet_cq_purge_ep(ep->tx_cq, ep);
	if (ep->rx_cq != ep->tx_cq)
		rivet_cq_purge_ep(ep->rx_cq, ep);
	while (rivet_wr_ring_left(&ep->tx_ring) < ep->tx_ring.size) {
		rivet_cq_return_credit(ep->tx_cq);
		rivet_wr_ring_retire(&ep->tx_ring);
	}
	while (rivet_wr_ring_left(&ep->rx_ring) < ep->rx_ring.size) {
		rivet_cq_return_credit(ep->rx_cq);
		rivet_wr_ring_retire(&ep->rx_ring);
	}
}

int rivet_ep_close(struct fid *fid)
{
	struct rivet_ep *ep = container_of(fid, struct rivet_ep, ep_fid.fid);

	rivet_srx_release(ep);	/* before the QP, whose receives it drops */
	rivet_stx_release(ep->stx);
	if (ep->qp)
		rivet_ep_destroy_qp(ep);
	rivet_mrecv_close(ep);	/* after its completions are reaped */
	if (ep->state != RIVET_EP_IDLE)
		rivet_ep_attach_cntrs(ep, false);
	if (ep->id)
		rivet_verbs_cm_id_destroy(ep->id);
	else if (ep->connreq)
		rivet_verbs_cm_id_destroy(ep->connreq->id);
	free(ep->connreq);
	if (ep->bounce_mr)
		rivet_verbs_mr_dereg(ep->bounce_mr);
	free(ep->bounce);
	if (ep->scratch_mr)
		rivet_verbs_mr_dereg(ep->scratch_mr);
	free(ep->scratch);
	free(ep->tx_ring.ctxs);
	free(ep->rx_ring.ctxs);
	rivet_ep_release_refs(ep);
	rivet_lock_destruct(&ep->lock);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static ssize_t rivet_ep_cancel(fid_t fid, void *context)
{
	return -FI_ENOSYS;	/* verbs cannot take back a posted WR */
}

static int rivet_ep_getopt(fid_t fid, int level, int optname, void *optval,
			   size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_MIN_MULTI_RECV)
		return rivet_mrecv_getopt(to_rep((struct fid_ep *)fid), optval,
					  optlen);
	if (optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t)) {
		if (optlen)
			*optlen = sizeof(size_t);
		return -FI_ETOOSMALL;
	}
	*(size_t *)optval = RIVET_CM_DATA_SIZE;
	*optlen = sizeof(size_t);
	return 0;
}

static int rivet_ep_setopt(fid_t fid, int level, int optname,
			   const void *optval, size_t optlen)
{
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	return rivet_mrecv_setopt(to_rep((struct fid_ep *)fid), optval,
				  optlen);
}

static ssize_t rivet_ep_rx_size_left(struct fid_ep *fid)
{
	struct rivet_ep *ep = to_rep(fid);

	if (ep->state == RIVET_EP_IDLE)
		return -FI_EOPBADSTATE;
	return rivet_wr_ring_left(&ep->rx_ring);
}

static ssize_t rivet_ep_tx_size_left(struct fid_ep *fid)
{
	struct rivet_ep *ep = to_rep(fid);

	if (ep->state == RIVET_EP_IDLE)
		return -FI_EOPBADSTATE;
	return rivet_wr_ring_left(&ep->tx_ring);
}

static struct fi_ops g_rivet_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_ep_close,
	.bind = rivet_ep_bind,
	.control = rivet_ep_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

struct fi_ops_ep g_rivet_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = rivet_ep_cancel,
	.getopt = rivet_ep_getopt,
	.setopt = rivet_ep_setopt,
	.tx_ctx = rivet_no_tx_ctx,
	.rx_ctx = rivet_no_rx_ctx,
	.rx_size_left = rivet_ep_rx_size_left,
	.tx_size_left = rivet_ep_tx_size_left,
};

int rivet_ep_construct(struct rivet_ep *ep, struct rivet_domain *dom,
		       const struct fi_info *info)
{
	const struct rivet_dev *dev = dom->dev;

	ep->info = fi_dupinfo(info);
	if (!ep->info)
		return -FI_ENOMEM;
	ep->domain = dom;
	ep->tx_size = info->tx_attr && info->tx_attr->size ?
		      info->tx_attr->size : g_rivet_params.tx_size;
	ep->rx_size = info->rx_attr && info->rx_attr->size ?
		      info->rx_attr->size : g_rivet_params.rx_size;
	ep->iov_limit = RIVET_MIN((size_t)dev->attr.max_sge,
				  RIVET_IOV_LIMIT_MAX);
	ep->inject_size = info->tx_attr ? info->tx_attr->inject_size :
			  dev->max_inline;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	if (ep->tx_size > (size_t)dev->attr.max_qp_wr ||
	    ep->rx_size > (size_t)dev->attr.max_qp_wr)
		return -FI_EINVAL;
	if (rivet_tclass_tos(rivet_info_tclass(info), &ep->tos))
		return -FI_EINVAL;
	if (info->src_addr && rivet_addr_len(info->src_addr))
		memcpy(&ep->src, info->src_addr,
		       rivet_addr_len(info->src_addr));
	if (info->dest_addr && rivet_addr_len(info->dest_addr))
		memcpy(&ep->dst, info->dest_addr,
		       rivet_addr_len(info->dest_addr));
	rivet_lock_construct(&ep->lock, dom->threading == FI_THREAD_SAFE ||
					dom->threading == FI_THREAD_UNSPEC);
	return 0;
}

int rivet_msg_ep_open(struct fid_domain *domain, struct fi_info *info,
		      struct fid_ep **ep_p, void *context)
{
	struct rivet_domain *dom = to_rdomain(domain);
	struct rivet_ep *ep;
	int ret;

	if (info->handle && info->handle->fclass != FI_CLASS_CONNREQ &&
	    info->handle->fclass != FI_CLASS_PEP)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ret = rivet_ep_construct(ep, dom, info);
	if (ret) {
		fi_freeinfo(ep->info);
		free(ep);
		return ret;
	}
	if (info->caps & FI_MULTI_RECV) {
		ret = rivet_mrecv_open(ep);
		if (ret) {
			fi_freeinfo(ep->info);
			free(ep);
			return ret;
		}
	}
	if (info->handle && info->handle->fclass == FI_CLASS_PEP) {
		ret = rivet_pep_surrender(info->handle, &ep->src);
		if (ret) {
			rivet_mrecv_close(ep);
			fi_freeinfo(ep->info);
			free(ep);
			return ret;
		}
	} else if (info->handle) {
		ep->connreq = container_of(info->handle, struct rivet_connreq,
					   handle);
		info->handle = NULL;	/* the endpoint owns it now */
	}
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &g_rivet_ep_fi_ops;
	ep->ep_fid.ops = &g_rivet_ep_ops;
	ep->ep_fid.cm = &g_rivet_ep_cm_ops;
	ep->ep_fid.msg = &g_rivet_msg_ops;
	ep->ep_fid.rma = &g_rivet_rma_ops;
	ep->ep_fid.atomic = &g_rivet_msg_atomic_ops;
	ep->ep_fid.tagged = &g_rivet_no_tagged_ops;
	ep->ep_fid.collective = &g_rivet_no_collective_ops;
	atomic_fetch_add(&dom->refcnt, 1);
	*ep_p = &ep->ep_fid;
	return 0;
}
