// SPDX-License-Identifier: MIT
/* Send/receive conformance (server/client): sizes, iovs, inject, CQ data,
 * queue depth, ping-pong, selective completion, truncated receives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ft_rivet.h"

#define MSG_WINDOW 64
#define MSG_WINDOW_LEN 1024
#define MSG_MIN_BUF (256 * 1024)
#define MSG_MAX_SIZES 64
#define MSG_CQ_DATA 0x0123456789abcdefULL

struct msg_state {
	struct ft_fab fab;
	struct ft_conn conn;
	struct ft_buf tx;
	struct ft_buf rx;
	size_t max;		/* largest message of the sweep */
	struct fi_context txctx[MSG_WINDOW];
	struct fi_context rxctx[MSG_WINDOW];
};

static struct msg_state g;

/* ---- posting and waiting ---------------------------------------------- */

static int msg_post_recv(void *buf, size_t len, struct fi_context *ctx)
{
	ssize_t ret;

	ret = FT_POST(fi_recv(g.conn.ep, buf, len, g.rx.desc, 0, ctx),
		      g.conn.rxcq, ft_opts.timeout_ms);
	if (ret)
		ft_fail("post_recv", "fi_recv(%zu): %s", len,
			fi_strerror((int)-ret));
	return (int)ret;
}

static int msg_post_send(void *buf, size_t len, struct fi_context *ctx)
{
	ssize_t ret;

	ret = FT_POST(fi_send(g.conn.ep, buf, len, g.tx.desc, 0, ctx),
		      g.conn.txcq, ft_opts.timeout_ms);
	if (ret)
		ft_fail("post_send", "fi_send(%zu): %s", len,
			fi_strerror((int)-ret));
	return (int)ret;
}

/* One completion for ctx: -1 (and FAIL printed) when the transfer failed
 * or never completed, 1 when its fields are wrong, else 0. */
static int msg_wait(const char *name, struct fid_cq *cq, void *ctx,
		    uint64_t flags, ssize_t len, struct fi_cq_data_entry *comp)
{
	struct fi_cq_data_entry lcomp;
	int ret;

	comp = comp ? comp : &lcomp;
	ret = ft_cq_expect(cq, ctx, comp, ft_timeout_for(len < 0 ? 0 : len));
	if (ret) {
		ft_fail(name, "%s completion: %s", flags & FI_RECV ?
			"receive" : "send", fi_strerror(-ret));
		return -1;
	}
	if ((comp->flags & flags) != flags ||
	    (len >= 0 && comp->len != (size_t)len)) {
		ft_fail(name, "completion flags 0x%llx (want 0x%llx), len %zu "
			"(want %zd)", (unsigned long long)comp->flags,
			(unsigned long long)flags, comp->len, len);
		return 1;
	}
	return 0;
}

static int msg_wait_send(const char *name, void *ctx)
{
	return msg_wait(name, g.conn.txcq, ctx, FI_SEND | FI_MSG, -1, NULL);
}

static int msg_wait_recv(const char *name, void *ctx, size_t len,
			 struct fi_cq_data_entry *comp)
{
	return msg_wait(name, g.conn.rxcq, ctx, FI_RECV | FI_MSG, len, comp);
}

/* Check a received payload; false (and FAIL printed) if it is wrong. */
static bool msg_verify(const char *name, const void *buf, size_t len,
		       uint32_t seed)
{
	ssize_t bad = ft_verify(buf, len, seed);

	if (bad >= 0)
		ft_fail(name, "data corrupt at byte %zd of %zu", bad, len);
	return bad < 0;
}

static int msg_sync(void)
{
	int ret = ft_oob_sync();

	if (ret)
		ft_fail("oob_sync", "%s", fi_strerror(-ret));
	return ret;
}

/* ---- size sweep and ping-pong ----------------------------------------- */

/* Client sends a ping, server checks it and answers with a pong. The
 * receive for this round is already posted on both sides. */
