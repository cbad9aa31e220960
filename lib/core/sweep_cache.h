/* SPDX-License-Identifier: MIT */
/* sweep_cache.h - the relocator's sweep of an object, kept between the
 * processes of one recording (sweep_cache.c). */
#ifndef DYNFTRACE_SWEEP_CACHE_H
#define DYNFTRACE_SWEEP_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* What the sweep keeps: direct branches that land in the first
 * SWEEP_WINDOW bytes of a function, after its first byte. */
#define SWEEP_WINDOW 32

/* The object a sweep was made of: its file, and its entries' count. */
struct sweep_key {
	uint64_t dev, ino, size, mtime_ns, nentries;
};

/* K for the object file PATH with NENTRIES entries: 0, or -ENOENT (no
 * cache: none configured, or PATH is not a regular file). */
int sweep_key_of(const char *path, size_t nentries, struct sweep_key *k) HIDDEN;
/* The hits kept for K: *HITS (malloc'd: TARGET, FROM pairs, offsets from
 * the load bias), *N pairs. 0, or negative: none usable. */
int sweep_cache_load(const struct sweep_key *k, uint64_t **hits, size_t *n) HIDDEN;
/* Keep N hits for K (best effort). */
void sweep_cache_store(const struct sweep_key *k, const uint64_t *hits, size_t n) HIDDEN;

#endif
