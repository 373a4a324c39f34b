/* SPDX-License-Identifier: MIT */
/*
 * The RDM progress engine: rdma_cm events of the endpoint's channel, its
 * verbs CQ (dispatched on what each wr_id points at), arriving messages
 * (checked, attributed to their connection, dispatched on their op), SRQ
 * refill, and the completions it hands to the application's CQs and
 * counters.  It is the endpoint's progress source (rivet_rdm_ep_progress).
 * With the rdma_cm check, the liveness of connections (probes of waiting
 * ones, the release of drained QPs).  And fi_close's first step, which
 * runs it until what peers are owed is out (rivet_rdm_ep_settle).
 */
#include <time.h>
#include <unistd.h>

#include "rivet_cntr.h"
#include "rivet_cq_out.h"
#include "rivet_iov.h"
#include "rivet_rdm.h"

#define RIVET_RDM_POLL_BATCH 16
#define RIVET_RDM_POLL_ROUNDS 8

int rivet_rdm_srq_post(struct rivet_rdm_ep *ep, struct rivet_rdm_buf *buf)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf->data, .length = ep->slot_size,
		.lkey = ep->slab_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = (uintptr_t)buf, .sg_list = &sge, .num_sge = 1,
	}, *bad;
	int ret = ibv_post_srq_recv(ep->srq, &wr, &bad);

	if (ret)
		RIVET_WARN_ERRNO(EP_DATA, "ibv_post_srq_recv", ret);
	return ret ? rivet_errno_to_fi(ret) : 0;
}

/* A batch of buffers is complete: one post (srq_wr[srq_batch - 1] ends
 * the chain). */
static __attribute__((noinline)) void
rivet_rdm_srq_flush(struct rivet_rdm_ep *ep)
{
	struct ibv_recv_wr *bad;
	int ret;

	ep->srq_npend = 0;
	ret = ibv_post_srq_recv(ep->srq, ep->srq_wr, &bad);
	if (ret)
		RIVET_WARN_ERRNO(EP_DATA, "ibv_post_srq_recv", ret);
}

/* Inline here (every arrival gives its buffer back). */
static inline __attribute__((always_inline)) void
rivet_rdm_srq_give_inl(struct rivet_rdm_ep *ep, struct rivet_rdm_buf *buf)
{
	unsigned int n = ep->srq_npend;

	ep->srq_sge[n].addr = (uintptr_t)buf->data;
	ep->srq_wr[n].wr_id = (uintptr_t)buf;
	ep->srq_npend = ++n;
	if (n == ep->srq_batch)
		rivet_rdm_srq_flush(ep);
}

void rivet_rdm_srq_give(struct rivet_rdm_ep *ep, struct rivet_rdm_buf *buf)
{
	rivet_rdm_srq_give_inl(ep, buf);
}

void rivet_rdm_complete(struct rivet_rdm_ep *ep, bool tx,
			const struct rivet_cq_entry *e, bool report)
{
	struct rivet_cq *cq = tx ? ep->tx_cq : ep->rx_cq;
	struct rivet_cntr *cntr = tx ? ep->send_cntr : ep->recv_cntr;

	if (e->err) {
		rivet_cq_write(cq, e);	/* errors are always reported */
		rivet_cntr_inc_err(cntr);
		return;
	}
	if (report)
		rivet_cq_write(cq, e);
	rivet_cntr_inc(cntr);
}

/* ---- arriving messages ---- */

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
		if (conn->qp_num == qp_num)
			return conn;
	}
	return rivet_rx_conn_slow(ep, hdr, qp_num);
}

/* An eager message is checked inline (the common case), the rest by
 * rivet_wire_check. */
static inline bool rivet_rx_whole(const struct rivet_wire_hdr *hdr,
				  size_t len)
{
	if (__builtin_expect(len >= sizeof(*hdr) &&
			     hdr->op == RIVET_OP_EAGER &&
			     hdr->version == RIVET_WIRE_VERSION &&
			     hdr->len <= len - sizeof(*hdr), 1))
		return true;
	return !rivet_wire_check(hdr, len);
}

