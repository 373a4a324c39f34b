/* SPDX-License-Identifier: MIT */
/*
 * The SIDR listener of a DGRAM endpoint opened on a service address (an
 * info whose src_addr has a port, as fi_getinfo gives for node/service
 * with FI_SOURCE): an rdma_cm id in RDMA_PS_UDP bound to that IP and
 * port, whose connection requests a thread of its own answers with the
 * endpoint's QPN, so that a peer's AV can resolve the service address
 * (rivet_av_sidr.c) whatever this process is doing.
 */
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "rivet_dgram.h"

struct rivet_dgram_listener {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	int stop_fd;
	uint32_t qpn;
	pthread_t thread;
};

static void rivet_dgram_cm_event(struct rivet_dgram_listener *l,
				 struct rdma_cm_event *ev)
{
	/* the reply's Q_Key is rdma_cm's: peers use rivet's anyway */
	struct rdma_conn_param param = { .qp_num = l->qpn };
	struct rdma_cm_id *req = ev->id;
	bool is_req = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST;

	rivet_verbs_cm_event_ack(ev);
	if (!is_req)
		return;
	(void)rivet_verbs_cm_accept(req, &param);	/* the SIDR reply */
	rivet_verbs_cm_id_destroy(req);
}

static void *rivet_dgram_cm_thread(void *arg)
{
	struct rivet_dgram_listener *l = arg;
	struct pollfd pfd[2] = {
		{ .fd = l->ch->fd, .events = POLLIN },
		{ .fd = l->stop_fd, .events = POLLIN },
	};
	struct rdma_cm_event *ev;

	for (;;) {
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		while (!rivet_verbs_cm_event_get(l->ch, &ev))
			rivet_dgram_cm_event(l, ev);
	}
	return NULL;
}

static int rivet_dgram_cm_bind(struct rivet_dgram_listener *l,
			       const struct sockaddr *src)
{
	union rivet_sockaddr ip;
	int ret;

	ret = rivet_ud_addr_to_ip(src, &ip);
	if (ret)
		return ret;
	ret = rivet_verbs_cm_channel_create(&l->ch);
	if (!ret)
		ret = rivet_wait_nonblock(l->ch->fd);
	if (!ret)
		ret = rivet_verbs_cm_id_create(l->ch, NULL, RDMA_PS_UDP, &l->id);
	if (!ret)
		ret = rivet_verbs_cm_bind(l->id, &ip.sa);
	if (!ret)
		ret = rivet_verbs_cm_listen_on(l->id, 64);
	return ret;
}

static void rivet_dgram_cm_free(struct rivet_dgram_listener *l)
{
	if (l->id)
		rivet_verbs_cm_id_destroy(l->id);
	rivet_verbs_cm_channel_destroy(l->ch);
	if (l->stop_fd >= 0)
		close(l->stop_fd);
	free(l);
}

int rivet_dgram_listen(struct rivet_ep *ep)
{
	struct rivet_dgram_listener *l;
	int ret;

	if (!rivet_ud_addr_is_service(&ep->src.sa))
		return 0;	/* no port: nobody resolves us by service */
	l = calloc(1, sizeof(*l));
	if (!l)
		return -FI_ENOMEM;
	l->qpn = ep->qp->qp_num;
	l->stop_fd = eventfd(0, EFD_CLOEXEC);
	ret = l->stop_fd < 0 ? rivet_errno_to_fi(errno) :
			       rivet_dgram_cm_bind(l, &ep->src.sa);
	if (!ret && pthread_create(&l->thread, NULL, rivet_dgram_cm_thread,
				   l))
		ret = -FI_ENOMEM;
	if (ret) {
		rivet_dgram_cm_free(l);
		return ret;
	}
	ep->ud->listener_cm = l;
	return 0;
}

void rivet_dgram_unlisten(struct rivet_ep *ep)
{
	struct rivet_dgram_listener *l = ep->ud->listener_cm;
	uint64_t one = 1;

	if (!l)
		return;
	if (write(l->stop_fd, &one, sizeof(one)) != sizeof(one))
		RIVET_WARN_ERRNO(EP_CTRL, "write(eventfd)", errno);
	pthread_join(l->thread, NULL);
	rivet_dgram_cm_free(l);
	ep->ud->listener_cm = NULL;
}
