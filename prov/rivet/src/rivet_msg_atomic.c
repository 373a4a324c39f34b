/* SPDX-License-Identifier: MIT */
/*
 * Atomics on MSG endpoints: verbs atomics on the connection's QP, so only
 * what they can do: FI_SUM (fi_atomic, fi_fetch_atomic) and FI_CSWAP
 * (fi_compare_atomic) on one FI_INT64 / FI_UINT64, 8-byte aligned at the
 * target.  A fetched value lands in the application's result buffer (its
 * descriptor is needed: FI_MR_LOCAL); fi_atomic's lands in a scratch word.
 */
#include "rivet.h"
#include "rivet_atomic.h"

struct rivet_msg_atomic {
	const struct fi_ioc *iov;
	size_t count;
	const struct fi_ioc *comparev;
	size_t compare_count;
	struct fi_ioc *resultv;
	void **result_desc;
	size_t result_count;
	const struct fi_rma_ioc *rma;
	size_t rma_count;
	enum fi_datatype datatype;
	enum fi_op op;
	enum rivet_atomic_kind kind;
	void *context;
	uint64_t flags;
	bool silent;
};

static ssize_t rivet_msg_atomic_start(struct fid_ep *fid,
				      const struct rivet_msg_atomic *a)
{
	struct rivet_ep *ep = to_rep(fid);
	const struct fi_ioc *src, *cmp = NULL, *res = NULL;
	struct iovec iov;
	void *desc = NULL;
	uint64_t operand, compare = 0;
	struct rivet_send_req req = {
		.context = a->context, .flags = a->flags, .silent = a->silent,
	};

	if (!rivet_atomic_native_supported(a->op, a->datatype, a->kind))
		return -FI_EOPNOTSUPP;
	if (a->rma_count != 1 || !a->rma || a->rma->count != 1)
		return -FI_EINVAL;
	src = rivet_ioc_one(a->iov, a->count);
	if (!src)
		return -FI_EINVAL;
	if (a->kind == RIVET_ATOMIC_COMPARE) {
		cmp = rivet_ioc_one(a->comparev, a->compare_count);
		if (!cmp)
			return -FI_EINVAL;
	}
	if (a->kind != RIVET_ATOMIC_WRITE) {
		res = rivet_ioc_one(a->resultv, a->result_count);
		if (!res)
			return -FI_EINVAL;
		desc = a->result_desc ?
		       a->result_desc[res - a->resultv] : NULL;
	}
	memcpy(&operand, src->addr, sizeof(operand));
	if (cmp)
		memcpy(&compare, cmp->addr, sizeof(compare));
	req.raddr = a->rma->addr;
	req.rkey = a->rma->key;
	if (a->op == FI_SUM) {
		req.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		req.compare_add = operand;
	} else {
		req.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		req.compare_add = compare;
		req.swap = operand;
	}
	if (res) {
		iov = (struct iovec) { res->addr, sizeof(uint64_t) };
		req.iov = &iov;
		req.desc = &desc;
		req.count = 1;
		req.comp_flags = FI_ATOMIC | FI_READ;
		req.cntr = ep->read_cntr;
	} else {
		req.comp_flags = FI_ATOMIC | FI_WRITE;
		req.cntr = ep->write_cntr;
	}
	return rivet_ep_post_send(ep, &req);
}

static ssize_t rivet_msg_atomic_writev(struct fid_ep *fid,
				       const struct fi_ioc *iov, void **desc,
				       size_t count, fi_addr_t dest,
				       uint64_t addr, uint64_t key,
				       enum fi_datatype dt, enum fi_op op,
				       void *context)
{
	struct fi_rma_ioc rma = { .addr = addr, .count = 1, .key = key };
	struct rivet_msg_atomic a = {
		.iov = iov, .count = count, .rma = &rma, .rma_count = 1,
		.datatype = dt, .op = op, .kind = RIVET_ATOMIC_WRITE,
		.context = context, .flags = to_rep(fid)->tx_op_flags,
	};

	(void)desc;
	(void)dest;
	return rivet_msg_atomic_start(fid, &a);
}

