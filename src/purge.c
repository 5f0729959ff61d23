// SPDX-License-Identifier: MIT
/*
 * Giving memory back to the OS (docs/arenas.md "Committed memory").
 *
 * Runs of at least the purge threshold are purged when freed (page.c);
 * smaller ones go back to the free lists dirty (still committed). Each
 * dirty free block carries its age (the buddy's push number: lists are
 * newest first, dtail[] the oldest). A slot's dirty free pages are purged
 *  - past its dirty limit (_nd_purge_after_free: what brings the pages in
 *    use back to their recent peak, within bounds that the live threads'
 *    bursts of small run frees raise for a decay period after their last
 *    change (the burst clock), and a thread's exit to the pages in use
 *    before it plus its burst): the oldest first,
 *    down to 3/4 of the limit (while the pages in use come back to the
 *    peak: past the limit by one purge block, down to the limit), not
 *    all of them;
 *  - all of them when the oldest have been free for
 *    NODALLOC_PURGE_DECAY_MS (the decay, like jemalloc's dirty_decay_ms):
 *    memory a program stopped using goes back even under the limit. The
 *    clock starts when a slot with no dirty free page gets some, and again
 *    when the period ends on dirty pages that turned over (decay_slot);
 *    it is checked on page-level calls and on the calls that serve memory
 *    without one (no thread);
 *  - all of them when malloc_trim / nd_trim ask (_nd_page_trim);
 *  - those already free at the previous thread exit and not reused
 *    since, when a thread exit finds many (heap.c exit_trim).
 * A pass collects the dirty blocks, sorts them by address and makes one
 * madvise per stretch of adjacent ones: after a slab workload the dirty
 * blocks are mostly neighbours (one call instead of dozens).
 */
#include <string.h>
#include <sys/mman.h> /* MADV_* values only: the calls go through os.c */

#include "internal.h"

#define g _nd_page_g
#define PASS_MAX 64 /* dirty blocks sorted per batch of a pass */
#define ND_KEEP_BLOCKS 16 /* purge blocks of dirty pages a slot may keep for its recent peak */

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
	/* lazy reservation: clean pages hold no address space (room.c maps
	 * them again when a run takes them) */
	if (g.lazy && _nd_os_munmap(p, len) == 0)
		return false;
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

/*
 * Purges the oldest dirty blocks (lowest sequence numbers: each order's
 * list is newest first, so a merge of the lists from their tails) until
 * at most keep dirty pages remain, none numbered `before` or later. Slot
 * lock held. Returns pages purged.
 */
static uint64_t purge_oldest(_nd_arena_t *a, uint64_t keep, uint64_t before)
{
	_nd_buddy_t *b = &a->bd;
	uint64_t purged = 0;
	unsigned top = g.purge_order < b->order_max ? g.purge_order + 1 : b->order_max + 1;
	uint32_t cur[ND_BUDDY_MAX_ORDER + 1];
	piece_t pc[PASS_MAX];
	int n;
	do { /* a batch leaves the dirty lists: the next starts at their tails */
		uint64_t want = b->dirty_free > keep ? b->dirty_free - keep : 0;
		for (unsigned o = 0; o < top; o++)
			cur[o] = b->dtail[o];
		n = 0;
		for (uint64_t got = 0; got < want && n < PASS_MAX;) {
			unsigned o = top;
			for (unsigned k = 0; k < top; k++)
				if (cur[k] != ND_BUDDY_NIL && (o == top || b->desc[cur[k]].user < b->desc[cur[o]].user))
					o = k;
			if (o == top || b->desc[cur[o]].user >= before)
				break;
			pc[n++] = (piece_t){ cur[o], o };
			got += b->desc[cur[o]].npages;
			cur[o] = b->desc[cur[o]].prev;
		}
		purged += purge_batch(a, pc, n);
	} while (n == PASS_MAX);
	if (!b->dirty_free)
		__atomic_store_n(&a->dirty_since, 0, __ATOMIC_RELAXED);
	if (!purged)
		return 0;
	_nd_buddy_merge_clean(b);
	_nd_room_committed(a, -(int64_t)purged);
	return purged;
}

uint64_t _nd_purge_slot(_nd_arena_t *a)
{
	return purge_oldest(a, 0, UINT64_MAX);
}