/* rivet_rx_take_whole's truncated case: an error entry (FI_ETRUNC). */
static void rivet_rx_take_trunc(struct rivet_rdm_ep *ep,
				struct rivet_rx_op *rx, fi_addr_t src,
				const struct rivet_wire_hdr *hdr, size_t n)
{
	struct rivet_cq_entry e;

	rivet_rx_fill_comp(rx, NULL, hdr, n, &e);
	e.src = src;
	e.buf = rx->iov[0].iov_base;
	e.err = FI_ETRUNC;
	e.olen = hdr->len - n;
	rivet_rdm_complete(ep, false, &e, rx->report);
}

/* The common arrival, inline: an eager message that a posted receive of
 * one buffer (not FI_MULTI_RECV) takes whole, as rivet_rx_deliver_eager
 * and rivet_rx_retire would, without their calls and copies; q: the
 * endpoint's receive queue; m: the index it is filed in, NULL for the
 * queue's solo receive (already taken off: a tagged one). */
static inline __attribute__((always_inline)) void
rivet_rx_take_whole(struct rivet_rdm_ep *ep, struct rivet_rdm_rxq *q,
		    struct rivet_match *m, struct rivet_rx_op *rx,
		    fi_addr_t src, const struct rivet_wire_hdr *hdr,
		    const void *payload)
{
	size_t n = RIVET_MIN(rx->iov[0].iov_len, hdr->len);
	bool cq_data = hdr->flags & RIVET_WF_CQ_DATA;
	uint64_t tag = (!m || (rx->cq_flags & FI_TAGGED)) ? hdr->tag : 0;

	rivet_copy_small(rx->iov[0].iov_base, payload, n);
	if (__builtin_expect(n < hdr->len, 0)) {
		rivet_rx_take_trunc(ep, rx, src, hdr, n);
	} else {
		if (rx->report)
			rivet_cq_write_ok_inl(ep->rx_cq, rx->context,
					  rx->cq_flags |
					  (cq_data ? FI_REMOTE_CQ_DATA : 0),
					  n, rx->iov[0].iov_base,
					  cq_data ? hdr->data : 0, tag, src);
		rivet_cntr_inc(ep->recv_cntr);
	}
	if (m)
		rivet_match_recv_remove(m, &rx->me);
	rx->posted = false;
	/* one buffer: offset 0, not multi; released as a free op */
	if (__builtin_expect(!rx->inflight, 1))
		rivet_rdm_rxq_put_plain(q, rx);
	else
		rx->released = true;
}

/* An eager message: matched, and taken whole inline, or handed to
 * rivet_rx_matched with what matching found. */
static inline __attribute__((always_inline)) void
rivet_rx_eager(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
	       const struct rivet_wire_hdr *hdr, const void *payload)
{
	bool tagged = hdr->flags & RIVET_WF_TAGGED;
	struct rivet_rdm_rxq *q = ep->rxq;
	struct rivet_rx_op *rx = q->solo;
	fi_addr_t src = rivet_conn_src(conn);
	struct rivet_match_recv *r;
	struct rivet_match *m;

	/* the solo receive: then the only one posted (one buffer, tagged) */
	if (__builtin_expect(tagged && rx, 1)) {
		if (__builtin_expect(rivet_match_addr(rx->addr, src) &&
				     rivet_match_tag(rx->tag, rx->ignore,
						     hdr->tag), 1)) {
			q->solo = NULL;
			rivet_rx_take_whole(ep, q, NULL, rx, src, hdr,
					    payload);
		} else {
			rivet_rx_matched(ep, conn, hdr, payload, NULL, NULL);
		}
		return;
	}
	m = tagged ? &q->match_tag : &q->match_msg;
	/* a receive's source is FI_ADDR_UNSPEC without FI_DIRECTED_RECV */
	r = rivet_match_recv_find(m, src, tagged ? hdr->tag : 0);
	rx = container_of(r, struct rivet_rx_op, me);
	if (__builtin_expect(r && !rx->multi && rx->count == 1, 1))
		rivet_rx_take_whole(ep, q, m, rx, src, hdr, payload);
	else
		rivet_rx_matched(ep, conn, hdr, payload, NULL, r);
}

