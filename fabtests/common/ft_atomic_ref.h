/* SPDX-License-Identifier: MIT */
/*
 * The atomics tests' values and their reference: fi_atomic(3)'s
 * definitions written out once more, independently of the provider's code
 * (fi_rivet_rdm_atomic for RDM, fi_rivet_rma for MSG).
 */
#ifndef FT_ATOMIC_REF_H
#define FT_ATOMIC_REF_H

#include <complex.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rdma/fi_atomic.h>

#define AT_N 4			/* elements per sweep operation */


static const enum fi_datatype g_types[] = {
	FI_INT8, FI_UINT8, FI_INT16, FI_UINT16, FI_INT32, FI_UINT32,
	FI_INT64, FI_UINT64, FI_FLOAT, FI_DOUBLE, FI_FLOAT_COMPLEX,
	FI_DOUBLE_COMPLEX, FI_LONG_DOUBLE, FI_LONG_DOUBLE_COMPLEX,
	FI_INT128, FI_UINT128,
};

static inline size_t at_size(enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: return 1;
	case FI_INT16: case FI_UINT16: return 2;
	case FI_INT32: case FI_UINT32: case FI_FLOAT: return 4;
	case FI_INT64: case FI_UINT64: case FI_DOUBLE: return 8;
	case FI_FLOAT_COMPLEX: return sizeof(float complex);
	case FI_DOUBLE_COMPLEX: return sizeof(double complex);
	case FI_LONG_DOUBLE: return sizeof(long double);
	case FI_LONG_DOUBLE_COMPLEX: return sizeof(long double complex);
	default: return 16;	/* 128-bit integers */
	}
}

static inline bool at_is_int(enum fi_datatype dt)
{
	return dt <= FI_UINT64 || dt == FI_INT128 || dt == FI_UINT128;
}

static inline bool at_is_signed(enum fi_datatype dt)
{
	return dt == FI_INT8 || dt == FI_INT16 || dt == FI_INT32 ||
	       dt == FI_INT64 || dt == FI_INT128;
}

static inline bool at_is_cplx(enum fi_datatype dt)
{
	return dt == FI_FLOAT_COMPLEX || dt == FI_DOUBLE_COMPLEX ||
	       dt == FI_LONG_DOUBLE_COMPLEX;
}

/* Every element as a long double complex (integers exactly: the test's
 * values are small) or, for integers, as a 128-bit pattern. */
struct at_val {
	long double complex z;
	unsigned __int128 u;
};

static inline struct at_val at_load(enum fi_datatype dt, const void *p)
{
	struct at_val v = { 0 };
	__int128 s = 0;

	switch (dt) {
	case FI_INT8: s = *(const int8_t *)p; break;
	case FI_UINT8: s = *(const uint8_t *)p; break;
	case FI_INT16: s = *(const int16_t *)p; break;
	case FI_UINT16: s = *(const uint16_t *)p; break;
	case FI_INT32: s = *(const int32_t *)p; break;
	case FI_UINT32: s = *(const uint32_t *)p; break;
	case FI_INT64: s = *(const int64_t *)p; break;
	case FI_UINT64: s = *(const uint64_t *)p; break;
	case FI_INT128: memcpy(&s, p, 16); break;
	case FI_UINT128: memcpy(&s, p, 16); break;
	case FI_FLOAT: v.z = *(const float *)p; return v;
	case FI_DOUBLE: v.z = *(const double *)p; return v;
	case FI_LONG_DOUBLE: v.z = *(const long double *)p; return v;
	case FI_FLOAT_COMPLEX: v.z = *(const float complex *)p; return v;
	case FI_DOUBLE_COMPLEX: v.z = *(const double complex *)p; return v;
	default: v.z = *(const long double complex *)p; return v;
	}
	v.u = (unsigned __int128)s;
	v.z = at_is_signed(dt) ? (long double)s : (long double)v.u;
	return v;
}

