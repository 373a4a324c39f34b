/* SPDX-License-Identifier: MIT */
/*
 * Shared receive contexts of MSG and DGRAM endpoints (fi_endpoint(3)
 * SHARED CONTEXTS; what every context shares is in ep/rivet_ep_ctx.c):
 * a verbs shared receive queue.  The endpoints' QPs are created on it, a receive posted
 * to an MSG context is one ibv_post_srq_recv, and its work completion comes
 * on the receive CQ of the endpoint whose QP took it: rivet_srx_wc finds
 * that endpoint by the QP number and reports through its CQ and counters (the CQ reaches it through the
 * context's wc_ops).
 * A DGRAM context's SRQ holds slots of its own instead, and datagrams are
 * copied into the application's receives (rivet_dgram_srx.c): one that
 * comes before any receive is kept, not dropped.
 * The SRQ's entries are paid for once per CQ: a CQ that the first of the
 * context's endpoints brings grows by the context's size (ibv_resize_cq).
 * On RDM endpoints the context shares software matching instead
 * (rivet_rdm_srx.c).  The kind follows the domain's endpoint type.
 */
#include <stdlib.h>
#include <string.h>

#include "rivet.h"
#include "rivet_dgram.h"
#include "rivet_iov.h"

/* ---- receive contexts over an SRQ (MSG, DGRAM) ---- */

static struct rivet_srx *to_srx(struct fid *fid)
{
	return container_of(fid, struct rivet_srx, ep_fid.fid);
}

static int rivet_srx_close(struct fid *fid)
{
	struct rivet_srx *srx = to_srx(fid);
	int ret;

	if (atomic_load(&srx->refcnt))
		return -FI_EBUSY;
	/* its receives never complete: nobody takes them any more */
	ret = rivet_verbs_srq_destroy(srx->srq);
	if (ret)
		return ret;
	rivet_srx_dgram_destruct(srx);
	free(srx->ctxs);
	free(srx->free_idx);
	free(srx->members);
	free(srx->cqs);
	pthread_mutex_destroy(&srx->lock);
	atomic_fetch_sub(&srx->domain->refcnt, 1);
	free(srx);
	return 0;
}

static int rivet_srx_control(struct fid *fid, int command, void *arg)
{
	return rivet_srx_control_flags(&to_srx(fid)->rx_op_flags, command,
				       arg);
}

ssize_t rivet_srx_post_recv(struct rivet_srx *srx, const struct iovec *iov,
			    void **desc, size_t count, void *context,
			    uint64_t flags)
{
	struct ibv_sge sge[RIVET_IOV_LIMIT_MAX + 2];
	struct iovec tmp[RIVET_IOV_LIMIT_MAX];
	struct ibv_recv_wr wr = { 0 }, *bad;
	bool ud = srx->type == FI_EP_DGRAM;
	struct rivet_wr_ctx *ctx;
	size_t len, slot;
	int ret, num;

	if (flags & FI_MULTI_RECV)	/* not on shared contexts */
		return -FI_EINVAL;
	iov = rivet_recv_iov(iov, desc, count, tmp, RIVET_IOV_LIMIT_MAX);
	if (rivet_iov_check(iov, count, srx->iov_limit, &len)) {
		RIVET_DBG(EP_DATA, "srx receive: %zu iovs (limit %zu)\n",
			  count, srx->iov_limit);
		return -FI_EINVAL;
	}
	/* DGRAM: only the descriptors' check (nothing is posted) */
	ret = rivet_recv_sges(iov, desc, count, sge, &num);
	if (ret) {
		RIVET_DBG(EP_DATA, "srx receive: a buffer without desc\n");
		return ret;
	}
	if (ud)		/* copied into from the context's own slots */
		return rivet_srx_dgram_recv(srx, iov, count, len, context,
					    flags);
	pthread_mutex_lock(&srx->lock);
	if (!srx->nfree) {
		pthread_mutex_unlock(&srx->lock);
		return -FI_EAGAIN;
	}
	slot = srx->free_idx[--srx->nfree];
	ctx = &srx->ctxs[slot];
	*ctx = (struct rivet_wr_ctx) {
		.srx = srx, .context = context, .rx = true,
		.flags = FI_RECV | FI_MSG, .buf = count ? iov[0].iov_base : NULL,
		.len = len, .report = flags & FI_COMPLETION,
	};
	wr.wr_id = (uintptr_t)ctx;
	wr.sg_list = sge;
	wr.num_sge = num;
	ret = ibv_post_srq_recv(srx->srq, &wr, &bad);
	if (ret)
		srx->free_idx[srx->nfree++] = (uint32_t)slot;
	pthread_mutex_unlock(&srx->lock);
	if (ret) {
		RIVET_DBG(EP_DATA, "ibv_post_srq_recv: %s (%d sges)\n",
			  strerror(ret), num);
		return ret == ENOMEM ? -FI_EAGAIN : rivet_errno_to_fi(ret);
	}
	return 0;
}

