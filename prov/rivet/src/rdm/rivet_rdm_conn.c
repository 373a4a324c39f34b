/* SPDX-License-Identifier: MIT */
/*
 * RDM connections: RC QPs on the endpoint's SRQ and CQ, made on demand to
 * a peer's listening address (rdma_cm), accepted from any peer, and failed
 * cleanly when the peer goes away.
 */
#include <stdlib.h>
#include <time.h>

#include <uthash.h>

#include "rivet_rdm.h"

#define RIVET_CONN_TIMEOUT_MS 2000

/* Every state change goes through here: the endpoint counts connections
 * being set up, whose rdma_cm events progress then looks for at once. */
static void rivet_conn_set_state(struct rivet_conn *conn,
				 enum rivet_conn_state state)
{
	if (conn->state == RIVET_CONN_CONNECTING)
		conn->ep->nconnecting--;
	if (state == RIVET_CONN_CONNECTING) {
		conn->ep->nconnecting++;
		/* its rdma_cm events are looked for at once */
		if (conn->ep->cm_wait > RIVET_RDM_CM_UNITS_SETUP)
			conn->ep->cm_wait = RIVET_RDM_CM_UNITS_SETUP;
	}
	conn->state = state;
}

static int rivet_conn_alloc(struct rivet_rdm_ep *ep, struct rivet_conn **c_p)
{
	struct rivet_conn *conn, **conns;
	int i;

	if (!(ep->nconns & (ep->nconns + 1)) || !ep->conns) {
		conns = realloc(ep->conns, (ep->nconns * 2 + 2) *
				sizeof(*conns));
		if (!conns)
			return -FI_ENOMEM;
		ep->conns = conns;
	}
	conn = calloc(1, sizeof(*conn));
	if (!conn)
		return -FI_ENOMEM;
	conn->ep = ep;
	conn->idx = ep->nconns;
	for (i = 0; i < 2; i++)
		conn->inj_wr[i] = (struct rivet_inj_wr) {
			.kind = RIVET_WR_INJ, .tagged = i, .conn = conn,
		};
	conn->inj_hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_EAGER,
	};
	_Static_assert(offsetof(struct rivet_conn, inj_tail) ==
		       offsetof(struct rivet_conn, inj_hdr) +
		       sizeof(struct rivet_wire_hdr),
		       "an inject's small payload follows its header");
	conn->inj_sge[0] = (struct ibv_sge) {
		.addr = (uintptr_t)&conn->inj_hdr,
		.length = sizeof(conn->inj_hdr),
	};
	conn->inj_send = (struct ibv_send_wr) {
		.sg_list = conn->inj_sge, .opcode = IBV_WR_SEND,
	};
	conn->drain_wr = (struct rivet_inj_wr) {
		.kind = RIVET_WR_DRAIN, .conn = conn,
	};
	conn->addr = FI_ADDR_NOTAVAIL;
	conn->state = RIVET_CONN_CLOSED;
	rivet_conn_set_state(conn, RIVET_CONN_CONNECTING);
	ep->conns[ep->nconns++] = conn;
	*c_p = conn;
	return 0;
}

/* An accepted connection's source, looked up until the AV has it; the
 * messages it left unexpected before then take it at once, ahead of the
 * one that asks (their order stays). */
fi_addr_t rivet_conn_src_slow(struct rivet_conn *conn)
{
	if (conn->addr == FI_ADDR_NOTAVAIL && conn->ep->av && !conn->active) {
		conn->addr = rivet_av_reverse(conn->ep->av,
					      &conn->peer_name.sa);
		if (conn->addr != FI_ADDR_NOTAVAIL && conn->ep->rxq->unresolved)
			rivet_rdm_rxq_resrc(conn);
	}
	return conn->addr;
}

