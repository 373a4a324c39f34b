// SPDX-License-Identifier: MIT
/* Traffic across nodes while the network misbehaves (contrib/vm/rivet-vm
 * -N and rivet-fault): a driver streams tagged messages (eager and
 * rendezvous), RMA writes read back, and fetch-adds to one or two peers,
 * every byte and every result checked, while a fault command runs.
 *
 *   -R peer -i K     serve as peer K: take messages and check them, expose
 *                    a region for RMA and atomics, report on request
 *   -R drive -k ok   to peer 1 only: everything completes exactly once
 *                    with the right data (packet loss, delay, reordering,
 *                    duplication, a short link loss: -F runs the fault)
 *   -R drive -k lost to peers 1 and 2: peer 1 goes away (-F: link down
 *                    for long, or its node crashes); every operation to it
 *                    completes, some with errors, within -b ms of the
 *                    fault; peer 2 is served all along; the QPs and
 *                    regions of peer 1 are released; -U then brings peer
 *                    1 back (link up, or a restarted peer: -r) and a new
 *                    exchange with it must succeed
 *
 * Names go through files in -D DIR (shared by the nodes: $VM_OUT). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>

#include "common/ft_rdm.h"

#define FLT_WINDOW 8		/* operations in flight per peer */
#define FLT_RX 16		/* receives a peer keeps posted */
#define FLT_MAX_LEN (1 << 20)
#define FLT_SLOT (64 << 10)	/* RMA slot per window entry */
#define FLT_TAG_DATA 0x10000000ULL
#define FLT_TAG_QUIT 0x20000000ULL
#define FLT_TAG_REPORT 0x30000000ULL
#define FLT_TAG_HELLO 0x40000000ULL
#define FLT_SEQ_MASK 0x0fffffffULL
#define FLT_MAX_SEQ (1 << 20)

enum flt_kind { FLT_SEND, FLT_WRITE, FLT_READ, FLT_ATOMIC };

/* What a peer publishes: its name, then its region. */
struct flt_pub {
	uint64_t addr;
	uint64_t key;
	size_t namelen;
	uint8_t name[FT_RDM_NAME_MAX];
};

/* A peer's answer to FLT_TAG_QUIT. */
struct flt_report {
	uint64_t received;
	uint64_t bad;
	uint64_t dup;
	uint64_t expected;
};

struct flt_op {
	struct fi_context2 ctx;	/* first: completions give it back */
	struct flt_peer *peer;
	enum flt_kind kind;
	int slot;
	uint32_t seq;
	size_t len;
	bool busy;
};

struct flt_peer {
	int index;
	fi_addr_t addr;
	struct flt_pub pub;
	struct flt_op ops[FLT_WINDOW];
	uint64_t posted, ok, errors, sends_ok, atomics_ok, bytes;
	uint32_t next_seq;
	bool stopped;		/* no more posting (an error was seen) */
	uint64_t first_err_ms, last_err_ms;
	int first_err;
	char first_errstr[96];
};

static struct {
	struct ft_fab fab;
	struct ft_rdm_ep ep;
	struct ft_buf tx;	/* FLT_WINDOW x FLT_MAX_LEN per peer */
	struct ft_buf res;	/* fetch results and read-backs */
	struct ft_buf region;	/* a peer's target */
	const char *dir;
	const char *role;
	const char *kind;
	const char *fault_cmd;
	const char *undo_cmd;
	const char *diag_cmd;
	bool restarted;
	int index;
	int secs;
	int bound_ms;
	bool virt_addr;
	uint8_t *fetched;	/* fetch-add results seen, per value */
	struct flt_peer peers[2];
	int npeers;
} g = { .dir = "/tmp/rivet-fault", .role = "drive", .kind = "ok",
	.index = 1, .secs = 10, .bound_ms = 60000 };

static const size_t g_lens[] = { 64, 4000, 8193, 65536, FLT_MAX_LEN };
#define FLT_NLENS (sizeof(g_lens) / sizeof(g_lens[0]))

static void flt_opt(int op, const char *arg)
{
	switch (op) {
	case 'R': g.role = arg; break;
	case 'k': g.kind = arg; break;
	case 'i': g.index = atoi(arg); break;
	case 'D': g.dir = arg; break;
	case 'F': g.fault_cmd = arg; break;
	case 'U': g.undo_cmd = arg; break;
	case 'Z': g.diag_cmd = arg; break;
	case 'r': g.restarted = true; break;
	case 'L': g.secs = atoi(arg); break;
	case 'b': g.bound_ms = atoi(arg); break;
	default: break;
	}
}

