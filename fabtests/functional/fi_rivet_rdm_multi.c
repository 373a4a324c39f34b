// SPDX-License-Identifier: MIT
/* Many RDM endpoints in one process: a two-way ring over 32 endpoints of
 * one domain (own AVs, then one shared AV), 4 threads sending on one
 * FI_THREAD_SAFE endpoint to a peer endpoint of the same process, and
 * messages from a peer that the receiver's AV takes only after they came
 * (multi_late_av). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ft_rdm.h"

#define MULTI_MAX_EPS 256
#define MULTI_QUEUE 256		/* tx and rx size of the ring's endpoints */
#define MULTI_NSIZES 2
#define MULTI_BIG (256 * 1024)
#define MULTI_SLOT (MULTI_BIG + 4096)
#define MULTI_THREADS 4
#define MULTI_THREAD_MSGS 500
#define MULTI_THREAD_WIN 16
#define MULTI_THREAD_SLOT (64 * 1024 + 1024)

/* Tag of a ring message: sender, direction (0: to the right), size. */
#define MULTI_TAG(src, dir, s) (((uint64_t)(src) << 8) | ((dir) << 4) | (s))

static const size_t g_sizes[MULTI_NSIZES] = { 64, MULTI_BIG };

struct multi_ep {
	struct ft_rdm_ep rep;
	fi_addr_t addr[MULTI_MAX_EPS];	/* every endpoint, in our AV */
	struct fi_context2 rxctx[2][MULTI_NSIZES];
	struct fi_context2 txctx[2][MULTI_NSIZES];
};

struct multi_state {
	struct ft_fab fab;
	struct fid_av *shared_av;
	struct multi_ep *eps;
	struct ft_buf tx;
	struct ft_buf rx;
	int n;
};

static struct multi_state g_multi = { .n = 32 };

static void multi_opt(int op, const char *arg)
{
	g_multi.n = atoi(arg);
	if (g_multi.n < 3 || g_multi.n > MULTI_MAX_EPS) {
		fprintf(stderr, "-n: 3 to %d endpoints\n", MULTI_MAX_EPS);
		exit(2);
	}
}

/* ---- ring ------------------------------------------------------------- */

static uint8_t *multi_slot(struct ft_buf *buf, int ep, int dir, int s)
{
	return (uint8_t *)buf->ptr +
	       ((size_t)(ep * 2 + dir) * MULTI_NSIZES + s) * MULTI_SLOT;
}

static uint32_t multi_seed(int round, int src, int dir, int s)
{
	return round * 100000 + src * 100 + dir * 10 + s;
}

static int multi_open_eps(bool shared)
{
	struct multi_ep *m;
	int i, j, ret = 0;

	if (shared)
		ret = ft_rdm_av_open(g_multi.fab.domain, g_multi.n,
				     &g_multi.shared_av);
	for (i = 0; !ret && i < g_multi.n; i++)
		ret = ft_rdm_ep_open(&g_multi.fab, g_multi.shared_av, true, 0,
				     &g_multi.eps[i].rep);
	for (i = 0; !ret && i < g_multi.n; i++) {
		m = &g_multi.eps[i];
		for (j = 0; !ret && j < g_multi.n; j++) {
			if (shared && i > 0)
				m->addr[j] = g_multi.eps[0].addr[j];
			else
				ret = ft_rdm_av_insert(m->rep.av,
						       g_multi.eps[j].rep.name,
						       &m->addr[j]);
		}
	}
	return ret;
}

static void multi_close_eps(void)
{
	int i;

	for (i = 0; i < g_multi.n; i++)
		ft_rdm_ep_close(&g_multi.eps[i].rep);
	ft_close_fid(g_multi.shared_av ? &g_multi.shared_av->fid : NULL,
		     "av");
	g_multi.shared_av = NULL;
}

/* The ring's operations, numbered q = (endpoint * 2 + dir) * sizes + size:
 * endpoint i receives from its left (dir 0: the left one sent right) and
 * from its right neighbour, one message of each size. */
#define MULTI_OPS (g_multi.n * 2 * MULTI_NSIZES)
#define MULTI_EP(q) ((q) / (2 * MULTI_NSIZES))
#define MULTI_DIR(q) ((q) / MULTI_NSIZES % 2)
#define MULTI_SIZE(q) ((q) % MULTI_NSIZES)

