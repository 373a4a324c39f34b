/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of rivet_info.c against fake device limits: the MSG fi_info we
 * build and the hints it satisfies (test_info_reject.c: those it cannot, the
 * malformed ones, legacy MR modes by API version; test_info_rdm.c: the RDM
 * info and the list fi_getinfo returns), and the helpers they share.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <criterion/criterion.h>

#include "info_fixture.h"

static struct sockaddr_in g_src4;
static struct sockaddr_in6 g_src6;

/* rxe-like */
struct rivet_info_limits g_rxe = {
	.fabric_name = "10.77.0.0/24",
	.domain_name = "rxe0",
	.max_qp_wr = 16384,
	.max_sge = 32,
	.max_inline = 240,
	.max_msg_size = 1u << 30,
	.max_cqe = 32767,
	.max_cq = 16384,
	.max_qp = 65536,
	.max_mr = 262144,
	.max_mr_size = 1u << 30,
	.ud_mtu = 1024,
};

/* a small device: queues and SGEs below our defaults, no inline data */
struct rivet_info_limits g_tiny = {
	.fabric_name = "fe80::/64",
	.domain_name = "tiny0",
	.max_qp_wr = 64,
	.max_sge = 2,
	.max_inline = 0,
	.max_msg_size = 1u << 20,
	.max_cqe = 128,
	.max_cq = 4,
	.max_qp = 8,
	.max_mr = 16,
	.max_mr_size = 1u << 20,
};

struct fi_info *g_prov, *g_rdm;

void info_setup(void)
{
	g_src4.sin_family = AF_INET;
	g_src4.sin_port = htons(1234);
	inet_pton(AF_INET, "10.77.0.5", &g_src4.sin_addr);
	g_src6.sin6_family = AF_INET6;
	g_src6.sin6_port = htons(99);
	inet_pton(AF_INET6, "fe80::5", &g_src6.sin6_addr);
	g_rxe.src_addr = (struct sockaddr *)&g_src4;
	g_tiny.src_addr = (struct sockaddr *)&g_src6;
	g_prov = rivet_info_build(&g_rxe, FI_EP_MSG);
	g_rdm = rivet_info_build(&g_rxe, FI_EP_RDM);
	cr_assert_not_null(g_prov);
	cr_assert_not_null(g_rdm);
}

void info_teardown(void)
{
	fi_freeinfo(g_prov);
	fi_freeinfo(g_rdm);
}

TestSuite(info, .init = info_setup, .fini = info_teardown);

struct fi_info *hints_base(void)
{
	struct fi_info *h = fi_allocinfo();

	cr_assert_not_null(h);
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG | FI_RMA;
	h->mode = FI_CONTEXT | FI_RX_CQ_DATA;
	h->domain_attr->mr_mode = MR_ALL;
	return h;
}

struct fi_info *hints_rdm(void)
{
	struct fi_info *h = fi_allocinfo();

	cr_assert_not_null(h);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_TAGGED;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = MR_ALL;
	return h;
}

/* Properties every successful answer has: prov's type, a subset of its
 * capabilities, the transmit ones on tx and the receive ones on rx. */
static void check_invariants(const struct fi_info *fi,
			     const struct fi_info *prov, uint32_t version)
{
	cr_assert_null(fi->fabric_attr->prov_name, "the core sets prov_name");
	cr_assert_eq(fi->fabric_attr->api_version,
		     rivet_api_of_request(version));
	cr_assert_eq(fi->ep_attr->type, prov->ep_attr->type);
	cr_assert_eq(fi->caps & ~prov->caps, 0);
	cr_assert_eq(fi->tx_attr->caps & ~fi->caps, 0, "tx caps in caps");
	cr_assert_eq(fi->rx_attr->caps & ~fi->caps, 0, "rx caps in caps");
	cr_assert_eq(fi->tx_attr->caps & ~prov->tx_attr->caps, 0);
	cr_assert_eq(fi->rx_attr->caps & ~prov->rx_attr->caps, 0);
	cr_assert_eq(fi->tx_attr->caps & (FI_RECV | FI_REMOTE_READ |
					  FI_REMOTE_WRITE), 0);
	cr_assert_eq(fi->rx_attr->caps & (FI_SEND | FI_READ | FI_WRITE), 0);
	cr_assert_eq(fi->caps & COMM_CAPS, COMM_CAPS);
	cr_assert_eq(fi->next, NULL);
}

