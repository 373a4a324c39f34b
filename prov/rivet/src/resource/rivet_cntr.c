/* SPDX-License-Identifier: MIT */
/*
 * Counters: success and error values that CQ progress bumps atomically,
 * reads and waits that drive the progress of the CQs feeding them, and the
 * counter's wait object (its eventfd plus those CQs' channel fds).
 */
#include <stdlib.h>

#include "rivet.h"
#include "rivet_cntr.h"
#include "rivet_set.h"

static struct fi_ops g_rivet_cntr_fi_ops;
static struct fi_ops_cntr g_rivet_cntr_ops;

static bool rivet_cntr_waitable(const struct rivet_cntr *cntr)
{
	return cntr->wait.epfd >= 0;
}

/* ---- the CQs feeding a counter ---- */

static struct rivet_cntr_cq *rivet_cntr_cq_lookup(struct rivet_cntr *cntr,
						  const struct rivet_cq *cq)
{
	size_t i;

	for (i = 0; i < cntr->ncqs; i++)
		if (cntr->cqs[i].cq == cq)
			return &cntr->cqs[i];
	return NULL;
}

static int rivet_cntr_cq_insert(struct rivet_cntr *cntr, struct rivet_cq *cq)
{
	struct rivet_cntr_cq *cqs;
	size_t cap;
	int ret;

	if (cntr->ncqs == cntr->cqs_cap) {
		cap = RIVET_MAX(cntr->cqs_cap * 2, (size_t)4);
		cqs = realloc(cntr->cqs, cap * sizeof(*cqs));
		if (!cqs)
			return -FI_ENOMEM;
		cntr->cqs = cqs;
		cntr->cqs_cap = cap;
	}
	if (rivet_cntr_waitable(cntr) && cq->channel) {
		ret = rivet_wait_add_fd(&cntr->wait, cq->channel->fd);
		if (ret)
			return ret;
	}
	cntr->cqs[cntr->ncqs].cq = cq;
	cntr->cqs[cntr->ncqs].uses = 1;
	cntr->ncqs++;
	return 0;
}

/* Each endpoint binding that feeds the counter through cq attaches once. */
int rivet_cntr_attach_cq(struct rivet_cntr *cntr, struct rivet_cq *cq)
{
	struct rivet_cntr_cq *slot;
	int ret = 0;

	pthread_mutex_lock(&cntr->cqs_lock);
	slot = rivet_cntr_cq_lookup(cntr, cq);
	if (slot)
		slot->uses++;
	else
		ret = rivet_cntr_cq_insert(cntr, cq);
	if (!ret)
		atomic_fetch_add(&cq->refcnt, 1);
	pthread_mutex_unlock(&cntr->cqs_lock);
	if (ret)
		RIVET_WARN(CNTR, "cannot attach a CQ to a counter (%d)\n", ret);
	return ret;
}

void rivet_cntr_detach_cq(struct rivet_cntr *cntr, struct rivet_cq *cq)
{
	struct rivet_cntr_cq *slot;

	pthread_mutex_lock(&cntr->cqs_lock);
	slot = rivet_cntr_cq_lookup(cntr, cq);
	if (slot) {
		atomic_fetch_sub(&cq->refcnt, 1);
		if (!--slot->uses) {
			if (rivet_cntr_waitable(cntr) && cq->channel)
				rivet_wait_del_fd(&cntr->wait,
						  cq->channel->fd);
			*slot = cntr->cqs[--cntr->ncqs];
		}
	}
	pthread_mutex_unlock(&cntr->cqs_lock);
}

/* CQs' deferred work (emulated MSG atomics' next steps) posts work
 * requests (ep->lock): it runs after cqs_lock is dropped. */
#define RIVET_CNTR_DEFER_MAX 8

static void rivet_cntr_progress(struct rivet_cntr *cntr)
{
	struct rivet_cq *defer[RIVET_CNTR_DEFER_MAX];
	size_t i, n = 0;

	pthread_mutex_lock(&cntr->cqs_lock);
	for (i = 0; i < cntr->ncqs; i++) {
		rivet_cq_progress(cntr->cqs[i].cq);
		if (rivet_cq_has_deferred(cntr->cqs[i].cq) &&
		    n < RIVET_CNTR_DEFER_MAX)
			defer[n++] = cntr->cqs[i].cq;
	}
	pthread_mutex_unlock(&cntr->cqs_lock);
	for (i = 0; i < n; i++)
		rivet_cq_run_deferred(defer[i]);
	rivet_trig_poll(cntr->domain);
}

