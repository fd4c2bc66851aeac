/*
 * Private utility tier (core/, not installed, not part of any public API):
 * the 64-bit hash mixer and the open-addressing map uint64 -> uint64 that
 * several modules used to write for themselves (the builder's maps, the log
 * replay's and `nftrace check`'s per-queue tables, the analysis' id maps).
 * Everything is static inline: these sit on hot paths (one lookup per event
 * in the builder) and must inline exactly as the copies they replace did.
 *
 * Tables are powers of two with linear probing; callers that keep their own
 * slot arrays (records with several key fields) use nf_mix64 for the start
 * slot and probe with (i + 1) & (cap - 1).
 */
#ifndef NF_CORE_UTIL_HASH_H
#define NF_CORE_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "contract/errors.h"

/* The finaliser of MurmurHash3 (fmix64): every input bit moves every output bit. */
static inline uint64_t nf_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/*
 * An open-addressing map uint64 -> uint64 (any key, 0 and UINT64_MAX
 * included). Zeroed is empty; nf_u64map_free returns it to empty (keeping
 * max_keys). Grows at 3/4 full, from 64 slots. max_keys (0: no bound) caps
 * the entries of a map keyed by untrusted input: nf_u64map_put returns
 * NF_ENOMEM for a new key past it.
 */
struct nf_u64map {
	uint64_t *keys, *vals;
	uint8_t *used;
	size_t cap, n;
	size_t max_keys;
};

static inline void nf_u64map_free(struct nf_u64map *m)
{
	size_t max = m->max_keys;

	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
	m->max_keys = max;
}

/* The slot of key, or the empty slot where it would go (cap > 0). */
static inline size_t nf_u64map_slot(const struct nf_u64map *m, uint64_t key)
{
	size_t i = nf_mix64(key) & (m->cap - 1);

	while (m->used[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

/* The value of key, or NULL. The pointer is valid until the next put or del. */
static inline uint64_t *nf_u64map_find(const struct nf_u64map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = nf_mix64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->used[i])
			return NULL;
		if (m->keys[i] == key)
			return &m->vals[i];
	}
}

/* Doubles the table; 0 or NF_ENOMEM. */
static inline int nf_u64map_grow(struct nf_u64map *m)
{
	struct nf_u64map g = { 0 };

	g.cap = m->cap ? m->cap * 2 : 64;
	g.max_keys = m->max_keys;
	g.keys = malloc(g.cap * sizeof(*g.keys));
	g.vals = malloc(g.cap * sizeof(*g.vals));
	g.used = calloc(g.cap, 1);
	if (!g.keys || !g.vals || !g.used) {
		nf_u64map_free(&g);
		return NF_ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t j = nf_mix64(m->keys[i]) & (g.cap - 1);

		while (g.used[j])
			j = (j + 1) & (g.cap - 1);
		g.used[j] = 1;
		g.keys[j] = m->keys[i];
		g.vals[j] = m->vals[i];
		g.n++;
	}
	nf_u64map_free(m);
	*m = g;
	return 0;
}

/* Inserts or overwrites; returns 0 or NF_ENOMEM (out of memory, or a new
 * key past max_keys). */
static inline int nf_u64map_put(struct nf_u64map *m, uint64_t key, uint64_t val)
{
	uint64_t *v = nf_u64map_find(m, key);

	if (v) {
		*v = val;
		return 0;
	}
	if (m->max_keys && m->n >= m->max_keys)
		return NF_ENOMEM;
	if ((m->n + 1) * 4 > m->cap * 3 && nf_u64map_grow(m))
		return NF_ENOMEM;
	size_t i = nf_mix64(key) & (m->cap - 1);

	while (m->used[i])
		i = (i + 1) & (m->cap - 1);
	m->used[i] = 1;
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

/* Removes key if present (the rest of its probe run is placed again, so
 * every chain stays whole). */
static inline void nf_u64map_del(struct nf_u64map *m, uint64_t key)
{
	if (!m->cap)
		return;
	size_t i = nf_u64map_slot(m, key);

	if (!m->used[i])
		return;
	m->used[i] = 0;
	m->n--;
	for (size_t j = (i + 1) & (m->cap - 1); m->used[j]; j = (j + 1) & (m->cap - 1)) {
		uint64_t kk = m->keys[j], vv = m->vals[j];

		m->used[j] = 0;
		size_t t = nf_u64map_slot(m, kk);

		m->used[t] = 1;
		m->keys[t] = kk;
		m->vals[t] = vv;
	}
}

#endif