/* Under the CQ's lock: which endpoint took the receive (its reporting
 * filled into *out); false when that endpoint has closed.  The slot is
 * the context's again either way. */
/* The endpoint whose QP took a receive of the context (srx->wc_ops). */
static bool rivet_srx_wc(const struct rivet_wr_ctx *ctx,
			 const struct ibv_wc *wc, struct rivet_wr_ctx *out)
{
	struct rivet_srx *srx = ctx->srx;
	struct rivet_ep *ep = NULL;
	size_t i;

	*out = *ctx;
	pthread_mutex_lock(&srx->lock);
	for (i = 0; i < srx->nmembers; i++) {
		if (srx->members[i].qp_num == wc->qp_num) {
			ep = srx->members[i].ep;
			break;
		}
	}
	if (srx->type == FI_EP_DGRAM) {	/* the context's own slot */
		bool report = rivet_srx_dgram_wc(srx, ep, wc, out);

		pthread_mutex_unlock(&srx->lock);
		return report;
	}
	srx->free_idx[srx->nfree++] = (uint32_t)(ctx - srx->ctxs);
	pthread_mutex_unlock(&srx->lock);
	if (!ep)
		return false;
	out->ep = ep;
	out->cntr = ep->recv_cntr;
	out->imm_cntr = ep->rwrite_cntr;
	out->report = ctx->report || !ep->rx_selective;
	out->source = ep->ud ? rivet_dgram_source(ep) : NULL;
	return true;
}

/* After the CQ reported a receive of a DGRAM context: its slot again. */
static void rivet_srx_wc_done(const struct rivet_wr_ctx *ctx)
{
	struct rivet_srx *srx = ctx->srx;

	if (srx->type != FI_EP_DGRAM)	/* back in rivet_srx_wc */
		return;
	pthread_mutex_lock(&srx->lock);
	rivet_srx_dgram_repost(srx, (uint32_t)((ctx->grh - srx->extra) /
					       srx->extra_stride));
	pthread_mutex_unlock(&srx->lock);
}

static const struct rivet_srx_wc_ops g_rivet_srx_wc_ops = {
	.route = rivet_srx_wc,
	.done = rivet_srx_wc_done,
};

static ssize_t rivet_srx_recvmsg(struct fid_ep *fid, const struct fi_msg *msg,
				 uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rivet_srx_post_recv(to_srx(&fid->fid), msg->msg_iov, msg->desc,
				   msg->iov_count, msg->context, flags);
}

static ssize_t rivet_srx_recvv(struct fid_ep *fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t src,
			       void *context)
{
	struct rivet_srx *srx = to_srx(&fid->fid);

	return rivet_srx_post_recv(srx, iov, desc, count, context,
				   srx->rx_op_flags);
}

static ssize_t rivet_srx_recv1(struct fid_ep *fid, void *buf, size_t len,
			       void *desc, fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rivet_srx_recvv(fid, &iov, &desc, 1, src, context);
}

static struct fi_ops_msg g_rivet_srx_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = rivet_srx_recv1,
	.recvv = rivet_srx_recvv,
	.recvmsg = rivet_srx_recvmsg,
	RIVET_NO_MSG_SENDS,
};

