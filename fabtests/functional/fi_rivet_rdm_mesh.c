// SPDX-License-Identifier: MIT
/* N processes, one RDM endpoint each, names swapped through files in a
 * shared folder: simultaneous first sends between every pair, then
 * all-to-all tagged exchanges of small and large messages. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/ft_rdm.h"

#define MESH_MAX 64
#define MESH_SLOT ((1 << 20) + 4096)

/* Tag: case, sender, round, size index. */
#define MESH_TAG(c, src, r, s) (((uint64_t)(c) << 48) | \
				((uint64_t)(src) << 32) | ((r) << 8) | (s))

struct mesh_state {
	struct ft_fab fab;
	struct ft_rdm_ep ep;
	fi_addr_t addr[MESH_MAX];
	struct ft_buf tx;
	struct ft_buf rx;
	struct fi_context2 txctx[MESH_MAX];
	struct fi_context2 rxctx[MESH_MAX];
	const char *dir;
	int n;
	int rank;
};

static struct mesh_state g_mesh = { .n = 8, .rank = -1,
				    .dir = "/tmp/rivet-mesh" };

static void mesh_opt(int op, const char *arg)
{
	switch (op) {
	case 'n': g_mesh.n = atoi(arg); break;
	case 'i': g_mesh.rank = atoi(arg); break;
	case 'D': g_mesh.dir = arg; break;
	}
}

static uint32_t mesh_seed(int c, int src, int dst, int r, int s)
{
	return c * 10000000 + src * 100000 + dst * 1000 + r * 10 + s;
}

static uint8_t *mesh_slot(struct ft_buf *buf, int peer)
{
	return (uint8_t *)buf->ptr + (size_t)peer * MESH_SLOT;
}

/* ---- one exchange ----------------------------------------------------- */

static int mesh_post_recvs(int c, int r, int s, size_t len)
{
	ssize_t ret;
	int j;

	for (j = 0; j < g_mesh.n; j++) {
		if (j == g_mesh.rank)
			continue;
		ret = FT_RDM_POST(fi_trecv(g_mesh.ep.ep,
					   mesh_slot(&g_mesh.rx, j), len,
					   g_mesh.rx.desc, FI_ADDR_UNSPEC,
					   MESH_TAG(c, j, r, s), 0,
					   &g_mesh.rxctx[j]));
		if (ret)
			return (int)ret;
	}
	return 0;
}

static int mesh_post_sends(int c, int r, int s, size_t len)
{
	ssize_t ret;
	uint8_t *p;
	int j, k;

	/* start with the next rank, so that not everybody hits rank 0 */
	for (k = 1; k < g_mesh.n; k++) {
		j = (g_mesh.rank + k) % g_mesh.n;
		p = mesh_slot(&g_mesh.tx, j);
		ft_fill(p, len, mesh_seed(c, g_mesh.rank, j, r, s));
		ret = FT_RDM_POST(fi_tsend(g_mesh.ep.ep, p, len,
					   g_mesh.tx.desc, g_mesh.addr[j],
					   MESH_TAG(c, g_mesh.rank, r, s),
					   &g_mesh.txctx[j]));
		if (ret)
			return (int)ret;
	}
	return 0;
}

static int mesh_check_recv(const char *name, int c, int r, int s,
			   size_t len, int j)
{
	struct ft_comp comp;
	ssize_t bad;
	int ret;

	ret = ft_rdm_wait(g_mesh.ep.cq, &g_mesh.rxctx[j], &comp,
			  ft_rdm_timeout(len));
	if (ret || comp.err) {
		ft_fail(name, "round %d size %zu: receive from rank %d: %s", r,
			len, j, ret ? fi_strerror(-ret) : ft_comp_str(&comp));
		return -1;
	}
	bad = ft_verify(mesh_slot(&g_mesh.rx, j), len,
			mesh_seed(c, j, g_mesh.rank, r, s));
	if (comp.len != len || bad >= 0 || comp.src != g_mesh.addr[j]) {
		ft_fail(name, "round %d, from rank %d: len %zu (want %zu), bad "
			"byte %zd, FI_SOURCE %llu (want %llu)", r, j, comp.len,
			len, bad, (unsigned long long)comp.src,
			(unsigned long long)g_mesh.addr[j]);
		return -1;
	}
	return 0;
}

static int mesh_wait_all(const char *name, int c, int r, int s, size_t len)
{
	struct ft_comp comp;
	int j, ret;

	for (j = 0; j < g_mesh.n; j++)
		if (j != g_mesh.rank && mesh_check_recv(name, c, r, s, len, j))
			return -1;
	for (j = 0; j < g_mesh.n; j++) {
		if (j == g_mesh.rank)
			continue;
		ret = ft_rdm_wait(g_mesh.ep.cq, &g_mesh.txctx[j], &comp,
				  ft_rdm_timeout(len));
		if (ret || comp.err) {
			ft_fail(name, "round %d: send to rank %d: %s", r, j,
				ret ? fi_strerror(-ret) : ft_comp_str(&comp));
			return -1;
		}
	}
	return 0;
}

/* ---- cases ------------------------------------------------------------ */

