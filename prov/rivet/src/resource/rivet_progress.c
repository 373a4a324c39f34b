/* SPDX-License-Identifier: MIT */
/*
 * The progress seam: the set of progress sources a CQ drives when it is
 * read or waited on.  Pure (no verbs), unit tested in test/test_progress.c;
 * the per-read loop is inline in rivet.h (rivet_progress_set_run).
 */
#include <stdlib.h>

#include "rivet.h"

void rivet_progress_set_construct(struct rivet_progress_set *set,
				  bool locking)
{
	*set = (struct rivet_progress_set) { .locking = locking };
	pthread_mutex_init(&set->lock, NULL);
}

void rivet_progress_set_destruct(struct rivet_progress_set *set)
{
	pthread_mutex_destroy(&set->lock);
	free(set->srcs);
	set->srcs = NULL;
	set->n = set->cap = 0;
}

static void rivet_progress_set_lock(struct rivet_progress_set *set)
{
	if (set->locking)
		pthread_mutex_lock(&set->lock);
}

static void rivet_progress_set_unlock(struct rivet_progress_set *set)
{
	if (set->locking)
		pthread_mutex_unlock(&set->lock);
}

int rivet_progress_set_add(struct rivet_progress_set *set,
			   struct rivet_progress_src *src)
{
	struct rivet_progress_src **srcs;
	int ret = 0;

	rivet_progress_set_lock(set);
	if (set->n == set->cap) {
		srcs = realloc(set->srcs, (set->cap * 2 + 4) * sizeof(*srcs));
		if (!srcs) {
			ret = -FI_ENOMEM;
			goto out;
		}
		set->srcs = srcs;
		set->cap = set->cap * 2 + 4;
	}
	set->srcs[set->n++] = src;
out:
	rivet_progress_set_unlock(set);
	return ret;
}

void rivet_progress_set_remove(struct rivet_progress_set *set,
			       struct rivet_progress_src *src)
{
	size_t i;

	rivet_progress_set_lock(set);
	for (i = 0; i < set->n; i++) {
		if (set->srcs[i] != src)
			continue;
		set->srcs[i] = set->srcs[--set->n];
		break;
	}
	rivet_progress_set_unlock(set);
}

void rivet_progress_set_run_cm(struct rivet_progress_set *set)
{
	size_t i;

	if (!set->n)
		return;
	rivet_progress_set_lock(set);
	for (i = 0; i < set->n; i++)
		if (set->srcs[i]->progress_cm)
			set->srcs[i]->progress_cm(set->srcs[i]);
	rivet_progress_set_unlock(set);
}
