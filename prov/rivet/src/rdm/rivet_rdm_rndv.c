/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous protocol: the sender exposes its buffer in an RTS (rkeys
 * of up to four segments), the receiver RDMA-reads straight into the
 * matched receive buffer and answers with a FIN that completes the send.
 */
#include <stdlib.h>

#include "rivet_rdm.h"

/*
 * The registration a rendezvous uses for one buffer: the application's
 * when it allows the access (held busy until the operation ends), else
 * one of the operation's own.  A buffer without a descriptor takes it
 * from the registration cache (a peer may then read those bytes while
 * they stay cached: fi_rivet(7), REGISTRATION CACHE).  A region the
 * application registered without FI_REMOTE_READ is never exposed: the
 * peer reads an own registration of the message's bytes that is never
 * cached, so its life ends with the send.
 */
static int rivet_rndv_mr(struct rivet_rdm_ep *ep, void *desc, void *base,
			 size_t len, int access, uint32_t *lkey_p,
			 uint32_t *rkey_p, struct rivet_mr_entry **own_p,
			 struct rivet_mr **busy_p)
{
	struct rivet_mr *mr = desc;
	int ret;

	*own_p = NULL;
	*busy_p = NULL;
	/* ibv_access is exactly what the application asked for */
	if (mr && (mr->ibv_access & access) == access) {
		atomic_fetch_add(&mr->busy, 1);
		*busy_p = mr;
		*lkey_p = mr->ibv_mr->lkey;
		*rkey_p = mr->ibv_mr->rkey;
		return 0;
	}
	ret = rivet_mr_get(ep->domain, base, len, access,
			   !mr || !(access & IBV_ACCESS_REMOTE_READ), own_p);
	if (ret)
		return ret;
	*lkey_p = (*own_p)->lkey;
	*rkey_p = (*own_p)->rkey;
	return 0;
}

int rivet_rndv_prepare(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
		       const struct iovec *iov, void **desc, size_t count)
{
	struct rivet_wire_hdr *hdr = (struct rivet_wire_hdr *)op->buf;
	struct rivet_wire_rts *rts = (struct rivet_wire_rts *)(hdr + 1);
	struct rivet_mr_entry *own;
	struct rivet_mr *busy;
	uint32_t lkey, rkey;
	size_t i;
	int ret;

	memset(rts, 0, sizeof(*rts));
	rts->send_id = rivet_wire_send_id(op->gen, op->index);
	for (i = 0; i < count; i++) {
		if (!iov[i].iov_len)
			continue;
		ret = rivet_rndv_mr(ep, desc ? desc[i] : NULL,
				    iov[i].iov_base, iov[i].iov_len,
				    IBV_ACCESS_REMOTE_READ, &lkey, &rkey,
				    &own, &busy);
		if (ret) {
			rivet_tx_op_release(ep, op);
			return ret;
		}
		if (own)
			op->mrs[op->nmrs++] = own;
		if (busy)
			op->busy[op->nbusy++] = busy;
		rts->segs[rts->nsegs++] = (struct rivet_wire_seg) {
			.addr = (uintptr_t)iov[i].iov_base, .rkey = rkey,
			.len = iov[i].iov_len,
		};
	}
	hdr->op = RIVET_OP_RTS;
	op->buf_len = sizeof(*hdr) + sizeof(*rts);
	op->rndv = true;
	return 0;
}

/* ---- receiver: reads ---- */

static int rivet_rndv_register(struct rivet_rdm_ep *ep,
			       struct rivet_rndv_rx *r, void **desc,
			       uint32_t *lkeys)
{
	struct rivet_mr_entry *own;
	struct rivet_mr *busy;
	uint32_t rkey;
	size_t i;
	int ret;

	for (i = 0; i < r->count; i++) {
		if (!r->iov[i].iov_len)
			continue;
		ret = rivet_rndv_mr(ep, desc[i], r->iov[i].iov_base,
				    r->iov[i].iov_len, IBV_ACCESS_LOCAL_WRITE,
				    &lkeys[i], &rkey, &own, &busy);
		if (ret)
			return ret;
		if (own)
			r->mrs[r->nmrs++] = own;
		if (busy)
			r->busy[r->nbusy++] = busy;
	}
	return 0;
}

/* Reports r (its completion as it stands) and frees it.  The last
 * rendezvous into a released multi-receive buffer gives the buffer back:
 * FI_MULTI_RECV on its completion, or the buffer's fi_cancel after it. */