/* A failure to reach a peer: what the RDMA stack of each node holds and
 * counts (-Z), taken while this process still holds its connections. */
static void flt_diag(void)
{
	int ret;

	if (!g.diag_cmd)
		return;
	ft_rdm_progress();
	ret = system(g.diag_cmd);
	ft_info("-Z '%s' ended with status %d", g.diag_cmd, ret);
}

/* ---- setup ------------------------------------------------------------ */

static int flt_setup(void)
{
	struct fi_info *hints, *info = NULL;
	size_t txlen = (size_t)2 * FLT_WINDOW * FLT_MAX_LEN;
	int ret;

	if (mkdir(g.dir, 0755) && errno != EEXIST)
		ft_info("mkdir %s: %s", g.dir, strerror(errno));
	hints = ft_rdm_hints(FT_RDM_CAPS | FI_RMA | FI_ATOMIC,
			     FI_THREAD_UNSPEC);
	if (!hints)
		return -FI_ENOMEM;
	/* a peer binds -s ADDR -B PORT: restarted, it has the same name */
	ret = fi_getinfo(FT_FIVERSION, ft_opts.src_addr, ft_opts.src_port,
			 ft_opts.src_addr ? FI_SOURCE : 0, hints, &info);
	fi_freeinfo(hints);
	if (ret) {
		ft_info("fi_getinfo: %s", fi_strerror(-ret));
		return ret;
	}
	g.virt_addr = info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
	ret = ft_fab_open(&g.fab, info);
	ret = ret ? ret : ft_rdm_ep_open(&g.fab, NULL, !ft_opts.src_port, 0,
					 &g.ep);
	ret = ret ? ret : ft_buf_alloc(g.fab.domain, txlen,
				       FI_SEND | FI_WRITE | FI_RECV, &g.tx);
	ret = ret ? ret : ft_buf_alloc(g.fab.domain,
				       (size_t)2 * FLT_WINDOW * FLT_SLOT,
				       FI_READ | FI_RECV | FI_SEND, &g.res);
	ret = ret ? ret : ft_buf_alloc(g.fab.domain,
				       (size_t)FLT_WINDOW * FLT_SLOT + 64,
				       FI_REMOTE_READ | FI_REMOTE_WRITE,
				       &g.region);
	return ret;
}

static void flt_close(void)
{
	ft_rdm_ep_close(&g.ep);
	ft_buf_free(&g.tx);
	ft_buf_free(&g.res);
	ft_buf_free(&g.region);
	ft_fab_close(&g.fab);
	free(g.fetched);
}

static int flt_publish(void)
{
	struct flt_pub pub = {
		.addr = g.virt_addr ? (uint64_t)(uintptr_t)g.region.ptr : 0,
		.key = fi_mr_key(g.region.mr),
		.namelen = g.ep.namelen,
	};
	char key[32];

	memcpy(pub.name, g.ep.name, g.ep.namelen);
	snprintf(key, sizeof(key), "peer%d", g.index);
	return ft_rdm_publish(g.dir, key, &pub, sizeof(pub));
}

static int flt_lookup(struct flt_peer *p, int timeout_ms)
{
	char key[32];
	ssize_t len;

	snprintf(key, sizeof(key), "peer%d", p->index);
	len = ft_rdm_lookup(g.dir, key, &p->pub, sizeof(p->pub), timeout_ms);
	if (len != (ssize_t)sizeof(p->pub))
		return len < 0 ? (int)len : -FI_EINVAL;
	return ft_rdm_av_insert(g.ep.av, p->pub.name, &p->addr);
}

#define RIVET_FT_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- the peer ----------------------------------------------------------- */

/* Which 1 KiB blocks of a message with wrong data differ, as ranges. */
static void flt_wrong_blocks(const uint8_t *buf, size_t len, uint32_t seq)
{
	uint8_t *want = malloc(len);
	size_t b, first = SIZE_MAX, n, blk = 1024;
	char line[512] = "";
	size_t used = 0;

	if (!want)
		return;
	ft_fill(want, len, seq);
	for (b = 0; b * blk <= len && used < sizeof(line) - 40; b++) {
		n = len - b * blk < blk ? len - b * blk : blk;
		bool bad = n && memcmp(buf + b * blk, want + b * blk, n);

		if (bad && first == SIZE_MAX)
			first = b;
		if (!bad && first != SIZE_MAX) {
			used += (size_t)snprintf(line + used, sizeof(line) - used,
						 " [%zu, %zu)", first * blk,
						 b * blk);
			first = SIZE_MAX;
		}
	}
	if (first != SIZE_MAX)
		snprintf(line + used, sizeof(line) - used, " [%zu, %zu)",
			 first * blk, len);
	ft_info("message %u: wrong byte ranges:%s", seq, line);
	free(want);
}

