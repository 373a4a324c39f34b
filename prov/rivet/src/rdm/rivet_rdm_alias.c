/* SPDX-License-Identifier: MIT */
/*
 * fi_ep_alias on RDM endpoints (fi_endpoint(3)): another fid for the same
 * endpoint that differs only by its default operation flags.  Every call
 * on an alias becomes the endpoint's *msg call with the alias's flags, so
 * the endpoint's own calls pay nothing for aliases.  An alias with
 * FI_TRIGGER in its transmit flags makes triggered operations
 * (rivet_rdm_trig.c, fi_trigger(3)).
 */
#include <stdlib.h>

#include "rivet_rdm.h"

struct rivet_rdm_alias {
	struct fid_ep ep_fid;
	struct rivet_rdm_ep *ep;
	uint64_t tx_flags, rx_flags;
};

static struct rivet_rdm_alias *to_alias(struct fid_ep *fid)
{
	return container_of(fid, struct rivet_rdm_alias, ep_fid);
}

static struct fid_ep *rivet_alias_ep(struct fid_ep *fid)
{
	return &to_alias(fid)->ep->ep_fid;
}

/* ---- fi_ops_msg ---- */

static ssize_t rivet_alias_recvmsg(struct fid_ep *fid, const struct fi_msg *msg,
				   uint64_t flags)
{
	return fi_recvmsg(rivet_alias_ep(fid), msg, flags);
}

static ssize_t rivet_alias_recvv(struct fid_ep *fid, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t src,
				 void *context)
{
	struct fi_msg msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = src, .context = context,
	};

	return fi_recvmsg(rivet_alias_ep(fid), &msg, to_alias(fid)->rx_flags);
}

static ssize_t rivet_alias_recv(struct fid_ep *fid, void *buf, size_t len,
				void *desc, fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rivet_alias_recvv(fid, &iov, &desc, 1, src, context);
}

static ssize_t rivet_alias_sendmsg(struct fid_ep *fid, const struct fi_msg *msg,
				   uint64_t flags)
{
	return fi_sendmsg(rivet_alias_ep(fid), msg, flags);
}

static ssize_t rivet_alias_send_common(struct fid_ep *fid,
				       const struct iovec *iov, void **desc,
				       size_t count, uint64_t data,
				       fi_addr_t dest, void *context,
				       uint64_t flags)
{
	struct fi_msg msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = dest, .context = context, .data = data,
	};

	return fi_sendmsg(rivet_alias_ep(fid), &msg,
			  to_alias(fid)->tx_flags | flags);
}

static ssize_t rivet_alias_sendv(struct fid_ep *fid, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t dest,
				 void *context)
{
	return rivet_alias_send_common(fid, iov, desc, count, 0, dest,
				       context, 0);
}

static ssize_t rivet_alias_send(struct fid_ep *fid, const void *buf,
				size_t len, void *desc, fi_addr_t dest,
				void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_alias_send_common(fid, &iov, &desc, 1, 0, dest, context,
				       0);
}

static ssize_t rivet_alias_senddata(struct fid_ep *fid, const void *buf,
				    size_t len, void *desc, uint64_t data,
				    fi_addr_t dest, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_alias_send_common(fid, &iov, &desc, 1, data, dest,
				       context, FI_REMOTE_CQ_DATA);
}

static ssize_t rivet_alias_inject(struct fid_ep *fid, const void *buf,
				  size_t len, fi_addr_t dest)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_alias_send_common(fid, &iov, NULL, 1, 0, dest, NULL,
				       FI_INJECT | RIVET_RDM_SILENT);
}

static ssize_t rivet_alias_injectdata(struct fid_ep *fid, const void *buf,
				      size_t len, uint64_t data,
				      fi_addr_t dest)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_alias_send_common(fid, &iov, NULL, 1, data, dest, NULL,
				       FI_INJECT | FI_REMOTE_CQ_DATA |
				       RIVET_RDM_SILENT);
}

static struct fi_ops_msg g_rivet_alias_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = rivet_alias_recv,
	.recvv = rivet_alias_recvv,
	.recvmsg = rivet_alias_recvmsg,
	.send = rivet_alias_send,
	.sendv = rivet_alias_sendv,
	.sendmsg = rivet_alias_sendmsg,
	.inject = rivet_alias_inject,
	.senddata = rivet_alias_senddata,
	.injectdata = rivet_alias_injectdata,
};

