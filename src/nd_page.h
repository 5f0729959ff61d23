// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 7, the
 * page level. */
#ifndef ND_PAGE_H
#define ND_PAGE_H

/* ======================================================================
 * src/page.c: node arenas. One virtual slot per node (bound to the node
 * with mbind before first touch) plus one "mixed" slot for allocations that
 * span nodes. A buddy allocator of 4 KiB pages in each slot; a page
 * descriptor per page (struct page) gives O(1) address -> node/run/owner.
 * ====================================================================== */

enum {
	ND_PG_TAIL = 0,   /* inside a free block or a run: not a head */
	ND_PG_FREE = 1,   /* head of a free buddy block */
	ND_PG_RUN = 2,    /* head of an allocated run */
	ND_PG_HOLE = 3,   /* first page of a slot's part not given to the buddy allocator (yet): npages */
};
enum {
	ND_USE_NONE = 0,
	ND_USE_SLAB,      /* user = slab header address, set on every page */
	ND_USE_LARGE,     /* head only: user = requested size */
	ND_USE_META,      /* internal metadata */
	ND_USE_PERCPU,
	ND_USE_TABLE,
	ND_USE_HEAP,      /* heap_api.c (nd_heap_t): every page, user = chunk header */
};

typedef struct _nd_pagedesc {
	uint8_t state;     /* ND_PG_*: owned by page.c */
	uint8_t order;     /* buddy order of a free block head */
	uint8_t use;       /* ND_USE_*: owned by the layer that allocated */
	uint8_t flags;
	int32_t node;      /* serving node (meaningful in the mixed slot) */
	uint64_t npages;   /* run length, on a run head */
	uintptr_t user;    /* owned by the layer that allocated */
	uint32_t next, prev; /* buddy free list links (page.c) */
} _nd_pagedesc_t;
/* Descriptor ownership (docs/arenas.md): state, order, flags, next/prev
 * belong to page.c; on a free head npages counts its committed pages.
 * node is set on every run head, and on every page of a mixed-slot run.
 * use/user belong to the allocating layer: page.c clears them on the head
 * when it frees a run; the layer clears those it set on other pages. */
#define ND_PGF_DIRTY 0x01  /* page.c: page counted as committed */
#define ND_PGF_PLACED 0x02 /* page.c: mixed-slot page, node is valid */
#define ND_PGF_KIL 0x04    /* page.c: mixed-slot run head, interleaved by the kernel */
#define ND_PGF_SPARE 0x08  /* buddy.c: free head on a spare list (tail of a big run) */
/* page.c: run head whose pages were all clean (read as zero) when the run
 * was taken; _nd_page_zero skips such a run (small runs carry DIRTY on
 * every page, fresh or not). Set by node_alloc only: every other maker of
 * a run head clears it (_nd_buddy_mark_run, split, free_inner, grow). */
#define ND_PGF_FRESH 0x10
/* outrun.c: head of a run outside the slots (its descriptor is the
 * table's, not the slot array's: no neighbour, no tail descriptors) */
#define ND_PGF_OUT 0x20
/* page.c/spread.c: mixed-slot run head advised MADV_HUGEPAGE (huge_spread) */
#define ND_PGF_HUGE 0x40

/* ---- buddy.c: the buddy allocator of one slot over its descriptors.
 * Pure (no system call, no lock, no global): the caller holds the slot's
 * lock. Page indexes are relative to the slot. ---- */
#define ND_BUDDY_NIL UINT32_MAX
#define ND_BUDDY_MAX_ORDER 28  /* 1 TiB slot of 4 KiB pages: indexes fit uint32 */
#define ND_BUDDY_SCAN_ORDER 17 /* _nd_buddy_check counts dirty flags below this order */
typedef struct _nd_buddy {
	_nd_pagedesc_t *desc;  /* the slot's descriptors, 2^order_max of them */
	uint64_t free_pages;   /* pages in free blocks */
	uint64_t dirty_free;   /* committed pages in free blocks (written under the slot lock, read lock-free: atomic) */
	uint64_t nblocks;      /* free blocks */
	unsigned order_max;    /* the slot holds 2^order_max pages */
	unsigned purge_order;  /* free blocks above this order are clean, those of it serve big runs clean (invariant I) */
	uint32_t head[ND_BUDDY_MAX_ORDER + 1];  /* clean free blocks by order (ND_BUDDY_NIL: empty) */
	uint32_t dhead[ND_BUDDY_MAX_ORDER + 1]; /* dirty free blocks by order (none above purge_order), newest first */
	uint32_t dtail[ND_BUDDY_MAX_ORDER + 1]; /* their last (oldest) blocks: purges start there */
	uint64_t seq;          /* dirty blocks pushed so far: a dirty free head's user is its number (its age) */
	uint32_t shead[ND_BUDDY_MAX_ORDER + 1]; /* spare blocks by order: clean tails of big runs, taken last */
	uint32_t next_at;      /* where the last packed run ended (_nd_buddy_take_next) */
	/* _nd_buddy_take_low's walk starts here: below it its last walk found
	 * no stretch, and no free block was pushed since (push lowers it) */
	uint32_t low_at;
	/* gap_of's hint: the smallest run length whose search found no gap
	 * since the last dirty block was pushed (push resets it), 0 if none.
	 * 0, not UINT64_MAX: _nd_buddy_init's stores of it and its neighbours
	 * then take no 16-byte constant from the cold read-only data, which
	 * every process would fault in (test_init_footprint) */
	uint64_t gap_miss;
	uint64_t span_steps;   /* descriptors the span walks visited (their cost, for the tests) */
} _nd_buddy_t;
/* An empty slot (no free block: the caller gives the usable range). */
void _nd_buddy_init(_nd_buddy_t *b, _nd_pagedesc_t *desc, unsigned order_max, unsigned purge_order);
/* Link block i of order o (dirty: 0 or 2^o committed pages) / unlink it
 * (its head becomes a TAIL). A dirty block gets the next sequence number
 * in its head's user (use NONE: no layer reads it). */
