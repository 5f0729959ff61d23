// SPDX-License-Identifier: MIT
/*
 * Slab caches: size classes, per-thread heaps keyed by memory node, and
 * remote frees sent home lock-free (docs/malloc.md).
 *
 * Shapes:
 *  - A slab is one page run of the page level holding objects of one size
 *    class. Its header lives out of line (metadata pages of the slab's
 *    node), so objects start page-aligned and a power-of-two class is
 *    naturally aligned to its size. Every page descriptor of the run has
 *    use = ND_USE_SLAB and user = the header: free() finds the slab in O(1).
 *  - A heap holds, per class, a list of partial slabs (cur[c] is the one
 *    allocation pops from) and a list of full ones. A heap serves the
 *    allocations that want one node ("heap of node n"); its slabs are on n,
 *    or on a node n fell back to by policy when n was full. A slab belongs
 *    to one heap for life, so its objects are only ever reused for
 *    allocations that want that node: freed memory never changes node.
 *  - A thread owns one heap per node it allocated for (lazily). T.heap is
 *    the heap of the current CPU's memory node; the fast path checks the
 *    CPU (one load of glibc's rseq cpu_id) and the policy tag, and pops.
 *  - A free by the owning thread pushes onto the slab's private free list.
 *    Any other thread pushes onto the slab's atomic tfree list (lock-free);
 *    the owner collects tfree in one exchange when its free list runs dry.
 *    A full slab is parked with a NOTIFY bit in tfree: the first remote
 *    free clears it and sets the class's bit in the heap's notify mask, so
 *    the owner looks at its full slabs only when one got memory back.
 *  - Thread exit (pthread key destructor) releases the slabs with nothing
 *    live to the page level and parks the thread's heaps in the per-node
 *    pool; a thread that starts later on that node adopts a parked heap
 *    whole (its partial slabs, its full ones, the remote frees still in
 *    flight). A remote free into a parked heap marks the pool, and the next
 *    thread of the node that needs a slab trims the parked heaps first.
 *    Heaps and thread records are never unmapped, so a late remote free
 *    always finds valid memory, and thread churn reuses them.
 *
 * Ownership: a heap's lists and a slab's private fields (free, used,
 * carved, next/prev) belong to the heap's owner thread, or to whoever took
 * a parked heap out of the pool (adoption, trim). Other threads touch only
 * tfree (CAS) and the heap's notify mask (atomic OR). No lock on either
 * fast path; locks only guard the per-node pools, metadata and the thread
 * record pool.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

/* ---- size classes -------------------------------------------------------
 * 16..128 by 16, then 4 classes per power of two up to 32 KiB. Every class
 * is a multiple of 16 (malloc's alignment); a class 2^k is 2^k-aligned. */
static const uint32_t cls_size[ND_SLAB_CLASSES] = {
	16, 32, 48, 64, 80, 96, 112, 128,
	160, 192, 224, 256, 320, 384, 448, 512,
	640, 768, 896, 1024, 1280, 1536, 1792, 2048,
	2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192,
	10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768,
};
/* class of size = cls_tab[(size + 15) >> 4] (2 KiB: one load, no branch;
 * malloc.c's placement fast paths read it too) */
uint8_t _nd_slab_cls_tab[ND_SLAB_MAX / 16 + 1];
#define cls_tab _nd_slab_cls_tab
static uint8_t cls_pages[ND_SLAB_CLASSES];  /* slab run length (power of two) */
static uint16_t cls_cap[ND_SLAB_CLASSES];   /* objects per slab */
static uint64_t cls_mul[ND_SLAB_CLASSES];   /* inverse of the odd part << (15 - tz) */

static inline unsigned class_of(size_t size)
{
	return cls_tab[(size + 15) >> 4];
}

unsigned _nd_slab_class_of(size_t size) { return class_of(size); }
size_t _nd_slab_class_size(unsigned c) { return c < ND_SLAB_CLASSES ? cls_size[c] : 0; }

/* ---- structures ---------------------------------------------------------- */

/* tfree = count << 48 | list head | NOTIFY: the remote list carries its
 * length, so the owner takes it in one exchange without walking it (slab
 * objects live in the page level's reservation, below 2^47). */
#define NOTIFY ((uintptr_t)1)                      /* parked full, tell the heap */
#define TF_PTR ((uintptr_t)0x0000fffffffffff0ull)  /* list head */
#define TF_CNT_SHIFT 48                             /* objects on the list */
/* A full slab goes back to the partial list after FULL_BACK(cap) owner
 * frees (or at once when the heap would otherwise take a new slab), so
 * that it comes back with room, not with one object: while it is on the
 * full list used is lowered by fbias, and the free path's "used <= 0"
 * test fires after those frees. */
#define FULL_BACK(cap) ((cap) >= 4 ? (uint32_t)(cap) / 2 : 1u)

struct nd_heap;

/* Owner and synchronisation, per field: see the hot fields in internal.h
 * (free, used: owner; lim, tp: atomic, written by the owner). Below:
 * cls, cap, size, node, npages: fixed while the slab lives. carved,
 * next/prev, fbias: owner only (relaxed atomics where free's slow path
 * of another thread reads carved, _nd_slab_invalid). tfree: any thread
 * (CAS). heap: atomic, changes only when a parked heap's slab moves to a
 * running heap of the same key (absorb); a remote free that read the old
 * heap only sets a notify bit there. hnext: the node lock. */
typedef struct slab {
	/* line 1: the fast paths' fields (internal.h), then the owner's */
	ND_SLAB_HOT_FIELDS
	uint8_t cls;
	uint16_t cap;          /* objects in the slab */
	uint16_t carved;       /* atomic: objects ever put on a free list (lazy carving) */
	uint32_t size;
	struct nd_heap *heap;  /* atomic: owner heap */
	/* line 2: written by other threads */
	_Alignas(ND_CACHE_LINE) uintptr_t tfree; /* remote frees: count | list | NOTIFY */
	int32_t node;          /* serving node of the run */
	uint32_t npages;
	struct slab *hnext;    /* free header list (node lock) */
	struct slab *next, *prev; /* partial or full list of the heap (owner) */
	uint32_t fbias;        /* on the full list: real used = used + fbias (> 0); else 0 */
} slab_t;
_Static_assert(offsetof(slab_t, free) == offsetof(_nd_slab_hot_t, free) &&
	       offsetof(slab_t, used) == offsetof(_nd_slab_hot_t, used), "slab_t starts with the hot fields");

/* A heap serves the allocations of one key: a node (node heaps, pol NULL:
 * local, preferred, preferred-many, nd_malloc_onnode, whose slabs are on
 * that node or where its list fell back), or an interned policy that
 * restricts or spreads nodes (bind: pol + the node it wants; interleave
 * and weighted: pol, node -1, each slab's node chosen when it is taken).
 * Lists and cur[]: the owner. owner: atomic (free_remote reads it). */
