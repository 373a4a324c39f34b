// SPDX-License-Identifier: MIT
/* Ops-table conformance (single process): every object of every class
 * rivet opens has every slot of every ops table set (fi_provider(7)), and
 * what it does not offer answers -FI_ENOSYS instead of crashing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_tagged.h>

#include "common/ft_rivet.h"

/* Wait sets, poll sets and fi_av_bind are deprecated in libfabric 2.x, yet
 * still its API, and rivet serves them to the programs that use them: this
 * test calls them on purpose. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* The objects of one endpoint type, opened in a child (ft_fork_case). */
struct op_objs {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_av *av;
	struct fid_mr *mr;
	struct fid_ep *ep;
	struct fid_pep *pep;
	char buf[64];
};

static const char *op_err(int ret)
{
	static char str[96];

	snprintf(str, sizeof(str), "%d (%s)", ret,
		 fi_strerror(ret < 0 ? -ret : ret));
	return str;
}

/* An ops table is a size_t followed by function pointers: at least as
 * many as this header defines (want), none NULL. */
static void op_check_table(const char *name, const void *ops, size_t want)
{
	const size_t *size = ops;
	void (*const *slot)(void);
	size_t i, n;

	if (!ops) {
		ft_fail(name, "table is NULL");
		return;
	}
	if (*size < want) {
		ft_fail(name, "size %zu < %zu", *size, want);
		return;
	}
	slot = (void (*const *)(void))((const char *)ops + sizeof(size_t));
	n = (*size - sizeof(size_t)) / sizeof(*slot);
	for (i = 0; i < n; i++) {
		if (!slot[i]) {
			ft_fail(name, "slot %zu of %zu is NULL", i, n);
			return;
		}
	}
	ft_ok(name);
}

#define OP_TABLE(label, ops, type) \
	op_check_table(label, ops, sizeof(type))

static void op_check_fid(const char *label, struct fid *fid)
{
	char name[80];
	char str[16];
	int ret;

	snprintf(name, sizeof(name), "%.60s_fi_ops", label);
	OP_TABLE(name, fid->ops, struct fi_ops);
	if (!fid->ops || fid->ops->size < sizeof(struct fi_ops) ||
	    !fid->ops->tostr || !fid->ops->ops_set)
		return;
	snprintf(name, sizeof(name), "%.60s_ops_set", label);
	ret = fi_set_ops(fid, "rivet_none", 0, NULL, NULL);
	ft_check(ret == -FI_ENOSYS, name, "fi_set_ops: %s", op_err(ret));
	snprintf(name, sizeof(name), "%.60s_tostr", label);
	ret = fid->ops->tostr(fid, str, sizeof(str));
	ft_check(ret == -FI_ENOSYS, name, "tostr: %s", op_err(ret));
}

