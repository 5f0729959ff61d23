// SPDX-License-Identifier: MIT
/*
 * Node arenas: the page level (docs/arenas.md).
 *
 * One virtual reservation, cut into equal power-of-two slots aligned to
 * their size: slot s < node_limit belongs to node s (usable only if the
 * node has memory), slot node_limit is the "mixed" slot for runs whose
 * granules are spread over nodes (spread.c). Address -> slot is one
 * subtraction and one shift; address -> descriptor one more shift (one
 * descriptor array covers every slot). Node slots are mbind'ed to their
 * node before anything is touched.
 *
 * Each slot is a buddy allocator of 4 KiB pages (buddy.c, which states
 * the descriptor invariants). Committed pages and their return to the OS:
 * purge.c; node capacity and headroom: room.c; the layout and each slot's
 * setup: reserve.c.
 *
 * Under an address space limit (ulimit -v) the slots are mapped lazily:
 * the layout (base, slot size, descriptors) is fixed at setup, sized to
 * the limit, and only runs and dirty free pages are mapped: a run maps
 * its clean pages when taken (room.c, _nd_room_map_run), a purge unmaps
 * (purge.c). So one node can use nearly all the limit, and large runs
 * again after a peak of small ones.
 *
 * Locks: g.lock (setup, fork) and one lock per slot (its free lists, the
 * descriptors of its free blocks, its mapped extent). Lock order: g.lock
 * before a slot lock; never two slot locks at once. Capacity, committed
 * and used counters are atomics. Pages of a run in limbo (taken but not
 * yet marked, or being freed) belong to the thread working on them; it
 * edits their descriptors without the lock.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h> /* MADV_* values only: the calls go through os.c */

#include "internal.h"

#define HUGE_PAGES (ND_HUGE_SIZE >> ND_PAGE_SHIFT) /* 512: pages of a 2 MiB huge page */

_nd_page_global_t _nd_page_g = { .lock = ND_LOCK_INIT };
#define g _nd_page_g
ND_LOCK_FIELD(g_lock_class, g.lock, ND_RANK_PAGE_SETUP);
ND_LOCK_DYN_ARRAY(arena_lock_class, &g.arenas, _nd_arena_t, lock, &g.nslots, ND_RANK_PAGE_ARENA);

/* ---- small helpers ----------------------------------------------------- */

static inline void *page_addr(const _nd_arena_t *a, uint64_t i)
{
	return a->base + (i << ND_PAGE_SHIFT);
}

/* ---- setup (g.lock held) ------------------------------------------------ */

/* Not inlined: its code runs once, before _nd_os_text_drop, and so sits
 * in the code that call drops (src/hot_text.ld's setup part). */
static __attribute__((noinline)) int setup_locked(void)
{
	/* From here on the topology cannot be replaced: slots follow it. */
	_nd_topo_freeze();
	const _nd_topo_t *t = _nd_topo();
	if (t->node_limit < 1 || t->node_limit > ND_MAX_NODES) {
		_nd_msg_error("page: bad node_limit %d from the topology", t->node_limit);
		return -1;
	}
	_nd_reserve_read_options();
	int nslots = t->node_limit + 1;
	void *res, *desc;
	unsigned shift;
	if (_nd_reserve_layout(t, nslots, &res, &desc, &shift) < 0)
		return -1;
	size_t total = (size_t)nslots << shift;
	size_t desc_bytes = (total >> ND_PAGE_SHIFT) * sizeof(_nd_pagedesc_t);
	int err = 0;
	size_t ab = (size_t)nslots * sizeof(_nd_arena_t);
	_nd_arena_t *arenas = _nd_os_small(ab, &err);
	if (!arenas) {
		if (!g.lazy)
			_nd_os_munmap(res, total);
		_nd_os_munmap(desc, desc_bytes);
		_nd_msg_error("initialization failed: cannot map %zu bytes of arena headers (errno %d)", ab, -err);
		return -1;
	}
	/* Descriptors are touched a page at a time, sparsely: transparent huge
	 * pages would commit 2 MiB for every 4 KiB used (36 MiB seen in a VM). */
	_nd_os_madvise(desc, desc_bytes, MADV_NOHUGEPAGE);
	g.base = (uintptr_t)res;
	g.total = total;
	g.slot_shift = shift;
	g.slot_mask = ((uintptr_t)1 << shift) - 1;
	g.order_max = shift - ND_PAGE_SHIFT;
	g.node_limit = t->node_limit;
	g.nslots = nslots;
	g.desc = desc;
	g.desc_bytes = desc_bytes;
	g.arenas = arenas;
	g.arenas_bytes = ab;
	g.bind = !t->emulated;
	g.check_free = g.bind;
	for (int s = 0; s < nslots; s++)
		_nd_reserve_slot_init(&arenas[s], s, t);
	return 0;
}

static bool setup_slow(void)
{
	if (__atomic_load_n(&g.failed, __ATOMIC_RELAXED))
		return false; /* reported once; no retry per malloc */
	_nd_lock(&g.lock);
	bool made = !g.ready && !g.failed && setup_locked() == 0;
	bool ok = g.ready || made;
	if (ok)
		__atomic_store_n(&g.ready, 1, __ATOMIC_RELEASE);
	else
		__atomic_store_n(&g.failed, 1, __ATOMIC_RELAXED);
	_nd_unlock(&g.lock);
	if (made)
		_nd_os_text_drop(); /* the init's and this setup's code, run once */
	return ok;
}

static inline bool ensure_setup(void)
{
	if (nd_likely(__atomic_load_n(&g.ready, __ATOMIC_ACQUIRE)))
		return true;
	return setup_slow();
}

bool _nd_page_lazy(void)
{
	return ensure_setup() && g.lazy;
}

int _nd_page_init(void)
{
	/* Arenas are built on the first allocation, so that an emulated
	 * topology or options set by a test before it are honoured. */
	return 0;
}

/* ---- allocation from one node's slot ----------------------------------- */

/* THP for big runs (NODALLOC_THP=madvise where the system's mode is
 * madvise: "always" needs no advice, "never" allows none): the run's
 * whole 2 MiB pages are advised MADV_HUGEPAGE (room.c: unless huge pages
 * have been slow to fault; a new run's first one is probed), and given
 * back to the default (MADV_NOHUGEPAGE, the same under madvise) when the
 * pages are freed, so that small runs placed there later fault 4 KiB
 * pages. on: 1 a new run (its pages clean), 2 a run grown in place. */
static void huge_run(_nd_arena_t *a, uint64_t i, uint64_t n, int on)
{
	uint64_t s = ND_ALIGN_UP(i, (uint64_t)HUGE_PAGES), e = (i + n) & ~(uint64_t)(HUGE_PAGES - 1);
	if (e <= s)
		return;
	if (on)
		_nd_room_huge(page_addr(a, s), (size_t)(e - s) << ND_PAGE_SHIFT, on == 1);
	else
		_nd_os_madvise(page_addr(a, s), (size_t)(e - s) << ND_PAGE_SHIFT, MADV_NOHUGEPAGE);
}

