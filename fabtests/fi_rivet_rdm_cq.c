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
