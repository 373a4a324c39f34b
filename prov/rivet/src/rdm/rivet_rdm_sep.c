/* SPDX-License-Identifier: MIT */
/*
 * FI_EP_RDM scalable endpoints (fi_scalable_ep, fi_tx_context,
 * fi_rx_context; fi_endpoint(3) SCALABLE ENDPOINTS).
 *
 * Each context is an RDM endpoint of its own (rivet_rdm_ctx_open): its
 * QPs, SRQ, verbs CQ and locks, so contexts driven by different threads
 * share nothing on the data path.  The scalable endpoint has the name and
 * the one rdma_cm listener.  A sender names a receive context with
 * fi_rx_addr; its connection request carries the index
 * (rivet_wire_connreq.rx_idx), and whichever context's progress reads the
 * request off the listener queues it here for that receive context,
 * whose own progress accepts it onto its endpoint.  Messages, RMA and
 * atomics then travel between a transmit context and a receive context on
 * their own RC connection, with the RDM protocol unchanged.
 */
#include <fcntl.h>
#include <stdlib.h>

#include <utlist.h>

#include "rivet_info.h"
#include "rivet_rdm.h"

/* A connection request read off the listener, waiting for its receive
 * context's progress. */
struct rivet_sep_req {
	struct rivet_sep_req *next;
	struct rdma_cm_id *id;
	struct rivet_wire_connreq req;
};

struct rivet_sep {
	struct fid_ep ep_fid;
	struct rivet_domain *domain;
	struct fi_info *info;
	pthread_mutex_t lock;		/* everything below */
	struct rivet_av *av;
	bool enabled;
	unsigned int passes;		/* rivet_sep_ctx_progress's */
	size_t ntx, nrx;
	struct rivet_rdm_ep *tx[RIVET_SEP_MAX_CTX], *rx[RIVET_SEP_MAX_CTX];
	size_t nctx;			/* contexts open: close is EBUSY */
	struct rivet_sep_req *pending;	/* utlist */
	struct rdma_event_channel *cm_channel;
	struct rdma_cm_id *listen_id;
	union rivet_sockaddr name;
};

static struct rivet_sep *to_rsep(struct fid *fid)
{
	return container_of(fid, struct rivet_sep, ep_fid.fid);
}

struct rivet_av *rivet_sep_av(struct rivet_sep *sep)
{
	struct rivet_av *av;

	pthread_mutex_lock(&sep->lock);
	av = sep->av;
	pthread_mutex_unlock(&sep->lock);
	return av;
}

int rivet_sep_cm_fd(const struct rivet_sep *sep)
{
	return sep->cm_channel->fd;
}

/* A listener event, under sep->lock: a request for an open receive
 * context waits for it; any other is refused at once. */
