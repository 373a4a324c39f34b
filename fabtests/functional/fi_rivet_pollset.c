// SPDX-License-Identifier: MIT
/* Poll sets and wait sets (fi_poll(3)), single process: two RDM endpoints
 * of one domain, A (receiver: its CQ and receive counter attached to a
 * wait set) and B (sender).  fi_poll names exactly the CQs and counters
 * with something, none when idle; fi_wait blocks until a message that B
 * sends after a delay arrives, and times out when nothing comes; the wait
 * set's FI_GETWAIT fd is pollable; the misuse cases fail as the man pages
 * say.
 *
 * usage: fi_rivet_pollset [-p PROV] [-s ADDR] */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/resource.h>

#include "common/ft_rdm.h"

/* Wait sets, poll sets and fi_av_bind are deprecated in libfabric 2.x, yet
 * still its API, and rivet serves them to the programs that use them: this
 * test calls them on purpose. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define PS_MSG_LEN 64
#define PS_DELAY_MS 300		/* B sends this long after fi_wait starts */
#define PS_TIMEOUT_MS 200	/* fi_wait on an idle set */

/* One endpoint: its CQ and counter, whose contexts are these names. */
struct ps_ep {
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	fi_addr_t peer;
	struct ft_buf buf;
	uint8_t name[FT_RDM_NAME_MAX];
	size_t namelen;
};

static struct ft_fab g_fab;
static struct fid_wait *g_ws;
static struct ps_ep g_a, g_b;
static char g_ctx_cqa[] = "cq A", g_ctx_cqb[] = "cq B";
static char g_ctx_cnta[] = "cntr A", g_ctx_cntb[] = "cntr B";
static char g_ctx_idle_cq[] = "idle cq", g_ctx_idle_cntr[] = "idle cntr";

static const char *ps_err(int ret)
{
	return fi_strerror(ret < 0 ? -ret : ret);
}

/* ---- setup ---- */

static struct fi_info *ps_info_any_port(void)
{
	struct fi_info *dup = fi_dupinfo(g_fab.info);
	struct sockaddr_in *sin;

	if (dup && dup->src_addr) {
		sin = dup->src_addr;
		if (sin->sin_family == AF_INET)
			sin->sin_port = 0;
		else
			((struct sockaddr_in6 *)dup->src_addr)->sin6_port = 0;
	}
	return dup;
}

/* A: CQ and receive counter in the wait set; B: no wait objects. */
static int ps_ep_open(struct ps_ep *e, bool in_set, void *cq_ctx,
		      void *cntr_ctx)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_info *info = ps_info_any_port();
	int ret;

	if (in_set) {
		cq_attr.wait_obj = cntr_attr.wait_obj = FI_WAIT_SET;
		cq_attr.wait_set = cntr_attr.wait_set = g_ws;
	}
	ret = info ? ft_rdm_av_open(g_fab.domain, 4, &e->av) : -FI_ENOMEM;
	ret = ret ? ret : fi_cq_open(g_fab.domain, &cq_attr, &e->cq, cq_ctx);
	ret = ret ? ret : fi_cntr_open(g_fab.domain, &cntr_attr, &e->cntr,
				       cntr_ctx);
	ret = ret ? ret : fi_endpoint(g_fab.domain, info, &e->ep, NULL);
	ret = ret ? ret : fi_ep_bind(e->ep, &e->av->fid, 0);
	ret = ret ? ret : fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV);
	ret = ret ? ret : fi_ep_bind(e->ep, &e->cntr->fid,
				     in_set ? FI_RECV : FI_SEND);
	ret = ret ? ret : fi_enable(e->ep);
	e->namelen = sizeof(e->name);
	ret = ret ? ret : fi_getname(&e->ep->fid, e->name, &e->namelen);
	ret = ret ? ret : ft_buf_alloc(g_fab.domain, PS_MSG_LEN,
				       FI_SEND | FI_RECV, &e->buf);
	fi_freeinfo(info);
	return ret;
}

static void ps_ep_close(struct ps_ep *e)
{
	ft_buf_free(&e->buf);
	ft_close_fid(e->ep ? &e->ep->fid : NULL, "ep");
	ft_close_fid(e->av ? &e->av->fid : NULL, "av");
}

