// SPDX-License-Identifier: MIT
/*
 * Node arenas: the page level (docs/arenas.md).
 *
 * One virtual reservation, cut into equal power-of-two slots aligned to
 * their size: slot s < node_limit belongs to node s (usable only if the
 * node has memory), slot node_limit is the "mixed" slot for runs whose
 * granules are spread over nodes. Address -> slot is one subtraction and
 * one shift; address -> descriptor one more shift (one descriptor array
 * covers every slot). Node slots are mbind'ed to their node once, before
 * anything is touched; mixed-slot runs are bound granule by granule.
 *
 * Each slot is a buddy allocator of 4 KiB pages. Descriptor invariants
 * (slab relies on them): the head of a free block is ND_PG_FREE with its
 * order, the head of a run is ND_PG_RUN with npages, every other page is
 * ND_PG_TAIL. A run that is not a power of two takes a block and returns
 * its tail at once, so runs are exact.
 *
 * Committed memory: ND_PGF_DIRTY on a page of a free block or of a small
 * run means "counted as committed"; a free head keeps the number of such
 * pages in npages. Free blocks are all clean or all dirty (a dirty block
 * never merges with a clean one). Runs of at least the purge threshold are purged when
 * freed; a free block of order >= purge_order is always clean (invariant
 * I), so dirty blocks stay small.
 * Dirty blocks stop merging below purge_order; when a slot holds more than
 * dirty_limit dirty free pages (or 1/8 of its pages in use, if more),
 * every dirty block is purged and merged.
 *
 * Locks: g.lock (setup, fork) and one lock per slot (its free
 * lists and the descriptors of its free blocks). Lock order: g.lock before
 * a slot lock; never two slot locks at once. Capacity, committed and used
 * counters are atomics, so a mixed-slot run charges nodes without their
 * locks. Pages of a run in limbo (taken but not yet marked, or being
 * freed) belong to the thread working on them; it edits their descriptors
 * without the lock.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h> /* MADV_* values only: the calls go through os.c */

#include "internal.h"

#define NIL UINT32_MAX
#define MAX_ORDER 28            /* 1 TiB slot of 4 KiB pages: indexes fit uint32 */
#define SLOT_SHIFT_MIN 24       /* 16 MiB: smallest slot we retry down to */
#define SLOT_SHIFT_MAX 40       /* 1 TiB */
#define SLOT_SHIFT_DEFAULT_MIN 30 /* 1 GiB: smallest slot sized from memory */
#define TOTAL_SHIFT_MAX 44      /* 16 TiB of slots at most (descriptors: 128 GiB VA) */
#define PURGE_ORDER_MAX 16      /* blocks >= 256 MiB are always kept clean */
#define HUGE_PAGES (ND_HUGE_SIZE >> ND_PAGE_SHIFT) /* 512: pages of a 2 MiB huge page */

typedef struct arena {
	_nd_lock_t lock;  /* protects head[], free_pages, dirty_free, free-block descriptors */
	int node;         /* node id, -1 for the mixed slot */
	bool usable;
	bool mixed;
	char *base;
	_nd_pagedesc_t *desc;
	uint64_t free_pages;  /* pages in free blocks */
	uint64_t dirty_free;  /* committed pages inside free blocks (written under lock, read lock-free: atomic) */
	uint64_t nblocks;     /* free blocks */
	uint32_t head[MAX_ORDER + 1];
	/* Atomics (no lock). For the mixed slot only cap is meaningful. */
	uint64_t used;       /* pages in runs served by this node (node and mixed slots) */
	uint64_t cap;        /* hard capacity in pages (emulated memory size) */
	uint64_t committed;  /* pages this node has counted in _nd_stats_committed */
	uint64_t floor;      /* no zoneinfo: bytes kept free (max(MemTotal/64, 32 MiB)) */
	/* Headroom (atomics, written under wm.lock): what the node could
	 * still give at the last /proc/zoneinfo read, and `committed` at the
	 * last two reads (see room_ok). */
	uint64_t wm_avail;   /* pages */
	uint64_t wm_c_last, wm_c_prev;
} __attribute__((aligned(ND_CACHE_LINE))) arena_t;

static struct {
	_nd_lock_t lock;      /* setup; taken first at fork */
	volatile int ready;
	int failed;           /* setup failed (reported once, never retried) */
	uintptr_t base;       /* reservation start (0 before setup) */
	uintptr_t total;      /* bytes of all slots (0 before setup) */
	unsigned slot_shift;
	uintptr_t slot_mask;
	unsigned order_max;   /* slot_shift - ND_PAGE_SHIFT */
	int node_limit;       /* node slots; the mixed slot has index node_limit */
	int nslots;
	_nd_pagedesc_t *desc;
	size_t desc_bytes;
	arena_t *arenas;
	size_t arenas_bytes;
	bool bind;            /* real topology: mbind slots and granules */
	bool strict;          /* MPOL_BIND (else MPOL_PREFERRED) */
	bool check_free;      /* real topology: headroom check before committing */
	bool huge_spread;     /* MADV_HUGEPAGE on spreads with granules >= 2 MiB */
	int advice;           /* MADV_DONTNEED or MADV_FREE */
	uint64_t purge_pages; /* runs of at least this many pages are purged on free */
	unsigned purge_order; /* free blocks of this order or more are clean */
	uint64_t dirty_limit; /* dirty free pages a slot keeps before a purge pass */
} g = { .lock = ND_LOCK_INIT };
ND_LOCK_FIELD(g_lock_class, g.lock, ND_RANK_PAGE_SETUP);
ND_LOCK_DYN_ARRAY(arena_lock_class, &g.arenas, arena_t, lock, &g.nslots, ND_RANK_PAGE_ARENA);

static int warned_mbind, warned_spread_mbind, warned_purge, warned_fresh;

/* ---- small helpers ----------------------------------------------------- */

static inline unsigned ceil_log2(uint64_t x)
{
	return x <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(x - 1);
}

static inline unsigned floor_log2(uint64_t x)
{
	return 63 - (unsigned)__builtin_clzll(x);
}

static inline void *page_addr(const arena_t *a, uint64_t i)
{
	return a->base + (i << ND_PAGE_SHIFT);
}

static void stats_bytes(void (*fn)(int, int64_t), int node, int64_t pages)
{
	if (pages && node >= 0)
		fn(node, pages * (int64_t)ND_PAGE_SIZE);
}

static void committed_add(arena_t *na, int64_t pages)
{
	if (!pages)
		return;
	__atomic_add_fetch(&na->committed, (uint64_t)pages, __ATOMIC_RELAXED);
	stats_bytes(_nd_stats_committed, na->node, pages);
}

static int cpu_node(void)
{
	const _nd_topo_t *t = _nd_topo();
	int c = _nd_topo_cpu();
	return c >= 0 && c < t->cpu_limit ? t->cpu_node[c] : -1;
}

static int bind_mode(void)
{
	return g.strict ? ND_MPOL_BIND : ND_MPOL_PREFERRED;
}

static int bind_range(void *p, size_t len, int node)
{
	uint64_t mask[ND_MAX_NODES / 64] = { 0 };
	mask[node / 64] |= 1ull << (node % 64);
	return _nd_os_mbind(p, len, bind_mode(), mask, (unsigned long)g.node_limit, 0);
}

/* ---- free lists (slot lock held) --------------------------------------- */