void _nd_buddy_push(_nd_buddy_t *b, uint32_t i, unsigned o, uint64_t dirty);
void _nd_buddy_del(_nd_buddy_t *b, uint32_t i);
/* Free block i (dirty, its pages purged by the caller) becomes clean: its
 * dirty flags cleared, moved to the clean list. Returns its pages. */
uint64_t _nd_buddy_mark_clean(_nd_buddy_t *b, uint32_t i);
/* Takes a free block of order >= k split down to k: its index (NIL if
 * none) and its dirty page count in *dirty. A dirty block of the smallest
 * order >= k comes first (no page fault, no purge of it later), one of
 * purge_order only for a small run (below the purge threshold: the
 * caller flags all its pages DIRTY); else the clean block of the smallest
 * order >= k; a spare block last. */
uint32_t _nd_buddy_take(_nd_buddy_t *b, unsigned k, bool small, uint64_t *dirty);
/* The same with the oldest dirty block of the largest order < top (packed
 * runs: where the runs freed first were, so that the next ones go over
 * them in their order). */
uint32_t _nd_buddy_take_oldest(_nd_buddy_t *b, unsigned k, bool small, uint64_t *dirty);
/* A run of exactly n pages (small: below the purge threshold; k its
 * order) at next_at, the end of the last such run, across buddies: when
 * free blocks, none spare, cover it and some of its pages are dirty or no
 * dirty block of order k or above (what _nd_buddy_take would cut it from)
 * is free; with none such, where those pages are all clean or not free,
 * in a gap instead when one is found (a stretch of free blocks of lower
 * orders around a dirty one, at least n pages: buddy.c gap_of). The
 * blocks it touches are split around it. Its index (NIL if not) and its
 * dirty pages in *dirty; the caller sets next_at (_nd_buddy_packed). */
uint32_t _nd_buddy_take_next(_nd_buddy_t *b, uint64_t n, unsigned k, uint64_t *dirty);
/* The same at page at (a heap's next slab run, page.c: _nd_page_alloc_near),
 * without the gap: NIL if free blocks do not cover it, or if none of its
 * pages is dirty while a dirty block of order k or above is free. */
uint32_t _nd_buddy_take_at(_nd_buddy_t *b, uint64_t at, uint64_t n, unsigned k, uint64_t *dirty);
/* n free pages in a row across free blocks of any order, from an
 * align-aligned start below end (none of order ceil_log2(n) free): the
 * start, NIL if none; *dirty as above. */
uint32_t _nd_buddy_take_span(_nd_buddy_t *b, uint64_t n, uint64_t align, uint64_t end, uint64_t *dirty);
/* The same, unaligned, the lowest such stretch, the walk from low_at (not
 * from 0: a walk per metadata chunk over every run below made a heap of
 * 1.2 GB of 3000 B objects spend 22% of its instructions there, growing
 * as the square of the heap; audit20). */
uint32_t _nd_buddy_take_low(_nd_buddy_t *b, uint64_t n, uint64_t end, uint64_t *dirty);
/* The next packed run starts at i + n: after a run of n pages cut at i, or
 * at i when the last packed run, there, is freed (n = 0). */
static inline void _nd_buddy_packed(_nd_buddy_t *b, uint32_t i, uint64_t n)
{
	b->next_at = (uint32_t)(i + n);
}
/* Tail of a taken block (index i, 2^k pages, d dirty) after a run of n
 * pages back to the free lists, unmerged (spare if k >= purge_order).
 * Returns the tail's dirty pages. */
