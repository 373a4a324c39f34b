/* SPDX-License-Identifier: MIT */
/*
 * What the shared contexts of every endpoint type have in common
 * (fi_endpoint(3) SHARED CONTEXTS): transmit contexts, and the control,
 * option and size calls of any receive context.  The receive contexts
 * themselves are the endpoint types' own: an SRQ for MSG and DGRAM
 * (msg/rivet_msg_srx.c), shared software matching for RDM
 * (rdm/rivet_rdm_srx.c); fi_srx_context picks one (rivet_ep.c).
 *
 * Transmit (fi_stx_context): verbs has no send queue that QPs share (RC
 * needs one per connection; an RDM endpoint already shares its staging
 * and control resources over all its connections).  An endpoint bound to
 * a transmit context keeps its own send queue, sized by the context's
 * tx_attr; the context holds the attributes and its endpoints.
 */
#include <stdlib.h>

#include "rivet.h"

/* ---- transmit contexts ---- */

static int rivet_stx_close(struct fid *fid)
{
	struct rivet_stx *stx = container_of(fid, struct rivet_stx,
					     stx_fid.fid);

	if (atomic_load(&stx->refcnt))
		return -FI_EBUSY;
	atomic_fetch_sub(&stx->domain->refcnt, 1);
	free(stx);
	return 0;
}

static struct fi_ops g_rivet_stx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_stx_close,
	.bind = rivet_no_bind,
	.control = rivet_no_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

int rivet_stx_open(struct fid_domain *domain, struct fi_tx_attr *attr,
		   struct fid_stx **stx_p, void *context)
{
	struct rivet_domain *dom = to_rdomain(domain);
	const struct fi_tx_attr *ours = dom->info->tx_attr;
	struct rivet_stx *stx;

	if (!stx_p)
		return -FI_EINVAL;
	if (attr && ours && (attr->size > ours->size ||
			     attr->iov_limit > ours->iov_limit ||
			     attr->inject_size > ours->inject_size))
		return -FI_EINVAL;
	stx = calloc(1, sizeof(*stx));
	if (!stx)
		return -FI_ENOMEM;
	stx->domain = dom;
	if (attr)
		stx->attr = *attr;
	atomic_init(&stx->refcnt, 0);
	stx->stx_fid.fid.fclass = FI_CLASS_STX_CTX;
	stx->stx_fid.fid.context = context;
	stx->stx_fid.fid.ops = &g_rivet_stx_fi_ops;
	atomic_fetch_add(&dom->refcnt, 1);
	*stx_p = &stx->stx_fid;
	return 0;
}

int rivet_stx_bind(struct rivet_domain *dom, struct fid *bfid,
		   struct rivet_stx **stx_p, size_t *tx_size_p)
{
	struct rivet_stx *stx = container_of(bfid, struct rivet_stx,
					     stx_fid.fid);

	if (*stx_p || stx->domain != dom)
		return -FI_EINVAL;
	*stx_p = stx;
	if (stx->attr.size)
		*tx_size_p = stx->attr.size;
	atomic_fetch_add(&stx->refcnt, 1);
	return 0;
}

void rivet_stx_release(struct rivet_stx *stx)
{
	if (stx)
		atomic_fetch_sub(&stx->refcnt, 1);
}

/* ---- any receive context ---- */

/* FI_ENABLE, FI_GETOPSFLAG, FI_SETOPSFLAG of any receive context. */
int rivet_srx_control_flags(uint64_t *rx_op_flags, int command, void *arg)
{
	uint64_t *flags = arg;

	switch (command) {
	case FI_ENABLE:
		return 0;
	case FI_GETOPSFLAG:
		if (!flags || (*flags & FI_TRANSMIT))
			return -FI_EINVAL;
		*flags = *rx_op_flags;
		return 0;
	case FI_SETOPSFLAG:
		if (!flags || (*flags & FI_TRANSMIT))
			return -FI_EINVAL;
		*rx_op_flags = *flags & ~FI_RECV;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

int rivet_srx_getopt(fid_t fid, int level, int optname, void *optval,
		     size_t *optlen)
{
	return -FI_ENOPROTOOPT;
}

int rivet_srx_setopt(fid_t fid, int level, int optname, const void *optval,
		     size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

ssize_t rivet_srx_tx_size_left(struct fid_ep *fid)
{
	return -FI_ENOSYS;
}
