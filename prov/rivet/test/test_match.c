/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of rivet_match.c: MPI ordering under wildcards and ignore
 * masks, FI_ADDR_UNSPEC sources, peek/claim/discard, cancel, multi-recv,
 * more shapes than slots, and random runs checked against a list model.
 */
#include <stdlib.h>
#include <criterion/criterion.h>

#include "rivet_match.h"

#define ANY FI_ADDR_UNSPEC
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Each test runs twice: indexed from the first entry (as rivet does by
 * default), and with short queues as lists (FI_RIVET_MATCH_LIST_MAX). */
#define TEST_LIST_MAX 16
#define MATCH_TEST(name)						\
	static void name(size_t lm);					\
	Test(match, name##_indexed) { name(RIVET_MATCH_LIST_MAX); }	\
	Test(match, name##_lists) { name(TEST_LIST_MAX); }		\
	static void name(size_t lm)

static void construct(struct rivet_match *m, size_t lm)
{
	rivet_match_construct(m);
	m->list_max = lm;
}

struct test_recv {
	struct rivet_match_recv me;
	int id;
};

struct test_msg {
	struct rivet_match_msg me;
	int id;
};

static int recv_id(struct rivet_match_recv *r)
{
	return r ? ((struct test_recv *)r)->id : -1;
}

static int msg_id(struct rivet_match_msg *u)
{
	return u ? ((struct test_msg *)u)->id : -1;
}

static struct test_recv *post(struct rivet_match *m, int id, fi_addr_t addr,
			      uint64_t tag, uint64_t ignore)
{
	struct test_recv *r = calloc(1, sizeof(*r));

	cr_assert(r);
	r->id = id;
	rivet_match_recv_insert(m, &r->me, addr, tag, ignore);
	return r;
}

static struct test_msg *arrive(struct rivet_match *m, int id, fi_addr_t src,
			       uint64_t tag)
{
	struct test_msg *u = calloc(1, sizeof(*u));

	cr_assert(u);
	u->id = id;
	rivet_match_msg_insert(m, &u->me, src, tag);
	return u;
}

static bool any_recv(const struct rivet_match_recv *r, void *arg)
{
	(void)r;
	(void)arg;
	return true;
}

/* The receive a message takes (removed, freed); its id or -1. */
static int take_recv(struct rivet_match *m, fi_addr_t src, uint64_t tag)
{
	struct rivet_match_recv *r = rivet_match_recv_find(m, src, tag);
	int id = recv_id(r);

	if (r) {
		rivet_match_recv_remove(m, r);
		free(r);
	}
	return id;
}

static int take_msg(struct rivet_match *m, fi_addr_t addr, uint64_t tag,
		    uint64_t ignore)
{
	struct rivet_match_msg *u = rivet_match_msg_find(m, addr, tag, ignore);
	int id = msg_id(u);

	if (u) {
		rivet_match_msg_remove(m, u);
		free(u);
	}
	return id;
}

static void free_recv(struct rivet_match_recv *r, void *arg)
{
	(void)arg;
	free(r);
}

static void drain(struct rivet_match *m)
{
	struct rivet_match_recv *r;
	struct rivet_match_msg *u;

	/* one by one, as fi_cancel would, then the rest at once */
	if ((r = rivet_match_recv_search(m, any_recv, NULL))) {
		rivet_match_recv_remove(m, r);
		free(r);
	}
	rivet_match_recv_drain(m, free_recv, NULL);
	cr_assert_null(rivet_match_recv_search(m, any_recv, NULL));
	while ((u = rivet_match_msg_any(m))) {
		rivet_match_msg_remove(m, u);
		free(u);
	}
	cr_assert_eq(m->nposted, 0);
	cr_assert_eq(m->nmsgs, 0);
	rivet_match_destruct(m);
}

MATCH_TEST(wildcard_before_specific_wins)
{
	struct rivet_match m;

	construct(&m, lm);
	post(&m, 1, ANY, 0, ~0ULL);		/* any source, any tag */
	post(&m, 2, 3, 7, 0);
	cr_assert_eq(take_recv(&m, 3, 7), 1);
	cr_assert_eq(take_recv(&m, 3, 7), 2);
	cr_assert_eq(take_recv(&m, 3, 7), -1);
	drain(&m);
}

MATCH_TEST(specific_before_wildcard_wins)
{
	struct rivet_match m;

	construct(&m, lm);
	post(&m, 1, 3, 7, 0);
	post(&m, 2, ANY, 0, ~0ULL);
	post(&m, 3, ANY, 7, 0);			/* any source, tag 7 */
	cr_assert_eq(take_recv(&m, 3, 7), 1);
	cr_assert_eq(take_recv(&m, 3, 7), 2);
	cr_assert_eq(take_recv(&m, 4, 8), -1);
	cr_assert_eq(take_recv(&m, 4, 7), 3);
	drain(&m);
}

MATCH_TEST(ignore_masks)
{
	struct rivet_match m;

	construct(&m, lm);
	post(&m, 1, ANY, 0x1200, 0x00ff);	/* 0x12xx */
	post(&m, 2, ANY, 0x1234, 0x1000);	/* 0x[01]234 */
	post(&m, 3, ANY, 0x1234, 0);
	cr_assert_eq(take_recv(&m, 1, 0x1334), -1);
	cr_assert_eq(take_recv(&m, 1, 0x0234), 2);
	cr_assert_eq(take_recv(&m, 1, 0x1234), 1);
	cr_assert_eq(take_recv(&m, 1, 0x1234), 3);
	cr_assert_eq(take_recv(&m, 1, 0x1234), -1);
	drain(&m);
}

MATCH_TEST(directed_and_unknown_source)
{
	struct rivet_match m;

	construct(&m, lm);
	post(&m, 1, 5, 1, 0);
	post(&m, 2, ANY, 1, 0);
	/* a peer not in the AV (FI_ADDR_NOTAVAIL) is no directed match */
	cr_assert_eq(take_recv(&m, FI_ADDR_NOTAVAIL, 1), 2);
	cr_assert_eq(take_recv(&m, 6, 1), -1);
	cr_assert_eq(take_recv(&m, 5, 1), 1);
	/* and the unexpected side */
	arrive(&m, 10, FI_ADDR_NOTAVAIL, 1);
	arrive(&m, 11, 5, 1);
	cr_assert_eq(take_msg(&m, 5, 1, 0), 11);
	cr_assert_eq(take_msg(&m, 5, 1, 0), -1);
	cr_assert_eq(take_msg(&m, ANY, 1, 0), 10);
	drain(&m);
}

/* A message from a peer not yet in the AV (FI_ADDR_NOTAVAIL) takes the
 * peer's address when the AV takes it, and keeps its place: a directed
 * receive gets it before a message from the peer that came after it. */
MATCH_TEST(source_known_later)
{
	struct rivet_match m;
	struct test_msg *u1, *u2;
	int i;

	construct(&m, lm);
	u1 = arrive(&m, 1, FI_ADDR_NOTAVAIL, 5);
	u2 = arrive(&m, 2, FI_ADDR_NOTAVAIL, 6);
	for (i = 0; i < 20; i++)	/* past the list's length */
		arrive(&m, 100 + i, 9, 100 + i);
	/* the directed searches index by source first */
	cr_assert_null(rivet_match_msg_find(&m, 7, 5, 0));
	cr_assert_null(rivet_match_msg_find(&m, 7, 0, ~0ULL));
	arrive(&m, 3, 7, 5);
	rivet_match_msg_claim(&m, &u2->me);
	rivet_match_msg_set_src(&m, &u1->me, 7);
	rivet_match_msg_set_src(&m, &u2->me, 7);
	cr_assert_eq(u2->me.src, 7);
	cr_assert_eq(take_msg(&m, 7, 0, ~0ULL), 1);
	cr_assert_eq(take_msg(&m, 7, 5, 0), 3);
	cr_assert_eq(take_msg(&m, 9, 119, 0), 119);
	cr_assert_eq(take_msg(&m, ANY, 0, ~0ULL), 100);
	rivet_match_msg_remove(&m, &u2->me);
	free(u2);
	drain(&m);
}

MATCH_TEST(unexpected_oldest_under_wildcards)
{
	struct rivet_match m;

	construct(&m, lm);
	arrive(&m, 1, 2, 0x10);
	arrive(&m, 2, 1, 0x11);
	arrive(&m, 3, 1, 0x10);
	arrive(&m, 4, 2, 0x11);
	cr_assert_eq(take_msg(&m, 1, 0x10, 0x01), 2);	/* from 1, 0x1[01] */
	cr_assert_eq(take_msg(&m, ANY, 0x11, 0), 4);
	cr_assert_eq(take_msg(&m, ANY, 0, ~0ULL), 1);
	arrive(&m, 5, 2, 0x10);
	cr_assert_eq(take_msg(&m, 2, 0, 0xff), 5);
	cr_assert_eq(take_msg(&m, 2, 0, 0xff), -1);
	cr_assert_eq(take_msg(&m, ANY, 0x10, 0), 3);
	cr_assert_eq(take_msg(&m, ANY, 0, ~0ULL), -1);
	drain(&m);
}

MATCH_TEST(peek_claim_discard)
{
	struct rivet_match m;
	struct rivet_match_msg *u;

	construct(&m, lm);
	arrive(&m, 1, 1, 9);
	arrive(&m, 2, 1, 9);
	/* peek: found, stays */
	cr_assert_eq(msg_id(rivet_match_msg_find(&m, ANY, 9, 0)), 1);
	cr_assert_eq(msg_id(rivet_match_msg_find(&m, 1, 9, 0)), 1);
	/* claim: later finds skip it, until it is removed */
	u = rivet_match_msg_find(&m, ANY, 9, 0);
	cr_assert(!rivet_match_msg_claimed_has(&m, u));
	rivet_match_msg_claim(&m, u);
	cr_assert(u->claimed);
	cr_assert(rivet_match_msg_claimed_has(&m, u));
	cr_assert(!rivet_match_msg_claimed_has(&m, m.msgs));
	cr_assert_eq(msg_id(rivet_match_msg_find(&m, ANY, 9, 0)), 2);
	cr_assert_eq(msg_id(rivet_match_msg_find(&m, 1, 0, ~0ULL)), 2);
	cr_assert_eq(m.nmsgs, 1);
	rivet_match_msg_remove(&m, u);
	/* gone: a context's memory of it no longer names a claimed one */
	cr_assert(!rivet_match_msg_claimed_has(&m, u));
	free(u);
	/* discard: found and removed */
	cr_assert_eq(take_msg(&m, 1, 9, 0), 2);
	cr_assert_eq(msg_id(rivet_match_msg_any(&m)), -1);
	/* a claimed message is still held for close */
	arrive(&m, 3, 1, 9);
	rivet_match_msg_claim(&m, rivet_match_msg_find(&m, 1, 9, 0));
	cr_assert_eq(msg_id(rivet_match_msg_find(&m, 1, 9, 0)), -1);
	cr_assert_eq(msg_id(rivet_match_msg_any(&m)), 3);
	drain(&m);
}

static bool by_id(const struct rivet_match_recv *r, void *arg)
{
	return !arg || ((const struct test_recv *)r)->id == *(int *)arg;
}

MATCH_TEST(cancel)
{
	struct rivet_match m;
	struct rivet_match_recv *r;
	int id = 2;

	construct(&m, lm);
	post(&m, 1, ANY, 4, 0);
	post(&m, 2, ANY, 4, 0);
	post(&m, 3, ANY, 0, ~0ULL);
	r = rivet_match_recv_search(&m, by_id, &id);
	cr_assert_eq(recv_id(r), 2);
	rivet_match_recv_remove(&m, r);
	free(r);
	id = 7;
	cr_assert_null(rivet_match_recv_search(&m, by_id, &id));
	cr_assert_eq(take_recv(&m, 1, 4), 1);
	cr_assert_eq(take_recv(&m, 1, 4), 3);
	cr_assert_eq(take_recv(&m, 1, 4), -1);
	drain(&m);
}

MATCH_TEST(multi_recv_stays_posted)
{
	struct rivet_match m;
	struct rivet_match_recv *r;

	construct(&m, lm);
	post(&m, 1, ANY, 0, ~0ULL);	/* an FI_MULTI_RECV buffer */
	post(&m, 2, ANY, 0, ~0ULL);
	r = rivet_match_recv_find(&m, 1, 0);
	cr_assert_eq(recv_id(r), 1);
	cr_assert_eq(recv_id(rivet_match_recv_find(&m, 2, 0)), 1);
	rivet_match_recv_remove(&m, r);	/* used up */
	free(r);
	cr_assert_eq(recv_id(rivet_match_recv_find(&m, 2, 0)), 2);
	drain(&m);
}

/* More shapes than slots: the rest wait on the wild list, in order. */
MATCH_TEST(more_shapes_than_slots)
{
	struct rivet_match m;
	int i;

	construct(&m, lm);
	for (i = 0; i < 3 * RIVET_MATCH_SHAPES; i++)
		post(&m, i, ANY, 0, 1ULL << i);
	for (i = 0; i < 3 * RIVET_MATCH_SHAPES; i++)
		cr_assert_eq(take_recv(&m, 1, 0), i);
	for (i = 3 * RIVET_MATCH_SHAPES; i > 0; i--)
		post(&m, i, ANY, 0, (1ULL << i) - 1);
	/* tag 0x1ff: only 9 and up match (ignore 0x1ff), the oldest first */
	cr_assert_eq(take_recv(&m, 1, 0x1ff), 3 * RIVET_MATCH_SHAPES);
	for (i = 3 * RIVET_MATCH_SHAPES - 1; i > 8; i--)
		cr_assert_eq(take_recv(&m, 1, 0x100), i);
	cr_assert_eq(take_recv(&m, 1, 0x100), -1);
	for (i = 8; i > 0; i--)
		cr_assert_eq(take_recv(&m, 1, 0), i);
	for (i = 0; i < 3 * RIVET_MATCH_SHAPES; i++)
		arrive(&m, i, 1, (uint64_t)i);
	for (i = 3 * RIVET_MATCH_SHAPES - 1; i >= 0; i--)
		cr_assert_eq(take_msg(&m, ANY, (uint64_t)i, 1ULL << i), i);
	drain(&m);
}

/* Many distinct keys come and go: nothing of theirs is kept (a table
 * holds one chain head per key at most, and does not grow past its
 * first 16). */
MATCH_TEST(keys_leave_nothing)
{
	struct rivet_match m;
	int i;

	construct(&m, lm);
	for (i = 0; i < 10000; i++) {
		post(&m, i, 1, (uint64_t)i, 0);
		cr_assert_eq(take_recv(&m, 1, (uint64_t)i), i);
		arrive(&m, i, 1, (uint64_t)i);
		cr_assert_eq(take_msg(&m, 1, (uint64_t)i, 0), i);
	}
	cr_assert_eq(m.nposted, 0);
	cr_assert_eq(m.nmsgs, 0);
	for (i = 0; i < RIVET_MATCH_SHAPES; i++) {
		cr_assert_eq(m.posted.shapes[i].count, 0);
		cr_assert(!m.posted.shapes[i].tbl.heads ||
			  !m.posted.shapes[i].tbl.heads[0]);
		cr_assert(!m.posted.shapes[i].tbl.heads ||
			  m.posted.shapes[i].tbl.shift == 60);
		cr_assert(!m.unexp.shapes[i].tbl.heads ||
			  m.unexp.shapes[i].tbl.shift == 60);
	}
	drain(&m);
}

/* Thousands of keys in two shapes: the tables grow (their rings move to
 * new chains) and every message still takes the oldest receive of its
 * key, in an order unrelated to posting; the same on the unexpected side
 * with two shapes searched. */
MATCH_TEST(deep_tables_grow)
{
	struct rivet_match m;
	int i, j, n = 3000;

	construct(&m, lm);
	for (i = 0; i < n; i++) {
		post(&m, 2 * i, ANY, (uint64_t)i, 0);
		post(&m, 2 * i + 1, 3, (uint64_t)i, 0);
	}
	cr_assert_gt(m.posted.shapes[0].count, 1000);
	cr_assert_lt(m.posted.shapes[0].tbl.shift, 60);
	for (j = 0; j < n; j++) {
		i = (j * 7919) % n;	/* 7919 is prime: every i once */
		cr_assert_eq(take_recv(&m, 3, (uint64_t)i), 2 * i);
		cr_assert_eq(take_recv(&m, 3, (uint64_t)i), 2 * i + 1);
		cr_assert_eq(take_recv(&m, 3, (uint64_t)i), -1);
	}
	cr_assert_eq(m.nposted, 0);
	for (i = 0; i < n; i++) {
		arrive(&m, 2 * i, 3, (uint64_t)i);
		arrive(&m, 2 * i + 1, 4, (uint64_t)i);
	}
	for (j = 0; j < n; j++) {
		i = (j * 7919) % n;
		cr_assert_eq(take_msg(&m, 4, (uint64_t)i, 0), 2 * i + 1);
		cr_assert_eq(take_msg(&m, ANY, (uint64_t)i, 0), 2 * i);
		cr_assert_eq(take_msg(&m, ANY, (uint64_t)i, 0), -1);
	}
	drain(&m);
}

/* ---- random runs against a model: the lists the engine replaced ---- */

#define MODEL_MAX 4096

struct model {
	struct test_recv *recvs[MODEL_MAX];	/* posting order */
	struct test_msg *msgs[MODEL_MAX];	/* arrival order */
	int nrecvs, nmsgs;
	bool short_queues;	/* more takes than adds */
	int indexed_steps;	/* steps that found a side indexed */
};

static int model_recv(struct model *md, fi_addr_t src, uint64_t tag)
{
	int i;

	for (i = 0; i < md->nrecvs; i++) {
		struct rivet_match_recv *r = &md->recvs[i]->me;

		if ((r->addr == ANY || r->addr == src) &&
		    rivet_match_tag(r->tag, r->ignore, tag))
			return i;
	}
	return -1;
}

static int model_msg(struct model *md, fi_addr_t addr, uint64_t tag,
		     uint64_t ignore)
{
	int i;

	for (i = 0; i < md->nmsgs; i++) {
		struct rivet_match_msg *u = &md->msgs[i]->me;

		if (!u->claimed && (addr == ANY || addr == u->src) &&
		    rivet_match_tag(tag, ignore, u->tag))
			return i;
	}
	return -1;
}

static void model_cut(void **a, int *n, int i)
{
	memmove(&a[i], &a[i + 1], (size_t)(*n - i - 1) * sizeof(*a));
	(*n)--;
}

static const uint64_t g_ignores[] = { 0, 0, 0, 1, 0x10, 0xf, ~0ULL, 0x3 };

static fi_addr_t rnd_addr(bool any_ok)
{
	int r = rand() % 5;

	return r == 4 && any_ok ? ANY : (fi_addr_t)r;
}

static void model_step(struct rivet_match *m, struct model *md, int id)
{
	int op = rand() % 100, i;

	if (md->short_queues && op < 30)
		op += 60;
	uint64_t tag = (uint64_t)(rand() % 32);
	uint64_t ign = g_ignores[rand() % COUNT_OF(g_ignores)];
	fi_addr_t a = rnd_addr(true);
	struct rivet_match_recv *r;
	struct rivet_match_msg *u;

	md->indexed_steps += m->posted_indexed || m->unexp_indexed;
	if (op < 30 && md->nrecvs < MODEL_MAX) {
		md->recvs[md->nrecvs++] = post(m, id, a, tag, ign);
	} else if (op < 60 && md->nmsgs < MODEL_MAX) {
		md->msgs[md->nmsgs++] = arrive(m, id, rnd_addr(false), tag);
	} else if (op < 75) {		/* a message arrives, finds a recv */
		a = rnd_addr(false);
		i = model_recv(md, a, tag);
		r = rivet_match_recv_find(m, a, tag);
		cr_assert_eq(recv_id(r), i < 0 ? -1 : md->recvs[i]->id);
		if (r && rand() % 4) {	/* else a multi-recv: stays */
			rivet_match_recv_remove(m, r);
			free(r);
			model_cut((void **)md->recvs, &md->nrecvs, i);
		}
	} else if (op < 92) {		/* a recv (or a peek) finds a msg */
		i = model_msg(md, a, tag, ign);
		u = rivet_match_msg_find(m, a, tag, ign);
		cr_assert_eq(msg_id(u), i < 0 ? -1 : md->msgs[i]->id);
		if (u && op < 85) {
			rivet_match_msg_remove(m, u);
			free(u);
			model_cut((void **)md->msgs, &md->nmsgs, i);
		} else if (u && op < 89) {
			rivet_match_msg_claim(m, u);
		}
	} else if (op < 96 && md->nrecvs) {	/* cancel */
		i = rand() % md->nrecvs;
		r = rivet_match_recv_search(m, by_id, &md->recvs[i]->id);
		cr_assert_eq(r, &md->recvs[i]->me);
		rivet_match_recv_remove(m, r);
		free(r);
		model_cut((void **)md->recvs, &md->nrecvs, i);
	} else if (md->nmsgs) {		/* a claimed message consumed */
		i = rand() % md->nmsgs;
		if (md->msgs[i]->me.claimed) {
			rivet_match_msg_remove(m, &md->msgs[i]->me);
			free(md->msgs[i]);
			model_cut((void **)md->msgs, &md->nmsgs, i);
		}
	}
}

Test(match, random_against_list_model)
{
	static struct model md;
	struct rivet_match m;
	int i, seed;

	static const size_t lms[] = { 0, 4, TEST_LIST_MAX };

	for (seed = 1; seed <= 9; seed++) {
		srand((unsigned int)seed);
		memset(&md, 0, sizeof(md));
		md.short_queues = seed > 3;
		construct(&m, lms[seed % 3]);
		for (i = 0; i < 20000; i++)
			model_step(&m, &md, i);
		cr_assert_gt(md.indexed_steps, 0);
		cr_assert_eq(m.nposted, (size_t)md.nrecvs);
		drain(&m);
	}
}

/* A shared receive context's endpoint closes: the messages that came on
 * it leave, claimed ones too, and the others keep their order. */
static bool odd_msg(const struct rivet_match_msg *u, void *arg)
{
	(void)arg;
	return ((const struct test_msg *)u)->id % 2;
}

static void free_msg(struct rivet_match_msg *u, void *arg)
{
	(*(int *)arg)++;
	free(u);
}

MATCH_TEST(purge_takes_what_pred_accepts)
{
	struct rivet_match m;
	struct rivet_match_msg *u;
	int freed = 0, i;

	construct(&m, lm);
	for (i = 1; i <= 40; i++)
		arrive(&m, i, (fi_addr_t)(i % 3), (uint64_t)i);
	u = rivet_match_msg_find(&m, ANY, 7, 0);
	cr_assert_eq(msg_id(u), 7);
	rivet_match_msg_claim(&m, u);
	cr_assert_eq(rivet_match_msg_purge(&m, odd_msg, free_msg, &freed),
		     20);
	cr_assert_eq(freed, 20);
	cr_assert_eq(m.nmsgs, 20);
	for (i = 2; i <= 40; i += 2)
		cr_assert_eq(take_msg(&m, ANY, 0, ~0ULL), i);
	cr_assert_eq(take_msg(&m, ANY, 0, ~0ULL), -1);
	drain(&m);
}
