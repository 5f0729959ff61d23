// SPDX-License-Identifier: MIT
/*
 * Heaps (docs/malloc.md): which heap an allocation uses, the heaps' life
 * cycle with their threads, and adoption. Above slab.c (slabs, lists,
 * frees) and meta.c (headers, heaps' memory, the pools' lock).
 *
 *  - A heap holds, per class, a list of partial slabs (cur[c] is the one
 *    allocation pops from) and a list of full ones. A heap serves the
 *    allocations that want one node ("heap of node n"); its slabs are on n,
 *    or on a node n fell back to by policy when n was full. A slab belongs
 *    to one heap for life, so its objects are only ever reused for
 *    allocations that want that node: freed memory never changes node.
 *  - A thread owns one heap per node it allocated for (lazily). T.heap is
 *    the heap of the current CPU's memory node; the fast path checks the
 *    CPU (one load of glibc's rseq cpu_id) and the policy tag, and pops.
 *  - Thread exit (pthread key destructor) sends the thread's batched
 *    remote frees home, releases the slabs with nothing live to the page
 *    level and parks the thread's heaps in the per-node pool; a thread
 *    that starts later on that node adopts a parked heap whole (its
 *    partial slabs, its full ones, the remote frees still in flight). A
 *    remote free into a parked heap marks the pool, and the next thread of
 *    the node that needs a slab trims the parked heaps first; a thread
 *    about to take a new slab takes a parked heap's partial slab of that
 *    class instead (steal). Before the heaps give their slabs back, the
 *    page level's dirty limit is raised to the pages in use (purge.c:
 *    the next threads take them again); after an exit, the node's
 *    committed free pages go back to the OS past half its pages in use
 *    (exit_trim). Heaps and thread records are never unmapped, so a late
 *    remote free always finds valid memory, and thread churn reuses them.
 *
 * Ownership: a heap's lists belong to its owner thread, or to whoever
 * took a parked heap out of the pool (adoption, trim); the pools are
 * under their locks (the node's, meta.c; the policy pool's, here).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

typedef _nd_slab_t slab_t;
typedef _nd_heap_t heap_t;

#define TF_PTR ND_TF_PTR
#define NOTIFY ND_TF_NOTIFY

/* Protects ppool and ppool_tail (parked policy heaps). */
ND_LOCK_DEFINE(pheap_lock, ND_RANK_SLAB_THREADS);
/* Held by sweep_pool while it has a parked heap out of its pool, and by
 * heap_take before it makes a new heap: a thread never makes a heap while
 * one of its key is out being trimmed (it waits for it instead). */
ND_LOCK_DEFINE(sweep_lock, ND_RANK_SLAB_SWEEP);
void (*_nd_heap_sweep_hook)(void);

/* Set (release) by _nd_heap_init, the last step of malloc.c's init: before
 * it the entry points return NULL and malloc.c runs the init (this layer
 * does not read the top layer's state). */
static int heap_ready;
/* A thread's heaps[] entry of a node without a heap: every class's slab is
 * the empty one, so place.c's nd_malloc_onnode pops NULL there and takes
 * its slow path with no NULL test. Never owned, never written after the
 * init. */
static heap_t heap_none;
static heap_t *ppool, *ppool_tail;

/* The pool of key (pol, node): the policy pool, or the node's (meta.c's
 * node state, under the node lock); its lock in *lk. */
static heap_t **pool_of(const nd_policy_t *pol, int node, _nd_lock_t **lk)
{
	*lk = pol ? &pheap_lock : &_nd_meta_node[node].lock;
	return pol ? &ppool : &_nd_meta_node[node].pool;
}

/* The tail of pool (pool_of's; under its lock): its last heap, NULL when
 * it is empty. Kept so that a sweep's turn puts its heap back at the tail
 * without a walk: a walk per turn made a sweep of n parked heaps O(n^2)
 * (thousands of threads that exit together). */
static heap_t **pool_tail(heap_t **pool)
{
	if (pool == &ppool)
		return &ppool_tail;
	return &((_nd_meta_node_t *)(void *)((char *)pool - offsetof(_nd_meta_node_t, pool)))->pool_tail;
}


static inline unsigned class_of(size_t size) { return _nd_slab_cls_tab[(size + 15) >> 4]; }

/* A full slab of class c of h got a remote free (its NOTIFY bit: unpark
 * moves such slabs back to the partial list). */
static inline bool notified(const heap_t *h, unsigned c)
{
	return (__atomic_load_n(&h->notify, __ATOMIC_RELAXED) & ((uint64_t)1 << c)) != 0;
}

/* The full slab of class c with the most room (owner frees came back,
 * fewer than FULL_BACK) among the n most recently parked; NULL if none
 * has room. The room is cap less the objects out or lost (lost:
 * slab_purge.c): a kept slab of another page count made a slab of c
 * (slab.c, take_pick) holds another number of objects than c's own. */
static slab_t *full_best(const heap_t *h, unsigned c, int n)
{
	slab_t *best = NULL, *s = h->fullh[c];
	int32_t most = 0;
	for (; s && n; s = s->next, n--) {
		int32_t room = (int32_t)s->cap - (int32_t)(s->used + s->fbias + s->lost);
		if (room > most) {
			most = room;
			best = s;
		}
	}
	return best;
}

/* Before a new slab: the best of the 16 most recently parked full slabs
 * (full_best) is used first. */
static bool unpark_local(heap_t *h, unsigned c)
{
	slab_t *best = full_best(h, c, 16);
	if (!best)
		return false;
	_nd_slab_full_unlink(h, best);
	_nd_slab_part_push_front(h, best);
	return true;
}

/* The current slab of class c has nothing: park it as full (unless
 * remote frees arrived meanwhile: then it stays, to be collected).
 * Inlined into heap_alloc's two calls: out of line it would land outside
 * src/hot_text.ld's window (wl_small: 3 page faults more). */
static inline __attribute__((always_inline)) void park_full(heap_t *h, slab_t *s)
{
	if (nd_unlikely(!s->used)) { /* a lent slab: the rest withheld, nothing out */
		_nd_slab_part_unlink(h, s);
		_nd_slab_release(s);
		return;
	}
	if (!_nd_slab_park_notify(s))
		return;
	_nd_slab_part_unlink(h, s);
	_nd_slab_full_push(h, s);
}

/* The common refill in one step: s, the only slab of class c's partial
 * list (its own class's, not lent), ran dry, no full slab of c got a
 * remote free (unpark would find none) and one got owner frees back: s
 * parks full and that slab takes its place, as park_full then
 * unpark_local do (s would head the full list with no room: 15 more are
 * looked at), with one list update instead of four calls and two loop
 * rounds (bench/policy.sh, 16-256 B rounded to 64: 2% of the calls
 * refill). swap_ok: the case holds but for that slab (the current one
 * of an empty class, _nd_slab_empty, fails on used); swap_pick: that
 * slab, NULL if the case does not hold. */
static inline __attribute__((always_inline)) bool swap_ok(const heap_t *h, const slab_t *s, unsigned c)
{
	return !s->next && s->cls == c && s->used && !notified(h, c);
}

static inline __attribute__((always_inline)) slab_t *swap_pick(heap_t *h, slab_t *s, unsigned c)
{
	return swap_ok(h, s, c) ? full_best(h, c, 15) : NULL;
}

/* swap_dry: false if nothing was done (the general path runs). */
static bool swap_dry(heap_t *h, slab_t *s, unsigned c)
{
	slab_t *b = swap_pick(h, s, c);
	if (!b)
		return false;
	if (_nd_slab_park_notify(s))
		_nd_slab_swap_full(h, s, b);
	return true; /* else remote frees came: the loop collects them */
}

/* Full slabs of class c that got remote frees go back to the partial list. */
static bool unpark(heap_t *h, unsigned c)
{
	if (!notified(h, c))
		return false;
	__atomic_fetch_and(&h->notify, ~((uint64_t)1 << c), __ATOMIC_ACQ_REL);
	bool any = false;
	slab_t *s = h->fullh[c];
	while (s) {
		slab_t *nx = s->next;
		if (__atomic_load_n(&s->tfree, __ATOMIC_ACQUIRE) & TF_PTR) {
			_nd_slab_full_unlink(h, s);
			_nd_slab_part_insert(h, s);
			any = true;
		}
		s = nx;
	}
	return any;
}


