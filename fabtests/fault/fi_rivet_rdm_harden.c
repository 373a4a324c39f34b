// SPDX-License-Identifier: MIT
/*
 * Careless and unlucky users of an RDM endpoint: arguments fi_msg(3),
 * fi_tagged(3), fi_rma(3) and fi_atomic(3) make invalid, a claim without a
 * context or claimed twice, a region closed under a rendezvous, a region
 * registered for sends only, a receive whose buffer cannot be used under
 * FI_DELIVERY_COMPLETE, and an RMA with a bad key that must not take the
 * other traffic between the two endpoints with it.  One process, two
 * endpoints; each case in a child of its own (a crash fails one case).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rdma/fi_atomic.h>

#include "common/ft_rdm.h"

#define H_TAG 0x4841524400000000ULL	/* "HARD" */
#define H_BIG (64 * 1024)		/* rendezvous-sized */
#define H_WAIT_MS 15000

struct h_env {
	struct ft_rdm_pair p;	/* a and b, each in the other's AV */
	struct ft_buf abuf, bbuf;
};

static int h_open(struct h_env *env, uint64_t access)
{
	int ret;

	memset(env, 0, sizeof(*env));
	ret = ft_rdm_pair_open(&env->p, FT_RDM_CAPS | FI_RMA | FI_ATOMIC);
	ret = ret ? ret : ft_buf_alloc(env->p.fab.domain, 2 * H_BIG, access,
				       &env->abuf);
	ret = ret ? ret : ft_buf_alloc(env->p.fab.domain, 2 * H_BIG,
				       FI_SEND | FI_RECV | FI_READ | FI_WRITE |
				       FI_REMOTE_READ | FI_REMOTE_WRITE,
				       &env->bbuf);
	if (ret)
		ft_fail("harden_setup", "%s", fi_strerror(-ret));
	return ret;
}

static void h_close(struct h_env *env)
{
	ft_buf_free(&env->abuf);
	ft_buf_free(&env->bbuf);
	ft_rdm_pair_close(&env->p);
}

