/* SPDX-License-Identifier: MIT */
/*
 * Triggered operations (fi_trigger(3), FI_TRIGGER_THRESHOLD): a data call
 * with FI_TRIGGER is kept, its arrays copied, until its counter reaches
 * the threshold, then made again without the flag on the same endpoint.
 *
 * The domain keeps one list, in the order of thresholds and, among equal
 * thresholds, of submission: the operations of one counter start in that
 * order.  A counter moves inside an endpoint's progress, under locks the
 * endpoint's own calls take, so nothing is posted from there: the list
 * is looked at where the application's thread holds no lock of ours
 * (after a CQ read's progress, a counter read, wait, add or set, a
 * submission, an FI_PROGRESS_AUTO thread's pass).  One thread at a time
 * runs it, so the order holds across threads too.
 */
#include <stdlib.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "rivet.h"

struct rivet_trig {
	struct rivet_trig *next;
	struct rivet_cntr *cntr;
	uint64_t threshold;
	struct fid_ep *ep;
	enum rivet_trig_kind kind;
	uint64_t flags;			/* without FI_TRIGGER */
	rivet_trig_fail_fn fail;
	/* the call, its arrays copied */
	struct iovec iov[RIVET_TRIG_IOV_MAX];
	struct fi_ioc ioc[RIVET_TRIG_IOV_MAX];
	void *desc[RIVET_TRIG_IOV_MAX];
	size_t count;
	struct fi_rma_iov rma[RIVET_TRIG_IOV_MAX];
	struct fi_rma_ioc rma_ioc[RIVET_TRIG_IOV_MAX];
	size_t rma_count;
	struct fi_ioc res[RIVET_TRIG_IOV_MAX], cmp[RIVET_TRIG_IOV_MAX];
	void *res_desc[RIVET_TRIG_IOV_MAX], *cmp_desc[RIVET_TRIG_IOV_MAX];
	size_t res_count, cmp_count;
	fi_addr_t addr;
	uint64_t tag, ignore, data;
	void *context;
	enum fi_datatype datatype;
	enum fi_op op;
};

void rivet_trig_construct(struct rivet_domain *dom)
{
	pthread_mutex_init(&dom->trig_lock, NULL);
	pthread_mutex_init(&dom->trig_run, NULL);
	dom->trig = NULL;
	atomic_init(&dom->ntrig, 0);
}

void rivet_trig_destruct(struct rivet_domain *dom)
{
	pthread_mutex_destroy(&dom->trig_lock);
	pthread_mutex_destroy(&dom->trig_run);
}

/* The call made again, without FI_TRIGGER. */
static ssize_t rivet_trig_start(struct rivet_trig *t)
{
	struct fi_msg msg = {
		.msg_iov = t->iov, .desc = t->desc, .iov_count = t->count,
		.addr = t->addr, .context = t->context, .data = t->data,
	};
	struct fi_msg_tagged tmsg = {
		.msg_iov = t->iov, .desc = t->desc, .iov_count = t->count,
		.addr = t->addr, .tag = t->tag, .ignore = t->ignore,
		.context = t->context, .data = t->data,
	};
	struct fi_msg_rma rmsg = {
		.msg_iov = t->iov, .desc = t->desc, .iov_count = t->count,
		.addr = t->addr, .rma_iov = t->rma,
		.rma_iov_count = t->rma_count, .context = t->context,
		.data = t->data,
	};
	struct fi_msg_atomic amsg = {
		.msg_iov = t->ioc, .desc = t->desc, .iov_count = t->count,
		.addr = t->addr, .rma_iov = t->rma_ioc,
		.rma_iov_count = t->rma_count, .datatype = t->datatype,
		.op = t->op, .context = t->context, .data = t->data,
	};

	switch (t->kind) {
	case RIVET_TRIG_SEND:
		return fi_sendmsg(t->ep, &msg, t->flags);
	case RIVET_TRIG_RECV:
		return fi_recvmsg(t->ep, &msg, t->flags);
	case RIVET_TRIG_TSEND:
		return fi_tsendmsg(t->ep, &tmsg, t->flags);
	case RIVET_TRIG_TRECV:
		return fi_trecvmsg(t->ep, &tmsg, t->flags);
	case RIVET_TRIG_READ:
		return fi_readmsg(t->ep, &rmsg, t->flags);
	case RIVET_TRIG_WRITE:
		return fi_writemsg(t->ep, &rmsg, t->flags);
	case RIVET_TRIG_ATOMIC:
		return fi_atomicmsg(t->ep, &amsg, t->flags);
	case RIVET_TRIG_FETCH:
		return fi_fetch_atomicmsg(t->ep, &amsg, t->res, t->res_desc,
					  t->res_count, t->flags);
	default:
		return fi_compare_atomicmsg(t->ep, &amsg, t->cmp, t->cmp_desc,
					    t->cmp_count, t->res, t->res_desc,
					    t->res_count, t->flags);
	}
}