/* Unmaps slot a's clean free blocks of the lists from heads (lock held):
 * clean pages may still be mapped (zero pages of a run taken and rolled
 * back, a purge that fell back to a fresh mapping); unmapping a range
 * that is not mapped costs the call only. */
static void unmap_clean(_nd_arena_t *a, const uint32_t *heads)
{
	_nd_buddy_t *b = &a->bd;
	for (unsigned o = 0; o <= b->order_max; o++)
		for (uint32_t i = heads[o]; i != ND_BUDDY_NIL; i = b->desc[i].next)
			_nd_os_munmap(a->base + ((uint64_t)i << ND_PAGE_SHIFT), (size_t)ND_PAGE_SIZE << o);
}

void _nd_purge_release(void)
{
	for (int s = 0; s < g.nslots; s++) {
		_nd_arena_t *a = &g.arenas[s];
		if (!a->usable)
			continue;
		_nd_lock(&a->lock);
		_nd_purge_slot(a);
		unmap_clean(a, a->bd.head);
		unmap_clean(a, a->bd.shead);
		_nd_room_shrink(a);
		_nd_unlock(&a->lock);
	}
}

uint64_t _nd_purge_older(_nd_arena_t *a, uint64_t stamp)
{
	return purge_oldest(a, 0, stamp);
}

/*
 * Dirty limit: the slot keeps the dirty pages that bring its pages in use
 * back to their recent peak (the high-water mark of `used` over this decay
 * period and the last), at most max(ND_KEEP_BLOCKS purge blocks, the
 * pages in use plus the live threads' bursts, the pages in use at a
 * thread's exit, plus its burst, in
 * this period or the last) of them, and at least max(g.dirty_limit (4 purge blocks), the
 * pages in use): a program that churns runs of many sizes at a steady
 * level of pages in use (the peak is near) frees dirty blocks that its
 * next runs do not fit, takes clean pages and goes past the limit on
 * every few frees; with a floor of 4 purge blocks a loop churning 32
 * runs of 32-512 KiB (8.5 MiB in use) purged and faulted in 7.4 pages
 * per malloc (744k faults in 100k steps, 1.26 s; jemalloc 4.3k and
 * 0.080 s, mimalloc 4.7k and 0.061 s); with the pages in use 26k and
 * 0.115 s, peak RSS 16.9 -> 19.4 MiB (jemalloc and mimalloc 19.9; half
 * the pages in use: 382k faults). So a
 * phase that frees everything and allocates again keeps its pages (it was
 * max(4 purge blocks, 4x the pages in use): a loop freeing its 7 MB of
 * blocks and allocating them again purged and faulted them in every
 * round, 15.8x mimalloc's time), memory freed past the peak and twice
 * the pages in use (fragmentation) goes back, and so does the end of a program's big phase
 * past the cap (bench footprint's end RSS). Past the limit the oldest
 * dirty blocks go, down to 3/4 of it (fewer, larger passes); the decay
 * gives back the rest. A thread's exit is no such end: its heaps give
 * back the slabs they hold, which the next threads take again, and the
 * cap of the pages in use purged them (a held-out benchmark of rounds of
 * threads faulted its 70 MiB in again each round); so do the runs a
 * thread frees just before its exit (its burst: page.c counts it), which
 * went through the cap in its own frees before the exit could say so:
 * the first burst went, the next ones stayed (bench wl_burst, 10 rounds of
 * 512 MiB: 1.33M -> 0.40M faults, tcmalloc 0.14M). So the cap is at
 * least the pages in use plus the bursts of the live threads (burst_live,
 * page.c), until their exits hand them on (the exit floor) or a decay
 * period passes without a change of any of them (burst_cut); the main
 * thread's are not among them: no thread exit follows its frees, and
 * bench footprint's end RSS is its frees at the cap. Pages given back at
 * an exit that stay free go at the next exits (heap.c's exit_trim) or
 * with the decay. The peaks and exit floors are written under the slot
 * lock and read without it by _nd_purge_over (relaxed: a hint).
 * *back: the peak or the floor bounds the limit (not the cap): the pages
 * in use are on their way back to the peak, and the dirty pages will
 * serve them, so a pass comes only past the limit by one purge block
 * (g.dirty_limit / 4: a quarter of the floor's minimum, whatever the
 * pages in use), and takes the excess only (down to 3/4 of it, the refill of
 * bench footprint purged 20 MiB for an excess of 0.4 MiB and faulted
 * every page in again before its end; the excess and one purge block, a
 * held-out stress of short-lived threads, whose exits give back a few
 * pages past the peak each, faulted 28k pages in again, 10x glibc's).
 */
