// SPDX-License-Identifier: MIT
/* RDM RMA conformance (server/client): the client learns the server's
 * regions from a message, then reads and writes them (every size to 64 MiB,
 * with and without descriptors, vectored, msg, inject, remote CQ data,
 * delivery complete), checks its read and write counters, and provokes
 * access errors, each followed by a write that must reconnect; the server
 * checks its memory and its remote CQ data completions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "fi_rivet_rdm_rma.h"

struct rr_state g_rr;

/* ---- server ----------------------------------------------------------- */

static int rr_server_verify(const struct rr_cmd *cmd)
{
	ssize_t bad;

	if (cmd->off + cmd->len > g_rr.rw.len) {
		ft_fail(cmd->name, "range beyond the region");
		return 1;
	}
	bad = ft_verify((uint8_t *)g_rr.rw.ptr + cmd->off, cmd->len, cmd->seed);
	return ft_check(bad < 0, cmd->name, "target data corrupt at byte %zd "
			"of %llu", bad, (unsigned long long)cmd->len) ? 0 : 1;
}

/* A write with data: one completion on our CQ, with no context, the data,
 * FI_SOURCE, and the flags of a remote write. */
static int rr_server_expect_data(const struct rr_cmd *cmd)
{
	uint64_t want = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
	struct ft_comp comp;
	int ret;

	ret = ft_rdm_wait(g_rr.cq, NULL, &comp, ft_rdm_timeout(cmd->len));
	if (ret || comp.err) {
		ft_fail(cmd->name, "no remote CQ data completion: %s",
			ret ? fi_strerror(-ret) : ft_comp_str(&comp));
		return 1;
	}
	if ((comp.flags & want) != want || comp.data != cmd->data ||
	    comp.src != g_rr.peer || comp.ctx || comp.len != cmd->len) {
		ft_fail(cmd->name, "flags 0x%llx data 0x%llx src %llu ctx %p "
			"len %zu; want flags 0x%llx data 0x%llx src %llu len "
			"%llu", (unsigned long long)comp.flags,
			(unsigned long long)comp.data,
			(unsigned long long)comp.src, comp.ctx, comp.len,
			(unsigned long long)want,
			(unsigned long long)cmd->data,
			(unsigned long long)g_rr.peer,
			(unsigned long long)cmd->len);
		return 1;
	}
	return rr_server_verify(cmd);
}

static int rr_server_cmd(const struct rr_cmd *cmd, bool *done)
{
	switch (cmd->op) {
	case RR_FILL:
		if (cmd->off + cmd->len > g_rr.rw.len)
			return 1;
		ft_fill((uint8_t *)g_rr.rw.ptr + cmd->off, cmd->len, cmd->seed);
		return 0;
	case RR_VERIFY:
		return rr_server_verify(cmd);
	case RR_EXPECT_DATA:
		return rr_server_expect_data(cmd);
	default:
		*done = true;
		return 0;
	}
}

/* Without FI_MR_VIRT_ADDR a region is addressed from offset 0. */
static uint64_t rr_addr(void *ptr)
{
	return g_rr.fab.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
	       (uint64_t)(uintptr_t)ptr : 0;
}

static int rr_server_send_keys(void)
{
	ssize_t ret;

	g_rr.keys = (struct rr_keys) {
		.rw_addr = rr_addr(g_rr.rw.ptr),
		.rw_key = fi_mr_key(g_rr.rw.mr), .rw_len = g_rr.rw.len,
		.ro_addr = rr_addr(g_rr.ro.ptr),
		.ro_key = fi_mr_key(g_rr.ro.mr), .ro_len = g_rr.ro.len,
	};
	ret = FT_RDM_POST(fi_tinject(g_rr.ep, &g_rr.keys, sizeof(g_rr.keys),
				     g_rr.peer, RR_KEY_TAG));
	if (!ret)	/* the client answers once it has them */
		ret = ft_oob_sync();
	return ft_check(!ret, "rdm_rma_keys_sent", "%s",
			fi_strerror((int)-ret)) ? 0 : -1;
}

static void rr_server(void)
{
	struct rr_cmd cmd;
	bool done = false;
	int32_t status;

	if (rr_server_send_keys())
		return;
	while (!done) {
		if (ft_oob_recv(&cmd, sizeof(cmd))) {
			ft_fail("rdm_rma_server", "no command from the client");
			return;
		}
		cmd.name[sizeof(cmd.name) - 1] = '\0';
		status = rr_server_cmd(&cmd, &done);
		if (ft_oob_send(&status, sizeof(status)))
			return;
	}
}

