/* SPDX-License-Identifier: MIT */
/*
 * FI_EP_DGRAM endpoints: a struct rivet_ep (rings, CQs, counters, inject
 * bounce buffers shared with MSG) over a UD QP, plus what UD needs: the
 * bound AV, an address handle per destination, and per receive slot a
 * GRH buffer and a tail that takes what a short buffer cannot.
 */
#ifndef RIVET_DGRAM_H
#define RIVET_DGRAM_H

#include "rivet.h"
#include "rivet_av.h"

/* receive iovs: two SGEs more (GRH, tail) must fit the device's max_sge */
#define RIVET_DGRAM_IOV_LIMIT 16

struct rivet_ud_ah {
	struct ibv_ah *ah;	/* NULL: not made yet, or the address left */
	uint32_t qpn;
};

/*
 * The first datagrams of an endpoint (rivet_dgram_early.c): a UD QP drops
 * a datagram that finds no receive posted, and peers send right after an
 * out-of-band handshake, before the application has posted its receives.
 * So fi_enable posts the first receive slots' own buffers (a GRH and an
 * MTU each), and the application's first receives wait in software:
 * datagram i lands in slot i and is copied into receive i, whichever
 * comes first.  Later receives go to the QP behind the slots, zero copy,
 * and the slots are never posted again.
 */
enum rivet_early_state {
	RIVET_EARLY_EMPTY,	/* neither the datagram nor the receive */
	RIVET_EARLY_RECV,	/* the receive waits for its datagram */
	RIVET_EARLY_DGRAM,	/* the datagram waits for its receive */
	RIVET_EARLY_DONE,
};

struct rivet_early_slot {
	enum rivet_early_state state;
	struct ibv_wc wc;		/* RIVET_EARLY_DGRAM */
	struct rivet_srx_recv recv;	/* RIVET_EARLY_RECV */
};

struct rivet_dgram_early {
	struct rivet_wc_hook hook;	/* a slot's work completion */
	struct rivet_lock lock;		/* THE LOCK ORDER (rivet.h), 7 */
	size_t count;			/* slots posted at fi_enable */
	atomic_size_t left;		/* of them, without a receive yet */
	struct rivet_early_slot slots[];
};

struct rivet_dgram {
	struct rivet_ep *ep;
	struct rivet_av *av;
	struct rivet_av_listener listener;	/* AV removals drop AHs */
	/* ahs[fi_addr] (AV slot indices); made on the first send to an
	 * address, dropped when it is removed */
	pthread_mutex_t ah_lock;
	bool ah_locking;	/* off under FI_THREAD_DOMAIN */
	struct rivet_ud_ah *ahs;
	size_t nahs;
	/* per receive slot: RIVET_UD_GRH_LEN bytes, then mtu bytes of tail */
	uint8_t *rx_extra;
	struct ibv_mr *rx_extra_mr;
	size_t extra_stride;
	size_t mtu;		/* max_msg_size: the port's active MTU */
	int gid_index;
	union ibv_gid gid;
	uint16_t lid;
	bool roce_ipv4;		/* peers' GRH slots hold IPv4 headers */
	/* FI_SOURCE: receives name their sender (source.resolve) */
	struct rivet_src_resolver source;
	bool want_source;
	/* opened on a service address: its SIDR listener (rivet_dgram_cm.c) */
	struct rivet_dgram_listener *listener_cm;
	/* its first receives; NULL on a shared receive context's endpoint
	 * or with FI_RIVET_DGRAM_EARLY_RECVS 0 */
	struct rivet_dgram_early *early;
};

/* Whether a receive is one of the first (rivet_dgram_early_recv). */
static inline bool rivet_dgram_early_open(const struct rivet_dgram *ud)
{
	return ud->early &&
	       atomic_load_explicit(&ud->early->left, memory_order_relaxed);
}

/* fi_enable: posts the first slots (none on an endpoint of a shared
 * receive context); fi_close, after the QP: frees them. */
int rivet_dgram_early_start(struct rivet_ep *ep);
void rivet_dgram_early_free(struct rivet_dgram *ud);

/* The AH and QPN of dest, making the AH on first use: 0, -FI_EINVAL (not
 * a valid address of the bound AV), or the error of ibv_create_ah. */
int rivet_dgram_ah_get(struct rivet_dgram *ud, fi_addr_t dest,
		       struct ibv_ah **ah_p, uint32_t *qpn_p);

/* FI_SOURCE (rivet_dgram.c): the sender of a receive, from its GRH slot
 * and work completion, looked up in the AV (ud->source.resolve). */
fi_addr_t rivet_dgram_src_resolve(struct rivet_src_resolver *r,
				  const struct rivet_wr_ctx *ctx,
				  const struct ibv_wc *wc);

/* The SIDR listener (rivet_dgram_cm.c): started by fi_enable when the
 * endpoint's address has a port, stopped by fi_close. */
int rivet_dgram_listen(struct rivet_ep *ep);
void rivet_dgram_unlisten(struct rivet_ep *ep);

extern struct fi_ops_msg g_rivet_dgram_msg_ops;

#endif /* RIVET_DGRAM_H */
