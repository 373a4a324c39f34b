/* SPDX-License-Identifier: MIT */
/*
 * RMA on MSG endpoints: fi_read and fi_write variants map straight onto RDMA
 * READ and RDMA WRITE (with immediate for CQ data) via rivet_ep_post_send.
 */
#include "rivet.h"

static ssize_t rivet_rma_common(struct rivet_ep *ep, const struct iovec *iov,
				void **desc, size_t count,
				const struct fi_rma_iov *rma, void *context,
				uint64_t data, uint64_t flags, bool is_read,
				bool silent)
{
	struct rivet_send_req req = {
		.iov = iov, .desc = desc, .count = count, .context = context,
		.data = data, .flags = flags, .silent = silent,
		.raddr = rma->addr, .rkey = rma->key,
	};

	if (is_read) {
		req.opcode = IBV_WR_RDMA_READ;
		req.comp_flags = FI_RMA | FI_READ;
		req.cntr = ep->read_cntr;
		if (flags & (FI_INJECT | FI_REMOTE_CQ_DATA))
			return -FI_EINVAL;
	} else {
		req.opcode = (flags & FI_REMOTE_CQ_DATA) ?
			     IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
		req.comp_flags = FI_RMA | FI_WRITE;
		req.cntr = ep->write_cntr;
	}
	return rivet_ep_post_send(ep, &req);
}

static ssize_t rivet_rma_msg(struct fid_ep *fid, const struct fi_msg_rma *msg,
			     uint64_t flags, bool is_read)
{
	/* one RDMA work request names one remote range */
	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	return rivet_rma_common(to_rep(fid), msg->msg_iov, msg->desc,
				msg->iov_count, msg->rma_iov, msg->context,
				msg->data, flags, is_read, false);
}

static ssize_t rivet_rma_readmsg(struct fid_ep *fid,
				 const struct fi_msg_rma *msg, uint64_t flags)
{
	return rivet_rma_msg(fid, msg, flags, true);
}

static ssize_t rivet_rma_writemsg(struct fid_ep *fid,
				  const struct fi_msg_rma *msg, uint64_t flags)
{
	return rivet_rma_msg(fid, msg, flags, false);
}

static ssize_t rivet_rma_readv(struct fid_ep *fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t src,
			       uint64_t addr, uint64_t key, void *context)
{
	struct rivet_ep *ep = to_rep(fid);
	struct fi_rma_iov rma = { .addr = addr, .key = key };

	return rivet_rma_common(ep, iov, desc, count, &rma, context, 0,
				ep->tx_op_flags, true, false);
}

static ssize_t rivet_rma_read(struct fid_ep *fid, void *buf, size_t len,
			      void *desc, fi_addr_t src, uint64_t addr,
			      uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rivet_rma_readv(fid, &iov, &desc, 1, src, addr, key, context);
}

static ssize_t rivet_rma_writev(struct fid_ep *fid, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t dest,
				uint64_t addr, uint64_t key, void *context)
{
	struct rivet_ep *ep = to_rep(fid);
	struct fi_rma_iov rma = { .addr = addr, .key = key };

	return rivet_rma_common(ep, iov, desc, count, &rma, context, 0,
				ep->tx_op_flags, false, false);
}

static ssize_t rivet_rma_write(struct fid_ep *fid, const void *buf,
			       size_t len, void *desc, fi_addr_t dest,
			       uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_rma_writev(fid, &iov, &desc, 1, dest, addr, key, context);
}

static ssize_t rivet_rma_writedata(struct fid_ep *fid, const void *buf,
				   size_t len, void *desc, uint64_t data,
				   fi_addr_t dest, uint64_t addr, uint64_t key,
				   void *context)
{
	struct rivet_ep *ep = to_rep(fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = addr, .key = key };

	return rivet_rma_common(ep, &iov, &desc, 1, &rma, context, data,
				ep->tx_op_flags | FI_REMOTE_CQ_DATA, false,
				false);
}

static ssize_t rivet_rma_injectdata(struct fid_ep *fid, const void *buf,
				    size_t len, uint64_t data, fi_addr_t dest,
				    uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = addr, .key = key };

	return rivet_rma_common(to_rep(fid), &iov, NULL, 1, &rma, NULL, data,
				FI_INJECT | FI_REMOTE_CQ_DATA, false, true);
}

static ssize_t rivet_rma_inject(struct fid_ep *fid, const void *buf,
				size_t len, fi_addr_t dest, uint64_t addr,
				uint64_t key)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = addr, .key = key };

	return rivet_rma_common(to_rep(fid), &iov, NULL, 1, &rma, NULL, 0,
				FI_INJECT, false, true);
}

struct fi_ops_rma g_rivet_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rivet_rma_read,
	.readv = rivet_rma_readv,
	.readmsg = rivet_rma_readmsg,
	.write = rivet_rma_write,
	.writev = rivet_rma_writev,
	.writemsg = rivet_rma_writemsg,
	.inject = rivet_rma_inject,
	.writedata = rivet_rma_writedata,
	.injectdata = rivet_rma_injectdata,
};
