// SPDX-License-Identifier: MIT
/*
 * One build, every API version (rivet_abi.h): error entries written as the
 * application's version lays them out, capability bits read by the
 * version that defines them, 2.x's progress and ordering rules.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "info_fixture.h"

#define GUARD 0xa5
#define V1_19_ENTRY 80	/* through err_data_size */
#define V1_20_ENTRY 88	/* and src_addr */

static struct rivet_cq g_cq;

/* readerr into a buffer of the application's entry plus guard bytes. */
static void fill_entry(uint32_t version, unsigned char *buf, size_t size,
		       fi_addr_t src)
{
	struct rivet_cq_entry e = {
		.op_context = buf, .flags = FI_SEND | FI_TAGGED, .len = 8,
		.err = FI_ECONNRESET, .prov_errno = RIVET_PERR_CONN,
		.src = src,
	};

	memset(buf, GUARD, size);
	/* err_data_size 0: no buffer of the caller's (from 1.5 on) */
	if (version >= FI_VERSION(1, 5))
		memset(buf + V1_19_ENTRY - sizeof(size_t), 0, sizeof(size_t));
	g_cq.api_version = version;
	rivet_cq_err_fill(&g_cq, &e, (struct fi_cq_err_entry *)buf);
}

static void assert_guard(const unsigned char *buf, size_t from, size_t to)
{
	size_t i;

	for (i = from; i < to; i++)
		cr_assert_eq(buf[i], GUARD, "byte %zu written", i);
}

Test(abi, entry_sizes_by_version)
{
	cr_assert_eq(rivet_cq_err_entry_size(FI_VERSION(1, 4)), 72);
	cr_assert_eq(rivet_cq_err_entry_size(FI_VERSION(1, 17)), V1_19_ENTRY);
	cr_assert_eq(rivet_cq_err_entry_size(FI_VERSION(1, 19)), V1_19_ENTRY);
	cr_assert_eq(rivet_cq_err_entry_size(FI_VERSION(1, 20)), V1_20_ENTRY);
	cr_assert_eq(rivet_cq_err_entry_size(FI_VERSION(2, 6)), V1_20_ENTRY);
}

/* A 1.17 program's 80-byte entry: nothing written past it. */
Test(abi, err_entry_80_bytes)
{
	unsigned char buf[V1_20_ENTRY + 16];
	struct fi_cq_err_entry *ent = (struct fi_cq_err_entry *)buf;

	fill_entry(FI_VERSION(1, 17), buf, sizeof(buf), 3);
	assert_guard(buf, V1_19_ENTRY, sizeof(buf));
	cr_assert_eq(ent->op_context, buf);
	cr_assert_eq(ent->err, FI_ECONNRESET);
	cr_assert_eq(ent->prov_errno, RIVET_PERR_CONN);
	cr_assert_str_eq(ent->err_data, g_cq.err_buf);
	cr_assert_eq(ent->err_data_size, strlen(g_cq.err_buf) + 1);
}

/* A 2.x program's 88-byte entry: src_addr is the peer, or NOTAVAIL. */
Test(abi, err_entry_88_bytes)
{
	unsigned char buf[V1_20_ENTRY + 16];
	fi_addr_t src;

	fill_entry(FI_VERSION(2, 0), buf, sizeof(buf), 3);
	assert_guard(buf, V1_20_ENTRY, sizeof(buf));
	memcpy(&src, buf + V1_19_ENTRY, sizeof(src));
	cr_assert_eq(src, 3);
	fill_entry(FI_VERSION(1, 20), buf, sizeof(buf), FI_ADDR_UNSPEC);
	assert_guard(buf, V1_20_ENTRY, sizeof(buf));
	memcpy(&src, buf + V1_19_ENTRY, sizeof(src));
	cr_assert_eq(src, FI_ADDR_NOTAVAIL);
}

/* Before 1.5 the entry has no err_data_size: neither read nor written. */
Test(abi, err_entry_before_1_5)
{
	unsigned char buf[V1_20_ENTRY + 16];
	struct fi_cq_err_entry *ent = (struct fi_cq_err_entry *)buf;

	fill_entry(FI_VERSION(1, 4), buf, sizeof(buf), 3);
	assert_guard(buf, 72, sizeof(buf));
	cr_assert_str_eq(ent->err_data, g_cq.err_buf);
}

