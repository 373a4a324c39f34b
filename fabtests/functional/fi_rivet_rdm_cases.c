// SPDX-License-Identifier: MIT
/* fi_rivet_rdm cases on matching and errors: per-peer ordering, unexpected
 * storms, peek/claim/discard, cancel, FI_MULTI_RECV, truncation, misuse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi_rivet_rdm.h"

#define RDM_ORDER_MSGS 1000
#define RDM_ORDER_SLOT (RDM_BIG + 1024)
#define RDM_STORM_MSGS 5000
#define RDM_STORM_SLOT 64
#define RDM_STORM_WINDOW 256
#define RDM_MRECV_BUF (64 * 1024)
#define RDM_MRECV_LEN 10000
#define RDM_MRECV_MSGS 5
#define RDM_PEEK_MSGS 5

/* ---- per-peer ordering ------------------------------------------------ */

/* Every tenth message is rendezvous-sized, the others small. */
static size_t rdm_order_len(int k)
{
	return k % 10 == 9 ? RDM_BIG + k : 16 + k % 50;
}

/* Every third message that fits is an inject (a provider may send those
 * by a path of their own: they must keep their place among the others). */
static bool rdm_order_inject(int k)
{
	return k % 3 == 1 &&
	       rdm_order_len(k) <= g_rdm.info->tx_attr->inject_size;
}

/* Receives posted in order must match the messages in sending order,
 * whether they were posted before the message came or after. */
void rdm_order_server(void)
{
	const char *name = "rdm_order";
	uint64_t tag = RDM_TAG(T_ORDER, 7);
	uint8_t *buf = g_rdm.rx.ptr;
	int k, j;

	for (k = 0; k < RDM_WINDOW; k++)
		if (rdm_recv(name, true, buf + k * RDM_ORDER_SLOT,
			     RDM_ORDER_SLOT, tag, 0, FI_ADDR_UNSPEC,
			     &g_rdm.rxctx[k]))
			return;
	if (rdm_sync())
		return;
	for (k = 0; k < RDM_ORDER_MSGS; k++) {
		j = k % RDM_WINDOW;
		if (rdm_wait_recv(name, &g_rdm.rxctx[j], true,
				  rdm_order_len(k), tag,
				  buf + j * RDM_ORDER_SLOT, k)) {
			ft_info("message %d of %d out of order or wrong", k,
				RDM_ORDER_MSGS);
			return;
		}
		if (k + RDM_WINDOW < RDM_ORDER_MSGS &&
		    rdm_recv(name, true, buf + j * RDM_ORDER_SLOT,
			     RDM_ORDER_SLOT, tag, 0, FI_ADDR_UNSPEC,
			     &g_rdm.rxctx[j]))
			return;
	}
	ft_ok(name);
}

void rdm_order_client(void)
{
	const char *name = "rdm_order";
	uint64_t tag = RDM_TAG(T_ORDER, 7);
	uint8_t *buf = g_rdm.tx.ptr, *p;
	ssize_t ret;
	int k, j;

	if (rdm_sync())
		return;
	for (k = 0; k < RDM_ORDER_MSGS + RDM_WINDOW; k++) {
		j = k % RDM_WINDOW;
		if (k >= RDM_WINDOW && !rdm_order_inject(k - RDM_WINDOW) &&
		    rdm_wait_ok(name, 0, &g_rdm.txctx[j], NULL, RDM_BIG))
			return;
		if (k >= RDM_ORDER_MSGS)
			continue;
		p = buf + j * RDM_ORDER_SLOT;
		ft_fill(p, rdm_order_len(k), k);
		if (!rdm_order_inject(k)) {
			if (rdm_send(name, 0, true, p, rdm_order_len(k), tag,
				     &g_rdm.txctx[j]))
				return;
			continue;
		}
		ret = FT_RDM_POST(fi_tinject(g_rdm.ep[0].ep, p,
					     rdm_order_len(k),
					     g_rdm.dest[0], tag));
		memset(p, 0xee, rdm_order_len(k));	/* reusable at once */
		if (ret) {
			ft_fail(name, "fi_tinject(%zu): %s", rdm_order_len(k),
				fi_strerror((int)-ret));
			return;
		}
	}
	ft_ok("rdm_order_send");
}

/* ---- unexpected storm ------------------------------------------------- */

static size_t rdm_storm_len(int k)
{
	return 8 + k % 57;
}

static bool rdm_storm_inject(int k)
{
	return k % 2 && rdm_storm_len(k) <= g_rdm.info->tx_attr->inject_size;
}

/* The client has fired every message before the first receive is posted;
 * they must match in order, with their data. */
