// SPDX-License-Identifier: MIT
/* MPI one-sided over the fabric (osc rdma on btl ofi), every result
 * checked: MPI_Put, MPI_Get, MPI_Accumulate, MPI_Get_accumulate,
 * MPI_Fetch_and_op, MPI_Compare_and_swap, in fence, post-start-complete-
 * wait and passive-target (lock / lock_all) epochs, small and large.
 * Windows come from MPI_Win_create: with MPI_Win_allocate, osc rdma puts
 * the windows of ranks on one node in shared memory and never touches
 * the fabric for them.  Every rank, the target itself included, fetch-
 * and-adds and compare-and-swaps on one location of the last rank, except
 * for one case Open MPI itself cannot run: before 4.1.5, with every rank
 * on one node, osc rdma hands a compare-and-swap on a rank's own window to
 * the btl with no registration handle for the window (btl_ofi_acswap then
 * dereferences NULL, whatever the provider; fixed by Open MPI's commit
 * 0512c135, "perform CAS in shared memory if possible").  There the
 * target's own compare-and-swaps are left out and a '#' line says so
 * (MPI_RIVET_OSC_SELF_CAS=1 runs them anyway, =0 leaves them out always).
 *
 * MPI_RIVET_OSC_AMO=1 (for runs with osc_rdma_acc_use_amo true, the
 * default): leaves out the MPI_MAX accumulate, which Open MPI 4.1's btl
 * ofi cannot map (it maps MPI_SUM and MPI_REPLACE only and aborts on the
 * rest before asking the provider). */
#include "mpi_rivet.h"

#define OS_WIN 4096		/* longs per rank's window */
#define OS_LARGE (1 << 16)	/* longs: 512 KiB puts and gets */

static long *g_base;
static MPI_Win g_win;
static int g_amo;	/* MPI_RIVET_OSC_AMO: no MPI_MAX accumulate */
static int g_self_cas;	/* the target compare-and-swaps on itself too */

static long os_val(int writer, int target, int i)
{
	return (long)writer * 1000000 + target * 10000 + i;
}

static void os_reset(void)
{
	int i;

	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, g_mr_rank, 0, g_win);
	for (i = 0; i < OS_WIN; i++)
		g_base[i] = -1;
	MPI_Win_unlock(g_mr_rank, g_win);
	MPI_Barrier(MPI_COMM_WORLD);
}

/* Fence: each rank puts a block into its right neighbour's window and gets
 * one from its left neighbour's. */
static void os_fence_put_get(void)
{
	int right = (g_mr_rank + 1) % g_mr_size;
	int left = (g_mr_rank + g_mr_size - 1) % g_mr_size;
	long src[64], got[64];
	int i;

	os_reset();
	for (i = 0; i < 64; i++)
		src[i] = os_val(g_mr_rank, right, i);
	MPI_Win_fence(0, g_win);
	MPI_Put(src, 64, MPI_LONG, right, 0, 64, MPI_LONG, g_win);
	MPI_Win_fence(0, g_win);
	for (i = 0; i < 64; i++)
		if (g_base[i] != os_val(left, g_mr_rank, i)) {
			mr_fail("fence put: element %d is %ld", i, g_base[i]);
			break;
		}
	MPI_Get(got, 64, MPI_LONG, left, 0, 64, MPI_LONG, g_win);
	MPI_Win_fence(0, g_win);
	for (i = 0; i < 64; i++)
		if (got[i] != os_val((left + g_mr_size - 1) % g_mr_size, left,
				     i)) {
			mr_fail("fence get: element %d is %ld", i, got[i]);
			break;
		}
	mr_case_end("osc_fence_put_get");
}

/* Fence: every rank adds its rank + 1 into element i of rank 0 (sum) and
 * takes the maximum into element 64 + i. */
