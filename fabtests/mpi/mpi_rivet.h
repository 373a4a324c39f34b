/* SPDX-License-Identifier: MIT */
/* Result lines for rivet's MPI checks: every rank counts its own failures,
 * rank 0 prints one "ok NAME" or "FAIL NAME: reason" per case after a sum
 * over all ranks, and the final "N passed, M failed". Header-only. */
#ifndef MPI_RIVET_H
#define MPI_RIVET_H

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#define MR_DEADLINE_S 240

static int g_mr_rank, g_mr_size;
static int g_mr_case_fail;	/* this rank, this case */
static char g_mr_reason[160];
static int g_mr_passed, g_mr_failed;

/* A check that fails on this rank; the first reason is kept. */
static inline void mr_fail(const char *fmt, ...)
{
	va_list ap;

	if (!g_mr_case_fail++) {
		va_start(ap, fmt);
		vsnprintf(g_mr_reason, sizeof(g_mr_reason), fmt, ap);
		va_end(ap);
		fprintf(stderr, "rank %d: %s\n", g_mr_rank, g_mr_reason);
	}
}

/* Close a case: one result line from rank 0 for all ranks. */
static inline void mr_case_end(const char *name)
{
	int failed = 0;

	MPI_Allreduce(&g_mr_case_fail, &failed, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (!g_mr_rank && !failed)
		printf("ok %s\n", name);
	else if (!g_mr_rank)
		printf("FAIL %s: %d failed checks (rank 0: %s)\n", name,
		       failed, g_mr_case_fail ? g_mr_reason : "see stderr");
	fflush(stdout);
	if (failed)
		g_mr_failed++;
	else
		g_mr_passed++;
	g_mr_case_fail = 0;
}

static inline void mr_alarm(int sig)
{
	static const char msg[] = "FAIL deadline: no progress, giving up\n";

	(void)sig;
	(void)!write(1, msg, sizeof(msg) - 1);
	_exit(1);
}

static inline void mr_init(int *argc, char ***argv)
{
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &g_mr_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &g_mr_size);
	signal(SIGALRM, mr_alarm);
	alarm(MR_DEADLINE_S);
}

static inline int mr_finalize(void)
{
	if (!g_mr_rank) {
		printf("%d passed, %d failed\n", g_mr_passed, g_mr_failed);
		fflush(stdout);
	}
	MPI_Finalize();
	return g_mr_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Byte i of a message identified by seed. */
static inline uint8_t mr_byte(uint32_t seed, size_t i)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ULL ^ seed;

	return (uint8_t)(x ^ (x >> 29) ^ (x >> 43));
}

static inline void mr_fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = mr_byte(seed, i);
}

/* Offset of the first wrong byte, or -1. */
static inline long mr_verify(const void *buf, size_t len, uint32_t seed)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != mr_byte(seed, i))
			return (long)i;
	return -1;
}

#endif /* MPI_RIVET_H */
