/* SPDX-License-Identifier: MIT */
/*
 * rivet's fi_info: what one (device, address) offers for each endpoint type
 * (rivet_info_build) and the list fi_getinfo returns (rivet_info_select),
 * as fi_getinfo(3), fi_domain(3), fi_endpoint(3) and fi_mr(3) describe;
 * how hints select and adjust it is in rivet_info_match.c.  No verbs calls.
 */
#include <stdlib.h>
#include <strings.h>

#include "rivet_info.h"

static const struct rivet_ep_type g_ep_types[] = {
	{
		.type = FI_EP_MSG,
		.protocol = RIVET_PROTO_MSG,
		.tx_caps = RIVET_MSG_TX_CAPS,
		.rx_caps = RIVET_MSG_RX_CAPS,
		/* write-with-immediate consumes a posted receive */
		.mode = FI_RX_CQ_DATA,
		.msg_order = RIVET_MSG_ORDER,
		.rma_order = RIVET_RMA_ORDER,
		.tx_comp_order = RIVET_ORDER_STRICT,
		.rx_comp_order = RIVET_ORDER_STRICT | RIVET_ORDER_DATA,
		.tx_op_flags = RIVET_TX_OP_FLAGS,
		.rx_op_flags = FI_COMPLETION | FI_MULTI_RECV,
		.iov_limit = RIVET_IOV_LIMIT_MAX,
		/* an RDMA read/write work request names one remote buffer */
		.rma_iov_limit = 1,
		.inject_size = RIVET_DEV,
		.max_msg_size = RIVET_DEV,
		.ordered_rma = true,
		/* the RC hardware moves the data; only completions need
		 * polling */
		.data_progress = FI_PROGRESS_AUTO,
		/* local buffers are always registered (verbs needs lkeys);
		 * peers address our regions by virtual address and provider
		 * keys only when RMA is on */
		.mr_mode = RIVET_MR_MODE,
		.mr_required = FI_MR_LOCAL | FI_MR_ALLOCATED,
		/* VIRT_ADDR optional: offset addressing by IOVA 0 */
		.mr_required_rma = FI_MR_PROV_KEY,
		.legacy_local_mr = true,
		.cq_data_size = sizeof(uint32_t),
		.max_err_data = RIVET_CM_DATA_SIZE,
	},
	{
		.type = FI_EP_RDM,
		.protocol = RIVET_PROTO_RDM,
		.tx_caps = RIVET_RDM_TX_CAPS,
		.rx_caps = RIVET_RDM_RX_CAPS,
		/* completions are not ordered (a rendezvous completes
		 * after later eagers) */
		.msg_order = RIVET_RDM_ORDER,
		.rma_order = RIVET_RMA_ORDER,
		.tx_comp_order = RIVET_ORDER_NONE,
		.rx_comp_order = RIVET_ORDER_NONE,
		.tx_op_flags = RIVET_RDM_TX_OP_FLAGS,
		.rx_op_flags = FI_COMPLETION | FI_MULTI_RECV,
		.iov_limit = RIVET_RDM_IOV_LIMIT,
		.rma_iov_limit = 1,
		.inject_size = RIVET_RDM_INJECT_SIZE,
		.max_msg_size = RIVET_RDM_MAX_MSG_SIZE,
		.ordered_rma = true,
		.mem_tag_format = RIVET_TAG_GENERIC,
		/* the protocol runs in fi_cq_read and fi_cntr_read */
		.data_progress = FI_PROGRESS_MANUAL,
		/*
		 * Eager data goes through rivet's own registered buffers and
		 * rivet registers large buffers itself: the application
		 * registers nothing for messages.  With RMA, peers name our
		 * regions by virtual address and the rkey, which must exist
		 * when the peer uses it.
		 */
		.mr_mode = 0,
		/* FI_MR_RMA_EVENT: regions bound to counters count once
		 * fi_mr_enable'd (if the application allows the bit) */
		.mr_mode_rma = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY |
			       FI_MR_ALLOCATED | FI_MR_RMA_EVENT,
		.mr_required_rma = FI_MR_PROV_KEY | FI_MR_ALLOCATED,
		.legacy_local_mr = false,
		/* remote CQ data travels in rivet's header; an RDMA write's
		 * rides in its 32-bit immediate */
		.cq_data_size = sizeof(uint64_t),
		.cq_data_size_rma = sizeof(uint32_t),
	},
	{
		.type = FI_EP_DGRAM,
		.protocol = FI_PROTO_IB_UD,
		.tx_caps = RIVET_DGRAM_TX_CAPS,
		.rx_caps = RIVET_DGRAM_RX_CAPS,
		/* UD may drop and reorder datagrams */
		.msg_order = RIVET_ORDER_NONE,
		/* each work queue completes in order */
		.tx_comp_order = RIVET_ORDER_STRICT,
		.rx_comp_order = RIVET_ORDER_STRICT,
		.tx_op_flags = RIVET_DGRAM_TX_OP_FLAGS,
		.rx_op_flags = FI_COMPLETION,
		.iov_limit = RIVET_DGRAM_IOV_LIMIT_INFO,
		.inject_size = RIVET_DEV,
		/* the GRH lands in rivet's own buffer: no FI_MSG_PREFIX */
		.max_msg_size = RIVET_DEV_MTU,
		.data_progress = FI_PROGRESS_AUTO,
		.mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED,
		.mr_required = FI_MR_LOCAL | FI_MR_ALLOCATED,
		.legacy_local_mr = true,
		/* a send with immediate data */
		.cq_data_size = sizeof(uint32_t),
	},
};

