// SPDX-License-Identifier: MIT
/* FI_EP_DGRAM conformance (one process, two endpoints on one domain):
 * fi_getinfo's answer, names through fi_getname and the AV, sends of every
 * size up to max_msg_size with the data checked, inject, sendv/recvv,
 * remote CQ data, sends refused (too large, bad iovs, unknown address),
 * a receive buffer too small (FI_ETRUNC, and the endpoint still works),
 * fi_av_remove, FI_SOURCE (fi_cq_readfrom), counters, the -FI_ENOSYS
 * tables and close rules; FI_MSG_PREFIX when the hints offer it (the GRH
 * in the application's prefix); datagrams that come before any receive
 * is posted, kept for the first receives. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_tagged.h>

#include "common/ft_rivet.h"

#define DG_CQ_DATA 0x5a5a1234u

struct dg_ep {
	struct fid_ep *ep;
	struct fid_cq *txcq, *rxcq;
	struct fid_cntr *cntr;
	struct sockaddr_in6 name;
	fi_addr_t addr;		/* in g.av */
};

static struct {
	struct ft_fab fab;
	struct fid_av *av;
	struct dg_ep a, b;	/* a sends, b receives */
	struct ft_buf tx, rx;
	size_t mtu;
	size_t inject;
	struct fi_context txctx, rxctx;
} g;

static const char *dg_err(ssize_t ret)
{
	static char buf[96];

	snprintf(buf, sizeof(buf), "%zd (%s)", ret,
		 fi_strerror((int)(ret < 0 ? -ret : ret)));
	return buf;
}

static int dg_ep_open_info(struct dg_ep *e, struct fi_info *info,
			   uint64_t cntr_flags, bool insert)
{
	struct fi_cntr_attr cattr = { .events = FI_CNTR_EVENTS_COMP };
	size_t len = sizeof(e->name);
	int ret;

	ret = fi_endpoint(g.fab.domain, info, &e->ep, NULL);
	if (!ret)
		ret = ft_cq_open(g.fab.domain, 64, FI_WAIT_NONE, &e->txcq);
	if (!ret)
		ret = ft_cq_open(g.fab.domain, 64, FI_WAIT_NONE, &e->rxcq);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->rxcq->fid, FI_RECV);
	if (!ret)
		ret = fi_ep_bind(e->ep, &g.av->fid, 0);
	if (!ret && cntr_flags)
		ret = fi_cntr_open(g.fab.domain, &cattr, &e->cntr, NULL);
	if (!ret && cntr_flags)
		ret = fi_ep_bind(e->ep, &e->cntr->fid, cntr_flags);
	if (!ret) {
		ret = fi_getname(&e->ep->fid, &e->name, &len);
		if (ret != -FI_EOPBADSTATE) {
			ft_fail("getname_before_enable", "%s, want "
				"-FI_EOPBADSTATE", dg_err(ret));
		}
		ret = fi_enable(e->ep);
	}
	len = sizeof(e->name);
	if (!ret)
		ret = fi_getname(&e->ep->fid, &e->name, &len);
	if (!ret && len != sizeof(e->name))
		ret = -FI_EINVAL;
	if (!ret && insert)
		ret = fi_av_insert(g.av, &e->name, 1, &e->addr, 0, NULL) == 1 ?
		      0 : -FI_EINVAL;
	if (ret)
		ft_info("endpoint setup: %s", dg_err(ret));
	return ret;
}

static int dg_ep_open(struct dg_ep *e, uint64_t cntr_flags)
{
	return dg_ep_open_info(e, g.fab.info, cntr_flags, true);
}

static void dg_ep_close(struct dg_ep *e)
{
	if (e->ep)
		ft_close_fid(&e->ep->fid, "ep");
	if (e->cntr)
		ft_close_fid(&e->cntr->fid, "cntr");
	if (e->txcq)
		ft_close_fid(&e->txcq->fid, "txcq");
	if (e->rxcq)
		ft_close_fid(&e->rxcq->fid, "rxcq");
}