static ssize_t rivet_srx_cancel(fid_t fid, void *context)
{
	return -FI_ENOSYS;	/* verbs cannot take back a posted WR */
}

static ssize_t rivet_srx_rx_size_left(struct fid_ep *fid)
{
	struct rivet_srx *srx = to_srx(&fid->fid);
	ssize_t n;

	pthread_mutex_lock(&srx->lock);
	n = (ssize_t)(srx->type == FI_EP_DGRAM ? srx->size - srx->nrecvs :
			srx->nfree);
	pthread_mutex_unlock(&srx->lock);
	return n;
}

static struct fi_ops g_rivet_srx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_srx_close,
	.bind = rivet_no_bind,
	.control = rivet_srx_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_ep g_rivet_srx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = rivet_srx_cancel,
	.getopt = rivet_srx_getopt,
	.setopt = rivet_srx_setopt,
	.tx_ctx = rivet_no_tx_ctx,
	.rx_ctx = rivet_no_rx_ctx,
	.rx_size_left = rivet_srx_rx_size_left,
	.tx_size_left = rivet_srx_tx_size_left,
};

static int rivet_srx_construct(struct rivet_srx *srx, size_t size)
{
	const struct rivet_dev *dev = srx->domain->dev;
	size_t i;
	int ret;

	srx->size = RIVET_MIN(size, (size_t)dev->attr.max_srq_wr);
	srx->ctxs = calloc(srx->size, sizeof(*srx->ctxs));
	srx->free_idx = calloc(srx->size, sizeof(*srx->free_idx));
	if (!srx->ctxs || !srx->free_idx)
		return -FI_ENOMEM;
	for (i = 0; i < srx->size; i++)
		srx->free_idx[i] = (uint32_t)(srx->size - 1 - i);
	srx->nfree = srx->size;
	ret = rivet_verbs_srq_create(srx->domain->pd, (uint32_t)srx->size,
				     srx->type == FI_EP_DGRAM ? 1 :
				     (uint32_t)srx->iov_limit, &srx->srq);
	if (ret)
		return ret;
	return srx->type == FI_EP_DGRAM ? rivet_srx_dgram_construct(srx) : 0;
}

int rivet_srx_open(struct rivet_domain *dom, enum fi_ep_type type,
		   struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		   void *context)
{
	size_t max_sge = (size_t)dom->dev->attr.max_srq_sge;
	struct rivet_srx *srx;
	int ret;

	/* the attributes a domain's info gave (rx_attr) may ask for more
	 * SGEs than an SRQ takes: the context takes what the device allows,
	 * and a receive with more fails (-FI_EINVAL) */
	if (type == FI_EP_DGRAM)
		max_sge = max_sge > 2 ? max_sge - 2 : 0;
	srx = calloc(1, sizeof(*srx));
	if (!srx)
		return -FI_ENOMEM;
	srx->domain = dom;
	srx->wc_ops = &g_rivet_srx_wc_ops;
	srx->type = type;
	srx->iov_limit = RIVET_MIN(attr && attr->iov_limit ? attr->iov_limit :
				   4, max_sge);
	srx->rx_op_flags = attr ? attr->op_flags : 0;
	pthread_mutex_init(&srx->lock, NULL);
	atomic_init(&srx->refcnt, 0);
	srx->ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	srx->ep_fid.fid.context = context;
	srx->ep_fid.fid.ops = &g_rivet_srx_fi_ops;
	srx->ep_fid.ops = &g_rivet_srx_ep_ops;
	srx->ep_fid.cm = &g_rivet_no_cm_ops;
	srx->ep_fid.msg = &g_rivet_srx_msg_ops;
	srx->ep_fid.tagged = &g_rivet_no_tagged_ops;
	srx->ep_fid.rma = &g_rivet_no_rma_ops;
	srx->ep_fid.atomic = &g_rivet_no_atomic_ops;
	srx->ep_fid.collective = &g_rivet_no_collective_ops;
	atomic_fetch_add(&dom->refcnt, 1);
	ret = rivet_srx_construct(srx, attr && attr->size ? attr->size :
						   g_rivet_params.rx_size);
	if (ret) {
		if (srx->srq)
			rivet_verbs_srq_destroy(srx->srq);
		srx->srq = NULL;
		rivet_srx_dgram_destruct(srx);
		free(srx->ctxs);
		free(srx->free_idx);
		atomic_fetch_sub(&dom->refcnt, 1);
		free(srx);
		return ret;
	}
	*rx_ep = &srx->ep_fid;
	return 0;
}

