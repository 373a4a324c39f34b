/* SPDX-License-Identifier: MIT */
/*
 * Poll sets (fi_poll_open, rivet_pollset.c) and wait sets (fi_wait_open,
 * rivet_waitset.c), and the list of member fids both keep (rivet_fid_list.c,
 * pure, unit tested).
 */
#ifndef RIVET_SET_H
#define RIVET_SET_H

#include "rivet.h"

/* An unordered list of distinct fids. */
struct rivet_fid_list {
	struct fid **fids;
	size_t n, cap;
};

void rivet_fid_list_construct(struct rivet_fid_list *list);
void rivet_fid_list_destruct(struct rivet_fid_list *list);
/* -FI_EALREADY when fid is a member already, -FI_ENOMEM */
int rivet_fid_list_insert(struct rivet_fid_list *list, struct fid *fid);
/* -FI_EINVAL when fid is not a member */
int rivet_fid_list_remove(struct rivet_fid_list *list, struct fid *fid);
bool rivet_fid_list_contains(const struct rivet_fid_list *list,
			     const struct fid *fid);

/*
 * A poll set of one domain: its CQs and counters, each holding a
 * reference (closing one while it is a member is -FI_EBUSY).  lock is
 * outermost: fi_poll drives the members' progress under it.
 */
struct rivet_pollset {
	struct fid_poll poll_fid;
	struct rivet_domain *domain;
	pthread_mutex_t lock;
	struct rivet_fid_list members;
};

int rivet_pollset_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		       struct fid_poll **pollset_p);

/*
 * A wait set of one fabric: an epoll fd (wait.epfd) over the wait
 * objects (epoll fds themselves) of the CQs, counters and EQs opened with
 * FI_WAIT_SET and wait_set naming it.  Those attach when they open and
 * detach when they close; lock (outermost) guards the member list.
 */
struct rivet_waitset {
	struct fid_wait wait_fid;
	struct rivet_fabric *fabric;
	struct rivet_wait wait;
	pthread_mutex_t lock;
	struct rivet_fid_list members;
};

int rivet_waitset_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		       struct fid_wait **waitset_p);
/* A CQ, counter or EQ of fabric (its fid, its own wait object w) joins
 * the wait set ws_fid: -FI_EINVAL if ws_fid is not a wait set of fabric. */
int rivet_waitset_attach(struct fid_wait *ws_fid, struct rivet_fabric *fabric,
			 struct fid *member, const struct rivet_wait *w);
void rivet_waitset_detach(struct fid_wait *ws_fid, struct fid *member,
			  const struct rivet_wait *w);
/* fi_trywait on a wait set: every member's trywait */
int rivet_waitset_trywait(struct rivet_waitset *ws);

static inline struct rivet_waitset *to_rwaitset(struct fid_wait *w)
{
	return container_of(w, struct rivet_waitset, wait_fid);
}

static inline struct rivet_pollset *to_rpollset(struct fid_poll *p)
{
	return container_of(p, struct rivet_pollset, poll_fid);
}

#endif /* RIVET_SET_H */
