/* SPDX-License-Identifier: MIT */
/*
 * The shared segment of a named address vector (FI_SHARED_AV): a POSIX
 * shared memory object that processes of one node map, holding the
 * table's entries and, for fi_av_attr.map_addr, an fi_addr_t array
 * (map[i] is i for an entry inserted at i, FI_ADDR_NOTAVAIL for none).
 * Writers (opened without FI_READ) publish entries under a process-shared
 * robust mutex; readers map it read-only.  No verbs here: unit tested.
 */
#ifndef RIVET_AV_SHM_H
#define RIVET_AV_SHM_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "rivet.h"

#define RIVET_AV_SHM_MAGIC 0x3156415445564952ULL	/* "RIVETAV1" */
#define RIVET_AV_SHM_MIN_CAP 1024	/* entries: a segment never grows */

struct rivet_av_shm_hdr {
	uint64_t magic;			/* written last by the creator */
	uint64_t cap;			/* entries the segment holds */
	_Atomic uint64_t count;		/* high water of published entries */
	pid_t owner;			/* the creator */
	pthread_mutex_t lock;		/* writers: process-shared, robust */
};

struct rivet_av_shm {
	struct rivet_av_shm_hdr *hdr;	/* NULL: not a named AV */
	fi_addr_t *map;			/* [cap]: what map_addr points at */
	union rivet_sockaddr *addrs;	/* [cap] */
	size_t cap;			/* entries mapped: what bounds every
					 * index (the header's cap and count
					 * are any writer's to change) */
	size_t len;			/* bytes mapped */
	bool writer;
	bool creator;			/* unlinks the name when closed */
	char name[64];			/* the shm object's */
};

/* The shm object's name for an AV name in a domain: "/rivet-av-DOM-NAME",
 * '/' made '_'; -FI_EINVAL when empty or too long. */
int rivet_av_shm_name(const char *domain, const char *av_name, char *out,
		      size_t len);
/* Opens (read_only) or creates the segment.  A writer whose name exists
 * with a live creator attaches to it; one whose creator died (a crash
 * left the name) makes it anew.  -FI_ENOENT: read_only and none. */
int rivet_av_shm_open(struct rivet_av_shm *s, const char *name, size_t cap,
		      bool read_only);
void rivet_av_shm_close(struct rivet_av_shm *s);
/* Writers, around their inserts and removals. */
void rivet_av_shm_lock(struct rivet_av_shm *s);
void rivet_av_shm_unlock(struct rivet_av_shm *s);
/* Entry i (< cap) becomes sa; readers see it once count covers it. */
void rivet_av_shm_publish(struct rivet_av_shm *s, size_t i,
			  const union rivet_sockaddr *sa);
/* Entry i is gone (fi_av_remove): map[i] = FI_ADDR_NOTAVAIL. */
void rivet_av_shm_retract(struct rivet_av_shm *s, size_t i);
/* Published entries: how many indices to look at (never more than this
 * process mapped). */
static inline size_t rivet_av_shm_count(const struct rivet_av_shm *s)
{
	size_t n = (size_t)atomic_load_explicit(&s->hdr->count,
						memory_order_acquire);

	return n < s->cap ? n : s->cap;
}
/* Entry i as published, or false when it holds none. */
bool rivet_av_shm_entry(const struct rivet_av_shm *s, size_t i,
			union rivet_sockaddr *sa);

#endif /* RIVET_AV_SHM_H */
