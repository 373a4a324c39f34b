/* SPDX-License-Identifier: MIT */
/*
 * RMA on RDM endpoints: every fi_read and fi_write variant is a shim into
 * rivet_rma_start, which maps the operation onto one RDMA READ or WRITE
 * (WRITE_WITH_IMM for remote CQ data) on the connection to the peer, as a
 * tx op: queued while the connection comes up, bounded by tx_size, and
 * completed through rivet_tx_op_done.  Also the target's side of a write
 * with immediate data.
 *
 * FI_DELIVERY_COMPLETE writes: RC acknowledges a WRITE once the target's
 * HCA has it, not when it is in memory; a READ, though, is answered only
 * after every earlier WRITE on the QP is done at the target.  So such a
 * write is followed by a zero-byte READ and completes with that READ.
 */
#include <stdlib.h>

#include "rivet_cntr.h"
#include "rivet_iov.h"
#include "rivet_rdm.h"

#define RIVET_RMA_SILENT (1ULL << 63)	/* internal: fi_inject_write* */

struct rivet_rma_req {
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t addr;
	const struct fi_rma_iov *rma;
	void *context;
	uint64_t data;
	uint64_t flags;
	bool read;
};

static int rivet_rma_check(struct rivet_rdm_ep *ep,
			   const struct rivet_rma_req *req, size_t *len_p)
{
	size_t len;

	if (rivet_iov_check(req->iov, req->count, RIVET_RDM_IOV_LIMIT, &len) ||
	    !req->rma)
		return -FI_EINVAL;
	*len_p = len;
	if (len > ep->max_msg_size || len > ep->domain->dev->max_msg_size)
		return -FI_EINVAL;
	if ((req->flags & FI_INJECT) &&
	    (req->read || len > RIVET_RDM_INJECT_SIZE))
		return -FI_EINVAL;
	/* a read carries no data to the target's CQ */
	if (req->read && (req->flags & FI_REMOTE_CQ_DATA))
		return -FI_EINVAL;
	return 0;
}

/* ---- local buffers ---- */

/* The application's registration when it allows the access, else one of
 * the operation's own (from the registration cache, released at
 * completion). */
static int rivet_rma_lkey(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
			  void *desc, const struct iovec *iov, int access,
			  uint32_t *lkey_p)
{
	struct rivet_mr *mr = desc;
	struct rivet_mr_entry *own;
	int ret;

	if (mr && mr->ibv_mr && (mr->ibv_access & access) == access) {
		*lkey_p = mr->ibv_mr->lkey;
		return 0;
	}
	/* local access only: nothing a peer could reach later */
	ret = rivet_mr_get(ep->domain, iov->iov_base, iov->iov_len, access,
			   true, &own);
	if (ret)
		return ret;
	op->mrs[op->nmrs++] = own;
	*lkey_p = own->lkey;
	return 0;
}

/* Whether every non-empty iov has a descriptor that allows access. */
static bool rivet_rma_descs_ok(const struct rivet_rma_req *req, int access)
{
	struct rivet_mr *mr;
	size_t i;

	for (i = 0; i < req->count; i++) {
		if (!req->iov[i].iov_len)
			continue;
		mr = req->desc ? req->desc[i] : NULL;
		if (!mr || !mr->ibv_mr || (mr->ibv_access & access) != access)
			return false;
	}
	return true;
}

/* The staging slot: the data of an inject or small write is copied in
 * now; a small read lands there and is copied out at completion. */
static void rivet_rma_stage(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
			    const struct rivet_rma_req *req, size_t len)
{
	uint8_t *dst = op->buf;
	size_t i;

	if (req->read) {
		op->wr.count = req->count;
		memcpy(op->wr.iov, req->iov, req->count * sizeof(*req->iov));
	}
	for (i = 0; !req->read && i < req->count; i++) {
		memcpy(dst, req->iov[i].iov_base, req->iov[i].iov_len);
		dst += req->iov[i].iov_len;
	}
	op->wr.sges[0] = (struct ibv_sge) {
		.addr = (uintptr_t)op->buf, .length = len,
		.lkey = ep->slab_mr->lkey,
	};
	op->wr.nsge = len ? 1 : 0;
}