const struct rivet_ep_type *rivet_ep_type_lookup(enum fi_ep_type type)
{
	size_t i;

	for (i = 0; i < RIVET_COUNT(g_ep_types); i++) {
		if (g_ep_types[i].type == type)
			return &g_ep_types[i];
	}
	return NULL;
}

static size_t rivet_ep_type_size(size_t val, size_t dev)
{
	return val == RIVET_DEV ? dev : val;
}

static size_t rivet_ep_type_max_msg(const struct rivet_ep_type *t,
				    const struct rivet_info_limits *lim)
{
	size_t max = rivet_ep_type_size(t->max_msg_size, lim->max_msg_size);

	if (t->max_msg_size == RIVET_DEV_MTU)
		return lim->ud_mtu;
	/* FI_RIVET_MAX_MSG_SIZE: less, for programs that size buffers by it */
	if (g_rivet_params.max_msg_size)
		max = RIVET_MIN(max, g_rivet_params.max_msg_size);
	return max;
}

/* ---- building ---- */

/* DGRAM names are sockaddr_in6 (GID, QPN): the IP in that form */
static int rivet_info_build_addr(struct fi_info *fi, const struct sockaddr *sa,
				 enum fi_ep_type type)
{
	struct sockaddr_in6 ud;
	size_t len = rivet_addr_len(sa);

	if (type == FI_EP_DGRAM) {
		fi->addr_format = FI_SOCKADDR_IN6;
		if (!len || rivet_ud_addr_from_ip(sa, &ud))
			return 0;
		sa = (const struct sockaddr *)&ud;
		len = sizeof(ud);
	} else {
		fi->addr_format = len ? rivet_addr_format(sa) : FI_SOCKADDR;
	}
	if (!len)
		return 0;
	fi->src_addr = malloc(len);
	if (!fi->src_addr)
		return -FI_ENOMEM;
	memcpy(fi->src_addr, sa, len);
	rivet_addr_set_port(fi->src_addr, 0);
	fi->src_addrlen = len;
	return 0;
}

