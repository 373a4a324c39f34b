// SPDX-License-Identifier: MIT
/* fi_getinfo conformance: no hints, MSG hints, source and destination
 * addresses, unsatisfiable hints (-FI_ENODATA), bad nodes, info sanity. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ft_rivet.h"

#define GI_SRC_PORT 47620
#define GI_DST_PORT 47621

static char g_addr[INET6_ADDRSTRLEN];

static bool gi_prov_match(const struct fi_info *info)
{
	return !ft_opts.prov ||
	       !strcmp(info->fabric_attr->prov_name, ft_opts.prov);
}

static bool gi_sockaddr_ok(const void *addr, size_t len, uint32_t format)
{
	const struct sockaddr *sa = addr;

	if (format == FI_SOCKADDR_IN)
		return len == sizeof(struct sockaddr_in) &&
		       sa->sa_family == AF_INET;
	if (format == FI_SOCKADDR_IN6)
		return len == sizeof(struct sockaddr_in6) &&
		       sa->sa_family == AF_INET6;
	if (format == FI_SOCKADDR)
		return sa->sa_family == AF_INET || sa->sa_family == AF_INET6;
	return true;	/* opaque formats: only presence is checked */
}

static const char *gi_sane_attrs(const struct fi_info *fi)
{
	if (!fi->fabric_attr->name || !*fi->fabric_attr->name)
		return "empty fabric name";
	if (!fi->fabric_attr->prov_name || !*fi->fabric_attr->prov_name)
		return "empty provider name";
	if (!fi->domain_attr->name || !*fi->domain_attr->name)
		return "empty domain name";
	if (!fi->tx_attr->size || !fi->rx_attr->size)
		return "zero tx/rx size";
	if (!fi->tx_attr->iov_limit || !fi->rx_attr->iov_limit)
		return "zero iov_limit";
	if (!fi->ep_attr->max_msg_size)
		return "zero max_msg_size";
	if (fi->tx_attr->inject_size > fi->ep_attr->max_msg_size)
		return "inject_size > max_msg_size";
	if (fi->domain_attr->cq_data_size > 8)
		return "cq_data_size > 8";
	if ((fi->caps & FI_RMA) && !fi->domain_attr->mr_key_size)
		return "FI_RMA with mr_key_size 0";
	if ((fi->caps & FI_RMA) && !fi->tx_attr->rma_iov_limit)
		return "FI_RMA with rma_iov_limit 0";
	if (fi->tx_attr->caps & ~fi->caps)
		return "tx_attr caps not a subset of caps";
	if (fi->rx_attr->caps & ~fi->caps)
		return "rx_attr caps not a subset of caps";
	return NULL;
}

/* NULL when the info looks sane, else the first problem found. */
static const char *gi_sane(const struct fi_info *fi,
			   const struct fi_info *hints)
{
	const char *why = gi_sane_attrs(fi);

	if (why)
		return why;
	if (fi->ep_attr->type == FI_EP_MSG && (!fi->src_addr ||
					       !fi->src_addrlen))
		return "src_addr not set";
	if (fi->src_addr &&
	    !gi_sockaddr_ok(fi->src_addr, fi->src_addrlen, fi->addr_format))
		return "src_addr does not match addr_format";
	if (!hints)
		return NULL;
	if (hints->ep_attr->type && fi->ep_attr->type != hints->ep_attr->type)
		return "ep_type differs from hints";
	if ((fi->caps & hints->caps) != hints->caps)
		return "caps lack requested bits";
	if (fi->mode & ~hints->mode)
		return "mode requires bits the hints did not offer";
	if (fi->domain_attr->mr_mode & ~hints->domain_attr->mr_mode)
		return "mr_mode requires bits the hints did not offer";
	return NULL;
}

/* Count matching infos; fail on the first insane one. */
static void gi_check_list(const char *name, int ret, struct fi_info *list,
			  const struct fi_info *hints)
{
	struct fi_info *fi;
	const char *why;
	int n = 0;

	if (ret) {
		ft_fail(name, "fi_getinfo: %d (%s)", ret, fi_strerror(-ret));
		return;
	}
	for (fi = list; fi; fi = fi->next) {
		if (!gi_prov_match(fi))
			continue;
		n++;
		why = gi_sane(fi, hints);
		if (why) {
			ft_fail(name, "%s/%s: %s", fi->fabric_attr->prov_name,
				fi->domain_attr->name, why);
			return;
		}
	}
	ft_check(n > 0, name, "no info from provider %s",
		 ft_opts.prov ? ft_opts.prov : "(any)");
}

