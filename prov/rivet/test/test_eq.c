/* SPDX-License-Identifier: MIT */
/*
 * Event queues (resource/rivet_eq.c) on a scripted rdma_cm channel
 * (test/mock_verbs_cm.c): rdma_cm events handed to the endpoints' handler
 * in order and acknowledged, a failing channel, user and error events, and
 * a connection request nobody read refused at fi_close, so that the peer
 * hears of it instead of waiting.
 */
#include <criterion/criterion.h>

#include "mock_verbs.h"

static struct rivet_fabric g_fab;
static struct fid_eq *g_eq;
static enum rdma_cm_event_type g_seen[16];
static size_t g_nseen;

static void handler(struct rivet_eq *eq, struct rdma_cm_event *cm)
{
	if (g_nseen < 16)
		g_seen[g_nseen++] = cm->event;
	rivet_verbs_cm_event_ack(cm);
}

static void setup(void)
{
	struct fi_eq_attr attr = {
		.size = 8, .wait_obj = FI_WAIT_NONE, .flags = FI_WRITE,
	};

	mock_verbs_reset();
	g_nseen = 0;
	g_fab = (struct rivet_fabric) {
		.api_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
	};
	cr_assert_eq(rivet_eq_open(&g_fab.fabric_fid, &attr, &g_eq, NULL), 0);
	cr_expect_eq(g_mock.cm_channels, 1);
}

static void eq_close(void)
{
	cr_expect_eq(fi_close(&g_eq->fid), 0);
	cr_expect_eq(g_mock.cm_channels, 0);
	cr_expect_eq(g_mock.cm_unacked, 0, "rdma_cm events not acked: %d",
		     g_mock.cm_unacked);
	cr_expect_eq(atomic_load(&g_fab.refcnt), 0);
}

/* A connection request as the passive side's handler queues it. */
static struct rivet_connreq *push_connreq(void)
{
	struct rivet_eq_event *ev = calloc(1, sizeof(*ev));
	struct rivet_connreq *req = calloc(1, sizeof(*req));

	cr_assert(ev && req);
	req->handle.fclass = FI_CLASS_CONNREQ;
	req->id = (struct rdma_cm_id *)req;	/* never dereferenced */
	ev->event = FI_CONNREQ;
	ev->info = fi_allocinfo();
	cr_assert_not_null(ev->info);
	ev->info->handle = &req->handle;
	rivet_eq_push(to_req(g_eq), ev);
	return req;
}

TestSuite(eq, .init = setup);

Test(eq, cm_events_reach_the_handler_in_order)
{
	struct fi_eq_entry e;
	uint32_t event;

	rivet_eq_set_cm_handler(to_req(g_eq), handler);
	mock_cm_event(RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	mock_cm_event(RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	mock_cm_event(RDMA_CM_EVENT_ESTABLISHED, 0);
	cr_expect_eq(fi_eq_read(g_eq, &event, &e, sizeof(e), 0), -FI_EAGAIN);
	cr_assert_eq(g_nseen, 3);
	cr_expect_eq(g_seen[0], RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_expect_eq(g_seen[1], RDMA_CM_EVENT_ROUTE_RESOLVED);
	cr_expect_eq(g_seen[2], RDMA_CM_EVENT_ESTABLISHED);
	eq_close();
}

/* Without a handler (no endpoint's id on the channel) an event is
 * acknowledged, never left to block rdma_destroy_id. */
Test(eq, an_event_without_a_handler_is_acked)
{
	struct fi_eq_entry e;
	uint32_t event;

	mock_cm_event(RDMA_CM_EVENT_DISCONNECTED, 0);
	cr_expect_eq(fi_eq_read(g_eq, &event, &e, sizeof(e), 0), -FI_EAGAIN);
	cr_expect_eq(g_mock.cm_unacked, 0);
	eq_close();
}

/* A channel that fails: the reader hears the error (-FI_EIO), and an
 * event already queued is not lost to it. */
Test(eq, a_failing_channel)
{
	struct fi_eq_entry in = { .context = &in, .data = 42 }, out;
	uint32_t event = 0;

	g_mock.cm_get_errno = EIO;
	cr_expect_eq(fi_eq_read(g_eq, &event, &out, sizeof(out), 0), -FI_EIO);
	cr_assert_eq(fi_eq_write(g_eq, FI_NOTIFY, &in, sizeof(in), 0),
		     sizeof(in));
	cr_assert_eq(fi_eq_read(g_eq, &event, &out, sizeof(out), 0),
		     sizeof(out));
	cr_expect_eq(event, FI_NOTIFY);
	cr_expect_eq(out.context, &in);
	cr_expect_eq(out.data, 42);
	g_mock.cm_get_errno = 0;
	cr_expect_eq(fi_eq_read(g_eq, &event, &out, sizeof(out), 0),
		     -FI_EAGAIN);
	eq_close();
}

/* fi_eq(3): an error entry stops the reads (-FI_EAVAIL) until
 * fi_eq_readerr takes it. */
Test(eq, an_error_entry)
{
	struct rivet_eq_event *ev = calloc(1, sizeof(*ev));
	struct fi_eq_err_entry err = { 0 };
	struct fi_eq_entry out;
	uint32_t event;

	cr_assert_not_null(ev);
	ev->is_err = true;
	ev->event = FI_CONNECTED;
	ev->entry.err = FI_ECONNREFUSED;
	ev->entry.context = ev;
	rivet_eq_push(to_req(g_eq), ev);
	cr_expect_eq(fi_eq_read(g_eq, &event, &out, sizeof(out), 0),
		     -FI_EAVAIL);
	cr_assert_eq(fi_eq_readerr(g_eq, &err, 0), sizeof(err));
	cr_expect_eq(err.err, FI_ECONNREFUSED);
	cr_expect_eq(err.context, ev);
	cr_expect_eq(fi_eq_read(g_eq, &event, &out, sizeof(out), 0),
		     -FI_EAGAIN);
	eq_close();
}

/* A connection request still queued at fi_close is refused, so the peer
 * gets its reject at once; one the application read is its own. */
Test(eq, unread_connection_requests_are_refused_at_close)
{
	struct fi_eq_cm_entry cm;
	struct rivet_connreq *read, *unread;
	uint32_t event;

	read = push_connreq();
	unread = push_connreq();
	cr_assert_eq(fi_eq_read(g_eq, &event, &cm, sizeof(cm), 0),
		     sizeof(cm));
	cr_expect_eq(event, FI_CONNREQ);
	cr_expect_eq(cm.info->handle, &read->handle);
	eq_close();
	cr_assert_eq(g_mock.nrefused, 1);
	cr_expect_eq(g_mock.refused[0], unread->id);
	cm.info->handle = NULL;
	fi_freeinfo(cm.info);
	free(read);
}
