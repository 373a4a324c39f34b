/* SPDX-License-Identifier: MIT */
/*
 * Connection management of MSG endpoints over librdmacm: fi_connect,
 * fi_accept, fi_shutdown, names, and the translation of rdma_cm events into
 * EQ events (FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN and error entries).
 */
#include <stdlib.h>

#include "rivet.h"

#define RIVET_CM_TIMEOUT_MS 2000
#define RIVET_RNR_RETRY 7	/* 7 = retry forever: RNR is never an error */

static struct rivet_eq_event *rivet_cm_event_alloc(struct fid *fid,
						   uint32_t event)
{
	struct rivet_eq_event *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	ev->event = event;
	ev->entry.fid = fid;
	ev->entry.context = fid->context;
	return ev;
}

static void rivet_cm_event_set_data(struct rivet_eq_event *ev,
				    const void *data, size_t len)
{
	len = RIVET_MIN(len, sizeof(ev->data));
	if (data && len)
		memcpy(ev->data, data, len);
	ev->data_len = data ? len : 0;
}

void rivet_ep_push_event(struct rivet_ep *ep, uint32_t event, int err,
			 int prov_errno, const void *data, size_t len)
{
	struct rivet_eq_event *ev = rivet_cm_event_alloc(&ep->ep_fid.fid,
							 event);

	if (!ev) {
		RIVET_WARN(EP_CTRL, "out of memory: event %u lost\n", event);
		return;
	}
	rivet_cm_event_set_data(ev, data, len);
	if (err) {
		ev->is_err = true;
		ev->entry.err = err;
		ev->entry.prov_errno = prov_errno;
	}
	rivet_eq_push(ep->eq, ev);
}

static void rivet_cm_conn_param(struct rivet_ep *ep,
				struct rdma_conn_param *param)
{
	const struct ibv_device_attr *a = &ep->domain->dev->attr;

	memset(param, 0, sizeof(*param));
	param->private_data = ep->cm_data;
	param->private_data_len = ep->cm_data_len;
	param->responder_resources = RIVET_MIN(a->max_qp_rd_atom, 16);
	param->initiator_depth = RIVET_MIN(a->max_qp_init_rd_atom, 16);
	param->retry_count = rivet_retry_count(g_rivet_params.retry_count,
					       a->vendor_id);
	param->rnr_retry_count = RIVET_RNR_RETRY;
}

static int rivet_ep_connect(struct fid_ep *fid, const void *addr,
			    const void *param, size_t paramlen)
{
	struct rivet_ep *ep = to_rep(fid);
	const struct sockaddr *sa = addr;
	int ret;

	if (!addr || !rivet_addr_len(sa))
		return -FI_EINVAL;
	if (paramlen > RIVET_CM_DATA_SIZE || (paramlen && !param))
		return -FI_EINVAL;
	if (ep->state == RIVET_EP_IDLE) {
		ret = rivet_ep_enable(ep);
		if (ret)
			return ret;
	}
	if (ep->state != RIVET_EP_ENABLED || ep->connreq)
		return -FI_EOPBADSTATE;
	ret = rivet_cm_data_pack(param, paramlen, ep->cm_data,
				 sizeof(ep->cm_data), &ep->cm_data_len);
	if (ret)
		return ret;
	memcpy(&ep->dst, sa, rivet_addr_len(sa));
	ep->state = RIVET_EP_CONNECTING;
	ret = rivet_verbs_cm_resolve_addr(ep->id, NULL, &ep->dst.sa,
					  RIVET_CM_TIMEOUT_MS);
	if (ret)
		ep->state = RIVET_EP_ENABLED;
	return ret;
}

static int rivet_ep_accept(struct fid_ep *fid, const void *param,
			   size_t paramlen)
{
	struct rivet_ep *ep = to_rep(fid);
	struct rdma_conn_param cp;
	int ret;

	if (paramlen > RIVET_CM_DATA_SIZE || (paramlen && !param))
		return -FI_EINVAL;
	if (!ep->connreq)
		return -FI_EOPBADSTATE;
	if (ep->state == RIVET_EP_IDLE) {
		ret = rivet_ep_enable(ep);
		if (ret)
			return ret;
	}
	if (ep->state != RIVET_EP_ENABLED)
		return -FI_EOPBADSTATE;
	ret = rivet_cm_data_pack(param, paramlen, ep->cm_data,
				 sizeof(ep->cm_data), &ep->cm_data_len);
	if (ret)
		return ret;
	rivet_cm_conn_param(ep, &cp);
	ep->state = RIVET_EP_ACCEPTING;
	rivet_id_set_ack_timeout(ep->id);
	ret = rivet_verbs_cm_accept(ep->id, &cp);
	if (ret)
		ep->state = RIVET_EP_ENABLED;
	return ret;
}

