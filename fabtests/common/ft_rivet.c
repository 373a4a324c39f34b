// SPDX-License-Identifier: MIT
/* Shared helpers for rivet's conformance programs: results, options, getinfo,
 * fabric/domain/EQ/CQ/MR setup, MSG connections, bounded waits, patterns. */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/ft_rivet.h"

#define FT_SPINS 200

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

static void ft_usage(const char *prog, const char *desc, bool two_sided)
{
	printf("Usage: %s [OPTIONS]%s\n%s\n\n", prog,
	       two_sided ? " [SERVER_ADDR]   (no address: run as server)" : "",
	       desc);
	printf(" -p PROV      provider name (default: any)\n"
	       " -d DOMAIN    domain name\n"
	       " -e EP        endpoint type: msg (only msg for now)\n"
	       " -I N         iterations (default 10)\n"
	       " -S SIZE|all  transfer size (k/m/g suffixes) or all sizes\n"
	       " -M SIZE      largest size for -S all (default 64m)\n"
	       " -s ADDR      source address\n"
	       " -B PORT      source port (server listens here; default %s)\n"
	       " -P PORT      destination port (default %s)\n"
	       " -T MS        timeout of every wait in ms (default %d)\n"
	       " -v           verbose\n"
	       " -h           this help\n",
	       FT_DEFAULT_PORT, FT_DEFAULT_PORT, FT_DEFAULT_TIMEOUT_MS);
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

static void ft_parse_opt(const char *prog, int op, const char *arg)
{
	switch (op) {
	case 'p': ft_opts.prov = arg; break;
	case 'd': ft_opts.domain = arg; break;
	case 's': ft_opts.src_addr = arg; break;
	case 'B': ft_opts.src_port = arg; break;
	case 'P': ft_opts.dst_port = arg; break;
	case 'v': ft_opts.verbose = true; break;
	case 'I': ft_opts.iters = atoi(arg);
		if (ft_opts.iters <= 0)
			ft_die_usage(prog, "bad iteration count", arg);
		break;
	case 'T': ft_opts.timeout_ms = atoi(arg);
		if (ft_opts.timeout_ms <= 0)
			ft_die_usage(prog, "bad timeout", arg);
		break;
	case 'e':
		if (strcasecmp(arg, "msg"))
			ft_die_usage(prog, "unsupported endpoint type", arg);
		ft_opts.ep_type = FI_EP_MSG;
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
		exit(2);
	}
}

void ft_parse_opts(int argc, char **argv, const char *desc, bool two_sided)
{
	int op;

	while ((op = getopt(argc, argv, "p:d:e:I:S:M:s:B:P:T:vh")) != -1) {
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
int ft_getinfo(struct fi_info *hints, struct fi_info **info_p)
{
	int ret;

	if (ft_is_server())
		return fi_getinfo(FT_FIVERSION, ft_opts.src_addr,
				  ft_opts.src_port, FI_SOURCE, hints, info_p);
	if (ft_opts.src_addr) {
		ret = ft_hints_set_src(hints);
		if (ret)
			return ret;
	}
	return fi_getinfo(FT_FIVERSION, ft_opts.dst_addr, ft_opts.dst_port, 0,
			  hints, info_p);
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

static void ft_close_fid(fid_t fid, const char *what)
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
	ret = fi_mr_reg(domain, buf->ptr, alloc, access, 0, 0, 0, &buf->mr,
			NULL);
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

/* ---- connections ------------------------------------------------------ */

int ft_listen(struct ft_fab *fab)
{
	char name[128], str[160];
	size_t len = sizeof(name);
	int ret;

	ret = ft_eq_open(fab->fabric, FI_WAIT_UNSPEC, &fab->peq);
	if (!ret)
		ret = fi_passive_ep(fab->fabric, fab->info, &fab->pep, NULL);
	if (!ret)
		ret = fi_pep_bind(fab->pep, &fab->peq->fid, 0);
	if (!ret)
		ret = fi_listen(fab->pep);
	if (ret) {
		ft_info("listen setup: %s", fi_strerror(-ret));
		return ret;
	}
	if (fi_getname(&fab->pep->fid, name, &len))
		snprintf(str, sizeof(str), "?");
	else
		ft_addr_str(name, str, sizeof(str));
	ft_info("listening on %s", str);
	return 0;
}

/* Wait for FI_CONNREQ on the listener; the caller owns *info_p. */
int ft_wait_connreq(struct ft_fab *fab, struct fi_info **info_p, void *data,
		    size_t *data_len)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + FT_CM_BUF_SIZE];
	struct fi_eq_cm_entry *entry = (void *)buf;
	uint32_t event;
	ssize_t ret;

	ret = ft_eq_wait(fab->peq, &event, buf, sizeof(buf), NULL,
			 ft_opts.timeout_ms);
	if (ret < 0)
		return (int)ret;
	if (event != FI_CONNREQ || !entry->info) {
		ft_info("listener: event %u instead of FI_CONNREQ", event);
		return -FI_EOTHER;
	}
	if (data_len) {
		*data_len = ret - sizeof(*entry);
		memcpy(data, entry->data, *data_len);
	}
	*info_p = entry->info;
	return 0;
}

int ft_accept_req(struct ft_fab *fab, struct ft_conn *conn, void *data,
		  size_t *data_len)
{
	struct fi_info *info;
	int ret;

	ret = ft_wait_connreq(fab, &info, data, data_len);
	if (ret)
		return ret;
	return ft_conn_open(fab, conn, info);
}

static int ft_conn_bind(struct ft_conn *conn)
{
	int ret;

	ret = fi_ep_bind(conn->ep, &conn->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(conn->ep, &conn->txcq->fid,
				 FI_TRANSMIT | conn->tx_bind_flags);
	if (!ret)
		ret = fi_ep_bind(conn->ep, &conn->rxcq->fid, FI_RECV);
	if (!ret && conn->txcntr)
		ret = fi_ep_bind(conn->ep, &conn->txcntr->fid, FI_SEND);
	if (ret)
		ft_info("fi_ep_bind: %s", fi_strerror(-ret));
	return ret;
}

/* Open the endpoint for info (owned by conn from now on) with its EQ and
 * CQs, bind, enable, and register the control buffers. */
int ft_conn_open(struct ft_fab *fab, struct ft_conn *conn,
		 struct fi_info *info)
{
	size_t txs = info->tx_attr->size ? info->tx_attr->size : 128;
	size_t rxs = info->rx_attr->size ? info->rx_attr->size : 128;
	int ret;

	conn->info = info;
	ret = ft_eq_open(fab->fabric, FI_WAIT_UNSPEC, &conn->eq);
	if (!ret)
		ret = ft_cq_open(fab->domain, txs, FI_WAIT_UNSPEC, &conn->txcq);
	if (!ret)
		ret = ft_cq_open(fab->domain, rxs, FI_WAIT_UNSPEC, &conn->rxcq);
	if (!ret)
		ret = fi_endpoint(fab->domain, info, &conn->ep, NULL);
	if (ret) {
		ft_info("endpoint resources: %s", fi_strerror(-ret));
		return ret;
	}
	ret = ft_conn_bind(conn);
	if (ret)
		return ret;
	ret = fi_enable(conn->ep);
	if (ret) {
		ft_info("fi_enable: %s", fi_strerror(-ret));
		return ret;
	}
	ret = ft_buf_alloc(fab->domain, FT_CTRL_SIZE, FI_SEND, &conn->ctrl_tx);
	if (!ret)
		ret = ft_buf_alloc(fab->domain, FT_CTRL_SIZE, FI_RECV,
				   &conn->ctrl_rx);
	return ret;
}

int ft_accept_finish(struct ft_conn *conn, const void *param, size_t len,
		     void *data, size_t *data_len)
{
	int ret = fi_accept(conn->ep, param, len);

	if (ret) {
		ft_info("fi_accept: %s", fi_strerror(-ret));
		return ret;
	}
	return ft_eq_expect(conn->eq, FI_CONNECTED, &conn->ep->fid, data,
			    data_len, ft_opts.timeout_ms);
}

int ft_connect_start(struct ft_fab *fab, struct ft_conn *conn)
{
	struct fi_info *info = fi_dupinfo(fab->info);

	if (!info)
		return -FI_ENOMEM;
	return ft_conn_open(fab, conn, info);
}

int ft_connect_finish(struct ft_conn *conn, const void *param, size_t len,
		      void *data, size_t *data_len)
{
	int ret = fi_connect(conn->ep, conn->info->dest_addr, param, len);

	if (ret) {
		ft_info("fi_connect: %s", fi_strerror(-ret));
		return ret;
	}
	return ft_eq_expect(conn->eq, FI_CONNECTED, &conn->ep->fid, data,
			    data_len, ft_opts.timeout_ms);
}

/* Both sides keep one control receive posted from before the connection
 * is up, so the peer's first message always finds a buffer. */
int ft_server_connect(struct ft_fab *fab, struct ft_conn *conn)
{
	int ret = ft_accept_req(fab, conn, NULL, NULL);

	if (!ret)
		ret = ft_ctrl_post_recv(conn);
	if (!ret)
		ret = ft_accept_finish(conn, NULL, 0, NULL, NULL);
	return ret;
}

int ft_client_connect(struct ft_fab *fab, struct ft_conn *conn)
{
	int ret = ft_connect_start(fab, conn);

	if (!ret)
		ret = ft_ctrl_post_recv(conn);
	if (!ret)
		ret = ft_connect_finish(conn, NULL, 0, NULL, NULL);
	return ret;
}

/* Close what ft_conn_open opened; keeps tx_bind_flags and txcntr. */
void ft_conn_close(struct ft_conn *conn)
{
	ft_close_fid(conn->ep ? &conn->ep->fid : NULL, "ep");
	ft_buf_free(&conn->ctrl_tx);
	ft_buf_free(&conn->ctrl_rx);
	ft_close_fid(conn->txcq ? &conn->txcq->fid : NULL, "tx cq");
	ft_close_fid(conn->rxcq ? &conn->rxcq->fid : NULL, "rx cq");
	ft_close_fid(conn->eq ? &conn->eq->fid : NULL, "eq");
	fi_freeinfo(conn->info);
	conn->info = NULL;
	conn->ep = NULL;
	conn->txcq = conn->rxcq = NULL;
	conn->eq = NULL;
}

/* ---- bounded waits ---------------------------------------------------- */

static int ft_slice(uint64_t end)
{
	uint64_t now = ft_now_ms();

	if (now >= end)
		return 0;
	return end - now > 200 ? 200 : (int)(end - now);
}

/* Next EQ event, or -FI_EAVAIL with *err filled (err_data as the caller
 * set it up), or -FI_ETIMEDOUT. */
ssize_t ft_eq_wait(struct fid_eq *eq, uint32_t *event, void *buf, size_t len,
		   struct fi_eq_err_entry *err, int timeout_ms)
{
	struct fi_eq_err_entry lerr;
	uint64_t end = ft_now_ms() + timeout_ms;
	bool can_block = true;
	ssize_t ret;

	do {
		if (can_block)
			ret = fi_eq_sread(eq, event, buf, len, ft_slice(end), 0);
		else
			ret = fi_eq_read(eq, event, buf, len, 0);
		if (ret == -FI_EAVAIL) {
			if (!err) {
				memset(&lerr, 0, sizeof(lerr));
				err = &lerr;
			}
			ret = fi_eq_readerr(eq, err, 0);
			return ret < 0 ? ret : -FI_EAVAIL;
		}
		if (ret == -FI_ENOSYS || ret == -FI_EINVAL) {
			can_block = false;
			ret = -FI_EAGAIN;
		}
		if (ret != -FI_EAGAIN)
			return ret;
		if (!can_block)
			usleep(1000);
	} while (ft_now_ms() < end);
	return -FI_ETIMEDOUT;
}

static void ft_eq_report_err(struct fid_eq *eq,
			     const struct fi_eq_err_entry *err)
{
	char buf[256];
	const char *str;

	str = fi_eq_strerror(eq, err->prov_errno, err->err_data, buf,
			     sizeof(buf));
	ft_info("eq error entry: err %d (%s), prov_errno %d (%s)", err->err,
		fi_strerror(err->err), err->prov_errno, str ? str : "");
}

/* Wait for event want on fid; copy the CM data out if asked. */
int ft_eq_expect(struct fid_eq *eq, uint32_t want, fid_t fid, void *data,
		 size_t *data_len, int timeout_ms)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + FT_CM_BUF_SIZE];
	struct fi_eq_cm_entry *entry = (void *)buf;
	struct fi_eq_err_entry err = { 0 };
	uint32_t event;
	ssize_t ret;

	ret = ft_eq_wait(eq, &event, buf, sizeof(buf), &err, timeout_ms);
	if (ret == -FI_EAVAIL) {
		ft_eq_report_err(eq, &err);
		return err.err ? -err.err : -FI_EOTHER;
	}
	if (ret < 0) {
		ft_info("waiting for event %u: %s", want, fi_strerror(-ret));
		return (int)ret;
	}
	if (event != want || (fid && entry->fid != fid)) {
		ft_info("got event %u (fid %p) instead of %u (fid %p)", event,
			(void *)entry->fid, want, (void *)fid);
		if (event == FI_CONNREQ)
			fi_freeinfo(entry->info);
		return -FI_EOTHER;
	}
	if (data_len) {
		*data_len = ret > (ssize_t)sizeof(*entry) ?
			ret - sizeof(*entry) : 0;
		memcpy(data, entry->data, *data_len);
	}
	return 0;
}

static int ft_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *err)
{
	ssize_t ret;

	memset(err, 0, sizeof(*err));
	ret = fi_cq_readerr(cq, err, 0);
	return ret < 0 ? (int)ret : -FI_EAVAIL;
}

