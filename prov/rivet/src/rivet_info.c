/* SPDX-License-Identifier: MIT */
/*
 * rivet's fi_info: what one (device, address) offers for each endpoint type
 * (rivet_info_build), how hints select and adjust it (rivet_info_match), and
 * the list fi_getinfo returns (rivet_info_select), as fi_getinfo(3),
 * fi_domain(3), fi_endpoint(3) and fi_mr(3) describe.  No verbs calls here.
 */
#include <stdlib.h>
#include <strings.h>

#include "rivet.h"

#define RIVET_MSG_MODS (FI_SEND | FI_RECV)
#define RIVET_RMA_MODS (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define RIVET_DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)
/* FI_EP_MSG: sends and RMA straight onto one RC QP */
#define RIVET_MSG_TX_CAPS \
	(FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE | FI_FENCE)
#define RIVET_MSG_RX_CAPS \
	(FI_MSG | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE)
/* FI_EP_RDM: rivet's own protocol, RMA straight onto RDMA READ/WRITE,
 * atomics computed by the target (rivet_rdm_atomic.c) */
#define RIVET_RDM_TX_CAPS \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RMA | FI_ATOMIC | FI_READ | \
	 FI_WRITE | FI_FENCE)
#define RIVET_RDM_RX_CAPS \
	(FI_MSG | FI_TAGGED | FI_RECV | FI_SOURCE | FI_DIRECTED_RECV | \
	 FI_MULTI_RECV | FI_RMA | FI_ATOMIC | FI_REMOTE_READ | \
	 FI_REMOTE_WRITE | FI_RMA_EVENT)
/* Capabilities that cost something when on: only given when asked for */
#define RIVET_ASKED_CAPS (FI_RMA_EVENT | FI_FENCE)
/* What needs remote keys: RMA and atomics alike */
#define RIVET_REMOTE_CAPS (FI_RMA | FI_ATOMIC)

/* Every capability libfabric 1.17 defines, and the provider-specific bits;
 * anything else in a caps field is not a capability at all. */
#define RIVET_KNOWN_CAPS \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST | \
	 FI_COLLECTIVE | FI_READ | FI_WRITE | FI_RECV | FI_SEND | \
	 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV | FI_TRIGGER | \
	 FI_FENCE | FI_AV_USER_ID | FI_PEER | FI_XPU_TRIGGER | FI_HMEM | \
	 FI_VARIABLE_MSG | FI_RMA_PMEM | FI_SOURCE_ERR | FI_LOCAL_COMM | \
	 FI_REMOTE_COMM | FI_SHARED_AV | FI_RMA_EVENT | FI_SOURCE | \
	 FI_NAMED_RX_CTX | FI_DIRECTED_RECV | (0xfULL << 60))

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
		.tx_comp_order = FI_ORDER_STRICT,
		.rx_comp_order = FI_ORDER_STRICT | FI_ORDER_DATA,
		.tx_op_flags = RIVET_TX_OP_FLAGS,
		.rx_op_flags = FI_COMPLETION,
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
		.tx_comp_order = FI_ORDER_NONE,
		.rx_comp_order = FI_ORDER_NONE,
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
};

static const struct rivet_ep_type *rivet_ep_type_lookup(enum fi_ep_type type)
{
	size_t i;

	for (i = 0; i < RIVET_COUNT(g_ep_types); i++) {
		if (g_ep_types[i].type == type)
			return &g_ep_types[i];
	}
	return NULL;
}

static uint64_t rivet_ep_type_caps(const struct rivet_ep_type *t)
{
	return t->tx_caps | t->rx_caps | RIVET_DOMAIN_CAPS;
}

static size_t rivet_ep_type_size(size_t val, size_t dev)
{
	return val == RIVET_DEV ? dev : val;
}

/* ---- building ---- */

