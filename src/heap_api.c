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
	if (node == ND_NODE_LOCAL)
		node = nd_mem_node_of_cpu(_nd_topo_cpu());
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
 * A heap's small objects (up to ND_SLAB_MAX, aligned up to a page) come
 * from the slabs of its own slab-layer heap (heap.c, _nd_heap_user_*),
 * placed as the heap says (an interleave policy chooses each slab's
 * node): they are ordinary slab objects for free, realloc and usable size,
 * and the creator's free is malloc's own push. A large object (above
 * ND_SLAB_MAX or aligned above a page) is a page run of its own (a
 * "chunk") placed the same way; every page of a chunk is marked
 * ND_USE_HEAP with user = the chunk's header (at its end), so free()
 * finds it by page descriptor (malloc.c's slow path: the slab map has no
 * entry for these pages).
 *
 * Synchronisation: the owner (the creating thread) allocates: the slab
 * heap and the chunk list are its alone. Another thread's free of a small
 * object goes home to its slab at once (one CAS; nd_slab.h,
 * ND_SLAB_NODE1_UHEAP), of a chunk onto the heap's remote stack (one CAS),
 * which the owner takes whole when an allocation misses. Destroy: no other
 * thread may free into the heap meanwhile (the caller's contract); no free
 * is in flight then. */

#define HEAP_MAGIC 0x6e64686561700002ULL
/* Check mode (NODALLOC_CHECK): the fast path's test fails, so every
 * allocation takes heap.c's path, which checks the free lists' links. */
#define HEAP_MAGIC_CHECK 0x6e64686561700003ULL

typedef struct hchunk {
	struct hchunk *next, *prev; /* the heap's chunk list (owner) */
	struct nd_heap_api *heap;
	char *start;                /* the object: the run's start */
	size_t npages;
	int freed;                  /* atomic, set by its free */
} __attribute__((aligned(ND_CACHE_LINE))) hchunk_t;

struct nd_heap_api {
	uint64_t magic;
	_nd_heap_t sh;              /* owner: the small objects' slabs (heap.c) */
	int node;                   /* >= 0: node heap; -1: policy heap */
	const nd_policy_t *pol;     /* interned policy, or local for a node heap */
	uintptr_t owner;            /* thread pointer of the creator */
	uint64_t life;              /* the creator's life (_nd_thread_life) */
	void *remote;               /* atomic: chunks freed by other threads */
	hchunk_t *chunks;           /* owner: every chunk */
};

/* The caller is h's creator: its thread pointer, its record and its life
 * in the record (after the creator's exit the next thread may get both
 * the pointer and the record; audit24: it was taken for the owner, and
 * its realloc put the block in the heap, which destroy then freed). In a
 * fork's child a thread can get a dead parent thread's thread pointer
 * (glibc reuses its stack), never its record (a thread the child does not
 * have never releases it): such a thread's frees of the dead creator's
 * chunks go onto the remote stack, which no one takes (the child leaves
 * dead threads' heaps alone, as slab.c's free_local_slow), instead of
 * editing the chunk list. */
static inline bool is_owner(const nd_heap_t *h)
{
	return h->owner == _nd_slab_my_tp() && __atomic_load_n(&h->sh.owner, __ATOMIC_RELAXED) == _nd_tls &&
	       h->life == _nd_tls->life;
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
	if (!_nd_heap_user_init(&h->sh, node, node >= 0 ? NULL : pol)) {
		_nd_page_desc(h)->use = ND_USE_NONE;
		_nd_page_free(h);
		return NULL; /* errno ENOMEM */
	}
	h->node = node;
	h->pol = pol;
	h->owner = _nd_slab_my_tp();
	h->life = _nd_thread_life(_nd_tls); /* the record _nd_heap_user_init made */
	h->magic = _nd_slab_check ? HEAP_MAGIC_CHECK : HEAP_MAGIC;
	return h;
}

nd_heap_t *nd_heap_new(int node)
{
	if (!_nd_ensure_init()) {
		errno = ENOMEM;
		return NULL;
	}
	const _nd_topo_t *t = _nd_topo();
	if (node == ND_NODE_LOCAL) /* the creating CPU's, for the heap's life */
		node = nd_mem_node_of_cpu(_nd_topo_cpu());
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
	if (h && (h->magic == HEAP_MAGIC || h->magic == HEAP_MAGIC_CHECK))
		return true;
	errno = EINVAL;
	return false;
}

/* Owner: chunks freed by other threads go back to the page level. */
static void collect(nd_heap_t *h)
{
	void **o = __atomic_exchange_n(&h->remote, NULL, __ATOMIC_ACQUIRE);
	while (o) {
		void **nx = o[0];
		chunk_free(h, (hchunk_t *)_nd_page_desc(o)->user);
		o = nx;
	}
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
	return k->start;
}

/* Everything but a pop: a check-mode heap, not a heap, an empty list, an
 * alignment, a large object. align: a power of two (<= 16: none). */
static __attribute__((noinline)) void *heap_slow(nd_heap_t *h, size_t size, size_t align)
{
	if (!heap_ok(h))
		return NULL;
	ND_ASSERT(h->owner == _nd_slab_my_tp(), "only the heap's owner allocates from it");
	if (__atomic_load_n(&h->remote, __ATOMIC_RELAXED))
		collect(h);
	if (size <= ND_SLAB_MAX && align <= ND_PAGE_SIZE) {
		int c = _nd_slab_class_for(size ? size : 1, align); /* an aligned class (slab.c) */
		if (c >= 0)
			return _nd_heap_user_alloc(&h->sh, (unsigned)c);
	}
	return large_alloc(h, size, align);
}

/* Fast path: malloc's pop, from the heap's current slab of the class. */
static inline __attribute__((always_inline)) void *heap_alloc(nd_heap_t *h, size_t size, size_t align)
{
	if (nd_likely(h != NULL) && nd_likely(h->magic == HEAP_MAGIC) && nd_likely(size <= ND_SLAB_MAX) && align <= 16) {
		unsigned c = _nd_slab_cls_tab[(size + 15) >> 4];
		void *o = _nd_slab_pop((_nd_slab_hot_t *)h->sh.cur[c]);
		if (nd_likely(o != NULL))
			return o;
	}
	return heap_slow(h, size, align);
}

void *nd_heap_malloc(nd_heap_t *h, size_t size)
{
	return heap_alloc(h, size, 0);
}

void *nd_heap_calloc(nd_heap_t *h, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = heap_alloc(h, total, 0);
	if (p)
		memset(p, 0, total); /* slabs and runs are reused: never assume zero */
	return p;
}

void *nd_heap_aligned_alloc(nd_heap_t *h, size_t align, size_t size)
{
	if (align == 0 || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	return heap_alloc(h, size, align);
}

void nd_heap_destroy(nd_heap_t *h)
{
	if (!h)
		return;
	if (h->magic != HEAP_MAGIC && h->magic != HEAP_MAGIC_CHECK)
		_nd_msg_fatal("nd_heap_destroy(): %p is not a heap (or destroyed already)", (void *)h);
	_nd_heap_user_destroy(&h->sh);
	while (h->chunks) /* those on the remote stack too */
		chunk_free(h, h->chunks);
	h->magic = 0;
	_nd_page_desc(h)->use = ND_USE_NONE;
	_nd_page_free(h);
}

/* ---- the heap objects in free, realloc, malloc_usable_size ------------- */

/* The chunk of a large heap object; fatal for an address inside one that
 * is not its start. */
static hchunk_t *obj_chunk(const void *p, const _nd_pagedesc_t *d, const char *fn)
{
	hchunk_t *k = (hchunk_t *)d->user;
	if ((const char *)p != k->start)
		_nd_msg_fatal("%s(): invalid pointer %p (inside a heap object, not its start)", fn, p);
	return k;
}

void _nd_uheap_free(void *p, const _nd_pagedesc_t *d)
{
	hchunk_t *k = obj_chunk(p, d, "free");
	nd_heap_t *h = k->heap;
	if (__atomic_exchange_n(&k->freed, 1, __ATOMIC_RELAXED))
		_nd_msg_fatal("free(): double free of %p (heap object)", p);
	if (is_owner(h)) {
		chunk_free(h, k);
		return;
	}
	void **o = p;
	void *top = __atomic_load_n(&h->remote, __ATOMIC_RELAXED);
	do
		o[0] = top;
	while (!__atomic_compare_exchange_n(&h->remote, &top, o, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

size_t _nd_uheap_usable(const void *p, const _nd_pagedesc_t *d)
{
	hchunk_t *k = obj_chunk(p, d, "malloc_usable_size");
	return (size_t)((char *)k - k->start);
}

bool _nd_uheap_freed(const void *p, const _nd_pagedesc_t *d)
{
	return __atomic_load_n(&obj_chunk(p, d, "realloc")->freed, __ATOMIC_RELAXED) != 0;
}

nd_heap_t *_nd_uheap_of(const _nd_pagedesc_t *d)
{
	if (d->use == ND_USE_HEAP)
		return ((const hchunk_t *)d->user)->heap;
	const _nd_slab_t *s = (const _nd_slab_t *)d->user;
	if (d->use != ND_USE_SLAB || s->node1 != ND_SLAB_NODE1_UHEAP)
		return NULL;
	return (nd_heap_t *)(void *)((char *)s->heap - offsetof(nd_heap_t, sh));
}

void *_nd_uheap_realloc_alloc(nd_heap_t *h, const _nd_pagedesc_t *d, size_t size)
{
	if (is_owner(h))
		return heap_alloc(h, size, 0);
	int node = d->use == ND_USE_SLAB ? _nd_slab_node(d) : _nd_page_node_of(((const hchunk_t *)d->user)->start);
	return node >= 0 ? nd_malloc_onnode(size, node) : nd_malloc(size);
}
