// SPDX-License-Identifier: MIT
/* Shared receive and transmit contexts (fi_endpoint(3) SHARED CONTEXTS),
 * one process, -e rdm|msg|dgram: three receiving endpoints bound to one
 * fi_srx_context, a sender per receiver bound to one fi_stx_context.
 * - getinfo offers FI_SHARED_CONTEXT each way when asked;
 * - receives posted to the context are taken by whichever endpoint a
 *   message arrives on, and reported on that endpoint's CQ (each has its
 *   own, smaller than the context: MSG and DGRAM must make room);
 * - RDM: messages that arrive before their receive wait in the context and
 *   match a receive posted to it later, tagged ones too; DGRAM: datagrams
 *   that come before any receive wait and are taken in order, one longer
 *   than its receive truncated; RDM: a cancelled
 *   receive; an endpoint that closes with messages waiting in the context
 *   takes them along (a claim of one of them then names nothing) and the
 *   others go on;
 * - close rules: a context in use is -FI_EBUSY. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_tagged.h>

#include "common/ft_rivet.h"

#define SC_EPS 3
#define SC_MSGS 48		/* > every receiver CQ, <= the context */
#define SC_CQ 8
#define SC_SRX 64
#define SC_LEN 64

struct sc_msg {
	uint32_t seq, target;
};

static struct {
	struct ft_fab fab;
	struct fi_info *info;
	struct fid_av *av;
	struct fid_ep *srx;
	struct fid_stx *stx;
	struct fid_eq *eq;
	struct fid_ep *rx[SC_EPS], *tx[SC_EPS];
	struct fid_cq *rxcq[SC_EPS], *txcq[SC_EPS];
	fi_addr_t dest[SC_EPS];		/* RDM, DGRAM: rx[i] in av */
	struct ft_buf rxbuf, txbuf;
	struct fi_context rxctx[SC_SRX];
	struct fi_context txctx[SC_MSGS];
	int seen[SC_MSGS];
} g;

static bool sc_rdm(void)
{
	return ft_opts.ep_type == FI_EP_RDM;
}

static int sc_bind_cqs(struct fid_ep *ep, struct fid_cq **txcq,
		       struct fid_cq **rxcq)
{
	int ret = 0;

	if (txcq)
		ret = ft_cq_open(g.fab.domain, 64, FI_WAIT_NONE, txcq);
	if (!ret && txcq)
		ret = fi_ep_bind(ep, &(*txcq)->fid, FI_TRANSMIT);
	if (!ret && rxcq)
		ret = ft_cq_open(g.fab.domain, SC_CQ, FI_WAIT_NONE, rxcq);
	if (!ret && rxcq)
		ret = fi_ep_bind(ep, &(*rxcq)->fid, FI_RECV);
	return ret;
}

/* RDM and DGRAM: every endpoint on the domain's info, without its port */
static int sc_open_ep(struct fid_ep **ep, bool shared_rx)
{
	struct fi_info *info = fi_dupinfo(g.info);
	int ret;

	if (!info)
		return -FI_ENOMEM;
	free(info->src_addr);
	info->src_addr = NULL;
	info->src_addrlen = 0;
	ret = fi_endpoint(g.fab.domain, info, ep, NULL);
	fi_freeinfo(info);
	if (!ret)
		ret = fi_ep_bind(*ep, &g.av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(*ep, shared_rx ? &g.srx->fid : &g.stx->fid,
				 0);
	return ret;
}

static int sc_setup_connless(void)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	uint8_t name[64];
	size_t len;
	int i, ret;

	ret = fi_av_open(g.fab.domain, &attr, &g.av, NULL);
	for (i = 0; !ret && i < SC_EPS; i++) {
		ret = sc_open_ep(&g.rx[i], true);
		if (!ret)
			ret = sc_bind_cqs(g.rx[i], NULL, &g.rxcq[i]);
		if (!ret)
			ret = fi_enable(g.rx[i]);
		len = sizeof(name);
		if (!ret)
			ret = fi_getname(&g.rx[i]->fid, name, &len);
		if (!ret && fi_av_insert(g.av, name, 1, &g.dest[i], 0,
					 NULL) != 1)
			ret = -FI_EINVAL;
		if (!ret)
			ret = sc_open_ep(&g.tx[i], false);
		if (!ret)
			ret = sc_bind_cqs(g.tx[i], &g.txcq[i], NULL);
		if (!ret)
			ret = fi_enable(g.tx[i]);
	}
	return ret;
}

