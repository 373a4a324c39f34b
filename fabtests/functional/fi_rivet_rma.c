// SPDX-License-Identifier: MIT
/* RMA conformance (server/client): the client reads and writes the server's
 * regions (plain, vectored, msg, inject, remote CQ data) and provokes access
 * errors, each on a fresh connection; the server checks its memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>

#include "common/ft_atomic_ref.h"

#include "common/ft_rivet.h"

#define RMA_RO_LEN (64 * 1024)
#define RMA_MIN_LEN (1024 * 1024)
#define RMA_MAX_SIZES 64
#define RMA_CQ_DATA 0x0badc0ffee123456ULL

/* Server's regions, sent to the client in a message on each connection. */
struct rma_keys {
	uint64_t rw_addr;
	uint64_t rw_key;
	uint64_t rw_len;
	uint64_t ro_addr;
	uint64_t ro_key;
	uint64_t ro_len;
};

/* Commands from the client to the server, over the OOB channel. */
enum rma_op {
	RMA_FILL = 1,		/* fill rw[off, off+len) with seed */
	RMA_VERIFY,		/* check rw[off, off+len) against seed */
	RMA_POST_RECV,		/* post a receive for remote CQ data */
	RMA_EXPECT_DATA,	/* wait for it: FI_REMOTE_CQ_DATA == data */
	RMA_NEW_CONN,		/* drop the connection, accept another */
	RMA_DONE,
};

struct rma_cmd {
	uint32_t op;
	uint32_t seed;
	uint64_t off;
	uint64_t len;
	uint64_t data;
	char name[48];
};

struct rma_state {
	struct ft_fab fab;
	struct ft_conn conn;
	struct ft_buf rw;	/* server: target region; client: local */
	struct ft_buf ro;	/* server: read-only target region */
	struct ft_buf rx;	/* server: receive for remote CQ data */
	struct rma_keys keys;
	size_t max;
	struct fi_context ctx[2];
};

static struct rma_state g;

static uint64_t rma_addr(void *ptr)
{
	return g.fab.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
	       (uint64_t)(uintptr_t)ptr : 0;
}

static uint64_t rma_cq_data(void)
{
	size_t bytes = g.conn.info->domain_attr->cq_data_size;

	return bytes >= 8 ? RMA_CQ_DATA :
	       RMA_CQ_DATA & ((1ULL << (8 * bytes)) - 1);
}

/* ---- server ----------------------------------------------------------- */

static int rma_server_accept(void)
{
	static int count;
	char name[32];
	int ret;

	/* no standing receive here: a write with data must find ours */
	memset(&g.conn, 0, sizeof(g.conn));
	ret = ft_accept_req(&g.fab, &g.conn, NULL, NULL);
	if (!ret)
		ret = ft_accept_finish(&g.conn, NULL, 0, NULL, NULL);
	if (!ret) {
		g.keys = (struct rma_keys) {
			.rw_addr = rma_addr(g.rw.ptr),
			.rw_key = fi_mr_key(g.rw.mr),
			.rw_len = g.rw.len,
			.ro_addr = rma_addr(g.ro.ptr),
			.ro_key = fi_mr_key(g.ro.mr),
			.ro_len = g.ro.len,
		};
		ret = ft_ctrl_send(&g.conn, &g.keys, sizeof(g.keys));
		/* the access-error connections (after the first) are broken
		 * by the client as soon as it has the keys, and rxe can
		 * flush this send before the ACK of its delivery is in: the
		 * client checks that the keys came */
		if (ret == -FI_ECANCELED && count > 0)
			ret = 0;
	}
	snprintf(name, sizeof(name), "rma_accept_%d", ++count);
	return ft_check(!ret, name, "%s", fi_strerror(-ret)) ? 0 : -1;
}

static int rma_server_verify(const struct rma_cmd *cmd)
{
	ssize_t bad;

	if (cmd->off + cmd->len > g.rw.len) {
		ft_fail(cmd->name, "range beyond the region");
		return 1;
	}
	bad = ft_verify((uint8_t *)g.rw.ptr + cmd->off, cmd->len, cmd->seed);
	return ft_check(bad < 0, cmd->name, "target data corrupt at byte %zd "
			"of %llu", bad, (unsigned long long)cmd->len) ? 0 : 1;
}

/* Write-with-data consumes a posted receive (FI_RX_CQ_DATA). */
static int rma_server_expect_data(const struct rma_cmd *cmd)
{
	struct fi_cq_data_entry comp;
	int ret;

	ret = ft_cq_expect(g.conn.rxcq, &g.ctx[0], &comp,
			   ft_timeout_for(cmd->len));
	if (ret) {
		ft_fail(cmd->name, "no receive completion for the write: %s",
			fi_strerror(-ret));
		return 1;
	}
	if (!(comp.flags & FI_REMOTE_CQ_DATA) || comp.data != cmd->data) {
		ft_fail(cmd->name, "completion flags 0x%llx data 0x%llx, want "
			"FI_REMOTE_CQ_DATA and 0x%llx",
			(unsigned long long)comp.flags,
			(unsigned long long)comp.data,
			(unsigned long long)cmd->data);
		return 1;
	}
	return rma_server_verify(cmd);
}

