/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the RDM endpoint on scripted verbs (test/mock_verbs_*.c):
 * opened, enabled and closed as an application does, its verbs objects
 * made and given back through the seam; its connections built event by
 * event, both ways (a request claiming another node refused); sends and
 * arrivals; and its progress pass fed work completions that the VM
 * cannot bring on demand (a receive flushed from the SRQ, a failed
 * receive or send, a malformed message).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <signal.h>

#include "mock_verbs.h"
#include "rivet_rdm.h"

static struct rivet_fabric g_fab;
static struct rivet_dev g_dev;
static struct rivet_domain g_dom;
static struct fi_info *g_info;
static struct fid_av *g_av;
static struct fid_cq *g_cq;

static void setup(void)
{
	struct sockaddr_in *sin;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = {
		.size = 64, .format = FI_CQ_FORMAT_TAGGED,
		.wait_obj = FI_WAIT_NONE,
	};

	signal(SIGABRT, SIG_DFL);	/* not libinfinipath's dump */
	mock_verbs_reset();
	g_fab = (struct rivet_fabric) {
		.api_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
	};
	g_dev = (struct rivet_dev) { .ctx = &g_mock.ctx, .naddrs = 1 };
	g_dev.attr.max_cqe = 4096;
	g_dev.attr.max_srq_wr = 64;	/* 64 buffers, given back 8 at a time */
	g_dev.attr.max_qp_wr = 1024;
	g_dev.port_attr.active_mtu = IBV_MTU_1024;
	g_dev.max_inline = 64;
	sin = &g_dev.addrs[0].addr.sin;
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(0x0a4d0001);	/* 10.77.0.1 */
	g_info = fi_allocinfo();
	cr_assert_not_null(g_info);
	g_info->fabric_attr->api_version = g_fab.api_version;
	g_info->ep_attr->type = FI_EP_RDM;
	g_info->caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV;
	g_info->domain_attr->threading = FI_THREAD_SAFE;
	g_info->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	g_dom = (struct rivet_domain) {
		.fabric = &g_fab, .dev = &g_dev, .info = g_info,
		.threading = FI_THREAD_SAFE,
	};
	g_dom.domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	cr_assert_eq(rivet_verbs_pd_alloc(g_dev.ctx, &g_dom.pd), 0);
	g_dom.mr_keys = calloc(1, sizeof(*g_dom.mr_keys));
	rivet_u32_map_construct(g_dom.mr_keys);
	pthread_mutex_init(&g_dom.mr_lock, NULL);
	cr_assert_eq(rivet_av_open(&g_dom.domain_fid, &av_attr, &g_av, NULL),
		     0);
	cr_assert_eq(rivet_cq_open(&g_dom.domain_fid, &cq_attr, &g_cq, NULL),
		     0);
}

static void teardown(void)
{
	cr_expect_eq(fi_close(&g_cq->fid), 0);
	cr_expect_eq(fi_close(&g_av->fid), 0);
	/* everything the endpoint made through the seam is gone */
	cr_expect_eq(g_mock.srqs, 0, "SRQs left: %d", g_mock.srqs);
	cr_expect_eq(g_mock.ids, 0, "rdma_cm ids left: %d", g_mock.ids);
	cr_expect_eq(g_mock.cqs, 0, "verbs CQs left: %d", g_mock.cqs);
	cr_expect_eq(g_mock.channels, 0, "channels left: %d",
		     g_mock.channels);
	cr_expect_eq(g_mock.cm_channels, 0, "rdma_cm channels left: %d",
		     g_mock.cm_channels);
	cr_expect_eq(g_mock.mrs, 0, "registrations left: %d", g_mock.mrs);
	cr_expect_eq(atomic_load(&g_dom.refcnt), 0);
	rivet_u32_map_destruct(g_dom.mr_keys);
	free(g_dom.mr_keys);
	pthread_mutex_destroy(&g_dom.mr_lock);
	rivet_verbs_pd_dealloc(g_dom.pd);
	fi_freeinfo(g_info);
}

TestSuite(rdm, .init = setup, .fini = teardown);

static struct rivet_rdm_ep *rdm_ep(struct fid_ep *ep)
{
	return container_of(ep, struct rivet_rdm_ep, ep_fid);
}

