/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of rivet_mr_cache.c: covering lookups and access flags, the
 * count and byte bounds, LRU eviction that never takes an entry in use,
 * invalidation of overlapping ranges (held entries leave the index at
 * once and die when released), and a randomized check against a model.
 */
#include <stdlib.h>
#include <criterion/criterion.h>

#include "rivet_mr_cache.h"

#define A_R 1	/* stand-ins for IBV_ACCESS_* bits */
#define A_W 2

static struct rivet_mr_entry *entry_new(uintptr_t start, uintptr_t end,
					int access)
{
	struct rivet_mr_entry *e = calloc(1, sizeof(*e));

	cr_assert(e);
	e->start = start;
	e->end = end;
	e->access = access;
	return e;
}

/* Frees the dead list, returning how many were on it. */
static size_t dead_free(struct rivet_mr_cache *c)
{
	struct rivet_mr_entry *e = rivet_mr_cache_take_dead(c), *next;
	size_t n = 0;

	for (; e; e = next, n++) {
		next = e->next;
		cr_assert_eq(e->use, 0, "a dead entry still in use");
		cr_assert(!e->indexed);
		free(e);
	}
	return n;
}

static void cache_empty(struct rivet_mr_cache *c)
{
	rivet_mr_cache_flush_unused(c);
	dead_free(c);
	cr_assert_eq(c->count, 0);
	cr_assert_eq(c->bytes, 0);
	rivet_mr_cache_destruct(c);
}

Test(mr_cache, covering_lookup_and_access)
{
	struct rivet_mr_cache c;
	struct rivet_mr_entry *e = entry_new(0x1000, 0x5000, A_R);

	cr_assert_eq(rivet_mr_cache_construct(&c, 4, 1 << 20), 0);
	cr_assert(rivet_mr_cache_insert(&c, e));
	rivet_mr_cache_release(&c, e);
	cr_assert_eq(rivet_mr_cache_lookup(&c, 0x1000, 0x5000, A_R), e);
	cr_assert_eq(rivet_mr_cache_lookup(&c, 0x2000, 0x2100, A_R), e);
	cr_assert_eq(e->use, 2);
	cr_assert_null(rivet_mr_cache_lookup(&c, 0x0fff, 0x2000, A_R));
	cr_assert_null(rivet_mr_cache_lookup(&c, 0x4000, 0x5001, A_R));
	cr_assert_null(rivet_mr_cache_lookup(&c, 0x2000, 0x3000, A_W));
	cr_assert_eq(rivet_mr_cache_lookup(&c, 0x2000, 0x3000, 0), e);
	cr_assert_eq(c.stats.hits, 3);
	cr_assert_eq(c.stats.misses, 3);
	rivet_mr_cache_release(&c, e);
	rivet_mr_cache_release(&c, e);
	rivet_mr_cache_release(&c, e);
	cr_assert_eq(e->use, 0);
	cr_assert_eq(dead_free(&c), 0);
	cache_empty(&c);
}

/* A short entry far after a long one: the scan bound must still reach
 * the long one. */
Test(mr_cache, long_entry_covers_past_short_ones)
{
	struct rivet_mr_cache c;
	struct rivet_mr_entry *big = entry_new(0x10000, 0x90000, A_R);
	struct rivet_mr_entry *small = entry_new(0x20000, 0x21000, A_R);

	cr_assert_eq(rivet_mr_cache_construct(&c, 8, 1 << 30), 0);
	cr_assert(rivet_mr_cache_insert(&c, big));
	cr_assert(rivet_mr_cache_insert(&c, small));
	rivet_mr_cache_release(&c, big);
	rivet_mr_cache_release(&c, small);
	cr_assert_eq(rivet_mr_cache_lookup(&c, 0x50000, 0x60000, A_R), big);
	rivet_mr_cache_release(&c, big);
	cr_assert_eq(rivet_mr_cache_lookup(&c, 0x20000, 0x20010, A_R), small);
	rivet_mr_cache_release(&c, small);
	cache_empty(&c);
}

/* A registration whose key a peer gets: only one of exactly its range,
 * never a larger one around it; entries that share a start told apart. */
