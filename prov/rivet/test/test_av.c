/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the address vector: rivet_av_addr.c's pure helpers, and
 * rivet_av.c on a stand-in domain, with the EQ replaced by a recording
 * stub and the bound endpoints by recording listeners.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "rivet_av.h"

/* Wait sets, poll sets and fi_av_bind are deprecated in libfabric 2.x, yet
 * still its API, and rivet serves them to the programs that use them: this
 * test calls them on purpose. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* ---- stand-ins for what rivet_av.c calls outside the pure sources ---- */

#define AVT_MAX_EVENTS 64
static struct rivet_eq_event *g_events[AVT_MAX_EVENTS];
static size_t g_nevents;
static struct {
	struct rivet_av_listener *ep;
	fi_addr_t addr;
} g_removed[64];
static size_t g_nremoved;

__attribute__((weak)) void rivet_eq_push(struct rivet_eq *eq,
					 struct rivet_eq_event *ev)
{
	cr_assert_lt(g_nevents, AVT_MAX_EVENTS);
	g_events[g_nevents++] = ev;
}

static void avt_removed(struct rivet_av_listener *ep, fi_addr_t addr)
{
	cr_assert_lt(g_nremoved, 64);
	g_removed[g_nremoved].ep = ep;
	g_removed[g_nremoved++].addr = addr;
}

/* ---- fixtures ---- */

static struct rivet_fabric g_fabric;
static struct rivet_domain g_dom;
static struct rivet_eq g_eq;

static struct fid_av *avt_open(uint32_t format, uint64_t flags, size_t count)
{
	struct fi_av_attr attr = { .type = FI_AV_UNSPEC, .flags = flags,
				   .count = count };
	struct fid_av *av;

	g_dom.fabric = &g_fabric;
	g_dom.info = fi_allocinfo();
	cr_assert_not_null(g_dom.info);
	g_dom.info->addr_format = format;
	atomic_init(&g_dom.refcnt, 0);
	g_eq.fabric = &g_fabric;
	g_eq.eq_fid.fid.fclass = FI_CLASS_EQ;
	atomic_init(&g_eq.refcnt, 0);
	cr_assert_eq(rivet_av_open(&g_dom.domain_fid, &attr, &av, NULL), 0);
	cr_assert_eq(attr.type, FI_AV_TABLE);
	cr_assert_eq(atomic_load(&g_dom.refcnt), 1);
	return av;
}

static void avt_close(struct fid_av *av)
{
	cr_assert_eq(fi_close(&av->fid), 0);
	cr_assert_eq(atomic_load(&g_dom.refcnt), 0);
	fi_freeinfo(g_dom.info);
}

static struct rivet_av *avt_rav(struct fid_av *av)
{
	return container_of(av, struct rivet_av, av_fid);
}

static struct sockaddr_in avt_in(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	a.sin_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	return a;
}

static struct sockaddr_in6 avt_in6(const char *ip, uint16_t port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6 };

	a.sin6_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
	return a;
}

static const char *avt_str(struct fid_av *av, fi_addr_t addr)
{
	static char buf[128];
	union rivet_sockaddr sa;
	size_t len = sizeof(sa);

	cr_assert_eq(fi_av_lookup(av, addr, &sa, &len), 0, "lookup %lu",
		     (unsigned long)addr);
	len = sizeof(buf);
	cr_assert_not_null(fi_av_straddr(av, &sa, buf, &len));
	return buf;
}

/* ---- pure helpers ---- */

Test(av_addr, entry_len)
{
	struct sockaddr_in a = avt_in("1.2.3.4", 5);
	struct sockaddr_in6 b = avt_in6("::1", 5);
	struct sockaddr c = { .sa_family = AF_UNIX };

	cr_assert_eq(rivet_av_entry_len(&b, FI_SOCKADDR_IN), sizeof(a));
	cr_assert_eq(rivet_av_entry_len(&a, FI_SOCKADDR_IN6), sizeof(b));
	cr_assert_eq(rivet_av_entry_len(&a, FI_SOCKADDR), sizeof(a));
	cr_assert_eq(rivet_av_entry_len(&b, FI_SOCKADDR), sizeof(b));
	cr_assert_eq(rivet_av_entry_len(&c, FI_SOCKADDR), 0);
}