typedef struct nd_heap {
	slab_t *cur[ND_SLAB_CLASSES];   /* partial list heads; &empty_slab if none (_nd_heap_hot_t) */
	slab_t *fullh[ND_SLAB_CLASSES]; /* full list heads (NULL-terminated) */
	_nd_thread_t *owner;            /* atomic: the owner's record; NULL while parked */
	uint64_t notify;                /* atomic: class bits, a full slab got a remote free */
	int node;                       /* the node its allocations want; -1: the policy's */
	const nd_policy_t *pol;         /* NULL: a node heap; else bind/interleave/weighted */
	struct nd_heap *pool_next;      /* pool of the node, or the policy pool (their lock) */
} heap_t;
_Static_assert(offsetof(heap_t, cur) == offsetof(_nd_heap_hot_t, cur), "heap_t starts with cur[]");

/* Per node: the pool of parked node heaps, the metadata bump area and the
 * free slab headers, all under one lock. Lock order: pheap_lock -> node
 * locks (ascending) -> page-level locks (meta_alloc calls the page level
 * with the node lock held). */
typedef struct node_state {
	_nd_lock_t lock;
	char *meta_cur, *meta_end;
	slab_t *free_hdrs;
	heap_t *pool;
	int pool_dirty; /* atomic: a parked heap got a remote free */
} node_state_t;

static node_state_t nodes[ND_MAX_NODES];
static int nodes_used; /* highest node index used + 1 (atomic), for fork */
ND_LOCK_ARRAY(node_lock_class, nodes, lock, 0, &nodes_used, ND_RANK_SLAB_NODE);
/* Protects ppool (parked policy heaps) and the slab map's creation. */
ND_LOCK_DEFINE(pheap_lock, ND_RANK_SLAB_THREADS);
static heap_t *ppool;
static int ppool_dirty; /* atomic: a parked policy heap got a remote free */

static slab_t empty_slab; /* free == NULL: the fast path falls through */

static bool check_mode;      /* NODALLOC_CHECK=1 */

/* ---- metadata ------------------------------------------------------------ */

#define META_CHUNK_PAGES 16

static void note_node(int node)
{
	_nd_atomic_raise(&nodes_used, node + 1);
}

/* A metadata chunk on node, else on its fallback nodes, else plain mmap. */
static void *meta_chunk(int node, size_t bytes)
{
	size_t np = bytes >> ND_PAGE_SHIFT;
	const _nd_topo_t *t = _nd_topo();
	void *p = NULL;
	if (node >= 0 && node < t->node_limit) {
		p = _nd_page_alloc_exact(node, np, 1);
		for (int i = 0; !p && i < t->fallback_len[node]; i++)
			p = _nd_page_alloc_exact(t->fallback[node][i], np, 1);
	}
	if (p) {
		_nd_pagedesc_t *d = _nd_page_desc(p);
		if (d)
			d->use = ND_USE_META;
		return p;
	}
	int err;
	return _nd_os_mmap(bytes, false, &err);
}

/* Zeroed, cache-line aligned, never freed. Caller holds nodes[node].lock. */
static void *meta_alloc_locked(int node, size_t size)
{
	node_state_t *ns = &nodes[node];
	size = ND_ALIGN_UP(size, ND_CACHE_LINE);
	if ((size_t)(ns->meta_end - ns->meta_cur) < size) {
		size_t bytes = ND_ALIGN_UP(size, META_CHUNK_PAGES * ND_PAGE_SIZE);
		char *c = meta_chunk(node, bytes);
		if (!c)
			return NULL;
		ns->meta_cur = c;
		ns->meta_end = c + bytes;
	}
	void *p = ns->meta_cur;
	ns->meta_cur += size;
	memset(p, 0, size); /* page runs may come back dirty */
	return p;
}

static void *meta_alloc(int node, size_t size)
{
	note_node(node);
	_nd_lock(&nodes[node].lock);
	void *p = meta_alloc_locked(node, size);
	_nd_unlock(&nodes[node].lock);
	return p;
}

/* ---- the direct table and the slab map ------------------------------------ */

/* t->dir mirrors t->heap's current slab of every class up to
 * ND_SLAB_DIRECT: every write of a heap's cur[] goes through set_cur.
 * Owner only. */
static void dir_class(_nd_thread_t *t, unsigned c, slab_t *s)
{
	unsigned lo = c ? cls_size[c - 1] + 1 : 0, hi = cls_size[c];
	if (lo > ND_SLAB_DIRECT)
		return;
	if (hi > ND_SLAB_DIRECT)
		hi = ND_SLAB_DIRECT;
	_nd_slab_hot_t *v = (_nd_slab_hot_t *)s, **d = &t->dir[ND_SLAB_DIR0 + lo];
	unsigned n = hi - lo + 1;
	if (n & 15) { /* class 0 (sizes 0..16): one entry in front */
		*d++ = v;
		n--;
	}
	/* n is 16 or 32 here: runs of 8 entries */
	typedef uintptr_t pair_t __attribute__((vector_size(16)));
	pair_t w = { (uintptr_t)v, (uintptr_t)v };
	unsigned i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(d + i, &w, sizeof w);
		memcpy(d + i + 2, &w, sizeof w);
		memcpy(d + i + 4, &w, sizeof w);
		memcpy(d + i + 6, &w, sizeof w);
	}
	for (; i < n; i++) /* none with the classes of docs/malloc.md */
		d[i] = v;
}

static inline void set_cur(heap_t *h, unsigned c, slab_t *s)
{
	h->cur[c] = s;
	_nd_thread_t *o = h->owner; /* the caller owns h: no race on it */
	if (o && o->heap == h)
		dir_class(o, c, s);
}

static void set_heap(_nd_thread_t *t, heap_t *h)
{
	t->heap = h;
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++)
		dir_class(t, c, h->cur[c]);
}

/* Stamps every slab of h with tp (adoption: the new owner; parking: 0, so
 * that a later thread with a recycled thread pointer is not taken for the
 * owner). Caller owns h. */
static void heap_set_tp(heap_t *h, uintptr_t tp)
{
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		for (slab_t *s = h->cur[c]; s && s != &empty_slab; s = s->next)
			__atomic_store_n(&s->tp, tp, __ATOMIC_RELAXED);
		for (slab_t *s = h->fullh[c]; s; s = s->next)
			__atomic_store_n(&s->tp, tp, __ATOMIC_RELAXED);
	}
}

/* Until the map exists every lookup decodes to its zeroed `none` (lim 0):
 * frees take malloc.c's slow path, which finds slabs by page descriptor. */
static _Alignas(ND_CACHE_LINE) char boot_map[sizeof(_nd_slab_map_t) + sizeof(intptr_t)];
_nd_slab_map_t *_nd_slab_map = (_nd_slab_map_t *)boot_map;
static int map_tried; /* under pheap_lock */

/* The map: virtual (MAP_NORESERVE), committed a page of entries at a
 * time. Made at the slab init for the largest reservation the page level
 * can have (16 TiB: 2^32 pages, 32 GiB of entries), so that no mapping
 * appears later in the program's life; if that is refused, made at the
 * first slab for the reservation as it is (slot 0 to the mixed slot).
 * Failure leaves the boot map (slower frees, same results). */
#define MAP_MAX_PAGES ((uintptr_t)1 << 32)