static void rivet_rndv_report(struct rivet_rdm_ep *ep, struct rivet_rndv_rx *r)
{
	struct rivet_rx_op *rx = r->rx;
	bool last = rx && !--rx->rndv_out && rx->released;
	struct rivet_cq_entry e;

	if (last && rx->release_owed && !rx->cancel_owed)
		r->comp.flags |= FI_MULTI_RECV;
	rivet_rdm_complete(ep, false, &r->comp, r->report);
	if (last && rx->cancel_owed) {
		e = (struct rivet_cq_entry) {
			.op_context = rx->context, .err = FI_ECANCELED,
			.flags = rx->cq_flags | FI_MULTI_RECV,
			.src = FI_ADDR_NOTAVAIL,
		};
		rivet_rdm_complete(ep, false, &e, true);
	}
	rivet_op_mrs_release(ep, r->mrs, &r->nmrs, r->busy, &r->nbusy);
	if (r->rx && !--r->rx->inflight && r->rx->released)
		rivet_rx_retire(ep, r->rx);
	free(r);
}

void rivet_rndv_drop(struct rivet_rdm_ep *ep, struct rivet_rndv_rx *r)
{
	if (r->rx)
		r->rx->rndv_out--;
	rivet_op_mrs_release(ep, r->mrs, &r->nmrs, r->busy, &r->nbusy);
	/* its receive (a shared context's may outlive ep) is let go */
	if (r->rx && !--r->rx->inflight && r->rx->released)
		rivet_rx_retire(ep, r->rx);
	free(r);
}

void rivet_rndv_confirmed(struct rivet_rdm_ep *ep, struct rivet_rndv_rx *r,
			  bool ok)
{
	if (!ok) {
		RIVET_INFO(EP_DATA, "rendezvous %p (connection %u, send id "
			   "0x%" PRIx64 "): its FIN failed, the receive fails\n",
			   (void *)r, r->conn->idx, r->rts.send_id);
		rivet_rndv_unconfirmed(&r->comp);
	}
	rivet_rndv_report(ep, r);
}

/*
 * The reads are done.  The FIN tells the sender; the receive is reported
 * now, or, with FI_RIVET_CONFIRM (rxe), once the FIN is acknowledged:
 * a read rxe failed but called successful is followed by a QP in error,
 * and so by a FIN that fails (rivet_retry.c).
 */
static void rivet_rndv_finish(struct rivet_rdm_ep *ep, struct rivet_rndv_rx *r)
{
	int32_t fin_status;
	bool confirm;
	size_t i;

	for (i = 0; !r->status && i < r->count; i++)
		RIVET_MEM_DEFINED(r->iov[i].iov_base, r->iov[i].iov_len);
	fin_status = rivet_rndv_outcome(r->status, r->prov_errno, &r->comp);
	RIVET_DBG(EP_DATA, "rendezvous %p (connection %u, send id 0x%" PRIx64
		  "): %zu of %zu reads, status %d\n", (void *)r, r->conn->idx,
		  r->rts.send_id, r->reads_done, r->nreads, r->status);
	/* only data that was read needs a witness */
	confirm = ep->confirm && !fin_status && r->reads_done;
	if (r->conn->state == RIVET_CONN_CLOSED) {
		if (confirm)
			rivet_rndv_unconfirmed(&r->comp);
		rivet_rndv_report(ep, r);
		return;
	}
	if (!confirm) {
		rivet_rndv_send_fin(r->conn, r->rts.send_id, fin_status, NULL);
		rivet_rndv_report(ep, r);
		return;
	}
	if (rivet_rndv_send_fin(r->conn, r->rts.send_id, 0, r) == -FI_EIO)
		rivet_rndv_confirmed(ep, r, false);	/* not posted */
}

/* Whether r's bytes are not all asked for yet, and worth asking for. */
static bool rivet_rndv_more(const struct rivet_rndv_rx *r)
{
	/* a truncated message still gets the bytes that fit */
	return (!r->status || r->status == FI_ETRUNC) &&
	       r->planned < r->comp.len;
}

/*
 * Keeps up to 16 of r's reads in flight, each at most the port's message
 * size or, where reads are cut short (FI_RIVET_RDMA_SEG: rxe), that many
 * bytes: called again as each completes (rivet_rndv_read_done), so that
 * a read lost on the network is noticed by the ones behind it rather
 * than by a retry timeout.  Finishes r when nothing is in flight and
 * nothing more is to be read.  0 when posted (or finished, or waiting for
 * reads in flight), -FI_EAGAIN when it must wait for room.
 */