static int rivet_rma_sges(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
			  const struct rivet_rma_req *req, size_t len)
{
	int access = req->read ? IBV_ACCESS_LOCAL_WRITE : 0;
	struct ibv_sge *sge = op->wr.sges;
	bool inl = !req->read && len <= ep->max_inline;
	bool small = !inl && len <= ep->slot_size;
	size_t i;
	int ret;

	/* an inject is copied even when it fits inline: a queued operation
	 * is posted after the call returned */
	if ((req->flags & FI_INJECT) ||
	    (small && !rivet_rma_descs_ok(req, access))) {
		rivet_rma_stage(ep, op, req, len);
		if (inl && op->wr.nsge)
			op->wr.send_flags |= IBV_SEND_INLINE;
		return 0;
	}
	for (i = 0; i < req->count; i++) {
		if (!req->iov[i].iov_len)
			continue;
		sge->addr = (uintptr_t)req->iov[i].iov_base;
		sge->length = req->iov[i].iov_len;
		sge->lkey = 0;
		if (!inl) {
			ret = rivet_rma_lkey(ep, op, req->desc ?
					     req->desc[i] : NULL,
					     &req->iov[i], access, &sge->lkey);
			if (ret)
				return ret;
		}
		sge++;
	}
	op->wr.nsge = sge - op->wr.sges;
	if (inl && op->wr.nsge)
		op->wr.send_flags |= IBV_SEND_INLINE;
	return 0;
}

/* ---- posting ---- */

/* The tx op fields every RMA and verbs atomic sets (op->wr aside). */
static void rivet_rma_op_init(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
			      struct rivet_conn *conn, void *context,
			      uint64_t cq_flags, bool silent, uint64_t flags,
			      size_t len)
{
	op->rma = true;
	op->rndv = false;
	op->fin_seen = false;
	op->nmrs = 0;
	op->conn = conn;
	op->context = context;
	op->cq_flags = cq_flags;
	op->report = !silent &&
		     (!ep->tx_selective || (flags & FI_COMPLETION));
	op->tag = 0;
	op->len = len;
}

static void rivet_rma_init(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
			   const struct rivet_rma_req *req,
			   struct rivet_conn *conn, size_t len)
{
	op->wr = (struct rivet_rma_wr) {
		.opcode = req->read ? IBV_WR_RDMA_READ :
			  (req->flags & FI_REMOTE_CQ_DATA) ?
			  IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
		.raddr = req->rma->addr, .rkey = (uint32_t)req->rma->key,
		/* cq_data_size is 4 where RMA is offered: the low 32 bits */
		.imm = htonl((uint32_t)req->data),
		.send_flags = (req->flags & FI_FENCE) ? IBV_SEND_FENCE : 0,
		/* the zero-byte read behind it: delivery complete, or the
		 * witness FI_RIVET_CONFIRM asks for (rivet_retry.c) */
		.delivery = ep->confirm || (!req->read &&
					    (req->flags & FI_DELIVERY_COMPLETE)),
		/* a write with data stays whole: its target reports the
		 * length that one work request brought */
		.seg = len > ep->rdma_seg &&
		       !(req->flags & FI_REMOTE_CQ_DATA),
	};
	rivet_rma_op_init(ep, op, conn, req->context,
			  FI_RMA | (req->read ? FI_READ : FI_WRITE),
			  req->flags & RIVET_RMA_SILENT, req->flags, len);
}