static void rivet_sep_connreq(struct rivet_sep *sep, struct rdma_cm_event *cm)
{
	struct rdma_cm_id *id = cm->id;
	struct rivet_sep_req *r;

	if (cm->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rivet_verbs_cm_event_ack(cm);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (r)
		memcpy(&r->req, cm->param.conn.private_data,
		       RIVET_MIN((size_t)cm->param.conn.private_data_len,
				 sizeof(r->req)));
	rivet_verbs_cm_event_ack(cm);
	if (!r || r->req.magic != RIVET_CONN_MAGIC ||
	    r->req.version != RIVET_WIRE_VERSION ||
	    r->req.rx_idx >= sep->nrx || !sep->rx[r->req.rx_idx]) {
		RIVET_INFO(EP_CTRL, "scalable endpoint: connection request "
			   "for receive context %u rejected\n",
			   r ? r->req.rx_idx : 0);
		rivet_verbs_cm_refuse(id);
		free(r);
		return;
	}
	r->id = id;
	LL_APPEND(sep->pending, r);
}

/* Under sep->lock: the listener's events (one system call when there is
 * none). */
static void rivet_sep_listen_locked(struct rivet_sep *sep)
{
	struct rdma_cm_event *cm;

	RIVET_MUTEX_HELD(&sep->lock);
	while (!rivet_verbs_cm_event_get(sep->cm_channel, &cm))
		rivet_sep_connreq(sep, cm);
}

/* Under sep->lock: the requests queued for ep, off the queue. */
static struct rivet_sep_req *rivet_sep_take(struct rivet_sep *sep,
					    const struct rivet_rdm_ep *ep)
{
	struct rivet_sep_req *r, *tmp, *mine = NULL;

	if (!ep->sep_rx)
		return NULL;
	LL_FOREACH_SAFE(sep->pending, r, tmp) {
		if (r->req.rx_idx != ep->sep_idx)
			continue;
		LL_DELETE(sep->pending, r);
		LL_APPEND(mine, r);
	}
	return mine;
}

/* Under ep's lock: ep accepts the requests taken for it. */
static void rivet_sep_accept(struct rivet_rdm_ep *ep,
			     struct rivet_sep_req *mine)
{
	struct rivet_sep_req *r, *tmp;

	LL_FOREACH_SAFE(mine, r, tmp) {
		LL_DELETE(mine, r);
		/* its events (established, disconnected) come to ours */
		if (rivet_verbs_cm_migrate(r->id, ep->cm_channel)) {
			rivet_verbs_cm_refuse(r->id);
		} else {
			rivet_conn_accept(ep, r->id, &r->req);
		}
		free(r);
	}
}

/* A context's rdma_cm turn (rivet_rdm_progress_cm, under its lock). */
void rivet_sep_progress_cm(struct rivet_rdm_ep *ep)
{
	struct rivet_sep *sep = ep->sep;
	struct rivet_sep_req *mine;

	if (pthread_mutex_trylock(&sep->lock))
		return;		/* rivet_sep_ctx_progress is at it */
	rivet_sep_listen_locked(sep);
	mine = rivet_sep_take(sep, ep);
	pthread_mutex_unlock(&sep->lock);
	rivet_sep_accept(ep, mine);
}

/* fi_domain(3) manual progress: an application may wait on one context's
 * CQ for what another context's progress brings about (fi_scalable_ep
 * sends on transmit context 0 and then reads only receive context 0's
 * CQ, while the send's connection comes up on the transmit context).  A
 * context's progress is its own, then, if no other thread is at it, its
 * siblings' (trylock: contexts that threads of their own drive cost each
 * other nothing), with the listener looked at every 64th time and the
 * requests it brought accepted by their contexts.  sep->lock keeps a
 * sibling from closing meanwhile. */
int rivet_sep_ctx_progress(struct rivet_progress_src *src)
{
	struct rivet_rdm_ep *ep = container_of(src, struct rivet_rdm_ep, psrc);
	struct rivet_sep *sep = ep->sep;
	struct rivet_rdm_ep *c;
	int n = rivet_rdm_ep_progress(src);
	size_t i;

	if (pthread_mutex_trylock(&sep->lock))
		return n;
	if (!(++sep->passes & 63))
		rivet_sep_listen_locked(sep);
	for (i = 0; i < 2 * RIVET_SEP_MAX_CTX; i++) {
		c = i < RIVET_SEP_MAX_CTX ? sep->tx[i] :
					    sep->rx[i - RIVET_SEP_MAX_CTX];
		if (!c || !c->enabled || (c == ep && !sep->pending) ||
		    (c->locking && pthread_mutex_trylock(c->lockp)))
			continue;
		if (c != ep)
			n += rivet_rdm_progress_locked(c);
		if (sep->pending)
			rivet_sep_accept(c, rivet_sep_take(sep, c));
		if (c->locking)
			pthread_mutex_unlock(c->lockp);
	}
	pthread_mutex_unlock(&sep->lock);
	return n;
}

void rivet_sep_ctx_closed(struct rivet_rdm_ep *ep)
{
	struct rivet_sep *sep = ep->sep;
	struct rivet_sep_req *r, *tmp;

	pthread_mutex_lock(&sep->lock);
	if (ep->sep_rx) {
		sep->rx[ep->sep_idx] = NULL;
		LL_FOREACH_SAFE(sep->pending, r, tmp) {
			if (r->req.rx_idx != ep->sep_idx)
				continue;
			LL_DELETE(sep->pending, r);
			rivet_verbs_cm_refuse(r->id);
			free(r);
		}
	} else {
		sep->tx[ep->sep_idx] = NULL;
	}
	sep->nctx--;
	pthread_mutex_unlock(&sep->lock);
}

/* ---- contexts ---- */

/* A context listens through its scalable endpoint: its own rdma_cm
 * channel carries the events of its connections only. */
int rivet_rdm_ctx_open(struct rivet_domain *dom, struct fi_info *info,
		       struct rivet_sep *sep, bool rx, uint32_t idx,
		       const union rivet_sockaddr *name, struct fid_ep **ep_p,
		       void *context)
{
	struct rivet_rdm_ep *ep;
	int ret;

	ret = rivet_rdm_ep_alloc(dom, info, context, &ep);
	if (ret)
		return ret;
	ep->sep = sep;
	ep->sep_idx = idx;
	ep->sep_rx = rx;
	if (rx)		/* it sends answers only, from its control slots */
		ep->tx_size = RIVET_MIN(ep->tx_size, RIVET_SEP_RX_TX_SIZE);
	ep->psrc.progress = rivet_sep_ctx_progress;
	ep->psrc.read = NULL;	/* its reads go through rivet_sep_ctx_progress */
	ep->name = *name;
	ep->ep_fid.fid.fclass = rx ? FI_CLASS_RX_CTX : FI_CLASS_TX_CTX;
	if (rx) {
		ep->ep_fid.msg = &g_rivet_rdm_srx_msg_ops;
		ep->ep_fid.tagged = &g_rivet_rdm_srx_tagged_ops;
		ep->ep_fid.rma = &g_rivet_no_rma_ops;
		ep->ep_fid.atomic = &g_rivet_no_atomic_ops;
	} else {
		ep->ep_fid.msg = &g_rivet_rdm_txc_msg_ops;
		ep->ep_fid.tagged = &g_rivet_rdm_txc_tagged_ops;
	}
	ret = rivet_verbs_cm_channel_create(&ep->cm_channel);
	if (!ret)
		ret = rivet_wait_nonblock(ep->cm_channel->fd);
	if (ret) {
		ep->sep = NULL;		/* not yet one of its contexts */
		fi_close(&ep->ep_fid.fid);
		return ret;
	}
	*ep_p = &ep->ep_fid;
	return 0;
}

/*
 * A context's capabilities (fi_endpoint(3)): a subset of the endpoint's,
 * 0 for the endpoint's own of that direction.  Bits that do not apply to
 * the direction are dropped, as clients pass the endpoint's whole set
 * (MPICH names FI_NAMED_RX_CTX, an initiator's capability, on its receive
 * contexts); a bit the endpoint lacks is refused.
 */
static int rivet_sep_ctx_caps(uint64_t asked, uint64_t ep_caps,
			      uint64_t own, uint64_t applicable,
			      uint64_t *caps_p)
{
	if (asked & ~ep_caps)
		return -FI_EINVAL;
	*caps_p = asked ? asked & applicable : own;
	return 0;
}

/* The scalable endpoint's info with the context's attributes: one
 * context each way, the caller's attributes within the endpoint's (the
 * caller's attr gets the context's caps and size back once it is open:
 * fields of every API version). */
static int rivet_sep_ctx_info(const struct rivet_sep *sep, bool rx,
			      void *attr, struct fi_info **info_p)
{
	struct fi_tx_attr *ta = attr;
	struct fi_rx_attr *ra = attr;
	struct fi_info *info = fi_dupinfo(sep->info);
	int ret = 0;

	if (!info)
		return -FI_ENOMEM;
	info->ep_attr->tx_ctx_cnt = 1;
	info->ep_attr->rx_ctx_cnt = 1;
	if (attr && !rx && info->tx_attr) {
		ret = rivet_sep_ctx_caps(ta->caps, info->caps,
					 info->tx_attr->caps,
					 RIVET_RDM_TX_CAPS | RIVET_DOMAIN_CAPS,
					 &info->tx_attr->caps);
		info->tx_attr->op_flags = ta->op_flags;
		if (ta->size)
			info->tx_attr->size = ta->size;
	}
	if (attr && rx && info->rx_attr) {
		ret = rivet_sep_ctx_caps(ra->caps, info->caps,
					 info->rx_attr->caps,
					 RIVET_RDM_RX_CAPS | RIVET_DOMAIN_CAPS,
					 &info->rx_attr->caps);
		info->rx_attr->op_flags = ra->op_flags;
		if (ra->size)
			info->rx_attr->size = ra->size;
	}
	if (ret) {
		fi_freeinfo(info);
		return ret;
	}
	*info_p = info;
	return 0;
}

/* The context's caps and size into the caller's attr, once it is open. */
static void rivet_sep_ctx_attr_out(const struct fi_info *info, bool rx,
				   void *attr)
{
	struct fi_tx_attr *ta = attr;
	struct fi_rx_attr *ra = attr;

	if (attr && !rx && info->tx_attr) {
		ta->caps = info->tx_attr->caps;
		ta->size = info->tx_attr->size;
	}
	if (attr && rx && info->rx_attr) {
		ra->caps = info->rx_attr->caps;
		ra->size = info->rx_attr->size;
	}
}

static int rivet_sep_ctx(struct rivet_sep *sep, bool rx, int index,
			 void *attr, struct fid_ep **ep_p, void *context)
{
	struct rivet_rdm_ep **slot;
	struct fi_info *info;
	int ret;

	if (!ep_p || index < 0 || (size_t)index >= (rx ? sep->nrx : sep->ntx))
		return -FI_EINVAL;
	ret = rivet_sep_ctx_info(sep, rx, attr, &info);
	if (ret)
		return ret;
	pthread_mutex_lock(&sep->lock);
	slot = rx ? &sep->rx[index] : &sep->tx[index];
	if (*slot) {
		ret = -FI_EBUSY;	/* open already */
	} else {
		ret = rivet_rdm_ctx_open(sep->domain, info, sep, rx,
					 (uint32_t)index, &sep->name, ep_p,
					 context);
		if (!ret) {
			*slot = to_rrdm(*ep_p);
			sep->nctx++;
			rivet_sep_ctx_attr_out(info, rx, attr);
		}
	}
	pthread_mutex_unlock(&sep->lock);
	fi_freeinfo(info);
	return ret;
}

static int rivet_sep_tx_ctx(struct fid_ep *sep, int index,
			    struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			    void *context)
{
	return rivet_sep_ctx(to_rsep(&sep->fid), false, index, attr, tx_ep,
			     context);
}

static int rivet_sep_rx_ctx(struct fid_ep *sep, int index,
			    struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			    void *context)
{
	return rivet_sep_ctx(to_rsep(&sep->fid), true, index, attr, rx_ep,
			     context);
}

/* ---- the scalable endpoint ---- */

static int rivet_sep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct rivet_sep *sep = to_rsep(fid);
	struct rivet_av *av;
	struct rivet_eq *eq;
	int ret = 0;

	if (!bfid)
		return -FI_EINVAL;
	switch (bfid->fclass) {
	case FI_CLASS_AV:
		av = container_of(bfid, struct rivet_av, av_fid.fid);
		pthread_mutex_lock(&sep->lock);
		if (sep->av || av->domain != sep->domain || sep->enabled) {
			ret = -FI_EINVAL;
		} else {
			sep->av = av;
			atomic_fetch_add(&av->refcnt, 1);
		}
		pthread_mutex_unlock(&sep->lock);
		return ret;
	case FI_CLASS_EQ:
		/* nothing to report on an RDM endpoint's EQ */
		eq = container_of(bfid, struct rivet_eq, eq_fid.fid);
		return eq->fabric == sep->domain->fabric ? 0 : -FI_EINVAL;
	default:
		return -FI_EINVAL;
	}
}