static int mesh_barrier(const char *tag)
{
	int ret = ft_rdm_barrier(g_mesh.dir, tag, g_mesh.rank, g_mesh.n,
				 3 * ft_opts.timeout_ms);

	if (ret)
		ft_fail("mesh_barrier", "%s: %s", tag, fi_strerror(-ret));
	return ret;
}

/* Receives posted, a barrier, then every rank sends to every other rank
 * at once: the first operation on each pair, from both ends. */
static void mesh_simultaneous(void)
{
	const char *name = "mesh_simultaneous_connect";
	int ret;

	ret = mesh_post_recvs(1, 0, 0, 64);
	if (ret) {
		ft_fail(name, "posting receives: %s", fi_strerror(-ret));
		return;
	}
	if (mesh_barrier("connect"))
		return;
	ret = mesh_post_sends(1, 0, 0, 64);
	if (ret) {
		ft_fail(name, "posting sends: %s", fi_strerror(-ret));
		return;
	}
	if (!mesh_wait_all(name, 1, 0, 0, 64))
		ft_ok(name);
}

static void mesh_alltoall(const char *name, int c, const size_t *sizes,
			  int nsizes, int rounds)
{
	int r, s, ret;

	for (r = 0; r < rounds; r++) {
		for (s = 0; s < nsizes; s++) {
			ret = mesh_post_recvs(c, r, s, sizes[s]);
			ret = ret ? ret : mesh_post_sends(c, r, s, sizes[s]);
			if (ret) {
				ft_fail(name, "posting: %s", fi_strerror(-ret));
				return;
			}
			if (mesh_wait_all(name, c, r, s, sizes[s]))
				return;
		}
	}
	ft_ok(name);
}

/* ---- setup ------------------------------------------------------------ */

static int mesh_names(void)
{
	uint8_t name[FT_RDM_NAME_MAX];
	char key[32];
	ssize_t len;
	int j, ret;

	snprintf(key, sizeof(key), "ep.%d", g_mesh.rank);
	ret = ft_rdm_publish(g_mesh.dir, key, g_mesh.ep.name,
			     g_mesh.ep.namelen);
	for (j = 0; !ret && j < g_mesh.n; j++) {
		snprintf(key, sizeof(key), "ep.%d", j);
		len = ft_rdm_lookup(g_mesh.dir, key, name, sizeof(name),
				    3 * ft_opts.timeout_ms);
		if (len < 0)
			return (int)len;
		ret = ft_rdm_av_insert(g_mesh.ep.av, name, &g_mesh.addr[j]);
	}
	return ret;
}

static int mesh_setup(void)
{
	struct fi_info *hints = ft_rdm_hints(FT_RDM_CAPS, FI_THREAD_UNSPEC);
	size_t len = (size_t)g_mesh.n * MESH_SLOT;
	int ret;

	if (mkdir(g_mesh.dir, 0755) && errno != EEXIST)
		ft_info("mkdir %s: %s", g_mesh.dir, strerror(errno));
	ret = hints ? ft_rdm_fab_open(&g_mesh.fab, hints, true) : -FI_ENOMEM;
	fi_freeinfo(hints);
	ret = ret ? ret : ft_rdm_ep_open(&g_mesh.fab, NULL, true, 0,
					 &g_mesh.ep);
	ret = ret ? ret : ft_buf_alloc(g_mesh.fab.domain, len, FI_SEND,
				       &g_mesh.tx);
	ret = ret ? ret : ft_buf_alloc(g_mesh.fab.domain, len, FI_RECV,
				       &g_mesh.rx);
	ret = ret ? ret : mesh_names();
	return ft_check(!ret, "mesh_setup", "%s", fi_strerror(-ret)) ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const size_t small[] = { 1, 64, 4096 };
	static const size_t large[] = { 65537, 1 << 20 };

	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.iters = 5;
	ft_opts.timeout_ms = FT_RDM_DEADLINE_MS;
	ft_set_extra_opts("n:i:D:", " -n N         processes (default 8)\n"
			  " -i RANK      this process (0..N-1)\n"
			  " -D DIR       folder for the names (default "
			  "/tmp/rivet-mesh)\n", mesh_opt);
	ft_parse_opts(argc, argv, "RDM full mesh between N processes "
		      "(-I: rounds of small messages).", false);
	if (g_mesh.n < 2 || g_mesh.n > MESH_MAX || g_mesh.rank < 0 ||
	    g_mesh.rank >= g_mesh.n) {
		fprintf(stderr, "need -n 2..%d and -i 0..N-1\n", MESH_MAX);
		return 2;
	}
	if (!mesh_setup()) {
		mesh_simultaneous();
		mesh_alltoall("mesh_alltoall_small", 2, small, 3,
			      ft_opts.iters);
		mesh_alltoall("mesh_alltoall_large", 3, large, 2, 1);
		mesh_barrier("done");
	}
	ft_rdm_ep_close(&g_mesh.ep);
	ft_buf_free(&g_mesh.tx);
	ft_buf_free(&g_mesh.rx);
	ft_fab_close(&g_mesh.fab);
	return ft_summary();
}