static bool map_make(uintptr_t n, bool quiet)
{
	size_t bytes = ND_ALIGN_UP(sizeof(_nd_slab_map_t) + n * sizeof(intptr_t), ND_PAGE_SIZE);
	int err;
	_nd_slab_map_t *m = _nd_os_mmap(bytes, true, &err);
	if (!m) {
		if (!quiet)
			_nd_msg_warn("slab: cannot map the %zu MiB slab map (errno %d): frees take the slow path",
				     bytes >> 20, -err);
		return false;
	}
	_nd_os_madvise(m, bytes, MADV_NOHUGEPAGE); /* sparse, like the descriptors */
	m->mask = n - 1;
	__atomic_store_n(&_nd_slab_map, m, __ATOMIC_RELEASE);
	return true;
}

static void map_create(void)
{
	_nd_page_info_t a, b;
	if (_nd_page_info(0, &a) != 0 || _nd_page_info(-1, &b) != 0)
		return;
	uintptr_t base = (uintptr_t)a.base, end = (uintptr_t)b.base + b.slot_bytes;
	if (end <= base)
		return;
	uintptr_t pages = (end - base) >> ND_PAGE_SHIFT, n = 1;
	while (n < pages)
		n <<= 1;
	map_make(n, false);
}

static void map_set(const void *page, const slab_t *s)
{
	_nd_slab_map_t *m = _nd_slab_map;
	if (m == (_nd_slab_map_t *)boot_map)
		return;
	uintptr_t i = ((uintptr_t)page >> ND_PAGE_SHIFT) & m->mask;
	__atomic_store_n(&m->ent[i], s ? (intptr_t)s - (intptr_t)m : 0, __ATOMIC_RELEASE);
}

static inline uintptr_t my_tp(void) { return (uintptr_t)__builtin_thread_pointer(); }

/* ---- slabs --------------------------------------------------------------- */

/* A free object carries its slab header address in word 1 (malloc clears
 * it): programs never see header addresses, so finding it on free means
 * the object is free already. */
static inline void *marker(const slab_t *s) { return (void *)s; }

/* A free object's link (word 0) must be NULL or another object of the
 * same slab that was carved: a write past the end of the object before it
 * (a heap overflow) or after free that hit the link is reported by name
 * here, before anything follows it (slow paths; every path in check
 * mode). */
static __attribute__((noreturn, noinline, cold)) void corrupt_link(const slab_t *s, void *const *o, const char *fn)
{
	_nd_msg_fatal("%s(): corrupted free list in the slab of %u-byte objects at %p: free object %p links to %p "
		      "(heap overflow into a free object, or a write after free)",
		      fn, s->size, (void *)s->start, (const void *)o, o[0]);
}

static inline void check_link(const slab_t *s, void *const *o, const char *fn)
{
	uintptr_t n = (uintptr_t)o[0];
	if (n) {
		uint64_t x = (n - (uintptr_t)s->start) * s->mul;
		if (nd_unlikely(((x >> 15) | (x << 49)) >= s->carved))
			corrupt_link(s, o, fn);
	}
}

/* Every heap of a thread stamps its slabs with the thread pointer. */
static inline bool is_owner(const slab_t *s)
{
	return __atomic_load_n(&s->tp, __ATOMIC_RELAXED) == my_tp();
}

static void set_slab_pages(slab_t *s, uint8_t use, uintptr_t user)
{
	for (uint32_t i = 0; i < s->npages; i++) {
		_nd_pagedesc_t *d = _nd_page_desc(s->start + ((size_t)i << ND_PAGE_SHIFT));
		if (d) {
			d->use = use;
			d->user = user;
		}
		map_set(s->start + ((size_t)i << ND_PAGE_SHIFT), use == ND_USE_SLAB ? s : NULL);
	}
}

/* A new slab of class c for heap h: a run under pol wanting h's node. */
static slab_t *slab_new(heap_t *h, unsigned c, const nd_policy_t *pol)
{
	int got = -1;
	char *p = _nd_page_alloc(cls_pages[c], 1, pol, h->node, &got);
	if (!p)
		return NULL;
	if (got < 0)
		got = _nd_page_node_of(p);
	if (nd_unlikely(!__atomic_load_n(&map_tried, __ATOMIC_ACQUIRE))) {
		_nd_lock(&pheap_lock);
		if (!map_tried)
			map_create();
		__atomic_store_n(&map_tried, 1, __ATOMIC_RELEASE);
		_nd_unlock(&pheap_lock);
	}
	int mnode = got >= 0 && got < ND_MAX_NODES ? got : 0;
	note_node(mnode);
	node_state_t *ns = &nodes[mnode];
	_nd_lock(&ns->lock);
	slab_t *s = ns->free_hdrs;
	if (s)
		ns->free_hdrs = s->hnext;
	else
		s = meta_alloc_locked(mnode, sizeof(slab_t));
	_nd_unlock(&ns->lock);
	if (!s) {
		_nd_page_free(p);
		errno = ENOMEM;
		return NULL;
	}
	memset(s, 0, sizeof *s);
	s->start = p;
	s->size = cls_size[c];
	s->mul = cls_mul[c];
	__atomic_store_n(&s->heap, h, __ATOMIC_RELAXED);
	s->cap = cls_cap[c];
	s->cls = (uint8_t)c;
	s->node = got;
	s->npages = cls_pages[c];
	__atomic_store_n(&s->tp, my_tp(), __ATOMIC_RELAXED); /* heap_alloc runs on h's owner */
	set_slab_pages(s, ND_USE_SLAB, (uintptr_t)s);
	return s;
}

/* Back to the page level (used == 0: no object out, so no remote free can
 * be in flight and nobody else holds the slab). */
static void slab_release(slab_t *s)
{
	set_slab_pages(s, ND_USE_NONE, 0);
	_nd_page_free(s->start);
	int mnode = s->node >= 0 && s->node < ND_MAX_NODES ? s->node : 0;
	node_state_t *ns = &nodes[mnode];
	__atomic_store_n(&s->heap, NULL, __ATOMIC_RELAXED);
	_nd_lock(&ns->lock);
	s->hnext = ns->free_hdrs;
	ns->free_hdrs = s;
	_nd_unlock(&ns->lock);
}

/* Puts up to one page worth (at least one object) of never-used objects on
 * the free list: pages are touched as they are needed, not at creation. */
static void slab_carve(slab_t *s)
{
	unsigned n = s->cap - s->carved;
	unsigned per_page = (unsigned)(ND_PAGE_SIZE / s->size);
	if (per_page == 0)
		per_page = 1;
	if (n > per_page)
		n = per_page;
	char *first = s->start + (size_t)s->carved * s->size;
	void **o = (void **)first;
	for (unsigned i = 0; i < n; i++) {
		void **nx = i + 1 < n ? (void **)((char *)o + s->size) : (void **)s->free;
		o[0] = nx;
		o[1] = marker(s);
		o = (void **)((char *)o + s->size);
	}
	s->free = first;
	uint16_t carved = (uint16_t)(s->carved + n);
	__atomic_store_n(&s->carved, carved, __ATOMIC_RELAXED);
	__atomic_store_n(&s->lim, check_mode ? 0 : carved, __ATOMIC_RELAXED);
}

