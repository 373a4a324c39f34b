/* SPDX-License-Identifier: MIT */
/*
 * FI_EP_RDM shared receive contexts (fi_srx_context, fi_endpoint(3)
 * SHARED CONTEXTS).  An RDM endpoint's receives are matched in software
 * (rivet_match.h) against messages that its connections bring into its
 * own SRQ of bounce buffers; sharing a receive context is sharing that
 * matching: the context owns the posted receives, the unexpected messages
 * and the pool of receive operations (struct rivet_rdm_rxq), and every
 * endpoint bound to it matches what arrives on it against them.  The
 * endpoints bound take the context's lock as their own, so a receive
 * posted to the context and a message arriving on any of them meet under
 * one lock.  A message is reported by the endpoint it came on (its CQ,
 * its counters); a peek that finds nothing, and a cancel, by the first
 * endpoint enabled.
 */
#include <stdlib.h>

#include "rivet_rdm.h"

static struct rivet_rdm_srx *to_rdm_srx(struct fid *fid)
{
	return container_of(fid, struct rivet_rdm_srx, ep_fid.fid);
}

static int rivet_rdm_srx_close(struct fid *fid)
{
	struct rivet_rdm_srx *srx = to_rdm_srx(fid);

	if (atomic_load(&srx->refcnt))
		return -FI_EBUSY;
	rivet_rdm_rxq_destruct(&srx->rxq);
	atomic_fetch_sub(&srx->domain->refcnt, 1);
	pthread_mutex_destroy(&srx->lock);
	free(srx->members);
	free(srx);
	return 0;
}

static int rivet_rdm_srx_control(struct fid *fid, int command, void *arg)
{
	return rivet_srx_control_flags(&to_rdm_srx(fid)->rx_op_flags,
				       command, arg);
}

static void rivet_rdm_srx_lock(struct rivet_rdm_srx *srx)
{
	if (srx->locking)
		pthread_mutex_lock(&srx->lock);
}

static void rivet_rdm_srx_unlock(struct rivet_rdm_srx *srx)
{
	if (srx->locking)
		pthread_mutex_unlock(&srx->lock);
}

/* Before any endpoint is enabled there is no CQ to report on. */
ssize_t rivet_rdm_srx_recv(struct rivet_rdm_srx *srx,
			   const struct rivet_rdm_req *req)
{
	struct rivet_rdm_rxside side = { .q = &srx->rxq, .srx = srx };
	ssize_t ret = -FI_EOPBADSTATE;

	rivet_rdm_srx_lock(srx);
	if (srx->nmembers) {
		side.ep = srx->members[0];
		ret = rivet_rdm_recv_on(&side, req);
	}
	rivet_rdm_srx_unlock(srx);
	return ret;
}

ssize_t rivet_rdm_srx_cancel(struct rivet_rdm_srx *srx, void *context)
{
	struct rivet_rdm_rxside side = { .q = &srx->rxq, .srx = srx };
	ssize_t ret = -FI_ENOENT;

	rivet_rdm_srx_lock(srx);
	if (srx->nmembers) {
		side.ep = srx->members[0];
		ret = rivet_rdm_cancel_on(&side, context);
	}
	rivet_rdm_srx_unlock(srx);
	return ret;
}

static ssize_t rivet_rdm_srx_ep_cancel(fid_t fid, void *context)
{
	return rivet_rdm_srx_cancel(to_rdm_srx(fid), context);
}

static ssize_t rivet_rdm_srx_rx_size_left(struct fid_ep *fid)
{
	struct rivet_rdm_srx *srx = to_rdm_srx(&fid->fid);
	ssize_t n;

	rivet_rdm_srx_lock(srx);
	n = srx->rxq.rx_size > srx->rxq.rx_ops_used ?
	    (ssize_t)(srx->rxq.rx_size - srx->rxq.rx_ops_used) : 0;
	rivet_rdm_srx_unlock(srx);
	return n;
}

static struct fi_ops g_rivet_rdm_srx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_rdm_srx_close,
	.bind = rivet_no_bind,
	.control = rivet_rdm_srx_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_ep g_rivet_rdm_srx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = rivet_rdm_srx_ep_cancel,
	.getopt = rivet_srx_getopt,
	.setopt = rivet_srx_setopt,
	.tx_ctx = rivet_no_tx_ctx,
	.rx_ctx = rivet_no_rx_ctx,
	.rx_size_left = rivet_rdm_srx_rx_size_left,
	.tx_size_left = rivet_srx_tx_size_left,
};

int rivet_rdm_srx_open(struct rivet_domain *dom, struct fi_rx_attr *attr,
		       struct fid_ep **rx_ep, void *context)
{
	struct rivet_rdm_srx *srx;
	size_t size = attr && attr->size ? attr->size : g_rivet_params.rx_size;

