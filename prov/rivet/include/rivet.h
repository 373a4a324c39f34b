/* SPDX-License-Identifier: MIT */
/*
 * rivet: provider globals, logging, locks and the objects every file shares.
 * Each libfabric class lives in its own rivet_<object>.c; this header holds
 * their structs so that the data path can reach them without indirection.
 *
 * Locking.  With FI_THREAD_SAFE every object carries a lock; with the
 * weaker threading levels the locks are compiled in but switched off at
 * open time (rivet_lock.on == false), so the fast path pays one branch.
 *
 * THE LOCK ORDER (the one authoritative copy: every other comment and
 * docs/design.md refer to it).  Outermost first; a lock is only ever
 * taken while holding locks above it, and two locks on one line are
 * never held together:
 *   1. cq->srcs.lock        the sources of one CQ (rivet_progress_set)
 *   2. eq->progress_lock    one EQ's rdma_cm handling, in event order;
 *      eq->lock             its event lists (not held across a handler)
 *   3. av->remove_lock      while bound endpoints hear of a removal
 *   4. ep->lock             an RDM endpoint (rivet_rdm_lock) or an MSG
 *                           endpoint's; ud->ah_lock, a DGRAM endpoint's
 *                           address handles
 *   5. cntr->cqs_lock       the CQs that feed a counter
 *   6. cq->lock             a CQ's rings; completion hooks run under it
 *   7. srx->lock            an MSG/DGRAM shared receive context (its
 *                           wc_ops run under cq->lock); mrecv->lock, an
 *                           MSG multi-receive buffer queue; a DGRAM
 *                           endpoint's early slots' lock
 *   8. av->lock             the AV's table (a DGRAM receive's FI_SOURCE
 *                           lookup takes it under cq->lock); nothing is
 *                           called out of the AV under it
 *   9. g_mrm.lock           the registration cache (rivet_mr_monitor.c,
 *                           one per process): taken under ep->lock,
 *                           nothing taken under it, never held across
 *                           anything that could free or unmap memory
 * Counters are atomics.  A CQ's progress takes only cq->lock; it calls
 * into an endpoint under it only through a completion hook or a shared
 * context's wc_ops, which may only queue deferred work (run with no CQ
 * lock held) or return a work-request context to the endpoint's pool (a
 * context belongs to the CQ that will see its completion while it is
 * posted).  A receive posted to a DGRAM context reports a waiting
 * datagram under cq->lock only after dropping srx->lock.
 */
#ifndef RIVET_H
#define RIVET_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "rivet_abi.h"

#define RIVET_PROV_NAME "rivet"
#define RIVET_PROV_VERSION FI_VERSION(0, 1)
/* Our MSG wire: plain RC plus a 2-byte header in the CM private data. */
#define RIVET_PROTO_MSG (RIVET_PROTO_SPECIFIC | 0x7276)
#define RIVET_PROTO_VERSION 1

#define RIVET_CM_HDR_SIZE 2
/* rdma_cm gives 56 bytes of private data on a connect request (IB CM REQ). */
#define RIVET_CM_DATA_SIZE (56 - RIVET_CM_HDR_SIZE)
#define RIVET_MAX_INLINE_PROBE 512
#define RIVET_IOV_LIMIT_MAX 32

#ifndef container_of
#define container_of(ptr, type, field) \
	((type *)((char *)(ptr) - offsetof(type, field)))
#endif
#define RIVET_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RIVET_MAX(a, b) ((a) > (b) ? (a) : (b))

extern struct fi_provider g_rivet_prov;
struct fi_provider *fi_prov_ini(void);