static ssize_t rivet_msg_atomic_write(struct fid_ep *fid, const void *buf,
				      size_t count, void *desc, fi_addr_t dest,
				      uint64_t addr, uint64_t key,
				      enum fi_datatype dt, enum fi_op op,
				      void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };

	return rivet_msg_atomic_writev(fid, &ioc, &desc, 1, dest, addr, key,
				       dt, op, context);
}

static ssize_t rivet_msg_atomic_writemsg(struct fid_ep *fid,
					 const struct fi_msg_atomic *msg,
					 uint64_t flags)
{
	struct rivet_msg_atomic a;

	if (!msg)
		return -FI_EINVAL;
	a = (struct rivet_msg_atomic) {
		.iov = msg->msg_iov, .count = msg->iov_count,
		.rma = msg->rma_iov, .rma_count = msg->rma_iov_count,
		.datatype = msg->datatype, .op = msg->op,
		.kind = RIVET_ATOMIC_WRITE, .context = msg->context,
		.flags = flags,
	};
	return rivet_msg_atomic_start(fid, &a);
}

static ssize_t rivet_msg_atomic_inject(struct fid_ep *fid, const void *buf,
				       size_t count, fi_addr_t dest,
				       uint64_t addr, uint64_t key,
				       enum fi_datatype dt, enum fi_op op)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_rma_ioc rma = { .addr = addr, .count = 1, .key = key };
	struct rivet_msg_atomic a = {
		.iov = &ioc, .count = 1, .rma = &rma, .rma_count = 1,
		.datatype = dt, .op = op, .kind = RIVET_ATOMIC_WRITE,
		.flags = FI_INJECT, .silent = true,
	};

	(void)dest;
	return rivet_msg_atomic_start(fid, &a);
}

static ssize_t rivet_msg_atomic_readwritev(struct fid_ep *fid,
					   const struct fi_ioc *iov,
					   void **desc, size_t count,
					   struct fi_ioc *resultv,
					   void **result_desc,
					   size_t result_count, fi_addr_t dest,
					   uint64_t addr, uint64_t key,
					   enum fi_datatype dt, enum fi_op op,
					   void *context)
{
	struct fi_rma_ioc rma = { .addr = addr, .count = 1, .key = key };
	struct rivet_msg_atomic a = {
		.iov = iov, .count = count, .resultv = resultv,
		.result_desc = result_desc, .result_count = result_count,
		.rma = &rma, .rma_count = 1, .datatype = dt, .op = op,
		.kind = RIVET_ATOMIC_FETCH, .context = context,
		.flags = to_rep(fid)->tx_op_flags,
	};

	(void)desc;
	(void)dest;
	return rivet_msg_atomic_start(fid, &a);
}

static ssize_t rivet_msg_atomic_readwrite(struct fid_ep *fid, const void *buf,
					  size_t count, void *desc,
					  void *result, void *result_desc,
					  fi_addr_t dest, uint64_t addr,
					  uint64_t key, enum fi_datatype dt,
					  enum fi_op op, void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	return rivet_msg_atomic_readwritev(fid, &ioc, &desc, 1, &res,
					   &result_desc, 1, dest, addr, key,
					   dt, op, context);
}

static ssize_t rivet_msg_atomic_readwritemsg(struct fid_ep *fid,
					     const struct fi_msg_atomic *msg,
					     struct fi_ioc *resultv,
					     void **result_desc,
					     size_t result_count,
					     uint64_t flags)
{
	struct rivet_msg_atomic a;

	if (!msg)
		return -FI_EINVAL;
	a = (struct rivet_msg_atomic) {
		.iov = msg->msg_iov, .count = msg->iov_count,
		.resultv = resultv, .result_desc = result_desc,
		.result_count = result_count, .rma = msg->rma_iov,
		.rma_count = msg->rma_iov_count, .datatype = msg->datatype,
		.op = msg->op, .kind = RIVET_ATOMIC_FETCH,
		.context = msg->context, .flags = flags,
	};
	return rivet_msg_atomic_start(fid, &a);
}

