/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of rivet_msg_cm_data.c: the {version, len} framing of connection
 * data inside rdma_cm's padded private-data field.
 */
#include <criterion/criterion.h>

#include "rivet.h"

/* What rdma_cm hands a receiver: a connect request's field is 56 bytes. */
#define CM_FIELD 56

Test(cm_data, round_trip_all_sizes)
{
	uint8_t param[RIVET_CM_DATA_SIZE], field[CM_FIELD];
	const void *data;
	size_t len, out_len, got, i;

	for (i = 0; i < sizeof(param); i++)
		param[i] = (uint8_t)(i * 7 + 1);
	for (len = 0; len <= RIVET_CM_DATA_SIZE; len++) {
		memset(field, 0, sizeof(field));
		cr_assert_eq(rivet_cm_data_pack(param, len, field,
						sizeof(field), &out_len), 0);
		cr_assert_eq(out_len, RIVET_CM_HDR_SIZE + len);
		cr_assert_eq(field[0], RIVET_PROTO_VERSION);
		cr_assert_eq(field[1], len);
		/* the receiver sees the whole padded field */
		cr_assert_eq(rivet_cm_data_unpack(field, sizeof(field), &data,
						  &got), 0);
		cr_assert_eq(got, len);
		cr_assert_eq(data, field + RIVET_CM_HDR_SIZE);
		cr_assert(!len || !memcmp(data, param, len));
	}
}

Test(cm_data, pack_empty_without_param)
{
	uint8_t field[CM_FIELD];
	size_t out_len;

	cr_assert_eq(rivet_cm_data_pack(NULL, 0, field, sizeof(field),
					&out_len), 0);
	cr_assert_eq(out_len, RIVET_CM_HDR_SIZE);
}

Test(cm_data, pack_rejects)
{
	uint8_t param[RIVET_CM_DATA_SIZE + 1] = { 0 }, field[CM_FIELD];
	size_t out_len = 12345;

	cr_assert_eq(rivet_cm_data_pack(param, RIVET_CM_DATA_SIZE + 1, field,
					sizeof(field), &out_len), -FI_EINVAL);
	cr_assert_eq(rivet_cm_data_pack(NULL, 1, field, sizeof(field),
					&out_len), -FI_EINVAL);
	cr_assert_eq(rivet_cm_data_pack(param, 1, NULL, sizeof(field),
					&out_len), -FI_EINVAL);
	cr_assert_eq(rivet_cm_data_pack(param, 1, field, sizeof(field), NULL),
		     -FI_EINVAL);
	cr_assert_eq(rivet_cm_data_pack(param, 4, field, 5, &out_len),
		     -FI_ETOOSMALL);
	cr_assert_eq(out_len, 12345, "output untouched on error");
	cr_assert_eq(rivet_cm_data_pack(param, 4, field, 6, &out_len), 0);
	cr_assert_eq(out_len, 6);
}

static void expect_bad(const uint8_t *in, size_t in_len, const char *why)
{
	const void *data = (const void *)0x1;
	size_t len = 777;

	cr_assert_eq(rivet_cm_data_unpack(in, in_len, &data, &len), -FI_EINVAL,
		     "%s", why);
	cr_assert_eq(data, (const void *)0x1, "%s: data set on error", why);
	cr_assert_eq(len, 777, "%s: len set on error", why);
}

Test(cm_data, unpack_rejects)
{
	uint8_t field[CM_FIELD] = { RIVET_PROTO_VERSION, 3, 'a', 'b', 'c' };
	uint8_t bad[CM_FIELD];

	expect_bad(field, 0, "empty");
	expect_bad(NULL, 0, "no private data");
	expect_bad(field, 1, "short header");
	expect_bad(field, 4, "length past the data");
	memcpy(bad, field, sizeof(bad));
	bad[0] = RIVET_PROTO_VERSION + 1;
	expect_bad(bad, sizeof(bad), "other version");
	bad[0] = 0;
	expect_bad(bad, sizeof(bad), "zeroed header (not rivet)");
	memcpy(bad, field, sizeof(bad));
	bad[1] = RIVET_CM_DATA_SIZE + 1;
	expect_bad(bad, sizeof(bad), "length beyond the maximum");
	expect_bad(NULL, 5, "NULL data with a length");
}

Test(cm_data, unpack_exact_and_args)
{
	uint8_t field[] = { RIVET_PROTO_VERSION, 3, 'a', 'b', 'c' };
	const void *data;
	size_t len;

	cr_assert_eq(rivet_cm_data_unpack(field, sizeof(field), &data, &len),
		     0);
	cr_assert_eq(len, 3);
	cr_assert(!memcmp(data, "abc", 3));
	cr_assert_eq(rivet_cm_data_unpack(field, sizeof(field), NULL, &len),
		     -FI_EINVAL);
	cr_assert_eq(rivet_cm_data_unpack(field, sizeof(field), &data, NULL),
		     -FI_EINVAL);
}
