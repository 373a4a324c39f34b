/* SPDX-License-Identifier: MIT */
/* State and helpers shared by the two halves of fi_rivet_rdm: the basic
 * cases (fi_rivet_rdm.c), matching and error cases (fi_rivet_rdm_cases.c). */
#ifndef FI_RIVET_RDM_H
#define FI_RIVET_RDM_H

#include "common/ft_rdm.h"

#define RDM_WINDOW 64
#define RDM_MIN_BUF (32UL << 20)
#define RDM_MAX_SIZES 64
#define RDM_BIG (256 * 1024)		/* past every eager threshold */
#define RDM_MRECV_MIN (16 * 1024)
#define RDM_CQ_DATA 0x0123456789abcdefULL

/* Tags: the case number in the top bits, so that a failed case cannot
 * feed the next one. */
#define RDM_TAG(c, x) (((uint64_t)(c) << 40) | (x))
enum { T_SIZES = 1, T_PINGPONG, T_IGNORE, T_DIRECTED, T_CQDATA, T_INJECT,
	T_DC, T_AUTO, T_ORDER, T_STORM, T_PEEK, T_TRUNC, T_CANCEL, T_BAD,
	T_FENCE, T_CQORDER, T_SOLO, T_MREUSE, T_CLOSE };

struct rdm_state {
	struct ft_fab fab;
	struct ft_rdm_ep ep[2];	/* the client has a second endpoint */
	fi_addr_t peer[2];	/* server: the client's endpoints */
	fi_addr_t dest[2];	/* where ep[i] sends: the peer's first ep */
	struct ft_buf tx;
	struct ft_buf rx;
	size_t max;		/* largest message of the sweep */
	size_t buf_len;
	struct fi_info *info;
	int nsync;		/* OOB barriers passed in this case */
	struct fi_context2 txctx[RDM_WINDOW];
	struct fi_context2 rxctx[RDM_WINDOW];
};

extern struct rdm_state g_rdm;

int rdm_send(const char *name, int e, bool tagged, void *buf, size_t len,
	     uint64_t tag, void *ctx);
int rdm_recv(const char *name, bool tagged, void *buf, size_t len,
	     uint64_t tag, uint64_t ignore, fi_addr_t src, void *ctx);
int rdm_wait_ok(const char *name, int e, void *ctx, struct ft_comp *comp,
		size_t len);
int rdm_check_recv(const char *name, const struct ft_comp *comp, bool tagged,
		   size_t len, uint64_t tag, fi_addr_t src, const void *buf,
		   uint32_t seed);
int rdm_wait_recv(const char *name, void *ctx, bool tagged, size_t len,
		  uint64_t tag, const void *buf, uint32_t seed);
int rdm_sync(void);

/* fi_rivet_rdm_cq.c */
void rdm_cqorder_server(void);
void rdm_cqorder_client(void);
void rdm_cqerr_order_server(void);
void rdm_cqerr_order_client(void);

/* fi_rivet_rdm_solo.c */
void rdm_solo_server(void);
void rdm_solo_client(void);
/* right after rdm_mrecv_* (fi_rivet_rdm_cases.c) */
void rdm_mreuse_server(void);
void rdm_mreuse_client(void);

/* fi_rivet_rdm_cases.c */
void rdm_order_server(void);
void rdm_order_client(void);
void rdm_storm_server(void);
void rdm_storm_client(void);
void rdm_peek_server(void);
void rdm_peek_client(void);
void rdm_mrecv_server(void);
void rdm_mrecv_client(void);
void rdm_mrecv_rndv_server(void);
void rdm_mrecv_rndv_client(void);
void rdm_close_owed_server(void);
void rdm_close_owed_client(void);
void rdm_trunc_server(void);
void rdm_trunc_client(void);
void rdm_cancel(void);
void rdm_bad_server(void);
void rdm_bad_client(void);

#endif /* FI_RIVET_RDM_H */