/* Stamps every slab of h with tp (adoption: the new owner; parking: 0, so
 * that a later thread with a recycled thread pointer is not taken for the
 * owner). Caller owns h. */
static void heap_set_tp(heap_t *h, uintptr_t tp)
{
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++)
		for (int f = 0; f < 2; f++) /* partial, then full list */
			for (slab_t *s = f ? h->fullh[c] : h->cur[c]; s && s != &_nd_slab_empty; s = s->next)
				__atomic_store_n(&s->tp, _nd_slab_stamp(s, tp), __ATOMIC_RELAXED);
}


static void heap_trim(heap_t *h);

/* Moves every slab of p (a parked heap taken out of its pool) into h, the
 * caller's running heap of the same key: memory freed into a heap whose
 * thread exited serves the next thread that needs it. A remote free that
 * read the old heap pointer only sets a notify bit there (harmless: the
 * slab is found again when h trims or unparks). */
static void heap_absorb(heap_t *h, heap_t *p)
{
	ND_ASSERT(!p->owner && h->owner == _nd_tls, "a parked heap goes into the caller's running heap");
	uintptr_t tp = _nd_slab_my_tp();
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		slab_t *s;
		while ((s = p->fullh[c]) != NULL) {
			_nd_slab_full_unlink(p, s);
			__atomic_store_n(&s->heap, h, __ATOMIC_RELEASE); /* nd_slab.h, heap */
			__atomic_store_n(&s->tp, _nd_slab_stamp(s, tp), __ATOMIC_RELAXED);
			if (s->free || (__atomic_load_n(&s->tfree, __ATOMIC_ACQUIRE) & TF_PTR))
				_nd_slab_part_insert(h, s);
			else
				_nd_slab_full_push(h, s);
		}
		while ((s = p->cur[c]) != &_nd_slab_empty) {
			_nd_slab_part_unlink(p, s);
			__atomic_store_n(&s->heap, h, __ATOMIC_RELEASE); /* nd_slab.h, heap */
			__atomic_store_n(&s->tp, _nd_slab_stamp(s, tp), __ATOMIC_RELAXED);
			_nd_slab_part_insert(h, s);
		}
	}
	__atomic_store_n(&p->notify, 0, __ATOMIC_RELAXED);
}

/* Per pool: the classes of which a parked heap may hold a partial slab
 * (a node's pool: its _nd_meta_node_t's pcls). A superset: set when a heap
 * is parked or put back by a sweep, cleared by a steal that finds none
 * (writes under the pool's lock; read without it as a hint: relaxed
 * atomics). */
static uint64_t pcls_pol;

static uint64_t *pool_cls(const heap_t *h)
{
	return h->pol ? &pcls_pol : &_nd_meta_node[h->node].pcls;
}

static uint64_t part_classes(const heap_t *h)
{
	uint64_t m = 0;
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++)
		if (h->cur[c] != &_nd_slab_empty)
			m |= (uint64_t)1 << c;
	return m;
}

/* The parked heaps of h's pool (its node's, or the policy pool): each is
 * trimmed, and with absorb (the page level had no room) those of h's key
 * are absorbed into h. Run by a thread that is about to take a new slab
 * when remote frees reached a parked heap, or when the page level had no
 * room. One heap at a time is out of the pool (sweep_lock held, not the
 * pool's lock), then goes back at the tail (an empty one is adopted like
 * any other): taking them all out made a thread starting meanwhile find
 * the pool empty and make a new heap with fresh slabs (4 threads a round,
 * 5-7 heaps). Without absorb the heaps keep their slabs: absorbing on
 * every remote free gathered the sparse slabs of every exited thread into
 * one heap, whose next owner used few of them while the other new threads
 * took fresh slabs (wl_threads: 340 slabs at 8% in one heap); steal()
 * hands them out one at a time. */
/* n turns of a pool (lk its lock): each takes its head out (sweep_lock
 * held, not the pool's lock), trims it, absorbs it into h (absorb: h's
 * key) or purges its partial slabs' free pages (purge), and puts it back
 * at the tail. Nonzero if pages were purged. Always inlined: sweep_pool's
 * copy is in the hot text (src/hot_text.ld), malloc_trim's is cold. */
static inline __attribute__((always_inline)) size_t pool_turns(heap_t **pool, _nd_lock_t *lk, int n, heap_t *h, bool absorb, bool purge)
{
	size_t got = 0;
	/* n turns, bounded: the head is a heap not swept yet, or one parked
	 * meanwhile (in at the head; an old one then waits for the next
	 * sweep), or, after others were taken, one swept again */
	for (; n > 0; n--) {
		_nd_lock(&sweep_lock);
		_nd_lock(lk);
		heap_t *p = *pool, **tail = pool_tail(pool);
		if (p && !(*pool = p->pool_next))
			*tail = NULL;
		_nd_unlock(lk);
		if (!p) {
			_nd_unlock(&sweep_lock);
			break;
		}
		void (*hook)(void) = __atomic_load_n(&_nd_heap_sweep_hook, __ATOMIC_ACQUIRE);
		if (hook && h)
			hook();
		heap_trim(p);
		if (absorb && p->pol == h->pol && p->node == h->node)
			heap_absorb(h, p);
		if (purge)
			got += _nd_slab_purge_all(p);
		uint64_t cls = part_classes(p);
		p->pool_next = NULL;
		_nd_lock(lk);
		ND_ASSERT(!*pool == !*tail && (!*tail || !(*tail)->pool_next), "a pool's tail is its last heap");
		*(*tail ? &(*tail)->pool_next : pool) = p;
		*tail = p;
		__atomic_fetch_or(pool_cls(p), cls, __ATOMIC_RELAXED);
		_nd_unlock(lk);
		_nd_unlock(&sweep_lock);
	}
	return got;
}

static __attribute__((noinline)) void sweep_pool(heap_t *h, bool absorb)
{
	_nd_lock_t *lk;
	heap_t **pool = pool_of(h->pol, h->node, &lk);
	_nd_lock(lk);
	int n = 0;
	for (heap_t *p = *pool; p; p = p->pool_next)
		n++;
	__atomic_store_n(_nd_meta_pool_dirty(h), 0, __ATOMIC_RELAXED);
	_nd_unlock(lk);
	pool_turns(pool, lk, n, h, absorb, false);
}

/* malloc_trim's for one pool: each parked heap in turn, as sweep_pool
 * (a thread starting meanwhile waits for it rather than make a heap),
 * trimmed and its partial slabs' free pages purged. A thread's exit parks
 * its heap without that purge (it cost the thread-churn workloads faults:
 * docs/arenas.md), so these pages stayed until a thread adopted the heap.
 * Nonzero if pages were purged. */
static size_t trim_pool(heap_t **pool, _nd_lock_t *lk)
{
	int n = 0;
	_nd_lock(lk);
	for (heap_t *p = *pool; p; p = p->pool_next)
		n++;
	_nd_unlock(lk);
	return pool_turns(pool, lk, n, NULL, false, true);
}

size_t _nd_heap_trim_parked(void)
{
	size_t got = 0;
	_nd_lock_t *lk;
	heap_t **pool;
	/* no peek without the lock: heap_abandon writes the pool under it;
	 * a node not counted by meta.c has no parked heap, and its lock is
	 * not fork's (nd_lock.h, "Counted arrays") */
	int nn = _nd_meta_nodes_used();
	for (int n = 0; n < _nd_topo()->node_limit && n < nn; n++) {
		pool = pool_of(NULL, n, &lk);
		got += trim_pool(pool, lk);
	}
	pool = pool_of(&_nd_policy_local, 0, &lk);
	return got + trim_pool(pool, lk);
}

/* Before a new slab of class c: a partial slab of a parked heap of h's key
 * moves to h (the pool's lock makes the caller its owner meanwhile), so
 * the room left in the slabs of exited threads serves the running ones
 * before fresh pages do. A remote free that read the old heap pointer only
 * marks the pool dirty (a partial slab has no NOTIFY). */