static int rivet_sep_control(struct fid *fid, int command, void *arg)
{
	struct rivet_sep *sep = to_rsep(fid);
	int ret = 0;

	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	pthread_mutex_lock(&sep->lock);
	if (!sep->av)
		ret = -FI_ENOAV;
	else
		sep->enabled = true;
	pthread_mutex_unlock(&sep->lock);
	return ret;
}

static int rivet_sep_close(struct fid *fid)
{
	struct rivet_sep *sep = to_rsep(fid);
	struct rivet_sep_req *r, *tmp;

	pthread_mutex_lock(&sep->lock);
	if (sep->nctx) {
		pthread_mutex_unlock(&sep->lock);
		return -FI_EBUSY;	/* close the contexts first */
	}
	pthread_mutex_unlock(&sep->lock);
	LL_FOREACH_SAFE(sep->pending, r, tmp) {
		LL_DELETE(sep->pending, r);
		rivet_verbs_cm_refuse(r->id);
		free(r);
	}
	if (sep->listen_id)
		rivet_verbs_cm_id_destroy(sep->listen_id);
	rivet_verbs_cm_channel_destroy(sep->cm_channel);
	if (sep->av)
		atomic_fetch_sub(&sep->av->refcnt, 1);
	atomic_fetch_sub(&sep->domain->refcnt, 1);
	pthread_mutex_destroy(&sep->lock);
	fi_freeinfo(sep->info);
	free(sep);
	return 0;
}

