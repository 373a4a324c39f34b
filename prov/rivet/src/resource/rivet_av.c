/* SPDX-License-Identifier: MIT */
/*
 * Address vectors (fi_av(3)): a table of socket addresses indexed by
 * fi_addr_t, a reverse map for FI_SOURCE, FI_EVENT completions on an EQ,
 * and the endpoints to tell when an entry is removed.
 */
#include <arpa/inet.h>
#include <limits.h>
#include <netdb.h>
#include <stdlib.h>

#include "rivet_av.h"

#define RIVET_AV_DEFAULT_COUNT 64
#define RIVET_AV_MAX_INITIAL (1 << 16)	/* attr->count is only a hint */

static struct fi_ops g_rivet_av_fi_ops;
static struct fi_ops_av g_rivet_av_ops;

static inline struct rivet_av *to_rav(struct fid_av *av)
{
	return container_of(av, struct rivet_av, av_fid);
}

/* ---- slots (av->lock held) ---- */

static bool rivet_av_slot_free(const struct rivet_av *av, size_t i)
{
	return !av->valid[i] && av->addrs[i].sa.sa_family == AF_UNSPEC;
}

/* Room for n more entries without failing halfway through an insert
 * (a named AV's segment never grows). */
static int rivet_av_reserve(struct rivet_av *av, size_t n)
{
	size_t need, cap = av->cap;
	union rivet_sockaddr *addrs;
	bool *valid;

	n = n > av->nfree ? n - av->nfree : 0;
	if (av->shm.hdr && n > av->shm.cap - av->count)
		return -FI_ENOSPC;
	if (n > SIZE_MAX / 2 / sizeof(*addrs) - av->count)
		return -FI_ENOMEM;
	need = av->count + n;
	if (need <= cap)
		return 0;
	cap = RIVET_MAX(need, 2 * cap);
	addrs = realloc(av->addrs, cap * sizeof(*addrs));
	if (!addrs)
		return -FI_ENOMEM;
	av->addrs = addrs;
	valid = realloc(av->valid, cap * sizeof(*valid));
	if (!valid)
		return -FI_ENOMEM;
	av->valid = valid;
	memset(&addrs[av->cap], 0, (cap - av->cap) * sizeof(*addrs));
	memset(&valid[av->cap], 0, (cap - av->cap) * sizeof(*valid));
	av->cap = cap;
	return 0;
}

static size_t rivet_av_slot_take(struct rivet_av *av)
{
	size_t i;

	if (!av->nfree)
		return av->count++;
	for (i = av->free_hint; !rivet_av_slot_free(av, i); i++)
		;
	av->nfree--;
	av->free_hint = i + 1;
	return i;
}

/* Makes a slot free again (an insert that failed, a removal told). */
static void rivet_av_slot_put(struct rivet_av *av, size_t i)
{
	memset(&av->addrs[i], 0, sizeof(av->addrs[i]));
	av->valid[i] = false;
	if (av->shm.hdr)
		return;		/* shared indices are never reused */
	if (i + 1 == av->count) {
		av->count--;
		return;
	}
	av->nfree++;
	av->free_hint = RIVET_MIN(av->free_hint, i);
}

static int rivet_av_insert_one(struct rivet_av *av,
			       const union rivet_sockaddr *sa,
			       fi_addr_t *addr_p)
{
	size_t i = rivet_av_slot_take(av);
	int ret;

	av->addrs[i] = *sa;
	ret = rivet_addr_map_insert(&av->reverse, &sa->sa, i);
	if (ret == -FI_EALREADY) {
		av->ndups++;	/* the first slot keeps the reverse entry */
	} else if (ret) {
		rivet_av_slot_put(av, i);
		return ret;
	}
	av->valid[i] = true;
	if (av->shm.hdr)
		rivet_av_shm_publish(&av->shm, i, sa);
	atomic_fetch_add(&av->domain->av_gen, 1);
	*addr_p = i;
	return 0;
}

