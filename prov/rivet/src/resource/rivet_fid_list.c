/* SPDX-License-Identifier: MIT */
/*
 * The member list of poll sets and wait sets: distinct fids, in no
 * order.  Pure, unit tested in test/test_fid_list.c.
 */
#include <stdlib.h>

#include "rivet_set.h"

void rivet_fid_list_construct(struct rivet_fid_list *list)
{
	*list = (struct rivet_fid_list) { 0 };
}

void rivet_fid_list_destruct(struct rivet_fid_list *list)
{
	free(list->fids);
	rivet_fid_list_construct(list);
}

static size_t rivet_fid_list_index(const struct rivet_fid_list *list,
				   const struct fid *fid)
{
	size_t i;

	for (i = 0; i < list->n; i++)
		if (list->fids[i] == fid)
			return i;
	return SIZE_MAX;
}

bool rivet_fid_list_contains(const struct rivet_fid_list *list,
			     const struct fid *fid)
{
	return rivet_fid_list_index(list, fid) != SIZE_MAX;
}

int rivet_fid_list_insert(struct rivet_fid_list *list, struct fid *fid)
{
	struct fid **fids;
	size_t cap;

	if (rivet_fid_list_contains(list, fid))
		return -FI_EALREADY;
	if (list->n == list->cap) {
		cap = list->cap ? list->cap * 2 : 4;
		fids = realloc(list->fids, cap * sizeof(*fids));
		if (!fids)
			return -FI_ENOMEM;
		list->fids = fids;
		list->cap = cap;
	}
	list->fids[list->n++] = fid;
	return 0;
}

int rivet_fid_list_remove(struct rivet_fid_list *list, struct fid *fid)
{
	size_t i = rivet_fid_list_index(list, fid);

	if (i == SIZE_MAX)
		return -FI_EINVAL;
	list->fids[i] = list->fids[--list->n];
	return 0;
}