int rivet_rma_post(struct rivet_rdm_ep *ep, struct rivet_tx_op *op)
{
	struct rivet_rma_wr *r = &op->wr;
	struct ibv_send_wr wr[3], *bad;
	struct rivet_rma_tail m;
	struct ibv_sge ev_sge;
	int ret;

	rivet_rma_event_settle(ep, op);
	if (r->seg) {
		r->seg_off = 0;
		ret = rivet_rma_seg_post(ep, op, r->seg_held + 1U);
		if (ret < 0)
			return ret;
		r->wcs = (uint8_t)ret;
		op->state = RIVET_TX_POSTED;
		return 0;
	}
	wr[0] = (struct ibv_send_wr) {
		.wr_id = (uintptr_t)op, .sg_list = r->sges,
		.num_sge = r->nsge, .opcode = r->opcode,
		.send_flags = IBV_SEND_SIGNALED | r->send_flags,
		.imm_data = r->imm,
		.wr.rdma = { .remote_addr = r->raddr, .rkey = r->rkey },
	};
	if (r->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    r->opcode == IBV_WR_ATOMIC_CMP_AND_SWP)
		wr[0].wr.atomic = (typeof(wr[0].wr.atomic)) {
			.remote_addr = r->raddr, .rkey = r->rkey,
			.compare_add = r->compare_add, .swap = r->swap,
		};
	r->wcs = (uint8_t)rivet_rma_add_tail(op, wr, 1, &m, &ev_sge);
	ret = ibv_post_send(op->conn->qp, wr, &bad);
	if (ret && bad == wr) {
		RIVET_DBG(EP_DATA, "ibv_post_send: %s\n", strerror(ret));
		return ret == ENOMEM ? -FI_EAGAIN : rivet_errno_to_fi(ret);
	}
	if (ret) {		/* the first went, not all that followed */
		r->wcs = bad - wr;
		r->err = FI_EIO;
	}
	op->state = RIVET_TX_POSTED;
	return 0;
}

/* Internal work requests beyond the operation's own, each a unit of
 * ep->ctrl_free: the zero-byte READ of a delivery-complete write (or of
 * any operation, with FI_RIVET_CONFIRM: its witness), and the
 * RMA event message (reserved while the connection is not up: whether
 * the peer wants events is known then). */
static int rivet_rma_take_ctrl(struct rivet_rdm_ep *ep,
			       struct rivet_tx_op *op)
{
	unsigned int n = op->wr.delivery ? 1 : 0;

	unsigned int seg = op->wr.seg ?
		(unsigned int)RIVET_MIN(rivet_rma_seg_count(op->len,
							    ep->rdma_seg),
					RIVET_RMA_SEG_WINDOW) - 1 : 0;

	if (op->conn->state != RIVET_CONN_UP || op->conn->peer_rma_event)
		n++;
	if (!n && !seg)
		return 0;
	if (ep->ctrl_free < n + seg)
		rivet_rdm_progress_locked(ep);
	if (ep->ctrl_free < n + seg)
		return -FI_EAGAIN;
	ep->ctrl_free -= n + seg;
	op->wr.ctrl_held = n;
	op->wr.seg_held = seg;
	return 0;
}

static void rivet_rma_release(struct rivet_rdm_ep *ep, struct rivet_tx_op *op)
{
	ep->ctrl_free += op->wr.ctrl_held + op->wr.seg_held;
	op->wr.ctrl_held = op->wr.seg_held = 0;
	op->wr.event = false;
	rivet_tx_op_release(ep, op);
	op->rma = false;
}

static int rivet_rma_start_locked(struct rivet_rdm_ep *ep,
				  const struct rivet_rma_req *req, size_t len)
{
	struct rivet_conn *conn;
	struct rivet_tx_op *op;
	int ret;

	RIVET_RDM_HELD(ep);
	op = rivet_tx_op_get(ep);
	if (!op)
		return -FI_EAGAIN;
	ret = rivet_conn_get(ep, req->addr, &conn);
	if (!ret) {
		rivet_rma_init(ep, op, req, conn, len);
		ret = rivet_rma_take_ctrl(ep, op);
	}
	if (!ret)
		ret = rivet_rma_sges(ep, op, req, len);
	if (!ret) {
		op->fenced = req->flags & FI_FENCE;
		ret = rivet_conn_submit(conn, op);
	}
	if (ret) {
		rivet_rma_release(ep, op);
		LL_PREPEND(ep->tx_free, op);
	}
	return ret;
}