static void os_fence_accumulate(void)
{
	long one[16], mx[16], sum = 0;
	int i;

	os_reset();
	if (!g_mr_rank)
		for (i = 0; i < 128; i++)
			g_base[i] = 0;
	for (i = 0; i < 16; i++) {
		one[i] = g_mr_rank + 1;
		mx[i] = g_mr_rank * 10 + i;
	}
	MPI_Win_fence(0, g_win);
	MPI_Accumulate(one, 16, MPI_LONG, 0, 0, 16, MPI_LONG, MPI_SUM, g_win);
	if (!g_amo)
		MPI_Accumulate(mx, 16, MPI_LONG, 0, 64, 16, MPI_LONG, MPI_MAX,
			       g_win);
	MPI_Win_fence(0, g_win);
	for (i = 0; i < g_mr_size; i++)
		sum += i + 1;
	for (i = 0; !g_mr_rank && i < 16; i++)
		if (g_base[i] != sum ||
		    g_base[64 + i] != (g_amo ? 0 : (g_mr_size - 1) * 10 + i)) {
			mr_fail("accumulate: element %d sum %ld max %ld", i,
				g_base[i], g_base[64 + i]);
			break;
		}
	mr_case_end("osc_fence_accumulate");
}

/* PSCW: even ranks expose, odd ranks access their left neighbour. */
static void os_pscw(void)
{
	MPI_Group world, peer;
	int even = !(g_mr_rank % 2), partner, i;
	long src[32];

	os_reset();
	partner = even ? g_mr_rank + 1 : g_mr_rank - 1;
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	if (partner >= g_mr_size) {	/* odd size: the last one sits out */
		MPI_Group_free(&world);
		mr_case_end("osc_pscw");
		return;
	}
	MPI_Group_incl(world, 1, &partner, &peer);
	if (even) {
		MPI_Win_post(peer, 0, g_win);
		MPI_Win_wait(g_win);
		for (i = 0; i < 32; i++)
			if (g_base[i] != os_val(partner, g_mr_rank, i)) {
				mr_fail("pscw: element %d is %ld", i,
					g_base[i]);
				break;
			}
	} else {
		for (i = 0; i < 32; i++)
			src[i] = os_val(g_mr_rank, partner, i);
		MPI_Win_start(peer, 0, g_win);
		MPI_Put(src, 32, MPI_LONG, partner, 0, 32, MPI_LONG, g_win);
		MPI_Win_complete(g_win);
	}
	MPI_Group_free(&peer);
	MPI_Group_free(&world);
	mr_case_end("osc_pscw");
}

/* Passive target: every rank, the last one included, fetch-and-adds and
 * compare-and-swaps on the last one's counters, under lock_all and under
 * shared locks; the fetched values of each rank grow, the totals are
 * exact.  The target's own compare-and-swaps only where Open MPI can run
 * them (g_self_cas, see the top of this file). */
static void os_passive_atomics(void)
{
	const int n = 50;
	int t = g_mr_size - 1, i, cas = g_mr_rank != t || g_self_cas;
	long one = 1, old, prev = -1, want, cur, next, total;
	long cas_ranks = g_self_cas ? g_mr_size : g_mr_size - 1;

	os_reset();
	if (g_mr_rank == t)
		g_base[0] = g_base[1] = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock_all(0, g_win);
	for (i = 0; i < n; i++) {
		MPI_Fetch_and_op(&one, &old, MPI_LONG, t, 0, MPI_SUM, g_win);
		MPI_Win_flush(t, g_win);
		if (old <= prev)
			mr_fail("fetch_and_op went back: %ld after %ld", old,
				prev);
		prev = old;
	}
	MPI_Win_unlock_all(g_win);
	MPI_Win_lock(MPI_LOCK_SHARED, t, 0, g_win);
	for (i = 0; cas && i < n; i++) {
		MPI_Fetch_and_op(NULL, &cur, MPI_LONG, t, 1, MPI_NO_OP, g_win);
		MPI_Win_flush(t, g_win);
		for (;;) {
			next = cur + 1;
			MPI_Compare_and_swap(&next, &cur, &old, MPI_LONG, t, 1,
					     g_win);
			MPI_Win_flush(t, g_win);
			if (old == cur)
				break;
			cur = old;
		}
	}
	MPI_Win_unlock(t, g_win);
	MPI_Barrier(MPI_COMM_WORLD);
	if (g_mr_rank == 0) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, g_win);
		MPI_Get(&total, 1, MPI_LONG, t, 0, 1, MPI_LONG, g_win);
		MPI_Get(&cur, 1, MPI_LONG, t, 1, 1, MPI_LONG, g_win);
		MPI_Win_unlock(t, g_win);
		want = (long)n * g_mr_size;
		if (total != want || cur != n * cas_ranks)
			mr_fail("totals: fetch_and_op %ld (want %ld), cswap %ld (want %ld)",
				total, want, cur, n * cas_ranks);
	}
	mr_case_end("osc_passive_atomics");
}

