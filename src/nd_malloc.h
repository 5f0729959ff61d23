// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 12, the
 * top (malloc.c, place.c, heap_api.c). */
#ifndef ND_MALLOC_H
#define ND_MALLOC_H

/* ======================================================================
 * src/malloc.c: init order, the public allocation API and the override.
 * ====================================================================== */

/* Library init (idempotent, lazy on first use): options, topology, stats,
 * policy, page, slab. Returns false if the library cannot work. */
bool _nd_init(void);
extern volatile int _nd_initialized;
static inline bool _nd_ensure_init(void)
{
	return nd_likely(_nd_initialized > 0) || _nd_init();
}
/* Not initialized yet: run the init; false = serve from the bootstrap. */
static inline bool _nd_init_or_boot(void)
{
	return __atomic_load_n(&_nd_initialized, __ATOMIC_ACQUIRE) > 0 || _nd_init();
}
/* The bootstrap buffer (the init's own allocations, or after a failed
 * init): a bump allocation of size at align (>= 16); NULL with ENOMEM. */
void *_nd_boot_alloc(size_t size, size_t align);
/* Aligned allocation, align a power of two, on node or by pol (init done
 * or the bootstrap). */
void *_nd_malloc_aligned(size_t align, size_t size, const nd_policy_t *pol, int node);

/* ======================================================================
 * src/place.c: the placement API (nd_malloc_onnode and family), beside
 * malloc.c.
 * ====================================================================== */
/* On a node known to be valid (init done): realloc's new block too. */
void *_nd_place_onnode(size_t size, int node);
/* nd_malloc_policy's two bodies, chosen at load (GNU ifunc) by
 * _nd_place_avx2 (glibc's CPU_FEATURE_ACTIVE, else cpuid and xgetbv: the
 * one reader of CPU features; GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2 forces
 * SSE2): the plain object's compare as one 32-byte AVX2 compare, or SSE2.
 * Tests call both. */
void *_nd_place_policy_sse2(size_t size, const nd_policy_t *p);
void *_nd_place_policy_avx2(size_t size, const nd_policy_t *p);
bool _nd_place_avx2(void);

/* ======================================================================
 * src/heap_api.c: nd_where, nd_move and the public heaps (nd_heap_t);
 * beside malloc.c. The heaps' objects for malloc.c's free, realloc and
 * usable size (d: a page of use ND_USE_HEAP, a large object; an address that is not an
 * object start is reported, fatal).
 * ====================================================================== */
void _nd_uheap_free(void *p, const _nd_pagedesc_t *d);
size_t _nd_uheap_usable(const void *p, const _nd_pagedesc_t *d);
bool _nd_uheap_freed(const void *p, const _nd_pagedesc_t *d);
/* The public heap of a block (d: its page descriptor; a heap's small
 * objects are slab objects), or NULL. */
struct nd_heap_api *_nd_uheap_of(const _nd_pagedesc_t *d);
/* realloc's new block for an object of h: from the heap for its owner,
 * else on the object's node. */
void *_nd_uheap_realloc_alloc(struct nd_heap_api *h, const _nd_pagedesc_t *d, size_t size);

#endif /* ND_MALLOC_H */