/* ---- fi_ops_tagged ---- */

static ssize_t rivet_alias_trecvmsg(struct fid_ep *fid,
				    const struct fi_msg_tagged *msg,
				    uint64_t flags)
{
	return fi_trecvmsg(rivet_alias_ep(fid), msg, flags);
}

static ssize_t rivet_alias_trecvv(struct fid_ep *fid, const struct iovec *iov,
				  void **desc, size_t count, fi_addr_t src,
				  uint64_t tag, uint64_t ignore, void *context)
{
	struct fi_msg_tagged msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = src, .tag = tag, .ignore = ignore,
		.context = context,
	};

	return fi_trecvmsg(rivet_alias_ep(fid), &msg,
			   to_alias(fid)->rx_flags);
}

static ssize_t rivet_alias_trecv(struct fid_ep *fid, void *buf, size_t len,
				 void *desc, fi_addr_t src, uint64_t tag,
				 uint64_t ignore, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rivet_alias_trecvv(fid, &iov, &desc, 1, src, tag, ignore,
				  context);
}

static ssize_t rivet_alias_tsendmsg(struct fid_ep *fid,
				    const struct fi_msg_tagged *msg,
				    uint64_t flags)
{
	return fi_tsendmsg(rivet_alias_ep(fid), msg, flags);
}

static ssize_t rivet_alias_tsend_common(struct fid_ep *fid,
					const struct iovec *iov, void **desc,
					size_t count, uint64_t data,
					fi_addr_t dest, uint64_t tag,
					void *context, uint64_t flags)
{
	struct fi_msg_tagged msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = dest, .tag = tag, .context = context, .data = data,
	};

	return fi_tsendmsg(rivet_alias_ep(fid), &msg,
			   to_alias(fid)->tx_flags | flags);
}

static ssize_t rivet_alias_tsendv(struct fid_ep *fid, const struct iovec *iov,
				  void **desc, size_t count, fi_addr_t dest,
				  uint64_t tag, void *context)
{
	return rivet_alias_tsend_common(fid, iov, desc, count, 0, dest, tag,
					context, 0);
}

static ssize_t rivet_alias_tsend(struct fid_ep *fid, const void *buf,
				 size_t len, void *desc, fi_addr_t dest,
				 uint64_t tag, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_alias_tsend_common(fid, &iov, &desc, 1, 0, dest, tag,
					context, 0);
}

static ssize_t rivet_alias_tsenddata(struct fid_ep *fid, const void *buf,
				     size_t len, void *desc, uint64_t data,
				     fi_addr_t dest, uint64_t tag,
				     void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_alias_tsend_common(fid, &iov, &desc, 1, data, dest, tag,
					context, FI_REMOTE_CQ_DATA);
}

static ssize_t rivet_alias_tinject(struct fid_ep *fid, const void *buf,
				   size_t len, fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_alias_tsend_common(fid, &iov, NULL, 1, 0, dest, tag,
					NULL, FI_INJECT | RIVET_RDM_SILENT);
}

static ssize_t rivet_alias_tinjectdata(struct fid_ep *fid, const void *buf,
				       size_t len, uint64_t data,
				       fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_alias_tsend_common(fid, &iov, NULL, 1, data, dest, tag,
					NULL, FI_INJECT | FI_REMOTE_CQ_DATA |
					RIVET_RDM_SILENT);
}

static struct fi_ops_tagged g_rivet_alias_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = rivet_alias_trecv,
	.recvv = rivet_alias_trecvv,
	.recvmsg = rivet_alias_trecvmsg,
	.send = rivet_alias_tsend,
	.sendv = rivet_alias_tsendv,
	.sendmsg = rivet_alias_tsendmsg,
	.inject = rivet_alias_tinject,
	.senddata = rivet_alias_tsenddata,
	.injectdata = rivet_alias_tinjectdata,
};

/* ---- fi_ops_rma ---- */

