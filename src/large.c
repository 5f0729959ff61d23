// SPDX-License-Identifier: MIT
/*
 * Large allocations (above ND_SLAB_MAX): page runs straight from the page
 * level, under the policy in force. The run head's descriptor carries
 * use = ND_USE_LARGE and user = the requested size (plus USER_REUSED, see
 * below); the run length is the page level's (d->npages).
 *
 * The cache of freed runs (docs/malloc.md "Large blocks"). The page level
 * purges a freed run of at least the purge threshold at once, so a program
 * that frees and allocates multi-megabyte blocks over and over paid a
 * purge and a page fault per 4 KiB every time. A freed node-slot run of at
 * least the purge threshold is kept instead, committed and still a run at
 * the page level, in its node's cache:
 *  - placement: a cached run of node N serves only an allocation whose
 *    policy walk reaches N (the cache is consulted node by node, in the
 *    policy's order); freed memory never changes node. Spread runs (mixed
 *    slot) have a cache of their own, below.
 *  - fit: the smallest cached run that is large enough and aligned. Its
 *    first pages serve the block; the rest, when at least the purge
 *    threshold, is cut off (_nd_page_split: no purge) and stays cached
 *    with the run's expiry, else it stays with the block (usable size).
 *    A rest kept with the block is resident and unused: keeping rests up
 *    to the block's size cost wl_large 40 MiB of peak RSS.
 *  - move: if none fits, a fresh run takes the cached runs' pages, whole
 *    2 MiB pages moved by the kernel (cache_move: no copy, no zeroing),
 *    so the churn of blocks of many sizes reuses its own pages where no
 *    one run is large enough. Blocks of 8 MiB or more take whole 2 MiB
 *    pages (at most 1/4 more), so that they, and the rests cut for them,
 *    move whole.
 *  - grow: if nothing can move (no cached run holds a whole aligned
 *    2 MiB page), the smaller runs, largest first, are grown in place:
 *    into the free pages after the run, else before it
 *    (_nd_page_grow_down: the run's warm pages end the block), part warm,
 *    part fresh. Trying only the largest one, and only upward, missed
 *    where its next pages were another block's.
 *  - shed: when fresh pages are taken (a miss, the grown part of a
 *    cached run, or what moves did not fill), the oldest cached runs, as
 *    many pages as a miss takes, half a growth's or a move's, go back
 *    first (the last one cut), but only those that take the cache and the
 *    fresh pages over a quarter of the bound:
 *    the cache neither simply adds fresh pages to the ones it holds nor
 *    empties itself for them (each shed page is one the kernel zeroes
 *    again). wl_large 200, peak RSS and 4 KiB page faults under
 *    NODALLOC_THP=never (the pages the kernel zeroes): shedding as many
 *    as a miss takes and growing the largest run only, upward, 398 MiB
 *    and 194k; half of both: 384 MiB and 163k (glibc 413 and 183k,
 *    jemalloc 379 and 739k); now 402 MiB and 136k. All of both: 359 MiB
 *    but 193k; half of a miss's and none of a growth's: 411 MiB and 120k,
 *    but a held-out large-block benchmark (the same shape, 300
 *    iterations) 471 MiB (jemalloc 416): now 432 MiB and 180k faults (half
 *    of both: 417 and 211k). Any share of a growth without the quarter:
 *    150k-165k; a quarter of the bound kept with other shares, or 1/3 or
 *    1/5 of it: 123k-175k, some over 1.1x jemalloc's RSS.
 *  - join: a freed run is joined with the cached runs right before and
 *    after it (_nd_page_join: no purge) when the whole fits the bound, so
 *    the churn of blocks of many sizes finds runs large enough to cut.
 *    realloc joins the cached run after a block to grow it, and caches
 *    the tail cut off to shrink it.
 *  - decay: a run stays at most NODALLOC_LARGE_DECAY_MS after its free (a
 *    joined run: after the latest free of its parts).
 *    There is no thread: every large allocation and free checks the
 *    earliest expiry (one atomic load; a clock read if anything is cached).
 *  - bound per node: max(64 MiB, 1/2 of the node's large bytes in use),
 *    at most 1/16 of the node's memory, and CACHE_RUNS runs. Over it the
 *    oldest runs go, but only the bytes the bound needs: the last run to
 *    go is cut and its end stays. (Before: 1/4, whole runs going, no
 *    split or join: wl_large 200 purged 440 MiB, 130 of them during the
 *    churn, and peaked at 474 MiB RSS; now 382, about 70, and 458.)
 *  - pressure: when a fresh run on a node fails (node full, by whatever
 *    rule the page level applies), that node's cache is flushed and the
 *    node tried again before the policy falls back.
 *  - statistics: a cached run is committed but not in use (bytes_in_use
 *    drops on caching, rises on reuse); a reuse counts numa_hit etc. as a
 *    fresh run does.
 *  - calloc: a reused run holds old data, while the page level's DIRTY
 *    flags (_nd_page_zero) say its pages are clean (big runs carry none):
 *    the head's user has USER_REUSED until the size is next recorded, and
 *    _nd_large_zero clears such a run whole.
 *  - a cached run has use = ND_USE_NONE: freeing it again is reported as a
 *    double free.
 *
 * The spread cache (task spread64). Under interleave or weighted, a
 * block above one granule is a spread run; placing one granule by granule
 * and purging it at its free cost a 64 KiB malloc/free pair under
 * interleave:0-1 16 page faults and a purge (redis 64 KiB SET: 27,778
 * req/s, 49,180 local). A freed spread run is kept whole, still placed,
 * bound and committed (in use counted out, per node), in one of
 * SPREAD_LISTS lists by its length's power of two:
 *  - reuse: by an allocation whose fresh run would put every granule on
 *    the node the cached one (or its pages from some whole granule on:
 *    the head and tail are cut off and cached again, tasks spread65 and
 *    spread66) has it on: the index of
 *    its first granule (the thread's spread cursor, moved on as for a
 *    fresh run; the address for the kernel's page interleave) gives the
 *    wanted layout, compared page by page (_nd_page_spread_matches);
 *    where the fresh run would be advised huge (huge_spread), the cached
 *    one must have been (ND_PGF_HUGE: not a smaller granule's run).
 *    So the memory in use is laid out exactly as without the cache, and
 *    each node keeps its share (docs/policy.md).
 *  - lengths: while the cache is on, a spread run is rounded up to 1/8 of
 *    its power of two and then to whole rounds of its policy (when that
 *    adds at most 1/8 again), so that blocks of near sizes share runs and
 *    the cursor keeps its phase (spread_pages).
 *  - a miss sheds the list's oldest runs, as a node cache's miss does;
 *    the bound: max(16 MiB, half the spread runs in use), at most 1/16 of
 *    all nodes' memory, shared by the lists, CACHE_RUNS runs each; a
 *    freed run is joined with its cached neighbours (spread_put).
 *  - no flush before a spread allocation: a fresh run whose granules did
 *    not all land where the policy wants them (a node short, the page
 *    level fell back) is given back, every cache flushed, and the run
 *    placed again; cached runs otherwise leave the placement alone.
 *  - decay, flush (malloc_trim, a node full: _nd_large_flush of any node
 *    flushes the spread cache too, its runs hold pages of every node of
 *    their policy), statistics and calloc as for the node caches.
 *
 * The thread cache (task mixed27). Blocks just above the largest size
 * class (runs of TC_MIN_PAGES..TC_MAX_PAGES pages) are below the purge
 * threshold: each malloc and free was a buddy split or merge under the
 * node's slot lock, which two threads of one node contend for, and the
 * dirty limit purged them at a burst of frees (wl_mixed: 4.4x mimalloc's
 * time, 47k faults against 7.5k). A thread keeps up to TC_RUNS such runs
 * it freed, TC_PAGES pages in all, in a block of its own (the record's
 * lblk, under the record's lblk_lock: see struct _nd_lblk; from meta.c's pool on its CPU's
 * node at its first kept run, given back at its exit: task mixed28, a
 * phase end of wl_mixed frees ~49 such runs a thread, 8 in the record
 * left most of them to the page level), each with its node:
 *  - placement: a run of node N serves the thread's allocation only at N
 *    in its policy's walk (as the node caches'); never spread runs, runs
 *    outside the slots or aligned calls;
 *  - fit: the smallest run of np..np + np/4 pages (the block's usable
 *    size is the run);
 *  - bound: the oldest go to the node cache or page level when a put
 *    would pass TC_RUNS runs, TC_PAGES pages or twice the node's large
 *    pages in use (lnode_t.live: a program that frees its last large
 *    blocks keeps none), and at a put past their
 *    expiry (NODALLOC_LARGE_DECAY_MS; 0 turns it off too); all at the
 *    thread's exit (the first exit hook) and at _nd_large_flush
 *    (malloc_trim, a node full) of every live thread's (task tcsteal28);
 *  - statistics as for the node caches: not in use while kept; counted in
 *    lnode_t.kept (mallinfo2: ordblks, and keepcost: malloc_trim takes them all).
 *
 * Locking: one lock per node (lnode_t.lock), held only to edit that
 * node's list, one per spread list (the same); page-level calls are made
 * without them, but for _nd_page_spread_matches (reads a cached run's
 * descriptors: no lock).
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define CACHE_RUNS 16                  /* runs per node cache */
#define CACHE_MIN ((uint64_t)64 << 20) /* bytes a node may always cache */
/* bytes the spread cache may always keep: with prefixes reused and runs
 * joined, 16 MiB gave wl_spread 1/3 of the faults 64 MiB did before, at
 * half its peak (docs/arenas.md) */
