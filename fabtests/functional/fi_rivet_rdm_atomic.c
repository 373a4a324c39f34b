// SPDX-License-Identifier: MIT
/* RDM atomics between N processes (names and keys swapped through files in
 * a shared folder).  Rank 0 owns the target regions.  Rank 1 runs every
 * fi_op x datatype x kind that fi_query_atomic offers (the *valid calls
 * must agree), each against a reference computed here, reading the target
 * back with FI_ATOMIC_READ; then bad key, out of range, read-only region,
 * bad arguments, and its read/write counters (fi_cntr_wait).  Then ranks
 * 1..N-1 all hammer two locations (fetch-add, compare-and-swap loops, a
 * double sum) at once: the final values must be exact.  -E: FI_RMA_EVENT
 * too: rank 1 adds RMA writes, reads and writes with data, and rank 0's
 * remote counters and receive CQ must count every operation that reached
 * it, as the others report them. */
#include <rdma/fi_rma.h>
#include <complex.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <rdma/fi_atomic.h>

#include "common/ft_rdm.h"

#define AT_MAX 64
#define AT_SLOT 128		/* bytes of the target per element slot */
#define AT_REGION (64 * 1024)
#define AT_RO_LEN 4096
#define AT_HAMMER 200		/* operations of each kind per rank */

enum at_kind { AT_WRITE, AT_FETCH, AT_COMPARE };

struct at_keys {
	uint64_t addr, key, len;
	uint64_t ro_addr, ro_key;
	uint64_t wo_addr, wo_key;	/* -E: counted for writes only */
};

struct at_state {
	struct ft_fab fab;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_cntr *rcntr, *wcntr;
	struct fid_cq *rxcq;		/* -E, rank 0: the remote events */
	struct fid_cntr *rrcntr, *rwcntr;	/* -E, rank 0 */
	struct fid_cntr *mrcntr, *rocntr;	/* -E, rank 0: on the regions */
	struct fid_cntr *wocntr;	/* -E, rank 0: FI_REMOTE_WRITE only */
	bool events;			/* -E */
	uint8_t name[FT_RDM_NAME_MAX];
	size_t namelen;
	fi_addr_t addr[AT_MAX];
	struct ft_buf rw, ro, wo;	/* rank 0: the targets */
	struct ft_buf local;	/* operands and results */
	struct at_keys keys;
	uint64_t writes, reads, errs;	/* rank 1: expected counter values */
	uint64_t wo_n[2];	/* rank 1: atomics on region wo; of them
				 * those that modified it */
	struct fi_context2 ctx;
	const char *dir;
	int n, rank;
};

static struct at_state g_at = { .n = 3, .rank = -1,
				.dir = "/tmp/rivet-atomic" };

static void at_opt(int op, const char *arg)
{
	switch (op) {
	case 'n': g_at.n = atoi(arg); break;
	case 'i': g_at.rank = atoi(arg); break;
	case 'D': g_at.dir = arg; break;
	case 'E': g_at.events = true; break;
	}
}

#include "common/ft_atomic_ref.h"

/* ---- posting and waiting --------------------------------------------- */

static int at_wait(struct ft_comp *comp)
{
	int ret = ft_rdm_wait(g_at.cq, &g_at.ctx, comp, ft_opts.timeout_ms);

	if (ret) {
		comp->err = -ret;
		snprintf(comp->errstr, sizeof(comp->errstr), "no completion");
	}
	return ret ? ret : comp->err;
}

/* One operation of kind on the target's element slot idx, count elements
 * (a positive FI_E* from the completion, or a negative post error). */
static int at_do(enum at_kind kind, enum fi_op op, enum fi_datatype dt,
		 uint64_t raddr, uint64_t key, size_t count, const void *buf,
		 const void *cmp, void *res, struct ft_comp *comp)
{
	struct fid_ep *ep = g_at.ep;
	fi_addr_t peer = g_at.addr[0];
	void *d = g_at.local.desc;
	ssize_t ret;

	if (kind == AT_WRITE)
		ret = FT_RDM_POST(fi_atomic(ep, buf, count, d, peer, raddr,
					    key, dt, op, &g_at.ctx));
	else if (kind == AT_FETCH)
		ret = FT_RDM_POST(fi_fetch_atomic(ep, buf, count, d, res, d,
						  peer, raddr, key, dt, op,
						  &g_at.ctx));
	else
		ret = FT_RDM_POST(fi_compare_atomic(ep, buf, count, d, cmp, d,
						    res, d, peer, raddr, key,
						    dt, op, &g_at.ctx));
	if (ret)
		return (int)ret;
	ret = at_wait(comp);
	if (!ret && kind == AT_WRITE)
		g_at.writes++;
	else if (!ret)
		g_at.reads++;
	else if (ret > 0)
		g_at.errs++;
	return (int)ret;
}

/* Whether the endpoint offers op on dt for kind (a provider may offer a
 * subset, rivet with FI_RIVET_NATIVE_ATOMICS for one). */
static bool at_has(enum at_kind kind, enum fi_op op, enum fi_datatype dt)
{
	size_t count;

	return !(kind == AT_WRITE ? fi_atomicvalid(g_at.ep, dt, op, &count) :
		 kind == AT_FETCH ?
		 fi_fetch_atomicvalid(g_at.ep, dt, op, &count) :
		 fi_compare_atomicvalid(g_at.ep, dt, op, &count));
}

/* The target's bytes set or read by FI_ATOMIC_WRITE / FI_ATOMIC_READ when
 * offered, else by RMA (counted the same: a write, a read) through the
 * last KiB of the registered local buffer. */
#define AT_SCRATCH 3072

