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

/* The chain of key (mtag, addr: FI_ADDR_UNSPEC for any source) in t:
 * Fibonacci hashing, the product's top bits. */
static inline struct rivet_match_link **
rivet_match_chain(const struct rivet_match_table *t, uint64_t mtag,
		  uint64_t addr)
{
	uint64_t h = (mtag ^ (addr * 0xc4ceb9fe1a85ec53ULL)) *
		     0x9e3779b97f4a7c15ULL;

	return &t->heads[h >> t->shift];
}

/* l, the head of a ring, goes to the front of chain *pp. */
static inline void rivet_match_ring_push(struct rivet_match_table *t,
					 struct rivet_match_link **pp,
					 struct rivet_match_link *l)
{
	l->cnext = *pp;
	if (*pp)
		(*pp)->cpprev = &l->cnext;
	l->cpprev = pp;
	*pp = l;
	t->nrings++;
}

/* l heads a new ring, at the front of chain *pp. */
static inline void rivet_match_ring_new(struct rivet_match_table *t,
					struct rivet_match_link **pp,
					struct rivet_match_link *l)
{
	l->next = l->prev = l;
	rivet_match_ring_push(t, pp, l);
}

/* l joins the ring headed by h, as its newest entry. */
static inline void rivet_match_ring_add(struct rivet_match_link *h,
					struct rivet_match_link *l)
{
	l->cpprev = NULL;
	l->next = h;
	l->prev = h->prev;
	h->prev->next = l;
	h->prev = l;
}

/* Takes l out of its table; the next of its ring heads it when l did. */
static inline void rivet_match_link_del(struct rivet_match_table *t,
					struct rivet_match_link *l)
{
	struct rivet_match_link *n = l->next;

	if (n == l) {			/* alone: its ring goes */
		*l->cpprev = l->cnext;
		if (l->cnext)
			l->cnext->cpprev = l->cpprev;
		t->nrings--;
		return;
	}
	l->prev->next = n;
	n->prev = l->prev;
	if (!l->cpprev)
		return;
	n->cnext = l->cnext;
	n->cpprev = l->cpprev;
	*n->cpprev = n;
	if (n->cnext)
		n->cnext->cpprev = &n->cnext;
}

/* The table's heads, allocated on first use; false without memory. */
static bool rivet_match_table_alloc(struct rivet_match_table *t)
{
	t->heads = calloc(1U << RIVET_MATCH_TABLE_BITS0, sizeof(*t->heads));
	t->shift = 64 - RIVET_MATCH_TABLE_BITS0;
	t->nrings = 0;
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
		memset(t->heads, 0, sizeof(*t->heads) << (64 - t->shift));
	t->nrings = 0;
}

static void rivet_match_table_free(struct rivet_match_table *t)
{
	free(t->heads);
	memset(t, 0, sizeof(*t));
}

/* More keys than chains: time to grow. */
static inline bool rivet_match_table_full(const struct rivet_match_table *t)
{
	return t->nrings > (size_t)1 << (64 - t->shift);
}

/* The key of a ring head, to rehash it (posted: a receive; unexpected: a
 * message's link of slot). */
typedef void (*rivet_match_key_fn)(const struct rivet_match_link *l,
				   const struct rivet_match_shape *s,
				   unsigned int slot, uint64_t *mtag,
				   uint64_t *addr);

/* Doubles the chains once the keys outnumber them (up to 2^24); without
 * memory the chains just grow longer. */
static __attribute__((noinline)) void
rivet_match_table_grow(struct rivet_match_shape *s, unsigned int slot,
		       rivet_match_key_fn key)
{
	struct rivet_match_table *t = &s->tbl, nt;
	struct rivet_match_link *l, *next;
	size_t i, n = (size_t)1 << (64 - t->shift);
	uint64_t mtag, addr;

	if (t->shift <= 40)
		return;
	nt.heads = calloc(2 * n, sizeof(*nt.heads));
	if (!nt.heads)
		return;
	nt.shift = t->shift - 1;
	nt.nrings = 0;
	for (i = 0; i < n; i++)
		for (l = t->heads[i]; l; l = next) {
			next = l->cnext;
			key(l, s, slot, &mtag, &addr);
			/* the ring stays as it is: only its head moves */
			rivet_match_ring_push(&nt, rivet_match_chain(&nt, mtag,
								     addr), l);
		}
	free(t->heads);
	*t = nt;
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
	m->list_max = RIVET_MATCH_LIST_MAX;
}

void rivet_match_destruct(struct rivet_match *m)
{
	rivet_match_side_destruct(&m->posted);
	rivet_match_side_destruct(&m->unexp);
	memset(m, 0, sizeof(*m));
}

/* ---- posted receives ---- */

