/* SPDX-License-Identifier: MIT */
/*
 * Typed wrappers over uthash: socket address -> u64 and u32 -> pointer.
 * Pure (no verbs), unit tested in test/test_map.c.
 */
#include <stdlib.h>

#include "rivet_map.h"

/* A failed allocation inside uthash leaves the element out and marks it. */
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(elt) ((elt)->oom = true)
#include <uthash.h>

/* No padding: the whole struct is hashed and compared as bytes. */
struct rivet_addr_key {
	uint16_t family;
	uint16_t port;		/* network order */
	uint32_t scope_id;
	uint8_t ip[16];
};
_Static_assert(sizeof(struct rivet_addr_key) == 24, "rivet_addr_key padded");

struct rivet_addr_map_entry {
	struct rivet_addr_key key;
	uint64_t value;
	bool oom;
	UT_hash_handle hh;
};

struct rivet_u32_map_entry {
	uint32_t key;
	void *value;
	bool oom;
	UT_hash_handle hh;
};

static const uint8_t g_v4mapped_prefix[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

static int rivet_addr_key_make(const struct sockaddr *sa,
			       struct rivet_addr_key *key)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

	if (!sa)
		return -FI_EINVAL;
	memset(key, 0, sizeof(*key));
	if (sa->sa_family == AF_INET) {
		key->family = AF_INET;
		key->port = sin->sin_port;
		memcpy(key->ip, &sin->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family != AF_INET6)
		return -FI_EINVAL;
	key->port = sin6->sin6_port;
	if (!memcmp(&sin6->sin6_addr, g_v4mapped_prefix, 12)) {
		key->family = AF_INET;
		memcpy(key->ip, (const uint8_t *)&sin6->sin6_addr + 12, 4);
		return 0;
	}
	key->family = AF_INET6;
	key->scope_id = sin6->sin6_scope_id;
	memcpy(key->ip, &sin6->sin6_addr, 16);
	return 0;
}

static struct rivet_addr_map_entry *
rivet_addr_map_find(const struct rivet_addr_map *map,
		    const struct rivet_addr_key *key)
{
	struct rivet_addr_map_entry *e = NULL;

	HASH_FIND(hh, map->head, key, sizeof(*key), e);
	return e;
}

void rivet_addr_map_construct(struct rivet_addr_map *map)
{
	map->head = NULL;
}

void rivet_addr_map_destruct(struct rivet_addr_map *map)
{
	struct rivet_addr_map_entry *e, *tmp;

	HASH_ITER(hh, map->head, e, tmp) {
		HASH_DEL(map->head, e);
		free(e);
	}
	map->head = NULL;
}

int rivet_addr_map_insert(struct rivet_addr_map *map,
			  const struct sockaddr *sa, uint64_t value)
{
	struct rivet_addr_map_entry *e;
	struct rivet_addr_key key;
	int ret;

	ret = rivet_addr_key_make(sa, &key);
	if (ret)
		return ret;
	if (rivet_addr_map_find(map, &key))
		return -FI_EALREADY;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -FI_ENOMEM;
	e->key = key;
	e->value = value;
	HASH_ADD(hh, map->head, key, sizeof(e->key), e);
	if (e->oom) {
		free(e);
		return -FI_ENOMEM;
	}
	return 0;
}

int rivet_addr_map_lookup(const struct rivet_addr_map *map,
			  const struct sockaddr *sa, uint64_t *value_p)
{
	struct rivet_addr_map_entry *e;
	struct rivet_addr_key key;
	int ret;

	ret = rivet_addr_key_make(sa, &key);
	if (ret)
		return ret;
	e = rivet_addr_map_find(map, &key);
	if (!e)
		return -FI_ENOENT;
	*value_p = e->value;
	return 0;
}

int rivet_addr_map_remove(struct rivet_addr_map *map,
			  const struct sockaddr *sa)
{
	struct rivet_addr_map_entry *e;
	struct rivet_addr_key key;
	int ret;

	ret = rivet_addr_key_make(sa, &key);
	if (ret)
		return ret;
	e = rivet_addr_map_find(map, &key);
	if (!e)
		return -FI_ENOENT;
	HASH_DEL(map->head, e);
	free(e);
	return 0;
}

size_t rivet_addr_map_count(const struct rivet_addr_map *map)
{
	return HASH_COUNT(map->head);
}

bool rivet_addr_map_same(const struct sockaddr *a, const struct sockaddr *b)
{
	struct rivet_addr_key ka, kb;

	if (rivet_addr_key_make(a, &ka) || rivet_addr_key_make(b, &kb))
		return false;
	return !memcmp(&ka, &kb, sizeof(ka));
}

/* ---- u32 -> pointer ---- */

static struct rivet_u32_map_entry *
rivet_u32_map_find(const struct rivet_u32_map *map, uint32_t key)
{
	struct rivet_u32_map_entry *e = NULL;

	HASH_FIND(hh, map->head, &key, sizeof(key), e);
	return e;
}

void rivet_u32_map_construct(struct rivet_u32_map *map)
{
	map->head = NULL;
}

void rivet_u32_map_destruct(struct rivet_u32_map *map)
{
	struct rivet_u32_map_entry *e, *tmp;

	HASH_ITER(hh, map->head, e, tmp) {
		HASH_DEL(map->head, e);
		free(e);
	}
	map->head = NULL;
}

int rivet_u32_map_insert(struct rivet_u32_map *map, uint32_t key,
			 void *value)
{
	struct rivet_u32_map_entry *e;

	if (!value)
		return -FI_EINVAL;
	if (rivet_u32_map_find(map, key))
		return -FI_EALREADY;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -FI_ENOMEM;
	e->key = key;
	e->value = value;
	HASH_ADD(hh, map->head, key, sizeof(e->key), e);
	if (e->oom) {
		free(e);
		return -FI_ENOMEM;
	}
	return 0;
}

void *rivet_u32_map_lookup(const struct rivet_u32_map *map, uint32_t key)
{
	struct rivet_u32_map_entry *e = rivet_u32_map_find(map, key);

	return e ? e->value : NULL;
}

int rivet_u32_map_remove(struct rivet_u32_map *map, uint32_t key)
{
	struct rivet_u32_map_entry *e = rivet_u32_map_find(map, key);

	if (!e)
		return -FI_ENOENT;
	HASH_DEL(map->head, e);
	free(e);
	return 0;
}

size_t rivet_u32_map_count(const struct rivet_u32_map *map)
{
	return HASH_COUNT(map->head);
}