/* Entry i as another process of a named AV published it. */
static int rivet_av_adopt(struct rivet_av *av, size_t i,
			  const union rivet_sockaddr *sa)
{
	int ret;

	if (i >= av->count) {
		ret = rivet_av_reserve(av, i + 1 - av->count);
		if (ret)
			return ret;
		av->count = i + 1;
	}
	ret = rivet_addr_map_insert(&av->reverse, &sa->sa, i);
	if (ret == -FI_EALREADY)
		av->ndups++;
	else if (ret)
		return ret;
	av->addrs[i] = *sa;
	av->valid[i] = true;
	atomic_fetch_add(&av->domain->av_gen, 1);
	return 0;
}

/* What the named AV's segment holds that this process has not seen yet
 * (av->lock): entries published since the last look.  Removals by other
 * processes are not seen (fi_rivet(7), SHARED AV). */
static void rivet_av_shm_sync(struct rivet_av *av)
{
	size_t n = rivet_av_shm_count(&av->shm), i;
	union rivet_sockaddr sa;

	for (i = av->shm_seen; i < n; i++)
		if ((i >= av->count || !av->valid[i]) &&
		    rivet_av_shm_entry(&av->shm, i, &sa) &&
		    rivet_av_adopt(av, i, &sa))
			break;		/* no memory: look again next time */
	av->shm_seen = i;
}

/* Another valid slot with the address takes over its reverse entry. */
static void rivet_av_reverse_adopt(struct rivet_av *av,
				   const struct sockaddr *sa)
{
	size_t j;

	for (j = 0; j < av->count; j++) {
		if (!av->valid[j] || !rivet_addr_map_same(&av->addrs[j].sa, sa))
			continue;
		if (!rivet_addr_map_insert(&av->reverse, &av->addrs[j].sa, j))
			av->ndups--;
		return;
	}
}

/* Takes a slot out of service; it stays unusable until rivet_av_slot_put. */
static void rivet_av_slot_drop(struct rivet_av *av, size_t i)
{
	const struct sockaddr *sa = &av->addrs[i].sa;
	uint64_t owner;

	av->valid[i] = false;
	if (rivet_addr_map_lookup(&av->reverse, sa, &owner) || owner != i) {
		av->ndups--;
		return;
	}
	rivet_addr_map_remove(&av->reverse, sa);
	if (av->ndups)
		rivet_av_reverse_adopt(av, sa);
}

/* ---- where an insert call's addresses come from ---- */

/* A resolved node of fi_av_insertsvc/insertsym: its address or error. */
struct rivet_av_src {
	size_t count;
	const uint8_t *buf;		/* fi_av_insert */
	size_t off;
	const struct rivet_av_node *nodes;	/* insertsvc, insertsym */
	size_t svccnt;
};

/* Entry i, asked for in order: 0 or a negative FI_E* for this entry. */
static int rivet_av_src_get(struct rivet_av_src *src, uint32_t format,
			    size_t i, union rivet_sockaddr *out)
{
	const struct rivet_av_node *node;
	size_t len;

	if (src->nodes) {
		node = &src->nodes[i / src->svccnt];
		if (node->err)
			return node->err;
		return rivet_av_sym_addr(&node->addr.sa, 0, i % src->svccnt,
					 out);
	}
	if (!src->buf)
		return -FI_EINVAL;	/* an FI_SOCKADDR walk lost its way */
	len = rivet_av_entry_len(src->buf + src->off, format);
	if (!len) {
		src->buf = NULL;
		return -FI_EINVAL;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out, src->buf + src->off, len);
	src->off += len;
	return 0;
}

/* ---- inserts ---- */

static struct rivet_eq_event *rivet_av_event_alloc(struct rivet_av *av,
						   void *context)
{
	struct rivet_eq_event *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	ev->entry.fid = &av->av_fid.fid;
	ev->entry.context = context;
	return ev;
}

/* One error event per failed address (data: its index), then FI_AV_COMPLETE
 * (data: how many went in); the EQ returns errors first. */
