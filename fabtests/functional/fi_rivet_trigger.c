// SPDX-License-Identifier: MIT
/* Triggered operations (fi_trigger(3)) and endpoint aliases
 * (fi_endpoint(3) fi_ep_alias), one process, -e rdm: endpoints A (with
 * FI_TRIGGER) and B, one AV, a trigger counter moved by the application.
 * - getinfo gives FI_TRIGGER when asked;
 * - a tagged send through an alias with FI_TRIGGER waits until its
 *   counter reaches the threshold, then arrives;
 * - several start in threshold order, equal thresholds in submission order;
 * - an RMA write with FI_TRIGGER (fi_writemsg) starts once A's own
 *   counter counted an earlier write, as the fabtests' fi_rdm_rma_trigger;
 *   fi_cntr_wait on a counter without a wait object;
 * - a triggered atomic;
 * - one that fails when it starts: an error completion with its context;
 * - bad input: alias flags, FI_TRIGGER without the capability, triggers
 *   that are not thresholds or have no counter; close order (an endpoint
 *   with aliases, a counter with operations waiting on it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "common/ft_rivet.h"

#define TR_LEN 64
#define TR_QUIET_MS 300		/* nothing may arrive meanwhile */

static struct {
	struct ft_fab fab;
	struct fi_info *info, *plain_info;
	struct fid_av *av;
	struct fid_ep *a, *b, *alias, *plain;
	struct fid_cq *atx, *arx, *btx, *brx;
	struct fid_cntr *trig;		/* the application moves it */
	struct fid_cntr *acntr;		/* A's sends and writes */
	fi_addr_t aaddr, baddr;
	struct ft_buf tx, rx;
	struct fi_triggered_context tctx[8];
	struct fi_context ctx[8];
} g;

static struct fi_triggered_context *tr_ctx(int i, struct fid_cntr *cntr,
					   size_t threshold)
{
	struct fi_triggered_context *t = &g.tctx[i];

	memset(t, 0, sizeof(*t));
	t->event_type = FI_TRIGGER_THRESHOLD;
	t->trigger.threshold.cntr = cntr;
	t->trigger.threshold.threshold = threshold;
	return t;
}

/* Completions read off A's transmit CQ while waiting for another: kept
 * for the wait that wants them (with FI_PROGRESS_AUTO they come in any
 * order). */
static struct fi_cq_tagged_entry g_atx_kept[16];
static size_t g_natx_kept;

static bool tr_kept(struct fid_cq *cq, struct fi_cq_tagged_entry *e)
{
	if (cq != g.atx || !g_natx_kept)
		return false;
	*e = g_atx_kept[0];
	memmove(g_atx_kept, g_atx_kept + 1,
		--g_natx_kept * sizeof(g_atx_kept[0]));
	return true;
}

/* Reads every CQ until cq gives a completion (NULL: for ms, then 0 if
 * nothing came on brx).  Error entries come back as -err. */
static int tr_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		   int ms)
{
	struct fid_cq *all[] = { g.atx, g.arx, g.btx, g.brx };
	struct fi_cq_tagged_entry t;
	struct fi_cq_err_entry err;
	uint64_t end = ft_now_ms() + (uint64_t)(ms ? ms : ft_opts.timeout_ms);
	ssize_t ret;
	size_t i;

	if (cq && tr_kept(cq, e))
		return 0;
	do {
		for (i = 0; i < 4; i++) {
			if (all[i] == cq)
				continue;
			if (all[i] == g.brx && !cq &&
			    fi_cq_read(g.brx, &t, 1) == 1)
				return -FI_EOTHER;	/* came too early */
			if (all[i] == g.brx || fi_cq_read(all[i], &t, 1) != 1)
				continue;
			if (all[i] == g.atx && g_natx_kept < 16)
				g_atx_kept[g_natx_kept++] = t;
		}
		if (!cq)
			continue;
		ret = fi_cq_read(cq, e, 1);
		if (ret == 1)
			return 0;
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			e->op_context = err.op_context;
			return -err.err;
		}
		if (ret != -FI_EAGAIN)
			return (int)ret;
	} while (ft_now_ms() < end);
	return cq ? -FI_ETIMEDOUT : 0;
}

/* Between cases: A's transmit completions of the case before are read
 * and dropped. */
