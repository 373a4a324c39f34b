/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of cooperative polling (rivet_poll_yield.c, rivet_domain_polled):
 * who yields by default, FI_RIVET_POLL_YIELD's overrides, that a poll
 * that finds work restarts the idle clock and that idling yields once a
 * period.
 */
#include <criterion/criterion.h>

#include "rivet.h"

Test(poll, yields_by_default_only_on_software_devices)
{
	cr_assert_eq(rivet_poll_yield_ns(RIVET_POLL_YIELD_AUTO,
					 RIVET_VENDOR_RXE),
		     RIVET_POLL_YIELD_SOFT_USEC * 1000ull);
	cr_assert_eq(rivet_poll_yield_ns(RIVET_POLL_YIELD_AUTO,
					 RIVET_VENDOR_SIW),
		     RIVET_POLL_YIELD_SOFT_USEC * 1000ull);
	/* Mellanox/NVIDIA, Broadcom: hardware moves the data */
	cr_assert_eq(rivet_poll_yield_ns(RIVET_POLL_YIELD_AUTO, 0x02c9), 0);
	cr_assert_eq(rivet_poll_yield_ns(RIVET_POLL_YIELD_AUTO, 0x14e4), 0);
}

Test(poll, parameter_overrides_the_device)
{
	cr_assert_eq(rivet_poll_yield_ns(0, RIVET_VENDOR_RXE), 0);
	cr_assert_eq(rivet_poll_yield_ns(5, 0x02c9), 5000);
	cr_assert_eq(rivet_poll_yield_ns(1, RIVET_VENDOR_SIW), 1000);
	/* no overflow into a small threshold */
	cr_assert_geq(rivet_poll_yield_ns((size_t)-2, 0), UINT64_MAX / 2);
}

Test(poll, found_work_restarts_the_idle_clock)
{
	struct rivet_domain dom = { .poll_yield_ns = 0 };
	uint64_t before, stamp;

	rivet_domain_polled(&dom, true);	/* off: nothing recorded */
	rivet_domain_polled(&dom, false);
	cr_assert_eq(atomic_load(&dom.poll_busy_ns), 0);
	cr_assert_not(atomic_load(&dom.poll_found));

	/* long idle: the next empty poll would yield, but work was found
	 * in between, so it restarts the idle clock instead */
	dom.poll_yield_ns = 1000000000ull;
	atomic_store(&dom.poll_busy_ns, 1);
	rivet_domain_polled(&dom, true);	/* marks, reads no clock */
	cr_assert(atomic_load(&dom.poll_found));
	cr_assert_eq(atomic_load(&dom.poll_busy_ns), 1);
	before = rivet_now_ns();
	rivet_domain_polled(&dom, false);
	stamp = atomic_load(&dom.poll_busy_ns);
	cr_assert_geq(stamp, before);
	cr_assert_leq(stamp, rivet_now_ns());
	cr_assert_not(atomic_load(&dom.poll_found));

	rivet_domain_polled(&dom, false);	/* idle polls leave it */
	rivet_domain_polled(&dom, false);
	cr_assert_eq(atomic_load(&dom.poll_busy_ns), stamp);
}

Test(poll, one_yield_per_period_of_idling)
{
	/* a period of a second: a busy machine cannot put the second poll
	 * a period after the first */
	struct rivet_domain dom = { .poll_yield_ns = 1000000000ull };
	uint64_t now = rivet_now_ns(), stamp;

	/* idle for two periods: this poll yields and restarts the clock,
	 * so the next yield is a whole period away */
	atomic_store(&dom.poll_busy_ns, now - 2 * dom.poll_yield_ns);
	rivet_domain_polled(&dom, false);
	stamp = atomic_load(&dom.poll_busy_ns);
	cr_assert_geq(stamp, now);
	rivet_domain_polled(&dom, false);
	cr_assert_eq(atomic_load(&dom.poll_busy_ns), stamp);
}
