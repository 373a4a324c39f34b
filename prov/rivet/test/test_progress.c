/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the progress seam (rivet_progress.c): the sources a CQ
 * drives when read or waited on.
 */
#include <criterion/criterion.h>

#include "rivet.h"

struct pt_src {
	struct rivet_progress_src src;
	int runs, cm_runs;
};

static int pt_progress(struct rivet_progress_src *src)
{
	container_of(src, struct pt_src, src)->runs++;
	return 0;
}

static void pt_progress_cm(struct rivet_progress_src *src)
{
	container_of(src, struct pt_src, src)->cm_runs++;
}

Test(progress, set_add_run_remove)
{
	struct pt_src s[6];
	struct rivet_progress_set set;
	int i;

	for (i = 0; i < 6; i++)
		s[i] = (struct pt_src) {
			.src = { pt_progress, i % 2 ? pt_progress_cm : NULL },
		};
	rivet_progress_set_construct(&set, true);
	rivet_progress_set_run(&set);		/* empty: nothing to do */
	rivet_progress_set_run_cm(&set);
	for (i = 0; i < 6; i++)			/* grows past 4 */
		cr_assert_eq(rivet_progress_set_add(&set, &s[i].src), 0);
	rivet_progress_set_run(&set);
	rivet_progress_set_run_cm(&set);
	for (i = 0; i < 6; i++) {
		cr_assert_eq(s[i].runs, 1);
		cr_assert_eq(s[i].cm_runs, i % 2);	/* optional hook */
	}
	rivet_progress_set_remove(&set, &s[2].src);
	rivet_progress_set_remove(&set, &s[2].src);	/* not there: no-op */
	cr_assert_eq(set.n, 5);
	rivet_progress_set_run(&set);
	cr_assert_eq(s[2].runs, 1);
	for (i = 0; i < 6; i++)
		if (i != 2)
			cr_assert_eq(s[i].runs, 2);
	rivet_progress_set_destruct(&set);
	cr_assert_eq(set.n, 0);
}

Test(progress, set_unlocked)
{
	struct pt_src a = { .src = { pt_progress, pt_progress_cm } };
	struct rivet_progress_set set;

	rivet_progress_set_construct(&set, false);	/* FI_THREAD_DOMAIN */
	cr_assert_eq(rivet_progress_set_add(&set, &a.src), 0);
	rivet_progress_set_run(&set);
	rivet_progress_set_run_cm(&set);
	cr_assert_eq(a.runs, 1);
	cr_assert_eq(a.cm_runs, 1);
	rivet_progress_set_destruct(&set);
}