/*
 * The common case in a few dozen instructions (it is most of what MPI's
 * one-sided and SHMEM puts and gets are): one local buffer that the
 * application registered for the access, the connection up with nothing
 * queued on it, no event, fence, delivery-complete, data or inject to
 * arrange.  The work request goes straight to the QP; the operation is
 * the same tx op the general path makes, completed by the same code.
 * RIVET_RMA_SLOW: not such a case (or no tx op free), the caller takes the
 * general path, which also gives every error its code.
 */
#define RIVET_RMA_SLOW 1

/* The connection to addr when an operation may go straight to its QP:
 * up, nothing queued before it, no RMA events asked for; else NULL. */
static struct rivet_conn *rivet_rma_direct_conn(struct rivet_rdm_ep *ep,
						fi_addr_t addr)
{
	struct rivet_conn *conn = rivet_conn_ready(ep, addr);

	return conn && !conn->peer_rma_event ? conn : NULL;
}

/* Posts ep->tx_free's first op, whose op->wr the caller filled in (one
 * work request: nsge, sges, opcode, raddr, rkey, send_flags, and for the
 * atomics compare_add, swap), then makes it a posted tx op of conn's.
 * RIVET_RMA_SLOW when the QP refused it (the general path retries it and
 * names the error). */
static int rivet_rma_direct(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
			    void *context, uint64_t cq_flags, uint64_t flags,
			    size_t len)
{
	struct rivet_tx_op *op = ep->tx_free;
	struct ibv_send_wr wr, *bad;

	op->wr.delivery = op->wr.event = op->wr.seg = false;
	op->wr.ctrl_held = op->wr.seg_held = 0;
	op->wr.wcs = 1;
	op->wr.err = op->wr.prov_errno = 0;
	/* the fields of this work request only (no 120-byte zeroing) */
	wr.wr_id = (uintptr_t)op;
	wr.next = NULL;
	wr.sg_list = op->wr.sges;
	wr.num_sge = op->wr.nsge;
	wr.opcode = op->wr.opcode;
	wr.send_flags = IBV_SEND_SIGNALED | op->wr.send_flags;
	wr.imm_data = 0;
	if (op->wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    op->wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = op->wr.raddr;
		wr.wr.atomic.rkey = op->wr.rkey;
		wr.wr.atomic.compare_add = op->wr.compare_add;
		wr.wr.atomic.swap = op->wr.swap;
	} else {
		wr.wr.rdma.remote_addr = op->wr.raddr;
		wr.wr.rdma.rkey = op->wr.rkey;
	}
	if (ibv_post_send(conn->qp, &wr, &bad))
		return RIVET_RMA_SLOW;
	LL_DELETE(ep->tx_free, op);
	rivet_rma_op_init(ep, op, conn, context, cq_flags, false, flags, len);
	op->fenced = false;
	op->state = RIVET_TX_POSTED;
	op->counted = true;
	conn->inflight++;
	return 0;
}

