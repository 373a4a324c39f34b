/* SPDX-License-Identifier: MIT */
/*
 * The completion queue (resource/rivet_cq.c, rivet_cq_read.c,
 * rivet_cq_wait.c) on scripted verbs (test/mock_verbs_cq.c): work
 * completions in any order of success and failure, a failing poll, and
 * verbs calls that fail while a CQ is made, grown or closed: what the VM
 * cannot make a device do on demand.
 */
#include <criterion/criterion.h>

#include "mock_verbs.h"

static struct rivet_fabric g_fab;
static struct rivet_dev g_dev;
static struct rivet_domain g_dom;
static struct rivet_wr_ring g_ring;
static struct rivet_wr_ctx g_ctx[8];

static void setup(void)
{
	size_t i;

	mock_verbs_reset();
	g_fab = (struct rivet_fabric) {
		.api_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
	};
	g_dev = (struct rivet_dev) { .ctx = &g_mock.ctx };
	g_dev.attr.max_cqe = 64;
	g_dom = (struct rivet_domain) {
		.fabric = &g_fab, .dev = &g_dev,
		.threading = FI_THREAD_SAFE,
	};
	g_ring = (struct rivet_wr_ring) { .ctxs = g_ctx, .size = 8 };
	for (i = 0; i < 8; i++)
		g_ctx[i] = (struct rivet_wr_ctx) {
			.ring = &g_ring, .context = &g_ctx[i],
			.flags = FI_SEND | FI_MSG, .report = true,
		};
}

static struct fid_cq *cq_open(enum fi_cq_format format)
{
	struct fi_cq_attr attr = {
		.size = 16, .format = format, .wait_obj = FI_WAIT_NONE,
	};
	struct fid_cq *cq = NULL;

	cr_assert_eq(rivet_cq_open(&g_dom.domain_fid, &attr, &cq, NULL), 0);
	/* an MSG endpoint bound: the CQ polls its verbs CQ */
	atomic_fetch_add(&to_rcq(cq)->msg_eps, 1);
	return cq;
}

static void cq_close(struct fid_cq *cq)
{
	atomic_fetch_sub(&to_rcq(cq)->msg_eps, 1);
	cr_expect_eq(fi_close(&cq->fid), 0);
	cr_expect_eq(g_mock.cqs, 0, "verbs CQs left: %d", g_mock.cqs);
	cr_expect_eq(g_mock.channels, 0, "channels left: %d",
		     g_mock.channels);
}

static uint64_t wr(int i)
{
	return (uint64_t)(uintptr_t)&g_ctx[i];
}

TestSuite(cq, .init = setup);

Test(cq, successes_in_order)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_CONTEXT);
	struct fi_cq_entry e[4];

	cr_expect_eq(fi_cq_read(cq, e, 4), -FI_EAGAIN);
	mock_wc(wr(0), IBV_WC_SUCCESS, IBV_WC_SEND, 8);
	mock_wc(wr(1), IBV_WC_SUCCESS, IBV_WC_SEND, 8);
	cr_assert_eq(fi_cq_read(cq, e, 4), 2);
	cr_expect_eq(e[0].op_context, &g_ctx[0]);
	cr_expect_eq(e[1].op_context, &g_ctx[1]);
	/* each retired its ring slot */
	cr_expect_eq(atomic_load(&g_ring.head), 2);
	cq_close(cq);
}

/* fi_cq(3): an error entry is handed out in its place among the
 * successes: the reads stop at it (-FI_EAVAIL), fi_cq_readerr takes it,
 * and what came after follows. */
Test(cq, an_error_keeps_its_place)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_CONTEXT);
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_entry e[4];
	char buf[128];

	mock_wc(wr(0), IBV_WC_SUCCESS, IBV_WC_SEND, 8);
	mock_wc(wr(1), IBV_WC_REM_ACCESS_ERR, IBV_WC_SEND, 0);
	mock_wc(wr(2), IBV_WC_SUCCESS, IBV_WC_SEND, 8);
	cr_assert_eq(fi_cq_read(cq, e, 4), 1);
	cr_expect_eq(e[0].op_context, &g_ctx[0]);
	cr_expect_eq(fi_cq_read(cq, e, 4), -FI_EAVAIL);
	cr_assert_eq(fi_cq_readerr(cq, &err, 0), 1);
	cr_expect_eq(err.op_context, &g_ctx[1]);
	cr_expect_eq(err.err, FI_EACCES, "err %d", err.err);
	cr_expect_eq(err.prov_errno, IBV_WC_REM_ACCESS_ERR);
	cr_expect_not_null(fi_cq_strerror(cq, err.prov_errno, err.err_data,
					  buf, sizeof(buf)));
	cr_assert_eq(fi_cq_read(cq, e, 4), 1);
	cr_expect_eq(e[0].op_context, &g_ctx[2]);
	cr_expect_eq(fi_cq_read(cq, e, 4), -FI_EAGAIN);
	cq_close(cq);
}