static int at_set(enum fi_datatype dt, uint64_t raddr, size_t count,
		  void *buf, struct ft_comp *comp)
{
	uint8_t *bounce = (uint8_t *)g_at.local.ptr + AT_SCRATCH;
	ssize_t ret;

	if (at_has(AT_WRITE, FI_ATOMIC_WRITE, dt))
		return at_do(AT_WRITE, FI_ATOMIC_WRITE, dt, raddr,
			     g_at.keys.key, count, buf, NULL, NULL, comp);
	memcpy(bounce, buf, count * at_size(dt));
	ret = FT_RDM_POST(fi_write(g_at.ep, bounce, count * at_size(dt),
				   g_at.local.desc, g_at.addr[0], raddr,
				   g_at.keys.key, &g_at.ctx));
	ret = ret ? ret : at_wait(comp);
	if (!ret)
		g_at.writes++;
	return (int)ret;
}

static int at_get(enum fi_datatype dt, uint64_t raddr, size_t count,
		  void *buf, struct ft_comp *comp)
{
	uint8_t *bounce = (uint8_t *)g_at.local.ptr + AT_SCRATCH;
	ssize_t ret;

	if (at_has(AT_FETCH, FI_ATOMIC_READ, dt))
		return at_do(AT_FETCH, FI_ATOMIC_READ, dt, raddr,
			     g_at.keys.key, count, NULL, NULL, buf, comp);
	ret = FT_RDM_POST(fi_read(g_at.ep, bounce, count * at_size(dt),
				  g_at.local.desc, g_at.addr[0], raddr,
				  g_at.keys.key, &g_at.ctx));
	ret = ret ? ret : at_wait(comp);
	if (!ret) {
		memcpy(buf, bounce, count * at_size(dt));
		g_at.reads++;
	}
	return (int)ret;
}

/* ---- rank 1: the sweep ------------------------------------------------- */

static const char *at_kind_name(enum at_kind k)
{
	return k == AT_WRITE ? "atomic" : k == AT_FETCH ? "fetch" : "compare";
}

/* fi_query_atomic and the endpoint's *valid call must agree. */
static bool at_offered(enum fi_op op, enum fi_datatype dt, enum at_kind kind,
		       size_t *count)
{
	static const uint64_t qflags[] = { 0, FI_FETCH_ATOMIC,
					   FI_COMPARE_ATOMIC };
	struct fi_atomic_attr attr = { 0 };
	size_t vcount = 0;
	int q, v;
	char name[96];

	q = fi_query_atomic(g_at.fab.domain, dt, op, &attr, qflags[kind]);
	v = kind == AT_WRITE ? fi_atomicvalid(g_at.ep, dt, op, &vcount) :
	    kind == AT_FETCH ? fi_fetch_atomicvalid(g_at.ep, dt, op, &vcount) :
	    fi_compare_atomicvalid(g_at.ep, dt, op, &vcount);
	snprintf(name, sizeof(name), "atomic_query_%s_%s_%s", at_kind_name(kind),
		 fi_tostr(&op, FI_TYPE_ATOMIC_OP),
		 fi_tostr(&dt, FI_TYPE_ATOMIC_TYPE));
	if ((q == 0) != (v == 0) || (!q && (vcount != attr.count ||
					    attr.size != at_size(dt)))) {
		ft_fail(name, "query %d (count %zu size %zu), valid %d (count "
			"%zu)", q, attr.count, attr.size, v, vcount);
		return false;
	}
	*count = vcount;
	return q == 0;
}

/* Set the target, run op, check the old values it fetched and the new
 * values read back, against the reference. */
static int at_case(enum fi_op op, enum fi_datatype dt, enum at_kind kind,
		   size_t slot, size_t n)
{
	size_t size = at_size(dt), i;
	uint8_t *base = g_at.local.ptr;
	uint8_t *init = base, *src = base + 256, *cmp = base + 512;
	uint8_t *res = base + 768, *back = base + 1024;
	uint64_t raddr = g_at.keys.addr + slot * AT_SLOT;
	struct ft_comp comp;
	char name[96];
	int ret;

	snprintf(name, sizeof(name), "atomic_%s_%s_%s", at_kind_name(kind),
		 fi_tostr(&op, FI_TYPE_ATOMIC_OP),
		 fi_tostr(&dt, FI_TYPE_ATOMIC_TYPE));
	for (i = 0; i < AT_N; i++) {
		at_value(dt, 0, i, init + i * size);
		at_value(dt, 1, i, src + i * size);
		at_value(dt, 2, i, cmp + i * size);
	}
	memset(res, 0xa5, n * size);
	ret = at_set(dt, raddr, n, init, &comp);
	ret = ret ? ret : at_do(kind, op, dt, raddr, g_at.keys.key, n, src,
				cmp, res, &comp);
	ret = ret ? ret : at_get(dt, raddr, n, back, &comp);
	if (ret) {
		ft_fail(name, "%s", ret < 0 ? fi_strerror(-ret) :
			ft_comp_str(&comp));
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct at_val a = at_load(dt, init + i * size);
		struct at_val want = at_norm(dt, at_ref(op, dt, a,
			at_load(dt, src + i * size),
			at_load(dt, cmp + i * size)));

		if (kind != AT_WRITE &&
		    !at_eq(dt, at_load(dt, res + i * size), a)) {
			ft_fail(name, "element %zu: fetched a wrong old value",
				i);
			return -1;
		}
		if (!at_eq(dt, at_load(dt, back + i * size), want)) {
			ft_fail(name, "element %zu: target holds %Lg%+Lgi, "
				"want %Lg%+Lgi", i,
				creall(at_load(dt, back + i * size).z),
				cimagl(at_load(dt, back + i * size).z),
				creall(want.z), cimagl(want.z));
			return -1;
		}
	}
	return 0;
}

static void at_sweep(void)
{
	int op, t, kind, offered = 0, bad = 0;
	size_t count;

	for (kind = AT_WRITE; kind <= AT_COMPARE; kind++) {
		for (op = FI_MIN; op < FI_ATOMIC_OP_LAST; op++) {
			for (t = 0; t < (int)(sizeof(g_types) /
					      sizeof(g_types[0])); t++) {
				if (!at_offered(op, g_types[t], kind, &count))
					continue;
				offered++;
				bad += at_case(op, g_types[t], kind, t % 8,
					       count < AT_N ? count : AT_N) ?
				       1 : 0;
			}
		}
	}
	ft_check(!bad && offered > 0, "atomic_sweep", "%d of %d failed",
		 bad, offered);
	ft_info("%d op x datatype x kind triples offered and checked",
		offered);
}

