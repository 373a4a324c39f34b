/* SPDX-License-Identifier: MIT */
/*
 * Typed hash maps (rivet_map.c): socket address -> u64 (the AV's reverse
 * map, FI_SOURCE) and u32 -> pointer (e.g. QPN -> connection).  uthash
 * stays inside rivet_map.c; the maps do no locking of their own.
 */
#ifndef RIVET_MAP_H
#define RIVET_MAP_H

#include "rivet.h"

/*
 * Keys compare family, IP, port and (IPv6) scope id; sin6_flowinfo is
 * ignored, and an IPv4-mapped IPv6 address is the same key as the plain
 * IPv4 address.  Only AF_INET and AF_INET6 are accepted (-FI_EINVAL).
 */
struct rivet_addr_map_entry;
struct rivet_addr_map {
	struct rivet_addr_map_entry *head;
};

void rivet_addr_map_construct(struct rivet_addr_map *map);
/* Frees every entry. */
void rivet_addr_map_destruct(struct rivet_addr_map *map);
/* 0, -FI_EALREADY (the key is there; unchanged), -FI_EINVAL, -FI_ENOMEM */
int rivet_addr_map_insert(struct rivet_addr_map *map,
			  const struct sockaddr *sa, uint64_t value);
/* 0 and *value_p, or -FI_ENOENT (-FI_EINVAL for a bad address) */
int rivet_addr_map_lookup(const struct rivet_addr_map *map,
			  const struct sockaddr *sa, uint64_t *value_p);
/* 0, or -FI_ENOENT (-FI_EINVAL for a bad address) */
int rivet_addr_map_remove(struct rivet_addr_map *map,
			  const struct sockaddr *sa);
size_t rivet_addr_map_count(const struct rivet_addr_map *map);
/* Whether a and b are the same key (false when either is not IP). */
bool rivet_addr_map_same(const struct sockaddr *a, const struct sockaddr *b);

struct rivet_u32_map_entry;
struct rivet_u32_map {
	struct rivet_u32_map_entry *head;
};

void rivet_u32_map_construct(struct rivet_u32_map *map);
/* Frees the entries, not what their values point to. */
void rivet_u32_map_destruct(struct rivet_u32_map *map);
/* 0, -FI_EALREADY, -FI_EINVAL (NULL value), -FI_ENOMEM */
int rivet_u32_map_insert(struct rivet_u32_map *map, uint32_t key,
			 void *value);
/* The value, or NULL when the key is not there. */
void *rivet_u32_map_lookup(const struct rivet_u32_map *map, uint32_t key);
/* 0, or -FI_ENOENT */
int rivet_u32_map_remove(struct rivet_u32_map *map, uint32_t key);
size_t rivet_u32_map_count(const struct rivet_u32_map *map);

#endif /* RIVET_MAP_H */