/* ---- the endpoints of a receive context ---- */

int rivet_srx_bind(struct rivet_ep *ep, struct fid *bfid)
{
	struct rivet_srx *srx = to_srx(bfid);

	/* an RDM domain's context is another kind of object */
	if (bfid->ops != &g_rivet_srx_fi_ops || ep->srx ||
	    srx->domain != ep->domain ||
	    srx->type != (ep->ud ? FI_EP_DGRAM : FI_EP_MSG))
		return -FI_EINVAL;
	ep->srx = srx;
	atomic_fetch_add(&srx->refcnt, 1);
	return 0;
}

/* The QP exists (on the SRQ): its receives are reported by ep, and its CQ
 * has room for the context's. */
int rivet_srx_attach(struct rivet_ep *ep)
{
	struct rivet_srx *srx = ep->srx;
	void *p;
	size_t i;
	int ret = 0;

	pthread_mutex_lock(&srx->lock);
	if (srx->nmembers == srx->members_cap) {
		p = realloc(srx->members, (srx->members_cap * 2 + 4) *
					  sizeof(*srx->members));
		if (!p)
			goto nomem;
		srx->members = p;
		srx->members_cap = srx->members_cap * 2 + 4;
	}
	for (i = 0; i < srx->ncqs && srx->cqs[i].cq != ep->rx_cq; i++)
		;
	if (i == srx->ncqs) {
		if (srx->ncqs == srx->cqs_cap) {
			p = realloc(srx->cqs, (srx->cqs_cap * 2 + 4) *
					      sizeof(*srx->cqs));
			if (!p)
				goto nomem;
			srx->cqs = p;
			srx->cqs_cap = srx->cqs_cap * 2 + 4;
		}
		ret = rivet_cq_grow(ep->rx_cq, srx->size);
		if (ret)
			goto out;
		srx->cqs[srx->ncqs++] = (struct rivet_srx_cq) {
			.cq = ep->rx_cq };
	}
	srx->cqs[i].eps++;
	srx->members[srx->nmembers++] = (struct rivet_srx_member) {
		.ep = ep, .qp_num = ep->qp->qp_num };
out:
	pthread_mutex_unlock(&srx->lock);
	return ret;
nomem:
	pthread_mutex_unlock(&srx->lock);
	return -FI_ENOMEM;
}

/* Before ep's QP goes: what it took and has not reported yet is
 * dropped by rivet_srx_wc. */
void rivet_srx_detach(struct rivet_ep *ep)
{
	struct rivet_srx *srx = ep->srx;
	size_t i;

	rivet_srx_dgram_detach(srx, ep);	/* under srx->lock on return */
	for (i = 0; i < srx->nmembers; i++) {
		if (srx->members[i].ep != ep)
			continue;
		srx->members[i] = srx->members[--srx->nmembers];
		for (i = 0; i < srx->ncqs; i++) {
			if (srx->cqs[i].cq != ep->rx_cq)
				continue;
			/* the CQ may close now: it keeps its size */
			if (!--srx->cqs[i].eps)
				srx->cqs[i] = srx->cqs[--srx->ncqs];
			break;
		}
		break;
	}
	pthread_mutex_unlock(&srx->lock);
}

void rivet_srx_release(struct rivet_ep *ep)
{
	if (!ep->srx)
		return;
	rivet_srx_detach(ep);
	atomic_fetch_sub(&ep->srx->refcnt, 1);
	ep->srx = NULL;
}
