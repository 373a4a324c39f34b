/* SPDX-License-Identifier: MIT */
/*
 * FI_EP_RDM: address vectors, the RDM endpoint and its connections.  The
 * wire protocol is described in docs/protocol.md and rivet_proto.h.
 */
#ifndef RIVET_RDM_H
#define RIVET_RDM_H

#include <utlist.h>

#include "rivet.h"
#include "rivet_av.h"
#include "rivet_map.h"
#include "rivet_match.h"
#include "rivet_mr_cache.h"
#include "rivet_proto.h"

#define RIVET_PROTO_RDM (RIVET_PROTO_SPECIFIC | 0x7277)

struct rivet_rdm_ep;
struct rivet_rdm_srx;

/* ---- RDM endpoints (rivet_rdm_ep.c, rivet_rdm_conn.c, rivet_proto_*.c) ---- */
#define RIVET_RDM_IOV_LIMIT 4
#define RIVET_RDM_INJECT_SIZE 256
#define RIVET_RDM_INJ_PIECE 16	/* ibv_post_send: one piece up to this */
/* receive op flags that take fi_trecv off its one-buffer path */
#define RIVET_RDM_RX_SPECIAL \
	(FI_TRIGGER | FI_MULTI_RECV | FI_PEEK | FI_CLAIM | FI_DISCARD)
#define RIVET_RDM_CTRL_BUDGET 128	/* internal WRs: RDMA reads + FINs */
/* Injects posted inline without a tx op, in flight per connection at most
 * (the inject short path, rivet_rdm_inject_post). */
#define RIVET_RDM_INJ_MAX 64
/* Of them, every RIVET_RDM_INJ_SIGNAL-th is signaled (at most inj_max):
 * its completion stands for the ones before it, which make none. */
#ifndef RIVET_RDM_INJ_SIGNAL
#define RIVET_RDM_INJ_SIGNAL 16
#endif
/* A failed connection's drained QP is destroyed this long after: rxe
 * (Linux 6.12) frees packets that wait for a dead neighbour's address
 * (up to about 3 s) after their QP, and then crashes in rxe_skb_tx_dtor
 * if the QP is gone. */
#define RIVET_CONN_QP_LINGER_MS 5000
/* A scalable endpoint's transmit context's SRQ: answers only */
#define RIVET_SEP_TX_SRQ 64
/* SRQ buffers given back together: at most this many, and an eighth of
 * the SRQ, are held back from it at a time. */
#define RIVET_RDM_SRQ_BATCH 16
/* The CM channel is looked at once per this many units of progress
 * passes (rivet_rdm_progress_pass), or per the second while connections
 * are being set up. */
#define RIVET_RDM_CM_UNITS 1024
#define RIVET_RDM_CM_UNITS_SETUP 4
/* ... and a receive context's send operations (it makes none) */
#define RIVET_SEP_RX_TX_SIZE 16

/* What a work request's wr_id points at starts with one of these. */
enum rivet_wr_kind {
	RIVET_WR_RXBUF = 1,	/* an SRQ bounce buffer */
	RIVET_WR_TX,		/* a user send (eager or RTS) */
	RIVET_WR_CTRL,		/* an internal send (FIN) */
	RIVET_WR_READ,		/* a rendezvous RDMA read */
	RIVET_WR_INJ,		/* an inject of the short path */
	RIVET_WR_DRAIN,		/* the last WR of a failed connection's QP */
};

/* A pre-registered buffer: SRQ receive slot or FIN staging. */
struct rivet_rdm_buf {
	uint8_t kind;
	struct rivet_rdm_buf *next;	/* free list */
	struct rivet_conn *conn;
	uint8_t *data;
	struct rivet_rndv_rx *rndv;	/* a FIN: the receive it confirms */
};

enum rivet_conn_state {
	RIVET_CONN_CONNECTING,
	RIVET_CONN_UP,
	RIVET_CONN_CLOSED,
};

/* What an rdma_cm event does to a connection (rivet_conn_step_of). */
enum rivet_conn_step {
	RIVET_CONN_STEP_NONE,		/* nothing */
	RIVET_CONN_STEP_IGNORE,		/* a late handshake step: logged */
	RIVET_CONN_STEP_REFUSE,		/* a late ESTABLISHED: disconnect */
	RIVET_CONN_STEP_RESOLVE_ROUTE,	/* address resolved: the route */
	RIVET_CONN_STEP_CONNECT,	/* route resolved: rdma_connect */
	RIVET_CONN_STEP_UP,		/* established */
	RIVET_CONN_STEP_RESET,		/* the peer disconnected: disconnect
					 * and fail with *err */
	RIVET_CONN_STEP_FAIL,		/* fail with *err */
};

/* A connection's qp_num once its QP is released: no QP has it (QP
 * numbers are 24 bits). */
#define RIVET_CONN_QPN_NONE UINT32_MAX

struct rivet_tx_op;
struct rivet_ctrl;
struct rivet_conn;
struct rivet_sep;

/* The wr_id of a short-path inject: which connection, and the completion
 * flags its error entry would carry. */
struct rivet_inj_wr {
	uint8_t kind;			/* RIVET_WR_INJ */
	bool tagged;
	struct rivet_conn *conn;
};

/* One RC connection, made by us (active) or accepted.  Sends to an
 * address use tx_conns[addr]: our own connection, or one the peer made
 * that was up when we first sent (rivet_conn_get).  Rendezvous reads and
 * FINs travel on the connection of the message they answer. */