/* An RDM endpoint opened, bound to the AV and CQ, enabled. */
static struct fid_ep *ep_up(void)
{
	struct fid_ep *ep = NULL;

	cr_assert_eq(rivet_rdm_ep_open(&g_dom.domain_fid, g_info, &ep, NULL),
		     0);
	cr_assert_eq(fi_ep_bind(ep, &g_av->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &g_cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(ep), 0);
	return ep;
}

static uint64_t rxbuf(struct fid_ep *ep, size_t i)
{
	return (uint64_t)(uintptr_t)&rdm_ep(ep)->rxbufs[i];
}

/* a receive completion for buffer i (qp 0x11: no connection of ours) */
static void rx_wc(struct fid_ep *ep, size_t i, enum ibv_wc_status status,
		  uint32_t len)
{
	mock_wc(rxbuf(ep, i), status, IBV_WC_RECV, len);
}

static void cq_empty(void)
{
	struct fi_cq_tagged_entry e;

	cr_expect_eq(fi_cq_read(g_cq, &e, 1), -FI_EAGAIN);
}

Test(rdm, enable_posts_every_receive_buffer_once)
{
	struct fid_ep *ep = ep_up();
	struct rivet_rdm_ep *rep = rdm_ep(ep);
	size_t i;

	cr_assert_eq(rep->srq_size, 64);
	cr_expect_eq(rep->srq_batch, 8);
	cr_expect_eq(g_mock.srqs, 1);
	cr_expect_eq(g_mock.ids, 1, "the listener");
	for (i = 0; i < rep->srq_size; i++)
		cr_expect_eq(mock_srq_posted(rxbuf(ep, i)), 1, "buffer %zu", i);
	cq_empty();
	cr_expect_eq(fi_close(&ep->fid), 0);
}

/* A QP that goes to the error state hands back, flushed, the SRQ
 * buffers it had taken: they are the SRQ's again (they were dropped, and
 * each connection lost took some of the SRQ away for good). */
Test(rdm, a_flushed_receive_buffer_goes_back_to_the_srq)
{
	struct fid_ep *ep = ep_up();
	size_t i, batch = rdm_ep(ep)->srq_batch;

	for (i = 0; i < batch; i++)
		rx_wc(ep, i, IBV_WC_WR_FLUSH_ERR, 0);
	cq_empty();		/* a flush is no one's error */
	cr_expect_eq(g_mock.head, g_mock.tail, "the pass took them all");
	for (i = 0; i < batch; i++)
		cr_expect_eq(mock_srq_posted(rxbuf(ep, i)), 2,
			     "flushed buffer %zu posted again", i);
	cr_expect_eq(fi_close(&ep->fid), 0);
}

/* A receive that failed (on a QP of no connection of ours): no entry,
 * no crash, and its buffer goes back. */
Test(rdm, a_failed_receive_gives_its_buffer_back)
{
	struct fid_ep *ep = ep_up();
	size_t i, batch = rdm_ep(ep)->srq_batch;

	for (i = 0; i < batch; i++)
		rx_wc(ep, i, IBV_WC_LOC_PROT_ERR, 0);
	cq_empty();
	for (i = 0; i < batch; i++)
		cr_expect_eq(mock_srq_posted(rxbuf(ep, i)), 2, "buffer %zu", i);
	cr_expect_eq(fi_close(&ep->fid), 0);
}

/* Messages too short for a header, or naming no connection: dropped,
 * their buffers given back, nothing reported. */
Test(rdm, a_malformed_message_is_dropped_and_its_buffer_given_back)
{
	struct fid_ep *ep = ep_up();
	struct rivet_rdm_ep *rep = rdm_ep(ep);
	struct rivet_wire_hdr *hdr;
	size_t i, batch = rep->srq_batch;

	for (i = 0; i < batch; i++) {
		hdr = (void *)rep->rxbufs[i].data;
		hdr->op = RIVET_OP_EAGER;
		hdr->version = RIVET_WIRE_VERSION;
		hdr->conn_idx = 7;	/* no such connection */
		rx_wc(ep, i, IBV_WC_SUCCESS,
		      i % 2 ? 3 : (uint32_t)sizeof(*hdr));
	}
	cq_empty();
	for (i = 0; i < batch; i++)
		cr_expect_eq(mock_srq_posted(rxbuf(ep, i)), 2, "buffer %zu", i);
	cr_expect_eq(fi_close(&ep->fid), 0);
}

/* Failures of the seam: the documented codes, nothing left behind. */
Test(rdm, enable_fails_cleanly_without_an_srq)
{
	struct fid_ep *ep = NULL;

	g_mock.srq_errno = ENOMEM;
	cr_assert_eq(rivet_rdm_ep_open(&g_dom.domain_fid, g_info, &ep, NULL),
		     0);
	cr_assert_eq(fi_ep_bind(ep, &g_av->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &g_cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_expect_eq(fi_enable(ep), -FI_ENOMEM);
	cr_expect_eq(fi_close(&ep->fid), 0);
}

Test(rdm, enable_fails_cleanly_without_a_verbs_cq)
{
	struct fid_ep *ep = NULL;

	cr_assert_eq(rivet_rdm_ep_open(&g_dom.domain_fid, g_info, &ep, NULL),
		     0);
	cr_assert_eq(fi_ep_bind(ep, &g_av->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &g_cq->fid, FI_TRANSMIT | FI_RECV), 0);
	g_mock.cq_errno = EINVAL;
	cr_expect_eq(fi_enable(ep), -FI_EINVAL);
	cr_expect_eq(fi_close(&ep->fid), 0);
}

Test(rdm, open_fails_when_the_address_is_taken)
{
	struct fid_ep *ep = NULL;

	g_mock.listen_errno = EADDRINUSE;
	cr_expect_eq(rivet_rdm_ep_open(&g_dom.domain_fid, g_info, &ep, NULL),
		     -FI_EADDRINUSE);
	cr_expect_null(ep);
}

Test(rdm, enable_without_an_av_is_refused)
{
	struct fid_ep *ep = NULL;

	cr_assert_eq(rivet_rdm_ep_open(&g_dom.domain_fid, g_info, &ep, NULL),
		     0);
	cr_expect_eq(fi_enable(ep), -FI_ENOAV);
	cr_expect_eq(fi_close(&ep->fid), 0);
}

/* ---- a connection, scripted: made, up, sending, receiving, failing ---- */

/* The peer at 10.77.0.2:7471 in the AV. */
static fi_addr_t peer_insert(void)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET, .sin_port = htons(7471),
		.sin_addr.s_addr = htonl(0x0a4d0002),
	};
	fi_addr_t addr = FI_ADDR_NOTAVAIL;

	cr_assert_eq(fi_av_insert(g_av, &sin, 1, &addr, 0, NULL), 1);
	return addr;
}

/* Runs the endpoint's progress until the scripted events and
 * completions are all taken (a pass looks at the rdma_cm channel
 * every few passes while a connection is being set up). */
static void progress(void)
{
	struct fi_cq_tagged_entry e;
	int i;

	for (i = 0; i < 256 && (g_mock.cm_head != g_mock.cm_tail ||
			       g_mock.head != g_mock.tail); i++)
		cr_assert_eq(fi_cq_read(g_cq, &e, 0), -FI_EAGAIN);
	cr_assert_eq(g_mock.cm_head, g_mock.cm_tail, "rdma_cm events left");
	cr_assert_eq(g_mock.head, g_mock.tail, "work completions left");
}

/* The peer accepts: its index of the connection is peer_idx. */
static void peer_accepts(struct rdma_cm_id *id, uint32_t peer_idx)
{
	struct rivet_wire_accept acc = {
		.magic = RIVET_CONN_MAGIC, .version = RIVET_WIRE_VERSION,
		.conn_idx = peer_idx, .incarnation = 0x1111,
	};

	mock_cm_event_of(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0);
	progress();
	cr_assert_eq(g_mock.routes, 1);
	mock_cm_event_of(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0);
	progress();
	cr_assert_eq(g_mock.connects, 1);
	cr_assert_not_null(id->qp);
	mock_cm_event_of(id, RDMA_CM_EVENT_ESTABLISHED, 0, &acc, sizeof(acc));
	progress();
}

static const struct rivet_wire_hdr *sent_hdr(size_t i)
{
	cr_assert_lt(i, g_mock.nsends);
	return (const void *)g_mock.sends[i].data;
}

/* A tagged send to a new peer waits for the connection, which rdma_cm
 * builds step by step; once up, the send goes out as one eager message
 * (header and payload, to the peer's index of the connection) and
 * completes when its work completion comes. */
Test(rdm, a_send_waits_for_its_connection_and_completes)
{
	struct fid_ep *ep = ep_up();
	fi_addr_t peer = peer_insert();
	const struct rivet_wire_hdr *hdr;
	struct rivet_wire_connreq req;
	struct fi_cq_tagged_entry e;
	char msg[8] = "rivet!!";
	struct rdma_cm_id *id;
	int ctx;

	cr_assert_eq(fi_tsend(ep, msg, sizeof(msg), NULL, peer, 0xbeef, &ctx),
		     0);
	id = g_mock.last_id;
	cr_assert_not_null(id, "no connection started");
	cr_expect_eq(g_mock.nsends, 0, "sent before the connection is up");
	peer_accepts(id, 5);
	/* what the connection request told the peer */
	cr_assert_geq(g_mock.conn_data_len, offsetof(struct rivet_wire_connreq,
						     replaces));
	memcpy(&req, g_mock.conn_data, sizeof(req));
	cr_expect_eq(req.magic, RIVET_CONN_MAGIC);
	cr_expect_eq(req.version, RIVET_WIRE_VERSION);
	cr_expect_eq(req.conn_idx, 0);
	/* the send, on the wire */
	cr_assert_eq(g_mock.nsends, 1, "sends posted: %zu", g_mock.nsends);
	hdr = sent_hdr(0);
	cr_expect_eq(hdr->op, RIVET_OP_EAGER);
	cr_expect_eq(hdr->conn_idx, 5, "the peer's index of the connection");
	cr_expect_eq(hdr->tag, 0xbeef);
	cr_expect_eq(hdr->len, sizeof(msg));
	cr_expect(hdr->flags & RIVET_WF_TAGGED);
	cr_expect_eq(g_mock.sends[0].len, sizeof(*hdr) + sizeof(msg));
	cr_expect_arr_eq(g_mock.sends[0].data + sizeof(*hdr), msg,
			 sizeof(msg));
	cr_expect_eq(g_mock.sends[0].qp_num, id->qp->qp_num);
	cr_expect_eq(fi_cq_read(g_cq, &e, 1), -FI_EAGAIN, "done too soon");
	mock_wc_qp(g_mock.sends[0].wr_id, IBV_WC_SUCCESS, IBV_WC_SEND,
		   0, id->qp->qp_num);
	cr_assert_eq(fi_cq_read(g_cq, &e, 1), 1);
	cr_expect_eq(e.op_context, &ctx);
	cr_expect_eq(e.flags, FI_SEND | FI_TAGGED);
	cr_expect_eq(fi_close(&ep->fid), 0);
}

/* An eager message arrives on the connection for a posted receive: the
 * payload lands in the receive's buffer, its entry names the tag, the
 * length and the sender; the buffer goes back to the SRQ. */
Test(rdm, an_arriving_message_completes_a_posted_receive)
{
	struct fid_ep *ep = ep_up();
	struct rivet_rdm_ep *rep = rdm_ep(ep);
	fi_addr_t peer = peer_insert(), from = FI_ADDR_NOTAVAIL;
	struct rivet_wire_hdr *hdr;
	struct fi_cq_tagged_entry e;
	char out[8] = "x", in[16] = { 0 };
	struct rdma_cm_id *id;
	size_t i;
	int ctx;

	cr_assert_eq(fi_tsend(ep, out, 1, NULL, peer, 1, NULL), 0);
	id = g_mock.last_id;
	peer_accepts(id, 3);
	cr_assert_eq(fi_trecv(ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 0x77,
			      0, &ctx), 0);
	hdr = (void *)rep->rxbufs[0].data;
	*hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_EAGER,
		.flags = RIVET_WF_TAGGED, .conn_idx = 0, .tag = 0x77,
		.len = 5,
	};
	memcpy(hdr + 1, "hello", 5);
	mock_wc_qp(rxbuf(ep, 0), IBV_WC_SUCCESS, IBV_WC_RECV,
		   sizeof(*hdr) + 5, id->qp->qp_num);
	/* the send's completion (the read takes both) */
	mock_wc_qp(g_mock.sends[0].wr_id, IBV_WC_SUCCESS, IBV_WC_SEND, 0,
		   id->qp->qp_num);
	for (i = 0; i < 2; i++) {
		cr_assert_eq(fi_cq_readfrom(g_cq, &e, 1, &from), 1);
		if (e.flags & FI_RECV)
			break;
	}
	cr_assert(e.flags & FI_RECV, "no receive completion");
	cr_expect_eq(e.op_context, &ctx);
	cr_expect_eq(e.len, 5);
	cr_expect_eq(e.tag, 0x77);
	cr_expect_eq(from, peer);
	cr_expect_arr_eq(in, "hello", 5);
	/* given back: one more batch of buffers fills the post */
	for (i = 1; i < rep->srq_batch; i++)
		rx_wc(ep, i, IBV_WC_WR_FLUSH_ERR, 0);
	progress();
	cr_expect_eq(mock_srq_posted(rxbuf(ep, 0)), 2);
	cr_expect_eq(fi_close(&ep->fid), 0);
}