/*
 * Arms every feeding CQ and takes in what already arrived; the caller then
 * compares the counter itself (entries left unread in a CQ ring are not
 * news for a counter).  *poll_p: some CQ has no channel to sleep on.
 */
static int rivet_cntr_arm(struct rivet_cntr *cntr, bool *poll_p)
{
	bool poll = false;
	size_t i;
	int ret = 0;

	pthread_mutex_lock(&cntr->cqs_lock);
	for (i = 0; i < cntr->ncqs && !ret; i++) {
		ret = rivet_cq_arm(cntr->cqs[i].cq);
		if (ret == -FI_EAGAIN)
			ret = 0;
		if (!cntr->cqs[i].cq->channel)
			poll = true;
	}
	pthread_mutex_unlock(&cntr->cqs_lock);
	*poll_p = poll;
	return ret;
}

/* Whether progress sources (RDM endpoints, whose own verbs CQs wake
 * nobody) feed the counter: a blocking wait must poll their progress. */
static bool rivet_cntr_has_sources(struct rivet_cntr *cntr)
{
	bool any = false;
	size_t i;

	pthread_mutex_lock(&cntr->cqs_lock);
	for (i = 0; i < cntr->ncqs && !any; i++)
		any = cntr->cqs[i].cq->srcs.n;
	pthread_mutex_unlock(&cntr->cqs_lock);
	return any;
}

static void rivet_cntr_consume_events(struct rivet_cntr *cntr)
{
	size_t i;

	pthread_mutex_lock(&cntr->cqs_lock);
	for (i = 0; i < cntr->ncqs; i++)
		rivet_cq_consume_events(cntr->cqs[i].cq);
	pthread_mutex_unlock(&cntr->cqs_lock);
}

/* ---- fi_ops_cntr ---- */

static uint64_t rivet_cntr_read(struct fid_cntr *cntr_fid)
{
	struct rivet_cntr *cntr = to_rcntr(cntr_fid);
	uint64_t v;

	rivet_cntr_progress(cntr);
	v = atomic_load_explicit(&cntr->value, memory_order_acquire);
	rivet_domain_polled(cntr->domain,
			    atomic_exchange_explicit(&cntr->polled, v,
						     memory_order_relaxed) != v);
	return v;
}

static uint64_t rivet_cntr_readerr(struct fid_cntr *cntr_fid)
{
	struct rivet_cntr *cntr = to_rcntr(cntr_fid);

	rivet_cntr_progress(cntr);
	return atomic_load_explicit(&cntr->err, memory_order_acquire);
}

/* fi_poll(3): a counter is reported when its values changed since the
 * last fi_poll, fi_cntr_set or fi_cntr_add. */
static void rivet_cntr_poll_rebase(struct rivet_cntr *cntr)
{
	atomic_store(&cntr->poll_value, atomic_load(&cntr->value));
	atomic_store(&cntr->poll_err, atomic_load(&cntr->err));
}

bool rivet_cntr_poll_changed(struct rivet_cntr *cntr, bool take)
{
	uint64_t v, e;
	bool changed;

	rivet_cntr_progress(cntr);
	v = atomic_load_explicit(&cntr->value, memory_order_acquire);
	e = atomic_load_explicit(&cntr->err, memory_order_acquire);
	changed = v != atomic_load(&cntr->poll_value) ||
		  e != atomic_load(&cntr->poll_err);
	if (changed && take) {
		atomic_store(&cntr->poll_value, v);
		atomic_store(&cntr->poll_err, e);
	}
	return changed;
}

bool rivet_cntr_needs_poll(struct rivet_cntr *cntr)
{
	bool poll = false;
	size_t i;

	pthread_mutex_lock(&cntr->cqs_lock);
	for (i = 0; i < cntr->ncqs && !poll; i++)
		poll = cntr->cqs[i].cq->srcs.n != 0;
	pthread_mutex_unlock(&cntr->cqs_lock);
	return poll;
}