/* Next completion, or -FI_EAVAIL with *err filled, or -FI_ETIMEDOUT. */
int ft_cq_wait(struct fid_cq *cq, struct fi_cq_data_entry *comp,
	       struct fi_cq_err_entry *err, int timeout_ms)
{
	struct fi_cq_data_entry lcomp;
	struct fi_cq_err_entry lerr;
	uint64_t end = ft_now_ms() + timeout_ms;
	bool can_block = true;
	int spins = 0;
	ssize_t ret;

	comp = comp ? comp : &lcomp;
	do {
		if (spins++ < FT_SPINS || !can_block)
			ret = fi_cq_read(cq, comp, 1);
		else
			ret = fi_cq_sread(cq, comp, 1, NULL, ft_slice(end));
		if (ret == 1)
			return 0;
		if (ret == -FI_EAVAIL)
			return ft_cq_readerr(cq, err ? err : &lerr);
		if (ret == -FI_ENOSYS || ret == -FI_EINVAL) {
			can_block = false;
			ret = -FI_EAGAIN;
		}
		if (ret != -FI_EAGAIN)
			return (int)ret;
		if (!can_block)
			sched_yield();
	} while (ft_now_ms() < end);
	return -FI_ETIMEDOUT;
}

const char *ft_cq_errstr(struct fid_cq *cq, const struct fi_cq_err_entry *err)
{
	static char buf[256];
	const char *str;

	str = fi_cq_strerror(cq, err->prov_errno, err->err_data, buf,
			     sizeof(buf));
	return str ? str : "(null)";
}

