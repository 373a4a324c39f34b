/* SPDX-License-Identifier: MIT */
/*
 * RDM data operations: every fi_send, fi_tsend, fi_recv and fi_trecv
 * variant is a shim into rivet_rdm_send / rivet_rdm_recv; also peek, claim,
 * discard (fi_trecvmsg flags) and fi_cancel.
 */
#include <stdlib.h>

#include "rivet_iov.h"
#include "rivet_rdm.h"

#define RIVET_RDM_SILENT (1ULL << 63)	/* internal: fi_inject* */

struct rivet_rdm_req {
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t addr;
	uint64_t tag, ignore, data;
	void *context;
	uint64_t flags;
	bool tagged;
};

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
 * once, its header on the stack and its payload read from the caller's
 * buffer by the post itself: no tx op, no staging copy.  Only every
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

static ssize_t rivet_rdm_inject_direct(struct rivet_rdm_ep *ep,
				       const void *buf, size_t len,
				       uint64_t data, fi_addr_t dest,
				       uint64_t tag, bool tagged, bool cq_data)
{
	struct rivet_wire_hdr hdr;
	struct ibv_sge sge[2];
	struct ibv_send_wr wr, *bad;
	struct rivet_conn *conn;
	ssize_t ret = RIVET_RDM_SLOW;

	if (len > RIVET_RDM_INJECT_SIZE ||
	    sizeof(hdr) + len > ep->max_inline || ep->send_cntr || !buf)
		return RIVET_RDM_SLOW;	/* the general path checks all */
	rivet_rdm_lock(ep);
	conn = rivet_conn_ready(ep, dest);
	if (!conn || conn->inj_out >= ep->inj_max)
		goto out;
	hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_EAGER,
		.flags = (tagged ? RIVET_WF_TAGGED : 0) |
			 (cq_data ? RIVET_WF_CQ_DATA : 0),
		.conn_idx = conn->peer_idx, .tag = tag, .data = data,
		.len = len,
	};
	/* inline: the lkeys are not looked at */
	sge[0] = (struct ibv_sge) { .addr = (uintptr_t)&hdr,
				    .length = sizeof(hdr) };
	sge[1] = (struct ibv_sge) { .addr = (uintptr_t)buf,
				    .length = (uint32_t)len };
	wr.wr_id = (uintptr_t)&conn->inj_wr[tagged];
	wr.next = NULL;
	wr.sg_list = sge;
	wr.num_sge = len ? 2 : 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE;
	if (conn->inj_seq + 1 == ep->inj_signal)
		wr.send_flags |= IBV_SEND_SIGNALED;
	wr.imm_data = 0;
	if (ibv_post_send(conn->qp, &wr, &bad))
		goto out;
	conn->inj_out++;
	conn->inj_seq = (wr.send_flags & IBV_SEND_SIGNALED) ? 0 :
			conn->inj_seq + 1;
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

/* ---- receives ---- */

static void rivet_rdm_unexp_release(struct rivet_rdm_ep *ep,
				    struct rivet_unexp *u, bool tagged)
{
	rivet_match_msg_remove(rivet_rdm_match(ep, tagged), &u->me);
	/* a discarded rendezvous still owes its sender a FIN */
	if (u->op == RIVET_OP_RTS && u->conn->state != RIVET_CONN_CLOSED)
		rivet_rndv_send_fin(u->conn, u->rts.send_id, 0, NULL);
	free(u);
}

static void rivet_rdm_unexp_hdr(const struct rivet_unexp *u,
				struct rivet_wire_hdr *hdr)
{
	*hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = u->op, .flags = u->wflags,
		.tag = u->tag, .data = u->data, .len = u->len,
	};
}

/* Hands an unexpected message to a receive; the message is consumed. */
static void rivet_rdm_unexp_deliver(struct rivet_rdm_ep *ep,
				    struct rivet_rx_op *rx,
				    struct rivet_unexp *u, bool tagged)
{
	struct rivet_wire_hdr hdr;

