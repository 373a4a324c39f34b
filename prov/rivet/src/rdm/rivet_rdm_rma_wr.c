/* SPDX-License-Identifier: MIT */
/*
 * The work requests behind an RMA operation's own: its tail (the
 * zero-byte READ of a delivery-complete write or FI_RIVET_CONFIRM's
 * witness, then the RMA event message), and the pieces of a read or
 * write longer than FI_RIVET_RDMA_SEG.
 *
 * A long read or write on such a device (rxe: rivet_retry.c) is posted as
 * pieces of at most rdma_seg bytes each, RIVET_RMA_SEG_WINDOW of them in
 * flight: each piece's completion posts the next one, and the tail goes
 * with the last.  The operation completes when every work request it
 * posted has.  A write with remote CQ data is never cut: its target
 * reports the length of the one work request that carried the data.
 */
#include "rivet_rdm.h"

/* Whether op sends an RMA event, settled when it is first posted: its
 * reservation (rivet_rma_take_ctrl) is given back when the peer wants
 * none. */
void rivet_rma_event_settle(struct rivet_rdm_ep *ep, struct rivet_tx_op *op)
{
	unsigned int own = op->wr.delivery ? 2 : 1;

	op->wr.event = op->conn->peer_rma_event;
	if (op->wr.event && op->wr.ctrl_held < own) {
		op->wr.event = false;	/* cannot happen: reserved at start */
		RIVET_WARN(EP_DATA, "no room for an RMA event\n");
	} else if (!op->wr.event && op->wr.ctrl_held >= own) {
		ep->ctrl_free++;	/* the reservation was not needed */
		op->wr.ctrl_held--;
	}
}

int rivet_rma_add_tail(struct rivet_tx_op *op, struct ibv_send_wr *wr, int n,
		       struct rivet_rma_tail *m, struct ibv_sge *ev_sge)
{
	struct rivet_rma_wr *r = &op->wr;

	if (r->delivery) {
		/*
		 * Zero bytes: C9-88 asks no valid key of it; ours is, except
		 * on rxe (Linux 6.12, rxe_resp.c), which records a zero-byte
		 * read's key as 0 and so drops the same read sent again (its
		 * response lost) when it carries another: the read is retried
		 * until its QP fails.  rxe has one more defect with them that
		 * no key avoids: a read sent again right after a zero-byte
		 * read or write is answered without its memory region (a
		 * WARNING at rxe_mr.c:395) and fails as a remote access
		 * error; so on rxe they come only where asked for
		 * (FI_DELIVERY_COMPLETE, FI_RIVET_CONFIRM=1).
		 */
		wr[n] = (struct ibv_send_wr) {
			.wr_id = (uintptr_t)op, .opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = r->raddr,
				     .rkey = op->conn->ep->zero_read_key0 ?
					     0 : r->rkey },
		};
		wr[n - 1].next = &wr[n];
		n++;
	}
	if (!r->event)
		return n;
	m->hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_RMA_EVENT,
		.conn_idx = op->conn->peer_idx,
	};
	m->ev = (struct rivet_wire_rma_event) {
		.addr = r->raddr, .len = op->len, .rkey = r->rkey,
		.flags = (r->opcode == IBV_WR_RDMA_READ || r->fetch ?
			  RIVET_RMA_EV_READ : 0) |
			 (r->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
			  r->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
			  RIVET_RMA_EV_ATOMIC : 0) |
			 (r->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ?
			  RIVET_RMA_EV_REGION_ONLY : 0),
	};
	*ev_sge = (struct ibv_sge) { .addr = (uintptr_t)m,
				     .length = sizeof(*m) };
	/* inline: m lives on the caller's stack only */
	wr[n] = (struct ibv_send_wr) {
		.wr_id = (uintptr_t)op, .sg_list = ev_sge, .num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
	};
	wr[n - 1].next = &wr[n];
	return n + 1;
}

/*
 * Posts up to max more pieces of op (a read or write cut into rdma_seg
 * pieces),
 * with its tail behind the last; returns how many work requests went, or
 * a negative error when none did (op->wr.seg_off as it was).  A QP that
 * took some and refused the rest: op->wr.err is set, the pieces that went
 * are counted.
 */
int rivet_rma_seg_post(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
		       unsigned int max)
{
	struct rivet_rma_wr *r = &op->wr;
	struct ibv_send_wr wr[RIVET_RMA_SEG_WINDOW + 2], *bad;
	struct ibv_sge sges[RIVET_RMA_SEG_WINDOW][RIVET_RDM_IOV_LIMIT];
	struct rivet_rma_tail m;
	struct ibv_sge ev_sge;
	uint64_t off = r->seg_off, part;
	int n = 0, ret;

	max = RIVET_MIN(max, (unsigned int)RIVET_RMA_SEG_WINDOW);
	while (n < (int)max && off < op->len) {
		part = RIVET_MIN(op->len - off, ep->rdma_seg);
		wr[n] = (struct ibv_send_wr) {
			.wr_id = (uintptr_t)op, .sg_list = sges[n],
			.num_sge = rivet_sge_slice(r->sges, r->nsge, off, part,
						   sges[n]),
			.opcode = r->opcode,
			/* a fence holds the first piece; never inline: an
			 * inline write is shorter than a piece */
			.send_flags = IBV_SEND_SIGNALED |
				      (off ? 0 : r->send_flags &
						 IBV_SEND_FENCE),
			.wr.rdma = { .remote_addr = r->raddr + off,
				     .rkey = r->rkey },
		};
		if (n)
			wr[n - 1].next = &wr[n];
		n++;
		off += part;
	}
	if (!n)
		return 0;
	if (off == op->len)
		n = rivet_rma_add_tail(op, wr, n, &m, &ev_sge);
	ret = ibv_post_send(op->conn->qp, wr, &bad);
	if (ret && bad == wr) {
		RIVET_DBG(EP_DATA, "ibv_post_send: %s\n", strerror(ret));
		return ret == ENOMEM ? -FI_EAGAIN : rivet_errno_to_fi(ret);
	}
	r->seg_off = off;
	if (ret) {		/* the first went, not all that followed */
		r->err = FI_EIO;
		return (int)(bad - wr);
	}
	return n;
}