	/* receives with more than RIVET_RDM_IOV_LIMIT iovs fail
	 * (-FI_EINVAL), as on an endpoint */
	srx = calloc(1, sizeof(*srx));
	if (!srx)
		return -FI_ENOMEM;
	srx->domain = dom;
	pthread_mutex_init(&srx->lock, NULL);
	srx->locking = dom->threading != FI_THREAD_DOMAIN ||
		       (dom->info->domain_attr &&
			dom->info->domain_attr->data_progress ==
			FI_PROGRESS_AUTO);
	rivet_rdm_rxq_construct(&srx->rxq, size, attr ? attr->caps : 0,
				dom->fabric->api_version);
	srx->rx_op_flags = attr ? attr->op_flags : 0;
	atomic_init(&srx->refcnt, 0);
	srx->ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	srx->ep_fid.fid.context = context;
	srx->ep_fid.fid.ops = &g_rivet_rdm_srx_fi_ops;
	srx->ep_fid.ops = &g_rivet_rdm_srx_ep_ops;
	srx->ep_fid.cm = &g_rivet_no_cm_ops;
	srx->ep_fid.msg = &g_rivet_rdm_srx_msg_ops;
	srx->ep_fid.tagged = &g_rivet_rdm_srx_tagged_ops;
	srx->ep_fid.rma = &g_rivet_no_rma_ops;
	srx->ep_fid.atomic = &g_rivet_no_atomic_ops;
	srx->ep_fid.collective = &g_rivet_no_collective_ops;
	atomic_fetch_add(&dom->refcnt, 1);
	*rx_ep = &srx->ep_fid;
	return 0;
}

int rivet_rdm_srx_bind(struct rivet_rdm_ep *ep, struct rivet_rdm_srx *srx)
{
	if (ep->srx || srx->domain != ep->domain)
		return -FI_EINVAL;
	ep->srx = srx;
	ep->rxq = &srx->rxq;
	ep->lockp = &srx->lock;
	/* one lock for all: taken if any of them needs it */
	if (ep->locking)
		srx->locking = true;
	ep->locking = srx->locking;
	atomic_fetch_add(&srx->refcnt, 1);
	return 0;
}

/* Under ep's (the context's) lock. */
int rivet_rdm_srx_attach(struct rivet_rdm_ep *ep)
{
	struct rivet_rdm_srx *srx = ep->srx;
	struct rivet_rdm_ep **m;
	size_t i;
	bool selective = true;

	if (srx->nmembers == srx->members_cap) {
		m = realloc(srx->members, (srx->members_cap * 2 + 4) *
					  sizeof(*m));
		if (!m)
			return -FI_ENOMEM;
		srx->members = m;
		srx->members_cap = srx->members_cap * 2 + 4;
	}
	srx->members[srx->nmembers++] = ep;
	/* a receive is reported unless every endpoint's CQ is selective and
	 * it did not ask (FI_COMPLETION) */
	for (i = 0; i < srx->nmembers; i++)
		selective = selective && srx->members[i]->rx_selective;
	srx->rxq.rx_selective = selective;
	return 0;
}

static bool rivet_rdm_srx_came_on(const struct rivet_match_msg *me,
				  void *arg)
{
	return container_of(me, struct rivet_unexp, me)->conn->ep == arg;
}

static void rivet_rdm_srx_free_msg(struct rivet_match_msg *me, void *arg)
{
	(void)arg;
	free(container_of(me, struct rivet_unexp, me));
}

/* Under the context's lock, before ep's connections go: the messages
 * that came on them and wait unmatched go with them, and ep no longer
 * reports for the context. */
void rivet_rdm_srx_detach(struct rivet_rdm_ep *ep)
{
	struct rivet_rdm_srx *srx = ep->srx;
	size_t i, n;

	n = rivet_match_msg_purge(&srx->rxq.match_msg, rivet_rdm_srx_came_on,
				  rivet_rdm_srx_free_msg, ep);
	n += rivet_match_msg_purge(&srx->rxq.match_tag,
				   rivet_rdm_srx_came_on,
				   rivet_rdm_srx_free_msg, ep);
	if (n)
		RIVET_INFO(EP_CTRL, "%zu unexpected messages of a closing "
			   "endpoint left its shared receive context\n", n);
	for (i = 0; i < srx->nmembers; i++) {
		if (srx->members[i] != ep)
			continue;
		srx->members[i] = srx->members[--srx->nmembers];
		break;
	}
}

/* Last, when nothing of ep uses the context any more. */
void rivet_rdm_srx_unbind(struct rivet_rdm_ep *ep)
{
	struct rivet_rdm_srx *srx = ep->srx;

	ep->rxq = &ep->own_rxq;
	ep->lockp = &ep->lock;
	ep->srx = NULL;
	atomic_fetch_sub(&srx->refcnt, 1);
}