/* ---- client: helpers -------------------------------------------------- */

/* Send a command and wait for the server's status (0 good). */
int rr_cmd(uint32_t op, const char *name, uint64_t off, uint64_t len,
	   uint32_t seed, uint64_t data)
{
	struct rr_cmd cmd = {
		.op = op, .seed = seed, .off = off, .len = len, .data = data,
	};
	int32_t status;
	int ret;

	snprintf(cmd.name, sizeof(cmd.name), "%s", name ? name : "");
	ret = ft_oob_send(&cmd, sizeof(cmd));
	if (!ret)
		ret = ft_oob_recv(&status, sizeof(status));
	if (ret) {
		ft_fail(name ? name : "rr_cmd", "server unreachable: %s",
			fi_strerror(-ret));
		return -1;
	}
	return status;
}

static int rr_client_keys(void)
{
	struct ft_comp comp;
	ssize_t ret;

	ret = FT_RDM_POST(fi_trecv(g_rr.ep, &g_rr.keys, sizeof(g_rr.keys), NULL,
				   g_rr.peer, RR_KEY_TAG, 0, &g_rr.ctx[0]));
	if (!ret)
		ret = ft_rdm_wait(g_rr.cq, &g_rr.ctx[0], &comp,
				  ft_opts.timeout_ms);
	if (!ret && (comp.err || comp.len != sizeof(g_rr.keys)))
		ret = -FI_EOTHER;
	if (!ret)
		ret = ft_oob_sync();
	if (!ft_check(!ret, "rdm_rma_keys", "%s", fi_strerror((int)-ret)))
		return -1;
	ft_info("server region 0x%llx len %llu key 0x%llx",
		(unsigned long long)g_rr.keys.rw_addr,
		(unsigned long long)g_rr.keys.rw_len,
		(unsigned long long)g_rr.keys.rw_key);
	return 0;
}

/* Wait for ctx: -1 on timeout or an error completion, 1 on wrong flags. */
int rr_wait(const char *name, void *ctx, uint64_t flags, size_t len)
{
	struct ft_comp comp;
	int ret;

	ret = ft_rdm_wait(g_rr.cq, ctx, &comp, ft_rdm_timeout(len));
	if (ret || comp.err) {
		ft_fail(name, "completion: %s",
			ret ? fi_strerror(-ret) : ft_comp_str(&comp));
		return -1;
	}
	if ((comp.flags & flags) != flags) {
		ft_fail(name, "completion flags 0x%llx, want 0x%llx",
			(unsigned long long)comp.flags,
			(unsigned long long)flags);
		return 1;
	}
	if (flags & FI_READ)
		g_rr.reads++;
	else
		g_rr.writes++;
	return 0;
}

int rr_posted(const char *name, ssize_t ret)
{
	if (ret)
		ft_fail(name, "post: %s", fi_strerror((int)-ret));
	return ret ? -1 : 0;
}

void rr_result(const char *name, int ret)
{
	if (!ret)
		ft_ok(name);
}

/* ---- client: write and read ------------------------------------------- */

/* -v: the rate of the large ones, from post to completion */
static void rr_rate(const char *name, size_t len, uint64_t t0)
{
	uint64_t ms = ft_now_ms() - t0;

	if (ft_opts.verbose && len >= (1UL << 20))
		ft_info("%s: %llu ms, %.0f MB/s", name,
			(unsigned long long)ms,
			ms ? len / 1e3 / (double)ms : 0.0);
}

/* buf/desc: the registered buffer, or plain memory with no descriptor. */
int rr_write_one(const char *name, void *buf, void *desc, size_t off,
		 size_t len, uint32_t seed)
{
	ssize_t ret;

	uint64_t t0;

	ft_fill(buf, len, seed);
	t0 = ft_now_ms();
	ret = FT_RDM_POST(fi_write(g_rr.ep, buf, len, desc, g_rr.peer,
				   g_rr.keys.rw_addr + off, g_rr.keys.rw_key,
				   &g_rr.ctx[0]));
	if (rr_posted(name, ret))
		return -1;
	ret = rr_wait(name, &g_rr.ctx[0], FI_RMA | FI_WRITE, len);
	if (ret < 0)
		return -1;
	rr_rate(name, len, t0);
	return rr_cmd(RR_VERIFY, name, off, len, seed, 0) || ret;
}