static uint64_t dirty_keep(const _nd_arena_t *a, uint64_t used, uint64_t peak, uint64_t more, bool *back)
{
	uint64_t pc = __atomic_load_n(&a->peak_cur, __ATOMIC_RELAXED);
	uint64_t pp = __atomic_load_n(&a->peak_prev, __ATOMIC_RELAXED);
	peak = peak > pc ? peak : pc;
	peak = peak > pp ? peak : pp;
	uint64_t keep = peak > used ? peak - used : 0;
	uint64_t cap = g.dirty_limit / 4 * ND_KEEP_BLOCKS + more;
	uint64_t ec = __atomic_load_n(&a->exit_cur, __ATOMIC_RELAXED);
	uint64_t ep = __atomic_load_n(&a->exit_prev, __ATOMIC_RELAXED);
	int64_t bl = __atomic_load_n(&a->burst_live, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&a->burst_ns, __ATOMIC_RELAXED))
		bl = 0; /* their clock ran out */
	uint64_t lb = used + (bl > 0 ? (uint64_t)bl : 0); /* the live threads' bursts, until their exits or clock */
	cap = cap > lb ? cap : lb;
	cap = cap > ec ? cap : ec;
	cap = cap > ep ? cap : ep;
	*back = keep <= cap;
	if (keep > cap)
		keep = cap;
	uint64_t lo = used > g.dirty_limit ? used : g.dirty_limit; /* <= cap */
	return keep < lo ? lo : keep;
}

/* The bound on kept slabs' n pages plus the dirty free pages of a. */
static uint64_t kept_bound(const _nd_arena_t *a, uint64_t n)
{
	uint64_t used = __atomic_load_n(&a->used, __ATOMIC_RELAXED);
	/* refaults raise the cap for kept slabs only (_nd_purge_taken) */
	uint64_t rf = __atomic_load_n(&a->refault_cur, __ATOMIC_RELAXED) + __atomic_load_n(&a->refault_prev, __ATOMIC_RELAXED);
	bool back;
	/* the pages in use now are a peak too: the peaks move only when the
	 * page level gets pages back, and kept slabs are still in use there */
	return dirty_keep(a, used > n ? used - n : 0, used, rf, &back);
}

bool _nd_purge_over(int node, uint64_t n)
{
	if (node < 0 || node >= g.node_limit)
		return false;
	const _nd_arena_t *a = &g.arenas[node];
	return __atomic_load_n(&a->bd.dirty_free, __ATOMIC_RELAXED) + n > kept_bound(a, n);
}

/*
 * Room for kept slabs: when the kept pages alone fit the bound and the
 * page level's dirty pages are what fill it, the oldest of those go
 * (one purge block more, so that the next few slabs find room without
 * the lock). A kept slab is reused as it is; a dirty block only through
 * a page-level round trip that makes a slab again (~2,400 instructions).
 * A thread other than the main one kept none: its bursts raise the cap,
 * so its page level keeps dirty pages all the way back to the recent
 * peak; bench wl_order in one spawned thread (row order1t) made 56k
 * slabs in 150 rounds (554M instructions, the main thread 305M); now
 * 1.4k (305M). The pages purged here count as the limit's (lim_out):
 * taken again they are refaults, which raise the cap that the kept pages
 * alone must fit (without: a spawned thread's ~9 MiB of slabs went past
 * the 8 MiB cap each round and all went back, 8k slabs made, 336M).
 */
bool _nd_purge_room(int node, uint64_t n)
{
	if (node < 0 || node >= g.node_limit || !g.arenas[node].usable)
		return false;
	_nd_arena_t *a = &g.arenas[node];
	_nd_lock(&a->lock);
	uint64_t bound = kept_bound(a, n);
	bool fit = n <= bound;
	if (fit && a->bd.dirty_free + n > bound) {
		uint64_t room = bound - n, blk = g.dirty_limit / 4;
		a->lim_out += purge_oldest(a, room > blk ? room - blk : 0, UINT64_MAX);
	}
	_nd_unlock(&a->lock);
	return fit;
}

