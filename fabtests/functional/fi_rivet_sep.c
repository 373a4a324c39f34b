// SPDX-License-Identifier: MIT
/* Scalable endpoints (fi_endpoint(3) SCALABLE ENDPOINTS), one process,
 * -e rdm: two scalable endpoints A and B with SE_CTX transmit and receive
 * contexts each, one AV with rx_ctx_bits, and an ordinary RDM endpoint P.
 * - getinfo offers the contexts when asked (ep_attr counts,
 *   max_ep_tx_ctx/max_ep_rx_ctx, FI_NAMED_RX_CTX), and no more;
 * - manual progress across contexts: a send on A's transmit context 0
 *   completes while only receive CQs are read (as fi_scalable_ep does);
 * - every transmit context of A to every receive context of B, named with
 *   fi_rx_addr, tagged, one of them a rendezvous: each message lands on
 *   its own context's CQ only, with its data and FI_SOURCE;
 * - B's contexts back to A's, RMA through a transmit context, an ordinary
 *   endpoint to a receive context and a transmit context to it;
 * - a receive context the peer does not have: an error completion, and
 *   the context goes on;
 * - context 1 opened with the attributes MPICH's ch4:ofi passes (caps
 *   beyond the direction's, given back narrowed), the others with none;
 * - bad input: a context's caps beyond the endpoint's, indices out of
 *   range, a context opened twice, receives on
 *   a transmit context, sends and RMA on a receive context, too many
 *   contexts, too many rx_ctx_bits, enable without an AV, close order;
 * - MPICH's one-sided windows: transmit contexts of a third scalable
 *   endpoint that is never enabled, each with a counter bound before
 *   enable and a CQ shared with a receive context under
 *   FI_SELECTIVE_COMPLETION; injected, context-less FI_DELIVERY_COMPLETE
 *   and completed writes, reads and atomics to B, counted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "common/ft_rivet.h"

#define SE_CTX 3
#define SE_BITS 3		/* room for indices B does not have */
#define SE_LEN 64
#define SE_BIG (256 * 1024)	/* a rendezvous */
#define SE_SLOT (SE_BIG + 4096)

struct se_sep {
	struct fid_ep *sep;
	struct fid_ep *tx[SE_CTX], *rx[SE_CTX];
	struct fid_cq *txcq[SE_CTX], *rxcq[SE_CTX];
	fi_addr_t addr;		/* in the AV */
};

static struct {
	struct ft_fab fab;
	struct fi_info *info;
	struct fid_av *av;
	struct se_sep s[2];		/* A, B */
	struct fid_ep *p;		/* an ordinary endpoint */
	struct fid_cq *ptxcq, *prxcq;
	fi_addr_t paddr;
	struct ft_buf tx, rx;
	struct fi_context ctx[64];
	int txerr;			/* error completions on tx CQs */
} g;

/* Tagged entries: the tag of each receive is checked. */
static int se_cq_open(struct fid_cq **cq)
{
	struct fi_cq_attr attr = { .size = 64,
				   .format = FI_CQ_FORMAT_TAGGED,
				   .wait_obj = FI_WAIT_NONE };

	return fi_cq_open(g.fab.domain, &attr, cq, NULL);
}

/* Every tx CQ is read (their completions counted, errors too), and cq
 * until it gives one completion: progress for everything in flight. */
