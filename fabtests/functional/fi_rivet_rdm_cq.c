// SPDX-License-Identifier: MIT
/* fi_rivet_rdm cases on the completion queue: the order in which reads of
 * any count hand out what one progress pass completed. */
#include <unistd.h>

#include "fi_rivet_rdm.h"

/* Completions that one progress pass produces come out of fi_cq_readfrom
 * in the order they were made, whatever count each read asks for (a read
 * may take the first ones straight into its buffer, the rest queue). */
#define RDM_CQORD_MSGS 16

void rdm_cqorder_server(void)
{
	const char *name = "rdm_cq_order";
	uint64_t tag = RDM_TAG(T_CQORDER, 1), end;
	uint8_t *buf = g_rdm.rx.ptr;
	struct fi_cq_tagged_entry e[3];
	fi_addr_t src[3];
	struct ft_comp c;
	ssize_t n, i;
	int k;

	for (k = 0; k < RDM_CQORD_MSGS; k++)
		if (rdm_recv(name, true, buf + k * 64, 64, tag, 0,
			     FI_ADDR_UNSPEC, &g_rdm.rxctx[k]))
			return;
	if (rdm_sync() || rdm_sync())	/* the second: all were sent */
		return;
	usleep(200 * 1000);	/* so that one read's progress finds many */
	end = ft_now_ms() + ft_rdm_timeout(64);
	for (k = 0; k < RDM_CQORD_MSGS && ft_now_ms() < end;) {
		n = fi_cq_readfrom(g_rdm.ep[0].cq, e, k ? 3 : 1, src);
		if (n == -FI_EAGAIN)
			continue;
		if (n <= 0 || n > (k ? 3 : 1)) {
			ft_fail(name, "fi_cq_readfrom: %zd", n);
			return;
		}
		for (i = 0; i < n; i++, k++) {
			if (e[i].op_context != &g_rdm.rxctx[k]) {
				ft_fail(name, "completion %d is not receive "
					"%d's", k, k);
				return;
			}
			c = (struct ft_comp) { .flags = e[i].flags,
					       .len = e[i].len,
					       .tag = e[i].tag, .src = src[i] };
			if (rdm_check_recv(name, &c, true, 8 + k, tag,
					   g_rdm.peer[0], buf + k * 64, k))
				return;
		}
	}
	if (k < RDM_CQORD_MSGS)
		ft_fail(name, "%d of %d completions", k, RDM_CQORD_MSGS);
	else
		ft_ok(name);
}

void rdm_cqorder_client(void)
{
	uint64_t tag = RDM_TAG(T_CQORDER, 1);
	uint8_t *p = g_rdm.tx.ptr;
	ssize_t ret;
	int k;

	if (rdm_sync())
		return;
	for (k = 0; k < RDM_CQORD_MSGS; k++) {
		ft_fill(p, 8 + k, k);
		ret = FT_RDM_POST(fi_tinject(g_rdm.ep[0].ep, p, 8 + k,
					     g_rdm.dest[0], tag));
		if (ret) {
			ft_fail("rdm_cq_order", "fi_tinject: %s",
				fi_strerror((int)-ret));
			return;
		}
	}
	(void)rdm_sync();
}

/* An error entry comes out in its place among the successes (fi_cq(3):
 * -FI_EAVAIL when "the topmost completion" is an error): successes the
 * CQ holds when a receive is cancelled are read before its FI_ECANCELED,
 * not after it. */
#define RDM_CQERR_MSGS 4

void rdm_cqerr_order_server(void)
{
	const char *name = "rdm_cq_err_order";
	uint64_t tag = RDM_TAG(T_CQORDER, 2), end;
	uint8_t *buf = g_rdm.rx.ptr;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	int k, before = -1;
	ssize_t n;

	for (k = 0; k <= RDM_CQERR_MSGS; k++)
		if (rdm_recv(name, true, buf + k * 64, 64, tag + (uint64_t)
			     (k == RDM_CQERR_MSGS), 0, FI_ADDR_UNSPEC,
			     &g_rdm.rxctx[k]))
			return;
	if (rdm_sync() || rdm_sync())	/* the second: all were sent */
		return;
	usleep(200 * 1000);	/* so that the first read's progress finds all */
	end = ft_now_ms() + ft_rdm_timeout(64);
	k = 0;
	while ((k < RDM_CQERR_MSGS || before < 0) && ft_now_ms() < end) {
		n = fi_cq_read(g_rdm.ep[0].cq, &e, 1);
		if (n == -FI_EAGAIN)
			continue;
		if (n == -FI_EAVAIL && before < 0) {
			before = k;	/* the cancel's error is topmost */
			n = fi_cq_readerr(g_rdm.ep[0].cq, &err, 0);
			if (!ft_check(n == 1, name, "fi_cq_readerr: %zd", n))
				return;
			continue;
		}
		if (n != 1 || e.op_context != &g_rdm.rxctx[k]) {
			ft_fail(name, "read %d: %zd (%s)", k, n,
				n == 1 ? "another receive's" : "no entry");
			return;
		}
		/* the others are in the CQ now: the cancel's error after them */
		if (!k++ && fi_cancel(&g_rdm.ep[0].ep->fid,
				      &g_rdm.rxctx[RDM_CQERR_MSGS])) {
			ft_fail(name, "fi_cancel");
			return;
		}
	}
	if (ft_check(k == RDM_CQERR_MSGS && before >= 0, name, "%d of %d "
		     "completions, %s error", k, RDM_CQERR_MSGS,
		     before < 0 ? "no" : "an") &&
	    ft_check(before == RDM_CQERR_MSGS, name, "the cancel's error "
		     "came before %d of the %d successes the CQ held",
		     RDM_CQERR_MSGS - before, RDM_CQERR_MSGS - 1) &&
	    ft_check(err.op_context == &g_rdm.rxctx[RDM_CQERR_MSGS] &&
		     err.err == FI_ECANCELED, name, "the error entry: %d",
		     err.err))
		ft_ok(name);
}

void rdm_cqerr_order_client(void)
{
	uint64_t tag = RDM_TAG(T_CQORDER, 2);
	uint8_t *p = g_rdm.tx.ptr;
	ssize_t ret;
	int k;

	if (rdm_sync())
		return;
	for (k = 0; k < RDM_CQERR_MSGS; k++) {
		ft_fill(p, 8, k);
		ret = FT_RDM_POST(fi_tinject(g_rdm.ep[0].ep, p, 8,
					     g_rdm.dest[0], tag));
		if (ret) {
			ft_fail("rdm_cq_err_order", "fi_tinject: %s",
				fi_strerror((int)-ret));
			return;
		}
	}
	(void)rdm_sync();
}
