// SPDX-License-Identifier: MIT
/* rivet's cooperative polling (FI_RIVET_POLL_YIELD, fi_rivet(7)
 * PERFORMANCE), single process: on a software RDMA device an fi_cq_read
 * or fi_cntr_read that keeps finding nothing yields the CPU, once in a
 * while (not at every read); one that finds something never does; FI_RIVET_POLL_YIELD=0 never yields.  The
 * program counts the provider's sched_yield calls by defining sched_yield
 * itself (linked with --export-dynamic, so the provider, loaded later,
 * binds to this one).
 *
 * usage: fi_rivet_poll -s ADDR -Y yes|no   (yes: idle reads must yield) */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "common/ft_rivet.h"

#define PL_IDLE_MS 20	/* far above the 200 usec default */

static atomic_ulong g_yields;
static int g_expect = -1;	/* -Y: 1 idle reads must yield, 0 never */

int sched_yield(void)
{
	atomic_fetch_add(&g_yields, 1);
	return (int)syscall(SYS_sched_yield);
}

static void pl_opt(int op, const char *arg)
{
	if (op == 'Y')
		g_expect = !strcmp(arg, "yes") ? 1 : !strcmp(arg, "no") ? 0 : -1;
}

static const char *pl_err(int ret)
{
	return fi_strerror(ret < 0 ? -ret : ret);
}

/* fi_cq_read on a CQ nothing feeds, for PL_IDLE_MS */
static void pl_cq_idle(struct fid_domain *domain)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_DATA };
	struct fi_cq_data_entry comp;
	struct fid_cq *cq;
	unsigned long reads = 0, y0;
	uint64_t end;
	ssize_t ret = 0;
	int r;

	r = fi_cq_open(domain, &attr, &cq, NULL);
	if (!ft_check(!r, "cq_open", "%s", pl_err(r)))
		return;
	y0 = atomic_load(&g_yields);
	end = ft_now_ms() + PL_IDLE_MS;
	while (ft_now_ms() < end) {
		ret = fi_cq_read(cq, &comp, 1);
		if (ret != -FI_EAGAIN)
			break;
		reads++;
	}
	y0 = atomic_load(&g_yields) - y0;
	ft_check(ret == -FI_EAGAIN, "cq_idle_read", "fi_cq_read: %zd", ret);
	/* some, but rationed: one per FI_RIVET_POLL_YIELD usec (200), not
	 * one per read */
	ft_check(g_expect ? y0 > 0 && y0 * 10 < reads : y0 == 0,
		 "cq_idle_yields", "%lu yields in %lu empty reads over %d ms "
		 "(expected %s)", y0, reads, PL_IDLE_MS,
		 g_expect ? "some, one per 200 usec" : "none");
	ft_info("cq: %lu yields in %lu empty reads\n", y0, reads);
	r = fi_close(&cq->fid);
	ft_check(!r, "cq_close", "%s", pl_err(r));
}

/* fi_cntr_read: unchanged values yield like an empty CQ; a read that sees
 * a new value found work, and the clock restarts: a counter that moves
 * before every read never yields */
static void pl_cntr(struct fid_domain *domain)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *c;
	unsigned long reads = 0, y0;
	uint64_t end, v = 0;
	bool ok = true;
	int r;

	r = fi_cntr_open(domain, &attr, &c, NULL);
	if (!ft_check(!r, "cntr_open", "%s", pl_err(r)))
		return;
	y0 = atomic_load(&g_yields);
	end = ft_now_ms() + PL_IDLE_MS;
	for (; ft_now_ms() < end; reads++)
		ok = ok && fi_cntr_read(c) == 0;
	y0 = atomic_load(&g_yields) - y0;
	ft_check(ok && (g_expect ? y0 > 0 : y0 == 0), "cntr_idle_yields",
		 "%lu yields in %lu reads of an unchanged counter (expected "
		 "%s)", y0, reads, g_expect ? "some" : "none");

	y0 = atomic_load(&g_yields);
	end = ft_now_ms() + PL_IDLE_MS;
	for (reads = 0; ok && ft_now_ms() < end; reads++) {
		ok = !fi_cntr_add(c, 1);
		ok = ok && fi_cntr_read(c) == ++v;
	}
	y0 = atomic_load(&g_yields) - y0;
	ft_check(ok && y0 == 0, "cntr_busy_no_yield",
		 "%lu yields in %lu reads that each found a new value%s", y0,
		 reads, ok ? "" : " (a read returned a wrong value)");
	r = fi_close(&c->fid);
	ft_check(!r, "cntr_close", "%s", pl_err(r));
}

int main(int argc, char **argv)
{
	struct fi_info *hints, *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	int ret;

	ft_set_extra_opts("Y:", " -Y yes|no    idle reads must (not) yield\n",
			  pl_opt);
	ft_parse_opts(argc, argv, "rivet's cooperative polling (single "
		      "process).", false);
	if (g_expect < 0) {
		fprintf(stderr, "fi_rivet_poll: -Y yes|no is required\n");
		return 2;
	}
	hints = ft_hints_alloc(FI_MSG);
	ret = fi_getinfo(FT_FIVERSION, ft_opts.src_addr, NULL,
			 ft_opts.src_addr ? FI_SOURCE : 0, hints, &info);
	fi_freeinfo(hints);
	if (!ft_check(!ret, "getinfo", "%s", pl_err(ret)))
		return ft_summary();
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (ft_check(!ret, "fabric_open", "%s", pl_err(ret)))
		ret = fi_domain(fabric, info, &domain, NULL);
	if (ft_check(!ret, "domain_open", "%s", pl_err(ret))) {
		pl_cq_idle(domain);
		pl_cntr(domain);
		fi_close(&domain->fid);
	}
	if (fabric)
		fi_close(&fabric->fid);
	fi_freeinfo(info);
	return ft_summary();
}