/* The slot of a shape: its own, or a free one (assigned); -1 if none. */
static int rivet_match_posted_slot(struct rivet_match *m, uint64_t ignore,
				   bool any)
{
	struct rivet_match_side *side = &m->posted;
	struct rivet_match_shape *s;
	int i, spare = -1;

	for (i = 0; i < (int)side->nslots; i++) {
		s = &side->shapes[i];
		if (s->ignore == ignore && s->any == any)
			return i;
		if (!s->count && spare < 0)
			spare = i;
	}
	if (spare < 0 && side->nslots < RIVET_MATCH_SHAPES)
		spare = side->nslots++;
	if (spare < 0)
		return -1;
	/* an unused slot's table is empty: it serves the new shape */
	s = &side->shapes[spare];
	s->ignore = ignore;
	s->any = any;
	s->used = true;
	return spare;
}

static void rivet_match_recv_key(const struct rivet_match_link *l,
				 const struct rivet_match_shape *s,
				 unsigned int slot, uint64_t *mtag,
				 uint64_t *addr)
{
	const struct rivet_match_recv *r = (const struct rivet_match_recv *)l;

	(void)slot;
	*mtag = r->tag & ~s->ignore;
	*addr = r->addr;	/* FI_ADDR_UNSPEC in a shape of any source */
}

/* Files r in the table of its shape; false (r untouched) when it has to
 * stay on the wild list: no slot, or no memory. */
static inline __attribute__((always_inline)) bool
rivet_match_recv_index(struct rivet_match *m, struct rivet_match_recv *r)
{
	struct rivet_match_link **pp, *l;
	struct rivet_match_shape *s;
	uint64_t mtag;
	int slot;

	slot = rivet_match_posted_slot(m, r->ignore,
				       r->addr == FI_ADDR_UNSPEC);
	if (slot < 0)
		return false;
	s = &m->posted.shapes[slot];
	if (!rivet_match_table_ready(&s->tbl))
		return false;
	r->shape = slot;
	s->count++;
	mtag = r->tag & ~s->ignore;
	pp = rivet_match_chain(&s->tbl, mtag, r->addr);
	for (l = *pp; l; l = l->cnext) {
		const struct rivet_match_recv *h =
			(const struct rivet_match_recv *)l;

		if (h->addr == r->addr && !((h->tag ^ mtag) & ~s->ignore)) {
			rivet_match_ring_add(l, &r->link);
			return true;
		}
	}
	rivet_match_ring_new(&s->tbl, pp, &r->link);
	if (rivet_match_table_full(&s->tbl))
		rivet_match_table_grow(s, (unsigned int)slot,
				       rivet_match_recv_key);
	return true;
}

/* The queue outgrew list_max: file what it holds, oldest first (what
 * finds no slot stays on the wild list, in order). */
static __attribute__((noinline)) void
rivet_match_posted_index(struct rivet_match *m)
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

/* Called for every insert once list_max are queued. */
void rivet_match_recv_insert_indexed(struct rivet_match *m,
				     struct rivet_match_recv *r)
{
	if (++m->nposted > m->list_max && !m->posted_indexed)
		rivet_match_posted_index(m);
	if (!m->posted_indexed || !rivet_match_recv_index(m, r))
		DL_APPEND(m->wild, &r->link);
}

void rivet_match_recv_remove_indexed(struct rivet_match *m,
				     struct rivet_match_recv *r)
{
	struct rivet_match_shape *s;

