/* SPDX-License-Identifier: MIT */
/*
 * What a receiver checks of every RDM message before it acts on it (pure:
 * unit tested in test/test_proto.c; docs/protocol.md, "What a receiver
 * checks").  A peer can be buggy, stale or hostile: nothing it sends may
 * make rivet read past a buffer, report bytes it never placed, or pass a
 * status on that is not an FI_E* code.
 */
#include <stddef.h>

#include <rdma/fi_errno.h>

#include "rivet_proto.h"

static size_t rivet_wire_body_len(const struct rivet_wire_hdr *hdr)
{
	switch (hdr->op) {
	case RIVET_OP_EAGER:
		return hdr->len;
	case RIVET_OP_RTS:
		return sizeof(struct rivet_wire_rts);
	case RIVET_OP_FIN:
		return sizeof(struct rivet_wire_fin);
	case RIVET_OP_ATOMIC:
		return sizeof(struct rivet_wire_atomic) + hdr->len;
	case RIVET_OP_RMA_EVENT:
		return sizeof(struct rivet_wire_rma_event);
	case RIVET_OP_PING:
		return 0;
	case RIVET_OP_ATOMIC_RESP:
		return hdr->len > sizeof(struct rivet_wire_atomic_resp) ?
		       hdr->len : sizeof(struct rivet_wire_atomic_resp);
	default:
		return SIZE_MAX;
	}
}

int rivet_wire_check(const void *msg, size_t len)
{
	const struct rivet_wire_hdr *hdr = msg;
	size_t body;

	if (len < sizeof(*hdr) || hdr->version != RIVET_WIRE_VERSION)
		return -FI_EINVAL;
	/* a length beyond what came is malformed (and could wrap a sum) */
	if (hdr->op != RIVET_OP_RTS && hdr->len > len)
		return -FI_EINVAL;
	body = rivet_wire_body_len(hdr);
	if (body == SIZE_MAX || len - sizeof(*hdr) < body)
		return -FI_EINVAL;
	return 0;
}

int rivet_wire_rts_check(const struct rivet_wire_rts *rts, uint64_t len)
{
	uint64_t total = 0;
	uint32_t i;

	if (rts->nsegs > RIVET_RNDV_MAX_SEGS || (len && !rts->nsegs))
		return -FI_EINVAL;
	for (i = 0; i < rts->nsegs; i++) {
		if (!rts->segs[i].len ||
		    rts->segs[i].addr + rts->segs[i].len < rts->segs[i].addr)
			return -FI_EINVAL;
		total += rts->segs[i].len;
	}
	return total == len ? 0 : -FI_EINVAL;
}

int rivet_wire_status(int32_t status)
{
	if (status > 0 && status < FI_ERRNO_MAX)
		return status;
	return status ? FI_EIO : 0;
}