static int multi_src(int i, int d)
{
	return d ? (i + 1) % g_multi.n : (i + g_multi.n - 1) % g_multi.n;
}

static ssize_t multi_post_recv(int q)
{
	int i = MULTI_EP(q), d = MULTI_DIR(q), s = MULTI_SIZE(q);
	struct multi_ep *m = &g_multi.eps[i];

	return FT_RDM_POST(fi_trecv(m->rep.ep, multi_slot(&g_multi.rx, i, d, s),
				    g_sizes[s], g_multi.rx.desc, FI_ADDR_UNSPEC,
				    MULTI_TAG(multi_src(i, d), d, s), 0,
				    &m->rxctx[d][s]));
}

/* Direction 0 goes right, 1 left: the receiver's multi_src inverted. */
static ssize_t multi_post_send(int q, int round)
{
	int i = MULTI_EP(q), d = MULTI_DIR(q), s = MULTI_SIZE(q);
	struct multi_ep *m = &g_multi.eps[i];
	int dst = multi_src(i, !d);
	uint8_t *p = multi_slot(&g_multi.tx, i, d, s);

	ft_fill(p, g_sizes[s], multi_seed(round, i, d, s));
	return FT_RDM_POST(fi_tsend(m->rep.ep, p, g_sizes[s], g_multi.tx.desc,
				    m->addr[dst], MULTI_TAG(i, d, s),
				    &m->txctx[d][s]));
}

static int multi_post_round(const char *name, int round)
{
	ssize_t ret = 0;
	int q;

	for (q = 0; q < 2 * MULTI_OPS; q++) {
		if (q < MULTI_OPS)
			ret = multi_post_recv(q);
		else
			ret = multi_post_send(q - MULTI_OPS, round);
		if (ret) {
			ft_fail(name, "round %d: posting on endpoint %d: %s",
				round, MULTI_EP(q % MULTI_OPS),
				fi_strerror((int)-ret));
			return -1;
		}
	}
	return 0;
}

static int multi_check_recv(const char *name, int round, int q)
{
	int i = MULTI_EP(q), d = MULTI_DIR(q), s = MULTI_SIZE(q);
	struct multi_ep *m = &g_multi.eps[i];
	int src = multi_src(i, d);
	struct ft_comp comp;
	ssize_t bad;
	int ret;

	ret = ft_rdm_wait(m->rep.cq, &m->rxctx[d][s], &comp,
			  ft_rdm_timeout(g_sizes[s]));
	if (ret || comp.err) {
		ft_fail(name, "round %d, ep %d from %d: %s", round, i, src,
			ret ? fi_strerror(-ret) : ft_comp_str(&comp));
		return -1;
	}
	bad = ft_verify(multi_slot(&g_multi.rx, i, d, s), g_sizes[s],
			multi_seed(round, src, d, s));
	if (comp.len != g_sizes[s] || bad >= 0 || comp.src != m->addr[src]) {
		ft_fail(name, "round %d, ep %d from %d: len %zu, bad byte %zd, "
			"FI_SOURCE %llu (want %llu)", round, i, src, comp.len,
			bad, (unsigned long long)comp.src,
			(unsigned long long)m->addr[src]);
		return -1;
	}
	return 0;
}

static int multi_check_send(const char *name, int round, int q)
{
	struct multi_ep *m = &g_multi.eps[MULTI_EP(q)];
	struct ft_comp comp;
	int ret;

	ret = ft_rdm_wait(m->rep.cq, &m->txctx[MULTI_DIR(q)][MULTI_SIZE(q)],
			  &comp, ft_opts.timeout_ms);
	if (!ret && !comp.err)
		return 0;
	ft_fail(name, "round %d, send from ep %d: %s", round, MULTI_EP(q),
		ret ? fi_strerror(-ret) : ft_comp_str(&comp));
	return -1;
}

static int multi_wait_round(const char *name, int round)
{
	int q;

	for (q = 0; q < MULTI_OPS; q++)
		if (multi_check_recv(name, round, q))
			return -1;
	for (q = 0; q < MULTI_OPS; q++)
		if (multi_check_send(name, round, q))
			return -1;
	return 0;
}

