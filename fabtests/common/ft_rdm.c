// SPDX-License-Identifier: MIT
/* RDM helpers: endpoint setup, bounded completion waits that keep a stash of
 * completions for other contexts and drive every endpoint of the process,
 * name exchange over the OOB socket or through files in a shared folder. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ft_rdm.h"

#define FT_RDM_MAX_WATCH 256
#define FT_RDM_READ_BATCH 16

/* Completions read while waiting for another context, per CQ, in order. */
struct ft_stash_ent {
	struct fid_cq *cq;
	struct ft_comp comp;
};

/* g_lock protects the watch list and the stash; it is held around CQ reads
 * so threads waiting on one CQ do not steal each other's completions. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fid_cq *g_watch[FT_RDM_MAX_WATCH];
static int g_nwatch;
static struct ft_stash_ent *g_stash;
static size_t g_nstash;
static size_t g_stash_cap;

/* ---- setup ------------------------------------------------------------ */

struct fi_info *ft_rdm_hints(uint64_t caps, enum fi_threading threading)
{
	struct fi_info *hints = ft_hints_alloc(caps);

	if (!hints)
		return NULL;
	hints->ep_attr->type = FI_EP_RDM;
	hints->mode |= FI_CONTEXT2;
	hints->domain_attr->threading = threading;
	/* MPI's matching order: sends between two endpoints stay ordered */
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	return hints;
}

/* src_only: every process is a peer, bound to -s ADDR (or the default)
 * with any port; else the server/client convention of ft_getinfo. */
int ft_rdm_fab_open(struct ft_fab *fab, struct fi_info *hints, bool src_only)
{
	struct fi_info *info = NULL;
	int ret;

	if (!src_only)
		ret = ft_getinfo(hints, &info);
	else if (ft_opts.src_addr)
		ret = fi_getinfo(FT_FIVERSION, ft_opts.src_addr, NULL,
				 FI_SOURCE, hints, &info);
	else
		ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, hints, &info);
	if (ret) {
		ft_info("fi_getinfo(%s, FI_EP_RDM): %s",
			ft_opts.prov ? ft_opts.prov : "any", fi_strerror(-ret));
		return ret;
	}
	ft_info("provider %s, domain %s, inject %zu, max_msg %zu, iov %zu",
		info->fabric_attr->prov_name, info->domain_attr->name,
		info->tx_attr->inject_size, info->ep_attr->max_msg_size,
		info->tx_attr->iov_limit);
	return ft_fab_open(fab, info);
}

int ft_rdm_av_open(struct fid_domain *domain, size_t count,
		   struct fid_av **av_p)
{
	struct fi_av_attr attr = { .type = FI_AV_UNSPEC, .count = count };
	int ret = fi_av_open(domain, &attr, av_p, NULL);

	if (ret)
		ft_info("fi_av_open: %s", fi_strerror(-ret));
	return ret;
}

void ft_rdm_watch(struct fid_cq *cq, bool add)
{
	int i;

	pthread_mutex_lock(&g_lock);
	if (add && g_nwatch < FT_RDM_MAX_WATCH)
		g_watch[g_nwatch++] = cq;
	for (i = 0; !add && i < g_nwatch; i++) {
		if (g_watch[i] == cq)
			g_watch[i--] = g_watch[--g_nwatch];
	}
	pthread_mutex_unlock(&g_lock);
}

/* A copy of info whose source address has port 0, so that several
 * endpoints of one process do not claim the same port. */
static struct fi_info *ft_rdm_info_any_port(const struct fi_info *info)
{
	struct fi_info *dup = fi_dupinfo(info);
	struct sockaddr_in *sin;
	struct sockaddr_in6 *sin6;

	if (!dup || !dup->src_addr)
		return dup;
	sin = dup->src_addr;
	sin6 = dup->src_addr;
	if (sin->sin_family == AF_INET)
		sin->sin_port = 0;
	else if (sin->sin_family == AF_INET6)
		sin6->sin6_port = 0;
	return dup;
}