static int se_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		   fi_addr_t *src)
{
	struct fi_cq_tagged_entry t;
	struct fi_cq_err_entry err;
	uint64_t end = ft_now_ms() + (uint64_t)ft_opts.timeout_ms;
	ssize_t ret;
	int k, i;

	do {
		for (k = 0; k < 2; k++)
			for (i = 0; i < SE_CTX; i++) {
				if (g.s[k].txcq[i] == cq || !g.s[k].txcq[i])
					continue;
				ret = fi_cq_read(g.s[k].txcq[i], &t, 1);
				if (ret == -FI_EAVAIL) {
					memset(&err, 0, sizeof(err));
					fi_cq_readerr(g.s[k].txcq[i], &err, 0);
					g.txerr++;
				}
			}
		if (g.ptxcq && g.ptxcq != cq)
			fi_cq_read(g.ptxcq, &t, 1);
		if (!cq)
			return 0;
		ret = fi_cq_readfrom(cq, e, 1, src);
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
	return -FI_ETIMEDOUT;
}

static bool g_auto;	/* -A: FI_PROGRESS_AUTO data progress */

static void se_opt(int op, const char *arg)
{
	(void)arg;
	if (op == 'A')
		g_auto = true;
}

static void se_getinfo(struct fi_info *hints)
{
	struct fi_info *info = NULL, *more = NULL;
	int ret;

	hints->ep_attr->tx_ctx_cnt = SE_CTX;
	hints->ep_attr->rx_ctx_cnt = SE_CTX;
	if (g_auto)	/* every context a progress thread of its own */
		hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	ret = ft_getinfo(hints, &info);
	if (!ft_check(!ret && info->ep_attr->tx_ctx_cnt == SE_CTX &&
		      info->ep_attr->rx_ctx_cnt == SE_CTX &&
		      info->domain_attr->max_ep_tx_ctx >= SE_CTX &&
		      info->domain_attr->max_ep_rx_ctx >= SE_CTX &&
		      (info->caps & FI_NAMED_RX_CTX), "getinfo_ctx", "%d", ret))
		return;
	hints->ep_attr->rx_ctx_cnt = info->domain_attr->max_ep_rx_ctx + 1;
	ret = ft_getinfo(hints, &more);
	ft_check(ret == -FI_ENODATA, "getinfo_too_many_ctx", "%d", ret);
	fi_freeinfo(more);
	/* every endpoint on an address of the domain's own choosing */
	free(info->src_addr);
	info->src_addr = NULL;
	info->src_addrlen = 0;
	g.info = info;
}

/* What MPICH's ch4:ofi names on its contexts: the endpoint's attributes
 * with caps set to everything it uses, FI_NAMED_RX_CTX on the receive
 * side too (fi_endpoint(3): a subset of the endpoint's caps). */
#define SE_MPICH_TX_CAPS \
	(FI_TAGGED | FI_RMA | FI_ATOMIC | FI_MSG | FI_NAMED_RX_CTX)
#define SE_MPICH_RX_CAPS \
	(FI_TAGGED | FI_DIRECTED_RECV | FI_RMA | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE | FI_ATOMIC | FI_MSG | FI_MULTI_RECV | FI_NAMED_RX_CTX)

/* Context 1 as MPICH opens its contexts, the others with the endpoint's
 * attributes (NULL, as Open MPI's mtl ofi does); with checks, first a
 * context asking for a capability the endpoint lacks. */
static int se_ctx_open(struct se_sep *s, int i, bool rx, bool checks)
{
	struct fi_tx_attr ta = *g.info->tx_attr;
	struct fi_rx_attr ra = *g.info->rx_attr;
	int ret;

	if (i != 1)
		return rx ? fi_rx_context(s->sep, i, NULL, &s->rx[i], NULL) :
			    fi_tx_context(s->sep, i, NULL, &s->tx[i], NULL);
	if (checks) {
		ta.caps = FI_TAGGED | FI_COLLECTIVE;
		ra.caps = FI_TAGGED | FI_COLLECTIVE;
		ret = rx ? fi_rx_context(s->sep, i, &ra, &s->rx[i], NULL) :
			   fi_tx_context(s->sep, i, &ta, &s->tx[i], NULL);
		ft_check(ret == -FI_EINVAL, rx ? "rx_ctx_caps_beyond_ep" :
			 "tx_ctx_caps_beyond_ep", "%d", ret);
	}
	ta.caps = SE_MPICH_TX_CAPS;
	ra.caps = SE_MPICH_RX_CAPS;
	ret = rx ? fi_rx_context(s->sep, i, &ra, &s->rx[i], NULL) :
		   fi_tx_context(s->sep, i, &ta, &s->tx[i], NULL);
	if (!ret && checks && rx)
		ft_check((ra.caps & FI_TAGGED) && (ra.caps & FI_DIRECTED_RECV) &&
			 !(ra.caps & FI_NAMED_RX_CTX), "rx_ctx_mpich_attr",
			 "caps given back 0x%llx", (unsigned long long)ra.caps);
	return ret;
}

static int se_open(struct se_sep *s, bool checks)
{
	struct fi_rx_attr ra;
	uint8_t name[64];
	size_t len = sizeof(name);
	struct fid_ep *dup;
	int i, ret;

	ret = fi_scalable_ep(g.fab.domain, g.info, &s->sep, NULL);
	if (ret)
		return ret;
	if (checks) {
		ret = fi_enable(s->sep);
		ft_check(ret == -FI_ENOAV, "sep_enable_without_av", "%d", ret);
	}
	ret = fi_scalable_ep_bind(s->sep, &g.av->fid, 0);
	for (i = 0; !ret && i < SE_CTX; i++) {
		ret = se_ctx_open(s, i, false, checks);
		if (!ret)
			ret = se_cq_open(&s->txcq[i]);
		if (!ret)
			ret = fi_ep_bind(s->tx[i], &s->txcq[i]->fid, FI_SEND);
		if (!ret)
			ret = fi_enable(s->tx[i]);
		if (!ret)
			ret = se_ctx_open(s, i, true, checks);
		if (!ret)
			ret = se_cq_open(&s->rxcq[i]);
		if (!ret)
			ret = fi_ep_bind(s->rx[i], &s->rxcq[i]->fid, FI_RECV);
		if (!ret)
			ret = fi_enable(s->rx[i]);
	}
	if (!ret)
		ret = fi_enable(s->sep);
	if (!ret)
		ret = fi_getname(&s->sep->fid, name, &len);
	if (!ret && fi_av_insert(g.av, name, 1, &s->addr, 0, NULL) != 1)
		ret = -FI_EINVAL;
	if (ret || !checks)
		return ret;
	ft_check(fi_tx_context(s->sep, SE_CTX, NULL, &dup, NULL) ==
		 -FI_EINVAL && fi_rx_context(s->sep, -1, NULL, &dup, NULL) ==
		 -FI_EINVAL, "ctx_index_out_of_range", "want -FI_EINVAL");
	ret = fi_rx_context(s->sep, 0, NULL, &dup, NULL);
	ft_check(ret == -FI_EBUSY, "ctx_open_twice", "%d", ret);
	/* a call that fails gives nothing back */
	ra = *g.info->rx_attr;
	ra.caps = SE_MPICH_RX_CAPS;
	ret = fi_rx_context(s->sep, 1, &ra, &dup, NULL);
	ft_check(ret == -FI_EBUSY && ra.caps == SE_MPICH_RX_CAPS,
		 "ctx_attr_kept_on_failure", "%d, caps 0x%llx", ret,
		 (unsigned long long)ra.caps);
	ret = fi_recv(s->tx[0], g.rx.ptr, SE_LEN, g.rx.desc, FI_ADDR_UNSPEC,
		      NULL);
	ft_check(ret == -FI_ENOSYS, "recv_on_tx_ctx", "%d", ret);
	ret = fi_send(s->rx[0], g.tx.ptr, SE_LEN, g.tx.desc, s->addr, NULL);
	ft_check(ret == -FI_ENOSYS, "send_on_rx_ctx", "%d", ret);
	ret = fi_write(s->rx[0], g.tx.ptr, SE_LEN, g.tx.desc, s->addr, 0, 0,
		       NULL);
	ft_check(ret == -FI_ENOSYS, "write_on_rx_ctx", "%d", ret);
	ret = fi_send(s->sep, g.tx.ptr, SE_LEN, g.tx.desc, s->addr, NULL);
	ft_check(ret == -FI_ENOSYS, "send_on_sep", "%d", ret);
	ret = fi_close(&s->sep->fid);
	ft_check(ret == -FI_EBUSY, "sep_close_busy", "%d", ret);
	return 0;
}

static void se_bad_open(void)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE,
				   .rx_ctx_bits = 9 };
	struct fi_info *info = fi_dupinfo(g.info);
	struct fid_ep *sep;
	struct fid_av *av;
	int ret;

	ret = fi_av_open(g.fab.domain, &attr, &av, NULL);
	ft_check(ret == -FI_EINVAL, "av_rx_ctx_bits_too_many", "%d", ret);
	if (!ret)
		fi_close(&av->fid);
	if (!info)
		return;
	info->ep_attr->tx_ctx_cnt = info->domain_attr->max_ep_tx_ctx + 1;
	ret = fi_scalable_ep(g.fab.domain, info, &sep, NULL);
	ft_check(ret == -FI_EINVAL, "sep_too_many_ctx", "%d", ret);
	if (!ret)
		fi_close(&sep->fid);
	fi_freeinfo(info);
}

