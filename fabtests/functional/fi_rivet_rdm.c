// SPDX-License-Identifier: MIT
/* RDM conformance (server/client): message and tagged sizes, ping-pong,
 * matching, ordering, unexpected storms, peek/claim/discard, cancel, multi-
 * receive buffers, FI_SOURCE, CQ data, inject, truncation, bad arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fi_rivet_rdm.h"

struct rdm_state g_rdm;

/* ---- posting and checking --------------------------------------------- */

int rdm_send(const char *name, int e, bool tagged, void *buf,
		    size_t len, uint64_t tag, void *ctx)
{
	struct fid_ep *ep = g_rdm.ep[e].ep;
	ssize_t ret;

	if (tagged)
		ret = FT_RDM_POST(fi_tsend(ep, buf, len, g_rdm.tx.desc,
					   g_rdm.dest[e], tag, ctx));
	else
		ret = FT_RDM_POST(fi_send(ep, buf, len, g_rdm.tx.desc,
					  g_rdm.dest[e], ctx));
	if (ret)
		ft_fail(name, "%s(%zu): %s", tagged ? "fi_tsend" : "fi_send",
			len, fi_strerror((int)-ret));
	return (int)ret;
}

int rdm_recv(const char *name, bool tagged, void *buf, size_t len,
		    uint64_t tag, uint64_t ignore, fi_addr_t src, void *ctx)
{
	struct fid_ep *ep = g_rdm.ep[0].ep;
	void *desc = g_rdm.rx.desc;
	ssize_t ret;

	if (tagged)
		ret = FT_RDM_POST(fi_trecv(ep, buf, len, desc, src, tag,
					   ignore, ctx));
	else
		ret = FT_RDM_POST(fi_recv(ep, buf, len, desc, src, ctx));
	if (ret)
		ft_fail(name, "%s(%zu): %s", tagged ? "fi_trecv" : "fi_recv",
			len, fi_strerror((int)-ret));
	return (int)ret;
}

/* Wait for ctx on endpoint e; -1 (FAIL printed) unless it succeeded. */
int rdm_wait_ok(const char *name, int e, void *ctx,
		       struct ft_comp *comp, size_t len)
{
	struct ft_comp lcomp;
	int ret;

	comp = comp ? comp : &lcomp;
	ret = ft_rdm_wait(g_rdm.ep[e].cq, ctx, comp, ft_rdm_timeout(len));
	if (ret) {
		ft_fail(name, "no completion: %s", fi_strerror(-ret));
		return -1;
	}
	if (comp->err) {
		ft_fail(name, "error completion: %s", ft_comp_str(comp));
		return -1;
	}
	return 0;
}

/* Length, flags, tag, source and payload of a receive completion. */
int rdm_check_recv(const char *name, const struct ft_comp *comp,
			  bool tagged, size_t len, uint64_t tag, fi_addr_t src,
			  const void *buf, uint32_t seed)
{
	uint64_t want = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	ssize_t bad;

	if ((comp->flags & want) != want || comp->len != len) {
		ft_fail(name, "flags 0x%llx (want 0x%llx), len %zu (want %zu)",
			(unsigned long long)comp->flags,
			(unsigned long long)want, comp->len, len);
		return -1;
	}
	if (tagged && comp->tag != tag) {
		ft_fail(name, "tag 0x%llx, want 0x%llx",
			(unsigned long long)comp->tag, (unsigned long long)tag);
		return -1;
	}
	if (src != FI_ADDR_UNSPEC && comp->src != src) {
		ft_fail(name, "FI_SOURCE gave fi_addr %llu, want %llu (data "
			"%s)", (unsigned long long)comp->src,
			(unsigned long long)src,
			ft_verify(buf, len, seed) < 0 ? "right" : "wrong");
		return -1;
	}
	bad = ft_verify(buf, len, seed);
	if (bad >= 0)
		ft_fail(name, "data corrupt at byte %zd of %zu", bad, len);
	return bad >= 0 ? -1 : 0;
}

int rdm_wait_recv(const char *name, void *ctx, bool tagged,
			 size_t len, uint64_t tag, const void *buf,
			 uint32_t seed)
{
	struct ft_comp comp;

	if (rdm_wait_ok(name, 0, ctx, &comp, len))
		return -1;
	return rdm_check_recv(name, &comp, tagged, len, tag, g_rdm.peer[0], buf,
			      seed);
}

int rdm_sync(void)
{
	int ret = ft_oob_sync();

	g_rdm.nsync++;
	if (ret)
		ft_fail("oob_sync", "%s", fi_strerror(-ret));
	return ret;
}

/* ---- sizes and ping-pong ---------------------------------------------- */

/* The client sends len bytes, the server checks them and answers with
 * another payload of the same length, which the client checks. */
