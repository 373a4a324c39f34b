// SPDX-License-Identifier: MIT
/*
 * A raw RDMA peer (librdmacm and verbs, no libfabric) that speaks rivet's
 * RDM wire protocol (prov/rivet/include/rivet_proto.h, docs/protocol.md)
 * badly, against rivet endpoints in the same process: a header naming
 * another peer's connection, an RTS whose segments do not cover its
 * message, FINs for rendezvous it never saw, a write with immediate data
 * to an endpoint without FI_RMA, and a second read of a finished
 * rendezvous.  rivet must attribute by QP, complete receives with success
 * only for bytes it placed, take FINs only from the connection of their
 * RTS, ignore what the endpoint did not ask for, and end a rendezvous's
 * exposure with it.  And a raw peer that leaves rivet's FIN unacknowledged:
 * on rxe (or with FI_RIVET_CONFIRM=1) the rendezvous receive waits for
 * the FIN, and fails with it.  A raw peer claiming a name on another
 * node's address is refused, a late handshake of a connection that
 * failed meanwhile does not bring it up again, a write whose post meets
 * its connection's failure is not lost, and a rendezvous send that its
 * peer never answers can be cancelled.  And access: the raw
 * peer's emulated atomics reach only regions and endpoints that allow
 * them (access 0 is no remote access; an endpoint without FI_ATOMIC or
 * FI_REMOTE_WRITE is no target), its RMA events count only for a region,
 * range and direction that an RDMA operation of theirs could have had,
 * and its short answer to a fetching atomic fails the fetch.  A rendezvous
 * from a buffer whose larger registration the cache holds exposes the
 * message's bytes only.  Each case
 * in a child of its own.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <rdma/fi_atomic.h>

#include "common/ft_rdm.h"
#include "rivet_atomic.h"
#include "rivet_proto.h"

#define RP_TAG 0x5241575000000000ULL	/* "RAWP" */
#define RP_BIG (64 * 1024)
#define RP_BUF (4 * RP_BIG)
#define RP_SLOT 4096			/* one message of ours */
#define RP_RECVS 16
#define RP_WAIT_MS 15000

/* The raw peer: one RC connection, a registered buffer (receive slots,
 * then send slots, then a read landing area). */
/* rp_qp_setup: a peer that posts no receive and lets its buffer be read */
static bool g_rp_norecv;
/* rp_qp_setup: a buffer that the peer may write */
static bool g_rp_writable;

struct rp {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	uint8_t *buf;
	struct ibv_mr *mr;
	uint32_t peer_idx;	/* the rivet endpoint's index of us */
	uint32_t next_send;
	struct ibv_wc stash[RP_RECVS];	/* receives polled while waiting
					 * for a send's completion */
	int nstash;
};

static uint8_t *rp_recv_slot(struct rp *r, int i)
{
	return r->buf + (size_t)i * RP_SLOT;
}

static uint8_t *rp_send_slot(struct rp *r)
{
	return r->buf + (size_t)(RP_RECVS + (r->next_send++ % 16)) * RP_SLOT;
}

static uint8_t *rp_landing(struct rp *r)
{
	return r->buf + 2 * RP_BIG;
}

/* An rdma_cm event of this kind, rivet progressing meanwhile. */
static int rp_cm_wait(struct rp *r, enum rdma_cm_event_type want,
		      struct rdma_cm_event *copy, uint8_t *pdata,
		      size_t pdata_len)
{
	uint64_t end = ft_now_ms() + RP_WAIT_MS;
	struct rdma_cm_event *ev;
	int got;

	do {
		ft_rdm_progress();
		if (rdma_get_cm_event(r->ch, &ev)) {
			usleep(1000);
			continue;
		}
		got = ev->event;
		if (copy)
			*copy = *ev;
		if (pdata && ev->param.conn.private_data)
			memcpy(pdata, ev->param.conn.private_data,
			       pdata_len < ev->param.conn.private_data_len ?
			       pdata_len : ev->param.conn.private_data_len);
		rdma_ack_cm_event(ev);
		if (got == (int)want)
			return 0;
		ft_info("rdma_cm event %s while waiting for %s",
			rdma_event_str(got), rdma_event_str(want));
		return -1;
	} while (ft_now_ms() < end);
	ft_info("no %s within %d ms", rdma_event_str(want), RP_WAIT_MS);
	return -1;
}

static int rp_post_recv(struct rp *r, int i)
{
	struct ibv_sge sge = { (uintptr_t)rp_recv_slot(r, i), RP_SLOT,
			       r->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(r->id->qp, &wr, &bad);
}

/* PD, CQ, QP and receives on r->id (resolved, or a request's id). */
static int rp_qp_setup(struct rp *r)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = RP_RECVS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int i;

	r->pd = ibv_alloc_pd(r->id->verbs);
	r->cq = r->pd ? ibv_create_cq(r->id->verbs, 128, NULL, NULL, 0) :
			NULL;
	r->buf = aligned_alloc(4096, RP_BUF);
	if (!r->cq || !r->buf)
		return -1;
	memset(r->buf, 0, RP_BUF);
	r->mr = ibv_reg_mr(r->pd, r->buf, RP_BUF, IBV_ACCESS_LOCAL_WRITE |
			   (g_rp_norecv ? IBV_ACCESS_REMOTE_READ : 0) |
			   (g_rp_writable ? IBV_ACCESS_REMOTE_WRITE : 0));
	attr.send_cq = attr.recv_cq = r->cq;
	if (!r->mr || rdma_create_qp(r->id, r->pd, &attr))
		return -1;
	for (i = 0; !g_rp_norecv && i < RP_RECVS; i++)
		if (rp_post_recv(r, i))
			return -1;
	return 0;
}

static void rp_conn_param(struct rdma_conn_param *p, const void *data,
			  size_t len)
{
	memset(p, 0, sizeof(*p));
	p->private_data = data;
	p->private_data_len = (uint8_t)len;
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

static int rp_channel(struct rp *r)
{
	memset(r, 0, sizeof(*r));
	r->ch = rdma_create_event_channel();
	if (!r->ch)
		return -1;
	return fcntl(r->ch->fd, F_SETFL,
		     fcntl(r->ch->fd, F_GETFL) | O_NONBLOCK);
}

/* The raw peer's incarnation (rivet_wire_connreq): one process. */
#define RP_INCARNATION 0x72617770u

/* Connects to a rivet endpoint named dst, claiming to be fake, naming
 * the endpoint's connection replaces - 1 as one it replaces (0: none). */
static int rp_connect_rep(struct rp *r, const struct sockaddr_in *dst,
			  const struct sockaddr_in *fake, uint32_t replaces)
{
	struct rivet_wire_connreq req = {
		.magic = RIVET_CONN_MAGIC, .version = RIVET_WIRE_VERSION,
		.addr_len = sizeof(*fake), .conn_idx = 0,
		.replaces = { replaces }, .incarnation = RP_INCARNATION,
	};
	struct rivet_wire_accept acc = { 0 };
	struct sockaddr_in src = *dst;
	struct rdma_conn_param p;

	if (rp_channel(r) ||
	    rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP))
		return -1;
	src.sin_port = 0;
	memcpy(req.addr, fake, sizeof(*fake));
	if (rdma_resolve_addr(r->id, (struct sockaddr *)&src,
			      (struct sockaddr *)dst, 2000) ||
	    rp_cm_wait(r, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, NULL, 0) ||
	    rdma_resolve_route(r->id, 2000) ||
	    rp_cm_wait(r, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, NULL, 0) ||
	    rp_qp_setup(r))
		return -1;
	rp_conn_param(&p, &req, sizeof(req));
	if (rdma_connect(r->id, &p) ||
	    rp_cm_wait(r, RDMA_CM_EVENT_ESTABLISHED, NULL, (uint8_t *)&acc,
		       sizeof(acc)))
		return -1;
	if (acc.magic != RIVET_CONN_MAGIC)
		return -1;
	r->peer_idx = acc.conn_idx;
	return 0;
}