/* A burst's next count from d (its pages so far): n pages freed or taken. */
static inline uint32_t drop_next(uint32_t d, uint64_t n, bool freed)
{
	if (freed)
		return n >= ND_DROP_MAX - d ? ND_DROP_MAX : d + (uint32_t)n;
	return n >= d ? 0 : d - (uint32_t)n;
}

/* drop_note's change of a thread's burst that its node holds (not the
 * main thread's): into burst_live, and the burst clock (purge.c,
 * burst_cut): a free starts it again, a take (the burst in use) keeps it
 * going, but not once it ran out; then the thread's old count is cut
 * too and starts again. Out of line: threads' run frees only. */
static __attribute__((noinline)) uint32_t drop_held(_nd_arena_t *a, uint32_t d, uint64_t n, bool freed)
{
	uint64_t bn = __atomic_load_n(&a->burst_ns, __ATOMIC_RELAXED);
	if (!bn && d && g.decay_ns) {
		__atomic_fetch_sub(&a->burst_live, (int64_t)d, __ATOMIC_RELAXED);
		d = 0;
	}
	uint32_t e = drop_next(d, n, freed);
	if (e == d)
		return e;
	__atomic_fetch_add(&a->burst_live, (int64_t)e - (int64_t)d, __ATOMIC_RELAXED);
	uint64_t now = g.decay_ns ? _nd_os_now_ns() | 1 : 1;
	if (freed)
		__atomic_store_n(&a->burst_ns, now, __ATOMIC_RELAXED);
	else if (bn)
		__atomic_compare_exchange_n(&a->burst_ns, &bn, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	return e;
}

/* The burst of t, the calling thread's record (nd_thread.h, page_drop):
 * a small node run it frees adds its pages, one it takes takes them off;
 * but the main thread's, the change goes to the node's burst_live too
 * (drop_held). A free makes the thread's record (give_back; large blocks
 * alone make none), so that its exit hook runs and hands the burst on.
 * Inlined: its callers are in the hot text (src/hot_text.ld). */
static inline __attribute__((always_inline)) void drop_note(_nd_thread_t *t, uint64_t n, bool freed, int node)
{
	if (n >= g.purge_pages || _nd_thread_none(t))
		return;
	uint32_t d = t->page_drop;
	bool held = t != __atomic_load_n(&_nd_thread_main, __ATOMIC_RELAXED);
	if (t->drop_node1 != (uint32_t)node + 1) { /* a burst is one node's */
		if (!freed || t->drop_node1 == ND_DROP_GONE)
			return;
		if (d && held) /* the count starts again: the old node no longer holds it */
			__atomic_fetch_sub(&g.arenas[t->drop_node1 - 1].burst_live, (int64_t)d, __ATOMIC_RELAXED);
		t->drop_node1 = ((uint32_t)node + 1) & ND_DROP_NODES;
		d = 0;
	}
	t->page_drop = held ? drop_held(&g.arenas[node], d, n, freed) : drop_next(d, n, freed);
}

void _nd_page_burst_done(_nd_thread_t *t)
{
	if (_nd_thread_none(t) || t->drop_node1 == ND_DROP_GONE)
		return;
	if (t->drop_node1 && t->page_drop && t != __atomic_load_n(&_nd_thread_main, __ATOMIC_RELAXED))
		__atomic_fetch_sub(&g.arenas[t->drop_node1 - 1].burst_live, (int64_t)t->page_drop, __ATOMIC_RELAXED);
	t->page_drop = 0;
	t->drop_node1 = ND_DROP_GONE;
}

void _nd_page_fork_child(void)
{
	_nd_thread_t *t = _nd_tls;
	__atomic_store_n(&_nd_thread_main, _nd_thread_none(t) ? NULL : t, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&g.ready, __ATOMIC_ACQUIRE))
		return;
	for (int s = 0; s < g.node_limit; s++) {
		__atomic_store_n(&g.arenas[s].burst_live, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&g.arenas[s].burst_ns, 0, __ATOMIC_RELAXED);
	}
}

/* Lazy reservation: run [i, i+n) (rd dirty pages) could not map its
 * clean pages; back to the free lists, every page clean and unmapped
 * (its dirty ones no longer counted as committed). Not locked on entry. */
static void unmap_undo(_nd_arena_t *a, uint32_t i, uint64_t n, uint64_t rd)
{
	_nd_os_munmap(page_addr(a, i), (size_t)n << ND_PAGE_SHIFT);
	if (rd)
		_nd_buddy_clear_dirty(&a->bd, i, n);
	_nd_room_committed(a, -(int64_t)rd);
	_nd_lock(&a->lock);
	_nd_buddy_give(&a->bd, i, n, false, true);
	_nd_room_give(a, n);
	_nd_room_shrink(a);
	_nd_unlock(&a->lock);
}

/* Free pages enough, no block of order k: a span, the hole given to the
 * buddy allocator first (its growth wanted a whole aligned block of order
 * k past the part's end: a shrunk part, its free tail and the hole,
 * refused 1000 MiB on an empty 1 GiB node; task bigslot). Under a's lock;
 * out of line: rare, and node_alloc is in the code every process runs
 * (test_init_footprint). */
static __attribute__((noinline, cold)) uint32_t take_span(_nd_arena_t *a, uint64_t n, uint64_t align, uint64_t *d)
{
	bool grew = _nd_room_grow_to(a, 1ull << g.order_max);
	uint32_t i = _nd_buddy_take_span(&a->bd, n, align, a->mapped, d);
	if (i == ND_BUDDY_NIL && grew) /* the hole back: lazy, the part is what reserved_MiB counts (audit20) */
		_nd_room_shrink(a);
	return i;
}

/* A heap's slab runs smaller than this many pages start a group of them
 * (a clean block of this size) when none can follow its last one: two
 * threads that take runs at once then write pages far apart. Their runs
 * interleaved 16 KiB by 16 KiB cost bench batch2 (2 threads, 16 KiB
 * slabs) 1.3x mimalloc's time (docs/malloc.md, "Threads"). */
#define NEAR_GROUP 32
/* No dirty free block of order k or above: a run of order k would be
 * cut from a clean block anyway. */
static bool none_dirty_from(const _nd_buddy_t *b, unsigned k)
{
	for (unsigned o = k; o <= b->purge_order && o <= b->order_max; o++)
		if (b->dhead[o] != ND_BUDDY_NIL)
			return false;
	return true;
}

/* Where a heap's slab run should go (_nd_page_alloc_near). */
typedef struct near {
	uint64_t at; /* page index in the slot, UINT64_MAX: none */
	unsigned gk; /* group order, 0: none */
} near_t;

/* A heap's slab run of n pages (order k; slot lock held): right after its
 * last one, at page at (_nd_page_alloc_near), else, if it would be cut
 * from a clean block anyway, at the start of a clean block of order gk,
 * whose rest its next runs take (*cut = gk: the tail goes back); NIL if
 * neither. Out of line and out of the hot text: only heaps of a node
 * whose threads take slab runs in turn call it (slab.c, _nd_slab_new). */