static void rivet_av_events_push(struct rivet_av *av,
				 struct rivet_eq_event *errs,
				 struct rivet_eq_event *done, size_t n)
{
	struct fi_eq_entry entry = {
		.fid = &av->av_fid.fid,
		.context = done->entry.context,
		.data = n,
	};
	struct rivet_eq_event *next;

	for (; errs; errs = next) {
		next = errs->next;
		errs->next = NULL;
		rivet_eq_push(av->eq, errs);
	}
	done->event = FI_AV_COMPLETE;
	memcpy(done->data, &entry, sizeof(entry));
	done->data_len = sizeof(entry);
	rivet_eq_push(av->eq, done);
}

static int rivet_av_insert_check(struct rivet_av *av, size_t count,
				 uint64_t flags, void *context)
{
	if (flags & ~(FI_MORE | FI_SYNC_ERR))
		return -FI_EBADFLAGS;
	if (av->attr.flags & FI_EVENT) {
		if (!av->eq)
			return -FI_ENOEQ;
		if (flags & FI_SYNC_ERR)
			return -FI_EINVAL;	/* synchronous inserts only */
	} else if ((flags & FI_SYNC_ERR) && count && !context) {
		return -FI_EINVAL;
	}
	return 0;
}

/* Entry i: 0 and its fi_addr_t, or a negative FI_E*. */
static int rivet_av_insert_next(struct rivet_av *av, struct rivet_av_src *src,
				size_t i, fi_addr_t *addr_p)
{
	uint32_t format = av->domain->info->addr_format;
	union rivet_sockaddr sa;
	int ret;

	ret = rivet_av_src_get(src, format, i, &sa);
	if (!ret)
		ret = rivet_av_addr_check(&sa.sa, format);
	/* a DGRAM domain's service address names whoever listens there */
	if (!ret && av->domain->info->ep_attr->type == FI_EP_DGRAM &&
	    rivet_ud_addr_is_service(&sa.sa))
		ret = rivet_ud_resolve(&sa.sa, RIVET_UD_RESOLVE_MS, &sa);
	if (!ret)
		ret = rivet_av_insert_one(av, &sa, addr_p);
	return ret;
}

/* Under av->lock: inserts every entry, recording results and events. */
static size_t rivet_av_insert_all(struct rivet_av *av, struct rivet_av_src *src,
				  fi_addr_t *fi_addr, uint64_t flags,
				  void *context, struct rivet_eq_event **errs_p)
{
	struct rivet_eq_event *ev, **tail = errs_p;
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	size_t i, n = 0;
	int ret;

	for (i = 0; i < src->count; i++) {
		ret = rivet_av_insert_next(av, src, i, &addr);
		if (fi_addr)
			fi_addr[i] = ret ? FI_ADDR_NOTAVAIL : addr;
		if (flags & FI_SYNC_ERR)
			((int *)context)[i] = -ret;
		if (!ret) {
			n++;
			continue;
		}
		RIVET_DBG(AV, "insert %zu: %s\n", i, fi_strerror(-ret));
		if (!(av->attr.flags & FI_EVENT))
			continue;
		ev = rivet_av_event_alloc(av, context);
		if (!ev) {
			RIVET_WARN(AV, "no memory to report insert %zu\n", i);
			continue;
		}
		ev->is_err = true;
		ev->entry.data = i;
		ev->entry.err = -ret;
		*tail = ev;
		tail = &ev->next;
	}
	return n;
}

