// SPDX-License-Identifier: MIT
/* FI_MULTI_RECV on MSG endpoints (fi_msg(3)), one process, one connection
 * to itself:
 * - getinfo gives FI_MULTI_RECV for MSG and takes it in rx op_flags;
 *   FI_OPT_MIN_MULTI_RECV reads back what was set;
 * - a plain receive, two multi-receive buffers and a plain receive behind
 *   them take 26 messages in order: one each for the plain ones, packed
 *   back to back into the buffers, each buffer given back (FI_MULTI_RECV)
 *   on the message after which less than the minimum is left; remote CQ
 *   data in a buffer; a write with immediate data that takes a buffer's
 *   turn leaves the buffer as it was;
 * - bad arguments: more than one iov, no descriptor, an endpoint without
 *   the capability;
 * - a buffer and a receive behind it when the peer disconnects: both
 *   complete in error, the buffer's with FI_MULTI_RECV; closing with a
 *   buffer posted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_rma.h>

#include "common/ft_rivet.h"

#define MR_BUF 4096		/* each multi-receive buffer */
#define MR_MIN 512
#define MR_LEN 300		/* 12 per buffer: 3600 used, 496 left */
#define MR_PER_BUF 12
#define MR_MSGS (2 + 2 * MR_PER_BUF)
#define MR_DATA_MSG 3		/* this one carries remote CQ data */
#define MR_CQ_DATA 0x5eedu
#define MR_IMM_DATA 0x1234u

static struct {
	struct ft_fab fab;
	struct fi_info *info;
	struct fid_eq *eq;
	struct fid_ep *tx, *rx;
	struct fid_cq *txcq, *rxcq;
	struct ft_buf rxbuf, txbuf;
	struct fi_context ctx[8];
	struct fi_context txctx[MR_MSGS + 1];
} g;

/* A buffer in rxbuf: 0, 1 the plain receives, 2, 3 the multi ones. */
static uint8_t *mr_area(int i)
{
	return (uint8_t *)g.rxbuf.ptr + (size_t)i * MR_BUF;
}

static ssize_t mr_post(int area, size_t len, int ctx, uint64_t flags)
{
	struct iovec iov = { .iov_base = mr_area(area), .iov_len = len };
	struct fi_msg msg = {
		.msg_iov = &iov, .desc = &g.rxbuf.desc, .iov_count = 1,
		.context = &g.ctx[ctx],
	};

	return fi_recvmsg(g.rx, &msg, flags | FI_COMPLETION);
}

/* ret, and which step failed when it is an error */
static ssize_t mr_step(ssize_t ret, const char *what)
{
	if (ret)
		ft_info("%s: %s", what, fi_strerror((int)-ret));
	return ret;
}

static int mr_connect(void)
{
	struct fi_info *cinfo, *req = NULL;
	ssize_t ret;

	ret = ft_eq_open(g.fab.fabric, FI_WAIT_UNSPEC, &g.eq);
	ret = ret ? ret : ft_listen(&g.fab);
	ret = ret ? ret : ft_self_client_info(g.info, &cinfo);
	if (ret)
		return (int)ret;
	ret = mr_step(fi_endpoint(g.fab.domain, cinfo, &g.tx, NULL),
		      "tx endpoint");
	ret = ret ? ret : fi_ep_bind(g.tx, &g.eq->fid, 0);
	ret = ret ? ret : ft_cq_open(g.fab.domain, 64, FI_WAIT_NONE, &g.txcq);
	ret = ret ? ret : fi_ep_bind(g.tx, &g.txcq->fid, FI_TRANSMIT |
				     FI_RECV);
	ret = ret ? ret : mr_step(fi_connect(g.tx, cinfo->dest_addr, NULL, 0),
				  "connect");
	fi_freeinfo(cinfo);
	ret = ret ? ret : ft_self_wait_connreq(&g.fab, g.eq, &req);
	if (ret)
		return (int)mr_step(ret, "connection request");
	ft_check(req->caps & FI_MULTI_RECV, "mrecv_connreq_caps",
		 "the request's info lacks FI_MULTI_RECV");
	ret = mr_step(fi_endpoint(g.fab.domain, req, &g.rx, NULL),
		      "rx endpoint");
	fi_freeinfo(req);
	ret = ret ? ret : fi_ep_bind(g.rx, &g.eq->fid, 0);
	ret = ret ? ret : ft_cq_open(g.fab.domain, 64, FI_WAIT_NONE, &g.rxcq);
	ret = ret ? ret : fi_ep_bind(g.rx, &g.rxcq->fid, FI_TRANSMIT |
				     FI_RECV);
	ret = ret ? ret : mr_step(fi_accept(g.rx, NULL, 0), "accept");
	ret = ret ? ret : ft_eq_expect(g.eq, FI_CONNECTED, NULL, NULL, NULL,
				       ft_opts.timeout_ms);
	return ret ? (int)ret : ft_eq_expect(g.eq, FI_CONNECTED, NULL, NULL,
					     NULL, ft_opts.timeout_ms);
}