struct rivet_conn {
	struct rivet_rdm_ep *ep;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;		/* NULL once a failed one is released */
	uint32_t qp_num;		/* its number (kept: late receives) */
	uint32_t idx;			/* ours, in ep->conns */
	uint32_t peer_idx;		/* the peer's, put in our headers */
	uint32_t peer_inc;		/* the peer's incarnation (its request
					 * or accept), 0 if none */
	fi_addr_t addr;			/* FI_ADDR_NOTAVAIL if not in the AV */
	uint16_t rx_idx;		/* active: the peer's receive context */
	union rivet_sockaddr peer_name;
	enum rivet_conn_state state;
	bool active;
	bool established;		/* was ever up: peer_idx is known */
	bool peer_rma_event;		/* the peer asked for RMA events */
	bool peer_tx_only;		/* accepted from a transmit context:
					 * not for our sends */
	struct rivet_tx_op *queued;	/* utlist: waiting for the connection,
					 * or behind an FI_FENCE */
	unsigned int inflight;		/* posted operations not done yet
					 * (short-path injects are not) */
	unsigned int inj_out;		/* short-path injects not done yet */
	unsigned int inj_seq;		/* of them, posted since the last
					 * signaled one */
	struct rivet_rdm_buf *inj_fence; /* a PING behind them (fi_close):
					  * its completion covers them */
	struct rivet_inj_wr inj_wr[2];	/* their wr_ids: [tagged] */
	/* their send, header and pieces: what does not change set once */
	struct ibv_send_wr inj_send;
	struct ibv_qp_ex *inj_qpx;	/* the QP's ibv_wr_* API, or NULL */
	struct ibv_sge inj_sge[2];
	struct rivet_wire_hdr inj_hdr;
	/* right after the header: the payload is copied here and goes in
	 * one piece with it (one copy in the device's inline path instead
	 * of two): any inject's through ibv_wr_* (inj_qpx), one of up to
	 * RIVET_RDM_INJ_PIECE bytes through ibv_post_send */
	uint8_t inj_tail[RIVET_RDM_INJECT_SIZE];
	struct rivet_inj_wr drain_wr;	/* RIVET_WR_DRAIN's wr_id */
	uint64_t drained_ms;		/* a failed one's QP is drained: when */
	bool flushing;			/* rivet_conn_flush is running */
	struct rivet_tx_op *wait_fin;	/* utlist: RTS sent, FIN pending */
	uint64_t probe_ms;		/* wait_fin seen (probe_armed), or the
					 * last probe sent */
	bool probe_armed;
	struct rivet_ctrl *deferred;	/* utlist: reads/FINs waiting for room
					 * (sets ep->any_deferred) */
};

enum rivet_tx_state {
	RIVET_TX_FREE,
	RIVET_TX_QUEUED,
	RIVET_TX_POSTED,
	RIVET_TX_WAIT_FIN,
};

/* The work request of an RMA operation (rivet_rdm_rma.c): one RDMA READ
 * or WRITE, for FI_DELIVERY_COMPLETE followed by a zero-byte READ. */
struct rivet_rma_wr {
	enum ibv_wr_opcode opcode;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t imm;			/* network order */
	unsigned int send_flags;	/* IBV_SEND_INLINE, IBV_SEND_FENCE */
	int nsge;
	struct ibv_sge sges[RIVET_RDM_IOV_LIMIT];
	bool delivery;			/* the zero-byte READ follows
					 * (delivery complete, or
					 * FI_RIVET_CONFIRM's witness) */
	uint64_t compare_add, swap;	/* verbs atomics */
	bool fetch;			/* a verbs atomic: reads too */
	uint8_t ctrl_held;		/* units of ep->ctrl_free it holds */
	bool event;			/* an RMA event message follows */
	uint8_t wcs;			/* work completions still to come */
	int err, prov_errno;		/* the first failure among them */
	size_t count;			/* > 0: a READ into the staging slot, */
	struct iovec iov[RIVET_RDM_IOV_LIMIT];	/* copied here at the end */
	bool seg;			/* in pieces of ep->rdma_seg */
	uint8_t seg_held;		/* units of ep->ctrl_free its pieces
					 * in flight beyond the first hold */
	uint64_t seg_off;		/* the bytes its pieces posted cover */
};

struct rivet_tx_op {
	uint8_t kind;			/* RIVET_WR_TX */
	uint8_t state;
	bool rndv;
	bool rma;			/* an RMA operation: see wr */
	bool atomic;			/* an atomic: waits for its answer,
					 * whose values go to wr.iov */
	bool report;
	bool fin_seen;			/* FIN came before the send's WC */
	bool fenced;			/* FI_FENCE: starts after all before */
	bool counted;			/* in its connection's inflight */
	int32_t fin_status;
	uint32_t index;			/* in ep->tx_ops; also the FIN's id */
	uint32_t gen;			/* with index: send_id */
	struct rivet_tx_op *next, *prev;
	struct rivet_conn *conn;
	void *context;
	uint64_t cq_flags;
	uint64_t tag;
	uint8_t *buf;			/* this op's staging slot */
	uint32_t buf_len;
	size_t len;
	size_t nmrs;
	struct rivet_mr_entry *mrs[RIVET_RDM_IOV_LIMIT];	/* own */
	size_t nbusy;			/* application regions it holds busy */
	struct rivet_mr *busy[RIVET_RDM_IOV_LIMIT];
	struct rivet_rma_wr wr;
};

/* A posted receive.  One on the free list (rivet_rdm_rxq_put) has
 * offset and inflight 0, multi and released false: the one-buffer path
 * (rivet_rdm_rx_fill1) leaves them as they are. */
struct rivet_rx_op {
	struct rivet_match_recv me;	/* in ep->match_*, while posted */
	struct rivet_rx_op *next;	/* ep->rx_free */
	void *context;
	uint64_t cq_flags;
	fi_addr_t addr;
	uint64_t tag, ignore;
	struct iovec iov[RIVET_RDM_IOV_LIMIT];
	void *desc[RIVET_RDM_IOV_LIMIT];
	size_t count;
	size_t len;			/* capacity */
	size_t offset;			/* FI_MULTI_RECV: bytes used */
	size_t inflight;		/* FI_MULTI_RECV: reads not done */
	/* FI_MULTI_RECV: rendezvous into the buffer not yet reported; once
	 * released, the last of them carries the buffer's FI_MULTI_RECV
	 * (release_owed) or is followed by its fi_cancel (cancel_owed) */
	uint32_t rndv_out;
	bool release_owed;
	bool cancel_owed;
	bool multi;
	bool report;
	bool released;			/* FI_MULTI_RECV: buffer given back */
	bool posted;			/* on a posted list */
};