/* Whose data sits at the first wrong word of a message, if any seq's. */
static void flt_wrong_whose(const uint8_t *buf, size_t len, uint32_t seq)
{
	ssize_t off = ft_verify(buf, len, seq);
	uint64_t w, idx;
	uint32_t s;

	if (off < 0 || (size_t)(off | 7) >= len)
		return;
	idx = (uint64_t)off >> 3;
	memcpy(&w, buf + idx * 8, 8);
	for (s = 0; s < 65536; s++)
		if (s != seq && ft_pattern_word(s, idx) == w) {
			ft_info("message %u: at byte %" PRIu64 " the data of "
				"message %u", seq, idx * 8, s);
			return;
		}
	ft_info("message %u: at byte %" PRIu64 " no message's data", seq,
		idx * 8);
}

static void flt_peer(void)
{
	static struct fi_context2 rctx[FLT_RX];
	struct flt_report rep = { 0 };
	uint8_t *seen = calloc(FLT_MAX_SEQ, 1);
	int slot_seq[FLT_RX];
	uint64_t end = ft_now_ms() + (uint64_t)g.secs * 1000;
	struct fi_context2 sctx;
	struct ft_comp comp;
	int i, ret;

	if (!seen || flt_publish()) {
		ft_fail("fault_peer_setup", "cannot publish");
		free(seen);
		return;
	}
	ft_info("peer %d serving for %d s", g.index, g.secs);
	for (i = 0; i < FLT_RX; i++) {
		slot_seq[i] = -1;
		ret = (int)FT_RDM_POST(fi_trecv(g.ep.ep, (uint8_t *)g.tx.ptr +
						(size_t)i * FLT_MAX_LEN,
						FLT_MAX_LEN, g.tx.desc,
						FI_ADDR_UNSPEC, 0,
						~0ULL, &rctx[i]));
		if (ret) {
			ft_fail("fault_peer_setup", "trecv: %s",
				fi_strerror(-ret));
			free(seen);
			return;
		}
	}
	while (ft_now_ms() < end) {
		ret = ft_rdm_wait(g.ep.cq, NULL, &comp, 1000);
		if (ret == -FI_ETIMEDOUT)
			continue;
		if (ret)
			break;
		if (comp.err) {
			ft_info("peer: error completion: %s", ft_comp_str(&comp));
			continue;
		}
		i = (int)((struct fi_context2 *)comp.ctx - rctx);
		if (i < 0 || i >= FLT_RX)
			continue;	/* a send's */
		if ((comp.tag & ~FLT_SEQ_MASK) == FLT_TAG_DATA) {
			uint32_t seq = (uint32_t)(comp.tag & FLT_SEQ_MASK);

			ssize_t off = -1;

			rep.received++;
			if (seq >= FLT_MAX_SEQ || seen[seq]++) {
				rep.dup++;
			} else if (comp.len != g_lens[seq % FLT_NLENS] ||
				   (off = ft_verify(comp.buf, comp.len,
						    seq)) >= 0) {
				rep.bad++;
				ft_info("message %u: %zu bytes (%zu sent), "
					"first wrong byte at %zd", seq,
					comp.len, g_lens[seq % FLT_NLENS], off);
				flt_wrong_blocks(comp.buf, comp.len, seq);
				flt_wrong_whose(comp.buf, comp.len, seq);
				ft_info("message %u: receive slot %d held "
					"message %d before", seq, i,
					slot_seq[i]);
			}
			slot_seq[i] = (int)seq;
		} else if ((comp.tag & ~FLT_SEQ_MASK) == FLT_TAG_QUIT) {
			uint8_t name[FT_RDM_NAME_MAX];
			fi_addr_t driver;

			memcpy(&rep.expected, comp.buf, sizeof(rep.expected));
			/* the driver's name: it published it at its start */
			ret = ft_rdm_lookup(g.dir, "drive", name, sizeof(name),
					    ft_opts.timeout_ms) <= 0 ? -FI_ENOENT
			      : ft_rdm_av_insert(g.ep.av, name, &driver);
			if (ret) {
				ft_fail("fault_peer_report", "no driver: %s",
					fi_strerror(-ret));
				free(seen);
				return;
			}
			memcpy(g.res.ptr, &rep, sizeof(rep));
			ret = (int)FT_RDM_POST(fi_tsend(g.ep.ep, g.res.ptr,
							sizeof(rep),
							g.res.desc, driver,
							FLT_TAG_REPORT, &sctx));
			if (!ret)
				ret = ft_rdm_wait(g.ep.cq, &sctx, &comp,
						  ft_opts.timeout_ms);
			ft_info("peer %d: %lu received, %lu bad, %lu "
				"duplicated, %lu expected", g.index,
				(unsigned long)rep.received,
				(unsigned long)rep.bad,
				(unsigned long)rep.dup,
				(unsigned long)rep.expected);
			ft_check(!ret && !comp.err, "fault_peer_report",
				 "the report did not go");
			free(seen);
			return;
		}
		/* HELLO and data alike: post the receive again */
		ret = (int)FT_RDM_POST(fi_trecv(g.ep.ep, (uint8_t *)g.tx.ptr +
						(size_t)i * FLT_MAX_LEN,
						FLT_MAX_LEN, g.tx.desc,
						FI_ADDR_UNSPEC, 0, ~0ULL,
						&rctx[i]));
		if (ret)
			break;
	}
	/* why: its time was up (ret 0), the CQ failed, or a receive could
	 * not be posted again */
	ft_info("peer %d: stopped (%lu received): %s", g.index,
		(unsigned long)rep.received,
		ft_now_ms() >= end ? "time is up" : fi_strerror(ret < 0 ? -ret :
								 ret));
	free(seen);
}

