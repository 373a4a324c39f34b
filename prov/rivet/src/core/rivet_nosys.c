/* SPDX-License-Identifier: MIT */
/*
 * The shared -FI_ENOSYS stubs: every slot of every ops table rivet hands
 * out points somewhere (fi_provider(7)); what an object does not offer
 * lands here.  Whole tables for interfaces no endpoint offers.
 */
#include <rdma/fi_atomic.h>

#include "rivet.h"

/* ---- struct fi_ops ---- */

int rivet_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int rivet_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int rivet_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context)
{
	return -FI_ENOSYS;
}

int rivet_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

int rivet_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		     void *ops, void *context)
{
	return -FI_ENOSYS;
}

/* ---- struct fi_ops_ep: no endpoint of rivet's is scalable ---- */

int rivet_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		    struct fid_ep **tx_ep, void *context)
{
	return -FI_ENOSYS;
}

int rivet_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		    struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

/* ---- struct fi_ops_cm: what a connectionless endpoint (RDM) or the
 * other side of a connection (active vs passive) cannot do ---- */

int rivet_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

int rivet_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		     size_t paramlen)
{
	return -FI_ENOSYS;
}

int rivet_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

int rivet_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int rivet_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		    size_t paramlen)
{
	return -FI_ENOSYS;
}

int rivet_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

int rivet_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		  struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

/* ---- struct fi_ops_tagged: MSG endpoints carry no tags ---- */

ssize_t rivet_no_trecv(struct fid_ep *ep, void *buf, size_t len,
		       void *desc, fi_addr_t src, uint64_t tag,
		       uint64_t ignore, void *context)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_trecvv(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t src,
			uint64_t tag, uint64_t ignore, void *context)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_tmsg(struct fid_ep *ep,
		      const struct fi_msg_tagged *msg, uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_tsend(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest, uint64_t tag,
		       void *context)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_tsendv(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t dest,
			uint64_t tag, void *context)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_tinject(struct fid_ep *ep, const void *buf,
			 size_t len, fi_addr_t dest, uint64_t tag)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_tsenddata(struct fid_ep *ep, const void *buf,
			   size_t len, void *desc, uint64_t data,
			   fi_addr_t dest, uint64_t tag, void *context)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_tinjectdata(struct fid_ep *ep, const void *buf,
			     size_t len, uint64_t data, fi_addr_t dest,
			     uint64_t tag)
{
	return -FI_ENOSYS;
}

/* ---- struct fi_ops_cm: shared contexts have no address ---- */

static int rivet_no_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}

static int rivet_no_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

struct fi_ops_cm g_rivet_no_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = rivet_no_setname,
	.getname = rivet_no_getname,
	.getpeer = rivet_no_getpeer,
	.connect = rivet_no_connect,
	.listen = rivet_no_listen,
	.accept = rivet_no_accept,
	.reject = rivet_no_reject,
	.shutdown = rivet_no_shutdown,
	.join = rivet_no_join,
};

/* ---- struct fi_ops_msg: shared receive contexts send nothing ---- */

ssize_t rivet_no_send(struct fid_ep *ep, const void *buf, size_t len,
		      void *desc, fi_addr_t dest, void *context)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_sendv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t dest,
		       void *context)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			 uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_inject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_senddata(struct fid_ep *ep, const void *buf,
			  size_t len, void *desc, uint64_t data,
			  fi_addr_t dest, void *context)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_injectdata(struct fid_ep *ep, const void *buf,
			    size_t len, uint64_t data, fi_addr_t dest)
{
	return -FI_ENOSYS;
}

/* A scalable endpoint's transmit context receives nothing. */
ssize_t rivet_no_recv(struct fid_ep *ep, void *buf, size_t len,
		      void *desc, fi_addr_t src, void *context)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_recvv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t src,
		       void *context)
{
	return -FI_ENOSYS;
}

ssize_t rivet_no_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			 uint64_t flags)
{
	return -FI_ENOSYS;
}


/* ---- struct fi_ops_collective: no endpoint offers FI_COLLECTIVE ---- */