/* Every tx completion still to come is read. */
static void se_settle(void)
{
	uint64_t end = ft_now_ms() + 300;

	while (ft_now_ms() < end)
		(void)se_wait(NULL, NULL, NULL);
}

static fi_addr_t se_rx(int k, int j)
{
	return fi_rx_addr(g.s[k].addr, j, SE_BITS);
}

/* A's transmit context 0 to B's receive context 0, reading only the two
 * receive context 0 CQs: A's rx CQ drives A's transmit context. */
static void se_cross_progress(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint64_t end;
	ssize_t ret;
	bool got = false;

	ret = fi_recv(g.s[1].rx[0], g.rx.ptr, SE_LEN, g.rx.desc,
		      FI_ADDR_UNSPEC, &g.ctx[0]);
	if (!ret)
		ret = fi_send(g.s[0].tx[0], g.tx.ptr, SE_LEN, g.tx.desc,
			      se_rx(1, 0), &g.ctx[1]);
	end = ft_now_ms() + (uint64_t)ft_opts.timeout_ms;
	while (!ret && !got && ft_now_ms() < end) {
		(void)fi_cq_read(g.s[0].rxcq[0], &e, 1);
		ret = fi_cq_read(g.s[1].rxcq[0], &e, 1);
		if (ret == -FI_EAVAIL)
			fi_cq_readerr(g.s[1].rxcq[0], &err, 0);
		got = ret == 1;
		ret = ret == -FI_EAGAIN || ret == 1 ? 0 : ret;
	}
	ft_check(got, "manual_progress_across_contexts", "%s",
		 ret ? fi_strerror((int)-ret) : "timed out");
	ret = se_wait(g.s[0].txcq[0], &e, NULL);
	ft_check(!ret && e.op_context == &g.ctx[1], "cross_progress_tx",
		 "%s", fi_strerror((int)-ret));
}