#define RIVET_LOG(level, subsys, ...) \
	FI_LOG(&g_rivet_prov, level, FI_LOG_##subsys, __VA_ARGS__)
#define RIVET_WARN(subsys, ...) RIVET_LOG(FI_LOG_WARN, subsys, __VA_ARGS__)
#define RIVET_INFO(subsys, ...) RIVET_LOG(FI_LOG_INFO, subsys, __VA_ARGS__)
#define RIVET_DBG(subsys, ...) RIVET_LOG(FI_LOG_DEBUG, subsys, __VA_ARGS__)
#define RIVET_WARN_ERRNO(subsys, call, err) \
	RIVET_WARN(subsys, "%s: %s (%d)\n", call, strerror(err), err)

/* ---- parameters (rivet_params.c) ---- */
struct rivet_params {
	size_t tx_size;
	size_t rx_size;
	size_t cq_size;
	size_t inject_size;
	char *iface;
	int ipv6;
	size_t eager_size;
	size_t rdm_rx_bufs;
	size_t max_msg_size;	/* 0: the port's (capped at 1 GiB) */
	int util_layering;
	int native_atomics;
	size_t poll_yield_usec;	/* RIVET_POLL_YIELD_AUTO: by device kind */
	size_t ack_timeout;	/* 0: rdma_cm's; else 4.096 us * 2^N */
	size_t retry_count;	/* transport retries of an RC QP, 0..7, or
				 * RIVET_RETRY_AUTO */
	size_t probe_ms;	/* RDM liveness probes; 0: none */
	size_t close_wait_ms;	/* RDM fi_close: what peers are owed, at most
				 * this long; 0: discarded at once */
	size_t mr_cache_max_count;	/* 0: no registration cache */
	size_t mr_cache_max_size;
	char *mr_cache_monitor;		/* "userfaultfd" or "disabled" */
	size_t confirm;	/* 0, 1 or RIVET_CONFIRM_AUTO */
	size_t dgram_early_recvs;	/* DGRAM: slots posted at fi_enable */
	size_t rdma_seg;	/* RDM: bytes of one RDMA read or write at
				 * most; 0: no limit; or RIVET_RDMA_SEG_AUTO */
	size_t match_list_max;	/* RDM: matching queues walked up to it */
	int wr_api;	/* RDM: short injects through ibv_wr_* if offered */
};
#define RIVET_POLL_YIELD_AUTO ((size_t)-1)
#define RIVET_POLL_YIELD_SOFT_USEC 200	/* the default on rxe and siw */
/* rxe's and siw's vendor ids: RDMA done by the host's own kernel */
#define RIVET_VENDOR_RXE 0xffffffu
#define RIVET_VENDOR_SIW 0x626d74u
#define RIVET_RETRY_AUTO ((size_t)-1)	/* FI_RIVET_RETRY_COUNT unset */
/* The retry count rivet's RC connections ask for, from
 * FI_RIVET_RETRY_COUNT and the device's vendor id: 7, or 6 on rxe, which
 * retries forever with 7 (rivet_retry.c, unit tested). */
uint8_t rivet_retry_count(size_t param, uint32_t vendor_id);
#define RIVET_CONFIRM_AUTO ((size_t)-1)	/* FI_RIVET_CONFIRM unset */
/* Whether RDM operations whose work completion a device may fake are
 * confirmed by a work request posted after them (a rendezvous receive by
 * its FIN, RMA by a zero-byte read), from FI_RIVET_CONFIRM, the vendor id
 * and whether RDMA reads are cut to one packet (FI_RIVET_RDMA_SEG): by
 * default on rxe when they are not, since rxe then can complete a failed
 * request as successful (rivet_retry.c, unit tested). */
bool rivet_confirm_default(size_t param, uint32_t vendor_id,
			   bool reads_cut);
#define RIVET_RDMA_SEG_AUTO ((size_t)-1)	/* FI_RIVET_RDMA_SEG unset */
/* The most bytes one RDMA read or write work request of an RDM endpoint
 * moves (SIZE_MAX: no limit), from FI_RIVET_RDMA_SEG, the vendor id and
 * the port's active MTU in bytes: one packet on rxe, whose completer fails
 * a QP that meets a stale acknowledgement in the middle of a read's
 * response, and whose retries of a long write under reordering run out
 * (rivet_retry.c, unit tested). */
size_t rivet_rdma_seg_default(size_t param, uint32_t vendor_id, size_t mtu);
/* How long a domain's polls may find nothing before each empty one
 * yields the CPU (0: never), from FI_RIVET_POLL_YIELD and the device's
 * vendor id.  Pure (rivet_poll_yield.c), unit tested. */
uint64_t rivet_poll_yield_ns(size_t param_usec, uint32_t vendor_id);
extern struct rivet_params g_rivet_params;
void rivet_params_initialize(void);

/* Memory the NIC (the kernel, for rxe) wrote behind valgrind's back:
 * received messages, RDMA read results.  A few instructions, no call. */
#ifdef HAVE_VALGRIND_MEMCHECK_H
#include <valgrind/memcheck.h>
#define RIVET_MEM_DEFINED(p, n) \
	((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#else
#define RIVET_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#endif

/* ---- locks ---- */
/*
 * Lock-held assertions.  A helper that needs a lock held (one named
 * *_locked, or one whose comment says so) states it with RIVET_HELD (a
 * struct rivet_lock) or RIVET_MUTEX_HELD (a pthread mutex).  They are
 * checked in builds configured with --enable-lock-check (contrib/build.sh
 * --werror: CI's), where a rivet_lock that is on and not held by the
 * calling thread, or a mutex that no thread holds, aborts with the lock's
 * and the function's names; elsewhere they cost nothing.  A lock that is
 * off (FI_THREAD_DOMAIN) counts as held.
 */
struct rivet_lock {
	pthread_spinlock_t l;
	bool on;
#ifdef RIVET_LOCK_CHECK
	bool held;
	pthread_t owner;	/* while held */
#endif
};

static inline void rivet_lock_construct(struct rivet_lock *lk, bool on)
{
	pthread_spin_init(&lk->l, PTHREAD_PROCESS_PRIVATE);
	lk->on = on;
#ifdef RIVET_LOCK_CHECK
	lk->held = false;
#endif
}

static inline void rivet_lock_destruct(struct rivet_lock *lk)
{
	pthread_spin_destroy(&lk->l);
}

static inline void rivet_lock_acquire(struct rivet_lock *lk)
{
	if (lk->on) {
		pthread_spin_lock(&lk->l);
#ifdef RIVET_LOCK_CHECK
		lk->owner = pthread_self();
		lk->held = true;
#endif
	}
}

static inline void rivet_lock_release(struct rivet_lock *lk)
{
	if (lk->on) {
#ifdef RIVET_LOCK_CHECK
		lk->held = false;
#endif
		pthread_spin_unlock(&lk->l);
	}
}

#ifdef RIVET_LOCK_CHECK
static inline bool rivet_lock_held(const struct rivet_lock *lk)
{
	return !lk->on || (lk->held && pthread_equal(lk->owner,
						      pthread_self()));
}

/* Whether some thread holds m (a pthread mutex cannot tell which). */
static inline bool rivet_mutex_held(pthread_mutex_t *m)
{
	if (pthread_mutex_trylock(m))
		return true;
	pthread_mutex_unlock(m);
	return false;
}

static inline void rivet_lock_unheld(const char *lock, const char *func)
{
	fprintf(stderr, "rivet: %s called without %s held\n", func, lock);
	abort();
}

#define RIVET_HELD(lk) \
	((void)(rivet_lock_held(lk) || (rivet_lock_unheld(#lk, __func__), 0)))
#define RIVET_MUTEX_HELD(m) \
	((void)(rivet_mutex_held(m) || (rivet_lock_unheld(#m, __func__), 0)))
#else
#define RIVET_HELD(lk) ((void)0)
#define RIVET_MUTEX_HELD(m) ((void)0)
#endif

/* ---- devices (verbs/rivet_verbs_dev.c) ---- */
union rivet_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr_storage ss;
};

struct rivet_dev_addr {
	union rivet_sockaddr addr;
	unsigned int prefix_len;
	char ifname[32];
};

/* One verbs device as the scan found it; contexts belong to librdmacm. */
struct rivet_dev {
	struct ibv_context *ctx;
	char name[64];
	uint8_t port_num;
	struct ibv_device_attr attr;
	struct ibv_port_attr port_attr;
	uint32_t max_inline;
	size_t max_msg_size;
	size_t naddrs;
	struct rivet_dev_addr addrs[16];
};

struct rivet_devs {
	size_t ndevs;
	struct rivet_dev devs[8];
};

/* Discovery (verbs/rivet_verbs_dev.c). */
int rivet_devs_get(const struct rivet_devs **devs_p);
void rivet_devs_finalize(void);
struct rivet_dev *rivet_dev_lookup_ctx(struct ibv_context *ctx);
const struct rivet_dev *rivet_dev_lookup_name(const char *name);

/* ---- addresses (rivet_addr.c: pure helpers, unit tested) ---- */
size_t rivet_addr_len(const struct sockaddr *sa);
uint32_t rivet_addr_format(const struct sockaddr *sa);
uint16_t rivet_addr_port(const struct sockaddr *sa);
void rivet_addr_set_port(struct sockaddr *sa, uint16_t port);
int rivet_addr_str(const struct sockaddr *sa, char *buf, size_t *len);
int rivet_addr_parse(const char *str, union rivet_sockaddr *out_p);
bool rivet_addr_same_ip(const struct sockaddr *a, const struct sockaddr *b);
/* fi_getname/fi_getpeer: sa (NULL: none yet, -FI_EADDRNOTAVAIL) into
 * addr; -FI_ETOOSMALL with *addrlen the size needed. */
int rivet_addr_copy_name(const struct sockaddr *sa, void *addr,
			 size_t *addrlen);
bool rivet_addr_in_subnet(const struct sockaddr *a, const struct sockaddr *net,
			  unsigned int prefix_len);
void rivet_addr_subnet_name(const struct sockaddr *sa, unsigned int prefix_len,
			    char *buf, size_t len);

/* ---- info (rivet_info.c) ---- */
struct rivet_info_limits {
	const char *fabric_name;
	const char *domain_name;
	const struct sockaddr *src_addr;
	size_t max_qp_wr;
	size_t max_sge;
	size_t max_inline;
	size_t max_msg_size;
	size_t max_cqe;
	size_t max_cq;
	size_t max_qp;
	size_t max_mr;
	size_t max_mr_size;
	bool atomics;
	size_t ud_mtu;		/* FI_EP_DGRAM's max_msg_size: active MTU */
};
/* ep_attr->protocol of the RDM wire (docs/protocol.md); here so that the
 * info code needs none of the RDM headers. */
#define RIVET_PROTO_RDM (RIVET_PROTO_SPECIFIC | 0x7277)
/* fi_endpoint(3)'s generic, unstructured tag format (alternating bits);
 * libfabric's own FI_TAG_GENERIC is internal to it. */
#define RIVET_TAG_GENERIC 0xAAAAAAAAAAAAAAAAULL
/* What lim offers for an endpoint type (MSG, RDM, DGRAM); NULL for
 * other types or without memory. */
struct fi_info *rivet_info_build(const struct rivet_info_limits *lim,
				 enum fi_ep_type type);
/* Checks hints against prov (built from lim) as fi_getinfo(3) says and
 * returns an adjusted copy: 0, -FI_ENODATA (unsatisfiable), -FI_EINVAL or
 * -FI_EBADFLAGS (malformed hints), -FI_ENOMEM.  The copy's prov_name is
 * NULL: the core fills it in (and appends ";ofi_rxm" when layering). */
int rivet_info_match(const struct fi_info *prov,
		     const struct rivet_info_limits *lim,
		     const struct fi_info *hints, uint32_t version,
		     struct fi_info **out_p);
/* Every type that the hints select, each matched on its own, in the order
 * fi_getinfo returns them: RDM, then MSG.  -FI_ENODATA when none matches,
 * else the first other error of a type. */
int rivet_info_select(const struct rivet_info_limits *lim,
		      const struct fi_info *hints, uint32_t version,
		      struct fi_info **list_p);
/* The IP TOS byte (DSCP << 2) for a traffic class, or -1 for
 * FI_TC_UNSPEC (leave the fabric's default); -FI_ENODATA for a class
 * that fi_endpoint(3) does not define.  Pure (rivet_info.c). */
int rivet_tclass_tos(uint32_t tclass, int *tos_p);
/* An endpoint's class: its tx_attr's, else its domain's. */
uint32_t rivet_info_tclass(const struct fi_info *info);
int rivet_getinfo(uint32_t version, const char *node, const char *service,
		  uint64_t flags, const struct fi_info *hints,
		  struct fi_info **info_p);

/* ---- shared -FI_ENOSYS stubs and tables (rivet_nosys.c) ---- */
int rivet_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int rivet_no_control(struct fid *fid, int command, void *arg);
int rivet_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context);
int rivet_no_tostr(const struct fid *fid, char *buf, size_t len);
int rivet_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		     void *ops, void *context);
int rivet_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		    struct fid_ep **tx_ep, void *context);
int rivet_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		    struct fid_ep **rx_ep, void *context);
int rivet_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int rivet_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		     size_t paramlen);
int rivet_no_listen(struct fid_pep *pep);
int rivet_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int rivet_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		    size_t paramlen);
int rivet_no_shutdown(struct fid_ep *ep, uint64_t flags);
int rivet_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		  struct fid_mc **mc, void *context);
#if RIVET_API_VERSION >= FI_VERSION(1, 20)
int rivet_no_insert_auth_key(struct fid_av *av, const void *auth_key,
			     size_t auth_key_size, fi_addr_t *fi_addr,
			     uint64_t flags);
int rivet_no_lookup_auth_key(struct fid_av *av, fi_addr_t fi_addr,
			     void *auth_key, size_t *auth_key_size);
int rivet_no_set_user_id(struct fid_av *av, fi_addr_t fi_addr,
			 fi_addr_t user_id, uint64_t flags);
#endif
extern struct fi_ops_tagged g_rivet_no_tagged_ops;
extern struct fi_ops_cm g_rivet_no_cm_ops;
/* The halves of the message and tagged ops tables that fail
 * (-FI_ENOSYS), for tables that offer the other half only (shared receive
 * contexts receive, a scalable endpoint's transmit contexts send):
 * designated initializers, so those tables are complete at compile time. */
ssize_t rivet_no_send(struct fid_ep *ep, const void *buf, size_t len,
		      void *desc, fi_addr_t dest, void *context);
ssize_t rivet_no_sendv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t dest,
		       void *context);
ssize_t rivet_no_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			 uint64_t flags);
ssize_t rivet_no_inject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest);
ssize_t rivet_no_senddata(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest,
			  void *context);
ssize_t rivet_no_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest);
ssize_t rivet_no_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, void *context);
ssize_t rivet_no_recvv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t src,
		       void *context);
ssize_t rivet_no_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			 uint64_t flags);
ssize_t rivet_no_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		       fi_addr_t src, uint64_t tag, uint64_t ignore,
		       void *context);
ssize_t rivet_no_trecvv(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t src,
			uint64_t tag, uint64_t ignore, void *context);
ssize_t rivet_no_tmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
		      uint64_t flags);
ssize_t rivet_no_tsend(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest, uint64_t tag,
		       void *context);
ssize_t rivet_no_tsendv(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t dest,
			uint64_t tag, void *context);
ssize_t rivet_no_tinject(struct fid_ep *ep, const void *buf, size_t len,
			 fi_addr_t dest, uint64_t tag);
ssize_t rivet_no_tsenddata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest,
			   uint64_t tag, void *context);
ssize_t rivet_no_tinjectdata(struct fid_ep *ep, const void *buf, size_t len,
			     uint64_t data, fi_addr_t dest, uint64_t tag);
#define RIVET_NO_MSG_SENDS \
	.send = rivet_no_send, .sendv = rivet_no_sendv, \
	.sendmsg = rivet_no_sendmsg, .inject = rivet_no_inject, \
	.senddata = rivet_no_senddata, .injectdata = rivet_no_injectdata
#define RIVET_NO_MSG_RECVS \
	.recv = rivet_no_recv, .recvv = rivet_no_recvv, \
	.recvmsg = rivet_no_recvmsg
#define RIVET_NO_TAGGED_SENDS \
	.send = rivet_no_tsend, .sendv = rivet_no_tsendv, \
	.sendmsg = rivet_no_tmsg, .inject = rivet_no_tinject, \
	.senddata = rivet_no_tsenddata, .injectdata = rivet_no_tinjectdata
#define RIVET_NO_TAGGED_RECVS \
	.recv = rivet_no_trecv, .recvv = rivet_no_trecvv, \
	.recvmsg = rivet_no_tmsg