static int rivet_conn_create_qp(struct rivet_conn *conn)
{
	struct rivet_rdm_ep *ep = conn->ep;
	struct ibv_qp_init_attr_ex attr = {
		.send_cq = ep->ibv_cq,
		.recv_cq = ep->ibv_cq,
		.srq = ep->srq,
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = ep->tx_size + RIVET_RDM_CTRL_BUDGET +
				       ep->inj_max,
			.max_send_sge = RIVET_RDM_IOV_LIMIT,
			.max_inline_data = ep->max_inline,
		},
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = ep->domain->pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND,
	};

	int ret;

	ret = rivet_verbs_cm_qp_create(conn->id, &attr, g_rivet_params.wr_api,
				       &conn->inj_qpx);
	if (ret)
		return ret;
	conn->qp = conn->id->qp;
	conn->qp_num = conn->qp->qp_num;
	return 0;
}

static void rivet_conn_param(struct rivet_conn *conn, const void *data,
			     size_t len, struct rdma_conn_param *p)
{
	const struct ibv_device_attr *a = &conn->ep->domain->dev->attr;

	memset(p, 0, sizeof(*p));
	p->private_data = data;
	p->private_data_len = len;
	p->responder_resources = RIVET_MIN(a->max_qp_rd_atom, 16);
	p->initiator_depth = RIVET_MIN(a->max_qp_init_rd_atom, 16);
	p->retry_count = rivet_retry_count(g_rivet_params.retry_count,
					   a->vendor_id);
	p->rnr_retry_count = 7;	/* forever: a full SRQ is never an error */
}

/* Sends to receive context rx_idx > 0 of a peer (fi_rx_addr): their
 * connection, by the whole address. */
struct rivet_conn_slot {
	fi_addr_t addr;
	struct rivet_conn *conn;
	UT_hash_handle hh;
};

/* Where the connection that sends to addr is kept (grown or made as
 * needed), or NULL without memory. */
static struct rivet_conn **rivet_conn_tx_slot(struct rivet_rdm_ep *ep,
					      fi_addr_t addr, bool make)
{
	struct rivet_conn_slot *slot;
	struct rivet_conn **tc;
	uint16_t rx_idx;
	size_t n;

	if (rivet_conn_base(ep, addr, &rx_idx) != addr) {
		HASH_FIND(hh, ep->ctx_conns, &addr, sizeof(addr), slot);
		if (!slot && make) {
			slot = calloc(1, sizeof(*slot));
			if (!slot)
				return NULL;
			slot->addr = addr;
			HASH_ADD(hh, ep->ctx_conns, addr, sizeof(addr), slot);
		}
		return slot ? &slot->conn : NULL;
	}
	if (addr < ep->ntx_conns)
		return &ep->tx_conns[addr];
	if (!make)
		return NULL;
	n = RIVET_MAX(addr + 1, ep->ntx_conns * 2);
	tc = realloc(ep->tx_conns, n * sizeof(*tc));
	if (!tc)
		return NULL;
	memset(tc + ep->ntx_conns, 0, (n - ep->ntx_conns) * sizeof(*tc));
	ep->tx_conns = tc;
	ep->ntx_conns = n;
	return &ep->tx_conns[addr];
}

void rivet_conn_slots_free(struct rivet_rdm_ep *ep)
{
	struct rivet_conn_slot *slot, *tmp;

	HASH_ITER(hh, ep->ctx_conns, slot, tmp) {
		HASH_DEL(ep->ctx_conns, slot);
		free(slot);
	}
}

static int rivet_conn_start(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
			    const union rivet_sockaddr *dst)
{
	union rivet_sockaddr src = ep->name;

	rivet_addr_set_port(&src.sa, 0);
	return rivet_verbs_cm_resolve(ep->cm_channel, conn, &src.sa, &dst->sa,
				      ep->tos, RIVET_CONN_TIMEOUT_MS,
				      &conn->id);
}

/* A connection the peer at addr made to us and that is up: the first
 * send to addr takes it rather than opening one of its own (one QP per
 * pair of endpoints where the peer spoke first: half the QPs, and a
 * ping-pong's two directions on one QP).  A sender keeps the connection
 * it took until it fails, so its messages stay in order. */