/* Every message but an eager one (rivet_proto_handle_rx). */
static void rivet_proto_handle_other(struct rivet_rdm_ep *ep,
				     struct rivet_conn *conn,
				     const struct rivet_wire_hdr *hdr,
				     const uint8_t *body, size_t len)
{
	switch (hdr->op) {
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
	case RIVET_OP_PING:
		break;
	default:
		rivet_rndv_handle_fin(ep, conn, (const void *)body);
		break;
	}
}

/* A message that came on QP qp_num: checked, attributed to that QP's
 * connection, dispatched; its buffer goes back to the SRQ.  Inline in
 * the progress pass: the path of every arriving message. */
static inline __attribute__((always_inline)) void
rivet_proto_handle_rx(struct rivet_rdm_ep *ep, struct rivet_rdm_buf *buf,
		      size_t len, uint32_t qp_num)
{
	const struct rivet_wire_hdr *hdr = (const void *)buf->data;
	const uint8_t *body = buf->data + sizeof(*hdr);
	struct rivet_conn *conn;

	/* the slab was zeroed for valgrind when made (rivet_rdm_ep.c) */
	conn = rivet_rx_whole(hdr, len) ? rivet_rx_conn(ep, hdr, qp_num) :
					  NULL;
	if (!conn)
		RIVET_WARN(EP_DATA, "malformed message on qp 0x%x dropped\n",
			   qp_num);
	else if (__builtin_expect(hdr->op == RIVET_OP_EAGER, 1))
		rivet_rx_eager(ep, conn, hdr, body);
	else
		rivet_proto_handle_other(ep, conn, hdr, body, len);
	rivet_rdm_srq_give_inl(ep, buf);
}

/* ---- work completions ---- */

static void rivet_rdm_wc_tx(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
			    const struct ibv_wc *wc)
{
	struct rivet_conn *conn = op->conn;

	if (op->rma) {
		rivet_rma_wc(ep, op, wc);
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			RIVET_INFO(EP_DATA, "connection %u: a send failed: %s\n",
				   conn->idx, ibv_wc_status_str(wc->status));
		rivet_tx_op_done(ep, op, rivet_wc_status_to_fi(wc->status),
				 wc->status);
		rivet_conn_fail(conn, FI_ECONNABORTED);
		return;
	}
	if (!op->rndv && !op->atomic) {
		rivet_tx_op_done(ep, op, 0, 0);
	} else if (op->fin_seen) {
		rivet_tx_op_done(ep, op, op->fin_status, !op->fin_status ? 0 :
				 op->atomic ? RIVET_PERR_TARGET :
					      RIVET_PERR_PEER_RX);
	} else {
		op->state = RIVET_TX_WAIT_FIN;
		DL_APPEND(conn->wait_fin, op);
	}
}

/* A signaled short-path inject is done, and the unsignaled ones before
 * it: nothing to report.  A failed one (each failed one completes):
 * an error entry (an inject's error has no context, as the general
 * path's); the connection is failed, so its count no longer matters. */
