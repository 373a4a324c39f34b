// SPDX-License-Identifier: MIT
/* fi_rivet_rdm_rma, the client's second half: read-after-write order,
 * inject, remote CQ data, delivery complete, many writes in flight,
 * counters, bad arguments, and access errors followed by reconnection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi_rivet_rdm_rma.h"

/* A write and a read of the same range posted back to back: with
 * FI_ORDER_RAW the read sees the write. */
int rr_raw_order(void)
{
	const char *name = "rdm_rma_read_after_write";
	size_t len = 100000, half = g_rr.rw.len / 2;
	uint8_t *dst = (uint8_t *)g_rr.rw.ptr + half;
	ssize_t ret, bad;

	if (!(g_rr.fab.info->tx_attr->msg_order & FI_ORDER_RAW)) {
		ft_skip(name, "no FI_ORDER_RAW");
		return 0;
	}
	ft_fill(g_rr.rw.ptr, len, 0x800);
	memset(dst, 0, len);
	ret = FT_RDM_POST(fi_write(g_rr.ep, g_rr.rw.ptr, len, g_rr.rw.desc,
				   g_rr.peer, g_rr.keys.rw_addr,
				   g_rr.keys.rw_key, &g_rr.ctx[0]));
	if (!ret)
		ret = FT_RDM_POST(fi_read(g_rr.ep, dst, len, g_rr.rw.desc,
					  g_rr.peer, g_rr.keys.rw_addr,
					  g_rr.keys.rw_key, &g_rr.ctx[1]));
	if (rr_posted(name, ret) ||
	    rr_wait(name, &g_rr.ctx[0], FI_RMA | FI_WRITE, len) ||
	    rr_wait(name, &g_rr.ctx[1], FI_RMA | FI_READ, len))
		return -1;
	bad = ft_verify(dst, len, 0x800);
	if (bad >= 0)
		ft_fail(name, "read saw old data at byte %zd", bad);
	rr_result(name, bad >= 0);
	return 0;
}

/*
 * FI_FENCE: a read into a buffer and, posted right behind it, a fenced
 * write (or send) of that buffer: the write must carry what the read
 * brought.  Unfenced, the NIC would send the buffer's old bytes while the
 * read's answer is still on its way (rxe does).
 */
int rr_fence(void)
{
	const char *name = "rdm_rma_fence";
	size_t len = 65536, half = g_rr.rw.len / 2;
	uint8_t *buf = (uint8_t *)g_rr.rw.ptr + half;
	struct iovec iov = { buf, len };
	void *desc = g_rr.rw.desc;
	struct fi_rma_iov rma = {
		.addr = g_rr.keys.rw_addr + half, .len = len,
		.key = g_rr.keys.rw_key,
	};
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1,
		.addr = g_rr.peer, .rma_iov = &rma, .rma_iov_count = 1,
		.context = &g_rr.ctx[1],
	};
	ssize_t ret;

	if (!(g_rr.fab.info->caps & FI_FENCE)) {
		ft_skip(name, "no FI_FENCE");
		return 0;
	}
	if (half < len || rr_cmd(RR_FILL, name, 0, len, 0x900, 0) ||
	    rr_cmd(RR_FILL, name, half, len, 0x902, 0)) {
		ft_fail(name, "setup");
		return -1;
	}
	ft_fill(buf, len, 0x901);	/* what an early write would carry */
	ret = FT_RDM_POST(fi_read(g_rr.ep, buf, len, desc, g_rr.peer,
				  g_rr.keys.rw_addr, g_rr.keys.rw_key,
				  &g_rr.ctx[0]));
	if (!ret)
		ret = FT_RDM_POST(fi_writemsg(g_rr.ep, &msg,
					      FI_FENCE | FI_COMPLETION));
	if (rr_posted(name, ret) ||
	    rr_wait(name, &g_rr.ctx[0], FI_RMA | FI_READ, len) ||
	    rr_wait(name, &g_rr.ctx[1], FI_RMA | FI_WRITE, len))
		return -1;
	/* the target's second range now holds the first one's bytes */
	if (rr_cmd(RR_VERIFY, name, half, len, 0x900, 0))
		ft_fail(name, "the fenced write did not carry what the read "
			"brought");
	else
		ft_ok(name);
	return 0;
}

/* ---- client: inject, remote CQ data, delivery complete ---------------- */