static __attribute__((noinline, cold)) uint32_t near_take(_nd_arena_t *a, uint64_t n, unsigned k, const near_t *nr,
							  uint64_t *d, unsigned *cut)
{
	uint32_t i = ND_BUDDY_NIL;
	if (nr->at != UINT64_MAX && nr->at + n <= a->mapped &&
	    (i = _nd_buddy_take_at(&a->bd, nr->at, n, k, d)) != ND_BUDDY_NIL)
		*cut = 0; /* exact: no tail */
	else if (nr->gk > k && none_dirty_from(&a->bd, k) &&
		 ((i = _nd_buddy_take(&a->bd, nr->gk, true, d)) != ND_BUDDY_NIL ||
		  (!g.lazy && _nd_room_grow(a, nr->gk) && (i = _nd_buddy_take(&a->bd, nr->gk, true, d)) != ND_BUDDY_NIL)))
		*cut = nr->gk; /* eager: the slot grown for it (the hole costs no call) */
	return i;
}

/* A run of n pages (align: a power of two) from node's slot; NULL if it
 * has none. Lazy reservation: when the address space limit refuses the
 * run's mapping, the address space of every slot's free pages goes back
 * (_nd_purge_release) and the run is tried once more. low: the lowest n
 * free pages in a row of the grown part first (_nd_page_alloc_low).
 * advise: a big run's huge page advice (and probe) given here; false: the
 * caller's (_nd_page_alloc_fill). nr: a heap's slab run placed near its
 * own (near_take), else NULL. */
static void *node_alloc(int node, uint64_t n, uint64_t align, bool low, bool advise, const near_t *nr)
{
	if (node < 0 || node >= g.node_limit)
		return NULL;
	_nd_arena_t *a = &g.arenas[node];
	unsigned k = _nd_page_ceil_log2(n > align ? n : align);
	if (!a->usable || k > g.order_max)
		return NULL;
	bool released = false;
retry:;
	bool maybe_fresh = __atomic_load_n(&a->bd.dirty_free, __ATOMIC_RELAXED) < n;
	if (!_nd_room_take(a, n, maybe_fresh ? n : 0))
		return NULL;
	_nd_lock(&a->lock);
	uint64_t d;
	/* a small run with no alignment starts where the last one ended if
	 * it can (buddy.c, packed runs), else at the oldest of the largest
	 * dirty blocks (where the runs freed first begin) */
	bool packed = n < g.purge_pages && align == 1 && !low;
	uint32_t i = packed ? _nd_buddy_take_next(&a->bd, n, k, &d) : ND_BUDDY_NIL;
	unsigned cut = k; /* the order of the block the run is cut from */
	ND_ASSERT(!(nr && packed), "a slab run (aligned to its size, at least 16 KiB) is never packed: take_next took nothing");
	if (nd_unlikely(nr != NULL))
		i = near_take(a, n, k, nr, &d, &cut);
	if (nd_unlikely(low) && (i = _nd_buddy_take_low(&a->bd, n, a->mapped, &d)) != ND_BUDDY_NIL)
		cut = 0; /* exact: no tail */
	if (i == ND_BUDDY_NIL && packed && !g.lazy && a->bd.next_at <= a->mapped && a->bd.next_at + n > a->mapped &&
	    _nd_room_grow_to(a, a->bd.next_at + n)) /* at the grown part's end: an eager hole costs nothing */
		i = _nd_buddy_take_next(&a->bd, n, k, &d);
	if (i == ND_BUDDY_NIL)
		i = packed ? _nd_buddy_take_oldest(&a->bd, k, true, &d) : _nd_buddy_take(&a->bd, k, n < g.purge_pages, &d);
	else if (cut == k)
		cut = 0; /* exact already: no tail. Not k: a retry (below) takes
			  * blocks of order k again (audit15: a run of n pages
			  * cut from a block of one page) */
	if (i == ND_BUDDY_NIL && !g.lazy && _nd_room_grow(a, k)) /* eager: the hole costs no purge, no call */
		i = _nd_buddy_take(&a->bd, k, n < g.purge_pages, &d);
	if (i == ND_BUDDY_NIL && a->bd.dirty_free && _nd_purge_slot(a)) /* dirty blocks kept buddies apart */
		i = _nd_buddy_take(&a->bd, k, n < g.purge_pages, &d);
	if (i == ND_BUDDY_NIL && _nd_room_grow(a, k)) /* lazy reservation */
		i = _nd_buddy_take(&a->bd, k, n < g.purge_pages, &d);
	if (i == ND_BUDDY_NIL && n > 1 && a->bd.free_pages + ((1ull << g.order_max) - a->mapped) >= n) {
		i = take_span(a, n, align, &d);
		cut = 0; /* exact: no tail */
	}
	if (i == ND_BUDDY_NIL) {
		_nd_unlock(&a->lock);
		_nd_room_give(a, n);
		return NULL;
	}
	uint64_t rd = d;
	if (n < (1ull << cut))
		rd -= _nd_buddy_give_tail(&a->bd, i, cut, d, n);
	a->dirty_taken += rd; /* the decay: dirty pages in use again */
	if (a->lim_out && rd < n && a->bd.dirty_free < n) /* no dirty block left to serve it: a refault */
		_nd_purge_taken(a, n - rd);
	if (packed)
		_nd_buddy_packed(&a->bd, i, n);
	_nd_buddy_mark_run(&a->bd, i, n, node);
	if (!rd) /* every page clean: calloc need not touch them (_nd_page_zero) */
		a->bd.desc[i].flags |= ND_PGF_FRESH;
	ND_ASSERT(rd || !_nd_buddy_count_dirty(&a->bd, i, n), "a run taken as all clean has no dirty page");
	_nd_unlock(&a->lock);
	if (g.lazy && rd < n && _nd_room_map_run(a, i, n, rd) < 0) {
		unmap_undo(a, i, n, rd);
		if (released)
			return NULL;
		_nd_purge_release();
		released = true;
		goto retry;
	}
	/* The run's pages are ours now: mark them without the lock. Small
	 * runs carry DIRTY on every page; big ones come from clean blocks
	 * (invariant I) and are purged whole when freed. */
	if (n < g.purge_pages) {
		if (rd < n)
			for (uint64_t j = 0; j < n; j++)
				a->bd.desc[i + j].flags |= ND_PGF_DIRTY;
	} else if (rd) {
		_nd_buddy_clear_dirty(&a->bd, i, n); /* not reached while invariant I holds */
	}
	_nd_room_committed(a, (int64_t)(n - rd));
	_nd_room_stats(_nd_stats_in_use, node, (int64_t)n);
	drop_note(_nd_tls, n, false, node);
	if (n >= HUGE_PAGES && g.thp_runs && advise)
		huge_run(a, i, n, rd ? 2 : 1); /* clean pages: probed */
	return page_addr(a, i);
}

static bool check_args(size_t npages, size_t *align)
{
	if (*align == 0)
		*align = 1;
	if (npages == 0 || (*align & (*align - 1)) != 0) {
		errno = EINVAL;
		return false;
	}
	return true;
}

/* A run refused for its size or its alignment (in pages) above 2^order
 * pages: ENOMEM, and once a warning naming the cause. */