Test(av_addr, check)
{
	struct sockaddr_in a = avt_in("10.0.0.1", 7000);
	struct sockaddr_in6 b = avt_in6("fd00::1", 7000);

	cr_assert_eq(rivet_av_addr_check((void *)&a, FI_SOCKADDR_IN), 0);
	cr_assert_eq(rivet_av_addr_check((void *)&a, FI_SOCKADDR), 0);
	cr_assert_eq(rivet_av_addr_check((void *)&a, FI_SOCKADDR_IN6),
		     -FI_EINVAL);
	cr_assert_eq(rivet_av_addr_check((void *)&b, FI_SOCKADDR_IN6), 0);
	cr_assert_eq(rivet_av_addr_check((void *)&b, FI_SOCKADDR_IN),
		     -FI_EINVAL);
	cr_assert_eq(rivet_av_addr_check(NULL, FI_SOCKADDR), -FI_EINVAL);
	a.sin_port = 0;
	cr_assert_eq(rivet_av_addr_check((void *)&a, FI_SOCKADDR_IN),
		     -FI_EADDRNOTAVAIL);
	a = avt_in("0.0.0.0", 7000);
	cr_assert_eq(rivet_av_addr_check((void *)&a, FI_SOCKADDR_IN),
		     -FI_EADDRNOTAVAIL);
	b = avt_in6("::", 7000);
	cr_assert_eq(rivet_av_addr_check((void *)&b, FI_SOCKADDR_IN6),
		     -FI_EADDRNOTAVAIL);
	b = avt_in6("::ffff:0.0.0.0", 7000);
	cr_assert_eq(rivet_av_addr_check((void *)&b, FI_SOCKADDR_IN6),
		     -FI_EADDRNOTAVAIL);
}

Test(av_addr, sym_addr)
{
	struct sockaddr_in a = avt_in("10.0.0.254", 5000);
	struct sockaddr_in6 b = avt_in6("fd00::ffff", 1);
	union rivet_sockaddr out;
	char buf[64];
	size_t len = sizeof(buf);

	cr_assert_eq(rivet_av_sym_addr((void *)&a, 3, 2, &out), 0);
	cr_assert_eq(rivet_addr_str(&out.sa, buf, &len), 0);
	cr_assert_str_eq(buf, "fi_sockaddr_in://10.0.1.1:5002");
	cr_assert_eq(rivet_av_sym_addr((void *)&b, 1, 0, &out), 0);
	len = sizeof(buf);
	cr_assert_eq(rivet_addr_str(&out.sa, buf, &len), 0);
	cr_assert_str_eq(buf, "fi_sockaddr_in6://[fd00::1:0]:1");
	a = avt_in("255.255.255.255", 65535);
	cr_assert_eq(rivet_av_sym_addr((void *)&a, 0, 0, &out), 0);
	cr_assert_eq(rivet_av_sym_addr((void *)&a, 1, 0, &out), -FI_EINVAL);
	cr_assert_eq(rivet_av_sym_addr((void *)&a, 0, 1, &out), -FI_EINVAL);
}