void rdm_storm_server(void)
{
	const char *name = "rdm_unexpected_storm";
	uint64_t tag = RDM_TAG(T_STORM, 1);
	uint8_t *buf = g_rdm.rx.ptr;
	struct fi_context2 *ctx;
	int k, j, posted = 0;

	ctx = calloc(RDM_STORM_WINDOW, sizeof(*ctx));
	if (!ctx || rdm_sync())
		goto out;
	for (k = 0; k < RDM_STORM_MSGS; k++) {
		for (; posted < RDM_STORM_MSGS &&
		       posted < k + RDM_STORM_WINDOW; posted++) {
			j = posted % RDM_STORM_WINDOW;
			if (rdm_recv(name, true, buf + j * RDM_STORM_SLOT,
				     RDM_STORM_SLOT, tag, 0, FI_ADDR_UNSPEC,
				     &ctx[j]))
				goto out;
		}
		j = k % RDM_STORM_WINDOW;
		if (rdm_wait_recv(name, &ctx[j], true, rdm_storm_len(k), tag,
				  buf + j * RDM_STORM_SLOT, k + 1000)) {
			ft_info("storm message %d wrong", k);
			goto out;
		}
	}
	ft_ok(name);
out:
	free(ctx);
}

void rdm_storm_client(void)
{
	const char *name = "rdm_unexpected_storm";
	uint64_t tag = RDM_TAG(T_STORM, 1);
	uint8_t *buf = g_rdm.tx.ptr;
	struct fi_context2 *ctx;
	ssize_t ret;
	int k;

	ctx = calloc(RDM_STORM_MSGS, sizeof(*ctx));
	if (!ctx)
		return;
	/* every other one an inject: thousands of them back to back, more
	 * than any send queue holds */
	for (k = 0; k < RDM_STORM_MSGS; k++) {
		ft_fill(buf + k * RDM_STORM_SLOT, rdm_storm_len(k), k + 1000);
		if (!rdm_storm_inject(k)) {
			if (rdm_send(name, 0, true, buf + k * RDM_STORM_SLOT,
				     rdm_storm_len(k), tag, &ctx[k]))
				goto out;
		} else if ((ret = FT_RDM_POST(fi_tinject(g_rdm.ep[0].ep,
						buf + k * RDM_STORM_SLOT,
						rdm_storm_len(k),
						g_rdm.dest[0], tag)))) {
			ft_fail(name, "fi_tinject: %s",
				fi_strerror((int)-ret));
			goto out;
		}
	}
	if (rdm_sync())
		goto out;
	for (k = 0; k < RDM_STORM_MSGS; k++)
		if (!rdm_storm_inject(k) &&
		    rdm_wait_ok(name, 0, &ctx[k], NULL, 0))
			goto out;
	ft_ok("rdm_storm_send");
out:
	free(ctx);
}

/* ---- peek, claim, discard --------------------------------------------- */

static size_t rdm_peek_len(int i)
{
	return i == RDM_PEEK_MSGS - 1 ? (1 << 20) : 100;
}

/* A buffer-less FI_PEEK (plus flags) for tag: 0 and *comp when found,
 * -FI_ENOMSG, or another error (FAIL printed). */
static int rdm_peek(const char *name, uint64_t tag, uint64_t flags,
		    void *ctx, struct ft_comp *comp)
{
	struct fi_msg_tagged msg = { .addr = FI_ADDR_UNSPEC, .tag = tag,
				     .context = ctx };
	ssize_t ret;

	ret = FT_RDM_POST(fi_trecvmsg(g_rdm.ep[0].ep, &msg, FI_PEEK | flags));
	if (ret) {
		ft_fail(name, "fi_trecvmsg(FI_PEEK): %s",
			fi_strerror((int)-ret));
		return (int)ret;
	}
	ret = ft_rdm_wait(g_rdm.ep[0].cq, ctx, comp, ft_opts.timeout_ms);
	if (ret) {
		ft_fail(name, "peek never completed: %s",
			fi_strerror((int)-ret));
		return (int)ret;
	}
	if (comp->err && comp->err != FI_ENOMSG) {
		ft_fail(name, "peek: %s", ft_comp_str(comp));
		return -comp->err;
	}
	return comp->err ? -FI_ENOMSG : 0;
}

/* Peek until the message is there (it may still be on its way). */
static int rdm_peek_find(const char *name, int i, uint64_t flags,
			 void *ctx)
{
	uint64_t end = ft_now_ms() + ft_opts.timeout_ms;
	uint64_t tag = RDM_TAG(T_PEEK, i);
	struct ft_comp comp;
	int ret;

	do {
		ret = rdm_peek(name, tag, flags, ctx, &comp);
	} while (ret == -FI_ENOMSG && ft_now_ms() < end);
	if (ret == -FI_ENOMSG)
		ft_fail(name, "message %d never seen by FI_PEEK", i);
	if (ret)
		return -1;
	/* a discarding peek may report len 0 (nothing was placed) */
	if ((comp.len != rdm_peek_len(i) &&
	     !(comp.len == 0 && (flags & FI_DISCARD))) || comp.tag != tag ||
	    comp.src != g_rdm.peer[0] || !(comp.flags & FI_RECV)) {
		ft_fail(name, "peek found len %zu tag 0x%llx src %llu flags "
			"0x%llx", comp.len, (unsigned long long)comp.tag,
			(unsigned long long)comp.src,
			(unsigned long long)comp.flags);
		return -1;
	}
	return 0;
}