extern struct fi_ops_collective g_rivet_no_collective_ops;
extern struct fi_ops_rma g_rivet_no_rma_ops;
extern struct fi_ops_atomic g_rivet_no_atomic_ops;
int rivet_errno_to_fi(int err);
/* ---- the verbs seam: libibverbs (verbs/rivet_verbs_ibv.c) and librdmacm
 * (verbs/rivet_verbs_cm.c); each returns 0 or a negative FI_E* code, the
 * error logged ---- */
/* CQs and their channels; events_ack takes every pending event of a
 * nonblocking channel and acknowledges them on cq, returning how many. */
int rivet_verbs_channel_create(struct ibv_context *ctx,
			       struct ibv_comp_channel **ch_p);
void rivet_verbs_channel_destroy(struct ibv_comp_channel *ch);
int rivet_verbs_cq_create(struct ibv_context *ctx, int cqe, void *cq_context,
			  struct ibv_comp_channel *ch, struct ibv_cq **cq_p);
int rivet_verbs_cq_resize(struct ibv_cq *cq, int cqe);
int rivet_verbs_cq_destroy(struct ibv_cq *cq);
unsigned int rivet_verbs_cq_events_ack(struct ibv_cq *cq,
				       struct ibv_comp_channel *ch);
/* PDs and registrations; fork_safe: registrations
 * survive fork (ibv_fork_init done, or a kernel that needs none). */
int rivet_verbs_pd_alloc(struct ibv_context *ctx, struct ibv_pd **pd_p);
int rivet_verbs_pd_dealloc(struct ibv_pd *pd);
int rivet_verbs_mr_reg(struct ibv_pd *pd, void *addr, size_t len,
		       int access, struct ibv_mr **mr_p);
int rivet_verbs_mr_reg_iova(struct ibv_pd *pd, void *addr, size_t len,
			    uint64_t iova, int access, struct ibv_mr **mr_p);
int rivet_verbs_mr_dereg(struct ibv_mr *mr);
bool rivet_verbs_fork_safe(void);
/* rdma_cm event channels; event_get: -FI_EAGAIN when the (nonblocking)
 * channel is empty; refuse: rejects a connection request and destroys its
 * id. */
int rivet_verbs_cm_channel_create(struct rdma_event_channel **ch_p);
void rivet_verbs_cm_channel_destroy(struct rdma_event_channel *ch);
int rivet_verbs_cm_event_get(struct rdma_event_channel *ch,
			     struct rdma_cm_event **ev_p);
void rivet_verbs_cm_event_ack(struct rdma_cm_event *ev);
void rivet_verbs_cm_refuse(struct rdma_cm_id *id);
/* Endpoints: SRQs; cm_listen: an id of channel ch bound to
 * src and listening (tos: rivet_id_set_tos's), on device ctx, its address
 * in name (on failure *id_p, when not NULL, is the caller's to destroy);
 * cm_qp_destroy: the QP of a connected id. */
int rivet_verbs_srq_create(struct ibv_pd *pd, uint32_t max_wr,
			   uint32_t max_sge, struct ibv_srq **srq_p);
int rivet_verbs_srq_destroy(struct ibv_srq *srq);
int rivet_verbs_cm_listen(struct rdma_event_channel *ch,
			  const struct sockaddr *src, int tos, int backlog,
			  struct ibv_context *ctx, struct rdma_cm_id **id_p,
			  union rivet_sockaddr *name);
void rivet_verbs_cm_id_destroy(struct rdma_cm_id *id);
int rivet_verbs_cm_disconnect(struct rdma_cm_id *id);
int rivet_verbs_cm_migrate(struct rdma_cm_id *id,
			   struct rdma_event_channel *ch);
void rivet_verbs_cm_qp_destroy(struct rdma_cm_id *id);
/* An outgoing connection's id, of context, bound near src and resolving
 * dst's address (tos as rivet_id_set_tos; the ACK timeout set); on
 * failure *id_p, when not NULL, is the caller's to destroy. */
int rivet_verbs_cm_resolve(struct rdma_event_channel *ch, void *context,
			   const struct sockaddr *src,
			   const struct sockaddr *dst, int tos, int timeout_ms,
			   struct rdma_cm_id **id_p);
int rivet_verbs_cm_resolve_route(struct rdma_cm_id *id, int timeout_ms);
/* id->qp made of attr (wr_api: with the extended send API, *qpx_p then
 * the QP's, where the device has it; else NULL). */
int rivet_verbs_cm_qp_create(struct rdma_cm_id *id,
			     struct ibv_qp_init_attr_ex *attr, bool wr_api,
			     struct ibv_qp_ex **qpx_p);
int rivet_verbs_cm_connect(struct rdma_cm_id *id, struct rdma_conn_param *p);
int rivet_verbs_cm_accept(struct rdma_cm_id *id, struct rdma_conn_param *p);
int rivet_verbs_qp_to_error(struct ibv_qp *qp);
int rivet_verbs_qp_destroy(struct ibv_qp *qp);
/* The rdma_cm steps one by one (id_create: *id_p NULL on failure). */
int rivet_verbs_cm_id_create(struct rdma_event_channel *ch, void *context,
			     enum rdma_port_space ps, struct rdma_cm_id **id_p);
int rivet_verbs_cm_bind(struct rdma_cm_id *id, const struct sockaddr *sa);
int rivet_verbs_cm_listen_on(struct rdma_cm_id *id, int backlog);
int rivet_verbs_cm_resolve_addr(struct rdma_cm_id *id,
				const struct sockaddr *src,
				const struct sockaddr *dst, int timeout_ms);
int rivet_verbs_cm_reject(struct rdma_cm_id *id, const void *data,
			  uint8_t len);
int rivet_verbs_cm_qp_create_plain(struct rdma_cm_id *id, struct ibv_pd *pd,
				   struct ibv_qp_init_attr *attr);
/* Datagrams: a UD QP made and ready to send (attr->cap: what it got; on
 * failure *qp_p, when not NULL, is the caller's to destroy), address
 * handles, a port's GIDs (-FI_EIO: none at index). */
int rivet_verbs_ud_qp_create(struct ibv_pd *pd, struct ibv_qp_init_attr *attr,
			     uint8_t port, uint32_t qkey, struct ibv_qp **qp_p);
int rivet_verbs_ah_create(struct ibv_pd *pd, struct ibv_ah_attr *attr,
			  struct ibv_ah **ah_p);
void rivet_verbs_ah_destroy(struct ibv_ah *ah);
int rivet_verbs_gid(struct ibv_context *ctx, uint8_t port, int index,
		    union ibv_gid *gid);
int rivet_verbs_gid_entry(struct ibv_context *ctx, uint8_t port, int index,
			  struct ibv_gid_entry *ent);
/* Which device routes to dst (from src, when not NULL), and its local
 * address (verbs/rivet_verbs_dev.c): -FI_ENODATA when none. */
int rivet_verbs_route(const struct sockaddr *src, const struct sockaddr *dst,
		      int timeout_ms, struct ibv_context **ctx_p,
		      union rivet_sockaddr *local_p);
bool rivet_verbs_port_ethernet(struct ibv_context *ctx, uint8_t port);
int rivet_verbs_qp_query_retry(struct ibv_qp *qp, uint8_t *timeout,
			       uint8_t *retry_cnt);
/* rdma_cm leaves min_rnr_timer at 0 (655 ms): a peer that finds no receive
 * posted would stall that long before retrying.  12 is 0.64 ms. */
#define RIVET_MIN_RNR_TIMER 12
void rivet_qp_set_rnr_timer(struct ibv_qp *qp);
/* tos from rivet_tclass_tos (-1: leave the default) */
void rivet_id_set_tos(struct rdma_cm_id *id, int tos);
void rivet_id_set_ack_timeout(struct rdma_cm_id *id);

/* ---- fabric, domain (rivet_fabric.c, rivet_domain.c) ---- */
struct rivet_fabric {
	struct fid_fabric fabric_fid;
	uint32_t api_version;	/* the application's: its structs' layout */
	atomic_int refcnt;
	char *name;
};

struct rivet_domain {
	struct fid_domain domain_fid;
	struct rivet_fabric *fabric;
	struct rivet_dev *dev;
	struct ibv_pd *pd;
	struct fi_info *info;
	atomic_int refcnt;
	enum fi_threading threading;
	uint64_t mr_mode;
	bool rx_cq_data;
	struct rivet_eq *eq;
	bool native_atomics;	/* FI_RIVET_NATIVE_ATOMICS, device able */
	/* the target's side of atomics: rkey -> rivet_mr (rivet_mr.c) */
	pthread_mutex_t mr_lock;
	struct rivet_u32_map *mr_keys;
	/* Cooperative polling on software RDMA devices (rxe): while no
	 * completion is found, an empty poll yields the CPU to the kernel
	 * workers that move the data once every poll_yield_ns. */
	uint64_t poll_yield_ns;
	_Atomic uint64_t poll_busy_ns;	/* idle since, or yielded at */
	atomic_bool poll_found;		/* found work since the last idle poll */
	/* internal registrations (rivet_mr_monitor.c): the cache, NULL
	 * when nothing is cached; ibv_reg_mr calls made for them */
	struct rivet_mr_cache *mr_cache;
	_Atomic uint64_t mr_regs;
	/* triggered operations waiting for their counters, in threshold
	 * order (rivet_cntr_trig.c); trig_run: one thread starts them */
	pthread_mutex_t trig_lock, trig_run;
	struct rivet_trig *trig;	/* trig_lock */
	atomic_size_t ntrig;
	/* bumped by every address an AV of the domain takes (rivet_av.c):
	 * a receive side with unexpected messages from peers not in the AV
	 * looks again when it moved (rivet_rdm_rxq_resolve) */
	_Atomic uint64_t av_gen;
};

/* ---- triggered operations (rivet_cntr_trig.c) ---- */
#define RIVET_TRIG_IOV_MAX 4
enum rivet_trig_kind {
	RIVET_TRIG_SEND,
	RIVET_TRIG_RECV,
	RIVET_TRIG_TSEND,
	RIVET_TRIG_TRECV,
	RIVET_TRIG_READ,
	RIVET_TRIG_WRITE,
	RIVET_TRIG_ATOMIC,
	RIVET_TRIG_FETCH,
	RIVET_TRIG_COMPARE,
};
/* A triggered operation that failed when it started: the endpoint
 * reports it (an error completion with context). */