static int rivet_av_insert_src(struct rivet_av *av, struct rivet_av_src *src,
			       fi_addr_t *fi_addr, uint64_t flags,
			       void *context)
{
	struct rivet_eq_event *done = NULL, *errs = NULL;
	size_t n = 0;
	int ret;

	if (av->attr.flags & FI_READ)
		return -FI_EOPNOTSUPP;	/* a named AV opened read-only */
	if (av->attr.flags & FI_EVENT) {
		done = rivet_av_event_alloc(av, context);
		if (!done)
			return -FI_ENOMEM;
	}
	pthread_mutex_lock(&av->lock);
	if (av->shm.hdr) {
		rivet_av_shm_lock(&av->shm);
		rivet_av_shm_sync(av);
	}
	ret = rivet_av_insert_check(av, src->count, flags, context);
	if (!ret)
		ret = rivet_av_reserve(av, src->count);
	if (!ret)
		n = rivet_av_insert_all(av, src, fi_addr, flags, context,
					&errs);
	if (av->shm.hdr)
		rivet_av_shm_unlock(&av->shm);
	pthread_mutex_unlock(&av->lock);
	if (ret) {
		free(done);
		return ret;
	}
	if (!done)
		return (int)RIVET_MIN(n, (size_t)INT_MAX);
	rivet_av_events_push(av, errs, done, n);
	return 0;
}

static int rivet_av_insert(struct fid_av *av_fid, const void *addr,
			   size_t count, fi_addr_t *fi_addr, uint64_t flags,
			   void *context)
{
	struct rivet_av_src src = { .count = count, .buf = addr };

	if (count && !addr)
		return -FI_EINVAL;
	return rivet_av_insert_src(to_rav(av_fid), &src, fi_addr, flags,
				   context);
}

/* ---- insertsvc, insertsym: names to addresses ---- */

static int rivet_av_insertsym(struct fid_av *av_fid, const char *node,
			      size_t nodecnt, const char *service,
			      size_t svccnt, fi_addr_t *fi_addr,
			      uint64_t flags, void *context)
{
	struct rivet_av *av = to_rav(av_fid);
	uint32_t format = av->domain->info->addr_format;
	struct rivet_av_src src = { .svccnt = svccnt };
	struct rivet_av_node *nodes;
	size_t i;
	int ret;

	if (!node || rivet_av_service_check(service))
		return -FI_EINVAL;
	if (svccnt && nodecnt > SIZE_MAX / svccnt)
		return -FI_EINVAL;
	src.count = nodecnt * svccnt;
	nodes = calloc(src.count ? nodecnt : 1, sizeof(*nodes));
	if (!nodes)
		return -FI_ENOMEM;
	for (i = 0; src.count && i < nodecnt; i++)
		rivet_av_node_resolve(node, service, format, nodes, i);
	src.nodes = nodes;
	ret = rivet_av_insert_src(av, &src, fi_addr, flags, context);
	free(nodes);
	return ret;
}

/* A node in FI_ADDR_STR form ("fi_sockaddr_in://10.0.0.1:7000") comes with
 * no service (fi_av(3)); anything else goes through getaddrinfo. */
static int rivet_av_insertsvc(struct fid_av *av_fid, const char *node,
			      const char *service, fi_addr_t *fi_addr,
			      uint64_t flags, void *context)
{
	struct rivet_av *av = to_rav(av_fid);
	struct rivet_av_node one = { .err = 0 };
	struct rivet_av_src src = { .count = 1, .nodes = &one, .svccnt = 1 };

	if (!node || (service && rivet_av_service_check(service)))
		return -FI_EINVAL;
	if (service || rivet_addr_parse(node, &one.addr))
		one.err = rivet_av_resolve(node, service,
					   av->domain->info->addr_format,
					   &one.addr);
	return rivet_av_insert_src(av, &src, fi_addr, flags, context);
}

/* ---- remove, lookup, straddr ---- */

/* Checks every address first, so that a bad one changes nothing. */
static int rivet_av_remove_locked(struct rivet_av *av, const fi_addr_t *addrs,
				  size_t count,
				  struct rivet_av_listener ***eps_p)
{
	struct rivet_av_listener **eps = NULL;
	size_t i;

