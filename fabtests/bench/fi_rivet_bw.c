// SPDX-License-Identifier: MIT
/* Streaming send bandwidth over FI_EP_MSG with any provider: the client
 * keeps a window of sends in flight, the server a window of receives; the
 * server checks the edges of every message and acks the last one. With -C,
 * a paced ping-pong whose library calls callgrind can count alone. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/ft_rivet.h"

#define BW_DEFAULT_ITERS 1000
#define BW_DEFAULT_SIZE 65536
#define BW_DEFAULT_WINDOW 64
#define BW_MAX_WINDOW 1024
#define BW_WARMUP 16
#define BW_POLL 16
#define BW_MAGIC 0x52564257u	/* "RVBW" */

/* Sent by the client as connection data, so that a server started with
 * other settings refuses the connection instead of timing out. */
struct bw_params {
	uint32_t magic;
	uint32_t window;
	uint64_t size;
	uint64_t iters;
	uint32_t pingpong;
	uint32_t pad;
};

/* The server's answer after the last message. */
struct bw_ack {
	uint32_t magic;
	uint32_t bad;		/* messages with a wrong length or edge */
	uint64_t count;		/* messages received */
};

struct bw_state {
	struct ft_fab fab;
	struct ft_conn conn;
	struct ft_buf buf;	/* window slots of size bytes each */
	size_t size;
	size_t window;		/* slots, and operations in flight */
	uint64_t total;		/* warm-up plus timed messages */
	uint64_t bad;
	uint64_t empty_polls;	/* -C: polls that found nothing */
	struct fi_context ctx[BW_MAX_WINDOW];
};

static struct bw_state g;
static size_t g_window_opt = BW_DEFAULT_WINDOW;
static long g_pause_us = -1;	/* -C USEC; -1: streaming */

/* ---- options ---------------------------------------------------------- */

/* Our own options, -W N and -C USEC (ft_set_extra_opts). */
static void bw_opt(int op, const char *arg)
{
	char *end;
	long val = strtol(arg, &end, 0);
	bool ok = !*end && end != arg;

	if (op == 'W' && ok && val >= 1 && val <= BW_MAX_WINDOW)
		g_window_opt = val;
	else if (op == 'C' && ok && val >= 0 && val <= 1000000)
		g_pause_us = val;
	else {
		fprintf(stderr, "fi_rivet_bw: -W takes 1 to %d, -C 0 to "
			"1000000, not '%s' (try -h)\n", BW_MAX_WINDOW, arg);
		exit(2);
	}
}

static void bw_parse_opts(int argc, char **argv)
{
	ft_opts.iters = BW_DEFAULT_ITERS;
	ft_opts.size = BW_DEFAULT_SIZE;
	ft_set_extra_opts("W:C:",
		" -W N         sends/receives in flight (default 64)\n"
		" -C USEC      instead: ping-pong, the client sleeping USEC "
		"before each\n"
		"              completion poll, to count instructions under "
		"callgrind:\n"
		"              --collect-atstart=no --toggle-collect='bw_lib_*'"
		"\n", bw_opt);
	ft_parse_opts(argc, argv, "Streaming send bandwidth (FI_EP_MSG); "
		      "defaults here: -I 1000 -S 64k.\n"
		      "The client prints 'bw_MBps: <MB/s>' (MB = 10^6 "
		      "bytes). With verbs, give the server -s ADDR.", true);
	if (ft_opts.all_sizes) {
		fprintf(stderr, "%s: -S all is not supported\n", argv[0]);
		exit(2);
	}
	g.size = ft_opts.size;
	g.window = g_pause_us < 0 ? g_window_opt : 2;
	g.total = (uint64_t)ft_opts.iters + BW_WARMUP;
}

/* ---- message edges ---------------------------------------------------- */

static uint64_t bw_head(uint64_t seq)
{
	return (seq + 1) * 0x9E3779B97F4A7C15ULL ^ BW_MAGIC;
}

static size_t bw_edge_len(size_t size)
{
	return size < 8 ? size : 8;
}

/* The first and last (up to) 8 bytes carry the sequence number; when they
 * overlap (size < 16) the tail wins. */
static void bw_mark(void *msg, uint64_t seq)
{
	uint64_t head = bw_head(seq), tail = ~head;
	size_t n = bw_edge_len(g.size);

	memcpy(msg, &head, n);
	memcpy((char *)msg + g.size - n, &tail, n);
}