/* What the endpoints leave: their CQs and counters (wait set members). */
static void ps_ep_close_objects(struct ps_ep *e, const char *cq_tag,
				const char *cntr_tag)
{
	int r;

	r = e->cq ? fi_close(&e->cq->fid) : 0;
	ft_check(!r, cq_tag, "fi_close(cq): %s", ps_err(r));
	r = e->cntr ? fi_close(&e->cntr->fid) : 0;
	ft_check(!r, cntr_tag, "fi_close(cntr): %s", ps_err(r));
	e->cq = NULL;
	e->cntr = NULL;
}

static int ps_setup(void)
{
	struct fi_info *hints = ft_rdm_hints(FI_MSG, FI_THREAD_SAFE);
	struct fi_wait_attr wattr = { .wait_obj = FI_WAIT_FD };
	int ret;

	ret = hints ? ft_rdm_fab_open(&g_fab, hints, true) : -FI_ENOMEM;
	fi_freeinfo(hints);
	if (!ft_check(!ret, "setup_fabric", "%s", ps_err(ret)))
		return ret;
	/* without a wait set, the poll set cases still run */
	ret = fi_wait_open(g_fab.fabric, &wattr, &g_ws);
	ft_check(!ret, "wait_open", "%s", ps_err(ret));
	if (ret)
		g_ws = NULL;
	ret = ps_ep_open(&g_a, g_ws != NULL, g_ctx_cqa, g_ctx_cnta);
	ret = ret ? ret : ps_ep_open(&g_b, false, g_ctx_cqb, g_ctx_cntb);
	ret = ret ? ret : ft_rdm_av_insert(g_a.av, g_b.name, &g_a.peer);
	ret = ret ? ret : ft_rdm_av_insert(g_b.av, g_a.name, &g_b.peer);
	ft_check(!ret, "setup_endpoints", "%s", ps_err(ret));
	return ret;
}

/* ---- traffic ---- */

static int ps_post_recv(void)
{
	ssize_t r = FT_RDM_POST(fi_recv(g_a.ep, g_a.buf.ptr, PS_MSG_LEN,
					g_a.buf.desc, FI_ADDR_UNSPEC, NULL));

	return (int)r;
}

static int ps_send(void)
{
	ssize_t r;

	memset(g_b.buf.ptr, 0x5a, PS_MSG_LEN);
	r = FT_RDM_POST(fi_send(g_b.ep, g_b.buf.ptr, PS_MSG_LEN, g_b.buf.desc,
				g_b.peer, NULL));
	return (int)r;
}

/* Reads one completion of cq within ms; 1 on success, else an error. */
static int ps_cq_take(struct fid_cq *cq, int ms)
{
	struct fi_cq_data_entry comp;
	struct fi_cq_err_entry err = { 0 };
	uint64_t end = ft_now_ms() + ms;
	ssize_t r;

	do {
		r = fi_cq_read(cq, &comp, 1);
		if (r == -FI_EAVAIL) {
			fi_cq_readerr(cq, &err, 0);
			return -err.err;
		}
		if (r != -FI_EAGAIN)
			return (int)r;
	} while (ft_now_ms() < end);
	return -FI_ETIMEDOUT;
}

/* ---- poll sets ---- */

static int ps_ctx_index(void *ctx, void *const *want, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (want[i] == ctx)
			return i;
	return -1;
}

/* fi_poll until every context of want was reported, within the deadline;
 * anything else reported is a failure. */
static void ps_poll_expect(struct fid_poll *ps, void *const *want, int n,
			   const char *name)
{
	void *ctx[8];
	bool seen[8] = { false };
	uint64_t end = ft_now_ms() + ft_opts.timeout_ms;
	int i, k, got, nseen = 0;

	while (nseen < n && ft_now_ms() < end) {
		got = fi_poll(ps, ctx, 8);
		if (got < 0) {
			ft_fail(name, "fi_poll: %s", ps_err(got));
			return;
		}
		for (i = 0; i < got; i++) {
			k = ps_ctx_index(ctx[i], want, n);
			if (k < 0) {
				ft_fail(name, "fi_poll named \"%s\", which "
					"has nothing", (char *)ctx[i]);
				return;
			}
			nseen += !seen[k];
			seen[k] = true;
		}
	}
	for (i = 0; i < n && seen[i]; i++)
		;
	ft_check(nseen == n, name, "\"%s\" never reported",
		 i < n ? (char *)want[i] : "");
}

