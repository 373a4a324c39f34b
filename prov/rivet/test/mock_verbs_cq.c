/* SPDX-License-Identifier: MIT */
/*
 * A scripted double of the CQ's verbs seam (the CQs of verbs/rivet_verbs_ibv.c) for
 * test/test_cq.c: a "verbs CQ" whose poll hands out the work completions
 * a test queued (through the CQ's context ops, as libibverbs' inline
 * ibv_poll_cq does), channels that are eventfds, and failures on demand.
 */
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mock_verbs.h"

struct mock_verbs g_mock;

static int mock_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int i = 0;

	g_mock.polls++;
	if (g_mock.poll_fail)
		return -1;
	while (i < n && g_mock.head < g_mock.tail)
		wc[i++] = g_mock.wcs[g_mock.head++ % MOCK_WCS];
	return i;
}

static int mock_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	g_mock.arms++;
	return 0;
}

void mock_verbs_reset(void)
{
	memset(&g_mock, 0, sizeof(g_mock));
	g_mock.ctx.ops.poll_cq = mock_poll_cq;
	g_mock.ctx.ops.req_notify_cq = mock_req_notify_cq;
}

void mock_wc_qp(uint64_t wr_id, enum ibv_wc_status status,
		enum ibv_wc_opcode opcode, uint32_t len, uint32_t qp_num)
{
	g_mock.wcs[g_mock.tail++ % MOCK_WCS] = (struct ibv_wc) {
		.wr_id = wr_id, .status = status, .opcode = opcode,
		.byte_len = len, .qp_num = qp_num,
	};
}

void mock_wc(uint64_t wr_id, enum ibv_wc_status status,
	     enum ibv_wc_opcode opcode, uint32_t len)
{
	mock_wc_qp(wr_id, status, opcode, len, 0x11);
}

int rivet_verbs_channel_create(struct ibv_context *ctx,
			       struct ibv_comp_channel **ch_p)
{
	struct ibv_comp_channel *ch;

	if (g_mock.channel_errno)
		return rivet_errno_to_fi(g_mock.channel_errno);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -FI_ENOMEM;
	ch->context = ctx;
	ch->fd = eventfd(0, 0);
	g_mock.channels++;
	*ch_p = ch;
	return 0;
}

void rivet_verbs_channel_destroy(struct ibv_comp_channel *ch)
{
	if (!ch)
		return;
	close(ch->fd);
	free(ch);
	g_mock.channels--;
}

int rivet_verbs_cq_create(struct ibv_context *ctx, int cqe, void *cq_context,
			  struct ibv_comp_channel *ch, struct ibv_cq **cq_p)
{
	struct ibv_cq *cq;

	if (g_mock.cq_errno)
		return rivet_errno_to_fi(g_mock.cq_errno);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->context = ctx;
	cq->channel = ch;
	cq->cq_context = cq_context;
	cq->cqe = cqe;
	g_mock.cqs++;
	*cq_p = cq;
	return 0;
}

int rivet_verbs_cq_resize(struct ibv_cq *cq, int cqe)
{
	if (g_mock.resize_errno)
		return rivet_errno_to_fi(g_mock.resize_errno);
	cq->cqe = cqe;
	return 0;
}

int rivet_verbs_cq_destroy(struct ibv_cq *cq)
{
	if (g_mock.destroy_errno)
		return rivet_errno_to_fi(g_mock.destroy_errno);
	free(cq);
	g_mock.cqs--;
	return 0;
}

unsigned int rivet_verbs_cq_events_ack(struct ibv_cq *cq,
				       struct ibv_comp_channel *ch)
{
	return 0;
}
