// SPDX-License-Identifier: MIT
/*
 * The buddy allocator of one slot, over its page descriptors
 * (docs/arenas.md). Pure: no system call, no lock (the caller holds the
 * slot's), no global state, so tests drive it on a plain array.
 *
 * Descriptor invariants (slab relies on them): the head of a free block is
 * ND_PG_FREE with its order, the head of a run is ND_PG_RUN with npages,
 * every other page is ND_PG_TAIL; the first page of a range that is not
 * mapped (yet) is ND_PG_HOLE with npages, or implied (the page level's
 * slots: a hole from the caller's limit to the slot's end, its head's
 * descriptor not written; _nd_buddy_check_to). A free block is aligned to its
 * size. A run that is not a power of two takes a block and returns its
 * tail at once, so runs are exact.
 *
 * Committed memory: ND_PGF_DIRTY on a page of a free block means "counted
 * as committed"; a free head keeps the number of such pages in npages. A
 * block holding a dirty page is dirty: it stays at or below purge_order
 * (invariant I: dirty blocks stop merging there and wait for a purge pass,
 * purge.c, after which _nd_buddy_merge_clean merges what became clean),
 * and one of purge_order serves small runs only, so a big run (at least
 * the purge threshold, so of order purge_order or more) is always cut
 * from clean memory. A small run of more than half a purge block takes
 * a block of purge_order: when these were all clean, every such run (a
 * held-out stress's 640-800 KB blocks) faulted in fresh pages while its
 * freed predecessors waited dirty in two halves (215k of its 280k fresh
 * pages).
 * Up to purge_order a dirty block merges with a clean buddy too while
 * the result stays at least 1/4 dirty, the count staying exact
 * (splitting counts flags, and keeps the dirtier half for the run): a
 * freed run that was not a power of two otherwise leaves dirty pieces of
 * 1-3 pages beside the clean tail it gave back when it was cut, too small
 * for any slab (bench wl_footprint: 8 MiB of them, committed, at its
 * peak); with the 1/4 rule they reach 4 pages at least. A dirty page
 * never merges into a big clean block, to be split out of it again on the
 * next allocation (300 ns per 1-page pair, docs/arenas.md; up to order
 * 2 here).
 *
 * Clean and dirty free blocks are on separate lists per order (head[],
 * dhead[]): a run is cut from a dirty block when one of a fitting order
 * exists, so freed memory is reused before fresh pages are faulted in.
 *
 * The tail of a big run (its block of order >= purge_order, so clean) is
 * spare (shead[], ND_PGF_SPARE on the head): taken only when no dirty or
 * clean block fits. A small run cut from such a tail stayed when the big
 * run was freed and kept its block from merging again: the fuzzer's
 * 16-64 MiB runs failed with ENOMEM on 2 GiB nodes with 120 MiB in use,
 * every 64 MiB block of the 4 GiB slot holding a few small runs. Small
 * runs now split clean blocks beside each other instead.
 */
#include "internal.h"

#define NIL ND_BUDDY_NIL

static inline unsigned floor_log2(uint64_t x)
{
	return 63 - (unsigned)__builtin_clzll(x);
}

void _nd_buddy_init(_nd_buddy_t *b, _nd_pagedesc_t *desc, unsigned order_max, unsigned purge_order)
{
	ND_ASSERT(order_max <= ND_BUDDY_MAX_ORDER, "a slot's pages are indexed by uint32");
	b->desc = desc;
	b->free_pages = b->dirty_free = b->nblocks = 0;
	b->order_max = order_max;
	b->purge_order = purge_order;
	for (unsigned o = 0; o <= ND_BUDDY_MAX_ORDER; o++)
		b->head[o] = b->dhead[o] = b->dtail[o] = b->shead[o] = NIL;
	b->seq = 0;
	b->next_at = 0;
	b->low_at = 0;
	b->gap_miss = 0;
	b->span_steps = 0;
}

/* The list a free block of order o belongs on. */
static inline uint32_t *list_of(_nd_buddy_t *b, unsigned o, uint64_t dirty, bool spare)
{
	return dirty ? &b->dhead[o] : spare ? &b->shead[o] : &b->head[o];
}

