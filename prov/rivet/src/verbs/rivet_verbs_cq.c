/* SPDX-License-Identifier: MIT */
/*
 * The verbs seam for completion queues: a verbs CQ and its completion
 * channel made, resized, destroyed, and the channel's events taken and
 * acknowledged.  Each call's error is logged and converted to a negative
 * FI_E* code here, once.  The CQ (resource/rivet_cq.c, rivet_cq_wait.c)
 * calls verbs only through these and the inline poll and arm of
 * libibverbs (through the CQ's own context ops), so its unit tests
 * (test/test_cq.c) link a scripted double of this file instead
 * (test/mock_verbs_cq.c).
 */
#include "rivet.h"

int rivet_verbs_channel_create(struct ibv_context *ctx,
			       struct ibv_comp_channel **ch_p)
{
	int ret;

	*ch_p = ibv_create_comp_channel(ctx);
	if (*ch_p)
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(CQ, "ibv_create_comp_channel", ret);
	return rivet_errno_to_fi(ret);
}

void rivet_verbs_channel_destroy(struct ibv_comp_channel *ch)
{
	int ret = ch ? ibv_destroy_comp_channel(ch) : 0;

	if (ret)
		RIVET_WARN_ERRNO(CQ, "ibv_destroy_comp_channel", ret);
}

int rivet_verbs_cq_create(struct ibv_context *ctx, int cqe, void *cq_context,
			  struct ibv_comp_channel *ch, struct ibv_cq **cq_p)
{
	int ret;

	*cq_p = ibv_create_cq(ctx, cqe, cq_context, ch, 0);
	if (*cq_p)
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(CQ, "ibv_create_cq", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cq_resize(struct ibv_cq *cq, int cqe)
{
	int ret = ibv_resize_cq(cq, cqe);

	if (ret)
		RIVET_WARN_ERRNO(CQ, "ibv_resize_cq", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cq_destroy(struct ibv_cq *cq)
{
	int ret = ibv_destroy_cq(cq);

	if (ret)
		RIVET_WARN_ERRNO(CQ, "ibv_destroy_cq", ret);
	return rivet_errno_to_fi(ret);
}

unsigned int rivet_verbs_cq_events_ack(struct ibv_cq *cq,
				       struct ibv_comp_channel *ch)
{
	struct ibv_cq *ev_cq;
	unsigned int n = 0;
	void *ev_ctx;

	while (!ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
		n++;
	if (n)
		ibv_ack_cq_events(cq, n);
	return n;
}
