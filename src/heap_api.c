// SPDX-License-Identifier: MIT
/*
 * Top layer, next to malloc.c: where memory really is (nd_where, nd_move:
 * the kernel's view, by move_pages) and the public heaps, nd_heap_t
 * (docs/malloc.md; not the slab layer's heaps of heap.c).
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

/* Pages asked of the kernel per move_pages call (on the stack). */
#define BATCH 64

/* The pages [p, p + size) touches: first page and count. false (EINVAL)
 * for NULL or a range that wraps. */
static bool page_range(const void *p, size_t size, uintptr_t *first, size_t *n)
{
	uintptr_t a = (uintptr_t)p, last;
	if (!p || __builtin_add_overflow(a, size ? size - 1 : 0, &last)) {
		errno = EINVAL;
		return false;
	}
	*first = a & ~(uintptr_t)(ND_PAGE_SIZE - 1);
	*n = ((last - *first) >> ND_PAGE_SHIFT) + 1;
	return true;
}

long nd_where(const void *p, size_t size, uint64_t *counts, int max)
{
	uintptr_t a;
	size_t n;
	if (!counts || max < 1) {
		errno = EINVAL;
		return -1;
	}
	memset(counts, 0, (size_t)max * sizeof *counts);
	if (!page_range(p, size, &a, &n))
		return -1;
	long found = 0;
	const void *pages[BATCH];
	int status[BATCH];
	while (n) {
		unsigned long k = n < BATCH ? n : BATCH;
		for (unsigned long i = 0; i < k; i++)
			pages[i] = (const void *)(a + (i << ND_PAGE_SHIFT));
		int r = _nd_os_move_pages(0, k, pages, NULL, status, 0);
		if (r < 0) {
			errno = -r;
			return -1;
		}
		/* status: the node, or -ENOENT (never touched), -EFAULT (not mapped) */
		for (unsigned long i = 0; i < k; i++) {
			if (status[i] >= 0) {
				found++;
				if (status[i] < max)
					counts[status[i]]++;
			}
		}
		a += k << ND_PAGE_SHIFT;
		n -= k;
	}
	return found;
}

int nd_move(void *p, size_t size, int node)
{
	uintptr_t a;
	size_t n;
	if (!_nd_ensure_init()) {
		errno = ENOMEM;
		return -1;
	}
	const _nd_topo_t *t = _nd_topo();
	if (node < 0 || node >= t->node_limit || !t->has_mem[node]) {
		errno = EINVAL;
		return -1;
	}
	if (!page_range(p, size, &a, &n))
		return -1;
	const void *pages[BATCH];
	int nodes[BATCH], status[BATCH];
	int first_err = 0;
	while (n) {
		unsigned long k = n < BATCH ? n : BATCH;
		for (unsigned long i = 0; i < k; i++) {
			pages[i] = (const void *)(a + (i << ND_PAGE_SHIFT));
			nodes[i] = node;
		}
		int r = _nd_os_move_pages(0, k, pages, nodes, status, ND_MPOL_MF_MOVE);
		if (r < 0) {
			errno = -r;
			return -1;
		}
		/* a page never touched (ENOENT) or not mapped (EFAULT) has nothing
		 * to move. Other failures: the pages of a transparent huge page
		 * after its first report EBUSY (the first moved them all), so a
		 * page counts as failed only if it is not on node afterwards. */
		bool again = false;
		for (unsigned long i = 0; i < k; i++)
			again |= status[i] < 0 && status[i] != -ENOENT && status[i] != -EFAULT;
		int now[BATCH];
		if (again) {
			bool seen = _nd_os_move_pages(0, k, pages, NULL, now, 0) >= 0;
			for (unsigned long i = 0; i < k && !first_err; i++)
				if (status[i] < 0 && status[i] != -ENOENT && status[i] != -EFAULT && (!seen || now[i] != node))
					first_err = -status[i];
		}
		a += k << ND_PAGE_SHIFT;
		n -= k;
	}
	if (first_err) {
		errno = first_err;
		return -1;
	}
	return 0;
}