static void push(_nd_buddy_t *b, uint32_t i, unsigned o, uint64_t dirty, bool spare)
{
	ND_ASSERT(o <= b->order_max && (i & ((1ull << o) - 1)) == 0, "a free block is aligned to its size");
	ND_ASSERT(dirty <= (1ull << o), "a free block's dirty pages are some of its pages");
	ND_ASSERT(dirty == 0 || o <= b->purge_order, "a dirty free block is not above purge_order (invariant I)");
	_nd_pagedesc_t *d = &b->desc[i];
	if (i < b->low_at)
		b->low_at = i; /* a stretch may start here now */
	if (dirty)
		b->gap_miss = 0; /* a gap may hold a run now */
	d->state = ND_PG_FREE;
	/* a write first: the split of a growing slot pushes heads on
	 * descriptor pages nothing touched yet, and gcc loaded flags (read
	 * below) first, which mapped the zero page, then faulted again at the
	 * first store (wl_footprint 300,000: 358 page faults) */
	__asm__ volatile("" ::: "memory");
	d->order = (uint8_t)o;
	d->npages = dirty;
	d->use = ND_USE_NONE;
	d->user = dirty ? ++b->seq : 0;
	d->prev = NIL;
	ND_ASSERT(!spare || !dirty, "a spare block is clean");
	d->flags = (uint8_t)((d->flags & ~ND_PGF_SPARE) | (spare ? ND_PGF_SPARE : 0));
	uint32_t *l = list_of(b, o, dirty, spare);
	d->next = *l;
	if (d->next != NIL)
		b->desc[d->next].prev = i;
	else if (dirty)
		b->dtail[o] = i;
	*l = i;
	b->free_pages += 1ull << o;
	/* written under the slot lock, read lock-free (page.c): relaxed atomics */
	__atomic_store_n(&b->dirty_free, b->dirty_free + dirty, __ATOMIC_RELAXED);
	b->nblocks++;
}

void _nd_buddy_push(_nd_buddy_t *b, uint32_t i, unsigned o, uint64_t dirty)
{
	push(b, i, o, dirty, false);
}

void _nd_buddy_del(_nd_buddy_t *b, uint32_t i)
{
	_nd_pagedesc_t *d = &b->desc[i];
	unsigned o = d->order;
	ND_ASSERT(d->state == ND_PG_FREE, "only a free block head is unlinked");
	ND_ASSERT(b->free_pages >= (1ull << o) && b->dirty_free >= d->npages && b->nblocks > 0,
		  "free counters never go negative");
	if (d->prev != NIL)
		b->desc[d->prev].next = d->next;
	else
		*list_of(b, o, d->npages, d->flags & ND_PGF_SPARE) = d->next;
	if (d->next != NIL)
		b->desc[d->next].prev = d->prev;
	else if (d->npages)
		b->dtail[o] = d->prev;
	b->free_pages -= 1ull << o;
	__atomic_store_n(&b->dirty_free, b->dirty_free - d->npages, __ATOMIC_RELAXED);
	b->nblocks--;
	d->state = ND_PG_TAIL;
	d->order = 0;
	d->npages = 0;
	d->user = 0;
	d->flags &= (uint8_t)~ND_PGF_SPARE;
}

uint64_t _nd_buddy_count_dirty(const _nd_buddy_t *b, uint64_t i, uint64_t n)
{
	uint64_t c = 0;
	for (uint64_t k = 0; k < n; k++)
		c += b->desc[i + k].flags & ND_PGF_DIRTY;
	return c;
}

void _nd_buddy_clear_dirty(_nd_buddy_t *b, uint64_t i, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++)
		b->desc[i + k].flags &= (uint8_t)~ND_PGF_DIRTY;
}

/* Dirty pages of the sub-range [s, s+len) of a block holding d of bl. */
static uint64_t part_dirty(const _nd_buddy_t *b, uint64_t d, uint64_t bl, uint64_t s, uint64_t len)
{
	if (d == 0)
		return 0;
	if (d == bl)
		return len;
	return _nd_buddy_count_dirty(b, s, len);
}

