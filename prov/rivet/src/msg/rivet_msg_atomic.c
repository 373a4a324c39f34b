/* SPDX-License-Identifier: MIT */
/*
 * Atomics on MSG endpoints: the connection's QP carries only the
 * application's messages, so the target's CPU takes no part; everything
 * is the HCA's 64-bit atomics.
 *
 * Native: FI_SUM (fi_atomic, fi_fetch_atomic) and FI_CSWAP
 * (fi_compare_atomic) on one FI_INT64 / FI_UINT64, 8-byte aligned: one
 * work request (several elements go the emulated way).  A fetched value
 * lands in the application's result buffer (its descriptor is needed:
 * FI_MR_LOCAL); fi_atomic's in a scratch word.
 *
 * Emulated: every other op on datatypes of at most 8 bytes, per element a
 * compare-and-swap loop on the aligned 8-byte word holding it: fetch the
 * word (fetch-and-add 0), compute the new word on the initiator, swap it
 * in if the word is still what was fetched, else compute again from what
 * the swap returned.  HCA atomics on one word are atomic with each other,
 * so native and emulated operations (from any number of initiators) never
 * lose an update.  Elements must be naturally aligned (none straddles a
 * word) and the word must lie in the target's region.
 */
#include <stdlib.h>

#include "rivet.h"
#include "rivet_atomic.h"
#include "rivet_cntr.h"

struct rivet_msg_emu {
	struct rivet_wc_hook hook;	/* each step's work completion */
	struct rivet_cq_deferred def;	/* the next step, outside cq->lock */
	struct rivet_ep *ep;
	void *context;
	uint64_t comp_flags;
	struct rivet_cntr *cntr;
	bool report;
	enum fi_op op;
	enum fi_datatype dt;
	size_t size;		/* bytes per element */
	size_t count;		/* elements */
	size_t done;		/* elements finished */
	uint64_t raddr;		/* element 0 at the target */
	uint64_t rkey;
	struct fi_ioc res[RIVET_IOV_LIMIT_MAX];	/* fetch: old values */
	size_t res_count;
	int err, prov_errno;	/* a step failed */
	bool cas;		/* the step in flight is the swap */
	bool need_post;		/* the next step could not be posted yet */
	uint64_t fence;		/* FI_FENCE: on the first step */
	uint64_t seen;		/* what the last step returned */
	uint64_t expect;	/* the swap's compare value */
	uint64_t swap;		/* the swap's new word */
	uint8_t *cmp;		/* compare operands (fi_compare_atomic) */
	uint8_t data[];		/* operands, then compare operands */
};

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

/* ---- emulation ------------------------------------------------------ */

static uint64_t rivet_msg_emu_word(const struct rivet_msg_emu *emu)
{
	return (emu->raddr + emu->done * emu->size) & ~(uint64_t)7;
}

/* Posts the step in emu->cas/expect/swap: the fetch or the swap. */
static ssize_t rivet_msg_emu_post(struct rivet_msg_emu *emu)
{
	struct rivet_send_req req = {
		.opcode = emu->cas ? IBV_WR_ATOMIC_CMP_AND_SWP :
				     IBV_WR_ATOMIC_FETCH_AND_ADD,
		.raddr = rivet_msg_emu_word(emu), .rkey = emu->rkey,
		.compare_add = emu->cas ? emu->expect : 0,
		.swap = emu->swap, .comp_flags = FI_ATOMIC, .silent = true,
		.hook = &emu->hook, .flags = emu->fence,
	};
	ssize_t ret = rivet_ep_post_send(emu->ep, &req);

	if (!ret)
		emu->fence = 0;
	return ret;
}

/* Writes element i's old value into the application's result iocs. */
static void rivet_msg_emu_result(struct rivet_msg_emu *emu, size_t i,
				 const void *old)
{
	size_t k;

	for (k = 0; k < emu->res_count; k++) {
		if (i < emu->res[k].count) {
			memcpy((uint8_t *)emu->res[k].addr + i * emu->size,
			       old, emu->size);
			return;
		}
		i -= emu->res[k].count;
	}
}

