/* SPDX-License-Identifier: MIT */
/*
 * The libfabric ABI across API versions: values that programs built on
 * older headers still pass (libfabric 2.x deprecates or removes their
 * names, and reuses some capability bits), and the version checks that
 * decide how a structure of the application's is laid out.  Pure.
 */
#ifndef RIVET_ABI_H
#define RIVET_ABI_H

#include <stdint.h>

#include <rdma/fabric.h>

/* This build's API: what the provider reports as fi_version. */
#define RIVET_API_VERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)
/* Ask whether the application's API is at least MAJOR.MINOR. */
#define RIVET_API_AT_LEAST(version, major, minor) \
	(!FI_VERSION_LT((version), FI_VERSION((major), (minor))))

/* Registration modes as API < 1.5 knew them (still accepted alone). */
#define RIVET_MR_UNSPEC 0
#define RIVET_MR_BASIC (1 << 0)
#define RIVET_MR_SCALABLE (1 << 1)
/* API < 1.5's mode bit for local registration. */
#define RIVET_MODE_LOCAL_MR (1ULL << 55)

/* Ordering values that 2.0 deprecates (0, "strict", completion order). */
#define RIVET_ORDER_NONE 0ULL
#define RIVET_ORDER_STRICT 0x1FFULL
#define RIVET_ORDER_DATA (1ULL << 16)

/* Provider-specific protocols have the top bit (fi_endpoint(3)). */
#define RIVET_PROTO_SPECIFIC (1U << 31)

/* FI_EP_SOCK_DGRAM, the last endpoint type API 1.x defines. */
#define RIVET_EP_TYPE_MAX_V1 5

/* FI_PROGRESS_CONTROL_UNIFIED (API 1.21). */
#define RIVET_PROGRESS_CONTROL_UNIFIED 3

/* Capability bits whose meaning depends on the application's API. */
#define RIVET_CAP_V1_XPU_TRIGGER (1ULL << 44)
#define RIVET_CAP_V1_VARIABLE_MSG (1ULL << 48)
#define RIVET_CAP_V1_ONLY (RIVET_CAP_V1_XPU_TRIGGER | RIVET_CAP_V1_VARIABLE_MSG)
#define RIVET_CAP_TAGGED_DIRECTED_RECV (1ULL << 45)	/* 2.0 */
#define RIVET_CAP_TAGGED_MULTI_RECV (1ULL << 46)	/* 2.0 */
#define RIVET_CAP_EXACT_DIRECTED_RECV (1ULL << 48)	/* 2.0 */
#define RIVET_CAP_V2_ONLY \
	(RIVET_CAP_TAGGED_DIRECTED_RECV | RIVET_CAP_TAGGED_MULTI_RECV | \
	 RIVET_CAP_EXACT_DIRECTED_RECV)

static inline int rivet_api_v2(uint32_t version)
{
	return RIVET_API_AT_LEAST(version, 2, 0);
}

/*
 * The API a request is answered by.  FI_VERSION(0, x) names no API
 * (libfabric began at 1.0), so it is not a 1.0-1.4 program wanting the
 * legacy forms.  MPICH's ch4:ofi asks with version 0 before it has read
 * its settings, copies caps and mr_mode from that answer into the hints of
 * its own version, and reads only mr_mode's bit form (FI_MR_VIRT_ADDR,
 * FI_MR_PROV_KEY): a legacy FI_MR_BASIC there made it pick its own keys
 * and offsets, which rivet's regions do not serve.  So version 0 gets the
 * newest 1.x API this build knows: the bit form, and no capability bit
 * that 2.0 gave a new meaning, so that a program of any version >= 1.5
 * can pass the answer back.
 */
#define RIVET_API_LAST_V1 FI_VERSION(1, 22)
static inline uint32_t rivet_api_of_request(uint32_t version)
{
	if (FI_MAJOR(version))
		return version;
	return rivet_api_v2(RIVET_API_VERSION) ? RIVET_API_LAST_V1 :
						 RIVET_API_VERSION;
}

/* Which of rivet's capability bits (2.0's meanings: rivet offers none of
 * the 1.x-only ones) a program of this API version may be shown. */
static inline uint64_t rivet_caps_of_version(uint32_t version)
{
	return rivet_api_v2(version) ? ~0ULL : ~RIVET_CAP_V2_ONLY;
}

/*
 * How much of a struct fi_cq_err_entry the application's API has: 1.20
 * added src_addr at the end (88 bytes on LP64); before it the entry ends
 * after err_data_size (80), and before 1.5 after err_data (72).
 */
size_t rivet_cq_err_entry_size(uint32_t version);

#endif /* RIVET_ABI_H */
