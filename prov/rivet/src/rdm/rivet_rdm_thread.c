/* SPDX-License-Identifier: MIT */
/*
 * FI_PROGRESS_AUTO for RDM: one thread per endpoint sleeps on the
 * endpoint's completion channel, its rdma_cm channel and a stop eventfd,
 * and runs the same progress source (ep->psrc) that fi_cq_read runs.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rivet_cntr.h"
#include "rivet_rdm.h"

/* A bound on each sleep: also covers deferred work that waits for room. */
#define RIVET_RDM_THREAD_SLEEP_MS 50

static void *rivet_rdm_thread_main(void *arg)
{
	struct rivet_rdm_ep *ep = arg;
	/* a scalable endpoint's context: its listener too */
	struct pollfd fds[4] = {
		{ .fd = ep->stop_fd, .events = POLLIN },
		{ .fd = ep->comp_channel->fd, .events = POLLIN },
		{ .fd = ep->cm_channel->fd, .events = POLLIN },
		{ .fd = ep->sep ? rivet_sep_cm_fd(ep->sep) : -1,
		  .events = POLLIN },
	};

	for (;;) {
		if (ibv_req_notify_cq(ep->ibv_cq, 0))
			RIVET_WARN(EP_DATA, "ibv_req_notify_cq failed\n");
		ep->psrc.progress(&ep->psrc);
		rivet_trig_poll(ep->domain);	/* counters it moved */
		if (poll(fds, 4, RIVET_RDM_THREAD_SLEEP_MS) < 0 &&
		    errno != EINTR)
			break;
		if (fds[0].revents)
			break;
		/* (another context's thread may have queued a request
		 * for this one: a context looks at each wake) */
		if (fds[2].revents || ep->sep)
			ep->psrc.progress_cm(&ep->psrc);
		rivet_verbs_cq_events_ack(ep->ibv_cq, ep->comp_channel);
	}
	return NULL;
}

int rivet_rdm_thread_start(struct rivet_rdm_ep *ep)
{
	int ret;

	ep->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ep->stop_fd < 0)
		return rivet_errno_to_fi(errno);
	ret = pthread_create(&ep->progress_tid, NULL, rivet_rdm_thread_main,
			     ep);
	if (ret) {
		close(ep->stop_fd);
		ep->stop_fd = -1;
		return rivet_errno_to_fi(ret);
	}
	ep->progress_thread = true;
	return 0;
}

void rivet_rdm_thread_stop(struct rivet_rdm_ep *ep)
{
	uint64_t one = 1;

	if (!ep->progress_thread)
		return;
	if (write(ep->stop_fd, &one, sizeof(one)) != sizeof(one))
		RIVET_WARN_ERRNO(EP_DATA, "eventfd write", errno);
	pthread_join(ep->progress_tid, NULL);
	close(ep->stop_fd);
	ep->progress_thread = false;
}