static int ft_rdm_ep_bind(struct ft_rdm_ep *rep, size_t min_multi_recv)
{
	int ret;

	ret = fi_ep_bind(rep->ep, &rep->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(rep->ep, &rep->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret && min_multi_recv)
		ret = fi_setopt(&rep->ep->fid, FI_OPT_ENDPOINT,
				FI_OPT_MIN_MULTI_RECV, &min_multi_recv,
				sizeof(min_multi_recv));
	if (!ret)
		ret = fi_enable(rep->ep);
	if (!ret) {
		rep->namelen = sizeof(rep->name);
		ret = fi_getname(&rep->ep->fid, rep->name, &rep->namelen);
	}
	return ret;
}

/* Endpoint on fab's domain, bound to av (a new one with 64 slots if NULL)
 * and to a new CQ for both directions. */
int ft_rdm_ep_open(struct ft_fab *fab, struct fid_av *av, bool any_port,
		   size_t min_multi_recv, struct ft_rdm_ep *rep)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_NONE };
	struct fi_info *info = fab->info;
	int ret;

	memset(rep, 0, sizeof(*rep));
	if (any_port)
		info = ft_rdm_info_any_port(fab->info);
	if (!info)
		return -FI_ENOMEM;
	rep->av = av;
	rep->own_av = !av;
	ret = av ? 0 : ft_rdm_av_open(fab->domain, 64, &rep->av);
	if (!ret)
		ret = fi_cq_open(fab->domain, &cq_attr, &rep->cq, NULL);
	if (!ret)
		ret = fi_endpoint(fab->domain, info, &rep->ep, NULL);
	if (!ret)
		ret = ft_rdm_ep_bind(rep, min_multi_recv);
	if (info != fab->info)
		fi_freeinfo(info);
	if (ret) {
		ft_info("endpoint setup: %s", fi_strerror(-ret));
		ft_rdm_ep_close(rep);
		return ret;
	}
	ft_rdm_watch(rep->cq, true);
	return 0;
}

void ft_rdm_ep_close(struct ft_rdm_ep *rep)
{
	size_t i;

	if (rep->cq) {
		ft_rdm_watch(rep->cq, false);
		pthread_mutex_lock(&g_lock);
		for (i = 0; i < g_nstash; i++) {
			if (g_stash[i].cq != rep->cq)
				continue;
			memmove(&g_stash[i], &g_stash[i + 1],
				(g_nstash - i - 1) * sizeof(*g_stash));
			g_nstash--;
			i--;
		}
		pthread_mutex_unlock(&g_lock);
	}
	ft_close_fid(rep->ep ? &rep->ep->fid : NULL, "ep");
	ft_close_fid(rep->cq ? &rep->cq->fid : NULL, "cq");
	if (rep->own_av)
		ft_close_fid(rep->av ? &rep->av->fid : NULL, "av");
	memset(rep, 0, sizeof(*rep));
}

int ft_rdm_av_insert(struct fid_av *av, const void *name, fi_addr_t *addr_p)
{
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	int ret;

	ret = fi_av_insert(av, name, 1, &addr, 0, NULL);
	if (ret != 1) {
		ft_info("fi_av_insert: %d (%s)", ret,
			ret < 0 ? fi_strerror(-ret) : "no address inserted");
		return ret < 0 ? ret : -FI_EINVAL;
	}
	*addr_p = addr;
	return 0;
}

static int ft_size_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* -S SIZE alone, or 0..3, the powers of two up to max, and both sides of
 * the usual eager/segmentation/rendezvous thresholds (8, 16, 64, 128 KiB). */
size_t ft_rdm_size_list(size_t max, size_t *sizes, size_t cap)
{
	static const size_t odd[] = { 3, 8191, 8193, 16383, 16385, 65535,
				      65537, 131071, 131073 };
	size_t n = 0, i, s;

	if (!ft_opts.all_sizes) {
		sizes[0] = ft_opts.size < max ? ft_opts.size : max;
		return 1;
	}
	sizes[n++] = 0;
	for (s = 1; s <= max && n < cap; s <<= 1)
		sizes[n++] = s;
	for (i = 0; i < sizeof(odd) / sizeof(odd[0]) && n < cap; i++)
		if (odd[i] < max)
			sizes[n++] = odd[i];
	qsort(sizes, n, sizeof(*sizes), ft_size_cmp);
	return n;
}

int ft_rdm_timeout(size_t len)
{
	return ft_opts.timeout_ms + (int)(len >> 20) * 250;
}

/* ---- completions ------------------------------------------------------ */

static int ft_cq_poll(struct fid_cq *cq, void *ctx, struct ft_comp *comp);

/* Drive every endpoint: read all their CQs into the stash (reading, not
 * just peeking, so that providers get their queue slots back). */
static void ft_progress_locked(void)
{
	static char none;
	struct ft_comp comp;
	int i;

	for (i = 0; i < g_nwatch; i++)
		(void)ft_cq_poll(g_watch[i], &none, &comp);
}

/* In a forked child: drop the parent's endpoints without touching them. */
void ft_rdm_forget(void)
{
	g_nwatch = 0;
	g_nstash = 0;
}

void ft_rdm_progress(void)
{
	pthread_mutex_lock(&g_lock);
	ft_progress_locked();
	pthread_mutex_unlock(&g_lock);
}

