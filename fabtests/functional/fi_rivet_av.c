// SPDX-License-Identifier: MIT
/* Address vector conformance (single process, FI_EP_RDM domain): inserts
 * with per-entry errors, insertsvc, insertsym, lookup, straddr, remove,
 * FI_EVENT completions on an EQ, and close while things are bound.
 * FT_AV_DOMAIN_EP=msg opens the domain from FI_EP_MSG hints instead (a
 * provider's own AV before it offers FI_EP_RDM itself). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ft_rivet.h"

/* Wait sets, poll sets and fi_av_bind are deprecated in libfabric 2.x, yet
 * still its API, and rivet serves them to the programs that use them: this
 * test calls them on purpose. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define AV_WAIT_MS 2000

static struct fi_info *g_info;
static struct fid_fabric *g_fabric;
static struct fid_domain *g_domain;
static bool g_v6;		/* the domain takes IPv6 addresses */
static bool g_msg_domain;	/* FT_AV_DOMAIN_EP=msg */

union av_addr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
};

static const char *av_err(int ret)
{
	static char buf[96];

	snprintf(buf, sizeof(buf), "%d (%s)", ret,
		 fi_strerror(ret < 0 ? -ret : ret));
	return buf;
}

/* "10.0.0.1" (or "::ffff:10.0.0.1" on an IPv6 domain) and a port. */
static union av_addr av_make(const char *ip4, uint16_t port)
{
	union av_addr a;
	char ip6[64];

	memset(&a, 0, sizeof(a));
	if (!g_v6) {
		a.sin.sin_family = AF_INET;
		a.sin.sin_port = htons(port);
		inet_pton(AF_INET, ip4, &a.sin.sin_addr);
		return a;
	}
	snprintf(ip6, sizeof(ip6), "::ffff:%s", ip4);
	a.sin6.sin6_family = AF_INET6;
	a.sin6.sin6_port = htons(port);
	inet_pton(AF_INET6, ip6, &a.sin6.sin6_addr);
	return a;
}

