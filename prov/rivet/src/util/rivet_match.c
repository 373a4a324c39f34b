/* SPDX-License-Identifier: MIT */
/*
 * The tag matching engine: per shape, a hash table of rings of entries
 * keyed by (source, masked tag), one probe per shape in use
 * (rivet_match.h, docs/matching.md).  The entries themselves are the
 * table's nodes: no bucket objects, no allocation per key.  Pure (no
 * verbs), unit tested in test/test_match.c.
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "rivet_match.h"

#define RIVET_MATCH_TABLE_BITS0 4	/* a new table: 16 chains */

/* The table's heads, allocated on first use; false without memory. */
static bool rivet_match_table_alloc(struct rivet_match_table *t)
{
	t->heads = calloc(1U << RIVET_MATCH_TABLE_BITS0, sizeof(*t->heads));
	t->shift = 64 - RIVET_MATCH_TABLE_BITS0;
	t->nchains = 1U << RIVET_MATCH_TABLE_BITS0;
	return t->heads != NULL;
}

static inline bool rivet_match_table_ready(struct rivet_match_table *t)
{
	return t->heads || rivet_match_table_alloc(t);
}

/* Empties t (its entries are dropped, not unlinked). */
static void rivet_match_table_clear(struct rivet_match_table *t)
{
	if (t->heads)
		memset(t->heads, 0, sizeof(*t->heads) * t->nchains);
}

static void rivet_match_table_free(struct rivet_match_table *t)
{
	free(t->heads);
	memset(t, 0, sizeof(*t));
}

/* The key of a ring head, to rehash it (posted: a receive; unexpected: a
 * message's link of the shape's slot). */
typedef void (*rivet_match_key_fn)(const struct rivet_match_link *l,
				   const struct rivet_match_shape *s,
				   uint64_t *mtag, uint64_t *addr);

/* Doubles the chains once the entries outnumber them (up to 2^24);
 * without memory the chains just grow longer. */
static void rivet_match_table_grow(struct rivet_match_shape *s,
				   rivet_match_key_fn key)
{
	struct rivet_match_table *t = &s->tbl, nt;
	struct rivet_match_link *l, *next;
	uint64_t mtag, addr;
	size_t i;

	if (t->shift <= 40)
		return;
	nt.heads = calloc(2 * t->nchains, sizeof(*nt.heads));
	if (!nt.heads)
		return;
	nt.shift = t->shift - 1;
	nt.nchains = 2 * t->nchains;
	for (i = 0; i < t->nchains; i++)
		for (l = t->heads[i]; l; l = next) {
			next = l->cnext;
			key(l, s, &mtag, &addr);
			/* the ring stays as it is: only its head moves */
			rivet_match_chain_push(rivet_match_chain(&nt, mtag,
								 addr), l);
		}
	free(t->heads);
	*t = nt;
}

static void rivet_match_side_construct(struct rivet_match_side *side)
{
	unsigned int i;

	for (i = 0; i < RIVET_MATCH_SHAPES; i++) {
		side->shapes[i].any = -1;
		side->shapes[i].slot = i;
	}
	side->hint = side->shapes;
}

static void rivet_match_side_destruct(struct rivet_match_side *side)
{
	unsigned int i;

	for (i = 0; i < RIVET_MATCH_SHAPES; i++)
		rivet_match_table_free(&side->shapes[i].tbl);
	memset(side, 0, sizeof(*side));
}

void rivet_match_construct(struct rivet_match *m)
{
	memset(m, 0, sizeof(*m));
	rivet_match_side_construct(&m->posted);
	rivet_match_side_construct(&m->unexp);
	m->list_max = RIVET_MATCH_LIST_MAX;
}

void rivet_match_destruct(struct rivet_match *m)
{
	rivet_match_side_destruct(&m->posted);
	rivet_match_side_destruct(&m->unexp);
	memset(m, 0, sizeof(*m));
}

/* ---- posted receives ---- */

/* The shape of (ignore, any) with its table ready: its own slot, or a
 * free one (assigned); NULL if none, or without memory. */