static int rp_connect(struct rp *r, const struct sockaddr_in *dst,
		      const struct sockaddr_in *fake)
{
	return rp_connect_rep(r, dst, fake, 0);
}

/* Listens on addr and accepts the first rivet connection request. */
static int rp_listen(struct rp *r, const struct sockaddr_in *addr)
{
	if (rp_channel(r) ||
	    rdma_create_id(r->ch, &r->listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(r->listen, (struct sockaddr *)addr) ||
	    rdma_listen(r->listen, 4))
		return -1;
	return 0;
}

static int rp_accept(struct rp *r)
{
	struct rivet_wire_connreq req = { 0 };
	struct rivet_wire_accept acc = {
		.magic = RIVET_CONN_MAGIC, .version = RIVET_WIRE_VERSION,
		.conn_idx = 0,
	};
	struct rdma_cm_event ev;
	struct rdma_conn_param p;

	if (rp_cm_wait(r, RDMA_CM_EVENT_CONNECT_REQUEST, &ev, (uint8_t *)&req,
		       sizeof(req)))
		return -1;
	r->id = ev.id;
	r->peer_idx = req.conn_idx;
	if (rp_qp_setup(r))
		return -1;
	rp_conn_param(&p, &acc, sizeof(acc));
	if (rdma_accept(r->id, &p) ||
	    rp_cm_wait(r, RDMA_CM_EVENT_ESTABLISHED, NULL, NULL, 0))
		return -1;
	return 0;
}

static void rp_close(struct rp *r)
{
	if (r->id && r->id->qp)
		rdma_destroy_qp(r->id);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->id)
		rdma_destroy_id(r->id);
	if (r->listen)
		rdma_destroy_id(r->listen);
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* One work completion of ours (send side, or a receive when want_recv),
 * rivet progressing meanwhile; its status, or -1 on a time-out. */
static int rp_poll(struct rp *r, bool want_recv, struct ibv_wc *out)
{
	uint64_t end = ft_now_ms() + RP_WAIT_MS;
	struct ibv_wc wc;

	if (want_recv && r->nstash) {
		wc = r->stash[0];
		memmove(r->stash, r->stash + 1, --r->nstash * sizeof(wc));
		if (out)
			*out = wc;
		return wc.status;
	}
	do {
		ft_rdm_progress();
		if (ibv_poll_cq(r->cq, 1, &wc) <= 0)
			continue;
		if (!want_recv == !(wc.opcode & IBV_WC_RECV) ||
		    wc.status != IBV_WC_SUCCESS) {
			if (out)
				*out = wc;
			return wc.status;
		}
		if (!want_recv && r->nstash < RP_RECVS)
			r->stash[r->nstash++] = wc;	/* for rp_poll(true) */
	} while (ft_now_ms() < end);
	return -1;
}

static int rp_post(struct rp *r, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(r->id->qp, wr, &bad))
		return -1;
	return rp_poll(r, false, NULL);
}

/* A message of ours: header (conn_idx as given) and body. */
static int rp_send(struct rp *r, const struct rivet_wire_hdr *hdr,
		   const void *body, size_t body_len)
{
	uint8_t *slot = rp_send_slot(r);
	struct ibv_sge sge = { (uintptr_t)slot,
			       (uint32_t)(sizeof(*hdr) + body_len),
			       r->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };

	memcpy(slot, hdr, sizeof(*hdr));
	memcpy(slot + sizeof(*hdr), body, body_len);
	return rp_post(r, &wr);
}

static int rp_read(struct rp *r, uint64_t raddr, uint32_t rkey, size_t len)
{
	struct ibv_sge sge = { (uintptr_t)rp_landing(r), (uint32_t)len,
			       r->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ };

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return rp_post(r, &wr);
}

/* ---- rivet endpoints ---------------------------------------------------- */

struct rp_env {
	struct ft_rdm_pair p;	/* a: the victim, b: the honest peer */
	struct ft_buf vbuf, cbuf;
	struct rp raw;
};

static int rp_env_open(struct rp_env *env, uint64_t caps, uint64_t caccess)
{
	int ret;

	memset(env, 0, sizeof(*env));
	ret = ft_rdm_pair_open(&env->p, caps);
	ret = ret ? ret : ft_buf_alloc(env->p.fab.domain, RP_BUF,
				       FI_SEND | FI_RECV, &env->vbuf);
	ret = ret ? ret : ft_buf_alloc(env->p.fab.domain, RP_BUF, caccess,
				       &env->cbuf);
	if (ret)
		ft_fail("rawpeer_setup", "%s", fi_strerror(-ret));
	return ret;
}

static void rp_env_close(struct rp_env *env)
{
	rp_close(&env->raw);
	ft_buf_free(&env->vbuf);
	ft_buf_free(&env->cbuf);
	ft_rdm_pair_close(&env->p);
}

static const struct sockaddr_in *rp_name(const struct ft_rdm_ep *ep)
{
	return (const struct sockaddr_in *)ep->name;
}

/* An address on the same IP that no endpoint has. */
static struct sockaddr_in rp_fake(const struct ft_rdm_ep *ep, uint16_t port)
{
	struct sockaddr_in a = *rp_name(ep);

	a.sin_port = htons(port);
	return a;
}

static int rp_wait(const char *name, struct fid_cq *cq, void *ctx,
		   struct ft_comp *c)
{
	int ret = ft_rdm_wait(cq, ctx, c, RP_WAIT_MS);

	if (ret)
		ft_fail(name, "no completion within %d ms", RP_WAIT_MS);
	return ret;
}

/* The raw peer listens on an address of b's host that no endpoint has,
 * and b's AV names it (*c2raw): b's next operation there connects to it. */
static int rp_listen_for_b(struct rp_env *env, const char *name,
			   fi_addr_t *c2raw)
{
	struct sockaddr_in me = rp_fake(&env->p.b, 0);

	me.sin_port = htons((uint16_t)(40000 + getpid() % 20000));
	if (!ft_check(!rp_listen(&env->raw, &me), name, "rdma_listen: %s",
		      strerror(errno)))
		return -1;
	return ft_rdm_av_insert(env->p.b.av, &me, c2raw) ? -1 : 0;
}

/* ---- cases ------------------------------------------------------------ */

/* The raw peer's message names the honest peer's connection: rivet
 * attributes it by the QP it came on, so it is not the honest peer's. */
static void rp_attrib_child(void)
{
	const char *name = "rawpeer_source_by_qp";
	struct sockaddr_in fake;
	struct rivet_wire_hdr hdr;
	struct fi_context2 ctx;
	struct ft_comp c;
	struct rp_env env;
	uint64_t tag = RP_TAG | 1;
	ssize_t ret;

	if (rp_env_open(&env, FT_RDM_CAPS, FI_SEND | FI_RECV))
		goto out;
	/* the honest peer's connection to v is v's connection 0 */
	ret = fi_trecv(env.p.a.ep, env.vbuf.ptr, 64, env.vbuf.desc,
		       FI_ADDR_UNSPEC, tag, 0, &ctx);
	ret = ret ? ret : FT_RDM_POST(fi_tinject(env.p.b.ep, env.cbuf.ptr, 8,
						 env.p.b2a, tag));
	if (!ft_check(!ret, name, "setup: %zd", ret) ||
	    rp_wait(name, env.p.a.cq, &ctx, &c) ||
	    !ft_check(c.src == env.p.a2b, name, "honest message from %" PRIu64
		      ", want %" PRIu64, c.src, env.p.a2b))
		goto out;
	fake = rp_fake(&env.p.a, 9);
	if (!ft_check(!rp_connect(&env.raw, rp_name(&env.p.a), &fake), name,
		      "raw connection to v failed"))
		goto out;
	ret = fi_trecv(env.p.a.ep, env.vbuf.ptr, 64, env.vbuf.desc,
		       FI_ADDR_UNSPEC, tag, 0, &ctx);
	if (!ft_check(!ret, name, "fi_trecv: %zd", ret))
		goto out;
	hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_EAGER,
		.flags = RIVET_WF_TAGGED, .tag = tag, .len = 8,
		.conn_idx = 0,	/* not ours: the honest peer's */
	};
	if (!ft_check(!rp_send(&env.raw, &hdr, "spoofed!", 8), name,
		      "raw send failed"))
		goto out;
	if (rp_wait(name, env.p.a.cq, &ctx, &c))
		goto out;
	if (ft_check(c.src != env.p.a2b, name, "the raw peer's message was "
		     "attributed to the honest peer (fi_addr %" PRIu64 ")",
		     c.src))
		ft_ok(name);
