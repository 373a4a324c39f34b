/* SPDX-License-Identifier: MIT */
/*
 * Address vectors: fi_addr_t <-> socket address, and the listeners (RDM
 * endpoints) that hear of removals.  A resource: no endpoint type here.
 */
#ifndef RIVET_AV_H
#define RIVET_AV_H

#include "rivet.h"
#include "rivet_map.h"
#include "rivet_av_shm.h"

/* ---- address vectors (rivet_av.c) ----
 * fi_addr_t values are slot indices, for FI_AV_TABLE and FI_AV_MAP alike;
 * an insert takes the lowest free slot.  A slot is free when !valid[i] and
 * addrs[i] has family AF_UNSPEC: a removed slot keeps its family, and so
 * is not reused, until the bound endpoints have been told.  Locks:
 * remove_lock (held while endpoints are told), then lock, far apart in
 * THE LOCK ORDER (rivet.h); nothing is called out of the AV under lock.
 */
/* What a bound endpoint hears of fi_av_remove (the AV knows no endpoint
 * type): removed runs for each removed address, with av->remove_lock
 * held and av->lock not. */
struct rivet_av_listener {
	void (*removed)(struct rivet_av_listener *l, fi_addr_t addr);
};

/* The most rx_ctx_bits an AV takes: 2^8 receive contexts (a scalable
 * endpoint has at most RIVET_SEP_MAX_CTX). */
#define RIVET_AV_RX_CTX_BITS 8

struct rivet_av {
	struct fid_av av_fid;
	struct rivet_domain *domain;
	struct fi_av_attr attr;
	pthread_mutex_t lock;
	pthread_mutex_t remove_lock;
	union rivet_sockaddr *addrs;	/* indexed by fi_addr_t; lock */
	bool *valid;			/* lock */
	size_t count, cap;		/* slots used (high water), allocated */
	size_t nfree;			/* free slots below count; lock */
	size_t free_hint;		/* no free slot below it; lock */
	size_t ndups;			/* valid slots whose address another
					 * slot owns in reverse; lock */
	struct rivet_addr_map reverse;	/* address -> fi_addr_t; lock */
	struct rivet_eq *eq;		/* FI_EVENT: insert completions */
	struct rivet_av_listener **eps;	/* bound endpoints, told on remove */
	size_t neps, eps_cap;
	atomic_int refcnt;		/* bound endpoints: close is EBUSY */
	struct rivet_av_shm shm;	/* FI_SHARED_AV: a named AV's segment
					 * (its entries are never reused) */
	size_t shm_seen;		/* entries of it looked at; lock */
};

int rivet_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av_p, void *context);
/* The address of a valid entry (copied into *out), or -FI_EINVAL. */
int rivet_av_addr(struct rivet_av *av, fi_addr_t addr,
		  union rivet_sockaddr *out);
/* The fi_addr_t of an address, or FI_ADDR_NOTAVAIL. */
fi_addr_t rivet_av_reverse(struct rivet_av *av, const struct sockaddr *sa);
/* Binds an endpoint's listener, taking a reference on the AV (fi_close
 * gives -FI_EBUSY until unbound). */
int rivet_av_bind_ep(struct rivet_av *av, struct rivet_av_listener *l);
/* Waits out a removal in progress: call it without holding any lock that
 * the listener takes.  The endpoint hears nothing after. */
void rivet_av_unbind_ep(struct rivet_av *av, struct rivet_av_listener *l);

/* Pure helpers (rivet_av_addr.c, unit tested in test/test_av.c). */
/* AF_INET, AF_INET6, or AF_UNSPEC for FI_SOCKADDR (either) */
int rivet_av_format_family(uint32_t format);
/* Size of the fi_av_insert array entry at buf (0: unknown family). */
size_t rivet_av_entry_len(const void *buf, uint32_t format);
/* 0, -FI_EINVAL (family not of the format), -FI_EADDRNOTAVAIL (port 0 or
 * wildcard address) */
int rivet_av_addr_check(const struct sockaddr *sa, uint32_t format);
/* fi_av_insertsvc/insertsym: 0 for a port number (decimal, at most
 * 65535), else -FI_EINVAL.  rivet's endpoints are named by port. */
int rivet_av_service_check(const char *service);
/* fi_av_insertsym: base's IP plus node, its port plus svc. */
int rivet_av_sym_addr(const struct sockaddr *base, size_t node, size_t svc,
		      union rivet_sockaddr *out_p);
/* fi_av_insertsym: a host name's numeric suffix plus idx, keeping its
 * width ("n09", 1 -> "n10"); -FI_EINVAL without a suffix when idx > 0,
 * -FI_ETOOSMALL when buf is too short. */
int rivet_av_sym_name(const char *node, size_t idx, char *buf, size_t len);
/* getaddrinfo for an AV's address format: -FI_EADDRNOTAVAIL on failure */
int rivet_av_resolve(const char *node, const char *service, uint32_t format,
		     union rivet_sockaddr *out);
/* A numeric IPv4 or IPv6 address */
bool rivet_av_is_numeric(const char *node);
/* One node of insertsvc/insertsym: its address, or why it has none. */
struct rivet_av_node {
	union rivet_sockaddr addr;
	int err;
};
/* Node i of a symmetric insert: numeric addresses count up from node 0's,
 * host names by their numeric suffix. */
void rivet_av_node_resolve(const char *node, const char *service,
			   uint32_t format, struct rivet_av_node *nodes,
			   size_t i);

#endif /* RIVET_AV_H */
