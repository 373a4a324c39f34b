/* SPDX-License-Identifier: MIT */
/*
 * Wait sets (fi_poll(3)): one epoll fd over the wait objects of the CQs,
 * counters and EQs opened with FI_WAIT_SET.  Each member keeps its own
 * wait object (an epoll fd over its channel fds and eventfd, rivet_wait.c),
 * so the set's fd is readable whenever a member's is; fi_wait runs the
 * members' trywait, which progresses them, arms them and says whether
 * something waits, before each sleep.
 */
#include <stdlib.h>

#include "rivet_set.h"

static struct fi_ops g_rivet_waitset_fi_ops;
static struct fi_ops_wait g_rivet_waitset_ops;

int rivet_waitset_attach(struct fid_wait *ws_fid, struct rivet_fabric *fabric,
			 struct fid *member, const struct rivet_wait *w)
{
	struct rivet_waitset *ws;
	int ret;

	if (!ws_fid || ws_fid->fid.fclass != FI_CLASS_WAIT)
		return -FI_EINVAL;
	ws = to_rwaitset(ws_fid);
	if (ws->fabric != fabric) {
		RIVET_WARN(CORE, "wait set of another fabric\n");
		return -FI_EINVAL;
	}
	pthread_mutex_lock(&ws->lock);
	ret = rivet_fid_list_insert(&ws->members, member);
	if (!ret) {
		ret = rivet_wait_add_fd(&ws->wait, w->epfd);
		if (ret)
			rivet_fid_list_remove(&ws->members, member);
	}
	pthread_mutex_unlock(&ws->lock);
	return ret;
}

void rivet_waitset_detach(struct fid_wait *ws_fid, struct fid *member,
			  const struct rivet_wait *w)
{
	struct rivet_waitset *ws = to_rwaitset(ws_fid);

	pthread_mutex_lock(&ws->lock);
	if (!rivet_fid_list_remove(&ws->members, member))
		rivet_wait_del_fd(&ws->wait, w->epfd);
	pthread_mutex_unlock(&ws->lock);
}

/*
 * Progresses a member and arms it: -FI_EAGAIN when it has something (CQ
 * entries, a counter that moved, an EQ event, fi_cq_signal), 0 when it
 * is safe to sleep.  *poll_p: it fills only in progress that nothing
 * wakes (RDM endpoints' CQs), so a sleep must be short.
 */
static int rivet_waitset_member_trywait(struct fid *fid, bool *poll_p)
{
	struct rivet_cntr *cntr;
	struct rivet_cq *cq;

	switch (fid->fclass) {
	case FI_CLASS_CQ:
		cq = to_rcq(container_of(fid, struct fid_cq, fid));
		if (rivet_cq_pending(cq))
			return -FI_EAGAIN;
		*poll_p |= cq->srcs.n != 0;
		return rivet_cq_trywait(cq);
	case FI_CLASS_CNTR:
		cntr = to_rcntr(container_of(fid, struct fid_cntr, fid));
		fi_cntr_readerr(&cntr->cntr_fid);	/* progress */
		*poll_p |= rivet_cntr_needs_poll(cntr);
		return rivet_cntr_trywait(cntr);
	case FI_CLASS_EQ:
		return rivet_eq_trywait(to_req(container_of(fid, struct fid_eq,
							    fid)));
	default:
		return -FI_EINVAL;
	}
}

/* Every member is checked, even after one has something, so that the
 * changes one wake-up reports (a counter's) are not reported again by
 * the next; the first error, else -FI_EAGAIN, else 0. */
static int rivet_waitset_check(struct rivet_waitset *ws, bool *poll_p)
{
	size_t i;
	int ret = 0, r;

	*poll_p = false;
	pthread_mutex_lock(&ws->lock);
	rivet_wait_drain_signal(&ws->wait);
	for (i = 0; i < ws->members.n; i++) {
		r = rivet_waitset_member_trywait(ws->members.fids[i], poll_p);
		if (r && (!ret || ret == -FI_EAGAIN))
			ret = r;
	}
	pthread_mutex_unlock(&ws->lock);
	return ret;
}

int rivet_waitset_trywait(struct rivet_waitset *ws)
{
	bool poll;

	return rivet_waitset_check(ws, &poll);
}

