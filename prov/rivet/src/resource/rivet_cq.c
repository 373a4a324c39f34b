/* SPDX-License-Identifier: MIT */
/*
 * Completion queues: a verbs CQ whose work completions are converted into a
 * software ring of libfabric completions and an error FIFO; read (which
 * first drives the progress sources), the deferred work of completion
 * hooks, and the hidden CQs of endpoints with none bound.  Writing and
 * reading completions is in rivet_cq_read.c, blocking and readerr in
 * rivet_cq_wait.c, the words of errors in rivet_cq_err.c.
 */
#include <limits.h>
#include <stdlib.h>
#include <arpa/inet.h>

#include "rivet.h"
#include "rivet_cntr.h"
#include "rivet_set.h"

#define RIVET_CQ_POLL_BATCH 16

static struct fi_ops g_rivet_cq_fi_ops;
static struct fi_ops_cq g_rivet_cq_ops;

/* ---- the software FIFOs (ring and errs), all under cq->lock ---- */

static void rivet_cq_fifo_put(struct rivet_cq_entry *q, size_t size,
			      size_t head, size_t *count,
			      const struct rivet_cq_entry *e, uint64_t seq)
{
	size_t i = head + *count;

	if (i >= size)
		i -= size;
	q[i] = *e;
	q[i].seq = seq;
	(*count)++;
}

void rivet_cq_put(struct rivet_cq *cq, const struct rivet_cq_entry *e)
{
	if (e->err)
		rivet_cq_fifo_put(cq->errs, cq->errs_size, cq->errs_head,
				  &cq->errs_count, e, cq->seq++);
	else
		rivet_cq_fifo_put(cq->ring, cq->ring_size, cq->head,
				  &cq->count, e, cq->seq++);
}

/* Drops the entries of one endpoint, keeping the others in order. */
static void rivet_cq_fifo_filter(struct rivet_cq_entry *q, size_t size,
				 size_t head, size_t *count,
				 const struct rivet_ep *ep)
{
	size_t i, rd = head, wr = head, kept = 0;

	for (i = 0; i < *count; i++) {
		if (q[rd].ep != ep) {
			q[wr] = q[rd];
			if (++wr == size)
				wr = 0;
			kept++;
		}
		if (++rd == size)
			rd = 0;
	}
	*count = kept;
}

static int rivet_cq_fifo_grow(struct rivet_cq_entry **q_p, size_t *size_p,
			      size_t *head_p, size_t count)
{
	struct rivet_cq_entry *q = calloc(*size_p * 2, sizeof(*q));
	size_t i, rd = *head_p;

	if (!q)
		return -FI_ENOMEM;
	for (i = 0; i < count; i++) {
		q[i] = (*q_p)[rd];
		if (++rd == *size_p)
			rd = 0;
	}
	free(*q_p);
	*q_p = q;
	*size_p *= 2;
	*head_p = 0;
	return 0;
}

/* Work completions the FIFOs can take now; a hidden CQ keeps nothing. */
static int rivet_cq_room(const struct rivet_cq *cq)
{
	size_t room;

	if (cq->hidden)
		return RIVET_CQ_POLL_BATCH;
	room = RIVET_MIN(cq->ring_size - cq->count,
			 cq->errs_size - cq->errs_count);
	return (int)RIVET_MIN(room, (size_t)RIVET_CQ_POLL_BATCH);
}

/* ---- progress: ibv_wc -> rivet_cq_entry ---- */

static void rivet_cq_wc_fill(const struct rivet_cq *cq,
			     const struct ibv_wc *wc,
			     const struct rivet_wr_ctx *ctx,
			     struct rivet_cq_entry *e)
{
	bool rx = ctx->rx;