static void tr_settle(void)
{
	struct fi_cq_tagged_entry t;
	uint64_t end = ft_now_ms() + 200;

	while (ft_now_ms() < end)
		(void)fi_cq_read(g.atx, &t, 1);
	g_natx_kept = 0;
}

static int tr_cq_open(struct fid_cq **cq)
{
	struct fi_cq_attr attr = { .size = 64,
				   .format = FI_CQ_FORMAT_TAGGED,
				   .wait_obj = FI_WAIT_NONE };

	return fi_cq_open(g.fab.domain, &attr, cq, NULL);
}

/* An endpoint with its CQs, in the AV (info NULL: *ep is open). */
static int tr_ep(struct fi_info *info, struct fid_ep **ep,
		 struct fid_cq **txcq, struct fid_cq **rxcq, fi_addr_t *addr)
{
	uint8_t name[64];
	size_t len = sizeof(name);
	int ret = info ? fi_endpoint(g.fab.domain, info, ep, NULL) : 0;

	if (!ret)
		ret = fi_ep_bind(*ep, &g.av->fid, 0);
	if (!ret && txcq)
		ret = tr_cq_open(txcq);
	if (!ret && txcq)
		ret = fi_ep_bind(*ep, &(*txcq)->fid, FI_TRANSMIT);
	if (!ret && rxcq)
		ret = tr_cq_open(rxcq);
	if (!ret && rxcq)
		ret = fi_ep_bind(*ep, &(*rxcq)->fid, FI_RECV);
	if (!ret)
		ret = fi_enable(*ep);
	if (!ret && addr)
		ret = fi_getname(&(*ep)->fid, name, &len);
	if (!ret && addr && fi_av_insert(g.av, name, 1, addr, 0, NULL) != 1)
		ret = -FI_EINVAL;
	return ret;
}

static int tr_setup(void)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cntr_attr cattr = { .events = FI_CNTR_EVENTS_COMP,
				      .wait_obj = FI_WAIT_NONE };
	int ret;

	ret = fi_av_open(g.fab.domain, &av_attr, &g.av, NULL);
	if (!ret)
		ret = fi_cntr_open(g.fab.domain, &cattr, &g.trig, NULL);
	if (!ret)
		ret = fi_cntr_open(g.fab.domain, &cattr, &g.acntr, NULL);
	if (!ret)
		ret = ft_buf_alloc(g.fab.domain, 16 * TR_LEN,
				   FI_RECV | FI_REMOTE_WRITE | FI_REMOTE_READ,
				   &g.rx);
	if (!ret)
		ret = ft_buf_alloc(g.fab.domain, 16 * TR_LEN,
				   FI_SEND | FI_WRITE | FI_READ, &g.tx);
	/* A: its sends and writes counted */
	if (!ret)
		ret = fi_endpoint(g.fab.domain, g.info, &g.a, NULL);
	if (!ret)
		ret = fi_ep_bind(g.a, &g.acntr->fid, FI_SEND | FI_WRITE);
	if (!ret)
		ret = tr_ep(NULL, &g.a, &g.atx, &g.arx, &g.aaddr);
	if (!ret)
		ret = tr_ep(g.info, &g.b, &g.btx, &g.brx, &g.baddr);
	return ret;
}

static bool g_auto;	/* -A: FI_PROGRESS_AUTO data progress */

static void tr_opt(int op, const char *arg)
{
	(void)arg;
	if (op == 'A')
		g_auto = true;
}

static void tr_getinfo(struct fi_info *hints)
{
	int ret;

	if (g_auto)	/* triggers started from the progress threads too */
		hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	ret = ft_getinfo(hints, &g.info);

	ft_check(!ret && (g.info->caps & FI_TRIGGER) &&
		 (g.info->tx_attr->caps & FI_TRIGGER), "getinfo_trigger",
		 "%d", ret);
	hints->caps &= ~(uint64_t)FI_TRIGGER;
	ret = ft_getinfo(hints, &g.plain_info);
	ft_check(!ret && !(g.plain_info->caps & FI_TRIGGER),
		 "getinfo_no_trigger_unasked", "%d", ret);
	if (ret)
		g.plain_info = NULL;
	/* every endpoint on an address of the domain's own choosing */
	for (struct fi_info *i = g.info; i; i = i == g.info ?
	     g.plain_info : NULL) {
		free(i->src_addr);
		i->src_addr = NULL;
		i->src_addrlen = 0;
	}
}