static void rivet_msg_emu_finish(struct rivet_msg_emu *emu)
{
	struct rivet_cq_entry e = {
		.ep = emu->ep, .op_context = emu->context,
		.flags = emu->comp_flags, .src = FI_ADDR_NOTAVAIL,
		.err = emu->err, .prov_errno = emu->prov_errno,
	};

	if (emu->err) {
		rivet_cq_write(emu->ep->tx_cq, &e);
		rivet_cntr_inc_err(emu->cntr);
	} else {
		if (emu->report)
			rivet_cq_write(emu->ep->tx_cq, &e);
		rivet_cntr_inc(emu->cntr);
	}
	free(emu);
}

/*
 * What the step that just completed tells: the next step to post, or the
 * end.  Returns true when the operation is over.
 */
static bool rivet_msg_emu_advance(struct rivet_msg_emu *emu)
{
	unsigned int off;
	uint8_t old[sizeof(uint64_t)];
	uint64_t word;
	const uint8_t *src, *cmp;

	if (emu->err)
		return true;
	if (emu->cas && emu->seen == emu->expect) {
		emu->done++;		/* swapped in: the element is done */
		if (emu->done == emu->count)
			return true;
		emu->cas = false;	/* fetch the next element's word */
		return false;
	}
	/* a fetch, or a swap that lost a race: compute from the word seen */
	off = (unsigned int)((emu->raddr + emu->done * emu->size) & 7);
	src = emu->data + emu->done * emu->size;
	cmp = emu->cmp ? emu->cmp + emu->done * emu->size : NULL;
	if (!rivet_atomic_word_apply(emu->op, emu->dt, emu->seen, off, src,
				     cmp, old, &word)) {
		/* nothing to write: the fetch was the operation */
		rivet_msg_emu_result(emu, emu->done, old);
		emu->done++;
		emu->cas = false;
		return emu->done == emu->count;
	}
	rivet_msg_emu_result(emu, emu->done, old);
	emu->cas = true;
	emu->expect = emu->seen;
	emu->swap = word;
	return false;
}

/* A step's work completion (cq->lock held): the next step is the CQ's
 * deferred work. */
static void rivet_msg_emu_wc(struct rivet_wc_hook *hook, struct rivet_cq *cq,
			     const struct rivet_wr_ctx *ctx,
			     const struct ibv_wc *wc)
{
	struct rivet_msg_emu *emu = container_of(hook, struct rivet_msg_emu,
						 hook);
	struct rivet_ep *ep = emu->ep;

	if (wc->status != IBV_WC_SUCCESS) {
		emu->err = rivet_wc_status_to_fi(wc->status);
		emu->prov_errno = wc->status;
	} else {
		/* the NIC wrote it: memcheck cannot know */
		RIVET_MEM_DEFINED(&ep->scratch[ctx - ep->tx_ring.ctxs],
				  sizeof(uint64_t));
		emu->seen = ep->scratch[ctx - ep->tx_ring.ctxs];
	}
	rivet_cq_defer_locked(cq, &emu->def);
}

/* The next step (no lock held); true: the send queue is full, again
 * on a later read. */
static bool rivet_msg_emu_run(struct rivet_cq_deferred *d)
{
	struct rivet_msg_emu *emu = container_of(d, struct rivet_msg_emu, def);

	if (!emu->need_post && rivet_msg_emu_advance(emu)) {
		rivet_msg_emu_finish(emu);
		return false;
	}
	emu->need_post = false;
	switch (rivet_msg_emu_post(emu)) {
	case 0:
		return false;
	case -FI_EAGAIN:	/* the send queue is full: later */
		emu->need_post = true;
		return true;
	default:		/* e.g. the connection is gone */
		emu->err = FI_EIO;
		rivet_msg_emu_finish(emu);
		return false;
	}
}

/* Its endpoint closes (cq->lock held). */
static void rivet_msg_emu_drop(struct rivet_cq_deferred *d)
{
	free(container_of(d, struct rivet_msg_emu, def));
}