static int rdm_round(const char *name, bool tagged, size_t len, uint64_t tag,
		     uint32_t seed)
{
	void *ctx_r = &g_rdm.rxctx[0], *ctx_s = &g_rdm.txctx[0];
	bool srv = ft_is_server();

	if (rdm_recv(name, tagged, g_rdm.rx.ptr, len, tag, 0, FI_ADDR_UNSPEC,
		     ctx_r))
		return -1;
	if (srv && rdm_wait_recv(name, ctx_r, tagged, len, tag, g_rdm.rx.ptr,
				 seed))
		return -1;
	ft_fill(g_rdm.tx.ptr, len, srv ? seed + 1 : seed);
	if (rdm_send(name, 0, tagged, g_rdm.tx.ptr, len, tag, ctx_s) ||
	    rdm_wait_ok(name, 0, ctx_s, NULL, len))
		return -1;
	if (!srv && rdm_wait_recv(name, ctx_r, tagged, len, tag, g_rdm.rx.ptr,
				  seed + 1))
		return -1;
	return 0;
}

static void rdm_sizes(bool tagged, const char *name)
{
	size_t sizes[RDM_MAX_SIZES], n, i;
	char what[64];

	n = ft_rdm_size_list(g_rdm.max, sizes, RDM_MAX_SIZES);
	for (i = 0; i < n; i++) {
		snprintf(what, sizeof(what), "%s[%zu]", name, sizes[i]);
		if (rdm_round(what, tagged, sizes[i],
			      RDM_TAG(T_SIZES, sizes[i]), (uint32_t)i * 2))
			return;
	}
	ft_ok(name);
}

static void rdm_sizes_msg(void)
{
	rdm_sizes(false, "rdm_sizes_msg");
}

static void rdm_sizes_tagged(void)
{
	rdm_sizes(true, "rdm_sizes_tagged");
}

/* -I rounds per size, fewer above 1 MiB to bound the run time. */
static void rdm_pingpong(void)
{
	size_t sizes[RDM_MAX_SIZES], n, i;
	uint64_t t0;
	int it, iters;
	char what[64];

	n = ft_rdm_size_list(g_rdm.max, sizes, RDM_MAX_SIZES);
	for (i = 0; i < n; i++) {
		iters = ft_opts.iters;
		if (sizes[i] > (1UL << 20))
			iters = (int)(iters * (1UL << 20) / sizes[i]) + 1;
		snprintf(what, sizeof(what), "rdm_pingpong[%zu]", sizes[i]);
		t0 = ft_now_ms();
		for (it = 0; it < iters; it++)
			if (rdm_round(what, true, sizes[i],
				      RDM_TAG(T_PINGPONG, it), it * 2 + 100))
				return;
		if (ft_opts.verbose)
			ft_info("%s: %d rounds, %.1f ms per round", what,
				iters, (double)(ft_now_ms() - t0) / iters);
	}
	ft_ok("rdm_pingpong");
}

/* ---- matching --------------------------------------------------------- */

/* A receive with an ignore mask matches only what it should, and reports
 * the sender's full tag, both for posted and for unexpected messages. */
static void rdm_ignore_server(void)
{
	const char *name = "rdm_tag_ignore";
	struct ft_comp comp;
	void *buf = g_rdm.rx.ptr;

	if (rdm_recv(name, true, buf, 64, RDM_TAG(T_IGNORE, 0x550000), 0xffff,
		     FI_ADDR_UNSPEC, &g_rdm.rxctx[0]) || rdm_sync())
		return;
	/* the client sent 0x9999, then 0x12345678abcd, then 0x55abcd */
	if (rdm_wait_ok(name, 0, &g_rdm.rxctx[0], &comp, 64) ||
	    rdm_check_recv(name, &comp, true, 64, RDM_TAG(T_IGNORE, 0x55abcd),
			   g_rdm.peer[0], buf, 3))
		return;
	if (rdm_recv(name, true, buf, 64, RDM_TAG(T_IGNORE, 0x12345678000),
		     0xfff, FI_ADDR_UNSPEC, &g_rdm.rxctx[0]) ||
	    rdm_wait_recv(name, &g_rdm.rxctx[0], true, 64,
			  RDM_TAG(T_IGNORE, 0x12345678abc), buf, 2))
		return;
	if (rdm_recv(name, true, buf, 64, RDM_TAG(T_IGNORE, 0x9999), 0,
		     FI_ADDR_UNSPEC, &g_rdm.rxctx[0]) ||
	    rdm_wait_recv(name, &g_rdm.rxctx[0], true, 64,
			  RDM_TAG(T_IGNORE, 0x9999), buf, 1))
		return;
	ft_ok(name);
}

