/* SPDX-License-Identifier: MIT */
/*
 * The tag matching engine: FIFO buckets hashed by (shape, source, masked
 * tag), one probe per shape in use (rivet_match.h, docs/matching.md).
 * Pure (no verbs), unit tested in test/test_match.c.  uthash stays here.
 */
#include <stdlib.h>
#include <utlist.h>

#include "rivet_match.h"

/* Every field is set (no padding): compared field by field. */
struct rivet_match_key {
	uint64_t ignore;
	uint64_t addr;			/* FI_ADDR_UNSPEC when any */
	uint64_t tag;			/* tag & ~ignore */
	uint64_t any;
};

static inline unsigned int rivet_match_hash(const struct rivet_match_key *k)
{
	uint64_t h = k->tag ^ (k->ignore * 0x9e3779b97f4a7c15ULL) ^
		     ((k->addr + k->any) * 0xc4ceb9fe1a85ec53ULL);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return (unsigned int)h;
}

static inline int rivet_match_key_cmp(const struct rivet_match_key *a,
				      const struct rivet_match_key *b)
{
	return (a->tag != b->tag) | (a->addr != b->addr) |
	       (a->ignore != b->ignore) | (a->any != b->any);
}

/* A failed allocation inside uthash leaves the bucket out and marks it. */
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(elt) ((elt)->oom = true)
#define HASH_FUNCTION(keyptr, keylen, hashv) \
	((hashv) = rivet_match_hash((const struct rivet_match_key *)(keyptr)))
#define HASH_KEYCMP(a, b, n) \
	rivet_match_key_cmp((const struct rivet_match_key *)(a), \
			    (const struct rivet_match_key *)(b))
#include <uthash.h>

struct rivet_match_bucket {
	struct rivet_match_key key;
	struct rivet_match_link *head;	/* utlist DL, oldest first */
	bool oom;
	bool idle;			/* empty, on side->idle */
	struct rivet_match_bucket *inext, *iprev;	/* side->idle */
	UT_hash_handle hh;
};

/* Empty buckets stay in the table, for the next entry with their key (a
 * ping-pong with one tag reuses one), on an idle list oldest first; once
 * there are this many, a new key takes over the oldest one instead of a
 * malloc (a tag per message costs a rekey, not an allocation). */
#define RIVET_MATCH_SPARE 64

static void rivet_match_key_make(struct rivet_match_key *k,
				 const struct rivet_match_shape *s,
				 fi_addr_t addr, uint64_t tag)
{
	k->ignore = s->ignore;
	k->any = s->any;
	k->addr = s->any ? FI_ADDR_UNSPEC : addr;
	k->tag = tag & ~s->ignore;
}

/* The bucket of k or NULL; *hashv_p is k's hash when it was computed
 * (s->last, the shape's bucket used last, is tried first). */
static inline struct rivet_match_bucket *
rivet_match_bucket_find(struct rivet_match_side *side,
			struct rivet_match_shape *s,
			const struct rivet_match_key *k, unsigned int *hashv_p)
{
	struct rivet_match_bucket *b = s->last;
	unsigned int hashv;

	if (b && !rivet_match_key_cmp(&b->key, k))
		return b;
	hashv = rivet_match_hash(k);
	*hashv_p = hashv;
	HASH_FIND_BYHASHVALUE(hh, side->table, k, sizeof(*k), hashv, b);
	if (b)
		s->last = b;
	return b;
}

static struct rivet_match_bucket *
rivet_match_bucket_lookup(struct rivet_match_side *side,
			  struct rivet_match_shape *s,
			  const struct rivet_match_key *k)
{
	unsigned int hashv;

	return rivet_match_bucket_find(side, s, k, &hashv);
}

/* A bucket to (re)key: the oldest idle one once there are enough. */
static struct rivet_match_bucket *
rivet_match_bucket_alloc(struct rivet_match_side *side)
{
	struct rivet_match_bucket *b = side->idle;

	if (side->nidle < RIVET_MATCH_SPARE)
		return calloc(1, sizeof(*b));
	DL_DELETE2(side->idle, b, iprev, inext);
	side->nidle--;
	b->idle = false;
	/* other shapes' s->last may point here: they check the key */
	HASH_DELETE(hh, side->table, b);
	side->nbuckets--;
	return b;
}

/* The bucket of k, made when missing; NULL without memory. */
static struct rivet_match_bucket *
rivet_match_bucket_get(struct rivet_match_side *side,
		       struct rivet_match_shape *s,
		       const struct rivet_match_key *k)
{
	unsigned int hashv = 0;
	struct rivet_match_bucket *b;

	b = rivet_match_bucket_find(side, s, k, &hashv);
	if (b)
		return b;
	b = rivet_match_bucket_alloc(side);
	if (!b)
		return NULL;
	b->key = *k;
	b->oom = false;
	HASH_ADD_BYHASHVALUE(hh, side->table, key, sizeof(b->key), hashv, b);
	if (b->oom) {
		free(b);
		return NULL;
	}
	side->nbuckets++;
	s->last = b;
	return b;
}