/* MSG: tx[i] connects to the listener, rx[i] is its accepted side */
static int sc_setup_msg(void)
{
	struct fi_info *cinfo, *req;
	int i, ret;

	ret = ft_eq_open(g.fab.fabric, FI_WAIT_UNSPEC, &g.eq);
	if (!ret)
		ret = ft_listen(&g.fab);
	if (!ret)
		ret = ft_self_client_info(g.info, &cinfo);
	if (ret)
		return ret;
	for (i = 0; !ret && i < SC_EPS; i++) {
		ret = fi_endpoint(g.fab.domain, cinfo, &g.tx[i], NULL);
		if (!ret)
			ret = fi_ep_bind(g.tx[i], &g.eq->fid, 0);
		if (!ret)
			ret = fi_ep_bind(g.tx[i], &g.stx->fid, 0);
		if (!ret)
			ret = sc_bind_cqs(g.tx[i], &g.txcq[i], NULL);
		if (!ret)
			ret = fi_connect(g.tx[i], cinfo->dest_addr, NULL, 0);
		if (!ret)
			ret = ft_self_wait_connreq(&g.fab, g.eq, &req);
		if (ret) {
			ft_info("connection %d: connect: %s", i,
				fi_strerror(-ret));
			break;
		}
		ret = fi_endpoint(g.fab.domain, req, &g.rx[i], NULL);
		if (!ret)
			ret = fi_ep_bind(g.rx[i], &g.eq->fid, 0);
		if (!ret)
			ret = fi_ep_bind(g.rx[i], &g.srx->fid, 0);
		if (!ret)
			ret = sc_bind_cqs(g.rx[i], NULL, &g.rxcq[i]);
		if (!ret)
			ret = fi_accept(g.rx[i], NULL, 0);
		fi_freeinfo(req);
		if (ret)
			ft_info("connection %d: accept: %s", i, fi_strerror(-ret));
		/* both ends report FI_CONNECTED on the one EQ */
		if (!ret)
			ret = ft_eq_expect(g.eq, FI_CONNECTED, NULL, NULL,
					   NULL, ft_opts.timeout_ms);
		if (!ret)
			ret = ft_eq_expect(g.eq, FI_CONNECTED, NULL, NULL,
					   NULL, ft_opts.timeout_ms);
	}
	fi_freeinfo(cinfo);
	return ret;
}

static ssize_t sc_send(int seq, int target, bool tagged)
{
	struct sc_msg *m = (struct sc_msg *)((uint8_t *)g.txbuf.ptr +
					     (size_t)seq * SC_LEN);
	struct fid_ep *ep = g.tx[target];
	fi_addr_t dest = sc_rdm() || ft_opts.ep_type == FI_EP_DGRAM ?
			 g.dest[target] : FI_ADDR_UNSPEC;
	ssize_t ret;
	int i;

	m->seq = (uint32_t)seq;
	m->target = (uint32_t)target;
	for (i = 0; i < 1000; i++) {
		ret = tagged ? fi_tsend(ep, m, SC_LEN, g.txbuf.desc, dest,
					0x100 + (uint64_t)seq,
					&g.txctx[seq]) :
			       fi_send(ep, m, SC_LEN, g.txbuf.desc, dest,
				       &g.txctx[seq]);
		if (ret != -FI_EAGAIN)
			return ret;
		fi_cq_read(g.txcq[target], NULL, 0);
	}
	return ret;
}

static ssize_t sc_post(int slot, bool tagged, uint64_t tag)
{
	void *buf = (uint8_t *)g.rxbuf.ptr + (size_t)slot * SC_LEN;

	return tagged ? fi_trecv(g.srx, buf, SC_LEN, g.rxbuf.desc,
				 FI_ADDR_UNSPEC, tag, 0, &g.rxctx[slot]) :
			fi_recv(g.srx, buf, SC_LEN, g.rxbuf.desc,
				FI_ADDR_UNSPEC, &g.rxctx[slot]);
}

/* n completions over the receivers' CQs, each where its message went;
 * the senders' CQs are drained on the way. */
