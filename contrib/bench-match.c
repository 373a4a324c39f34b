// SPDX-License-Identifier: MIT
/*
 * The matching engine alone, for callgrind (contrib/bench.sh --exact): the
 * user-space instructions of one match with DEPTH entries queued, for
 * rivet_match.c ("hash") or the list walk it replaced ("list", the code of
 * rivet_match.c until it went, on the same entries).
 *
 * posted: DEPTH - 1 receives that nothing matches are posted (any source,
 *   tags of their own, as an MPI code's pre-posted receives), then each
 *   iteration posts a receive and delivers the message that takes it (find,
 *   remove) — what a message costs the receiver's matching.
 * unexp: DEPTH - 1 unexpected messages that nothing asks for are queued,
 *   then each iteration files an arriving message and has a receive find
 *   and take it.
 * Each iteration uses a new tag (as fi_rivet_rdm_bw does: RB_TAG_DATA |
 * seq), -f the same tag every time.  -l N sets the engine's list_max
 * (FI_RIVET_MATCH_LIST_MAX: queues up to it are walked; the default, 0:
 * always hashed).
 * Only bm_count_* is to be counted:
 *
 *   valgrind --tool=callgrind --collect-atstart=no \
 *     --toggle-collect='bm_count_*' bench-match -e hash -q posted -d 100
 *
 * usage: bench-match [-e hash|list] [-q posted|unexp] [-d DEPTH]
 *                    [-n ITERS] [-f] [-l LIST_MAX]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utlist.h>

#include "rivet_match.h"

#define BM_TAG_DEEP 0x400000000ULL
#define BM_TAG_DATA 0x100000000ULL
#define BM_SRC 1

/* ---- the list engine, as rivet_match.c had it ---- */

struct bm_rx {
	struct bm_rx *next, *prev;
	fi_addr_t addr;
	uint64_t tag, ignore;
	bool released;
};

struct bm_unexp {
	struct bm_unexp *next, *prev;
	fi_addr_t src;
	uint64_t tag;
	bool claimed;
};

static bool bm_list_addr(fi_addr_t want, fi_addr_t src, bool directed)
{
	return !directed || want == FI_ADDR_UNSPEC || want == src;
}

static __attribute__((noinline)) struct bm_rx *
bm_list_posted(struct bm_rx *head, fi_addr_t src, uint64_t tag, bool directed)
{
	struct bm_rx *rx;

	DL_FOREACH(head, rx) {
		if (rx->released)
			continue;
		if (bm_list_addr(rx->addr, src, directed) &&
		    rivet_match_tag(rx->tag, rx->ignore, tag))
			return rx;
	}
	return NULL;
}

static __attribute__((noinline)) struct bm_unexp *
bm_list_unexp(struct bm_unexp *head, fi_addr_t src, uint64_t tag,
	      uint64_t ignore, bool directed)
{
	struct bm_unexp *u;

	DL_FOREACH(head, u) {
		if (u->claimed)
			continue;
		if (bm_list_addr(src, u->src, directed) &&
		    rivet_match_tag(tag, ignore, u->tag))
			return u;
	}
	return NULL;
}

/* ---- the benchmark ---- */

struct bm_entry {
	struct rivet_match_recv recv;
	struct rivet_match_msg msg;
	struct bm_rx rx;
	struct bm_unexp u;
};

static struct {
	bool list, unexp, fixed;
	long depth, iters, list_max;
	struct rivet_match m;
	struct bm_rx *posted;
	struct bm_unexp *msgs;
	struct bm_entry *deep, one;
} g = { .depth = 1, .iters = 1000, .list_max = -1 };

static void bm_queue_deep(void)
{
	struct bm_entry *e;
	long i;

	g.deep = calloc((size_t)g.depth, sizeof(*g.deep));
	if (!g.deep) {
		perror("calloc");
		exit(1);
	}
	for (i = 0; i + 1 < g.depth; i++) {
		e = &g.deep[i];
		e->rx = (struct bm_rx) { .addr = FI_ADDR_UNSPEC,
					 .tag = BM_TAG_DEEP | (uint64_t)i };
		e->u = (struct bm_unexp) { .src = BM_SRC,
					   .tag = BM_TAG_DEEP | (uint64_t)i };
		if (g.list && g.unexp)
			DL_APPEND(g.msgs, &e->u);
		else if (g.list)
			DL_APPEND(g.posted, &e->rx);
		else if (g.unexp)
			rivet_match_msg_insert(&g.m, &e->msg, BM_SRC, e->u.tag);
		else
			rivet_match_recv_insert(&g.m, &e->recv, FI_ADDR_UNSPEC,
						e->rx.tag, 0);
	}
}