/*
 * fi_wait: 0 once a member has something, -FI_ETIMEDOUT when timeout ms
 * (< 0: forever) pass first.  The lock is not held while sleeping, so
 * members may come and go meanwhile.
 */
static int rivet_waitset_wait(struct fid_wait *waitset, int timeout)
{
	struct rivet_waitset *ws = to_rwaitset(waitset);
	uint64_t deadline = rivet_wait_deadline(timeout);
	bool poll;
	int ret, left;

	for (;;) {
		ret = rivet_waitset_check(ws, &poll);
		if (ret == -FI_EAGAIN)
			return 0;
		if (ret)
			return ret;
		left = rivet_wait_remaining(deadline);
		if (!left)
			return -FI_ETIMEDOUT;
		/* as fi_cq_sread: RDM progress wakes nothing, poll it */
		if (poll && (left < 0 || left > 1))
			left = 1;
		ret = rivet_wait_fd(&ws->wait, left);
		if (ret && ret != -FI_EAGAIN)
			return ret;
	}
}

/* FI_GETWAIT gives the epoll fd whatever wait_obj was asked (FI_WAIT_UNSPEC
 * allows it); FI_GETWAITOBJ says FI_WAIT_FD. */
static int rivet_waitset_control(struct fid *fid, int command, void *arg)
{
	struct rivet_waitset *ws = to_rwaitset(container_of(fid,
						struct fid_wait, fid));

	return rivet_wait_control(&ws->wait, command, arg);
}

/* fi_poll(3): a wait set that objects still use is -FI_EBUSY. */
static int rivet_waitset_close(struct fid *fid)
{
	struct rivet_waitset *ws = to_rwaitset(container_of(fid,
						struct fid_wait, fid));

	pthread_mutex_lock(&ws->lock);
	if (ws->members.n) {
		pthread_mutex_unlock(&ws->lock);
		return -FI_EBUSY;
	}
	pthread_mutex_unlock(&ws->lock);
	rivet_wait_destruct(&ws->wait);
	pthread_mutex_destroy(&ws->lock);
	rivet_fid_list_destruct(&ws->members);
	atomic_fetch_sub(&ws->fabric->refcnt, 1);
	free(ws);
	return 0;
}

/* What a wait set may be: an fd (FI_WAIT_UNSPEC picks it).  Mutex/cond,
 * pollfd and yield sets are not offered; FI_WAIT_NONE and FI_WAIT_SET
 * make no sense for a set. */
static int rivet_waitset_attr_check(const struct fi_wait_attr *attr)
{
	if (attr->flags)
		return -FI_EBADFLAGS;	/* reserved, must be 0 */
	switch (attr->wait_obj) {
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		return 0;
	case FI_WAIT_NONE:
	case FI_WAIT_SET:
		return -FI_EINVAL;
	default:
		return -FI_ENOSYS;
	}
}

/* A NULL attr means the defaults (FI_WAIT_UNSPEC, flags 0). */
int rivet_waitset_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		       struct fid_wait **waitset_p)
{
	struct rivet_fabric *fab = to_rfabric(fabric);
	struct rivet_waitset *ws;
	int ret;

	if (!waitset_p)
		return -FI_EINVAL;
	ret = attr ? rivet_waitset_attr_check(attr) : 0;
	if (ret)
		return ret;
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return -FI_ENOMEM;
	ret = rivet_wait_construct(&ws->wait);
	if (ret) {
		free(ws);
		return ret;
	}
	ws->fabric = fab;
	pthread_mutex_init(&ws->lock, NULL);
	rivet_fid_list_construct(&ws->members);
	ws->wait_fid.fid.fclass = FI_CLASS_WAIT;
	ws->wait_fid.fid.ops = &g_rivet_waitset_fi_ops;
	ws->wait_fid.ops = &g_rivet_waitset_ops;
	atomic_fetch_add(&fab->refcnt, 1);
	*waitset_p = &ws->wait_fid;
	return 0;
}

static struct fi_ops g_rivet_waitset_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_waitset_close,
	.bind = rivet_no_bind,
	.control = rivet_waitset_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_wait g_rivet_waitset_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = rivet_waitset_wait,
};