static void rdm_ignore_client(void)
{
	static const uint64_t tags[] = { 0x9999, 0x12345678abc, 0x55abcd };
	const char *name = "rdm_tag_ignore";
	uint8_t *buf = g_rdm.tx.ptr;
	int i;

	if (rdm_sync())
		return;
	for (i = 0; i < 3; i++) {
		ft_fill(buf + i * 64, 64, i + 1);
		if (rdm_send(name, 0, true, buf + i * 64, 64,
			     RDM_TAG(T_IGNORE, tags[i]), &g_rdm.txctx[i]))
			return;
	}
	for (i = 0; i < 3; i++)
		if (rdm_wait_ok(name, 0, &g_rdm.txctx[i], NULL, 64))
			return;
	ft_ok(name);
}

/* Two receives for one tag, the first directed at the client's first
 * endpoint, the second for FI_ADDR_UNSPEC; both client endpoints send.
 * Whatever the arrival order, the directed one must get the first
 * endpoint's message. Once with the receives posted first, once with
 * the messages sent first. */
static int rdm_directed_round(const char *name, bool posted, uint32_t seed)
{
	uint64_t tag = RDM_TAG(T_DIRECTED, 1);
	uint8_t *buf = g_rdm.rx.ptr;
	struct ft_comp comp;

	if (!posted && rdm_sync())
		return -1;
	if (rdm_recv(name, true, buf, 256, tag, 0, g_rdm.peer[0],
		     &g_rdm.rxctx[0]) ||
	    rdm_recv(name, true, buf + 256, 256, tag, 0, FI_ADDR_UNSPEC,
		     &g_rdm.rxctx[1]))
		return -1;
	if (posted && rdm_sync())
		return -1;
	if (rdm_wait_ok(name, 0, &g_rdm.rxctx[0], &comp, 256) ||
	    rdm_check_recv(name, &comp, true, 256, tag, g_rdm.peer[0], buf,
			   seed))
		return -1;
	if (rdm_wait_ok(name, 0, &g_rdm.rxctx[1], &comp, 256) ||
	    rdm_check_recv(name, &comp, true, 256, tag, g_rdm.peer[1],
			   buf + 256, seed + 1))
		return -1;
	return posted ? rdm_sync() : 0;
}

static void rdm_directed_server(void)
{
	if (!rdm_directed_round("rdm_directed_recv", true, 10) &&
	    !rdm_directed_round("rdm_directed_recv_unexpected", false, 20)) {
		ft_ok("rdm_directed_recv");
		ft_ok("rdm_cq_readfrom_source");
	}
}

static int rdm_directed_send(const char *name, bool posted, uint32_t seed)
{
	uint64_t tag = RDM_TAG(T_DIRECTED, 1);
	uint8_t *buf = g_rdm.tx.ptr;

	if (posted && rdm_sync())
		return -1;
	ft_fill(buf, 256, seed);
	ft_fill(buf + 256, 256, seed + 1);
	if (rdm_send(name, 1, true, buf + 256, 256, tag, &g_rdm.txctx[1]) ||
	    rdm_send(name, 0, true, buf, 256, tag, &g_rdm.txctx[0]) ||
	    rdm_wait_ok(name, 1, &g_rdm.txctx[1], NULL, 256) ||
	    rdm_wait_ok(name, 0, &g_rdm.txctx[0], NULL, 256))
		return -1;
	return rdm_sync();
}

static void rdm_directed_client(void)
{
	if (!rdm_directed_send("rdm_directed_recv", true, 10) &&
	    !rdm_directed_send("rdm_directed_recv_unexpected", false, 20))
		ft_ok("rdm_directed_send");
}

static bool g_tagdir;	/* -G: FI_TAGGED_DIRECTED_RECV, not FI_DIRECTED_RECV */

/* An untagged receive that names a source, posted before either client
 * endpoint sends: with FI_DIRECTED_RECV it waits for the first endpoint's
 * message; with -G (FI_TAGGED_DIRECTED_RECV, API 2.0: only tagged
 * receives name a source) it takes the second endpoint's, which comes
 * first.  A receive for anyone then gets the other message. */
static void rdm_dirmsg_server(void)
{
	const char *name = "rdm_directed_msg";
	uint8_t *buf = g_rdm.rx.ptr;
	int first = g_tagdir ? 1 : 0;	/* the endpoint the first one gets */
	struct ft_comp comp;

	if (rdm_recv(name, false, buf, 256, 0, 0, g_rdm.peer[0],
		     &g_rdm.rxctx[0]) ||
	    rdm_sync() || rdm_sync() || rdm_sync() ||
	    rdm_recv(name, false, buf + 256, 256, 0, 0, FI_ADDR_UNSPEC,
		     &g_rdm.rxctx[1]))
		return;
	if (rdm_wait_ok(name, 0, &g_rdm.rxctx[0], &comp, 256) ||
	    rdm_check_recv(name, &comp, false, 256, 0, g_rdm.peer[first], buf,
			   30 + first) ||
	    rdm_wait_ok(name, 0, &g_rdm.rxctx[1], &comp, 256) ||
	    rdm_check_recv(name, &comp, false, 256, 0, g_rdm.peer[!first],
			   buf + 256, 30 + !first))
		return;
	ft_ok(name);
}

