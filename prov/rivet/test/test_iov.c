// SPDX-License-Identifier: MIT
/* Argument checks of the data path (rivet_iov.h): what fi_msg(3),
 * fi_rma(3) and fi_atomic(3) make invalid is refused before any use. */
#include <stdint.h>

#include <criterion/criterion.h>

#include "rivet_iov.h"

static char g_buf[64];

Test(iov, valid_arrays_sum)
{
	struct iovec iov[3] = {
		{ g_buf, 10 }, { NULL, 0 }, { g_buf + 10, 20 },
	};
	size_t len = 77;

	cr_expect_eq(rivet_iov_check(iov, 3, 4, &len), 0);
	cr_expect_eq(len, 30);
	cr_expect_eq(rivet_iov_check(NULL, 0, 4, &len), 0);
	cr_expect_eq(len, 0);
}

Test(iov, null_array_with_count)
{
	size_t len = 5;

	cr_expect_eq(rivet_iov_check(NULL, 1, 4, &len), -FI_EINVAL);
	cr_expect_eq(len, 5, "output set only on success");
}

Test(iov, count_above_limit)
{
	struct iovec iov[5] = {
		{ g_buf, 1 }, { g_buf, 1 }, { g_buf, 1 }, { g_buf, 1 },
		{ g_buf, 1 },
	};
	size_t len;

	cr_expect_eq(rivet_iov_check(iov, 5, 4, &len), -FI_EINVAL);
	cr_expect_eq(rivet_iov_check(iov, 4, 4, &len), 0);
}

Test(iov, null_buffer_with_length)
{
	struct iovec iov[2] = { { g_buf, 1 }, { NULL, 8 } };
	size_t len;

	cr_expect_eq(rivet_iov_check(iov, 2, 4, &len), -FI_EINVAL);
	iov[1].iov_len = 0;	/* an empty entry may have no buffer */
	cr_expect_eq(rivet_iov_check(iov, 2, 4, &len), 0);
}

Test(iov, lengths_that_wrap)
{
	struct iovec iov[2] = { { g_buf, SIZE_MAX }, { g_buf, 2 } };
	struct iovec iov3[3] = {
		{ g_buf, SIZE_MAX / 2 + 1 }, { g_buf, SIZE_MAX / 2 + 1 },
		{ g_buf, 0 },
	};
	size_t len;

	cr_expect_eq(rivet_iov_check(iov, 2, 4, &len), -FI_EINVAL);
	cr_expect_eq(rivet_iov_check(iov3, 3, 4, &len), -FI_EINVAL);
	iov[1].iov_len = 0;
	cr_expect_eq(rivet_iov_check(iov, 2, 4, &len), 0);
	cr_expect_eq(len, SIZE_MAX);
}

Test(ioc, elems)
{
	struct fi_ioc ioc[3] = {
		{ g_buf, 2 }, { NULL, 0 }, { g_buf, 3 },
	};

	cr_expect_eq(rivet_ioc_elems(ioc, 3), 5);
	cr_expect_eq(rivet_ioc_elems(NULL, 3), 0);
	ioc[1].count = 1;	/* a count without a buffer */
	cr_expect_eq(rivet_ioc_elems(ioc, 3), SIZE_MAX);
	ioc[1] = (struct fi_ioc) { g_buf, SIZE_MAX };	/* wraps */
	cr_expect_eq(rivet_ioc_elems(ioc, 3), SIZE_MAX);
}