/* FI_RIVET_MAX_MSG_SIZE caps what is offered (MSG, RDM). */
static void gi_max_msg_cap(void)
{
	const char *env = getenv("FI_RIVET_MAX_MSG_SIZE");
	struct fi_info *hints, *list = NULL, *fi;
	size_t cap;
	int ret;

	if (!env || !(cap = strtoull(env, NULL, 0)))
		return;
	hints = ft_hints_alloc(FI_MSG);
	hints->ep_attr->type = FI_EP_UNSPEC;
	ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, hints, &list);
	for (fi = list; !ret && fi; fi = fi->next) {
		if (fi->ep_attr->type != FI_EP_DGRAM &&
		    fi->ep_attr->max_msg_size > cap)
			ret = -FI_EOTHER;
	}
	ft_check(!ret && list, "getinfo_max_msg_size_capped",
		 "%d: max_msg_size above FI_RIVET_MAX_MSG_SIZE=%zu", ret,
		 cap);
	fi_freeinfo(list);
	fi_freeinfo(hints);
}

static void gi_nohints(void)
{
	struct fi_info *list = NULL;
	int ret;

	ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, NULL, &list);
	gi_check_list("getinfo_nohints", ret, list, NULL);
	fi_freeinfo(list);
}

static void gi_hinted(const char *name, uint64_t caps)
{
	struct fi_info *hints = ft_hints_alloc(caps);
	struct fi_info *list = NULL;
	int ret;

	ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, hints, &list);
	gi_check_list(name, ret, list, hints);
	fi_freeinfo(list);
	fi_freeinfo(hints);
}

/* Take the address to test from -s, or from the first MSG info. */
static bool gi_pick_addr(void)
{
	struct fi_info *hints = ft_hints_alloc(FI_MSG), *list = NULL;
	const struct sockaddr_in *sin;

	if (ft_opts.src_addr) {
		snprintf(g_addr, sizeof(g_addr), "%s", ft_opts.src_addr);
		fi_freeinfo(hints);
		return true;
	}
	hints->addr_format = FI_SOCKADDR_IN;
	if (!fi_getinfo(FT_FIVERSION, NULL, NULL, 0, hints, &list) &&
	    list->src_addr) {
		sin = list->src_addr;
		inet_ntop(AF_INET, &sin->sin_addr, g_addr, sizeof(g_addr));
	}
	fi_freeinfo(list);
	fi_freeinfo(hints);
	return g_addr[0];
}

/* Does addr hold IPv4/IPv6 address g_addr and the given port? */
static bool gi_addr_is(const void *addr, size_t len, unsigned int port)
{
	const struct sockaddr_in *sin = addr;
	const struct sockaddr_in6 *sin6 = addr;
	uint8_t bin[16];

	if (!addr)
		return false;
	if (sin->sin_family == AF_INET && len >= sizeof(*sin))
		return inet_pton(AF_INET, g_addr, bin) == 1 &&
		       !memcmp(&sin->sin_addr, bin, 4) &&
		       ntohs(sin->sin_port) == port;
	if (sin->sin_family == AF_INET6 && len >= sizeof(*sin6))
		return inet_pton(AF_INET6, g_addr, bin) == 1 &&
		       !memcmp(&sin6->sin6_addr, bin, 16) &&
		       ntohs(sin6->sin6_port) == port;
	return false;
}

static void gi_check_addrs(const char *name, int ret, struct fi_info *list,
			   bool src, unsigned int port)
{
	char str[128];
	struct fi_info *fi;

	if (ret) {
		ft_fail(name, "fi_getinfo(%s): %s", g_addr, fi_strerror(-ret));
		return;
	}
	for (fi = list; fi; fi = fi->next) {
		const void *a = src ? fi->src_addr : fi->dest_addr;
		size_t len = src ? fi->src_addrlen : fi->dest_addrlen;

		if (!gi_addr_is(a, len, port)) {
			ft_fail(name, "%s address is %s, expected %s port %u",
				src ? "src" : "dest",
				ft_addr_str(a, str, sizeof(str)), g_addr, port);
			return;
		}
		if (src && fi->dest_addr) {
			ft_fail(name, "FI_SOURCE info has a dest_addr");
			return;
		}
	}
	ft_ok(name);
}

