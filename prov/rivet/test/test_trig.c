/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of rivet_cntr_trig.c: triggered operations start in the
 * order of their thresholds (equal ones in submission order), not before
 * their counter reaches them, with the arrays they were given copied; a
 * start that finds no room keeps its place; one that fails is reported;
 * an endpoint's waiting operations go with it; bad triggers are refused.
 * The endpoint is a fake whose sendmsg and writemsg record the calls.
 */
#include <criterion/criterion.h>
#include <rdma/fi_trigger.h>

#include "rivet.h"
#include "rivet_cntr.h"

static struct rivet_domain g_dom, g_other;
static struct rivet_cntr g_cntr;
static struct fid_ep g_ep;
static void *g_started[16];	/* contexts, in start order */
static size_t g_nstarted;
static uint8_t g_first_byte[16];	/* *iov[0].iov_base of each */
static int g_answer;		/* what the next start returns */
static int g_answers;		/* ... for this many starts */
static void *g_failed_ctx;
static int g_failed_err;

static ssize_t fake_start(void *context, const struct iovec *iov,
			  uint64_t flags)
{
	cr_assert_not(flags & FI_TRIGGER, "started without FI_TRIGGER");
	if (g_answers) {
		g_answers--;
		return g_answer;
	}
	g_first_byte[g_nstarted] = *(uint8_t *)iov[0].iov_base;
	g_started[g_nstarted++] = context;
	return 0;
}

static ssize_t fake_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			    uint64_t flags)
{
	return fake_start(msg->context, msg->msg_iov, flags);
}

static ssize_t fake_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			     uint64_t flags)
{
	cr_assert_eq(msg->rma_iov_count, 1);
	cr_assert_eq(msg->rma_iov[0].key, 77);
	return fake_start(msg->context, msg->msg_iov, flags);
}

static struct fi_ops_msg g_msg_ops = {
	.size = sizeof(struct fi_ops_msg), .sendmsg = fake_sendmsg,
};
static struct fi_ops_rma g_rma_ops = {
	.size = sizeof(struct fi_ops_rma), .writemsg = fake_writemsg,
};

static void fake_fail(struct fid_ep *ep, void *context, int err)
{
	g_failed_ctx = context;
	g_failed_err = err;
}

static void setup(void)
{
	memset(&g_cntr, 0, sizeof(g_cntr));
	g_cntr.cntr_fid.fid.fclass = FI_CLASS_CNTR;
	g_cntr.domain = &g_dom;
	atomic_init(&g_cntr.value, 0);
	atomic_init(&g_cntr.refcnt, 0);
	g_ep.fid.fclass = FI_CLASS_EP;
	g_ep.msg = &g_msg_ops;
	g_ep.rma = &g_rma_ops;
	rivet_trig_construct(&g_dom);
	g_nstarted = 0;
	g_answers = 0;
	g_failed_ctx = NULL;
}

static void teardown(void)
{
	rivet_trig_drop_ep(&g_dom, &g_ep);
	cr_assert_eq(atomic_load(&g_cntr.refcnt), 0, "counter references");
	rivet_trig_destruct(&g_dom);
}

TestSuite(trig, .init = setup, .fini = teardown);

static struct fi_triggered_context g_tc[8];
static uint8_t g_buf[8];
static struct iovec g_iov[8];

/* A send with trigger i at threshold th, its buffer's first byte i. */
static ssize_t post(int i, size_t th)
{
	struct fi_msg msg = {
		.msg_iov = &g_iov[i], .iov_count = 1, .context = &g_tc[i],
	};

	g_buf[i] = (uint8_t)i;
	g_iov[i] = (struct iovec) { .iov_base = &g_buf[i], .iov_len = 1 };
	g_tc[i].event_type = FI_TRIGGER_THRESHOLD;
	g_tc[i].trigger.threshold.cntr = &g_cntr.cntr_fid;
	g_tc[i].trigger.threshold.threshold = th;
	return rivet_trig_msg(&g_dom, &g_ep, RIVET_TRIG_SEND, &msg,
			      FI_TRIGGER | FI_COMPLETION, fake_fail);
}

static void set(uint64_t v)
{
	atomic_store(&g_cntr.value, v);
	rivet_trig_poll(&g_dom);
}

Test(trig, threshold_then_submission_order)
{
	cr_assert_eq(post(0, 5), 0);
	cr_assert_eq(post(1, 4), 0);
	cr_assert_eq(post(2, 4), 0);
	cr_assert_eq(atomic_load(&g_cntr.refcnt), 3);
	set(3);
	cr_assert_eq(g_nstarted, 0, "nothing before its threshold");
	set(4);
	cr_assert_eq(g_nstarted, 2);
	cr_assert_eq(g_started[0], &g_tc[1]);
	cr_assert_eq(g_started[1], &g_tc[2]);
	set(9);
	cr_assert_eq(g_nstarted, 3);
	cr_assert_eq(g_started[2], &g_tc[0]);
	cr_assert_eq(atomic_load(&g_dom.ntrig), 0);
}