static void list_push(arena_t *a, uint32_t i, unsigned o, uint64_t dirty)
{
	_nd_pagedesc_t *d = &a->desc[i];
	d->state = ND_PG_FREE;
	d->order = (uint8_t)o;
	d->npages = dirty;
	d->use = ND_USE_NONE;
	d->user = 0;
	d->prev = NIL;
	d->next = a->head[o];
	if (d->next != NIL)
		a->desc[d->next].prev = i;
	a->head[o] = i;
	a->free_pages += 1ull << o;
	/* written under a->lock, read lock-free by node_alloc: relaxed atomics */
	__atomic_store_n(&a->dirty_free, a->dirty_free + dirty, __ATOMIC_RELAXED);
	a->nblocks++;
}

/* Unlinks a free block; its head becomes a TAIL until the caller says. */
static void list_del(arena_t *a, uint32_t i)
{
	_nd_pagedesc_t *d = &a->desc[i];
	unsigned o = d->order;
	if (d->prev != NIL)
		a->desc[d->prev].next = d->next;
	else
		a->head[o] = d->next;
	if (d->next != NIL)
		a->desc[d->next].prev = d->prev;
	a->free_pages -= 1ull << o;
	__atomic_store_n(&a->dirty_free, a->dirty_free - d->npages, __ATOMIC_RELAXED);
	a->nblocks--;
	d->state = ND_PG_TAIL;
	d->order = 0;
	d->npages = 0;
}

static uint64_t count_dirty(const arena_t *a, uint64_t i, uint64_t n)
{
	uint64_t c = 0;
	for (uint64_t k = 0; k < n; k++)
		c += a->desc[i + k].flags & ND_PGF_DIRTY;
	return c;
}

static void clear_dirty(arena_t *a, uint64_t i, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++)
		a->desc[i + k].flags &= (uint8_t)~ND_PGF_DIRTY;
}

/* Dirty pages of the sub-range [s, s+len) of a block holding d of bl. */
static uint64_t part_dirty(const arena_t *a, uint64_t d, uint64_t bl, uint64_t s, uint64_t len)
{
	if (d == 0)
		return 0;
	if (d == bl)
		return len;
	return count_dirty(a, s, len);
}

/* Takes a free block of order >= k and splits it down to k. Returns its
 * index (NIL if none) and its dirty page count. */
static uint32_t take_block(arena_t *a, unsigned k, uint64_t *dirty)
{
	unsigned o = k;
	while (o <= g.order_max && a->head[o] == NIL)
		o++;
	if (o > g.order_max)
		return NIL;
	uint32_t i = a->head[o];
	uint64_t d = a->desc[i].npages;
	list_del(a, i);
	while (o > k) {
		o--;
		uint64_t half = 1ull << o;
		uint64_t dl = part_dirty(a, d, 2 * half, i, half);
		list_push(a, i + (uint32_t)half, o, d - dl);
		d = dl;
	}
	*dirty = d;
	return i;
}

/* Largest aligned block order at s fitting in len pages. */
static inline unsigned piece_order(uint64_t s, uint64_t len)
{
	unsigned o = floor_log2(len);
	if (s) {
		unsigned al = (unsigned)__builtin_ctzll(s);
		if (al < o)
			o = al;
	}
	return o;
}

/* Frees one aligned block, merging with free buddies. A dirty block never
 * merges with a clean one (so every free block is all clean or all dirty,
 * and splitting never has to count), and a merge that would make a dirty
 * block of order >= purge_order stops (invariant I): such blocks wait,
 * small, for the next purge pass, which cleans and merges them. */
static void free_block(arena_t *a, uint32_t i, unsigned o, uint64_t dirty)
{
	/* The old head (a run head) becomes a tail if it merges as an upper half. */
	a->desc[i].state = ND_PG_TAIL;
	a->desc[i].npages = 0;
	while (o < g.order_max) {
		uint32_t b = i ^ (1u << o);
		const _nd_pagedesc_t *bd = &a->desc[b];
		if (bd->state != ND_PG_FREE || bd->order != o)
			break;
		if ((dirty == 0) != (bd->npages == 0))
			break;
		uint64_t md = dirty + bd->npages;
		if (md && o + 1 >= g.purge_order)
			break;
		list_del(a, b);
		i &= ~(1u << o);
		dirty = md;
		o++;
	}
	list_push(a, i, o, dirty);
}

/* Returns [s, s+len) to the free lists as aligned blocks. mode: the pages
 * are all clean (0), all dirty (1). merge: coalesce with buddies (a freed
 * run) or not (the tail of a block just taken: its buddies are in use). */
static void give_range(arena_t *a, uint64_t s, uint64_t len, bool dirty, bool merge)
{
	while (len) {
		unsigned o = piece_order(s, len);
		uint64_t n = 1ull << o;
		if (merge)
			free_block(a, (uint32_t)s, o, dirty ? n : 0);
		else
			list_push(a, (uint32_t)s, o, dirty ? n : 0);
		s += n;
		len -= n;
	}
}

/* Tail of a taken block (index i, 2^k pages, d dirty) after a run of n
 * pages: back to the free lists. Returns the tail's dirty pages. */
static uint64_t give_tail(arena_t *a, uint64_t i, unsigned k, uint64_t d, uint64_t n)
{
	uint64_t bl = 1ull << k, s = i + n, len = bl - n, td = 0;
	while (len) {
		unsigned o = piece_order(s, len);
		uint64_t pn = 1ull << o;
		uint64_t pd = part_dirty(a, d, bl, s, pn);
		list_push(a, (uint32_t)s, o, pd);
		td += pd;
		s += pn;
		len -= pn;
	}
	return td;
}

/*
 * Returns [p, p+len) of slot a to the OS. The caller then marks the pages
 * clean, and clean pages are trusted to read as zero (_nd_page_zero:
 * calloc, tables), so this must make them zero whatever the kernel says:
 * when madvise is refused (EINVAL on mlock'ed pages, EAGAIN, ...) the
 * range gets a fresh mapping (node slot: bound to its node again; mixed
 * run: no policy), and if even that fails (vm.max_map_count) it is zeroed
 * by hand and stays resident (still counted as purged: the next run that
 * takes it counts it as fresh). Returns true when the range kept its old
 * mapping (and so its memory policy).
 */
static bool purge_pages(const arena_t *a, void *p, size_t len, int advice)
{
	int r = _nd_os_madvise(p, len, advice);
	if (r == 0)
		return true;
	int e = _nd_os_mmap_fixed(p, len, true);
	if (e < 0)
		e = _nd_os_mmap_fixed(p, len, true);
	if (e == 0) {
		if (g.bind && !a->mixed && bind_range(p, len, a->node) < 0 &&
		    !__atomic_exchange_n(&warned_mbind, 1, __ATOMIC_RELAXED))
			_nd_msg_warn("page: node %d: a purged range could not be bound again; placement left to the kernel",
				     a->node);
		return false;
	}
	memset(p, 0, len);
	if (!__atomic_exchange_n(&warned_purge, 1, __ATOMIC_RELAXED))
		_nd_msg_warn("page: madvise(%p, %zu) failed (errno %d) and so did a fresh mapping (errno %d); "
			     "memory zeroed and kept resident", p, len, -r, -e);
	return true;
}

/* Purges every dirty free block of a node slot, then merges what became
 * clean. Slot lock held. Returns pages purged. */
