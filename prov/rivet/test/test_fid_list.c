/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the member lists of poll sets and wait sets
 * (rivet_fid_list.c).
 */
#include <criterion/criterion.h>

#include "rivet_set.h"

Test(fid_list, insert_contains_remove)
{
	struct fid f[9];
	struct rivet_fid_list list;
	size_t i;

	rivet_fid_list_construct(&list);
	cr_assert_not(rivet_fid_list_contains(&list, &f[0]));
	cr_assert_eq(rivet_fid_list_remove(&list, &f[0]), -FI_EINVAL);
	for (i = 0; i < 9; i++)			/* grows past 4 and 8 */
		cr_assert_eq(rivet_fid_list_insert(&list, &f[i]), 0);
	cr_assert_eq(list.n, 9);
	for (i = 0; i < 9; i++)
		cr_assert(rivet_fid_list_contains(&list, &f[i]));
	cr_assert_eq(rivet_fid_list_remove(&list, &f[4]), 0);
	cr_assert_eq(list.n, 8);
	cr_assert_not(rivet_fid_list_contains(&list, &f[4]));
	for (i = 0; i < 9; i++)			/* the others stay */
		if (i != 4)
			cr_assert(rivet_fid_list_contains(&list, &f[i]));
	cr_assert_eq(rivet_fid_list_remove(&list, &f[4]), -FI_EINVAL);
	rivet_fid_list_destruct(&list);
	cr_assert_eq(list.n, 0);
	cr_assert_null(list.fids);
}

Test(fid_list, duplicates_refused)
{
	struct fid f[2];
	struct rivet_fid_list list;

	rivet_fid_list_construct(&list);
	cr_assert_eq(rivet_fid_list_insert(&list, &f[0]), 0);
	cr_assert_eq(rivet_fid_list_insert(&list, &f[0]), -FI_EALREADY);
	cr_assert_eq(rivet_fid_list_insert(&list, &f[1]), 0);
	cr_assert_eq(list.n, 2);
	/* removed, it may come back */
	cr_assert_eq(rivet_fid_list_remove(&list, &f[0]), 0);
	cr_assert_eq(rivet_fid_list_insert(&list, &f[0]), 0);
	cr_assert_eq(list.n, 2);
	rivet_fid_list_destruct(&list);
}

Test(fid_list, remove_last_and_only)
{
	struct fid f[3];
	struct rivet_fid_list list;

	rivet_fid_list_construct(&list);
	cr_assert_eq(rivet_fid_list_insert(&list, &f[0]), 0);
	cr_assert_eq(rivet_fid_list_remove(&list, &f[0]), 0);
	cr_assert_eq(list.n, 0);
	cr_assert_eq(rivet_fid_list_insert(&list, &f[1]), 0);
	cr_assert_eq(rivet_fid_list_insert(&list, &f[2]), 0);
	cr_assert_eq(rivet_fid_list_remove(&list, &f[2]), 0);	/* the last */
	cr_assert(rivet_fid_list_contains(&list, &f[1]));
	cr_assert_eq(list.n, 1);
	rivet_fid_list_destruct(&list);
}