static void rivet_match_link_add(struct rivet_match_side *side,
				 struct rivet_match_bucket *b,
				 struct rivet_match_link *l)
{
	if (b->idle) {
		DL_DELETE2(side->idle, b, iprev, inext);
		side->nidle--;
		b->idle = false;
	}
	l->bucket = b;
	DL_APPEND(b->head, l);
}

static void rivet_match_link_del(struct rivet_match_side *side,
				 struct rivet_match_link *l)
{
	struct rivet_match_bucket *b = l->bucket;

	DL_DELETE(b->head, l);
	if (!b->head) {
		DL_APPEND2(side->idle, b, iprev, inext);
		side->nidle++;
		b->idle = true;
	}
}

static void rivet_match_side_destruct(struct rivet_match_side *side)
{
	struct rivet_match_bucket *b, *tmp;

	HASH_ITER(hh, side->table, b, tmp) {
		HASH_DEL(side->table, b);
		free(b);
	}
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
	s = &side->shapes[spare];
	s->ignore = ignore;
	s->any = any;
	s->used = true;
	s->last = NULL;
	return spare;
}

/* Files r in the bucket of its shape; false (r untouched) when it has
 * to stay on the wild list: no slot, or no memory. */
static bool rivet_match_recv_index(struct rivet_match *m,
				   struct rivet_match_recv *r)
{
	struct rivet_match_bucket *b;
	struct rivet_match_shape *s;
	struct rivet_match_key k;
	int slot;

	slot = rivet_match_posted_slot(m, r->ignore,
				       r->addr == FI_ADDR_UNSPEC);
	if (slot < 0)
		return false;
	s = &m->posted.shapes[slot];
	rivet_match_key_make(&k, s, r->addr, r->tag);
	b = rivet_match_bucket_get(&m->posted, s, &k);
	if (!b)
		return false;
	r->shape = slot;
	s->count++;
	rivet_match_link_add(&m->posted, b, &r->link);
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
	if (!--m->nposted)
		m->posted_indexed = false;	/* a list again */
	if (r->shape < 0) {
		DL_DELETE(m->wild, &r->link);
		return;
	}
	rivet_match_link_del(&m->posted, &r->link);
	m->posted.shapes[r->shape].count--;
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
	struct rivet_match_bucket *b;
	struct rivet_match_shape *s;
	struct rivet_match_key k;
	unsigned int i;

	if (!m->nposted)
		return NULL;
	for (i = 0; i < side->nslots; i++) {
		s = &side->shapes[i];
		if (!s->count)
			continue;
		rivet_match_key_make(&k, s, src, tag);
		b = rivet_match_bucket_lookup(side, s, &k);
		if (!b || !b->head)
			continue;
		r = (struct rivet_match_recv *)b->head;
		if (!best || r->seq < best->seq)
			best = r;
	}
	if (m->wild)
		best = rivet_match_wild_find(m, best, src, tag);
	return best;
}

static struct rivet_match_recv *
rivet_match_list_search(struct rivet_match_link *head,
			struct rivet_match_recv *best,
			bool (*pred)(const struct rivet_match_recv *, void *),
			void *arg)
{
	struct rivet_match_link *l;
	struct rivet_match_recv *r;

	DL_FOREACH(head, l) {
		r = (struct rivet_match_recv *)l;
		if (best && r->seq > best->seq)
			break;
		if (pred(r, arg))
			return r;
	}
	return best;
}

struct rivet_match_recv *
rivet_match_recv_search(struct rivet_match *m,
			bool (*pred)(const struct rivet_match_recv *, void *),
			void *arg)
{
	struct rivet_match_recv *best = NULL;
	struct rivet_match_bucket *b, *tmp;

	if (!m->nposted)
		return NULL;
	HASH_ITER(hh, m->posted.table, b, tmp)
		best = rivet_match_list_search(b->head, best, pred, arg);
	return rivet_match_list_search(m->wild, best, pred, arg);
}

static void
rivet_match_list_drain(struct rivet_match_link **head,
		       void (*fn)(struct rivet_match_recv *, void *), void *arg)
{
	struct rivet_match_link *l, *tmp;

	DL_FOREACH_SAFE(*head, l, tmp) {
		DL_DELETE(*head, l);
		fn((struct rivet_match_recv *)l, arg);
	}
}