static void rivet_rdm_wc_inj(struct rivet_rdm_ep *ep,
			     const struct rivet_inj_wr *w,
			     const struct ibv_wc *wc)
{
	struct rivet_conn *conn = w->conn;
	struct rivet_cq_entry e;

	if (wc->status == IBV_WC_SUCCESS) {
		conn->inj_out -= ep->inj_signal;
		return;
	}
	conn->inj_out -= !!conn->inj_out;
	if (wc->status != IBV_WC_WR_FLUSH_ERR)
		RIVET_INFO(EP_DATA, "connection %u: an inject failed: %s\n",
			   conn->idx, ibv_wc_status_str(wc->status));
	e = (struct rivet_cq_entry) {
		.flags = FI_SEND | (w->tagged ? FI_TAGGED : FI_MSG),
		.err = rivet_wc_status_to_fi(wc->status),
		.prov_errno = wc->status, .src = FI_ADDR_NOTAVAIL,
	};
	rivet_rdm_complete(ep, true, &e, false);
	rivet_conn_fail(conn, FI_ECONNABORTED);
}

static void rivet_rdm_wc_ctrl(struct rivet_rdm_ep *ep,
			      struct rivet_rdm_buf *buf,
			      const struct ibv_wc *wc)
{
	struct rivet_rndv_rx *r = buf->rndv;

	buf->rndv = NULL;
	LL_PREPEND(ep->ctrl_free_list, buf);
	ep->ctrl_free++;
	/* the PING behind the unsignaled injects: they are done too */
	if (buf->conn && buf->conn->inj_fence == buf) {
		buf->conn->inj_fence = NULL;
		if (wc->status == IBV_WC_SUCCESS)
			buf->conn->inj_out = buf->conn->inj_seq = 0;
	}
	if (wc->status != IBV_WC_SUCCESS && buf->conn) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			RIVET_INFO(EP_DATA, "connection %u: a control message "
				   "failed: %s\n", buf->conn->idx,
				   ibv_wc_status_str(wc->status));
		rivet_conn_fail(buf->conn, FI_ECONNABORTED);
	}
	/* a FIN that confirms a rendezvous receive (FI_RIVET_CONFIRM) */
	if (r)
		rivet_rndv_confirmed(ep, r, wc->status == IBV_WC_SUCCESS);
}

/* A receive that failed (not flushed) put its QP in the error state: its
 * connection goes with it; the buffer goes back to the SRQ. */
static void rivet_rdm_rx_failed(struct rivet_rdm_ep *ep,
				struct rivet_rdm_buf *buf,
				const struct ibv_wc *wc)
{
	struct rivet_conn *conn = rivet_conn_of_qp(ep, wc->qp_num);

	RIVET_INFO(EP_DATA, "a receive on qp 0x%x failed: %s\n", wc->qp_num,
		   ibv_wc_status_str(wc->status));
	if (conn)
		rivet_conn_fail(conn, FI_ECONNABORTED);
	rivet_rdm_srq_give(ep, buf);
}

/* Every work completion but a message's arrival (rivet_rdm_wc). */
static __attribute__((noinline)) void
rivet_rdm_wc_other(struct rivet_rdm_ep *ep, const struct ibv_wc *wc)
{
	void *p = (void *)(uintptr_t)wc->wr_id;
	struct rivet_rdm_buf *buf = p;

	switch (*(uint8_t *)p) {
	case RIVET_WR_RXBUF:
		/* a write with immediate data takes a buffer, fills none; one
		 * that a QP had taken from the SRQ when it went to the error
		 * state comes back flushed, and is the SRQ's again (the
		 * endpoint's close destroys the SRQ after its last pass) */
		if (wc->status == IBV_WC_SUCCESS)
			rivet_rma_handle_imm(ep, buf, wc);
		else if (wc->status != IBV_WC_WR_FLUSH_ERR)
			rivet_rdm_rx_failed(ep, buf, wc);
		else
			rivet_rdm_srq_give(ep, buf);
		break;
	case RIVET_WR_TX:
		rivet_rdm_wc_tx(ep, p, wc);
		break;
	case RIVET_WR_CTRL:
		rivet_rdm_wc_ctrl(ep, buf, wc);
		break;
	case RIVET_WR_INJ:
		rivet_rdm_wc_inj(ep, p, wc);
		break;
	case RIVET_WR_DRAIN:
		rivet_conn_drained(((struct rivet_inj_wr *)p)->conn);
		break;
	case RIVET_WR_READ:
		ep->ctrl_free++;
		rivet_rndv_read_done(ep, p, wc->status);
		break;
	default:
		RIVET_WARN(EP_DATA, "unknown work completion 0x%" PRIx64 "\n",
			   wc->wr_id);
	}
}