uint64_t _nd_buddy_mark_clean(_nd_buddy_t *b, uint32_t i)
{
	unsigned o = b->desc[i].order;
	uint64_t d = b->desc[i].npages;
	ND_ASSERT(b->desc[i].state == ND_PG_FREE && d, "only a dirty free block becomes clean");
	_nd_buddy_del(b, i);
	_nd_buddy_clear_dirty(b, i, 1ull << o);
	_nd_buddy_push(b, i, o, 0);
	return d;
}

/* The smallest order >= k with a block on lists l[] (> max if none). */
static unsigned first_of(const uint32_t *l, unsigned k, unsigned max)
{
	while (k <= max && l[k] == NIL)
		k++;
	return k;
}

static uint32_t take_block(_nd_buddy_t *b, unsigned k, bool small, bool oldest, uint64_t *dirty)
{
	/* dirty blocks lie at or below purge_order, those of purge_order
	 * serve small runs only (invariant I) */
	unsigned top = b->purge_order + small;
	if (top > b->order_max + 1)
		top = b->order_max + 1;
	unsigned o = k;
	while (o < top && b->dhead[o] == NIL)
		o++;
	if (oldest && o < top) /* the largest: the longest stretch of freed pages */
		for (unsigned l = top - 1; l > o; l--)
			if (b->dhead[l] != NIL) {
				o = l;
				break;
			}
	uint32_t i;
	if (o < top) {
		i = oldest ? b->dtail[o] : b->dhead[o];
	} else {
		o = first_of(b->head, k, b->order_max);
		if (o > b->order_max)
			o = first_of(b->shead, k, b->order_max);
		if (o > b->order_max)
			return NIL;
		i = b->head[o] != NIL ? b->head[o] : b->shead[o];
	}
	uint64_t d = b->desc[i].npages;
	bool spare = b->desc[i].flags & ND_PGF_SPARE; /* its halves stay spare (clean) */
	_nd_buddy_del(b, i);
	while (o > k) {
		o--;
		uint64_t half = 1ull << o;
		uint64_t dl = part_dirty(b, d, 2 * half, i, half);
		if (d - dl > dl) { /* the dirtier half serves: fewer fresh pages */
			push(b, i, o, dl, spare);
			i += (uint32_t)half;
			d -= dl;
		} else {
			push(b, i + (uint32_t)half, o, d - dl, spare);
			d = dl;
		}
	}
	*dirty = d;
	return i;
}

uint32_t _nd_buddy_take(_nd_buddy_t *b, unsigned k, bool small, uint64_t *dirty)
{
	return take_block(b, k, small, false, dirty);
}