struct fi_info *match_prov_ok(const struct fi_info *prov,
			      const struct fi_info *h, uint32_t version)
{
	struct fi_info *fi = NULL;
	int ret = rivet_info_match(prov, &g_rxe, h, version, &fi);

	cr_assert_eq(ret, 0, "match: %d (%s)", ret, fi_strerror(-ret));
	cr_assert_not_null(fi);
	check_invariants(fi, prov, version);
	return fi;
}

void match_prov_fails(const struct fi_info *prov, const struct fi_info *h,
		      uint32_t version, int want, const char *name)
{
	struct fi_info *sentinel = (struct fi_info *)0x1, *fi = sentinel;
	int ret = rivet_info_match(prov, &g_rxe, h, version, &fi);

	cr_assert_eq(ret, want, "%s: got %d, want %d", name, ret, want);
	cr_assert_eq(fi, sentinel, "%s: output set on failure", name);
}

struct fi_info *match_ok(const struct fi_info *h, uint32_t version)
{
	return match_prov_ok(g_prov, h, version);
}

void match_fails(const struct fi_info *h, uint32_t version, int want,
		 const char *name)
{
	match_prov_fails(g_prov, h, version, want, name);
}

void run_cases(const struct fi_info *prov, struct fi_info *(*base)(void),
	       const struct hint_case *cases, size_t n, int want)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct fi_info *h = base();

		cases[i].mutate(h);
		match_prov_fails(prov, h, V_NOW, want, cases[i].name);
		fi_freeinfo(h);
	}
}

/* ---- build ---- */

Test(info, build_rxe)
{
	const struct fi_info *fi = g_prov;
	const struct sockaddr_in *src = fi->src_addr;

	cr_assert_eq(fi->caps, MSG_BUILT_CAPS);
	cr_assert_eq(fi->mode, FI_RX_CQ_DATA);
	cr_assert_eq(fi->rx_attr->mode, FI_RX_CQ_DATA);
	cr_assert_eq(fi->addr_format, FI_SOCKADDR_IN);
	cr_assert_eq(fi->src_addrlen, sizeof(*src));
	cr_assert_eq(src->sin_addr.s_addr, g_src4.sin_addr.s_addr);
	cr_assert_eq(src->sin_port, 0, "port 0");
	cr_assert_eq(fi->tx_attr->caps, FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND |
					FI_READ | FI_WRITE | FI_FENCE);
	cr_assert_eq(fi->rx_attr->caps, FI_MSG | FI_RMA | FI_ATOMIC | FI_RECV |
					FI_REMOTE_READ | FI_REMOTE_WRITE |
					FI_MULTI_RECV);
	cr_assert_eq(fi->tx_attr->msg_order, MSG_ORDER);
	cr_assert_eq(fi->rx_attr->msg_order, MSG_ORDER);
	cr_assert_eq(fi->tx_attr->comp_order, RIVET_ORDER_STRICT);
	cr_assert_eq(fi->rx_attr->comp_order, RIVET_ORDER_STRICT | RIVET_ORDER_DATA);
	cr_assert_eq(fi->tx_attr->inject_size, 240);
	cr_assert_eq(fi->tx_attr->size, 384);
	cr_assert_eq(fi->rx_attr->size, 384);
	cr_assert_eq(fi->tx_attr->iov_limit, 32);
	cr_assert_eq(fi->tx_attr->rma_iov_limit, 1);
	cr_assert_eq(fi->rx_attr->iov_limit, 32);
	cr_assert_eq(fi->rx_attr->total_buffered_recv, 0);
}

