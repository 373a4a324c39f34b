/* SPDX-License-Identifier: MIT */
/*
 * The eager protocol: a header and the payload in one send from a
 * registered staging slot; at the target a message (eager, or a
 * rendezvous RTS) is matched on arrival, and an eager payload is copied
 * out of the SRQ bounce buffer into the matched receive, or kept as
 * unexpected.  Arriving messages are dispatched in rivet_rdm_progress.c.
 */
#include <stdlib.h>

#include "rivet_iov.h"
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

static size_t rivet_copy_to_iov(const struct iovec *iov, size_t count,
				const uint8_t *src, size_t len)
{
	size_t i, n, done = 0;

	if (count == 1) {
		n = RIVET_MIN(iov[0].iov_len, len);
		rivet_copy_small(iov[0].iov_base, src, n);
		return n;
	}
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
	struct iovec one, *iov = rx->iov;
	struct rivet_cq_entry e;
	size_t count = rx->count, n;
	void *desc;

	/* a multi-receive buffer's next piece; else the receive's own */
	if (rx->multi)
		count = rivet_rx_target(ep, rx, hdr->len, iov = &one, &desc);
	n = rivet_copy_to_iov(iov, count, payload, hdr->len);
	rivet_rx_fill_comp(rx, conn, hdr, n, &e);
	e.buf = iov[0].iov_base;
	if (n < hdr->len) {
		e.err = FI_ETRUNC;
		e.olen = hdr->len - n;
	}
	if (rivet_rx_finished(ep, rx)) {
		/* the buffer's last completion says it is given back: with
		 * rendezvous into it still reading, the last of them does */
		if (rx->multi && rx->rndv_out)
			rx->release_owed = true;
		else if (rx->multi)
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
	u->claim_ctx = NULL;
	u->src = rivet_conn_src(conn);
	if (u->src == FI_ADDR_NOTAVAIL && !conn->active)
		ep->rxq->unresolved = true;	/* rivet_rdm_rxq_resolve */
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
		rivet_match_msg_insert(rivet_rdm_match(ep, true), &u->me,
				       u->src, u->tag);
	else
		rivet_match_msg_insert(rivet_rdm_match(ep, false), &u->me,
				       u->src, 0);
}

/* What an arriving message does once matching found r (NULL: no posted
 * receive takes it); the common eager case never comes here
 * (rivet_rx_eager in rivet_rdm_progress.c). */
void rivet_rx_matched(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
		      const struct rivet_wire_hdr *hdr, const void *payload,
		      const void *rts, struct rivet_match_recv *r)
{
	struct rivet_rx_op *rx = container_of(r, struct rivet_rx_op, me);

	if (!r)
		rivet_rx_unexpected(ep, conn, hdr, payload, rts);
	else if (payload)
		rivet_rx_deliver_eager(ep, rx, conn, hdr, payload);
	else
		rivet_rndv_start(ep, rx, conn, hdr, rts);
}

void rivet_rx_arrive(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
		     const struct rivet_wire_hdr *hdr, const void *payload,
		     const void *rts)
{
	bool tagged = hdr->flags & RIVET_WF_TAGGED;

	if (tagged)
		rivet_rdm_unsolo(ep->rxq);
	/* a receive's source is FI_ADDR_UNSPEC without FI_DIRECTED_RECV */
	rivet_rx_matched(ep, conn, hdr, payload, rts,
			 rivet_match_recv_find(rivet_rdm_match(ep, tagged),
					       rivet_conn_src(conn),
					       tagged ? hdr->tag : 0));
}