/* An internal send-queue operation waiting on a connection. */
struct rivet_ctrl {
	struct rivet_ctrl *next, *prev;
	struct rivet_rndv_rx *rndv;	/* read to (re)issue, or */
	uint64_t send_id;		/* FIN to send (fin_rx: the receive
					 * it confirms), or */
	int32_t status;
	struct rivet_rndv_rx *fin_rx;
	void *msg;			/* a message to send (malloc'd) */
	uint32_t msg_len;
};

/* A rendezvous receive in flight: RDMA reads, then a FIN. */
struct rivet_rndv_rx {
	uint8_t kind;			/* RIVET_WR_READ */
	struct rivet_conn *conn;
	struct rivet_rx_op *rx;		/* its receive, or NULL when discarded */
	struct rivet_wire_rts rts;
	struct rivet_cq_entry comp;
	size_t nreads, reads_done;	/* posted and completed, in all */
	uint64_t planned;		/* bytes the posted reads cover */
	bool registered;
	uint32_t lkeys[RIVET_RDM_IOV_LIMIT];
	int status;			/* positive FI_E* */
	int prov_errno;			/* its reason (enum rivet_perr) */
	bool report;
	size_t nmrs;
	struct rivet_mr_entry *mrs[RIVET_RDM_IOV_LIMIT];	/* own */
	size_t nbusy;			/* application regions it holds busy */
	struct rivet_mr *busy[RIVET_RDM_IOV_LIMIT];
	struct iovec iov[RIVET_RDM_IOV_LIMIT];	/* where the data lands */
	size_t count;
};

/* A message that arrived before its receive. */
struct rivet_unexp {
	struct rivet_match_msg me;	/* in ep->match_*; me.claimed */
	struct rivet_conn *conn;
	fi_addr_t src;
	uint8_t op;
	uint16_t wflags;
	uint64_t tag, data;
	size_t len;
	struct rivet_wire_rts rts;
	void *claim_ctx;		/* FI_CLAIM: the context that claimed it */
	uint8_t payload[];
};

/*
 * The receive side: posted receives, unexpected messages and the pool of
 * receive operations.  An endpoint has its own, or shares a shared receive
 * context's (rivet_rdm_srx.c): then every endpoint bound to the context
 * takes its lock too (rivet_rdm_lock), and a message matches the
 * receives of the context whichever endpoint it arrived on.
 */
struct rivet_rdm_rxq {
	struct rivet_match match_msg, match_tag;
	/* The one tagged receive posted, when it is the only one: kept out
	 * of match_tag (which is then empty of receives), so that the
	 * common case, a ping-pong's single receive, neither files nor
	 * looks up (fi_trecv's one-buffer path sets it; every other path
	 * files it first with rivet_rdm_unsolo, keeping posting order) */
	struct rivet_rx_op *solo;
	struct rivet_rx_op *rx_free;	/* linked by next */
	size_t rx_ops_used, rx_size;
	bool directed_msg, directed_tag;	/* receives name a source */
	bool rx_selective;		/* report only FI_COMPLETION receives */
	/* unexpected messages came from peers not in the AV (an accepted
	 * connection whose source was FI_ADDR_NOTAVAIL); a receive looks
	 * whether the AV took them since (domain av_gen moved past
	 * resolved_gen): an MPI adds a peer to its AV when it first posts
	 * a receive from it, which can be after the peer's first message */
	bool unresolved;
	uint64_t resolved_gen;
};

void rivet_rdm_rxq_construct(struct rivet_rdm_rxq *q, size_t rx_size,
			     uint64_t caps, uint32_t version);
/* Frees the receives and messages still held. */
void rivet_rdm_rxq_destruct(struct rivet_rdm_rxq *q);

