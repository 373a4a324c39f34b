/* SPDX-License-Identifier: MIT */
/*
 * Poll sets (fi_poll(3)): the CQs and counters of one domain, progressed
 * together by fi_poll, which names those with something to read.  A CQ is
 * reported while it holds entries or errors, a counter when its values
 * moved since the last fi_poll that reported it (or fi_cntr_set/add).
 */
#include <stdlib.h>

#include "rivet_set.h"

static struct fi_ops g_rivet_pollset_fi_ops;
static struct fi_ops_poll g_rivet_pollset_ops;

/* The member's domain and reference count, or -FI_EINVAL for a class a
 * poll set does not take (fi_poll(3): CQs and counters). */
static int rivet_pollset_member_of(struct fid *fid,
				   struct rivet_domain **dom_p,
				   atomic_int **refcnt_p)
{
	struct rivet_cntr *cntr;
	struct rivet_cq *cq;

	switch (fid->fclass) {
	case FI_CLASS_CQ:
		cq = to_rcq(container_of(fid, struct fid_cq, fid));
		*dom_p = cq->domain;
		*refcnt_p = &cq->refcnt;
		return 0;
	case FI_CLASS_CNTR:
		cntr = to_rcntr(container_of(fid, struct fid_cntr, fid));
		*dom_p = cntr->domain;
		*refcnt_p = &cntr->refcnt;
		return 0;
	default:
		return -FI_EINVAL;
	}
}

static int rivet_pollset_add(struct fid_poll *pollset, struct fid *event_fid,
			     uint64_t flags)
{
	struct rivet_pollset *ps = to_rpollset(pollset);
	struct rivet_domain *dom;
	atomic_int *refcnt;
	int ret;

	if (!event_fid)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	ret = rivet_pollset_member_of(event_fid, &dom, &refcnt);
	if (ret)
		return ret;
	if (dom != ps->domain) {
		RIVET_WARN(DOMAIN, "fi_poll_add: the object belongs to "
			   "another domain\n");
		return -FI_EINVAL;
	}
	pthread_mutex_lock(&ps->lock);
	ret = rivet_fid_list_insert(&ps->members, event_fid);
	if (!ret)
		atomic_fetch_add(refcnt, 1);
	pthread_mutex_unlock(&ps->lock);
	return ret;
}

static int rivet_pollset_del(struct fid_poll *pollset, struct fid *event_fid,
			     uint64_t flags)
{
	struct rivet_pollset *ps = to_rpollset(pollset);
	struct rivet_domain *dom;
	atomic_int *refcnt;
	int ret;

	if (!event_fid)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	ret = rivet_pollset_member_of(event_fid, &dom, &refcnt);
	if (ret)
		return ret;
	pthread_mutex_lock(&ps->lock);
	ret = rivet_fid_list_remove(&ps->members, event_fid);
	if (!ret)
		atomic_fetch_sub(refcnt, 1);
	pthread_mutex_unlock(&ps->lock);
	return ret;
}

/* Progresses one member; whether it has something.  take: a counter's
 * change is reported now (the caller has room for its context). */
static bool rivet_pollset_member_ready(struct fid *fid, bool take)
{
	if (fid->fclass == FI_CLASS_CQ)
		return rivet_cq_pending(to_rcq(container_of(fid, struct fid_cq,
							    fid)));
	return rivet_cntr_poll_changed(to_rcntr(container_of(fid,
				struct fid_cntr, fid)), take);
}

/* Every member is progressed, even when context is full: what does not
 * fit is reported by a later call (a counter keeps its change). */
static int rivet_pollset_poll(struct fid_poll *pollset, void **context,
			      int count)
{
	struct rivet_pollset *ps = to_rpollset(pollset);
	struct fid *fid;
	size_t i;
	int n = 0;

	if (!context || count <= 0)
		return -FI_EINVAL;
	pthread_mutex_lock(&ps->lock);
	for (i = 0; i < ps->members.n; i++) {
		fid = ps->members.fids[i];
		if (rivet_pollset_member_ready(fid, n < count) && n < count)
			context[n++] = fid->context;
	}
	pthread_mutex_unlock(&ps->lock);
	rivet_domain_polled(ps->domain, n > 0);
	return n;
}

/* fi_poll(3): a poll set with members is -FI_EBUSY. */
static int rivet_pollset_close(struct fid *fid)
{
	struct rivet_pollset *ps = to_rpollset(container_of(fid,
						struct fid_poll, fid));

	pthread_mutex_lock(&ps->lock);
	if (ps->members.n) {
		pthread_mutex_unlock(&ps->lock);
		return -FI_EBUSY;
	}
	pthread_mutex_unlock(&ps->lock);
	pthread_mutex_destroy(&ps->lock);
	rivet_fid_list_destruct(&ps->members);
	atomic_fetch_sub(&ps->domain->refcnt, 1);
	free(ps);
	return 0;
}

/* A NULL attr means the defaults (flags 0). */
int rivet_pollset_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		       struct fid_poll **pollset_p)
{
	struct rivet_domain *dom = to_rdomain(domain);
	struct rivet_pollset *ps;

	if (!pollset_p)
		return -FI_EINVAL;
	if (attr && attr->flags)
		return -FI_EBADFLAGS;	/* reserved, must be 0 */
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	ps->domain = dom;
	pthread_mutex_init(&ps->lock, NULL);
	rivet_fid_list_construct(&ps->members);
	ps->poll_fid.fid.fclass = FI_CLASS_POLL;
	ps->poll_fid.fid.ops = &g_rivet_pollset_fi_ops;
	ps->poll_fid.ops = &g_rivet_pollset_ops;
	atomic_fetch_add(&dom->refcnt, 1);
	*pollset_p = &ps->poll_fid;
	return 0;
}

static struct fi_ops g_rivet_pollset_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_pollset_close,
	.bind = rivet_no_bind,
	.control = rivet_no_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_poll g_rivet_pollset_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = rivet_pollset_poll,
	.poll_add = rivet_pollset_add,
	.poll_del = rivet_pollset_del,
};
