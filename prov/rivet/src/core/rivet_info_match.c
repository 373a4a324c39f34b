/* SPDX-License-Identifier: MIT */
/*
 * Hints matching (rivet_info_match): each step checks one part of the
 * hints against what rivet_info_build offers and adjusts the copy, as
 * fi_getinfo(3) says; unsatisfiable hints give -FI_ENODATA.  Pure.
 */
#include <stdlib.h>
#include <strings.h>

#include "rivet_info.h"

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
	{ FI_SOURCE_ERR, FI_SOURCE },
	/* API 1.x only: 2.0 gave these bits other meanings */
	{ RIVET_CAP_V1_VARIABLE_MSG, FI_MSG | FI_TAGGED },
	{ RIVET_CAP_V1_XPU_TRIGGER, FI_TRIGGER },
};
#define RIVET_CAP_DEPS_V2 (RIVET_COUNT(g_cap_deps) - 2)

static bool rivet_caps_valid(uint32_t version, uint64_t caps)
{
	size_t i, n = rivet_api_v2(version) ? RIVET_CAP_DEPS_V2 :
					      RIVET_COUNT(g_cap_deps);

	if (caps & ~rivet_known_caps(version))
		return false;
	for (i = 0; i < n; i++) {
		if ((caps & g_cap_deps[i].cap) && !(caps & g_cap_deps[i].needs))
			return false;
	}
	return true;
}

static int rivet_match_valid_caps(struct rivet_match *m)
{
	const struct fi_info *h = m->hints;
	uint64_t unknown = ~rivet_known_caps(m->version);

	if (!rivet_caps_valid(m->version, h->caps))
		return rivet_match_fail(-FI_EBADFLAGS, "caps");
	if ((h->tx_attr && (h->tx_attr->caps & unknown)) ||
	    (h->rx_attr && (h->rx_attr->caps & unknown)) ||
	    (h->domain_attr && (h->domain_attr->caps & unknown)))
		return rivet_match_fail(-FI_EBADFLAGS, "tx/rx/domain caps");
	return 0;
}

static bool rivet_mr_mode_valid(uint32_t version, int mr_mode)
{
	if (rivet_match_legacy_version(version))
		return mr_mode >= RIVET_MR_UNSPEC && mr_mode <= RIVET_MR_SCALABLE;
	/* Unknown bits are fine: fi_info(1) and others pass
	 * ~(FI_MR_BASIC | FI_MR_SCALABLE), "every mode".  But "FI_MR_BASIC
	 * must be set alone", and so must FI_MR_SCALABLE. */
	return !(mr_mode & (RIVET_MR_BASIC | RIVET_MR_SCALABLE)) ||
	       mr_mode == RIVET_MR_BASIC || mr_mode == RIVET_MR_SCALABLE;
}

static int rivet_match_valid_enums(struct rivet_match *m)
{
	const struct fi_domain_attr *d = m->hints->domain_attr;
	const struct fi_ep_attr *e = m->hints->ep_attr;
	unsigned int max_type = rivet_api_v2(m->version) ?
				FI_EP_RDM : RIVET_EP_TYPE_MAX_V1;
	unsigned int max_ctrl = RIVET_API_AT_LEAST(m->version, 1, 21) ?
				RIVET_PROGRESS_CONTROL_UNIFIED :
				FI_PROGRESS_MANUAL;

	if (e && (unsigned int)e->type > max_type)
		return rivet_match_fail(-FI_EINVAL, "ep_attr->type");
	if (!d)
		return 0;
	if ((unsigned int)d->threading > FI_THREAD_ENDPOINT ||
	    (unsigned int)d->control_progress > max_ctrl ||
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
	    !(hd->mr_mode & (RIVET_MR_BASIC | RIVET_MR_SCALABLE)) &&
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
	if (want & ~(rivet_ep_type_caps(m->type) &
		     rivet_caps_of_version(m->version)))
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
	if (dom & ~(rivet_ep_type_caps(m->type) &
		    rivet_caps_of_version(m->version)))
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
	    !(hint & (RIVET_MR_BASIC | RIVET_MR_SCALABLE))) {
		if ((hint & required) != required)
			return rivet_match_fail(-FI_ENODATA, "mr_mode");
		m->fi->domain_attr->mr_mode = offered & hint;
		return 0;
	}
	if (hint == RIVET_MR_SCALABLE)
		return rivet_match_fail(-FI_ENODATA, "FI_MR_SCALABLE");
	if (t->legacy_local_mr && !(m->hints->mode & RIVET_MODE_LOCAL_MR))
		return rivet_match_fail(-FI_ENODATA, "FI_LOCAL_MR mode");
	m->fi->domain_attr->mr_mode = RIVET_MR_BASIC;
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
		fi->mode |= RIVET_MODE_LOCAL_MR;
	/* DGRAM: the GRH in the application's prefix, one SGE fewer per
	 * receive, for applications that offer one (not with a shared
	 * receive context, whose receives have none) */
	if (m->type->type == FI_EP_DGRAM &&
	    ((h->mode | rx_mode |
	      (h->tx_attr ? h->tx_attr->mode : 0)) & FI_MSG_PREFIX) &&
	    !(h->ep_attr && h->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT)) {
		fi->mode |= FI_MSG_PREFIX;
		fi->tx_attr->mode |= FI_MSG_PREFIX;
		fi->rx_attr->mode |= FI_MSG_PREFIX;
		fi->ep_attr->msg_prefix_size = RIVET_UD_GRH_LEN;
	}
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
	/* the application serializes control and data progress, and data
	 * progress is manual: rivet's CM work already runs in data calls */
	if (hd->control_progress == RIVET_PROGRESS_CONTROL_UNIFIED) {
		if (hd->data_progress == FI_PROGRESS_AUTO)
			return rivet_match_fail(-FI_ENODATA,
				"control_progress UNIFIED with data AUTO");
		d->control_progress = RIVET_PROGRESS_CONTROL_UNIFIED;
		/* "It implies manual progress" (fi_domain(3)) */
		if (!hd->data_progress)
			d->data_progress = FI_PROGRESS_MANUAL;
	}
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
		    rivet_size_at(ours, offsets[i])) {
			RIVET_INFO(CORE, "hints: the size_t at offset %zu "
				   "asks %zu, rivet offers %zu\n", offsets[i],
				   rivet_size_at(hint, offsets[i]),
				   rivet_size_at(ours, offsets[i]));
			return false;
		}
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

