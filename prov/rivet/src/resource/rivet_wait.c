/* SPDX-License-Identifier: MIT */
/*
 * Wait objects of CQs, counters and EQs: an epoll fd over the objects'
 * channel fds plus a nonblocking eventfd for wake-ups, and timeout helpers.
 */
#include <fcntl.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "rivet.h"

int rivet_wait_construct(struct rivet_wait *w)
{
	int ret;

	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->epfd < 0) {
		ret = errno;
		RIVET_WARN_ERRNO(CORE, "epoll_create1", ret);
		return rivet_errno_to_fi(ret);
	}
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0) {
		ret = errno;
		RIVET_WARN_ERRNO(CORE, "eventfd", ret);
		ret = rivet_errno_to_fi(ret);
		goto err_close_epfd;
	}
	ret = rivet_wait_add_fd(w, w->efd);
	if (ret)
		goto err_close_efd;
	return 0;

err_close_efd:
	close(w->efd);
err_close_epfd:
	close(w->epfd);
	w->epfd = w->efd = -1;
	return ret;
}

void rivet_wait_destruct(struct rivet_wait *w)
{
	if (w->efd >= 0)
		close(w->efd);
	if (w->epfd >= 0)
		close(w->epfd);
	w->epfd = w->efd = -1;
}

int rivet_wait_add_fd(struct rivet_wait *w, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	int ret;

	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		ret = errno;
		RIVET_WARN_ERRNO(CORE, "epoll_ctl(ADD)", ret);
		return rivet_errno_to_fi(ret);
	}
	return 0;
}

int rivet_wait_nonblock(int fd)
{
	int flags, ret;

	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK)) {
		ret = errno;
		RIVET_WARN_ERRNO(CORE, "fcntl(O_NONBLOCK)", ret);
		return rivet_errno_to_fi(ret);
	}
	return 0;
}

void rivet_wait_del_fd(struct rivet_wait *w, int fd)
{
	/* the fd may be on its way out already: nothing to report */
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void rivet_wait_signal(struct rivet_wait *w)
{
	uint64_t one = 1;

	/* EAGAIN means the counter is saturated: it is readable anyway */
	if (write(w->efd, &one, sizeof(one)) != sizeof(one))
		RIVET_DBG(CORE, "eventfd write: %s\n", strerror(errno));
}

bool rivet_wait_drain_signal(struct rivet_wait *w)
{
	uint64_t val;

	return read(w->efd, &val, sizeof(val)) == sizeof(val);
}

int rivet_wait_fd(struct rivet_wait *w, int timeout_ms)
{
	struct epoll_event ev;
	int n, err;

	n = epoll_wait(w->epfd, &ev, 1, timeout_ms);
	if (n > 0)
		return 0;
	if (!n)
		return -FI_EAGAIN;
	err = errno;
	if (err == EINTR)
		return 0;	/* the caller re-checks its condition */
	RIVET_WARN_ERRNO(CORE, "epoll_wait", err);
	return rivet_errno_to_fi(err);
}

/*
 * fi_control(FI_GETWAIT) hands out the epoll fd: it is readable whenever
 * a channel fd or the eventfd is.  Objects opened with FI_WAIT_NONE have
 * no wait object to give: -FI_ENODATA.
 */
int rivet_wait_control(const struct rivet_wait *w, int command, void *arg)
{
	switch (command) {
	case FI_GETWAIT:
		if (!arg)
			return -FI_EINVAL;
		if (w->epfd < 0)
			return -FI_ENODATA;
		*(int *)arg = w->epfd;
		return 0;
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = w->epfd < 0 ? FI_WAIT_NONE :
							  FI_WAIT_FD;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static uint64_t rivet_wait_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t rivet_wait_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return UINT64_MAX;
	return rivet_wait_now_us() + (uint64_t)timeout_ms * 1000;
}

int rivet_wait_remaining(uint64_t deadline)
{
	uint64_t now, left_ms;

	if (deadline == UINT64_MAX)
		return -1;
	now = rivet_wait_now_us();
	if (now >= deadline)
		return 0;
	left_ms = (deadline - now + 999) / 1000;	/* never round to 0 */
	return (int)RIVET_MIN(left_ms, (uint64_t)INT_MAX);
}