/* ---- heaps (nd_heap_*) ---------------------------------------------------
 * A heap owns page runs ("chunks") on its node, or placed by its policy
 * (an interleave policy rotates per chunk), taken from the page level with
 * _nd_page_alloc; every page of a chunk is marked ND_USE_HEAP with
 * user = the chunk's header, so free() finds it by page descriptor
 * (malloc.c's slow path: the slab map has no entry for these pages).
 * A small chunk holds objects of one size class from its first page on
 * (power-of-two classes aligned to their size, as in slabs); its header
 * is at its end. A large object (above ND_SLAB_MAX or aligned above a
 * page) is a chunk of its own.
 *
 * Synchronisation: the owner (the creating thread) allocates: free lists,
 * carving and the chunk list are its alone. Other threads' frees push the
 * object on the heap's remote stack (one CAS); the owner takes the stack
 * whole when a free list runs dry. Destroy: no other thread may free into
 * the heap meanwhile (the caller's contract). */

#define HEAP_MAGIC 0x6e64686561700001ULL
#define CHUNK_MIN_PAGES 16 /* 64 KiB: at least 8 objects of every class */

typedef struct hchunk {
	struct hchunk *next, *prev; /* the heap's chunk list (owner) */
	struct nd_heap_api *heap;
	char *start;                /* first object = the run's start */
	size_t npages;
	uint32_t size;              /* object size; 0 = a large chunk */
	uint32_t cls;
	uint32_t cap;               /* objects that fit */
	uint32_t carved;            /* atomic (read by remote frees): objects handed out so far */
	int freed;                  /* large: atomic, set by its free */
} __attribute__((aligned(ND_CACHE_LINE))) hchunk_t;

struct nd_heap_api {
	uint64_t magic;
	int node;                   /* >= 0: node heap; -1: policy heap */
	const nd_policy_t *pol;     /* interned policy, or local for a node heap */
	uintptr_t owner;            /* thread pointer of the creator */
	void *free[ND_SLAB_CLASSES];     /* owner: free objects (word 0 next, word 1 marker) */
	hchunk_t *cur[ND_SLAB_CLASSES];  /* owner: the chunk being carved */
	void *remote;               /* atomic: objects freed by other threads */
	hchunk_t *chunks;           /* owner: every chunk */
};

static inline uintptr_t my_tp(void)
{
	return (uintptr_t)__builtin_thread_pointer();
}

/* A run of np pages (aligned to ap) placed as h says, every page marked. */
static hchunk_t *chunk_new(nd_heap_t *h, size_t np, size_t ap)
{
	char *run = _nd_page_alloc(np, ap, h->pol, h->node, NULL);
	if (!run)
		return NULL;
	hchunk_t *k = (hchunk_t *)(run + (np << ND_PAGE_SHIFT) - sizeof(hchunk_t));
	memset(k, 0, sizeof *k);
	k->heap = h;
	k->start = run;
	k->npages = np;
	for (size_t i = 0; i < np; i++) {
		_nd_pagedesc_t *d = _nd_page_desc(run + (i << ND_PAGE_SHIFT));
		d->user = (uintptr_t)k;
		d->use = ND_USE_HEAP;
	}
	k->next = h->chunks;
	if (h->chunks)
		h->chunks->prev = k;
	h->chunks = k;
	return k;
}

static void chunk_free(nd_heap_t *h, hchunk_t *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		h->chunks = k->next;
	if (k->next)
		k->next->prev = k->prev;
	char *run = k->start;
	size_t np = k->npages;
	for (size_t i = 0; i < np; i++) {
		_nd_pagedesc_t *d = _nd_page_desc(run + (i << ND_PAGE_SHIFT));
		d->use = ND_USE_NONE;
		d->user = 0;
	}
	_nd_page_free(run);
}