static void rivet_trig_free(struct rivet_trig *t)
{
	atomic_fetch_sub(&t->cntr->refcnt, 1);
	free(t);
}

/* Puts list (in order) back in front of the domain's list. */
static void rivet_trig_requeue(struct rivet_domain *dom,
			       struct rivet_trig *list)
{
	struct rivet_trig *last;
	size_t n = 0;

	if (!list)
		return;
	for (last = list; last->next; last = last->next)
		n++;
	pthread_mutex_lock(&dom->trig_lock);
	last->next = dom->trig;
	dom->trig = list;
	atomic_fetch_add(&dom->ntrig, n + 1);
	pthread_mutex_unlock(&dom->trig_lock);
}

void rivet_trig_run(struct rivet_domain *dom)
{
	struct rivet_trig **pp, *t, *ready = NULL, **tail = &ready;
	ssize_t ret;

	if (pthread_mutex_trylock(&dom->trig_run))
		return;		/* another thread is at it */
	pthread_mutex_lock(&dom->trig_lock);
	for (pp = &dom->trig; (t = *pp);) {
		if (atomic_load(&t->cntr->value) < t->threshold) {
			pp = &t->next;
			continue;
		}
		*pp = t->next;
		t->next = NULL;
		*tail = t;
		tail = &t->next;
		atomic_fetch_sub(&dom->ntrig, 1);
	}
	pthread_mutex_unlock(&dom->trig_lock);
	while ((t = ready)) {
		ret = rivet_trig_start(t);
		if (ret == -FI_EAGAIN)
			break;		/* no room: it goes first next time */
		ready = t->next;
		if (ret) {
			RIVET_WARN(EP_DATA, "triggered operation failed: %s\n",
				   fi_strerror((int)-ret));
			if (t->fail)
				t->fail(t->ep, t->context, (int)-ret);
		}
		rivet_trig_free(t);
	}
	rivet_trig_requeue(dom, ready);
	pthread_mutex_unlock(&dom->trig_run);
}

void rivet_trig_drop_ep(struct rivet_domain *dom, const struct fid_ep *ep)
{
	struct rivet_trig **pp, *t;

	pthread_mutex_lock(&dom->trig_run);	/* none of its is starting */
	pthread_mutex_lock(&dom->trig_lock);
	for (pp = &dom->trig; (t = *pp);) {
		if (t->ep != ep) {
			pp = &t->next;
			continue;
		}
		*pp = t->next;
		atomic_fetch_sub(&dom->ntrig, 1);
		rivet_trig_free(t);
	}
	pthread_mutex_unlock(&dom->trig_lock);
	pthread_mutex_unlock(&dom->trig_run);
}

/* The trigger of an operation's context (fi_trigger(3)). */
static int rivet_trig_target(struct rivet_domain *dom, void *context,
			     struct rivet_cntr **cntr_p, uint64_t *threshold_p)
{
	const struct fi_triggered_context *tc = context;
	struct rivet_cntr *cntr;

