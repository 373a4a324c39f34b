/* SPDX-License-Identifier: MIT */
/*
 * The registration cache's index: an array of entries sorted by start
 * address, searched by bisection, and an LRU list of the unused ones.
 * Pure (no verbs, no system calls, no allocation after construct), so
 * that it can run under the monitor's lock: unit tested in test_mr_cache.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include <rdma/fi_errno.h>

#include "rivet_mr_cache.h"

int rivet_mr_cache_construct(struct rivet_mr_cache *cache, size_t max_count,
			     size_t max_bytes)
{
	memset(cache, 0, sizeof(*cache));
	cache->index = calloc(max_count ? max_count : 1, sizeof(*cache->index));
	if (!cache->index)
		return -FI_ENOMEM;
	cache->max_count = max_count;
	cache->max_bytes = max_bytes;
	return 0;
}

void rivet_mr_cache_destruct(struct rivet_mr_cache *cache)
{
	free(cache->index);
	cache->index = NULL;
}

/* The first position whose entry starts after addr. */
static size_t rivet_mr_cache_upper(const struct rivet_mr_cache *cache,
				   uintptr_t addr)
{
	size_t lo = 0, hi = cache->count, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (cache->index[mid]->start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void rivet_mr_cache_unindex_at(struct rivet_mr_cache *cache, size_t i)
{
	struct rivet_mr_entry *entry = cache->index[i];

	memmove(&cache->index[i], &cache->index[i + 1],
		(cache->count - i - 1) * sizeof(*cache->index));
	cache->count--;
	cache->bytes -= entry->end - entry->start;
	if (!cache->count)
		cache->max_len = 0;
	entry->indexed = false;
	if (!entry->use) {
		DL_DELETE(cache->lru, entry);
		DL_APPEND(cache->dead, entry);
	}
}

/* Where an indexed entry sits (entries with the same start are few). */
static size_t rivet_mr_cache_find(const struct rivet_mr_cache *cache,
				  const struct rivet_mr_entry *entry)
{
	size_t i = rivet_mr_cache_upper(cache, entry->start);

	while (i-- > 0 && cache->index[i] != entry)
		;
	return i;
}

/* A lookup's end: entry (NULL: none) held, and counted as a hit or miss. */
static struct rivet_mr_entry *rivet_mr_cache_take(struct rivet_mr_cache *cache,
						  struct rivet_mr_entry *entry)
{
	if (!entry) {
		cache->stats.misses++;
		return NULL;
	}
	if (!entry->use++)
		DL_DELETE(cache->lru, entry);
	cache->stats.hits++;
	return entry;
}

struct rivet_mr_entry *rivet_mr_cache_lookup(struct rivet_mr_cache *cache,
					     uintptr_t start, uintptr_t end,
					     int access)
{
	struct rivet_mr_entry *entry;
	size_t i = rivet_mr_cache_upper(cache, start);

	/* only entries that start at most max_len before end can cover it */
	while (i-- > 0) {
		entry = cache->index[i];
		if (end - entry->start > cache->max_len)
			break;
		if (entry->end >= end && (entry->access & access) == access)
			return rivet_mr_cache_take(cache, entry);
	}
	return rivet_mr_cache_take(cache, NULL);
}

struct rivet_mr_entry *rivet_mr_cache_lookup_exact(struct rivet_mr_cache *cache,
						   uintptr_t start,
						   uintptr_t end, int access)
{
	struct rivet_mr_entry *entry;
	size_t i = rivet_mr_cache_upper(cache, start);

	while (i-- > 0 && cache->index[i]->start == start) {
		entry = cache->index[i];
		if (entry->end == end && (entry->access & access) == access)
			return rivet_mr_cache_take(cache, entry);
	}
	return rivet_mr_cache_take(cache, NULL);
}

/* Evicts the least recently used entry; false when none is unused. */
static bool rivet_mr_cache_evict(struct rivet_mr_cache *cache)
{
	struct rivet_mr_entry *victim = cache->lru;

	if (!victim)
		return false;
	rivet_mr_cache_unindex_at(cache, rivet_mr_cache_find(cache, victim));
	cache->stats.evictions++;
	return true;
}

bool rivet_mr_cache_insert(struct rivet_mr_cache *cache,
			   struct rivet_mr_entry *entry)
{
	size_t len = entry->end - entry->start, i;

	entry->use = 1;
	entry->indexed = false;
	entry->prev = entry->next = NULL;
	if (!cache->max_count || len > cache->max_bytes)
		return false;
	while (cache->count == cache->max_count ||
	       cache->bytes + len > cache->max_bytes) {
		if (!rivet_mr_cache_evict(cache))
			return false;
	}
	i = rivet_mr_cache_upper(cache, entry->start);
	memmove(&cache->index[i + 1], &cache->index[i],
		(cache->count - i) * sizeof(*cache->index));
	cache->index[i] = entry;
	cache->count++;
	cache->bytes += len;
	if (len > cache->max_len)
		cache->max_len = len;
	entry->indexed = true;
	return true;
}

void rivet_mr_cache_release(struct rivet_mr_cache *cache,
			    struct rivet_mr_entry *entry)
{
	if (--entry->use)
		return;
	if (entry->indexed)
		DL_APPEND(cache->lru, entry);
	else
		DL_APPEND(cache->dead, entry);
}

size_t rivet_mr_cache_invalidate(struct rivet_mr_cache *cache,
				 uintptr_t start, uintptr_t end)
{
	struct rivet_mr_entry *entry;
	size_t i, n = 0;

	if (start >= end)
		return 0;
	/* entries that start before end; those starting more than max_len
	 * before start end before it */
	i = rivet_mr_cache_upper(cache, end - 1);
	while (i-- > 0) {
		entry = cache->index[i];
		if (start - entry->start > cache->max_len &&
		    entry->start < start)
			break;
		if (entry->end <= start)
			continue;
		rivet_mr_cache_unindex_at(cache, i);
		n++;
	}
	cache->stats.invalidations += n;
	return n;
}

size_t rivet_mr_cache_flush_unused(struct rivet_mr_cache *cache)
{
	size_t n = 0;

	while (rivet_mr_cache_evict(cache))
		n++;
	return n;
}

struct rivet_mr_entry *rivet_mr_cache_take_dead(struct rivet_mr_cache *cache)
{
	struct rivet_mr_entry *dead = cache->dead;

	cache->dead = NULL;
	return dead;
}

void rivet_mr_cache_foreach_overlap(struct rivet_mr_cache *cache,
				    uintptr_t start, uintptr_t end,
				    void (*fn)(struct rivet_mr_entry *, void *),
				    void *arg)
{
	struct rivet_mr_entry *entry;
	size_t i;

	if (start >= end)
		return;
	i = rivet_mr_cache_upper(cache, end - 1);
	while (i-- > 0) {
		entry = cache->index[i];
		if (entry->start < start && start - entry->start > cache->max_len)
			break;
		if (entry->end > start)
			fn(entry, arg);
	}
}
