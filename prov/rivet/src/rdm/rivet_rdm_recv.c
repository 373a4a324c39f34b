/* SPDX-License-Identifier: MIT */
/*
 * RDM receives: posting (fi_recv, fi_trecv and their variants), FI_PEEK,
 * FI_CLAIM and FI_DISCARD (fi_tagged(3)) and fi_cancel, on a receive side
 * (struct rivet_rdm_rxside): an endpoint's own queue, or a shared receive
 * context's (rivet_rdm_srx.c).  A message is always delivered by the
 * endpoint it came on (u->conn->ep): its CQ and counters report it.
 */
#include <stdlib.h>

#include "rivet_iov.h"
#include "rivet_rdm.h"

static void rivet_rdm_unexp_release(struct rivet_rdm_rxq *q,
				    struct rivet_unexp *u, bool tagged)
{
	rivet_match_msg_remove(tagged ? &q->match_tag : &q->match_msg,
			       &u->me);
	/* a discarded rendezvous still owes its sender a FIN */
	if (u->op == RIVET_OP_RTS && u->conn->state != RIVET_CONN_CLOSED)
		rivet_rndv_send_fin(u->conn, u->rts.send_id, 0, NULL);
	free(u);
}

static void rivet_rdm_unexp_hdr(const struct rivet_unexp *u,
				struct rivet_wire_hdr *hdr)
{
	*hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = u->op, .flags = u->wflags,
		.tag = u->tag, .data = u->data, .len = u->len,
	};
}

/* Hands an unexpected message to a receive; the message is consumed. */
static void rivet_rdm_unexp_deliver(struct rivet_rdm_rxq *q,
				    struct rivet_rx_op *rx,
				    struct rivet_unexp *u, bool tagged)
{
	struct rivet_rdm_ep *ep = u->conn->ep;
	struct rivet_wire_hdr hdr;

	rivet_rdm_unexp_hdr(u, &hdr);
	rivet_match_msg_remove(tagged ? &q->match_tag : &q->match_msg,
			       &u->me);
	if (u->op == RIVET_OP_EAGER)
		rivet_rx_deliver_eager(ep, rx, u->conn, &hdr, u->payload);
	else
		rivet_rndv_start(ep, rx, u->conn, &hdr, &u->rts);
	free(u);
}

/* Inline in the receive path (and in rivet_rdm_claimed). */
static inline __attribute__((always_inline)) struct rivet_rx_op *
rivet_rdm_rx_alloc(struct rivet_rdm_rxq *q, const struct rivet_rdm_req *req,
		   size_t len)
{
	struct rivet_rx_op *rx = q->rx_free;
	size_t i;

	if (rx) {
		q->rx_free = rx->next;
	} else {
		rx = malloc(sizeof(*rx));
		if (!rx)
			return NULL;
	}
	/* every field, the iovs only up to count (nothing reads beyond) */
	rx->next = NULL;
	rx->offset = rx->inflight = 0;
	rx->rndv_out = 0;
	rx->released = rx->posted = false;
	rx->release_owed = rx->cancel_owed = false;
	rx->context = req->context;
	rx->cq_flags = FI_RECV | (req->tagged ? FI_TAGGED : FI_MSG);
	rx->addr = (req->tagged ? q->directed_tag : q->directed_msg) ?
		   req->addr : FI_ADDR_UNSPEC;
	rx->tag = req->tagged ? req->tag : 0;
	rx->ignore = req->tagged ? req->ignore : ~0ULL;
	rx->count = req->count;
	rx->iov[0] = (struct iovec) { 0 };	/* count 0: an empty buffer */
	rx->desc[0] = NULL;
	for (i = 0; i < req->count; i++) {
		rx->iov[i] = req->iov[i];
		rx->desc[i] = req->desc ? req->desc[i] : NULL;
	}
	rx->len = len;
	rx->multi = req->flags & FI_MULTI_RECV;
	rx->report = !q->rx_selective || (req->flags & FI_COMPLETION);
	q->rx_ops_used++;
	return rx;
}

