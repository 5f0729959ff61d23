// SPDX-License-Identifier: MIT
/*
 * Top layer, beside malloc.c: the placement API (docs/malloc.md):
 * nd_malloc_onnode / _local / _interleaved / _policy, their mallocx,
 * calloc and aligned forms, nd_policy_prepare, nd_node_of. Before the
 * init these serve from malloc.c's bootstrap buffer like malloc does.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

/* The class's current slab of a heap (the placement calls' fast paths). */
static inline _nd_slab_hot_t *heap_slab(struct nd_heap *h, size_t size)
{
	return ((_nd_heap_hot_t *)(void *)h)->cur[_nd_slab_cls_tab[(size + 15) >> 4]];
}

/* ---- placement API ------------------------------------------------------- */

/* On a node known to be valid (init done). */
void *_nd_place_onnode(size_t size, int node)
{
	if (size <= ND_SLAB_MAX)
		return _nd_heap_onnode(size, node);
	return _nd_large_alloc(size, 0, &_nd_policy_local, node);
}

static __attribute__((noinline)) void *onnode_slow(size_t size, int node)
{
	if (!_nd_init_or_boot())
		return _nd_boot_alloc(size, 16);
	if (!_nd_topo_valid_node(_nd_topo(), node)) {
		_nd_msg_api("nd_malloc_onnode: node %d does not exist (node limit %d)", node, _nd_topo()->node_limit);
		errno = EINVAL;
		return NULL;
	}
	return _nd_place_onnode(size, node);
}

/* Fast path: the thread's heap of node exists (so node is valid), pop from
 * its current slab of size's class: the malloc pop plus an index. */
void *nd_malloc_onnode(size_t size, int node)
{
	_nd_thread_t *t = _nd_tls;
	if (nd_likely(size <= ND_SLAB_MAX && (unsigned)node < (unsigned)t->nfast)) {
		struct nd_heap *h = t->heaps[node];
		if (nd_likely(h != NULL)) {
			void *o = _nd_slab_pop(heap_slab(h, size));
			if (nd_likely(o != NULL))
				return o;
		}
	}
	return onnode_slow(size, node);
}

static __attribute__((noinline)) void *local_slow(size_t size)
{
	if (!_nd_init_or_boot())
		return _nd_boot_alloc(size, 16);
	if (size <= ND_SLAB_MAX)
		return _nd_heap_local(size);
	return _nd_large_alloc(size, 0, &_nd_policy_local, -1);
}

/* Fast path: the heap of the CPU's memory node, valid while lkey matches. */
void *nd_malloc_local(size_t size)
{
	_nd_thread_t *t = _nd_tls;
	if (nd_likely(size <= ND_SLAB_MAX && _nd_slab_key_ok(t, &t->lkey))) {
		void *o = _nd_slab_pop(heap_slab(t->lheap, size));
		if (nd_likely(o != NULL))
			return o;
	}
	return local_slow(size);
}

/* Small requests under an explicit policy take a class; anything of more
 * than a page under an interleave policy is one run spread by offset. */
static bool policy_small(size_t size, const nd_policy_t *pol)
{
	return size <= ND_SLAB_MAX && !(_nd_policy_spreads(pol) && size > ND_PAGE_SIZE);
}

static void *alloc_policy(size_t size, const nd_policy_t *pol)
{
	if (policy_small(size, pol))
		return _nd_heap_alloc(size, 0, pol, -1);
	return _nd_large_alloc(size, 0, pol, -1);
}

void *nd_malloc_interleaved(size_t size, const nd_nodemask_t *nodes, size_t granularity)
{
	if (!_nd_init_or_boot())
		return _nd_boot_alloc(size, 16);
	if (!nodes || nd_nodemask_count(nodes) == 0) {
		_nd_msg_api("nd_malloc_interleaved: empty node set");
		errno = EINVAL;
		return NULL;
	}
	nd_policy_t pol;
	memset(&pol, 0, sizeof pol);
	pol.mode = ND_POLICY_INTERLEAVE;
	pol.nodes = *nodes;
	int shift = _nd_policy_granularity_shift(granularity ? granularity : ND_PAGE_SIZE);
	if (shift < 0) {
		_nd_msg_api("nd_malloc_interleaved: bad granularity %zu", granularity);
		errno = EINVAL;
		return NULL;
	}
	pol.granularity_shift = (unsigned)shift;
	char err[200];
	if (nd_policy_check(&pol, err, sizeof err) != 0) {
		_nd_msg_api("nd_malloc_interleaved: %s", err);
		errno = EINVAL;
		return NULL;
	}
	return alloc_policy(size, &pol);
}