	rivet_rdm_unexp_hdr(u, &hdr);
	rivet_match_msg_remove(rivet_rdm_match(ep, tagged), &u->me);
	if (u->op == RIVET_OP_EAGER)
		rivet_rx_deliver_eager(ep, rx, u->conn, &hdr, u->payload);
	else
		rivet_rndv_start(ep, rx, u->conn, &hdr, &u->rts);
	free(u);
}

static struct rivet_rx_op *rivet_rdm_rx_alloc(struct rivet_rdm_ep *ep,
					      const struct rivet_rdm_req *req,
					      size_t len)
{
	struct rivet_rx_op *rx = ep->rx_free;
	size_t i;

	if (rx) {
		ep->rx_free = rx->next;
	} else {
		rx = malloc(sizeof(*rx));
		if (!rx)
			return NULL;
	}
	/* every field, the iovs only up to count (nothing reads beyond) */
	rx->next = NULL;
	rx->offset = rx->inflight = 0;
	rx->released = rx->posted = false;
	rx->context = req->context;
	rx->op_flags = req->flags;
	rx->cq_flags = FI_RECV | (req->tagged ? FI_TAGGED : FI_MSG);
	rx->addr = (ep->caps & FI_DIRECTED_RECV) ? req->addr : FI_ADDR_UNSPEC;
	rx->tag = req->tagged ? req->tag : 0;
	rx->ignore = req->tagged ? req->ignore : ~0ULL;
	rx->count = req->count;
	rx->iov[0] = (struct iovec) { 0 };	/* count 0: an empty buffer */
	rx->desc[0] = NULL;
	for (i = 0; i < req->count; i++) {
		rx->iov[i] = req->iov[i];
		rx->desc[i] = req->desc ? req->desc[i] : NULL;
	}
	rx->len = len;
	rx->multi = req->flags & FI_MULTI_RECV;
	rx->report = !ep->rx_selective || (req->flags & FI_COMPLETION);
	ep->rx_ops_used++;
	return rx;
}

static void rivet_rdm_rx_post(struct rivet_rdm_ep *ep, struct rivet_rx_op *rx)
{
	bool tagged = rx->cq_flags & FI_TAGGED;
	struct rivet_match *m = rivet_rdm_match(ep, tagged);
	struct rivet_match_msg *u;

	rx->inflight++;		/* delivery may retire rx: keep it alive */
	do {
		/* rx->addr is FI_ADDR_UNSPEC without FI_DIRECTED_RECV */
		u = rivet_match_msg_find(m, rx->addr, rx->tag, rx->ignore);
		if (!u)
			break;
		rivet_rdm_unexp_deliver(ep, rx,
					container_of(u, struct rivet_unexp,
						     me), tagged);
	} while (rx->multi && !rx->released);
	rx->inflight--;
	if (rx->released) {
		if (!rx->inflight)
			rivet_rx_op_free(ep, rx);
		return;
	}
	rx->posted = true;
	rivet_match_recv_insert(m, &rx->me, rx->addr, rx->tag, rx->ignore);
}

static ssize_t rivet_rdm_peek(struct rivet_rdm_ep *ep,
			      const struct rivet_rdm_req *req, size_t len);

static ssize_t rivet_rdm_recv(struct rivet_rdm_ep *ep,
			      const struct rivet_rdm_req *req)
{
	struct rivet_rx_op *rx;
	ssize_t ret = 0;
	size_t len;

	if (rivet_iov_check(req->iov, req->count, RIVET_RDM_IOV_LIMIT, &len) ||
	    ((req->flags & FI_MULTI_RECV) && req->count != 1))
		return -FI_EINVAL;
	rivet_rdm_lock(ep);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
	} else if (req->flags & (FI_PEEK | FI_CLAIM)) {
		ret = rivet_rdm_peek(ep, req, len);
	} else if (ep->rx_ops_used >= ep->rx_size) {
		ret = -FI_EAGAIN;
	} else {
		rx = rivet_rdm_rx_alloc(ep, req, len);
		if (rx)
			rivet_rdm_rx_post(ep, rx);
		else
			ret = -FI_ENOMEM;
	}
	rivet_rdm_unlock(ep);
	return ret;
}

