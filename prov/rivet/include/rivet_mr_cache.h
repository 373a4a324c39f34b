/* SPDX-License-Identifier: MIT */
/*
 * The registration cache: internal registrations (rendezvous buffers, RMA
 * and atomic local buffers without a descriptor) kept for reuse, found by
 * address range, bounded by count and bytes, unused ones evicted least
 * recently used first.  The index (rivet_mr_cache.c) is pure and unit
 * tested; the memory monitor that invalidates entries when the
 * application unmaps or discards their pages, and the glue to verbs, are
 * in rivet_mr_monitor.c.
 */
#ifndef RIVET_MR_CACHE_H
#define RIVET_MR_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One registration of [start, end).  While `use` is non-zero operations
 * hold it and it is never evicted; `indexed` says whether lookups can
 * still find it (an invalidated entry leaves the index at once and is
 * deregistered when its last user lets go).
 */
struct rivet_mr_entry {
	uintptr_t start, end;
	int access;			/* IBV_ACCESS_* it was registered with */
	void *mr;			/* struct ibv_mr *, opaque here */
	uint32_t lkey, rkey;
	unsigned int use;
	bool indexed;
	bool cached;			/* went into a cache: released through it */
	struct rivet_mr_entry *prev, *next;	/* LRU (unused and indexed),
						 * or the dead list */
};

struct rivet_mr_cache_stats {
	uint64_t hits, misses, evictions, invalidations, regs;
};

/* Lock: whoever owns the cache (the monitor's lock in the provider). */
struct rivet_mr_cache {
	struct rivet_mr_entry **index;	/* sorted by start, then end */
	size_t count, max_count;
	size_t bytes, max_bytes;
	size_t max_len;			/* no entry in the index is longer */
	struct rivet_mr_entry *lru;	/* least recently used first */
	struct rivet_mr_entry *dead;	/* left the cache, unused: for the
					 * owner to deregister and free */
	struct rivet_mr_cache_stats stats;
	struct rivet_mr_cache *next, *prev;	/* the monitor's caches */
};

int rivet_mr_cache_construct(struct rivet_mr_cache *cache, size_t max_count,
			     size_t max_bytes);
void rivet_mr_cache_destruct(struct rivet_mr_cache *cache);
/* An indexed entry covering [start, end) with at least `access`, now held
 * (use + 1); NULL when none. */
struct rivet_mr_entry *rivet_mr_cache_lookup(struct rivet_mr_cache *cache,
					     uintptr_t start, uintptr_t end,
					     int access);
/* An indexed entry of exactly [start, end) with at least `access`, now
 * held; NULL when none.  For a registration whose key a peer gets: a
 * larger one around the range would let it reach more than the range. */
struct rivet_mr_entry *rivet_mr_cache_lookup_exact(struct rivet_mr_cache *cache,
						   uintptr_t start,
						   uintptr_t end, int access);
/* Indexes a new entry held once (use 1), evicting unused entries (onto the
 * dead list) to stay within the bounds; false when it cannot fit (every
 * entry in use, or larger than max_bytes): the entry stays unindexed. */
bool rivet_mr_cache_insert(struct rivet_mr_cache *cache,
			   struct rivet_mr_entry *entry);
/* One user lets go: an unused indexed entry joins the LRU's tail, an
 * unused unindexed one the dead list. */
void rivet_mr_cache_release(struct rivet_mr_cache *cache,
			    struct rivet_mr_entry *entry);
/* Every entry overlapping [start, end) leaves the index (the unused ones
 * onto the dead list); returns how many. */
size_t rivet_mr_cache_invalidate(struct rivet_mr_cache *cache,
				 uintptr_t start, uintptr_t end);
/* Every unused entry leaves the index, onto the dead list. */
size_t rivet_mr_cache_flush_unused(struct rivet_mr_cache *cache);
/* The dead list, now the caller's (linked by next). */
struct rivet_mr_entry *rivet_mr_cache_take_dead(struct rivet_mr_cache *cache);
/* Calls fn on every indexed entry overlapping [start, end). */
void rivet_mr_cache_foreach_overlap(struct rivet_mr_cache *cache,
				    uintptr_t start, uintptr_t end,
				    void (*fn)(struct rivet_mr_entry *, void *),
				    void *arg);

#endif /* RIVET_MR_CACHE_H */
