/* SPDX-License-Identifier: MIT */
/*
 * Between rivet_info.c (what each endpoint type offers, building an
 * fi_info, the list fi_getinfo returns) and rivet_info_match.c (hints
 * matching): the capability sets and the endpoint-type table's row.
 */
#ifndef RIVET_INFO_H
#define RIVET_INFO_H

#include "rivet.h"

#define RIVET_MSG_MODS (FI_SEND | FI_RECV)
#define RIVET_RMA_MODS (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define RIVET_DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV)
/* FI_EP_MSG: sends and RMA straight onto one RC QP */
#define RIVET_MSG_TX_CAPS \
	(FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE | FI_FENCE)
#define RIVET_MSG_RX_CAPS \
	(FI_MSG | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE | FI_MULTI_RECV)
/* FI_EP_RDM: rivet's own protocol, RMA straight onto RDMA READ/WRITE,
 * atomics computed by the target (rivet_rdm_atomic.c) */
#define RIVET_RDM_TX_CAPS \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RMA | FI_ATOMIC | FI_READ | \
	 FI_WRITE | FI_FENCE | FI_TRIGGER | FI_NAMED_RX_CTX)
#define RIVET_RDM_RX_CAPS \
	(FI_MSG | FI_TAGGED | FI_RECV | FI_SOURCE | FI_DIRECTED_RECV | \
	 FI_MULTI_RECV | FI_RMA | FI_ATOMIC | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE | FI_RMA_EVENT | RIVET_CAP_V2_ONLY)
/* Capabilities that cost something when on, or restrict the application
 * (2.0's FI_EXACT_DIRECTED_RECV: no FI_ADDR_UNSPEC): only given when
 * asked for */
#define RIVET_ASKED_CAPS \
	(FI_RMA_EVENT | FI_FENCE | FI_TRIGGER | RIVET_CAP_EXACT_DIRECTED_RECV)
/* What needs remote keys: RMA and atomics alike */
#define RIVET_REMOTE_CAPS (FI_RMA | FI_ATOMIC)

/* Every capability that API 1.17 and 2.x both define, and the
 * provider-specific bits; with those of the application's version
 * (rivet_abi.h), anything else in a caps field is not a capability. */
#define RIVET_KNOWN_CAPS \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST | \
	 FI_COLLECTIVE | FI_READ | FI_WRITE | FI_RECV | FI_SEND | \
	 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV | FI_TRIGGER | \
	 FI_FENCE | FI_AV_USER_ID | FI_PEER | FI_HMEM | \
	 FI_RMA_PMEM | FI_SOURCE_ERR | FI_LOCAL_COMM | \
	 FI_REMOTE_COMM | FI_SHARED_AV | FI_RMA_EVENT | FI_SOURCE | \
	 FI_NAMED_RX_CTX | FI_DIRECTED_RECV | (0xfULL << 60))

/* What a caps field of an application of this version may hold. */
static inline uint64_t rivet_known_caps(uint32_t version)
{
	return RIVET_KNOWN_CAPS |
	       (rivet_api_v2(version) ? RIVET_CAP_V2_ONLY : RIVET_CAP_V1_ONLY);
}

/* RC: reads and sends are not ordered behind earlier reads (no WAR, SAR)
 * unless fenced; everything else is. */
#define RIVET_MSG_ORDER \
	(FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_WAW | \
	 FI_ORDER_WAS | FI_ORDER_SAW | FI_ORDER_SAS)
/* The RMA-only orderings that RAR, RAW and WAW imply. */
#define RIVET_RMA_ORDER (FI_ORDER_RMA_RAR | FI_ORDER_RMA_RAW | FI_ORDER_RMA_WAW)
/* RDM: a peer's messages match in order; its RMA shares one RC connection,
 * so RMA is ordered as on MSG among itself.  Messages and RMA are not
 * ordered with each other: a rendezvous moves its data after later RMA. */
#define RIVET_RDM_ORDER \
	(FI_ORDER_SAS | FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAW)

#define RIVET_TX_OP_FLAGS \
	(FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | \
	 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)
/* An eager send completes when RC has delivered it into the peer's bounce
 * buffer (transmit complete); a send with FI_DELIVERY_COMPLETE goes by
 * rendezvous, whose FIN means the data is in the target's buffer. */
#define RIVET_RDM_TX_OP_FLAGS \
	(FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | \
	 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)

/* FI_EP_DGRAM: plain sends over a UD QP */
#define RIVET_DGRAM_TX_CAPS (FI_MSG | FI_SEND)
#define RIVET_DGRAM_RX_CAPS (FI_MSG | FI_RECV | FI_SOURCE)
#define RIVET_DGRAM_TX_OP_FLAGS \
	(FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE)
/* receive iovs: the GRH and the tail take two of the device's SGEs */
#define RIVET_DGRAM_IOV_LIMIT_INFO 16

#define RIVET_MR_MODE \
	(FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
/* Counters are software (an atomic and an eventfd): bounded by fds. */
#define RIVET_CNTR_CNT 1024
/* The RDM's injected data is copied into rivet's own registered buffers. */
#define RIVET_RDM_INJECT_SIZE 256
/* Receives an RDM endpoint takes posted at once, at least. */
#define RIVET_RDM_RX_SIZE 8192
/* Rendezvous reads split a message into device-sized RDMA reads. */
#define RIVET_RDM_MAX_MSG_SIZE (1ULL << 30)
#define RIVET_RDM_IOV_LIMIT 4
/* A size that is the device's own limit rather than a constant. */
#define RIVET_DEV SIZE_MAX
/* The port's active MTU (lim->ud_mtu): a datagram's largest payload. */
#define RIVET_DEV_MTU (SIZE_MAX - 1)
#define RIVET_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
 * What differs between the endpoint types; the rest of an fi_info comes
 * from the device limits and is the same for all of them.
 */
struct rivet_ep_type {
	enum fi_ep_type type;
	uint32_t protocol;
	uint64_t tx_caps, rx_caps;	/* caps: both and the domain's */
	uint64_t mode;
	uint64_t msg_order;
	uint64_t rma_order;		/* accepted, implied by msg_order */
	uint64_t tx_comp_order, rx_comp_order;
	uint64_t tx_op_flags, rx_op_flags;	/* accepted in hints */
	size_t iov_limit, rma_iov_limit;
	size_t inject_size;		/* RIVET_DEV: inline or parameter */
	size_t max_msg_size;		/* RIVET_DEV: the device's */
	bool ordered_rma;		/* RAW and WAW up to max_msg_size */
	uint64_t mem_tag_format;	/* 0: untagged */
	enum fi_progress data_progress;
	int mr_mode;			/* what we report, API >= 1.5 */
	int mr_mode_rma;		/* reported too when FI_RMA is given */
	int mr_required, mr_required_rma;	/* hints must allow these */
	bool legacy_local_mr;		/* API < 1.5: needs FI_LOCAL_MR */
	size_t cq_data_size, max_err_data;
	size_t cq_data_size_rma;	/* with RMA writes (0: the same) */
};

/* The row of an endpoint type (rivet_info.c), NULL for other types. */
const struct rivet_ep_type *rivet_ep_type_lookup(enum fi_ep_type type);

static inline uint64_t rivet_ep_type_caps(const struct rivet_ep_type *t)
{
	return t->tx_caps | t->rx_caps | RIVET_DOMAIN_CAPS;
}

#endif /* RIVET_INFO_H */
