/* SPDX-License-Identifier: MIT */
/*
 * The prov_errno of EQ error entries and its text for fi_eq_strerror: an
 * rdma_cm event and its status packed into one int, or a plain errno from
 * a librdmacm call, so that the text names what really happened.
 */
#include <stdlib.h>

#include "rivet.h"

#define RIVET_CM_ERR_SHIFT 16
#define RIVET_CM_ERR_STATUS_MASK 0xffff

/* The IB CM's reject reasons (IBTA, Table "REJ reason"; RoCE uses them too):
 * the status of RDMA_CM_EVENT_REJECTED when it is positive. */
static const char *const g_rivet_cm_rej_reasons[] = {
	[1] = "no QP available",
	[2] = "no EEC available",
	[3] = "no resources available at the peer",
	[4] = "timeout",
	[5] = "unsupported request",
	[6] = "invalid communication ID",
	[7] = "invalid communication instance",
	[8] = "invalid service ID: nobody listens at that address and port",
	[9] = "invalid transport service type",
	[10] = "stale connection",
	[11] = "RDC does not exist",
	[12] = "primary remote port GID rejected",
	[13] = "primary remote port LID rejected",
	[14] = "invalid primary SL",
	[15] = "invalid primary traffic class",
	[16] = "invalid primary hop limit",
	[17] = "invalid primary packet rate",
	[18] = "alternate remote port GID rejected",
	[19] = "alternate remote port LID rejected",
	[20] = "invalid alternate SL",
	[21] = "invalid alternate traffic class",
	[22] = "invalid alternate hop limit",
	[23] = "invalid alternate packet rate",
	[24] = "port redirection (CM)",
	[25] = "port redirection",
	[26] = "invalid MTU",
	[27] = "insufficient responder resources",
	[28] = "rejected by the peer (fi_reject or no accept)",
	[29] = "invalid RNR retry count",
	[30] = "duplicate local communication ID",
	[31] = "invalid class version",
	[32] = "invalid flow label",
	[33] = "invalid alternate flow label",
};

int rivet_cm_err_pack(int event, int status)
{
	return ((event + 1) << RIVET_CM_ERR_SHIFT) |
	       (status & RIVET_CM_ERR_STATUS_MASK);
}

bool rivet_cm_err_unpack(int prov_errno, int *event_p, int *status_p)
{
	if (prov_errno <= RIVET_CM_ERR_STATUS_MASK)
		return false;
	*event_p = (prov_errno >> RIVET_CM_ERR_SHIFT) - 1;
	*status_p = (int16_t)(prov_errno & RIVET_CM_ERR_STATUS_MASK);
	return true;
}

static const char *rivet_cm_rej_reason(int status)
{
	size_t n = sizeof(g_rivet_cm_rej_reasons) /
		   sizeof(g_rivet_cm_rej_reasons[0]);

	if (status > 0 && (size_t)status < n && g_rivet_cm_rej_reasons[status])
		return g_rivet_cm_rej_reasons[status];
	return "IB CM reject reason";
}

/* Negative statuses are errnos; a positive one on a reject is the IB CM's
 * reason (on iWARP rejects carry -ECONNREFUSED instead). */
static void rivet_cm_err_event_str(int event, int status, char *buf,
				   size_t len)
{
	const char *name = rdma_event_str((enum rdma_cm_event_type)event);

	if (status < 0)
		snprintf(buf, len, "%s, status %d: %s", name, status,
			 strerror(-status));
	else if (status > 0 && event == RDMA_CM_EVENT_REJECTED)
		snprintf(buf, len, "%s, reject reason %d: %s", name, status,
			 rivet_cm_rej_reason(status));
	else
		snprintf(buf, len, "%s, status %d", name, status);
}

const char *rivet_cm_err_str(int prov_errno, char *buf, size_t len)
{
	int event, status;

	if (!buf || !len)
		return NULL;
	if (!prov_errno)
		snprintf(buf, len, "no provider error (see err)");
	else if (rivet_cm_err_unpack(prov_errno, &event, &status))
		rivet_cm_err_event_str(event, status, buf, len);
	else if (prov_errno > 0)
		snprintf(buf, len, "librdmacm call failed: %s (errno %d)",
			 strerror(prov_errno), prov_errno);
	else
		snprintf(buf, len, "unknown provider error %d", prov_errno);
	return buf;
}