static struct rivet_match_shape *
rivet_match_posted_shape(struct rivet_match *m, uint64_t ignore, bool any)
{
	struct rivet_match_side *side = &m->posted;
	struct rivet_match_shape *s, *spare = NULL;
	unsigned int i;

	for (i = 0; i < side->nslots; i++) {
		s = &side->shapes[i];
		if (s->keep == ~ignore && s->any == any)
			return s->tbl.heads ? s : NULL;
		if (!s->count && !spare)
			spare = s;
	}
	if (!spare && side->nslots < RIVET_MATCH_SHAPES)
		spare = &side->shapes[side->nslots++];
	/* an unused slot's table is empty: it serves the new shape */
	if (!spare || !rivet_match_table_ready(&spare->tbl))
		return NULL;
	spare->keep = ~ignore;
	spare->any = any;
	spare->used = true;
	return spare;
}

static void rivet_match_recv_key(const struct rivet_match_link *l,
				 const struct rivet_match_shape *s,
				 uint64_t *mtag, uint64_t *addr)
{
	const struct rivet_match_recv *r = (const struct rivet_match_recv *)l;

	*mtag = r->tag & s->keep;
	*addr = r->addr;	/* FI_ADDR_UNSPEC in a shape of any source */
}

void rivet_match_posted_grow(struct rivet_match_shape *s)
{
	rivet_match_table_grow(s, rivet_match_recv_key);
}

/* Files r in the table of its shape (the hint then); false (r untouched)
 * when it has to stay on the wild list: no slot, or no memory. */
static bool rivet_match_recv_index(struct rivet_match *m,
				   struct rivet_match_recv *r)
{
	struct rivet_match_shape *s;

	s = rivet_match_posted_shape(m, r->ignore, r->addr == FI_ADDR_UNSPEC);
	if (!s)
		return false;
	m->posted.hint = s;
	rivet_match_recv_file(s, r);
	return true;
}

/* The queue outgrew list_max: file what it holds, oldest first (what
 * finds no slot stays on the wild list, in order). */
static void rivet_match_posted_index(struct rivet_match *m)
{
	struct rivet_match_link *old = m->wild, *l, *tmp;

	m->posted_indexed = true;
	m->wild = NULL;
	DL_FOREACH_SAFE(old, l, tmp) {
		DL_DELETE(old, l);
		if (!rivet_match_recv_index(m, (struct rivet_match_recv *)l))
			DL_APPEND(m->wild, l);
	}
}

/* Not the hint's shape, or a list. */
void rivet_match_recv_insert_slow(struct rivet_match *m,
				  struct rivet_match_recv *r)
{
	r->shape = NULL;
	if (++m->nposted > m->list_max && !m->posted_indexed)
		rivet_match_posted_index(m);
	if (!m->posted_indexed || !rivet_match_recv_index(m, r))
		DL_APPEND(m->wild, &r->link);
}

/* On the wild list (a list, or no slot). */
void rivet_match_recv_remove_slow(struct rivet_match *m,
				  struct rivet_match_recv *r)
{
	DL_DELETE(m->wild, &r->link);
	if (!--m->nposted && m->list_max)
		m->posted_indexed = false;	/* a list again */
}

static struct rivet_match_recv *
rivet_match_wild_find(struct rivet_match *m, struct rivet_match_recv *best,
		      fi_addr_t src, uint64_t tag)
{
	struct rivet_match_link *l;
	struct rivet_match_recv *r;

	/* in posting order: the first match is the wild list's oldest */
	DL_FOREACH(m->wild, l) {
		r = (struct rivet_match_recv *)l;
		if (best && r->seq > best->seq)
			break;
		if (rivet_match_addr(r->addr, src) &&
		    rivet_match_tag(r->tag, r->ignore, tag))
			return r;
	}
	return best;
}