static int rivet_sep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return rivet_addr_copy_name(&to_rsep(fid)->name.sa, addr, addrlen);
}

static int rivet_sep_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;	/* the listener is bound at open */
}

static ssize_t rivet_sep_cancel(fid_t fid, void *context)
{
	return -FI_ENOENT;	/* the contexts hold the operations */
}

static int rivet_sep_getopt(fid_t fid, int level, int optname, void *optval,
			    size_t *optlen)
{
	return -FI_ENOPROTOOPT;
}

static int rivet_sep_setopt(fid_t fid, int level, int optname,
			    const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static ssize_t rivet_sep_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;	/* the contexts' */
}

static struct fi_ops g_rivet_sep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_sep_close,
	.bind = rivet_sep_bind,
	.control = rivet_sep_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_ep g_rivet_sep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = rivet_sep_cancel,
	.getopt = rivet_sep_getopt,
	.setopt = rivet_sep_setopt,
	.tx_ctx = rivet_sep_tx_ctx,
	.rx_ctx = rivet_sep_rx_ctx,
	.rx_size_left = rivet_sep_size_left,
	.tx_size_left = rivet_sep_size_left,
};

static struct fi_ops_cm g_rivet_sep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = rivet_sep_setname,
	.getname = rivet_sep_getname,
	.getpeer = rivet_no_getpeer,
	.connect = rivet_no_connect,
	.listen = rivet_no_listen,
	.accept = rivet_no_accept,
	.reject = rivet_no_reject,
	.shutdown = rivet_no_shutdown,
	.join = rivet_no_join,
};

