/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous's pure decisions (rivet_rdm_rndv_plan.c), driven without
 * verbs: an RTS meeting its receive, the reads that move the message, the
 * end at the receiver and its FIN, and a FIN at the sender.
 */
#include <inttypes.h>

#include <criterion/criterion.h>

#include "rivet_rdm.h"

static struct rivet_wire_rts rt_rts(uint32_t nsegs, const uint32_t *lens)
{
	struct rivet_wire_rts rts = { .send_id = 7, .nsegs = nsegs };
	uint32_t i;

	for (i = 0; i < nsegs; i++)
		rts.segs[i] = (struct rivet_wire_seg) {
			.addr = 0x100000 * (i + 1), .rkey = 10 + i,
			.len = lens[i],
		};
	return rts;
}

Test(rndv, rts_meets_its_receive)
{
	uint32_t lens[2] = { 100, 50 };
	struct rivet_wire_rts rts = rt_rts(2, lens);
	uint64_t olen = 0;
	int perr = 0;

	cr_expect_eq(rivet_rndv_rts_accept(&rts, 150, 150, &olen, &perr), 0);
	cr_expect_eq(rivet_rndv_rts_accept(&rts, 150, 4096, &olen, &perr),
		     0);
	cr_expect_eq(olen, 0);
	cr_expect_eq(rivet_rndv_rts_accept(&rts, 150, 120, &olen, &perr),
		     FI_ETRUNC);
	cr_expect_eq(olen, 30);
	cr_expect_eq(perr, 0);
	/* segments that do not add up: a protocol error, not a truncation */
	cr_expect_eq(rivet_rndv_rts_accept(&rts, 151, 10, &olen, &perr),
		     FI_EIO);
	cr_expect_eq(perr, RIVET_PERR_PROTO);
}

/* Local iovs {40, 60, 50}, remote segments {100, 50}: the reads follow
 * both boundaries. */
Test(rndv, reads_follow_both_boundaries)
{
	static uint8_t a[40], b[60], c[50];
	struct iovec iov[3] = { { a, 40 }, { b, 60 }, { c, 50 } };
	uint32_t lkeys[3] = { 1, 2, 3 }, lens[2] = { 100, 50 };
	struct rivet_wire_rts rts = rt_rts(2, lens);
	struct ibv_send_wr wrs[16];
	struct ibv_sge sges[16];
	size_t n;

	n = rivet_rndv_plan(iov, 3, lkeys, &rts, 0, 150, 1 << 30, 99, wrs, sges,
			    16);
	cr_assert_eq(n, 3);
	cr_expect_eq(sges[0].addr, (uintptr_t)a);
	cr_expect_eq(sges[0].length, 40);
	cr_expect_eq(sges[0].lkey, 1);
	cr_expect_eq(wrs[0].wr.rdma.remote_addr, 0x100000);
	cr_expect_eq(wrs[0].wr.rdma.rkey, 10);
	cr_expect_eq(sges[1].length, 60);
	cr_expect_eq(wrs[1].wr.rdma.remote_addr, 0x100000 + 40);
	cr_expect_eq(sges[2].addr, (uintptr_t)c);
	cr_expect_eq(sges[2].length, 50);
	cr_expect_eq(wrs[2].wr.rdma.remote_addr, 0x200000);
	cr_expect_eq(wrs[2].wr.rdma.rkey, 11);
	cr_expect_eq(wrs[2].wr_id, 99);
	cr_expect_eq(wrs[2].opcode, IBV_WR_RDMA_READ);
	cr_expect(wrs[2].send_flags & IBV_SEND_SIGNALED);
	cr_expect_eq(wrs[2].sg_list, &sges[2]);
}

Test(rndv, reads_are_chunked_and_bounded)
{
	static uint8_t buf[1000];
	struct iovec iov[1] = { { buf, sizeof(buf) } };
	uint32_t lkeys[1] = { 5 }, lens[1] = { 1000 };
	struct rivet_wire_rts rts = rt_rts(1, lens);
	struct ibv_send_wr wrs[16];
	struct ibv_sge sges[16];
	size_t n, i, sum = 0;

	n = rivet_rndv_plan(iov, 1, lkeys, &rts, 0, 1000, 300, 0, wrs, sges, 16);
	cr_assert_eq(n, 4);			/* 300 300 300 100 */
	for (i = 0; i < n; i++) {
		cr_expect_eq(wrs[i].wr.rdma.remote_addr, 0x100000 + sum);
		cr_expect_eq(sges[i].addr, (uintptr_t)buf + sum);
		sum += sges[i].length;
	}
	cr_expect_eq(sges[3].length, 100);
	cr_expect_eq(sum, 1000);
	/* no more reads than the caller has room for */
	cr_expect_eq(rivet_rndv_plan(iov, 1, lkeys, &rts, 0, 1000, 100, 0, wrs,
				     sges, 3), 3);
}