/* Passive target, exclusive lock: get_accumulate with MPI_REPLACE (an
 * atomic swap) chains every rank but the last through one of its
 * elements: the values fetched and the one left are each rank's once. */
static void os_get_accumulate(void)
{
	long mine = g_mr_rank + 100, old = 0, sum = 0, all = 0, last = 0;
	int t = g_mr_size - 1, i;

	os_reset();
	if (g_mr_rank == t)
		g_base[5] = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	if (g_mr_rank != t) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, g_win);
		MPI_Get_accumulate(&mine, 1, MPI_LONG, &old, 1, MPI_LONG, t, 5,
				   1, MPI_LONG, MPI_REPLACE, g_win);
		MPI_Win_unlock(t, g_win);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (g_mr_rank == t)
		last = g_base[5];
	sum = old + last;
	MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	for (i = 0; i < t; i++)
		all += i + 100;
	if (!g_mr_rank && sum != all)
		mr_fail("get_accumulate chain: %ld, want %ld", sum, all);
	mr_case_end("osc_get_accumulate");
}

/* Large puts and gets in a window of their own, under lock. */
static void os_large(void)
{
	size_t len = sizeof(long) * OS_LARGE;
	int target = (g_mr_rank + 1) % g_mr_size;
	long *base, *src = malloc(len), *got = malloc(len);
	MPI_Win win;
	long bad;

	base = calloc(1, len);
	MPI_Win_create(base, len, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD,
		       &win);
	if (!src || !got || !base) {
		mr_fail("out of memory");
		goto out;
	}
	mr_fill(src, len, 77 + g_mr_rank);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
	MPI_Put(src, OS_LARGE, MPI_LONG, target, 0, OS_LARGE, MPI_LONG, win);
	MPI_Win_unlock(target, win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
	MPI_Get(got, OS_LARGE, MPI_LONG, target, 0, OS_LARGE, MPI_LONG, win);
	MPI_Win_unlock(target, win);
	bad = mr_verify(got, len, 77 + g_mr_rank);
	if (bad >= 0)
		mr_fail("large put/get: byte %ld wrong", bad);
out:
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_free(&win);
	free(base);
	free(src);
	free(got);
	mr_case_end("osc_large_put_get");
}

/* Whether Open MPI can run a compare-and-swap on a rank's own window:
 * from 4.1.5 on, or whenever the ranks span more than one node (osc rdma
 * then goes through the NIC for its own window too). */
static int os_self_cas_runs(void)
{
	const char *force = getenv("MPI_RIVET_OSC_SELF_CAS");
	MPI_Comm node;
	int local, one_node;

	if (force && *force)	/* 1: run them anyway, 0: leave them out */
		return atoi(force);
#if defined(OMPI_MAJOR_VERSION)
	if (OMPI_MAJOR_VERSION * 10000 + OMPI_MINOR_VERSION * 100 +
	    OMPI_RELEASE_VERSION >= 40105)
		return 1;
#endif
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
			    MPI_INFO_NULL, &node);
	MPI_Comm_size(node, &local);
	MPI_Comm_free(&node);
	one_node = local == g_mr_size;
	MPI_Allreduce(MPI_IN_PLACE, &one_node, 1, MPI_INT, MPI_LOR,
		      MPI_COMM_WORLD);
	if (one_node && !g_mr_rank)
		printf("# every rank on one node: the target's compare-and-swaps on its own window are left out (Open MPI < 4.1.5 crashes in btl_ofi_acswap there)\n");
	return !one_node;
}

int main(int argc, char **argv)
{
	mr_init(&argc, &argv);
	g_amo = getenv("MPI_RIVET_OSC_AMO") && atoi(getenv("MPI_RIVET_OSC_AMO"));
	g_self_cas = os_self_cas_runs();
	g_base = calloc(OS_WIN, sizeof(long));
	MPI_Win_create(g_base, sizeof(long) * OS_WIN, sizeof(long),
		       MPI_INFO_NULL, MPI_COMM_WORLD, &g_win);
	os_fence_put_get();
	os_fence_accumulate();
	os_pscw();
	os_passive_atomics();
	os_get_accumulate();
	os_large();
	MPI_Win_free(&g_win);
	free(g_base);
	return mr_finalize();
}