static int rivet_info_build_names(struct fi_info *fi,
				  const struct rivet_info_limits *lim)
{
	struct fi_fabric_attr *f = fi->fabric_attr;

	f->prov_name = strdup(RIVET_PROV_NAME);
	if (lim->fabric_name)
		f->name = strdup(lim->fabric_name);
	if (lim->domain_name)
		fi->domain_attr->name = strdup(lim->domain_name);
	if (!f->prov_name || (lim->fabric_name && !f->name) ||
	    (lim->domain_name && !fi->domain_attr->name))
		return -FI_ENOMEM;
	f->prov_version = RIVET_PROV_VERSION;
	f->api_version = RIVET_API_VERSION;
	return 0;
}

static size_t rivet_info_queue_size(size_t param, size_t max)
{
	return param ? RIVET_MIN(param, max) : max;
}

static void rivet_info_build_tx(struct fi_tx_attr *tx,
				const struct rivet_ep_type *t,
				const struct rivet_info_limits *lim)
{
	size_t inject = g_rivet_params.inject_size ?
				g_rivet_params.inject_size : lim->max_inline;

	tx->caps = t->tx_caps;
	tx->msg_order = t->msg_order;
	tx->comp_order = t->tx_comp_order;
	tx->inject_size = rivet_ep_type_size(t->inject_size, inject);
	/* a datagram is at most one MTU, injected or not */
	if (t->max_msg_size == RIVET_DEV_MTU)
		tx->inject_size = RIVET_MIN(tx->inject_size, lim->ud_mtu);
	tx->size = rivet_info_queue_size(g_rivet_params.tx_size,
					  lim->max_qp_wr);
	tx->iov_limit = RIVET_MIN(lim->max_sge, t->iov_limit);
	tx->rma_iov_limit = t->rma_iov_limit;
}

static void rivet_info_build_rx(struct fi_rx_attr *rx,
				const struct rivet_ep_type *t,
				const struct rivet_info_limits *lim)
{
	rx->caps = t->rx_caps;
	rx->mode = t->mode;
	rx->msg_order = t->msg_order;
	rx->comp_order = t->rx_comp_order;
	rx->total_buffered_recv = 0;
	rx->size = rivet_info_queue_size(g_rivet_params.rx_size,
					  lim->max_qp_wr);
	/* RDM's posted receives are a software list, not a verbs queue: MPI
	 * pre-posts thousands, and a short list would make it spin. */
	if (t->type == FI_EP_RDM)
		rx->size = RIVET_MAX(rx->size, RIVET_RDM_RX_SIZE);
	rx->iov_limit = RIVET_MIN(lim->max_sge, t->iov_limit);
}

static void rivet_info_build_ep(struct fi_ep_attr *ep,
				const struct rivet_ep_type *t,
				const struct rivet_info_limits *lim)
{
	size_t max_msg = rivet_ep_type_max_msg(t, lim);

	ep->type = t->type;
	ep->protocol = t->protocol;
	ep->protocol_version = RIVET_PROTO_VERSION;
	ep->max_msg_size = max_msg;
	ep->max_order_raw_size = t->ordered_rma ? max_msg : 0;
	/* no FI_ORDER_WAR in msg_order: a write may pass an earlier read */
	ep->max_order_war_size = 0;
	ep->max_order_waw_size = t->ordered_rma ? max_msg : 0;
	ep->mem_tag_format = t->mem_tag_format;
	ep->tx_ctx_cnt = 1;
	ep->rx_ctx_cnt = 1;
}

