/* SPDX-License-Identifier: MIT */
/*
 * DGRAM shared receive contexts: the SRQ holds the context's own slots
 * only (a GRH and an MTU each), all posted from the start, and the
 * application's receives wait in a FIFO.  A datagram is copied into the
 * oldest receive when its work completion is read; one that comes before
 * any receive stays in its slot, its work completion kept, until a
 * receive is posted, which takes it at once (reported on the CQ of the
 * endpoint whose QP took it, as it would have been).  So datagrams sent
 * to a context's endpoints before the application posted its receives
 * are not lost while the context has slots: peers that send right after
 * an out-of-band handshake (the upstream fi_shared_ctx -e dgram) rely on
 * that.  The cost is one copy of at most an MTU per datagram, on shared
 * contexts only; an endpoint's own receives stay zero-copy.
 *
 * Locks: srx->lock guards the FIFOs; the CQ path holds cq->lock before
 * srx->lock, so a receive that takes a waiting datagram reports it after
 * dropping srx->lock, and an endpoint's detach waits for such reports.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "rivet.h"
#include "rivet_dgram.h"

static uint8_t *rivet_srx_slot(const struct rivet_srx *srx, uint32_t slot)
{
	return srx->extra + (size_t)slot * srx->extra_stride;
}

/* Puts slot back on the SRQ; srx->lock held. */
void rivet_srx_dgram_repost(struct rivet_srx *srx, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rivet_srx_slot(srx, slot),
		.length = (uint32_t)(RIVET_UD_GRH_LEN + srx->mtu),
		.lkey = srx->extra_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = (uintptr_t)&srx->ctxs[slot], .sg_list = &sge,
		.num_sge = 1,
	}, *bad;
	int ret;

	srx->ctxs[slot] = (struct rivet_wr_ctx) {
		.srx = srx, .rx = true, .flags = FI_RECV | FI_MSG,
		.hdr_len = RIVET_UD_GRH_LEN, .grh = rivet_srx_slot(srx, slot),
	};
	ret = ibv_post_srq_recv(srx->srq, &wr, &bad);
	if (ret)	/* the context has one slot fewer from now on */
		RIVET_WARN_ERRNO(EP_DATA, "ibv_post_srq_recv", ret);
}

int rivet_srx_dgram_construct(struct rivet_srx *srx)
{
	const struct rivet_dev *dev = srx->domain->dev;
	size_t len;
	uint32_t i;
	int ret;

	srx->mtu = rivet_ud_mtu_bytes(dev->port_attr.active_mtu);
	srx->extra_stride = (RIVET_UD_GRH_LEN + srx->mtu + 63) &
			    ~(size_t)63;
	len = srx->extra_stride * srx->size;
	srx->recvs = calloc(srx->size, sizeof(*srx->recvs));
	srx->arrived = calloc(srx->size, sizeof(*srx->arrived));
	if (!srx->recvs || !srx->arrived ||
	    posix_memalign((void **)&srx->extra, 4096, len))
		return -FI_ENOMEM;
	ret = rivet_verbs_mr_reg(srx->domain->pd, srx->extra, len,
				 IBV_ACCESS_LOCAL_WRITE, &srx->extra_mr);
	if (ret)
		return ret;
	for (i = 0; i < srx->size; i++)
		rivet_srx_dgram_repost(srx, i);
	srx->nfree = 0;
	return 0;
}

void rivet_srx_dgram_destruct(struct rivet_srx *srx)
{
	if (srx->extra_mr)
		rivet_verbs_mr_dereg(srx->extra_mr);
	srx->extra_mr = NULL;
	free(srx->extra);
	free(srx->recvs);
	free(srx->arrived);
	srx->extra = NULL;
	srx->recvs = NULL;
	srx->arrived = NULL;
}

/* The datagram in slot into r's buffers; out is what the CQ reports
 * (rivet_cq_wc_fill takes the length, truncation and sender from it). */
static void rivet_srx_dgram_copy(struct rivet_srx *srx, struct rivet_ep *ep,
				 uint32_t slot, const struct ibv_wc *wc,
				 const struct rivet_srx_recv *r,
				 struct rivet_wr_ctx *out)
{
	rivet_dgram_copy_in(rivet_srx_slot(srx, slot), wc, false, r->iov,
			    r->count, r->len);
	*out = (struct rivet_wr_ctx) {
		.ep = ep, .context = r->context, .flags = FI_RECV | FI_MSG,
		.len = r->len, .buf = r->count ? r->iov[0].iov_base : NULL,
		.cntr = ep->recv_cntr, .imm_cntr = ep->rwrite_cntr, .rx = true,
		.hdr_len = RIVET_UD_GRH_LEN,
		.report = r->report || !ep->rx_selective,
		.source = rivet_dgram_source(ep),
		.grh = rivet_srx_slot(srx, slot), .srx = srx,
	};
}

