/* SPDX-License-Identifier: MIT */
/*
 * RDM data operations: every fi_send, fi_tsend, fi_recv and fi_trecv
 * variant is a shim into rivet_rdm_send / rivet_rdm_recv (rivet_rdm_recv.c).
 * The receive shims serve shared receive contexts too: they go by the
 * class of the fid.
 */
#include <stdlib.h>

#include "rivet_iov.h"
#include "rivet_rdm.h"


/* Header, and the payload when eager (len != 0 only then). */
static void rivet_rdm_stage(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
			    const struct rivet_rdm_req *req, size_t len,
			    bool eager)
{
	struct rivet_wire_hdr *hdr = (struct rivet_wire_hdr *)op->buf;
	uint8_t *dst = (uint8_t *)(hdr + 1);
	size_t i;

	*hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_EAGER,
		.flags = (req->tagged ? RIVET_WF_TAGGED : 0) |
			 ((req->flags & FI_REMOTE_CQ_DATA) ?
			  RIVET_WF_CQ_DATA : 0),
		.tag = req->tag, .data = req->data, .len = len,
	};
	for (i = 0; eager && i < req->count; i++) {
		memcpy(dst, req->iov[i].iov_base, req->iov[i].iov_len);
		dst += req->iov[i].iov_len;
	}
	op->buf_len = sizeof(*hdr) + (eager ? len : 0);
}

static void rivet_rdm_tx_init(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
			      const struct rivet_rdm_req *req,
			      struct rivet_conn *conn, size_t len)
{
	op->conn = conn;
	op->context = req->context;
	op->cq_flags = FI_SEND | (req->tagged ? FI_TAGGED : FI_MSG);
	op->report = !(req->flags & RIVET_RDM_SILENT) &&
		     (!ep->tx_selective || (req->flags & FI_COMPLETION));
	op->tag = req->tag;
	op->len = len;
	op->fenced = req->flags & FI_FENCE;
	op->rndv = false;
	op->fin_seen = false;
	op->nmrs = 0;
}

static int rivet_rdm_tx_start(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
			      const struct rivet_rdm_req *req, size_t len)
{
	/* a fenced send goes by rendezvous (unless injected: an inject's
	 * data is what the buffer held at the call), so that the peer reads
	 * its data once the operations before it are done */
	bool eager = (req->flags & FI_INJECT) ||
		     (len <= ep->eager_size &&
		      !(req->flags & FI_DELIVERY_COMPLETE) &&
		      !(len && (req->flags & FI_FENCE)));
	int ret;

	rivet_rdm_stage(ep, op, req, len, eager);
	if (!eager) {
		ret = rivet_rndv_prepare(ep, op, req->iov, req->desc,
					 req->count);
		if (ret)
			return ret;
	}
	return rivet_conn_submit(op->conn, op);
}

/*
 * The inject short path: an inject small enough to go inline, to an
 * established connection with nothing queued on it, is one send posted at
 * once, its header and send those of the connection (set up with it:
 * only what changes is written) and its payload copied after the header
 * (rivet_rdm_inject_wr; through ibv_post_send, only a payload of up to
 * RIVET_RDM_INJ_PIECE bytes: a longer one is read from the caller's
 * buffer by the post itself): no tx op.  Only every
 * inj_signal-th is signaled; its completion gives back the send queue
 * slots of the ones before it too (rivet_rdm_wc_inj); a failure (each
 * failed one completes) is reported as the general path reports an
 * inject's.  They are not in the connection's inflight: an FI_FENCE does
 * not wait for them, since an inject is complete when the call returns
 * and RC delivers them before anything posted after them.  Endpoints with a
 * send counter take the general path (the counter counts completions).
 * RIVET_RDM_SLOW: not such a case, or the QP refused it; the general path
 * takes it (and names any error).
 */
#define RIVET_RDM_SLOW 1

/* A one-piece inject (header and payload contiguous at inj_hdr) through
 * the QP's work-request API (FI_RIVET_WR_API): the device fills its queue
 * entry from the few fields given instead of translating a whole
 * ibv_send_wr (on rxe, 151 instructions in the four calls against 190 in
 * rxe_post_send).  Only the single-buffer setter is used: librxe 44's
 * ibv_wr_set_inline_data_list loses the length. */