out:
	rp_env_close(&env);
}

/* RTSs whose segments are empty or shorter than the message: the receive
 * fails (nothing is reported placed), and the raw peer gets a FIN with a
 * positive error status. */
static void rp_rts_one(struct rp_env *env, const char *name, uint32_t nsegs,
		       uint32_t seg_len)
{
	struct rivet_wire_hdr hdr = {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_RTS,
		.flags = RIVET_WF_TAGGED, .tag = RP_TAG | 2, .len = RP_BIG,
		.conn_idx = env->raw.peer_idx,
	};
	struct rivet_wire_rts rts = { .send_id = 77, .nsegs = nsegs };
	const struct rivet_wire_fin *fin;
	struct fi_context2 ctx;
	struct ibv_wc wc;
	struct ft_comp c;
	uint8_t *msg;
	ssize_t ret;

	rts.segs[0] = (struct rivet_wire_seg) {
		(uintptr_t)env->raw.buf, env->raw.mr->rkey, seg_len };
	ret = fi_trecv(env->p.a.ep, env->vbuf.ptr, RP_BIG, env->vbuf.desc,
		       FI_ADDR_UNSPEC, RP_TAG | 2, 0, &ctx);
	if (!ft_check(!ret, name, "fi_trecv: %zd", ret) ||
	    !ft_check(!rp_send(&env->raw, &hdr, &rts, sizeof(rts)), name,
		      "raw send failed") ||
	    rp_wait(name, env->p.a.cq, &ctx, &c))
		return;
	if (!ft_check(c.err != 0, name, "receive of an RTS with %u segment(s) "
		      "of %u bytes for %d bytes succeeded (len %zu)", nsegs,
		      seg_len, RP_BIG, c.len))
		return;
	ft_check(c.prov_errno != 0 && !strstr(c.errstr, "uccess"), name,
		 "no reason: %s", c.errstr);
	if (!ft_check(!rp_poll(&env->raw, true, &wc), name, "no FIN came"))
		return;
	msg = rp_recv_slot(&env->raw, (int)wc.wr_id);
	fin = (const void *)(msg + sizeof(struct rivet_wire_hdr));
	ft_check(((struct rivet_wire_hdr *)msg)->op == RIVET_OP_FIN &&
		 fin->send_id == 77 && fin->status > 0, name,
		 "FIN op %u id %" PRIu64 " status %d (want a positive error)",
		 ((struct rivet_wire_hdr *)msg)->op, fin->send_id,
		 fin->status);
	rp_post_recv(&env->raw, (int)wc.wr_id);
}

static void rp_rts_child(void)
{
	struct sockaddr_in fake;
	struct rp_env env;
	int failed = ft_failures();

	if (rp_env_open(&env, FT_RDM_CAPS, FI_SEND | FI_RECV))
		goto out;
	fake = rp_fake(&env.p.a, 9);
	if (!ft_check(!rp_connect(&env.raw, rp_name(&env.p.a), &fake),
		      "rawpeer_rts", "raw connection to v failed"))
		goto out;
	rp_rts_one(&env, "rawpeer_rts_no_segments", 0, 0);
	rp_rts_one(&env, "rawpeer_rts_short_segments", 1, 100);
	if (ft_failures() == failed)
		ft_ok("rawpeer_rts");
out:
	rp_env_close(&env);
}

/* FINs from the raw peer for every send id a rivet endpoint could have:
 * the honest peer's rendezvous to v stays pending, then completes. */
static void rp_fin_child(void)
{
	const char *name = "rawpeer_foreign_fin";
	struct rivet_wire_hdr hdr = {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_FIN,
	};
	struct rivet_wire_fin fin = { .status = -5 };
	struct fi_context2 sctx, rctx;
	struct sockaddr_in fake;
	struct ft_comp c;
	struct rp_env env;
	uint32_t idx, gen;
	ssize_t ret;

	if (rp_env_open(&env, FT_RDM_CAPS, FI_SEND | FI_RECV))
		goto out;
	ret = FT_RDM_POST(fi_tsend(env.p.b.ep, env.cbuf.ptr, RP_BIG,
				   env.cbuf.desc, env.p.b2a, RP_TAG | 3,
				   &sctx));
	fake = rp_fake(&env.p.b, 9);
	if (!ft_check(!ret, name, "fi_tsend: %zd", ret) ||
	    !ft_check(!rp_connect(&env.raw, rp_name(&env.p.b), &fake), name,
		      "raw connection to c failed"))
		goto out;
	hdr.conn_idx = env.raw.peer_idx;
	for (idx = 0; idx < env.p.fab.info->tx_attr->size; idx++)
		for (gen = 0; gen < 2; gen++) {
			fin.send_id = ((uint64_t)gen << 32) | idx;
			if (rp_send(&env.raw, &hdr, &fin, sizeof(fin))) {
				ft_fail(name, "raw send failed");
				goto out;
			}
		}
	if (!ft_check(ft_rdm_wait(env.p.b.cq, &sctx, &c, 300) == -FI_ETIMEDOUT,
		      name, "a foreign FIN completed the send: %s",
		      ft_comp_str(&c)))
		goto out;
	ret = fi_trecv(env.p.a.ep, env.vbuf.ptr, RP_BIG, env.vbuf.desc,
		       FI_ADDR_UNSPEC, RP_TAG | 3, 0, &rctx);
	if (ft_check(!ret, name, "fi_trecv: %zd", ret) &&
	    !rp_wait(name, env.p.a.cq, &rctx, &c) &&
	    ft_check(!c.err && c.len == RP_BIG, name, "receive: %s",
		     ft_comp_str(&c)) &&
	    !rp_wait(name, env.p.b.cq, &sctx, &c) &&
	    ft_check(!c.err, name, "send: %s", ft_comp_str(&c)))
		ft_ok(name);
out:
	rp_env_close(&env);
}

/* A zero-byte write with immediate data to an endpoint without FI_RMA:
 * not reported as a remote write. */
static void rp_imm_child(void)
{
	const char *name = "rawpeer_write_imm_without_rma";
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .imm_data = htonl(0x1234) };
	struct sockaddr_in fake;
	struct ft_comp c;
	struct rp_env env;
	int ret;

	if (rp_env_open(&env, FI_MSG | FI_TAGGED, FI_SEND | FI_RECV))
		goto out;
	fake = rp_fake(&env.p.a, 9);
	if (!ft_check(!rp_connect(&env.raw, rp_name(&env.p.a), &fake), name,
		      "raw connection to v failed"))
		goto out;
	if (!ft_check(!rp_post(&env.raw, &wr), name, "raw write failed"))
		goto out;
	ret = ft_rdm_wait(env.p.a.cq, NULL, &c, 500);
	if (ft_check(ret == -FI_ETIMEDOUT, name, "the endpoint reported %s",
		     ft_comp_str(&c)))
		ft_ok(name);