/* The remote address of byte off of b's buffer, as fi_rma(3) wants it. */
static uint64_t h_raddr(struct h_env *env, size_t off)
{
	return (env->p.fab.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
	       (uintptr_t)env->bbuf.ptr + off : off;
}

/* An error completion must say what happened: a prov_errno, and words
 * that are not "success". */
static void h_check_words(const char *name, const struct ft_comp *c)
{
	ft_check(c->prov_errno != 0 && !strstr(c->errstr, "uccess"), name,
		 "error entry without a reason: prov_errno %d, \"%s\"",
		 c->prov_errno, c->errstr);
}

static int h_wait(const char *name, struct fid_cq *cq, void *ctx,
		  struct ft_comp *c)
{
	int ret = ft_rdm_wait(cq, ctx, c, H_WAIT_MS);

	if (ret)
		ft_fail(name, "no completion within %d ms (%s)", H_WAIT_MS,
			fi_strerror(-ret));
	return ret;
}

/* A tagged message from one endpoint to the other, received and checked:
 * the exchange a failure before must not have broken. */
static int h_exchange(const char *name, struct ft_rdm_ep *from,
		      fi_addr_t dest, struct ft_rdm_ep *to, uint8_t *sbuf,
		      void *sdesc, uint8_t *rbuf, void *rdesc, size_t len,
		      uint64_t tag)
{
	struct fi_context2 sctx, rctx;
	struct ft_comp c;
	size_t i;
	ssize_t ret;

	for (i = 0; i < len; i++)
		sbuf[i] = (uint8_t)(i * 7 + tag);
	memset(rbuf, 0, len);
	ret = fi_trecv(to->ep, rbuf, len, rdesc, FI_ADDR_UNSPEC, tag, 0,
		       &rctx);
	if (!ft_check(!ret, name, "fi_trecv: %zd", ret))
		return -1;
	ret = FT_RDM_POST(fi_tsend(from->ep, sbuf, len, sdesc, dest, tag,
				   &sctx));
	if (!ft_check(!ret, name, "fi_tsend: %zd", ret))
		return -1;
	if (h_wait(name, from->cq, &sctx, &c) ||
	    !ft_check(!c.err, name, "send: %s", ft_comp_str(&c)))
		return -1;
	if (h_wait(name, to->cq, &rctx, &c) ||
	    !ft_check(!c.err && c.len == len, name, "receive: %s",
		      ft_comp_str(&c)))
		return -1;
	for (i = 0; i < len; i++)
		if (rbuf[i] != (uint8_t)(i * 7 + tag))
			break;
	return ft_check(i == len, name, "byte %zu of %zu wrong", i, len) ?
	       0 : -1;
}

/* ---- bad arguments ---------------------------------------------------- */

static void h_expect_einval(const char *name, ssize_t ret)
{
	ft_check(ret == -FI_EINVAL, name, "returned %zd (%s), want -FI_EINVAL",
		 ret, fi_strerror((int)-ret));
}

static void h_bad_msg(struct h_env *env)
{
	struct fid_ep *ep = env->p.a.ep;
	struct fi_context2 ctx;
	struct fi_msg msg = { .msg_iov = NULL, .iov_count = 1,
			      .addr = env->p.a2b, .context = &ctx };
	struct fi_msg_tagged tmsg = { .msg_iov = NULL, .iov_count = 1,
				      .addr = env->p.a2b, .context = &ctx };
	struct iovec wrap[2] = { { env->abuf.ptr, SIZE_MAX },
				 { env->abuf.ptr, 2 } };
	void *descs[2] = { env->abuf.desc, env->abuf.desc };

	h_expect_einval("harden_sendmsg_null_iov", fi_sendmsg(ep, &msg, 0));
	h_expect_einval("harden_recvmsg_null_iov", fi_recvmsg(ep, &msg, 0));
	h_expect_einval("harden_tsendmsg_null_iov",
			fi_tsendmsg(ep, &tmsg, 0));
	h_expect_einval("harden_trecvmsg_null_iov",
			fi_trecvmsg(ep, &tmsg, 0));
	h_expect_einval("harden_sendmsg_null_msg", fi_sendmsg(ep, NULL, 0));
	h_expect_einval("harden_sendv_wrap",
			fi_sendv(ep, wrap, descs, 2, env->p.a2b, &ctx));
	h_expect_einval("harden_tsendv_wrap",
			fi_tsendv(ep, wrap, descs, 2, env->p.a2b, 1, &ctx));
	h_expect_einval("harden_recvv_wrap",
			fi_recvv(ep, wrap, descs, 2, FI_ADDR_UNSPEC, &ctx));
	h_expect_einval("harden_recv_null_buf",
			fi_recv(ep, NULL, 8, NULL, FI_ADDR_UNSPEC, &ctx));
	h_expect_einval("harden_trecv_null_buf",
			fi_trecv(ep, NULL, 8, NULL, FI_ADDR_UNSPEC, 1, 0,
				 &ctx));
	h_expect_einval("harden_send_null_buf",
			fi_send(ep, NULL, 8, NULL, env->p.a2b, &ctx));
	h_expect_einval("harden_inject_null_buf",
			fi_inject(ep, NULL, 8, env->p.a2b));
	h_expect_einval("harden_tinject_null_buf",
			fi_tinject(ep, NULL, 8, env->p.a2b, 1));
}

static void h_bad_rma(struct h_env *env)
{
	struct fid_ep *ep = env->p.a.ep;
	uint64_t key = fi_mr_key(env->bbuf.mr), raddr = h_raddr(env, 0);
	size_t n = env->p.fab.info->tx_attr->rma_iov_limit + 8;
	struct iovec wrap[2] = { { env->abuf.ptr, SIZE_MAX },
				 { env->abuf.ptr, 2 } };
	struct iovec *many = calloc(n, sizeof(*many));
	void *descs[2] = { env->abuf.desc, env->abuf.desc };
	void **mdescs = calloc(n, sizeof(*mdescs));
	struct fi_context2 ctx;
	size_t i;

	h_expect_einval("harden_read_null_buf",
			fi_read(ep, NULL, 8, NULL, env->p.a2b, raddr, key,
				&ctx));
	h_expect_einval("harden_write_null_buf",
			fi_write(ep, NULL, 8, NULL, env->p.a2b, raddr, key,
				 &ctx));
	h_expect_einval("harden_writev_wrap",
			fi_writev(ep, wrap, descs, 2, env->p.a2b, raddr, key,
				  &ctx));
	h_expect_einval("harden_readv_wrap",
			fi_readv(ep, wrap, descs, 2, env->p.a2b, raddr, key,
				 &ctx));
	h_expect_einval("harden_readmsg_null_msg", fi_readmsg(ep, NULL, 0));
	if (many && mdescs) {
		for (i = 0; i < n; i++) {
			many[i] = (struct iovec) {
				(uint8_t *)env->abuf.ptr + i * 8, 8 };
			mdescs[i] = env->abuf.desc;
		}
		n = env->p.fab.info->tx_attr->iov_limit + 1;
		h_expect_einval("harden_writev_iov_limit",
				fi_writev(ep, many, mdescs, n, env->p.a2b, raddr,
					  key, &ctx));
	}
	free(many);
	free(mdescs);
}

static void h_bad_atomic(struct h_env *env)
{
	struct fid_ep *ep = env->p.a.ep;
	uint64_t key = fi_mr_key(env->bbuf.mr), raddr = h_raddr(env, 0);
	uint64_t *v = env->abuf.ptr;
	struct fi_context2 ctx;

	h_expect_einval("harden_atomic_null_buf",
			fi_atomic(ep, NULL, 1, NULL, env->p.a2b, raddr, key,
				  FI_UINT64, FI_SUM, &ctx));
	h_expect_einval("harden_fetch_atomic_null_result",
			fi_fetch_atomic(ep, v, 1, NULL, NULL, NULL, env->p.a2b,
					raddr, key, FI_UINT64, FI_SUM, &ctx));
	h_expect_einval("harden_compare_atomic_null_compare",
			fi_compare_atomic(ep, v, 1, NULL, NULL, NULL, v + 1,
					  NULL, env->p.a2b, raddr, key, FI_UINT64,
					  FI_CSWAP, &ctx));
	h_expect_einval("harden_inject_atomic_null_buf",
			fi_inject_atomic(ep, NULL, 1, env->p.a2b, raddr, key,
					 FI_UINT64, FI_SUM));
}

static void h_bad_args_child(void)
{
	struct h_env env;

	if (!h_open(&env, FI_SEND | FI_RECV | FI_READ | FI_WRITE)) {
		h_bad_msg(&env);
		h_bad_rma(&env);
		h_bad_atomic(&env);
		/* nothing was started by any of them */
		ft_check(ft_rdm_drain(env.p.a.cq, 200) == 0, "harden_bad_quiet",
			 "a refused call left a completion");
	}
	h_close(&env);
}

/* ---- FI_CLAIM ----------------------------------------------------------- */

static void h_claim_child(void)
{
	const char *name = "harden_claim";
	struct fi_context2 pctx, cctx, sctx;
	struct iovec iov;
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1,
				     .addr = FI_ADDR_UNSPEC,
				     .tag = H_TAG | 1 };
	struct ft_comp c;
	struct h_env env;
	ssize_t ret;
	int tries;

	if (h_open(&env, FI_SEND | FI_RECV))
		goto out;
	iov = (struct iovec) { env.bbuf.ptr, 64 };
	ret = FT_RDM_POST(fi_tsend(env.p.a.ep, env.abuf.ptr, 64, env.abuf.desc,
				   env.p.a2b, H_TAG | 1, &sctx));
	if (!ft_check(!ret, name, "fi_tsend: %zd", ret) ||
	    h_wait(name, env.p.a.cq, &sctx, &c))
		goto out;
	/* peek until the message is there */
	for (tries = 0; tries < 200; tries++) {
		msg.context = &pctx;
		ret = fi_trecvmsg(env.p.b.ep, &msg, FI_PEEK);
		if (ret || h_wait(name, env.p.b.cq, &pctx, &c))
			goto out;
		if (!c.err)
			break;
	}
	/* a claim without a context: refused, and no completion */
	msg.context = NULL;
	h_expect_einval("harden_claim_null_ctx",
			fi_trecvmsg(env.p.b.ep, &msg, FI_PEEK | FI_CLAIM));
	ft_check(ft_rdm_drain(env.p.b.cq, 200) == 0, "harden_claim_null_ctx",
		 "the refused peek wrote a completion");
	msg.context = &cctx;
	ret = fi_trecvmsg(env.p.b.ep, &msg, FI_PEEK | FI_CLAIM);
	if (!ft_check(!ret, name, "peek+claim: %zd", ret) ||
	    h_wait(name, env.p.b.cq, &cctx, &c) ||
	    !ft_check(!c.err, name, "peek+claim: %s", ft_comp_str(&c)))
		goto out;
	ret = fi_trecvmsg(env.p.b.ep, &msg, FI_CLAIM);
	if (!ft_check(!ret, name, "claim: %zd", ret) ||
	    h_wait(name, env.p.b.cq, &cctx, &c) ||
	    !ft_check(!c.err && c.len == 64, name, "claim: %s",
		      ft_comp_str(&c)))
		goto out;
	/* the same message claimed again: refused, not a crash */
	h_expect_einval("harden_claim_twice",
			fi_trecvmsg(env.p.b.ep, &msg, FI_CLAIM));
	ft_ok(name);
out:
	h_close(&env);
}

