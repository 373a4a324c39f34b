/* SPDX-License-Identifier: MIT */
/*
 * Atomics on RDM endpoints.  Every fi_atomic, fi_fetch_atomic and
 * fi_compare_atomic variant becomes one RIVET_OP_ATOMIC message on the
 * connection to the peer (a tx op, queued while the connection comes up);
 * the target's progress engine finds the region by its key, checks access
 * and range, computes the operation (rivet_atomic_ops.c) under one
 * process-wide lock and answers with RIVET_OP_ATOMIC_RESP: a status and,
 * for the fetching kinds, the old values.  The operation completes at the
 * initiator when both its send's work completion and the answer are in,
 * so every atomic completes delivered, and errors at the target (bad key,
 * access, range, unsupported) come back as error completions.
 *
 * These atomics are computed by the target's CPU.  The lock serialises
 * every such atomic of the process, so two endpoints or domains targeting
 * one location stay atomic too.  With FI_RIVET_NATIVE_ATOMICS the domain
 * offers only what verbs atomics do (FI_SUM, FI_CSWAP on one 64-bit
 * integer) and runs them on the NIC: a process picks one kind for all its
 * domains, so the two never mix on a location.
 */
#include <stdlib.h>

#include "rivet_atomic.h"
#include "rivet_rdm.h"

#define RIVET_ATOMIC_SILENT (1ULL << 63)	/* internal: fi_inject_atomic */

static pthread_mutex_t g_rivet_atomic_lock = PTHREAD_MUTEX_INITIALIZER;

struct rivet_atomic_req {
	const struct fi_ioc *iov;	/* operands */
	size_t count;
	const struct fi_ioc *comparev;
	size_t compare_count;
	struct fi_ioc *resultv;
	size_t result_count;
	fi_addr_t addr;
	const struct fi_rma_ioc *rma;
	size_t rma_count;
	enum fi_datatype datatype;
	enum fi_op op;
	enum rivet_atomic_kind kind;
	void *context;
	uint64_t flags;
};

/* The documented argument errors: -FI_EINVAL, or -FI_EOPNOTSUPP for a
 * triple that fi_query_atomic would refuse. */
static int rivet_atomic_check(bool native, const struct rivet_atomic_req *req,
			      size_t *n_p)
{
	size_t n, max;

	if (!rivet_atomic_offered(native, req->op, req->datatype, req->kind))
		return -FI_EOPNOTSUPP;
	if (req->rma_count != 1 || !req->rma ||
	    req->count > RIVET_RDM_IOV_LIMIT ||
	    req->compare_count > RIVET_RDM_IOV_LIMIT ||
	    req->result_count > RIVET_RDM_IOV_LIMIT)
		return -FI_EINVAL;
	if (req->flags & FI_REMOTE_CQ_DATA)
		return -FI_EBADFLAGS;
	n = req->rma->count;
	max = rivet_atomic_offered_count(native, req->datatype, req->kind);
	if (!n || n > max)
		return -FI_EINVAL;
	if (req->op != FI_ATOMIC_READ &&
	    (!req->iov || rivet_ioc_elems(req->iov, req->count) != n))
		return -FI_EINVAL;
	if (req->kind != RIVET_ATOMIC_WRITE &&
	    (!req->resultv ||
	     rivet_ioc_elems(req->resultv, req->result_count) != n))
		return -FI_EINVAL;
	if (req->kind == RIVET_ATOMIC_COMPARE &&
	    (!req->comparev ||
	     rivet_ioc_elems(req->comparev, req->compare_count) != n))
		return -FI_EINVAL;
	/* fi_atomic(3): FI_INJECT gives back the constant buffers (operands,
	 * compare values), which rivet copies at the call anyway; the
	 * results of a fetch or compare are written when it completes */
	if ((req->flags & FI_INJECT) &&
	    n * rivet_atomic_size(req->datatype) > RIVET_RDM_INJECT_SIZE)
		return -FI_EINVAL;
	*n_p = n;
	return 0;
}

static uint8_t *rivet_ioc_gather(uint8_t *dst, const struct fi_ioc *ioc,
				 size_t n, size_t size)
{
	size_t i;

	for (i = 0; i < n; i++) {
		memcpy(dst, ioc[i].addr, ioc[i].count * size);
		dst += ioc[i].count * size;
	}
	return dst;
}

/* The request message in the op's staging slot: header, descriptor,
 * operands, compare values.  The results' iovs are kept for the answer. */