/* Takes the remote frees into the private list (called when that one is
 * empty: no walk). Returns how many. */
static unsigned slab_collect(slab_t *s)
{
	if (!(__atomic_load_n(&s->tfree, __ATOMIC_RELAXED) & TF_PTR))
		return 0;
	uintptr_t v = __atomic_exchange_n(&s->tfree, 0, __ATOMIC_ACQUIRE);
	void **list = (void **)(v & TF_PTR);
	if (!list)
		return 0;
	unsigned n = (unsigned)(v >> TF_CNT_SHIFT);
	if (nd_unlikely(check_mode)) /* every link, before the fast path follows them */
		for (void **x = list; x; x = x[0])
			check_link(s, x, "malloc");
	if (s->free) { /* not on the paths that call it; kept correct anyway */
		void **tail = list;
		for (; tail[0]; tail = tail[0])
			check_link(s, tail, "malloc");
		tail[0] = s->free;
	}
	s->free = list;
	s->used -= n;
	return n;
}

/* True if every object out of s is on its remote list (nothing live):
 * then no further free can come, and the slab can go. */
static bool slab_all_remote(const slab_t *s)
{
	uintptr_t v = __atomic_load_n(&s->tfree, __ATOMIC_ACQUIRE);
	return s->used + s->fbias == (uint32_t)(v >> TF_CNT_SHIFT);
}

/* ---- heap lists (owner only) --------------------------------------------- */

static void part_unlink(heap_t *h, slab_t *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		set_cur(h, s->cls, s->next ? s->next : &empty_slab);
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
}

/* Inserted behind the current slab, so allocation keeps filling it. */
static void part_insert(heap_t *h, slab_t *s)
{
	slab_t *head = h->cur[s->cls];
	if (head == &empty_slab) {
		s->next = s->prev = NULL;
		set_cur(h, s->cls, s);
		return;
	}
	s->prev = head;
	s->next = head->next;
	if (head->next)
		head->next->prev = s;
	head->next = s;
}

static void part_push_front(heap_t *h, slab_t *s)
{
	slab_t *head = h->cur[s->cls];
	s->prev = NULL;
	s->next = head == &empty_slab ? NULL : head;
	if (s->next)
		s->next->prev = s;
	set_cur(h, s->cls, s);
}

static void full_unlink(heap_t *h, slab_t *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		h->fullh[s->cls] = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
	s->used += s->fbias;
	s->fbias = 0;
}

static void full_push(heap_t *h, slab_t *s)
{
	s->prev = NULL;
	s->next = h->fullh[s->cls];
	if (s->next)
		s->next->prev = s;
	h->fullh[s->cls] = s;
	/* used == cap here (nothing free, nothing remote): used - fbias >= 1 */
	uint32_t back = FULL_BACK(s->cap);
	s->fbias = s->used > back ? s->used - back : 1;
	s->used -= s->fbias;
}

/* Before a new slab: a full slab that got owner frees back (fewer than
 * FULL_BACK) is used first, the one with the most room among the 16 most
 * recently parked. */
static bool unpark_local(heap_t *h, unsigned c)
{
	int n = 16;
	slab_t *best = NULL;
	uint32_t room = 0;
	for (slab_t *s = h->fullh[c]; s && n; s = s->next, n--) {
		uint32_t r = s->cap - (s->used + s->fbias);
		if (r > room) {
			room = r;
			best = s;
		}
	}
	if (!best)
		return false;
	full_unlink(h, best);
	part_push_front(h, best);
	return true;
}

/* The current slab of class c has nothing: park it as full, with NOTIFY
 * set so that the first remote free tells the heap (unless remote frees
 * arrived meanwhile: then it stays, to be collected). */
static void park_full(heap_t *h, slab_t *s)
{
	uintptr_t z = 0;
	if (!__atomic_compare_exchange_n(&s->tfree, &z, NOTIFY, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED) && z != NOTIFY)
		return;
	part_unlink(h, s);
	full_push(h, s);
}

/* Full slabs of class c that got remote frees go back to the partial list. */
static bool unpark(heap_t *h, unsigned c)
{
	uint64_t bit = (uint64_t)1 << c;
	if (!(__atomic_load_n(&h->notify, __ATOMIC_RELAXED) & bit))
		return false;
	__atomic_fetch_and(&h->notify, ~bit, __ATOMIC_ACQ_REL);
	bool any = false;
	slab_t *s = h->fullh[c];
	while (s) {
		slab_t *nx = s->next;
		if (__atomic_load_n(&s->tfree, __ATOMIC_ACQUIRE) & TF_PTR) {
			full_unlink(h, s);
			part_insert(h, s);
			any = true;
		}
		s = nx;
	}
	return any;
}

static void heap_trim(heap_t *h);

/* Moves every slab of p (a parked heap taken out of its pool) into h, the
 * caller's running heap of the same key: memory freed into a heap whose
 * thread exited serves the next thread that needs it. A remote free that
 * read the old heap pointer only sets a notify bit there (harmless: the
 * slab is found again when h trims or unparks). */
static void heap_absorb(heap_t *h, heap_t *p)
{
	uintptr_t tp = my_tp();
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		slab_t *s;
		while ((s = p->fullh[c]) != NULL) {
			full_unlink(p, s);
			__atomic_store_n(&s->heap, h, __ATOMIC_RELAXED);
			__atomic_store_n(&s->tp, tp, __ATOMIC_RELAXED);
			if (s->free || (__atomic_load_n(&s->tfree, __ATOMIC_ACQUIRE) & TF_PTR))
				part_insert(h, s);
			else
				full_push(h, s);
		}
		while ((s = p->cur[c]) != &empty_slab) {
			part_unlink(p, s);
			__atomic_store_n(&s->heap, h, __ATOMIC_RELAXED);
			__atomic_store_n(&s->tp, tp, __ATOMIC_RELAXED);
			part_insert(h, s);
		}
	}
	__atomic_store_n(&p->notify, 0, __ATOMIC_RELAXED);
}

static inline int *pool_dirty_of(const heap_t *h)
{
	return h->pol ? &ppool_dirty : &nodes[h->node].pool_dirty;
}

/* The parked heaps of h's pool (its node's, or the policy pool): each is
 * trimmed, and those of h's key are absorbed into h. Run by a thread that
 * is about to take a new slab when remote frees reached a parked heap, or
 * when the page level had no room. The heaps are out of the pool meanwhile
 * (no lock held), then go back (empty ones are adopted like any other). */
static __attribute__((noinline)) void sweep_pool(heap_t *h)
{
	_nd_lock_t *lk = h->pol ? &pheap_lock : &nodes[h->node].lock;
	heap_t **pool = h->pol ? &ppool : &nodes[h->node].pool;
	_nd_lock(lk);
	heap_t *list = *pool;
	*pool = NULL;
	__atomic_store_n(pool_dirty_of(h), 0, __ATOMIC_RELAXED);
	_nd_unlock(lk);
	if (!list)
		return;
	heap_t *last = NULL;
	for (heap_t *p = list; p; p = p->pool_next) {
		heap_trim(p);
		if (p->pol == h->pol && p->node == h->node)
			heap_absorb(h, p);
		last = p;
	}
	_nd_lock(lk);
	last->pool_next = *pool;
	*pool = list;
	_nd_unlock(lk);
}