static struct rivet_conn *rivet_conn_accepted(struct rivet_rdm_ep *ep,
					      fi_addr_t addr)
{
	struct rivet_conn *conn;
	size_t i;

	for (i = 0; i < ep->nconns; i++) {
		conn = ep->conns[i];
		if (!conn->active && !conn->peer_tx_only &&
		    conn->state == RIVET_CONN_UP &&
		    rivet_conn_src(conn) == addr)
			return conn;
	}
	return NULL;
}

int rivet_conn_get(struct rivet_rdm_ep *ep, fi_addr_t addr,
		   struct rivet_conn **conn_p)
{
	union rivet_sockaddr dst;
	struct rivet_conn *conn, **slot;
	uint16_t rx_idx;
	fi_addr_t base = rivet_conn_base(ep, addr, &rx_idx);
	int ret;

	if (addr < ep->ntx_conns && ep->tx_conns[addr]) {
		*conn_p = ep->tx_conns[addr];
		return 0;
	}
	if (!ep->av || rivet_av_addr(ep->av, base, &dst))
		return -FI_EINVAL;
	slot = rivet_conn_tx_slot(ep, addr, true);
	if (!slot)
		return -FI_ENOMEM;
	if (*slot) {
		*conn_p = *slot;
		return 0;
	}
	/* a peer's connection reaches its receive context 0 */
	conn = rx_idx ? NULL : rivet_conn_accepted(ep, addr);
	if (conn) {
		*slot = conn;
		*conn_p = conn;
		return 0;
	}
	ret = rivet_conn_alloc(ep, &conn);
	if (ret)
		return ret;
	conn->active = true;
	conn->addr = addr;
	conn->rx_idx = rx_idx;
	conn->peer_name = dst;
	ret = rivet_conn_start(ep, conn, &dst);
	if (ret) {
		rivet_conn_set_state(conn, RIVET_CONN_CLOSED);
		return ret;
	}
	RIVET_INFO(EP_CTRL, "connection %u: to address %" PRIu64 " (receive "
		   "context %u)\n", conn->idx, (uint64_t)base, rx_idx);
	/* (rivet_conn_start made no slot: it is still there) */
	*rivet_conn_tx_slot(ep, addr, false) = conn;
	*conn_p = conn;
	return 0;
}

