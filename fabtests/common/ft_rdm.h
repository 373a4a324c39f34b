/* SPDX-License-Identifier: MIT */
/* Shared helpers of the RDM conformance programs (fi_rivet_rdm*): endpoint
 * setup, completion waits that always end and keep every endpoint of the
 * process progressing, name exchange over the OOB socket or through files. */
#ifndef FT_RDM_H
#define FT_RDM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdma/fi_tagged.h>

#include "common/ft_rivet.h"

#define FT_RDM_NAME_MAX 256
#define FT_RDM_DEADLINE_MS 30000
#define FT_RDM_CAPS (FI_MSG | FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV | \
		     FI_MULTI_RECV)

/* One endpoint with a single CQ bound for both directions. */
struct ft_rdm_ep {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	bool own_av;
	uint8_t name[FT_RDM_NAME_MAX];
	size_t namelen;
};

/* One completion, successful (err 0) or not (err is a positive FI_E*). */
struct ft_comp {
	void *ctx;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	fi_addr_t src;
	int err;
	size_t olen;
	int prov_errno;
	char errstr[96];
};

/* setup */
struct fi_info *ft_rdm_hints(uint64_t caps, enum fi_threading threading);
int ft_rdm_fab_open(struct ft_fab *fab, struct fi_info *hints, bool src_only);
int ft_rdm_av_open(struct fid_domain *domain, size_t count,
		   struct fid_av **av_p);
int ft_rdm_ep_open(struct ft_fab *fab, struct fid_av *av, bool any_port,
		   size_t min_multi_recv, struct ft_rdm_ep *rep);
void ft_rdm_ep_close(struct ft_rdm_ep *rep);
int ft_rdm_av_insert(struct fid_av *av, const void *name, fi_addr_t *addr_p);
size_t ft_rdm_size_list(size_t max, size_t *sizes, size_t cap);

/* Two endpoints of one fabric in one process, each in the other's AV
 * (the misuse and protocol programs' setup). */
struct ft_rdm_pair {
	struct ft_fab fab;
	struct ft_rdm_ep a, b;
	fi_addr_t a2b, b2a;
};

int ft_rdm_pair_open(struct ft_rdm_pair *p, uint64_t caps);
void ft_rdm_pair_close(struct ft_rdm_pair *p);

/* completions */
/* progress (ft_rdm_progress) and stash the completions of cq, or stop */
void ft_rdm_watch(struct fid_cq *cq, bool add);
void ft_rdm_forget(void);
void ft_rdm_progress(void);
int ft_rdm_wait(struct fid_cq *cq, void *ctx, struct ft_comp *comp,
		int timeout_ms);
int ft_rdm_drain(struct fid_cq *cq, int ms);
const char *ft_comp_str(const struct ft_comp *comp);
int ft_rdm_timeout(size_t len);

/* Post, retrying -FI_EAGAIN (with progress) until the deadline. */
#define FT_RDM_POST(call)						\
	({								\
		ssize_t ft_ret_;					\
		uint64_t ft_end_ = ft_now_ms() + ft_opts.timeout_ms;	\
		do {							\
			ft_ret_ = (call);				\
			if (ft_ret_ != -FI_EAGAIN)			\
				break;					\
			ft_rdm_progress();				\
		} while (ft_now_ms() < ft_end_);			\
		ft_ret_;						\
	})

/* name exchange */
int ft_rdm_oob_swap(const void *mine, size_t len, void *peer,
		    size_t *peer_len);
int ft_rdm_publish(const char *dir, const char *key, const void *data,
		   size_t len);
ssize_t ft_rdm_lookup(const char *dir, const char *key, void *buf,
		      size_t len, int timeout_ms);
int ft_rdm_barrier(const char *dir, const char *tag, int rank, int n,
		   int timeout_ms);

#endif /* FT_RDM_H */