/* The second endpoint's message, sent and complete, then the first's. */
static void rdm_dirmsg_client(void)
{
	const char *name = "rdm_directed_msg";
	uint8_t *buf = g_rdm.tx.ptr;

	ft_fill(buf, 256, 30);
	ft_fill(buf + 256, 256, 31);
	if (rdm_sync() ||
	    rdm_send(name, 1, false, buf + 256, 256, 0, &g_rdm.txctx[1]) ||
	    rdm_wait_ok(name, 1, &g_rdm.txctx[1], NULL, 256) || rdm_sync() ||
	    rdm_send(name, 0, false, buf, 256, 0, &g_rdm.txctx[0]) ||
	    rdm_wait_ok(name, 0, &g_rdm.txctx[0], NULL, 256) || rdm_sync())
		return;
	ft_ok("rdm_directed_msg_send");
}

/* ---- CQ data, inject, delivery complete ------------------------------- */

static const size_t g_cqdata_len[] = { 64, 64, 1 << 20 };

/* The i-th CQ data value, cut to the domain's cq_data_size. */
static uint64_t rdm_cqdata(int i)
{
	size_t size = g_rdm.info->domain_attr->cq_data_size;
	uint64_t mask = size >= 8 ? ~0ULL : (1ULL << (8 * size)) - 1;

	return (RDM_CQ_DATA + i) & mask;
}

static void rdm_cqdata_server(void)
{
	const char *name = "rdm_remote_cq_data";
	uint64_t tag = RDM_TAG(T_CQDATA, 0);
	uint8_t *buf = g_rdm.rx.ptr;
	struct ft_comp comp;
	size_t len;
	int i;

	for (i = 0; i < 3; i++) {
		len = g_cqdata_len[i];
		if (rdm_recv(name, i > 0, buf, len, tag, 0, FI_ADDR_UNSPEC,
			     &g_rdm.rxctx[0]) ||
		    rdm_wait_ok(name, 0, &g_rdm.rxctx[0], &comp, len) ||
		    rdm_check_recv(name, &comp, i > 0, len, tag, g_rdm.peer[0],
				   buf, 50 + i))
			return;
		if (!(comp.flags & FI_REMOTE_CQ_DATA) ||
		    comp.data != rdm_cqdata(i)) {
			ft_fail(name, "message %d: flags 0x%llx, data 0x%llx",
				i, (unsigned long long)comp.flags,
				(unsigned long long)comp.data);
			return;
		}
	}
	ft_ok(name);
}

static void rdm_cqdata_client(void)
{
	const char *name = "rdm_remote_cq_data";
	uint64_t tag = RDM_TAG(T_CQDATA, 0), data;
	struct fid_ep *ep = g_rdm.ep[0].ep;
	void *buf = g_rdm.tx.ptr, *ctx = &g_rdm.txctx[0];
	size_t len;
	ssize_t ret;
	int i;

	if (!g_rdm.info->domain_attr->cq_data_size) {
		ft_fail(name, "domain cq_data_size is 0");
		return;
	}
	for (i = 0; i < 3; i++) {
		len = g_cqdata_len[i];
		data = rdm_cqdata(i);
		ft_fill(buf, len, 50 + i);
		if (i == 0)
			ret = FT_RDM_POST(fi_senddata(ep, buf, len,
				g_rdm.tx.desc, data, g_rdm.peer[0], ctx));
		else
			ret = FT_RDM_POST(fi_tsenddata(ep, buf, len,
				g_rdm.tx.desc, data, g_rdm.peer[0], tag, ctx));
		if (ret) {
			ft_fail(name, "senddata: %s", fi_strerror((int)-ret));
			return;
		}
		if (rdm_wait_ok(name, 0, ctx, NULL, len))
			return;
	}
	ft_ok("rdm_senddata");
}

static size_t rdm_inject_len(int i)
{
	size_t max = g_rdm.info->tx_attr->inject_size;

	return i == 0 ? 1 : (i == 1 ? (max < 64 ? max : 64) : max);
}

static void rdm_inject_server(void)
{
	const char *name = "rdm_inject";
	uint64_t tag = RDM_TAG(T_INJECT, 0);
	struct ft_comp comp;
	size_t len;
	int i;

	for (i = 0; i < 3 && g_rdm.info->tx_attr->inject_size; i++) {
		len = rdm_inject_len(i);
		if (rdm_recv(name, i > 0, g_rdm.rx.ptr, len, tag, 0,
			     FI_ADDR_UNSPEC, &g_rdm.rxctx[0]) ||
		    rdm_wait_ok(name, 0, &g_rdm.rxctx[0], &comp, len) ||
		    rdm_check_recv(name, &comp, i > 0, len, tag, g_rdm.peer[0],
				   g_rdm.rx.ptr, 60 + i))
			return;
	}
	if (g_rdm.info->tx_attr->inject_size)
		ft_ok(name);
}

