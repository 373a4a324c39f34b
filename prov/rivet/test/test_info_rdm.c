/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of rivet_info.c for FI_EP_RDM: the info we build, the hints it
 * satisfies and refuses, and the list rivet_info_select gives fi_getinfo
 * (RDM first, then MSG, each type matched on its own).
 */
#include <stdlib.h>
#include <criterion/criterion.h>

#include "info_fixture.h"

TestSuite(info_rdm, .init = info_setup, .fini = info_teardown);

static struct fi_info *rdm_ok(const struct fi_info *h, uint32_t version)
{
	return match_prov_ok(g_rdm, h, version);
}

static void rdm_fails(const struct fi_info *h, uint32_t version, int want,
		      const char *name)
{
	match_prov_fails(g_rdm, h, version, want, name);
}

/* ---- build ---- */

Test(info_rdm, build_rxe)
{
	const struct fi_info *fi = g_rdm;
	const struct sockaddr_in *src = fi->src_addr;

	/* with 2.0's directed and tagged multi-receive bits, which
	 * matching shows only to programs of API 2.0 on (test_abi.c) */
	cr_assert_eq(fi->caps, RDM_BUILT_CAPS | RIVET_CAP_V2_ONLY);
	cr_assert_eq(fi->mode, 0);
	cr_assert_eq(fi->addr_format, FI_SOCKADDR_IN);
	cr_assert_eq(fi->src_addrlen, sizeof(*src));
	cr_assert_eq(src->sin_port, 0, "port 0");
	cr_assert_eq(fi->tx_attr->caps, RDM_BUILT_TX_CAPS);
	cr_assert_eq(fi->rx_attr->caps, RDM_BUILT_RX_CAPS | RIVET_CAP_V2_ONLY);
	cr_assert_eq(fi->tx_attr->mode, 0);
	cr_assert_eq(fi->rx_attr->mode, 0);
	cr_assert_eq(fi->tx_attr->op_flags, 0);
	cr_assert_eq(fi->rx_attr->op_flags, 0);
	cr_assert_eq(fi->tx_attr->msg_order, RDM_ORDER);
	cr_assert_eq(fi->rx_attr->msg_order, RDM_ORDER);
	cr_assert_eq(fi->tx_attr->comp_order, RIVET_ORDER_NONE);
	cr_assert_eq(fi->rx_attr->comp_order, RIVET_ORDER_NONE);
	cr_assert_eq(fi->tx_attr->inject_size, 256);
	cr_assert_eq(fi->tx_attr->size, 384);
	cr_assert_eq(fi->rx_attr->size, 8192, "RDM: at least 8192");
	cr_assert_eq(fi->tx_attr->iov_limit, 4);
	cr_assert_eq(fi->rx_attr->iov_limit, 4);
	cr_assert_eq(fi->tx_attr->rma_iov_limit, 1);
	cr_assert_eq(fi->rx_attr->total_buffered_recv, 0);
}

Test(info_rdm, build_rxe_ep_domain_fabric)
{
	const struct fi_info *fi = g_rdm;
	const struct fi_ep_attr *e = fi->ep_attr;
	const struct fi_domain_attr *d = fi->domain_attr;

	cr_assert_eq(e->type, FI_EP_RDM);
	cr_assert_eq(e->protocol, RIVET_PROTO_RDM);
	cr_assert_eq(e->protocol_version, 1);
	cr_assert_eq(e->max_msg_size, 1ULL << 30);
	cr_assert_eq(e->msg_prefix_size, 0);
	cr_assert_eq(e->max_order_raw_size, 1ULL << 30);
	cr_assert_eq(e->max_order_war_size, 0);
	cr_assert_eq(e->max_order_waw_size, 1ULL << 30);
	cr_assert_eq(e->mem_tag_format, 0xAAAAAAAAAAAAAAAAULL);
	cr_assert_eq(e->tx_ctx_cnt, 1);
	cr_assert_eq(e->rx_ctx_cnt, 1);
	cr_assert_str_eq(d->name, "rxe0");
	cr_assert_eq(d->threading, FI_THREAD_SAFE);
	cr_assert_eq(d->control_progress, FI_PROGRESS_MANUAL);
	cr_assert_eq(d->data_progress, FI_PROGRESS_MANUAL);
	cr_assert_eq(d->resource_mgmt, FI_RM_ENABLED);
	cr_assert_eq(d->av_type, FI_AV_UNSPEC);
	cr_assert_eq(d->mr_mode, MR_BASIC_MAP, "RMA needs keys, addresses");
	cr_assert_eq(d->mr_key_size, 4);
	cr_assert_eq(d->cq_data_size, 4, "an RDMA write's immediate");
	cr_assert_eq(d->cq_cnt, 16384);
	cr_assert_eq(d->ep_cnt, 65536);
	/* scalable endpoints */
	cr_assert_eq(d->max_ep_tx_ctx, RIVET_SEP_MAX_CTX);
	cr_assert_eq(d->max_ep_rx_ctx, RIVET_SEP_MAX_CTX);
	cr_assert_eq(d->max_ep_srx_ctx, 1);
	cr_assert_eq(d->max_ep_stx_ctx, 1);
	cr_assert_eq(d->mr_iov_limit, 1);
	cr_assert_eq(d->mr_cnt, 262144);
	cr_assert_eq(d->caps, COMM_CAPS);
	cr_assert_eq(d->max_err_data, 0);
	cr_assert_gt(d->cntr_cnt, 0);
	cr_assert_str_eq(fi->fabric_attr->name, "10.77.0.0/24");
	cr_assert_str_eq(fi->fabric_attr->prov_name, "rivet");
	cr_assert_eq(fi->fabric_attr->prov_version, RIVET_PROV_VERSION);
}