static ssize_t rivet_alias_rma(struct fid_ep *fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t addr,
			       uint64_t raddr, uint64_t key, void *context,
			       uint64_t data, uint64_t flags, bool read)
{
	struct fi_rma_iov rma = { .addr = raddr, .len = 0, .key = key };
	struct fi_msg_rma msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = addr, .rma_iov = &rma, .rma_iov_count = 1,
		.context = context, .data = data,
	};
	size_t i;

	for (i = 0; iov && i < count; i++)
		rma.len += iov[i].iov_len;
	flags |= to_alias(fid)->tx_flags;
	return read ? fi_readmsg(rivet_alias_ep(fid), &msg, flags) :
		      fi_writemsg(rivet_alias_ep(fid), &msg, flags);
}

static ssize_t rivet_alias_readmsg(struct fid_ep *fid,
				   const struct fi_msg_rma *msg, uint64_t flags)
{
	return fi_readmsg(rivet_alias_ep(fid), msg, flags);
}

static ssize_t rivet_alias_writemsg(struct fid_ep *fid,
				    const struct fi_msg_rma *msg,
				    uint64_t flags)
{
	return fi_writemsg(rivet_alias_ep(fid), msg, flags);
}

static ssize_t rivet_alias_readv(struct fid_ep *fid, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t src,
				 uint64_t addr, uint64_t key, void *context)
{
	return rivet_alias_rma(fid, iov, desc, count, src, addr, key, context,
			       0, 0, true);
}

static ssize_t rivet_alias_read(struct fid_ep *fid, void *buf, size_t len,
				void *desc, fi_addr_t src, uint64_t addr,
				uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rivet_alias_rma(fid, &iov, &desc, 1, src, addr, key, context,
			       0, 0, true);
}

static ssize_t rivet_alias_writev(struct fid_ep *fid, const struct iovec *iov,
				  void **desc, size_t count, fi_addr_t dest,
				  uint64_t addr, uint64_t key, void *context)
{
	return rivet_alias_rma(fid, iov, desc, count, dest, addr, key,
			       context, 0, 0, false);
}

static ssize_t rivet_alias_write(struct fid_ep *fid, const void *buf,
				 size_t len, void *desc, fi_addr_t dest,
				 uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_alias_rma(fid, &iov, &desc, 1, dest, addr, key, context,
			       0, 0, false);
}

static ssize_t rivet_alias_inject_write(struct fid_ep *fid, const void *buf,
					size_t len, fi_addr_t dest,
					uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_alias_rma(fid, &iov, NULL, 1, dest, addr, key, NULL, 0,
			       FI_INJECT | RIVET_RDM_SILENT, false);
}

static ssize_t rivet_alias_writedata(struct fid_ep *fid, const void *buf,
				     size_t len, void *desc, uint64_t data,
				     fi_addr_t dest, uint64_t addr,
				     uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_alias_rma(fid, &iov, &desc, 1, dest, addr, key, context,
			       data, FI_REMOTE_CQ_DATA, false);
}

static ssize_t rivet_alias_inject_writedata(struct fid_ep *fid,
					    const void *buf, size_t len,
					    uint64_t data, fi_addr_t dest,
					    uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_alias_rma(fid, &iov, NULL, 1, dest, addr, key, NULL,
			       data, FI_INJECT | FI_REMOTE_CQ_DATA |
			       RIVET_RDM_SILENT, false);
}

static struct fi_ops_rma g_rivet_alias_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rivet_alias_read,
	.readv = rivet_alias_readv,
	.readmsg = rivet_alias_readmsg,
	.write = rivet_alias_write,
	.writev = rivet_alias_writev,
	.writemsg = rivet_alias_writemsg,
	.inject = rivet_alias_inject_write,
	.writedata = rivet_alias_writedata,
	.injectdata = rivet_alias_inject_writedata,
};

/* ---- fi_ops_atomic ---- */

/* Every non-msg atomic call: its message with the alias's flags. */
static ssize_t rivet_alias_atomic(struct fid_ep *fid,
				  const struct fi_ioc *iov, void **desc,
				  size_t count, fi_addr_t dest, uint64_t addr,
				  uint64_t key, enum fi_datatype dt,
				  enum fi_op op, void *context,
				  const struct fi_ioc *comparev,
				  void **compare_desc, size_t compare_count,
				  struct fi_ioc *resultv, void **result_desc,
				  size_t result_count, uint64_t flags)
{
	struct fi_rma_ioc rma = { .addr = addr, .count = 0, .key = key };
	struct fi_msg_atomic msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = dest, .rma_iov = &rma, .rma_iov_count = 1,
		.datatype = dt, .op = op, .context = context,
	};
	struct fid_ep *ep = rivet_alias_ep(fid);
	size_t i;

	/* the target's elements: as many as the results, or the operands */
	if (resultv)
		for (i = 0; i < result_count; i++)
			rma.count += resultv[i].count;
	else
		for (i = 0; iov && i < count; i++)
			rma.count += iov[i].count;
	flags |= to_alias(fid)->tx_flags;
	if (comparev)
		return fi_compare_atomicmsg(ep, &msg, comparev, compare_desc,
					    compare_count, resultv,
					    result_desc, result_count, flags);
	if (resultv)
		return fi_fetch_atomicmsg(ep, &msg, resultv, result_desc,
					  result_count, flags);
	return fi_atomicmsg(ep, &msg, flags);
}