/* ---- rank 1: errors, arguments, counters ------------------------------ */

static void at_expect_err(const char *name, int ret, int want)
{
	ft_check(ret == want, name, "got %d (%s), want error completion %d",
		 ret, ret < 0 ? fi_strerror(-ret) : fi_strerror(ret), want);
}

static void at_errors(void)
{
	uint64_t *v = g_at.local.ptr, end = g_at.keys.addr + g_at.keys.len;
	struct ft_comp comp;
	size_t count = 0;
	int ret;

	v[0] = 1;
	ret = at_do(AT_FETCH, FI_SUM, FI_UINT64, g_at.keys.addr,
		    g_at.keys.key + 0x1000, 1, v, NULL, v + 8, &comp);
	at_expect_err("atomic_bad_key", ret, FI_EACCES);
	ret = at_do(AT_WRITE, FI_SUM, FI_UINT64, end, g_at.keys.key, 1, v,
		    NULL, NULL, &comp);
	at_expect_err("atomic_out_of_range", ret, FI_EACCES);
	ret = at_do(AT_WRITE, FI_SUM, FI_UINT64, g_at.keys.addr - 8,
		    g_at.keys.key, 1, v, NULL, NULL, &comp);
	at_expect_err("atomic_below_range", ret, FI_EACCES);
	ft_info("mr_mode 0x%x: remote addresses are %s",
		g_at.fab.info->domain_attr->mr_mode,
		g_at.fab.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
		"virtual addresses" : "offsets");
	ret = at_do(AT_WRITE, FI_SUM, FI_UINT64, g_at.keys.ro_addr,
		    g_at.keys.ro_key, 1, v, NULL, NULL, &comp);
	at_expect_err("atomic_write_read_only", ret, FI_EACCES);
	if (at_has(AT_FETCH, FI_ATOMIC_READ, FI_UINT64)) {
		ret = at_do(AT_FETCH, FI_ATOMIC_READ, FI_UINT64,
			    g_at.keys.ro_addr, g_at.keys.ro_key, 1, NULL, NULL,
			    v + 8, &comp);
		ft_check(!ret && v[8] == 0x5eed, "atomic_read_read_only",
			 "%d, value 0x%llx", ret, (unsigned long long)v[8]);
	}
	/* the connection survives refused atomics */
	ret = at_get(FI_UINT64, g_at.keys.addr, 1, v + 8, &comp);
	ft_check(!ret, "atomic_after_errors", "%d", ret);

	fi_atomicvalid(g_at.ep, FI_UINT64, FI_SUM, &count);
	ret = (int)fi_atomic(g_at.ep, v, count + 1, g_at.local.desc,
			     g_at.addr[0], g_at.keys.addr, g_at.keys.key,
			     FI_UINT64, FI_SUM, &g_at.ctx);
	ft_check(ret == -FI_EINVAL, "atomic_count_too_big", "%d", ret);
	ret = (int)fi_atomic(g_at.ep, v, 1, g_at.local.desc, g_at.addr[0],
			     g_at.keys.addr, g_at.keys.key, FI_UINT64,
			     FI_CSWAP, &g_at.ctx);
	ft_check(ret == -FI_EOPNOTSUPP, "atomic_cswap_not_by_fi_atomic", "%d",
		 ret);
	ret = (int)fi_atomic(g_at.ep, v, 1, g_at.local.desc, g_at.addr[0],
			     g_at.keys.addr, g_at.keys.key, FI_DOUBLE,
			     FI_BOR, &g_at.ctx);
	ft_check(ret == -FI_EOPNOTSUPP, "atomic_bor_double", "%d", ret);
	ret = (int)fi_atomic(g_at.ep, v, 1, g_at.local.desc, g_at.addr[0],
			     g_at.keys.addr, g_at.keys.key,
			     (enum fi_datatype)77, FI_SUM, &g_at.ctx);
	ft_check(ret == -FI_EOPNOTSUPP, "atomic_bad_datatype", "%d", ret);
	/* inject: no completion, but the write counter counts it */
	v[0] = 5;
	ret = (int)FT_RDM_POST(fi_inject_atomic(g_at.ep, v, 1, g_at.addr[0],
						g_at.keys.addr + 8,
						g_at.keys.key, FI_UINT64,
						FI_SUM));
	ft_check(!ret, "atomic_inject", "%s", fi_strerror(-ret));
	if (!ret)
		g_at.writes++;
}

/* ---- rank 1: what Sandia OpenSHMEM's locks post ---------------------- */

#define AT_LOCK 4096		/* target offset of the lock words */
#define AT_LOCK_LOCAL 2560	/* local offset of operand/compare/result */

/* fi_fetch_atomicmsg / fi_compare_atomicmsg with FI_INJECT, as SOS's
 * nonblocking fetches post them (fi_atomic(3): FI_INJECT gives back the
 * constant buffers only; the result is written at completion). */
static int at_msg_inject(enum at_kind kind, enum fi_op op,
			 enum fi_datatype dt, uint64_t raddr, void *buf,
			 void *cmp, void *res, struct ft_comp *comp)
{
	struct fi_ioc src = { .addr = buf, .count = 1 };
	struct fi_ioc cmpv = { .addr = cmp, .count = 1 };
	struct fi_ioc resv = { .addr = res, .count = 1 };
	struct fi_rma_ioc rma = { .addr = raddr, .count = 1,
				  .key = g_at.keys.key };
	void *d = g_at.local.desc;
	struct fi_msg_atomic msg = {
		.msg_iov = &src, .desc = &d, .iov_count = 1,
		.addr = g_at.addr[0], .rma_iov = &rma, .rma_iov_count = 1,
		.datatype = dt, .op = op, .context = &g_at.ctx,
	};
	ssize_t ret;

	if (kind == AT_FETCH)
		ret = FT_RDM_POST(fi_fetch_atomicmsg(g_at.ep, &msg, &resv, &d,
						     1, FI_INJECT));
	else
		ret = FT_RDM_POST(fi_compare_atomicmsg(g_at.ep, &msg, &cmpv,
						       &d, 1, &resv, &d, 1,
						       FI_INJECT));
	if (ret)
		return (int)ret;
	ret = at_wait(comp);
	if (!ret)
		g_at.reads++;
	else if (ret > 0)
		g_at.errs++;
	return (int)ret;
}