/* The RDM's own limits do not follow the device's inline size or maximum
 * message; queues, SGEs and the address do. */
Test(info_rdm, build_tiny_ipv6_and_params)
{
	struct rivet_params saved = g_rivet_params;
	struct fi_info *fi;

	g_rivet_params.inject_size = 512;
	g_rivet_params.rx_size = 0;
	fi = rivet_info_build(&g_tiny, FI_EP_RDM);
	g_rivet_params = saved;
	cr_assert_not_null(fi);
	cr_assert_eq(fi->addr_format, FI_SOCKADDR_IN6);
	cr_assert_eq(((struct sockaddr_in6 *)fi->src_addr)->sin6_port, 0);
	cr_assert_eq(fi->tx_attr->size, 64, "capped by max_qp_wr");
	cr_assert_eq(fi->rx_attr->size, 8192, "RDM: a software list");
	cr_assert_eq(fi->tx_attr->iov_limit, 2, "capped by max_sge");
	cr_assert_eq(fi->rx_attr->iov_limit, 2);
	cr_assert_eq(fi->tx_attr->inject_size, 256);
	cr_assert_eq(fi->ep_attr->max_msg_size, 1ULL << 30);
	cr_assert_str_eq(fi->domain_attr->name, "tiny0");
	fi_freeinfo(fi);
}

/* FI_RIVET_MAX_MSG_SIZE caps MSG and RDM, not DGRAM (its MTU) */
Test(info_rdm, max_msg_size_param)
{
	struct rivet_params saved = g_rivet_params;
	struct fi_info *rdm, *msg, *dgram, *dgram0;

	dgram0 = rivet_info_build(&g_tiny, FI_EP_DGRAM);
	g_rivet_params.max_msg_size = 100;
	rdm = rivet_info_build(&g_tiny, FI_EP_RDM);
	msg = rivet_info_build(&g_tiny, FI_EP_MSG);
	dgram = rivet_info_build(&g_tiny, FI_EP_DGRAM);
	g_rivet_params = saved;
	cr_assert(rdm && msg && dgram && dgram0);
	cr_assert_eq(rdm->ep_attr->max_msg_size, 100);
	cr_assert_eq(msg->ep_attr->max_msg_size, 100);
	cr_assert_eq(dgram->ep_attr->max_msg_size,
		     dgram0->ep_attr->max_msg_size);
	fi_freeinfo(rdm);
	fi_freeinfo(msg);
	fi_freeinfo(dgram);
	fi_freeinfo(dgram0);
}

Test(info_rdm, build_other_types)
{
	cr_assert_null(rivet_info_build(&g_rxe, RIVET_EP_TYPE_MAX_V1));
	cr_assert_null(rivet_info_build(&g_rxe, FI_EP_UNSPEC));
	cr_assert_null(rivet_info_build(NULL, FI_EP_RDM));
}

/* ---- the list for one (device, address) ---- */

static struct fi_info *select_ok(const struct fi_info *h, uint32_t version,
				 size_t want_len)
{
	struct fi_info *list = NULL, *fi;
	size_t n = 0;
	int ret = rivet_info_select(&g_rxe, h, version, &list);

	cr_assert_eq(ret, 0, "select: %d (%s)", ret, fi_strerror(-ret));
	for (fi = list; fi; fi = fi->next, n++)
		cr_assert_null(fi->fabric_attr->prov_name);
	cr_assert_eq(n, want_len, "%zu infos, want %zu", n, want_len);
	return list;
}

Test(info_rdm, select_no_hints_rdm_then_msg)
{
	struct fi_info *list = select_ok(NULL, V_NOW, 3);

	cr_assert_eq(list->ep_attr->type, FI_EP_RDM);
	cr_assert_eq(list->caps, RDM_BUILT_CAPS & ~FI_RMA_EVENT);
	cr_assert_eq(list->domain_attr->mr_mode, MR_BASIC_MAP);
	cr_assert_eq(list->next->ep_attr->type, FI_EP_MSG);
	cr_assert_eq(list->next->caps, MSG_BUILT_CAPS);
	cr_assert_eq(list->next->domain_attr->mr_mode, MR_ALL);
	cr_assert_eq(list->next->next->ep_attr->type, FI_EP_DGRAM);
	fi_freeinfo(list);
}

static const struct {
	enum fi_ep_type hint_type;
	uint64_t caps;
	enum fi_ep_type want[3];	/* in order; FI_EP_UNSPEC: none */
} g_select[] = {
	{ FI_EP_UNSPEC, 0, { FI_EP_RDM, FI_EP_MSG, FI_EP_DGRAM } },
	{ FI_EP_UNSPEC, FI_MSG, { FI_EP_RDM, FI_EP_MSG, FI_EP_DGRAM } },
	{ FI_EP_MSG, 0, { FI_EP_MSG } },
	{ FI_EP_MSG, FI_MSG, { FI_EP_MSG } },
	{ FI_EP_RDM, 0, { FI_EP_RDM } },
	{ FI_EP_RDM, FI_MSG, { FI_EP_RDM } },
	{ FI_EP_DGRAM, 0, { FI_EP_DGRAM } },
	{ FI_EP_DGRAM, FI_MSG | FI_SEND | FI_RECV, { FI_EP_DGRAM } },
	{ FI_EP_UNSPEC, FI_TAGGED, { FI_EP_RDM } },
	{ FI_EP_UNSPEC, FI_MSG | FI_SOURCE, { FI_EP_RDM, FI_EP_DGRAM } },
	{ FI_EP_UNSPEC, FI_RMA, { FI_EP_RDM, FI_EP_MSG } },
	{ FI_EP_UNSPEC, FI_MSG | FI_RMA, { FI_EP_RDM, FI_EP_MSG } },
	{ FI_EP_UNSPEC, FI_TAGGED | FI_RMA, { FI_EP_RDM } },
};

