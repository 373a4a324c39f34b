// SPDX-License-Identifier: MIT
/* The atomic arithmetic of the target (rivet_atomic_ops.c). */
#include <complex.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "rivet_atomic.h"

Test(atomic, sizes)
{
	cr_expect_eq(rivet_atomic_size(FI_INT8), 1);
	cr_expect_eq(rivet_atomic_size(FI_UINT16), 2);
	cr_expect_eq(rivet_atomic_size(FI_FLOAT), 4);
	cr_expect_eq(rivet_atomic_size(FI_FLOAT_COMPLEX), 8);
	cr_expect_eq(rivet_atomic_size(FI_UINT128), 16);
	cr_expect_eq(rivet_atomic_size(FI_LONG_DOUBLE), sizeof(long double));
	cr_expect_eq(rivet_atomic_size(FI_LONG_DOUBLE_COMPLEX),
		     sizeof(long double complex));
	cr_expect_eq(rivet_atomic_size(FI_VOID), 0);
	cr_expect_eq(rivet_atomic_size((enum fi_datatype)99), 0);
}

Test(atomic, supported_by_kind)
{
	cr_expect(rivet_atomic_supported(FI_SUM, FI_INT64, RIVET_ATOMIC_WRITE));
	cr_expect(rivet_atomic_supported(FI_SUM, FI_INT64, RIVET_ATOMIC_FETCH));
	cr_expect(!rivet_atomic_supported(FI_SUM, FI_INT64,
					  RIVET_ATOMIC_COMPARE));
	cr_expect(!rivet_atomic_supported(FI_ATOMIC_READ, FI_INT64,
					  RIVET_ATOMIC_WRITE));
	cr_expect(rivet_atomic_supported(FI_ATOMIC_READ, FI_INT64,
					 RIVET_ATOMIC_FETCH));
	cr_expect(rivet_atomic_supported(FI_ATOMIC_WRITE, FI_DOUBLE,
					 RIVET_ATOMIC_WRITE));
	cr_expect(rivet_atomic_supported(FI_CSWAP, FI_UINT8,
					 RIVET_ATOMIC_COMPARE));
	cr_expect(!rivet_atomic_supported(FI_CSWAP, FI_UINT8,
					  RIVET_ATOMIC_FETCH));
	cr_expect(!rivet_atomic_supported(FI_NOOP, FI_INT32,
					  RIVET_ATOMIC_WRITE));
	cr_expect(!rivet_atomic_supported(FI_SUM, FI_VOID,
					  RIVET_ATOMIC_WRITE));
}

Test(atomic, supported_by_class)
{
	cr_expect(!rivet_atomic_supported(FI_BOR, FI_FLOAT, RIVET_ATOMIC_WRITE));
	cr_expect(rivet_atomic_supported(FI_BOR, FI_UINT128,
					 RIVET_ATOMIC_WRITE));
	cr_expect(!rivet_atomic_supported(FI_MSWAP, FI_DOUBLE,
					  RIVET_ATOMIC_COMPARE));
	cr_expect(!rivet_atomic_supported(FI_MIN, FI_DOUBLE_COMPLEX,
					  RIVET_ATOMIC_WRITE));
	cr_expect(rivet_atomic_supported(FI_PROD, FI_DOUBLE_COMPLEX,
					 RIVET_ATOMIC_FETCH));
	cr_expect(rivet_atomic_supported(FI_CSWAP_NE, FI_FLOAT_COMPLEX,
					 RIVET_ATOMIC_COMPARE));
	cr_expect(!rivet_atomic_supported(FI_CSWAP_GT, FI_FLOAT_COMPLEX,
					  RIVET_ATOMIC_COMPARE));
	cr_expect(rivet_atomic_supported(FI_LXOR, FI_LONG_DOUBLE,
					 RIVET_ATOMIC_WRITE));
}