/* One step of the lock sequence: post, then the old value must be want. */
static bool at_lock_step(const char *step, int ret, enum fi_datatype dt,
			 const void *res, uint64_t want, char *why, size_t len)
{
	uint64_t got = 0;

	if (dt == FI_INT32)
		got = (uint32_t)*(const int32_t *)res;
	else
		memcpy(&got, res, sizeof(got));
	if (!ret && got == want)
		return true;
	snprintf(why, len, "%s: %d (%s), old 0x%llx want 0x%llx", step, ret,
		 fi_strerror(ret < 0 ? -ret : ret), (unsigned long long)got,
		 (unsigned long long)want);
	return false;
}

/* shmem_set_lock/clear_lock/test_lock (SOS src/shmem_lock.h over
 * transport_ofi.h) on a 32- and a 64-bit word: atomic set by inject,
 * swap (fetching FI_ATOMIC_WRITE), the same with FI_INJECT, atomic fetch
 * (FI_ATOMIC_READ, no operand, FI_INJECT), FI_MSWAP, FI_CSWAP and
 * FI_CSWAP with FI_INJECT.  SOS's set_lock got -FI_EINVAL here. */
static void at_lock_one(enum fi_datatype dt, uint64_t raddr)
{
	uint8_t *l = (uint8_t *)g_at.local.ptr + AT_LOCK_LOCAL;
	void *op = l, *cmp = l + 16, *res = l + 32;
	const char *name = dt == FI_INT32 ? "atomic_lock_int32" :
					    "atomic_lock_int64";
	struct ft_comp comp;
	char why[160];
	int ret;

#define AT_VAL(p, v) (dt == FI_INT32 ? (void)(*(int32_t *)(p) = (int32_t)(v)) \
				     : (void)(*(int64_t *)(p) = (int64_t)(v)))
	memset(l, 0xee, 48);
	AT_VAL(op, 0);
	ret = (int)FT_RDM_POST(fi_inject_atomic(g_at.ep, op, 1, g_at.addr[0],
						raddr, g_at.keys.key, dt,
						FI_ATOMIC_WRITE));
	if (!ret)
		g_at.writes++;
	AT_VAL(op, 5);
	ret = ret ? ret : at_do(AT_FETCH, FI_ATOMIC_WRITE, dt, raddr,
				g_at.keys.key, 1, op, NULL, res, &comp);
	if (!at_lock_step("set+swap", ret, dt, res, 0, why, sizeof(why)))
		goto fail;
	AT_VAL(op, 7);
	ret = at_msg_inject(AT_FETCH, FI_ATOMIC_WRITE, dt, raddr, op, NULL,
			    res, &comp);
	if (!at_lock_step("swap FI_INJECT", ret, dt, res, 5, why, sizeof(why)))
		goto fail;
	ret = at_msg_inject(AT_FETCH, FI_ATOMIC_READ, dt, raddr, NULL, NULL,
			    res, &comp);
	if (!at_lock_step("fetch FI_INJECT", ret, dt, res, 7, why, sizeof(why)))
		goto fail;
	AT_VAL(op, 0x30);
	AT_VAL(cmp, 0xf0);	/* the mask */
	ret = at_do(AT_COMPARE, FI_MSWAP, dt, raddr, g_at.keys.key, 1, op,
		    cmp, res, &comp);
	if (!at_lock_step("mswap", ret, dt, res, 7, why, sizeof(why)))
		goto fail;
	AT_VAL(op, 9);
	AT_VAL(cmp, 0x37);
	ret = at_do(AT_COMPARE, FI_CSWAP, dt, raddr, g_at.keys.key, 1, op,
		    cmp, res, &comp);
	if (!at_lock_step("cswap", ret, dt, res, 0x37, why, sizeof(why)))
		goto fail;
	AT_VAL(op, 0);
	AT_VAL(cmp, 9);
	ret = at_msg_inject(AT_COMPARE, FI_CSWAP, dt, raddr, op, cmp, res,
			    &comp);
	if (!at_lock_step("cswap FI_INJECT", ret, dt, res, 9, why, sizeof(why)))
		goto fail;
	ret = at_msg_inject(AT_FETCH, FI_ATOMIC_READ, dt, raddr, NULL, NULL,
			    res, &comp);
	if (!at_lock_step("released", ret, dt, res, 0, why, sizeof(why)))
		goto fail;
#undef AT_VAL
	ft_ok(name);
	return;
fail:
	ft_fail(name, "%s", why);
}

static void at_lock(void)
{
	static const enum fi_datatype dts[] = { FI_INT32, FI_INT64 };
	static const struct { enum at_kind kind; enum fi_op op; } need[] = {
		{ AT_WRITE, FI_ATOMIC_WRITE }, { AT_FETCH, FI_ATOMIC_WRITE },
		{ AT_FETCH, FI_ATOMIC_READ }, { AT_COMPARE, FI_MSWAP },
		{ AT_COMPARE, FI_CSWAP },
	};
	size_t i, j, n = sizeof(need) / sizeof(need[0]);

	for (i = 0; i < sizeof(dts) / sizeof(dts[0]); i++) {
		for (j = 0; j < n; j++)
			if (!at_has(need[j].kind, need[j].op, dts[i]))
				break;
		if (j < n)
			ft_info("lock sequence on datatype %d not offered",
				dts[i]);
		else
			at_lock_one(dts[i], g_at.keys.addr + AT_LOCK + 16 * i);
	}
}

