// SPDX-License-Identifier: MIT
/*
 * Top layer, beside malloc.c: the placement API (docs/malloc.md):
 * nd_malloc_onnode / _local / _interleaved / _policy, their mallocx,
 * calloc and aligned forms, nd_policy_prepare, nd_node_of. Before the
 * init these serve from malloc.c's bootstrap buffer like malloc does.
 */
#include <cpuid.h>
#include <emmintrin.h>
#if defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h> /* glibc 2.33: CPU_FEATURE_ACTIVE */
#endif
#endif
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

/* Size -> class for sizes up to ND_SLAB_DIRECT: the record's scls[],
 * indexed by the size itself (one load from the record the fast path
 * holds, where slab.c's table, _nd_slab_cls_tab, needs the rounding
 * (size + 15) >> 4 and its address first); the slow paths assert the
 * agreement (ND_DEBUG). */
_Static_assert(ND_SLAB_DIRECT == 256 && ND_SCLS(256) == 11, "scls covers the classes up to 256 bytes");

/* size's class for a fast path; false above *max (NULL: ND_SLAB_MAX; every
 * heap serves the sizes up to ND_SLAB_DIRECT from a class): those pay one
 * compare and one load. *max is read only above them (an atomic load, so
 * the compiler does not hoist it onto the common path). */
_Static_assert(ND_SLAB_DIRECT < ND_PAGE_SIZE, "a spreading policy serves up to a page from classes");
static inline __attribute__((always_inline)) bool fast_cls(const _nd_thread_t *t, size_t size, const uint32_t *max,
							    unsigned *c)
{
	if (nd_likely(size <= ND_SLAB_DIRECT)) {
		*c = t->scls[size];
		return true;
	}
	if (size <= (max ? __atomic_load_n(max, __ATOMIC_RELAXED) : ND_SLAB_MAX)) {
		*c = _nd_slab_cls_tab[(size + 15) >> 4];
		return true;
	}
	return false;
}

/* Pop from the heap's current slab of class c. */
static inline __attribute__((always_inline)) void *heap_pop(struct nd_heap *h, unsigned c)
{
	return _nd_slab_pop(((_nd_heap_hot_t *)(void *)h)->cur[c]);
}

static inline void check_cls(size_t size)
{
	ND_ASSERT(size > ND_SLAB_DIRECT || (ND_SCLS(size) == _nd_slab_cls_tab[(size + 15) >> 4] &&
						    _nd_tls->scls[size] == ND_SCLS(size)),
		  "the record's class table agrees with slab.c's");
	(void)size;
}

/* ---- the x calls' flags (their calls are below) -------------------------- */

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

/* Served by a class (alignment at most a page, no other flag): the
 * aligned size stays <= ND_SLAB_MAX, a multiple of every such alignment. */
static inline bool x_fast(size_t size, unsigned flags)
{
	return size - 1 < ND_SLAB_MAX && (flags & ~ND_MALLOCX_ZERO) <= ND_PAGE_SHIFT;
}

/* flags -> the mask (alignment - 1) the x fast paths round the size with,
 * for the low 7 bits (ND_MALLOCX_ZERO, an lg): an lg above a page gives
 * all ones, so the rounded size is too big for a class and the slow path
 * sorts the flags out. */
#define XM(f) (((f) & LG_MASK) <= ND_PAGE_SHIFT ? (1u << ((f) & 15)) - 1 : ~0u) /* & 15: no shift past 31 */
#define XM4(f) XM(f), XM((f) + 1), XM((f) + 2), XM((f) + 3)
#define XM16(f) XM4(f), XM4((f) + 4), XM4((f) + 8), XM4((f) + 12)
#define XM64(f) XM16(f), XM16((f) + 16), XM16((f) + 32), XM16((f) + 48)
static const uint32_t x_mask[LG_MASK + ND_MALLOCX_ZERO + 1] = { XM64(0), XM64(64) };
_Static_assert((LG_MASK | ND_MALLOCX_ZERO) == 0x7f, "x_mask covers the flags of the fast path");

/* The aligned size whose class serves the alignment: every class that
 * holds a multiple m of a power of two a <= 4 KiB is a multiple of a
 * (classes between 2^k and 2^(k+1) step by 2^(k-2); m in (2^k, 2^(k+1)]
 * with a > 2^(k-2) is 3 * 2^(k-1) or 2^(k+1), both classes), and slabs
 * start on a page: rounding up is the whole alignment, but for an
 * alignment above 64 of a coloured class (its slabs start 64-aligned:
 * _nd_slab_cls_al's class, the next power of two, not coloured: 4096 or
 * the twin of 8192 or 16384). x_fast(size, flags) holds (size >= 1: size
 * 0 takes the slow path; flags <= 0x7f). 0 for a twin's class: no size
 * maps to it (the caller takes the alignment's own path). */
static inline size_t aligned_size(size_t size, unsigned flags)
{
	size_t a = ((size - 1) | x_mask[flags]) + 1;
	if (x_mask[flags] >= 127 && a > ND_SLAB_DIRECT) {
		unsigned c = _nd_slab_cls_al[_nd_slab_cls_tab[(a + 15) >> 4]];
		/* a twin: its size is the coloured class's, 64-aligned only
		 * (audit15: the slow paths' first call of a thread got one) */
		a = c < ND_SLAB_SIZED ? _nd_slab_class_size(c) : 0;
	}
	return a;
}

/* The class of a rounded size - 1, a = size - 1 | m (m: the alignment's
 * mask; with fast_cls's *max); false: the slow path (size 0, too big). */
static inline __attribute__((always_inline)) bool rounded_cls(const _nd_thread_t *t, size_t a, size_t m,
							       const uint32_t *max, unsigned *c)
{
	if (nd_likely(a < ND_SLAB_DIRECT)) {
		*c = t->scls[a + 1];
		return true;
	}
	if (a >= ND_SLAB_MAX || !fast_cls(t, a + 1, max, c))
		return false;
	if (m >= 127) /* aligned_size */
		*c = _nd_slab_cls_al[*c];
	return true;
}

