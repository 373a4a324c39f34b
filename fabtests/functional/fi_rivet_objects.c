// SPDX-License-Identifier: MIT
/* Object lifecycle conformance (single process): open/close orders, EBUSY
 * on close, MR checks, bind/enable errors, CQ/EQ/counter waits and signals. */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ft_rivet.h"

#define OB_WAIT_MS 300

static struct fi_info *g_info;
static struct fi_info *g_ep_info;	/* g_info plus a destination */
static struct fid_fabric *g_fabric;
static struct fid_domain *g_domain;

static const char *ob_err(int ret)
{
	static char buf[96];

	snprintf(buf, sizeof(buf), "%d (%s)", ret, fi_strerror(ret < 0 ?
								-ret : ret));
	return buf;
}

/* Some providers resolve a route when an active endpoint is created: give
 * it a destination (our own address, a port nobody uses). */
static struct fi_info *ob_ep_info(void)
{
	struct fi_info *info = fi_dupinfo(g_info);
	struct sockaddr_in *sin;

	if (!info || info->dest_addr || !info->src_addr ||
	    (info->addr_format != FI_SOCKADDR_IN &&
	     info->addr_format != FI_SOCKADDR_IN6))
		return info;
	info->dest_addr = malloc(info->src_addrlen);
	if (!info->dest_addr)
		return info;
	memcpy(info->dest_addr, info->src_addr, info->src_addrlen);
	info->dest_addrlen = info->src_addrlen;
	sin = info->dest_addr;	/* port sits at the same offset for in6 */
	sin->sin_port = htons(47630);
	return info;
}

static int ob_setup(void)
{
	struct fi_info *hints = ft_hints_alloc(FI_MSG | FI_RMA);
	uint64_t flags = ft_opts.src_addr ? FI_SOURCE : 0;
	int ret;

	ret = fi_getinfo(FT_FIVERSION, ft_opts.src_addr, NULL, flags, hints,
			 &g_info);
	fi_freeinfo(hints);
	if (ret) {
		ft_fail("setup", "fi_getinfo: %s", ob_err(ret));
		return ret;
	}
	g_ep_info = ob_ep_info();
	ret = fi_fabric(g_info->fabric_attr, &g_fabric, NULL);
	ft_check(!ret, "fabric_open", "fi_fabric: %s", ob_err(ret));
	if (ret)
		return ret;
	ret = fi_domain(g_fabric, g_info, &g_domain, NULL);
	ft_check(!ret, "domain_open", "fi_domain: %s", ob_err(ret));
	return ret;
}

static void ob_teardown(void)
{
	int ret;

	if (g_domain) {
		ret = fi_close(&g_domain->fid);
		ft_check(!ret, "domain_close", "%s", ob_err(ret));
	}
	if (g_fabric) {
		ret = fi_close(&g_fabric->fid);
		ft_check(!ret, "fabric_close", "%s", ob_err(ret));
	}
	fi_freeinfo(g_ep_info);
	fi_freeinfo(g_info);
}

static void ob_close(fid_t fid, const char *name)
{
	int ret = fid ? fi_close(fid) : 0;

	if (ret)
		ft_fail(name, "fi_close: %s", ob_err(ret));
}

/* ---- EQ and CQ open/close with every format and wait object ---------- */

static const struct {
	enum fi_wait_obj wait;
	const char *name;
	bool required;
} ob_waits[] = {
	{ FI_WAIT_NONE, "none", true },
	{ FI_WAIT_UNSPEC, "unspec", true },
	{ FI_WAIT_FD, "fd", true },
	{ FI_WAIT_MUTEX_COND, "mutex_cond", false },
	{ FI_WAIT_YIELD, "yield", false },
};

#define OB_NWAITS (sizeof(ob_waits) / sizeof(ob_waits[0]))

