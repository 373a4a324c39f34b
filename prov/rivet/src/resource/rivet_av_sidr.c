/* SPDX-License-Identifier: MIT */
/*
 * SIDR: what an AV of a DGRAM domain does with a service address (an IP
 * and a port, as fi_getinfo gives for node/service): rdma_cm resolves the
 * route and asks whoever listens at that port in RDMA_PS_UDP (a DGRAM
 * endpoint opened on that address, rivet_dgram_cm.c) for its QPN.  Blocks
 * the insert for at most timeout_ms; no endpoint involved.
 */
#include <poll.h>

#include "rivet.h"

/* The next event of ch: 0 and *ev_p (to ack), or -FI_ETIMEDOUT. */
static int rivet_ud_event(struct rdma_event_channel *ch, uint64_t deadline,
			  struct rdma_cm_event **ev_p)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	int left, ret;

	for (;;) {
		ret = rivet_verbs_cm_event_get(ch, ev_p);
		if (ret != -FI_EAGAIN)
			return ret;
		left = rivet_wait_remaining(deadline);
		if (!left)
			return -FI_ETIMEDOUT;
		(void)poll(&pfd, 1, left);
	}
}

/* Waits for want; any other event is the peer's or the route's refusal. */
static int rivet_ud_expect(struct rdma_event_channel *ch, uint64_t deadline,
			   enum rdma_cm_event_type want,
			   struct rdma_cm_event **ev_p)
{
	int ret = rivet_ud_event(ch, deadline, ev_p);

	if (ret)
		return ret;
	if ((*ev_p)->event == want && !(*ev_p)->status)
		return 0;
	RIVET_INFO(AV, "SIDR: %s (status %d), wanted %s\n",
		   rdma_event_str((*ev_p)->event), (*ev_p)->status,
		   rdma_event_str(want));
	ret = (*ev_p)->event == RDMA_CM_EVENT_UNREACHABLE ||
	      (*ev_p)->event == RDMA_CM_EVENT_REJECTED ?
	      -FI_EADDRNOTAVAIL : -FI_EHOSTUNREACH;
	rivet_verbs_cm_event_ack(*ev_p);
	*ev_p = NULL;
	return ret;
}

/* The peer's name from the SIDR reply: its GID (the mapped IP on RoCE
 * over IPv4, as its fi_getname says), QPN and, on IB, LID. */
static void rivet_ud_name(struct rdma_cm_id *id, const struct sockaddr *svc,
			  const struct rdma_ud_param *ud,
			  union rivet_sockaddr *name_p)
{
	struct sockaddr_in6 ip;
	const uint8_t *gid = ud->ah_attr.grh.dgid.raw;
	uint16_t lid = ud->ah_attr.dlid;

	if (rivet_verbs_port_ethernet(id->verbs, id->port_num)) {
		lid = 0;
		if (!rivet_ud_addr_from_ip(svc, &ip))
			gid = ip.sin6_addr.s6_addr;
	}
	memset(name_p, 0, sizeof(*name_p));
	rivet_ud_addr_encode(gid, ud->qp_num, lid, &name_p->sin6);
}

static int rivet_ud_sidr(struct rdma_event_channel *ch, struct rdma_cm_id *id,
			 const struct sockaddr *svc, int timeout_ms,
			 union rivet_sockaddr *name_p)
{
	uint64_t deadline = rivet_wait_deadline(timeout_ms);
	struct rdma_conn_param param = { 0 };
	struct rdma_cm_event *ev = NULL;
	union rivet_sockaddr dst;
	int ret;

	ret = rivet_ud_addr_to_ip(svc, &dst);
	if (ret)
		return ret;
	if (rivet_verbs_cm_resolve_addr(id, NULL, &dst.sa, timeout_ms))
		return -FI_EHOSTUNREACH;
	ret = rivet_ud_expect(ch, deadline, RDMA_CM_EVENT_ADDR_RESOLVED, &ev);
	if (ret)
		return ret;
	rivet_verbs_cm_event_ack(ev);
	if (rivet_verbs_cm_resolve_route(id, timeout_ms))
		return -FI_EHOSTUNREACH;
	ret = rivet_ud_expect(ch, deadline, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev);
	if (ret)
		return ret;
	rivet_verbs_cm_event_ack(ev);
	if (rivet_verbs_cm_connect(id, &param))
		return -FI_EHOSTUNREACH;
	ret = rivet_ud_expect(ch, deadline, RDMA_CM_EVENT_ESTABLISHED, &ev);
	if (ret)
		return ret;
	rivet_ud_name(id, svc, &ev->param.ud, name_p);
	rivet_verbs_cm_event_ack(ev);
	return 0;
}

int rivet_ud_resolve(const struct sockaddr *svc, int timeout_ms,
		     union rivet_sockaddr *name_p)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	union rivet_sockaddr name;
	int ret;

	ret = rivet_verbs_cm_channel_create(&ch);
	if (ret)
		return ret;
	ret = rivet_wait_nonblock(ch->fd);
	if (!ret)
		ret = rivet_verbs_cm_id_create(ch, NULL, RDMA_PS_UDP, &id);
	if (ret) {
		rivet_verbs_cm_channel_destroy(ch);
		return ret;
	}
	ret = rivet_ud_sidr(ch, id, svc, timeout_ms, &name);
	rivet_verbs_cm_id_destroy(id);
	rivet_verbs_cm_channel_destroy(ch);
	if (ret)
		return ret;
	*name_p = name;
	return 0;
}