static bool bw_check(const void *msg, uint64_t seq)
{
	uint64_t head = bw_head(seq), tail = ~head;
	size_t n = bw_edge_len(g.size);
	size_t head_only = g.size - n < n ? g.size - n : n;

	return !memcmp(msg, &head, head_only) &&
		!memcmp((const char *)msg + g.size - n, &tail, n);
}

static void *bw_slot(uint64_t seq)
{
	return (char *)g.buf.ptr + (seq % g.window) * g.size;
}

/* ---- completions ------------------------------------------------------ */

static double bw_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int bw_cq_error(struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry err = { 0 };

	if (fi_cq_readerr(cq, &err, 0) < 0) {
		fprintf(stderr, "%s: fi_cq_readerr failed\n", what);
		return -FI_EOTHER;
	}
	fprintf(stderr, "%s completion error: %s (prov_errno %d: %s)\n", what,
		fi_strerror(err.err), err.prov_errno, ft_cq_errstr(cq, &err));
	return err.err ? -err.err : -FI_EOTHER;
}

/* Read up to max completions into comp, spinning: their count, or a
 * negative error (-FI_ETIMEDOUT when none came within the timeout). */
static ssize_t bw_cq_read(struct fid_cq *cq, struct fi_cq_data_entry *comp,
			  size_t max, const char *what)
{
	uint64_t end = ft_now_ms() + ft_timeout_for(g.size);
	ssize_t ret;

	do {
		ret = fi_cq_read(cq, comp, max);
		if (ret > 0)
			return ret;
		if (ret == -FI_EAVAIL)
			return bw_cq_error(cq, what);
		if (ret != -FI_EAGAIN) {
			fprintf(stderr, "%s: fi_cq_read: %s\n", what,
				fi_strerror((int)-ret));
			return ret;
		}
	} while (ft_now_ms() < end);
	fprintf(stderr, "%s: no completion within %d ms\n", what,
		ft_timeout_for(g.size));
	return -FI_ETIMEDOUT;
}

/* ---- ping-pong for instruction counts (-C) --------------------------- */

/* The only library calls of the ping-pong loop: callgrind run with
 * --collect-atstart=no --toggle-collect='bw_lib_*' counts what the
 * library and the layers under it execute, and nothing of ours. */
#define BW_LIB FT_COUNTED

static BW_LIB ssize_t bw_lib_send(void)
{
	return fi_send(g.conn.ep, bw_slot(0), g.size, g.buf.desc, 0,
		       &g.ctx[0]);
}

static BW_LIB ssize_t bw_lib_recv(void)
{
	return fi_recv(g.conn.ep, bw_slot(1), g.size, g.buf.desc, 0,
		       &g.ctx[1]);
}

static BW_LIB ssize_t bw_lib_poll(struct fid_cq *cq,
				  struct fi_cq_data_entry *comp)
{
	return fi_cq_read(cq, comp, 1);
}

/* -C: the same poll, where nothing is left to come (FT_PROBES) */
static BW_LIB ssize_t bw_probe_poll(struct fid_cq *cq,
				    struct fi_cq_data_entry *comp)
{
	return fi_cq_read(cq, comp, 1);
}

/* Slot 0 holds what we send, slot 1 what we receive. */
static int bw_pp_post_recv(void)
{
	ssize_t ret = bw_lib_recv();

	if (ret)
		fprintf(stderr, "fi_recv(%zu): %s\n", g.size,
			fi_strerror((int)-ret));
	return (int)ret;
}

static int bw_pp_send(uint64_t seq)
{
	ssize_t ret;

	bw_mark(bw_slot(0), seq);
	ret = bw_lib_send();
	if (ret)
		fprintf(stderr, "fi_send(%zu): %s\n", g.size,
			fi_strerror((int)-ret));
	return (int)ret;
}

/* Client: sleep, then poll, so that polls find their completion; those
 * that find nothing add to the count and are reported. */
static int bw_pp_wait(struct fid_cq *cq, int slot, const char *what)
{
	uint64_t end = ft_now_ms() + ft_timeout_for(g.size);
	struct fi_cq_data_entry comp;
	ssize_t ret;

	for (;;) {
		if (g_pause_us)
			usleep(g_pause_us);
		ret = bw_lib_poll(cq, &comp);
		if (ret == 1)
			break;
		if (ret == -FI_EAVAIL)
			return bw_cq_error(cq, what);
		if (ret != -FI_EAGAIN || ft_now_ms() >= end) {
			fprintf(stderr, "%s: %s\n", what, ret == -FI_EAGAIN ?
				"no completion" : fi_strerror((int)-ret));
			return ret == -FI_EAGAIN ? -FI_ETIMEDOUT : (int)ret;
		}
		g.empty_polls++;
	}
	/* a send completion's len is not defined */
	if (comp.op_context == &g.ctx[slot] && (!slot || comp.len == g.size))
		return 0;
	fprintf(stderr, "%s: completion for the wrong context or length\n",
		what);
	return -FI_EOTHER;
}