/* Pops an object of class c from heap h (owner), refilling as needed. */
static void *heap_alloc(heap_t *h, unsigned c, const nd_policy_t *pol)
{
	bool swept = false;
	for (;;) {
		slab_t *s = h->cur[c];
		if (s != &empty_slab) {
			if (!s->free && !slab_collect(s) && s->carved < s->cap)
				slab_carve(s);
			void **o = s->free;
			if (o) {
				check_link(s, o, "malloc");
				return _nd_slab_pop((_nd_slab_hot_t *)s);
			}
			park_full(h, s); /* or, if remote frees came in, collect them */
			continue;
		}
		if (unpark(h, c) || unpark_local(h, c))
			continue;
		if (__atomic_load_n(pool_dirty_of(h), __ATOMIC_RELAXED)) {
			sweep_pool(h);
			swept = true;
			continue;
		}
		s = slab_new(h, c, pol);
		if (!s) {
			if (swept)
				return NULL;
			/* full: memory parked heaps got back may still serve */
			sweep_pool(h);
			swept = true;
			continue;
		}
		part_push_front(h, s);
	}
}

/* ---- heaps and threads --------------------------------------------------- */

static int heap_meta_node(int node)
{
	const _nd_topo_t *t = _nd_topo();
	if (node >= 0 && node < t->node_limit && !t->has_mem[node] && t->fallback_len[node] > 0)
		return t->fallback[node][0];
	return node;
}

/* The memory node of a CPU (an unknown CPU: node 0's memory node). */
static int cpu_mem_node(int cpu)
{
	const _nd_topo_t *tp = _nd_topo();
	int node = cpu >= 0 && cpu < tp->cpu_limit ? tp->cpu_mem_node[cpu] : -1;
	return node >= 0 ? node : heap_meta_node(0);
}

/* A heap for key (node, pol): adopted from its pool, else new (metadata on
 * meta_node). Stamped with the caller as owner. */
static heap_t *heap_take(_nd_thread_t *t, int node, const nd_policy_t *pol, int meta_node)
{
	_nd_lock_t *lk = pol ? &pheap_lock : &nodes[node].lock;
	heap_t **pool = pol ? &ppool : &nodes[node].pool;
	_nd_lock(lk);
	heap_t *h, **pp = pool;
	while ((h = *pp) != NULL && !(h->pol == pol && h->node == node))
		pp = &h->pool_next;
	if (h)
		*pp = h->pool_next;
	_nd_unlock(lk);
	if (!h) {
		note_node(meta_node);
		h = meta_alloc(meta_node, sizeof(heap_t));
		if (!h)
			return NULL;
		for (unsigned c = 0; c < ND_SLAB_CLASSES; c++)
			h->cur[c] = &empty_slab;
		h->node = node;
		h->pol = pol;
	}
	h->pool_next = NULL;
	heap_set_tp(h, my_tp());
	__atomic_store_n(&h->owner, t, __ATOMIC_RELEASE);
	return h;
}

/* The thread's node heap of node (made on first use). */
static heap_t *heap_attach(_nd_thread_t *t, int node)
{
	if (node < 0 || node >= ND_MAX_NODES) {
		errno = EINVAL;
		return NULL;
	}
	if (node >= t->nheaps) {
		int n = _nd_topo()->node_limit;
		if (n <= node)
			n = node + 1;
		heap_t **a = meta_alloc(heap_meta_node(node), (size_t)n * sizeof(heap_t *));
		if (!a)
			return NULL;
		for (int i = 0; i < t->nheaps; i++)
			a[i] = t->heaps[i];
		t->heaps = a; /* the old array is left (small, rare) */
		t->nheaps = n;
		t->nfast = check_mode ? 0 : n;
	}
	note_node(node);
	heap_t *h = heap_take(t, node, NULL, heap_meta_node(node));
	if (h)
		t->heaps[node] = h;
	return h;
}

static inline heap_t *heap_get(_nd_thread_t *t, int node)
{
	if (nd_likely(node >= 0 && node < t->nheaps && t->heaps[node]))
		return t->heaps[node];
	return heap_attach(t, node);
}

/* Gives the slabs with nothing live back to the page level (their remote
 * lists need no walk: the counts tell) and moves full slabs that got
 * remote frees to the partial list. Caller owns h (its thread, or a parked
 * heap taken out of the pool). */
static void heap_trim(heap_t *h)
{
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		slab_t *s = h->fullh[c];
		while (s) {
			slab_t *nx = s->next;
			if (slab_all_remote(s)) {
				full_unlink(h, s);
				slab_release(s);
			} else if (__atomic_load_n(&s->tfree, __ATOMIC_ACQUIRE) & TF_PTR) {
				full_unlink(h, s);
				part_insert(h, s);
			}
			s = nx;
		}
		s = h->cur[c];
		while (s != &empty_slab && s) {
			slab_t *nx = s->next;
			if (slab_all_remote(s)) {
				part_unlink(h, s);
				slab_release(s);
			}
			s = nx;
		}
	}
}

/* Thread gone (or a policy heap evicted): trim, then park the heap in its
 * pool for adoption. */
static void heap_abandon(heap_t *h)
{
	heap_trim(h);
	heap_set_tp(h, 0);
	__atomic_store_n(&h->owner, NULL, __ATOMIC_RELEASE);
	_nd_lock_t *lk = h->pol ? &pheap_lock : &nodes[h->node].lock;
	heap_t **pool = h->pol ? &ppool : &nodes[h->node].pool;
	_nd_lock(lk);
	h->pool_next = *pool;
	*pool = h;
	_nd_unlock(lk);
}

/* The thread's heap for a policy that restricts or spreads nodes (bind:
 * node = the node it wants; interleave/weighted: node -1). At most 8 per
 * thread: the oldest other than the current one is parked to make room
 * (the caches that pointed at it are forgotten). */
static heap_t *pheap_get(_nd_thread_t *t, const nd_policy_t *pol, int node)
{
	for (int i = 0; i < t->nph; i++)
		if (t->ph[i]->pol == pol && t->ph[i]->node == node)
			return t->ph[i];
	int nmax = (int)(sizeof t->ph / sizeof t->ph[0]);
	if (t->nph == nmax) {
		int v = t->ph[0] == t->heap ? 1 : 0;
		heap_t *old = t->ph[v];
		for (int i = 0; i < ND_PCACHE; i++)
			if (t->pc[i].heap == (struct nd_heap *)old) {
				t->pc[i].user = NULL;
				__atomic_store_n(&t->pc[i].key, ND_KEY_NONE, __ATOMIC_RELAXED);
			}
		for (int i = v; i + 1 < t->nph; i++)
			t->ph[i] = t->ph[i + 1];
		t->nph--;
		heap_abandon(old);
	}
	int mn = node >= 0 ? heap_meta_node(node) : cpu_mem_node(_nd_topo_cpu());
	heap_t *h = heap_take(t, node, pol, mn);
	if (h)
		t->ph[t->nph++] = h;
	return h;
}

