/* SPDX-License-Identifier: MIT */
/*
 * Framing of the user's connection data inside rdma_cm private data: a
 * version byte and a length byte, then the bytes.  The receiver gets the
 * whole padded private-data field, so the length has to travel with it.
 * Also the text of a CM error's prov_errno.
 */
#include "rivet.h"

struct rivet_cm_hdr {
	uint8_t version;
	uint8_t len;
};

_Static_assert(sizeof(struct rivet_cm_hdr) == RIVET_CM_HDR_SIZE,
	       "CM data header is 2 bytes on the wire");
_Static_assert(RIVET_CM_DATA_SIZE <= UINT8_MAX,
	       "CM data length must fit the length byte");

int rivet_cm_data_pack(const void *param, size_t len, uint8_t *out,
		       size_t out_size, size_t *out_len_p)
{
	struct rivet_cm_hdr hdr = { .version = RIVET_PROTO_VERSION };

	if ((len && !param) || !out || !out_len_p ||
	    len > RIVET_CM_DATA_SIZE)
		return -FI_EINVAL;
	if (out_size < sizeof(hdr) + len)
		return -FI_ETOOSMALL;
	hdr.len = (uint8_t)len;
	memcpy(out, &hdr, sizeof(hdr));
	if (len)
		memcpy(out + sizeof(hdr), param, len);
	*out_len_p = sizeof(hdr) + len;
	return 0;
}

int rivet_cm_data_unpack(const void *in, size_t in_len, const void **data_p,
			 size_t *len_p)
{
	struct rivet_cm_hdr hdr;

	if ((in_len && !in) || !data_p || !len_p || in_len < sizeof(hdr))
		return -FI_EINVAL;
	memcpy(&hdr, in, sizeof(hdr));
	/* another protocol version, or a length running past the data */
	if (hdr.version != RIVET_PROTO_VERSION ||
	    hdr.len > RIVET_CM_DATA_SIZE || hdr.len > in_len - sizeof(hdr))
		return -FI_EINVAL;
	*data_p = (const uint8_t *)in + sizeof(hdr);
	*len_p = hdr.len;
	return 0;
}

/* The IB CM reject reasons (IBTA vol. 1, 12.6.7.2) that RoCE and IB
 * peers send; rdma_cm reports them as a REJECTED event's status. */
static const char *const g_rivet_cm_reject_reasons[] = {
	[1] = "no QP available",
	[2] = "no EEC available",
	[3] = "no resources at the peer",
	[4] = "timed out at the peer",
	[5] = "request not supported",
	[6] = "invalid communication id",
	[7] = "invalid communication instance",
	[8] = "no listener on that service id (port)",
	[9] = "invalid transport type",
	[10] = "stale connection",
	[11] = "RDC does not exist",
	[12] = "invalid GID",
	[13] = "invalid LID",
	[14] = "invalid service level",
	[15] = "invalid traffic class",
	[16] = "invalid hop limit",
	[17] = "invalid packet rate",
	[18] = "invalid alternate GID",
	[19] = "invalid alternate LID",
	[20] = "invalid alternate service level",
	[21] = "invalid alternate traffic class",
	[22] = "invalid alternate hop limit",
	[23] = "invalid alternate packet rate",
	[24] = "port redirected",
	[26] = "invalid MTU",
	[27] = "insufficient responder resources",
	[28] = "rejected by the application (fi_reject)",
	[29] = "invalid responder resources",
	[30] = "invalid class version",
	[31] = "invalid flow label",
	[32] = "invalid alternate flow label",
	[33] = "duplicate connection request",
};

const char *rivet_cm_prov_errno_str(int prov_errno)
{
	size_t n = sizeof(g_rivet_cm_reject_reasons) /
		   sizeof(g_rivet_cm_reject_reasons[0]);

	if (!prov_errno)
		return "no provider-specific error";
	if (prov_errno < 0)
		return strerror(-prov_errno);
	if ((size_t)prov_errno < n && g_rivet_cm_reject_reasons[prov_errno])
		return g_rivet_cm_reject_reasons[prov_errno];
	return "rejected by the peer (unknown reject reason)";
}
