/* SPDX-License-Identifier: MIT */
/*
 * Event queues: an rdma_cm event channel whose events rivet_msg_cm.c turns into
 * EQ entries, user events from fi_eq_write, FIFOs of events and errors, and
 * the EQ's wait object (the channel fd plus an eventfd).
 */
#include <stdlib.h>

#include "rivet.h"
#include "rivet_set.h"

static struct fi_ops g_rivet_eq_fi_ops;
static struct fi_ops_eq g_rivet_eq_ops;
static void rivet_eq_destruct(struct rivet_eq *eq);

static bool rivet_eq_waitable(const struct rivet_eq *eq)
{
	return eq->wait.epfd >= 0;
}

/* ---- events ---- */

static void rivet_eq_list_append(struct rivet_eq_event **head_p,
				 struct rivet_eq_event **tail_p,
				 struct rivet_eq_event *ev)
{
	ev->next = NULL;
	if (*tail_p)
		(*tail_p)->next = ev;
	else
		*head_p = ev;
	*tail_p = ev;
}

static struct rivet_eq_event *rivet_eq_list_pop(struct rivet_eq_event **head_p,
						struct rivet_eq_event **tail_p)
{
	struct rivet_eq_event *ev = *head_p;

	if (ev) {
		*head_p = ev->next;
		if (!*head_p)
			*tail_p = NULL;
	}
	return ev;
}

/* A connection request nobody read is refused, so the peer hears of it. */
static void rivet_eq_event_free(struct rivet_eq_event *ev)
{
	struct rivet_connreq *req;

	if (!ev)
		return;
	if (ev->info) {
		if (ev->info->handle &&
		    ev->info->handle->fclass == FI_CLASS_CONNREQ) {
			req = container_of(ev->info->handle,
					   struct rivet_connreq, handle);
			rivet_verbs_cm_refuse(req->id);
			free(req);
			ev->info->handle = NULL;
		}
		fi_freeinfo(ev->info);
	}
	free(ev);
}

void rivet_eq_push(struct rivet_eq *eq, struct rivet_eq_event *ev)
{
	pthread_mutex_lock(&eq->lock);
	if (ev->is_err)
		rivet_eq_list_append(&eq->err_head, &eq->err_tail, ev);
	else
		rivet_eq_list_append(&eq->head, &eq->tail, ev);
	eq->count++;
	pthread_mutex_unlock(&eq->lock);
	if (rivet_eq_waitable(eq))
		rivet_wait_signal(&eq->wait);
}

/*
 * Handles rdma_cm events until the channel is empty.  progress_lock keeps
 * two readers from pushing one id's events out of order; eq->lock is not
 * held, as the handler pushes.
 */
int rivet_eq_progress(struct rivet_eq *eq)
{
	rivet_eq_cm_handler_fn handler;
	struct rdma_cm_event *cm;
	int n = 0, ret;

	pthread_mutex_lock(&eq->progress_lock);
	while (!(ret = rivet_verbs_cm_event_get(eq->channel, &cm))) {
		pthread_mutex_lock(&eq->lock);
		handler = eq->cm_handler;
		pthread_mutex_unlock(&eq->lock);
		if (handler)
			handler(eq, cm);
		else	/* no id of an endpoint's: cannot happen */
			rivet_verbs_cm_event_ack(cm);
		n++;
	}
	pthread_mutex_unlock(&eq->progress_lock);
	return ret == -FI_EAGAIN ? n : ret;
}

void rivet_eq_set_cm_handler(struct rivet_eq *eq,
			     rivet_eq_cm_handler_fn handler)
{
	pthread_mutex_lock(&eq->lock);
	eq->cm_handler = handler;
	pthread_mutex_unlock(&eq->lock);
}

/* ---- fi_eq_read, fi_eq_readerr, fi_eq_write ---- */

static bool rivet_eq_event_is_cm(const struct rivet_eq_event *ev)
{
	if (ev->verbatim)
		return false;
	return ev->info || ev->event == FI_CONNREQ ||
	       ev->event == FI_CONNECTED || ev->event == FI_SHUTDOWN;
}