/* ---- the driver ----------------------------------------------------------- */

static uint8_t *flt_txbuf(struct flt_peer *p, int slot)
{
	return (uint8_t *)g.tx.ptr +
	       ((size_t)(p - g.peers) * FLT_WINDOW + (size_t)slot) *
	       FLT_MAX_LEN;
}

static uint8_t *flt_resbuf(struct flt_peer *p, int slot)
{
	return (uint8_t *)g.res.ptr +
	       ((size_t)(p - g.peers) * FLT_WINDOW + (size_t)slot) * FLT_SLOT;
}

/* Posts the next operation of slot: sends, a write then its read-back,
 * fetch-adds, in turn. */
static int flt_post(struct flt_peer *p, struct flt_op *op, enum flt_kind kind)
{
	uint64_t raddr = p->pub.addr + (uint64_t)op->slot * FLT_SLOT;
	uint64_t cnt_addr = p->pub.addr + (uint64_t)FLT_WINDOW * FLT_SLOT;
	static const uint64_t one = 1;
	uint8_t *buf = flt_txbuf(p, op->slot);
	ssize_t ret;

	op->kind = kind;
	switch (kind) {
	case FLT_SEND:
		op->seq = p->next_seq++;
		op->len = g_lens[op->seq % FLT_NLENS];
		ft_fill(buf, op->len, op->seq);
		ret = fi_tsend(g.ep.ep, buf, op->len, g.tx.desc, p->addr,
			       FLT_TAG_DATA | op->seq, &op->ctx);
		break;
	case FLT_WRITE:
		op->seq = p->next_seq++;
		op->len = 1 + (op->seq * 7919u) % FLT_SLOT;
		ft_fill(buf, op->len, op->seq);
		ret = fi_write(g.ep.ep, buf, op->len, g.tx.desc, p->addr,
			       raddr, p->pub.key, &op->ctx);
		break;
	case FLT_READ:
		memset(flt_resbuf(p, op->slot), 0, op->len);
		ret = fi_read(g.ep.ep, flt_resbuf(p, op->slot), op->len,
			      g.res.desc, p->addr, raddr, p->pub.key,
			      &op->ctx);
		break;
	default:
		op->len = sizeof(uint64_t);
		ret = fi_fetch_atomic(g.ep.ep, &one, 1, NULL,
				      flt_resbuf(p, op->slot), g.res.desc,
				      p->addr, cnt_addr, p->pub.key,
				      FI_UINT64, FI_SUM, &op->ctx);
		break;
	}
	if (ret == -FI_EAGAIN)
		return 1;	/* try again later */
	if (ret) {
		if (!p->first_err) {
			p->first_err = (int)-ret;
			snprintf(p->first_errstr, sizeof(p->first_errstr),
				 "post: %s", fi_strerror((int)-ret));
			p->first_err_ms = ft_now_ms();
		}
		p->errors++;
		p->stopped = true;
		return (int)ret;
	}
	op->busy = true;
	p->posted++;
	return 0;
}

static enum flt_kind flt_next_kind(struct flt_peer *p)
{
	static const enum flt_kind order[] = { FLT_SEND, FLT_SEND, FLT_WRITE,
					       FLT_ATOMIC, FLT_SEND };