/* The class of size <= ND_SLAB_DIRECT rounded up to 2^lg, lg <=
 * ND_XLG_ROW (size 0: 2^lg), from the record's row (a constant lg up to
 * 4: scls itself, without the row's load). */
static inline __attribute__((always_inline)) uint8_t row_cls(const _nd_thread_t *t, uint64_t lg, size_t size)
{
	if (__builtin_constant_p(lg) && lg <= 4)
		return t->scls[size];
	return t->xrow[lg][size];
}

/* The class of size rounded to the alignment flags ask (x_fast's sizes,
 * with fast_cls's *max); false: the slow path (size 0, too big, other
 * flags). The misses' (their flags as they came). */
static inline __attribute__((always_inline)) bool x_cls(const _nd_thread_t *t, size_t size, unsigned flags,
							 const uint32_t *max, unsigned *c)
{
	if (nd_unlikely(flags > (LG_MASK | ND_MALLOCX_ZERO)))
		return false;
	unsigned lg = flags & LG_MASK;
	if (lg <= ND_XLG_ROW && size <= ND_SLAB_DIRECT) { /* x_lg_pop's row (size 0 too) */
		*c = row_cls(t, lg, size);
		return true;
	}
	return rounded_cls(t, (size - 1) | x_mask[flags], x_mask[flags], max, c);
}

_Static_assert(ND_XLG_FAST == ND_PAGE_SHIFT && sizeof(_nd_thread_boot.xmask) == (ND_XLG_FAST + 1) * sizeof(uint64_t),
	       "the record's masks are the alignments up to a page");

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
	check_cls(size);
	if (!_nd_init_or_boot())
		return _nd_boot_alloc(size, 16);
	if (!_nd_topo_valid_node(_nd_topo(), node)) {
		_nd_msg_api("nd_malloc_onnode: node %d does not exist (node limit %d)", node, _nd_topo()->node_limit);
		errno = EINVAL;
		return NULL;
	}
	return _nd_place_onnode(size, node);
}

/* The node calls' bodies take the node and the flags as uint64_t: the
 * public symbols (int node, unsigned flags) are aliases of them, so the
 * upper halves of those registers are what the caller left (the ABI
 * leaves them undefined; 32-bit operations and loads zero them). Below a
 * small bound, compared in 64 bits, such a register is the argument
 * zero-extended and indexes a table without the extension's instruction
 * (one on each of these calls); a stray upper half only fails the bound,
 * and the paths behind it use the low half. A body is ARGREG_BODY: clang
 * (14) inlines nothing into a static function that only an alias of a
 * symbol declared before (nodalloc.h) refers to, so its always_inline fast
 * path became calls (nd_mallocx_onnode about 100 instructions a pair
 * against gcc's 53); marked used, it is compiled like any other. */