static void at_counters(void)
{
	int ret;

	ret = fi_cntr_wait(g_at.wcntr, g_at.writes, 5000);
	ft_check(!ret && fi_cntr_read(g_at.wcntr) == g_at.writes,
		 "atomic_write_counter", "wait %d, value %llu, want %llu", ret,
		 (unsigned long long)fi_cntr_read(g_at.wcntr),
		 (unsigned long long)g_at.writes);
	ret = fi_cntr_wait(g_at.rcntr, g_at.reads, 5000);
	ft_check(!ret && fi_cntr_read(g_at.rcntr) == g_at.reads,
		 "atomic_read_counter", "wait %d, value %llu, want %llu", ret,
		 (unsigned long long)fi_cntr_read(g_at.rcntr),
		 (unsigned long long)g_at.reads);
	ft_check(fi_cntr_readerr(g_at.wcntr) + fi_cntr_readerr(g_at.rcntr) ==
		 g_at.errs, "atomic_error_counters", "%llu + %llu, want %llu",
		 (unsigned long long)fi_cntr_readerr(g_at.wcntr),
		 (unsigned long long)fi_cntr_readerr(g_at.rcntr),
		 (unsigned long long)g_at.errs);
	ret = fi_cntr_wait(g_at.wcntr, g_at.writes + 1, 200);
	ft_check(ret == -FI_ETIMEDOUT, "atomic_counter_wait_timeout", "%d",
		 ret);
}

/* ---- rank 1 with -E: RMA that rank 0 must hear of -------------------- */

#define AT_RMA_OFF 8192
#define AT_RMA_N 10

static void at_rma(void)
{
	uint8_t *buf = (uint8_t *)g_at.local.ptr + 2048;
	struct ft_comp comp;
	ssize_t ret = 0;
	int i;

	for (i = 0; !ret && i < 3 * AT_RMA_N; i++) {
		uint64_t raddr = g_at.keys.addr + AT_RMA_OFF + 64 * (i % 8);

		memset(buf, i, 64);
		if (i < AT_RMA_N)
			ret = FT_RDM_POST(fi_write(g_at.ep, buf, 64,
						   g_at.local.desc,
						   g_at.addr[0], raddr,
						   g_at.keys.key, &g_at.ctx));
		else if (i < 2 * AT_RMA_N)
			ret = FT_RDM_POST(fi_read(g_at.ep, buf, 64,
						  g_at.local.desc,
						  g_at.addr[0], raddr,
						  g_at.keys.key, &g_at.ctx));
		else
			ret = FT_RDM_POST(fi_writedata(g_at.ep, buf, 64,
						       g_at.local.desc, i,
						       g_at.addr[0], raddr,
						       g_at.keys.key,
						       &g_at.ctx));
		ret = ret ? ret : at_wait(&comp);
		if (!ret && i >= AT_RMA_N && i < 2 * AT_RMA_N)
			g_at.reads++;
		else if (!ret)
			g_at.writes++;
	}
	ft_check(!ret, "atomic_rma_for_events", "%s", ret < 0 ?
		 fi_strerror((int)-ret) : ft_comp_str(&comp));
}

/* -E, rank 1: fetching atomics on a region whose counter counts remote
 * writes only (fi_mr_bind FI_REMOTE_WRITE): fi_mr(3) counts every atomic
 * that modifies the region there, a swap or a fetch-and-add too (Sandia
 * OpenSHMEM sleeps on such a counter until a peer's swap lands); a plain
 * fetch (FI_ATOMIC_READ) modifies nothing and does not count. */
static void at_write_counted(void)
{
	uint64_t *l = (uint64_t *)((uint8_t *)g_at.local.ptr + 1024);
	uint64_t raddr = g_at.keys.wo_addr, key = g_at.keys.wo_key;
	struct ft_comp comp;
	int ret;

	l[0] = 1;	/* the operand */
	l[1] = 1;	/* the compare value: the word after the add */
	ret = at_do(AT_FETCH, FI_SUM, FI_UINT64, raddr, key, 1, l, NULL,
		    l + 2, &comp);
	g_at.wo_n[0] += !ret;
	l[0] = 5;
	ret = ret ? ret : at_do(AT_COMPARE, FI_CSWAP, FI_UINT64, raddr, key,
				1, l, l + 1, l + 2, &comp);
	g_at.wo_n[0] += !ret;
	l[0] = 7;
	if (!ret && at_has(AT_FETCH, FI_ATOMIC_WRITE, FI_UINT64)) {
		ret = at_do(AT_FETCH, FI_ATOMIC_WRITE, FI_UINT64, raddr, key,
			    1, l, NULL, l + 2, &comp);
		g_at.wo_n[0] += !ret;
	}
	g_at.wo_n[1] = g_at.wo_n[0];
	if (!ret && at_has(AT_FETCH, FI_ATOMIC_READ, FI_UINT64)) {
		ret = at_do(AT_FETCH, FI_ATOMIC_READ, FI_UINT64, raddr, key,
			    1, NULL, NULL, l + 2, &comp);
		g_at.wo_n[0] += !ret;
	}
	ft_check(!ret, "atomic_write_counted_ops", "%s", ret < 0 ?
		 fi_strerror(-ret) : ft_comp_str(&comp));
}

