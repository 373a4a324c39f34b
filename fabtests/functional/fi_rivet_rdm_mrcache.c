// SPDX-License-Identifier: MIT
/*
 * Buffers without descriptors whose memory changes under the provider's
 * registration cache: rendezvous sends, receives and RMA from a buffer
 * that is freed, unmapped, moved (mremap), discarded (madvise DONTNEED,
 * malloc_trim) and allocated again at the same address with new contents
 * must carry the new bytes (libfabric #5880); fork with a cached buffer;
 * more buffers than the cache holds, and threads sharing one domain.  With -b N: N rendezvous
 * sends from one buffer, timed (the provider's log tells how many
 * registrations they took).  One process, two endpoints; each case in a
 * child of its own.
 */
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "common/ft_rdm.h"

#define MC_TAG 0x4d52430000000000ULL	/* "MRC" */
#define MC_LEN (256 * 1024)		/* rendezvous-sized, over glibc's
					 * mmap threshold */
#define MC_HEAP_LEN (64 * 1024)		/* rendezvous, under it */
#define MC_HUGE (2UL << 20)
#define MC_ROUNDS 4
#define MC_WAIT_MS 20000
#define MC_THREADS 4

static size_t g_bench;	/* -b N: sends of the benchmark */
/* ft_check without the "ok" line of every check that holds */
#define mc_check(cond, name, ...) \
	((cond) ? true : (ft_fail(name, __VA_ARGS__), false))

static int g_failed0;	/* failures before this case */
static bool g_skipped;

/* ok unless this case failed or was skipped */
static void mc_done(const char *name)
{
	if (ft_failures() == g_failed0 && !g_skipped)
		ft_ok(name);
}

static void mc_case(const char *name, void (*fn)(void))
{
	g_failed0 = ft_failures();
	ft_fork_case(name, fn);
}

struct mc_env {
	struct ft_rdm_pair p;
	struct ft_buf target;	/* b's registered RMA target */
};

static int mc_open(struct mc_env *env, const char *name)
{
	int ret;

	memset(env, 0, sizeof(*env));
	ret = ft_rdm_pair_open(&env->p, FT_RDM_CAPS | FI_RMA);
	ret = ret ? ret : ft_buf_alloc(env->p.fab.domain, MC_HUGE,
				       FI_SEND | FI_RECV | FI_READ | FI_WRITE |
				       FI_REMOTE_READ | FI_REMOTE_WRITE,
				       &env->target);
	if (ret)
		ft_fail(name, "setup: %s", fi_strerror(-ret));
	return ret;
}

static void mc_close(struct mc_env *env)
{
	ft_buf_free(&env->target);
	ft_rdm_pair_close(&env->p);
}

static void mc_fill(uint8_t *buf, size_t len, unsigned int round)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 13 + round * 101 + 1);
}

/* The first byte of buf that is not round's pattern, or len. */
static size_t mc_diff(const uint8_t *buf, size_t len, unsigned int round)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != (uint8_t)(i * 13 + round * 101 + 1))
			break;
	return i;
}

static int mc_wait(const char *name, struct fid_cq *cq, void *ctx,
		   size_t len)
{
	struct ft_comp c;
	int ret = ft_rdm_wait(cq, ctx, &c, MC_WAIT_MS);

	if (ret)
		ft_fail(name, "no completion within %d ms (%s)", MC_WAIT_MS,
			fi_strerror(-ret));
	else if (!mc_check(!c.err && (!len || c.len == len), name, "%s",
			   ft_comp_str(&c)))
		ret = -1;
	return ret;
}

/* One tagged message of len bytes from sbuf (a) into rbuf (b), neither
 * with a descriptor unless given; 0 when rbuf then holds round's pattern. */
