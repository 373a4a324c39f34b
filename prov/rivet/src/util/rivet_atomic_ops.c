/* SPDX-License-Identifier: MIT */
/*
 * The arithmetic of rivet's atomics (see rivet_atomic.h): one function
 * per datatype, made by three macros, for integers (every op; sums and
 * products wrap, computed unsigned), reals (no bitwise ops, no MSWAP) and
 * complex numbers (sum, product, read, write, CSWAP, CSWAP_NE).
 */
#include <complex.h>
#include <stdint.h>
#include <string.h>

#include "rivet_atomic.h"


enum rivet_atomic_class { RIVET_AC_NONE, RIVET_AC_INT, RIVET_AC_REAL,
			  RIVET_AC_CPLX };

static enum rivet_atomic_class rivet_atomic_class(enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: case FI_INT16: case FI_UINT16:
	case FI_INT32: case FI_UINT32: case FI_INT64: case FI_UINT64:
	case FI_INT128: case FI_UINT128:
		return RIVET_AC_INT;
	case FI_FLOAT: case FI_DOUBLE: case FI_LONG_DOUBLE:
		return RIVET_AC_REAL;
	case FI_FLOAT_COMPLEX: case FI_DOUBLE_COMPLEX:
	case FI_LONG_DOUBLE_COMPLEX:
		return RIVET_AC_CPLX;
	default:
		return RIVET_AC_NONE;
	}
}

size_t rivet_atomic_size(enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: return 1;
	case FI_INT16: case FI_UINT16: return 2;
	case FI_INT32: case FI_UINT32: case FI_FLOAT: return 4;
	case FI_INT64: case FI_UINT64: case FI_DOUBLE:
	case FI_FLOAT_COMPLEX: return 8;
	case FI_INT128: case FI_UINT128: case FI_DOUBLE_COMPLEX:
	case FI_LONG_DOUBLE: return 16;
	case FI_LONG_DOUBLE_COMPLEX: return 32;
	default: return 0;
	}
}

size_t rivet_atomic_max_count(enum fi_datatype dt,
			      enum rivet_atomic_kind kind)
{
	size_t size = rivet_atomic_size(dt);

	if (!size)
		return 0;
	return RIVET_ATOMIC_MAX_BYTES /
	       (size * (kind == RIVET_ATOMIC_COMPARE ? 2 : 1));
}

bool rivet_atomic_native_supported(enum fi_op op, enum fi_datatype dt,
				   enum rivet_atomic_kind kind)
{
	if (dt != FI_INT64 && dt != FI_UINT64)
		return false;
	return (op == FI_SUM && kind != RIVET_ATOMIC_COMPARE) ||
	       (op == FI_CSWAP && kind == RIVET_ATOMIC_COMPARE);
}

bool rivet_atomic_supported(enum fi_op op, enum fi_datatype dt,
			    enum rivet_atomic_kind kind)
{
	enum rivet_atomic_class c = rivet_atomic_class(dt);
	bool compare_op = op >= FI_CSWAP && op <= FI_MSWAP;

	if (c == RIVET_AC_NONE || (unsigned int)op >= FI_ATOMIC_OP_LAST)
		return false;
	if ((kind == RIVET_ATOMIC_COMPARE) != compare_op)
		return false;
	if (op == FI_ATOMIC_READ && kind != RIVET_ATOMIC_FETCH)
		return false;
	switch (op) {
	case FI_MIN: case FI_MAX: case FI_LOR: case FI_LAND: case FI_LXOR:
	case FI_CSWAP_LE: case FI_CSWAP_LT: case FI_CSWAP_GE:
	case FI_CSWAP_GT:
		return c != RIVET_AC_CPLX;
	case FI_BOR: case FI_BAND: case FI_BXOR: case FI_MSWAP:
		return c == RIVET_AC_INT;
	default:
		return true;
	}
}

/* The ops every class has: old value out, the new one computed into r. */
#define RIVET_ATOMIC_COMMON(T)						\
	case FI_ATOMIC_READ: continue;					\
	case FI_ATOMIC_WRITE: r = b; break;				\
	case FI_CSWAP: if (c == a) r = b; break;			\
	case FI_CSWAP_NE: if (c != a) r = b; break;

#define RIVET_ATOMIC_ORDERED						\
	case FI_MIN: r = b < a ? b : a; break;				\
	case FI_MAX: r = b > a ? b : a; break;				\
	case FI_LOR: r = a || b; break;					\
	case FI_LAND: r = a && b; break;				\
	case FI_LXOR: r = (a && !b) || (!a && b); break;		\
	case FI_CSWAP_LE: if (c <= a) r = b; break;			\
	case FI_CSWAP_LT: if (c < a) r = b; break;			\
	case FI_CSWAP_GE: if (c >= a) r = b; break;			\
	case FI_CSWAP_GT: if (c > a) r = b; break;

#define RIVET_ATOMIC_LOOP_BEGIN(T)					\
	uint8_t *d = dst;						\
	const uint8_t *s = src, *k = cmp;				\
	uint8_t *o = old;						\
	size_t i;							\
									\
	for (i = 0; i < count; i++) {					\
		T a, b = 0, c = 0, r;					\
									\
		memcpy(&a, d + i * sizeof(T), sizeof(T));		\
		if (o)							\
			memcpy(o + i * sizeof(T), &a, sizeof(T));	\
		if (s)							\
			memcpy(&b, s + i * sizeof(T), sizeof(T));	\
		if (k)							\
			memcpy(&c, k + i * sizeof(T), sizeof(T));	\
		r = a;							\
		switch (op) {

#define RIVET_ATOMIC_LOOP_END(T)					\
		default: continue;					\
		}							\
		memcpy(d + i * sizeof(T), &r, sizeof(T));		\
	}

