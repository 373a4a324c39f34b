// SPDX-License-Identifier: MIT
/*
 * raw-pingpong: the floor under rivet's instruction count per message
 * (issue 14 §3): the least a verbs program does to move an 8-byte message
 * each way.  One RC queue pair over rdma_cm, one CQ for sends and
 * receives; each side sends inline (unsignaled, every 16th signaled so
 * the send queue drains), polls its one CQ and reposts the receive the
 * message used.  No libfabric.
 *
 *   server: raw-pingpong -s ADDR [-p PORT] [-n ITERS] [-S SIZE]
 *           [-W|-F|-X]
 *   client: raw-pingpong -c ADDR [-p PORT] [-n ITERS] [-S SIZE] [-C USEC]
 *           [-W|-F|-X]
 *
 * With -X the sends are posted through the work-request API
 * (ibv_wr_start, ibv_wr_send, ibv_wr_set_inline_data, ibv_wr_complete on
 * a QP made by rdma_create_qp_ex) instead of ibv_post_send: the same
 * messages, the verbs path rivet's short injects take where the device
 * offers it (FI_RIVET_WR_API).
 *
 * With -W (both sides) each message is an RDMA write instead of a send:
 * inline, into the peer's ring of RP_RECVS slots (its address and rkey
 * come with the connection's private data), the payload followed by the
 * message's sequence number; the receiver looks at the slot's sequence
 * number in memory (no receive to post, no receive completion to poll)
 * and polls its CQ only for the signaled writes.  The floor of an
 * eager-RDMA design (the receiver polls memory), for information: one
 * message in flight, so no credits go back; a real protocol would carry
 * them in its own headers.  With -W the sequence number comes in the same
 * write as the payload, and nothing orders the bytes of one write as
 * another CPU sees them (rxe copies a packet with the kernel's memcpy; an
 * HCA's placement within a write is not ordered by the spec either): -F
 * writes the sequence number in a second work request of the same post,
 * which rxe's responder (and a PCIe device's ordered writes) make visible
 * only after the first.
 *
 * With -C USEC the client sleeps USEC before each poll (as fi_rivet_rdm_bw
 * -C does), so that its polls find their completion; its only verbs calls
 * are the rp_lib_* functions, for callgrind's --toggle-collect
 * (contrib/bench-guest.sh, contrib/bench.sh --exact).  It prints
 * "empty_polls: N" (polls that found nothing, which callgrind counts
 * too) and checks every message it gets back.  The server prints
 * "listening" when it waits for the client.  Exit: 0 ok, 1 a wrong or
 * failed message, 2 setup failures.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define RP_DEPTH 64		/* queue depth both ways */
#define RP_RECVS 16		/* receives kept posted */
#define RP_SIGNAL 16		/* every RP_SIGNAL-th send is signaled */
#define RP_SEND_ID UINT64_MAX	/* wr_id of signaled sends */
#define RP_LAST_ID (UINT64_MAX - 1)	/* the client's goodbye */

struct rp_ctx {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *bufs;		/* RP_RECVS receive slots, then the send slot */
	size_t size;
	long sends;
	long empty_polls;
	/* -W: the rings (slots of size bytes and a sequence number) */
	bool write, split;	/* -W; -F (the sequence number apart) */
	uint8_t *ring, *wbuf;	/* ours (the peer writes it); what we write */
	struct ibv_mr *ring_mr, *wbuf_mr;
	uint64_t peer_ring;
	uint32_t peer_rkey;
	uint64_t wseq, rseq;	/* last written; last read */
	long unreaped;		/* signaled writes not yet polled */
	bool wr_api;		/* -X */
	struct ibv_qp_ex *qpx;	/* -X: the sends' work-request API */
};

/* The private data of the connection (-W): where our ring is. */
struct rp_ring_info {
	uint64_t addr;
	uint32_t rkey;
} __attribute__((packed));

static size_t rp_slot(const struct rp_ctx *c)
{
	return c->size + sizeof(uint64_t);
}