static int msg_round(const char *name, size_t len, uint32_t seed, bool post)
{
	int ret = 0;

	if (ft_is_server()) {
		ret = msg_wait_recv(name, &g.rxctx[0], len, NULL);
		if (ret < 0)
			return ret;
		if (!ret && !msg_verify(name, g.rx.ptr, len, seed))
			ret = 1;
		if (post && msg_post_recv(g.rx.ptr, g.max, &g.rxctx[0]))
			return -1;
	}
	ft_fill(g.tx.ptr, len, ft_is_server() ? ~seed : seed);
	if (msg_post_send(g.tx.ptr, len, &g.txctx[0]))
		return -1;
	ret |= msg_wait_send(name, &g.txctx[0]);
	if (ret < 0 || ft_is_server())
		return ret;
	ret = msg_wait_recv(name, &g.rxctx[0], len, NULL);
	if (!ret && !msg_verify(name, g.rx.ptr, len, ~seed))
		ret = 1;
	if (ret >= 0 && post && msg_post_recv(g.rx.ptr, g.max, &g.rxctx[0]))
		return -1;
	return ret;
}

static int msg_sweep(void)
{
	size_t sizes[MSG_MAX_SIZES], n, i;
	char name[64];
	int ret;

	n = ft_size_list(g.max, sizes, MSG_MAX_SIZES);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "msg_size_%zu", sizes[i]);
		if (msg_post_recv(g.rx.ptr, g.max, &g.rxctx[0]) || msg_sync())
			return -1;
		ret = msg_round(name, sizes[i], 0x1000 + i, false);
		if (ret < 0)
			return ret;
		if (!ret)
			ft_ok(name);
	}
	return 0;
}

static int msg_pingpong(void)
{
	size_t len = ft_opts.size_set && !ft_opts.all_sizes ? g.max : 64;
	uint64_t t0;
	int i, ret = 0;

	if (msg_post_recv(g.rx.ptr, g.max, &g.rxctx[0]) || msg_sync())
		return -1;
	t0 = ft_now_ms();
	for (i = 0; i < ft_opts.iters && !ret; i++)
		ret = msg_round("msg_pingpong", len, 0x2000 + i,
				i + 1 < ft_opts.iters);
	t0 = ft_now_ms() - t0;
	if (ret)
		return ret < 0 ? ret : 0;
	ft_ok("msg_pingpong");
	ft_info("pingpong: %d x %zu bytes, %.1f us per round trip",
		ft_opts.iters, len, t0 * 1000.0 / ft_opts.iters);
	return 0;
}

/* ---- vectored transfers ----------------------------------------------- */

/* Split len bytes of base into cnt uneven pieces with gaps between them;
 * flip changes the split so sender and receiver pieces never line up. */
static void msg_make_iov(uint8_t *base, size_t len, size_t cnt, bool flip,
			 struct iovec *iov, void **desc, void *mr_desc)
{
	size_t i, piece = len / cnt, left = len, off = 0, n;

	for (i = 0; i < cnt; i++) {
		n = (i + flip) % 2 ? piece + 17 : piece - 17;
		if (n > left || i == cnt - 1)
			n = left;
		iov[i].iov_base = base + off;
		iov[i].iov_len = n;
		desc[i] = mr_desc;
		off += n + 4096;
		left -= n;
	}
}

static size_t msg_iov_limit(void)
{
	size_t n = g.conn.info->tx_attr->iov_limit;

	if (g.conn.info->rx_attr->iov_limit < n)
		n = g.conn.info->rx_attr->iov_limit;
	return n < FT_MAX_IOV ? n : FT_MAX_IOV;
}

static ssize_t msg_post_iov(struct iovec *iov, void **desc, size_t cnt,
			    bool use_msg)
{
	struct fi_msg msg = {
		.msg_iov = iov, .desc = desc, .iov_count = cnt,
		.context = ft_is_server() ? &g.rxctx[0] : &g.txctx[0],
	};
	struct fid_ep *ep = g.conn.ep;
	int to = ft_opts.timeout_ms;

	if (ft_is_server() && use_msg)
		return FT_POST(fi_recvmsg(ep, &msg, FI_COMPLETION),
			       g.conn.rxcq, to);
	if (ft_is_server())
		return FT_POST(fi_recvv(ep, iov, desc, cnt, 0, msg.context),
			       g.conn.rxcq, to);
	if (use_msg)
		return FT_POST(fi_sendmsg(ep, &msg, FI_COMPLETION),
			       g.conn.txcq, to);
	return FT_POST(fi_sendv(ep, iov, desc, cnt, 0, msg.context),
		       g.conn.txcq, to);
}