static void mr_opt(void)
{
	size_t v = 0, len = sizeof(v);
	int ret;

	ret = fi_getopt(&g.rx->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			&v, &len);
	ft_check(!ret && v > 0 && len == sizeof(v), "mrecv_opt_default",
		 "ret %d, value %zu", ret, v);
	v = MR_MIN;
	ret = fi_setopt(&g.rx->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			&v, sizeof(v));
	v = 0;
	if (!ret)
		ret = fi_getopt(&g.rx->fid, FI_OPT_ENDPOINT,
				FI_OPT_MIN_MULTI_RECV, &v, &len);
	ft_check(!ret && v == MR_MIN, "mrecv_opt_set", "ret %d, value %zu",
		 ret, v);
	ret = fi_setopt(&g.rx->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			&v, 2);
	ft_check(ret == -FI_EINVAL, "mrecv_opt_badlen", "ret %d", ret);
}

static void mr_bad_args(void)
{
	struct iovec iov[2] = {
		{ mr_area(2), 64 }, { mr_area(2) + 64, 64 },
	};
	void *desc[2] = { g.rxbuf.desc, g.rxbuf.desc };
	struct fi_msg msg = {
		.msg_iov = iov, .desc = desc, .iov_count = 2,
		.context = &g.ctx[7],
	};
	ssize_t ret;

	ret = fi_recvmsg(g.rx, &msg, FI_MULTI_RECV);
	ft_check(ret == -FI_EINVAL, "mrecv_two_iovs", "ret %zd", ret);
	msg.iov_count = 1;
	msg.desc = NULL;
	ret = fi_recvmsg(g.rx, &msg, FI_MULTI_RECV);
	ft_check(ret == -FI_EINVAL, "mrecv_no_desc", "ret %zd", ret);
}

/* The n-th message's completion and payload; FAIL printed if wrong. */
static bool mr_expect(int n, void *ctx, uint8_t *buf, uint64_t flags)
{
	struct fi_cq_data_entry comp;
	char name[32];
	int ret;

	snprintf(name, sizeof(name), "mrecv_msg_%d", n);
	ret = ft_cq_expect(g.rxcq, ctx, &comp, ft_opts.timeout_ms);
	if (ret) {
		ft_fail(name, "%s", fi_strerror(-ret));
		return false;
	}
	if (comp.buf != buf || comp.len != MR_LEN ||
	    (comp.flags & (FI_RECV | FI_MSG | FI_MULTI_RECV |
			   FI_REMOTE_CQ_DATA)) != flags) {
		ft_fail(name, "buf +%td len %zu flags 0x%llx (want +%td, %d, "
			"0x%llx)", (uint8_t *)comp.buf - mr_area(0), comp.len,
			(unsigned long long)comp.flags, buf - mr_area(0),
			MR_LEN, (unsigned long long)flags);
		return false;
	}
	if ((flags & FI_REMOTE_CQ_DATA) && comp.data != MR_CQ_DATA) {
		ft_fail(name, "data 0x%llx", (unsigned long long)comp.data);
		return false;
	}
	if (ft_verify(buf, MR_LEN, (uint32_t)n) >= 0) {
		ft_fail(name, "payload corrupt");
		return false;
	}
	return true;
}

static int mr_send(int n)
{
	uint8_t *src = (uint8_t *)g.txbuf.ptr + (size_t)n * MR_LEN;
	ssize_t ret;

	ft_fill(src, MR_LEN, (uint32_t)n);
	ret = FT_POST(n == MR_DATA_MSG ?
		      fi_senddata(g.tx, src, MR_LEN, g.txbuf.desc, MR_CQ_DATA,
				  0, &g.txctx[n]) :
		      fi_send(g.tx, src, MR_LEN, g.txbuf.desc, 0, &g.txctx[n]),
		      g.txcq, ft_opts.timeout_ms);
	if (ret)
		ft_fail("mrecv_send", "message %d: %s", n,
			fi_strerror((int)-ret));
	return ret ? -1 : 0;
}

/* A write with immediate data into area 1: it takes the receive queue's
 * next request, the buffer's. */