/* ---- regions and rendezvous -------------------------------------------- */

/* A region the application lets peers read is held by a rendezvous from
 * it: fi_close says -FI_EBUSY until the send is done, then closes. */
static void h_mr_busy_child(void)
{
	const char *name = "harden_mr_close_busy";
	struct fi_context2 sctx, rctx;
	struct ft_comp c;
	struct h_env env;
	ssize_t ret;
	int i;

	if (h_open(&env, FI_SEND | FI_RECV | FI_REMOTE_READ))
		goto out;
	ret = FT_RDM_POST(fi_tsend(env.p.a.ep, env.abuf.ptr, H_BIG,
				   env.abuf.desc, env.p.a2b, H_TAG | 2, &sctx));
	if (!ft_check(!ret, name, "fi_tsend: %zd", ret))
		goto out;
	for (i = 0; i < 50; i++)	/* the RTS goes out */
		ft_rdm_progress();
	ret = fi_close(&env.abuf.mr->fid);
	if (!ft_check(ret == -FI_EBUSY, name, "fi_close during the "
		      "rendezvous: %zd (want -FI_EBUSY)", ret)) {
		if (!ret)
			env.abuf.mr = NULL;
		goto out;
	}
	ret = fi_trecv(env.p.b.ep, env.bbuf.ptr, H_BIG, env.bbuf.desc,
		       FI_ADDR_UNSPEC, H_TAG | 2, 0, &rctx);
	if (!ft_check(!ret, name, "fi_trecv: %zd", ret) ||
	    h_wait(name, env.p.b.cq, &rctx, &c) ||
	    !ft_check(!c.err, name, "receive: %s", ft_comp_str(&c)) ||
	    h_wait(name, env.p.a.cq, &sctx, &c) ||
	    !ft_check(!c.err, name, "send: %s", ft_comp_str(&c)))
		goto out;
	ret = fi_close(&env.abuf.mr->fid);
	if (ft_check(!ret, name, "fi_close after: %zd", ret)) {
		env.abuf.mr = NULL;
		ft_ok(name);
	}
out:
	h_close(&env);
}