/* The verbs calls of the ping-pong (callgrind counts what they run). */
static __attribute__((noinline)) int rp_lib_send(struct rp_ctx *c, bool last)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->bufs + RP_RECVS * c->size),
		.length = (uint32_t)c->size, .lkey = c->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = RP_SEND_ID, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE,
	}, *bad;

	if (++c->sends % RP_SIGNAL == 0 || last)
		wr.send_flags |= IBV_SEND_SIGNALED;
	if (last)
		wr.wr_id = RP_LAST_ID;
	return ibv_post_send(c->id->qp, &wr, &bad);
}

/* -X: the same send through the work-request API. */
static __attribute__((noinline)) int rp_lib_send_wr(struct rp_ctx *c,
						    bool last)
{
	struct ibv_qp_ex *qx = c->qpx;

	ibv_wr_start(qx);
	qx->wr_id = last ? RP_LAST_ID : RP_SEND_ID;
	qx->wr_flags = IBV_SEND_INLINE;
	if (++c->sends % RP_SIGNAL == 0 || last)
		qx->wr_flags |= IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_inline_data(qx, c->bufs + RP_RECVS * c->size, c->size);
	return ibv_wr_complete(qx);
}

/* The send of the mode asked for (not counted: not an rp_lib_*). */
static int rp_send(struct rp_ctx *c, bool last)
{
	return c->wr_api ? rp_lib_send_wr(c, last) : rp_lib_send(c, last);
}

static __attribute__((noinline)) int rp_lib_recv(struct rp_ctx *c,
						 uint64_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->bufs + slot * c->size),
		.length = (uint32_t)c->size, .lkey = c->mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = slot, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	return ibv_post_recv(c->id->qp, &wr, &bad);
}

static __attribute__((noinline)) int rp_lib_poll(struct rp_ctx *c,
						 struct ibv_wc *wc, int n)
{
	return ibv_poll_cq(c->cq, n, wc);
}

/* -W: the message (c->wbuf's payload) into the peer's next slot. */
static __attribute__((noinline)) int rp_lib_write(struct rp_ctx *c)
{
	uint64_t seq = ++c->wseq;
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->wbuf,
		.length = (uint32_t)rp_slot(c), .lkey = c->wbuf_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = RP_SEND_ID, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_INLINE,
		.wr.rdma = {
			.remote_addr = c->peer_ring +
				       (seq % RP_RECVS) * rp_slot(c),
			.rkey = c->peer_rkey,
		},
	}, *bad;

	struct ibv_sge fsge;
	struct ibv_send_wr fwr;

	memcpy(c->wbuf + c->size, &seq, sizeof(seq));
	if (c->split) {		/* the payload, then the sequence number */
		sge.length = (uint32_t)c->size;
		fsge = (struct ibv_sge) {
			.addr = (uintptr_t)(c->wbuf + c->size),
			.length = sizeof(seq), .lkey = c->wbuf_mr->lkey,
		};
		fwr = wr;
		fwr.sg_list = &fsge;
		fwr.wr.rdma.remote_addr += c->size;
		wr.next = &fwr;
	}
	if (++c->sends % RP_SIGNAL == 0) {
		(c->split ? &fwr : &wr)->send_flags |= IBV_SEND_SIGNALED;
		c->unreaped++;
	}
	return ibv_post_send(c->id->qp, &wr, &bad);
}

/* -W: the next message's slot, when it is there; else -1. */
static __attribute__((noinline)) long rp_lib_ring(struct rp_ctx *c)
{
	size_t slot = (c->rseq + 1) % RP_RECVS;
	const volatile uint64_t *seq =
		(const volatile uint64_t *)(c->ring + slot * rp_slot(c) +
					    c->size);

	if (*seq != c->rseq + 1)
		return -1;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	c->rseq++;
	return (long)slot;
}