Test(info_rdm, select_filters_by_type_and_caps)
{
	size_t i, k;

	for (i = 0; i < COUNT(g_select); i++) {
		struct fi_info *h = fi_allocinfo(), *list, *fi;
		size_t len = 0;

		while (len < 3 && g_select[i].want[len] != FI_EP_UNSPEC)
			len++;
		h->ep_attr->type = g_select[i].hint_type;
		h->caps = g_select[i].caps;
		h->mode = ~0ULL;
		h->domain_attr->mr_mode = ~(RIVET_MR_BASIC | RIVET_MR_SCALABLE);
		list = select_ok(h, V_NOW, len);
		for (fi = list, k = 0; fi; fi = fi->next, k++)
			cr_assert_eq(fi->ep_attr->type, g_select[i].want[k],
				     "row %zu, info %zu", i, k);
		fi_freeinfo(list);
		fi_freeinfo(h);
	}
}

Test(info_rdm, select_errors)
{
	struct fi_info *h = fi_allocinfo(), *list = (struct fi_info *)0x1;

	h->caps = FI_ATOMIC;
	cr_assert_eq(rivet_info_select(&g_rxe, h, V_NOW, &list), -FI_ENODATA);
	h->ep_attr->type = FI_EP_DGRAM;
	h->caps = 0;
	cr_assert_eq(rivet_info_select(&g_rxe, h, V_NOW, &list), -FI_ENODATA);
	h->ep_attr->type = FI_EP_UNSPEC;
	h->caps = FI_MSG | (1ULL << 7);
	cr_assert_eq(rivet_info_select(&g_rxe, h, V_NOW, &list),
		     -FI_EBADFLAGS);
	cr_assert_eq(rivet_info_select(NULL, h, V_NOW, &list), -FI_EINVAL);
	cr_assert_eq(rivet_info_select(&g_rxe, h, V_NOW, NULL), -FI_EINVAL);
	cr_assert_eq(list, (struct fi_info *)0x1, "output set on failure");
	fi_freeinfo(h);
}

/* ---- hints the RDM satisfies ---- */

Test(info_rdm, null_hints)
{
	struct fi_info *fi = rdm_ok(NULL, V_NOW);

	/* FI_RMA_EVENT costs a message per RMA: only when asked */
	cr_assert_eq(fi->caps, RDM_BUILT_CAPS & ~FI_RMA_EVENT);
	cr_assert_eq(fi->rx_attr->caps & FI_RMA_EVENT, 0);
	cr_assert_eq(fi->mode, 0);
	cr_assert_eq(fi->domain_attr->mr_mode, MR_BASIC_MAP);
	cr_assert_eq(fi->domain_attr->cq_data_size, 4);
	fi_freeinfo(fi);
	fi = rdm_ok(NULL, V(1, 4));
	cr_assert_eq(fi->domain_attr->mr_mode, RIVET_MR_BASIC);
	cr_assert_eq(fi->mode, 0, "no RIVET_MODE_LOCAL_MR");
	fi_freeinfo(fi);
}

/* MPICH 4.3's ch4:ofi with a provider it has no settings for
 * (init_provider.c, init_settings.c): fi_getinfo with version 0 and no
 * hints; then its own API with caps = that answer's caps and mr_mode
 * FI_MR_ENDPOINT alone; when that fails, mr_mode = the first answer's.
 * It reads only mr_mode's bits: the first answer must carry them, not
 * 1.0's FI_MR_BASIC, or MPICH picks its own keys and offsets. */
