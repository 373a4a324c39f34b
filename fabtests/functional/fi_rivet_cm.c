// SPDX-License-Identifier: MIT
/* Connection management conformance (server/client): private data both
 * ways, names, CM data size, shutdown from either side, reject, no listener. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ft_rivet.h"

#define CM_REJECT_SEED 0x5eed0003
#define CM_CONNECT_SEED 0x5eed0001
#define CM_ACCEPT_SEED 0x5eed0002
#define CM_MAX_DATA 256

struct cm_names {
	uint64_t len;
	uint8_t name[64];
	uint8_t peer[64];
};

static struct ft_fab g_fab;
static size_t g_cm_size;	/* private data bytes the client sends */

static void cm_fill(uint8_t *buf, size_t len, uint32_t seed)
{
	ft_fill(buf, len, seed);
}

/* FI_OPT_CM_DATA_SIZE: a size_t, 0 allowed, and -FI_ETOOSMALL for a
 * short buffer is what the API asks of every optval. */
static size_t cm_data_size(fid_t fid, const char *name)
{
	size_t size = 0, len = sizeof(size);
	int ret;

	ret = fi_getopt(fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size,
			&len);
	if (!ft_check(!ret && len == sizeof(size), name,
		      "fi_getopt(FI_OPT_CM_DATA_SIZE): %d (%s), optlen %zu",
		      ret, fi_strerror(-ret), len))
		return 0;
	ft_info("%s: %zu bytes", name, size);
	return size < CM_MAX_DATA ? size : CM_MAX_DATA;
}

static void cm_check_data(const char *name, const uint8_t *data, size_t len,
			  size_t want_len, uint32_t seed)
{
	ssize_t bad = ft_verify(data, want_len, seed);

	ft_check(len == want_len && bad < 0, name,
		 "got %zu bytes (want %zu), first bad byte at %zd", len,
		 want_len, bad);
}

static int cm_names_get(struct ft_conn *conn, struct cm_names *n)
{
	size_t len = sizeof(n->name), plen = sizeof(n->peer);
	int ret;

	memset(n, 0, sizeof(*n));
	ret = fi_getname(&conn->ep->fid, n->name, &len);
	if (!ret)
		ret = fi_getpeer(conn->ep, n->peer, &plen);
	if (!ft_check(!ret && len == plen, "cm_getname_getpeer",
		      "fi_getname/fi_getpeer: %d (%s), lengths %zu/%zu", ret,
		      fi_strerror(-ret), len, plen))
		return ret ? ret : -FI_EOTHER;
	n->len = len;
	return 0;
}

/* Exchange {name, peer} and check the peer sees us as we see ourselves. */
static int cm_names_exchange(struct ft_conn *conn)
{
	struct cm_names mine, theirs;
	char a[128], b[128];
	ssize_t ret;

	if (cm_names_get(conn, &mine))
		return -FI_EOTHER;
	if (ft_is_server()) {
		ret = ft_ctrl_recv(conn, &theirs, sizeof(theirs));
		ret = ret < 0 ? ret : ft_ctrl_send(conn, &mine, sizeof(mine));
	} else {
		ret = ft_ctrl_send(conn, &mine, sizeof(mine));
		ret = ret < 0 ? ret : ft_ctrl_recv(conn, &theirs,
						    sizeof(theirs));
	}
	if (!ft_check(ret >= 0, "cm_names_exchange", "%s",
		      fi_strerror((int)-ret)))
		return (int)ret;
	ft_check(theirs.len == mine.len &&
		 !memcmp(theirs.peer, mine.name, mine.len) &&
		 !memcmp(theirs.name, mine.peer, mine.len), "cm_names_match",
		 "we are %s with peer %s; peer says %s with peer %s",
		 ft_addr_str(mine.name, a, sizeof(a)),
		 ft_addr_str(mine.peer, b, sizeof(b)),
		 ft_addr_str(theirs.name, a, sizeof(a)),
		 ft_addr_str(theirs.peer, b, sizeof(b)));
	return 0;
}

