/* SPDX-License-Identifier: MIT */
/*
 * A successful completion written straight into the buffer of the
 * fi_cq_read that waits for it (cq->dbuf): inline for the CQ's own
 * write (rivet_cq_read.c) and for the RDM arrival's fast path
 * (rivet_rdm_progress.c).
 */
#ifndef RIVET_CQ_OUT_H
#define RIVET_CQ_OUT_H

#include "rivet.h"

/* Entry i of buf, in the CQ's format, from a completion's fields; each
 * fi_cq_*_entry format is a prefix of the next one.  The tagged format
 * (what MPIs read) is looked at first. */
static inline __attribute__((always_inline)) void
rivet_cq_out(enum fi_cq_format format, void *buf, size_t i, void *op_context,
	     uint64_t flags, size_t len, void *b, uint64_t data, uint64_t tag)
{
	struct fi_cq_tagged_entry *t;
	struct fi_cq_data_entry *d;
	struct fi_cq_msg_entry *m;

	if (__builtin_expect(format == FI_CQ_FORMAT_TAGGED, 1)) {
		t = (struct fi_cq_tagged_entry *)buf + i;
		t->tag = tag;
		d = (struct fi_cq_data_entry *)t;
	} else if (format == FI_CQ_FORMAT_DATA) {
		d = (struct fi_cq_data_entry *)buf + i;
	} else if (format == FI_CQ_FORMAT_MSG) {
		m = (struct fi_cq_msg_entry *)buf + i;
		m->op_context = op_context;
		m->flags = flags;
		m->len = len;
		return;
	} else {
		((struct fi_cq_entry *)buf)[i].op_context = op_context;
		return;
	}
	d->op_context = op_context;
	d->flags = flags;
	d->len = len;
	d->buf = b;
	d->data = data;
}

/* Into the buffer of a reader that waits, when nothing is before it in
 * the ring or the error FIFO (under cq->lock, or with none); false when
 * no reader takes it. */
static inline __attribute__((always_inline)) bool
rivet_cq_direct(struct rivet_cq *cq, void *op_context, uint64_t flags,
		size_t len, void *buf, uint64_t data, uint64_t tag,
		fi_addr_t src)
{
	if (!cq->dbuf || cq->dn >= cq->dmax || (cq->count | cq->errs_count))
		return false;
	rivet_cq_out(cq->attr.format, cq->dbuf, cq->dn, op_context, flags, len,
		     buf, data, tag);
	if (cq->dsrc)
		cq->dsrc[cq->dn] = src;
	cq->dn++;
	return true;
}

/* rivet_cq_write_ok with its common case inline: a CQ without a lock
 * (the application serializes its calls) whose reader waits. */
static inline __attribute__((always_inline)) void
rivet_cq_write_ok_inl(struct rivet_cq *cq, void *op_context, uint64_t flags,
		      size_t len, void *buf, uint64_t data, uint64_t tag,
		      fi_addr_t src)
{
	if (__builtin_expect(!cq->lock.on, 1) &&
	    rivet_cq_direct(cq, op_context, flags, len, buf, data, tag, src))
		return;
	rivet_cq_write_ok(cq, op_context, flags, len, buf, data, tag, src);
}

#endif