	if (!tc)
		return -FI_EINVAL;
	if (tc->event_type != FI_TRIGGER_THRESHOLD)
		return -FI_ENOSYS;	/* FI_TRIGGER_XPU needs FI_HMEM */
	if (!tc->trigger.threshold.cntr)
		return -FI_EINVAL;
	cntr = container_of(tc->trigger.threshold.cntr, struct rivet_cntr,
			    cntr_fid);
	if (cntr->cntr_fid.fid.fclass != FI_CLASS_CNTR || cntr->domain != dom)
		return -FI_EINVAL;
	*cntr_p = cntr;
	*threshold_p = tc->trigger.threshold.threshold;
	return 0;
}

static bool rivet_trig_fits(size_t n, const void *arr)
{
	return n <= RIVET_TRIG_IOV_MAX && (!n || arr);
}

/* Queues t in threshold order (after its equals), then runs the list:
 * a threshold already reached starts it at once. */
static ssize_t rivet_trig_queue(struct rivet_domain *dom,
				struct rivet_trig *t)
{
	struct rivet_trig **pp;
	int ret;

	ret = rivet_trig_target(dom, t->context, &t->cntr, &t->threshold);
	if (ret) {
		free(t);
		return ret;
	}
	t->flags &= ~(uint64_t)FI_TRIGGER;
	atomic_fetch_add(&t->cntr->refcnt, 1);
	pthread_mutex_lock(&dom->trig_lock);
	for (pp = &dom->trig; *pp && (*pp)->threshold <= t->threshold;
	     pp = &(*pp)->next)
		;
	t->next = *pp;
	*pp = t;
	atomic_fetch_add(&dom->ntrig, 1);
	pthread_mutex_unlock(&dom->trig_lock);
	rivet_trig_run(dom);
	return 0;
}

static struct rivet_trig *rivet_trig_alloc(struct fid_ep *ep,
					   enum rivet_trig_kind kind,
					   uint64_t flags,
					   rivet_trig_fail_fn fail)
{
	struct rivet_trig *t = calloc(1, sizeof(*t));

	if (t) {
		t->ep = ep;
		t->kind = kind;
		t->flags = flags;
		t->fail = fail;
	}
	return t;
}

static void rivet_trig_copy_iov(struct rivet_trig *t, const struct iovec *iov,
				void **desc, size_t count)
{
	t->count = count;
	if (count)
		memcpy(t->iov, iov, count * sizeof(*iov));
	if (count && desc)
		memcpy(t->desc, desc, count * sizeof(*desc));
}

/* A message call: its iovs, address, tag, context and data. */
static ssize_t rivet_trig_msg_common(struct rivet_domain *dom,
				     struct fid_ep *ep,
				     enum rivet_trig_kind kind,
				     const struct fi_msg_tagged *m,
				     uint64_t flags, rivet_trig_fail_fn fail)
{
	struct rivet_trig *t;

	if (!rivet_trig_fits(m->iov_count, m->msg_iov))
		return -FI_EINVAL;
	t = rivet_trig_alloc(ep, kind, flags, fail);
	if (!t)
		return -FI_ENOMEM;
	rivet_trig_copy_iov(t, m->msg_iov, m->desc, m->iov_count);
	t->addr = m->addr;
	t->tag = m->tag;
	t->ignore = m->ignore;
	t->context = m->context;
	t->data = m->data;
	return rivet_trig_queue(dom, t);
}

ssize_t rivet_trig_msg(struct rivet_domain *dom, struct fid_ep *ep,
		       enum rivet_trig_kind kind, const struct fi_msg *msg,
		       uint64_t flags, rivet_trig_fail_fn fail)
{
	struct fi_msg_tagged m;

	if (!msg)
		return -FI_EINVAL;
	m = (struct fi_msg_tagged) {
		.msg_iov = msg->msg_iov, .desc = msg->desc,
		.iov_count = msg->iov_count, .addr = msg->addr,
		.context = msg->context, .data = msg->data,
	};
	return rivet_trig_msg_common(dom, ep, kind, &m, flags, fail);
}