static bool steal(heap_t *h, unsigned c)
{
	uint64_t bit = (uint64_t)1 << c, *cls = pool_cls(h);
	if (!(__atomic_load_n(cls, __ATOMIC_RELAXED) & bit))
		return false;
	_nd_lock_t *lk;
	heap_t **pool = pool_of(h->pol, h->node, &lk);
	slab_t *s = NULL;
	_nd_lock(lk);
	for (heap_t *p = *pool; p && !s; p = p->pool_next) {
		if (p->pol != h->pol || p->node != h->node || p->cur[c] == &_nd_slab_empty)
			continue;
		s = p->cur[c];
		_nd_slab_part_unlink(p, s);
		__atomic_store_n(&s->heap, h, __ATOMIC_RELEASE); /* nd_slab.h, heap */
		__atomic_store_n(&s->tp, _nd_slab_stamp(s, _nd_slab_my_tp()), __ATOMIC_RELAXED);
	}
	if (!s)
		__atomic_store_n(cls, *cls & ~bit, __ATOMIC_RELAXED);
	_nd_unlock(lk);
	if (!s)
		return false;
	_nd_slab_part_push_front(h, s);
	return true;
}

/* s, h's current slab of class c, has nothing listed: has the slab behind
 * it (after unparking c's full slabs that got remote frees) objects to
 * give? Then those go first and s's next page is carved only once no
 * slab of the class has any: carving first kept every class's pages of
 * two slabs resident under a producer/consumer ring (issue 11). */
static bool ready_behind(heap_t *h, const slab_t *s, unsigned c)
{
	slab_t *nx = s->next;
	if (!nx && unpark(h, c))
		nx = s->next;
	return nx && (nx->free || (__atomic_load_n(&nx->tfree, __ATOMIC_RELAXED) & TF_PTR));
}

/* s has remote frees to collect: _nd_slab_collect's own first test,
 * here so that a refill without any (the common one) makes no call. */
static inline bool has_remote(const slab_t *s)
{
	return (__atomic_load_n(&s->tfree, __ATOMIC_RELAXED) & TF_PTR) != 0;
}

/* s has nothing to give without the refill's work: nothing listed, no
 * remote frees, no objects withheld (slab_purge.c). */
static inline bool dry(const slab_t *s)
{
	return !s->free && !has_remote(s) && !s->purged;
}

/* Pops an object of class c from heap h (owner), refilling as needed:
 * heap_refill's loop (it counted the refill). roomless: heap_refill's
 * full_best found no full slab of c with room, so swap_dry and the first
 * unpark_local would find none either (16 slabs: the current one, parked
 * with nothing listed, then the 15 it looked at); it holds until a step
 * can give a full slab room: a purged slab parked (its withheld objects),
 * or past unpark_local (flushes, sweeps: frees into h's slabs). NULL:
 * errno ENOMEM. */
/* A decay found the node's dirty pages unused a whole period (purge.c,
 * decay_slot): the refaults that let h keep its empty slabs ended with
 * the phase, so they are held to the bound again now, not at the next
 * slab that empties (a program that freed its working set and went on
 * with less kept 16 MiB of them for good: docs/arenas.md, "Refaults").
 * Out of the hot text (src/hot_text.ld): a process that keeps no slab
 * never runs it. */
static __attribute__((noinline, cold)) void kept_expire(heap_t *h)
{
	uint32_t g = _nd_purge_kept_gen(h->node);
	if (g == h->kgen)
		return;
	h->kgen = g;
	if (_nd_purge_over(h->node, h->epages))
		_nd_slab_release_empty(h);
}

/* s's withheld objects come back (_nd_slab_unpurge); h->unp notes s's
 * class, whose slabs a lend no longer purges (slab_purge.c,
 * _nd_slab_purge_lent): the class uses those pages again. */
static bool unpurge(heap_t *h, slab_t *s)
{
	if (!_nd_slab_unpurge(s))
		return false;
	h->unp |= (uint64_t)1 << s->cls;
	return true;
}

static __attribute__((noinline)) void *heap_alloc(heap_t *h, unsigned c, const nd_policy_t *pol, bool roomless)
{
	ND_ASSERT(h->owner == _nd_tls, "heap_alloc runs on h's owner");
	if (h->epages)
		kept_expire(h);
	bool swept = false, flushed = false;
	for (;;) {
		slab_t *s = h->cur[c];
		if (s != &_nd_slab_empty) {
			if (!s->free && !(has_remote(s) && _nd_slab_collect(s))) {
				/* withheld objects wait while another partial slab of
				 * c follows (its free objects' pages are resident): s
				 * parks full, unpark_local brings it back (a lent slab
				 * parks as it would below) */
				if (s->purged && s->next) {
					park_full(h, s);
					roomless = false;
					continue;
				}
				if (!(s->purged && unpurge(h, s)) && s->carved < s->cap) {
					if (ready_behind(h, s, c)) {
						_nd_slab_part_unlink(h, s);
						_nd_slab_part_insert(h, s);
						continue;
					}
					_nd_slab_carve(s);
				}
			}
			if (s->free)
				return _nd_slab_take(s); /* checked; check mode: out */
			/* roomless: what swap_dry would find (debug builds check) */
			ND_ASSERT(!roomless || !swap_pick(h, s, c), "roomless: no full slab with room for swap_dry");
			if (roomless || !swap_dry(h, s, c))
				park_full(h, s); /* or, if remote frees came in, collect them */
			continue;
		}
		if (unpark(h, c) || (!roomless && unpark_local(h, c)))
			continue;
		ND_ASSERT(!roomless || !full_best(h, c, 16), "roomless: no full slab with room for unpark_local");
		roomless = false;
		if (!h->user && __atomic_load_n(_nd_meta_pool_dirty(h), __ATOMIC_RELAXED)) {
			sweep_pool(h, false);
			continue;
		}
		/* objects this thread holds for other heaps go home first (they
		 * may be what a parked heap of this pool needs to be trimmed) */
		if (!flushed) {
			flushed = true;
			_nd_thread_t *me = _nd_tls; /* h's owner */
			if (!_nd_thread_none(me) && _nd_slab_rf_flush_all(me))
				continue;
		}
		if (!h->user && steal(h, c))
			continue;
		s = _nd_slab_take_empty(h, c);
		if (s) {
			/* a slab without a page-level call: the decay and burst
			 * clocks are checked here too (purge.c, burst_cut) */
			_nd_purge_decay();
			_nd_slab_part_push_front(h, s);
			continue;
		}
		if (_nd_slab_lend(h, c))
			continue;
		s = _nd_slab_new(h, c, pol);
		if (!s) {
			if (swept || h->user) {
				errno = ENOMEM;
				return NULL;
			}
			/* full: memory parked heaps got back may still serve */
			sweep_pool(h, true);
			swept = true;
			continue;
		}
		if (h->user)
			s->node1 = ND_SLAB_NODE1_UHEAP; /* before any free can see s */
		_nd_slab_purge_taken(h, s);
		_nd_slab_part_push_front(h, s);
	}
}

/* Every refill of class c of h (owner): counted, then the loop's common
 * first rounds in one step, without its frame (heap_alloc keeps six
 * registers), when the current slab ran dry (nothing listed, remote or
 * withheld): its next page carved when no slab follows and no full one
 * got a remote free (ready_behind false: _nd_slab_carve_pop); fully
 * carved with objects out, the next slab when it has objects listed: the
 * partial one behind (park_full, then the pop: _nd_slab_park_pop), or
 * swap_dry's (_nd_slab_swap_pop). Anything else, and remote frees that
 * came meanwhile (park_notify fails), is the loop's: it looks again from
 * the start. Every exit is a tail call (here: 99% of the refills of
 * bench/policy.sh's ALIGN(64) rows, 47% of wl_larson's, carving). NULL:
 * errno ENOMEM. */