static void multi_ring(const char *name, bool shared)
{
	int round, ret;

	ret = multi_open_eps(shared);
	if (ret) {
		ft_fail(name, "opening %d endpoints: %s", g_multi.n,
			fi_strerror(-ret));
		multi_close_eps();
		return;
	}
	for (round = 0; round < ft_opts.iters; round++)
		if (multi_post_round(name, round) ||
		    multi_wait_round(name, round))
			break;
	if (round == ft_opts.iters)
		ft_ok(name);
	multi_close_eps();
}

/* ---- threads on one FI_THREAD_SAFE endpoint --------------------------- */

struct multi_thr {
	pthread_t tid;
	int idx;
	struct ft_rdm_ep *ep;
	fi_addr_t dest;
	struct ft_buf *buf;
	size_t inject_size;
	int failed;
	struct fi_context2 ctx[MULTI_THREAD_WIN];
};

static size_t multi_thr_len(int k)
{
	return k % 16 == 15 ? 64 * 1024 + k : 32 + k % 200;
}

static uint32_t multi_thr_seed(int t, int k)
{
	return t * 100000 + k;
}

/* Every fourth message that fits is an inject: threads race on the
 * provider's inject path too, in order with their sends. */
static bool multi_thr_inject(const struct multi_thr *t, int k)
{
	return k % 4 == 1 && multi_thr_len(k) <= t->inject_size;
}

static void *multi_thr_send(void *arg)
{
	struct multi_thr *t = arg;
	struct ft_comp comp;
	uint8_t *p;
	ssize_t ret;
	int k, j;

	for (k = 0; k < MULTI_THREAD_MSGS + MULTI_THREAD_WIN; k++) {
		j = k % MULTI_THREAD_WIN;
		if (k >= MULTI_THREAD_WIN &&
		    !multi_thr_inject(t, k - MULTI_THREAD_WIN) &&
		    (ft_rdm_wait(t->ep->cq, &t->ctx[j], &comp,
				 ft_opts.timeout_ms) || comp.err))
			goto fail;
		if (k >= MULTI_THREAD_MSGS)
			continue;
		p = (uint8_t *)t->buf->ptr +
		    (size_t)(t->idx * MULTI_THREAD_WIN + j) * MULTI_THREAD_SLOT;
		ft_fill(p, multi_thr_len(k), multi_thr_seed(t->idx, k));
		if (multi_thr_inject(t, k))
			ret = FT_RDM_POST(fi_tinject(t->ep->ep, p,
						     multi_thr_len(k), t->dest,
						     ((uint64_t)t->idx << 32) |
						     k));
		else
			ret = FT_RDM_POST(fi_tsend(t->ep->ep, p,
						   multi_thr_len(k),
						   t->buf->desc, t->dest,
						   ((uint64_t)t->idx << 32) | k,
						   &t->ctx[j]));
		if (ret)
			goto fail;
	}
	return NULL;
fail:
	t->failed = k + 1;
	return NULL;
}

/* Receiver side: a window of receives per thread, each matching only
 * that thread's tags (the low 32 bits ignored), so that the j-th receive
 * of thread t must get t's j-th message. */
struct multi_rx {
	struct ft_rdm_ep *ep;
	struct ft_buf *buf;
	int next[MULTI_THREADS];	/* next message number to post */
	int slot_msg[MULTI_THREADS][MULTI_THREAD_WIN];
	struct fi_context2 ctx[MULTI_THREADS][MULTI_THREAD_WIN];
};

static uint8_t *multi_rx_slot(struct multi_rx *rx, int t, int j)
{
	return (uint8_t *)rx->buf->ptr +
	       (size_t)(t * MULTI_THREAD_WIN + j) * MULTI_THREAD_SLOT;
}

static int multi_rx_post(struct multi_rx *rx, int t, int j)
{
	if (rx->next[t] >= MULTI_THREAD_MSGS)
		return 0;
	rx->slot_msg[t][j] = rx->next[t]++;
	return (int)FT_RDM_POST(fi_trecv(rx->ep->ep, multi_rx_slot(rx, t, j),
					 MULTI_THREAD_SLOT, rx->buf->desc,
					 FI_ADDR_UNSPEC, (uint64_t)t << 32,
					 0xffffffffULL, &rx->ctx[t][j]));
}

