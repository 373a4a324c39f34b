/* SPDX-License-Identifier: MIT */
/*
 * FI_MULTI_RECV on MSG endpoints, zero copy.
 *
 * An RC receive work request takes exactly one message, at its start, and
 * a message's length is known only when it has landed.  So a multi-
 * receive buffer has one work request on the QP at a time, over the space
 * it has left: each message's completion moves the buffer's offset on,
 * and the request for the rest is posted from the CQ's deferred work (the
 * next fi_cq_read or fi_cntr_read).  A message that comes before that
 * finds no receive, and the RC transport makes its sender retry (receiver
 * not ready, retried forever on rivet's QPs): nothing is lost, but the
 * messages into one buffer are paced by the receiver's reads.
 *
 * Receives posted while a multi-receive buffer is in use wait in the
 * queue behind it, in order (fi_msg(3): a buffer takes messages until it
 * is released), and go to the QP when it is released: when less than
 * FI_OPT_MIN_MULTI_RECV bytes are left (or none), with FI_MULTI_RECV on
 * that message's completion.  A write with immediate data that takes the
 * request is reported as a remote write and leaves the buffer as it was.
 * A message longer than the space left is an RC length error, as with any
 * MSG receive: an error completion, and the connection fails.
 */
#include <stdlib.h>

#include "rivet.h"
#include "rivet_iov.h"

#define RIVET_MRECV_MIN_DEFAULT 64

struct rivet_mrecv_buf {
	struct rivet_mrecv_buf *next;
	bool multi;			/* FI_MULTI_RECV */
	void *context;
	uint64_t flags;
	size_t count;
	size_t len;			/* bytes in iov */
	size_t off;			/* multi: bytes taken by messages */
	struct iovec iov[RIVET_IOV_LIMIT_MAX];
	void *desc[RIVET_IOV_LIMIT_MAX];
};

/* Takes the head off the queue (m->lock held). */
static struct rivet_mrecv_buf *rivet_mrecv_pop(struct rivet_mrecv *m)
{
	struct rivet_mrecv_buf *b = m->head;

	m->head = b->next;
	if (!m->head)
		m->tail = NULL;
	atomic_fetch_sub_explicit(&m->queued, 1, memory_order_release);
	return b;
}

/* A queued receive's entry, as a posted one's would be. */
static void rivet_mrecv_ctx(struct rivet_ep *ep,
			    const struct rivet_mrecv_buf *b,
			    struct rivet_wr_ctx *ctx)
{
	*ctx = (struct rivet_wr_ctx) {
		.ep = ep, .context = b->context, .rx = true,
		.flags = FI_RECV | FI_MSG | (b->multi ? FI_MULTI_RECV : 0),
		.buf = b->count ? b->iov[0].iov_base : NULL, .len = b->len,
		.cntr = ep->recv_cntr, .report = true,
	};
}

/* The queue behind a failed buffer (cq->lock, m->lock held): the QP is
 * in the error state, so each receive completes in error now (a device
 * need not flush requests posted to a QP in error). */
static void rivet_mrecv_flush_locked(struct rivet_mrecv *m,
				     struct rivet_cq *cq,
				     const struct ibv_wc *failed)
{
	struct ibv_wc wc = *failed;

	RIVET_HELD(&cq->lock);
	RIVET_HELD(&m->lock);	struct rivet_wr_ctx ctx;
	struct rivet_mrecv_buf *b;

	wc.status = IBV_WC_WR_FLUSH_ERR;
	while (m->head) {
		b = rivet_mrecv_pop(m);
		rivet_mrecv_ctx(m->ep, b, &ctx);
		rivet_cq_report_locked(cq, &wc, &ctx);
		free(b);
	}
}

/* The head buffer's work completion (cq->lock held): its entry, and the
 * queue's next post left to the CQ's deferred work. */
