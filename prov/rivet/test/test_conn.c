/* SPDX-License-Identifier: MIT */
/*
 * The RDM connections' pure decisions (rivet_rdm_conn_state.c), driven
 * without verbs: every rdma_cm event in every connection state, and the
 * owner of a QP number when the device gives a released QP's number to a
 * new one.
 */
#include <criterion/criterion.h>

#include "rivet_rdm.h"

static enum rivet_conn_step step(enum rivet_conn_state st,
				 enum rdma_cm_event_type ev, int *err)
{
	return rivet_conn_step_of(st, ev, err);
}

Test(conn, handshake_moves_a_connecting_connection_on)
{
	int err = -1;

	cr_expect_eq(step(RIVET_CONN_CONNECTING, RDMA_CM_EVENT_ADDR_RESOLVED,
			  &err), RIVET_CONN_STEP_RESOLVE_ROUTE);
	cr_expect_eq(err, 0);
	cr_expect_eq(step(RIVET_CONN_CONNECTING, RDMA_CM_EVENT_ROUTE_RESOLVED,
			  &err), RIVET_CONN_STEP_CONNECT);
	cr_expect_eq(step(RIVET_CONN_CONNECTING, RDMA_CM_EVENT_ESTABLISHED,
			  &err), RIVET_CONN_STEP_UP);
	cr_expect_eq(err, 0);
}

/* Issue 38 A3: a passive connection that failed between rdma_accept and
 * the peer's RTU must not come up on a QP in the error state (or, once
 * released, crash in ibv_modify_qp(NULL)); one that is up stays as it is. */
Test(conn, late_handshake_steps_never_revive_a_connection)
{
	enum rivet_conn_state st[] = { RIVET_CONN_UP, RIVET_CONN_CLOSED };
	size_t i;
	int err;

	for (i = 0; i < 2; i++) {
		cr_expect_eq(step(st[i], RDMA_CM_EVENT_ESTABLISHED, &err),
			     RIVET_CONN_STEP_REFUSE, "state %d", st[i]);
		cr_expect_eq(step(st[i], RDMA_CM_EVENT_ADDR_RESOLVED, &err),
			     RIVET_CONN_STEP_IGNORE, "state %d", st[i]);
		cr_expect_eq(step(st[i], RDMA_CM_EVENT_ROUTE_RESOLVED, &err),
			     RIVET_CONN_STEP_IGNORE, "state %d", st[i]);
	}
}

Test(conn, failures_and_their_codes)
{
	static const struct {
		enum rdma_cm_event_type ev;
		int err;
	} f[] = {
		{ RDMA_CM_EVENT_REJECTED, FI_ECONNREFUSED },
		{ RDMA_CM_EVENT_UNREACHABLE, FI_EHOSTUNREACH },
		{ RDMA_CM_EVENT_ADDR_ERROR, FI_EHOSTUNREACH },
		{ RDMA_CM_EVENT_ROUTE_ERROR, FI_EHOSTUNREACH },
		{ RDMA_CM_EVENT_CONNECT_ERROR, FI_ECONNABORTED },
		{ RDMA_CM_EVENT_DEVICE_REMOVAL, FI_ECONNABORTED },
	};
	enum rivet_conn_state st;
	size_t i;
	int err;

	for (st = RIVET_CONN_CONNECTING; st <= RIVET_CONN_CLOSED; st++) {
		for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
			cr_expect_eq(step(st, f[i].ev, &err),
				     RIVET_CONN_STEP_FAIL, "%s",
				     rdma_event_str(f[i].ev));
			cr_expect_eq(err, f[i].err, "%s",
				     rdma_event_str(f[i].ev));
		}
		cr_expect_eq(step(st, RDMA_CM_EVENT_DISCONNECTED, &err),
			     RIVET_CONN_STEP_RESET);
		cr_expect_eq(err, FI_ECONNRESET);
		cr_expect_eq(step(st, RDMA_CM_EVENT_TIMEWAIT_EXIT, &err),
			     RIVET_CONN_STEP_NONE);
		cr_expect_eq(step(st, RDMA_CM_EVENT_ADDR_CHANGE, &err),
			     RIVET_CONN_STEP_NONE);
	}
}

/* Issue 38 A7: connection 0's QP 0x11 was released (its linger over) and
 * the device gave 0x11 to connection 1's new QP.  Messages, writes with
 * data and failed receives on 0x11 are connection 1's, never the
 * released one's. */
Test(conn, a_reused_qp_number_names_the_new_connection)
{
	struct rivet_conn c[2] = { 0 };
	struct rivet_conn *conns[2] = { &c[0], &c[1] };
	struct rivet_rdm_ep ep = { .conns = conns, .nconns = 2 };

	c[0].qp_num = 0x11;
	c[1].qp_num = 0x12;
	cr_expect_eq(rivet_conn_of_qp(&ep, 0x11), &c[0]);
	cr_expect_eq(rivet_conn_of_qp(&ep, 0x12), &c[1]);
	cr_expect_null(rivet_conn_of_qp(&ep, 0x13));
	/* released (rivet_rdm_progress.c: rivet_conn_release), then reused */
	c[0].qp_num = RIVET_CONN_QPN_NONE;
	c[1].qp_num = 0x11;
	cr_expect_eq(rivet_conn_of_qp(&ep, 0x11), &c[1]);
	cr_expect_null(rivet_conn_of_qp(&ep, RIVET_CONN_QPN_NONE));
	/* even had a stale number stayed, the newest connection wins */
	c[0].qp_num = 0x11;
	cr_expect_eq(rivet_conn_of_qp(&ep, 0x11), &c[1]);
}
