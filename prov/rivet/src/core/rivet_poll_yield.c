/* SPDX-License-Identifier: MIT */
/*
 * Cooperative polling.  On a software RDMA device (rxe, siw) the "NIC" is
 * the host's own kernel: rxe (Linux 6.x) moves every packet in rxe_wq
 * kworkers.  A process that busy-polls an empty CQ competes with them for
 * its CPU, and a kworker woken behind a poller waits out the poller's
 * time slice (about a millisecond) before the message it carries moves
 * on.  So, on those devices, while a domain's CQ and counter reads find
 * nothing, one empty read in every FI_RIVET_POLL_YIELD microseconds
 * yields the CPU (rivet_domain_polled).
 * Hardware NICs need no CPU to progress: there the default is never.
 */
#include "rivet.h"

uint64_t rivet_poll_yield_ns(size_t param_usec, uint32_t vendor_id)
{
	if (param_usec == RIVET_POLL_YIELD_AUTO)
		param_usec = vendor_id == RIVET_VENDOR_RXE ||
			     vendor_id == RIVET_VENDOR_SIW ?
			     RIVET_POLL_YIELD_SOFT_USEC : 0;
	if (param_usec > UINT64_MAX / 1000)
		param_usec = UINT64_MAX / 1000;
	return (uint64_t)param_usec * 1000;
}