static uint64_t se_tag(int i, int j)
{
	return 0x5e00 + (uint64_t)(i * 16 + j);
}

static size_t se_len(int i, int j)
{
	return i == 0 && j == SE_CTX - 1 ? SE_BIG : SE_LEN;
}

/* Every transmit context of A to every receive context of B.  A receive
 * context posts receives only for its own tags: a message that went to
 * another context would not complete. */
static void se_matrix(void)
{
	struct fi_cq_tagged_entry e;
	uint8_t *rx = g.rx.ptr, *tx = g.tx.ptr;
	fi_addr_t src;
	int i, j, n, bad = 0, ret = 0, slot;

	for (j = 0; !ret && j < SE_CTX; j++)
		for (i = 0; !ret && i < SE_CTX; i++) {
			slot = j * SE_CTX + i;
			ret = (int)fi_trecv(g.s[1].rx[j], rx + slot * SE_SLOT,
					    SE_SLOT, g.rx.desc,
					    FI_ADDR_UNSPEC, se_tag(i, j), 0,
					    &g.ctx[slot]);
		}
	for (i = 0; !ret && i < SE_CTX; i++)
		for (j = 0; !ret && j < SE_CTX; j++) {
			slot = j * SE_CTX + i;
			ft_fill(tx + slot * SE_SLOT, se_len(i, j),
				(uint32_t)se_tag(i, j));
			ret = (int)fi_tsend(g.s[0].tx[i], tx + slot * SE_SLOT,
					    se_len(i, j), g.tx.desc,
					    se_rx(1, j), se_tag(i, j),
					    &g.ctx[32 + slot]);
		}
	if (!ft_check(!ret, "matrix_post", "%s", fi_strerror(-ret)))
		return;
	for (j = 0; j < SE_CTX; j++)
		for (n = 0; n < SE_CTX; n++) {
			ret = se_wait(g.s[1].rxcq[j], &e, &src);
			if (ret) {
				ft_fail("matrix", "rx context %d: %s", j,
					fi_strerror(-ret));
				return;
			}
			slot = (int)((struct fi_context *)e.op_context -
				     g.ctx);
			i = slot % SE_CTX;
			if (slot / SE_CTX != j || e.tag != se_tag(i, j) ||
			    e.len != se_len(i, j) || src != g.s[0].addr ||
			    ft_verify(rx + slot * SE_SLOT, e.len,
				      (uint32_t)e.tag) >= 0)
				bad++;
		}
	ft_check(!bad, "matrix", "%d completions wrong (context, tag, "
		 "length, source or data)", bad);
	ft_check(ft_cq_empty(g.s[1].rxcq[0]) && ft_cq_empty(g.s[1].rxcq[1]),
		 "matrix_nothing_more", "a completion too many");
}

/* B's transmit context j back to A's receive context j, and j + 1: the
 * other direction's connections. */
static void se_reverse(void)
{
	struct fi_cq_tagged_entry e;
	int j, ret = 0, bad = 0;

	for (j = 0; !ret && j < SE_CTX; j++) {
		ret = (int)fi_recv(g.s[0].rx[(j + 1) % SE_CTX],
				   (uint8_t *)g.rx.ptr + j * SE_LEN, SE_LEN,
				   g.rx.desc, FI_ADDR_UNSPEC, &g.ctx[j]);
		ft_fill((uint8_t *)g.tx.ptr + j * SE_LEN, SE_LEN, 77 + j);
		if (!ret)
			ret = (int)fi_send(g.s[1].tx[j],
					   (uint8_t *)g.tx.ptr + j * SE_LEN,
					   SE_LEN, g.tx.desc,
					   se_rx(0, (j + 1) % SE_CTX),
					   &g.ctx[32 + j]);
	}
	for (j = 0; !ret && j < SE_CTX; j++) {
		ret = se_wait(g.s[0].rxcq[(j + 1) % SE_CTX], &e, NULL);
		if (!ret && (e.op_context != &g.ctx[j] ||
			     ft_verify((uint8_t *)g.rx.ptr + j * SE_LEN,
				       SE_LEN, 77 + j) >= 0))
			bad++;
	}
	ft_check(!ret && !bad, "reverse", "%s, %d wrong", fi_strerror(-ret),
		 bad);
}

/* fi_write through A's transmit context 1 to B, named by its receive
 * context 2 (the connection), into B's buffer. */
