// SPDX-License-Identifier: MIT
/* MPI ping-pong between rank pairs (0-1, 2-3, ...) over every size from 0
 * to the largest (argv[1], default 16 MiB), data checked both ways. */
#include "mpi_rivet.h"

#define PP_MAX_SIZES 64

static size_t pp_sizes(size_t max, size_t *sizes)
{
	static const size_t odd[] = { 3, 8191, 8193, 16383, 16385, 65535,
				      65537, 131071, 131073 };
	size_t n = 0, s, i, j, t;

	sizes[n++] = 0;
	for (s = 1; s <= max; s <<= 1)
		sizes[n++] = s;
	for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		if (odd[i] < max)
			sizes[n++] = odd[i];
	for (i = 1; i < n; i++)		/* insertion sort */
		for (j = i; j > 0 && sizes[j - 1] > sizes[j]; j--) {
			t = sizes[j];
			sizes[j] = sizes[j - 1];
			sizes[j - 1] = t;
		}
	return n;
}

static void pp_send(char *buf, size_t len, int peer, int tag,
		    uint32_t seed)
{
	mr_fill(buf, len, seed);
	MPI_Send(buf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
}

static long pp_recv(char *buf, size_t len, int peer, int tag, uint32_t seed)
{
	MPI_Recv(buf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
		 MPI_STATUS_IGNORE);
	return mr_verify(buf, len, seed);
}

/* iters round trips of len bytes with the partner rank. */
static void pp_size(char *sbuf, char *rbuf, size_t len, int peer, int iters)
{
	int it, first = g_mr_rank < peer;
	uint32_t seed;
	long bad;

	for (it = 0; it < iters && !g_mr_case_fail; it++) {
		seed = (uint32_t)(len * 131 + it * 2);
		if (first) {
			pp_send(sbuf, len, peer, it, seed);
			bad = pp_recv(rbuf, len, peer, it, seed + 1);
		} else {
			bad = pp_recv(rbuf, len, peer, it, seed);
			pp_send(sbuf, len, peer, it, seed + 1);
		}
		if (bad >= 0)
			mr_fail("size %zu iteration %d: byte %ld wrong", len,
				it, bad);
	}
}

/* Fewer round trips for large sizes: the guest is slow. */
static int pp_iters(size_t len)
{
	if (len <= (64 << 10))
		return 10;
	return len <= (1 << 20) ? 4 : 1;
}

int main(int argc, char **argv)
{
	size_t max = argc > 1 ? strtoul(argv[1], NULL, 0) : (16UL << 20);
	size_t sizes[PP_MAX_SIZES], n, i;
	int peer;
	char *sbuf, *rbuf;
	double t0;

	mr_init(&argc, &argv);
	peer = g_mr_rank ^ 1;
	n = pp_sizes(max, sizes);
	sbuf = malloc(max ? max : 1);
	rbuf = malloc(max ? max : 1);
	if (!sbuf || !rbuf)
		mr_fail("out of memory");
	t0 = MPI_Wtime();
	for (i = 0; i < n && peer < g_mr_size && sbuf && rbuf; i++)
		pp_size(sbuf, rbuf, sizes[i], peer, pp_iters(sizes[i]));
	if (!g_mr_rank)
		printf("# %zu sizes up to %zu in %.1f s\n", n, max,
		       MPI_Wtime() - t0);
	mr_case_end("mpi_pingpong_all_sizes");
	free(sbuf);
	free(rbuf);
	return mr_finalize();
}