#define SPREAD_MIN ((uint64_t)16 << 20)
#define SHED_KEEP 4                    /* shedding keeps 1/SHED_KEEP of the bound cached */
#define USER_REUSED ((uintptr_t)1 << 63)
#define MOVE_PAGES ((uint64_t)ND_HUGE_SIZE >> ND_PAGE_SHIFT) /* the unit cache_move moves: 2 MiB */
#define ROUND_PAGES (4 * MOVE_PAGES) /* blocks this large take whole 2 MiB pages */
/* the thread cache (see the header): runs above the largest size class
 * up to TC_MAX_PAGES pages, TC_PAGES pages a thread */
#define TC_MIN_PAGES ((ND_SLAB_MAX >> ND_PAGE_SHIFT) + 1)
#define TC_MAX_PAGES 64
#define TC_RUNS 128   /* runs a thread keeps (a phase end of wl_mixed frees ~49 of 9..16 pages and more) */
#define TC_PAGES 1024 /* pages a thread keeps: 4 MiB, */
#define TC_PAGES_COLD 128 /* and after TC_COLD_PUTS puts in a row with no take between */
#define TC_COLD_PUTS 64
_Static_assert(TC_MAX_PAGES <= ND_PAGE_SIZE && TC_RUNS > 0,
	       "a thread cache entry's pages - 1 fit its address's low bits");
/* lnode_t.kept's count of one kept run of np pages: runs above bit 32,
 * pages below (at most TC_PAGES a thread) */
#define TC_KEPT(np) ((int64_t)1 << 32 | (int64_t)(np))

typedef struct cached {
	char *p;
	uint64_t npages;
	uint64_t due;   /* expiry: free time + delay (ns) */
} cached_t;

typedef struct lnode {
	_nd_lock_t lock;       /* protects n, run[], bytes */
	int n;                 /* cached runs, oldest first; stored atomically (peeked without the lock) */
	uint64_t bytes;        /* their bytes */
	int64_t live;          /* atomic: pages of this node's large runs in use (node slot, or outside it) */
	int64_t kept;          /* atomic: the threads' kept runs of this node, TC_KEPT(pages) each (statistics) */
	cached_t run[CACHE_RUNS];
} __attribute__((aligned(ND_CACHE_LINE))) lnode_t;

static lnode_t lnodes[ND_MAX_NODES];
/* Freed spread runs (mixed slot), kept placed and bound: see the header.
 * SPREAD_LISTS lists, a run's by its length's power of two (mod
 * SPREAD_LISTS), each with a 1/SPREAD_LISTS share of the bound; their
 * live is unused (spread_live). A page of their own: .bss is sorted by
 * alignment (CMakeLists.txt), and more cache-line aligned objects pushed
 * the small scalars every process touches onto a third page
 * (test_init_footprint: 24 KiB of .bss resident, at most 20). */
#define SPREAD_LISTS 4
static union {
	lnode_t l[SPREAD_LISTS];
	char page[ND_PAGE_SIZE];
} spread_page __attribute__((aligned(ND_PAGE_SIZE)));
ND_LOCK_ARRAY(spread_lock_class, spread_page.l, lock, SPREAD_LISTS, NULL, ND_RANK_LARGE_SPREAD);

static lnode_t *spread_list(uint64_t np)
{
	return &spread_page.l[(63 - __builtin_clzll(np)) % SPREAD_LISTS];
}
/* atomic: pages of the large runs in use that are no node slot's (spread
 * runs of the mixed slot): with the nodes' live, every large run in use
 * (_nd_large_usage) */
static int64_t spread_live;
static int lnodes_used; /* highest node index cached or counted + 1 (atomic), for fork */
ND_LOCK_ARRAY(lnode_lock_class, lnodes, lock, 0, &lnodes_used, ND_RANK_LARGE_CACHE);

/* Set once by setup(); read without lock after ready. */
static struct {
	volatile int ready;     /* 0 not yet, 1 done */
	uint64_t delay_ns;      /* 0: cache off */
	uint64_t purge_pages;   /* runs this large are cached (the page level purges them) */
	uintptr_t mixed_lo, mixed_hi; /* the mixed slot: its runs go to the spread cache */
	uint64_t due;           /* atomic: earliest expiry of any cached run, UINT64_MAX if none */
	int no_move;            /* atomic: the kernel cannot move pages (_nd_os_remap_pages) */
} c = { .due = UINT64_MAX };
/* A field of c set by setup() (racing setups store it again) */
#define cfg(f) ND_LOAD_RELAXED(c.f)

static void *tc_take(int node, uint64_t np);
static uint64_t tc_flush(_nd_thread_t *t, int node);
struct tc_steal {
	int node;       /* runs of this node (-1: any) */
	uint64_t bytes; /* their bytes */
};
static void tc_exit(_nd_thread_t *t);

static void setup(void)
{
	if (__atomic_load_n(&c.ready, __ATOMIC_ACQUIRE))
		return;
	/* Idempotent: racing threads store the same values, atomically (and
	 * the readers load them with cfg()): plain, ThreadSanitizer reported
	 * the race of two first large blocks at once (tsan_large_setup). */
	int64_t ms = _nd_opt_int(ND_OPT_LARGE_DECAY_MS);
	if (ms < 0)
		_nd_opt_config_error("NODALLOC_LARGE_DECAY_MS: negative value %lld: freed large blocks are not cached", (long long)ms);
	_nd_page_info_t mi;
	if (_nd_page_info(-1, &mi) == 0) {
		__atomic_store_n(&c.purge_pages, mi.purge_pages ? mi.purge_pages : 1, __ATOMIC_RELAXED);
		__atomic_store_n(&c.mixed_lo, (uintptr_t)mi.base, __ATOMIC_RELAXED);
		__atomic_store_n(&c.mixed_hi, (uintptr_t)mi.base + mi.slot_bytes, __ATOMIC_RELAXED);
		/* not under an address space limit: a cached run keeps its
		 * address space, which a slab refill (below this layer) cannot
		 * flush: small objects failed after large blocks were freed
		 * (test_page_aslimit_frag) */
		if (ms > 0 && !_nd_page_lazy())
			__atomic_store_n(&c.delay_ns, (uint64_t)(ms > INT64_MAX / 1000000 ? INT64_MAX / 1000000 : ms) * 1000000u,
					 __ATOMIC_RELAXED);
	}
	_nd_thread_set_exit_first(tc_exit);
	__atomic_store_n(&c.ready, 1, __ATOMIC_RELEASE);
}

/* p is in the mixed slot (spread runs) */
static bool in_mixed(const void *p)
{
	return (uintptr_t)p - cfg(mixed_lo) < cfg(mixed_hi) - cfg(mixed_lo);
}

/* Node of a node-slot run, or of a run outside the slots (outrun.c), at
 * p; else -1 (mixed slot, foreign). */
static int slot_node(const void *p)
{
	if (in_mixed(p))
		return -1;
	int n = _nd_page_node_of(p);
	return n >= 0 && n < ND_MAX_NODES ? n : -1;
}

/* Before node's cache lock is first taken; raised under lnodes[0]'s lock
 * (lock.c, ordered with fork's prepare): called with no cache lock held. */
static void note_node(int node)
{
	_nd_lock_count_raise(&lnode_lock_class, node + 1);
}

static void live_add(int node, int64_t pages)
{
	if (node < 0) {
		__atomic_add_fetch(&spread_live, pages, __ATOMIC_RELAXED);
		return;
	}
	note_node(node);
	__atomic_add_fetch(&lnodes[node].live, pages, __ATOMIC_RELAXED);
}