Test(atomic, int_ops_and_fetch)
{
	int32_t dst[3] = { 5, -7, 100 }, src[3] = { 3, -9, 100 }, old[3];

	rivet_atomic_apply(FI_MIN, FI_INT32, dst, src, NULL, old, 3);
	cr_expect(dst[0] == 3 && dst[1] == -9 && dst[2] == 100);
	cr_expect(old[0] == 5 && old[1] == -7 && old[2] == 100);
	rivet_atomic_apply(FI_SUM, FI_INT32, dst, src, NULL, NULL, 3);
	cr_expect(dst[0] == 6 && dst[1] == -18 && dst[2] == 200);
	rivet_atomic_apply(FI_ATOMIC_READ, FI_INT32, dst, NULL, NULL, old, 3);
	cr_expect(old[0] == 6 && old[1] == -18 && old[2] == 200);
	cr_expect(dst[0] == 6);
}

Test(atomic, int_wraps)
{
	int8_t d = 127, s = 1;
	uint64_t u = UINT64_MAX, one = 1;

	rivet_atomic_apply(FI_SUM, FI_INT8, &d, &s, NULL, NULL, 1);
	cr_expect_eq(d, -128);
	rivet_atomic_apply(FI_SUM, FI_UINT64, &u, &one, NULL, NULL, 1);
	cr_expect_eq(u, 0);
}

Test(atomic, logical_and_bitwise)
{
	uint8_t d[4] = { 0, 0, 3, 3 }, s[4] = { 0, 5, 0, 5 };
	uint8_t x[4];

	memcpy(x, d, 4);
	rivet_atomic_apply(FI_LXOR, FI_UINT8, x, s, NULL, NULL, 4);
	cr_expect(x[0] == 0 && x[1] == 1 && x[2] == 1 && x[3] == 0);
	memcpy(x, d, 4);
	rivet_atomic_apply(FI_LAND, FI_UINT8, x, s, NULL, NULL, 4);
	cr_expect(x[0] == 0 && x[1] == 0 && x[2] == 0 && x[3] == 1);
	memcpy(x, d, 4);
	rivet_atomic_apply(FI_BXOR, FI_UINT8, x, s, NULL, NULL, 4);
	cr_expect(x[3] == 6);
}

Test(atomic, compare_ops)
{
	uint32_t d = 10, s = 20, c = 10, old = 0;

	rivet_atomic_apply(FI_CSWAP, FI_UINT32, &d, &s, &c, &old, 1);
	cr_expect(d == 20 && old == 10);
	c = 19;		/* 19 < 20: swapped */
	s = 30;
	rivet_atomic_apply(FI_CSWAP_LT, FI_UINT32, &d, &s, &c, NULL, 1);
	cr_expect_eq(d, 30);
	c = 31;		/* 31 > 30 but op is LE: not swapped */
	rivet_atomic_apply(FI_CSWAP_LE, FI_UINT32, &d, &s, &c, NULL, 1);
	cr_expect_eq(d, 30);
	d = 0xf0f0;
	s = 0x0f0f;
	c = 0x00ff;
	rivet_atomic_apply(FI_MSWAP, FI_UINT32, &d, &s, &c, NULL, 1);
	cr_expect_eq(d, 0xf00f);
}

Test(atomic, reals_complex_int128)
{
	double d = 1.5, s = 2.25;
	double complex z = 1 + 2 * I, w = 3 - I;
	unsigned __int128 big = ((unsigned __int128)1 << 100), add = 5;
	char unaligned[17];

	rivet_atomic_apply(FI_PROD, FI_DOUBLE, &d, &s, NULL, NULL, 1);
	cr_expect(d == 3.375);
	rivet_atomic_apply(FI_MAX, FI_DOUBLE, &d, &s, NULL, NULL, 1);
	cr_expect(d == 3.375);
	rivet_atomic_apply(FI_PROD, FI_DOUBLE_COMPLEX, &z, &w, NULL, NULL, 1);
	cr_expect(creal(z) == 5 && cimag(z) == 5);
	memcpy(unaligned + 1, &big, sizeof(big));
	rivet_atomic_apply(FI_SUM, FI_UINT128, unaligned + 1, &add, NULL,
			   NULL, 1);
	memcpy(&big, unaligned + 1, sizeof(big));
	cr_expect(big == ((unsigned __int128)1 << 100) + 5);
}

