/* SPDX-License-Identifier: MIT */
/*
 * Completions in and out of a CQ: rivet_cq_write (endpoints' completions,
 * into the ring or the error FIFO, or straight into the buffer of an
 * fi_cq_read that waits for them) and fi_cq_read / fi_cq_readfrom.
 */
#include "rivet_cntr.h"
#include "rivet_cq_out.h"

static void rivet_cq_entry_write(enum fi_cq_format format,
				 const struct rivet_cq_entry *e, void *buf,
				 size_t i)
{
	rivet_cq_out(format, buf, i, e->op_context, e->flags, e->len, e->buf,
		     e->data, e->tag);
}

static ssize_t rivet_cq_pop_locked(struct rivet_cq *cq, void *buf,
				   size_t count, fi_addr_t *src_addr)
{
	size_t i, n = RIVET_MIN(count, cq->count);
	const struct rivet_cq_entry *e;

	RIVET_HELD(&cq->lock);
	for (i = 0; i < n; i++) {
		e = &cq->ring[cq->head];
		rivet_cq_entry_write(cq->attr.format, e, buf, i);
		if (src_addr)
			src_addr[i] = e->src;
		if (++cq->head == cq->ring_size)
			cq->head = 0;
	}
	cq->count -= n;
	return (ssize_t)n;
}

/* How many of the ring's first count entries came before the first
 * error. */
static size_t rivet_cq_before_err(const struct rivet_cq *cq, size_t count)
{
	uint64_t err = cq->errs[cq->errs_head].seq;
	size_t i, n = RIVET_MIN(count, cq->count), at = cq->head;

	for (i = 0; i < n && cq->ring[at].seq < err; i++)
		if (++at == cq->ring_size)
			at = 0;
	return i;
}

/* What the ring gives a read of count (> 0) entries: the successes
 * before the first error, else that error (-FI_EAVAIL), nothing
 * (-FI_EAGAIN). */
static ssize_t rivet_cq_take(struct rivet_cq *cq, void *buf, size_t count,
			     fi_addr_t *src_addr)
{
	if (cq->errs_count) {
		count = rivet_cq_before_err(cq, count);
		if (!count)
			return -FI_EAVAIL;
	}
	if (!cq->count)
		return -FI_EAGAIN;
	return rivet_cq_pop_locked(cq, buf, count, src_addr);
}

/* A thread of ours is about to write into cq (an endpoint's progress
 * thread): its lock cannot stay off, whatever the threading level. */
void rivet_cq_need_lock(struct rivet_cq *cq)
{
	cq->lock.on = true;
	rivet_cq_fast_update(cq);
}

/* A read goes straight to the source's own when that source alone feeds
 * the CQ and nothing is locked (FI_THREAD_DOMAIN without a progress
 * thread: the application serializes the calls), and the CQ is neither
 * an endpoint's hidden one (set at its open) nor an MSG endpoint's (its
 * bind and close come here too). */
void rivet_cq_fast_update(struct rivet_cq *cq)
{
	struct rivet_progress_set *set = &cq->srcs;

	cq->fast = !cq->lock.on && !cq->hidden && !set->locking &&
		   !atomic_load_explicit(&cq->msg_eps,
					 memory_order_relaxed) &&
		   set->n == 1 && set->srcs[0]->read ? set->srcs[0] : NULL;
}

void rivet_cq_write(struct rivet_cq *cq, const struct rivet_cq_entry *e)
{
	struct rivet_cq_entry named;

	if (e->err && !e->prov_errno) {
		named = *e;
		named.prov_errno = rivet_perr_of(e->err);
		e = &named;
	}
	rivet_lock_acquire(&cq->lock);
	if (cq->hidden)
		goto out;
	if (!e->err && rivet_cq_direct(cq, e->op_context, e->flags, e->len,
				       e->buf, e->data, e->tag, e->src))
		goto out;
	if ((e->err && cq->errs_count == cq->errs_size) ||
	    (!e->err && cq->count == cq->ring_size)) {
		if (rivet_cq_grow_locked(cq))
			goto out;
	}
	rivet_cq_put(cq, e);
out:
	rivet_lock_release(&cq->lock);
}

/* rivet_cq_write_ok under the lock, or as an entry (out of the common
 * case's frame: a tail call). */