static inline void at_store(enum fi_datatype dt, void *p, struct at_val v)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: *(uint8_t *)p = (uint8_t)v.u; break;
	case FI_INT16: case FI_UINT16: *(uint16_t *)p = (uint16_t)v.u; break;
	case FI_INT32: case FI_UINT32: *(uint32_t *)p = (uint32_t)v.u; break;
	case FI_INT64: case FI_UINT64: *(uint64_t *)p = (uint64_t)v.u; break;
	case FI_INT128: case FI_UINT128: memcpy(p, &v.u, 16); break;
	case FI_FLOAT: *(float *)p = (float)creall(v.z); break;
	case FI_DOUBLE: *(double *)p = (double)creall(v.z); break;
	case FI_LONG_DOUBLE: *(long double *)p = creall(v.z); break;
	case FI_FLOAT_COMPLEX: *(float complex *)p = (float complex)v.z; break;
	case FI_DOUBLE_COMPLEX:
		*(double complex *)p = (double complex)v.z;
		break;
	default: *(long double complex *)p = v.z; break;
	}
}

/* Element i of the test's initial values, operands and compare values:
 * a mix of equal, smaller, larger, zero and (signed) negative. */
static inline void at_value(enum fi_datatype dt, int which, int i, void *p)
{
	static const int v[3][AT_N] = {
		{ 10, -3, 0, 7 },	/* target before */
		{ 4, 9, 0, -7 },	/* operand */
		{ 10, 5, 1, 6 },	/* compare */
	};
	struct at_val x = { 0 };
	int k = v[which][i];

	if (!at_is_signed(dt) && at_is_int(dt) && k < 0)
		k = -k;
	x.u = (unsigned __int128)(__int128)k;
	x.z = at_is_cplx(dt) ? k + (k / 2.0L) * I : k;
	at_store(dt, p, x);
}

static inline bool at_ordered_lt(enum fi_datatype dt, struct at_val a,
			  struct at_val b)
{
	if (at_is_int(dt) && !at_is_signed(dt))
		return a.u < b.u;
	return creall(a.z) < creall(b.z);
}

static inline bool at_eq(enum fi_datatype dt, struct at_val a, struct at_val b)
{
	return at_is_int(dt) ? a.u == b.u : a.z == b.z;
}

/* The new target value, fi_atomic(3)'s definitions written out once more */
static inline struct at_val at_ref(enum fi_op op, enum fi_datatype dt,
			    struct at_val a, struct at_val b, struct at_val c)
{
	struct at_val r = a;
	bool la = at_is_int(dt) ? a.u != 0 : a.z != 0;
	bool lb = at_is_int(dt) ? b.u != 0 : b.z != 0;

	switch (op) {
	case FI_MIN: return at_ordered_lt(dt, b, a) ? b : a;
	case FI_MAX: return at_ordered_lt(dt, a, b) ? b : a;
	case FI_SUM: r.u = a.u + b.u; r.z = a.z + b.z; break;
	case FI_PROD: r.u = a.u * b.u; r.z = a.z * b.z; break;
	case FI_LOR: r.u = la || lb; r.z = r.u; break;
	case FI_LAND: r.u = la && lb; r.z = r.u; break;
	case FI_LXOR: r.u = la != lb; r.z = r.u; break;
	case FI_BOR: r.u = a.u | b.u; break;
	case FI_BAND: r.u = a.u & b.u; break;
	case FI_BXOR: r.u = a.u ^ b.u; break;
	case FI_ATOMIC_READ: break;
	case FI_ATOMIC_WRITE: return b;
	case FI_CSWAP: return at_eq(dt, c, a) ? b : a;
	case FI_CSWAP_NE: return !at_eq(dt, c, a) ? b : a;
	case FI_CSWAP_LE: return !at_ordered_lt(dt, a, c) ? b : a;
	case FI_CSWAP_LT: return at_ordered_lt(dt, c, a) ? b : a;
	case FI_CSWAP_GE: return !at_ordered_lt(dt, c, a) ? b : a;
	case FI_CSWAP_GT: return at_ordered_lt(dt, a, c) ? b : a;
	case FI_MSWAP: r.u = (b.u & c.u) | (a.u & ~c.u); break;
	default: break;
	}
	return r;
}

/* Stored and loaded again: the reference rounds (and wraps) as the
 * datatype does. */
static inline struct at_val at_norm(enum fi_datatype dt, struct at_val v)
{
	uint8_t tmp[32] = { 0 };

	at_store(dt, tmp, v);
	return at_load(dt, tmp);
}

#endif /* FT_ATOMIC_REF_H */
