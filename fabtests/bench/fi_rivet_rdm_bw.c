// SPDX-License-Identifier: MIT
/* RDM tagged benchmark with any provider (the MPI path): streaming, the
 * client keeping a window of fi_tsend in flight while the server keeps a
 * window of fi_trecv posted, each message's edges checked, the server
 * acking the last one; or, with -l, a tagged ping-pong (fi_tinject when
 * the size fits the inject size). Setup, AV and the out-of-band name
 * exchange come from the ft_rdm helpers; completions are busy-polled.
 * With -C USEC, a ping-pong for instruction counts: the client asks for
 * FI_PROGRESS_MANUAL and sleeps USEC before each poll, so that polls find
 * their completion, and reports the polls that found nothing; its only
 * library calls are the rb_lib_* wrappers (callgrind's --toggle-collect).
 * With -D N, both sides first post N receives that nothing matches (tags
 * of their own, any source, as the test's own): a deep posted queue, as
 * MPI codes keep, for the matching engine to see through.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/ft_rdm.h"

#define RB_DEFAULT_ITERS 1000
#define RB_DEFAULT_SIZE 65536
#define RB_DEFAULT_WINDOW 64
#define RB_MAX_WINDOW 1024
#define RB_WARMUP 16
#define RB_POLL 16
#define RB_MAGIC 0x52524257u		/* "RRBW" */
#define RB_TAG_DATA 0x100000000ULL	/* | sequence number */
#define RB_TAG_ACK 0x200000000ULL
#define RB_TAG_DEEP 0x400000000ULL	/* | index: -D's receives */
#define RB_MAX_DEEP 1000000

/* Post, retrying -FI_EAGAIN with progress-only CQ reads (FT_RDM_POST's
 * progress would move our completions into the helpers' stash). */
#define RB_POST(call) FT_POST(call, g.ep.cq, ft_opts.timeout_ms)

/* Exchanged over the OOB socket: both sides must run the same test. */
struct rb_params {
	uint32_t magic;
	uint32_t window;
	uint64_t size;
	uint64_t iters;
	uint32_t latency;
	uint32_t deep;
};

/* The server's answer after the last streamed message. */
struct rb_ack {
	uint32_t magic;
	uint32_t bad;		/* messages with a wrong length or edge */
	uint64_t count;		/* messages received */
};

struct rb_state {
	struct ft_fab fab;
	struct ft_rdm_ep ep;
	fi_addr_t peer;
	struct ft_buf buf;	/* window slots of size bytes each, + ack */
	size_t size;
	size_t window;
	size_t inject;		/* 0: no inject in the ping-pong */
	uint64_t total;		/* warm-up plus timed messages */
	uint64_t bad;
	uint64_t slot_seq[RB_MAX_WINDOW];	/* receiver: what each holds */
	bool slot_busy[RB_MAX_WINDOW];
	struct fi_context2 ctx[RB_MAX_WINDOW];
	struct fi_context2 ack_ctx;
	struct rb_ack *ack;	/* in the registered buffer's tail */
};

static struct rb_state g;
static size_t g_window_opt = RB_DEFAULT_WINDOW;
static bool g_latency;
static bool g_manual;	/* -m: ask for FI_PROGRESS_MANUAL data progress */
static long g_pause_us = -1;	/* -C USEC; -1: busy polling */
static uint64_t g_empty_polls;	/* -C: the client's polls that found none */
static long g_deep;		/* -D N: unmatched receives posted first */

/* ---- options ---------------------------------------------------------- */

static void rb_opt(int op, const char *arg)
{
	char *end;
	long val;

	if (op == 'l' || op == 'm') {
		*(op == 'l' ? &g_latency : &g_manual) = true;
		return;
	}
	val = strtol(arg, &end, 0);
	if (op == 'W' && !*end && end != arg && val >= 1 &&
	    val <= RB_MAX_WINDOW) {
		g_window_opt = val;
		return;
	}
	if (op == 'C' && !*end && end != arg && val >= 0 && val <= 1000000) {
		g_pause_us = val;
		g_latency = g_manual = true;
		return;
	}
	if (op == 'D' && !*end && end != arg && val >= 0 &&
	    val <= RB_MAX_DEEP) {
		g_deep = val;
		return;
	}
	fprintf(stderr, "fi_rivet_rdm_bw: -W takes 1 to %d, -C and -D 0 to "
		"1000000, not '%s' (try -h)\n", RB_MAX_WINDOW, arg);
	exit(2);
}

