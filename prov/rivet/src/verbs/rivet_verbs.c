/* SPDX-License-Identifier: MIT */
/*
 * The verbs seam: what every object needs around libibverbs and
 * librdmacm calls, in one place: their errno converted to a negative FI_E*
 * code (rivet_errno_to_fi), and the QP and rdma_cm id options rivet sets
 * on every connection (RNR timer, type of service, ACK timeout).  It calls
 * nothing of rivet's above it (contrib/layers.sh).
 */
#include "rivet.h"

/* errno (positive) from libibverbs/librdmacm/libc to a negative FI_E* code */
int rivet_errno_to_fi(int err)
{
	switch (err) {
	case 0:
		return 0;
	case EAGAIN:
		return -FI_EAGAIN;
	case ENOMEM:
		return -FI_ENOMEM;
	case EINVAL:
		return -FI_EINVAL;
	case ENOENT:
	case ENODEV:
		return -FI_ENODEV;
	case ENOSYS:
	case EOPNOTSUPP:
		return -FI_ENOSYS;
	case EBUSY:
		return -FI_EBUSY;
	case EADDRINUSE:
		return -FI_EADDRINUSE;
	case EADDRNOTAVAIL:
		return -FI_EADDRNOTAVAIL;
	case ECONNREFUSED:
		return -FI_ECONNREFUSED;
	case ETIMEDOUT:
		return -FI_ETIMEDOUT;
	case EHOSTUNREACH:
	case ENETUNREACH:
		return -FI_EHOSTUNREACH;
	case EACCES:
	case EPERM:
		return -FI_EACCES;
	case ENOSPC:
		return -FI_ENOSPC;
	default:
		return err > 0 ? -err : -FI_EOTHER;
	}
}

void rivet_qp_set_rnr_timer(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .min_rnr_timer = RIVET_MIN_RNR_TIMER };
	int ret = ibv_modify_qp(qp, &attr, IBV_QP_MIN_RNR_TIMER);

	if (ret)
		RIVET_INFO(EP_CTRL, "min_rnr_timer on qp 0x%x: %s\n",
			   qp->qp_num, strerror(ret));
}

/* Before the route is resolved: rdma_cm puts the TOS in the RoCE GRH and
 * asks IB's subnet manager for the matching service level.  A device or
 * kernel that refuses it leaves the connection on the default class. */
void rivet_id_set_tos(struct rdma_cm_id *id, int tos)
{
	uint8_t val = (uint8_t)tos;

	if (tos < 0)
		return;
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &val,
			    sizeof(val)))
		RIVET_INFO(EP_CTRL, "rdma_set_option(TOS %d): %s\n", tos,
			   strerror(errno));
}

/* Before the connection's QP is made ready to send: the ACK timeout of
 * FI_RIVET_ACK_TIMEOUT (rdma_cm's own when 0). */
void rivet_id_set_ack_timeout(struct rdma_cm_id *id)
{
	uint8_t val = (uint8_t)g_rivet_params.ack_timeout;

	if (!val)
		return;
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			    &val, sizeof(val)))
		RIVET_INFO(EP_CTRL, "rdma_set_option(ACK_TIMEOUT %u): %s\n",
			   val, strerror(errno));
}
