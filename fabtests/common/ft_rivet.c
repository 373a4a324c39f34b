// SPDX-License-Identifier: MIT
/* Shared helpers for rivet's conformance programs: result lines, options,
 * getinfo hints, fabric/domain/EQ/CQ/MR setup, data patterns. */
#include <endian.h>
#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/ft_rivet.h"

struct ft_opts ft_opts = {
	.ep_type = FI_EP_MSG,
	.iters = 10,
	.max_size = FT_MAX_ALL_SIZE,
	.src_port = FT_DEFAULT_PORT,
	.dst_port = FT_DEFAULT_PORT,
	.timeout_ms = FT_DEFAULT_TIMEOUT_MS,
};

/* Result counts live in shared memory so forked cases can add to them. */
struct ft_counts {
	int passed;
	int failed;
	int skipped;
};

static struct ft_counts g_local_counts;
static struct ft_counts *g_counts = &g_local_counts;

/* ---- results ---------------------------------------------------------- */

void ft_ok(const char *name)
{
	printf("ok %s\n", name);
	fflush(stdout);
	g_counts->passed++;
}

static void ft_vline(const char *tag, const char *name, const char *fmt,
		     va_list ap)
{
	printf("%s %s: ", tag, name);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

void ft_fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ft_vline("FAIL", name, fmt, ap);
	va_end(ap);
	g_counts->failed++;
}

void ft_skip(const char *name, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ft_vline("skip", name, fmt, ap);
	va_end(ap);
	g_counts->skipped++;
}

bool ft_check(bool cond, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (cond) {
		ft_ok(name);
		return true;
	}
	va_start(ap, fmt);
	ft_vline("FAIL", name, fmt, ap);
	va_end(ap);
	g_counts->failed++;
	return false;
}