ssize_t rivet_trig_tagged(struct rivet_domain *dom, struct fid_ep *ep,
			  enum rivet_trig_kind kind,
			  const struct fi_msg_tagged *msg, uint64_t flags,
			  rivet_trig_fail_fn fail)
{
	if (!msg)
		return -FI_EINVAL;
	return rivet_trig_msg_common(dom, ep, kind, msg, flags, fail);
}

ssize_t rivet_trig_rma(struct rivet_domain *dom, struct fid_ep *ep,
		       enum rivet_trig_kind kind, const struct fi_msg_rma *msg,
		       uint64_t flags, rivet_trig_fail_fn fail)
{
	struct rivet_trig *t;

	if (!msg || !rivet_trig_fits(msg->iov_count, msg->msg_iov) ||
	    !rivet_trig_fits(msg->rma_iov_count, msg->rma_iov))
		return -FI_EINVAL;
	t = rivet_trig_alloc(ep, kind, flags, fail);
	if (!t)
		return -FI_ENOMEM;
	rivet_trig_copy_iov(t, msg->msg_iov, msg->desc, msg->iov_count);
	t->rma_count = msg->rma_iov_count;
	if (t->rma_count)
		memcpy(t->rma, msg->rma_iov, t->rma_count * sizeof(*t->rma));
	t->addr = msg->addr;
	t->context = msg->context;
	t->data = msg->data;
	return rivet_trig_queue(dom, t);
}

static void rivet_trig_copy_ioc(struct fi_ioc *dst, void **ddesc,
				const struct fi_ioc *src, void **sdesc,
				size_t n)
{
	if (n)
		memcpy(dst, src, n * sizeof(*src));
	if (n && sdesc)
		memcpy(ddesc, sdesc, n * sizeof(*sdesc));
}

ssize_t rivet_trig_atomic(struct rivet_domain *dom, struct fid_ep *ep,
			  enum rivet_trig_kind kind,
			  const struct fi_msg_atomic *msg,
			  const struct fi_ioc *comparev, void **compare_desc,
			  size_t compare_count, const struct fi_ioc *resultv,
			  void **result_desc, size_t result_count,
			  uint64_t flags, rivet_trig_fail_fn fail)
{
	struct rivet_trig *t;

	if (!msg || !rivet_trig_fits(msg->iov_count, msg->msg_iov) ||
	    !rivet_trig_fits(msg->rma_iov_count, msg->rma_iov) ||
	    !rivet_trig_fits(compare_count, comparev) ||
	    !rivet_trig_fits(result_count, resultv))
		return -FI_EINVAL;
	t = rivet_trig_alloc(ep, kind, flags, fail);
	if (!t)
		return -FI_ENOMEM;
	t->count = msg->iov_count;
	rivet_trig_copy_ioc(t->ioc, t->desc, msg->msg_iov, msg->desc,
			    msg->iov_count);
	t->rma_count = msg->rma_iov_count;
	if (t->rma_count)
		memcpy(t->rma_ioc, msg->rma_iov,
		       t->rma_count * sizeof(*t->rma_ioc));
	t->cmp_count = compare_count;
	rivet_trig_copy_ioc(t->cmp, t->cmp_desc, comparev, compare_desc,
			    compare_count);
	t->res_count = result_count;
	rivet_trig_copy_ioc(t->res, t->res_desc, resultv, result_desc,
			    result_count);
	t->addr = msg->addr;
	t->context = msg->context;
	t->data = msg->data;
	t->datatype = msg->datatype;
	t->op = msg->op;
	return rivet_trig_queue(dom, t);
}
