/* SPDX-License-Identifier: MIT */
/*
 * FI_TRIGGER on RDM endpoints (fi_trigger(3)): the *msg calls hand a call
 * with the flag to the domain's list (rivet_cntr_trig.c), which makes it
 * again without the flag once its counter reaches the threshold; a call
 * that then fails is reported here, as an error completion.
 */
#include "rivet_rdm.h"

/* ---- triggered operations that fail when they start ---- */

static void rivet_rdm_trig_fail(struct fid_ep *fid, void *context, int err,
				bool tx)
{
	struct rivet_rdm_ep *ep = to_rrdm(fid);
	struct rivet_cq_entry e = {
		.op_context = context, .err = err,
		.flags = tx ? FI_SEND : FI_RECV,
	};

	rivet_rdm_lock(ep);
	if (ep->enabled)
		rivet_rdm_complete(ep, tx, &e, true);
	rivet_rdm_unlock(ep);
}

void rivet_rdm_trig_fail_tx(struct fid_ep *fid, void *context, int err)
{
	rivet_rdm_trig_fail(fid, context, err, true);
}

void rivet_rdm_trig_fail_rx(struct fid_ep *fid, void *context, int err)
{
	rivet_rdm_trig_fail(fid, context, err, false);
}

ssize_t rivet_rdm_trig_rma(struct fid_ep *fid, const struct fi_msg_rma *msg,
			   uint64_t flags, bool read)
{
	struct rivet_domain *dom = rivet_rdm_trig_dom(fid);

	if (!dom)
		return -FI_EINVAL;
	return rivet_trig_rma(dom, fid, read ? RIVET_TRIG_READ :
			      RIVET_TRIG_WRITE, msg, flags,
			      rivet_rdm_trig_fail_tx);
}

ssize_t rivet_rdm_trig_atomic(struct fid_ep *fid,
			      const struct fi_msg_atomic *msg,
			      const struct fi_ioc *comparev,
			      size_t compare_count, struct fi_ioc *resultv,
			      size_t result_count, uint64_t flags, bool write)
{
	struct rivet_domain *dom = rivet_rdm_trig_dom(fid);
	enum rivet_trig_kind kind = write ? RIVET_TRIG_ATOMIC :
				    comparev ? RIVET_TRIG_COMPARE :
				    RIVET_TRIG_FETCH;

	if (!dom)
		return -FI_EINVAL;
	return rivet_trig_atomic(dom, fid, kind, msg, comparev, NULL,
				 compare_count, resultv, NULL, result_count,
				 flags, rivet_rdm_trig_fail_tx);
}

/* ---- the *msg calls with FI_TRIGGER (send: else a receive) ---- */

ssize_t rivet_rdm_trig_msg(struct fid_ep *fid, const struct fi_msg *msg,
			   uint64_t flags, bool send)
{
	struct rivet_domain *dom = rivet_rdm_trig_dom(fid);

	if (!dom)
		return -FI_EINVAL;
	return rivet_trig_msg(dom, fid, send ? RIVET_TRIG_SEND :
			      RIVET_TRIG_RECV, msg, flags, send ?
			      rivet_rdm_trig_fail_tx : rivet_rdm_trig_fail_rx);
}

ssize_t rivet_rdm_trig_tagged(struct fid_ep *fid,
			      const struct fi_msg_tagged *msg, uint64_t flags,
			      bool send)
{
	struct rivet_domain *dom = rivet_rdm_trig_dom(fid);

	if (!dom)
		return -FI_EINVAL;
	return rivet_trig_tagged(dom, fid, send ? RIVET_TRIG_TSEND :
				 RIVET_TRIG_TRECV, msg, flags, send ?
				 rivet_rdm_trig_fail_tx :
				 rivet_rdm_trig_fail_rx);
}