out:
	rp_env_close(&env);
}

/* The raw peer receives a rendezvous from c's region registered for
 * FI_SEND only: it can read the message's bytes while the send is in
 * flight, and nothing once the send has completed. */
static void rp_exposure_child(void)
{
	const char *name = "rawpeer_rendezvous_exposure";
	const struct rivet_wire_rts *rts;
	struct rivet_wire_hdr hdr;
	struct rivet_wire_fin fin;
	struct fi_context2 sctx;
	struct ibv_wc wc;
	struct ft_comp c;
	struct rp_env env;
	fi_addr_t c2raw;
	uint8_t *msg;
	ssize_t ret;
	size_t i;

	if (rp_env_open(&env, FT_RDM_CAPS, FI_SEND))
		goto out;
	if (rp_listen_for_b(&env, name, &c2raw))
		goto out;
	for (i = 0; i < RP_BIG; i++)
		((uint8_t *)env.cbuf.ptr)[i] = (uint8_t)(i * 3);
	ret = FT_RDM_POST(fi_tsend(env.p.b.ep, env.cbuf.ptr, RP_BIG,
				   env.cbuf.desc, c2raw, RP_TAG | 4, &sctx));
	if (!ft_check(!ret, name, "fi_tsend: %zd", ret) ||
	    !ft_check(!rp_accept(&env.raw), name, "accept failed") ||
	    !ft_check(!rp_poll(&env.raw, true, &wc), name, "no RTS came"))
		goto out;
	msg = rp_recv_slot(&env.raw, (int)wc.wr_id);
	rts = (const void *)(msg + sizeof(hdr));
	if (!ft_check(((struct rivet_wire_hdr *)msg)->op == RIVET_OP_RTS &&
		      rts->nsegs == 1 && rts->segs[0].len == RP_BIG, name,
		      "not the RTS expected"))
		goto out;
	if (!ft_check(!rp_read(&env.raw, rts->segs[0].addr, rts->segs[0].rkey,
			       RP_BIG), name, "reading the message failed"))
		goto out;
	for (i = 0; i < RP_BIG; i++)
		if (rp_landing(&env.raw)[i] != (uint8_t)(i * 3))
			break;
	if (!ft_check(i == RP_BIG, name, "byte %zu read wrong", i))
		goto out;
	hdr = (struct rivet_wire_hdr) { .version = RIVET_WIRE_VERSION,
					.op = RIVET_OP_FIN,
					.conn_idx = env.raw.peer_idx };
	fin = (struct rivet_wire_fin) { .send_id = rts->send_id };
	if (!ft_check(!rp_send(&env.raw, &hdr, &fin, sizeof(fin)), name,
		      "FIN failed") ||
	    rp_wait(name, env.p.b.cq, &sctx, &c) ||
	    !ft_check(!c.err, name, "send: %s", ft_comp_str(&c)))
		goto out;
	/* the send is done: its bytes are no one's to read any more */
	ret = rp_read(&env.raw, rts->segs[0].addr, rts->segs[0].rkey, 64);
	if (ft_check(ret != IBV_WC_SUCCESS, name, "the region stayed readable "
		     "after the send completed"))
		ft_ok(name);
out:
	rp_env_close(&env);
}

/* rp_cached_child: waits for an RTS for len bytes at addr; its key */
static int rp_rts_for(struct rp *r, const char *name, const void *addr,
		      size_t len, struct rivet_wire_rts *out)
{
	struct ibv_wc wc;
	const uint8_t *msg;

	if (!ft_check(!rp_poll(r, true, &wc), name, "no RTS came"))
		return -1;
	msg = rp_recv_slot(r, (int)wc.wr_id);
	memcpy(out, msg + sizeof(struct rivet_wire_hdr), sizeof(*out));
	rp_post_recv(r, (int)wc.wr_id);
	return ft_check(((const struct rivet_wire_hdr *)msg)->op ==
			RIVET_OP_RTS && out->nsegs == 1 &&
			out->segs[0].addr == (uintptr_t)addr &&
			out->segs[0].len == len, name,
			"not the RTS expected") ? 0 : -1;
}

/* rp_cached_child: a FIN that completes the rendezvous of rts */
static int rp_fin_for(struct rp_env *env, const char *name,
		      const struct rivet_wire_rts *rts, void *ctx)
{
	struct rivet_wire_hdr hdr = { .version = RIVET_WIRE_VERSION,
				      .op = RIVET_OP_FIN,
				      .conn_idx = env->raw.peer_idx };
	struct rivet_wire_fin fin = { .send_id = rts->send_id };
	struct ft_comp c;

	if (!ft_check(!rp_send(&env->raw, &hdr, &fin, sizeof(fin)), name,
		      "FIN failed") ||
	    rp_wait(name, env->p.b.cq, ctx, &c) ||
	    !ft_check(!c.err, name, "send: %s", ft_comp_str(&c)))
		return -1;
	return 0;
}

/* Rendezvous sends from a buffer without a descriptor, whose registration
 * the cache keeps: after one of the whole buffer, one of a part of it
 * hands the peer a key to that part only (not the cached registration of
 * the whole), and the next send of the same part finds the part's. */
static void rp_cached_child(void)
{
	const char *name = "rawpeer_cached_rendezvous_exposes_the_message";
	const size_t off = RP_BIG / 4, len = RP_BIG / 4;
	struct rivet_wire_rts whole, part, again;
	struct fi_context2 sctx;
	struct rp_env env;
	fi_addr_t c2raw;
	uint8_t *buf = NULL;
	ssize_t ret;
	size_t i;

	if (rp_env_open(&env, FT_RDM_CAPS, FI_SEND))
		goto out;
	buf = aligned_alloc(4096, RP_BIG);
	if (!ft_check(buf != NULL, name, "out of memory") ||
	    rp_listen_for_b(&env, name, &c2raw))
		goto out;
	for (i = 0; i < RP_BIG; i++)
		buf[i] = (uint8_t)(i * 7);
	ret = FT_RDM_POST(fi_tsend(env.p.b.ep, buf, RP_BIG, NULL, c2raw,
				   RP_TAG | 5, &sctx));
	if (!ft_check(!ret, name, "fi_tsend: %zd", ret) ||
	    !ft_check(!rp_accept(&env.raw), name, "accept failed") ||
	    rp_rts_for(&env.raw, name, buf, RP_BIG, &whole) ||
	    rp_fin_for(&env, name, &whole, &sctx))
		goto out;
	ret = FT_RDM_POST(fi_tsend(env.p.b.ep, buf + off, len, NULL, c2raw,
				   RP_TAG | 6, &sctx));
	if (!ft_check(!ret, name, "fi_tsend: %zd", ret) ||
	    rp_rts_for(&env.raw, name, buf + off, len, &part) ||
	    !ft_check(!rp_read(&env.raw, part.segs[0].addr, part.segs[0].rkey,
			       len), name, "reading the message failed") ||
	    !ft_check(rp_landing(&env.raw)[len - 1] ==
		      (uint8_t)((off + len - 1) * 7), name,
		      "the message read wrong") ||
	    rp_fin_for(&env, name, &part, &sctx))
		goto out;
	ret = FT_RDM_POST(fi_tsend(env.p.b.ep, buf + off, len, NULL, c2raw,
				   RP_TAG | 7, &sctx));
	if (!ft_check(!ret, name, "fi_tsend: %zd", ret) ||
	    rp_rts_for(&env.raw, name, buf + off, len, &again) ||
	    !ft_check(again.segs[0].rkey == part.segs[0].rkey, name,
		      "the part's registration was not cached (key 0x%x, "
		      "then 0x%x): the case tests nothing",
		      part.segs[0].rkey, again.segs[0].rkey))
		goto out;
	/* the bytes before the message, with the message's key */
	ret = rp_read(&env.raw, (uintptr_t)buf, again.segs[0].rkey, 64);
	if (ft_check(ret != IBV_WC_SUCCESS, name, "the key of a %zu-byte "
		     "message reached the %d bytes around it", len, RP_BIG))
		ft_ok(name);
out:
	rp_env_close(&env);
	free(buf);
}

