/* SPDX-License-Identifier: MIT */
/*
 * A DGRAM endpoint's first datagrams (see struct rivet_dgram_early): the
 * first FI_RIVET_DGRAM_EARLY_RECVS receive slots take datagrams from
 * fi_enable on, so that a datagram sent before the application posted
 * its receives is not dropped by the UD QP.  Datagram i (the QP fills its
 * receive queue in order) belongs to the application's receive i: the
 * later of the two copies it and reports it, as the QP would have
 * (length, truncation, sender, remote CQ data).  The copies (at most an
 * MTU each) are the price, for the first datagrams only.
 *
 * Locks: early->lock guards the slots' states; the CQ's hook holds
 * cq->lock outside it, and a receive that finds its datagram waiting
 * reports it after dropping early->lock.
 */
#include <stdlib.h>
#include <string.h>

#include "rivet.h"
#include "rivet_dgram.h"

static uint8_t *rivet_early_buf(const struct rivet_ep *ep, size_t i)
{
	return ep->ud->rx_extra + i * ep->ud->extra_stride;
}

/* The datagram of slot i into the receive r; out: what the CQ reports. */
static void rivet_early_copy(struct rivet_ep *ep, size_t i,
			     const struct ibv_wc *wc,
			     const struct rivet_srx_recv *r,
			     struct rivet_wr_ctx *out)
{
	rivet_dgram_copy_in(rivet_early_buf(ep, i), wc, ep->prefix, r->iov,
			    r->count, r->len);
	*out = (struct rivet_wr_ctx) {
		.ep = ep, .context = r->context, .flags = FI_RECV | FI_MSG,
		.len = r->len, .buf = r->count ? r->iov[0].iov_base : NULL,
		.cntr = ep->recv_cntr, .imm_cntr = ep->rwrite_cntr, .rx = true,
		.hdr_len = ep->prefix ? 0 : RIVET_UD_GRH_LEN,
		.report = r->report || !ep->rx_selective,
		.source = rivet_dgram_source(ep), .grh = rivet_early_buf(ep, i),
	};
}

/* Slot i's work completion (cq->lock held): reported now if its receive
 * waits, else kept for it.  The ring slot is retired by the CQ; it is not
 * posted again before every early slot has its receive, and then none
 * waits. */
static void rivet_early_wc(struct rivet_wc_hook *hook, struct rivet_cq *cq,
			   const struct rivet_wr_ctx *ctx,
			   const struct ibv_wc *wc)
{
	struct rivet_ep *ep = ctx->ep;
	struct rivet_dgram_early *e = container_of(hook,
						   struct rivet_dgram_early,
						   hook);
	size_t i = (size_t)(ctx - ep->rx_ring.ctxs);
	struct rivet_early_slot *s = &e->slots[i];
	struct rivet_wr_ctx out;
	bool report;

	rivet_lock_acquire(&e->lock);
	report = s->state == RIVET_EARLY_RECV;
	s->state = report ? RIVET_EARLY_DONE : RIVET_EARLY_DGRAM;
	if (!report)
		s->wc = *wc;
	rivet_lock_release(&e->lock);
	if (report) {
		rivet_early_copy(ep, i, wc, &s->recv, &out);
		rivet_cq_report_locked(cq, wc, &out);
	}
}

ssize_t rivet_dgram_early_recv(struct rivet_ep *ep, const struct iovec *iov,
			       void **desc, size_t count, size_t len,
			       void *context, uint64_t flags)
{
	struct rivet_dgram_early *e = ep->ud->early;
	struct rivet_early_slot *s;
	struct rivet_srx_recv r = {
		.context = context, .report = flags & FI_COMPLETION,
		.count = count, .len = len,
	};
	struct rivet_wr_ctx out;
	struct ibv_wc wc;
	size_t i;

	for (i = 0; i < count; i++)	/* FI_MR_LOCAL, as for the QP */
		if (iov[i].iov_len && (!desc || !desc[i]))
			return -FI_EINVAL;
	if (count)
		memcpy(r.iov, iov, count * sizeof(*iov));
	rivet_lock_acquire(&e->lock);
	if (!atomic_load_explicit(&e->left, memory_order_relaxed)) {
		rivet_lock_release(&e->lock);
		return 1;
	}
	i = e->count - atomic_fetch_sub_explicit(&e->left, 1,
						 memory_order_relaxed);
	s = &e->slots[i];
	if (s->state != RIVET_EARLY_DGRAM) {
		s->recv = r;
		s->state = RIVET_EARLY_RECV;
		rivet_lock_release(&e->lock);
		return 0;
	}
	s->state = RIVET_EARLY_DONE;
	wc = s->wc;
	rivet_lock_release(&e->lock);
	rivet_early_copy(ep, i, &wc, &r, &out);
	rivet_cq_report_wc(ep->rx_cq, &wc, &out);
	return 0;
}

int rivet_dgram_early_start(struct rivet_ep *ep)
{
	size_t n = RIVET_MIN(g_rivet_params.dgram_early_recvs, ep->rx_size);
	struct rivet_dgram_early *e;
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	struct rivet_wr_ctx *ctx;
	size_t i;

	if (ep->srx || !n)
		return 0;
	e = calloc(1, sizeof(*e) + n * sizeof(e->slots[0]));
	if (!e)
		return -FI_ENOMEM;
	e->hook.wc = rivet_early_wc;
	rivet_lock_construct(&e->lock, ep->lock.on);
	/* the ring is empty: slot i is ring slot i */
	for (i = 0; i < n && rivet_cq_take_credit(ep->rx_cq); i++) {
		ctx = &ep->rx_ring.ctxs[i];
		*ctx = (struct rivet_wr_ctx) {
			.ep = ep, .ring = &ep->rx_ring, .rx = true,
			.flags = FI_RECV | FI_MSG, .hook = &e->hook,
		};
		sge = (struct ibv_sge) {
			.addr = (uintptr_t)rivet_early_buf(ep, i),
			.length = (uint32_t)(RIVET_UD_GRH_LEN + ep->ud->mtu),
			.lkey = ep->ud->rx_extra_mr->lkey,
		};
		wr.wr_id = (uintptr_t)ctx;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(ep->qp, &wr, &bad)) {
			rivet_cq_return_credit(ep->rx_cq);
			break;
		}
		atomic_store_explicit(&ep->rx_ring.tail, i + 1,
				      memory_order_release);
	}
	e->count = i;
	atomic_init(&e->left, i);
	ep->ud->early = e;
	return 0;
}

void rivet_dgram_early_free(struct rivet_dgram *ud)
{
	if (!ud->early)
		return;
	rivet_lock_destruct(&ud->early->lock);
	free(ud->early);
	ud->early = NULL;
}
