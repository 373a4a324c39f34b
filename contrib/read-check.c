// SPDX-License-Identifier: MIT
/*
 * read-check: raw verbs, no libfabric. Two processes on one RC connection
 * RDMA-READ each other's buffer over and over, at once, and check every
 * byte after each successful completion: does the device (here rxe under
 * netem faults) ever report a READ as successful before all of its data
 * has landed?
 *
 *   server: read-check -s ADDR [-p PORT] [-l LEN]
 *   client: read-check -c ADDR [-p PORT] [-l LEN] [-n READS] [-t SECS]
 *                      [-k DEPTH]   (reads in flight at once, default 1)
 *   both:   [-w]        an RDMA write (of the bytes already there) into the
 *                       peer's buffer after each read: the peer's
 *                       acknowledgements then share the QP with the reads
 *           [-C CHUNK]  each read as reads of at most CHUNK bytes
 *
 * Build: cc -O2 -o read-check contrib/read-check.c -lrdmacm -libverbs
 * (run it on two nodes of contrib/vm/rivet-vm -N 2, with rivet-fault).
 *
 * Each prints "reads N ok M wrong W errors E" and exits 1 if any read
 * that completed successfully had wrong bytes (the first one's ranges
 * are printed), 3 after an error completion (which ends its reads), 2 on
 * setup failures.
 */
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

struct rc_info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static bool g_write;		/* -w */
static size_t g_chunk;		/* -C */

static uint8_t rc_byte(size_t i)
{
	return (uint8_t)(i * 131 + (i >> 10) * 7 + 1);	/* never all 0 */
}

static int rc_ep(const char *addr, const char *port, bool server,
		 struct rdma_cm_id **id_p)
{
	struct rdma_addrinfo hints = { 0 }, *res;
	struct ibv_qp_init_attr attr = { 0 };
	int ret;

	hints.ai_port_space = RDMA_PS_TCP;
	if (server)
		hints.ai_flags = RAI_PASSIVE;
	ret = rdma_getaddrinfo(addr, port, &hints, &res);
	if (ret) {
		perror("rdma_getaddrinfo");
		return -1;
	}
	attr.cap.max_send_wr = 4096;
	attr.cap.max_recv_wr = 32;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 1;
	ret = rdma_create_ep(id_p, res, NULL, server ? NULL : &attr);
	rdma_freeaddrinfo(res);
	if (ret)
		perror("rdma_create_ep");
	return ret;
}

static void rc_ranges(const uint8_t *buf, size_t len, long n)
{
	size_t i, first = SIZE_MAX;

	printf("read %ld completed successfully with wrong bytes:", n);
	for (i = 0; i <= len; i++) {
		int bad = i < len && buf[i] != rc_byte(i);

		if (bad && first == SIZE_MAX)
			first = i;
		if (!bad && first != SIZE_MAX) {
			printf(" [%zu, %zu)", first, i);
			first = SIZE_MAX;
		}
	}
	printf("\n");
}

/* READs of the peer's buffer, depth at a time, for secs or reads; each
 * read in pieces of at most g_chunk bytes, and with -w a write after it. */
static int rc_reader(struct rdma_cm_id *id, const struct rc_info *info,
		     size_t len, long reads, int secs, int depth)
{
	struct ibv_mr *mr, *wmr;
	struct ibv_wc wc;
	uint8_t *bufs, *buf, wsrc[64];
	long n = 0, posted = 0, ok = 0, wrong = 0, errors = 0;
	time_t end = time(NULL) + secs;
	int inflight = 0, next = 0, *left;
	size_t i, off, part, chunk;

	if (info->len < len)
		len = info->len;
	chunk = g_chunk && g_chunk < len ? g_chunk : len;
	for (i = 0; i < sizeof(wsrc); i++)
		wsrc[i] = rc_byte(i);
	bufs = calloc((size_t)depth, len);
	left = calloc((size_t)depth, sizeof(*left));
	mr = bufs ? ibv_reg_mr(id->pd, bufs, (size_t)depth * len,
			       IBV_ACCESS_LOCAL_WRITE) : NULL;
	wmr = ibv_reg_mr(id->pd, wsrc, sizeof(wsrc), 0);
	if (!mr || !wmr || !left)
		return 2;
	for (;;) {
		while (inflight < depth && posted < reads &&
		       time(NULL) < end && !errors) {
			int slot = next % depth;

			buf = bufs + (size_t)slot * len;
			memset(buf, 0, len);
			for (off = 0; off < len; off += part) {
				part = len - off < chunk ? len - off : chunk;
				if (rdma_post_read(id, (void *)(uintptr_t)slot,
						   buf + off, part, mr, 0,
						   info->addr + off,
						   info->rkey)) {
					perror("rdma_post_read");
					return 2;
				}
				left[slot]++;
			}
			if (g_write) {
				if (rdma_post_write(id, (void *)(uintptr_t)-1,
						    wsrc, sizeof(wsrc), wmr, 0,
						    info->addr, info->rkey)) {
					perror("rdma_post_write");
					return 2;
				}
				left[slot]++;
			}
			next++;
			posted++;
			inflight++;
		}
		if (!inflight)
			break;
		if (rdma_get_send_comp(id, &wc) < 0) {
			perror("rdma_get_send_comp");
			return 2;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			if (!errors++)
				printf("read %ld: %s\n", n + 1,
				       ibv_wc_status_str(wc.status));
			if (wc.wr_id != (uint64_t)-1 && --left[wc.wr_id] == 0) {
				inflight--;
				n++;
			}
			continue;
		}
		if (wc.wr_id == (uint64_t)-1)	/* a write: the oldest slot's */
			continue;
		if (--left[wc.wr_id] > (g_write ? 1 : 0))
			continue;
		if (g_write)
			left[wc.wr_id] = 0;	/* its write's WC is not waited */
		inflight--;
		n++;
		buf = bufs + (size_t)wc.wr_id * len;
		for (i = 0; i < len && buf[i] == rc_byte(i); i++)
			;
		if (i == len) {
			ok++;
			continue;
		}
		if (!wrong++)
			rc_ranges(buf, len, n);
	}
	printf("reads %ld ok %ld wrong %ld errors %ld (%zu bytes each in "
	       "pieces of %zu, %d in flight, writes %s)\n", n, ok, wrong,
	       errors, len, chunk, depth, g_write ? "yes" : "no");
	return wrong ? 1 : errors ? 3 : 0;
}