/* The message is gone (discarded or claimed): a peek must not see it. */
static int rdm_peek_gone(const char *name, int i)
{
	struct ft_comp comp;
	int ret;

	ret = rdm_peek(name, RDM_TAG(T_PEEK, i), 0, &g_rdm.rxctx[9], &comp);
	if (ret == -FI_ENOMSG)
		return 0;
	if (!ret)
		ft_fail(name, "FI_PEEK still sees message %d", i);
	return -1;
}

/* Receive claimed message i (or discard it) with the claiming context. */
static int rdm_claim(const char *name, int i, uint64_t flags, void *ctx)
{
	uint64_t tag = RDM_TAG(T_PEEK, i);
	size_t len = rdm_peek_len(i);
	struct iovec iov = { g_rdm.rx.ptr, len };
	struct fi_msg_tagged msg = { .msg_iov = &iov, .desc = &g_rdm.rx.desc,
				     .iov_count = 1, .addr = FI_ADDR_UNSPEC,
				     .tag = tag, .context = ctx };
	struct ft_comp comp;
	ssize_t ret;

	ret = FT_RDM_POST(fi_trecvmsg(g_rdm.ep[0].ep, &msg, FI_CLAIM | flags));
	if (ret) {
		ft_fail(name, "fi_trecvmsg(FI_CLAIM): %s",
			fi_strerror((int)-ret));
		return -1;
	}
	if (rdm_wait_ok(name, 0, ctx, &comp, len))
		return -1;
	if (flags & FI_DISCARD)
		return 0;
	return rdm_check_recv(name, &comp, true, len, tag, g_rdm.peer[0],
			      g_rdm.rx.ptr, 80 + i);
}

static int rdm_peek_plain(void)
{
	const char *name = "rdm_peek";
	struct ft_comp comp;

	if (rdm_peek(name, RDM_TAG(T_PEEK, 99), 0, &g_rdm.rxctx[0],
		     &comp) != -FI_ENOMSG) {
		ft_fail("rdm_peek_enomsg", "peek for an absent tag found %s",
			"something");
		return -1;
	}
	ft_ok("rdm_peek_enomsg");
	if (rdm_peek_find(name, 0, 0, &g_rdm.rxctx[0]) ||
	    rdm_peek_find(name, 0, 0, &g_rdm.rxctx[0]) ||
	    rdm_recv(name, true, g_rdm.rx.ptr, 100, RDM_TAG(T_PEEK, 0), 0,
		     FI_ADDR_UNSPEC, &g_rdm.rxctx[0]) ||
	    rdm_wait_recv(name, &g_rdm.rxctx[0], true, 100, RDM_TAG(T_PEEK, 0),
			  g_rdm.rx.ptr, 80))
		return -1;
	ft_ok(name);
	return 0;
}

/* Message 1: peek+claim, claim; 2: peek+discard; 3: peek+claim, claim+
 * discard; 4 (1 MiB): peek+claim, claim. */
void rdm_peek_server(void)
{
	struct fi_context *c = (struct fi_context *)&g_rdm.rxctx[1];

	if (rdm_sync() || rdm_peek_plain())
		return;
	if (!rdm_peek_find("rdm_peek_claim", 1, FI_CLAIM, c) &&
	    !rdm_peek_gone("rdm_peek_claim", 1) &&
	    !rdm_claim("rdm_peek_claim", 1, 0, c))
		ft_ok("rdm_peek_claim");
	if (!rdm_peek_find("rdm_peek_discard", 2, FI_DISCARD, c) &&
	    !rdm_peek_gone("rdm_peek_discard", 2))
		ft_ok("rdm_peek_discard");
	if (!rdm_peek_find("rdm_claim_discard", 3, FI_CLAIM, c) &&
	    !rdm_claim("rdm_claim_discard", 3, FI_DISCARD, c) &&
	    !rdm_peek_gone("rdm_claim_discard", 3))
		ft_ok("rdm_claim_discard");
	if (!rdm_peek_find("rdm_peek_claim_large", 4, FI_CLAIM, c) &&
	    !rdm_claim("rdm_peek_claim_large", 4, 0, c))
		ft_ok("rdm_peek_claim_large");
	rdm_sync();
}

void rdm_peek_client(void)
{
	const char *name = "rdm_peek_send";
	uint8_t *buf = g_rdm.tx.ptr;
	struct ft_comp comp;
	size_t off = 0;
	int i;

	for (i = 0; i < RDM_PEEK_MSGS; off += rdm_peek_len(i), i++) {
		ft_fill(buf + off, rdm_peek_len(i), 80 + i);
		if (rdm_send(name, 0, true, buf + off, rdm_peek_len(i),
			     RDM_TAG(T_PEEK, i), &g_rdm.txctx[i]))
			return;
	}
	if (rdm_sync() || rdm_sync())
		return;
	/* discarded messages may complete with or without an error */
	for (i = 0; i < RDM_PEEK_MSGS; i++) {
		if (i != 2 && i != 3 &&
		    rdm_wait_ok(name, 0, &g_rdm.txctx[i], NULL, 1 << 20))
			return;
		if ((i == 2 || i == 3) &&
		    ft_rdm_wait(g_rdm.ep[0].cq, &g_rdm.txctx[i], &comp,
				ft_opts.timeout_ms)) {
			ft_fail(name, "send of discarded message %d never "
				"completed", i);
			return;
		}
	}
	ft_ok(name);
}

