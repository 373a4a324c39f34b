/* SPDX-License-Identifier: MIT */
/*
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