static bool sc_collect(const char *name, int n, int first_seq, int neps)
{
	struct fi_cq_data_entry c;
	const struct sc_msg *m;
	uint64_t end;
	int got = 0, i;
	ssize_t ret;

	memset(g.seen, 0, sizeof(g.seen));
	end = ft_now_ms() + (uint64_t)ft_opts.timeout_ms;
	while (got < n && ft_now_ms() < end) {
		for (i = 0; i < SC_EPS; i++) {
			if (g.txcq[i])
				fi_cq_read(g.txcq[i], &c, 1);
			if (i >= neps || !g.rxcq[i])
				continue;
			ret = fi_cq_read(g.rxcq[i], &c, 1);
			if (ret == -FI_EAGAIN)
				continue;
			if (ret != 1) {
				struct fi_cq_err_entry e = { 0 };

				fi_cq_readerr(g.rxcq[i], &e, 0);
				ft_fail(name, "rx cq %d: %zd, error %d (%s)",
					i, ret, e.err, fi_strerror(e.err));
				return false;
			}
			m = c.buf;
			if (!m || c.len != SC_LEN ||
			    m->seq < (uint32_t)first_seq ||
			    m->seq >= (uint32_t)(first_seq + n) ||
			    m->target != (uint32_t)i ||
			    g.seen[m->seq - first_seq]++) {
				ft_fail(name, "cq %d: len %zu, message %u for "
					"endpoint %u", i, c.len,
					m ? m->seq : 0, m ? m->target : 0);
				return false;
			}
			got++;
		}
	}
	return ft_check(got == n, name, "%d of %d receives completed", got,
			n);	/* "ok NAME" when all came */
}

static void sc_traffic(void)
{
	int i;
	ssize_t ret = 0;

	for (i = 0; !ret && i < SC_MSGS; i++)
		ret = sc_post(i, false, 0);
	ft_check(!ret, "srx_post", "fi_recv on the context: %zd", ret);
	for (i = 0; !ret && i < SC_MSGS; i++)
		ret = sc_send(i, i % SC_EPS, false);
	if (!ft_check(!ret, "stx_send", "fi_send: %zd", ret))
		return;
	sc_collect("srx_reported_by_receiver", SC_MSGS, 0, SC_EPS);
}

/* RDM: unexpected messages wait in the context, tagged or not */
static void sc_rdm_unexpected(void)
{
	struct fi_cq_data_entry c;
	ssize_t ret = 0;
	int i, spin;

	for (i = 0; !ret && i < 6; i++)
		ret = sc_send(i, i % SC_EPS, i >= 3);
	/* let them arrive: the receivers' reads drive their progress */
	for (spin = 0; spin < 20000; spin++)
		for (i = 0; i < SC_EPS; i++) {
			fi_cq_read(g.rxcq[i], &c, 0);
			fi_cq_read(g.txcq[i], &c, 1);
		}
	for (i = 0; !ret && i < 3; i++)
		ret = sc_post(i, false, 0);
	for (i = 3; !ret && i < 6; i++)
		ret = sc_post(i, true, 0x100 + (uint64_t)i);
	if (ret)
		ft_fail("srx_unexpected", "post: %zd", ret);
	else
		sc_collect("srx_unexpected", 6, 0, SC_EPS);
}

static void sc_rdm_cancel(void)
{
	struct fi_cq_err_entry e = { 0 };
	ssize_t ret = sc_post(0, true, 0xdead);
	int i, found = -1;

	if (!ret)
		ret = fi_cancel(&g.srx->fid, &g.rxctx[0]);
	for (i = 0; !ret && found < 0 && i < SC_EPS; i++)
		if (ft_cq_wait(g.rxcq[i], NULL, &e, 200) == 0 ||
		    e.err == FI_ECANCELED)
			found = i;
	ft_check(!ret && found >= 0 && e.err == FI_ECANCELED &&
		 e.op_context == &g.rxctx[0], "srx_cancel",
		 "cancel %zd, error %d on cq %d", ret, e.err, found);
}

/* RDM: rx[2] closes with three messages waiting for it in the context,
 * one of them claimed through it (FI_PEEK | FI_CLAIM): the claim's
 * context no longer names a message (-FI_EINVAL), it reads nothing of
 * what went with the endpoint */