static void cm_getname_small(struct ft_conn *conn)
{
	uint8_t name[64];
	size_t len = 1;
	int ret;

	ret = fi_getname(&conn->ep->fid, name, &len);
	ft_check(ret == -FI_ETOOSMALL && len > 1, "cm_getname_too_small",
		 "addrlen 1: returned %d (%s), addrlen now %zu", ret,
		 fi_strerror(-ret), len);
}

/* ---- server ----------------------------------------------------------- */

static int cm_server_first(void)
{
	uint8_t data[FT_CM_BUF_SIZE], reply[CM_MAX_DATA];
	struct ft_conn conn = { 0 };
	struct fi_info *info;
	size_t len = 0;
	int ret;

	ret = ft_wait_connreq(&g_fab, &info, data, &len);
	if (!ft_check(!ret, "cm_connreq", "%s", fi_strerror(-ret)))
		return ret;
	ft_check(info->handle != NULL, "cm_connreq_handle",
		 "FI_CONNREQ info has no handle");
	cm_check_data("cm_connreq_data", data, len, g_cm_size,
		      CM_CONNECT_SEED);
	ret = ft_conn_open(&g_fab, &conn, info);
	if (!ret)
		ret = ft_ctrl_post_recv(&conn);
	cm_fill(reply, g_cm_size - 1, CM_ACCEPT_SEED);
	if (!ret)
		ret = ft_accept_finish(&conn, reply, g_cm_size - 1, NULL, NULL);
	if (ft_check(!ret, "cm_accept", "%s", fi_strerror(-ret))) {
		cm_getname_small(&conn);
		ret = cm_names_exchange(&conn);
	}
	if (!ret) {
		ret = ft_eq_expect(conn.eq, FI_SHUTDOWN, &conn.ep->fid, NULL,
				   NULL, ft_opts.timeout_ms);
		ft_check(!ret, "cm_shutdown_by_client",
			 "no FI_SHUTDOWN after the client's fi_shutdown: %s",
			 fi_strerror(-ret));
	}
	ft_conn_close(&conn);
	return ret;
}

static int cm_server_shutdown(void)
{
	struct ft_conn conn = { 0 };
	int ret;

	ret = ft_server_connect(&g_fab, &conn);
	if (ft_check(!ret, "cm_accept_2", "%s", fi_strerror(-ret))) {
		ret = fi_shutdown(conn.ep, 0);
		ft_check(!ret, "cm_shutdown_call", "fi_shutdown: %s",
			 fi_strerror(-ret));
	}
	ft_conn_close(&conn);
	return ret;
}

static int cm_server_reject(void)
{
	uint8_t data[FT_CM_BUF_SIZE], rej[CM_MAX_DATA];
	struct fi_info *info;
	size_t len = 0;
	int ret;

	ret = ft_wait_connreq(&g_fab, &info, data, &len);
	if (!ft_check(!ret, "cm_connreq_3", "%s", fi_strerror(-ret)))
		return ret;
	cm_fill(rej, g_cm_size - 2, CM_REJECT_SEED);
	ret = fi_reject(g_fab.pep, info->handle, rej, g_cm_size - 2);
	ft_check(!ret, "cm_reject_call", "fi_reject: %s", fi_strerror(-ret));
	fi_freeinfo(info);
	return ret;
}

/* The client connects from an address its passive endpoint reserved
 * and tells which: the connection must come from there. */
