/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of rivet_info_match's refusals: each hint we cannot meet gives
 * -FI_ENODATA, each malformed one -FI_EINVAL or -FI_EBADFLAGS, and the
 * legacy memory registration forms behave as their API version says.
 */
#include <stdlib.h>
#include <criterion/criterion.h>

#include "info_fixture.h"

TestSuite(info_reject, .init = info_setup, .fini = info_teardown);

/* One change to hints_base() per case. */

/* ---- capabilities we do not have ---- */
MUT(caps_tagged, h->caps = FI_MSG | FI_TAGGED)
MUT(caps_multicast, h->caps = FI_MSG | FI_MULTICAST)
MUT(caps_named_rx_ctx, h->caps = FI_MSG | FI_NAMED_RX_CTX)
MUT(caps_directed_recv, h->caps = FI_MSG | FI_DIRECTED_RECV)
MUT(caps_source, h->caps = FI_MSG | FI_SOURCE)
MUT(caps_source_err, h->caps = FI_MSG | FI_SOURCE | FI_SOURCE_ERR)
MUT(caps_rma_event, h->caps = FI_RMA | FI_RMA_EVENT)
MUT(caps_rma_pmem, h->caps = FI_RMA | FI_RMA_PMEM)
MUT(caps_trigger, h->caps = FI_MSG | FI_TRIGGER)
MUT(caps_hmem, h->caps = FI_MSG | FI_HMEM)
MUT(caps_collective, h->caps = FI_MSG | FI_COLLECTIVE)
MUT(caps_av_user_id, h->caps = FI_MSG | FI_AV_USER_ID)
MUT(caps_variable_msg, h->caps = FI_MSG | RIVET_CAP_V1_VARIABLE_MSG)
MUT(caps_prov_specific, h->caps = FI_MSG | (1ULL << 60))
MUT(tx_caps_beyond_info, h->caps = FI_MSG; h->tx_attr->caps = FI_RMA)
MUT(rx_caps_tagged, h->rx_attr->caps = FI_TAGGED)
/* ---- endpoint ---- */
MUT(ep_rdm, h->ep_attr->type = FI_EP_RDM)
MUT(ep_dgram, h->ep_attr->type = FI_EP_DGRAM)
/* FI_EP_SOCK_STREAM of API 1.x (2.x headers define the name as 0) */
MUT(ep_sock_stream, h->ep_attr->type = (enum fi_ep_type)(RIVET_EP_TYPE_MAX_V1 - 1))
MUT(ep_protocol, h->ep_attr->protocol = FI_PROTO_RDMA_CM_IB_RC)
MUT(ep_protocol_version, h->ep_attr->protocol_version = 2)
MUT(ep_mem_tag_format, h->ep_attr->mem_tag_format = 0xffff)
MUT(ep_tx_ctx_cnt, h->ep_attr->tx_ctx_cnt = 2)
MUT(ep_max_msg_size, h->ep_attr->max_msg_size = (1u << 30) + 1)
MUT(ep_order_raw, h->ep_attr->max_order_raw_size = (1u << 30) + 1)
MUT(ep_order_war, h->ep_attr->max_order_war_size = 1)
MUT(ep_order_waw, h->ep_attr->max_order_waw_size = SIZE_MAX)
MUT(ep_auth_key, h->ep_attr->auth_key_size = 8)
/* ---- addressing and names ---- */
MUT(addr_in6, h->addr_format = FI_SOCKADDR_IN6)
MUT(addr_ib, h->addr_format = FI_SOCKADDR_IB)
MUT(addr_str, h->addr_format = FI_ADDR_STR)
MUT(addr_psmx2, h->addr_format = FI_ADDR_PSMX2)
MUT(fabric_name, h->fabric_attr->name = strdup("10.99.0.0/24"))
MUT(domain_name, h->domain_attr->name = strdup("mlx5_0"))
MUT(prov_verbs, h->fabric_attr->prov_name = strdup("verbs"))
MUT(prov_layered, h->fabric_attr->prov_name = strdup("rivet;ofi_rxm"))
MUT(prov_excluded, h->fabric_attr->prov_name = strdup("^rivet"))
MUT(prov_excluded_2, h->fabric_attr->prov_name = strdup("verbs;^RIVET"))
MUT(prov_other_core, h->fabric_attr->prov_name = strdup("tcp;^ofi_rxm"))
MUT(prov_two_cores, h->fabric_attr->prov_name = strdup("rivet;verbs"))
MUT(prov_prefix, h->fabric_attr->prov_name = strdup("riv"))
/* ---- memory registration (API 1.17) ---- */
MUT(mr_no_local, h->domain_attr->mr_mode = MR_BASIC_MAP)
MUT(mr_no_local_but_mode, h->domain_attr->mr_mode = MR_BASIC_MAP;
    h->mode |= RIVET_MODE_LOCAL_MR)
