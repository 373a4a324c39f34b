/* SPDX-License-Identifier: MIT */
/*
 * The shared segment of a named AV (rivet_av_shm.h).  Layout: the header,
 * then fi_addr_t map[cap], then union rivet_sockaddr addrs[cap].  An entry
 * is written, then its map slot (release), then the count (release);
 * readers load the count (acquire) and then the slots below it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rivet_av_shm.h"

static size_t rivet_av_shm_size(size_t cap)
{
	return sizeof(struct rivet_av_shm_hdr) + cap * sizeof(fi_addr_t) +
	       cap * sizeof(union rivet_sockaddr);
}

int rivet_av_shm_name(const char *domain, const char *av_name, char *out,
		      size_t len)
{
	int n;
	char *p;

	if (!av_name || !*av_name)
		return -FI_EINVAL;
	n = snprintf(out, len, "/rivet-av-%s-%s", domain ? domain : "",
		     av_name);
	if (n < 0 || (size_t)n >= len)
		return -FI_EINVAL;
	for (p = out + 1; *p; p++)
		if (*p == '/')
			*p = '_';
	return 0;
}

static void rivet_av_shm_layout(struct rivet_av_shm *s, void *base,
				size_t cap)
{
	s->hdr = base;
	s->map = (fi_addr_t *)(s->hdr + 1);
	s->addrs = (union rivet_sockaddr *)(s->map + cap);
	s->cap = cap;
}

static int rivet_av_shm_map(struct rivet_av_shm *s, int fd, size_t len,
			    bool read_only)
{
	void *base = mmap(NULL, len, PROT_READ | (read_only ? 0 : PROT_WRITE),
			  MAP_SHARED, fd, 0);

	if (base == MAP_FAILED)
		return -errno;
	s->len = len;
	s->hdr = base;
	return 0;
}

/* A new segment: every slot empty, the lock made, the magic last. */
static int rivet_av_shm_format(struct rivet_av_shm *s, size_t cap)
{
	pthread_mutexattr_t ma;
	size_t i;

	rivet_av_shm_layout(s, s->hdr, cap);
	for (i = 0; i < cap; i++)
		s->map[i] = FI_ADDR_NOTAVAIL;
	s->hdr->cap = cap;
	atomic_init(&s->hdr->count, 0);
	s->hdr->owner = getpid();
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&s->hdr->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	atomic_thread_fence(memory_order_release);
	s->hdr->magic = RIVET_AV_SHM_MAGIC;
	return 0;
}

static int rivet_av_shm_create(struct rivet_av_shm *s, size_t cap)
{
	size_t len = rivet_av_shm_size(cap);
	int fd, ret;

	fd = shm_open(s->name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len)) {
		ret = -errno;
		close(fd);
		shm_unlink(s->name);
		return ret;
	}
	ret = rivet_av_shm_map(s, fd, len, false);
	close(fd);
	if (ret) {
		shm_unlink(s->name);
		return ret;
	}
	s->creator = true;
	return rivet_av_shm_format(s, cap);
}

/* An existing segment: -FI_ENOENT when there is none or it is not (yet)
 * a whole one of ours. */
static int rivet_av_shm_attach(struct rivet_av_shm *s, bool read_only)
{
	struct rivet_av_shm_hdr *hdr;
	struct stat st;
	size_t cap;
	int fd, ret;

	fd = shm_open(s->name, read_only ? O_RDONLY : O_RDWR, 0);
	if (fd < 0)
		return errno == ENOENT ? -FI_ENOENT : -errno;
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(*hdr)) {
		close(fd);
		return -FI_ENOENT;
	}
	ret = rivet_av_shm_map(s, fd, (size_t)st.st_size, read_only);
	close(fd);
	if (ret)
		return ret;
	hdr = s->hdr;
	cap = hdr->cap;
	atomic_thread_fence(memory_order_acquire);
	if (hdr->magic != RIVET_AV_SHM_MAGIC ||
	    rivet_av_shm_size(cap) > s->len) {
		munmap(s->hdr, s->len);
		s->hdr = NULL;
		return -FI_ENOENT;
	}
	rivet_av_shm_layout(s, hdr, cap);
	return 0;
}

int rivet_av_shm_open(struct rivet_av_shm *s, const char *name, size_t cap,
		      bool read_only)
{
	int ret;

	memset(s, 0, sizeof(*s));
	if (strlen(name) >= sizeof(s->name))
		return -FI_EINVAL;
	strcpy(s->name, name);
	s->writer = !read_only;
	if (read_only)
		return rivet_av_shm_attach(s, true);
	cap = RIVET_MAX(cap, (size_t)RIVET_AV_SHM_MIN_CAP);
	ret = rivet_av_shm_create(s, cap);
	if (ret != -EEXIST)
		return ret;
	ret = rivet_av_shm_attach(s, false);
	if (!ret && kill(s->hdr->owner, 0) == 0)
		return 0;		/* a live creator's: share it */
	if (!ret) {
		munmap(s->hdr, s->len);
		s->hdr = NULL;
	}
	/* left by a process that died (or half made): make it anew */
	shm_unlink(s->name);
	return rivet_av_shm_create(s, cap);
}

void rivet_av_shm_close(struct rivet_av_shm *s)
{
	if (!s->hdr)
		return;
	munmap(s->hdr, s->len);
	if (s->creator)
		shm_unlink(s->name);
	s->hdr = NULL;
}

void rivet_av_shm_lock(struct rivet_av_shm *s)
{
	/* a writer that died holding it left nothing half done that
	 * matters: an entry counts once its map slot is set */
	if (pthread_mutex_lock(&s->hdr->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&s->hdr->lock);
}

void rivet_av_shm_unlock(struct rivet_av_shm *s)
{
	pthread_mutex_unlock(&s->hdr->lock);
}

void rivet_av_shm_publish(struct rivet_av_shm *s, size_t i,
			  const union rivet_sockaddr *sa)
{
	s->addrs[i] = *sa;
	atomic_store_explicit((_Atomic fi_addr_t *)&s->map[i], (fi_addr_t)i,
			      memory_order_release);
	if (i + 1 > rivet_av_shm_count(s))
		atomic_store_explicit(&s->hdr->count, i + 1,
				      memory_order_release);
}

void rivet_av_shm_retract(struct rivet_av_shm *s, size_t i)
{
	atomic_store_explicit((_Atomic fi_addr_t *)&s->map[i],
			      FI_ADDR_NOTAVAIL, memory_order_release);
}

bool rivet_av_shm_entry(const struct rivet_av_shm *s, size_t i,
			union rivet_sockaddr *sa)
{
	if (i >= s->cap ||
	    atomic_load_explicit((_Atomic fi_addr_t *)&s->map[i],
				 memory_order_acquire) != (fi_addr_t)i)
		return false;
	*sa = s->addrs[i];
	return true;
}