static inline __attribute__((always_inline)) void
rivet_rdm_rx_post(struct rivet_rdm_rxq *q, struct rivet_rx_op *rx)
{
	bool tagged = rx->cq_flags & FI_TAGGED;
	struct rivet_match *m = tagged ? &q->match_tag : &q->match_msg;
	struct rivet_match_msg *u;

	rx->inflight++;		/* delivery may retire rx: keep it alive */
	do {
		/* rx->addr is FI_ADDR_UNSPEC without FI_DIRECTED_RECV */
		u = rivet_match_msg_find(m, rx->addr, rx->tag, rx->ignore);
		if (!u)
			break;
		rivet_rdm_unexp_deliver(q, rx,
					container_of(u, struct rivet_unexp,
						     me), tagged);
	} while (rx->multi && !rx->released);
	rx->inflight--;
	if (rx->released) {
		if (!rx->inflight)
			rivet_rdm_rxq_put(q, rx);
		return;
	}
	rx->posted = true;
	rivet_match_recv_insert(m, &rx->me, rx->addr, rx->tag, rx->ignore);
}

/* ---- FI_PEEK, FI_CLAIM, FI_DISCARD (fi_tagged(3)) ---- */

/* A peek's answer: on the CQ of the endpoint the message came on, or,
 * when none was found, of the side's. */
static void rivet_rdm_peek_comp(const struct rivet_rdm_rxside *side,
				const struct rivet_rdm_req *req,
				const struct rivet_unexp *u, int err)
{
	struct rivet_cq_entry e = {
		.op_context = req->context, .err = err,
		.flags = FI_RECV | (req->tagged ? FI_TAGGED : FI_MSG),
		.src = FI_ADDR_NOTAVAIL,
	};

	if (u) {
		e.len = u->len;
		e.tag = u->tag;
		e.src = u->src;
		if (u->wflags & RIVET_WF_CQ_DATA) {
			e.flags |= FI_REMOTE_CQ_DATA;
			e.data = u->data;
		}
	}
	rivet_rdm_complete(u ? u->conn->ep : side->ep, false, &e, true);
}

/* The message an FI_CLAIM context names: the peek that claimed it left
 * it there with the queue beside it, and its delivery clears both, so
 * a second claim of the same context finds nothing.  The message may be
 * gone meanwhile (a shared context's endpoint closed and took its
 * messages along): it is looked for among the queue's claimed ones
 * before it is read. */
static struct rivet_unexp *rivet_rdm_claim_of(struct rivet_rdm_rxq *q,
					      struct fi_context *ctx,
					      bool tagged)
{
	struct rivet_unexp *u = ctx->internal[0];

	if (!u || ctx->internal[1] != q ||
	    !rivet_match_msg_claimed_has(tagged ? &q->match_tag :
						  &q->match_msg, &u->me) ||
	    u->claim_ctx != ctx)
		return NULL;
	ctx->internal[0] = ctx->internal[1] = NULL;
	return u;
}

static ssize_t rivet_rdm_claimed(const struct rivet_rdm_rxside *side,
				 const struct rivet_rdm_req *req, size_t len)
{
	struct rivet_unexp *u = rivet_rdm_claim_of(side->q, req->context,
						   req->tagged);
	struct rivet_rx_op *rx;

	if (!u)
		return -FI_EINVAL;
	if (req->flags & FI_DISCARD) {
		rivet_rdm_peek_comp(side, req, u, 0);
		rivet_rdm_unexp_release(side->q, u, req->tagged);
		return 0;
	}
	rx = rivet_rdm_rx_alloc(side->q, req, len);
	if (!rx) {
		/* still claimed: the application's to take again */
		((struct fi_context *)req->context)->internal[0] = u;
		((struct fi_context *)req->context)->internal[1] = side->q;
		return -FI_ENOMEM;
	}
	rx->multi = false;
	rivet_rdm_unexp_deliver(side->q, rx, u, req->tagged);
	return 0;
}

static void rivet_rdm_side_progress(const struct rivet_rdm_rxside *side)
{
	size_t i;

	if (!side->srx) {
		rivet_rdm_progress_locked(side->ep);
		return;
	}
	for (i = 0; i < side->srx->nmembers; i++)
		rivet_rdm_progress_locked(side->srx->members[i]);
}