/* Optional wait objects may be refused, with ENOSYS or EINVAL only. */
static void ob_open_result(const char *name, int ret, bool required)
{
	if (!ret) {
		ft_ok(name);
	} else if (!required && (ret == -FI_ENOSYS || ret == -FI_EINVAL)) {
		ft_ok(name);
		ft_info("%s: not supported (%s)", name, ob_err(ret));
	} else {
		ft_fail(name, "open: %s", ob_err(ret));
	}
}

static void ob_eq_waits(void)
{
	struct fi_eq_attr attr = { .size = 16 };
	struct fid_eq *eq;
	char name[64];
	size_t i;
	int ret;

	for (i = 0; i < OB_NWAITS; i++) {
		attr.wait_obj = ob_waits[i].wait;
		snprintf(name, sizeof(name), "eq_open_wait_%s",
			 ob_waits[i].name);
		eq = NULL;
		ret = fi_eq_open(g_fabric, &attr, &eq, NULL);
		ob_open_result(name, ret, ob_waits[i].required);
		if (!ret)
			ob_close(&eq->fid, name);
	}
}

static const struct {
	enum fi_cq_format format;
	const char *name;
	bool required;
} ob_formats[] = {
	{ FI_CQ_FORMAT_UNSPEC, "unspec", true },
	{ FI_CQ_FORMAT_CONTEXT, "context", true },
	{ FI_CQ_FORMAT_MSG, "msg", true },
	{ FI_CQ_FORMAT_DATA, "data", true },
	{ FI_CQ_FORMAT_TAGGED, "tagged", false },	/* MSG has no tags */
};

static void ob_cq_open_one(size_t f, size_t w)
{
	struct fi_cq_attr attr = {
		.size = 64,
		.format = ob_formats[f].format,
		.wait_obj = ob_waits[w].wait,
	};
	struct fid_cq *cq = NULL;
	char name[64];
	int ret;

	snprintf(name, sizeof(name), "cq_open_%s_wait_%s", ob_formats[f].name,
		 ob_waits[w].name);
	ret = fi_cq_open(g_domain, &attr, &cq, NULL);
	ob_open_result(name, ret, ob_formats[f].required &&
		       ob_waits[w].required);
	if (!ret)
		ob_close(&cq->fid, name);
}

static void ob_cq_formats(void)
{
	size_t f, w;

	for (f = 0; f < sizeof(ob_formats) / sizeof(ob_formats[0]); f++)
		for (w = 0; w < OB_NWAITS; w++)
			ob_cq_open_one(f, w);
}

/* ---- MR --------------------------------------------------------------- */

static int ob_mr_reg(void *buf, size_t len, uint64_t access, uint64_t flags,
		     struct fid_mr **mr_p)
{
	*mr_p = NULL;
	return fi_mr_reg(g_domain, buf, len, access, 0, 0, flags, mr_p, NULL);
}

static void ob_mr_basic(void *buf)
{
	uint64_t acc = FI_SEND | FI_RECV | FI_READ | FI_WRITE |
		       FI_REMOTE_READ | FI_REMOTE_WRITE;
	struct fid_mr *a, *b;
	int ra, rb;

	ra = ob_mr_reg(buf, 4096, acc, 0, &a);
	rb = ob_mr_reg((char *)buf + 4096, 4096, acc, 0, &b);
	if (!ft_check(!ra && !rb, "mr_reg", "fi_mr_reg: %s / %s",
		      ob_err(ra), ob_err(rb)))
		goto out;
	ft_check(fi_mr_key(a) != FI_KEY_NOTAVAIL, "mr_key",
		 "fi_mr_key returned FI_KEY_NOTAVAIL");
	if (g_info->domain_attr->mr_mode & FI_MR_PROV_KEY)
		ft_check(fi_mr_key(a) != fi_mr_key(b), "mr_key_unique",
			 "two regions share key 0x%llx",
			 (unsigned long long)fi_mr_key(a));
	if (g_info->domain_attr->mr_mode & FI_MR_LOCAL)
		ft_check(fi_mr_desc(a) && fi_mr_desc(b), "mr_desc",
			 "FI_MR_LOCAL domain returned a NULL descriptor");
out:
	if (!ra)
		ob_close(&a->fid, "mr_close");
	if (!rb)
		ob_close(&b->fid, "mr_close");
}