static int dg_setup(void)
{
	struct fi_info *hints = ft_hints_alloc(FI_MSG | FI_SOURCE);
	struct fi_av_attr aattr = { .type = FI_AV_TABLE };
	struct fi_info *info;
	int ret;

	hints->ep_attr->type = FI_EP_DGRAM;
	ret = ft_getinfo(hints, &info);
	fi_freeinfo(hints);
	if (ret) {
		ft_fail("getinfo", "fi_getinfo(FI_EP_DGRAM): %s", dg_err(ret));
		return ret;
	}
	g.mtu = info->ep_attr->max_msg_size;
	g.inject = info->tx_attr->inject_size;
	ft_check(info->ep_attr->type == FI_EP_DGRAM && g.mtu >= 256 &&
		 g.mtu <= 4096 && info->addr_format == FI_SOCKADDR_IN6 &&
		 !(info->mode & FI_MSG_PREFIX) && (info->caps & FI_SOURCE) &&
		 !(info->caps & (FI_RMA | FI_TAGGED)),
		 "getinfo", "type %d, max_msg_size %zu, addr_format %u, "
		 "mode 0x%llx, caps 0x%llx", info->ep_attr->type, g.mtu,
		 info->addr_format, (unsigned long long)info->mode,
		 (unsigned long long)info->caps);
	ft_info("max_msg_size %zu, inject_size %zu, cq_data_size %zu", g.mtu,
		g.inject, info->domain_attr->cq_data_size);
	/* A and B without the service port (each would listen on it) */
	if (info->src_addr && info->addr_format == FI_SOCKADDR_IN6)
		((struct sockaddr_in6 *)info->src_addr)->sin6_port = 0;
	ret = ft_fab_open(&g.fab, info);
	if (!ret)
		ret = fi_av_open(g.fab.domain, &aattr, &g.av, NULL);
	if (!ret)
		ret = ft_buf_alloc(g.fab.domain, 2 * g.mtu + 64,
				   FI_SEND | FI_RECV, &g.tx);
	if (!ret)
		ret = ft_buf_alloc(g.fab.domain, 2 * g.mtu + 64,
				   FI_SEND | FI_RECV, &g.rx);
	if (!ret)
		ret = dg_ep_open(&g.a, FI_SEND);
	if (!ret)
		ret = dg_ep_open(&g.b, FI_RECV);
	return ret;
}

/* ---- waiting ---- */

static int dg_wait(const char *name, struct fid_cq *cq, void *ctx,
		   uint64_t flags, size_t len, struct fi_cq_data_entry *comp)
{
	struct fi_cq_data_entry lcomp;

	comp = comp ? comp : &lcomp;
	if (ft_cq_expect(cq, ctx, comp, ft_opts.timeout_ms)) {
		ft_fail(name, "no %s completion", flags & FI_RECV ? "receive" :
			"send");
		return -1;
	}
	if ((comp->flags & flags) != flags || comp->len != len) {
		ft_fail(name, "flags 0x%llx (want 0x%llx), len %zu (want %zu)",
			(unsigned long long)comp->flags,
			(unsigned long long)flags, comp->len, len);
		return -1;
	}
	return 0;
}

static int dg_post_recv(size_t len)
{
	ssize_t ret = fi_recv(g.b.ep, g.rx.ptr, len, g.rx.desc, FI_ADDR_UNSPEC,
			      &g.rxctx);

	if (ret)
		ft_fail("post_recv", "fi_recv(%zu): %s", len, dg_err(ret));
	return (int)ret;
}

/* ---- cases ---- */

static void case_names(void)
{
	struct sockaddr_in6 got;
	size_t len = sizeof(got);
	char str[128], ip[64];
	size_t slen = sizeof(str);
	int ret;

	ret = fi_av_lookup(g.av, g.b.addr, &got, &len);
	inet_ntop(AF_INET6, &g.b.name.sin6_addr, ip, sizeof(ip));
	fi_av_straddr(g.av, &g.b.name, str, &slen);
	ft_info("b's name: %s (qpn 0x%x), fi_addr %llu", str,
		ntohl(g.b.name.sin6_flowinfo), (unsigned long long)g.b.addr);
	ft_check(!ret && len == sizeof(got) &&
		 !memcmp(&got, &g.b.name, sizeof(got)) &&
		 g.a.addr != g.b.addr &&
		 memcmp(&g.a.name, &g.b.name, sizeof(got)),
		 "names_round_trip", "lookup %s, len %zu", dg_err(ret), len);
}