static ssize_t rivet_rdm_peek(const struct rivet_rdm_rxside *side,
			      const struct rivet_rdm_req *req, size_t len)
{
	struct rivet_rdm_rxq *q = side->q;
	struct rivet_match *m = req->tagged ? &q->match_tag : &q->match_msg;
	struct fi_context *ctx = req->context;
	struct rivet_match_msg *found;
	struct rivet_unexp *u;

	/* fi_tagged(3): a claim needs a context to remember the message */
	if ((req->flags & FI_CLAIM) && !ctx)
		return -FI_EINVAL;
	if (!(req->flags & FI_PEEK))
		return rivet_rdm_claimed(side, req, len);
	rivet_rdm_side_progress(side);
	found = rivet_match_msg_find(m, (req->tagged ? q->directed_tag :
						       q->directed_msg) ?
					req->addr : FI_ADDR_UNSPEC,
				     req->tagged ? req->tag : 0,
				     req->tagged ? req->ignore : ~0ULL);
	u = container_of(found, struct rivet_unexp, me);
	if (!found) {
		rivet_rdm_peek_comp(side, req, NULL, FI_ENOMSG);
		return 0;
	}
	rivet_rdm_peek_comp(side, req, u, 0);
	if (req->flags & FI_DISCARD) {
		rivet_rdm_unexp_release(q, u, req->tagged);
	} else if (req->flags & FI_CLAIM) {
		rivet_match_msg_claim(m, &u->me);
		u->claim_ctx = ctx;
		ctx->internal[0] = u;
		ctx->internal[1] = q;
	}
	return 0;
}

/* ---- sources that the AV took after their messages came ---- */

static void rivet_rdm_resrc_in(struct rivet_match *m, struct rivet_conn *conn)
{
	struct rivet_match_msg *lists[2] = { m->msgs, m->claimed }, *me;
	struct rivet_unexp *u;
	int i;

	for (i = 0; i < 2; i++)
		DL_FOREACH(lists[i], me) {
			u = container_of(me, struct rivet_unexp, me);
			if (u->conn != conn || u->src != FI_ADDR_NOTAVAIL)
				continue;
			u->src = conn->addr;
			rivet_match_msg_set_src(m, me, conn->addr);
		}
}

void rivet_rdm_rxq_resrc(struct rivet_conn *conn)
{
	struct rivet_rdm_rxq *q = conn->ep->rxq;

	rivet_rdm_resrc_in(&q->match_tag, conn);
	rivet_rdm_resrc_in(&q->match_msg, conn);
}

/* Before a receive searches: connections whose peer was not in the AV
 * when their messages came look again, when an AV of the domain took an
 * address since the last look (rivet_conn_src re-files their messages). */
static void rivet_rdm_rxq_resolve(const struct rivet_rdm_rxside *side)
{
	struct rivet_rdm_rxq *q = side->q;
	struct rivet_rdm_ep *ep = side->srx ? NULL : side->ep;
	struct rivet_domain *dom = side->srx ? side->srx->domain :
					       side->ep->domain;
	size_t i, j, n = side->srx ? side->srx->nmembers : 1;
	uint64_t gen;

	if (!q->match_tag.msgs && !q->match_tag.claimed &&
	    !q->match_msg.msgs && !q->match_msg.claimed) {
		q->unresolved = false;
		return;
	}
	gen = atomic_load(&dom->av_gen);
	if (gen == q->resolved_gen)
		return;
	q->resolved_gen = gen;
	for (i = 0; i < n; i++) {
		if (side->srx)
			ep = side->srx->members[i];
		for (j = 0; j < ep->nconns; j++)
			rivet_conn_src(ep->conns[j]);
	}
}

/* ---- posting ---- */

/* Under the side's lock; inline in rivet_rdm_recv, the receive path of
 * every message (rivet_rdm_recv_on: shared contexts). */
static inline __attribute__((always_inline)) ssize_t
rivet_rdm_recv_side(const struct rivet_rdm_rxside *side,
		    const struct rivet_rdm_req *req)
{
	struct rivet_rx_op *rx;
	size_t len;

	if (rivet_iov_check(req->iov, req->count, RIVET_RDM_IOV_LIMIT, &len) ||
	    ((req->flags & FI_MULTI_RECV) && req->count != 1))
		return -FI_EINVAL;
	if (__builtin_expect(side->q->unresolved, 0))
		rivet_rdm_rxq_resolve(side);
	if (req->flags & (FI_PEEK | FI_CLAIM))
		return rivet_rdm_peek(side, req, len);
	if (side->q->rx_ops_used >= side->q->rx_size)
		return -FI_EAGAIN;
	if (req->tagged)
		rivet_rdm_unsolo(side->q);
	rx = rivet_rdm_rx_alloc(side->q, req, len);
	if (!rx)
		return -FI_ENOMEM;
	rivet_rdm_rx_post(side->q, rx);
	return 0;
}