/*
 * CM events become a struct fi_eq_cm_entry followed by as much of the
 * private data as fits (fi_eq(3): the data is "limited to the buffer space
 * provided"); other events are copied as they were stored.
 */
static ssize_t rivet_eq_event_copy(const struct rivet_eq_event *ev, void *buf,
				   size_t len)
{
	struct fi_eq_cm_entry *cm = buf;
	size_t n;

	if (!rivet_eq_event_is_cm(ev)) {
		if (len < ev->data_len || (ev->data_len && !buf))
			return -FI_ETOOSMALL;
		if (ev->data_len)
			memcpy(buf, ev->data, ev->data_len);
		return (ssize_t)ev->data_len;
	}
	if (!buf || len < sizeof(*cm))
		return -FI_ETOOSMALL;
	cm->fid = ev->entry.fid;
	cm->info = ev->info;
	n = RIVET_MIN(ev->data_len, len - sizeof(*cm));
	if (n)
		memcpy(cm->data, ev->data, n);
	return (ssize_t)(sizeof(*cm) + n);
}

static ssize_t rivet_eq_read(struct fid_eq *eq_fid, uint32_t *event,
			     void *buf, size_t len, uint64_t flags)
{
	struct rivet_eq *eq = to_req(eq_fid);
	struct rivet_eq_event *ev = NULL;
	ssize_t ret;

	ret = rivet_eq_progress(eq);
	pthread_mutex_lock(&eq->lock);
	if (eq->err_head) {
		ret = -FI_EAVAIL;
	} else if (!eq->head) {
		ret = ret < 0 ? ret : -FI_EAGAIN;
	} else {
		ret = rivet_eq_event_copy(eq->head, buf, len);
		if (ret >= 0 && event)
			*event = eq->head->event;
		if (ret >= 0 && !(flags & FI_PEEK)) {
			ev = rivet_eq_list_pop(&eq->head, &eq->tail);
			ev->info = NULL;	/* the reader owns it now */
			eq->count--;
		}
	}
	pthread_mutex_unlock(&eq->lock);
	free(ev);
	return ret;
}

/*
 * err_data: copied into the caller's buffer when it brings one; otherwise
 * it points into the event itself, which the EQ keeps (eq->err_data) until
 * the next readerr or fi_close.
 */
static void rivet_eq_err_fill(struct rivet_eq_event *ev,
			      struct fi_eq_err_entry *buf)
{
	void *user_data = buf->err_data;
	size_t user_size = buf->err_data_size;

	*buf = ev->entry;
	buf->err_data = NULL;
	buf->err_data_size = 0;
	if (user_data && user_size) {
		buf->err_data = user_data;
		buf->err_data_size = RIVET_MIN(user_size, ev->data_len);
		if (buf->err_data_size)
			memcpy(user_data, ev->data, buf->err_data_size);
	} else if (ev->data_len) {
		buf->err_data = ev->data;
		buf->err_data_size = ev->data_len;
	}
}

static ssize_t rivet_eq_readerr(struct fid_eq *eq_fid,
				struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct rivet_eq *eq = to_req(eq_fid);
	struct rivet_eq_event *ev, *old = NULL;

	if (!buf)
		return -FI_EINVAL;
	rivet_eq_progress(eq);
	pthread_mutex_lock(&eq->lock);
	ev = rivet_eq_list_pop(&eq->err_head, &eq->err_tail);
	if (ev) {
		eq->count--;
		rivet_eq_err_fill(ev, buf);
		old = eq->err_data;
		eq->err_data = ev;
	}
	pthread_mutex_unlock(&eq->lock);
	rivet_eq_event_free(old);
	return ev ? (ssize_t)sizeof(*buf) : -FI_EAGAIN;
}