static __attribute__((noinline)) void
rivet_cq_write_ok_any(struct rivet_cq *cq, void *op_context, uint64_t flags,
		      size_t len, void *buf, uint64_t data, uint64_t tag,
		      fi_addr_t src)
{
	struct rivet_cq_entry e = {
		.op_context = op_context, .flags = flags, .len = len,
		.buf = buf, .data = data, .tag = tag, .src = src,
	};
	bool done;

	rivet_lock_acquire(&cq->lock);
	done = rivet_cq_direct(cq, op_context, flags, len, buf, data, tag,
			       src);
	rivet_lock_release(&cq->lock);
	if (!done)
		rivet_cq_write(cq, &e);
}

void rivet_cq_write_ok(struct rivet_cq *cq, void *op_context, uint64_t flags,
		       size_t len, void *buf, uint64_t data, uint64_t tag,
		       fi_addr_t src)
{
	/* without a lock (the application serializes the CQ's calls) */
	if (!cq->lock.on && rivet_cq_direct(cq, op_context, flags, len, buf,
					    data, tag, src))
		return;
	rivet_cq_write_ok_any(cq, op_context, flags, len, buf, data, tag,
			      src);
}

/* Entries in the order they came: a read stops at an error, and the next
 * gives -FI_EAVAIL until fi_cq_readerr takes it. */
ssize_t rivet_cq_readfrom_any(struct rivet_cq *cq, void *buf, size_t count,
			      fi_addr_t *src_addr)
{
	bool direct;
	ssize_t ret;

	/* With nothing waiting, what this read's progress completes is
	 * written straight into buf (rivet_cq_write): no copy through the
	 * ring. */
	rivet_lock_acquire(&cq->lock);
	direct = count && !cq->count && !cq->errs_count && !cq->dbuf;
	if (direct) {
		cq->dbuf = buf;
		cq->dsrc = src_addr;
		cq->dn = 0;
		cq->dmax = count;
	}
	rivet_lock_release(&cq->lock);
	rivet_progress_set_run(&cq->srcs);
	rivet_trig_poll(cq->domain);	/* counters it moved */
	rivet_lock_acquire(&cq->lock);
	/* the test of rivet_cq_poll_locked, without the call: RDM CQs */
	ret = cq->hidden || atomic_load_explicit(&cq->msg_eps,
						 memory_order_relaxed) ?
	      rivet_cq_poll_locked(cq) : 0;
	if (rivet_cq_has_deferred(cq)) {
		rivet_lock_release(&cq->lock);
		rivet_cq_run_deferred(cq);
		rivet_lock_acquire(&cq->lock);
	}
	if (direct) {
		cq->dbuf = NULL;
		if (cq->dn) {	/* the entries before any in the ring */
			ret = (ssize_t)cq->dn;
			goto out;
		}
	}
	if (ret < 0 && !cq->count && !cq->errs_count)
		goto out;
	if (!count)
		ret = -FI_EAGAIN;	/* a progress-only call */
	else
		ret = rivet_cq_take(cq, buf, count, src_addr);
out:
	rivet_lock_release(&cq->lock);
	if (count)
		rivet_domain_polled(cq->domain, ret != -FI_EAGAIN);
	return ret;
}

ssize_t rivet_cq_read_rest(struct rivet_cq *cq, void *buf, size_t count,
			   fi_addr_t *src_addr)
{
	size_t dn = cq->dn;
	ssize_t ret;

	if (rivet_cq_has_deferred(cq))
		rivet_cq_run_deferred(cq);
	ret = dn ? (ssize_t)dn : rivet_cq_take(cq, buf, count, src_addr);
	rivet_domain_polled(cq->domain, ret != -FI_EAGAIN);
	return ret;
}

ssize_t rivet_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			  fi_addr_t *src_addr)
{
	struct rivet_cq *cq = to_rcq(cq_fid);
	struct rivet_progress_src *fast = cq->fast;

	if (fast && count)
		return fast->read(fast, cq, buf, count, src_addr);
	return rivet_cq_readfrom_any(cq, buf, count, src_addr);
}

ssize_t rivet_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return rivet_cq_readfrom(cq_fid, buf, count, NULL);
}

void rivet_cq_unbind_msg(struct rivet_cq *cq)
{
	atomic_fetch_sub(&cq->msg_eps, 1);
	rivet_cq_fast_update(cq);
	atomic_fetch_sub(&cq->refcnt, 1);
}

int rivet_cq_add_source(struct rivet_cq *cq, struct rivet_progress_src *src)
{
	int ret = rivet_progress_set_add(&cq->srcs, src);

	rivet_cq_fast_update(cq);
	return ret;
}

void rivet_cq_del_source(struct rivet_cq *cq, struct rivet_progress_src *src)
{
	rivet_progress_set_remove(&cq->srcs, src);
	rivet_cq_fast_update(cq);
}