/* Client sends cnt pieces, server receives into a different split. */
static int msg_iov_case(const char *name, size_t cnt, bool use_msg)
{
	struct iovec iov[FT_MAX_IOV];
	void *desc[FT_MAX_IOV];
	size_t len = 4096 * cnt + 123;
	bool srv = ft_is_server();
	ssize_t ret, bad;

	msg_make_iov(srv ? g.rx.ptr : g.tx.ptr, len, cnt, srv, iov, desc,
		     srv ? g.rx.desc : g.tx.desc);
	if (!srv)
		ft_fill_iov(iov, cnt, 0x3000 + cnt);
	ret = srv ? msg_post_iov(iov, desc, cnt, use_msg) : 0;
	if (!ret)
		ret = msg_sync();
	if (!ret && !srv)
		ret = msg_post_iov(iov, desc, cnt, use_msg);
	if (ret) {
		ft_fail(name, "post: %s", fi_strerror((int)-ret));
		return -1;
	}
	if (!srv)
		return msg_wait_send(name, &g.txctx[0]);
	ret = msg_wait_recv(name, &g.rxctx[0], len, NULL);
	if (ret)
		return ret;
	bad = ft_verify_iov(iov, cnt, 0x3000 + cnt);
	if (bad >= 0)
		ft_fail(name, "data corrupt at byte %zd of %zu", bad, len);
	return bad >= 0;
}

static int msg_iov(void)
{
	size_t n, max = msg_iov_limit();
	char name[64];
	int ret;

	for (n = 1; n <= max; n++) {
		snprintf(name, sizeof(name), "msg_sendv_recvv_%zu", n);
		ret = msg_iov_case(name, n, false);
		if (ret < 0)
			return ret;
		if (!ret)
			ft_ok(name);
	}
	ret = msg_iov_case("msg_sendmsg_recvmsg", max, true);
	if (!ret)
		ft_ok("msg_sendmsg_recvmsg");
	return ret < 0 ? ret : 0;
}

/* ---- invalid arguments ------------------------------------------------ */

static void msg_expect_einval(const char *name, ssize_t ret)
{
	if (ft_check(ret == -FI_EINVAL, name, "returned %zd, want -FI_EINVAL",
		     ret))
		ft_ok(name);
}

/* What fi_msg(3) makes invalid is refused, and nothing is sent: lengths
 * that wrap past SIZE_MAX, NULL arrays and buffers, too many iovs. */
static void msg_bad_args(void)
{
	struct fid_ep *ep = g.conn.ep;
	struct iovec wrap[2] = { { g.tx.ptr, SIZE_MAX }, { g.tx.ptr, 2 } };
	void *descs[FT_MAX_IOV + 2];
	struct iovec many[FT_MAX_IOV + 2];
	struct fi_msg msg = { .msg_iov = NULL, .iov_count = 1,
			      .context = &g.txctx[0] };
	size_t i, n = g.conn.info->tx_attr->iov_limit + 1;

	for (i = 0; i < FT_MAX_IOV + 2; i++) {
		descs[i] = g.tx.desc;
		many[i] = (struct iovec) { (uint8_t *)g.tx.ptr + i * 8, 8 };
	}
	msg_expect_einval("msg_sendv_wrap",
			  fi_sendv(ep, wrap, descs, 2, 0, &g.txctx[0]));
	msg_expect_einval("msg_recvv_wrap",
			  fi_recvv(ep, wrap, descs, 2, 0, &g.rxctx[0]));
	msg_expect_einval("msg_sendmsg_null_iov", fi_sendmsg(ep, &msg, 0));
	msg_expect_einval("msg_recvmsg_null_iov", fi_recvmsg(ep, &msg, 0));
	msg_expect_einval("msg_sendmsg_null_msg", fi_sendmsg(ep, NULL, 0));
	msg_expect_einval("msg_send_null_buf",
			  fi_send(ep, NULL, 8, g.tx.desc, 0, &g.txctx[0]));
	/* a NULL address with a descriptor (without one, it is an empty
	 * buffer: fi_rivet_shared_ctx) */
	msg_expect_einval("msg_recv_null_buf",
			  fi_recv(ep, NULL, 8, g.rx.desc, 0, &g.rxctx[0]));
	if (n <= FT_MAX_IOV + 2)
		msg_expect_einval("msg_sendv_iov_limit",
				  fi_sendv(ep, many, descs, n, 0,
					   &g.txctx[0]));
}

