/* SPDX-License-Identifier: MIT */
/*
 * Memory regions: one ibv_mr each (two with offset addressing, see struct
 * rivet_mr); fi_mr_desc is the rivet_mr itself and fi_mr_key an rkey
 * (FI_MR_PROV_KEY).  No registration cache: what rivet registers for
 * itself lives exactly as long as the operation that needed it.
 */
#include <stdlib.h>

#include "rivet.h"
#include "rivet_cntr.h"
#include "rivet_map.h"

#define RIVET_MR_ACCESS_LOCAL (FI_SEND | FI_RECV | FI_READ | FI_WRITE)
#define RIVET_MR_ACCESS_ALL (RIVET_MR_ACCESS_LOCAL | FI_REMOTE_READ | \
			     FI_REMOTE_WRITE)

int rivet_mr_access_to_ibv(uint64_t access)
{
	int ibv = 0;

	/* Local writes (receives, read results) and remote writes both need
	 * LOCAL_WRITE; read-only memory can still be registered for sends. */
	if (access & (FI_RECV | FI_READ | FI_REMOTE_WRITE))
		ibv |= IBV_ACCESS_LOCAL_WRITE;
	if (access & FI_REMOTE_READ)
		ibv |= IBV_ACCESS_REMOTE_READ;
	if (access & FI_REMOTE_WRITE)	/* verbs atomics write too */
		ibv |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	return ibv;
}

static int rivet_mr_close(struct fid *fid)
{
	struct rivet_mr *mr = container_of(fid, struct rivet_mr, mr_fid.fid);
	int ret;

	if (atomic_load(&mr->busy)) {
		RIVET_WARN(MR, "fi_close of a region a rendezvous still "
			   "uses: -FI_EBUSY\n");
		return -FI_EBUSY;
	}
	/* no atomic or event of a peer may find it any more */
	pthread_mutex_lock(&mr->domain->mr_lock);
	rivet_u32_map_remove(mr->domain->mr_keys, (uint32_t)mr->mr_fid.key);
	if (mr->rma_cntr)
		atomic_fetch_sub(&mr->rma_cntr->refcnt, 1);
	mr->rma_cntr = NULL;
	pthread_mutex_unlock(&mr->domain->mr_lock);
	if (mr->remote_mr) {
		ret = rivet_verbs_mr_dereg(mr->remote_mr);
		if (ret)
			return ret;
		mr->remote_mr = NULL;
	}
	if (mr->ibv_mr) {
		ret = rivet_verbs_mr_dereg(mr->ibv_mr);
		if (ret)
			return ret;
		mr->ibv_mr = NULL;
	}
	atomic_fetch_sub(&mr->domain->refcnt, 1);
	free(mr);
	return 0;
}

struct rivet_mr *rivet_mr_lookup_locked(struct rivet_domain *dom,
					uint32_t key)
{
	RIVET_MUTEX_HELD(&dom->mr_lock);
	return rivet_u32_map_lookup(dom->mr_keys, key);
}

void rivet_mr_rma_event_locked(struct rivet_mr *mr, uint64_t flag)
{
	if (mr)
		RIVET_MUTEX_HELD(&mr->domain->mr_lock);
	if (!mr || !mr->rma_cntr || !(mr->cntr_flags & flag))
		return;
	if ((mr->domain->mr_mode & FI_MR_RMA_EVENT) && !mr->enabled)
		return;
	rivet_cntr_inc(mr->rma_cntr);
}

struct rivet_mr *rivet_mr_remote_locked(struct rivet_domain *dom,
					uint64_t key, uint64_t addr,
					uint64_t len, uint64_t need)
{
	struct rivet_mr *mr = key > UINT32_MAX ? NULL :
			      rivet_mr_lookup_locked(dom, (uint32_t)key);
	uint64_t start, end;

	if (!mr || (mr->access & need) != need)
		return NULL;
	start = mr->iova;	/* the peer's addresses */
	end = start + mr->ibv_mr->length;
	if (addr < start || addr > end || len > end - addr)
		return NULL;
	return mr;
}