static void ob_mr_vec(void *buf)
{
	struct iovec iov = { .iov_base = buf, .iov_len = 8192 };
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_SEND | FI_RECV | FI_REMOTE_READ,
		.iface = FI_HMEM_SYSTEM,
	};
	struct fid_mr *mr = NULL;
	int ret;

	ret = fi_mr_regv(g_domain, &iov, 1, FI_SEND | FI_RECV, 0, 0, 0, &mr,
			 NULL);
	if (ft_check(!ret, "mr_regv", "fi_mr_regv: %s", ob_err(ret)))
		ob_close(&mr->fid, "mr_regv");
	mr = NULL;
	ret = fi_mr_regattr(g_domain, &attr, 0, &mr);
	if (ft_check(!ret, "mr_regattr", "fi_mr_regattr: %s", ob_err(ret)))
		ob_close(&mr->fid, "mr_regattr");
}

/* Expect a registration to fail; want 0 accepts any error. */
static void ob_mr_expect_err(const char *name, void *buf, size_t len,
			     uint64_t access, uint64_t flags, int want)
{
	struct fid_mr *mr;
	int ret = ob_mr_reg(buf, len, access, flags, &mr);

	if (!ret)
		ob_close(&mr->fid, name);
	if (want)
		ft_check(ret == want, name, "returned %s, expected %s",
			 ob_err(ret), fi_strerror(-want));
	else
		ft_check(ret < 0, name, "returned %s, expected an error",
			 ob_err(ret));
}

static void ob_mr(void)
{
	void *buf;

	if (posix_memalign(&buf, 4096, 3 * 4096)) {
		ft_fail("mr", "out of memory");
		return;
	}
	ob_mr_basic(buf);
	ob_mr_vec(buf);
	ob_mr_expect_err("mr_reg_bad_access", buf, 4096,
			 FI_READ | (1ULL << 62), 0, 0);
	ob_mr_expect_err("mr_reg_bad_flags", buf, 4096, FI_READ,
			 1ULL << 62, -FI_EBADFLAGS);
	ob_mr_expect_err("mr_reg_null_buf", NULL, 4096, FI_SEND, 0, 0);
	ob_mr_expect_err("mr_reg_len_0", buf, 0, FI_SEND, 0, 0);
	free(buf);
}

/* ---- endpoints, binds, enable, EBUSY ---------------------------------- */

struct ob_ep {
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static int ob_ep_open(struct ob_ep *e, bool bind_eq)
{
	const char *step = "eq_open";
	int ret;

	memset(e, 0, sizeof(*e));
	ret = ft_eq_open(g_fabric, FI_WAIT_UNSPEC, &e->eq);
	if (!ret && (step = "cq_open"))
		ret = ft_cq_open(g_domain, 64, FI_WAIT_UNSPEC, &e->cq);
	if (!ret && (step = "fi_endpoint"))
		ret = fi_endpoint(g_domain, g_ep_info, &e->ep, NULL);
	if (!ret && bind_eq && (step = "bind eq"))
		ret = fi_ep_bind(e->ep, &e->eq->fid, 0);
	if (!ret && (step = "bind cq"))
		ret = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret)
		ft_info("endpoint setup: %s: %s", step, ob_err(ret));
	return ret;
}

static void ob_ep_close(struct ob_ep *e, const char *name)
{
	ob_close(e->ep ? &e->ep->fid : NULL, name);
	ob_close(e->cq ? &e->cq->fid : NULL, name);
	ob_close(e->eq ? &e->eq->fid : NULL, name);
}

