// SPDX-License-Identifier: MIT
/*
 * Spread runs (docs/arenas.md, docs/policy.md): one contiguous run of the
 * mixed slot whose granules are spread over nodes by an interleave or
 * weighted policy, by offset. Each granule is charged to its node (room.c)
 * and bound to it, or the whole run is left to the kernel's own
 * interleave (page granules). The pages of a run being placed or freed
 * belong to the thread working on them (limbo): their descriptors are
 * edited without the slot lock.
 */
#include <errno.h>
#include <sys/mman.h> /* MADV_* values only: the calls go through os.c */

#include "internal.h"

#define g _nd_page_g
#define HUGE_PAGES (ND_HUGE_SIZE >> ND_PAGE_SHIFT) /* 512: pages of a 2 MiB huge page */

static int warned_spread_mbind, warned_fresh;

static inline void *page_addr(char *base, uint64_t i)
{
	return base + (i << ND_PAGE_SHIFT);
}

static int cpu_node(void)
{
	const _nd_topo_t *t = _nd_topo();
	int c = _nd_topo_cpu();
	return c >= 0 && c < t->cpu_limit ? t->cpu_node[c] : -1;
}

/* Pages [i, i+n) of the mixed slot, all placed: give their node charges
 * back and forget their node. */
static void spread_release(_nd_arena_t *m, uint64_t i, uint64_t n)
{
	uint64_t j = 0;
	while (j < n) {
		int node = m->bd.desc[i + j].node;
		uint64_t k = j;
		while (k < n && m->bd.desc[i + k].node == node) {
			m->bd.desc[i + k].node = -1;
			m->bd.desc[i + k].flags &= (uint8_t)~ND_PGF_PLACED;
			k++;
		}
		if (node >= 0 && node < g.node_limit) {
			_nd_arena_t *na = &g.arenas[node];
			_nd_room_give(na, k - j);
			_nd_room_stats(_nd_stats_in_use, node, -(int64_t)(k - j));
			__atomic_sub_fetch(&na->committed, k - j, __ATOMIC_RELAXED);
			_nd_room_stats(_nd_stats_committed, node, -(int64_t)(k - j));
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
		_nd_room_committed(&g.arenas[n], (int64_t)placed[n]);
		_nd_room_stats(_nd_stats_in_use, n, (int64_t)placed[n]);
	}
}

static void mixed_give_back(_nd_arena_t *m, uint32_t i, uint64_t n)
{
	_nd_lock(&m->lock);
	_nd_buddy_give(&m->bd, i, n, false, true);
	_nd_room_shrink(m);
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

/* Charges granule c pages to node n for a spread run that plans plan
 * pages there in all (its share and what it took over): without a check
 * while the pages verified for this run (ok[n]) cover it, else after a
 * headroom check, which verifies plan, or failing that what the node has
 * room for. A node refused (no room left, capacity) is full for the rest
 * of the run: its granules fall back without a check each. */
static bool spread_take(int n, uint64_t c, uint64_t plan, const uint64_t *placed, uint64_t *ok, uint8_t *full)
{
	_nd_arena_t *na = &g.arenas[n];
	if (full[n])
		return false;
	if (placed[n] + c > ok[n]) {
		uint64_t spare = _nd_room_spare(na, plan);
		ok[n] = spare < plan ? spare : plan;
	}
	if (placed[n] + c > ok[n] || !_nd_room_take(na, c, 0)) {
		full[n] = 1;
		return false;
	}
	return true;
}

/* A policy's round tabulated: granule g goes to node[(g) mod len] (interleave:
 * one granule per node of the set, ascending; weighted: one per unit of
 * weight), so that the walks over every page or granule of a run (placing,
 * matching a cached run) read a table. Asking the policy counts the
 * set's nodes each time (16 words of mask, a libgcc popcount each):
 * wl_spread's matching walk took 30M instructions per 1,000 blocks, more
 * than the rest of the library. len 0: no table (a round longer than
 * ROUND_MAX, no node): ask the policy. */
#define ROUND_MAX 64
typedef struct {
	uint32_t len;
	int16_t node[ROUND_MAX];
} round_t;

static void round_of(const nd_policy_t *pol, round_t *r)
{
	uint64_t w = _nd_policy_round(pol);
	r->len = 0;
	if (!w || w > ROUND_MAX)
		return;
	for (uint64_t k = 0; k < w; k++) {
		int n = _nd_policy_node_for_granule(pol, k);
		if (n < 0)
			return;
		r->node[k] = (int16_t)n;
	}
	r->len = (uint32_t)w;
}

/* A walk of granules g0, g0+1, ... of pol: the node of the next one. */
typedef struct {
	const nd_policy_t *pol;
	const round_t *r;
	uint64_t g;   /* granule index (no table) */
	uint32_t at;  /* its place in the table */
} round_walk_t;

static round_walk_t round_walk(const nd_policy_t *pol, const round_t *r, uint64_t g0)
{
	return (round_walk_t){ .pol = pol, .r = r, .g = g0, .at = r->len ? (uint32_t)(g0 % r->len) : 0 };
}

static inline int round_next(round_walk_t *w)
{
	if (!w->r->len)
		return _nd_policy_node_for_granule(w->pol, w->g++);
	int n = w->r->node[w->at];
	if (++w->at == w->r->len)
		w->at = 0;
	return n;
}

/* The granule of pol in pages' log2, as spread runs use it. */
static unsigned granule_shift(const nd_policy_t *pol)
{
	return pol->granularity_shift > g.order_max ? g.order_max : pol->granularity_shift;
}

uint64_t _nd_spread_first(size_t npages, const nd_policy_t *pol)
{
	unsigned gs = granule_shift(pol);
	if (gs == 0 && kernel_interleave_ok(pol))
		return ND_SPREAD_BY_ADDRESS;
	return _nd_policy_spread_start(pol, (uint64_t)npages >> gs, (npages & ((1ull << gs) - 1)) != 0);
}

/* Mixed-slot page index of run head p. */
static uint64_t mixed_index(const _nd_arena_t *m, const void *p)
{
	return (uint64_t)((const char *)p - m->base) >> ND_PAGE_SHIFT;
}

/* Pages [off, off + npages) of run p laid out as a fresh run of npages
 * from first would be? rt: pol's round (round_of). */
static bool matches_at(const void *p, uint64_t off, size_t npages, const nd_policy_t *pol, const round_t *rt,
		       uint64_t first)
{
	_nd_arena_t *m = &g.arenas[g.node_limit];
	uint64_t i = mixed_index(m, p);
	unsigned gs = granule_shift(pol);
	uint64_t g0 = first == ND_SPREAD_BY_ADDRESS ? ((uintptr_t)p >> ND_PAGE_SHIFT) + off : first;
	if (first == ND_SPREAD_BY_ADDRESS && gs) /* the kernel's pages are single granules */
		return false;
	/* a fresh run would be advised huge: so must the cached one be (not
	 * one of smaller granules with the same nodes) */
	if (g.huge_spread && gs >= ND_HUGE_SHIFT - ND_PAGE_SHIFT && npages >= HUGE_PAGES &&
	    !(m->bd.desc[i].flags & ND_PGF_HUGE))
		return false;
	/* every page: a run large.c joined may hold a partial granule inside */
	round_walk_t w = round_walk(pol, rt, g0);
	for (uint64_t s = off, end = off + npages; s < end;) {
		int want = round_next(&w);
		for (uint64_t e = s + (1ull << gs) < end ? s + (1ull << gs) : end; s < e; s++)
			if (m->bd.desc[i + s].node != want)
				return false;
	}
	return true;
}

bool _nd_spread_matches(const void *p, size_t npages, const nd_policy_t *pol, uint64_t first)
{
	round_t rt;
	round_of(pol, &rt);
	return matches_at(p, 0, npages, pol, &rt, first);
}

int64_t _nd_spread_fit(const void *p, uint64_t run_pages, size_t npages, const nd_policy_t *pol, uint64_t first, bool cut)
{
	round_t rt;
	round_of(pol, &rt);
	/* the layout repeats every round: later offsets match as these do */
	uint64_t gp = 1ull << granule_shift(pol), offs = first == ND_SPREAD_BY_ADDRESS ? 1 : rt.len ? rt.len : 1;
	for (uint64_t k = 0; k < offs && k * gp + npages <= run_pages; k++) {
		uint64_t o = k * gp;
		if ((cut || o + npages == run_pages) && matches_at(p, o, npages, pol, &rt, first))
			return (int64_t)o;
	}
	return -1;
}

void _nd_spread_in_use(const void *p, size_t npages, int sign, const nd_policy_t *pol)
{
	_nd_arena_t *m = &g.arenas[g.node_limit];
	uint64_t i = mixed_index(m, p);
	for (uint64_t j = 0; j < npages;) {
		int node = m->bd.desc[i + j].node;
		uint64_t k = j;
		while (k < npages && m->bd.desc[i + k].node == node)
			k++;
		if (node >= 0 && node < g.node_limit)
			_nd_room_stats(_nd_stats_in_use, node, sign * (int64_t)(k - j));
		j = k;
	}
	if (!pol)
		return;
	/* numa_hit and the rest as the run's placement counted them: each
	 * granule where its policy wanted it (_nd_spread_matches) */
	unsigned gs = granule_shift(pol);
	int cn = cpu_node();
	for (uint64_t s = 0; s < npages; s += 1ull << gs) {
		int n = m->bd.desc[i + s].node;
		_nd_stats_count(n, n, cn, true);
	}
}

void _nd_spread_uncount(const void *p, size_t npages, const nd_policy_t *pol, uint64_t first)
{
	_nd_arena_t *m = &g.arenas[g.node_limit];
	uint64_t i = mixed_index(m, p);
	unsigned gs = granule_shift(pol);
	uint64_t g0 = first == ND_SPREAD_BY_ADDRESS ? (uintptr_t)p >> ND_PAGE_SHIFT : first;
	bool il = _nd_policy_spreads(pol);
	int cn = cpu_node(); /* the placement's unless the thread moved since */
	for (uint64_t gi = 0; gi << gs < npages; gi++)
		_nd_stats_uncount(_nd_policy_node_for_granule(pol, g0 + gi), m->bd.desc[i + (gi << gs)].node, cn, il);
}

/* first: the index of the run's first granule, or ND_SPREAD_BY_ADDRESS
 * (_nd_spread_first). */
void *_nd_spread_alloc(size_t npages, const nd_policy_t *pol, uint64_t first)
{
	_nd_arena_t *m = &g.arenas[g.node_limit];
	unsigned gs = granule_shift(pol);
	uint64_t gp = 1ull << gs;
	/* Granules aligned to their size (up to 2 MiB): huge pages stay possible. */
	uint64_t align = gp < (ND_HUGE_SIZE >> ND_PAGE_SHIFT) ? gp : (ND_HUGE_SIZE >> ND_PAGE_SHIFT);
	unsigned k = _nd_page_ceil_log2(npages > align ? npages : align);
	if (k > g.order_max) {
		errno = EFBIG; /* page.c says why */
		return NULL;
	}
	_nd_lock(&m->lock);
	uint64_t d;
	uint32_t i = _nd_buddy_take(&m->bd, k, false, &d);
	if (i == ND_BUDDY_NIL && _nd_room_grow(m, k)) /* lazy reservation */
		i = _nd_buddy_take(&m->bd, k, false, &d);
	if (i != ND_BUDDY_NIL && npages < (1ull << k))
		_nd_buddy_give_tail(&m->bd, i, k, 0, npages);
	_nd_unlock(&m->lock);
	if (i == ND_BUDDY_NIL) {
		errno = ENOMEM;
		return NULL;
	}
	/* Lazy reservation: the run's pages (clean: mixed runs are purged
	 * when freed) are mapped now, once more after the address space of
	 * free pages went back (page.c's node runs do the same) */
	if (g.lazy) {
		int r = _nd_room_map(m, i, npages);
		if (r == -ENOMEM) {
			_nd_purge_release();
			r = _nd_room_map(m, i, npages);
		}
		if (r < 0) {
			_nd_os_munmap(page_addr(m->base, i), (size_t)npages << ND_PAGE_SHIFT);
			mixed_give_back(m, i, npages);
			errno = ENOMEM;
			return NULL;
		}
	}
	/* Page-granule interleave on real nodes is the kernel's own (see
	 * kernel_interleave_ok): page p goes to the set's node number
	 * (p's address >> 12) mod |set|, so granule indexes follow the
	 * address. Otherwise the cursor moves by the whole granules only: the
	 * node left with a partial one starts the next run (docs/policy.md). */
	bool kil = first == ND_SPREAD_BY_ADDRESS;
	uint64_t g0 = kil ? (uintptr_t)page_addr(m->base, i) >> ND_PAGE_SHIFT : first;
	bool huge = g.huge_spread && gs >= ND_HUGE_SHIFT - ND_PAGE_SHIFT;
	int hr = -1; /* 0: advised huge */
	if (npages >= HUGE_PAGES && !kil && !g.lazy)
		hr = spread_fresh(page_addr(m->base, i), npages, huge);
	else if (npages >= HUGE_PAGES && !kil && huge) /* lazy: mapped fresh above */
		hr = _nd_os_madvise(page_addr(m->base, i), (size_t)npages << ND_PAGE_SHIFT, MADV_HUGEPAGE);
	/* the spread cache reuses it for huge requests only if advised */
	m->bd.desc[i].flags = (uint8_t)((m->bd.desc[i].flags & ~ND_PGF_HUGE) | (huge && hr == 0 ? ND_PGF_HUGE : 0));
	/* Place every granule: its node by offset, else that node's fallback
	 * under the policy. The pages are ours (limbo): no lock. Headroom:
	 * each node is checked for its own share of the run (a node that has
	 * room for its share takes it, whatever the run's size), and checked
	 * again, for its share plus what it took over, whenever a granule
	 * falls back to it. A node short of room for all of that takes what
	 * it has room for (ok[n]) and only the rest falls back: before, its
	 * whole share fell back, and a 16-node run put 0 pages on a node
	 * with room for 150 of its 168 MiB. This run's pages are counted as
	 * committed only at the end, so the checks see the node as it was
	 * plus share[n]. */
	uint64_t ngran = (npages + gp - 1) >> gs;
	int L = g.node_limit;
	uint64_t share[L], placed[L], ok[L];
	uint8_t full[L];
	for (int n = 0; n < L; n++)
		share[n] = placed[n] = ok[n] = full[n] = 0;
	round_t rt;
	round_of(pol, &rt);
	round_walk_t w = round_walk(pol, &rt, g0);
	for (uint64_t gi = 0; gi < ngran; gi++) {
		uint64_t s = gi << gs, c = npages - s < gp ? npages - s : gp;
		int want = round_next(&w);
		/* Kept for the statistics below (the head's user is reset then). */
		m->bd.desc[i + s].user = (uintptr_t)(want + 1);
		if (want >= 0 && want < L)
			share[want] += c;
	}
	for (uint64_t gi = 0; gi < ngran; gi++) {
		uint64_t s = gi << gs, c = npages - s < gp ? npages - s : gp;
		int want = (int)m->bd.desc[i + s].user - 1, got = -1;
		if (want >= 0 && want < L && spread_take(want, c, share[want], placed, ok, full)) {
			got = want;
		} else {
			/* want forced: the thread's interleave cursor does not move */
			_nd_policy_iter_t it;
			for (int n = _nd_policy_first_n(&it, pol, want, c); n >= 0; n = _nd_policy_next(&it)) {
				if (n == want || n < 0 || n >= L || full[n])
					continue;
				share[n] += c;
				if (spread_take(n, c, share[n], placed, ok, full)) {
					got = n;
					break;
				}
				share[n] -= c;
			}
		}
		if (got < 0) {
			placed_flush(placed, L);
			for (uint64_t j = 0; j < ngran; j++)
				m->bd.desc[i + (j << gs)].user = 0;
			spread_release(m, i, s); /* undo the granules placed */
			mixed_give_back(m, i, npages);
			errno = ENOMEM;
			return NULL;
		}
		for (uint64_t j = 0; j < c; j++) {
			m->bd.desc[i + s + j].node = got;
			m->bd.desc[i + s + j].flags |= ND_PGF_PLACED;
		}
		placed[got] += c;
		kil &= got == want;
	}
	placed_flush(placed, L);
	/* Bind: the whole run at once when the kernel interleaves it (no
	 * granule fell back), else each stretch of one node. Then count per
	 * granule. */
	if (kil) {
		int r = _nd_os_mbind(page_addr(m->base, i), (size_t)npages << ND_PAGE_SHIFT, ND_MPOL_INTERLEAVE,
				     pol->nodes.bits, (unsigned long)g.node_limit, 0);
		/* A huge page would put 2 MiB on one node (and reach into
		 * neighbouring runs of a merged VMA). */
		if (r == 0)
			r = _nd_os_madvise(page_addr(m->base, i), (size_t)npages << ND_PAGE_SHIFT, MADV_NOHUGEPAGE);
		if (r < 0 && !__atomic_exchange_n(&warned_spread_mbind, 1, __ATOMIC_RELAXED))
			_nd_msg_warn("page: mbind of an interleaved run failed (errno %d): pages placed by first touch", -r);
		m->bd.desc[i].flags |= ND_PGF_KIL;
	} else if (g.bind) {
		uint64_t j = 0;
		while (j < npages) {
			int node = m->bd.desc[i + j].node;
			uint64_t e = j;
			while (e < npages && m->bd.desc[i + e].node == node)
				e++;
			int r = _nd_room_bind(page_addr(m->base, i + j), (size_t)(e - j) << ND_PAGE_SHIFT, node);
			if (r < 0 && !__atomic_exchange_n(&warned_spread_mbind, 1, __ATOMIC_RELAXED))
				_nd_msg_warn("page: mbind of a spread run failed (errno %d): granules placed by first touch", -r);
			j = e;
		}
	}
	bool il = _nd_policy_spreads(pol);
	int cn = cpu_node();
	for (uint64_t gi = 0; gi < ngran; gi++) {
		_nd_pagedesc_t *gd = &m->bd.desc[i + (gi << gs)];
		_nd_stats_count((int)gd->user - 1, gd->node, cn, il);
		gd->user = 0;
	}
	_nd_lock(&m->lock);
	int node0 = m->bd.desc[i].node;
	_nd_buddy_mark_run(&m->bd, i, npages, node0);
	_nd_unlock(&m->lock);
	return page_addr(m->base, i);
}


void _nd_spread_free(_nd_arena_t *a, uint32_t i, uint64_t n, bool kil)
{
	/* Always DONTNEED: a page kept by MADV_FREE would stay on its old
	 * node when the range is bound elsewhere. A run the kernel
	 * interleaved keeps its policy (its VMA stays merged; the next run
	 * here binds its range anyway). Another big run gets a fresh mapping
	 * instead (spread_fresh): also frees its page tables, drops policy
	 * and advice. */
	void *p = page_addr(a->base, i);
	if (kil) {
		_nd_purge_range(a, p, (size_t)n << ND_PAGE_SHIFT, MADV_DONTNEED);
	} else if (n < HUGE_PAGES || g.lazy || spread_fresh(p, n, false) < 0) { /* lazy: unmapped */
		if (_nd_purge_range(a, p, (size_t)n << ND_PAGE_SHIFT, MADV_DONTNEED) && g.bind)
			_nd_os_mbind(p, (size_t)n << ND_PAGE_SHIFT, ND_MPOL_DEFAULT, NULL, 0, 0);
	}
	spread_release(a, i, n);
	mixed_give_back(a, i, n);
}
