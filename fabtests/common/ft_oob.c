// SPDX-License-Identifier: MIT
/* The out-of-band TCP channel: barriers and commands between server and
 * client that keep working whatever the provider under test does. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/ft_rivet.h"

/* ---- out-of-band channel ---------------------------------------------- */

static int g_oob_listen_fd = -1;
static int g_oob_fd = -1;
static struct fid_cq *g_oob_cqs[2];

/* Waiting on the OOB channel keeps driving the open connection's CQs (a
 * count of 0 is fi_cq_read's progress-only call), so providers with manual
 * progress move our data meanwhile. */
void ft_oob_watch(struct fid_cq *txcq, struct fid_cq *rxcq)
{
	g_oob_cqs[0] = txcq;
	g_oob_cqs[1] = rxcq;
}

static void ft_oob_progress(void)
{
	int i;

	for (i = 0; i < 2; i++)
		if (g_oob_cqs[i])
			(void)fi_cq_read(g_oob_cqs[i], NULL, 0);
}

static struct addrinfo *ft_oob_resolve(const char *node, const char *port,
				       bool passive)
{
	struct addrinfo hints = {
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0),
	};
	struct addrinfo *ai = NULL;
	char service[16];
	int ret;

	snprintf(service, sizeof(service), "%d",
		 atoi(port) + FT_OOB_PORT_OFFSET);
	ret = getaddrinfo(node, service, &hints, &ai);
	if (ret) {
		ft_info("oob: getaddrinfo(%s, %s): %s", node ? node : "*",
			service, gai_strerror(ret));
		return NULL;
	}
	return ai;
}

int ft_oob_listen(void)
{
	struct addrinfo *ai = ft_oob_resolve(ft_opts.src_addr,
					     ft_opts.src_port, true);
	int one = 1;

	if (!ai)
		return -FI_EINVAL;
	g_oob_listen_fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (g_oob_listen_fd < 0 ||
	    setsockopt(g_oob_listen_fd, SOL_SOCKET, SO_REUSEADDR, &one,
		       sizeof(one)) ||
	    bind(g_oob_listen_fd, ai->ai_addr, ai->ai_addrlen) ||
	    listen(g_oob_listen_fd, 4)) {
		ft_info("oob: listen: %s", strerror(errno));
		freeaddrinfo(ai);
		return -FI_EIO;
	}
	freeaddrinfo(ai);
	return 0;
}

static int ft_oob_poll(int fd, short events, uint64_t end)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	uint64_t now;
	int ret;

	do {
		ft_oob_progress();
		now = ft_now_ms();
		if (now >= end)
			return -FI_ETIMEDOUT;
		ret = poll(&pfd, 1, end - now > 10 ? 10 : (int)(end - now));
	} while (ret == 0);
	return ret < 0 ? -FI_EIO : 0;
}

int ft_oob_accept(void)
{
	int ret, one = 1;

	ret = ft_oob_poll(g_oob_listen_fd, POLLIN,
			  ft_now_ms() + ft_opts.timeout_ms);
	if (ret) {
		ft_info("oob: no client within %d ms", ft_opts.timeout_ms);
		return ret;
	}
	g_oob_fd = accept(g_oob_listen_fd, NULL, NULL);
	if (g_oob_fd < 0)
		return -FI_EIO;
	setsockopt(g_oob_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* The server may not be up yet: retry refused connections until the
 * timeout. */
int ft_oob_connect(void)
{
	struct addrinfo *ai = ft_oob_resolve(ft_opts.dst_addr,
					     ft_opts.dst_port, false);
	uint64_t end = ft_now_ms() + ft_opts.timeout_ms;
	int one = 1;

	if (!ai)
		return -FI_EINVAL;
	do {
		g_oob_fd = socket(ai->ai_family, SOCK_STREAM, 0);
		if (g_oob_fd >= 0 &&
		    !connect(g_oob_fd, ai->ai_addr, ai->ai_addrlen))
			break;
		if (g_oob_fd >= 0)
			close(g_oob_fd);
		g_oob_fd = -1;
		usleep(100 * 1000);
	} while (ft_now_ms() < end);
	freeaddrinfo(ai);
	if (g_oob_fd < 0) {
		ft_info("oob: cannot connect to the server: %s",
			strerror(errno));
		return -FI_ECONNREFUSED;
	}
	setsockopt(g_oob_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

int ft_oob_send(const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = send(g_oob_fd, p, len, MSG_NOSIGNAL);
		if (n <= 0)
			return -FI_EIO;
		p += n;
		len -= n;
	}
	return 0;
}

static int ft_oob_recv_ms(void *buf, size_t len, int timeout_ms)
{
	uint64_t end = ft_now_ms() + timeout_ms;
	char *p = buf;
	ssize_t n;
	int ret;

	while (len) {
		ret = ft_oob_poll(g_oob_fd, POLLIN, end);
		if (ret) {
			ft_info("oob: peer silent for %d ms", timeout_ms);
			return ret;
		}
		n = recv(g_oob_fd, p, len, 0);
		if (n <= 0) {
			ft_info("oob: peer closed the channel");
			return -FI_EIO;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* The peer may be busy checking a large buffer: allow it 3 timeouts. */
int ft_oob_recv(void *buf, size_t len)
{
	return ft_oob_recv_ms(buf, len, 3 * ft_opts.timeout_ms);
}

/* Both sides reach this point before either goes on. */
int ft_oob_sync_ms(int timeout_ms)
{
	char c = 's';
	int ret = ft_oob_send(&c, 1);

	return ret ? ret : ft_oob_recv_ms(&c, 1, timeout_ms);
}

int ft_oob_sync(void)
{
	return ft_oob_sync_ms(3 * ft_opts.timeout_ms);
}

void ft_oob_close(void)
{
	if (g_oob_fd >= 0)
		close(g_oob_fd);
	if (g_oob_listen_fd >= 0)
		close(g_oob_listen_fd);
	g_oob_fd = g_oob_listen_fd = -1;
}