Test(trig, jump_past_several)
{
	cr_assert_eq(post(0, 3), 0);
	cr_assert_eq(post(1, 1), 0);
	cr_assert_eq(post(2, 2), 0);
	set(100);
	cr_assert_eq(g_nstarted, 3);
	cr_assert_eq(g_started[0], &g_tc[1]);
	cr_assert_eq(g_started[1], &g_tc[2]);
	cr_assert_eq(g_started[2], &g_tc[0]);
}

Test(trig, reached_starts_at_once)
{
	atomic_store(&g_cntr.value, 7);
	cr_assert_eq(post(0, 7), 0);
	cr_assert_eq(g_nstarted, 1);
}

Test(trig, arrays_copied)
{
	cr_assert_eq(post(3, 1), 0);
	g_iov[3].iov_base = &g_buf[5];	/* the caller reuses its array */
	set(1);
	cr_assert_eq(g_nstarted, 1);
	cr_assert_eq(g_first_byte[0], 3, "the iov given at the call");
}

Test(trig, no_room_keeps_its_place)
{
	cr_assert_eq(post(0, 1), 0);
	cr_assert_eq(post(1, 2), 0);
	g_answer = -FI_EAGAIN;
	g_answers = 1;
	set(2);
	cr_assert_eq(g_nstarted, 0);
	cr_assert_eq(atomic_load(&g_dom.ntrig), 2);
	rivet_trig_run(&g_dom);
	cr_assert_eq(g_nstarted, 2);
	cr_assert_eq(g_started[0], &g_tc[0]);
	cr_assert_eq(g_started[1], &g_tc[1]);
}

Test(trig, failure_reported)
{
	cr_assert_eq(post(0, 1), 0);
	g_answer = -FI_EINVAL;
	g_answers = 1;
	set(1);
	cr_assert_eq(g_nstarted, 0);
	cr_assert_eq(g_failed_ctx, &g_tc[0]);
	cr_assert_eq(g_failed_err, FI_EINVAL);
	cr_assert_eq(atomic_load(&g_cntr.refcnt), 0);
}

Test(trig, endpoint_close_drops)
{
	cr_assert_eq(post(0, 10), 0);
	rivet_trig_drop_ep(&g_dom, &g_ep);
	cr_assert_eq(atomic_load(&g_cntr.refcnt), 0);
	set(10);
	cr_assert_eq(g_nstarted, 0);
}

Test(trig, rma)
{
	struct fi_rma_iov rma = { .addr = 8, .len = 1, .key = 77 };
	struct fi_msg_rma msg = {
		.msg_iov = &g_iov[0], .iov_count = 1, .rma_iov = &rma,
		.rma_iov_count = 1, .context = &g_tc[0],
	};

	g_buf[0] = 9;
	g_iov[0] = (struct iovec) { .iov_base = &g_buf[0], .iov_len = 1 };
	g_tc[0].event_type = FI_TRIGGER_THRESHOLD;
	g_tc[0].trigger.threshold.cntr = &g_cntr.cntr_fid;
	g_tc[0].trigger.threshold.threshold = 1;
	cr_assert_eq(rivet_trig_rma(&g_dom, &g_ep, RIVET_TRIG_WRITE, &msg,
				    FI_TRIGGER, fake_fail), 0);
	rma.key = 1;	/* copied too */
	set(1);
	cr_assert_eq(g_nstarted, 1);
	cr_assert_eq(g_first_byte[0], 9);
}

Test(trig, bad_triggers)
{
	struct iovec iov[5] = { { g_buf, 1 } };
	struct fi_msg msg = { .msg_iov = iov, .iov_count = 1,
			      .context = &g_tc[0] };

	g_tc[0].event_type = FI_TRIGGER_XPU;
	cr_assert_eq(rivet_trig_msg(&g_dom, &g_ep, RIVET_TRIG_SEND, &msg,
				    FI_TRIGGER, NULL), -FI_ENOSYS);
	g_tc[0].event_type = FI_TRIGGER_THRESHOLD;
	g_tc[0].trigger.threshold.cntr = NULL;
	cr_assert_eq(rivet_trig_msg(&g_dom, &g_ep, RIVET_TRIG_SEND, &msg,
				    FI_TRIGGER, NULL), -FI_EINVAL);
	g_tc[0].trigger.threshold.cntr = &g_cntr.cntr_fid;
	g_cntr.domain = &g_other;
	cr_assert_eq(rivet_trig_msg(&g_dom, &g_ep, RIVET_TRIG_SEND, &msg,
				    FI_TRIGGER, NULL), -FI_EINVAL,
		     "a counter of another domain");
	g_cntr.domain = &g_dom;
	msg.iov_count = 5;
	cr_assert_eq(rivet_trig_msg(&g_dom, &g_ep, RIVET_TRIG_SEND, &msg,
				    FI_TRIGGER, NULL), -FI_EINVAL,
		     "more than RIVET_TRIG_IOV_MAX elements");
	msg.context = NULL;
	msg.iov_count = 1;
	cr_assert_eq(rivet_trig_msg(&g_dom, &g_ep, RIVET_TRIG_SEND, &msg,
				    FI_TRIGGER, NULL), -FI_EINVAL);
	cr_assert_eq(atomic_load(&g_cntr.refcnt), 0);
}