static __attribute__((noinline)) void *policy_slow(size_t size, const nd_policy_t *p)
{
	if (!p || p->mode == ND_POLICY_DEFAULT)
		return nd_malloc(size);
	if (!_nd_init_or_boot())
		return _nd_boot_alloc(size, 16);
	if (policy_small(size, p))
		return _nd_heap_policy(size, p); /* validates, caches, reports */
	char err[200];
	if (nd_policy_check(p, err, sizeof err) != 0) {
		_nd_msg_api("nd_malloc_policy: %s", err);
		errno = EINVAL;
		return NULL;
	}
	return alloc_policy(size, p);
}

/* The cache entry for p on this CPU, or NULL. A prepared (interned,
 * immutable) policy is its entry's pol: its address is enough. */
static inline __attribute__((always_inline)) const struct _nd_pcache *pcache_hit(_nd_thread_t *t,
									      const nd_policy_t *p, size_t size)
{
	const struct _nd_pcache *e = &t->pc[0];
	if (nd_likely(e->pol == p && size <= e->max && _nd_slab_key_ok(t, &e->key)))
		return e;
	if (e->user == p && size <= e->max && _nd_slab_key_ok(t, &e->key) && _nd_slab_pc_same(e, p))
		return e;
	return NULL;
}

/* Fast path: the thread's cache entry 0 remembers this policy object (the
 * words that can differ, nd_slab.h) and the heap it resolved to on this
 * CPU; pop from that heap. */
void *nd_malloc_policy(size_t size, const nd_policy_t *p)
{
	const struct _nd_pcache *e = pcache_hit(_nd_tls, p, size);
	if (nd_likely(e != NULL)) {
		void *o = _nd_slab_pop(heap_slab(e->heap, size));
		if (nd_likely(o != NULL))
			return o;
	}
	return policy_slow(size, p);
}

const nd_policy_t *nd_policy_prepare(const nd_policy_t *p)
{
	if (!p) {
		errno = EINVAL;
		return NULL;
	}
	if (!_nd_init_or_boot()) {
		errno = ENOMEM;
		return NULL;
	}
	return _nd_policy_intern(p, NULL, 0); /* errno EINVAL or ENOMEM */
}

int nd_node_of(const void *p)
{
	if (!p || __atomic_load_n(&_nd_initialized, __ATOMIC_ACQUIRE) <= 0)
		return -1;
	return _nd_page_node_of(p);
}

/* ---- placement with alignment and zeroing -------------------------------- */

#define LG_MASK 0x3fu
#define LG_MAX 30u

/* Zeroes the first size bytes of a block just allocated: a large run
 * only where it may hold old data (a fresh run commits nothing). */
static void zero_block(void *p, size_t size)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	if (d && d->use == ND_USE_LARGE)
		_nd_large_zero(p, size);
	else
		memset(p, 0, size); /* slab objects are reused; bootstrap too */
}

/* The aligned size whose class serves the alignment: every class that
 * holds a multiple m of a power of two a <= 4 KiB is a multiple of a
 * (classes between 2^k and 2^(k+1) step by 2^(k-2); m in (2^k, 2^(k+1)]
 * with a > 2^(k-2) is 3 * 2^(k-1) or 2^(k+1), both classes), and slabs
 * start on a page: rounding up is the whole alignment. x_fast(size,
 * flags) holds (size >= 1: size 0 takes the slow path). */
static const uint16_t align_mask[ND_PAGE_SHIFT + 1] = { 0, 1, 3, 7, 15, 31, 63, 127, 255, 511, 1023, 2047, 4095 };
static inline size_t aligned_size(size_t size, unsigned flags)
{
	return ((size - 1) | align_mask[flags & ~ND_MALLOCX_ZERO]) + 1;
}

/* Served by a class (alignment at most a page, no other flag): the
 * aligned size stays <= ND_SLAB_MAX, a multiple of every such alignment. */
static inline bool x_fast(size_t size, unsigned flags)
{
	return size - 1 < ND_SLAB_MAX && (flags & ~ND_MALLOCX_ZERO) <= ND_PAGE_SHIFT;
}

static inline __attribute__((always_inline)) void *x_done(void *o, size_t size, unsigned flags)
{
	if (flags & ND_MALLOCX_ZERO)
		memset(o, 0, size);
	return o;
}

static void *x_done_slow(void *p, size_t size, unsigned flags)
{
	if (flags & ND_MALLOCX_ZERO)
		zero_block(p, size);
	return p;
}

static bool x_flags_ok(unsigned flags)
{
	if (!(flags & ~(LG_MASK | ND_MALLOCX_ZERO)) && (flags & LG_MASK) <= LG_MAX)
		return true;
	errno = EINVAL;
	return false;
}

/* A size a class serves goes through the slow path of the call without
 * flags on the aligned size (that also warms its fast path). */