/* ---- inject and remote CQ data ---------------------------------------- */

static uint64_t msg_cq_data(void)
{
	size_t bytes = g.conn.info->domain_attr->cq_data_size;

	return bytes >= 8 ? MSG_CQ_DATA : MSG_CQ_DATA & ((1ULL << (8 * bytes)) - 1);
}

/* Server side of a one-way message: receive, check data and CQ data. */
static int msg_recv_check(const char *name, size_t len, uint32_t seed,
			  bool with_data)
{
	struct fi_cq_data_entry comp;
	uint64_t flags = FI_RECV | FI_MSG | (with_data ? FI_REMOTE_CQ_DATA : 0);
	int ret;

	ret = msg_wait(name, g.conn.rxcq, &g.rxctx[0], flags, len, &comp);
	if (ret)
		return ret;
	if (with_data && comp.data != msg_cq_data()) {
		ft_fail(name, "CQ data 0x%llx, want 0x%llx",
			(unsigned long long)comp.data,
			(unsigned long long)msg_cq_data());
		return 1;
	}
	return msg_verify(name, g.rx.ptr, len, seed) ? 0 : 1;
}

/* Client: inject, then scribble over the buffer at once. */
static ssize_t msg_inject_post(size_t len, bool with_data)
{
	struct fid_ep *ep = g.conn.ep;
	ssize_t ret;

	ft_fill(g.tx.ptr, len, 0x4000 + len);
	if (with_data)
		ret = FT_POST(fi_injectdata(ep, g.tx.ptr, len, msg_cq_data(),
					    0), g.conn.txcq, ft_opts.timeout_ms);
	else
		ret = FT_POST(fi_inject(ep, g.tx.ptr, len, 0), g.conn.txcq,
			      ft_opts.timeout_ms);
	memset(g.tx.ptr, 0xee, len);
	return ret;
}

static int msg_inject_case(const char *name, size_t len, bool with_data)
{
	ssize_t ret = 0;

	if (ft_is_server() && msg_post_recv(g.rx.ptr, g.max, &g.rxctx[0]))
		return -1;
	if (msg_sync())
		return -1;
	if (ft_is_server())
		ret = msg_recv_check(name, len, 0x4000 + len, with_data);
	else if ((ret = msg_inject_post(len, with_data)))
		ft_fail(name, "inject: %s", fi_strerror((int)-ret));
	if (ret < 0 || msg_sync())	/* the server has the message now */
		return -1;
	if (!ft_is_server() && !ret && !ft_cq_empty(g.conn.txcq)) {
		ft_fail(name, "inject wrote a send completion");
		ret = 1;
	}
	if (!ret)
		ft_ok(name);
	return 0;
}

static int msg_senddata(void)
{
	ssize_t ret;

	if (ft_is_server() && msg_post_recv(g.rx.ptr, g.max, &g.rxctx[0]))
		return -1;
	if (msg_sync())
		return -1;
	if (ft_is_server()) {
		ret = msg_recv_check("msg_senddata", 100, 0x5000, true);
	} else {
		ft_fill(g.tx.ptr, 100, 0x5000);
		ret = FT_POST(fi_senddata(g.conn.ep, g.tx.ptr, 100, g.tx.desc,
					  msg_cq_data(), 0, &g.txctx[0]),
			      g.conn.txcq, ft_opts.timeout_ms);
		if (ret)
			ft_fail("msg_senddata", "%s", fi_strerror((int)-ret));
		ret = ret ? -1 : msg_wait_send("msg_senddata", &g.txctx[0]);
	}
	if (!ret)
		ft_ok("msg_senddata");
	return ret < 0 ? -1 : 0;
}