/* A peer that never answers a rendezvous (no FIN) must not pin the send
 * and its region for ever: fi_cancel of the send completes it with
 * FI_ECANCELED, its bytes are no one's to read any more, and the
 * application's region can be closed. */
static void rp_cancel_rndv_child(void)
{
	const char *name = "rawpeer_cancel_unanswered_rendezvous";
	const struct rivet_wire_rts *rts;
	struct fi_context2 sctx;
	struct ibv_wc wc;
	struct ft_comp c;
	struct rp_env env;
	fi_addr_t c2raw;
	uint8_t *msg;
	ssize_t ret;
	int rc;

	if (rp_env_open(&env, FT_RDM_CAPS, FI_SEND) ||
	    rp_listen_for_b(&env, name, &c2raw))
		goto out;
	memset(env.cbuf.ptr, 0x3c, RP_BIG);
	ret = FT_RDM_POST(fi_tsend(env.p.b.ep, env.cbuf.ptr, RP_BIG,
				   env.cbuf.desc, c2raw, RP_TAG | 9, &sctx));
	if (!ft_check(!ret, name, "fi_tsend: %zd", ret) ||
	    !ft_check(!rp_accept(&env.raw), name, "accept failed") ||
	    !ft_check(!rp_poll(&env.raw, true, &wc), name, "no RTS came"))
		goto out;
	msg = rp_recv_slot(&env.raw, (int)wc.wr_id);
	rts = (const void *)(msg + sizeof(struct rivet_wire_hdr));
	if (!ft_check(((struct rivet_wire_hdr *)msg)->op == RIVET_OP_RTS &&
		      rts->nsegs == 1, name, "not the RTS expected"))
		goto out;
	/* no FIN: the send waits; the application gives up on it */
	if (!ft_check(ft_rdm_wait(env.p.b.cq, &sctx, &c, 300) ==
		      -FI_ETIMEDOUT, name, "the send completed without a FIN"))
		goto out;
	ret = fi_cancel(&env.p.b.ep->fid, &sctx);
	if (!ft_check(!ret, name, "fi_cancel of the send: %s",
		      fi_strerror((int)-ret)) ||
	    rp_wait(name, env.p.b.cq, &sctx, &c) ||
	    !ft_check(c.err == FI_ECANCELED, name, "the send: %s",
		      ft_comp_str(&c)))
		goto out;
	if (!ft_check(rp_read(&env.raw, rts->segs[0].addr, rts->segs[0].rkey,
			      64) != IBV_WC_SUCCESS, name, "the message "
		      "stayed readable after its send was cancelled"))
		goto out;
	rc = fi_close(&env.cbuf.mr->fid);
	if (!rc)
		env.cbuf.mr = NULL;
	ft_check(!rc, name, "fi_close of the send's region: %s",
		 fi_strerror(-rc));
out:
	rp_env_close(&env);
}

/* rxe can report a failed RDMA read as successful and fail only what
 * follows it (FI_RIVET_CONFIRM): a rendezvous receive is reported once
 * the FIN that ends it is acknowledged.  The raw peer sends a good RTS but
 * posts no receive, so rivet reads the message and its FIN waits (RNR):
 * the receive must not succeed meanwhile; when the raw peer disconnects,
 * the FIN fails, and so does the receive, with a reason. */
static void rp_confirm_child(void)
{
	const char *name = "rawpeer_rendezvous_confirmed_by_fin";
	struct rivet_wire_hdr hdr = {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_RTS,
		.flags = RIVET_WF_TAGGED, .tag = RP_TAG | 6, .len = RP_BIG,
	};
	struct rivet_wire_rts rts = { .send_id = 78, .nsegs = 1 };
	struct sockaddr_in fake;
	struct fi_context2 ctx;
	struct ft_comp c;
	struct rp_env env;
	ssize_t ret;
	size_t i;

	g_rp_norecv = true;
	if (rp_env_open(&env, FT_RDM_CAPS, FI_SEND | FI_RECV))
		goto out;
	fake = rp_fake(&env.p.a, 9);
	if (!ft_check(!rp_connect(&env.raw, rp_name(&env.p.a), &fake), name,
		      "raw connection to v failed"))
		goto out;
	for (i = 0; i < RP_BIG; i++)
		env.raw.buf[i] = (uint8_t)(i * 5 + 1);
	hdr.conn_idx = env.raw.peer_idx;
	rts.segs[0] = (struct rivet_wire_seg) {
		(uintptr_t)env.raw.buf, env.raw.mr->rkey, RP_BIG };
	ret = fi_trecv(env.p.a.ep, env.vbuf.ptr, RP_BIG, env.vbuf.desc,
		       FI_ADDR_UNSPEC, RP_TAG | 6, 0, &ctx);
	if (!ft_check(!ret, name, "fi_trecv: %zd", ret) ||
	    !ft_check(!rp_send(&env.raw, &hdr, &rts, sizeof(rts)), name,
		      "raw send failed"))
		goto out;
	/* rivet reads the message and sends its FIN, which nobody takes */
	ret = ft_rdm_wait(env.p.a.cq, &ctx, &c, 3000);
	if (!ret && !ft_check(c.err, name, "the receive succeeded before its "
			      "FIN was acknowledged"))
		goto out;
	if (ret) {
		/* the message was read: only the FIN holds the receive */
		ft_check(!memcmp(env.vbuf.ptr, env.raw.buf, RP_BIG), name,
			 "the message was not read within 3 s");
		rdma_disconnect(env.raw.id);
		if (rp_wait(name, env.p.a.cq, &ctx, &c) ||
		    !ft_check(c.err, name, "the receive succeeded although "
			      "its FIN failed"))
			goto out;
	}
	if (ft_check(c.prov_errno != 0 && !strstr(c.errstr, "uccess"), name,
		     "no reason: %s", c.errstr))
		ft_ok(name);
out:
	rp_env_close(&env);
}

/* ---- identity --------------------------------------------------------- */

/* A raw peer that claims an endpoint name on another node's address: the
 * victim refuses the connection; on its own address, it is taken. */
static void rp_claim_child(void)
{
	const char *name = "rawpeer_claim_other_node";
	struct sockaddr_in fake;
	struct rp_env env;
	uint8_t *ip;

	if (rp_env_open(&env, FT_RDM_CAPS, FI_SEND | FI_RECV))
		goto out;
	fake = rp_fake(&env.p.a, 9);
	ip = (uint8_t *)&fake.sin_addr;
	ip[3] = (uint8_t)(ip[3] + 100);	/* another node of the subnet */
	if (!ft_check(rp_connect(&env.raw, rp_name(&env.p.a), &fake), name,
		      "a connection claiming %s was accepted",
		      inet_ntoa(fake.sin_addr)))
		goto out;
	rp_close(&env.raw);
	fake = rp_fake(&env.p.a, 9);
	if (ft_check(!rp_connect(&env.raw, rp_name(&env.p.a), &fake), name,
		     "a connection claiming its own address was refused"))
		ft_ok(name);
out:
	rp_env_close(&env);
}

/* A connection the endpoint accepted, then failed (its peer replaced
 * it), whose handshake ends only after its QP was released (the raw
 * peer holds back its last message, RTU, with a QP of its own making):
 * the late RDMA_CM_EVENT_ESTABLISHED must not bring it up again (a
 * closed connection on a QP in the error state, or no QP at all). */