/* Check one completion; returns 0 and reposts its slot if it is right. */
static int multi_rx_one(const char *name, struct multi_rx *rx,
			const struct ft_comp *comp)
{
	struct fi_context2 *ctx = comp->ctx;
	size_t off = ctx - &rx->ctx[0][0];
	int t, j, k;
	ssize_t bad;

	if (ctx < &rx->ctx[0][0] || off >= MULTI_THREADS * MULTI_THREAD_WIN ||
	    comp->err) {
		ft_fail(name, "unexpected completion: %s", ft_comp_str(comp));
		return -1;
	}
	t = off / MULTI_THREAD_WIN;
	j = off % MULTI_THREAD_WIN;
	k = rx->slot_msg[t][j];
	bad = ft_verify(multi_rx_slot(rx, t, j), multi_thr_len(k),
			multi_thr_seed(t, k));
	if (comp->len != multi_thr_len(k) || bad >= 0 ||
	    comp->tag != (((uint64_t)t << 32) | k)) {
		ft_fail(name, "thread %d message %d: len %zu, tag 0x%llx, bad "
			"byte %zd", t, k, comp->len,
			(unsigned long long)comp->tag, bad);
		return -1;
	}
	return multi_rx_post(rx, t, j);
}

static int multi_rx_run(const char *name, struct multi_rx *rx)
{
	struct ft_comp comp;
	int t, j, got, ret;

	for (t = 0; t < MULTI_THREADS; t++)
		for (j = 0; j < MULTI_THREAD_WIN; j++)
			if (multi_rx_post(rx, t, j))
				return -1;
	for (got = 0; got < MULTI_THREADS * MULTI_THREAD_MSGS; got++) {
		ret = ft_rdm_wait(rx->ep->cq, NULL, &comp, ft_opts.timeout_ms);
		if (ret) {
			ft_fail(name, "%d of %d messages, then: %s", got,
				MULTI_THREADS * MULTI_THREAD_MSGS,
				fi_strerror(-ret));
			return -1;
		}
		if (multi_rx_one(name, rx, &comp))
			return -1;
	}
	return 0;
}

static void multi_threads_run(struct ft_fab *fab, struct ft_rdm_ep *a,
			      struct ft_rdm_ep *b, fi_addr_t addr_b)
{
	struct multi_thr thr[MULTI_THREADS];
	struct ft_buf txb = { 0 }, rxb = { 0 };
	size_t len = (size_t)MULTI_THREADS * MULTI_THREAD_WIN *
		     MULTI_THREAD_SLOT;
	struct multi_rx *rx = calloc(1, sizeof(*rx));
	int i, started = 0, failed = 0;

	if (!rx || ft_buf_alloc(fab->domain, len, FI_SEND, &txb) ||
	    ft_buf_alloc(fab->domain, len, FI_RECV, &rxb)) {
		ft_fail("multi_threads", "buffers");
		goto out;
	}
	*rx = (struct multi_rx){ .ep = b, .buf = &rxb };
	for (i = 0; i < MULTI_THREADS; i++) {
		thr[i] = (struct multi_thr){
			.idx = i, .ep = a, .dest = addr_b, .buf = &txb,
			.inject_size = fab->info->tx_attr->inject_size,
		};
		if (pthread_create(&thr[i].tid, NULL, multi_thr_send, &thr[i]))
			break;
		started++;
	}
	if (!multi_rx_run("multi_threads_recv", rx))
		ft_ok("multi_threads_recv");
	for (i = 0; i < started; i++) {
		pthread_join(thr[i].tid, NULL);
		if (thr[i].failed)
			ft_info("thread %d failed at message %d", i,
				thr[i].failed - 1);
		failed += !!thr[i].failed;
	}
	ft_check(started == MULTI_THREADS && !failed, "multi_threads_send",
		 "%d threads started, %d failed", started, failed);
out:
	ft_buf_free(&rxb);
	ft_buf_free(&txb);
	free(rx);
}

