/* SPDX-License-Identifier: MIT */
/*
 * Defaults that work around a device's defects.
 *
 * The transport retry count of rivet's RC connections (rdma_cm's
 * retry_count: how many times a packet is sent again before its operation
 * fails with IBV_WC_RETRY_EXC_ERR).  The verbs API takes 0..7, and 7 is
 * finite on hardware; but rxe (Linux, rxe_comp.c) never counts a retry
 * count of 7 down, as if it were an RNR retry count, so with 7 a dead
 * peer or a lost link never fails anything on rxe.  So the default is 6
 * there.  Pure, unit tested.
 */
#include "rivet.h"

uint8_t rivet_retry_count(size_t param, uint32_t vendor_id)
{
	if (param == RIVET_RETRY_AUTO)
		return vendor_id == RIVET_VENDOR_RXE ? 6 : 7;
	return param > 7 ? 7 : (uint8_t)param;
}

/*
 * rxe (Linux 6.12, rxe_comp.c) can end a failed RDMA read as successful:
 * when a read response arrives out of the order it expects (reordering,
 * loss), its completer goes to its error state without setting the work
 * request's status, completes the read as IBV_WC_SUCCESS with bytes never
 * written, and only then moves the QP to the error state.  A rendezvous
 * receive cannot tell such a read from a good one; but every work
 * request posted after it fails, so the FIN that ends the rendezvous is
 * the witness: the receive is reported once the FIN is acknowledged, and
 * fails if the FIN does.  Hardware needs no witness (one more round trip
 * before the receive completes): there it is off unless asked for.
 */
bool rivet_rndv_confirm(size_t param, uint32_t vendor_id)
{
	if (param == RIVET_RNDV_CONFIRM_AUTO)
		return vendor_id == RIVET_VENDOR_RXE;
	return param != 0;
}