static void ob_ep_enable(void)
{
	struct ob_ep e;
	int ret;

	ret = ob_ep_open(&e, false);
	if (ft_check(!ret, "ep_open", "%s", ob_err(ret))) {
		ret = fi_enable(e.ep);
		ft_check(ret < 0, "ep_enable_without_eq",
			 "fi_enable on an unbound MSG ep returned %s",
			 ob_err(ret));
	}
	ob_ep_close(&e, "ep_close");
	ret = ob_ep_open(&e, true);
	if (!ret)
		ret = fi_enable(e.ep);
	ft_check(!ret, "ep_enable", "%s", ob_err(ret));
	ob_ep_close(&e, "ep_close");
}

static void ob_bind_bad_flags(void)
{
	struct ob_ep e;
	struct fid_cq *cq2 = NULL;
	int ret;

	ret = ob_ep_open(&e, true);
	if (!ret)
		ret = ft_cq_open(g_domain, 64, FI_WAIT_NONE, &cq2);
	if (!ft_check(!ret, "bind_setup", "%s", ob_err(ret)))
		goto out;
	ret = fi_ep_bind(e.ep, &cq2->fid, FI_SELECTIVE_COMPLETION);
	ft_check(ret < 0, "ep_bind_cq_selective_only",
		 "binding with FI_SELECTIVE_COMPLETION alone returned %s",
		 ob_err(ret));
	ret = fi_ep_bind(e.ep, &cq2->fid, FI_TRANSMIT | (1ULL << 62));
	ft_check(ret < 0, "ep_bind_cq_unknown_flag",
		 "binding with an unknown flag returned %s", ob_err(ret));
out:
	ob_ep_close(&e, "ep_close");
	ob_close(cq2 ? &cq2->fid : NULL, "cq_close");
}

/* Close must report -FI_EBUSY while fid is in use; true if it closed. */
static bool ob_expect_busy(const char *name, fid_t fid)
{
	int ret = fi_close(fid);

	ft_check(ret == -FI_EBUSY, name, "fi_close returned %s, expected "
		 "-FI_EBUSY", ob_err(ret));
	if (!ret)
		ft_info("%s: object was closed while in use", name);
	return !ret;
}

/* A provider let the domain close under live objects: carry on with a
 * fresh one (the old children are leaked on purpose). */
static void ob_domain_reopen(void)
{
	int ret = fi_domain(g_fabric, g_info, &g_domain, NULL);

	if (ret) {
		ft_fail("domain_reopen", "%s", ob_err(ret));
		exit(ft_summary());
	}
}

static void ob_busy_ep(void)
{
	struct ob_ep e;
	int ret;

	ret = ob_ep_open(&e, true);
	if (!ft_check(!ret, "busy_setup", "%s", ob_err(ret))) {
		ob_ep_close(&e, "ep_close");
		return;
	}
	if (ob_expect_busy("domain_close_busy_ep", &g_domain->fid))
		return;		/* the ep went with the domain */
	if (ob_expect_busy("eq_close_busy_ep", &e.eq->fid))
		e.eq = NULL;
	if (ob_expect_busy("cq_close_busy_ep", &e.cq->fid))
		e.cq = NULL;
	ob_ep_close(&e, "close_after_busy");
	ft_ok("close_after_busy");
}

/* -FI_EBUSY from a domain with a live CQ or MR.  Each check gets its own
 * domain, since a provider may damage a domain while refusing to close. */
static void ob_busy_domain(bool use_mr)
{
	const char *name = use_mr ? "domain_close_busy_mr" :
		"domain_close_busy_cq";
	struct fid_domain *dom = NULL;
	struct fid_cq *cq = NULL;
	struct fid_mr *mr = NULL;
	static char buf[4096];
	int ret;

	ret = fi_domain(g_fabric, g_info, &dom, NULL);
	if (!ret && use_mr)
		ret = fi_mr_reg(dom, buf, sizeof(buf), FI_SEND, 0, 0, 0, &mr,
				NULL);
	else if (!ret)
		ret = ft_cq_open(dom, 64, FI_WAIT_NONE, &cq);
	if (ret) {
		ft_fail(name, "setup: %s", ob_err(ret));
		return;
	}
	if (ob_expect_busy(name, &dom->fid))
		return;		/* children leaked with the domain */
	ob_close(mr ? &mr->fid : &cq->fid, name);
	ob_close(&dom->fid, name);
}