static void se_rma(void)
{
	struct fi_cq_tagged_entry e;
	uint64_t raddr = g.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
			 (uint64_t)(uintptr_t)g.rx.ptr : 0;
	int ret;

	memset(g.rx.ptr, 0, 4096);
	ft_fill(g.tx.ptr, 4096, 4242);
	ret = (int)fi_write(g.s[0].tx[1], g.tx.ptr, 4096, g.tx.desc,
			    se_rx(1, 2), raddr, fi_mr_key(g.rx.mr),
			    &g.ctx[50]);
	if (!ret)
		ret = se_wait(g.s[0].txcq[1], &e, NULL);
	ft_check(!ret && e.op_context == &g.ctx[50] &&
		 ft_verify(g.rx.ptr, 4096, 4242) < 0, "rma_write_tx_ctx",
		 "%s", fi_strerror(-ret));
}

/* An ordinary endpoint to B's receive context 1, and B's transmit
 * context 2 to the ordinary endpoint (its only context, 0). */
static void se_plain(void)
{
	struct fi_cq_tagged_entry e;
	uint8_t name[64];
	size_t len = sizeof(name);
	fi_addr_t src;
	int ret;

	ret = fi_endpoint(g.fab.domain, g.info, &g.p, NULL);
	if (!ret)
		ret = fi_ep_bind(g.p, &g.av->fid, 0);
	if (!ret)
		ret = se_cq_open(&g.ptxcq);
	if (!ret)
		ret = fi_ep_bind(g.p, &g.ptxcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = se_cq_open(&g.prxcq);
	if (!ret)
		ret = fi_ep_bind(g.p, &g.prxcq->fid, FI_RECV);
	if (!ret)
		ret = fi_enable(g.p);
	if (!ret)
		ret = fi_getname(&g.p->fid, name, &len);
	if (!ret && fi_av_insert(g.av, name, 1, &g.paddr, 0, NULL) != 1)
		ret = -FI_EINVAL;
	if (!ft_check(!ret, "plain_setup", "%s", fi_strerror(-ret)))
		return;
	ret = (int)fi_recv(g.s[1].rx[1], g.rx.ptr, SE_LEN, g.rx.desc,
			   FI_ADDR_UNSPEC, &g.ctx[0]);
	ft_fill(g.tx.ptr, SE_LEN, 99);
	if (!ret)
		ret = (int)fi_send(g.p, g.tx.ptr, SE_LEN, g.tx.desc,
				   se_rx(1, 1), &g.ctx[1]);
	if (!ret)
		ret = se_wait(g.s[1].rxcq[1], &e, &src);
	ft_check(!ret && e.op_context == &g.ctx[0] && src == g.paddr &&
		 ft_verify(g.rx.ptr, SE_LEN, 99) < 0, "plain_to_rx_ctx",
		 "%s", fi_strerror(-ret));
	ret = (int)fi_recv(g.p, g.rx.ptr, SE_LEN, g.rx.desc, FI_ADDR_UNSPEC,
			   &g.ctx[2]);
	ft_fill(g.tx.ptr, SE_LEN, 98);
	if (!ret)
		ret = (int)fi_send(g.s[1].tx[2], g.tx.ptr, SE_LEN, g.tx.desc,
				   g.paddr, &g.ctx[3]);
	if (!ret)
		ret = se_wait(g.prxcq, &e, &src);
	ft_check(!ret && e.op_context == &g.ctx[2] && src == g.s[1].addr &&
		 ft_verify(g.rx.ptr, SE_LEN, 98) < 0, "tx_ctx_to_plain", "%s",
		 fi_strerror(-ret));
	/* back to B's plain address: its receive context 0, not over the
	 * connection B's transmit context made (which takes no messages) */
	se_settle();
	ret = (int)fi_recv(g.s[1].rx[0], g.rx.ptr, SE_LEN, g.rx.desc,
			   FI_ADDR_UNSPEC, &g.ctx[4]);
	ft_fill(g.tx.ptr, SE_LEN, 96);
	if (!ret)
		ret = (int)fi_send(g.p, g.tx.ptr, SE_LEN, g.tx.desc,
				   g.s[1].addr, &g.ctx[5]);
	if (!ret)
		ret = se_wait(g.s[1].rxcq[0], &e, &src);
	ft_check(!ret && e.op_context == &g.ctx[4] && src == g.paddr &&
		 ft_verify(g.rx.ptr, SE_LEN, 96) < 0, "plain_to_rx_ctx_0",
		 "%s", fi_strerror(-ret));
}

/* B has no receive context SE_CTX + 1: the send fails with an error
 * completion; the transmit context goes on. */
static void se_missing_ctx(void)
{
	struct fi_cq_tagged_entry e;
	int ret;

	ret = (int)fi_send(g.s[0].tx[2], g.tx.ptr, SE_LEN, g.tx.desc,
			   se_rx(1, SE_CTX + 1), &g.ctx[5]);
	if (!ret)
		ret = se_wait(g.s[0].txcq[2], &e, NULL);
	ft_check(ret && ret != -FI_ETIMEDOUT && e.op_context == &g.ctx[5],
		 "missing_rx_ctx", "%s, want an error completion",
		 ret ? fi_strerror(-ret) : "success");
	ret = (int)fi_recv(g.s[1].rx[0], g.rx.ptr, SE_LEN, g.rx.desc,
			   FI_ADDR_UNSPEC, &g.ctx[6]);
	ft_fill(g.tx.ptr, SE_LEN, 97);
	if (!ret)
		ret = (int)fi_send(g.s[0].tx[2], g.tx.ptr, SE_LEN, g.tx.desc,
				   se_rx(1, 0), &g.ctx[7]);
	if (!ret)
		ret = se_wait(g.s[1].rxcq[0], &e, NULL);
	ft_check(!ret && ft_verify(g.rx.ptr, SE_LEN, 97) < 0,
		 "missing_rx_ctx_then_ok", "%s", fi_strerror(-ret));
}

/* MPICH's ch4:ofi windows (ofi_win.c, win_init_sep): a scalable
 * endpoint W of the endpoint's info with SE_WIN transmit contexts, bound
 * to the AV and never enabled; a window is one of its transmit contexts
 * (the last free index first) opened with the endpoint's tx_attr narrowed
 * to RMA and atomics, bound with FI_TRANSMIT | FI_SELECTIVE_COMPLETION to
 * the CQ its endpoint already uses (here A's receive context 0 CQ) and to
 * a counter of FI_READ | FI_WRITE opened with FI_WAIT_UNSPEC, then
 * enabled.  Operations carry no context unless FI_COMPLETION is asked
 * (ofi_rma.h), and MPI waits on the counter. */
#define SE_WIN 2
#define SE_WIN_OPS 6		/* per window */

struct se_win {
	struct fid_ep *tx;
	struct fid_cntr *cntr;
	uint64_t posted;
};

static int se_win_open(struct fid_ep *w, int idx, struct se_win *win)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP,
				   .wait_obj = FI_WAIT_UNSPEC };
	struct fi_tx_attr ta = *g.info->tx_attr;
	int ret;

	ta.caps = FI_RMA | FI_WRITE | FI_READ | FI_ATOMIC;
	ta.msg_order = FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAR |
		       FI_ORDER_WAW;
	ret = fi_tx_context(w, idx, &ta, &win->tx, NULL);
	if (!ret)
		ret = fi_ep_bind(win->tx, &g.s[0].rxcq[0]->fid,
				 FI_TRANSMIT | FI_SELECTIVE_COMPLETION);
	if (!ret)
		ret = fi_cntr_open(g.fab.domain, &ca, &win->cntr, NULL);
	if (!ret)
		ret = fi_ep_bind(win->tx, &win->cntr->fid, FI_READ | FI_WRITE);
	if (!ret)
		ret = fi_enable(win->tx);
	return ret;
}