struct rivet_rdm_ep {
	struct fid_ep ep_fid;
	struct rivet_domain *domain;
	struct fi_info *info;
	pthread_mutex_t lock;	/* rivet_rdm_lock: see there */
	pthread_mutex_t *lockp;	/* &lock, or the shared receive context's */
	bool locking;
	bool enabled;
	/* What the short paths would look at on every call and that stays
	 * put once enabled (rivet_rdm_ep_plain sets them at enable and at
	 * FI_SETOPSFLAG): enabled, no lock (rx_plain: and an endpoint of
	 * its own receive queue, no receive op flag that changes a receive;
	 * tx_plain: and no send counter); rx_report: whether such a
	 * receive is reported (not FI_SELECTIVE_COMPLETION, or FI_COMPLETION
	 * in its op flags) */
	bool nolock_ready, rx_plain, tx_plain, rx_report;
	int tos;		/* rivet_tclass_tos of the class, or -1 */
	struct rivet_av *av;
	struct rivet_av_listener av_listener;	/* told of fi_av_remove */
	struct rivet_progress_src psrc;	/* what its CQs and thread drive */
	struct rivet_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	uint64_t tx_op_flags, rx_op_flags;
	struct rivet_cntr *send_cntr, *recv_cntr;
	struct rivet_cntr *read_cntr, *write_cntr;
	struct rivet_cntr *rread_cntr, *rwrite_cntr;	/* FI_RMA_EVENT */
	bool rma_event;			/* FI_RMA_EVENT: we are told */
	uint64_t caps;
	size_t min_multi_recv;
	size_t eager_size;
	size_t max_msg_size;
	size_t max_inline;
	size_t inj_lim;		/* a short inject's payload is shorter */
	size_t tx_size, rx_size, srq_size;
	unsigned int inj_max;		/* RIVET_RDM_INJ_MAX, or less room */
	unsigned int inj_signal;	/* RIVET_RDM_INJ_SIGNAL, <= inj_max */
	bool confirm;		/* FI_RIVET_CONFIRM */
	size_t rdma_seg;	/* FI_RIVET_RDMA_SEG; SIZE_MAX: no limit */
	bool zero_read_key0;	/* zero-byte reads carry R_Key 0 (rxe) */
	/* verbs resources */
	struct rdma_event_channel *cm_channel;
	int cm_wait;		/* units of passes until the CM channel is
				 * looked at (rivet_rdm_progress_pass) */
	unsigned int nconnecting;	/* connections being set up */
	unsigned int nlinger;		/* failed ones drained, QP not yet gone */
	bool any_deferred;	/* some connection has deferred work */
	struct rdma_cm_id *listen_id;
	union rivet_sockaddr name;
	uint32_t incarnation;	/* drawn at open: rivet_wire_connreq */
	struct ibv_cq *ibv_cq;
	struct ibv_comp_channel *comp_channel;	/* FI_PROGRESS_AUTO only */
	pthread_t progress_tid;
	int stop_fd;
	bool progress_thread;
	struct ibv_srq *srq;
	/* SRQ buffers given back, posted srq_batch at a time in one call
	 * (rivet_rdm_srq_give): a chain of work requests built once */
	struct ibv_recv_wr srq_wr[RIVET_RDM_SRQ_BATCH];
	struct ibv_sge srq_sge[RIVET_RDM_SRQ_BATCH];
	unsigned int srq_npend, srq_batch;
	size_t ctrl_free;
	/* registered slabs: SRQ buffers, tx staging slots, FIN buffers */
	size_t slot_size;
	uint8_t *slab;
	struct ibv_mr *slab_mr;
	struct rivet_rdm_buf *rxbufs, *ctrlbufs, *ctrl_free_list;
	struct rivet_tx_op *tx_ops, *tx_free;
	/* connections */
	struct rivet_conn **conns;	/* by conn->idx */
	size_t nconns;
	struct rivet_conn **tx_conns;	/* by fi_addr_t */
	size_t ntx_conns;
	/* matching (rivet_match.h): posted receives, unexpected messages */
	struct rivet_rdm_rxq own_rxq;
	struct rivet_rdm_rxq *rxq;	/* &own_rxq, or the srx's */
	struct rivet_rdm_srx *srx;	/* bound shared receive context */
	struct rivet_stx *stx;		/* bound shared transmit context */
	/* scalable endpoints (rivet_rdm_sep.c): a context of sep */
	struct rivet_sep *sep;		/* NULL: an ordinary endpoint */
	uint32_t sep_idx;
	bool sep_rx;			/* a receive context, else transmit */
	/* fi_rx_addr: the AV's rx_ctx_bits name a peer's receive context
	 * in an address's top bits (64 - rx_shift of them; 0: none).
	 * Sends to a context other than 0 find their connection here
	 * (uthash by the whole fi_addr_t), the others in tx_conns. */
	unsigned int rx_shift;
	struct rivet_conn_slot *ctx_conns;
	atomic_int naliases;		/* fi_ep_alias: close is EBUSY */
};

/* The endpoint's lock, taken only where two threads may meet in it: not
 * under FI_THREAD_DOMAIN (the application serializes every call into the
 * domain) without a progress thread of ours (FI_PROGRESS_MANUAL). */
static inline void rivet_rdm_lock(struct rivet_rdm_ep *ep)
{
	if (ep->locking)
		pthread_mutex_lock(ep->lockp);
}

static inline void rivet_rdm_unlock(struct rivet_rdm_ep *ep)
{
	if (ep->locking)
		pthread_mutex_unlock(ep->lockp);
}

/* The endpoint's lock is held, or off (THE LOCK ORDER, rivet.h) */
#define RIVET_RDM_HELD(ep) \
	((void)(!(ep)->locking || (RIVET_MUTEX_HELD((ep)->lockp), 0)))

/* Whether the endpoint takes peers' operations of class cls (FI_RMA,
 * FI_ATOMIC) that need rights (FI_REMOTE_READ, FI_REMOTE_WRITE) of it:
 * fi_getinfo(3), caps with none of FI_READ, FI_WRITE, FI_REMOTE_READ and
 * FI_REMOTE_WRITE mean all four. */
static inline bool rivet_rdm_ep_targets(const struct rivet_rdm_ep *ep,
					uint64_t cls, uint64_t rights)
{
	uint64_t dir = ep->caps & (FI_READ | FI_WRITE | FI_REMOTE_READ |
				   FI_REMOTE_WRITE);

	return (ep->caps & cls) && (!dir || (dir & rights) == rights);
}

static inline struct rivet_rdm_ep *to_rrdm(struct fid_ep *ep)
{
	return container_of(ep, struct rivet_rdm_ep, ep_fid);
}

/* The connection to addr when an operation may be posted on it at once
 * (the short paths): established, nothing queued on it; else NULL. */
static inline struct rivet_conn *
rivet_conn_ready_on(struct rivet_rdm_ep *ep, fi_addr_t addr)	/* enabled */
{
	struct rivet_conn *conn;

	if (addr >= ep->ntx_conns)
		return NULL;
	conn = ep->tx_conns[addr];
	if (!conn || conn->state != RIVET_CONN_UP || conn->queued)
		return NULL;
	return conn;
}

static inline struct rivet_conn *rivet_conn_ready(struct rivet_rdm_ep *ep,
						  fi_addr_t addr)
{
	return ep->enabled ? rivet_conn_ready_on(ep, addr) : NULL;
}

/* rivet_rdm_conn.c */
/* The AV entry and receive context (fi_rx_addr) an address names. */
static inline fi_addr_t rivet_conn_base(const struct rivet_rdm_ep *ep,
					fi_addr_t addr, uint16_t *rx_idx)
{
	if (!ep->rx_shift || addr == FI_ADDR_NOTAVAIL) {
		*rx_idx = 0;
		return addr;
	}
	*rx_idx = (uint16_t)(addr >> ep->rx_shift);
	return addr & ((1ULL << ep->rx_shift) - 1);
}
int rivet_conn_get(struct rivet_rdm_ep *ep, fi_addr_t addr,
		   struct rivet_conn **conn_p);
void rivet_conn_handle_cm(struct rivet_rdm_ep *ep, struct rdma_cm_event *cm);
void rivet_conn_fail(struct rivet_conn *conn, int err);
void rivet_conn_probe_all(struct rivet_rdm_ep *ep);
/* Whether a connection of ep that is not closed still owes its peer
 * something (rivet_rdm_ep_close's wait); a PING goes behind unsignaled
 * injects so that their end is seen. */