int rivet_conn_post_send(struct rivet_conn *conn, uint64_t wr_id, void *buf,
			 uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = len, .lkey = lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int ret;

	if (len <= conn->ep->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	ret = ibv_post_send(conn->qp, &wr, &bad);
	if (ret)
		return ret == ENOMEM ? -FI_EAGAIN : rivet_errno_to_fi(ret);
	return 0;
}

/* ---- posting, FI_FENCE ---- */

static int rivet_conn_post_op(struct rivet_conn *conn, struct rivet_tx_op *op)
{
	int ret = op->rma ? rivet_rma_post(conn->ep, op) :
			    rivet_eager_send(conn->ep, op);

	if (!ret) {
		op->counted = true;
		conn->inflight++;
	}
	return ret;
}

int rivet_conn_submit(struct rivet_conn *conn, struct rivet_tx_op *op)
{
	if (conn->state == RIVET_CONN_UP && !conn->queued &&
	    !(op->fenced && conn->inflight))
		return rivet_conn_post_op(conn, op);
	/* failed since the caller took it (the post's own progress met
	 * the failure, waiting for a control slot or a registration): not
	 * queued there, where nothing would ever post or fail it; the
	 * caller's next try makes a new connection */
	if (conn->state == RIVET_CONN_CLOSED)
		return -FI_EAGAIN;
	op->state = RIVET_TX_QUEUED;
	DL_APPEND(conn->queued, op);
	return 0;
}

void rivet_conn_flush(struct rivet_conn *conn)
{
	struct rivet_tx_op *op;
	int ret;

	if (conn->flushing)
		return;
	conn->flushing = true;
	while ((op = conn->queued) && conn->state == RIVET_CONN_UP &&
	       !(op->fenced && conn->inflight)) {
		DL_DELETE(conn->queued, op);
		ret = rivet_conn_post_op(conn, op);
		if (ret)	/* nobody is left to be told but the CQ */
			rivet_tx_op_done(conn->ep, op, -ret, 0);
	}
	conn->flushing = false;
}

void rivet_conn_op_done(struct rivet_conn *conn)
{
	if (!--conn->inflight && conn->queued)
		rivet_conn_flush(conn);
}

/* ---- failure ---- */

static void rivet_conn_fail_ops(struct rivet_conn *conn, int err)
{
	struct rivet_rdm_ep *ep = conn->ep;
	struct rivet_tx_op *op, *tmp;

	DL_FOREACH_SAFE(conn->queued, op, tmp) {
		DL_DELETE(conn->queued, op);
		rivet_tx_op_done(ep, op, err, 0);
	}
	DL_FOREACH_SAFE(conn->wait_fin, op, tmp) {
		DL_DELETE(conn->wait_fin, op);
		rivet_tx_op_done(ep, op, err, 0);
	}
}

/* Operations queued or waiting on this connection fail; what is posted
 * flushes through the CQ.  The object stays until the endpoint closes,
 * since flushed completions still point at it. */
/* A work request behind everything posted on a QP in the error state:
 * its flush completion comes last (a send queue completes in order);
 * rivet_conn_drained notes when, and the QP goes a linger later
 * (rivet_conn_probe_all).  Should the post fail, the QP stays until the
 * endpoint closes. */
static void rivet_conn_drain(struct rivet_conn *conn)
{
	struct ibv_send_wr wr = {
		.wr_id = (uintptr_t)&conn->drain_wr, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int ret = ibv_post_send(conn->qp, &wr, &bad);

	if (ret)
		RIVET_INFO(EP_CTRL, "connection %u: its QP stays until the "
			   "endpoint closes (drain: %s)\n", conn->idx,
			   strerror(ret));
}

void rivet_conn_fail(struct rivet_conn *conn, int err)
{
	struct rivet_rdm_ep *ep = conn->ep;
	bool was_up = conn->state == RIVET_CONN_UP;
	struct rivet_conn **slot;

	if (conn->state == RIVET_CONN_CLOSED)
		return;
	RIVET_INFO(EP_CTRL, "connection %u failed: %s\n", conn->idx,
		   fi_strerror(err));
	rivet_conn_set_state(conn, RIVET_CONN_CLOSED);
	slot = conn->addr == FI_ADDR_NOTAVAIL ? NULL :
	       rivet_conn_tx_slot(ep, conn->addr, false);
	if (slot && *slot == conn)
		*slot = NULL;
	/* the QP is released once drained, and a linger later */
	if (conn->qp) {
		rivet_verbs_qp_to_error(conn->qp);
		rivet_conn_drain(conn);
	}
	/* the peer hears of it now (DISCONNECTED), not when its next
	 * operation on the dead QP runs out of retries: it reconnects */
	if (was_up && err != FI_ECONNRESET)
		rivet_verbs_cm_disconnect(conn->id);
	rivet_conn_fail_ops(conn, err);
	rivet_rndv_retry_deferred(conn);	/* fails the deferred reads */
}

void rivet_conn_destroy(struct rivet_conn *conn)
{
	struct rivet_ctrl *c, *tmp;

	if (conn->qp)
		rivet_verbs_cm_qp_destroy(conn->id);
	if (conn->id)
		rivet_verbs_cm_id_destroy(conn->id);
	DL_FOREACH_SAFE(conn->deferred, c, tmp) {
		DL_DELETE(conn->deferred, c);
		if (c->rndv)
			rivet_rndv_drop(conn->ep, c->rndv);
		if (c->fin_rx)
			rivet_rndv_drop(conn->ep, c->fin_rx);
		free(c->msg);
		free(c);
	}
	free(conn);
}

/* ---- rdma_cm events ---- */

/* What bounds the detection of a dead peer on this connection. */
static void rivet_conn_log_up(struct rivet_conn *conn)
{
	uint8_t timeout, retry_cnt;

	if (!fi_log_enabled(&g_rivet_prov, FI_LOG_INFO, FI_LOG_EP_CTRL) ||
	    rivet_verbs_qp_query_retry(conn->qp, &timeout, &retry_cnt))
		return;
	RIVET_INFO(EP_CTRL, "connection %u up, qp 0x%x: ack timeout %u "
		   "(4.096 us * 2^%u), %u retries; short injects by %s\n",
		   conn->idx, conn->qp_num, timeout, timeout, retry_cnt,
		   conn->inj_qpx ? "ibv_wr_send" : "ibv_post_send");
}

static void rivet_conn_up(struct rivet_conn *conn, const void *data,
			  size_t len)
{
	struct rivet_wire_accept a = { 0 }, *acc = &a;

	if (conn->active) {
		if (data)
			memcpy(&a, data, RIVET_MIN(len, sizeof(a)));
		if (!data || len < RIVET_WIRE_ACCEPT_MIN ||
		    acc->magic != RIVET_CONN_MAGIC) {
			rivet_conn_fail(conn, FI_ECONNABORTED);
			return;
		}
		conn->peer_idx = acc->conn_idx;
		conn->peer_inc = acc->incarnation;
		conn->inj_hdr.conn_idx = conn->peer_idx;
		conn->peer_rma_event = acc->flags & RIVET_CONN_F_RMA_EVENT;
	}
	rivet_conn_set_state(conn, RIVET_CONN_UP);
	conn->established = true;
	rivet_qp_set_rnr_timer(conn->qp);
	rivet_conn_log_up(conn);
	rivet_conn_flush(conn);
}

/* The peer's indices (+ 1) of our last two connections to the peer of
 * conn that failed on our side after they were up (rivet_wire_connreq). */
static void rivet_conn_replaced(struct rivet_conn *conn, uint32_t *idx)
{
	struct rivet_rdm_ep *ep = conn->ep;
	struct rivet_conn *c;
	size_t i, n = 0;

	for (i = ep->nconns; i-- > 0 && n < 2;) {
		c = ep->conns[i];
		if (c != conn && c->state == RIVET_CONN_CLOSED &&
		    c->established && rivet_conn_src(c) == conn->addr)
			idx[n++] = c->peer_idx + 1;
	}
}

/* A connection request that names connections of ours its sender has
 * given up: a lost link may have kept us from hearing, and replies on
 * them would go nowhere.  Closed: those to the same endpoint name in the
 * same incarnation (its request's, or its accept's for one we opened):
 * another process that claims the name does not know it; a request
 * without one, from an older peer, replaces none. */
static void rivet_conn_close_replaced(struct rivet_conn *conn,
				      const struct rivet_wire_connreq *req)
{
	const union rivet_sockaddr *from = &conn->peer_name;
	struct rivet_rdm_ep *ep = conn->ep;
	struct rivet_conn *c;
	uint32_t idx;
	int i;

	for (i = 0; i < 2 && req->incarnation; i++) {
		idx = req->replaces[i];
		if (!idx || idx > ep->nconns)
			continue;
		c = ep->conns[idx - 1];
		if (c == conn || c->state == RIVET_CONN_CLOSED ||
		    c->peer_inc != req->incarnation ||
		    !rivet_addr_same_ip(&c->peer_name.sa, &from->sa) ||
		    rivet_addr_port(&c->peer_name.sa) !=
		    rivet_addr_port(&from->sa))
			continue;
		RIVET_INFO(EP_CTRL, "connection %u: the peer has replaced it\n",
			   c->idx);
		rivet_conn_fail(c, FI_ECONNRESET);
	}
}

static void rivet_conn_connect(struct rivet_conn *conn)
{
	struct rivet_wire_connreq req = {
		.magic = RIVET_CONN_MAGIC, .version = RIVET_WIRE_VERSION,
		.conn_idx = conn->idx,
	};
	struct rdma_conn_param p;
	size_t alen = rivet_addr_len(&conn->ep->name.sa);

	req.addr_len = alen;
	req.rx_idx = conn->rx_idx;
	req.incarnation = conn->ep->incarnation;
	req.flags = conn->ep->rma_event ? RIVET_CONN_F_RMA_EVENT : 0;
	if (conn->ep->sep && !conn->ep->sep_rx)
		req.flags |= RIVET_CONN_F_TX_ONLY;
	rivet_conn_replaced(conn, req.replaces);
	memcpy(req.addr, &conn->ep->name, RIVET_MIN(alen, sizeof(req.addr)));
	rivet_conn_param(conn, &req, sizeof(req), &p);
	if (rivet_conn_create_qp(conn) || rivet_verbs_cm_connect(conn->id, &p))
		rivet_conn_fail(conn, FI_ECONNABORTED);
}

/* The name a connection request claims must be on the address rdma_cm
 * saw the request come from: no peer can pose as another node's endpoint
 * (endpoints of one host share an address, so this alone cannot tell
 * them apart).  A refused claim is logged once a process, then at debug
 * level. */
static bool rivet_conn_claim_ok(struct rdma_cm_id *id,
				const struct rivet_wire_connreq *req)
{
	static atomic_bool warned;
	union rivet_sockaddr claim = { 0 }, from = { 0 };
	const struct sockaddr *peer = rdma_get_peer_addr(id);
	char c[64] = "?", f[64] = "?";
	size_t cl = sizeof(c), fl = sizeof(f);

	memcpy(&claim, req->addr,
	       RIVET_MIN((size_t)req->addr_len, sizeof(req->addr)));
	if (rivet_addr_same_ip(&claim.sa, peer))
		return true;
	if (peer)
		memcpy(&from, peer, rivet_addr_len(peer));
	(void)rivet_addr_str(&claim.sa, c, &cl);
	(void)rivet_addr_str(&from.sa, f, &fl);
	if (!atomic_exchange(&warned, true))
		RIVET_WARN(EP_CTRL, "connection request claiming %s from %s "
			   "refused (further ones at debug level)\n", c, f);
	else
		RIVET_DBG(EP_CTRL, "connection request claiming %s from %s "
			  "refused\n", c, f);
	return false;
}

void rivet_conn_accept(struct rivet_rdm_ep *ep, struct rdma_cm_id *id,
		       const struct rivet_wire_connreq *req)
{
	struct rivet_wire_accept acc = {
		.magic = RIVET_CONN_MAGIC, .version = RIVET_WIRE_VERSION,
	};
	struct rdma_conn_param p;
	struct rivet_conn *conn;

	if (!ep->enabled) {
		RIVET_INFO(EP_CTRL, "connection request rejected: the "
			   "endpoint is not enabled\n");
		goto reject;
	}
	if (!rivet_conn_claim_ok(id, req))
		goto reject;
	if (rivet_conn_alloc(ep, &conn)) {
		RIVET_WARN(EP_CTRL, "out of memory: connection request "
			   "rejected\n");
		goto reject;
	}
	conn->id = id;
	id->context = conn;
	conn->peer_idx = req->conn_idx;
	conn->peer_inc = req->incarnation;
	conn->inj_hdr.conn_idx = conn->peer_idx;
	conn->peer_rma_event = req->flags & RIVET_CONN_F_RMA_EVENT;
	conn->peer_tx_only = req->flags & RIVET_CONN_F_TX_ONLY;
	acc.flags = ep->rma_event ? RIVET_CONN_F_RMA_EVENT : 0;
	memcpy(&conn->peer_name, req->addr,
	       RIVET_MIN((size_t)req->addr_len, sizeof(req->addr)));
	rivet_conn_close_replaced(conn, req);
	RIVET_INFO(EP_CTRL, "connection %u: accepted (the peer's %u%s)\n",
		   conn->idx, conn->peer_idx,
		   conn->peer_tx_only ? ", a transmit context" : "");
	acc.conn_idx = conn->idx;
	acc.incarnation = ep->incarnation;
	rivet_conn_param(conn, &acc, sizeof(acc), &p);
	rivet_id_set_ack_timeout(id);
	if (rivet_conn_create_qp(conn) || rivet_verbs_cm_accept(id, &p)) {
		rivet_conn_set_state(conn, RIVET_CONN_CLOSED);
		return;
	}
	rivet_conn_src(conn);
	return;
reject:
	rivet_verbs_cm_refuse(id);
}

static void rivet_conn_connreq(struct rivet_rdm_ep *ep,
			       struct rdma_cm_event *cm)
{
	struct rivet_wire_connreq req = { 0 };
	struct rdma_cm_id *id = cm->id;

	memcpy(&req, cm->param.conn.private_data,
	       RIVET_MIN((size_t)cm->param.conn.private_data_len,
			 sizeof(req)));
	rivet_verbs_cm_event_ack(cm);
	if (req.magic != RIVET_CONN_MAGIC ||
	    req.version != RIVET_WIRE_VERSION) {
		RIVET_WARN(EP_CTRL, "connection request from a non-rivet "
			   "peer rejected\n");
		rivet_verbs_cm_refuse(id);
		return;
	}
	if (req.rx_idx) {	/* a scalable endpoint's context: not us */
		RIVET_INFO(EP_CTRL, "connection request for receive context "
			   "%u rejected: the endpoint has one\n", req.rx_idx);
		rivet_verbs_cm_refuse(id);
		return;
	}
	rivet_conn_accept(ep, id, &req);
}

static void rivet_conn_event(struct rivet_conn *conn,
			     struct rdma_cm_event *cm)
{
	int err;

	switch (rivet_conn_step_of(conn->state, cm->event, &err)) {
	case RIVET_CONN_STEP_NONE:
		break;
	case RIVET_CONN_STEP_IGNORE:
	case RIVET_CONN_STEP_REFUSE:
		RIVET_INFO(EP_CTRL, "connection %u: %s ignored (the "
			   "connection is %s)\n", conn->idx,
			   rdma_event_str(cm->event),
			   conn->state == RIVET_CONN_UP ? "up" : "closed");
		if (cm->event == RDMA_CM_EVENT_ESTABLISHED)
			rivet_verbs_cm_disconnect(conn->id);
		break;
	case RIVET_CONN_STEP_RESOLVE_ROUTE:
		if (rivet_verbs_cm_resolve_route(conn->id,
						 RIVET_CONN_TIMEOUT_MS))
			rivet_conn_fail(conn, FI_EHOSTUNREACH);
		break;
	case RIVET_CONN_STEP_CONNECT:
		rivet_conn_connect(conn);
		break;
	case RIVET_CONN_STEP_UP:
		rivet_conn_up(conn, cm->param.conn.private_data,
			      cm->param.conn.private_data_len);
		break;
	case RIVET_CONN_STEP_RESET:
		rivet_verbs_cm_disconnect(conn->id);
		rivet_conn_fail(conn, err);
		break;
	case RIVET_CONN_STEP_FAIL:
		/* status: e.g. a reject's reason, 10 a stale one */
		RIVET_INFO(EP_CTRL, "connection %u: %s (status %d)\n",
			   conn->idx, rdma_event_str(cm->event), cm->status);
		rivet_conn_fail(conn, err);
		break;
	}
}

void rivet_conn_handle_cm(struct rivet_rdm_ep *ep, struct rdma_cm_event *cm)
{
	if (cm->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		rivet_conn_connreq(ep, cm);
		return;
	}
	if (cm->id != ep->listen_id && cm->id->context)
		rivet_conn_event(cm->id->context, cm);
	rivet_verbs_cm_event_ack(cm);
}