static void dg_send_one(const char *name, size_t size, bool inject)
{
	struct fi_cq_data_entry comp;
	ssize_t ret, bad;

	memset(g.rx.ptr, 0, g.mtu);
	if (dg_post_recv(g.mtu))
		return;
	ft_fill(g.tx.ptr, size, (uint32_t)size);
	if (inject)
		ret = fi_inject(g.a.ep, g.tx.ptr, size, g.b.addr);
	else
		ret = fi_send(g.a.ep, g.tx.ptr, size, g.tx.desc, g.b.addr,
			      &g.txctx);
	if (ret) {
		ft_fail(name, "send(%zu): %s", size, dg_err(ret));
		return;
	}
	if (!inject && dg_wait(name, g.a.txcq, &g.txctx, FI_SEND | FI_MSG,
			       0, NULL) < 0)
		return;
	if (dg_wait(name, g.b.rxcq, &g.rxctx, FI_RECV | FI_MSG, size,
		    &comp) < 0)
		return;
	bad = ft_verify(g.rx.ptr, size, (uint32_t)size);
	if (bad >= 0) {
		ft_fail(name, "size %zu: byte %zd differs", size, bad);
		return;
	}
	if (inject && !ft_cq_empty(g.a.txcq)) {
		ft_fail(name, "an inject made a completion");
		return;
	}
	ft_check(comp.buf == g.rx.ptr, name, "size %zu: buf %p, want %p",
		 size, comp.buf, g.rx.ptr);
}

static void case_sizes(void)
{
	size_t sizes[] = { 0, 1, 63, 64, 240, 241, 512, g.mtu - 1, g.mtu };
	char name[64];
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(name, sizeof(name), "send_%zu", sizes[i]);
		dg_send_one(name, sizes[i], false);
	}
}

static void case_inject(void)
{
	ssize_t ret;

	dg_send_one("inject_8", 8, true);
	dg_send_one("inject_max", (g.inject < g.mtu ? g.inject : g.mtu), true);
	ret = fi_inject(g.a.ep, g.tx.ptr, g.inject + 1, g.b.addr);
	ft_check(ret == -FI_EINVAL, "inject_too_large", "inject(%zu): %s",
		 g.inject + 1, dg_err(ret));
}

static void case_iov(void)
{
	struct iovec tx[3], rx[2];
	void *txd[3] = { g.tx.desc, g.tx.desc, g.tx.desc };
	void *rxd[2] = { g.rx.desc, g.rx.desc };
	struct fi_cq_data_entry comp;
	uint8_t *t = g.tx.ptr, *r = g.rx.ptr;
	size_t total = 100 + 300 + 17;
	ssize_t ret, bad;

	tx[0] = (struct iovec){ t, 100 };
	tx[1] = (struct iovec){ t + 200, 300 };
	tx[2] = (struct iovec){ t + 600, 17 };
	rx[0] = (struct iovec){ r, 250 };
	rx[1] = (struct iovec){ r + 300, g.mtu - 250 };
	ft_fill_iov(tx, 3, 77);
	ret = fi_recvv(g.b.ep, rx, rxd, 2, FI_ADDR_UNSPEC, &g.rxctx);
	if (!ret)
		ret = fi_sendv(g.a.ep, tx, txd, 3, g.b.addr, &g.txctx);
	if (ret) {
		ft_fail("sendv_recvv", "%s", dg_err(ret));
		return;
	}
	if (dg_wait("sendv_recvv", g.a.txcq, &g.txctx, FI_SEND, 0, NULL) ||
	    dg_wait("sendv_recvv", g.b.rxcq, &g.rxctx, FI_RECV, total, &comp))
		return;
	rx[1].iov_len = total - 250;
	bad = ft_verify_iov(rx, 2, 77);
	ft_check(bad < 0, "sendv_recvv", "byte %zd differs", bad);
}

static void case_cq_data(void)
{
	struct fi_cq_data_entry comp;
	ssize_t ret;

	if (dg_post_recv(g.mtu))
		return;
	ft_fill(g.tx.ptr, 32, 5);
	ret = fi_senddata(g.a.ep, g.tx.ptr, 32, g.tx.desc, DG_CQ_DATA,
			  g.b.addr, &g.txctx);
	if (ret) {
		ft_fail("senddata", "%s", dg_err(ret));
		return;
	}
	if (dg_wait("senddata", g.a.txcq, &g.txctx, FI_SEND, 0, NULL) ||
	    dg_wait("senddata", g.b.rxcq, &g.rxctx,
		    FI_RECV | FI_REMOTE_CQ_DATA, 32, &comp))
		return;
	ft_check(comp.data == DG_CQ_DATA && ft_verify(g.rx.ptr, 32, 5) < 0,
		 "senddata", "data 0x%llx", (unsigned long long)comp.data);
}