/* A region registered for sends only: a rendezvous from it works, and
 * the region is not readable by the peer, then or afterwards; the failed
 * read leaves the two endpoints able to talk. */
static void h_send_only_child(void)
{
	const char *name = "harden_send_only_region";
	uint64_t raddr, key;
	struct fi_context2 ctx;
	struct ft_comp c;
	struct h_env env;
	ssize_t ret;

	if (h_open(&env, FI_SEND))
		goto out;
	if (h_exchange(name, &env.p.a, env.p.a2b, &env.p.b, env.abuf.ptr,
		       env.abuf.desc, env.bbuf.ptr, env.bbuf.desc, H_BIG,
		       H_TAG | 3))
		goto out;
	key = fi_mr_key(env.abuf.mr);
	raddr = (env.p.fab.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
		(uintptr_t)env.abuf.ptr : 0;
	ret = FT_RDM_POST(fi_read(env.p.b.ep, env.bbuf.ptr, 64, env.bbuf.desc,
				  env.p.b2a, raddr, key, &ctx));
	if (!ret) {
		if (h_wait(name, env.p.b.cq, &ctx, &c))
			goto out;
		if (!ft_check(c.err != 0, name, "the peer read a region "
			      "registered for FI_SEND only"))
			goto out;
		h_check_words("harden_send_only_words", &c);
	}
	if (!h_exchange("harden_after_refused_read", &env.p.b, env.p.b2a, &env.p.a,
			(uint8_t *)env.bbuf.ptr + H_BIG,
			env.bbuf.desc, (uint8_t *)env.abuf.ptr + H_BIG,
			env.abuf.desc, 100, H_TAG | 4))
		ft_ok(name);
out:
	h_close(&env);
}

/* The receive's buffer cannot take data (read-only memory): an
 * FI_DELIVERY_COMPLETE send must not be reported as delivered. */
static void h_dc_fail_child(void)
{
	const char *name = "harden_delivery_complete_failed";
	struct fi_context2 sctx, rctx;
	struct iovec iov;
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1,
				     .tag = H_TAG | 5, .context = &sctx };
	struct ft_comp c;
	struct h_env env;
	void *ro = MAP_FAILED;
	ssize_t ret;

	if (h_open(&env, FI_SEND | FI_RECV))
		goto out;
	ro = mmap(NULL, H_BIG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!ft_check(ro != MAP_FAILED, name, "mmap"))
		goto out;
	ret = fi_trecv(env.p.b.ep, ro, H_BIG, NULL, FI_ADDR_UNSPEC, H_TAG | 5,
		       0, &rctx);
	if (!ft_check(!ret, name, "fi_trecv: %zd", ret))
		goto out;
	iov = (struct iovec) { env.abuf.ptr, H_BIG };
	msg.desc = &env.abuf.desc;
	msg.addr = env.p.a2b;
	ret = FT_RDM_POST(fi_tsendmsg(env.p.a.ep, &msg,
				      FI_DELIVERY_COMPLETE | FI_COMPLETION));
	if (!ft_check(!ret, name, "fi_tsendmsg: %zd", ret) ||
	    h_wait(name, env.p.a.cq, &sctx, &c))
		goto out;
	if (!ft_check(c.err != 0, name, "the send was reported delivered "
		      "into a buffer the receiver could not use"))
		goto out;
	h_check_words("harden_dc_send_words", &c);
	if (h_wait(name, env.p.b.cq, &rctx, &c) ||
	    !ft_check(c.err != 0, name, "the receive succeeded: %s",
		      ft_comp_str(&c)))
		goto out;
	h_check_words("harden_dc_recv_words", &c);
	if (!h_exchange("harden_after_failed_delivery", &env.p.a, env.p.a2b,
			&env.p.b, env.abuf.ptr, env.abuf.desc, env.bbuf.ptr,
			env.bbuf.desc, H_BIG, H_TAG | 6))
		ft_ok(name);
out:
	if (ro != MAP_FAILED)
		munmap(ro, H_BIG);
	h_close(&env);
}