static int rivet_info_build_addr(struct fi_info *fi, const struct sockaddr *sa)
{
	size_t len = rivet_addr_len(sa);

	fi->addr_format = len ? rivet_addr_format(sa) : FI_SOCKADDR;
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
	f->api_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
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
	size_t max_msg = rivet_ep_type_size(t->max_msg_size,
					    lim->max_msg_size);

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
	d->max_ep_tx_ctx = 1;
	d->max_ep_rx_ctx = 1;
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
	if (rivet_info_build_addr(fi, lim->src_addr) ||
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

/* ---- matching: each step checks one part of the hints, adjusts fi ---- */

struct rivet_match {
	const struct rivet_info_limits *lim;
	const struct rivet_ep_type *type;	/* prov's endpoint type */
	const struct fi_info *hints;
	uint32_t version;
	struct fi_info *fi;	/* the copy being adjusted */
	bool local_mr_mode;	/* legacy registration: FI_LOCAL_MR needed */
};

static int rivet_match_fail(int ret, const char *what)
{
	RIVET_INFO(CORE, "hints: %s %s\n", what,
		   ret == -FI_ENODATA ? "not supported" : "invalid");
	return ret;
}

static bool rivet_match_legacy_version(uint32_t version)
{
	return FI_VERSION_LT(version, FI_VERSION(1, 5));
}

/* "If no modifiers are specified for an applicable capability, all
 * relevant modifiers are assumed." */
static uint64_t rivet_caps_expand(uint64_t caps)
{
	if ((caps & (FI_MSG | FI_TAGGED)) && !(caps & RIVET_MSG_MODS))
		caps |= RIVET_MSG_MODS;
	if ((caps & RIVET_REMOTE_CAPS) && !(caps & RIVET_RMA_MODS))
		caps |= RIVET_RMA_MODS;
	return caps;
}

/* Capabilities that fi_getinfo(3) says require another one. */
static const struct {
	uint64_t cap;
	uint64_t needs;		/* any of these */
} g_cap_deps[] = {
	{ FI_READ, FI_RMA | FI_ATOMIC },
	{ FI_WRITE, FI_RMA | FI_ATOMIC },
	{ FI_REMOTE_READ, FI_RMA | FI_ATOMIC },
	{ FI_REMOTE_WRITE, FI_RMA | FI_ATOMIC },
	{ FI_RMA_EVENT, FI_RMA | FI_ATOMIC },
	{ FI_RMA_PMEM, FI_RMA },
	{ FI_MULTICAST, FI_MSG },
	{ FI_VARIABLE_MSG, FI_MSG | FI_TAGGED },
	{ FI_SOURCE_ERR, FI_SOURCE },
	{ FI_XPU_TRIGGER, FI_TRIGGER },
};

static bool rivet_caps_valid(uint64_t caps)
{
	size_t i;

	if (caps & ~RIVET_KNOWN_CAPS)
		return false;
	for (i = 0; i < RIVET_COUNT(g_cap_deps); i++) {
		if ((caps & g_cap_deps[i].cap) && !(caps & g_cap_deps[i].needs))
			return false;
	}
	return true;
}

static int rivet_match_valid_caps(struct rivet_match *m)
{
	const struct fi_info *h = m->hints;

	if (!rivet_caps_valid(h->caps))
		return rivet_match_fail(-FI_EBADFLAGS, "caps");
	if ((h->tx_attr && (h->tx_attr->caps & ~RIVET_KNOWN_CAPS)) ||
	    (h->rx_attr && (h->rx_attr->caps & ~RIVET_KNOWN_CAPS)) ||
	    (h->domain_attr && (h->domain_attr->caps & ~RIVET_KNOWN_CAPS)))
		return rivet_match_fail(-FI_EBADFLAGS, "tx/rx/domain caps");
	return 0;
}

static bool rivet_mr_mode_valid(uint32_t version, int mr_mode)
{
	if (rivet_match_legacy_version(version))
		return mr_mode >= FI_MR_UNSPEC && mr_mode <= FI_MR_SCALABLE;
	/* Unknown bits are fine: fi_info(1) and others pass
	 * ~(FI_MR_BASIC | FI_MR_SCALABLE), "every mode".  But "FI_MR_BASIC
	 * must be set alone", and so must FI_MR_SCALABLE. */
	return !(mr_mode & (FI_MR_BASIC | FI_MR_SCALABLE)) ||
	       mr_mode == FI_MR_BASIC || mr_mode == FI_MR_SCALABLE;
}

static int rivet_match_valid_enums(struct rivet_match *m)
{
	const struct fi_domain_attr *d = m->hints->domain_attr;
	const struct fi_ep_attr *e = m->hints->ep_attr;

	if (e && (unsigned int)e->type > FI_EP_SOCK_DGRAM)
		return rivet_match_fail(-FI_EINVAL, "ep_attr->type");
	if (!d)
		return 0;
	if ((unsigned int)d->threading > FI_THREAD_ENDPOINT ||
	    (unsigned int)d->control_progress > FI_PROGRESS_MANUAL ||
	    (unsigned int)d->data_progress > FI_PROGRESS_MANUAL ||
	    (unsigned int)d->resource_mgmt > FI_RM_ENABLED ||
	    (unsigned int)d->av_type > FI_AV_TABLE)
		return rivet_match_fail(-FI_EINVAL, "domain_attr enums");
	if (!rivet_mr_mode_valid(m->version, d->mr_mode))
		return rivet_match_fail(-FI_EINVAL, "domain_attr->mr_mode");
	return 0;
}

static bool rivet_name_is_ours(const char *s, size_t len)
{
	return len == strlen(RIVET_PROV_NAME) &&
	       !strncasecmp(s, RIVET_PROV_NAME, len);
}

/* The core passes a ';' list: "rivet", "rivet;^ofi_rxm" or "^ofi_rxm" (a
 * utility provider asking for its core); "^x" excludes x.  We match when the
 * one named provider left is us, or when none is named. */
static int rivet_match_prov_name(const char *list)
{
	size_t named = 0, len;
	bool ours = false;
	const char *end;

	for (; *list; list = *end ? end + 1 : end) {
		end = strchrnul(list, ';');
		len = (size_t)(end - list);
		if (len && list[0] == '^') {
			if (rivet_name_is_ours(list + 1, len - 1))
				return -FI_ENODATA;
		} else if (len) {
			named++;
			ours = rivet_name_is_ours(list, len);
		}
	}
	return !named || (named == 1 && ours) ? 0 : -FI_ENODATA;
}

static bool rivet_name_differs(const char *hint, const char *ours)
{
	return hint && (!ours || strcasecmp(hint, ours));
}

static int rivet_match_names(struct rivet_match *m)
{
	const struct fi_fabric_attr *hf = m->hints->fabric_attr;
	const struct fi_domain_attr *hd = m->hints->domain_attr;

	if (hf && hf->prov_name && rivet_match_prov_name(hf->prov_name))
		return rivet_match_fail(-FI_ENODATA, "fabric_attr->prov_name");
	if (hf && rivet_name_differs(hf->name, m->fi->fabric_attr->name))
		return rivet_match_fail(-FI_ENODATA, "fabric_attr->name");
	if (hd && rivet_name_differs(hd->name, m->fi->domain_attr->name))
		return rivet_match_fail(-FI_ENODATA, "domain_attr->name");
	return 0;
}

static int rivet_match_ep_type(struct rivet_match *m)
{
	const struct fi_ep_attr *he = m->hints->ep_attr;
	uint32_t fmt = m->hints->addr_format;

	if (fmt != FI_FORMAT_UNSPEC && fmt != FI_SOCKADDR &&
	    fmt != m->fi->addr_format)
		return rivet_match_fail(-FI_ENODATA, "addr_format");
	if (!he)
		return 0;
	if (he->type != FI_EP_UNSPEC && he->type != m->type->type)
		return rivet_match_fail(-FI_ENODATA, "ep_attr->type");
	if ((he->protocol != FI_PROTO_UNSPEC &&
	     he->protocol != m->fi->ep_attr->protocol) ||
	    he->protocol_version > m->fi->ep_attr->protocol_version)
		return rivet_match_fail(-FI_ENODATA, "ep_attr->protocol");
	return 0;
}

static int rivet_mr_mode_required(const struct rivet_ep_type *t,
				  uint64_t caps)
{
	return t->mr_required |
	       ((caps & RIVET_REMOTE_CAPS) ? t->mr_required_rma : 0);
}

/* RMA and atomics that the hints do not name, where their mr_mode (API
 * >= 1.5 bits) could not live with the keys these need, or (RMA only)
 * their cq_data_size with the 32 bits of a write's immediate data (RDM:
 * messages need neither registration nor a 32-bit limit): the caps to
 * drop.  MSG asks the same of every application, and refuses such hints. */
static uint64_t rivet_match_remote_unwanted(const struct rivet_match *m)
{
	const struct fi_info *h = m->hints;
	const struct fi_domain_attr *hd = h->domain_attr;
	uint64_t named = h->caps | (h->tx_attr ? h->tx_attr->caps : 0) |
			 (h->rx_attr ? h->rx_attr->caps : 0);
	int need = rivet_mr_mode_required(m->type, FI_RMA);
	uint64_t drop = 0;

	if ((named & (RIVET_REMOTE_CAPS | RIVET_RMA_MODS)) || !hd)
		return 0;
	if (m->type->cq_data_size_rma &&
	    hd->cq_data_size > m->type->cq_data_size_rma)
		drop |= FI_RMA;
	if (m->type->mr_mode_rma &&
	    !rivet_match_legacy_version(m->version) &&
	    !(hd->mr_mode & (FI_MR_BASIC | FI_MR_SCALABLE)) &&
	    (hd->mr_mode & need) != need)
		drop |= RIVET_REMOTE_CAPS;
	if (drop && !(m->fi->caps & RIVET_REMOTE_CAPS & ~drop))
		drop |= RIVET_RMA_MODS;
	return drop;
}

/* Primary caps: only those asked for; secondary: all of ours (they cost
 * nothing).  hints->caps == 0: everything, but RMA only where the rest of
 * the hints allow it. */
static int rivet_match_caps(struct rivet_match *m)
{
	uint64_t want = m->hints->caps;

	if (!want) {
		m->fi->caps &= ~(rivet_match_remote_unwanted(m) |
				 RIVET_ASKED_CAPS);
		return 0;
	}
	if (want & ~rivet_ep_type_caps(m->type))
		return rivet_match_fail(-FI_ENODATA, "caps");
	m->fi->caps = rivet_caps_expand(want & ~RIVET_DOMAIN_CAPS) |
		      RIVET_DOMAIN_CAPS;
	return 0;
}

/* tx/rx caps: a subset of the info's caps; 0 means "the applicable ones". */
static int rivet_match_attr_caps(uint64_t hint, uint64_t info_caps,
				 uint64_t applicable, uint64_t *caps_p)
{
	if (hint & ~info_caps)
		return -FI_ENODATA;
	*caps_p = (hint ? rivet_caps_expand(hint) : info_caps) & info_caps &
		  applicable;
	return 0;
}

static int rivet_match_ctx_caps(struct rivet_match *m)
{
	const struct fi_info *h = m->hints;
	struct fi_info *fi = m->fi;
	uint64_t dom = h->domain_attr ? h->domain_attr->caps : 0;

	if (rivet_match_attr_caps(h->tx_attr ? h->tx_attr->caps : 0, fi->caps,
				  m->type->tx_caps, &fi->tx_attr->caps))
		return rivet_match_fail(-FI_ENODATA, "tx_attr->caps");
	if (rivet_match_attr_caps(h->rx_attr ? h->rx_attr->caps : 0, fi->caps,
				  m->type->rx_caps, &fi->rx_attr->caps))
		return rivet_match_fail(-FI_ENODATA, "rx_attr->caps");
	if (dom & ~rivet_ep_type_caps(m->type))
		return rivet_match_fail(-FI_ENODATA, "domain_attr->caps");
	fi->domain_attr->caps = RIVET_DOMAIN_CAPS | dom;
	return 0;
}

/*
 * API < 1.5: mr_mode is FI_MR_UNSPEC, _BASIC or _SCALABLE, and FI_LOCAL_MR
 * is a mode bit.  API >= 1.5: mr_mode is a bit set; FI_MR_BASIC (alone)
 * still asks for basic registration, and then FI_LOCAL_MR is not ignored.
 * No domain_attr in the hints: no constraint.
 *
 * The legacy forms: scalable promises keys the application picks and
 * offset addressing, which fi_mr_reg does not give (its keys are rkeys over
 * virtual addresses), so every type refuses it and answers FI_MR_UNSPEC
 * with basic, the form that describes fi_mr_reg truthfully.  FI_LOCAL_MR is
 * asked only of types whose local buffers need descriptors (MSG, not RDM).
 */
static int rivet_match_mr_mode(struct rivet_match *m)
{
	const struct fi_domain_attr *hd = m->hints->domain_attr;
	const struct rivet_ep_type *t = m->type;
	int offered = t->mr_mode |
		      ((m->fi->caps & RIVET_REMOTE_CAPS) ? t->mr_mode_rma : 0);
	int hint = hd ? hd->mr_mode : offered & ~FI_MR_RMA_EVENT;
	int required = rivet_mr_mode_required(t, m->fi->caps);

	if (!rivet_match_legacy_version(m->version) &&
	    !(hint & (FI_MR_BASIC | FI_MR_SCALABLE))) {
		if ((hint & required) != required)
			return rivet_match_fail(-FI_ENODATA, "mr_mode");
		m->fi->domain_attr->mr_mode = offered & hint;
		return 0;
	}
	if (hint == FI_MR_SCALABLE)
		return rivet_match_fail(-FI_ENODATA, "FI_MR_SCALABLE");
	if (t->legacy_local_mr && !(m->hints->mode & FI_LOCAL_MR))
		return rivet_match_fail(-FI_ENODATA, "FI_LOCAL_MR mode");
	m->fi->domain_attr->mr_mode = FI_MR_BASIC;
	m->local_mr_mode = t->legacy_local_mr;
	return 0;
}

/* MSG: remote CQ data rides on write-with-immediate, which consumes a
 * posted receive: applications that cannot live with FI_RX_CQ_DATA get no
 * remote CQ data at all (cq_data_size 0) rather than a surprise.  Types
 * that do not ask FI_RX_CQ_DATA (RDM) need no mode bit at all. */
static int rivet_match_mode(struct rivet_match *m)
{
	const struct fi_info *h = m->hints;
	struct fi_info *fi = m->fi;
	uint64_t rx_mode = h->rx_attr && h->rx_attr->mode ? h->rx_attr->mode :
							     h->mode;
	bool rma_write = (fi->caps & FI_RMA) &&
			 (fi->caps & (FI_WRITE | FI_REMOTE_WRITE));

	/* RDM: 64-bit data in messages, 32 where RMA writes may carry it */
	if (m->type->cq_data_size_rma)
		fi->domain_attr->cq_data_size = rma_write ?
			m->type->cq_data_size_rma : m->type->cq_data_size;
	rma_write = rma_write && (m->type->mode & FI_RX_CQ_DATA);
	fi->mode = 0;
	fi->tx_attr->mode = 0;
	fi->rx_attr->mode = 0;
	if (rma_write && (rx_mode & FI_RX_CQ_DATA)) {
		fi->mode = FI_RX_CQ_DATA;
		fi->rx_attr->mode = FI_RX_CQ_DATA;
	} else if (rma_write) {
		fi->domain_attr->cq_data_size = 0;
	}
	if (m->local_mr_mode)
		fi->mode |= FI_LOCAL_MR;
	return 0;
}

/*
 * Traffic classes (fi_endpoint(3)) as the IP TOS byte that rdma_cm puts
 * in the RoCE GRH traffic class (RDMA_OPTION_ID_TOS), and from which IB
 * subnet managers derive the service level (the QoS class of the path
 * query): DSCP << 2.  The labels take the DiffServ code points of RFC
 * 4594's service classes.
 */
static const uint8_t g_rivet_tc_dscp[] = {
	[FI_TC_BEST_EFFORT - FI_TC_LABEL] = 0,		/* CS0, default */
	[FI_TC_LOW_LATENCY - FI_TC_LABEL] = 46,		/* EF */
	[FI_TC_DEDICATED_ACCESS - FI_TC_LABEL] = 34,	/* AF41 */
	[FI_TC_BULK_DATA - FI_TC_LABEL] = 10,		/* AF11 */
	[FI_TC_SCAVENGER - FI_TC_LABEL] = 8,		/* CS1 */
	[FI_TC_NETWORK_CTRL - FI_TC_LABEL] = 48,	/* CS6 */
};

int rivet_tclass_tos(uint32_t tclass, int *tos_p)
{
	int dscp;

	if (tclass == FI_TC_UNSPEC)
		dscp = -1;	/* the fabric's default: set nothing */
	else if ((tclass & ~0x3fu) == FI_TC_DSCP)
		dscp = (int)(tclass & 0x3f);
	else if (tclass >= FI_TC_LABEL &&
		 tclass - FI_TC_LABEL < RIVET_COUNT(g_rivet_tc_dscp))
		dscp = g_rivet_tc_dscp[tclass - FI_TC_LABEL];
	else
		return -FI_ENODATA;	/* no provider-specific classes */
	if (tos_p)
		*tos_p = dscp < 0 ? -1 : dscp << 2;
	return 0;
}

uint32_t rivet_info_tclass(const struct fi_info *info)
{
	if (info->tx_attr && info->tx_attr->tclass != FI_TC_UNSPEC)
		return info->tx_attr->tclass;
	return info->domain_attr ? info->domain_attr->tclass : FI_TC_UNSPEC;
}

static bool rivet_tclass_ok(uint32_t tclass)
{
	return !rivet_tclass_tos(tclass, NULL);
}

/* FI_THREAD_SAFE satisfies every threading level; report the one asked
 * for so the domain can drop its locks. */
static int rivet_match_domain(struct rivet_match *m)
{
	const struct fi_domain_attr *hd = m->hints->domain_attr;
	struct fi_domain_attr *d = m->fi->domain_attr;

	if (!hd)
		return 0;
	if (hd->control_progress == FI_PROGRESS_AUTO)
		return rivet_match_fail(-FI_ENODATA, "control_progress AUTO");
	/* RDM's protocol runs in a progress thread when AUTO is asked for */
	if (hd->data_progress == FI_PROGRESS_AUTO &&
	    d->data_progress != FI_PROGRESS_AUTO &&
	    m->fi->ep_attr->type != FI_EP_RDM)
		return rivet_match_fail(-FI_ENODATA, "data_progress AUTO");
	if (!rivet_tclass_ok(hd->tclass))
		return rivet_match_fail(-FI_ENODATA, "domain_attr->tclass");
	if (hd->threading)
		d->threading = hd->threading;
	if (hd->data_progress)
		d->data_progress = hd->data_progress;
	if (hd->resource_mgmt)
		d->resource_mgmt = hd->resource_mgmt;
	if (hd->av_type)
		d->av_type = hd->av_type;
	d->tclass = hd->tclass;
	return 0;
}

/* size_t fields where a hint asks for at most what we offer. */
static const size_t g_domain_limits[] = {
	offsetof(struct fi_domain_attr, mr_key_size),
	offsetof(struct fi_domain_attr, cq_data_size),
	offsetof(struct fi_domain_attr, cq_cnt),
	offsetof(struct fi_domain_attr, ep_cnt),
	offsetof(struct fi_domain_attr, tx_ctx_cnt),
	offsetof(struct fi_domain_attr, rx_ctx_cnt),
	offsetof(struct fi_domain_attr, max_ep_tx_ctx),
	offsetof(struct fi_domain_attr, max_ep_rx_ctx),
	offsetof(struct fi_domain_attr, max_ep_stx_ctx),
	offsetof(struct fi_domain_attr, max_ep_srx_ctx),
	offsetof(struct fi_domain_attr, cntr_cnt),
	offsetof(struct fi_domain_attr, mr_iov_limit),
	offsetof(struct fi_domain_attr, max_err_data),
	offsetof(struct fi_domain_attr, mr_cnt),
};

static const size_t g_ep_limits[] = {
	offsetof(struct fi_ep_attr, max_msg_size),
	offsetof(struct fi_ep_attr, max_order_raw_size),
	offsetof(struct fi_ep_attr, max_order_war_size),
	offsetof(struct fi_ep_attr, max_order_waw_size),
};

static size_t rivet_size_at(const void *attr, size_t offset)
{
	return *(const size_t *)((const char *)attr + offset);
}

static bool rivet_limits_ok(const void *hint, const void *ours,
			    const size_t *offsets, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (rivet_size_at(hint, offsets[i]) >
		    rivet_size_at(ours, offsets[i]))
			return false;
	}
	return true;
}

static int rivet_match_limits(struct rivet_match *m)
{
	const struct fi_info *h = m->hints;

	if (h->domain_attr &&
	    !rivet_limits_ok(h->domain_attr, m->fi->domain_attr,
			     g_domain_limits,
			     RIVET_COUNT(g_domain_limits)))
		return rivet_match_fail(-FI_ENODATA, "domain_attr limits");
	if (h->ep_attr &&
	    !rivet_limits_ok(h->ep_attr, m->fi->ep_attr, g_ep_limits,
			     RIVET_COUNT(g_ep_limits)))
		return rivet_match_fail(-FI_ENODATA, "ep_attr limits");
	return 0;
}

/* Authorization keys count from API 1.5 on; we have none to offer. */
static int rivet_match_auth_key(struct rivet_match *m)
{
	const struct fi_domain_attr *hd = m->hints->domain_attr;
	const struct fi_ep_attr *he = m->hints->ep_attr;

	if (rivet_match_legacy_version(m->version))
		return 0;
	if ((hd && (hd->auth_key || hd->auth_key_size)) ||
	    (he && (he->auth_key || he->auth_key_size)))
		return rivet_match_fail(-FI_ENODATA, "auth_key");
	return 0;
}

/* One context each way, nothing shared.  Tags are matched bit by bit
 * under the mask, so any field layout of up to 64 bits works as asked. */
static int rivet_match_ep_attr(struct rivet_match *m)
{
	const struct fi_ep_attr *he = m->hints->ep_attr;

	if (!he)
		return 0;
	if (he->mem_tag_format && !m->type->mem_tag_format)
		return rivet_match_fail(-FI_ENODATA, "mem_tag_format");
	if (he->tx_ctx_cnt > 1 || he->rx_ctx_cnt > 1)
		return rivet_match_fail(-FI_ENODATA, "tx/rx_ctx_cnt");
	if (he->mem_tag_format)
		m->fi->ep_attr->mem_tag_format = he->mem_tag_format;
	return 0;
}

/* Ours, plus the implied orderings the hint names. */
static int rivet_match_order(uint64_t hint, uint64_t implied,
			     uint64_t *order_p)
{
	if (hint & ~(*order_p | implied))
		return -FI_ENODATA;
	*order_p |= hint & implied;
	return 0;
}

/* Queue sizes and iov limits: up to max; the hint's value when given. */
static int rivet_match_count(size_t hint, size_t max, size_t *val_p)
{
	if (hint > max)
		return -FI_ENODATA;
	if (hint)
		*val_p = hint;
	return 0;
}

static int rivet_match_tx(struct rivet_match *m)
{
	const struct fi_tx_attr *h = m->hints->tx_attr;
	struct fi_tx_attr *t = m->fi->tx_attr;

	if (!h)
		return 0;
	if (h->op_flags & ~m->type->tx_op_flags)
		return rivet_match_fail(-FI_ENODATA, "tx_attr->op_flags");
	if (rivet_match_order(h->msg_order, m->type->rma_order,
			      &t->msg_order) ||
	    (h->comp_order & ~t->comp_order))
		return rivet_match_fail(-FI_ENODATA, "tx_attr ordering");
	if (h->inject_size > t->inject_size || !rivet_tclass_ok(h->tclass))
		return rivet_match_fail(-FI_ENODATA, "tx_attr inject/tclass");
	if (rivet_match_count(h->size, m->lim->max_qp_wr, &t->size) ||
	    rivet_match_count(h->iov_limit, t->iov_limit, &t->iov_limit) ||
	    rivet_match_count(h->rma_iov_limit, t->rma_iov_limit,
			      &t->rma_iov_limit))
		return rivet_match_fail(-FI_ENODATA, "tx_attr sizes");
	t->op_flags = h->op_flags;
	t->tclass = h->tclass;
	return 0;
}

static int rivet_match_rx(struct rivet_match *m)
{
	const struct fi_rx_attr *h = m->hints->rx_attr;
	struct fi_rx_attr *r = m->fi->rx_attr;

	if (!h)
		return 0;
	if ((h->op_flags & ~m->type->rx_op_flags) ||
	    ((h->op_flags & FI_MULTI_RECV) && !(r->caps & FI_MULTI_RECV)))
		return rivet_match_fail(-FI_ENODATA, "rx_attr->op_flags");
	if (rivet_match_order(h->msg_order, m->type->rma_order,
			      &r->msg_order) ||
	    (h->comp_order & ~r->comp_order))
		return rivet_match_fail(-FI_ENODATA, "rx_attr ordering");
	/* total_buffered_recv: "the provider may adjust or ignore" it */
	if (rivet_match_count(h->size, m->lim->max_qp_wr, &r->size) ||
	    rivet_match_count(h->iov_limit, r->iov_limit, &r->iov_limit))
		return rivet_match_fail(-FI_ENODATA, "rx_attr sizes");
	r->op_flags = h->op_flags;
	return 0;
}

/* In order: malformed hints first, then what caps decide, then the rest. */
static int (*const g_match_steps[])(struct rivet_match *m) = {
	rivet_match_valid_caps,
	rivet_match_valid_enums,
	rivet_match_names,
	rivet_match_ep_type,
	rivet_match_caps,
	rivet_match_ctx_caps,
	rivet_match_mr_mode,	/* needs the caps */
	rivet_match_mode,	/* needs caps and mr_mode; sets cq_data_size */
	rivet_match_domain,
	rivet_match_limits,	/* after cq_data_size is final */
	rivet_match_auth_key,
	rivet_match_ep_attr,
	rivet_match_tx,
	rivet_match_rx,
};

/* NULL hints: report what the API version needs of every application. */
static void rivet_match_no_hints(struct rivet_match *m)
{
	if (!rivet_match_legacy_version(m->version))
		return;
	m->fi->domain_attr->mr_mode = FI_MR_BASIC;
	if (m->type->legacy_local_mr)
		m->fi->mode |= FI_LOCAL_MR;
}

static int rivet_match_run(struct rivet_match *m)
{
	size_t i;
	int ret;

	if (!m->hints) {
		rivet_match_no_hints(m);
		return 0;
	}
	for (i = 0; i < RIVET_COUNT(g_match_steps); i++) {
		ret = g_match_steps[i](m);
		if (ret)
			return ret;
	}
	return 0;
}

int rivet_info_match(const struct fi_info *prov,
		     const struct rivet_info_limits *lim,
		     const struct fi_info *hints, uint32_t version,
		     struct fi_info **out_p)
{
	struct rivet_match m = { .lim = lim, .hints = hints,
				 .version = version };
	int ret;

	if (!prov || !lim || !out_p || !prov->ep_attr)
		return -FI_EINVAL;
	m.type = rivet_ep_type_lookup(prov->ep_attr->type);
	if (!m.type)
		return -FI_EINVAL;
	m.fi = fi_dupinfo(prov);
	if (!m.fi)
		return -FI_ENOMEM;
	ret = rivet_match_run(&m);
	if (ret) {
		fi_freeinfo(m.fi);
		return ret;
	}
	/* The core sets prov_name; one already set would come out as
	 * "rivet;rivet" (it appends, for utility providers' layering). */
	free(m.fi->fabric_attr->prov_name);
	m.fi->fabric_attr->prov_name = NULL;
	m.fi->fabric_attr->api_version = version;
	/* fi_getinfo(3): a passive endpoint given as hints->handle comes
	 * back in info->handle, for fi_endpoint to take its address */
	if (hints && hints->handle && hints->handle->fclass == FI_CLASS_PEP)
		m.fi->handle = hints->handle;
	*out_p = m.fi;
	return 0;
}

/* ---- the list for one (device, address) ---- */

/* The native RDM first: MPI takes the first match, and with no ep_type in
 * the hints the RDM is what it wants. */
static const enum fi_ep_type g_select_order[] = { FI_EP_RDM, FI_EP_MSG };

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
