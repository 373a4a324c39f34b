// SPDX-License-Identifier: MIT
/* RDM one-sided benchmark with any provider: the server registers a
 * region and then waits for the client's "done" message, by default
 * asleep (FI_PROGRESS_AUTO: the provider's own progress serves what needs
 * the target, as perftest's server sleeps), with -m busy-polling its CQ
 * (FI_PROGRESS_MANUAL); the client
 * streams fi_write or fi_read of -S bytes with a window of -W in flight
 * (prints bw_MBps), or with -l waits for each one (prints lat_us: the
 * mean time from post to completion, as perftest's ib_read_lat and
 * ib_atomic_lat report it); -o atomic: fi_fetch_atomic FI_SUM on one
 * FI_UINT64.  Every completion is checked for errors.  With -C USEC (and
 * -l), for instruction counts: the client sleeps USEC before each poll,
 * so that polls find their completion, and reports the polls that found
 * nothing; its only library calls in the loop are the rrb_lib_* wrappers
 * (callgrind's --toggle-collect). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "common/ft_rdm.h"

#define RRB_MAX_WINDOW 256
#define RRB_WARMUP 16
#define RRB_TAG_DONE 0x444f4e45ULL	/* "DONE" */

enum rrb_op { RRB_WRITE, RRB_READ, RRB_ATOMIC };

struct rrb_keys {
	uint64_t addr, key, len;
};

static struct {
	struct ft_fab fab;
	struct ft_rdm_ep ep;
	fi_addr_t peer;
	struct ft_buf buf;
	struct rrb_keys keys;
	enum rrb_op op;
	bool latency;
	bool manual;		/* -m */
	long pause_us;		/* -C USEC; -1: busy polling */
	uint64_t empty_polls;	/* -C: polls that found nothing */
	size_t window;
	struct fi_context2 ctx[RRB_MAX_WINDOW];
} g = { .window = 64, .pause_us = -1 };

static void rrb_opt(int op, const char *arg)
{
	switch (op) {
	case 'o':
		if (!strcmp(arg, "write"))
			g.op = RRB_WRITE;
		else if (!strcmp(arg, "read"))
			g.op = RRB_READ;
		else if (!strcmp(arg, "atomic"))
			g.op = RRB_ATOMIC;
		else
			exit(2);
		break;
	case 'l':
		g.latency = true;
		break;
	case 'm':
		g.manual = true;
		break;
	case 'W':
		g.window = strtoul(arg, NULL, 0);
		if (!g.window || g.window > RRB_MAX_WINDOW)
			exit(2);
		break;
	case 'C':
		g.pause_us = strtol(arg, NULL, 0);
		if (g.pause_us < 0 || g.pause_us > 1000000)
			exit(2);
		g.latency = true;
		break;
	}
}

static double rrb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rrb_raddr(void *ptr)
{
	return g.fab.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
	       (uint64_t)(uintptr_t)ptr : 0;
}

/* ---- server ----------------------------------------------------------- */

static int rrb_server(void)
{
	struct fi_cq_tagged_entry e;
	uint64_t done = 0;
	ssize_t ret;

	g.keys = (struct rrb_keys) { .addr = rrb_raddr(g.buf.ptr),
				     .key = fi_mr_key(g.buf.mr),
				     .len = g.buf.len };
	ret = FT_POST(fi_trecv(g.ep.ep, &done, sizeof(done), NULL, g.peer,
			       RRB_TAG_DONE, 0, &g.ctx[0]), g.ep.cq,
		      ft_opts.timeout_ms);
	ret = ret ? ret : ft_oob_send(&g.keys, sizeof(g.keys));
	if (!ret && !g.manual)	/* asleep: the client syncs when done */
		return 0;
	while (!ret) {		/* busy: the target's progress, if any */
		ret = fi_cq_read(g.ep.cq, &e, 1);
		if (ret == 1 && e.op_context == &g.ctx[0])
			return 0;
		ret = ret == -FI_EAGAIN || ret == 1 ? 0 : ret;
	}
	return (int)ret;
}

/* ---- client ----------------------------------------------------------- */