/* Dispatched on what wr_id points at; a message's arrival inline. */
static inline __attribute__((always_inline)) void
rivet_rdm_wc(struct rivet_rdm_ep *ep, const struct ibv_wc *wc)
{
	struct rivet_rdm_buf *buf = (void *)(uintptr_t)wc->wr_id;

	if (__builtin_expect(*(uint8_t *)buf == RIVET_WR_RXBUF &&
			     wc->status == IBV_WC_SUCCESS &&
			     wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM, 1))
		rivet_proto_handle_rx(ep, buf, wc->byte_len, wc->qp_num);
	else
		rivet_rdm_wc_other(ep, wc);
}

/* Deferred reads and FINs of every connection, while there are any (a
 * pass over all connections on every progress call would cost a busy
 * poller with many peers). */
static __attribute__((noinline)) void
rivet_rdm_retry_all(struct rivet_rdm_ep *ep)
{
	bool left = false;
	size_t i;

	for (i = 0; i < ep->nconns; i++) {
		if (ep->conns[i]->deferred)
			rivet_rndv_retry_deferred(ep->conns[i]);
		left = left || ep->conns[i]->deferred;
	}
	ep->any_deferred = left;
}

/* The polls after a pass's first one found a full batch: up to
 * RIVET_RDM_POLL_ROUNDS in all, while they come back full. */
static __attribute__((noinline)) int
rivet_rdm_poll_more(struct rivet_rdm_ep *ep)
{
	struct ibv_wc wcs[RIVET_RDM_POLL_BATCH];
	int n, i, round, total = 0;

	for (round = 1; round < RIVET_RDM_POLL_ROUNDS; round++) {
		n = ibv_poll_cq(ep->ibv_cq, RIVET_RDM_POLL_BATCH, wcs);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
			rivet_rdm_wc(ep, &wcs[i]);
		total += n;
		if (n < RIVET_RDM_POLL_BATCH)
			break;
	}
	return total;
}

void rivet_rdm_progress_cm(struct rivet_rdm_ep *ep)
{
	struct rdma_cm_event *cm;

	if (ep->sep)	/* a context: requests come to its endpoint */
		rivet_sep_progress_cm(ep);
	while (!rivet_verbs_cm_event_get(ep->cm_channel, &cm))
		rivet_conn_handle_cm(ep, cm);
}

/* Inline in both callers: the endpoint's progress source's pass (every
 * fi_cq_read) and rivet_rdm_progress_locked. */
static inline __attribute__((always_inline)) int
rivet_rdm_progress_pass(struct rivet_rdm_ep *ep)
{
	struct ibv_wc wcs[RIVET_RDM_POLL_BATCH];
	int n, i, total;

	/* Taking an rdma_cm event is a system call even when nothing is pending,
	 * and a busy-polling application makes thousands of passes per
	 * message: the channel is looked at once per 1024 units of passes
	 * (4 while connections of ours are being set up: a connection that
	 * starts cuts the count down, rivet_conn_set_state), a pass that
	 * found work counting 1 and an idle one 16
	 * (a peer's connection request, a disconnect: an endpoint that
	 * waits, sleeping between its polls, must accept a peer's new
	 * connection within some 64 polls, not thousands). */
	n = ibv_poll_cq(ep->ibv_cq, RIVET_RDM_POLL_BATCH, wcs);
	for (i = 0; i < n; i++)
		rivet_rdm_wc(ep, &wcs[i]);
	total = n > 0 ? n : 0;
	if (__builtin_expect(n == RIVET_RDM_POLL_BATCH, 0))
		total += rivet_rdm_poll_more(ep);
	ep->cm_wait -= total ? 1 : 16;
	if (__builtin_expect(ep->cm_wait <= 0, 0)) {
		ep->cm_wait = ep->nconnecting ? RIVET_RDM_CM_UNITS_SETUP :
						RIVET_RDM_CM_UNITS;
		rivet_rdm_progress_cm(ep);
		rivet_conn_probe_all(ep);
	}
	if (ep->any_deferred)
		rivet_rdm_retry_all(ep);
	return total;
}