static void ps_poll_none(struct fid_poll *ps, const char *name)
{
	void *ctx[8];
	int i, got = 0;

	for (i = 0; i < 20 && !got; i++)
		got = fi_poll(ps, ctx, 8);
	ft_check(!got, name, "fi_poll: %d%s%s", got, got > 0 ? ", first " : "",
		 got > 0 ? (char *)ctx[0] : "");
}

static void ps_poll_errors(struct fid_poll *ps, struct fid_cq *idle_cq)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fid_domain *dom2 = NULL;
	struct fid_cq *cq2 = NULL;
	struct fid_eq *eq = NULL;
	struct fid_poll *ps2;
	void *ctx[1];
	int r;

	r = fi_domain(g_fab.fabric, g_fab.info, &dom2, NULL);
	r = r ? r : fi_cq_open(dom2, &cq_attr, &cq2, NULL);
	if (ft_check(!r, "pollset_other_domain_setup", "%s", ps_err(r))) {
		r = fi_poll_add(ps, &cq2->fid, 0);
		ft_check(r == -FI_EINVAL, "pollset_add_other_domain",
			 "fi_poll_add: %s", ps_err(r));
		r = fi_poll_del(ps, &cq2->fid, 0);
		ft_check(r == -FI_EINVAL, "pollset_del_never_added",
			 "fi_poll_del: %s", ps_err(r));
	}
	r = fi_poll_add(ps, &idle_cq->fid, 0);
	ft_check(r == -FI_EALREADY, "pollset_add_twice", "fi_poll_add: %s",
		 ps_err(r));
	r = fi_eq_open(g_fab.fabric, &eq_attr, &eq, NULL);
	r = r ? r : fi_poll_add(ps, &eq->fid, 0);
	ft_check(r == -FI_EINVAL, "pollset_add_eq", "fi_poll_add: %s",
		 ps_err(r));
	r = fi_poll_add(ps, &idle_cq->fid, 1);
	ft_check(r == -FI_EBADFLAGS, "pollset_add_flags", "%s", ps_err(r));
	r = fi_poll_add(ps, NULL, 0);
	ft_check(r == -FI_EINVAL, "pollset_add_null", "%s", ps_err(r));
	r = fi_poll(ps, NULL, 1);
	ft_check(r == -FI_EINVAL, "pollset_poll_null", "%s", ps_err(r));
	r = fi_poll(ps, ctx, 0);
	ft_check(r == -FI_EINVAL, "pollset_poll_count0", "%s", ps_err(r));
	r = fi_poll_open(g_fab.domain, NULL, NULL);
	ft_check(r == -FI_EINVAL, "pollset_open_null", "%s", ps_err(r));
	r = fi_poll_open(g_fab.domain, &(struct fi_poll_attr){ .flags = 1 },
			 &ps2);
	ft_check(r == -FI_EBADFLAGS, "pollset_open_flags", "%s", ps_err(r));
	r = fi_close(&idle_cq->fid);
	ft_check(r == -FI_EBUSY, "pollset_member_close_busy",
		 "fi_close(cq in a poll set): %s", ps_err(r));
	r = fi_close(&ps->fid);
	ft_check(r == -FI_EBUSY, "pollset_close_busy",
		 "fi_close(poll set with members): %s", ps_err(r));
	ft_close_fid(eq ? &eq->fid : NULL, "eq");
	ft_close_fid(cq2 ? &cq2->fid : NULL, "cq2");
	ft_close_fid(dom2 ? &dom2->fid : NULL, "domain2");
}