/* ---- a bad remote key ---------------------------------------------------- */

/* a reads b (or, atomic, fetch-adds) with a key b never gave out.  a
 * gets FI_EACCES; a receive a posted before stays posted; b's send to a
 * completes, or at worst fails with a reason and the next one gets
 * through; the next exchanges both ways complete with the right data. */
static void h_bad_key_run(const char *name, bool atomic)
{
	uint8_t *abuf, *bbuf;
	struct fi_context2 rctx, sctx, ctx;
	struct ft_comp c;
	struct h_env env;
	ssize_t ret;
	size_t i;

	if (h_open(&env, FI_SEND | FI_RECV | FI_READ | FI_WRITE))
		goto out;
	abuf = env.abuf.ptr;
	bbuf = env.bbuf.ptr;
	/* the connection is up (both directions used) */
	if (h_exchange(name, &env.p.a, env.p.a2b, &env.p.b, abuf, env.abuf.desc,
		       bbuf, env.bbuf.desc, 100, H_TAG | 7) ||
	    h_exchange(name, &env.p.b, env.p.b2a, &env.p.a, bbuf, env.bbuf.desc,
		       abuf + H_BIG, env.abuf.desc, 100, H_TAG | 8))
		goto out;
	memset(abuf + H_BIG, 0, 200);
	ret = fi_trecv(env.p.a.ep, abuf + H_BIG, 200, env.abuf.desc,
		       FI_ADDR_UNSPEC, H_TAG | 9, 0, &rctx);
	if (!ft_check(!ret, name, "fi_trecv: %zd", ret))
		goto out;
	if (atomic)
		ret = FT_RDM_POST(fi_fetch_atomic(env.p.a.ep, abuf, 1, NULL,
						  abuf + 8, NULL, env.p.a2b,
						  h_raddr(&env, 0),
						  fi_mr_key(env.bbuf.mr) ^
						  0x5a5a00, FI_UINT64, FI_SUM,
						  &ctx));
	else
		ret = FT_RDM_POST(fi_read(env.p.a.ep, abuf, 64, env.abuf.desc,
					  env.p.a2b, h_raddr(&env, 0),
					  fi_mr_key(env.bbuf.mr) ^ 0x5a5a00,
					  &ctx));
	if (!ft_check(!ret, name, "posting: %zd", ret) ||
	    h_wait(name, env.p.a.cq, &ctx, &c))
		goto out;
	if (!ft_check(c.err == FI_EACCES, name, "bad key: %s (want "
		      "FI_EACCES)", ft_comp_str(&c)))
		goto out;
	h_check_words("harden_bad_key_words", &c);
	/* b's own send to a, on what was the same connection */
	for (i = 0; i < 200; i++)
		bbuf[i] = (uint8_t)(i + 9);
	ret = FT_RDM_POST(fi_tsend(env.p.b.ep, bbuf, 200, env.bbuf.desc,
				   env.p.b2a, H_TAG | 9, &sctx));
	if (!ft_check(!ret, name, "b's fi_tsend: %zd", ret) ||
	    h_wait(name, env.p.b.cq, &sctx, &c))
		goto out;
	/* at worst an error that says why (the connection it went on died
	 * with a's QP); then the next send gets through */
	if (c.err) {
		h_check_words("harden_bad_key_peer_words", &c);
		ret = FT_RDM_POST(fi_tsend(env.p.b.ep, bbuf, 200, env.bbuf.desc,
					   env.p.b2a, H_TAG | 9, &sctx));
		if (!ft_check(!ret, name, "b's second fi_tsend: %zd", ret) ||
		    h_wait(name, env.p.b.cq, &sctx, &c))
			goto out;
	}
	if (!ft_check(!c.err, name, "b's send after a's bad read: %s",
		      ft_comp_str(&c)) ||
	    h_wait(name, env.p.a.cq, &rctx, &c) ||
	    !ft_check(!c.err && c.len == 200, name, "a's receive posted "
		      "before the bad read: %s", ft_comp_str(&c)))
		goto out;
	for (i = 0; i < 200; i++)
		if (abuf[H_BIG + i] != (uint8_t)(i + 9))
			break;
	if (!ft_check(i == 200, name, "byte %zu of b's message wrong", i))
		goto out;
	if (!h_exchange("harden_after_bad_key", &env.p.a, env.p.a2b, &env.p.b,
			abuf, env.abuf.desc, bbuf, env.bbuf.desc, H_BIG,
			H_TAG | 10) &&
	    !h_exchange("harden_after_bad_key", &env.p.b, env.p.b2a, &env.p.a,
			bbuf, env.bbuf.desc, abuf + H_BIG, env.abuf.desc, 100,
			H_TAG | 11))
		ft_ok(name);
out:
	h_close(&env);
}