static int rivet_rma_fast_locked(struct rivet_rdm_ep *ep,
				 const struct rivet_rma_req *req)
{
	const uint64_t slow_flags = FI_INJECT | FI_FENCE | FI_REMOTE_CQ_DATA |
				    RIVET_RMA_SILENT;
	int access = req->read ? IBV_ACCESS_LOCAL_WRITE : 0;
	struct rivet_mr *mr = req->desc ? req->desc[0] : NULL;
	size_t len = req->iov[0].iov_len;
	struct rivet_tx_op *op = ep->tx_free;
	struct rivet_conn *conn;

	RIVET_RDM_HELD(ep);
	if (!op || ep->confirm || (req->flags & slow_flags) ||
	    (!req->read && (req->flags & FI_DELIVERY_COMPLETE)) ||
	    !mr || !mr->ibv_mr || (mr->ibv_access & access) != access ||
	    !len || len > ep->rdma_seg ||
	    !(conn = rivet_rma_direct_conn(ep, req->addr)))
		return RIVET_RMA_SLOW;
	op->wr.opcode = req->read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
	op->wr.raddr = req->rma->addr;
	op->wr.rkey = (uint32_t)req->rma->key;
	op->wr.send_flags = !req->read && len <= ep->max_inline ?
			    IBV_SEND_INLINE : 0;
	op->wr.nsge = 1;
	op->wr.sges[0] = (struct ibv_sge) {
		.addr = (uintptr_t)req->iov[0].iov_base,
		.length = (uint32_t)len, .lkey = mr->ibv_mr->lkey,
	};
	op->wr.fetch = false;
	op->wr.count = 0;
	return rivet_rma_direct(ep, conn, req->context, FI_RMA |
				(req->read ? FI_READ : FI_WRITE), req->flags,
				len);
}

static ssize_t rivet_rma_start(struct rivet_rdm_ep *ep,
			       const struct rivet_rma_req *req)
{
	size_t len;
	int ret = rivet_rma_check(ep, req, &len);

	if (ret)
		return ret;
	rivet_rdm_lock(ep);
	ret = req->count == 1 ? rivet_rma_fast_locked(ep, req) :
				RIVET_RMA_SLOW;
	if (ret == RIVET_RMA_SLOW)
		ret = ep->enabled ? rivet_rma_start_locked(ep, req, len) :
				    -FI_EOPBADSTATE;
	rivet_rdm_unlock(ep);
	return ret;
}

/* ---- verbs atomics ---- */

/* op->wr for one verbs atomic; the old value lands in the op's staging
 * slot and is copied to result at the end. */
static void rivet_rma_atomic_wr(struct rivet_rdm_ep *ep,
				struct rivet_tx_op *op,
				enum ibv_wr_opcode opcode, uint64_t raddr,
				uint64_t key, uint64_t compare_add,
				uint64_t swap, void *result, uint64_t flags)
{
	op->wr = (struct rivet_rma_wr) {
		.opcode = opcode, .raddr = raddr, .rkey = (uint32_t)key,
		.compare_add = compare_add, .swap = swap,
		.fetch = result != NULL,
		.delivery = ep->confirm,	/* its witness (rivet_retry.c) */
		.send_flags = (flags & FI_FENCE) ? IBV_SEND_FENCE : 0,
		.nsge = 1, .count = result ? 1 : 0,
	};
	op->wr.sges[0] = (struct ibv_sge) {
		.addr = (uintptr_t)op->buf, .length = 8,
		.lkey = ep->slab_mr->lkey,
	};
	op->wr.iov[0] = (struct iovec) { result, 8 };
}

