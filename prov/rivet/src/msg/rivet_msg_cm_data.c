/* SPDX-License-Identifier: MIT */
/*
 * Framing of the user's connection data inside rdma_cm private data: a
 * version byte and a length byte, then the bytes.  The receiver gets the
 * whole padded private-data field, so the length has to travel with it.
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
