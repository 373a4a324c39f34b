// SPDX-License-Identifier: MIT
/* MPI matching over the fabric: MPI_ANY_SOURCE/MPI_ANY_TAG with per-sender
 * order, MPI_Iprobe, MPI_Mprobe/MPI_Mrecv, and a non-blocking storm of
 * thousands of Isend/Irecv (pre-posted, then unexpected) with Waitall.
 * argv[1]: receives posted at once per rank (default 1800): an MPI over
 * libfabric cannot post more than the provider's rx_attr->size (2048 for
 * tcp;ofi_rxm), or every rank spins posting while none sends. */
#include "mpi_rivet.h"

#define MT_ANY_MSGS 200
#define MT_STORM_POSTED 1800	/* receives a rank has posted at once */
#define MT_STORM_SLOT 64
#define MT_BIG (1 << 20)

/* Every rank sends MT_ANY_MSGS to rank 0, tags cycling through 0..6;
 * rank 0 takes them with MPI_ANY_SOURCE/MPI_ANY_TAG: the status names
 * the sender and tag written in the payload, and each sender's messages
 * come in order. */
static void mt_any(void)
{
	int msg[3], i, next[256] = { 0 };
	MPI_Status st;

	if (g_mr_rank) {
		for (i = 0; i < MT_ANY_MSGS; i++) {
			msg[0] = g_mr_rank;
			msg[1] = i % 7;
			msg[2] = i;
			MPI_Send(msg, 3, MPI_INT, 0, i % 7, MPI_COMM_WORLD);
		}
		return;
	}
	for (i = 0; i < MT_ANY_MSGS * (g_mr_size - 1); i++) {
		MPI_Recv(msg, 3, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
			 MPI_COMM_WORLD, &st);
		if (st.MPI_SOURCE != msg[0] || st.MPI_TAG != msg[1] ||
		    msg[0] < 1 || msg[0] >= 256 || msg[2] != next[msg[0]]++) {
			mr_fail("message from %d tag %d carries (%d, %d, %d)",
				st.MPI_SOURCE, st.MPI_TAG, msg[0], msg[1],
				msg[2]);
			return;
		}
	}
}

/* Rank 1 sends 1000 bytes with tag 77; rank 0 sees nothing for tag 78,
 * then Iprobes (bounded) until the message shows, with the right size. */
static void mt_iprobe(void)
{
	char buf[1000];
	int flag = 0, count = 0;
	MPI_Status st;
	double end;

	if (g_mr_rank == 1) {
		mr_fill(buf, sizeof(buf), 77);
		MPI_Send(buf, sizeof(buf), MPI_BYTE, 0, 77, MPI_COMM_WORLD);
	}
	if (g_mr_rank)
		return;
	MPI_Iprobe(1, 78, MPI_COMM_WORLD, &flag, &st);
	if (flag)
		mr_fail("Iprobe found a message that was never sent");
	end = MPI_Wtime() + 30;
	for (flag = 0; !flag && MPI_Wtime() < end;)
		MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &flag, &st);
	if (!flag) {
		mr_fail("Iprobe never saw the message");
		return;
	}
	MPI_Get_count(&st, MPI_BYTE, &count);
	if (count != sizeof(buf) || st.MPI_SOURCE != 1)
		mr_fail("Iprobe: count %d from %d", count, st.MPI_SOURCE);
	MPI_Recv(buf, sizeof(buf), MPI_BYTE, 1, 77, MPI_COMM_WORLD,
		 MPI_STATUS_IGNORE);
	if (mr_verify(buf, sizeof(buf), 77) >= 0)
		mr_fail("Iprobe: data wrong after MPI_Recv");
}

/* Every other rank sends a small and a large message with tag 88; rank 0
 * matches each with MPI_Mprobe and receives it with MPI_Mrecv. */