typedef void (*rivet_trig_fail_fn)(struct fid_ep *ep, void *context,
				   int err);
struct rivet_trig;
void rivet_trig_construct(struct rivet_domain *dom);
void rivet_trig_destruct(struct rivet_domain *dom);
/* A data call with FI_TRIGGER (its context a struct fi_triggered_context
 * with FI_TRIGGER_THRESHOLD): kept until the counter reaches the
 * threshold, then made again on ep without the flag.  -FI_EINVAL for a
 * bad trigger or more than RIVET_TRIG_IOV_MAX elements. */
ssize_t rivet_trig_msg(struct rivet_domain *dom, struct fid_ep *ep,
		       enum rivet_trig_kind kind, const struct fi_msg *msg,
		       uint64_t flags, rivet_trig_fail_fn fail);
ssize_t rivet_trig_tagged(struct rivet_domain *dom, struct fid_ep *ep,
			  enum rivet_trig_kind kind,
			  const struct fi_msg_tagged *msg, uint64_t flags,
			  rivet_trig_fail_fn fail);
ssize_t rivet_trig_rma(struct rivet_domain *dom, struct fid_ep *ep,
		       enum rivet_trig_kind kind, const struct fi_msg_rma *msg,
		       uint64_t flags, rivet_trig_fail_fn fail);
ssize_t rivet_trig_atomic(struct rivet_domain *dom, struct fid_ep *ep,
			  enum rivet_trig_kind kind,
			  const struct fi_msg_atomic *msg,
			  const struct fi_ioc *comparev, void **compare_desc,
			  size_t compare_count, const struct fi_ioc *resultv,
			  void **result_desc, size_t result_count,
			  uint64_t flags, rivet_trig_fail_fn fail);
/* Starts the operations whose counters reached their thresholds; call
 * it holding no lock of rivet's. */
void rivet_trig_run(struct rivet_domain *dom);
/* An endpoint closes: its operations still waiting go. */
void rivet_trig_drop_ep(struct rivet_domain *dom, const struct fid_ep *ep);

static inline uint64_t rivet_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A poll of the domain's CQs or counters found work (found) or none.  A
 * poll that finds work only marks it (the clock is not read on the path
 * that delivers a completion); the first empty poll after it starts the
 * idle period. */
static inline void rivet_domain_polled(struct rivet_domain *dom, bool found)
{
	uint64_t now;

	if (!dom->poll_yield_ns)
		return;
	if (found) {
		atomic_store_explicit(&dom->poll_found, true,
				      memory_order_relaxed);
		return;
	}
	now = rivet_now_ns();
	if (atomic_load_explicit(&dom->poll_found, memory_order_relaxed)) {
		atomic_store_explicit(&dom->poll_found, false,
				      memory_order_relaxed);
		atomic_store_explicit(&dom->poll_busy_ns, now,
				      memory_order_relaxed);
	} else if (now - atomic_load_explicit(&dom->poll_busy_ns,
					      memory_order_relaxed) >=
		   dom->poll_yield_ns) {
		/* at most one yield per poll_yield_ns of idling: one lets
		 * whatever waits for this CPU run; more only add syscalls */
		sched_yield();
		atomic_store_explicit(&dom->poll_busy_ns, now,
				      memory_order_relaxed);
	}
}

int rivet_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric_p,
		      void *context);
int rivet_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain_p, void *context);
/* fi_endpoint, fi_endpoint2 (rivet_ep.c): an endpoint of info's type.
 * The domain's ops table names them; the domain calls no endpoint. */
int rivet_ep_open(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **ep_p, void *context);
/* The contexts a scalable endpoint (FI_EP_RDM) has at most each way */
#define RIVET_SEP_MAX_CTX 16
int rivet_ep_scalable_open(struct fid_domain *domain, struct fi_info *info,
			   struct fid_ep **sep_p, void *context);
int rivet_ep_open2(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep_p, uint64_t flags, void *context);

static inline struct rivet_fabric *to_rfabric(struct fid_fabric *f)
{
	return container_of(f, struct rivet_fabric, fabric_fid);
}

static inline struct rivet_domain *to_rdomain(struct fid_domain *d)
{
	return container_of(d, struct rivet_domain, domain_fid);
}

/* ---- memory regions (rivet_mr.c) ---- */
/* Without FI_MR_VIRT_ADDR (offset addressing), a region that peers may
 * access is registered twice: ibv_mr for local use (descriptors address
 * by virtual address, as do rivet's internal rendezvous reads) and
 * remote_mr with IOVA 0, whose rkey is fi_mr_key: the peer's RDMA then
 * names offsets from the start of the region, checked by the device. */
struct rivet_mr {
	struct fid_mr mr_fid;
	struct rivet_domain *domain;
	struct ibv_mr *ibv_mr;
	struct ibv_mr *remote_mr;	/* offset addressing only */
	uint64_t iova;			/* a peer's address of the first byte */
	uint64_t access;
	int ibv_access;
	/* fi_mr_bind: counted RMA events aimed at the region (FI_RMA_EVENT;
	 * with FI_MR_RMA_EVENT only once fi_mr_enable has been called) */
	struct rivet_cntr *rma_cntr;
	uint64_t cntr_flags;	/* FI_REMOTE_READ, FI_REMOTE_WRITE */
	bool enabled;
	/* rendezvous in flight over this registration: fi_close is
	 * -FI_EBUSY until they are done (a peer's read would fail) */
	atomic_int busy;
};

/* Whether the domain addresses remote regions by virtual address (API
 * >= 1.5 FI_MR_VIRT_ADDR, or the legacy basic / unspecified modes). */
static inline bool rivet_domain_virt_addr(const struct rivet_domain *dom)
{
	return (dom->mr_mode & FI_MR_VIRT_ADDR) || dom->mr_mode == RIVET_MR_BASIC ||
	       dom->mr_mode == RIVET_MR_UNSPEC;
}

/* Under dom->mr_lock: the region of rkey, NULL if none. */
struct rivet_mr *rivet_mr_lookup_locked(struct rivet_domain *dom,
					uint32_t key);
/* An RMA event aimed at mr (flag: FI_REMOTE_READ or FI_REMOTE_WRITE):
 * its bound counter, if any (under dom->mr_lock). */
void rivet_mr_rma_event_locked(struct rivet_mr *mr, uint64_t flag);
/* Under dom->mr_lock: the region of key if it grants peers every right
 * of need (FI_REMOTE_READ, FI_REMOTE_WRITE) over [addr, addr + len) as
 * they address it (virtual addresses or offsets); else NULL. */
struct rivet_mr *rivet_mr_remote_locked(struct rivet_domain *dom,
					uint64_t key, uint64_t addr,
					uint64_t len, uint64_t need);
/* A peer's RMA event message: counted (flag) only if its region grants
 * need over its range (rivet_mr_remote_locked); whether it did.  Takes
 * dom->mr_lock. */
bool rivet_mr_rma_event(struct rivet_domain *dom, uint32_t key,
			uint64_t addr, uint64_t len, uint64_t need,
			uint64_t flag);

/* Internal registrations (rivet_mr_monitor.c): a registration of
 * [addr, addr + len) with at least `access`, from the domain's cache when
 * it has one and the caller allows (else made for this use alone), held
 * until rivet_mr_put.  With remote access (its key goes to a peer) a
 * cached one only if it is of exactly that range. */
struct rivet_mr_entry;
int rivet_mr_get(struct rivet_domain *dom, void *addr, size_t len,
		 int access, bool cacheable, struct rivet_mr_entry **entry_p);
void rivet_mr_put(struct rivet_domain *dom, struct rivet_mr_entry *entry);
int rivet_mr_cache_open(struct rivet_domain *dom);
void rivet_mr_cache_close(struct rivet_domain *dom);
/* Stops the monitor's thread if domains were left open (the core is about
 * to unload us). */
void rivet_mr_monitor_finalize(void);
int rivet_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags,
		 struct fid_mr **mr_p, void *context);
int rivet_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr_p, void *context);
int rivet_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		     uint64_t flags, struct fid_mr **mr_p);
int rivet_mr_access_to_ibv(uint64_t access);

static inline uint32_t rivet_mr_lkey(void *desc)
{
	struct rivet_mr *mr = desc;

	return mr->ibv_mr ? mr->ibv_mr->lkey : 0;
}

/* ---- waits (rivet_wait.c): an epoll fd over channel fds plus an eventfd */
struct rivet_wait {
	int epfd;
	int efd;
};
int rivet_wait_construct(struct rivet_wait *w);
void rivet_wait_destruct(struct rivet_wait *w);
int rivet_wait_add_fd(struct rivet_wait *w, int fd);
/* Makes a channel fd nonblocking (O_NONBLOCK). */
int rivet_wait_nonblock(int fd);
void rivet_wait_del_fd(struct rivet_wait *w, int fd);
void rivet_wait_signal(struct rivet_wait *w);
/* true when the eventfd had been signaled */
bool rivet_wait_drain_signal(struct rivet_wait *w);
/* 0 when an fd became ready, -FI_EAGAIN on timeout, other negative on error */
int rivet_wait_fd(struct rivet_wait *w, int timeout_ms);
/* FI_GETWAIT/FI_GETWAITOBJ for an object whose wait is w (epfd < 0: none) */
int rivet_wait_control(const struct rivet_wait *w, int command, void *arg);
/* Blocking calls' timeouts: a deadline from a timeout in ms (< 0: never),
 * then the ms left to it (-1: forever, 0: expired). */
uint64_t rivet_wait_deadline(int timeout_ms);
int rivet_wait_remaining(uint64_t deadline);

/* ---- the progress seam (rivet_progress.c) ----
 * Resources know no endpoint type.  An endpoint whose own work must run
 * for its CQs and counters to fill (an RDM endpoint: its verbs CQ, its
 * connections) registers a progress source with each CQ it is bound to;
 * fi_cq_read, counter reads (through the CQs they are fed by) and the
 * blocking waits call through it, and so does the endpoint's own
 * FI_PROGRESS_AUTO thread (rivet_rdm_thread.c).
 */