	if (!--m->nposted)
		m->posted_indexed = false;	/* a list again */
	if (r->shape < 0) {
		DL_DELETE(m->wild, &r->link);
		return;
	}
	s = &m->posted.shapes[r->shape];
	rivet_match_link_del(&s->tbl, &r->link);
	s->count--;
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
		mtag = tag & ~s->ignore;
		addr = s->any ? FI_ADDR_UNSPEC : src;
		for (l = *rivet_match_chain(&s->tbl, mtag, addr); l;
		     l = l->cnext) {
			r = (struct rivet_match_recv *)l;
			if (r->addr != addr || ((r->tag ^ mtag) & ~s->ignore))
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
	for (i = 0; i < (size_t)1 << (64 - t->shift); i++)
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

static inline struct rivet_match_msg *
rivet_match_msg_of(const struct rivet_match_link *l, unsigned int slot)
{
	return (struct rivet_match_msg *)((char *)(l - slot) -
					  offsetof(struct rivet_match_msg,
						   links));
}

static void rivet_match_msg_key(const struct rivet_match_link *l,
				const struct rivet_match_shape *s,
				unsigned int slot, uint64_t *mtag,
				uint64_t *addr)
{
	const struct rivet_match_msg *u = rivet_match_msg_of(l, slot);

	*mtag = u->tag & ~s->ignore;
	*addr = s->any ? FI_ADDR_UNSPEC : u->src;
}

/* Files u under slot (whose table is ready). */
static inline __attribute__((always_inline)) void
rivet_match_msg_index(struct rivet_match *m, struct rivet_match_msg *u,
		      unsigned int slot)
{
	struct rivet_match_shape *s = &m->unexp.shapes[slot];
	struct rivet_match_link **pp, *l;
	uint64_t mtag = u->tag & ~s->ignore;

	pp = rivet_match_chain(&s->tbl, mtag,
			       s->any ? FI_ADDR_UNSPEC : u->src);
	for (l = *pp; l; l = l->cnext) {
		const struct rivet_match_msg *h = rivet_match_msg_of(l, slot);

		if ((s->any || h->src == u->src) &&
		    !((h->tag ^ mtag) & ~s->ignore)) {
			rivet_match_ring_add(l, &u->links[slot]);
			return;
		}
	}
	rivet_match_ring_new(&s->tbl, pp, &u->links[slot]);
	if (rivet_match_table_full(&s->tbl))
		rivet_match_table_grow(s, slot, rivet_match_msg_key);
}

/* Takes slot out of use: its table is emptied, the messages' links of
 * the slot left as they are (nothing reads them until it is built
 * again). */
static void rivet_match_unexp_drop(struct rivet_match *m, unsigned int slot)
{
	m->unexp.shapes[slot].used = false;
	rivet_match_table_clear(&m->unexp.shapes[slot].tbl);
}

/* Files every queued message under a new shape in slot; false (and the
 * slot unused) without memory. */
static __attribute__((noinline)) bool rivet_match_unexp_build(struct rivet_match *m, unsigned int slot,
				    uint64_t ignore, bool any)
{
	struct rivet_match_shape *s = &m->unexp.shapes[slot];
	struct rivet_match_msg *u;

	if (!rivet_match_table_ready(&s->tbl))
		return false;
	s->ignore = ignore;
	s->any = any;
	s->used = true;
	s->stamp = ++m->clock;
	DL_FOREACH(m->msgs, u)
		rivet_match_msg_index(m, u, slot);
	return true;
}

/* The slot indexing a shape, made (the least recently searched one
 * dropped when all are in use) if needed; -1 without memory. */
static int rivet_match_unexp_slot(struct rivet_match *m, uint64_t ignore,
				  bool any)
{
	struct rivet_match_side *side = &m->unexp;
	struct rivet_match_shape *s;
	int i, pick = -1;

	for (i = 0; i < (int)side->nslots; i++) {
		s = &side->shapes[i];
		if (s->used && s->ignore == ignore && s->any == any) {
			s->stamp = ++m->clock;
			return i;
		}
		if (pick < 0 || !s->used ||
		    (side->shapes[pick].used &&
		     s->stamp < side->shapes[pick].stamp))
			pick = i;
	}
	if (side->nslots < RIVET_MATCH_SHAPES &&
	    (pick < 0 || side->shapes[pick].used))
		pick = side->nslots++;
	else if (side->shapes[pick].used)
		rivet_match_unexp_drop(m, (unsigned int)pick);
	return rivet_match_unexp_build(m, (unsigned int)pick, ignore, any) ?
	       pick : -1;
}

void rivet_match_msg_insert_indexed(struct rivet_match *m,
				    struct rivet_match_msg *u)
{
	unsigned int i;

	for (i = 0; i < m->unexp.nslots; i++)
		if (m->unexp.shapes[i].used)
			rivet_match_msg_index(m, u, i);
	DL_APPEND(m->msgs, u);
	m->nmsgs++;
}

static void rivet_match_msg_unlink(struct rivet_match *m,
				   struct rivet_match_msg *u)
{
	unsigned int i;

	for (i = 0; i < m->unexp.nslots; i++)
		if (m->unexp.shapes[i].used)
			rivet_match_link_del(&m->unexp.shapes[i].tbl,
					     &u->links[i]);
	DL_DELETE(m->msgs, u);
	if (!--m->nmsgs && m->unexp_indexed) {	/* a list again */
		m->unexp_indexed = false;
		/* every table is empty: each message left it */
		for (i = 0; i < m->unexp.nslots; i++)
			m->unexp.shapes[i].used = false;
		m->unexp.nslots = 0;
	}
}

void rivet_match_msg_remove_indexed(struct rivet_match *m,
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
				rivet_match_unexp_drop(m, i);
	u->src = src;
}

void rivet_match_msg_claim(struct rivet_match *m, struct rivet_match_msg *u)
{
	rivet_match_msg_unlink(m, u);
	u->claimed = true;
	DL_APPEND(m->claimed, u);
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
	int slot;

	if (!m->nmsgs)
		return NULL;
	if (!m->unexp_indexed) {
		if (m->nmsgs <= m->list_max)
			return rivet_match_msg_walk(m, addr, tag, ignore);
		m->unexp_indexed = true;	/* slots are built on demand */
	}
	slot = rivet_match_unexp_slot(m, ignore, any);
	if (slot < 0)
		return rivet_match_msg_walk(m, addr, tag, ignore);
	s = &m->unexp.shapes[slot];
	for (l = *rivet_match_chain(&s->tbl, mtag, addr); l; l = l->cnext) {
		u = rivet_match_msg_of(l, (unsigned int)slot);
		if ((any || u->src == addr) && !((u->tag ^ mtag) & ~ignore))
			return u;
	}
	return NULL;
}