static __attribute__((noinline)) void *onnodex_slow(size_t size, int node, unsigned flags)
{
	if (!x_flags_ok(flags))
		return NULL;
	size_t align = (size_t)1 << (flags & LG_MASK);
	void *p;
	if (x_fast(size, flags))
		p = node == ND_NODE_LOCAL ? nd_malloc_local(aligned_size(size, flags))
					  : onnode_slow(aligned_size(size, flags), node);
	else if (!_nd_init_or_boot())
		p = _nd_boot_alloc(size, align);
	else if (node != ND_NODE_LOCAL && !_nd_topo_valid_node(_nd_topo(), node))
		p = (errno = EINVAL, NULL);
	else if (align > 16)
		p = _nd_malloc_aligned(align, size, &_nd_policy_local, node < 0 ? -1 : node);
	else
		p = node < 0 ? local_slow(size) : _nd_place_onnode(size, node);
	return p ? x_done_slow(p, size, flags) : NULL;
}

/* Fast path: nd_malloc_onnode's (or nd_malloc_local's) on the aligned
 * size, then the zeroing. */
void *nd_mallocx_onnode(size_t size, int node, unsigned flags)
{
	_nd_thread_t *t = _nd_tls;
	if (nd_likely(x_fast(size, flags))) {
		struct nd_heap *h = NULL;
		if (nd_likely((unsigned)node < (unsigned)t->nfast))
			h = t->heaps[node];
		else if (node == ND_NODE_LOCAL && _nd_slab_key_ok(t, &t->lkey))
			h = t->lheap;
		if (nd_likely(h != NULL)) {
			void *o = _nd_slab_pop(heap_slab(h, aligned_size(size, flags)));
			if (nd_likely(o != NULL))
				return x_done(o, size, flags);
		}
	}
	return onnodex_slow(size, node, flags);
}

void *nd_calloc_onnode(size_t n, size_t size, int node)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return nd_mallocx_onnode(total, node, ND_MALLOCX_ZERO);
}

/* The lg of a power-of-two alignment; -1 (errno EINVAL) for another. */
static int lg_of(size_t align)
{
	if (align == 0 || (align & (align - 1)) || align > ((size_t)1 << LG_MAX)) {
		errno = EINVAL;
		return -1;
	}
	return __builtin_ctzll(align);
}

void *nd_aligned_alloc_onnode(size_t align, size_t size, int node)
{
	int lg = lg_of(align);
	return lg < 0 ? NULL : nd_mallocx_onnode(size, node, ND_MALLOCX_LG_ALIGN(lg));
}

static __attribute__((noinline)) void *policyx_slow(size_t size, const nd_policy_t *p, unsigned flags)
{
	if (!x_flags_ok(flags))
		return NULL;
	size_t align = (size_t)1 << (flags & LG_MASK);
	void *q;
	if (x_fast(size, flags) || align <= 16) {
		q = policy_slow(x_fast(size, flags) ? aligned_size(size, flags) : size, p);
	} else if (!_nd_init_or_boot()) {
		q = _nd_boot_alloc(size, align);
	} else if (!p || p->mode == ND_POLICY_DEFAULT) {
		q = _nd_malloc_aligned(align, size, NULL, -1);
	} else {
		const nd_policy_t *ip = _nd_policy_intern(p, NULL, 0);
		if (!ip)
			return NULL; /* errno EINVAL or ENOMEM */
		/* as without alignment: more than a page under interleave is spread */
		q = _nd_policy_spreads(ip) && size > ND_PAGE_SIZE ? _nd_large_alloc(size, align, ip, -1) : _nd_malloc_aligned(align, size, ip, -1);
	}
	return q ? x_done_slow(q, size, flags) : NULL;
}

/* Fast path: nd_malloc_policy's on the aligned size, then the zeroing. */
void *nd_mallocx_policy(size_t size, const nd_policy_t *p, unsigned flags)
{
	if (nd_likely(x_fast(size, flags))) {
		size_t sz = aligned_size(size, flags);
		const struct _nd_pcache *e = pcache_hit(_nd_tls, p, sz);
		if (nd_likely(e != NULL)) {
			void *o = _nd_slab_pop(heap_slab(e->heap, sz));
			if (nd_likely(o != NULL))
				return x_done(o, size, flags);
		}
	}
	return policyx_slow(size, p, flags);
}

void *nd_calloc_policy(size_t n, size_t size, const nd_policy_t *p)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return nd_mallocx_policy(total, p, ND_MALLOCX_ZERO);
}

void *nd_aligned_alloc_policy(size_t align, size_t size, const nd_policy_t *p)
{
	int lg = lg_of(align);
	return lg < 0 ? NULL : nd_mallocx_policy(size, p, ND_MALLOCX_LG_ALIGN(lg));
}