static FT_COUNTED ssize_t rrb_lib_post(size_t i)
{
	uint8_t *local = (uint8_t *)g.buf.ptr + (i % g.window) * ft_opts.size;
	uint64_t raddr = g.keys.addr + (i % g.window) * ft_opts.size;
	static const uint64_t one = 1;

	switch (g.op) {
	case RRB_WRITE:
		return fi_write(g.ep.ep, local, ft_opts.size, g.buf.desc,
				g.peer, raddr, g.keys.key, &g.ctx[i % g.window]);
	case RRB_READ:
		return fi_read(g.ep.ep, local, ft_opts.size, g.buf.desc,
			       g.peer, raddr, g.keys.key, &g.ctx[i % g.window]);
	default:
		return fi_fetch_atomic(g.ep.ep, &one, 1, NULL, local,
				       g.buf.desc, g.peer, g.keys.addr,
				       g.keys.key, FI_UINT64, FI_SUM,
				       &g.ctx[i % g.window]);
	}
}

static FT_COUNTED ssize_t rrb_lib_poll(struct fi_cq_tagged_entry *e,
				       size_t max)
{
	return fi_cq_read(g.ep.cq, e, max);
}

/* -C: the same poll, where nothing is left to come (FT_PROBES) */
static FT_COUNTED ssize_t rrb_probe_poll(struct fi_cq_tagged_entry *e,
					 size_t max)
{
	return fi_cq_read(g.ep.cq, e, max);
}

/* -C: FT_PROBES polls that find nothing to come, behind the same pause */
static void rrb_probe(void)
{
	struct fi_cq_tagged_entry e[16];
	unsigned int i, empty = 0;

	for (i = 0; i < FT_PROBES; i++) {
		if (g.pause_us > 0)
			usleep(g.pause_us);
		empty += rrb_probe_poll(e, 16) == -FI_EAGAIN;
	}
	printf("probe_polls: %u\n", empty);
}

/* Reap up to the completions in flight; -1 on an error completion. */
static int rrb_reap(size_t *inflight)
{
	struct fi_cq_tagged_entry e[16];
	struct fi_cq_err_entry err = { 0 };
	ssize_t n;

	if (g.pause_us > 0)
		usleep(g.pause_us);
	n = rrb_lib_poll(e, 16);
	g.empty_polls += g.pause_us >= 0 && n == -FI_EAGAIN;

	if (n == -FI_EAVAIL) {
		fi_cq_readerr(g.ep.cq, &err, 0);
		fprintf(stderr, "completion error: %s\n", fi_strerror(err.err));
		return -1;
	}
	if (n > 0)
		*inflight -= n;
	return 0;
}

static int rrb_client(void)
{
	size_t total = ft_opts.iters + RRB_WARMUP, posted = 0, done = 0;
	size_t inflight = 0, window = g.latency ? 1 : g.window;
	uint64_t end = ft_now_ms() + 10 * ft_opts.timeout_ms, fin = 1;
	double t0 = 0, t, tpost = 0;
	double *rtt = NULL;
	ssize_t ret;

	ret = ft_oob_recv(&g.keys, sizeof(g.keys));
	if (ret)
		return (int)ret;
	if (g.keys.len < window * ft_opts.size) {
		fprintf(stderr, "the server's region is too small\n");
		return -FI_EINVAL;
	}
	ft_fill(g.buf.ptr, g.buf.len, 7);
	/* -l: each operation's own time too (one in flight) */
	if (g.latency && !(rtt = calloc(ft_opts.iters, sizeof(*rtt))))
		return -FI_ENOMEM;
	while (done < total) {
		if (posted == RRB_WARMUP && done == RRB_WARMUP)
			t0 = rrb_now();
		if (posted < total && inflight < window &&
		    (posted != RRB_WARMUP || done == RRB_WARMUP)) {
			tpost = rtt ? rrb_now() : 0;
			ret = rrb_lib_post(posted);
			if (!ret) {
				posted++;
				inflight++;
				continue;
			}
			if (ret != -FI_EAGAIN)
				break;
		}
		ret = rrb_reap(&inflight) ? -FI_EIO : 0;
		if (ret)
			break;
		if (rtt && posted - inflight > done && done >= RRB_WARMUP)
			rtt[done - RRB_WARMUP] = rrb_now() - tpost;
		done = posted - inflight;
		if (ft_now_ms() > end) {
			ret = -FI_ETIMEDOUT;
			break;
		}
	}
	if (done < total) {
		free(rtt);
		return (int)ret;
	}
	t = rrb_now() - t0;
	if (g.latency) {
		printf("lat_us: %.2f\n", t * 1e6 / ft_opts.iters);
		if (g.pause_us >= 0) {
			printf("empty_polls: %" PRIu64 "\n", g.empty_polls);
			rrb_probe();
		}
		ft_report_percentiles("lat", rtt, ft_opts.iters, 1);
		free(rtt);
	} else
		printf("bw_MBps: %.2f\n",
		       ft_opts.size * (double)ft_opts.iters / t / 1e6);
	if (!g.manual)
		return 0;
	ret = FT_POST(fi_tinject(g.ep.ep, &fin, sizeof(fin), g.peer,
				 RRB_TAG_DONE), g.ep.cq, ft_opts.timeout_ms);
	return (int)ret;
}