/* Rank 0: the others' counts against its remote counters and events. */
static void at_events_check(void)
{
	uint64_t want[2] = { 0, 0 }, got[2] = { 0, 0 }, c[2], wo[2], region;
	struct fi_cq_tagged_entry e;
	char key[32];
	ssize_t n;
	int r, ret;

	for (r = 1; r < g_at.n; r++) {
		snprintf(key, sizeof(key), "counts.%d", r);
		if (ft_rdm_lookup(g_at.dir, key, c, sizeof(c),
				  ft_opts.timeout_ms) != sizeof(c)) {
			ft_fail("atomic_events", "no counts from rank %d", r);
			return;
		}
		want[0] += c[0];
		want[1] += c[1];
	}
	/* wo[0] operations on region wo, wo[1] of them modified it */
	if (ft_rdm_lookup(g_at.dir, "wo", wo, sizeof(wo),
			  ft_opts.timeout_ms) != sizeof(wo))
		wo[0] = wo[1] = UINT64_MAX / 2;
	ret = fi_cntr_wait(g_at.wocntr, wo[1], 5000);
	ft_check(!ret && fi_cntr_read(g_at.wocntr) == wo[1],
		 "atomic_region_write_counter", "%d: %llu, want %llu (the "
		 "atomics that modified the region, fetching ones too)", ret,
		 (unsigned long long)fi_cntr_read(g_at.wocntr),
		 (unsigned long long)wo[1]);
	/* the regions rw and ro: everything but what went to wo */
	region = want[0] + want[1] - wo[0];
	ret = fi_cntr_wait(g_at.rwcntr, want[0], 5000);
	ret = ret ? ret : fi_cntr_wait(g_at.rrcntr, want[1], 5000);
	ret = ret ? ret : fi_cntr_wait(g_at.mrcntr, region -
				       fi_cntr_read(g_at.rocntr), 5000);
	ft_check(!ret && fi_cntr_read(g_at.mrcntr) +
		 fi_cntr_read(g_at.rocntr) == region,
		 "atomic_region_counters", "%d: read-write region %llu, "
		 "read-only region %llu; want %llu together", ret,
		 (unsigned long long)fi_cntr_read(g_at.mrcntr),
		 (unsigned long long)fi_cntr_read(g_at.rocntr),
		 (unsigned long long)region);
	ft_check(!ret && fi_cntr_read(g_at.rwcntr) == want[0] &&
		 fi_cntr_read(g_at.rrcntr) == want[1], "atomic_remote_counters",
		 "%d: remote writes %llu, reads %llu; want %llu, %llu", ret,
		 (unsigned long long)fi_cntr_read(g_at.rwcntr),
		 (unsigned long long)fi_cntr_read(g_at.rrcntr),
		 (unsigned long long)want[0], (unsigned long long)want[1]);
	while ((n = fi_cq_read(g_at.rxcq, &e, 1)) == 1) {
		if (e.op_context || !(e.flags & (FI_RMA | FI_ATOMIC)))
			continue;
		if (e.flags & FI_REMOTE_WRITE)
			got[0]++;
		else if (e.flags & FI_REMOTE_READ)
			got[1]++;
	}
	ft_check(n == -FI_EAGAIN && got[0] == want[0] && got[1] == want[1],
		 "atomic_remote_events", "%zd: %llu write and %llu read events,"
		 " want %llu, %llu", n, (unsigned long long)got[0],
		 (unsigned long long)got[1], (unsigned long long)want[0],
		 (unsigned long long)want[1]);
}

/* ---- ranks 1..N-1: all at once on one location ------------------------ */

/* Offsets in the target: C (fetch-add), D (compare-and-swap), E (double) */
#define AT_C 2048
#define AT_D 2056
#define AT_E 2064

static void at_hammer(void)
{
	uint64_t *v = g_at.local.ptr, one = 1, prev = 0, old, want;
	double dv = 0.5;
	struct ft_comp comp;
	int i, ret = 0, tries = 0;

	for (i = 0; !ret && i < AT_HAMMER; i++) {
		ret = at_do(AT_FETCH, FI_SUM, FI_UINT64, g_at.keys.addr + AT_C,
			    g_at.keys.key, 1, &one, NULL, &old, &comp);
		if (!ret && i && old <= prev)
			ret = -FI_EOTHER;	/* fetched values must grow */
		prev = old;
	}
	ft_check(!ret, "atomic_hammer_fetch_add", "%d", ret);
	for (i = 0; !ret && i < AT_HAMMER; i++) {
		ret = at_get(FI_UINT64, g_at.keys.addr + AT_D, 1, &old, &comp);
		while (!ret) {
			want = old + 1;
			ret = at_do(AT_COMPARE, FI_CSWAP, FI_UINT64,
				    g_at.keys.addr + AT_D, g_at.keys.key, 1,
				    &want, &old, v, &comp);
			tries++;
			if (ret || v[0] == old)
				break;
			old = v[0];	/* somebody else won: retry */
		}
	}
	ft_check(!ret, "atomic_hammer_cswap", "%d (%d tries)", ret, tries);
	if (!at_has(AT_WRITE, FI_SUM, FI_DOUBLE))
		return;
	for (i = 0; !ret && i < AT_HAMMER; i++)
		ret = at_do(AT_WRITE, FI_SUM, FI_DOUBLE, g_at.keys.addr + AT_E,
			    g_at.keys.key, 1, &dv, NULL, NULL, &comp);
	ft_check(!ret, "atomic_hammer_double_sum", "%d", ret);
}

static void at_hammer_check(void)
{
	uint64_t want = (uint64_t)(g_at.n - 1) * AT_HAMMER, v[3];
	double e;
	struct ft_comp comp;
	int ret;

	bool dsum = at_has(AT_WRITE, FI_SUM, FI_DOUBLE);

	e = dsum ? 0 : want * 0.5;
	ret = at_get(FI_UINT64, g_at.keys.addr + AT_C, 2, v, &comp);
	ret = ret ? ret : !dsum ? 0 : at_get(FI_DOUBLE, g_at.keys.addr + AT_E,
					     1, &e, &comp);
	ft_check(!ret && v[0] == want && v[1] == want && e == want * 0.5,
		 "atomic_hammer_exact", "%d: fetch-add %llu, cswap %llu, "
		 "double %g; want %llu", ret, (unsigned long long)v[0],
		 (unsigned long long)v[1], e, (unsigned long long)want);
}

/* ---- setup ------------------------------------------------------------ */

static int at_barrier(const char *tag)
{
	int ret = ft_rdm_barrier(g_at.dir, tag, g_at.rank, g_at.n,
				 6 * ft_opts.timeout_ms);

	if (ret)
		ft_fail("atomic_barrier", "%s: %s", tag, fi_strerror(-ret));
	return ret;
}

static int at_cntr_open(struct fid_cntr **cntr_p)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };

	return fi_cntr_open(g_at.fab.domain, &attr, cntr_p, NULL);
}