/* ---- FI_MULTI_RECV ---------------------------------------------------- */

/* Check one completion of the multi-receive buffer; 1 once it is
 * released (FI_MULTI_RECV), 0 to go on, -1 on failure. */
static int rdm_mrecv_one(const char *name, const struct ft_comp *comp,
			 int *nmsg, uint8_t **next)
{
	uint8_t *base = g_rdm.rx.ptr;
	bool released = comp->flags & FI_MULTI_RECV;

	if (released && !comp->len)
		return 1;	/* a separate "buffer released" entry */
	if (*nmsg >= RDM_MRECV_MSGS || comp->len != RDM_MRECV_LEN ||
	    (uint8_t *)comp->buf < base ||
	    (uint8_t *)comp->buf + comp->len > base + RDM_MRECV_BUF ||
	    (uint8_t *)comp->buf < *next) {
		ft_fail(name, "completion %d: len %zu at offset %td", *nmsg,
			comp->len, (uint8_t *)comp->buf - base);
		return -1;
	}
	if (rdm_check_recv(name, comp, false, RDM_MRECV_LEN, 0, g_rdm.peer[0],
			   comp->buf, 90 + *nmsg))
		return -1;
	*next = (uint8_t *)comp->buf + comp->len;
	(*nmsg)++;
	return released;
}

void rdm_mrecv_server(void)
{
	const char *name = "rdm_multi_recv";
	struct iovec iov = { g_rdm.rx.ptr, RDM_MRECV_BUF };
	struct fi_msg msg = { .msg_iov = &iov, .desc = &g_rdm.rx.desc,
			      .iov_count = 1, .addr = FI_ADDR_UNSPEC,
			      .context = &g_rdm.rxctx[0] };
	uint8_t *next = g_rdm.rx.ptr;
	struct ft_comp comp;
	int ret = 0, n = 0;
	ssize_t rc;

	rc = FT_RDM_POST(fi_recvmsg(g_rdm.ep[0].ep, &msg, FI_MULTI_RECV));
	if (rc) {
		ft_fail(name, "fi_recvmsg(FI_MULTI_RECV): %s",
			fi_strerror((int)-rc));
		return;
	}
	if (rdm_sync())
		return;
	while (!ret) {
		if (rdm_wait_ok(name, 0, &g_rdm.rxctx[0], &comp, 0))
			return;
		ret = rdm_mrecv_one(name, &comp, &n, &next);
	}
	if (ret > 0)
		ft_check(n == RDM_MRECV_MSGS, name, "buffer released after %d "
			 "of %d messages", n, RDM_MRECV_MSGS);
}

void rdm_mrecv_client(void)
{
	uint8_t *buf = g_rdm.tx.ptr;
	int i;

	if (rdm_sync())
		return;
	for (i = 0; i < RDM_MRECV_MSGS; i++) {
		ft_fill(buf + i * RDM_MRECV_LEN, RDM_MRECV_LEN, 90 + i);
		if (rdm_send("rdm_multi_recv_send", 0, false,
			     buf + i * RDM_MRECV_LEN, RDM_MRECV_LEN, 0,
			     &g_rdm.txctx[i]))
			return;
	}
	for (i = 0; i < RDM_MRECV_MSGS; i++)
		if (rdm_wait_ok("rdm_multi_recv_send", 0, &g_rdm.txctx[i], NULL,
				RDM_MRECV_LEN))
			return;
}

/* A multi-receive buffer is given back by its last completion (fi_msg(3):
 * FI_MULTI_RECV "the buffer has been released"): with a rendezvous still
 * reading into it, not before that has landed.  First an eager message
 * that leaves less than the minimum behind a rendezvous; then fi_cancel
 * of a buffer a rendezvous of 8 MiB is reading into. */
#define RDM_MRNDV_LEN1 (RDM_BIG + RDM_MRECV_MIN + 2048)
#define RDM_MRNDV_EAGER 4096	/* leaves less than RDM_MRECV_MIN */
#define RDM_MRNDV_HUGE (8UL << 20)
#define RDM_MRNDV_OFF2 (1UL << 20)
#define RDM_MRNDV_LEN2 (2 * RDM_MRNDV_HUGE)

/* Completions of ctx until the one that gives the buffer back (in
 * *last); n counts the others, each of a length in want[] (in any order,
 * each once, the last's too if it carries data); then nothing more for
 * ctx within after_ms. */