static void gi_node(const char *name, uint64_t flags, unsigned int port)
{
	struct fi_info *hints = ft_hints_alloc(FI_MSG), *list = NULL;
	char service[16];
	int ret;

	snprintf(service, sizeof(service), "%u", port);
	ret = fi_getinfo(FT_FIVERSION, g_addr, service, flags, hints, &list);
	gi_check_addrs(name, ret, list, flags & FI_SOURCE, port);
	fi_freeinfo(list);
	fi_freeinfo(hints);
}

/* A source address given in hints->src_addr instead of node/service. */
static void gi_hints_src(void)
{
	struct fi_info *hints = ft_hints_alloc(FI_MSG), *list = NULL;
	struct sockaddr_in *sin = calloc(1, sizeof(*sin));
	int ret;

	if (!sin || inet_pton(AF_INET, g_addr, &sin->sin_addr) != 1) {
		free(sin);
		fi_freeinfo(hints);
		ft_skip("getinfo_hints_src_addr", "%s is not IPv4", g_addr);
		return;
	}
	sin->sin_family = AF_INET;
	sin->sin_port = htons(GI_SRC_PORT);
	hints->addr_format = FI_SOCKADDR_IN;
	hints->src_addr = sin;
	hints->src_addrlen = sizeof(*sin);
	ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, hints, &list);
	gi_check_addrs("getinfo_hints_src_addr", ret, list, true,
		       GI_SRC_PORT);
	fi_freeinfo(list);
	fi_freeinfo(hints);
}

/* The way the upstream fabtests' clients ask (ft_read_addr_opts): a
 * FI_SOURCE call gives the source address and its format, which become
 * the hints of a call for the destination node.  For every endpoint type:
 * DGRAM names are IPv6 (IPv4-mapped on RoCE v4) while the node is IPv4. */
static void gi_client_style(const char *name, enum fi_ep_type type)
{
	struct fi_info *hints = ft_hints_alloc(FI_MSG), *src = NULL;
	struct fi_info *list = NULL;
	char service[16];
	int ret;

	hints->ep_attr->type = type;
	ret = fi_getinfo(FT_FIVERSION, g_addr, NULL, FI_SOURCE, hints, &src);
	if (!ret) {
		hints->addr_format = src->addr_format;
		hints->src_addr = malloc(src->src_addrlen);
		hints->src_addrlen = src->src_addrlen;
		memcpy(hints->src_addr, src->src_addr, src->src_addrlen);
		snprintf(service, sizeof(service), "%u", GI_DST_PORT);
		ret = fi_getinfo(FT_FIVERSION, g_addr, service, 0, hints,
				 &list);
	}
	if (ft_check(!ret && list && list->dest_addr, name,
		     "fi_getinfo: %d (%s)", ret, fi_strerror(-ret)))
		ft_ok(name);
	fi_freeinfo(list);
	fi_freeinfo(src);
	fi_freeinfo(hints);
}

/* Expect exactly -FI_ENODATA (no provider can satisfy the hints). */
static void gi_expect_nodata(const char *name, struct fi_info *hints)
{
	struct fi_info *list = NULL;
	int ret;

	ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, hints, &list);
	ft_check(ret == -FI_ENODATA && !list, name,
		 "fi_getinfo returned %d (%s), expected -FI_ENODATA", ret,
		 ret ? fi_strerror(-ret) : "an info");
	fi_freeinfo(list);
	fi_freeinfo(hints);
}

static void gi_set_str(char **field, const char *val)
{
	free(*field);
	*field = strdup(val);
}

