// SPDX-License-Identifier: MIT
/* What a receiver checks of a peer's message (rivet_rdm_proto.c). */
#include <string.h>

#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "rivet_proto.h"

static uint8_t g_msg[512];

static struct rivet_wire_hdr *msg_hdr(uint8_t op, uint64_t len)
{
	struct rivet_wire_hdr *hdr = (struct rivet_wire_hdr *)g_msg;

	memset(g_msg, 0, sizeof(g_msg));
	*hdr = (struct rivet_wire_hdr) {
		.version = RIVET_WIRE_VERSION, .op = op, .len = len,
	};
	return hdr;
}

Test(wire, whole_messages_pass)
{
	size_t h = sizeof(struct rivet_wire_hdr);

	msg_hdr(RIVET_OP_EAGER, 10);
	cr_expect_eq(rivet_wire_check(g_msg, h + 10), 0);
	msg_hdr(RIVET_OP_EAGER, 0);
	cr_expect_eq(rivet_wire_check(g_msg, h), 0);
	msg_hdr(RIVET_OP_RTS, 1 << 30);	/* RTS: len is the message's */
	cr_expect_eq(rivet_wire_check(g_msg,
				      h + sizeof(struct rivet_wire_rts)), 0);
	msg_hdr(RIVET_OP_FIN, 0);
	cr_expect_eq(rivet_wire_check(g_msg,
				      h + sizeof(struct rivet_wire_fin)), 0);
}

Test(wire, short_or_unknown_messages_fail)
{
	size_t h = sizeof(struct rivet_wire_hdr);
	struct rivet_wire_hdr *hdr;

	msg_hdr(RIVET_OP_EAGER, 0);
	cr_expect_eq(rivet_wire_check(g_msg, h - 1), -FI_EINVAL);
	msg_hdr(RIVET_OP_EAGER, 11);
	cr_expect_eq(rivet_wire_check(g_msg, h + 10), -FI_EINVAL);
	msg_hdr(RIVET_OP_EAGER, UINT64_MAX);	/* would wrap a sum */
	cr_expect_eq(rivet_wire_check(g_msg, h + 10), -FI_EINVAL);
	msg_hdr(RIVET_OP_RTS, 100);
	cr_expect_eq(rivet_wire_check(g_msg, h + 8), -FI_EINVAL);
	msg_hdr(RIVET_OP_FIN, 0);
	cr_expect_eq(rivet_wire_check(g_msg, h + 8), -FI_EINVAL);
	msg_hdr(99, 0);
	cr_expect_eq(rivet_wire_check(g_msg, h + 64), -FI_EINVAL);
	hdr = msg_hdr(RIVET_OP_EAGER, 0);
	hdr->version = RIVET_WIRE_VERSION + 1;
	cr_expect_eq(rivet_wire_check(g_msg, h), -FI_EINVAL);
	msg_hdr(RIVET_OP_ATOMIC, 16);
	cr_expect_eq(rivet_wire_check(g_msg, h + 32), -FI_EINVAL);
	cr_expect_eq(rivet_wire_check(g_msg, h + 48), 0);
}

Test(wire, rts_segments_must_cover_the_message)
{
	struct rivet_wire_rts rts = {
		.nsegs = 2,
		.segs = { { 0x1000, 1, 100 }, { 0x9000, 2, 50 } },
	};

	cr_expect_eq(rivet_wire_rts_check(&rts, 150), 0);
	cr_expect_eq(rivet_wire_rts_check(&rts, 151), -FI_EINVAL,
		     "shorter than announced");
	cr_expect_eq(rivet_wire_rts_check(&rts, 149), -FI_EINVAL);
	rts.nsegs = 0;
	cr_expect_eq(rivet_wire_rts_check(&rts, 150), -FI_EINVAL, "empty");
	cr_expect_eq(rivet_wire_rts_check(&rts, 0), 0);
	rts.nsegs = RIVET_RNDV_MAX_SEGS + 1;
	cr_expect_eq(rivet_wire_rts_check(&rts, 150), -FI_EINVAL);
	rts.nsegs = 2;
	rts.segs[1].len = 0;
	cr_expect_eq(rivet_wire_rts_check(&rts, 100), -FI_EINVAL);
	rts.segs[1] = (struct rivet_wire_seg) { UINT64_MAX - 10, 2, 50 };
	cr_expect_eq(rivet_wire_rts_check(&rts, 150), -FI_EINVAL, "wraps");
}

Test(wire, status_is_a_positive_fi_code)
{
	cr_expect_eq(rivet_wire_status(0), 0);
	cr_expect_eq(rivet_wire_status(FI_EACCES), FI_EACCES);
	cr_expect_eq(rivet_wire_status(FI_ETRUNC), FI_ETRUNC);
	cr_expect_eq(rivet_wire_status(-FI_EACCES), FI_EIO);
	cr_expect_eq(rivet_wire_status(FI_ERRNO_MAX), FI_EIO);
	cr_expect_eq(rivet_wire_status(INT32_MIN), FI_EIO);
}

/* The layout docs/protocol.md gives: a peer built elsewhere reads these
 * offsets. */