static int rma_server_cmd(const struct rma_cmd *cmd, bool *done)
{
	ssize_t ret;

	switch (cmd->op) {
	case RMA_FILL:
		if (cmd->off + cmd->len > g.rw.len)
			return 1;
		ft_fill((uint8_t *)g.rw.ptr + cmd->off, cmd->len, cmd->seed);
		return 0;
	case RMA_VERIFY:
		return rma_server_verify(cmd);
	case RMA_POST_RECV:
		ret = FT_POST(fi_recv(g.conn.ep, g.rx.ptr, g.rx.len, g.rx.desc,
				      0, &g.ctx[0]), g.conn.rxcq,
			      ft_opts.timeout_ms);
		return ret ? 1 : 0;
	case RMA_EXPECT_DATA:
		return rma_server_expect_data(cmd);
	case RMA_NEW_CONN:
		ft_conn_close(&g.conn);
		return 0;
	default:
		*done = true;
		return 0;
	}
}

static void rma_server(void)
{
	struct rma_cmd cmd;
	bool done = false;
	int32_t status;

	if (rma_server_accept())
		return;
	while (!done) {
		if (ft_oob_recv(&cmd, sizeof(cmd))) {
			ft_fail("rma_server", "no command from the client");
			return;
		}
		cmd.name[sizeof(cmd.name) - 1] = '\0';
		status = rma_server_cmd(&cmd, &done);
		if (ft_oob_send(&status, sizeof(status)))
			return;
		if (cmd.op == RMA_NEW_CONN && rma_server_accept())
			return;
	}
}

/* ---- client: helpers -------------------------------------------------- */

/* Send a command and wait for the server's status (0 good). */
static int rma_cmd(uint32_t op, const char *name, uint64_t off, uint64_t len,
		   uint32_t seed)
{
	struct rma_cmd cmd = {
		.op = op, .seed = seed, .off = off, .len = len,
		.data = op == RMA_EXPECT_DATA ? rma_cq_data() : 0,
	};
	int32_t status;
	int ret;

	snprintf(cmd.name, sizeof(cmd.name), "%s", name ? name : "");
	ret = ft_oob_send(&cmd, sizeof(cmd));
	if (!ret)
		ret = ft_oob_recv(&status, sizeof(status));
	if (ret) {
		ft_fail(name ? name : "rma_cmd", "server unreachable: %s",
			fi_strerror(-ret));
		return -1;
	}
	return status;
}

static int rma_client_connect(void)
{
	static int count;
	char name[32];
	int ret;

	memset(&g.conn, 0, sizeof(g.conn));
	ret = ft_client_connect(&g.fab, &g.conn);
	if (!ret)
		ret = ft_ctrl_recv(&g.conn, &g.keys, sizeof(g.keys)) ==
			sizeof(g.keys) ? 0 : -FI_EOTHER;
	snprintf(name, sizeof(name), "rma_connect_%d", ++count);
	if (!ft_check(!ret, name, "%s", fi_strerror(-ret)))
		return -1;
	ft_info("server region 0x%llx len %llu key 0x%llx",
		(unsigned long long)g.keys.rw_addr,
		(unsigned long long)g.keys.rw_len,
		(unsigned long long)g.keys.rw_key);
	return 0;
}

/* Wait for this side's completion of ctx: -1 on error or timeout. */
static int rma_wait(const char *name, uint64_t flags, size_t len)
{
	struct fi_cq_data_entry comp;
	int ret;

	ret = ft_cq_expect(g.conn.txcq, &g.ctx[0], &comp, ft_timeout_for(len));
	if (ret) {
		ft_fail(name, "completion: %s", fi_strerror(-ret));
		return -1;
	}
	if ((comp.flags & flags) != flags) {
		ft_fail(name, "completion flags 0x%llx, want 0x%llx",
			(unsigned long long)comp.flags,
			(unsigned long long)flags);
		return 1;
	}
	return 0;
}

static int rma_posted(const char *name, ssize_t ret)
{
	if (ret)
		ft_fail(name, "post: %s", fi_strerror((int)-ret));
	return ret ? -1 : 0;
}

/* ---- client: write and read ------------------------------------------- */

static int rma_write_one(const char *name, size_t off, size_t len,
			 uint32_t seed)
{
	ssize_t ret;

	ft_fill(g.rw.ptr, len, seed);
	ret = FT_POST(fi_write(g.conn.ep, g.rw.ptr, len, g.rw.desc, 0,
			       g.keys.rw_addr + off, g.keys.rw_key, &g.ctx[0]),
		      g.conn.txcq, ft_opts.timeout_ms);
	if (rma_posted(name, ret))
		return -1;
	ret = rma_wait(name, FI_RMA | FI_WRITE, len);
	if (ret < 0)
		return -1;
	return rma_cmd(RMA_VERIFY, name, off, len, seed) || ret;
}

static int rma_read_one(const char *name, size_t off, size_t len,
			uint32_t seed)
{
	ssize_t ret, bad;

	if (rma_cmd(RMA_FILL, name, off, len, seed))
		return -1;
	memset(g.rw.ptr, 0, len);
	ret = FT_POST(fi_read(g.conn.ep, g.rw.ptr, len, g.rw.desc, 0,
			      g.keys.rw_addr + off, g.keys.rw_key, &g.ctx[0]),
		      g.conn.txcq, ft_opts.timeout_ms);
	if (rma_posted(name, ret))
		return -1;
	ret = rma_wait(name, FI_RMA | FI_READ, len);
	if (ret)
		return ret;
	bad = ft_verify(g.rw.ptr, len, seed);
	if (bad >= 0)
		ft_fail(name, "read data corrupt at byte %zd of %zu", bad, len);
	return bad >= 0;
}

