/* SPDX-License-Identifier: MIT */
/*
 * Atomic operations computed by the target's CPU (rivet_atomic_ops.c):
 * which (op, datatype, kind) triples rivet offers, and applying one to an
 * array of elements.  Pure logic: no locking; the caller serialises.
 */
#ifndef RIVET_ATOMIC_H
#define RIVET_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_atomic.h>

#include "rivet_iov.h"

/* Operand bytes an atomic may carry (compare values included). */
#define RIVET_ATOMIC_MAX_BYTES 4096

enum rivet_atomic_kind {
	RIVET_ATOMIC_WRITE,	/* fi_atomic */
	RIVET_ATOMIC_FETCH,	/* fi_fetch_atomic */
	RIVET_ATOMIC_COMPARE,	/* fi_compare_atomic */
};

/* The one element an fi_ioc array of total count 1 holds, or NULL. */
static inline const struct fi_ioc *rivet_ioc_one(const struct fi_ioc *ioc,
						 size_t n)
{
	size_t i;

	if (rivet_ioc_elems(ioc, n) != 1)
		return NULL;
	for (i = 0; !ioc[i].count; i++)
		;
	return &ioc[i];
}

/* Bytes of one element, 0 for a datatype rivet does not offer. */
size_t rivet_atomic_size(enum fi_datatype dt);

/* Whether rivet offers op on dt for this kind of call (fi_atomic(3):
 * compare ops only by fi_compare_atomic, FI_ATOMIC_READ only fetching). */
bool rivet_atomic_supported(enum fi_op op, enum fi_datatype dt,
			    enum rivet_atomic_kind kind);

/* Elements of dt that one rivet atomic of this kind carries (its operands
 * and compare values fit RIVET_ATOMIC_MAX_BYTES); 0 when dt is unknown. */
size_t rivet_atomic_max_count(enum fi_datatype dt,
			      enum rivet_atomic_kind kind);

/* With verbs atomics (FI_RIVET_NATIVE_ATOMICS): FI_SUM (fi_atomic,
 * fi_fetch_atomic) and FI_CSWAP on one 64-bit integer, nothing else. */
bool rivet_atomic_native_supported(enum fi_op op, enum fi_datatype dt,
				   enum rivet_atomic_kind kind);

static inline bool rivet_atomic_offered(bool native, enum fi_op op,
					enum fi_datatype dt,
					enum rivet_atomic_kind kind)
{
	return native ? rivet_atomic_native_supported(op, dt, kind) :
			rivet_atomic_supported(op, dt, kind);
}

static inline size_t rivet_atomic_offered_count(bool native,
						enum fi_datatype dt,
						enum rivet_atomic_kind kind)
{
	return native ? 1 : rivet_atomic_max_count(dt, kind);
}

/*
 * For each of count elements of dst: old[i] = dst[i] (when old is not
 * NULL), then dst[i] = op(dst[i], src[i], cmp[i]).  src may be NULL only
 * for FI_ATOMIC_READ, cmp is read by the compare ops only.  The buffers
 * need no alignment.  The triple must be supported.
 */
void rivet_atomic_apply(enum fi_op op, enum fi_datatype dt, void *dst,
			const void *src, const void *cmp, void *old,
			size_t count);

/*
 * MSG endpoints have only the HCA's 64-bit atomics: every op on datatypes
 * of at most 8 bytes runs as a compare-and-swap loop on the aligned word
 * that holds the element (rivet_msg_atomic.c).
 */
bool rivet_atomic_msg_supported(enum fi_op op, enum fi_datatype dt,
				enum rivet_atomic_kind kind);

/*
 * One turn of that loop: the element at byte off of word (the word's
 * current value, host byte order) gets op with src (and cmp); its old
 * value goes to old, the word it makes to *new_word.  Returns whether the
 * word changes (false: nothing to write, e.g. a compare that failed).
 */
bool rivet_atomic_word_apply(enum fi_op op, enum fi_datatype dt,
			     uint64_t word, unsigned int off, const void *src,
			     const void *cmp, void *old, uint64_t *new_word);

#endif /* RIVET_ATOMIC_H */