/* One context each way, or shared ones.  Tags are matched bit by bit
 * under the mask, so any field layout of up to 64 bits works as asked. */
static int rivet_match_ep_attr(struct rivet_match *m)
{
	const struct fi_ep_attr *he = m->hints->ep_attr;
	size_t max;

	if (!he)
		return 0;
	if (he->mem_tag_format && !m->type->mem_tag_format)
		return rivet_match_fail(-FI_ENODATA, "mem_tag_format");
	/* one context each way, a shared one (rivet_msg_srx.c), or on RDM
	 * the contexts of a scalable endpoint (rivet_rdm_sep.c) */
	max = m->type->type == FI_EP_RDM ? RIVET_SEP_MAX_CTX : 1;
	if ((he->tx_ctx_cnt > max && he->tx_ctx_cnt != FI_SHARED_CONTEXT) ||
	    (he->rx_ctx_cnt > max && he->rx_ctx_cnt != FI_SHARED_CONTEXT))
		return rivet_match_fail(-FI_ENODATA, "tx/rx_ctx_cnt");
	if (he->tx_ctx_cnt > 1)
		m->fi->ep_attr->tx_ctx_cnt = he->tx_ctx_cnt;
	if (he->rx_ctx_cnt > 1)
		m->fi->ep_attr->rx_ctx_cnt = he->rx_ctx_cnt;
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

/* NULL hints: report what the API version needs of every application,
 * and no FI_RMA_EVENT.  fi_getinfo(3) lets a provider report a secondary
 * capability nobody asked for only where that costs no performance, and
 * an endpoint with this one sends an event message per RMA and writes a
 * completion without a context at the target.  MPICH's ch4:ofi asks for
 * every capability of its first (NULL hints) answer, and takes such a
 * completion for one of its requests. */
static void rivet_match_no_hints(struct rivet_match *m)
{
	m->fi->caps &= ~FI_RMA_EVENT;
	m->fi->tx_attr->caps &= ~FI_RMA_EVENT;
	m->fi->rx_attr->caps &= ~FI_RMA_EVENT;
	if (!rivet_match_legacy_version(m->version))
		return;
	m->fi->domain_attr->mr_mode = RIVET_MR_BASIC;
	if (m->type->legacy_local_mr)
		m->fi->mode |= RIVET_MODE_LOCAL_MR;
}

/* The capability bits this API version defines (2.0 reused three of
 * 1.x's), before any hint is looked at. */
static void rivet_match_version_caps(struct rivet_match *m)
{
	uint64_t known = rivet_caps_of_version(m->version);

	m->fi->caps &= known;
	m->fi->tx_attr->caps &= known;
	m->fi->rx_attr->caps &= known;
}

/* 2.0: comp_order "is provided for version 1 compatibility and should be
 * set to 0". */
static void rivet_match_version_attrs(struct rivet_match *m)
{
	if (!rivet_api_v2(m->version))
		return;
	m->fi->tx_attr->comp_order = 0;
	m->fi->rx_attr->comp_order = 0;
}

static int rivet_match_run(struct rivet_match *m)
{
	size_t i;
	int ret;

	rivet_match_version_caps(m);
	if (!m->hints) {
		rivet_match_no_hints(m);
	} else {
		for (i = 0; i < RIVET_COUNT(g_match_steps); i++) {
			ret = g_match_steps[i](m);
			if (ret)
				return ret;
		}
	}
	rivet_match_version_attrs(m);
	return 0;
}

int rivet_info_match(const struct fi_info *prov,
		     const struct rivet_info_limits *lim,
		     const struct fi_info *hints, uint32_t version,
		     struct fi_info **out_p)
{
	struct rivet_match m = { .lim = lim, .hints = hints,
				 .version = rivet_api_of_request(version) };
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
	m.fi->fabric_attr->api_version = m.version;
	/* fi_getinfo(3): a passive endpoint given as hints->handle comes
	 * back in info->handle, for fi_endpoint to take its address */
	if (hints && hints->handle && hints->handle->fclass == FI_CLASS_PEP)
		m.fi->handle = hints->handle;
	*out_p = m.fi;
	return 0;
}