/* Until every window's counter has counted what it posted: the shared CQ
 * is read as MPICH's progress does (its entries kept in e, *got), B's
 * receive CQ for the target's progress (it gets nothing). */
static int se_win_wait(struct se_win *win, struct fi_cq_tagged_entry *e,
		       int *got)
{
	struct fi_cq_tagged_entry t;
	uint64_t end = ft_now_ms() + (uint64_t)ft_opts.timeout_ms;
	ssize_t ret;
	int k, done;

	do {
		ret = fi_cq_read(g.s[0].rxcq[0], &t, 1);
		if (ret == 1 && *got < 4)
			e[(*got)++] = t;
		else if (ret == 1 || (ret != -FI_EAGAIN))
			return ret == 1 ? -FI_EOVERFLOW : (int)ret;
		ret = fi_cq_read(g.s[1].rxcq[0], &t, 1);
		if (ret != -FI_EAGAIN)
			return ret == 1 ? -FI_EOVERFLOW : (int)ret;
		for (k = 0, done = 0; k < SE_WIN; k++) {
			if (fi_cntr_readerr(win[k].cntr))
				return -FI_EIO;
			done += fi_cntr_read(win[k].cntr) >= win[k].posted;
		}
		if (done == SE_WIN)
			return 0;
	} while (ft_now_ms() < end);
	return -FI_ETIMEDOUT;
}

/* Window k's operations into its own 4 KiB slots of B's region: an
 * injected write, a context-less FI_DELIVERY_COMPLETE write, a read of
 * it back, one with FI_COMPLETION and a context, an atomic sum and a
 * fetching one (after the sum has counted: no atomic ordering asked). */
