/* SPDX-License-Identifier: MIT */
/*
 * The eager protocol: a header and the payload in one send from a
 * registered staging slot; at the target the payload is copied out of the
 * SRQ bounce buffer into the matched receive, or kept as unexpected.
 * Also the arrival dispatch of every RDM message.
 */
#include <stdlib.h>

#include "rivet_rdm.h"

int rivet_eager_send(struct rivet_rdm_ep *ep, struct rivet_tx_op *op)
{
	struct rivet_wire_hdr *hdr = (struct rivet_wire_hdr *)op->buf;
	int ret;

	hdr->conn_idx = op->conn->peer_idx;
	ret = rivet_conn_post_send(op->conn, (uintptr_t)op, op->buf,
				   op->buf_len, ep->slab_mr->lkey);
	if (!ret)
		op->state = RIVET_TX_POSTED;
	return ret;
}

/* A free tx op (progress first when there is none), or NULL: the send
 * queue's depth is used up. */
struct rivet_tx_op *rivet_tx_op_get(struct rivet_rdm_ep *ep)
{
	struct rivet_tx_op *op = ep->tx_free;

	if (!op) {
		rivet_rdm_progress_locked(ep);
		op = ep->tx_free;
	}
	if (op)
		LL_DELETE(ep->tx_free, op);
	return op;
}

void rivet_tx_op_done(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
		      int err, int prov_errno)
{
	struct rivet_cq_entry e = {
		.op_context = op->context, .flags = op->cq_flags,
		.err = err, .prov_errno = prov_errno, .src = FI_ADDR_NOTAVAIL,
	};
	struct rivet_conn *conn = op->counted ? op->conn : NULL;

	if (op->atomic)
		op->wr.count = 0;	/* its results are in already */
	if (op->rma || op->atomic)
		rivet_rma_complete(ep, op, &e);
	else
		rivet_rdm_complete(ep, true, &e, op->report);
	rivet_rndv_release_op(ep, op);
	op->rma = false;
	op->atomic = false;
	op->fenced = false;
	op->counted = false;
	op->state = RIVET_TX_FREE;
	op->gen++;
	LL_PREPEND(ep->tx_free, op);
	if (conn)
		rivet_conn_op_done(conn);
}

void rivet_rx_fill_comp(struct rivet_rx_op *rx, struct rivet_conn *conn,
			const struct rivet_wire_hdr *hdr, size_t len,
			struct rivet_cq_entry *e)
{
	*e = (struct rivet_cq_entry) {
		.op_context = rx->context, .flags = rx->cq_flags, .len = len,
		.tag = hdr->tag, .src = conn ? rivet_conn_src(conn) :
					       FI_ADDR_NOTAVAIL,
	};
	if (hdr->flags & RIVET_WF_CQ_DATA) {
		e->flags |= FI_REMOTE_CQ_DATA;
		e->data = hdr->data;
	}
	if (!(rx->cq_flags & FI_TAGGED))
		e->tag = 0;
}

void rivet_rx_retire(struct rivet_rdm_ep *ep, struct rivet_rx_op *rx)
{
	if (rx->posted) {
		rivet_match_recv_remove(rivet_rdm_match(ep, rx->cq_flags &
							FI_TAGGED), &rx->me);
		rx->posted = false;
	}
	rx->released = true;
	if (!rx->inflight)
		rivet_rx_op_free(ep, rx);
}

/* Receive operations are kept on a free list (a malloc and a free per
 * receive cost more than the rest of an eager receive). */
void rivet_rx_op_free(struct rivet_rdm_ep *ep, struct rivet_rx_op *rx)
{
	ep->rx_ops_used--;
	rx->next = ep->rx_free;
	ep->rx_free = rx;
}

size_t rivet_rx_target(struct rivet_rdm_ep *ep, struct rivet_rx_op *rx,
		       size_t msg_len, struct iovec *iov, void **desc)
{
	size_t cap, i;

	if (!rx->multi) {	/* a few entries: no memcpy calls */
		for (i = 0; i < rx->count; i++) {
			iov[i] = rx->iov[i];
			desc[i] = rx->desc[i];
		}
		return rx->count;
	}
	cap = rx->len - rx->offset;
	iov[0].iov_base = (uint8_t *)rx->iov[0].iov_base + rx->offset;
	iov[0].iov_len = RIVET_MIN(cap, msg_len);
	desc[0] = rx->desc[0];
	rx->offset += iov[0].iov_len;
	return 1;
}

static size_t rivet_copy_to_iov(const struct iovec *iov, size_t count,
				const uint8_t *src, size_t len)
{
	size_t i, n, done = 0;

	for (i = 0; i < count && done < len; i++) {
		n = RIVET_MIN(iov[i].iov_len, len - done);
		memcpy(iov[i].iov_base, src + done, n);
		done += n;
	}
	return done;
}

static bool rivet_rx_finished(struct rivet_rdm_ep *ep, struct rivet_rx_op *rx)
{
	return !rx->multi || rx->len - rx->offset < ep->min_multi_recv;
}

void rivet_rx_deliver_eager(struct rivet_rdm_ep *ep, struct rivet_rx_op *rx,
			    struct rivet_conn *conn,
			    const struct rivet_wire_hdr *hdr,
			    const void *payload)
{
	struct iovec iov[RIVET_RDM_IOV_LIMIT];
	void *desc[RIVET_RDM_IOV_LIMIT];
	struct rivet_cq_entry e;
	size_t count, n;

	count = rivet_rx_target(ep, rx, hdr->len, iov, desc);
	n = rivet_copy_to_iov(iov, count, payload, hdr->len);
	rivet_rx_fill_comp(rx, conn, hdr, n, &e);
	e.buf = iov[0].iov_base;
	if (n < hdr->len) {
		e.err = FI_ETRUNC;
		e.olen = hdr->len - n;
	}
	if (rivet_rx_finished(ep, rx)) {
		if (rx->multi)
			e.flags |= FI_MULTI_RECV;
		rivet_rdm_complete(ep, false, &e, rx->report);
		rivet_rx_retire(ep, rx);
		return;
	}
	rivet_rdm_complete(ep, false, &e, rx->report);
}

