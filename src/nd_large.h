// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 9,
 * large.c. */
#ifndef ND_LARGE_H
#define ND_LARGE_H

/* ======================================================================
 * src/large.c: allocations above ND_SLAB_MAX, straight from page runs,
 * and the cache of freed large runs (docs/malloc.md "Large blocks"): a
 * freed node-slot run of at least the purge threshold is kept, committed,
 * in its node's cache for NODALLOC_LARGE_DECAY_MS and reused by an
 * allocation that wants that node (never another: freed memory keeps its
 * node): cut to size, or, when none is large enough, its whole 2 MiB
 * pages moved into a fresh run (no copy); spread runs are never cached. Decay runs on large calls (no
 * thread). A cached run counts as committed, not in use.
 * ====================================================================== */

/* A page run of size bytes aligned to align (0 or <= ND_PAGE_SIZE = page),
 * under pol (NULL = the thread's policy), want_node >= 0 first. An
 * interleave or weighted policy spreads a run of more than one granule by
 * offset (_nd_page_alloc_spread, when align allows). Tries each node the
 * policy allows in order: its cache, a fresh run, and if the node is full,
 * its cache flushed and a fresh run again. NULL + ENOMEM. */
void *_nd_large_alloc(size_t size, size_t align, const nd_policy_t *pol, int want_node);
/* d = _nd_page_desc(p) with d->use == ND_USE_LARGE; reports (fatal) a
 * pointer that is not the run's head. Caches the run or frees it. */
void _nd_large_free(void *p, _nd_pagedesc_t *d);
/* calloc of a large block just allocated: zero its first bytes; a run
 * reused from the cache is cleared whole, a fresh one only where its pages
 * may hold old data (_nd_page_zero). Any other pointer: _nd_page_zero. */
void _nd_large_zero(void *p, size_t bytes);
/* realloc of a large block in place: grow into the free pages or the
 * cached run after it when the policy in force would place new memory on
 * the run's node (a run outside the slots: into the address space after
 * it, else moved with its pages, no copy: outrun.c), or give the tail
 * back (cached when it is a big run). Grow: the block (p, or where it
 * moved), NULL with nothing changed; shrink: true on success. Both set
 * d->user = size. */
void *_nd_large_grow(void *p, _nd_pagedesc_t *d, size_t size);
bool _nd_large_shrink(void *p, _nd_pagedesc_t *d, size_t size);
/* Record a new requested size after an in-place realloc. */
void _nd_large_resize(void *p, _nd_pagedesc_t *d, size_t size);
size_t _nd_large_usable(const void *p, const _nd_pagedesc_t *d);
/* Free every cached run of node (-1: all nodes) now; returns their bytes
 * (tests, trim, memory pressure). */
size_t _nd_large_flush(int node);
/* Bytes cached for node now, and the cache's bound for it (tests, tools). */
size_t _nd_large_cached(int node);
size_t _nd_large_cache_limit(int node);
/* Every node's (and the mixed slot's) large runs in use, bytes; the cached
 * runs, bytes and count (mallinfo2; a snapshot, no lock while nothing is
 * cached). */
void _nd_large_usage(uint64_t *in_use, uint64_t *cached, uint64_t *runs);
/* The runs the threads keep (their caches, large.c "The thread cache"):
 * free, committed, in no cache's list: every thread's bytes and count
 * (_nd_large_flush gives back every thread's: tcsteal28) (mallinfo2; a
 * snapshot, no lock). */
void _nd_large_kept(uint64_t *bytes, uint64_t *runs);

#endif /* ND_LARGE_H */
