/* SPDX-License-Identifier: MIT */
/*
 * rivet's FI_RIVET_* parameters: one table row each, defined with
 * fi_param_define (so `fi_info -e` lists them) and read once at load time.
 */
#include "rivet.h"
#include "rivet_match.h"

struct rivet_params g_rivet_params = {
	.tx_size = 384,
	.rx_size = 384,
	.cq_size = 1024,
	.inject_size = 0,
	.iface = NULL,
	.ipv6 = 1,
	.eager_size = 8192,
	.rdm_rx_bufs = 512,
	.poll_yield_usec = RIVET_POLL_YIELD_AUTO,
	.ack_timeout = 0,
	.retry_count = RIVET_RETRY_AUTO,
	.probe_ms = 1000,
	.close_wait_ms = 3000,
	.mr_cache_max_count = 1024,
	.mr_cache_max_size = (size_t)1 << 30,
	.mr_cache_monitor = NULL,
	.confirm = RIVET_CONFIRM_AUTO,
	.dgram_early_recvs = 16,
	.rdma_seg = RIVET_RDMA_SEG_AUTO,
	.match_list_max = RIVET_MATCH_LIST_MAX,
	.wr_api = 1,
};

enum rivet_param_kind { RIVET_P_SIZE, RIVET_P_STR, RIVET_P_BOOL };

struct rivet_param_row {
	const char *name;
	enum rivet_param_kind kind;
	void *value;
	const char *help;
};

static const struct rivet_param_row g_param_rows[] = {
	{ "tx_size", RIVET_P_SIZE, &g_rivet_params.tx_size,
	  "Default transmit queue depth of an endpoint (default: 384)" },
	{ "rx_size", RIVET_P_SIZE, &g_rivet_params.rx_size,
	  "Default receive queue depth of an endpoint (default: 384)" },
	{ "cq_size", RIVET_P_SIZE, &g_rivet_params.cq_size,
	  "Default completion queue size when the application gives none "
	  "(default: 1024)" },
	{ "inject_size", RIVET_P_SIZE, &g_rivet_params.inject_size,
	  "Largest FI_INJECT message; above the device's inline limit rivet "
	  "copies into a pre-registered bounce buffer (default: 0, the "
	  "device's inline limit)" },
	{ "iface", RIVET_P_STR, &g_rivet_params.iface,
	  "Only use addresses of this network interface (default: all)" },
	{ "ipv6", RIVET_P_BOOL, &g_rivet_params.ipv6,
	  "Offer IPv6 addresses as well as IPv4 (default: yes)" },
	{ "eager_size", RIVET_P_SIZE, &g_rivet_params.eager_size,
	  "RDM: largest message sent eagerly (copied through bounce "
	  "buffers); larger ones use rendezvous by RDMA read (default: "
	  "8192)" },
	{ "max_msg_size", RIVET_P_SIZE, &g_rivet_params.max_msg_size,
	  "MSG and RDM: the max_msg_size that fi_getinfo offers, when "
	  "smaller than the port's (for test programs that size their "
	  "buffers from it on hosts that cannot pin that much; default: "
	  "0, the port's limit, capped at 1 GiB)" },
	{ "dgram_early_recvs", RIVET_P_SIZE,
	  &g_rivet_params.dgram_early_recvs,
	  "DGRAM: datagrams an endpoint takes from fi_enable on, before the "
	  "application has posted receives (the first this many are copied "
	  "into its first receives; 0: none, a datagram that finds no "
	  "receive is dropped) (default: 16)" },
	{ "rdm_rx_bufs", RIVET_P_SIZE, &g_rivet_params.rdm_rx_bufs,
	  "RDM: receive buffers in an endpoint's shared receive queue "
	  "(default: 512)" },
	{ "native_atomics", RIVET_P_BOOL, &g_rivet_params.native_atomics,
	  "RDM: run atomics as verbs atomics on the target's NIC; only "
	  "FI_SUM and FI_CSWAP on one 64-bit integer are offered then "
	  "(default: no: every op and datatype, computed by the target's "
	  "CPU)" },
	{ "poll_yield", RIVET_P_SIZE, &g_rivet_params.poll_yield_usec,
	  "While a domain's CQ and counter reads find nothing, one empty "
	  "read in every this many microseconds yields the CPU "
	  "(sched_yield) to the kernel threads of a software RDMA device; "
	  "0: never (default: 200 on rxe and siw, 0 on hardware)" },
	{ "mr_cache_max_count", RIVET_P_SIZE,
	  &g_rivet_params.mr_cache_max_count,
	  "RDM: most registrations of the application's buffers (rendezvous, "
	  "RMA and atomics without a descriptor) a domain keeps for reuse; "
	  "0 disables the cache (default: 1024)" },
	{ "mr_cache_max_size", RIVET_P_SIZE,
	  &g_rivet_params.mr_cache_max_size,
	  "RDM: most bytes of such registrations a domain keeps; 0 disables "
	  "the cache (default: 1073741824)" },
	{ "mr_cache_monitor", RIVET_P_STR, &g_rivet_params.mr_cache_monitor,
	  "RDM: how the cache learns that memory was unmapped or discarded: "
	  "userfaultfd, or disabled (no caching); without a monitor nothing "
	  "is cached (default: userfaultfd)" },
	{ "util_layering", RIVET_P_BOOL, &g_rivet_params.util_layering,
	  "Let the core's utility providers (ofi_rxm) layer over rivet's MSG "
	  "endpoints; off by default so that rivet's native RDM is the one "
	  "applications get (default: no)" },
	{ "ack_timeout", RIVET_P_SIZE, &g_rivet_params.ack_timeout,
	  "RC connections: how long a packet waits for its acknowledgement "
	  "before it is sent again, 4.096 us * 2^N, 1..31; with retry_count "
	  "it bounds how long a dead peer or link takes to fail operations "
	  "(default: 0, rdma_cm's: 17 on RoCE, about 0.54 s)" },
	{ "retry_count", RIVET_P_SIZE, &g_rivet_params.retry_count,
	  "RC connections: how many times a packet is sent again before its "
	  "operation fails (IBV_WC_RETRY_EXC_ERR), 0..7 (default: 7; 6 on "
	  "rxe, which never stops retrying with 7)" },
	{ "probe_ms", RIVET_P_SIZE, &g_rivet_params.probe_ms,
	  "RDM: a connection on which operations have waited this long for "
	  "the peer's answer (a rendezvous send for its FIN, an atomic for "
	  "its result) is probed with an empty message every so often, so "
	  "that a dead peer or link fails them as it fails operations on "
	  "the wire; 0: never (default: 1000)" },
	{ "close_wait_ms", RIVET_P_SIZE, &g_rivet_params.close_wait_ms,
	  "RDM: fi_close of an endpoint first lets what it owes its peers go "
	  "out, for up to this long: injects and sends still queued for a "
	  "connection that is coming up or on the wire, FINs of rendezvous "
	  "receives (an inject is complete for the application, which may "
	  "close the next moment); 0: discard them at once (default: 3000)" },
	{ "confirm", RIVET_P_SIZE, &g_rivet_params.confirm,
	  "RDM: take a rendezvous receive as done only once the FIN that "
	  "ends it is acknowledged, and an RMA operation only once a "
	  "zero-byte read posted behind it completes; either fails when "
	  "its witness does (rxe can report a failed request as successful "
	  "and fail only what follows it); costs a round trip per such "
	  "operation; 0: off, 1: on (default: on for rxe, off on hardware)" },
	{ "rdma_seg", RIVET_P_SIZE, &g_rivet_params.rdma_seg,
	  "RDM: the most bytes one RDMA read or write work request moves (a "
	  "rendezvous receive, fi_read or fi_write of more takes several); "
	  "0: no limit (default: the port's MTU on rxe, whose completer can "
	  "fail a QP that meets a late acknowledgement in the middle of a "
	  "read's response of several packets, and whose retries of a long "
	  "write under packet reordering run out; no limit on hardware)" },
	{ "match_list_max", RIVET_P_SIZE, &g_rivet_params.match_list_max,
	  "RDM: queues of posted receives and of unexpected messages up to "
	  "this deep are searched as lists in order, deeper ones through "
	  "hash tables by source and tag; a list costs fewer instructions "
	  "when nearly empty and grows with its depth (default: 0, hash "
	  "tables at every depth: a match costs the same at any depth)" },
	{ "wr_api", RIVET_P_BOOL, &g_rivet_params.wr_api,
	  "RDM: post the injects that go out at once (header and payload in "
	  "one inline piece) through the verbs work-request API "
	  "(ibv_wr_start, ibv_wr_send, ibv_wr_set_inline_data, "
	  "ibv_wr_complete) on connections whose device creates such QPs, "
	  "instead of ibv_post_send; 0: always ibv_post_send (default: yes)" },
};

