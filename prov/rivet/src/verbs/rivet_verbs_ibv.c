/* SPDX-License-Identifier: MIT */
/*
 * The verbs seam, libibverbs: completion queues and their channels (made,
 * resized, destroyed, their events taken and acknowledged), protection
 * domains and registrations, shared receive queues, a QP's state (the
 * RNR timer, the error state, its retry settings), UD QPs made ready to
 * send, address handles and GIDs.  Each call's error is logged and
 * converted to a negative FI_E* code here, once.  Everything above
 * reaches libibverbs through these and its inline data-path calls
 * (poll, arm, post: the verbs objects' own context ops), so the unit
 * tests link scripted doubles instead (test/mock_verbs_cq.c, _mr.c,
 * _ep.c); contrib/layers.sh keeps every other file off direct calls.
 */
#include "rivet.h"

int rivet_verbs_channel_create(struct ibv_context *ctx,
			       struct ibv_comp_channel **ch_p)
{
	int ret;

	*ch_p = ibv_create_comp_channel(ctx);
	if (*ch_p)
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(CQ, "ibv_create_comp_channel", ret);
	return rivet_errno_to_fi(ret);
}

void rivet_verbs_channel_destroy(struct ibv_comp_channel *ch)
{
	int ret = ch ? ibv_destroy_comp_channel(ch) : 0;

	if (ret)
		RIVET_WARN_ERRNO(CQ, "ibv_destroy_comp_channel", ret);
}

int rivet_verbs_cq_create(struct ibv_context *ctx, int cqe, void *cq_context,
			  struct ibv_comp_channel *ch, struct ibv_cq **cq_p)
{
	int ret;