int rivet_rdm_progress_locked(struct rivet_rdm_ep *ep)
{
	RIVET_RDM_HELD(ep);
	return rivet_rdm_progress_pass(ep);
}

/* The CM channel alone, under the endpoint's lock (before a sleep, and
 * when the progress thread's poll says the channel has an event). */
void rivet_rdm_ep_progress_cm(struct rivet_progress_src *src)
{
	struct rivet_rdm_ep *ep = container_of(src, struct rivet_rdm_ep, psrc);

	rivet_rdm_lock(ep);
	if (ep->enabled)
		rivet_rdm_progress_cm(ep);
	rivet_rdm_unlock(ep);
}

int rivet_rdm_ep_progress(struct rivet_progress_src *src)
{
	struct rivet_rdm_ep *ep = container_of(src, struct rivet_rdm_ep, psrc);
	int ret;

	rivet_rdm_lock(ep);
	ret = ep->enabled ? rivet_rdm_progress_pass(ep) : 0;
	rivet_rdm_unlock(ep);
	return ret;
}

/* fi_cq_readfrom of a CQ that this endpoint alone feeds, with no lock
 * (cq->fast): the general read's work (rivet_cq_readfrom_any), the
 * progress pass inline and the completions it finds written straight
 * into buf. */
ssize_t rivet_rdm_ep_read(struct rivet_progress_src *src, struct rivet_cq *cq,
			  void *buf, size_t count, fi_addr_t *src_addr)
{
	struct rivet_rdm_ep *ep = container_of(src, struct rivet_rdm_ep, psrc);
	struct rivet_domain *dom;
	size_t dn;

	if (__builtin_expect(!ep->nolock_ready || cq->count ||
			     cq->errs_count || cq->dbuf, 0))
		return rivet_cq_readfrom_any(cq, buf, count, src_addr);
	cq->dbuf = buf;
	cq->dsrc = src_addr;
	cq->dn = 0;
	cq->dmax = count;
	rivet_rdm_progress_pass(ep);
	/* the arguments back from cq: none is held across the pass */
	buf = cq->dbuf;
	cq->dbuf = NULL;
	dom = cq->domain;
	rivet_trig_poll(dom);	/* counters it moved */
	dn = cq->dn;
	if (__builtin_expect(!dn || rivet_cq_has_deferred(cq), 0))
		return rivet_cq_read_rest(cq, buf, cq->dmax, cq->dsrc);
	rivet_domain_polled(dom, true);
	return (ssize_t)dn;
}

/* ---- liveness of connections (with the rdma_cm check) ---- */

static uint64_t rivet_conn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* An operation waiting for the peer's answer (wait_fin) has nothing on
 * the wire: if the peer's node died or its link stays down, no work
 * completion would ever fail it.  A connection seen with such waiters
 * for probe_ms gets an empty message (RIVET_OP_PING) every probe_ms: the
 * peer's NIC acknowledges it, or it runs out of retries and its error
 * completion fails the connection and its waiters (rivet_rdm_wc_ctrl).
 * Run with the rdma_cm check, off the fast path. */
void rivet_conn_drained(struct rivet_conn *conn)
{
	conn->drained_ms = rivet_conn_now_ms();
	conn->ep->nlinger++;
}