/*
 * -C: callgrind counts the polls that find nothing too, and how many there
 * are depends on the host's load.  So after its run the client polls
 * RP_PROBES more times, each behind the same pause, where nothing is left
 * to come, through rp_probe_* (which call verbs themselves: one called
 * from an rp_lib_* would toggle callgrind's collection off), and prints
 * "probe_polls: N"; contrib/bench-guest.sh subtracts their cost per poll
 * once for every one of empty_polls.  (-W: a wait's polls of the CQ for a
 * signaled write's completion are not among the empty ones.)
 */
#define RP_PROBES 200
/* kept apart: GCC would otherwise fold rp_probe_poll into rp_lib_poll */
#if defined(__GNUC__) && !defined(__clang__)
#define RP_PROBE __attribute__((noipa))
#else
#define RP_PROBE __attribute__((noinline))
#endif

static RP_PROBE int rp_probe_poll(struct rp_ctx *c, struct ibv_wc *wc,
				  int n)
{
	return ibv_poll_cq(c->cq, n, wc);
}

/* -W: rp_lib_ring's look at the next slot */
static RP_PROBE long rp_probe_ring(struct rp_ctx *c)
{
	size_t slot = (c->rseq + 1) % RP_RECVS;
	const volatile uint64_t *seq =
		(const volatile uint64_t *)(c->ring + slot * rp_slot(c) +
					    c->size);

	if (*seq != c->rseq + 1)
		return -1;
	return (long)slot;
}

static long rp_probe(struct rp_ctx *c, long pause_us)
{
	struct ibv_wc wc[4];
	long i, empty = 0;

	for (i = 0; i < RP_PROBES; i++) {
		if (pause_us > 0)
			usleep((useconds_t)pause_us);
		empty += c->write ? rp_probe_ring(c) < 0 :
				    rp_probe_poll(c, wc, 4) == 0;
	}
	return empty;
}

/* -W: the signaled writes' completions (one poll when one is due). */
static int rp_reap(struct rp_ctx *c)
{
	struct ibv_wc wc[4];
	int i, n;

	if (!c->unreaped)
		return 0;
	n = rp_lib_poll(c, wc, 4);
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "completion: %s\n",
				ibv_wc_status_str(wc[i].status));
			return -1;
		}
		if (wc[i].wr_id == RP_SEND_ID)
			c->unreaped--;
	}
	return n < 0 ? -1 : 0;
}

/* -W: waits for the next message in the ring: its slot, or -1 on an
 * error completion or after about 30 s. */
static long rp_wait_ring(struct rp_ctx *c, long pause_us)
{
	long polls = 0, slot;

	for (;;) {
		if (pause_us > 0)
			usleep((useconds_t)pause_us);
		if (rp_reap(c))
			return -1;
		slot = rp_lib_ring(c);
		if (slot >= 0)
			return slot;
		c->empty_polls += pause_us >= 0;
		if (++polls > (pause_us > 0 ? 30000000 / pause_us :
				300000000))
			return -1;
	}
}

/* Waits for the next message (send completions pass by; with last, for
 * the completion of the client's goodbye): its slot, or -1 on an error
 * completion or after 30 s. */
static long rp_wait(struct rp_ctx *c, long pause_us, bool last)
{
	struct ibv_wc wc[4];
	long polls = 0;
	int i, n;

	for (;;) {
		if (pause_us > 0)
			usleep((useconds_t)pause_us);
		n = rp_lib_poll(c, wc, 4);
		if (n < 0)
			return -1;
		if (!n) {
			c->empty_polls += pause_us >= 0;
			/* about 30 s of polls, sleeping or not */
			if (++polls > (pause_us > 0 ? 30000000 / pause_us :
					300000000))
				return -1;
			continue;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "completion: %s\n",
					ibv_wc_status_str(wc[i].status));
				return -1;
			}
			if (last && wc[i].wr_id == RP_LAST_ID)
				return 0;
			if (!last && wc[i].wr_id < RP_LAST_ID)
				/* one message in flight: n > 1 only with
				 * sends among them */
				return (long)wc[i].wr_id;
		}
	}
}