bool rivet_conn_owing(struct rivet_rdm_ep *ep);
/* A PING behind everything posted on conn (up, with room for a control
 * message): conn->inj_fence. */
int rivet_ctrl_fence(struct rivet_conn *conn);
/* fi_close's first step: what ep owes its peers goes out, for up to
 * close_wait_ms (rivet_rdm_progress.c). */
void rivet_rdm_ep_settle(struct rivet_rdm_ep *ep);
/* Everything a failed connection posted has completed (RIVET_WR_DRAIN):
 * its QP is released RIVET_CONN_QP_LINGER_MS later. */
void rivet_conn_drained(struct rivet_conn *conn);
/* Posts op on its connection now, or queues it: while the connection
 * comes up, behind queued operations, and (FI_FENCE) until every earlier
 * operation to the peer is done.  rivet_conn_flush posts what may go. */
int rivet_conn_submit(struct rivet_conn *conn, struct rivet_tx_op *op);
void rivet_conn_flush(struct rivet_conn *conn);
/* One of conn's posted operations is done: the last one in flight lets a
 * fenced operation go. */
void rivet_conn_op_done(struct rivet_conn *conn);
void rivet_conn_destroy(struct rivet_conn *conn);
/* Frees the slots of sends to receive contexts other than 0. */
void rivet_conn_slots_free(struct rivet_rdm_ep *ep);
/* A connection request (private data req, its CONNECT_REQUEST event
 * acked) for this endpoint: accepted, or rejected and destroyed. */
void rivet_conn_accept(struct rivet_rdm_ep *ep, struct rdma_cm_id *id,
		       const struct rivet_wire_connreq *req);
int rivet_conn_post_send(struct rivet_conn *conn, uint64_t wr_id,
			 void *buf, uint32_t len, uint32_t lkey);
fi_addr_t rivet_conn_src_slow(struct rivet_conn *conn);
/* The source address of conn's messages: its fi_addr_t once the AV holds
 * the peer (looked up again while it does not). */
static inline fi_addr_t rivet_conn_src(struct rivet_conn *conn)
{
	if (__builtin_expect(conn->addr != FI_ADDR_NOTAVAIL, 1))
		return conn->addr;
	return rivet_conn_src_slow(conn);
}
/* rivet_rdm_recv.c: conn's peer entered the AV (conn->addr): its
 * unexpected messages take the address. */
void rivet_rdm_rxq_resrc(struct rivet_conn *conn);
/* The connection whose QP is qp_num, or NULL. */
/* rivet_rdm_conn_state.c (pure): the step an rdma_cm event makes a
 * connection in state take (err: the FI_E* it fails with, positive), and
 * the connection that owns a QP number (the newest; NULL for none). */
enum rivet_conn_step rivet_conn_step_of(enum rivet_conn_state state,
					enum rdma_cm_event_type ev, int *err);
struct rivet_conn *rivet_conn_of_qp(struct rivet_rdm_ep *ep, uint32_t qp_num);

/* rivet_rdm_progress.c */
void rivet_rdm_complete(struct rivet_rdm_ep *ep, bool tx,
			const struct rivet_cq_entry *e, bool report);
int rivet_rdm_progress_locked(struct rivet_rdm_ep *ep);
void rivet_rdm_progress_cm(struct rivet_rdm_ep *ep);
int rivet_rdm_srq_post(struct rivet_rdm_ep *ep, struct rivet_rdm_buf *buf);
/* Gives an SRQ buffer back: posted with the ones before it once
 * srq_batch are waiting (one ibv_post_srq_recv per batch). */
void rivet_rdm_srq_give(struct rivet_rdm_ep *ep, struct rivet_rdm_buf *buf);


/* rivet_rdm_eager.c */
int rivet_eager_send(struct rivet_rdm_ep *ep, struct rivet_tx_op *op);
/* A message (eager: payload; rendezvous: rts) meets the posted receives:
 * delivered, started, or kept as unexpected. */
void rivet_rx_arrive(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
		     const struct rivet_wire_hdr *hdr, const void *payload,
		     const void *rts);
/* The same, once matching found r (NULL: unexpected). */
void rivet_rx_matched(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
		      const struct rivet_wire_hdr *hdr, const void *payload,
		      const void *rts, struct rivet_match_recv *r);
void rivet_rx_deliver_eager(struct rivet_rdm_ep *ep, struct rivet_rx_op *rx,
			    struct rivet_conn *conn,
			    const struct rivet_wire_hdr *hdr,
			    const void *payload);

/* rivet_rdm_op.c */
struct rivet_tx_op *rivet_tx_op_get(struct rivet_rdm_ep *ep);
/* Gives back the registrations an operation holds: its own (to the
 * registration cache) and the application's regions it kept busy. */
void rivet_op_mrs_release(struct rivet_rdm_ep *ep,
			  struct rivet_mr_entry **mrs, size_t *nmrs,
			  struct rivet_mr **busy, size_t *nbusy);
void rivet_tx_op_release(struct rivet_rdm_ep *ep, struct rivet_tx_op *op);
void rivet_tx_op_done(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
		      int err, int prov_errno);
/* fi_cancel of a send that is queued for its connection, or a rendezvous
 * send that waits for the peer's FIN: FI_ECANCELED, its registrations
 * released (the peer's reads of it fail; a later FIN finds nothing);
 * -FI_ENOENT if context names no such send. */
ssize_t rivet_rdm_cancel_tx(struct rivet_rdm_ep *ep, void *context);
/* Takes a finished receive off its list and frees it once no rendezvous
 * read still lands in it. */
void rivet_rx_retire(struct rivet_rdm_ep *ep, struct rivet_rx_op *rx);
/* Where the next message into rx lands: the iovs, or a FI_MULTI_RECV
 * slice (which this consumes). */