/* A send that fails on the wire (the peer's NIC stopped answering):
 * an error entry with the send's context and a useful reason, the
 * connection failed (QP to the error state, the peer told), and the
 * next send to the peer starts a new connection. */
Test(rdm, a_failed_send_fails_its_connection_and_the_next_reconnects)
{
	struct fid_ep *ep = ep_up();
	fi_addr_t peer = peer_insert();
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	struct rdma_cm_id *id;
	char msg[4] = "abc";
	int ctx;

	cr_assert_eq(fi_tsend(ep, msg, sizeof(msg), NULL, peer, 9, &ctx), 0);
	id = g_mock.last_id;
	peer_accepts(id, 0);
	cr_assert_eq(g_mock.nsends, 1);
	mock_wc_qp(g_mock.sends[0].wr_id, IBV_WC_RETRY_EXC_ERR, IBV_WC_SEND,
		   0, id->qp->qp_num);
	cr_assert_eq(fi_cq_read(g_cq, &e, 1), -FI_EAVAIL);
	cr_assert_eq(fi_cq_readerr(g_cq, &err, 0), 1);
	cr_expect_eq(err.op_context, &ctx);
	cr_expect_neq(err.err, 0);
	cr_expect_eq(err.prov_errno, IBV_WC_RETRY_EXC_ERR);
	cr_expect_not_null(fi_cq_strerror(g_cq, err.prov_errno, err.err_data,
					  NULL, 0));
	cr_expect_eq(g_mock.qp_errors, 1, "QP to the error state");
	cr_expect_eq(g_mock.disconnects, 1, "the peer told");
	/* the next send: a new connection */
	g_mock.last_id = NULL;
	cr_assert_eq(fi_tsend(ep, msg, sizeof(msg), NULL, peer, 9, &ctx), 0);
	cr_expect_not_null(g_mock.last_id, "no new connection");
	cr_expect_neq(g_mock.last_id, id);
	cr_expect_eq(fi_close(&ep->fid), 0);
}