uint64_t _nd_buddy_give_tail(_nd_buddy_t *b, uint64_t i, unsigned k, uint64_t d, uint64_t n);
/* Head [h, from) of a taken free block (d dirty pages in all) back to
 * the free lists as aligned blocks, unmerged (the rest is a run's).
 * Returns the dirty pages left in the rest. */
uint64_t _nd_buddy_give_head(_nd_buddy_t *b, uint64_t h, uint64_t from, uint64_t d);
/* [s, s+len) back as aligned blocks, all clean or all dirty; merge: with
 * free buddies (a freed run), else not (their buddies are in use). */
void _nd_buddy_give(_nd_buddy_t *b, uint64_t s, uint64_t len, bool dirty, bool merge);
/* Head i of a run of n pages served by node. */
void _nd_buddy_mark_run(_nd_buddy_t *b, uint32_t i, uint64_t n, int node);
/* After a purge pass: merge clean free buddies (one pass per order), and
 * a clean one with a dirty one as freeing does (partial passes). */
void _nd_buddy_merge_clean(_nd_buddy_t *b);
uint64_t _nd_buddy_count_dirty(const _nd_buddy_t *b, uint64_t i, uint64_t n);
void _nd_buddy_clear_dirty(_nd_buddy_t *b, uint64_t i, uint64_t n);
/* Largest free order, -1 if none. */
int _nd_buddy_largest(const _nd_buddy_t *b);
/* Walk the slot and check every descriptor invariant; 0 or -1 with err.
 * _to: pages [0, limit) only, the rest a hole whose head is implied (the
 * page level's slots: room.c). */
int _nd_buddy_check(const _nd_buddy_t *b, char *err, size_t errlen);
int _nd_buddy_check_to(const _nd_buddy_t *b, uint64_t limit, char *err, size_t errlen);

/* ---- the page level's shared state (page.c owns it; room.c, purge.c
 * and spread.c work on it). One per slot: ---- */
typedef struct _nd_arena {
	_nd_lock_t lock;  /* protects bd (free lists, free-block descriptors) and mapped */
	int node;         /* node id, -1 for the mixed slot: fixed at setup */
	bool usable;      /* fixed at setup */
	bool mixed;       /* fixed at setup */
	char *base;       /* fixed at setup */
	_nd_buddy_t bd;
	uint64_t mapped;  /* pages of the slot given to the buddy allocator, the rest a hole (room.c; lazy reservation: those mapped); lock.
			   * The hole's head is implied: its descriptors are TAILs no walk reaches (page.c, _nd_buddy_check_to) */
	/* Atomics (no lock). For the mixed slot only cap is meaningful. */
	uint64_t used;       /* pages in runs served by this node (node and mixed slots) */
	uint64_t cap;        /* hard capacity in pages (emulated memory size) */
	uint64_t committed;  /* pages this node has counted in _nd_stats_committed */
	uint64_t floor;      /* no zoneinfo: bytes kept free (max(MemTotal/64, 32 MiB)) */
	/* Headroom (room.c; atomics written under its lock): what the node
	 * could still give at the last /proc/zoneinfo read, and `committed`
	 * at the last two reads. */
	uint64_t wm_avail;   /* pages */
	uint64_t wm_c_last, wm_c_prev;
	uint64_t wm_said;    /* stamp of the read its last refusal was told under (verbose) */
	/* Decay (purge.c; atomic): ns when the slot's oldest dirty free pages
	 * were freed, 0 when it holds none; dirty_taken (slot lock): dirty
	 * pages runs took since (page.c, node_alloc). */
	uint64_t dirty_since;
	uint64_t dirty_taken;
	/* The dirty limit's high-water mark of `used` (written under the slot
	 * lock, read without it by _nd_purge_over): this decay
	 * period's and the last one's (purge.c). */
	uint64_t peak_cur, peak_prev;
	/* Refaults (purge.c): lim_out (slot lock) the pages the dirty limit
	 * purged, or _nd_purge_room for kept slabs, that no run has taken
	 * again since; refault_cur/_prev
	 * (written under the slot lock, read without it) the clean pages
	 * runs took while some were out, this decay period and the last:
	 * the cap of the kept slabs' bound grows by them (_nd_purge_taken). */
	uint64_t lim_out;
	uint64_t refault_cur, refault_prev;
	/* Atomic: the decays that found the slot's dirty pages unused a whole
	 * period, or without a decay the dirty limit's passes with no refault
	 * since the one before (a phase's end: the refaults then go); heaps
	 * re-check their kept slabs' bound when it moves (_nd_purge_kept_gen). */
	uint32_t kept_gen;
	/* The dirty limit's floor (same locking): the pages in use when a
	 * thread exited plus its burst, this decay period and the last
	 * (_nd_purge_exit). */
	uint64_t exit_cur, exit_prev;
	/* The next dirty block's number at the last thread exit and the one
	 * before (_nd_page_exit_stamp; under the slot lock). */
	uint64_t exit_stamp[2];
	/* Atomic (page.c, drop_note): the bursts of the live threads but the
	 * main one on this node (nd_thread.h page_drop), which the dirty
	 * limit keeps until their exits hand them on (_nd_purge_exit), for
	 * one decay period after the last change of any of them (burst_ns),
	 * or until the decay. Each thread adds and takes off only its own. */
	int64_t burst_live;
	/* Atomic: the burst clock (purge.c, _nd_purge_decay): ns | 1 of the
	 * last change of burst_live by a thread's run free or take (1 with
	 * the decay off); 0 once a decay period passed without one (and
	 * before any): burst_live then raises no limit until the next. */
	uint64_t burst_ns;
} __attribute__((aligned(ND_CACHE_LINE))) _nd_arena_t;