static inline __attribute__((always_inline)) void *heap_refill(heap_t *h, unsigned c, const nd_policy_t *pol)
{
	ND_ASSERT(h->owner == _nd_tls, "heap_refill runs on h's owner");
	unsigned tc = _nd_slab_cls_tc[c]; /* the record's class (a twin: its size's) */
	_nd_thread_count16(&h->owner->cls_refill[tc], &h->owner->cls_remote[tc].refill); /* statistics */
	slab_t *s = h->cur[c], *b;
	if (dry(s)) {
		if (s->carved < s->cap) {
			if (!s->next && !notified(h, c))
				return _nd_slab_carve_pop(s);
		} else if (!s->used) {
			/* the empty slab, or a lent one's rest withheld: the loop's */
		} else if (s->next) {
			if (s->next->free && _nd_slab_park_notify(s))
				return _nd_slab_park_pop(h, s);
		} else if (swap_ok(h, s, c)) {
			if (!(b = full_best(h, c, 15)))
				return heap_alloc(h, c, pol, true);
			if (b->free && _nd_slab_park_notify(s))
				return _nd_slab_swap_pop(h, s, b);
		}
	}
	return heap_alloc(h, c, pol, false);
}


/* ---- heaps and threads --------------------------------------------------- */

static int heap_meta_node(int node)
{
	const _nd_topo_t *t = _nd_topo();
	if (node >= 0 && node < t->node_limit && !t->has_mem[node] && t->fallback_len[node] > 0)
		return t->fallback[node][0];
	return node;
}

/* The memory node of a CPU (an unknown CPU: node 0's memory node). */
static int cpu_mem_node(int cpu)
{
	const _nd_topo_t *tp = _nd_topo();
	int node = cpu >= 0 && cpu < tp->cpu_limit ? tp->cpu_mem_node[cpu] : -1;
	return node >= 0 ? node : heap_meta_node(0);
}

/* A parked heap of key (node, pol) out of its pool, or NULL. */
static heap_t *pool_pick(int node, const nd_policy_t *pol)
{
	_nd_lock_t *lk;
	heap_t **pool = pool_of(pol, node, &lk);
	_nd_lock(lk);
	heap_t *h, **pp = pool;
	while ((h = *pp) != NULL && !(h->pol == pol && h->node == node))
		pp = &h->pool_next;
	if (h) {
		*pp = h->pool_next;
		if (!h->pool_next) /* h was the tail: the heap before it is */
			*pool_tail(pool) = pp == pool ? NULL : (heap_t *)(void *)((char *)pp - offsetof(heap_t, pool_next));
	}
	_nd_unlock(lk);
	return h;
}

/* A heap for key (node, pol): adopted from its pool, else new (metadata on
 * meta_node). Stamped with the caller as owner. */
static heap_t *heap_take(_nd_thread_t *t, int node, const nd_policy_t *pol, int meta_node)
{
	heap_t *h = pool_pick(node, pol);
	if (!h) {
		/* a sweep may have the parked heap of this key out: wait */
		_nd_lock(&sweep_lock);
		h = pool_pick(node, pol);
		_nd_unlock(&sweep_lock);
	}
	if (!h) {
		_nd_meta_note_node(meta_node);
		h = _nd_meta_alloc(meta_node, sizeof(heap_t));
		if (!h)
			return NULL;
		for (unsigned c = 0; c < ND_SLAB_CLASSES; c++)
			h->cur[c] = &_nd_slab_empty;
		h->node = node;
		h->pol = pol;
	}
	h->pool_next = NULL;
	h->rnear = 0; /* a new owner: its own turns count (slab.c, _nd_slab_new) */
	heap_set_tp(h, _nd_slab_my_tp());
	__atomic_store_n(&h->owner, t, __ATOMIC_RELEASE);
	return h;
}

/* heaps[i] = h, and the record's copy nheap[i] (the array itself up to
 * ND_NHEAP_IN nodes). */
static void heaps_set(_nd_thread_t *t, int i, heap_t *h)
{
	t->heaps[i] = h;
	if (i < ND_NHEAP_IN)
		t->nheap[i] = (struct nd_heap *)h;
}

/* The thread's node heap of node (made on first use). */
static heap_t *heap_attach(_nd_thread_t *t, int node)
{
	if (node < 0 || node >= ND_MAX_NODES) {
		errno = EINVAL;
		return NULL;
	}
	if (node >= t->nheaps) {
		int n = _nd_topo()->node_limit;
		if (n <= node)
			n = node + 1;
		/* up to ND_NHEAP_IN nodes the record's own nheap is the array */
		heap_t **a = n <= ND_NHEAP_IN ? (heap_t **)t->nheap
					      : _nd_meta_alloc(heap_meta_node(node), (size_t)n * sizeof(heap_t *));
		if (!a)
			return NULL;
		for (int i = 0; i < n; i++) {
			heap_t *x = i < t->nheaps ? t->heaps[i] : &heap_none;
			a[i] = x;
			if (i < ND_NHEAP_IN)
				t->nheap[i] = (struct nd_heap *)x; /* a is nheap itself, or nheap its copy */
		}
		t->heaps = a; /* an old array is left (small, rare) */
		t->nheaps = n;
		t->nfast = _nd_slab_check ? 0 : n < ND_NHEAP_IN ? n : ND_NHEAP_IN;
		t->nbig = _nd_slab_check ? 0 : n;
	}
	_nd_meta_note_node(node);
	heap_t *h = heap_take(t, node, NULL, heap_meta_node(node));
	if (h)
		heaps_set(t, node, h);
	return h;
}

static inline heap_t *heap_get(_nd_thread_t *t, int node)
{
	if (nd_likely(node >= 0 && node < t->nheaps && t->heaps[node] != &heap_none))
		return t->heaps[node];
	return heap_attach(t, node);
}

/* Gives the slabs with nothing live back to the page level (the kept
 * empty ones too; remote lists need no walk: the counts tell) and moves
 * full slabs that got remote frees to the partial list. Caller owns h (its
 * thread, or a parked heap taken out of the pool). */
static void heap_trim(heap_t *h)
{
	_nd_slab_release_empty(h);
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		slab_t *s = h->fullh[c];
		while (s) {
			slab_t *nx = s->next;
			if (_nd_slab_all_remote(s)) {
				_nd_slab_full_unlink(h, s);
				_nd_slab_release(s);
			} else if (__atomic_load_n(&s->tfree, __ATOMIC_ACQUIRE) & TF_PTR) {
				_nd_slab_full_unlink(h, s);
				_nd_slab_part_insert(h, s);
			}
			s = nx;
		}
		s = h->cur[c];
		while (s != &_nd_slab_empty && s) {
			slab_t *nx = s->next;
			if (_nd_slab_all_remote(s)) {
				_nd_slab_part_unlink(h, s);
				_nd_slab_release(s);
			}
			s = nx;
		}
	}
}

/* whole: heap_trim's (the owner's set_cur keeps dir[] right), so the
 * empty current slabs go too: one per class a heap ever used, each where
 * the churn left it in the slot, they split the free space a large run
 * needs (task bigslot). */
static void trim_own(heap_t *h, bool whole)
{
	if (whole)
		heap_trim(h);
	else
		_nd_slab_release_empty(h);
}

size_t _nd_heap_trim_self(bool whole)
{
	_nd_thread_t *t = _nd_tls;
	size_t n = 0;
	if (_nd_thread_none(t))
		return 0;
	for (int i = 0; i < t->nheaps; i++)
		if (t->heaps[i] != &heap_none) {
			trim_own(t->heaps[i], whole);
			n += _nd_slab_purge_all(t->heaps[i]);
		}
	for (int i = 0; i < t->nph; i++) {
		trim_own(t->ph[i], whole);
		n += _nd_slab_purge_all(t->ph[i]);
	}
	return n;
}

/* Thread gone (exit) or a policy heap evicted: trim, then park the heap
 * in its pool for adoption. At an exit the free pages of the classes
 * above 2 KiB go too, but for each slab's next few (slab_purge.c,
 * _nd_slab_purge_park); an evicted policy heap keeps them (its thread
 * may take it back). */
static void heap_abandon(heap_t *h, bool exiting)
{
	heap_trim(h);
	if (exiting)
		_nd_slab_purge_park(h);
	heap_set_tp(h, 0);
	__atomic_store_n(&h->owner, NULL, __ATOMIC_RELEASE);
	_nd_lock_t *lk;
	heap_t **pool = pool_of(h->pol, h->node, &lk);
	uint64_t cls = part_classes(h);
	_nd_lock(lk);
	h->pool_next = *pool;
	*pool = h;
	if (!h->pool_next)
		*pool_tail(pool) = h;
	__atomic_fetch_or(pool_cls(h), cls, __ATOMIC_RELAXED);
	_nd_unlock(lk);
}