static size_t av_len(void)
{
	return g_v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* An array of n addresses, packed at the domain's address size. */
static void av_pack(void *buf, const union av_addr *a, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		memcpy((char *)buf + i * av_len(), &a[i], av_len());
}

static bool av_same(const union av_addr *a, const union av_addr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->sin.sin_port == b->sin.sin_port &&
		       a->sin.sin_addr.s_addr == b->sin.sin_addr.s_addr;
	return a->sin6.sin6_port == b->sin6.sin6_port &&
	       !memcmp(&a->sin6.sin6_addr, &b->sin6.sin6_addr, 16);
}

static int av_open(enum fi_av_type type, uint64_t flags, struct fid_av **av)
{
	struct fi_av_attr attr = { .type = type, .count = 16, .flags = flags };

	return fi_av_open(g_domain, &attr, av, NULL);
}

static void av_close(struct fid_av *av, const char *name)
{
	int ret = fi_close(&av->fid);

	if (ret)
		ft_fail(name, "fi_close(av): %s", av_err(ret));
}

/* Looks fi_addr up and compares it with want. */
static bool av_lookup_is(struct fid_av *av, fi_addr_t fi_addr,
			 const union av_addr *want, const char *name)
{
	union av_addr got;
	size_t len = sizeof(got);
	int ret;

	memset(&got, 0, sizeof(got));
	ret = fi_av_lookup(av, fi_addr, &got, &len);
	if (ret) {
		ft_fail(name, "fi_av_lookup(%lu): %s", (unsigned long)fi_addr,
			av_err(ret));
		return false;
	}
	if (len != av_len() || !av_same(&got, want)) {
		ft_fail(name, "fi_av_lookup(%lu): another address (len %zu)",
			(unsigned long)fi_addr, len);
		return false;
	}
	return true;
}

/* ---- cases ---- */

static void case_open_types(void)
{
	struct fi_av_attr attr = { .type = FI_AV_UNSPEC, .count = 4 };
	struct fid_av *av;
	int ret;

	ret = fi_av_open(g_domain, &attr, &av, NULL);
	if (ft_check(!ret && attr.type != FI_AV_UNSPEC, "open_unspec",
		     "ret %s, type %d", av_err(ret), attr.type))
		av_close(av, "open_unspec");
	ret = av_open(FI_AV_TABLE, 0, &av);
	if (ft_check(!ret, "open_table", "%s", av_err(ret)))
		av_close(av, "open_table");
	ret = av_open(FI_AV_MAP, 0, &av);
	if (ft_check(!ret, "open_map", "%s", av_err(ret)))
		av_close(av, "open_map");
}

static void case_insert_sync_err(struct fid_av *av)
{
	union av_addr a[4];
	uint8_t buf[4 * sizeof(union av_addr)];
	fi_addr_t fa[4];
	int errs[4] = { -1, -1, -1, -1 };
	int ret;

	a[0] = av_make("10.0.0.1", 7000);
	a[1] = av_make("10.0.0.2", 0);		/* no port */
	a[2] = av_make("0.0.0.0", 7000);	/* wildcard */
	a[3] = av_make("10.0.0.4", 7000);
	av_pack(buf, a, 4);
	ret = fi_av_insert(av, buf, 4, fa, FI_SYNC_ERR, errs);
	if (!ft_check(ret == 2, "insert_count", "returned %s, want 2",
		      av_err(ret)))
		return;
	ft_check(fa[0] == 0 && fa[3] == 1, "insert_table_indices",
		 "fi_addr %lu, %lu; want 0, 1", (unsigned long)fa[0],
		 (unsigned long)fa[3]);
	ft_check(fa[1] == FI_ADDR_NOTAVAIL && fa[2] == FI_ADDR_NOTAVAIL,
		 "insert_bad_notavail", "fi_addr %lx, %lx",
		 (unsigned long)fa[1], (unsigned long)fa[2]);
	ft_check(!errs[0] && errs[1] > 0 && errs[2] > 0 && !errs[3],
		 "insert_sync_err", "errors %d %d %d %d", errs[0], errs[1],
		 errs[2], errs[3]);
	/* indices continue across calls; fi_addr may be NULL */
	a[0] = av_make("10.0.0.5", 7000);
	av_pack(buf, a, 1);
	ret = fi_av_insert(av, buf, 1, NULL, 0, NULL);
	if (ret != 1)
		ft_fail("insert_null_fiaddr", "returned %s", av_err(ret));
	else if (av_lookup_is(av, 2, &a[0], "insert_null_fiaddr"))
		ft_ok("insert_null_fiaddr");
}

/* An index never handed out: an error, not a crash (run in a child). */
static struct fid_av *g_fork_av;

static void case_lookup_invalid(void)
{
	union av_addr got;
	size_t len = sizeof(got);
	int ret;

	ret = fi_av_lookup(g_fork_av, 1000, &got, &len);
	ft_check(ret < 0, "lookup_invalid", "ret %s", av_err(ret));
}

static void case_lookup(struct fid_av *av)
{
	union av_addr want = av_make("10.0.0.4", 7000), got;
	size_t len;
	int ret;

	if (av_lookup_is(av, 1, &want, "lookup_roundtrip"))
		ft_ok("lookup_roundtrip");
	len = 4;
	memset(&got, 0, sizeof(got));
	ret = fi_av_lookup(av, 1, &got, &len);
	ft_check((!ret || ret == -FI_ETOOSMALL) && len == av_len() &&
		 got.sa.sa_family == want.sa.sa_family,
		 "lookup_truncated", "ret %s, len %zu", av_err(ret), len);
	g_fork_av = av;
	ft_fork_case("lookup_invalid", case_lookup_invalid);
}

static void case_straddr(struct fid_av *av)
{
	union av_addr a = av_make("10.1.2.3", 4567);
	const char *want = g_v6 ? "fi_sockaddr_in6://[::ffff:10.1.2.3]:4567" :
				  "fi_sockaddr_in://10.1.2.3:4567";
	char buf[128];
	size_t len = sizeof(buf);
	const char *s;

	s = fi_av_straddr(av, &a, buf, &len);
	ft_check(s == buf && !strcmp(buf, want) && len == strlen(want) + 1,
		 "straddr", "got \"%s\" (len %zu), want \"%s\"",
		 s ? s : "(null)", len, want);
	len = 10;
	memset(buf, 'x', sizeof(buf));
	s = fi_av_straddr(av, &a, buf, &len);
	ft_check(s == buf && len == strlen(want) + 1 && strlen(buf) < 10,
		 "straddr_truncated", "len %zu, buf \"%.20s\"", len, buf);
}

static void case_insertsvc(struct fid_av *av)
{
	union av_addr want = av_make("10.0.0.6", 7006);
	fi_addr_t fa = FI_ADDR_NOTAVAIL;
	int ret;

	ret = fi_av_insertsvc(av, g_v6 ? "::ffff:10.0.0.6" : "10.0.0.6",
			      "7006", &fa, 0, NULL);
	if (ft_check(ret == 1 && fa != FI_ADDR_NOTAVAIL, "insertsvc",
		     "returned %s", av_err(ret)) &&
	    av_lookup_is(av, fa, &want, "insertsvc_lookup"))
		ft_ok("insertsvc_lookup");
}

static void case_insertsym(struct fid_av *av)
{
	static const char *const ips[] = { "10.0.1.254", "10.0.1.255",
					   "10.0.2.0" };
	union av_addr want;
	fi_addr_t fa[6];
	size_t i;
	int ret;

	ret = fi_av_insertsym(av, g_v6 ? "::ffff:10.0.1.254" : "10.0.1.254",
			      3, "8000", 2, fa, 0, NULL);
	if (!ft_check(ret == 6, "insertsym_count", "returned %s, want 6",
		      av_err(ret)))
		return;
	for (i = 0; i < 6; i++) {
		want = av_make(ips[i / 2], (uint16_t)(8000 + i % 2));
		if (!av_lookup_is(av, fa[i], &want, "insertsym_order"))
			return;
	}
	ft_ok("insertsym_order");
}

static void case_remove(struct fid_av *av)
{
	union av_addr a = av_make("10.0.0.1", 7000), got;
	uint8_t buf[sizeof(union av_addr)];
	fi_addr_t fa = 0;
	size_t len = sizeof(got);
	int ret;

	ret = fi_av_remove(av, &fa, 1, 0);
	if (!ft_check(!ret, "remove", "%s", av_err(ret)))
		return;
	ret = fi_av_lookup(av, 0, &got, &len);
	ft_check(ret < 0, "remove_then_lookup", "lookup gave %s",
		 av_err(ret));
	ret = fi_av_remove(av, &fa, 1, 0);
	ft_check(ret < 0, "remove_twice", "gave %s", av_err(ret));
	fa = FI_ADDR_NOTAVAIL;
	av_pack(buf, &a, 1);
	ret = fi_av_insert(av, buf, 1, &fa, 0, NULL);
	if (ret != 1 || fa == FI_ADDR_NOTAVAIL)
		ft_fail("remove_reinsert", "returned %s", av_err(ret));
	else if (av_lookup_is(av, fa, &a, "remove_reinsert"))
		ft_ok("remove_reinsert");
}

static void case_sync(void)
{
	struct fid_av *av;
	int ret;

	ret = av_open(FI_AV_TABLE, 0, &av);
	if (!ft_check(!ret, "sync_open", "%s", av_err(ret)))
		return;
	case_insert_sync_err(av);
	case_lookup(av);
	case_straddr(av);
	case_insertsvc(av);
	case_insertsym(av);
	case_remove(av);
	av_close(av, "sync_close");
}

/* ---- FI_EVENT ---- */

static ssize_t av_eq_read(struct fid_eq *eq, uint32_t *event,
			  struct fi_eq_entry *entry,
			  struct fi_eq_err_entry *err)
{
	uint64_t end = ft_now_ms() + AV_WAIT_MS;
	ssize_t ret;

	do {
		ret = fi_eq_read(eq, event, entry, sizeof(*entry), 0);
		if (ret == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			ret = fi_eq_readerr(eq, err, 0);
			return ret < 0 ? ret : -FI_EAVAIL;
		}
		if (ret != -FI_EAGAIN)
			return ret;
		usleep(1000);
	} while (ft_now_ms() < end);
	return -FI_ETIMEDOUT;
}

static void case_event_insert(struct fid_av *av, struct fid_eq *eq)
{
	union av_addr a[3] = { av_make("10.0.0.1", 1), av_make("10.0.0.2", 0),
			       av_make("10.0.0.3", 1) };
	uint8_t buf[3 * sizeof(union av_addr)];
	struct fi_eq_err_entry err;
	struct fi_eq_entry entry;
	fi_addr_t fa[3];
	uint32_t event = 0;
	int ctx;
	ssize_t ret;

	av_pack(buf, a, 3);
	ret = fi_av_insert(av, buf, 3, fa, 0, &ctx);
	if (!ft_check(!ret, "event_insert", "returned %s", av_err((int)ret)))
		return;
	ret = av_eq_read(eq, &event, &entry, &err);
	ft_check(ret == -FI_EAVAIL && err.err > 0 && err.data == 1 &&
		 err.context == &ctx && err.fid == &av->fid,
		 "event_insert_error", "ret %zd, err %d, data %lu", ret,
		 err.err, (unsigned long)err.data);
	if (ret == -FI_EAVAIL)
		ret = av_eq_read(eq, &event, &entry, &err);
	ft_check(ret == sizeof(entry) && event == FI_AV_COMPLETE &&
		 entry.data == 2 && entry.context == &ctx &&
		 entry.fid == &av->fid, "event_av_complete",
		 "ret %zd, event %u, data %lu", ret, event,
		 (unsigned long)entry.data);
	ft_check(fa[1] == FI_ADDR_NOTAVAIL && fa[0] != FI_ADDR_NOTAVAIL &&
		 fa[2] != FI_ADDR_NOTAVAIL, "event_fi_addr", "%lx %lx %lx",
		 (unsigned long)fa[0], (unsigned long)fa[1],
		 (unsigned long)fa[2]);
}

static void case_event(void)
{
	union av_addr a = av_make("10.0.0.1", 1);
	struct fid_eq *eq = NULL;
	struct fid_av *av;
	fi_addr_t fa;
	int ret;

	ret = av_open(FI_AV_TABLE, FI_EVENT, &av);
	if (!ft_check(!ret, "event_open", "%s", av_err(ret)))
		return;
	ret = fi_av_insert(av, &a, 1, &fa, 0, NULL);
	ft_check(ret == -FI_ENOEQ, "event_no_eq", "returned %s", av_err(ret));
	ret = ft_eq_open(g_fabric, FI_WAIT_UNSPEC, &eq);
	if (ret)
		ret = ft_eq_open(g_fabric, FI_WAIT_NONE, &eq);
	if (!ft_check(!ret, "event_eq_open", "%s", av_err(ret)))
		goto out;
	ret = fi_av_bind(av, &eq->fid, 0);
	if (ft_check(!ret, "event_bind", "%s", av_err(ret)))
		case_event_insert(av, eq);
out:
	av_close(av, "event_close");
	if (eq) {
		ret = fi_close(&eq->fid);
		ft_check(!ret, "event_eq_close", "%s", av_err(ret));
	}
}

/* An endpoint bound to the AV keeps it open. */
static void case_close_busy(void)
{
	struct fid_ep *ep;
	struct fid_av *av;
	int ret;

	ret = av_open(FI_AV_TABLE, 0, &av);
	if (!ft_check(!ret, "busy_open", "%s", av_err(ret)))
		return;
	ret = fi_endpoint(g_domain, g_info, &ep, NULL);
	if (!ft_check(!ret, "busy_endpoint", "%s", av_err(ret)))
		goto out;
	ret = fi_ep_bind(ep, &av->fid, 0);
	if (ft_check(!ret, "busy_bind", "%s", av_err(ret))) {
		ret = fi_close(&av->fid);
		ft_check(ret == -FI_EBUSY, "close_bound_av", "gave %s",
			 av_err(ret));
	}
	ret = fi_close(&ep->fid);
	ft_check(!ret, "busy_ep_close", "%s", av_err(ret));
out:
	ret = fi_close(&av->fid);
	ft_check(!ret, "close_unbound_av", "%s", av_err(ret));
}

/* ---- setup ---- */

/* -p PROV itself before a utility provider layered over it ("rivet"
 * before "rivet;ofi_rxm"): the first info of the best kind is kept. */
static struct fi_info *av_pick(struct fi_info *list)
{
	struct fi_info *fi, *best = list;

	for (fi = list; fi && ft_opts.prov; fi = fi->next) {
		if (!strcmp(fi->fabric_attr->prov_name, ft_opts.prov)) {
			best = fi;
			break;
		}
	}
	return fi_dupinfo(best);
}

static int av_getinfo(void)
{
	uint64_t caps = g_msg_domain ? FI_MSG : FI_MSG | FI_TAGGED;
	struct fi_info *hints = ft_hints_alloc(caps), *list = NULL;
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->addr_format = FI_SOCKADDR_IN;
	ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, hints, &list);
	if (ret == -FI_ENODATA) {
		hints->addr_format = FI_FORMAT_UNSPEC;
		ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, hints, &list);
	}
	fi_freeinfo(hints);
	if (!ret) {
		g_info = av_pick(list);
		ret = g_info ? 0 : -FI_ENOMEM;
	}
	fi_freeinfo(list);
	return ret;
}