static int mc_send(const char *name, struct ft_rdm_pair *p, uint8_t *sbuf,
		   uint8_t *rbuf, void *rdesc, size_t len, unsigned int round)
{
	struct fi_context2 sctx, rctx;
	ssize_t ret;
	size_t bad;

	memset(rbuf, 0, len);
	ret = fi_trecv(p->b.ep, rbuf, len, rdesc, FI_ADDR_UNSPEC,
		       MC_TAG | round, 0, &rctx);
	if (!mc_check(!ret, name, "fi_trecv: %zd", ret))
		return -1;
	ret = FT_RDM_POST(fi_tsend(p->a.ep, sbuf, len, NULL, p->a2b,
				   MC_TAG | round, &sctx));
	if (!mc_check(!ret, name, "fi_tsend: %zd", ret))
		return -1;
	if (mc_wait(name, p->a.cq, &sctx, 0) ||
	    mc_wait(name, p->b.cq, &rctx, len))
		return -1;
	bad = mc_diff(rbuf, len, round);
	return mc_check(bad == len, name,
			"round %u: byte %zu of %zu is %#x: stale data", round,
			bad, len, bad < len ? rbuf[bad] : 0) ? 0 : -1;
}

/* ---- how memory comes and goes ----------------------------------------- */

enum mc_kind { MC_MALLOC, MC_MMAP, MC_HUGEPAGE, MC_HEAP };

static size_t mc_kind_len(enum mc_kind kind)
{
	return kind == MC_HUGEPAGE ? MC_HUGE :
	       kind == MC_HEAP ? MC_HEAP_LEN : MC_LEN;
}

