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
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

volatile int _nd_initialized;
/* Protects the init sequence (rank: nd_lock.h, "Lock order"). */
ND_LOCK_DEFINE(init_lock, ND_RANK_INIT);
/* The thread running the init (its thread pointer), so that the init's own
 * allocations take the bootstrap buffer: no thread-local variable needed. */
static uintptr_t init_owner;
/* NODALLOC_CHECK=1: the sized frees check their size (set by the init). */
static bool sized_check;

/* ---- init ---------------------------------------------------------------- */

/* Fork: every registered lock (nd_lock.h, "Lock order") is held across
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
	_nd_slab_xfer_fork_child(); /* lists of threads the child does not have */
	_nd_page_fork_child(); /* bursts of threads the child does not have */
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
	_nd_os_text_split();
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

/* ---- allocation ---------------------------------------------------------- */

/* ---- bootstrap buffer ------------------------------------------------------
 * Allocations made while the library initializes on the same thread (the
 * init's own calls, e.g. pthread_atfork) or after a failed init. Bump only:
 * free() ignores these blocks, realloc() copies them out. */
#define BOOT_SIZE ((size_t)256 << 10)
static char boot_buf[BOOT_SIZE] __attribute__((aligned(ND_PAGE_SIZE)));
static size_t boot_used; /* atomic bump offset */

/* Each block has its size in the 16 bytes in front of it. */
void *_nd_boot_alloc(size_t size, size_t align)
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
	if (!_nd_init_or_boot())
		return _nd_boot_alloc(size, 16);
	return size <= ND_SLAB_MAX ? _nd_heap_malloc(size) : _nd_large_alloc(size, 0, NULL, -1);
}

/* A key miss of the fast path (rare: a CPU or policy change, the first
 * call, check mode). */
static __attribute__((noinline)) void *malloc_small(size_t size)
{
	void *o = _nd_heap_malloc(size);
	if (nd_unlikely(o == NULL) && __atomic_load_n(&_nd_initialized, __ATOMIC_RELAXED) <= 0)
		return malloc_init(size);
	return o;
}

/* The fast path (docs/malloc.md): the thread record's current slab for
 * size (by size up to ND_SLAB_DIR_MAX, else by class); the key still
 * matches the CPU pair (same CPU, no policy change since the heap was
 * resolved); pop. Everything else goes to heap.c. */
static inline __attribute__((always_inline)) void *malloc_body(size_t size)
{
	_nd_thread_t *t = _nd_tls;
	_nd_slab_hot_t *s;
	if (nd_likely(size <= ND_SLAB_DIR_MAX))
		s = t->dir[(size + 15) >> 4];
	else if (nd_likely(size <= ND_SLAB_MAX))
		s = t->cdir[_nd_slab_cls_tab[(size + 15) >> 4]];
	else
		return malloc_init(size);
	if (nd_likely(_nd_slab_key_ok(t, &t->key))) {
		void *o = _nd_slab_pop(s);
		if (nd_likely(o != NULL)) {
			/* o in the return register from its load on: gcc kept
			 * s there and o elsewhere, then one mov more per malloc */
			__asm__("" : "+a"(o));
			if (o == NULL)
				__builtin_unreachable(); /* new's NULL test knows it */
			return o;
		}
		return _nd_heap_refill(size);
	}
	return malloc_small(size);
}

void *nd_malloc(size_t size)
{
	return malloc_body(size);
}


/* Aligned allocation; align a power of two. */
void *_nd_malloc_aligned(size_t align, size_t size, const nd_policy_t *pol, int node)
{
	if (!_nd_init_or_boot())
		return _nd_boot_alloc(size, align);
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
	if (d && d->use == ND_USE_HEAP) {
		_nd_uheap_free(p, d); /* validates, as checked_desc would let it */
		return;
	}
	if (!d || d->use != ND_USE_LARGE) {
		d = checked_desc(p, "free");
		if (!d)
			return; /* bootstrap memory is never reused */
		if (d->use == ND_USE_SLAB) {
			_nd_slab_free(p, d);
			return;
		}
	}
	_nd_large_free(p, d);
}