/* An inject write has no completion: a read of the same range, ordered
 * after it, tells us it has landed and must see its data. */
static int rr_inject_case(const char *name, size_t len)
{
	uint32_t seed = 0x400 + len;
	size_t half = g_rr.rw.len / 2;
	ssize_t ret, bad;

	ft_fill(g_rr.rw.ptr, len, seed);
	ret = FT_RDM_POST(fi_inject_write(g_rr.ep, g_rr.rw.ptr, len, g_rr.peer,
					  g_rr.keys.rw_addr, g_rr.keys.rw_key));
	if (rr_posted(name, ret))
		return -1;
	g_rr.writes++;
	memset(g_rr.rw.ptr, 0xee, len);
	ret = FT_RDM_POST(fi_read(g_rr.ep, (uint8_t *)g_rr.rw.ptr + half, len,
				  g_rr.rw.desc, g_rr.peer, g_rr.keys.rw_addr,
				  g_rr.keys.rw_key, &g_rr.ctx[0]));
	if (rr_posted(name, ret) ||
	    rr_wait(name, &g_rr.ctx[0], FI_RMA | FI_READ, len))
		return -1;
	bad = ft_verify((uint8_t *)g_rr.rw.ptr + half, len, seed);
	if (bad >= 0)
		ft_fail(name, "read after inject saw old data at byte %zd",
			bad);
	ret = rr_cmd(RR_VERIFY, name, 0, len, seed, 0);
	return ret || bad >= 0;
}

int rr_inject(void)
{
	size_t inj = g_rr.fab.info->tx_attr->inject_size;
	size_t lens[] = { 1, 64, inj };
	struct ft_comp comp;
	char name[48];
	int i, ret;

	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "rdm_rma_inject_write_%zu",
			 lens[i]);
		ret = rr_inject_case(name, lens[i]);
		if (ret < 0)
			return ret;
		rr_result(name, ret);
	}
	ret = ft_rdm_wait(g_rr.cq, NULL, &comp, 200);
	ft_check(ret == -FI_ETIMEDOUT, "rdm_rma_inject_no_completion",
		 "inject wrote a completion (flags 0x%llx, %s)",
		 (unsigned long long)comp.flags, ft_comp_str(&comp));
	ret = FT_RDM_POST(fi_inject_write(g_rr.ep, g_rr.rw.ptr, inj + 1,
					  g_rr.peer, g_rr.keys.rw_addr,
					  g_rr.keys.rw_key));
	ft_check(ret == -FI_EINVAL, "rdm_rma_inject_too_big",
		 "inject of inject_size + 1: %s, want -FI_EINVAL",
		 fi_strerror((int)-ret));
	return 0;
}

static int rr_writedata_case(const char *name, bool inject, size_t len,
			     uint64_t data)
{
	uint32_t seed = 0x500 + len + inject;
	size_t off = 4096;
	ssize_t ret = 0;

	ft_fill(g_rr.rw.ptr, len, seed);
	if (inject)
		ret = FT_RDM_POST(fi_inject_writedata(g_rr.ep, g_rr.rw.ptr, len,
						      data, g_rr.peer,
						      g_rr.keys.rw_addr + off,
						      g_rr.keys.rw_key));
	else
		ret = FT_RDM_POST(fi_writedata(g_rr.ep, g_rr.rw.ptr, len,
					       g_rr.rw.desc, data, g_rr.peer,
					       g_rr.keys.rw_addr + off,
					       g_rr.keys.rw_key, &g_rr.ctx[0]));
	if (rr_posted(name, ret))
		return -1;
	if (inject) {
		memset(g_rr.rw.ptr, 0xee, len);
		g_rr.writes++;
	} else if ((ret = rr_wait(name, &g_rr.ctx[0], FI_RMA | FI_WRITE,
				  len)) < 0) {
		return -1;
	}
	return rr_cmd(RR_EXPECT_DATA, name, off, len, seed, data) || ret;
}