/* The thread's heap for a policy that restricts or spreads nodes (bind:
 * node = the node it wants; interleave/weighted: node -1). At most 8 per
 * thread: the oldest other than the current one is parked to make room
 * (the caches that pointed at it are forgotten). */
static heap_t *pheap_get(_nd_thread_t *t, const nd_policy_t *pol, int node)
{
	for (int i = 0; i < t->nph; i++)
		if (t->ph[i]->pol == pol && t->ph[i]->node == node)
			return t->ph[i];
	int nmax = (int)(sizeof t->ph / sizeof t->ph[0]);
	if (t->nph == nmax) {
		int v = t->ph[0] == t->heap ? 1 : 0;
		heap_t *old = t->ph[v];
		for (int i = 0; i < ND_PCACHE; i++)
			if (t->pc[i].heap == (struct nd_heap *)old) {
				t->pc[i].user = ND_PC_NOUSER;
				t->pc[i].kuser = ND_PC_NOUSER;
				t->pc[i].fix = ND_PC_NOUSER;
				__atomic_store_n(&t->pc[i].key, ND_KEY_NONE, __ATOMIC_RELAXED);
			}
		if (t->ilheap == (_nd_heap_hot_t *)(void *)old)
			t->ilheap = &_nd_thread_noheap; /* nd_malloc_interleaved pops owned heaps only */
		for (int i = v; i + 1 < t->nph; i++)
			t->ph[i] = t->ph[i + 1];
		t->nph--;
		heap_abandon(old, false);
	}
	int mn = node >= 0 ? heap_meta_node(node) : cpu_mem_node(_nd_topo_cpu());
	heap_t *h = heap_take(t, node, pol, mn);
	if (h)
		t->ph[t->nph++] = h;
	return h;
}

/* After a thread's exit parked its heaps (their empty slabs went back to
 * the page level): node's committed free pages that were already free at
 * its thread exit before the previous one, and that no thread reused
 * since, go back to the OS if the node's committed free pages exceed half
 * of its pages in use and two purge blocks, at most once per EXIT_TRIM_NS
 * per node (or after EXIT_TRIM_EXITS skipped exits). Why: the page level
 * keeps freed pages up to the recent peak of its pages in use (purge.c),
 * right for one program's phases but not for thread churn, whose exits
 * leave pages later threads do not reuse (wl_threads peaked at 5.9-6.7
 * MiB, glibc 4.8-5.1; with this 4.8-4.9). Two exits back, not one: where
 * threads exit in turn, the pages one gives back wait for its successor.
 * The rate bound and the floor bound what a program pays whose threads do
 * reuse the pages. Each rule's figures, and the rules measured and left
 * (decays, low-water marks, purging parked heaps): docs/arenas.md,
 * "Thread-exit trims". */
#define EXIT_TRIM_NS 10000000ull
#define EXIT_TRIM_EXITS 8u
uint64_t _nd_heap_exit_trim_ns = EXIT_TRIM_NS;

static void exit_trim(int node)
{
	_nd_meta_node_t *pn = &_nd_meta_node[node];
	uint64_t stamp = _nd_page_exit_stamp(node); /* two exits back */
	uint64_t now = _nd_os_now_ns(), last = __atomic_load_n(&pn->exit_trim_last, __ATOMIC_RELAXED);
	if (now - last < _nd_heap_exit_trim_ns &&
	    __atomic_add_fetch(&pn->exit_trim_skipped, 1, __ATOMIC_RELAXED) <= EXIT_TRIM_EXITS)
		return;
	_nd_page_info_t in;
	if (_nd_page_info(node, &in) == 0 && in.usable && in.dirty_pages > 2 * in.purge_pages &&
	    2 * in.dirty_pages > in.used_pages &&
	    __atomic_compare_exchange_n(&pn->exit_trim_last, &last, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		__atomic_store_n(&pn->exit_trim_skipped, 0, __ATOMIC_RELAXED);
		_nd_page_trim_older(node, stamp);
	}
}

/* The thread-exit hook (thread.c): every heap is parked. */
static void thread_exit_hook(_nd_thread_t *t)
{
	_nd_slab_thread_done(t); /* before the heaps park: trimming then sees the frees home */
	t->heap = NULL;
	t->lheap = NULL;
	t->ilheap = &_nd_thread_noheap;
	uint64_t nodes[ND_MAX_NODES / 64] = { 0 }; /* to trim, each once: an exit stamps a node once */
	for (int i = 0; i < t->nheaps; i++)
		if (t->heaps[i] != &heap_none)
			nodes[i / 64] |= 1ull << (i % 64);
	bool spread = false;
	for (int i = 0; i < t->nph; i++) {
		int n = t->ph[i]->node;
		spread |= n < 0;
		if (n >= 0)
			nodes[n / 64] |= 1ull << (n % 64);
	}
	if (t->page_drop) { /* its burst of run frees: the runs' node, a thread without heaps too */
		int n = (int)t->drop_node1 - 1;
		if (n >= 0 && n < ND_MAX_NODES)
			nodes[n / 64] |= 1ull << (n % 64);
	}
	int lim = _nd_topo()->node_limit;
	for (int n = 0; n < lim && n < ND_MAX_NODES; n++)
		if (spread || (nodes[n / 64] >> (n % 64) & 1))
			_nd_purge_exit(n); /* before the heaps give their slabs back */
	_nd_page_burst_done(t); /* handed on: the exit's own frees count in no burst */
	for (int i = 0; i < t->nheaps; i++) {
		heap_t *h = t->heaps[i];
		if (h != &heap_none) {
			heaps_set(t, i, &heap_none);
			heap_abandon(h, true);
		}
	}
	for (int i = 0; i < t->nph; i++)
		heap_abandon(t->ph[i], true);
	if (t->nph)
		t->nph = 0; /* the record's second page: written only if used (nd_thread.h) */
	for (int n = 0; n < lim && n < ND_MAX_NODES; n++)
		if (spread || (nodes[n / 64] >> (n % 64) & 1))
			exit_trim(n);
}

/* ---- resolution: which heap an allocation uses ----------------------------- */

/* Points t->cpu64 at the CPU pair the fast path compares (rseq's, or the
 * record's own for an emulated CPU or without rseq) and returns it. */
static uint64_t cpu_pair(_nd_thread_t *t)
{
	if (t->cpu_override >= 0) {
		t->cpu_pair[0] = t->cpu_pair[1] = t->cpu_override;
		t->cpu64 = (const uint64_t *)(void *)t->cpu_pair;
	} else {
		struct _nd_rseq_abi *r = _nd_os_rseq_area();
		if (r && (int32_t)__atomic_load_n(&r->cpu_id, __ATOMIC_RELAXED) >= 0) {
			t->cpu64 = (const uint64_t *)(void *)&r->cpu_id_start;
		} else {
			/* without rseq: the CPU as read now, refreshed every 32
			 * slow paths (malloc_slow) */
			t->cpu_pair[0] = t->cpu_pair[1] = _nd_topo_cpu();
			t->cpu64 = (const uint64_t *)(void *)t->cpu_pair;
		}
	}
	return __atomic_load_n(t->cpu64, __ATOMIC_RELAXED);
}

/* Stores the key of a heap chosen under policy generation g: if the
 * generation moved meanwhile, NONE (thread.c's invalidation may have
 * passed this record before the store). */
static void key_store(uint64_t *key, uint64_t v, uint32_t g)
{
	if (_nd_slab_check)
		return; /* every allocation validates: keys stay NONE */
	__atomic_store_n(key, v, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&_nd_policy_gen, __ATOMIC_SEQ_CST) != g)
		__atomic_store_n(key, ND_KEY_NONE, __ATOMIC_RELAXED);
}

/* The heap an allocation under pol (interned, or the local one) uses on
 * cpu. Interleave/weighted: the policy heap (the node is chosen per slab);
 * bind: the policy heap of the node it wants; the others: a node heap. */