static void case_refused(void)
{
	struct iovec iov[2] = { { g.tx.ptr, g.mtu }, { g.tx.ptr, 1 } };
	void *desc[2] = { g.tx.desc, g.tx.desc };
	ssize_t ret;

	ret = fi_send(g.a.ep, g.tx.ptr, g.mtu + 1, g.tx.desc, g.b.addr,
		      &g.txctx);
	ft_check(ret == -FI_EINVAL, "send_too_large", "%s", dg_err(ret));
	ret = fi_sendv(g.a.ep, iov, desc, 2, g.b.addr, &g.txctx);
	ft_check(ret == -FI_EINVAL, "sendv_too_large", "%s", dg_err(ret));
	ret = fi_sendv(g.a.ep, NULL, desc, 1, g.b.addr, &g.txctx);
	ft_check(ret == -FI_EINVAL, "sendv_null_iov", "%s", dg_err(ret));
	ret = fi_recvv(g.b.ep, NULL, desc, 1, FI_ADDR_UNSPEC, &g.rxctx);
	ft_check(ret == -FI_EINVAL, "recvv_null_iov", "%s", dg_err(ret));
	ret = fi_send(g.a.ep, g.tx.ptr, 8, g.tx.desc, 99, &g.txctx);
	ft_check(ret == -FI_EINVAL, "send_unknown_addr", "%s", dg_err(ret));
	ret = fi_send(g.a.ep, g.tx.ptr, 8, g.tx.desc, FI_ADDR_UNSPEC,
		      &g.txctx);
	ft_check(ret == -FI_EINVAL, "send_addr_unspec", "%s", dg_err(ret));
	ft_check(ft_cq_empty(g.a.txcq), "refused_no_completion",
		 "a refused send left a completion");
}

static void case_trunc(void)
{
	struct fi_cq_data_entry comp;
	struct fi_cq_err_entry err;
	char text[256];
	ssize_t ret;
	int rc;

	memset(g.rx.ptr, 0, g.mtu);
	if (dg_post_recv(16))
		return;
	ft_fill(g.tx.ptr, 100, 9);
	ret = fi_send(g.a.ep, g.tx.ptr, 100, g.tx.desc, g.b.addr, &g.txctx);
	if (ret || dg_wait("recv_too_small", g.a.txcq, &g.txctx, FI_SEND, 0,
			   NULL)) {
		ft_fail("recv_too_small", "send: %s", dg_err(ret));
		return;
	}
	rc = ft_cq_wait(g.b.rxcq, &comp, &err, ft_opts.timeout_ms);
	if (rc != -FI_EAVAIL) {
		ft_fail("recv_too_small", "wait: %s, want an error entry",
			dg_err(rc));
		return;
	}
	snprintf(text, sizeof(text), "%s",
		 fi_cq_strerror(g.b.rxcq, err.prov_errno, err.err_data, NULL,
				0));
	ft_info("truncated: err %d, len %zu, olen %zu: %s", err.err, err.len,
		err.olen, text);
	ft_check(err.err == FI_ETRUNC && err.len == 16 && err.olen == 84 &&
		 err.op_context == &g.rxctx && (err.flags & FI_RECV) &&
		 ft_verify(g.rx.ptr, 16, 9) < 0 && text[0],
		 "recv_too_small", "err %d, len %zu, olen %zu", err.err,
		 err.len, err.olen);
	/* the QP survives: the next datagram arrives */
	dg_send_one("after_trunc", 200, false);
}

static void case_av_remove(void)
{
	fi_addr_t addr = g.b.addr;
	ssize_t ret;
	int rc;

	rc = fi_av_remove(g.av, &addr, 1, 0);
	ret = fi_send(g.a.ep, g.tx.ptr, 8, g.tx.desc, addr, &g.txctx);
	ft_check(!rc && ret == -FI_EINVAL, "av_remove", "remove %s, send %s",
		 dg_err(rc), dg_err(ret));
	rc = fi_av_insert(g.av, &g.b.name, 1, &g.b.addr, 0, NULL);
	if (rc != 1) {
		ft_fail("av_reinsert", "%s", dg_err(rc));
		return;
	}
	dg_send_one("av_reinsert", 300, false);
}