/* FT_PROBES polls that find nothing to come, behind the same pause */
static void bw_probe(void)
{
	struct fi_cq_data_entry comp;
	unsigned int i, empty = 0;

	for (i = 0; i < FT_PROBES; i++) {
		if (g_pause_us)
			usleep(g_pause_us);
		empty += bw_probe_poll(g.conn.rxcq, &comp) == -FI_EAGAIN;
	}
	printf("probe_polls: %u\n", empty);
}

static int bw_pp_client(void)
{
	double t0 = bw_now();
	uint64_t seq;
	int ret = 0;

	for (seq = 0; !ret && seq < g.total; seq++) {
		ret = bw_pp_send(seq);
		ret = ret ? ret : bw_pp_wait(g.conn.txcq, 0, "send");
		ret = ret ? ret : bw_pp_wait(g.conn.rxcq, 1, "receive");
		if (!ret && !bw_check(bw_slot(1), seq)) {
			fprintf(stderr, "pong %" PRIu64 " wrong\n", seq);
			ret = -FI_EIO;
		}
		if (!ret && seq + 1 < g.total)
			ret = bw_pp_post_recv();
	}
	if (ret)
		return ret;
	printf("# %s: ping-pong %" PRIu64 " x %zu B, sleeping %ld us before "
	       "each poll: %.3f s\n", g.fab.info->fabric_attr->prov_name,
	       g.total, g.size, g_pause_us, bw_now() - t0);
	printf("empty_polls: %" PRIu64 "\n", g.empty_polls);
	bw_probe();
	return 0;
}

/* Server: answer each ping at once; a wrong ping gets a wrong pong. */
static int bw_pp_server(void)
{
	struct fi_cq_data_entry comp;
	uint64_t seq;
	ssize_t ret = 0;
	bool ok;

	for (seq = 0; ret >= 0 && seq < g.total; seq++) {
		ret = bw_cq_read(g.conn.rxcq, &comp, 1, "receive");
		if (ret < 0)
			break;
		ok = comp.op_context == &g.ctx[1] && comp.len == g.size &&
			bw_check(bw_slot(1), seq);
		g.bad += !ok;
		ret = seq + 1 < g.total ? bw_pp_post_recv() : 0;
		ret = ret ? ret : bw_pp_send(ok ? seq : seq + g.total);
		ret = ret ? ret : bw_cq_read(g.conn.txcq, &comp, 1, "send");
	}
	if (ret < 0)
		return (int)ret;
	printf("# ping-pong: %" PRIu64 " x %zu B, %" PRIu64 " bad\n",
	       g.total, g.size, g.bad);
	return g.bad ? -FI_EIO : 0;
}

/* ---- client ----------------------------------------------------------- */

/* Send messages [*posted, last) while fewer than window are in flight;
 * stops early when the transmit queue is full. */
static int bw_post_sends(uint64_t *posted, uint64_t done, uint64_t last)
{
	ssize_t ret;
	void *msg;

	while (*posted < last && *posted - done < g.window) {
		msg = bw_slot(*posted);
		bw_mark(msg, *posted);
		ret = fi_send(g.conn.ep, msg, g.size, g.buf.desc, 0,
			      &g.ctx[*posted % g.window]);
		if (ret == -FI_EAGAIN)
			break;
		if (ret) {
			fprintf(stderr, "fi_send(%zu): %s\n", g.size,
				fi_strerror((int)-ret));
			return (int)ret;
		}
		(*posted)++;
	}
	return 0;
}

/* Stream messages [first, last), all of them completed on return. */
static int bw_stream(uint64_t first, uint64_t last)
{
	struct fi_cq_data_entry comp[BW_POLL];
	uint64_t posted = first, done = first;
	ssize_t ret, i;

	while (done < last) {
		ret = bw_post_sends(&posted, done, last);
		if (ret)
			return (int)ret;
		ret = bw_cq_read(g.conn.txcq, comp, BW_POLL, "send");
		if (ret < 0)
			return (int)ret;
		for (i = 0; i < ret; i++, done++) {
			if (comp[i].op_context != &g.ctx[done % g.window]) {
				fprintf(stderr, "send %" PRIu64 " completed "
					"out of order\n", done);
				return -FI_EOTHER;
			}
		}
	}
	return 0;
}

