/* SPDX-License-Identifier: MIT */
/*
 * A scripted double of the endpoints' verbs seam (the SRQs, QPs and ids of
 * verbs/rivet_verbs_ibv.c and rivet_verbs_cm.c)
 * for test/test_rdm.c: SRQs and QPs whose posts (through their context
 * ops, as libibverbs' inline ibv_post_srq_recv and ibv_post_send do)
 * record the work requests posted; listeners and outgoing connections
 * that are plain rdma_cm ids, whose events the test scripts
 * (mock_cm_event_of); what a connect or accept carried; failures on
 * demand.
 */
#include <stdlib.h>

#include "mock_verbs.h"

static int mock_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad)
{
	g_mock.srq_posts++;
	for (; wr; wr = wr->next)
		if (g_mock.nsrq_posted < sizeof(g_mock.srq_posted) /
					 sizeof(g_mock.srq_posted[0]))
			g_mock.srq_posted[g_mock.nsrq_posted++] = wr->wr_id;
	return 0;
}

unsigned int mock_srq_posted(uint64_t wr_id)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < g_mock.nsrq_posted; i++)
		n += g_mock.srq_posted[i] == wr_id;
	return n;
}

int rivet_verbs_srq_create(struct ibv_pd *pd, uint32_t max_wr,
			   uint32_t max_sge, struct ibv_srq **srq_p)
{
	struct ibv_srq *srq;

	if (g_mock.srq_errno)
		return rivet_errno_to_fi(g_mock.srq_errno);
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -FI_ENOMEM;
	g_mock.ctx.ops.post_srq_recv = mock_post_srq_recv;
	srq->context = &g_mock.ctx;
	srq->pd = pd;
	g_mock.srqs++;
	*srq_p = srq;
	return 0;
}

int rivet_verbs_srq_destroy(struct ibv_srq *srq)
{
	free(srq);
	g_mock.srqs--;
	return 0;
}

int rivet_verbs_cm_listen(struct rdma_event_channel *ch,
			  const struct sockaddr *src, int tos, int backlog,
			  struct ibv_context *ctx, struct rdma_cm_id **id_p,
			  union rivet_sockaddr *name)
{
	struct rdma_cm_id *id;

	*id_p = NULL;
	if (g_mock.listen_errno)
		return rivet_errno_to_fi(g_mock.listen_errno);
	id = calloc(1, sizeof(*id));
	if (!id)
		return -FI_ENOMEM;
	id->channel = ch;
	id->verbs = ctx;
	memcpy(&id->route.addr.src_addr, src, rivet_addr_len(src));
	memcpy(name, src, rivet_addr_len(src));
	g_mock.ids++;
	*id_p = id;
	return 0;
}

void rivet_verbs_cm_id_destroy(struct rdma_cm_id *id)
{
	free(id);
	g_mock.ids--;
}

int rivet_verbs_cm_migrate(struct rdma_cm_id *id, struct rdma_event_channel *ch)
{
	id->channel = ch;
	return 0;
}

int rivet_verbs_cm_disconnect(struct rdma_cm_id *id)
{
	g_mock.disconnects++;
	return 0;
}

void rivet_verbs_cm_qp_destroy(struct rdma_cm_id *id)
{
	free(id->qp);
	id->qp = NULL;
	g_mock.qps--;
}

void rivet_qp_set_rnr_timer(struct ibv_qp *qp)
{
}

void rivet_id_set_tos(struct rdma_cm_id *id, int tos)
{
}

void rivet_id_set_ack_timeout(struct rdma_cm_id *id)
{
}

int rivet_verbs_cm_resolve(struct rdma_event_channel *ch, void *context,
			   const struct sockaddr *src,
			   const struct sockaddr *dst, int tos, int timeout_ms,
			   struct rdma_cm_id **id_p)
{
	struct rdma_cm_id *id;

	*id_p = NULL;
	if (g_mock.resolve_errno)
		return rivet_errno_to_fi(g_mock.resolve_errno);
	id = calloc(1, sizeof(*id));
	if (!id)
		return -FI_ENOMEM;
	id->channel = ch;
	id->context = context;
	id->verbs = &g_mock.ctx;
	memcpy(&id->route.addr.src_addr, src, rivet_addr_len(src));
	memcpy(&id->route.addr.dst_addr, dst, rivet_addr_len(dst));
	g_mock.ids++;
	g_mock.last_id = id;
	*id_p = id;
	return 0;
}

int rivet_verbs_cm_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	g_mock.routes++;
	return rivet_errno_to_fi(g_mock.route_errno);
}