static int msg_inject(void)
{
	size_t inj = g.conn.info->tx_attr->inject_size;
	char name[64];

	if (!inj) {
		ft_skip("msg_inject", "inject_size is 0");
	} else {
		snprintf(name, sizeof(name), "msg_inject_%zu", inj);
		if (msg_inject_case("msg_inject_1", 1, false) ||
		    msg_inject_case(name, inj, false))
			return -1;
	}
	if (!g.conn.info->domain_attr->cq_data_size) {
		ft_skip("msg_senddata", "cq_data_size is 0");
		return 0;
	}
	if (msg_senddata())
		return -1;
	if (inj && msg_inject_case("msg_injectdata", inj < 32 ? inj : 32,
				   true))
		return -1;
	return 0;
}

/* ---- queue depth ------------------------------------------------------- */

static size_t msg_window(void)
{
	size_t n = MSG_WINDOW;

	if (g.conn.info->tx_attr->size < n)
		n = g.conn.info->tx_attr->size;
	if (g.conn.info->rx_attr->size < n)
		n = g.conn.info->rx_attr->size;
	return n;
}

/* Server posts n receives, client sends n messages back to back; with
 * FI_ORDER_SAS message i must land in receive i. */
static int msg_window_case(void)
{
	size_t i, n = msg_window(), len = MSG_WINDOW_LEN;
	uint8_t *base = ft_is_server() ? g.rx.ptr : g.tx.ptr;
	int ret = 0, r;

	for (i = 0; ft_is_server() && i < n; i++)
		if (msg_post_recv(base + i * len, len, &g.rxctx[i]))
			return -1;
	if (msg_sync())
		return -1;
	for (i = 0; !ft_is_server() && i < n; i++) {
		ft_fill(base + i * len, len, 0x6000 + i);
		if (msg_post_send(base + i * len, len, &g.txctx[i]))
			return -1;
	}
	for (i = 0; i < n; i++) {
		r = ft_is_server() ?
			msg_wait_recv("msg_window", &g.rxctx[i], len, NULL) :
			msg_wait_send("msg_window", &g.txctx[i]);
		if (r < 0)
			return r;
		ret |= r;
		if (!r && ft_is_server() &&
		    !msg_verify("msg_window", base + i * len, len, 0x6000 + i))
			ret = 1;
	}
	if (!ret)
		ft_ok("msg_window");
	ft_info("window: %zu messages in flight", n);
	return 0;
}

static void msg_disconnect(void);

/* ---- connection B: selective completion, then a truncated receive ----- */

static struct fid_cntr *msg_cntr_open(void)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = FI_WAIT_UNSPEC,
	};
	struct fid_cntr *cntr = NULL;
	int ret;

	ret = fi_cntr_open(g.fab.domain, &attr, &cntr, NULL);
	if (ret)
		ft_info("no counter (%s): counter checks skipped",
			fi_strerror(-ret));
	return ret ? NULL : cntr;
}

static int msg_selective_send(void)
{
	struct iovec iov = { .iov_base = g.tx.ptr, .iov_len = 64 };
	void *desc = g.tx.desc;
	struct fi_msg msg = { .msg_iov = &iov, .desc = &desc, .iov_count = 1 };
	ssize_t ret = 0;
	int i;

	for (i = 0; i < 4 && !ret; i++) {
		msg.context = &g.txctx[i];
		ret = FT_POST(fi_sendmsg(g.conn.ep, &msg,
					 i == 3 ? FI_COMPLETION : 0),
			      g.conn.txcq, ft_opts.timeout_ms);
	}
	if (ret)
		ft_fail("msg_selective_completion", "fi_sendmsg: %s",
			fi_strerror((int)-ret));
	return ret ? -1 : 0;
}

/* Of four sends only the one with FI_COMPLETION may write an entry; a
 * send counter sees all four. */
