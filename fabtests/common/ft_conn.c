// SPDX-License-Identifier: MIT
/* MSG connections for the conformance programs: listen/accept/connect,
 * waits on EQs and CQs that always end, small control messages. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ft_rivet.h"

#define FT_SPINS 200

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
	ft_oob_watch(conn->txcq, conn->rxcq);
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
int ft_self_client_info(const struct fi_info *info, struct fi_info **cinfo)
{
	struct fi_info *hints = fi_dupinfo(info);
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	free(hints->src_addr);
	hints->src_addr = NULL;
	hints->src_addrlen = 0;
	ret = fi_getinfo(FT_FIVERSION, ft_opts.src_addr, ft_opts.src_port, 0,
			 hints, cinfo);
	fi_freeinfo(hints);
	return ret;
}

int ft_self_wait_connreq(struct ft_fab *fab, struct fid_eq *eq,
			 struct fi_info **req)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *entry = (void *)buf;
	uint64_t end = ft_now_ms() + (uint64_t)ft_opts.timeout_ms;
	uint32_t event;
	ssize_t ret;

	*req = NULL;
	do {
		ret = fi_eq_read(eq, &event, buf, sizeof(buf), 0);
		if (ret != -FI_EAGAIN)
			return ret < 0 ? (int)ret : -FI_EOTHER;
		ret = fi_eq_read(fab->peq, &event, buf, sizeof(buf), 0);
		if (ret > 0 && event == FI_CONNREQ) {
			*req = entry->info;
			return 0;
		}
		if (ret != -FI_EAGAIN)
			return ret < 0 ? (int)ret : -FI_EOTHER;
	} while (ft_now_ms() < end);
	return -FI_ETIMEDOUT;
}

void ft_conn_close(struct ft_conn *conn)
{
	ft_oob_watch(NULL, NULL);
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
