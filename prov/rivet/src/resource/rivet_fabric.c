/* SPDX-License-Identifier: MIT */
/*
 * The fabric object: the root of rivet's objects, opener of domains,
 * passive endpoints, event queues and wait sets, and fi_trywait.
 */
#include <stdlib.h>

#include "rivet.h"
#include "rivet_set.h"

static int rivet_fabric_close(struct fid *fid)
{
	struct rivet_fabric *fab = container_of(fid, struct rivet_fabric,
						fabric_fid.fid);

	if (atomic_load(&fab->refcnt))
		return -FI_EBUSY;
	free(fab->name);
	free(fab);
	return 0;
}

static int rivet_fabric_trywait(struct fid_fabric *fabric, struct fid **fids,
				int count)
{
	int i, ret = 0;

	if (count < 0 || (count && !fids))
		return -FI_EINVAL;
	for (i = 0; i < count && !ret; i++) {
		if (!fids[i])
			return -FI_EINVAL;
		switch (fids[i]->fclass) {
		case FI_CLASS_CQ:
			ret = rivet_cq_trywait(container_of(fids[i],
					struct rivet_cq, cq_fid.fid));
			break;
		case FI_CLASS_CNTR:
			ret = rivet_cntr_trywait(container_of(fids[i],
					struct rivet_cntr, cntr_fid.fid));
			break;
		case FI_CLASS_EQ:
			ret = rivet_eq_trywait(container_of(fids[i],
					struct rivet_eq, eq_fid.fid));
			break;
		case FI_CLASS_WAIT:
			ret = rivet_waitset_trywait(container_of(fids[i],
					struct rivet_waitset, wait_fid.fid));
			break;
		default:
			return -FI_EINVAL;
		}
	}
	return ret;
}

static int rivet_fabric_domain2(struct fid_fabric *fabric,
				struct fi_info *info,
				struct fid_domain **dom, uint64_t flags,
				void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return rivet_domain_open(fabric, info, dom, context);
}

static struct fi_ops g_rivet_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_fabric_close,
	.bind = rivet_no_bind,
	.control = rivet_no_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_fabric g_rivet_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = rivet_domain_open,
	.passive_ep = rivet_pep_open,
	.eq_open = rivet_eq_open,
	.wait_open = rivet_waitset_open,
	.trywait = rivet_fabric_trywait,
	.domain2 = rivet_fabric_domain2,
};

int rivet_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric_p,
		      void *context)
{
	struct rivet_fabric *fab;

	if (!attr || !fabric_p)
		return -FI_EINVAL;
	if (attr->prov_name && strcmp(attr->prov_name, RIVET_PROV_NAME))
		return -FI_ENODATA;
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	fab->name = attr->name ? strdup(attr->name) : NULL;
	/* 0: a hand-made attr; take this build's layout */
	fab->api_version = attr->api_version ? attr->api_version :
			   RIVET_API_VERSION;
	fab->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric_fid.fid.context = context;
	fab->fabric_fid.fid.ops = &g_rivet_fabric_fi_ops;
	fab->fabric_fid.ops = &g_rivet_fabric_ops;
	*fabric_p = &fab->fabric_fid;
	return 0;
}