ssize_t rivet_rdm_recv_on(const struct rivet_rdm_rxside *side,
			  const struct rivet_rdm_req *req)
{
	return rivet_rdm_recv_side(side, req);
}

ssize_t rivet_rdm_recv(struct rivet_rdm_ep *ep,
		       const struct rivet_rdm_req *req)
{
	struct rivet_rdm_rxside side = { .q = ep->rxq, .ep = ep,
					 .srx = ep->srx };
	ssize_t ret;

	rivet_rdm_lock(ep);
	ret = ep->enabled ? rivet_rdm_recv_side(&side, req) : -FI_EOPBADSTATE;
	rivet_rdm_unlock(ep);
	return ret;
}

/* The cold parts of rivet_rdm_trecv1, out of its frame. */
static __attribute__((noinline)) struct rivet_rx_op *rivet_rdm_rx_new(void)
{
	/* as a free one: next (taken as the free list's rest), offset,
	 * inflight 0, multi, released false */
	return calloc(1, sizeof(struct rivet_rx_op));
}

static __attribute__((noinline)) void
rivet_rdm_rx_post_any(struct rivet_rdm_rxq *q, struct rivet_rx_op *rx)
{
	rivet_rdm_rx_post(q, rx);
}

void rivet_rdm_unsolo_any(struct rivet_rdm_rxq *q)
{
	struct rivet_rx_op *rx = q->solo;

	q->solo = NULL;
	rivet_match_recv_insert(&q->match_tag, &rx->me, rx->addr, rx->tag,
				rx->ignore);
}

/* rivet_rdm_trecv1's receive when it is not the only one: filed behind
 * the one before it. */
static __attribute__((noinline)) void
rivet_rdm_rx_file(struct rivet_rdm_rxq *q, struct rivet_rx_op *rx)
{
	rivet_rdm_unsolo(q);
	rivet_match_recv_insert(&q->match_tag, &rx->me, rx->addr, rx->tag,
				rx->ignore);
}

/* A one-buffer receive's op, taken off the free list (rivet_rdm_trecv1
 * and its fast path): what a free op holds as it should (struct
 * rivet_rx_op) is left, and len, which only FI_MULTI_RECV reads. */
static inline __attribute__((always_inline)) void
rivet_rdm_rx_fill1(struct rivet_rdm_rxq *q, struct rivet_rx_op *rx,
		   void *buf, size_t len, void *desc, fi_addr_t addr,
		   uint64_t tag, uint64_t ignore, void *context, bool report)
{
	q->rx_free = rx->next;
	q->rx_ops_used++;
	rx->posted = false;
	rx->context = context;
	rx->cq_flags = FI_RECV | FI_TAGGED;
	rx->addr = addr;
	rx->tag = tag;
	rx->ignore = ignore;
	rx->count = 1;
	rx->iov[0] = (struct iovec) { .iov_base = buf, .iov_len = len };
	rx->desc[0] = desc;
	rx->report = report;
}