static const enum fi_param_type g_param_types[] = {
	[RIVET_P_SIZE] = FI_PARAM_SIZE_T,
	[RIVET_P_STR] = FI_PARAM_STRING,
	[RIVET_P_BOOL] = FI_PARAM_BOOL,
};

void rivet_params_initialize(void)
{
	size_t i;

	for (i = 0; i < sizeof(g_param_rows) / sizeof(g_param_rows[0]); i++) {
		const struct rivet_param_row *row = &g_param_rows[i];

		fi_param_define(&g_rivet_prov, row->name,
				g_param_types[row->kind], "%s", row->help);
		/* fi_param_get leaves the value alone when unset */
		fi_param_get(&g_rivet_prov, row->name, row->value);
	}
	if (!g_rivet_params.tx_size)
		g_rivet_params.tx_size = 384;
	if (!g_rivet_params.rx_size)
		g_rivet_params.rx_size = 384;
	if (!g_rivet_params.cq_size)
		g_rivet_params.cq_size = 1024;
	if (g_rivet_params.eager_size < 64)
		g_rivet_params.eager_size = 64;
	if (g_rivet_params.rdm_rx_bufs < 16)
		g_rivet_params.rdm_rx_bufs = 16;
	if (g_rivet_params.ack_timeout > 31)
		g_rivet_params.ack_timeout = 31;
	if (g_rivet_params.retry_count != RIVET_RETRY_AUTO &&
	    g_rivet_params.retry_count > 7)
		g_rivet_params.retry_count = 7;
}