/* The fast path (docs/malloc.md): the slab map gives a header for any
 * address; the index check proves p is an object start of it (else the
 * slow path sorts out NULL, large, invalid: false); the marker catches a
 * double free; then the push onto the slab or a borrowed list, or home
 * (nd_slab.h, _nd_slab_free_push). Check mode never gets past the index
 * check (its slabs have lim 0): every free of it takes the slow path. */
static inline __attribute__((always_inline)) bool free_fast(void *p)
{
	uint64_t mul;
	_nd_slab_hot_t *s = _nd_slab_of_mul(p, &mul);
	switch (_nd_slab_free_classify(s, mul, p)) {
	case 0:
		return false;
	case 1:
		_nd_slab_free_marked(p, s);
	default:
		break;
	}
	ND_ASSERT(!sized_check, "check mode's frees take the slow path");
	_nd_slab_free_push(s, p);
	return true;
}

static inline __attribute__((always_inline)) void free_body(void *p)
{
	if (!free_fast(p))
		free_slow(p);
}

void nd_free(void *p)
{
	free_body(p);
}

/* realloc's new block: on node (where the old one is, fallback along its
 * list), unless a bind policy is in force, which places it itself (node
 * first if it is in the set); node -1: by the policy. A small block
 * under bind took the policy's heap, its first node (audit14: a node-1
 * block under bind:0-1 came back on node 0); now node's heap if node is
 * in the set, and the policy's if that fell back to another node. */
static void *realloc_alloc(size_t size, int node)
{
	if (node < 0)
		return nd_malloc(size);
	const nd_policy_t *cur = _nd_policy_current();
	if (cur->mode != ND_POLICY_BIND)
		return _nd_place_onnode(size, node);
	if (size > ND_SLAB_MAX)
		return _nd_large_alloc(size, 0, NULL, node);
	if (nd_nodemask_isset(&cur->nodes, node)) {
		void *q = _nd_place_onnode(size, node);
		if (!q || _nd_page_node_of(q) == node)
			return q;
		nd_free(q);
	}
	return nd_malloc(size);
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
	/* a large block that grows takes the free pages after it if it can
	 * (one outside the slots may move, with its pages) */
	void *grown;
	if (d && d->use == ND_USE_LARGE && size > have && (grown = _nd_large_grow(p, d, size)))
		return grown;
	/* the new block goes where the old one is (a block spread over nodes
	 * by offset: where the policy in force puts it) */
	int node = -1;
	if (d && d->use == ND_USE_SLAB)
		node = _nd_slab_node(d);
	else if (d && d->use == ND_USE_LARGE && !(d->flags & ND_PGF_PLACED))
		node = d->node;
	struct nd_heap_api *uh = d ? _nd_uheap_of(d) : NULL;
	void *q = uh ? _nd_uheap_realloc_alloc(uh, d, size) : realloc_alloc(size, node);
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
	return _nd_malloc_aligned(align, size, NULL, -1);
}

int nd_version(void)
{
	return ND_VERSION;
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
	/* a page run's rule: want's pages hold a quarter of have at least */
	bool run_ok = ND_ALIGN_UP(want | 1, ND_PAGE_SIZE) * 4 >= have;
	/* a large block unaligned: above a page, not only above the largest
	 * class: a spreading policy serves more than a page as a page run
	 * (place.c; audit24: interleave's 4097 .. 32768 B were fatal) */
	if (d->use == ND_USE_LARGE)
		ok = want <= have && run_ok && (align > 16 || size > ND_PAGE_SIZE);
	else /* a slab object, or a public heap's chunk (realloc keeps both
	      * above half their size); a chunk aligned above a page holds
	      * a page at least (audit24: its sizes below half were fatal) */
		ok = want <= have && (have <= 64 || want > have / 2 || (d->use == ND_USE_HEAP && align > 16 && run_ok));
	if (!ok)
		_nd_msg_fatal("%s(): size %zu is not the size of block %p (usable size %zu)", fn, size, p, have);
}

/* The sized frees' slow path: in check mode every block comes here
 * (free_fast), so the fast path is free's, without a size test (size
 * stays in the register it came in: no copy on the fast path). */