/* One completion for ctx; errors are logged and returned negative. */
int ft_cq_expect(struct fid_cq *cq, void *ctx, struct fi_cq_data_entry *comp,
		 int timeout_ms)
{
	struct fi_cq_data_entry lcomp;
	struct fi_cq_err_entry err;
	int ret;

	comp = comp ? comp : &lcomp;
	ret = ft_cq_wait(cq, comp, &err, timeout_ms);
	if (ret == -FI_EAVAIL) {
		ft_info("cq error: err %d (%s), prov_errno %d: %s", err.err,
			fi_strerror(err.err), err.prov_errno,
			ft_cq_errstr(cq, &err));
		return err.err ? -err.err : -FI_EOTHER;
	}
	if (ret) {
		ft_info("waiting for completion: %s", fi_strerror(-ret));
		return ret;
	}
	if (comp->op_context != ctx) {
		ft_info("completion for context %p, expected %p",
			comp->op_context, ctx);
		return -FI_EOTHER;
	}
	return 0;
}

bool ft_cq_empty(struct fid_cq *cq)
{
	struct fi_cq_data_entry comp;

	return fi_cq_read(cq, &comp, 1) == -FI_EAGAIN;
}

/* ---- control messages ------------------------------------------------- */

int ft_ctrl_post_recv(struct ft_conn *conn)
{
	ssize_t ret;

	ret = FT_POST(fi_recv(conn->ep, conn->ctrl_rx.ptr, FT_CTRL_SIZE,
			      conn->ctrl_rx.desc, 0, &conn->ctrl_rx_ctx),
		      conn->rxcq, ft_opts.timeout_ms);
	if (ret)
		ft_info("fi_recv(ctrl): %s", fi_strerror(-ret));
	return (int)ret;
}