static void tr_bad_input(void)
{
	struct fid_ep *al;
	struct fi_triggered_context t;
	struct fi_msg_tagged msg;
	struct iovec iov = { .iov_base = g.tx.ptr, .iov_len = TR_LEN };
	int ret;

	ret = fi_ep_alias(g.a, &al, FI_TRANSMIT | FI_RECV);
	ft_check(ret == -FI_EINVAL, "alias_both_directions", "%d", ret);
	ret = fi_ep_alias(g.plain, &al, FI_TRANSMIT | FI_TRIGGER);
	ft_check(ret == -FI_EINVAL, "alias_trigger_without_cap", "%d", ret);
	memset(&t, 0, sizeof(t));
	t.event_type = FI_TRIGGER_THRESHOLD;
	t.trigger.threshold.cntr = g.trig;
	msg = (struct fi_msg_tagged) { .msg_iov = &iov, .desc = &g.tx.desc,
				       .iov_count = 1, .addr = g.aaddr,
				       .tag = 1, .context = &t };
	ret = (int)fi_tsendmsg(g.plain, &msg, FI_TRIGGER);
	ft_check(ret == -FI_EINVAL, "trigger_without_cap", "%d", ret);
	t.event_type = FI_TRIGGER_XPU;
	ret = (int)fi_tsendmsg(g.a, &msg, FI_TRIGGER);
	ft_check(ret == -FI_ENOSYS, "trigger_xpu", "%d", ret);
	t.event_type = FI_TRIGGER_THRESHOLD;
	t.trigger.threshold.cntr = NULL;
	ret = (int)fi_tsendmsg(g.a, &msg, FI_TRIGGER);
	ft_check(ret == -FI_EINVAL, "trigger_no_cntr", "%d", ret);
	ret = fi_close(&g.a->fid);
	ft_check(ret == -FI_EBUSY, "close_ep_with_alias", "%d", ret);
}

/* A tagged send through the alias, threshold 2 on the trigger counter. */
static void tr_threshold(void)
{
	struct fi_cq_tagged_entry e;
	int ret;

	ret = (int)fi_trecv(g.b, g.rx.ptr, TR_LEN, g.rx.desc, FI_ADDR_UNSPEC,
			    7, 0, &g.ctx[0]);
	ft_fill(g.tx.ptr, TR_LEN, 7);
	if (!ret)
		ret = (int)fi_tsend(g.alias, g.tx.ptr, TR_LEN, g.tx.desc,
				    g.baddr, 7, tr_ctx(0, g.trig, 2));
	if (!ft_check(!ret, "trigger_post", "%d", ret))
		return;
	ret = tr_wait(NULL, &e, TR_QUIET_MS);
	ft_check(!ret, "trigger_waits_at_0", "%s", fi_strerror(-ret));
	fi_cntr_add(g.trig, 1);
	ret = tr_wait(NULL, &e, TR_QUIET_MS);
	ft_check(!ret, "trigger_waits_at_1", "%s", fi_strerror(-ret));
	fi_cntr_add(g.trig, 1);
	ret = tr_wait(g.brx, &e, 0);
	ft_check(!ret && e.op_context == &g.ctx[0] && e.tag == 7 &&
		 ft_verify(g.rx.ptr, TR_LEN, 7) < 0, "trigger_fires_at_2",
		 "%s", fi_strerror(-ret));
	ret = tr_wait(g.atx, &e, 0);
	ft_check(!ret && e.op_context == &g.tctx[0], "trigger_tx_context",
		 "%s", fi_strerror(-ret));
}