/* A changed value, success or error, wakes fi_cntr_wait and fd waiters;
 * the application's own change is no news for poll sets. */
static void rivet_cntr_changed(struct rivet_cntr *cntr)
{
	rivet_cntr_poll_rebase(cntr);
	if (rivet_cntr_waitable(cntr))
		rivet_wait_signal(&cntr->wait);
}

static int rivet_cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct rivet_cntr *cntr = to_rcntr(cntr_fid);

	atomic_fetch_add_explicit(&cntr->value, value, memory_order_release);
	rivet_cntr_changed(cntr);
	rivet_trig_poll(cntr->domain);
	return 0;
}

static int rivet_cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct rivet_cntr *cntr = to_rcntr(cntr_fid);

	atomic_store_explicit(&cntr->value, value, memory_order_release);
	rivet_cntr_changed(cntr);
	rivet_trig_poll(cntr->domain);
	return 0;
}

static int rivet_cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct rivet_cntr *cntr = to_rcntr(cntr_fid);

	atomic_fetch_add_explicit(&cntr->err, value, memory_order_release);
	rivet_cntr_changed(cntr);
	return 0;
}

static int rivet_cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct rivet_cntr *cntr = to_rcntr(cntr_fid);

	atomic_store_explicit(&cntr->err, value, memory_order_release);
	rivet_cntr_changed(cntr);
	return 0;
}

/*
 * A counter without a wait object: fi_cntr(3) calls the wait invalid
 * there, and applications make it anyway (the fabtests' triggered-RMA
 * program, as libfabric's own providers allow): the wait polls, with
 * progress, yielding the CPU between polls.
 */
static int rivet_cntr_wait_poll(struct rivet_cntr *cntr, uint64_t threshold,
				uint64_t deadline, uint64_t err)
{
	for (;;) {
		rivet_cntr_progress(cntr);
		if (atomic_load(&cntr->value) >= threshold)
			return 0;
		if (atomic_load(&cntr->err) != err)
			return -FI_EAVAIL;
		if (!rivet_wait_remaining(deadline))
			return -FI_ETIMEDOUT;
		sched_yield();
	}
}

/*
 * fi_cntr(3): returns 0 once value >= threshold; any change of the error
 * value while waiting unblocks the wait (-FI_EAVAIL); -FI_ETIMEDOUT on
 * timeout.
 */
static int rivet_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
			   int timeout)
{
	struct rivet_cntr *cntr = to_rcntr(cntr_fid);
	uint64_t deadline = rivet_wait_deadline(timeout);
	uint64_t err = atomic_load(&cntr->err);
	bool poll;
	int ret, left;

	if (!rivet_cntr_waitable(cntr))
		return rivet_cntr_wait_poll(cntr, threshold, deadline, err);
	for (;;) {
		/* RDM endpoints complete only in their progress */
		rivet_cntr_progress(cntr);
		ret = rivet_cntr_arm(cntr, &poll);
		if (ret)
			return ret;
		poll = poll || rivet_cntr_has_sources(cntr);
		if (atomic_load(&cntr->value) >= threshold)
			return 0;
		if (atomic_load(&cntr->err) != err)
			return -FI_EAVAIL;
		left = rivet_wait_remaining(deadline);
		if (!left)
			return -FI_ETIMEDOUT;
		if (poll && (left < 0 || left > 1))
			left = 1;
		ret = rivet_wait_fd(&cntr->wait, left);
		if (ret && ret != -FI_EAGAIN)
			return ret;
		rivet_wait_drain_signal(&cntr->wait);
		rivet_cntr_consume_events(cntr);
	}
}

/*
 * Every change signals the eventfd, so a drained signal means the value
 * moved since the last trywait or wait: the caller must look again.
 */
int rivet_cntr_trywait(struct rivet_cntr *cntr)
{
	bool poll;
	int ret;

	if (!rivet_cntr_waitable(cntr))
		return -FI_EINVAL;
	rivet_cntr_consume_events(cntr);
	ret = rivet_cntr_arm(cntr, &poll);
	if (ret)
		return ret;
	if (rivet_wait_drain_signal(&cntr->wait) || poll)
		return -FI_EAGAIN;
	return 0;
}