Test(info_rdm, mpich_version0_listing)
{
	struct fi_info *first = rdm_ok(NULL, V(0, 0)), *h, *fi;

	uint32_t versions[] = { V(1, 5), V_NOW, RIVET_API_VERSION };
	size_t i;

	cr_assert_eq(first->domain_attr->mr_mode, MR_BASIC_MAP,
		     "version 0 names no API: the bit form");
	cr_assert_eq(first->fabric_attr->api_version,
		     rivet_api_v2(RIVET_API_VERSION) ? RIVET_API_LAST_V1 :
						       RIVET_API_VERSION);
	cr_assert(first->caps & FI_RMA);
	/* MPICH asks for all of them: FI_RMA_EVENT would give it target
	 * completions without a context, which it takes for its own */
	cr_assert_eq(first->caps & FI_RMA_EVENT, 0);
	cr_assert_eq(first->caps & RIVET_CAP_V2_ONLY, 0,
		     "no bit a 1.x program reads otherwise");
	/* MPICH's hints, built on headers of any version from 1.5 on */
	for (i = 0; i < COUNT(versions); i++) {
		h = hints_rdm();
		h->caps = first->caps;
		h->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
		h->domain_attr->mr_mode = FI_MR_ENDPOINT;
		rdm_fails(h, versions[i], -FI_ENODATA,
			  "RMA needs provider keys");
		h->domain_attr->mr_mode = first->domain_attr->mr_mode;
		fi = rdm_ok(h, versions[i]);
		cr_assert_eq(fi->domain_attr->mr_mode & MR_BASIC_MAP,
			     MR_BASIC_MAP);
		cr_assert(fi->caps & FI_RMA);
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
	fi_freeinfo(first);
	/* a real 1.x-before-1.5 program still gets the legacy form */
	fi = rdm_ok(NULL, V(1, 0));
	cr_assert_eq(fi->domain_attr->mr_mode, RIVET_MR_BASIC);
	fi_freeinfo(fi);
}

Test(info_rdm, mpi_hints)
{
	struct fi_info *h = hints_rdm(), *fi;

	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->caps, FI_MSG | FI_TAGGED | FI_SEND | FI_RECV |
				       COMM_CAPS);
	cr_assert_eq(fi->tx_attr->caps, FI_MSG | FI_TAGGED | FI_SEND);
	cr_assert_eq(fi->rx_attr->caps, FI_MSG | FI_TAGGED | FI_RECV);
	cr_assert_eq(fi->mode, 0, "FI_CONTEXT, FI_CONTEXT2 not needed");
	cr_assert_eq(fi->domain_attr->mr_mode, 0, "FI_MR_LOCAL not needed");
	cr_assert_eq(fi->domain_attr->cq_data_size, 8);
	cr_assert_eq(fi->ep_attr->mem_tag_format, 0xAAAAAAAAAAAAAAAAULL);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* fi_scalable_ep: contexts each way up to max_ep_tx_ctx/max_ep_rx_ctx,
 * named with FI_NAMED_RX_CTX */
Test(info_rdm, scalable_contexts)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->caps = FI_MSG | FI_NAMED_RX_CTX;
	h->ep_attr->tx_ctx_cnt = 4;
	h->ep_attr->rx_ctx_cnt = RIVET_SEP_MAX_CTX;
	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->ep_attr->tx_ctx_cnt, 4);
	cr_assert_eq(fi->ep_attr->rx_ctx_cnt, RIVET_SEP_MAX_CTX);
	cr_assert(fi->caps & FI_NAMED_RX_CTX);
	cr_assert(fi->tx_attr->caps & FI_NAMED_RX_CTX);
	cr_assert_not(fi->rx_attr->caps & FI_NAMED_RX_CTX);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* fi_trigger(3): triggered operations, only when asked for */
Test(info_rdm, trigger_when_asked)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->caps = FI_TAGGED | FI_TRIGGER;
	fi = rdm_ok(h, V_NOW);
	cr_assert(fi->caps & FI_TRIGGER);
	cr_assert(fi->tx_attr->caps & FI_TRIGGER);
	fi_freeinfo(fi);
	h->caps = FI_TAGGED;
	fi = rdm_ok(h, V_NOW);
	cr_assert_not(fi->caps & FI_TRIGGER);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* fi_shared_ctx: shared contexts each way are asked for and offered */
Test(info_rdm, shared_contexts)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	h->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	h->domain_attr->max_ep_srx_ctx = 1;
	h->domain_attr->max_ep_stx_ctx = 1;
	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->ep_attr->tx_ctx_cnt, FI_SHARED_CONTEXT);
	cr_assert_eq(fi->ep_attr->rx_ctx_cnt, FI_SHARED_CONTEXT);
	fi_freeinfo(fi);
	h->ep_attr->tx_ctx_cnt = 0;
	h->ep_attr->rx_ctx_cnt = 0;
	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->ep_attr->tx_ctx_cnt, 1);
	cr_assert_eq(fi->ep_attr->rx_ctx_cnt, 1);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

static const struct {
	uint64_t caps, want, tx, rx;
} g_rdm_caps[] = {
	{ 0, RDM_CAPS, RDM_TX_CAPS, RDM_RX_CAPS },
	{ FI_TAGGED, FI_TAGGED | FI_SEND | FI_RECV | COMM_CAPS,
	  FI_TAGGED | FI_SEND, FI_TAGGED | FI_RECV },
	{ FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE,
	  FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE | FI_SEND | FI_RECV |
		  COMM_CAPS,
	  FI_TAGGED | FI_SEND, FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE |
		  FI_RECV },
	{ FI_MSG | FI_MULTI_RECV, FI_MSG | FI_MULTI_RECV | FI_SEND | FI_RECV |
		  COMM_CAPS,
	  FI_MSG | FI_SEND, FI_MSG | FI_MULTI_RECV | FI_RECV },
	{ FI_MSG | FI_TAGGED | FI_SEND,
	  FI_MSG | FI_TAGGED | FI_SEND | COMM_CAPS,
	  FI_MSG | FI_TAGGED | FI_SEND, FI_MSG | FI_TAGGED },
	{ RDM_CAPS, RDM_CAPS, RDM_TX_CAPS, RDM_RX_CAPS },
};