MUT(mr_no_prov_key, h->domain_attr->mr_mode = MR_ALL & ~FI_MR_PROV_KEY)
MUT(mr_no_allocated, h->caps = FI_MSG;
    h->domain_attr->mr_mode = FI_MR_LOCAL)
MUT(mr_zero, h->domain_attr->mr_mode = 0; h->mode |= RIVET_MODE_LOCAL_MR)
MUT(mr_scalable, h->domain_attr->mr_mode = RIVET_MR_SCALABLE;
    h->mode |= RIVET_MODE_LOCAL_MR)
MUT(mr_basic_without_local_mr, h->domain_attr->mr_mode = RIVET_MR_BASIC)
/* ---- domain ---- */
MUT(ctrl_auto, h->domain_attr->control_progress = FI_PROGRESS_AUTO)
/* a class fi_endpoint(3) does not define (rivet has no provider-
 * specific ones), a DSCP beyond 6 bits, a label past the last */
MUT(tclass_provider, h->domain_attr->tclass = 0x300)
MUT(tclass_dscp_64, h->domain_attr->tclass = FI_TC_DSCP | 64)
MUT(tclass_label_past, h->domain_attr->tclass = FI_TC_NETWORK_CTRL + 1)
MUT(cq_data_8, h->domain_attr->cq_data_size = 8)
MUT(cq_data_without_rx_cq_data, h->mode = FI_CONTEXT;
    h->domain_attr->cq_data_size = 4)
MUT(mr_key_8, h->domain_attr->mr_key_size = 8)
MUT(max_err_data, h->domain_attr->max_err_data = 4096)
MUT(cq_cnt, h->domain_attr->cq_cnt = 16385)
MUT(ep_cnt, h->domain_attr->ep_cnt = 65537)
MUT(dom_tx_ctx_cnt, h->domain_attr->tx_ctx_cnt = 65537)
MUT(dom_rx_ctx_cnt, h->domain_attr->rx_ctx_cnt = 65537)
MUT(max_ep_tx_ctx, h->domain_attr->max_ep_tx_ctx = 2)
MUT(max_ep_rx_ctx, h->domain_attr->max_ep_rx_ctx = 2)
MUT(max_ep_stx_ctx, h->domain_attr->max_ep_stx_ctx = 2)
MUT(max_ep_srx_ctx, h->domain_attr->max_ep_srx_ctx = 2)
MUT(cntr_cnt, h->domain_attr->cntr_cnt = 1u << 30)
MUT(mr_iov_limit, h->domain_attr->mr_iov_limit = 2)
MUT(mr_cnt, h->domain_attr->mr_cnt = 262145)
MUT(dom_auth_key, h->domain_attr->auth_key_size = 16)
/* ---- transmit ---- */
MUT(tx_op_commit, h->tx_attr->op_flags = FI_COMMIT_COMPLETE)
MUT(tx_op_multicast, h->tx_attr->op_flags = FI_MULTICAST)
MUT(tx_op_fence, h->tx_attr->op_flags = FI_FENCE)
MUT(tx_order_war, h->tx_attr->msg_order = FI_ORDER_WAR)
MUT(tx_order_sar, h->tx_attr->msg_order = FI_ORDER_SAR)
MUT(tx_order_strict, h->tx_attr->msg_order = RIVET_ORDER_STRICT)
MUT(tx_order_rma_war, h->tx_attr->msg_order = FI_ORDER_RMA_WAR)
MUT(tx_order_atomic, h->tx_attr->msg_order = FI_ORDER_ATOMIC_RAW)
MUT(tx_order_data, h->tx_attr->msg_order = RIVET_ORDER_DATA)
MUT(tx_comp_data, h->tx_attr->comp_order = RIVET_ORDER_DATA)
MUT(tx_inject, h->tx_attr->inject_size = 241)
MUT(tx_size, h->tx_attr->size = 16385)
MUT(tx_iov, h->tx_attr->iov_limit = 33)
MUT(tx_rma_iov, h->tx_attr->rma_iov_limit = 2)
MUT(tx_tclass, h->tx_attr->tclass = 0x1000)
/* ---- receive ---- */
/* FI_MULTI_RECV in op_flags without the capability in caps */
MUT(rx_op_multi_recv, h->rx_attr->op_flags = FI_MULTI_RECV)
MUT(rx_op_inject, h->rx_attr->op_flags = FI_INJECT)
MUT(rx_order_war, h->rx_attr->msg_order = FI_ORDER_WAR)
MUT(rx_comp_order, h->rx_attr->comp_order = FI_ORDER_RMA_RAR)
MUT(rx_size, h->rx_attr->size = 16385)
MUT(rx_iov, h->rx_attr->iov_limit = 33)