int rr_writedata(void)
{
	size_t size = g_rr.fab.info->domain_attr->cq_data_size;
	uint64_t mask = size >= 8 ? ~0ULL : (1ULL << (8 * size)) - 1;
	int ret;

	if (!size) {
		ft_fail("rdm_rma_writedata", "cq_data_size is 0");
		return 0;
	}
	ret = rr_writedata_case("rdm_rma_writedata", false, 10000,
				RR_CQ_DATA & mask);
	if (ret < 0)
		return ret;
	rr_result("rdm_rma_writedata", ret);
	ret = rr_writedata_case("rdm_rma_writedata_1m", false, 1 << 20,
				(RR_CQ_DATA + 1) & mask);
	if (ret < 0)
		return ret;
	rr_result("rdm_rma_writedata_1m", ret);
	ret = rr_writedata_case("rdm_rma_inject_writedata", true, 64,
				(RR_CQ_DATA + 2) & mask);
	rr_result("rdm_rma_inject_writedata", ret);
	return ret < 0 ? ret : 0;
}

/* FI_DELIVERY_COMPLETE: the completion means the data is in the target's
 * memory; the server checks it without any further traffic. */
int rr_delivery(void)
{
	static const size_t lens[] = { 64, 1 << 20 };
	struct fi_rma_iov rma = { .addr = g_rr.keys.rw_addr,
				  .key = g_rr.keys.rw_key };
	struct iovec iov;
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &g_rr.rw.desc,
				  .iov_count = 1, .addr = g_rr.peer,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = &g_rr.ctx[0] };
	char name[48];
	ssize_t ret;
	size_t i;

	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "rdm_rma_delivery_complete_%zu",
			 lens[i]);
		iov = (struct iovec){ g_rr.rw.ptr, lens[i] };
		rma.len = lens[i];
		ft_fill(g_rr.rw.ptr, lens[i], 0x900 + i);
		ret = FT_RDM_POST(fi_writemsg(g_rr.ep, &msg, FI_COMPLETION |
					      FI_DELIVERY_COMPLETE));
		if (rr_posted(name, ret))
			return -1;
		ret = rr_wait(name, &g_rr.ctx[0], FI_RMA | FI_WRITE, lens[i]);
		if (ret < 0)
			return -1;
		ret = rr_cmd(RR_VERIFY, name, 0, lens[i], 0x900 + i, 0) || ret;
		rr_result(name, ret);
	}
	return 0;
}

/* Many writes in flight at once (more than tx_size, and for delivery
 * complete more than rivet's internal budget): posts that find no room
 * get -FI_EAGAIN and are retried; every one completes, all data lands. */
static int rr_window(const char *name, size_t n, uint64_t flags)
{
	size_t piece = 1024, i;
	struct fi_rma_iov rma = { .len = piece, .key = g_rr.keys.rw_key };
	struct iovec iov = { .iov_len = piece };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &g_rr.rw.desc,
				  .iov_count = 1, .addr = g_rr.peer,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = &g_rr.ctx[2] };
	ssize_t ret;

	ft_fill(g_rr.rw.ptr, n * piece, 0xa00 + n);
	for (i = 0; i < n; i++) {
		iov.iov_base = (uint8_t *)g_rr.rw.ptr + i * piece;
		rma.addr = g_rr.keys.rw_addr + i * piece;
		ret = FT_RDM_POST(fi_writemsg(g_rr.ep, &msg,
					      FI_COMPLETION | flags));
		if (rr_posted(name, ret))
			return -1;
	}
	for (i = 0; i < n; i++)
		if (rr_wait(name, &g_rr.ctx[2], FI_RMA | FI_WRITE, piece))
			return -1;
	ret = rr_cmd(RR_VERIFY, name, 0, n * piece, 0xa00 + n, 0);
	rr_result(name, (int)ret);
	return ret < 0 ? -1 : 0;
}

int rr_windows(void)
{
	if (rr_window("rdm_rma_write_window", 1000, 0))
		return -1;
	return rr_window("rdm_rma_write_window_delivery", 400,
			 FI_DELIVERY_COMPLETE);
}

/* ---- client: counters, bad arguments ---------------------------------- */

void rr_counters(void)
{
	uint64_t r = fi_cntr_read(g_rr.rcntr), w = fi_cntr_read(g_rr.wcntr);

	ft_check(r == g_rr.reads && w == g_rr.writes &&
		 !fi_cntr_readerr(g_rr.rcntr) && !fi_cntr_readerr(g_rr.wcntr),
		 "rdm_rma_counters",
		 "read counter %llu (want %llu), write counter %llu (want "
		 "%llu), errors %llu/%llu", (unsigned long long)r,
		 (unsigned long long)g_rr.reads, (unsigned long long)w,
		 (unsigned long long)g_rr.writes,
		 (unsigned long long)fi_cntr_readerr(g_rr.rcntr),
		 (unsigned long long)fi_cntr_readerr(g_rr.wcntr));
}