Test(info, build_rxe_ep_domain_fabric)
{
	const struct fi_info *fi = g_prov;
	const struct fi_domain_attr *d = fi->domain_attr;

	cr_assert_eq(fi->ep_attr->type, FI_EP_MSG);
	cr_assert_eq(fi->ep_attr->protocol, RIVET_PROTO_MSG);
	cr_assert_eq(fi->ep_attr->protocol_version, RIVET_PROTO_VERSION);
	cr_assert_eq(fi->ep_attr->max_msg_size, 1u << 30);
	cr_assert_eq(fi->ep_attr->max_order_raw_size, 1u << 30);
	cr_assert_eq(fi->ep_attr->max_order_war_size, 0);
	cr_assert_eq(fi->ep_attr->max_order_waw_size, 1u << 30);
	cr_assert_eq(fi->ep_attr->tx_ctx_cnt, 1);
	cr_assert_eq(fi->ep_attr->rx_ctx_cnt, 1);
	cr_assert_str_eq(d->name, "rxe0");
	cr_assert_eq(d->threading, FI_THREAD_SAFE);
	cr_assert_eq(d->control_progress, FI_PROGRESS_MANUAL);
	cr_assert_eq(d->data_progress, FI_PROGRESS_AUTO);
	cr_assert_eq(d->resource_mgmt, FI_RM_ENABLED);
	cr_assert_eq(d->av_type, FI_AV_UNSPEC);
	cr_assert_eq(d->mr_mode, MR_ALL);
	cr_assert_eq(d->mr_key_size, 4);
	cr_assert_eq(d->cq_data_size, 4);
	cr_assert_eq(d->cq_cnt, 16384);
	cr_assert_eq(d->ep_cnt, 65536);
	cr_assert_eq(d->tx_ctx_cnt, 65536);
	cr_assert_eq(d->max_ep_tx_ctx, 1);
	cr_assert_eq(d->max_ep_srx_ctx, 1);
	cr_assert_eq(d->mr_iov_limit, 1);
	cr_assert_eq(d->mr_cnt, 262144);
	cr_assert_eq(d->caps, COMM_CAPS);
	cr_assert_eq(d->max_err_data, RIVET_CM_DATA_SIZE);
	cr_assert_gt(d->cntr_cnt, 0);
	cr_assert_str_eq(fi->fabric_attr->name, "10.77.0.0/24");
	cr_assert_str_eq(fi->fabric_attr->prov_name, "rivet");
	cr_assert_eq(fi->fabric_attr->prov_version, RIVET_PROV_VERSION);
}

Test(info, build_tiny_ipv6)
{
	struct fi_info *fi = rivet_info_build(&g_tiny, FI_EP_MSG);
	const struct sockaddr_in6 *src;

	cr_assert_not_null(fi);
	src = fi->src_addr;
	cr_assert_eq(fi->addr_format, FI_SOCKADDR_IN6);
	cr_assert_eq(fi->src_addrlen, sizeof(*src));
	cr_assert_eq(src->sin6_port, 0);
	cr_assert_eq(fi->tx_attr->size, 64, "capped by max_qp_wr");
	cr_assert_eq(fi->rx_attr->size, 64);
	cr_assert_eq(fi->tx_attr->iov_limit, 2);
	cr_assert_eq(fi->tx_attr->inject_size, 0);
	cr_assert_eq(fi->domain_attr->cq_cnt, 4);
	cr_assert_str_eq(fi->domain_attr->name, "tiny0");
	cr_assert_str_eq(fi->fabric_attr->name, "fe80::/64");
	fi_freeinfo(fi);
}

Test(info, build_params_and_caps)
{
	struct rivet_info_limits lim = g_rxe;
	struct rivet_params saved = g_rivet_params;
	struct fi_info *fi;

	lim.max_sge = 64;
	lim.src_addr = NULL;
	g_rivet_params.inject_size = 512;
	g_rivet_params.tx_size = 0;
	fi = rivet_info_build(&lim, FI_EP_MSG);
	g_rivet_params = saved;
	cr_assert_not_null(fi);
	cr_assert_eq(fi->tx_attr->iov_limit, RIVET_IOV_LIMIT_MAX);
	cr_assert_eq(fi->tx_attr->inject_size, 512, "parameter wins");
	cr_assert_eq(fi->tx_attr->size, 16384, "no parameter: device max");
	cr_assert_eq(fi->addr_format, FI_SOCKADDR);
	cr_assert_null(fi->src_addr);
	fi_freeinfo(fi);
	cr_assert_null(rivet_info_build(NULL, FI_EP_MSG));
}

/* ---- hints we satisfy ---- */