	RIVET_MUTEX_HELD(&av->remove_lock);
	RIVET_MUTEX_HELD(&av->lock);
	for (i = 0; i < count; i++)
		if (addrs[i] >= av->count || !av->valid[addrs[i]])
			return -FI_EINVAL;
	if (av->neps) {
		eps = malloc(av->neps * sizeof(*eps));
		if (!eps)
			return -FI_ENOMEM;
		memcpy(eps, av->eps, av->neps * sizeof(*eps));
	}
	for (i = 0; i < count; i++) {
		if (!av->valid[addrs[i]])	/* listed twice */
			continue;
		rivet_av_slot_drop(av, addrs[i]);
		if (av->shm.hdr)
			rivet_av_shm_retract(&av->shm, addrs[i]);
	}
	*eps_p = eps;
	return 0;
}

static int rivet_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr,
			   size_t count, uint64_t flags)
{
	struct rivet_av *av = to_rav(av_fid);
	struct rivet_av_listener **eps = NULL;
	size_t neps, i, j;
	int ret;

	if (flags)
		return -FI_EBADFLAGS;
	if (count && !fi_addr)
		return -FI_EINVAL;
	if (av->attr.flags & FI_READ)
		return -FI_EOPNOTSUPP;
	pthread_mutex_lock(&av->remove_lock);
	pthread_mutex_lock(&av->lock);
	neps = av->neps;
	ret = rivet_av_remove_locked(av, fi_addr, count, &eps);
	pthread_mutex_unlock(&av->lock);
	if (!ret) {
		for (i = 0; i < neps; i++)
			for (j = 0; j < count; j++)
				eps[i]->removed(eps[i], fi_addr[j]);
		pthread_mutex_lock(&av->lock);
		for (j = 0; j < count; j++)
			if (!rivet_av_slot_free(av, fi_addr[j]))
				rivet_av_slot_put(av, fi_addr[j]);
		pthread_mutex_unlock(&av->lock);
	}
	pthread_mutex_unlock(&av->remove_lock);
	free(eps);
	return ret;
}

/* fi_av(3): what does not fit is cut off; *addrlen says what it needs. */
static int rivet_av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr,
			   void *addr, size_t *addrlen)
{
	union rivet_sockaddr sa;
	size_t len;
	int ret;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	if (to_rav(av_fid)->attr.rx_ctx_bits && fi_addr != FI_ADDR_NOTAVAIL)
		fi_addr &= (1ULL << (64 - to_rav(av_fid)->attr.rx_ctx_bits)) - 1;
	ret = rivet_av_addr(to_rav(av_fid), fi_addr, &sa);
	if (ret)
		return ret;
	len = rivet_addr_len(&sa.sa);
	if (*addrlen)
		memcpy(addr, &sa, RIVET_MIN(len, *addrlen));
	*addrlen = len;
	return 0;
}

static const char *rivet_av_straddr(struct fid_av *av_fid, const void *addr,
				    char *buf, size_t *len)
{
	union rivet_sockaddr sa;
	size_t n;

	if (!addr || !len)
		return NULL;
	n = rivet_av_entry_len(addr, FI_SOCKADDR);
	if (!n)
		return NULL;
	memset(&sa, 0, sizeof(sa));
	memcpy(&sa, addr, n);
	return rivet_addr_str(&sa.sa, buf, len) ? NULL : buf;
}

static int rivet_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
			struct fid_av_set **av_set, void *context)
{
	return -FI_ENOSYS;
}

/* ---- the provider's view ---- */

int rivet_av_addr(struct rivet_av *av, fi_addr_t addr,
		  union rivet_sockaddr *out)
{
	int ret = -FI_EINVAL;

	pthread_mutex_lock(&av->lock);
	if (av->shm.hdr && (addr >= av->count || !av->valid[addr]))
		rivet_av_shm_sync(av);
	if (addr < av->count && av->valid[addr]) {
		*out = av->addrs[addr];
		ret = 0;
	}
	pthread_mutex_unlock(&av->lock);
	return ret;
}