/* fi_inject then fi_tinject (1 byte, 64, inject_size); each buffer is
 * overwritten as soon as the call returns, and no completion may come. */
static void rdm_inject_client(void)
{
	const char *name = "rdm_inject";
	uint64_t tag = RDM_TAG(T_INJECT, 0);
	struct fid_ep *ep = g_rdm.ep[0].ep;
	void *buf = g_rdm.tx.ptr;
	struct ft_comp comp;
	size_t len;
	ssize_t ret;
	int i;

	if (!g_rdm.info->tx_attr->inject_size) {
		ft_fail(name, "tx_attr inject_size is 0");
		return;
	}
	for (i = 0; i < 3; i++) {
		len = rdm_inject_len(i);
		ft_fill(buf, len, 60 + i);
		if (i == 0)
			ret = FT_RDM_POST(fi_inject(ep, buf, len,
						    g_rdm.peer[0]));
		else
			ret = FT_RDM_POST(fi_tinject(ep, buf, len,
						     g_rdm.peer[0], tag));
		memset(buf, 0xee, len);
		if (ret) {
			ft_fail(name, "inject(%zu): %s", len,
				fi_strerror((int)-ret));
			return;
		}
	}
	ret = ft_rdm_wait(g_rdm.ep[0].cq, NULL, &comp, 200);
	ft_check(ret == -FI_ETIMEDOUT, "rdm_inject_no_completion",
		 "inject generated a completion (flags 0x%llx, %s)",
		 (unsigned long long)comp.flags, ft_comp_str(&comp));
}

/* Sends with the FI_DELIVERY_COMPLETE op flag, small and large. */
static void rdm_dc(void)
{
	const char *name = "rdm_delivery_complete";
	uint64_t tag = RDM_TAG(T_DC, 0);
	struct iovec iov;
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1,
				     .addr = g_rdm.peer[0], .tag = tag };
	size_t lens[] = { 64, 1 << 20 };
	void *rctx = &g_rdm.rxctx[0];
	ssize_t ret;
	int i;

	for (i = 0; i < 2; i++) {
		if (ft_is_server()) {
			if (rdm_recv(name, true, g_rdm.rx.ptr, lens[i], tag, 0,
				     FI_ADDR_UNSPEC, rctx) ||
			    rdm_wait_recv(name, rctx, true, lens[i], tag,
					  g_rdm.rx.ptr, 70 + i))
				return;
			continue;
		}
		ft_fill(g_rdm.tx.ptr, lens[i], 70 + i);
		iov = (struct iovec){ g_rdm.tx.ptr, lens[i] };
		msg.desc = &g_rdm.tx.desc;
		msg.context = &g_rdm.txctx[0];
		ret = FT_RDM_POST(fi_tsendmsg(g_rdm.ep[0].ep, &msg,
					      FI_DELIVERY_COMPLETE));
		if (ret) {
			ft_fail(name, "fi_tsendmsg: %s",
				fi_strerror((int)-ret));
			return;
		}
		if (rdm_wait_ok(name, 0, &g_rdm.txctx[0], NULL, lens[i]))
			return;
	}
	ft_ok(name);
}

/* FI_FENCE on sends: a rendezvous send, a fenced small send (it may start
 * only once the first is done) and an unfenced one queued behind it, all
 * posted at once; each must arrive whole. */
static void rdm_fence(void)
{
	const char *name = "rdm_fence_send";
	size_t lens[] = { 1 << 20, 64, 64 }, off[] = { 0, 1 << 20, 2 << 20 };
	uint64_t flags[] = { 0, FI_FENCE, 0 };
	struct fi_msg_tagged msg = { .iov_count = 1, .addr = g_rdm.peer[0] };
	struct iovec iov;
	ssize_t ret;
	int i;

	if (!(g_rdm.info->caps & FI_FENCE) || g_rdm.buf_len < (3 << 20)) {
		ft_skip(name, "no FI_FENCE, or buffers too small");
		return;
	}
	for (i = 0; i < 3; i++) {
		void *rbuf = (uint8_t *)g_rdm.rx.ptr + off[i];
		void *tbuf = (uint8_t *)g_rdm.tx.ptr + off[i];

		if (ft_is_server()) {
			if (rdm_recv(name, true, rbuf, lens[i],
				     RDM_TAG(T_FENCE, i), 0, FI_ADDR_UNSPEC,
				     &g_rdm.rxctx[i]))
				return;
			continue;
		}
		ft_fill(tbuf, lens[i], 80 + i);
		iov = (struct iovec){ tbuf, lens[i] };
		msg.msg_iov = &iov;
		msg.desc = &g_rdm.tx.desc;
		msg.tag = RDM_TAG(T_FENCE, i);
		msg.context = &g_rdm.txctx[i];
		ret = FT_RDM_POST(fi_tsendmsg(g_rdm.ep[0].ep, &msg,
					      flags[i] | FI_COMPLETION));
		if (ret) {
			ft_fail(name, "fi_tsendmsg %d: %s", i,
				fi_strerror((int)-ret));
			return;
		}
	}
	for (i = 0; i < 3; i++) {
		if (ft_is_server() ?
		    rdm_wait_recv(name, &g_rdm.rxctx[i], true, lens[i],
				  RDM_TAG(T_FENCE, i),
				  (uint8_t *)g_rdm.rx.ptr + off[i], 80 + i) :
		    rdm_wait_ok(name, 0, &g_rdm.txctx[i], NULL, lens[i]))
			return;
	}
	ft_ok(name);
}