static void cm_server_takeover(void)
{
	struct sockaddr_storage want, peer;
	size_t len = sizeof(peer);
	struct ft_conn conn = { 0 };
	ssize_t ret;

	ret = ft_server_connect(&g_fab, &conn);
	if (ft_check(!ret, "cm_takeover_accept", "%s",
		     fi_strerror((int)-ret))) {
		memset(&want, 0, sizeof(want));
		ret = ft_ctrl_recv(&conn, &want, sizeof(want));
		if (ret >= 0)
			ret = fi_getpeer(conn.ep, &peer, &len);
		ft_check(!ret && !memcmp(&peer, &want, len),
			 "cm_takeover_peer", "%s; the client is not where its "
			 "pep was", fi_strerror((int)-ret));
	}
	ft_conn_close(&conn);
}

static void cm_server(void)
{
	g_cm_size = cm_data_size(&g_fab.pep->fid, "cm_data_size_pep");
	if (g_cm_size < 3) {
		ft_fail("cm_data_size_pep", "need at least 3 bytes");
		return;
	}
	if (cm_server_first() || cm_server_shutdown())
		return;
	cm_server_reject();
	cm_server_takeover();
}

/* ---- client ----------------------------------------------------------- */

static int cm_client_first(void)
{
	uint8_t pd[CM_MAX_DATA], data[FT_CM_BUF_SIZE];
	struct ft_conn conn = { 0 };
	size_t len = 0;
	int ret;

	ret = ft_connect_start(&g_fab, &conn);
	if (!ret)
		ret = ft_ctrl_post_recv(&conn);
	if (!ft_check(!ret, "cm_ep_open", "%s", fi_strerror(-ret)))
		goto out;
	g_cm_size = cm_data_size(&conn.ep->fid, "cm_data_size_ep");
	if (g_cm_size < 3) {
		ret = -FI_EOTHER;
		ft_fail("cm_data_size_ep", "need at least 3 bytes");
		goto out;
	}
	cm_fill(pd, g_cm_size, CM_CONNECT_SEED);
	ret = ft_connect_finish(&conn, pd, g_cm_size, data, &len);
	if (!ft_check(!ret, "cm_connect", "%s", fi_strerror(-ret)))
		goto out;
	cm_check_data("cm_connected_data", data, len, g_cm_size - 1,
		      CM_ACCEPT_SEED);
	cm_getname_small(&conn);
	ret = cm_names_exchange(&conn);
	if (!ret) {
		ret = fi_shutdown(conn.ep, 0);
		ft_check(!ret, "cm_shutdown_call", "fi_shutdown: %s",
			 fi_strerror(-ret));
	}
out:
	ft_conn_close(&conn);
	return ret;
}

static int cm_client_shutdown(void)
{
	struct ft_conn conn = { 0 };
	int ret;

	ret = ft_client_connect(&g_fab, &conn);
	if (ft_check(!ret, "cm_connect_2", "%s", fi_strerror(-ret))) {
		ret = ft_eq_expect(conn.eq, FI_SHUTDOWN, &conn.ep->fid, NULL,
				   NULL, ft_opts.timeout_ms);
		ft_check(!ret, "cm_shutdown_by_server",
			 "no FI_SHUTDOWN after the server's fi_shutdown: %s",
			 fi_strerror(-ret));
	}
	ft_conn_close(&conn);
	return ret;
}

/* Connect with pd and expect an error event; *err gets its details. */
static ssize_t cm_connect_fail(struct ft_conn *conn, const void *pd,
			       size_t len, struct fi_eq_err_entry *err)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + FT_CM_BUF_SIZE];
	uint32_t event = 0;
	ssize_t ret;

	ret = fi_connect(conn->ep, conn->info->dest_addr, pd, len);
	if (ret) {
		ft_info("fi_connect: %s", fi_strerror((int)-ret));
		return ret;
	}
	ret = ft_eq_wait(conn->eq, &event, buf, sizeof(buf), err,
			 ft_opts.timeout_ms);
	if (ret >= 0)
		ft_info("got event %u instead of an error", event);
	return ret;
}

/* fi_eq_strerror must name the rdma_cm event behind an error entry, not
 * read its status as an errno (REJECTED's reason 8 once printed as
 * "Exec format error"). */
