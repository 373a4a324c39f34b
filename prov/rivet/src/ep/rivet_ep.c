/* SPDX-License-Identifier: MIT */
/*
 * fi_endpoint, fi_endpoint2, fi_scalable_ep, fi_srx_context: the domain's
 * ops table names these, and they open an endpoint (or receive context)
 * of the info's type, so the domain knows none.  Nothing of rivet's calls
 * this file (contrib/layers.sh): it is the endpoints' entry.
 */
#include "rivet.h"
#include "rivet_rdm.h"

int rivet_ep_open(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **ep_p, void *context)
{
	if (!info || !info->ep_attr)
		return -FI_EINVAL;
	switch (info->ep_attr->type) {
	case FI_EP_MSG:
		return rivet_msg_ep_open(domain, info, ep_p, context);
	case FI_EP_RDM:
		return rivet_rdm_ep_open(domain, info, ep_p, context);
	case FI_EP_DGRAM:
		return rivet_dgram_ep_open(domain, info, ep_p, context);
	default:
		return -FI_ENOSYS;
	}
}

/* fi_scalable_ep: FI_EP_RDM only */
int rivet_ep_scalable_open(struct fid_domain *domain, struct fi_info *info,
			   struct fid_ep **sep_p, void *context)
{
	return rivet_sep_open(to_rdomain(domain), info, sep_p, context);
}

int rivet_ep_open2(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep_p, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return rivet_ep_open(domain, info, ep_p, context);
}

/* fi_srx_context: the kind of the domain's endpoints decides. */
int rivet_srx_ctx_open(struct fid_domain *domain, struct fi_rx_attr *attr,
		       struct fid_ep **rx_ep, void *context)
{
	struct rivet_domain *dom = to_rdomain(domain);
	const struct fi_ep_attr *ea = dom->info->ep_attr;
	enum fi_ep_type type = ea ? ea->type : FI_EP_MSG;

	if (!rx_ep)
		return -FI_EINVAL;
	if (type == FI_EP_RDM)
		return rivet_rdm_srx_open(dom, attr, rx_ep, context);
	if (type != FI_EP_MSG && type != FI_EP_DGRAM)
		return -FI_EOPNOTSUPP;
	return rivet_srx_open(dom, type, attr, rx_ep, context);
}