/* FI_FENCE behind injects: five short-path injects (unsignaled on the
 * wire but for every 16th), a fenced send and one more inject; the fenced
 * send must not wait for completions the injects never make, and all
 * seven arrive in order, whole. */
static void rdm_fence_inject(void)
{
	const char *name = "rdm_fence_after_inject";
	struct fi_msg_tagged msg = { .iov_count = 1, .addr = g_rdm.peer[0] };
	const size_t len = 8, n = 7, fenced = 5;
	struct iovec iov;
	uint8_t *buf;
	ssize_t ret;
	size_t i;

	if (!(g_rdm.info->caps & FI_FENCE)) {
		ft_skip(name, "no FI_FENCE");
		return;
	}
	for (i = 0; i < n; i++) {
		buf = (uint8_t *)(ft_is_server() ? g_rdm.rx.ptr :
			g_rdm.tx.ptr) + i * 64;
		if (ft_is_server()) {
			if (rdm_recv(name, true, buf, 64,
				     RDM_TAG(T_FENCE, 10 + i), 0,
				     FI_ADDR_UNSPEC, &g_rdm.rxctx[i]))
				return;
			continue;
		}
		ft_fill(buf, len, 90 + (uint32_t)i);
		if (i != fenced) {
			ret = FT_RDM_POST(fi_tinject(g_rdm.ep[0].ep, buf, len,
						     g_rdm.peer[0],
						     RDM_TAG(T_FENCE, 10 + i)));
		} else {
			iov = (struct iovec){ buf, len };
			msg.msg_iov = &iov;
			msg.desc = &g_rdm.tx.desc;
			msg.tag = RDM_TAG(T_FENCE, 10 + i);
			msg.context = &g_rdm.txctx[0];
			ret = FT_RDM_POST(fi_tsendmsg(g_rdm.ep[0].ep, &msg,
						      FI_FENCE |
						      FI_COMPLETION));
		}
		if (ret) {
			ft_fail(name, "send %zu: %s", i,
				fi_strerror((int)-ret));
			return;
		}
	}
	if (!ft_is_server()) {
		if (!rdm_wait_ok(name, 0, &g_rdm.txctx[0], NULL, len))
			ft_ok(name);
		return;
	}
	for (i = 0; i < n; i++)
		if (rdm_wait_recv(name, &g_rdm.rxctx[i], true, len,
				  RDM_TAG(T_FENCE, 10 + i),
				  (uint8_t *)g_rdm.rx.ptr + i * 64,
				  90 + (uint32_t)i))
			return;
	ft_ok(name);
}

/* FI_PROGRESS_AUTO: the server posts a receive for a rendezvous message
 * and then makes no fabric call for 3 s (its OOB waits stop progressing
 * its CQs); the client's send needs the server's RDMA read and FIN, so it
 * completes in that time only if the provider makes progress on its own. */
static void rdm_auto(void)
{
	const char *name = "rdm_auto_progress";
	uint64_t tag = RDM_TAG(T_AUTO, 0);
	struct ft_comp comp;
	int ret;

	if (g_rdm.info->domain_attr->data_progress != FI_PROGRESS_AUTO) {
		ft_skip(name, "data progress is %s",
			fi_tostr(&g_rdm.info->domain_attr->data_progress,
				 FI_TYPE_PROGRESS));
		return;
	}
	ft_oob_watch(NULL, NULL);
	if (ft_is_server()) {
		if (rdm_recv(name, true, g_rdm.rx.ptr, RDM_BIG, tag, 0,
			     FI_ADDR_UNSPEC, &g_rdm.rxctx[0]))
			goto out;
		if (rdm_sync())
			goto out;
		sleep(3);
		if (!rdm_sync())
			(void)rdm_wait_recv(name, &g_rdm.rxctx[0], true,
					    RDM_BIG, tag, g_rdm.rx.ptr, 80);
		goto out;
	}
	ft_fill(g_rdm.tx.ptr, RDM_BIG, 80);
	if (rdm_sync() ||
	    rdm_send(name, 0, true, g_rdm.tx.ptr, RDM_BIG, tag,
		     &g_rdm.txctx[0]))
		goto out;
	ret = ft_rdm_wait(g_rdm.ep[0].cq, &g_rdm.txctx[0], &comp, 2000);
	(void)ft_check(!ret && !comp.err, name, "the send did not complete "
		       "while the server made no calls: %s",
		       ret ? fi_strerror(-ret) : ft_comp_str(&comp));
	if (rdm_sync())
		goto out;
	if (ret)	/* the server polls now: let the send finish */
		(void)rdm_wait_ok(name, 0, &g_rdm.txctx[0], NULL, RDM_BIG);
out:
	ft_oob_watch(g_rdm.ep[0].cq, g_rdm.ep[1].cq);
}