static void rivet_info_build_domain(struct fi_domain_attr *d,
				    const struct rivet_ep_type *t,
				    const struct rivet_info_limits *lim)
{
	d->threading = FI_THREAD_SAFE;
	d->control_progress = FI_PROGRESS_MANUAL;
	d->data_progress = t->data_progress;
	/* posts are bounded by CQ credits, RC retries receiver-not-ready */
	d->resource_mgmt = FI_RM_ENABLED;
	d->av_type = FI_AV_UNSPEC;
	/* the info we build offers every capability, RMA included */
	/* FI_MR_RMA_EVENT only for applications that ask for it */
	d->mr_mode = (t->mr_mode | t->mr_mode_rma) & ~FI_MR_RMA_EVENT;
	d->mr_key_size = sizeof(uint32_t);
	d->cq_data_size = t->cq_data_size_rma ? t->cq_data_size_rma :
						t->cq_data_size;
	d->cq_cnt = lim->max_cq;
	d->ep_cnt = lim->max_qp;
	d->tx_ctx_cnt = lim->max_qp;
	d->rx_ctx_cnt = lim->max_qp;
	/* RDM: scalable endpoints (rivet_rdm_sep.c) */
	d->max_ep_tx_ctx = t->type == FI_EP_RDM ? RIVET_SEP_MAX_CTX : 1;
	d->max_ep_rx_ctx = d->max_ep_tx_ctx;
	d->max_ep_stx_ctx = 1;
	d->max_ep_srx_ctx = 1;
	d->cntr_cnt = RIVET_CNTR_CNT;
	d->mr_iov_limit = 1;
	d->caps = RIVET_DOMAIN_CAPS;
	d->max_err_data = t->max_err_data;
	d->mr_cnt = lim->max_mr;
}

struct fi_info *rivet_info_build(const struct rivet_info_limits *lim,
				 enum fi_ep_type type)
{
	const struct rivet_ep_type *t = rivet_ep_type_lookup(type);
	struct fi_info *fi;

	if (!lim || !t)
		return NULL;
	fi = fi_allocinfo();
	if (!fi)
		return NULL;
	if (rivet_info_build_addr(fi, lim->src_addr, type) ||
	    rivet_info_build_names(fi, lim)) {
		fi_freeinfo(fi);
		return NULL;
	}
	fi->caps = rivet_ep_type_caps(t);
	fi->mode = t->mode;
	rivet_info_build_tx(fi->tx_attr, t, lim);
	rivet_info_build_rx(fi->rx_attr, t, lim);
	rivet_info_build_ep(fi->ep_attr, t, lim);
	rivet_info_build_domain(fi->domain_attr, t, lim);
	return fi;
}

/* ---- the list for one (device, address) ---- */

/* The native RDM first: MPI takes the first match, and with no ep_type in
 * the hints the RDM is what it wants. */
static const enum fi_ep_type g_select_order[] = {
	FI_EP_RDM, FI_EP_MSG, FI_EP_DGRAM
};

/* Builds and matches one type; appends the answer at *tail_p. */
static int rivet_info_select_one(const struct rivet_info_limits *lim,
				 enum fi_ep_type type,
				 const struct fi_info *hints, uint32_t version,
				 struct fi_info ***tail_p)
{
	struct fi_info *prov, *fi;
	int ret;

	prov = rivet_info_build(lim, type);
	if (!prov)
		return -FI_ENOMEM;
	ret = rivet_info_match(prov, lim, hints, version, &fi);
	fi_freeinfo(prov);
	if (ret)
		return ret;
	**tail_p = fi;
	*tail_p = &fi->next;
	return 0;
}

int rivet_info_select(const struct rivet_info_limits *lim,
		      const struct fi_info *hints, uint32_t version,
		      struct fi_info **list_p)
{
	struct fi_info *head = NULL, **tail = &head;
	int ret, err = -FI_ENODATA;
	size_t i;

	if (!lim || !list_p)
		return -FI_EINVAL;
	for (i = 0; i < RIVET_COUNT(g_select_order); i++) {
		ret = rivet_info_select_one(lim, g_select_order[i], hints,
					    version, &tail);
		if (ret == -FI_ENOMEM) {
			fi_freeinfo(head);
			return ret;
		}
		if (ret && ret != -FI_ENODATA && err == -FI_ENODATA)
			err = ret;
	}
	if (!head)
		return err;
	*list_p = head;
	return 0;
}