static int rr_read_one(const char *name, void *buf, void *desc, size_t off,
		       size_t len, uint32_t seed)
{
	ssize_t ret, bad;
	uint64_t t0;

	if (rr_cmd(RR_FILL, name, off, len, seed, 0))
		return -1;
	memset(buf, 0, len);
	t0 = ft_now_ms();
	ret = FT_RDM_POST(fi_read(g_rr.ep, buf, len, desc, g_rr.peer,
				  g_rr.keys.rw_addr + off, g_rr.keys.rw_key,
				  &g_rr.ctx[0]));
	if (rr_posted(name, ret))
		return -1;
	ret = rr_wait(name, &g_rr.ctx[0], FI_RMA | FI_READ, len);
	if (ret)
		return ret;
	rr_rate(name, len, t0);
	bad = ft_verify(buf, len, seed);
	if (bad >= 0)
		ft_fail(name, "read data corrupt at byte %zd of %zu", bad, len);
	return bad >= 0;
}

/* Write then read every size, at an unaligned offset where it fits. */
static int rr_sweep(void)
{
	size_t sizes[RR_MAX_SIZES], n, i, off;
	char name[48];
	int ret;

	n = ft_rdm_size_list(g_rr.max, sizes, RR_MAX_SIZES);
	for (i = 0; i < n; i++) {
		if (!sizes[i])
			continue;	/* as fi_rivet_rma: no zero-byte RMA */
		off = sizes[i] + 8 <= g_rr.keys.rw_len ? i % 8 : 0;
		snprintf(name, sizeof(name), "rdm_rma_write_%zu", sizes[i]);
		ret = rr_write_one(name, g_rr.rw.ptr, g_rr.rw.desc, off,
				   sizes[i], 0x100 + i);
		if (ret < 0)
			return ret;
		rr_result(name, ret);
		snprintf(name, sizeof(name), "rdm_rma_read_%zu", sizes[i]);
		ret = rr_read_one(name, g_rr.rw.ptr, g_rr.rw.desc, off,
				  sizes[i], 0x200 + i);
		if (ret < 0)
			return ret;
		rr_result(name, ret);
	}
	return 0;
}

/* No descriptor (mr_mode has no FI_MR_LOCAL): rivet stages small ones
 * and registers large ones itself. */
static int rr_nodesc(void)
{
	static const size_t lens[] = { 1, 100, 4096, 8300, 65536, 1 << 20 };
	char name[48];
	size_t i;
	int ret;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		snprintf(name, sizeof(name), "rdm_rma_write_nodesc_%zu",
			 lens[i]);
		ret = rr_write_one(name, g_rr.plain, NULL, 16, lens[i],
				   0x700 + i);
		if (ret < 0)
			return ret;
		rr_result(name, ret);
		snprintf(name, sizeof(name), "rdm_rma_read_nodesc_%zu",
			 lens[i]);
		ret = rr_read_one(name, g_rr.plain, NULL, 16, lens[i],
				  0x780 + i);
		if (ret < 0)
			return ret;
		rr_result(name, ret);
	}
	return 0;
}

/* ---- client: vectored and msg forms ----------------------------------- */

/* cnt pieces of the local buffer with gaps, len bytes in all. */
static void rr_make_iov(size_t len, size_t cnt, struct iovec *iov,
			void **desc)
{
	size_t i, piece = len / cnt, off = 0;

	for (i = 0; i < cnt; i++) {
		iov[i].iov_base = (uint8_t *)g_rr.rw.ptr + off;
		iov[i].iov_len = i == cnt - 1 ? len - piece * i : piece;
		desc[i] = g_rr.rw.desc;
		off += piece + 512;
	}
}

static ssize_t rr_post_iov(bool write, bool use_msg, struct iovec *iov,
			   void **desc, size_t cnt, size_t len)
{
	struct fi_rma_iov rma = { .addr = g_rr.keys.rw_addr, .len = len,
				  .key = g_rr.keys.rw_key };
	struct fi_msg_rma msg = { .msg_iov = iov, .desc = desc,
				  .iov_count = cnt, .addr = g_rr.peer,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = &g_rr.ctx[0] };

	if (use_msg && write)
		return FT_RDM_POST(fi_writemsg(g_rr.ep, &msg, FI_COMPLETION));
	if (use_msg)
		return FT_RDM_POST(fi_readmsg(g_rr.ep, &msg, FI_COMPLETION));
	if (write)
		return FT_RDM_POST(fi_writev(g_rr.ep, iov, desc, cnt, g_rr.peer,
					     rma.addr, rma.key, &g_rr.ctx[0]));
	return FT_RDM_POST(fi_readv(g_rr.ep, iov, desc, cnt, g_rr.peer,
				    rma.addr, rma.key, &g_rr.ctx[0]));
}