/* ---- keys the application picks ---------------------------------------- */

/* Without FI_MR_PROV_KEY the requested key is the region's key, and a key
 * in use is refused with -FI_ENOKEY (fi_mr(3)). */
static void h_user_key_child(void)
{
	const char *name = "harden_mr_requested_key";
	struct fi_info *hints = ft_rdm_hints(FI_MSG | FI_TAGGED,
					     FI_THREAD_UNSPEC);
	struct fid_mr *mr1 = NULL, *mr2 = NULL;
	static uint8_t buf[8192];
	struct ft_fab fab;
	int ret;

	memset(&fab, 0, sizeof(fab));
	hints->domain_attr->mr_mode &= ~FI_MR_PROV_KEY;
	ret = ft_rdm_fab_open(&fab, hints, true);
	fi_freeinfo(hints);
	if (!ft_check(!ret, name, "no domain without FI_MR_PROV_KEY: %s",
		      fi_strerror(-ret)))
		goto out;
	if (fab.info->domain_attr->mr_mode & FI_MR_PROV_KEY) {
		ft_fail(name, "FI_MR_PROV_KEY reported though not allowed");
		goto out;
	}
	ret = fi_mr_reg(fab.domain, buf, 4096, FI_SEND, 0, 42, 0, &mr1,
			NULL);
	if (!ft_check(!ret, name, "fi_mr_reg key 42: %s", fi_strerror(-ret)))
		goto out;
	ft_check(fi_mr_key(mr1) == 42, name, "fi_mr_key %" PRIu64 ", want 42",
		 fi_mr_key(mr1));
	ret = fi_mr_reg(fab.domain, buf + 4096, 4096, FI_SEND, 0, 42, 0, &mr2,
			NULL);
	if (ft_check(ret == -FI_ENOKEY, name, "second region with key 42: "
		     "%d (want -FI_ENOKEY)", ret))
		ft_ok(name);
out:
	if (mr2)
		fi_close(&mr2->fid);
	if (mr1)
		fi_close(&mr1->fid);
	ft_fab_close(&fab);
}