#define RIVET_ATOMIC_INT(name, T, U)					\
static void name(enum fi_op op, void *dst, const void *src,		\
		 const void *cmp, void *old, size_t count)		\
{									\
	RIVET_ATOMIC_LOOP_BEGIN(T)					\
	RIVET_ATOMIC_COMMON(T)						\
	RIVET_ATOMIC_ORDERED						\
	case FI_SUM: r = (T)((U)a + (U)b); break;			\
	case FI_PROD: r = (T)((U)a * (U)b); break;			\
	case FI_BOR: r = a | b; break;					\
	case FI_BAND: r = a & b; break;					\
	case FI_BXOR: r = a ^ b; break;					\
	case FI_MSWAP: r = (b & c) | (a & ~c); break;			\
	RIVET_ATOMIC_LOOP_END(T)					\
}

#define RIVET_ATOMIC_REAL(name, T)					\
static void name(enum fi_op op, void *dst, const void *src,		\
		 const void *cmp, void *old, size_t count)		\
{									\
	RIVET_ATOMIC_LOOP_BEGIN(T)					\
	RIVET_ATOMIC_COMMON(T)						\
	RIVET_ATOMIC_ORDERED						\
	case FI_SUM: r = a + b; break;					\
	case FI_PROD: r = a * b; break;					\
	RIVET_ATOMIC_LOOP_END(T)					\
}

#define RIVET_ATOMIC_CPLX(name, T)					\
static void name(enum fi_op op, void *dst, const void *src,		\
		 const void *cmp, void *old, size_t count)		\
{									\
	RIVET_ATOMIC_LOOP_BEGIN(T)					\
	RIVET_ATOMIC_COMMON(T)						\
	case FI_SUM: r = a + b; break;					\
	case FI_PROD: r = a * b; break;					\
	RIVET_ATOMIC_LOOP_END(T)					\
}

RIVET_ATOMIC_INT(rivet_atomic_i8, int8_t, uint8_t)
RIVET_ATOMIC_INT(rivet_atomic_u8, uint8_t, uint8_t)
RIVET_ATOMIC_INT(rivet_atomic_i16, int16_t, uint16_t)
RIVET_ATOMIC_INT(rivet_atomic_u16, uint16_t, uint16_t)
RIVET_ATOMIC_INT(rivet_atomic_i32, int32_t, uint32_t)
RIVET_ATOMIC_INT(rivet_atomic_u32, uint32_t, uint32_t)
RIVET_ATOMIC_INT(rivet_atomic_i64, int64_t, uint64_t)
RIVET_ATOMIC_INT(rivet_atomic_u64, uint64_t, uint64_t)
RIVET_ATOMIC_INT(rivet_atomic_i128, __int128, unsigned __int128)
RIVET_ATOMIC_INT(rivet_atomic_u128, unsigned __int128, unsigned __int128)
RIVET_ATOMIC_REAL(rivet_atomic_f, float)
RIVET_ATOMIC_REAL(rivet_atomic_d, double)
RIVET_ATOMIC_REAL(rivet_atomic_ld, long double)
RIVET_ATOMIC_CPLX(rivet_atomic_fc, float complex)
RIVET_ATOMIC_CPLX(rivet_atomic_dc, double complex)
RIVET_ATOMIC_CPLX(rivet_atomic_ldc, long double complex)

void rivet_atomic_apply(enum fi_op op, enum fi_datatype dt, void *dst,
			const void *src, const void *cmp, void *old,
			size_t count)
{
	static void (*const fns[])(enum fi_op, void *, const void *,
				   const void *, void *, size_t) = {
		[FI_INT8] = rivet_atomic_i8, [FI_UINT8] = rivet_atomic_u8,
		[FI_INT16] = rivet_atomic_i16, [FI_UINT16] = rivet_atomic_u16,
		[FI_INT32] = rivet_atomic_i32, [FI_UINT32] = rivet_atomic_u32,
		[FI_INT64] = rivet_atomic_i64, [FI_UINT64] = rivet_atomic_u64,
		[FI_INT128] = rivet_atomic_i128,
		[FI_UINT128] = rivet_atomic_u128,
		[FI_FLOAT] = rivet_atomic_f, [FI_DOUBLE] = rivet_atomic_d,
		[FI_LONG_DOUBLE] = rivet_atomic_ld,
		[FI_FLOAT_COMPLEX] = rivet_atomic_fc,
		[FI_DOUBLE_COMPLEX] = rivet_atomic_dc,
		[FI_LONG_DOUBLE_COMPLEX] = rivet_atomic_ldc,
	};

	if ((size_t)dt < sizeof(fns) / sizeof(fns[0]) && fns[dt])
		fns[dt](op, dst, src, cmp, old, count);
}

bool rivet_atomic_msg_supported(enum fi_op op, enum fi_datatype dt,
				enum rivet_atomic_kind kind)
{
	return rivet_atomic_supported(op, dt, kind) &&
	       rivet_atomic_size(dt) <= sizeof(uint64_t);
}

bool rivet_atomic_word_apply(enum fi_op op, enum fi_datatype dt,
			     uint64_t word, unsigned int off, const void *src,
			     const void *cmp, void *old, uint64_t *new_word)
{
	uint8_t bytes[sizeof(uint64_t)];

	/* the target's memory, in the host's byte order, is what the HCA's
	 * 64-bit atomics read and write */
	memcpy(bytes, &word, sizeof(bytes));
	rivet_atomic_apply(op, dt, bytes + off, src, cmp, old, 1);
	memcpy(new_word, bytes, sizeof(*new_word));
	return *new_word != word;
}