/* Write then read every size, at an unaligned offset where it fits. */
static int rma_sweep(void)
{
	size_t sizes[RMA_MAX_SIZES], n, i, off;
	char name[48];
	int ret;

	n = ft_size_list(g.max, sizes, RMA_MAX_SIZES);
	for (i = 0; i < n; i++) {
		if (!sizes[i])
			continue;
		off = sizes[i] + 8 <= g.keys.rw_len ? i % 8 : 0;
		snprintf(name, sizeof(name), "rma_write_%zu", sizes[i]);
		ret = rma_write_one(name, off, sizes[i], 0x100 + i);
		if (ret < 0)
			return ret;
		if (!ret)
			ft_ok(name);
		snprintf(name, sizeof(name), "rma_read_%zu", sizes[i]);
		ret = rma_read_one(name, off, sizes[i], 0x200 + i);
		if (ret < 0)
			return ret;
		if (!ret)
			ft_ok(name);
	}
	return 0;
}

/* ---- client: vectored and msg forms ----------------------------------- */

/* cnt local pieces of the local buffer with gaps, len bytes in all. */
static void rma_make_iov(size_t len, size_t cnt, struct iovec *iov,
			 void **desc)
{
	size_t i, piece = len / cnt, off = 0;

	for (i = 0; i < cnt; i++) {
		iov[i].iov_base = (uint8_t *)g.rw.ptr + off;
		iov[i].iov_len = i == cnt - 1 ? len - piece * i : piece;
		desc[i] = g.rw.desc;
		off += piece + 512;
	}
}

static ssize_t rma_post_iov(bool write, bool use_msg, struct iovec *iov,
			    void **desc, size_t cnt, size_t len)
{
	struct fi_rma_iov rma = { .addr = g.keys.rw_addr, .len = len,
				  .key = g.keys.rw_key };
	struct fi_msg_rma msg = { .msg_iov = iov, .desc = desc,
				  .iov_count = cnt, .rma_iov = &rma,
				  .rma_iov_count = 1, .context = &g.ctx[0] };
	struct fid_ep *ep = g.conn.ep;
	int to = ft_opts.timeout_ms;

	if (use_msg && write)
		return FT_POST(fi_writemsg(ep, &msg, FI_COMPLETION),
			       g.conn.txcq, to);
	if (use_msg)
		return FT_POST(fi_readmsg(ep, &msg, FI_COMPLETION),
			       g.conn.txcq, to);
	if (write)
		return FT_POST(fi_writev(ep, iov, desc, cnt, 0, rma.addr,
					 rma.key, &g.ctx[0]), g.conn.txcq, to);
	return FT_POST(fi_readv(ep, iov, desc, cnt, 0, rma.addr, rma.key,
				&g.ctx[0]), g.conn.txcq, to);
}

static int rma_iov_case(const char *name, bool write, bool use_msg,
			size_t cnt)
{
	struct iovec iov[FT_MAX_IOV];
	void *desc[FT_MAX_IOV];
	size_t len = 8192 * cnt + 77;
	uint32_t seed = 0x300 + cnt + (write ? 0 : 0x10) + (use_msg ? 0x20 : 0);
	ssize_t ret, bad;

	rma_make_iov(len, cnt, iov, desc);
	if (write)
		ft_fill_iov(iov, cnt, seed);
	else if (rma_cmd(RMA_FILL, name, 0, len, seed))
		return -1;
	ret = rma_post_iov(write, use_msg, iov, desc, cnt, len);
	if (rma_posted(name, ret))
		return -1;
	ret = rma_wait(name, FI_RMA | (write ? FI_WRITE : FI_READ), len);
	if (ret)
		return ret;
	if (write)
		return rma_cmd(RMA_VERIFY, name, 0, len, seed);
	bad = ft_verify_iov(iov, cnt, seed);
	if (bad >= 0)
		ft_fail(name, "read data corrupt at byte %zd", bad);
	return bad >= 0;
}

static int rma_iov(void)
{
	size_t n, max = g.conn.info->tx_attr->iov_limit;
	char name[48];
	int ret, w;

	max = max < FT_MAX_IOV ? max : FT_MAX_IOV;
	for (w = 1; w >= 0; w--) {
		for (n = 1; n <= max; n++) {
			snprintf(name, sizeof(name), "%s_%zu",
				 w ? "rma_writev" : "rma_readv", n);
			ret = rma_iov_case(name, w, false, n);
			if (ret < 0)
				return ret;
			if (!ret)
				ft_ok(name);
		}
		ret = rma_iov_case(w ? "rma_writemsg" : "rma_readmsg", w, true,
				   max);
		if (ret < 0)
			return ret;
		if (!ret)
			ft_ok(w ? "rma_writemsg" : "rma_readmsg");
	}
	return 0;
}

/* ---- client: inject and remote CQ data -------------------------------- */

/* An inject write has no completion: a read of the same range, ordered
 * after it (FI_ORDER_RAW), tells us it has landed and must see its data. */
