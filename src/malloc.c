// SPDX-License-Identifier: MIT
/*
 * Top layer: library init (the order of every layer's init), the public
 * allocation API and the malloc override (docs/malloc.md).
 *
 * The override symbols (malloc, free, ...) are strong and exported, so
 * both LD_PRELOAD and linking the library replace the C library's; C++
 * new/delete arrive through malloc/free.
 *
 * Init is lazy (first allocation or the constructor, whichever is first).
 * If the init itself allocates on the same thread (pthread_atfork may), the
 * allocation is served from the static bootstrap buffer below; free()
 * ignores bootstrap pointers, realloc() copies them out.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

volatile int _nd_initialized;
/* Protects the init sequence (rank: internal.h, "Lock order"). */
ND_LOCK_DEFINE(init_lock, ND_RANK_INIT);
/* The thread running the init (its thread pointer), so that the init's own
 * allocations take the bootstrap buffer: no thread-local variable needed. */
static uintptr_t init_owner;
/* NODALLOC_CHECK=1: the sized frees check their size (set by the init). */
static bool sized_check;

/* ---- init ---------------------------------------------------------------- */

/* Fork: every registered lock (internal.h, "Lock order") is held across
 * fork(), so the child never sees a half-made change; the child has one
 * thread and resets them. */
static void fork_prepare(void)
{
	_nd_slab_flush_remote(); /* the forking thread's batched remote frees go home */
	_nd_lock_fork_prepare();
}

static void fork_child(void)
{
	_nd_lock_fork_child();
	_nd_stats_fork_child(); /* the child does not count into the parent's export */
}

bool _nd_init(void)
{
	uintptr_t me = (uintptr_t)__builtin_thread_pointer();
	if (__atomic_load_n(&init_owner, __ATOMIC_RELAXED) == me)
		return false; /* the init allocating: the caller uses the bootstrap */
	_nd_lock(&init_lock);
	if (_nd_initialized) {
		_nd_unlock(&init_lock);
		return _nd_initialized > 0;
	}
	__atomic_store_n(&init_owner, me, __ATOMIC_RELAXED);
	_nd_opt_init();
	bool ok = _nd_topo_init() == 0 && _nd_stats_init() == 0 && _nd_policy_init() == 0 &&
		  _nd_page_init() == 0 && _nd_slab_init() == 0 && _nd_heap_init() == 0;
	sized_check = _nd_opt_int(ND_OPT_CHECK) != 0;
	if (ok) {
		pthread_atfork(fork_prepare, _nd_lock_fork_parent, fork_child);
		_nd_stats_set_classes(nd_stats_classes); /* pushed down: stats is below slab */
	} else
		_nd_msg_error("initialization failed: allocations will fail with ENOMEM");
	__atomic_store_n(&_nd_initialized, ok ? 1 : -1, __ATOMIC_RELEASE);
	__atomic_store_n(&init_owner, 0, __ATOMIC_RELAXED);
	_nd_unlock(&init_lock);
	return ok;
}

__attribute__((constructor)) static void nd_constructor(void)
{
	_nd_ensure_init();
}

__attribute__((destructor)) static void nd_destructor(void)
{
	_nd_stats_at_exit();
	_nd_thread_fini(); /* dlclose: no thread may call into the gone library */
}

/* Not initialized yet: run the init; false = serve from the bootstrap. */
static bool init_or_boot(void)
{
	return __atomic_load_n(&_nd_initialized, __ATOMIC_ACQUIRE) > 0 || _nd_init();
}

/* ---- allocation ---------------------------------------------------------- */

/* ---- bootstrap buffer ------------------------------------------------------
 * Allocations made while the library initializes on the same thread (the
 * init's own calls, e.g. pthread_atfork) or after a failed init. Bump only:
 * free() ignores these blocks, realloc() copies them out. */
#define BOOT_SIZE ((size_t)256 << 10)
static char boot_buf[BOOT_SIZE] __attribute__((aligned(ND_PAGE_SIZE)));
static size_t boot_used; /* atomic bump offset */

/* Each block has its size in the 16 bytes in front of it. */
static void *boot_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	if (size > BOOT_SIZE || align > BOOT_SIZE / 4) {
		errno = ENOMEM;
		return NULL;
	}
	size_t off = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start, end;
	do {
		start = ND_ALIGN_UP(off + 16, align);
		end = ND_ALIGN_UP(start + (size ? size : 1), 16);
		if (end > BOOT_SIZE) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&boot_used, &off, end, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	*(size_t *)(boot_buf + start - 16) = size;
	return boot_buf + start;
}