static void sc_rdm_close_one(void)
{
	struct fi_context cctx = { { 0 } };
	struct iovec iov = { (uint8_t *)g.rxbuf.ptr + 30 * SC_LEN, SC_LEN };
	void *desc = g.rxbuf.desc;
	struct fi_msg_tagged tm = {
		.addr = FI_ADDR_UNSPEC, .tag = 0x100 + 12, .context = &cctx,
	};
	struct fi_cq_data_entry c;
	ssize_t ret, cret = -1;
	int i, spin;

	ret = sc_send(10, 2, false);
	if (!ret)
		ret = sc_send(11, 2, false);
	if (!ret)
		ret = sc_send(12, 2, true);
	for (spin = 0; spin < 20000; spin++)
		for (i = 0; i < SC_EPS; i++) {
			fi_cq_read(g.rxcq[i], &c, 0);
			fi_cq_read(g.txcq[i], &c, 1);
		}
	if (!ret)
		cret = fi_trecvmsg(g.srx, &tm, FI_PEEK | FI_CLAIM);
	if (!cret && (ft_cq_wait(g.rxcq[2], &c, NULL, 2000) ||
		      c.op_context != &cctx))
		cret = -1;
	if (cret)
		ft_fail("srx_claim_after_close", "the claim: %zd", cret);
	ret = ret ? ret : fi_close(&g.rx[2]->fid);
	g.rx[2] = NULL;
	if (!ret && !cret) {
		tm.msg_iov = &iov;
		tm.desc = &desc;
		tm.iov_count = 1;
		cret = fi_trecvmsg(g.srx, &tm, FI_CLAIM);
		ft_check(cret == -FI_EINVAL, "srx_claim_after_close",
			 "a claim of a message that left with its endpoint: "
			 "%zd", cret);
	}
	if (!ret)
		ret = sc_post(20, false, 0);
	if (!ret)
		ret = sc_send(20, 0, false);
	if (ret)
		ft_fail("srx_close_one", "%zd", ret);
	else
		sc_collect("srx_close_one", 1, 20, 2);
}

/* Reads every CQ for ms; how many completions the receivers reported. */
static int sc_idle(int ms)
{
	struct fi_cq_data_entry c;
	uint64_t end = ft_now_ms() + (uint64_t)ms;
	int i, n = 0;

	while (ft_now_ms() < end)
		for (i = 0; i < SC_EPS; i++) {
			fi_cq_read(g.txcq[i], &c, 1);
			n += fi_cq_read(g.rxcq[i], &c, 1) != -FI_EAGAIN;
		}
	return n;
}

/* DGRAM: datagrams that come before any receive wait in the context and
 * are taken, in order, by the receives posted later, each reported by
 * the endpoint that got it (a UD QP drops what finds no receive: the
 * upstream fi_shared_ctx -e dgram sends right after its handshake, before
 * the other side posts); one longer than its receive is truncated. */
static void sc_dgram_early(void)
{
	struct fi_cq_err_entry e = { 0 };
	struct fi_cq_data_entry c;
	ssize_t ret = 0;
	int i, early;

	for (i = 0; !ret && i < 6; i++)
		ret = sc_send(i, i % SC_EPS, false);
	early = ret ? 0 : sc_idle(500);	/* they came, were not reported */
	ft_check(!ret && !early, "srx_dgram_early_wait", "send %zd, %d "
		 "reported before any receive", ret, early);
	for (i = 0; !ret && i < 6; i++)
		ret = sc_post(i, false, 0);
	if (ret)
		ft_fail("srx_dgram_early", "post: %zd", ret);
	else
		sc_collect("srx_dgram_early", 6, 0, SC_EPS);

	ret = sc_send(7, 0, false);
	early = ret ? 0 : sc_idle(500);
	ret = ret ? ret : fi_recv(g.srx, g.rxbuf.ptr, 16, g.rxbuf.desc,
				  FI_ADDR_UNSPEC, &g.rxctx[7]);
	if (!ret)
		ret = fi_cq_read(g.rxcq[0], &c, 1);
	if (ret == -FI_EAVAIL)
		ret = fi_cq_readerr(g.rxcq[0], &e, 0) == 1 ? 0 : -FI_EOTHER;
	ft_check(!ret && !early && e.err == FI_ETRUNC && e.olen == SC_LEN - 16
		 && e.len == 16 && e.op_context == &g.rxctx[7],
		 "srx_dgram_early_trunc", "%zd, error %d, len %zu, olen %zu",
		 ret, e.err, e.len, e.olen);
}

/* MSG, DGRAM: a receive with neither buffer nor descriptor is an empty
 * one, it takes a zero-byte message (the upstream fi_shared_ctx -e msg
 * posts such receives).  RDM keeps refusing a NULL buffer. */
static void sc_null_buffer(void)
{
	struct fi_cq_data_entry c, t;
	ssize_t ret;
	uint64_t end;
	int i, got = -1;

	ret = fi_recv(g.srx, NULL, SC_LEN, NULL, FI_ADDR_UNSPEC,
		      &g.rxctx[SC_SRX - 1]);
	if (sc_rdm()) {
		ft_check(ret == -FI_EINVAL, "srx_null_buffer",
			 "%zd, want -FI_EINVAL", ret);
		return;
	}
	if (!ret)
		ret = fi_send(g.tx[1], NULL, 0, NULL, sc_rdm() ||
			      ft_opts.ep_type == FI_EP_DGRAM ? g.dest[1] :
			      FI_ADDR_UNSPEC, &g.txctx[0]);
	end = ft_now_ms() + (uint64_t)ft_opts.timeout_ms;
	while (!ret && got < 0 && ft_now_ms() < end) {
		for (i = 0; i < SC_EPS && got < 0; i++) {
			/* (a send's completion must not overwrite c) */
			if (g.txcq[i])
				fi_cq_read(g.txcq[i], &t, 1);
			if (g.rxcq[i] && fi_cq_read(g.rxcq[i], &c, 1) == 1)
				got = i;
		}
	}
	ft_check(!ret && got == 1 && c.len == 0 &&
		 c.op_context == &g.rxctx[SC_SRX - 1], "srx_null_buffer",
		 "%zd, completion on cq %d, len %zu", ret, got,
		 got >= 0 ? c.len : 0);
}