static int mock_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	struct mock_send *m;
	int i;

	if (g_mock.post_send_errno) {
		*bad = wr;
		return g_mock.post_send_errno;
	}
	for (; wr; wr = wr->next) {
		m = &g_mock.sends[g_mock.nsends++ % MOCK_WCS];
		*m = (struct mock_send) {
			.wr_id = wr->wr_id, .opcode = wr->opcode,
			.send_flags = wr->send_flags, .qp_num = qp->qp_num,
		};
		for (i = 0; i < wr->num_sge; i++) {
			if (m->len < sizeof(m->data))
				memcpy(m->data + m->len,
				       (void *)(uintptr_t)wr->sg_list[i].addr,
				       RIVET_MIN(wr->sg_list[i].length,
						 sizeof(m->data) - m->len));
			m->len += wr->sg_list[i].length;
		}
	}
	return 0;
}

int rivet_verbs_cm_qp_create(struct rdma_cm_id *id,
			     struct ibv_qp_init_attr_ex *attr, bool wr_api,
			     struct ibv_qp_ex **qpx_p)
{
	static uint32_t next_qp_num = 0x100;
	struct ibv_qp *qp;

	*qpx_p = NULL;		/* no extended API: ibv_post_send */
	if (g_mock.qp_errno)
		return rivet_errno_to_fi(g_mock.qp_errno);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -FI_ENOMEM;
	g_mock.ctx.ops.post_send = mock_post_send;
	qp->context = &g_mock.ctx;
	qp->qp_num = next_qp_num++;
	qp->qp_type = IBV_QPT_RC;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	id->qp = qp;
	g_mock.qps++;
	return 0;
}

static int mock_conn_data(struct rdma_conn_param *p, int err)
{
	g_mock.conn_data_len = RIVET_MIN((size_t)p->private_data_len,
					 sizeof(g_mock.conn_data));
	memcpy(g_mock.conn_data, p->private_data, g_mock.conn_data_len);
	return rivet_errno_to_fi(err);
}

int rivet_verbs_cm_connect(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	g_mock.connects++;
	return mock_conn_data(p, g_mock.connect_errno);
}

int rivet_verbs_cm_accept(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	g_mock.accepts++;
	return mock_conn_data(p, g_mock.accept_errno);
}

int rivet_verbs_qp_to_error(struct ibv_qp *qp)
{
	g_mock.qp_errors++;
	return 0;
}

int rivet_verbs_qp_query_retry(struct ibv_qp *qp, uint8_t *timeout,
			       uint8_t *retry_cnt)
{
	*timeout = 14;
	*retry_cnt = 7;
	return 0;
}

/* The MSG endpoint's steps: not scripted (test_rdm does not open one);
 * each fails as a device without rdma_cm would. */
int rivet_verbs_cm_id_create(struct rdma_event_channel *ch, void *context,
			     enum rdma_port_space ps, struct rdma_cm_id **id_p)
{
	*id_p = NULL;
	return -FI_ENOSYS;
}

int rivet_verbs_cm_bind(struct rdma_cm_id *id, const struct sockaddr *sa)
{
	return -FI_ENOSYS;
}

int rivet_verbs_cm_listen_on(struct rdma_cm_id *id, int backlog)
{
	return -FI_ENOSYS;
}

int rivet_verbs_cm_resolve_addr(struct rdma_cm_id *id,
				const struct sockaddr *src,
				const struct sockaddr *dst, int timeout_ms)
{
	return -FI_ENOSYS;
}

int rivet_verbs_cm_reject(struct rdma_cm_id *id, const void *data,
			  uint8_t len)
{
	return -FI_ENOSYS;
}

int rivet_verbs_cm_qp_create_plain(struct rdma_cm_id *id, struct ibv_pd *pd,
				   struct ibv_qp_init_attr *attr)
{
	return -FI_ENOSYS;
}

int rivet_verbs_qp_destroy(struct ibv_qp *qp)
{
	return -FI_ENOSYS;
}

int rivet_verbs_ud_qp_create(struct ibv_pd *pd, struct ibv_qp_init_attr *attr,
			     uint8_t port, uint32_t qkey, struct ibv_qp **qp_p)
{
	*qp_p = NULL;
	return -FI_ENOSYS;
}

int rivet_verbs_ah_create(struct ibv_pd *pd, struct ibv_ah_attr *attr,
			  struct ibv_ah **ah_p)
{
	*ah_p = NULL;
	return -FI_ENOSYS;
}

void rivet_verbs_ah_destroy(struct ibv_ah *ah)
{
}

int rivet_verbs_gid(struct ibv_context *ctx, uint8_t port, int index,
		    union ibv_gid *gid)
{
	return -FI_EIO;
}

int rivet_verbs_gid_entry(struct ibv_context *ctx, uint8_t port, int index,
			  struct ibv_gid_entry *ent)
{
	return -FI_EIO;
}
