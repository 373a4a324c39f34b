// SPDX-License-Identifier: MIT
/* MPI collectives over the fabric, results checked: Allreduce (sum of
 * integers, max of doubles, small and large), Alltoall, Bcast from each
 * root at several sizes, Barrier. */
#include "mpi_rivet.h"

#define CO_LARGE (1 << 18)	/* elements */

static void co_allreduce(int count)
{
	long long *in = malloc(sizeof(*in) * count);
	long long *out = malloc(sizeof(*out) * count);
	long long n = g_mr_size, want;
	double dmax = 0, dval = g_mr_rank * 1.5;
	int i;

	if (!in || !out) {
		mr_fail("out of memory");
		goto out;
	}
	for (i = 0; i < count; i++)
		in[i] = (long long)g_mr_rank * count + i;
	MPI_Allreduce(in, out, count, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	for (i = 0; i < count; i++) {
		/* sum over ranks r of r * count + i */
		want = count * n * (n - 1) / 2 + n * i;
		if (out[i] != want) {
			mr_fail("Allreduce(%d): element %d is %lld, want %lld",
				count, i, out[i], want);
			break;
		}
	}
	MPI_Allreduce(&dval, &dmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	if (dmax != (g_mr_size - 1) * 1.5)
		mr_fail("Allreduce(MAX) gave %g", dmax);
out:
	free(in);
	free(out);
}

/* Element j of the block that rank src sends to rank dst. */
static int co_elem(int src, int dst, int j)
{
	return (src * 64 + dst) * 100000 + j;
}

static void co_alltoall(int count)
{
	size_t len = sizeof(int) * (size_t)count * g_mr_size;
	int *in = malloc(len), *out = malloc(len);
	int i, j;

	if (!in || !out) {
		mr_fail("out of memory");
		free(in);
		free(out);
		return;
	}
	for (i = 0; i < g_mr_size; i++)
		for (j = 0; j < count; j++)
			in[i * count + j] = co_elem(g_mr_rank, i, j);
	MPI_Alltoall(in, count, MPI_INT, out, count, MPI_INT, MPI_COMM_WORLD);
	for (i = 0; i < g_mr_size; i++)
		for (j = 0; j < count; j++)
			if (out[i * count + j] != co_elem(i, g_mr_rank, j)) {
				mr_fail("Alltoall(%d): block from %d, element "
					"%d wrong", count, i, j);
				i = g_mr_size;
				break;
			}
	free(in);
	free(out);
}

static void co_bcast(size_t len)
{
	char *buf = malloc(len ? len : 1);
	int root;
	long bad;

	if (!buf) {
		mr_fail("out of memory");
		return;
	}
	for (root = 0; root < g_mr_size; root++) {
		if (g_mr_rank == root)
			mr_fill(buf, len, root * 7 + (uint32_t)len);
		else
			memset(buf, 0, len);
		MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
		bad = mr_verify(buf, len, root * 7 + (uint32_t)len);
		if (bad >= 0) {
			mr_fail("Bcast(%zu) from %d: byte %ld wrong", len, root,
				bad);
			break;
		}
	}
	free(buf);
}

int main(int argc, char **argv)
{
	mr_init(&argc, &argv);
	co_allreduce(1);
	co_allreduce(1000);
	co_allreduce(CO_LARGE);
	mr_case_end("mpi_allreduce");
	co_alltoall(1);
	co_alltoall(1000);
	co_alltoall(50000);
	mr_case_end("mpi_alltoall");
	co_bcast(1);
	co_bcast(65536);
	co_bcast(4 << 20);
	mr_case_end("mpi_bcast");
	MPI_Barrier(MPI_COMM_WORLD);
	mr_case_end("mpi_barrier");
	return mr_finalize();
}