static void *too_big(size_t npages, size_t align, unsigned order)
{
	static int warned;
	bool by_align = align > npages;
	errno = ENOMEM;
	if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		return NULL;
	size_t want = by_align ? align : npages;
	if (want > (size_t)1 << (63 - ND_PAGE_SHIFT)) { /* no bound set: no slot or option is the cause */
		_nd_msg_warn("an %s of %zu MiB is larger than any address space; it and any like it fail with ENOMEM",
			     by_align ? "alignment" : "allocation", want >> (20 - ND_PAGE_SHIFT));
	} else if (order < g.run_order_max) { /* a node's block this large goes outside the slot */
		_nd_msg_warn("an %s of %zu MiB is larger than an arena slot (%zu MiB, from the address space limit or "
			     "the reservation's caps); it and any like it fail with ENOMEM unless a malloc block "
			     "of one node (interleave, weighted, nd_heap and nd_table blocks cannot leave the slots)",
			     by_align ? "alignment" : "allocation", want >> (20 - ND_PAGE_SHIFT),
			     ((size_t)1 << (order + ND_PAGE_SHIFT)) >> 20);
	} else {
		_nd_msg_warn("an %s of %zu MiB is larger than an arena slot (%zu MiB, from NODALLOC_ARENA_RESERVE "
			     "or the address space limit); it and any like it fail with ENOMEM",
			     by_align ? "alignment" : "allocation", want >> (20 - ND_PAGE_SHIFT),
			     ((size_t)1 << (order + ND_PAGE_SHIFT)) >> 20);
	}
	errno = ENOMEM; /* the message path's write may not keep it */
	return NULL;
}

static unsigned run_order(size_t npages, size_t align)
{
	return _nd_page_ceil_log2(npages > align ? npages : align);
}

/* Could a slot hold a run of npages aligned to align pages (set up)? */
static bool run_fits(size_t npages, size_t align)
{
	return run_order(npages, align) <= g.order_max;
}

/* What prepare() lets through: a run a slot can hold (SLOT), that or
 * one larger up to the bound, refused quietly when larger (NODE: the
 * caller goes outside the slot next), one up to the bound (OUT). */
enum { PREP_SLOT, PREP_NODE, PREP_OUT };

/* Common entry of the run allocators: arguments, setup, size, decay. */
static bool prepare(size_t npages, size_t *align, int kind)
{
	if (!check_args(npages, align))
		return false;
	if (!ensure_setup()) {
		errno = ENOMEM;
		return false;
	}
	unsigned o = run_order(npages, *align);
	if (kind != PREP_SLOT && o > g.run_order_max) {
		too_big(npages, *align, g.run_order_max);
		return false;
	}
	if (kind != PREP_OUT && o > g.order_max) {
		if (kind == PREP_SLOT)
			too_big(npages, *align, g.order_max);
		errno = ENOMEM;
		return false;
	}
	_nd_purge_decay();
	return true;
}

static void *alloc_exact(int node, size_t npages, size_t align_pages, bool advise)
{
	if (!prepare(npages, &align_pages, PREP_NODE))
		return NULL;
	void *p = node_alloc(node, npages, align_pages, false, advise, NULL);
	if (!p)
		errno = ENOMEM;
	return p;
}

void *_nd_page_alloc_exact(int node, size_t npages, size_t align_pages)
{
	return alloc_exact(node, npages, align_pages, true);
}

void *_nd_page_alloc_fill(int node, size_t npages, size_t align_pages)
{
	return alloc_exact(node, npages, align_pages, false);
}

void _nd_page_huge_fresh(void *p, size_t npages)
{
	if (npages < HUGE_PAGES || !g.thp_runs)
		return;
	uintptr_t off = (uintptr_t)p - g.base;
	if (off >= g.total || (int)(off >> g.slot_shift) >= g.node_limit || !g.arenas[off >> g.slot_shift].usable)
		return; /* not a node slot's pages */
	huge_run(&g.arenas[off >> g.slot_shift], (off & g.slot_mask) >> ND_PAGE_SHIFT, npages, 1);
}

void *_nd_page_alloc_out(int node, size_t npages, size_t align_pages)
{
	if (!prepare(npages, &align_pages, PREP_OUT))
		return NULL;
	void *p = _nd_outrun_alloc(node, npages, align_pages);
	if (!p)
		errno = ENOMEM;
	return p;
}

bool _nd_page_room_for(int node, size_t npages)
{
	if (node < 0 || node >= g.node_limit || !g.arenas[node].usable)
		return false;
	const _nd_arena_t *a = &g.arenas[node];
	return __atomic_load_n(&a->used, __ATOMIC_RELAXED) + npages <= a->cap;
}

bool _nd_page_run_fits(size_t npages, size_t align_pages)
{
	return ensure_setup() && run_fits(npages, align_pages);
}

void *_nd_page_alloc_low(int node, size_t npages)
{
	size_t align = 1;
	if (!prepare(npages, &align, PREP_SLOT))
		return NULL;
	void *p = node_alloc(node, npages, 1, true, true, NULL);
	if (!p)
		errno = ENOMEM;
	return p;
}

void *_nd_page_alloc(size_t npages, size_t align_pages, const nd_policy_t *pol, int want_node, int *got_node)
{
	if (got_node)
		*got_node = -1;
	if (!prepare(npages, &align_pages, PREP_SLOT))
		return NULL;
	_nd_policy_iter_t it;
	for (int n = _nd_policy_first_n(&it, pol, want_node, npages); n >= 0; n = _nd_policy_next(&it)) {
		void *p = node_alloc(n, npages, align_pages, false, true, NULL);
		if (p) {
			_nd_policy_count(&it, n);
			if (got_node)
				*got_node = n;
			return p;
		}
	}
	errno = ENOMEM;
	return NULL;
}

/* _nd_page_alloc's loop with a place per node (nd_page.h). */
void *_nd_page_alloc_near(size_t npages, const nd_policy_t *pol, int want_node, int *got_node, char **near)
{
	size_t align = npages;
	*got_node = -1;
	if (!prepare(npages, &align, PREP_SLOT))
		return NULL;
	uintptr_t off = *near ? (uintptr_t)*near - g.base : UINTPTR_MAX;
	near_t nr = { UINT64_MAX, npages < NEAR_GROUP ? _nd_page_ceil_log2(NEAR_GROUP) : 0 };
	_nd_policy_iter_t it;
	for (int n = _nd_policy_first_n(&it, pol, want_node, npages); n >= 0; n = _nd_policy_next(&it)) {
		/* a run of a bigger class than the last: the next aligned place */
		nr.at = off < g.total && (int)(off >> g.slot_shift) == n
				? ND_ALIGN_UP((off & g.slot_mask) >> ND_PAGE_SHIFT, (uint64_t)align)
				: UINT64_MAX;
		void *p = node_alloc(n, npages, align, false, true, &nr);
		if (p) {
			_nd_policy_count(&it, n);
			*got_node = n;
			*near = (char *)p + (npages << ND_PAGE_SHIFT);
			return p;
		}
	}
	errno = ENOMEM;
	return NULL;
}