static int rivet_rndv_issue(struct rivet_rdm_ep *ep, struct rivet_rndv_rx *r,
			    void **desc)
{
	struct ibv_send_wr wrs[16], *bad;
	struct ibv_sge sges[16];
	size_t i, n, room, inflight = r->nreads - r->reads_done;
	uint64_t bytes = 0;
	int ret;

	if (!r->registered && rivet_rndv_more(r) &&
	    rivet_rndv_register(ep, r, desc, r->lkeys)) {
		r->status = FI_ENOMEM;
		r->prov_errno = RIVET_PERR_REG;
	}
	r->registered = true;
	if (!rivet_rndv_more(r)) {
		if (!inflight)
			rivet_rndv_finish(ep, r);
		return 0;
	}
	room = RIVET_MIN(16 - RIVET_MIN(inflight, 16), (size_t)ep->ctrl_free);
	if (!room)	/* the next completion tries again */
		return inflight ? 0 : -FI_EAGAIN;
	n = rivet_rndv_plan(r->iov, r->count, r->lkeys, &r->rts, r->planned,
			    r->comp.len, RIVET_MIN(ep->rdma_seg,
						   ep->domain->dev->max_msg_size),
			    (uintptr_t)r, wrs, sges, room);
	if (!n) {
		if (!inflight)
			rivet_rndv_finish(ep, r);
		return 0;
	}
	for (i = 0; i < n; i++)
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	/* an unexpected RTS matched after its connection failed */
	ret = r->conn->state == RIVET_CONN_CLOSED ? ECONNABORTED :
	      ibv_post_send(r->conn->qp, wrs, &bad);
	if (ret) {
		r->status = FI_EIO;
		r->prov_errno = RIVET_PERR_CONN;
		/* the ones before bad went: their completions still come */
		n = r->conn->state == RIVET_CONN_CLOSED ? 0 :
		    (size_t)(bad - wrs);
	}
	for (i = 0; i < n; i++)
		bytes += sges[i].length;
	ep->ctrl_free -= n;
	r->nreads += n;
	r->planned += bytes;
	if (ret) {
		if (r->nreads == r->reads_done)
			rivet_rndv_finish(ep, r);
		return 0;
	}
	RIVET_DBG(EP_DATA, "rendezvous %p (connection %u, send id 0x%" PRIx64
		  "): %zu reads posted, %" PRIu64 " of %" PRIu64 " bytes\n",
		  (void *)r, r->conn->idx, r->rts.send_id, n, r->planned,
		  r->comp.len);
	return 0;
}

static int rivet_rndv_defer(struct rivet_conn *conn, struct rivet_rndv_rx *r,
			    uint64_t send_id, int32_t status,
			    struct rivet_rndv_rx *fin_rx)
{
	struct rivet_ctrl *c = calloc(1, sizeof(*c));

	if (!c) {
		RIVET_WARN(EP_DATA, "out of memory: rendezvous lost\n");
		return -FI_ENOMEM;
	}
	c->rndv = r;
	c->send_id = send_id;
	c->status = status;
	c->fin_rx = fin_rx;
	DL_APPEND(conn->deferred, c);
	conn->ep->any_deferred = true;
	return 0;
}

void rivet_rndv_start(struct rivet_rdm_ep *ep, struct rivet_rx_op *rx,
		      struct rivet_conn *conn, const struct rivet_wire_hdr *hdr,
		      const struct rivet_wire_rts *rts)
{
	struct rivet_rndv_rx *r = calloc(1, sizeof(*r));
	void *desc[RIVET_RDM_IOV_LIMIT] = { 0 };
	size_t cap, i;

	if (!r) {
		RIVET_WARN(EP_DATA, "out of memory: rendezvous lost\n");
		return;
	}
	r->kind = RIVET_WR_READ;
	r->conn = conn;
	r->rts = *rts;
	r->report = rx->report;
	r->count = rivet_rx_target(ep, rx, hdr->len, r->iov, desc);
	for (i = 0, cap = 0; i < r->count; i++)
		cap += r->iov[i].iov_len;
	rivet_rx_fill_comp(rx, conn, hdr, RIVET_MIN(cap, hdr->len), &r->comp);
	r->comp.buf = r->iov[0].iov_base;
	r->status = rivet_rndv_rts_accept(rts, hdr->len, cap, &r->comp.olen,
					  &r->prov_errno);
	if (r->status == FI_EIO) {
		RIVET_WARN(EP_DATA, "RTS of %" PRIu64 " bytes with bad "
			   "segments from connection %u\n", hdr->len,
			   conn->idx);
		r->rts.nsegs = 0;
	}
	if (rx->multi) {
		r->rx = rx;
		rx->inflight++;
		rx->rndv_out++;
		if (rx->len - rx->offset < ep->min_multi_recv) {
			rx->release_owed = true;	/* rivet_rndv_report */
			rivet_rx_retire(ep, rx);
		}
	} else {
		rivet_rx_retire(ep, rx);
	}
	if (rivet_rndv_issue(ep, r, desc) == -FI_EAGAIN)
		rivet_rndv_defer(conn, r, 0, 0, NULL);
}