static bool boot_owns(const void *p)
{
	return (const char *)p >= boot_buf && (const char *)p < boot_buf + BOOT_SIZE;
}

static size_t boot_size(const void *p)
{
	return *(const size_t *)((const char *)p - 16);
}


/* Above ND_SLAB_MAX, and a small size before the init (the heap layer
 * does not call up to run it: it returns NULL with errno untouched). */
static __attribute__((noinline)) void *malloc_init(size_t size)
{
	if (!init_or_boot())
		return boot_alloc(size, 16);
	return size <= ND_SLAB_MAX ? _nd_heap_malloc(size) : _nd_large_alloc(size, 0, NULL, -1);
}

/* A key miss of the <= ND_SLAB_DIRECT path (rare: a CPU or policy
 * change, the first call, check mode). */
static __attribute__((noinline)) void *malloc_small(size_t size)
{
	void *o = _nd_heap_malloc(size);
	if (nd_unlikely(o == NULL) && __atomic_load_n(&_nd_initialized, __ATOMIC_RELAXED) <= 0)
		return malloc_init(size);
	return o;
}

/* The fast path (docs/malloc.md): the thread record's current slab for
 * size; the key still matches the CPU pair (same CPU, no policy change
 * since the heap was resolved); pop. Everything else goes to heap.c. */
void *nd_malloc(size_t size)
{
	_nd_thread_t *t = _nd_tls;
	if (nd_likely(size <= ND_SLAB_DIRECT)) {
		_nd_slab_hot_t *s = t->dir[ND_SLAB_DIR0 + size];
		if (nd_likely(_nd_slab_key_ok(t, &t->key))) {
			void *o = _nd_slab_pop(s);
			if (nd_likely(o != NULL))
				return o;
			return _nd_heap_refill(size);
		}
		return malloc_small(size);
	}
	/* initialized: the heap layer's NULL is ENOMEM (a tail call) */
	if (nd_likely(size <= ND_SLAB_MAX) && nd_likely(_nd_initialized > 0))
		return _nd_heap_malloc(size);
	return malloc_init(size);
}

/* The class's current slab of a heap (the placement calls' fast paths). */
static inline _nd_slab_hot_t *heap_slab(struct nd_heap *h, size_t size)
{
	return ((_nd_heap_hot_t *)(void *)h)->cur[_nd_slab_cls_tab[(size + 15) >> 4]];
}

/* Aligned allocation; align a power of two. */
static void *alloc_aligned(size_t align, size_t size, const nd_policy_t *pol, int node)
{
	if (!init_or_boot())
		return boot_alloc(size, align);
	if (_nd_slab_fits(size, align))
		return _nd_heap_alloc(size, align, pol, node);
	if (pol == NULL && node >= 0)
		pol = &_nd_policy_local;
	return _nd_large_alloc(size, align, pol, node);
}

void *nd_calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = nd_malloc(total);
	if (!p)
		return NULL;
	if (total <= ND_SLAB_MAX)
		memset(p, 0, total); /* slab objects are reused */
	else
		_nd_large_zero(p, total); /* fresh pages stay untouched, a reused run is cleared */
	return p;
}

/* The descriptor of a pointer handed to free/realloc; reports a pointer
 * the library never returned. NULL for a bootstrap pointer. */
static _nd_pagedesc_t *checked_desc(const void *p, const char *fn)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	const char *why;
	if (d && d->use == ND_USE_SLAB) {
		if (!(why = _nd_slab_invalid(p, d)))
			return d;
	} else if (d && d->use == ND_USE_LARGE) {
		if (!((uintptr_t)p & (ND_PAGE_SIZE - 1)) && d->state == ND_PG_RUN)
			return d;
		why = "inside an allocation, not its start";
	} else if (d && d->use == ND_USE_HEAP) {
		return d; /* heap_api.c validates */
	} else if (!d && boot_owns(p)) {
		return NULL;
	} else {
		why = d ? "not allocated by malloc, or already freed" : "not from this allocator";
	}
	_nd_msg_fatal("%s(): invalid pointer %p (%s)", fn, p, why);
}

/* Not a slab object by the slab map: NULL, large, bootstrap, invalid, or
 * any slab object in check mode (lim 0). */