static void rivet_atomic_stage(struct rivet_tx_op *op,
			       const struct rivet_atomic_req *req, size_t n)
{
	size_t size = rivet_atomic_size(req->datatype), i;
	struct rivet_wire_hdr *hdr = (struct rivet_wire_hdr *)op->buf;
	struct rivet_wire_atomic *a = (struct rivet_wire_atomic *)(hdr + 1);
	uint8_t *p = (uint8_t *)(a + 1);

	*a = (struct rivet_wire_atomic) {
		.send_id = rivet_wire_send_id(op->gen, op->index),
		.addr = req->rma->addr, .key = req->rma->key,
		.op = req->op, .datatype = req->datatype, .kind = req->kind,
		.count = (uint32_t)n,
	};
	if (req->op != FI_ATOMIC_READ)
		p = rivet_ioc_gather(p, req->iov, req->count, size);
	if (req->kind == RIVET_ATOMIC_COMPARE)
		p = rivet_ioc_gather(p, req->comparev, req->compare_count,
				     size);
	*hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_ATOMIC,
		.len = p - (uint8_t *)(a + 1),
	};
	op->buf_len = p - op->buf;
	op->wr.count = 0;
	for (i = 0; req->kind != RIVET_ATOMIC_WRITE &&
		    i < req->result_count; i++) {
		op->wr.iov[i].iov_base = req->resultv[i].addr;
		op->wr.iov[i].iov_len = req->resultv[i].count * size;
	}
	op->wr.count = req->kind == RIVET_ATOMIC_WRITE ? 0 :
		       req->result_count;
}

static void rivet_atomic_init(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
			      const struct rivet_atomic_req *req,
			      struct rivet_conn *conn, size_t n)
{
	op->rma = false;
	op->atomic = true;
	op->rndv = false;
	op->fin_seen = false;
	op->nmrs = 0;
	op->wr.ctrl_held = false;
	op->conn = conn;
	op->context = req->context;
	op->cq_flags = FI_ATOMIC |
		       (req->kind == RIVET_ATOMIC_WRITE ? FI_WRITE : FI_READ);
	op->report = !(req->flags & RIVET_ATOMIC_SILENT) &&
		     (!ep->tx_selective || (req->flags & FI_COMPLETION));
	op->tag = 0;
	op->len = n * rivet_atomic_size(req->datatype);
}

/* FI_RIVET_NATIVE_ATOMICS: FI_SUM becomes FETCH_AND_ADD, FI_CSWAP
 * CMP_AND_SWP, on one 64-bit integer (rivet_atomic_check made sure). */
static ssize_t rivet_atomic_native(struct rivet_rdm_ep *ep,
				   const struct rivet_atomic_req *req)
{
	uint64_t operand, compare = 0;
	void *result = req->kind == RIVET_ATOMIC_WRITE ? NULL :
		       rivet_ioc_one(req->resultv, req->result_count)->addr;

	memcpy(&operand, rivet_ioc_one(req->iov, req->count)->addr, 8);
	if (req->kind == RIVET_ATOMIC_COMPARE)
		memcpy(&compare, rivet_ioc_one(req->comparev,
					       req->compare_count)->addr, 8);
	if (req->op == FI_SUM)
		return rivet_rma_native_atomic(ep, req->addr,
					       IBV_WR_ATOMIC_FETCH_AND_ADD,
					       req->rma->addr, req->rma->key,
					       operand, 0, result,
					       req->context, req->flags,
					       req->flags & RIVET_ATOMIC_SILENT);
	return rivet_rma_native_atomic(ep, req->addr,
				       IBV_WR_ATOMIC_CMP_AND_SWP,
				       req->rma->addr, req->rma->key, compare,
				       operand, result, req->context,
				       req->flags,
				       req->flags & RIVET_ATOMIC_SILENT);
}

static ssize_t rivet_atomic_start(struct rivet_rdm_ep *ep,
				  const struct rivet_atomic_req *req)
{
	struct rivet_conn *conn;
	struct rivet_tx_op *op;
	size_t n = 0;
	int ret = rivet_atomic_check(ep->domain->native_atomics, req, &n);

	if (ret)
		return ret;
	if (ep->domain->native_atomics)
		return rivet_atomic_native(ep, req);
	rivet_rdm_lock(ep);
	ret = -FI_EOPBADSTATE;
	if (!ep->enabled)
		goto out;
	op = rivet_tx_op_get(ep);
	ret = -FI_EAGAIN;
	if (!op)
		goto out;
	ret = rivet_conn_get(ep, req->addr, &conn);
	if (!ret) {
		rivet_atomic_init(ep, op, req, conn, n);
		rivet_atomic_stage(op, req, n);
		op->fenced = req->flags & FI_FENCE;
		ret = rivet_conn_submit(conn, op);
	}
	if (ret) {
		op->atomic = false;
		LL_PREPEND(ep->tx_free, op);
	}
out:
	rivet_rdm_unlock(ep);
	return ret;
}

