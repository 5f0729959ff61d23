// SPDX-License-Identifier: MIT
/*
 * A node's room (docs/arenas.md): its hard capacity (emulated memory
 * size), the kernel's watermarks (headroom before a run may commit fresh
 * pages), the pages it has committed, and binding a range to it.
 * Counters are atomics: a mixed-slot run charges nodes without their
 * slot locks.
 */
#include <errno.h>
#include <sys/mman.h> /* MADV_* values only: the calls go through os.c */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#include "internal.h"

#define g _nd_page_g
/* An eager slot's part starts at 64 KiB: its hole's head (and the free
 * heads of a part split for a few runs) sat at page 512, 128 KiB after
 * the slot's first descriptor, on a descriptor page of its own (issue 11:
 * a small process's fixed pages) */
#define GROW_MIN_EAGER 16u

static int warned_grow;

void _nd_room_stats(void (*fn)(int, int64_t), int node, int64_t pages)
{
	if (pages && node >= 0)
		fn(node, pages * (int64_t)ND_PAGE_SIZE);
}

void _nd_room_committed(_nd_arena_t *na, int64_t pages)
{
	if (!pages)
		return;
	uint64_t c = __atomic_add_fetch(&na->committed, (uint64_t)pages, __ATOMIC_RELAXED);
	ND_ASSERT(pages > 0 || c <= (uint64_t)INT64_MAX, "a node's committed pages never go negative");
	(void)c;
	_nd_room_stats(_nd_stats_committed, na->node, pages);
}

void _nd_room_give(_nd_arena_t *na, uint64_t n)
{
	uint64_t u = __atomic_sub_fetch(&na->used, n, __ATOMIC_RELAXED);
	ND_ASSERT(u <= (uint64_t)INT64_MAX, "a node's used pages never go negative");
	(void)u;
	_nd_topo_account(na->node, -(int64_t)(n << ND_PAGE_SHIFT));
}

