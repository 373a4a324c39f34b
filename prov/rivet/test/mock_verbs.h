/* SPDX-License-Identifier: MIT */
/* The scripted verbs of test/mock_verbs_cq.c, mock_verbs_mr.c and
 * mock_verbs_cm.c (see there). */
#ifndef MOCK_VERBS_H
#define MOCK_VERBS_H

#include "rivet.h"

#define MOCK_WCS 64

/* A send work request posted to a QP, its first bytes copied. */
struct mock_send {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t qp_num, len;
	uint8_t data[128];
};

struct mock_verbs {
	struct ibv_context ctx;		/* ops: poll_cq, req_notify_cq */
	struct ibv_wc wcs[MOCK_WCS];	/* queued work completions */
	size_t head, tail;
	bool poll_fail;			/* ibv_poll_cq returns -1 */
	int channel_errno, cq_errno, resize_errno, destroy_errno;
	int channels, cqs;		/* made and not yet destroyed */
	unsigned int polls, arms;
	/* registrations (test/mock_verbs_mr.c) */
	int reg_errno, reg_iova_errno, dereg_errno, pd_errno;
	int mrs, pds;			/* made and not yet destroyed */
	int last_access;		/* of the last registration */
	uint64_t last_iova;
	uint32_t next_key;
	/* rdma_cm (test/mock_verbs_cm.c) */
	struct rdma_cm_event *cm_events[MOCK_WCS];	/* queued */
	size_t cm_head, cm_tail;
	int cm_get_errno;		/* the channel fails */
	int cm_channels, cm_unacked;	/* made, taken: not yet gone */
	struct rdma_cm_id *refused[8];	/* connection requests refused */
	size_t nrefused;
	/* endpoints' SRQs, listeners, connections (test/mock_verbs_ep.c) */
	int srq_errno, listen_errno;
	int srqs, ids, qps;		/* made and not yet destroyed */
	unsigned int srq_posts;		/* ibv_post_srq_recv calls */
	uint64_t srq_posted[1024];	/* wr_ids posted to an SRQ, in order */
	size_t nsrq_posted;
	int resolve_errno, route_errno, qp_errno, connect_errno, accept_errno;
	int post_send_errno;		/* ibv_post_send's return */
	unsigned int routes, connects, accepts, qp_errors, disconnects;
	struct rdma_cm_id *last_id;	/* the last id resolve made */
	uint8_t conn_data[64];		/* the last connect's or accept's */
	size_t conn_data_len;
	struct mock_send sends[MOCK_WCS];	/* posted sends, in order */
	size_t nsends;
};

extern struct mock_verbs g_mock;

void mock_verbs_reset(void);
void mock_wc(uint64_t wr_id, enum ibv_wc_status status,
	     enum ibv_wc_opcode opcode, uint32_t len);
void mock_cm_event(enum rdma_cm_event_type type, int status);
/* an event of id, with private data (len bytes of data) */
void mock_cm_event_of(struct rdma_cm_id *id, enum rdma_cm_event_type type,
		      int status, const void *data, size_t len);
/* a work completion of a QP */
void mock_wc_qp(uint64_t wr_id, enum ibv_wc_status status,
		enum ibv_wc_opcode opcode, uint32_t len, uint32_t qp_num);
/* how many times wr_id was posted to an SRQ */
unsigned int mock_srq_posted(uint64_t wr_id);

#endif