/* User events are kept as the bytes given and read back the same way. */
static ssize_t rivet_eq_write(struct fid_eq *eq_fid, uint32_t event,
			      const void *buf, size_t len, uint64_t flags)
{
	struct rivet_eq *eq = to_req(eq_fid);
	struct rivet_eq_event *ev;

	if (!(eq->attr.flags & FI_WRITE))
		return -FI_EINVAL;
	if ((len && !buf) || len > sizeof(ev->data))
		return -FI_EINVAL;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return -FI_ENOMEM;
	ev->event = event;
	ev->verbatim = true;
	if (len)
		memcpy(ev->data, buf, len);
	ev->data_len = len;
	rivet_eq_push(eq, ev);
	return (ssize_t)len;
}

/* prov_errno is an rdma_cm event with its status, or an errno: see
 * rivet_eq_err.c. */
static const char *rivet_eq_strerror(struct fid_eq *eq_fid, int prov_errno,
				     const void *err_data, char *buf,
				     size_t len)
{
	static __thread char tls_buf[160];

	if (buf && len)
		return rivet_cm_err_str(prov_errno, buf, len);
	return rivet_cm_err_str(prov_errno, tls_buf, sizeof(tls_buf));
}

/* ---- blocking ---- */

/* fi_eq(3): sread is invalid with FI_WAIT_NONE; we answer -FI_EINVAL. */
static ssize_t rivet_eq_sread(struct fid_eq *eq_fid, uint32_t *event,
			      void *buf, size_t len, int timeout,
			      uint64_t flags)
{
	struct rivet_eq *eq = to_req(eq_fid);
	uint64_t deadline = rivet_wait_deadline(timeout);
	ssize_t ret;
	int left;

	if (!rivet_eq_waitable(eq))
		return -FI_EINVAL;
	for (;;) {
		ret = rivet_eq_read(eq_fid, event, buf, len, flags);
		if (ret != -FI_EAGAIN)
			return ret;
		left = rivet_wait_remaining(deadline);
		if (!left)
			return -FI_EAGAIN;
		ret = rivet_wait_fd(&eq->wait, left);
		if (ret && ret != -FI_EAGAIN)
			return ret;
		rivet_wait_drain_signal(&eq->wait);
	}
}

/* Every push signals after the drain, so an empty queue is safe to wait on. */
int rivet_eq_trywait(struct rivet_eq *eq)
{
	bool pending;
	int ret;

	if (!rivet_eq_waitable(eq))
		return -FI_EINVAL;
	rivet_wait_drain_signal(&eq->wait);
	ret = rivet_eq_progress(eq);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&eq->lock);
	pending = eq->head || eq->err_head;
	pthread_mutex_unlock(&eq->lock);
	return pending ? -FI_EAGAIN : 0;
}

static int rivet_eq_control(struct fid *fid, int command, void *arg)
{
	struct rivet_eq *eq = to_req(container_of(fid, struct fid_eq, fid));

	return rivet_wait_control(&eq->wait, command, arg);
}

/* ---- open and close ---- */

static int rivet_eq_attr_check(const struct fi_eq_attr *attr)
{
	switch (attr->wait_obj) {
	case FI_WAIT_SET:
		if (!attr->wait_set)
			return -FI_EINVAL;
		break;
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		break;
	default:
		return -FI_ENOSYS;
	}
	if (attr->flags & ~(FI_WRITE | FI_AFFINITY))
		return -FI_EBADFLAGS;
	return 0;
}

/* Endpoints migrate their rdma_cm ids onto this channel. */
static int rivet_eq_channel_create(struct rivet_eq *eq)
{
	int ret;

	ret = rivet_verbs_cm_channel_create(&eq->channel);
	if (ret)
		return ret;
	ret = rivet_wait_nonblock(eq->channel->fd);
	if (ret) {
		rivet_verbs_cm_channel_destroy(eq->channel);
		eq->channel = NULL;
	}
	return ret;
}