static int rr_iov_case(const char *name, bool write, bool use_msg,
		       size_t cnt)
{
	struct iovec iov[FT_MAX_IOV];
	void *desc[FT_MAX_IOV];
	size_t len = 8192 * cnt + 77;
	uint32_t seed = 0x300 + cnt + (write ? 0 : 0x10) + (use_msg ? 0x20 : 0);
	ssize_t ret, bad;

	rr_make_iov(len, cnt, iov, desc);
	if (write)
		ft_fill_iov(iov, cnt, seed);
	else if (rr_cmd(RR_FILL, name, 0, len, seed, 0))
		return -1;
	ret = rr_post_iov(write, use_msg, iov, desc, cnt, len);
	if (rr_posted(name, ret))
		return -1;
	ret = rr_wait(name, &g_rr.ctx[0], FI_RMA | (write ? FI_WRITE : FI_READ),
		      len);
	if (ret)
		return ret;
	if (write)
		return rr_cmd(RR_VERIFY, name, 0, len, seed, 0);
	bad = ft_verify_iov(iov, cnt, seed);
	if (bad >= 0)
		ft_fail(name, "read data corrupt at byte %zd", bad);
	return bad >= 0;
}

static int rr_iov(void)
{
	size_t n, max = g_rr.fab.info->tx_attr->iov_limit;
	char name[48];
	int ret, w;

	max = max < FT_MAX_IOV ? max : FT_MAX_IOV;
	for (w = 1; w >= 0; w--) {
		for (n = 1; n <= max; n++) {
			snprintf(name, sizeof(name), "%s_%zu",
				 w ? "rdm_rma_writev" : "rdm_rma_readv", n);
			ret = rr_iov_case(name, w, false, n);
			if (ret < 0)
				return ret;
			rr_result(name, ret);
		}
		snprintf(name, sizeof(name), "%s",
			 w ? "rdm_rma_writemsg" : "rdm_rma_readmsg");
		ret = rr_iov_case(name, w, true, max);
		if (ret < 0)
			return ret;
		rr_result(name, ret);
	}
	return 0;
}

static void rr_client(void)
{
	if (rr_client_keys())
		return;
	if (rr_sweep() || rr_nodesc() || rr_iov() || rr_raw_order() ||
	    rr_inject() || rr_writedata() || rr_delivery() || rr_windows() ||
	    rr_fence())
		goto done;
	rr_counters();
	rr_bad_args();
	rr_errors();
done:
	rr_cmd(RR_DONE, NULL, 0, 0, 0, 0);
}

/* ---- setup ------------------------------------------------------------ */

/* A copy of info whose source port is 0 (the client's endpoint). */
static struct fi_info *rr_info_any_port(const struct fi_info *info)
{
	struct fi_info *dup = fi_dupinfo(info);
	struct sockaddr_in *sin;

	if (!dup || !dup->src_addr)
		return dup;
	sin = dup->src_addr;
	if (sin->sin_family == AF_INET)
		sin->sin_port = 0;
	else if (sin->sin_family == AF_INET6)
		((struct sockaddr_in6 *)dup->src_addr)->sin6_port = 0;
	return dup;
}

static int rr_cntr_open(struct fid_cntr **cntr_p)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_NONE };

	return fi_cntr_open(g_rr.fab.domain, &attr, cntr_p, NULL);
}

/* The endpoint, its CQ for both directions, and (client) read and write
 * counters, bound before fi_enable. */
static int rr_ep_open(void)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_NONE };
	bool srv = ft_is_server();
	struct fi_info *info = srv ? g_rr.fab.info :
				     rr_info_any_port(g_rr.fab.info);
	int ret;

	ret = info ? ft_rdm_av_open(g_rr.fab.domain, 16, &g_rr.av) : -FI_ENOMEM;
	ret = ret ? ret : fi_cq_open(g_rr.fab.domain, &cq_attr, &g_rr.cq, NULL);
	ret = ret ? ret : fi_endpoint(g_rr.fab.domain, info, &g_rr.ep, NULL);
	ret = ret ? ret : fi_ep_bind(g_rr.ep, &g_rr.av->fid, 0);
	ret = ret ? ret : fi_ep_bind(g_rr.ep, &g_rr.cq->fid,
				     FI_TRANSMIT | FI_RECV);
	if (!ret && !srv) {
		ret = rr_cntr_open(&g_rr.rcntr);
		ret = ret ? ret : rr_cntr_open(&g_rr.wcntr);
		ret = ret ? ret : fi_ep_bind(g_rr.ep, &g_rr.rcntr->fid,
					     FI_READ);
		ret = ret ? ret : fi_ep_bind(g_rr.ep, &g_rr.wcntr->fid,
					     FI_WRITE);
	}
	ret = ret ? ret : fi_enable(g_rr.ep);
	if (info && info != g_rr.fab.info)
		fi_freeinfo(info);
	if (ret)
		ft_info("endpoint setup: %s", fi_strerror(-ret));
	return ret;
}

