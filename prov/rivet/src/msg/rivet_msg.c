/* SPDX-License-Identifier: MIT */
/*
 * The MSG data path: every fi_send and fi_recv variant is a shim into
 * rivet_ep_post_send / rivet_ep_post_recv, which map one libfabric
 * operation onto one ibv_post_send / ibv_post_recv.
 */
#include "rivet.h"
#include "rivet_dgram.h"
#include "rivet_iov.h"

/* FI_INJECT beyond the inline limit: copy into this slot's bounce buffer */
static void rivet_send_bounce(struct rivet_ep *ep, size_t slot,
			      const struct iovec *iov, size_t count,
			      struct ibv_sge *sge)
{
	uint8_t *dst = ep->bounce + slot * ep->inject_size;
	size_t i, off = 0;

	for (i = 0; i < count; i++) {
		memcpy(dst + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	sge->addr = (uintptr_t)dst;
	sge->length = off;
	sge->lkey = ep->bounce_mr->lkey;
}

/* Builds the SGE list; decides inline vs bounce vs registered. */
static int rivet_send_sges(struct rivet_ep *ep,
			   const struct rivet_send_req *req, size_t slot,
			   size_t len, struct ibv_sge *sge, int *num_p,
			   unsigned int *flags_p)
{
	bool atomic = req->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
		      req->opcode == IBV_WR_ATOMIC_CMP_AND_SWP;
	bool inl = len <= ep->inline_size &&
		   req->opcode != IBV_WR_RDMA_READ && !atomic;
	size_t i;
	int n = 0;

	if (atomic && !req->count) {	/* fi_atomic: the scratch word */
		sge->addr = (uintptr_t)&ep->scratch[slot];
		sge->length = sizeof(ep->scratch[slot]);
		sge->lkey = ep->scratch_mr->lkey;
		*num_p = 1;
		return 0;
	}

	if ((req->flags & FI_INJECT) && !inl) {
		rivet_send_bounce(ep, slot, req->iov, req->count, sge);
		*num_p = 1;
		return 0;
	}
	for (i = 0; i < req->count; i++) {
		if (!req->iov[i].iov_len)
			continue;
		if (!inl && (!req->desc || !req->desc[i]))
			return -FI_EINVAL;	/* FI_MR_LOCAL: desc needed */
		sge[n].addr = (uintptr_t)req->iov[i].iov_base;
		sge[n].length = req->iov[i].iov_len;
		sge[n].lkey = inl ? 0 : rivet_mr_lkey(req->desc[i]);
		n++;
	}
	if (inl && n)
		*flags_p |= IBV_SEND_INLINE;
	*num_p = n;
	return 0;
}

static int rivet_send_check(struct rivet_ep *ep,
			    const struct rivet_send_req *req, size_t *len_p)
{
	size_t len;

	if (ep->state != RIVET_EP_CONNECTED &&
	    !(ep->ud && ep->state == RIVET_EP_ENABLED))
		return -FI_EOPBADSTATE;
	if (rivet_iov_check(req->iov, req->count, ep->iov_limit, &len))
		return -FI_EINVAL;
	*len_p = len;
	if (len > ep->info->ep_attr->max_msg_size)
		return -FI_EINVAL;
	if ((req->flags & FI_INJECT) && len > ep->inject_size)
		return -FI_EINVAL;
	return 0;
}

/* A full send queue or CQ: reap completions once before giving up. */
static bool rivet_send_reserve(struct rivet_ep *ep)
{
	if (!rivet_wr_ring_left(&ep->tx_ring))
		rivet_cq_progress(ep->tx_cq);
	if (!rivet_wr_ring_left(&ep->tx_ring))
		return false;
	if (rivet_cq_take_credit(ep->tx_cq))
		return true;
	rivet_cq_progress(ep->tx_cq);
	return rivet_cq_take_credit(ep->tx_cq);
}

static void rivet_send_ctx_fill(struct rivet_ep *ep, struct rivet_wr_ctx *ctx,
				const struct rivet_send_req *req, size_t len)
{
	ctx->ep = ep;
	ctx->ring = &ep->tx_ring;
	ctx->context = req->context;
	ctx->flags = req->comp_flags;
	ctx->len = len;
	ctx->buf = NULL;
	ctx->cntr = req->cntr;
	ctx->report = !req->silent &&
		      (!ep->tx_selective || (req->flags & FI_COMPLETION));
	ctx->rx = false;
	ctx->hook = req->hook;
}

ssize_t rivet_ep_post_send(struct rivet_ep *ep,
			   const struct rivet_send_req *req)
{
	struct ibv_sge sge[RIVET_IOV_LIMIT_MAX];
	struct ibv_send_wr wr = { 0 }, *bad;
	size_t len, tail;
	unsigned int flags = IBV_SEND_SIGNALED;
	int ret, num = 0;

	ret = rivet_send_check(ep, req, &len);
	if (ret)
		return ret;
	rivet_lock_acquire(&ep->lock);
	if (!rivet_send_reserve(ep)) {
		rivet_lock_release(&ep->lock);
		return -FI_EAGAIN;
	}
	tail = atomic_load_explicit(&ep->tx_ring.tail, memory_order_relaxed);
	ret = rivet_send_sges(ep, req, tail % ep->tx_ring.size, len, sge,
			      &num, &flags);
	if (ret)
		goto unreserve;
	rivet_send_ctx_fill(ep, &ep->tx_ring.ctxs[tail % ep->tx_ring.size],
			    req, len);
	wr.wr_id = (uintptr_t)&ep->tx_ring.ctxs[tail % ep->tx_ring.size];
	wr.sg_list = sge;
	wr.num_sge = num;
	wr.opcode = req->opcode;
	wr.send_flags = flags | ((req->flags & FI_FENCE) ? IBV_SEND_FENCE : 0);
	wr.imm_data = htonl((uint32_t)req->data);
	wr.wr.rdma.remote_addr = req->raddr;
	wr.wr.rdma.rkey = (uint32_t)req->rkey;
	if (req->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    req->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = req->raddr;
		wr.wr.atomic.rkey = (uint32_t)req->rkey;
		wr.wr.atomic.compare_add = req->compare_add;
		wr.wr.atomic.swap = req->swap;
	}
	if (req->ah) {		/* DGRAM: the destination's UD QP */
		wr.wr.ud.ah = req->ah;
		wr.wr.ud.remote_qpn = req->remote_qpn;
		wr.wr.ud.remote_qkey = req->remote_qkey;
	}
	ret = ibv_post_send(ep->qp, &wr, &bad);
	if (ret) {
		ret = ret == ENOMEM ? -FI_EAGAIN : rivet_errno_to_fi(ret);
		goto unreserve;
	}
	atomic_store_explicit(&ep->tx_ring.tail, tail + 1,
			      memory_order_release);
	rivet_lock_release(&ep->lock);
	return 0;
unreserve:
	rivet_cq_return_credit(ep->tx_cq);
	rivet_lock_release(&ep->lock);
	return ret;
}

static bool rivet_recv_reserve(struct rivet_ep *ep)
{
	if (!rivet_wr_ring_left(&ep->rx_ring))
		rivet_cq_progress(ep->rx_cq);
	if (!rivet_wr_ring_left(&ep->rx_ring))
		return false;
	if (rivet_cq_take_credit(ep->rx_cq))
		return true;
	rivet_cq_progress(ep->rx_cq);
	return rivet_cq_take_credit(ep->rx_cq);
}

int rivet_recv_sges(const struct iovec *iov, void **desc, size_t count,
			   struct ibv_sge *sge, int *num_p)
{
	size_t i;
	int n = 0;

	for (i = 0; i < count; i++) {
		if (!iov[i].iov_len)
			continue;
		if (!desc || !desc[i])
			return -FI_EINVAL;
		sge[n].addr = (uintptr_t)iov[i].iov_base;
		sge[n].length = iov[i].iov_len;
		sge[n].lkey = rivet_mr_lkey(desc[i]);
		n++;
	}
	*num_p = n;
	return 0;
}

ssize_t rivet_ep_post_recv_locked(struct rivet_ep *ep,
				  const struct iovec *iov, void **desc,
				  size_t count, size_t len, void *context,
				  uint64_t flags, struct rivet_wc_hook *hook)
{
	struct ibv_sge sge[RIVET_IOV_LIMIT_MAX + 2];
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct rivet_wr_ctx *ctx;
	size_t tail;
	int ret, num;

	/* a DGRAM receive's GRH slot goes first (with FI_MSG_PREFIX the
	 * GRH lands in the application's prefix) */
	ret = rivet_recv_sges(iov, desc, count,
			      sge + (ep->ud && !ep->prefix ? 1 : 0), &num);
	if (ret)
		return ret;
	if (!rivet_recv_reserve(ep))
		return -FI_EAGAIN;
	tail = atomic_load_explicit(&ep->rx_ring.tail, memory_order_relaxed);
	if (ep->ud)
		rivet_dgram_recv_sges(ep, tail % ep->rx_ring.size, len, sge,
				      (size_t)num, &num);
	ctx = &ep->rx_ring.ctxs[tail % ep->rx_ring.size];
	*ctx = (struct rivet_wr_ctx) {
		.ep = ep, .ring = &ep->rx_ring, .context = context, .rx = true,
		.imm_cntr = ep->rwrite_cntr,
		.flags = FI_RECV | FI_MSG, .buf = count ? iov[0].iov_base : NULL,
		.len = len, .cntr = ep->recv_cntr,
		.report = !ep->rx_selective || (flags & FI_COMPLETION),
		.hook = hook,
		.hdr_len = ep->ud && !ep->prefix ? RIVET_UD_GRH_LEN : 0,
		.source = ep->ud ? rivet_dgram_source(ep) : NULL,
		.grh = !ep->ud ? NULL : ep->prefix ? iov[0].iov_base :
		       ep->ud->rx_extra + (tail % ep->rx_ring.size) *
					ep->ud->extra_stride,
	};
	wr.wr_id = (uintptr_t)ctx;
	wr.sg_list = sge;
	wr.num_sge = num;
	ret = ibv_post_recv(ep->qp, &wr, &bad);
	if (ret) {
		rivet_cq_return_credit(ep->rx_cq);
		return ret == ENOMEM ? -FI_EAGAIN : rivet_errno_to_fi(ret);
	}
	atomic_store_explicit(&ep->rx_ring.tail, tail + 1,
			      memory_order_release);
	return 0;
}

ssize_t rivet_ep_post_recv(struct rivet_ep *ep, const struct iovec *iov,
			   void **desc, size_t count, void *context,
			   uint64_t flags)
{
	struct iovec tmp[RIVET_IOV_LIMIT_MAX];
	size_t len;
	ssize_t ret;

	if (ep->state == RIVET_EP_IDLE)
		return -FI_EOPBADSTATE;
	if (rivet_mrecv_takes(ep, flags))	/* behind a multi-receive */
		return rivet_mrecv_post(ep, iov, desc, count, context, flags);
	if (ep->srx)	/* its receives are the context's */
		return rivet_srx_post_recv(ep->srx, iov, desc, count, context,
					   flags);
	iov = rivet_recv_iov(iov, desc, count, tmp, RIVET_IOV_LIMIT_MAX);
	if (rivet_iov_check(iov, count, ep->iov_limit, &len) ||
	    (ep->prefix && (!count || iov[0].iov_len < ep->prefix)))
		return -FI_EINVAL;
	if (ep->ud && rivet_dgram_early_open(ep->ud)) {
		ret = rivet_dgram_early_recv(ep, iov, desc, count, len,
					     context, flags);
		if (ret != 1)	/* 1: the early slots all have theirs */
			return ret;
	}
	rivet_lock_acquire(&ep->lock);
	ret = rivet_ep_post_recv_locked(ep, iov, desc, count, len, context,
					flags, NULL);
	rivet_lock_release(&ep->lock);
	return ret;
}

/* ---- fi_ops_msg shims ---- */

static ssize_t rivet_msg_recvmsg(struct fid_ep *fid, const struct fi_msg *msg,
				 uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rivet_ep_post_recv(to_rep(fid), msg->msg_iov, msg->desc,
				  msg->iov_count, msg->context, flags);
}

static ssize_t rivet_msg_recvv(struct fid_ep *fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t src,
			       void *context)
{
	struct rivet_ep *ep = to_rep(fid);

	return rivet_ep_post_recv(ep, iov, desc, count, context,
				  ep->rx_op_flags);
}

static ssize_t rivet_msg_recv(struct fid_ep *fid, void *buf, size_t len,
			      void *desc, fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rivet_msg_recvv(fid, &iov, &desc, 1, src, context);
}

static ssize_t rivet_msg_send_common(struct rivet_ep *ep,
				     const struct iovec *iov, void **desc,
				     size_t count, void *context,
				     uint64_t data, uint64_t flags)
{
	struct rivet_send_req req = {
		.iov = iov, .desc = desc, .count = count, .context = context,
		.data = data, .flags = flags, .cntr = ep->send_cntr,
		.comp_flags = FI_SEND | FI_MSG,
		.opcode = (flags & FI_REMOTE_CQ_DATA) ? IBV_WR_SEND_WITH_IMM :
							IBV_WR_SEND,
	};

	return rivet_ep_post_send(ep, &req);
}

static ssize_t rivet_msg_sendmsg(struct fid_ep *fid, const struct fi_msg *msg,
				 uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rivet_msg_send_common(to_rep(fid), msg->msg_iov, msg->desc,
				     msg->iov_count, msg->context, msg->data,
				     flags);
}

static ssize_t rivet_msg_sendv(struct fid_ep *fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t dest,
			       void *context)
{
	struct rivet_ep *ep = to_rep(fid);

	return rivet_msg_send_common(ep, iov, desc, count, context, 0,
				     ep->tx_op_flags);
}

static ssize_t rivet_msg_send(struct fid_ep *fid, const void *buf, size_t len,
			      void *desc, fi_addr_t dest, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_msg_sendv(fid, &iov, &desc, 1, dest, context);
}

static ssize_t rivet_msg_senddata(struct fid_ep *fid, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t dest, void *context)
{
	struct rivet_ep *ep = to_rep(fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_msg_send_common(ep, &iov, &desc, 1, context, data,
				     ep->tx_op_flags | FI_REMOTE_CQ_DATA);
}

/* Injected sends complete silently (fi_msg(3)) but still count. */
static ssize_t rivet_msg_injectdata(struct fid_ep *fid, const void *buf,
				    size_t len, uint64_t data, fi_addr_t dest)
{
	struct rivet_ep *ep = to_rep(fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct rivet_send_req req = {
		.iov = &iov, .count = 1, .data = data, .flags = FI_INJECT,
		.cntr = ep->send_cntr, .comp_flags = FI_SEND | FI_MSG,
		.opcode = IBV_WR_SEND_WITH_IMM, .silent = true,
	};

	return rivet_ep_post_send(ep, &req);
}

static ssize_t rivet_msg_inject(struct fid_ep *fid, const void *buf,
				size_t len, fi_addr_t dest)
{
	struct rivet_ep *ep = to_rep(fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct rivet_send_req req = {
		.iov = &iov, .count = 1, .flags = FI_INJECT,
		.cntr = ep->send_cntr, .comp_flags = FI_SEND | FI_MSG,
		.opcode = IBV_WR_SEND, .silent = true,
	};

	return rivet_ep_post_send(ep, &req);
}

struct fi_ops_msg g_rivet_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = rivet_msg_recv,
	.recvv = rivet_msg_recvv,
	.recvmsg = rivet_msg_recvmsg,
	.send = rivet_msg_send,
	.sendv = rivet_msg_sendv,
	.sendmsg = rivet_msg_sendmsg,
	.inject = rivet_msg_inject,
	.senddata = rivet_msg_senddata,
	.injectdata = rivet_msg_injectdata,
};