static int se_win_post(struct se_win *win, int k, int phase,
		       struct ft_buf *tgt, struct ft_buf *loc)
{
	uint8_t *l = (uint8_t *)loc->ptr + k * 4 * 4096;
	uint64_t base = g.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
			(uint64_t)(uintptr_t)tgt->ptr : 0;
	uint64_t r = base + (uint64_t)k * 4 * 4096;
	uint64_t key = fi_mr_key(tgt->mr);
	fi_addr_t to = se_rx(1, k);
	struct iovec iov = { .iov_base = l + 4096, .iov_len = 4096 };
	struct fi_rma_iov rio = { .addr = r + 4096, .len = 4096, .key = key };
	struct fi_msg_rma m = { .msg_iov = &iov, .desc = &loc->desc,
				.iov_count = 1, .addr = to,
				.rma_iov = &rio, .rma_iov_count = 1 };
	struct fi_ioc ioc = { .addr = l + 3 * 4096, .count = 1 };
	struct fi_ioc res = { .addr = l + 3 * 4096 + 8, .count = 1 };
	struct fi_rma_ioc rioc = { .addr = r + 3 * 4096, .count = 1,
				   .key = key };
	struct fi_msg_atomic am = { .msg_iov = &ioc, .desc = &loc->desc,
				    .iov_count = 1, .addr = to,
				    .rma_iov = &rioc, .rma_iov_count = 1,
				    .datatype = FI_UINT64, .op = FI_SUM };
	ssize_t ret;

	if (phase == 0) {
		ret = fi_inject_write(win->tx, l, 64, to, r, key);
		if (!ret)
			ret = fi_writemsg(win->tx, &m, FI_DELIVERY_COMPLETE);
		rio.addr = r + 2 * 4096;
		iov.iov_base = l + 2 * 4096;
		m.context = &g.ctx[60 + k];
		if (!ret)
			ret = fi_writemsg(win->tx, &m, FI_COMPLETION |
					  FI_DELIVERY_COMPLETE);
		if (!ret)
			ret = fi_atomicmsg(win->tx, &am, FI_DELIVERY_COMPLETE);
		win->posted += ret ? 0 : 4;
		return (int)ret;
	}
	/* phase 1: the read of slot 1 into local slot 1 + ..., the fetch */
	iov.iov_base = l + 4 * 4096 - 2048;
	iov.iov_len = 2048;
	rio.len = 2048;
	ret = fi_readmsg(win->tx, &m, 0);
	if (!ret)
		ret = fi_fetch_atomicmsg(win->tx, &am, &res, &loc->desc, 1, 0);
	win->posted += ret ? 0 : 2;
	return (int)ret;
}

static void se_windows(void)
{
	struct fi_info *info = fi_dupinfo(g.info);
	struct se_win win[SE_WIN] = { { 0 } };
	struct ft_buf tgt = { 0 }, loc = { 0 };
	struct fi_cq_tagged_entry e[4];
	struct fid_ep *w = NULL;
	uint64_t *sum, *fetched;
	uint8_t *t;
	int k, ret, got = 0, bad = 0;

	if (!info)
		return;
	info->ep_attr->tx_ctx_cnt = SE_WIN;
	ret = fi_scalable_ep(g.fab.domain, info, &w, NULL);
	if (!ret)
		ret = fi_scalable_ep_bind(w, &g.av->fid, 0);
	for (k = SE_WIN - 1; !ret && k >= 0; k--)
		ret = se_win_open(w, k, &win[k]);
	if (!ret)
		ret = ft_buf_alloc(g.fab.domain, SE_WIN * 4 * 4096,
				   FI_REMOTE_READ | FI_REMOTE_WRITE, &tgt);
	if (!ret)
		ret = ft_buf_alloc(g.fab.domain, SE_WIN * 4 * 4096,
				   FI_READ | FI_WRITE, &loc);
	if (!ft_check(!ret, "win_setup", "%s", fi_strerror(-ret)))
		goto out;
	t = tgt.ptr;
	for (k = 0; k < SE_WIN; k++) {
		uint8_t *l = (uint8_t *)loc.ptr + k * 4 * 4096;

		ft_fill(l, 3 * 4096, 500 + (uint32_t)k);
		*(uint64_t *)(t + (k * 4 + 3) * 4096) = 5;
		*(uint64_t *)(l + 3 * 4096) = 7 + (uint64_t)k;
	}
	for (k = 0; !ret && k < SE_WIN; k++)
		ret = se_win_post(&win[k], k, 0, &tgt, &loc);
	if (!ret)
		ret = se_win_wait(win, e, &got);
	for (k = 0; !ret && k < SE_WIN; k++)
		ret = se_win_post(&win[k], k, 1, &tgt, &loc);
	if (!ret)
		ret = se_win_wait(win, e, &got);
	if (!ft_check(!ret, "win_counted", "%s", fi_strerror(-ret)))
		goto out;
	for (k = 0; k < SE_WIN; k++) {
		uint8_t *l = (uint8_t *)loc.ptr + k * 4 * 4096;

		sum = (uint64_t *)(t + (k * 4 + 3) * 4096);
		fetched = (uint64_t *)(l + 3 * 4096 + 8);
		if (memcmp(t + k * 4 * 4096, l, 64) ||
		    memcmp(t + k * 4 * 4096 + 4096, l + 4096, 2 * 4096) ||
		    memcmp(l + 4 * 4096 - 2048, l + 4096, 2048) ||
		    *fetched != 12 + (uint64_t)k ||
		    *sum != 19 + 2 * (uint64_t)k)
			bad++;
	}
	ft_check(!bad, "win_data", "%d windows' data or atomics wrong", bad);
	ft_check(got == SE_WIN && ((e[0].op_context == &g.ctx[60] &&
				     e[1].op_context == &g.ctx[61]) ||
				    (e[0].op_context == &g.ctx[61] &&
				     e[1].op_context == &g.ctx[60])) &&
		 (e[0].flags & FI_WRITE) && (e[1].flags & FI_WRITE),
		 "win_selective_completion", "%d shared CQ entries, want %d "
		 "(the FI_COMPLETION writes)", got, SE_WIN);
out:
	for (k = 0; k < SE_WIN; k++) {
		ft_close_fid(win[k].tx ? &win[k].tx->fid : NULL, "window");
		ft_close_fid(win[k].cntr ? &win[k].cntr->fid : NULL, "cntr");
	}
	ft_close_fid(w ? &w->fid : NULL, "scalable endpoint");
	ft_buf_free(&tgt);
	ft_buf_free(&loc);
	fi_freeinfo(info);
}