static int rdm_mrndv_collect(const char *name, void *ctx, size_t *want,
			     int nwant, struct ft_comp *last, int after_ms)
{
	struct ft_comp c;
	int n = 0, ret, k;

	for (;;) {
		ret = ft_rdm_wait(g_rdm.ep[0].cq, ctx, &c,
				  ft_rdm_timeout(RDM_MRNDV_HUGE));
		if (ret) {
			ft_fail(name, "no completion after %d: %s", n,
				fi_strerror(-ret));
			return -1;
		}
		for (k = 0; k < nwant && (c.err || want[k] != c.len); k++)
			;
		if (!c.err && k == nwant && c.len) {
			ft_fail(name, "completion %d of %zu bytes", n, c.len);
			return -1;
		}
		if (k < nwant)
			want[k] = 0;	/* taken */
		if ((c.flags & FI_MULTI_RECV) || c.err)
			break;
		n++;
	}
	*last = c;
	ret = ft_rdm_wait(g_rdm.ep[0].cq, ctx, &c, after_ms);
	if (!ret) {
		ft_fail(name, "a completion (%zu bytes, %s) after the one that "
			"gave the buffer back", c.len, ft_comp_str(&c));
		return -1;
	}
	return n;
}

void rdm_mrecv_rndv_server(void)
{
	const char *name = "rdm_multi_recv_rndv_release";
	uint8_t *b1 = g_rdm.rx.ptr, *b2 = b1 + RDM_MRNDV_OFF2;
	struct iovec iov = { b1, RDM_MRNDV_LEN1 };
	struct fi_msg msg = { .msg_iov = &iov, .desc = &g_rdm.rx.desc,
			      .iov_count = 1, .addr = FI_ADDR_UNSPEC,
			      .context = &g_rdm.rxctx[0] };
	size_t want1[] = { RDM_BIG, RDM_MRNDV_EAGER };
	size_t want2[] = { RDM_MRNDV_HUGE };
	struct ft_comp c, last;
	uint64_t end;
	int n;
	ssize_t rc;

	rc = FT_RDM_POST(fi_recvmsg(g_rdm.ep[0].ep, &msg, FI_MULTI_RECV));
	if (!ft_check(!rc, name, "fi_recvmsg: %zd", rc) || rdm_sync())
		return;
	n = rdm_mrndv_collect(name, &g_rdm.rxctx[0], want1, 2, &last, 500);
	/* both messages, the last of them giving the buffer back (or a
	 * separate entry after them) */
	if (n >= 0 && ft_check(!last.err && !want1[0] && !want1[1], name,
			       "%d completions before the release (%s, %zu "
			       "bytes)", n, ft_comp_str(&last), last.len) &&
	    ft_check(ft_verify(b1, RDM_BIG, 70) < 0 &&
		     ft_verify(b1 + RDM_BIG, RDM_MRNDV_EAGER, 71) < 0, name,
		     "data"))
		ft_ok(name);

	name = "rdm_multi_recv_rndv_cancel";
	iov = (struct iovec) { b2, RDM_MRNDV_LEN2 };
	msg.context = &g_rdm.rxctx[1];
	rc = FT_RDM_POST(fi_recvmsg(g_rdm.ep[0].ep, &msg, FI_MULTI_RECV));
	if (!ft_check(!rc, name, "fi_recvmsg: %zd", rc) || rdm_sync())
		return;
	/* a small message first: the rendezvous is right behind it */
	if (rdm_wait_ok(name, 0, &g_rdm.rxctx[1], &c, 64))
		return;
	end = ft_now_ms() + 100;
	while (ft_now_ms() < end)
		ft_rdm_progress();
	rc = fi_cancel(&g_rdm.ep[0].ep->fid, &g_rdm.rxctx[1]);
	if (!ft_check(!rc, name, "fi_cancel: %zd", rc))
		return;
	n = rdm_mrndv_collect(name, &g_rdm.rxctx[1], want2, 1, &last, 0);
	/* the sender is done once the rendezvous has landed: nothing of
	 * this buffer's may come after that either */
	if (n < 0 || rdm_sync())
		return;
	if (!ft_rdm_wait(g_rdm.ep[0].cq, &g_rdm.rxctx[1], &c, 200)) {
		ft_fail(name, "a completion (%zu bytes, %s) after the buffer "
			"was given back", c.len, ft_comp_str(&c));
		return;
	}
	if (ft_check(last.err == FI_ECANCELED &&
			       (last.flags & FI_MULTI_RECV), name, "the "
			       "buffer's last completion: %s, flags 0x%llx",
			       ft_comp_str(&last),
			       (unsigned long long)last.flags) &&
	    ft_check(n == 0 || ft_verify(b2 + 64, RDM_MRNDV_HUGE, 73) < 0,
		     name, "data"))
		ft_ok(name);
}

void rdm_mrecv_rndv_client(void)
{
	const char *name = "rdm_multi_recv_rndv_send";
	uint8_t *buf = g_rdm.tx.ptr;
	const size_t len[] = { RDM_BIG, RDM_MRNDV_EAGER, 64, RDM_MRNDV_HUGE };
	size_t off[4];
	int i;

	off[0] = 0;
	for (i = 1; i < 4; i++)
		off[i] = off[i - 1] + len[i - 1];
	for (i = 0; i < 4; i++)
		ft_fill(buf + off[i], len[i], 70 + (uint32_t)i);
	for (i = 0; i < 4; i++) {
		if (i == 0 || i == 2)
			if (rdm_sync())
				return;
		if (rdm_send(name, 0, false, buf + off[i], len[i], 0,
			     &g_rdm.txctx[i]))
			return;
		if (i == 1 && (rdm_wait_ok(name, 0, &g_rdm.txctx[0], NULL,
					   len[0]) ||
			       rdm_wait_ok(name, 0, &g_rdm.txctx[1], NULL,
					   len[1])))
			return;
	}
	for (i = 2; i < 4; i++)
		if (rdm_wait_ok(name, 0, &g_rdm.txctx[i], NULL, len[i]))
			return;
	(void)rdm_sync();
}