static void case_self(void)
{
	struct fi_cq_data_entry comp;
	ssize_t ret;

	ret = fi_recv(g.a.ep, g.rx.ptr + g.mtu, g.mtu, g.rx.desc,
		      FI_ADDR_UNSPEC, &g.rxctx);
	ft_fill(g.tx.ptr, 64, 11);
	if (!ret)
		ret = fi_send(g.a.ep, g.tx.ptr, 64, g.tx.desc, g.a.addr,
			      &g.txctx);
	if (ret) {
		ft_fail("send_self", "%s", dg_err(ret));
		return;
	}
	if (dg_wait("send_self", g.a.txcq, &g.txctx, FI_SEND, 0, NULL) ||
	    dg_wait("send_self", g.a.rxcq, &g.rxctx, FI_RECV, 64, &comp))
		return;
	ft_check(ft_verify((uint8_t *)g.rx.ptr + g.mtu, 64, 11) < 0,
		 "send_self", "data differs");
}

static void case_readfrom(void)
{
	struct fi_cq_data_entry comp;
	fi_addr_t src = 0;
	ssize_t ret;

	if (dg_post_recv(g.mtu))
		return;
	ret = fi_send(g.a.ep, g.tx.ptr, 8, g.tx.desc, g.b.addr, &g.txctx);
	if (ret || dg_wait("readfrom", g.a.txcq, &g.txctx, FI_SEND, 0,
			   NULL)) {
		ft_fail("readfrom", "send: %s", dg_err(ret));
		return;
	}
	for (int i = 0; i < 100000; i++) {
		ret = fi_cq_readfrom(g.b.rxcq, &comp, 1, &src);
		if (ret != -FI_EAGAIN)
			break;
	}
	/* FI_SOURCE: the sender's fi_addr_t, from its GID and QPN */
	ft_check(ret == 1 && src == g.a.addr, "readfrom_source",
		 "%s, src %llu (want %llu)", dg_err(ret),
		 (unsigned long long)src, (unsigned long long)g.a.addr);
}

/* fi_getinfo's node/service as a DGRAM address: an endpoint opened on a
 * service address answers SIDR, and an AV resolves the address to its
 * name (what upstream fabtests clients insert: fi->dest_addr). */
static void case_service(void)
{
	const char *svc = ft_opts.src_port ? ft_opts.src_port :
					      FT_DEFAULT_PORT;
	struct fi_info *ci = fi_dupinfo(g.fab.info);
	struct sockaddr_in6 *sin6 = ci ? ci->src_addr : NULL;
	struct sockaddr_in6 got, nobody;
	struct dg_ep c = { 0 };
	size_t len = sizeof(got);
	fi_addr_t addr;
	uint64_t t0;
	int ret;

	if (!sin6) {
		ft_fail("service_resolve", "no src_addr");
		fi_freeinfo(ci);
		return;
	}
	sin6->sin6_port = htons((uint16_t)atoi(svc));
	if (dg_ep_open_info(&c, ci, 0, false)) {
		ft_fail("service_resolve", "endpoint on port %s", svc);
		goto out;
	}
	t0 = ft_now_ms();
	ret = fi_av_insert(g.av, sin6, 1, &addr, 0, NULL);
	ft_info("service address [port %s] resolved in %llu ms", svc,
		(unsigned long long)(ft_now_ms() - t0));
	if (ret != 1 || fi_av_lookup(g.av, addr, &got, &len) ||
	    memcmp(&got, &c.name, sizeof(got))) {
		ft_fail("service_resolve", "insert %s, qpn 0x%x (want 0x%x)",
			dg_err(ret), ntohl(got.sin6_flowinfo),
			ntohl(c.name.sin6_flowinfo));
		goto out;
	}
	ft_ok("service_resolve");
	ret = (int)fi_recv(c.ep, g.rx.ptr, g.mtu, g.rx.desc, FI_ADDR_UNSPEC,
			   &g.rxctx);
	ft_fill(g.tx.ptr, 100, 21);
	if (!ret)
		ret = (int)fi_send(g.a.ep, g.tx.ptr, 100, g.tx.desc, addr,
				   &g.txctx);
	if (!ret && !dg_wait("service_send", g.a.txcq, &g.txctx, FI_SEND, 0,
			     NULL) &&
	    !dg_wait("service_send", c.rxcq, &g.rxctx, FI_RECV, 100, NULL))
		ft_check(ft_verify(g.rx.ptr, 100, 21) < 0, "service_send",
			 "data differs");
	else if (ret)
		ft_fail("service_send", "%s", dg_err(ret));
	nobody = *sin6;
	nobody.sin6_port = htons((uint16_t)(atoi(svc) + 1));
	ret = fi_av_insert(g.av, &nobody, 1, &addr, 0, NULL);
	ft_check(ret == 0 && addr == FI_ADDR_NOTAVAIL, "service_nobody",
		 "insert %s", dg_err(ret));
out:
	dg_ep_close(&c);
	fi_freeinfo(ci);
}