size_t rivet_rx_target(struct rivet_rdm_ep *ep, struct rivet_rx_op *rx,
		       size_t msg_len, struct iovec *iov, void **desc);
void rivet_rx_fill_comp(struct rivet_rx_op *rx, struct rivet_conn *conn,
			const struct rivet_wire_hdr *hdr, size_t len,
			struct rivet_cq_entry *e);
void rivet_rx_op_free(struct rivet_rdm_ep *ep, struct rivet_rx_op *rx);

/* rivet_rdm_rndv_plan.c: the rendezvous's pure decisions (unit tested) */
/* What an RTS of len bytes finds at a receive of cap bytes: 0, FI_EIO
 * (bad segments: *prov_errno_p says why) or FI_ETRUNC (*olen_p did not
 * fit; the bytes that fit are still read). */
int rivet_rndv_rts_accept(const struct rivet_wire_rts *rts, uint64_t len,
			  size_t cap, uint64_t *olen_p, int *prov_errno_p);
/* The RDMA reads (at most max, each at most chunk bytes) that move bytes
 * [off, len) of the RTS's segments into the iovs; returns how many. */
size_t rivet_rndv_plan(const struct iovec *iov, size_t count,
		       const uint32_t *lkeys, const struct rivet_wire_rts *rts,
		       uint64_t off, uint64_t len, size_t chunk,
		       uint64_t wr_id, struct ibv_send_wr *wrs,
		       struct ibv_sge *sges, size_t max);
/* The end of a rendezvous at the receiver with status (positive FI_E*,
 * 0): adjusts its completion, returns the status its FIN carries. */
int32_t rivet_rndv_outcome(int status, int prov_errno,
			   struct rivet_cq_entry *comp);
/* A receive whose data was read but whose FIN failed: nothing it holds
 * can be vouched for (FI_RIVET_CONFIRM). */
void rivet_rndv_unconfirmed(struct rivet_cq_entry *comp);
/* What a FIN means to the sender's operation */
enum rivet_fin_verdict {
	RIVET_FIN_STRAY,	/* no rendezvous of this connection */
	RIVET_FIN_DONE,		/* the operation completes */
	RIVET_FIN_EARLY,	/* before the send's own completion */
	RIVET_FIN_IGNORE,	/* the operation is past waiting */
};
enum rivet_fin_verdict rivet_rndv_fin_verdict(const struct rivet_tx_op *ops,
					      size_t tx_size,
					      const struct rivet_conn *conn,
					      uint64_t send_id,
					      struct rivet_tx_op **op_p);

/* rivet_rdm_rndv.c */
int rivet_rndv_prepare(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
		       const struct iovec *iov, void **desc, size_t count);
void rivet_rndv_start(struct rivet_rdm_ep *ep, struct rivet_rx_op *rx,
		      struct rivet_conn *conn, const struct rivet_wire_hdr *hdr,
		      const struct rivet_wire_rts *rts);
/* One read of r is done with this verbs status. */
void rivet_rndv_read_done(struct rivet_rdm_ep *ep, struct rivet_rndv_rx *r,
			  int wc_status);
/* A FIN counts only on the connection its RTS went out on. */
void rivet_rndv_handle_fin(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
			   const struct rivet_wire_fin *fin);
/* A FIN; r, when not NULL, is the receive it confirms: reported when the
 * FIN's work completion comes (rivet_rndv_confirmed). */
int rivet_rndv_send_fin(struct rivet_conn *conn, uint64_t send_id,
			int32_t status, struct rivet_rndv_rx *r);
void rivet_rndv_confirmed(struct rivet_rdm_ep *ep, struct rivet_rndv_rx *r,
			  bool ok);
/* Frees r without reporting it (its endpoint or connection is closing). */
void rivet_rndv_drop(struct rivet_rdm_ep *ep, struct rivet_rndv_rx *r);
void rivet_rndv_retry_deferred(struct rivet_conn *conn);

/* rivet_rdm_rma.c */
extern struct fi_ops_rma g_rivet_rdm_rma_ops;
extern struct fi_ops_atomic g_rivet_rdm_atomic_ops;

/* rivet_rdm_rma.c: the target's side of RMA events */
void rivet_rma_event(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
		     uint64_t cq_flags, size_t len);
void rivet_rma_handle_event(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
			    const struct rivet_wire_hdr *hdr);
/* FI_RIVET_NATIVE_ATOMICS: one verbs atomic on 8 bytes at raddr; result
 * (NULL for fi_atomic) receives the old value. */
ssize_t rivet_rma_native_atomic(struct rivet_rdm_ep *ep, fi_addr_t addr,
				enum ibv_wr_opcode opcode, uint64_t raddr,
				uint64_t key, uint64_t compare_add,
				uint64_t swap, void *result, void *context,
				uint64_t flags, bool silent);

/* rivet_rdm_atomic.c */
void rivet_atomic_handle_req(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
			     const struct rivet_wire_hdr *hdr, size_t len);
void rivet_atomic_handle_resp(struct rivet_rdm_ep *ep, struct rivet_conn *conn,
			      const struct rivet_wire_hdr *hdr, size_t len);
/* rivet_rdm_rndv.c: a control message (header first; its conn_idx is
 * filled in) sent now, or after the connection's deferred work */
int rivet_ctrl_send(struct rivet_conn *conn, const void *msg, size_t len);
/* Posts a prepared RMA operation on its (connected) connection. */
int rivet_rma_post(struct rivet_rdm_ep *ep, struct rivet_tx_op *op);
/* rivet_rdm_rma_wr.c: the work requests behind an RMA operation's own */
#define RIVET_RMA_SEG_WINDOW 8	/* pieces of a long read or write in
				 * flight */
struct rivet_rma_tail {		/* the RMA event message, sent inline */
	struct rivet_wire_hdr hdr;
	struct rivet_wire_rma_event ev;
};
/* The local bytes [off, off + len) of n sges, into out: how many. */
int rivet_sge_slice(const struct ibv_sge *sges, int n, uint64_t off,
		    uint64_t len, struct ibv_sge *out);