static const struct hint_case g_nodata[] = {
	CASE(caps_tagged), CASE(caps_multicast),
	CASE(caps_named_rx_ctx), CASE(caps_directed_recv), CASE(caps_source),
	CASE(caps_source_err), CASE(caps_rma_event), CASE(caps_rma_pmem),
	CASE(caps_trigger), CASE(caps_hmem),
	CASE(caps_collective),
	CASE(caps_av_user_id), CASE(caps_variable_msg),
	CASE(caps_prov_specific), CASE(tx_caps_beyond_info),
	CASE(rx_caps_tagged),
	CASE(ep_rdm), CASE(ep_dgram), CASE(ep_sock_stream), CASE(ep_protocol),
	CASE(ep_protocol_version), CASE(ep_mem_tag_format),
	CASE(ep_tx_ctx_cnt),
	CASE(ep_max_msg_size), CASE(ep_order_raw), CASE(ep_order_war),
	CASE(ep_order_waw), CASE(ep_auth_key),
	CASE(addr_in6), CASE(addr_ib), CASE(addr_str), CASE(addr_psmx2),
	CASE(fabric_name), CASE(domain_name), CASE(prov_verbs),
	CASE(prov_layered), CASE(prov_excluded), CASE(prov_excluded_2),
	CASE(prov_other_core), CASE(prov_two_cores), CASE(prov_prefix),
	CASE(mr_no_local), CASE(mr_no_local_but_mode), CASE(mr_no_prov_key),
	CASE(mr_no_allocated), CASE(mr_zero),
	CASE(mr_scalable), CASE(mr_basic_without_local_mr),
	CASE(ctrl_auto), CASE(tclass_provider), CASE(tclass_dscp_64),
	CASE(tclass_label_past),
	CASE(cq_data_8), CASE(cq_data_without_rx_cq_data), CASE(mr_key_8),
	CASE(max_err_data), CASE(cq_cnt), CASE(ep_cnt), CASE(dom_tx_ctx_cnt),
	CASE(dom_rx_ctx_cnt), CASE(max_ep_tx_ctx), CASE(max_ep_rx_ctx),
	CASE(max_ep_stx_ctx), CASE(max_ep_srx_ctx), CASE(cntr_cnt),
	CASE(mr_iov_limit), CASE(mr_cnt), CASE(dom_auth_key),
	CASE(tx_op_commit), CASE(tx_op_multicast), CASE(tx_op_fence),
	CASE(tx_order_war), CASE(tx_order_sar), CASE(tx_order_strict),
	CASE(tx_order_rma_war), CASE(tx_order_atomic), CASE(tx_order_data),
	CASE(tx_comp_data), CASE(tx_inject), CASE(tx_size), CASE(tx_iov),
	CASE(tx_rma_iov), CASE(tx_tclass),
	CASE(rx_op_multi_recv), CASE(rx_op_inject), CASE(rx_order_war),
	CASE(rx_comp_order), CASE(rx_size), CASE(rx_iov),
};