	*e = (struct rivet_cq_entry) {
		.ep = ctx->ep, .op_context = ctx->context,
		.flags = ctx->flags, .buf = rx ? ctx->buf : NULL,
		.src = FI_ADDR_NOTAVAIL,
	};
	if (wc->status != IBV_WC_SUCCESS) {
		e->err = rivet_wc_status_to_fi(wc->status);
		if (!rx && wc->status == IBV_WC_LOC_LEN_ERR)
			e->err = FI_EMSGSIZE;
		e->prov_errno = wc->status;
		return;
	}
	/* a UD receive: the GRH is not the application's, and a datagram
	 * longer than the buffer landed partly in the endpoint's tail */
	if (rx && wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		e->len = wc->byte_len;
	} else if (rx && rivet_ud_recv_len(wc->byte_len, ctx->hdr_len,
					   ctx->len, &e->len, &e->olen)) {
		e->err = FI_ETRUNC;
		e->prov_errno = RIVET_PERR_TRUNC;
		return;
	}
	if (rx && ctx->source)
		e->src = ctx->source->resolve(ctx->source, ctx, wc);
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		/* a remote write consumed the receive: not a message */
		e->flags = FI_RMA | FI_REMOTE_WRITE;
		e->buf = NULL;
		if (!cq->domain->rx_cq_data)
			e->op_context = NULL;
	}
	if (wc->wc_flags & IBV_WC_WITH_IMM) {
		e->flags |= FI_REMOTE_CQ_DATA;
		e->data = ntohl(wc->imm_data);
	}
}

/* A completion's entry (an error entry on failure) and its counters;
 * cq->lock held. */
void rivet_cq_report_locked(struct rivet_cq *cq, const struct ibv_wc *wc,
			    const struct rivet_wr_ctx *ctx)
{
	struct rivet_cq_entry e;

	rivet_cq_wc_fill(cq, wc, ctx, &e);
	if (e.err) {
		RIVET_DBG(CQ, "%s on qp 0x%x\n",
			  rivet_wc_status_str(wc->status), wc->qp_num);
		if (!cq->hidden)
			rivet_cq_put(cq, &e);
		rivet_cntr_inc_err(ctx->cntr);
	} else if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		/* remote CQ data is always reported (fi_cq(3)) */
		if (!cq->hidden)
			rivet_cq_put(cq, &e);
		rivet_cntr_inc(ctx->imm_cntr);
	} else {
		if (ctx->report && !cq->hidden)
			rivet_cq_put(cq, &e);
		rivet_cntr_inc(ctx->cntr);
	}
}

static void rivet_cq_wc_process(struct rivet_cq *cq, const struct ibv_wc *wc)
{
	struct rivet_wr_ctx *ctx = (struct rivet_wr_ctx *)(uintptr_t)wc->wr_id;
	struct rivet_wr_ctx shared;

	if (ctx->srx) {		/* the endpoint that took it reports it */
		if (!ctx->srx->wc_ops->route(ctx, wc, &shared))
			return;
		ctx = &shared;
	}
	if (ctx->hook) {	/* its owner reports it (an atomic's step) */
		ctx->hook->wc(ctx->hook, cq, ctx, wc);
		rivet_wr_ring_retire(ctx->ring);
		cq->credits++;
		return;
	}
	rivet_cq_report_locked(cq, wc, ctx);
	if (ctx->srx) {		/* the context's slot, not a ring's */
		ctx->srx->wc_ops->done(ctx);
		return;
	}
	/* the slot belongs to the poster again from here on */
	rivet_wr_ring_retire(ctx->ring);
	cq->credits++;
}

/* A DGRAM context's datagram that waited for a receive, reported as it
 * would have been when it came (from the receive's post). */
void rivet_cq_report_wc(struct rivet_cq *cq, const struct ibv_wc *wc,
			const struct rivet_wr_ctx *ctx)
{
	rivet_lock_acquire(&cq->lock);
	if (cq->hidden || (cq->count < cq->ring_size &&
			   cq->errs_count < cq->errs_size) ||
	    !rivet_cq_grow_locked(cq))
		rivet_cq_report_locked(cq, wc, ctx);
	rivet_lock_release(&cq->lock);
	/* no work completion wakes a thread asleep on this CQ for it */
	if (cq->wait.epfd >= 0)
		rivet_wait_signal(&cq->wait);
}

/* Leaves work completions in the verbs CQ when the FIFOs are full. */
int rivet_cq_poll_locked(struct rivet_cq *cq)
{
	struct ibv_wc wcs[RIVET_CQ_POLL_BATCH];
	int room, n, i, total = 0;

	RIVET_HELD(&cq->lock);
	if (!cq->hidden &&
	    !atomic_load_explicit(&cq->msg_eps, memory_order_relaxed))
		return 0;

	for (;;) {
		room = rivet_cq_room(cq);
		if (!room)
			break;
		n = ibv_poll_cq(cq->ibv_cq, room, wcs);
		if (n < 0) {
			RIVET_WARN(CQ, "ibv_poll_cq failed (%d)\n", n);
			return total ? total : -FI_EIO;
		}
		for (i = 0; i < n; i++)
			rivet_cq_wc_process(cq, &wcs[i]);
		total += n;
		/* bounded: one CQ's worth per call */
		if (n < room || total >= cq->ibv_cq->cqe)
			break;
	}
	return total;
}

