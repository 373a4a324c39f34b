/* SPDX-License-Identifier: MIT */
/*
 * The verbs seam, librdmacm: event channels and their events; ids made,
 * bound, listening, resolving an address and a route, connecting,
 * accepted, rejected, migrated, disconnected, destroyed; a connection's
 * QP made through its id (with the extended send API where the device
 * has it); the options every connection gets (type of service, ACK
 * timeout).  Each call's error is logged and converted to a negative
 * FI_E* code here, once (a disconnect's and an option's only logged).
 * The unit tests link scripted doubles instead (test/mock_verbs_cm.c,
 * _ep.c).
 */
#include "rivet.h"

int rivet_verbs_cm_channel_create(struct rdma_event_channel **ch_p)
{
	int ret;

	*ch_p = rdma_create_event_channel();
	if (*ch_p)
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(EQ, "rdma_create_event_channel", ret);
	return rivet_errno_to_fi(ret);
}

void rivet_verbs_cm_channel_destroy(struct rdma_event_channel *ch)
{
	if (ch)
		rdma_destroy_event_channel(ch);
}

int rivet_verbs_cm_event_get(struct rdma_event_channel *ch,
			     struct rdma_cm_event **ev_p)
{
	int ret;

	if (!rdma_get_cm_event(ch, ev_p))
		return 0;
	ret = errno;
	if (ret == EAGAIN || ret == EWOULDBLOCK)
		return -FI_EAGAIN;	/* a nonblocking channel, empty */
	RIVET_WARN_ERRNO(EQ, "rdma_get_cm_event", ret);
	return rivet_errno_to_fi(ret);
}

void rivet_verbs_cm_event_ack(struct rdma_cm_event *ev)
{
	rdma_ack_cm_event(ev);
}

void rivet_verbs_cm_refuse(struct rdma_cm_id *id)
{
	if (rdma_reject(id, NULL, 0))
		RIVET_INFO(EQ, "rdma_reject: %s\n", strerror(errno));
	rdma_destroy_id(id);
}

/* Before the route is resolved: rdma_cm puts the TOS in the RoCE GRH and
 * asks IB's subnet manager for the matching service level.  A device or
 * kernel that refuses it leaves the connection on the default class. */
void rivet_id_set_tos(struct rdma_cm_id *id, int tos)
{
	uint8_t val = (uint8_t)tos;

	if (tos < 0)
		return;
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &val,
			    sizeof(val)))
		RIVET_INFO(EP_CTRL, "rdma_set_option(TOS %d): %s\n", tos,
			   strerror(errno));
}

/* Before the connection's QP is made ready to send: the ACK timeout of
 * FI_RIVET_ACK_TIMEOUT (rdma_cm's own when 0). */
void rivet_id_set_ack_timeout(struct rdma_cm_id *id)
{
	uint8_t val = (uint8_t)g_rivet_params.ack_timeout;

	if (!val)
		return;
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			    &val, sizeof(val)))
		RIVET_INFO(EP_CTRL, "rdma_set_option(ACK_TIMEOUT %u): %s\n",
			   val, strerror(errno));
}

int rivet_verbs_cm_listen(struct rdma_event_channel *ch,
			  const struct sockaddr *src, int tos, int backlog,
			  struct ibv_context *ctx, struct rdma_cm_id **id_p,
			  union rivet_sockaddr *name)
{
	struct sockaddr *local;
	int ret;

	if (rdma_create_id(ch, id_p, NULL, RDMA_PS_TCP)) {
		ret = errno;
		*id_p = NULL;
		RIVET_WARN_ERRNO(EP_CTRL, "rdma_create_id", ret);
		return rivet_errno_to_fi(ret);
	}
	rivet_id_set_tos(*id_p, tos);
	if (rdma_bind_addr(*id_p, (struct sockaddr *)src) ||
	    rdma_listen(*id_p, backlog)) {
		ret = errno;
		RIVET_WARN_ERRNO(EP_CTRL, "rdma_bind_addr/listen", ret);
		return rivet_errno_to_fi(ret);
	}
	if ((*id_p)->verbs != ctx)
		return -FI_EINVAL;
	local = rdma_get_local_addr(*id_p);
	memcpy(name, local, rivet_addr_len(local));
	return 0;
}

void rivet_verbs_cm_id_destroy(struct rdma_cm_id *id)
{
	if (rdma_destroy_id(id))
		RIVET_WARN_ERRNO(EP_CTRL, "rdma_destroy_id", errno);
}