static void ps_pollset(void)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cq *idle_cq = NULL;
	struct fid_cntr *idle_cntr = NULL;
	struct fid *members[6];
	void *all[4] = { g_ctx_cqa, g_ctx_cqb, g_ctx_cnta, g_ctx_cntb };
	void *cqs[2] = { g_ctx_cqa, g_ctx_cqb };
	void *ctx[8];
	struct fid_poll *ps;
	int r, i, n = 0;

	r = fi_poll_open(g_fab.domain, &(struct fi_poll_attr){ 0 }, &ps);
	if (!ft_check(!r, "pollset_open", "%s", ps_err(r)))
		return;
	r = fi_cq_open(g_fab.domain, &cq_attr, &idle_cq, g_ctx_idle_cq);
	r = r ? r : fi_cntr_open(g_fab.domain, &cntr_attr, &idle_cntr,
				 g_ctx_idle_cntr);
	if (!ft_check(!r, "pollset_idle_objects", "%s", ps_err(r)))
		return;
	members[n++] = &g_a.cq->fid;
	members[n++] = &g_b.cq->fid;
	members[n++] = &g_a.cntr->fid;
	members[n++] = &g_b.cntr->fid;
	members[n++] = &idle_cq->fid;
	members[n++] = &idle_cntr->fid;
	for (i = 0, r = 0; i < n && !r; i++)
		r = fi_poll_add(ps, members[i], 0);
	ft_check(!r, "pollset_add", "fi_poll_add: %s", ps_err(r));
	ps_poll_none(ps, "pollset_idle");

	/* one message: both CQs and both counters, nothing else */
	r = ps_post_recv();
	r = r ? r : ps_send();
	if (ft_check(!r, "pollset_post", "%s", ps_err(r)))
		ps_poll_expect(ps, all, 4, "pollset_reports_members");
	/* counters were reported once; the CQs hold their entries */
	r = fi_poll(ps, ctx, 1);
	ft_check(r == 1, "pollset_count_limit", "fi_poll(count 1): %d", r);
	ps_poll_expect(ps, cqs, 2, "pollset_cqs_until_read");
	r = ps_cq_take(g_a.cq, 1000);
	i = ps_cq_take(g_b.cq, 1000);
	ft_check(r == 1 && i == 1, "pollset_read", "A %s, B %s", ps_err(r),
		 ps_err(i));
	ps_poll_none(ps, "pollset_idle_after_read");
	/* the application's own changes are not events */
	r = fi_cntr_add(idle_cntr, 3);
	r = r ? r : fi_cntr_set(g_a.cntr, 7);
	ft_check(!r, "pollset_cntr_add", "%s", ps_err(r));
	ps_poll_none(ps, "pollset_cntr_add_not_reported");

	ps_poll_errors(ps, idle_cq);
	for (i = 0, r = 0; i < n && !r; i++)
		r = fi_poll_del(ps, members[i], 0);
	ft_check(!r, "pollset_del", "fi_poll_del: %s", ps_err(r));
	r = fi_close(&ps->fid);
	ft_check(!r, "pollset_close", "%s", ps_err(r));
	ft_close_fid(&idle_cq->fid, "idle cq");
	ft_close_fid(&idle_cntr->fid, "idle cntr");
}

/* ---- wait sets ---- */

static double ps_thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *ps_late_sender(void *arg)
{
	int *ret = arg;

	usleep(PS_DELAY_MS * 1000);
	*ret = ps_send();
	if (!*ret)
		*ret = ps_cq_take(g_b.cq, ft_opts.timeout_ms) == 1 ? 0 : -FI_EIO;
	return NULL;
}

/* What happened before (the poll set's message, fi_cntr_set) is news for
 * the wait set once: fi_wait reports it, then the set is idle. */
static void ps_wait_drain(void)
{
	int i, r = 0;

	for (i = 0; i < 5; i++) {
		r = fi_wait(g_ws, 0);
		if (r)
			break;
	}
	ft_check(r == -FI_ETIMEDOUT, "waitset_drain",
		 "fi_wait(0) after %d calls: %s", i, ps_err(r));
}

static void ps_wait_timeout(const char *name)
{
	uint64_t t0 = ft_now_ms(), dt;
	int r;

	r = fi_wait(g_ws, PS_TIMEOUT_MS);
	dt = ft_now_ms() - t0;
	ft_check(r == -FI_ETIMEDOUT && dt + 5 >= PS_TIMEOUT_MS &&
		 dt < PS_TIMEOUT_MS + 2000, name,
		 "fi_wait(%d ms) on an idle set: %s after %llu ms",
		 PS_TIMEOUT_MS, ps_err(r), (unsigned long long)dt);
}

/* fi_wait blocks until B's message arrives, in the kernel: the waiting
 * thread's CPU time stays a fraction of the wait */
