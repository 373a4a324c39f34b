/* SPDX-License-Identifier: MIT */
/*
 * A scripted double of the verbs seam for PDs and registrations
 * (the PDs and regions of verbs/rivet_verbs_ibv.c) for test/test_mr.c: fake PDs and regions that
 * record the rights they were asked for, keys that differ, failures on
 * demand, and counts of what is still registered.
 */
#include <stdlib.h>

#include "mock_verbs.h"

int rivet_verbs_pd_alloc(struct ibv_context *ctx, struct ibv_pd **pd_p)
{
	if (g_mock.pd_errno)
		return rivet_errno_to_fi(g_mock.pd_errno);
	*pd_p = calloc(1, sizeof(**pd_p));
	if (!*pd_p)
		return -FI_ENOMEM;
	(*pd_p)->context = ctx;
	g_mock.pds++;
	return 0;
}

int rivet_verbs_pd_dealloc(struct ibv_pd *pd)
{
	free(pd);
	g_mock.pds--;
	return 0;
}

static int mock_reg(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
		    int access, int err, struct ibv_mr **mr_p)
{
	struct ibv_mr *mr;

	if (err)
		return rivet_errno_to_fi(err);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = len;
	mr->lkey = mr->rkey = 0x100 + g_mock.next_key++;
	g_mock.last_access = access;
	g_mock.last_iova = iova;
	g_mock.mrs++;
	*mr_p = mr;
	return 0;
}

int rivet_verbs_mr_reg(struct ibv_pd *pd, void *addr, size_t len,
		       int access, struct ibv_mr **mr_p)
{
	return mock_reg(pd, addr, len, (uintptr_t)addr, access,
			g_mock.reg_errno, mr_p);
}

int rivet_verbs_mr_reg_iova(struct ibv_pd *pd, void *addr, size_t len,
			    uint64_t iova, int access, struct ibv_mr **mr_p)
{
	return mock_reg(pd, addr, len, iova, access, g_mock.reg_iova_errno,
			mr_p);
}

int rivet_verbs_mr_dereg(struct ibv_mr *mr)
{
	if (g_mock.dereg_errno)
		return rivet_errno_to_fi(g_mock.dereg_errno);
	free(mr);
	g_mock.mrs--;
	return 0;
}

bool rivet_verbs_fork_safe(void)
{
	return true;
}