/* rivet_rdm_trecv1 in every case (its fast path's fallback). */
static __attribute__((noinline)) ssize_t
rivet_rdm_trecv1_any(struct rivet_rdm_ep *ep, void *buf, size_t len,
		     void *desc, fi_addr_t src, uint64_t tag, uint64_t ignore,
		     void *context)
{
	struct rivet_rdm_rxq *q = ep->rxq;
	struct rivet_rx_op *rx;
	ssize_t ret = 0;

	if (len && !buf)
		return -FI_EINVAL;
	rivet_rdm_lock(ep);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	rivet_rdm_unsolo(q);
	if (__builtin_expect(q->unresolved, 0)) {
		struct rivet_rdm_rxside side = { .q = q, .ep = ep };

		rivet_rdm_rxq_resolve(&side);
	}
	if (q->rx_ops_used >= q->rx_size) {
		ret = -FI_EAGAIN;
		goto out;
	}
	rx = q->rx_free ? q->rx_free : rivet_rdm_rx_new();
	if (!rx) {
		ret = -FI_ENOMEM;
		goto out;
	}
	rivet_rdm_rx_fill1(q, rx, buf, len, desc,
			   q->directed_tag ? src : FI_ADDR_UNSPEC, tag, ignore,
			   context, !q->rx_selective ||
				    (ep->rx_op_flags & FI_COMPLETION));
	if (q->match_tag.msgs) {	/* messages wait: the general post */
		rivet_rdm_rx_post_any(q, rx);
		goto out;
	}
	rx->posted = true;
	if (!q->match_tag.nposted)	/* no solo: unfiled above */
		q->solo = rx;
	else
		rivet_match_recv_insert(&q->match_tag, &rx->me, rx->addr, tag,
					ignore);
out:
	rivet_rdm_unlock(ep);
	return ret;
}

/* fi_trecv of one buffer on an endpoint of its own queue, whose op_flags
 * hold nothing that changes a receive, with no lock (ep->rx_plain): what
 * rivet_rdm_recv does, without the request and its iov array, and
 * posted at once when no message waits: as the queue's solo receive
 * when no other is posted (the common case: no call), else filed
 * (rivet_rdm_rx_file).  rivet_rdm_trecv1_any takes the rest (no free
 * op, a message waiting). */
static inline __attribute__((always_inline)) ssize_t
rivet_rdm_trecv1(struct rivet_rdm_ep *ep, void *buf, size_t len, void *desc,
		 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	struct rivet_rdm_rxq *q = ep->rxq;
	struct rivet_rx_op *rx = q->rx_free;
	fi_addr_t addr = q->directed_tag ? src : FI_ADDR_UNSPEC;

	if (__builtin_expect(q->unresolved || !rx ||
			     q->rx_ops_used >= q->rx_size ||
			     q->match_tag.msgs || (len && !buf), 0))
		return rivet_rdm_trecv1_any(ep, buf, len, desc, src, tag,
					    ignore, context);
	rivet_rdm_rx_fill1(q, rx, buf, len, desc, addr, tag, ignore, context,
			   ep->rx_report);
	rx->posted = true;
	if (__builtin_expect(!q->solo && !q->match_tag.nposted, 1))
		q->solo = rx;
	else
		rivet_rdm_rx_file(q, rx);
	return 0;
}

/* fi_trecv: an endpoint's own receive, of no special kind, takes the
 * one-buffer path (inline) when it needs no lock, else
 * rivet_rdm_trecv1_any; the rest rivet_rdm_trecv_any (tail calls). */
ssize_t rivet_rdm_trecv(struct fid_ep *fid, void *buf, size_t len, void *desc,
			fi_addr_t src, uint64_t tag, uint64_t ignore,
			void *context)
{
	struct rivet_rdm_ep *ep = to_rrdm(fid);

	if (__builtin_expect(ep->rx_plain, 1))
		return rivet_rdm_trecv1(ep, buf, len, desc, src, tag, ignore,
					context);
	if (fid->fid.fclass == FI_CLASS_EP && !ep->srx &&
	    !(ep->rx_op_flags & RIVET_RDM_RX_SPECIAL))
		return rivet_rdm_trecv1_any(ep, buf, len, desc, src, tag,
					    ignore, context);
	return rivet_rdm_trecv_any(fid, buf, len, desc, src, tag, ignore,
				   context);
}

/* ---- the queue ---- */

static void rivet_rdm_ep_free_recv(struct rivet_match_recv *r, void *arg)
{
	(void)arg;
	free(container_of(r, struct rivet_rx_op, me));
}

/* Frees the receives and messages still held, then the engine's own. */
static void rivet_rdm_ep_drain_match(struct rivet_match *m)
{
	struct rivet_match_msg *u;

	rivet_match_recv_drain(m, rivet_rdm_ep_free_recv, NULL);
	while ((u = rivet_match_msg_any(m))) {
		rivet_match_msg_remove(m, u);
		free(container_of(u, struct rivet_unexp, me));
	}
	rivet_match_destruct(m);
}