static int rma_inject_case(size_t len)
{
	const char *name = "rma_inject_write";
	uint32_t seed = 0x400 + len;
	size_t half = g.rw.len / 2;
	ssize_t ret, bad;

	ft_fill(g.rw.ptr, len, seed);
	ret = FT_POST(fi_inject_write(g.conn.ep, g.rw.ptr, len, 0,
				      g.keys.rw_addr, g.keys.rw_key),
		      g.conn.txcq, ft_opts.timeout_ms);
	if (rma_posted(name, ret))
		return -1;
	memset(g.rw.ptr, 0xee, len);
	if (!(g.conn.info->tx_attr->msg_order & FI_ORDER_RAW)) {
		ft_info("no FI_ORDER_RAW: waiting 500 ms for the inject");
		usleep(500 * 1000);
		return rma_cmd(RMA_VERIFY, name, 0, len, seed);
	}
	ret = FT_POST(fi_read(g.conn.ep, (uint8_t *)g.rw.ptr + half, len,
			      g.rw.desc, 0, g.keys.rw_addr, g.keys.rw_key,
			      &g.ctx[0]), g.conn.txcq, ft_opts.timeout_ms);
	if (rma_posted(name, ret) || rma_wait(name, FI_RMA | FI_READ, len))
		return -1;
	bad = ft_verify((uint8_t *)g.rw.ptr + half, len, seed);
	if (bad >= 0)
		ft_fail(name, "read after write saw old data at byte %zd", bad);
	ret = rma_cmd(RMA_VERIFY, name, 0, len, seed);
	return ret || bad >= 0;
}

static int rma_writedata_case(const char *name, bool inject, size_t len)
{
	uint32_t seed = 0x500 + len + inject;
	size_t off = 4096;
	ssize_t ret;

	if (rma_cmd(RMA_POST_RECV, name, 0, 0, 0))
		return -1;
	ft_fill(g.rw.ptr, len, seed);
	if (inject)
		ret = FT_POST(fi_inject_writedata(g.conn.ep, g.rw.ptr, len,
						  rma_cq_data(), 0,
						  g.keys.rw_addr + off,
						  g.keys.rw_key),
			      g.conn.txcq, ft_opts.timeout_ms);
	else
		ret = FT_POST(fi_writedata(g.conn.ep, g.rw.ptr, len, g.rw.desc,
					   rma_cq_data(), 0,
					   g.keys.rw_addr + off, g.keys.rw_key,
					   &g.ctx[0]),
			      g.conn.txcq, ft_opts.timeout_ms);
	if (rma_posted(name, ret))
		return -1;
	if (inject)
		memset(g.rw.ptr, 0xee, len);
	else if ((ret = rma_wait(name, FI_RMA | FI_WRITE, len)) < 0)
		return -1;
	return rma_cmd(RMA_EXPECT_DATA, name, off, len, seed) || ret;
}

static int rma_inject_and_data(void)
{
	size_t inj = g.conn.info->tx_attr->inject_size;
	int ret;

	if (!inj) {
		ft_skip("rma_inject_write", "inject_size is 0");
	} else {
		ret = rma_inject_case(inj);
		if (ret < 0)
			return ret;
		if (!ret && !ft_cq_empty(g.conn.txcq))
			ft_fail("rma_inject_write", "inject wrote a completion");
		else if (!ret)
			ft_ok("rma_inject_write");
	}
	if (!g.conn.info->domain_attr->cq_data_size) {
		ft_skip("rma_writedata", "cq_data_size is 0");
		return 0;
	}
	ret = rma_writedata_case("rma_writedata", false, 10000);
	if (ret < 0)
		return ret;
	if (!ret)
		ft_ok("rma_writedata");
	if (!inj)
		return 0;
	ret = rma_writedata_case("rma_inject_writedata", true,
				 inj < 64 ? inj : 64);
	if (!ret)
		ft_ok("rma_inject_writedata");
	return ret < 0 ? ret : 0;
}

/* ---- client: atomics --------------------------------------------------- */

/* MSG endpoints: what fi_query_atomic offers, checked against the
 * *valid calls; then fetch-add, add, compare-and-swap (taken and not),
 * inject, each value checked, on an 8-byte word of the server's region. */
static int rma_atomic_post(const char *name, ssize_t ret, uint64_t flags)
{
	if (rma_posted(name, ret))
		return -1;
	return rma_wait(name, flags, 8) ? -1 : 0;
}