Test(av_addr, sym_name)
{
	char buf[32];

	cr_assert_eq(rivet_av_sym_name("host10", 1, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "host11");
	cr_assert_eq(rivet_av_sym_name("n09", 1, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "n10");
	cr_assert_eq(rivet_av_sym_name("n9", 1, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "n10");
	cr_assert_eq(rivet_av_sym_name("n-007", 0, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "n-007");
	cr_assert_eq(rivet_av_sym_name("host", 0, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "host");
	cr_assert_eq(rivet_av_sym_name("host", 1, buf, sizeof(buf)),
		     -FI_EINVAL);
	cr_assert_eq(rivet_av_sym_name("host99", 1, buf, 6), -FI_ETOOSMALL);
}

/* ---- the AV object ---- */

Test(av, open_attrs)
{
	struct fi_av_attr attr = { .type = FI_AV_MAP };
	struct fid_av *av;

	avt_close(avt_open(FI_SOCKADDR_IN, 0, 0));
	g_dom.info = fi_allocinfo();
	g_dom.info->addr_format = FI_SOCKADDR_IN;
	cr_assert_eq(rivet_av_open(&g_dom.domain_fid, NULL, &av, NULL),
		     -FI_EINVAL);
	/* a named AV opened read-only must exist */
	attr.name = "rivet-unit-none";
	attr.flags = FI_READ;
	cr_assert_eq(rivet_av_open(&g_dom.domain_fid, &attr, &av, NULL),
		     -FI_ENOENT);
	attr.name = NULL;
	attr.flags = FI_READ;
	cr_assert_eq(rivet_av_open(&g_dom.domain_fid, &attr, &av, NULL),
		     -FI_EINVAL);
	attr.flags = FI_REMOTE_WRITE;
	cr_assert_eq(rivet_av_open(&g_dom.domain_fid, &attr, &av, NULL),
		     -FI_EBADFLAGS);
	attr.flags = 0;
	/* fi_rx_addr: scalable endpoints' receive contexts */
	attr.rx_ctx_bits = 4;
	cr_assert_eq(rivet_av_open(&g_dom.domain_fid, &attr, &av, NULL), 0);
	cr_assert_eq(fi_close(&av->fid), 0);
	attr.rx_ctx_bits = RIVET_AV_RX_CTX_BITS + 1;
	cr_assert_eq(rivet_av_open(&g_dom.domain_fid, &attr, &av, NULL),
		     -FI_EINVAL);
	attr.rx_ctx_bits = 0;
	attr.type = 42;
	cr_assert_eq(rivet_av_open(&g_dom.domain_fid, &attr, &av, NULL),
		     -FI_EINVAL);
	attr.type = FI_AV_MAP;
	attr.flags = FI_SYMMETRIC;
	cr_assert_eq(rivet_av_open(&g_dom.domain_fid, &attr, &av, NULL), 0);
	cr_assert_eq(attr.type, FI_AV_MAP);
	avt_close(av);
}

Test(av, insert_sync_err)
{
	struct fid_av *av = avt_open(FI_SOCKADDR_IN, 0, 2);
	struct sockaddr_in a[5] = {
		avt_in("10.0.0.1", 7000), avt_in("10.0.0.2", 0),
		avt_in("10.0.0.3", 7000), avt_in("0.0.0.0", 7000),
		avt_in("10.0.0.4", 7000),
	};
	fi_addr_t fa[5];
	int errs[5] = { -1, -1, -1, -1, -1 };

	cr_assert_eq(fi_av_insert(av, a, 5, fa, FI_SYNC_ERR, errs), 3);
	cr_assert_eq(fa[0], 0);
	cr_assert_eq(fa[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fa[2], 1);
	cr_assert_eq(fa[3], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fa[4], 2);
	cr_assert_eq(errs[0], 0);
	cr_assert_eq(errs[1], FI_EADDRNOTAVAIL);
	cr_assert_eq(errs[2], 0);
	cr_assert_eq(errs[3], FI_EADDRNOTAVAIL);
	cr_assert_eq(errs[4], 0);
	cr_assert_str_eq(avt_str(av, 2), "fi_sockaddr_in://10.0.0.4:7000");
	/* sequential across calls, and fi_addr may be NULL */
	a[0] = avt_in("10.0.0.9", 1);
	cr_assert_eq(fi_av_insert(av, a, 1, NULL, 0, NULL), 1);
	cr_assert_str_eq(avt_str(av, 3), "fi_sockaddr_in://10.0.0.9:1");
	cr_assert_eq(fi_av_insert(av, a, 1, fa, FI_SYNC_ERR, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_insert(av, a, 1, fa, FI_AV_USER_ID, NULL),
		     -FI_EBADFLAGS);
	cr_assert_eq(fi_av_insert(av, NULL, 1, fa, 0, NULL), -FI_EINVAL);
	avt_close(av);
}

Test(av, insert_grows_and_reverses)
{
	struct fid_av *av = avt_open(FI_SOCKADDR_IN6, 0, 0);
	struct rivet_av *rav = avt_rav(av);
	struct sockaddr_in6 a;
	fi_addr_t fa;
	char ip[64];
	size_t i;

	for (i = 0; i < 1000; i++) {
		snprintf(ip, sizeof(ip), "fd00::%zx", i + 1);
		a = avt_in6(ip, 9000);
		cr_assert_eq(fi_av_insert(av, &a, 1, &fa, 0, NULL), 1);
		cr_assert_eq(fa, i);
	}
	a = avt_in6("fd00::1f4", 9000);
	cr_assert_eq(rivet_av_reverse(rav, (struct sockaddr *)&a), 499);
	a.sin6_port = htons(9001);
	cr_assert_eq(rivet_av_reverse(rav, (struct sockaddr *)&a),
		     FI_ADDR_NOTAVAIL);
	cr_assert_str_eq(avt_str(av, 999),
			 "fi_sockaddr_in6://[fd00::3e8]:9000");
	avt_close(av);
}

Test(av, sockaddr_format_mixed_array)
{
	struct fid_av *av = avt_open(FI_SOCKADDR, 0, 0);
	struct sockaddr_in a = avt_in("10.1.1.1", 1);
	struct sockaddr_in6 b = avt_in6("fd00::2", 2);
	uint8_t buf[sizeof(a) + sizeof(b) + sizeof(a)];
	fi_addr_t fa[3];

	memcpy(buf, &a, sizeof(a));
	memcpy(buf + sizeof(a), &b, sizeof(b));
	memcpy(buf + sizeof(a) + sizeof(b), &a, sizeof(a));
	buf[sizeof(a) + sizeof(b) + offsetof(struct sockaddr_in, sin_port) +
	    1] = 3;
	cr_assert_eq(fi_av_insert(av, buf, 3, fa, 0, NULL), 3);
	cr_assert_str_eq(avt_str(av, 1), "fi_sockaddr_in6://[fd00::2]:2");
	cr_assert_str_eq(avt_str(av, 2), "fi_sockaddr_in://10.1.1.1:3");
	avt_close(av);
}

Test(av, lookup)
{
	struct fid_av *av = avt_open(FI_SOCKADDR_IN, 0, 0);
	struct sockaddr_in a = avt_in("10.0.0.1", 7000), out;
	fi_addr_t fa;
	size_t len;

	cr_assert_eq(fi_av_insert(av, &a, 1, &fa, 0, NULL), 1);
	len = sizeof(out);
	cr_assert_eq(fi_av_lookup(av, fa, &out, &len), 0);
	cr_assert_eq(len, sizeof(a));
	cr_assert_eq(memcmp(&out, &a, sizeof(a)), 0);
	memset(&out, 0, sizeof(out));
	len = 4;
	cr_assert_eq(fi_av_lookup(av, fa, &out, &len), 0);
	cr_assert_eq(len, sizeof(a));
	cr_assert_eq(out.sin_port, a.sin_port);
	cr_assert_eq(out.sin_addr.s_addr, 0);
	len = 0;
	cr_assert_eq(fi_av_lookup(av, fa, NULL, &len), 0);
	cr_assert_eq(len, sizeof(a));
	len = sizeof(out);
	cr_assert_eq(fi_av_lookup(av, 1, &out, &len), -FI_EINVAL);
	cr_assert_eq(fi_av_lookup(av, FI_ADDR_NOTAVAIL, &out, &len),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_lookup(av, fa, &out, NULL), -FI_EINVAL);
	avt_close(av);
}

Test(av, straddr)
{
	struct fid_av *av = avt_open(FI_SOCKADDR_IN, 0, 0);
	struct sockaddr_in a = avt_in("1.2.3.4", 5);
	struct sockaddr b = { .sa_family = AF_UNIX };
	char buf[64];
	size_t len = sizeof(buf);

	cr_assert_eq(fi_av_straddr(av, &a, buf, &len), buf);
	cr_assert_str_eq(buf, "fi_sockaddr_in://1.2.3.4:5");
	cr_assert_eq(len, strlen(buf) + 1);
	len = 8;
	cr_assert_eq(fi_av_straddr(av, &a, buf, &len), buf);
	cr_assert_str_eq(buf, "fi_sock");
	cr_assert_eq(len, strlen("fi_sockaddr_in://1.2.3.4:5") + 1);
	len = sizeof(buf);
	cr_assert_null(fi_av_straddr(av, &b, buf, &len));
	avt_close(av);
}

Test(av, remove_reuse_and_notify)
{
	struct fid_av *av = avt_open(FI_SOCKADDR_IN, 0, 0);
	struct rivet_av *rav = avt_rav(av);
	struct sockaddr_in a[4] = {
		avt_in("10.0.0.1", 1), avt_in("10.0.0.2", 1),
		avt_in("10.0.0.3", 1), avt_in("10.0.0.4", 1),
	};
	struct rivet_av_listener l1 = { avt_removed }, l2 = { avt_removed };
	struct rivet_av_listener *ep1 = &l1, *ep2 = &l2;
	fi_addr_t fa[4], rm[2] = { 2, 1 }, bad[2] = { 0, 7 };
	size_t len = sizeof(a[0]);

	cr_assert_eq(fi_av_insert(av, a, 4, fa, 0, NULL), 4);
	cr_assert_eq(rivet_av_bind_ep(rav, ep1), 0);
	cr_assert_eq(rivet_av_bind_ep(rav, ep2), 0);
	cr_assert_eq(fi_close(&av->fid), -FI_EBUSY);
	cr_assert_eq(fi_av_remove(av, bad, 2, 0), -FI_EINVAL);
	cr_assert_eq(g_nremoved, 0);
	cr_assert_eq(fi_av_remove(av, rm, 2, 1), -FI_EBADFLAGS);
	cr_assert_eq(fi_av_remove(av, rm, 2, 0), 0);
	cr_assert_eq(g_nremoved, 4);
	cr_assert_eq(g_removed[0].ep, ep1);
	cr_assert_eq(g_removed[0].addr, 2);
	cr_assert_eq(g_removed[3].ep, ep2);
	cr_assert_eq(g_removed[3].addr, 1);
	cr_assert_eq(fi_av_lookup(av, 1, &a[0], &len), -FI_EINVAL);
	cr_assert_eq(rivet_av_reverse(rav, (struct sockaddr *)&a[2]),
		     FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_av_remove(av, rm, 1, 0), -FI_EINVAL);
	/* the lowest free slots are used again, in order */
	cr_assert_eq(fi_av_insert(av, &a[2], 1, fa, 0, NULL), 1);
	cr_assert_eq(fa[0], 1);
	cr_assert_eq(fi_av_insert(av, &a[1], 1, fa, 0, NULL), 1);
	cr_assert_eq(fa[0], 2);
	cr_assert_eq(fi_av_insert(av, &a[1], 1, fa, 0, NULL), 1);
	cr_assert_eq(fa[0], 4);
	cr_assert_str_eq(avt_str(av, 1), "fi_sockaddr_in://10.0.0.3:1");
	rivet_av_unbind_ep(rav, ep1);
	rivet_av_unbind_ep(rav, ep2);
	avt_close(av);
}

Test(av, duplicates_keep_reverse)
{
	struct fid_av *av = avt_open(FI_SOCKADDR_IN, 0, 0);
	struct rivet_av *rav = avt_rav(av);
	struct sockaddr_in a = avt_in("10.0.0.1", 1);
	fi_addr_t fa[3], rm;

	cr_assert_eq(fi_av_insert(av, &a, 1, &fa[0], 0, NULL), 1);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa[1], 0, NULL), 1);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa[2], 0, NULL), 1);
	cr_assert_eq(fa[1], 1);
	cr_assert_eq(rivet_av_reverse(rav, (struct sockaddr *)&a), 0);
	rm = 1;
	cr_assert_eq(fi_av_remove(av, &rm, 1, 0), 0);
	cr_assert_eq(rivet_av_reverse(rav, (struct sockaddr *)&a), 0);
	rm = 0;
	cr_assert_eq(fi_av_remove(av, &rm, 1, 0), 0);
	cr_assert_eq(rivet_av_reverse(rav, (struct sockaddr *)&a), 2);
	rm = 2;
	cr_assert_eq(fi_av_remove(av, &rm, 1, 0), 0);
	cr_assert_eq(rivet_av_reverse(rav, (struct sockaddr *)&a),
		     FI_ADDR_NOTAVAIL);
	cr_assert_eq(rav->ndups, 0);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa[0], 0, NULL), 1);
	cr_assert_eq(fa[0], 0);
	cr_assert_eq(rivet_av_reverse(rav, (struct sockaddr *)&a), 0);
	avt_close(av);
}

Test(av, insertsvc)
{
	struct fid_av *av = avt_open(FI_SOCKADDR_IN, 0, 0);
	fi_addr_t fa = 99;
	int err = -1;

	cr_assert_eq(fi_av_insertsvc(av, "127.0.0.1", "7000", &fa, 0, NULL),
		     1);
	cr_assert_eq(fa, 0);
	cr_assert_str_eq(avt_str(av, 0), "fi_sockaddr_in://127.0.0.1:7000");
	cr_assert_eq(fi_av_insertsvc(av, "fi_sockaddr_in://10.2.3.4:77", NULL,
				     &fa, 0, NULL), 1);
	cr_assert_str_eq(avt_str(av, 1), "fi_sockaddr_in://10.2.3.4:77");
	cr_assert_eq(fi_av_insertsvc(av, "127.0.0.1", NULL, &fa, FI_SYNC_ERR,
				     &err), 0);
	cr_assert_eq(fa, FI_ADDR_NOTAVAIL);
	cr_assert_eq(err, FI_EADDRNOTAVAIL);
	cr_assert_eq(fi_av_insertsvc(av, "::1", "7000", &fa, FI_SYNC_ERR,
				     &err), 0);
	cr_assert_neq(err, 0);
	cr_assert_eq(fi_av_insertsvc(av, NULL, "7000", &fa, 0, NULL),
		     -FI_EINVAL);
	/* a service is a port number: nothing else, nothing above 65535 */
	cr_assert_eq(fi_av_insertsvc(av, "127.0.0.1", "notaservice", &fa, 0,
				     NULL), -FI_EINVAL);
	cr_assert_eq(fi_av_insertsvc(av, "127.0.0.1", "70000", &fa, 0, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_insertsvc(av, "127.0.0.1", "", &fa, 0, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_insertsym(av, "127.0.0.1", 1, "7x", 1, &fa, 0,
				     NULL), -FI_EINVAL);
	cr_assert_eq(fi_av_insertsvc(av, "127.0.0.1", "65535", &fa, 0, NULL),
		     1);
	avt_close(av);
}

Test(av_addr, service_check)
{
	cr_expect_eq(rivet_av_service_check("0"), 0);
	cr_expect_eq(rivet_av_service_check("7000"), 0);
	cr_expect_eq(rivet_av_service_check("65535"), 0);
	cr_expect_eq(rivet_av_service_check("65536"), -FI_EINVAL);
	cr_expect_eq(rivet_av_service_check("99999999999999999999"),
		     -FI_EINVAL);
	cr_expect_eq(rivet_av_service_check("http"), -FI_EINVAL);
	cr_expect_eq(rivet_av_service_check("-1"), -FI_EINVAL);
	cr_expect_eq(rivet_av_service_check(""), -FI_EINVAL);
	cr_expect_eq(rivet_av_service_check(NULL), -FI_EINVAL);
}

Test(av, insertsym)
{
	struct fid_av *av = avt_open(FI_SOCKADDR_IN, 0, 0);
	static const char *const want[] = {
		"fi_sockaddr_in://10.0.0.254:5000",
		"fi_sockaddr_in://10.0.0.254:5001",
		"fi_sockaddr_in://10.0.0.255:5000",
		"fi_sockaddr_in://10.0.0.255:5001",
		"fi_sockaddr_in://10.0.1.0:5000",
		"fi_sockaddr_in://10.0.1.0:5001",
	};
	fi_addr_t fa[6];
	int errs[6];
	size_t i;

	cr_assert_eq(fi_av_insertsym(av, "10.0.0.254", 3, "5000", 2, fa, 0,
				     NULL), 6);
	for (i = 0; i < 6; i++) {
		cr_assert_eq(fa[i], i);
		cr_assert_str_eq(avt_str(av, i), want[i]);
	}
	cr_assert_eq(fi_av_insertsym(av, "localhost", 2, "5000", 1, fa,
				     FI_SYNC_ERR, errs), 1);
	cr_assert_eq(errs[0], 0);
	cr_assert_eq(errs[1], FI_EINVAL);
	cr_assert_eq(fa[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_av_insertsym(av, "10.0.0.1", 0, "5000", 2, fa, 0,
				     NULL), 0);
	cr_assert_eq(fi_av_insertsym(av, "10.0.0.1", 1, "65535", 2, fa,
				     FI_SYNC_ERR, errs), 1);
	cr_assert_eq(errs[1], FI_EINVAL);
	cr_assert_eq(fi_av_insertsym(av, NULL, 1, "1", 1, fa, 0, NULL),
		     -FI_EINVAL);
	avt_close(av);
}

Test(av, event_mode)
{
	struct fid_av *av = avt_open(FI_SOCKADDR_IN, FI_EVENT, 0);
	struct sockaddr_in a[3] = {
		avt_in("10.0.0.1", 1), avt_in("10.0.0.2", 0),
		avt_in("10.0.0.3", 1),
	};
	struct fi_eq_entry entry;
	fi_addr_t fa[3];
	int ctx, errs[3];

	cr_assert_eq(fi_av_insert(av, a, 3, fa, 0, &ctx), -FI_ENOEQ);
	cr_assert_eq(fi_av_bind(av, &g_eq.eq_fid.fid, 1), -FI_EBADFLAGS);
	cr_assert_eq(fi_av_bind(av, &av->fid, 0), -FI_EINVAL);
	cr_assert_eq(fi_av_bind(av, &g_eq.eq_fid.fid, 0), 0);
	cr_assert_eq(atomic_load(&g_eq.refcnt), 1);
	cr_assert_eq(fi_av_bind(av, &g_eq.eq_fid.fid, 0), -FI_EINVAL);
	cr_assert_eq(fi_av_insert(av, a, 3, fa, FI_SYNC_ERR, errs),
		     -FI_EINVAL);
	cr_assert_eq(g_nevents, 0);
	cr_assert_eq(fi_av_insert(av, a, 3, fa, 0, &ctx), 0);
	cr_assert_eq(fa[0], 0);
	cr_assert_eq(fa[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fa[2], 1);
	cr_assert_eq(g_nevents, 2);
	cr_assert(g_events[0]->is_err);
	cr_assert_eq(g_events[0]->entry.fid, &av->fid);
	cr_assert_eq(g_events[0]->entry.context, &ctx);
	cr_assert_eq(g_events[0]->entry.data, 1);
	cr_assert_eq(g_events[0]->entry.err, FI_EADDRNOTAVAIL);
	cr_assert_not(g_events[1]->is_err);
	cr_assert_eq(g_events[1]->event, FI_AV_COMPLETE);
	cr_assert_eq(g_events[1]->data_len, sizeof(entry));
	memcpy(&entry, g_events[1]->data, sizeof(entry));
	cr_assert_eq(entry.fid, &av->fid);
	cr_assert_eq(entry.context, &ctx);
	cr_assert_eq(entry.data, 2);
	/* an empty insert still completes */
	cr_assert_eq(fi_av_insertsym(av, "10.0.0.9", 0, "1", 1, NULL, 0,
				     &ctx), 0);
	cr_assert_eq(g_nevents, 3);
	memcpy(&entry, g_events[2]->data, sizeof(entry));
	cr_assert_eq(entry.data, 0);
	avt_close(av);
	cr_assert_eq(atomic_load(&g_eq.refcnt), 0);
	while (g_nevents)
		free(g_events[--g_nevents]);
}

/* ---- FI_SHARED_AV: named AVs ---- */

static struct fid_av *avt_named(const char *name, uint64_t flags, int want)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = flags,
				   .name = name };
	struct fid_av *av = NULL;

	cr_assert_eq(rivet_av_open(&g_dom.domain_fid, &attr, &av, NULL),
		     want);
	if (!want)
		cr_assert_not_null(attr.map_addr);
	return av;
}

static fi_addr_t *avt_map(struct fid_av *av)
{
	return container_of(av, struct rivet_av, av_fid)->shm.map;
}

static bool avt_has(struct fid_av *av, fi_addr_t fa, const char *ip,
		    uint16_t port)
{
	struct sockaddr_in want = avt_in(ip, port), got;
	size_t len = sizeof(got);

	return !fi_av_lookup(av, fa, &got, &len) && len == sizeof(got) &&
	       got.sin_addr.s_addr == want.sin_addr.s_addr &&
	       got.sin_port == want.sin_port;
}

Test(av, shared_writer_and_reader)
{
	struct sockaddr_in a[4] = {
		avt_in("10.0.0.1", 7000), avt_in("10.0.0.2", 7000),
		avt_in("10.0.0.3", 7000), avt_in("10.0.0.4", 7000),
	};
	char name[64];
	struct fid_av *w, *r;
	fi_addr_t fa[4], one = 1;
	pid_t pid;
	int status;

	avt_close(avt_open(FI_SOCKADDR_IN, 0, 0));
	g_dom.info = fi_allocinfo();
	g_dom.info->addr_format = FI_SOCKADDR_IN;
	snprintf(name, sizeof(name), "rivet-unit-%d", (int)getpid());
	w = avt_named(name, 0, 0);
	cr_assert_eq(fi_av_insert(w, a, 3, fa, 0, NULL), 3);
	cr_assert(fa[0] == 0 && fa[1] == 1 && fa[2] == 2);
	/* what map_addr shows: the fi_addr_t of every entry */
	cr_assert(avt_map(w)[0] == 0 && avt_map(w)[2] == 2);
	cr_assert_eq(avt_map(w)[3], FI_ADDR_NOTAVAIL);

	r = avt_named(name, FI_READ, 0);
	cr_assert(avt_has(r, 0, "10.0.0.1", 7000));
	cr_assert(avt_has(r, 2, "10.0.0.3", 7000));
	cr_assert_eq(fi_av_insert(r, &a[3], 1, fa, 0, NULL), -FI_EOPNOTSUPP);
	cr_assert_eq(fi_av_remove(r, &one, 1, 0), -FI_EOPNOTSUPP);
	/* an insert after the reader opened: seen on its first use */
	cr_assert_eq(fi_av_insert(w, &a[3], 1, &fa[3], 0, NULL), 1);
	cr_assert_eq(fa[3], 3);
	cr_assert(avt_has(r, 3, "10.0.0.4", 7000));
	cr_assert_eq(rivet_av_reverse(container_of(r, struct rivet_av,
						   av_fid),
				      (struct sockaddr *)&a[3]), 3);
	/* another process sees the same table */
	pid = fork();
	if (!pid) {
		struct fid_av *c = avt_named(name, FI_READ, 0);

		_exit(avt_has(c, 1, "10.0.0.2", 7000) &&
		      avt_has(c, 3, "10.0.0.4", 7000) &&
		      avt_map(c)[3] == 3 ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* a removal shows in the map; the index is never given again */
	cr_assert_eq(fi_av_remove(w, &one, 1, 0), 0);
	cr_assert_eq(avt_map(r)[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_av_insert(w, &a[1], 1, &fa[1], 0, NULL), 1);
	cr_assert_eq(fa[1], 4);
	cr_assert_eq(fi_close(&r->fid), 0);
	cr_assert_eq(fi_close(&w->fid), 0);
	/* the creator's close takes the name away */
	avt_named(name, FI_READ, -FI_ENOENT);
	fi_freeinfo(g_dom.info);
}

/* A name left by a creator that died is made anew, not inherited; a live
 * creator's is shared by a second writer. */
Test(av, shared_stale_and_second_writer)
{
	struct sockaddr_in a = avt_in("10.0.0.9", 7000);
	char name[64];
	struct fid_av *w, *w2;
	fi_addr_t fa;
	pid_t pid;

	avt_close(avt_open(FI_SOCKADDR_IN, 0, 0));
	g_dom.info = fi_allocinfo();
	g_dom.info->addr_format = FI_SOCKADDR_IN;
	snprintf(name, sizeof(name), "rivet-unit-stale-%d", (int)getpid());
	pid = fork();
	if (!pid) {
		struct fid_av *c = avt_named(name, 0, 0);

		_exit(fi_av_insert(c, &a, 1, &fa, 0, NULL) == 1 ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	w = avt_named(name, 0, 0);
	cr_assert_eq(avt_map(w)[0], FI_ADDR_NOTAVAIL);	/* nothing stale */
	cr_assert_eq(fi_av_insert(w, &a, 1, &fa, 0, NULL), 1);
	cr_assert_eq(fa, 0);
	w2 = avt_named(name, 0, 0);
	cr_assert(avt_has(w2, 0, "10.0.0.9", 7000));
	cr_assert_eq(fi_av_insert(w2, &a, 1, &fa, 0, NULL), 1);
	cr_assert_eq(fa, 1);		/* after the first writer's */
	cr_assert(avt_has(w, 1, "10.0.0.9", 7000));
	cr_assert_eq(fi_close(&w2->fid), 0);
	cr_assert_eq(fi_close(&w->fid), 0);
	fi_freeinfo(g_dom.info);
}

/* The segment's header is any writer's to change: what a process reads
 * and writes is bounded by what it mapped, not by the header's cap and
 * count (a peer that raises them must not make it read or write past its
 * mapping). */
Test(av, shared_header_bounds)
{
	struct sockaddr_in a = avt_in("10.0.0.7", 7000), *many;
	struct rivet_av_shm_hdr *hdr;
	struct sockaddr_in got;
	size_t len = sizeof(got), i, n = 2 * RIVET_AV_SHM_MIN_CAP;
	char name[64];
	struct fid_av *w, *r;
	fi_addr_t fa;

	avt_close(avt_open(FI_SOCKADDR_IN, 0, 0));
	g_dom.info = fi_allocinfo();
	g_dom.info->addr_format = FI_SOCKADDR_IN;
	snprintf(name, sizeof(name), "rivet-unit-bounds-%d", (int)getpid());
	w = avt_named(name, 0, 0);
	cr_assert_eq(fi_av_insert(w, &a, 1, &fa, 0, NULL), 1);
	r = avt_named(name, FI_READ, 0);
	hdr = container_of(w, struct rivet_av, av_fid)->shm.hdr;
	hdr->cap = 1ULL << 30;
	atomic_store(&hdr->count, 1ULL << 16);
	/* the reader syncs up to the count: only what it mapped */
	cr_assert(avt_has(r, 0, "10.0.0.7", 7000));
	cr_assert_neq(fi_av_lookup(r, 1ULL << 15, &got, &len), 0);
	/* the writer fills what it mapped, then runs out */
	many = calloc(n, sizeof(*many));
	cr_assert_not_null(many);
	for (i = 0; i < n; i++)
		many[i] = avt_in("10.0.1.1", (uint16_t)(8000 + i));
	cr_assert_eq(fi_av_insert(w, many, n, NULL, 0, NULL), -FI_ENOSPC);
	free(many);
	cr_assert_eq(fi_close(&r->fid), 0);
	cr_assert_eq(fi_close(&w->fid), 0);
	fi_freeinfo(g_dom.info);
}