static void ft_comp_from_entry(struct ft_comp *comp,
			       const struct fi_cq_tagged_entry *e,
			       fi_addr_t src)
{
	memset(comp, 0, sizeof(*comp));
	comp->ctx = e->op_context;
	comp->flags = e->flags;
	comp->len = e->len;
	comp->buf = e->buf;
	comp->data = e->data;
	comp->tag = e->tag;
	comp->src = src;
}

static int ft_comp_from_err(struct fid_cq *cq, struct ft_comp *comp)
{
	struct fi_cq_err_entry e;
	const char *str;
	ssize_t ret;

	memset(&e, 0, sizeof(e));
	ret = fi_cq_readerr(cq, &e, 0);
	if (ret < 0)
		return ret == -FI_EAGAIN ? -FI_EAGAIN : (int)ret;
	memset(comp, 0, sizeof(*comp));
	comp->ctx = e.op_context;
	comp->flags = e.flags;
	comp->len = e.len;
	comp->buf = e.buf;
	comp->data = e.data;
	comp->tag = e.tag;
	comp->src = FI_ADDR_NOTAVAIL;
	comp->err = e.err ? e.err : FI_EOTHER;
	comp->olen = e.olen;
	comp->prov_errno = e.prov_errno;
	str = fi_cq_strerror(cq, e.prov_errno, e.err_data, comp->errstr,
			     sizeof(comp->errstr));
	if (str && str != comp->errstr)
		snprintf(comp->errstr, sizeof(comp->errstr), "%s", str);
	return 0;
}

static int ft_stash_put(struct fid_cq *cq, const struct ft_comp *comp)
{
	struct ft_stash_ent *p;
	size_t cap;

	if (g_nstash == g_stash_cap) {
		cap = g_stash_cap ? 2 * g_stash_cap : 256;
		p = realloc(g_stash, cap * sizeof(*p));
		if (!p)
			return -FI_ENOMEM;
		g_stash = p;
		g_stash_cap = cap;
	}
	g_stash[g_nstash].cq = cq;
	g_stash[g_nstash++].comp = *comp;
	return 0;
}

static int ft_stash_take(struct fid_cq *cq, void *ctx, struct ft_comp *comp)
{
	size_t i;

	for (i = 0; i < g_nstash; i++) {
		if (g_stash[i].cq != cq || (ctx && g_stash[i].comp.ctx != ctx))
			continue;
		*comp = g_stash[i].comp;
		memmove(&g_stash[i], &g_stash[i + 1],
			(g_nstash - i - 1) * sizeof(*g_stash));
		g_nstash--;
		return 0;
	}
	return -FI_EAGAIN;
}

/* Read cq until ctx's completion (any with ctx NULL) or nothing is left;
 * keep the others in the stash. */
static int ft_cq_poll(struct fid_cq *cq, void *ctx, struct ft_comp *comp)
{
	struct fi_cq_tagged_entry e[FT_RDM_READ_BATCH];
	fi_addr_t src[FT_RDM_READ_BATCH];
	struct ft_comp c;
	ssize_t n, i;
	int ret;

	for (;;) {
		n = fi_cq_readfrom(cq, e, FT_RDM_READ_BATCH, src);
		if (n == -FI_EAVAIL) {
			ret = ft_comp_from_err(cq, &c);
			if (ret)
				return ret;
			ret = ft_stash_put(cq, &c);
			if (ret)
				return ret;
			continue;
		}
		if (n <= 0)
			return n ? (int)n : -FI_EAGAIN;
		for (i = 0; i < n; i++) {
			ft_comp_from_entry(&c, &e[i], src[i]);
			ret = ft_stash_put(cq, &c);
			if (ret)
				return ret;
		}
		if (!ft_stash_take(cq, ctx, comp))
			return 0;
	}
}

static void ft_backoff(unsigned int idle)
{
	if (idle < 64)
		return;
	if (idle < 2000)
		sched_yield();
	else
		usleep(100);
}

/* 0 with *comp (check comp->err), -FI_ETIMEDOUT, or a CQ failure. */
int ft_rdm_wait(struct fid_cq *cq, void *ctx, struct ft_comp *comp,
		int timeout_ms)
{
	uint64_t end = ft_now_ms() + timeout_ms;
	unsigned int idle = 0;
	int ret;

	memset(comp, 0, sizeof(*comp));	/* defined, even on a timeout */
	do {
		pthread_mutex_lock(&g_lock);
		ret = ft_stash_take(cq, ctx, comp);
		if (ret == -FI_EAGAIN)
			ret = ft_cq_poll(cq, ctx, comp);
		if (ret == -FI_EAGAIN)
			ft_progress_locked();
		pthread_mutex_unlock(&g_lock);
		if (ret != -FI_EAGAIN)
			return ret;
		ft_backoff(idle++);
	} while (ft_now_ms() < end);
	return -FI_ETIMEDOUT;
}