static nd_heap_t *heap_make(int node, const nd_policy_t *pol)
{
	size_t np = (sizeof(nd_heap_t) + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT;
	nd_heap_t *h = _nd_page_alloc(np, 1, pol, node, NULL);
	if (!h)
		return NULL; /* errno ENOMEM */
	_nd_page_desc(h)->use = ND_USE_META;
	memset(h, 0, sizeof *h);
	h->node = node;
	h->pol = pol;
	h->owner = my_tp();
	h->magic = HEAP_MAGIC;
	return h;
}

nd_heap_t *nd_heap_new(int node)
{
	if (!_nd_ensure_init()) {
		errno = ENOMEM;
		return NULL;
	}
	const _nd_topo_t *t = _nd_topo();
	if (node < 0 || node >= t->node_limit || !t->online[node]) {
		errno = EINVAL;
		return NULL;
	}
	return heap_make(node, &_nd_policy_local);
}

nd_heap_t *nd_heap_new_policy(const nd_policy_t *p)
{
	if (!_nd_ensure_init()) {
		errno = ENOMEM;
		return NULL;
	}
	if (!p) {
		errno = EINVAL;
		return NULL;
	}
	const nd_policy_t *ip = _nd_policy_intern(p, NULL, 0);
	if (!ip)
		return NULL; /* errno EINVAL or ENOMEM */
	return heap_make(-1, ip);
}

static bool heap_ok(const nd_heap_t *h)
{
	if (h && h->magic == HEAP_MAGIC)
		return true;
	errno = EINVAL;
	return false;
}

/* Owner: objects freed by other threads go to their lists (a large one
 * gives its chunk back). */
static void collect(nd_heap_t *h)
{
	void **o = __atomic_exchange_n(&h->remote, NULL, __ATOMIC_ACQUIRE);
	while (o) {
		void **nx = o[0];
		hchunk_t *k = (hchunk_t *)_nd_page_desc(o)->user;
		if (k->size == 0) {
			chunk_free(h, k);
		} else {
			o[0] = h->free[k->cls];
			h->free[k->cls] = o;
		}
		o = nx;
	}
}

static __attribute__((noinline)) void *small_slow(nd_heap_t *h, unsigned c)
{
	collect(h);
	void **o = h->free[c];
	if (o) {
		h->free[c] = o[0];
		o[1] = NULL;
		return o;
	}
	hchunk_t *k = h->cur[c];
	if (!k || k->carved == k->cap) {
		size_t size = _nd_slab_class_size(c);
		size_t np = ((8 * size + sizeof(hchunk_t) + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT);
		if (np < CHUNK_MIN_PAGES)
			np = CHUNK_MIN_PAGES;
		if (!(k = chunk_new(h, np, 1))) {
			errno = ENOMEM;
			return NULL;
		}
		k->size = (uint32_t)size;
		k->cls = c;
		k->cap = (uint32_t)(((np << ND_PAGE_SHIFT) - sizeof(hchunk_t)) / size);
		h->cur[c] = k;
	}
	void *p = k->start + (size_t)k->carved * k->size;
	__atomic_store_n(&k->carved, k->carved + 1, __ATOMIC_RELEASE);
	return p;
}

static void *large_alloc(nd_heap_t *h, size_t size, size_t align)
{
	size_t np;
	if (size > SIZE_MAX - sizeof(hchunk_t) - ND_PAGE_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	np = (size + sizeof(hchunk_t) + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT;
	hchunk_t *k = chunk_new(h, np, align > ND_PAGE_SIZE ? align >> ND_PAGE_SHIFT : 1);
	if (!k) {
		errno = ENOMEM;
		return NULL;
	}
	k->cap = k->carved = 1;
	return k->start;
}

/* align: a power of two (<= 16: none). */
static inline void *heap_alloc(nd_heap_t *h, size_t size, size_t align)
{
	ND_ASSERT(h->owner == my_tp(), "only the heap's owner allocates from it");
	if (nd_likely(size <= ND_SLAB_MAX && align <= ND_PAGE_SIZE)) {
		if (align > 16) /* the class of the rounded size is aligned (malloc.c) */
			size = ND_ALIGN_UP(size ? size : 1, align);
		if (size <= ND_SLAB_MAX) {
			unsigned c = _nd_slab_cls_tab[(size + 15) >> 4];
			void **o = h->free[c];
			if (nd_likely(o != NULL)) {
				h->free[c] = o[0];
				o[1] = NULL;
				return o;
			}
			return small_slow(h, c);
		}
	}
	return large_alloc(h, size, align);
}

void *nd_heap_malloc(nd_heap_t *h, size_t size)
{
	return heap_ok(h) ? heap_alloc(h, size, 0) : NULL;
}

void *nd_heap_calloc(nd_heap_t *h, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = heap_ok(h) ? heap_alloc(h, total, 0) : NULL;
	if (p)
		memset(p, 0, total); /* chunks are reused runs: never assume zero */
	return p;
}

void *nd_heap_aligned_alloc(nd_heap_t *h, size_t align, size_t size)
{
	if (align == 0 || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	return heap_ok(h) ? heap_alloc(h, size, align) : NULL;
}

void nd_heap_destroy(nd_heap_t *h)
{
	if (!h)
		return;
	if (h->magic != HEAP_MAGIC)
		_nd_msg_fatal("nd_heap_destroy(): %p is not a heap (or destroyed already)", (void *)h);
	while (h->chunks)
		chunk_free(h, h->chunks);
	h->magic = 0;
	_nd_page_desc(h)->use = ND_USE_NONE;
	_nd_page_free(h);
}

/* ---- the heap objects in free, realloc, malloc_usable_size ------------- */

/* The chunk of a heap object; fatal for an address inside one that is not
 * an object start. */
static hchunk_t *obj_chunk(const void *p, const _nd_pagedesc_t *d, const char *fn)
{
	hchunk_t *k = (hchunk_t *)d->user;
	size_t off = (size_t)((const char *)p - k->start);
	bool ok = k->size ? off % k->size == 0 && off / k->size < __atomic_load_n(&k->carved, __ATOMIC_ACQUIRE)
			  : off == 0;
	if (!ok)
		_nd_msg_fatal("%s(): invalid pointer %p (inside a heap object, not its start)", fn, p);
	return k;
}

void _nd_uheap_free(void *p, const _nd_pagedesc_t *d)
{
	hchunk_t *k = obj_chunk(p, d, "free");
	nd_heap_t *h = k->heap;
	void **o = p;
	if (k->size == 0 ? __atomic_exchange_n(&k->freed, 1, __ATOMIC_RELAXED) : o[1] == (void *)k)
		_nd_msg_fatal("free(): double free of %p (heap object)", p);
	if (k->size)
		o[1] = k;
	if (h->owner == my_tp()) {
		if (k->size == 0) {
			chunk_free(h, k);
		} else {
			o[0] = h->free[k->cls];
			h->free[k->cls] = o;
		}
		return;
	}
	void *top = __atomic_load_n(&h->remote, __ATOMIC_RELAXED);
	do
		o[0] = top;
	while (!__atomic_compare_exchange_n(&h->remote, &top, o, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

size_t _nd_uheap_usable(const void *p, const _nd_pagedesc_t *d)
{
	hchunk_t *k = obj_chunk(p, d, "malloc_usable_size");
	return k->size ? k->size : (size_t)((char *)k - k->start);
}

bool _nd_uheap_freed(const void *p, const _nd_pagedesc_t *d)
{
	hchunk_t *k = obj_chunk(p, d, "realloc");
	return k->size ? ((void *const *)p)[1] == (void *)k : __atomic_load_n(&k->freed, __ATOMIC_RELAXED) != 0;
}

void *_nd_uheap_realloc_alloc(const _nd_pagedesc_t *d, size_t size)
{
	hchunk_t *k = (hchunk_t *)d->user;
	nd_heap_t *h = k->heap;
	if (h->owner == my_tp())
		return heap_alloc(h, size, 0);
	int node = _nd_page_node_of(k->start);
	return node >= 0 ? nd_malloc_onnode(size, node) : nd_malloc(size);
}