static heap_t *heap_for(_nd_thread_t *t, const nd_policy_t *pol, int cpu)
{
	_nd_policy_iter_t it;
	switch (pol->mode) {
	case ND_POLICY_INTERLEAVE:
	case ND_POLICY_WEIGHTED:
		return pheap_get(t, pol, -1);
	case ND_POLICY_BIND: {
		int n = _nd_policy_first(&it, pol, -1);
		if (n < 0) {
			errno = ENOMEM;
			return NULL;
		}
		return pheap_get(t, pol, n);
	}
	case ND_POLICY_PREFERRED:
	case ND_POLICY_PREFERRED_MANY: {
		int n = _nd_policy_first(&it, pol, -1);
		if (n < 0) {
			errno = ENOMEM;
			return NULL;
		}
		return heap_get(t, n);
	}
	default:
		return heap_get(t, cpu_mem_node(cpu));
	}
}

/* The thread policy's heap, resolved again (policy or CPU changed): the
 * direct table follows it, key says for which CPU pair. */
static heap_t *resolve(_nd_thread_t *t)
{
	uint32_t g = __atomic_load_n(&_nd_policy_gen, __ATOMIC_SEQ_CST);
	const nd_policy_t *pol = _nd_policy_current();
	uint64_t pair = cpu_pair(t);
	int cpu = _nd_topo_cpu();
	heap_t *h = heap_for(t, pol, cpu);
	if (!h)
		return NULL;
	if (h != t->heap)
		_nd_slab_set_heap(t, h);
	t->hpol = pol;
	if (pol->mode == ND_POLICY_LOCAL && !_nd_slab_check) {
		t->lheap = h;
		__atomic_store_n(&t->lkey, pair, __ATOMIC_RELAXED);
	}
	key_store(&t->key, pair, g);
	return h;
}

/* The heap of the current CPU's memory node (nd_malloc_local). */
static heap_t *local_heap(_nd_thread_t *t)
{
	uint64_t pair = cpu_pair(t);
	heap_t *h = heap_get(t, cpu_mem_node(_nd_topo_cpu()));
	if (h && !_nd_slab_check) {
		t->lheap = h;
		__atomic_store_n(&t->lkey, pair, __ATOMIC_RELAXED);
	}
	return h;
}

/* One object of class c: node >= 0: that node's heap (refills fall back
 * along its list, under pol or local); else pol (NULL = the thread's). */
static void *alloc_class(unsigned c, const nd_policy_t *pol, int node)
{
	_nd_thread_t *t = _nd_thread_self();
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	heap_t *h;
	if (node >= 0) {
		h = heap_get(t, node);
		if (!pol)
			pol = &_nd_policy_local;
	} else if (!pol || pol->mode == ND_POLICY_DEFAULT) {
		h = _nd_slab_key_ok(t, &t->key) ? t->heap : resolve(t);
		pol = t->hpol;
	} else if (pol->mode == ND_POLICY_LOCAL) {
		h = local_heap(t);
	} else {
		const nd_policy_t *ip = _nd_policy_intern(pol, NULL, 0);
		if (!ip)
			return NULL;
		pol = ip;
		h = heap_for(t, pol, _nd_topo_cpu());
	}
	if (!h)
		return NULL;
	return heap_refill(h, c, pol);
}

/* Without rseq the CPU pair is the record's copy: look at the CPU again
 * every 32 slow paths. */
static inline bool count_slow_due(_nd_thread_t *t)
{
	return (++t->slow & 31) == 0;
}
static inline void cpu_recheck(_nd_thread_t *t)
{
	if (nd_unlikely(t->cpu64 == (const uint64_t *)(void *)t->cpu_pair) && t->cpu_override < 0)
		_nd_thread_invalidate(t);
}
static inline void count_slow(_nd_thread_t *t)
{
	if (count_slow_due(t))
		cpu_recheck(t);
}

/* Class c of t's current heap had nothing at hand: a refill (counted);
 * count_slow's every 32nd call the CPU check. heap_refill written out
 * once here, not in each caller (_nd_heap_refill, through malloc_slow too): one
 * jump more a refill, and the part of the code every process runs
 * (hot_text.ld) about 1 KiB shorter. */
static __attribute__((noinline)) void *class_slow(_nd_thread_t *t, unsigned c)
{
	if (nd_unlikely(count_slow_due(t)))
		cpu_recheck(t);
	return heap_refill(t->heap, c, t->hpol);
}

/* A malloc whose key matched, as malloc.c's fast path: the borrowed list
 * first (nd_slab.h, _nd_slab_bw_push: recently freed), else the current
 * slab, else the same refill (_nd_heap_refill: borrowed lists, the
 * exchange, lending, spans before a fresh slab). */
static inline __attribute__((always_inline)) void *keyed_malloc(_nd_thread_t *t, size_t size)
{
	unsigned c = class_of(size);
	_nd_slab_hot_t *b = _nd_thread_bw(t, c);
	void *o = _nd_slab_pop(b->free ? b : (_nd_slab_hot_t *)t->heap->cur[c]);
	if (nd_likely(o != NULL))
		return o;
	return _nd_heap_refill(size);
}

/* Everything but a pop: first call (before the init: NULL), thread setup, CPU or policy
 * change, check mode. */
static __attribute__((noinline)) void *malloc_slow(size_t size)
{
	if (nd_unlikely(!__atomic_load_n(&heap_ready, __ATOMIC_ACQUIRE)))
		return NULL; /* errno untouched: malloc.c runs the init (no call up a layer) */
	_nd_thread_t *t = _nd_thread_self();
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	count_slow(t);
	/* A key miss (a migration, a policy change): resolve t's heap (key
	 * stored), then the keyed malloc's pop and refill. alloc_class's
	 * heap_refill took a fresh slab where the keyed refill reused the
	 * borrowed lists or a span (test_slab_key_miss). */
	heap_t *h = resolve(t);
	if (!h)
		return NULL;
	if (nd_likely(_nd_slab_key_ok(t, &t->key))) {
		uint64_t slow = t->slow;
		void *o = keyed_malloc(t, size);
		t->slow = slow; /* one slow path, counted above (not again by class_slow) */
		return o;
	}
	return heap_refill(h, class_of(size), t->hpol); /* check mode: keys stay NONE */
}

/* Sizes above ND_SLAB_DIRECT, and malloc.c's fast path when the key
 * missed: while the key holds, pop or refill from the current heap. */
void *_nd_heap_malloc(size_t size)
{
	_nd_thread_t *t = _nd_tls;
	if (nd_likely(_nd_slab_key_ok(t, &t->key)))
		return keyed_malloc(t, size);
	return malloc_slow(size);
}

/* h's refill of class c would carve, or look beyond its partial list:
 * the current slab has nothing listed, remote or withheld, none follows,
 * and no full slab of c got a remote free. */
static inline bool only_new(const heap_t *h, unsigned c)
{
	const slab_t *s = h->cur[c];
	return dry(s) && !s->next && !notified(h, c);
}

/* bw_lend while c's own list bc keeps dir[] dry (_nd_slab_bw_take): up
 * to ND_SLAB_BW_LEND objects of lender list b at once, the first for the
 * malloc, the others onto bc. Out of line: _nd_heap_refill, in the
 * code every process runs, stays short (hot_text.ld). */
static __attribute__((noinline)) void *bw_lend_dry(_nd_slab_hot_t *b, _nd_slab_hot_t *bc)
{
	void **o = b->free, **last = o;
	uint32_t j = 1;
	for (; j < ND_SLAB_BW_LEND && last[ND_FO_LINK]; j++)
		last = last[ND_FO_LINK];
	b->free = last[ND_FO_LINK];
	b->used += j;
	if (last != o) {
		last[ND_FO_LINK] = NULL;
		bc->free = o[ND_FO_LINK];
		bc->used -= j - 1;
	}
	o[ND_FO_MARK] = NULL;
	return o;
}

/* Lending (docs/malloc.md, issue 11): objects carved while another
 * thread's list of the class is full stay in circulation, so each class
 * grew to its own peak demand (wl_xfree 2's 20 classes: 440 KiB of peaks
 * for 311 KiB of live objects at most). So when only new memory is left,
 * t's borrowed list of a slightly bigger class (_nd_slab_cls_lend) lends
 * an object, which keeps its class. NULL if those lists are empty. */