static void case_counters(void)
{
	uint64_t sent = fi_cntr_read(g.a.cntr);
	uint64_t got = fi_cntr_read(g.b.cntr);
	uint64_t errs = fi_cntr_readerr(g.b.cntr);

	ft_info("send counter %llu, recv counter %llu (errors %llu)",
		(unsigned long long)sent, (unsigned long long)got,
		(unsigned long long)errs);
	ft_check(sent >= 15 && got >= 14 && errs == 1, "counters",
		 "send %llu, recv %llu, recv errors %llu",
		 (unsigned long long)sent, (unsigned long long)got,
		 (unsigned long long)errs);
}

static void case_enosys(void)
{
	ssize_t w, t;
	int s;

	w = fi_write(g.a.ep, g.tx.ptr, 8, g.tx.desc, g.b.addr, 0, 0, NULL);
	t = fi_tsend(g.a.ep, g.tx.ptr, 8, g.tx.desc, g.b.addr, 1, NULL);
	s = fi_setname(&g.a.ep->fid, &g.a.name, sizeof(g.a.name));
	ft_check(w == -FI_ENOSYS && t == -FI_ENOSYS && s == -FI_ENOSYS,
		 "enosys", "write %s, tsend %zd, setname %d", dg_err(w), t, s);
}

static void case_enable_rules(void)
{
	struct fid_ep *ep;
	struct fid_cq *cq;
	int ret;

	ret = fi_endpoint(g.fab.domain, g.fab.info, &ep, NULL);
	if (ret) {
		ft_fail("enable_without_av", "fi_endpoint: %s", dg_err(ret));
		return;
	}
	ret = ft_cq_open(g.fab.domain, 16, FI_WAIT_NONE, &cq);
	if (!ret)
		ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(ep);
	ft_check(ret == -FI_ENOAV, "enable_without_av", "%s", dg_err(ret));
	ft_close_fid(&ep->fid, "ep");
	ft_close_fid(&cq->fid, "cq");
}

static void case_close_busy(void)
{
	int ret = fi_close(&g.av->fid);

	ft_check(ret == -FI_EBUSY, "close_bound_av", "%s", dg_err(ret));
	ret = fi_close(&g.b.rxcq->fid);
	ft_check(ret == -FI_EBUSY, "close_bound_cq", "%s", dg_err(ret));
}

/* FI_MSG_PREFIX: every send and receive buffer starts with
 * msg_prefix_size bytes of the provider's; a datagram's payload lands
 * after it and the completion's length counts it. */