static int msg_selective_client(void)
{
	int ret;

	if (msg_sync() || msg_selective_send() || msg_sync())
		return -1;
	ret = msg_wait_send("msg_selective_completion", &g.txctx[3]);
	if (ret < 0)
		return ret;
	if (!ret && !ft_cq_empty(g.conn.txcq))
		ft_fail("msg_selective_completion", "extra send completion");
	else if (!ret)
		ft_ok("msg_selective_completion");
	if (!g.conn.txcntr) {
		ft_skip("msg_selective_cntr", "provider has no counters");
		return 0;
	}
	ret = fi_cntr_wait(g.conn.txcntr, 4, ft_opts.timeout_ms);
	ft_check(!ret && fi_cntr_read(g.conn.txcntr) == 4,
		 "msg_selective_cntr", "fi_cntr_wait: %s, counter %llu",
		 fi_strerror(-ret),
		 (unsigned long long)fi_cntr_read(g.conn.txcntr));
	return 0;
}

static int msg_selective_server(void)
{
	int i, ret = 0;

	for (i = 0; i < 4; i++)
		if (msg_post_recv(g.rx.ptr + i * 64, 64, &g.rxctx[i]))
			return -1;
	if (msg_sync())
		return -1;
	for (i = 0; i < 4 && ret >= 0; i++)
		ret |= msg_wait_recv("msg_selective_recv", &g.rxctx[i], 64,
				     NULL);
	if (!ret)
		ft_ok("msg_selective_recv");
	return ret < 0 || msg_sync() ? -1 : 0;
}

/* A receive buffer smaller than the message: an error completion (FI_ETRUNC
 * per fi_cq(3), or any error with a readable string), never a hang.  The
 * server then drops the connection, which must complete the client's send
 * (with an error, most likely) instead of leaving it queued forever. */
static void msg_trunc_server(void)
{
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_data_entry comp = { 0 };
	char str[256] = "";
	int ret;

	if (msg_post_recv(g.rx.ptr, 16, &g.rxctx[0]) || msg_sync())
		return;
	ret = ft_cq_wait(g.conn.rxcq, &comp, &err, ft_opts.timeout_ms);
	if (ret == -FI_EAVAIL)
		snprintf(str, sizeof(str), "%s",
			 ft_cq_errstr(g.conn.rxcq, &err));
	msg_disconnect();
	if (!ft_check(ret == -FI_EAVAIL && err.err, "msg_recv_too_small",
		      "want an error completion, got %s (len %zu)",
		      ret ? fi_strerror(-ret) : "success", comp.len))
		return;
	ft_info("truncated receive: err %d (%s), prov_errno %d: %s, olen %zu",
		err.err, fi_strerror(err.err), err.prov_errno, str, err.olen);
	ft_check(err.op_context == &g.rxctx[0], "msg_recv_too_small_ctx",
		 "error entry context %p, want %p", err.op_context,
		 (void *)&g.rxctx[0]);
	if (err.err == FI_ETRUNC)
		ft_check(err.olen == 48, "msg_recv_too_small_olen",
			 "olen %zu, want 48", err.olen);
}

/* Wait for the send while watching the EQ, as an application would: the
 * peer's disconnect may be what completes it. */
static int msg_wait_send_or_shutdown(struct fi_cq_err_entry *err,
				     bool *shutdown)
{
	struct fi_eq_cm_entry entry;
	uint64_t end = ft_now_ms() + 3 * ft_opts.timeout_ms;
	uint32_t event;
	int ret;

	do {
		ret = ft_cq_wait(g.conn.txcq, NULL, err, 100);
		if (ret != -FI_ETIMEDOUT)
			return ret;
		if (fi_eq_read(g.conn.eq, &event, &entry, sizeof(entry), 0) > 0
		    && event == FI_SHUTDOWN)
			*shutdown = true;
	} while (ft_now_ms() < end);
	return -FI_ETIMEDOUT;
}

