/* SPDX-License-Identifier: MIT */
/*
 * Provider entry point (fi_prov_ini), the provider descriptor and cleanup
 * (the errno conversion is in verbs/rivet_verbs.c, the -FI_ENOSYS stubs in
 * rivet_nosys.c).
 */
#include "rivet.h"

static void rivet_prov_cleanup(void)
{
	rivet_mr_monitor_finalize();
	rivet_devs_finalize();
}

struct fi_provider g_rivet_prov = {
	.name = RIVET_PROV_NAME,
	.version = RIVET_PROV_VERSION,
	.fi_version = RIVET_API_VERSION,
	.getinfo = rivet_getinfo,
	.fabric = rivet_fabric_open,
	.cleanup = rivet_prov_cleanup,
};

__attribute__((visibility("default"))) struct fi_provider *fi_prov_ini(void)
{
	rivet_params_initialize();
	return &g_rivet_prov;
}
