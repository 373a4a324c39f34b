/* SPDX-License-Identifier: MIT */
/*
 * Passive endpoints: an rdma_cm listening id bound to the EQ's channel;
 * connection requests reach the application as FI_CONNREQ (rivet_msg_cm.c),
 * and fi_reject answers them here.
 */
#include <stdlib.h>

#include "rivet.h"

static int rivet_pep_close(struct fid *fid)
{
	struct rivet_pep *pep = container_of(fid, struct rivet_pep,
					     pep_fid.fid);

	if (pep->id)
		rivet_verbs_cm_id_destroy(pep->id);
	if (pep->eq)
		atomic_fetch_sub(&pep->eq->refcnt, 1);
	atomic_fetch_sub(&pep->fabric->refcnt, 1);
	fi_freeinfo(pep->info);
	free(pep);
	return 0;
}

static int rivet_pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct rivet_pep *pep = container_of(fid, struct rivet_pep,
					     pep_fid.fid);

	if (!bfid || bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	if (pep->eq)
		return -FI_EINVAL;
	pep->eq = container_of(bfid, struct rivet_eq, eq_fid.fid);
	rivet_eq_set_cm_handler(pep->eq, rivet_cm_handle_event);
	atomic_fetch_add(&pep->eq->refcnt, 1);
	return 0;
}

static int rivet_pep_control(struct fid *fid, int command, void *arg)
{
	struct rivet_pep *pep = container_of(fid, struct rivet_pep,
					     pep_fid.fid);

	switch (command) {
	case FI_BACKLOG:
		if (!arg || *(int *)arg <= 0)
			return -FI_EINVAL;
		pep->backlog = *(int *)arg;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int rivet_pep_bind_addr(struct rivet_pep *pep)
{
	int ret;

	ret = rivet_verbs_cm_id_create(pep->eq->channel, &pep->pep_fid.fid,
				       RDMA_PS_TCP, &pep->id);
	if (ret)
		return ret;
	rivet_id_set_tos(pep->id, pep->tos);
	if (!pep->src.sa.sa_family)
		pep->src.sin.sin_family = AF_INET;	/* wildcard */
	ret = rivet_verbs_cm_bind(pep->id, &pep->src.sa);
	if (ret) {
		rivet_verbs_cm_id_destroy(pep->id);
		pep->id = NULL;
	}
	return ret;
}

static int rivet_pep_listen(struct fid_pep *fid)
{
	struct rivet_pep *pep = container_of(fid, struct rivet_pep, pep_fid);
	int ret;

	if (pep->surrendered)
		return -FI_EOPBADSTATE;
	if (!pep->eq)
		return -FI_ENOEQ;
	if (pep->listening)
		return 0;
	if (!pep->id) {
		ret = rivet_pep_bind_addr(pep);
		if (ret)
			return ret;
	}
	ret = rivet_verbs_cm_listen_on(pep->id, pep->backlog);
	if (ret)
		return ret;
	pep->listening = true;
	return 0;
}

static int rivet_pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct rivet_pep *pep = container_of(fid, struct rivet_pep,
					     pep_fid.fid);
	const struct sockaddr *sa = pep->id ? rdma_get_local_addr(pep->id) :
				    &pep->src.sa;

	return rivet_addr_copy_name(sa, addr, addrlen);
}

static int rivet_pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct rivet_pep *pep = container_of(fid, struct rivet_pep,
					     pep_fid.fid);
	const struct sockaddr *sa = addr;

	if (!addr || addrlen < sizeof(sa->sa_family) || !rivet_addr_len(sa) ||
	    addrlen < rivet_addr_len(sa))
		return -FI_EINVAL;
	if (pep->id || pep->surrendered)
		return -FI_EOPBADSTATE;
	memcpy(&pep->src, sa, rivet_addr_len(sa));
	return 0;
}

static int rivet_pep_reject(struct fid_pep *fid, fid_t handle,
			    const void *param, size_t paramlen)
{
	struct rivet_connreq *req;
	uint8_t buf[RIVET_CM_DATA_SIZE + RIVET_CM_HDR_SIZE];
	size_t len;
	int ret;

	if (!handle || handle->fclass != FI_CLASS_CONNREQ)
		return -FI_EINVAL;
	if (paramlen > RIVET_CM_DATA_SIZE || (paramlen && !param))
		return -FI_EINVAL;
	req = container_of(handle, struct rivet_connreq, handle);
	ret = rivet_cm_data_pack(param, paramlen, buf, sizeof(buf), &len);
	if (ret)
		return ret;
	ret = rivet_verbs_cm_reject(req->id, buf, (uint8_t)len);
	rivet_verbs_cm_id_destroy(req->id);
	free(req);
	return ret;
}