static void rb_parse_opts(int argc, char **argv)
{
	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.timeout_ms = FT_RDM_DEADLINE_MS;
	ft_opts.iters = RB_DEFAULT_ITERS;
	ft_opts.size = RB_DEFAULT_SIZE;
	ft_set_extra_opts("W:lmC:D:",
		" -W N         sends/receives in flight (default 64)\n"
		" -l           ping-pong latency instead of streaming\n"
		" -m           ask for FI_PROGRESS_MANUAL data progress\n"
		" -C USEC      ping-pong (-l -m), the client sleeping USEC "
		"before each\n"
		"              poll (prints empty_polls), for valgrind "
		"--tool=callgrind\n"
		"              --collect-atstart=no --toggle-collect='rb_lib_*'"
		"\n"
		" -D N         first post N receives that nothing matches "
		"(both sides)\n",
		rb_opt);
	ft_parse_opts(argc, argv, "RDM tagged streaming bandwidth and message "
		      "rate, or (-l) ping-pong\nlatency; defaults here: -e rdm "
		      "-I 1000 -S 64k. The client prints\n'bw_MBps: <MB/s>' and "
		      "'msg_rate: <messages/s>' (MB = 10^6 bytes), or\n"
		      "'lat_us: <usec>' (one-way mean). Give both sides -s ADDR.",
		      true);
	if (ft_opts.all_sizes) {
		fprintf(stderr, "%s: -S all is not supported\n", argv[0]);
		exit(2);
	}
	g.size = ft_opts.size;
	g.window = g_latency ? 1 : g_window_opt;
	g.total = (uint64_t)ft_opts.iters + RB_WARMUP;
}

/* ---- message edges ---------------------------------------------------- */

static uint64_t rb_head(uint64_t seq)
{
	return (seq + 1) * 0x9E3779B97F4A7C15ULL ^ RB_MAGIC;
}

static size_t rb_edge_len(void)
{
	return g.size < 8 ? g.size : 8;
}

/* The first and last (up to) 8 bytes carry the sequence number; when they
 * overlap (size < 16) the tail wins. */
static void rb_mark(void *msg, uint64_t seq)
{
	uint64_t head = rb_head(seq), tail = ~head;
	size_t n = rb_edge_len();

	memcpy(msg, &head, n);
	memcpy((char *)msg + g.size - n, &tail, n);
}

static bool rb_check(const void *msg, uint64_t seq)
{
	uint64_t head = rb_head(seq), tail = ~head;
	size_t n = rb_edge_len();
	size_t head_only = g.size - n < n ? g.size - n : n;

	return !memcmp(msg, &head, head_only) &&
		!memcmp((const char *)msg + g.size - n, &tail, n);
}

static void *rb_slot(size_t i)
{
	return (char *)g.buf.ptr + i * g.size;
}

static int rb_slot_of(void *ctx)
{
	struct fi_context2 *c = ctx;

	if (c < &g.ctx[0] || c >= &g.ctx[g.window])
		return -1;
	return (int)(c - &g.ctx[0]);
}

/* ---- completions ------------------------------------------------------ */

static double rb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int rb_cq_error(void)
{
	struct fi_cq_err_entry err = { 0 };

	if (fi_cq_readerr(g.ep.cq, &err, 0) < 0) {
		fprintf(stderr, "fi_cq_readerr failed\n");
		return -FI_EOTHER;
	}
	fprintf(stderr, "completion error: %s (prov_errno %d: %s)\n",
		fi_strerror(err.err), err.prov_errno,
		ft_cq_errstr(g.ep.cq, &err));
	return err.err ? -err.err : -FI_EOTHER;
}