struct rivet_cq;
struct rivet_progress_src {
	/* data progress: returns the work completions it handled */
	int (*progress)(struct rivet_progress_src *src);
	/* control progress (rdma_cm) before a sleep: the data path looks
	 * at it only now and then */
	void (*progress_cm)(struct rivet_progress_src *src);
	/* optional: fi_cq_readfrom of a CQ that this source alone feeds,
	 * neither locked (rivet_cq_fast_update says when), with its progress
	 * inline; NULL: the general read */
	ssize_t (*read)(struct rivet_progress_src *src, struct rivet_cq *cq,
			void *buf, size_t count, fi_addr_t *src_addr);
};

/*
 * The sources of one CQ.  lock is outermost in the lock order (rivet.h,
 * THE LOCK ORDER); it is taken unless locking is off
 * (FI_THREAD_DOMAIN: sources come and go in calls that the application
 * serializes with its reads).
 */
struct rivet_progress_set {
	pthread_mutex_t lock;
	bool locking;
	struct rivet_progress_src **srcs;
	size_t n, cap;
};

void rivet_progress_set_construct(struct rivet_progress_set *set,
				  bool locking);
void rivet_progress_set_destruct(struct rivet_progress_set *set);
int rivet_progress_set_add(struct rivet_progress_set *set,
			   struct rivet_progress_src *src);
void rivet_progress_set_remove(struct rivet_progress_set *set,
			       struct rivet_progress_src *src);
/* Every source's progress_cm (before a sleep). */
void rivet_progress_set_run_cm(struct rivet_progress_set *set);

/* Every source's progress: on each fi_cq_read, so inline. */
static inline void rivet_progress_set_run(struct rivet_progress_set *set)
{
	size_t i;

	if (!set->n)
		return;
	if (set->locking)
		pthread_mutex_lock(&set->lock);
	for (i = 0; i < set->n; i++)
		set->srcs[i]->progress(set->srcs[i]);
	if (set->locking)
		pthread_mutex_unlock(&set->lock);
}

/* ---- counters (rivet_cntr.c) ---- */
struct rivet_cq;
struct rivet_cntr_cq {
	struct rivet_cq *cq;
	size_t uses;		/* endpoint bindings that feed through it */
};

struct rivet_cntr {
	struct fid_cntr cntr_fid;
	struct rivet_domain *domain;
	atomic_uint_least64_t value;
	_Atomic uint64_t polled;	/* value the last fi_cntr_read returned */
	/* fi_poll reports a change from these: the values at the last
	 * fi_poll that reported the counter, fi_cntr_set or fi_cntr_add */
	_Atomic uint64_t poll_value, poll_err;
	atomic_uint_least64_t err;
	struct fi_cntr_attr attr;
	struct rivet_wait wait;
	/* CQs whose progress feeds this counter (cqs_lock: THE LOCK ORDER,
	 * 5) */
	pthread_mutex_t cqs_lock;
	size_t ncqs, cqs_cap;
	struct rivet_cntr_cq *cqs;
	atomic_int refcnt;
};

int rivet_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		    struct fid_cntr **cntr_p, void *context);
int rivet_cntr_trywait(struct rivet_cntr *cntr);
/* Poll sets (rivet_pollset.c): progress, then whether the value or the
 * error count moved since the baseline; take: they become the baseline. */
bool rivet_cntr_poll_changed(struct rivet_cntr *cntr, bool take);
/* Whether the counter fills only in progress that nothing wakes (a CQ
 * with progress sources feeds it): waits must poll. */
bool rivet_cntr_needs_poll(struct rivet_cntr *cntr);
int rivet_cntr_attach_cq(struct rivet_cntr *cntr, struct rivet_cq *cq);
void rivet_cntr_detach_cq(struct rivet_cntr *cntr, struct rivet_cq *cq);

static inline struct rivet_cntr *to_rcntr(struct fid_cntr *cntr)
{
	return container_of(cntr, struct rivet_cntr, cntr_fid);
}

/* rivet_cntr_inc, rivet_cntr_inc_err, rivet_trig_poll: rivet_cntr.h */

/* ---- completion queues (rivet_cq.c) ---- */

/*
 * Every posted work request carries one of these as its wr_id.  It tells the
 * CQ progress what to report and which counter to bump.  They live in an
 * endpoint-owned array; flags hold the FI_* completion flags.
 */
struct rivet_ep;
struct rivet_srx;
struct rivet_wr_ring;
struct rivet_cq;

struct rivet_wr_ctx {
	struct rivet_ep *ep;		/* owner (opaque here): purges */
	struct rivet_wr_ring *ring;	/* the ring to retire this slot in */
	void *context;
	uint64_t flags;
	size_t len;
	void *buf;
	struct rivet_cntr *cntr;
	struct rivet_cntr *imm_cntr;	/* receive: a write with immediate */
	bool rx;		/* a receive: its length is the message's */
	uint8_t hdr_len;	/* receive: bytes before the message that the
				 * device wrote (a UD GRH), not reported */
	bool report;		/* generate a CQ entry on success */
	struct rivet_wc_hook *hook;	/* the owner takes the completion */
	/* receive with FI_SOURCE: who sent it (a DGRAM endpoint's lookup) */
	struct rivet_src_resolver *source;
	uint8_t *grh;		/* DGRAM receive: its GRH slot */
	/* a shared receive context's receive: the endpoint that took it is
	 * known at its completion (srx->wc_ops); no ring, no CQ credit */
	struct rivet_srx *srx;
};

/* The fi_addr_t of a received message's sender, from its work
 * completion (FI_ADDR_NOTAVAIL when the AV does not hold it); called by
 * the CQ under cq->lock for successful receives. */
struct rivet_src_resolver {
	fi_addr_t (*resolve)(struct rivet_src_resolver *r,
			     const struct rivet_wr_ctx *ctx,
			     const struct ibv_wc *wc);
};

/*
 * A work request whose completion its owner handles itself (a step of an
 * emulated MSG atomic): the CQ hands the work completion to wc, under
 * cq->lock, instead of reporting it.
 */
struct rivet_wc_hook {
	void (*wc)(struct rivet_wc_hook *hook, struct rivet_cq *cq,
		   const struct rivet_wr_ctx *ctx, const struct ibv_wc *wc);
};

/*
 * How the CQ hands a receive of a shared receive context back to the
 * context (msg/rivet_msg_srx.c registers them; the CQ never calls up): route
 * names the endpoint whose QP took it, in out (false: nothing to report);
 * done, after the report, gives the context's slot back.  Under cq->lock.
 */
struct rivet_srx_wc_ops {
	bool (*route)(const struct rivet_wr_ctx *ctx, const struct ibv_wc *wc,
		      struct rivet_wr_ctx *out);
	void (*done)(const struct rivet_wr_ctx *ctx);
};

/*
 * Work that a completion hook leaves for the CQ to run outside cq->lock,
 * from reads and counter reads (rivet_cq_defer_locked,
 * rivet_cq_run_deferred): run returns true to be run again on a later
 * read (no room to post yet); drop frees an item whose owner closes.
 */
struct rivet_cq_deferred {
	struct rivet_cq_deferred *next;
	const struct rivet_ep *owner;
	bool (*run)(struct rivet_cq_deferred *d);
	void (*drop)(struct rivet_cq_deferred *d);
};

/* A converted completion waiting in the CQ's software ring. */
struct rivet_cq_entry {
	struct rivet_ep *ep;	/* owner, so a closed endpoint can purge */
	void *op_context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	size_t olen;		/* FI_ETRUNC: bytes that did not fit */
	fi_addr_t src;
	int err;		/* positive FI_E* code, 0 on success */
	int prov_errno;		/* enum ibv_wc_status */
	uint64_t seq;		/* the CQ's order of entries (cq->seq) */
};

struct rivet_cq {
	struct fid_cq cq_fid;
	struct rivet_domain *domain;
	struct fi_cq_attr attr;
	struct ibv_comp_channel *channel;
	struct ibv_cq *ibv_cq;
	bool armed;
	struct rivet_lock lock;
	/* software ring of converted completions */
	struct rivet_cq_entry *ring;
	size_t ring_size;
	size_t head;		/* next to read */
	size_t count;		/* entries in ring */
	/* errors go to a separate FIFO so fi_cq_read can return -FI_EAVAIL;
	 * both FIFOs' entries carry their place in one order (seq, from
	 * cq->seq): a read gives the successes before the first error, then
	 * -FI_EAVAIL (fi_cq(3): "the topmost completion") */
	struct rivet_cq_entry *errs;
	size_t errs_size;
	size_t errs_head;
	size_t errs_count;
	uint64_t seq;
	struct rivet_wait wait;
	size_t credits;		/* CQEs the ibv CQ can still absorb */
	atomic_int refcnt;
	atomic_bool signaled;	/* fi_cq_signal: sread returns -FI_EAGAIN */
	bool hidden;		/* internal CQ of an endpoint with none bound */
	/* MSG endpoints bound: only they feed ibv_cq (an RDM endpoint has a
	 * verbs CQ of its own), so fi_cq_read skips it while there are none */
	atomic_int msg_eps;
	/* endpoints whose progress fills this CQ (RDM): reads, counter
	 * reads and waits drive them through the progress seam */
	struct rivet_progress_set srcs;
	char err_buf[192];	/* backing for the last readerr's err_data */
	uint32_t api_version;	/* the fabric's: how readerr lays out */
	/* what completion hooks left to run outside cq->lock (the next
	 * steps of emulated MSG atomics), from reads and counter reads */
	struct rivet_cq_deferred *deferred;
	bool deferred_running;
	/* fi_cq_read's own buffer while its progress runs with both FIFOs
	 * empty: successful completions are written straight into it, in
	 * order, up to dmax; any more go to the ring after them (one reader
	 * at a time: dbuf is NULL otherwise) */
	void *dbuf;
	fi_addr_t *dsrc;
	size_t dn, dmax;
	/* the one source that feeds this CQ when it has a read of its own
	 * and neither the CQ nor its set of sources is locked
	 * (rivet_cq_fast_update); fi_cq_readfrom goes straight to it */
	struct rivet_progress_src *fast;
};

int rivet_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		  struct fid_cq **cq_p, void *context);
int rivet_cq_open_hidden(struct rivet_domain *domain, size_t size,
			 struct rivet_cq **cq_p);