typedef struct _nd_page_global {
	_nd_lock_t lock;      /* setup; taken first at fork */
	volatile int ready;
	int failed;           /* setup failed (reported once, never retried) */
	uintptr_t base;       /* reservation start (0 before setup) */
	uintptr_t total;      /* bytes of all slots (0 before setup) */
	unsigned slot_shift;
	uintptr_t slot_mask;
	unsigned order_max;   /* slot_shift - ND_PAGE_SHIFT */
	unsigned run_order_max; /* no run above 2^this pages (NODALLOC_ARENA_RESERVE; else 2^51: none); above order_max: outside the slot (outrun.c) */
	int node_limit;       /* node slots; the mixed slot has index node_limit */
	int nslots;
	_nd_pagedesc_t *desc;
	size_t desc_bytes;
	_nd_arena_t *arenas;
	size_t arenas_bytes;
	bool lazy;            /* slots mapped on demand (address space limit) */
	bool bind;            /* real topology: mbind slots and granules */
	bool strict;          /* MPOL_BIND (else MPOL_PREFERRED) */
	bool check_free;      /* real topology: headroom check before committing */
	bool huge_spread;     /* MADV_HUGEPAGE on spreads with granules >= 2 MiB */
	int thp;              /* ND_THP_*: NODALLOC_THP */
	bool thp_runs;        /* MADV_HUGEPAGE on the 2 MiB pages of big node runs */
	uint64_t thp_slow_ns; /* a big run's probed huge page slower than this (CPU): back off (0: no probe) */
	int advice;           /* MADV_DONTNEED or MADV_FREE */
	uint64_t purge_pages; /* runs of at least this many pages are purged on free */
	unsigned purge_order; /* free blocks above this order are clean (invariant I) */
	uint64_t dirty_limit; /* dirty free pages a slot keeps before a purge pass */
	uint64_t decay_ns;    /* dirty free pages older than this are purged (0: off) */
} _nd_page_global_t;
extern _nd_page_global_t _nd_page_g __attribute__((visibility("hidden")));

/* Node's kept_gen (purge.c; 0 for a node without a slot): a heap keeping
 * empty slabs re-checks them against _nd_purge_over when it changes.
 * Inline: heap.c's kept_expire reads it with no call into purge.c. */
static inline uint32_t _nd_purge_kept_gen(int node)
{
	if (node < 0 || node >= _nd_page_g.node_limit)
		return 0;
	return __atomic_load_n(&_nd_page_g.arenas[node].kept_gen, __ATOMIC_RELAXED);
}
#define ND_THP_NEVER 0
#define ND_THP_MADVISE 1  /* MADV_HUGEPAGE when the system's mode is madvise or always */
#define ND_THP_ALWAYS 2   /* MADV_HUGEPAGE always */

/* Smallest k with 2^k >= x (0 for x <= 1): buddy orders. */
static inline unsigned _nd_page_ceil_log2(uint64_t x)
{
	return x <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(x - 1);
}

/* ---- reserve.c: the reservation (page.c's setup calls these under its
 * lock). ---- */
/* The page level's settings (g) from the options: binding mode, purge
 * threshold and advice, dirty limit, decay, THP. */
void _nd_reserve_read_options(void);
/* The layout: *res (slot 0's start), *desc (descriptors), *shift (slot
 * size). Sets g.lazy. 0, or -1 reported once ("initialization failed"). */
int _nd_reserve_layout(const _nd_topo_t *t, int nslots, void **res, void **desc, unsigned *shift);
/* Slot s of the layout in g: node, capacity, binding, free space. */
void _nd_reserve_slot_init(_nd_arena_t *a, int s, const _nd_topo_t *t);

/* ---- room.c: a node's room: hard capacity, the kernel's watermarks
 * (headroom), committed pages, binding a range to the node. ---- */
void _nd_room_stats(void (*fn)(int, int64_t), int node, int64_t pages);
/* Pages counted as committed for na's node (+/-; never below 0). */
void _nd_room_committed(_nd_arena_t *na, int64_t pages);
/* Charges n pages to na: capacity, and on a real node the headroom for
 * check_pages fresh pages (0: no check). false: no room (nothing charged). */