Test(info, null_hints)
{
	struct fi_info *fi = match_ok(NULL, V_NOW);

	cr_assert_eq(fi->caps, MSG_BUILT_CAPS);
	cr_assert_eq(fi->mode, FI_RX_CQ_DATA);
	cr_assert_eq(fi->domain_attr->mr_mode, MR_ALL);
	cr_assert_eq(fi->domain_attr->cq_data_size, 4);
	cr_assert_str_eq(fi->domain_attr->name, "rxe0");
	cr_assert_eq(fi->src_addrlen, sizeof(struct sockaddr_in));
	fi_freeinfo(fi);
}

Test(info, null_hints_v1_4)
{
	struct fi_info *fi = match_ok(NULL, V(1, 4));

	cr_assert_eq(fi->domain_attr->mr_mode, RIVET_MR_BASIC);
	cr_assert_eq(fi->mode, FI_RX_CQ_DATA | RIVET_MODE_LOCAL_MR);
	fi_freeinfo(fi);
}

Test(info, msg_only)
{
	struct fi_info *h = hints_base(), *fi;

	h->caps = FI_MSG;
	h->mode = FI_CONTEXT;
	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->caps, FI_MSG | FI_SEND | FI_RECV | COMM_CAPS);
	cr_assert_eq(fi->tx_attr->caps, FI_MSG | FI_SEND);
	cr_assert_eq(fi->rx_attr->caps, FI_MSG | FI_RECV);
	cr_assert_eq(fi->mode, 0, "no RMA write: FI_RX_CQ_DATA not needed");
	cr_assert_eq(fi->rx_attr->mode, 0);
	cr_assert_eq(fi->domain_attr->cq_data_size, 4, "senddata still works");
	cr_assert_eq(fi->domain_attr->mr_mode, MR_ALL);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* MSG multi-receive buffers (fi_msg(3)): asked for in rx op_flags */