/* Thresholds 5, 4, 4 submitted in that order start as 4, 4, 5. */
static void tr_order(void)
{
	static const size_t th[3] = { 5, 4, 4 };
	struct fi_cq_tagged_entry e;
	uint64_t seen[3];
	int i, ret = 0;

	tr_settle();
	fi_cntr_set(g.trig, 3);
	for (i = 0; !ret && i < 3; i++)
		ret = (int)fi_trecv(g.b, (uint8_t *)g.rx.ptr + i * TR_LEN,
				    TR_LEN, g.rx.desc, FI_ADDR_UNSPEC, 0,
				    ~0ULL, &g.ctx[i]);
	for (i = 0; !ret && i < 3; i++)
		ret = (int)fi_tsend(g.alias, (uint8_t *)g.tx.ptr + i * TR_LEN,
				    8, g.tx.desc, g.baddr, 100 + i,
				    tr_ctx(1 + i, g.trig, th[i]));
	if (!ft_check(!ret, "order_post", "%d", ret))
		return;
	fi_cntr_set(g.trig, 10);
	for (i = 0; !ret && i < 3; i++) {
		ret = tr_wait(g.brx, &e, 0);
		seen[i] = e.tag;
	}
	ft_check(!ret && seen[0] == 101 && seen[1] == 102 && seen[2] == 100,
		 "order_threshold_then_submission", "%s; tags %llu %llu %llu",
		 fi_strerror(-ret), (unsigned long long)seen[0],
		 (unsigned long long)seen[1], (unsigned long long)seen[2]);
	for (i = 0; i < 3; i++)
		(void)tr_wait(g.atx, &e, 0);
}

/* As fi_rdm_rma_trigger: a triggered write waits for A's counter to
 * count a plain write before it; fi_cntr_wait on a counter without a
 * wait object. */
static void tr_rma(void)
{
	uint64_t start = fi_cntr_read(g.acntr);
	uint64_t raddr = g.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
			 (uint64_t)(uintptr_t)g.rx.ptr : 0;
	struct iovec iov = { .iov_base = (uint8_t *)g.tx.ptr + TR_LEN,
			     .iov_len = TR_LEN };
	struct fi_rma_iov rma = { .addr = raddr + TR_LEN, .len = TR_LEN,
				  .key = fi_mr_key(g.rx.mr) };
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .desc = &g.tx.desc, .iov_count = 1,
		.addr = g.baddr, .rma_iov = &rma, .rma_iov_count = 1,
		.context = tr_ctx(4, g.acntr, start + 1),
	};
	int ret;

	tr_settle();
	memset(g.rx.ptr, 0, 2 * TR_LEN);
	ft_fill(g.tx.ptr, 2 * TR_LEN, 42);
	ret = (int)fi_writemsg(g.a, &msg, FI_TRIGGER);
	if (!ret)
		ret = fi_cntr_wait(g.acntr, start + 1, TR_QUIET_MS);
	ft_check(ret == -FI_ETIMEDOUT, "rma_trigger_waits",
		 "%d, want -FI_ETIMEDOUT", ret);
	ret = (int)fi_write(g.a, g.tx.ptr, TR_LEN, g.tx.desc, g.baddr, raddr,
			    fi_mr_key(g.rx.mr), &g.ctx[4]);
	if (!ret)
		ret = fi_cntr_wait(g.acntr, start + 2, ft_opts.timeout_ms);
	ft_check(!ret && ft_verify(g.rx.ptr, 2 * TR_LEN, 42) < 0,
		 "rma_trigger_after_write", "%s", fi_strerror(-ret));
}

/* A triggered atomic (FI_SUM on a uint64_t) through the alias. */
static void tr_atomic(void)
{
	uint64_t raddr = g.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
			 (uint64_t)(uintptr_t)g.rx.ptr : 0;
	uint64_t *target = g.rx.ptr, *operand = g.tx.ptr;
	uint64_t end;
	int ret;

	tr_settle();
	*target = 40;
	*operand = 2;
	fi_cntr_set(g.trig, 20);
	ret = (int)fi_atomic(g.alias, operand, 1, g.tx.desc, g.baddr, raddr,
			     fi_mr_key(g.rx.mr), FI_UINT64, FI_SUM,
			     tr_ctx(5, g.trig, 21));
	if (!ft_check(!ret, "atomic_trigger_post", "%d", ret))
		return;
	(void)tr_wait(NULL, NULL, TR_QUIET_MS / 3);
	ft_check(*(volatile uint64_t *)target == 40, "atomic_trigger_waits",
		 "target %llu", (unsigned long long)*target);
	fi_cntr_add(g.trig, 1);
	end = ft_now_ms() + (uint64_t)ft_opts.timeout_ms;
	while (*(volatile uint64_t *)target != 42 && ft_now_ms() < end)
		(void)tr_wait(NULL, NULL, 10);
	ft_check(*target == 42, "atomic_trigger_fires", "target %llu",
		 (unsigned long long)*target);
}

