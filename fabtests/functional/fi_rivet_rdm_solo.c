// SPDX-License-Identifier: MIT
/* fi_rivet_rdm case rdm_solo: a tagged receive posted alone, and what
 * comes after it.  A provider may keep a lone receive apart from its
 * matching index (rivet does: its ping-pong fast path); it must then
 * still be the oldest receive for every later one, for a message that
 * does not match it, for a rendezvous, for an untagged receive beside it
 * and for fi_cancel.  Each step: the server posts, both sync, the client
 * sends and waits for its sends.  Case rdm_multi_recv_reuse: the
 * operation of a released multi-receive buffer serves later receives as
 * a fresh one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi_rivet_rdm.h"

#define SOLO_LEN 64
#define SOLO_SLOT (RDM_BIG + 4096)

struct solo_msg {
	bool tagged;
	uint64_t tag;
	size_t len;
	uint32_t seed;
};

/* What the client sends after each of the server's syncs. */
static const struct solo_msg g_step[][2] = {
	/* 1: the lone receive's tag comes second: the first waits */
	{ { true, RDM_TAG(T_SOLO, 2), SOLO_LEN, 2 },
	  { true, RDM_TAG(T_SOLO, 1), SOLO_LEN, 1 } },
	/* 2: two receives of one tag: posting order */
	{ { true, RDM_TAG(T_SOLO, 3), SOLO_LEN, 3 },
	  { true, RDM_TAG(T_SOLO, 3), SOLO_LEN, 4 } },
	/* 3: a second receive, of another tag, takes the first message
	 * (after step 2, both receives' operations are at hand: a provider
	 * that allocates them takes its fast path for both) */
	{ { true, RDM_TAG(T_SOLO, 12), SOLO_LEN, 12 },
	  { true, RDM_TAG(T_SOLO, 11), SOLO_LEN, 11 } },
	/* 4: an untagged message, then a rendezvous for the lone one */
	{ { false, 0, SOLO_LEN, 6 },
	  { true, RDM_TAG(T_SOLO, 5), RDM_BIG, 5 } },
	/* 5: a wildcard alone, then an exact one: the wildcard first */
	{ { true, RDM_TAG(T_SOLO, 0x701), SOLO_LEN, 7 },
	  { true, RDM_TAG(T_SOLO, 0x701), SOLO_LEN, 8 } },
	/* 6: an exact one alone, then a wildcard: the exact one first */
	{ { true, RDM_TAG(T_SOLO, 0x801), SOLO_LEN, 9 },
	  { true, RDM_TAG(T_SOLO, 0x801), SOLO_LEN, 10 } },
	/* 7: the lone one cancelled once another is posted */
	{ { true, RDM_TAG(T_SOLO, 9), SOLO_LEN, 11 },
	  { false, 0, 0, 0 } },
};
#define SOLO_STEPS (sizeof(g_step) / sizeof(g_step[0]))

static uint8_t *solo_buf(int k)
{
	return (uint8_t *)g_rdm.rx.ptr + (size_t)k * SOLO_SLOT;
}

static int solo_post(const char *name, int k, bool tagged, size_t len,
		     uint64_t tag, uint64_t ignore)
{
	return rdm_recv(name, tagged, solo_buf(k), len, tag, ignore,
			FI_ADDR_UNSPEC, &g_rdm.rxctx[k]);
}

/* Receive k took message m of step s. */
static int solo_took(const char *name, int k, int s, int m)
{
	const struct solo_msg *w = &g_step[s][m];

	return rdm_wait_recv(name, &g_rdm.rxctx[k], w->tagged, w->len, w->tag,
			     solo_buf(k), w->seed);
}

static int solo_cancelled(const char *name, int k)
{
	struct ft_comp comp;
	int ret = (int)fi_cancel(&g_rdm.ep[0].ep->fid, &g_rdm.rxctx[k]);

	if (ret) {
		ft_fail(name, "fi_cancel: %s", fi_strerror(-ret));
		return -1;
	}
	ret = ft_rdm_wait(g_rdm.ep[0].cq, &g_rdm.rxctx[k], &comp,
			  ft_opts.timeout_ms);
	if (ret || comp.err != FI_ECANCELED) {
		ft_fail(name, "after fi_cancel: %s", ret ? fi_strerror(-ret) :
			ft_comp_str(&comp));
		return -1;
	}
	return 0;
}

