// SPDX-License-Identifier: MIT
/*
 * Giving memory back to the OS (docs/arenas.md "Committed memory").
 *
 * Runs of at least the purge threshold are purged when freed (page.c);
 * smaller ones go back to the free lists dirty (still committed). A slot's
 * dirty free pages are purged all at once when
 *  - they exceed its dirty limit (4 purge blocks, or 4x the pages the
 *    node has in use, if more): the limit bounds the waste;
 *  - the oldest of them have been free for NODALLOC_PURGE_DECAY_MS (the
 *    decay, like jemalloc's dirty_decay_ms): memory a program stopped
 *    using goes back even when it stays under the limit. The clock starts
 *    when a slot with no dirty free page gets some; it is checked on
 *    page-level calls (no thread);
 *  - malloc_trim / nd_trim ask (_nd_page_trim).
 * A pass collects the dirty blocks, sorts them by address and makes one
 * madvise per stretch of adjacent ones: after a slab workload the dirty
 * blocks are mostly neighbours (one call instead of dozens).
 */
#include <string.h>
#include <sys/mman.h> /* MADV_* values only: the calls go through os.c */

#include "internal.h"

#define g _nd_page_g
#define PASS_MAX 64 /* dirty blocks sorted per batch of a pass */
#define ND_DIRTY_RATIO 4 /* dirty free pages kept per page in use (at most) */

static int warned_mbind, warned_purge;

/*
 * The caller then marks the pages clean, and clean pages are trusted to
 * read as zero (_nd_page_zero: calloc, tables), so this must make them
 * zero whatever the kernel says: when madvise is refused (EINVAL on
 * mlock'ed pages, EAGAIN, ...) the range gets a fresh mapping (node slot:
 * bound to its node again; mixed run: no policy), and if even that fails
 * (vm.max_map_count) it is zeroed by hand and stays resident (still
 * counted as purged: the next run that takes it counts it as fresh).
 */
bool _nd_purge_range(const _nd_arena_t *a, void *p, size_t len, int advice)
{
	int r = _nd_os_madvise(p, len, advice);
	if (r == 0)
		return true;
	int e = _nd_os_mmap_fixed(p, len, true);
	if (e < 0)
		e = _nd_os_mmap_fixed(p, len, true);
	if (e == 0) {
		if (g.bind && !a->mixed && _nd_room_bind(p, len, a->node) < 0 &&
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

typedef struct piece {
	uint32_t i;
	unsigned o;
} piece_t;

/* Sorts pieces by index, purges each stretch of adjacent ones with one
 * call, marks them clean (they move to the clean lists). Returns pages
 * purged. */
static uint64_t purge_batch(_nd_arena_t *a, piece_t *pc, int n)
{
	for (int k = 1; k < n; k++) { /* insertion sort: n <= PASS_MAX */
		piece_t x = pc[k];
		int j = k;
		for (; j > 0 && pc[j - 1].i > x.i; j--)
			pc[j] = pc[j - 1];
		pc[j] = x;
	}
	_nd_buddy_t *b = &a->bd;
	uint64_t purged = 0;
	for (int k = 0; k < n;) {
		uint64_t s = pc[k].i, e = s;
		int j = k;
		for (; j < n && pc[j].i == e; j++)
			e += 1ull << pc[j].o;
		_nd_purge_range(a, a->base + (s << ND_PAGE_SHIFT), (size_t)(e - s) << ND_PAGE_SHIFT, g.advice);
		for (; k < j; k++)
			purged += _nd_buddy_mark_clean(b, pc[k].i);
	}
	return purged;
}

uint64_t _nd_purge_slot(_nd_arena_t *a)
{
	_nd_buddy_t *b = &a->bd;
	uint64_t purged = 0;
	unsigned top = g.purge_order <= b->order_max ? g.purge_order : b->order_max + 1;
	piece_t pc[PASS_MAX];
	int n;
	do { /* a batch leaves the dirty lists: the next starts at their heads */
		n = 0;
		for (unsigned o = 0; o < top && n < PASS_MAX; o++)
			for (uint32_t i = b->dhead[o]; i != ND_BUDDY_NIL && n < PASS_MAX; i = b->desc[i].next)
				pc[n++] = (piece_t){ i, o };
		purged += purge_batch(a, pc, n);
	} while (n == PASS_MAX);
	__atomic_store_n(&a->dirty_since, 0, __ATOMIC_RELAXED);
	if (!purged)
		return 0;
	_nd_buddy_merge_clean(b);
	_nd_room_committed(a, -(int64_t)purged);
	return purged;
}

/* Dirty limit: 4 purge blocks, or 4x what the node has in use (used).
 * It was 1/8: a program freeing 90% then allocating again (bench
 * footprint) purged most of it and faulted it back (1.44x glibc's time;
 * 4x: 1.09x, end RSS 14 MiB instead of 13, glibc 130). The decay gives
 * back what stays unused; the limit only bounds the amount. */
static uint64_t dirty_lim(uint64_t used)
{
	uint64_t lim = used * ND_DIRTY_RATIO;
	return lim > g.dirty_limit ? lim : g.dirty_limit;
}

bool _nd_purge_over(int node, uint64_t n)
{
	if (node < 0 || node >= g.node_limit)
		return false;
	const _nd_arena_t *a = &g.arenas[node];
	uint64_t used = __atomic_load_n(&a->used, __ATOMIC_RELAXED);
	uint64_t df = __atomic_load_n(&a->bd.dirty_free, __ATOMIC_RELAXED);
	return df + n > dirty_lim(used > n ? used - n : 0);
}

void _nd_purge_after_free(_nd_arena_t *a)
{
	uint64_t df = a->bd.dirty_free;
	if (df > dirty_lim(__atomic_load_n(&a->used, __ATOMIC_RELAXED)))
		_nd_purge_slot(a);
	else if (df && g.decay_ns && !__atomic_load_n(&a->dirty_since, __ATOMIC_RELAXED))
		__atomic_store_n(&a->dirty_since, _nd_os_now_ns() | 1, __ATOMIC_RELAXED);
}

void _nd_purge_decay(void)
{
	if (!g.decay_ns)
		return;
	uint64_t now = 0;
	for (int s = 0; s < g.node_limit; s++) {
		_nd_arena_t *a = &g.arenas[s];
		uint64_t since = __atomic_load_n(&a->dirty_since, __ATOMIC_RELAXED);
		if (!since)
			continue;
		if (!now)
			now = _nd_os_now_ns();
		if (now - since < g.decay_ns || !_nd_trylock(&a->lock))
			continue; /* busy: the next call sees it */
		if (__atomic_load_n(&a->dirty_since, __ATOMIC_RELAXED) == since)
			_nd_purge_slot(a);
		_nd_unlock(&a->lock);
	}
}