/* The peer refuses: the waiting send fails with an error entry, not a
 * hang. */
Test(rdm, a_refused_connection_fails_its_waiting_send)
{
	struct fid_ep *ep = ep_up();
	fi_addr_t peer = peer_insert();
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	struct rdma_cm_id *id;
	char msg[4] = "abc";
	size_t i;
	int ctx;

	cr_assert_eq(fi_tsend(ep, msg, sizeof(msg), NULL, peer, 9, &ctx), 0);
	id = g_mock.last_id;
	mock_cm_event_of(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0);
	mock_cm_event_of(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0);
	mock_cm_event_of(id, RDMA_CM_EVENT_REJECTED, 28, NULL, 0);
	progress();
	cr_assert_eq(fi_cq_read(g_cq, &e, 1), -FI_EAVAIL);
	cr_assert_eq(fi_cq_readerr(g_cq, &err, 0), 1);
	cr_expect_eq(err.op_context, &ctx);
	cr_expect_eq(err.err, FI_ECONNREFUSED, "%s", fi_strerror(err.err));
	/* nothing went out but the drain behind the QP's flush */
	for (i = 0; i < g_mock.nsends; i++)
		cr_expect_eq(g_mock.sends[i].len, 0, "send %zu went out", i);
	cr_expect_eq(fi_close(&ep->fid), 0);
}