static void multi_threads(void)
{
	struct fi_info *hints = ft_rdm_hints(FT_RDM_CAPS, FI_THREAD_SAFE);
	struct ft_rdm_ep a = { 0 }, b = { 0 };
	struct ft_fab fab = { 0 };
	fi_addr_t addr_b;
	int ret;

	ret = hints ? ft_rdm_fab_open(&fab, hints, true) : -FI_ENOMEM;
	fi_freeinfo(hints);
	ret = ret ? ret : ft_rdm_ep_open(&fab, NULL, true, 0, &a);
	ret = ret ? ret : ft_rdm_ep_open(&fab, NULL, true, 0, &b);
	ret = ret ? ret : ft_rdm_av_insert(a.av, b.name, &addr_b);
	if (ft_check(!ret, "multi_threads_setup", "FI_THREAD_SAFE: %s",
		     fi_strerror(-ret)))
		multi_threads_run(&fab, &a, &b, addr_b);
	ft_rdm_ep_close(&b);
	ft_rdm_ep_close(&a);
	ft_fab_close(&fab);
}

/* ---- a peer that enters the AV after its messages ----------------------
 * What an MPI does (Open MPI's mtl ofi adds a peer to its AV when it first
 * talks to it): b sends LATE_N eager messages and a rendezvous one to a,
 * whose AV does not hold b yet; they arrive unexpected, from
 * FI_ADDR_NOTAVAIL. Then a inserts b and posts receives directed at b
 * (FI_DIRECTED_RECV): each must take the oldest of b's messages, and
 * report b as the source. */
#define LATE_N 20			/* past the engine's list length */
#define LATE_TAG 0x1a7e
#define LATE_MS 10000

static void late_fill(uint8_t *p, size_t len, int i)
{
	size_t j;

	for (j = 0; j < len; j++)
		p[j] = (uint8_t)(i * 31 + j);
}

static int late_check(const uint8_t *p, size_t len, int i)
{
	size_t j;

	for (j = 0; j < len; j++)
		if (p[j] != (uint8_t)(i * 31 + j))
			return -1;
	return 0;
}

static size_t late_len(int i)
{
	return i == LATE_N ? MULTI_BIG : 64 + (size_t)i;
}

static int late_run(struct ft_rdm_ep *a, struct ft_rdm_ep *b,
		    fi_addr_t b2a, struct ft_buf *txb, struct ft_buf *rxb)
{
	static struct fi_context2 tctx[LATE_N + 1], rctx[LATE_N + 1];
	const char *name = "multi_late_av";
	struct ft_comp comp;
	fi_addr_t a2b;
	uint8_t *p;
	int i, ret;

	for (i = 0; i <= LATE_N; i++) {
		p = (uint8_t *)txb->ptr + (size_t)i * MULTI_SLOT;
		late_fill(p, late_len(i), i);
		ret = FT_RDM_POST(fi_tsend(b->ep, p, late_len(i), txb->desc,
					   b2a, LATE_TAG, &tctx[i]));
		if (ret)
			return ft_fail(name, "fi_tsend %d: %s", i,
				       fi_strerror(-(int)ret)), -1;
	}
	for (i = 0; i < LATE_N; i++)	/* eager: done when a has them */
		if (ft_rdm_wait(b->cq, &tctx[i], &comp, LATE_MS) || comp.err)
			return ft_fail(name, "send %d: %s", i,
				       ft_comp_str(&comp)), -1;
	/* a's progress files them (and the rendezvous' RTS) unexpected */
	if (ft_rdm_drain(a->cq, 500))
		return ft_fail(name, "a completion before any receive"), -1;
	ret = ft_rdm_av_insert(a->av, b->name, &a2b);
	if (ret)
		return ft_fail(name, "fi_av_insert: %s", fi_strerror(-ret)), -1;
	for (i = 0; i <= LATE_N; i++) {
		p = (uint8_t *)rxb->ptr + (size_t)i * MULTI_SLOT;
		ret = FT_RDM_POST(fi_trecv(a->ep, p, MULTI_SLOT, rxb->desc, a2b,
					   LATE_TAG, 0, &rctx[i]));
		if (ret)
			return ft_fail(name, "fi_trecv %d: %s", i,
				       fi_strerror(-(int)ret)), -1;
	}
	for (i = 0; i <= LATE_N; i++) {
		p = (uint8_t *)rxb->ptr + (size_t)i * MULTI_SLOT;
		ret = ft_rdm_wait(a->cq, &rctx[i], &comp, LATE_MS);
		if (ret)
			return ft_fail(name, "receive %d directed at the peer "
				       "inserted late: %s", i,
				       fi_strerror(-ret)), -1;
		if (comp.err || comp.len != late_len(i) ||
		    late_check(p, late_len(i), i))
			return ft_fail(name, "receive %d: %s, %zu bytes "
				       "(want %zu in order)", i,
				       ft_comp_str(&comp), comp.len,
				       late_len(i)), -1;
		if (comp.src != a2b)
			return ft_fail(name, "receive %d: source %#llx, want "
				       "%#llx", i, (unsigned long long)comp.src,
				       (unsigned long long)a2b), -1;
	}
	if (ft_rdm_wait(b->cq, &tctx[LATE_N], &comp, LATE_MS) || comp.err)
		return ft_fail(name, "rendezvous send: %s",
			       ft_comp_str(&comp)), -1;
	ft_ok(name);
	return 0;
}