static void rp_established_child(void)
{
	const char *name = "rawpeer_established_after_close";
	struct rivet_wire_connreq req = {
		.magic = RIVET_CONN_MAGIC, .version = RIVET_WIRE_VERSION,
		.addr_len = sizeof(struct sockaddr_in),
		.incarnation = RP_INCARNATION,	/* the replacing one's */
	};
	struct ibv_qp_init_attr qia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rivet_wire_accept acc = { 0 };
	struct sockaddr_in fake, src;
	struct ibv_qp *qp = NULL;
	struct ibv_qp_attr qa;
	struct rdma_conn_param p;
	struct rp held, *r = &held;
	struct rp_env env;
	struct ft_comp c;
	uint64_t end;
	int mask, ok = 0;

	memset(&held, 0, sizeof(held));
	if (rp_env_open(&env, FT_RDM_CAPS, FI_SEND | FI_RECV))
		goto out;
	fake = rp_fake(&env.p.a, 9);
	memcpy(req.addr, &fake, sizeof(fake));
	src = *rp_name(&env.p.a);
	src.sin_port = 0;
	/* the held connection: its QP ours, so that rdma_cm waits for
	 * rdma_establish before it sends RTU */
	if (rp_channel(r) || rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(r->id, (struct sockaddr *)&src,
			      (struct sockaddr *)rp_name(&env.p.a), 2000) ||
	    rp_cm_wait(r, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, NULL, 0) ||
	    rdma_resolve_route(r->id, 2000) ||
	    rp_cm_wait(r, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, NULL, 0))
		goto fail;
	r->pd = ibv_alloc_pd(r->id->verbs);
	r->cq = r->pd ? ibv_create_cq(r->id->verbs, 16, NULL, NULL, 0) : NULL;
	qia.send_cq = qia.recv_cq = r->cq;
	qp = r->cq ? ibv_create_qp(r->pd, &qia) : NULL;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	if (!qp || rdma_init_qp_attr(r->id, &qa, &mask) ||
	    ibv_modify_qp(qp, &qa, mask))
		goto fail;
	rp_conn_param(&p, &req, sizeof(req));
	p.qp_num = qp->qp_num;
	if (rdma_connect(r->id, &p) ||
	    rp_cm_wait(r, RDMA_CM_EVENT_CONNECT_RESPONSE, NULL,
		       (uint8_t *)&acc, sizeof(acc)) ||
	    acc.magic != RIVET_CONN_MAGIC)
		goto fail;
	/* a second connection replaces it: the endpoint fails the held one */
	if (!ft_check(!rp_connect_rep(&env.raw, rp_name(&env.p.a), &fake,
				      acc.conn_idx + 1), name,
		      "the replacing connection"))
		goto out;
	/* its QP is released some 5 s after it drained */
	end = ft_now_ms() + 6500;
	while (ft_now_ms() < end) {
		ft_rdm_progress();
		usleep(1000);
	}
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	if (rdma_init_qp_attr(r->id, &qa, &mask) ||
	    ibv_modify_qp(qp, &qa, mask))
		goto fail;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	if (rdma_init_qp_attr(r->id, &qa, &mask) ||
	    ibv_modify_qp(qp, &qa, mask) || rdma_establish(r->id))
		goto fail;
	end = ft_now_ms() + 1000;
	while (ft_now_ms() < end) {	/* the endpoint sees ESTABLISHED */
		ft_rdm_progress();
		usleep(1000);
	}
	/* still alive, and its honest peer's messages still come */
	memset(env.vbuf.ptr, 0x5a, 64);
	if (FT_RDM_POST(fi_trecv(env.p.a.ep, env.cbuf.ptr, 64,
				 env.cbuf.desc, FI_ADDR_UNSPEC, RP_TAG, 0,
				 &held)) ||
	    FT_RDM_POST(fi_tsend(env.p.b.ep, env.vbuf.ptr, 64,
				 env.vbuf.desc, env.p.b2a, RP_TAG, &env)) ||
	    rp_wait(name, env.p.b.cq, &env, &c) || c.err ||
	    rp_wait(name, env.p.a.cq, &held, &c) || c.err ||
	    c.len != 64 || memcmp(env.cbuf.ptr, env.vbuf.ptr, 64)) {
		ft_fail(name, "a message after the late handshake");
		goto out;
	}
	ok = 1;
	goto out;
fail:
	ft_fail(name, "the held connection: %s", strerror(errno));
out:
	if (ok)
		ft_ok(name);
	if (qp)
		ibv_destroy_qp(qp);
	rp_close(&held);
	rp_env_close(&env);
}

/* RMA writes (each with its confirming read: FI_RIVET_CONFIRM=1) to a
 * raw peer that stops answering: the writes in flight hold the control
 * budget, so the next write's post runs progress, which meets the
 * connection's failure.  The write that post then submits must not be
 * queued on the closed connection (it would never complete): every
 * write the endpoint took completes, with success or an error. */
#define RP_RMA_OPS 1024
static struct fi_context2 g_rp_rma_ctx[RP_RMA_OPS];

static void rp_rma_failing_child(void)
{
	const char *name = "rawpeer_rma_on_failing_connection";
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct rp_env env;
	struct ft_comp c;
	fi_addr_t c2raw;
	uint64_t end;
	ssize_t ret;
	int n = 0, done = 0, i;

	/* the failure within a fraction of a second: 4.096 us * 2^14 (67 ms),
	 * sent again once */
	setenv("FI_RIVET_ACK_TIMEOUT", "14", 1);
	setenv("FI_RIVET_RETRY_COUNT", "1", 1);
	g_rp_writable = true;
	if (rp_env_open(&env, FT_RDM_CAPS | FI_RMA, FI_WRITE | FI_READ) ||
	    rp_listen_for_b(&env, name, &c2raw))
		goto out;
	/* a message makes the connection (the raw peer's buffer and key
	 * exist once it accepted) */
	ret = fi_tsend(env.p.b.ep, env.vbuf.ptr, 8, env.vbuf.desc, c2raw,
		       RP_TAG, &g_rp_rma_ctx[0]);
	if (!ft_check(!ret, name, "fi_tsend: %zd", ret) ||
	    !ft_check(!rp_accept(&env.raw), name, "the raw peer's accept") ||
	    rp_wait(name, env.p.b.cq, &g_rp_rma_ctx[0], &c) ||
	    !ft_check(!c.err, name, "a message to the raw peer: %s",
		      ft_comp_str(&c)))
		goto out;
	n = 1;
	ret = fi_write(env.p.b.ep, env.cbuf.ptr, 8, env.cbuf.desc, c2raw,
		       (uintptr_t)env.raw.buf, env.raw.mr->rkey,
		       &g_rp_rma_ctx[n]);
	if (!ft_check(!ret, name, "fi_write: %zd", ret) ||
	    rp_wait(name, env.p.b.cq, &g_rp_rma_ctx[n], &c) ||
	    !ft_check(!c.err, name, "a write to the raw peer: %s",
		      ft_comp_str(&c)))
		goto out;
	n = 2;
	done = 2;
	/* the raw peer stops answering; writes are posted without any other
	 * call (no progress but the posts' own) */
	if (!ft_check(!ibv_modify_qp(env.raw.id->qp, &qa, IBV_QP_STATE), name,
		      "the raw QP to the error state"))
		goto out;
	end = ft_now_ms() + 1500;
	while (n < RP_RMA_OPS && ft_now_ms() < end) {
		ret = fi_write(env.p.b.ep, env.cbuf.ptr, 8, env.cbuf.desc,
			       c2raw, (uintptr_t)env.raw.buf,
			       env.raw.mr->rkey, &g_rp_rma_ctx[n]);
		if (!ret)
			n++;
		else if (ret == -FI_EAGAIN)
			usleep(200);
		else
			break;
	}
	/* what was queued for a new connection fails once the raw peer's
	 * listener is gone */
	rp_close(&env.raw);
	end = ft_now_ms() + 30000;
	while (done < n && ft_now_ms() < end)
		if (!ft_rdm_wait(env.p.b.cq, NULL, &c, 200))
			for (i = 2; i < n; i++)
				if (c.ctx == &g_rp_rma_ctx[i]) {
					done++;
					break;
				}
	if (ft_check(done == n, name, "%d of the %d writes the endpoint took "
		     "never completed", n - done, n - 2))
		ft_ok(name);
out:
	g_rp_writable = false;
	rp_env_close(&env);
}