/* Run head t (right after run h's end, in slot a) becomes part of h. */
static void join_heads(_nd_arena_t *a, _nd_pagedesc_t *h, _nd_pagedesc_t *t)
{
	_nd_lock(&a->lock);
	h->npages += t->npages;
	t->state = ND_PG_TAIL;
	t->npages = 0;
	t->use = ND_USE_NONE;
	t->user = 0;
	h->flags &= (uint8_t)~(~t->flags & ND_PGF_HUGE); /* huge if both were */
	t->flags &= (uint8_t)~(ND_PGF_KIL | ND_PGF_HUGE);
	_nd_unlock(&a->lock);
}

/* ---- spread runs (the mixed slot) -------------------------------------- */

/* fixed: the run's first granule has index first (or
 * ND_SPREAD_BY_ADDRESS); else the index comes from the thread's spread
 * cursor (which then moves on). */
static void *alloc_spread(size_t npages, const nd_policy_t *pol, bool fixed, uint64_t first)
{
	size_t one = 1;
	if (!prepare(npages, &one, PREP_SLOT))
		return NULL;
	if (!pol)
		pol = _nd_policy_current();
	if (_nd_policy_node_for_granule(pol, 0) < 0) /* not interleave: a plain run */
		return _nd_page_alloc(npages, 1, pol, -1, NULL);
	void *p = _nd_spread_alloc(npages, pol, fixed ? first : _nd_spread_first(npages, pol));
	return p || errno != EFBIG ? p : too_big(npages, 1, g.order_max);
}

void *_nd_page_alloc_spread(size_t npages, const nd_policy_t *pol)
{
	return alloc_spread(npages, pol, false, 0);
}

uint64_t _nd_page_spread_first(size_t npages, const nd_policy_t *pol)
{
	return ensure_setup() && _nd_policy_node_for_granule(pol, 0) >= 0 ? _nd_spread_first(npages, pol)
									   : ND_SPREAD_BY_ADDRESS;
}

/* Mixed-slot run head p of npages pages? */
static bool spread_run(const void *p, size_t npages)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	uintptr_t off = (uintptr_t)p - g.base;
	return d && off < g.total && (int)(off >> g.slot_shift) == g.node_limit && d->state == ND_PG_RUN &&
	       d->npages == npages;
}

bool _nd_page_spread_matches(const void *p, size_t npages, const nd_policy_t *pol, uint64_t first)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	return d && npages && npages <= d->npages && spread_run(p, d->npages) && _nd_spread_matches(p, npages, pol, first);
}

int64_t _nd_page_spread_fit(const void *p, size_t npages, const nd_policy_t *pol, uint64_t first, bool cut)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	if (!d || !npages || npages > d->npages || !spread_run(p, d->npages))
		return -1;
	return _nd_spread_fit(p, d->npages, npages, pol, first, cut);
}

/* The caller's spread run (cached: no one else edits it) cut in two runs:
 * only the new head's descriptor is written (its pages keep their nodes,
 * placed, bound and committed). The kernel's interleave flag goes with it
 * (its free keeps the VMA's policy). */
void *_nd_page_spread_split(void *run, size_t npages)
{
	_nd_pagedesc_t *h = _nd_page_desc(run);
	if (!h || !npages || npages >= h->npages || !spread_run(run, h->npages))
		return NULL;
	_nd_arena_t *m = &g.arenas[g.node_limit];
	_nd_pagedesc_t *t = h + npages;
	_nd_lock(&m->lock);
	ND_ASSERT(t->state == ND_PG_TAIL && (t->flags & ND_PGF_PLACED), "a spread run's pages are placed tails");
	t->state = ND_PG_RUN;
	t->order = 0;
	t->flags = (uint8_t)((t->flags & ~(ND_PGF_FRESH | ND_PGF_KIL | ND_PGF_HUGE)) | (h->flags & (ND_PGF_KIL | ND_PGF_HUGE)));
	t->npages = h->npages - npages;
	t->use = ND_USE_NONE;
	t->user = 0;
	h->npages = npages;
	_nd_unlock(&m->lock);
	return (char *)run + (npages << ND_PAGE_SHIFT);
}

void _nd_page_spread_in_use(const void *p, size_t npages, int sign, const nd_policy_t *pol)
{
	ND_ASSERT(spread_run(p, npages), "a spread run's use is counted on a spread run");
	_nd_spread_in_use(p, npages, sign, pol);
}

void _nd_page_spread_uncount(const void *p, size_t npages, const nd_policy_t *pol, uint64_t first)
{
	if (spread_run(p, npages))
		_nd_spread_uncount(p, npages, pol, first);
}

void *_nd_page_alloc_spread_from(size_t npages, const nd_policy_t *pol, uint64_t first)
{
	return alloc_spread(npages, pol, true, first);
}

/* Spread runs run and next (adjacent, both the caller's, not in use, both
 * or neither interleaved by the kernel) become one. 0, or -1 with nothing
 * changed. */
int _nd_page_spread_join(void *run, void *next)
{
	_nd_pagedesc_t *h = _nd_page_desc(run), *t = _nd_page_desc(next);
	if (!h || !t || !spread_run(run, h->npages) || !spread_run(next, t->npages) ||
	    (char *)run + (h->npages << ND_PAGE_SHIFT) != (char *)next || ((h->flags ^ t->flags) & ND_PGF_KIL))
		return -1;
	join_heads(&g.arenas[g.node_limit], h, t);
	return 0;
}

/* ---- free and lookups -------------------------------------------------- */

/*
 * Gives pages [i, i + n) of a node slot back to its free lists, as freeing
 * them does: a big range (from a run of at least the purge threshold) is
 * purged first, unlocked, and goes back clean; a small one goes back dirty.
 * Then the dirty limit, capacity and statistics. The slot lock is held on
 * entry iff !big; it is released on return.
 */
static void give_back(_nd_arena_t *a, uint64_t i, uint64_t n, bool big)
{
	if (big) {
		_nd_purge_range(a, page_addr(a, i), (size_t)n << ND_PAGE_SHIFT, g.advice);
		if (n >= HUGE_PAGES && g.thp_runs)
			huge_run(a, i, n, 0);
		_nd_room_committed(a, -(int64_t)n);
		_nd_lock(&a->lock);
	}
	if (!big && i + n == a->bd.next_at) /* the last packed run: the next one starts where it did */
		_nd_buddy_packed(&a->bd, (uint32_t)i, 0);
	_nd_buddy_give(&a->bd, i, n, !big, true);
	_nd_room_give(a, n); /* first: the dirty limit follows the pages in use */
	_nd_thread_t *t = _nd_tls;
	bool noted = !_nd_thread_none(t);
	drop_note(t, n, true, a->node); /* first too: the limit keeps the burst with this run */
	_nd_purge_after_free(a, n);
	if (big) /* small ranges go back dirty: only a purge (trim) makes them clean */
		_nd_room_shrink(a);
	_nd_unlock(&a->lock);
	_nd_room_stats(_nd_stats_in_use, a->node, -(int64_t)n);
	if (!noted && n < g.purge_pages && (t = _nd_thread_make_free())) /* not under the slot lock (rank) */
		drop_note(t, n, true, a->node);
}