Test(atomic, native_subset)
{
	cr_expect(rivet_atomic_native_supported(FI_SUM, FI_UINT64,
						RIVET_ATOMIC_FETCH));
	cr_expect(rivet_atomic_native_supported(FI_SUM, FI_INT64,
						RIVET_ATOMIC_WRITE));
	cr_expect(rivet_atomic_native_supported(FI_CSWAP, FI_UINT64,
						RIVET_ATOMIC_COMPARE));
	cr_expect(!rivet_atomic_native_supported(FI_SUM, FI_UINT32,
						 RIVET_ATOMIC_FETCH));
	cr_expect(!rivet_atomic_native_supported(FI_ATOMIC_READ, FI_UINT64,
						 RIVET_ATOMIC_FETCH));
	cr_expect(!rivet_atomic_native_supported(FI_CSWAP_NE, FI_UINT64,
						 RIVET_ATOMIC_COMPARE));
	cr_expect(!rivet_atomic_native_supported(FI_MIN, FI_INT64,
						 RIVET_ATOMIC_WRITE));
	cr_expect_eq(rivet_atomic_offered_count(true, FI_UINT64,
						RIVET_ATOMIC_FETCH), 1);
}

Test(atomic, msg_subset)
{
	cr_expect(rivet_atomic_msg_supported(FI_MIN, FI_INT8,
					     RIVET_ATOMIC_WRITE));
	cr_expect(rivet_atomic_msg_supported(FI_CSWAP_GT, FI_DOUBLE,
					     RIVET_ATOMIC_COMPARE));
	cr_expect(rivet_atomic_msg_supported(FI_SUM, FI_FLOAT_COMPLEX,
					     RIVET_ATOMIC_FETCH));
	cr_expect(rivet_atomic_msg_supported(FI_SUM, FI_UINT64,
					     RIVET_ATOMIC_FETCH));
	cr_expect(!rivet_atomic_msg_supported(FI_SUM, FI_INT128,
					      RIVET_ATOMIC_WRITE));
	cr_expect(!rivet_atomic_msg_supported(FI_SUM, FI_DOUBLE_COMPLEX,
					      RIVET_ATOMIC_WRITE));
	cr_expect(!rivet_atomic_msg_supported(FI_SUM, FI_LONG_DOUBLE,
					      RIVET_ATOMIC_WRITE));
	/* what the full set refuses stays refused */
	cr_expect(!rivet_atomic_msg_supported(FI_BOR, FI_FLOAT,
					      RIVET_ATOMIC_WRITE));
}

/* The compare-and-swap loop's step: one element inside a 64-bit word. */
Test(atomic, word_apply)
{
	uint64_t word = 0x1122334455667788ULL, out;
	int16_t add = 0x10, old16 = 0;
	uint32_t cmp = 0x11223344, swap = 7, old32 = 0;
	uint8_t old8 = 0, v8 = 0x99;
	uint64_t rd = 0;

	/* bytes 2..3 (host order) hold 0x5566 */
	cr_expect(rivet_atomic_word_apply(FI_SUM, FI_INT16, word, 2, &add,
					  NULL, &old16, &out));
	cr_expect_eq(old16, 0x5566);
	cr_expect_eq(out, 0x1122334455767788ULL);
	/* compare taken on the upper half */
	cr_expect(rivet_atomic_word_apply(FI_CSWAP, FI_UINT32, word, 4,
					  &swap, &cmp, &old32, &out));
	cr_expect_eq(old32, 0x11223344);
	cr_expect_eq(out, 0x0000000755667788ULL);
	/* compare not taken: nothing to write, old value still fetched */
	cmp = 1;
	cr_expect(!rivet_atomic_word_apply(FI_CSWAP, FI_UINT32, word, 4,
					   &swap, &cmp, &old32, &out));
	cr_expect_eq(out, word);
	/* a max that changes nothing writes nothing */
	cr_expect(!rivet_atomic_word_apply(FI_MIN, FI_UINT8, word, 0, &v8,
					   NULL, &old8, &out));
	cr_expect_eq(old8, 0x88);
	/* atomic read: never a write */
	cr_expect(!rivet_atomic_word_apply(FI_ATOMIC_READ, FI_UINT64, word,
					   0, NULL, NULL, &rd, &out));
	cr_expect_eq(rd, word);
}