/* ---- the target ---- */

/* 0, or the positive FI_E* code the initiator's completion carries. */
static int rivet_atomic_execute(struct rivet_rdm_ep *ep,
				const struct rivet_wire_atomic *a,
				const uint8_t *operands, size_t len,
				uint8_t *old)
{
	enum fi_datatype dt = a->datatype;
	enum fi_op op = a->op;
	enum rivet_atomic_kind kind = a->kind;
	size_t size = rivet_atomic_size(dt), n = a->count, want;
	struct rivet_domain *dom = ep->domain;
	uint64_t need;
	struct rivet_mr *mr;
	int status = 0;

	if (kind > RIVET_ATOMIC_COMPARE ||
	    !rivet_atomic_supported(op, dt, kind) ||
	    !n || n > rivet_atomic_max_count(dt, kind))
		return FI_EOPNOTSUPP;
	want = (op == FI_ATOMIC_READ ? 0 : n * size) +
	       (kind == RIVET_ATOMIC_COMPARE ? n * size : 0);
	if (len != want)
		return FI_EINVAL;
	need = (op == FI_ATOMIC_READ ? 0 : FI_REMOTE_WRITE) |
	       (kind == RIVET_ATOMIC_WRITE ? 0 : FI_REMOTE_READ);
	/* the endpoint must be a target of atomics (fi_getinfo(3): with
	 * none of the four direction bits, every direction) */
	if (!rivet_rdm_ep_targets(ep, FI_ATOMIC, need))
		return FI_EACCES;
	pthread_mutex_lock(&dom->mr_lock);
	mr = rivet_mr_remote_locked(dom, a->key, a->addr, n * size, need);
	if (!mr)
		status = FI_EACCES;
	else {
		pthread_mutex_lock(&g_rivet_atomic_lock);
		rivet_atomic_apply(op, dt, (uint8_t *)mr->ibv_mr->addr +
				   (a->addr - mr->iova),
				   op == FI_ATOMIC_READ ? NULL : operands,
				   kind == RIVET_ATOMIC_COMPARE ?
				   operands + n * size : NULL,
				   kind == RIVET_ATOMIC_WRITE ? NULL : old, n);
		pthread_mutex_unlock(&g_rivet_atomic_lock);
		/* fi_mr(3): a region's FI_REMOTE_WRITE counter counts every
		 * atomic that modifies it, fetching ones too (SOS waits on
		 * one for a swap); FI_REMOTE_READ ones count fetches */
		if (ep->rma_event)
			rivet_mr_rma_event_locked(mr,
				(op == FI_ATOMIC_READ ? 0 : FI_REMOTE_WRITE) |
				(kind == RIVET_ATOMIC_WRITE ? 0 :
				 FI_REMOTE_READ));
	}
	pthread_mutex_unlock(&dom->mr_lock);
	return status;
}

void rivet_atomic_handle_req(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
			     const struct rivet_wire_hdr *hdr, size_t len)
{
	const struct rivet_wire_atomic *a = (const void *)(hdr + 1);
	struct {
		struct rivet_wire_hdr hdr;
		struct rivet_wire_atomic_resp resp;
		uint8_t data[RIVET_ATOMIC_MAX_BYTES];
	} m;
	size_t n;
	int status;

	if (len < sizeof(*hdr) + sizeof(*a) ||
	    hdr->len != len - sizeof(*hdr) - sizeof(*a))
		return;		/* rivet_rx_valid let nothing else through */
	status = rivet_atomic_execute(ep, a, (const uint8_t *)(a + 1),
				      hdr->len, m.data);
	n = !status && a->kind != RIVET_ATOMIC_WRITE ?
	    a->count * rivet_atomic_size(a->datatype) : 0;
	m.hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_ATOMIC_RESP,
		.len = sizeof(m.resp) + n,
	};
	m.resp = (struct rivet_wire_atomic_resp) {
		.send_id = a->send_id, .status = status, .len = (uint32_t)n,
	};
	if (status)
		RIVET_DBG(EP_DATA, "atomic from connection %u refused: %s\n",
			  conn->idx, fi_strerror(status));
	else	/* fetching ones count as remote reads, the others writes */
		rivet_rma_event(ep, conn, FI_ATOMIC |
				(a->kind == RIVET_ATOMIC_WRITE ?
				 FI_REMOTE_WRITE : FI_REMOTE_READ),
				a->count * rivet_atomic_size(a->datatype));
	(void)rivet_ctrl_send(conn, &m, sizeof(m.hdr) + sizeof(m.resp) + n);
}

