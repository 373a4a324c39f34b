/* SPDX-License-Identifier: MIT */
/*
 * The words of an error completion: every entry rivet writes carries a
 * prov_errno (a verbs status or a rivet reason) and fi_cq_strerror says
 * which operation failed, with which peer, and why.
 */
#include <stdio.h>
#include <string.h>

#include "rivet.h"
#include "rivet_abi.h"

int rivet_perr_of(int err)
{
	switch (err) {
	case FI_ETRUNC:
		return RIVET_PERR_TRUNC;
	case FI_ECANCELED:
		return RIVET_PERR_CANCELED;
	case FI_ENOMSG:
		return RIVET_PERR_NOMSG;
	case FI_ECONNRESET:
	case FI_ECONNABORTED:
	case FI_ECONNREFUSED:
	case FI_EHOSTUNREACH:
	case FI_ETIMEDOUT:
		return RIVET_PERR_CONN;
	case FI_ENOMEM:
		return RIVET_PERR_REG;
	default:
		return RIVET_PERR_OTHER;
	}
}

const char *rivet_perr_str(int prov_errno)
{
	switch (prov_errno) {
	case RIVET_PERR_PEER_RX:
		return "the receiver could not place the data";
	case RIVET_PERR_CONN:
		return "the connection to the peer failed or was refused";
	case RIVET_PERR_PROTO:
		return "the peer sent a malformed rivet message";
	case RIVET_PERR_REG:
		return "the buffer could not be registered";
	case RIVET_PERR_CANCELED:
		return "cancelled";
	case RIVET_PERR_NOMSG:
		return "no matching message";
	case RIVET_PERR_TRUNC:
		return "the message is longer than the receive buffer";
	case RIVET_PERR_TARGET:
		return "the target refused the operation";
	case RIVET_PERR_AV_REMOVED:
		return "the peer was removed from the address vector";
	case RIVET_PERR_OTHER:
		return "rivet error";
	default:
		if (prov_errno > 0 && prov_errno < RIVET_PERR_BASE)
			return rivet_wc_status_str(prov_errno);
		return "unknown provider error";
	}
}

static const char *rivet_cq_err_op(uint64_t flags)
{
	if (flags & FI_REMOTE_WRITE)
		return "remote write";
	if (flags & FI_REMOTE_READ)
		return "remote read";
	if (flags & FI_ATOMIC)
		return "atomic";
	if (flags & FI_RMA)
		return (flags & FI_READ) ? "RMA read" : "RMA write";
	if (flags & FI_SEND)
		return "send";
	if (flags & FI_RECV)
		return "receive";
	return "operation";
}

void rivet_cq_err_text(const struct rivet_cq_entry *e, char *buf,
		       size_t len)
{
	const char *dir = (e->flags & (FI_RECV | FI_REMOTE_READ |
				       FI_REMOTE_WRITE)) ? "from" : "to";
	char peer[40] = "";
	int perr = e->prov_errno ? e->prov_errno : rivet_perr_of(e->err);

	if (e->src != FI_ADDR_NOTAVAIL && e->src != FI_ADDR_UNSPEC)
		snprintf(peer, sizeof(peer), " %s fi_addr %" PRIu64, dir,
			 (uint64_t)e->src);
	if (perr < RIVET_PERR_BASE)
		snprintf(buf, len, "%s%s failed: %s (verbs status %d: %s)",
			 rivet_cq_err_op(e->flags), peer, fi_strerror(e->err),
			 perr, rivet_perr_str(perr));
	else
		snprintf(buf, len, "%s%s failed: %s (%s)",
			 rivet_cq_err_op(e->flags), peer, rivet_perr_str(perr),
			 fi_strerror(e->err));
}

const char *rivet_wc_status_str(int status)
{
	return ibv_wc_status_str((enum ibv_wc_status)status);
}

/* A work completion status as the FI_E* code of its error entry. */
int rivet_wc_status_to_fi(int status)
{
	switch (status) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_WR_FLUSH_ERR:
		return FI_ECANCELED;
	case IBV_WC_LOC_LEN_ERR:
		return FI_ETRUNC;	/* a receive buffer too small */
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_MW_BIND_ERR:
		return FI_EACCES;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_INV_RD_REQ_ERR:
	case IBV_WC_REM_OP_ERR:
		return FI_EREMOTEIO;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RESP_TIMEOUT_ERR:
		return FI_ETIMEDOUT;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return FI_ENORX;
	case IBV_WC_REM_ABORT_ERR:
		return FI_ECONNABORTED;
	default:
		return FI_EIO;
	}
}

size_t rivet_cq_err_entry_size(uint32_t version)
{
	size_t v1_5 = offsetof(struct fi_cq_err_entry, err_data_size) +
		      sizeof(size_t);

	if (!RIVET_API_AT_LEAST(version, 1, 5))
		return offsetof(struct fi_cq_err_entry, err_data_size);
	if (!RIVET_API_AT_LEAST(version, 1, 20))
		return v1_5;
	return v1_5 + sizeof(fi_addr_t);
}

/*
 * A readerr entry, written as the application's API lays it out (its
 * fabric's api_version): never past the end of an older, shorter entry.
 * err_data: the caller's when it gave room (API >= 1.5), else the entry's
 * words in the CQ's own buffer (until the next readerr).  From 1.20 on,
 * src_addr is the peer when rivet knows it.
 */
void rivet_cq_err_fill(struct rivet_cq *cq, const struct rivet_cq_entry *e,
		       struct fi_cq_err_entry *buf)
{
	uint32_t version = cq->api_version;
	bool own = !RIVET_API_AT_LEAST(version, 1, 5) || !buf->err_data_size;
	size_t size = rivet_cq_err_entry_size(version);
	unsigned char out[sizeof(struct fi_cq_err_entry) + sizeof(fi_addr_t)];
	struct fi_cq_err_entry entry = {
		.op_context = e->op_context, .flags = e->flags,
		.len = e->len, .buf = e->buf, .data = e->data,
		.err = e->err, .prov_errno = e->prov_errno,
		.tag = e->tag, .olen = e->olen,
		.err_data = own ? cq->err_buf : buf->err_data,
	};
	fi_addr_t src = e->src == FI_ADDR_UNSPEC ? FI_ADDR_NOTAVAIL : e->src;

	if (own) {
		rivet_cq_err_text(e, cq->err_buf, sizeof(cq->err_buf));
		entry.err_data_size = strlen(cq->err_buf) + 1;
	}
	/* built on headers older than 1.20, the struct has no src_addr:
	 * place it by the 1.20 layout, which is what such a reader has */
	memcpy(out, &entry, sizeof(entry));
	memcpy(out + rivet_cq_err_entry_size(FI_VERSION(1, 19)), &src,
	       sizeof(src));
	memcpy(buf, out, size);
}

const char *rivet_cq_strerror(struct fid_cq *cq_fid, int prov_errno,
			      const void *err_data, char *buf, size_t len)
{
	struct rivet_cq *cq = to_rcq(cq_fid);
	const char *str = rivet_perr_str(prov_errno);

	/* the entry's own words, when err_data is what readerr gave */
	if (err_data && err_data == cq->err_buf && cq->err_buf[0])
		str = cq->err_buf;
	if (buf && len) {
		snprintf(buf, len, "%s", str);
		return buf;
	}
	return str;
}
