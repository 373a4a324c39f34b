/* SPDX-License-Identifier: MIT */
/*
 * What every completion does to a counter, inline (the completion paths'
 * cost), and the triggered operations' check after a counter moved.  Apart
 * from rivet.h so that the files these call (resource/rivet_wait.c,
 * rivet_cntr_trig.c) are not in a circle with every file of rivet.
 */
#ifndef RIVET_CNTR_H
#define RIVET_CNTR_H

#include "rivet.h"

static inline void rivet_cntr_inc(struct rivet_cntr *cntr)
{
	if (cntr) {
		atomic_fetch_add_explicit(&cntr->value, 1,
					  memory_order_release);
		if (cntr->attr.wait_obj != FI_WAIT_NONE)
			rivet_wait_signal(&cntr->wait);
	}
}

static inline void rivet_cntr_inc_err(struct rivet_cntr *cntr)
{
	if (cntr) {
		atomic_fetch_add_explicit(&cntr->err, 1, memory_order_release);
		if (cntr->attr.wait_obj != FI_WAIT_NONE)
			rivet_wait_signal(&cntr->wait);
	}
}

static inline void rivet_trig_poll(struct rivet_domain *dom)
{
	if (atomic_load_explicit(&dom->ntrig, memory_order_relaxed))
		rivet_trig_run(dom);
}

#endif