ssize_t rivet_rma_native_atomic(struct rivet_rdm_ep *ep, fi_addr_t addr,
				enum ibv_wr_opcode opcode, uint64_t raddr,
				uint64_t key, uint64_t compare_add,
				uint64_t swap, void *result, void *context,
				uint64_t flags, bool silent)
{
	struct rivet_conn *conn;
	struct rivet_tx_op *op;
	int ret;

	rivet_rdm_lock(ep);
	ret = RIVET_RMA_SLOW;
	op = ep->tx_free;
	conn = op && !silent && !(flags & FI_FENCE) && !ep->confirm ?
	       rivet_rma_direct_conn(ep, addr) : NULL;
	if (conn) {
		rivet_rma_atomic_wr(ep, op, opcode, raddr, key, compare_add,
				    swap, result, flags);
		ret = rivet_rma_direct(ep, conn, context, FI_ATOMIC |
				       (result ? FI_READ : FI_WRITE), flags, 8);
	}
	if (ret != RIVET_RMA_SLOW)
		goto out;
	ret = -FI_EOPBADSTATE;
	if (!ep->enabled)
		goto out;
	ret = -FI_EAGAIN;
	op = rivet_tx_op_get(ep);
	if (!op)
		goto out;
	ret = rivet_conn_get(ep, addr, &conn);
	if (!ret) {
		rivet_rma_atomic_wr(ep, op, opcode, raddr, key, compare_add,
				    swap, result, flags);
		rivet_rma_op_init(ep, op, conn, context, FI_ATOMIC |
				  (result ? FI_READ : FI_WRITE), silent, flags,
				  8);
		ret = rivet_rma_take_ctrl(ep, op);
	}
	if (!ret) {
		op->fenced = flags & FI_FENCE;
		ret = rivet_conn_submit(conn, op);
	}
	if (ret) {
		rivet_rma_release(ep, op);
		LL_PREPEND(ep->tx_free, op);
	}
out:
	rivet_rdm_unlock(ep);
	return ret;
}

/* ---- completions ---- */

void rivet_rma_wc(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
		  const struct ibv_wc *wc)
{
	struct rivet_rma_wr *r = &op->wr;
	struct rivet_conn *conn = op->conn;

	if (wc->status != IBV_WC_SUCCESS && !r->err) {
		r->err = rivet_wc_status_to_fi(wc->status);
		r->prov_errno = wc->status;
	}
	r->wcs--;
	/* a read in pieces: the next piece takes this one's place */
	if (r->seg && !r->err && wc->status == IBV_WC_SUCCESS &&
	    r->seg_off < op->len) {
		int n = rivet_rma_seg_post(ep, op, 1);

		if (n < 0) {
			r->err = FI_EIO;
			r->prov_errno = RIVET_PERR_CONN;
		}
		r->wcs += n > 0 ? (uint8_t)n : 0;
	}
	if (!r->wcs)
		rivet_tx_op_done(ep, op, r->err, r->prov_errno);
	/* the QP is in error now: the next operation reconnects */
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			RIVET_INFO(EP_DATA, "connection %u: an RMA operation "
				   "failed: %s\n", conn->idx,
				   ibv_wc_status_str(wc->status));
		rivet_conn_fail(conn, FI_ECONNABORTED);
	}
}

static void rivet_rma_copy_out(struct rivet_tx_op *op)
{
	const uint8_t *src = op->buf;
	size_t i;

	for (i = 0; i < op->wr.count; i++) {
		memcpy(op->wr.iov[i].iov_base, src, op->wr.iov[i].iov_len);
		src += op->wr.iov[i].iov_len;
	}
}

void rivet_rma_complete(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
			struct rivet_cq_entry *e)
{
	struct rivet_cntr *cntr = (op->cq_flags & FI_READ) ? ep->read_cntr :
							     ep->write_cntr;

	if (!e->err && (op->cq_flags & FI_READ)) {
		int i;

		for (i = 0; i < op->wr.nsge; i++)
			RIVET_MEM_DEFINED((void *)(uintptr_t)op->wr.sges[i].addr,
					  op->wr.sges[i].length);
	}
	if (!e->err && op->wr.count)
		rivet_rma_copy_out(op);
	rivet_rma_release(ep, op);
	if (e->err) {
		rivet_cq_write(ep->tx_cq, e);	/* errors are always reported */
		rivet_cntr_inc_err(cntr);
		return;
	}
	if (op->report)
		rivet_cq_write(ep->tx_cq, e);
	rivet_cntr_inc(cntr);
}

/* The target's side of an RMA or atomic when FI_RMA_EVENT is on: the
 * remote read or write counter, and an event in the receive CQ (no
 * context; FI_RMA or FI_ATOMIC with FI_REMOTE_READ or FI_REMOTE_WRITE). */