static int rivet_ep_shutdown(struct fid_ep *fid, uint64_t flags)
{
	struct rivet_ep *ep = to_rep(fid);
	int ret;

	if (flags)
		return -FI_EBADFLAGS;
	if (ep->state != RIVET_EP_CONNECTED &&
	    ep->state != RIVET_EP_CONNECTING &&
	    ep->state != RIVET_EP_ACCEPTING)
		return ep->state == RIVET_EP_SHUTDOWN ? 0 : -FI_EOPBADSTATE;
	ep->state = RIVET_EP_SHUTDOWN;
	ret = rivet_verbs_cm_disconnect(ep->id);
	return ret == -FI_EINVAL ? 0 : ret;	/* not yet connected */
}

static int rivet_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct rivet_ep *ep = container_of(fid, struct rivet_ep, ep_fid.fid);

	if (ep->id)
		return rivet_addr_copy_name(rdma_get_local_addr(ep->id), addr,
					  addrlen);
	return rivet_addr_copy_name(ep->src.sa.sa_family ? &ep->src.sa : NULL,
				  addr, addrlen);
}

static int rivet_ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct rivet_ep *ep = container_of(fid, struct rivet_ep, ep_fid.fid);
	const struct sockaddr *sa = addr;

	if (!addr || addrlen < sizeof(sa->sa_family) || !rivet_addr_len(sa) ||
	    addrlen < rivet_addr_len(sa))
		return -FI_EINVAL;
	if (ep->state != RIVET_EP_IDLE)
		return -FI_EOPBADSTATE;
	memcpy(&ep->src, sa, rivet_addr_len(sa));
	return 0;
}

static int rivet_ep_getpeer(struct fid_ep *fid, void *addr, size_t *addrlen)
{
	struct rivet_ep *ep = to_rep(fid);

	if (ep->id && ep->state >= RIVET_EP_CONNECTING)
		return rivet_addr_copy_name(rdma_get_peer_addr(ep->id), addr,
					  addrlen);
	return rivet_addr_copy_name(ep->dst.sa.sa_family ? &ep->dst.sa : NULL,
				  addr, addrlen);
}

struct fi_ops_cm g_rivet_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = rivet_ep_setname,
	.getname = rivet_ep_getname,
	.getpeer = rivet_ep_getpeer,
	.connect = rivet_ep_connect,
	.listen = rivet_no_listen,
	.accept = rivet_ep_accept,
	.reject = rivet_no_reject,
	.shutdown = rivet_ep_shutdown,
	.join = rivet_no_join,
};

/* ---- rdma_cm events ---- */

/* A connection request, copied out of its rdma_cm event so that the event
 * can be acked before any id is destroyed. */
struct rivet_cm_req {
	struct rdma_cm_id *id;
	uint8_t data[256];
	size_t data_len;
};

static int rivet_cm_connreq_info(struct rivet_pep *pep,
				 struct rivet_connreq *req,
				 struct fi_info **info_p)
{
	const struct sockaddr *peer = rdma_get_peer_addr(req->id);
	struct fi_info *info = fi_dupinfo(pep->info);

	if (!info)
		return -FI_ENOMEM;
	info->handle = &req->handle;
	free(info->dest_addr);
	info->dest_addrlen = rivet_addr_len(peer);
	info->dest_addr = malloc(info->dest_addrlen);
	if (!info->dest_addr) {
		fi_freeinfo(info);
		return -FI_ENOMEM;
	}
	memcpy(info->dest_addr, peer, info->dest_addrlen);
	*info_p = info;
	return 0;
}

static void rivet_cm_connreq(struct rivet_pep *pep,
			     const struct rivet_cm_req *cr)
{
	const void *data = NULL;
	size_t len = 0;
	struct rivet_connreq *req = calloc(1, sizeof(*req));
	struct rivet_eq_event *ev = NULL;
	struct fi_info *info = NULL;

	if (!req)
		goto reject;
	req->handle.fclass = FI_CLASS_CONNREQ;
	req->id = cr->id;
	req->pep = pep;
	cr->id->context = NULL;	/* claimed by the endpoint that accepts */
	ev = rivet_cm_event_alloc(&pep->pep_fid.fid, FI_CONNREQ);
	if (!ev || rivet_cm_connreq_info(pep, req, &info))
		goto reject;
	if (rivet_cm_data_unpack(cr->data, cr->data_len, &data, &len))
		RIVET_INFO(EP_CTRL, "connection request without rivet "
			   "private data header\n");
	rivet_cm_event_set_data(ev, data, len);
	ev->info = info;
	rivet_eq_push(pep->eq, ev);
	return;
reject:
	RIVET_WARN(EP_CTRL, "out of memory: rejecting a connection\n");
	rivet_verbs_cm_refuse(cr->id);
	free(ev);
	free(req);
}

