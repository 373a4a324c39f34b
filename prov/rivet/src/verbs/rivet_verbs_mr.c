/* SPDX-License-Identifier: MIT */
/*
 * The verbs seam for protection domains and memory registrations: each
 * call's error logged and converted to a negative FI_E* code here, once.
 * The domain and the regions (resource/rivet_domain.c, rivet_mr.c,
 * rivet_mr_monitor.c) reach verbs only through these, so their unit tests
 * (test/test_mr.c) link a scripted double instead (test/mock_verbs_mr.c).
 */
#include "rivet.h"

int rivet_verbs_pd_alloc(struct ibv_context *ctx, struct ibv_pd **pd_p)
{
	int ret;

	*pd_p = ibv_alloc_pd(ctx);
	if (*pd_p)
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(DOMAIN, "ibv_alloc_pd", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_pd_dealloc(struct ibv_pd *pd)
{
	int ret = ibv_dealloc_pd(pd);

	if (ret)
		RIVET_WARN_ERRNO(DOMAIN, "ibv_dealloc_pd", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_mr_reg(struct ibv_pd *pd, void *addr, size_t len,
		       int access, struct ibv_mr **mr_p)
{
	int ret;

	*mr_p = ibv_reg_mr(pd, addr, len, access);
	if (*mr_p)
		return 0;
	ret = errno;
	/* out of pinned memory: the caller may shrink its cache and retry */
	if (ret == ENOMEM || ret == EAGAIN)
		RIVET_INFO(MR, "ibv_reg_mr: %s\n", strerror(ret));
	else
		RIVET_WARN_ERRNO(MR, "ibv_reg_mr", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_mr_reg_iova(struct ibv_pd *pd, void *addr, size_t len,
			    uint64_t iova, int access, struct ibv_mr **mr_p)
{
	int ret;

	*mr_p = ibv_reg_mr_iova(pd, addr, len, iova, access);
	if (*mr_p)
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(MR, "ibv_reg_mr_iova", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_mr_dereg(struct ibv_mr *mr)
{
	int ret = ibv_dereg_mr(mr);

	if (ret)
		RIVET_WARN_ERRNO(MR, "ibv_dereg_mr", ret);
	return rivet_errno_to_fi(ret);
}

bool rivet_verbs_fork_safe(void)
{
	return ibv_is_fork_initialized() != IBV_FORK_DISABLED;
}
