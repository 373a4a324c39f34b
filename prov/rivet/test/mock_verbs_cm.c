/* SPDX-License-Identifier: MIT */
/*
 * A scripted double of the EQ's verbs seam (the event channels of verbs/rivet_verbs_cm.c) for
 * test/test_eq.c: an event channel that hands out the rdma_cm events a
 * test queued, fails on demand, and records the connection requests it
 * was asked to refuse.
 */
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "mock_verbs.h"

/* an event and its private data, freed as one */
struct mock_cm_event {
	struct rdma_cm_event ev;
	uint8_t data[256];
};

void mock_cm_event_of(struct rdma_cm_id *id, enum rdma_cm_event_type type,
		      int status, const void *data, size_t len)
{
	struct mock_cm_event *m = calloc(1, sizeof(*m));

	cr_assert_not_null(m);
	cr_assert_leq(len, sizeof(m->data));
	m->ev.id = id;
	m->ev.event = type;
	m->ev.status = status;
	if (len) {
		memcpy(m->data, data, len);
		m->ev.param.conn.private_data = m->data;
		m->ev.param.conn.private_data_len = (uint8_t)len;
	}
	g_mock.cm_events[g_mock.cm_tail++ % MOCK_WCS] = &m->ev;
}

void mock_cm_event(enum rdma_cm_event_type type, int status)
{
	mock_cm_event_of(NULL, type, status, NULL, 0);
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