	return order[p->posted % (sizeof(order) / sizeof(order[0]))];
}

static void flt_fill_window(struct flt_peer *p, bool posting)
{
	int s;

	for (s = 0; s < FLT_WINDOW && posting && !p->stopped; s++) {
		p->ops[s].slot = s;
		if (!p->ops[s].busy &&
		    flt_post(p, &p->ops[s], flt_next_kind(p)) > 0)
			break;
	}
}

/* A completion of one of our operations: check it, chain the read-back. */
static void flt_complete(struct flt_op *op, const struct ft_comp *comp,
			 bool posting, bool *bad)
{
	struct flt_peer *p = op->peer;
	uint64_t v;

	op->busy = false;
	if (comp->err) {
		p->errors++;
		p->last_err_ms = ft_now_ms();
		if (!p->first_err) {
			p->first_err = comp->err;
			p->first_err_ms = p->last_err_ms;
			snprintf(p->first_errstr, sizeof(p->first_errstr),
				 "%s", ft_comp_str(comp));
		}
		p->stopped = true;
		return;
	}
	p->ok++;
	switch (op->kind) {
	case FLT_SEND:
		p->sends_ok++;
		p->bytes += op->len;
		break;
	case FLT_WRITE:
		p->bytes += op->len;
		if (posting && !p->stopped && flt_post(p, op, FLT_READ) > 0)
			op->kind = FLT_WRITE;	/* lost the read-back slot */
		break;
	case FLT_READ:
		p->bytes += op->len;
		if (ft_verify(flt_resbuf(p, op->slot), op->len, op->seq) >= 0) {
			ft_info("read-back of write %u (%zu bytes) from peer "
				"%d differs", op->seq, op->len, p->index);
			*bad = true;
		}
		break;
	default:
		p->atomics_ok++;
		memcpy(&v, flt_resbuf(p, op->slot), sizeof(v));
		if (v >= FLT_MAX_SEQ ||
		    g.fetched[(size_t)(p - g.peers) * FLT_MAX_SEQ + v]++) {
			ft_info("fetch-add on peer %d returned %lu twice or "
				"out of range", p->index, (unsigned long)v);
			*bad = true;
		}
		break;
	}
}

/* Runs cmd with sh -c in the background; its pid. */
static pid_t flt_spawn(const char *cmd)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	extern char **environ;
	pid_t pid;

	ft_info("running: %s", cmd);
	fflush(stdout);
	if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ))
		return -1;
	return pid;
}

/* Whether the spawned command is still running; its status once done. */
static bool flt_running(pid_t *pid, int *status)
{
	int st;

	if (*pid <= 0)
		return false;
	if (waitpid(*pid, &st, WNOHANG) == 0)
		return true;
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	ft_info("command done, status %d", *status);
	*pid = 0;
	return false;
}

static int flt_busy(const struct flt_peer *p)
{
	int s, n = 0;

	for (s = 0; s < FLT_WINDOW; s++)
		n += p->ops[s].busy;
	return n;
}

/* rdma resources (qp, mr) of this process, by `rdma resource show` */
static int flt_resources(const char *what)
{
	char cmd[128], line[512], pat[32];
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma resource show %s 2>/dev/null", what);
	snprintf(pat, sizeof(pat), " pid %d ", (int)getpid());
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, pat) != NULL;
	pclose(f);
	return n;
}

/* One exchange with peer p, checked: used to start a connection and to
 * show that one works again. */
static int flt_hello(struct flt_peer *p, int timeout_ms)
{
	struct fi_context2 ctx;
	struct ft_comp comp;
	int ret;

	ret = (int)FT_RDM_POST(fi_tsend(g.ep.ep, g.tx.ptr, 8, g.tx.desc,
					p->addr, FLT_TAG_HELLO, &ctx));
	if (ret)
		return ret;
	ret = ft_rdm_wait(g.ep.cq, &ctx, &comp, timeout_ms);
	return ret ? ret : -comp.err;
}

/* Tells peer p how many messages it should have and checks its report:
 * every message sent successfully arrived once with the right bytes, and
 * (strict) no other did. After a failure a send can have arrived even
 * though its sender got an error: then not strict. */