bool _nd_room_take(_nd_arena_t *na, uint64_t n, uint64_t check_pages);
void _nd_room_give(_nd_arena_t *na, uint64_t n);
/* Fresh pages na may commit now by its headroom (UINT64_MAX: no check;
 * 0: none), re-reading the kernel's figures when need does not fit. */
uint64_t _nd_room_spare(_nd_arena_t *na, uint64_t need);
/* Reads of the kernel's headroom figures so far (tests). */
uint64_t _nd_room_wm_reads(void);
/* A newly mapped range [i, i+n) of slot a's pages: bound to its node,
 * huge page advice (NODALLOC_THP=always/never). */
void _nd_room_fresh(_nd_arena_t *a, uint64_t i, uint64_t n);
/* MADV_HUGEPAGE on [p, p+len), whole 2 MiB pages of a big run (g.thp_runs).
 * fresh (its pages never touched): the first 2 MiB is faulted at once and
 * its CPU time read; slower than g.thp_slow_ns, the rest goes back to
 * MADV_NOHUGEPAGE and the next big runs are not advised (1, then 4x as
 * many after each slow probe up to 64, half after a fast one; every
 * other fresh run is probed). Not fresh (a run grown in place):
 * advised unless backing off. true: advised whole. */
bool _nd_room_huge(char *p, size_t len, bool fresh);
/* Probes so far, how many were slow, big runs left unadvised (tests). */
void _nd_room_huge_counts(uint64_t *probes, uint64_t *slow, uint64_t *skipped);
/* Grow slot a's part given to the buddy allocator into its hole so that
 * a free block of order k exists / so that it reaches page end; false if
 * the slot is full. Maps nothing. Lock held. */
bool _nd_room_grow(_nd_arena_t *a, unsigned k);
bool _nd_room_grow_to(_nd_arena_t *a, uint64_t end);
/* Lazy reservation: map [i, i+n) of slot a (a run's clean pages, just
 * taken: no lock), bound and advised; 0 or -errno. _map_run: the clean
 * pages of run [i, i+n) (dirty: how many carry ND_PGF_DIRTY). */
int _nd_room_map(_nd_arena_t *a, uint64_t i, uint64_t n);
int _nd_room_map_run(_nd_arena_t *a, uint64_t i, uint64_t n, uint64_t dirty);
/* Slot a (lock held): clean free blocks at the end of its grown part
 * back to the hole. */
void _nd_room_shrink(_nd_arena_t *a);
/* mbind [p, p+len) to node (bind or preferred, NODALLOC_STRICT). */
int _nd_room_bind(void *p, size_t len, int node);

/* ---- purge.c: giving memory back to the OS. ---- */
/* [p, p+len) of slot a back to the OS; it reads as zero afterwards
 * whatever the kernel says (lazy reservation: unmapped, its address
 * space given back). true when it kept its mapping (and policy). */
bool _nd_purge_range(const _nd_arena_t *a, void *p, size_t len, int advice);
/* Lazy reservation, a mapping refused (ENOMEM: the address space limit):
 * every slot's dirty free pages purged and its clean free blocks
 * unmapped, one slot lock at a time (none held on entry). */
void _nd_purge_release(void);
/* Every dirty free block of a node slot purged (merged madvise calls),
 * then merged. Slot lock held. Returns pages purged. */
uint64_t _nd_purge_slot(_nd_arena_t *a);
/* The same for the dirty blocks numbered below stamp (freed, or merged,
 * before the slot's push count was stamp: _nd_page_exit_stamp). */
uint64_t _nd_purge_older(_nd_arena_t *a, uint64_t stamp);
/* After a free put `freed` pages back (slot lock held, `used` already
 * lowered): the dirty limit, and the decay clock started. */
void _nd_purge_after_free(_nd_arena_t *a, uint64_t freed);
/* A run took `fresh` clean pages, no dirty block left to serve it (slot
 * lock held): while pages the dirty limit purged are out, they are
 * refaults, and raise the cap of _nd_purge_over's bound. */
void _nd_purge_taken(_nd_arena_t *a, uint64_t fresh);
/* Would n more dirty free pages, taken from the pages in use, put node's
 * slot past its dirty limit? A lock-free hint: the slab level keeps empty
 * slabs only while they would not, or _nd_purge_room makes them room
 * (slab.c, keep_empty). */
bool _nd_purge_over(int node, uint64_t n);
/* _nd_purge_over said yes: if the n kept pages alone are within the
 * bound, the slot's oldest dirty free pages are purged to make room and
 * true returned (the heap keeps its slabs); else false (they go back).
 * Takes the slot lock. */
