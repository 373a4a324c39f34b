/* SPDX-License-Identifier: MIT */
/*
 * rivet's RDM wire protocol (docs/protocol.md): fixed-width little-endian
 * headers at the start of every message one RDM endpoint sends another.
 */
#ifndef RIVET_PROTO_H
#define RIVET_PROTO_H

#include <stdint.h>

#define RIVET_WIRE_VERSION 1
#define RIVET_CONN_MAGIC 0x72766574u	/* "rvet" */
#define RIVET_RNDV_MAX_SEGS 4

enum rivet_wire_op {
	RIVET_OP_EAGER = 1,	/* header + payload */
	RIVET_OP_RTS = 2,	/* header + rivet_wire_rts: read my buffer */
	RIVET_OP_FIN = 3,	/* header + rivet_wire_fin: done reading */
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

/* rdma_cm private data of a connection request and of its accept */
struct rivet_wire_connreq {
	uint32_t magic;
	uint8_t version;
	uint8_t addr_len;
	uint16_t reserved;
	uint32_t conn_idx;	/* the initiator's index of this connection */
	uint8_t addr[28];	/* the initiator's endpoint name (sockaddr) */
};
_Static_assert(sizeof(struct rivet_wire_connreq) <= 56, "REQ private data");

struct rivet_wire_accept {
	uint32_t magic;
	uint8_t version;
	uint8_t reserved[3];
	uint32_t conn_idx;	/* the acceptor's index of this connection */
};

#endif /* RIVET_PROTO_H */