void rivet_cq_close_hidden(struct rivet_cq *cq);
/* cq->fast, after a change of its sources, its lock or its MSG
 * endpoints. */
void rivet_cq_fast_update(struct rivet_cq *cq);
/* An MSG endpoint lets go of a CQ it was bound to. */
void rivet_cq_unbind_msg(struct rivet_cq *cq);
/* Polls the verbs CQ into the software ring; returns entries converted. */
int rivet_cq_progress(struct rivet_cq *cq);
/* Drops ring entries owned by a closing endpoint (after its QP is gone). */
void rivet_cq_purge_ep(struct rivet_cq *cq, struct rivet_ep *ep);
/* Reserve/return CQEs for posts (FI_RM_ENABLED overrun protection). */
bool rivet_cq_take_credit(struct rivet_cq *cq);
void rivet_cq_return_credit(struct rivet_cq *cq);
/* Room for n more work completions that take no credits (a shared
 * receive context's). */
int rivet_cq_grow(struct rivet_cq *cq, size_t n);
/* Arms the verbs CQ for one notification; -FI_EAGAIN when entries are
 * already waiting (the caller must not sleep). */
int rivet_cq_arm(struct rivet_cq *cq);
/* Collects and acks pending channel events without blocking. */
void rivet_cq_consume_events(struct rivet_cq *cq);
int rivet_cq_trywait(struct rivet_cq *cq);
/* Poll sets: progress as fi_cq_read does, then whether entries or errors
 * wait in the CQ. */
bool rivet_cq_pending(struct rivet_cq *cq);
const char *rivet_wc_status_str(int status);
void rivet_cq_need_lock(struct rivet_cq *cq);
/* The progress seam: an endpoint's source, driven by this CQ's reads. */
int rivet_cq_add_source(struct rivet_cq *cq, struct rivet_progress_src *src);
void rivet_cq_del_source(struct rivet_cq *cq, struct rivet_progress_src *src);

/* Completion hooks (cq->lock held) leave work for later: it runs outside
 * the lock, on the next read (rivet_cq_run_deferred). */
static inline void rivet_cq_defer_locked(struct rivet_cq *cq,
					 struct rivet_cq_deferred *d)
{
	RIVET_HELD(&cq->lock);
	d->next = cq->deferred;
	cq->deferred = d;
}

static inline bool rivet_cq_has_deferred(const struct rivet_cq *cq)
{
	return cq->deferred && !cq->deferred_running;
}

void rivet_cq_run_deferred(struct rivet_cq *cq);

/* Between the CQ's files: rivet_cq.c's verbs CQ poll and FIFOs (cq->lock
 * held); rivet_cq_read.c's reads; rivet_cq_wait.c's blocking calls and
 * channel. */
int rivet_cq_poll_locked(struct rivet_cq *cq);
/* An entry into the ring (success) or the error FIFO, in the CQ's order;
 * the caller made room. */
void rivet_cq_put(struct rivet_cq *cq, const struct rivet_cq_entry *e);
int rivet_cq_grow_locked(struct rivet_cq *cq);
ssize_t rivet_cq_read(struct fid_cq *cq_fid, void *buf, size_t count);
ssize_t rivet_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			  fi_addr_t *src_addr);
/* A source's read (rivet_progress_src.read) after its progress wrote
 * cq->dn entries into buf, with cq->dbuf reset: the rest of
 * fi_cq_readfrom (deferred hooks, errors, the ring). */
ssize_t rivet_cq_read_rest(struct rivet_cq *cq, void *buf, size_t count,
			   fi_addr_t *src_addr);
/* The general fi_cq_readfrom, which a source's read falls back to. */
ssize_t rivet_cq_readfrom_any(struct rivet_cq *cq, void *buf, size_t count,
			      fi_addr_t *src_addr);
unsigned int rivet_cq_ack_events(struct rivet_cq *cq);
ssize_t rivet_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
		       const void *cond, int timeout);
ssize_t rivet_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			   fi_addr_t *src_addr, const void *cond, int timeout);
int rivet_cq_signal(struct fid_cq *cq_fid);
int rivet_cq_control(struct fid *fid, int command, void *arg);
/* Queues a completion produced in software (RDM protocol).  An error
 * entry without a prov_errno gets the reason its err implies. */
void rivet_cq_write(struct rivet_cq *cq, const struct rivet_cq_entry *e);
/* A successful completion, from its fields: as rivet_cq_write, without an
 * entry built for it when a reader's buffer takes it. */
void rivet_cq_write_ok(struct rivet_cq *cq, void *op_context, uint64_t flags,
		       size_t len, void *buf, uint64_t data, uint64_t tag,
		       fi_addr_t src);
int rivet_wc_status_to_fi(int status);

/*
 * prov_errno of an error completion: a verbs work completion status
 * (enum ibv_wc_status, below RIVET_PERR_BASE), or one of these reasons
 * that rivet found itself.  Never 0 in an error entry: fi_cq_strerror
 * names every one (rivet_cq_err.c).
 */
enum rivet_perr {
	RIVET_PERR_BASE = 0x1000,
	RIVET_PERR_PEER_RX,	/* the receiver could not place the data */
	RIVET_PERR_CONN,	/* the connection to the peer failed */
	RIVET_PERR_PROTO,	/* the peer broke the wire protocol */
	RIVET_PERR_REG,		/* a buffer could not be registered */
	RIVET_PERR_CANCELED,	/* fi_cancel */
	RIVET_PERR_NOMSG,	/* FI_PEEK: no such message */
	RIVET_PERR_TRUNC,	/* the receive buffer was too small */
	RIVET_PERR_TARGET,	/* the target refused the operation */
	RIVET_PERR_AV_REMOVED,	/* the peer was removed from the AV */
	RIVET_PERR_OTHER,	/* nothing more specific than err */
};

/* The reason an FI_E* code implies when nothing more is known. */
int rivet_perr_of(int err);
/* A prov_errno in words. */
const char *rivet_perr_str(int prov_errno);
/* What an error entry says: operation, peer, reason; len > 0. */
void rivet_cq_err_text(const struct rivet_cq_entry *e, char *buf,
		       size_t len);

static inline struct rivet_cq *to_rcq(struct fid_cq *cq)
{
	return container_of(cq, struct rivet_cq, cq_fid);
}

/* ---- event queues (rivet_eq.c) ---- */
struct rivet_eq_event {
	uint32_t event;
	struct fi_eq_err_entry entry;	/* fid, context, data, err, ... */
	struct fi_info *info;		/* FI_CONNREQ */
	size_t data_len;
	uint8_t data[256];		/* private data (cm) or user data */
	bool is_err;
	bool verbatim;			/* fi_eq_write: data is the event */
	struct rivet_eq_event *next;
};

struct rivet_eq;
/* Takes one rdma_cm event (and acks it); called by EQ progress without
 * eq->lock. */
typedef void (*rivet_eq_cm_handler_fn)(struct rivet_eq *eq,
				       struct rdma_cm_event *ev);

struct rivet_eq {
	struct fid_eq eq_fid;
	struct rivet_fabric *fabric;
	struct fi_eq_attr attr;
	struct rdma_event_channel *channel;
	pthread_mutex_t lock;
	/* serializes rdma_cm event handling so events keep their order */
	pthread_mutex_t progress_lock;
	struct rivet_eq_event *head, *tail;	/* FIFO */
	size_t count;
	struct rivet_eq_event *err_head, *err_tail;
	struct rivet_wait wait;
	atomic_int refcnt;
	void *err_data;		/* backing for the last readerr's err_data */
	/* what handles the rdma_cm events of the channel (lock): set by
	 * the endpoints that make ids on it, so the EQ knows none of them */
	rivet_eq_cm_handler_fn cm_handler;
};

int rivet_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		  struct fid_eq **eq_p, void *context);
/* Queues an event (takes ownership of ev). */
void rivet_eq_push(struct rivet_eq *eq, struct rivet_eq_event *ev);
int rivet_eq_progress(struct rivet_eq *eq);
int rivet_eq_trywait(struct rivet_eq *eq);
/* An endpoint that makes rdma_cm ids on the EQ's channel names the
 * handler of their events (rivet_cm_handle_event for MSG endpoints and
 * passive endpoints). */
void rivet_eq_set_cm_handler(struct rivet_eq *eq,
			     rivet_eq_cm_handler_fn handler);
/* CM event dispatch of MSG and passive endpoints (rivet_msg_cm.c): a
 * rivet_eq_cm_handler_fn. */
void rivet_cm_handle_event(struct rivet_eq *eq, struct rdma_cm_event *ev);

static inline struct rivet_eq *to_req(struct fid_eq *eq)
{
	return container_of(eq, struct rivet_eq, eq_fid);
}

/* ---- connection requests, passive endpoints (rivet_msg_pep.c) ---- */
/* rdma_cm ids carry a struct fid * in their context: ep, pep or connreq */
struct rivet_connreq {
	struct fid handle;
	struct rivet_pep *pep;
	struct rdma_cm_id *id;
};

struct rivet_pep {
	struct fid_pep pep_fid;
	struct rivet_fabric *fabric;
	struct fi_info *info;
	struct rdma_cm_id *id;
	struct rivet_eq *eq;
	int backlog;
	int tos;		/* rivet_tclass_tos of the class, or -1 */
	bool listening;
	bool surrendered;	/* an active endpoint took its address */
	union rivet_sockaddr src;
};

int rivet_pep_open(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep_p, void *context);
/* Hands a pep's address to an active endpoint opened with the pep as
 * info->handle (fi_endpoint(3)); the pep keeps nothing. */
int rivet_pep_surrender(struct fid *handle, union rivet_sockaddr *addr_p);

/* ---- MSG endpoints (rivet_msg_ep.c, rivet_msg.c, rivet_msg_rma.c, rivet_msg_cm.c) */
enum rivet_ep_state {
	RIVET_EP_IDLE,
	RIVET_EP_ENABLED,
	RIVET_EP_CONNECTING,
	RIVET_EP_ACCEPTING,
	RIVET_EP_CONNECTED,
	RIVET_EP_SHUTDOWN,
	RIVET_EP_ERROR,
};