static void rivet_mrecv_wc(struct rivet_wc_hook *hook, struct rivet_cq *cq,
			   const struct rivet_wr_ctx *ctx,
			   const struct ibv_wc *wc)
{
	struct rivet_mrecv *m = container_of(hook, struct rivet_mrecv, hook);
	struct rivet_wr_ctx rep = *ctx;
	struct rivet_mrecv_buf *b, *done = NULL;
	bool more;

	rep.hook = NULL;
	rivet_lock_acquire(&m->lock);
	b = m->active;
	m->active = NULL;
	if (wc->status != IBV_WC_SUCCESS) {
		done = b;		/* flushed or failed: given back */
	} else if (wc->opcode == IBV_WC_RECV) {
		b->off += wc->byte_len;
		if (b->off == b->len || b->len - b->off < m->min)
			done = b;
	}
	if (done) {
		rep.flags |= FI_MULTI_RECV;
		rivet_mrecv_pop(m);
	}
	rivet_cq_report_locked(cq, wc, &rep);
	if (wc->status != IBV_WC_SUCCESS)
		rivet_mrecv_flush_locked(m, cq, wc);
	more = m->head != NULL;
	rivet_lock_release(&m->lock);
	free(done);
	if (more)
		rivet_cq_defer_locked(cq, &m->def);
}

/* A queued receive that the QP refused: an error completion, as a flushed
 * receive would have had (ep->lock held). */
static void rivet_mrecv_fail(struct rivet_ep *ep,
			     const struct rivet_mrecv_buf *b)
{
	struct ibv_wc wc = {
		.status = IBV_WC_WR_FLUSH_ERR, .opcode = IBV_WC_RECV,
		.qp_num = ep->qp ? ep->qp->qp_num : 0,
	};
	struct rivet_wr_ctx ctx;

	rivet_mrecv_ctx(ep, b, &ctx);
	rivet_cq_report_wc(ep->rx_cq, &wc, &ctx);
}

/*
 * Posts the queue's receives from its head (ep->lock held, m->lock not:
 * posting may reap completions) until a multi-receive buffer is on the
 * QP or the queue is empty.  -FI_EAGAIN: the receive queue is full.
 */
static int rivet_mrecv_drain(struct rivet_mrecv *m)
{
	struct rivet_ep *ep = m->ep;
	struct rivet_mrecv_buf *b;
	struct iovec rest;
	ssize_t ret;

	for (;;) {
		rivet_lock_acquire(&m->lock);
		b = m->active ? NULL : m->head;
		if (b && b->multi)	/* before the post: another thread
					 * may reap its completion at once */
			m->active = b;
		rivet_lock_release(&m->lock);
		if (!b)
			return 0;
		if (b->multi) {
			rest.iov_base = (uint8_t *)b->iov[0].iov_base + b->off;
			rest.iov_len = b->len - b->off;
			ret = rivet_ep_post_recv_locked(ep, &rest, b->desc, 1,
							rest.iov_len,
							b->context, b->flags,
							&m->hook);
		} else {
			ret = rivet_ep_post_recv_locked(ep, b->iov, b->desc,
							b->count, b->len,
							b->context, b->flags,
							NULL);
		}
		if (b->multi && ret) {
			rivet_lock_acquire(&m->lock);
			m->active = NULL;
			rivet_lock_release(&m->lock);
		}
		if (ret == -FI_EAGAIN)
			return ret;
		if (b->multi && !ret)
			return 0;
		if (ret)
			rivet_mrecv_fail(ep, b);
		rivet_lock_acquire(&m->lock);
		rivet_mrecv_pop(m);
		rivet_lock_release(&m->lock);
		free(b);
	}
}

/* From a CQ read, outside cq->lock; true: again on a later read. */
static bool rivet_mrecv_run(struct rivet_cq_deferred *d)
{
	struct rivet_mrecv *m = container_of(d, struct rivet_mrecv, def);
	int ret;

	rivet_lock_acquire(&m->ep->lock);
	ret = rivet_mrecv_drain(m);
	rivet_lock_release(&m->ep->lock);
	return ret == -FI_EAGAIN;
}

/* The endpoint closes: its queue goes with it (rivet_mrecv_close). */
static void rivet_mrecv_drop(struct rivet_cq_deferred *d)
{
}

static int rivet_mrecv_check(const struct rivet_ep *ep,
			     const struct iovec *iov, void **desc,
			     size_t count, bool multi, size_t *len_p)
{
	size_t i;

	if (!ep->mrecv || ep->srx)
		return -FI_EINVAL;	/* no FI_MULTI_RECV capability */
	if (rivet_iov_check(iov, count, ep->iov_limit, len_p))
		return -FI_EINVAL;
	if (multi && (count != 1 || !*len_p))
		return -FI_EINVAL;
	for (i = 0; i < count; i++)	/* FI_MR_LOCAL, checked now */
		if (iov[i].iov_len && (!desc || !desc[i]))
			return -FI_EINVAL;
	return 0;
}

