/* SPDX-License-Identifier: MIT */
/*
 * A scripted double of the EQ's verbs seam (verbs/rivet_verbs_cm.c) for
 * test/test_eq.c: an event channel that hands out the rdma_cm events a
 * test queued, fails on demand, and records the connection requests it
 * was asked to refuse.
 */
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "mock_verbs.h"

void mock_cm_event(enum rdma_cm_event_type type, int status)
{
	struct rdma_cm_event *ev = calloc(1, sizeof(*ev));

	cr_assert_not_null(ev);
	ev->event = type;
	ev->status = status;
	g_mock.cm_events[g_mock.cm_tail++ % MOCK_WCS] = ev;
}

int rivet_verbs_cm_channel_create(struct rdma_event_channel **ch_p)
{
	struct rdma_event_channel *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return -FI_ENOMEM;
	ch->fd = eventfd(0, 0);
	g_mock.cm_channels++;
	*ch_p = ch;
	return 0;
}

void rivet_verbs_cm_channel_destroy(struct rdma_event_channel *ch)
{
	if (!ch)
		return;
	close(ch->fd);
	free(ch);
	g_mock.cm_channels--;
}

int rivet_verbs_cm_event_get(struct rdma_event_channel *ch,
			     struct rdma_cm_event **ev_p)
{
	if (g_mock.cm_get_errno)
		return rivet_errno_to_fi(g_mock.cm_get_errno);
	if (g_mock.cm_head == g_mock.cm_tail)
		return -FI_EAGAIN;
	*ev_p = g_mock.cm_events[g_mock.cm_head++ % MOCK_WCS];
	g_mock.cm_unacked++;
	return 0;
}

void rivet_verbs_cm_event_ack(struct rdma_cm_event *ev)
{
	free(ev);
	g_mock.cm_unacked--;
}

void rivet_verbs_cm_refuse(struct rdma_cm_id *id)
{
	if (g_mock.nrefused < 8)
		g_mock.refused[g_mock.nrefused++] = id;
}
