/* SPDX-License-Identifier: MIT */
/*
 * RDM operations: the pool of tx ops (one per send, RMA or atomic in
 * flight, bounded by tx_size), the registrations they hold, and their
 * completion; the completion and retirement of rx ops (posted receives).
 */
#include "rivet_rdm.h"

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

void rivet_op_mrs_release(struct rivet_rdm_ep *ep,
			  struct rivet_mr_entry **mrs, size_t *nmrs,
			  struct rivet_mr **busy, size_t *nbusy)
{
	while (*nmrs)
		rivet_mr_put(ep->domain, mrs[--*nmrs]);
	while (*nbusy)
		atomic_fetch_sub(&busy[--*nbusy]->busy, 1);
}

void rivet_tx_op_release(struct rivet_rdm_ep *ep, struct rivet_tx_op *op)
{
	rivet_op_mrs_release(ep, op->mrs, &op->nmrs, op->busy, &op->nbusy);
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
	rivet_tx_op_release(ep, op);
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

/* The send of context on list (a connection's queued or wait_fin), or
 * NULL.  RMA and atomics are not cancelled: they may have taken effect
 * at the target. */
static struct rivet_tx_op *rivet_tx_op_find(struct rivet_tx_op *list,
					    void *context)
{
	struct rivet_tx_op *op;

	DL_FOREACH(list, op)
		if (op->context == context && !op->rma && !op->atomic)
			return op;
	return NULL;
}

ssize_t rivet_rdm_cancel_tx(struct rivet_rdm_ep *ep, void *context)
{
	struct rivet_conn *conn;
	struct rivet_tx_op *op;
	size_t i;

	for (i = 0; context && i < ep->nconns; i++) {
		conn = ep->conns[i];
		op = rivet_tx_op_find(conn->queued, context);
		if (op) {
			DL_DELETE(conn->queued, op);
		} else {
			op = rivet_tx_op_find(conn->wait_fin, context);
			if (!op)
				continue;
			DL_DELETE(conn->wait_fin, op);
		}
		rivet_tx_op_done(ep, op, FI_ECANCELED, 0);
		return 0;
	}
	return -FI_ENOENT;
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
		if (ep->rxq->solo == rx)
			ep->rxq->solo = NULL;
		else
			rivet_match_recv_remove(rivet_rdm_match(ep,
					rx->cq_flags & FI_TAGGED), &rx->me);
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
	rivet_rdm_rxq_put(ep->rxq, rx);
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