Test(info_rdm, caps_selection)
{
	size_t i;

	for (i = 0; i < COUNT(g_rdm_caps); i++) {
		struct fi_info *h = hints_rdm(), *fi;

		h->caps = g_rdm_caps[i].caps;
		fi = rdm_ok(h, V_NOW);
		cr_assert_eq(fi->caps, g_rdm_caps[i].want, "row %zu", i);
		cr_assert_eq(fi->tx_attr->caps, g_rdm_caps[i].tx, "row %zu", i);
		cr_assert_eq(fi->rx_attr->caps, g_rdm_caps[i].rx, "row %zu", i);
		cr_assert_eq(fi->domain_attr->caps, COMM_CAPS);
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
}

/* FI_RMA: RDMA reads and writes name the target's regions by virtual
 * address and rkey, so the hints must allow those; remote CQ data then
 * fits an RDMA write's 32-bit immediate. */
Test(info_rdm, rma_granted)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->caps |= FI_RMA;
	h->tx_attr->rma_iov_limit = 1;
	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->caps, FI_MSG | FI_TAGGED | FI_SEND | FI_RECV |
				       FI_RMA | FI_READ | FI_WRITE |
				       FI_REMOTE_READ | FI_REMOTE_WRITE |
				       COMM_CAPS);
	cr_assert_eq(fi->tx_attr->caps, FI_MSG | FI_TAGGED | FI_SEND | FI_RMA |
						FI_READ | FI_WRITE);
	cr_assert_eq(fi->rx_attr->caps, FI_MSG | FI_TAGGED | FI_RECV | FI_RMA |
						FI_REMOTE_READ |
						FI_REMOTE_WRITE);
	cr_assert_eq(fi->domain_attr->mr_mode, MR_BASIC_MAP, "no FI_MR_LOCAL");
	cr_assert_eq(fi->domain_attr->cq_data_size, 4);
	cr_assert_eq(fi->tx_attr->rma_iov_limit, 1);
	cr_assert_eq(fi->ep_attr->max_order_raw_size, 1ULL << 30);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* FI_ATOMIC: keys and virtual addresses as for RMA, but no immediate
 * data, so cq_data_size stays 8. */
Test(info_rdm, atomic_granted)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->caps = FI_TAGGED | FI_ATOMIC;
	h->domain_attr->cq_data_size = 8;
	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->caps, FI_TAGGED | FI_SEND | FI_RECV | FI_ATOMIC |
				       FI_READ | FI_WRITE | FI_REMOTE_READ |
				       FI_REMOTE_WRITE | COMM_CAPS);
	cr_assert_eq(fi->tx_attr->caps, FI_TAGGED | FI_SEND | FI_ATOMIC |
						FI_READ | FI_WRITE);
	cr_assert_eq(fi->domain_attr->mr_mode, MR_BASIC_MAP);
	cr_assert_eq(fi->domain_attr->cq_data_size, 8);
	fi_freeinfo(fi);
	h->domain_attr->mr_mode = FI_MR_LOCAL;	/* no keys: no atomics */
	rdm_fails(h, V_NOW, -FI_ENODATA, "atomic without FI_MR_PROV_KEY");
	fi_freeinfo(h);
}

/* Without FI_MR_VIRT_ADDR in the hints: offset addressing, reported so. */
Test(info_rdm, rma_offset_addressing)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->caps |= FI_RMA | FI_ATOMIC;
	h->domain_attr->mr_mode = MR_ALL & ~FI_MR_VIRT_ADDR;
	fi = rdm_ok(h, V_NOW);
	cr_assert(fi->caps & FI_RMA);
	cr_assert(fi->caps & FI_ATOMIC);
	cr_assert_eq(fi->domain_attr->mr_mode,
		     MR_BASIC_MAP & ~FI_MR_VIRT_ADDR);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* FI_RMA_EVENT: given when asked for (never to caps 0), on the rx side */
Test(info_rdm, rma_event_when_asked)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->caps = FI_TAGGED | FI_RMA | FI_RMA_EVENT;
	fi = rdm_ok(h, V_NOW);
	cr_assert(fi->caps & FI_RMA_EVENT);
	cr_assert(fi->rx_attr->caps & FI_RMA_EVENT);
	cr_assert(!(fi->tx_attr->caps & FI_RMA_EVENT));
	fi_freeinfo(fi);
	h->caps = 0;
	fi = rdm_ok(h, V_NOW);
	cr_assert(!(fi->caps & FI_RMA_EVENT));
	cr_assert(!(fi->rx_attr->caps & FI_RMA_EVENT));
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* FI_FENCE: given when asked for (never to caps 0), on the tx side */
Test(info_rdm, fence_when_asked)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->caps = FI_TAGGED | FI_RMA | FI_FENCE;
	fi = rdm_ok(h, V_NOW);
	cr_assert(fi->caps & FI_FENCE);
	cr_assert(fi->tx_attr->caps & FI_FENCE);
	cr_assert(!(fi->rx_attr->caps & FI_FENCE));
	fi_freeinfo(fi);
	h->caps = 0;
	fi = rdm_ok(h, V_NOW);
	cr_assert(!(fi->caps & FI_FENCE));
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* FI_MR_RMA_EVENT: reported (regions bound to counters then need
 * fi_mr_enable) only to applications that allow it, and only with RMA */
Test(info_rdm, mr_rma_event_when_allowed)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->caps = FI_TAGGED | FI_RMA | FI_RMA_EVENT;
	h->domain_attr->mr_mode = MR_BASIC_MAP | FI_MR_RMA_EVENT;
	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->domain_attr->mr_mode,
		     MR_BASIC_MAP | FI_MR_RMA_EVENT);
	fi_freeinfo(fi);
	h->domain_attr->mr_mode = MR_BASIC_MAP;
	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->domain_attr->mr_mode, MR_BASIC_MAP);
	fi_freeinfo(fi);
	h->caps = FI_TAGGED;
	h->domain_attr->mr_mode = FI_MR_RMA_EVENT;
	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->domain_attr->mr_mode, 0, "no RMA: no region modes");
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* Reads only: no write can carry data, the header's 8 bytes stay. */
Test(info_rdm, rma_read_only_keeps_cq_data_8)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->caps = FI_TAGGED | FI_RMA | FI_READ | FI_REMOTE_READ;
	h->domain_attr->cq_data_size = 8;
	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->tx_attr->caps, FI_TAGGED | FI_SEND | FI_RMA | FI_READ);
	cr_assert_eq(fi->rx_attr->caps, FI_TAGGED | FI_RECV | FI_RMA |
						FI_REMOTE_READ);
	cr_assert_eq(fi->domain_attr->cq_data_size, 8);
	cr_assert_eq(fi->domain_attr->mr_mode, MR_BASIC_MAP);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* caps 0 asks for everything that fits the other hints: RMA only where
 * mr_mode and cq_data_size allow it, the messages in any case. */