int _nd_room_bind(void *p, size_t len, int node)
{
	uint64_t mask[ND_MAX_NODES / 64] = { 0 };
	mask[node / 64] |= 1ull << (node % 64);
	return _nd_os_mbind(p, len, g.strict ? ND_MPOL_BIND : ND_MPOL_PREFERRED, mask, (unsigned long)g.node_limit, 0);
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
 * read is redone when 10 ms have passed (other processes) for each 256
 * MiB of estimated headroom (at most 1 s: other processes would have to
 * take 25 GB/s to get through the margin unseen; a read costs 125 us of
 * kernel time plus 40 us of parsing, and every 10 ms it was 1% of bench
 * wl_footprint's time, 37 reads in wl_large 200), and when the
 * estimate says no while the node's committed count moved since the read
 * before (up to twice: the second without the double count); a node that
 * stays full costs no read per refused run until the next 10 ms. A run
 * passes with need + WM_SLACK to spare: other threads' runs in flight,
 * page tables. Without zoneinfo (a sysfs root other than /sys), MemFree
 * against max(MemTotal/64, 32 MiB), the earlier rule.
 */
#define WM_SLACK_PAGES ((uint64_t)4 << (20 - ND_PAGE_SHIFT))  /* 4 MiB */
#define WM_REREAD_NS 10000000ull                                        /* 10 ms per ... */
#define WM_REREAD_PAGES ((uint64_t)256 << (20 - ND_PAGE_SHIFT))        /* ... 256 MiB of headroom */
#define WM_REREAD_MAX 100                                                /* at most 1 s */

static struct {
	_nd_lock_t lock; /* one reader at a time; a periodic re-read skips when busy */
	uint64_t stamp;  /* ns of the last read (atomic) */
	int mode;        /* 0 not tried, 1 zoneinfo, -1 MemFree rule */
	uint64_t reads;  /* reads done (lock; tests read it, atomic) */
} wm = { .lock = ND_LOCK_INIT };
ND_LOCK_FIELD(wm_lock_class, wm.lock, ND_RANK_PAGE_WMARK);

static int64_t wm_estimate(const _nd_arena_t *na)
{
	int64_t c = (int64_t)__atomic_load_n(&na->committed, __ATOMIC_RELAXED);
	int64_t base = (int64_t)__atomic_load_n(&na->wm_c_prev, __ATOMIC_RELAXED);
	return (int64_t)__atomic_load_n(&na->wm_avail, __ATOMIC_RELAXED) - (c - base);
}

/* Periods of 10 ms between periodic reads for na: 1 per 256 MiB of its
 * estimated headroom (see the top), 1..WM_REREAD_MAX. */
static uint64_t wm_periods(const _nd_arena_t *na)
{
	if (__atomic_load_n(&wm.mode, __ATOMIC_RELAXED) < 0)
		return 1; /* the MemFree rule: its own cache */
	int64_t est = wm_estimate(na);
	uint64_t p = est > 0 ? (uint64_t)est / WM_REREAD_PAGES : 0;
	return p < 1 ? 1 : p > WM_REREAD_MAX ? WM_REREAD_MAX : p;
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
	__atomic_store_n(&wm.reads, wm.reads + 1, __ATOMIC_RELAXED);
	if (_nd_topo_node_avail(avail, g.node_limit) < 0) {
		__atomic_store_n(&wm.mode, -1, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(&wm.mode, 1, __ATOMIC_RELAXED);
		for (int n = 0; n < g.node_limit; n++) {
			_nd_arena_t *a = &g.arenas[n];
			uint64_t c = __atomic_load_n(&a->committed, __ATOMIC_RELAXED);
			__atomic_store_n(&a->wm_c_prev, __atomic_load_n(&a->wm_c_last, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
			__atomic_store_n(&a->wm_c_last, c, __ATOMIC_RELAXED);
			__atomic_store_n(&a->wm_avail, avail[n] >> ND_PAGE_SHIFT, __ATOMIC_RELAXED);
		}
	}
	__atomic_store_n(&wm.stamp, now, __ATOMIC_RELEASE);
	_nd_unlock(&wm.lock);
}

/* Pages node na may commit fresh beyond the slack (the estimate, re-read
 * as described above when it does not cover need); UINT64_MAX when the
 * node has no headroom check (the MemFree rule without MemFree). */
static uint64_t room_spare(_nd_arena_t *na, uint64_t need)
{
	uint64_t now = _nd_os_now_ns();
	/* mode: written under wm.lock, read here without it */
	if (__atomic_load_n(&wm.mode, __ATOMIC_ACQUIRE) == 0) {
		wm_read(now, true);
	} else {
		uint64_t age = now - __atomic_load_n(&wm.stamp, __ATOMIC_ACQUIRE);
		if (age >= WM_REREAD_NS && age >= WM_REREAD_NS * wm_periods(na))
			wm_read(now, false);
	}
	if (__atomic_load_n(&wm.mode, __ATOMIC_RELAXED) < 0) {
		uint64_t f = _nd_topo_node_free(na->node), keep = na->floor;
		if (f == UINT64_MAX)
			return UINT64_MAX;
		return f > keep ? (f - keep) >> ND_PAGE_SHIFT : 0;
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
	/* Why a node falls back (NODALLOC_VERBOSE): once per read and node */
	uint64_t st = __atomic_load_n(&wm.stamp, __ATOMIC_RELAXED);
	if (est < want && _nd_msg_verbose() && __atomic_exchange_n(&na->wm_said, st, __ATOMIC_RELAXED) != st)
		_nd_msg_info("node %d: room for %lld of %llu fresh pages (headroom %lld at the last read of /proc/zoneinfo, "
			     "%lld committed since the read before, 4 MiB slack)",
			     na->node, (long long)(est > (int64_t)WM_SLACK_PAGES ? est - (int64_t)WM_SLACK_PAGES : 0),
			     (unsigned long long)need, (long long)__atomic_load_n(&na->wm_avail, __ATOMIC_RELAXED),
			     (long long)(__atomic_load_n(&na->committed, __ATOMIC_RELAXED) -
					 __atomic_load_n(&na->wm_c_prev, __ATOMIC_RELAXED)));
	return est > (int64_t)WM_SLACK_PAGES ? (uint64_t)(est - (int64_t)WM_SLACK_PAGES) : 0;
}

uint64_t _nd_room_wm_reads(void)
{
	return __atomic_load_n(&wm.reads, __ATOMIC_RELAXED);
}

/* May node na commit need more fresh pages? */
static bool room_ok(_nd_arena_t *na, uint64_t need)
{
	return room_spare(na, need) >= need;
}

uint64_t _nd_room_spare(_nd_arena_t *na, uint64_t need)
{
	if (!na->usable)
		return 0;
	if (!g.check_free)
		return UINT64_MAX;
	return room_spare(na, need);
}

bool _nd_room_take(_nd_arena_t *na, uint64_t n, uint64_t check_pages)
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
		_nd_room_give(na, n);
		return false;
	}
	return true;
}

void _nd_room_fresh(_nd_arena_t *a, uint64_t i, uint64_t n)
{
	char *p = a->base + (i << ND_PAGE_SHIFT);
	size_t len = (size_t)n << ND_PAGE_SHIFT;
	if (g.lazy && g.bind && !a->mixed)
		_nd_room_bind(p, len, a->node);
	/* NODALLOC_THP: always = every node page may be huge (the slab and
	 * small runs too, as jemalloc's thp:always); never = none, whatever
	 * the system's mode; madvise under the system's madvise mode: none
	 * but big runs (page.c advises each), and NOHUGEPAGE everywhere else
	 * (the same there) so that a big run's range, given back with
	 * NOHUGEPAGE, merges with its neighbours again; lazy slots need no
	 * such advice (a freed big run is unmapped) and leave it out: one
	 * call less per run mapped. The mixed slot keeps its own rules
	 * (spread.c). */
	if (!a->mixed && (g.thp != ND_THP_MADVISE || (g.thp_runs && !g.lazy)))
		_nd_os_madvise(p, len, g.thp == ND_THP_ALWAYS ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

/*
 * Huge pages that cost more than they save (NODALLOC_THP_SLOW_US). A huge
 * page can only come from a free block of 2 MiB or more. On a VM whose
 * balloon reports free memory to the host (free page reporting: blocks of
 * 2 MiB and up, a few seconds after they are freed), such blocks are
 * mostly ones the host took back: the first write faults each of its 512
 * host pages in again, ~4.5 ms of CPU per huge page here against 0.25 ms
 * for a warm block and ~0.6 ms for 512 small pages, which come from
 * smaller free blocks that are never reported (docs/benchmarks.md, "The
 * large row and the host"). Under defrag madvise a fault on fragmented
 * memory compacts first: slow the same way. So every fresh big run's
 * first whole 2 MiB is faulted here (MADV_POPULATE_WRITE: contents
 * untouched; the first, which a first touch anywhere in it would fault
 * whole anyway) and its thread CPU time read (waiting for a CPU does not
 * count). Slow: the rest of the run goes back to NOHUGEPAGE. Each probe
 * sets how many of the next big runs get no advice (and no probe): a
 * slow one 1, then 4x that up to 64, a fast one half of it. Asymmetric,
 * as the costs are: huge pages pay only while fewer than ~1 in 12 blocks
 * are cold, and cold and warm blocks come in stretches of tens of huge
 * pages, so a fast probe next to cold ones says less than a slow one.
 * No probe is wasted: the large cache, which moves cached pages over a
 * new run's 2 MiB pages, has its runs advised (and probed) after the
 * moves, on the part they left fresh (large.c, cache_move). Before, the
 * run's last 2 MiB was probed before the moves, 1 run in 4 without a
 * back-off (every run: wl_large settled 0.370 s CPU against 0.356), and
 * the 3 runs between took cold huge pages unprobed (task large27).
 * Relaxed atomics, no lock: racing threads only skip a run more or less.
 */
#define HUGE_SKIP_MAX 64u
static struct {
	uint32_t skip;    /* big runs still to leave unadvised */
	uint32_t backoff; /* the last probe's skip (0: no back-off) */
	bool no_probe;    /* MADV_POPULATE_WRITE refused (Linux < 5.14): advise as before */
	uint64_t probes, slow, skipped; /* tests */
} hp;

static bool huge_skip(bool take)
{
	uint32_t s = __atomic_load_n(&hp.skip, __ATOMIC_RELAXED);
	while (s && !__atomic_compare_exchange_n(&hp.skip, &s, take ? s - 1 : s, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return s != 0;
}

bool _nd_room_huge(char *p, size_t len, bool fresh)
{
	if (huge_skip(fresh)) {
		__atomic_fetch_add(&hp.skipped, 1, __ATOMIC_RELAXED);
		return false; /* the range keeps its NOHUGEPAGE */
	}
	_nd_os_madvise(p, len, MADV_HUGEPAGE);
	if (!fresh || !g.thp_slow_ns || __atomic_load_n(&hp.no_probe, __ATOMIC_RELAXED))
		return true;
	uint64_t t0 = _nd_os_thread_cpu_ns();
	int r = _nd_os_madvise(p, ND_HUGE_SIZE, MADV_POPULATE_WRITE);
	uint64_t t = _nd_os_thread_cpu_ns() - t0;
	if (r == -EINVAL || !t0)
		__atomic_store_n(&hp.no_probe, true, __ATOMIC_RELAXED);
	if (r != 0 || !t0) /* else ENOMEM, EFAULT...: the program's own touch faults it */
		return true;
	__atomic_fetch_add(&hp.probes, 1, __ATOMIC_RELAXED);
	bool slow = t > g.thp_slow_ns;
	uint32_t b = __atomic_load_n(&hp.backoff, __ATOMIC_RELAXED);
	b = !slow ? b / 2 : !b ? 1 : b >= HUGE_SKIP_MAX / 4 ? HUGE_SKIP_MAX : 4 * b;
	__atomic_store_n(&hp.backoff, b, __ATOMIC_RELAXED);
	__atomic_store_n(&hp.skip, b, __ATOMIC_RELAXED);
	if (!slow)
		return true;
	__atomic_fetch_add(&hp.slow, 1, __ATOMIC_RELAXED);
	if (len > ND_HUGE_SIZE)
		_nd_os_madvise(p + ND_HUGE_SIZE, len - ND_HUGE_SIZE, MADV_NOHUGEPAGE);
	return false;
}

void _nd_room_huge_counts(uint64_t *probes, uint64_t *slow, uint64_t *skipped)
{
	*probes = __atomic_load_n(&hp.probes, __ATOMIC_RELAXED);
	*slow = __atomic_load_n(&hp.slow, __ATOMIC_RELAXED);
	*skipped = __atomic_load_n(&hp.skipped, __ATOMIC_RELAXED);
}

/*
 * A slot's part given to the buddy allocator (a->mapped) grows upward
 * into its hole: to at least need pages, up to a power of two of pages
 * (64 KiB at least): the part's free blocks are those a buddy of the
 * whole slot would have split off, and runs are placed as they were
 * (adjacent when taken in turn: test_large_cache). Eager: the part is
 * mapped already. Lazy (an address space limit): nothing is mapped here;
 * a run maps its clean pages when it is taken (_nd_room_map), and clean
 * free pages are unmapped (purge.c), so the slot holds address space
 * only for runs and dirty free pages. The new pages join the free lists
 * clean; the hole starts after them.
 */
bool _nd_room_grow_to(_nd_arena_t *a, uint64_t need)
{
	_nd_buddy_t *b = &a->bd;
	uint64_t slot = 1ull << g.order_max, m = a->mapped;
	if (need > slot || need <= m)
		return false;
	uint64_t want;
	for (want = GROW_MIN_EAGER; want < need; want <<= 1)
		;
	if (want > slot)
		want = slot;
	if (g.lazy && !a->mixed)
		_nd_room_stats(_nd_stats_reserved, a->node, (int64_t)(want - m));
	/* The hole's head is implied by mapped, not written: at page 2^k
	 * (k >= 7), it was the first descriptor of a page of its own, one
	 * resident page in every process whose slot grew past 512 KiB
	 * (issue 11). Past mapped every descriptor is a TAIL: never written,
	 * or unlinked by a shrink. */
	ND_ASSERT(b->desc[m].state == ND_PG_TAIL, "a slot's hole starts with an unwritten descriptor");
	_nd_buddy_give(b, m, want - m, false, true);
	a->mapped = want;
	return true;
}

/*
 * Lazy reservation: pages [i, i+n) of slot a, just taken by a run (ours:
 * no lock), are clean; map them (MAP_FIXED: a clean page is unmapped, or
 * mapped and zero, so nothing is lost), bound to the node, with the huge
 * page advice. 0, or -errno (-ENOMEM: the address space limit).
 */
int _nd_room_map(_nd_arena_t *a, uint64_t i, uint64_t n)
{
	int r = _nd_os_mmap_fixed(a->base + (i << ND_PAGE_SHIFT), (size_t)n << ND_PAGE_SHIFT, true);
	if (r < 0) {
		if (r != -ENOMEM && !__atomic_exchange_n(&warned_grow, 1, __ATOMIC_RELAXED))
			_nd_msg_warn("page: slot of node %d: cannot map %llu pages (errno %d)", a->node,
				     (unsigned long long)n, -r);
		return r;
	}
	_nd_room_fresh(a, i, n);
	return 0;
}

/* The run [i, i+n) just taken from lazy slot a maps its clean pages (those
 * without ND_PGF_DIRTY: dirty ones are mapped), stretch by stretch. On
 * failure the stretches mapped stay mapped (zero pages: still clean). */
int _nd_room_map_run(_nd_arena_t *a, uint64_t i, uint64_t n, uint64_t dirty)
{
	if (!dirty)
		return _nd_room_map(a, i, n);
	const _nd_pagedesc_t *d = a->bd.desc;
	for (uint64_t j = 0; j < n;) {
		if (d[i + j].flags & ND_PGF_DIRTY) {
			j++;
			continue;
		}
		uint64_t e = j;
		while (e < n && !(d[i + e].flags & ND_PGF_DIRTY))
			e++;
		int r = _nd_room_map(a, i + j, e - j);
		if (r < 0)
			return r;
		j = e;
	}
	return 0;
}

bool _nd_room_grow(_nd_arena_t *a, unsigned k)
{
	uint64_t bl = 1ull << k;
	return _nd_room_grow_to(a, ND_ALIGN_UP(a->mapped, bl) + bl);
}

/*
 * Clean free blocks that end where the grown part ends go back to the
 * hole, so a slot whose runs were all freed and purged is one hole again,
 * as at setup (lazy: those pages are unmapped already). Lock held.
 */
void _nd_room_shrink(_nd_arena_t *a)
{
	_nd_buddy_t *b = &a->bd;
	uint64_t m = a->mapped, old = m;
	while (m) {
		/* the block ending at m, if free: order o with its head at m - 2^o */
		unsigned top = (unsigned)__builtin_ctzll(m), o = 0;
		for (; o <= top; o++) {
			const _nd_pagedesc_t *d = &b->desc[m - (1ull << o)];
			if (d->state == ND_PG_FREE && d->order == o)
				break;
		}
		if (o > top || b->desc[m - (1ull << o)].npages)
			break; /* a run, or committed pages, end the part */
		m -= 1ull << o;
		_nd_buddy_del(b, (uint32_t)m);
	}
	if (m == old)
		return;
	a->mapped = m; /* the unlinked heads are TAILs: the hole's, implied */
	if (g.lazy && !a->mixed) /* lazy: reserved follows the part (grow counts it) */
		_nd_room_stats(_nd_stats_reserved, a->node, -(int64_t)(old - m));
}