/* Rank 0 with -E: remote counters, and its own receive CQ (left unwatched,
 * to count the events in it at the end).  Without -E, binding a remote
 * counter must fail. */
static int at_remote_bind(void)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_NONE };
	int ret;

	if (!g_at.events) {
		ret = at_cntr_open(&g_at.rwcntr);
		if (ret)
			return ret;
		ret = fi_ep_bind(g_at.ep, &g_at.rwcntr->fid, FI_REMOTE_WRITE);
		ft_check(ret == -FI_EINVAL, "atomic_remote_cntr_needs_event",
			 "fi_ep_bind: %d", ret);
		return 0;
	}
	ret = fi_cq_open(g_at.fab.domain, &cq_attr, &g_at.rxcq, NULL);
	ret = ret ? ret : fi_ep_bind(g_at.ep, &g_at.rxcq->fid, FI_RECV);
	ret = ret ? ret : at_cntr_open(&g_at.rrcntr);
	ret = ret ? ret : at_cntr_open(&g_at.rwcntr);
	ret = ret ? ret : fi_ep_bind(g_at.ep, &g_at.rrcntr->fid,
				     FI_REMOTE_READ);
	return ret ? ret : fi_ep_bind(g_at.ep, &g_at.rwcntr->fid,
				      FI_REMOTE_WRITE);
}

static int at_ep_open(void)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_NONE };
	struct fid_domain *d = g_at.fab.domain;
	bool split = g_at.events && !g_at.rank;
	int ret;

	ret = ft_rdm_av_open(d, AT_MAX, &g_at.av);
	ret = ret ? ret : fi_cq_open(d, &cq_attr, &g_at.cq, NULL);
	ret = ret ? ret : fi_endpoint(d, g_at.fab.info, &g_at.ep, NULL);
	ret = ret ? ret : fi_ep_bind(g_at.ep, &g_at.av->fid, 0);
	ret = ret ? ret : fi_ep_bind(g_at.ep, &g_at.cq->fid, split ?
				     FI_TRANSMIT : FI_TRANSMIT | FI_RECV);
	if (!ret && !g_at.rank)
		ret = at_remote_bind();
	ret = ret ? ret : at_cntr_open(&g_at.rcntr);
	ret = ret ? ret : at_cntr_open(&g_at.wcntr);
	ret = ret ? ret : fi_ep_bind(g_at.ep, &g_at.rcntr->fid, FI_READ);
	ret = ret ? ret : fi_ep_bind(g_at.ep, &g_at.wcntr->fid, FI_WRITE);
	ret = ret ? ret : fi_enable(g_at.ep);
	g_at.namelen = sizeof(g_at.name);
	ret = ret ? ret : fi_getname(&g_at.ep->fid, g_at.name, &g_at.namelen);
	if (!ret)
		ft_rdm_watch(g_at.cq, true);
	return ret;
}

static int at_names(void)
{
	uint8_t name[FT_RDM_NAME_MAX];
	char key[32];
	ssize_t len;
	int j, ret;

	snprintf(key, sizeof(key), "ep.%d", g_at.rank);
	ret = ft_rdm_publish(g_at.dir, key, g_at.name, g_at.namelen);
	for (j = 0; !ret && j < g_at.n; j++) {
		snprintf(key, sizeof(key), "ep.%d", j);
		len = ft_rdm_lookup(g_at.dir, key, name, sizeof(name),
				    3 * ft_opts.timeout_ms);
		if (len < 0)
			return (int)len;
		ret = ft_rdm_av_insert(g_at.av, name, &g_at.addr[j]);
	}
	return ret;
}

/* A region's address for its peers: offsets without FI_MR_VIRT_ADDR. */
static uint64_t at_raddr(void *ptr)
{
	return g_at.fab.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
	       (uint64_t)(uintptr_t)ptr : 0;
}

/* Rank 0 registers the targets and publishes their keys; the others read
 * them. */
/* -E, rank 0: counters bound to the two target regions (fi_mr_bind;
 * enabled when the provider reports FI_MR_RMA_EVENT): the read-write
 * region's counts both directions, the read-only region's reads. */
static int at_region_cntrs(void)
{
	struct fid_mr *rw = g_at.rw.mr, *ro = g_at.ro.mr;
	int ret;

	ret = at_cntr_open(&g_at.mrcntr);
	ret = ret ? ret : at_cntr_open(&g_at.rocntr);
	if (ret)
		return ret;
	ft_check(fi_mr_bind(rw, &g_at.mrcntr->fid, 0) == -FI_EINVAL &&
		 fi_mr_bind(rw, &g_at.mrcntr->fid, FI_SEND) == -FI_EINVAL,
		 "atomic_region_bind_flags", "bad flags taken");
	ret = fi_mr_bind(rw, &g_at.mrcntr->fid,
			 FI_REMOTE_READ | FI_REMOTE_WRITE);
	ret = ret ? ret : fi_mr_bind(ro, &g_at.rocntr->fid, FI_REMOTE_READ);
	ret = ret ? ret : at_cntr_open(&g_at.wocntr);
	ret = ret ? ret : fi_mr_bind(g_at.wo.mr, &g_at.wocntr->fid,
				     FI_REMOTE_WRITE);
	if (ret)
		return ret;
	ft_check(fi_mr_bind(rw, &g_at.rocntr->fid, FI_REMOTE_READ) ==
		 -FI_EBUSY, "atomic_region_bind_second",
		 "a second counter on one region taken");
	if (g_at.fab.info->domain_attr->mr_mode & FI_MR_RMA_EVENT) {
		ret = fi_mr_enable(rw);
		ret = ret ? ret : fi_mr_enable(ro);
		ret = ret ? ret : fi_mr_enable(g_at.wo.mr);
	}
	return ret;
}