static void ob_pep(void)
{
	struct fid_pep *pep = NULL;
	struct fid_eq *eq = NULL;
	char name[128], str[160];
	size_t len = sizeof(name);
	int ret;

	ret = ft_eq_open(g_fabric, FI_WAIT_UNSPEC, &eq);
	if (!ret)
		ret = fi_passive_ep(g_fabric, g_info, &pep, NULL);
	if (!ret)
		ret = fi_pep_bind(pep, &eq->fid, 0);
	if (!ret)
		ret = fi_listen(pep);
	if (!ret)
		ret = fi_getname(&pep->fid, name, &len);
	if (ft_check(!ret, "pep_listen", "%s", ob_err(ret)))
		ft_info("pep listening on %s",
			ft_addr_str(name, str, sizeof(str)));
	if (pep && ob_expect_busy("eq_close_busy_pep", &eq->fid))
		eq = NULL;
	ob_close(pep ? &pep->fid : NULL, "pep_close");
	ob_close(eq ? &eq->fid : NULL, "pep_eq_close");
}

/* Every class open at once, bound, then closed children first. */
static void ob_legal_order(void)
{
	struct fi_cntr_attr cattr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr = NULL;
	struct fid_mr *mr = NULL;
	static char buf[4096];
	struct ob_ep e;
	int ret;

	ret = ob_ep_open(&e, true);
	if (!ret && fi_cntr_open(g_domain, &cattr, &cntr, NULL) == 0)
		ret = fi_ep_bind(e.ep, &cntr->fid, FI_SEND | FI_RECV);
	if (!ret)
		ret = ob_mr_reg(buf, sizeof(buf), FI_SEND | FI_RECV, 0, &mr);
	if (!ret)
		ret = fi_enable(e.ep);
	ft_check(!ret, "open_all_classes", "%s", ob_err(ret));
	ret = e.ep ? fi_close(&e.ep->fid) : 0;
	e.ep = NULL;
	if (!ret && mr)
		ret = fi_close(&mr->fid);
	if (!ret && cntr)
		ret = fi_close(&cntr->fid);
	if (!ret)
		ret = fi_close(&e.cq->fid);
	if (!ret)
		ret = fi_close(&e.eq->fid);
	ft_check(!ret, "close_all_classes", "%s", ob_err(ret));
}

/* ---- CQ waits --------------------------------------------------------- */

static void ob_cq_empty(struct fid_cq *cq)
{
	struct fi_cq_data_entry comp;
	struct fi_cq_err_entry err = { 0 };
	uint64_t t0;
	ssize_t ret;

	ret = fi_cq_read(cq, &comp, 1);
	ft_check(ret == -FI_EAGAIN, "cq_read_empty", "returned %s",
		 ob_err((int)ret));
	ret = fi_cq_readerr(cq, &err, 0);
	ft_check(ret == -FI_EAGAIN, "cq_readerr_empty", "returned %s",
		 ob_err((int)ret));
	t0 = ft_now_ms();
	ret = fi_cq_sread(cq, &comp, 1, NULL, OB_WAIT_MS);
	t0 = ft_now_ms() - t0;
	ft_check(ret == -FI_EAGAIN && t0 >= OB_WAIT_MS * 9 / 10 &&
		 t0 < OB_WAIT_MS + 2000, "cq_sread_timeout",
		 "returned %s after %llu ms (timeout %d ms)", ob_err((int)ret),
		 (unsigned long long)t0, OB_WAIT_MS);
}

struct ob_waiter {
	struct fid_cq *cq;
	struct fid_eq *eq;
	struct fid_cntr *cntr;
	ssize_t ret;
	uint64_t ms;
};