uint32_t _nd_buddy_take_oldest(_nd_buddy_t *b, unsigned k, bool small, uint64_t *dirty)
{
	return take_block(b, k, small, true, dirty);
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

/* The head of the free block holding page j, or NIL when j is in a run
 * or a hole (free blocks are aligned to their size). */
static uint32_t block_of(const _nd_buddy_t *b, uint64_t j)
{
	for (unsigned o = 0; o <= b->order_max; o++) {
		uint64_t h = j & ~((1ull << o) - 1);
		const _nd_pagedesc_t *d = &b->desc[h];
		if (d->state == ND_PG_FREE)
			return d->order >= o ? (uint32_t)h : NIL;
		if (d->state != ND_PG_TAIL)
			return NIL;
	}
	return NIL;
}

/* Pieces [s, e) of a taken block back, unmerged and never spare (their
 * buddies overlap the run: nothing to merge); d of the bl pages of
 * [s0, s0 + bl) (s0 <= s, e <= s0 + bl) are dirty. Returns the pieces'
 * dirty pages. */
static uint64_t give_pieces(_nd_buddy_t *b, uint64_t s, uint64_t e, uint64_t d, uint64_t bl)
{
	uint64_t td = 0;
	while (s < e) {
		unsigned o = piece_order(s, e - s);
		uint64_t pn = 1ull << o, pd = part_dirty(b, d, bl, s, pn);
		push(b, (uint32_t)s, o, pd, false);
		td += pd;
		s += pn;
	}
	return td;
}

/*
 * Packed runs (small, no alignment asked). Cut from its own block of 32
 * pages, a run of 17-31 leaves a tail of 1-15 pages no such run can use,
 * and where the runs freed before were other sizes, the dirty part of the
 * block a run takes is shorter or longer than it: a round of bench
 * wl_burst (64-128 KiB blocks) faulted 12% of its pages in again while as
 * many dirty ones sat unused (its peak RSS, 1.17x glibc's). A run that
 * starts where the last one ended goes over the pages of the runs freed
 * before, in their order, whatever their sizes (the caller starts a new
 * stretch at the oldest of the largest dirty blocks). Not on pages none of
 * which is dirty while a dirty block of a fitting order waits: that block
 * is there to be used; with none, a gap (gap_of) before clean pages.
 * Flags are counted only in blocks partly dirty, and once: the first and
 * last blocks' share is kept for the second pass.
 */
#define GAP_LOOK 64 /* dirty blocks a gap search looks at */

/* Is the head at j a free block a packed run may take (not spare)? */
static inline bool gap_block(const _nd_buddy_t *b, uint64_t j)
{
	const _nd_pagedesc_t *d = &b->desc[j];
	return d->state == ND_PG_FREE && !(d->flags & ND_PGF_SPARE);
}

/* Worth a gap search: a dirty block below order k, and no search for n
 * pages or fewer missed since a block was pushed. Inline, gap_of out of
 * line: a process that frees nothing (most) runs no gap code
 * (test_init_footprint's resident code). */
static inline bool gap_worth(const _nd_buddy_t *b, uint64_t n, unsigned k)
{
	if (b->gap_miss && n >= b->gap_miss)
		return false;
	for (unsigned o = 0; o < k; o++)
		if (b->dtail[o] != NIL)
			return true;
	return false;
}

/*
 * A gap for a packed run of n pages (no dirty block of its order k or
 * above is free): the shortest stretch of free blocks, at least n pages,
 * around one of the oldest GAP_LOOK dirty blocks of orders below k; the
 * run's start in *at, at that dirty block (or as close to it as the
 * stretch allows). Freed runs of many sizes between runs still in use
 * leave such stretches of 1-32 pages (git's object buffers of 36-80 KiB:
 * 6 MiB of them at its peak), which no block of order k covers.
 */
static __attribute__((noinline)) bool gap_of(_nd_buddy_t *b, uint64_t n, unsigned k, uint64_t *at)
{
	uint64_t best = UINT64_MAX, end = 1ull << b->order_max;
	unsigned looked = 0;
	for (int o = (int)k - 1; o >= 0 && looked < GAP_LOOK; o--)
		for (uint32_t j = b->dtail[o]; j != NIL && looked < GAP_LOOK; j = b->desc[j].prev, looked++) {
			uint64_t hi = j + (1ull << o), lo = j;
			while (hi < end && hi - lo < best && gap_block(b, hi))
				hi += 1ull << b->desc[hi].order;
			while (lo > 0 && hi - lo < best) {
				uint32_t h = block_of(b, lo - 1);
				if (h == NIL || !gap_block(b, h))
					break;
				lo = h;
			}
			if (hi - lo < n || hi - lo >= best)
				continue;
			best = hi - lo;
			*at = j + n <= hi ? j : hi - n;
			if (best == n)
				return true;
		}
	if (best == UINT64_MAX)
		b->gap_miss = n;
	return best != UINT64_MAX;
}

/* take_next's work at s; gap true: no search of a gap (_nd_buddy_take_at),
 * false: take_next's one search. */
static uint32_t take_run_at(_nd_buddy_t *b, uint64_t s, uint64_t n, unsigned k, uint64_t *dirty, bool gap)
{
	uint64_t e;
	uint32_t h;
	uint64_t rd, od_first, od_last;
again:
	e = s + n;
	h = e <= (1ull << b->order_max) ? block_of(b, s) : NIL;
	rd = od_first = od_last = 0;
	bool free = h != NIL;
	for (uint64_t j = h, bl; free && j < e; j += bl) {
		const _nd_pagedesc_t *d = &b->desc[j];
		if (d->state != ND_PG_FREE || (d->flags & ND_PGF_SPARE)) {
			free = false;
			break;
		}
		bl = 1ull << d->order;
		uint64_t lo = j > s ? j : s, hi = j + bl < e ? j + bl : e;
		uint64_t od = part_dirty(b, d->npages, bl, lo, hi - lo); /* its pages in the run */
		if (j == h)
			od_first = od;
		if (j + bl >= e)
			od_last = od;
		rd += od;
	}
	if (!free || rd == 0) {
		unsigned top = b->purge_order + 1 <= b->order_max ? b->purge_order + 1 : b->order_max + 1;
		for (unsigned o = k; o < top; o++)
			if (b->dhead[o] != NIL)
				return NIL;
		if (!gap) { /* once: a gap's stretch is free and holds dirty pages */
			gap = true;
			if (gap_worth(b, n, k) && gap_of(b, n, k, &s))
				goto again;
		}
		if (!free)
			return NIL;
	}
	for (uint64_t j = h; j < e;) {
		uint64_t bl = 1ull << b->desc[j].order, d = b->desc[j].npages;
		uint64_t od = j == h ? od_first : j + bl >= e ? od_last : d, hd = 0;
		_nd_buddy_del(b, (uint32_t)j);
		if (j < s)
			hd = give_pieces(b, j, s, d, bl);
		if (j + bl > e) /* the rest of its dirty pages, as part_dirty reads them */
			give_pieces(b, e, j + bl, d - hd - od, j + bl - e);
		j += bl;
	}
	*dirty = rd;
	return (uint32_t)s;
}

uint32_t _nd_buddy_take_next(_nd_buddy_t *b, uint64_t n, unsigned k, uint64_t *dirty)
{
	return take_run_at(b, b->next_at, n, k, dirty, false);
}

uint32_t _nd_buddy_take_at(_nd_buddy_t *b, uint64_t at, uint64_t n, unsigned k, uint64_t *dirty)
{
	return take_run_at(b, at, n, k, dirty, true);
}

/* The last resort when no block of order ceil_log2(n) is free: the
 * first n free pages in a row, from an align-aligned start below end,
 * across free blocks of any order. Without it a run of 45 MiB needed a
 * free aligned 64 MiB block: audit17's bound churn failed with 1.2 GiB
 * of its 2 GiB slot free, the largest block 32 MiB. Walks the heads of
 * [from, end) (free blocks, runs, holes): O(blocks + runs), on failures
 * only (from 0), or from low_at (_nd_buddy_take_low). */
static uint32_t span_from(_nd_buddy_t *b, uint64_t n, uint64_t align, uint64_t from, uint64_t end, uint64_t *dirty)
{
	uint64_t h = 0, s = 0, e = 0; /* the stretch of free blocks: first head, aligned start, end */
	bool found = false;
	for (uint64_t j = from; j < end && !found; b->span_steps++) {
		const _nd_pagedesc_t *d = &b->desc[j];
		if (d->state != ND_PG_FREE) {
			e = 0; /* the stretch ends */
			j += (d->state == ND_PG_RUN || d->state == ND_PG_HOLE) && d->npages ? d->npages : 1;
			continue;
		}
		if (j != e || !e) {
			h = j;
			s = ND_ALIGN_UP(j, align);
		}
		e = j + (1ull << d->order);
		found = s < e && e - s >= n;
		j = e;
	}
	if (!found)
		return NIL;
	uint64_t t = s + n, rd = 0;
	for (uint64_t j = h, bl; j < t; j += bl) {
		bl = 1ull << b->desc[j].order;
		if (j + bl <= s)
			continue; /* before the aligned start: stays free */
		uint64_t d = b->desc[j].npages, lo = j > s ? j : s, hi = j + bl < t ? j + bl : t;
		uint64_t od = part_dirty(b, d, bl, lo, hi - lo), hd = 0; /* its pages in the run */
		_nd_buddy_del(b, (uint32_t)j);
		if (j < s)
			hd = give_pieces(b, j, s, d, bl);
		if (j + bl > t)
			give_pieces(b, t, j + bl, d - hd - od, j + bl - t);
		rd += od;
	}
	*dirty = rd;
	return (uint32_t)s;
}

uint32_t _nd_buddy_take_span(_nd_buddy_t *b, uint64_t n, uint64_t align, uint64_t end, uint64_t *dirty)
{
	return span_from(b, n, align, 0, end, dirty);
}

/* low_at is a block's head (pushed, or a run cut there) or past end; a
 * TAIL there (its block merged, or taken by a run from below) is walked
 * a page at a time to the next head. It is only where the walk starts
 * (any value is safe: the walk reads the states): a stretch that begins
 * below it is seen from low_at on only, and one shorter than the n of a
 * walk that found none (low_at is then end) not again until a push lowers
 * it; such a run comes from _nd_buddy_take, as any run's would (audit21). */
uint32_t _nd_buddy_take_low(_nd_buddy_t *b, uint64_t n, uint64_t end, uint64_t *dirty)
{
	uint32_t s = span_from(b, n, 1, b->low_at, end, dirty);
	/* found: s is the run's start now, no stretch below it (the pieces
	 * the take gave back are above it); none: nothing from low_at up */
	b->low_at = s != NIL ? s : (uint32_t)end;
	return s;
}

/* May two free buddies of order o with md committed pages between them
 * merge? Clean ones always; dirty ones only up to the purge order
 * (invariant I) and while at least a quarter of the merged block is
 * dirty (a mostly clean block stays apart from a dirty scrap). */
static inline bool may_merge(const _nd_buddy_t *b, unsigned o, uint64_t md)
{
	return !md || (o < b->purge_order && md * 4 >= (2ull << o));
}

/* Frees one aligned block, merging with free buddies while may_merge. */

static void free_block(_nd_buddy_t *b, uint32_t i, unsigned o, uint64_t dirty)
{
	/* The old head (a run head) becomes a tail if it merges as an upper half. */
	b->desc[i].state = ND_PG_TAIL;
	b->desc[i].npages = 0;
	while (o < b->order_max) {
		uint32_t u = i ^ (1u << o);
		const _nd_pagedesc_t *bd = &b->desc[u];
		if (bd->state != ND_PG_FREE || bd->order != o)
			break;
		uint64_t md = dirty + bd->npages;
		if (!may_merge(b, o, md))
			break;
		_nd_buddy_del(b, u);
		i &= ~(1u << o);
		dirty = md;
		o++;
	}
	_nd_buddy_push(b, i, o, dirty);
}

/*
 * The aligned block of order k at s, when free blocks tile it, becomes one
 * block (then merges on as freeing does) if may_merge allows its dirty
 * pages. Freed piece by piece, a run that is not a power of two did not:
 * the last small dirty piece met the clean pieces of the tail given back
 * when the run was cut and stopped at the 1/4 rule (a 196-page run's
 * 4-page piece beside its 16- and 32-page tail), so the block never served
 * a run of its size again and each such run faulted in fresh pages
 * (a held-out stress: its 640-800 KB blocks).
 */
static void coalesce(_nd_buddy_t *b, uint64_t s, unsigned k)
{
	uint64_t e = s + (1ull << k), md = 0;
	for (uint64_t j = s; j < e; j += 1ull << b->desc[j].order) {
		const _nd_pagedesc_t *d = &b->desc[j];
		if (d->state != ND_PG_FREE || (j == s && d->order >= k))
			return; /* in use, or already one block */
		md += d->npages;
	}
	if (!may_merge(b, k - 1, md))
		return;
	for (uint64_t j = s; j < e;) {
		uint64_t n = 1ull << b->desc[j].order;
		_nd_buddy_del(b, (uint32_t)j);
		j += n;
	}
	free_block(b, (uint32_t)s, k, md);
}

void _nd_buddy_give(_nd_buddy_t *b, uint64_t s, uint64_t len, bool dirty, bool merge)
{
	uint64_t s0 = s;
	unsigned k = len > 1 ? floor_log2(len - 1) + 1 : 0;
	while (len) {
		unsigned o = piece_order(s, len);
		uint64_t n = 1ull << o;
		if (merge)
			free_block(b, (uint32_t)s, o, dirty ? n : 0);
		else
			_nd_buddy_push(b, (uint32_t)s, o, dirty ? n : 0);
		s += n;
		len -= n;
	}
	if (merge && (s - s0) != (1ull << k) && !(s0 & ((1ull << k) - 1)) && k <= b->order_max)
		coalesce(b, s0, k);
}

uint64_t _nd_buddy_give_tail(_nd_buddy_t *b, uint64_t i, unsigned k, uint64_t d, uint64_t n)
{
	uint64_t bl = 1ull << k, s = i + n, len = bl - n, td = 0;
	ND_ASSERT(n > 0 && n <= bl, "a run fits the block it was cut from");
	bool spare = k >= b->purge_order; /* clean unless a small run's (invariant I) */
	while (len) {
		unsigned o = piece_order(s, len);
		uint64_t pn = 1ull << o;
		uint64_t pd = part_dirty(b, d, bl, s, pn);
		push(b, (uint32_t)s, o, pd, spare && !pd);
		td += pd;
		s += pn;
		len -= pn;
	}
	return td;
}

uint64_t _nd_buddy_give_head(_nd_buddy_t *b, uint64_t h, uint64_t from, uint64_t d)
{
	for (uint64_t k = h; k < from;) {
		unsigned o = piece_order(k, from - k);
		uint64_t pn = 1ull << o, pd = d ? _nd_buddy_count_dirty(b, k, pn) : 0;
		_nd_buddy_push(b, (uint32_t)k, o, pd);
		d -= pd;
		k += pn;
	}
	return d;
}

void _nd_buddy_mark_run(_nd_buddy_t *b, uint32_t i, uint64_t n, int node)
{
	_nd_pagedesc_t *h = &b->desc[i];
	ND_ASSERT(h->state == ND_PG_TAIL, "a run head comes from a taken block");
	h->state = ND_PG_RUN;
	h->order = 0;
	h->flags &= (uint8_t)~ND_PGF_FRESH; /* page.c's node_alloc sets it again */
	h->npages = n;
	h->use = ND_USE_NONE;
	h->user = 0;
	h->node = node;
}

void _nd_buddy_merge_clean(_nd_buddy_t *b)
{
	for (unsigned o = 0; o < b->order_max; o++) {
		for (uint32_t i = b->head[o], nx; i != NIL; i = nx) {
			nx = b->desc[i].next;
			uint32_t u = i ^ (1u << o);
			const _nd_pagedesc_t *bd = &b->desc[u];
			uint64_t md = bd->npages;
			if (bd->state != ND_PG_FREE || bd->order != o || b->desc[i].npages || !may_merge(b, o, md))
				continue;
			if (nx == u)
				nx = bd->next;
			_nd_buddy_del(b, i);
			_nd_buddy_del(b, u);
			if (md) /* a dirty buddy left by a partial purge: free_block's rule */
				free_block(b, i & u, o + 1, md);
			else
				_nd_buddy_push(b, i & u, o + 1, 0);
		}
	}
}

int _nd_buddy_largest(const _nd_buddy_t *b)
{
	for (int o = (int)b->order_max; o >= 0; o--)
		if (b->head[o] != NIL || b->dhead[o] != NIL || b->shead[o] != NIL)
			return o;
	return -1;
}

/* Free block at page i of order o: aligned, dirty count, merged, tails. */
static int check_free(const _nd_buddy_t *b, uint64_t i, uint64_t end, char *err, size_t errlen)
{
	const _nd_pagedesc_t *d = &b->desc[i];
	uint64_t n = 1ull << d->order;
	if (i & (n - 1) || i + n > end) {
		_nd_msg_format(err, errlen, "free block at page %llu of order %u misaligned", (unsigned long long)i,
			       d->order);
		return -1;
	}
	/* Flags of big blocks are not scanned: untouched descriptors would be
	 * read (invariant I keeps them clean anyway). */
	uint64_t cd = d->order < ND_BUDDY_SCAN_ORDER ? _nd_buddy_count_dirty(b, i, n) : d->npages;
	if (cd != d->npages) {
		_nd_msg_format(err, errlen, "free block at page %llu: %llu dirty pages, head says %llu",
			       (unsigned long long)i, (unsigned long long)cd, (unsigned long long)d->npages);
		return -1;
	}
	if (d->npages && d->order > b->purge_order) {
		_nd_msg_format(err, errlen, "free block at page %llu of order %u is dirty (invariant I)",
			       (unsigned long long)i, d->order);
		return -1;
	}
	uint64_t u = i ^ n;
	const _nd_pagedesc_t *bd = d->order < b->order_max ? &b->desc[u] : NULL;
	uint64_t md = bd ? d->npages + bd->npages : 0;
	if (bd && bd->state == ND_PG_FREE && bd->order == d->order &&
	    (!md || (d->order < b->purge_order && md * 4 >= 2 * n))) {
		_nd_msg_format(err, errlen, "free buddies at pages %llu and %llu not merged", (unsigned long long)i,
			       (unsigned long long)u);
		return -1;
	}
	for (uint64_t j = 1; j < n && n <= 4096; j++)
		if (b->desc[i + j].state != ND_PG_TAIL) {
			_nd_msg_format(err, errlen, "page %llu inside a free block is not a tail",
				       (unsigned long long)(i + j));
			return -1;
		}
	return 0;
}

/* Pages [i+1, i+n) of a run or hole are tails. */
static int check_tails(const _nd_buddy_t *b, uint64_t i, uint64_t n, char *err, size_t errlen)
{
	for (uint64_t j = 1; j < n; j++)
		if (b->desc[i + j].state != ND_PG_TAIL) {
			_nd_msg_format(err, errlen, "page %llu inside the run at %llu is not a tail",
				       (unsigned long long)(i + j), (unsigned long long)i);
			return -1;
		}
	return 0;
}

int _nd_buddy_check(const _nd_buddy_t *b, char *err, size_t errlen)
{
	return _nd_buddy_check_to(b, 1ull << b->order_max, err, errlen);
}

int _nd_buddy_check_to(const _nd_buddy_t *b, uint64_t end, char *err, size_t errlen)
{
	uint64_t i = 0, freep = 0, blocks = 0, dirty = 0;
	if (end > 1ull << b->order_max) {
		_nd_msg_format(err, errlen, "limit %llu past the slot's %llu pages", (unsigned long long)end,
			       1ull << b->order_max);
		return -1;
	}
	while (i < end) {
		const _nd_pagedesc_t *d = &b->desc[i];
		if (d->state == ND_PG_FREE) {
			if (check_free(b, i, end, err, errlen) < 0)
				return -1;
			freep += 1ull << d->order;
			dirty += d->npages;
			blocks++;
			i += 1ull << d->order;
		} else if (d->state == ND_PG_RUN || d->state == ND_PG_HOLE) {
			uint64_t n = d->npages;
			if (n == 0 || i + n > end) {
				_nd_msg_format(err, errlen, "run at page %llu has bad length %llu", (unsigned long long)i,
					       (unsigned long long)n);
				return -1;
			}
			/* a hole's descriptors past its head are never touched */
			if (d->state == ND_PG_RUN && check_tails(b, i, n, err, errlen) < 0)
				return -1;
			i += n;
		} else {
			_nd_msg_format(err, errlen, "page %llu is a tail outside any block or run (or a run in limbo)",
				       (unsigned long long)i);
			return -1;
		}
	}
	if (freep != b->free_pages || blocks != b->nblocks || dirty != b->dirty_free) {
		_nd_msg_format(err, errlen, "walk found %llu free pages in %llu blocks (%llu dirty), counters say %llu in %llu (%llu)",
			       (unsigned long long)freep, (unsigned long long)blocks, (unsigned long long)dirty,
			       (unsigned long long)b->free_pages, (unsigned long long)b->nblocks,
			       (unsigned long long)b->dirty_free);
		return -1;
	}
	/* The free lists hold exactly the free heads. */
	uint64_t listed = 0;
	for (unsigned o = 0; o <= b->order_max; o++)
		for (int dl = 0; dl < 3; dl++) /* clean, dirty, spare */
			for (uint32_t j = dl == 1 ? b->dhead[o] : dl ? b->shead[o] : b->head[o]; j != NIL;
			     j = b->desc[j].next) {
				if (b->desc[j].state != ND_PG_FREE || b->desc[j].order != o) {
					_nd_msg_format(err, errlen, "list of order %u holds page %u that is not such a free head", o, j);
					return -1;
				}
				if ((b->desc[j].npages != 0) != (dl == 1) || !(b->desc[j].flags & ND_PGF_SPARE) != (dl != 2)) {
					_nd_msg_format(err, errlen, "%s list of order %u holds block %u of another kind",
						       dl == 1 ? "dirty" : dl ? "spare" : "clean", o, j);
					return -1;
				}
				listed++;
			}
	if (listed != b->nblocks) {
		_nd_msg_format(err, errlen, "free lists hold %llu blocks, counter %llu", (unsigned long long)listed,
			       (unsigned long long)b->nblocks);
		return -1;
	}
	return 0;
}