static inline int rivet_rdm_inject_wr(struct rivet_conn *conn, bool tagged,
				      unsigned int flags, size_t len)
{
	struct ibv_qp_ex *qx = conn->inj_qpx;

	ibv_wr_start(qx);
	qx->wr_id = (uintptr_t)&conn->inj_wr[tagged];
	qx->wr_flags = flags;
	ibv_wr_send(qx);
	ibv_wr_set_inline_data(qx, &conn->inj_hdr, len);
	return ibv_wr_complete(qx);
}

static inline __attribute__((always_inline)) ssize_t
rivet_rdm_inject_direct(struct rivet_rdm_ep *ep, const void *buf, size_t len,
			uint64_t data, fi_addr_t dest, uint64_t tag,
			bool tagged, bool cq_data)
{
	struct ibv_send_wr *wr, *bad;
	struct rivet_wire_hdr *hdr;
	struct rivet_conn *conn;
	ssize_t ret = RIVET_RDM_SLOW;
	unsigned int flags;

	if (len > RIVET_RDM_INJECT_SIZE ||
	    sizeof(*hdr) + len > ep->max_inline || ep->send_cntr || !buf)
		return RIVET_RDM_SLOW;	/* the general path checks all */
	rivet_rdm_lock(ep);
	conn = rivet_conn_ready(ep, dest);
	if (!conn || conn->inj_out >= ep->inj_max)
		goto out;
	/* the connection's own send: version, op, the peer's index, the
	 * header's piece, the opcode were set with it; inline, the lkeys
	 * are not looked at */
	hdr = &conn->inj_hdr;
	hdr->flags = (tagged ? RIVET_WF_TAGGED : 0) |
		     (cq_data ? RIVET_WF_CQ_DATA : 0);
	hdr->tag = tag;
	hdr->data = data;
	hdr->len = len;
	flags = IBV_SEND_INLINE;
	if (conn->inj_seq + 1 == ep->inj_signal)
		flags |= IBV_SEND_SIGNALED;
	if (conn->inj_qpx) {	/* one piece, whatever the size */
		rivet_copy_small(conn->inj_tail, buf, len);
		if (rivet_rdm_inject_wr(conn, tagged, flags, sizeof(*hdr) + len))
			goto out;
		goto posted;
	}
	wr = &conn->inj_send;
	if (len <= RIVET_RDM_INJ_PIECE) {	/* one piece */
		rivet_copy_small(conn->inj_tail, buf, len);
		conn->inj_sge[0].length = (uint32_t)(sizeof(*hdr) + len);
		wr->num_sge = 1;
	} else {
		conn->inj_sge[0].length = sizeof(*hdr);
		conn->inj_sge[1].addr = (uintptr_t)buf;
		conn->inj_sge[1].length = (uint32_t)len;
		wr->num_sge = 2;
	}
	wr->wr_id = (uintptr_t)&conn->inj_wr[tagged];
	wr->send_flags = flags;
	if (ibv_post_send(conn->qp, wr, &bad))
		goto out;
posted:
	conn->inj_out++;
	conn->inj_seq = (flags & IBV_SEND_SIGNALED) ? 0 : conn->inj_seq + 1;
	ret = 0;
out:
	rivet_rdm_unlock(ep);
	return ret;
}

static ssize_t rivet_rdm_send(struct rivet_rdm_ep *ep,
			      const struct rivet_rdm_req *req)
{
	struct rivet_conn *conn;
	struct rivet_tx_op *op;
	size_t len;
	int ret;

	if (rivet_iov_check(req->iov, req->count, RIVET_RDM_IOV_LIMIT, &len) ||
	    len > ep->max_msg_size ||
	    ((req->flags & FI_INJECT) && len > RIVET_RDM_INJECT_SIZE))
		return -FI_EINVAL;
	rivet_rdm_lock(ep);
	ret = -FI_EOPBADSTATE;
	if (!ep->enabled)
		goto out;
	ret = -FI_EAGAIN;
	op = rivet_tx_op_get(ep);
	if (!op)
		goto out;
	ret = rivet_conn_get(ep, req->addr, &conn);
	if (!ret) {
		rivet_rdm_tx_init(ep, op, req, conn, len);
		ret = rivet_rdm_tx_start(ep, op, req, len);
	}
	if (ret) {
		rivet_tx_op_release(ep, op);
		LL_PREPEND(ep->tx_free, op);
	}
out:
	rivet_rdm_unlock(ep);
	return ret;
}

/* ---- fi_ops_msg ---- */