/* How many pieces of at most seg bytes a read of len bytes takes. */
uint64_t rivet_rma_seg_count(uint64_t len, size_t seg);
/* Settles whether op sends an RMA event (its reservation given back if
 * not). */
void rivet_rma_event_settle(struct rivet_rdm_ep *ep, struct rivet_tx_op *op);
/* Chains op's witness and event behind wr[n - 1]; returns the new n. */
int rivet_rma_add_tail(struct rivet_tx_op *op, struct ibv_send_wr *wr, int n,
		       struct rivet_rma_tail *m, struct ibv_sge *ev_sge);
/* Posts up to max more pieces of a read or write in pieces (its tail
 * behind the last): how many work requests went, or a negative error. */
int rivet_rma_seg_post(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
		       unsigned int max);
void rivet_rma_wc(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
		  const struct ibv_wc *wc);
/* The completion of an RMA operation (called by rivet_tx_op_done). */
void rivet_rma_complete(struct rivet_rdm_ep *ep, struct rivet_tx_op *op,
			struct rivet_cq_entry *e);
/* An RDMA WRITE with immediate landed: the SRQ buffer it took goes back. */
void rivet_rma_handle_imm(struct rivet_rdm_ep *ep, struct rivet_rdm_buf *buf,
			  const struct ibv_wc *wc);

static inline struct rivet_match *rivet_rdm_match(struct rivet_rdm_ep *ep,
						  bool tagged)
{
	return tagged ? &ep->rxq->match_tag : &ep->rxq->match_msg;
}

/* rivet_rdm_thread.c: FI_PROGRESS_AUTO */
int rivet_rdm_thread_start(struct rivet_rdm_ep *ep);
void rivet_rdm_thread_stop(struct rivet_rdm_ep *ep);

/* rivet_rdm_msg.c */
#define RIVET_RDM_SILENT (1ULL << 63)	/* internal: fi_inject* */

/* One data call, as the shims pass it on. */
struct rivet_rdm_req {
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t addr;
	uint64_t tag, ignore, data;
	void *context;
	uint64_t flags;
	bool tagged;
};

extern struct fi_ops_msg g_rivet_rdm_msg_ops;
extern struct fi_ops_tagged g_rivet_rdm_tagged_ops;
/* A shared receive context's: receives only. */
extern struct fi_ops_msg g_rivet_rdm_srx_msg_ops;
extern struct fi_ops_tagged g_rivet_rdm_srx_tagged_ops;
/* A scalable endpoint's transmit contexts': sends only.  (Its receive
 * contexts take the shared receive context's, and no RMA.) */
extern struct fi_ops_msg g_rivet_rdm_txc_msg_ops;
extern struct fi_ops_tagged g_rivet_rdm_txc_tagged_ops;
/* The scalable endpoint's own: no data operations. */
extern struct fi_ops_msg g_rivet_rdm_sep_msg_ops;

/* rivet_rdm_recv.c: receives, peek/claim/discard and cancel, on an
 * endpoint's receive side or a shared receive context's */
ssize_t rivet_rdm_trecv(struct fid_ep *fid, void *buf, size_t len, void *desc,
			fi_addr_t src, uint64_t tag, uint64_t ignore,
			void *context);
/* rivet_rdm_msg.c: fi_trecv beyond the one-buffer path */
ssize_t rivet_rdm_trecv_any(struct fid_ep *fid, void *buf, size_t len,
			    void *desc, fi_addr_t src, uint64_t tag,
			    uint64_t ignore, void *context);
ssize_t rivet_rdm_recv(struct rivet_rdm_ep *ep,
		       const struct rivet_rdm_req *req);
ssize_t rivet_rdm_cancel(struct rivet_rdm_ep *ep, void *context);

/* rivet_rdm_srx.c: FI_EP_RDM shared receive contexts */
struct rivet_rdm_srx {
	struct fid_ep ep_fid;
	struct rivet_domain *domain;
	pthread_mutex_t lock;		/* its endpoints' lock too */
	bool locking;
	struct rivet_rdm_rxq rxq;
	uint64_t rx_op_flags;
	atomic_int refcnt;		/* endpoints bound */
	/* the enabled ones: progress for a peek, a CQ for what no message
	 * names (a peek that finds nothing, a cancel) */
	struct rivet_rdm_ep **members;
	size_t nmembers, members_cap;
};

int rivet_rdm_srx_open(struct rivet_domain *dom, struct fi_rx_attr *attr,
		       struct fid_ep **rx_ep, void *context);
/* fi_ep_bind of an RDM endpoint to a shared receive context */
int rivet_rdm_srx_bind(struct rivet_rdm_ep *ep, struct rivet_rdm_srx *srx);
/* At enable: ep serves the context.  At close, under its lock and before
 * its connections go, detach (its messages still unexpected in the
 * context go with them); last, unbind. */
int rivet_rdm_srx_attach(struct rivet_rdm_ep *ep);
void rivet_rdm_srx_detach(struct rivet_rdm_ep *ep);
void rivet_rdm_srx_unbind(struct rivet_rdm_ep *ep);
ssize_t rivet_rdm_srx_recv(struct rivet_rdm_srx *srx,
			   const struct rivet_rdm_req *req);
ssize_t rivet_rdm_srx_cancel(struct rivet_rdm_srx *srx, void *context);

/* The receive side a call works on (rivet_rdm_recv.c): the queue, the
 * endpoint that reports what no message names, and the context (or
 * NULL) whose endpoints a peek progresses. */
struct rivet_rdm_rxside {
	struct rivet_rdm_rxq *q;
	struct rivet_rdm_ep *ep;
	struct rivet_rdm_srx *srx;
};
ssize_t rivet_rdm_recv_on(const struct rivet_rdm_rxside *side,
			  const struct rivet_rdm_req *req);
ssize_t rivet_rdm_cancel_on(const struct rivet_rdm_rxside *side,
			    void *context);
/* q->solo, if any, filed in q->match_tag (before a path that files or
 * looks up receives there). */
