/* SPDX-License-Identifier: MIT */
/*
 * The provider globals that rivet's pure sources reference, so the unit
 * tests link without the plugin (rivet_init.c, rivet_params.c, rivet_verbs.c).
 */
#include "rivet.h"

struct fi_provider g_rivet_prov = {
	.name = RIVET_PROV_NAME,
	.version = RIVET_PROV_VERSION,
	.fi_version = FI_VERSION(1, 17),
};

/* The defaults of rivet_params.c */
struct rivet_params g_rivet_params = {
	.tx_size = 384,
	.rx_size = 384,
	.cq_size = 1024,
	.inject_size = 0,
	.iface = NULL,
	.ipv6 = 1,
	.poll_yield_usec = RIVET_POLL_YIELD_AUTO,
};

/* SIDR needs a device (rivet_av_sidr.c): the AV's unit tests make no
 * DGRAM domain, and an address that needed it would find nobody. */
int rivet_ud_resolve(const struct sockaddr *svc, int timeout_ms,
		     union rivet_sockaddr *name_p)
{
	return -FI_EADDRNOTAVAIL;
}