static void se_close(struct se_sep *s)
{
	int i;

	for (i = 0; i < SE_CTX; i++) {
		ft_close_fid(s->tx[i] ? &s->tx[i]->fid : NULL, "tx context");
		ft_close_fid(s->rx[i] ? &s->rx[i]->fid : NULL, "rx context");
	}
	ft_close_fid(s->sep ? &s->sep->fid : NULL, "scalable endpoint");
	for (i = 0; i < SE_CTX; i++) {
		ft_close_fid(s->txcq[i] ? &s->txcq[i]->fid : NULL, "cq");
		ft_close_fid(s->rxcq[i] ? &s->rxcq[i]->fid : NULL, "cq");
	}
}

int main(int argc, char **argv)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE,
				   .rx_ctx_bits = SE_BITS };
	struct fi_info *hints;
	int ret;

	ft_set_extra_opts("A", " -A           ask for FI_PROGRESS_AUTO data "
			  "progress\n", se_opt);
	ft_parse_opts(argc, argv, "scalable endpoints", false);
	hints = ft_hints_alloc(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC |
			       FI_SOURCE | FI_NAMED_RX_CTX | FI_DIRECTED_RECV |
			       FI_MULTI_RECV);
	if (!hints)
		return 1;
	se_getinfo(hints);
	if (!g.info)
		return ft_summary();
	ret = ft_fab_open(&g.fab, g.info);
	if (!ret)
		ret = fi_av_open(g.fab.domain, &attr, &g.av, NULL);
	if (!ret)
		ret = ft_buf_alloc(g.fab.domain, SE_CTX * SE_CTX * SE_SLOT,
				   FI_RECV | FI_REMOTE_WRITE, &g.rx);
	if (!ret)
		ret = ft_buf_alloc(g.fab.domain, SE_CTX * SE_CTX * SE_SLOT,
				   FI_SEND | FI_WRITE, &g.tx);
	if (!ret)
		ret = se_open(&g.s[0], true);
	if (!ret)
		ret = se_open(&g.s[1], false);
	if (!ft_check(!ret, "setup", "%s", fi_strerror(-ret)))
		goto out;
	se_bad_open();
	se_cross_progress();
	se_matrix();
	se_settle();
	se_reverse();
	se_settle();
	se_rma();
	se_plain();
	se_settle();
	se_missing_ctx();
	se_settle();
	se_windows();
out:
	se_close(&g.s[0]);
	se_close(&g.s[1]);
	ft_close_fid(g.p ? &g.p->fid : NULL, "ep");
	ft_close_fid(g.ptxcq ? &g.ptxcq->fid : NULL, "cq");
	ft_close_fid(g.prxcq ? &g.prxcq->fid : NULL, "cq");
	ft_buf_free(&g.rx);
	ft_buf_free(&g.tx);
	ft_close_fid(g.av ? &g.av->fid : NULL, "av");
	g.fab.info = NULL;
	ft_fab_close(&g.fab);
	fi_freeinfo(g.info);
	fi_freeinfo(hints);
	return ft_summary();
}
