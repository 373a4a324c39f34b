/* SPDX-License-Identifier: MIT */
/*
 * The tag matching engine (rivet_match.c): posted receives and unexpected
 * messages of one queue pair (FI_TAGGED or FI_MSG), matched in MPI's order
 * at a cost that does not grow with the depth of either queue.  Pure C: no
 * verbs; the RDM endpoint embeds the entries in its own receives and
 * messages.  docs/matching.md describes the design.
 *
 * A receive's "shape" is its ignore mask and whether it takes any source
 * (addr FI_ADDR_UNSPEC).  Each shape in use has a hash table keyed by
 * (source or any, tag & ~ignore): the entries of one key form a ring in
 * order, oldest first, whose oldest entry stands in the table's chain for
 * it, so every entry of a ring matches the same messages and the ring's
 * head is its oldest match.  The entries are the links: no bucket objects.
 * - Posted side: a receive goes to the table of its own shape (at most
 *   RIVET_MATCH_SHAPES shapes at a time; the rest wait on a "wild" list
 *   in posting order).  An arriving message probes one chain per shape
 *   in use and walks the wild list; the smallest sequence number wins.
 * - Unexpected side: a message is filed under every shape that receives
 *   have searched with (RIVET_MATCH_SHAPES at most, the least recently
 *   used one dropped for a new one, whose index is then built by one walk
 *   of the queue).  A receive probes the one chain of its shape.
 * Queues of up to list_max entries (none by default) are walked instead
 * (the wild list, the arrival list).  The common case, one shape in use
 * on a side, is inline: a hash, one chain, the ring's head.
 * The engine does no locking and allocates only a table's heads (when a
 * shape is first used, and doubled when its entries outnumber them).
 */
#ifndef RIVET_MATCH_H
#define RIVET_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <utlist.h>
#include <rdma/fabric.h>

#define RIVET_MATCH_SHAPES 8
/* Queues of up to list_max entries are a plain list in order (a walk of
 * a few entries costs less than the hashing, but grows with the depth);
 * past it, indexed until empty again.  This default, 0, indexes every
 * entry: a match costs the same at any depth (FI_RIVET_MATCH_LIST_MAX
 * sets it for an endpoint). */
#define RIVET_MATCH_LIST_MAX 0

/* An entry's place: in a table, a ring of one key (next, prev: circular,
 * the head the oldest) whose head is on a hash chain (cnext, cpprev: the
 * pointer that points at it; NULL for the rest of the ring); on the wild
 * list, a utlist DL. */
struct rivet_match_link {
	struct rivet_match_link *next, *prev;
	struct rivet_match_link *cnext, **cpprev;
};

/* One shape's index: chains of ring heads, nchains = 1 << (64 - shift). */
struct rivet_match_table {
	struct rivet_match_link **heads;	/* NULL: not allocated yet */
	unsigned int shift;
	size_t nchains;
};

struct rivet_match_shape;

/* A posted receive (embedded in the caller's). */
struct rivet_match_recv {
	struct rivet_match_link link;
	uint64_t seq;			/* posting order */
	fi_addr_t addr;			/* FI_ADDR_UNSPEC: any source */
	uint64_t tag, ignore;
	struct rivet_match_shape *shape; /* its table's; NULL: wild list */
};

/* An unexpected message (embedded in the caller's). */
struct rivet_match_msg {
	struct rivet_match_msg *next, *prev;	/* arrival order, or claimed */
	fi_addr_t src;
	uint64_t tag;
	bool claimed;			/* FI_CLAIM: off every index */
	struct rivet_match_link links[RIVET_MATCH_SHAPES]; /* by unexp slot */
};

struct rivet_match_shape {
	uint64_t keep;			/* ~ignore */
	int any;			/* any source: 1, one: 0; no shape: -1 */
	bool used;			/* unexpected side: slot indexed */
	unsigned int slot;		/* its index in the side */
	size_t count;			/* posted side: receives in it */
	uint64_t stamp;			/* unexpected side: last search */
	struct rivet_match_table tbl;	/* empty when the slot is unused */
};

struct rivet_match_side {
	struct rivet_match_shape shapes[RIVET_MATCH_SHAPES];
	unsigned int nslots;		/* slots below it may be in use */
	/* posted: the shape last filed into; unexpected: the one last
	 * searched (any == -1 until there is one); tried first */
	struct rivet_match_shape *hint;
};