static const struct {
	int mr_mode;
	size_t cq_data_size;
	uint64_t want_caps;
	int want_mr_mode;
	size_t want_cq_data;
} g_rdm_caps0[] = {
	{ MR_ALL, 0, RDM_CAPS, MR_BASIC_MAP, 4 },
	{ MR_BASIC_MAP, 4, RDM_CAPS, MR_BASIC_MAP, 4 },
	{ 0, 0, RDM_MSG_CAPS, 0, 8 },
	{ FI_MR_LOCAL, 0, RDM_MSG_CAPS, 0, 8 },
	{ MR_ALL & ~FI_MR_PROV_KEY, 0, RDM_MSG_CAPS, 0, 8 },
	{ MR_ALL, 8, RDM_ATOMIC_CAPS, MR_BASIC_MAP, 8 },
};

Test(info_rdm, caps_zero_rma_where_it_fits)
{
	size_t i;

	for (i = 0; i < COUNT(g_rdm_caps0); i++) {
		struct fi_info *h = hints_rdm(), *fi;

		h->caps = 0;
		h->domain_attr->mr_mode = g_rdm_caps0[i].mr_mode;
		h->domain_attr->cq_data_size = g_rdm_caps0[i].cq_data_size;
		fi = rdm_ok(h, V_NOW);
		cr_assert_eq(fi->caps, g_rdm_caps0[i].want_caps, "row %zu", i);
		cr_assert_eq(fi->tx_attr->caps & FI_RMA,
			     g_rdm_caps0[i].want_caps & FI_RMA, "row %zu", i);
		cr_assert_eq(fi->domain_attr->mr_mode,
			     g_rdm_caps0[i].want_mr_mode, "row %zu", i);
		cr_assert_eq(fi->domain_attr->cq_data_size,
			     g_rdm_caps0[i].want_cq_data, "row %zu", i);
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
}

/* The legacy basic registration is the virtual-address, provider-key
 * form: RMA is fine with it. */
Test(info_rdm, rma_legacy_basic)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->caps |= FI_RMA;
	h->domain_attr->mr_mode = RIVET_MR_BASIC;
	fi = rdm_ok(h, V(1, 4));
	cr_assert_eq(fi->domain_attr->mr_mode, RIVET_MR_BASIC);
	cr_assert(fi->caps & FI_RMA);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* Whatever the application offers, the RDM's messages need no
 * registration. */
static const struct {
	uint32_t version;
	int mr_mode;
	uint64_t mode;
	int want_mr_mode;
} g_rdm_mr[] = {
	{ V_NOW, MR_ALL, 0, 0 },
	{ V_NOW, FI_MR_LOCAL, 0, 0 },
	{ V_NOW, 0, 0, 0 },
	{ V_NOW, ~(RIVET_MR_BASIC | RIVET_MR_SCALABLE), RIVET_MODE_LOCAL_MR, 0 },
	{ V_NOW, FI_MR_ENDPOINT | FI_MR_RAW | FI_MR_HMEM, 0, 0 },
	{ V_NOW, RIVET_MR_BASIC, 0, RIVET_MR_BASIC },
	{ V_NOW, RIVET_MR_BASIC, RIVET_MODE_LOCAL_MR, RIVET_MR_BASIC },
	{ V(1, 5), MR_BASIC_MAP, 0, 0 },
	{ V(1, 4), RIVET_MR_UNSPEC, 0, RIVET_MR_BASIC },
	{ V(1, 4), RIVET_MR_UNSPEC, RIVET_MODE_LOCAL_MR, RIVET_MR_BASIC },
	{ V(1, 4), RIVET_MR_BASIC, 0, RIVET_MR_BASIC },
	{ V(1, 0), RIVET_MR_BASIC, RIVET_MODE_LOCAL_MR | FI_CONTEXT, RIVET_MR_BASIC },
};

Test(info_rdm, mr_mode_needs_nothing)
{
	size_t i;

	for (i = 0; i < COUNT(g_rdm_mr); i++) {
		struct fi_info *h = hints_rdm(), *fi;

		h->domain_attr->mr_mode = g_rdm_mr[i].mr_mode;
		h->mode = g_rdm_mr[i].mode;
		fi = rdm_ok(h, g_rdm_mr[i].version);
		cr_assert_eq(fi->domain_attr->mr_mode, g_rdm_mr[i].want_mr_mode,
			     "row %zu", i);
		cr_assert_eq(fi->mode, 0, "row %zu: no RIVET_MODE_LOCAL_MR", i);
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
}

/* Scalable registration promises application keys; fi_mr_reg gives
 * rkeys, so the legacy request is refused as it is for MSG. */
Test(info_rdm, mr_scalable_refused)
{
	struct fi_info *h = hints_rdm();

	h->domain_attr->mr_mode = RIVET_MR_SCALABLE;
	rdm_fails(h, V(1, 4), -FI_ENODATA, "1.4 scalable");
	rdm_fails(h, V_NOW, -FI_ENODATA, "1.17 scalable");
	fi_freeinfo(h);
}

Test(info_rdm, domain_enums_reported)
{
	enum fi_threading th[] = { FI_THREAD_SAFE, FI_THREAD_FID,
				   FI_THREAD_DOMAIN, FI_THREAD_COMPLETION,
				   FI_THREAD_ENDPOINT };
	enum fi_av_type av[] = { FI_AV_TABLE, FI_AV_MAP, FI_AV_UNSPEC };
	size_t i;

	for (i = 0; i < COUNT(th); i++) {
		struct fi_info *h = hints_rdm(), *fi;

		h->domain_attr->threading = th[i];
		h->domain_attr->av_type = av[i % COUNT(av)];
		h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
		h->domain_attr->data_progress = i % 2 ? FI_PROGRESS_MANUAL :
							FI_PROGRESS_UNSPEC;
		h->domain_attr->resource_mgmt = FI_RM_ENABLED;
		fi = rdm_ok(h, V_NOW);
		cr_assert_eq(fi->domain_attr->threading, th[i]);
		cr_assert_eq(fi->domain_attr->av_type, av[i % COUNT(av)]);
		cr_assert_eq(fi->domain_attr->data_progress,
			     FI_PROGRESS_MANUAL);
		cr_assert_eq(fi->domain_attr->control_progress,
			     FI_PROGRESS_MANUAL);
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
}

/* Matching is bitwise under the mask: any layout is honoured as asked. */
Test(info_rdm, mem_tag_format)
{
	uint64_t fmts[] = { 0, 0xFFFFFFFFFFFFFFFFULL, 0x30FF,
			    0xAAAAAAAAAAAAAAAAULL, 0x0000FFFF00FFFFFFULL };
	size_t i;

	for (i = 0; i < COUNT(fmts); i++) {
		struct fi_info *h = hints_rdm(), *fi;

		h->ep_attr->mem_tag_format = fmts[i];
		fi = rdm_ok(h, V_NOW);
		cr_assert_eq(fi->ep_attr->mem_tag_format,
			     fmts[i] ? fmts[i] : 0xAAAAAAAAAAAAAAAAULL,
			     "format %zu", i);
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
}

Test(info_rdm, sizes_at_the_maximum)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->tx_attr->size = 16384;
	h->rx_attr->size = 16384;
	h->tx_attr->inject_size = 256;
	h->tx_attr->iov_limit = 4;
	h->rx_attr->iov_limit = 4;
	h->rx_attr->total_buffered_recv = 1 << 20;
	h->ep_attr->max_msg_size = 1ULL << 30;
	h->ep_attr->protocol = RIVET_PROTO_RDM;
	h->ep_attr->protocol_version = 1;
	h->ep_attr->tx_ctx_cnt = 1;
	h->ep_attr->rx_ctx_cnt = 1;
	h->domain_attr->cq_data_size = 8;
	h->domain_attr->mr_key_size = 4;
	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->tx_attr->size, 16384);
	cr_assert_eq(fi->rx_attr->size, 16384);
	cr_assert_eq(fi->tx_attr->inject_size, 256);
	cr_assert_eq(fi->rx_attr->total_buffered_recv, 0, "ours reported");
	cr_assert_eq(fi->ep_attr->max_msg_size, 1ULL << 30);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

Test(info_rdm, orders_and_op_flags)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->caps |= FI_MULTI_RECV;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RMA_RAW;
	h->tx_attr->comp_order = RIVET_ORDER_NONE;
	h->tx_attr->op_flags = FI_INJECT | FI_TRANSMIT_COMPLETE |
			       FI_COMPLETION;
	h->rx_attr->op_flags = FI_MULTI_RECV | FI_COMPLETION;
	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->tx_attr->msg_order, RDM_ORDER);
	cr_assert_eq(fi->rx_attr->msg_order, RDM_ORDER | FI_ORDER_RMA_RAW);
	cr_assert_eq(fi->tx_attr->op_flags, FI_INJECT | FI_TRANSMIT_COMPLETE |
						    FI_COMPLETION);
	cr_assert_eq(fi->rx_attr->op_flags, FI_MULTI_RECV | FI_COMPLETION);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* FI_SHARED_AV, a domain capability: named AVs (rivet_av_shm.c) */
Test(info_rdm, shared_av)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->caps = FI_TAGGED | FI_SHARED_AV;
	h->domain_attr->caps = FI_SHARED_AV;
	fi = rdm_ok(h, V_NOW);
	cr_assert(fi->caps & FI_SHARED_AV);
	cr_assert(fi->domain_attr->caps & FI_SHARED_AV);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* ---- hints the RDM refuses: one change to hints_rdm() each ---- */
MUT(source_err, h->caps = FI_TAGGED | FI_SOURCE | FI_SOURCE_ERR)
MUT(multicast, h->caps = FI_MSG | FI_MULTICAST)
MUT(variable_msg, h->caps = FI_TAGGED | RIVET_CAP_V1_VARIABLE_MSG)
MUT(hmem, h->caps = FI_TAGGED | FI_HMEM)
MUT(rx_caps_beyond, h->caps = FI_MSG; h->rx_attr->caps = FI_TAGGED)
MUT(ep_msg, h->ep_attr->type = FI_EP_MSG)
MUT(ep_dgram, h->ep_attr->type = FI_EP_DGRAM)
MUT(protocol_msg, h->ep_attr->protocol = RIVET_PROTO_MSG)
MUT(protocol_version, h->ep_attr->protocol_version = 2)
MUT(addr_in6, h->addr_format = FI_SOCKADDR_IN6)
MUT(ctrl_auto, h->domain_attr->control_progress = FI_PROGRESS_AUTO)
MUT(tx_size, h->tx_attr->size = 16385)
MUT(rx_size, h->rx_attr->size = 16385)
MUT(inject, h->tx_attr->inject_size = 257)
MUT(max_msg, h->ep_attr->max_msg_size = (1ULL << 30) + 1)
MUT(order_war_size, h->ep_attr->max_order_war_size = 1)
MUT(rma_iov_2, h->caps |= FI_RMA; h->tx_attr->rma_iov_limit = 2)
MUT(rma_no_prov_key, h->caps |= FI_RMA;
    h->domain_attr->mr_mode = MR_ALL & ~FI_MR_PROV_KEY)
MUT(rma_no_allocated, h->caps |= FI_RMA;
    h->domain_attr->mr_mode = MR_ALL & ~FI_MR_ALLOCATED)
MUT(rma_cq_data_8, h->caps |= FI_RMA; h->domain_attr->cq_data_size = 8)
MUT(tx_caps_rma_mr_0, h->caps = 0; h->tx_attr->caps = FI_RMA;
    h->domain_attr->mr_mode = 0)
MUT(tx_iov, h->tx_attr->iov_limit = 5)
MUT(rx_iov, h->rx_attr->iov_limit = 5)
MUT(tx_ctx_cnt, h->ep_attr->tx_ctx_cnt = RIVET_SEP_MAX_CTX + 1)
MUT(rx_ctx_cnt, h->ep_attr->rx_ctx_cnt = RIVET_SEP_MAX_CTX + 1)
MUT(srx_ctx, h->domain_attr->max_ep_srx_ctx = 2)
MUT(cq_data_9, h->domain_attr->cq_data_size = 9)
MUT(max_err_data, h->domain_attr->max_err_data = 1)
MUT(tx_order_war, h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_WAR)
MUT(rx_order_rma_war, h->rx_attr->msg_order = FI_ORDER_RMA_WAR)
MUT(tx_comp_strict, h->tx_attr->comp_order = RIVET_ORDER_STRICT)
MUT(rx_comp_data, h->rx_attr->comp_order = RIVET_ORDER_DATA)
MUT(tx_commit, h->tx_attr->op_flags = FI_COMMIT_COMPLETE)
MUT(rx_multi_recv_no_cap, h->rx_attr->op_flags = FI_MULTI_RECV)
MUT(rx_inject, h->rx_attr->op_flags = FI_INJECT)
MUT(auth_key, h->domain_attr->auth_key_size = 16)
MUT(prov_layered, h->fabric_attr->prov_name = strdup("rivet;ofi_rxm"))

static const struct hint_case g_rdm_nodata[] = {
	CASE(source_err), CASE(multicast),
	CASE(variable_msg), CASE(hmem),
	CASE(rx_caps_beyond), CASE(ep_msg),
	CASE(ep_dgram), CASE(protocol_msg), CASE(protocol_version),
	CASE(addr_in6), CASE(ctrl_auto), CASE(tx_size),
	CASE(rx_size), CASE(inject), CASE(max_msg), CASE(order_war_size),
	CASE(tx_iov), CASE(rx_iov), CASE(rma_iov_2), CASE(rma_no_prov_key),
	CASE(rma_no_allocated), CASE(rma_cq_data_8),
	CASE(tx_caps_rma_mr_0), CASE(tx_ctx_cnt), CASE(rx_ctx_cnt),
	CASE(srx_ctx), CASE(cq_data_9),
	CASE(max_err_data), CASE(tx_order_war), CASE(rx_order_rma_war),
	CASE(tx_comp_strict), CASE(rx_comp_data),
	CASE(tx_commit), CASE(rx_multi_recv_no_cap), CASE(rx_inject),
	CASE(auth_key), CASE(prov_layered),
};

Test(info_rdm, unsatisfiable_is_enodata)
{
	run_cases(g_rdm, hints_rdm, g_rdm_nodata, COUNT(g_rdm_nodata),
		  -FI_ENODATA);
}

/* The MSG info refuses what only the RDM offers. */
MUT(msg_unspec_tagged, h->ep_attr->type = FI_EP_UNSPEC)
MUT(msg_unspec_source, h->ep_attr->type = FI_EP_UNSPEC;
    h->caps = FI_MSG | FI_SOURCE)
MUT(msg_tag_format, h->ep_attr->type = FI_EP_UNSPEC; h->caps = FI_MSG;
    h->ep_attr->mem_tag_format = RIVET_TAG_GENERIC)

static const struct hint_case g_msg_nodata[] = {
	CASE(msg_unspec_tagged), CASE(msg_unspec_source), CASE(msg_tag_format),
};

Test(info_rdm, msg_refuses_rdm_hints)
{
	run_cases(g_prov, hints_rdm, g_msg_nodata, COUNT(g_msg_nodata),
		  -FI_ENODATA);
}

/* FI_DELIVERY_COMPLETE is real on RDM (rendezvous + FIN): offered. */
Test(info_rdm, tx_delivery_complete_offered)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	fi = rdm_ok(h, V_NOW);
	cr_assert(fi->tx_attr->op_flags & FI_DELIVERY_COMPLETE);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* FI_PROGRESS_AUTO data progress: a progress thread per RDM endpoint. */
Test(info_rdm, data_progress_auto_offered)
{
	struct fi_info *h = hints_rdm(), *fi;

	h->domain_attr->data_progress = FI_PROGRESS_AUTO;
	fi = rdm_ok(h, V_NOW);
	cr_assert_eq(fi->domain_attr->data_progress, FI_PROGRESS_AUTO);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}