static void case_prefix(void)
{
	struct fi_info *hints = ft_hints_alloc(FI_MSG | FI_SOURCE), *info;
	struct dg_ep p = { 0 }, q = { 0 };
	struct fi_cq_data_entry comp;
	uint8_t *tx = g.tx.ptr, *rx = g.rx.ptr;
	size_t pre = 0, sizes[2] = { 1, g.mtu };
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	ssize_t ret;
	int i;

	hints->ep_attr->type = FI_EP_DGRAM;
	hints->mode |= FI_MSG_PREFIX;
	ret = ft_getinfo(hints, &info);
	fi_freeinfo(hints);
	if (!ft_check(!ret && (info->tx_attr->mode & FI_MSG_PREFIX) &&
		      (info->rx_attr->mode & FI_MSG_PREFIX) &&
		      info->ep_attr->msg_prefix_size >= 40 &&
		      !(info->ep_attr->msg_prefix_size % 8), "prefix_getinfo",
		      "%s", dg_err(ret)))
		return;
	pre = info->ep_attr->msg_prefix_size;
	if (info->src_addr && info->addr_format == FI_SOCKADDR_IN6)
		((struct sockaddr_in6 *)info->src_addr)->sin6_port = 0;
	ret = dg_ep_open_info(&p, info, 0, true);
	if (!ret)
		ret = dg_ep_open_info(&q, info, 0, true);
	fi_freeinfo(info);
	if (!ft_check(!ret, "prefix_setup", "%s", dg_err(ret)))
		goto out;
	for (i = 0; i < 2; i++) {
		ret = fi_recv(q.ep, rx, pre + g.mtu, g.rx.desc, FI_ADDR_UNSPEC,
			      &g.rxctx);
		ft_fill(tx + pre, sizes[i], 300 + i);
		if (!ret)
			ret = fi_send(p.ep, tx, pre + sizes[i], g.tx.desc, q.addr,
				      &g.txctx);
		if (ret || dg_wait("prefix_send", p.txcq, &g.txctx, FI_SEND, 0,
				   NULL)) {
			ft_fail("prefix_send", "%zu bytes: %s", sizes[i],
				dg_err(ret));
			goto out;
		}
		ret = ft_cq_expect(q.rxcq, &g.rxctx, &comp,
				   ft_opts.timeout_ms);
		ft_check(!ret && comp.len == pre + sizes[i] &&
			 ft_verify(rx + pre, sizes[i], 300 + i) < 0,
			 i ? "prefix_mtu" : "prefix_one_byte",
			 "%s, len %zu (want %zu)", dg_err(ret), comp.len,
			 pre + sizes[i]);
	}
	/* FI_SOURCE read from the prefix, and an inject */
	ret = fi_recv(q.ep, rx, pre + g.mtu, g.rx.desc, FI_ADDR_UNSPEC,
		      &g.rxctx);
	ft_fill(tx + pre, 8, 310);
	if (!ret)
		ret = fi_inject(p.ep, tx, pre + 8, q.addr);
	for (i = 0; !ret && i < 1000000; i++) {
		(void)fi_cq_read(p.txcq, &comp, 1);
		ret = fi_cq_readfrom(q.rxcq, &comp, 1, &src);
		if (ret == 1)
			break;
		ret = ret == -FI_EAGAIN ? 0 : ret;
	}
	ft_check(ret == 1 && src == p.addr && comp.len == pre + 8 &&
		 ft_verify(rx + pre, 8, 310) < 0, "prefix_inject_source",
		 "%s, src %llu (want %llu)", dg_err(ret),
		 (unsigned long long)src, (unsigned long long)p.addr);
	/* buffers without room for the prefix */
	ret = fi_send(p.ep, tx, pre - 8, g.tx.desc, q.addr, &g.txctx);
	ft_check(ret == -FI_EINVAL, "prefix_send_short", "%s", dg_err(ret));
	ret = fi_recv(q.ep, rx, pre - 8, g.rx.desc, FI_ADDR_UNSPEC, &g.rxctx);
	ft_check(ret == -FI_EINVAL, "prefix_recv_short", "%s", dg_err(ret));
out:
	dg_ep_close(&p);
	dg_ep_close(&q);
}

/* Datagrams sent before the receiver posted any receive are kept for
 * its first receives (FI_RIVET_DGRAM_EARLY_RECVS, default 16), in order,
 * one of them truncated; receives beyond those go to the QP. */
#define DG_EARLY_SENT 5
#define DG_EARLY_RECVS 20
#define DG_EARLY_LEN 64

/* Completions of the first n receives on q (by context), errors too;
 * the number seen. */
static int dg_early_collect(struct dg_ep *q, struct fi_context *ctx, int n,
			    struct fi_cq_err_entry *got, fi_addr_t *src)
{
	struct fi_cq_data_entry comp;
	struct fi_cq_err_entry err;
	uint64_t end = ft_now_ms() + (uint64_t)ft_opts.timeout_ms;
	fi_addr_t from;
	int seen = 0, i;
	ssize_t ret;

	while (seen < n && ft_now_ms() < end) {
		ret = fi_cq_readfrom(q->rxcq, &comp, 1, &from);
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(q->rxcq, &err, 0) != 1)
				return seen;
			comp.op_context = err.op_context;
			from = FI_ADDR_NOTAVAIL;
		} else if (ret != 1) {
			continue;
		} else {
			memset(&err, 0, sizeof(err));
			err.len = comp.len;
			err.flags = comp.flags;
		}
		for (i = 0; i < n && comp.op_context != &ctx[i]; i++)
			;
		if (i == n || got[i].flags)
			return seen;	/* unknown or twice */
		got[i] = err;
		got[i].flags |= FI_RECV;
		src[i] = from;
		seen++;
	}
	return seen;
}

