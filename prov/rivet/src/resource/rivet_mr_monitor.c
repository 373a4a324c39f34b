/* SPDX-License-Identifier: MIT */
/*
 * Internal registrations (rivet_mr_get/put) and the memory monitor that
 * keeps the registration cache safe: one userfaultfd per process, whose
 * UNMAP, REMOVE and REMAP events (munmap, brk shrink, mremap,
 * madvise(MADV_DONTNEED|MADV_REMOVE)) invalidate the cached registrations
 * of the pages concerned.  Without a monitor nothing is cached.
 *
 * Why the events cannot be missed: the kernel holds a thread that unmaps
 * or discards watched pages until the monitor has read the event, and the
 * monitor reads and invalidates under g_mrm.lock, which every lookup
 * takes: a lookup that follows the munmap in program order finds the
 * entries gone.  Nothing that can free or unmap memory runs under that
 * lock (the free could need the monitor, which waits for the lock), and
 * the monitor thread never frees at all: what it invalidates goes to
 * g_mrm.zombies, deregistered by the next application thread to pass.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <utlist.h>

#include "rivet.h"
#include "rivet_mr_cache.h"

#define RIVET_MRM_EVENTS (UFFD_FEATURE_EVENT_UNMAP | \
			  UFFD_FEATURE_EVENT_REMOVE | \
			  UFFD_FEATURE_EVENT_REMAP)

struct rivet_mr_monitor {
	pthread_mutex_t lock;		/* everything below, every cache */
	int uffd;			/* -1: no monitor */
	int stop_fd;			/* eventfd: the thread ends */
	pthread_t thread;
	unsigned int users;		/* domains with a cache */
	uint64_t gen;			/* events handled */
	bool forked;			/* this is a child: hands off */
	bool atfork;			/* pthread_atfork done */
	struct rivet_mr_cache *caches;
	struct rivet_mr_entry *zombies;	/* invalidated by the thread */
};

static struct rivet_mr_monitor g_mrm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.uffd = -1,
	.stop_fd = -1,
};
/* Starting and stopping the monitor; taken before g_mrm.lock. */
static pthread_mutex_t g_mrm_start_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the monitor ---- */

static void rivet_mrm_invalidate(uintptr_t start, uintptr_t end)
{
	struct rivet_mr_cache *cache;
	struct rivet_mr_entry *dead;

	g_mrm.gen++;
	DL_FOREACH(g_mrm.caches, cache) {
		rivet_mr_cache_invalidate(cache, start, end);
		dead = rivet_mr_cache_take_dead(cache);
		if (dead)
			DL_CONCAT(g_mrm.zombies, dead);
	}
}

static void rivet_mrm_handle(const struct uffd_msg *msg)
{
	switch (msg->event) {
	case UFFD_EVENT_UNMAP:
	case UFFD_EVENT_REMOVE:
		rivet_mrm_invalidate(msg->arg.remove.start,
				     msg->arg.remove.end);
		break;
	case UFFD_EVENT_REMAP:
		rivet_mrm_invalidate(msg->arg.remap.from,
				     msg->arg.remap.from + msg->arg.remap.len);
		break;
	default:	/* no page faults: nothing is write-protected */
		break;
	}
}

static void *rivet_mrm_thread(void *arg)
{
	struct pollfd fds[2] = {
		{ .fd = g_mrm.uffd, .events = POLLIN },
		{ .fd = g_mrm.stop_fd, .events = POLLIN },
	};
	struct uffd_msg msgs[16];
	ssize_t n, i;

	(void)arg;
	for (;;) {
		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			break;
		if (fds[1].revents)
			break;
		pthread_mutex_lock(&g_mrm.lock);
		while ((n = read(g_mrm.uffd, msgs, sizeof(msgs))) > 0) {
			for (i = 0; i < n / (ssize_t)sizeof(msgs[0]); i++)
				rivet_mrm_handle(&msgs[i]);
		}
		pthread_mutex_unlock(&g_mrm.lock);
	}
	return NULL;
}

static void rivet_mrm_child(void)
{
	g_mrm.forked = true;	/* the uffd still watches the parent */
}