/* One message: posted, then matched and taken; false if it was not. */
static bool bm_posted(uint64_t tag)
{
	struct rivet_match_recv *r;
	struct bm_rx *rx;

	if (g.list) {
		g.one.rx = (struct bm_rx) { .addr = FI_ADDR_UNSPEC,
					    .tag = tag };
		DL_APPEND(g.posted, &g.one.rx);
		rx = bm_list_posted(g.posted, BM_SRC, tag, true);
		if (rx)
			DL_DELETE(g.posted, rx);
		return rx == &g.one.rx;
	}
	rivet_match_recv_insert(&g.m, &g.one.recv, FI_ADDR_UNSPEC, tag, 0);
	r = rivet_match_recv_find(&g.m, BM_SRC, tag);
	if (r)
		rivet_match_recv_remove(&g.m, r);
	return r == &g.one.recv;
}

static bool bm_unexp(uint64_t tag)
{
	struct rivet_match_msg *m;
	struct bm_unexp *u;

	if (g.list) {
		g.one.u = (struct bm_unexp) { .src = BM_SRC, .tag = tag };
		DL_APPEND(g.msgs, &g.one.u);
		u = bm_list_unexp(g.msgs, FI_ADDR_UNSPEC, tag, 0, true);
		if (u)
			DL_DELETE(g.msgs, u);
		return u == &g.one.u;
	}
	rivet_match_msg_insert(&g.m, &g.one.msg, BM_SRC, tag);
	m = rivet_match_msg_find(&g.m, FI_ADDR_UNSPEC, tag, 0);
	if (m)
		rivet_match_msg_remove(&g.m, m);
	return m == &g.one.msg;
}

static bool bm_once(long i)
{
	uint64_t tag = BM_TAG_DATA | (uint64_t)(g.fixed ? 0 : i);

	return g.unexp ? bm_unexp(tag) : bm_posted(tag);
}

/* What callgrind counts (--toggle-collect='bm_count_*'). */
__attribute__((noinline)) bool bm_count_once(long i);
__attribute__((noinline)) bool bm_count_once(long i)
{
	return bm_once(i);
}

static void bm_usage(void)
{
	fprintf(stderr, "usage: bench-match [-e hash|list] [-q posted|unexp] "
		"[-d DEPTH] [-n ITERS] [-f] [-l LIST_MAX]\n");
	exit(2);
}

static void bm_parse(int argc, char **argv)
{
	int op;

	while ((op = getopt(argc, argv, "e:q:d:n:fl:")) != -1) {
		if (op == 'e' && (!strcmp(optarg, "hash") ||
				  !strcmp(optarg, "list")))
			g.list = !strcmp(optarg, "list");
		else if (op == 'q' && (!strcmp(optarg, "posted") ||
				       !strcmp(optarg, "unexp")))
			g.unexp = !strcmp(optarg, "unexp");
		else if (op == 'd' && atol(optarg) >= 1)
			g.depth = atol(optarg);
		else if (op == 'n' && atol(optarg) >= 1)
			g.iters = atol(optarg);
		else if (op == 'f')
			g.fixed = true;
		else if (op == 'l' && atol(optarg) >= 0)
			g.list_max = atol(optarg);
		else
			bm_usage();
	}
}

int main(int argc, char **argv)
{
	long i, warm;

	bm_parse(argc, argv);
	rivet_match_construct(&g.m);
	if (g.list_max >= 0)
		g.m.list_max = (size_t)g.list_max;
	bm_queue_deep();
	/* warm up: the tables have their size for the depth, and the
	 * side is indexed as it will be when counted */
	warm = 2 * 64 + 16;
	for (i = 0; i < warm; i++)
		if (!bm_once(g.iters + 1000000 + i))
			goto wrong;
	for (i = 0; i < g.iters; i++)
		if (!bm_count_once(i))
			goto wrong;
	printf("%s %s depth %ld: %ld matches\n", g.list ? "list" : "hash",
	       g.unexp ? "unexp" : "posted", g.depth, g.iters);
	rivet_match_destruct(&g.m);
	free(g.deep);
	return 0;
wrong:
	fprintf(stderr, "bench-match: a message did not find its match\n");
	return 1;
}