static int av_setup(void)
{
	int ret;

	ret = av_getinfo();
	if (ret) {
		ft_info("fi_getinfo: %s", av_err(ret));
		return ret;
	}
	g_v6 = g_info->addr_format == FI_SOCKADDR_IN6;
	ft_info("provider %s, domain %s, %s", g_info->fabric_attr->prov_name,
		g_info->domain_attr->name, g_v6 ? "IPv6" : "IPv4");
	ret = fi_fabric(g_info->fabric_attr, &g_fabric, NULL);
	if (!ret)
		ret = fi_domain(g_fabric, g_info, &g_domain, NULL);
	if (ret)
		ft_info("fi_fabric/fi_domain: %s", av_err(ret));
	return ret;
}

int main(int argc, char **argv)
{
	ft_parse_opts(argc, argv,
		      "Address vector conformance on an FI_EP_RDM domain.",
		      false);
	g_msg_domain = getenv("FT_AV_DOMAIN_EP") &&
		       !strcmp(getenv("FT_AV_DOMAIN_EP"), "msg");
	ft_opts.ep_type = g_msg_domain ? FI_EP_MSG : FI_EP_RDM;
	if (av_setup()) {
		ft_fail("setup", "no %s domain",
			g_msg_domain ? "FI_EP_MSG" : "FI_EP_RDM");
		return ft_summary();
	}
	case_open_types();
	case_sync();
	case_event();
	if (g_msg_domain)
		ft_skip("close_bound_av", "no RDM endpoint on a MSG domain");
	else
		case_close_busy();
	ft_close_fid(&g_domain->fid, "domain");
	ft_close_fid(&g_fabric->fid, "fabric");
	fi_freeinfo(g_info);
	return ft_summary();
}
