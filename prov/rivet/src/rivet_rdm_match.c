/* SPDX-License-Identifier: MIT */
/*
 * Software tag matching for RDM: the first posted receive that matches an
 * arriving message, and the first unexpected message that matches a new
 * receive, both in arrival/posting order (what MPI's ordering needs).
 */
#include "rivet_rdm.h"

bool rivet_match_tag(uint64_t want, uint64_t ignore, uint64_t tag)
{
	return ((want ^ tag) & ~ignore) == 0;
}

static bool rivet_match_addr(fi_addr_t want, fi_addr_t src, bool directed)
{
	return !directed || want == FI_ADDR_UNSPEC || want == src;
}

struct rivet_rx_op *rivet_match_posted(struct rivet_rx_op *head,
				       fi_addr_t src, uint64_t tag,
				       bool directed)
{
	struct rivet_rx_op *rx;

	DL_FOREACH(head, rx) {
		if (rx->released)
			continue;
		if (rivet_match_addr(rx->addr, src, directed) &&
		    rivet_match_tag(rx->tag, rx->ignore, tag))
			return rx;
	}
	return NULL;
}

struct rivet_unexp *rivet_match_unexp(struct rivet_unexp *head,
				      fi_addr_t src, uint64_t tag,
				      uint64_t ignore, bool directed)
{
	struct rivet_unexp *u;

	DL_FOREACH(head, u) {
		if (u->claimed)
			continue;
		if (rivet_match_addr(src, u->src, directed) &&
		    rivet_match_tag(tag, ignore, u->tag))
			return u;
	}
	return NULL;
}