static ssize_t rivet_msg_atomic_compwritev(struct fid_ep *fid,
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
	struct fi_rma_ioc rma = { .addr = addr, .count = 1, .key = key };
	struct rivet_msg_atomic a = {
		.iov = iov, .count = count, .comparev = comparev,
		.compare_count = compare_count, .resultv = resultv,
		.result_desc = result_desc, .result_count = result_count,
		.rma = &rma, .rma_count = 1, .datatype = dt, .op = op,
		.kind = RIVET_ATOMIC_COMPARE, .context = context,
		.flags = to_rep(fid)->tx_op_flags,
	};

	(void)desc;
	(void)compare_desc;
	(void)dest;
	return rivet_msg_atomic_start(fid, &a);
}

static ssize_t rivet_msg_atomic_compwrite(struct fid_ep *fid, const void *buf,
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

	return rivet_msg_atomic_compwritev(fid, &ioc, &desc, 1, &cmp,
					   &compare_desc, 1, &res,
					   &result_desc, 1, dest, addr, key,
					   dt, op, context);
}

static ssize_t rivet_msg_atomic_compwritemsg(struct fid_ep *fid,
					     const struct fi_msg_atomic *msg,
					     const struct fi_ioc *comparev,
					     void **compare_desc,
					     size_t compare_count,
					     struct fi_ioc *resultv,
					     void **result_desc,
					     size_t result_count,
					     uint64_t flags)
{
	struct rivet_msg_atomic a;

	(void)compare_desc;
	if (!msg)
		return -FI_EINVAL;
	a = (struct rivet_msg_atomic) {
		.iov = msg->msg_iov, .count = msg->iov_count,
		.comparev = comparev, .compare_count = compare_count,
		.resultv = resultv, .result_desc = result_desc,
		.result_count = result_count, .rma = msg->rma_iov,
		.rma_count = msg->rma_iov_count, .datatype = msg->datatype,
		.op = msg->op, .kind = RIVET_ATOMIC_COMPARE,
		.context = msg->context, .flags = flags,
	};
	return rivet_msg_atomic_start(fid, &a);
}

static int rivet_msg_atomic_valid(enum fi_datatype dt, enum fi_op op,
				  size_t *count, enum rivet_atomic_kind kind)
{
	if (!count)
		return -FI_EINVAL;
	if (!rivet_atomic_native_supported(op, dt, kind))
		return -FI_EOPNOTSUPP;
	*count = 1;
	return 0;
}

static int rivet_msg_atomic_writevalid(struct fid_ep *fid,
				       enum fi_datatype dt, enum fi_op op,
				       size_t *count)
{
	(void)fid;
	return rivet_msg_atomic_valid(dt, op, count, RIVET_ATOMIC_WRITE);
}

static int rivet_msg_atomic_readwritevalid(struct fid_ep *fid,
					   enum fi_datatype dt, enum fi_op op,
					   size_t *count)
{
	(void)fid;
	return rivet_msg_atomic_valid(dt, op, count, RIVET_ATOMIC_FETCH);
}

static int rivet_msg_atomic_compwritevalid(struct fid_ep *fid,
					   enum fi_datatype dt, enum fi_op op,
					   size_t *count)
{
	(void)fid;
	return rivet_msg_atomic_valid(dt, op, count, RIVET_ATOMIC_COMPARE);
}

struct fi_ops_atomic g_rivet_msg_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = rivet_msg_atomic_write,
	.writev = rivet_msg_atomic_writev,
	.writemsg = rivet_msg_atomic_writemsg,
	.inject = rivet_msg_atomic_inject,
	.readwrite = rivet_msg_atomic_readwrite,
	.readwritev = rivet_msg_atomic_readwritev,
	.readwritemsg = rivet_msg_atomic_readwritemsg,
	.compwrite = rivet_msg_atomic_compwrite,
	.compwritev = rivet_msg_atomic_compwritev,
	.compwritemsg = rivet_msg_atomic_compwritemsg,
	.writevalid = rivet_msg_atomic_writevalid,
	.readwritevalid = rivet_msg_atomic_readwritevalid,
	.compwritevalid = rivet_msg_atomic_compwritevalid,
};