void ft_info(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

int ft_failures(void)
{
	return g_counts->failed;
}

int ft_summary(void)
{
	if (g_counts->skipped)
		printf("# %d skipped\n", g_counts->skipped);
	printf("%d passed, %d failed\n", g_counts->passed, g_counts->failed);
	fflush(stdout);
	return g_counts->failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static void ft_counts_share(void)
{
	void *p;

	if (g_counts != &g_local_counts)
		return;
	p = mmap(NULL, sizeof(*g_counts), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	memcpy(p, g_counts, sizeof(*g_counts));
	g_counts = p;
}

/* Run fn in a child process, so that a provider that crashes or hangs on
 * a misuse check costs one failure instead of the rest of the program. */
void ft_fork_case(const char *name, void (*fn)(void))
{
	int status;
	pid_t pid;

	ft_counts_share();
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		ft_fail(name, "fork failed");
		return;
	}
	if (!pid) {
		alarm((ft_opts.timeout_ms + 999) / 1000 + 5);
		fn();
		fflush(stdout);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0)
		ft_fail(name, "waitpid failed");
	else if (WIFSIGNALED(status))
		ft_fail(name, "crashed or hung (signal %d)", WTERMSIG(status));
	else if (WEXITSTATUS(status))
		ft_fail(name, "child exited with status %d (crash handler?)",
			WEXITSTATUS(status));
}

/* ---- options ---------------------------------------------------------- */

/* A program's own options, added to the common ones. */
static const char *g_extra_opts = "";
static const char *g_extra_help = "";
static void (*g_extra_fn)(int op, const char *arg);

static void ft_usage(const char *prog, const char *desc, bool two_sided)
{
	printf("Usage: %s [OPTIONS]%s\n%s\n\n", prog,
	       two_sided ? " [SERVER_ADDR]   (no address: run as server)" : "",
	       desc);
	printf(" -p PROV      provider name (default: any)\n"
	       " -d DOMAIN    domain name\n"
	       " -e EP        endpoint type: msg or rdm\n"
	       " -I N         iterations (default 10)\n"
	       " -S SIZE|all  transfer size (k/m/g suffixes) or all sizes\n"
	       " -M SIZE      largest size for -S all (default 64m)\n"
	       " -s ADDR      source address\n"
	       " -B PORT      source port (server listens here; default %s)\n"
	       " -P PORT      destination port (default %s)\n"
	       " -T MS        timeout of every wait in ms (default %d)\n"
	       " -O           no FI_MR_VIRT_ADDR in the hints: remote\n"
	       "              addresses are offsets into their region\n"
	       " -c CLASS     traffic class: best_effort, low_latency,\n"
	       "              dedicated_access, bulk_data, scavenger,\n"
	       "              network_ctrl or dscp:N (default unspec)\n"
	       " -v           verbose\n"
	       " -h           this help\n",
	       FT_DEFAULT_PORT, FT_DEFAULT_PORT, FT_DEFAULT_TIMEOUT_MS);
	printf("%s", g_extra_help);
}

static bool ft_parse_size(const char *str, size_t *size_p)
{
	char *end;
	unsigned long long val = strtoull(str, &end, 0);

	switch (*end) {
	case 'g': case 'G':
		val <<= 10;
		/* fall through */
	case 'm': case 'M':
		val <<= 10;
		/* fall through */
	case 'k': case 'K':
		val <<= 10;
		end++;
		break;
	default:
		break;
	}
	if (end == str || *end)
		return false;
	*size_p = val;
	return true;
}

static void ft_die_usage(const char *prog, const char *msg, const char *arg)
{
	fprintf(stderr, "%s: %s '%s' (try -h)\n", prog, msg, arg);
	exit(2);
}

static const struct {
	const char *name;
	uint32_t tclass;
} g_tclasses[] = {
	{ "unspec", FI_TC_UNSPEC }, { "best_effort", FI_TC_BEST_EFFORT },
	{ "low_latency", FI_TC_LOW_LATENCY },
	{ "dedicated_access", FI_TC_DEDICATED_ACCESS },
	{ "bulk_data", FI_TC_BULK_DATA }, { "scavenger", FI_TC_SCAVENGER },
	{ "network_ctrl", FI_TC_NETWORK_CTRL },
};

static bool ft_parse_tclass(const char *str, uint32_t *tclass_p)
{
	char *end;
	unsigned long dscp;
	size_t i;

	for (i = 0; i < sizeof(g_tclasses) / sizeof(g_tclasses[0]); i++) {
		if (!strcasecmp(str, g_tclasses[i].name)) {
			*tclass_p = g_tclasses[i].tclass;
			return true;
		}
	}
	if (strncasecmp(str, "dscp:", 5))
		return false;
	dscp = strtoul(str + 5, &end, 0);
	if (end == str + 5 || *end || dscp > 63)
		return false;
	*tclass_p = fi_tc_dscp_set((uint8_t)dscp);
	return true;
}

static void ft_parse_opt(const char *prog, int op, const char *arg)
{
	switch (op) {
	case 'p': ft_opts.prov = arg; break;
	case 'd': ft_opts.domain = arg; break;
	case 's': ft_opts.src_addr = arg; break;
	case 'B': ft_opts.src_port = arg; break;
	case 'P': ft_opts.dst_port = arg; break;
	case 'v': ft_opts.verbose = true; break;
	case 'O': ft_opts.mr_offset = true; break;
	case 'c':
		if (!ft_parse_tclass(arg, &ft_opts.tclass))
			ft_die_usage(prog, "bad traffic class", arg);
		break;
	case 'I': ft_opts.iters = atoi(arg);
		if (ft_opts.iters <= 0)
			ft_die_usage(prog, "bad iteration count", arg);
		break;
	case 'T': ft_opts.timeout_ms = atoi(arg);
		if (ft_opts.timeout_ms <= 0)
			ft_die_usage(prog, "bad timeout", arg);
		break;
	case 'e':
		if (!strcasecmp(arg, "msg"))
			ft_opts.ep_type = FI_EP_MSG;
		else if (!strcasecmp(arg, "rdm"))
			ft_opts.ep_type = FI_EP_RDM;
		else if (!strcasecmp(arg, "dgram"))
			ft_opts.ep_type = FI_EP_DGRAM;
		else
			ft_die_usage(prog, "unsupported endpoint type", arg);
		break;
	case 'M':
		if (!ft_parse_size(arg, &ft_opts.max_size))
			ft_die_usage(prog, "bad size", arg);
		break;
	case 'S':
		ft_opts.size_set = true;
		ft_opts.all_sizes = !strcasecmp(arg, "all");
		if (!ft_opts.all_sizes && !ft_parse_size(arg, &ft_opts.size))
			ft_die_usage(prog, "bad size", arg);
		break;
	default:
		if (g_extra_fn && strchr(g_extra_opts, op))
			g_extra_fn(op, arg);
		else
			exit(2);
	}
}

void ft_set_extra_opts(const char *optstr, const char *help,
		       void (*fn)(int op, const char *arg))
{
	g_extra_opts = optstr;
	g_extra_help = help;
	g_extra_fn = fn;
}

void ft_parse_opts(int argc, char **argv, const char *desc, bool two_sided)
{
	char optstr[64];
	int op;

	snprintf(optstr, sizeof(optstr), "p:d:e:I:S:M:s:B:P:T:c:vOh%s",
		 g_extra_opts);
	while ((op = getopt(argc, argv, optstr)) != -1) {
		if (op == 'h') {
			ft_usage(argv[0], desc, two_sided);
			exit(0);
		}
		ft_parse_opt(argv[0], op, optarg);
	}
	if (optind < argc && two_sided)
		ft_opts.dst_addr = argv[optind++];
	if (optind < argc)
		ft_die_usage(argv[0], "unexpected argument", argv[optind]);
}

bool ft_is_server(void)
{
	return !ft_opts.dst_addr;
}

static int ft_size_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* The sizes to sweep: -S SIZE alone, or 0, powers of two up to max, the
 * neighbours of page and 64 KiB boundaries, and max itself; sorted. */
size_t ft_size_list(size_t max, size_t *sizes, size_t cap)
{
	static const size_t odd[] = { 3, 4095, 4097, 65535, 65537 };
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
	if (n < cap && sizes[n - 1] != max && (max & (max - 1)))
		sizes[n++] = max;
	qsort(sizes, n, sizeof(*sizes), ft_size_cmp);
	return n;
}

/* Large transfers are slow on an emulated machine: give them more time. */
int ft_timeout_for(size_t len)
{
	return ft_opts.timeout_ms + (int)(len >> 20) * 250;
}

static int ft_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void ft_report_percentiles(const char *prefix, double *v, size_t n,
			   double scale)
{
	if (!n)
		return;
	qsort(v, n, sizeof(*v), ft_cmp_double);
	printf("%s_typical_us: %.2f\n", prefix, v[n / 2] * scale * 1e6);
	printf("%s_p99_us: %.2f\n", prefix, v[n * 99 / 100] * scale * 1e6);
	printf("%s_max_us: %.2f\n", prefix, v[n - 1] * scale * 1e6);
}

uint64_t ft_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- info and setup --------------------------------------------------- */

struct fi_info *ft_hints_alloc(uint64_t caps)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->caps = caps;
	hints->mode = FT_MODE;
	hints->ep_attr->type = ft_opts.ep_type;
	hints->domain_attr->mr_mode = FT_MR_MODE;
	if (ft_opts.mr_offset)	/* -O: offset addressing */
		hints->domain_attr->mr_mode &= ~FI_MR_VIRT_ADDR;
	hints->tx_attr->tclass = ft_opts.tclass;
	if (ft_opts.prov)
		hints->fabric_attr->prov_name = strdup(ft_opts.prov);
	if (ft_opts.domain)
		hints->domain_attr->name = strdup(ft_opts.domain);
	return hints;
}

/* Put the -s/-B source address into a client's hints. */
static int ft_hints_set_src(struct fi_info *hints)
{
	struct addrinfo ai_hints = { .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai;
	const char *port = ft_opts.src_port;
	int ret;

	if (!strcmp(port, FT_DEFAULT_PORT))
		port = "0";
	ret = getaddrinfo(ft_opts.src_addr, port, &ai_hints, &ai);
	if (ret) {
		ft_info("getaddrinfo(%s): %s", ft_opts.src_addr,
			gai_strerror(ret));
		return -FI_EINVAL;
	}
	hints->src_addr = malloc(ai->ai_addrlen);
	if (hints->src_addr) {
		memcpy(hints->src_addr, ai->ai_addr, ai->ai_addrlen);
		hints->src_addrlen = ai->ai_addrlen;
		hints->addr_format = ai->ai_family == AF_INET6 ?
			FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
	}
	freeaddrinfo(ai);
	return hints->src_addr ? 0 : -FI_ENOMEM;
}

/* Server: resolve -s/-B as our source; client: the server's address. */
/* -c: the class asked for must come back (fi_endpoint(3) defines it). */
static int ft_check_tclass(const struct fi_info *hints, int ret,
			   const struct fi_info *info)
{
	if (hints->tx_attr->tclass == FI_TC_UNSPEC)
		return ret;
	if (!ft_check(!ret && info->tx_attr->tclass ==
			      hints->tx_attr->tclass, "getinfo_tclass",
		      "traffic class 0x%x: %s, got 0x%x",
		      hints->tx_attr->tclass, fi_strerror(-ret),
		      ret ? 0 : info->tx_attr->tclass))
		return ret ? ret : -FI_ENODATA;
	return 0;
}

int ft_getinfo(struct fi_info *hints, struct fi_info **info_p)
{
	int ret;

	if (ft_is_server()) {
		ret = fi_getinfo(FT_FIVERSION, ft_opts.src_addr,
				 ft_opts.src_port, FI_SOURCE, hints, info_p);
		return ft_check_tclass(hints, ret, ret ? NULL : *info_p);
	}
	if (ft_opts.src_addr) {
		ret = ft_hints_set_src(hints);
		if (ret)
			return ret;
	}
	ret = fi_getinfo(FT_FIVERSION, ft_opts.dst_addr, ft_opts.dst_port, 0,
			 hints, info_p);
	return ft_check_tclass(hints, ret, ret ? NULL : *info_p);
}

int ft_fab_open(struct ft_fab *fab, struct fi_info *info)
{
	int ret;

	memset(fab, 0, sizeof(*fab));
	fab->info = info;
	ret = fi_fabric(info->fabric_attr, &fab->fabric, NULL);
	if (ret) {
		ft_info("fi_fabric: %s", fi_strerror(-ret));
		return ret;
	}
	ret = fi_domain(fab->fabric, info, &fab->domain, NULL);
	if (ret)
		ft_info("fi_domain: %s", fi_strerror(-ret));
	return ret;
}

/* Close if open; a failure is logged, not fatal. */
void ft_close_fid(fid_t fid, const char *what)
{
	int ret;

	if (!fid)
		return;
	ret = fi_close(fid);
	if (ret)
		ft_info("fi_close(%s): %s", what, fi_strerror(-ret));
}

void ft_fab_close(struct ft_fab *fab)
{
	ft_close_fid(fab->pep ? &fab->pep->fid : NULL, "pep");
	ft_close_fid(fab->peq ? &fab->peq->fid : NULL, "pep eq");
	ft_close_fid(fab->domain ? &fab->domain->fid : NULL, "domain");
	ft_close_fid(fab->fabric ? &fab->fabric->fid : NULL, "fabric");
	fi_freeinfo(fab->info);
	memset(fab, 0, sizeof(*fab));
}

int ft_eq_open(struct fid_fabric *fabric, enum fi_wait_obj wait,
	       struct fid_eq **eq_p)
{
	struct fi_eq_attr attr = { .size = 64, .wait_obj = wait };

	return fi_eq_open(fabric, &attr, eq_p, NULL);
}

int ft_cq_open(struct fid_domain *domain, size_t size, enum fi_wait_obj wait,
	       struct fid_cq **cq_p)
{
	struct fi_cq_attr attr = {
		.size = size,
		.format = FI_CQ_FORMAT_DATA,
		.wait_obj = wait,
	};

	return fi_cq_open(domain, &attr, cq_p, NULL);
}

static uint64_t g_next_key;

int ft_buf_alloc(struct fid_domain *domain, size_t len, uint64_t access,
		 struct ft_buf *buf)
{
	size_t alloc = (len + 4095) & ~(size_t)4095;
	int ret;

	memset(buf, 0, sizeof(*buf));
	if (!alloc)
		alloc = 4096;
	if (posix_memalign(&buf->ptr, 4096, alloc))
		return -FI_ENOMEM;
	memset(buf->ptr, 0, alloc);
	buf->len = alloc;
	/* distinct keys for providers without FI_MR_PROV_KEY (rxm) */
	ret = fi_mr_reg(domain, buf->ptr, alloc, access, 0, ++g_next_key, 0,
			&buf->mr, NULL);
	if (ret) {
		ft_info("fi_mr_reg(%zu bytes): %s", alloc, fi_strerror(-ret));
		free(buf->ptr);
		memset(buf, 0, sizeof(*buf));
		return ret;
	}
	buf->desc = fi_mr_desc(buf->mr);
	return 0;
}

void ft_buf_free(struct ft_buf *buf)
{
	ft_close_fid(buf->mr ? &buf->mr->fid : NULL, "mr");
	free(buf->ptr);
	memset(buf, 0, sizeof(*buf));
}

const char *ft_addr_str(const void *addr, char *str, size_t len)
{
	const struct sockaddr *sa = addr;
	const struct sockaddr_in *sin = addr;
	const struct sockaddr_in6 *sin6 = addr;
	char ip[INET6_ADDRSTRLEN] = "?";

	if (!sa) {
		snprintf(str, len, "(null)");
	} else if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		snprintf(str, len, "%s:%u", ip, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
		snprintf(str, len, "[%s]:%u", ip, ntohs(sin6->sin6_port));
	} else {
		snprintf(str, len, "(family %d)", sa->sa_family);
	}
	return str;
}

/* ---- data patterns ---------------------------------------------------- */

/* Every byte depends on the seed and its offset in the message. */
static inline uint64_t ft_word(uint32_t seed, uint64_t idx)
{
	uint64_t x = (idx + 1) * 0x9E3779B97F4A7C15ULL;

	x ^= ((uint64_t)seed << 32) | seed;
	x ^= x >> 29;
	return htole64(x);
}

uint64_t ft_pattern_word(uint32_t seed, uint64_t idx)
{
	return ft_word(seed, idx);
}

static inline uint8_t ft_byte(uint32_t seed, uint64_t off)
{
	uint64_t w = ft_word(seed, off >> 3);

	return ((const uint8_t *)&w)[off & 7];
}

static void ft_fill_at(uint8_t *p, size_t len, uint32_t seed, uint64_t off)
{
	uint64_t w;

	for (; len && (off & 7); len--)
		*p++ = ft_byte(seed, off++);
	for (; len >= 8; len -= 8, p += 8, off += 8) {
		w = ft_word(seed, off >> 3);
		memcpy(p, &w, 8);
	}
	for (; len; len--)
		*p++ = ft_byte(seed, off++);
}

/* Offset of the first wrong byte after off, or -1. */
static ssize_t ft_verify_at(const uint8_t *p, size_t len, uint32_t seed,
			    uint64_t off)
{
	uint64_t w, start = off;
	size_t i;

	for (; len && (off & 7); len--, off++, p++)
		if (*p != ft_byte(seed, off))
			return off - start;
	for (; len >= 8; len -= 8, p += 8, off += 8) {
		w = ft_word(seed, off >> 3);
		if (memcmp(p, &w, 8))
			break;
	}
	for (i = 0; i < len; i++, off++)
		if (p[i] != ft_byte(seed, off))
			return off - start;
	return -1;
}

void ft_fill(void *buf, size_t len, uint32_t seed)
{
	ft_fill_at(buf, len, seed, 0);
}

ssize_t ft_verify(const void *buf, size_t len, uint32_t seed)
{
	return ft_verify_at(buf, len, seed, 0);
}

void ft_fill_iov(const struct iovec *iov, size_t cnt, uint32_t seed)
{
	uint64_t off = 0;
	size_t i;

	for (i = 0; i < cnt; off += iov[i].iov_len, i++)
		ft_fill_at(iov[i].iov_base, iov[i].iov_len, seed, off);
}

ssize_t ft_verify_iov(const struct iovec *iov, size_t cnt, uint32_t seed)
{
	uint64_t off = 0;
	ssize_t bad;
	size_t i;

	for (i = 0; i < cnt; off += iov[i].iov_len, i++) {
		bad = ft_verify_at(iov[i].iov_base, iov[i].iov_len, seed, off);
		if (bad >= 0)
			return off + bad;
	}
	return -1;
}