static void mt_mprobe(char *buf)
{
	int i, count, len;
	MPI_Message m;
	MPI_Status st;

	if (g_mr_rank) {
		for (i = 0; i < 2; i++) {
			len = i ? MT_BIG : 100;
			mr_fill(buf, len, g_mr_rank * 10 + i);
			MPI_Send(buf, len, MPI_BYTE, 0, 88, MPI_COMM_WORLD);
		}
		return;
	}
	for (i = 0; i < 2 * (g_mr_size - 1); i++) {
		MPI_Mprobe(MPI_ANY_SOURCE, 88, MPI_COMM_WORLD, &m, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		MPI_Mrecv(buf, count, MPI_BYTE, &m, MPI_STATUS_IGNORE);
		if ((count != 100 && count != MT_BIG) ||
		    mr_verify(buf, count, st.MPI_SOURCE * 10 +
			      (count == MT_BIG)) >= 0) {
			mr_fail("Mrecv of %d bytes from %d: data wrong", count,
				st.MPI_SOURCE);
			return;
		}
	}
}

static int g_storm_msgs;	/* per pair and direction */

/* Slot of message k between this rank and peer, in the send or receive
 * buffer. */
static char *mt_slot(char *buf, int peer, int k)
{
	return buf + ((size_t)peer * g_storm_msgs + k) * MT_STORM_SLOT;
}

static int mt_len(int k)
{
	return 8 + k % (MT_STORM_SLOT - 8);
}

static uint32_t mt_seed(int from, int to, int k)
{
	return from * 100000 + to * 10000 + k;
}

static int mt_post_irecvs(char *rbuf, MPI_Request *req)
{
	int peer, k, r = 0;

	for (peer = 0; peer < g_mr_size; peer++)
		for (k = 0; k < g_storm_msgs && peer != g_mr_rank; k++)
			MPI_Irecv(mt_slot(rbuf, peer, k), MT_STORM_SLOT,
				  MPI_BYTE, peer, k, MPI_COMM_WORLD, &req[r++]);
	return r;
}

static int mt_post_isends(char *sbuf, MPI_Request *req)
{
	int peer, k, r = 0;
	char *p;

	for (peer = 0; peer < g_mr_size; peer++)
		for (k = 0; k < g_storm_msgs && peer != g_mr_rank; k++) {
			p = mt_slot(sbuf, peer, k);
			mr_fill(p, mt_len(k), mt_seed(g_mr_rank, peer, k));
			MPI_Isend(p, mt_len(k), MPI_BYTE, peer, k,
				  MPI_COMM_WORLD, &req[r++]);
		}
	return r;
}

static void mt_storm_check(char *rbuf)
{
	int peer, k;

	for (peer = 0; peer < g_mr_size; peer++)
		for (k = 0; k < g_storm_msgs && peer != g_mr_rank; k++)
			if (mr_verify(mt_slot(rbuf, peer, k), mt_len(k),
				      mt_seed(peer, g_mr_rank, k)) >= 0) {
				mr_fail("storm: message %d from %d wrong", k,
					peer);
				return;
			}
}

/* All pairs: g_storm_msgs messages each way, Irecv posted before (or,
 * unexpected, after a barrier that follows the Isends), then Waitall. */
static void mt_storm(char *sbuf, char *rbuf, int unexpected)
{
	MPI_Request *req;
	int r = 0;

	req = malloc(sizeof(*req) * 2 * g_mr_size * g_storm_msgs);
	if (!req) {
		mr_fail("out of memory");
		return;
	}
	if (!unexpected)
		r += mt_post_irecvs(rbuf, req + r);
	r += mt_post_isends(sbuf, req + r);
	if (unexpected) {
		MPI_Barrier(MPI_COMM_WORLD);
		r += mt_post_irecvs(rbuf, req + r);
	}
	MPI_Waitall(r, req, MPI_STATUSES_IGNORE);
	mt_storm_check(rbuf);
	free(req);
}

int main(int argc, char **argv)
{
	size_t slots;
	char *sbuf, *rbuf;

	mr_init(&argc, &argv);
	g_storm_msgs = (argc > 1 ? atoi(argv[1]) : MT_STORM_POSTED) /
		       (g_mr_size > 1 ? g_mr_size - 1 : 1);
	if (!g_mr_rank)
		printf("# storm: %d messages per pair and direction\n",
		       g_storm_msgs);
	slots = (size_t)g_mr_size * g_storm_msgs * MT_STORM_SLOT;
	sbuf = malloc(slots > MT_BIG ? slots : MT_BIG);
	rbuf = malloc(slots);
	if (!sbuf || !rbuf || g_mr_size < 2) {
		fprintf(stderr, "need 2 ranks or more, and memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	mt_any();
	mr_case_end("mpi_any_source_any_tag");
	mt_iprobe();
	mr_case_end("mpi_iprobe");
	mt_mprobe(sbuf);
	mr_case_end("mpi_mprobe_mrecv");
	mt_storm(sbuf, rbuf, 0);
	mr_case_end("mpi_isend_irecv_storm");
	mt_storm(sbuf, rbuf, 1);
	mr_case_end("mpi_isend_irecv_storm_unexpected");
	free(sbuf);
	free(rbuf);
	return mr_finalize();
}