/*
 * Work-request contexts of one queue (send or receive) of a QP.  RC reports
 * the completions of one work queue in the order they were posted, so the
 * contexts form a ring: the poster (under ep->lock) fills at tail, the CQ
 * progress (under cq->lock) retires at head.  Each side owns one index.
 * Slot i of the send ring also owns bounce buffer i (FI_INJECT copies).
 */
struct rivet_wr_ring {
	struct rivet_wr_ctx *ctxs;
	size_t size;
	atomic_size_t head;
	atomic_size_t tail;
};

static inline size_t rivet_wr_ring_left(struct rivet_wr_ring *r)
{
	return r->size - (atomic_load_explicit(&r->tail, memory_order_relaxed) -
			  atomic_load_explicit(&r->head, memory_order_acquire));
}

struct rivet_ep {
	struct fid_ep ep_fid;
	struct rivet_domain *domain;
	struct fi_info *info;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	enum rivet_ep_state state;
	struct rivet_lock lock;
	struct rivet_eq *eq;
	struct rivet_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	uint64_t tx_op_flags, rx_op_flags;
	struct rivet_cntr *send_cntr, *recv_cntr;
	struct rivet_cntr *read_cntr, *write_cntr;
	struct rivet_cntr *rread_cntr, *rwrite_cntr;
	struct rivet_wr_ring tx_ring, rx_ring;
	size_t inline_size;	/* what the QP takes inline */
	size_t inject_size;	/* what we promise: inline or bounce */
	/* bounce buffers for FI_INJECT larger than inline, one per tx slot */
	uint8_t *bounce;
	struct ibv_mr *bounce_mr;
	uint64_t *scratch;		/* per tx slot: a fi_atomic's old value */
	struct ibv_mr *scratch_mr;
	union rivet_sockaddr src, dst;
	bool shutdown_reported;
	struct rivet_connreq *connreq;	/* passive side, until accepted */
	uint8_t cm_data[RIVET_CM_DATA_SIZE + RIVET_CM_HDR_SIZE];
	size_t cm_data_len;
	size_t tx_size, rx_size, iov_limit;
	/* FI_MSG_PREFIX (DGRAM): the bytes the application keeps in front
	 * of every send and receive buffer (the GRH lands there), or 0 */
	size_t prefix;
	int tos;	/* rivet_tclass_tos of the class, or -1 */
	/* FI_EP_DGRAM only (rivet_dgram_ep.c): the UD side; NULL on MSG */
	struct rivet_dgram *ud;
	struct rivet_srx *srx;	/* bound shared receive context */
	struct rivet_stx *stx;	/* bound shared transmit context */
	/* MSG with FI_MULTI_RECV (rivet_msg_mrecv.c), else NULL */
	struct rivet_mrecv *mrecv;
};

/* ---- MSG multi-receive buffers (rivet_msg_mrecv.c) ---- */
struct rivet_mrecv_buf;

/*
 * A MSG endpoint's receives that wait in software behind a multi-receive
 * buffer: the buffer at the head has one receive work request on the QP,
 * over the space it has left; each message's completion moves it on.
 */
struct rivet_mrecv {
	struct rivet_wc_hook hook;	/* the head buffer's work completion */
	struct rivet_cq_deferred def;	/* posting the head again */
	struct rivet_ep *ep;
	struct rivet_lock lock;		/* the queue and active (THE LOCK
					 * ORDER, 7) */
	struct rivet_mrecv_buf *head, *tail;
	struct rivet_mrecv_buf *active;	/* the head, its request posted */
	atomic_size_t queued;		/* receives in the queue */
	size_t min;			/* FI_OPT_MIN_MULTI_RECV */
};

int rivet_mrecv_open(struct rivet_ep *ep);
void rivet_mrecv_close(struct rivet_ep *ep);
/* A receive with FI_MULTI_RECV, or any receive while the queue holds
 * one: queued in order (fi_recv and its variants on MSG). */
ssize_t rivet_mrecv_post(struct rivet_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, void *context,
			 uint64_t flags);
int rivet_mrecv_getopt(struct rivet_ep *ep, void *optval, size_t *optlen);
int rivet_mrecv_setopt(struct rivet_ep *ep, const void *optval,
		       size_t optlen);

/* Whether a receive must go through the queue (rivet_mrecv_post). */
static inline bool rivet_mrecv_takes(const struct rivet_ep *ep,
				     uint64_t flags)
{
	return (flags & FI_MULTI_RECV) ||
	       (ep->mrecv && atomic_load_explicit(&ep->mrecv->queued,
						  memory_order_acquire));
}

/* ---- shared contexts: transmit contexts and what every receive context
 * answers alike (ep/rivet_ep_ctx.c), MSG and DGRAM receive contexts
 * (msg/rivet_msg_srx.c) ---- */
struct rivet_stx {
	struct fid_stx stx_fid;
	struct rivet_domain *domain;
	struct fi_tx_attr attr;
	atomic_int refcnt;		/* endpoints bound */
};

int rivet_stx_open(struct fid_domain *domain, struct fi_tx_attr *attr,
		   struct fid_stx **stx_p, void *context);
/* fi_ep_bind of a transmit context: the endpoint's send queue takes the
 * context's size. */
int rivet_stx_bind(struct rivet_domain *dom, struct fid *bfid,
		   struct rivet_stx **stx_p, size_t *tx_size_p);
void rivet_stx_release(struct rivet_stx *stx);

struct rivet_srx_cq {
	struct rivet_cq *cq;
	unsigned int eps;		/* of the context's endpoints */
};

struct rivet_srx_member {
	struct rivet_ep *ep;
	uint32_t qp_num;
};

/* A receive context of MSG or DGRAM endpoints: an SRQ. */
/* DGRAM: an application receive waiting for a datagram. */
struct rivet_srx_recv {
	void *context;
	bool report;			/* FI_COMPLETION */
	size_t count, len;
	struct iovec iov[RIVET_IOV_LIMIT_MAX];
};

/* DGRAM: a datagram that came before any receive, in its slot. */
struct rivet_srx_arrival {
	struct ibv_wc wc;
	struct rivet_ep *ep;		/* whose QP took it */
	uint32_t slot;
};

struct rivet_srx {
	struct fid_ep ep_fid;
	const struct rivet_srx_wc_ops *wc_ops;	/* for the CQ */
	struct rivet_domain *domain;
	enum fi_ep_type type;		/* FI_EP_MSG or FI_EP_DGRAM */
	pthread_mutex_t lock;
	struct ibv_srq *srq;
	size_t size, iov_limit;
	uint64_t rx_op_flags;
	struct rivet_wr_ctx *ctxs;	/* one per SRQ slot */
	uint32_t *free_idx;		/* the free slots, a stack */
	size_t nfree;
	struct rivet_srx_member *members;	/* endpoints with a QP */
	size_t nmembers, members_cap;
	struct rivet_srx_cq *cqs;	/* their receive CQs, grown once */
	size_t ncqs, cqs_cap;
	/* DGRAM: per slot RIVET_UD_GRH_LEN bytes, then mtu of tail */
	uint8_t *extra;
	struct ibv_mr *extra_mr;
	size_t extra_stride, mtu;
	/* DGRAM: every slot is the context's own (a GRH and an MTU), posted
	 * from the start; a datagram is copied into the oldest application
	 * receive, or waits in its slot for the next one (rivet_dgram_srx.c) */
	struct rivet_srx_recv *recvs;	/* a FIFO of size */
	size_t recvs_head, nrecvs;
	struct rivet_srx_arrival *arrived;	/* a FIFO of size */
	size_t arr_head, narrived;
	unsigned int delivering;	/* receives copying an arrival */
	atomic_int refcnt;		/* endpoints bound */
};

/* fi_srx_context of any domain (ep/rivet_ep.c): RDM's are
 * rivet_rdm_srx.c's, MSG and DGRAM ones rivet_srx_open's */
int rivet_srx_ctx_open(struct fid_domain *domain, struct fi_rx_attr *attr,
		       struct fid_ep **rx_ep, void *context);
int rivet_srx_open(struct rivet_domain *dom, enum fi_ep_type type,
		   struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		   void *context);
/* What every kind of receive context answers alike. */
int rivet_srx_control_flags(uint64_t *rx_op_flags, int command, void *arg);
int rivet_srx_getopt(fid_t fid, int level, int optname, void *optval,
		     size_t *optlen);
int rivet_srx_setopt(fid_t fid, int level, int optname, const void *optval,
		     size_t optlen);
ssize_t rivet_srx_tx_size_left(struct fid_ep *fid);
int rivet_srx_bind(struct rivet_ep *ep, struct fid *bfid);
/* After ep's QP is made on the context's SRQ; release at close, before
 * the QP goes. */
int rivet_srx_attach(struct rivet_ep *ep);
void rivet_srx_detach(struct rivet_ep *ep);
void rivet_srx_release(struct rivet_ep *ep);
ssize_t rivet_srx_post_recv(struct rivet_srx *srx, const struct iovec *iov,
			    void **desc, size_t count, void *context,
			    uint64_t flags);
/* rivet_dgram_srx.c: DGRAM contexts' own slots */
int rivet_srx_dgram_construct(struct rivet_srx *srx);
void rivet_srx_dgram_destruct(struct rivet_srx *srx);
ssize_t rivet_srx_dgram_recv(struct rivet_srx *srx, const struct iovec *iov,
			     size_t count, size_t len, void *context,
			     uint64_t flags);
bool rivet_srx_dgram_wc(struct rivet_srx *srx, struct rivet_ep *ep,
			const struct ibv_wc *wc, struct rivet_wr_ctx *out);
void rivet_srx_dgram_detach(struct rivet_srx *srx, struct rivet_ep *ep);
void rivet_srx_dgram_repost(struct rivet_srx *srx, uint32_t slot);
/* rivet_cq_wait.c */
ssize_t rivet_cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
			 uint64_t flags);
/* rivet_cq_err.c: readerr's entry, fi_cq_strerror */
void rivet_cq_err_fill(struct rivet_cq *cq, const struct rivet_cq_entry *e,
		       struct fi_cq_err_entry *buf);
const char *rivet_cq_strerror(struct fid_cq *cq_fid, int prov_errno,
			      const void *err_data, char *buf, size_t len);
/* rivet_cq.c: a receive's entry and counters, as from a work completion
 * (under the CQ's lock) */