void rdm_solo_server(void)
{
	const char *name = "rdm_solo";

	/* 1 */
	if (solo_post(name, 0, true, SOLO_LEN, RDM_TAG(T_SOLO, 1), 0) ||
	    rdm_sync() || solo_took(name, 0, 0, 1) ||
	    solo_post(name, 1, true, SOLO_LEN, RDM_TAG(T_SOLO, 2), 0) ||
	    solo_took(name, 1, 0, 0))
		return;
	/* 2 */
	if (solo_post(name, 0, true, SOLO_LEN, RDM_TAG(T_SOLO, 3), 0) ||
	    solo_post(name, 1, true, SOLO_LEN, RDM_TAG(T_SOLO, 3), 0) ||
	    rdm_sync() || solo_took(name, 0, 1, 0) || solo_took(name, 1, 1, 1))
		return;
	/* 3 */
	if (solo_post(name, 0, true, SOLO_LEN, RDM_TAG(T_SOLO, 11), 0) ||
	    solo_post(name, 1, true, SOLO_LEN, RDM_TAG(T_SOLO, 12), 0) ||
	    rdm_sync() || solo_took(name, 1, 2, 0) || solo_took(name, 0, 2, 1))
		return;
	/* 4 */
	if (solo_post(name, 0, true, RDM_BIG, RDM_TAG(T_SOLO, 5), 0) ||
	    solo_post(name, 1, false, SOLO_LEN, 0, 0) ||
	    rdm_sync() || solo_took(name, 1, 3, 0) || solo_took(name, 0, 3, 1))
		return;
	/* 5 */
	if (solo_post(name, 0, true, SOLO_LEN, RDM_TAG(T_SOLO, 0x700), 0xff) ||
	    solo_post(name, 1, true, SOLO_LEN, RDM_TAG(T_SOLO, 0x701), 0) ||
	    rdm_sync() || solo_took(name, 0, 4, 0) || solo_took(name, 1, 4, 1))
		return;
	/* 6 */
	if (solo_post(name, 0, true, SOLO_LEN, RDM_TAG(T_SOLO, 0x801), 0) ||
	    solo_post(name, 1, true, SOLO_LEN, RDM_TAG(T_SOLO, 0x800), 0xff) ||
	    rdm_sync() || solo_took(name, 0, 5, 0) || solo_took(name, 1, 5, 1))
		return;
	/* 7 */
	if (solo_post(name, 0, true, SOLO_LEN, RDM_TAG(T_SOLO, 9), 0) ||
	    solo_post(name, 1, true, SOLO_LEN, RDM_TAG(T_SOLO, 9), 0) ||
	    solo_cancelled(name, 0) || rdm_sync() || solo_took(name, 1, 6, 0))
		return;
	ft_ok(name);
}

void rdm_solo_client(void)
{
	const char *name = "rdm_solo_send";
	const struct solo_msg *w;
	uint8_t *p;
	size_t s;
	int m;

	for (s = 0; s < SOLO_STEPS; s++) {
		if (rdm_sync())
			return;
		for (m = 0; m < 2; m++) {
			w = &g_step[s][m];
			if (!w->len)
				continue;
			p = (uint8_t *)g_rdm.tx.ptr + (size_t)m * SOLO_SLOT;
			ft_fill(p, w->len, w->seed);
			if (rdm_send(name, 0, w->tagged, p, w->len, w->tag,
				     &g_rdm.txctx[m]))
				return;
		}
		for (m = 0; m < 2; m++)
			if (g_step[s][m].len &&
			    rdm_wait_ok(name, 0, &g_rdm.txctx[m], NULL,
					g_step[s][m].len))
				return;
	}
	ft_ok(name);
}

/* ---- rdm_mrecv_reuse: after rdm_multi_recv --------------------------- */

#define REUSE_N 3

/* The multi-receive buffer's operation, given back when the buffer was
 * released, may be a provider's next one-buffer receive: it must serve
 * as a fresh one.  Three tagged receives are posted (the first alone,
 * the others after it) and the client sends their tags in reverse
 * order, so that each is matched where the receives are filed, none as
 * the lone one: each message lands whole at its own buffer, without
 * FI_MULTI_RECV. */
void rdm_mreuse_server(void)
{
	const char *name = "rdm_multi_recv_reuse";
	struct ft_comp comp;
	int k;

	for (k = 0; k < REUSE_N; k++)
		if (solo_post(name, k, true, SOLO_LEN,
			      RDM_TAG(T_MREUSE, k), 0))
			return;
	if (rdm_sync())
		return;
	for (k = 0; k < REUSE_N; k++) {
		if (rdm_wait_ok(name, 0, &g_rdm.rxctx[k], &comp, SOLO_LEN) ||
		    rdm_check_recv(name, &comp, true, SOLO_LEN,
				   RDM_TAG(T_MREUSE, k), g_rdm.peer[0],
				   solo_buf(k), 40 + k))
			return;
		if ((comp.flags & FI_MULTI_RECV) || comp.buf != solo_buf(k)) {
			ft_fail(name, "receive %d: flags 0x%llx, buf at %+td "
				"from its own", k,
				(unsigned long long)comp.flags,
				(uint8_t *)comp.buf - solo_buf(k));
			return;
		}
	}
	ft_ok(name);
}

void rdm_mreuse_client(void)
{
	const char *name = "rdm_multi_recv_reuse_send";
	uint8_t *p;
	int k;

	if (rdm_sync())
		return;
	for (k = REUSE_N - 1; k >= 0; k--) {
		p = (uint8_t *)g_rdm.tx.ptr + (size_t)k * SOLO_SLOT;
		ft_fill(p, SOLO_LEN, 40 + k);
		if (rdm_send(name, 0, true, p, SOLO_LEN, RDM_TAG(T_MREUSE, k),
			     &g_rdm.txctx[k]))
			return;
	}
	for (k = 0; k < REUSE_N; k++)
		if (rdm_wait_ok(name, 0, &g_rdm.txctx[k], NULL, SOLO_LEN))
			return;
	ft_ok(name);
}