/* The thread-exit hook (thread.c): every heap is parked. */
static void thread_exit_hook(_nd_thread_t *t)
{
	t->heap = NULL;
	t->lheap = NULL;
	for (int i = 0; i < t->nheaps; i++) {
		heap_t *h = t->heaps[i];
		if (h) {
			t->heaps[i] = NULL;
			heap_abandon(h);
		}
	}
	for (int i = 0; i < t->nph; i++)
		heap_abandon(t->ph[i]);
	t->nph = 0;
}

void _nd_slab_thread_exit(void)
{
	_nd_thread_exit_now();
}

/* ---- resolution: which heap an allocation uses ----------------------------- */

/* Points t->cpu64 at the CPU pair the fast path compares (rseq's, or the
 * record's own for an emulated CPU or without rseq) and returns it. */
static uint64_t cpu_pair(_nd_thread_t *t)
{
	if (t->cpu_override >= 0) {
		t->cpu_pair[0] = t->cpu_pair[1] = t->cpu_override;
		t->cpu64 = (const uint64_t *)(void *)t->cpu_pair;
	} else {
		struct _nd_rseq_abi *r = _nd_os_rseq_area();
		if (r && (int32_t)__atomic_load_n(&r->cpu_id, __ATOMIC_RELAXED) >= 0) {
			t->cpu64 = (const uint64_t *)(void *)&r->cpu_id_start;
		} else {
			/* without rseq: the CPU as read now, refreshed every 32
			 * slow paths (malloc_slow) */
			t->cpu_pair[0] = t->cpu_pair[1] = _nd_topo_cpu();
			t->cpu64 = (const uint64_t *)(void *)t->cpu_pair;
		}
	}
	return __atomic_load_n(t->cpu64, __ATOMIC_RELAXED);
}

/* Stores the key of a heap chosen under policy generation g: if the
 * generation moved meanwhile, NONE (thread.c's invalidation may have
 * passed this record before the store). */
static void key_store(uint64_t *key, uint64_t v, uint32_t g)
{
	if (check_mode)
		return; /* every allocation validates: keys stay NONE */
	__atomic_store_n(key, v, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&_nd_policy_gen, __ATOMIC_SEQ_CST) != g)
		__atomic_store_n(key, ND_KEY_NONE, __ATOMIC_RELAXED);
}

/* The heap an allocation under pol (interned, or the local one) uses on
 * cpu. Interleave/weighted: the policy heap (the node is chosen per slab);
 * bind: the policy heap of the node it wants; the others: a node heap. */
static heap_t *heap_for(_nd_thread_t *t, const nd_policy_t *pol, int cpu)
{
	_nd_policy_iter_t it;
	switch (pol->mode) {
	case ND_POLICY_INTERLEAVE:
	case ND_POLICY_WEIGHTED:
		return pheap_get(t, pol, -1);
	case ND_POLICY_BIND: {
		int n = _nd_policy_first(&it, pol, -1);
		if (n < 0) {
			errno = ENOMEM;
			return NULL;
		}
		return pheap_get(t, pol, n);
	}
	case ND_POLICY_PREFERRED:
	case ND_POLICY_PREFERRED_MANY: {
		int n = _nd_policy_first(&it, pol, -1);
		if (n < 0) {
			errno = ENOMEM;
			return NULL;
		}
		return heap_get(t, n);
	}
	default:
		return heap_get(t, cpu_mem_node(cpu));
	}
}

/* The thread policy's heap, resolved again (policy or CPU changed): the
 * direct table follows it, key says for which CPU pair. */
static heap_t *resolve(_nd_thread_t *t)
{
	uint32_t g = __atomic_load_n(&_nd_policy_gen, __ATOMIC_SEQ_CST);
	const nd_policy_t *pol = _nd_policy_current();
	uint64_t pair = cpu_pair(t);
	int cpu = _nd_topo_cpu();
	heap_t *h = heap_for(t, pol, cpu);
	if (!h)
		return NULL;
	if (h != t->heap)
		set_heap(t, h);
	t->hpol = pol;
	if (pol->mode == ND_POLICY_LOCAL && !check_mode) {
		t->lheap = h;
		__atomic_store_n(&t->lkey, pair, __ATOMIC_RELAXED);
	}
	key_store(&t->key, pair, g);
	return h;
}

/* The heap of the current CPU's memory node (nd_malloc_local). */
static heap_t *local_heap(_nd_thread_t *t)
{
	uint64_t pair = cpu_pair(t);
	heap_t *h = heap_get(t, cpu_mem_node(_nd_topo_cpu()));
	if (h && !check_mode) {
		t->lheap = h;
		__atomic_store_n(&t->lkey, pair, __ATOMIC_RELAXED);
	}
	return h;
}

/* One object of class c: node >= 0: that node's heap (refills fall back
 * along its list, under pol or local); else pol (NULL = the thread's). */
static void *alloc_class(unsigned c, const nd_policy_t *pol, int node)
{
	_nd_thread_t *t = _nd_thread_self();
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	heap_t *h;
	if (node >= 0) {
		h = heap_get(t, node);
		if (!pol)
			pol = &_nd_policy_local;
	} else if (!pol || pol->mode == ND_POLICY_DEFAULT) {
		h = _nd_slab_key_ok(t, &t->key) ? t->heap : resolve(t);
		pol = t->hpol;
	} else if (pol->mode == ND_POLICY_LOCAL) {
		h = local_heap(t);
	} else {
		const nd_policy_t *ip = _nd_policy_intern(pol, NULL, 0);
		if (!ip)
			return NULL;
		pol = ip;
		h = heap_for(t, pol, _nd_topo_cpu());
	}
	if (!h)
		return NULL;
	void *p = heap_alloc(h, c, pol);
	if (!p)
		errno = ENOMEM;
	return p;
}

/* ---- bootstrap buffer ------------------------------------------------------
 * Allocations made while the library initializes on the same thread (the
 * init's own calls, e.g. pthread_atfork) or after a failed init. Bump only:
 * free() ignores these blocks, realloc() copies them out. */
#define BOOT_SIZE ((size_t)256 << 10)
static char boot_buf[BOOT_SIZE] __attribute__((aligned(ND_PAGE_SIZE)));
static size_t boot_used; /* atomic bump offset */

/* Each block has its size in the 16 bytes in front of it. */
void *_nd_slab_boot_alloc(size_t size, size_t align)
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

bool _nd_slab_boot_owns(const void *p)
{
	return (const char *)p >= boot_buf && (const char *)p < boot_buf + BOOT_SIZE;
}

size_t _nd_slab_boot_size(const void *p)
{
	return *(const size_t *)((const char *)p - 16);
}

uint64_t _nd_slab_slow_count(void) { return _nd_tls->slow; }

/* Without rseq the CPU pair is the record's copy: look at the CPU again
 * every 32 slow paths. */
static inline void count_slow(_nd_thread_t *t)
{
	if ((++t->slow & 31) == 0 && nd_unlikely(t->cpu64 == (const uint64_t *)(void *)t->cpu_pair) &&
	    t->cpu_override < 0)
		_nd_thread_invalidate(t);
}