static void *ob_wait_thread(void *arg)
{
	struct ob_waiter *w = arg;
	struct fi_cq_data_entry comp;
	struct fi_eq_entry entry;
	uint32_t event;
	uint64_t t0 = ft_now_ms();

	if (w->cq)
		w->ret = fi_cq_sread(w->cq, &comp, 1, NULL, 5000);
	else if (w->eq)
		w->ret = fi_eq_sread(w->eq, &event, &entry, sizeof(entry),
				     5000, 0);
	else
		w->ret = fi_cntr_wait(w->cntr, 10, 5000);
	w->ms = ft_now_ms() - t0;
	return NULL;
}

/* Start a waiter, poke it after 200 ms with kick(), join. */
static int ob_wake(struct ob_waiter *w, int (*kick)(struct ob_waiter *))
{
	pthread_t th;
	int ret;

	if (pthread_create(&th, NULL, ob_wait_thread, w))
		return -FI_ENOMEM;
	usleep(200 * 1000);
	ret = kick(w);
	pthread_join(th, NULL);
	return ret;
}

static int ob_kick_cq(struct ob_waiter *w)
{
	return fi_cq_signal(w->cq);
}

static void ob_cq_signal(struct fid_cq *cq)
{
	struct ob_waiter w = { .cq = cq };
	int ret = ob_wake(&w, ob_kick_cq);

	ft_check(!ret && w.ret == -FI_EAGAIN && w.ms < 3000,
		 "cq_signal_wakes_sread",
		 "fi_cq_signal %s; waiter returned %s after %llu ms "
		 "(want -FI_EAGAIN well before 5000 ms)", ob_err(ret),
		 ob_err((int)w.ret), (unsigned long long)w.ms);
}

static void ob_cq_getwait(struct fid_cq *cq)
{
	struct fid *fids[1] = { &cq->fid };
	int fd = -1, ret;

	ret = fi_control(&cq->fid, FI_GETWAIT, &fd);
	ft_check(!ret && fd >= 0, "cq_getwait_fd", "returned %s, fd %d",
		 ob_err(ret), fd);
	ret = fi_trywait(g_fabric, fids, 1);
	ft_check(!ret, "cq_trywait_empty", "returned %s", ob_err(ret));
}

static void ob_cq_waits(void)
{
	struct fid_cq *cq = NULL;
	int ret;

	ret = ft_cq_open(g_domain, 64, FI_WAIT_FD, &cq);
	if (!ft_check(!ret, "cq_open_fd", "%s", ob_err(ret)))
		return;
	ob_cq_empty(cq);
	ob_cq_signal(cq);
	ob_cq_getwait(cq);
	ob_close(&cq->fid, "cq_close");
}

/* ---- counters --------------------------------------------------------- */

static int ob_kick_cntr(struct ob_waiter *w)
{
	return fi_cntr_add(w->cntr, 10);
}

static void ob_cntr_ops(struct fid_cntr *c)
{
	struct ob_waiter w = { .cntr = c };
	uint64_t t0;
	int ret;

	ret = fi_cntr_add(c, 5);
	ft_check(!ret && fi_cntr_read(c) == 5, "cntr_add", "ret %d value %llu",
		 ret, (unsigned long long)fi_cntr_read(c));
	ret = fi_cntr_set(c, 2);
	ft_check(!ret && fi_cntr_read(c) == 2, "cntr_set", "ret %d value %llu",
		 ret, (unsigned long long)fi_cntr_read(c));
	ret = fi_cntr_adderr(c, 3);
	ft_check(!ret && fi_cntr_readerr(c) == 3, "cntr_adderr",
		 "ret %d err %llu", ret,
		 (unsigned long long)fi_cntr_readerr(c));
	ret = fi_cntr_seterr(c, 1);
	ft_check(!ret && fi_cntr_readerr(c) == 1 && fi_cntr_read(c) == 2,
		 "cntr_seterr", "ret %d err %llu value %llu", ret,
		 (unsigned long long)fi_cntr_readerr(c),
		 (unsigned long long)fi_cntr_read(c));
	t0 = ft_now_ms();
	ret = fi_cntr_wait(c, 3, OB_WAIT_MS);
	t0 = ft_now_ms() - t0;
	ft_check(ret == -FI_ETIMEDOUT && t0 >= OB_WAIT_MS * 9 / 10 &&
		 t0 < OB_WAIT_MS + 2000, "cntr_wait_timeout",
		 "returned %s after %llu ms", ob_err(ret),
		 (unsigned long long)t0);
	ret = fi_cntr_set(c, 0);
	ret = ret ? ret : ob_wake(&w, ob_kick_cntr);
	ft_check(!ret && w.ret == 0 && w.ms < 3000, "cntr_wait_wakes",
		 "add %s; waiter returned %s after %llu ms", ob_err(ret),
		 ob_err((int)w.ret), (unsigned long long)w.ms);
}