struct rivet_match {
	struct rivet_match_side posted, unexp;
	struct rivet_match_link *wild;	/* posted beyond the shapes */
	struct rivet_match_msg *msgs;	/* unclaimed, in arrival order */
	struct rivet_match_msg *claimed;
	uint64_t seq, clock;
	size_t nposted, nmsgs;
	size_t list_max;		/* RIVET_MATCH_LIST_MAX */
	bool posted_indexed, unexp_indexed;
};

void rivet_match_construct(struct rivet_match *m);
/* Frees the engine's tables; the entries still in it are the caller's. */
void rivet_match_destruct(struct rivet_match *m);

static inline bool rivet_match_tag(uint64_t want, uint64_t ignore,
				   uint64_t tag)
{
	return ((want ^ tag) & ~ignore) == 0;
}

static inline bool rivet_match_addr(fi_addr_t want, fi_addr_t src)
{
	return want == FI_ADDR_UNSPEC || want == src;
}

/* ---- the tables: what the inline fast paths below need ---- */

/* The chain of key (mtag, addr: FI_ADDR_UNSPEC for any source) in t:
 * Fibonacci hashing (the product's top bits) of the tag with the
 * address's halves swapped in. */
static inline struct rivet_match_link **
rivet_match_chain(const struct rivet_match_table *t, uint64_t mtag,
		  uint64_t addr)
{
	uint64_t k = mtag ^ (addr << 32 | addr >> 32);

	return &t->heads[(k * 0x9e3779b97f4a7c15ULL) >> t->shift];
}

/* l, the head of a ring, goes to the front of chain *pp. */
static inline void rivet_match_chain_push(struct rivet_match_link **pp,
					  struct rivet_match_link *l)
{
	l->cnext = *pp;
	if (*pp)
		(*pp)->cpprev = &l->cnext;
	l->cpprev = pp;
	*pp = l;
}