static void sc_close_rules(void)
{
	int ret = fi_close(&g.srx->fid), ret2 = fi_close(&g.stx->fid);

	ft_check(ret == -FI_EBUSY && ret2 == -FI_EBUSY, "close_busy",
		 "srx %d, stx %d, want -FI_EBUSY", ret, ret2);
}

static void sc_getinfo(struct fi_info *hints)
{
	struct fi_info *info = NULL;
	int ret;

	hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	ret = ft_getinfo(hints, &info);
	ft_check(!ret && info->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT &&
		 info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT,
		 "getinfo_shared", "%d", ret);
	g.info = info;
}

int main(int argc, char **argv)
{
	struct fi_rx_attr rxa = { .size = SC_SRX };
	struct fi_tx_attr txa = { 0 };
	struct fi_info *hints;
	int i, ret;

	ft_parse_opts(argc, argv, "shared receive and transmit contexts",
		      false);
	hints = ft_hints_alloc(FI_MSG | FI_SEND | FI_RECV |
			       (sc_rdm() ? FI_TAGGED : 0));
	if (!hints)
		return 1;
	sc_getinfo(hints);
	if (!g.info)
		return ft_summary();
	ret = ft_fab_open(&g.fab, g.info);
	if (!ret)
		ret = fi_srx_context(g.fab.domain, &rxa, &g.srx, NULL);
	if (!ret)
		ret = fi_stx_context(g.fab.domain, &txa, &g.stx, NULL);
	if (!ret && sc_rdm()) {
		/* nothing reports yet for an RDM context */
		ret = sc_post(0, false, 0) == -FI_EOPBADSTATE ? 0 : -FI_EOTHER;
		ft_check(!ret, "srx_before_enable", "want -FI_EOPBADSTATE");
	}
	if (!ret)
		ret = ft_opts.ep_type == FI_EP_MSG ? sc_setup_msg() :
						     sc_setup_connless();
	if (!ret)
		ret = ft_buf_alloc(g.fab.domain, SC_SRX * SC_LEN, FI_RECV,
				   &g.rxbuf);
	if (!ret)
		ret = ft_buf_alloc(g.fab.domain, SC_MSGS * SC_LEN, FI_SEND,
				   &g.txbuf);
	if (!ft_check(!ret, "setup", "%s", fi_strerror(-ret)))
		goto out;
	sc_traffic();
	sc_null_buffer();
	if (ft_opts.ep_type == FI_EP_DGRAM)
		sc_dgram_early();
	if (sc_rdm()) {
		sc_rdm_unexpected();
		sc_rdm_cancel();
		sc_rdm_close_one();
	}
	sc_close_rules();
out:
	for (i = 0; i < SC_EPS; i++) {
		ft_close_fid(g.tx[i] ? &g.tx[i]->fid : NULL, "tx ep");
		ft_close_fid(g.rx[i] ? &g.rx[i]->fid : NULL, "rx ep");
	}
	ret = g.srx ? fi_close(&g.srx->fid) : 0;
	ft_check(!ret, "close_srx", "%d", ret);
	ret = g.stx ? fi_close(&g.stx->fid) : 0;
	ft_check(!ret, "close_stx", "%d", ret);
	for (i = 0; i < SC_EPS; i++) {
		ft_close_fid(g.txcq[i] ? &g.txcq[i]->fid : NULL, "cq");
		ft_close_fid(g.rxcq[i] ? &g.rxcq[i]->fid : NULL, "cq");
	}
	ft_buf_free(&g.rxbuf);
	ft_buf_free(&g.txbuf);
	ft_close_fid(g.av ? &g.av->fid : NULL, "av");
	ft_close_fid(g.eq ? &g.eq->fid : NULL, "eq");
	g.fab.info = NULL;
	ft_fab_close(&g.fab);
	fi_freeinfo(g.info);
	fi_freeinfo(hints);
	return ft_summary();
}