/* ---- FI_PEEK, FI_CLAIM, FI_DISCARD (fi_tagged(3)) ---- */

static void rivet_rdm_peek_comp(struct rivet_rdm_ep *ep,
				const struct rivet_rdm_req *req,
				const struct rivet_unexp *u, int err)
{
	struct rivet_cq_entry e = {
		.op_context = req->context, .err = err,
		.flags = FI_RECV | (req->tagged ? FI_TAGGED : FI_MSG),
		.src = FI_ADDR_NOTAVAIL,
	};

	if (u) {
		e.len = u->len;
		e.tag = u->tag;
		e.src = u->src;
		if (u->wflags & RIVET_WF_CQ_DATA) {
			e.flags |= FI_REMOTE_CQ_DATA;
			e.data = u->data;
		}
	}
	rivet_rdm_complete(ep, false, &e, true);
}

/* The message an FI_CLAIM context names: the peek that claimed it left
 * it there with the endpoint beside it, and its delivery clears both, so
 * a second claim of the same context finds nothing. */
static struct rivet_unexp *rivet_rdm_claim_of(struct rivet_rdm_ep *ep,
					      struct fi_context *ctx)
{
	struct rivet_unexp *u = ctx->internal[0];

	if (!u || ctx->internal[1] != ep || !u->me.claimed)
		return NULL;
	ctx->internal[0] = ctx->internal[1] = NULL;
	return u;
}

static ssize_t rivet_rdm_claimed(struct rivet_rdm_ep *ep,
				 const struct rivet_rdm_req *req, size_t len)
{
	struct rivet_unexp *u = rivet_rdm_claim_of(ep, req->context);
	struct rivet_rx_op *rx;

	if (!u)
		return -FI_EINVAL;
	if (req->flags & FI_DISCARD) {
		rivet_rdm_peek_comp(ep, req, u, 0);
		rivet_rdm_unexp_release(ep, u, req->tagged);
		return 0;
	}
	rx = rivet_rdm_rx_alloc(ep, req, len);
	if (!rx) {
		/* still claimed: the application's to take again */
		((struct fi_context *)req->context)->internal[0] = u;
		((struct fi_context *)req->context)->internal[1] = ep;
		return -FI_ENOMEM;
	}
	rx->multi = false;
	rivet_rdm_unexp_deliver(ep, rx, u, req->tagged);
	return 0;
}

static ssize_t rivet_rdm_peek(struct rivet_rdm_ep *ep,
			      const struct rivet_rdm_req *req, size_t len)
{
	struct rivet_match *m = rivet_rdm_match(ep, req->tagged);
	struct fi_context *ctx = req->context;
	bool directed = ep->caps & FI_DIRECTED_RECV;
	struct rivet_match_msg *found;
	struct rivet_unexp *u;

	/* fi_tagged(3): a claim needs a context to remember the message */
	if ((req->flags & FI_CLAIM) && !ctx)
		return -FI_EINVAL;
	if (!(req->flags & FI_PEEK))
		return rivet_rdm_claimed(ep, req, len);
	rivet_rdm_progress_locked(ep);
	found = rivet_match_msg_find(m, directed ? req->addr : FI_ADDR_UNSPEC,
				     req->tagged ? req->tag : 0,
				     req->tagged ? req->ignore : ~0ULL);
	u = container_of(found, struct rivet_unexp, me);
	if (!found) {
		rivet_rdm_peek_comp(ep, req, NULL, FI_ENOMSG);
		return 0;
	}
	rivet_rdm_peek_comp(ep, req, u, 0);
	if (req->flags & FI_DISCARD) {
		rivet_rdm_unexp_release(ep, u, req->tagged);
	} else if (req->flags & FI_CLAIM) {
		rivet_match_msg_claim(m, &u->me);
		ctx->internal[0] = u;
		ctx->internal[1] = ep;
	}
	return 0;
}