static __attribute__((noinline)) void free_slow(void *p)
{
	if (!p)
		return;
	_nd_pagedesc_t *d = _nd_page_desc(p);
	if (!d || d->use != ND_USE_LARGE) {
		d = checked_desc(p, "free");
		if (!d)
			return; /* bootstrap memory is never reused */
		if (d->use == ND_USE_SLAB) {
			_nd_slab_free(p, d);
			return;
		}
		if (d->use == ND_USE_HEAP) {
			_nd_uheap_free(p, d);
			return;
		}
	}
	_nd_large_free(p, d);
}

/* The fast path (docs/malloc.md): the slab map gives a header for any
 * address; the index check proves p is an object start of it (else the
 * slow path sorts out NULL, large, invalid); the marker catches a double
 * free; the owner pushes, anyone else goes through the remote list. */
static inline __attribute__((always_inline)) void free_body(void *p)
{
	_nd_slab_hot_t *s = _nd_slab_of(p);
	switch (_nd_slab_free_classify(s, p)) {
	case 2:
		if (nd_unlikely(_nd_slab_push(s, p)))
			_nd_slab_free_emptied(s);
		return;
	case 0:
		free_slow(p);
		return;
	case 1:
		_nd_slab_free_marked(p, s);
	default:
		_nd_slab_free_other(p, s);
	}
}

void nd_free(void *p)
{
	free_body(p);
}

static void *place_onnode(size_t size, int node);

/* realloc's new block: on node (where the old one is, fallback along its
 * list), unless a bind policy is in force, which places it itself (node
 * first if it is in the set); node -1: by the policy. */
static void *realloc_alloc(size_t size, int node)
{
	if (node < 0)
		return nd_malloc(size);
	if (_nd_policy_current()->mode == ND_POLICY_BIND)
		return size > ND_SLAB_MAX ? _nd_large_alloc(size, 0, NULL, node) : nd_malloc(size);
	return place_onnode(size, node);
}

static size_t usable(const void *p, const _nd_pagedesc_t *d)
{
	if (!d)
		return boot_size(p);
	if (d->use == ND_USE_HEAP)
		return _nd_uheap_usable(p, d);
	return d->use == ND_USE_SLAB ? _nd_slab_usable(p, d) : _nd_large_usable(p, d);
}

size_t nd_usable_size(const void *p)
{
	if (!p)
		return 0;
	return usable(p, checked_desc(p, "malloc_usable_size"));
}

void *nd_realloc(void *p, size_t size)
{
	if (!p)
		return nd_malloc(size);
	if (size == 0) { /* glibc: frees and returns NULL */
		nd_free(p);
		return NULL;
	}
	_nd_pagedesc_t *d = checked_desc(p, "realloc");
	if (d && ((d->use == ND_USE_SLAB && _nd_slab_freed(p, d)) || (d->use == ND_USE_HEAP && _nd_uheap_freed(p, d))))
		_nd_msg_fatal("realloc(): invalid pointer %p (already freed)", p);
	size_t have = usable(p, d);
	if (d && size <= have) {
		/* in place: growing within the class or run, or shrinking by at
		 * most half (a bigger shrink moves, to give the memory back) */
		if ((d->use == ND_USE_SLAB || d->use == ND_USE_HEAP) && (size > have / 2 || have <= 64))
			return p;
		if (d->use == ND_USE_LARGE && size > have / 2 && size > ND_SLAB_MAX) {
			_nd_large_resize(p, d, size);
			return p;
		}
		/* a big shrink that stays large gives the tail back in place */
		if (d->use == ND_USE_LARGE && size > ND_SLAB_MAX && _nd_large_shrink(p, d, size))
			return p;
	}
	/* a large block that grows takes the free pages after it if it can */
	if (d && d->use == ND_USE_LARGE && size > have && _nd_large_grow(p, d, size))
		return p;
	/* the new block goes where the old one is (a block spread over nodes
	 * by offset: where the policy in force puts it) */
	int node = -1;
	if (d && d->use == ND_USE_SLAB)
		node = _nd_slab_node(d);
	else if (d && d->use == ND_USE_LARGE && !(d->flags & ND_PGF_PLACED))
		node = d->node;
	void *q = d && d->use == ND_USE_HEAP ? _nd_uheap_realloc_alloc(d, size) : realloc_alloc(size, node);
	if (!q)
		return NULL; /* p untouched, errno ENOMEM */
	memcpy(q, p, have < size ? have : size);
	if (d)
		nd_free(p);
	return q;
}