/* A drained QP whose linger is over goes (its number stays during the
 * linger, for receives still in the CQ). */
static void rivet_conn_release(struct rivet_conn *conn, uint64_t now)
{
	if (!conn->qp || !conn->drained_ms ||
	    now - conn->drained_ms < RIVET_CONN_QP_LINGER_MS)
		return;
	RIVET_INFO(EP_CTRL, "connection %u: qp 0x%x released\n", conn->idx,
		   conn->qp_num);
	rivet_verbs_cm_qp_destroy(conn->id);
	conn->qp = NULL;
	conn->inj_qpx = NULL;
	/* its receives were all polled during the linger; the device may
	 * give the number to a new QP from now on */
	conn->qp_num = RIVET_CONN_QPN_NONE;
	conn->ep->nlinger--;
}

void rivet_conn_probe_all(struct rivet_rdm_ep *ep)
{
	struct rivet_wire_hdr ping = {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_PING,
	};
	struct rivet_conn *conn;
	uint64_t now = 0;
	size_t i;

	if (ep->nlinger) {
		now = rivet_conn_now_ms();
		for (i = 0; i < ep->nconns; i++)
			rivet_conn_release(ep->conns[i], now);
	}
	if (!g_rivet_params.probe_ms)
		return;
	for (i = 0; i < ep->nconns; i++) {
		conn = ep->conns[i];
		if (!conn->wait_fin || conn->state != RIVET_CONN_UP) {
			conn->probe_armed = false;
			continue;
		}
		if (!now)
			now = rivet_conn_now_ms();
		if (!conn->probe_armed) {
			conn->probe_armed = true;
			conn->probe_ms = now;
		} else if (now - conn->probe_ms >= g_rivet_params.probe_ms) {
			conn->probe_ms = now;
			RIVET_DBG(EP_CTRL, "connection %u: probing the peer\n",
				  conn->idx);
			(void)rivet_ctrl_send(conn, &ping, sizeof(ping));
		}
	}
}

/* ---- fi_close: what peers are owed ---- */

bool rivet_conn_owing(struct rivet_rdm_ep *ep)
{
	struct rivet_conn *conn;
	bool owing = false;
	size_t i;

	for (i = 0; i < ep->nconns; i++) {
		conn = ep->conns[i];
		if (conn->state == RIVET_CONN_CLOSED)
			continue;
		if (conn->queued || conn->inflight || conn->deferred)
			owing = true;
		if (!conn->inj_out)
			continue;
		owing = true;
		if (conn->state == RIVET_CONN_UP && conn->inj_seq &&
		    !conn->inj_fence)
			(void)rivet_ctrl_fence(conn);
	}
	return owing;
}

/* fi_endpoint(3) lets fi_close discard what is outstanding; but an
 * inject, or a send queued for a connection that is still coming up, is
 * complete for the application, which may close the next moment (MPICH
 * answers a message with an inject and finalizes).  What the endpoint
 * owes its peers goes out first: its progress runs until nothing is
 * owed (rivet_conn_owing) or close_wait_ms has passed. */
void rivet_rdm_ep_settle(struct rivet_rdm_ep *ep)
{
	uint64_t now, end = 0;

	if (!ep->enabled || !g_rivet_params.close_wait_ms)
		return;
	rivet_rdm_lock(ep);
	while (rivet_conn_owing(ep)) {
		now = rivet_conn_now_ms();
		if (!end) {
			end = now + g_rivet_params.close_wait_ms;
		} else if (now >= end) {
			RIVET_INFO(EP_CTRL, "fi_close: operations still owed "
				   "to peers after %zu ms are dropped\n",
				   g_rivet_params.close_wait_ms);
			break;
		}
		rivet_rdm_progress_locked(ep);
		rivet_rdm_progress_cm(ep);
		rivet_rdm_unlock(ep);
		usleep(100);
		rivet_rdm_lock(ep);
	}
	rivet_rdm_unlock(ep);
}