static int mr_write_imm(void)
{
	struct fi_cq_data_entry comp;
	struct fi_cq_err_entry err;
	uint64_t addr = (g.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
			(uintptr_t)mr_area(1) : MR_BUF;
	ssize_t ret;

	ret = FT_POST(fi_writedata(g.tx, g.txbuf.ptr, 8, g.txbuf.desc,
				   MR_IMM_DATA, 0, addr, fi_mr_key(g.rxbuf.mr),
				   &g.txctx[MR_MSGS]),
		      g.txcq, ft_opts.timeout_ms);
	if (!ft_check(!ret, "mrecv_write_imm", "post: %s",
		      fi_strerror((int)-ret)))
		return -1;
	ret = ft_cq_wait(g.rxcq, &comp, &err, ft_opts.timeout_ms);
	return ft_check(!ret && (comp.flags & FI_REMOTE_WRITE) &&
			(comp.flags & FI_REMOTE_CQ_DATA) &&
			comp.data == MR_IMM_DATA, "mrecv_write_imm",
			"ret %zd flags 0x%llx data 0x%llx", ret,
			(unsigned long long)comp.flags,
			(unsigned long long)comp.data) ? 0 : -1;
}

static void mr_fill(void)
{
	static const int order[] = { 0, 2, 3, 1 };	/* areas, in order */
	uint8_t *buf;
	uint64_t flags;
	int i, n, ret = 0;

	for (i = 0; i < 4 && !ret; i++)
		ret = (int)mr_post(order[i], order[i] < 2 ? MR_LEN : MR_BUF,
				   order[i], order[i] < 2 ? 0 : FI_MULTI_RECV);
	if (!ft_check(!ret, "mrecv_post", "%s", fi_strerror(-ret)))
		return;
	/* message 0 into area 0; a write takes the next turn, area 2's */
	if (mr_send(0) || !mr_expect(0, &g.ctx[0], mr_area(0),
				     FI_RECV | FI_MSG) || mr_write_imm())
		return;
	for (n = 1; n < MR_MSGS; n++)
		if (mr_send(n))
			return;
	for (n = 1; n < MR_MSGS; n++) {
		i = n < 1 + MR_PER_BUF ? 2 : n < MR_MSGS - 1 ? 3 : 1;
		buf = i == 1 ? mr_area(1) :
		      mr_area(i) + (size_t)((n - 1) % MR_PER_BUF) * MR_LEN;
		flags = FI_RECV | FI_MSG;
		if (n == MR_PER_BUF || n == 2 * MR_PER_BUF)
			flags |= FI_MULTI_RECV;
		if (n == MR_DATA_MSG)
			flags |= FI_REMOTE_CQ_DATA;
		if (!mr_expect(n, &g.ctx[i], buf, flags))
			return;
	}
	ft_ok("mrecv_msgs");
	for (n = 0; n <= MR_MSGS; n++) {	/* in order, the write second */
		i = n == 0 ? 0 : n == 1 ? MR_MSGS : n - 1;
		ret = ft_cq_expect(g.txcq, &g.txctx[i], NULL,
				   ft_opts.timeout_ms);
		if (ret) {
			ft_fail("mrecv_send_done", "operation %d: %s", n,
				fi_strerror(-ret));
			return;
		}
	}
	ft_ok("mrecv_send_done");
	ft_check(ft_cq_empty(g.rxcq), "mrecv_no_extra", "more completions");
}

/* The peer goes away with a buffer and a receive behind it posted: both
 * complete in error (a flushed buffer is given back). */
static void mr_disconnect(void)
{
	struct fi_cq_data_entry comp;
	struct fi_cq_err_entry err;
	bool buf_seen = false, recv_seen = false;
	uint64_t end;
	int ret;

	if (mr_post(2, MR_BUF, 4, FI_MULTI_RECV) ||
	    mr_post(0, MR_LEN, 5, 0)) {
		ft_fail("mrecv_flush", "posting failed");
		return;
	}
	ret = fi_shutdown(g.tx, 0);
	ft_check(!ret, "mrecv_shutdown", "%s", fi_strerror(-ret));
	end = ft_now_ms() + (uint64_t)ft_opts.timeout_ms;
	while ((!buf_seen || !recv_seen) && ft_now_ms() < end) {
		uint8_t ev[sizeof(struct fi_eq_cm_entry) + 64];
		uint32_t event;

		(void)fi_eq_read(g.eq, &event, ev, sizeof(ev), 0);
		memset(&err, 0, sizeof(err));
		ret = ft_cq_wait(g.rxcq, &comp, &err, 100);
		if (ret == -FI_EAVAIL && err.op_context == &g.ctx[4])
			buf_seen = ft_check(err.flags & FI_MULTI_RECV,
					    "mrecv_flush_buf",
					    "flags 0x%llx",
					    (unsigned long long)err.flags);
		else if (ret == -FI_EAVAIL && err.op_context == &g.ctx[5])
			recv_seen = true;
		else if (ret == 0)
			ft_fail("mrecv_flush", "a completion without error");
	}
	ft_check(buf_seen && recv_seen, "mrecv_flush",
		 "buffer %s, receive behind it %s", buf_seen ? "seen" : "lost",
		 recv_seen ? "seen" : "lost");
}

/* An endpoint without FI_MULTI_RECV refuses the flag and the option. */
static void mr_no_cap(void)
{
	struct fi_info *info = fi_dupinfo(g.info);
	struct fid_ep *ep = NULL;
	size_t v = 128;
	int ret;

	if (!info)
		return;
	free(info->src_addr);	/* the listener has that address */
	info->src_addr = NULL;
	info->src_addrlen = 0;
	info->caps &= ~FI_MULTI_RECV;
	info->rx_attr->caps &= ~FI_MULTI_RECV;
	info->rx_attr->op_flags &= ~FI_MULTI_RECV;
	ret = fi_endpoint(g.fab.domain, info, &ep, NULL);
	fi_freeinfo(info);
	if (!ft_check(!ret, "mrecv_nocap_ep", "%s", fi_strerror(-ret)))
		return;
	ret = fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v,
			sizeof(v));
	ft_check(ret == -FI_ENOPROTOOPT, "mrecv_nocap_opt", "ret %d", ret);
	ret = fi_ep_bind(ep, &g.eq->fid, 0);
	ret = ret ? ret : fi_ep_bind(ep, &g.rxcq->fid, FI_TRANSMIT | FI_RECV);
	ret = ret ? ret : fi_enable(ep);
	if (ft_check(!ret, "mrecv_nocap_enable", "%s", fi_strerror(-ret))) {
		struct iovec iov = { mr_area(3), MR_BUF };
		struct fi_msg msg = {
			.msg_iov = &iov, .desc = &g.rxbuf.desc,
			.iov_count = 1, .context = &g.ctx[6],
		};

		ret = (int)fi_recvmsg(ep, &msg, FI_MULTI_RECV);
		ft_check(ret == -FI_EINVAL, "mrecv_nocap_recv", "ret %d",
			 ret);
	}
	ft_close_fid(&ep->fid, "ep");
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	int ret;

	ft_parse_opts(argc, argv, "FI_MULTI_RECV on MSG endpoints", false);
	ft_opts.ep_type = FI_EP_MSG;
	hints = ft_hints_alloc(FI_MSG | FI_MULTI_RECV | FI_RMA);
	if (!hints)
		return 1;
	hints->rx_attr->op_flags = FI_MULTI_RECV;
	ret = ft_getinfo(hints, &g.info);
	fi_freeinfo(hints);
	if (!ft_check(!ret && (g.info->caps & FI_MULTI_RECV) &&
		      (g.info->rx_attr->op_flags & FI_MULTI_RECV),
		      "mrecv_getinfo", "%s", fi_strerror(-ret)))
		return ft_summary();
	ret = ft_fab_open(&g.fab, g.info);
	ret = ret ? ret : mr_connect();
	ret = ret ? ret : ft_buf_alloc(g.fab.domain, 4 * MR_BUF,
				       FI_RECV | FI_REMOTE_WRITE, &g.rxbuf);
	ret = ret ? ret : ft_buf_alloc(g.fab.domain, (MR_MSGS + 1) * MR_LEN,
				       FI_SEND | FI_WRITE, &g.txbuf);
	if (ft_check(!ret, "setup", "%s", fi_strerror(-ret))) {
		mr_opt();
		mr_bad_args();
		mr_fill();
		mr_no_cap();
		mr_disconnect();
		/* closing with a buffer posted (valgrind: nothing leaks) */
		mr_post(3, MR_BUF, 6, FI_MULTI_RECV);
	}
	ft_close_fid(g.tx ? &g.tx->fid : NULL, "tx ep");
	ft_close_fid(g.rx ? &g.rx->fid : NULL, "rx ep");
	ft_close_fid(g.txcq ? &g.txcq->fid : NULL, "cq");
	ft_close_fid(g.rxcq ? &g.rxcq->fid : NULL, "cq");
	ft_buf_free(&g.rxbuf);
	ft_buf_free(&g.txbuf);
	ft_close_fid(g.eq ? &g.eq->fid : NULL, "eq");
	g.fab.info = NULL;
	ft_fab_close(&g.fab);
	fi_freeinfo(g.info);
	return ft_summary();
}