/* A peer's connection request, from 10.77.0.2 (the id rdma_cm gives:
 * freed by the endpoint when it takes it, else by the test). */
static struct rdma_cm_id *peer_request_rep(uint32_t claim_ip,
					   uint32_t peer_idx, uint32_t inc,
					   uint32_t replaces)
{
	struct sockaddr_in from = {
		.sin_family = AF_INET, .sin_port = htons(40000),
		.sin_addr.s_addr = htonl(0x0a4d0002),
	}, claim = {
		.sin_family = AF_INET, .sin_port = htons(7471),
		.sin_addr.s_addr = htonl(claim_ip),
	};
	struct rivet_wire_connreq req = {
		.magic = RIVET_CONN_MAGIC, .version = RIVET_WIRE_VERSION,
		.addr_len = sizeof(claim), .conn_idx = peer_idx,
		.replaces = { replaces }, .incarnation = inc,
	};
	struct rdma_cm_id *id = calloc(1, sizeof(*id));

	cr_assert_not_null(id);
	id->verbs = &g_mock.ctx;
	memcpy(&id->route.addr.dst_addr, &from, sizeof(from));
	memcpy(req.addr, &claim, sizeof(claim));
	g_mock.ids++;
	mock_cm_event_of(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &req,
			 sizeof(req));
	return id;
}