/* A work completion on one of the context's slots, srx->lock held: true
 * with *out filled when a receive took it (its slot goes back after the
 * CQ reported it: rivet_srx_wc_done); false when it waits for a receive
 * or nobody is left to take it. */
bool rivet_srx_dgram_wc(struct rivet_srx *srx, struct rivet_ep *ep,
			const struct ibv_wc *wc, struct rivet_wr_ctx *out)
{
	uint32_t slot = (uint32_t)((const struct rivet_wr_ctx *)
				   (uintptr_t)wc->wr_id - srx->ctxs);
	struct rivet_srx_recv *r;
	struct rivet_srx_arrival *a;

	if (!ep || wc->status != IBV_WC_SUCCESS) {
		/* its endpoint closed, or the slot failed: dropped */
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			rivet_srx_dgram_repost(srx, slot);
		return false;
	}
	if (!srx->nrecvs) {	/* it waits in its slot */
		a = &srx->arrived[(srx->arr_head + srx->narrived++) %
				  srx->size];
		*a = (struct rivet_srx_arrival) {
			.wc = *wc, .ep = ep, .slot = slot };
		return false;
	}
	r = &srx->recvs[srx->recvs_head];
	srx->recvs_head = (srx->recvs_head + 1) % srx->size;
	srx->nrecvs--;
	rivet_srx_dgram_copy(srx, ep, slot, wc, r, out);
	return true;
}

/* A receive: it takes the oldest waiting datagram, or waits itself. */
ssize_t rivet_srx_dgram_recv(struct rivet_srx *srx, const struct iovec *iov,
			     size_t count, size_t len, void *context,
			     uint64_t flags)
{
	struct rivet_srx_recv *r, now;
	struct rivet_srx_arrival a;
	struct rivet_wr_ctx out;

	if (count > RIVET_IOV_LIMIT_MAX)
		return -FI_EINVAL;
	pthread_mutex_lock(&srx->lock);
	if (!srx->narrived) {
		if (srx->nrecvs == srx->size) {
			pthread_mutex_unlock(&srx->lock);
			return -FI_EAGAIN;
		}
		r = &srx->recvs[(srx->recvs_head + srx->nrecvs++) %
				srx->size];
		r->context = context;
		r->report = flags & FI_COMPLETION;
		r->count = count;
		r->len = len;
		if (count)
			memcpy(r->iov, iov, count * sizeof(*iov));
		pthread_mutex_unlock(&srx->lock);
		return 0;
	}
	a = srx->arrived[srx->arr_head];
	srx->arr_head = (srx->arr_head + 1) % srx->size;
	srx->narrived--;
	srx->delivering++;	/* a.ep stays until it is reported */
	pthread_mutex_unlock(&srx->lock);
	now = (struct rivet_srx_recv) {
		.context = context, .report = flags & FI_COMPLETION,
		.count = count, .len = len,
	};
	if (count)
		memcpy(now.iov, iov, count * sizeof(*iov));
	rivet_srx_dgram_copy(srx, a.ep, a.slot, &a.wc, &now, &out);
	rivet_cq_report_wc(a.ep->rx_cq, &a.wc, &out);
	pthread_mutex_lock(&srx->lock);
	rivet_srx_dgram_repost(srx, a.slot);
	srx->delivering--;
	pthread_mutex_unlock(&srx->lock);
	return 0;
}

/* ep leaves the context: the datagrams its QP took and nobody received
 * are dropped, their slots posted again, once no receive is reporting
 * one of them.  Returns with srx->lock held. */
void rivet_srx_dgram_detach(struct rivet_srx *srx, struct rivet_ep *ep)
{
	size_t i, n, kept = 0;
	struct rivet_srx_arrival *a, *to;

	for (;;) {
		pthread_mutex_lock(&srx->lock);
		if (srx->type != FI_EP_DGRAM || !srx->delivering)
			break;
		pthread_mutex_unlock(&srx->lock);
		sched_yield();
	}
	if (srx->type != FI_EP_DGRAM)
		return;
	n = srx->narrived;
	for (i = 0; i < n; i++) {
		a = &srx->arrived[(srx->arr_head + i) % srx->size];
		if (a->ep == ep) {
			rivet_srx_dgram_repost(srx, a->slot);
			continue;
		}
		to = &srx->arrived[(srx->arr_head + kept++) % srx->size];
		if (to != a)
			*to = *a;
	}
	srx->narrived = kept;
}