Test(wire, layout_is_the_documented_one)
{
	cr_expect_eq(offsetof(struct rivet_wire_hdr, version), 0);
	cr_expect_eq(offsetof(struct rivet_wire_hdr, op), 1);
	cr_expect_eq(offsetof(struct rivet_wire_hdr, flags), 2);
	cr_expect_eq(offsetof(struct rivet_wire_hdr, conn_idx), 4);
	cr_expect_eq(offsetof(struct rivet_wire_hdr, tag), 8);
	cr_expect_eq(offsetof(struct rivet_wire_hdr, data), 16);
	cr_expect_eq(offsetof(struct rivet_wire_hdr, len), 24);
	cr_expect_eq(offsetof(struct rivet_wire_rts, nsegs), 8);
	cr_expect_eq(offsetof(struct rivet_wire_rts, segs), 16);
	cr_expect_eq(offsetof(struct rivet_wire_seg, rkey), 8);
	cr_expect_eq(offsetof(struct rivet_wire_seg, len), 12);
	cr_expect_eq(offsetof(struct rivet_wire_fin, status), 8);
	cr_expect_eq(offsetof(struct rivet_wire_atomic, op), 24);
	cr_expect_eq(offsetof(struct rivet_wire_atomic, count), 28);
	cr_expect_eq(offsetof(struct rivet_wire_atomic_resp, len), 12);
	cr_expect_eq(offsetof(struct rivet_wire_rma_event, rkey), 20);
	cr_expect_eq(offsetof(struct rivet_wire_connreq, conn_idx), 8);
	cr_expect_eq(offsetof(struct rivet_wire_connreq, addr), 12);
	cr_expect_eq(offsetof(struct rivet_wire_accept, conn_idx), 8);
}

Test(wire, send_id_round_trip)
{
	uint64_t id = rivet_wire_send_id(0xdeadbeef, 17);

	cr_expect_eq(id, 0xdeadbeef00000011ULL);
	cr_expect_eq(rivet_wire_send_id_index(id), 17);
	cr_expect_eq(rivet_wire_send_id_gen(id), 0xdeadbeef);
	id = rivet_wire_send_id(UINT32_MAX, UINT32_MAX);
	cr_expect_eq(rivet_wire_send_id_index(id), UINT32_MAX);
	cr_expect_eq(rivet_wire_send_id_gen(id), UINT32_MAX);
}

/* The bodies of the ops not covered above: each must be whole. */
Test(wire, control_bodies_must_be_whole)
{
	size_t h = sizeof(struct rivet_wire_hdr);
	size_t ev = sizeof(struct rivet_wire_rma_event);
	size_t resp = sizeof(struct rivet_wire_atomic_resp);

	msg_hdr(RIVET_OP_RMA_EVENT, 0);
	cr_expect_eq(rivet_wire_check(g_msg, h + ev), 0);
	cr_expect_eq(rivet_wire_check(g_msg, h + ev - 1), -FI_EINVAL);
	/* an answer without values is its fixed part only */
	msg_hdr(RIVET_OP_ATOMIC_RESP, 0);
	cr_expect_eq(rivet_wire_check(g_msg, h + resp), 0);
	cr_expect_eq(rivet_wire_check(g_msg, h + resp - 1), -FI_EINVAL);
	/* hdr.len of an answer counts the whole body */
	msg_hdr(RIVET_OP_ATOMIC_RESP, resp + 64);
	cr_expect_eq(rivet_wire_check(g_msg, h + resp + 64), 0);
	cr_expect_eq(rivet_wire_check(g_msg, h + resp + 63), -FI_EINVAL);
	/* an atomic's operands follow its fixed part */
	msg_hdr(RIVET_OP_ATOMIC, 0);
	cr_expect_eq(rivet_wire_check(g_msg,
				      h + sizeof(struct rivet_wire_atomic)),
		     0);
	msg_hdr(0, 0);			/* op 0 is no op */
	cr_expect_eq(rivet_wire_check(g_msg, h + 64), -FI_EINVAL);
	/* a liveness probe is a bare header */
	msg_hdr(RIVET_OP_PING, 0);
	cr_expect_eq(rivet_wire_check(g_msg, h), 0);
	cr_expect_eq(rivet_wire_check(g_msg, h - 1), -FI_EINVAL);
	msg_hdr(RIVET_OP_PING + 1, 0);
	cr_expect_eq(rivet_wire_check(g_msg, h + 64), -FI_EINVAL);
}

/* A header that claims more than arrived never passes, whatever the op. */
Test(wire, no_length_beyond_the_message)
{
	size_t h = sizeof(struct rivet_wire_hdr);
	uint8_t op;

	for (op = RIVET_OP_EAGER; op <= RIVET_OP_PING; op++) {
		if (op == RIVET_OP_RTS)	/* len is the message's there */
			continue;
		msg_hdr(op, 200);
		cr_expect_eq(rivet_wire_check(g_msg, h + 100), -FI_EINVAL,
			     "op %u", op);
		msg_hdr(op, UINT64_MAX - 8);
		cr_expect_eq(rivet_wire_check(g_msg, sizeof(g_msg)),
			     -FI_EINVAL, "op %u", op);
	}
	/* the RTS itself must still be whole */
	msg_hdr(RIVET_OP_RTS, UINT64_MAX);
	cr_expect_eq(rivet_wire_check(g_msg,
				      h + sizeof(struct rivet_wire_rts) - 1),
		     -FI_EINVAL);
}
