/* SPDX-License-Identifier: MIT */
/*
 * The domain: one verbs device (librdmacm's context for it) and a PD, the
 * opener of CQs, counters, endpoints and memory regions.
 */
#include <stdlib.h>

#include "rivet.h"
#include "rivet_atomic.h"
#include "rivet_map.h"
#include "rivet_av.h"
#include "rivet_set.h"

static int rivet_domain_close(struct fid *fid)
{
	struct rivet_domain *dom = container_of(fid, struct rivet_domain,
						domain_fid.fid);
	int ret;

	if (atomic_load(&dom->refcnt))
		return -FI_EBUSY;
	rivet_mr_cache_close(dom);
	ret = rivet_verbs_pd_dealloc(dom->pd);
	if (ret)
		return ret;
	atomic_fetch_sub(&dom->fabric->refcnt, 1);
	rivet_u32_map_destruct(dom->mr_keys);
	free(dom->mr_keys);
	pthread_mutex_destroy(&dom->mr_lock);
	rivet_trig_destruct(dom);
	fi_freeinfo(dom->info);
	free(dom);
	return 0;
}

static int rivet_domain_av_open(struct fid_domain *domain,
				struct fi_av_attr *attr, struct fid_av **av,
				void *context)
{
	return rivet_av_open(domain, attr, av, context);
}

/* RDM endpoints (rivet_rdm_atomic.c) offer every triple
 * rivet_atomic_supported accepts, as many elements as one message carries
 * (FI_RIVET_NATIVE_ATOMICS: the HCA's only); MSG endpoints
 * (rivet_msg_atomic.c) the HCA's and what a compare-and-swap loop can do.
 * flags: FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC (not both). */
static int rivet_domain_query_atomic(struct fid_domain *domain,
				     enum fi_datatype datatype, enum fi_op op,
				     struct fi_atomic_attr *attr,
				     uint64_t flags)
{
	struct rivet_domain *dom = to_rdomain(domain);
	enum rivet_atomic_kind kind = RIVET_ATOMIC_WRITE;
	bool msg = !dom->info->ep_attr ||
		   dom->info->ep_attr->type != FI_EP_RDM;
	bool native = dom->native_atomics && !msg;

	if (!attr || (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC)) ||
	    (flags & FI_FETCH_ATOMIC && flags & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	if (flags & FI_FETCH_ATOMIC)
		kind = RIVET_ATOMIC_FETCH;
	else if (flags & FI_COMPARE_ATOMIC)
		kind = RIVET_ATOMIC_COMPARE;
	if (msg ? !rivet_atomic_msg_supported(op, datatype, kind) :
		  !rivet_atomic_offered(native, op, datatype, kind))
		return -FI_EOPNOTSUPP;
	attr->size = rivet_atomic_size(datatype);
	attr->count = rivet_atomic_offered_count(native, datatype, kind);
	return 0;
}

static int rivet_domain_query_collective(struct fid_domain *domain,
					 enum fi_collective_op coll,
					 struct fi_collective_attr *attr,
					 uint64_t flags)
{
	return -FI_ENOSYS;
}

static struct fi_ops g_rivet_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_domain_close,
	.bind = rivet_no_bind,
	.control = rivet_no_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_domain g_rivet_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = rivet_domain_av_open,
	.cq_open = rivet_cq_open,
	.endpoint = rivet_ep_open,
	.scalable_ep = rivet_ep_scalable_open,
	.cntr_open = rivet_cntr_open,
	.poll_open = rivet_pollset_open,
	.stx_ctx = rivet_stx_open,
	.srx_ctx = rivet_srx_ctx_open,
	.query_atomic = rivet_domain_query_atomic,
	.query_collective = rivet_domain_query_collective,
	.endpoint2 = rivet_ep_open2,
};

static struct fi_ops_mr g_rivet_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = rivet_mr_reg,
	.regv = rivet_mr_regv,
	.regattr = rivet_mr_regattr,
};

static int rivet_domain_construct(struct rivet_domain *dom,
				  struct rivet_fabric *fab,
				  const struct fi_info *info)
{
	const struct rivet_dev *dev;
	int ret;

	dev = rivet_dev_lookup_name(info->domain_attr->name);
	if (!dev) {
		RIVET_WARN(DOMAIN, "no such device: %s\n",
			   info->domain_attr->name ?
			   info->domain_attr->name : "(null)");
		return -FI_ENODEV;
	}
	dom->dev = (struct rivet_dev *)dev;
	dom->info = fi_dupinfo(info);
	if (!dom->info)
		return -FI_ENOMEM;
	ret = rivet_verbs_pd_alloc(dev->ctx, &dom->pd);
	if (ret) {
		fi_freeinfo(dom->info);
		return ret;
	}
	dom->mr_keys = calloc(1, sizeof(*dom->mr_keys));
	if (!dom->mr_keys) {
		rivet_verbs_pd_dealloc(dom->pd);
		fi_freeinfo(dom->info);
		return -FI_ENOMEM;
	}
	rivet_u32_map_construct(dom->mr_keys);
	pthread_mutex_init(&dom->mr_lock, NULL);
	if (rivet_mr_cache_open(dom)) {
		pthread_mutex_destroy(&dom->mr_lock);
		free(dom->mr_keys);
		rivet_verbs_pd_dealloc(dom->pd);
		fi_freeinfo(dom->info);
		return -FI_ENOMEM;
	}
	rivet_trig_construct(dom);
	dom->fabric = fab;
	dom->threading = info->domain_attr->threading;
	dom->native_atomics = g_rivet_params.native_atomics &&
			      dev->attr.atomic_cap != IBV_ATOMIC_NONE;
	dom->mr_mode = info->domain_attr->mr_mode;
	dom->poll_yield_ns = rivet_poll_yield_ns(g_rivet_params.poll_yield_usec,
						 dev->attr.vendor_id);
	dom->rx_cq_data = (info->mode & FI_RX_CQ_DATA) ||
			  (info->rx_attr && (info->rx_attr->mode &
					     FI_RX_CQ_DATA));
	return 0;
}

int rivet_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain_p, void *context)
{
	struct rivet_fabric *fab = to_rfabric(fabric);
	struct rivet_domain *dom;
	int ret;

	if (!info || !info->domain_attr || !domain_p)
		return -FI_EINVAL;
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	ret = rivet_domain_construct(dom, fab, info);
	if (ret) {
		free(dom);
		return ret;
	}
	atomic_fetch_add(&fab->refcnt, 1);
	dom->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain_fid.fid.context = context;
	dom->domain_fid.fid.ops = &g_rivet_domain_fi_ops;
	dom->domain_fid.ops = &g_rivet_domain_ops;
	dom->domain_fid.mr = &g_rivet_mr_ops;
	*domain_p = &dom->domain_fid;
	return 0;
}