void rivet_rma_event(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
		     uint64_t cq_flags, size_t len)
{
	struct rivet_cq_entry e = {
		.flags = cq_flags, .len = len,
		.src = conn ? rivet_conn_src(conn) : FI_ADDR_NOTAVAIL,
	};

	if (!ep->rma_event)
		return;
	rivet_cq_write(ep->rx_cq, &e);
	rivet_cntr_inc((cq_flags & FI_REMOTE_READ) ? ep->rread_cntr :
						     ep->rwrite_cntr);
}

void rivet_rma_handle_event(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
			    const struct rivet_wire_hdr *hdr)
{
	const struct rivet_wire_rma_event *ev = (const void *)(hdr + 1);
	uint64_t dir = (ev->flags & RIVET_RMA_EV_READ) ? FI_REMOTE_READ :
							 FI_REMOTE_WRITE;
	uint64_t kind = (ev->flags & RIVET_RMA_EV_ATOMIC) ? FI_ATOMIC : FI_RMA;
	/* a verbs atomic needs the region's FI_REMOTE_WRITE alone */
	uint64_t need = kind == FI_ATOMIC ? FI_REMOTE_WRITE : dir;

	if (!ep->rma_event)
		return;
	/* only what the endpoint and region let a peer do: an event with
	 * another key, range or direction was never an operation */
	if (!rivet_rdm_ep_targets(ep, kind, need) ||
	    !rivet_mr_rma_event(ep->domain, ev->rkey, ev->addr, ev->len, need,
				/* fi_mr(3): atomics */
				kind == FI_ATOMIC ? dir | FI_REMOTE_WRITE :
						    dir)) {
		RIVET_DBG(EP_DATA, "RMA event from connection %u for key 0x%x "
			  "[0x%" PRIx64 ", +%" PRIu64 ") ignored: no such "
			  "access\n", conn->idx, ev->rkey, ev->addr, ev->len);
		return;
	}
	if (!(ev->flags & RIVET_RMA_EV_REGION_ONLY))
		rivet_rma_event(ep, conn, kind | dir, ev->len);
}

/* Remote CQ data completions are always reported (fi_cq(3)), whatever
 * the receive side's selective completion says. */
void rivet_rma_handle_imm(struct rivet_rdm_ep *ep, struct rivet_rdm_buf *buf,
			  const struct ibv_wc *wc)
{
	struct rivet_conn *conn = rivet_conn_of_qp(ep, wc->qp_num);
	struct rivet_cq_entry e = {
		.flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
		.len = wc->byte_len, .data = ntohl(wc->imm_data),
		.src = conn ? rivet_conn_src(conn) : FI_ADDR_NOTAVAIL,
	};

	rivet_rdm_srq_give(ep, buf);
	/* only an endpoint that takes remote writes hears of them */
	if (!conn || !rivet_rdm_ep_targets(ep, FI_RMA, FI_REMOTE_WRITE)) {
		RIVET_WARN(EP_DATA, "write with immediate data on qp 0x%x "
			   "ignored: the endpoint has no FI_REMOTE_WRITE\n",
			   wc->qp_num);
		return;
	}
	rivet_cq_write(ep->rx_cq, &e);
	if (ep->rma_event)	/* the event is the data completion above */
		rivet_cntr_inc(ep->rwrite_cntr);
}

/* ---- fi_ops_rma ---- */

static ssize_t rivet_rma_msg(struct fid_ep *fid, const struct fi_msg_rma *msg,
			     uint64_t flags, bool read)
{
	struct rivet_rma_req req;

	if (flags & FI_TRIGGER)		/* fi_trigger(3) */
		return rivet_rdm_trig_rma(fid, msg, flags, read);
	/* one RDMA work request names one remote range */
	if (!msg || msg->rma_iov_count != 1)
		return -FI_EINVAL;
	req = (struct rivet_rma_req) {
		.iov = msg->msg_iov, .desc = msg->desc,
		.count = msg->iov_count, .addr = msg->addr,
		.rma = msg->rma_iov, .context = msg->context,
		.data = msg->data, .flags = flags, .read = read,
	};
	return rivet_rma_start(to_rrdm(fid), &req);
}