fi_addr_t rivet_av_reverse(struct rivet_av *av, const struct sockaddr *sa)
{
	uint64_t addr;
	int ret;

	pthread_mutex_lock(&av->lock);
	ret = rivet_addr_map_lookup(&av->reverse, sa, &addr);
	if (ret && av->shm.hdr) {
		rivet_av_shm_sync(av);
		ret = rivet_addr_map_lookup(&av->reverse, sa, &addr);
	}
	pthread_mutex_unlock(&av->lock);
	return ret ? FI_ADDR_NOTAVAIL : addr;
}

int rivet_av_bind_ep(struct rivet_av *av, struct rivet_av_listener *l)
{
	struct rivet_av_listener **eps;
	size_t cap;

	pthread_mutex_lock(&av->lock);
	if (av->neps == av->eps_cap) {
		cap = av->eps_cap ? 2 * av->eps_cap : 4;
		eps = realloc(av->eps, cap * sizeof(*eps));
		if (!eps) {
			pthread_mutex_unlock(&av->lock);
			return -FI_ENOMEM;
		}
		av->eps = eps;
		av->eps_cap = cap;
	}
	av->eps[av->neps++] = l;
	atomic_fetch_add(&av->refcnt, 1);
	pthread_mutex_unlock(&av->lock);
	return 0;
}

void rivet_av_unbind_ep(struct rivet_av *av, struct rivet_av_listener *l)
{
	size_t i;

	pthread_mutex_lock(&av->remove_lock);
	pthread_mutex_lock(&av->lock);
	for (i = 0; i < av->neps; i++) {
		if (av->eps[i] != l)
			continue;
		av->eps[i] = av->eps[--av->neps];
		atomic_fetch_sub(&av->refcnt, 1);
		break;
	}
	pthread_mutex_unlock(&av->lock);
	pthread_mutex_unlock(&av->remove_lock);
}

/* ---- open, bind, close ---- */

static int rivet_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct rivet_av *av = container_of(fid, struct rivet_av, av_fid.fid);
	struct rivet_eq *eq;
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	if (!bfid || bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	eq = container_of(bfid, struct rivet_eq, eq_fid.fid);
	if (eq->fabric != av->domain->fabric)
		return -FI_EINVAL;
	pthread_mutex_lock(&av->lock);
	if (av->eq)
		ret = -FI_EINVAL;	/* one EQ for the AV's life */
	else
		av->eq = eq;
	pthread_mutex_unlock(&av->lock);
	if (!ret)
		atomic_fetch_add(&eq->refcnt, 1);
	return ret;
}

static void rivet_av_destruct(struct rivet_av *av)
{
	rivet_av_shm_close(&av->shm);
	rivet_addr_map_destruct(&av->reverse);
	pthread_mutex_destroy(&av->remove_lock);
	pthread_mutex_destroy(&av->lock);
	free(av->eps);
	free(av->valid);
	free(av->addrs);
	free(av);
}

static int rivet_av_close(struct fid *fid)
{
	struct rivet_av *av = container_of(fid, struct rivet_av, av_fid.fid);

	if (atomic_load(&av->refcnt))
		return -FI_EBUSY;
	if (av->eq)
		atomic_fetch_sub(&av->eq->refcnt, 1);
	atomic_fetch_sub(&av->domain->refcnt, 1);
	rivet_av_destruct(av);
	return 0;
}

static int rivet_av_attr_check(const struct rivet_domain *dom,
			       const struct fi_av_attr *attr)
{
	uint32_t format = dom->info->addr_format;

	if (!attr)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_TABLE &&
	    attr->type != FI_AV_MAP)
		return -FI_EINVAL;
	if (attr->flags & ~(FI_EVENT | FI_SYMMETRIC | FI_READ))
		return -FI_EBADFLAGS;
	if ((attr->flags & FI_READ) && !attr->name)
		return -FI_EINVAL;	/* read-only needs a name */
	if ((attr->flags & FI_READ) && (attr->flags & FI_EVENT))
		return -FI_EINVAL;	/* nothing to insert */
	/* fi_rx_addr: the receive context in the top bits, as many as
	 * a scalable endpoint's contexts need (rivet_rdm_sep.c) */
	if (attr->rx_ctx_bits < 0 || attr->rx_ctx_bits > RIVET_AV_RX_CTX_BITS)
		return -FI_EINVAL;
	if (format != FI_SOCKADDR && format != FI_SOCKADDR_IN &&
	    format != FI_SOCKADDR_IN6 && format != FI_FORMAT_UNSPEC)
		return -FI_EINVAL;
	return 0;
}