static ssize_t rivet_alias_awritev(struct fid_ep *fid,
				   const struct fi_ioc *iov, void **desc,
				   size_t count, fi_addr_t dest, uint64_t addr,
				   uint64_t key, enum fi_datatype dt,
				   enum fi_op op, void *context)
{
	return rivet_alias_atomic(fid, iov, desc, count, dest, addr, key, dt,
				  op, context, NULL, NULL, 0, NULL, NULL, 0, 0);
}

static ssize_t rivet_alias_awrite(struct fid_ep *fid, const void *buf,
				  size_t count, void *desc, fi_addr_t dest,
				  uint64_t addr, uint64_t key,
				  enum fi_datatype dt, enum fi_op op,
				  void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };

	return rivet_alias_awritev(fid, &ioc, &desc, 1, dest, addr, key, dt,
				   op, context);
}

static ssize_t rivet_alias_awritemsg(struct fid_ep *fid,
				     const struct fi_msg_atomic *msg,
				     uint64_t flags)
{
	return fi_atomicmsg(rivet_alias_ep(fid), msg, flags);
}

static ssize_t rivet_alias_ainject(struct fid_ep *fid, const void *buf,
				   size_t count, fi_addr_t dest, uint64_t addr,
				   uint64_t key, enum fi_datatype dt,
				   enum fi_op op)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };

	return rivet_alias_atomic(fid, &ioc, NULL, 1, dest, addr, key, dt, op,
				  NULL, NULL, NULL, 0, NULL, NULL, 0,
				  FI_INJECT | RIVET_RDM_SILENT);
}

static ssize_t rivet_alias_areadwritev(struct fid_ep *fid,
				       const struct fi_ioc *iov, void **desc,
				       size_t count, struct fi_ioc *resultv,
				       void **result_desc,
				       size_t result_count, fi_addr_t dest,
				       uint64_t addr, uint64_t key,
				       enum fi_datatype dt, enum fi_op op,
				       void *context)
{
	return rivet_alias_atomic(fid, iov, desc, count, dest, addr, key, dt,
				  op, context, NULL, NULL, 0, resultv,
				  result_desc, result_count, 0);
}

static ssize_t rivet_alias_areadwrite(struct fid_ep *fid, const void *buf,
				      size_t count, void *desc, void *result,
				      void *result_desc, fi_addr_t dest,
				      uint64_t addr, uint64_t key,
				      enum fi_datatype dt, enum fi_op op,
				      void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	return rivet_alias_areadwritev(fid, &ioc, &desc, 1, &res,
				       &result_desc, 1, dest, addr, key, dt,
				       op, context);
}

static ssize_t rivet_alias_areadwritemsg(struct fid_ep *fid,
					 const struct fi_msg_atomic *msg,
					 struct fi_ioc *resultv,
					 void **result_desc,
					 size_t result_count, uint64_t flags)
{
	return fi_fetch_atomicmsg(rivet_alias_ep(fid), msg, resultv,
				  result_desc, result_count, flags);
}

static ssize_t rivet_alias_acompwritev(struct fid_ep *fid,
				       const struct fi_ioc *iov, void **desc,
				       size_t count,
				       const struct fi_ioc *comparev,
				       void **compare_desc,
				       size_t compare_count,
				       struct fi_ioc *resultv,
				       void **result_desc,
				       size_t result_count, fi_addr_t dest,
				       uint64_t addr, uint64_t key,
				       enum fi_datatype dt, enum fi_op op,
				       void *context)
{
	return rivet_alias_atomic(fid, iov, desc, count, dest, addr, key, dt,
				  op, context, comparev, compare_desc,
				  compare_count, resultv, result_desc,
				  result_count, 0);
}