int _nd_page_free(void *p)
{
	_nd_purge_decay();
	uintptr_t off = (uintptr_t)p - g.base;
	if (off >= g.total)
		return nd_unlikely(_nd_outrun_any()) ? _nd_outrun_free(p) : -1;
	if (off & (ND_PAGE_SIZE - 1))
		return -1;
	_nd_arena_t *a = &g.arenas[off >> g.slot_shift];
	uint32_t i = (uint32_t)((off & g.slot_mask) >> ND_PAGE_SHIFT);
	_nd_pagedesc_t *h = &a->bd.desc[i];
	_nd_lock(&a->lock);
	if (h->state != ND_PG_RUN) {
		_nd_unlock(&a->lock);
		return -1;
	}
	uint64_t n = h->npages;
	h->use = ND_USE_NONE;
	h->user = 0;
	if (a->mixed || n >= g.purge_pages) {
		/* Claim the run (a second free now fails), purge it unlocked. */
		h->state = ND_PG_TAIL;
		h->npages = 0;
		_nd_unlock(&a->lock);
		if (a->mixed) {
			bool kil = h->flags & ND_PGF_KIL;
			h->flags &= (uint8_t)~(ND_PGF_KIL | ND_PGF_HUGE);
			_nd_spread_free(a, i, n, kil);
			return 0;
		}
	}
	give_back(a, i, n, n >= g.purge_pages);
	return 0;
}

/* ---- resizing a run in place (realloc) --------------------------------- */

/* Slot of a node-slot run head at p (NULL for the mixed slot or outside),
 * its page index in *idx. */
static _nd_arena_t *node_run_slot(void *p, uint32_t *idx)
{
	uintptr_t off = (uintptr_t)p - g.base;
	if (!__atomic_load_n(&g.ready, __ATOMIC_ACQUIRE) || off >= g.total || (off & (ND_PAGE_SIZE - 1)))
		return NULL;
	int s = (int)(off >> g.slot_shift);
	if (s >= g.node_limit || !g.arenas[s].usable)
		return NULL; /* spread runs keep their layout */
	*idx = (uint32_t)((off & g.slot_mask) >> ND_PAGE_SHIFT);
	return &g.arenas[s];
}

/*
 * Grow a run into the free blocks right after it. The pages [end, i+new)
 * must all lie in free blocks (runs and free blocks tile the slot, so the
 * page at end is a head: walk head to head). Each block they touch is
 * taken whole and its part past the new end given back as aligned blocks
 * (give_tail, as for a non-power-of-two run). The run then keeps the
 * invariants of a fresh run of its new size: small runs carry DIRTY on
 * every page, big ones on none; all its pages count as committed.
 */
int _nd_page_grow(void *run, size_t new_npages)
{
	uint32_t i;
	_nd_arena_t *a = node_run_slot(run, &i);
	if (!a)
		return -1;
	uint64_t end_slot = 1ull << g.order_max;
	if (new_npages > end_slot - i)
		return -1;
	/* Unlocked peek: only the owner changes npages of its run. */
	uint64_t n = a->bd.desc[i].npages;
	if (a->bd.desc[i].state != ND_PG_RUN || new_npages <= n)
		return -1;
	uint64_t add = new_npages - n, e = i + new_npages;
	bool maybe_fresh = __atomic_load_n(&a->bd.dirty_free, __ATOMIC_RELAXED) < add;
	if (!_nd_room_take(a, add, maybe_fresh ? add : 0))
		return -1;
	_nd_lock(&a->lock);
	for (uint64_t j = i + n; j < e;) {
		if (j == a->mapped && _nd_room_grow_to(a, e)) { /* the hole (its head implied) */
			j = i + n; /* the new pages may have merged below the hole: walk again */
			continue;
		}
		if (a->bd.desc[j].state != ND_PG_FREE) {
			_nd_unlock(&a->lock);
			_nd_room_give(a, add);
			return -1;
		}
		j += 1ull << a->bd.desc[j].order;
	}
	uint64_t rd = 0; /* committed (dirty) pages taken */
	for (uint64_t j = i + n; j < e;) {
		unsigned o = a->bd.desc[j].order;
		uint64_t bl = 1ull << o, d = a->bd.desc[j].npages;
		_nd_buddy_del(&a->bd, (uint32_t)j);
		if (j + bl > e)
			d -= _nd_buddy_give_tail(&a->bd, j, o, d, e - j);
		rd += d;
		j += bl;
	}
	a->bd.desc[i].npages = new_npages;
	a->bd.desc[i].flags &= (uint8_t)~ND_PGF_FRESH; /* its old pages were handed out */
	_nd_unlock(&a->lock);
	if (g.lazy && rd < add && _nd_room_map_run(a, i + n, add, rd) < 0) {
		_nd_lock(&a->lock);
		a->bd.desc[i].npages = n;
		_nd_unlock(&a->lock);
		unmap_undo(a, (uint32_t)(i + n), add, rd);
		return -1;
	}
	/* The new pages are ours (TAILs of our run): flags without the lock. */
	if (new_npages < g.purge_pages) {
		for (uint64_t j = i + n; j < e; j++)
			a->bd.desc[j].flags |= ND_PGF_DIRTY;
	} else if (n < g.purge_pages) {
		_nd_buddy_clear_dirty(&a->bd, i, new_npages); /* small run became big */
	} else if (rd) {
		_nd_buddy_clear_dirty(&a->bd, i + n, add);
	}
	_nd_room_committed(a, (int64_t)(add - rd));
	_nd_room_stats(_nd_stats_in_use, a->node, (int64_t)add);
	if (new_npages >= HUGE_PAGES && g.thp_runs)
		huge_run(a, i, new_npages, 2);
	return 0;
}

/* The free block holding page j of a (lock held): its head, or NIL when
 * j is in a run or a hole. Free blocks are aligned to their size, so the
 * head is j rounded down to some order. */
static uint32_t free_block_of(const _nd_arena_t *a, uint64_t j)
{
	for (unsigned o = 0; o <= a->bd.order_max; o++) {
		uint64_t h = j & ~((1ull << o) - 1);
		const _nd_pagedesc_t *d = &a->bd.desc[h];
		if (d->state == ND_PG_FREE)
			return d->order >= o ? (uint32_t)h : ND_BUDDY_NIL;
		if (d->state != ND_PG_TAIL)
			return ND_BUDDY_NIL; /* a run or hole head at or before j */
	}
	return ND_BUDDY_NIL;
}

/*
 * Grow a big run downward, into the free blocks right before it: the run
 * then starts new_npages - npages pages lower (its old pages, and their
 * contents, are its end). Each block touched is taken whole and its part
 * before the new head given back as aligned blocks. The large layer grows
 * a cached run this way when the pages after it are another block's.
 * Returns the new head, or NULL with nothing changed.
 */