/* Several shapes, or receives on the wild list. */
struct rivet_match_recv *rivet_match_recv_find_indexed(struct rivet_match *m,
						       fi_addr_t src,
						       uint64_t tag)
{
	struct rivet_match_side *side = &m->posted;
	struct rivet_match_recv *best = NULL, *r;
	struct rivet_match_shape *s;
	struct rivet_match_link *l;
	uint64_t mtag, addr;
	unsigned int i;

	if (!m->nposted)
		return NULL;
	for (i = 0; i < side->nslots; i++) {
		s = &side->shapes[i];
		if (!s->count)
			continue;
		mtag = tag & s->keep;
		addr = s->any ? FI_ADDR_UNSPEC : src;
		for (l = *rivet_match_chain(&s->tbl, mtag, addr); l;
		     l = l->cnext) {
			r = (struct rivet_match_recv *)l;
			if (r->addr != addr || ((r->tag ^ mtag) & s->keep))
				continue;
			if (!best || r->seq < best->seq)
				best = r;
			break;
		}
	}
	if (m->wild)
		best = rivet_match_wild_find(m, best, src, tag);
	return best;
}

/* Calls fn on each entry of the ring headed by h, oldest first (fn may
 * free the entry it gets). */
static void rivet_match_ring_each(struct rivet_match_link *h,
				  bool (*fn)(struct rivet_match_link *, void *),
				  void *arg)
{
	struct rivet_match_link *l = h, *next;

	do {
		next = l->next;
		if (!fn(l, arg))
			return;
		l = next;
	} while (l != h);
}

/* Calls fn on every entry of t's rings, chain by chain; fn returns false
 * to stop that ring. */
static void rivet_match_table_each(struct rivet_match_table *t,
				   bool (*fn)(struct rivet_match_link *,
					      void *),
				   void *arg)
{
	struct rivet_match_link *h, *next;
	size_t i;

	if (!t->heads)
		return;
	for (i = 0; i < t->nchains; i++)
		for (h = t->heads[i]; h; h = next) {
			next = h->cnext;
			rivet_match_ring_each(h, fn, arg);
		}
}

struct rivet_match_search {
	struct rivet_match_recv *best;
	bool (*pred)(const struct rivet_match_recv *, void *);
	void (*fn)(struct rivet_match_recv *, void *);
	void *arg;
};

/* A ring is in posting order: its first entry that pred takes is its
 * candidate, and none after an older best can beat it. */
static bool rivet_match_search_one(struct rivet_match_link *l, void *arg)
{
	struct rivet_match_search *q = arg;
	struct rivet_match_recv *r = (struct rivet_match_recv *)l;

	if (q->best && r->seq > q->best->seq)
		return false;
	if (!q->pred(r, q->arg))
		return true;
	q->best = r;
	return false;
}

struct rivet_match_recv *
rivet_match_recv_search(struct rivet_match *m,
			bool (*pred)(const struct rivet_match_recv *, void *),
			void *arg)
{
	struct rivet_match_search q = { .pred = pred, .arg = arg };
	struct rivet_match_link *l;
	unsigned int i;

	if (!m->nposted)
		return NULL;
	for (i = 0; i < m->posted.nslots; i++)
		if (m->posted.shapes[i].count)
			rivet_match_table_each(&m->posted.shapes[i].tbl,
					       rivet_match_search_one, &q);
	DL_FOREACH(m->wild, l)
		if (!rivet_match_search_one(l, &q))
			break;
	return q.best;
}

static bool rivet_match_drain_one(struct rivet_match_link *l, void *arg)
{
	struct rivet_match_search *q = arg;

	q->fn((struct rivet_match_recv *)l, q->arg);
	return true;
}

void rivet_match_recv_drain(struct rivet_match *m,
			    void (*fn)(struct rivet_match_recv *, void *),
			    void *arg)
{
	struct rivet_match_search q = { .fn = fn, .arg = arg };
	struct rivet_match_side *side = &m->posted;
	struct rivet_match_link *l, *tmp;
	unsigned int i;

	for (i = 0; i < side->nslots; i++) {
		rivet_match_table_each(&side->shapes[i].tbl,
				       rivet_match_drain_one, &q);
		rivet_match_table_clear(&side->shapes[i].tbl);
		side->shapes[i].count = 0;
	}
	DL_FOREACH_SAFE(m->wild, l, tmp) {
		DL_DELETE(m->wild, l);
		fn((struct rivet_match_recv *)l, arg);
	}
	m->nposted = 0;
	m->posted_indexed = false;
}