/* ---- what fi_close owes ----------------------------------------------- */

/* Injects are complete when the call returns: an endpoint closed right
 * after them (its connection to the peer still coming up) delivers them
 * all the same (MPICH acknowledges a message with an inject, then
 * finalizes). */
#define RDM_CLOSE_MSGS 2
#define RDM_CLOSE_LEN 32

void rdm_close_owed_server(void)
{
	const char *name = "rdm_close_owed";
	uint8_t *buf = g_rdm.rx.ptr;
	struct ft_comp c;
	int k, ret;

	for (k = 0; k < RDM_CLOSE_MSGS; k++)
		if (rdm_recv(name, true, buf + k * 64, 64, RDM_TAG(T_CLOSE, k),
			     0, FI_ADDR_UNSPEC, &g_rdm.rxctx[k]))
			return;
	if (rdm_sync() || rdm_sync())	/* the second: the client closed */
		return;
	for (k = 0; k < RDM_CLOSE_MSGS; k++) {
		ret = ft_rdm_wait(g_rdm.ep[0].cq, &g_rdm.rxctx[k], &c, 5000);
		if (!ft_check(!ret && !c.err, name, "inject %d of an endpoint "
			      "closed after it: %s", k,
			      ret ? fi_strerror(-ret) : ft_comp_str(&c)) ||
		    !ft_check(c.len == RDM_CLOSE_LEN &&
			      c.tag == RDM_TAG(T_CLOSE, k) &&
			      ft_verify(buf + k * 64, RDM_CLOSE_LEN,
					40 + (uint32_t)k) < 0, name,
			      "inject %d: %zu bytes, tag 0x%llx, data", k,
			      c.len, (unsigned long long)c.tag))
			return;
	}
	ft_ok(name);
}

void rdm_close_owed_client(void)
{
	const char *name = "rdm_close_owed";
	uint8_t *p = g_rdm.tx.ptr;
	struct ft_rdm_ep e;
	ssize_t rc;
	int k, ret;

	if (rdm_sync())
		return;
	/* a new endpoint: no connection to the server yet */
	ret = ft_rdm_ep_open(&g_rdm.fab, g_rdm.ep[0].av, true, 0, &e);
	if (!ft_check(!ret, name, "endpoint: %s", fi_strerror(-ret)))
		return;
	for (k = 0; k < RDM_CLOSE_MSGS; k++) {
		ft_fill(p + k * 64, RDM_CLOSE_LEN, 40 + (uint32_t)k);
		rc = FT_RDM_POST(fi_tinject(e.ep, p + k * 64, RDM_CLOSE_LEN,
					    g_rdm.dest[0],
					    RDM_TAG(T_CLOSE, k)));
		if (!ft_check(!rc, name, "fi_tinject: %s",
			      fi_strerror((int)-rc)))
			break;
	}
	ft_rdm_ep_close(&e);	/* at once */
	(void)rdm_sync();
}

/* ---- truncation ------------------------------------------------------- */

struct rdm_trunc {
	const char *name;
	bool tagged;
	size_t buf;
	size_t len;
};

static const struct rdm_trunc g_trunc[] = {
	{ "rdm_trunc_msg", false, 100, 500 },
	{ "rdm_trunc_tagged", true, 100, 1000 },
	{ "rdm_trunc_tagged_large", true, 64 * 1024, 1 << 20 },
};

#define RDM_NTRUNC (sizeof(g_trunc) / sizeof(g_trunc[0]))

/* A receive smaller than the message: FI_ETRUNC with olen the excess. */
void rdm_trunc_server(void)
{
	const struct rdm_trunc *t;
	uint8_t *buf = g_rdm.rx.ptr;
	struct ft_comp comp;
	size_t i;
	int ret;

	for (i = 0; i < RDM_NTRUNC; i++)
		if (rdm_recv(g_trunc[i].name, g_trunc[i].tagged,
			     buf + i * (1 << 20), g_trunc[i].buf,
			     RDM_TAG(T_TRUNC, i), 0, FI_ADDR_UNSPEC,
			     &g_rdm.rxctx[i]))
			return;
	if (rdm_sync())
		return;
	for (i = 0; i < RDM_NTRUNC; i++) {
		t = &g_trunc[i];
		ret = ft_rdm_wait(g_rdm.ep[0].cq, &g_rdm.rxctx[i], &comp,
				  ft_rdm_timeout(t->len));
		if (ret)
			ft_fail(t->name, "no completion: %s",
				fi_strerror(-ret));
		else
			ft_check(comp.err == FI_ETRUNC &&
				 comp.olen == t->len - t->buf, t->name,
				 "%s, olen %zu (want FI_ETRUNC, olen %zu)",
				 ft_comp_str(&comp), comp.olen,
				 t->len - t->buf);
	}
}