/* ---- fi_cancel ---- */

static bool rivet_rdm_has_ctx(const struct rivet_match_recv *r, void *context)
{
	return container_of(r, struct rivet_rx_op, me)->context == context;
}

static struct rivet_rx_op *rivet_rdm_find_ctx(struct rivet_match *m,
					      void *context)
{
	struct rivet_match_recv *r;

	r = rivet_match_recv_search(m, rivet_rdm_has_ctx, context);
	return r ? container_of(r, struct rivet_rx_op, me) : NULL;
}

ssize_t rivet_rdm_cancel(struct rivet_rdm_ep *ep, void *context)
{
	struct rivet_rx_op *rx;
	struct rivet_cq_entry e = { .err = FI_ECANCELED,
				    .src = FI_ADDR_NOTAVAIL };
	ssize_t ret = -FI_ENOENT;

	rivet_rdm_lock(ep);
	rx = rivet_rdm_find_ctx(&ep->match_tag, context);
	if (!rx)
		rx = rivet_rdm_find_ctx(&ep->match_msg, context);
	if (rx) {
		e.op_context = rx->context;
		e.flags = rx->cq_flags;
		if (rx->multi)
			e.flags |= FI_MULTI_RECV;
		rivet_rdm_complete(ep, false, &e, true);
		rivet_rx_retire(ep, rx);
		ret = 0;
	}
	rivet_rdm_unlock(ep);
	return ret;
}

/* ---- fi_ops_msg ---- */

static ssize_t rivet_rdm_recvmsg(struct fid_ep *fid, const struct fi_msg *msg,
				 uint64_t flags)
{
	struct rivet_rdm_req req;

	if (!msg)
		return -FI_EINVAL;
	req = (struct rivet_rdm_req) {
		.iov = msg->msg_iov, .desc = msg->desc,
		.count = msg->iov_count, .addr = msg->addr,
		.context = msg->context, .flags = flags,
	};

	return rivet_rdm_recv(to_rrdm(fid), &req);
}

static ssize_t rivet_rdm_recvv(struct fid_ep *fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t src,
			       void *context)
{
	struct fi_msg msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = src, .context = context,
	};

	return rivet_rdm_recvmsg(fid, &msg, to_rrdm(fid)->rx_op_flags);
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

	if (!msg)
		return -FI_EINVAL;
	req = (struct rivet_rdm_req) {
		.iov = msg->msg_iov, .desc = msg->desc,
		.count = msg->iov_count, .addr = msg->addr,
		.tag = msg->tag, .ignore = msg->ignore,
		.context = msg->context, .flags = flags, .tagged = true,
	};

	return rivet_rdm_recv(to_rrdm(fid), &req);
}

static ssize_t rivet_rdm_trecvv(struct fid_ep *fid, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t src,
				uint64_t tag, uint64_t ignore, void *context)
{
	struct fi_msg_tagged msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = src, .tag = tag, .ignore = ignore, .context = context,
	};

	return rivet_rdm_trecvmsg(fid, &msg, to_rrdm(fid)->rx_op_flags);
}

static ssize_t rivet_rdm_trecv(struct fid_ep *fid, void *buf, size_t len,
			       void *desc, fi_addr_t src, uint64_t tag,
			       uint64_t ignore, void *context)
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

static ssize_t rivet_rdm_tinject(struct fid_ep *fid, const void *buf,
				 size_t len, fi_addr_t dest, uint64_t tag)
{
	ssize_t ret = rivet_rdm_inject_direct(to_rrdm(fid), buf, len, 0, dest,
					      tag, true, false);

	if (ret != RIVET_RDM_SLOW)
		return ret;
	return rivet_rdm_tsend_common(fid, buf, len, NULL, 0, dest, tag, NULL,
				      FI_INJECT | RIVET_RDM_SILENT);
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