static void cm_check_errstr(struct ft_conn *conn,
			    const struct fi_eq_err_entry *err,
			    const char *name)
{
	char buf[256];
	const char *s, *misread = strerror(err->prov_errno & 0xffff);

	s = fi_eq_strerror(conn->eq, err->prov_errno, err->err_data, buf,
			   sizeof(buf));
	if (s)
		ft_info("%s: prov_errno %d: %s", name, err->prov_errno, s);
	ft_check(s && strstr(s, "RDMA_CM_EVENT_") && !strstr(s, misread),
		 name, "fi_eq_strerror(prov_errno %d) gives \"%s\": want "
		 "the rdma_cm event and its status decoded", err->prov_errno,
		 s ? s : "(null)");
}

static void cm_client_reject(void)
{
	uint8_t pd[CM_MAX_DATA], rej[FT_CM_BUF_SIZE];
	struct fi_eq_err_entry err = {
		.err_data = rej,
		.err_data_size = sizeof(rej),
	};
	struct ft_conn conn = { 0 };
	ssize_t ret;

	ret = ft_connect_start(&g_fab, &conn);
	if (!ft_check(!ret, "cm_ep_open_3", "%s", fi_strerror((int)-ret)))
		goto out;
	cm_fill(pd, g_cm_size, CM_CONNECT_SEED);
	ret = cm_connect_fail(&conn, pd, g_cm_size, &err);
	if (!ft_check(ret == -FI_EAVAIL && err.err == FI_ECONNREFUSED &&
		      err.fid == &conn.ep->fid, "cm_rejected",
		      "want an error entry with err ECONNREFUSED on the ep: "
		      "ret %zd, err %d (%s), fid %s", ret, err.err,
		      fi_strerror(err.err),
		      err.fid == &conn.ep->fid ? "ok" : "wrong"))
		goto out;
	cm_check_data("cm_reject_data", rej, err.err_data_size,
		      g_cm_size - 2, CM_REJECT_SEED);
	cm_check_errstr(&conn, &err, "cm_reject_strerror");
out:
	ft_conn_close(&conn);
}

/* A port nobody listens on must give an error event, not a hang. */
static void cm_client_no_listener(void)
{
	struct fi_eq_err_entry err = { 0 };
	struct fi_info *hints = ft_hints_alloc(FI_MSG), *info = NULL;
	struct ft_conn conn = { 0 };
	char port[16];
	ssize_t ret;

	snprintf(port, sizeof(port), "%d", atoi(ft_opts.dst_port) + 1);
	ret = fi_getinfo(FT_FIVERSION, ft_opts.dst_addr, port, 0, hints,
			 &info);
	fi_freeinfo(hints);
	if (!ret)
		ret = ft_conn_open(&g_fab, &conn, info);
	if (!ft_check(!ret, "cm_ep_open_4", "%s", fi_strerror((int)-ret)))
		goto out;
	ret = cm_connect_fail(&conn, NULL, 0, &err);
	ft_check(ret == -FI_EAVAIL && err.err, "cm_connect_no_listener",
		 "want an error entry within %d ms: ret %zd (%s)",
		 ft_opts.timeout_ms, ret, fi_strerror((int)-ret));
	if (ret == -FI_EAVAIL) {
		ft_info("no listener: err %d (%s)", err.err,
			fi_strerror(err.err));
		cm_check_errstr(&conn, &err, "cm_no_listener_strerror");
	}
out:
	ft_conn_close(&conn);
}