/* Everything but a pop: first call (init), thread setup, CPU or policy
 * change, check mode. */
static __attribute__((noinline)) void *malloc_slow(size_t size)
{
	if (nd_unlikely(__atomic_load_n(&_nd_initialized, __ATOMIC_ACQUIRE) <= 0) && !_nd_ensure_init())
		return _nd_slab_boot_alloc(size, 16);
	_nd_thread_t *t = _nd_thread_self();
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	count_slow(t);
	return alloc_class(class_of(size), NULL, -1);
}

/* Sizes above ND_SLAB_DIRECT, and malloc.c's fast path when the key
 * missed: while the key holds, pop or refill from the current heap. */
void *_nd_slab_malloc(size_t size)
{
	_nd_thread_t *t = _nd_tls;
	if (nd_likely(_nd_slab_key_ok(t, &t->key))) {
		unsigned c = class_of(size);
		void *o = _nd_slab_pop((_nd_slab_hot_t *)t->heap->cur[c]);
		if (nd_likely(o != NULL))
			return o;
		count_slow(t);
		o = heap_alloc(t->heap, c, t->hpol);
		if (!o)
			errno = ENOMEM;
		return o;
	}
	return malloc_slow(size);
}

void *_nd_slab_refill(size_t size)
{
	_nd_thread_t *t = _nd_tls; /* the key matched: a real record */
	count_slow(t);
	void *o = heap_alloc(t->heap, class_of(size), t->hpol);
	if (!o)
		errno = ENOMEM;
	return o;
}

/* ---- placement calls' slow paths (malloc.c has the fast paths) ---------- */

void *_nd_slab_onnode(size_t size, int node)
{
	_nd_thread_t *t = _nd_thread_self();
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	count_slow(t);
	return alloc_class(class_of(size), &_nd_policy_local, node);
}

void *_nd_slab_local(size_t size)
{
	_nd_thread_t *t = _nd_thread_self();
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	count_slow(t);
	return alloc_class(class_of(size), &_nd_policy_local, -1);
}

/* nd_malloc_policy's cache: an entry remembers a caller's policy object
 * by its address and the words that can differ between valid policies on
 * this topology (mode and flags, granularity, the first 64 nodes' bits,
 * the first 8 weights), with the heap that policy resolved to on the CPU
 * of key. Only topologies of at most 64 nodes (8 for weighted) are cached;
 * a caller that changes bits above them in a cached object is not seen. */
static bool pc_cacheable(const nd_policy_t *p)
{
	int nl = _nd_topo()->node_limit;
	return nl <= 64 && (p->mode != ND_POLICY_WEIGHTED || nl <= 8);
}

static void pc_fill(struct _nd_pcache *e, const nd_policy_t *p)
{
	memcpy(&e->mode_flags, &p->mode, sizeof e->mode_flags);
	e->bits0 = p->nodes.bits[0];
	e->w0 = 0;
	if (p->mode == ND_POLICY_WEIGHTED)
		memcpy(&e->w0, p->weights, sizeof e->w0);
	e->gran = p->granularity_shift;
	bool il = p->mode == ND_POLICY_INTERLEAVE || p->mode == ND_POLICY_WEIGHTED;
	e->max = il ? (uint32_t)ND_PAGE_SIZE : (uint32_t)ND_SLAB_MAX;
}

void *_nd_slab_policy(size_t size, const nd_policy_t *p)
{
	_nd_thread_t *t = _nd_thread_self();
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	count_slow(t);
	struct _nd_pcache *e = NULL;
	for (int i = 0; i < ND_PCACHE && !e; i++)
		if (t->pc[i].user == p && _nd_slab_pc_same(&t->pc[i], p))
			e = &t->pc[i];
	if (!e) {
		char err[200];
		const nd_policy_t *ip = _nd_policy_intern(p, err, sizeof err);
		if (!ip) {
			_nd_msg_api("nd_malloc_policy: %s", err);
			return NULL; /* errno EINVAL or ENOMEM */
		}
		e = &t->pc[t->pc_next++ % ND_PCACHE];
		e->user = pc_cacheable(p) ? p : NULL;
		e->pol = ip;
		e->heap = NULL;
		__atomic_store_n(&e->key, ND_KEY_NONE, __ATOMIC_RELAXED);
		pc_fill(e, p);
	}
	if (e != &t->pc[0]) { /* the fast path looks at entry 0 only */
		struct _nd_pcache x = *e;
		*e = t->pc[0];
		t->pc[0] = x;
		e = &t->pc[0];
	}
	if (size > e->max) {
		errno = EINVAL; /* the caller sends these to the large path */
		return NULL;
	}
	heap_t *h = (heap_t *)e->heap;
	if (!h || !_nd_slab_key_ok(t, &e->key)) {
		uint64_t pair = cpu_pair(t);
		h = heap_for(t, e->pol, _nd_topo_cpu());
		if (!h)
			return NULL;
		e->heap = h;
		if (!check_mode && e->user)
			__atomic_store_n(&e->key, pair, __ATOMIC_RELAXED);
	}
	void *o = heap_alloc(h, class_of(size), e->pol);
	if (!o)
		errno = ENOMEM;
	return o;
}

/* Smallest class >= size whose objects are aligned to align. */
static int class_for(size_t size, size_t align)
{
	if (align <= 16)
		return (int)class_of(size);
	if (align > ND_PAGE_SIZE)
		return -1;
	size = ND_ALIGN_UP(size, align);
	if (size > ND_SLAB_MAX)
		return -1;
	for (unsigned c = class_of(size); c < ND_SLAB_CLASSES; c++)
		if (cls_size[c] % align == 0)
			return (int)c;
	return -1;
}

void *_nd_slab_alloc(size_t size, size_t align, const nd_policy_t *pol, int node)
{
	if (nd_unlikely(__atomic_load_n(&_nd_initialized, __ATOMIC_ACQUIRE) <= 0))
		return NULL;
	int c = class_for(size, align);
	if (c < 0) {
		errno = EINVAL;
		return NULL;
	}
	if (node >= 0 && !pol)
		pol = &_nd_policy_local;
	return alloc_class((unsigned)c, pol, node);
}

bool _nd_slab_fits(size_t size, size_t align)
{
	return size <= ND_SLAB_MAX && class_for(size, align) >= 0;
}

/* ---- free ---------------------------------------------------------------- */

static __attribute__((noreturn, noinline)) void bad_free(const void *p, const slab_t *s, const char *why)
{
	_nd_msg_fatal("free(): invalid pointer %p (%s; slab of %u-byte objects at %p)", p, why,
		      s ? s->size : 0, s ? (void *)s->start : NULL);
}

static __attribute__((noreturn, noinline)) void double_free(const void *p, const slab_t *s)
{
	_nd_msg_fatal("free(): double free of %p (%u-byte object, slab at %p)", p, s->size, (void *)s->start);
}

/* Check mode: is o on one of s's free lists? Only the owner can look:
 * another thread could follow a link the owner is rewriting (it pops the
 * remote list's nodes once it has taken them). The owner walks its private
 * list and the remote list (nodes only ever leave that one by its own
 * exchange). */