/* The receive shims serve an endpoint or a shared receive context. */
static ssize_t rivet_rdm_recv_fid(struct fid_ep *fid,
				  const struct rivet_rdm_req *req)
{
	if (fid->fid.fclass == FI_CLASS_SRX_CTX)
		return rivet_rdm_srx_recv(container_of(fid,
					  struct rivet_rdm_srx, ep_fid), req);
	return rivet_rdm_recv(to_rrdm(fid), req);
}

static uint64_t rivet_rdm_rx_flags(struct fid_ep *fid)
{
	if (fid->fid.fclass == FI_CLASS_SRX_CTX)
		return container_of(fid, struct rivet_rdm_srx,
				    ep_fid)->rx_op_flags;
	return to_rrdm(fid)->rx_op_flags;
}

static ssize_t rivet_rdm_recvmsg(struct fid_ep *fid, const struct fi_msg *msg,
				 uint64_t flags)
{
	struct rivet_rdm_req req;

	if (flags & FI_TRIGGER)
		return rivet_rdm_trig_msg(fid, msg, flags, false);
	if (!msg)
		return -FI_EINVAL;
	req = (struct rivet_rdm_req) {
		.iov = msg->msg_iov, .desc = msg->desc,
		.count = msg->iov_count, .addr = msg->addr,
		.context = msg->context, .flags = flags,
	};

	return rivet_rdm_recv_fid(fid, &req);
}

static ssize_t rivet_rdm_recvv(struct fid_ep *fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t src,
			       void *context)
{
	struct fi_msg msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = src, .context = context,
	};

	return rivet_rdm_recvmsg(fid, &msg, rivet_rdm_rx_flags(fid));
}

static ssize_t rivet_rdm_recv1(struct fid_ep *fid, void *buf, size_t len,
			       void *desc, fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rivet_rdm_recvv(fid, &iov, &desc, 1, src, context);
}

static ssize_t rivet_rdm_sendmsg(struct fid_ep *fid, const struct fi_msg *msg,
				 uint64_t flags)
{
	struct rivet_rdm_req req;

	if (flags & FI_TRIGGER)
		return rivet_rdm_trig_msg(fid, msg, flags, true);
	if (!msg)
		return -FI_EINVAL;
	req = (struct rivet_rdm_req) {
		.iov = msg->msg_iov, .desc = msg->desc,
		.count = msg->iov_count, .addr = msg->addr,
		.context = msg->context, .flags = flags, .data = msg->data,
	};

	return rivet_rdm_send(to_rrdm(fid), &req);
}

static ssize_t rivet_rdm_msg_send(struct fid_ep *fid, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t dest, void *context,
				  uint64_t flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct fi_msg msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1,
		.addr = dest, .context = context, .data = data,
	};

	return rivet_rdm_sendmsg(fid, &msg, flags);
}

static ssize_t rivet_rdm_sendv(struct fid_ep *fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t dest,
			       void *context)
{
	struct fi_msg msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = dest, .context = context,
	};

	return rivet_rdm_sendmsg(fid, &msg, to_rrdm(fid)->tx_op_flags);
}

static ssize_t rivet_rdm_send1(struct fid_ep *fid, const void *buf,
			       size_t len, void *desc, fi_addr_t dest,
			       void *context)
{
	return rivet_rdm_msg_send(fid, buf, len, desc, 0, dest, context,
				  to_rrdm(fid)->tx_op_flags);
}

static ssize_t rivet_rdm_senddata(struct fid_ep *fid, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t dest, void *context)
{
	return rivet_rdm_msg_send(fid, buf, len, desc, data, dest, context,
				  to_rrdm(fid)->tx_op_flags |
				  FI_REMOTE_CQ_DATA);
}

static ssize_t rivet_rdm_inject(struct fid_ep *fid, const void *buf,
				size_t len, fi_addr_t dest)
{
	ssize_t ret = rivet_rdm_inject_direct(to_rrdm(fid), buf, len, 0, dest,
					      0, false, false);

	if (ret != RIVET_RDM_SLOW)
		return ret;
	return rivet_rdm_msg_send(fid, buf, len, NULL, 0, dest, NULL,
				  FI_INJECT | RIVET_RDM_SILENT);
}

static ssize_t rivet_rdm_injectdata(struct fid_ep *fid, const void *buf,
				    size_t len, uint64_t data, fi_addr_t dest)
{
	ssize_t ret = rivet_rdm_inject_direct(to_rrdm(fid), buf, len, data,
					      dest, 0, false, true);

	if (ret != RIVET_RDM_SLOW)
		return ret;
	return rivet_rdm_msg_send(fid, buf, len, NULL, data, dest, NULL,
				  FI_INJECT | FI_REMOTE_CQ_DATA |
				  RIVET_RDM_SILENT);
}