static void msg_trunc_client(void)
{
	struct fi_cq_err_entry err;
	bool shutdown = false;
	int ret;

	if (msg_sync())
		return;
	ft_fill(g.tx.ptr, 64, 0x7000);
	if (msg_post_send(g.tx.ptr, 64, &g.txctx[0]))
		return;
	ret = msg_wait_send_or_shutdown(&err, &shutdown);
	ft_check(!ret || ret == -FI_EAVAIL, "msg_send_to_small_recv",
		 "the send did not complete within %d ms (FI_SHUTDOWN %s): %s",
		 3 * ft_opts.timeout_ms, shutdown ? "seen" : "not seen",
		 fi_strerror(-ret));
	if (ret == -FI_EAVAIL)
		ft_info("send to a small receive: err %d (%s): %s", err.err,
			fi_strerror(err.err), ft_cq_errstr(g.conn.txcq, &err));
}

/* ---- setup ------------------------------------------------------------- */

static int msg_connect(bool selective)
{
	int ret;

	memset(&g.conn, 0, sizeof(g.conn));
	if (selective && !ft_is_server()) {
		g.conn.tx_bind_flags = FI_SELECTIVE_COMPLETION;
		g.conn.txcntr = msg_cntr_open();
	}
	if (ft_is_server()) {
		ret = ft_accept_req(&g.fab, &g.conn, NULL, NULL);
		ret = ret ? ret : ft_accept_finish(&g.conn, NULL, 0, NULL,
						   NULL);
	} else {
		ret = ft_connect_start(&g.fab, &g.conn);
		ret = ret ? ret : ft_connect_finish(&g.conn, NULL, 0, NULL,
						    NULL);
	}
	return ft_check(!ret, selective ? "msg_connect_selective" :
			"msg_connect", "%s", fi_strerror(-ret)) ? 0 : -1;
}

static void msg_disconnect(void)
{
	struct fid_cntr *cntr = g.conn.txcntr;

	ft_conn_close(&g.conn);
	if (cntr)
		fi_close(&cntr->fid);
}

static int msg_listen_or_connect(void)
{
	int ret;

	if (!ft_is_server())
		return ft_oob_connect();
	ret = ft_oob_listen();
	ret = ret ? ret : ft_listen(&g.fab);
	return ret ? ret : ft_oob_accept();
}

static int msg_setup(void)
{
	struct fi_info *hints = ft_hints_alloc(FI_MSG), *info = NULL;
	size_t buf, max_msg;
	int ret;

	ret = ft_getinfo(hints, &info);
	fi_freeinfo(hints);
	if (!ret)
		ret = ft_fab_open(&g.fab, info);
	if (!ret)
		ret = msg_listen_or_connect();
	if (!ret) {
		max_msg = info->ep_attr->max_msg_size;
		g.max = ft_opts.all_sizes ? ft_opts.max_size : ft_opts.size;
		g.max = g.max < max_msg ? g.max : max_msg;
		buf = g.max > MSG_MIN_BUF ? g.max : MSG_MIN_BUF;
		ret = ft_buf_alloc(g.fab.domain, buf, FI_SEND, &g.tx);
	}
	if (!ret)
		ret = ft_buf_alloc(g.fab.domain, buf, FI_RECV, &g.rx);
	return ft_check(!ret, "setup", "%s", fi_strerror(-ret)) ? 0 : -1;
}

static void msg_run(void)
{
	if (msg_connect(false))
		return;
	msg_bad_args();
	if (msg_sweep() || msg_pingpong() || msg_iov() || msg_inject() ||
	    msg_window_case() || msg_sync())
		return;
	msg_disconnect();
	if (msg_connect(true))
		return;
	if (ft_is_server() ? msg_selective_server() : msg_selective_client())
		return;
	if (ft_is_server())
		msg_trunc_server();
	else
		msg_trunc_client();
	if (ft_oob_sync_ms(5 * ft_opts.timeout_ms))
		ft_fail("oob_sync", "peer did not finish");
}

int main(int argc, char **argv)
{
	ft_parse_opts(argc, argv, "Send/receive conformance.", true);
	if (!ft_opts.size_set)
		ft_opts.all_sizes = true;
	if (!msg_setup())
		msg_run();
	msg_disconnect();
	ft_buf_free(&g.tx);
	ft_buf_free(&g.rx);
	ft_oob_close();
	ft_fab_close(&g.fab);
	return ft_summary();
}