/* l heads a new ring, at the front of chain *pp. */
static inline void rivet_match_ring_new(struct rivet_match_link **pp,
					struct rivet_match_link *l)
{
	l->next = l->prev = l;
	rivet_match_chain_push(pp, l);
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
static inline void rivet_match_link_del(struct rivet_match_link *l)
{
	struct rivet_match_link *n = l->next;

	if (n == l) {			/* alone: its ring goes */
		*l->cpprev = l->cnext;
		if (l->cnext)
			l->cnext->cpprev = l->cpprev;
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

/* The slow paths (rivet_match.c) of the inline functions below. */
void rivet_match_posted_grow(struct rivet_match_shape *s);
void rivet_match_unexp_grow(struct rivet_match_shape *s);
void rivet_match_recv_insert_slow(struct rivet_match *m,
				  struct rivet_match_recv *r);
void rivet_match_recv_remove_slow(struct rivet_match *m,
				  struct rivet_match_recv *r);
struct rivet_match_recv *rivet_match_recv_find_indexed(struct rivet_match *m,
						       fi_addr_t src,
						       uint64_t tag);
void rivet_match_msg_insert_slow(struct rivet_match *m,
				 struct rivet_match_msg *u);
void rivet_match_msg_remove_slow(struct rivet_match *m,
				 struct rivet_match_msg *u);
void rivet_match_unexp_reset(struct rivet_match *m);
struct rivet_match_msg *rivet_match_msg_find_indexed(struct rivet_match *m,
						     fi_addr_t addr,
						     uint64_t tag,
						     uint64_t ignore);

/* ---- receives ----
 * Insert never fails (without memory a receive waits on the wild list).
 * Find: the oldest posted receive that a message from src
 * (FI_ADDR_NOTAVAIL: unknown) with tag matches, or NULL; it stays posted
 * until removed. */

/* Links r into s's table (allocated), as the newest of its key; true
 * when it heads a new ring (the table may have to grow). */
static inline bool rivet_match_recv_link(struct rivet_match_shape *s,
					 struct rivet_match_recv *r)
{
	uint64_t keep = s->keep, mtag = r->tag & keep;
	struct rivet_match_link **pp = rivet_match_chain(&s->tbl, mtag,
							 r->addr), *l;

	r->shape = s;
	s->count++;
	for (l = *pp; l; l = l->cnext) {
		const struct rivet_match_recv *h =
			(const struct rivet_match_recv *)l;

		if (h->addr == r->addr && !((h->tag ^ mtag) & keep)) {
			rivet_match_ring_add(l, &r->link);
			return false;
		}
	}
	rivet_match_ring_new(pp, &r->link);
	return true;
}

/* Files r in s's table (allocated), as the newest of its key. */
static inline void rivet_match_recv_file(struct rivet_match_shape *s,
					 struct rivet_match_recv *r)
{
	if (rivet_match_recv_link(s, r) && s->count > s->tbl.nchains)
		rivet_match_posted_grow(s);
}

static inline void rivet_match_recv_insert(struct rivet_match *m,
					   struct rivet_match_recv *r,
					   fi_addr_t addr, uint64_t tag,
					   uint64_t ignore)
{
	struct rivet_match_shape *s = m->posted.hint;

	r->seq = m->seq++;
	r->addr = addr;
	r->tag = tag;
	r->ignore = ignore;
	if (m->posted_indexed && s->keep == ~ignore &&
	    s->any == (addr == FI_ADDR_UNSPEC)) {
		m->nposted++;
		rivet_match_recv_file(s, r);
		return;
	}
	rivet_match_recv_insert_slow(m, r);
}

static inline void rivet_match_recv_remove(struct rivet_match *m,
					   struct rivet_match_recv *r)
{
	struct rivet_match_shape *s = r->shape;

	if (!s) {
		rivet_match_recv_remove_slow(m, r);
		return;
	}
	rivet_match_link_del(&r->link);
	s->count--;
	if (!--m->nposted && m->list_max)
		m->posted_indexed = false;	/* a list again */
}

static inline struct rivet_match_recv *
rivet_match_recv_find(struct rivet_match *m, fi_addr_t src, uint64_t tag)
{
	struct rivet_match_shape *s = m->posted.shapes;
	struct rivet_match_recv *r;
	struct rivet_match_link *l;
	uint64_t keep, mtag, a;

	if (!m->posted_indexed) {
		DL_FOREACH(m->wild, l) {
			r = (struct rivet_match_recv *)l;
			if (rivet_match_addr(r->addr, src) &&
			    rivet_match_tag(r->tag, r->ignore, tag))
				return r;
		}
		return NULL;
	}
	if (m->posted.nslots != 1 || m->wild)
		return rivet_match_recv_find_indexed(m, src, tag);
	/* one shape: one chain */
	if (!s->count)
		return NULL;
	keep = s->keep;
	mtag = tag & keep;
	a = s->any ? FI_ADDR_UNSPEC : src;
	for (l = *rivet_match_chain(&s->tbl, mtag, a); l; l = l->cnext) {
		r = (struct rivet_match_recv *)l;
		if (r->addr == a && !((r->tag ^ mtag) & keep))
			return r;
	}
	return NULL;
}

/* The oldest posted receive for which pred is true, or NULL (a walk of
 * every receive: for fi_cancel and close). */
struct rivet_match_recv *
rivet_match_recv_search(struct rivet_match *m,
			bool (*pred)(const struct rivet_match_recv *, void *),
			void *arg);

/* Takes every posted receive out, handing each to fn (for close). */
void rivet_match_recv_drain(struct rivet_match *m,
			    void (*fn)(struct rivet_match_recv *, void *),
			    void *arg);

/* ---- unexpected messages ----
 * Find: the oldest unclaimed message that a receive for addr
 * (FI_ADDR_UNSPEC: any), tag and ignore matches, or NULL. */

static inline struct rivet_match_msg *
rivet_match_msg_of(const struct rivet_match_link *l, unsigned int slot)
{
	return (struct rivet_match_msg *)((char *)(l - slot) -
					  offsetof(struct rivet_match_msg,
						   links));
}

/* Files u (on the arrival list) under s's slot (indexed). */
static inline void rivet_match_msg_file(struct rivet_match *m,
					struct rivet_match_shape *s,
					struct rivet_match_msg *u)
{
	unsigned int slot = s->slot;
	uint64_t keep = s->keep, mtag = u->tag & keep;
	struct rivet_match_link **pp, *l;

	pp = rivet_match_chain(&s->tbl, mtag,
			       s->any ? FI_ADDR_UNSPEC : u->src);
	for (l = *pp; l; l = l->cnext) {
		const struct rivet_match_msg *h = rivet_match_msg_of(l, slot);

		if ((s->any || h->src == u->src) &&
		    !((h->tag ^ mtag) & keep)) {
			rivet_match_ring_add(l, &u->links[slot]);
			return;
		}
	}
	rivet_match_ring_new(pp, &u->links[slot]);
	if (m->nmsgs > s->tbl.nchains)
		rivet_match_unexp_grow(s);
}

static inline void rivet_match_msg_insert(struct rivet_match *m,
					  struct rivet_match_msg *u,
					  fi_addr_t src, uint64_t tag)
{
	u->src = src;
	u->tag = tag;
	u->claimed = false;
	DL_APPEND(m->msgs, u);
	m->nmsgs++;
	if (!m->unexp_indexed)
		return;
	if (m->unexp.nslots == 1 && m->unexp.shapes[0].used)
		rivet_match_msg_file(m, &m->unexp.shapes[0], u);
	else
		rivet_match_msg_insert_slow(m, u);
}

/* Takes a message out, claimed or not. */
static inline void rivet_match_msg_remove(struct rivet_match *m,
					  struct rivet_match_msg *u)
{
	if (u->claimed || (m->unexp_indexed && m->unexp.nslots != 1)) {
		rivet_match_msg_remove_slow(m, u);
		return;
	}
	if (m->unexp_indexed && m->unexp.shapes[0].used)
		rivet_match_link_del(&u->links[0]);
	DL_DELETE(m->msgs, u);
	if (!--m->nmsgs && m->list_max && m->unexp_indexed)
		rivet_match_unexp_reset(m);	/* a list again */
}

static inline struct rivet_match_msg *
rivet_match_msg_find(struct rivet_match *m, fi_addr_t addr, uint64_t tag,
		     uint64_t ignore)
{
	struct rivet_match_shape *s = m->unexp.hint;
	struct rivet_match_msg *u;
	struct rivet_match_link *l;
	uint64_t keep, mtag;
	unsigned int slot;

	if (m->unexp_indexed && s->keep == ~ignore &&
	    s->any == (addr == FI_ADDR_UNSPEC)) {
		/* the shape last searched: one chain */
		keep = s->keep;
		mtag = tag & keep;
		slot = s->slot;
		for (l = *rivet_match_chain(&s->tbl, mtag, addr); l;
		     l = l->cnext) {
			u = rivet_match_msg_of(l, slot);
			if ((s->any || u->src == addr) &&
			    !((u->tag ^ mtag) & keep))
				return u;
		}
		return NULL;
	}
	if (m->unexp_indexed || m->nmsgs > m->list_max)
		return rivet_match_msg_find_indexed(m, addr, tag, ignore);
	DL_FOREACH(m->msgs, u)
		if (rivet_match_addr(addr, u->src) &&
		    rivet_match_tag(tag, ignore, u->tag))
			return u;
	return NULL;
}

/* u's source became known (its peer entered the AV after it came): later
 * finds see it from src, in its place in arrival order. */
void rivet_match_msg_set_src(struct rivet_match *m, struct rivet_match_msg *u,
			     fi_addr_t src);
/* FI_CLAIM: later finds skip u; it stays the engine's until removed. */
void rivet_match_msg_claim(struct rivet_match *m, struct rivet_match_msg *u);
/* Whether u is one of m's claimed messages, by address alone (u may be a
 * message that is gone: an FI_CLAIM context's memory of it). */
bool rivet_match_msg_claimed_has(const struct rivet_match *m,
				 const struct rivet_match_msg *u);
/* Any message still held (unclaimed first), or NULL: for close. */
struct rivet_match_msg *rivet_match_msg_any(struct rivet_match *m);
/* Takes out every message, claimed or not, that pred accepts, handing
 * each to fn (a shared receive context's endpoint closes); returns how
 * many. */
size_t rivet_match_msg_purge(struct rivet_match *m,
			     bool (*pred)(const struct rivet_match_msg *,
					  void *),
			     void (*fn)(struct rivet_match_msg *, void *),
			     void *arg);

#endif /* RIVET_MATCH_H */
