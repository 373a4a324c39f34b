/* SPDX-License-Identifier: MIT */
/*
 * Defaults that work around a device's defects.
 *
 * The transport retry count of rivet's RC connections (rdma_cm's
 * retry_count: how many times a packet is sent again before its operation
 * fails with IBV_WC_RETRY_EXC_ERR).  The verbs API takes 0..7, and 7 is
 * finite on hardware; but rxe (Linux, rxe_comp.c) never counts a retry
 * count of 7 down, as if it were an RNR retry count, so with 7 a dead
 * peer or a lost link never fails anything on rxe.  So the default is 6
 * there.  Pure, unit tested.
 */
#include <stdint.h>

#include "rivet.h"

uint8_t rivet_retry_count(size_t param, uint32_t vendor_id)
{
	if (param == RIVET_RETRY_AUTO)
		return vendor_id == RIVET_VENDOR_RXE ? 6 : 7;
	return param > 7 ? 7 : (uint8_t)param;
}

/*
 * rxe (Linux 6.12, rxe_comp.c) can end a failed request as successful:
 * when its completer meets a late acknowledgement in the middle of a
 * read's response of several packets (below) it reaches its error state
 * for the request at the head of the send queue without setting its
 * status (a kernel WARNING at rxe_comp.c:827), completes it as
 * IBV_WC_SUCCESS (an RDMA read whose bytes never all came, a write not
 * acknowledged), and only then moves the QP to the error state.  Nothing
 * in the completion tells; but every work request posted after it fails.
 * A work request posted behind the operation can be its witness: a
 * rendezvous receive is reported once its FIN is acknowledged, an RMA
 * operation once a zero-byte read behind it completes, and either fails
 * if its witness does.  Reads of one packet (rivet_rdma_seg_default)
 * never meet the defect, and the zero-byte reads meet two others under
 * packet loss (rivet_rma_add_tail): so the witnesses are the default on
 * rxe only where reads are not cut.  Hardware needs none (one more round
 * trip per such operation): there they are off unless asked for.
 */
bool rivet_confirm_default(size_t param, uint32_t vendor_id, bool reads_cut)
{
	if (param == RIVET_CONFIRM_AUTO)
		return vendor_id == RIVET_VENDOR_RXE && !reads_cut;
	return param != 0;
}

/*
 * Two defects of rxe (Linux 6.12, rxe_comp.c) that one packet per RDMA
 * read and write avoids:
 *
 * Its completer fails a QP, and ends the request at the head of its send
 * queue as successful, when an acknowledgement that came late (a
 * duplicate, or one overtaken on the network) arrives while a read's
 * response of several packets is coming in: check_psn() hands it to
 * check_ack(), which takes it as the end of the response (the completer's
 * opcode becomes -1), so the response's next packet is "not the start of
 * one" and the completer goes to its error state with the request's
 * status still IBV_WC_SUCCESS (the WARNING at rxe_comp.c:827).  Sends and
 * writes on the same QP are what acknowledgements come for.  A read whose
 * response is one packet never meets it (contrib/read-check.c -w shows
 * the defect and its absence).
 *
 * A NAK for a sequence error (a packet that overtook another) moves the
 * completer on without resetting its retry counter, and while a retry is
 * under way it starts no new one: the rest waits for the retry timer,
 * which counts a try.  Only a positive acknowledgement resets the count,
 * and rxe asks for one at the end of a message.  So under reordering a
 * write of many packets uses a try for every reordered stretch of it and
 * fails with IBV_WC_RETRY_EXC_ERR; writes of one packet are acknowledged
 * each.
 */
size_t rivet_rdma_seg_default(size_t param, uint32_t vendor_id, size_t mtu)
{
	if (param == RIVET_RDMA_SEG_AUTO)
		return vendor_id == RIVET_VENDOR_RXE && mtu ? mtu : SIZE_MAX;
	return param ? param : SIZE_MAX;
}