static int rma_atomics(void)
{
	uint64_t *v = g.rw.ptr, raddr = g.keys.rw_addr;
	struct fi_atomic_attr attr = { 0 };
	struct fid_ep *ep = g.conn.ep;
	void *d = g.rw.desc;
	size_t count = 0;
	int q;

	q = fi_query_atomic(g.fab.domain, FI_UINT64, FI_SUM, &attr,
			    FI_FETCH_ATOMIC);
	if (q == -FI_EOPNOTSUPP || q == -FI_ENOSYS) {
		ft_skip("rma_atomics", "the provider offers no atomics");
		return 0;
	}
	ft_check(!q && attr.count >= 1 && attr.size == 8 &&
		 !fi_fetch_atomicvalid(ep, FI_UINT64, FI_SUM, &count) &&
		 count == attr.count, "rma_atomic_query",
		 "query %d count %zu size %zu, valid count %zu", q, attr.count,
		 attr.size, count);
	v[0] = 100;
	if (rma_atomic_post("rma_atomic_init",
			    FT_POST(fi_write(ep, v, 8, d, 0, raddr,
					     g.keys.rw_key, &g.ctx[0]),
				    g.conn.txcq, ft_opts.timeout_ms),
			    FI_RMA | FI_WRITE))
		return -1;
	v[0] = 5;
	v[1] = 0;
	if (rma_atomic_post("rma_atomic_fetch_add",
			    FT_POST(fi_fetch_atomic(ep, v, 1, d, v + 1, d, 0,
						    raddr, g.keys.rw_key,
						    FI_UINT64, FI_SUM,
						    &g.ctx[0]),
				    g.conn.txcq, ft_opts.timeout_ms),
			    FI_ATOMIC | FI_READ))
		return -1;
	ft_check(v[1] == 100, "rma_atomic_fetch_add", "fetched %llu",
		 (unsigned long long)v[1]);
	v[0] = 7;
	if (rma_atomic_post("rma_atomic_add",
			    FT_POST(fi_atomic(ep, v, 1, d, 0, raddr,
					      g.keys.rw_key, FI_UINT64, FI_SUM,
					      &g.ctx[0]),
				    g.conn.txcq, ft_opts.timeout_ms),
			    FI_ATOMIC | FI_WRITE))
		return -1;
	v[0] = 1000;
	v[2] = 112;	/* compare: taken */
	if (rma_atomic_post("rma_atomic_cswap",
			    FT_POST(fi_compare_atomic(ep, v, 1, d, v + 2, d,
						      v + 1, d, 0, raddr,
						      g.keys.rw_key, FI_UINT64,
						      FI_CSWAP, &g.ctx[0]),
				    g.conn.txcq, ft_opts.timeout_ms),
			    FI_ATOMIC | FI_READ))
		return -1;
	ft_check(v[1] == 112, "rma_atomic_cswap", "fetched %llu, want 112",
		 (unsigned long long)v[1]);
	v[0] = 7;
	v[2] = 5;	/* compare: not taken */
	if (rma_atomic_post("rma_atomic_cswap_miss",
			    FT_POST(fi_compare_atomic(ep, v, 1, d, v + 2, d,
						      v + 1, d, 0, raddr,
						      g.keys.rw_key, FI_UINT64,
						      FI_CSWAP, &g.ctx[0]),
				    g.conn.txcq, ft_opts.timeout_ms),
			    FI_ATOMIC | FI_READ))
		return -1;
	ft_check(v[1] == 1000, "rma_atomic_cswap_miss", "fetched %llu",
		 (unsigned long long)v[1]);
	v[0] = 1;
	ft_check(!FT_POST(fi_inject_atomic(ep, v, 1, 0, raddr, g.keys.rw_key,
					   FI_UINT64, FI_SUM), g.conn.txcq,
			  ft_opts.timeout_ms), "rma_atomic_inject", "post");
	v[3] = 0;
	if (rma_atomic_post("rma_atomic_read_back",
			    FT_POST(fi_read(ep, v + 3, 8, d, 0, raddr,
					    g.keys.rw_key, &g.ctx[0]),
				    g.conn.txcq, ft_opts.timeout_ms),
			    FI_RMA | FI_READ))
		return -1;
	ft_check(v[3] == 1001, "rma_atomic_result", "target holds %llu, "
		 "want 1001", (unsigned long long)v[3]);
	ft_check(fi_atomic(ep, v, 1, d, 0, raddr, g.keys.rw_key, FI_UINT128,
			   FI_SUM, &g.ctx[0]) == -FI_EOPNOTSUPP &&
		 fi_atomicvalid(ep, FI_UINT128, FI_SUM, &count) ==
		 -FI_EOPNOTSUPP, "rma_atomic_unsupported_op",
		 "FI_UINT128 taken");
	fi_atomicvalid(ep, FI_UINT64, FI_SUM, &count);
	ft_check(fi_atomic(ep, v, count + 2, d, 0, raddr, g.keys.rw_key,
			   FI_UINT64, FI_SUM, &g.ctx[0]) == -FI_EINVAL,
		 "rma_atomic_count", "count beyond the valid one taken");
	return 0;
}

/* ---- client: every atomic the MSG endpoint offers ---------------------- */

#define RMA_AT_OFF 256		/* the sweep's elements in the server's region */
#define RMA_AT_HAMMER 64	/* operations in flight on one word */

/* Local layout: target image, operands, compares, results, read back. */
static uint8_t *rma_at_buf(int which)
{
	return (uint8_t *)g.rw.ptr + 1024 + which * 256;
}

static int rma_at_xfer(const char *name, bool write, size_t len)
{
	struct fid_ep *ep = g.conn.ep;
	uint64_t raddr = g.keys.rw_addr + RMA_AT_OFF;
	ssize_t ret;

	ret = write ? FT_POST(fi_write(ep, rma_at_buf(0), len, g.rw.desc, 0,
				       raddr, g.keys.rw_key, &g.ctx[0]),
			      g.conn.txcq, ft_opts.timeout_ms) :
		      FT_POST(fi_read(ep, rma_at_buf(4), len, g.rw.desc, 0,
				      raddr, g.keys.rw_key, &g.ctx[0]),
			      g.conn.txcq, ft_opts.timeout_ms);
	if (rma_posted(name, ret))
		return -1;
	return rma_wait(name, FI_RMA | (write ? FI_WRITE : FI_READ), len) ?
	       -1 : 0;
}