int rivet_cq_progress(struct rivet_cq *cq)
{
	int ret;

	rivet_progress_set_run(&cq->srcs);
	rivet_lock_acquire(&cq->lock);
	ret = rivet_cq_poll_locked(cq);
	rivet_lock_release(&cq->lock);
	return ret;
}

int rivet_cq_grow_locked(struct rivet_cq *cq)
{
	int ret = 0;

	RIVET_HELD(&cq->lock);
	if (cq->count == cq->ring_size)
		ret = rivet_cq_fifo_grow(&cq->ring, &cq->ring_size, &cq->head,
					 cq->count);
	if (!ret && cq->errs_count == cq->errs_size)
		ret = rivet_cq_fifo_grow(&cq->errs, &cq->errs_size,
					 &cq->errs_head, cq->errs_count);
	if (ret)
		RIVET_WARN(CQ, "out of memory: completions left in the CQ\n");
	return ret;
}

/* ---- deferred work of completion hooks ---- */

/* Runs what hooks left, outside cq->lock; one runner at a time.  What
 * cannot run yet goes back on the list, in its order. */
void rivet_cq_run_deferred(struct rivet_cq *cq)
{
	struct rivet_cq_deferred *list, *d, *later = NULL;

	rivet_lock_acquire(&cq->lock);
	if (cq->deferred_running) {
		rivet_lock_release(&cq->lock);
		return;
	}
	list = cq->deferred;
	cq->deferred = NULL;
	cq->deferred_running = true;
	rivet_lock_release(&cq->lock);

	while ((d = list)) {
		list = d->next;
		if (d->run(d)) {
			d->next = later;
			later = d;
		}
	}

	rivet_lock_acquire(&cq->lock);
	while ((d = later)) {
		later = d->next;
		rivet_cq_defer_locked(cq, d);
	}
	cq->deferred_running = false;
	rivet_lock_release(&cq->lock);
}

/* Under cq->lock: a closing endpoint's deferred work is dropped. */
static void rivet_cq_deferred_purge(struct rivet_cq *cq,
				    const struct rivet_ep *ep)
{
	struct rivet_cq_deferred **pp = &cq->deferred, *d;

	while ((d = *pp)) {
		if (d->owner == ep) {
			*pp = d->next;
			d->drop(d);
		} else {
			pp = &d->next;
		}
	}
}

/* Close path: every work completion still in the verbs CQ may point into
 * the closing endpoint's rings, so all of them are taken in. */
void rivet_cq_purge_ep(struct rivet_cq *cq, struct rivet_ep *ep)
{
	int n;

	rivet_lock_acquire(&cq->lock);
	do {
		if (!rivet_cq_room(cq) && rivet_cq_grow_locked(cq))
			break;
		n = rivet_cq_poll_locked(cq);
	} while (n > 0);
	rivet_cq_deferred_purge(cq, ep);
	if (!cq->hidden) {
		rivet_cq_fifo_filter(cq->ring, cq->ring_size, cq->head,
				     &cq->count, ep);
		rivet_cq_fifo_filter(cq->errs, cq->errs_size, cq->errs_head,
				     &cq->errs_count, ep);
	}
	rivet_lock_release(&cq->lock);
}

bool rivet_cq_take_credit(struct rivet_cq *cq)
{
	bool ok;

	rivet_lock_acquire(&cq->lock);
	ok = cq->credits > 0;
	if (ok)
		cq->credits--;
	rivet_lock_release(&cq->lock);
	return ok;
}

int rivet_cq_grow(struct rivet_cq *cq, size_t n)
{
	int ret;

	rivet_lock_acquire(&cq->lock);
	ret = rivet_verbs_cq_resize(cq->ibv_cq, cq->ibv_cq->cqe + (int)n);
	rivet_lock_release(&cq->lock);
	return ret;
}