static inline void *bw_lend(_nd_thread_t *t, unsigned c)
{
	for (unsigned k = c + 1, n = _nd_slab_cls_lend[c]; n; k++, n--) {
		_nd_slab_hot_t *b = _nd_thread_bw(t, k);
		if (b->free) {
			/* it serves c's fast path until it runs dry (bw_take),
			 * or c's list gets objects (bw_pushed); a batch while
			 * c's list keeps dir[] dry */
			_nd_slab_hot_t *bc = _nd_thread_bw(t, c);
			if (t->cdir[c] == bc) {
				ND_ASSERT(!bc->free && bc->used == _nd_slab_bw_cap_of(t, c) + 1,
					  "a list that keeps dir[] dry is active and empty (bw_lend_dry overwrites its free)");
				return bw_lend_dry(b, bc);
			}
			_nd_slab_dir_class(t, c, b);
			return _nd_slab_pop(b);
		}
	}
	return NULL;
}

/* Spans (slab.c) are looked for only where frees left holes: a class of
 * 80-256 B below c has 4 partial slabs behind its current one.
 * With one, wl_small's churn called _nd_slab_span_take (which found
 * nothing), whose code is outside the part of .text every process
 * touches: its peak RSS 1840 -> 1960 KiB; with two, 7 calls, the same. */
static inline bool span_maybe(const heap_t *h, unsigned c)
{
	for (unsigned d = ND_SPAN_DLO; d <= ND_SPAN_DHI && d < c; d++) {
		const slab_t *s = h->cur[d]->next; /* the first of four */
		if (s && (s = s->next) && (s = s->next) && s->next)
			return true;
	}
	return false;
}

void *_nd_heap_refill(size_t size)
{
	_nd_thread_t *t = _nd_tls; /* the key matched: a real record */
	unsigned c = class_of(size);
	void *o = _nd_slab_bw_take(t, c);
	if (!o && _nd_slab_xfer_maybe(t, c))
		o = _nd_slab_xfer_take(t, c);
	if (!o && only_new(t->heap, c)) {
		/* fresh pages are next: a bigger class's borrowed objects, or
		 * free slots of smaller classes first */
		if (t->bw_node1 > 0)
			o = bw_lend(t, c);
		if (!o && size >= ND_SPAN_LO && size <= ND_SPAN_HI && !t->heap->pol && span_maybe(t->heap, c))
			o = _nd_slab_span_take(t->heap, size);
	}
	return o ? o : class_slow(t, c);
}

/* ---- placement calls' slow paths (malloc.c has the fast paths) ---------- */

void *_nd_heap_onnode(size_t size, int node)
{
	_nd_thread_t *t = _nd_thread_self();
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	count_slow(t);
	return alloc_class(class_of(size), &_nd_policy_local, node);
}

void *_nd_heap_local(size_t size)
{
	_nd_thread_t *t = _nd_thread_self();
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	count_slow(t);
	return alloc_class(class_of(size), &_nd_policy_local, -1);
}

/* The placement calls' refill: their pop from h, a heap of the calling
 * thread found valid (heaps[node], lheap under its key, a policy cache
 * entry), found class c's list empty. pol: what h's refills fall back
 * under. heap.c's empty heap (heaps[] of a node without a heap yet) takes
 * the full path of node. */
static __attribute__((noinline)) void *refill_of_slow(struct nd_heap *h, unsigned c, const nd_policy_t *pol, int node)
{
	if (h == &heap_none) {
		/* heaps[] spans node_limit: a node of a gap in the ids gets
		 * here too, and is no node (EINVAL, not the refill's ENOMEM) */
		if (node >= 0 && !_nd_topo_valid_node(_nd_topo(), node)) {
			_nd_msg_api("node %d does not exist", node);
			errno = EINVAL;
			return NULL;
		}
		/* the class, not its size: an x call's twin class (8192,
		 * 16384: an alignment's) is no size's (audit24: the size gave
		 * the coloured class, 64-aligned) */
		_nd_thread_t *t = _nd_thread_self();
		if (!t) {
			errno = ENOMEM;
			return NULL;
		}
		count_slow(t);
		return alloc_class(c, &_nd_policy_local, node);
	}
	cpu_recheck(_nd_tls);
	return heap_refill(h, c, pol);
}

/* Its calls that are not tail calls (heap_none's, count_slow's every 32nd)
 * are refill_of_slow's: the refill itself keeps no frame. */
void *_nd_heap_refill_of(struct nd_heap *h, unsigned c, const nd_policy_t *pol, int node)
{
	if (nd_unlikely(h == &heap_none || count_slow_due(_nd_tls)))
		return refill_of_slow(h, c, pol, node);
	return heap_refill(h, c, pol);
}

/* nd_malloc_policy's cache: an entry remembers a caller's policy object
 * by its address and the words that can differ between valid policies on
 * this topology (_nd_slab_pc_same), with the heap that policy resolved to
 * on the CPU of key. Only topologies of at most 64 nodes (8 for weighted)
 * are cached; a caller that changes bits above them in a cached object is
 * not seen. */
static bool pc_cacheable(const nd_policy_t *p)
{
	int nl = _nd_topo()->node_limit;
	return nl <= 64 && (p->mode != ND_POLICY_WEIGHTED || nl <= 8);
}

/* Also the padding after the granularity, and the first 8 weights of
 * every mode: place.c compares them too. */
static void pc_fill(struct _nd_pcache *e, const nd_policy_t *p)
{
	memcpy(&e->mode_flags, &p->mode, sizeof e->mode_flags);
	memcpy(&e->gran_pad, &p->granularity_shift, sizeof e->gran_pad);
	e->bits0 = p->nodes.bits[0];
	memcpy(&e->w0, p->weights, sizeof e->w0);
	bool il = _nd_policy_spreads(p);
	e->max = il ? (uint32_t)ND_PAGE_SIZE : (uint32_t)ND_SLAB_MAX;
}

/* e's heap is still the one to use: key still holds *lane. */
static bool pc_valid(const struct _nd_pcache *e)
{
	uint64_t v;
	if (!e->heap || !e->lane)
		return false;
	memcpy(&v, e->lane, sizeof v); /* cpu64, or the caller's weights */
	return __atomic_load_n(&e->key, __ATOMIC_RELAXED) == v;
}

/* An interned policy resolves to the same heap on every CPU (heap_for):
 * interleave and weighted (a policy heap), preferred (its first node),
 * bind to one node; any policy when every CPU is on one node. Its cache
 * entries need no CPU key (place.c compares their fix instead). */
static bool pc_cpu_free(const nd_policy_t *p)
{
	switch (p->mode) {
	case ND_POLICY_INTERLEAVE:
	case ND_POLICY_WEIGHTED:
	case ND_POLICY_PREFERRED:
		return true;
	case ND_POLICY_BIND:
		return nd_nodemask_count(&p->nodes) == 1 || _nd_topo()->one_cpu_node;
	default:
		return _nd_topo()->one_cpu_node;
	}
}

/* A plain object compared without a CPU key (user, place.c: its bytes
 * 0-23 and weights[0..7] against the entry's 32, the weights read at their
 * offset, not through lane): its heap is the same on every CPU, and its
 * weights do not read as ND_KEY_NONE (a fresh or invalidated key). Never
 * in check mode (every allocation validates). Else kuser. */
static bool pc_keyfree(const struct _nd_pcache *e)
{
	return !_nd_slab_check && e->w0 != ND_KEY_NONE && pc_cpu_free(e->pol);
}

/* Debug builds: what place.c's fast path relies on (nd_thread.h). user,
 * kuser and fix are never NULL (ND_PC_NOUSER), and an entry is user or
 * kuser of an object, not both. A user entry, read without lane by the
 * fast path (its bytes 0-23 and weights at their offsets) and left alone
 * by thread.c's invalidation, has its heap, a policy whose heap is the
 * same on every CPU, lane at its own weights and, after pc_key_store,
 * key == w0, never NONE (stale: a call that failed after pc_fill may have
 * left w0 newer than key; the compare then misses). */