/* A triggered send to an address the AV does not have: accepted, and
 * when it starts an error completion with its context. */
static void tr_fails_late(void)
{
	struct fi_cq_tagged_entry e;
	int ret;

	tr_settle();
	fi_cntr_set(g.trig, 30);
	ret = (int)fi_tsend(g.alias, g.tx.ptr, 8, g.tx.desc, 99, 5,
			    tr_ctx(6, g.trig, 31));
	if (!ft_check(!ret, "late_failure_post", "%d", ret))
		return;
	fi_cntr_add(g.trig, 1);
	ret = tr_wait(g.atx, &e, 0);
	ft_check(ret == -FI_EINVAL && e.op_context == &g.tctx[6],
		 "late_failure_error_completion", "%s",
		 ret ? fi_strerror(-ret) : "success");
}

/* A counter with an operation waiting on it is busy; once the endpoint
 * of that operation closes, it is not. */
static void tr_close_rules(void)
{
	int ret;

	fi_cntr_set(g.trig, 0);
	ret = (int)fi_tsend(g.alias, g.tx.ptr, 8, g.tx.desc, g.baddr, 9,
			    tr_ctx(7, g.trig, 1000));
	if (!ret)
		ret = fi_close(&g.trig->fid);
	ft_check(ret == -FI_EBUSY, "close_cntr_with_trigger", "%d", ret);
	ret = fi_close(&g.alias->fid);
	g.alias = NULL;
	if (!ret)
		ret = fi_close(&g.a->fid);
	g.a = NULL;
	ft_check(!ret, "close_alias_then_ep", "%d", ret);
	ret = fi_close(&g.trig->fid);
	g.trig = NULL;
	ft_check(!ret, "close_cntr_after_ep", "%d", ret);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	int ret;

	ft_set_extra_opts("A", " -A           ask for FI_PROGRESS_AUTO data "
			  "progress\n", tr_opt);
	ft_parse_opts(argc, argv, "triggered operations, endpoint aliases",
		      false);
	hints = ft_hints_alloc(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC |
			       FI_TRIGGER);
	if (!hints)
		return 1;
	tr_getinfo(hints);
	if (!g.info || !g.plain_info)
		return ft_summary();
	ret = ft_fab_open(&g.fab, g.info);
	if (!ret)
		ret = tr_setup();
	if (!ret)
		ret = tr_ep(g.plain_info, &g.plain, NULL, NULL, NULL);
	if (!ret)
		ret = fi_ep_alias(g.a, &g.alias, FI_TRANSMIT | FI_TRIGGER);
	if (!ft_check(!ret, "setup", "%s", fi_strerror(-ret)))
		goto out;
	tr_bad_input();
	tr_threshold();
	tr_order();
	tr_rma();
	tr_atomic();
	tr_fails_late();
	tr_close_rules();
out:
	ft_close_fid(g.alias ? &g.alias->fid : NULL, "alias");
	ft_close_fid(g.a ? &g.a->fid : NULL, "ep");
	ft_close_fid(g.b ? &g.b->fid : NULL, "ep");
	ft_close_fid(g.plain ? &g.plain->fid : NULL, "ep");
	ft_close_fid(g.trig ? &g.trig->fid : NULL, "cntr");
	ft_close_fid(g.acntr ? &g.acntr->fid : NULL, "cntr");
	ft_close_fid(g.atx ? &g.atx->fid : NULL, "cq");
	ft_close_fid(g.arx ? &g.arx->fid : NULL, "cq");
	ft_close_fid(g.btx ? &g.btx->fid : NULL, "cq");
	ft_close_fid(g.brx ? &g.brx->fid : NULL, "cq");
	ft_buf_free(&g.rx);
	ft_buf_free(&g.tx);
	ft_close_fid(g.av ? &g.av->fid : NULL, "av");
	g.fab.info = NULL;
	ft_fab_close(&g.fab);
	fi_freeinfo(g.info);
	fi_freeinfo(g.plain_info);
	fi_freeinfo(hints);
	return ft_summary();
}