static __attribute__((noinline)) void sized_free_slow(void *p, size_t size, size_t align, const char *fn)
{
	if (sized_check)
		sized_slow(p, align, size, fn);
	free_slow(p);
}

void nd_free_sized(void *p, size_t size)
{
	if (!free_fast(p))
		sized_free_slow(p, size, 0, "free_sized");
}

void nd_free_aligned_sized(void *p, size_t align, size_t size)
{
	if (!free_fast(p))
		sized_free_slow(p, size, align, "free_aligned_sized");
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

/* With glibc's other names of its allocator, __libc_* (and
 * __posix_memalign, __libc_mallinfo, __libc_mallopt below; mimalloc and
 * tcmalloc export them too): a library whose hook falls back to
 * __libc_malloc, or that frees with __libc_free, would hand our blocks to
 * glibc's allocator (abort, or a corrupted glibc heap). */
OVERRIDE void *malloc(size_t size) __attribute__((alias("nd_malloc")));
OVERRIDE void *__libc_malloc(size_t size) __attribute__((alias("nd_malloc")));
OVERRIDE void free(void *p) __attribute__((alias("nd_free")));
OVERRIDE void __libc_free(void *p) __attribute__((alias("nd_free")));
OVERRIDE void cfree(void *p) __attribute__((alias("nd_free")));
OVERRIDE void __libc_cfree(void *p) __attribute__((alias("nd_free")));
OVERRIDE void *calloc(size_t n, size_t size) __attribute__((alias("nd_calloc")));
OVERRIDE void *__libc_calloc(size_t n, size_t size) __attribute__((alias("nd_calloc")));
OVERRIDE void *realloc(void *p, size_t size) __attribute__((alias("nd_realloc")));
OVERRIDE void *__libc_realloc(void *p, size_t size) __attribute__((alias("nd_realloc")));
OVERRIDE void *aligned_alloc(size_t align, size_t size) __attribute__((alias("nd_aligned_alloc")));
OVERRIDE size_t malloc_usable_size(void *p) __attribute__((alias("nd_usable_size")));
/* C23 (glibc declares them from 2.41 on) */
OVERRIDE void free_sized(void *p, size_t size) __attribute__((alias("nd_free_sized")));
OVERRIDE void free_aligned_sized(void *p, size_t align, size_t size) __attribute__((alias("nd_free_aligned_sized")));

/* glibc's malloc_trim: every free page the library keeps committed goes
 * back to the OS now (the kept empty slabs and the free pages inside the
 * partial slabs of the calling thread's heaps and of the parked ones,
 * exited threads': other running threads' heaps are theirs to touch; the
 * large-run caches, the page level's dirty free pages); pad is ignored.
 * 1 if memory was released, else 0. */
OVERRIDE int malloc_trim(size_t pad)
{
	(void)pad;
	if (!_nd_ensure_init())
		return 0;
	/* the caller's batched remote frees and borrowed lists go home
	 * first: objects out keep their slabs (a parked heap's too) from the
	 * trim, and count in use (test_trust_stats) */
	_nd_slab_flush_remote();
	size_t b = _nd_heap_trim_self(false);
	b += _nd_heap_trim_parked();
	b += _nd_large_flush(-1);
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

/* posix_memalign and __posix_memalign (aliases: stdlib.h's attributes are
 * posix_memalign's, which an alias of it would have to repeat) */
static int posix_memalign_body(void **out, size_t align, size_t size)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	int saved = errno;
	void *p = align <= 16 ? nd_malloc(size) : _nd_malloc_aligned(align, size, NULL, -1);
	if (!p) {
		errno = saved;
		return ENOMEM;
	}
	*out = p;
	return 0;
}
OVERRIDE int posix_memalign(void **out, size_t align, size_t size) __attribute__((alias("posix_memalign_body")));
OVERRIDE int __posix_memalign(void **out, size_t align, size_t size) __attribute__((alias("posix_memalign_body")));

/* glibc (2.36): a non-power-of-two alignment is rounded up to one;
 * above 2^63 (no power of two is) EINVAL, 2^63 itself ENOMEM like any
 * alignment no run can have. */
OVERRIDE void *memalign(size_t align, size_t size)
{
	if (align <= 16)
		return nd_malloc(size);
	if (align > ((size_t)1 << 63)) {
		errno = EINVAL;
		return NULL;
	}
	if (align & (align - 1))
		align = (size_t)1 << (64 - __builtin_clzll(align));
	return _nd_malloc_aligned(align, size, NULL, -1);
}
OVERRIDE void *__libc_memalign(size_t align, size_t size) __attribute__((alias("memalign")));

static void *valloc_body(size_t size) /* as posix_memalign_body */
{
	return _nd_malloc_aligned(ND_PAGE_SIZE, size, NULL, -1);
}
OVERRIDE void *valloc(size_t size) __attribute__((alias("valloc_body")));
OVERRIDE void *__libc_valloc(size_t size) __attribute__((alias("valloc_body")));

OVERRIDE void *pvalloc(size_t size)
{
	if (size > SIZE_MAX - ND_PAGE_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	size = size ? ND_ALIGN_UP(size, ND_PAGE_SIZE) : ND_PAGE_SIZE;
	return _nd_malloc_aligned(ND_PAGE_SIZE, size, NULL, -1);
}
OVERRIDE void *__libc_pvalloc(size_t size) __attribute__((alias("pvalloc")));

/* ---- mallinfo2, mallinfo, malloc_stats, mallopt ------------------------------
 * glibc's introspection with nodalloc's figures (docs/malloc.md, "mallinfo2":
 * what each field means here). No malloc.h: its layouts (the ABI, ten
 * size_t or ten int in this order) and parameter numbers are these. */
struct nd_mallinfo2 {
	size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
struct nd_mallinfo {
	int arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
enum {
	ND_M_MXFAST = 1, ND_M_NLBLKS = 2, ND_M_GRAIN = 3, ND_M_KEEP = 4,
	ND_M_TRIM_THRESHOLD = -1, ND_M_TOP_PAD = -2, ND_M_MMAP_THRESHOLD = -3, ND_M_MMAP_MAX = -4,
	ND_M_CHECK_ACTION = -5, ND_M_PERTURB = -6, ND_M_ARENA_TEST = -7, ND_M_ARENA_MAX = -8,
};
#define ND_MAX_FAST 160 /* glibc's MAX_FAST_SIZE on 64 bits: M_MXFAST's range */

/* A snapshot without stopping other threads (exact when the process is
 * quiet): the slab headers (one walk, as nd_stats_classes does), the
 * nodes' byte counters, the large-run caches and each slot's dirty pages
 * (their locks, briefly). */
static struct nd_mallinfo2 usage(void)
{
	struct nd_mallinfo2 m = { 0 };
	if (!_nd_ensure_init())
		return m;
	_nd_slab_class_stats_t cls[ND_SLAB_CLASSES];
	_nd_slab_class_usage(cls);
	uint64_t in_use = 0;
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		uint64_t spare = cls[c].capacity > cls[c].objects ? cls[c].capacity - cls[c].objects : 0;
		in_use += cls[c].objects * cls[c].size;
		m.smblks += spare;
		m.fsmblks += spare * cls[c].size;
	}
	uint64_t large, cached, runs, kept, kruns;
	_nd_large_usage(&large, &cached, &runs);
	_nd_large_kept(&kept, &kruns);
	m.uordblks = in_use + large;
	m.ordblks = runs + kruns; /* every thread's kept runs too: freed, kept for reuse */
	m.keepcost = cached + kept; /* malloc_trim's: every thread's kept runs (tcsteal28) */
	int lim = _nd_topo()->node_limit;
	for (int n = -1; n < lim && n < ND_MAX_NODES; n++) {
		nd_node_stats_t st;
		if (n >= 0 && nd_stats_get_nodes(&st, n, 1) == 1)
			m.arena += st.bytes_committed;
		_nd_page_info_t pi;
		if (_nd_page_info(n, &pi) == 0) /* n -1: the mixed slot */
			m.keepcost += pi.dirty_pages << ND_PAGE_SHIFT;
	}
	m.fordblks = m.arena > m.uordblks ? m.arena - m.uordblks : 0;
	return m;
}

OVERRIDE struct nd_mallinfo2 mallinfo2(void)
{
	return usage();
}

/* glibc converts each field to int (wrapping above 2 GiB); saturated here,
 * so that a big figure never reads as a small or negative one. */
static int sat(size_t v)
{
	return v > INT_MAX ? INT_MAX : (int)v;
}

OVERRIDE struct nd_mallinfo mallinfo(void)
{
	struct nd_mallinfo2 m = usage();
	return (struct nd_mallinfo){ sat(m.arena), sat(m.ordblks), sat(m.smblks), sat(m.hblks), sat(m.hblkhd),
				     sat(m.usmblks), sat(m.fsmblks), sat(m.uordblks), sat(m.fordblks), sat(m.keepcost) };
}
OVERRIDE struct nd_mallinfo __libc_mallinfo(void) __attribute__((alias("mallinfo")));

/* To stderr, as glibc's: its totals' lines (mallinfo2's figures), then
 * the report NODALLOC_STATS=1 prints at exit. */
OVERRIDE void malloc_stats(void)
{
	struct nd_mallinfo2 m = usage();
	char buf[512];
	_nd_msg_format(buf, sizeof buf,
		       "nodalloc malloc_stats:\n"
		       "Total (incl. mmap):\n"
		       "system bytes     = %10zu\n"
		       "in use bytes     = %10zu\n"
		       "free bytes       = %10zu\n"
		       "releasable bytes = %10zu\n"
		       "max mmap regions = %10d\n"
		       "max mmap bytes   = %10d\n",
		       m.arena, m.uordblks, m.fordblks, m.keepcost, 0, 0);
	_nd_msg_out(2, buf);
	_nd_stats_print_self(2, false);
}

/* glibc's parameters, each decided (docs/malloc.md, "mallopt"): 1 where
 * nodalloc already does what is asked or the knob has no meaning here, 0
 * for what it would not do (M_PERTURB's fill, M_MXFAST out of glibc's
 * range) and for a number glibc does not know (glibc answers 1). Nothing
 * changes: the equivalents are NODALLOC_* options, read at the init. */
OVERRIDE int mallopt(int param, int value)
{
	switch (param) {
	case ND_M_MXFAST: /* no fast bins: every small size is cached by class */
		return value >= 0 && value <= ND_MAX_FAST;
	case ND_M_PERTURB: /* blocks are never filled: only "off" holds */
		return value == 0;
	case ND_M_NLBLKS: /* no-ops in glibc too */
	case ND_M_GRAIN:
	case ND_M_KEEP:
	case ND_M_TRIM_THRESHOLD: /* NODALLOC_PURGE_DECAY_MS and the dirty limit */
	case ND_M_TOP_PAD: /* no top chunk */
	case ND_M_MMAP_THRESHOLD: /* every block above 32 KiB is a page run */
	case ND_M_MMAP_MAX: /* no block is mapped on its own */
	case ND_M_CHECK_ACTION: /* a no-op in glibc since 2.34; NODALLOC_CHECK */
	case ND_M_ARENA_TEST: /* heaps by CPU and node, not arenas */
	case ND_M_ARENA_MAX:
		return 1;
	default:
		return 0;
	}
}
OVERRIDE int __libc_mallopt(int param, int value) __attribute__((alias("mallopt")));

/* ---- the C++ operators new and delete ------------------------------------ */

/* A C++ program's new and delete come here as directly as malloc and free
 * (else the C++ runtime's operator new calls malloc: a call more per
 * object, and a sized delete loses its size, which check mode verifies).
 * Itanium C++ ABI names, size_t = unsigned long (m), std::align_val_t
 * passed as a size_t. Out of memory is the runtime's business: only it
 * can run the new_handler loop and throw std::bad_alloc, so a failed
 * allocation calls the next definition of the same operator
 * (libstdc++'s or libc++'s, dlsym RTLD_NEXT), whose malloc is this
 * library's again. */
typedef void *(*cxx_new_fn)(size_t);
typedef void *(*cxx_new_nt_fn)(size_t, const void *);
typedef void *(*cxx_new_al_fn)(size_t, size_t);
typedef void *(*cxx_new_al_nt_fn)(size_t, size_t, const void *);

static __attribute__((noinline, cold)) void *cxx_next(const char *sym)
{
	void *f = _nd_os_next_symbol(sym);
	if (!f)
		_nd_msg_fatal("operator new (%s): out of memory, and no C++ runtime after nodalloc to throw std::bad_alloc", sym);
	return f;
}

static inline __attribute__((always_inline)) void *cxx_alloc_aligned(size_t size, size_t align)
{
	return align <= 16 ? malloc_body(size) : _nd_malloc_aligned(align, size, NULL, -1);
}

#define CXX_NEW(sym)                                                              \
	OVERRIDE void *sym(size_t size)                                            \
	{                                                                          \
		void *p = malloc_body(size);                                       \
		return nd_likely(p != NULL) ? p : ((cxx_new_fn)cxx_next(#sym))(size); \
	}
#define CXX_NEW_NOTHROW(sym)                                                      \
	OVERRIDE void *sym(size_t size, const void *nt)                            \
	{                                                                          \
		void *p = malloc_body(size);                                       \
		return nd_likely(p != NULL) ? p : ((cxx_new_nt_fn)cxx_next(#sym))(size, nt); \
	}
#define CXX_NEW_ALIGNED(sym)                                                      \
	OVERRIDE void *sym(size_t size, size_t align)                              \
	{                                                                          \
		void *p = cxx_alloc_aligned(size, align);                          \
		return nd_likely(p != NULL) ? p : ((cxx_new_al_fn)cxx_next(#sym))(size, align); \
	}
#define CXX_NEW_ALIGNED_NOTHROW(sym)                                              \
	OVERRIDE void *sym(size_t size, size_t align, const void *nt)              \
	{                                                                          \
		void *p = cxx_alloc_aligned(size, align);                          \
		return nd_likely(p != NULL) ? p : ((cxx_new_al_nt_fn)cxx_next(#sym))(size, align, nt); \
	}

CXX_NEW(_Znwm)                                   /* new(size_t) */
CXX_NEW(_Znam)                                   /* new[](size_t) */
CXX_NEW_NOTHROW(_ZnwmRKSt9nothrow_t)             /* new(size_t, nothrow_t) */
CXX_NEW_NOTHROW(_ZnamRKSt9nothrow_t)
CXX_NEW_ALIGNED(_ZnwmSt11align_val_t)            /* new(size_t, align_val_t) */
CXX_NEW_ALIGNED(_ZnamSt11align_val_t)
CXX_NEW_ALIGNED_NOTHROW(_ZnwmSt11align_val_tRKSt9nothrow_t)
CXX_NEW_ALIGNED_NOTHROW(_ZnamSt11align_val_tRKSt9nothrow_t)

/* delete(void *), delete(void *, size_t) and their array forms */
OVERRIDE void _ZdlPv(void *p) __attribute__((alias("nd_free")));
OVERRIDE void _ZdaPv(void *p) __attribute__((alias("nd_free")));
OVERRIDE void _ZdlPvm(void *p, size_t size) __attribute__((alias("nd_free_sized")));
OVERRIDE void _ZdaPvm(void *p, size_t size) __attribute__((alias("nd_free_sized")));

/* the nothrow and aligned forms: the alignment is the block's own */
#define CXX_DELETE(sym, ...)                                                      \
	OVERRIDE void sym(void *p, __VA_ARGS__)                                    \
	{                                                                          \
		free_body(p);                                                      \
	}
CXX_DELETE(_ZdlPvRKSt9nothrow_t, const void *nt)
CXX_DELETE(_ZdaPvRKSt9nothrow_t, const void *nt)
CXX_DELETE(_ZdlPvSt11align_val_t, size_t align)
CXX_DELETE(_ZdaPvSt11align_val_t, size_t align)
CXX_DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, size_t align, const void *nt)
CXX_DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, size_t align, const void *nt)

/* delete(void *, size_t, align_val_t): nd_free_aligned_sized's order */
OVERRIDE void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align)
{
	nd_free_aligned_sized(p, align, size);
}

OVERRIDE void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align)
{
	nd_free_aligned_sized(p, align, size);
}
#endif /* ND_NO_OVERRIDE */