void rivet_rndv_read_done(struct rivet_rdm_ep *ep, struct rivet_rndv_rx *r,
			  int wc_status)
{
	struct rivet_conn *conn = r->conn;
	/* the QP is in the error state now: the connection goes with it */
	bool broke = wc_status != IBV_WC_SUCCESS &&
		     wc_status != IBV_WC_WR_FLUSH_ERR;

	if (wc_status != IBV_WC_SUCCESS && !r->status) {
		r->status = rivet_wc_status_to_fi(wc_status);
		r->prov_errno = wc_status;
	}
	r->reads_done++;
	if (rivet_rndv_issue(ep, r, NULL) == -FI_EAGAIN)
		rivet_rndv_defer(conn, r, 0, 0, NULL);
	if (broke) {
		RIVET_INFO(EP_DATA, "connection %u: a rendezvous read failed: "
			   "%s\n", conn->idx, ibv_wc_status_str(wc_status));
		rivet_conn_fail(conn, FI_ECONNABORTED);
	}
}

/* ---- FIN ---- */

static bool rivet_rndv_fin_room(struct rivet_rdm_ep *ep)
{
	return ep->ctrl_free && ep->ctrl_free_list;
}

/* Posts a FIN; the caller made sure there is room. */
static int rivet_rndv_fin_post(struct rivet_conn *conn, uint64_t send_id,
			       int32_t status, struct rivet_rndv_rx *r)
{
	struct rivet_rdm_ep *ep = conn->ep;
	struct rivet_rdm_buf *buf = ep->ctrl_free_list;
	struct rivet_wire_hdr *hdr;
	struct rivet_wire_fin *fin;

	LL_DELETE(ep->ctrl_free_list, buf);
	ep->ctrl_free--;
	buf->conn = conn;
	buf->rndv = r;
	hdr = (struct rivet_wire_hdr *)buf->data;
	fin = (struct rivet_wire_fin *)(hdr + 1);
	*hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_FIN,
		.conn_idx = conn->peer_idx,
	};
	*fin = (struct rivet_wire_fin) { .send_id = send_id,
					 .status = status };
	if (rivet_conn_post_send(conn, (uintptr_t)buf, buf->data,
				 sizeof(*hdr) + sizeof(*fin),
				 ep->slab_mr->lkey)) {
		buf->rndv = NULL;
		LL_PREPEND(ep->ctrl_free_list, buf);
		ep->ctrl_free++;
		RIVET_INFO(EP_DATA, "connection %u: a control message could "
			   "not be posted\n", conn->idx);
		rivet_conn_fail(conn, FI_ECONNABORTED);
		return -FI_EIO;
	}
	return 0;
}

/* Posts a prepared control message; the caller made sure there is room. */
static int rivet_ctrl_post(struct rivet_conn *conn, const void *msg,
			   size_t len)
{
	struct rivet_rdm_ep *ep = conn->ep;
	struct rivet_rdm_buf *buf = ep->ctrl_free_list;

	LL_DELETE(ep->ctrl_free_list, buf);
	ep->ctrl_free--;
	buf->conn = conn;
	buf->rndv = NULL;
	memcpy(buf->data, msg, len);
	((struct rivet_wire_hdr *)buf->data)->conn_idx = conn->peer_idx;
	if (rivet_conn_post_send(conn, (uintptr_t)buf, buf->data, len,
				 ep->slab_mr->lkey)) {
		LL_PREPEND(ep->ctrl_free_list, buf);
		ep->ctrl_free++;
		RIVET_INFO(EP_DATA, "connection %u: a control message could "
			   "not be posted\n", conn->idx);
		rivet_conn_fail(conn, FI_ECONNABORTED);
		return -FI_EIO;
	}
	return 0;
}