/* ---- the answer ---- */

static void rivet_atomic_copy_out(struct rivet_tx_op *op, const uint8_t *src,
				  size_t len)
{
	size_t i, k;

	for (i = 0; i < op->wr.count && len; i++) {
		k = RIVET_MIN(op->wr.iov[i].iov_len, len);
		memcpy(op->wr.iov[i].iov_base, src, k);
		src += k;
		len -= k;
	}
}

void rivet_atomic_handle_resp(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
			      const struct rivet_wire_hdr *hdr, size_t len)
{
	const struct rivet_wire_atomic_resp *r = (const void *)(hdr + 1);
	int status = rivet_wire_status(r->status);
	uint32_t index;
	struct rivet_tx_op *op;

	if (len < sizeof(*hdr) + sizeof(*r) ||
	    r->len > len - sizeof(*hdr) - sizeof(*r))
		return;
	index = rivet_wire_send_id_index(r->send_id);
	if (index >= ep->tx_size)
		return;
	op = &ep->tx_ops[index];
	/* the answer comes on the connection its request went out on */
	if (op->gen != rivet_wire_send_id_gen(r->send_id) || !op->atomic ||
	    op->conn != conn)
		return;
	/* a success carries every old value a fetch asked for, or none */
	if (!status && r->len != ((op->cq_flags & FI_READ) ? op->len : 0)) {
		RIVET_WARN(EP_DATA, "atomic answer on connection %u with %u "
			   "bytes for %zu: failed\n", conn->idx, r->len,
			   (op->cq_flags & FI_READ) ? op->len : (size_t)0);
		status = FI_EIO;
	}
	if (!status)
		rivet_atomic_copy_out(op, (const uint8_t *)(r + 1), r->len);
	if (op->state == RIVET_TX_WAIT_FIN) {
		DL_DELETE(op->conn->wait_fin, op);
		rivet_tx_op_done(ep, op, status,
				 status ? RIVET_PERR_TARGET : 0);
	} else if (op->state == RIVET_TX_POSTED) {
		op->fin_seen = true;	/* the send's WC is still to come */
		op->fin_status = status;
	}
}

/* ---- fi_ops_atomic ---- */

static ssize_t rivet_atomic_msg(struct fid_ep *fid,
				const struct fi_msg_atomic *msg,
				const struct fi_ioc *comparev,
				size_t compare_count, struct fi_ioc *resultv,
				size_t result_count, uint64_t flags,
				enum rivet_atomic_kind kind)
{
	struct rivet_atomic_req req;

	if (flags & FI_TRIGGER)		/* fi_trigger(3) */
		return rivet_rdm_trig_atomic(fid, msg, comparev, compare_count,
					     resultv, result_count, flags,
					     kind == RIVET_ATOMIC_WRITE);
	if (!msg)
		return -FI_EINVAL;
	req = (struct rivet_atomic_req) {
		.iov = msg->msg_iov, .count = msg->iov_count,
		.comparev = comparev, .compare_count = compare_count,
		.resultv = resultv, .result_count = result_count,
		.addr = msg->addr, .rma = msg->rma_iov,
		.rma_count = msg->rma_iov_count, .datatype = msg->datatype,
		.op = msg->op, .kind = kind, .context = msg->context,
		.flags = flags,
	};
	return rivet_atomic_start(to_rrdm(fid), &req);
}