void *_nd_page_grow_down(void *run, size_t new_npages)
{
	uint32_t i;
	_nd_arena_t *a = node_run_slot(run, &i);
	if (!a)
		return NULL;
	uint64_t n = a->bd.desc[i].npages; /* unlocked: only the owner changes it */
	if (a->bd.desc[i].state != ND_PG_RUN || n < g.purge_pages || new_npages <= n || new_npages - n > i)
		return NULL;
	if (g.lazy)
		return NULL; /* its new pages would need mapping (room.c); the caller moves the block */
	uint64_t add = new_npages - n, s = i - add;
	bool maybe_fresh = __atomic_load_n(&a->bd.dirty_free, __ATOMIC_RELAXED) < add;
	if (!_nd_room_take(a, add, maybe_fresh ? add : 0))
		return NULL;
	_nd_lock(&a->lock);
	uint64_t j = i;
	while (j > s) {
		uint32_t h = free_block_of(a, j - 1);
		if (h == ND_BUDDY_NIL) {
			_nd_unlock(&a->lock);
			_nd_room_give(a, add);
			return NULL;
		}
		j = h;
	}
	uint64_t rd = 0; /* committed (dirty) pages taken */
	for (j = i; j > s;) {
		uint32_t h = free_block_of(a, j - 1);
		unsigned o = a->bd.desc[h].order;
		uint64_t d = a->bd.desc[h].npages;
		_nd_buddy_del(&a->bd, h);
		d = _nd_buddy_give_head(&a->bd, h, h < s ? s : h, d); /* [h, s) goes back */
		ND_ASSERT(h + (1ull << o) == j, "free blocks and runs tile the slot");
		rd += d;
		j = h;
	}
	_nd_pagedesc_t *oh = &a->bd.desc[i];
	_nd_buddy_mark_run(&a->bd, (uint32_t)s, new_npages, oh->node);
	oh->state = ND_PG_TAIL;
	oh->npages = 0;
	oh->use = ND_USE_NONE;
	oh->user = 0;
	_nd_unlock(&a->lock);
	if (rd)
		_nd_buddy_clear_dirty(&a->bd, s, add); /* a big run's pages carry no DIRTY */
	_nd_room_committed(a, (int64_t)(add - rd));
	_nd_room_stats(_nd_stats_in_use, a->node, (int64_t)add);
	if (new_npages >= HUGE_PAGES && g.thp_runs)
		huge_run(a, s, new_npages, 2);
	return page_addr(a, s);
}

/*
 * Give the tail of a run back, as a free of those pages would: a small
 * run's tail goes back dirty (committed), a big run's is purged first.
 * What stays keeps the invariants of a fresh run of its size.
 */
int _nd_page_shrink(void *run, size_t new_npages)
{
	uint32_t i;
	_nd_arena_t *a = node_run_slot(run, &i);
	if (!a && (uintptr_t)run - g.base >= g.total)
		return _nd_outrun_shrink(run, new_npages); /* its tail unmapped */
	if (!a || new_npages == 0)
		return -1;
	uint64_t n = a->bd.desc[i].npages;
	if (a->bd.desc[i].state != ND_PG_RUN || new_npages >= n)
		return -1;
	uint64_t cut = n - new_npages, s = i + new_npages;
	/* The tail is ours until given back: no lock for its descriptors. */
	bool big = n >= g.purge_pages;
	if (big && new_npages < g.purge_pages) /* big run became small: its pages count as committed */
		for (uint64_t j = i; j < s; j++)
			a->bd.desc[j].flags |= ND_PGF_DIRTY;
	_nd_lock(&a->lock);
	a->bd.desc[i].npages = new_npages;
	if (big)
		_nd_unlock(&a->lock);
	give_back(a, s, cut, big);
	return 0;
}

/*
 * Pages [first, first + n) of a small node-slot run go back (dirty, as a
 * free of them would); the pages before stay the run, those after become
 * a run of their own (head at first + n, its use and user kept).
 */
int _nd_page_free_inner(void *run, size_t first, size_t n)
{
	uint32_t i;
	_nd_arena_t *a = node_run_slot(run, &i);
	if (!a || n == 0)
		return -1;
	_nd_pagedesc_t *h = &a->bd.desc[i];
	_nd_lock(&a->lock);
	uint64_t N = h->npages;
	if (h->state != ND_PG_RUN || N >= g.purge_pages || first + n > N) {
		_nd_unlock(&a->lock);
		return -1;
	}
	if (first + n < N) {
		_nd_pagedesc_t *t = &a->bd.desc[i + first + n];
		ND_ASSERT(t->state == ND_PG_TAIL, "inside a run");
		t->state = ND_PG_RUN;
		t->order = 0;
		t->flags &= (uint8_t)~ND_PGF_FRESH;
		t->npages = N - first - n;
		t->node = h->node;
	}
	if (first)
		h->npages = first;
	else
		h->use = ND_USE_NONE, h->user = 0;
	give_back(a, i + first, n, false);
	return 0;
}

/*
 * Split a big node-slot run in two runs without touching its pages: the
 * pages stay committed (no purge, no fault on reuse) and both parts keep
 * the invariants of big runs (no DIRTY flag), so each must be at least
 * the purge threshold. Used, committed and in-use counts do not change:
 * the caller accounts for the part it does not use. The run is the
 * caller's (a run in limbo): only the new head's descriptor is written.
 */
void *_nd_page_split(void *run, size_t npages)
{
	uint32_t i;
	_nd_arena_t *a = node_run_slot(run, &i);
	if (!a)
		return NULL;
	_nd_pagedesc_t *h = &a->bd.desc[i];
	uint64_t n = h->npages;
	if (h->state != ND_PG_RUN || npages < g.purge_pages || n < npages + g.purge_pages)
		return NULL;
	_nd_lock(&a->lock);
	_nd_pagedesc_t *t = &a->bd.desc[i + npages];
	ND_ASSERT(t->state == ND_PG_TAIL && !(t->flags & ND_PGF_DIRTY), "a big run's pages are clean tails");
	h->npages = npages;
	t->state = ND_PG_RUN;
	t->order = 0;
	t->flags &= (uint8_t)~ND_PGF_FRESH;
	t->npages = n - npages;
	t->use = ND_USE_NONE;
	t->user = 0;
	t->node = a->node;
	_nd_unlock(&a->lock);
	return page_addr(a, i + npages);
}

/* The reverse: run next (right after run, both big, both the caller's)
 * becomes part of run, still committed. 0, or -1 with nothing changed. */
int _nd_page_join(void *run, void *next)
{
	uint32_t i = 0, j = 0; /* set by node_run_slot when it finds a slot (gcc -O2 cannot see it) */
	_nd_arena_t *a = node_run_slot(run, &i), *b = node_run_slot(next, &j);
	if (!a || a != b)
		return -1;
	_nd_pagedesc_t *h = &a->bd.desc[i], *t = &a->bd.desc[j];
	if (h->state != ND_PG_RUN || t->state != ND_PG_RUN || i + h->npages != j || h->npages < g.purge_pages ||
	    t->npages < g.purge_pages)
		return -1;
	join_heads(a, h, t);
	return 0;
}

_nd_pagedesc_t *_nd_page_desc(const void *p)
{
	uintptr_t off = (uintptr_t)p - g.base;
	if (off >= g.total)
		return nd_unlikely(_nd_outrun_any()) ? _nd_outrun_desc(p) : NULL;
	return &g.desc[off >> ND_PAGE_SHIFT];
}

int _nd_page_node_of(const void *p)
{
	uintptr_t off = (uintptr_t)p - g.base;
	if (off >= g.total)
		return nd_unlikely(_nd_outrun_any()) ? _nd_outrun_node_of(p) : -1;
	int s = (int)(off >> g.slot_shift);
	if (s < g.node_limit)
		return g.arenas[s].usable ? s : -1;
	const _nd_pagedesc_t *d = &g.desc[off >> ND_PAGE_SHIFT];
	return d->flags & ND_PGF_PLACED ? d->node : -1;
}