static void bw_report(double secs)
{
	double bytes = (double)ft_opts.iters * g.size;
	double mbps = bytes / secs / 1e6;

	printf("# %s: %d x %zu B, window %zu: %.3f s, %.2f MB/s, "
	       "%.0f msg/s\n", g.fab.info->fabric_attr->prov_name,
	       ft_opts.iters, g.size, g.window, secs, mbps,
	       ft_opts.iters / secs);
	printf("bw_MBps: %.2f\n", mbps);
}

/* Streaming client: warm-up, then the timed messages and the ack. */
static int bw_stream_client(void)
{
	struct bw_ack ack;
	double t0;
	ssize_t ret;

	ret = bw_stream(0, BW_WARMUP);
	if (ret)
		return (int)ret;
	t0 = bw_now();
	ret = bw_stream(BW_WARMUP, g.total);
	ret = ret ? ret : ft_ctrl_recv(&g.conn, &ack, sizeof(ack));
	if (ret < 0)
		return (int)ret;
	if (ret != sizeof(ack) || ack.magic != BW_MAGIC ||
	    ack.count != g.total || ack.bad) {
		fprintf(stderr, "server reports %" PRIu64 " of %" PRIu64
			" messages received, %u bad\n", ack.count, g.total,
			ack.bad);
		return -FI_EIO;
	}
	bw_report(bw_now() - t0);
	return 0;
}

static void bw_params_init(struct bw_params *params)
{
	memset(params, 0, sizeof(*params));
	params->magic = BW_MAGIC;
	params->window = g_window_opt;
	params->size = g.size;
	params->iters = ft_opts.iters;
	params->pingpong = g_pause_us >= 0;
}

/* Connect, retrying while the server does not listen yet (refused)
 * until the timeout. */
static int bw_connect(void)
{
	uint64_t end = ft_now_ms() + ft_opts.timeout_ms;
	struct bw_params params;
	int ret;

	bw_params_init(&params);
	for (;;) {
		ret = ft_connect_start(&g.fab, &g.conn);
		/* our first receive is for the ack, or for the first pong */
		if (!ret)
			ret = g_pause_us < 0 ? ft_ctrl_post_recv(&g.conn) :
				bw_pp_post_recv();
		ret = ret ? ret : ft_connect_finish(&g.conn, &params,
						    sizeof(params), NULL, NULL);
		if (ret != -FI_ECONNREFUSED || ft_now_ms() >= end)
			return ret;
		ft_conn_close(&g.conn);
		usleep(200 * 1000);
	}
}

static int bw_client(void)
{
	int ret = bw_connect();

	if (ret)
		return ret;
	return g_pause_us < 0 ? bw_stream_client() : bw_pp_client();
}

/* ---- server ----------------------------------------------------------- */

static int bw_post_recv(uint64_t seq)
{
	ssize_t ret;

	ret = fi_recv(g.conn.ep, bw_slot(seq), g.size, g.buf.desc, 0,
		      &g.ctx[seq % g.window]);
	if (ret)
		fprintf(stderr, "fi_recv(%zu): %s\n", g.size,
			fi_strerror((int)-ret));
	return (int)ret;
}

static void bw_recv_check(const struct fi_cq_data_entry *comp, uint64_t seq)
{
	if (comp->op_context != &g.ctx[seq % g.window] ||
	    comp->len != g.size || !bw_check(bw_slot(seq), seq)) {
		if (!g.bad)
			fprintf(stderr, "message %" PRIu64 ": wrong context, "
				"length (%zu) or data\n", seq, comp->len);
		g.bad++;
	}
}

/* Receive every message, checking each and reposting its slot. */
static int bw_receive_all(uint64_t posted)
{
	struct fi_cq_data_entry comp[BW_POLL];
	uint64_t done = 0;
	ssize_t ret, i;

	while (done < g.total) {
		ret = bw_cq_read(g.conn.rxcq, comp, BW_POLL, "receive");
		if (ret < 0)
			return (int)ret;
		for (i = 0; i < ret; i++, done++)
			bw_recv_check(&comp[i], done);
		for (; posted < g.total && posted < done + g.window; posted++) {
			ret = bw_post_recv(posted);
			if (ret)
				return (int)ret;
		}
	}
	return 0;
}

