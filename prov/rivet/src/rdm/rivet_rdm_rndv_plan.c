/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous's decisions that need no verbs call (pure: unit tested in
 * test/test_rndv.c): what an RTS finds at its receive, the RDMA reads that
 * move the message, how the rendezvous ends for the receiver and what its
 * FIN says, and what a FIN means to the sender's operation; and the
 * pieces of an RMA read or write cut short (FI_RIVET_RDMA_SEG).
 * rivet_rdm_rndv.c and rivet_rdm_rma_wr.c do the posting.
 */
#include "rivet_rdm.h"

int rivet_rndv_rts_accept(const struct rivet_wire_rts *rts, uint64_t len,
			  size_t cap, uint64_t *olen_p, int *prov_errno_p)
{
	if (rivet_wire_rts_check(rts, len)) {
		*prov_errno_p = RIVET_PERR_PROTO;
		return FI_EIO;
	}
	if (len > cap) {
		*olen_p = len - cap;
		return FI_ETRUNC;	/* the bytes that fit are still read */
	}
	return 0;
}

/* Walks local and remote segments together from byte off: one read per
 * overlap, no larger than chunk (the port's message size, or
 * FI_RIVET_RDMA_SEG). */
size_t rivet_rndv_plan(const struct iovec *iov, size_t count,
		       const uint32_t *lkeys, const struct rivet_wire_rts *rts,
		       uint64_t off, uint64_t len, size_t chunk,
		       uint64_t wr_id, struct ibv_send_wr *wrs,
		       struct ibv_sge *sges, size_t max)
{
	size_t li = 0, ri = 0, loff = off, roff = off, n = 0, part;
	uint64_t left = len > off ? len - off : 0;

	/* the first local and remote segments that byte off falls in */
	while (li < count && loff >= iov[li].iov_len)
		loff -= iov[li++].iov_len;
	while (ri < rts->nsegs && roff >= rts->segs[ri].len)
		roff -= rts->segs[ri++].len;
	while (left && n < max && li < count && ri < rts->nsegs) {
		part = RIVET_MIN(iov[li].iov_len - loff,
				 rts->segs[ri].len - roff);
		part = RIVET_MIN(RIVET_MIN(part, left), chunk);
		sges[n] = (struct ibv_sge) {
			.addr = (uintptr_t)iov[li].iov_base + loff,
			.length = (uint32_t)part, .lkey = lkeys[li],
		};
		wrs[n] = (struct ibv_send_wr) {
			.wr_id = wr_id, .sg_list = &sges[n],
			.num_sge = 1, .opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma.remote_addr = rts->segs[ri].addr + roff,
			.wr.rdma.rkey = rts->segs[ri].rkey,
		};
		n++;
		left -= part;
		loff += part;
		roff += part;
		if (loff == iov[li].iov_len && ++li)
			loff = 0;
		if (roff == rts->segs[ri].len && ++ri)
			roff = 0;
	}
	return n;
}

int32_t rivet_rndv_outcome(int status, int prov_errno,
			   struct rivet_cq_entry *comp)
{
	if (status && !comp->err) {
		comp->err = status;
		comp->prov_errno = prov_errno;
	}
	if (status && status != FI_ETRUNC)
		comp->len = 0;	/* nothing placed that can be told */
	/* the sender hears whether its data arrived (a truncation is the
	 * receiver's own error: the bytes that fit did) */
	return status == FI_ETRUNC ? 0 : status;
}

void rivet_rndv_unconfirmed(struct rivet_cq_entry *comp)
{
	comp->err = FI_ECONNABORTED;
	comp->prov_errno = RIVET_PERR_CONN;
	comp->len = 0;
}

enum rivet_fin_verdict rivet_rndv_fin_verdict(const struct rivet_tx_op *ops,
					      size_t tx_size,
					      const struct rivet_conn *conn,
					      uint64_t send_id,
					      struct rivet_tx_op **op_p)
{
	uint32_t index = rivet_wire_send_id_index(send_id);
	const struct rivet_tx_op *op;

	if (index >= tx_size)
		return RIVET_FIN_STRAY;
	op = &ops[index];
	/* the RTS went out on op->conn: its FIN comes back on it */
	if (op->gen != rivet_wire_send_id_gen(send_id) || !op->rndv ||
	    op->conn != conn)
		return RIVET_FIN_STRAY;
	*op_p = (struct rivet_tx_op *)op;
	if (op->state == RIVET_TX_WAIT_FIN)
		return RIVET_FIN_DONE;
	if (op->state == RIVET_TX_POSTED)
		return RIVET_FIN_EARLY;
	return RIVET_FIN_IGNORE;
}

/* The local bytes [off, off + len) of sges (n of them) as sges in out;
 * returns how many (at most n).  Pure, unit tested. */
int rivet_sge_slice(const struct ibv_sge *sges, int n, uint64_t off,
		    uint64_t len, struct ibv_sge *out)
{
	int i, k = 0;
	uint64_t part;

	for (i = 0; i < n && len; i++) {
		if (off >= sges[i].length) {
			off -= sges[i].length;
			continue;
		}
		part = RIVET_MIN(sges[i].length - off, len);
		out[k++] = (struct ibv_sge) {
			.addr = sges[i].addr + off, .length = (uint32_t)part,
			.lkey = sges[i].lkey,
		};
		len -= part;
		off = 0;
	}
	return k;
}

/* How many pieces a read of len bytes takes, at most seg bytes each. */
uint64_t rivet_rma_seg_count(uint64_t len, size_t seg)
{
	return len ? len / seg + (len % seg != 0) : 1;
}
