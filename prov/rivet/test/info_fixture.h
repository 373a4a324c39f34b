/* SPDX-License-Identifier: MIT */
/*
 * Fixture of the rivet_info.c unit tests (test_info.c, test_info_reject.c,
 * test_info_rdm.c): fake device limits, the provider infos built from them,
 * hint helpers.
 */
#ifndef RIVET_INFO_FIXTURE_H
#define RIVET_INFO_FIXTURE_H

#include "rivet.h"

#define V(maj, min) FI_VERSION(maj, min)
#define V_NOW FI_VERSION(1, 17)
#define MR_BASIC_MAP (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
#define MR_ALL (FI_MR_LOCAL | MR_BASIC_MAP)
#define ALL_CAPS \
	(FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV | FI_READ | \
	 FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_LOCAL_COMM | \
	 FI_REMOTE_COMM | FI_SHARED_AV)
#define COMM_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV)
/* what the MSG info offers before matching: also FI_MULTI_RECV, and
 * FI_FENCE, given to hints that ask for it (and to none at all) */
#define MSG_BUILT_CAPS (ALL_CAPS | FI_FENCE | FI_MULTI_RECV)
#define MSG_ORDER \
	(FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_WAW | \
	 FI_ORDER_WAS | FI_ORDER_SAW | FI_ORDER_SAS)
/* FI_NAMED_RX_CTX: the initiator names a receive context (a transmit
 * capability, as the fabtests' getinfo_test classes it) */
#define RDM_MSG_TX_CAPS (FI_MSG | FI_TAGGED | FI_SEND | FI_NAMED_RX_CTX)
#define RDM_MSG_RX_CAPS \
	(FI_MSG | FI_TAGGED | FI_RECV | FI_SOURCE | FI_DIRECTED_RECV | \
	 FI_MULTI_RECV)
#define RDM_TX_CAPS \
	(RDM_MSG_TX_CAPS | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE)
#define RDM_RX_CAPS \
	(RDM_MSG_RX_CAPS | FI_RMA | FI_ATOMIC | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE)
/* the RDM without RMA but with atomics (cq_data_size 8 asked) */
#define RDM_ATOMIC_CAPS \
	(RDM_MSG_TX_CAPS | RDM_MSG_RX_CAPS | COMM_CAPS | FI_ATOMIC | \
	 FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define RDM_CAPS (RDM_TX_CAPS | RDM_RX_CAPS | COMM_CAPS)
/* what the RDM info offers before matching: also FI_RMA_EVENT and
 * FI_FENCE, given only to hints that ask for them (and to none at all) */
#define RDM_BUILT_TX_CAPS (RDM_TX_CAPS | FI_FENCE | FI_TRIGGER)
#define RDM_BUILT_RX_CAPS (RDM_RX_CAPS | FI_RMA_EVENT)
#define RDM_BUILT_CAPS (RDM_CAPS | FI_RMA_EVENT | FI_FENCE | FI_TRIGGER)
/* the RDM without RMA: what caps 0 gives when RMA does not fit the hints */
#define RDM_MSG_CAPS (RDM_MSG_TX_CAPS | RDM_MSG_RX_CAPS | COMM_CAPS)
#define RDM_ORDER (FI_ORDER_SAS | FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAW)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* rxe-like limits (max_qp_wr 16384, max_sge 32, max_inline 240, ...) and
 * the MSG (g_prov) and RDM (g_rdm) infos built from them by info_setup. */
extern struct rivet_info_limits g_rxe, g_tiny;
extern struct fi_info *g_prov, *g_rdm;

void info_setup(void);
void info_teardown(void);
/* What fi_msg_pingpong-like applications pass: MSG endpoint, FI_MSG and
 * FI_RMA, FI_CONTEXT|FI_RX_CQ_DATA, FI_MR_LOCAL and the basic map. */
struct fi_info *hints_base(void);
/* What MPI passes: RDM endpoint, FI_MSG and FI_TAGGED, FI_CONTEXT and
 * FI_CONTEXT2, FI_MR_LOCAL and the basic map. */
struct fi_info *hints_rdm(void);
/* Matches h against prov (g_prov for the short forms) and checks what
 * every answer, or every refusal, must satisfy. */
struct fi_info *match_prov_ok(const struct fi_info *prov,
			      const struct fi_info *h, uint32_t version);
void match_prov_fails(const struct fi_info *prov, const struct fi_info *h,
		      uint32_t version, int want, const char *name);
struct fi_info *match_ok(const struct fi_info *h, uint32_t version);
void match_fails(const struct fi_info *h, uint32_t version, int want,
		 const char *name);

/* Tables of hints, each one change to a base: MUT(name, body) defines the
 * change, CASE(name) lists it. */
#define MUT(name, body) \
	static void mut_##name(struct fi_info *h) \
	{ \
		body; \
	}
#define CASE(name) { #name, mut_##name }

struct hint_case {
	const char *name;
	void (*mutate)(struct fi_info *h);
};

/* Each case applied to base() must fail against prov with want. */
void run_cases(const struct fi_info *prov, struct fi_info *(*base)(void),
	       const struct hint_case *cases, size_t n, int want);

#endif /* RIVET_INFO_FIXTURE_H */