void rivet_rdm_unsolo_any(struct rivet_rdm_rxq *q);
static inline void rivet_rdm_unsolo(struct rivet_rdm_rxq *q)
{
	if (q->solo)
		rivet_rdm_unsolo_any(q);
}
/* Returns a receive operation that is as a free one is (struct
 * rivet_rx_op) to q's pool. */
static inline void rivet_rdm_rxq_put_plain(struct rivet_rdm_rxq *q,
					   struct rivet_rx_op *rx)
{
	q->rx_ops_used--;
	rx->next = q->rx_free;
	q->rx_free = rx;
}

/* Returns a receive operation, none of its reads in flight, to q's
 * pool. */
static inline void rivet_rdm_rxq_put(struct rivet_rdm_rxq *q,
				     struct rivet_rx_op *rx)
{
	rx->offset = 0;
	rx->multi = rx->released = false;
	rx->release_owed = rx->cancel_owed = false;
	rivet_rdm_rxq_put_plain(q, rx);
}
int rivet_rdm_ep_open(struct fid_domain *domain, struct fi_info *info,
		      struct fid_ep **ep_p, void *context);
/* Told by the AV (without av->lock held) that an entry was removed: its
 * connection is torn down and operations queued to it fail. */
/* The endpoint's AV listener (ep->av_listener). */
void rivet_rdm_ep_addr_removed(struct rivet_av_listener *l, fi_addr_t addr);
/* The endpoint's progress source (ep->psrc): CM events, verbs completions,
 * SRQ refill; the CM channel alone (before a sleep). */
int rivet_rdm_ep_progress(struct rivet_progress_src *src);
void rivet_rdm_ep_progress_cm(struct rivet_progress_src *src);
ssize_t rivet_rdm_ep_read(struct rivet_progress_src *src, struct rivet_cq *cq,
			  void *buf, size_t count, fi_addr_t *src_addr);

/* rivet_rdm_sep.c: scalable endpoints (fi_scalable_ep).  A transmit or
 * receive context is an RDM endpoint of its own (its QPs, SRQ and CQ)
 * with the scalable endpoint's name; the scalable endpoint has the one
 * listener, and a connection request names the receive context it is
 * for (rivet_wire_connreq.rx_idx): whichever context's progress reads it
 * from the listener queues it for that context, which accepts it. */
int rivet_sep_open(struct rivet_domain *dom, struct fi_info *info,
		   struct fid_ep **sep_p, void *context);
/* The scalable endpoint's AV (NULL: none bound yet). */
struct rivet_av *rivet_sep_av(struct rivet_sep *sep);
/* A context's control progress, under its lock: the listener, and the
 * requests queued for it. */
void rivet_sep_progress_cm(struct rivet_rdm_ep *ep);
/* The listener's channel (a context's progress thread watches it). */
int rivet_sep_cm_fd(const struct rivet_sep *sep);
/* A context's progress source: its own, then its siblings' (trylock). */
int rivet_sep_ctx_progress(struct rivet_progress_src *src);
/* A context closes: requests queued for it are rejected. */
void rivet_sep_ctx_closed(struct rivet_rdm_ep *ep);
/* rivet_rdm_ep.c: a listener on info's source address (or the device's
 * first), on a channel of its own; *name: its address. */
int rivet_rdm_listen(struct rivet_domain *dom, const struct fi_info *info,
		     int tos, struct rdma_event_channel **channel_p,
		     struct rdma_cm_id **id_p, union rivet_sockaddr *name);
/* rivet_rdm_ep.c: an endpoint without its listener yet */
int rivet_rdm_ep_alloc(struct rivet_domain *dom, struct fi_info *info,
		       void *context, struct rivet_rdm_ep **ep_p);
/* rivet_rdm_sep.c: context idx (rx: a receive context) of sep, named
 * name, on info (the scalable endpoint's, attributes applied). */
int rivet_rdm_ctx_open(struct rivet_domain *dom, struct fi_info *info,
		       struct rivet_sep *sep, bool rx, uint32_t idx,
		       const union rivet_sockaddr *name, struct fid_ep **ep_p,
		       void *context);

/* rivet_rdm_alias.c: fi_ep_alias (FI_ALIAS); FI_SETOPSFLAG's check */
int rivet_rdm_alias_open(struct rivet_rdm_ep *ep, struct fi_alias *alias);
int rivet_rdm_alias_flags(const struct rivet_rdm_ep *ep, uint64_t flags,
			  uint64_t *tx_flags, uint64_t *rx_flags);
/* A triggered operation that failed to start: an error completion. */
void rivet_rdm_trig_fail_tx(struct fid_ep *fid, void *context, int err);
void rivet_rdm_trig_fail_rx(struct fid_ep *fid, void *context, int err);
/* FI_TRIGGER on a message *msg call (rivet_rdm_trig.c) */
ssize_t rivet_rdm_trig_msg(struct fid_ep *fid, const struct fi_msg *msg,
			   uint64_t flags, bool send);
ssize_t rivet_rdm_trig_tagged(struct fid_ep *fid,
			      const struct fi_msg_tagged *msg, uint64_t flags,
			      bool send);
/* FI_TRIGGER on an RMA or atomic *msg call (write: not fetching) */
ssize_t rivet_rdm_trig_rma(struct fid_ep *fid, const struct fi_msg_rma *msg,
			   uint64_t flags, bool read);
ssize_t rivet_rdm_trig_atomic(struct fid_ep *fid,
			      const struct fi_msg_atomic *msg,
			      const struct fi_ioc *comparev,
			      size_t compare_count, struct fi_ioc *resultv,
			      size_t result_count, uint64_t flags, bool write);
/* FI_TRIGGER on a call: the endpoint's domain, or NULL when the
 * endpoint lacks the capability (a shared receive context has none). */
static inline struct rivet_domain *rivet_rdm_trig_dom(struct fid_ep *fid)
{
	struct rivet_rdm_ep *ep;

	if (fid->fid.fclass == FI_CLASS_SRX_CTX)
		return NULL;
	ep = to_rrdm(fid);
	return (ep->caps & FI_TRIGGER) ? ep->domain : NULL;
}

#endif /* RIVET_RDM_H */