/*
 * Zero the first bytes of a run handed out by this file without touching
 * pages that already read as zero (touching would commit them for nothing:
 * calloc of a large block, zero-filled tables). Mixed-slot (spread) runs
 * are always fresh: their pages are dropped whenever a run is freed. In a
 * node slot, a page without ND_PGF_DIRTY is fresh or was purged, which
 * reads as zero with MADV_DONTNEED but not with MADV_FREE (the kernel may
 * keep the old data until it reclaims); a run whose head has ND_PGF_FRESH
 * was taken all clean (a small run's pages all carry DIRTY once taken).
 * As the flags say nothing of what the caller wrote since: call it before
 * the run's memory is handed out.
 */
void _nd_page_zero(void *run, size_t bytes)
{
	char *p = run;
	uintptr_t off = (uintptr_t)p - g.base;
	if (off >= g.total) {
		const _nd_pagedesc_t *o = _nd_outrun_any() ? _nd_outrun_desc(p) : NULL;
		if (!(o && o->state == ND_PG_RUN && (o->flags & ND_PGF_FRESH))) /* a fresh mapping reads as zero */
			memset(p, 0, bytes);
		return;
	}
	if (g.advice != MADV_DONTNEED) {
		memset(p, 0, bytes);
		return;
	}
	if ((int)(off >> g.slot_shift) >= g.node_limit)
		return; /* spread run */
	const _nd_pagedesc_t *d = &g.desc[off >> ND_PAGE_SHIFT];
	if (d->state == ND_PG_RUN && (d->flags & ND_PGF_FRESH))
		return; /* taken all clean: a small run's DIRTY flags do not say so */
	/* One memset per stretch of dirty pages, not one per page: a reused
	 * small run is dirty throughout, and the C library's memset of the
	 * run is faster than 4 KiB pieces (128 MiB of 64-128 KiB runs: 16.1
	 * -> 13.7 ms a round of bench wl_burst; docs/benchmarks.md, "The burst
	 * row's time"). */
	for (size_t k = 0; k < bytes; d++) {
		if (!(d->flags & ND_PGF_DIRTY)) {
			k += ND_PAGE_SIZE;
			continue;
		}
		size_t s = k;
		for (k += ND_PAGE_SIZE; k < bytes && (d[1].flags & ND_PGF_DIRTY); k += ND_PAGE_SIZE)
			d++;
		memset(p + s, 0, (k < bytes ? k : bytes) - s);
	}
}

/* ---- maintenance and introspection ------------------------------------- */

static size_t trim(int node, uint64_t stamp)
{
	if (!__atomic_load_n(&g.ready, __ATOMIC_ACQUIRE))
		return 0;
	uint64_t pages = 0;
	for (int s = 0; s < g.node_limit; s++) {
		_nd_arena_t *a = &g.arenas[s];
		if (!a->usable || (node >= 0 && node != s))
			continue;
		_nd_lock(&a->lock);
		pages += _nd_purge_older(a, stamp);
		_nd_room_shrink(a);
		_nd_unlock(&a->lock);
	}
	return (size_t)pages << ND_PAGE_SHIFT;
}

size_t _nd_page_trim(int node)
{
	return trim(node, UINT64_MAX);
}

size_t _nd_page_trim_older(int node, uint64_t stamp)
{
	return node >= 0 ? trim(node, stamp) : 0;
}

uint64_t _nd_page_exit_stamp(int node)
{
	if (!__atomic_load_n(&g.ready, __ATOMIC_ACQUIRE) || node < 0 || node >= g.node_limit ||
	    !g.arenas[node].usable)
		return 0;
	_nd_arena_t *a = &g.arenas[node];
	_nd_lock(&a->lock); /* one step: overlapping exits each get a stamp two exits back */
	uint64_t back = a->exit_stamp[1];
	a->exit_stamp[1] = a->exit_stamp[0];
	a->exit_stamp[0] = a->bd.seq + 1;
	_nd_unlock(&a->lock);
	return back;
}

static _nd_arena_t *arena_by_node(int node)
{
	if (!__atomic_load_n(&g.ready, __ATOMIC_ACQUIRE) || node < -1 || node >= g.node_limit)
		return NULL;
	return &g.arenas[node < 0 ? g.node_limit : node];
}

int _nd_page_info(int node, _nd_page_info_t *out)
{
	if (!ensure_setup())
		return -1;
	_nd_arena_t *a = arena_by_node(node);
	if (!a)
		return -1;
	_nd_lock(&a->lock);
	out->usable = a->usable;
	out->slot_bytes = (size_t)1 << g.slot_shift;
	out->slot_pages = 1ull << g.order_max;
	out->mapped_pages = g.lazy ? a->mapped : out->slot_pages;
	out->free_pages = a->usable ? a->bd.free_pages : 0;
	out->dirty_pages = __atomic_load_n(&a->bd.dirty_free, __ATOMIC_RELAXED);
	out->free_blocks = a->bd.nblocks;
	out->largest_order = _nd_buddy_largest(&a->bd);
	if (a->usable && !g.lazy && a->mapped < out->slot_pages) {
		/* an eager slot's hole is free: as the aligned blocks it would give */
		out->free_pages += out->slot_pages - a->mapped;
		for (uint64_t s = a->mapped; s < out->slot_pages;) {
			unsigned o = s ? (unsigned)__builtin_ctzll(s) : g.order_max;
			out->free_blocks++;
			if ((int)o > out->largest_order)
				out->largest_order = (int)o;
			s += 1ull << o;
		}
	}
	_nd_unlock(&a->lock);
	out->used_pages = __atomic_load_n(&a->used, __ATOMIC_RELAXED);
	out->capacity_pages = a->cap;
	out->committed_pages = __atomic_load_n(&a->committed, __ATOMIC_RELAXED);
	out->purge_pages = g.purge_pages;
	out->purge_order = g.purge_order;
	int64_t bl = __atomic_load_n(&a->burst_live, __ATOMIC_RELAXED);
	out->burst_pages = bl > 0 && __atomic_load_n(&a->burst_ns, __ATOMIC_RELAXED) ? (uint64_t)bl : 0;
	out->base = a->base;
	out->out_runs = out->out_pages = 0;
	if (nd_unlikely(_nd_outrun_any()) && !a->mixed) /* outrun.c's code runs only where such runs exist */
		_nd_outrun_info(a->node, &out->out_runs, &out->out_pages);
	return 0;
}

int _nd_page_check(int node, char *err, size_t errlen)
{
	_nd_arena_t *a = arena_by_node(node);
	if (!a) {
		_nd_msg_format(err, errlen, "no arena for node %d", node);
		return -1;
	}
	if (!a->usable)
		return 0;
	_nd_lock(&a->lock);
	/* up to the hole, whose head is implied (room.c) */
	int rc = _nd_buddy_check_to(&a->bd, a->mapped, err, errlen);
	_nd_unlock(&a->lock);
	return rc;
}