bool rivet_mr_rma_event(struct rivet_domain *dom, uint32_t key,
			uint64_t addr, uint64_t len, uint64_t need,
			uint64_t flag)
{
	struct rivet_mr *mr;

	pthread_mutex_lock(&dom->mr_lock);
	mr = rivet_mr_remote_locked(dom, key, addr, len, need);
	rivet_mr_rma_event_locked(mr, flag);
	pthread_mutex_unlock(&dom->mr_lock);
	return mr != NULL;
}

/*
 * fi_mr_bind with a counter: RMA and atomics of peers aimed at the region
 * count there (FI_REMOTE_READ, FI_REMOTE_WRITE).  Only RDM endpoints of a
 * domain with FI_RMA_EVENT hear of them (the initiator's event message
 * names the rkey); one counter per region.
 */
static int rivet_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct rivet_mr *mr = container_of(fid, struct rivet_mr, mr_fid.fid);
	struct rivet_domain *dom = mr->domain;
	struct rivet_cntr *cntr;

	if (!bfid || bfid->fclass != FI_CLASS_CNTR)
		return -FI_EINVAL;
	if (!flags || (flags & ~(FI_REMOTE_READ | FI_REMOTE_WRITE)))
		return -FI_EINVAL;
	if (!dom->info || !(dom->info->caps & FI_RMA_EVENT) ||
	    !(mr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE)))
		return -FI_EINVAL;
	cntr = container_of(bfid, struct rivet_cntr, cntr_fid.fid);
	if (cntr->domain != dom)
		return -FI_EINVAL;
	pthread_mutex_lock(&dom->mr_lock);
	if (mr->rma_cntr && mr->rma_cntr != cntr) {
		pthread_mutex_unlock(&dom->mr_lock);
		return -FI_EBUSY;
	}
	if (!mr->rma_cntr)
		atomic_fetch_add(&cntr->refcnt, 1);
	mr->rma_cntr = cntr;
	mr->cntr_flags |= flags;
	pthread_mutex_unlock(&dom->mr_lock);
	return 0;
}

static int rivet_mr_control(struct fid *fid, int command, void *arg)
{
	struct rivet_mr *mr = container_of(fid, struct rivet_mr, mr_fid.fid);

	(void)arg;
	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	pthread_mutex_lock(&mr->domain->mr_lock);
	mr->enabled = true;
	pthread_mutex_unlock(&mr->domain->mr_lock);
	return 0;
}

static struct fi_ops g_rivet_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_mr_close,
	.bind = rivet_mr_bind,
	.control = rivet_mr_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

/* The core's utility providers (ofi_rxm) pass their internal
 * OFI_MR_NOCACHE (bit 60) to the providers they layer over: accept it.
 * Every other flag rivet does not act on is refused. */
#define RIVET_MR_CORE_FLAGS (1ULL << 60)

/* The application's attr ends where its API version's does: auth_key_size
 * came in 1.5, iface in 1.9. */