Test(info, msg_multi_recv_op_flags)
{
	struct fi_info *h = hints_base(), *fi;

	h->caps = FI_MSG | FI_MULTI_RECV;
	h->rx_attr->op_flags = FI_MULTI_RECV | FI_COMPLETION;
	fi = match_ok(h, V_NOW);
	cr_assert(fi->caps & FI_MULTI_RECV);
	cr_assert_eq(fi->rx_attr->op_flags, FI_MULTI_RECV | FI_COMPLETION);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

Test(info, msg_only_needs_no_rma_mr_bits)
{
	struct fi_info *h = hints_base(), *fi;

	h->caps = FI_MSG;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED;
	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->domain_attr->mr_mode,
		     FI_MR_LOCAL | FI_MR_ALLOCATED);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

Test(info, rma_with_rx_cq_data)
{
	struct fi_info *h = hints_base(), *fi;

	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->caps, ALL_CAPS & ~FI_ATOMIC);
	cr_assert_eq(fi->mode, FI_RX_CQ_DATA, "FI_CONTEXT cleared");
	cr_assert_eq(fi->rx_attr->mode, FI_RX_CQ_DATA);
	cr_assert_eq(fi->tx_attr->mode, 0);
	cr_assert_eq(fi->domain_attr->cq_data_size, 4);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

Test(info, rma_without_rx_cq_data)
{
	struct fi_info *h = hints_base(), *fi;

	h->mode = 0;	/* supports no modes at all */
	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->mode, 0);
	cr_assert_eq(fi->rx_attr->mode, 0);
	cr_assert_eq(fi->domain_attr->cq_data_size, 0, "no remote CQ data");
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

Test(info, rx_attr_mode_overrides)
{
	struct fi_info *h = hints_base(), *fi;

	h->mode = FI_CONTEXT;
	h->rx_attr->mode = FI_RX_CQ_DATA;
	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->mode, FI_RX_CQ_DATA);
	cr_assert_eq(fi->domain_attr->cq_data_size, 4);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

Test(info, read_only_rma_needs_no_rx_cq_data)
{
	struct fi_info *h = hints_base(), *fi;

	h->caps = FI_MSG | FI_RMA | FI_READ | FI_REMOTE_READ;
	h->mode = 0;
	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->caps, FI_MSG | FI_SEND | FI_RECV | FI_RMA | FI_READ |
				       FI_REMOTE_READ | COMM_CAPS);
	cr_assert_eq(fi->tx_attr->caps, FI_MSG | FI_SEND | FI_RMA | FI_READ);
	cr_assert_eq(fi->rx_attr->caps, FI_MSG | FI_RECV | FI_RMA |
					       FI_REMOTE_READ);
	cr_assert_eq(fi->domain_attr->cq_data_size, 4);
	cr_assert_eq(fi->mode, 0);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

static const struct {
	uint64_t caps, want, tx, rx;
} g_caps[] = {
	{ 0, ALL_CAPS | FI_MULTI_RECV,
	  FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE,
	  FI_MSG | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ |
		  FI_REMOTE_WRITE | FI_MULTI_RECV },
	{ FI_RMA, FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ |
			  FI_REMOTE_WRITE | COMM_CAPS,
	  FI_RMA | FI_READ | FI_WRITE,
	  FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE },
	{ FI_MSG | FI_SEND, FI_MSG | FI_SEND | COMM_CAPS, FI_MSG | FI_SEND,
	  FI_MSG },
	{ FI_MSG | FI_RECV | FI_LOCAL_COMM, FI_MSG | FI_RECV | COMM_CAPS,
	  FI_MSG, FI_MSG | FI_RECV },
	{ FI_MSG | FI_RMA | FI_WRITE | FI_RECV,
	  FI_MSG | FI_RMA | FI_WRITE | FI_RECV | COMM_CAPS,
	  FI_MSG | FI_RMA | FI_WRITE, FI_MSG | FI_RMA | FI_RECV },
	{ FI_REMOTE_COMM, COMM_CAPS, 0, 0 },
	{ FI_MSG | FI_MULTI_RECV,
	  FI_MSG | FI_MULTI_RECV | FI_SEND | FI_RECV | COMM_CAPS,
	  FI_MSG | FI_SEND, FI_MSG | FI_MULTI_RECV | FI_RECV },
};

Test(info, caps_selection)
{
	size_t i;

	for (i = 0; i < COUNT(g_caps); i++) {
		struct fi_info *h = hints_base(), *fi;

		h->caps = g_caps[i].caps;
		fi = match_ok(h, V_NOW);
		cr_assert_eq(fi->caps, g_caps[i].want, "row %zu", i);
		cr_assert_eq(fi->tx_attr->caps, g_caps[i].tx, "row %zu", i);
		cr_assert_eq(fi->rx_attr->caps, g_caps[i].rx, "row %zu", i);
		cr_assert_eq(fi->domain_attr->caps, COMM_CAPS);
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
}

Test(info, attr_caps_hints)
{
	struct fi_info *h = hints_base(), *fi;

	h->caps = 0;
	h->tx_attr->caps = FI_RMA;
	h->rx_attr->caps = FI_MSG | FI_RECV;
	h->domain_attr->caps = FI_LOCAL_COMM;
	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->tx_attr->caps, FI_RMA | FI_READ | FI_WRITE);
	cr_assert_eq(fi->rx_attr->caps, FI_MSG | FI_RECV);
	cr_assert_eq(fi->domain_attr->caps, COMM_CAPS);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* fabtests getinfo_test "caps regression": all our caps, old modes only. */
Test(info, caps_regression)
{
	struct fi_info *h = hints_base(), *fi;

	h->caps = g_prov->caps;
	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = FI_MR_LOCAL | MR_BASIC_MAP;
	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->caps, MSG_BUILT_CAPS);
	cr_assert_eq(fi->domain_attr->cq_data_size, 0);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* fi_info(1) asks with every mode bit: mode ~0 and mr_mode
 * ~(RIVET_MR_BASIC | RIVET_MR_SCALABLE). */
Test(info, every_mode_supported)
{
	struct fi_info *h = hints_base(), *fi;

	h->mode = ~0ULL;
	h->domain_attr->mode = ~0ULL;
	h->domain_attr->mr_mode = ~(RIVET_MR_BASIC | RIVET_MR_SCALABLE);
	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->mode, FI_RX_CQ_DATA);
	cr_assert_eq(fi->domain_attr->mr_mode, MR_ALL);
	cr_assert_eq(fi->domain_attr->mode, 0);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

Test(info, mr_mode_extra_bits_cleared)
{
	struct fi_info *h = hints_base(), *fi;

	h->domain_attr->mr_mode = MR_ALL | FI_MR_RAW | FI_MR_MMU_NOTIFY |
				  FI_MR_RMA_EVENT | FI_MR_ENDPOINT |
				  FI_MR_HMEM | FI_MR_COLLECTIVE;
	h->mode |= RIVET_MODE_LOCAL_MR;
	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->domain_attr->mr_mode, MR_ALL);
	cr_assert_eq(fi->mode & RIVET_MODE_LOCAL_MR, 0, "FI_MR_LOCAL replaces it");
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

static const char *const g_good_prov_names[] = {
	"rivet", "RIVET", "rivet;^ofi_rxm", "^ofi_rxm", "^verbs;^tcp",
	"rivet;", ";rivet",
};

Test(info, names_accepted)
{
	size_t i;

	for (i = 0; i < COUNT(g_good_prov_names); i++) {
		struct fi_info *h = hints_base(), *fi;

		h->fabric_attr->prov_name = strdup(g_good_prov_names[i]);
		h->fabric_attr->name = strdup("10.77.0.0/24");
		h->domain_attr->name = strdup("RXE0");
		fi = match_ok(h, V_NOW);
		cr_assert_str_eq(fi->fabric_attr->name, "10.77.0.0/24");
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
}

Test(info, addr_formats_accepted)
{
	uint32_t fmts[] = { FI_FORMAT_UNSPEC, FI_SOCKADDR, FI_SOCKADDR_IN };
	size_t i;

	for (i = 0; i < COUNT(fmts); i++) {
		struct fi_info *h = hints_base(), *fi;

		h->addr_format = fmts[i];
		fi = match_ok(h, V_NOW);
		cr_assert_eq(fi->addr_format, FI_SOCKADDR_IN);
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
}

Test(info, domain_enums_reported)
{
	enum fi_threading th[] = { FI_THREAD_SAFE, FI_THREAD_FID,
				   FI_THREAD_DOMAIN, FI_THREAD_COMPLETION,
				   FI_THREAD_ENDPOINT };
	size_t i;

	for (i = 0; i < COUNT(th); i++) {
		struct fi_info *h = hints_base(), *fi;

		h->domain_attr->threading = th[i];
		h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
		h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
		h->domain_attr->resource_mgmt = FI_RM_DISABLED;
		h->domain_attr->av_type = FI_AV_TABLE;
		h->domain_attr->tclass = FI_TC_BEST_EFFORT;
		fi = match_ok(h, V_NOW);
		cr_assert_eq(fi->domain_attr->threading, th[i]);
		cr_assert_eq(fi->domain_attr->control_progress,
			     FI_PROGRESS_MANUAL);
		cr_assert_eq(fi->domain_attr->data_progress,
			     FI_PROGRESS_MANUAL);
		cr_assert_eq(fi->domain_attr->resource_mgmt, FI_RM_DISABLED);
		cr_assert_eq(fi->domain_attr->av_type, FI_AV_TABLE);
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
}

Test(info, domain_unspec_gets_defaults)
{
	struct fi_info *h = hints_base(), *fi;

	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->domain_attr->threading, FI_THREAD_SAFE);
	cr_assert_eq(fi->domain_attr->control_progress, FI_PROGRESS_MANUAL);
	cr_assert_eq(fi->domain_attr->data_progress, FI_PROGRESS_AUTO);
	cr_assert_eq(fi->domain_attr->resource_mgmt, FI_RM_ENABLED);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

Test(info, limits_at_the_maximum)
{
	struct fi_info *h = hints_base(), *fi;
	struct fi_domain_attr *d = h->domain_attr;

	d->mr_key_size = 4;
	d->cq_data_size = 4;
	d->cq_cnt = 16384;
	d->ep_cnt = 65536;
	d->tx_ctx_cnt = 65536;
	d->rx_ctx_cnt = 65536;
	d->max_ep_tx_ctx = 1;
	d->max_ep_rx_ctx = 1;
	d->mr_iov_limit = 1;
	d->mr_cnt = 262144;
	d->max_err_data = RIVET_CM_DATA_SIZE;
	h->ep_attr->max_msg_size = 1u << 30;
	h->ep_attr->max_order_raw_size = 1u << 30;
	h->ep_attr->max_order_waw_size = 1u << 30;
	h->ep_attr->tx_ctx_cnt = 1;
	h->ep_attr->rx_ctx_cnt = 1;
	h->ep_attr->protocol = RIVET_PROTO_MSG;
	h->ep_attr->protocol_version = RIVET_PROTO_VERSION;
	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->domain_attr->cq_cnt, 16384);
	cr_assert_eq(fi->ep_attr->max_msg_size, 1u << 30);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

Test(info, sizes_follow_hints)
{
	size_t sizes[] = { 1, 64, 384, 1000, 16384 };
	size_t i;

	for (i = 0; i < COUNT(sizes); i++) {
		struct fi_info *h = hints_base(), *fi;

		h->tx_attr->size = sizes[i];
		h->rx_attr->size = sizes[i];
		h->tx_attr->iov_limit = 4;
		h->rx_attr->iov_limit = 3;
		h->tx_attr->rma_iov_limit = 1;
		h->tx_attr->inject_size = 16;
		fi = match_ok(h, V_NOW);
		cr_assert_eq(fi->tx_attr->size, sizes[i]);
		cr_assert_eq(fi->rx_attr->size, sizes[i]);
		cr_assert_eq(fi->tx_attr->iov_limit, 4);
		cr_assert_eq(fi->rx_attr->iov_limit, 3);
		cr_assert_eq(fi->tx_attr->inject_size, 240, "ours reported");
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
}

Test(info, orders_and_op_flags)
{
	struct fi_info *h = hints_base(), *fi;

	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RMA_RAW;
	h->rx_attr->msg_order = FI_ORDER_RMA_WAW | FI_ORDER_RMA_RAR;
	h->tx_attr->comp_order = RIVET_ORDER_STRICT;
	h->rx_attr->comp_order = RIVET_ORDER_STRICT | RIVET_ORDER_DATA;
	h->tx_attr->op_flags = FI_INJECT | FI_DELIVERY_COMPLETE |
			       FI_COMPLETION;
	h->rx_attr->op_flags = FI_COMPLETION;
	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->tx_attr->msg_order, MSG_ORDER | FI_ORDER_RMA_RAW);
	cr_assert_eq(fi->rx_attr->msg_order,
		     MSG_ORDER | FI_ORDER_RMA_WAW | FI_ORDER_RMA_RAR);
	cr_assert_eq(fi->tx_attr->op_flags, FI_INJECT | FI_DELIVERY_COMPLETE |
						    FI_COMPLETION);
	cr_assert_eq(fi->rx_attr->op_flags, FI_COMPLETION);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* Hand-made hints without sub-structures: those parts are unconstrained. */
Test(info, no_sub_attrs)
{
	struct fi_info bare = { .caps = FI_MSG, .mode = FI_RX_CQ_DATA };
	struct fi_info *fi;

	fi = match_ok(&bare, V_NOW);
	cr_assert_eq(fi->domain_attr->mr_mode, MR_ALL);
	cr_assert_eq(fi->tx_attr->size, 384);
	fi_freeinfo(fi);
	bare.caps = 0;
	bare.mode = RIVET_MODE_LOCAL_MR;
	fi = match_ok(&bare, V(1, 4));
	cr_assert_eq(fi->domain_attr->mr_mode, RIVET_MR_BASIC);
	cr_assert_eq(fi->mode, RIVET_MODE_LOCAL_MR);
	cr_assert_eq(fi->domain_attr->cq_data_size, 0);
	fi_freeinfo(fi);
}

Test(info, bad_arguments)
{
	struct fi_info *fi = (struct fi_info *)0x1;

	cr_assert_eq(rivet_info_match(NULL, &g_rxe, NULL, V_NOW, &fi),
		     -FI_EINVAL);
	cr_assert_eq(rivet_info_match(g_prov, NULL, NULL, V_NOW, &fi),
		     -FI_EINVAL);
	cr_assert_eq(rivet_info_match(g_prov, &g_rxe, NULL, V_NOW, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi, (struct fi_info *)0x1);
}

/* MSG RMA without FI_MR_VIRT_ADDR: offset addressing, reported so. */
Test(info, msg_rma_offset_addressing)
{
	struct fi_info *h = hints_base(), *fi;

	h->caps |= FI_RMA;
	h->domain_attr->mr_mode = MR_ALL & ~FI_MR_VIRT_ADDR;
	fi = match_prov_ok(g_prov, h, V_NOW);
	cr_assert(fi->caps & FI_RMA);
	cr_assert_eq(fi->domain_attr->mr_mode, MR_ALL & ~FI_MR_VIRT_ADDR);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* Every traffic class fi_endpoint(3) defines is accepted, in the domain
 * and in tx_attr, and comes back as asked (issue 17: the fabtests
 * benchmarks ask for FI_TC_LOW_LATENCY and FI_TC_BULK_DATA). */
Test(info, tclass_every_defined_class)
{
	uint32_t tc[] = { FI_TC_UNSPEC, FI_TC_BEST_EFFORT, FI_TC_LABEL,
			  FI_TC_LOW_LATENCY, FI_TC_DEDICATED_ACCESS,
			  FI_TC_BULK_DATA, FI_TC_SCAVENGER,
			  FI_TC_NETWORK_CTRL, FI_TC_DSCP, fi_tc_dscp_set(46),
			  fi_tc_dscp_set(63) };
	size_t i;

	for (i = 0; i < COUNT(tc); i++) {
		struct fi_info *h = hints_base(), *fi;

		h->domain_attr->tclass = tc[i];
		fi = match_ok(h, V_NOW);
		cr_assert_eq(fi->domain_attr->tclass, tc[i], "0x%x", tc[i]);
		fi_freeinfo(fi);
		h->domain_attr->tclass = FI_TC_UNSPEC;
		h->tx_attr->tclass = tc[i];
		fi = match_ok(h, V_NOW);
		cr_assert_eq(fi->tx_attr->tclass, tc[i], "0x%x", tc[i]);
		cr_assert_eq(rivet_info_tclass(fi), tc[i]);
		fi_freeinfo(fi);
		fi_freeinfo(h);
	}
}

/* The TOS byte each class becomes (man/fi_rivet.7.md). */
Test(info, tclass_tos_mapping)
{
	static const struct { uint32_t tc; int tos; } map[] = {
		{ FI_TC_UNSPEC, -1 },
		{ FI_TC_BEST_EFFORT, 0 },
		{ FI_TC_LOW_LATENCY, 46 << 2 },
		{ FI_TC_DEDICATED_ACCESS, 34 << 2 },
		{ FI_TC_BULK_DATA, 10 << 2 },
		{ FI_TC_SCAVENGER, 8 << 2 },
		{ FI_TC_NETWORK_CTRL, 48 << 2 },
		{ FI_TC_DSCP, 0 },
		{ FI_TC_DSCP | 26, 26 << 2 },
		{ FI_TC_DSCP | 63, 63 << 2 },
	};
	size_t i;
	int tos;

	for (i = 0; i < COUNT(map); i++) {
		tos = 1000;
		cr_assert_eq(rivet_tclass_tos(map[i].tc, &tos), 0);
		cr_assert_eq(tos, map[i].tos, "class 0x%x: tos %d", map[i].tc,
			     tos);
	}
	cr_assert_eq(rivet_tclass_tos(FI_TC_DSCP | 64, &tos), -FI_ENODATA);
	cr_assert_eq(rivet_tclass_tos(FI_TC_NETWORK_CTRL + 1, &tos),
		     -FI_ENODATA);
	cr_assert_eq(rivet_tclass_tos(0x1ff, &tos), -FI_ENODATA);
	cr_assert_eq(rivet_tclass_tos(1, &tos), -FI_ENODATA);
}

/* fi_getinfo(3): a passive endpoint in hints->handle is copied to
 * info->handle (fi_msg_sockets: an active endpoint then takes the pep's
 * address); other handles are not ours to pass on. */
Test(info, hints_handle_pep_copied)
{
	struct fid pep = { .fclass = FI_CLASS_PEP };
	struct fid other = { .fclass = FI_CLASS_CONNREQ };
	struct fi_info *h = hints_base(), *fi;

	h->handle = &pep;
	fi = match_ok(h, V_NOW);
	cr_assert_eq(fi->handle, &pep);
	fi_freeinfo(fi);
	h->handle = &other;
	fi = match_ok(h, V_NOW);
	cr_assert_null(fi->handle);
	fi_freeinfo(fi);
	h->handle = NULL;
	fi_freeinfo(h);
}