static void gi_impossible(void)
{
	struct fi_info *h;

	gi_expect_nodata("getinfo_caps_trigger_collective",
			 ft_hints_alloc(FI_MSG | FI_TRIGGER | FI_COLLECTIVE));
	h = ft_hints_alloc(FI_MSG);
	h->tx_attr->size = 1UL << 30;
	gi_expect_nodata("getinfo_tx_size_1g", h);
	h = ft_hints_alloc(FI_MSG);
	h->rx_attr->size = 1UL << 30;
	gi_expect_nodata("getinfo_rx_size_1g", h);
	h = ft_hints_alloc(FI_MSG);
	h->ep_attr->max_msg_size = SIZE_MAX;
	gi_expect_nodata("getinfo_max_msg_size_max", h);
	h = ft_hints_alloc(FI_MSG);
	h->tx_attr->iov_limit = 1UL << 20;
	gi_expect_nodata("getinfo_iov_limit_1m", h);
	h = ft_hints_alloc(FI_MSG);
	gi_set_str(&h->fabric_attr->prov_name, "no_such_provider");
	gi_expect_nodata("getinfo_unknown_provider", h);
	h = ft_hints_alloc(FI_MSG);
	gi_set_str(&h->domain_attr->name, "no_such_domain");
	gi_expect_nodata("getinfo_unknown_domain", h);
	h = ft_hints_alloc(FI_MSG);
	gi_set_str(&h->fabric_attr->name, "no_such_fabric");
	gi_expect_nodata("getinfo_unknown_fabric", h);
}

static void gi_expect_error(const char *name, const char *node,
			    const char *service, uint64_t flags)
{
	struct fi_info *hints = ft_hints_alloc(FI_MSG), *list = NULL;
	int ret;

	ret = fi_getinfo(FT_FIVERSION, node, service, flags, hints, &list);
	ft_check(ret < 0 && !list, name, "fi_getinfo(%s, %s) returned %d",
		 node, service, ret);
	fi_freeinfo(list);
	fi_freeinfo(hints);
}

static void gi_bad_nodes(void)
{
	gi_expect_error("getinfo_bad_node_source", "no-such-host.invalid",
			"47622", FI_SOURCE);
	gi_expect_error("getinfo_bad_node_dest", "no-such-host.invalid",
			"47622", 0);
	/* TEST-NET-1 (RFC 5737) is never a local address. */
	gi_expect_error("getinfo_nonlocal_source", "192.0.2.1", "47622",
			FI_SOURCE);
}

static void gi_dupinfo(void)
{
	struct fi_info *hints = ft_hints_alloc(FI_MSG), *list = NULL, *dup;
	bool same;

	if (fi_getinfo(FT_FIVERSION, NULL, NULL, 0, hints, &list)) {
		ft_fail("getinfo_dupinfo", "fi_getinfo failed");
		fi_freeinfo(hints);
		return;
	}
	dup = fi_dupinfo(list);
	same = dup && dup->caps == list->caps &&
	       dup->src_addrlen == list->src_addrlen &&
	       !memcmp(dup->src_addr, list->src_addr, list->src_addrlen) &&
	       !strcmp(dup->domain_attr->name, list->domain_attr->name) &&
	       !strcmp(dup->fabric_attr->name, list->fabric_attr->name) &&
	       dup->ep_attr->max_msg_size == list->ep_attr->max_msg_size;
	ft_check(same, "getinfo_dupinfo", "fi_dupinfo copy differs");
	fi_freeinfo(dup);
	fi_freeinfo(list);
	fi_freeinfo(hints);
}

int main(int argc, char **argv)
{
	ft_parse_opts(argc, argv,
		      "fi_getinfo conformance (single process).", false);
	gi_nohints();
	gi_max_msg_cap();
	gi_hinted("getinfo_msg_hints", FI_MSG);
	gi_hinted("getinfo_msg_rma_hints", FI_MSG | FI_RMA);
	gi_dupinfo();
	if (gi_pick_addr()) {
		ft_info("testing addresses on %s", g_addr);
		gi_node("getinfo_source_node", FI_SOURCE, GI_SRC_PORT);
		gi_node("getinfo_dest_node", 0, GI_DST_PORT);
		gi_hints_src();
		gi_client_style("getinfo_client_msg", FI_EP_MSG);
		gi_client_style("getinfo_client_rdm", FI_EP_RDM);
		gi_client_style("getinfo_client_dgram", FI_EP_DGRAM);
	} else {
		ft_fail("getinfo_source_node", "no address to test (use -s)");
	}
	gi_impossible();
	gi_bad_nodes();
	return ft_summary();
}