static void due_min(uint64_t t)
{
	uint64_t d = __atomic_load_n(&c.due, __ATOMIC_RELAXED);
	while (t < d && !__atomic_compare_exchange_n(&c.due, &d, t, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

size_t _nd_large_cache_limit(int node)
{
	if (node < 0 || node >= ND_MAX_NODES)
		return 0;
	int64_t live = __atomic_load_n(&lnodes[node].live, __ATOMIC_RELAXED);
		uint64_t lim = live > 0 ? ((uint64_t)live << ND_PAGE_SHIFT) / 2 : 0;
	if (lim < CACHE_MIN)
		lim = CACHE_MIN;
	const _nd_topo_t *t = _nd_topo();
	uint64_t mem = node < t->node_limit ? t->mem_total[node] : 0;
	if (mem && lim > mem / 16)
		lim = mem / 16;
	return (size_t)lim;
}

void _nd_large_usage(uint64_t *in_use, uint64_t *cached, uint64_t *runs)
{
	int64_t live = __atomic_load_n(&spread_live, __ATOMIC_RELAXED);
	uint64_t b = 0, r = 0;
	int nn = __atomic_load_n(&lnodes_used, __ATOMIC_RELAXED);
	for (int n = 0; n < nn; n++) {
		lnode_t *ln = &lnodes[n];
		live += __atomic_load_n(&ln->live, __ATOMIC_RELAXED);
		if (!__atomic_load_n(&ln->n, __ATOMIC_RELAXED))
			continue; /* nothing cached: no lock */
		_nd_lock(&ln->lock);
		b += ln->bytes;
		r += (uint64_t)ln->n;
		_nd_unlock(&ln->lock);
	}
	for (int k = 0; k < SPREAD_LISTS; k++) {
		lnode_t *ln = &spread_page.l[k];
		if (!__atomic_load_n(&ln->n, __ATOMIC_RELAXED))
			continue;
		_nd_lock(&ln->lock);
		b += ln->bytes;
		r += (uint64_t)ln->n;
		_nd_unlock(&ln->lock);
	}
	*in_use = live > 0 ? (uint64_t)live << ND_PAGE_SHIFT : 0; /* a snapshot: no wrap-around */
	*cached = b;
	*runs = r;
}

void _nd_large_kept(uint64_t *bytes, uint64_t *runs)
{
	uint64_t b = 0, r = 0;
	int nn = __atomic_load_n(&lnodes_used, __ATOMIC_RELAXED);
	for (int n = 0; n < nn; n++) {
		int64_t k = __atomic_load_n(&lnodes[n].kept, __ATOMIC_RELAXED);
		if (k > 0) { /* a snapshot: another thread's put and take may cross */
			b += ((uint64_t)k & 0xffffffffu) << ND_PAGE_SHIFT;
			r += (uint64_t)k >> 32;
		}
	}
	*bytes = b;
	*runs = r;
}

size_t _nd_large_cached(int node)
{
	/* a node not counted has nothing cached, and its lock is fork's only once counted */
	if (node < 0 || node >= __atomic_load_n(&lnodes_used, __ATOMIC_RELAXED))
		return 0;
	lnode_t *ln = &lnodes[node];
	_nd_lock(&ln->lock);
	uint64_t b = ln->bytes;
	_nd_unlock(&ln->lock);
	return (size_t)b;
}

/* Removes entry k of ln (lock held), keeping the order. */
static cached_t take_entry(lnode_t *ln, int k)
{
	ND_ASSERT(k >= 0 && k < ln->n, "a cached entry taken exists");
	cached_t r = ln->run[k];
	ND_ASSERT(ln->bytes >= r.npages << ND_PAGE_SHIFT, "cached bytes count every cached run");
	__atomic_store_n(&ln->n, ln->n - 1, __ATOMIC_RELAXED);
	memmove(&ln->run[k], &ln->run[k + 1], (size_t)(ln->n - k) * sizeof(cached_t));
	ln->bytes -= r.npages << ND_PAGE_SHIFT;
	return r;
}

/* Gives runs taken out of node's cache back to the page level (which
 * purges them and counts them out of use: they count as in use again for
 * that moment, since caching took them out). */
static uint64_t release(int node, const cached_t *out, int n)
{
	uint64_t bytes = 0;
	for (int i = 0; i < n; i++) {

		uint64_t b = out[i].npages << ND_PAGE_SHIFT;
		if (node < 0)
			_nd_page_spread_in_use(out[i].p, out[i].npages, 1, NULL);
		else
			_nd_stats_in_use(node, (int64_t)b);
		if (_nd_page_free(out[i].p) != 0)
			_nd_msg_fatal("large: cached run %p is no longer a page run", (void *)out[i].p);
		bytes += b;
	}
	return bytes;
}

/* The runs of ln (node's cache; -1: the spread cache) past their expiry
 * go back; returns the earliest expiry of those that stay. */
static uint64_t decay_list(lnode_t *ln, int node, uint64_t now)
{
	if (!__atomic_load_n(&ln->n, __ATOMIC_RELAXED))
		return UINT64_MAX;
	cached_t out[CACHE_RUNS];
	int nout = 0;
	uint64_t next = UINT64_MAX;
	_nd_lock(&ln->lock);
	for (int k = 0; k < ln->n;) {
		if (ln->run[k].due <= now) {
			out[nout++] = take_entry(ln, k);
		} else {
			if (ln->run[k].due < next)
				next = ln->run[k].due;
			k++;
		}
	}
	_nd_unlock(&ln->lock);
	release(node, out, nout);
	return next;
}

/* Decay: free every run past its expiry. The one thread that claims the
 * due time (resetting it) scans; runs that stay, and runs cached
 * meanwhile, lower it again. */
static void decay(void)
{
	uint64_t due = __atomic_load_n(&c.due, __ATOMIC_RELAXED);
	if (nd_likely(due == UINT64_MAX))
		return;
	uint64_t now = _nd_os_now_ns();
	if (now < due || !__atomic_compare_exchange_n(&c.due, &due, UINT64_MAX, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	int nn = __atomic_load_n(&lnodes_used, __ATOMIC_RELAXED);
	for (int node = 0; node < nn; node++)
		due_min(decay_list(&lnodes[node], node, now));
	for (int k = 0; k < SPREAD_LISTS; k++)
		due_min(decay_list(&spread_page.l[k], -1, now));
}

/* Every run of ln (node's cache; -1: the spread cache) goes back: bytes. */
static uint64_t flush_list(lnode_t *ln, int node)
{
	if (!__atomic_load_n(&ln->n, __ATOMIC_RELAXED))
		return 0;
	cached_t out[CACHE_RUNS];
	int nout = 0;
	_nd_lock(&ln->lock);
	while (ln->n)
		out[nout++] = take_entry(ln, 0);
	_nd_unlock(&ln->lock);
	return release(node, out, nout);
}

/* _nd_thread_each's call: t's kept runs of arg's node (-1: any) back,
 * under t's lblk_lock (a live owner's put or take waits); thread_lock held */
static void tc_steal(_nd_thread_t *t, void *arg)
{
	struct tc_steal *ts = arg;
	if (!__atomic_load_n(&t->lblk, __ATOMIC_RELAXED)) /* none yet, or exited: no lock */
		return;
	_nd_lock(&t->lblk_lock);
	ts->bytes += tc_flush(t, ts->node);
	_nd_unlock(&t->lblk_lock);
}

size_t _nd_large_flush(int node)
{
	int nn = __atomic_load_n(&lnodes_used, __ATOMIC_RELAXED);
	/* every thread's kept runs, the caller's included: a node full or
	 * malloc_trim must not fail while other live threads keep up to
	 * TC_PAGES pages each (task tcsteal28) */
	struct tc_steal ts = { .node = node };
	if (cfg(delay_ns))
		_nd_thread_each(tc_steal, &ts);
	uint64_t bytes = ts.bytes;
	for (int n = node < 0 ? 0 : node; n < nn && (node < 0 || n == node); n++)
		bytes += flush_list(&lnodes[n], n);
	/* cached spread runs hold pages of every node of their policy */
	for (int k = 0; k < SPREAD_LISTS; k++)
		bytes += flush_list(&spread_page.l[k], -1);
	return (size_t)bytes;
}

/* Puts r in ln's list (lock held) at the place its expiry gives it (the
 * list stays oldest first), first moving the oldest runs to out[] (*nout)
 * while the list is full or over lim. *spare (may be NULL): bytes of the
 * last run moved out that the bound did not need to lose. */
static void insert(lnode_t *ln, cached_t r, uint64_t lim, cached_t *out, int *nout, uint64_t *spare)
{
	uint64_t bytes = r.npages << ND_PAGE_SHIFT;
	while (ln->n && (ln->n == CACHE_RUNS || ln->bytes + bytes > lim)) {
		uint64_t over = ln->n < CACHE_RUNS ? ln->bytes + bytes - lim : 0;
		out[*nout] = take_entry(ln, 0);
		uint64_t b = out[(*nout)++].npages << ND_PAGE_SHIFT;
		if (spare)
			*spare = over && b > over ? b - over : 0;
	}
	int at = ln->n;
	while (at > 0 && ln->run[at - 1].due > r.due)
		at--;
	memmove(&ln->run[at + 1], &ln->run[at], (size_t)(ln->n - at) * sizeof(cached_t));
	ln->run[at] = r;
	__atomic_store_n(&ln->n, ln->n + 1, __ATOMIC_RELAXED);
	ln->bytes += bytes;
}

/* Puts r (taken from node's cache, not in use) back with its expiry;
 * given back to the page level if the list filled meanwhile. */
static void put_back(int node, cached_t r)
{
	lnode_t *ln = &lnodes[node];
	cached_t out[1];
	int nout = 0;
	_nd_lock(&ln->lock);
	if (ln->n < CACHE_RUNS) {
		insert(ln, r, UINT64_MAX, out, &nout, NULL);
		r.p = NULL;
	}
	_nd_unlock(&ln->lock);
	if (r.p)
		release(node, &r, 1);
	else /* a decay pass may have run while it was out */
		due_min(r.due);
}

/* Gives the runs out[0..n) taken from node's cache back, but for the last
 * keep pages of the last one, which are cut off and stay cached with its
 * expiry when they are at least the purge threshold. */
static void release_but(int node, cached_t *out, int n, uint64_t keep)
{
	if (n && node >= 0 && keep >= cfg(purge_pages) && keep < out[n - 1].npages) {
		cached_t *e = &out[n - 1];
		char *t = _nd_page_split(e->p, e->npages - keep);
		if (t) {
			e->npages -= keep;
			put_back(node, (cached_t){ .p = t, .npages = keep, .due = e->due });
		}
	}
	release(node, out, n);
}

/* Takes the runs of ln right before and after *r out (at most 2, into
 * nb) while *r and they fit lim bytes together: their count. */
static int take_neighbours(lnode_t *ln, const cached_t *r, uint64_t lim, cached_t *nb)
{
	int nnb = 0;
	uint64_t joined = r->npages;
	_nd_lock(&ln->lock);
	for (int k = 0; k < ln->n && nnb < 2;) {
		const cached_t *e = &ln->run[k];
		bool before = e->p + (e->npages << ND_PAGE_SHIFT) == r->p, after = e->p == r->p + (r->npages << ND_PAGE_SHIFT);
		if ((before || after) && (joined + e->npages) << ND_PAGE_SHIFT <= lim) {
			joined += e->npages;
			nb[nnb++] = take_entry(ln, k);
		} else {
			k++;
		}
	}
	_nd_unlock(&ln->lock);
	return nnb;
}

/* Joins the runs nb[0..n) (right before or after *r, taken out of a
 * cache: the caller's) with *r by join; those it refuses go to back[]:
 * their count. */
static int join_runs(cached_t *r, const cached_t *nb, int n, cached_t *back, int (*join)(void *, void *))
{
	int nback = 0;
	for (int k = 0; k < n; k++) {
		bool before = nb[k].p < r->p;
		if ((before ? join(nb[k].p, r->p) : join(r->p, nb[k].p)) == 0) {
			if (before)
				r->p = nb[k].p;
			r->npages += nb[k].npages;
		} else {
			back[nback++] = nb[k];
		}
	}
	return nback;
}

/* Keeps a freed run of node (at least the purge threshold), joined with
 * the cached runs right before and after it when the whole fits the
 * bound: the churn of blocks of many sizes then finds one run to cut a
 * block from, where separate pieces would each be too small (and be
 * given back, and faulted in again). false: not cached (larger than the
 * node's bound); the caller frees it. */
static bool cache_put(int node, char *p, uint64_t np)
{
	uint64_t bytes = np << ND_PAGE_SHIFT, lim = _nd_large_cache_limit(node);
	if (bytes > lim)
		return false;
	ND_ASSERT(_nd_page_desc(p)->state == ND_PG_RUN && _nd_page_desc(p)->use == ND_USE_NONE &&
			  _nd_page_desc(p)->npages == np,
		  "a cached run is a whole page run that no one uses");
	lnode_t *ln = &lnodes[node];
	cached_t r = { .p = p, .npages = np, .due = _nd_os_now_ns() + cfg(delay_ns) };
	cached_t nb[2]; /* the neighbours taken out: before, after */
	note_node(node);
	int nnb = take_neighbours(ln, &r, lim, nb);
	/* The neighbours are ours while out of the list: join unlocked. */
	cached_t back[2];
	int nback = join_runs(&r, nb, nnb, back, _nd_page_join); /* none back: both are big runs */
	cached_t out[CACHE_RUNS + 2];
	int nout = 0;
	uint64_t spare = 0;
	_nd_lock(&ln->lock);
	insert(ln, r, lim, out, &nout, &spare);
	for (int k = 0; k < nback; k++)
		insert(ln, back[k], lim, out, &nout, NULL);
	_nd_unlock(&ln->lock);
	due_min(r.due);
	_nd_stats_in_use(node, -(int64_t)bytes);
	/* Over the bound, only the excess goes: the last run moved out is cut
	 * and its end stays (giving back whole runs, often joined ones, purged
	 * 423 MiB instead of 382 in wl_large 200, faulted in again). */
	release_but(node, out, nout, nback ? 0 : spare >> ND_PAGE_SHIFT);
	return true;
}

/* The cached run of node starting at p, taken out of the cache (p NULL
 * if there is none). */
static cached_t take_at(int node, char *p)
{
	lnode_t *ln = &lnodes[node];
	cached_t r = { 0 };
	if (!__atomic_load_n(&ln->n, __ATOMIC_RELAXED))
		return r;
	_nd_lock(&ln->lock);
	for (int k = 0; k < ln->n; k++)
		if (ln->run[k].p == p) {
			r = take_entry(ln, k);
			break;
		}
	_nd_unlock(&ln->lock);
	return r;
}

static void *cache_move(int node, uint64_t np, uint64_t ap, uint64_t *fresh);

/* A cached run of node for np pages aligned to ap pages: the smallest that
 * fits, cut to np pages when the rest is a big run of its own (which stays
 * cached, committed, with its expiry), else whole; if none fits, a fresh
 * run the cached runs' 2 MiB pages move into (cache_move), else the
 * largest smaller one that grows in place; their fresh pages in *fresh.
 * NULL if none serves. */
static void *cache_take(int node, uint64_t np, uint64_t ap, uint64_t *fresh)
{
	lnode_t *ln = &lnodes[node];
	if (!__atomic_load_n(&ln->n, __ATOMIC_RELAXED))
		return NULL;
	char *below[CACHE_RUNS]; /* smaller runs, largest first */
	uint64_t bsize[CACHE_RUNS];
	int fit = -1, nb = 0;
	_nd_lock(&ln->lock);
	for (int k = 0; k < ln->n; k++) {
		const cached_t *r = &ln->run[k];
		if (((uintptr_t)r->p >> ND_PAGE_SHIFT) & (ap - 1))
			continue;
		if (r->npages >= np) {
			if (fit < 0 || r->npages < ln->run[fit].npages)
				fit = k;
			continue;
		}
		int at = nb++;
		for (; at > 0 && bsize[at - 1] < r->npages; at--) {
			below[at] = below[at - 1];
			bsize[at] = bsize[at - 1];
		}
		below[at] = r->p;
		bsize[at] = r->npages;
	}
	cached_t r = { 0 };
	if (fit >= 0)
		r = take_entry(ln, fit);
	_nd_unlock(&ln->lock);
	if (!r.p) {
		void *moved = cache_move(node, np, ap, fresh);
		if (moved)
			return moved;
	}
	/* No fit, nothing to move: the largest smaller run that can grow,
	 * after its end or before its start (see the header). */
	for (int k = 0; !r.p && k < nb; k++) {
		r = take_at(node, below[k]); /* gone meanwhile: p NULL */
		if (!r.p || r.npages >= np)
			continue; /* joined meanwhile: it fits */
		char *low = NULL;
		bool down_aligned = !((((uintptr_t)r.p >> ND_PAGE_SHIFT) - (np - r.npages)) & (ap - 1));
		if (_nd_page_grow(r.p, np) == 0 || (down_aligned && (low = _nd_page_grow_down(r.p, np)))) {
			*fresh = np - r.npages;
			r.p = low ? low : r.p;
			continue;
		}
		put_back(node, r);
		r.p = NULL;
	}
	if (!r.p)
		return NULL;
	ND_ASSERT(_nd_page_desc(r.p)->state == ND_PG_RUN && _nd_page_desc(r.p)->npages >= np,
		  "a reused run covers the request");
	/* The rest is cut off and stays cached (where frees next to it join
	 * it) unless below the purge threshold: kept with the block it would
	 * be resident and unused. */
	char *tail = r.npages >= np + cfg(purge_pages) ? _nd_page_split(r.p, np) : NULL;
	if (tail) {
		put_back(node, (cached_t){ .p = tail, .npages = r.npages - np, .due = r.due });
		r.npages = np;
	}
	/* In use again: the page level's grow counts its own pages. */
	_nd_stats_in_use(node, (int64_t)(r.npages << ND_PAGE_SHIFT));
	return r.p;
}

/* Before np fresh pages are taken on node (-1: spread runs): the oldest
 * cached runs of ln, np pages of them but no more than take the cache and
 * np over 1/SHED_KEEP of its bound lim, go back to the page level (the
 * last one cut when the end it keeps is at least the purge threshold). */
static void shed_list(lnode_t *ln, int node, uint64_t lim, uint64_t np)
{
	if (!np || !__atomic_load_n(&ln->n, __ATOMIC_RELAXED))
		return;
	uint64_t keep = (lim / SHED_KEEP) >> ND_PAGE_SHIFT;
	cached_t out[CACHE_RUNS];
	int nout = 0;
	uint64_t got = 0;
	_nd_lock(&ln->lock);
	uint64_t have = (ln->bytes >> ND_PAGE_SHIFT) + np;
	np = have <= keep ? 0 : have - keep < np ? have - keep : np;
	while (ln->n && got < np) {
		out[nout] = take_entry(ln, 0);
		got += out[nout++].npages;
	}
	_nd_unlock(&ln->lock);
	release_but(node, out, nout, got > np ? got - np : 0);
}

static void shed(int node, uint64_t np)
{
	shed_list(&lnodes[node], node, _nd_large_cache_limit(node), np);
}

static bool spreads(const nd_policy_t *pol, size_t npages)
{
	if (pol->mode != ND_POLICY_INTERLEAVE && pol->mode != ND_POLICY_WEIGHTED)
		return false;
	/* one granule or less: the round-robin choice of a whole run */
	return npages > ((size_t)1 << pol->granularity_shift);
}

/* The spread cache's bound: max(SPREAD_MIN, 1/2 of the spread runs' bytes
 * in use), at most 1/16 of the memory of all nodes. */
static uint64_t spread_limit(void)
{
	int64_t live = __atomic_load_n(&spread_live, __ATOMIC_RELAXED);
	uint64_t lim = live > 0 ? ((uint64_t)live << ND_PAGE_SHIFT) / 2 : 0, mem = 0;
	if (lim < SPREAD_MIN)
		lim = SPREAD_MIN;
	const _nd_topo_t *t = _nd_topo();
	for (int n = 0; n < t->node_limit && n < ND_MAX_NODES; n++)
		mem += t->mem_total[n];
	return mem && lim > mem / 16 ? mem / 16 : lim;
}

/* Pages a spread run of np pages under pol takes while the cache is on:
 * np rounded up to 1/8 of its power of two, so that blocks of near sizes
 * share runs (usable size; at most 1/8 more); then to whole rounds of the
 * policy (a granule per node, or per unit of weight) when that adds at
 * most 1/8 more again: each such run holds every node's exact share, and
 * the thread's spread cursor keeps its phase, so any cached run of the
 * length is laid out as the next one wants (2 emulated nodes, 4 KiB
 * granules: wl_spread 1000's page faults 42k -> 20k, as on one real
 * node). The cursor moves by
 * these pages. */
static size_t spread_pages(size_t np, const nd_policy_t *pol)
{
	if (!cfg(delay_ns))
		return np;
	unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)np);
	size_t step = k > 3 ? (size_t)1 << (k - 3) : 1;
	np = (np + step - 1) & ~(step - 1);
	uint64_t w = _nd_policy_round(pol);
	uint64_t round = pol->granularity_shift < 32 ? w << pol->granularity_shift : UINT64_MAX;
	if (w > 1 && (round - 1) * 8 <= np) /* at most 1/8 more */
		np = (np + round - 1) / round * round;
	return np;
}

/* Tails of cached spread runs shorter than this go back to the page
 * level when a prefix is taken (pages; no spread block is smaller than
 * two granules, and short tails would crowd the lists' CACHE_RUNS) */
#define SPREAD_TAIL_MIN 16

/* A cached spread run r (taken out, not in use) back in its list, the
 * list's oldest runs over its share given back; under SPREAD_TAIL_MIN
 * pages, given back at once. */
static void spread_back(cached_t r)
{
	if (r.npages < SPREAD_TAIL_MIN) {
		release(-1, &r, 1);
		return;
	}
	lnode_t *ln = spread_list(r.npages);
	cached_t out[CACHE_RUNS];
	int nout = 0;
	_nd_lock(&ln->lock);
	insert(ln, r, spread_limit() / SPREAD_LISTS, out, &nout, NULL);
	_nd_unlock(&ln->lock);
	due_min(r.due); /* a decay pass may have run while it was out */
	release(-1, out, nout);
}

/* A cached spread run holding np pages laid out as a fresh run of np
 * pages under pol starting at index first would be, in use again; NULL
 * if none. Those pages may start at any whole granule within a round of
 * the policy (_nd_page_spread_fit, task spread66: before, only a run's
 * first pages, and a run laid out from another phase of the round than
 * the thread's cursor was never taken: wl_spread at 64 KiB granules over
 * 2 nodes took 429 of 1,000 blocks from the cache). The best fit over
 * every list: a run of exactly np pages (newest first), else the
 * shortest longer one; its pages before them (whole granules) and after
 * them (only at a granule's end: the tail's granules then stay whole)
 * are cut off and cached again (each its own run, laid out from where it
 * starts: a later request checks it as any) or given back when short.
 * Every list is scanned under its own lock, one at a time; the run
 * chosen is taken out of its list afterwards, if still there. */
static void *spread_take(size_t np, const nd_policy_t *pol, uint64_t first)
{
	bool cut = pol->granularity_shift < 32 && !(np & (((size_t)1 << pol->granularity_shift) - 1));
	lnode_t *bl = NULL;
	cached_t best = { 0 };
	int64_t at = -1;
	for (int q = 0; q < SPREAD_LISTS && best.npages != np; q++) {
		lnode_t *ln = &spread_page.l[((63 - __builtin_clzll(np)) + q) % SPREAD_LISTS];
		if (!__atomic_load_n(&ln->n, __ATOMIC_RELAXED))
			continue;
		_nd_lock(&ln->lock);
		for (int k = ln->n - 1; k >= 0 && best.npages != np; k--) {
			cached_t *e = &ln->run[k];
			int64_t o;
			if (e->npages >= np && (!best.p || e->npages < best.npages) &&
			    (o = _nd_page_spread_fit(e->p, np, pol, first, cut)) >= 0)
				best = *e, bl = ln, at = o;
		}
		_nd_unlock(&ln->lock);
	}
	if (!best.p)
		return NULL;
	/* the very run looked at: in the unlocked gap another thread may
	 * have taken it, freed it to the page level and cached a fresh run
	 * of another layout at the same address and length, which has a
	 * later due (audit26) */
	cached_t r = { 0 };
	_nd_lock(&bl->lock);
	for (int k = bl->n - 1; k >= 0; k--)
		if (bl->run[k].p == best.p && bl->run[k].npages == best.npages && bl->run[k].due == best.due) {
			r = take_entry(bl, k);
			break;
		}
	_nd_unlock(&bl->lock);
	if (!r.p)
		return NULL; /* taken meanwhile */
	if (at > 0) {
		char *mid = _nd_page_spread_split(r.p, (size_t)at);
		if (!mid) /* not cut: its pages are not the request's */
			_nd_msg_fatal("large: cached spread run %p not cut after %lld pages", (void *)r.p, (long long)at);
		spread_back((cached_t){ .p = r.p, .npages = (uint64_t)at, .due = r.due });
		r = (cached_t){ .p = mid, .npages = r.npages - (uint64_t)at, .due = r.due };
	}
	char *tail = r.npages > np ? _nd_page_spread_split(r.p, np) : NULL;
	if (tail)
		spread_back((cached_t){ .p = tail, .npages = r.npages - np, .due = r.due });
	_nd_page_spread_in_use(r.p, np, 1, pol);
	return r.p;
}

/* Keeps freed spread run p (placed, bound, committed); false: larger than
 * the bound, the caller frees it. */
static bool spread_put(char *p, uint64_t np)
{
	uint64_t lim = spread_limit() / SPREAD_LISTS;
	if (np << ND_PAGE_SHIFT > lim)
		return false;
	_nd_page_spread_in_use(p, np, -1, NULL);
	cached_t r = { .p = p, .npages = np, .due = _nd_os_now_ns() + cfg(delay_ns) }, out[CACHE_RUNS];
	/* Joined with the cached runs right before and after it while the
	 * whole fits a list's share: a miss then finds one run long enough
	 * where the cut pieces were each too short. Whether a joined run's
	 * layout is the one a request wants is checked at its take, page by
	 * page (_nd_page_spread_matches). The runs are ours once out of
	 * their lists: joined unlocked, one list locked at a time. */
	for (int q = 0; q < SPREAD_LISTS; q++) {
		lnode_t *ln = &spread_page.l[q];
		if (!__atomic_load_n(&ln->n, __ATOMIC_RELAXED))
			continue;
		cached_t nb[2], back[2];
		int nnb = take_neighbours(ln, &r, lim, nb);
		release(-1, back, join_runs(&r, nb, nnb, back, _nd_page_spread_join)); /* kernel's interleave and not */
	}
	lnode_t *ln = spread_list(r.npages);
	int nout = 0;
	_nd_lock(&ln->lock);
	insert(ln, r, lim, out, &nout, NULL);
	_nd_unlock(&ln->lock);
	due_min(r.due);
	release(-1, out, nout);
	return true;
}

/* A spread run of np pages under pol: a cached one laid out as the fresh
 * one would be (the thread's spread cursor moves on alike), else a fresh
 * one, after the oldest cached ones made room (shed). Cached runs (node
 * or spread) hold pages a node's share may need: when the fresh run's
 * granules did not all land where pol wants them (a node short: the page
 * level fell back), they all go back and the run is placed again. That
 * check replaces the flush of every cache before each spread allocation.
 * *reused: from the cache. */
static void *spread_run(size_t np, const nd_policy_t *pol, bool *reused)
{
	uint64_t first = _nd_page_spread_first(np, pol);
	void *p = cfg(delay_ns) ? spread_take(np, pol, first) : NULL;
	if (p) {
		*reused = true;
		_nd_purge_decay(); /* no page-level call: its clocks checked here (purge.c, burst_cut) */
		return p;
	}
	shed_list(spread_list(np), -1, spread_limit() / SPREAD_LISTS, np);
	p = _nd_page_alloc_spread_from(np, pol, first);
	bool cached = __atomic_load_n(&c.due, __ATOMIC_RELAXED) != UINT64_MAX;
	if (cached && (!p || !_nd_page_spread_matches(p, np, pol, first))) {
		if (p) { /* counted once: as the run placed again */
			_nd_page_spread_uncount(p, np, pol, first);
			_nd_page_free(p);
		}
		_nd_large_flush(-1);
		p = _nd_page_alloc_spread_from(np, pol, first);
	}
	return p;
}

/* Index of the oldest cached run of ln holding a whole 2 MiB page
 * (aligned), -1 if none. Lock held. */
static int oldest_movable(const lnode_t *ln)
{
	for (int k = 0; k < ln->n; k++) {
		uintptr_t s = ND_ALIGN_UP((uintptr_t)ln->run[k].p, ND_HUGE_SIZE);
		if (s + ND_HUGE_SIZE <= (uintptr_t)ln->run[k].p + (ln->run[k].npages << ND_PAGE_SHIFT))
			return k;
	}
	return -1;
}

/* No cached run fits np pages: a fresh run of node whose whole 2 MiB
 * pages receive the pages of cached runs, oldest first, moved by the
 * kernel (_nd_os_remap_pages: page tables, no copy, no zeroing; a huge
 * page stays one). The ends of a run that are not moved stay cached when
 * big runs, else go back with its moved part (an empty range: the page
 * level's purge costs nothing). Pages not filled (the run's last partial
 * 2 MiB; all the rest when the cache runs short or a move fails) are
 * fresh: their count in *fresh. NULL: nothing to move, or no fresh run.
 * The alternative, growing one cached run, takes the pages it lacks
 * fresh, and the shed and the bound then purge as many (a held-out
 * large-block benchmark, 300 iterations, under NODALLOC_THP=never: 181k
 * page faults, 437 MiB peak RSS; 109k, 409 MiB with the moves and the 2 MiB
 * sizes). */
static void *cache_move(int node, uint64_t np, uint64_t ap, uint64_t *fresh)
{
	lnode_t *ln = &lnodes[node];
	uint64_t slots = np / MOVE_PAGES;
	if (!slots || !__atomic_load_n(&ln->n, __ATOMIC_RELAXED) || __atomic_load_n(&c.no_move, __ATOMIC_RELAXED))
		return NULL;
	_nd_lock(&ln->lock);
	bool any = oldest_movable(ln) >= 0;
	_nd_unlock(&ln->lock);
	if (!any)
		return NULL;
	/* its huge page advice after the moves: a probe (room.c) of a 2 MiB
	 * page the moves then replace would be wasted */
	char *dst = _nd_page_alloc_fill(node, np, ap > MOVE_PAGES ? ap : MOVE_PAGES);
	if (!dst)
		return NULL;
	uint64_t done = 0;
	for (bool ok = true; ok && done < slots;) {
		_nd_lock(&ln->lock);
		int k = oldest_movable(ln);
		cached_t r = k >= 0 ? take_entry(ln, k) : (cached_t){ 0 };
		_nd_unlock(&ln->lock);
		if (!r.p)
			break;
		char *c0 = (char *)ND_ALIGN_UP((uintptr_t)r.p, ND_HUGE_SIZE);
		uint64_t head = (uint64_t)(c0 - r.p) >> ND_PAGE_SHIFT, nc = (r.npages - head) / MOVE_PAGES;
		if (nc > slots - done)
			nc = slots - done;
		uint64_t mid = nc * MOVE_PAGES, rest = r.npages - head - mid;
		char *t = rest >= cfg(purge_pages) ? _nd_page_split(r.p, head + mid) : NULL;
		if (t) {
			put_back(node, (cached_t){ .p = t, .npages = rest, .due = r.due });
			r.npages = head + mid;
		}
		if (head >= cfg(purge_pages) && _nd_page_split(r.p, head)) {
			put_back(node, (cached_t){ .p = r.p, .npages = head, .due = r.due });
			r = (cached_t){ .p = c0, .npages = mid, .due = r.due };
		}
		uint64_t moved = 0;
		for (int e = 0; moved < nc; moved++) {
			e = _nd_os_remap_pages(c0 + moved * ND_HUGE_SIZE, ND_HUGE_SIZE, dst + (done + moved) * ND_HUGE_SIZE);
			if (e) {
				if (e == -EINVAL || e == -ENOSYS || e == -EPERM) /* before Linux 5.7, or filtered */
					__atomic_store_n(&c.no_move, 1, __ATOMIC_RELAXED);
				ok = false;
				break;
			}
		}
		done += moved;
		if (moved)
			release(node, &r, 1);
		else
			put_back(node, r);
	}
	*fresh = np - done * MOVE_PAGES;
	_nd_page_huge_fresh(dst + done * ND_HUGE_SIZE, *fresh); /* its first fresh 2 MiB probed */
	return dst;
}

/* The calling thread's heaps trimmed whole (their empty current slabs
 * too) and the parked heaps' empty slabs, once per allocation (*trimmed):
 * true if done now. Their pages are their node's (its capacity counts
 * them) and may split the free space a large run needs (task bigslot:
 * after a bound churn and a full free, one current slab per class,
 * scattered over the 2 GiB slot, refused 700 MiB on the empty 1 GiB
 * node). Safe because this is reached from the malloc family's entry
 * points only: the caller's heaps are between two operations (never from
 * inside the slab layer) and it holds no lock (the parked heaps' trim
 * takes sweep_lock, the pool and slot locks; audit21). */
static __attribute__((noinline, cold)) bool trim_heaps(bool *trimmed)
{
	if (*trimmed)
		return false;
	*trimmed = true;
	_nd_heap_trim_self(true);
	_nd_heap_trim_parked();
	return true;
}

/* Node's slot refused np pages (aligned to ap) even with its cache
 * flushed, while its capacity would take them: the blocks held split the
 * slot, or the run is larger than a slot. The heaps are trimmed first
 * (trim_heaps) and the slot tried again; then a run outside the slot,
 * bound to the node (outrun.c), rather than another node or ENOMEM
 * (docs/arenas.md "Runs outside the slot"). Cold: a slot miss only. */
static __attribute__((noinline, cold)) void *node_out(int node, size_t np, size_t ap, bool *trimmed)
{
	if (!_nd_page_room_for(node, np))
		return NULL; /* the node is full: as before */
	if (!_nd_page_run_fits(np, ap)) /* no slot holds it: outside, up to NODALLOC_ARENA_RESERVE's bound */
		return _nd_page_alloc_out(node, np, ap);
	if (trim_heaps(trimmed)) {
		void *p = _nd_page_alloc_exact(node, np, ap);
		if (p)
			return p;
	}
	return _nd_page_alloc_out(node, np, ap);
}

/* _nd_page_alloc with each node's cache in front of it and flushed before
 * the policy gives up on that node, then a run outside its slot (node_out).
 * *reused: the run came from the cache. */
static void *node_run(size_t np, size_t ap, const nd_policy_t *pol, int want_node, bool *reused, bool *trimmed)
{
	bool cacheable = cfg(delay_ns) && np >= cfg(purge_pages);
	if (cacheable && np >= ROUND_PAGES) /* whole 2 MiB pages: its rest, and it, are moved whole */
		np = ND_ALIGN_UP(np, (size_t)MOVE_PAGES);
	_nd_policy_iter_t it;
	for (int n = _nd_policy_first_n(&it, pol, want_node, np); n >= 0; n = _nd_policy_next(&it)) {
		void *p = ap == 1 && n < ND_MAX_NODES ? tc_take(n, np) : NULL;
		if (p)
			*reused = true;
		else if (cacheable && n < ND_MAX_NODES) {
			uint64_t fresh = 0; /* pages a move or a grown cached run took fresh */
			if ((p = cache_take(n, np, ap, &fresh))) {
				*reused = true;
				_nd_purge_decay(); /* no page-level call: its clocks checked here (purge.c, burst_cut) */
			}
			shed(n, p ? fresh / 2 : np);
		}
		if (!p)
			p = _nd_page_alloc_exact(n, np, ap);
		if (!p && n < ND_MAX_NODES && _nd_large_flush(n))
			p = _nd_page_alloc_exact(n, np, ap);
		if (!p)
			p = node_out(n, np, ap, trimmed);
		if (p) {
			_nd_policy_count(&it, n);
			live_add(n, (int64_t)(_nd_page_desc(p)->npages));
			return p;
		}
	}
	return NULL;
}

void *_nd_large_alloc(size_t size, size_t align, const nd_policy_t *pol, int want_node)
{
	if (size > SIZE_MAX - ND_PAGE_SIZE || size == 0) {
		if (size == 0)
			size = 1;
		else {
			errno = ENOMEM;
			return NULL;
		}
	}
	size_t np = (size + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT;
	size_t ap = align > ND_PAGE_SIZE ? align >> ND_PAGE_SHIFT : 1;
	if (!pol || pol->mode == ND_POLICY_DEFAULT)
		pol = _nd_policy_current();
	setup();
	decay();
	void *p;
	bool reused = false;
	int err = errno; /* a refusal on the way (a slot, a node) is not the caller's error */
	if (want_node < 0 && ap == 1 && spreads(pol, np)) {
		p = spread_run(spread_pages(np, pol), pol, &reused);
		if (p) /* as its free counts it: a node's if the page level made a plain run */
			live_add(slot_node(p), (int64_t)_nd_page_desc(p)->npages);
	} else {
		bool trimmed = false;
		p = node_run(np, ap, pol, want_node, &reused, &trimmed);
		/* The heaps' kept and empty slabs given back before ENOMEM
		 * (trim_heaps; bind:1 on a full node failed with them kept;
		 * node_run has flushed the large-run caches already), unless
		 * node_run's node_out did. Not for a run no slot can hold:
		 * nothing freed helps it, and the walk of every slab list made
		 * each such failure (a probe of malloc(1 TiB)) cost 0.7 ms with
		 * 1M small objects live, 0.1 us before (audit20). */
		if (!p && _nd_page_run_fits(np, ap) && trim_heaps(&trimmed))
			p = node_run(np, ap, pol, want_node, &reused, &trimmed);
	}
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	errno = err;
	_nd_pagedesc_t *d = _nd_page_desc(p);
	if (d) {
		d->use = ND_USE_LARGE;
		d->user = size | (reused ? USER_REUSED : 0);
	}
	return p;
}

/* A run no one uses any more (use NONE, counted out of live) back: the
 * node cache, the spread cache or the page level. */
static void run_free(void *p, uint64_t np, int node, const _nd_pagedesc_t *d)
{
	/* a run outside the slot is unmapped (outrun.c), never cached: the
	 * cache's splits and joins are slot runs' */
	if (node >= 0 && !(d->flags & ND_PGF_OUT) && cfg(delay_ns) && np >= cfg(purge_pages) && cache_put(node, p, np))
		_nd_purge_decay(); /* no page-level call: its clocks checked here (purge.c, burst_cut) */
	else if (in_mixed(p) && cfg(delay_ns) && spread_put(p, np))
		_nd_purge_decay();
	else if (_nd_page_free(p) != 0)
		_nd_msg_fatal("free(): invalid pointer %p (not the start of a page run)", p);
}

#define TC_P(e) ((char *)((e)->pn & ~(uintptr_t)(ND_PAGE_SIZE - 1)))
#define TC_NP(e) ((uint64_t)((e)->pn & (ND_PAGE_SIZE - 1)) + 1)
#define TC_NOW(ns) ((uint32_t)((ns) >> 20)) /* the expiry's clock: about ms, wraps in 52 days */
#define TC_LIFE_MAX ((uint64_t)1 << 30)     /* the longest expiry on that clock: about 13 days */

/* A thread's cache (the record's lblk): its entries and the record's lblk
 * pointer change under the record's lblk_lock (nd_thread.h), which the
 * owner takes around each put, take and its exit's flush, and
 * _nd_large_flush around another thread's flush (tc_steal). The owner
 * alone sets lblk (at its first put, and NULL at its exit), so it reads
 * lblk without the lock; the block is given back only after the exit
 * cleared lblk under the lock, so no flush can reach it after. */
struct _nd_lblk {
	uint32_t n;     /* used entries: run[0..n), oldest first */
	uint32_t pages; /* their pages */
	int32_t node;   /* the metadata node it came from (goes back there) */
	uint32_t puts;  /* runs put since the last take (TC_PAGES_COLD) */
	struct tc_run {
		uintptr_t pn; /* the run's address | its pages - 1 (at most 64) */
		uint32_t due; /* expiry, ns >> 20 (about ms) mod 2^32 */
		int32_t node;
	} run[TC_RUNS];
};

/* Entry k of cache b out: its run (still counted out of use). */
static char *tc_out(struct _nd_lblk *b, uint32_t k)
{
	char *p = TC_P(&b->run[k]);
	b->pages -= (uint32_t)TC_NP(&b->run[k]);
	__atomic_sub_fetch(&lnodes[b->run[k].node].kept, TC_KEPT(TC_NP(&b->run[k])), __ATOMIC_RELAXED);
	b->n--;
	memmove(&b->run[k], &b->run[k + 1], (b->n - k) * sizeof b->run[0]);
	return p;
}

/* Entry k of cache b back to run_free (in use for that moment: the page
 * level or cache_put counts it out). */
static void tc_drop(struct _nd_lblk *b, uint32_t k)
{
	uint64_t np = TC_NP(&b->run[k]);
	int node = b->run[k].node;
	char *p = tc_out(b, k);
	_nd_stats_in_use(node, (int64_t)(np << ND_PAGE_SHIFT));
	run_free(p, np, node, _nd_page_desc(p));
}

/* Keeps p (np pages of node, freed, a slot run) in the calling thread's
 * cache: false if it does not take it. The oldest go first while it is
 * full (TC_RUNS runs, TC_PAGES pages, twice the node's large pages in
 * use), and those past their expiry. */
static bool tc_put(char *p, uint64_t np, int node, const _nd_pagedesc_t *d)
{
	if (np < TC_MIN_PAGES || np > TC_MAX_PAGES || (d->flags & ND_PGF_OUT) || !cfg(delay_ns))
		return false;
	_nd_thread_t *t = _nd_tls;
	if (_nd_thread_none(t) && !(t = _nd_thread_make_free())) /* as page.c's give_back: not after the exit */
		return false;
	/* and at most twice the node's large pages in use: a program that
	 * frees its last large blocks keeps none. Not half (mixed28): at a
	 * phase end of wl_mixed both threads free every block, the node's
	 * pages in use fall by half, and half of those dropped the runs the
	 * refill then took from the page level (18-21k faults, 12-14k) */
	int64_t live = __atomic_load_n(&lnodes[node].live, __ATOMIC_RELAXED);
	uint64_t lim = live > 0 ? (uint64_t)live * 2 : 0;
	lim = lim < TC_PAGES ? lim : TC_PAGES;
	struct _nd_lblk *b = t->lblk;
	_nd_lock_t *lk = &t->lblk_lock;
	if (!b) {
		/* the thread's first: a block of its own on its CPU's memory
		 * node (given back there at its exit) */
		int mn = np <= lim ? _nd_topo()->cpu_mem_node[_nd_topo_cpu()] : -1;
		int err = errno; /* a full node's refusal in meta.c is not free's error (audit27) */
		b = mn >= 0 ? _nd_meta_blk_get(mn, sizeof *b) : NULL;
		errno = err;
		if (!b)
			return false;
		b->node = mn;
		_nd_lock(lk);
		__atomic_store_n(&t->lblk, b, __ATOMIC_RELAXED); /* tc_steal's peek */
	} else {
		_nd_lock(lk);
	}
	/* frees with no take between (a heap emptied, its size mix changing:
	 * wl_footprint's sparse phase freed ~1350 runs before a refill of
	 * small blocks) keep the old bound: 2 MiB kept there raised its end
	 * RSS by up to 3.4 MiB (the refill's slabs took fresh pages) */
	if (++b->puts > TC_COLD_PUTS && lim > TC_PAGES_COLD)
		lim = TC_PAGES_COLD;
	uint32_t now = TC_NOW(_nd_os_now_ns());
	while (b->n && (b->n == TC_RUNS || b->pages + np > lim || (int32_t)(b->run[0].due - now) <= 0))
		tc_drop(b, 0);
	bool kept = b->pages + np <= lim;
	if (kept) {
		/* the clock's wrap: a due over 2^31 ahead reads as past (a decay
		 * of 26 days or more dropped every run at the next put), so at
		 * most 2^30 (about 13 days) */
		uint64_t life = (cfg(delay_ns) >> 20) + 1;
		b->run[b->n++] = (struct tc_run){ .pn = (uintptr_t)p | (uintptr_t)(np - 1),
						  .due = now + (uint32_t)(life < TC_LIFE_MAX ? life : TC_LIFE_MAX),
						  .node = node };
		b->pages += (uint32_t)np;
		__atomic_add_fetch(&lnodes[node].kept, TC_KEPT(np), __ATOMIC_RELAXED);
		_nd_stats_in_use(node, -(int64_t)(np << ND_PAGE_SHIFT));
	}
	_nd_unlock(lk);
	return kept;
}

/* A run of np..np + np/4 pages of node from the calling thread's cache
 * (the smallest; of those the newest, its lines the warmest), counted in
 * use again; NULL if none. */
static void *tc_take(int node, uint64_t np)
{
	_nd_thread_t *t = _nd_tls;
	struct _nd_lblk *b = t->lblk; /* the boot and gone records: NULL */
	if (!b || np < TC_MIN_PAGES || np > TC_MAX_PAGES)
		return NULL;
	_nd_lock(&t->lblk_lock);
	int fit = -1;
	uint64_t fnp = np + np / 4 + 1;
	for (uint32_t k = b->n; k-- > 0;) {
		uint64_t e = TC_NP(&b->run[k]);
		if (e >= np && e < fnp && b->run[k].node == node) {
			fit = (int)k;
			fnp = e;
			if (e == np)
				break;
		}
	}
	void *p = NULL;
	if (fit >= 0) {
		b->puts = 0;
		_nd_stats_in_use(node, (int64_t)(fnp << ND_PAGE_SHIFT));
		p = tc_out(b, (uint32_t)fit);
	}
	_nd_unlock(&t->lblk_lock);
	return p;
}

/* Every run of t's cache (of node; -1: any) back: their bytes. t's
 * lblk_lock held. */
static uint64_t tc_flush(_nd_thread_t *t, int node)
{
	uint64_t bytes = 0;
	struct _nd_lblk *b = t->lblk;
	if (!b)
		return 0;
	for (uint32_t k = 0; k < b->n;)
		if (node < 0 || b->run[k].node == node) {
			bytes += TC_NP(&b->run[k]) << ND_PAGE_SHIFT;
			tc_drop(b, k);
		} else {
			k++;
		}
	return bytes;
}

/* The thread-exit hook (thread.c, before heap.c's): the runs, then the
 * block, back. */
static void tc_exit(_nd_thread_t *t)
{
	struct _nd_lblk *b = t->lblk;
	if (!b)
		return;
	_nd_lock(&t->lblk_lock);
	tc_flush(t, -1);
	__atomic_store_n(&t->lblk, NULL, __ATOMIC_RELAXED);
	_nd_unlock(&t->lblk_lock);
	_nd_meta_blk_put(b->node, b, sizeof *b);
}

void _nd_large_free(void *p, _nd_pagedesc_t *d)
{
	if (((uintptr_t)p & (ND_PAGE_SIZE - 1)) || d->state != ND_PG_RUN)
		_nd_msg_fatal("free(): invalid pointer %p (inside a %llu-byte allocation, not its start)", p,
			      (unsigned long long)(d->user & ~USER_REUSED));
	setup();
	uint64_t np = d->npages;
	int node = slot_node(p);
	d->use = ND_USE_NONE;
	d->user = 0;
	live_add(node, -(int64_t)np);
	if (node < 0 || !tc_put(p, np, node, d))
		run_free(p, np, node, d);
	decay();
}

void _nd_large_zero(void *p, size_t bytes)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	if (d && d->use == ND_USE_LARGE && (d->user & USER_REUSED))
		memset(p, 0, bytes);
	else
		_nd_page_zero(p, bytes);
}

size_t _nd_large_usable(const void *p, const _nd_pagedesc_t *d)
{
	(void)p;
	return (size_t)d->npages << ND_PAGE_SHIFT;
}

void _nd_large_resize(void *p, _nd_pagedesc_t *d, size_t size)
{
	(void)p;
	d->user = size;
}

/* New memory of a realloc goes where the policy in force puts a fresh
 * run; growing in place is right only when that is the run's own node.
 * Interleave and weighted never grow in place: their choice moves a
 * cursor, and a big run of theirs is spread (mixed slot) anyway. */
static bool policy_keeps_node(const void *p)
{
	const nd_policy_t *pol = _nd_policy_current();
	if (_nd_policy_spreads(pol))
		return false;
	int node = _nd_page_node_of(p);
	_nd_policy_iter_t it;
	return node >= 0 && _nd_policy_first(&it, pol, -1) == node;
}

/* Grows run p of node (old pages) to np through the cached run right after
 * it: joined without a purge (its pages are warm), the rest cut off again
 * as cache_take does, the pages still missing taken fresh after it. A
 * small run cannot be joined: the cached run goes back to the page level
 * and p grows into its (purged) pages, as before. */
static bool grow_through_cache(int node, char *p, uint64_t old, uint64_t np)
{
	cached_t r = take_at(node, p + (old << ND_PAGE_SHIFT));
	if (!r.p)
		return false;
	if (_nd_page_join(p, r.p) != 0) {
		release(node, &r, 1);
		return _nd_page_grow(p, np) == 0;
	}
	_nd_stats_in_use(node, (int64_t)(r.npages << ND_PAGE_SHIFT));
	uint64_t have = old + r.npages;
	if (have < np && _nd_page_grow(p, np) != 0) {
		char *t = _nd_page_split(p, old); /* undone: r as it was */
		ND_ASSERT(t == r.p, "a joined run splits where it was joined");
		(void)t;
		_nd_stats_in_use(node, -(int64_t)(r.npages << ND_PAGE_SHIFT));
		put_back(node, r);
		return false;
	}
	char *tail = have > np && have - np >= np ? _nd_page_split(p, np) : NULL;
	if (tail) {
		_nd_stats_in_use(node, -(int64_t)((have - np) << ND_PAGE_SHIFT));
		put_back(node, (cached_t){ .p = tail, .npages = have - np, .due = r.due });
	}
	return true;
}

void *_nd_large_grow(void *p, _nd_pagedesc_t *d, size_t size)
{
	if (size > SIZE_MAX - ND_PAGE_SIZE || !policy_keeps_node(p))
		return NULL;
	size_t np = (size + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT;
	uint64_t old = d->npages;
	int node = slot_node(p);
	void *q = p;
	if (d->flags & ND_PGF_OUT) /* its mapping grows, or moves with its pages (d stays its descriptor) */
		q = _nd_outrun_grow(p, np);
	else if (_nd_page_grow(p, np) != 0 && !(node >= 0 && grow_through_cache(node, p, old, np)))
		q = NULL;
	if (!q)
		return NULL;
	live_add(node, (int64_t)(d->npages - old));
	d->user = size;
	return q;
}

bool _nd_large_shrink(void *p, _nd_pagedesc_t *d, size_t size)
{
	size_t np = (size + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT;
	uint64_t old = d->npages;
	if (np == 0 || np >= old)
		return false;
	int node = slot_node(p);
	/* A big tail is cut off as a run of its own and freed as a block is
	 * (cached, not purged); a smaller one is given back to the page level. */
	char *tail = node >= 0 && cfg(delay_ns) && old - np >= cfg(purge_pages) ? _nd_page_split(p, np) : NULL;
	if (tail) {
		live_add(node, -(int64_t)(old - np));
		if (!cache_put(node, tail, old - np) && _nd_page_free(tail) != 0)
			_nd_msg_fatal("realloc(): the tail cut off %p is not a page run", p);
	} else if (_nd_page_shrink(p, np) == 0) {
		live_add(node, -(int64_t)(old - d->npages));
	} else {
		return false;
	}
	d->user = size;
	return true;
}