static int bw_accept_params(struct fi_info *info, const void *data,
			    size_t len)
{
	struct bw_params want, got;

	bw_params_init(&want);
	if (len == sizeof(got) && !memcmp(data, &want, sizeof(want)))
		return 0;
	memset(&got, 0, sizeof(got));
	memcpy(&got, data, len < sizeof(got) ? len : sizeof(got));
	fprintf(stderr, "client runs -S %" PRIu64 " -I %" PRIu64 " -W %u%s, "
		"we run -S %zu -I %d -W %zu%s: rejected\n", got.size,
		got.iters, got.window, got.pingpong ? " -C" : "", g.size,
		ft_opts.iters, g_window_opt, want.pingpong ? " -C" : "");
	fi_reject(g.fab.pep, info->handle, NULL, 0);
	fi_freeinfo(info);
	return -FI_EINVAL;
}

static int bw_stream_server(uint64_t posted)
{
	struct bw_ack ack = { .magic = BW_MAGIC };
	int ret;

	ret = bw_receive_all(posted);
	if (ret)
		return ret;
	ack.count = g.total;
	ack.bad = g.bad > UINT32_MAX ? UINT32_MAX : (uint32_t)g.bad;
	ret = ft_ctrl_send(&g.conn, &ack, sizeof(ack));
	if (!ret)
		printf("# received %" PRIu64 " x %zu B, %" PRIu64 " bad\n",
		       g.total, g.size, g.bad);
	return ret ? ret : (g.bad ? -FI_EIO : 0);
}

static int bw_server(void)
{
	uint8_t data[FT_CM_BUF_SIZE];
	size_t data_len = 0;
	struct fi_info *info;
	uint64_t posted = 0;
	int ret;

	ret = ft_listen(&g.fab);
	ret = ret ? ret : ft_wait_connreq(&g.fab, &info, data, &data_len);
	ret = ret ? ret : bw_accept_params(info, data, data_len);
	ret = ret ? ret : ft_conn_open(&g.fab, &g.conn, info);
	/* receives go up before the client may send */
	if (!ret && g_pause_us >= 0)
		ret = bw_pp_post_recv();
	for (; !ret && g_pause_us < 0 && posted < g.window &&
	     posted < g.total; posted++)
		ret = bw_post_recv(posted);
	ret = ret ? ret : ft_accept_finish(&g.conn, NULL, 0, NULL, NULL);
	if (ret)
		return ret;
	return g_pause_us < 0 ? bw_stream_server(posted) : bw_pp_server();
}

/* ---- setup ------------------------------------------------------------ */

/* Stay within the endpoint's queues, so that every post succeeds. */
static void bw_fit_window(const struct fi_info *info)
{
	size_t depth = ft_is_server() ? info->rx_attr->size :
		info->tx_attr->size;

	if (depth && g.window > depth) {
		ft_info("window %zu cut to the queue depth %zu", g.window,
			depth);
		g.window = depth;
	}
}

static int bw_setup(void)
{
	struct fi_info *hints = ft_hints_alloc(FI_MSG), *info = NULL;
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	ret = ft_getinfo(hints, &info);
	fi_freeinfo(hints);
	if (ret) {
		fprintf(stderr, "fi_getinfo: %s\n", fi_strerror(-ret));
		return ret;
	}
	/* 0: not reported (verbs, for a passive endpoint's info) */
	if (info->ep_attr->max_msg_size &&
	    g.size > info->ep_attr->max_msg_size) {
		fprintf(stderr, "size %zu exceeds max_msg_size %zu\n", g.size,
			info->ep_attr->max_msg_size);
		fi_freeinfo(info);
		return -FI_EMSGSIZE;
	}
	bw_fit_window(info);
	ret = ft_fab_open(&g.fab, info);
	if (ret)
		return ret;
	return ft_buf_alloc(g.fab.domain, g.size * g.window,
			    FI_SEND | FI_RECV, &g.buf);
}

int main(int argc, char **argv)
{
	int ret;

	bw_parse_opts(argc, argv);
	ret = bw_setup();
	if (!ret)
		ret = ft_is_server() ? bw_server() : bw_client();
	if (ret)
		fprintf(stderr, "fi_rivet_bw: %s\n", fi_strerror(-ret));
	ft_conn_close(&g.conn);
	ft_buf_free(&g.buf);
	ft_fab_close(&g.fab);
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}