static ssize_t rivet_alias_acompwrite(struct fid_ep *fid, const void *buf,
				      size_t count, void *desc,
				      const void *compare, void *compare_desc,
				      void *result, void *result_desc,
				      fi_addr_t dest, uint64_t addr,
				      uint64_t key, enum fi_datatype dt,
				      enum fi_op op, void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_ioc cmp = { .addr = (void *)compare, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	return rivet_alias_acompwritev(fid, &ioc, &desc, 1, &cmp,
				       &compare_desc, 1, &res, &result_desc, 1,
				       dest, addr, key, dt, op, context);
}

static ssize_t rivet_alias_acompwritemsg(struct fid_ep *fid,
					 const struct fi_msg_atomic *msg,
					 const struct fi_ioc *comparev,
					 void **compare_desc,
					 size_t compare_count,
					 struct fi_ioc *resultv,
					 void **result_desc,
					 size_t result_count, uint64_t flags)
{
	return fi_compare_atomicmsg(rivet_alias_ep(fid), msg, comparev,
				    compare_desc, compare_count, resultv,
				    result_desc, result_count, flags);
}

static int rivet_alias_writevalid(struct fid_ep *fid, enum fi_datatype dt,
				  enum fi_op op, size_t *count)
{
	return fi_atomicvalid(rivet_alias_ep(fid), dt, op, count);
}

static int rivet_alias_readwritevalid(struct fid_ep *fid,
				      enum fi_datatype dt, enum fi_op op,
				      size_t *count)
{
	return fi_fetch_atomicvalid(rivet_alias_ep(fid), dt, op, count);
}

static int rivet_alias_compwritevalid(struct fid_ep *fid,
				      enum fi_datatype dt, enum fi_op op,
				      size_t *count)
{
	return fi_compare_atomicvalid(rivet_alias_ep(fid), dt, op, count);
}

static struct fi_ops_atomic g_rivet_alias_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = rivet_alias_awrite,
	.writev = rivet_alias_awritev,
	.writemsg = rivet_alias_awritemsg,
	.inject = rivet_alias_ainject,
	.readwrite = rivet_alias_areadwrite,
	.readwritev = rivet_alias_areadwritev,
	.readwritemsg = rivet_alias_areadwritemsg,
	.compwrite = rivet_alias_acompwrite,
	.compwritev = rivet_alias_acompwritev,
	.compwritemsg = rivet_alias_acompwritemsg,
	.writevalid = rivet_alias_writevalid,
	.readwritevalid = rivet_alias_readwritevalid,
	.compwritevalid = rivet_alias_compwritevalid,
};

/* ---- the alias object ---- */

static int rivet_alias_close(struct fid *fid)
{
	struct rivet_rdm_alias *a = container_of(fid, struct rivet_rdm_alias,
						 ep_fid.fid);

	atomic_fetch_sub(&a->ep->naliases, 1);
	free(a);
	return 0;
}

static int rivet_alias_control(struct fid *fid, int command, void *arg)
{
	struct rivet_rdm_alias *a = container_of(fid, struct rivet_rdm_alias,
						 ep_fid.fid);
	uint64_t *flags = arg;

	switch (command) {
	case FI_GETOPSFLAG:
		if (!flags || ((*flags & FI_TRANSMIT) && (*flags & FI_RECV)))
			return -FI_EINVAL;
		*flags = (*flags & FI_RECV) ? a->rx_flags : a->tx_flags;
		return 0;
	case FI_SETOPSFLAG:
		return rivet_rdm_alias_flags(a->ep, flags ? *flags : 0,
					     &a->tx_flags, &a->rx_flags);
	default:
		return -FI_ENOSYS;
	}
}

static ssize_t rivet_alias_cancel(fid_t fid, void *context)
{
	struct rivet_rdm_alias *a = container_of(fid, struct rivet_rdm_alias,
						 ep_fid.fid);

	return fi_cancel(&a->ep->ep_fid.fid, context);
}

static ssize_t rivet_alias_rx_size_left(struct fid_ep *fid)
{
	struct fid_ep *ep = rivet_alias_ep(fid);

	return ep->ops->rx_size_left(ep);
}