static struct rdma_cm_id *peer_request(uint32_t claim_ip, uint32_t peer_idx)
{
	return peer_request_rep(claim_ip, peer_idx, 0x1111, 0);
}

/* A peer connects to us: accepted (our index of the connection in the
 * answer), up when established, and a message on it completes a receive
 * whose source is the peer's AV address. */
Test(rdm, a_peer_connection_is_accepted_and_its_messages_attributed)
{
	struct fid_ep *ep = ep_up();
	struct rivet_rdm_ep *rep = rdm_ep(ep);
	fi_addr_t peer = peer_insert(), from = FI_ADDR_NOTAVAIL;
	struct rivet_wire_accept acc;
	struct rivet_wire_hdr *hdr;
	struct fi_cq_tagged_entry e;
	struct rdma_cm_id *id;
	char in[8] = { 0 };
	int ctx;

	id = peer_request(0x0a4d0002, 4);
	progress();
	cr_assert_eq(g_mock.accepts, 1, "not accepted");
	cr_assert_not_null(id->qp);
	cr_assert_geq(g_mock.conn_data_len, sizeof(acc));
	memcpy(&acc, g_mock.conn_data, sizeof(acc));
	cr_expect_eq(acc.magic, RIVET_CONN_MAGIC);
	cr_expect_eq(acc.conn_idx, 0, "our index of the connection");
	mock_cm_event_of(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	progress();
	cr_assert_eq(fi_trecv(ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 5, 0,
			      &ctx), 0);
	hdr = (void *)rep->rxbufs[0].data;
	*hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_EAGER,
		.flags = RIVET_WF_TAGGED, .conn_idx = acc.conn_idx, .tag = 5,
		.len = 3,
	};
	memcpy(hdr + 1, "abc", 3);
	mock_wc_qp(rxbuf(ep, 0), IBV_WC_SUCCESS, IBV_WC_RECV,
		   sizeof(*hdr) + 3, id->qp->qp_num);
	cr_assert_eq(fi_cq_readfrom(g_cq, &e, 1, &from), 1);
	cr_expect_eq(e.op_context, &ctx);
	cr_expect_eq(e.len, 3);
	cr_expect_eq(from, peer, "the sender's AV address");
	cr_expect_arr_eq(in, "abc", 3);
	cr_expect_eq(fi_close(&ep->fid), 0);
}

/* A request whose claimed endpoint name is on another node than the one
 * it came from is refused (no peer poses as another node's endpoint). */
Test(rdm, a_request_claiming_another_node_is_refused)
{
	struct fid_ep *ep = ep_up();
	struct rdma_cm_id *id;

	(void)peer_insert();
	id = peer_request(0x0a4d0009, 4);	/* claims 10.77.0.9 */
	progress();
	cr_expect_eq(g_mock.accepts, 0, "accepted");
	cr_assert_eq(g_mock.nrefused, 1, "not refused");
	cr_expect_eq(g_mock.refused[0], id);
	cr_expect_null(id->qp);
	free(id);
	g_mock.ids--;
	cr_expect_eq(fi_close(&ep->fid), 0);
}