bool _nd_purge_room(int node, uint64_t n);
/* A thread with heaps (or a burst, nd_thread.h page_drop) on node is
 * exiting (heap.c, before its heaps give their slabs back): the pages it
 * gives back, and the small runs it freed just before, serve the next
 * threads, so the dirty limit keeps them up to the pages in use now plus
 * its burst. */
void _nd_purge_exit(int node);
/* Decay: purge slots whose dirty pages have been free for decay_ns,
 * and the excess of those whose live bursts have not changed for as long
 * (the burst clock). Called on page-level calls and on the calls that
 * serve memory without one (a heap's kept empty slab, a large run from
 * large.c's cache); no thread. */
void _nd_purge_decay(void);

/* ---- outrun.c: runs outside the slots (a mapping of their own, bound
 * to their node, charged to its room; docs/arenas.md "Runs outside the
 * slot"). ---- */
/* A run of n pages aligned to align pages for node, when its room allows
 * (page.c checked the arguments and set up): NULL if not, or the table
 * is full. Committed, in use, recorded; its head descriptor is
 * _nd_page_desc(p) (flags ND_PGF_OUT | ND_PGF_FRESH). */
void *_nd_outrun_alloc(int node, uint64_t n, uint64_t align);
/* Runs outside the slots now (atomic; 0: the lookups below find none). */
extern uint32_t _nd_outrun_live __attribute__((visibility("hidden")));
static inline bool _nd_outrun_any(void)
{
	return __atomic_load_n(&_nd_outrun_live, __ATOMIC_ACQUIRE) != 0;
}
/* p's run's head descriptor (p in its first page), a shared tail
 * descriptor (p in a later page: use NONE, never to be written), NULL if
 * no such run holds p. One atomic load when none exists. */
_nd_pagedesc_t *_nd_outrun_desc(const void *p);
int _nd_outrun_node_of(const void *p);
/* Free / shrink (the tail unmapped) run p: 0, or -1 if p is no such
 * run's start (nothing changed). */
int _nd_outrun_free(void *p);
int _nd_outrun_shrink(void *p, uint64_t new_npages);
/* Grows run p (its start) to new_npages, the added pages bound to its
 * node and charged to its room: in place when the address space after it
 * is free, else moved with its pages (mremap: no copy). The run's
 * address (p or its new one), or NULL with nothing changed (no such run,
 * the room refused, the move refused). */
void *_nd_outrun_grow(void *p, uint64_t new_npages);
/* Runs outside the slots of node (-1: all) and their pages (tests). */
void _nd_outrun_info(int node, uint64_t *runs, uint64_t *pages);

/* ---- spread.c: runs whose granules are spread over nodes (the mixed
 * slot). The caller (page.c) has checked the arguments and set up. ---- */
/* first: index of the first granule, or ND_SPREAD_BY_ADDRESS. */
void *_nd_spread_alloc(size_t npages, const nd_policy_t *pol, uint64_t first);
/* See _nd_page_spread_first, _matches, _in_use (page.c checks p). */
uint64_t _nd_spread_first(size_t npages, const nd_policy_t *pol);
bool _nd_spread_matches(const void *p, size_t npages, const nd_policy_t *pol, uint64_t first);
int64_t _nd_spread_fit(const void *p, uint64_t run_pages, size_t npages, const nd_policy_t *pol, uint64_t first, bool cut);
void _nd_spread_in_use(const void *p, size_t npages, int sign, const nd_policy_t *pol);
void _nd_spread_uncount(const void *p, size_t npages, const nd_policy_t *pol, uint64_t first);
/* Free of a mixed-slot run already claimed (head made a TAIL). */
void _nd_spread_free(_nd_arena_t *m, uint32_t i, uint64_t n, bool kil);

int _nd_page_init(void);
/* A run of npages on exactly node (no fallback, no statistics); aligned to
 * align_pages pages (a power of two). NULL when the node is full, or
 * (quietly) when the run is larger than a slot: see _alloc_out. */
void *_nd_page_alloc_exact(int node, size_t npages, size_t align_pages);
/* The same, but a big run's huge page advice (and its probe, room.c) is
 * left to the caller (_nd_page_huge_fresh): the large cache fills the
 * run with moved pages first and probes only what it leaves fresh. */
void *_nd_page_alloc_fill(int node, size_t npages, size_t align_pages);
/* [p, p + npages pages) of a node-slot run, clean and never touched:
 * its whole 2 MiB pages advised as a new big run's are (probed first). */
void _nd_page_huge_fresh(void *p, size_t npages);
/* Can a slot hold a run of npages aligned to align_pages pages? Else every
 * slot refuses it whatever is freed first (outside the slot, _alloc_out,
 * it may still be served). */