/* Discard whatever completes on cq within ms; returns how many. */
int ft_rdm_drain(struct fid_cq *cq, int ms)
{
	struct ft_comp comp;
	int n = 0;

	while (!ft_rdm_wait(cq, NULL, &comp, ms))
		n++;
	return n;
}

const char *ft_comp_str(const struct ft_comp *comp)
{
	static __thread char buf[192];

	if (!comp->err)
		return "success";
	snprintf(buf, sizeof(buf), "err %d (%s), prov_errno %d: %s", comp->err,
		 fi_strerror(comp->err), comp->prov_errno, comp->errstr);
	return buf;
}

/* ---- name exchange ---------------------------------------------------- */

/* Over the OOB socket: a 4-byte length, then the name. */
int ft_rdm_oob_swap(const void *mine, size_t len, void *peer,
		    size_t *peer_len)
{
	uint32_t n = (uint32_t)len, pn;
	int ret;

	ret = ft_oob_send(&n, sizeof(n));
	ret = ret ? ret : ft_oob_send(mine, len);
	ret = ret ? ret : ft_oob_recv(&pn, sizeof(pn));
	if (ret)
		return ret;
	if (pn > *peer_len)
		return -FI_ETOOSMALL;
	ret = ft_oob_recv(peer, pn);
	if (!ret)
		*peer_len = pn;
	return ret;
}

/* Write dir/key atomically (a temporary file, then rename). */
int ft_rdm_publish(const char *dir, const char *key, const void *data,
		   size_t len)
{
	char tmp[512], path[512];
	ssize_t n;
	int fd;

	snprintf(tmp, sizeof(tmp), "%s/.%s.%d", dir, key, (int)getpid());
	snprintf(path, sizeof(path), "%s/%s", dir, key);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		ft_info("open %s: %s", tmp, strerror(errno));
		return -FI_EIO;
	}
	n = len ? write(fd, data, len) : 0;
	close(fd);
	if (n != (ssize_t)len || rename(tmp, path)) {
		ft_info("publish %s: %s", path, strerror(errno));
		return -FI_EIO;
	}
	return 0;
}

/* Wait for dir/key to appear (progressing meanwhile) and read it. */
ssize_t ft_rdm_lookup(const char *dir, const char *key, void *buf,
		      size_t len, int timeout_ms)
{
	uint64_t end = ft_now_ms() + timeout_ms;
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, key);
	do {
		fd = open(path, O_RDONLY);
		if (fd >= 0) {
			n = read(fd, buf, len);
			close(fd);
			return n < 0 ? -FI_EIO : n;
		}
		ft_rdm_progress();
		usleep(2000);
	} while (ft_now_ms() < end);
	ft_info("%s did not appear within %d ms", path, timeout_ms);
	return -FI_ETIMEDOUT;
}

/* All n ranks reach the barrier named tag before any leaves it. */
int ft_rdm_barrier(const char *dir, const char *tag, int rank, int n,
		   int timeout_ms)
{
	char key[128], c;
	ssize_t ret;
	int i;

	snprintf(key, sizeof(key), "%s.%d", tag, rank);
	ret = ft_rdm_publish(dir, key, "1", 1);
	for (i = 0; !ret && i < n; i++) {
		snprintf(key, sizeof(key), "%s.%d", tag, i);
		ret = ft_rdm_lookup(dir, key, &c, 1, timeout_ms);
		ret = ret < 0 ? ret : 0;
	}
	return (int)ret;
}

int ft_rdm_pair_open(struct ft_rdm_pair *p, uint64_t caps)
{
	struct fi_info *hints = ft_rdm_hints(caps, FI_THREAD_UNSPEC);
	int ret;

	memset(p, 0, sizeof(*p));
	ft_rdm_forget();
	ret = hints ? ft_rdm_fab_open(&p->fab, hints, true) : -FI_ENOMEM;
	fi_freeinfo(hints);
	ret = ret ? ret : ft_rdm_ep_open(&p->fab, NULL, true, 0, &p->a);
	ret = ret ? ret : ft_rdm_ep_open(&p->fab, NULL, true, 0, &p->b);
	ret = ret ? ret : ft_rdm_av_insert(p->a.av, p->b.name, &p->a2b);
	ret = ret ? ret : ft_rdm_av_insert(p->b.av, p->a.name, &p->b2a);
	return ret;
}

void ft_rdm_pair_close(struct ft_rdm_pair *p)
{
	ft_rdm_ep_close(&p->b);
	ft_rdm_ep_close(&p->a);
	ft_fab_close(&p->fab);
}