/* kind 0: fi_atomic, 1: fi_fetch_atomic, 2: fi_compare_atomic */
static ssize_t rma_at_post(int kind, enum fi_op op, enum fi_datatype dt,
			   size_t count, uint64_t raddr)
{
	struct fid_ep *ep = g.conn.ep;
	void *d = g.rw.desc;
	uint64_t key = g.keys.rw_key;

	if (kind == 0)
		return fi_atomic(ep, rma_at_buf(1), count, d, 0, raddr, key,
				 dt, op, &g.ctx[0]);
	if (kind == 1)
		return fi_fetch_atomic(ep, rma_at_buf(1), count, d,
				       rma_at_buf(3), d, 0, raddr, key, dt, op,
				       &g.ctx[0]);
	return fi_compare_atomic(ep, rma_at_buf(1), count, d, rma_at_buf(2),
				 d, rma_at_buf(3), d, 0, raddr, key, dt, op,
				 &g.ctx[0]);
}

/* Whether kind/op/dt is offered: the *valid call and fi_query_atomic
 * must agree. */
static int rma_at_offered(int kind, enum fi_op op, enum fi_datatype dt,
			  const char *name)
{
	struct fi_atomic_attr attr = { 0 };
	uint64_t qflags[] = { 0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC };
	size_t count = 0;
	int v, q;

	v = kind == 0 ? fi_atomicvalid(g.conn.ep, dt, op, &count) :
	    kind == 1 ? fi_fetch_atomicvalid(g.conn.ep, dt, op, &count) :
	    fi_compare_atomicvalid(g.conn.ep, dt, op, &count);
	q = fi_query_atomic(g.fab.domain, dt, op, &attr, qflags[kind]);
	if (v != q || (!v && (count != attr.count || count < AT_N ||
			      attr.size != at_size(dt)))) {
		ft_fail(name, "valid %d (count %zu), query %d (count %zu, "
			"size %zu)", v, count, q, attr.count, attr.size);
		return -1;
	}
	return !v;
}

/* Set the target, run the op on AT_N elements, read the target back:
 * new values and fetched old values against the reference. */
static int rma_at_case(int kind, enum fi_op op, enum fi_datatype dt,
		       const char *name)
{
	static const uint64_t cflags[] = { FI_ATOMIC | FI_WRITE,
					   FI_ATOMIC | FI_READ,
					   FI_ATOMIC | FI_READ };
	size_t size = at_size(dt), i;
	struct at_val a, b, c, want, got;

	for (i = 0; i < AT_N; i++) {
		at_value(dt, 0, (int)i, rma_at_buf(0) + i * size);
		at_value(dt, 1, (int)i, rma_at_buf(1) + i * size);
		at_value(dt, 2, (int)i, rma_at_buf(2) + i * size);
	}
	memset(rma_at_buf(3), 0xa5, 256);
	memset(rma_at_buf(4), 0x5a, 256);
	if (rma_at_xfer(name, true, AT_N * size))
		return -1;
	if (rma_posted(name, FT_POST(rma_at_post(kind, op, dt, AT_N,
						 g.keys.rw_addr + RMA_AT_OFF),
				     g.conn.txcq, ft_opts.timeout_ms)) ||
	    rma_wait(name, cflags[kind], 8) ||
	    rma_at_xfer(name, false, AT_N * size))
		return -1;
	for (i = 0; i < AT_N; i++) {
		a = at_load(dt, rma_at_buf(0) + i * size);
		b = at_load(dt, rma_at_buf(1) + i * size);
		c = at_load(dt, rma_at_buf(2) + i * size);
		want = at_norm(dt, at_ref(op, dt, a, b, c));
		got = at_load(dt, rma_at_buf(4) + i * size);
		if (!at_eq(dt, want, got)) {
			ft_fail(name, "element %zu: target not as the "
				"reference says", i);
			return 1;
		}
		got = at_load(dt, rma_at_buf(3) + i * size);
		if (kind && !at_eq(dt, a, got)) {
			ft_fail(name, "element %zu: fetched value wrong", i);
			return 1;
		}
	}
	return 0;
}

/* Every op x datatype x kind: those offered must work as the reference
 * says; an 8-byte-or-smaller datatype must be offered for every op
 * fi_atomic(3) defines on it (the 16-byte ones are not, on MSG). */
static int rma_at_sweep(void)
{
	static const char *kinds[] = { "atomic", "fetch", "compare" };
	size_t t, tested = 0, wrong = 0;
	char name[64];
	int kind, op, has;

	for (t = 0; t < sizeof(g_types) / sizeof(g_types[0]); t++) {
		for (op = 0; op < FI_ATOMIC_OP_LAST; op++) {
			for (kind = 0; kind < 3; kind++) {
				snprintf(name, sizeof(name),
					 "rma_atomic_%s_op%d_dt%d",
					 kinds[kind], op, (int)g_types[t]);
				has = rma_at_offered(kind, op, g_types[t],
						     name);
				if (has < 0)
					return -1;
				if (!has) {
					if (rma_at_post(kind, op, g_types[t],
							1, g.keys.rw_addr +
							RMA_AT_OFF) !=
					    -FI_EOPNOTSUPP) {
						ft_fail(name, "refused by "
							"*valid, taken by "
							"the call");
						return -1;
					}
					continue;
				}
				if (at_size(g_types[t]) > 8)
					wrong++;
				tested++;
				if (rma_at_case(kind, op, g_types[t], name))
					return -1;
			}
		}
	}
	ft_check(tested >= 200 && !wrong, "rma_atomic_sweep",
		 "%zu triples checked, %zu on 16-byte types", tested, wrong);
	return 0;
}

/* Emulated atomics in flight together on one 8-byte word (its two 32-bit
 * halves): each one's compare-and-swap races the others' and must retry
 * until it lands; the totals must be exact. */