static void ps_wait_message(void)
{
	pthread_t tid;
	uint64_t t0, dt;
	double cpu;
	int r, sret = -1;

	r = ps_post_recv();
	if (!ft_check(!r, "waitset_post_recv", "%s", ps_err(r)))
		return;
	if (pthread_create(&tid, NULL, ps_late_sender, &sret)) {
		ft_fail("waitset_wakes", "pthread_create failed");
		return;
	}
	t0 = ft_now_ms();
	cpu = ps_thread_cpu_ms();
	r = fi_wait(g_ws, ft_opts.timeout_ms);
	dt = ft_now_ms() - t0;
	cpu = ps_thread_cpu_ms() - cpu;
	ft_check(!r && dt + 50 >= PS_DELAY_MS, "waitset_wakes",
		 "fi_wait: %s after %llu ms (the message left after %d ms)",
		 ps_err(r), (unsigned long long)dt, PS_DELAY_MS);
	ft_check(cpu < dt / 2.0 + 20, "waitset_blocks",
		 "%.1f ms of CPU in %llu ms of fi_wait", cpu,
		 (unsigned long long)dt);
	ft_info("fi_wait: woke after %llu ms, %.1f ms CPU",
		(unsigned long long)dt, cpu);
	pthread_join(tid, NULL);
	ft_check(!sret, "waitset_sender", "%s", ps_err(sret));
	r = ps_cq_take(g_a.cq, 1000);
	ft_check(r == 1, "waitset_message_read", "%s", ps_err(r));
	/* read, and the counter's change reported: idle again */
	ps_wait_timeout("waitset_idle_after_read");
}

/* FI_GETWAIT: an fd poll(2) finds readable when a member is signaled;
 * fi_trywait says when sleeping on it is safe */
static void ps_wait_fd(void)
{
	struct pollfd pfd = { .events = POLLIN };
	struct fid *fids[1] = { &g_ws->fid };
	enum fi_wait_obj obj = FI_WAIT_NONE;
	int r;

	r = fi_control(&g_ws->fid, FI_GETWAIT, &pfd.fd);
	if (!ft_check(!r && pfd.fd >= 0, "waitset_getwait", "%s, fd %d",
		      ps_err(r), pfd.fd))
		return;
	r = fi_control(&g_ws->fid, FI_GETWAITOBJ, &obj);
	ft_check(!r && obj == FI_WAIT_FD, "waitset_getwaitobj", "%s, %d",
		 ps_err(r), obj);
	r = fi_trywait(g_fab.fabric, fids, 1);
	ft_check(!r, "waitset_trywait_idle", "%s", ps_err(r));
	r = poll(&pfd, 1, 0);
	ft_check(r == 0, "waitset_fd_idle", "poll: %d", r);
	r = fi_cq_signal(g_a.cq);
	r = r ? r : poll(&pfd, 1, 2000) == 1 ? 0 : -FI_ETIMEDOUT;
	ft_check(!r, "waitset_fd_cq_signal", "%s", ps_err(r));
	r = fi_trywait(g_fab.fabric, fids, 1);
	ft_check(r == -FI_EAGAIN, "waitset_trywait_signaled", "%s", ps_err(r));
	r = fi_trywait(g_fab.fabric, fids, 1);
	ft_check(!r && poll(&pfd, 1, 0) == 0, "waitset_trywait_again",
		 "%s", ps_err(r));
	r = fi_cntr_add(g_a.cntr, 1);
	r = r ? r : poll(&pfd, 1, 2000) == 1 ? 0 : -FI_ETIMEDOUT;
	ft_check(!r, "waitset_fd_cntr", "%s", ps_err(r));
	r = fi_wait(g_ws, 0);
	ft_check(!r, "waitset_wait_cntr", "fi_wait: %s", ps_err(r));
	ps_wait_timeout("waitset_idle_after_fd");
}