static void op_check_ep(const char *label, struct fid_ep *ep)
{
	char name[80];

#define OP_EP_TABLE(member, type)					\
	do {								\
		snprintf(name, sizeof(name), "%.60s_%s", label,		\
			 #member);					\
		OP_TABLE(name, ep->member, type);			\
	} while (0)
	op_check_fid(label, &ep->fid);
	OP_EP_TABLE(ops, struct fi_ops_ep);
	OP_EP_TABLE(cm, struct fi_ops_cm);
	OP_EP_TABLE(msg, struct fi_ops_msg);
	OP_EP_TABLE(rma, struct fi_ops_rma);
	OP_EP_TABLE(tagged, struct fi_ops_tagged);
	OP_EP_TABLE(atomic, struct fi_ops_atomic);
	OP_EP_TABLE(collective, struct fi_ops_collective);
#undef OP_EP_TABLE
}

static int op_getinfo(enum fi_ep_type type, struct fi_info **info_p)
{
	struct fi_info *hints;
	int ret;

	ft_opts.ep_type = type;
	hints = ft_hints_alloc(type == FI_EP_RDM ? FI_MSG | FI_TAGGED |
			       FI_RMA | FI_ATOMIC :
			       type == FI_EP_DGRAM ? FI_MSG : FI_MSG | FI_RMA);
	if (!hints)
		return -FI_ENOMEM;
	ret = ft_getinfo(hints, info_p);
	fi_freeinfo(hints);
	return ret;
}

/* Every class rivet offers for one endpoint type, unbound. */
static int op_open(struct op_objs *o, enum fi_ep_type type)
{
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	const char *step = "fi_getinfo";
	int ret;

	memset(o, 0, sizeof(*o));
	ret = op_getinfo(type, &o->info);
	if (!ret && (step = "fi_fabric"))
		ret = fi_fabric(o->info->fabric_attr, &o->fabric, NULL);
	if (!ret && (step = "fi_domain"))
		ret = fi_domain(o->fabric, o->info, &o->domain, NULL);
	if (!ret && (step = "fi_eq_open"))
		ret = ft_eq_open(o->fabric, FI_WAIT_UNSPEC, &o->eq);
	if (!ret && (step = "fi_cq_open"))
		ret = ft_cq_open(o->domain, 16, FI_WAIT_UNSPEC, &o->cq);
	if (!ret && (step = "fi_cntr_open"))
		ret = fi_cntr_open(o->domain, &cntr_attr, &o->cntr, NULL);
	if (!ret && type != FI_EP_MSG && (step = "fi_av_open"))
		ret = fi_av_open(o->domain, &av_attr, &o->av, NULL);
	if (!ret && (step = "fi_mr_reg"))
		ret = fi_mr_reg(o->domain, o->buf, sizeof(o->buf),
				FI_SEND | FI_RECV, 0, 0, 0, &o->mr, NULL);
	if (!ret && (step = "fi_endpoint"))
		ret = fi_endpoint(o->domain, o->info, &o->ep, NULL);
	if (!ret && type == FI_EP_MSG && (step = "fi_passive_ep"))
		ret = fi_passive_ep(o->fabric, o->info, &o->pep, NULL);
	if (ret)
		ft_fail("ops_open", "%s: %s", step, op_err(ret));
	return ret;
}

static void op_close(struct op_objs *o)
{
	fid_t fids[] = {
		o->pep ? &o->pep->fid : NULL, o->ep ? &o->ep->fid : NULL,
		o->mr ? &o->mr->fid : NULL, o->av ? &o->av->fid : NULL,
		o->cntr ? &o->cntr->fid : NULL, o->cq ? &o->cq->fid : NULL,
		o->eq ? &o->eq->fid : NULL,
		o->domain ? &o->domain->fid : NULL,
		o->fabric ? &o->fabric->fid : NULL,
	};
	size_t i;

	for (i = 0; i < sizeof(fids) / sizeof(fids[0]); i++)
		if (fids[i])
			ft_close_fid(fids[i], "ops_close");
	fi_freeinfo(o->info);
}

/* The tables of the objects every endpoint type shares. */
static void op_check_common(const char *t, struct op_objs *o)
{
	char name[80];

#define OP_NAME(what) (snprintf(name, sizeof(name), "%s_%s", t, what), name)
	op_check_fid(OP_NAME("fabric"), &o->fabric->fid);
	OP_TABLE(OP_NAME("fabric_ops"), o->fabric->ops, struct fi_ops_fabric);
	op_check_fid(OP_NAME("domain"), &o->domain->fid);
	OP_TABLE(OP_NAME("domain_ops"), o->domain->ops, struct fi_ops_domain);
	OP_TABLE(OP_NAME("domain_mr"), o->domain->mr, struct fi_ops_mr);
	op_check_fid(OP_NAME("eq"), &o->eq->fid);
	OP_TABLE(OP_NAME("eq_ops"), o->eq->ops, struct fi_ops_eq);
	op_check_fid(OP_NAME("cq"), &o->cq->fid);
	OP_TABLE(OP_NAME("cq_ops"), o->cq->ops, struct fi_ops_cq);
	op_check_fid(OP_NAME("cntr"), &o->cntr->fid);
	OP_TABLE(OP_NAME("cntr_ops"), o->cntr->ops, struct fi_ops_cntr);
	op_check_fid(OP_NAME("mr"), &o->mr->fid);
	op_check_ep(OP_NAME("ep"), o->ep);
#undef OP_NAME
}

/* Connection management has no meaning on a connectionless endpoint:
 * each call answers -FI_ENOSYS (fi_cq_data -e rdm calls fi_shutdown at
 * exit).  The pep-only calls go through the same table. */
static void op_rdm_cm(struct fid_ep *ep)
{
	struct fid_pep *as_pep = (struct fid_pep *)ep;	/* same head */
	struct fid_mc *mc = NULL;
	char addr[128];
	size_t len = sizeof(addr);
	int ret;

	ret = fi_shutdown(ep, 0);
	ft_check(ret == -FI_ENOSYS, "rdm_shutdown", "%s", op_err(ret));
	ret = fi_getpeer(ep, addr, &len);
	ft_check(ret == -FI_ENOSYS, "rdm_getpeer", "%s", op_err(ret));
	ret = fi_connect(ep, addr, NULL, 0);
	ft_check(ret == -FI_ENOSYS, "rdm_connect", "%s", op_err(ret));
	ret = fi_accept(ep, NULL, 0);
	ft_check(ret == -FI_ENOSYS, "rdm_accept", "%s", op_err(ret));
	ret = ep->cm->listen(as_pep);
	ft_check(ret == -FI_ENOSYS, "rdm_listen", "%s", op_err(ret));
	ret = ep->cm->reject(as_pep, NULL, NULL, 0);
	ft_check(ret == -FI_ENOSYS, "rdm_reject", "%s", op_err(ret));
	ret = ep->cm->join(ep, addr, 0, &mc, NULL);
	ft_check(ret == -FI_ENOSYS, "rdm_join", "%s", op_err(ret));
	ret = (int)fi_barrier(ep, 0, NULL);
	ft_check(ret == -FI_ENOSYS, "rdm_barrier", "%s", op_err(ret));
}

static void op_rdm(void)
{
	struct op_objs o;

	if (!op_open(&o, FI_EP_RDM)) {
		op_check_common("rdm", &o);
		op_check_fid("rdm_av", &o.av->fid);
		OP_TABLE("rdm_av_ops", o.av->ops, struct fi_ops_av);
		op_rdm_cm(o.ep);
	}
	op_close(&o);
}

/* A MSG endpoint carries no tags and no collectives; a pep neither
 * connects nor accepts. */
static void op_msg_enosys(struct op_objs *o)
{
	struct fid_ep *as_ep = (struct fid_ep *)o->pep;	/* same head */
	ssize_t ret;

	ret = fi_tsend(o->ep, o->buf, 8, NULL, 0, 1, NULL);
	ft_check(ret == -FI_ENOSYS, "msg_tsend", "%s", op_err((int)ret));
	ret = fi_trecv(o->ep, o->buf, 8, NULL, 0, 1, 0, NULL);
	ft_check(ret == -FI_ENOSYS, "msg_trecv", "%s", op_err((int)ret));
	ret = fi_barrier(o->ep, 0, NULL);
	ft_check(ret == -FI_ENOSYS, "msg_barrier", "%s", op_err((int)ret));
	ret = o->pep->cm->connect(as_ep, o->buf, NULL, 0);
	ft_check(ret == -FI_ENOSYS, "pep_connect", "%s", op_err((int)ret));
	ret = o->pep->cm->shutdown(as_ep, 0);
	ft_check(ret == -FI_ENOSYS, "pep_shutdown", "%s", op_err((int)ret));
}

static void op_msg(void)
{
	struct fi_poll_attr poll_attr = { 0 };
	struct fi_wait_attr wait_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_poll *poll = NULL;
	struct fid_wait *wait = NULL;
	struct op_objs o;
	int ret;

	if (!op_open(&o, FI_EP_MSG)) {
		op_check_common("msg", &o);
		op_check_fid("pep", &o.pep->fid);
		OP_TABLE("pep_ops", o.pep->ops, struct fi_ops_ep);
		OP_TABLE("pep_cm", o.pep->cm, struct fi_ops_cm);
		op_msg_enosys(&o);
		/* poll and wait sets (fi_rivet_pollset tests what they do) */
		ret = fi_wait_open(o.fabric, &wait_attr, &wait);
		if (ft_check(!ret, "wait_open", "%s", op_err(ret))) {
			op_check_fid("wait", &wait->fid);
			OP_TABLE("wait_ops", wait->ops, struct fi_ops_wait);
			fi_close(&wait->fid);
		}
		ret = fi_poll_open(o.domain, &poll_attr, &poll);
		if (ft_check(!ret, "poll_open", "%s", op_err(ret))) {
			op_check_fid("poll", &poll->fid);
			OP_TABLE("poll_ops", poll->ops, struct fi_ops_poll);
			fi_close(&poll->fid);
		}
	}
	op_close(&o);
}

/* A DGRAM endpoint sends and receives only: RMA, atomics, tags,
 * collectives and connections answer -FI_ENOSYS. */
static void op_dgram_enosys(struct op_objs *o)
{
	struct fid_ep *ep = o->ep;
	uint64_t v = 0;
	ssize_t ret;

	ret = fi_write(ep, o->buf, 8, NULL, 0, 0, 0, NULL);
	ft_check(ret == -FI_ENOSYS, "dgram_write", "%s", op_err((int)ret));
	ret = fi_read(ep, o->buf, 8, NULL, 0, 0, 0, NULL);
	ft_check(ret == -FI_ENOSYS, "dgram_read", "%s", op_err((int)ret));
	ret = fi_atomic(ep, &v, 1, NULL, 0, 0, 0, FI_UINT64, FI_SUM, NULL);
	ft_check(ret == -FI_ENOSYS, "dgram_atomic", "%s", op_err((int)ret));
	ret = fi_tsend(ep, o->buf, 8, NULL, 0, 1, NULL);
	ft_check(ret == -FI_ENOSYS, "dgram_tsend", "%s", op_err((int)ret));
	ret = fi_connect(ep, o->buf, NULL, 0);
	ft_check(ret == -FI_ENOSYS, "dgram_connect", "%s", op_err((int)ret));
	ret = fi_shutdown(ep, 0);
	ft_check(ret == -FI_ENOSYS, "dgram_shutdown", "%s", op_err((int)ret));
	ret = fi_barrier(ep, 0, NULL);
	ft_check(ret == -FI_ENOSYS, "dgram_barrier", "%s", op_err((int)ret));
}

static void op_dgram(void)
{
	struct op_objs o;

	if (!op_open(&o, FI_EP_DGRAM)) {
		op_check_common("dgram", &o);
		op_check_fid("dgram_av", &o.av->fid);
		OP_TABLE("dgram_av_ops", o.av->ops, struct fi_ops_av);
		op_dgram_enosys(&o);
	}
	op_close(&o);
}

int main(int argc, char **argv)
{
	ft_parse_opts(argc, argv,
		      "Ops tables of every object: no NULL slot, -FI_ENOSYS "
		      "for what is not offered (single process).", false);
	/* a NULL slot called crashes: each type in a child */
	ft_fork_case("ops_msg", op_msg);
	ft_fork_case("ops_rdm", op_rdm);
	ft_fork_case("ops_dgram", op_dgram);
	return ft_summary();
}