static int rma_at_hammer(void)
{
	int32_t *init = (int32_t *)rma_at_buf(0), *op = (int32_t *)rma_at_buf(1);
	int32_t *back = (int32_t *)rma_at_buf(4);
	uint64_t raddr = g.keys.rw_addr + RMA_AT_OFF;
	struct fi_cq_data_entry comp;
	int i, posted = 0, done = 0;
	ssize_t ret;

	init[0] = 0;
	init[1] = 1000;
	if (rma_at_xfer("rma_atomic_hammer_init", true, 8))
		return -1;
	for (i = 0; i < RMA_AT_HAMMER; i++) {
		op[0] = i + 1;	/* the operand is copied by the call */
		ret = FT_POST(fi_atomic(g.conn.ep, op, 1, g.rw.desc, 0,
					raddr + (i & 1) * 4, g.keys.rw_key,
					FI_INT32, (i & 1) ? FI_MIN : FI_SUM,
					&g.ctx[0]),
			      g.conn.txcq, ft_opts.timeout_ms);
		if (rma_posted("rma_atomic_hammer", ret))
			return -1;
		posted++;
	}
	while (done < posted) {
		ret = ft_cq_expect(g.conn.txcq, &g.ctx[0], &comp,
				   ft_opts.timeout_ms);
		if (ret) {
			ft_fail("rma_atomic_hammer", "%d of %d completions: "
				"%s", done, posted, fi_strerror((int)-ret));
			return -1;
		}
		done++;
	}
	ft_check(ft_cq_empty(g.conn.txcq), "rma_atomic_hammer_once",
		 "more completions than operations");
	if (rma_at_xfer("rma_atomic_hammer_read", false, 8))
		return -1;
	/* even i: sum of the odd operands 1,3,..; odd i: min(1000, 2,4,..) */
	ft_check(back[0] == (RMA_AT_HAMMER / 2) * (RMA_AT_HAMMER / 2) &&
		 back[1] == 2, "rma_atomic_hammer",
		 "sum %d (want %d), min %d (want 2)", back[0],
		 (RMA_AT_HAMMER / 2) * (RMA_AT_HAMMER / 2), back[1]);
	return 0;
}

/* Arguments the emulation refuses without touching the wire. */
static void rma_at_args(void)
{
	uint64_t raddr = g.keys.rw_addr + RMA_AT_OFF;
	size_t count = 0;

	ft_check(rma_at_post(0, FI_MIN, FI_INT32, 1, raddr + 2) ==
		 -FI_EINVAL, "rma_atomic_misaligned",
		 "a 4-byte element at offset 2 taken");
	fi_atomicvalid(g.conn.ep, FI_INT32, FI_MIN, &count);
	ft_check(count && rma_at_post(0, FI_MIN, FI_INT32, count + 1,
				      raddr) == -FI_EINVAL,
		 "rma_atomic_emulated_count", "count beyond the valid one "
		 "taken (valid %zu)", count);
	ft_check(rma_at_post(0, FI_SUM, FI_INT128, 1, raddr) ==
		 -FI_EOPNOTSUPP && rma_at_post(0, FI_SUM, FI_LONG_DOUBLE, 1,
					       raddr) == -FI_EOPNOTSUPP,
		 "rma_atomic_16_byte", "a 16-byte datatype taken");
}

/* ---- client: FI_FENCE -------------------------------------------------- */

/* A read into a buffer and, right behind it, a fenced write of that
 * buffer to another place: the write must carry what the read brought
 * (unfenced, the NIC sends the buffer's old bytes while the read's answer
 * is on its way: rxe does). */
static int rma_fence(void)
{
	const char *name = "rma_fence";
	size_t len = 65536, off = 512 * 1024;
	uint8_t *buf = (uint8_t *)g.rw.ptr + off;
	struct iovec iov = { buf, len };
	void *desc = g.rw.desc;
	struct fi_rma_iov rma = {
		.addr = g.keys.rw_addr + off, .len = len, .key = g.keys.rw_key,
	};
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1,
		.rma_iov = &rma, .rma_iov_count = 1, .context = &g.ctx[1],
	};
	struct fi_cq_data_entry comp;
	ssize_t ret;

	if (!(g.fab.info->caps & FI_FENCE)) {
		ft_skip(name, "no FI_FENCE");
		return 0;
	}
	if (g.rw.len < off + len || rma_cmd(RMA_FILL, name, 0, len, 0x900) ||
	    rma_cmd(RMA_FILL, name, off, len, 0x902)) {
		ft_fail(name, "setup");
		return -1;
	}
	ft_fill(buf, len, 0x901);	/* what an early write would carry */
	ret = FT_POST(fi_read(g.conn.ep, buf, len, desc, 0, g.keys.rw_addr,
			      g.keys.rw_key, &g.ctx[0]),
		      g.conn.txcq, ft_opts.timeout_ms);
	if (!ret)
		ret = FT_POST(fi_writemsg(g.conn.ep, &msg,
					  FI_FENCE | FI_COMPLETION),
			      g.conn.txcq, ft_opts.timeout_ms);
	if (rma_posted(name, ret) || rma_wait(name, FI_RMA | FI_READ, len))
		return -1;
	ret = ft_cq_expect(g.conn.txcq, &g.ctx[1], &comp, ft_timeout_for(len));
	if (ret) {
		ft_fail(name, "write completion: %s", fi_strerror((int)-ret));
		return -1;
	}
	if (rma_cmd(RMA_VERIFY, name, off, len, 0x900))
		ft_fail(name, "the fenced write did not carry what the read "
			"brought");
	else
		ft_ok(name);
	return 0;
}