/* The shape every non-msg variant reduces to. */
static ssize_t rivet_atomic_shim(struct fid_ep *fid, const struct fi_ioc *iov,
				 size_t count, const struct fi_ioc *comparev,
				 size_t compare_count, struct fi_ioc *resultv,
				 size_t result_count, fi_addr_t dest,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype dt, enum fi_op op,
				 void *context, uint64_t flags,
				 enum rivet_atomic_kind kind)
{
	size_t n = kind == RIVET_ATOMIC_WRITE ? rivet_ioc_elems(iov, count) :
		   rivet_ioc_elems(resultv, result_count);
	struct fi_rma_ioc rma = { .addr = addr, .count = n, .key = key };
	struct rivet_atomic_req req = {
		.iov = iov, .count = count, .comparev = comparev,
		.compare_count = compare_count, .resultv = resultv,
		.result_count = result_count, .addr = dest, .rma = &rma,
		.rma_count = 1, .datatype = dt, .op = op, .kind = kind,
		.context = context, .flags = flags,
	};
	struct fi_msg_atomic msg = {
		.msg_iov = iov, .iov_count = count, .addr = dest,
		.rma_iov = &rma, .rma_iov_count = 1, .datatype = dt,
		.op = op, .context = context,
	};

	if (flags & FI_TRIGGER)	/* FI_SETOPSFLAG gave it */
		return rivet_atomic_msg(fid, &msg, comparev, compare_count,
					resultv, result_count, flags, kind);
	return rivet_atomic_start(to_rrdm(fid), &req);
}

static ssize_t rivet_rdm_atomic_writev(struct fid_ep *fid,
				       const struct fi_ioc *iov, void **desc,
				       size_t count, fi_addr_t dest,
				       uint64_t addr, uint64_t key,
				       enum fi_datatype dt, enum fi_op op,
				       void *context)
{
	(void)desc;
	return rivet_atomic_shim(fid, iov, count, NULL, 0, NULL, 0, dest, addr,
				 key, dt, op, context,
				 to_rrdm(fid)->tx_op_flags, RIVET_ATOMIC_WRITE);
}

static ssize_t rivet_rdm_atomic_write(struct fid_ep *fid, const void *buf,
				      size_t count, void *desc, fi_addr_t dest,
				      uint64_t addr, uint64_t key,
				      enum fi_datatype dt, enum fi_op op,
				      void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };

	return rivet_rdm_atomic_writev(fid, &ioc, &desc, 1, dest, addr, key,
				       dt, op, context);
}

static ssize_t rivet_rdm_atomic_writemsg(struct fid_ep *fid,
					 const struct fi_msg_atomic *msg,
					 uint64_t flags)
{
	return rivet_atomic_msg(fid, msg, NULL, 0, NULL, 0, flags,
				RIVET_ATOMIC_WRITE);
}

static ssize_t rivet_rdm_atomic_inject(struct fid_ep *fid, const void *buf,
				       size_t count, fi_addr_t dest,
				       uint64_t addr, uint64_t key,
				       enum fi_datatype dt, enum fi_op op)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };

	if (count * rivet_atomic_size(dt) > RIVET_RDM_INJECT_SIZE)
		return -FI_EINVAL;
	return rivet_atomic_shim(fid, &ioc, 1, NULL, 0, NULL, 0, dest, addr,
				 key, dt, op, NULL,
				 FI_INJECT | RIVET_ATOMIC_SILENT,
				 RIVET_ATOMIC_WRITE);
}

static ssize_t rivet_rdm_atomic_readwritev(struct fid_ep *fid,
					   const struct fi_ioc *iov,
					   void **desc, size_t count,
					   struct fi_ioc *resultv,
					   void **result_desc,
					   size_t result_count, fi_addr_t dest,
					   uint64_t addr, uint64_t key,
					   enum fi_datatype dt, enum fi_op op,
					   void *context)
{
	(void)desc;
	(void)result_desc;
	return rivet_atomic_shim(fid, iov, count, NULL, 0, resultv,
				 result_count, dest, addr, key, dt, op,
				 context, to_rrdm(fid)->tx_op_flags,
				 RIVET_ATOMIC_FETCH);
}

static ssize_t rivet_rdm_atomic_readwrite(struct fid_ep *fid, const void *buf,
					  size_t count, void *desc,
					  void *result, void *result_desc,
					  fi_addr_t dest, uint64_t addr,
					  uint64_t key, enum fi_datatype dt,
					  enum fi_op op, void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	return rivet_rdm_atomic_readwritev(fid, &ioc, &desc, 1, &res,
					   &result_desc, 1, dest, addr, key,
					   dt, op, context);
}

static ssize_t rivet_rdm_atomic_readwritemsg(struct fid_ep *fid,
					     const struct fi_msg_atomic *msg,
					     struct fi_ioc *resultv,
					     void **result_desc,
					     size_t result_count,
					     uint64_t flags)
{
	(void)result_desc;
	return rivet_atomic_msg(fid, msg, NULL, 0, resultv, result_count,
				flags, RIVET_ATOMIC_FETCH);
}

