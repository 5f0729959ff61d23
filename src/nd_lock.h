// SPDX-License-Identifier: MIT
/* Part of internal.h (included by it only, in layer order): layer 2b, lock.c
 * (and the Lock order of every lock). */
#ifndef ND_LOCK_H
#define ND_LOCK_H

/* ======================================================================
 * src/lock.c: the library's lock and the registry of every lock.
 * ====================================================================== */

/* A small spin-then-futex lock (no allocation, fork-resettable). */
typedef struct _nd_lock {
	volatile uint32_t v; /* 0 free, 1 locked, 2 locked with waiters */
} _nd_lock_t;
#define ND_LOCK_INIT { 0 }
void _nd_lock(_nd_lock_t *l);
void _nd_unlock(_nd_lock_t *l);
bool _nd_trylock(_nd_lock_t *l);

/* Lock order: a thread holding a lock takes only locks of a higher rank
 * (arrays: ascending index). Fork takes them all in this order. Every
 * lock of the library is declared with ND_LOCK_DEFINE / ND_LOCK_ARRAY /
 * ND_LOCK_DYN_ARRAY / ND_LOCK_FIELD / ND_LOCK_LIST below (tests/check_locks.sh refuses
 * any other, and checks that each rank here names exactly one registered
 * lock class and each class a rank here). The 18 locks, by rank:
 * file: variable (what it protects; what it may take while held). */
typedef enum _nd_lock_rank {
	ND_RANK_TABLE_FMT = 10,   /* table.c: fmt_lock (nd_table_format's per-node buffer) */
	ND_RANK_STATS_SNAP = 20,  /* stats_print.c: snap_lock (the printers' snapshot) */
	ND_RANK_PERCPU = 30,      /* percpu.c: pc_lock (setup, alloc, free; takes page, topology swap) */
	ND_RANK_INIT = 40,        /* malloc.c: init_lock (the init sequence; takes everything below) */
	ND_RANK_POLICY_POOL = 50, /* policy.c: pool_lock (interned policies) */
	ND_RANK_POLICY_PROC = 51, /* policy.c: proc_lock (process default; then thread) */
	ND_RANK_THREAD = 55,      /* thread.c: thread_lock (thread records: pool, list) */
	ND_RANK_THREAD_LBLK = 56, /* thread.c: all->lblk_lock (one per record: its lblk, large.c's thread cache; the owner's put, take and exit, and
				   * _nd_large_flush under thread_lock; takes large cache, spread, page: a kept run's free) */
	ND_RANK_SLAB_SWEEP = 58,  /* heap.c: sweep_lock (a parked heap out of its pool for a sweep; takes the pool locks, page) */
	ND_RANK_SLAB_THREADS = 60,/* heap.c: pheap_lock (the parked policy heaps' pool) */
	ND_RANK_SLAB_NODE = 61,   /* meta.c: nodes[].lock (per node: parked heaps, metadata, slab map creation; then page) */
	ND_RANK_LARGE_CACHE = 65, /* large.c: lnodes[].lock (one per node, its cached runs; takes nothing) */
	ND_RANK_LARGE_SPREAD = 66,/* large.c: spread_cache.lock (the cached spread runs; takes nothing) */
	ND_RANK_PAGE_SETUP = 70,  /* page.c: g.lock (reservation setup; takes topology swap for the freeze) */
	ND_RANK_PAGE_ARENA = 71,  /* page.c: g.arenas[].lock (one per slot: buddy lists, descriptors) */
	ND_RANK_PAGE_WMARK = 72,  /* room.c: wm.lock (reading the kernel's watermarks; takes no other lock) */
	ND_RANK_PAGE_OUT = 73,    /* outrun.c: out_lock (the table of runs outside the slots; takes no other lock) */
	ND_RANK_TOPO_SWAP = 80,   /* topology.c: swap_lock (replacing the live topology, freeze) */
} _nd_lock_rank_t;

/* One registry entry: a static lock, a static array of structs holding a
 * lock, or an array whose address is stored in *dyn (set at run time). */