/* Reads posted in rounds (FI_RIVET_RDMA_SEG: many small reads): the next
 * round starts at the byte the last one ended at, across both kinds of
 * boundary, and the rounds together cover the message once. */
Test(rndv, reads_resume_where_the_last_round_ended)
{
	static uint8_t a[40], b[60], c[50];
	struct iovec iov[3] = { { a, 40 }, { b, 60 }, { c, 50 } };
	uint32_t lkeys[3] = { 1, 2, 3 }, lens[2] = { 100, 50 };
	struct rivet_wire_rts rts = rt_rts(2, lens);
	struct ibv_send_wr wrs[16];
	struct ibv_sge sges[16];
	uint64_t off = 0, raddr;
	size_t n, i, rounds = 0;

	while ((n = rivet_rndv_plan(iov, 3, lkeys, &rts, off, 150, 16, 0,
				    wrs, sges, 2))) {
		for (i = 0; i < n; i++) {
			raddr = off < 100 ? 0x100000 + off
					  : 0x200000 + off - 100;
			cr_expect_eq(wrs[i].wr.rdma.remote_addr, raddr,
				     "byte %" PRIu64, off);
			cr_expect_eq(sges[i].addr,
				     off < 40 ? (uintptr_t)a + off :
				     off < 100 ? (uintptr_t)b + off - 40 :
				     (uintptr_t)c + off - 100,
				     "byte %" PRIu64, off);
			cr_expect_leq(sges[i].length, 16);
			off += sges[i].length;
		}
		rounds++;
		cr_assert_lt(rounds, 100);
	}
	cr_expect_eq(off, 150);
	cr_expect_geq(rounds, 150 / 16 / 2);
	/* past the end, or at it: nothing */
	cr_expect_eq(rivet_rndv_plan(iov, 3, lkeys, &rts, 150, 150, 16, 0,
				     wrs, sges, 2), 0);
	cr_expect_eq(rivet_rndv_plan(iov, 3, lkeys, &rts, 200, 150, 16, 0,
				     wrs, sges, 2), 0);
}

/* A truncated message: only the bytes that fit are read. */
Test(rndv, truncated_reads_stop_at_the_receive)
{
	static uint8_t buf[64];
	struct iovec iov[1] = { { buf, sizeof(buf) } };
	uint32_t lkeys[1] = { 5 }, lens[2] = { 50, 50 };
	struct rivet_wire_rts rts = rt_rts(2, lens);
	struct ibv_send_wr wrs[16];
	struct ibv_sge sges[16];

	cr_assert_eq(rivet_rndv_plan(iov, 1, lkeys, &rts, 0, 64, 1 << 30, 0,
				     wrs, sges, 16), 2);
	cr_expect_eq(sges[0].length, 50);
	cr_expect_eq(sges[1].length, 14);
	cr_expect_eq(wrs[1].wr.rdma.remote_addr, 0x200000);
	/* nothing to read (a bad RTS's segments are dropped): no reads */
	rts.nsegs = 0;
	cr_expect_eq(rivet_rndv_plan(iov, 1, lkeys, &rts, 0, 64, 1 << 30, 0,
				     wrs, sges, 16), 0);
}

Test(rndv, the_end_at_the_receiver)
{
	struct rivet_cq_entry e = { .len = 100 };

	cr_expect_eq(rivet_rndv_outcome(0, 0, &e), 0);
	cr_expect_eq(e.err, 0);
	cr_expect_eq(e.len, 100);
	/* truncation: the receiver's error, the sender's success */
	e = (struct rivet_cq_entry) { .len = 100, .olen = 20 };
	cr_expect_eq(rivet_rndv_outcome(FI_ETRUNC, 0, &e), 0);
	cr_expect_eq(e.err, FI_ETRUNC);
	cr_expect_eq(e.len, 100);
	cr_expect_eq(e.olen, 20);
	/* a failed read: nothing placed can be told, the sender hears it */
	e = (struct rivet_cq_entry) { .len = 100 };
	cr_expect_eq(rivet_rndv_outcome(FI_EACCES, IBV_WC_REM_ACCESS_ERR,
					&e), FI_EACCES);
	cr_expect_eq(e.err, FI_EACCES);
	cr_expect_eq(e.prov_errno, IBV_WC_REM_ACCESS_ERR);
	cr_expect_eq(e.len, 0);
	/* an error the completion already has stays */
	e = (struct rivet_cq_entry) { .len = 8, .err = FI_ECANCELED,
				      .prov_errno = RIVET_PERR_CANCELED };
	cr_expect_eq(rivet_rndv_outcome(FI_EIO, RIVET_PERR_CONN, &e), FI_EIO);
	cr_expect_eq(e.err, FI_ECANCELED);
	cr_expect_eq(e.prov_errno, RIVET_PERR_CANCELED);
}

