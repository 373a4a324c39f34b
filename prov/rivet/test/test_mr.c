/* SPDX-License-Identifier: MIT */
/*
 * Memory regions (resource/rivet_mr.c) on scripted verbs
 * (test/mock_verbs_mr.c): the rights a registration gets for what
 * fi_mr(3) asked, offset addressing, application keys, the peer-facing
 * lookups, and a device that refuses a registration or its release.
 */
#include <criterion/criterion.h>

#include "mock_verbs.h"
#include "rivet_map.h"

static struct rivet_fabric g_fab;
static struct rivet_dev g_dev;
static struct rivet_domain g_dom;
static struct fi_info *g_info;
static char g_buf[8192];

static void setup_mode(uint64_t mr_mode)
{
	mock_verbs_reset();
	g_fab = (struct rivet_fabric) {
		.api_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
	};
	g_dev = (struct rivet_dev) { .ctx = &g_mock.ctx };
	g_info = fi_allocinfo();
	cr_assert_not_null(g_info);
	g_info->fabric_attr->api_version = g_fab.api_version;
	g_info->caps = FI_RMA | FI_RMA_EVENT;
	g_dom = (struct rivet_domain) {
		.fabric = &g_fab, .dev = &g_dev, .info = g_info,
		.threading = FI_THREAD_SAFE, .mr_mode = mr_mode,
	};
	g_dom.domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	cr_assert_eq(rivet_verbs_pd_alloc(g_dev.ctx, &g_dom.pd), 0);
	g_dom.mr_keys = calloc(1, sizeof(*g_dom.mr_keys));
	rivet_u32_map_construct(g_dom.mr_keys);
	pthread_mutex_init(&g_dom.mr_lock, NULL);
}

static void setup(void)
{
	setup_mode(FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED |
		   FI_MR_LOCAL);
}

static void teardown(void)
{
	cr_expect_eq(g_mock.mrs, 0, "registrations left: %d", g_mock.mrs);
	cr_expect_eq(atomic_load(&g_dom.refcnt), 0);
	rivet_u32_map_destruct(g_dom.mr_keys);
	free(g_dom.mr_keys);
	pthread_mutex_destroy(&g_dom.mr_lock);
	rivet_verbs_pd_dealloc(g_dom.pd);
	fi_freeinfo(g_info);
}

static int reg(void *buf, size_t len, uint64_t access, uint64_t key,
	       struct fid_mr **mr)
{
	/* the domain's fi_ops_mr names rivet_mr_reg */
	return rivet_mr_reg(&g_dom.domain_fid.fid, buf, len, access, 0, key, 0,
			    mr, NULL);
}

TestSuite(mr, .init = setup, .fini = teardown);

/* Exactly the rights asked for (fi_rivet(7): a region exposes what the
 * application allowed, no more). */
Test(mr, rights_as_asked)
{
	static const struct {
		uint64_t access;
		int ibv;
	} t[] = {
		{ FI_SEND, 0 },
		{ FI_WRITE, 0 },
		{ FI_RECV, IBV_ACCESS_LOCAL_WRITE },
		{ FI_READ, IBV_ACCESS_LOCAL_WRITE },
		{ FI_REMOTE_READ, IBV_ACCESS_REMOTE_READ },
		{ FI_REMOTE_WRITE, IBV_ACCESS_LOCAL_WRITE |
		  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC },
		/* access 0: every local use, no peer's */
		{ 0, IBV_ACCESS_LOCAL_WRITE },
	};
	struct fid_mr *mr;
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cr_assert_eq(reg(g_buf, 64, t[i].access, 0, &mr), 0);
		cr_expect_eq(g_mock.last_access, t[i].ibv,
			     "access 0x%" PRIx64 ": ibv 0x%x, want 0x%x",
			     t[i].access, g_mock.last_access, t[i].ibv);
		cr_expect_eq(fi_close(&mr->fid), 0);
	}
}

Test(mr, bad_input)
{
	struct fid_mr *mr = NULL;

	cr_expect_eq(reg(g_buf, 0, FI_SEND, 0, &mr), -FI_EINVAL);
	cr_expect_eq(reg(NULL, 64, FI_SEND, 0, &mr), -FI_EINVAL);
	cr_expect_eq(reg(g_buf, 64, 1ULL << 40, 0, &mr), -FI_EINVAL);
	cr_expect_eq(rivet_mr_reg(&g_dom.domain_fid.fid, g_buf, 64, FI_SEND, 0,
				  0, FI_RMA_EVENT, &mr, NULL), -FI_EBADFLAGS);
	cr_expect_null(mr);
	cr_expect_eq(g_mock.mrs, 0);
}

/* The device refuses: its errno as FI_E*, nothing registered, no
 * reference on the domain. */
Test(mr, refused_by_the_device)
{
	struct fid_mr *mr = NULL;

	g_mock.reg_errno = ENOMEM;
	cr_expect_eq(reg(g_buf, 64, FI_SEND, 0, &mr), -FI_ENOMEM);
	g_mock.reg_errno = EFAULT;
	cr_expect_eq(reg(g_buf, 64, FI_SEND, 0, &mr), -FI_EFAULT);
	cr_expect_null(mr);
}