static uint64_t purge_slot(arena_t *a)
{
	uint64_t purged = 0;
	unsigned top = g.purge_order <= g.order_max ? g.purge_order : g.order_max + 1;
	for (unsigned o = 0; o < top; o++) {
		for (uint32_t i = a->head[o]; i != NIL; i = a->desc[i].next) {
			_nd_pagedesc_t *d = &a->desc[i];
			if (!d->npages)
				continue;
			purge_pages(a, page_addr(a, i), (size_t)1 << (o + ND_PAGE_SHIFT), g.advice);
			clear_dirty(a, i, 1ull << o);
			purged += d->npages;
			__atomic_store_n(&a->dirty_free, a->dirty_free - d->npages, __ATOMIC_RELAXED);
			d->npages = 0;
		}
	}
	if (!purged)
		return 0;
	for (unsigned o = 0; o < g.order_max; o++) {
		for (uint32_t i = a->head[o], nx; i != NIL; i = nx) {
			nx = a->desc[i].next;
			uint32_t b = i ^ (1u << o);
			const _nd_pagedesc_t *bd = &a->desc[b];
			if (bd->state != ND_PG_FREE || bd->order != o || bd->npages || a->desc[i].npages)
				continue;
			if (nx == b)
				nx = bd->next;
			list_del(a, i);
			list_del(a, b);
			list_push(a, i & b, o + 1, 0);
		}
	}
	committed_add(a, -(int64_t)purged);
	return purged;
}

/* ---- capacity ---------------------------------------------------------- */

static void cap_give(arena_t *na, uint64_t n)
{
	__atomic_sub_fetch(&na->used, n, __ATOMIC_RELAXED);
	_nd_topo_account(na->node, -(int64_t)(n << ND_PAGE_SHIFT));
}

/* ---- headroom: the kernel's watermarks (docs/arenas.md) -------------------
 *
 * On a real node a run that may commit fresh pages must leave the node
 * above the kernel's low watermark, or a bound VMA's fault ends in the OOM
 * killer instead of a fallback or ENOMEM. What a node can still give
 * (_nd_topo_node_avail: free + half the file cache - low watermark, boost
 * and lowmem reserve, per zone) is read from /proc/zoneinfo for all nodes
 * at once, and between reads estimated as
 *     avail(last read) - (committed now - committed at the read before)
 * The older baseline makes the estimate also pay for runs handed out just
 * before the last read and not yet touched then (a read does not see
 * them). The estimate only errs low for this process's own pages, so a
 * read is redone when 10 ms have passed (other processes), and when the
 * estimate says no while the node's committed count moved since the read
 * before (up to twice: the second without the double count); a node that
 * stays full costs no read per refused run until the next 10 ms. A run
 * passes with need + WM_SLACK to spare: other threads' runs in flight,
 * page tables. Without zoneinfo (a sysfs root other than /sys), MemFree
 * against max(MemTotal/64, 32 MiB), the earlier rule.
 */
#define WM_SLACK_PAGES ((uint64_t)4 << (20 - ND_PAGE_SHIFT))  /* 4 MiB */
#define WM_REREAD_NS 10000000ull

static struct {
	_nd_lock_t lock; /* one reader at a time; a periodic re-read skips when busy */
	uint64_t stamp;  /* ns of the last read (atomic) */
	int mode;        /* 0 not tried, 1 zoneinfo, -1 MemFree rule */
} wm = { .lock = ND_LOCK_INIT };
ND_LOCK_FIELD(wm_lock_class, wm.lock, ND_RANK_PAGE_WMARK);

static int64_t wm_estimate(const arena_t *na)
{
	int64_t c = (int64_t)__atomic_load_n(&na->committed, __ATOMIC_RELAXED);
	int64_t base = (int64_t)__atomic_load_n(&na->wm_c_prev, __ATOMIC_RELAXED);
	return (int64_t)__atomic_load_n(&na->wm_avail, __ATOMIC_RELAXED) - (c - base);
}

/* Re-reads every node's headroom. wait: after another thread's read if
 * one is under way (its result is as fresh); else skip it then. */