/* The kernel's features, from a descriptor of its own (UFFDIO_API can be
 * asked once per descriptor). */
static int rivet_mrm_uffd_open(uint64_t features, uint64_t *supported_p)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int fd;

	/* user-mode-only is what an unprivileged process may open when
	 * vm.unprivileged_userfaultfd is 0; we handle no faults anyway */
	fd = (int)syscall(SYS_userfaultfd,
			  O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, UFFDIO_API, &api)) {
		close(fd);
		return -errno;
	}
	*supported_p = api.features;
	return fd;
}

static int rivet_mrm_start(void)
{
	uint64_t features, want;
	sigset_t all, old;
	int fd, ret;

	fd = rivet_mrm_uffd_open(0, &features);
	if (fd < 0) {
		RIVET_INFO(MR, "userfaultfd: %s\n", strerror(-fd));
		return rivet_errno_to_fi(-fd);
	}
	close(fd);
	/* the watches are write-protect registrations (Linux 5.7) */
	if ((features & RIVET_MRM_EVENTS) != RIVET_MRM_EVENTS ||
	    !(features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
		RIVET_INFO(MR, "userfaultfd lacks unmap/remove/remap events "
			   "or write-protect mode\n");
		return -FI_ENOSYS;
	}
	want = RIVET_MRM_EVENTS |
	       (features & UFFD_FEATURE_WP_HUGETLBFS_SHMEM);
	fd = rivet_mrm_uffd_open(want, &features);
	if (fd < 0)
		return rivet_errno_to_fi(-fd);
	g_mrm.stop_fd = eventfd(0, EFD_CLOEXEC);
	if (g_mrm.stop_fd < 0) {
		ret = rivet_errno_to_fi(errno);
		goto close_uffd;
	}
	g_mrm.uffd = fd;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&g_mrm.thread, NULL, rivet_mrm_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		ret = rivet_errno_to_fi(-ret);
		goto close_stop;
	}
	if (!g_mrm.atfork && !pthread_atfork(NULL, NULL, rivet_mrm_child))
		g_mrm.atfork = true;
	return 0;

close_stop:
	close(g_mrm.stop_fd);
	g_mrm.stop_fd = -1;
	g_mrm.uffd = -1;
close_uffd:
	close(fd);
	return ret;
}

static void rivet_mrm_stop(void)
{
	uint64_t one = 1;

	if (write(g_mrm.stop_fd, &one, sizeof(one)) == sizeof(one))
		pthread_join(g_mrm.thread, NULL);
	close(g_mrm.stop_fd);
	close(g_mrm.uffd);	/* unwatches every range */
	g_mrm.stop_fd = g_mrm.uffd = -1;
}

/* Watches the pages of [start, end): 0, or why they cannot be (memory
 * that is not anonymous, shmem or hugetlbfs; watched by another
 * userfaultfd). */
static int rivet_mrm_watch(uintptr_t start, uintptr_t end)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	struct uffdio_register reg = {
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	reg.range.start = start & ~(page - 1);
	reg.range.len = ((end + page - 1) & ~(page - 1)) - reg.range.start;
	if (ioctl(g_mrm.uffd, UFFDIO_REGISTER, &reg))
		return -errno;
	return 0;
}

/* ---- registrations ---- */

static void rivet_mr_entries_free(struct rivet_mr_entry *list)
{
	struct rivet_mr_entry *entry, *tmp;

	LL_FOREACH_SAFE(list, entry, tmp) {
		rivet_verbs_mr_dereg(entry->mr);
		free(entry);
	}
}

/* Under g_mrm.lock: what is to be deregistered once it is released. */
static struct rivet_mr_entry *rivet_mr_take_dead(struct rivet_mr_cache *cache)
{
	struct rivet_mr_entry *dead = rivet_mr_cache_take_dead(cache);

	if (g_mrm.zombies) {
		DL_CONCAT(dead, g_mrm.zombies);
		g_mrm.zombies = NULL;
	}
	return dead;
}

/* Frees the cache's unused entries so that a registration that failed
 * for want of lockable memory can be retried; false when none were. */
