// SPDX-License-Identifier: MIT
/* MPI ping-pong latency between ranks 0 and 1: argv[1] round trips
 * (default 1000) of argv[2] bytes (default 8) after 100 warm-up ones, data
 * checked; rank 0 prints "lat_us: <one-way mean>", as perftest's t_avg.
 * With more ranks (an even number), every pair (2k, 2k + 1) ping-pongs at
 * the same time (oversubscribed runs: contrib/bench.sh --contention); rank 0
 * reports its own pair. */
#include "mpi_rivet.h"

#define LAT_WARMUP 100

static void lat_run(char *buf, size_t len, int iters, int peer)
{
	int it, first = g_mr_rank < peer;

	for (it = 0; it < iters; it++) {
		if (first) {
			mr_fill(buf, len, (uint32_t)it);
			MPI_Send(buf, (int)len, MPI_BYTE, peer, 0,
				 MPI_COMM_WORLD);
			MPI_Recv(buf, (int)len, MPI_BYTE, peer, 0,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, (int)len, MPI_BYTE, peer, 0,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)len, MPI_BYTE, peer, 0,
				 MPI_COMM_WORLD);
		}
		if (first && mr_verify(buf, len, (uint32_t)it) >= 0)
			mr_fail("round trip %d: data changed", it);
	}
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 1000;
	size_t len = argc > 2 ? strtoul(argv[2], NULL, 0) : 8;
	char *buf;
	double t0;

	mr_init(&argc, &argv);
	buf = malloc(len ? len : 1);
	if (!buf || g_mr_size < 2 || g_mr_size % 2 || iters < 1)
		mr_fail("needs an even number of ranks, memory and "
			"iterations >= 1");
	if (!g_mr_case_fail) {
		lat_run(buf, len, LAT_WARMUP, g_mr_rank ^ 1);
		t0 = MPI_Wtime();
		lat_run(buf, len, iters, g_mr_rank ^ 1);
		if (!g_mr_rank)
			printf("lat_us: %.2f\n",
			       (MPI_Wtime() - t0) * 1e6 / (2.0 * iters));
	}
	mr_case_end("mpi_latency");
	free(buf);
	return mr_finalize();
}