/* An EQ of the set: fi_eq_write wakes fi_wait */
static void ps_wait_eq(void)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_SET, .wait_set = g_ws,
				   .flags = FI_WRITE };
	struct fi_eq_entry entry = { .context = g_ctx_cqa };
	struct fid_eq *eq;
	uint32_t event;
	int r;

	r = fi_eq_open(g_fab.fabric, &attr, &eq, NULL);
	if (!ft_check(!r, "waitset_eq_open", "%s", ps_err(r)))
		return;
	ps_wait_timeout("waitset_eq_idle");
	r = (int)fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry), 0);
	ft_check(r == sizeof(entry), "waitset_eq_write", "%d", r);
	r = fi_wait(g_ws, 2000);
	ft_check(!r, "waitset_eq_wakes", "fi_wait: %s", ps_err(r));
	r = (int)fi_eq_read(eq, &event, &entry, sizeof(entry), 0);
	ft_check(r == sizeof(entry) && event == FI_NOTIFY, "waitset_eq_read",
		 "%d", r);
	r = fi_close(&eq->fid);
	ft_check(!r, "waitset_eq_close", "%s", ps_err(r));
}

static void ps_wait_errors(void)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA,
				      .wait_obj = FI_WAIT_SET };
	struct fi_cntr_attr cntr_attr = { .wait_obj = FI_WAIT_SET };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_SET };
	struct fi_wait_attr wattr = { .wait_obj = FI_WAIT_NONE };
	struct fid_fabric *fab2 = NULL;
	struct fid_wait *ws2 = NULL;
	struct fid_cq *cq = NULL;
	struct fid_cntr *cntr = NULL;
	struct fid_eq *eq = NULL;
	int r;

	r = fi_wait_open(g_fab.fabric, &wattr, &ws2);
	ft_check(r == -FI_EINVAL, "waitset_open_wait_none", "%s", ps_err(r));
	wattr.wait_obj = FI_WAIT_FD;
	wattr.flags = 1;
	r = fi_wait_open(g_fab.fabric, &wattr, &ws2);
	ft_check(r == -FI_EBADFLAGS, "waitset_open_flags", "%s", ps_err(r));
	r = fi_wait_open(g_fab.fabric, NULL, NULL);
	ft_check(r == -FI_EINVAL, "waitset_open_null", "%s", ps_err(r));
	r = fi_cq_open(g_fab.domain, &cq_attr, &cq, NULL);
	ft_check(r == -FI_EINVAL, "waitset_cq_null_set", "%s", ps_err(r));
	cntr_attr.events = FI_CNTR_EVENTS_COMP;
	r = fi_cntr_open(g_fab.domain, &cntr_attr, &cntr, NULL);
	ft_check(r == -FI_EINVAL, "waitset_cntr_null_set", "%s", ps_err(r));
	r = fi_eq_open(g_fab.fabric, &eq_attr, &eq, NULL);
	ft_check(r == -FI_EINVAL, "waitset_eq_null_set", "%s", ps_err(r));
	r = fi_control(&g_ws->fid, FI_GETWAIT, NULL);
	ft_check(r == -FI_EINVAL, "waitset_getwait_null", "%s", ps_err(r));

	/* a wait set of another fabric */
	r = fi_fabric(g_fab.info->fabric_attr, &fab2, NULL);
	wattr.flags = 0;
	r = r ? r : fi_wait_open(fab2, &wattr, &ws2);
	if (ft_check(!r, "waitset_other_fabric_setup", "%s", ps_err(r))) {
		cq_attr.wait_set = ws2;
		r = fi_cq_open(g_fab.domain, &cq_attr, &cq, NULL);
		ft_check(r == -FI_EINVAL, "waitset_other_fabric", "%s",
			 ps_err(r));
		/* a CQ without FI_WAIT_SET ignores wait_set */
		cq_attr.wait_obj = FI_WAIT_NONE;
		r = fi_cq_open(g_fab.domain, &cq_attr, &cq, NULL);
		ft_check(!r, "waitset_wait_none_cq", "%s", ps_err(r));
		r = fi_close(&ws2->fid);
		ft_check(!r, "waitset_wait_none_not_member",
			 "fi_close(wait set): %s", ps_err(r));
		ft_close_fid(cq ? &cq->fid : NULL, "cq");
	}
	ft_close_fid(fab2 ? &fab2->fid : NULL, "fabric2");
	r = fi_close(&g_ws->fid);
	ft_check(r == -FI_EBUSY, "waitset_close_busy",
		 "fi_close(wait set with members): %s", ps_err(r));
}