int rivet_ctrl_fence(struct rivet_conn *conn)
{
	const struct rivet_wire_hdr ping = {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_PING,
	};
	struct rivet_rdm_buf *buf = conn->ep->ctrl_free_list;
	int ret;

	if (!rivet_rndv_fin_room(conn->ep) || conn->deferred)
		return -FI_EAGAIN;
	ret = rivet_ctrl_post(conn, &ping, sizeof(ping));
	if (!ret)
		conn->inj_fence = buf;
	return ret;
}

int rivet_ctrl_send(struct rivet_conn *conn, const void *msg, size_t len)
{
	struct rivet_ctrl *c;

	if (len > conn->ep->slot_size)
		return -FI_EINVAL;
	if (conn->state == RIVET_CONN_CLOSED)
		return -FI_ECONNABORTED;	/* nobody to tell */
	if (rivet_rndv_fin_room(conn->ep) && !conn->deferred)
		return rivet_ctrl_post(conn, msg, len);
	c = calloc(1, sizeof(*c));
	if (c)
		c->msg = malloc(len);
	if (!c || !c->msg) {
		free(c);
		RIVET_WARN(EP_DATA, "out of memory: control message lost\n");
		return -FI_ENOMEM;
	}
	memcpy(c->msg, msg, len);
	c->msg_len = len;
	DL_APPEND(conn->deferred, c);
	conn->ep->any_deferred = true;
	return -FI_EAGAIN;
}

/* FINs keep their order behind deferred work of the same connection. */
int rivet_rndv_send_fin(struct rivet_conn *conn, uint64_t send_id,
			int32_t status, struct rivet_rndv_rx *r)
{
	if (!rivet_rndv_fin_room(conn->ep) || conn->deferred)
		return rivet_rndv_defer(conn, NULL, send_id, status, r) ?
		       -FI_EIO : -FI_EAGAIN;
	return rivet_rndv_fin_post(conn, send_id, status, r);
}

void rivet_rndv_handle_fin(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
			   const struct rivet_wire_fin *fin)
{
	int status = rivet_wire_status(fin->status);
	struct rivet_tx_op *op = NULL;

	switch (rivet_rndv_fin_verdict(ep->tx_ops, ep->tx_size, conn,
				       fin->send_id, &op)) {
	case RIVET_FIN_DONE:
		DL_DELETE(op->conn->wait_fin, op);
		rivet_tx_op_done(ep, op, status,
				 status ? RIVET_PERR_PEER_RX : 0);
		break;
	case RIVET_FIN_EARLY:
		op->fin_seen = true;	/* the send's WC is still to come */
		op->fin_status = status;
		break;
	case RIVET_FIN_IGNORE:
		break;
	case RIVET_FIN_STRAY:	/* also a late FIN of an operation failed
				 * with its connection */
		RIVET_DBG(EP_DATA, "FIN for no rendezvous of connection %u "
			  "(qp 0x%x) ignored\n", conn->idx, conn->qp_num);
		break;
	}
}

static void rivet_rndv_fail_ctrl(struct rivet_rdm_ep *ep,
				 struct rivet_ctrl *c)
{
	if (c->rndv) {
		c->rndv->status = FI_ECONNABORTED;
		c->rndv->prov_errno = RIVET_PERR_CONN;
		rivet_rndv_finish(ep, c->rndv);
	}
	if (c->fin_rx)
		rivet_rndv_confirmed(ep, c->fin_rx, false);
	free(c->msg);
	free(c);
}

void rivet_rndv_retry_deferred(struct rivet_conn *conn)
{
	struct rivet_rdm_ep *ep = conn->ep;
	void *desc[RIVET_RDM_IOV_LIMIT] = { 0 };
	struct rivet_ctrl *c, *tmp;

	DL_FOREACH_SAFE(conn->deferred, c, tmp) {
		if (conn->state == RIVET_CONN_CLOSED) {
			DL_DELETE(conn->deferred, c);
			rivet_rndv_fail_ctrl(ep, c);
			continue;
		}
		if (c->rndv && rivet_rndv_issue(ep, c->rndv, desc))
			return;
		if (!c->rndv && !rivet_rndv_fin_room(ep))
			return;
		DL_DELETE(conn->deferred, c);
		if (c->msg)
			rivet_ctrl_post(conn, c->msg, c->msg_len);
		else if (!c->rndv && rivet_rndv_fin_post(conn, c->send_id,
							 c->status, c->fin_rx) &&
			 c->fin_rx)
			rivet_rndv_confirmed(ep, c->fin_rx, false);
		free(c->msg);
		free(c);
		/* a post that failed failed the connection, which emptied
		 * the list (tmp went with it) */
		if (conn->state == RIVET_CONN_CLOSED)
			return;
	}
}