/* ---- access ----------------------------------------------------------- */

/* An emulated atomic of the raw peer's (one FI_UINT64) at the endpoint it
 * connected to: the answer's status (0 or a positive FI_E* code), -1 if
 * none came. */
static int rp_atomic(struct rp *r, uint64_t key, uint64_t addr,
		     enum fi_op op, uint64_t val)
{
	struct {
		struct rivet_wire_atomic a;
		uint64_t v;
	} m = {
		.a = { .send_id = 7, .addr = addr, .key = key,
		       .op = (uint8_t)op, .datatype = FI_UINT64,
		       .kind = RIVET_ATOMIC_WRITE, .count = 1 },
		.v = val,
	};
	struct rivet_wire_hdr hdr = {
		.version = RIVET_WIRE_VERSION, .op = RIVET_OP_ATOMIC,
		.conn_idx = r->peer_idx, .len = sizeof(m.v),
	};
	const struct rivet_wire_atomic_resp *resp;
	const uint8_t *msg;
	struct ibv_wc wc;
	int status;

	if (rp_send(r, &hdr, &m, sizeof(m)) ||
	    rp_poll(r, true, &wc) != IBV_WC_SUCCESS)
		return -1;
	msg = rp_recv_slot(r, (int)wc.wr_id);
	resp = (const void *)(msg + sizeof(hdr));
	status = ((const struct rivet_wire_hdr *)msg)->op ==
		 RIVET_OP_ATOMIC_RESP ? resp->status : -1;
	(void)rp_post_recv(r, (int)wc.wr_id);
	return status;
}

/* Where the raw peer addresses a region of ours. */
static uint64_t rp_raddr(const struct rp_env *env, const struct ft_buf *b)
{
	return env->p.fab.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
	       (uint64_t)(uintptr_t)b->ptr : 0;
}

/* Regions of the victim's domain registered with access 0, with
 * FI_REMOTE_READ alone and with FI_REMOTE_WRITE: the raw peer's
 * FI_ATOMIC_WRITE lands only in the last, in range. */
static void rp_atomic_access_child(void)
{
	const char *name = "rawpeer_atomic_region_access";
	uint64_t want = 0x5a5a5a5a5a5a5a5aULL;
	struct ft_buf none = { 0 }, ro = { 0 };
	struct sockaddr_in fake;
	struct rp_env env;
	int s0, s1, s2, s3, ret;

	if (rp_env_open(&env, FT_RDM_CAPS | FI_ATOMIC,
			FI_REMOTE_READ | FI_REMOTE_WRITE))
		goto out;
	ret = ft_buf_alloc(env.p.fab.domain, 4096, 0, &none);
	ret = ret ? ret : ft_buf_alloc(env.p.fab.domain, 4096, FI_REMOTE_READ,
				       &ro);
	fake = rp_fake(&env.p.a, 9);
	if (!ft_check(!ret, name, "fi_mr_reg: %s", fi_strerror(-ret)) ||
	    !ft_check(!rp_connect(&env.raw, rp_name(&env.p.a), &fake), name,
		      "raw connection to v failed"))
		goto out;
	memset(none.ptr, 0, 4096);
	memset(ro.ptr, 0, 4096);
	memset(env.cbuf.ptr, 0, 4096);
	s0 = rp_atomic(&env.raw, fi_mr_key(none.mr), rp_raddr(&env, &none),
		       FI_ATOMIC_WRITE, want);
	s1 = rp_atomic(&env.raw, fi_mr_key(ro.mr), rp_raddr(&env, &ro),
		       FI_ATOMIC_WRITE, want);
	/* one element past the region's end, then the region's own */
	s2 = rp_atomic(&env.raw, fi_mr_key(env.cbuf.mr),
		       rp_raddr(&env, &env.cbuf) + RP_BUF, FI_ATOMIC_WRITE,
		       want);
	s3 = rp_atomic(&env.raw, fi_mr_key(env.cbuf.mr),
		       rp_raddr(&env, &env.cbuf) + 8, FI_ATOMIC_WRITE, want);
	if (!ft_check(s0 == FI_EACCES && !*(uint64_t *)none.ptr, name,
		      "access 0: answer %d, region word 0x%" PRIx64, s0,
		      *(uint64_t *)none.ptr) ||
	    !ft_check(s1 == FI_EACCES && !*(uint64_t *)ro.ptr, name,
		      "FI_REMOTE_READ only: answer %d, region word 0x%" PRIx64,
		      s1, *(uint64_t *)ro.ptr) ||
	    !ft_check(s2 == FI_EACCES, name, "past the end: answer %d", s2) ||
	    !ft_check(s3 == 0 && ((uint64_t *)env.cbuf.ptr)[1] == want, name,
		      "FI_REMOTE_WRITE: answer %d, word 0x%" PRIx64, s3,
		      ((uint64_t *)env.cbuf.ptr)[1]))
		goto out;
	ft_ok(name);
out:
	ft_buf_free(&none);
	ft_buf_free(&ro);
	rp_env_close(&env);
}

/* One endpoint whose caps are caps: the raw peer's atomic into a region
 * that allows it; its answer (-1: none). */
static int rp_atomic_to_caps(const char *name, uint64_t caps, uint64_t *word)
{
	struct sockaddr_in fake;
	struct rp_env env;
	int status = -1;

	if (rp_env_open(&env, caps, FI_REMOTE_READ | FI_REMOTE_WRITE))
		goto out;
	/* what fi_getinfo gave: not a target of atomics */
	if (!ft_check(!(env.p.fab.info->caps & FI_ATOMIC) ||
		      !(env.p.fab.info->caps & FI_REMOTE_WRITE), name,
		      "the endpoint got caps 0x%llx",
		      (unsigned long long)env.p.fab.info->caps))
		goto out;
	fake = rp_fake(&env.p.a, 9);
	if (!ft_check(!rp_connect(&env.raw, rp_name(&env.p.a), &fake), name,
		      "raw connection to v failed"))
		goto out;
	memset(env.cbuf.ptr, 0, 64);
	status = rp_atomic(&env.raw, fi_mr_key(env.cbuf.mr),
			   rp_raddr(&env, &env.cbuf), FI_SUM, 3);
	*word = *(uint64_t *)env.cbuf.ptr;
out:
	rp_env_close(&env);
	return status;
}

/* Endpoints that are no target of atomics: one without FI_ATOMIC, one
 * with FI_ATOMIC as an initiator only (FI_READ | FI_WRITE). */
static void rp_atomic_caps_child(void)
{
	const char *name = "rawpeer_atomic_target_caps";
	uint64_t w0 = 0, w1 = 0;
	int s0, s1;

	s0 = rp_atomic_to_caps(name, FT_RDM_CAPS | FI_RMA, &w0);
	s1 = rp_atomic_to_caps(name, FT_RDM_CAPS | FI_ATOMIC | FI_READ |
			       FI_WRITE, &w1);
	if (ft_check(s0 == FI_EACCES && !w0, name, "without FI_ATOMIC: "
		     "answer %d, word %" PRIu64, s0, w0) &&
	    ft_check(s1 == FI_EACCES && !w1, name, "initiator only: answer "
		     "%d, word %" PRIu64, s1, w1))
		ft_ok(name);
}