static bool rivet_mr_cache_shrink(struct rivet_mr_cache *cache)
{
	struct rivet_mr_entry *dead;

	pthread_mutex_lock(&g_mrm.lock);
	rivet_mr_cache_flush_unused(cache);
	dead = rivet_mr_take_dead(cache);
	pthread_mutex_unlock(&g_mrm.lock);
	rivet_mr_entries_free(dead);
	return dead != NULL;
}

static int rivet_mr_entry_reg(struct rivet_domain *dom,
			      struct rivet_mr_entry *entry)
{
	struct ibv_mr *mr;
	int ret;

	for (;;) {
		ret = rivet_verbs_mr_reg(dom->pd, (void *)entry->start,
					 entry->end - entry->start,
					 entry->access, &mr);
		if (!ret)
			break;
		/* out of pinned memory: the cache's unused entries first */
		if ((ret != -FI_ENOMEM && ret != -FI_EAGAIN) ||
		    !dom->mr_cache || !rivet_mr_cache_shrink(dom->mr_cache))
			return ret;
	}
	atomic_fetch_add(&dom->mr_regs, 1);
	entry->mr = mr;
	entry->lkey = mr->lkey;
	entry->rkey = mr->rkey;
	return 0;
}

/* A new registration into the cache (watched first), or held uncached
 * when its pages cannot be watched or an event came while it was made. */
static void rivet_mr_cache_add(struct rivet_mr_cache *cache,
			       struct rivet_mr_entry *entry, uint64_t gen)
{
	struct rivet_mr_entry *dead = NULL;

	entry->use = 1;
	pthread_mutex_lock(&g_mrm.lock);
	if (gen == g_mrm.gen && !g_mrm.forked &&
	    !rivet_mrm_watch(entry->start, entry->end)) {
		entry->cached = true;
		rivet_mr_cache_insert(cache, entry);
		dead = rivet_mr_take_dead(cache);
	}
	pthread_mutex_unlock(&g_mrm.lock);
	rivet_mr_entries_free(dead);
}

int rivet_mr_get(struct rivet_domain *dom, void *addr, size_t len,
		 int access, bool cacheable, struct rivet_mr_entry **entry_p)
{
	struct rivet_mr_cache *cache = cacheable ? dom->mr_cache : NULL;
	struct rivet_mr_entry *entry = NULL;
	uintptr_t start = (uintptr_t)addr;
	uint64_t gen = 0;
	int ret;

	if (cache && !g_mrm.forked) {
		pthread_mutex_lock(&g_mrm.lock);
		/* a key a peer gets reaches exactly the range asked for */
		entry = access & (IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_WRITE) ?
			rivet_mr_cache_lookup_exact(cache, start,
						    start + len, access) :
			rivet_mr_cache_lookup(cache, start, start + len,
					      access);
		gen = g_mrm.gen;
		pthread_mutex_unlock(&g_mrm.lock);
		if (entry) {
			*entry_p = entry;
			return 0;
		}
	}
	entry = calloc(1, sizeof(*entry));
	if (!entry)
		return -FI_ENOMEM;
	entry->start = start;
	entry->end = start + len;
	entry->access = access;
	ret = rivet_mr_entry_reg(dom, entry);
	if (ret) {
		free(entry);
		return ret;
	}
	entry->use = 1;
	if (cache && !g_mrm.forked)
		rivet_mr_cache_add(cache, entry, gen);
	*entry_p = entry;
	return 0;
}

void rivet_mr_put(struct rivet_domain *dom, struct rivet_mr_entry *entry)
{
	struct rivet_mr_entry *dead;

	if (!entry->cached) {
		rivet_mr_entries_free(entry);
		return;
	}
	if (g_mrm.forked)
		return;		/* the parent's registration */
	pthread_mutex_lock(&g_mrm.lock);
	rivet_mr_cache_release(dom->mr_cache, entry);
	dead = rivet_mr_take_dead(dom->mr_cache);
	pthread_mutex_unlock(&g_mrm.lock);
	rivet_mr_entries_free(dead);
}

/* ---- a domain's cache ---- */