static void ob_cntr(void)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = FI_WAIT_UNSPEC,
	};
	struct fid_cntr *c = NULL;
	int ret;

	ret = fi_cntr_open(g_domain, &attr, &c, NULL);
	if (ret == -FI_ENOSYS && !g_info->domain_attr->cntr_cnt) {
		ft_skip("cntr", "provider has no counters (cntr_cnt 0)");
		return;
	}
	if (!ft_check(!ret, "cntr_open", "%s", ob_err(ret)))
		return;
	ob_cntr_ops(c);
	ob_close(&c->fid, "cntr_close");
}

/* ---- EQ --------------------------------------------------------------- */

static void ob_eq_write_read(struct fid_eq *eq)
{
	struct fi_eq_entry in = { .fid = &eq->fid, .context = &in,
				  .data = 42 };
	struct fi_eq_entry out;
	uint32_t event = 0;
	ssize_t ret;

	ret = fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0);
	ft_check(ret == sizeof(in), "eq_write", "returned %s",
		 ob_err((int)ret));
	ret = fi_eq_read(eq, &event, &out, 4, 0);
	ft_check(ret == -FI_ETOOSMALL, "eq_read_too_small",
		 "4-byte buffer: returned %s, expected -FI_ETOOSMALL",
		 ob_err((int)ret));
	memset(&out, 0, sizeof(out));
	ret = fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK);
	ft_check(ret == sizeof(out) && event == FI_NOTIFY, "eq_read_peek",
		 "returned %s event %u", ob_err((int)ret), event);
	memset(&out, 0, sizeof(out));
	ret = fi_eq_read(eq, &event, &out, sizeof(out), 0);
	ft_check(ret == sizeof(out) && event == FI_NOTIFY &&
		 out.fid == in.fid && out.context == in.context &&
		 out.data == in.data, "eq_read",
		 "returned %s event %u data %llu", ob_err((int)ret), event,
		 (unsigned long long)out.data);
	ret = fi_eq_read(eq, &event, &out, sizeof(out), 0);
	ft_check(ret == -FI_EAGAIN, "eq_read_empty", "returned %s",
		 ob_err((int)ret));
}

static int ob_kick_eq(struct ob_waiter *w)
{
	struct fi_eq_entry in = { .fid = &w->eq->fid, .data = 7 };
	ssize_t ret = fi_eq_write(w->eq, FI_NOTIFY, &in, sizeof(in), 0);

	return ret == sizeof(in) ? 0 : (int)ret;
}

static void ob_eq_sread(struct fid_eq *eq)
{
	struct fi_eq_err_entry err = { 0 };
	struct ob_waiter w = { .eq = eq };
	struct fi_eq_entry out;
	uint32_t event;
	uint64_t t0;
	ssize_t ret;

	ret = fi_eq_readerr(eq, &err, 0);
	ft_check(ret == -FI_EAGAIN, "eq_readerr_empty", "returned %s",
		 ob_err((int)ret));
	t0 = ft_now_ms();
	ret = fi_eq_sread(eq, &event, &out, sizeof(out), OB_WAIT_MS, 0);
	t0 = ft_now_ms() - t0;
	ft_check(ret == -FI_EAGAIN && t0 >= OB_WAIT_MS * 9 / 10 &&
		 t0 < OB_WAIT_MS + 2000, "eq_sread_timeout",
		 "returned %s after %llu ms", ob_err((int)ret),
		 (unsigned long long)t0);
	ret = ob_wake(&w, ob_kick_eq);
	ft_check(!ret && w.ret == sizeof(out) && w.ms < 3000,
		 "eq_sread_wakes_on_write",
		 "write %s; waiter returned %s after %llu ms",
		 ob_err((int)ret), ob_err((int)w.ret),
		 (unsigned long long)w.ms);
}