/* The library calls of the ping-pong (-C counts what they execute). */
static FT_COUNTED ssize_t rb_lib_poll(struct fi_cq_tagged_entry *comp,
				      size_t max)
{
	return fi_cq_read(g.ep.cq, comp, max);
}

/* -C: the same poll, where nothing is left to come (FT_PROBES) */
static FT_COUNTED ssize_t rb_probe_poll(struct fi_cq_tagged_entry *comp,
					size_t max)
{
	return fi_cq_read(g.ep.cq, comp, max);
}

static FT_COUNTED ssize_t rb_lib_trecv(size_t slot, uint64_t seq)
{
	/* from any source: there is one peer */
	return fi_trecv(g.ep.ep, rb_slot(slot), g.size, g.buf.desc,
			FI_ADDR_UNSPEC, RB_TAG_DATA | seq, 0, &g.ctx[slot]);
}

static FT_COUNTED ssize_t rb_lib_tinject(void *msg, uint64_t seq)
{
	return fi_tinject(g.ep.ep, msg, g.size, g.peer, RB_TAG_DATA | seq);
}

static FT_COUNTED ssize_t rb_lib_tsend(void *msg, uint64_t seq)
{
	return fi_tsend(g.ep.ep, msg, g.size, g.buf.desc, g.peer,
			RB_TAG_DATA | seq, &g.ack_ctx);
}

/* Read up to max completions, spinning (the client of -C sleeping before
 * each read): their count, or a negative error (-FI_ETIMEDOUT when none
 * came within the timeout). */
static ssize_t rb_cq_read(struct fi_cq_tagged_entry *comp, size_t max)
{
	uint64_t end = ft_now_ms() + ft_timeout_for(g.size);
	bool sleepy = g_pause_us >= 0 && !ft_is_server();
	unsigned int n = 0;
	ssize_t ret;

	for (;;) {
		if (sleepy && g_pause_us)
			usleep(g_pause_us);
		ret = rb_lib_poll(comp, max);
		if (ret > 0)
			return ret;
		if (ret == -FI_EAVAIL)
			return rb_cq_error();
		if (ret != -FI_EAGAIN) {
			fprintf(stderr, "fi_cq_read: %s\n",
				fi_strerror((int)-ret));
			return ret;
		}
		g_empty_polls += sleepy;
		if ((sleepy || !(++n & 1023)) && ft_now_ms() >= end)
			break;
	}
	fprintf(stderr, "no completion within %d ms\n",
		ft_timeout_for(g.size));
	return -FI_ETIMEDOUT;
}

static int rb_post_err(const char *what, ssize_t ret)
{
	fprintf(stderr, "%s(%zu): %s\n", what, g.size, fi_strerror((int)-ret));
	return (int)ret;
}

static int rb_post_recv(size_t slot, uint64_t seq)
{
	ssize_t ret;

	ret = RB_POST(rb_lib_trecv(slot, seq));
	if (ret)
		return rb_post_err("fi_trecv", ret);
	g.slot_seq[slot] = seq;
	g.slot_busy[slot] = true;
	return 0;
}

/* ---- ping-pong (-l) --------------------------------------------------- */

/* Slot 0 holds what we receive, slot 1 what we send (rb_setup allocates
 * two slots for -l); corrupt: a wrong pong, for a wrong ping. */
static int rb_pp_send(uint64_t seq, bool corrupt, bool *send_done)
{
	void *msg = rb_slot(1);
	ssize_t ret;

	rb_mark(msg, corrupt ? seq + g.total : seq);
	if (g.size <= g.inject) {
		*send_done = true;
		ret = RB_POST(rb_lib_tinject(msg, seq));
		return ret ? rb_post_err("fi_tinject", ret) : 0;
	}
	*send_done = false;
	ret = RB_POST(rb_lib_tsend(msg, seq));
	return ret ? rb_post_err("fi_tsend", ret) : 0;
}

