/* SPDX-License-Identifier: MIT */
/*
 * The verbs seam for event queues: an rdma_cm event channel made and
 * destroyed, its events taken and acknowledged, and a connection request
 * nobody took refused.  Each call's error is logged and converted to a
 * negative FI_E* code here, once.  The EQ (resource/rivet_eq.c) reaches
 * rdma_cm only through these, so its unit tests (test/test_eq.c) link a
 * scripted double instead (test/mock_verbs_cm.c).
 */
#include "rivet.h"

int rivet_verbs_cm_channel_create(struct rdma_event_channel **ch_p)
{
	int ret;

	*ch_p = rdma_create_event_channel();
	if (*ch_p)
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(EQ, "rdma_create_event_channel", ret);
	return rivet_errno_to_fi(ret);
}

void rivet_verbs_cm_channel_destroy(struct rdma_event_channel *ch)
{
	if (ch)
		rdma_destroy_event_channel(ch);
}

int rivet_verbs_cm_event_get(struct rdma_event_channel *ch,
			     struct rdma_cm_event **ev_p)
{
	int ret;

	if (!rdma_get_cm_event(ch, ev_p))
		return 0;
	ret = errno;
	if (ret == EAGAIN || ret == EWOULDBLOCK)
		return -FI_EAGAIN;	/* a nonblocking channel, empty */
	RIVET_WARN_ERRNO(EQ, "rdma_get_cm_event", ret);
	return rivet_errno_to_fi(ret);
}

void rivet_verbs_cm_event_ack(struct rdma_cm_event *ev)
{
	rdma_ack_cm_event(ev);
}

void rivet_verbs_cm_refuse(struct rdma_cm_id *id)
{
	if (rdma_reject(id, NULL, 0))
		RIVET_INFO(EQ, "rdma_reject: %s\n", strerror(errno));
	rdma_destroy_id(id);
}
