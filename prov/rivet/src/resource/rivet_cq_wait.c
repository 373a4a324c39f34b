/* SPDX-License-Identifier: MIT */
/*
 * Blocking on a completion queue: its completion channel and eventfd,
 * arming, fi_cq_sread, fi_cq_signal, fi_trywait and FI_GETWAIT.  Before a
 * sleep the CQ's progress sources get their control progress.  And the
 * other read that is not fi_cq_read: fi_cq_readerr.
 */
#include "rivet.h"

/* ---- blocking: completion channel, arming, sread, trywait ---- */

static bool rivet_cq_waitable(const struct rivet_cq *cq)
{
	return cq->wait.epfd >= 0;
}

/* Takes and acks every pending channel event; returns how many. */
unsigned int rivet_cq_ack_events(struct rivet_cq *cq)
{
	if (!cq->channel)
		return 0;
	return rivet_verbs_cq_events_ack(cq->ibv_cq, cq->channel);
}

/*
 * A counter's wait may take the channel event that a thread sleeping on
 * this CQ was waiting for: wake that thread through the eventfd.
 */
void rivet_cq_consume_events(struct rivet_cq *cq)
{
	if (rivet_cq_ack_events(cq) && rivet_cq_waitable(cq))
		rivet_wait_signal(&cq->wait);
}

/*
 * Arms unconditionally: a flag saying "already armed" would race with a
 * thread that has taken the event but not yet cleared the flag, and
 * re-arming an armed CQ is harmless.
 */
int rivet_cq_arm(struct rivet_cq *cq)
{
	int ret = 0, n;

	rivet_progress_set_run_cm(&cq->srcs);
	rivet_lock_acquire(&cq->lock);
	if (cq->channel) {
		ret = ibv_req_notify_cq(cq->ibv_cq, 0);
		if (ret) {
			RIVET_WARN_ERRNO(CQ, "ibv_req_notify_cq", ret);
			ret = rivet_errno_to_fi(ret);
			goto out;
		}
	}
	n = rivet_cq_poll_locked(cq);
	if (n < 0)
		ret = n;
	else if (n > 0 || cq->count || cq->errs_count)
		ret = -FI_EAGAIN;
out:
	rivet_lock_release(&cq->lock);
	return ret;
}

/*
 * The eventfd only wakes: what is pending is in the rings or the verbs CQ,
 * which arming checks.  A pending fi_cq_signal is reported once.
 */
int rivet_cq_trywait(struct rivet_cq *cq)
{
	int ret;

	if (!rivet_cq_waitable(cq))
		return -FI_EINVAL;
	rivet_wait_drain_signal(&cq->wait);
	rivet_cq_ack_events(cq);
	ret = rivet_cq_arm(cq);
	if (ret)
		return ret;
	return atomic_exchange(&cq->signaled, false) ? -FI_EAGAIN : 0;
}

bool rivet_cq_pending(struct rivet_cq *cq)
{
	bool pending;

	rivet_cq_readfrom(&cq->cq_fid, NULL, 0, NULL);	/* progress only */
	rivet_lock_acquire(&cq->lock);
	pending = cq->count || cq->errs_count;
	rivet_lock_release(&cq->lock);
	return pending;
}

/*
 * fi_cq(3) makes sread invalid on a CQ without a wait object (FI_WAIT_NONE):
 * we answer -FI_EINVAL.  A timeout or fi_cq_signal gives -FI_EAGAIN.
 */
ssize_t rivet_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			   fi_addr_t *src_addr, const void *cond, int timeout)
{
	struct rivet_cq *cq = to_rcq(cq_fid);
	uint64_t deadline = rivet_wait_deadline(timeout);
	ssize_t ret;
	int left;

	if (!rivet_cq_waitable(cq))
		return -FI_EINVAL;
	for (;;) {
		ret = rivet_cq_readfrom(cq_fid, buf, count, src_addr);
		if (ret != -FI_EAGAIN || !count)
			return ret;
		if (atomic_exchange(&cq->signaled, false))
			return -FI_EAGAIN;
		left = rivet_wait_remaining(deadline);
		if (!left)
			return -FI_EAGAIN;
		ret = rivet_cq_arm(cq);
		if (ret == -FI_EAGAIN)
			continue;
		if (ret)
			return ret;
		/* progress sources (RDM endpoints) have CQs of their own
		 * that do not wake this one: poll */
		if (cq->srcs.n && (left < 0 || left > 1))
			left = 1;
		ret = rivet_wait_fd(&cq->wait, left);
		if (ret && ret != -FI_EAGAIN)
			return ret;
		rivet_wait_drain_signal(&cq->wait);
		rivet_cq_ack_events(cq);
	}
}

ssize_t rivet_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
		       const void *cond, int timeout)
{
	return rivet_cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

int rivet_cq_signal(struct fid_cq *cq_fid)
{
	struct rivet_cq *cq = to_rcq(cq_fid);

	if (!rivet_cq_waitable(cq))
		return -FI_EINVAL;
	atomic_store(&cq->signaled, true);
	rivet_wait_signal(&cq->wait);
	return 0;
}

int rivet_cq_control(struct fid *fid, int command, void *arg)
{
	struct rivet_cq *cq = to_rcq(container_of(fid, struct fid_cq, fid));

	return rivet_wait_control(&cq->wait, command, arg);
}

/* ---- fi_cq_readerr ---- */

/*
 * err_data (fi_cq(3)): rivet's only provider data is the entry's text
 * (operation, peer, reason).  A caller with err_data_size 0 gets it in a
 * buffer of the CQ's, valid until the next read.  A caller's own buffer
 * is never written: an application that hands over an uninitialised
 * entry (garbage pointer and size) must not have its memory corrupted,
 * so it gets its pointer back with err_data_size 0, and fi_cq_strerror
 * names prov_errno.
 */
ssize_t rivet_cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
			 uint64_t flags)
{
	struct rivet_cq *cq = to_rcq(cq_fid);
	struct rivet_cq_entry e;

	if (!buf)
		return -FI_EINVAL;
	rivet_lock_acquire(&cq->lock);
	rivet_cq_poll_locked(cq);
	if (!cq->errs_count) {
		rivet_lock_release(&cq->lock);
		return -FI_EAGAIN;
	}
	e = cq->errs[cq->errs_head];
	if (++cq->errs_head == cq->errs_size)
		cq->errs_head = 0;
	cq->errs_count--;
	rivet_cq_err_fill(cq, &e, buf);
	rivet_lock_release(&cq->lock);
	return 1;
}