static ssize_t rivet_no_barrier(struct fid_ep *ep, fi_addr_t coll_addr,
				void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_broadcast(struct fid_ep *ep, void *buf, size_t count,
				  void *desc, fi_addr_t coll_addr,
				  fi_addr_t root_addr,
				  enum fi_datatype datatype, uint64_t flags,
				  void *context)
{
	return -FI_ENOSYS;
}

/* alltoall and allgather have the same shape */
static ssize_t rivet_no_alltoall(struct fid_ep *ep, const void *buf,
				 size_t count, void *desc, void *result,
				 void *result_desc, fi_addr_t coll_addr,
				 enum fi_datatype datatype, uint64_t flags,
				 void *context)
{
	return -FI_ENOSYS;
}

/* allreduce and reduce_scatter have the same shape */
static ssize_t rivet_no_allreduce(struct fid_ep *ep, const void *buf,
				  size_t count, void *desc, void *result,
				  void *result_desc, fi_addr_t coll_addr,
				  enum fi_datatype datatype, enum fi_op op,
				  uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_reduce(struct fid_ep *ep, const void *buf,
			       size_t count, void *desc, void *result,
			       void *result_desc, fi_addr_t coll_addr,
			       fi_addr_t root_addr, enum fi_datatype datatype,
			       enum fi_op op, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

/* scatter and gather have the same shape */
static ssize_t rivet_no_scatter(struct fid_ep *ep, const void *buf,
				size_t count, void *desc, void *result,
				void *result_desc, fi_addr_t coll_addr,
				fi_addr_t root_addr, enum fi_datatype datatype,
				uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_coll_msg(struct fid_ep *ep,
				 const struct fi_msg_collective *msg,
				 struct fi_ioc *resultv, void **result_desc,
				 size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_barrier2(struct fid_ep *ep, fi_addr_t coll_addr,
				 uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

struct fi_ops_tagged g_rivet_no_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = rivet_no_trecv,
	.recvv = rivet_no_trecvv,
	.recvmsg = rivet_no_tmsg,
	.send = rivet_no_tsend,
	.sendv = rivet_no_tsendv,
	.sendmsg = rivet_no_tmsg,
	.inject = rivet_no_tinject,
	.senddata = rivet_no_tsenddata,
	.injectdata = rivet_no_tinjectdata,
};

struct fi_ops_collective g_rivet_no_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = rivet_no_barrier,
	.broadcast = rivet_no_broadcast,
	.alltoall = rivet_no_alltoall,
	.allreduce = rivet_no_allreduce,
	.allgather = rivet_no_alltoall,
	.reduce_scatter = rivet_no_allreduce,
	.reduce = rivet_no_reduce,
	.scatter = rivet_no_scatter,
	.gather = rivet_no_scatter,
	.msg = rivet_no_coll_msg,
	.barrier2 = rivet_no_barrier2,
};

/* ---- struct fi_ops_rma, fi_ops_atomic: DGRAM endpoints offer neither ---- */

static ssize_t rivet_no_rma(struct fid_ep *ep, void *buf, size_t len,
			    void *desc, fi_addr_t addr, uint64_t raddr,
			    uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_rmav(struct fid_ep *ep, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t addr,
			     uint64_t raddr, uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_rmamsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			       uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_write(struct fid_ep *ep, const void *buf, size_t len,
			      void *desc, fi_addr_t addr, uint64_t raddr,
			      uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_rma_inject(struct fid_ep *ep, const void *buf,
				   size_t len, fi_addr_t addr, uint64_t raddr,
				   uint64_t key)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_writedata(struct fid_ep *ep, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t addr, uint64_t raddr, uint64_t key,
				  void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_rma_injectdata(struct fid_ep *ep, const void *buf,
				       size_t len, uint64_t data,
				       fi_addr_t addr, uint64_t raddr,
				       uint64_t key)
{
	return -FI_ENOSYS;
}

struct fi_ops_rma g_rivet_no_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rivet_no_rma,
	.readv = rivet_no_rmav,
	.readmsg = rivet_no_rmamsg,
	.write = rivet_no_write,
	.writev = rivet_no_rmav,
	.writemsg = rivet_no_rmamsg,
	.inject = rivet_no_rma_inject,
	.writedata = rivet_no_writedata,
	.injectdata = rivet_no_rma_injectdata,
};

static ssize_t rivet_no_awrite(struct fid_ep *ep, const void *buf,
			       size_t count, void *desc, fi_addr_t addr,
			       uint64_t raddr, uint64_t key,
			       enum fi_datatype dt, enum fi_op op,
			       void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_awritev(struct fid_ep *ep, const struct fi_ioc *iov,
				void **desc, size_t count, fi_addr_t addr,
				uint64_t raddr, uint64_t key,
				enum fi_datatype dt, enum fi_op op,
				void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_awritemsg(struct fid_ep *ep,
				  const struct fi_msg_atomic *msg,
				  uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_ainject(struct fid_ep *ep, const void *buf,
				size_t count, fi_addr_t addr, uint64_t raddr,
				uint64_t key, enum fi_datatype dt,
				enum fi_op op)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_areadwrite(struct fid_ep *ep, const void *buf,
				   size_t count, void *desc, void *result,
				   void *result_desc, fi_addr_t addr,
				   uint64_t raddr, uint64_t key,
				   enum fi_datatype dt, enum fi_op op,
				   void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_areadwritev(struct fid_ep *ep,
				    const struct fi_ioc *iov, void **desc,
				    size_t count, struct fi_ioc *resultv,
				    void **result_desc, size_t result_count,
				    fi_addr_t addr, uint64_t raddr,
				    uint64_t key, enum fi_datatype dt,
				    enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_areadwritemsg(struct fid_ep *ep,
				      const struct fi_msg_atomic *msg,
				      struct fi_ioc *resultv,
				      void **result_desc, size_t result_count,
				      uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_acompwrite(struct fid_ep *ep, const void *buf,
				   size_t count, void *desc,
				   const void *compare, void *compare_desc,
				   void *result, void *result_desc,
				   fi_addr_t addr, uint64_t raddr,
				   uint64_t key, enum fi_datatype dt,
				   enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_acompwritev(struct fid_ep *ep,
				    const struct fi_ioc *iov, void **desc,
				    size_t count,
				    const struct fi_ioc *comparev,
				    void **compare_desc,
				    size_t compare_count,
				    struct fi_ioc *resultv,
				    void **result_desc, size_t result_count,
				    fi_addr_t addr, uint64_t raddr,
				    uint64_t key, enum fi_datatype dt,
				    enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_no_acompwritemsg(struct fid_ep *ep,
				      const struct fi_msg_atomic *msg,
				      const struct fi_ioc *comparev,
				      void **compare_desc,
				      size_t compare_count,
				      struct fi_ioc *resultv,
				      void **result_desc,
				      size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int rivet_no_avalid(struct fid_ep *ep, enum fi_datatype dt,
			   enum fi_op op, size_t *count)
{
	return -FI_ENOSYS;
}

struct fi_ops_atomic g_rivet_no_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = rivet_no_awrite,
	.writev = rivet_no_awritev,
	.writemsg = rivet_no_awritemsg,
	.inject = rivet_no_ainject,
	.readwrite = rivet_no_areadwrite,
	.readwritev = rivet_no_areadwritev,
	.readwritemsg = rivet_no_areadwritemsg,
	.compwrite = rivet_no_acompwrite,
	.compwritev = rivet_no_acompwritev,
	.compwritemsg = rivet_no_acompwritemsg,
	.writevalid = rivet_no_avalid,
	.readwritevalid = rivet_no_avalid,
	.compwritevalid = rivet_no_avalid,
};

#if RIVET_API_VERSION >= FI_VERSION(1, 20)
/* 1.20's authorization keys and user ids: rivet offers neither
 * (fi_getinfo refuses auth_key, FI_AV_USER_ID is not a capability). */
int rivet_no_insert_auth_key(struct fid_av *av, const void *auth_key,
			     size_t auth_key_size, fi_addr_t *fi_addr,
			     uint64_t flags)
{
	return -FI_ENOSYS;
}

int rivet_no_lookup_auth_key(struct fid_av *av, fi_addr_t fi_addr,
			     void *auth_key, size_t *auth_key_size)
{
	return -FI_ENOSYS;
}

int rivet_no_set_user_id(struct fid_av *av, fi_addr_t fi_addr,
			 fi_addr_t user_id, uint64_t flags)
{
	return -FI_ENOSYS;
}
#endif