static void rivet_cm_established(struct rivet_ep *ep, struct rdma_cm_event *cm)
{
	const void *data = NULL;
	size_t len = 0;

	if (ep->state == RIVET_EP_CONNECTING)
		rivet_cm_data_unpack(cm->param.conn.private_data,
				     cm->param.conn.private_data_len, &data,
				     &len);
	ep->state = RIVET_EP_CONNECTED;
	rivet_qp_set_rnr_timer(ep->qp);
	RIVET_DBG(EP_CTRL, "qp 0x%x connected\n", ep->qp->qp_num);
	rivet_ep_push_event(ep, FI_CONNECTED, 0, 0, data, len);
}

static void rivet_cm_route(struct rivet_ep *ep, struct rdma_cm_event *cm)
{
	struct rdma_conn_param cp;
	int ret;

	if (cm->event == RDMA_CM_EVENT_ADDR_RESOLVED)
		ret = rivet_verbs_cm_resolve_route(ep->id, RIVET_CM_TIMEOUT_MS);
	else {
		rivet_cm_conn_param(ep, &cp);
		ret = rivet_verbs_cm_connect(ep->id, &cp);
	}
	if (ret) {
		ep->state = RIVET_EP_ERROR;
		rivet_ep_push_event(ep, FI_CONNECTED, -ret, -ret, NULL, 0);
	}
}

static void rivet_cm_error(struct rivet_ep *ep, struct rdma_cm_event *cm)
{
	const void *data = NULL;
	size_t len = 0;
	int err;

	switch (cm->event) {
	case RDMA_CM_EVENT_REJECTED:
		err = FI_ECONNREFUSED;
		rivet_cm_data_unpack(cm->param.conn.private_data,
				     cm->param.conn.private_data_len, &data,
				     &len);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		err = FI_EHOSTUNREACH;
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		err = FI_ECONNABORTED;
		break;
	default:
		err = FI_EIO;
		break;
	}
	RIVET_INFO(EP_CTRL, "%s (status %d)\n", rdma_event_str(cm->event),
		   cm->status);
	ep->state = RIVET_EP_ERROR;
	rivet_ep_push_event(ep, FI_CONNECTED, err,
			    rivet_cm_err_pack(cm->event, cm->status), data,
			    len);
}

static void rivet_cm_disconnected(struct rivet_ep *ep)
{
	if (ep->state != RIVET_EP_SHUTDOWN)
		rivet_verbs_cm_disconnect(ep->id);
	ep->state = RIVET_EP_SHUTDOWN;
	if (ep->shutdown_reported)
		return;
	ep->shutdown_reported = true;
	rivet_ep_push_event(ep, FI_SHUTDOWN, 0, 0, NULL, 0);
}

static void rivet_cm_ep_event(struct rivet_ep *ep, struct rdma_cm_event *cm)
{
	switch (cm->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		rivet_cm_route(ep, cm);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		rivet_cm_established(ep, cm);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		rivet_cm_disconnected(ep);
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		rivet_cm_error(ep, cm);
		break;
	default:
		RIVET_DBG(EP_CTRL, "ignored %s\n", rdma_event_str(cm->event));
		break;
	}
}

static void rivet_cm_handle_connreq(struct rdma_cm_event *cm)
{
	struct fid *fid = cm->listen_id ? cm->listen_id->context : NULL;
	struct rivet_cm_req cr = { .id = cm->id };

	cr.data_len = RIVET_MIN((size_t)cm->param.conn.private_data_len,
				sizeof(cr.data));
	if (cm->param.conn.private_data)
		memcpy(cr.data, cm->param.conn.private_data, cr.data_len);
	rivet_verbs_cm_event_ack(cm);
	if (fid && fid->fclass == FI_CLASS_PEP) {
		rivet_cm_connreq(container_of(fid, struct rivet_pep,
					      pep_fid.fid), &cr);
	} else {
		rivet_verbs_cm_refuse(cr.id);
	}
}

void rivet_cm_handle_event(struct rivet_eq *eq, struct rdma_cm_event *cm)
{
	struct fid *fid;

	if (cm->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		rivet_cm_handle_connreq(cm);
		return;
	}
	fid = cm->id->context;
	if (fid && fid->fclass == FI_CLASS_EP)
		rivet_cm_ep_event(container_of(fid, struct rivet_ep,
					       ep_fid.fid), cm);
	else
		RIVET_DBG(EP_CTRL, "%s on an unclaimed id\n",
			  rdma_event_str(cm->event));
	rivet_verbs_cm_event_ack(cm);
}