/* ---- objects of another domain or fabric --------------------------------- */

/* fi_endpoint(3): counters and AVs bound to an endpoint are of its
 * domain, an EQ of its fabric. */
static void h_bind_child(void)
{
	const char *name = "harden_bind_foreign";
	struct fi_info *hints = ft_rdm_hints(FT_RDM_CAPS, FI_THREAD_UNSPEC);
	struct fi_cntr_attr cattr = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_av_attr aattr = { .type = FI_AV_TABLE };
	struct fi_eq_attr eattr = { .size = 8 };
	struct fid_cntr *cntr = NULL, *own_cntr = NULL;
	struct fid_av *av = NULL;
	struct fid_eq *eq = NULL, *own_eq = NULL;
	struct fid_ep *ep = NULL;
	struct ft_fab f1, f2;
	int ret;

	memset(&f1, 0, sizeof(f1));
	memset(&f2, 0, sizeof(f2));
	ret = ft_rdm_fab_open(&f1, hints, true);
	ret = ret ? ret : ft_rdm_fab_open(&f2, hints, true);
	fi_freeinfo(hints);
	ret = ret ? ret : fi_endpoint(f1.domain, f1.info, &ep, NULL);
	ret = ret ? ret : fi_cntr_open(f2.domain, &cattr, &cntr, NULL);
	ret = ret ? ret : fi_cntr_open(f1.domain, &cattr, &own_cntr, NULL);
	ret = ret ? ret : fi_av_open(f2.domain, &aattr, &av, NULL);
	ret = ret ? ret : fi_eq_open(f2.fabric, &eattr, &eq, NULL);
	ret = ret ? ret : fi_eq_open(f1.fabric, &eattr, &own_eq, NULL);
	if (!ft_check(!ret, name, "setup: %s", fi_strerror(-ret)))
		goto out;
	h_expect_einval("harden_bind_cntr_other_domain",
			fi_ep_bind(ep, &cntr->fid, FI_SEND));
	h_expect_einval("harden_bind_av_other_domain",
			fi_ep_bind(ep, &av->fid, 0));
	h_expect_einval("harden_bind_eq_other_fabric",
			fi_ep_bind(ep, &eq->fid, 0));
	ret = fi_ep_bind(ep, &own_cntr->fid, FI_SEND);
	ret = ret ? ret : fi_ep_bind(ep, &own_eq->fid, 0);
	if (ft_check(!ret, name, "binding its own objects: %s",
		     fi_strerror(-ret)))
		ft_ok(name);
out:
	if (ep)
		fi_close(&ep->fid);
	if (own_eq)
		fi_close(&own_eq->fid);
	if (eq)
		fi_close(&eq->fid);
	if (av)
		fi_close(&av->fid);
	if (own_cntr)
		fi_close(&own_cntr->fid);
	if (cntr)
		fi_close(&cntr->fid);
	ft_fab_close(&f2);
	ft_fab_close(&f1);
}

static void h_bad_key_child(void)
{
	h_bad_key_run("harden_rma_bad_key", false);
}

/* The same with a verbs atomic (the target's HCA checks the key). */
static void h_bad_key_atomic_child(void)
{
	setenv("FI_RIVET_NATIVE_ATOMICS", "1", 1);
	h_bad_key_run("harden_native_atomic_bad_key", true);
}

int main(int argc, char **argv)
{
	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.timeout_ms = 60000;
	ft_parse_opts(argc, argv, "RDM misuse and failure containment.",
		      false);
	ft_fork_case("harden_bad_args", h_bad_args_child);
	ft_fork_case("harden_claim", h_claim_child);
	ft_fork_case("harden_mr_close_busy", h_mr_busy_child);
	ft_fork_case("harden_send_only_region", h_send_only_child);
	ft_fork_case("harden_delivery_complete_failed", h_dc_fail_child);
	ft_fork_case("harden_rma_bad_key", h_bad_key_child);
	if (ft_opts.prov && !strcmp(ft_opts.prov, "rivet"))
		ft_fork_case("harden_native_atomic_bad_key",
			     h_bad_key_atomic_child);
	ft_fork_case("harden_mr_requested_key", h_user_key_child);
	ft_fork_case("harden_bind_foreign", h_bind_child);
	return ft_summary();
}