static int rp_connect(struct rp_ctx *c, const char *addr, const char *port,
		      bool server)
{
	struct rdma_addrinfo hints = { 0 }, *res;
	struct ibv_qp_init_attr attr = { 0 };
	struct rdma_conn_param param = { 0 };
	struct rp_ring_info mine, theirs = { 0 };
	struct rdma_cm_id *listen_id;
	size_t i;

	hints.ai_port_space = RDMA_PS_TCP;
	hints.ai_flags = server ? RAI_PASSIVE : 0;
	if (rdma_getaddrinfo(addr, port, &hints, &res)) {
		perror("rdma_getaddrinfo");
		return -1;
	}
	if (rdma_create_ep(server ? &listen_id : &c->id, res, NULL, NULL)) {
		perror("rdma_create_ep");
		return -1;
	}
	rdma_freeaddrinfo(res);
	if (server) {
		if (rdma_listen(listen_id, 1))
			return -1;
		printf("listening\n");
		fflush(stdout);
		if (rdma_get_request(listen_id, &c->id))
			return -1;
	}
	c->cq = ibv_create_cq(c->id->verbs, 2 * RP_DEPTH, NULL, NULL, 0);
	c->bufs = calloc(RP_RECVS + 1, c->size);
	if (!c->cq || !c->bufs)
		return -1;
	attr.send_cq = attr.recv_cq = c->cq;
	attr.cap.max_send_wr = attr.cap.max_recv_wr = RP_DEPTH;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = (uint32_t)(c->write ? rp_slot(c) : c->size);
	attr.qp_type = IBV_QPT_RC;
	if (c->wr_api) {
		struct ibv_qp_init_attr_ex ax = {
			.send_cq = attr.send_cq, .recv_cq = attr.recv_cq,
			.cap = attr.cap, .qp_type = attr.qp_type,
			.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_SEND,
		};

		if (rdma_create_qp_ex(c->id, &ax)) {
			perror("rdma_create_qp_ex");
			return -1;
		}
		c->qpx = ibv_qp_to_qp_ex(c->id->qp);
		if (!c->qpx)
			return -1;
	} else if (rdma_create_qp(c->id, NULL, &attr)) {
		perror("rdma_create_qp");
		return -1;
	}
	c->mr = ibv_reg_mr(c->id->pd, c->bufs, (RP_RECVS + 1) * c->size,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		return -1;
	for (i = 0; i < RP_RECVS; i++)
		if (rp_lib_recv(c, i))
			return -1;
	param.retry_count = param.rnr_retry_count = 7;
	if (c->write) {
		c->ring = calloc(RP_RECVS, rp_slot(c));
		c->wbuf = calloc(1, rp_slot(c));
		if (!c->ring || !c->wbuf)
			return -1;
		c->ring_mr = ibv_reg_mr(c->id->pd, c->ring,
					RP_RECVS * rp_slot(c),
					IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE);
		c->wbuf_mr = ibv_reg_mr(c->id->pd, c->wbuf, rp_slot(c),
					IBV_ACCESS_LOCAL_WRITE);
		if (!c->ring_mr || !c->wbuf_mr)
			return -1;
		mine.addr = (uintptr_t)c->ring;
		mine.rkey = c->ring_mr->rkey;
		param.private_data = &mine;
		param.private_data_len = sizeof(mine);
	}
	if (c->write && server) {	/* the client's, in its request */
		if (!c->id->event ||
		    c->id->event->param.conn.private_data_len < sizeof(theirs))
			return -1;
		memcpy(&theirs, c->id->event->param.conn.private_data,
		       sizeof(theirs));
	}
	if (server ? rdma_accept(c->id, &param) :
		     rdma_connect(c->id, &param)) {
		perror(server ? "rdma_accept" : "rdma_connect");
		return -1;
	}
	if (c->write && !server) {	/* the server's, in its accept */
		if (!c->id->event ||
		    c->id->event->param.conn.private_data_len < sizeof(theirs))
			return -1;
		memcpy(&theirs, c->id->event->param.conn.private_data,
		       sizeof(theirs));
	}
	if (c->write) {
		c->peer_ring = theirs.addr;
		c->peer_rkey = theirs.rkey;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *server = NULL, *client = NULL, *port = "47820";
	struct rp_ctx c = { .size = 8 };
	long iters = 1000, pause_us = -1, i, slot;
	uint64_t want, got;
	int op;

	while ((op = getopt(argc, argv, "s:c:p:n:S:C:WFX")) != -1) {
		switch (op) {
		case 's': server = optarg; break;
		case 'c': client = optarg; break;
		case 'p': port = optarg; break;
		case 'n': iters = strtol(optarg, NULL, 0); break;
		case 'S': c.size = strtoul(optarg, NULL, 0); break;
		case 'C': pause_us = strtol(optarg, NULL, 0); break;
		case 'W': c.write = true; break;
		case 'F': c.write = c.split = true; break;
		case 'X': c.wr_api = true; break;
		default:
			fprintf(stderr, "usage: %s -s ADDR | -c ADDR [-p PORT] "
				"[-n ITERS] [-S SIZE] [-C USEC] [-W|-F|-X]\n",
				argv[0]);
			return 2;
		}
	}
	if (!server == !client || c.size < sizeof(uint64_t) ||
	    c.size > 64) {
		fprintf(stderr, "%s: -s or -c; SIZE 8 to 64\n", argv[0]);
		return 2;
	}
	if (rp_connect(&c, server ? server : client, port, !!server))
		return 2;
	for (i = 0; c.write && i < iters; i++) {
		want = (uint64_t)i * 2654435761u + 1;
		if (client) {
			memcpy(c.wbuf, &want, sizeof(want));
			if (rp_lib_write(&c))
				return 1;
		}
		slot = rp_wait_ring(&c, client ? pause_us : -1);
		if (slot < 0)
			return 1;
		memcpy(&got, c.ring + (size_t)slot * rp_slot(&c), sizeof(got));
		if (got != want) {
			fprintf(stderr, "message %ld: %#llx, want %#llx\n", i,
				(unsigned long long)got,
				(unsigned long long)want);
			return 1;
		}
		if (server) {
			memcpy(c.wbuf, &got, sizeof(got));
			if (rp_lib_write(&c))
				return 1;
		}
	}
	for (i = 0; !c.write && i < iters; i++) {
		want = (uint64_t)i * 2654435761u + 1;
		if (client) {
			memcpy(c.bufs + RP_RECVS * c.size, &want, sizeof(want));
			if (rp_send(&c, false))
				return 1;
		}
		slot = rp_wait(&c, client ? pause_us : -1, false);
		if (slot < 0)
			return 1;
		memcpy(&got, c.bufs + (size_t)slot * c.size, sizeof(got));
		if (got != want) {
			fprintf(stderr, "message %ld: %#llx, want %#llx\n", i,
				(unsigned long long)got,
				(unsigned long long)want);
			return 1;
		}
		if (rp_lib_recv(&c, (uint64_t)slot))
			return 1;
		if (server) {
			memcpy(c.bufs + RP_RECVS * c.size, &got, sizeof(got));
			if (rp_send(&c, false))
				return 1;
		}
	}
	printf("iterations: %ld\nempty_polls: %ld\n", iters, c.empty_polls);
	if (client && pause_us >= 0)
		printf("probe_polls: %ld\n", rp_probe(&c, pause_us));
	/* A goodbye, so that neither side goes while the other's last
	 * message still waits for its acknowledgement. */
	if (client && (rp_send(&c, true) || rp_wait(&c, -1, true) < 0))
		return 1;
	if (server && rp_wait(&c, -1, false) < 0)
		return 1;
	return 0;
}