/* ---- setup ------------------------------------------------------------ */

/* Server: learns both client endpoints; client: learns the server once
 * per endpoint (the server sends its name twice). */
static int rdm_exchange_names(void)
{
	uint8_t name[FT_RDM_NAME_MAX];
	bool srv = ft_is_server();
	char str[64];
	size_t len;
	int i, ret;

	for (i = 0; i < 2; i++) {
		len = sizeof(name);
		ret = ft_rdm_oob_swap(g_rdm.ep[srv ? 0 : i].name,
				      g_rdm.ep[srv ? 0 : i].namelen, name,
				      &len);
		if (!ret)
			ret = ft_rdm_av_insert(g_rdm.ep[srv ? 0 : i].av, name,
					       srv ? &g_rdm.peer[i] :
					       &g_rdm.dest[i]);
		if (ret)
			return ret;
		if (ft_opts.verbose)
			ft_info("peer name %d: %s", i,
				ft_addr_str(name, str, sizeof(str)));
	}
	if (srv)
		g_rdm.dest[0] = g_rdm.peer[0];
	else
		g_rdm.peer[0] = g_rdm.dest[0];
	return 0;
}

/* Each endpoint has its own AV (fi_rivet_rdm_multi shares one). */
static int rdm_open_eps(void)
{
	bool srv = ft_is_server();
	int ret;

	ret = ft_rdm_ep_open(&g_rdm.fab, NULL, !srv, RDM_MRECV_MIN,
			     &g_rdm.ep[0]);
	if (!ret && !srv)
		ret = ft_rdm_ep_open(&g_rdm.fab, NULL, true, 0, &g_rdm.ep[1]);
	ft_oob_watch(g_rdm.ep[0].cq, g_rdm.ep[1].cq);
	return ret;
}

static bool g_auto;	/* -A: ask for FI_PROGRESS_AUTO data progress */
static bool g_domain;	/* -D: ask for FI_THREAD_DOMAIN */

static void rdm_opt(int op, const char *arg)
{
	(void)arg;
	if (op == 'A')
		g_auto = true;
	else if (op == 'D')
		g_domain = true;
	else if (op == 'G')
		g_tagdir = true;
}

/* -G: directed receives for tagged messages only (API 2.0). */
static int rdm_hints_tagdir(struct fi_info *hints)
{
#if FI_MAJOR_VERSION >= 2
	hints->caps = (hints->caps & ~FI_DIRECTED_RECV) |
		      FI_TAGGED_DIRECTED_RECV;
	return 0;
#else
	(void)hints;
	return -FI_ENOSYS;	/* built on 1.x headers: no such bit */
#endif
}

static int rdm_setup(void)
{
	struct fi_info *hints = ft_rdm_hints(FT_RDM_CAPS, g_domain ?
					     FI_THREAD_DOMAIN :
					     FI_THREAD_UNSPEC);
	bool srv = ft_is_server();
	int ret;

	if (hints && g_auto)
		hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	if (hints && g_tagdir && rdm_hints_tagdir(hints)) {
		fi_freeinfo(hints);
		return ft_check(false, "rdm_setup", "-G needs libfabric 2.x "
				"headers (FI_TAGGED_DIRECTED_RECV)") ? 0 : -1;
	}
	if (hints)	/* where the provider has it: rdm_fence skips else */
		hints->caps |= FI_FENCE;
	ret = hints ? ft_rdm_fab_open(&g_rdm.fab, hints, false) : -FI_ENOMEM;
	if (ret == -FI_ENODATA) {
		hints->caps &= ~FI_FENCE;
		ret = ft_rdm_fab_open(&g_rdm.fab, hints, false);
	}
	fi_freeinfo(hints);
	g_rdm.info = g_rdm.fab.info;
	ret = ret ? ret : rdm_open_eps();
	if (!ret && srv)
		ret = ft_oob_listen();
	ret = ret ? ret : (srv ? ft_oob_accept() : ft_oob_connect());
	ret = ret ? ret : rdm_exchange_names();
	if (!ret) {
		g_rdm.max = ft_opts.all_sizes ? ft_opts.max_size :
			ft_opts.size;
		if (g_rdm.max > g_rdm.info->ep_attr->max_msg_size)
			g_rdm.max = g_rdm.info->ep_attr->max_msg_size;
		g_rdm.buf_len = g_rdm.max > RDM_MIN_BUF ? g_rdm.max :
			RDM_MIN_BUF;
		ret = ft_buf_alloc(g_rdm.fab.domain, g_rdm.buf_len, FI_SEND,
				   &g_rdm.tx);
	}
	ret = ret ? ret : ft_buf_alloc(g_rdm.fab.domain, g_rdm.buf_len,
				       FI_RECV, &g_rdm.rx);
	return ft_check(!ret, "rdm_setup", "%s", fi_strerror(-ret)) ? 0 : -1;
}

