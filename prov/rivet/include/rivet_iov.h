/* SPDX-License-Identifier: MIT */
/*
 * Argument checks of the data path: the iovec and fi_ioc arrays that
 * fi_msg(3), fi_tagged(3), fi_rma(3) and fi_atomic(3) take.  Inline: each
 * walks the array its caller walks anyway, with one compare more per entry.
 * And the copy of a small payload (rivet_copy_small).
 */
#ifndef RIVET_IOV_H
#define RIVET_IOV_H

#include <stddef.h>
#include <string.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fi_atomic.h>
#include <stdbool.h>
#include <sys/uio.h>

#include <rdma/fi_errno.h>

/*
 * The total length of count iovs, in *len_p: 0 or -FI_EINVAL when the
 * array is NULL with a count, longer than limit, holds a NULL buffer with
 * a non-zero length, or its lengths add up past SIZE_MAX.
 */
static inline int rivet_iov_check(const struct iovec *iov, size_t count,
				  size_t limit, size_t *len_p)
{
	size_t i, len = 0;

	if (count == 1 && iov && limit) {	/* the common case */
		if (iov->iov_len && !iov->iov_base)
			return -FI_EINVAL;
		*len_p = iov->iov_len;
		return 0;
	}
	if (count > limit || (count && !iov))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (iov[i].iov_len && !iov[i].iov_base)
			return -FI_EINVAL;
		if (len + iov[i].iov_len < len)
			return -FI_EINVAL;
		len += iov[i].iov_len;
	}
	*len_p = len;
	return 0;
}

/*
 * MSG and DGRAM receives (every buffer needs a descriptor there): an
 * entry with neither an address nor a descriptor is an empty buffer,
 * whatever length it claims (such a receive takes a zero-byte message; a
 * longer one completes in error).  A NULL address with a descriptor stays
 * invalid.  Returns iov, or tmp (max entries) holding the copy when some
 * entry changed.
 */
static inline const struct iovec *rivet_recv_iov(const struct iovec *iov,
						 void **desc, size_t count,
						 struct iovec *tmp,
						 size_t max)
{
	size_t i;
	bool none = false;

	for (i = 0; iov && i < count; i++)
		none |= !iov[i].iov_base && iov[i].iov_len &&
			(!desc || !desc[i]);
	if (!none || count > max)
		return iov;
	for (i = 0; i < count; i++) {
		tmp[i] = iov[i];
		if (!tmp[i].iov_base && (!desc || !desc[i]))
			tmp[i].iov_len = 0;
	}
	return tmp;
}

/* Elements in an fi_ioc array; SIZE_MAX (more than any operation takes)
 * when an entry with a count has no buffer or the counts wrap. */
static inline size_t rivet_ioc_elems(const struct fi_ioc *ioc, size_t n)
{
	size_t i, total = 0;

	for (i = 0; ioc && i < n; i++) {
		if (ioc[i].count && !ioc[i].addr)
			return SIZE_MAX;
		if (total + ioc[i].count < total)
			return SIZE_MAX;
		total += ioc[i].count;
	}
	return total;
}

/* A copy of a few bytes (an 8 B message's) without the library call:
 * two overlapping fixed-size moves, as memcpy itself does them. */
static inline void rivet_copy_small(uint8_t *dst, const uint8_t *src,
				    size_t n)
{
	if (n >= 8 && n <= 16) {
		memcpy(dst, src, 8);
		memcpy(dst + n - 8, src + n - 8, 8);
	} else if (n >= 4 && n < 8) {
		memcpy(dst, src, 4);
		memcpy(dst + n - 4, src + n - 4, 4);
	} else if (n) {
		memcpy(dst, src, n);
	}
}

#endif /* RIVET_IOV_H */