static void multi_late_av(void)
{
	struct fi_info *hints = ft_rdm_hints(FT_RDM_CAPS, FI_THREAD_UNSPEC);
	struct ft_rdm_ep a = { 0 }, b = { 0 };
	struct ft_buf txb = { 0 }, rxb = { 0 };
	size_t len = (LATE_N + 1) * (size_t)MULTI_SLOT;
	struct ft_fab fab = { 0 };
	fi_addr_t b2a;
	int ret;

	ret = hints ? ft_rdm_fab_open(&fab, hints, true) : -FI_ENOMEM;
	fi_freeinfo(hints);
	ret = ret ? ret : ft_rdm_ep_open(&fab, NULL, true, 0, &a);
	ret = ret ? ret : ft_rdm_ep_open(&fab, NULL, true, 0, &b);
	ret = ret ? ret : ft_rdm_av_insert(b.av, a.name, &b2a);
	ret = ret ? ret : ft_buf_alloc(fab.domain, len, FI_SEND, &txb);
	ret = ret ? ret : ft_buf_alloc(fab.domain, len, FI_RECV, &rxb);
	if (ft_check(!ret, "multi_late_av_setup", "%s", fi_strerror(-ret)))
		late_run(&a, &b, b2a, &txb, &rxb);
	ft_buf_free(&rxb);
	ft_buf_free(&txb);
	ft_rdm_ep_close(&b);
	ft_rdm_ep_close(&a);
	ft_fab_close(&fab);
}

/* ---- main ------------------------------------------------------------- */

static int multi_setup(void)
{
	struct fi_info *hints = ft_rdm_hints(FT_RDM_CAPS, FI_THREAD_UNSPEC);
	size_t len = (size_t)g_multi.n * 2 * MULTI_NSIZES * MULTI_SLOT;
	int ret;

	/* modest queues: 32 endpoints' bounce buffers must fit in 2 GiB */
	if (hints) {
		hints->tx_attr->size = MULTI_QUEUE;
		hints->rx_attr->size = MULTI_QUEUE;
	}
	ret = hints ? ft_rdm_fab_open(&g_multi.fab, hints, true) : -FI_ENOMEM;
	fi_freeinfo(hints);
	g_multi.eps = calloc(g_multi.n, sizeof(*g_multi.eps));
	if (!ret && !g_multi.eps)
		ret = -FI_ENOMEM;
	ret = ret ? ret : ft_buf_alloc(g_multi.fab.domain, len, FI_SEND,
				       &g_multi.tx);
	ret = ret ? ret : ft_buf_alloc(g_multi.fab.domain, len, FI_RECV,
				       &g_multi.rx);
	return ft_check(!ret, "multi_setup", "%s", fi_strerror(-ret)) ? 0 : -1;
}

int main(int argc, char **argv)
{
	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.iters = 4;
	ft_opts.timeout_ms = FT_RDM_DEADLINE_MS;
	ft_set_extra_opts("n:", " -n N         endpoints in the ring "
			  "(default 32)\n", multi_opt);
	ft_parse_opts(argc, argv, "Many RDM endpoints in one process: "
		      "ring, shared AV, threads (-I: ring rounds).", false);
	if (!multi_setup()) {
		multi_ring("multi_ring", false);
		multi_ring("multi_ring_shared_av", true);
	}
	ft_buf_free(&g_multi.tx);
	ft_buf_free(&g_multi.rx);
	ft_fab_close(&g_multi.fab);
	free(g_multi.eps);
	multi_threads();
	multi_late_av();
	return ft_summary();
}