/* fi_endpoint(3): 0 contexts is one; FI_SHARED_CONTEXT is no count. */
static int rivet_sep_count(size_t n, size_t *out)
{
	if (n == FI_SHARED_CONTEXT || n > RIVET_SEP_MAX_CTX)
		return -FI_EINVAL;
	*out = n ? n : 1;
	return 0;
}

int rivet_sep_open(struct rivet_domain *dom, struct fi_info *info,
		   struct fid_ep **sep_p, void *context)
{
	struct rivet_sep *sep;
	int tos, ret;

	if (!info || !info->ep_attr || !sep_p)
		return -FI_EINVAL;
	if (info->ep_attr->type != FI_EP_RDM)
		return -FI_ENOSYS;	/* RDM only */
	if (rivet_tclass_tos(rivet_info_tclass(info), &tos))
		return -FI_EINVAL;
	sep = calloc(1, sizeof(*sep));
	if (!sep)
		return -FI_ENOMEM;
	if (rivet_sep_count(info->ep_attr->tx_ctx_cnt, &sep->ntx) ||
	    rivet_sep_count(info->ep_attr->rx_ctx_cnt, &sep->nrx)) {
		free(sep);
		return -FI_EINVAL;
	}
	sep->info = fi_dupinfo(info);
	if (!sep->info) {
		free(sep);
		return -FI_ENOMEM;
	}
	sep->domain = dom;
	pthread_mutex_init(&sep->lock, NULL);
	sep->ep_fid.fid.fclass = FI_CLASS_SEP;
	sep->ep_fid.fid.context = context;
	sep->ep_fid.fid.ops = &g_rivet_sep_fi_ops;
	sep->ep_fid.ops = &g_rivet_sep_ops;
	sep->ep_fid.cm = &g_rivet_sep_cm_ops;
	sep->ep_fid.msg = &g_rivet_rdm_sep_msg_ops;
	sep->ep_fid.tagged = &g_rivet_no_tagged_ops;
	sep->ep_fid.rma = &g_rivet_no_rma_ops;
	sep->ep_fid.atomic = &g_rivet_no_atomic_ops;
	sep->ep_fid.collective = &g_rivet_no_collective_ops;
	atomic_fetch_add(&dom->refcnt, 1);
	ret = rivet_rdm_listen(dom, info, tos, &sep->cm_channel,
			       &sep->listen_id, &sep->name);
	if (ret) {
		rivet_sep_close(&sep->ep_fid.fid);
		return ret;
	}
	*sep_p = &sep->ep_fid;
	return 0;
}