int ft_ctrl_send(struct ft_conn *conn, const void *msg, size_t len)
{
	ssize_t ret;

	if (len > FT_CTRL_SIZE)
		return -FI_EINVAL;
	memcpy(conn->ctrl_tx.ptr, msg, len);
	ret = FT_POST(fi_send(conn->ep, conn->ctrl_tx.ptr, len,
			      conn->ctrl_tx.desc, 0, &conn->ctrl_tx_ctx),
		      conn->txcq, ft_opts.timeout_ms);
	if (ret) {
		ft_info("fi_send(ctrl): %s", fi_strerror(-ret));
		return (int)ret;
	}
	return ft_cq_expect(conn->txcq, &conn->ctrl_tx_ctx, NULL,
			    ft_opts.timeout_ms);
}

/* Wait for the posted control receive; the caller reposts it. */
ssize_t ft_ctrl_recv(struct ft_conn *conn, void *msg, size_t len)
{
	struct fi_cq_data_entry comp;
	int ret;

	ret = ft_cq_expect(conn->rxcq, &conn->ctrl_rx_ctx, &comp,
			   ft_opts.timeout_ms);
	if (ret)
		return ret;
	memcpy(msg, conn->ctrl_rx.ptr, comp.len < len ? comp.len : len);
	return (ssize_t)comp.len;
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

/* ---- out-of-band channel ---------------------------------------------- */

static int g_oob_listen_fd = -1;
static int g_oob_fd = -1;

static struct addrinfo *ft_oob_resolve(const char *node, const char *port,
				       bool passive)
{
	struct addrinfo hints = {
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0),
	};
	struct addrinfo *ai = NULL;
	char service[16];
	int ret;

	snprintf(service, sizeof(service), "%d",
		 atoi(port) + FT_OOB_PORT_OFFSET);
	ret = getaddrinfo(node, service, &hints, &ai);
	if (ret) {
		ft_info("oob: getaddrinfo(%s, %s): %s", node ? node : "*",
			service, gai_strerror(ret));
		return NULL;
	}
	return ai;
}