typedef struct _nd_lock_class {
	const char *name;
	int rank;
	_nd_lock_t *lock;     /* static: the lock, or the first element's */
	void *const *dyn;     /* dynamic: where the array's address is (else NULL) */
	size_t dyn_off;       /* dynamic: offset of the lock in an element */
	int *count;           /* elements in use now (NULL: fixed); see Counted arrays */
	size_t next_off;      /* list: offset of the link to the next element (0: not a list) */
	int fixed;            /* elements when count is NULL */
	size_t stride;        /* bytes between elements */
} _nd_lock_class_t;

#define ND_LOCK_CLASS_(id, ...)                                                        \
	static const _nd_lock_class_t id __attribute__((used, section("nd_lock_classes"), \
							 aligned(8))) = { __VA_ARGS__ }
/* static _nd_lock_t var, registered. */
#define ND_LOCK_DEFINE(var, rank_)                                                  \
	static _nd_lock_t var = ND_LOCK_INIT;                                       \
	ND_LOCK_CLASS_(var##_lock_class, .name = #var, .rank = (rank_), .lock = &var, .fixed = 1)
/* arr[i].field for i < *count_ptr (or n when count_ptr is NULL). */
#define ND_LOCK_ARRAY(id, arr, field, n, count_ptr, rank_)                          \
	ND_LOCK_CLASS_(id, .name = #arr "[]." #field, .rank = (rank_), .lock = &(arr)[0].field, \
		       .count = (count_ptr), .fixed = (n), .stride = sizeof((arr)[0]))
/* One lock inside a static object (a field of a struct variable). */
#define ND_LOCK_FIELD(id, lvalue, rank_) \
	ND_LOCK_CLASS_(id, .name = #lvalue, .rank = (rank_), .lock = &(lvalue), .fixed = 1)
/* (*base_ptr)[i] of type T, lock at field, for i < *count_ptr. */
#define ND_LOCK_DYN_ARRAY(id, base_ptr, T, field, count_ptr, rank_)                  \
	ND_LOCK_CLASS_(id, .name = #base_ptr "[]." #field, .rank = (rank_),           \
		       .dyn = (void *const *)(base_ptr), .dyn_off = offsetof(T, field), \
		       .count = (count_ptr), .stride = sizeof(T))

/* The elements of a linked list, *head_ptr the first, each element's
 * field next the one after it (NULL: the end), lock at field: the list's
 * head and links change only under a lock of lower rank, which prepare
 * holds when it walks them (thread.c: the thread records, under
 * thread_lock). */
#define ND_LOCK_LIST(id, head_ptr, T, field, next, rank_)                              \
	ND_LOCK_CLASS_(id, .name = #head_ptr "->" #field, .rank = (rank_),             \
		       .dyn = (void *const *)(head_ptr), .dyn_off = offsetof(T, field), \
		       .next_off = offsetof(T, next))

/* Counted arrays: prepare takes elements [0, *count), and the child
 * resets them; a lock beyond the count is never taken (no one may lock an
 * element before it is counted: the child would inherit it held). Each
 * raise of a count is ordered with prepare, so that a thread that counts
 * an element while a fork is prepared is either seen by prepare (which
 * then holds that element too) or waits until the fork is over:
 * - a static array (ND_LOCK_ARRAY with a count) raises its count with
 *   _nd_lock_count_raise, under element 0's lock; prepare takes element 0
 *   first (counted or not), then reads the count. A raise's caller holds
 *   no lock of the array's rank or above, element 0 included (meta.c's
 *   and large.c's raises are at a node's first use, outside their locks);
 * - a dynamic array (ND_LOCK_DYN_ARRAY) sets its base and count under a
 *   lock of lower rank, which prepare holds when it reads them (page.c:
 *   g.arenas and g.nslots, set once under g.lock). */
void _nd_lock_count_raise(const _nd_lock_class_t *c, int to);

/* The registered classes sorted by rank (tests, lock-order listing). */
int _nd_lock_classes(const _nd_lock_class_t **out, int max);
/* malloc.c's pthread_atfork handlers: take every registered lock in rank
 * order / release them / reset them in the child. */
void _nd_lock_fork_prepare(void);
void _nd_lock_fork_parent(void);
void _nd_lock_fork_child(void);

#endif /* ND_LOCK_H */