static void flt_quit(struct flt_peer *p, const char *name, bool strict)
{
	struct fi_context2 rctx, sctx;
	struct flt_report rep;
	struct ft_comp comp;
	uint8_t *rbuf = flt_resbuf(p, 0), *sbuf = flt_txbuf(p, 0);
	int ret;

	memcpy(sbuf, &p->sends_ok, sizeof(p->sends_ok));
	ret = (int)FT_RDM_POST(fi_trecv(g.ep.ep, rbuf, sizeof(rep), g.res.desc,
					p->addr, FLT_TAG_REPORT, 0, &rctx));
	ret = ret ? ret : (int)FT_RDM_POST(fi_tsend(g.ep.ep, sbuf,
						    sizeof(p->sends_ok),
						    g.tx.desc, p->addr,
						    FLT_TAG_QUIT, &sctx));
	ret = ret ? ret : ft_rdm_wait(g.ep.cq, &sctx, &comp,
				      ft_opts.timeout_ms);
	ret = ret ? ret : -comp.err;
	ret = ret ? ret : ft_rdm_wait(g.ep.cq, &rctx, &comp,
				      ft_opts.timeout_ms);
	ret = ret ? ret : -comp.err;
	if (ret) {
		ft_fail(name, "no report from peer %d: %s", p->index,
			fi_strerror(-ret));
		return;
	}
	memcpy(&rep, rbuf, sizeof(rep));
	ft_check((strict ? rep.received == p->sends_ok :
		  rep.received >= p->sends_ok) && !rep.bad && !rep.dup, name,
		 "peer %d received %lu messages (%lu sent successfully), %lu "
		 "with wrong data, %lu twice", p->index,
		 (unsigned long)rep.received, (unsigned long)p->sends_ok,
		 (unsigned long)rep.bad, (unsigned long)rep.dup);
}

/* The value of peer p's fetch-add counter (a fetch-add of 0). */
static int flt_counter(struct flt_peer *p, uint64_t *v)
{
	static const uint64_t zero;
	struct fi_context2 ctx;
	struct ft_comp comp;
	int ret;

	ret = (int)FT_RDM_POST(fi_fetch_atomic(g.ep.ep, &zero, 1, NULL,
					       g.res.ptr, g.res.desc, p->addr,
					       p->pub.addr + (uint64_t)
					       FLT_WINDOW * FLT_SLOT,
					       p->pub.key, FI_UINT64, FI_SUM,
					       &ctx));
	ret = ret ? ret : ft_rdm_wait(g.ep.cq, &ctx, &comp,
				      ft_opts.timeout_ms);
	ret = ret ? ret : -comp.err;
	memcpy(v, g.res.ptr, sizeof(*v));
	return ret;
}

/* The stream: windows to every peer for g.secs seconds; the fault command
 * starts after a second. Returns false on a hang. */
static bool flt_stream(pid_t *fault, int *fault_status, uint64_t *fault_ms,
		       bool *bad)
{
	uint64_t start = ft_now_ms(), end = start + (uint64_t)g.secs * 1000;
	uint64_t hard = end + (uint64_t)g.bound_ms + 30000;
	bool fault_done = !g.fault_cmd;
	struct ft_comp comp;
	bool posting, fault_started = !g.fault_cmd;
	int i, ret, busy;

	for (;;) {
		uint64_t now = ft_now_ms();

		if (!fault_started && now >= start + 1000) {
			*fault = flt_spawn(g.fault_cmd);
			*fault_ms = ft_now_ms();
			fault_started = true;
		}
		/* the stream goes on for 3 s after the fault command ended
		 * (crash and link commands can take seconds under TCG) */
		if (fault_started && !fault_done &&
		    !flt_running(fault, fault_status)) {
			fault_done = true;
			end = RIVET_FT_MAX(end, now + 3000);
			hard = end + (uint64_t)g.bound_ms + 30000;
		}
		posting = now < end;
		busy = 0;
		for (i = 0; i < g.npeers; i++) {
			flt_fill_window(&g.peers[i], posting);
			busy += flt_busy(&g.peers[i]);
		}
		if (!posting && !busy && *fault <= 0)
			return true;
		if (now > hard) {
			for (i = 0; i < g.npeers; i++)
				ft_info("peer %d: %d operations never "
					"completed", g.peers[i].index,
					flt_busy(&g.peers[i]));
			return false;
		}
		ret = ft_rdm_wait(g.ep.cq, NULL, &comp, 1);
		if (ret == -FI_ETIMEDOUT)
			continue;
		if (ret) {
			ft_info("cq: %s", fi_strerror(-ret));
			return false;
		}
		if (!comp.ctx) {
			ft_info("a completion without a context: %s",
				ft_comp_str(&comp));
			*bad = true;
			continue;
		}
		flt_complete((struct flt_op *)comp.ctx, &comp, posting, bad);
	}
}