static ssize_t rivet_rdm_atomic_compwritev(struct fid_ep *fid,
					   const struct fi_ioc *iov,
					   void **desc, size_t count,
					   const struct fi_ioc *comparev,
					   void **compare_desc,
					   size_t compare_count,
					   struct fi_ioc *resultv,
					   void **result_desc,
					   size_t result_count,
					   fi_addr_t dest, uint64_t addr,
					   uint64_t key, enum fi_datatype dt,
					   enum fi_op op, void *context)
{
	(void)desc;
	(void)compare_desc;
	(void)result_desc;
	return rivet_atomic_shim(fid, iov, count, comparev, compare_count,
				 resultv, result_count, dest, addr, key, dt,
				 op, context, to_rrdm(fid)->tx_op_flags,
				 RIVET_ATOMIC_COMPARE);
}

static ssize_t rivet_rdm_atomic_compwrite(struct fid_ep *fid, const void *buf,
					  size_t count, void *desc,
					  const void *compare,
					  void *compare_desc, void *result,
					  void *result_desc, fi_addr_t dest,
					  uint64_t addr, uint64_t key,
					  enum fi_datatype dt, enum fi_op op,
					  void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_ioc cmp = { .addr = (void *)compare, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	return rivet_rdm_atomic_compwritev(fid, &ioc, &desc, 1, &cmp,
					   &compare_desc, 1, &res,
					   &result_desc, 1, dest, addr, key,
					   dt, op, context);
}

static ssize_t rivet_rdm_atomic_compwritemsg(struct fid_ep *fid,
					     const struct fi_msg_atomic *msg,
					     const struct fi_ioc *comparev,
					     void **compare_desc,
					     size_t compare_count,
					     struct fi_ioc *resultv,
					     void **result_desc,
					     size_t result_count,
					     uint64_t flags)
{
	(void)compare_desc;
	(void)result_desc;
	return rivet_atomic_msg(fid, msg, comparev, compare_count, resultv,
				result_count, flags, RIVET_ATOMIC_COMPARE);
}

static int rivet_atomic_valid(struct fid_ep *fid, enum fi_datatype dt,
			      enum fi_op op, size_t *count,
			      enum rivet_atomic_kind kind)
{
	bool native = to_rrdm(fid)->domain->native_atomics;

	if (!count)
		return -FI_EINVAL;
	if (!rivet_atomic_offered(native, op, dt, kind))
		return -FI_EOPNOTSUPP;
	*count = rivet_atomic_offered_count(native, dt, kind);
	return 0;
}

static int rivet_rdm_atomic_writevalid(struct fid_ep *fid,
				       enum fi_datatype dt, enum fi_op op,
				       size_t *count)
{
	return rivet_atomic_valid(fid, dt, op, count, RIVET_ATOMIC_WRITE);
}

static int rivet_rdm_atomic_readwritevalid(struct fid_ep *fid,
					   enum fi_datatype dt, enum fi_op op,
					   size_t *count)
{
	return rivet_atomic_valid(fid, dt, op, count, RIVET_ATOMIC_FETCH);
}

static int rivet_rdm_atomic_compwritevalid(struct fid_ep *fid,
					   enum fi_datatype dt, enum fi_op op,
					   size_t *count)
{
	return rivet_atomic_valid(fid, dt, op, count, RIVET_ATOMIC_COMPARE);
}

struct fi_ops_atomic g_rivet_rdm_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = rivet_rdm_atomic_write,
	.writev = rivet_rdm_atomic_writev,
	.writemsg = rivet_rdm_atomic_writemsg,
	.inject = rivet_rdm_atomic_inject,
	.readwrite = rivet_rdm_atomic_readwrite,
	.readwritev = rivet_rdm_atomic_readwritev,
	.readwritemsg = rivet_rdm_atomic_readwritemsg,
	.compwrite = rivet_rdm_atomic_compwrite,
	.compwritev = rivet_rdm_atomic_compwritev,
	.compwritemsg = rivet_rdm_atomic_compwritemsg,
	.writevalid = rivet_rdm_atomic_writevalid,
	.readwritevalid = rivet_rdm_atomic_readwritevalid,
	.compwritevalid = rivet_rdm_atomic_compwritevalid,
};