static void case_early(void)
{
	struct fi_context ctx[DG_EARLY_RECVS], txctx;
	struct fi_cq_err_entry got[DG_EARLY_RECVS];
	fi_addr_t src[DG_EARLY_RECVS];
	struct dg_ep p = { 0 }, q = { 0 };
	uint8_t *rx = g.rx.ptr, *tx = g.tx.ptr;
	struct iovec iov[2];
	void *desc[2] = { g.rx.desc, g.rx.desc };
	int i, seen, bad = -1;
	ssize_t ret;

	memset(got, 0, sizeof(got));
	ret = dg_ep_open_info(&p, g.fab.info, 0, true);
	if (!ret)
		ret = dg_ep_open_info(&q, g.fab.info, 0, true);
	for (i = 0; !ret && i < DG_EARLY_RECVS; i++) {
		if (i == DG_EARLY_SENT) {	/* the rest after the posts */
			usleep(300 * 1000);	/* the early ones landed */
			break;
		}
		ft_fill(tx, DG_EARLY_LEN, 400 + i);
		ret = fi_send(p.ep, tx, DG_EARLY_LEN, g.tx.desc, q.addr,
			      &txctx);
		if (!ret && dg_wait("early_send", p.txcq, &txctx, FI_SEND, 0,
				    NULL))
			ret = -FI_EIO;
	}
	memset(rx, 0, DG_EARLY_RECVS * DG_EARLY_LEN);
	for (i = 0; !ret && i < DG_EARLY_RECVS; i++) {
		iov[0].iov_base = rx + i * DG_EARLY_LEN;
		iov[0].iov_len = i == 2 ? 16 : i == 1 ? 10 : DG_EARLY_LEN;
		iov[1].iov_base = rx + i * DG_EARLY_LEN + 10;
		iov[1].iov_len = DG_EARLY_LEN - 10;
		ret = fi_recvv(q.ep, iov, desc, i == 1 ? 2 : 1,
			       FI_ADDR_UNSPEC, &ctx[i]);
	}
	if (!ft_check(!ret, "early_setup", "%s", dg_err(ret)))
		goto out;
	seen = dg_early_collect(&q, ctx, DG_EARLY_SENT, got, src);
	ft_check(seen == DG_EARLY_SENT, "early_kept", "%d of %d datagrams "
		 "sent before any receive arrived", seen, DG_EARLY_SENT);
	for (i = DG_EARLY_SENT; i < DG_EARLY_RECVS; i++) {
		ft_fill(tx, DG_EARLY_LEN, 400 + i);
		ret = fi_send(p.ep, tx, DG_EARLY_LEN, g.tx.desc, q.addr,
			      &txctx);
		if (ret || dg_wait("early_send", p.txcq, &txctx, FI_SEND, 0,
				   NULL))
			break;
	}
	seen += dg_early_collect(&q, ctx + DG_EARLY_SENT,
				 DG_EARLY_RECVS - DG_EARLY_SENT,
				 got + DG_EARLY_SENT, src + DG_EARLY_SENT);
	for (i = 0; i < DG_EARLY_RECVS && bad < 0; i++) {
		bool trunc = i == 2;

		if (!got[i].flags ||
		    (trunc ? got[i].err != FI_ETRUNC || got[i].len != 16 ||
			     got[i].olen != DG_EARLY_LEN - 16 :
			     got[i].err || got[i].len != DG_EARLY_LEN ||
			     src[i] != p.addr) ||
		    ft_verify(rx + i * DG_EARLY_LEN, trunc ? 16 : DG_EARLY_LEN,
			      400 + i) >= 0)
			bad = i;
	}
	ft_check(seen == DG_EARLY_RECVS && bad < 0, "early_in_order",
		 "%d of %d received; receive %d: err %d len %zu olen %zu",
		 seen, DG_EARLY_RECVS, bad, bad < 0 ? 0 : got[bad].err,
		 bad < 0 ? 0 : got[bad].len, bad < 0 ? 0 : got[bad].olen);
out:
	dg_ep_close(&p);
	dg_ep_close(&q);
}

int main(int argc, char **argv)
{
	ft_parse_opts(argc, argv, "FI_EP_DGRAM conformance: two endpoints "
		      "in one process.", false);
	if (dg_setup()) {
		ft_fail("setup", "no DGRAM endpoints");
		return ft_summary();
	}
	case_names();
	case_sizes();
	case_inject();
	case_iov();
	case_cq_data();
	case_refused();
	case_trunc();
	case_av_remove();
	case_self();
	case_readfrom();
	case_early();
	case_prefix();
	case_service();
	case_counters();
	case_enosys();
	case_enable_rules();
	case_close_busy();
	dg_ep_close(&g.a);
	dg_ep_close(&g.b);
	ft_close_fid(&g.av->fid, "av");
	ft_buf_free(&g.tx);
	ft_buf_free(&g.rx);
	ft_fab_close(&g.fab);
	return ft_summary();
}