Test(mr_cache, exact_lookup_for_exposed_ranges)
{
	struct rivet_mr_cache c;
	struct rivet_mr_entry *big = entry_new(0x10000, 0x20000, A_R);
	struct rivet_mr_entry *head = entry_new(0x10000, 0x14000, A_R);
	struct rivet_mr_entry *part = entry_new(0x14000, 0x18000, A_R | A_W);

	cr_assert_eq(rivet_mr_cache_construct(&c, 8, 1 << 20), 0);
	cr_assert(rivet_mr_cache_insert(&c, big));
	rivet_mr_cache_release(&c, big);
	/* inside the big one, not it: no exact entry */
	cr_assert_null(rivet_mr_cache_lookup_exact(&c, 0x14000, 0x18000,
						   A_R));
	cr_assert_null(rivet_mr_cache_lookup_exact(&c, 0x10000, 0x14000,
						   A_R));
	cr_assert_eq(rivet_mr_cache_lookup_exact(&c, 0x10000, 0x20000, A_R),
		     big);
	rivet_mr_cache_release(&c, big);
	cr_assert(rivet_mr_cache_insert(&c, head));
	cr_assert(rivet_mr_cache_insert(&c, part));
	rivet_mr_cache_release(&c, head);
	rivet_mr_cache_release(&c, part);
	cr_assert_eq(rivet_mr_cache_lookup_exact(&c, 0x10000, 0x14000, A_R),
		     head);
	cr_assert_eq(rivet_mr_cache_lookup_exact(&c, 0x14000, 0x18000, A_W),
		     part);
	cr_assert_null(rivet_mr_cache_lookup_exact(&c, 0x10000, 0x14000,
						   A_W));
	cr_assert_null(rivet_mr_cache_lookup_exact(&c, 0x14000, 0x17fff,
						   A_R));
	cr_assert_eq(c.stats.hits, 3);
	cr_assert_eq(c.stats.misses, 4);
	rivet_mr_cache_release(&c, head);
	rivet_mr_cache_release(&c, part);
	cache_empty(&c);
}

Test(mr_cache, lru_evicts_unused_only)
{
	struct rivet_mr_cache c;
	struct rivet_mr_entry *e[4];
	int i;

	cr_assert_eq(rivet_mr_cache_construct(&c, 3, 1 << 20), 0);
	for (i = 0; i < 3; i++) {
		e[i] = entry_new(0x10000 * (i + 1), 0x10000 * (i + 1) + 0x100,
				 A_R);
		cr_assert(rivet_mr_cache_insert(&c, e[i]));
	}
	/* e[0] stays held; e[1] released before e[2], then e[1] used again */
	rivet_mr_cache_release(&c, e[1]);
	rivet_mr_cache_release(&c, e[2]);
	cr_assert_eq(rivet_mr_cache_lookup(&c, e[1]->start, e[1]->end, A_R),
		     e[1]);
	rivet_mr_cache_release(&c, e[1]);
	e[3] = entry_new(0x90000, 0x90100, A_R);
	cr_assert(rivet_mr_cache_insert(&c, e[3]));
	cr_assert(!e[2]->indexed, "the least recently used goes first");
	cr_assert(e[0]->indexed && e[1]->indexed && e[3]->indexed);
	cr_assert_eq(c.stats.evictions, 1);
	cr_assert_eq(dead_free(&c), 1);
	cr_assert_eq(c.count, 3);
	rivet_mr_cache_release(&c, e[0]);
	rivet_mr_cache_release(&c, e[3]);
	cache_empty(&c);
}

Test(mr_cache, full_of_held_entries_refuses)
{
	struct rivet_mr_cache c;
	struct rivet_mr_entry *a = entry_new(0x1000, 0x2000, A_R);
	struct rivet_mr_entry *b = entry_new(0x3000, 0x4000, A_R);

	cr_assert_eq(rivet_mr_cache_construct(&c, 1, 1 << 20), 0);
	cr_assert(rivet_mr_cache_insert(&c, a));
	cr_assert(!rivet_mr_cache_insert(&c, b));
	cr_assert(!b->indexed);
	cr_assert_eq(b->use, 1);
	rivet_mr_cache_release(&c, b);	/* never cached: dies at release */
	cr_assert_eq(dead_free(&c), 1);
	rivet_mr_cache_release(&c, a);
	cr_assert(a->indexed);
	cache_empty(&c);
}

Test(mr_cache, byte_bound)
{
	struct rivet_mr_cache c;
	struct rivet_mr_entry *a = entry_new(0x0, 0x3000, A_R);
	struct rivet_mr_entry *b = entry_new(0x10000, 0x12000, A_R);
	struct rivet_mr_entry *huge = entry_new(0x100000, 0x200000, A_R);

	cr_assert_eq(rivet_mr_cache_construct(&c, 100, 0x4000), 0);
	cr_assert(rivet_mr_cache_insert(&c, a));
	rivet_mr_cache_release(&c, a);
	cr_assert(rivet_mr_cache_insert(&c, b));	/* evicts a */
	cr_assert(!a->indexed);
	cr_assert_eq(c.bytes, 0x2000);
	cr_assert(!rivet_mr_cache_insert(&c, huge), "over max_bytes alone");
	rivet_mr_cache_release(&c, huge);
	rivet_mr_cache_release(&c, b);
	cr_assert_eq(dead_free(&c), 2);
	cache_empty(&c);
}