static enum rivet_conn_state conn_state(struct fid_ep *ep, size_t i)
{
	cr_assert_lt(i, rdm_ep(ep)->nconns);
	return rdm_ep(ep)->conns[i]->state;
}

/* replaces[] closes a connection the same peer opened in the same
 * incarnation; another incarnation (a process that claims the peer's
 * name) or a request without one closes nothing (issue 38, A2). */
Test(rdm, replaces_closes_only_the_same_incarnations_connection)
{
	struct fid_ep *ep = ep_up();
	struct rdma_cm_id *id;

	(void)peer_insert();
	id = peer_request_rep(0x0a4d0002, 0, 0x1111, 0);
	progress();
	cr_assert_eq(g_mock.accepts, 1);
	mock_cm_event_of(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	progress();
	cr_assert_eq(conn_state(ep, 0), RIVET_CONN_UP);
	/* another incarnation, then none: ignored */
	(void)peer_request_rep(0x0a4d0002, 1, 0x2222, 1);
	(void)peer_request_rep(0x0a4d0002, 2, 0, 1);
	progress();
	cr_assert_eq(g_mock.accepts, 3);
	cr_expect_eq(conn_state(ep, 0), RIVET_CONN_UP,
		     "replaced by another incarnation");
	cr_expect_eq(g_mock.qp_errors, 0);
	/* the same incarnation: closed */
	(void)peer_request_rep(0x0a4d0002, 3, 0x1111, 1);
	progress();
	cr_expect_eq(conn_state(ep, 0), RIVET_CONN_CLOSED,
		     "not replaced by its own incarnation");
	cr_expect_eq(fi_close(&ep->fid), 0);
}

/* A connection we opened: the incarnation is the one the peer's accept
 * carried (the peer gave it up on its side, and reconnects). */
Test(rdm, replaces_closes_a_connection_we_opened_of_its_incarnation)
{
	struct fid_ep *ep = ep_up();
	fi_addr_t peer = peer_insert();
	char msg[4] = "abc";

	cr_assert_eq(fi_tsend(ep, msg, sizeof(msg), NULL, peer, 9, NULL), 0);
	peer_accepts(g_mock.last_id, 0);	/* incarnation 0x1111 */
	cr_assert_eq(conn_state(ep, 0), RIVET_CONN_UP);
	(void)peer_request_rep(0x0a4d0002, 1, 0x2222, 1);
	progress();
	cr_assert_eq(g_mock.accepts, 1);
	cr_expect_eq(conn_state(ep, 0), RIVET_CONN_UP,
		     "replaced by another incarnation");
	(void)peer_request_rep(0x0a4d0002, 2, 0x1111, 1);
	progress();
	cr_expect_eq(conn_state(ep, 0), RIVET_CONN_CLOSED,
		     "not replaced by its own incarnation");
	cr_expect_eq(fi_close(&ep->fid), 0);
}

/* An older peer's accept (12 bytes, no incarnation) still brings the
 * connection up. */
Test(rdm, an_older_peers_short_accept_is_taken)
{
	struct fid_ep *ep = ep_up();
	fi_addr_t peer = peer_insert();
	struct rivet_wire_accept acc = {
		.magic = RIVET_CONN_MAGIC, .version = RIVET_WIRE_VERSION,
		.conn_idx = 2,
	};
	struct rdma_cm_id *id;
	char msg[4] = "abc";

	cr_assert_eq(fi_tsend(ep, msg, sizeof(msg), NULL, peer, 9, NULL), 0);
	id = g_mock.last_id;
	mock_cm_event_of(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0);
	mock_cm_event_of(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0);
	mock_cm_event_of(id, RDMA_CM_EVENT_ESTABLISHED, 0, &acc,
			 RIVET_WIRE_ACCEPT_MIN);
	progress();
	cr_expect_eq(conn_state(ep, 0), RIVET_CONN_UP);
	cr_expect_eq(rdm_ep(ep)->conns[0]->peer_inc, 0);
	cr_expect_eq(fi_close(&ep->fid), 0);
}