ssize_t rivet_mrecv_post(struct rivet_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, void *context,
			 uint64_t flags)
{
	struct rivet_mrecv *m = ep->mrecv;
	struct iovec tmp[RIVET_IOV_LIMIT_MAX];
	struct rivet_mrecv_buf *b;
	bool first;
	size_t len, i;
	ssize_t ret = 0;

	iov = rivet_recv_iov(iov, desc, count, tmp, RIVET_IOV_LIMIT_MAX);
	if (rivet_mrecv_check(ep, iov, desc, count, flags & FI_MULTI_RECV,
			      &len))
		return -FI_EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -FI_ENOMEM;
	b->multi = flags & FI_MULTI_RECV;
	b->context = context;
	b->flags = flags;
	b->count = count;
	b->len = len;
	for (i = 0; i < count; i++) {
		b->iov[i] = iov[i];
		b->desc[i] = desc ? desc[i] : NULL;
	}

	rivet_lock_acquire(&ep->lock);
	rivet_lock_acquire(&m->lock);
	if (atomic_load_explicit(&m->queued, memory_order_relaxed) >=
	    ep->rx_ring.size) {
		rivet_lock_release(&m->lock);
		rivet_lock_release(&ep->lock);
		free(b);
		return -FI_EAGAIN;
	}
	first = !m->head;	/* then nothing is posted or deferred */
	if (m->tail)
		m->tail->next = b;
	else
		m->head = b;
	m->tail = b;
	atomic_fetch_add_explicit(&m->queued, 1, memory_order_release);
	rivet_lock_release(&m->lock);
	if (first) {
		ret = rivet_mrecv_drain(m);
		if (ret == -FI_EAGAIN) {	/* still the head: taken back */
			rivet_lock_acquire(&m->lock);
			free(rivet_mrecv_pop(m));
			rivet_lock_release(&m->lock);
		} else {
			ret = 0;
		}
	}
	rivet_lock_release(&ep->lock);
	return ret;
}

int rivet_mrecv_getopt(struct rivet_ep *ep, void *optval, size_t *optlen)
{
	if (!ep->mrecv)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t)) {
		if (optlen)
			*optlen = sizeof(size_t);
		return -FI_ETOOSMALL;
	}
	*(size_t *)optval = ep->mrecv->min;
	*optlen = sizeof(size_t);
	return 0;
}

int rivet_mrecv_setopt(struct rivet_ep *ep, const void *optval,
		       size_t optlen)
{
	if (!ep->mrecv)
		return -FI_ENOPROTOOPT;
	if (!optval || optlen != sizeof(size_t))
		return -FI_EINVAL;
	rivet_lock_acquire(&ep->mrecv->lock);
	ep->mrecv->min = *(const size_t *)optval;
	rivet_lock_release(&ep->mrecv->lock);
	return 0;
}

int rivet_mrecv_open(struct rivet_ep *ep)
{
	struct rivet_mrecv *m = calloc(1, sizeof(*m));

	if (!m)
		return -FI_ENOMEM;
	m->ep = ep;
	m->hook.wc = rivet_mrecv_wc;
	m->def.owner = ep;
	m->def.run = rivet_mrecv_run;
	m->def.drop = rivet_mrecv_drop;
	m->min = RIVET_MRECV_MIN_DEFAULT;
	atomic_init(&m->queued, 0);
	rivet_lock_construct(&m->lock, ep->lock.on);
	ep->mrecv = m;
	return 0;
}

/* After the QP is gone (its completions reaped, the deferred post
 * dropped): receives still queued are not reported, as posted ones are
 * not. */
void rivet_mrecv_close(struct rivet_ep *ep)
{
	struct rivet_mrecv *m = ep->mrecv;
	struct rivet_mrecv_buf *b;

	if (!m)
		return;
	while ((b = m->head)) {
		m->head = b->next;
		free(b);
	}
	rivet_lock_destruct(&m->lock);
	free(m);
	ep->mrecv = NULL;
}