void rivet_cq_return_credit(struct rivet_cq *cq)
{
	rivet_lock_acquire(&cq->lock);
	cq->credits++;
	rivet_lock_release(&cq->lock);
}

/* ---- open and close ---- */

static int rivet_cq_attr_check(const struct fi_cq_attr *attr)
{
	switch (attr->format) {
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_CONTEXT:
	case FI_CQ_FORMAT_MSG:
	case FI_CQ_FORMAT_DATA:
	case FI_CQ_FORMAT_TAGGED:
		break;
	default:
		return -FI_ENOSYS;
	}
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
		return 0;
	case FI_WAIT_SET:
		if (!attr->wait_set)
			return -FI_EINVAL;
		break;
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		break;
	default:
		return -FI_ENOSYS;
	}
	/* FI_CQ_COND_THRESHOLD is only an optimization: we wake earlier */
	if (attr->wait_cond != FI_CQ_COND_NONE &&
	    attr->wait_cond != FI_CQ_COND_THRESHOLD)
		return -FI_EINVAL;
	return 0;
}

/* Threading levels that serialize completion objects need no CQ lock;
 * hidden CQs are progressed by any counter, so only FI_THREAD_DOMAIN. */
static bool rivet_cq_lock_needed(const struct rivet_domain *domain,
				 bool hidden)
{
	if (domain->threading == FI_THREAD_DOMAIN)
		return false;
	return hidden || domain->threading != FI_THREAD_COMPLETION;
}

/* Every CQ gets a channel, so counters fed by any CQ can sleep. */
static int rivet_cq_channel_create(struct rivet_cq *cq)
{
	int ret;

	ret = rivet_verbs_channel_create(cq->domain->dev->ctx, &cq->channel);
	if (ret)
		return ret;
	ret = rivet_wait_nonblock(cq->channel->fd);
	if (ret) {
		rivet_verbs_channel_destroy(cq->channel);
		cq->channel = NULL;
	}
	return ret;
}

/* The ring holds at least what the verbs CQ can, errors as much again. */
static int rivet_cq_queues_create(struct rivet_cq *cq, size_t size)
{
	const struct rivet_dev *dev = cq->domain->dev;
	int cqe = (int)RIVET_MIN(size, (size_t)dev->attr.max_cqe), ret;

	ret = rivet_verbs_cq_create(dev->ctx, cqe, cq, cq->channel,
				    &cq->ibv_cq);
	if (ret)
		return ret;
	cq->credits = (size_t)cq->ibv_cq->cqe;
	if (cq->hidden)
		return 0;
	size = RIVET_MAX(size, (size_t)cq->ibv_cq->cqe);
	cq->ring = calloc(size, sizeof(*cq->ring));
	cq->errs = calloc(size, sizeof(*cq->errs));
	if (!cq->ring || !cq->errs) {
		free(cq->ring);
		free(cq->errs);
		rivet_verbs_cq_destroy(cq->ibv_cq);
		return -FI_ENOMEM;
	}
	cq->ring_size = cq->errs_size = size;
	return 0;
}

static int rivet_cq_construct(struct rivet_cq *cq, struct rivet_domain *domain,
			      size_t size, bool waitable)
{
	int ret;

	cq->domain = domain;
	cq->api_version = domain->fabric->api_version;
	rivet_progress_set_construct(&cq->srcs,
				     domain->threading != FI_THREAD_DOMAIN);
	cq->wait.epfd = cq->wait.efd = -1;
	atomic_init(&cq->refcnt, 0);
	atomic_init(&cq->signaled, false);
	rivet_lock_construct(&cq->lock, rivet_cq_lock_needed(domain,
							     cq->hidden));
	ret = rivet_cq_channel_create(cq);
	if (ret)
		goto err_lock;
	if (waitable) {
		ret = rivet_wait_construct(&cq->wait);
		if (!ret)
			ret = rivet_wait_add_fd(&cq->wait, cq->channel->fd);
		if (ret)
			goto err_wait;
	}
	ret = rivet_cq_queues_create(cq, size ? size : g_rivet_params.cq_size);
	if (ret)
		goto err_wait;
	return 0;

err_wait:
	rivet_wait_destruct(&cq->wait);
	rivet_verbs_channel_destroy(cq->channel);
err_lock:
	rivet_lock_destruct(&cq->lock);
	return ret;
}