/* ---- unexpected messages ---- */

static void rivet_match_msg_key(const struct rivet_match_link *l,
				const struct rivet_match_shape *s,
				uint64_t *mtag, uint64_t *addr)
{
	const struct rivet_match_msg *u = rivet_match_msg_of(l, s->slot);

	*mtag = u->tag & s->keep;
	*addr = s->any ? FI_ADDR_UNSPEC : u->src;
}

void rivet_match_unexp_grow(struct rivet_match_shape *s)
{
	rivet_match_table_grow(s, rivet_match_msg_key);
}

/* Takes s out of use: its table is emptied, the messages' links of its
 * slot left as they are (nothing reads them until it is built again). */
static void rivet_match_unexp_drop(struct rivet_match_shape *s)
{
	s->used = false;
	s->any = -1;		/* no search takes it for its shape */
	rivet_match_table_clear(&s->tbl);
}

/* Files every queued message under a new shape in s; false (and s
 * unused) without memory. */
static bool rivet_match_unexp_build(struct rivet_match *m,
				    struct rivet_match_shape *s,
				    uint64_t ignore, bool any)
{
	struct rivet_match_msg *u;

	if (!rivet_match_table_ready(&s->tbl))
		return false;
	s->keep = ~ignore;
	s->any = any;
	s->used = true;
	s->stamp = ++m->clock;
	DL_FOREACH(m->msgs, u)
		rivet_match_msg_file(m, s, u);
	return true;
}

/* The shape indexing (ignore, any), made (the least recently searched
 * one dropped when all are in use) if needed; NULL without memory. */
static struct rivet_match_shape *
rivet_match_unexp_shape(struct rivet_match *m, uint64_t ignore, bool any)
{
	struct rivet_match_side *side = &m->unexp;
	struct rivet_match_shape *s, *pick = NULL;
	unsigned int i;

	/* the hint is searched without a stamp: it is the most recent */
	if (side->hint->used)
		side->hint->stamp = ++m->clock;
	for (i = 0; i < side->nslots; i++) {
		s = &side->shapes[i];
		if (s->used && s->keep == ~ignore && s->any == any) {
			s->stamp = ++m->clock;
			return s;
		}
		if (!pick || !s->used ||
		    (pick->used && s->stamp < pick->stamp))
			pick = s;
	}
	if (side->nslots < RIVET_MATCH_SHAPES && (!pick || pick->used))
		pick = &side->shapes[side->nslots++];
	else if (pick->used)
		rivet_match_unexp_drop(pick);
	return rivet_match_unexp_build(m, pick, ignore, any) ? pick : NULL;
}

/* Several slots: u goes under each in use. */
void rivet_match_msg_insert_slow(struct rivet_match *m,
				 struct rivet_match_msg *u)
{
	unsigned int i;

	for (i = 0; i < m->unexp.nslots; i++)
		if (m->unexp.shapes[i].used)
			rivet_match_msg_file(m, &m->unexp.shapes[i], u);
}

/* The queue is empty: a list again (every table is empty: each message
 * left it). */
void rivet_match_unexp_reset(struct rivet_match *m)
{
	unsigned int i;

	m->unexp_indexed = false;
	for (i = 0; i < m->unexp.nslots; i++) {
		m->unexp.shapes[i].used = false;
		m->unexp.shapes[i].any = -1;
	}
	m->unexp.nslots = 0;
}

static void rivet_match_msg_unlink(struct rivet_match *m,
				   struct rivet_match_msg *u)
{
	unsigned int i;

	if (m->unexp_indexed)
		for (i = 0; i < m->unexp.nslots; i++)
			if (m->unexp.shapes[i].used)
				rivet_match_link_del(&u->links[i]);
	DL_DELETE(m->msgs, u);
	if (!--m->nmsgs && m->list_max && m->unexp_indexed)
		rivet_match_unexp_reset(m);
}

