/* SPDX-License-Identifier: MIT */
/* State and helpers shared by the two halves of fi_rivet_rdm_rma: setup,
 * server and the sweeps (fi_rivet_rdm_rma.c), ordering, inject, remote CQ
 * data, delivery complete, counters and errors (fi_rivet_rdm_rma_cases.c). */
#ifndef FI_RIVET_RDM_RMA_H
#define FI_RIVET_RDM_RMA_H

#include "common/ft_rdm.h"

#define RR_RO_LEN (64 * 1024)
#define RR_MIN_LEN (4UL << 20)
#define RR_MAX_SIZES 64
#define RR_CQ_DATA 0x89abcdefULL
#define RR_KEY_TAG 0x4b455953ULL	/* "KEYS" */

/* The server's regions, sent to the client in an RDM message. */
struct rr_keys {
	uint64_t rw_addr, rw_key, rw_len;
	uint64_t ro_addr, ro_key, ro_len;
};

/* Commands from the client to the server, over the OOB channel. */
enum rr_op {
	RR_FILL = 1,		/* fill rw[off, off+len) with seed */
	RR_VERIFY,		/* check rw[off, off+len) against seed */
	RR_EXPECT_DATA,		/* a remote CQ data completion, then VERIFY */
	RR_DONE,
};

struct rr_cmd {
	uint32_t op;
	uint32_t seed;
	uint64_t off;
	uint64_t len;
	uint64_t data;
	char name[48];
};

struct rr_state {
	struct ft_fab fab;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_cntr *rcntr, *wcntr;	/* client: FI_READ, FI_WRITE */
	fi_addr_t peer;
	struct ft_buf rw;	/* server: target region; client: local */
	struct ft_buf ro;	/* server: read-only target region */
	void *plain;		/* client: unregistered local memory */
	struct rr_keys keys;
	size_t max;
	uint64_t reads, writes;	/* client: successful operations */
	struct fi_context2 ctx[4];
};

extern struct rr_state g_rr;

int rr_cmd(uint32_t op, const char *name, uint64_t off, uint64_t len,
	   uint32_t seed, uint64_t data);
int rr_wait(const char *name, void *ctx, uint64_t flags, size_t len);
int rr_posted(const char *name, ssize_t ret);
void rr_result(const char *name, int ret);
int rr_write_one(const char *name, void *buf, void *desc, size_t off,
		 size_t len, uint32_t seed);

/* fi_rivet_rdm_rma_cases.c: each returns -1 when the run cannot go on */
int rr_raw_order(void);
int rr_inject(void);
int rr_writedata(void);
int rr_delivery(void);
int rr_windows(void);
int rr_fence(void);
void rr_counters(void);
void rr_bad_args(void);
void rr_errors(void);

#endif /* FI_RIVET_RDM_RMA_H */