static bool on_free_lists(const slab_t *s, const void *o, bool owner)
{
	if (!owner)
		return false;
	for (void **x = s->free; x; x = x[0]) {
		check_link(s, x, "free");
		if (x == o)
			return true;
	}
	for (void **x = (void **)(__atomic_load_n(&s->tfree, __ATOMIC_ACQUIRE) & TF_PTR); x; x = x[0]) {
		check_link(s, x, "free");
		if (x == o)
			return true;
	}
	return false;
}

static __attribute__((noinline)) void free_local_slow(heap_t *h, slab_t *s)
{
	if (s->fbias) {
		full_unlink(h, s);
		part_insert(h, s);
	} else if (s->used == 0 && h->cur[s->cls] != s) {
		/* empty and not the one being allocated from: back to the page level */
		part_unlink(h, s);
		slab_release(s);
	}
}

/* Once the push is visible the owner may take the object and release the
 * slab: everything needed from the header is read before. */
static __attribute__((noinline)) void free_remote(slab_t *s, void **o)
{
	heap_t *h = __atomic_load_n(&s->heap, __ATOMIC_RELAXED);
	uint64_t bit = (uint64_t)1 << s->cls;
	uintptr_t old = __atomic_load_n(&s->tfree, __ATOMIC_RELAXED), nv;
	do {
		o[0] = (void *)(old & TF_PTR);
		/* count + 1, head = o, NOTIFY cleared */
		nv = ((old >> TF_CNT_SHIFT) + 1) << TF_CNT_SHIFT | (uintptr_t)o;
	} while (!__atomic_compare_exchange_n(&s->tfree, &old, nv, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	if (old & NOTIFY)
		__atomic_fetch_or(&h->notify, bit, __ATOMIC_RELEASE);
	/* parked heap: a thread of its pool will trim and absorb it */
	if (nd_unlikely(__atomic_load_n(&h->owner, __ATOMIC_RELAXED) == NULL) &&
	    !__atomic_load_n(pool_dirty_of(h), __ATOMIC_RELAXED))
		__atomic_store_n(pool_dirty_of(h), 1, __ATOMIC_RELAXED);
}

/* The marker says "already free", or check mode: validate, then free. */
static __attribute__((noinline)) void free_checked(slab_t *s, void **o)
{
	bool owner = is_owner(s);
	if (o[1] == marker(s) || on_free_lists(s, o, owner))
		double_free(o, s);
	o[1] = marker(s);
	if (owner) {
		if (_nd_slab_push((_nd_slab_hot_t *)s, o))
			free_local_slow(s->heap, s);
		return;
	}
	free_remote(s, o);
}

/* Index of the object at offset off, or a huge number if off is not a
 * multiple of the size (internal.h, _nd_slab_index: one multiply, one
 * rotate by a constant). */
static inline uint64_t obj_index(const slab_t *s, uintptr_t off)
{
	uint64_t x = off * s->mul;
	return (x >> 15) | (x << 49);
}

static inline __attribute__((always_inline)) void slab_free(void *p, _nd_pagedesc_t *d)
{
	slab_t *s = (slab_t *)d->user;
	void **o = p;
	/* not the start of an object, or never handed out: one test */
	if (nd_unlikely(obj_index(s, (uintptr_t)((char *)p - s->start)) >= __atomic_load_n(&s->carved, __ATOMIC_RELAXED)))
		bad_free(p, s, _nd_slab_invalid(p, d));
	if (nd_unlikely((o[1] == marker(s)) | check_mode)) {
		free_checked(s, o);
		return;
	}
	o[1] = marker(s);
	if (nd_likely(is_owner(s))) {
		if (nd_unlikely(_nd_slab_push((_nd_slab_hot_t *)s, o))) /* now empty, or it was full */
			free_local_slow(s->heap, s);
		return;
	}
	free_remote(s, o);
}

void _nd_slab_free(void *p, _nd_pagedesc_t *d)
{
	slab_free(p, d);
}

/* The out-of-line parts of malloc.c's inlined free (internal.h). */
void _nd_slab_free_marked(void *p, _nd_slab_hot_t *s)
{
	double_free(p, (const slab_t *)s);
}

void _nd_slab_free_other(void *p, _nd_slab_hot_t *s)
{
	free_remote((slab_t *)s, p);
}

void _nd_slab_free_emptied(_nd_slab_hot_t *s)
{
	free_local_slow(((slab_t *)s)->heap, (slab_t *)s);
}


const char *_nd_slab_invalid(const void *p, const _nd_pagedesc_t *d)
{
	const slab_t *s = (const slab_t *)d->user;
	uintptr_t off = (uintptr_t)((const char *)p - s->start);
	uint16_t carved = __atomic_load_n(&s->carved, __ATOMIC_RELAXED);
	if (nd_likely(obj_index(s, off) < carved))
		return NULL;
	if (off % s->size != 0)
		return "not the start of an object";
	if (off / s->size >= carved)
		return "never allocated";
	return NULL;
}

bool _nd_slab_freed(const void *p, const _nd_pagedesc_t *d)
{
	return ((void *const *)p)[1] == (void *)d->user;
}

int _nd_slab_node(const _nd_pagedesc_t *d)
{
	return ((const slab_t *)d->user)->node;
}

size_t _nd_slab_usable(const void *p, const _nd_pagedesc_t *d)
{
	(void)p;
	return ((const slab_t *)d->user)->size;
}

/* ---- init and fork ------------------------------------------------------- */

int _nd_slab_init(void)
{
	unsigned c = 0;
	for (unsigned i = 0; i <= ND_SLAB_MAX / 16; i++) {
		size_t sz = (size_t)i * 16;
		while (cls_size[c] < sz)
			c++;
		cls_tab[i] = (uint8_t)c;
	}
	for (c = 0; c < ND_SLAB_CLASSES; c++) {
		/* at least 16 KiB and 8 objects, in a power of two of pages */
		size_t want = 8 * (size_t)cls_size[c];
		if (want < 16384)
			want = 16384;
		size_t np = 1;
		while ((np << ND_PAGE_SHIFT) < want)
			np <<= 1;
		cls_pages[c] = (uint8_t)np;
		cls_cap[c] = (uint16_t)((np << ND_PAGE_SHIFT) / cls_size[c]);
		uint64_t d = cls_size[c] >> __builtin_ctz(cls_size[c]), x = d;
		for (int i = 0; i < 6; i++) /* Newton: each step doubles the correct bits */
			x *= 2 - d * x;
		cls_mul[c] = x << (15 - __builtin_ctz(cls_size[c])); /* internal.h: _nd_slab_index */
	}
	check_mode = _nd_opt_int(ND_OPT_CHECK) != 0;
	if (!__atomic_load_n(&map_tried, __ATOMIC_ACQUIRE) && map_make(MAP_MAX_PAGES, true))
		__atomic_store_n(&map_tried, 1, __ATOMIC_RELEASE);
	_nd_thread_set_exit_hook(thread_exit_hook);
	return 0;
}