static int at_keys(void)
{
	struct fid_domain *d = g_at.fab.domain;
	ssize_t len;
	int ret;

	if (g_at.rank) {
		len = ft_rdm_lookup(g_at.dir, "keys", &g_at.keys,
				    sizeof(g_at.keys), 3 * ft_opts.timeout_ms);
		return len == sizeof(g_at.keys) ? 0 : -FI_EOTHER;
	}
	ret = ft_buf_alloc(d, AT_REGION, FI_REMOTE_READ | FI_REMOTE_WRITE,
			   &g_at.rw);
	ret = ret ? ret : ft_buf_alloc(d, AT_RO_LEN, FI_REMOTE_READ, &g_at.ro);
	ret = ret ? ret : ft_buf_alloc(d, 4096, FI_REMOTE_READ |
				       FI_REMOTE_WRITE, &g_at.wo);
	if (ret)
		return ret;
	*(uint64_t *)g_at.ro.ptr = 0x5eed;
	if (g_at.events) {
		ret = at_region_cntrs();
		if (ret)
			return ret;
	}
	g_at.keys = (struct at_keys) {
		.addr = at_raddr(g_at.rw.ptr), .key = fi_mr_key(g_at.rw.mr),
		.len = g_at.rw.len, .ro_addr = at_raddr(g_at.ro.ptr),
		.ro_key = fi_mr_key(g_at.ro.mr),
		.wo_addr = at_raddr(g_at.wo.ptr), .wo_key = fi_mr_key(g_at.wo.mr),
	};
	return ft_rdm_publish(g_at.dir, "keys", &g_at.keys, sizeof(g_at.keys));
}

static int at_setup(void)
{
	struct fi_info *hints = ft_rdm_hints(FI_MSG | FI_TAGGED | FI_ATOMIC |
					     FI_RMA |
					     (g_at.events ? FI_RMA_EVENT : 0),
					     FI_THREAD_UNSPEC);
	int ret;

	if (hints && g_at.events)	/* regions bound to counters */
		hints->domain_attr->mr_mode |= FI_MR_RMA_EVENT;
	if (mkdir(g_at.dir, 0755) && errno != EEXIST)
		ft_info("mkdir %s: %s", g_at.dir, strerror(errno));
	ret = hints ? ft_rdm_fab_open(&g_at.fab, hints, true) : -FI_ENOMEM;
	fi_freeinfo(hints);
	ret = ret ? ret : at_ep_open();
	ret = ret ? ret : ft_buf_alloc(g_at.fab.domain, 4096,
				       FI_READ | FI_WRITE, &g_at.local);
	ret = ret ? ret : at_names();
	ret = ret ? ret : at_keys();
	return ft_check(!ret, "atomic_setup", "%s", fi_strerror(-ret)) ? 0 : -1;
}

int main(int argc, char **argv)
{
	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.timeout_ms = FT_RDM_DEADLINE_MS;
	ft_set_extra_opts("n:i:D:E", " -n N         processes (default 3, "
			  "at least 2)\n -i RANK      this process (0..N-1)\n"
			  " -D DIR       folder for names and keys (default "
			  "/tmp/rivet-atomic)\n"
			  " -E           FI_RMA_EVENT: rank 0 counts what "
			  "reaches it\n", at_opt);
	ft_parse_opts(argc, argv, "RDM atomics between N processes.", false);
	if (g_at.n < 2 || g_at.n > AT_MAX || g_at.rank < 0 ||
	    g_at.rank >= g_at.n) {
		fprintf(stderr, "need -n 2..%d and -i 0..N-1\n", AT_MAX);
		return 2;
	}
	if (!at_setup()) {
		if (g_at.rank == 1) {
			at_sweep();
			if (g_at.events) {
				at_rma();
				at_write_counted();
				ft_rdm_publish(g_at.dir, "wo", g_at.wo_n,
					       sizeof(g_at.wo_n));
			}
			at_errors();
			at_lock();
			at_counters();
		}
		if (!at_barrier("swept") && g_at.rank)
			at_hammer();
		if (!at_barrier("hammered") && g_at.rank == 1)
			at_hammer_check();
		if (g_at.rank) {	/* what reached rank 0, for -E */
			uint64_t c[2] = { g_at.writes, g_at.reads };
			char key[32];

			snprintf(key, sizeof(key), "counts.%d", g_at.rank);
			ft_rdm_publish(g_at.dir, key, c, sizeof(c));
		}
		if (!g_at.rank)	/* the memory itself, not through rivet */
			ft_check(*(uint64_t *)((uint8_t *)g_at.rw.ptr + AT_C) ==
				 (uint64_t)(g_at.n - 1) * AT_HAMMER,
				 "atomic_target_memory", "%llu",
				 (unsigned long long)*(uint64_t *)
				 ((uint8_t *)g_at.rw.ptr + AT_C));
		if (!g_at.rank && g_at.events)
			at_events_check();
		at_barrier("done");
	}
	if (g_at.cq)
		ft_rdm_watch(g_at.cq, false);
	ft_close_fid(g_at.ep ? &g_at.ep->fid : NULL, "ep");
	ft_close_fid(g_at.rcntr ? &g_at.rcntr->fid : NULL, "cntr");
	ft_close_fid(g_at.wcntr ? &g_at.wcntr->fid : NULL, "cntr");
	ft_close_fid(g_at.rrcntr ? &g_at.rrcntr->fid : NULL, "cntr");
	ft_close_fid(g_at.rwcntr ? &g_at.rwcntr->fid : NULL, "cntr");
	ft_close_fid(g_at.cq ? &g_at.cq->fid : NULL, "cq");
	ft_close_fid(g_at.rxcq ? &g_at.rxcq->fid : NULL, "cq");
	ft_close_fid(g_at.av ? &g_at.av->fid : NULL, "av");
	ft_buf_free(&g_at.rw);
	ft_buf_free(&g_at.ro);
	ft_buf_free(&g_at.wo);
	ft_buf_free(&g_at.local);
	/* after the regions they count for */
	ft_close_fid(g_at.mrcntr ? &g_at.mrcntr->fid : NULL, "cntr");
	ft_close_fid(g_at.rocntr ? &g_at.rocntr->fid : NULL, "cntr");
	ft_close_fid(g_at.wocntr ? &g_at.wocntr->fid : NULL, "cntr");
	ft_fab_close(&g_at.fab);
	return ft_summary();
}