#define ARGREG_BODY static __attribute__((used))
#if defined(__clang__)
#define ARGREG_ALIAS(decl, body) decl __attribute__((alias(#body)));
#else
#define ARGREG_ALIAS(decl, body)                                                                                  \
	_Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wattribute-alias\"") decl                   \
		__attribute__((alias(#body)));                                                                        \
	_Pragma("GCC diagnostic pop")
#endif

/* The heap of the fast paths of nd_malloc_onnode, nd_malloc_local (node
 * ND_NODE_LOCAL) and the x calls; NULL: take the slow path. nr: the node's
 * register (ARGREG_ALIAS; an int zero-extended also serves). nr < nfast: the
 * record's nheap has an entry for node (a node without a heap yet has
 * heap.c's empty one, whose pop fails and whose refill is the full path),
 * so node is valid; past ND_NHEAP_IN nodes, node < nbig the same in
 * heaps[]. nfast and nbig are 0 in check mode and on the boot record.
 * lheap: the heap of the CPU's memory node, valid while lkey matches;
 * local: node ND_NODE_LOCAL means it (false for nd_malloc_onnode, whose
 * miss path takes ND_NODE_LOCAL to nd_malloc_local). */
/* nr indexes the record's nheap (nfast is at most ND_NHEAP_IN: a constant
 * beyond, ND_NODE_LOCAL, is known not to). */
static inline __attribute__((always_inline)) bool nheap_has(const _nd_thread_t *t, uint64_t nr)
{
	if (__builtin_constant_p(nr) && nr >= ND_NHEAP_IN)
		return false;
	return nr < (uint64_t)t->nfast;
}

static inline __attribute__((always_inline)) struct nd_heap *node_heap(_nd_thread_t *t, uint64_t nr, bool local)
{
	struct nd_heap *h = NULL;
	int node = (int)nr;
	if (nd_likely(nheap_has(t, nr)))
		h = t->nheap[nr];
	else if (local && node == ND_NODE_LOCAL && nd_likely(_nd_slab_key_ok(t, &t->lkey)))
		h = t->lheap;
	else if ((unsigned)node < (unsigned)t->nbig)
		h = t->heaps[(unsigned)node];
	else
		return NULL;
	if (!h)
		__builtin_unreachable(); /* heaps[] entries and a keyed lheap are heaps */
	return h;
}

/* The pop from node_heap's heap; NULL: a miss (no heap, or an empty list). */
static inline __attribute__((always_inline)) void *node_pop(_nd_thread_t *t, uint64_t nr, bool local, unsigned c)
{
	if (nd_likely(nheap_has(t, nr)))
		return heap_pop(t->nheap[nr], c);
	struct nd_heap *h = node_heap(t, nr, local); /* its other branches: a pop of their own */
	return h ? heap_pop(h, c) : NULL;
}

/* nr, fr: the registers of the fast path (ARGREG_ALIAS), passed on as
 * they are (a copy to zero-extend them cost the fast path a move). */
static void *onnodex_miss(size_t size, uint64_t nr, uint64_t fr);
static void *policyx_miss(size_t size, const nd_policy_t *p, uint64_t fr);

/* The zeroing of the refills (the pops': x_lg_pop); memset returns o: a
 * tail call. */
static inline __attribute__((always_inline)) void *x_done(void *o, size_t size, unsigned flags)
{
	if (flags & ND_MALLOCX_ZERO)
		return memset(o, 0, size);
	return o;
}

/* The x refills' call of heap.c's refill, then the zeroing flags ask:
 * without it a tail call (no frame: the refill is most of their cost on
 * bench/policy.sh's ALIGN(64) rows). */
static inline __attribute__((always_inline)) void *x_refill(struct nd_heap *h, unsigned c, const nd_policy_t *pol, int node,
							     size_t size, unsigned flags)
{
	if (!(flags & ND_MALLOCX_ZERO))
		return _nd_heap_refill_of(h, c, pol, node);
	void *o = _nd_heap_refill_of(h, c, pol, node);
	return o ? x_done(o, size, flags) : NULL;
}

/* The class of the list s (h's cur[] entry) that x_lg_pop found empty:
 * the one whose partial list s heads (lcls), or, for the empty slab of a
 * class without one, the size rounded as flags ask found again (x_cls;
 * max: the policy entry's). The fast path keeps s, not its class: the
 * class, an unsigned in a register the pop overwrites, cost a copy on
 * every call. */
static inline __attribute__((always_inline)) unsigned x_refill_cls(const _nd_slab_hot_t *s, size_t size, unsigned flags,
								     const uint32_t *max)
{
	if (nd_likely(s != (const _nd_slab_hot_t *)(const void *)&_nd_slab_empty))
		return ((const _nd_slab_t *)(const void *)s)->lcls;
	unsigned c = 0;
	bool found = x_cls(_nd_tls, size, flags, max, &c);
	ND_ASSERT(found, "x_refill_cls: the fast path found the class");
	if (!found)
		__builtin_unreachable();
	return c;
}

/* x_lg_pop's refill of its list s of h, then the zeroing flags ask:
 * nd_mallocx_onnode's (h of node, pol local), nd_mallocx_policy's (entry
 * 0's heap and pol, read again here: the fast path holds neither). */
static __attribute__((noinline)) void *x_refill_node(struct nd_heap *h, const _nd_slab_hot_t *s, size_t size, uint64_t nr,
						      uint64_t fr)
{
	int node = (int)nr;
	unsigned flags = (unsigned)fr; /* nr, fr: as onnodex_miss takes them */
	return x_refill(h, x_refill_cls(s, size, flags, NULL), &_nd_policy_local, node, size, flags);
}

static __attribute__((noinline)) void *x_refill_pc(const _nd_slab_hot_t *s, size_t size, uint64_t fr)
{
	unsigned flags = (unsigned)fr;
	const struct _nd_pcache *e = &_nd_tls->pc[0];
	return x_refill(e->heap, x_refill_cls(s, size, flags, &e->max), e->pol, -1, size, flags);
}

/* The x fast path for an alignment of 2^lg, lg <= ND_XLG_FAST, zeroed if
 * zero: the pop from h (by_node, a constant: nd_mallocx_onnode's, from
 * node_heap's heap of node instead; else nd_mallocx_policy's for p, from
 * entry 0's heap), the record's mask or'ed in from memory (a
 * constant lg: the static table, folded). An empty list is refilled with
 * the heap and class just found (x_refill_*), not by the call's
 * miss path finding them again (the rounded classes of an alignment
 * refill often: 2% of the calls of bench/policy.sh's ALIGN(64) rows);
 * no class or no heap: the call's miss path (flags as they came). Every
 * exit is a tail call or the popped object, so the fast path keeps no
 * frame. */
static inline __attribute__((always_inline)) void *x_lg_pop(_nd_thread_t *t, size_t size, uint64_t lg, bool zero,
							     const uint32_t *max, bool by_node, struct nd_heap *h, uint64_t nr,
							     const nd_policy_t *p, uint64_t fr)
{
	unsigned c;
	bool found;
	if (lg <= ND_XLG_ROW && nd_likely(size <= ND_SLAB_DIRECT)) {
		c = row_cls(t, lg, size);
		found = true;
	} else {
		size_t m = __builtin_constant_p(lg) ? x_mask[lg] : t->xmask[lg];
		found = rounded_cls(t, (size - 1) | m, m, max, &c);
	}
	if (nd_likely(found) && (!by_node || (h = node_heap(t, nr, true)))) {
		_nd_slab_hot_t *s = ((_nd_heap_hot_t *)(void *)h)->cur[c];
		void *o = _nd_slab_pop(s);
		if (nd_likely(o != NULL))
			return zero ? memset(o, 0, size) : o; /* memset returns o: a tail call */
		return by_node ? x_refill_node(h, s, size, nr, fr) : x_refill_pc(s, size, fr);
	}
	return by_node ? onnodex_miss(size, nr, fr) : policyx_miss(size, p, fr);
}

/* The x fast paths' flags other than 0: an alignment up to a page, alone
 * or with ND_MALLOCX_ZERO, in two branches (a compare each), so that the
 * alignment's does not test the zeroing after the pop (before: a test of
 * the bits above the 7 low ones, x_mask's address and load, then the
 * zeroing's test: 4 instructions more for an alignment, 1 for the
 * zeroing). Any other flags: the call's miss path, which sorts them out. */
static inline __attribute__((always_inline)) void *x_pop(_nd_thread_t *t, size_t size, uint64_t fr, const uint32_t *max,
							  bool by_node, struct nd_heap *h, uint64_t nr, const nd_policy_t *p)
{
	/* fr, nr: the flags' and the node's registers (ARGREG_ALIAS) */
	if (fr <= ND_XLG_ROW)
		return x_lg_pop(t, size, fr, false, max, by_node, h, nr, p, fr);
	if (fr - ND_MALLOCX_ZERO <= ND_XLG_ROW)
		return x_lg_pop(t, size, fr - ND_MALLOCX_ZERO, true, max, by_node, h, nr, p, fr);
	if (fr <= ND_XLG_FAST)
		return x_lg_pop(t, size, fr, false, max, by_node, h, nr, p, fr);
	if (fr - ND_MALLOCX_ZERO <= ND_XLG_FAST)
		return x_lg_pop(t, size, fr - ND_MALLOCX_ZERO, true, max, by_node, h, nr, p, fr);
	return by_node ? onnodex_miss(size, nr, fr) : policyx_miss(size, p, fr);
}

/* A miss of the node calls' fast path: a valid heap whose list of the
 * class of size (rounded as flags ask, x_cls) was empty goes straight to
 * its refill (heap.c), not through the call's whole slow path; false:
 * take that path. */
static inline __attribute__((always_inline)) bool node_refill(size_t size, int node, bool local, unsigned flags, void **o)
{
	_nd_thread_t *t = _nd_tls;
	unsigned c;
	struct nd_heap *h;
	if (!(flags ? x_cls(t, size, flags, NULL, &c) : fast_cls(t, size, NULL, &c)) || !(h = node_heap(t, (unsigned)node, local)))
		return false;
	ND_ASSERT((unsigned)node >= (unsigned)t->nfast || t->nheap[node] == t->heaps[node], "nheap is heaps[]'s copy");
	*o = _nd_heap_refill_of(h, c, &_nd_policy_local, node);
	return true;
}

static __attribute__((noinline)) void *onnode_miss(size_t size, int node)
{
	void *o;
	if (node == ND_NODE_LOCAL) /* here, off the node's fast path */
		return nd_malloc_local(size);
	if (node_refill(size, node, false, 0, &o))
		return o;
	return onnode_slow(size, node);
}

/* Fast path: the malloc pop from the thread's heap of node plus an index
 * (nr: the node's register, ARGREG_ALIAS). */
ARGREG_BODY void *malloc_onnode_r(size_t size, uint64_t nr)
{
	_nd_thread_t *t = _nd_tls;
	unsigned c;
	if (nd_likely(fast_cls(t, size, NULL, &c))) {
		void *o = node_pop(t, nr, false, c);
		if (nd_likely(o != NULL))
			return o;
	}
	return onnode_miss(size, (int)nr);
}
ARGREG_ALIAS(void *nd_malloc_onnode(size_t size, int node), malloc_onnode_r)

static __attribute__((noinline)) void *local_slow(size_t size)
{
	check_cls(size);
	if (!_nd_init_or_boot())
		return _nd_boot_alloc(size, 16);
	if (size <= ND_SLAB_MAX)
		return _nd_heap_local(size);
	return _nd_large_alloc(size, 0, &_nd_policy_local, -1);
}

static __attribute__((noinline)) void *local_miss(size_t size)
{
	void *o;
	if (node_refill(size, ND_NODE_LOCAL, true, 0, &o))
		return o;
	return local_slow(size);
}

void *nd_malloc_local(size_t size)
{
	_nd_thread_t *t = _nd_tls;
	unsigned c;
	if (nd_likely(fast_cls(t, size, NULL, &c))) {
		void *o = node_pop(t, (unsigned)ND_NODE_LOCAL, true, c);
		if (nd_likely(o != NULL))
			return o;
	}
	return local_miss(size);
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

static __attribute__((noinline)) void *policy_slow(size_t size, const nd_policy_t *p)
{
	if (!p || p->mode == ND_POLICY_DEFAULT)
		return nd_malloc(size);
	if (!_nd_init_or_boot())
		return _nd_boot_alloc(size, 16);
	if (policy_small(size, p))
		return _nd_heap_policy(size, p); /* validates, caches, reports */
	/* the normalized copy, not p: a weighted p whose set has no weight
	 * (the weights then come from the set) looped in the node choice */
	char err[200];
	const nd_policy_t *ip = _nd_policy_intern(p, err, sizeof err);
	if (!ip) {
		_nd_msg_api("nd_malloc_policy: %s", err);
		return NULL; /* errno EINVAL or ENOMEM */
	}
	return alloc_policy(size, ip);
}

/* The words of nd_policy_t the fast path loads (x86-64 ABI layout). */
_Static_assert(offsetof(nd_policy_t, granularity_shift) == 8 && offsetof(nd_policy_t, nodes) == 16 &&
		       offsetof(nd_policy_t, weights) == 16 + sizeof(nd_nodemask_t) && sizeof(nd_policy_t) >= 32 &&
		       offsetof(nd_policy_t, weights) + 8 <= sizeof(nd_policy_t),
	       "mode, flags, granularity and padding fill the first 16 bytes; a 32-byte load at p and an 8-byte one "
	       "at its weights stay in p");
_Static_assert(offsetof(struct _nd_pcache, gran_pad) == offsetof(struct _nd_pcache, mode_flags) + 8 &&
		       offsetof(struct _nd_pcache, bits0) == offsetof(struct _nd_pcache, mode_flags) + 16 &&
		       offsetof(struct _nd_pcache, key) == offsetof(struct _nd_pcache, mode_flags) + 24 &&
		       offsetof(struct _nd_pcache, mode_flags) % 16 == 0,
	       "the entry's compared words are two aligned 16-byte halves");

/* Entry e still serves the caller's object p: p's first 16 bytes (mode,
 * flags, granularity, padding) and its nodes.bits[0] are what heap.c saw
 * (_nd_slab_pc_same, plus the padding: a change there costs one slow
 * path), and the word at w still equals key: e->lane (the CPU pair it was
 * resolved on for kuser; p's weights for user, whose heap is the same on
 * every CPU), or p's weights read at their offset (user only). Two
 * 16-byte compares and one branch for every mode. key is atomic (thread.c
 * sets it to NONE): x86-64 reads an aligned 8-byte half of a 16-byte load
 * whole. */
static inline __attribute__((always_inline)) bool pc_hit_at(const struct _nd_pcache *e, const nd_policy_t *p,
							     const void *w)
{
	__m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i b = _mm_loadl_epi64((const __m128i *)(const void *)p->nodes.bits);
	b = _mm_castpd_si128(_mm_loadh_pd(_mm_castsi128_pd(b), (const double *)w));
	a = _mm_cmpeq_epi8(a, _mm_load_si128((const __m128i *)(const void *)&e->mode_flags));
	b = _mm_cmpeq_epi8(b, _mm_load_si128((const __m128i *)(const void *)&e->bits0));
	return _mm_movemask_epi8(_mm_and_si128(a, b)) == 0xffff;
}
static inline __attribute__((always_inline)) bool pc_hit(const struct _nd_pcache *e, const nd_policy_t *p)
{
	return pc_hit_at(e, p, e->lane);
}

/* pc_hit_at(e, p, p->weights) in one 32-byte compare (AVX2): the weights
 * broadcast, p's bytes 0-23 blended in from a 32-byte load of p (both
 * loads inside p's 1168 bytes), xor'ed with the entry's 32, vptest;
 * vzeroupper leaves no dirty upper half to the SSE code after it. It
 * zeroes every ymm's upper half, so all 16 are clobbered: without AVX
 * (this library's build) none holds anything across the asm, the code is
 * the same; a build with -mavx could keep a 256-bit value there. An asm,
 * not intrinsics: the fast path it sits in is one body for both choices
 * of the compare, without a target attribute. */
typedef struct {
	char b[32];
} __attribute__((may_alias)) pc_bytes32_t;
static inline __attribute__((always_inline)) bool pc_hit_avx2(const struct _nd_pcache *e, const nd_policy_t *p)
{
	bool eq;
	__asm__("vpbroadcastq %[w], %%ymm0\n\t"
		"vpblendd $0x3f, %[p], %%ymm0, %%ymm0\n\t"
		"vpxor %[e], %%ymm0, %%ymm0\n\t"
		"vptest %%ymm0, %%ymm0\n\t"
		"vzeroupper"
		: "=@ccz"(eq)
		: [w] "m"(*(const uint64_t *)(const void *)p->weights), [p] "m"(*(const pc_bytes32_t *)(const void *)p),
		  [e] "m"(*(const pc_bytes32_t *)(const void *)&e->mode_flags)
		: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
		  "xmm13", "xmm14", "xmm15");
	return eq;
}

/* The fast paths of nd_malloc_policy and nd_mallocx_policy use the
 * thread's cache entry 0 when it serves p: it remembers one policy object
 * and the heap it resolved to, a prepared (interned, immutable) policy by
 * its address alone (fix) when that heap is the same on every CPU, else
 * by its address (pol) and the key of its CPU, a caller's object by its
 * address (user or kuser) and pc_hit. fix is tested first: no key's 4
 * instructions for bind to one node, preferred, interleave, weighted (or
 * any policy when every CPU is on one node); a prepared policy whose heap
 * follows the CPU pays 2 more, for the failed test. */
static inline __attribute__((always_inline)) bool pc_serves(_nd_thread_t *t, const struct _nd_pcache *e, const nd_policy_t *p)
{
	if (nd_likely(e->fix == p))
		return true;
	if (nd_likely(e->pol == p))
		return _nd_slab_key_ok(t, &e->key);
	return (e->user == p || e->kuser == p) && pc_hit(e, p);
}

/* The pop from the heap of entry 0 when it serves p; NULL: a miss. The
 * entry's test comes first, each kind in a branch of its own (pc_serves'
 * four, written apart), the plain object whose heap is the same on every
 * CPU (user) first: its address test is then the only one in front of its
 * compare, which has no CPU key (p's weights in its place; avx2: one
 * 32-byte compare), and the prepared policy pays the failed address test
 * instead (a prepared policy found by fix: 19 instructions). A plain
 * object whose heap follows the CPU (kuser) comes last, its compare with
 * the key. An entry's user, kuser and fix are never NULL (ND_PC_NOUSER),
 * so p NULL goes to the pol test (a fresh entry's pol is NULL, its key
 * NONE: a miss). */
static inline __attribute__((always_inline)) void *policy_pop(_nd_thread_t *t, const nd_policy_t *p, size_t size,
							       bool avx2)
{
	const struct _nd_pcache *e = &t->pc[0];
	unsigned c;
	if (e->user == p) {
		if ((avx2 ? pc_hit_avx2(e, p) : pc_hit_at(e, p, p->weights)) && nd_likely(fast_cls(t, size, &e->max, &c)))
			return heap_pop(e->heap, c);
		return NULL;
	}
	if (nd_likely(e->fix == p || (e->pol == p && _nd_slab_key_ok(t, &e->key)) || (e->kuser == p && pc_hit(e, p))) &&
	    nd_likely(fast_cls(t, size, &e->max, &c)))
		return heap_pop(e->heap, c);
	return NULL;
}

/* A miss of the policy calls' fast path whose entry 0 serves p (class c
 * found empty) goes straight to the heap's refill (heap.c); false: the
 * call's slow path. */
static inline __attribute__((always_inline)) bool policy_refill(const nd_policy_t *p, bool ok, unsigned c, void **o)
{
	_nd_thread_t *t = _nd_tls;
	const struct _nd_pcache *e = &t->pc[0];
	if (!ok || !pc_serves(t, e, p))
		return false;
	*o = _nd_heap_refill_of(e->heap, c, e->pol, -1);
	return true;
}

static __attribute__((noinline)) void *policy_miss(size_t size, const nd_policy_t *p)
{
	void *o;
	unsigned c = 0;
	_nd_thread_t *t = _nd_tls;
	bool ok = fast_cls(t, size, &t->pc[0].max, &c); /* before c is read */
	if (policy_refill(p, ok, c, &o))
		return o;
	return policy_slow(size, p);
}

void *_nd_place_policy_sse2(size_t size, const nd_policy_t *p)
{
	void *o = policy_pop(_nd_tls, p, size, false);
	if (nd_likely(o != NULL))
		return o;
	return policy_miss(size, p);
}

void *_nd_place_policy_avx2(size_t size, const nd_policy_t *p)
{
	void *o = policy_pop(_nd_tls, p, size, true);
	if (nd_likely(o != NULL))
		return o;
	return policy_miss(size, p);
}

/* The class of an interleaved call's size: fast_cls up to a page, the
 * most a spreading policy's heap serves (pc_fill's max). */
static const uint32_t il_max = ND_PAGE_SIZE;
static inline __attribute__((always_inline)) bool il_cls(const _nd_thread_t *t, size_t size, unsigned *c)
{
	return fast_cls(t, size, &il_max, c);
}

/* The record's ilheap serves (nodes, granularity): its two words, set
 * from a call that passed every check (interleaved_keep), still equal
 * the call's. On the noheap too (its pops find nothing). */
static inline __attribute__((always_inline)) bool il_hit(const _nd_heap_hot_t *h, const nd_nodemask_t *nodes,
							  size_t granularity)
{
	return nd_likely(nodes != NULL) && nd_likely(granularity == h->il_gran) && nd_likely(nodes->bits[0] == h->il_bits);
}

/* After a miss served (nodes, granularity) through nd_malloc_policy's
 * miss: entry 0 holds the contents of that interleave policy as a user
 * entry (its heap the same on every CPU, never in check mode, at most 64
 * nodes: heap.c), so its heap becomes the record's ilheap, with the call's
 * words. The test is what the fast path compared before ilheap (mode and
 * flags, granularity, padding, bits[0], weights 0): no other entry's heap
 * gets there. */
static void interleaved_keep(const nd_nodemask_t *nodes, size_t granularity, unsigned shift)
{
	_nd_thread_t *t = _nd_tls;
	const struct _nd_pcache *e = &t->pc[0];
	if (e->user == ND_PC_NOUSER || e->mode_flags != ND_POLICY_INTERLEAVE || e->gran_pad != shift ||
	    e->bits0 != nodes->bits[0] || __atomic_load_n(&e->key, __ATOMIC_RELAXED) != 0)
		return;
	_nd_heap_hot_t *h = (_nd_heap_hot_t *)(void *)e->heap;
	h->il_gran = granularity;
	h->il_bits = nodes->bits[0];
	t->ilheap = h;
}

/* nd_malloc_interleaved's miss: the ilheap's dry class goes to its refill;
 * anything else gets the policy written out and checked, then
 * nd_malloc_policy's miss, which caches its contents in entry 0 (a user
 * entry: an interleave's heap is the same on every CPU), and its heap
 * becomes ilheap. */
static __attribute__((noinline)) void *interleaved_miss(size_t size, const nd_nodemask_t *nodes, size_t granularity)
{
	_nd_thread_t *t = _nd_tls;
	_nd_heap_hot_t *h = t->ilheap;
	unsigned c;
	ND_ASSERT(h == &_nd_thread_noheap || ((_nd_heap_t *)(void *)h)->owner == t,
		  "nd_malloc_interleaved's heap is one of its thread's own");
	if (h != &_nd_thread_noheap && il_hit(h, nodes, granularity) && il_cls(t, size, &c))
		return _nd_heap_refill_of((struct nd_heap *)(void *)h, c, ((_nd_heap_t *)(void *)h)->pol, -1);
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
		_nd_msg_api("nd_malloc_interleaved: granularity %zu is not 0 (one page) or 4K times a power of two, "
			    "at most 1G",
			    granularity);
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
	void *o = policy_miss(size, &pol);
	if (o)
		interleaved_keep(nodes, granularity, (unsigned)shift);
	return o;
}

/* The fast path: a pop from the record's ilheap when its words are the
 * call's granularity (as given) and nodes->bits[0]: 22 instructions, the
 * plain object's 23 without its compare's vector, and no test of the
 * granularity's value (a hit proves a call with those words passed every
 * check) or of the mode. The cache holds topologies of at most 64 nodes
 * only (heap.c's pc_cacheable), where bits[0] is the whole set; as for a
 * plain object, bits above them are not read on a hit (EINVAL at a
 * miss). 0 and 4K are both one page but not the same word: a thread that
 * alternates them misses at each change (the miss rewrites il_gran). */
void *nd_malloc_interleaved(size_t size, const nd_nodemask_t *nodes, size_t granularity)
{
	_nd_thread_t *t = _nd_tls;
	const _nd_heap_hot_t *h = t->ilheap;
	unsigned c;
	if (il_hit(h, nodes, granularity) && nd_likely(il_cls(t, size, &c))) {
		void *o = _nd_slab_pop(h->cur[c]);
		if (nd_likely(o != NULL)) {
			__asm__("" : "+a"(o)); /* as malloc_body: no mov to rax */
			return o;
		}
	}
	return interleaved_miss(size, nodes, granularity);
}

/* cpuid's AVX2, and the kernel saves the upper halves (OSXSAVE, XCR0's
 * SSE and AVX bits): instructions, no system call. Run by the dynamic
 * linker (the ifunc below), before any constructor: reads nothing else.
 * With glibc 2.33 or later, glibc's own answer (the same tests, read by
 * ld.so at start, before any ifunc resolver): GLIBC_TUNABLES=
 * glibc.cpu.hwcaps=-AVX2 then forces the SSE2 body, as it does glibc's
 * own string functions (a CI or a user on a CPU whose AVX2 misbehaves;
 * the library already needs GLIBC_2.34). Not instrumented by TSan: see
 * the resolver. */
__attribute__((no_sanitize_thread)) bool _nd_place_avx2(void)
{
#ifdef CPU_FEATURE_ACTIVE
	/* CPU_FEATURE_ACTIVE(AVX2) written out: gcc does not inline the
	 * header's x86_cpu_active into a function without TSan */
	unsigned i = x86_cpu_AVX2, w = 8 * sizeof(unsigned);
	const struct cpuid_feature *f = __x86_get_cpuid_feature_leaf(i / (w * 4));
	return (f->active_array[i % (w * 4) / w] >> (i % w)) & 1;
#else
	unsigned a, b, c, d;
	if (__get_cpuid_max(0, NULL) < 7)
		return false;
	__cpuid(1, a, b, c, d);
	if (!(c & bit_OSXSAVE) || !(c & bit_AVX))
		return false;
	unsigned lo, hi;
	__asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	if ((lo & 6) != 6)
		return false;
	__cpuid_count(7, 0, a, b, c, d);
	return (b & bit_AVX2) != 0;
#endif
}

/* nd_malloc_policy is a GNU ifunc: the dynamic linker writes the chosen
 * body into the caller's GOT entry, so a call costs what a plain export's
 * does (a pointer set at init would add an indirect jump). */
/* used: clang does not count the ifunc attribute as a use.
 * no_sanitize_thread: it runs while the dynamic linker relocates, before
 * TSan's runtime is set up (instrumented, its __tsan_func_entry crashed a
 * TSan build's program that calls nd_malloc_policy). */
static __attribute__((used, no_sanitize_thread)) void *(*resolve_malloc_policy(void))(size_t, const nd_policy_t *)
{
	return _nd_place_avx2() ? _nd_place_policy_avx2 : _nd_place_policy_sse2;
}
void *nd_malloc_policy(size_t size, const nd_policy_t *p) __attribute__((ifunc("resolve_malloc_policy")));

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
	size_t align = (size_t)1 << (flags & LG_MASK), as = x_fast(size, flags) ? aligned_size(size, flags) : 0;
	void *p;
	if (as)
		p = node == ND_NODE_LOCAL ? nd_malloc_local(as) : onnode_slow(as, node);
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

/* A miss of onnodex: a valid heap's empty list is refilled (node_refill),
 * anything else takes the slow path. */
static __attribute__((noinline)) void *onnodex_miss(size_t size, uint64_t nr, uint64_t fr)
{
	int node = (int)nr;
	unsigned flags = (unsigned)fr;
	void *o;
	if (node_refill(size, node, true, flags, &o))
		return o ? x_done(o, size, flags) : NULL;
	return onnodex_slow(size, node, flags);
}

/* The local heap's key holds (_nd_slab_key_ok's *cpu64 == lkey; lkey
 * read once, an aligned 8-byte load: atomic on x86-64) and fr is 0, in
 * one or (gcc kept both words in registers and copied one: two
 * instructions more). */
static inline __attribute__((always_inline)) bool local_key_ok(const _nd_thread_t *t, uint64_t fr)
{
	uint64_t k;
	bool ok;
	__asm__("mov %[cpu], %[k]\n\t"
		"xor %[lkey], %[k]\n\t"
		"or %[fr], %[k]"
		: [k] "=&r"(k), "=@ccz"(ok)
		: [cpu] "m"(*t->cpu64), [lkey] "m"(t->lkey), [fr] "r"(fr));
	return ok;
}

/* Fast path: ND_NODE_LOCAL is tested first and its flags are or'ed into
 * the local heap's key test (flags 0: one instruction, where a test of
 * their own cost two); a node takes x_pop's row for flags 0 and an
 * alignment up to 256 alike (xrow[0] is scls: one load of the row, no
 * test of the flags for 0), then the bound of node (2 instructions over
 * nd_malloc_onnode for flags 0, the local heap's 3 over nd_malloc_local).
 * The local key comes before the class, so that other flags fail it
 * first: their x path tests the key again (as before: 4 instructions).
 * The local heap's empty list is refilled with the heap and slab just
 * found (x_refill_node, as a node's), not by onnodex_miss finding them
 * again. */
static inline __attribute__((always_inline)) void *onnodex(size_t size, uint64_t nr, uint64_t fr)
{
	_nd_thread_t *t = _nd_tls;
	unsigned c;
	if ((int)nr != ND_NODE_LOCAL)
		return x_pop(t, size, fr, NULL, true, NULL, nr, NULL);
	if (nd_likely(local_key_ok(t, fr)) && nd_likely(fast_cls(t, size, NULL, &c))) {
		struct nd_heap *h = t->lheap;
		_nd_slab_hot_t *s = ((_nd_heap_hot_t *)(void *)h)->cur[c];
		void *o = _nd_slab_pop(s);
		if (nd_likely(o != NULL))
			return o;
		return x_refill_node(h, s, size, nr, 0);
	}
	if (fr) /* the node a constant: x_pop tests the local heap's key alone */
		return x_pop(t, size, fr, NULL, true, NULL, (unsigned)ND_NODE_LOCAL, NULL);
	return onnodex_miss(size, nr, 0);
}

/* Each public x call inlines the body: calling each other cost a call
 * through the GOT (interposable, before -Bsymbolic-functions: CMakeLists.txt),
 * and costs a call still. */
ARGREG_BODY void *mallocx_onnode_r(size_t size, uint64_t nr, uint64_t fr)
{
	return onnodex(size, nr, fr);
}
ARGREG_ALIAS(void *nd_mallocx_onnode(size_t size, int node, unsigned flags), mallocx_onnode_r)

void *nd_calloc_onnode(size_t n, size_t size, int node)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return x_pop(_nd_tls, total, ND_MALLOCX_ZERO, NULL, true, NULL, (unsigned)node, NULL); /* a node first */
}

/* The lg of a power-of-two alignment; -1 (errno EINVAL) for another. */
static inline int lg_of(size_t align)
{
	if (align == 0 || (align & (align - 1)) || align > ((size_t)1 << LG_MAX)) {
		errno = EINVAL;
		return -1;
	}
	return __builtin_ctzll(align);
}

/* The fast path's test: align is a power of two (or 0) and the size
 * rounded to it, minus 1, is below ND_SLAB_DIRECT: that bounds align - 1
 * too (at most a page: aligned_size's rule), and size 0 and align 0 wrap
 * to huge values. align - 1 is the rounding mask itself: no lg, no flags. */
static inline __attribute__((always_inline)) bool aligned_direct_at(size_t align, size_t size, size_t *a,
								      bool bound_first)
{
	size_t m, r;
	/* the rounded size - 1 (aligned_size), in registers of their own: gcc
	 * put align - 1 in rsi, which holds size, and copied size away first
	 * (one instruction on every call) */
	__asm__("lea -1(%[al]), %[m]\n\t"
		"lea -1(%[sz]), %[r]\n\t"
		"or %[m], %[r]"
		: [m] "=&r"(m), [r] "=&r"(r)
		: [al] "r"(align), [sz] "r"(size)
		: "cc");
	*a = r;
	if (bound_first) /* nd_aligned_alloc_policy: gcc then lays its hit out with no branch taken */
		return r < ND_SLAB_DIRECT && !(align & m);
	return !(align & m) && r < ND_SLAB_DIRECT; /* the other order cost the node call 2 moves */
}
static inline __attribute__((always_inline)) bool aligned_direct(size_t align, size_t size, size_t *a)
{
	return aligned_direct_at(align, size, a, false);
}

/* A miss of the fast path: a valid heap's empty list is refilled
 * (node_refill's, with the class the fast path had); anything else goes
 * through nd_mallocx_onnode's path. */
static __attribute__((noinline)) void *aligned_onnode_slow(size_t align, size_t size, int node)
{
	_nd_thread_t *t = _nd_tls;
	size_t a;
	struct nd_heap *h;
	if (aligned_direct(align, size, &a) && (h = node_heap(t, (unsigned)node, true)))
		return _nd_heap_refill_of(h, t->scls[a + 1], &_nd_policy_local, node);
	int lg = lg_of(align);
	return lg < 0 ? NULL : onnodex(size, (unsigned)node, ND_MALLOCX_LG_ALIGN(lg));
}

ARGREG_BODY void *aligned_alloc_onnode_r(size_t align, size_t size, uint64_t nr)
{
	_nd_thread_t *t = _nd_tls;
	size_t a;
	if (nd_likely(aligned_direct(align, size, &a))) {
		void *o = node_pop(t, nr, true, t->scls[a + 1]);
		if (nd_likely(o != NULL))
			return o;
	}
	return aligned_onnode_slow(align, size, (int)nr);
}
ARGREG_ALIAS(void *nd_aligned_alloc_onnode(size_t align, size_t size, int node), aligned_alloc_onnode_r)

static __attribute__((noinline)) void *policyx_slow(size_t size, const nd_policy_t *p, unsigned flags)
{
	if (!x_flags_ok(flags))
		return NULL;
	size_t align = (size_t)1 << (flags & LG_MASK), as = x_fast(size, flags) ? aligned_size(size, flags) : 0;
	bool dflt = !p || p->mode == ND_POLICY_DEFAULT;
	_nd_thread_t *t = _nd_tls;
	unsigned c;
	void *q;
	if (align <= 16 || (as && !dflt)) { /* align <= 16: as is 0 only if too big */
		q = policy_slow(as ? as : size, p);
	} else if (dflt && x_fast(size, flags) && _nd_slab_key_ok(t, &t->key) && x_cls(t, size, flags, NULL, &c)) {
		/* nd_malloc's heap, not its dir[]: that may be a borrowed list
		 * of a bigger class, less aligned (heap.c, bw_lend) */
		q = heap_pop(t->heap, c);
		if (!q)
			q = _nd_heap_refill_of(t->heap, c, t->hpol, -1);
	} else if (!_nd_init_or_boot()) {
		q = _nd_boot_alloc(size, align);
	} else if (dflt) {
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

static __attribute__((noinline)) void *policyx_miss(size_t size, const nd_policy_t *p, uint64_t fr)
{
	unsigned flags = (unsigned)fr;
	_nd_thread_t *t = _nd_tls;
	const uint32_t *max = &t->pc[0].max;
	unsigned c = 0;
	void *o;
	bool ok = flags ? x_cls(t, size, flags, max, &c) : fast_cls(t, size, max, &c); /* before c is read */
	if (policy_refill(p, ok, c, &o))
		return o ? x_done(o, size, flags) : NULL;
	return policyx_slow(size, p, flags);
}

/* Fast path: nd_malloc_policy's, on the aligned size if flags ask for an
 * alignment, then the zeroing. Entry 0's test comes before the flags':
 * flags 0 then costs one test more than nd_malloc_policy. */
static inline __attribute__((always_inline)) void *policyx(size_t size, const nd_policy_t *p, uint64_t fr)
{
	_nd_thread_t *t = _nd_tls;
	const struct _nd_pcache *e = &t->pc[0];
	unsigned c;
	if (nd_likely(pc_serves(t, e, p))) {
		if (nd_likely((unsigned)fr == 0)) {
			if (nd_likely(fast_cls(t, size, &e->max, &c))) {
				void *o = heap_pop(e->heap, c);
				if (nd_likely(o != NULL))
					return o;
			}
		} else {
			return x_pop(t, size, fr, &e->max, false, e->heap, (unsigned)-1, p);
		}
	}
	return policyx_miss(size, p, fr);
}

ARGREG_BODY void *mallocx_policy_r(size_t size, const nd_policy_t *p, uint64_t fr)
{
	return policyx(size, p, fr);
}
ARGREG_ALIAS(void *nd_mallocx_policy(size_t size, const nd_policy_t *p, unsigned flags), mallocx_policy_r)

void *nd_calloc_policy(size_t n, size_t size, const nd_policy_t *p)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return policyx(total, p, ND_MALLOCX_ZERO);
}

/* nd_aligned_alloc_policy's miss (a dry class, a bad alignment, another
 * policy, a size above ND_SLAB_DIRECT): its arguments in the registers
 * they came in, so that the fast path keeps size and p where they are
 * (policyx inlined there made gcc copy both, and the class and the
 * object, on every call: 26 instructions, 22 now). A dry class of entry
 * 0's heap goes to that heap's refill (policy_refill), else the
 * alignment as flags (65.2 instructions a pair before the fast path,
 * 1.34x: lg_of, then x_pop's flag rows). */
static __attribute__((noinline)) void *aligned_policy_slow(size_t align, size_t size, const nd_policy_t *p)
{
	_nd_thread_t *t = _nd_tls;
	size_t a;
	void *o;
	if (aligned_direct(align, size, &a) && policy_refill(p, true, t->scls[a + 1], &o))
		return o;
	int lg = lg_of(align);
	return lg < 0 ? NULL : policyx(size, p, ND_MALLOCX_LG_ALIGN(lg));
}

/* nd_aligned_alloc_onnode's fast path on entry 0's heap (policyx's
 * test): the class of the size rounded to align, whose objects are
 * aligned to it (aligned_direct). */
void *nd_aligned_alloc_policy(size_t align, size_t size, const nd_policy_t *p)
{
	_nd_thread_t *t = _nd_tls;
	const struct _nd_pcache *e = &t->pc[0];
	size_t a;
	if (nd_likely(aligned_direct_at(align, size, &a, true)) && nd_likely(pc_serves(t, e, p))) {
		void *o = heap_pop(e->heap, t->scls[a + 1]);
		if (nd_likely(o != NULL)) {
			__asm__("" : "+a"(o)); /* as malloc_body: no mov to rax */
			return o;
		}
	}
	return aligned_policy_slow(align, size, p);
}