static int rivet_cq_destruct(struct rivet_cq *cq)
{
	int ret;

	rivet_cq_ack_events(cq);
	ret = rivet_verbs_cq_destroy(cq->ibv_cq);
	if (ret)
		return ret;
	rivet_wait_destruct(&cq->wait);
	rivet_verbs_channel_destroy(cq->channel);
	rivet_progress_set_destruct(&cq->srcs);
	free(cq->ring);
	free(cq->errs);
	rivet_lock_destruct(&cq->lock);
	return 0;
}

int rivet_cq_open(struct fid_domain *domain_fid, struct fi_cq_attr *attr,
		  struct fid_cq **cq_p, void *context)
{
	struct rivet_domain *domain = to_rdomain(domain_fid);
	struct rivet_cq *cq;
	int ret;

	if (!attr || !cq_p)
		return -FI_EINVAL;
	ret = rivet_cq_attr_check(attr);
	if (ret)
		return ret;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->attr = *attr;
	if (!cq->attr.size)
		cq->attr.size = g_rivet_params.cq_size;
	if (cq->attr.format == FI_CQ_FORMAT_UNSPEC)
		cq->attr.format = FI_CQ_FORMAT_CONTEXT;
	if (cq->attr.wait_obj == FI_WAIT_UNSPEC)
		cq->attr.wait_obj = FI_WAIT_FD;
	ret = rivet_cq_construct(cq, domain, cq->attr.size,
				 cq->attr.wait_obj != FI_WAIT_NONE);
	if (ret) {
		free(cq);
		return ret;
	}
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &g_rivet_cq_fi_ops;
	cq->cq_fid.ops = &g_rivet_cq_ops;
	if (cq->attr.wait_obj == FI_WAIT_SET) {
		ret = rivet_waitset_attach(cq->attr.wait_set, domain->fabric,
					   &cq->cq_fid.fid, &cq->wait);
		if (ret) {
			rivet_cq_destruct(cq);
			free(cq);
			return ret;
		}
	}
	atomic_fetch_add(&domain->refcnt, 1);
	*cq_p = &cq->cq_fid;
	return 0;
}

static int rivet_cq_close(struct fid *fid)
{
	struct rivet_cq *cq = to_rcq(container_of(fid, struct fid_cq, fid));
	struct rivet_domain *domain = cq->domain;
	int ret;

	if (atomic_load(&cq->refcnt))
		return -FI_EBUSY;
	if (cq->attr.wait_obj == FI_WAIT_SET)
		rivet_waitset_detach(cq->attr.wait_set, fid, &cq->wait);
	ret = rivet_cq_destruct(cq);
	if (ret)
		return ret;
	atomic_fetch_sub(&domain->refcnt, 1);
	free(cq);
	return 0;
}

/* The endpoint that owns a hidden CQ holds the domain reference. */
int rivet_cq_open_hidden(struct rivet_domain *domain, size_t size,
			 struct rivet_cq **cq_p)
{
	struct rivet_cq *cq = calloc(1, sizeof(*cq));
	int ret;

	if (!cq)
		return -FI_ENOMEM;
	cq->hidden = true;
	cq->attr.size = size ? size : g_rivet_params.cq_size;
	cq->attr.format = FI_CQ_FORMAT_CONTEXT;
	cq->attr.wait_obj = FI_WAIT_NONE;
	ret = rivet_cq_construct(cq, domain, cq->attr.size, false);
	if (ret) {
		free(cq);
		return ret;
	}
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	*cq_p = cq;
	return 0;
}

void rivet_cq_close_hidden(struct rivet_cq *cq)
{
	if (rivet_cq_destruct(cq))
		return;		/* a QP still uses it: leak rather than crash */
	free(cq);
}

static struct fi_ops g_rivet_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_cq_close,
	.bind = rivet_no_bind,
	.control = rivet_cq_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_cq g_rivet_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = rivet_cq_read,
	.readfrom = rivet_cq_readfrom,
	.readerr = rivet_cq_readerr,
	.sread = rivet_cq_sread,
	.sreadfrom = rivet_cq_sreadfrom,
	.signal = rivet_cq_signal,
	.strerror = rivet_cq_strerror,
};