/* nsync: the OOB barriers a case passes on each side; a side that gives
 * up early passes the rest afterwards, so both stay in step. */
struct rdm_case {
	void (*server)(void);
	void (*client)(void);
	int nsync;
};

static const struct rdm_case g_cases[] = {
	{ rdm_sizes_msg, rdm_sizes_msg, 0 },
	{ rdm_sizes_tagged, rdm_sizes_tagged, 0 },
	{ rdm_pingpong, rdm_pingpong, 0 },
	{ rdm_solo_server, rdm_solo_client, 7 },
	{ rdm_ignore_server, rdm_ignore_client, 1 },
	{ rdm_directed_server, rdm_directed_client, 3 },
	{ rdm_dirmsg_server, rdm_dirmsg_client, 3 },
	{ rdm_cqdata_server, rdm_cqdata_client, 0 },
	{ rdm_inject_server, rdm_inject_client, 0 },
	{ rdm_dc, rdm_dc, 0 },
	{ rdm_fence, rdm_fence, 0 },
	{ rdm_fence_inject, rdm_fence_inject, 0 },
	{ rdm_auto, rdm_auto, 2 },
	{ rdm_order_server, rdm_order_client, 1 },
	{ rdm_cqorder_server, rdm_cqorder_client, 2 },
	{ rdm_cqerr_order_server, rdm_cqerr_order_client, 2 },
	{ rdm_storm_server, rdm_storm_client, 1 },
	{ rdm_peek_server, rdm_peek_client, 2 },
	{ rdm_mrecv_server, rdm_mrecv_client, 1 },
	{ rdm_mreuse_server, rdm_mreuse_client, 1 },
	{ rdm_mrecv_rndv_server, rdm_mrecv_rndv_client, 3 },
	{ rdm_close_owed_server, rdm_close_owed_client, 2 },
	{ rdm_trunc_server, rdm_trunc_client, 1 },
	{ rdm_cancel, rdm_cancel, 0 },
	{ rdm_bad_server, rdm_bad_client, 0 },
};

/* After a failed case: cancel what it left posted and drop late
 * completions, so that they cannot be mistaken for the next case's. */
static void rdm_cleanup(void)
{
	int i, n;

	for (i = 0; i < RDM_WINDOW; i++) {
		(void)fi_cancel(&g_rdm.ep[0].ep->fid, &g_rdm.rxctx[i]);
		(void)fi_cancel(&g_rdm.ep[0].ep->fid, &g_rdm.txctx[i]);
	}
	n = ft_rdm_drain(g_rdm.ep[0].cq, 500);
	if (g_rdm.ep[1].cq)
		n += ft_rdm_drain(g_rdm.ep[1].cq, 100);
	if (n)
		ft_info("dropped %d completions left by the failed case", n);
}

static int rdm_run_case(const struct rdm_case *c)
{
	int failed = ft_failures();

	g_rdm.nsync = 0;
	if (ft_is_server())
		c->server();
	else
		c->client();
	while (g_rdm.nsync < c->nsync)
		if (rdm_sync())
			return -1;
	if (ft_failures() > failed)
		rdm_cleanup();
	return rdm_sync();
}

int main(int argc, char **argv)
{
	size_t i;

	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.timeout_ms = FT_RDM_DEADLINE_MS;
	ft_set_extra_opts("ADG", " -A           ask for FI_PROGRESS_AUTO data "
			  "progress (the\n              rdm_auto_progress case "
			  "runs only then)\n -D           ask for FI_THREAD_DOMAIN "
			  "(no locks: the\n              provider's unlocked "
			  "paths)\n -G           ask for FI_TAGGED_DIRECTED_RECV "
			  "instead of\n              FI_DIRECTED_RECV "
			  "(libfabric 2.x)\n", rdm_opt);
	ft_parse_opts(argc, argv, "RDM send/receive conformance.", true);
	if (!ft_opts.size_set)
		ft_opts.all_sizes = true;
	if (!rdm_setup()) {
		for (i = 0; i < sizeof(g_cases) / sizeof(g_cases[0]); i++)
			if (rdm_run_case(&g_cases[i]))
				break;
	}
	ft_rdm_ep_close(&g_rdm.ep[1]);
	ft_rdm_ep_close(&g_rdm.ep[0]);
	ft_buf_free(&g_rdm.tx);
	ft_buf_free(&g_rdm.rx);
	ft_oob_close();
	ft_fab_close(&g_rdm.fab);
	return ft_summary();
}