static int rr_exchange_names(void)
{
	uint8_t mine[FT_RDM_NAME_MAX], peer[FT_RDM_NAME_MAX];
	size_t len = sizeof(mine), plen = sizeof(peer);
	int ret;

	ret = fi_getname(&g_rr.ep->fid, mine, &len);
	ret = ret ? ret : ft_rdm_oob_swap(mine, len, peer, &plen);
	return ret ? ret : ft_rdm_av_insert(g_rr.av, peer, &g_rr.peer);
}

static int rr_bufs(void)
{
	size_t len = g_rr.max > RR_MIN_LEN ? g_rr.max : RR_MIN_LEN;
	struct fid_domain *d = g_rr.fab.domain;
	int ret;

	if (!ft_is_server()) {
		g_rr.plain = malloc(RR_MIN_LEN);
		ret = g_rr.plain ? 0 : -FI_ENOMEM;
		return ret ? ret : ft_buf_alloc(d, len, FI_READ | FI_WRITE,
						&g_rr.rw);
	}
	ret = ft_buf_alloc(d, len, FI_REMOTE_READ | FI_REMOTE_WRITE, &g_rr.rw);
	return ret ? ret : ft_buf_alloc(d, RR_RO_LEN, FI_REMOTE_READ, &g_rr.ro);
}

static int rr_setup(void)
{
	struct fi_info *hints = ft_rdm_hints(FI_MSG | FI_TAGGED | FI_RMA,
					     FI_THREAD_UNSPEC);
	bool srv = ft_is_server();
	int ret;

	/* FI_FENCE where the provider has it (the fence case skips else) */
	if (hints)
		hints->caps |= FI_FENCE;
	ret = hints ? ft_rdm_fab_open(&g_rr.fab, hints, false) : -FI_ENOMEM;
	if (ret == -FI_ENODATA) {
		hints->caps &= ~FI_FENCE;
		ret = ft_rdm_fab_open(&g_rr.fab, hints, false);
	}
	fi_freeinfo(hints);
	ret = ret ? ret : rr_ep_open();
	ft_oob_watch(g_rr.cq, NULL);
	if (!ret && srv)
		ret = ft_oob_listen();
	ret = ret ? ret : (srv ? ft_oob_accept() : ft_oob_connect());
	ret = ret ? ret : rr_exchange_names();
	if (!ret) {
		g_rr.max = ft_opts.all_sizes ? ft_opts.max_size : ft_opts.size;
		if (g_rr.max > g_rr.fab.info->ep_attr->max_msg_size)
			g_rr.max = g_rr.fab.info->ep_attr->max_msg_size;
		ft_info("mr_mode 0x%x, cq_data_size %zu, msg_order 0x%llx",
			g_rr.fab.info->domain_attr->mr_mode,
			g_rr.fab.info->domain_attr->cq_data_size,
			(unsigned long long)g_rr.fab.info->tx_attr->msg_order);
		ret = rr_bufs();
	}
	return ft_check(!ret, "rdm_rma_setup", "%s", fi_strerror(-ret)) ? 0 :
									 -1;
}

int main(int argc, char **argv)
{
	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.timeout_ms = FT_RDM_DEADLINE_MS;
	ft_parse_opts(argc, argv, "RDM RMA conformance.", true);
	if (!ft_opts.size_set)
		ft_opts.all_sizes = true;
	if (!rr_setup()) {
		if (ft_is_server())
			rr_server();
		else
			rr_client();
	}
	ft_close_fid(g_rr.ep ? &g_rr.ep->fid : NULL, "ep");
	ft_close_fid(g_rr.rcntr ? &g_rr.rcntr->fid : NULL, "cntr");
	ft_close_fid(g_rr.wcntr ? &g_rr.wcntr->fid : NULL, "cntr");
	ft_close_fid(g_rr.cq ? &g_rr.cq->fid : NULL, "cq");
	ft_close_fid(g_rr.av ? &g_rr.av->fid : NULL, "av");
	ft_buf_free(&g_rr.rw);
	ft_buf_free(&g_rr.ro);
	free(g_rr.plain);
	ft_oob_close();
	ft_fab_close(&g_rr.fab);
	return ft_summary();
}