/* The refaults' period of a ends (the slot's lock held): the current
 * count becomes the previous one, or with ended (the phase that
 * refaulted is over) both go and kept_gen moves, so that the heaps' kept
 * slabs past the bound go at their next refill (heap.c, kept_expire).
 * What comes back after this is no refault of what was purged before. */
static void refault_period(_nd_arena_t *a, bool ended)
{
	__atomic_store_n(&a->refault_prev, ended ? 0 : a->refault_cur, __ATOMIC_RELAXED);
	__atomic_store_n(&a->refault_cur, 0, __ATOMIC_RELAXED);
	if (ended)
		__atomic_store_n(&a->kept_gen, a->kept_gen + 1, __ATOMIC_RELAXED);
	a->lim_out = 0;
}

/* Without a decay (NODALLOC_PURGE_DECAY_MS=0) a pass of the dirty limit
 * is the refaults' period: counted for good, they kept slabs for good.
 * A pass period without a refault after one with some ends them, as a
 * decay that purges does: kept_gen moves, and the heaps' kept slabs are
 * held to the bound at their next refill (heap.c kept_expire), not at
 * the next slab that empties (none, once the program freed its working
 * set). Under the slot's lock. Out of line: not in the hot text
 * (src/hot_text.ld). */
static __attribute__((noinline, cold)) void pass_period(_nd_arena_t *a)
{
	refault_period(a, !a->refault_cur && a->refault_prev);
}

void _nd_purge_after_free(_nd_arena_t *a, uint64_t freed)
{
	uint64_t df = a->bd.dirty_free;
	uint64_t used = __atomic_load_n(&a->used, __ATOMIC_RELAXED);
	if (used + freed > a->peak_cur)
		__atomic_store_n(&a->peak_cur, used + freed, __ATOMIC_RELAXED);
	bool back;
	uint64_t keep = dirty_keep(a, used, 0, 0, &back);
	if (df > keep + (back ? g.dirty_limit / 4 : 0)) { /* the slack: a pass every so many pages */
		if (!g.decay_ns)
			pass_period(a);
		a->lim_out += purge_oldest(a, back ? keep : keep - keep / 4, UINT64_MAX);
	} else if (df && g.decay_ns && !__atomic_load_n(&a->dirty_since, __ATOMIC_RELAXED)) {
		a->dirty_taken = 0;
		__atomic_store_n(&a->dirty_since, _nd_os_now_ns() | 1, __ATOMIC_RELAXED);
	}
}

/*
 * Refaults: the clean pages runs take while pages the dirty limit's
 * passes purged are out (no dirty block left to serve them), up to as
 * many as those, this decay period and the last, raise the cap of the
 * bound on the empty slabs heaps keep (_nd_purge_over, slab.c
 * keep_empty), not the page level's own limit. The cap cannot tell a
 * program's end from a phase that frees its working set and takes it
 * again; the refaults can. The main thread (whose bursts the cap leaves
 * out) freeing its ~9 MiB of small blocks every round and allocating
 * them again, the class mix shifting (bench wl_order, 150 rounds), went
 * past the cap each round: its heap released every kept slab, the page
 * level purged 1-2 MiB and the next round faulted them in and made the
 * slabs again (18.0k faults, tcmalloc 4.6k; 338M instructions). With
 * the kept slabs' cap raised: 4.0k faults, 305M instructions, peak RSS
 * 11.2 -> 12.7 MiB. Raising the page level's limit instead kept the
 * refaults as dirty blocks that then pushed the kept slabs out (430M
 * instructions). A program's last free, which nothing takes again, keeps
 * what it kept before (bench footprint's end RSS).
 */
void _nd_purge_taken(_nd_arena_t *a, uint64_t fresh)
{
	uint64_t re = fresh < a->lim_out ? fresh : a->lim_out;
	a->lim_out -= re;
	__atomic_store_n(&a->refault_cur, a->refault_cur + re, __ATOMIC_RELAXED);
}