/* Whether caching may be tried, and why not. */
static bool rivet_mr_cache_wanted(void)
{
	const char *mon = g_rivet_params.mr_cache_monitor;

	if (!g_rivet_params.mr_cache_max_count ||
	    !g_rivet_params.mr_cache_max_size)
		return false;
	if (mon && strcmp(mon, "userfaultfd")) {
		if (strcmp(mon, "disabled"))
			RIVET_WARN(MR, "FI_RIVET_MR_CACHE_MONITOR=%s: unknown, "
				   "caching disabled\n", mon);
		return false;
	}
	/* an old kernel that lets a parent's write after fork move its pages
	 * away from a pinned registration, and no ibv_fork_init: a cached
	 * registration could outlive an operation into such a write */
	if (!rivet_verbs_fork_safe()) {
		RIVET_INFO(MR, "registration cache off: this kernel needs "
			   "ibv_fork_init for registrations to survive fork\n");
		return false;
	}
	return true;
}

int rivet_mr_cache_open(struct rivet_domain *dom)
{
	struct rivet_mr_cache *cache;
	int ret;

	if (!rivet_mr_cache_wanted())
		return 0;
	cache = calloc(1, sizeof(*cache));
	if (!cache)
		return -FI_ENOMEM;
	ret = rivet_mr_cache_construct(cache,
				       g_rivet_params.mr_cache_max_count,
				       g_rivet_params.mr_cache_max_size);
	if (ret)
		goto free_cache;
	pthread_mutex_lock(&g_mrm_start_lock);
	if (g_mrm.forked || (!g_mrm.users && rivet_mrm_start())) {
		pthread_mutex_unlock(&g_mrm_start_lock);
		RIVET_INFO(MR, "no memory monitor: registrations not cached\n");
		rivet_mr_cache_destruct(cache);
		free(cache);
		return 0;	/* safe without: one registration per use */
	}
	g_mrm.users++;
	pthread_mutex_lock(&g_mrm.lock);
	DL_APPEND(g_mrm.caches, cache);
	pthread_mutex_unlock(&g_mrm.lock);
	pthread_mutex_unlock(&g_mrm_start_lock);
	dom->mr_cache = cache;
	return 0;

free_cache:
	free(cache);
	return ret;
}

void rivet_mr_cache_close(struct rivet_domain *dom)
{
	struct rivet_mr_cache *cache = dom->mr_cache;
	struct rivet_mr_entry *dead;

	RIVET_INFO(MR, "registrations: %lu ibv_reg_mr\n",
		   (unsigned long)atomic_load(&dom->mr_regs));
	if (!cache || g_mrm.forked)
		return;
	RIVET_INFO(MR, "registration cache: %lu hits, %lu misses, "
		   "%lu evicted, %lu invalidated\n",
		   (unsigned long)cache->stats.hits,
		   (unsigned long)cache->stats.misses,
		   (unsigned long)cache->stats.evictions,
		   (unsigned long)cache->stats.invalidations);
	pthread_mutex_lock(&g_mrm_start_lock);
	pthread_mutex_lock(&g_mrm.lock);
	rivet_mr_cache_flush_unused(cache);
	/* entries still held belong to operations that leaked: let their
	 * own release free them */
	dead = rivet_mr_take_dead(cache);
	DL_DELETE(g_mrm.caches, cache);
	pthread_mutex_unlock(&g_mrm.lock);
	if (!--g_mrm.users)
		rivet_mrm_stop();
	pthread_mutex_unlock(&g_mrm_start_lock);
	rivet_mr_entries_free(dead);
	rivet_mr_cache_destruct(cache);
	free(cache);
	dom->mr_cache = NULL;
}

void rivet_mr_monitor_finalize(void)
{
	pthread_mutex_lock(&g_mrm_start_lock);
	if (g_mrm.users && !g_mrm.forked) {
		RIVET_WARN(MR, "%u domains with a registration cache left "
			   "open\n", g_mrm.users);
		rivet_mrm_stop();
		g_mrm.users = 0;
	}
	pthread_mutex_unlock(&g_mrm_start_lock);
}