void *nd_aligned_alloc(size_t align, size_t size)
{
	if (align == 0 || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	if (align <= 16)
		return nd_malloc(size);
	return alloc_aligned(align, size, NULL, -1);
}

/* ---- placement API ------------------------------------------------------- */

/* On a node known to be valid (init done). */
static void *place_onnode(size_t size, int node)
{
	if (size <= ND_SLAB_MAX)
		return _nd_heap_onnode(size, node);
	return _nd_large_alloc(size, 0, &_nd_policy_local, node);
}

static __attribute__((noinline)) void *onnode_slow(size_t size, int node)
{
	if (!init_or_boot())
		return boot_alloc(size, 16);
	if (!_nd_topo_valid_node(_nd_topo(), node)) {
		_nd_msg_api("nd_malloc_onnode: node %d does not exist (node limit %d)", node, _nd_topo()->node_limit);
		errno = EINVAL;
		return NULL;
	}
	return place_onnode(size, node);
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
	if (!init_or_boot())
		return boot_alloc(size, 16);
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
static void *alloc_policy(size_t size, const nd_policy_t *pol)
{
	bool il = pol->mode == ND_POLICY_INTERLEAVE || pol->mode == ND_POLICY_WEIGHTED;
	if (size <= ND_SLAB_MAX && !(il && size > ND_PAGE_SIZE))
		return _nd_heap_alloc(size, 0, pol, -1);
	return _nd_large_alloc(size, 0, pol, -1);
}

void *nd_malloc_interleaved(size_t size, const nd_nodemask_t *nodes, size_t granularity)
{
	if (!init_or_boot())
		return boot_alloc(size, 16);
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
	if (!init_or_boot())
		return boot_alloc(size, 16);
	bool il = p->mode == ND_POLICY_INTERLEAVE || p->mode == ND_POLICY_WEIGHTED;
	if (size <= ND_SLAB_MAX && !(il && size > ND_PAGE_SIZE))
		return _nd_heap_policy(size, p); /* validates, caches, reports */
	char err[200];
	if (nd_policy_check(p, err, sizeof err) != 0) {
		_nd_msg_api("nd_malloc_policy: %s", err);
		errno = EINVAL;
		return NULL;
	}
	return alloc_policy(size, p);
}

/* Fast path: the thread's cache entry 0 remembers this policy object (the
 * words that can differ, internal.h) and the heap it resolved to on this
 * CPU; pop from that heap. */
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
	if (!init_or_boot()) {
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

int nd_version(void)
{
	return ND_VERSION;
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
	else if (!init_or_boot())
		p = boot_alloc(size, align);
	else if (node != ND_NODE_LOCAL && !_nd_topo_valid_node(_nd_topo(), node))
		p = (errno = EINVAL, NULL);
	else if (align > 16)
		p = alloc_aligned(align, size, &_nd_policy_local, node < 0 ? -1 : node);
	else
		p = node < 0 ? local_slow(size) : place_onnode(size, node);
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
	} else if (!init_or_boot()) {
		q = boot_alloc(size, align);
	} else if (!p || p->mode == ND_POLICY_DEFAULT) {
		q = alloc_aligned(align, size, NULL, -1);
	} else {
		const nd_policy_t *ip = _nd_policy_intern(p, NULL, 0);
		if (!ip)
			return NULL; /* errno EINVAL or ENOMEM */
		/* as without alignment: more than a page under interleave is spread */
		bool il = ip->mode == ND_POLICY_INTERLEAVE || ip->mode == ND_POLICY_WEIGHTED;
		q = il && size > ND_PAGE_SIZE ? _nd_large_alloc(size, align, ip, -1) : alloc_aligned(align, size, ip, -1);
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

/* ---- sized free, good size ------------------------------------------------ */

/* NODALLOC_CHECK=1: size (rounded up to align) must be one a block of
 * this usable size can have been asked with: small: more than half of
 * it (a class starts above half of the next; realloc keeps a block in
 * place only for more than half), or any at most 64 bytes; large: at
 * least a quarter of its pages (a cached run is reused whole up to 4
 * times the request) and, unaligned, above the largest class. */
static __attribute__((noinline)) void sized_slow(void *p, size_t align, size_t size, const char *fn)
{
	if (!p)
		return;
	_nd_pagedesc_t *d = checked_desc(p, fn);
	if (!d)
		return; /* bootstrap */
	size_t have = usable(p, d);
	size_t want = size > ND_SLAB_MAX || align <= 16 || align > ND_PAGE_SIZE ? size : ND_ALIGN_UP(size ? size : 1, align);
	bool ok;
	if (d->use == ND_USE_LARGE)
		ok = want <= have && ND_ALIGN_UP(want | 1, ND_PAGE_SIZE) * 4 >= have && (align > 16 || size > ND_SLAB_MAX);
	else
		ok = want <= have && (have <= 64 || want > have / 2);
	if (!ok)
		_nd_msg_fatal("%s(): size %zu is not the size of block %p (usable size %zu)", fn, size, p, have);
}

void nd_free_sized(void *p, size_t size)
{
	if (nd_unlikely(sized_check))
		sized_slow(p, 0, size, "free_sized");
	free_body(p);
}

void nd_free_aligned_sized(void *p, size_t align, size_t size)
{
	if (nd_unlikely(sized_check))
		sized_slow(p, align, size, "free_aligned_sized");
	free_body(p);
}

size_t nd_good_size(size_t size)
{
	if (size <= ND_SLAB_MAX)
		return _nd_slab_class_size(_nd_slab_class_of(size));
	if (size > PTRDIFF_MAX - ND_PAGE_SIZE)
		return 0;
	return ND_ALIGN_UP(size, ND_PAGE_SIZE);
}

/* ---- the malloc override ------------------------------------------------- */

/* cmake -DNODALLOC_OVERRIDE=OFF defines ND_NO_OVERRIDE: only the nd_* API
 * (for ThreadSanitizer builds, whose runtime owns malloc; make tsan). */
#ifndef ND_NO_OVERRIDE

#define OVERRIDE __attribute__((visibility("default")))

OVERRIDE void *malloc(size_t size) __attribute__((alias("nd_malloc")));
OVERRIDE void free(void *p) __attribute__((alias("nd_free")));
OVERRIDE void cfree(void *p) __attribute__((alias("nd_free")));
OVERRIDE void *calloc(size_t n, size_t size) __attribute__((alias("nd_calloc")));
OVERRIDE void *realloc(void *p, size_t size) __attribute__((alias("nd_realloc")));
OVERRIDE void *aligned_alloc(size_t align, size_t size) __attribute__((alias("nd_aligned_alloc")));
OVERRIDE size_t malloc_usable_size(void *p) __attribute__((alias("nd_usable_size")));
/* C23 (glibc declares them from 2.41 on) */
OVERRIDE void free_sized(void *p, size_t size) __attribute__((alias("nd_free_sized")));
OVERRIDE void free_aligned_sized(void *p, size_t align, size_t size) __attribute__((alias("nd_free_aligned_sized")));

/* glibc's malloc_trim: every free page the library keeps committed goes
 * back to the OS now (the large-run caches, the page level's dirty free
 * pages); pad is ignored. 1 if memory was released, else 0. */
OVERRIDE int malloc_trim(size_t pad)
{
	(void)pad;
	if (!_nd_ensure_init())
		return 0;
	size_t b = _nd_large_flush(-1);
	b += _nd_page_trim(-1);
	return b != 0;
}

OVERRIDE void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return nd_realloc(p, total);
}

OVERRIDE int posix_memalign(void **out, size_t align, size_t size)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	int saved = errno;
	void *p = align <= 16 ? nd_malloc(size) : alloc_aligned(align, size, NULL, -1);
	if (!p) {
		errno = saved;
		return ENOMEM;
	}
	*out = p;
	return 0;
}

/* glibc: a non-power-of-two alignment is rounded up to one. */
OVERRIDE void *memalign(size_t align, size_t size)
{
	if (align <= 16)
		return nd_malloc(size);
	if (align > ((size_t)1 << 62)) {
		errno = EINVAL;
		return NULL;
	}
	if (align & (align - 1))
		align = (size_t)1 << (64 - __builtin_clzll(align));
	return alloc_aligned(align, size, NULL, -1);
}

OVERRIDE void *valloc(size_t size)
{
	return alloc_aligned(ND_PAGE_SIZE, size, NULL, -1);
}

OVERRIDE void *pvalloc(size_t size)
{
	if (size > SIZE_MAX - ND_PAGE_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	size = size ? ND_ALIGN_UP(size, ND_PAGE_SIZE) : ND_PAGE_SIZE;
	return alloc_aligned(ND_PAGE_SIZE, size, NULL, -1);
}
#endif /* ND_NO_OVERRIDE */