/* Copies n elements of size bytes from iocs into dst. */
static void rivet_ioc_gather(const struct fi_ioc *ioc, size_t nioc,
			     size_t size, uint8_t *dst)
{
	size_t i;

	for (i = 0; i < nioc; i++) {
		memcpy(dst, ioc[i].addr, ioc[i].count * size);
		dst += ioc[i].count * size;
	}
}

static ssize_t rivet_msg_emu_start(struct rivet_ep *ep,
				   const struct rivet_msg_atomic *a)
{
	size_t size = rivet_atomic_size(a->datatype), n;
	bool compare = a->kind == RIVET_ATOMIC_COMPARE;
	struct rivet_msg_emu *emu;
	ssize_t ret;

	if (!a->rma || a->rma_count != 1 || !a->iov)
		return -FI_EINVAL;
	n = rivet_ioc_elems(a->iov, a->count);
	if (!n || n != a->rma->count ||
	    n > rivet_atomic_max_count(a->datatype, a->kind))
		return -FI_EINVAL;
	if (compare && (!a->comparev ||
			rivet_ioc_elems(a->comparev, a->compare_count) != n))
		return -FI_EINVAL;
	if (a->kind != RIVET_ATOMIC_WRITE &&
	    (!a->resultv || a->result_count > RIVET_IOV_LIMIT_MAX ||
	     rivet_ioc_elems(a->resultv, a->result_count) != n))
		return -FI_EINVAL;
	if (a->rma->addr % size)	/* an element must not straddle words */
		return -FI_EINVAL;
	if (ep->state != RIVET_EP_CONNECTED)
		return -FI_EOPBADSTATE;

	emu = calloc(1, sizeof(*emu) + n * size * (compare ? 2 : 1));
	if (!emu)
		return -FI_ENOMEM;
	*emu = (struct rivet_msg_emu) {
		.hook.wc = rivet_msg_emu_wc,
		.def = { .owner = ep, .run = rivet_msg_emu_run,
			 .drop = rivet_msg_emu_drop },
		.ep = ep, .context = a->context, .op = a->op,
		.dt = a->datatype, .size = size, .count = n,
		.raddr = a->rma->addr, .rkey = a->rma->key,
		.fence = a->flags & FI_FENCE,
		.report = !a->silent && (!ep->tx_selective ||
					 (a->flags & FI_COMPLETION)),
	};
	rivet_ioc_gather(a->iov, a->count, size, emu->data);
	if (compare) {
		emu->cmp = emu->data + n * size;
		rivet_ioc_gather(a->comparev, a->compare_count, size,
				 emu->cmp);
	}
	if (a->kind == RIVET_ATOMIC_WRITE) {
		emu->comp_flags = FI_ATOMIC | FI_WRITE;
		emu->cntr = ep->write_cntr;
	} else {
		emu->comp_flags = FI_ATOMIC | FI_READ;
		emu->cntr = ep->read_cntr;
		memcpy(emu->res, a->resultv,
		       a->result_count * sizeof(*a->resultv));
		emu->res_count = a->result_count;
	}
	ret = rivet_msg_emu_post(emu);	/* the first fetch */
	if (ret)
		free(emu);
	return ret;
}

/* ---- entry points ----------------------------------------------------- */

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

	if (!rivet_atomic_msg_supported(a->op, a->datatype, a->kind))
		return -FI_EOPNOTSUPP;
	/* one element the HCA computes itself: one work request */
	if (!rivet_atomic_native_supported(a->op, a->datatype, a->kind) ||
	    rivet_ioc_elems(a->iov, a->count) != 1)
		return rivet_msg_emu_start(ep, a);
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
	struct fi_rma_ioc rma = {
		.addr = addr, .count = rivet_ioc_elems(iov, count), .key = key,
	};
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
	struct fi_rma_ioc rma = { .addr = addr, .count = count, .key = key };
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
	struct fi_rma_ioc rma = {
		.addr = addr, .count = rivet_ioc_elems(iov, count), .key = key,
	};
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
	struct fi_rma_ioc rma = {
		.addr = addr, .count = rivet_ioc_elems(iov, count), .key = key,
	};
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
	if (!rivet_atomic_msg_supported(op, dt, kind))
		return -FI_EOPNOTSUPP;
	*count = rivet_atomic_max_count(dt, kind);
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