void rr_bad_args(void)
{
	struct fi_rma_iov rma[2] = {
		{ g_rr.keys.rw_addr, 64, g_rr.keys.rw_key },
		{ g_rr.keys.rw_addr + 64, 64, g_rr.keys.rw_key },
	};
	struct iovec iov = { g_rr.rw.ptr, 64 };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &g_rr.rw.desc,
				  .iov_count = 1, .addr = g_rr.peer,
				  .rma_iov = rma, .rma_iov_count = 2,
				  .context = &g_rr.ctx[0] };
	ssize_t a, b, c;

	a = fi_writemsg(g_rr.ep, &msg, 0);
	msg.rma_iov_count = 1;
	b = fi_readmsg(g_rr.ep, &msg, FI_REMOTE_CQ_DATA);
	c = fi_readmsg(g_rr.ep, &msg, FI_INJECT);
	ft_check(a == -FI_EINVAL && b == -FI_EINVAL && c == -FI_EINVAL,
		 "rdm_rma_bad_args", "rma_iov_count 2: %zd, read with CQ "
		 "data: %zd, inject read: %zd; want -FI_EINVAL each", a, b, c);
}

/* ---- client: access errors -------------------------------------------- */

/* The operation must end in an error completion for our context, with a
 * provider error text; the next write to the peer reconnects. */
static void rr_error_case(const char *name, bool read, uint64_t addr,
			  uint64_t key, size_t len, bool inject_after)
{
	struct ft_comp comp;
	char ok_name[64];
	ssize_t ret;

	ft_fill(g_rr.rw.ptr, len, 0x600);
	if (read)
		ret = FT_RDM_POST(fi_read(g_rr.ep, g_rr.rw.ptr, len,
					  g_rr.rw.desc, g_rr.peer, addr, key,
					  &g_rr.ctx[0]));
	else
		ret = FT_RDM_POST(fi_write(g_rr.ep, g_rr.rw.ptr, len,
					   g_rr.rw.desc, g_rr.peer, addr, key,
					   &g_rr.ctx[0]));
	if (rr_posted(name, ret))
		return;
	ret = ft_rdm_wait(g_rr.cq, &g_rr.ctx[0], &comp,
			  3 * ft_opts.timeout_ms);
	if (!ft_check(!ret && comp.err && comp.errstr[0], name,
		      "want an error completion with text, got %s",
		      ret ? fi_strerror((int)-ret) : ft_comp_str(&comp)))
		return;
	ft_info("%s: %s", name, ft_comp_str(&comp));
	snprintf(ok_name, sizeof(ok_name), "%s_then_%s", name,
		 inject_after ? "inject_reconnect" : "reconnect");
	/* an inject queued while the connection comes up: its buffer is
	 * overwritten at once */
	if (inject_after)
		rr_result(ok_name, rr_inject_case(ok_name, 200));
	else
		rr_result(ok_name, rr_write_one(ok_name, g_rr.rw.ptr,
						g_rr.rw.desc, 64, 4096,
						0x680));
}

void rr_errors(void)
{
	uint64_t rw_end = g_rr.keys.rw_addr + g_rr.keys.rw_len;
	uint64_t werr = fi_cntr_readerr(g_rr.wcntr);

	rr_error_case("rdm_rma_write_bad_key", false, g_rr.keys.rw_addr,
		      g_rr.keys.rw_key ^ 0x5a5a5a00ULL, 64, false);
	rr_error_case("rdm_rma_write_out_of_range", false, rw_end - 32,
		      g_rr.keys.rw_key, 64, false);
	rr_error_case("rdm_rma_write_read_only", false, g_rr.keys.ro_addr,
		      g_rr.keys.ro_key, 64, false);
	rr_error_case("rdm_rma_read_out_of_range", true, rw_end + 4096,
		      g_rr.keys.rw_key, 64, true);
	ft_check(fi_cntr_readerr(g_rr.wcntr) - werr == 3 &&
		 fi_cntr_readerr(g_rr.rcntr) == 1, "rdm_rma_error_counters",
		 "write errors %llu (want 3), read errors %llu (want 1)",
		 (unsigned long long)(fi_cntr_readerr(g_rr.wcntr) - werr),
		 (unsigned long long)fi_cntr_readerr(g_rr.rcntr));
}