/* The caller's own err_data buffer is never written (fi_cq(3)). */
Test(abi, err_entry_caller_buffer)
{
	unsigned char buf[V1_20_ENTRY];
	struct fi_cq_err_entry *ent = (struct fi_cq_err_entry *)buf;
	char mine[8] = "mine";
	struct rivet_cq_entry e = { .err = FI_EIO, .src = FI_ADDR_UNSPEC };

	memset(buf, 0, sizeof(buf));
	ent->err_data = mine;
	ent->err_data_size = sizeof(mine);
	g_cq.api_version = FI_VERSION(1, 17);
	rivet_cq_err_fill(&g_cq, &e, ent);
	cr_assert_eq(ent->err_data, mine);
	cr_assert_eq(ent->err_data_size, 0);
	cr_assert_str_eq(mine, "mine");
}

/* ---- capability bits 45, 46, 48: 1.x's meanings, then 2.0's ---- */

TestSuite(abi_info, .init = info_setup, .fini = info_teardown);

#define V2 FI_VERSION(2, 0)
#define V1 FI_VERSION(1, 17)

static struct fi_info *rdm_hints(uint64_t caps)
{
	struct fi_info *h = hints_rdm();

	h->caps = caps;
	return h;
}

Test(abi_info, v2_directed_caps_offered)
{
	struct fi_info *h = rdm_hints(FI_TAGGED |
				      RIVET_CAP_TAGGED_DIRECTED_RECV |
				      RIVET_CAP_EXACT_DIRECTED_RECV |
				      RIVET_CAP_TAGGED_MULTI_RECV);
	struct fi_info *fi = match_prov_ok(g_rdm, h, V2);

	cr_assert(fi->caps & RIVET_CAP_TAGGED_DIRECTED_RECV);
	cr_assert(fi->rx_attr->caps & RIVET_CAP_EXACT_DIRECTED_RECV);
	cr_assert(fi->rx_attr->caps & RIVET_CAP_TAGGED_MULTI_RECV);
	cr_assert_eq(fi->tx_attr->comp_order, 0, "2.0: comp_order is 0");
	cr_assert_eq(fi->rx_attr->comp_order, 0);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* To a 1.x program bit 48 is FI_VARIABLE_MSG (not offered) and bit 45
 * FI_HMEM_HOST_ALLOC (no capability at all). */
Test(abi_info, v1_bits_keep_v1_meaning)
{
	struct fi_info *h = rdm_hints(FI_TAGGED | RIVET_CAP_V1_VARIABLE_MSG);

	match_prov_fails(g_rdm, h, V1, -FI_ENODATA, "variable_msg");
	h->caps = FI_TAGGED | (1ULL << 45);
	match_prov_fails(g_rdm, h, V1, -FI_EBADFLAGS, "bit 45");
	h->caps = FI_TAGGED | RIVET_CAP_V1_XPU_TRIGGER;
	match_prov_fails(g_rdm, h, V1, -FI_EBADFLAGS, "xpu without trigger");
	fi_freeinfo(h);
}

/* No 2.0 bit reaches a 1.x program, hints or none. */
Test(abi_info, v1_answers_hold_no_v2_bits)
{
	struct fi_info *h = rdm_hints(0);
	struct fi_info *fi = match_prov_ok(g_rdm, h, V1), *none;

	cr_assert_eq(fi->caps & RIVET_CAP_V2_ONLY, 0);
	cr_assert_eq(fi->rx_attr->caps & RIVET_CAP_V2_ONLY, 0);
	cr_assert_eq(rivet_info_match(g_rdm, &g_rxe, NULL, V1, &none), 0);
	cr_assert_eq(none->caps & RIVET_CAP_V2_ONLY, 0);
	fi_freeinfo(none);
	cr_assert_eq(rivet_info_match(g_rdm, &g_rxe, NULL, V2, &none), 0);
	cr_assert_eq(none->caps & RIVET_CAP_V2_ONLY, RIVET_CAP_V2_ONLY);
	fi_freeinfo(none);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* comp_order: reported to 1.x programs, 0 to 2.x ones. */
Test(abi_info, comp_order_by_version)
{
	struct fi_info *h = hints_base(), *fi;

	fi = match_ok(h, V1);
	cr_assert_eq(fi->tx_attr->comp_order, RIVET_ORDER_STRICT);
	fi_freeinfo(fi);
	fi = match_ok(h, V2);
	cr_assert_eq(fi->tx_attr->comp_order, 0);
	cr_assert_eq(fi->rx_attr->comp_order, 0);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* The MSG endpoint has no directed receive in any version. */
Test(abi_info, v2_bits_refused_on_msg)
{
	struct fi_info *h = hints_base();

	h->caps |= RIVET_CAP_TAGGED_DIRECTED_RECV;
	match_prov_fails(g_prov, h, V2, -FI_ENODATA, "msg tagged directed");
	fi_freeinfo(h);
}

Test(abi_info, control_unified)
{
	struct fi_info *h = rdm_hints(FI_TAGGED), *fi;

	h->domain_attr->control_progress = RIVET_PROGRESS_CONTROL_UNIFIED;
	match_prov_fails(g_rdm, h, FI_VERSION(1, 20), -FI_EINVAL, "1.20");
	fi = match_prov_ok(g_rdm, h, FI_VERSION(1, 21));
	cr_assert_eq(fi->domain_attr->control_progress,
		     RIVET_PROGRESS_CONTROL_UNIFIED);
	fi_freeinfo(fi);
	h->domain_attr->data_progress = FI_PROGRESS_AUTO;
	match_prov_fails(g_rdm, h, V2, -FI_ENODATA, "unified with auto");
	fi_freeinfo(h);
}

/* 2.0 removed the socket endpoint types: 4 and 5 are no types at all. */
Test(abi_info, ep_types_by_version)
{
	struct fi_info *h = rdm_hints(FI_TAGGED);

	h->ep_attr->type = (enum fi_ep_type)RIVET_EP_TYPE_MAX_V1;
	match_prov_fails(g_rdm, h, V1, -FI_ENODATA, "sock dgram, 1.17");
	match_prov_fails(g_rdm, h, V2, -FI_EINVAL, "type 5, 2.0");
	fi_freeinfo(h);
}

/* A 1.x program's bit 48 in domain_attr->caps is FI_VARIABLE_MSG. */
Test(abi_info, v1_domain_caps_bit_48)
{
	struct fi_info *h = rdm_hints(FI_TAGGED);

	h->domain_attr->caps = RIVET_CAP_V1_VARIABLE_MSG;
	match_prov_fails(g_rdm, h, V1, -FI_ENODATA, "domain variable_msg");
	fi_freeinfo(h);
}

/* Control progress unified implies manual data progress, where the
 * type's own default (MSG) is automatic. */
Test(abi_info, control_unified_means_manual)
{
	struct fi_info *h = hints_base(), *fi;

	h->domain_attr->control_progress = RIVET_PROGRESS_CONTROL_UNIFIED;
	h->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
	fi = match_ok(h, V2);
	cr_assert_eq(fi->domain_attr->data_progress, FI_PROGRESS_MANUAL);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* FI_EXACT_DIRECTED_RECV restricts the program: only when asked. */
Test(abi_info, exact_directed_only_when_asked)
{
	struct fi_info *h = rdm_hints(0), *fi;

	fi = match_prov_ok(g_rdm, h, V2);
	cr_assert_eq(fi->caps & RIVET_CAP_EXACT_DIRECTED_RECV, 0);
	cr_assert(fi->caps & RIVET_CAP_TAGGED_DIRECTED_RECV);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* libfabric 2.6's fi_rma_bw -e msg -o writedata: RMA writes with remote
 * CQ data of 4 bytes, FI_RX_CQ_DATA in the mode.  Its first fi_getinfo
 * (resolving -s) comes before it adds the mode bit: a write's data
 * consumes a posted receive (write with immediate), so without the bit
 * rivet, like libfabric's verbs, has no remote CQ data to give. */
Test(abi_info, msg_writedata_hints)
{
	struct fi_info *h = hints_base(), *fi;

	h->caps = FI_MSG | FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
	h->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
	h->domain_attr->cq_data_size = 4;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi = match_ok(h, FI_VERSION(1, 17));
	cr_assert_eq(fi->domain_attr->cq_data_size, 4);
	fi_freeinfo(fi);
	fi = match_ok(h, V2);
	cr_assert_eq(fi->domain_attr->cq_data_size, 4);
	cr_assert(fi->rx_attr->mode & FI_RX_CQ_DATA);
	fi_freeinfo(fi);
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	match_fails(h, V2, -FI_ENODATA, "writedata without FI_RX_CQ_DATA");
	fi_freeinfo(h);
}