/* FI_SHARED_AV: the segment of the AV's name in this domain, and what it
 * holds already. */
static int rivet_av_named(struct rivet_av *av, const char *name,
			  size_t count)
{
	char shm_name[sizeof(av->shm.name)];
	int ret;

	ret = rivet_av_shm_name(av->domain->info->domain_attr->name, name,
				shm_name, sizeof(shm_name));
	if (!ret)
		ret = rivet_av_shm_open(&av->shm, shm_name, count,
					av->attr.flags & FI_READ);
	if (ret) {
		RIVET_DBG(AV, "named AV %s: %s\n", name, fi_strerror(-ret));
		return ret;
	}
	rivet_av_shm_sync(av);
	return 0;
}

static struct rivet_av *rivet_av_alloc(size_t count)
{
	struct rivet_av *av = calloc(1, sizeof(*av));

	if (!av)
		return NULL;
	av->cap = count;
	av->addrs = calloc(count, sizeof(*av->addrs));
	av->valid = calloc(count, sizeof(*av->valid));
	if (!av->addrs || !av->valid) {
		free(av->addrs);
		free(av->valid);
		free(av);
		return NULL;
	}
	pthread_mutex_init(&av->lock, NULL);
	pthread_mutex_init(&av->remove_lock, NULL);
	rivet_addr_map_construct(&av->reverse);
	atomic_init(&av->refcnt, 0);
	return av;
}

int rivet_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av_p, void *context)
{
	struct rivet_domain *dom = to_rdomain(domain);
	struct rivet_av *av;
	size_t count;
	int ret;

	if (!av_p)
		return -FI_EINVAL;
	ret = rivet_av_attr_check(dom, attr);
	if (ret)
		return ret;
	count = attr->count ? attr->count : RIVET_AV_DEFAULT_COUNT;
	av = rivet_av_alloc(RIVET_MIN(count, (size_t)RIVET_AV_MAX_INITIAL));
	if (!av)
		return -FI_ENOMEM;
	av->domain = dom;
	av->attr = *attr;
	av->attr.name = NULL;	/* the caller's string: not kept */
	if (av->attr.type == FI_AV_UNSPEC)
		av->attr.type = FI_AV_TABLE;
	if (attr->name) {
		ret = rivet_av_named(av, attr->name, count);
		if (ret) {
			rivet_av_destruct(av);
			return ret;
		}
		if (!attr->map_addr)
			attr->map_addr = av->shm.map;
	}
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &g_rivet_av_fi_ops;
	av->av_fid.ops = &g_rivet_av_ops;
	atomic_fetch_add(&dom->refcnt, 1);
	attr->type = av->attr.type;
	*av_p = &av->av_fid;
	return 0;
}

static struct fi_ops g_rivet_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_av_close,
	.bind = rivet_av_bind,
	.control = rivet_no_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_av g_rivet_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = rivet_av_insert,
	.insertsvc = rivet_av_insertsvc,
	.insertsym = rivet_av_insertsym,
	.remove = rivet_av_remove,
	.lookup = rivet_av_lookup,
	.straddr = rivet_av_straddr,
	.av_set = rivet_av_set,
#if RIVET_API_VERSION >= FI_VERSION(1, 20)
	.insert_auth_key = rivet_no_insert_auth_key,
	.lookup_auth_key = rivet_no_lookup_auth_key,
	.set_user_id = rivet_no_set_user_id,
#endif
};
