/* SPDX-License-Identifier: MIT */
/*
 * What the resource layer's tests (test_resource) link in place of the
 * layers above it: the provider descriptor (core/rivet_init.c, the entry)
 * and the opens that the domain's and fabric's ops tables name (the
 * endpoints' entry, ep/ and msg/).  contrib/layers.sh keeps the resource,
 * core, verbs and util layers from calling anything else above them, so
 * these are all they need.
 */
#include "rivet.h"

struct fi_provider g_rivet_prov = {
	.name = RIVET_PROV_NAME,
	.version = RIVET_PROV_VERSION,
	.fi_version = FI_VERSION(1, 17),
};

int rivet_ep_open(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **ep_p, void *context)
{
	return -FI_ENOSYS;
}

int rivet_ep_open2(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep_p, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

int rivet_ep_scalable_open(struct fid_domain *domain, struct fi_info *info,
			   struct fid_ep **sep_p, void *context)
{
	return -FI_ENOSYS;
}

int rivet_srx_ctx_open(struct fid_domain *domain, struct fi_rx_attr *attr,
		       struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

int rivet_stx_open(struct fid_domain *domain, struct fi_tx_attr *attr,
		   struct fid_stx **stx_p, void *context)
{
	return -FI_ENOSYS;
}

int rivet_pep_open(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep_p, void *context)
{
	return -FI_ENOSYS;
}