/* Claimed, or several slots. */
void rivet_match_msg_remove_slow(struct rivet_match *m,
				 struct rivet_match_msg *u)
{
	if (u->claimed)
		DL_DELETE(m->claimed, u);
	else
		rivet_match_msg_unlink(m, u);
}

void rivet_match_msg_set_src(struct rivet_match *m, struct rivet_match_msg *u,
			     fi_addr_t src)
{
	unsigned int i;

	/* the indexes by source drop out, to be built again on demand by
	 * one walk in arrival order (an append here would put u behind
	 * messages that came after it); rare: once per such peer */
	if (!u->claimed && m->unexp_indexed)
		for (i = 0; i < m->unexp.nslots; i++)
			if (m->unexp.shapes[i].used && !m->unexp.shapes[i].any)
				rivet_match_unexp_drop(&m->unexp.shapes[i]);
	u->src = src;
}

void rivet_match_msg_claim(struct rivet_match *m, struct rivet_match_msg *u)
{
	rivet_match_msg_unlink(m, u);
	u->claimed = true;
	DL_APPEND(m->claimed, u);
}

bool rivet_match_msg_claimed_has(const struct rivet_match *m,
				 const struct rivet_match_msg *u)
{
	const struct rivet_match_msg *c;

	for (c = m->claimed; c; c = c->next)
		if (c == u)
			return true;
	return false;
}

struct rivet_match_msg *rivet_match_msg_any(struct rivet_match *m)
{
	return m->msgs ? m->msgs : m->claimed;
}

size_t rivet_match_msg_purge(struct rivet_match *m,
			     bool (*pred)(const struct rivet_match_msg *,
					  void *),
			     void (*fn)(struct rivet_match_msg *, void *),
			     void *arg)
{
	struct rivet_match_msg *u, *tmp;
	size_t n = 0;

	DL_FOREACH_SAFE(m->msgs, u, tmp) {
		if (!pred(u, arg))
			continue;
		rivet_match_msg_remove(m, u);
		fn(u, arg);
		n++;
	}
	DL_FOREACH_SAFE(m->claimed, u, tmp) {
		if (!pred(u, arg))
			continue;
		rivet_match_msg_remove(m, u);
		fn(u, arg);
		n++;
	}
	return n;
}

/* A short queue, or no memory for an index: the queue in arrival order. */
static struct rivet_match_msg *rivet_match_msg_walk(struct rivet_match *m,
						    fi_addr_t addr,
						    uint64_t tag,
						    uint64_t ignore)
{
	struct rivet_match_msg *u;

	DL_FOREACH(m->msgs, u)
		if (rivet_match_addr(addr, u->src) &&
		    rivet_match_tag(tag, ignore, u->tag))
			return u;
	return NULL;
}

/* Not the hint's shape, or a list outgrowing list_max. */
struct rivet_match_msg *rivet_match_msg_find_indexed(struct rivet_match *m,
						     fi_addr_t addr,
						     uint64_t tag,
						     uint64_t ignore)
{
	struct rivet_match_shape *s;
	struct rivet_match_msg *u;
	struct rivet_match_link *l;
	uint64_t mtag = tag & ~ignore;
	bool any = addr == FI_ADDR_UNSPEC;

	if (!m->nmsgs)
		return NULL;
	if (!m->unexp_indexed) {
		if (m->nmsgs <= m->list_max)
			return rivet_match_msg_walk(m, addr, tag, ignore);
		m->unexp_indexed = true;	/* slots are built on demand */
	}
	s = rivet_match_unexp_shape(m, ignore, any);
	if (!s)
		return rivet_match_msg_walk(m, addr, tag, ignore);
	m->unexp.hint = s;
	for (l = *rivet_match_chain(&s->tbl, mtag, addr); l; l = l->cnext) {
		u = rivet_match_msg_of(l, s->slot);
		if ((any || u->src == addr) && !((u->tag ^ mtag) & ~ignore))
			return u;
	}
	return NULL;
}