/* A flushed work request (its QP went to the error state) is an error
 * entry too, never a success, and never lost. */
Test(cq, a_flush_is_an_error_entry)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_MSG);
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_msg_entry e[2];

	mock_wc(wr(3), IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND, 0);
	cr_expect_eq(fi_cq_read(cq, e, 2), -FI_EAVAIL);
	cr_assert_eq(fi_cq_readerr(cq, &err, 0), 1);
	cr_expect_eq(err.op_context, &g_ctx[3]);
	cr_expect_eq(err.err, FI_ECANCELED, "err %d", err.err);
	cr_expect_eq(err.flags & (FI_SEND | FI_MSG), FI_SEND | FI_MSG);
	cr_expect_eq(atomic_load(&g_ring.head), 1);
	cr_expect_eq(fi_cq_read(cq, e, 2), -FI_EAGAIN);
	cq_close(cq);
}

/* More completions than one read takes: none lost, none twice. */
Test(cq, a_backlog_drains_in_order)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_CONTEXT);
	struct fi_cq_entry e[3];
	size_t got = 0;
	ssize_t n;
	int i;

	for (i = 0; i < 40; i++)
		mock_wc(wr(i % 8), IBV_WC_SUCCESS, IBV_WC_SEND, 8);
	while ((n = fi_cq_read(cq, e, 3)) > 0) {
		for (i = 0; i < n; i++)
			cr_expect_eq(e[i].op_context, &g_ctx[(got + i) % 8]);
		got += n;
	}
	cr_expect_eq(n, -FI_EAGAIN);
	cr_expect_eq(got, 40);
	cq_close(cq);
}

/* A device whose poll fails: the read says so (-FI_EIO), no entry is
 * made up, and the CQ works again when the device does. */
Test(cq, a_failing_poll_is_an_error_not_a_hang)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_CONTEXT);
	struct fi_cq_entry e[2];

	g_mock.poll_fail = true;
	cr_expect_eq(fi_cq_read(cq, e, 2), -FI_EIO);
	g_mock.poll_fail = false;
	mock_wc(wr(0), IBV_WC_SUCCESS, IBV_WC_SEND, 8);
	cr_expect_eq(fi_cq_read(cq, e, 2), 1);
	cq_close(cq);
}

/* fi_cq_open when the device refuses the verbs CQ or its channel: the
 * device's errno as FI_E*, and nothing left behind. */
Test(cq, open_fails_cleanly)
{
	struct fi_cq_attr attr = { .size = 16, .wait_obj = FI_WAIT_FD };
	struct fid_cq *cq = NULL;

	g_mock.cq_errno = ENOMEM;
	cr_expect_eq(rivet_cq_open(&g_dom.domain_fid, &attr, &cq, NULL),
		     -FI_ENOMEM);
	cr_expect_null(cq);
	cr_expect_eq(g_mock.channels, 0);
	g_mock.cq_errno = 0;
	g_mock.channel_errno = EMFILE;
	cr_expect_lt(rivet_cq_open(&g_dom.domain_fid, &attr, &cq, NULL), 0);
	cr_expect_null(cq);
	cr_expect_eq(g_mock.cqs, 0);
	cr_expect_eq(g_mock.channels, 0);
}

/* Growing the verbs CQ for a shared receive context: a refusal is the
 * device's errno, the CQ keeps its size and works on. */
Test(cq, grow_refused)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_CONTEXT);
	struct rivet_cq *rcq = to_rcq(cq);
	int cqe = rcq->ibv_cq->cqe;
	struct fi_cq_entry e;

	g_mock.resize_errno = EINVAL;
	cr_expect_eq(rivet_cq_grow(rcq, 32), -FI_EINVAL);
	cr_expect_eq(rcq->ibv_cq->cqe, cqe);
	g_mock.resize_errno = 0;
	cr_expect_eq(rivet_cq_grow(rcq, 32), 0);
	cr_expect_eq(rcq->ibv_cq->cqe, cqe + 32);
	mock_wc(wr(0), IBV_WC_SUCCESS, IBV_WC_SEND, 8);
	cr_expect_eq(fi_cq_read(cq, &e, 1), 1);
	cq_close(cq);
}

/* fi_close while the device will not destroy the verbs CQ (a QP still
 * on it): -FI_EBUSY from EBUSY, and the CQ still usable and closable. */
Test(cq, close_refused_by_the_device)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_CONTEXT);
	struct fi_cq_entry e;

	atomic_fetch_sub(&to_rcq(cq)->msg_eps, 1);
	g_mock.destroy_errno = EBUSY;
	cr_expect_eq(fi_close(&cq->fid), -FI_EBUSY);
	g_mock.destroy_errno = 0;
	atomic_fetch_add(&to_rcq(cq)->msg_eps, 1);
	mock_wc(wr(0), IBV_WC_SUCCESS, IBV_WC_SEND, 8);
	cr_expect_eq(fi_cq_read(cq, &e, 1), 1);
	cq_close(cq);
}