static int rivet_mr_check(const struct fi_mr_attr *attr, uint64_t flags,
			  uint32_t version)
{
	if (flags & ~RIVET_MR_CORE_FLAGS)
		return -FI_EBADFLAGS;
	if (attr->iov_count != 1 || !attr->mr_iov)
		return -FI_EINVAL;
	if (attr->access & ~RIVET_MR_ACCESS_ALL)
		return -FI_EINVAL;
	/* fi_mr(3): len "must be > 0" */
	if (!attr->mr_iov[0].iov_base || !attr->mr_iov[0].iov_len)
		return -FI_EINVAL;
	if (RIVET_API_AT_LEAST(version, 1, 9) &&
	    attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	if (RIVET_API_AT_LEAST(version, 1, 5) && attr->auth_key_size)
		return -FI_EINVAL;
	return 0;
}

/* Whether the application picks the keys (fi_mr(3): no FI_MR_PROV_KEY in
 * a domain of API >= 1.5 bits).  rivet's getinfo offers no remote access
 * to such domains (peers use the HCA's rkeys), so their keys name the
 * regions to the application alone: honoured, and unique. */
static bool rivet_mr_user_keys(const struct rivet_domain *dom)
{
	const struct fi_info *info = dom->info;
	uint32_t version = info && info->fabric_attr ?
			   info->fabric_attr->api_version : 0;

	/* before 1.5, 0 (FI_MR_UNSPEC) and FI_MR_BASIC are provider keys */
	if (version < FI_VERSION(1, 5))
		return dom->mr_mode == RIVET_MR_SCALABLE;
	return !(dom->mr_mode & (FI_MR_PROV_KEY | RIVET_MR_BASIC |
				 RIVET_MR_SCALABLE));
}

int rivet_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		     uint64_t flags, struct fid_mr **mr_p)
{
	struct rivet_domain *dom;
	struct rivet_mr *mr;
	uint64_t access;
	int ret;

	if (!fid || fid->fclass != FI_CLASS_DOMAIN || !attr || !mr_p)
		return -FI_EINVAL;
	dom = container_of(fid, struct rivet_domain, domain_fid.fid);
	ret = rivet_mr_check(attr, flags, dom->fabric->api_version);
	if (ret)
		return ret;
	if (rivet_mr_user_keys(dom) && attr->requested_key > UINT32_MAX)
		return -FI_EKEYREJECTED;	/* mr_key_size is 4 */
	/* access 0 asks for no right in particular: every local use, and
	 * no peer may read or write the region (fi_mr(3) lets a provider
	 * relax access only "provided security is maintained") */
	access = attr->access ? attr->access : RIVET_MR_ACCESS_LOCAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	/* exactly what was asked: a rendezvous from a region without
	 * FI_REMOTE_READ registers the message's bytes alone */
	mr->ibv_access = rivet_mr_access_to_ibv(access);
	ret = rivet_verbs_mr_reg(dom->pd, attr->mr_iov[0].iov_base,
				 attr->mr_iov[0].iov_len, mr->ibv_access,
				 &mr->ibv_mr);
	if (ret) {
		free(mr);
		return ret;
	}
	mr->mr_fid.key = mr->ibv_mr->rkey;
	mr->iova = (uintptr_t)attr->mr_iov[0].iov_base;
	if (!rivet_domain_virt_addr(dom) &&
	    (access & (FI_REMOTE_READ | FI_REMOTE_WRITE))) {
		ret = rivet_verbs_mr_reg_iova(dom->pd,
					      attr->mr_iov[0].iov_base,
					      attr->mr_iov[0].iov_len, 0,
					      mr->ibv_access, &mr->remote_mr);
		if (ret) {
			rivet_verbs_mr_dereg(mr->ibv_mr);
			free(mr);
			return ret;
		}
		mr->mr_fid.key = mr->remote_mr->rkey;
		mr->iova = 0;
	}
	if (rivet_mr_user_keys(dom))
		mr->mr_fid.key = attr->requested_key;
	mr->domain = dom;
	mr->access = access;
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = &g_rivet_mr_fi_ops;
	mr->mr_fid.mem_desc = mr;
	pthread_mutex_lock(&dom->mr_lock);
	ret = rivet_u32_map_insert(dom->mr_keys, (uint32_t)mr->mr_fid.key, mr);
	pthread_mutex_unlock(&dom->mr_lock);
	if (ret) {
		if (mr->remote_mr)
			rivet_verbs_mr_dereg(mr->remote_mr);
		rivet_verbs_mr_dereg(mr->ibv_mr);
		free(mr);
		if (ret != -FI_EALREADY)
			return ret;
		/* fi_mr(3): a requested key in use is FI_ENOKEY */
		return rivet_mr_user_keys(dom) ? -FI_ENOKEY : -FI_EKEYREJECTED;
	}
	atomic_fetch_add(&dom->refcnt, 1);
	*mr_p = &mr->mr_fid;
	return 0;
}

int rivet_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr_p, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return rivet_mr_regattr(fid, &attr, flags, mr_p);
}

int rivet_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags,
		 struct fid_mr **mr_p, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rivet_mr_regv(fid, &iov, 1, access, offset, requested_key,
			     flags, mr_p, context);
}