/* Wait for the receive of seq (slot 0) and, if pending, our send. */
static int rb_pp_wait(uint64_t seq, bool *send_done)
{
	struct fi_cq_tagged_entry comp;
	bool recv_done = false;
	ssize_t ret;

	while (!recv_done || !*send_done) {
		ret = rb_cq_read(&comp, 1);
		if (ret < 0)
			return (int)ret;
		if (comp.op_context == &g.ack_ctx) {
			*send_done = true;
		} else if (comp.op_context == &g.ctx[0]) {
			recv_done = true;
			g.slot_busy[0] = false;
			if (comp.len != g.size || !rb_check(rb_slot(0), seq))
				g.bad++;
		} else {
			fprintf(stderr, "completion for an unknown context\n");
			return -FI_EOTHER;
		}
	}
	return 0;
}

/* -C: the empty polls, and FT_PROBES more that find nothing to come */
static void rb_probe(void)
{
	struct fi_cq_tagged_entry comp;
	unsigned int i, empty = 0;

	printf("empty_polls: %" PRIu64 "\n", g_empty_polls);
	for (i = 0; i < FT_PROBES; i++) {
		if (g_pause_us)
			usleep(g_pause_us);
		empty += rb_probe_poll(&comp, 1) == -FI_EAGAIN;
	}
	printf("probe_polls: %u\n", empty);
}

static int rb_pp_client(void)
{
	double *rtt = calloc(ft_opts.iters, sizeof(*rtt));
	bool send_done;
	double t0 = 0, t;
	uint64_t seq;
	int ret = 0;

	if (!rtt)
		return -FI_ENOMEM;
	for (seq = 0; !ret && seq < g.total; seq++) {
		t = rb_now();
		if (seq == RB_WARMUP)
			t0 = t;
		ret = rb_post_recv(0, seq);
		ret = ret ? ret : rb_pp_send(seq, false, &send_done);
		ret = ret ? ret : rb_pp_wait(seq, &send_done);
		if (seq >= RB_WARMUP)
			rtt[seq - RB_WARMUP] = rb_now() - t;
	}
	if (!ret && !g.bad)
		ft_report_percentiles("lat", rtt, ft_opts.iters, 0.5);
	free(rtt);
	if (ret)
		return ret;
	if (g.bad) {
		fprintf(stderr, "%" PRIu64 " pongs wrong\n", g.bad);
		return -FI_EIO;
	}
	t0 = rb_now() - t0;
	printf("# %s: ping-pong %d x %zu B (%s): %.3f s\n",
	       g.fab.info->fabric_attr->prov_name, ft_opts.iters, g.size,
	       g.size <= g.inject ? "fi_tinject" : "fi_tsend", t0);
	printf("lat_us: %.2f\n", t0 * 1e6 / (2.0 * ft_opts.iters));
	if (g_pause_us >= 0)
		rb_probe();
	return 0;
}

/* Server: the first receive is posted before the start barrier; a wrong
 * ping gets a wrong pong. */
static int rb_pp_server(void)
{
	bool send_done;
	uint64_t seq, bad;
	int ret = 0;

	for (seq = 0; !ret && seq < g.total; seq++) {
		send_done = true;
		bad = g.bad;
		ret = rb_pp_wait(seq, &send_done);
		if (!ret && seq + 1 < g.total)
			ret = rb_post_recv(0, seq + 1);
		ret = ret ? ret : rb_pp_send(seq, g.bad != bad, &send_done);
		while (!ret && !send_done) {
			struct fi_cq_tagged_entry comp;
			ssize_t n = rb_cq_read(&comp, 1);

			if (n < 0)
				ret = (int)n;
			else if (comp.op_context == &g.ack_ctx)
				send_done = true;
		}
	}
	if (ret)
		return ret;
	printf("# ping-pong: %" PRIu64 " x %zu B, %" PRIu64 " bad\n",
	       g.total, g.size, g.bad);
	return g.bad ? -FI_EIO : 0;
}

/* ---- streaming client ------------------------------------------------- */

/* Send messages [*posted, last) while fewer than window are in flight and
 * their slot is free; stops early when the provider says -FI_EAGAIN. */