static void rivet_rx_unexpected(struct rivet_rdm_ep *ep,
				struct rivet_conn *conn,
				const struct rivet_wire_hdr *hdr,
				const void *payload, const void *rts)
{
	size_t plen = payload ? hdr->len : 0;
	struct rivet_unexp *u = malloc(sizeof(*u) + plen);

	if (!u) {
		RIVET_WARN(EP_DATA, "out of memory: message dropped\n");
		return;
	}
	u->conn = conn;
	u->src = rivet_conn_src(conn);
	u->op = hdr->op;
	u->wflags = hdr->flags;
	u->tag = hdr->tag;
	u->data = hdr->data;
	u->len = hdr->len;
	if (payload)
		memcpy(u->payload, payload, plen);
	if (rts)
		memcpy(&u->rts, rts, sizeof(u->rts));
	if (hdr->flags & RIVET_WF_TAGGED)
		rivet_match_msg_insert(&ep->match_tag, &u->me, u->src, u->tag);
	else
		rivet_match_msg_insert(&ep->match_msg, &u->me, u->src, 0);
}

static void rivet_rx_arrive(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
			    const struct rivet_wire_hdr *hdr,
			    const void *payload, const void *rts)
{
	bool tagged = hdr->flags & RIVET_WF_TAGGED;
	struct rivet_match_recv *r;
	struct rivet_rx_op *rx;

	/* a receive's source is FI_ADDR_UNSPEC without FI_DIRECTED_RECV */
	r = rivet_match_recv_find(rivet_rdm_match(ep, tagged),
				  rivet_conn_src(conn), tagged ? hdr->tag : 0);
	rx = container_of(r, struct rivet_rx_op, me);
	if (!r)
		rivet_rx_unexpected(ep, conn, hdr, payload, rts);
	else if (payload)
		rivet_rx_deliver_eager(ep, rx, conn, hdr, payload);
	else
		rivet_rndv_start(ep, rx, conn, hdr, rts);
}

/* A header that names another connection than the QP it came on (never
 * from a rivet peer): the QP's owner, or NULL. */
static struct rivet_conn *rivet_rx_conn_slow(struct rivet_rdm_ep *ep,
					     const struct rivet_wire_hdr *hdr,
					     uint32_t qp_num)
{
	RIVET_DBG(EP_DATA, "header names connection %u, came on qp 0x%x\n",
		  hdr->conn_idx, qp_num);
	return rivet_conn_of_qp(ep, qp_num);
}

/* The connection a message came on: the one its header names, when that
 * is the QP it arrived on (always, from a rivet peer), else the one that
 * owns the QP; NULL when no connection of ours does. */
static inline struct rivet_conn *rivet_rx_conn(struct rivet_rdm_ep *ep,
					       const struct rivet_wire_hdr *hdr,
					       uint32_t qp_num)
{
	struct rivet_conn *conn;

	if (hdr->conn_idx < ep->nconns) {
		conn = ep->conns[hdr->conn_idx];
		if (conn->qp && conn->qp->qp_num == qp_num)
			return conn;
	}
	return rivet_rx_conn_slow(ep, hdr, qp_num);
}

/* An eager message is checked inline (the common case), the rest by
 * rivet_wire_check. */
static inline bool rivet_rx_whole(const struct rivet_wire_hdr *hdr,
				  size_t len)
{
	if (len >= sizeof(*hdr) && hdr->op == RIVET_OP_EAGER &&
	    hdr->version == RIVET_WIRE_VERSION &&
	    hdr->len <= len - sizeof(*hdr))
		return true;
	return !rivet_wire_check(hdr, len);
}

void rivet_proto_handle_rx(struct rivet_rdm_ep *ep, struct rivet_rdm_buf *buf,
			   size_t len, uint32_t qp_num)
{
	const struct rivet_wire_hdr *hdr = (const void *)buf->data;
	const uint8_t *body = buf->data + sizeof(*hdr);
	struct rivet_conn *conn;

	RIVET_MEM_DEFINED(buf->data, len);
	conn = rivet_rx_whole(hdr, len) ? rivet_rx_conn(ep, hdr, qp_num) :
					  NULL;
	if (!conn) {
		RIVET_WARN(EP_DATA, "malformed message on qp 0x%x dropped\n",
			   qp_num);
		goto repost;
	}
	switch (hdr->op) {
	case RIVET_OP_EAGER:
		rivet_rx_arrive(ep, conn, hdr, body, NULL);
		break;
	case RIVET_OP_RTS:
		rivet_rx_arrive(ep, conn, hdr, NULL, body);
		break;
	case RIVET_OP_ATOMIC:
		rivet_atomic_handle_req(ep, conn, hdr, len);
		break;
	case RIVET_OP_ATOMIC_RESP:
		rivet_atomic_handle_resp(ep, conn, hdr, len);
		break;
	case RIVET_OP_RMA_EVENT:
		rivet_rma_handle_event(ep, conn, hdr);
		break;
	default:
		rivet_rndv_handle_fin(ep, conn, (const void *)body);
		break;
	}
repost:
	rivet_rdm_srq_post(ep, buf);
}
