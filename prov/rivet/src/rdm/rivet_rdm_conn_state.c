/* SPDX-License-Identifier: MIT */
/*
 * The RDM connections' decisions that need no verbs call (pure: unit
 * tested in test/test_conn.c): what an rdma_cm event does to a connection
 * in a given state, and which connection owns a QP number.
 */
#include "rivet_rdm.h"

/* FI_E* (positive) of an event that ends a connection being made. */
static int rivet_conn_event_err(enum rdma_cm_event_type ev)
{
	switch (ev) {
	case RDMA_CM_EVENT_REJECTED:
		return FI_ECONNREFUSED;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return FI_EHOSTUNREACH;
	default:
		return FI_ECONNABORTED;
	}
}

/* The handshake's steps move a connection on only while it is being
 * made: one that failed meanwhile (replaced, its address removed) stays
 * closed, its QP in the error state or already released, and one that is
 * up stays up; a late ESTABLISHED is answered with a disconnect. */
enum rivet_conn_step rivet_conn_step_of(enum rivet_conn_state state,
					enum rdma_cm_event_type ev, int *err)
{
	*err = 0;
	switch (ev) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		return state == RIVET_CONN_CONNECTING ?
		       RIVET_CONN_STEP_RESOLVE_ROUTE : RIVET_CONN_STEP_IGNORE;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return state == RIVET_CONN_CONNECTING ?
		       RIVET_CONN_STEP_CONNECT : RIVET_CONN_STEP_IGNORE;
	case RDMA_CM_EVENT_ESTABLISHED:
		return state == RIVET_CONN_CONNECTING ?
		       RIVET_CONN_STEP_UP : RIVET_CONN_STEP_REFUSE;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		return RIVET_CONN_STEP_NONE;
	case RDMA_CM_EVENT_DISCONNECTED:
		*err = FI_ECONNRESET;
		return RIVET_CONN_STEP_RESET;
	default:	/* a reject, an error, the device gone, ... */
		*err = rivet_conn_event_err(ev);
		return RIVET_CONN_STEP_FAIL;
	}
}

/* Connections are few per endpoint, and this is asked only off the fast
 * path (a write with data, a header that names another connection, a
 * failed receive).  A released QP's number is RIVET_CONN_QPN_NONE, so a
 * connection whose QP the device gave the number again is never taken
 * for the one that had it before. */
struct rivet_conn *rivet_conn_of_qp(struct rivet_rdm_ep *ep, uint32_t qp_num)
{
	size_t i;

	if (qp_num == RIVET_CONN_QPN_NONE)
		return NULL;
	for (i = ep->nconns; i-- > 0;)
		if (ep->conns[i]->qp_num == qp_num)
			return ep->conns[i];
	return NULL;
}
