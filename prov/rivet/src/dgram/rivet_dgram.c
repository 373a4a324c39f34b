/* SPDX-License-Identifier: MIT */
/*
 * The DGRAM data path: every fi_send and fi_recv variant is a shim into
 * rivet_ep_post_send / rivet_ep_post_recv (rivet_msg.c), the send with the
 * destination's address handle and QPN, the receive with the GRH slot and
 * tail that rivet_dgram_recv_sges adds.
 */
#include <string.h>

#include "rivet_dgram.h"

void rivet_dgram_recv_extra(uint8_t *extra, uint32_t lkey, size_t mtu,
			    size_t len, struct ibv_sge *sge, size_t n,
			    int *num_p)
{
	size_t num = n + 1;

	sge[0].addr = (uintptr_t)extra;
	sge[0].length = RIVET_UD_GRH_LEN;
	sge[0].lkey = lkey;
	if (len < mtu) {
		sge[num].addr = (uintptr_t)(extra + RIVET_UD_GRH_LEN);
		sge[num].length = (uint32_t)(mtu - len);
		sge[num].lkey = lkey;
		num++;
	}
	*num_p = (int)num;
}

void rivet_dgram_recv_tail(uint8_t *extra, uint32_t lkey, size_t mtu,
			   size_t len, struct ibv_sge *sge, size_t n,
			   int *num_p)
{
	*num_p = (int)n;
	if (len >= RIVET_UD_GRH_LEN + mtu)
		return;
	sge[n].addr = (uintptr_t)(extra + RIVET_UD_GRH_LEN);
	sge[n].length = (uint32_t)(RIVET_UD_GRH_LEN + mtu - len);
	sge[n].lkey = lkey;
	*num_p = (int)n + 1;
}

int rivet_dgram_recv_sges(struct rivet_ep *ep, size_t slot, size_t len,
			  struct ibv_sge *sge, size_t n, int *num_p)
{
	struct rivet_dgram *ud = ep->ud;

	if (ep->prefix)
		rivet_dgram_recv_tail(ud->rx_extra + slot * ud->extra_stride,
				      ud->rx_extra_mr->lkey, ud->mtu, len, sge,
				      n, num_p);
	else
		rivet_dgram_recv_extra(ud->rx_extra + slot * ud->extra_stride,
				       ud->rx_extra_mr->lkey, ud->mtu, len,
				       sge, n, num_p);
	return 0;
}

void rivet_dgram_copy_in(const uint8_t *slot, const struct ibv_wc *wc,
			 bool prefix, const struct iovec *iov, size_t count,
			 size_t len)
{
	size_t skip = prefix ? 0 : RIVET_UD_GRH_LEN, left = 0, i, n;
	const uint8_t *p = slot + skip;

	if (wc->status == IBV_WC_SUCCESS && wc->byte_len > skip)
		left = wc->byte_len - skip;
	/* the device wrote it (memcheck does not see that) */
	RIVET_MEM_DEFINED(slot, skip + left);
	left = RIVET_MIN(left, len);
	for (i = 0; i < count && left; i++) {
		n = RIVET_MIN(left, iov[i].iov_len);
		memcpy(iov[i].iov_base, p, n);
		p += n;
		left -= n;
	}
}

/* FI_SOURCE: the sender's name rebuilt from the GRH slot and the work
 * completion (its GID, QPN and LID), looked up in the AV. */
fi_addr_t rivet_dgram_src_resolve(struct rivet_src_resolver *r,
				  const struct rivet_wr_ctx *ctx,
				  const struct ibv_wc *wc)
{
	struct rivet_dgram *ud = container_of(r, struct rivet_dgram, source);
	const uint8_t *grh = ctx->grh;
	struct sockaddr_in6 name;
	uint8_t gid[16];

	if (!ud->av || (!(wc->wc_flags & IBV_WC_GRH) && !ud->roce_ipv4))
		return FI_ADDR_NOTAVAIL;
	RIVET_MEM_DEFINED(grh, RIVET_UD_GRH_LEN);
	rivet_ud_grh_sgid(grh, ud->roce_ipv4, gid);
	rivet_ud_addr_encode(gid, wc->src_qp, ud->lid ? wc->slid : 0, &name);
	return rivet_av_reverse(ud->av, (const struct sockaddr *)&name);
}

struct rivet_src_resolver *rivet_dgram_source(struct rivet_ep *ep)
{
	return ep->ud->want_source ? &ep->ud->source : NULL;
}

/* FI_MSG_PREFIX: what is sent starts after the prefix (the first iov
 * holds it whole, fi_getinfo(3)). */
static int rivet_dgram_skip_prefix(const struct rivet_ep *ep,
				   const struct rivet_send_req *req,
				   struct iovec *tmp)
{
	if (!req->count || !req->iov ||
	    req->iov[0].iov_len < ep->prefix || req->count > ep->iov_limit)
		return -FI_EINVAL;
	memcpy(tmp, req->iov, req->count * sizeof(*tmp));
	tmp[0].iov_base = (uint8_t *)tmp[0].iov_base + ep->prefix;
	tmp[0].iov_len -= ep->prefix;
	return 0;
}