int main(int argc, char **argv)
{
	const char *server = NULL, *client = NULL, *port = "47810";
	struct ibv_qp_init_attr attr = { 0 };
	struct rdma_conn_param param = { 0 };
	struct rdma_cm_id *listen_id, *id;
	struct rc_info mine, peer;
	struct ibv_mr *mr, *dmr;
	struct ibv_wc wc;
	size_t len = 1 << 20, i;
	long reads = 100000;
	int op, secs = 60, depth = 1, ret;
	uint8_t *src, done = 1, got;

	while ((op = getopt(argc, argv, "s:c:p:l:n:t:k:wC:")) != -1) {
		switch (op) {
		case 's': server = optarg; break;
		case 'c': client = optarg; break;
		case 'p': port = optarg; break;
		case 'l': len = strtoul(optarg, NULL, 0); break;
		case 'n': reads = strtol(optarg, NULL, 0); break;
		case 't': secs = atoi(optarg); break;
		case 'k': depth = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
		case 'w': g_write = true; break;
		case 'C': g_chunk = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s -s ADDR | -c ADDR [-p PORT] "
				"[-l LEN] [-n READS] [-t SECS] [-k DEPTH] [-w] "
				"[-C CHUNK]\n",
				argv[0]);
			return 2;
		}
	}
	if (!server == !client) {
		fprintf(stderr, "%s: -s or -c\n", argv[0]);
		return 2;
	}
	attr.cap.max_send_wr = 4096;
	attr.cap.max_recv_wr = 32;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 1;
	if (server) {
		if (rc_ep(server, port, true, &listen_id) ||
		    rdma_listen(listen_id, 1) ||
		    rdma_get_request(listen_id, &id) ||
		    rdma_create_qp(id, NULL, &attr))
			return 2;
		if (id->event->param.conn.private_data_len < sizeof(peer))
			return 2;
		memcpy(&peer, id->event->param.conn.private_data,
		       sizeof(peer));
	} else if (rc_ep(client, port, false, &id)) {
		return 2;
	}
	/* the buffer the peer reads, and the peer's "done" */
	src = malloc(len);
	if (!src)
		return 2;
	for (i = 0; i < len; i++)
		src[i] = rc_byte(i);
	mr = ibv_reg_mr(id->pd, src, len, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	dmr = ibv_reg_mr(id->pd, &got, 1, IBV_ACCESS_LOCAL_WRITE);
	if (!mr || !dmr || rdma_post_recv(id, NULL, &got, 1, dmr))
		return 2;
	mine = (struct rc_info) { (uintptr_t)src, mr->rkey, (uint32_t)len };
	param.private_data = &mine;
	param.private_data_len = sizeof(mine);
	param.responder_resources = param.initiator_depth = 16;
	param.retry_count = 6;
	param.rnr_retry_count = 7;
	if (server ? rdma_accept(id, &param) : rdma_connect(id, &param)) {
		perror(server ? "rdma_accept" : "rdma_connect");
		return 2;
	}
	if (client) {
		if (!id->event ||
		    id->event->param.conn.private_data_len < sizeof(peer))
			return 2;
		memcpy(&peer, id->event->param.conn.private_data,
		       sizeof(peer));
	}
	/* both sides read each other at once, then say they are done */
	ret = rc_reader(id, &peer, len, reads, secs, depth);
	if (ret != 3) {
		rdma_post_send(id, NULL, &done, 1, NULL, IBV_SEND_INLINE);
		rdma_get_send_comp(id, &wc);
		rdma_get_recv_comp(id, &wc);
	}
	return ret;
}
