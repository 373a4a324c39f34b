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
 * Queues of up to RIVET_MATCH_LIST_MAX entries are walked instead (the
 * wild list, the arrival list): cheaper than hashing at that depth.
 * The engine does no locking and allocates only a table's heads (when a
 * shape is first used, and doubled when its keys outnumber them).
 */
#ifndef RIVET_MATCH_H
#define RIVET_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <utlist.h>
#include <rdma/fabric.h>

#define RIVET_MATCH_SHAPES 8
/* Up to this many entries a side is a plain list in order (a walk of a
 * few entries costs less than the hashing); past it, it is indexed until
 * it is empty again. */
#define RIVET_MATCH_LIST_MAX 16

/* An entry's place: in a table, a ring of one key (next, prev: circular,
 * the head the oldest) whose head is on a hash chain (cnext, cpprev: the
 * pointer that points at it; NULL for the rest of the ring); on the wild
 * list, a utlist DL. */
struct rivet_match_link {
	struct rivet_match_link *next, *prev;
	struct rivet_match_link *cnext, **cpprev;
};

/* One shape's index: chains of ring heads, 1 << (64 - shift) of them. */
struct rivet_match_table {
	struct rivet_match_link **heads;	/* NULL: not allocated yet */
	unsigned int shift;
	size_t nrings;
};

/* A posted receive (embedded in the caller's). */
struct rivet_match_recv {
	struct rivet_match_link link;
	uint64_t seq;			/* posting order */
	fi_addr_t addr;			/* FI_ADDR_UNSPEC: any source */
	uint64_t tag, ignore;
	int shape;			/* slot of engine->posted, -1: wild */
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
	uint64_t ignore;
	bool any;			/* any source */
	bool used;			/* unexpected side: slot indexed */
	size_t count;			/* posted side: receives in it */
	uint64_t stamp;			/* unexpected side: last search */
	struct rivet_match_table tbl;	/* empty when the slot is unused */
};

struct rivet_match_side {
	struct rivet_match_shape shapes[RIVET_MATCH_SHAPES];
	unsigned int nslots;		/* slots below it may be in use */
};

struct rivet_match {
	struct rivet_match_side posted, unexp;
	struct rivet_match_link *wild;	/* posted beyond the shapes */
	struct rivet_match_msg *msgs;	/* unclaimed, in arrival order */
	struct rivet_match_msg *claimed;
	uint64_t seq, clock;
	size_t nposted, nmsgs;
	size_t list_max;		/* RIVET_MATCH_LIST_MAX (tests: 0) */
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

/* The indexed paths (rivet_match.c) of the inline functions below. */
void rivet_match_recv_insert_indexed(struct rivet_match *m,
				     struct rivet_match_recv *r);
void rivet_match_recv_remove_indexed(struct rivet_match *m,
				     struct rivet_match_recv *r);
struct rivet_match_recv *rivet_match_recv_find_indexed(struct rivet_match *m,
						       fi_addr_t src,
						       uint64_t tag);
void rivet_match_msg_insert_indexed(struct rivet_match *m,
				    struct rivet_match_msg *u);
void rivet_match_msg_remove_indexed(struct rivet_match *m,
				    struct rivet_match_msg *u);
struct rivet_match_msg *rivet_match_msg_find_indexed(struct rivet_match *m,
						     fi_addr_t addr,
						     uint64_t tag,
						     uint64_t ignore);

/* ---- receives ----
 * Insert never fails (without memory a receive waits on the wild list).
 * Find: the oldest posted receive that a message from src
 * (FI_ADDR_NOTAVAIL: unknown) with tag matches, or NULL; it stays posted
 * until removed. */
static inline void rivet_match_recv_insert(struct rivet_match *m,
					   struct rivet_match_recv *r,
					   fi_addr_t addr, uint64_t tag,
					   uint64_t ignore)
{
	r->seq = m->seq++;
	r->addr = addr;
	r->tag = tag;
	r->ignore = ignore;
	r->shape = -1;
	if (m->posted_indexed || m->nposted >= m->list_max) {
		rivet_match_recv_insert_indexed(m, r);
		return;
	}
	m->nposted++;
	DL_APPEND(m->wild, &r->link);
}

static inline void rivet_match_recv_remove(struct rivet_match *m,
					   struct rivet_match_recv *r)
{
	if (m->posted_indexed) {
		rivet_match_recv_remove_indexed(m, r);
		return;
	}
	m->nposted--;
	DL_DELETE(m->wild, &r->link);
}

static inline struct rivet_match_recv *
rivet_match_recv_find(struct rivet_match *m, fi_addr_t src, uint64_t tag)
{
	struct rivet_match_recv *r;
	struct rivet_match_link *l;

	if (m->posted_indexed)
		return rivet_match_recv_find_indexed(m, src, tag);
	DL_FOREACH(m->wild, l) {
		r = (struct rivet_match_recv *)l;
		if (rivet_match_addr(r->addr, src) &&
		    rivet_match_tag(r->tag, r->ignore, tag))
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
static inline void rivet_match_msg_insert(struct rivet_match *m,
					  struct rivet_match_msg *u,
					  fi_addr_t src, uint64_t tag)
{
	u->src = src;
	u->tag = tag;
	u->claimed = false;
	if (m->unexp_indexed) {
		rivet_match_msg_insert_indexed(m, u);
		return;
	}
	DL_APPEND(m->msgs, u);
	m->nmsgs++;
}

/* Takes a message out, claimed or not. */
static inline void rivet_match_msg_remove(struct rivet_match *m,
					  struct rivet_match_msg *u)
{
	if (m->unexp_indexed || u->claimed) {
		rivet_match_msg_remove_indexed(m, u);
		return;
	}
	DL_DELETE(m->msgs, u);
	m->nmsgs--;
}

static inline struct rivet_match_msg *
rivet_match_msg_find(struct rivet_match *m, fi_addr_t addr, uint64_t tag,
		     uint64_t ignore)
{
	struct rivet_match_msg *u;

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