/* id's events go to ch from now on */
int rivet_verbs_cm_migrate(struct rdma_cm_id *id, struct rdma_event_channel *ch)
{
	int ret;

	if (!rdma_migrate_id(id, ch))
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(EP_CTRL, "rdma_migrate_id", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cm_disconnect(struct rdma_cm_id *id)
{
	int ret;

	if (!rdma_disconnect(id))
		return 0;
	ret = errno;
	RIVET_DBG(EP_CTRL, "rdma_disconnect: %s\n", strerror(ret));
	return rivet_errno_to_fi(ret);
}

void rivet_verbs_cm_qp_destroy(struct rdma_cm_id *id)
{
	rdma_destroy_qp(id);
}

int rivet_verbs_cm_resolve(struct rdma_event_channel *ch, void *context,
			   const struct sockaddr *src,
			   const struct sockaddr *dst, int tos, int timeout_ms,
			   struct rdma_cm_id **id_p)
{
	int ret;

	if (rdma_create_id(ch, id_p, context, RDMA_PS_TCP)) {
		ret = errno;
		*id_p = NULL;
		RIVET_WARN_ERRNO(EP_CTRL, "rdma_create_id", ret);
		return rivet_errno_to_fi(ret);
	}
	rivet_id_set_tos(*id_p, tos);
	rivet_id_set_ack_timeout(*id_p);
	if (rdma_resolve_addr(*id_p, (struct sockaddr *)src,
			      (struct sockaddr *)dst, timeout_ms)) {
		ret = errno;
		RIVET_WARN_ERRNO(EP_CTRL, "rdma_resolve_addr", ret);
		return rivet_errno_to_fi(ret);
	}
	return 0;
}

int rivet_verbs_cm_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	int ret;

	if (!rdma_resolve_route(id, timeout_ms))
		return 0;
	ret = errno;
	RIVET_INFO(EP_CTRL, "rdma_resolve_route: %s\n", strerror(ret));
	return rivet_errno_to_fi(ret);
}

/* The short injects' API where the device offers it (a device that does
 * not fails that create, and gets the plain QP). */
int rivet_verbs_cm_qp_create(struct rdma_cm_id *id,
			     struct ibv_qp_init_attr_ex *attr, bool wr_api,
			     struct ibv_qp_ex **qpx_p)
{
	struct ibv_qp_ex *qpx;
	int ret;

	*qpx_p = NULL;
	if (wr_api && !rdma_create_qp_ex(id, attr)) {
		qpx = ibv_qp_to_qp_ex(id->qp);
		if (qpx && qpx->wr_send && qpx->wr_set_inline_data)
			*qpx_p = qpx;
		return 0;
	}
	attr->comp_mask = IBV_QP_INIT_ATTR_PD;
	if (!rdma_create_qp_ex(id, attr))
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(EP_CTRL, "rdma_create_qp", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cm_connect(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	int ret;

	if (!rdma_connect(id, p))
		return 0;
	ret = errno;
	RIVET_INFO(EP_CTRL, "rdma_connect: %s\n", strerror(ret));
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cm_accept(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	int ret;

	if (!rdma_accept(id, p))
		return 0;
	ret = errno;
	RIVET_INFO(EP_CTRL, "rdma_accept: %s\n", strerror(ret));
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cm_id_create(struct rdma_event_channel *ch, void *context,
			     enum rdma_port_space ps, struct rdma_cm_id **id_p)
{
	int ret;

	if (!rdma_create_id(ch, id_p, context, ps))
		return 0;
	ret = errno;
	*id_p = NULL;
	RIVET_WARN_ERRNO(EP_CTRL, "rdma_create_id", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cm_bind(struct rdma_cm_id *id, const struct sockaddr *sa)
{
	int ret;

	if (!rdma_bind_addr(id, (struct sockaddr *)sa))
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(EP_CTRL, "rdma_bind_addr", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cm_listen_on(struct rdma_cm_id *id, int backlog)
{
	int ret;

	if (!rdma_listen(id, backlog))
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(EP_CTRL, "rdma_listen", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cm_resolve_addr(struct rdma_cm_id *id,
				const struct sockaddr *src,
				const struct sockaddr *dst, int timeout_ms)
{
	int ret;

	if (!rdma_resolve_addr(id, (struct sockaddr *)src,
			       (struct sockaddr *)dst, timeout_ms))
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(EP_CTRL, "rdma_resolve_addr", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cm_reject(struct rdma_cm_id *id, const void *data,
			  uint8_t len)
{
	int ret;

	if (!rdma_reject(id, data, len))
		return 0;
	ret = errno;
	RIVET_INFO(EP_CTRL, "rdma_reject: %s\n", strerror(ret));
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cm_qp_create_plain(struct rdma_cm_id *id, struct ibv_pd *pd,
				   struct ibv_qp_init_attr *attr)
{
	int ret;

	if (!rdma_create_qp(id, pd, attr))
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(EP_CTRL, "rdma_create_qp", ret);
	return rivet_errno_to_fi(ret);
}