static int rb_post_sends(uint64_t *posted, uint64_t done, uint64_t last)
{
	size_t slot;
	ssize_t ret;

	while (*posted < last && *posted - done < g.window) {
		slot = *posted % g.window;
		if (g.slot_busy[slot])
			break;
		rb_mark(rb_slot(slot), *posted);
		ret = fi_tsend(g.ep.ep, rb_slot(slot), g.size, g.buf.desc,
			       g.peer, RB_TAG_DATA | *posted, &g.ctx[slot]);
		if (ret == -FI_EAGAIN)
			break;
		if (ret)
			return rb_post_err("fi_tsend", ret);
		g.slot_busy[slot] = true;
		(*posted)++;
	}
	return 0;
}

/* Stream messages [first, last), all of them completed on return; the
 * ack's completion may come meanwhile (*acked). With nothing in flight
 * (the provider said -FI_EAGAIN, as rxm does while it connects), a single
 * read drives progress. */
static int rb_stream(uint64_t first, uint64_t last, bool *acked)
{
	struct fi_cq_tagged_entry comp[RB_POLL];
	uint64_t posted = first, done = first;
	uint64_t end = ft_now_ms() + ft_opts.timeout_ms;
	ssize_t ret, i;
	int slot;

	while (done < last) {
		ret = rb_post_sends(&posted, done, last);
		if (ret)
			return (int)ret;
		if (posted > done) {
			ret = rb_cq_read(comp, RB_POLL);
		} else {
			ret = fi_cq_read(g.ep.cq, comp, RB_POLL);
			if (ret == -FI_EAVAIL)
				ret = rb_cq_error();
			else if (ret == -FI_EAGAIN && ft_now_ms() < end)
				ret = 0;
			if (ret < 0)
				fprintf(stderr, "nothing sent: %s\n",
					fi_strerror((int)-ret));
		}
		if (ret < 0)
			return (int)ret;
		for (i = 0; i < ret; i++) {
			if (comp[i].op_context == &g.ack_ctx) {
				*acked = true;
				continue;
			}
			slot = rb_slot_of(comp[i].op_context);
			if (slot < 0 || !g.slot_busy[slot]) {
				fprintf(stderr, "completion for an unknown "
					"context\n");
				return -FI_EOTHER;
			}
			g.slot_busy[slot] = false;
			done++;
		}
	}
	return 0;
}

static int rb_post_ack_recv(void)
{
	ssize_t ret;

	ret = RB_POST(fi_trecv(g.ep.ep, g.ack, sizeof(*g.ack), g.buf.desc,
			       FI_ADDR_UNSPEC, RB_TAG_ACK, 0, &g.ack_ctx));
	return ret ? rb_post_err("fi_trecv(ack)", ret) : 0;
}

static int rb_wait_ack(bool *acked)
{
	struct fi_cq_tagged_entry comp;
	ssize_t ret;

	while (!*acked) {
		ret = rb_cq_read(&comp, 1);
		if (ret < 0)
			return (int)ret;
		if (comp.op_context == &g.ack_ctx)
			*acked = true;
	}
	return 0;
}

static int rb_stream_client(void)
{
	bool acked = false;
	double t0, secs, mbps;
	int ret;

	ret = rb_post_ack_recv();
	ret = ret ? ret : rb_stream(0, RB_WARMUP, &acked);
	if (ret)
		return ret;
	t0 = rb_now();
	ret = rb_stream(RB_WARMUP, g.total, &acked);
	ret = ret ? ret : rb_wait_ack(&acked);
	if (ret)
		return ret;
	secs = rb_now() - t0;
	if (g.ack->magic != RB_MAGIC || g.ack->count != g.total ||
	    g.ack->bad) {
		fprintf(stderr, "server reports %" PRIu64 " of %" PRIu64
			" messages received, %u bad\n", g.ack->count, g.total,
			g.ack->bad);
		return -FI_EIO;
	}
	mbps = (double)ft_opts.iters * g.size / secs / 1e6;
	printf("# %s: %d x %zu B tagged, window %zu: %.3f s\n",
	       g.fab.info->fabric_attr->prov_name, ft_opts.iters, g.size,
	       g.window, secs);
	printf("bw_MBps: %.2f\n", mbps);
	printf("msg_rate: %.0f\n", ft_opts.iters / secs);
	return 0;
}