void rivet_cq_report_wc(struct rivet_cq *cq, const struct ibv_wc *wc,
			const struct rivet_wr_ctx *ctx);
/* The same with cq->lock held (a completion hook's) */
void rivet_cq_report_locked(struct rivet_cq *cq, const struct ibv_wc *wc,
			    const struct rivet_wr_ctx *ctx);
int rivet_recv_sges(const struct iovec *iov, void **desc, size_t count,
		    struct ibv_sge *sge, int *num_p);

int rivet_msg_ep_open(struct fid_domain *domain, struct fi_info *info,
		      struct fid_ep **ep_p, void *context);
/* Retires the oldest context of a ring: called by CQ progress. */
static inline void rivet_wr_ring_retire(struct rivet_wr_ring *r)
{
	atomic_fetch_add_explicit(&r->head, 1, memory_order_release);
}

static inline struct rivet_ep *to_rep(struct fid_ep *ep)
{
	return container_of(ep, struct rivet_ep, ep_fid);
}

extern struct fi_ops_msg g_rivet_msg_ops;
extern struct fi_ops_rma g_rivet_rma_ops;
extern struct fi_ops_atomic g_rivet_msg_atomic_ops;
extern struct fi_ops_cm g_rivet_ep_cm_ops;

/* One send-queue operation, built by the fi_send, fi_write and fi_read shims
 * and posted by rivet_ep_post_send (rivet_msg.c). */
struct rivet_send_req {
	const struct iovec *iov;
	void **desc;
	size_t count;
	void *context;
	uint64_t data;
	uint64_t flags;		/* FI_INJECT, FI_COMPLETION, FI_FENCE ... */
	uint64_t comp_flags;	/* FI_SEND|FI_MSG, FI_RMA|FI_WRITE ... */
	enum ibv_wr_opcode opcode;
	uint64_t raddr;
	uint64_t rkey;
	struct rivet_cntr *cntr;
	bool silent;		/* fi_inject*: never a CQ entry */
	uint64_t compare_add, swap;	/* verbs atomics */
	struct rivet_wc_hook *hook;	/* a step of an emulated atomic */
	struct ibv_ah *ah;		/* FI_EP_DGRAM: the destination */
	uint32_t remote_qpn, remote_qkey;
};

ssize_t rivet_ep_post_send(struct rivet_ep *ep,
			   const struct rivet_send_req *req);
ssize_t rivet_ep_post_recv(struct rivet_ep *ep, const struct iovec *iov,
			   void **desc, size_t count, void *context,
			   uint64_t flags);
/* One receive work request of len bytes over iov (ep->lock held);
 * -FI_EAGAIN when the receive queue or the CQ is full.  hook: the
 * completion goes to its owner (a multi-receive buffer). */
ssize_t rivet_ep_post_recv_locked(struct rivet_ep *ep,
				  const struct iovec *iov, void **desc,
				  size_t count, size_t len, void *context,
				  uint64_t flags, struct rivet_wc_hook *hook);
int rivet_ep_enable(struct rivet_ep *ep);
/* Shared by MSG and DGRAM endpoints (rivet_msg_ep.c). */
int rivet_ep_construct(struct rivet_ep *ep, struct rivet_domain *dom,
		       const struct fi_info *info);
int rivet_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int rivet_ep_control(struct fid *fid, int command, void *arg);
int rivet_ep_close(struct fid *fid);
int rivet_ep_hidden_cqs(struct rivet_ep *ep);
int rivet_ep_ring_construct(struct rivet_wr_ring *ring, size_t size);
int rivet_ep_bounce_construct(struct rivet_ep *ep);
void rivet_ep_attach_cntrs(struct rivet_ep *ep, bool attach);
/* Flushes and reaps the QP's work requests, then destroys it. */
void rivet_ep_destroy_qp(struct rivet_ep *ep);
extern struct fi_ops_ep g_rivet_ep_ops;
/* FI_EP_DGRAM endpoints over a UD QP (rivet_dgram_ep.c, rivet_dgram.c) */
int rivet_dgram_ep_open(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **ep_p, void *context);
/* The receive's extra SGEs around the user's: the GRH slot first, and a
 * tail that keeps a message longer than the buffer from failing the
 * QP (reported as FI_ETRUNC).  sge holds room for count + 2. */
/* A DGRAM receive's GRH SGE (sge[0]) and tail: extra is its slot. */
void rivet_dgram_recv_extra(uint8_t *extra, uint32_t lkey, size_t mtu,
			    size_t len, struct ibv_sge *sge, size_t n,
			    int *num_p);
/* FI_MSG_PREFIX: the application's buffer (len bytes, prefix included)
 * takes the GRH; only a tail follows its n SGEs. */
void rivet_dgram_recv_tail(uint8_t *extra, uint32_t lkey, size_t mtu,
			   size_t len, struct ibv_sge *sge, size_t n,
			   int *num_p);
int rivet_dgram_recv_sges(struct rivet_ep *ep, size_t slot, size_t len,
			  struct ibv_sge *sge, size_t n, int *num_p);
/* The source lookup of a DGRAM endpoint's receives: NULL without
 * FI_SOURCE. */
struct rivet_src_resolver *rivet_dgram_source(struct rivet_ep *ep);
/* A datagram in one of rivet's slots (a GRH, then the payload) into a
 * receive's buffers (at most len bytes); with FI_MSG_PREFIX the GRH too,
 * as the device would have put it into the prefix. */
void rivet_dgram_copy_in(const uint8_t *slot, const struct ibv_wc *wc,
			 bool prefix, const struct iovec *iov, size_t count,
			 size_t len);
/* The first receives of a DGRAM endpoint (rivet_dgram_early.c): 1 when
 * they are all posted (the receive goes to the QP), else 0 or an error. */
ssize_t rivet_dgram_early_recv(struct rivet_ep *ep, const struct iovec *iov,
			       void **desc, size_t count, size_t len,
			       void *context, uint64_t flags);

/* ---- UD addresses and lengths (rivet_ud_addr.c: pure, unit tested) ----
 * A DGRAM endpoint's name is a struct sockaddr_in6 (FI_SOCKADDR_IN6):
 * sin6_addr the port's GID (on RoCE over IPv4 the IPv4-mapped address
 * ::ffff:a.b.c.d, which is the GID), sin6_flowinfo the UD QPN
 * (big-endian), sin6_scope_id the LID (IB; 0 on RoCE), sin6_port the
 * QPN's low 16 bits (0xffff when they are 0: no name has port 0). */
#define RIVET_UD_GRH_LEN 40
#define RIVET_UD_QKEY 0x11111111u	/* every rivet DGRAM QP's */
#define RIVET_UD_QPN_MAX 0xffffffu
/* An IP (AF_INET or AF_INET6) as a DGRAM address without a QPN. */
int rivet_ud_addr_from_ip(const struct sockaddr *ip, struct sockaddr_in6 *out);
void rivet_ud_addr_encode(const uint8_t gid[16], uint32_t qpn, uint16_t lid,
			  struct sockaddr_in6 *out);
/* -FI_EINVAL unless sa is a DGRAM name with a QPN. */
int rivet_ud_addr_decode(const struct sockaddr *sa, uint8_t gid_p[16],
			 uint32_t *qpn_p, uint16_t *lid_p);
/* The sender's GID in a received GRH slot: on RoCE v2 over IPv4 (ipv4)
 * the slot holds the IPv4 header at byte 20, else an IB/IPv6 GRH. */
void rivet_ud_grh_sgid(const uint8_t grh[RIVET_UD_GRH_LEN], bool ipv4,
		       uint8_t gid_p[16]);
/* A DGRAM service address: an IP and a port but no QPN (what fi_getinfo
 * gives for node/service), which an AV resolves through rdma_cm's SIDR
 * to the name of the endpoint listening there. */
bool rivet_ud_addr_is_service(const struct sockaddr *sa);
/* The IP and port of a DGRAM address as rdma_cm takes them: an
 * IPv4-mapped address as AF_INET; -FI_EINVAL for other families. */
int rivet_ud_addr_to_ip(const struct sockaddr *sa, union rivet_sockaddr *out);
/* SIDR (rivet_av_sidr.c): the name of the DGRAM endpoint listening at
 * a service address, within timeout_ms: 0, -FI_EADDRNOTAVAIL (nobody
 * listens there), -FI_ETIMEDOUT, -FI_EHOSTUNREACH. */
#define RIVET_UD_RESOLVE_MS 5000
int rivet_ud_resolve(const struct sockaddr *svc, int timeout_ms,
		     union rivet_sockaddr *name_p);
/* An ibv_mtu (1..5) in bytes; 0 for anything else. */
size_t rivet_ud_mtu_bytes(int mtu);
/* What a receive of `posted` bytes got from a work completion of
 * byte_len bytes (GRH included): the message's length in *len_p, or
 * -FI_ETRUNC with the bytes placed in *len_p and the rest in *olen_p. */
int rivet_ud_recv_len(uint32_t byte_len, size_t hdr_len, size_t posted,
		      size_t *len_p, size_t *olen_p);
void rivet_ep_push_event(struct rivet_ep *ep, uint32_t event, int err,
			 int prov_errno, const void *data, size_t len);

/* ---- private data framing (rivet_msg_cm_data.c, unit tested) ----
 * {u8 version, u8 len} + len bytes: rdma_cm hands the receiver the whole
 * padded private-data field, so the length travels.  Both return
 * -FI_EINVAL for bad arguments or malformed data (1.17 has no FI_EPROTO). */
int rivet_cm_data_pack(const void *param, size_t len, uint8_t *out,
		       size_t out_size, size_t *out_len_p);
int rivet_cm_data_unpack(const void *in, size_t in_len, const void **data_p,
			 size_t *len_p);

/* ---- prov_errno of EQ error entries (rivet_eq_err.c, unit tested) ----
 * 0: none; 1..0xffff: the errno of a failed librdmacm call; above: an
 * rdma_cm event and its status, (event + 1) << 16 | (u16)status.
 * rivet_cm_err_str writes its text into buf and returns buf. */
int rivet_cm_err_pack(int event, int status);
bool rivet_cm_err_unpack(int prov_errno, int *event_p, int *status_p);
const char *rivet_cm_err_str(int prov_errno, char *buf, size_t len);

#endif /* RIVET_H */