static void flt_report_peer(const struct flt_peer *p, uint64_t ms)
{
	ft_info("peer %d: %lu operations, %lu ok (%lu sends, %lu fetch-adds), "
		"%lu errors (first: %s), %.2f MB/s", p->index,
		(unsigned long)p->posted, (unsigned long)p->ok,
		(unsigned long)p->sends_ok, (unsigned long)p->atomics_ok,
		(unsigned long)p->errors,
		p->first_err ? p->first_errstr : "none",
		ms ? (double)p->bytes / 1e3 / (double)ms : 0.0);
}

static void flt_drive(void)
{
	bool lost = !strcmp(g.kind, "lost"), bad = false, done;
	uint64_t start, fault_ms = 0, counter, ms;
	int i, ret, fault_status = -1, qp0 = -1, mr0 = -1, qp1, mr1;
	pid_t fault = 0, undo;
	struct ft_comp comp;

	g.fetched = calloc(2 * FLT_MAX_SEQ, 1);	/* per peer */
	g.npeers = lost ? 2 : 1;
	if (ft_rdm_publish(g.dir, "drive", g.ep.name, g.ep.namelen)) {
		ft_fail("fault_setup", "cannot publish the driver's name");
		return;
	}
	for (i = 0; i < g.npeers; i++) {
		g.peers[i].index = i + 1;
		for (int s = 0; s < FLT_WINDOW; s++)
			g.peers[i].ops[s].peer = &g.peers[i];
		ret = g.fetched ? flt_lookup(&g.peers[i], 3 * ft_opts.timeout_ms)
				: -FI_ENOMEM;
		if (ret) {
			ft_fail("fault_setup", "peer %d: %s", i + 1,
				fi_strerror(-ret));
			return;
		}
	}
	if (lost) {
		/* what this process holds with only peer 2 connected */
		ret = flt_hello(&g.peers[1], ft_opts.timeout_ms);
		qp0 = flt_resources("qp");
		mr0 = flt_resources("mr");
		ft_info("with peer 2 connected: %d QPs, %d MRs", qp0, mr0);
		if (ret) {
			ft_fail("fault_setup", "peer 2: %s", fi_strerror(-ret));
			flt_diag();
			return;
		}
	}
	start = ft_now_ms();
	done = flt_stream(&fault, &fault_status, &fault_ms, &bad);
	ms = ft_now_ms() - start;
	for (i = 0; i < g.npeers; i++)
		flt_report_peer(&g.peers[i], ms);
	ft_check(done, "fault_all_completed", "operations still pending %d s "
		 "after the stream ended", (g.bound_ms + 30000) / 1000);
	ft_check(!bad, "fault_data", "wrong data or results (see above)");
	if (g.fault_cmd)
		ft_check(fault_status == 0, "fault_command", "'%s' ended with "
			 "status %d", g.fault_cmd, fault_status);
	printf("fault_stream_MBps %.2f\n",
	       ms ? (double)g.peers[0].bytes / 1e3 / (double)ms : 0.0);
	if (!done)
		return;
	if (!lost) {
		ft_check(!g.peers[0].errors, "fault_no_errors",
			 "%lu errors, first: %s",
			 (unsigned long)g.peers[0].errors,
			 g.peers[0].first_errstr);
		/* the counter first: the peer leaves once it reported */
		ret = flt_counter(&g.peers[0], &counter);
		ft_check(!ret && counter == g.peers[0].atomics_ok,
			 "fault_atomic_total", "counter %lu after %lu "
			 "fetch-adds (%s)", (unsigned long)counter,
			 (unsigned long)g.peers[0].atomics_ok,
			 fi_strerror(-ret));
		flt_quit(&g.peers[0], "fault_exactly_once", true);
		return;
	}

	/* lost: peer 1 failed within the bound, peer 2 never did */
	ft_check(g.peers[0].errors > 0, "fault_lost_errors",
		 "no operation to peer 1 failed");
	if (g.peers[0].errors)
		printf("fault_error_after_ms %lu\n", (unsigned long)
		       (g.peers[0].last_err_ms - fault_ms));
	ft_check(g.peers[0].errors && g.peers[0].last_err_ms - fault_ms <=
		 (uint64_t)g.bound_ms, "fault_lost_bound", "the last error "
		 "came %lu ms after the fault (bound %d ms)", (unsigned long)
		 (g.peers[0].last_err_ms - fault_ms), g.bound_ms);
	ft_check(!g.peers[1].errors && g.peers[1].sends_ok > 0,
		 "fault_other_peer_served", "peer 2: %lu errors (%s), %lu "
		 "sends", (unsigned long)g.peers[1].errors,
		 g.peers[1].first_errstr, (unsigned long)g.peers[1].sends_ok);
	/* peer 1's QPs and regions go away (a failed connection's QP some
	 * 5 s after it drained: RIVET_CONN_QP_LINGER_MS) */
	for (i = 0; i < 150; i++) {
		qp1 = flt_resources("qp");
		mr1 = flt_resources("mr");
		if (qp1 <= qp0 && mr1 <= mr0)
			break;
		ft_rdm_progress();
		usleep(100000);
	}
	ft_check(qp1 <= qp0 && mr1 <= mr0, "fault_lost_released", "%d QPs "
		 "and %d MRs now, %d and %d with peer 2 alone", qp1, mr1, qp0,
		 mr0);
	flt_quit(&g.peers[1], "fault_other_peer_exactly_once", true);
	if (!g.undo_cmd)
		return;
	/* bring peer 1 back, then talk to it again */
	undo = flt_spawn(g.undo_cmd);
	while (flt_running(&undo, &fault_status)) {
		ft_rdm_progress();
		usleep(10000);
	}
	if (!ft_check(fault_status == 0, "fault_undo", "'%s' ended with "
		      "status %d", g.undo_cmd, fault_status))
		return;
	if (g.restarted) {
		ret = fi_av_remove(g.ep.av, &g.peers[0].addr, 1, 0);
		if (!ft_check(!ret, "fault_av_remove", "%s", fi_strerror(-ret)))
			return;
		ret = flt_lookup(&g.peers[0], 3 * ft_opts.timeout_ms);
		if (!ft_check(!ret, "fault_av_insert", "%s", fi_strerror(-ret)))
			return;
	}
	ret = flt_hello(&g.peers[0], ft_opts.timeout_ms);
	if (!ft_check(!ret, "fault_peer_back", "the first exchange after "
		      "'%s': %s", g.undo_cmd, fi_strerror(-ret))) {
		flt_diag();
		/* late, or never? */
		start = ft_now_ms();
		ret = ft_rdm_wait(g.ep.cq, NULL, &comp, 60000);
		ft_info("%s %lu ms later: %s", ret ? "still nothing" :
			"a completion", (unsigned long)(ft_now_ms() - start),
			ret ? fi_strerror(-ret) : ft_comp_str(&comp));
		flt_diag();
		return;
	}
	if (g.restarted) {	/* a new process: a new count */
		g.peers[0].sends_ok = 0;
		g.peers[0].next_seq = 0;
		memset(g.fetched, 0, FLT_MAX_SEQ);
	}
	g.peers[0].stopped = false;
	g.peers[0].errors = 0;
	g.peers[0].first_err = 0;
	g.npeers = 1;
	g.secs = 2;
	g.fault_cmd = NULL;
	fault = 0;
	done = flt_stream(&fault, &fault_status, &fault_ms, &bad);
	ft_check(done && !bad && !g.peers[0].errors, "fault_stream_after",
		 "%lu errors (first: %s)", (unsigned long)g.peers[0].errors,
		 g.peers[0].first_errstr);
	flt_quit(&g.peers[0], g.restarted ? "fault_restarted_exactly_once" :
		 "fault_back_once", g.restarted);
}