/* The sender's side of a truncated message must complete (either way). */
void rdm_trunc_client(void)
{
	uint8_t *buf = g_rdm.tx.ptr;
	struct ft_comp comp;
	size_t i;
	int ret;

	if (rdm_sync())
		return;
	for (i = 0; i < RDM_NTRUNC; i++) {
		ft_fill(buf + i * (1 << 20), g_trunc[i].len, 100 + i);
		if (rdm_send(g_trunc[i].name, 0, g_trunc[i].tagged,
			     buf + i * (1 << 20), g_trunc[i].len,
			     RDM_TAG(T_TRUNC, i), &g_rdm.txctx[i]))
			return;
	}
	for (i = 0; i < RDM_NTRUNC; i++) {
		ret = ft_rdm_wait(g_rdm.ep[0].cq, &g_rdm.txctx[i], &comp,
				  ft_rdm_timeout(g_trunc[i].len));
		if (ret) {
			ft_fail("rdm_trunc_send", "%s: send never completed",
				g_trunc[i].name);
			return;
		}
		if (comp.err)
			ft_info("%s: sender got %s", g_trunc[i].name,
				ft_comp_str(&comp));
	}
	ft_ok("rdm_trunc_send");
}

/* ---- cancel ----------------------------------------------------------- */

static void rdm_cancel_one(const char *name, bool tagged)
{
	void *ctx = &g_rdm.rxctx[0];
	struct ft_comp comp;
	int ret;

	if (rdm_recv(name, tagged, g_rdm.rx.ptr, 4096, RDM_TAG(T_CANCEL, 1),
		     0, FI_ADDR_UNSPEC, ctx))
		return;
	ret = (int)fi_cancel(&g_rdm.ep[0].ep->fid, ctx);
	if (ret) {
		ft_fail(name, "fi_cancel: %s", fi_strerror(-ret));
		return;
	}
	ret = ft_rdm_wait(g_rdm.ep[0].cq, ctx, &comp, ft_opts.timeout_ms);
	if (ret) {
		ft_fail(name, "no completion after fi_cancel: %s",
			fi_strerror(-ret));
		return;
	}
	ft_check(comp.err == FI_ECANCELED && comp.ctx == ctx, name,
		 "completion %s (want FI_ECANCELED)", ft_comp_str(&comp));
}

/* fi_cq(3) err_data: the provider writes into the caller's buffer only
 * the provider-specific data it has, err_data_size bytes; rivet has none
 * for a cancel, so a buffer given must come back untouched, with
 * err_data_size 0, and fi_cq_strerror must still say something. */
static void rdm_cancel_err_data(void)
{
	const char *name = "rdm_cancel_err_data";
	void *ctx = &g_rdm.rxctx[0];
	struct fi_cq_err_entry e;
	uint8_t canary[64], want[64];
	struct fi_cq_tagged_entry c;
	char str[128];
	const char *s;
	ssize_t ret;
	uint64_t end = ft_now_ms() + ft_opts.timeout_ms;

	if (rdm_recv(name, true, g_rdm.rx.ptr, 4096, RDM_TAG(T_CANCEL, 2), 0,
		     FI_ADDR_UNSPEC, ctx))
		return;
	ret = fi_cancel(&g_rdm.ep[0].ep->fid, ctx);
	if (ret) {
		ft_fail(name, "fi_cancel: %s", fi_strerror((int)-ret));
		return;
	}
	do
		ret = fi_cq_read(g_rdm.ep[0].cq, &c, 1);
	while (ret == -FI_EAGAIN && ft_now_ms() < end);
	if (ret != -FI_EAVAIL) {
		ft_fail(name, "fi_cq_read: %zd, want -FI_EAVAIL", ret);
		return;
	}
	memset(canary, 0xa5, sizeof(canary));
	memcpy(want, canary, sizeof(want));
	memset(&e, 0x5a, sizeof(e));	/* an uninitialised entry ... */
	e.err_data = canary;		/* ... with a buffer that it owns */
	e.err_data_size = sizeof(canary);
	ret = fi_cq_readerr(g_rdm.ep[0].cq, &e, 0);
	if (!ft_check(ret == 1 && e.err == FI_ECANCELED && e.op_context == ctx,
		      name, "fi_cq_readerr %zd, err %d (want 1, FI_ECANCELED)",
		      ret, e.err))
		return;
	s = fi_cq_strerror(g_rdm.ep[0].cq, e.prov_errno, e.err_data, str,
			   sizeof(str));
	ft_check(!memcmp(canary, want, sizeof(canary)) &&
		 e.err_data_size == 0 && s && *s && strcmp(s, "success"),
		 name, "err_data_size %zu, buffer %s, strerror(%d) \"%s\"",
		 e.err_data_size, memcmp(canary, want, sizeof(canary)) ?
		 "overwritten" : "untouched", e.prov_errno, s ? s : "(null)");
}