struct fi_ops_msg g_rivet_rdm_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = rivet_rdm_recv1,
	.recvv = rivet_rdm_recvv,
	.recvmsg = rivet_rdm_recvmsg,
	.send = rivet_rdm_send1,
	.sendv = rivet_rdm_sendv,
	.sendmsg = rivet_rdm_sendmsg,
	.inject = rivet_rdm_inject,
	.senddata = rivet_rdm_senddata,
	.injectdata = rivet_rdm_injectdata,
};

/* ---- fi_ops_tagged ---- */

static ssize_t rivet_rdm_trecvmsg(struct fid_ep *fid,
				  const struct fi_msg_tagged *msg,
				  uint64_t flags)
{
	struct rivet_rdm_req req;

	if (flags & FI_TRIGGER)
		return rivet_rdm_trig_tagged(fid, msg, flags, false);
	if (!msg)
		return -FI_EINVAL;
	req = (struct rivet_rdm_req) {
		.iov = msg->msg_iov, .desc = msg->desc,
		.count = msg->iov_count, .addr = msg->addr,
		.tag = msg->tag, .ignore = msg->ignore,
		.context = msg->context, .flags = flags, .tagged = true,
	};

	return rivet_rdm_recv_fid(fid, &req);
}

static ssize_t rivet_rdm_trecvv(struct fid_ep *fid, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t src,
				uint64_t tag, uint64_t ignore, void *context)
{
	struct fi_msg_tagged msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = src, .tag = tag, .ignore = ignore, .context = context,
	};

	return rivet_rdm_trecvmsg(fid, &msg, rivet_rdm_rx_flags(fid));
}

/* fi_trecv beyond rivet_rdm_trecv's one-buffer path. */
__attribute__((noinline)) ssize_t
rivet_rdm_trecv_any(struct fid_ep *fid, void *buf, size_t len, void *desc,
		    fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rivet_rdm_trecvv(fid, &iov, &desc, 1, src, tag, ignore,
				context);
}

static ssize_t rivet_rdm_tsendmsg(struct fid_ep *fid,
				  const struct fi_msg_tagged *msg,
				  uint64_t flags)
{
	struct rivet_rdm_req req;

	if (flags & FI_TRIGGER)
		return rivet_rdm_trig_tagged(fid, msg, flags, true);
	if (!msg)
		return -FI_EINVAL;
	req = (struct rivet_rdm_req) {
		.iov = msg->msg_iov, .desc = msg->desc,
		.count = msg->iov_count, .addr = msg->addr,
		.tag = msg->tag, .data = msg->data, .context = msg->context,
		.flags = flags, .tagged = true,
	};

	return rivet_rdm_send(to_rrdm(fid), &req);
}

static ssize_t rivet_rdm_tsend_common(struct fid_ep *fid, const void *buf,
				      size_t len, void *desc, uint64_t data,
				      fi_addr_t dest, uint64_t tag,
				      void *context, uint64_t flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct fi_msg_tagged msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = dest,
		.tag = tag, .context = context, .data = data,
	};

	return rivet_rdm_tsendmsg(fid, &msg, flags);
}

static ssize_t rivet_rdm_tsendv(struct fid_ep *fid, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t dest,
				uint64_t tag, void *context)
{
	struct fi_msg_tagged msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = dest, .tag = tag, .context = context,
	};

	return rivet_rdm_tsendmsg(fid, &msg, to_rrdm(fid)->tx_op_flags);
}

static ssize_t rivet_rdm_tsend(struct fid_ep *fid, const void *buf,
			       size_t len, void *desc, fi_addr_t dest,
			       uint64_t tag, void *context)
{
	return rivet_rdm_tsend_common(fid, buf, len, desc, 0, dest, tag,
				      context, to_rrdm(fid)->tx_op_flags);
}

static ssize_t rivet_rdm_tsenddata(struct fid_ep *fid, const void *buf,
				   size_t len, void *desc, uint64_t data,
				   fi_addr_t dest, uint64_t tag, void *context)
{
	return rivet_rdm_tsend_common(fid, buf, len, desc, data, dest, tag,
				      context, to_rrdm(fid)->tx_op_flags |
				      FI_REMOTE_CQ_DATA);
}

/* Not the short path's case: the general path (a tail call, so that the
 * short path's frame holds nothing for it). */