void _nd_purge_exit(int node)
{
	if (!__atomic_load_n(&g.ready, __ATOMIC_ACQUIRE) || node < 0 || node >= g.node_limit ||
	    !g.arenas[node].usable)
		return;
	_nd_arena_t *a = &g.arenas[node];
	const _nd_thread_t *t = _nd_tls;
	uint64_t burst = !_nd_thread_none(t) && t->drop_node1 == (uint32_t)node + 1 ? t->page_drop : 0; /* its node's only */
	if (t != __atomic_load_n(&_nd_thread_main, __ATOMIC_RELAXED) && !__atomic_load_n(&a->burst_ns, __ATOMIC_RELAXED))
		burst = 0; /* its clock ran out: the limit no longer keeps it */
	_nd_lock(&a->lock);
	uint64_t fl = __atomic_load_n(&a->used, __ATOMIC_RELAXED) + burst;
	if (fl > a->exit_cur)
		__atomic_store_n(&a->exit_cur, fl, __ATOMIC_RELAXED);
	_nd_unlock(&a->lock);
}

/*
 * The decay of one slot (lock held), its clock a period old: every dirty
 * block goes, unless runs took at least as many dirty pages since the
 * clock started as the slot holds now: its dirty pages turn over, in use
 * again within the period, and the clock starts again now (pages freed
 * just after it started wait up to two periods; the dirty limit, whose
 * peaks end with the period, still bounds them). Rounds of threads that
 * free and take again their runs (bench wl_burst) were purged once a
 * period, and the next round faulted them all in. The period of the peak
 * and the exit floor ends either way.
 */
static __attribute__((noinline)) void decay_slot(_nd_arena_t *a, uint64_t now)
{
	bool ended = false;
	if (a->dirty_taken && a->dirty_taken >= a->bd.dirty_free) {
		a->dirty_taken = 0;
		__atomic_store_n(&a->dirty_since, now | 1, __ATOMIC_RELAXED);
	} else {
		_nd_purge_slot(a);
		ended = true;
	}
	__atomic_store_n(&a->peak_prev, a->peak_cur, __ATOMIC_RELAXED);
	__atomic_store_n(&a->peak_cur, __atomic_load_n(&a->used, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	__atomic_store_n(&a->exit_prev, a->exit_cur, __ATOMIC_RELAXED);
	__atomic_store_n(&a->exit_cur, 0, __ATOMIC_RELAXED);
	/* unused dirty pages: the phase that refaulted ended, and with it
	 * the cap it raised */
	refault_period(a, ended);
}

/*
 * The burst clock of one slot (lock held): its live threads' bursts have
 * not changed for a decay period (burst_ns, page.c's drop_note), so they
 * no longer raise the dirty limit, and what it then no longer keeps goes
 * now. A worker that frees a big phase and lives on (a pool's thread
 * after a big request) kept it, 194 MiB of a held-out program's 197,
 * until its exit or the slot's decay at a page-level call, and a process
 * making none after it (its slabs kept, its large runs cached) kept it
 * for good; so calls that serve memory without the page level run the
 * check too (_nd_purge_decay's callers). The clock is the node's, not
 * each thread's (the record has no room): any live burst's change keeps
 * every one, and a change after the cut makes them all count again.
 */
static void burst_cut(_nd_arena_t *a, uint64_t bn)
{
	if (__atomic_compare_exchange_n(&a->burst_ns, &bn, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		_nd_purge_after_free(a, 0);
}

void _nd_purge_decay(void)
{
	if (!g.decay_ns)
		return;
	uint64_t now = 0;
	for (int s = 0; s < g.node_limit; s++) {
		_nd_arena_t *a = &g.arenas[s];
		uint64_t since = __atomic_load_n(&a->dirty_since, __ATOMIC_RELAXED);
		uint64_t bn = __atomic_load_n(&a->burst_ns, __ATOMIC_RELAXED);
		if (!since && !bn)
			continue;
		if (!now)
			now = _nd_os_now_ns();
		bool old = since && now - since >= g.decay_ns;
		bool cut = bn && now - bn >= g.decay_ns;
		if ((!old && !cut) || !_nd_trylock(&a->lock))
			continue; /* busy: the next call sees it */
		if (cut)
			burst_cut(a, bn);
		if (old && __atomic_load_n(&a->dirty_since, __ATOMIC_RELAXED) == since)
			decay_slot(a, now);
		_nd_unlock(&a->lock);
	}
}