bool _nd_page_run_fits(size_t npages, size_t align_pages);
/* The same, unaligned, at the lowest npages free pages in a row of the
 * slot's grown part (else as _exact): the library's runs that are never
 * freed (meta.c's chunks) gather at the slot's start, below the node's
 * capacity, and leave the slot's upper half whole for large runs (task
 * bigslot: scattered over a 2 GiB slot, eight of them refused 1000 MiB on
 * an empty 1 GiB node). A walk of the slot's heads: for rare runs only. */
void *_nd_page_alloc_low(int node, size_t npages);
/* The same as _exact, but a mapping of its own outside the slots, bound to
 * node (outrun.c): for a large run node's slot cannot hold (split, or
 * smaller than the run) while its room allows. NULL + ENOMEM when the
 * room, the address space (or the table) does not, or the run is larger
 * than NODALLOC_ARENA_RESERVE set by the user (g.run_order_max). */
void *_nd_page_alloc_out(int node, size_t npages, size_t align_pages);
/* Would node's capacity take npages more now (a hint, no charge; set up)? */
bool _nd_page_room_for(int node, size_t npages);
/* A run under a policy: first choice want_node (>= 0) or the policy's,
 * fallback by the policy, statistics counted. *got_node = serving node.
 * NULL with errno = ENOMEM when every allowed node is full. */
void *_nd_page_alloc(size_t npages, size_t align_pages, const nd_policy_t *pol, int want_node, int *got_node);
/* The same for a slab run of npages aligned to npages (slab.c): at *near
 * (the end of the heap's last one) if that is free and on the node, else
 * (runs below 32 pages, when it would be cut from a clean block anyway)
 * at the start of a clean 32-page block, whose rest the next ones take;
 * *near (NULL at first) moves to the run's end. */
void *_nd_page_alloc_near(size_t npages, const nd_policy_t *pol, int want_node, int *got_node, char **near);
/* One contiguous run whose granules are spread over nodes by pol
 * (interleave or weighted, by offset), from the mixed slot. Granule i is
 * on the node of granule index start + i, start from the thread's spread
 * cursor (_nd_policy_spread_start): granules stay aligned, the first node
 * rotates from run to run. */
void *_nd_page_alloc_spread(size_t npages, const nd_policy_t *pol);
/* The same with granule i on the node of index first + i, the spread
 * cursor untouched (tables: a fixed, reported layout; large.c: the index
 * _nd_page_spread_first gave, ND_SPREAD_BY_ADDRESS included). */
void *_nd_page_alloc_spread_from(size_t npages, const nd_policy_t *pol, uint64_t first);
/* The first granule's index _nd_page_alloc_spread would give a run of
 * npages under pol now, the thread's spread cursor moved on as it moves
 * it; ND_SPREAD_BY_ADDRESS when the kernel interleaves such a run by
 * address (page granules on real nodes: the cursor stays). */
#define ND_SPREAD_BY_ADDRESS UINT64_MAX
uint64_t _nd_page_spread_first(size_t npages, const nd_policy_t *pol);
/* Spread run p of at least npages has each granule of its first npages
 * pages on the node a fresh run of npages under pol starting at index
 * first would put it on (no fallback): large.c reuses it (or that prefix,
 * _nd_page_spread_split) as is, its pages already placed and bound
 * (docs/arenas.md). */
bool _nd_page_spread_matches(const void *p, size_t npages, const nd_policy_t *pol, uint64_t first);
/* Where inside spread run p (the caller's, or its list's lock held) a
 * fresh run of npages from first is laid out: the first offset (pages,
 * whole granules, within one round of the policy) at which its pages
 * are placed as that run's would be, or -1. Its end is the run's unless
 * cut (the rest may be cut off: npages is whole granules). */
int64_t _nd_page_spread_fit(const void *p, size_t npages, const nd_policy_t *pol, uint64_t first, bool cut);
/* Spread run `run` (the caller's, not in use) becomes two runs: its first
 * npages pages, and the rest (returned; NULL with nothing changed when
 * run is no spread run longer than npages). No page is touched: both keep
 * their nodes, binding and commit charge; in-use counts are the caller's.
 * The rest's layout starts npages pages on (a valid spread run when
 * npages is whole granules). */
void *_nd_page_spread_split(void *run, size_t npages);
/* The reverse: spread run next (right after run, both the caller's, not
 * in use, both or neither interleaved by the kernel) becomes part of run.
 * 0, or -1 with nothing changed. */
int _nd_page_spread_join(void *run, void *next);
/* Adds sign * its pages per node to spread run p's nodes' in-use
 * statistics (large.c's cache: a cached run is committed, not in use);
 * with pol, also counts a reuse's placement (numa_hit etc.) per granule
 * as _nd_page_alloc_spread does. */
void _nd_page_spread_in_use(const void *p, size_t npages, int sign, const nd_policy_t *pol);
/* Takes back the placement statistics (numa_hit etc.) that the fresh
 * spread run p of npages, placed under pol from index first (the same
 * arguments), counted: large.c gives such a run back and places it
 * again, and the block is counted once. */