static __attribute__((noinline)) ssize_t
rivet_rdm_tinject_any(struct fid_ep *fid, const void *buf, size_t len,
		      fi_addr_t dest, uint64_t tag)
{
	return rivet_rdm_tsend_common(fid, buf, len, NULL, 0, dest, tag, NULL,
				      FI_INJECT | RIVET_RDM_SILENT);
}

static ssize_t rivet_rdm_tinject(struct fid_ep *fid, const void *buf,
				 size_t len, fi_addr_t dest, uint64_t tag)
{
	ssize_t ret = rivet_rdm_inject_direct(to_rrdm(fid), buf, len, 0, dest,
					      tag, true, false);

	if (ret != RIVET_RDM_SLOW)
		return ret;
	return rivet_rdm_tinject_any(fid, buf, len, dest, tag);
}

static ssize_t rivet_rdm_tinjectdata(struct fid_ep *fid, const void *buf,
				     size_t len, uint64_t data, fi_addr_t dest,
				     uint64_t tag)
{
	ssize_t ret = rivet_rdm_inject_direct(to_rrdm(fid), buf, len, data,
					      dest, tag, true, true);

	if (ret != RIVET_RDM_SLOW)
		return ret;
	return rivet_rdm_tsend_common(fid, buf, len, NULL, data, dest, tag,
				      NULL, FI_INJECT | FI_REMOTE_CQ_DATA |
				      RIVET_RDM_SILENT);
}

struct fi_ops_tagged g_rivet_rdm_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = rivet_rdm_trecv,
	.recvv = rivet_rdm_trecvv,
	.recvmsg = rivet_rdm_trecvmsg,
	.send = rivet_rdm_tsend,
	.sendv = rivet_rdm_tsendv,
	.sendmsg = rivet_rdm_tsendmsg,
	.inject = rivet_rdm_tinject,
	.senddata = rivet_rdm_tsenddata,
	.injectdata = rivet_rdm_tinjectdata,
};

struct fi_ops_msg g_rivet_rdm_srx_msg_ops;
struct fi_ops_tagged g_rivet_rdm_srx_tagged_ops;
struct fi_ops_msg g_rivet_rdm_txc_msg_ops;
struct fi_ops_tagged g_rivet_rdm_txc_tagged_ops;
struct fi_ops_msg g_rivet_rdm_sep_msg_ops;

void rivet_rdm_srx_ops_init(void)
{
	g_rivet_rdm_srx_msg_ops = g_rivet_no_send_ops;
	g_rivet_rdm_srx_msg_ops.recv = rivet_rdm_recv1;
	g_rivet_rdm_srx_msg_ops.recvv = rivet_rdm_recvv;
	g_rivet_rdm_srx_msg_ops.recvmsg = rivet_rdm_recvmsg;
	g_rivet_rdm_srx_tagged_ops = g_rivet_no_tagged_ops;
	g_rivet_rdm_srx_tagged_ops.recv = rivet_rdm_trecv;
	g_rivet_rdm_srx_tagged_ops.recvv = rivet_rdm_trecvv;
	g_rivet_rdm_srx_tagged_ops.recvmsg = rivet_rdm_trecvmsg;
	/* a scalable endpoint's transmit contexts: sends only */
	g_rivet_rdm_txc_msg_ops = g_rivet_rdm_msg_ops;
	g_rivet_rdm_txc_msg_ops.recv = g_rivet_no_recv_ops.recv;
	g_rivet_rdm_txc_msg_ops.recvv = g_rivet_no_recv_ops.recvv;
	g_rivet_rdm_txc_msg_ops.recvmsg = g_rivet_no_recv_ops.recvmsg;
	g_rivet_rdm_txc_tagged_ops = g_rivet_rdm_tagged_ops;
	g_rivet_rdm_txc_tagged_ops.recv = g_rivet_no_tagged_ops.recv;
	g_rivet_rdm_txc_tagged_ops.recvv = g_rivet_no_tagged_ops.recvv;
	g_rivet_rdm_txc_tagged_ops.recvmsg = g_rivet_no_tagged_ops.recvmsg;
	g_rivet_rdm_sep_msg_ops = g_rivet_no_send_ops;
	g_rivet_rdm_sep_msg_ops.recv = g_rivet_no_recv_ops.recv;
	g_rivet_rdm_sep_msg_ops.recvv = g_rivet_no_recv_ops.recvv;
	g_rivet_rdm_sep_msg_ops.recvmsg = g_rivet_no_recv_ops.recvmsg;
}
