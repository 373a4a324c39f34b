/* SPDX-License-Identifier: MIT */
/*
 * rivet's RDM wire protocol (docs/protocol.md): fixed-width little-endian
 * headers at the start of every message one RDM endpoint sends another.
 */
#ifndef RIVET_PROTO_H
#define RIVET_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "rivet_atomic.h"

#define RIVET_WIRE_VERSION 1
#define RIVET_CONN_MAGIC 0x72766574u	/* "rvet" */
#define RIVET_RNDV_MAX_SEGS 4

enum rivet_wire_op {
	RIVET_OP_EAGER = 1,	/* header + payload */
	RIVET_OP_RTS = 2,	/* header + rivet_wire_rts: read my buffer */
	RIVET_OP_FIN = 3,	/* header + rivet_wire_fin: done reading */
	RIVET_OP_ATOMIC = 4,	/* header + rivet_wire_atomic + operands */
	RIVET_OP_ATOMIC_RESP = 5, /* header + rivet_wire_atomic_resp + data */
	RIVET_OP_RMA_EVENT = 6,	/* header + rivet_wire_rma_event */
	RIVET_OP_PING = 7,	/* header only: a liveness probe, dropped on
				 * arrival (the NIC's ACK is the answer) */
};

enum rivet_wire_flags {
	RIVET_WF_TAGGED = 1 << 0,
	RIVET_WF_CQ_DATA = 1 << 1,
};

struct rivet_wire_hdr {
	uint8_t version;
	uint8_t op;
	uint16_t flags;
	uint32_t conn_idx;	/* the receiver's index of this connection */
	uint64_t tag;
	uint64_t data;		/* remote CQ data */
	uint64_t len;		/* payload (EAGER) or message (RTS) length */
};
_Static_assert(sizeof(struct rivet_wire_hdr) == 32, "wire header size");

struct rivet_wire_seg {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};
_Static_assert(sizeof(struct rivet_wire_seg) == 16, "wire segment size");

struct rivet_wire_rts {
	uint64_t send_id;	/* the sender's operation, echoed in FIN */
	uint32_t nsegs;
	uint32_t reserved;
	struct rivet_wire_seg segs[RIVET_RNDV_MAX_SEGS];
};
_Static_assert(sizeof(struct rivet_wire_rts) == 80, "rts size");

struct rivet_wire_fin {
	uint64_t send_id;
	int32_t status;		/* 0, or a positive FI_E* code */
	uint32_t reserved;
};
_Static_assert(sizeof(struct rivet_wire_fin) == 16, "fin size");

/* An atomic for the target to compute: count elements of datatype at
 * addr (the target's virtual address) in the region of key; the operands
 * follow (none for FI_ATOMIC_READ), then the compare values (compare
 * kind).  hdr.len is their total length. */
struct rivet_wire_atomic {
	uint64_t send_id;	/* the initiator's operation, echoed */
	uint64_t addr;
	uint64_t key;
	uint8_t op;		/* enum fi_op */
	uint8_t datatype;	/* enum fi_datatype */
	uint8_t kind;		/* enum rivet_atomic_kind */
	uint8_t reserved;
	uint32_t count;
};
_Static_assert(sizeof(struct rivet_wire_atomic) == 32, "atomic size");

/* The answer to every atomic: status, and for the fetching kinds the
 * target's values before the operation (len bytes follow). */
struct rivet_wire_atomic_resp {
	uint64_t send_id;
	int32_t status;		/* 0, or a positive FI_E* code */
	uint32_t len;
};
_Static_assert(sizeof(struct rivet_wire_atomic_resp) == 16, "resp size");

/* Sent right behind an RDMA WRITE or READ (same QP, so after the write's
 * data) to a peer that asked for FI_RMA_EVENT: the target's counters and
 * CQ hear of the operation. */