void _nd_page_spread_uncount(const void *p, size_t npages, const nd_policy_t *pol, uint64_t first);
/* Free a run (p must be a run head from this file). Returns 0, or -1 if p
 * is not a run head (the caller reports the invalid free). */
int _nd_page_free(void *p);
/* Resize a node-slot run in place (realloc). grow: take the free pages
 * right after it (node capacity and watermark as for a new run); shrink:
 * give its tail back as a free would. 0, or -1 with nothing changed (not
 * a node-slot run head, neighbours in use, slot end, node full). */
int _nd_page_grow(void *run, size_t new_npages);
int _nd_page_shrink(void *run, size_t new_npages);
/* Grow a big node-slot run (at least the purge threshold) into the free
 * pages right before it, keeping its contents as its end: the new head,
 * or NULL with nothing changed (as grow). The caller owns the run and
 * sets its head's use and user again. */
void *_nd_page_grow_down(void *run, size_t new_npages);
/* Split a big node-slot run (both parts at least the purge threshold)
 * at npages without purging: returns the second part, a run of its own
 * (use NONE), or NULL (not such a run, a part too small). _nd_page_join
 * makes run next, right after run, part of it again (0, or -1). Pages
 * stay committed; counts of used and in-use pages are the caller's. */
void *_nd_page_split(void *run, size_t npages);
int _nd_page_join(void *run, void *next);
/* Pages [first, first + n) of a small node-slot run go back as a free of
 * them would (dirty); the pages before stay the run, those after become
 * a run of their own (the slab purge's units). 0, or -1 (a mixed-slot or
 * big run, a range past its end). */
int _nd_page_free_inner(void *run, size_t first, size_t n);
/* Zero the first bytes of a run from this file, skipping pages that
 * already read as zero (fresh or purged): calloc, zero-filled tables. */
void _nd_page_zero(void *run, size_t bytes);
/* Descriptor of the page containing p, or NULL if p is not in any slot. */
_nd_pagedesc_t *_nd_page_desc(const void *p);
/* Node of any address inside a slot, -1 otherwise. */
int _nd_page_node_of(const void *p);
/* Return committed free pages of node's slot (-1: every slot) to the OS
 * now (malloc_trim). Returns bytes purged. */
size_t _nd_page_trim(int node);
/* A thread's exit on node (heap.c exit_trim): records the number of the
 * next dirty block node's slot will hold (blocks freed or merged from now
 * on are numbered at least this) and returns the one recorded two calls
 * before (0: none, or no such slot). */
uint64_t _nd_page_exit_stamp(int node);
/* The exit of t's thread (the caller), after _nd_purge_exit (heap.c):
 * its burst leaves its node's burst_live, and no later free of it counts. */
void _nd_page_burst_done(_nd_thread_t *t);
/* Fork child: the parent's other threads' bursts are gone, and the
 * calling thread is the main one. */
void _nd_page_fork_child(void);
/* _nd_page_trim of node's dirty free blocks numbered below stamp: those
 * free since then and not reused (nor merged) in between. */
size_t _nd_page_trim_older(int node, uint64_t stamp);
/* Is the reservation lazy (an address space limit: docs/arenas.md
 * "Layout")? Sets the page level up first; false if that fails. */
bool _nd_page_lazy(void);
/* Introspection for tests, tools and benchmarks. node -1 = mixed slot. */
typedef struct _nd_page_info {
	bool usable;
	void *base;               /* slot start */
	size_t slot_bytes;
	uint64_t slot_pages;
	uint64_t mapped_pages;    /* of the slot (lazy reservation: what it grew to) */
	uint64_t free_pages;      /* in free buddy blocks of this slot */
	uint64_t dirty_pages;     /* committed pages inside free blocks */
	uint64_t free_blocks;
	int largest_order;        /* largest free block, -1 if none */
	uint64_t used_pages;      /* in runs served by this node (both slots) */
	uint64_t capacity_pages;  /* hard capacity (emulation), else UINT64_MAX */
	uint64_t committed_pages; /* counted in bytes_committed for this node */
	uint64_t purge_pages;     /* runs this large are purged when freed */
	unsigned purge_order;     /* free blocks above this order are always clean */
	uint64_t burst_pages;     /* the live threads' bursts the dirty limit keeps (burst_live; 0 once their clock ran out) */
	uint64_t out_runs;        /* runs of this node outside the slots (outrun.c; counted in used_pages) */
	uint64_t out_pages;       /* their pages */
} _nd_page_info_t;
int _nd_page_info(int node, _nd_page_info_t *out);
/* Walk a slot and check every descriptor invariant; 0 or -1 with err. */
int _nd_page_check(int node, char *err, size_t errlen);

#endif /* ND_PAGE_H */