/* ---- client: access errors, one connection each ----------------------- */

/* The write must end in an error completion for our context; the QP is
 * dead afterwards, so the caller moves to a new connection. */
static void rma_error_case(const char *name, uint64_t addr, uint64_t key,
			   size_t len)
{
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_data_entry comp;
	ssize_t ret;

	ft_fill(g.rw.ptr, len, 0x600);
	ret = FT_POST(fi_write(g.conn.ep, g.rw.ptr, len, g.rw.desc, 0, addr,
			       key, &g.ctx[0]), g.conn.txcq,
		      ft_opts.timeout_ms);
	if (ret) {
		/* refusing at post time is an acceptable answer too */
		ft_check(ret != -FI_EAGAIN, name, "post: %s",
			 fi_strerror((int)-ret));
		return;
	}
	ret = ft_cq_wait(g.conn.txcq, &comp, &err, 6 * ft_opts.timeout_ms);
	if (!ft_check(ret == -FI_EAVAIL && err.err, name,
		      "want an error completion, got %s",
		      ret ? fi_strerror((int)-ret) : "success"))
		return;
	ft_info("%s: err %d (%s), prov_errno %d: %s", name, err.err,
		fi_strerror(err.err), err.prov_errno,
		ft_cq_errstr(g.conn.txcq, &err));
	ft_check(err.op_context == &g.ctx[0], "rma_error_context",
		 "%s: error entry context %p, want %p", name, err.op_context,
		 (void *)&g.ctx[0]);
}

static int rma_new_conn(void)
{
	if (rma_cmd(RMA_NEW_CONN, NULL, 0, 0, 0))
		return -1;
	ft_conn_close(&g.conn);
	return rma_client_connect();
}

static void rma_errors(void)
{
	if (rma_new_conn())
		return;
	rma_error_case("rma_write_bad_key", g.keys.rw_addr,
		       g.keys.rw_key ^ 0x5a5a5a5aULL, 64);
	if (rma_new_conn())
		return;
	rma_error_case("rma_write_out_of_range",
		       g.keys.rw_addr + g.keys.rw_len + 4096, g.keys.rw_key,
		       64);
	if (rma_new_conn())
		return;
	rma_error_case("rma_write_read_only", g.keys.ro_addr, g.keys.ro_key,
		       64);
}

static void rma_client(void)
{
	if (rma_client_connect())
		return;
	if (rma_sweep() || rma_iov() || rma_inject_and_data() ||
	    rma_atomics() || rma_at_sweep() || rma_at_hammer() ||
	    rma_fence())
		return;
	rma_at_args();
	rma_errors();
	rma_cmd(RMA_DONE, NULL, 0, 0, 0);
}

/* ---- setup ------------------------------------------------------------- */

static int rma_bufs(void)
{
	size_t len = g.max > RMA_MIN_LEN ? g.max : RMA_MIN_LEN;
	struct fid_domain *d = g.fab.domain;
	int ret;

	if (!ft_is_server())
		return ft_buf_alloc(d, len, FI_READ | FI_WRITE, &g.rw);
	ret = ft_buf_alloc(d, len, FI_REMOTE_READ | FI_REMOTE_WRITE, &g.rw);
	if (!ret)
		ret = ft_buf_alloc(d, RMA_RO_LEN, FI_REMOTE_READ, &g.ro);
	if (!ret)
		ret = ft_buf_alloc(d, 4096, FI_RECV, &g.rx);
	return ret;
}

static int rma_setup(void)
{
	struct fi_info *hints = ft_hints_alloc(FI_MSG | FI_RMA | FI_ATOMIC |
					       FI_FENCE),
		       *info = NULL;
	size_t max_msg;
	int ret;

	ret = ft_getinfo(hints, &info);
	if (ret == -FI_ENODATA) {	/* the fence case skips */
		hints->caps &= ~FI_FENCE;
		ret = ft_getinfo(hints, &info);
	}
	fi_freeinfo(hints);
	if (!ret)
		ret = ft_fab_open(&g.fab, info);
	if (!ret && ft_is_server()) {
		ret = ft_oob_listen();
		ret = ret ? ret : ft_listen(&g.fab);
		ret = ret ? ret : ft_oob_accept();
	} else if (!ret) {
		ret = ft_oob_connect();
	}
	if (!ret) {
		max_msg = info->ep_attr->max_msg_size;
		g.max = ft_opts.all_sizes ? ft_opts.max_size : ft_opts.size;
		g.max = g.max < max_msg ? g.max : max_msg;
		ret = rma_bufs();
	}
	return ft_check(!ret, "setup", "%s", fi_strerror(-ret)) ? 0 : -1;
}

int main(int argc, char **argv)
{
	ft_parse_opts(argc, argv, "RMA conformance.", true);
	if (!ft_opts.size_set)
		ft_opts.all_sizes = true;
	if (!rma_setup()) {
		if (ft_is_server())
			rma_server();
		else
			rma_client();
	}
	ft_conn_close(&g.conn);
	ft_buf_free(&g.rw);
	ft_buf_free(&g.ro);
	ft_buf_free(&g.rx);
	ft_oob_close();
	ft_fab_close(&g.fab);
	return ft_summary();
}