struct rivet_wire_rma_event {
	uint64_t addr;		/* as the initiator named it */
	uint64_t len;
	uint32_t flags;		/* RIVET_RMA_EV_* */
	uint32_t rkey;		/* the region it was aimed at */
};
#define RIVET_RMA_EV_READ 0x1	/* a read (or a fetching atomic); else a write */
#define RIVET_RMA_EV_ATOMIC 0x2	/* a verbs atomic */
/* a write with immediate data, already an event of its own at the
 * target: only the region's counter is left to count */
#define RIVET_RMA_EV_REGION_ONLY 0x4
_Static_assert(sizeof(struct rivet_wire_rma_event) == 24, "event size");

/* rivet_wire_connreq.flags, rivet_wire_accept.flags */
#define RIVET_CONN_F_RMA_EVENT 0x1	/* send me RIVET_OP_RMA_EVENT */
/* rivet_wire_connreq.flags: the initiator is a scalable endpoint's
 * transmit context, which takes no messages: the acceptor never sends
 * its own on the connection */
#define RIVET_CONN_F_TX_ONLY 0x2

/* Every message slot holds a header, a rivet_wire_atomic and
 * RIVET_ATOMIC_MAX_BYTES of operands (rivet_atomic.h). */

/* rdma_cm private data of a connection request and of its accept */
struct rivet_wire_connreq {
	uint32_t magic;
	uint8_t version;
	uint8_t addr_len;
	uint16_t flags;		/* RIVET_CONN_F_* */
	uint32_t conn_idx;	/* the initiator's index of this connection */
	uint8_t addr[28];	/* the initiator's endpoint name (sockaddr) */
	/* The acceptor's indices + 1 (0: none) of the initiator's last
	 * connections to it that failed on the initiator's side: the
	 * acceptor closes them too, if a lost link kept it from hearing */
	uint32_t replaces[2];
	/* The receive context it is for: a scalable endpoint's index
	 * (fi_rx_addr); 0 for an ordinary endpoint, which takes no other.
	 * Older peers send 48 bytes: 0. */
	uint16_t rx_idx;
	uint16_t reserved;
	/* The initiator's incarnation: a random number, not 0, that its
	 * endpoint drew when it opened.  replaces[] names only connections
	 * of the same incarnation.  Older peers send 52 bytes: 0 (their
	 * replaces[] is ignored). */
	uint32_t incarnation;
};
_Static_assert(sizeof(struct rivet_wire_connreq) <= 56, "REQ private data");

struct rivet_wire_accept {
	uint32_t magic;
	uint8_t version;
	uint8_t flags;		/* RIVET_CONN_F_* */
	uint8_t reserved[2];
	uint32_t conn_idx;	/* the acceptor's index of this connection */
	/* The acceptor's incarnation (rivet_wire_connreq); older peers
	 * send 12 bytes: 0. */
	uint32_t incarnation;
};
#define RIVET_WIRE_ACCEPT_MIN 12	/* an older peer's accept */

/* The id of a sender's operation that an RTS or an atomic carries and
 * the answer echoes: its slot in the sender's tx ops and the slot's
 * generation (a late answer for a reused slot is told apart). */
static inline uint64_t rivet_wire_send_id(uint32_t gen, uint32_t index)
{
	return ((uint64_t)gen << 32) | index;
}

static inline uint32_t rivet_wire_send_id_index(uint64_t send_id)
{
	return (uint32_t)send_id;
}

static inline uint32_t rivet_wire_send_id_gen(uint64_t send_id)
{
	return (uint32_t)(send_id >> 32);
}

/* rivet_rdm_proto.c: what a receiver checks (pure) */
/* 0 when len bytes hold a whole message of a known op and version. */
int rivet_wire_check(const void *msg, size_t len);
/* 0 when an RTS's segments (at most RIVET_RNDV_MAX_SEGS, none empty or
 * wrapping) add up to exactly the message length len. */
int rivet_wire_rts_check(const struct rivet_wire_rts *rts, uint64_t len);
/* A status from the wire (FIN, atomic answer) as a positive FI_E* code:
 * 0 stays 0, anything not a positive FI_E* code becomes FI_EIO. */
int rivet_wire_status(int32_t status);

#endif /* RIVET_PROTO_H */