Test(rndv, a_receive_whose_fin_failed)
{
	struct rivet_cq_entry e = { .len = 100, .tag = 7 };

	/* the reads said success, the FIN that should vouch for them
	 * failed: the receive fails, claiming no bytes */
	cr_expect_eq(rivet_rndv_outcome(0, 0, &e), 0);
	rivet_rndv_unconfirmed(&e);
	cr_expect_eq(e.err, FI_ECONNABORTED);
	cr_expect_eq(e.prov_errno, RIVET_PERR_CONN);
	cr_expect_eq(e.len, 0);
	cr_expect_eq(e.tag, 7);
	/* so does a truncated one: the bytes that fit are as unsure */
	e = (struct rivet_cq_entry) { .len = 100, .olen = 20 };
	cr_expect_eq(rivet_rndv_outcome(FI_ETRUNC, 0, &e), 0);
	rivet_rndv_unconfirmed(&e);
	cr_expect_eq(e.err, FI_ECONNABORTED);
	cr_expect_eq(e.len, 0);
}

Test(rndv, a_fin_at_the_sender)
{
	static struct rivet_conn conn, other;
	struct rivet_tx_op ops[4];
	struct rivet_tx_op *op = NULL;
	uint32_t i;

	memset(ops, 0, sizeof(ops));
	for (i = 0; i < 4; i++)
		ops[i] = (struct rivet_tx_op) {
			.index = i, .gen = 3, .rndv = true, .conn = &conn,
			.state = RIVET_TX_WAIT_FIN,
		};
	cr_expect_eq(rivet_rndv_fin_verdict(ops, 4, &conn,
					    rivet_wire_send_id(3, 2), &op),
		     RIVET_FIN_DONE);
	cr_expect_eq(op, &ops[2]);
	ops[1].state = RIVET_TX_POSTED;	/* the FIN beat the send's WC */
	cr_expect_eq(rivet_rndv_fin_verdict(ops, 4, &conn,
					    rivet_wire_send_id(3, 1), &op),
		     RIVET_FIN_EARLY);
	ops[0].state = RIVET_TX_QUEUED;
	cr_expect_eq(rivet_rndv_fin_verdict(ops, 4, &conn,
					    rivet_wire_send_id(3, 0), &op),
		     RIVET_FIN_IGNORE);
	/* strays: past the pool, a reused slot, no rendezvous, another
	 * connection */
	cr_expect_eq(rivet_rndv_fin_verdict(ops, 4, &conn,
					    rivet_wire_send_id(3, 4), &op),
		     RIVET_FIN_STRAY);
	cr_expect_eq(rivet_rndv_fin_verdict(ops, 4, &conn,
					    rivet_wire_send_id(2, 3), &op),
		     RIVET_FIN_STRAY);
	ops[3].rndv = false;
	cr_expect_eq(rivet_rndv_fin_verdict(ops, 4, &conn,
					    rivet_wire_send_id(3, 3), &op),
		     RIVET_FIN_STRAY);
	cr_expect_eq(rivet_rndv_fin_verdict(ops, 4, &other,
					    rivet_wire_send_id(3, 2), &op),
		     RIVET_FIN_STRAY);
}

/* The pieces of a long RMA read (FI_RIVET_RDMA_SEG): each takes its bytes
 * of the local sges, across their boundaries. */
Test(rndv, read_pieces_take_their_slice_of_the_sges)
{
	struct ibv_sge sges[3] = {
		{ .addr = 0x1000, .length = 100, .lkey = 1 },
		{ .addr = 0x2000, .length = 50, .lkey = 2 },
		{ .addr = 0x3000, .length = 10, .lkey = 3 },
	}, out[3];
	uint64_t off, total = 0;

	cr_assert_eq(rivet_sge_slice(sges, 3, 90, 64, out), 3);
	cr_expect_eq(out[0].addr, 0x1000 + 90);
	cr_expect_eq(out[0].length, 10);
	cr_expect_eq(out[0].lkey, 1);
	cr_expect_eq(out[1].addr, 0x2000);
	cr_expect_eq(out[1].length, 50);
	cr_expect_eq(out[2].addr, 0x3000);
	cr_expect_eq(out[2].length, 4);
	cr_expect_eq(out[2].lkey, 3);
	cr_assert_eq(rivet_sge_slice(sges, 3, 100, 50, out), 1);
	cr_expect_eq(out[0].addr, 0x2000);
	cr_expect_eq(out[0].length, 50);
	/* pieces of 16 cover the 160 bytes once */
	for (off = 0; off < 160; off += 16) {
		int i, k = rivet_sge_slice(sges, 3, off, 16, out);

		for (i = 0; i < k; i++)
			total += out[i].length;
	}
	cr_expect_eq(total, 160);
	cr_expect_eq(rivet_rma_seg_count(160, 16), 10);
	cr_expect_eq(rivet_rma_seg_count(161, 16), 11);
	cr_expect_eq(rivet_rma_seg_count(1, 1024), 1);
	cr_expect_eq(rivet_rma_seg_count((uint64_t)1 << 40, SIZE_MAX), 1);
}