static void wm_read(uint64_t now, bool wait)
{
	if (wait)
		_nd_lock(&wm.lock);
	else if (!_nd_trylock(&wm.lock))
		return;
	if (wait && wm.mode != 0 && __atomic_load_n(&wm.stamp, __ATOMIC_RELAXED) >= now) {
		_nd_unlock(&wm.lock); /* read by another thread meanwhile */
		return;
	}
	uint64_t avail[g.node_limit];
	if (_nd_topo_node_avail(avail, g.node_limit) < 0) {
		__atomic_store_n(&wm.mode, -1, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(&wm.mode, 1, __ATOMIC_RELAXED);
		for (int n = 0; n < g.node_limit; n++) {
			arena_t *a = &g.arenas[n];
			uint64_t c = __atomic_load_n(&a->committed, __ATOMIC_RELAXED);
			__atomic_store_n(&a->wm_c_prev, __atomic_load_n(&a->wm_c_last, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
			__atomic_store_n(&a->wm_c_last, c, __ATOMIC_RELAXED);
			__atomic_store_n(&a->wm_avail, avail[n] >> ND_PAGE_SHIFT, __ATOMIC_RELAXED);
		}
	}
	__atomic_store_n(&wm.stamp, now, __ATOMIC_RELEASE);
	_nd_unlock(&wm.lock);
}

/* May node na commit need more fresh pages? */
static bool room_ok(arena_t *na, uint64_t need)
{
	uint64_t now = _nd_os_now_ns();
	/* mode: written under wm.lock, read here without it */
	if (__atomic_load_n(&wm.mode, __ATOMIC_ACQUIRE) == 0)
		wm_read(now, true);
	else if (now - __atomic_load_n(&wm.stamp, __ATOMIC_ACQUIRE) >= WM_REREAD_NS)
		wm_read(now, false);
	if (__atomic_load_n(&wm.mode, __ATOMIC_RELAXED) < 0) {
		uint64_t f = _nd_topo_node_free(na->node);
		return f == UINT64_MAX || f >= (need << ND_PAGE_SHIFT) + na->floor;
	}
	int64_t want = (int64_t)(need + WM_SLACK_PAGES);
	int64_t est = wm_estimate(na);
	uint64_t c_last = __atomic_load_n(&na->wm_c_last, __ATOMIC_RELAXED);
	if (est < want && (__atomic_load_n(&na->committed, __ATOMIC_RELAXED) != c_last ||
			   __atomic_load_n(&na->wm_c_prev, __ATOMIC_RELAXED) != c_last)) {
		wm_read(now, true);
		est = wm_estimate(na);
		if (est < want) { /* the older baseline may still hold runs touched since: once more */
			wm_read(_nd_os_now_ns(), true);
			est = wm_estimate(na);
		}
	}
	return est >= want;
}

/* Charges n pages to node na: hard capacity, and on a real node the
 * headroom for check_pages fresh pages (0: no check). */
static bool cap_take(arena_t *na, uint64_t n, uint64_t check_pages)
{
	if (!na->usable)
		return false;
	uint64_t u = __atomic_add_fetch(&na->used, n, __ATOMIC_RELAXED);
	if (u > na->cap) {
		__atomic_sub_fetch(&na->used, n, __ATOMIC_RELAXED);
		return false;
	}
	_nd_topo_account(na->node, (int64_t)(n << ND_PAGE_SHIFT));
	if (check_pages && g.check_free && !room_ok(na, check_pages)) {
		cap_give(na, n);
		return false;
	}
	return true;
}

/* ---- setup (g.lock held) ---- ---------------------------------- */

static unsigned slot_shift_wanted(const _nd_topo_t *t)
{
	int64_t opt = _nd_opt_int(ND_OPT_ARENA_RESERVE);
	unsigned shift;
	if (opt > 0) {
		shift = ceil_log2((uint64_t)opt);
		if (shift < SLOT_SHIFT_MIN) {
			_nd_msg_warn("option arena_reserve (NODALLOC_ARENA_RESERVE): %lld bytes is below the minimum slot of "
				     "%d MiB; using %d MiB (no allocation can be larger)",
				     (long long)opt, 1 << (SLOT_SHIFT_MIN - 20), 1 << (SLOT_SHIFT_MIN - 20));
			shift = SLOT_SHIFT_MIN;
		}
	} else {
		/* 2x the largest node, and the mixed slot must hold one spread
		 * run over all of them (16 x 256 MiB: a 512 MiB slot refused
		 * interleave:all of 60% of the machine as too large) */
		uint64_t m = 0, sum = 0;
		for (int n = 0; n < t->node_limit; n++)
			if (t->has_mem[n]) {
				sum += t->mem_total[n];
				if (t->mem_total[n] > m)
					m = t->mem_total[n];
			}
		shift = ceil_log2(2 * m > sum ? 2 * m : sum ? sum : 1);
		if (shift < SLOT_SHIFT_DEFAULT_MIN)
			shift = SLOT_SHIFT_DEFAULT_MIN;
	}
	if (shift > SLOT_SHIFT_MAX)
		shift = SLOT_SHIFT_MAX;
	/* Every slot together within TOTAL_SHIFT_MAX of address space. */
	while (shift > SLOT_SHIFT_MIN && ((uint64_t)(t->node_limit + 1) << shift) > (1ull << TOTAL_SHIFT_MAX))
		shift--;
	return shift;
}

static bool streq_nocase(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if ((*a | 0x20) != *b)
			return false;
	return *a == *b;
}

static void read_options(void)
{
	g.strict = _nd_opt_int(ND_OPT_STRICT) != 0;
	g.huge_spread = _nd_opt_int(ND_OPT_HUGE_SPREAD) != 0;
	const char *pm = _nd_opt_str(ND_OPT_PURGE);
	g.advice = MADV_DONTNEED;
	if (streq_nocase(pm, "free"))
		g.advice = MADV_FREE;
	else if (pm[0] && !streq_nocase(pm, "dontneed"))
		_nd_opt_config_error("NODALLOC_PURGE: bad value '%s' (expected dontneed or free); using dontneed", pm);
	int64_t th = _nd_opt_int(ND_OPT_PURGE_THRESHOLD);
	g.purge_pages = th <= (int64_t)ND_PAGE_SIZE ? 1 : ((uint64_t)th + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT;
	g.purge_order = ceil_log2(g.purge_pages);
	if (g.purge_order > PURGE_ORDER_MAX) { /* keeps dirty blocks small */
		g.purge_order = PURGE_ORDER_MAX;
		g.purge_pages = 1ull << PURGE_ORDER_MAX;
	}
	g.dirty_limit = 4ull << g.purge_order;
	if (g.dirty_limit < 256)
		g.dirty_limit = 256;
}

static int setup_locked(void)
{
	/* From here on the topology cannot be replaced: slots follow it. */
	_nd_topo_freeze();
	const _nd_topo_t *t = _nd_topo();
	if (t->node_limit < 1 || t->node_limit > ND_MAX_NODES) {
		_nd_msg_error("page: bad node_limit %d from the topology", t->node_limit);
		return -1;
	}
	read_options();
	int nslots = t->node_limit + 1;
	unsigned shift = slot_shift_wanted(t), first = shift;
	void *res = NULL, *desc = NULL;
	size_t total = 0, desc_bytes = 0;
	int err = 0;
	for (;;) {
		total = (size_t)nslots << shift;
		desc_bytes = (total >> ND_PAGE_SHIFT) * sizeof(_nd_pagedesc_t);
		res = _nd_os_mmap_aligned(total, (size_t)1 << shift, true, &err);
		if (res) {
			desc = _nd_os_mmap(desc_bytes, true, &err);
			if (desc)
				break;
			_nd_os_munmap(res, total);
		}
		if (shift <= SLOT_SHIFT_MIN) {
			uint64_t room = _nd_os_as_room();
			if (room != UINT64_MAX)
				_nd_msg_error("initialization failed: cannot reserve %d arena slots of %zu MiB (errno %d; "
					      "the address space limit, ulimit -v, leaves %llu MiB); every allocation fails with ENOMEM",
					      nslots, ((size_t)1 << shift) >> 20, -err, (unsigned long long)(room >> 20));
			else
				_nd_msg_error("initialization failed: cannot reserve %d arena slots of %zu MiB (errno %d); "
					      "every allocation fails with ENOMEM", nslots, ((size_t)1 << shift) >> 20, -err);
			return -1;
		}
		shift--;
	}
	if (shift != first)
		_nd_msg_warn("page: could not reserve %d slots of %zu MiB; using %zu MiB slots", nslots,
			     ((size_t)1 << first) >> 20, ((size_t)1 << shift) >> 20);
	size_t ab = ND_ALIGN_UP((size_t)nslots * sizeof(arena_t), ND_PAGE_SIZE);
	arena_t *arenas = _nd_os_mmap(ab, false, &err);
	if (!arenas) {
		_nd_os_munmap(res, total);
		_nd_os_munmap(desc, desc_bytes);
		_nd_msg_error("page: cannot map %zu bytes of arena headers (errno %d)", ab, -err);
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
	uint64_t slot_pages = 1ull << g.order_max;
	for (int s = 0; s < nslots; s++) {
		arena_t *a = &arenas[s];
		a->lock = (_nd_lock_t)ND_LOCK_INIT;
		a->mixed = s == t->node_limit;
		a->node = a->mixed ? -1 : s;
		a->base = (char *)res + ((size_t)s << shift);
		a->desc = (_nd_pagedesc_t *)desc + ((size_t)s << g.order_max);
		for (unsigned o = 0; o <= MAX_ORDER; o++)
			a->head[o] = NIL;
		a->usable = a->mixed || t->has_mem[s];
		a->cap = UINT64_MAX;
		if (!a->usable)
			continue;
		if (!a->mixed) {
			if (t->emulated)
				a->cap = t->mem_total[s] >> ND_PAGE_SHIFT;
			a->floor = t->mem_total[s] / 64;
			if (a->floor < ((uint64_t)32 << 20))
				a->floor = (uint64_t)32 << 20;
			if (g.bind) {
				int r = bind_range(a->base, (size_t)1 << shift, s);
				if (r == -22 /* EINVAL: node not allowed */) {
					_nd_msg_warn("page: node %d refused by mbind (not in Mems_allowed?); not used", s);
					a->usable = false;
					continue;
				}
				if (r < 0 && !warned_mbind++)
					_nd_msg_warn("page: mbind of node %d's slot failed (errno %d); placement left to the kernel", s, -r);
				/* The slot's descriptors live on its node too, as the
				 * kernel keeps struct page with its memory; preferred,
				 * never bind: metadata must not fail on a full node. */
				uint64_t one[ND_MAX_NODES / 64] = { 0 };
				one[s / 64] |= 1ull << (s % 64);
				_nd_os_mbind(a->desc, ((size_t)1 << g.order_max) * sizeof(_nd_pagedesc_t),
					     ND_MPOL_PREFERRED, one, (unsigned long)g.node_limit, 0);
			}
			stats_bytes(_nd_stats_reserved, s, (int64_t)slot_pages);
		}
		list_push(a, 0, g.order_max, 0);
	}
	return 0;
}

static bool setup_slow(void)
{
	if (__atomic_load_n(&g.failed, __ATOMIC_RELAXED))
		return false; /* reported once; no retry per malloc */
	_nd_lock(&g.lock);
	bool ok = g.ready || (!g.failed && setup_locked() == 0);
	if (ok)
		__atomic_store_n(&g.ready, 1, __ATOMIC_RELEASE);
	else
		__atomic_store_n(&g.failed, 1, __ATOMIC_RELAXED);
	_nd_unlock(&g.lock);
	return ok;
}

static inline bool ensure_setup(void)
{
	if (nd_likely(__atomic_load_n(&g.ready, __ATOMIC_ACQUIRE)))
		return true;
	return setup_slow();
}

int _nd_page_init(void)
{
	/* Arenas are built on the first allocation, so that an emulated
	 * topology or options set by a test before it are honoured. */
	return 0;
}

/* ---- allocation from one node's slot ----------------------------------- */

static void mark_run(arena_t *a, uint32_t i, uint64_t n, int node)
{
	_nd_pagedesc_t *h = &a->desc[i];
	h->state = ND_PG_RUN;
	h->order = 0;
	h->npages = n;
	h->use = ND_USE_NONE;
	h->user = 0;
	h->node = node;
}

static void *node_alloc(int node, uint64_t n, uint64_t align)
{
	if (node < 0 || node >= g.node_limit)
		return NULL;
	arena_t *a = &g.arenas[node];
	unsigned k = ceil_log2(n > align ? n : align);
	if (!a->usable || k > g.order_max)
		return NULL;
	bool maybe_fresh = __atomic_load_n(&a->dirty_free, __ATOMIC_RELAXED) < n;
	if (!cap_take(a, n, maybe_fresh ? n : 0))
		return NULL;
	_nd_lock(&a->lock);
	uint64_t d;
	uint32_t i = take_block(a, k, &d);
	if (i == NIL && a->dirty_free && purge_slot(a)) /* dirty blocks kept buddies apart */
		i = take_block(a, k, &d);
	if (i == NIL) {
		_nd_unlock(&a->lock);
		cap_give(a, n);
		return NULL;
	}
	uint64_t rd = d;
	if (n < (1ull << k))
		rd -= give_tail(a, i, k, d, n);
	mark_run(a, i, n, node);
	_nd_unlock(&a->lock);
	/* The run's pages are ours now: mark them without the lock. Small
	 * runs carry DIRTY on every page; big ones come from clean blocks
	 * (invariant I) and are purged whole when freed. */
	if (n < g.purge_pages) {
		if (rd < n)
			for (uint64_t j = 0; j < n; j++)
				a->desc[i + j].flags |= ND_PGF_DIRTY;
	} else if (rd) {
		clear_dirty(a, i, n); /* not reached while invariant I holds */
	}
	committed_add(a, (int64_t)(n - rd));
	stats_bytes(_nd_stats_in_use, node, (int64_t)n);
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

/* A run no slot can hold: ENOMEM, and once a warning naming the cause. */
static void *too_big(size_t npages)
{
	static int warned;
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		_nd_msg_warn("an allocation of %zu MiB is larger than an arena slot (%zu MiB, from NODALLOC_ARENA_RESERVE "
			     "or the address space limit); it and any like it fail with ENOMEM",
			     npages >> (20 - ND_PAGE_SHIFT), ((size_t)1 << g.slot_shift) >> 20);
	errno = ENOMEM;
	return NULL;
}

void *_nd_page_alloc_exact(int node, size_t npages, size_t align_pages)
{
	if (!check_args(npages, &align_pages))
		return NULL;
	if (!ensure_setup()) {
		errno = ENOMEM;
		return NULL;
	}
	if (ceil_log2(npages > align_pages ? npages : align_pages) > g.order_max)
		return too_big(npages);
	void *p = node_alloc(node, npages, align_pages);
	if (!p)
		errno = ENOMEM;
	return p;
}

void *_nd_page_alloc(size_t npages, size_t align_pages, const nd_policy_t *pol, int want_node, int *got_node)
{
	if (got_node)
		*got_node = -1;
	if (!check_args(npages, &align_pages))
		return NULL;
	if (!ensure_setup()) {
		errno = ENOMEM;
		return NULL;
	}
	if (ceil_log2(npages > align_pages ? npages : align_pages) > g.order_max)
		return too_big(npages);
	_nd_policy_iter_t it;
	for (int n = _nd_policy_first_n(&it, pol, want_node, npages); n >= 0; n = _nd_policy_next(&it)) {
		void *p = node_alloc(n, npages, align_pages);
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

/* ---- spread runs (the mixed slot) -------------------------------------- */

/* Pages [i, i+n) of the mixed slot, all placed: give their node charges
 * back and forget their node. */
static void spread_release(arena_t *m, uint64_t i, uint64_t n)
{
	uint64_t j = 0;
	while (j < n) {
		int node = m->desc[i + j].node;
		uint64_t k = j;
		while (k < n && m->desc[i + k].node == node) {
			m->desc[i + k].node = -1;
			m->desc[i + k].flags &= (uint8_t)~ND_PGF_PLACED;
			k++;
		}
		if (node >= 0 && node < g.node_limit) {
			arena_t *na = &g.arenas[node];
			cap_give(na, k - j);
			stats_bytes(_nd_stats_in_use, node, -(int64_t)(k - j));
			__atomic_sub_fetch(&na->committed, k - j, __ATOMIC_RELAXED);
			stats_bytes(_nd_stats_committed, node, -(int64_t)(k - j));
		}
		j = k;
	}
}

/* A spread run of at least 2 MiB (so 2 MiB aligned) gets a fresh mapping
 * before it is bound, and again when it is freed. Why: an earlier run at
 * these addresses (a 4 KiB or 32 KiB granule spread, say) left page
 * tables that MADV_DONTNEED does not free, and a 2 MiB range whose PMD
 * holds a page table only ever gets 4 KiB faults: 2 MiB granules had no
 * transparent huge page at all in the VM test bed (mean physically
 * contiguous run 3-55 pages instead of 512). The range is ours (limbo).
 * Same flags as the reservation (MAP_NORESERVE), so the VMAs merge again
 * once the run is gone. With granules of 2 MiB or more (huge_spread), the
 * run also asks for huge pages: with THP "madvise" there are none
 * otherwise, and with defrag "madvise" faults may compact for them. On
 * failure (vm.max_map_count: the split is refused, the old mapping stays)
 * the caller goes on as before; in the rare case where the kernel unmapped
 * the range and then failed, the retry maps it again. Returns 0 or -errno. */
static int spread_fresh(void *p, uint64_t npages, bool huge)
{
	size_t len = (size_t)npages << ND_PAGE_SHIFT;
	int r = _nd_os_mmap_fixed(p, len, true);
	if (r < 0)
		r = _nd_os_mmap_fixed(p, len, true);
	if (r < 0 && !__atomic_exchange_n(&warned_fresh, 1, __ATOMIC_RELAXED))
		_nd_msg_warn("page: fresh mapping of a spread run failed (errno %d): it may get no huge pages", -r);
	if (r == 0 && huge)
		_nd_os_madvise(p, len, MADV_HUGEPAGE);
	return r;
}

/* A spread run's pages per node: committed (mixed pages are committed
 * while placed, purged on free) and in use. */
static void placed_flush(const uint64_t *placed, int L)
{
	for (int n = 0; n < L; n++) {
		committed_add(&g.arenas[n], (int64_t)placed[n]);
		stats_bytes(_nd_stats_in_use, n, (int64_t)placed[n]);
	}
}

static void mixed_give_back(arena_t *m, uint32_t i, uint64_t n)
{
	_nd_lock(&m->lock);
	give_range(m, i, n, false, true);
	_nd_unlock(&m->lock);
}

/*
 * Page-granule interleave (the default 4 KiB granule) is left to the
 * kernel: one mbind(MPOL_INTERLEAVE) over the run instead of one per page.
 * Binding page by page made one VMA per page: 257 MiB of 1 MiB runs over
 * two nodes reached vm.max_map_count (65,530), then mbind failed and
 * pthread_create with it. The kernel puts page p of an anonymous mapping
 * on the set's node number (p's address >> 12) mod |set|, ascending, which
 * is _nd_policy_node_for_granule(pol, address >> 12): the descriptors,
 * statistics and headroom checks say exactly what the kernel will do.
 * Neighbouring runs with the same set share one VMA (equal policies
 * merge), and a freed run keeps its policy (and MADV_NOHUGEPAGE) so the
 * VMA stays whole: the mapping count does not grow with the workload.
 * Only on real nodes, plain interleave, every node of the set usable (the
 * kernel would drop a memoryless one and count differently), no granule
 * falling back (else: stretch by stretch, as before).
 */
static bool kernel_interleave_ok(const nd_policy_t *pol)
{
	if (!g.bind || pol->mode != ND_POLICY_INTERLEAVE)
		return false;
	for (int w = 0; w < ND_MAX_NODES / 64; w++) {
		for (uint64_t b = pol->nodes.bits[w]; b; b &= b - 1) {
			int n = w * 64 + __builtin_ctzll(b);
			if (n >= g.node_limit || !g.arenas[n].usable)
				return false;
		}
	}
	return true;
}

/* fixed: the run's first granule has index first; else the index comes
 * from the thread's spread cursor (which then moves on). */
static void *alloc_spread(size_t npages, const nd_policy_t *pol, bool fixed, uint64_t first)
{
	size_t one = 1;
	if (!check_args(npages, &one))
		return NULL;
	if (!ensure_setup()) {
		errno = ENOMEM;
		return NULL;
	}
	if (!pol)
		pol = _nd_policy_current();
	if (_nd_policy_node_for_granule(pol, 0) < 0) /* not interleave: a plain run */
		return _nd_page_alloc(npages, 1, pol, -1, NULL);
	arena_t *m = &g.arenas[g.node_limit];
	unsigned gs = pol->granularity_shift;
	if (gs > g.order_max)
		gs = g.order_max;
	uint64_t gp = 1ull << gs;
	/* Granules aligned to their size (up to 2 MiB): huge pages stay possible. */
	uint64_t align = gp < (ND_HUGE_SIZE >> ND_PAGE_SHIFT) ? gp : (ND_HUGE_SIZE >> ND_PAGE_SHIFT);
	unsigned k = ceil_log2(npages > align ? npages : align);
	if (k > g.order_max)
		return too_big(npages);
	_nd_lock(&m->lock);
	uint64_t d;
	uint32_t i = take_block(m, k, &d);
	if (i != NIL && npages < (1ull << k))
		give_tail(m, i, k, 0, npages);
	_nd_unlock(&m->lock);
	if (i == NIL) {
		errno = ENOMEM;
		return NULL;
	}
	/* Page-granule interleave on real nodes is the kernel's own (see
	 * kernel_interleave_ok): page p goes to the set's node number
	 * (p's address >> 12) mod |set|, so granule indexes follow the
	 * address. Otherwise the cursor moves by the whole granules only: the
	 * node left with a partial one starts the next run (docs/policy.md). */
	bool kil = !fixed && gs == 0 && kernel_interleave_ok(pol);
	uint64_t g0 = kil ? (uintptr_t)page_addr(m, i) >> ND_PAGE_SHIFT
		: fixed ? first : _nd_policy_spread_start(pol, (uint64_t)npages >> gs, (npages & (gp - 1)) != 0);
	if (npages >= HUGE_PAGES && !kil)
		spread_fresh(page_addr(m, i), npages, g.huge_spread && gs >= ND_HUGE_SHIFT - ND_PAGE_SHIFT);
	/* Place every granule: its node by offset, else that node's fallback
	 * under the policy. The pages are ours (limbo): no lock. Headroom:
	 * each node is checked for its own share of the run (a node that has
	 * room for its share takes it, whatever the run's size), and checked
	 * again, for its share plus what it took over, whenever a granule
	 * falls back to it. This run's pages are counted as committed only at
	 * the end, so the checks see the node as it was plus share[n]. */
	uint64_t ngran = (npages + gp - 1) >> gs;
	int L = g.node_limit;
	uint64_t share[L], placed[L];
	uint8_t checked[L];
	for (int n = 0; n < L; n++)
		share[n] = placed[n] = checked[n] = 0;
	for (uint64_t gi = 0; gi < ngran; gi++) {
		uint64_t s = gi << gs, c = npages - s < gp ? npages - s : gp;
		int want = _nd_policy_node_for_granule(pol, g0 + gi);
		/* Kept for the statistics below (the head's user is reset then). */
		m->desc[i + s].user = (uintptr_t)(want + 1);
		if (want >= 0 && want < L)
			share[want] += c;
	}
	for (uint64_t gi = 0; gi < ngran; gi++) {
		uint64_t s = gi << gs, c = npages - s < gp ? npages - s : gp;
		int want = (int)m->desc[i + s].user - 1, got = -1;
		if (want >= 0 && want < L && checked[want] != 2 &&
		    cap_take(&g.arenas[want], c, checked[want] ? 0 : share[want])) {
			checked[want] = 1;
			got = want;
		} else {
			if (want >= 0 && want < L)
				checked[want] = 2; /* no room for its share: its granules fall back */
			/* want forced: the thread's interleave cursor does not move */
			_nd_policy_iter_t it;
			for (int n = _nd_policy_first_n(&it, pol, want, c); n >= 0; n = _nd_policy_next(&it)) {
				if (n == want || n < 0 || n >= L || checked[n] == 2)
					continue;
				share[n] += c;
				if (cap_take(&g.arenas[n], c, share[n])) {
					checked[n] = 1;
					got = n;
					break;
				}
				share[n] -= c;
			}
		}
		if (got < 0) {
			placed_flush(placed, L);
			for (uint64_t j = 0; j < ngran; j++)
				m->desc[i + (j << gs)].user = 0;
			spread_release(m, i, s); /* undo the granules placed */
			mixed_give_back(m, i, npages);
			errno = ENOMEM;
			return NULL;
		}
		for (uint64_t j = 0; j < c; j++) {
			m->desc[i + s + j].node = got;
			m->desc[i + s + j].flags |= ND_PGF_PLACED;
		}
		placed[got] += c;
		kil &= got == want;
	}
	placed_flush(placed, L);
	/* Bind: the whole run at once when the kernel interleaves it (no
	 * granule fell back), else each stretch of one node. Then count per
	 * granule. */
	if (kil) {
		int r = _nd_os_mbind(page_addr(m, i), (size_t)npages << ND_PAGE_SHIFT, ND_MPOL_INTERLEAVE,
				     pol->nodes.bits, (unsigned long)g.node_limit, 0);
		/* A huge page would put 2 MiB on one node (and reach into
		 * neighbouring runs of a merged VMA). */
		if (r == 0)
			r = _nd_os_madvise(page_addr(m, i), (size_t)npages << ND_PAGE_SHIFT, MADV_NOHUGEPAGE);
		if (r < 0 && !__atomic_exchange_n(&warned_spread_mbind, 1, __ATOMIC_RELAXED))
			_nd_msg_warn("page: mbind of an interleaved run failed (errno %d): pages placed by first touch", -r);
		m->desc[i].flags |= ND_PGF_KIL;
	} else if (g.bind) {
		uint64_t j = 0;
		while (j < npages) {
			int node = m->desc[i + j].node;
			uint64_t e = j;
			while (e < npages && m->desc[i + e].node == node)
				e++;
			int r = bind_range(page_addr(m, i + j), (size_t)(e - j) << ND_PAGE_SHIFT, node);
			if (r < 0 && !__atomic_exchange_n(&warned_spread_mbind, 1, __ATOMIC_RELAXED))
				_nd_msg_warn("page: mbind of a spread run failed (errno %d): granules placed by first touch", -r);
			j = e;
		}
	}
	bool il = pol->mode == ND_POLICY_INTERLEAVE || pol->mode == ND_POLICY_WEIGHTED;
	int cn = cpu_node();
	for (uint64_t gi = 0; gi < ngran; gi++) {
		_nd_pagedesc_t *gd = &m->desc[i + (gi << gs)];
		_nd_stats_count((int)gd->user - 1, gd->node, cn, il);
		gd->user = 0;
	}
	_nd_lock(&m->lock);
	int node0 = m->desc[i].node;
	mark_run(m, i, npages, node0);
	_nd_unlock(&m->lock);
	return page_addr(m, i);
}

void *_nd_page_alloc_spread(size_t npages, const nd_policy_t *pol)
{
	return alloc_spread(npages, pol, false, 0);
}

void *_nd_page_alloc_spread_from(size_t npages, const nd_policy_t *pol, uint64_t first)
{
	return alloc_spread(npages, pol, true, first);
}

/* ---- free and lookups -------------------------------------------------- */

/*
 * Gives pages [i, i + n) of a node slot back to its free lists, as freeing
 * them does: a big range (from a run of at least the purge threshold) is
 * purged first, unlocked, and goes back clean; a small one goes back dirty.
 * Then the dirty limit, capacity and statistics. The slot lock is held on
 * entry iff !big; it is released on return.
 */
static void give_back(arena_t *a, uint64_t i, uint64_t n, bool big)
{
	if (big) {
		purge_pages(a, page_addr(a, i), (size_t)n << ND_PAGE_SHIFT, g.advice);
		committed_add(a, -(int64_t)n);
		_nd_lock(&a->lock);
	}
	give_range(a, i, n, !big, true);
	/* Dirty limit: 4 purge blocks, or 1/8 of what the node has in use. */
	uint64_t lim = __atomic_load_n(&a->used, __ATOMIC_RELAXED) / 8;
	if (a->dirty_free > (lim > g.dirty_limit ? lim : g.dirty_limit))
		purge_slot(a);
	_nd_unlock(&a->lock);
	cap_give(a, n);
	stats_bytes(_nd_stats_in_use, a->node, -(int64_t)n);
}

int _nd_page_free(void *p)
{
	uintptr_t off = (uintptr_t)p - g.base;
	if (off >= g.total || (off & (ND_PAGE_SIZE - 1)))
		return -1;
	arena_t *a = &g.arenas[off >> g.slot_shift];
	uint32_t i = (uint32_t)((off & g.slot_mask) >> ND_PAGE_SHIFT);
	_nd_pagedesc_t *h = &a->desc[i];
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
			/* Always DONTNEED: a page kept by MADV_FREE would stay on
			 * its old node when the range is bound elsewhere. A run
			 * the kernel interleaved keeps its policy (its VMA stays
			 * merged; the next run here binds its range anyway).
			 * Another big run gets a fresh mapping instead
			 * (spread_fresh): also frees its page tables, drops policy
			 * and advice. */
			bool kil = h->flags & ND_PGF_KIL;
			h->flags &= (uint8_t)~ND_PGF_KIL;
			if (kil) {
				purge_pages(a, p, (size_t)n << ND_PAGE_SHIFT, MADV_DONTNEED);
			} else if (n < HUGE_PAGES || spread_fresh(p, n, false) < 0) {
				if (purge_pages(a, p, (size_t)n << ND_PAGE_SHIFT, MADV_DONTNEED) && g.bind)
					_nd_os_mbind(p, (size_t)n << ND_PAGE_SHIFT, ND_MPOL_DEFAULT, NULL, 0, 0);
			}
			spread_release(a, i, n);
			mixed_give_back(a, i, n);
			return 0;
		}
	}
	give_back(a, i, n, n >= g.purge_pages);
	return 0;
}

/* ---- resizing a run in place (realloc) --------------------------------- */

/* Slot of a node-slot run head at p (NULL for the mixed slot or outside),
 * its page index in *idx. */
static arena_t *node_run_slot(void *p, uint32_t *idx)
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
	arena_t *a = node_run_slot(run, &i);
	if (!a)
		return -1;
	uint64_t end_slot = 1ull << g.order_max;
	if (new_npages > end_slot - i)
		return -1;
	/* Unlocked peek: only the owner changes npages of its run. */
	uint64_t n = a->desc[i].npages;
	if (a->desc[i].state != ND_PG_RUN || new_npages <= n)
		return -1;
	uint64_t add = new_npages - n, e = i + new_npages;
	bool maybe_fresh = __atomic_load_n(&a->dirty_free, __ATOMIC_RELAXED) < add;
	if (!cap_take(a, add, maybe_fresh ? add : 0))
		return -1;
	_nd_lock(&a->lock);
	for (uint64_t j = i + n; j < e; j += 1ull << a->desc[j].order) {
		if (a->desc[j].state != ND_PG_FREE) {
			_nd_unlock(&a->lock);
			cap_give(a, add);
			return -1;
		}
	}
	uint64_t rd = 0; /* committed (dirty) pages taken */
	for (uint64_t j = i + n; j < e;) {
		unsigned o = a->desc[j].order;
		uint64_t bl = 1ull << o, d = a->desc[j].npages;
		list_del(a, (uint32_t)j);
		if (j + bl > e)
			d -= give_tail(a, j, o, d, e - j);
		rd += d;
		j += bl;
	}
	a->desc[i].npages = new_npages;
	_nd_unlock(&a->lock);
	/* The new pages are ours (TAILs of our run): flags without the lock. */
	if (new_npages < g.purge_pages) {
		for (uint64_t j = i + n; j < e; j++)
			a->desc[j].flags |= ND_PGF_DIRTY;
	} else if (n < g.purge_pages) {
		clear_dirty(a, i, new_npages); /* small run became big */
	} else if (rd) {
		clear_dirty(a, i + n, add);
	}
	committed_add(a, (int64_t)(add - rd));
	stats_bytes(_nd_stats_in_use, a->node, (int64_t)add);
	return 0;
}

/*
 * Give the tail of a run back, as a free of those pages would: a small
 * run's tail goes back dirty (committed), a big run's is purged first.
 * What stays keeps the invariants of a fresh run of its size.
 */
int _nd_page_shrink(void *run, size_t new_npages)
{
	uint32_t i;
	arena_t *a = node_run_slot(run, &i);
	if (!a || new_npages == 0)
		return -1;
	uint64_t n = a->desc[i].npages;
	if (a->desc[i].state != ND_PG_RUN || new_npages >= n)
		return -1;
	uint64_t cut = n - new_npages, s = i + new_npages;
	/* The tail is ours until given back: no lock for its descriptors. */
	bool big = n >= g.purge_pages;
	if (big && new_npages < g.purge_pages) /* big run became small: its pages count as committed */
		for (uint64_t j = i; j < s; j++)
			a->desc[j].flags |= ND_PGF_DIRTY;
	_nd_lock(&a->lock);
	a->desc[i].npages = new_npages;
	if (big)
		_nd_unlock(&a->lock);
	give_back(a, s, cut, big);
	return 0;
}

_nd_pagedesc_t *_nd_page_desc(const void *p)
{
	uintptr_t off = (uintptr_t)p - g.base;
	if (off >= g.total)
		return NULL;
	return &g.desc[off >> ND_PAGE_SHIFT];
}

int _nd_page_node_of(const void *p)
{
	uintptr_t off = (uintptr_t)p - g.base;
	if (off >= g.total)
		return -1;
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
 * keep the old data until it reclaims).
 */
void _nd_page_zero(void *run, size_t bytes)
{
	char *p = run;
	uintptr_t off = (uintptr_t)p - g.base;
	if (off >= g.total || g.advice != MADV_DONTNEED) {
		memset(p, 0, bytes);
		return;
	}
	if ((int)(off >> g.slot_shift) >= g.node_limit)
		return; /* spread run */
	for (size_t k = 0; k < bytes; k += ND_PAGE_SIZE) {
		size_t len = bytes - k < ND_PAGE_SIZE ? bytes - k : ND_PAGE_SIZE;
		if (g.desc[(off + k) >> ND_PAGE_SHIFT].flags & ND_PGF_DIRTY)
			memset(p + k, 0, len);
	}
}

/* ---- maintenance and introspection ------------------------------------- */

size_t _nd_page_trim(int node)
{
	if (!__atomic_load_n(&g.ready, __ATOMIC_ACQUIRE))
		return 0;
	uint64_t pages = 0;
	for (int s = 0; s < g.node_limit; s++) {
		arena_t *a = &g.arenas[s];
		if (!a->usable || (node >= 0 && node != s))
			continue;
		_nd_lock(&a->lock);
		pages += purge_slot(a);
		_nd_unlock(&a->lock);
	}
	return (size_t)pages << ND_PAGE_SHIFT;
}

static arena_t *arena_by_node(int node)
{
	if (!__atomic_load_n(&g.ready, __ATOMIC_ACQUIRE) || node < -1 || node >= g.node_limit)
		return NULL;
	return &g.arenas[node < 0 ? g.node_limit : node];
}

int _nd_page_info(int node, _nd_page_info_t *out)
{
	if (!ensure_setup())
		return -1;
	arena_t *a = arena_by_node(node);
	if (!a)
		return -1;
	_nd_lock(&a->lock);
	out->usable = a->usable;
	out->slot_bytes = (size_t)1 << g.slot_shift;
	out->slot_pages = 1ull << g.order_max;
	out->free_pages = a->usable ? a->free_pages : 0;
	out->dirty_pages = __atomic_load_n(&a->dirty_free, __ATOMIC_RELAXED);
	out->free_blocks = a->nblocks;
	out->largest_order = -1;
	for (int o = (int)g.order_max; o >= 0; o--)
		if (a->head[o] != NIL) {
			out->largest_order = o;
			break;
		}
	_nd_unlock(&a->lock);
	out->used_pages = __atomic_load_n(&a->used, __ATOMIC_RELAXED);
	out->capacity_pages = a->cap;
	out->committed_pages = __atomic_load_n(&a->committed, __ATOMIC_RELAXED);
	out->purge_pages = g.purge_pages;
	out->purge_order = g.purge_order;
	out->base = a->base;
	return 0;
}

int _nd_page_check(int node, char *err, size_t errlen)
{
	arena_t *a = arena_by_node(node);
	if (!a) {
		_nd_msg_format(err, errlen, "no arena for node %d", node);
		return -1;
	}
	if (!a->usable)
		return 0;
	int rc = 0;
	_nd_lock(&a->lock);
	uint64_t end = 1ull << g.order_max, i = 0, freep = 0, blocks = 0, dirty = 0;
	while (i < end && rc == 0) {
		const _nd_pagedesc_t *d = &a->desc[i];
		if (d->state == ND_PG_FREE) {
			uint64_t n = 1ull << d->order;
			if (i & (n - 1) || i + n > end) {
				_nd_msg_format(err, errlen, "free block at page %llu of order %u misaligned",
					       (unsigned long long)i, d->order);
				rc = -1;
				break;
			}
			/* Flags of big blocks are not scanned: untouched descriptors
			 * would be read (invariant I keeps them clean anyway). */
			uint64_t cd = n <= (1u << PURGE_ORDER_MAX) ? count_dirty(a, i, n) : d->npages;
			if (cd != d->npages) {
				_nd_msg_format(err, errlen, "free block at page %llu: %llu dirty pages, head says %llu",
					       (unsigned long long)i, (unsigned long long)cd, (unsigned long long)d->npages);
				rc = -1;
			}
			if (d->npages && d->npages != n) {
				_nd_msg_format(err, errlen, "free block at page %llu is partly dirty (%llu of %llu)",
					       (unsigned long long)i, (unsigned long long)d->npages, (unsigned long long)n);
				rc = -1;
			}
			if (d->npages && d->order >= g.purge_order) {
				_nd_msg_format(err, errlen, "free block at page %llu of order %u is dirty (invariant I)",
					       (unsigned long long)i, d->order);
				rc = -1;
			}
			uint64_t b = i ^ n;
			const _nd_pagedesc_t *bd = d->order < g.order_max ? &a->desc[b] : NULL;
			bool bothclean = bd && !d->npages && !bd->npages;
			bool bothdirty = bd && d->npages && bd->npages;
			if (bd && bd->state == ND_PG_FREE && bd->order == d->order &&
			    (bothclean || (bothdirty && d->order + 1u < g.purge_order))) {
				_nd_msg_format(err, errlen, "free buddies at pages %llu and %llu not merged",
					       (unsigned long long)i, (unsigned long long)b);
				rc = -1;
			}
			for (uint64_t j = 1; j < n && rc == 0 && n <= 4096; j++)
				if (a->desc[i + j].state != ND_PG_TAIL) {
					_nd_msg_format(err, errlen, "page %llu inside a free block is not a tail",
						       (unsigned long long)(i + j));
					rc = -1;
				}
			freep += n;
			dirty += d->npages;
			blocks++;
			i += n;
		} else if (d->state == ND_PG_RUN) {
			uint64_t n = d->npages;
			if (n == 0 || i + n > end) {
				_nd_msg_format(err, errlen, "run at page %llu has bad length %llu", (unsigned long long)i,
					       (unsigned long long)n);
				rc = -1;
				break;
			}
			for (uint64_t j = 1; j < n && rc == 0; j++)
				if (a->desc[i + j].state != ND_PG_TAIL) {
					_nd_msg_format(err, errlen, "page %llu inside the run at %llu is not a tail",
						       (unsigned long long)(i + j), (unsigned long long)i);
					rc = -1;
				}
			i += n;
		} else {
			_nd_msg_format(err, errlen, "page %llu is a tail outside any block or run (or a run in limbo)",
				       (unsigned long long)i);
			rc = -1;
		}
	}
	if (rc == 0 && (freep != a->free_pages || blocks != a->nblocks || dirty != a->dirty_free)) {
		_nd_msg_format(err, errlen, "walk found %llu free pages in %llu blocks (%llu dirty), counters say %llu in %llu (%llu)",
			       (unsigned long long)freep, (unsigned long long)blocks, (unsigned long long)dirty,
			       (unsigned long long)a->free_pages, (unsigned long long)a->nblocks,
			       (unsigned long long)a->dirty_free);
		rc = -1;
	}
	/* The free lists hold exactly the free heads. */
	uint64_t listed = 0;
	for (unsigned o = 0; o <= g.order_max && rc == 0; o++)
		for (uint32_t j = a->head[o]; j != NIL; j = a->desc[j].next) {
			if (a->desc[j].state != ND_PG_FREE || a->desc[j].order != o) {
				_nd_msg_format(err, errlen, "list of order %u holds page %u that is not such a free head", o, j);
				rc = -1;
				break;
			}
			listed++;
		}
	if (rc == 0 && listed != a->nblocks) {
		_nd_msg_format(err, errlen, "free lists hold %llu blocks, counter %llu", (unsigned long long)listed,
			       (unsigned long long)a->nblocks);
		rc = -1;
	}
	_nd_unlock(&a->lock);
	return rc;
}