/* ---- malformed: not capabilities, out-of-range enums, bad mr_mode ---- */
MUT(caps_bit7, h->caps = FI_MSG | (1ULL << 7))
MUT(caps_remote_cq_data, h->caps = FI_MSG | FI_REMOTE_CQ_DATA)
MUT(caps_bit40, h->caps = FI_MSG | (1ULL << 40))
MUT(caps_read_alone, h->caps = FI_MSG | FI_READ)
MUT(caps_remote_write_alone, h->caps = FI_REMOTE_WRITE)
MUT(caps_multicast_alone, h->caps = FI_MULTICAST)
MUT(caps_source_err_alone, h->caps = FI_MSG | FI_SOURCE_ERR)
MUT(tx_caps_bit7, h->tx_attr->caps = 1ULL << 7)
MUT(rx_caps_bit14, h->rx_attr->caps = 1ULL << 14)
MUT(domain_caps_bit7, h->domain_attr->caps = 1ULL << 7)

static const struct hint_case g_badflags[] = {
	CASE(caps_bit7), CASE(caps_remote_cq_data), CASE(caps_bit40),
	CASE(caps_read_alone), CASE(caps_remote_write_alone),
	CASE(caps_multicast_alone), CASE(caps_source_err_alone),
	CASE(tx_caps_bit7), CASE(rx_caps_bit14), CASE(domain_caps_bit7),
};

MUT(ep_type_99, h->ep_attr->type = (enum fi_ep_type)99)
MUT(threading_6, h->domain_attr->threading = (enum fi_threading)6)
MUT(ctrl_progress_3, h->domain_attr->control_progress = (enum fi_progress)3)
MUT(data_progress_3, h->domain_attr->data_progress = (enum fi_progress)3)
MUT(rm_3, h->domain_attr->resource_mgmt = (enum fi_resource_mgmt)3)
MUT(av_type_3, h->domain_attr->av_type = (enum fi_av_type)3)
MUT(mr_basic_and_bits, h->domain_attr->mr_mode = RIVET_MR_BASIC | MR_ALL)
MUT(mr_scalable_and_local,
    h->domain_attr->mr_mode = RIVET_MR_SCALABLE | FI_MR_LOCAL)
MUT(mr_basic_scalable, h->domain_attr->mr_mode = RIVET_MR_BASIC | RIVET_MR_SCALABLE)

static const struct hint_case g_inval[] = {
	CASE(ep_type_99), CASE(threading_6), CASE(ctrl_progress_3),
	CASE(data_progress_3), CASE(rm_3), CASE(av_type_3),
	CASE(mr_basic_and_bits),
	CASE(mr_scalable_and_local), CASE(mr_basic_scalable),
};

Test(info_reject, base_hints_match)
{
	struct fi_info *h = hints_base();

	fi_freeinfo(match_ok(h, V_NOW));
	fi_freeinfo(h);
}

Test(info_reject, unsatisfiable_is_enodata)
{
	run_cases(g_prov, hints_base, g_nodata, COUNT(g_nodata),
		  -FI_ENODATA);
}

Test(info_reject, invalid_flags_are_ebadflags)
{
	run_cases(g_prov, hints_base, g_badflags, COUNT(g_badflags),
		  -FI_EBADFLAGS);
}

Test(info_reject, invalid_values_are_einval)
{
	run_cases(g_prov, hints_base, g_inval, COUNT(g_inval), -FI_EINVAL);
}