	*cq_p = ibv_create_cq(ctx, cqe, cq_context, ch, 0);
	if (*cq_p)
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(CQ, "ibv_create_cq", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cq_resize(struct ibv_cq *cq, int cqe)
{
	int ret = ibv_resize_cq(cq, cqe);

	if (ret)
		RIVET_WARN_ERRNO(CQ, "ibv_resize_cq", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_cq_destroy(struct ibv_cq *cq)
{
	int ret = ibv_destroy_cq(cq);

	if (ret)
		RIVET_WARN_ERRNO(CQ, "ibv_destroy_cq", ret);
	return rivet_errno_to_fi(ret);
}

unsigned int rivet_verbs_cq_events_ack(struct ibv_cq *cq,
				       struct ibv_comp_channel *ch)
{
	struct ibv_cq *ev_cq;
	unsigned int n = 0;
	void *ev_ctx;

	while (!ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
		n++;
	if (n)
		ibv_ack_cq_events(cq, n);
	return n;
}

int rivet_verbs_pd_alloc(struct ibv_context *ctx, struct ibv_pd **pd_p)
{
	int ret;

	*pd_p = ibv_alloc_pd(ctx);
	if (*pd_p)
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(DOMAIN, "ibv_alloc_pd", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_pd_dealloc(struct ibv_pd *pd)
{
	int ret = ibv_dealloc_pd(pd);

	if (ret)
		RIVET_WARN_ERRNO(DOMAIN, "ibv_dealloc_pd", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_mr_reg(struct ibv_pd *pd, void *addr, size_t len,
		       int access, struct ibv_mr **mr_p)
{
	int ret;

	*mr_p = ibv_reg_mr(pd, addr, len, access);
	if (*mr_p)
		return 0;
	ret = errno;
	/* out of pinned memory: the caller may shrink its cache and retry */
	if (ret == ENOMEM || ret == EAGAIN)
		RIVET_INFO(MR, "ibv_reg_mr: %s\n", strerror(ret));
	else
		RIVET_WARN_ERRNO(MR, "ibv_reg_mr", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_mr_reg_iova(struct ibv_pd *pd, void *addr, size_t len,
			    uint64_t iova, int access, struct ibv_mr **mr_p)
{
	int ret;

	*mr_p = ibv_reg_mr_iova(pd, addr, len, iova, access);
	if (*mr_p)
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(MR, "ibv_reg_mr_iova", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_mr_dereg(struct ibv_mr *mr)
{
	int ret = ibv_dereg_mr(mr);

	if (ret)
		RIVET_WARN_ERRNO(MR, "ibv_dereg_mr", ret);
	return rivet_errno_to_fi(ret);
}

bool rivet_verbs_fork_safe(void)
{
	return ibv_is_fork_initialized() != IBV_FORK_DISABLED;
}

void rivet_qp_set_rnr_timer(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .min_rnr_timer = RIVET_MIN_RNR_TIMER };
	int ret = ibv_modify_qp(qp, &attr, IBV_QP_MIN_RNR_TIMER);

	if (ret)
		RIVET_INFO(EP_CTRL, "min_rnr_timer on qp 0x%x: %s\n",
			   qp->qp_num, strerror(ret));
}

int rivet_verbs_srq_create(struct ibv_pd *pd, uint32_t max_wr,
			   uint32_t max_sge, struct ibv_srq **srq_p)
{
	struct ibv_srq_init_attr attr = {
		.attr = { .max_wr = max_wr, .max_sge = max_sge },
	};
	int ret;

	*srq_p = ibv_create_srq(pd, &attr);
	if (*srq_p)
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(EP_CTRL, "ibv_create_srq", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_srq_destroy(struct ibv_srq *srq)
{
	int ret = ibv_destroy_srq(srq);

	if (ret)
		RIVET_WARN_ERRNO(EP_CTRL, "ibv_destroy_srq", ret);
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_qp_to_error(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	int ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE);

	if (ret)
		RIVET_INFO(EP_CTRL, "qp 0x%x to the error state: %s\n",
			   qp->qp_num, strerror(ret));
	return rivet_errno_to_fi(ret);
}

int rivet_verbs_qp_query_retry(struct ibv_qp *qp, uint8_t *timeout,
			       uint8_t *retry_cnt)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	int ret = ibv_query_qp(qp, &attr, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT,
			       &init);

	if (ret)
		return rivet_errno_to_fi(ret);
	*timeout = attr.timeout;
	*retry_cnt = attr.retry_cnt;
	return 0;
}

int rivet_verbs_qp_destroy(struct ibv_qp *qp)
{
	int ret = ibv_destroy_qp(qp);

	if (ret)
		RIVET_WARN_ERRNO(EP_CTRL, "ibv_destroy_qp", ret);
	return rivet_errno_to_fi(ret);
}

static int rivet_verbs_ud_rts(struct ibv_qp *qp, uint8_t port, uint32_t qkey)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = port, .qkey = qkey,
	};

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		return errno;
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		return errno;
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return errno;
	return 0;
}

/* A UD QP of attr (without inline data, when the device takes none for
 * UD), ready to send on port with Q_Key qkey; attr->cap says what it
 * got.  On failure *qp_p, when not NULL, is the caller's to destroy. */
int rivet_verbs_ud_qp_create(struct ibv_pd *pd, struct ibv_qp_init_attr *attr,
			     uint8_t port, uint32_t qkey, struct ibv_qp **qp_p)
{
	int ret;

	*qp_p = ibv_create_qp(pd, attr);
	if (!*qp_p) {	/* UD may take less inline than the RC probe found */
		attr->cap.max_inline_data = 0;
		*qp_p = ibv_create_qp(pd, attr);
	}
	if (!*qp_p) {
		ret = errno;
		RIVET_WARN_ERRNO(EP_CTRL, "ibv_create_qp(UD)", ret);
		return rivet_errno_to_fi(ret);
	}
	ret = rivet_verbs_ud_rts(*qp_p, port, qkey);
	if (ret) {
		RIVET_WARN_ERRNO(EP_CTRL, "ibv_modify_qp(UD)", ret);
		return rivet_errno_to_fi(ret);
	}
	return 0;
}

int rivet_verbs_ah_create(struct ibv_pd *pd, struct ibv_ah_attr *attr,
			  struct ibv_ah **ah_p)
{
	int ret;

	*ah_p = ibv_create_ah(pd, attr);
	if (*ah_p)
		return 0;
	ret = errno;
	RIVET_WARN_ERRNO(EP_DATA, "ibv_create_ah", ret);
	return ret ? rivet_errno_to_fi(ret) : -FI_EHOSTUNREACH;
}

void rivet_verbs_ah_destroy(struct ibv_ah *ah)
{
	int ret = ibv_destroy_ah(ah);

	if (ret)
		RIVET_WARN_ERRNO(EP_DATA, "ibv_destroy_ah", ret);
}

int rivet_verbs_gid(struct ibv_context *ctx, uint8_t port, int index,
		    union ibv_gid *gid)
{
	return ibv_query_gid(ctx, port, index, gid) ? -FI_EIO : 0;
}

int rivet_verbs_gid_entry(struct ibv_context *ctx, uint8_t port, int index,
			  struct ibv_gid_entry *ent)
{
	return ibv_query_gid_ex(ctx, port, (uint32_t)index, ent, 0) ?
	       -FI_EIO : 0;
}