/* fi_cntr_wait on endpoints with counters and no CQ (fi_rdm_cntr_pingpong
 * upstream): the wait must run the endpoint's progress while it blocks.
 * A thread drives the sender's progress by reading its counter. */
static void *ps_cntr_pump(void *arg)
{
	struct fid_cntr *sc = arg;
	uint64_t end = ft_now_ms() + 5000;

	while (fi_cntr_read(sc) < 1 && ft_now_ms() < end)
		usleep(1000);
	return NULL;
}

static void ps_cntr_only(void)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *rc = NULL, *sc = NULL;
	struct ps_ep c = { 0 }, d = { 0 };
	struct fi_info *info = ps_info_any_port();
	uint64_t t0 = 0, took = 0;
	fi_addr_t peer;
	pthread_t pump;
	int ret, i;

	ret = info ? 0 : -FI_ENOMEM;
	ret = ret ? ret : fi_cntr_open(g_fab.domain, &attr, &rc, NULL);
	ret = ret ? ret : fi_cntr_open(g_fab.domain, &attr, &sc, NULL);
	for (i = 0; i < 2 && !ret; i++) {
		struct ps_ep *e = i ? &d : &c;

		ret = ft_rdm_av_open(g_fab.domain, 4, &e->av);
		ret = ret ? ret : fi_endpoint(g_fab.domain, info, &e->ep, NULL);
		ret = ret ? ret : fi_ep_bind(e->ep, &e->av->fid, 0);
		ret = ret ? ret : fi_ep_bind(e->ep, i ? &sc->fid : &rc->fid,
					     i ? FI_SEND : FI_RECV);
		ret = ret ? ret : fi_enable(e->ep);
		e->namelen = sizeof(e->name);
		ret = ret ? ret : fi_getname(&e->ep->fid, e->name,
					     &e->namelen);
		ret = ret ? ret : ft_buf_alloc(g_fab.domain, PS_MSG_LEN,
					       FI_SEND | FI_RECV, &e->buf);
	}
	ret = ret ? ret : ft_rdm_av_insert(d.av, c.name, &peer);
	ret = ret ? ret : (int)fi_recv(c.ep, c.buf.ptr, PS_MSG_LEN,
				       c.buf.desc, FI_ADDR_UNSPEC, NULL);
	ret = ret ? ret : (int)fi_send(d.ep, d.buf.ptr, PS_MSG_LEN,
				       d.buf.desc, peer, NULL);
	if (!ret)
		ret = pthread_create(&pump, NULL, ps_cntr_pump, sc) ?
		      -FI_EOTHER : 0;
	if (!ret) {
		t0 = ft_now_ms();
		ret = fi_cntr_wait(rc, 1, 5000);
		took = ft_now_ms() - t0;
		pthread_join(pump, NULL);
	}
	/* without progress inside the wait it would sleep out its 5 s */
	ft_check(!ret && took < 4000, "cntr_wait_without_cq",
		 "%s after %llu ms (received %llu)", ps_err(ret),
		 (unsigned long long)took,
		 rc ? (unsigned long long)fi_cntr_read(rc) : 0ULL);
	ps_ep_close(&d);
	ps_ep_close(&c);
	ft_close_fid(rc ? &rc->fid : NULL, "cntr");
	ft_close_fid(sc ? &sc->fid : NULL, "cntr");
	fi_freeinfo(info);
}

int main(int argc, char **argv)
{
	bool ok;
	int r;

	ft_parse_opts(argc, argv, "poll sets and wait sets (single process).",
		      false);
	ok = !ps_setup();
	if (ok) {
		ps_pollset();
		ps_cntr_only();
	}
	if (ok && g_ws) {
		ps_wait_drain();
		ps_wait_timeout("waitset_timeout");
		ps_wait_message();
		ps_wait_fd();
		ps_wait_eq();
		ps_wait_errors();
	}
	ps_ep_close(&g_b);
	ps_ep_close(&g_a);
	ps_ep_close_objects(&g_b, "close_cq_b", "close_cntr_b");
	ps_ep_close_objects(&g_a, "close_cq_a", "close_cntr_a");
	if (g_ws) {
		r = fi_close(&g_ws->fid);
		ft_check(!r, "waitset_close", "%s", ps_err(r));
	}
	ft_fab_close(&g_fab);
	return ft_summary();
}