/* ---- memory registration forms by API version ---- */
static const struct {
	uint32_t version;
	uint64_t caps;
	int mr_mode;
	uint64_t mode;
	int ret;
	int want_mr_mode;
	bool want_local_mr;
} g_mr[] = {
	/* API 1.4: RIVET_MR_UNSPEC/BASIC/SCALABLE, RIVET_MODE_LOCAL_MR a mode bit */
	{ V(1, 4), FI_RMA, RIVET_MR_UNSPEC, RIVET_MODE_LOCAL_MR, 0, RIVET_MR_BASIC, true },
	{ V(1, 4), FI_RMA, RIVET_MR_BASIC, RIVET_MODE_LOCAL_MR, 0, RIVET_MR_BASIC, true },
	{ V(1, 0), FI_MSG, RIVET_MR_BASIC, RIVET_MODE_LOCAL_MR | FI_CONTEXT, 0,
	  RIVET_MR_BASIC, true },
	{ V(1, 4), FI_RMA, RIVET_MR_SCALABLE, RIVET_MODE_LOCAL_MR, -FI_ENODATA, 0, false },
	{ V(1, 4), FI_RMA, RIVET_MR_UNSPEC, 0, -FI_ENODATA, 0, false },
	{ V(1, 4), FI_RMA, RIVET_MR_BASIC, FI_CONTEXT, -FI_ENODATA, 0, false },
	{ V(1, 4), FI_RMA, FI_MR_LOCAL, RIVET_MODE_LOCAL_MR, -FI_EINVAL, 0, false },
	{ V(1, 4), FI_RMA, RIVET_MR_BASIC | RIVET_MR_SCALABLE, RIVET_MODE_LOCAL_MR,
	  -FI_EINVAL, 0, false },
	/* API >= 1.5: RIVET_MR_BASIC alone is the legacy request */
	{ V(1, 5), FI_RMA, RIVET_MR_BASIC, RIVET_MODE_LOCAL_MR, 0, RIVET_MR_BASIC, true },
	{ V_NOW, FI_RMA, RIVET_MR_BASIC, RIVET_MODE_LOCAL_MR, 0, RIVET_MR_BASIC, true },
	{ V_NOW, FI_RMA, RIVET_MR_BASIC, 0, -FI_ENODATA, 0, false },
	{ V_NOW, FI_RMA, RIVET_MR_SCALABLE, RIVET_MODE_LOCAL_MR, -FI_ENODATA, 0, false },
	{ V_NOW, FI_RMA, RIVET_MR_UNSPEC, RIVET_MODE_LOCAL_MR, -FI_ENODATA, 0, false },
	{ V(1, 5), FI_RMA, MR_ALL, 0, 0, MR_ALL, false },
	{ V_NOW, FI_RMA, MR_ALL, RIVET_MODE_LOCAL_MR, 0, MR_ALL, false },
	{ V_NOW, FI_MSG, FI_MR_LOCAL | FI_MR_ALLOCATED, 0, 0,
	  FI_MR_LOCAL | FI_MR_ALLOCATED, false },
	{ V_NOW, FI_MSG, FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0, 0,
	  FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY, false },
	{ V_NOW, 0, FI_MR_LOCAL | FI_MR_ALLOCATED, 0, -FI_ENODATA, 0, false },
};

Test(info_reject, mr_mode_by_version)
{
	size_t i;

	for (i = 0; i < COUNT(g_mr); i++) {
		struct fi_info *h = hints_base(), *fi;
		char name[32];

		h->caps = g_mr[i].caps;
		h->mode = g_mr[i].mode;
		h->domain_attr->mr_mode = g_mr[i].mr_mode;
		snprintf(name, sizeof(name), "mr row %zu", i);
		if (g_mr[i].ret) {
			match_fails(h, g_mr[i].version, g_mr[i].ret, name);
			fi_freeinfo(h);
			continue;
		}
		fi = match_ok(h, g_mr[i].version);
		cr_assert_eq(fi->domain_attr->mr_mode, g_mr[i].want_mr_mode,
			     "%s", name);
		cr_assert_eq(!!(fi->mode & RIVET_MODE_LOCAL_MR), g_mr[i].want_local_mr,
			     "%s", name);
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
}

/* Before 1.5 authorization keys are ignored, not refused. */
Test(info_reject, auth_key_ignored_before_1_5)
{
	struct fi_info *h = hints_base(), *fi;

	h->mode |= RIVET_MODE_LOCAL_MR;
	h->domain_attr->mr_mode = RIVET_MR_BASIC;
	h->domain_attr->auth_key_size = 16;
	h->ep_attr->auth_key_size = 8;
	fi = match_ok(h, V(1, 4));
	fi_freeinfo(fi);
	fi_freeinfo(h);
}