/* A pep bound to (our address, server port + 1), never listening. */
static int cm_takeover_pep(struct fid_pep **pep_p, void *name, size_t *len)
{
	struct sockaddr_in *sin;
	int ret;

	ret = fi_passive_ep(g_fab.fabric, g_fab.info, pep_p, NULL);
	if (ret || !g_fab.info->src_addr ||
	    g_fab.info->addr_format != FI_SOCKADDR_IN)
		return ret ? ret : -FI_EINVAL;
	memcpy(name, g_fab.info->src_addr, g_fab.info->src_addrlen);
	sin = name;
	sin->sin_port = htons((uint16_t)(atoi(ft_opts.dst_port) + 1));
	ret = fi_setname(&(*pep_p)->fid, name, sizeof(*sin));
	*len = FT_CM_BUF_SIZE;
	return ret ? ret : fi_getname(&(*pep_p)->fid, name, len);
}

/*
 * fi_getinfo(3) and fi_endpoint(3), socket style (upstream's
 * fi_msg_sockets): a pep in hints->handle comes back in info->handle, and
 * an active endpoint opened with it takes the pep's address; the pep is
 * closed, then the endpoint connects from that address.
 */
static void cm_client_takeover(void)
{
	uint8_t pep_name[FT_CM_BUF_SIZE], ep_name[FT_CM_BUF_SIZE];
	struct fi_info *hints = ft_hints_alloc(FI_MSG), *info = NULL;
	size_t pep_len = 0, ep_len = sizeof(ep_name);
	struct fid_pep *pep = NULL;
	struct ft_conn conn = { 0 };
	int ret;

	ret = cm_takeover_pep(&pep, pep_name, &pep_len);
	if (!ft_check(!ret, "cm_takeover_pep", "%s", fi_strerror(-ret)))
		goto out;
	hints->handle = &pep->fid;
	ret = ft_getinfo(hints, &info);
	hints->handle = NULL;
	if (!ft_check(!ret && info->handle == &pep->fid, "cm_takeover_handle",
		      "fi_getinfo %s, info->handle %p (pep %p)",
		      fi_strerror(-ret), ret ? NULL : (void *)info->handle,
		      (void *)&pep->fid))
		goto out;
	ret = ft_conn_open(&g_fab, &conn, info);
	info = NULL;	/* conn owns it */
	ft_close_fid(&pep->fid, "cm_takeover_pep_close");
	pep = NULL;
	if (!ret)
		ret = fi_getname(&conn.ep->fid, ep_name, &ep_len);
	if (!ft_check(!ret && ep_len == pep_len &&
		      !memcmp(ep_name, pep_name, ep_len), "cm_takeover_name",
		      "%s; the endpoint is not at the pep's address",
		      fi_strerror(-ret)))
		goto out;
	ret = ft_ctrl_post_recv(&conn);
	if (!ret)
		ret = ft_connect_finish(&conn, NULL, 0, NULL, NULL);
	if (ft_check(!ret, "cm_takeover_connect", "%s", fi_strerror(-ret)))
		ft_ctrl_send(&conn, pep_name, pep_len);
out:
	if (pep)
		ft_close_fid(&pep->fid, "cm_takeover_pep_close");
	ft_conn_close(&conn);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

static void cm_client(void)
{
	if (cm_client_first() || cm_client_shutdown())
		return;
	cm_client_reject();
	cm_client_no_listener();
	cm_client_takeover();
}

int main(int argc, char **argv)
{
	struct fi_info *hints, *info = NULL;
	int ret;

	ft_parse_opts(argc, argv, "Connection management conformance.", true);
	hints = ft_hints_alloc(FI_MSG);
	ret = ft_getinfo(hints, &info);
	fi_freeinfo(hints);
	if (ret) {
		ft_fail("getinfo", "%s", fi_strerror(-ret));
		return ft_summary();
	}
	ret = ft_fab_open(&g_fab, info);
	if (!ret && ft_is_server())
		ret = ft_listen(&g_fab);
	if (!ft_check(!ret, "setup", "%s", fi_strerror(-ret)))
		goto out;
	if (ft_is_server())
		cm_server();
	else
		cm_client();
out:
	ft_fab_close(&g_fab);
	return ft_summary();
}