/* Local on both sides: nothing is sent with these tags. */
void rdm_cancel(void)
{
	rdm_cancel_one("rdm_cancel_trecv", true);
	rdm_cancel_one("rdm_cancel_recv", false);
	rdm_cancel_err_data();
}

/* ---- bad arguments ---------------------------------------------------- */

/* One more iov than iov_limit must be refused with -FI_EINVAL. */
static void rdm_bad_iov(const struct fi_info *info, struct ft_rdm_ep *a,
			fi_addr_t dest, void *desc, void *buf)
{
	size_t n = info->tx_attr->iov_limit + 1, i;
	struct iovec *iov = calloc(n, sizeof(*iov));
	void **descs = calloc(n, sizeof(*descs));
	struct fi_context2 ctx;
	ssize_t ret;

	if (!iov || !descs)
		goto out;
	for (i = 0; i < n; i++) {
		iov[i] = (struct iovec){ (uint8_t *)buf + i * 8, 8 };
		descs[i] = desc;
	}
	ret = fi_tsendv(a->ep, iov, descs, n, dest, RDM_TAG(T_BAD, 1), &ctx);
	ft_check(ret == -FI_EINVAL, "rdm_bad_iov_count_send",
		 "fi_tsendv with %zu iovs (limit %zu) returned %zd", n, n - 1,
		 ret);
	n = info->rx_attr->iov_limit + 1;
	ret = fi_trecvv(a->ep, iov, descs, n, FI_ADDR_UNSPEC,
			RDM_TAG(T_BAD, 1), 0, &ctx);
	ft_check(ret == -FI_EINVAL, "rdm_bad_iov_count_recv",
		 "fi_trecvv with %zu iovs (limit %zu) returned %zd", n, n - 1,
		 ret);
out:
	free(iov);
	free(descs);
}

/* A send to an fi_addr the AV never gave out must fail: at once, or with
 * an error completion. */
static void rdm_bad_addr(const char *name, struct ft_rdm_ep *a,
			 fi_addr_t dest, void *desc, void *buf)
{
	struct fi_context2 ctx;
	struct ft_comp comp;
	ssize_t ret;

	ret = FT_RDM_POST(fi_tsend(a->ep, buf, 8, desc, dest,
				   RDM_TAG(T_BAD, 2), &ctx));
	if (ret) {
		ft_check(ret < 0, name, "returned %zd", ret);
		return;
	}
	/* ft_fork_case allows the child one timeout: use a third each */
	ret = ft_rdm_wait(a->cq, &ctx, &comp, ft_opts.timeout_ms / 3);
	if (ret)
		ft_fail(name, "neither refused nor completed: %s",
			fi_strerror((int)-ret));
	else
		ft_check(comp.err != 0, name, "the send succeeded");
}

/* A fabric of its own with endpoints a and b, each in the other's AV. */
struct rdm_bad_env {
	struct ft_rdm_pair p;
	struct ft_buf buf;
};

static int rdm_bad_open(struct rdm_bad_env *env)
{
	int ret;

	memset(env, 0, sizeof(*env));
	ret = ft_rdm_pair_open(&env->p, FT_RDM_CAPS);
	ret = ret ? ret : ft_buf_alloc(env->p.fab.domain, 4096, FI_SEND,
				       &env->buf);
	if (ret)
		ft_fail("rdm_bad_setup", "%s", fi_strerror(-ret));
	return ret;
}

static void rdm_bad_close(struct rdm_bad_env *env)
{
	ft_buf_free(&env->buf);
	ft_rdm_pair_close(&env->p);
}

/* Each misuse in a child process with its own fabric: a crash costs one
 * failure, not the rest of the run. */
static void rdm_bad_iov_child(void)
{
	struct rdm_bad_env env;

	if (!rdm_bad_open(&env))
		rdm_bad_iov(env.p.fab.info, &env.p.a, env.p.a2b, env.buf.desc,
			    env.buf.ptr);
	rdm_bad_close(&env);
}

static void rdm_bad_addr_child(void)
{
	struct rdm_bad_env env;

	if (!rdm_bad_open(&env))
		rdm_bad_addr("rdm_bad_fi_addr", &env.p.a, env.p.a2b + 1000,
			     env.buf.desc, env.buf.ptr);
	rdm_bad_close(&env);
}

static void rdm_removed_addr_child(void)
{
	struct rdm_bad_env env;
	int ret;

	if (!rdm_bad_open(&env)) {
		ret = fi_av_remove(env.p.a.av, &env.p.a2b, 1, 0);
		if (ft_check(!ret, "rdm_av_remove", "%s", fi_strerror(-ret)))
			rdm_bad_addr("rdm_removed_fi_addr", &env.p.a, env.p.a2b,
				     env.buf.desc, env.buf.ptr);
	}
	rdm_bad_close(&env);
}

void rdm_bad_server(void)
{
}

void rdm_bad_client(void)
{
	ft_fork_case("rdm_bad_iov_count", rdm_bad_iov_child);
	ft_fork_case("rdm_bad_fi_addr", rdm_bad_addr_child);
	ft_fork_case("rdm_removed_fi_addr", rdm_removed_addr_child);
}