static void pc_check(const struct _nd_pcache *e, bool stale)
{
	ND_ASSERT(e->user && e->kuser && e->fix, "a cache entry's user, kuser and fix are never NULL");
	ND_ASSERT(e->user == ND_PC_NOUSER || e->kuser == ND_PC_NOUSER, "an entry is user or kuser, not both");
	if (e->user == ND_PC_NOUSER)
		return;
	ND_ASSERT(e->heap && e->pol && pc_cpu_free(e->pol) && !_nd_slab_check,
		  "a user entry has its heap, the same on every CPU (never in check mode)");
	ND_ASSERT(e->lane == (const uint64_t *)(const void *)e->user->weights, "a user entry's lane is its weights");
	ND_ASSERT(stale || (e->key == e->w0 && e->w0 != ND_KEY_NONE), "a user entry's key is its weights, never NONE");
}

/* The lane of an entry just resolved (heap set): a plain object whose
 * heap is the same on every CPU (a weighted one: each slab chooses its
 * node) compares its weights there instead of the CPU (place.c needs one
 * compare for both; a weighted object's weights matter); every other entry
 * (prepared objects too: the fast path compares their key with *cpu64)
 * the CPU pair. A plain object becomes user here only (its heap set), so
 * a user entry's heap is never NULL. Check mode stores nothing: key stays
 * NONE, no CPU pair equals it. */
static void pc_key_store(_nd_thread_t *t, struct _nd_pcache *e, const nd_policy_t *p, uint64_t pair)
{
	if (_nd_slab_check || (e->user != p && e->kuser != p && e->pol != p))
		return;
	e->fix = e->pol == p && pc_cpu_free(p) ? p : ND_PC_NOUSER;
	if (e->pol != p) {
		bool kf = pc_keyfree(e);
		e->user = kf ? p : ND_PC_NOUSER;
		e->kuser = kf ? ND_PC_NOUSER : p;
	} else if (e->user != ND_PC_NOUSER && !pc_keyfree(e)) { /* p's weights read as NONE */
		e->kuser = e->user;
		e->user = ND_PC_NOUSER;
	}
	if (e->pol != p && pc_cpu_free(e->pol)) {
		e->lane = (const uint64_t *)(const void *)p->weights;
		__atomic_store_n(&e->key, e->w0, __ATOMIC_RELAXED);
	} else if (e->user != ND_PC_NOUSER) {
		/* p is the prepared policy of a user entry's object (its pol):
		 * the object keeps its lane and key (audit24: the CPU pair
		 * here broke a user entry's invariant, pc_check) */
		e->lane = (const uint64_t *)(const void *)e->user->weights;
		__atomic_store_n(&e->key, e->w0, __ATOMIC_RELAXED);
	} else {
		e->lane = t->cpu64;
		__atomic_store_n(&e->key, pair, __ATOMIC_RELAXED);
	}
	pc_check(e, false);
}

/* A new entry's lane until pc_key_store sets one (never, in check mode
 * or when heap_for fails): place.c's pc_hit reads the lane of every
 * entry whose kuser (or user, in nd_mallocx_policy) matches, and this
 * word never equals the key then (ND_KEY_NONE), so the call takes its
 * slow path. */
static const uint64_t lane_none = 0;

void *_nd_heap_policy(size_t size, const nd_policy_t *p)
{
	_nd_thread_t *t = _nd_thread_self();
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	count_slow(t);
	for (int i = 0; i < ND_PCACHE; i++)
		pc_check(&t->pc[i], true); /* a failed call may leave w0 newer than key */
	struct _nd_pcache *e = NULL;
	for (int i = 0; i < ND_PCACHE && !e; i++)
		if (t->pc[i].pol == p || ((t->pc[i].user == p || t->pc[i].kuser == p) && _nd_slab_pc_same(&t->pc[i], p)))
			e = &t->pc[i];
	if (!e) {
		char err[200];
		const nd_policy_t *ip = _nd_policy_intern(p, err, sizeof err);
		if (!ip) {
			_nd_msg_api("nd_malloc_policy: %s", err);
			return NULL; /* errno EINVAL or ENOMEM */
		}
		e = &t->pc[t->pc_next++ % ND_PCACHE];
		/* a prepared policy (p is its interned copy) is found by
		 * pol: place.c tests user first, and its compare would pass;
		 * a plain one is kuser until pc_key_store */
		e->user = ND_PC_NOUSER;
		e->kuser = ip != p && pc_cacheable(p) ? p : ND_PC_NOUSER;
		e->pol = ip;
		e->heap = NULL;
		e->fix = ND_PC_NOUSER;
		e->lane = &lane_none;
		__atomic_store_n(&e->key, ND_KEY_NONE, __ATOMIC_RELAXED);
	}
	pc_fill(e, p); /* a found entry too: the padding may have changed */
	if (e->user == p && !pc_keyfree(e)) { /* its weights now read as NONE */
		e->user = ND_PC_NOUSER;
		e->kuser = p;
		e->lane = &lane_none;
		__atomic_store_n(&e->key, ND_KEY_NONE, __ATOMIC_RELAXED);
	}
	if (e != &t->pc[0]) { /* the fast path looks at entry 0 only */
		struct _nd_pcache x = *e;
		*e = t->pc[0];
		t->pc[0] = x;
		e = &t->pc[0];
	}
	if (size > e->max) {
		errno = EINVAL; /* the caller sends these to the large path */
		return NULL;
	}
	heap_t *h = (heap_t *)e->heap;
	if (!pc_valid(e)) {
		uint64_t pair = cpu_pair(t);
		h = heap_for(t, e->pol, _nd_topo_cpu());
		if (!h)
			return NULL;
		e->heap = h;
		pc_key_store(t, e, p, pair);
	}
	return heap_refill(h, class_of(size), e->pol);
}

/* ---- public heaps (heap_api.c's nd_heap_t) ---------------------------------
 * A public heap's small objects are slabs of a heap that no thread's
 * heaps[] or ph[] holds and no pool sees: its creator allocates
 * (heap_alloc, as owner), so the creator's free is malloc's own push, and
 * it is never parked, trimmed or adopted. It takes no other heap's slabs
 * (steal, absorb): those hold other threads' live objects, which destroy
 * would free. Its slabs are marked ND_SLAB_NODE1_UHEAP (no borrowing, no
 * buffering of other threads' frees), so destroy, called once no thread
 * uses the heap's objects, finds no free in flight. */
bool _nd_heap_user_init(heap_t *h, int node, const nd_policy_t *pol)
{
	_nd_thread_t *t = _nd_thread_self();
	if (!t) {
		errno = ENOMEM;
		return false;
	}
	memset(h, 0, sizeof *h);
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++)
		h->cur[c] = &_nd_slab_empty;
	h->node = node;
	h->pol = pol;
	h->user = 1;
	__atomic_store_n(&h->owner, t, __ATOMIC_RELEASE);
	return true;
}

void *_nd_heap_user_alloc(heap_t *h, unsigned c)
{
	return heap_refill(h, c, h->pol ? h->pol : &_nd_policy_local);
}

void _nd_heap_user_destroy(heap_t *h)
{
	/* no owner from here: any thread may destroy (set_cur then leaves
	 * every thread's dir[] alone: none mirrors a public heap) */
	__atomic_store_n(&h->owner, NULL, __ATOMIC_RELAXED);
	_nd_slab_release_empty(h);
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		slab_t *s;
		while ((s = h->fullh[c]) != NULL) {
			_nd_slab_full_unlink(h, s);
			_nd_slab_drop(s);
		}
		while ((s = h->cur[c]) != &_nd_slab_empty) {
			_nd_slab_part_unlink(h, s);
			_nd_slab_drop(s);
		}
	}
}

void *_nd_heap_alloc(size_t size, size_t align, const nd_policy_t *pol, int node)
{
	if (nd_unlikely(!__atomic_load_n(&heap_ready, __ATOMIC_ACQUIRE)))
		return NULL;
	int c = _nd_slab_class_for(size, align);
	if (c < 0) {
		errno = EINVAL;
		return NULL;
	}
	if (node >= 0 && !pol)
		pol = &_nd_policy_local;
	return alloc_class((unsigned)c, pol, node);
}


int _nd_heap_init(void)
{
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++)
		heap_none.cur[c] = &_nd_slab_empty;
	_nd_thread_set_exit_hook(thread_exit_hook);
	/* last of the init sequence: every layer below is ready */
	__atomic_store_n(&heap_ready, 1, __ATOMIC_RELEASE);
	return 0;
}