static int rivet_eq_construct(struct rivet_eq *eq, struct rivet_fabric *fabric,
			      const struct fi_eq_attr *attr)
{
	int ret;

	eq->fabric = fabric;
	eq->attr = *attr;
	if (eq->attr.wait_obj == FI_WAIT_UNSPEC)
		eq->attr.wait_obj = FI_WAIT_FD;
	eq->wait.epfd = eq->wait.efd = -1;
	ret = rivet_eq_channel_create(eq);
	if (ret)
		return ret;
	if (eq->attr.wait_obj != FI_WAIT_NONE) {
		ret = rivet_wait_construct(&eq->wait);
		if (!ret)
			ret = rivet_wait_add_fd(&eq->wait, eq->channel->fd);
		if (ret)
			goto err_wait;
	}
	pthread_mutex_init(&eq->lock, NULL);
	pthread_mutex_init(&eq->progress_lock, NULL);
	atomic_init(&eq->refcnt, 0);
	return 0;

err_wait:
	rivet_wait_destruct(&eq->wait);
	rivet_verbs_cm_channel_destroy(eq->channel);
	return ret;
}

int rivet_eq_open(struct fid_fabric *fabric_fid, struct fi_eq_attr *attr,
		  struct fid_eq **eq_p, void *context)
{
	struct rivet_fabric *fabric = to_rfabric(fabric_fid);
	struct rivet_eq *eq;
	int ret;

	if (!attr || !eq_p)
		return -FI_EINVAL;
	ret = rivet_eq_attr_check(attr);
	if (ret)
		return ret;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	ret = rivet_eq_construct(eq, fabric, attr);
	if (ret) {
		free(eq);
		return ret;
	}
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &g_rivet_eq_fi_ops;
	eq->eq_fid.ops = &g_rivet_eq_ops;
	if (eq->attr.wait_obj == FI_WAIT_SET) {
		ret = rivet_waitset_attach(eq->attr.wait_set, fabric,
					   &eq->eq_fid.fid, &eq->wait);
		if (ret) {
			rivet_eq_destruct(eq);
			free(eq);
			return ret;
		}
	}
	atomic_fetch_add(&fabric->refcnt, 1);
	*eq_p = &eq->eq_fid;
	return 0;
}

static void rivet_eq_flush(struct rivet_eq *eq)
{
	struct rivet_eq_event *ev;

	while ((ev = rivet_eq_list_pop(&eq->head, &eq->tail)))
		rivet_eq_event_free(ev);
	while ((ev = rivet_eq_list_pop(&eq->err_head, &eq->err_tail)))
		rivet_eq_event_free(ev);
	rivet_eq_event_free(eq->err_data);
	eq->err_data = NULL;
	eq->count = 0;
}

static void rivet_eq_destruct(struct rivet_eq *eq)
{
	rivet_eq_flush(eq);
	rivet_wait_destruct(&eq->wait);
	rivet_verbs_cm_channel_destroy(eq->channel);
	pthread_mutex_destroy(&eq->progress_lock);
	pthread_mutex_destroy(&eq->lock);
}

static int rivet_eq_close(struct fid *fid)
{
	struct rivet_eq *eq = to_req(container_of(fid, struct fid_eq, fid));

	if (atomic_load(&eq->refcnt))
		return -FI_EBUSY;
	if (eq->attr.wait_obj == FI_WAIT_SET)
		rivet_waitset_detach(eq->attr.wait_set, fid, &eq->wait);
	rivet_eq_destruct(eq);
	atomic_fetch_sub(&eq->fabric->refcnt, 1);
	free(eq);
	return 0;
}

static struct fi_ops g_rivet_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = rivet_eq_close,
	.bind = rivet_no_bind,
	.control = rivet_eq_control,
	.ops_open = rivet_no_ops_open,
	.tostr = rivet_no_tostr,
	.ops_set = rivet_no_ops_set,
};

static struct fi_ops_eq g_rivet_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = rivet_eq_read,
	.readerr = rivet_eq_readerr,
	.write = rivet_eq_write,
	.sread = rivet_eq_sread,
	.strerror = rivet_eq_strerror,
};
