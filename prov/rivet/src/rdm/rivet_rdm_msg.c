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
 * (rivet_rdm_inject_post; through ibv_post_send, rivet_rdm_inject_send,
 * only a payload of up to RIVET_RDM_INJ_PIECE bytes: a longer one is read
 * from the caller's buffer by the post itself): no tx op.  Only every
 * inj_signal-th is signaled; its completion gives back the send queue
 * slots of the ones before it too (rivet_rdm_wc_inj); a failure (each
 * failed one completes) is reported as the general path reports an
 * inject's.  They are not in the connection's inflight: an FI_FENCE does
 * not wait for them, since an inject is complete when the call returns
 * and RC delivers them before anything posted after them.  Endpoints with a
 * send counter take the general path (the counter counts completions).
 * Not such a case: the general path takes it (and names any error;
 * rivet_rdm_inject_locked's RIVET_RDM_SLOW).  The QP refuses none (their
 * send queue slots are their own, ep->inj_max): one it did would be
 * -FI_EAGAIN.
 */
#define RIVET_RDM_SLOW 1

/* The connection a short inject goes on at once, or NULL: the general
 * path's case (plain: no lock, enabled, no send counter; the entries'
 * own call looks at ep->tx_plain, rivet_rdm_inject_locked's is under
 * the lock). */
static inline __attribute__((always_inline)) struct rivet_conn *
rivet_rdm_inject_conn(struct rivet_rdm_ep *ep, const void *buf, size_t len,
		      fi_addr_t dest, bool plain)
{
	struct rivet_conn *conn;

	if ((plain && !ep->tx_plain) || len >= ep->inj_lim ||
	    (!plain && ep->send_cntr) || !buf)
		return NULL;
	conn = plain ? rivet_conn_ready_on(ep, dest) :
		       rivet_conn_ready(ep, dest);
	if (!conn || conn->inj_out >= ep->inj_max)
		return NULL;
	return conn;
}

/* rivet_rdm_inject_post's post where the QP has no ibv_wr_* API: the
 * connection's ibv_send_wr, the payload in the header's piece up to
 * RIVET_RDM_INJ_PIECE bytes, else in a piece of its own. */
static __attribute__((noinline)) int
rivet_rdm_inject_send(struct rivet_conn *conn, const void *buf, size_t len,
		      bool tagged, unsigned int flags)
{
	struct ibv_send_wr *wr = &conn->inj_send, *bad;

	if (len <= RIVET_RDM_INJ_PIECE) {	/* one piece */
		rivet_copy_small(conn->inj_tail, buf, len);
		conn->inj_sge[0].length =
			(uint32_t)(sizeof(struct rivet_wire_hdr) + len);
		wr->num_sge = 1;
	} else {
		conn->inj_sge[0].length = sizeof(struct rivet_wire_hdr);
		conn->inj_sge[1].addr = (uintptr_t)buf;
		conn->inj_sge[1].length = (uint32_t)len;
		wr->num_sge = 2;
	}
	wr->wr_id = (uintptr_t)&conn->inj_wr[tagged];
	wr->send_flags = flags;
	return ibv_post_send(conn->qp, wr, &bad);
}

/* A short-path post the QP refused, undone: the counts as they were
 * before (rivet_rdm_inject_post counted it first). */
static __attribute__((noinline)) ssize_t
rivet_rdm_inject_refused(struct rivet_conn *conn)
{
	conn->inj_out--;
	conn->inj_seq = conn->inj_seq ? conn->inj_seq - 1 :
					conn->ep->inj_signal - 1;
	RIVET_INFO(EP_DATA, "connection %u: a short inject was refused\n",
		   conn->idx);
	return -FI_EAGAIN;
}

/* The inject on conn (rivet_rdm_inject_conn's): 0, or -FI_EAGAIN.  It is
 * counted before it is posted: after the verbs calls only conn is
 * needed.  In functions of their own, one per kind (tagged or not: its
 * wr_id a constant), which the plain entries call last (a tail call:
 * their frames save nothing). */
static inline __attribute__((always_inline)) ssize_t
rivet_rdm_inject_post_kind(struct rivet_conn *conn, const void *buf,
			   size_t len, uint64_t data, uint64_t tag,
			   uint16_t wflags, bool tagged)
{
	struct rivet_wire_hdr *hdr = &conn->inj_hdr;
	struct ibv_qp_ex *qx;
	unsigned int flags, seq;
	int err;

	/* the connection's own send: version, op, the peer's index, the
	 * header's piece, the opcode were set with it; inline, the lkeys
	 * are not looked at */
	hdr->flags = wflags;
	hdr->tag = tag;
	hdr->data = data;
	hdr->len = len;
	seq = conn->inj_seq + 1;
	flags = IBV_SEND_INLINE;
	if (seq == conn->ep->inj_signal) {
		flags |= IBV_SEND_SIGNALED;
		seq = 0;
	}
	conn->inj_seq = seq;
	conn->inj_out++;
	qx = conn->inj_qpx;
	if (__builtin_expect(qx != NULL, 1)) {
		/* the QP's work-request API (FI_RIVET_WR_API): the device
		 * fills its queue entry from the few fields given instead of
		 * translating a whole ibv_send_wr (on rxe, 151 instructions
		 * in the four calls against 190 in rxe_post_send); header and
		 * payload in one piece, whatever the size (librxe 44's
		 * ibv_wr_set_inline_data_list loses the length).  wr_id and
		 * wr_flags are read by the builder (ibv_wr_send), which
		 * ibv_wr_post(3) asks them to be set before; ibv_wr_start
		 * leaves them, and what serializes its critical region (the
		 * endpoint's lock, or the application under
		 * FI_THREAD_DOMAIN) holds here already. */
		qx->wr_id = (uintptr_t)&conn->inj_wr[tagged];
		qx->wr_flags = flags;
		rivet_copy_small(conn->inj_tail, buf, len);
		ibv_wr_start(qx);
		ibv_wr_send(qx);
		ibv_wr_set_inline_data(qx, hdr, sizeof(*hdr) + len);
		err = ibv_wr_complete(qx);
	} else {
		err = rivet_rdm_inject_send(conn, buf, len, tagged, flags);
	}
	return __builtin_expect(err, 0) ? rivet_rdm_inject_refused(conn) : 0;
}

static __attribute__((noinline)) ssize_t
rivet_rdm_inject_post_tagged(struct rivet_conn *conn, const void *buf,
			     size_t len, uint64_t data, uint64_t tag,
			     uint16_t wflags)
{
	return rivet_rdm_inject_post_kind(conn, buf, len, data, tag, wflags,
					  true);
}

static __attribute__((noinline)) ssize_t
rivet_rdm_inject_post_msg(struct rivet_conn *conn, const void *buf,
			  size_t len, uint64_t data, uint16_t wflags)
{
	return rivet_rdm_inject_post_kind(conn, buf, len, data, 0, wflags,
					  false);
}

/* wflags: the header's (RIVET_WF_TAGGED says which kind) */
static inline __attribute__((always_inline)) ssize_t
rivet_rdm_inject_post(struct rivet_conn *conn, const void *buf, size_t len,
		      uint64_t data, uint64_t tag, uint16_t wflags)
{
	if (wflags & RIVET_WF_TAGGED)
		return rivet_rdm_inject_post_tagged(conn, buf, len, data, tag,
						    wflags);
	return rivet_rdm_inject_post_msg(conn, buf, len, data, wflags);
}

/* The short path under the endpoint's lock (not ep->tx_plain). */
static __attribute__((noinline)) ssize_t
rivet_rdm_inject_locked(struct rivet_rdm_ep *ep, const void *buf, size_t len,
			uint64_t data, fi_addr_t dest, uint64_t tag,
			uint16_t wflags)
{
	struct rivet_conn *conn;
	ssize_t ret = RIVET_RDM_SLOW;

	rivet_rdm_lock(ep);
	conn = rivet_rdm_inject_conn(ep, buf, len, dest, false);
	if (conn)
		ret = rivet_rdm_inject_post(conn, buf, len, data, tag, wflags);
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

static ssize_t rivet_rdm_tsend_common(struct fid_ep *fid, const void *buf,
				      size_t len, void *desc, uint64_t data,
				      fi_addr_t dest, uint64_t tag,
				      void *context, uint64_t flags);

/* Every inject that the short path does not post at once (the entries'
 * call of it is last: their frames hold nothing for it): under the lock
 * when the endpoint takes one (rivet_rdm_inject_locked), else, or when
 * that does not post it either, the general path. */
static __attribute__((noinline)) ssize_t
rivet_rdm_inject_any(struct fid_ep *fid, const void *buf, size_t len,
		     uint64_t data, fi_addr_t dest, uint64_t tag,
		     uint16_t wflags)
{
	struct rivet_rdm_ep *ep = to_rrdm(fid);
	uint64_t flags = FI_INJECT | RIVET_RDM_SILENT;
	ssize_t ret;

	if (!ep->tx_plain) {
		ret = rivet_rdm_inject_locked(ep, buf, len, data, dest, tag,
					      wflags);
		if (ret != RIVET_RDM_SLOW)
			return ret;
	}
	if (wflags & RIVET_WF_CQ_DATA)
		flags |= FI_REMOTE_CQ_DATA;
	if (wflags & RIVET_WF_TAGGED)
		return rivet_rdm_tsend_common(fid, buf, len, NULL, data, dest,
					      tag, NULL, flags);
	return rivet_rdm_msg_send(fid, buf, len, NULL, data, dest, NULL,
				  flags);
}

/* The four injects: the short path inline, then a tail call
 * (rivet_rdm_inject_post, or rivet_rdm_inject_any). */
static inline __attribute__((always_inline)) ssize_t
rivet_rdm_inject_entry(struct fid_ep *fid, const void *buf, size_t len,
		       uint64_t data, fi_addr_t dest, uint64_t tag,
		       uint16_t wflags)
{
	struct rivet_conn *conn = rivet_rdm_inject_conn(to_rrdm(fid), buf, len,
							dest, true);

	if (__builtin_expect(conn != NULL, 1))
		return rivet_rdm_inject_post(conn, buf, len, data, tag, wflags);
	return rivet_rdm_inject_any(fid, buf, len, data, dest, tag, wflags);
}

static ssize_t rivet_rdm_inject(struct fid_ep *fid, const void *buf,
				size_t len, fi_addr_t dest)
{
	return rivet_rdm_inject_entry(fid, buf, len, 0, dest, 0, 0);
}

static ssize_t rivet_rdm_injectdata(struct fid_ep *fid, const void *buf,
				    size_t len, uint64_t data, fi_addr_t dest)
{
	return rivet_rdm_inject_entry(fid, buf, len, data, dest, 0,
				      RIVET_WF_CQ_DATA);
}

/* The two halves of the RDM message and tagged tables; the endpoint
 * takes both, a shared receive context the receives, a scalable
 * endpoint's transmit context the sends. */
#define RIVET_RDM_MSG_RECVS \
	.recv = rivet_rdm_recv1, .recvv = rivet_rdm_recvv, \
	.recvmsg = rivet_rdm_recvmsg
#define RIVET_RDM_MSG_SENDS \
	.send = rivet_rdm_send1, .sendv = rivet_rdm_sendv, \
	.sendmsg = rivet_rdm_sendmsg, .inject = rivet_rdm_inject, \
	.senddata = rivet_rdm_senddata, .injectdata = rivet_rdm_injectdata

struct fi_ops_msg g_rivet_rdm_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	RIVET_RDM_MSG_RECVS,
	RIVET_RDM_MSG_SENDS,
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

static ssize_t rivet_rdm_tinject(struct fid_ep *fid, const void *buf,
				 size_t len, fi_addr_t dest, uint64_t tag)
{
	return rivet_rdm_inject_entry(fid, buf, len, 0, dest, tag,
				      RIVET_WF_TAGGED);
}

static ssize_t rivet_rdm_tinjectdata(struct fid_ep *fid, const void *buf,
				     size_t len, uint64_t data, fi_addr_t dest,
				     uint64_t tag)
{
	return rivet_rdm_inject_entry(fid, buf, len, data, dest, tag,
				      RIVET_WF_TAGGED | RIVET_WF_CQ_DATA);
}

#define RIVET_RDM_TAGGED_RECVS \
	.recv = rivet_rdm_trecv, .recvv = rivet_rdm_trecvv, \
	.recvmsg = rivet_rdm_trecvmsg
#define RIVET_RDM_TAGGED_SENDS \
	.send = rivet_rdm_tsend, .sendv = rivet_rdm_tsendv, \
	.sendmsg = rivet_rdm_tsendmsg, .inject = rivet_rdm_tinject, \
	.senddata = rivet_rdm_tsenddata, .injectdata = rivet_rdm_tinjectdata

struct fi_ops_tagged g_rivet_rdm_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	RIVET_RDM_TAGGED_RECVS,
	RIVET_RDM_TAGGED_SENDS,
};

/* A shared receive context's: receives only. */
struct fi_ops_msg g_rivet_rdm_srx_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	RIVET_RDM_MSG_RECVS,
	RIVET_NO_MSG_SENDS,
};

struct fi_ops_tagged g_rivet_rdm_srx_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	RIVET_RDM_TAGGED_RECVS,
	RIVET_NO_TAGGED_SENDS,
};

/* A scalable endpoint's transmit contexts: sends only. */
struct fi_ops_msg g_rivet_rdm_txc_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	RIVET_NO_MSG_RECVS,
	RIVET_RDM_MSG_SENDS,
};

struct fi_ops_tagged g_rivet_rdm_txc_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	RIVET_NO_TAGGED_RECVS,
	RIVET_RDM_TAGGED_SENDS,
};

/* A scalable endpoint itself: neither (its contexts carry the data). */
struct fi_ops_msg g_rivet_rdm_sep_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	RIVET_NO_MSG_RECVS,
	RIVET_NO_MSG_SENDS,
};