/* ---- streaming server ------------------------------------------------- */

/* Receive every message (window receives posted before the start
 * barrier), checking each and reposting its slot. */
static int rb_stream_server(uint64_t posted)
{
	struct fi_cq_tagged_entry comp[RB_POLL];
	uint64_t done = 0;
	ssize_t ret, n, i;
	int slot;

	while (done < g.total) {
		n = rb_cq_read(comp, RB_POLL);
		if (n < 0)
			return (int)n;
		for (i = 0; i < n; i++, done++) {
			slot = rb_slot_of(comp[i].op_context);
			if (slot < 0 || !g.slot_busy[slot]) {
				fprintf(stderr, "completion for an unknown "
					"context\n");
				return -FI_EOTHER;
			}
			g.slot_busy[slot] = false;
			if (comp[i].len != g.size ||
			    !rb_check(rb_slot(slot), g.slot_seq[slot])) {
				if (!g.bad)
					fprintf(stderr, "message %" PRIu64
						": wrong length (%zu) or "
						"data\n", g.slot_seq[slot],
						comp[i].len);
				g.bad++;
			}
			if (posted < g.total) {
				ret = rb_post_recv(slot, posted++);
				if (ret)
					return (int)ret;
			}
		}
	}
	g.ack->magic = RB_MAGIC;
	g.ack->count = done;
	g.ack->bad = g.bad > UINT32_MAX ? UINT32_MAX : (uint32_t)g.bad;
	ret = RB_POST(fi_tsend(g.ep.ep, g.ack, sizeof(*g.ack), g.buf.desc,
			       g.peer, RB_TAG_ACK, &g.ack_ctx));
	if (ret)
		return rb_post_err("fi_tsend(ack)", ret);
	for (;;) {
		ret = rb_cq_read(comp, 1);
		if (ret < 0)
			return (int)ret;
		if (comp[0].op_context == &g.ack_ctx)
			break;
	}
	printf("# received %" PRIu64 " x %zu B, %" PRIu64 " bad\n", g.total,
	       g.size, g.bad);
	return g.bad ? -FI_EIO : 0;
}

/* ---- setup ------------------------------------------------------------ */

static void rb_params_init(struct rb_params *p)
{
	memset(p, 0, sizeof(*p));
	p->magic = RB_MAGIC;
	p->window = g_window_opt;
	p->size = g.size;
	p->iters = ft_opts.iters;
	p->latency = g_latency;
	p->deep = (uint32_t)g_deep;
}

/* Swap names and parameters over the OOB socket; insert the peer. */
static int rb_exchange(void)
{
	uint8_t name[FT_RDM_NAME_MAX];
	struct rb_params mine, theirs;
	size_t len = sizeof(name);
	int ret;

	rb_params_init(&mine);
	ret = ft_oob_send(&mine, sizeof(mine));
	ret = ret ? ret : ft_oob_recv(&theirs, sizeof(theirs));
	if (ret)
		return ret;
	if (memcmp(&mine, &theirs, sizeof(mine))) {
		fprintf(stderr, "the peer runs -S %" PRIu64 " -I %" PRIu64
			" -W %u -D %u%s, we run -S %zu -I %d -W %zu -D %ld%s\n",
			theirs.size, theirs.iters, theirs.window, theirs.deep,
			theirs.latency ? " -l" : "", g.size, ft_opts.iters,
			g_window_opt, g_deep, g_latency ? " -l" : "");
		return -FI_EINVAL;
	}
	ret = ft_rdm_oob_swap(g.ep.name, g.ep.namelen, name, &len);
	return ret ? ret : ft_rdm_av_insert(g.ep.av, name, &g.peer);
}

/* Stay within the endpoint's queues. */
static void rb_fit_window(const struct fi_info *info)
{
	size_t depth = ft_is_server() ? info->rx_attr->size :
		info->tx_attr->size;

	if (depth && g.window > depth) {
		ft_info("window %zu cut to the queue depth %zu", g.window,
			depth);
		g.window = depth;
	}
}