static ssize_t rivet_alias_tx_size_left(struct fid_ep *fid)
{
	struct fid_ep *ep = rivet_alias_ep(fid);

	return ep->ops->tx_size_left(ep);
}

static int rivet_alias_getopt(fid_t fid, int level, int optname,
			      void *optval, size_t *optlen)
{
	struct rivet_rdm_alias *a = container_of(fid, struct rivet_rdm_alias,
						 ep_fid.fid);

	return fi_getopt(&a->ep->ep_fid.fid, level, optname, optval, optlen);
}

static int rivet_alias_setopt(fid_t fid, int level, int optname,
			      const void *optval, size_t optlen)
{
	struct rivet_rdm_alias *a = container_of(fid, struct rivet_rdm_alias,
						 ep_fid.fid);

	return fi_setopt(&a->ep->ep_fid.fid, level, optname, optval, optlen);
}

static int rivet_alias_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct rivet_rdm_alias *a = container_of(fid, struct rivet_rdm_alias,
						 ep_fid.fid);

	return fi_getname(&a->ep->ep_fid.fid, addr, addrlen);
}

static struct fi_ops g_rivet_alias_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_alias_close,
	.bind = rivet_no_bind,
	.control = rivet_alias_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_ep g_rivet_alias_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = rivet_alias_cancel,
	.getopt = rivet_alias_getopt,
	.setopt = rivet_alias_setopt,
	.tx_ctx = rivet_no_tx_ctx,
	.rx_ctx = rivet_no_rx_ctx,
	.rx_size_left = rivet_alias_rx_size_left,
	.tx_size_left = rivet_alias_tx_size_left,
};

static int rivet_alias_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;	/* the endpoint's listener is bound at open */
}

static struct fi_ops_cm g_rivet_alias_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = rivet_alias_setname,
	.getname = rivet_alias_getname,
	.getpeer = rivet_no_getpeer,
	.connect = rivet_no_connect,
	.listen = rivet_no_listen,
	.accept = rivet_no_accept,
	.reject = rivet_no_reject,
	.shutdown = rivet_no_shutdown,
	.join = rivet_no_join,
};

/* FI_TRANSMIT or FI_RECV (not both) and the flags for that direction;
 * FI_TRIGGER only on an endpoint with the capability. */
int rivet_rdm_alias_flags(const struct rivet_rdm_ep *ep, uint64_t flags,
			  uint64_t *tx_flags, uint64_t *rx_flags)
{
	bool tx = flags & FI_TRANSMIT, rx = flags & FI_RECV;

	if (tx == rx)
		return -FI_EINVAL;
	if ((flags & FI_TRIGGER) && !(ep->caps & FI_TRIGGER))
		return -FI_EINVAL;
	if (tx)
		*tx_flags = flags & ~(uint64_t)FI_TRANSMIT;
	else
		*rx_flags = flags & ~(uint64_t)FI_RECV;
	return 0;
}

int rivet_rdm_alias_open(struct rivet_rdm_ep *ep, struct fi_alias *alias)
{
	struct rivet_rdm_alias *a;
	int ret;

	if (!alias || !alias->fid)
		return -FI_EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -FI_ENOMEM;
	a->ep = ep;
	a->tx_flags = ep->tx_op_flags;
	a->rx_flags = ep->rx_op_flags;
	if (alias->flags) {
		ret = rivet_rdm_alias_flags(ep, alias->flags, &a->tx_flags,
					    &a->rx_flags);
		if (ret) {
			free(a);
			return ret;
		}
	}
	a->ep_fid.fid.fclass = FI_CLASS_EP;
	a->ep_fid.fid.context = ep->ep_fid.fid.context;
	a->ep_fid.fid.ops = &g_rivet_alias_fi_ops;
	a->ep_fid.ops = &g_rivet_alias_ep_ops;
	a->ep_fid.cm = &g_rivet_alias_cm_ops;
	a->ep_fid.msg = &g_rivet_alias_msg_ops;
	a->ep_fid.tagged = &g_rivet_alias_tagged_ops;
	a->ep_fid.rma = &g_rivet_alias_rma_ops;
	a->ep_fid.atomic = &g_rivet_alias_atomic_ops;
	a->ep_fid.collective = &g_rivet_no_collective_ops;
	atomic_fetch_add(&ep->naliases, 1);
	*alias->fid = &a->ep_fid.fid;
	return 0;
}