/* Offset addressing (no FI_MR_VIRT_ADDR): a peer addresses a remotely
 * accessible region from 0, through a second registration at iova 0; a
 * failure of that one leaves nothing registered. */
Test(mr, offset_addressing)
{
	struct fid_mr *mr = NULL;
	struct rivet_mr *r;

	teardown();
	setup_mode(FI_MR_PROV_KEY | FI_MR_ALLOCATED | FI_MR_LOCAL);
	cr_assert_eq(reg(g_buf, 4096, FI_REMOTE_READ, 0, &mr), 0);
	r = mr->mem_desc;
	cr_expect_eq(g_mock.mrs, 2);
	cr_expect_eq(g_mock.last_iova, 0);
	cr_expect_eq(r->iova, 0);
	cr_expect_eq(fi_mr_key(mr), r->remote_mr->rkey);
	cr_expect_eq(fi_close(&mr->fid), 0);
	/* local-only regions need no second registration */
	cr_assert_eq(reg(g_buf, 4096, FI_SEND, 0, &mr), 0);
	cr_expect_eq(g_mock.mrs, 1);
	cr_expect_eq(fi_close(&mr->fid), 0);
	g_mock.reg_iova_errno = ENOMEM;
	mr = NULL;
	cr_expect_eq(reg(g_buf, 4096, FI_REMOTE_WRITE, 0, &mr), -FI_ENOMEM);
	cr_expect_null(mr);
	cr_expect_eq(g_mock.mrs, 0);
}

/* What a peer's RMA event or atomic may name: a live key, inside the
 * region, with the rights it needs (issue 38 A5, A6). */
Test(mr, what_a_peer_may_name)
{
	struct fid_mr *mr;
	struct rivet_mr *r;
	uint64_t base = (uintptr_t)g_buf;
	uint32_t key;

	cr_assert_eq(reg(g_buf, 4096, FI_REMOTE_READ, 0, &mr), 0);
	r = mr->mem_desc;
	key = (uint32_t)fi_mr_key(mr);
	pthread_mutex_lock(&g_dom.mr_lock);
	cr_expect_eq(rivet_mr_remote_locked(&g_dom, key, base, 4096,
					    FI_REMOTE_READ), r);
	cr_expect_eq(rivet_mr_remote_locked(&g_dom, key, base + 4000, 96,
					    FI_REMOTE_READ), r);
	cr_expect_null(rivet_mr_remote_locked(&g_dom, key, base + 4000, 97,
					      FI_REMOTE_READ));
	cr_expect_null(rivet_mr_remote_locked(&g_dom, key, base - 1, 1,
					      FI_REMOTE_READ));
	cr_expect_null(rivet_mr_remote_locked(&g_dom, key, base, 8,
					      FI_REMOTE_WRITE));
	cr_expect_null(rivet_mr_remote_locked(&g_dom, key + 1, base, 8,
					      FI_REMOTE_READ));
	cr_expect_null(rivet_mr_remote_locked(&g_dom, (1ULL << 32) | key,
					      base, 8, FI_REMOTE_READ));
	pthread_mutex_unlock(&g_dom.mr_lock);
	cr_expect_eq(fi_close(&mr->fid), 0);
	/* closed: its key names nothing any more */
	pthread_mutex_lock(&g_dom.mr_lock);
	cr_expect_null(rivet_mr_remote_locked(&g_dom, key, base, 8,
					      FI_REMOTE_READ));
	pthread_mutex_unlock(&g_dom.mr_lock);
}

/* Application keys (no FI_MR_PROV_KEY): honoured, unique (FI_ENOKEY for
 * one in use), 32 bits at most (FI_EKEYREJECTED). */
Test(mr, application_keys)
{
	struct fid_mr *a, *b = NULL;

	teardown();
	setup_mode(FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_LOCAL);
	cr_assert_eq(reg(g_buf, 64, FI_SEND, 7, &a), 0);
	cr_expect_eq(fi_mr_key(a), 7);
	cr_expect_eq(reg(g_buf + 64, 64, FI_SEND, 7, &b), -FI_ENOKEY);
	cr_expect_null(b);
	cr_expect_eq(g_mock.mrs, 1);
	cr_expect_eq(reg(g_buf, 64, FI_SEND, 1ULL << 32, &b),
		     -FI_EKEYREJECTED);
	cr_expect_eq(fi_close(&a->fid), 0);
}

/* fi_close when the device will not release the registration: its
 * errno, and the region still whole (a later fi_close releases it). */
Test(mr, close_refused_by_the_device)
{
	struct fid_mr *mr;

	cr_assert_eq(reg(g_buf, 64, FI_SEND, 0, &mr), 0);
	g_mock.dereg_errno = EBUSY;
	cr_expect_eq(fi_close(&mr->fid), -FI_EBUSY);
	cr_expect_eq(g_mock.mrs, 1);
	g_mock.dereg_errno = 0;
	cr_expect_eq(fi_close(&mr->fid), 0);
}