static int rb_setup(void)
{
	/* what MPI asks for (Open MPI's mtl/ofi without
	 * MPI_THREAD_MULTIPLE, MPICH's ch4:ofi, fi_pingpong) */
	struct fi_info *hints = ft_rdm_hints(FI_MSG | FI_TAGGED,
					     FI_THREAD_DOMAIN);
	struct fi_info *info;
	size_t slots;
	int ret;

	if (hints && g_manual)
		hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	if (hints && g_deep)	/* room for them and the test's own */
		hints->rx_attr->size = (size_t)g_deep + RB_MAX_WINDOW + 1;
	ret = hints ? ft_rdm_fab_open(&g.fab, hints, false) : -FI_ENOMEM;
	fi_freeinfo(hints);
	if (ret)
		return ret;
	info = g.fab.info;
	ft_info("data progress %s",
		fi_tostr(&info->domain_attr->data_progress, FI_TYPE_PROGRESS));
	if (g.size > info->ep_attr->max_msg_size) {
		fprintf(stderr, "size %zu exceeds max_msg_size %zu\n", g.size,
			info->ep_attr->max_msg_size);
		return -FI_EMSGSIZE;
	}
	g.inject = info->tx_attr->inject_size;
	rb_fit_window(info);
	ret = ft_rdm_ep_open(&g.fab, NULL, !ft_is_server(), 0, &g.ep);
	if (ret)
		return ret;
	ft_oob_watch(g.ep.cq, NULL);
	slots = g_latency ? 2 : g.window;
	/* the slots, then the ack, 64-byte aligned */
	ret = ft_buf_alloc(g.fab.domain, ((g.size * slots + 63) & ~63UL) +
			   sizeof(*g.ack), FI_SEND | FI_RECV, &g.buf);
	if (!ret)
		g.ack = (struct rb_ack *)((char *)g.buf.ptr +
					  ((g.size * slots + 63) & ~63UL));
	return ret;
}

/* -D: receives no message matches (empty buffers, no context). */
static int rb_post_deep(void)
{
	ssize_t ret;
	long i;

	for (i = 0; i < g_deep; i++) {
		ret = RB_POST(fi_trecv(g.ep.ep, NULL, 0, NULL, FI_ADDR_UNSPEC,
				       RB_TAG_DEEP | (uint64_t)i, 0, NULL));
		if (ret)
			return rb_post_err("fi_trecv(-D)", ret);
	}
	if (g_deep)
		ft_info("%ld unmatched receives posted", g_deep);
	return 0;
}

static int rb_run(void)
{
	uint64_t posted = 0;
	int ret;

	ret = ft_is_server() ? ft_oob_listen() : 0;
	if (!ret && ft_is_server())
		ft_info("listening");
	ret = ret ? ret : (ft_is_server() ? ft_oob_accept() :
			   ft_oob_connect());
	ret = ret ? ret : rb_exchange();
	ret = ret ? ret : rb_post_deep();
	/* receives go up before the client may send */
	if (!ret && ft_is_server() && g_latency)
		ret = rb_post_recv(0, 0);
	for (; !ret && ft_is_server() && !g_latency && posted < g.window &&
	     posted < g.total; posted++)
		ret = rb_post_recv(posted, posted);
	ret = ret ? ret : ft_oob_sync();
	if (ret)
		return ret;
	if (ft_is_server())
		ret = g_latency ? rb_pp_server() : rb_stream_server(posted);
	else
		ret = g_latency ? rb_pp_client() : rb_stream_client();
	/* neither side closes while the other may still need it */
	return ret ? ret : ft_oob_sync();
}

int main(int argc, char **argv)
{
	int ret;

	rb_parse_opts(argc, argv);
	ret = rb_setup();
	ret = ret ? ret : rb_run();
	if (ret)
		fprintf(stderr, "fi_rivet_rdm_bw: %s\n", fi_strerror(-ret));
	fflush(stdout);
	ft_rdm_ep_close(&g.ep);
	ft_buf_free(&g.buf);
	ft_oob_close();
	ft_fab_close(&g.fab);
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}