/* RMA events of the raw peer's to an endpoint with FI_RMA_EVENT: a write
 * event into a region of FI_REMOTE_READ alone, a read event past its end
 * and one naming no region are not counted; a read event in range is. */
static void rp_rma_event_child(void)
{
	const char *name = "rawpeer_rma_event_forged";
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct rivet_wire_hdr hdr;
	struct rivet_wire_rma_event ev[4];
	struct fid_cntr *cntr = NULL;
	struct ft_buf ro = { 0 };
	struct sockaddr_in fake;
	struct rp_env env;
	uint64_t end, base;
	uint32_t key;
	int i, ret;

	if (rp_env_open(&env, FT_RDM_CAPS | FI_RMA | FI_RMA_EVENT,
			FI_SEND | FI_RECV))
		goto out;
	ret = ft_buf_alloc(env.p.fab.domain, 4096, FI_REMOTE_READ, &ro);
	ret = ret ? ret : fi_cntr_open(env.p.fab.domain, &ca, &cntr, NULL);
	ret = ret ? ret : fi_mr_bind(ro.mr, &cntr->fid,
				     FI_REMOTE_READ | FI_REMOTE_WRITE);
	ret = ret ? ret : fi_mr_enable(ro.mr);
	fake = rp_fake(&env.p.a, 9);
	if (!ft_check(!ret, name, "setup: %s", fi_strerror(-ret)) ||
	    !ft_check(!rp_connect(&env.raw, rp_name(&env.p.a), &fake), name,
		      "raw connection to v failed"))
		goto out;
	key = (uint32_t)fi_mr_key(ro.mr);
	base = rp_raddr(&env, &ro);
	ev[0] = (struct rivet_wire_rma_event) { base, 64, 0, key };
	ev[1] = (struct rivet_wire_rma_event) { base + 4096, 64,
						RIVET_RMA_EV_READ, key };
	ev[2] = (struct rivet_wire_rma_event) { base, 64, RIVET_RMA_EV_READ,
						key + 1 };
	ev[3] = (struct rivet_wire_rma_event) { base + 64, 64,
						RIVET_RMA_EV_READ, key };
	hdr = (struct rivet_wire_hdr) { .version = RIVET_WIRE_VERSION,
					.op = RIVET_OP_RMA_EVENT,
					.conn_idx = env.raw.peer_idx };
	for (i = 0; i < 4; i++)
		if (!ft_check(!rp_send(&env.raw, &hdr, &ev[i], sizeof(ev[i])),
			      name, "raw send failed"))
			goto out;
	/* in order on one connection: once the last counts, all are in */
	end = ft_now_ms() + RP_WAIT_MS;
	while (fi_cntr_read(cntr) < 1 && ft_now_ms() < end)
		ft_rdm_progress();
	end = ft_now_ms() + 200;	/* and nothing more comes */
	while (ft_now_ms() < end)
		ft_rdm_progress();
	if (ft_check(fi_cntr_read(cntr) == 1, name, "the region's counter "
		     "is %" PRIu64 ", want 1 (the genuine event alone)",
		     fi_cntr_read(cntr)))
		ft_ok(name);
out:
	ft_buf_free(&ro);
	ft_close_fid(cntr ? &cntr->fid : NULL, "cntr");
	rp_env_close(&env);
}

/* rivet's fetching atomic to the raw peer, answered with success and 4
 * of its 8 bytes: the fetch fails rather than complete with half a
 * result. */
static void rp_atomic_short_child(void)
{
	const char *name = "rawpeer_atomic_short_answer";
	const struct rivet_wire_atomic *a;
	struct {
		struct rivet_wire_atomic_resp r;
		uint32_t half;
	} ans;
	struct rivet_wire_hdr hdr;
	struct fi_context2 ctx;
	uint64_t operand = 1;
	struct ibv_wc wc;
	struct ft_comp c;
	struct rp_env env;
	fi_addr_t c2raw;
	uint8_t *msg;
	ssize_t ret;

	if (rp_env_open(&env, FT_RDM_CAPS | FI_ATOMIC, FI_READ | FI_WRITE))
		goto out;
	if (rp_listen_for_b(&env, name, &c2raw))
		goto out;
	memset(env.cbuf.ptr, 0xee, 16);
	ret = FT_RDM_POST(fi_fetch_atomic(env.p.b.ep, &operand, 1, NULL,
					  env.cbuf.ptr, env.cbuf.desc, c2raw,
					  0, 77, FI_UINT64, FI_SUM, &ctx));
	if (!ft_check(!ret, name, "fi_fetch_atomic: %zd", ret) ||
	    !ft_check(!rp_accept(&env.raw), name, "accept failed") ||
	    !ft_check(!rp_poll(&env.raw, true, &wc), name, "no atomic came"))
		goto out;
	msg = rp_recv_slot(&env.raw, (int)wc.wr_id);
	a = (const void *)(msg + sizeof(hdr));
	if (!ft_check(((struct rivet_wire_hdr *)msg)->op == RIVET_OP_ATOMIC,
		      name, "not the atomic expected"))
		goto out;
	hdr = (struct rivet_wire_hdr) { .version = RIVET_WIRE_VERSION,
					.op = RIVET_OP_ATOMIC_RESP,
					.conn_idx = env.raw.peer_idx,
					.len = sizeof(ans) };
	ans.r = (struct rivet_wire_atomic_resp) { .send_id = a->send_id,
						  .len = 4 };
	ans.half = 0x12345678;
	if (!ft_check(!rp_send(&env.raw, &hdr, &ans, sizeof(ans)), name,
		      "raw answer failed") ||
	    rp_wait(name, env.p.b.cq, &ctx, &c))
		goto out;
	if (ft_check(c.err, name, "the fetch succeeded with 4 of its 8 bytes "
		     "(result 0x%" PRIx64 ")", *(uint64_t *)env.cbuf.ptr))
		ft_ok(name);
out:
	rp_env_close(&env);
}

int main(int argc, char **argv)
{
	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.timeout_ms = 60000;
	/* the default on rxe; asked for so that the case means the same on
	 * any device */
	setenv("FI_RIVET_CONFIRM", "1", 0);
	ft_parse_opts(argc, argv, "rivet's RDM protocol against a raw peer.",
		      false);
	ft_fork_case("rawpeer_source_by_qp", rp_attrib_child);
	ft_fork_case("rawpeer_rts", rp_rts_child);
	ft_fork_case("rawpeer_foreign_fin", rp_fin_child);
	ft_fork_case("rawpeer_write_imm_without_rma", rp_imm_child);
	ft_fork_case("rawpeer_rendezvous_exposure", rp_exposure_child);
	ft_fork_case("rawpeer_rendezvous_confirmed_by_fin", rp_confirm_child);
	ft_fork_case("rawpeer_claim_other_node", rp_claim_child);
	ft_fork_case("rawpeer_established_after_close",
		     rp_established_child);
	ft_fork_case("rawpeer_rma_on_failing_connection",
		     rp_rma_failing_child);
	ft_fork_case("rawpeer_cancel_unanswered_rendezvous",
		     rp_cancel_rndv_child);
	ft_fork_case("rawpeer_cached_rendezvous_exposes_the_message",
		     rp_cached_child);
	ft_fork_case("rawpeer_atomic_region_access", rp_atomic_access_child);
	ft_fork_case("rawpeer_atomic_target_caps", rp_atomic_caps_child);
	ft_fork_case("rawpeer_rma_event_forged", rp_rma_event_child);
	ft_fork_case("rawpeer_atomic_short_answer", rp_atomic_short_child);
	return ft_summary();
}