void rivet_match_recv_drain(struct rivet_match *m,
			    void (*fn)(struct rivet_match_recv *, void *),
			    void *arg)
{
	struct rivet_match_side *side = &m->posted;
	struct rivet_match_bucket *b, *tmp;
	unsigned int i;

	HASH_ITER(hh, side->table, b, tmp)
		rivet_match_list_drain(&b->head, fn, arg);
	rivet_match_list_drain(&m->wild, fn, arg);
	/* every bucket is empty: the side's next use starts over */
	rivet_match_side_destruct(side);
	for (i = 0; i < RIVET_MATCH_SHAPES; i++)
		side->shapes[i].count = 0;
	m->nposted = 0;
	m->posted_indexed = false;
}

/* ---- unexpected messages ---- */

static inline struct rivet_match_msg *
rivet_match_msg_of(struct rivet_match_link *l, unsigned int slot)
{
	return (struct rivet_match_msg *)((char *)(l - slot) -
					  offsetof(struct rivet_match_msg,
						   links));
}

static bool rivet_match_msg_index(struct rivet_match *m,
				  struct rivet_match_msg *u, unsigned int slot)
{
	struct rivet_match_shape *s = &m->unexp.shapes[slot];
	struct rivet_match_bucket *b;
	struct rivet_match_key k;

	rivet_match_key_make(&k, s, u->src, u->tag);
	b = rivet_match_bucket_get(&m->unexp, s, &k);
	if (!b)
		return false;
	rivet_match_link_add(&m->unexp, b, &u->links[slot]);
	return true;
}

/* Takes slot out of use: unlinks the messages before stop (NULL: all). */
static void rivet_match_unexp_drop(struct rivet_match *m, unsigned int slot,
				   struct rivet_match_msg *stop)
{
	struct rivet_match_msg *u;

	DL_FOREACH(m->msgs, u) {
		if (u == stop)
			break;
		rivet_match_link_del(&m->unexp, &u->links[slot]);
	}
	m->unexp.shapes[slot].used = false;
	m->unexp.shapes[slot].last = NULL;
}

/* Files every queued message under a new shape in slot; false (and the
 * slot unused) without memory. */
static bool rivet_match_unexp_build(struct rivet_match *m, unsigned int slot,
				    uint64_t ignore, bool any)
{
	struct rivet_match_shape *s = &m->unexp.shapes[slot];
	struct rivet_match_msg *u;

	s->ignore = ignore;
	s->any = any;
	s->used = true;
	s->last = NULL;
	s->stamp = ++m->clock;
	DL_FOREACH(m->msgs, u) {
		if (!rivet_match_msg_index(m, u, slot)) {
			rivet_match_unexp_drop(m, slot, u);
			return false;
		}
	}
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
		rivet_match_unexp_drop(m, pick, NULL);
	return rivet_match_unexp_build(m, pick, ignore, any) ? pick : -1;
}

void rivet_match_msg_insert_indexed(struct rivet_match *m,
				    struct rivet_match_msg *u)
{
	unsigned int i;

	for (i = 0; i < m->unexp.nslots; i++)
		if (m->unexp.shapes[i].used && !rivet_match_msg_index(m, u, i))
			rivet_match_unexp_drop(m, i, NULL);
	DL_APPEND(m->msgs, u);
	m->nmsgs++;
}

static void rivet_match_msg_unlink(struct rivet_match *m,
				   struct rivet_match_msg *u)
{
	unsigned int i;

	for (i = 0; i < m->unexp.nslots; i++)
		if (m->unexp.shapes[i].used)
			rivet_match_link_del(&m->unexp, &u->links[i]);
	DL_DELETE(m->msgs, u);
	if (!--m->nmsgs && m->unexp_indexed) {	/* a list again */
		m->unexp_indexed = false;
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
				rivet_match_unexp_drop(m, i, NULL);
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
	struct rivet_match_bucket *b;
	struct rivet_match_shape *s;
	struct rivet_match_key k;
	int slot;

	if (!m->nmsgs)
		return NULL;
	if (!m->unexp_indexed) {
		if (m->nmsgs <= m->list_max)
			return rivet_match_msg_walk(m, addr, tag, ignore);
		m->unexp_indexed = true;	/* slots are built on demand */
	}
	slot = rivet_match_unexp_slot(m, ignore, addr == FI_ADDR_UNSPEC);
	if (slot < 0)
		return rivet_match_msg_walk(m, addr, tag, ignore);
	s = &m->unexp.shapes[slot];
	rivet_match_key_make(&k, s, addr, tag);
	b = rivet_match_bucket_lookup(&m->unexp, s, &k);
	if (!b || !b->head)
		return NULL;
	return rivet_match_msg_of(b->head, slot);
}