static ssize_t rivet_rdm_readmsg(struct fid_ep *fid,
				 const struct fi_msg_rma *msg, uint64_t flags)
{
	return rivet_rma_msg(fid, msg, flags, true);
}

static ssize_t rivet_rdm_writemsg(struct fid_ep *fid,
				  const struct fi_msg_rma *msg, uint64_t flags)
{
	return rivet_rma_msg(fid, msg, flags, false);
}

/* The shape every non-msg variant reduces to. */
static ssize_t rivet_rma_shim(struct fid_ep *fid, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t addr,
			      uint64_t raddr, uint64_t key, void *context,
			      uint64_t data, uint64_t flags, bool read)
{
	struct fi_rma_iov rma = { .addr = raddr, .key = key };
	struct fi_msg_rma msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = addr, .rma_iov = &rma, .rma_iov_count = 1,
		.context = context, .data = data,
	};

	return rivet_rma_msg(fid, &msg, flags, read);
}

static ssize_t rivet_rdm_readv(struct fid_ep *fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t src,
			       uint64_t addr, uint64_t key, void *context)
{
	return rivet_rma_shim(fid, iov, desc, count, src, addr, key, context,
			      0, to_rrdm(fid)->tx_op_flags, true);
}

static ssize_t rivet_rdm_read(struct fid_ep *fid, void *buf, size_t len,
			      void *desc, fi_addr_t src, uint64_t addr,
			      uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rivet_rdm_readv(fid, &iov, &desc, 1, src, addr, key, context);
}

static ssize_t rivet_rdm_writev(struct fid_ep *fid, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t dest,
				uint64_t addr, uint64_t key, void *context)
{
	return rivet_rma_shim(fid, iov, desc, count, dest, addr, key, context,
			      0, to_rrdm(fid)->tx_op_flags, false);
}

static ssize_t rivet_rdm_write(struct fid_ep *fid, const void *buf,
			       size_t len, void *desc, fi_addr_t dest,
			       uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_rdm_writev(fid, &iov, &desc, 1, dest, addr, key,
				context);
}

static ssize_t rivet_rdm_writedata(struct fid_ep *fid, const void *buf,
				   size_t len, void *desc, uint64_t data,
				   fi_addr_t dest, uint64_t addr, uint64_t key,
				   void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_rma_shim(fid, &iov, &desc, 1, dest, addr, key, context,
			      data, to_rrdm(fid)->tx_op_flags |
			      FI_REMOTE_CQ_DATA, false);
}

static ssize_t rivet_rdm_inject_write(struct fid_ep *fid, const void *buf,
				      size_t len, fi_addr_t dest,
				      uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_rma_shim(fid, &iov, NULL, 1, dest, addr, key, NULL, 0,
			      FI_INJECT | RIVET_RMA_SILENT, false);
}

static ssize_t rivet_rdm_inject_writedata(struct fid_ep *fid,
					  const void *buf, size_t len,
					  uint64_t data, fi_addr_t dest,
					  uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_rma_shim(fid, &iov, NULL, 1, dest, addr, key, NULL, data,
			      FI_INJECT | FI_REMOTE_CQ_DATA | RIVET_RMA_SILENT,
			      false);
}

struct fi_ops_rma g_rivet_rdm_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rivet_rdm_read,
	.readv = rivet_rdm_readv,
	.readmsg = rivet_rdm_readmsg,
	.write = rivet_rdm_write,
	.writev = rivet_rdm_writev,
	.writemsg = rivet_rdm_writemsg,
	.inject = rivet_rdm_inject_write,
	.writedata = rivet_rdm_writedata,
	.injectdata = rivet_rdm_inject_writedata,
};