int ft_oob_listen(void)
{
	struct addrinfo *ai = ft_oob_resolve(ft_opts.src_addr,
					     ft_opts.src_port, true);
	int one = 1;

	if (!ai)
		return -FI_EINVAL;
	g_oob_listen_fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (g_oob_listen_fd < 0 ||
	    setsockopt(g_oob_listen_fd, SOL_SOCKET, SO_REUSEADDR, &one,
		       sizeof(one)) ||
	    bind(g_oob_listen_fd, ai->ai_addr, ai->ai_addrlen) ||
	    listen(g_oob_listen_fd, 4)) {
		ft_info("oob: listen: %s", strerror(errno));
		freeaddrinfo(ai);
		return -FI_EIO;
	}
	freeaddrinfo(ai);
	return 0;
}

static int ft_oob_poll(int fd, short events, uint64_t end)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	uint64_t now = ft_now_ms();
	int ret;

	if (now >= end)
		return -FI_ETIMEDOUT;
	ret = poll(&pfd, 1, (int)(end - now));
	if (ret == 0)
		return -FI_ETIMEDOUT;
	return ret < 0 ? -FI_EIO : 0;
}

int ft_oob_accept(void)
{
	int ret, one = 1;

	ret = ft_oob_poll(g_oob_listen_fd, POLLIN,
			  ft_now_ms() + ft_opts.timeout_ms);
	if (ret) {
		ft_info("oob: no client within %d ms", ft_opts.timeout_ms);
		return ret;
	}
	g_oob_fd = accept(g_oob_listen_fd, NULL, NULL);
	if (g_oob_fd < 0)
		return -FI_EIO;
	setsockopt(g_oob_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* The server may not be up yet: retry refused connections until the
 * timeout. */
int ft_oob_connect(void)
{
	struct addrinfo *ai = ft_oob_resolve(ft_opts.dst_addr,
					     ft_opts.dst_port, false);
	uint64_t end = ft_now_ms() + ft_opts.timeout_ms;
	int one = 1;

	if (!ai)
		return -FI_EINVAL;
	do {
		g_oob_fd = socket(ai->ai_family, SOCK_STREAM, 0);
		if (g_oob_fd >= 0 &&
		    !connect(g_oob_fd, ai->ai_addr, ai->ai_addrlen))
			break;
		if (g_oob_fd >= 0)
			close(g_oob_fd);
		g_oob_fd = -1;
		usleep(100 * 1000);
	} while (ft_now_ms() < end);
	freeaddrinfo(ai);
	if (g_oob_fd < 0) {
		ft_info("oob: cannot connect to the server: %s",
			strerror(errno));
		return -FI_ECONNREFUSED;
	}
	setsockopt(g_oob_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

int ft_oob_send(const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = send(g_oob_fd, p, len, MSG_NOSIGNAL);
		if (n <= 0)
			return -FI_EIO;
		p += n;
		len -= n;
	}
	return 0;
}

static int ft_oob_recv_ms(void *buf, size_t len, int timeout_ms)
{
	uint64_t end = ft_now_ms() + timeout_ms;
	char *p = buf;
	ssize_t n;
	int ret;

	while (len) {
		ret = ft_oob_poll(g_oob_fd, POLLIN, end);
		if (ret) {
			ft_info("oob: peer silent for %d ms", timeout_ms);
			return ret;
		}
		n = recv(g_oob_fd, p, len, 0);
		if (n <= 0) {
			ft_info("oob: peer closed the channel");
			return -FI_EIO;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* The peer may be busy checking a large buffer: allow it 3 timeouts. */
int ft_oob_recv(void *buf, size_t len)
{
	return ft_oob_recv_ms(buf, len, 3 * ft_opts.timeout_ms);
}

/* Both sides reach this point before either goes on. */
int ft_oob_sync_ms(int timeout_ms)
{
	char c = 's';
	int ret = ft_oob_send(&c, 1);

	return ret ? ret : ft_oob_recv_ms(&c, 1, timeout_ms);
}

int ft_oob_sync(void)
{
	return ft_oob_sync_ms(3 * ft_opts.timeout_ms);
}

void ft_oob_close(void)
{
	if (g_oob_fd >= 0)
		close(g_oob_fd);
	if (g_oob_listen_fd >= 0)
		close(g_oob_listen_fd);
	g_oob_fd = g_oob_listen_fd = -1;
}
