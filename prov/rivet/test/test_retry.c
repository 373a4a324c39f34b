/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the RC retry count rivet's connections ask for
 * (rivet_retry.c): finite on every device, FI_RIVET_RETRY_COUNT's
 * overrides.
 */
#include <criterion/criterion.h>

#include "rivet.h"

Test(retry, default_is_finite_on_every_device)
{
	/* rxe never counts 7 down: a dead peer would never fail */
	cr_assert_eq(rivet_retry_count(RIVET_RETRY_AUTO, RIVET_VENDOR_RXE), 6);
	/* hardware (Mellanox/NVIDIA, Broadcom) and siw: 7 is 7 retries */
	cr_assert_eq(rivet_retry_count(RIVET_RETRY_AUTO, 0x02c9), 7);
	cr_assert_eq(rivet_retry_count(RIVET_RETRY_AUTO, 0x14e4), 7);
	cr_assert_eq(rivet_retry_count(RIVET_RETRY_AUTO, RIVET_VENDOR_SIW), 7);
}

Test(retry, parameter_overrides_the_device)
{
	cr_assert_eq(rivet_retry_count(0, RIVET_VENDOR_RXE), 0);
	cr_assert_eq(rivet_retry_count(3, 0x02c9), 3);
	cr_assert_eq(rivet_retry_count(7, RIVET_VENDOR_RXE), 7);
	cr_assert_eq(rivet_retry_count(100, 0x02c9), 7);
}

/* rxe can complete a failed request as successful when a read's response
 * has several packets: witnesses then, not when reads are one packet
 * (FI_RIVET_RDMA_SEG), and never on hardware unless asked. */
Test(retry, confirmed_on_rxe_only_with_reads_of_many_packets)
{
	cr_assert(rivet_confirm_default(RIVET_CONFIRM_AUTO,
					RIVET_VENDOR_RXE, false));
	cr_assert_not(rivet_confirm_default(RIVET_CONFIRM_AUTO,
					    RIVET_VENDOR_RXE, true));
	cr_assert_not(rivet_confirm_default(RIVET_CONFIRM_AUTO, 0x02c9,
					    false));
	cr_assert_not(rivet_confirm_default(RIVET_CONFIRM_AUTO,
					    RIVET_VENDOR_SIW, false));
	cr_assert_not(rivet_confirm_default(0, RIVET_VENDOR_RXE, false));
	cr_assert(rivet_confirm_default(1, 0x02c9, true));
	cr_assert(rivet_confirm_default(1, RIVET_VENDOR_RXE, true));
}

/* Reads of one packet on rxe (its completer's defect with late
 * acknowledgements in a read's response); no limit on hardware; the
 * parameter wins, 0 meaning no limit. */
Test(retry, rdma_seg_is_one_mtu_on_rxe_only)
{
	cr_expect_eq(rivet_rdma_seg_default(RIVET_RDMA_SEG_AUTO,
					    RIVET_VENDOR_RXE, 1024), 1024);
	cr_expect_eq(rivet_rdma_seg_default(RIVET_RDMA_SEG_AUTO,
					    RIVET_VENDOR_RXE, 4096), 4096);
	cr_expect_eq(rivet_rdma_seg_default(RIVET_RDMA_SEG_AUTO, 0x02c9,
					    4096), SIZE_MAX);
	cr_expect_eq(rivet_rdma_seg_default(RIVET_RDMA_SEG_AUTO,
					    RIVET_VENDOR_SIW, 1024), SIZE_MAX);
	/* no MTU known: no limit rather than reads of 0 bytes */
	cr_expect_eq(rivet_rdma_seg_default(RIVET_RDMA_SEG_AUTO,
					    RIVET_VENDOR_RXE, 0), SIZE_MAX);
	cr_expect_eq(rivet_rdma_seg_default(0, RIVET_VENDOR_RXE, 1024),
		     SIZE_MAX);
	cr_expect_eq(rivet_rdma_seg_default(4096, 0x02c9, 4096), 4096);
}