static int rivet_cntr_control(struct fid *fid, int command, void *arg)
{
	struct rivet_cntr *cntr = to_rcntr(container_of(fid, struct fid_cntr,
							fid));

	return rivet_wait_control(&cntr->wait, command, arg);
}

/* ---- open and close ---- */

static int rivet_cntr_attr_check(const struct fi_cntr_attr *attr)
{
	if (attr->events != FI_CNTR_EVENTS_COMP)
		return -FI_ENOSYS;
	switch (attr->wait_obj) {
	case FI_WAIT_SET:
		if (!attr->wait_set)
			return -FI_EINVAL;
		break;
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		break;
	default:
		return -FI_ENOSYS;
	}
	if (attr->flags)
		return -FI_EINVAL;	/* reserved, must be 0 */
	return 0;
}

static int rivet_cntr_construct(struct rivet_cntr *cntr,
				struct rivet_domain *domain,
				const struct fi_cntr_attr *attr)
{
	int ret;

	cntr->domain = domain;
	if (attr)
		cntr->attr = *attr;
	if (cntr->attr.wait_obj == FI_WAIT_UNSPEC)
		cntr->attr.wait_obj = FI_WAIT_FD;
	cntr->wait.epfd = cntr->wait.efd = -1;
	if (cntr->attr.wait_obj != FI_WAIT_NONE) {
		ret = rivet_wait_construct(&cntr->wait);
		if (ret)
			return ret;
	}
	atomic_init(&cntr->value, 0);
	atomic_init(&cntr->err, 0);
	atomic_init(&cntr->refcnt, 0);
	pthread_mutex_init(&cntr->cqs_lock, NULL);
	return 0;
}

/* A NULL attr means the defaults: completion events, no wait object. */
int rivet_cntr_open(struct fid_domain *domain_fid, struct fi_cntr_attr *attr,
		    struct fid_cntr **cntr_p, void *context)
{
	struct rivet_domain *domain = to_rdomain(domain_fid);
	struct rivet_cntr *cntr;
	int ret;

	if (!cntr_p)
		return -FI_EINVAL;
	if (attr) {
		ret = rivet_cntr_attr_check(attr);
		if (ret)
			return ret;
	}
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	ret = rivet_cntr_construct(cntr, domain, attr);
	if (ret) {
		free(cntr);
		return ret;
	}
	cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr_fid.fid.context = context;
	cntr->cntr_fid.fid.ops = &g_rivet_cntr_fi_ops;
	cntr->cntr_fid.ops = &g_rivet_cntr_ops;
	if (cntr->attr.wait_obj == FI_WAIT_SET) {
		ret = rivet_waitset_attach(cntr->attr.wait_set, domain->fabric,
					   &cntr->cntr_fid.fid, &cntr->wait);
		if (ret) {
			rivet_wait_destruct(&cntr->wait);
			pthread_mutex_destroy(&cntr->cqs_lock);
			free(cntr);
			return ret;
		}
	}
	atomic_fetch_add(&domain->refcnt, 1);
	*cntr_p = &cntr->cntr_fid;
	return 0;
}

static int rivet_cntr_close(struct fid *fid)
{
	struct rivet_cntr *cntr = to_rcntr(container_of(fid, struct fid_cntr,
							fid));

	if (atomic_load(&cntr->refcnt) || cntr->ncqs)
		return -FI_EBUSY;
	if (cntr->attr.wait_obj == FI_WAIT_SET)
		rivet_waitset_detach(cntr->attr.wait_set, fid, &cntr->wait);
	rivet_wait_destruct(&cntr->wait);
	pthread_mutex_destroy(&cntr->cqs_lock);
	free(cntr->cqs);
	atomic_fetch_sub(&cntr->domain->refcnt, 1);
	free(cntr);
	return 0;
}

static struct fi_ops g_rivet_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_cntr_close,
	.bind = rivet_no_bind,
	.control = rivet_cntr_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_cntr g_rivet_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = rivet_cntr_read,
	.readerr = rivet_cntr_readerr,
	.add = rivet_cntr_add,
	.set = rivet_cntr_set,
	.wait = rivet_cntr_wait,
	.adderr = rivet_cntr_adderr,
	.seterr = rivet_cntr_seterr,
};