static int rivet_pep_getopt(fid_t fid, int level, int optname, void *optval,
			    size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t)) {
		if (optlen)
			*optlen = sizeof(size_t);
		return -FI_ETOOSMALL;
	}
	*(size_t *)optval = RIVET_CM_DATA_SIZE;
	*optlen = sizeof(size_t);
	return 0;
}

static int rivet_pep_setopt(fid_t fid, int level, int optname,
			    const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static ssize_t rivet_pep_cancel(fid_t fid, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rivet_pep_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

static struct fi_ops g_rivet_pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_pep_close,
	.bind = rivet_pep_bind,
	.control = rivet_pep_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_ep g_rivet_pep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = rivet_pep_cancel,
	.getopt = rivet_pep_getopt,
	.setopt = rivet_pep_setopt,
	.tx_ctx = rivet_no_tx_ctx,
	.rx_ctx = rivet_no_rx_ctx,
	.rx_size_left = rivet_pep_size_left,
	.tx_size_left = rivet_pep_size_left,
};

static struct fi_ops_cm g_rivet_pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = rivet_pep_setname,
	.getname = rivet_pep_getname,
	.getpeer = rivet_no_getpeer,
	.connect = rivet_no_connect,
	.listen = rivet_pep_listen,
	.accept = rivet_no_accept,
	.reject = rivet_pep_reject,
	.shutdown = rivet_no_shutdown,
	.join = rivet_no_join,
};

int rivet_pep_open(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep_p, void *context)
{
	struct rivet_fabric *fab = to_rfabric(fabric);
	struct rivet_pep *pep;

	if (!info || !pep_p || (info->ep_attr &&
				info->ep_attr->type != FI_EP_MSG))
		return -FI_EINVAL;
	if (rivet_tclass_tos(rivet_info_tclass(info), NULL))
		return -FI_EINVAL;
	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	pep->info = fi_dupinfo(info);
	if (!pep->info) {
		free(pep);
		return -FI_ENOMEM;
	}
	if (info->src_addr && rivet_addr_len(info->src_addr))
		memcpy(&pep->src, info->src_addr,
		       rivet_addr_len(info->src_addr));
	pep->fabric = fab;
	pep->backlog = 128;
	rivet_tclass_tos(rivet_info_tclass(info), &pep->tos);
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = &g_rivet_pep_fi_ops;
	pep->pep_fid.ops = &g_rivet_pep_ops;
	pep->pep_fid.cm = &g_rivet_pep_cm_ops;
	atomic_fetch_add(&fab->refcnt, 1);
	*pep_p = &pep->pep_fid;
	return 0;
}

/*
 * fi_endpoint(3): an active endpoint may take over a passive endpoint's
 * address (socket-style setup: reserve the address, then decide which
 * side to play).  The pep gives up its rdma_cm id, listening or not, and
 * with it the address, which the endpoint binds when it is enabled; the
 * pep is only good for fi_close afterwards.  A pep with no address yet
 * hands over nothing (*addr_p untouched).
 */
int rivet_pep_surrender(struct fid *handle, union rivet_sockaddr *addr_p)
{
	struct rivet_pep *pep;
	const struct sockaddr *sa;

	if (handle->fclass != FI_CLASS_PEP ||
	    handle->ops != &g_rivet_pep_fi_ops)
		return -FI_EINVAL;
	pep = container_of(handle, struct rivet_pep, pep_fid.fid);
	if (pep->surrendered)
		return -FI_EOPBADSTATE;
	sa = pep->id ? rdma_get_local_addr(pep->id) : &pep->src.sa;
	if (rivet_addr_len(sa))
		memcpy(addr_p, sa, rivet_addr_len(sa));
	if (pep->id) {
		rivet_verbs_cm_id_destroy(pep->id);
		pep->id = NULL;
	}
	pep->listening = false;
	pep->surrendered = true;
	return 0;
}