/*
 * Which receives name their source (fi_getinfo(3)): FI_DIRECTED_RECV
 * both kinds; from API 2.0, FI_TAGGED_DIRECTED_RECV tagged ones only, and
 * FI_EXACT_DIRECTED_RECV, a promise never to pass FI_ADDR_UNSPEC, either
 * kind alone or the tagged kind with FI_TAGGED_DIRECTED_RECV.
 */
void rivet_rdm_rxq_construct(struct rivet_rdm_rxq *q, size_t rx_size,
			     uint64_t caps, uint32_t version)
{
	uint64_t v2 = rivet_api_v2(version) ? caps : 0;
	bool exact = v2 & RIVET_CAP_EXACT_DIRECTED_RECV;
	bool tagged_only = v2 & RIVET_CAP_TAGGED_DIRECTED_RECV;


	rivet_match_construct(&q->match_msg);
	rivet_match_construct(&q->match_tag);
	q->match_msg.list_max = g_rivet_params.match_list_max;
	q->match_tag.list_max = g_rivet_params.match_list_max;
	q->solo = NULL;
	q->rx_free = NULL;
	q->rx_ops_used = 0;
	q->rx_size = rx_size;
	q->directed_msg = (caps & FI_DIRECTED_RECV) || (exact && !tagged_only);
	q->directed_tag = (caps & FI_DIRECTED_RECV) || exact || tagged_only;
	q->rx_selective = false;
	q->unresolved = false;
	q->resolved_gen = 0;
}

void rivet_rdm_rxq_destruct(struct rivet_rdm_rxq *q)
{
	struct rivet_rx_op *rx;

	rivet_rdm_unsolo(q);
	rivet_rdm_ep_drain_match(&q->match_msg);
	rivet_rdm_ep_drain_match(&q->match_tag);
	while ((rx = q->rx_free)) {
		q->rx_free = rx->next;
		free(rx);
	}
}

/* ---- fi_cancel ---- */

static bool rivet_rdm_has_ctx(const struct rivet_match_recv *r, void *context)
{
	return container_of(r, struct rivet_rx_op, me)->context == context;
}

static struct rivet_rx_op *rivet_rdm_find_ctx(struct rivet_match *m,
					      void *context)
{
	struct rivet_match_recv *r;

	r = rivet_match_recv_search(m, rivet_rdm_has_ctx, context);
	return r ? container_of(r, struct rivet_rx_op, me) : NULL;
}

/* Under the side's lock: the cancelled receive is reported by the
 * side's endpoint. */
ssize_t rivet_rdm_cancel_on(const struct rivet_rdm_rxside *side,
			    void *context)
{
	struct rivet_cq_entry e = { .err = FI_ECANCELED,
				    .src = FI_ADDR_NOTAVAIL };
	struct rivet_rx_op *rx;

	rivet_rdm_unsolo(side->q);
	rx = rivet_rdm_find_ctx(&side->q->match_tag, context);
	if (!rx)
		rx = rivet_rdm_find_ctx(&side->q->match_msg, context);
	if (!rx)
		return -FI_ENOENT;
	if (rx->multi && rx->rndv_out) {
		/* rendezvous still write into the buffer: it is given back
		 * (FI_ECANCELED, FI_MULTI_RECV) after the last of them */
		rx->cancel_owed = true;
		rivet_rx_retire(side->ep, rx);
		return 0;
	}
	e.op_context = rx->context;
	e.flags = rx->cq_flags;
	if (rx->multi)
		e.flags |= FI_MULTI_RECV;
	rivet_rdm_complete(side->ep, false, &e, true);
	rivet_rx_retire(side->ep, rx);
	return 0;
}

ssize_t rivet_rdm_cancel(struct rivet_rdm_ep *ep, void *context)
{
	struct rivet_rdm_rxside side = { .q = ep->rxq, .ep = ep,
					 .srx = ep->srx };
	ssize_t ret;

	rivet_rdm_lock(ep);
	ret = rivet_rdm_cancel_on(&side, context);
	if (ret == -FI_ENOENT)
		ret = rivet_rdm_cancel_tx(ep, context);
	rivet_rdm_unlock(ep);
	return ret;
}