/* ---- setup ------------------------------------------------------------ */

static int rrb_setup(void)
{
	struct fi_info *hints = ft_rdm_hints(FI_MSG | FI_TAGGED | FI_RMA |
					     FI_ATOMIC, FI_THREAD_DOMAIN);
	uint8_t name[FT_RDM_NAME_MAX];
	size_t len = sizeof(name);
	int ret;

	if (g.op == RRB_ATOMIC)
		ft_opts.size = 8;
	if (g.latency)
		g.window = 1;
	if (hints)	/* the client always polls for itself */
		hints->domain_attr->data_progress =
			g.manual || !ft_is_server() ? FI_PROGRESS_MANUAL :
						      FI_PROGRESS_AUTO;
	ret = hints ? ft_rdm_fab_open(&g.fab, hints, false) : -FI_ENOMEM;
	fi_freeinfo(hints);
	ret = ret ? ret : ft_rdm_ep_open(&g.fab, NULL, !ft_is_server(), 0,
					 &g.ep);
	ret = ret ? ret : ft_buf_alloc(g.fab.domain, g.window * ft_opts.size,
				       FI_READ | FI_WRITE | FI_REMOTE_READ |
				       FI_REMOTE_WRITE, &g.buf);
	ret = ret ? ret : (ft_is_server() ? ft_oob_listen() : 0);
	if (!ret && ft_is_server())
		ft_info("listening");
	ret = ret ? ret : (ft_is_server() ? ft_oob_accept() :
			   ft_oob_connect());
	ret = ret ? ret : ft_rdm_oob_swap(g.ep.name, g.ep.namelen, name, &len);
	return ret ? ret : ft_rdm_av_insert(g.ep.av, name, &g.peer);
}

int main(int argc, char **argv)
{
	int ret;

	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.iters = 1000;
	ft_opts.size = 8;
	ft_set_extra_opts("o:lmW:C:", " -o OP        write (default), read or "
			  "atomic (8-byte fetch-add)\n"
			  " -l           latency: one operation at a time\n"
			  " -m           FI_PROGRESS_MANUAL, the server "
			  "busy-polls\n"
			  " -W N         operations in flight (default 64)\n"
			  " -C USEC      -l, the client sleeping USEC before "
			  "each poll (prints\n"
			  "              empty_polls), for valgrind "
			  "--tool=callgrind\n"
			  "              --collect-atstart=no "
			  "--toggle-collect='rrb_lib_*'\n",
			  rrb_opt);
	ft_parse_opts(argc, argv, "RDM RMA/atomic bandwidth and latency "
		      "(the client prints bw_MBps or lat_us).", true);
	ret = rrb_setup();
	ret = ret ? ret : (ft_is_server() ? rrb_server() : rrb_client());
	ret = ret ? ret : ft_oob_sync();
	if (ret)
		fprintf(stderr, "fi_rivet_rdm_rma_bw: %s\n", fi_strerror(-ret));
	fflush(stdout);
	ft_rdm_ep_close(&g.ep);
	ft_buf_free(&g.buf);
	ft_oob_close();
	ft_fab_close(&g.fab);
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}
