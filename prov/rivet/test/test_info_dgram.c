/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of rivet_info.c for FI_EP_DGRAM: the info we build (MTU-sized
 * messages, sockaddr_in6 names, FI_SOURCE, no RMA) and the hints it
 * refuses.
 */
#include <stdlib.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>

#include "info_fixture.h"

TestSuite(info_dgram, .init = info_setup, .fini = info_teardown);

static struct fi_info *dgram_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	h->ep_attr->type = FI_EP_DGRAM;
	h->caps = FI_MSG;
	h->mode = ~0ULL;
	h->domain_attr->mr_mode = FI_MR_LOCAL | MR_BASIC_MAP;
	return h;
}

static int dgram_select(const struct fi_info *h, struct fi_info **list_p)
{
	return rivet_info_select(&g_rxe, h, V_NOW, list_p);
}

Test(info_dgram, build_rxe)
{
	struct fi_info *fi = rivet_info_build(&g_rxe, FI_EP_DGRAM);
	const struct sockaddr_in6 *src;
	char buf[64];

	cr_assert_not_null(fi);
	cr_assert_eq(fi->ep_attr->type, FI_EP_DGRAM);
	cr_assert_eq(fi->ep_attr->protocol, FI_PROTO_IB_UD);
	cr_assert_eq(fi->ep_attr->max_msg_size, 1024, "the active MTU");
	cr_assert_eq(fi->caps,
		     FI_MSG | FI_SEND | FI_RECV | FI_SOURCE | COMM_CAPS);
	cr_assert_eq(fi->mode, 0, "no FI_MSG_PREFIX: the GRH is ours");
	cr_assert_eq(fi->domain_attr->cq_data_size, 4);
	cr_assert_eq(fi->domain_attr->mr_mode, FI_MR_LOCAL | FI_MR_ALLOCATED);
	cr_assert_eq(fi->tx_attr->msg_order, RIVET_ORDER_NONE);
	cr_assert_eq(fi->tx_attr->iov_limit, 16);
	cr_assert_eq(fi->rx_attr->iov_limit, 16);
	cr_assert_eq(fi->tx_attr->inject_size, 240);
	cr_assert_eq(fi->ep_attr->max_order_raw_size, 0);
	cr_assert_eq(fi->addr_format, FI_SOCKADDR_IN6);
	if (g_rxe.src_addr) {
		src = fi->src_addr;
		cr_assert_eq(fi->src_addrlen, sizeof(*src));
		cr_assert_eq(src->sin6_family, AF_INET6);
		inet_ntop(AF_INET6, &src->sin6_addr, buf, sizeof(buf));
		cr_assert_str_eq(buf, "::ffff:10.77.0.5", "the fixture's IP");
	}
	fi_freeinfo(fi);
}

Test(info_dgram, inject_at_most_the_mtu)
{
	struct rivet_params saved = g_rivet_params;
	struct fi_info *fi;

	g_rivet_params.inject_size = 4096;
	fi = rivet_info_build(&g_rxe, FI_EP_DGRAM);
	g_rivet_params = saved;
	cr_assert_not_null(fi);
	cr_assert_eq(fi->tx_attr->inject_size, 1024);
	fi_freeinfo(fi);
}

Test(info_dgram, hints_match)
{
	struct fi_info *h = dgram_hints(), *list = NULL;

	h->ep_attr->max_msg_size = 1024;
	h->domain_attr->cq_data_size = 4;
	cr_assert_eq(dgram_select(h, &list), 0);
	cr_assert_eq(list->ep_attr->type, FI_EP_DGRAM);
	cr_assert_null(list->next);
	fi_freeinfo(list);
	fi_freeinfo(h);
}

Test(info_dgram, source_on_request)
{
	struct fi_info *h = dgram_hints(), *list = NULL;

	h->caps = FI_MSG | FI_SOURCE;
	cr_assert_eq(dgram_select(h, &list), 0);
	cr_assert(list->caps & FI_SOURCE);
	cr_assert(list->rx_attr->caps & FI_SOURCE);
	fi_freeinfo(list);
	fi_freeinfo(h);
}

Test(info_dgram, hints_refused)
{
	static const uint64_t caps[] = { FI_RMA, FI_TAGGED, FI_ATOMIC,
					 FI_DIRECTED_RECV, FI_MULTI_RECV,
					 FI_SOURCE | FI_SOURCE_ERR };
	struct fi_info *h, *list = NULL;
	size_t i;

	for (i = 0; i < COUNT(caps); i++) {
		h = dgram_hints();
		h->caps |= caps[i];
		cr_assert_eq(dgram_select(h, &list), -FI_ENODATA,
			     "cap %zu", i);
		fi_freeinfo(h);
	}
	h = dgram_hints();
	h->ep_attr->max_msg_size = 1025;
	cr_assert_eq(dgram_select(h, &list), -FI_ENODATA, "over the MTU");
	fi_freeinfo(h);
	h = dgram_hints();
	h->domain_attr->cq_data_size = 8;
	cr_assert_eq(dgram_select(h, &list), -FI_ENODATA, "cq data");
	fi_freeinfo(h);
	h = dgram_hints();
	h->addr_format = FI_SOCKADDR_IN;
	cr_assert_eq(dgram_select(h, &list), -FI_ENODATA, "names are IN6");
	fi_freeinfo(h);
	h = dgram_hints();
	h->domain_attr->mr_mode = MR_BASIC_MAP;
	cr_assert_eq(dgram_select(h, &list), -FI_ENODATA, "FI_MR_LOCAL");
	fi_freeinfo(h);
}

/* FI_MSG_PREFIX: kept for applications that offer a prefix (the GRH lands
 * in it: msg_prefix_size 40), cleared for the others and with a shared
 * receive context. */
Test(info_dgram, prefix_when_offered)
{
	struct fi_info *h = dgram_hints(), *list = NULL;

	h->mode = FI_CONTEXT | FI_MSG_PREFIX;
	cr_assert_eq(dgram_select(h, &list), 0);
	cr_assert(list->mode & FI_MSG_PREFIX);
	cr_assert(list->tx_attr->mode & FI_MSG_PREFIX);
	cr_assert(list->rx_attr->mode & FI_MSG_PREFIX);
	cr_assert_eq(list->ep_attr->msg_prefix_size, 40);
	fi_freeinfo(list);
	list = NULL;
	h->mode = FI_CONTEXT;
	cr_assert_eq(dgram_select(h, &list), 0);
	cr_assert_not(list->mode & FI_MSG_PREFIX);
	cr_assert_not(list->rx_attr->mode & FI_MSG_PREFIX);
	cr_assert_eq(list->ep_attr->msg_prefix_size, 0);
	fi_freeinfo(list);
	list = NULL;
	h->mode = FI_MSG_PREFIX;
	h->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	cr_assert_eq(dgram_select(h, &list), 0);
	cr_assert_not(list->mode & FI_MSG_PREFIX);
	fi_freeinfo(list);
	fi_freeinfo(h);
}