Test(mr_cache, disabled_caches_nothing)
{
	struct rivet_mr_cache c;
	struct rivet_mr_entry *a = entry_new(0x1000, 0x2000, A_R);

	cr_assert_eq(rivet_mr_cache_construct(&c, 0, 1 << 20), 0);
	cr_assert(!rivet_mr_cache_insert(&c, a));
	rivet_mr_cache_release(&c, a);
	cr_assert_eq(dead_free(&c), 1);
	cache_empty(&c);
}

Test(mr_cache, invalidate_overlapping_and_held)
{
	struct rivet_mr_cache c;
	struct rivet_mr_entry *a = entry_new(0x1000, 0x3000, A_R);
	struct rivet_mr_entry *b = entry_new(0x2fff, 0x5000, A_W);
	struct rivet_mr_entry *d = entry_new(0x5000, 0x6000, A_R);
	struct rivet_mr_entry *big = entry_new(0x0, 0x100000, A_R);

	cr_assert_eq(rivet_mr_cache_construct(&c, 8, 1 << 30), 0);
	cr_assert(rivet_mr_cache_insert(&c, big));
	cr_assert(rivet_mr_cache_insert(&c, a));
	cr_assert(rivet_mr_cache_insert(&c, b));
	cr_assert(rivet_mr_cache_insert(&c, d));
	rivet_mr_cache_release(&c, a);
	rivet_mr_cache_release(&c, d);
	rivet_mr_cache_release(&c, big);
	/* b stays held: it leaves the index now, dies at release */
	cr_assert_eq(rivet_mr_cache_invalidate(&c, 0x2000, 0x3000), 3);
	cr_assert(!a->indexed && !b->indexed && !big->indexed);
	cr_assert(d->indexed, "a range that ends where d starts");
	cr_assert_null(rivet_mr_cache_lookup(&c, 0x3000, 0x4000, A_W));
	cr_assert_eq(dead_free(&c), 2);	/* a and big */
	rivet_mr_cache_release(&c, b);
	cr_assert_eq(dead_free(&c), 1);
	cr_assert_eq(rivet_mr_cache_invalidate(&c, 0x6000, 0x7000), 0);
	cr_assert_eq(rivet_mr_cache_invalidate(&c, 0x4fff, 0x5001), 1);
	cr_assert_eq(dead_free(&c), 1);
	cr_assert_eq(c.count, 0);
	cache_empty(&c);
}

/* Random inserts, lookups, releases and invalidations against a model:
 * every lookup finds an entry only if a valid covering one exists, and
 * never one that an invalidation overlapped. */
#define M_N 64
Test(mr_cache, random_against_model)
{
	struct rivet_mr_cache c;
	struct rivet_mr_entry *held[M_N];
	size_t nheld = 0, i, k;
	uintptr_t s, e;
	unsigned int seed = 12345;

	cr_assert_eq(rivet_mr_cache_construct(&c, 16, 64 * 0x1000), 0);
	for (i = 0; i < 20000; i++) {
		s = (uintptr_t)(rand_r(&seed) % 256) * 0x100;
		e = s + 1 + (uintptr_t)(rand_r(&seed) % 0x2000);
		switch (rand_r(&seed) % 4) {
		case 0: {
			struct rivet_mr_entry *x;

			if (nheld == M_N)
				break;
			x = rivet_mr_cache_lookup(&c, s, e, A_R);
			if (x) {
				cr_assert(x->indexed && x->start <= s &&
					  x->end >= e);
			} else {
				x = entry_new(s, e, A_R);
				rivet_mr_cache_insert(&c, x);
			}
			held[nheld++] = x;
			break;
		}
		case 1:
			if (!nheld)
				break;
			k = (size_t)rand_r(&seed) % nheld;
			rivet_mr_cache_release(&c, held[k]);
			held[k] = held[--nheld];
			break;
		case 2:
			rivet_mr_cache_invalidate(&c, s, e);
			for (k = 0; k < c.count; k++)
				cr_assert(c.index[k]->end <= s ||
					  c.index[k]->start >= e);
			break;
		default:
			dead_free(&c);
			break;
		}
		cr_assert_leq(c.count, 16);
		cr_assert_leq(c.bytes, 64 * 0x1000);
		for (k = 1; k < c.count; k++)
			cr_assert_leq(c.index[k - 1]->start, c.index[k]->start);
	}
	while (nheld)
		rivet_mr_cache_release(&c, held[--nheld]);
	cache_empty(&c);
}