static ssize_t rivet_dgram_post_req(struct rivet_ep *ep, fi_addr_t dest,
				    struct rivet_send_req *req)
{
	int ret;

	ret = rivet_dgram_ah_get(ep->ud, dest, &req->ah, &req->remote_qpn);
	if (ret)
		return ret;
	req->remote_qkey = RIVET_UD_QKEY;
	req->cntr = ep->send_cntr;
	req->comp_flags = FI_SEND | FI_MSG;
	req->opcode = (req->flags & FI_REMOTE_CQ_DATA) ?
		      IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	return rivet_ep_post_send(ep, req);
}

static ssize_t rivet_dgram_send_req(struct rivet_ep *ep, fi_addr_t dest,
				    struct rivet_send_req *req)
{
	struct iovec tmp[RIVET_DGRAM_IOV_LIMIT];
	struct rivet_send_req shifted;
	int ret;

	if (ep->state != RIVET_EP_ENABLED)
		return -FI_EOPBADSTATE;
	if (!ep->prefix)
		return rivet_dgram_post_req(ep, dest, req);
	ret = rivet_dgram_skip_prefix(ep, req, tmp);
	if (ret)
		return ret;
	shifted = *req;
	shifted.iov = tmp;
	return rivet_dgram_post_req(ep, dest, &shifted);
}

static ssize_t rivet_dgram_sendv_flags(struct rivet_ep *ep,
				       const struct iovec *iov, void **desc,
				       size_t count, fi_addr_t dest,
				       void *context, uint64_t data,
				       uint64_t flags)
{
	struct rivet_send_req req = {
		.iov = iov, .desc = desc, .count = count, .context = context,
		.data = data, .flags = flags,
	};

	return rivet_dgram_send_req(ep, dest, &req);
}

static ssize_t rivet_dgram_sendmsg(struct fid_ep *fid,
				   const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rivet_dgram_sendv_flags(to_rep(fid), msg->msg_iov, msg->desc,
				       msg->iov_count, msg->addr,
				       msg->context, msg->data, flags);
}

static ssize_t rivet_dgram_sendv(struct fid_ep *fid, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t dest,
				 void *context)
{
	struct rivet_ep *ep = to_rep(fid);

	return rivet_dgram_sendv_flags(ep, iov, desc, count, dest, context, 0,
				       ep->tx_op_flags);
}

static ssize_t rivet_dgram_send(struct fid_ep *fid, const void *buf,
				size_t len, void *desc, fi_addr_t dest,
				void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_dgram_sendv(fid, &iov, &desc, 1, dest, context);
}

static ssize_t rivet_dgram_senddata(struct fid_ep *fid, const void *buf,
				    size_t len, void *desc, uint64_t data,
				    fi_addr_t dest, void *context)
{
	struct rivet_ep *ep = to_rep(fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_dgram_sendv_flags(ep, &iov, &desc, 1, dest, context,
				       data, ep->tx_op_flags |
				       FI_REMOTE_CQ_DATA);
}

/* Injected sends complete silently (fi_msg(3)) but still count. */
static ssize_t rivet_dgram_inject_flags(struct fid_ep *fid, const void *buf,
					size_t len, uint64_t data,
					fi_addr_t dest, uint64_t flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct rivet_send_req req = {
		.iov = &iov, .count = 1, .data = data,
		.flags = FI_INJECT | flags, .silent = true,
	};

	return rivet_dgram_send_req(to_rep(fid), dest, &req);
}

static ssize_t rivet_dgram_inject(struct fid_ep *fid, const void *buf,
				  size_t len, fi_addr_t dest)
{
	return rivet_dgram_inject_flags(fid, buf, len, 0, dest, 0);
}

static ssize_t rivet_dgram_injectdata(struct fid_ep *fid, const void *buf,
				      size_t len, uint64_t data,
				      fi_addr_t dest)
{
	return rivet_dgram_inject_flags(fid, buf, len, data, dest,
					FI_REMOTE_CQ_DATA);
}

/* No FI_DIRECTED_RECV: a receive takes a datagram from anyone. */
static ssize_t rivet_dgram_recvmsg(struct fid_ep *fid,
				   const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rivet_ep_post_recv(to_rep(fid), msg->msg_iov, msg->desc,
				  msg->iov_count, msg->context, flags);
}

static ssize_t rivet_dgram_recvv(struct fid_ep *fid, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t src,
				 void *context)
{
	struct rivet_ep *ep = to_rep(fid);

	return rivet_ep_post_recv(ep, iov, desc, count, context,
				  ep->rx_op_flags);
}

static ssize_t rivet_dgram_recv(struct fid_ep *fid, void *buf, size_t len,
				void *desc, fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rivet_dgram_recvv(fid, &iov, &desc, 1, src, context);
}

struct fi_ops_msg g_rivet_dgram_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = rivet_dgram_recv,
	.recvv = rivet_dgram_recvv,
	.recvmsg = rivet_dgram_recvmsg,
	.send = rivet_dgram_send,
	.sendv = rivet_dgram_sendv,
	.sendmsg = rivet_dgram_sendmsg,
	.inject = rivet_dgram_inject,
	.senddata = rivet_dgram_senddata,
	.injectdata = rivet_dgram_injectdata,
};