int main(int argc, char **argv)
{
	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.timeout_ms = FT_RDM_DEADLINE_MS;
	ft_set_extra_opts("R:k:i:D:F:U:Z:rL:b:",
			  " -R ROLE    drive (default) or peer\n"
			  " -k KIND    ok (default): nothing may fail; lost: "
			  "peer 1 goes away\n"
			  " -i K       the peer's number (1 or 2)\n"
			  " -D DIR     folder for the names (default "
			  "/tmp/rivet-fault)\n"
			  " -F CMD     the fault, run a second into the "
			  "stream (sh -c)\n"
			  " -U CMD     lost: what brings peer 1 back\n"
			  " -Z CMD     lost: run when a peer cannot be "
			  "reached (sh -c)\n"
			  " -r         lost: peer 1 comes back as a new "
			  "process (fi_av_remove, fi_av_insert)\n"
			  " -L SECS    how long to stream / to serve (default "
			  "10)\n"
			  " -b MS      lost: bound on the errors after the "
			  "fault (default 60000)\n", flt_opt);
	ft_parse_opts(argc, argv, "RDM traffic under network faults.", false);
	if (flt_setup())
		ft_fail("fault_setup", "fabric, endpoint or buffers");
	else if (!strcmp(g.role, "peer"))
		flt_peer();
	else
		flt_drive();
	flt_close();
	return ft_summary();
}