/* FI_GETWAIT fd, fi_trywait on empty/non-empty, fd readable on write. */
static void ob_eq_fd(struct fid_eq *eq)
{
	struct fid *fids[1] = { &eq->fid };
	struct fi_eq_entry in = { .fid = &eq->fid }, out;
	struct pollfd pfd = { .events = POLLIN };
	uint32_t event;
	int fd = -1, ret;

	ret = fi_control(&eq->fid, FI_GETWAIT, &fd);
	if (!ft_check(!ret && fd >= 0, "eq_getwait_fd", "returned %s, fd %d",
		      ob_err(ret), fd))
		return;
	ret = fi_trywait(g_fabric, fids, 1);
	ft_check(!ret, "eq_trywait_empty", "returned %s", ob_err(ret));
	(void)fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0);
	pfd.fd = fd;
	ret = poll(&pfd, 1, 2000);
	ft_check(ret == 1, "eq_fd_readable", "poll returned %d", ret);
	ret = fi_trywait(g_fabric, fids, 1);
	ft_check(ret == -FI_EAGAIN, "eq_trywait_nonempty", "returned %s",
		 ob_err(ret));
	(void)fi_eq_read(eq, &event, &out, sizeof(out), 0);
}

static void ob_eq(void)
{
	struct fid_eq *eq = NULL;
	int ret;
	struct fi_eq_attr attr = {
		.size = 16,
		.wait_obj = FI_WAIT_FD,
		.flags = FI_WRITE,	/* we use fi_eq_write */
	};

	ret = fi_eq_open(g_fabric, &attr, &eq, NULL);
	if (!ft_check(!ret, "eq_open_fd_write", "%s", ob_err(ret)))
		return;
	ob_eq_write_read(eq);
	ob_eq_sread(eq);
	ob_eq_fd(eq);
	ob_close(&eq->fid, "eq_close");
}

static void ob_busy_domain_mr(void)
{
	ob_busy_domain(true);
}

static void ob_busy_domain_cq(void)
{
	ob_busy_domain(false);
}

/* A forked case shares the device context with us: kernel objects it
 * leaves behind must not hang off our domain, so it gets its own. */
static void ob_child_domain(void)
{
	g_domain = NULL;
	ob_domain_reopen();
}

static void ob_bind_bad_flags_child(void)
{
	ob_child_domain();
	ob_bind_bad_flags();
}

static void ob_busy_ep_child(void)
{
	ob_child_domain();
	ob_busy_ep();
}

int main(int argc, char **argv)
{
	ft_parse_opts(argc, argv,
		      "Object lifecycle conformance (single process).", false);
	if (ob_setup())
		goto out;
	ob_eq_waits();
	ob_cq_formats();
	ob_mr();
	ob_ep_enable();
	/* misuse checks run in child processes: see ft_fork_case */
	ft_fork_case("pep", ob_pep);
	ft_fork_case("bind_bad_flags", ob_bind_bad_flags_child);
	ft_fork_case("busy_ep", ob_busy_ep_child);
	ft_fork_case("busy_domain_mr", ob_busy_domain_mr);
	ft_fork_case("busy_domain_cq", ob_busy_domain_cq);
	ob_legal_order();
	ob_cq_waits();
	ob_cntr();
	ob_eq();
out:
	ob_teardown();
	return ft_summary();
}