/* Memory of this kind, at hint when the kernel allows (mmap kinds). */
static uint8_t *mc_alloc(enum mc_kind kind, void *hint, bool *huge_p)
{
	size_t len = mc_kind_len(kind);
	void *p;

	switch (kind) {
	case MC_MALLOC:
	case MC_HEAP:
		return malloc(len);
	case MC_HUGEPAGE:
		p = mmap(hint, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		if (p != MAP_FAILED) {
			*huge_p = true;
			return p;
		}
		*huge_p = false;	/* no huge pages configured */
		__attribute__((fallthrough));
	case MC_MMAP:
	default:
		p = mmap(hint, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
}

static void mc_free(enum mc_kind kind, uint8_t *buf)
{
	if (kind == MC_MALLOC || kind == MC_HEAP) {
		free(buf);
		malloc_trim(0);	/* give the heap's free pages back */
	} else {
		munmap(buf, mc_kind_len(kind));
	}
}

/* Send and receive from fresh memory of one kind, freed each round: the
 * same addresses come back with new contents. */
static void mc_stale_run(const char *name, enum mc_kind kind)
{
	uint8_t *s = NULL, *r = NULL, *s0 = NULL, *r0 = NULL;
	size_t len = mc_kind_len(kind);
	unsigned int round, same = 0;
	bool huge = false;
	struct mc_env env;

	if (mc_open(&env, name))
		return;
	for (round = 0; round < MC_ROUNDS; round++) {
		s = mc_alloc(kind, s0, &huge);
		r = mc_alloc(kind, r0, &huge);
		if (!mc_check(s && r, name, "allocation failed"))
			break;
		same += round && s == s0 && r == r0;
		s0 = s;
		r0 = r;
		mc_fill(s, len, round);
		if (mc_send(name, &env.p, s, r, NULL, len, round))
			break;
		mc_free(kind, s);
		mc_free(kind, r);
		s = r = NULL;
	}
	if (s)
		mc_free(kind, s);
	if (r)
		mc_free(kind, r);
	ft_info("%s: %u of %u rounds at the same addresses%s", name, same,
		MC_ROUNDS - 1, kind == MC_HUGEPAGE ?
		(huge ? " (MAP_HUGETLB)" : " (no huge pages: plain mmap)") :
		"");
	mc_close(&env);
	mc_done(name);
}

static void mc_malloc_child(void) { mc_stale_run("mrcache_stale_malloc", MC_MALLOC); }
static void mc_mmap_child(void) { mc_stale_run("mrcache_stale_mmap", MC_MMAP); }
static void mc_huge_child(void) { mc_stale_run("mrcache_stale_huge", MC_HUGEPAGE); }
static void mc_heap_child(void) { mc_stale_run("mrcache_stale_heap", MC_HEAP); }

/* The same mapping, its pages discarded (what free does inside glibc's
 * arenas) and written again. */
static void mc_dontneed_child(void)
{
	const char *name = "mrcache_stale_dontneed";
	struct mc_env env;
	uint8_t *s, *r;
	unsigned int round;

	if (mc_open(&env, name))
		return;
	s = mc_alloc(MC_MMAP, NULL, NULL);
	r = mc_alloc(MC_MMAP, NULL, NULL);
	for (round = 0; s && r && round < MC_ROUNDS; round++) {
		mc_fill(s, MC_LEN, round);
		if (mc_send(name, &env.p, s, r, NULL, MC_LEN, round))
			break;
		madvise(s, MC_LEN, MADV_DONTNEED);
		madvise(r, MC_LEN, MADV_DONTNEED);
	}
	mc_check(s && r, name, "allocation failed");
	if (s)
		munmap(s, MC_LEN);
	if (r)
		munmap(r, MC_LEN);
	mc_close(&env);
	mc_done(name);
}

/* A mapping moved away by mremap, new memory at its old address; both
 * carry what they hold now. */
static void mc_mremap_child(void)
{
	const char *name = "mrcache_stale_mremap";
	uint8_t *s, *moved, *r;
	struct mc_env env;

	if (mc_open(&env, name))
		return;
	s = mc_alloc(MC_MMAP, NULL, NULL);
	r = mc_alloc(MC_MMAP, NULL, NULL);
	if (!mc_check(s && r, name, "allocation failed"))
		goto out;
	mc_fill(s, MC_LEN, 0);
	if (mc_send(name, &env.p, s, r, NULL, MC_LEN, 0))
		goto out;
	/* onto a place of its own, so that it surely moves */
	moved = mc_alloc(MC_MMAP, NULL, NULL);
	if (moved)
		moved = mremap(s, MC_LEN, MC_LEN,
			       MREMAP_MAYMOVE | MREMAP_FIXED, moved);
	if (!mc_check(moved && moved != MAP_FAILED, name, "mremap failed"))
		goto out;
	s = mc_alloc(MC_MMAP, s, NULL);
	if (!mc_check(s != NULL, name, "mmap failed"))
		goto unmap_moved;
	mc_fill(s, MC_LEN, 1);
	if (!mc_send(name, &env.p, s, r, NULL, MC_LEN, 1))
		mc_send(name, &env.p, moved, r, NULL, MC_LEN, 0);
	munmap(s, MC_LEN);
unmap_moved:
	munmap(moved, MC_LEN);
	s = NULL;
out:
	if (s)
		munmap(s, MC_LEN);
	if (r)
		munmap(r, MC_LEN);
	mc_close(&env);
	mc_done(name);
}

/* RMA write from, and read into, memory without a descriptor that is
 * unmapped and mapped again at the same address. */
static int mc_rma_round(const char *name, struct mc_env *env, uint8_t *s,
			uint8_t *r, unsigned int round)
{
	struct fi_context2 ctx;
	uint64_t raddr = (env->p.fab.info->domain_attr->mr_mode &
			  FI_MR_VIRT_ADDR) ? (uintptr_t)env->target.ptr : 0;
	uint64_t key = fi_mr_key(env->target.mr);
	ssize_t ret;
	size_t bad;

	mc_fill(s, MC_LEN, round);
	memset(env->target.ptr, 0, MC_LEN);
	ret = FT_RDM_POST(fi_write(env->p.a.ep, s, MC_LEN, NULL, env->p.a2b,
				   raddr, key, &ctx));
	if (!mc_check(!ret, name, "fi_write: %zd", ret) ||
	    mc_wait(name, env->p.a.cq, &ctx, 0))
		return -1;
	bad = mc_diff(env->target.ptr, MC_LEN, round);
	if (!mc_check(bad == MC_LEN, name, "write round %u: byte %zu stale",
		      round, bad))
		return -1;
	memset(r, 0, MC_LEN);
	ret = FT_RDM_POST(fi_read(env->p.a.ep, r, MC_LEN, NULL, env->p.a2b,
				  raddr, key, &ctx));
	if (!mc_check(!ret, name, "fi_read: %zd", ret) ||
	    mc_wait(name, env->p.a.cq, &ctx, 0))
		return -1;
	bad = mc_diff(r, MC_LEN, round);
	return mc_check(bad == MC_LEN, name, "read round %u: byte %zu stale",
			round, bad) ? 0 : -1;
}

static void mc_rma_child(void)
{
	const char *name = "mrcache_stale_rma";
	uint8_t *s = NULL, *r = NULL, *s0 = NULL, *r0 = NULL;
	struct mc_env env;
	unsigned int round;

	if (mc_open(&env, name))
		return;
	for (round = 0; round < MC_ROUNDS; round++) {
		s = mc_alloc(MC_MMAP, s0, NULL);
		r = mc_alloc(MC_MMAP, r0, NULL);
		if (!mc_check(s && r, name, "allocation failed") ||
		    mc_rma_round(name, &env, s, r, round))
			break;
		s0 = s;
		r0 = r;
		munmap(s, MC_LEN);
		munmap(r, MC_LEN);
		s = r = NULL;
	}
	if (s)
		munmap(s, MC_LEN);
	if (r)
		munmap(r, MC_LEN);
	mc_close(&env);
	mc_done(name);
}

/* fork with a cached buffer: the child writes and unmaps its copy (it
 * must not wait for the parent's monitor), the parent then writes new
 * contents and sends them. */
static void mc_fork_child(void)
{
	const char *name = "mrcache_fork";
	struct mc_env env;
	uint8_t *s, *r;
	int status = -1;
	pid_t pid;

	if (mc_open(&env, name))
		return;
	s = mc_alloc(MC_MMAP, NULL, NULL);
	r = mc_alloc(MC_MMAP, NULL, NULL);
	if (!mc_check(s && r, name, "allocation failed"))
		goto out;
	mc_fill(s, MC_LEN, 0);
	if (mc_send(name, &env.p, s, r, NULL, MC_LEN, 0))
		goto out;
	fflush(stdout);
	pid = fork();
	if (!pid) {
		alarm(30);
		memset(s, 0xee, MC_LEN);
		munmap(s, MC_LEN);
		munmap(r, MC_LEN);
		free(malloc(1 << 20));
		_exit(0);
	}
	if (!mc_check(pid > 0, name, "fork failed"))
		goto out;
	waitpid(pid, &status, 0);
	if (!mc_check(WIFEXITED(status) && !WEXITSTATUS(status), name,
		      "the child did not end well (status %#x)", status))
		goto out;
	mc_fill(s, MC_LEN, 1);
	mc_send(name, &env.p, s, r, NULL, MC_LEN, 1);
out:
	if (s)
		munmap(s, MC_LEN);
	if (r)
		munmap(r, MC_LEN);
	mc_close(&env);
	mc_done(name);
}

/* ---- more buffers than the cache holds --------------------------------- */

#define MC_STORM_BUFS 48
#define MC_STORM_LEN (32 * 1024)
#define MC_STORM_BATCH 16

/* With FI_RIVET_MR_CACHE_MAX_COUNT=8: batches of sends in flight at once
 * from more distinct buffers than that, each buffer twice, some freed and
 * mapped again in between. */
static int mc_storm_batch(const char *name, struct mc_env *env,
			  uint8_t **bufs, uint8_t *rbuf, size_t first,
			  unsigned int round)
{
	struct fi_context2 sctx[MC_STORM_BATCH], rctx[MC_STORM_BATCH];
	size_t i, bad;
	ssize_t ret;

	for (i = 0; i < MC_STORM_BATCH; i++) {
		mc_fill(bufs[first + i], MC_STORM_LEN, round + (unsigned)i);
		ret = fi_trecv(env->p.b.ep, rbuf + i * MC_STORM_LEN,
			       MC_STORM_LEN, env->target.desc, FI_ADDR_UNSPEC,
			       MC_TAG | i, 0, &rctx[i]);
		if (!mc_check(!ret, name, "fi_trecv: %zd", ret))
			return -1;
	}
	for (i = 0; i < MC_STORM_BATCH; i++) {
		ret = FT_RDM_POST(fi_tsend(env->p.a.ep, bufs[first + i],
					   MC_STORM_LEN, NULL, env->p.a2b,
					   MC_TAG | i, &sctx[i]));
		if (!mc_check(!ret, name, "fi_tsend: %zd", ret))
			return -1;
	}
	for (i = 0; i < MC_STORM_BATCH; i++)
		if (mc_wait(name, env->p.a.cq, &sctx[i], 0) ||
		    mc_wait(name, env->p.b.cq, &rctx[i], MC_STORM_LEN))
			return -1;
	for (i = 0; i < MC_STORM_BATCH; i++) {
		bad = mc_diff(rbuf + i * MC_STORM_LEN, MC_STORM_LEN,
			      round + (unsigned)i);
		if (!mc_check(bad == MC_STORM_LEN, name,
			      "buffer %zu round %u: byte %zu stale", first + i,
			      round, bad))
			return -1;
	}
	return 0;
}

static void mc_storm_child(void)
{
	const char *name = "mrcache_storm";
	uint8_t *bufs[MC_STORM_BUFS] = { NULL };
	struct mc_env env;
	unsigned int round;
	size_t i, first;

	setenv("FI_RIVET_MR_CACHE_MAX_COUNT", "8", 0);
	if (mc_open(&env, name))
		return;
	for (i = 0; i < MC_STORM_BUFS; i++)
		bufs[i] = mc_alloc(MC_MMAP, NULL, NULL);
	for (round = 0; round < 3; round++) {
		for (first = 0; first < MC_STORM_BUFS; first += MC_STORM_BATCH)
			if (mc_storm_batch(name, &env, bufs, env.target.ptr,
					   first, round * 7))
				goto out;
		/* every third buffer unmapped and mapped again */
		for (i = round % 3; i < MC_STORM_BUFS; i += 3) {
			munmap(bufs[i], MC_LEN);
			bufs[i] = mc_alloc(MC_MMAP, bufs[i], NULL);
		}
	}
out:
	for (i = 0; i < MC_STORM_BUFS; i++)
		if (bufs[i])
			munmap(bufs[i], MC_LEN);
	mc_close(&env);
	mc_done(name);
}

/* ---- threads sharing one domain (FI_THREAD_SAFE) ----------------------- */

struct mc_thread {
	struct ft_fab *fab;
	struct ft_rdm_ep a, b;
	fi_addr_t a2b;
	unsigned int id;
	int ret;
};

static void *mc_thread_run(void *arg)
{
	struct mc_thread *t = arg;
	const char *name = "mrcache_threads";
	struct ft_rdm_pair p = { .a = t->a, .b = t->b, .a2b = t->a2b };
	uint8_t *s = NULL, *r = NULL;
	unsigned int round;

	for (round = 0; round < 8; round++) {
		s = mc_alloc(MC_MMAP, s, NULL);
		r = mc_alloc(round & 1 ? MC_MALLOC : MC_MMAP, NULL, NULL);
		if (!s || !r) {
			t->ret = -1;
			break;
		}
		mc_fill(s, MC_LEN, round + t->id * 16);
		t->ret = mc_send(name, &p, s, r, NULL, MC_LEN,
				 round + t->id * 16);
		munmap(s, MC_LEN);
		mc_free(round & 1 ? MC_MALLOC : MC_MMAP, r);
		if (t->ret)
			break;
	}
	return NULL;
}

static int mc_threads_open(struct ft_fab *fab, struct mc_thread *t)
{
	fi_addr_t back;
	int ret;

	ret = ft_rdm_ep_open(fab, NULL, true, 0, &t->a);
	ret = ret ? ret : ft_rdm_ep_open(fab, NULL, true, 0, &t->b);
	ret = ret ? ret : ft_rdm_av_insert(t->a.av, t->b.name, &t->a2b);
	ret = ret ? ret : ft_rdm_av_insert(t->b.av, t->a.name, &back);
	return ret;
}

static void mc_threads_child(void)
{
	const char *name = "mrcache_threads";
	struct mc_thread t[MC_THREADS] = { { 0 } };
	pthread_t tid[MC_THREADS];
	struct fi_info *hints;
	struct ft_fab fab = { 0 };
	unsigned int i, n = 0;
	int ret;

	hints = ft_rdm_hints(FT_RDM_CAPS, FI_THREAD_SAFE);
	ret = hints ? ft_rdm_fab_open(&fab, hints, true) : -FI_ENOMEM;
	fi_freeinfo(hints);
	if (ret == -FI_ENODATA) {
		ft_skip(name, "no FI_THREAD_SAFE domain");
		g_skipped = true;
		return;
	}
	for (i = 0; !ret && i < MC_THREADS; i++) {
		t[i].fab = &fab;
		t[i].id = i;
		ret = mc_threads_open(&fab, &t[i]);
	}
	if (!mc_check(!ret, name, "setup: %s", fi_strerror(-ret)))
		goto close;
	for (n = 0; n < MC_THREADS; n++)
		if (pthread_create(&tid[n], NULL, mc_thread_run, &t[n]))
			break;
	for (i = 0; i < n; i++) {
		pthread_join(tid[i], NULL);
		mc_check(!t[i].ret, name, "thread %u failed", i);
	}
close:
	for (i = 0; i < MC_THREADS; i++) {
		ft_rdm_ep_close(&t[i].b);
		ft_rdm_ep_close(&t[i].a);
	}
	ft_fab_close(&fab);
	mc_done(name);
}

/* ---- -b N: one buffer, N rendezvous sends ------------------------------ */

static void mc_bench_child(void)
{
	const char *name = "mrcache_bench";
	struct mc_env env;
	struct timespec t0, t1;
	uint8_t *s;
	size_t i;

	if (mc_open(&env, name))
		return;
	s = mc_alloc(MC_MMAP, NULL, NULL);
	if (!mc_check(s != NULL, name, "allocation failed"))
		goto out;
	mc_fill(s, MC_LEN, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* the receive buffer has a descriptor: only the sends' registrations
	 * are the provider's own */
	for (i = 0; i < g_bench; i++)
		if (mc_send(name, &env.p, s, env.target.ptr, env.target.desc,
			    MC_LEN, 0))
			break;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("mrcache_bench: %zu rendezvous sends of %d bytes from one "
	       "buffer: %.3f s\n", i, MC_LEN,
	       (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	munmap(s, MC_LEN);
out:
	mc_close(&env);
	mc_done(name);
}

static void mc_opt(int op, const char *arg)
{
	if (op == 'b')
		g_bench = strtoul(arg, NULL, 0);
}

int main(int argc, char **argv)
{
	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.timeout_ms = 120000;
	ft_set_extra_opts("b:", "  -b N  only the benchmark: N rendezvous "
			  "sends from one buffer\n", mc_opt);
	ft_parse_opts(argc, argv, "Registration cache: stale memory, a full "
		      "cache, threads.", false);
	if (g_bench) {
		mc_case("mrcache_bench", mc_bench_child);
		return ft_summary();
	}
	mc_case("mrcache_stale_malloc", mc_malloc_child);
	mc_case("mrcache_stale_mmap", mc_mmap_child);
	mc_case("mrcache_stale_huge", mc_huge_child);
	mc_case("mrcache_stale_heap", mc_heap_child);
	mc_case("mrcache_stale_dontneed", mc_dontneed_child);
	mc_case("mrcache_stale_mremap", mc_mremap_child);
	mc_case("mrcache_stale_rma", mc_rma_child);
	mc_case("mrcache_fork", mc_fork_child);
	mc_case("mrcache_storm", mc_storm_child);
	mc_case("mrcache_threads", mc_threads_child);
	return ft_summary();
}
