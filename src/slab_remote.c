// SPDX-License-Identifier: MIT
/*
 * Remote frees (docs/malloc.md): the slow half of a free by a thread that
 * does not own the slab, split from slab.c, whose free paths decide per
 * object (nd_slab.h's _nd_slab_bw_push, slab.c's free_home) and call
 * in here:
 *  - remote_send: one CAS splices a chain home onto the slab's tfree;
 *  - the remote-free buffer: per class, one slab's chain waits in the
 *    thread's record (rf[]) and goes home in one splice;
 *  - borrowed lists (bwl[]): a same-node object stays with the freeing
 *    thread for its next mallocs;
 *  - a thread's exit, and the per-class statistics these paths count.
 * Ownership: rf[] and bwl[] belong to the record's thread; other threads
 * touch only a slab's tfree (CAS) and its heap's notify mask (atomic OR).
 */
#include <string.h>

#include "internal.h"

typedef _nd_slab_t slab_t;
typedef _nd_heap_t heap_t;

#define NOTIFY ND_TF_NOTIFY
#define TF_PTR ND_TF_PTR
#define TF_CNT_SHIFT ND_TF_CNT_SHIFT

/* Sends a chain of n objects of s (head .. tail, linked through word 1,
 * each marked free) home: one CAS splices it onto tfree. Once the splice
 * is visible the owner may take the objects and release the slab:
 * everything needed from the header is read before. */
static void remote_send(slab_t *s, void **head, void **tail, uint32_t n)
{
	heap_t *h = __atomic_load_n(&s->heap, __ATOMIC_ACQUIRE); /* nd_slab.h, heap */
	ND_ASSERT(h != NULL, "a slab with objects out has an owner heap");
	ND_ASSERT(n >= 1 && n <= s->cap, "a remote chain holds 1..cap objects");
	uint64_t bit = (uint64_t)1 << s->cls;
	uintptr_t old = __atomic_load_n(&s->tfree, __ATOMIC_RELAXED), nv;
	do {
		tail[ND_FO_LINK] = (void *)(old & TF_PTR);
		/* count + n, head = the chain's, NOTIFY cleared */
		nv = ((old >> TF_CNT_SHIFT) + n) << TF_CNT_SHIFT | (uintptr_t)head;
	} while (!__atomic_compare_exchange_n(&s->tfree, &old, nv, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	if (old & NOTIFY)
		__atomic_fetch_or(&h->notify, bit, __ATOMIC_RELEASE);
	/* parked heap: a thread of its pool will trim and absorb it */
	if (nd_unlikely(__atomic_load_n(&h->owner, __ATOMIC_RELAXED) == NULL) &&
	    !__atomic_load_n(_nd_meta_pool_dirty(h), __ATOMIC_RELAXED))
		__atomic_store_n(_nd_meta_pool_dirty(h), 1, __ATOMIC_RELAXED);
}

/* ---- remote-free buffer (internal.h, _nd_rfree_t) -------------------------
 * A thread batches its frees into slabs it does not own, per class: the
 * objects of one slab chain up in the thread's record and go home in one
 * splice, so the owner's cache line of tfree is written once per batch,
 * not once per object. At most a quarter of a slab (and RF_MAX objects)
 * waits, so the owner is not starved of its own memory; classes whose
 * slabs hold fewer than 8 objects are not buffered. A thread that never
 * allocated gets its record at its first remote free (a held-out
 * benchmark's releaser threads only free: without one, each of their frees
 * was a CAS home and an add to gone_remote[], one line shared by them all).
 * A thread past its exit hook (a record made then would never be released,
 * nor the objects waiting in it), or whose record cannot be made now (no
 * memory, or another thread holds the record lock), sends each
 * object at once. */
#define RF_MAX 32

static inline uint32_t rf_limit(const slab_t *s)
{
	uint32_t m = (uint32_t)s->cap / 4;
	return m > RF_MAX ? RF_MAX : m;
}

/* Counters of exited threads (relaxed atomic adds at their exit; threads
 * without a record add their remote frees here at once), for
 * _nd_slab_class_stats. */
static uint64_t gone_remote[ND_SLAB_CLASSES], gone_refill[ND_SLAB_CLASSES];

void _nd_slab_rf_flush(_nd_thread_t *t, _nd_rfree_t *e)
{
	slab_t *s = (slab_t *)e->slab;
	if (!s)
		return;
	e->slab = NULL;
	unsigned c = _nd_slab_tcls((_nd_slab_hot_t *)s); /* e is rf[c] */
	t->rf_mask &= ~((uint64_t)1 << c);
	t->rf_sent++;
	_nd_thread_count(&t->cls_sent[c], &t->cls_remote[c].n, e->n); /* statistics */
	remote_send(s, e->head, e->tail, e->n);
}

/* Every entry of t's buffer goes home; returns how many were sent. Only
 * the entries of rf_mask: a heap's refill calls this before each new slab,
 * and walking every class cost ~400 instructions with nothing buffered
 * (a held-out shell-like benchmark: 4.8% of all instructions). */
unsigned _nd_slab_rf_flush_all(_nd_thread_t *t)
{
	unsigned n = 0;
	for (uint64_t m = t->rf_mask; m; m &= m - 1, n++)
		_nd_slab_rf_flush(t, &t->rf[__builtin_ctzll(m)]);
	ND_ASSERT(!t->rf_mask, "every entry of the buffer went home");
	return n;
}

/* free_home's entry did not hold s: a thread without a record gets one;
 * a thread that cannot have one sends o at once, and so does anyone for a
 * public heap's slab (nd_slab.h, ND_SLAB_NODE1_UHEAP); else the entry goes
 * home and starts a chain of s with o. */
void _nd_slab_free_remote_new(_nd_thread_t *t, _nd_slab_t *s, void **o)
{
	unsigned c = _nd_slab_tcls((_nd_slab_hot_t *)s);
	if (nd_unlikely(_nd_thread_none(t)) && !(t = _nd_thread_make_free())) {
		__atomic_fetch_add(&gone_remote[c], 1, __ATOMIC_RELAXED);
		remote_send(s, o, o, 1);
		return;
	}
	uint32_t m = rf_limit(s);
	if (m < 2 || s->node1 == ND_SLAB_NODE1_UHEAP) {
		_nd_thread_count(&t->cls_sent[c], &t->cls_remote[c].n, 1);
		remote_send(s, o, o, 1);
		return;
	}
	_nd_rfree_t *e = &t->rf[c];
	_nd_slab_rf_flush(t, e); /* another slab of the class (or none) held the entry */
	o[ND_FO_LINK] = NULL;
	e->head = e->tail = o;
	e->n = 1;
	e->max = m;
	e->slab = (_nd_slab_hot_t *)s;
	t->rf_mask |= (uint64_t)1 << c;
}

/* ---- borrowed lists (internal.h, _nd_thread_t.bw) ------------------------
 * A remote free of an object on the node of the thread's current node
 * heap does not go home: it waits on the thread's borrowed list of its
 * class, and the thread's next mallocs of the class take it (tcmalloc's
 * thread caches do this for every free). Sending it home would cost a
 * splice, the owner's collect, and two cache-line moves per object when
 * two threads trade objects (the owner's malloc pulls the line back from
 * the freeing core). Placement stays exact: the object is on the node
 * the heap's own slabs are, and the lists go home when the thread's heap
 * changes node or kind (_nd_slab_set_heap). Slab accounting stays exact:
 * a borrowed object is out (used) for its slab, as if the program still
 * held it, so its slab is never released under the list. At most
 * cls_bw[c] wait (twice that for slabs whose owner does not collect,
 * slab.c's bw_owner_idle); beyond, frees go through rf[] as before. */

/* Sends a borrowed list home: runs of one slab (the marker, word 0,
 * names it) go in one splice each; the caller's own objects (flagged
 * slabs, nd_slab.h's _nd_slab_free_push) go back onto their slab. */
static void bw_send(void **o)
{
	while (o) {
		slab_t *s = (slab_t *)o[ND_FO_MARK];
		if (_nd_slab_owns(__atomic_load_n(&s->tp, __ATOMIC_RELAXED))) {
			void **nx = o[ND_FO_LINK];
			_nd_slab_free_own(s, o);
			o = nx;
			continue;
		}
		void **head = o, **tail = o;
		uint32_t n = 1;
		for (o = o[ND_FO_LINK]; o && o[ND_FO_MARK] == (void *)s && n < s->cap; o = o[ND_FO_LINK]) {
			tail = o;
			n++;
		}
		remote_send(s, head, tail, n); /* rewrites tail's link: o was read before */
	}
}

/* t's borrowed list of c, taken off (idle now, dir[] on the heap's
 * slab); NULL if empty. */
static inline void **bw_detach(_nd_thread_t *t, unsigned c)
{
	_nd_slab_hot_t *b = _nd_thread_bw(t, c);
	void **o = b->free;
	if (!o)
		return NULL;
	b->free = NULL;
	b->used = 0;
	if (t->heap)
		_nd_slab_dir_class(t, c, ((heap_t *)t->heap)->cur[c]);
	return o;
}

void _nd_slab_bw_flush_all(_nd_thread_t *t)
{
	for (unsigned c = 0; c < ND_SLAB_SIZED; c++)
		bw_send(bw_detach(t, c));
}

void *_nd_slab_bw_take(_nd_thread_t *t, unsigned c)
{
	_nd_slab_hot_t *b = _nd_thread_bw(t, c);
	if (b->free) {
		_nd_slab_dir_class(t, c, b);
		return _nd_slab_pop(b);
	}
	if (t->bwl[c].when) /* it went past its cap once (slab.c, bw_pace); a
			     * list never used stays unwritten (nd_thread.h) */
		t->bwl[c].dried = 1;
	if (t->cdir[c] == b) {
		slab_t *s = ((heap_t *)t->heap)->cur[c];
		/* the list served and ran dry: the heap's current slab of c
		 * (its own class's, on the lists' node) is flagged, so that
		 * t's frees into it come to the list too. Else a thread whose
		 * frees hit flagged and unflagged slabs of its own at random
		 * mispredicted the owner branch (wl_larson with 1 thread and 512
		 * slots, cachegrind: 0.97 mispredicts per pair) and switched
		 * dir[] to the list and back at every dry spell. At every
		 * such refill: the slab changes within a dry spell */
		if (s != &_nd_slab_empty && s->cls == c && (int32_t)s->node1 == t->bw_node1 &&
		    !(__atomic_load_n(&s->tp, __ATOMIC_RELAXED) & (ND_TP_MIX | ND_TP_SPAN)))
			__atomic_fetch_or(&s->tp, _nd_slab_tp_mix((int32_t)s->node1), __ATOMIC_RELAXED);
		ND_ASSERT(b->used == _nd_slab_bw_cap_of(t, c) + 1, "a list that served and ran dry is active and empty");
		if (t->bwl[c].dry++ < ND_SLAB_BW_DRY)
			return NULL; /* dir[] kept, the list active */
		t->bwl[c].dry = 0;
		b->used = 0; /* idle: the next push sets dir[] again */
		_nd_slab_dir_class(t, c, s);
		return NULL;
	}
	if (b->used) /* a list never used stays unwritten (nd_thread.h) */
		b->used = 0;
	if (t->cdir[c] != (_nd_slab_hot_t *)((heap_t *)t->heap)->cur[c]) {
		/* a lender's list served (heap.c, bw_lend) and ran dry */
		_nd_slab_dir_class(t, c, ((heap_t *)t->heap)->cur[c]);
	}
	return NULL;
}

/* ---- the exchange (_nd_meta_node_t's xfer[]) --------------------------------
 * Issue 11: past its cap a borrowed list sent each further free home, and
 * one object at a time (the buffer's entry of the class changed slab at
 * almost every such free: wl_xfree 2 made ~10,000 splices of 1-2 objects
 * for ~950 full chains), where it waited on its slab's remote list until
 * the owner's own lists ran dry; meanwhile another thread of the node
 * whose borrowed list and heap of the class were dry carved new memory.
 * Per class, homes piled up where the owners had no need, and peak RSS
 * grew with the run (wl_xfree 4: 0.5-1.2 MiB waiting on remote lists, for
 * 0.3 MiB in flight). So a list past its cap gives its newest half,
 * indexed (xfer_index), to its node's exchange slot of the class when
 * that is empty (one CAS), and a
 * thread whose list of the class runs dry takes it (one CAS) before its
 * own heap: tcmalloc's transfer cache passes such batches between thread
 * caches. The objects stay out for their slabs all the while, as on a
 * borrowed list (only such objects go in: the node's, borrowable). A
 * thread's exit sends the node's lists home, so that parked heaps can be
 * trimmed. Whoever swaps a slot gets the list it holds then (no ABA: the
 * whole value is compared, and a list is never changed in a slot). */
static inline uintptr_t *xfer_slot(int32_t node1, unsigned c)
{
	return _nd_meta_node[node1 - 1].xfer[c].slot;
}

/* The index of a list going into the exchange (k objects of class c from
 * head h): h's words 2.. name the objects after it, as many as fit in h
 * (up to k - 1; none in 16 B), so the taker prefetches them all at once
 * (_nd_slab_xfer_take). Its pops otherwise chased the links one line of
 * the other core at a time: in wl_xfree 4 a thread that only frees puts
 * what a thread that only mallocs takes, almost every malloc's object
 * (docs/malloc.md, "The exchange"). The put gives its newest half, so
 * that the walk to the half's end writes the index (the oldest half
 * cost a second walk, and the time it saved). A free object's words past
 * the marker and link are unused (calloc clears what it reuses). */
/* Every object on a list of class c holds c's size at least: its class's
 * (a twin's are as big) or a bigger class's it lent (heap.c, bw_lend_dry),
 * never a smaller one's, so the index stays inside its head. */
static inline uint32_t xfer_index_len(unsigned c, uint32_t k)
{
	uint32_t n = (uint32_t)(_nd_slab_class_size(c) / sizeof(void *)) - 2;
	return n < k - 1 ? n : k - 1;
}

/* Writes h's index and returns the list's k-th (last) object: one walk
 * that the put also needs to cut its half. own: NULL, or where to count
 * how many of the k are objects of the caller's own slabs (the put's
 * test, below: classes up to XFER_HOME_MAX only, as reading each
 * object's slab header is a load the other walks need not pay). Inlined,
 * as it was before it counted: out of line it sat outside the hot text
 * (src/hot_text.ld), wl_xfree 2's resident code 48 -> 108 KiB
 * (test_init_footprint). */
static inline __attribute__((always_inline)) void **xfer_index(void **h, uint32_t k, unsigned c, uint32_t *own)
{
	uintptr_t me = (uintptr_t)__builtin_thread_pointer();
	uint32_t m = 0;
	void **p = h;
	for (uint32_t j = 1, n = xfer_index_len(c, k);; j++) {
		if (own)
			m += (__atomic_load_n(&((slab_t *)p[ND_FO_MARK])->tp, __ATOMIC_RELAXED) & ~ND_TP_FLAGS) == me;
		if (j == k)
			break;
		p = p[ND_FO_LINK];
		if (j <= n)
			h[1 + j] = p;
	}
	if (own)
		*own = m;
	return p;
}

/* xmask: a class's bit is set by a put that finds it clear after its
 * CAS, and cleared by a take that finds every slot empty, which then
 * looks once more and sets it again if a put came meanwhile (sequentially
 * consistent on both sides: either the take sees the put's slot or the
 * put sees the cleared bit). The refills of a node that uses no exchange
 * (wl_prodcons) then pay one load, not K. */
static inline uint64_t *xfer_mask(int32_t node1)
{
	return &_nd_meta_node[node1 - 1].xmask;
}

/* After a put into class c's slots of node1's exchange. */
static inline void xfer_mark(int32_t node1, unsigned c)
{
	uint64_t *m = xfer_mask(node1), bit = (uint64_t)1 << c;
	if (!(__atomic_load_n(m, __ATOMIC_SEQ_CST) & bit))
		__atomic_fetch_or(m, bit, __ATOMIC_SEQ_CST);
}

/* An occupied slot of x (class c's), or NULL. */
static inline uintptr_t *xfer_full(uintptr_t *x)
{
	for (unsigned i = 0; i < ND_XFER_K; i++)
		if (__atomic_load_n(&x[i], __ATOMIC_SEQ_CST))
			return &x[i];
	return NULL;
}

/* A half of a class up to XFER_HOME_MAX of which more than 1/XFER_OWN
 * are the putting thread's own objects goes home instead (task
 * handoff28): its own ones back onto their slabs (bw_send), any others
 * spliced home per slab run. A thread that frees mostly what it
 * allocated (its slabs flagged because another thread borrowed one of
 * their objects, so its own frees come to its lists too) put its own
 * working set into the exchange, the node's other threads took it, and
 * the objects of one slab circulated among all of them, each malloc and
 * free on a line another core wrote (objects of a line or less share
 * their lines): bench handoff (4 threads, 90% of the frees their own,
 * 7 in 8 of 1..64 B) at 2.5x mimalloc's time. A list of other threads'
 * objects (a thread that only frees, wl_xfree) still goes into the
 * exchange. XFER_OWN 4 (a quarter): 2, 8 and any own object measured
 * alike on handoff, xfree4 and larson. Every class (no XFER_HOME_MAX):
 * bench larsonbig 2x the time and peak RSS (its threads' surplus of
 * 2-16 KiB objects, which the exchange passed to the thread short of
 * them, stayed on their owners' slabs while the other carved); up to
 * 256 B: handoff as fast as up to 64 B. */
#define XFER_OWN 4
#define XFER_HOME_MAX 64

bool _nd_slab_xfer_put(_nd_thread_t *t, unsigned c, uint32_t cap)
{
	ND_ASSERT(t->bw_node1 > 0, "a thread with a borrowed list has a node heap");
	uintptr_t *x = xfer_slot(t->bw_node1, c), z = 0;
	for (unsigned i = 0; __atomic_load_n(x, __ATOMIC_RELAXED); x++)
		if (++i == ND_XFER_K)
			return false;
	_nd_slab_hot_t *b = _nd_thread_bw(t, c);
	/* the newest k go (the list is newest first), indexed by the walk
	 * that finds their end (xfer_index); the oldest len - k stay */
	uint32_t len = _nd_slab_bw_len(b, cap), k = len / 2, own = 0;
	ND_ASSERT(k >= 1, "a list past its cap has two halves");
	bool small = _nd_slab_class_size(c) <= XFER_HOME_MAX;
	void **h = b->free, **last = xfer_index(h, k, c, small ? &own : NULL);
	void **rest = last[ND_FO_LINK];
	last[ND_FO_LINK] = NULL;
	if (small && own * XFER_OWN > k) { /* a working set's churn: home */
		b->free = rest;
		b->used += k;
		bw_send(h);
		return true;
	}
	if (!__atomic_compare_exchange_n(x, &z, (uintptr_t)k << TF_CNT_SHIFT | (uintptr_t)h, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_RELAXED)) {
		last[ND_FO_LINK] = rest;
		return false;
	}
	b->free = rest;
	b->used += k;
	xfer_mark(t->bw_node1, c);
	return true;
}

void *_nd_slab_xfer_take(_nd_thread_t *t, unsigned c)
{
	ND_ASSERT(t->bw_node1 > 0, "_nd_slab_xfer_maybe checked the node");
	uint64_t *m = xfer_mask(t->bw_node1), bit = (uint64_t)1 << c;
	uintptr_t *x = xfer_full(xfer_slot(t->bw_node1, c)), v;
	if (!x) {
		__atomic_fetch_and(m, ~bit, __ATOMIC_SEQ_CST);
		if (xfer_full(xfer_slot(t->bw_node1, c)))
			__atomic_fetch_or(m, bit, __ATOMIC_SEQ_CST);
		return NULL;
	}
	v = __atomic_load_n(x, __ATOMIC_RELAXED);
	if (!v || !__atomic_compare_exchange_n(x, &v, 0, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return NULL;
	void **h = (void **)(v & TF_PTR);
	uint32_t k = (uint32_t)(v >> TF_CNT_SHIFT);
	/* the indexed objects' lines come to this core together (xfer_index) */
	for (uint32_t i = 0, n = xfer_index_len(c, k); i < n; i++)
		__builtin_prefetch(h[2 + i], 1, 3);
	_nd_slab_hot_t *b = _nd_thread_bw(t, c);
	b->free = h;
	/* _nd_slab_bw_len's inverse (a list longer than t's cap leaves used
	 * <= 0: its next push passes half on) */
	b->used = _nd_slab_bw_cap_start(t, c) + 1 - k;
	return _nd_slab_bw_take(t, c);
}

/* The lists of classes m in node1's exchange go home. */
static void xfer_drain_node(int32_t node1, uint64_t m)
{
	for (; m; m &= m - 1) {
		uintptr_t *x = xfer_slot(node1, (unsigned)__builtin_ctzll(m));
		for (unsigned i = 0; i < ND_XFER_K; i++)
			if (__atomic_load_n(&x[i], __ATOMIC_RELAXED))
				bw_send((void **)(__atomic_exchange_n(&x[i], 0, __ATOMIC_ACQUIRE) & TF_PTR));
	}
}

/* The exchange of t's node goes home (a thread's exit, fork, tests): the
 * classes of xmask (a list put this moment may wait for the next). */
static void xfer_drain(const _nd_thread_t *t)
{
	if (t->bw_node1 > 0)
		xfer_drain_node(t->bw_node1, __atomic_load_n(xfer_mask(t->bw_node1), __ATOMIC_SEQ_CST));
}

/* Fork's child (one thread): other threads put lists until the fork, of
 * objects of their slabs, whose owners are gone here and whose thread
 * pointers a child thread may get (glibc hands it their stacks): taken,
 * its frees would take the owner's path on their heaps. Every node's
 * lists go home now, whatever xmask says (a put may not have set it). */
void _nd_slab_xfer_fork_child(void)
{
	int n = _nd_meta_nodes_used();
	for (int32_t n1 = 1; n1 <= n; n1++) {
		xfer_drain_node(n1, ((uint64_t)1 << ND_SLAB_SIZED) - 1);
		__atomic_store_n(xfer_mask(n1), 0, __ATOMIC_RELAXED);
	}
}

/* ---- a thread's exit: the node keeps the objects of live threads --------
 * An exiting thread's borrowed lists and its node's exchange hold objects
 * of other threads' slabs. All sent home, those of a live thread that
 * does not allocate (a main thread waiting in pthread_join, wl_larson's
 * prefill) waited on its slabs' remote lists for good, and each round's
 * threads carved new slabs: wl_larson 2 8 500000's slabs grew round by
 * round while the main thread's 355 held 11,643 objects freed and 4,738
 * live (peak RSS 18.4 MiB, tcmalloc 18.2). So an exit keeps on the node
 * the objects of slabs that another live thread owns: each list's (up to
 * the class's cap) go into an empty slot of the exchange, where the
 * node's next threads take them; those of the exiting thread's own slabs
 * and of parked heaps (stamp 0) go home, so that their slabs can be
 * trimmed, as all did before. */

/* Splits list o: objects of slabs a live thread other than me owns go to
 * *keep (at most cap; count in *nk), the rest to *home. */
static void split_live(void **o, uintptr_t me, uint32_t cap, void ***keep, uint32_t *nk, void ***home)
{
	for (void **nx; o; o = nx) {
		nx = o[ND_FO_LINK];
		uintptr_t tp = __atomic_load_n(&((slab_t *)o[ND_FO_MARK])->tp, __ATOMIC_RELAXED) & ~ND_TP_FLAGS;
		void ***to = tp && tp != me && *nk < cap ? keep : home;
		*nk += to == keep;
		o[ND_FO_LINK] = *to;
		*to = o;
	}
}

/* keep (n objects of class c) into an empty slot of node1's exchange,
 * else home. */
static void xfer_keep(int32_t node1, unsigned c, void **keep, uint32_t n)
{
	uintptr_t *x = xfer_slot(node1, c);
	if (keep)
		xfer_index(keep, n, c, NULL); /* no count: split_live kept others' only */
	for (unsigned i = 0; keep && i < ND_XFER_K; i++) {
		uintptr_t z = 0;
		if (__atomic_compare_exchange_n(&x[i], &z, (uintptr_t)n << TF_CNT_SHIFT | (uintptr_t)keep, false,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
			xfer_mark(node1, c);
			return;
		}
	}
	bw_send(keep);
}

/* Splits list o of class c (see above): the kept part into the exchange,
 * the rest home. */
static void exit_list(int32_t node1, unsigned c, void **o)
{
	void **keep = NULL, **home = NULL;
	uint32_t nk = 0;
	split_live(o, (uintptr_t)__builtin_thread_pointer(), _nd_slab_bw_cap(c), &keep, &nk, &home);
	bw_send(home);
	xfer_keep(node1, c, keep, nk);
}

/* t's exit: the lists of its node's exchange (the classes of xmask: a
 * list put this moment stays as it is), then its borrowed lists. */
static void exit_keep(_nd_thread_t *t)
{
	int32_t n1 = t->bw_node1;
	if (n1 <= 0)
		return;
	uint64_t m = __atomic_load_n(xfer_mask(n1), __ATOMIC_SEQ_CST);
	for (unsigned c = 0; c < ND_SLAB_SIZED; c++) {
		uintptr_t *x = xfer_slot(n1, c);
		for (unsigned i = 0; (m >> c & 1) && i < ND_XFER_K; i++)
			if (__atomic_load_n(&x[i], __ATOMIC_RELAXED))
				exit_list(n1, c, (void **)(__atomic_exchange_n(&x[i], 0, __ATOMIC_ACQUIRE) & TF_PTR));
		void **o = bw_detach(t, c);
		if (o)
			exit_list(n1, c, o);
	}
}

void _nd_slab_thread_done(_nd_thread_t *t)
{
	exit_keep(t);
	_nd_slab_bw_flush_all(t);
	t->bw_node1 = 0; /* frees until the record is gone send at once */
	t->bw_key = ND_BW_KEY_NONE;
	_nd_slab_rf_flush_all(t);
	/* only the counters that moved: a thread that never freed into
	 * another's slab leaves the record's second page untouched
	 * (nd_thread.h) */
	for (unsigned c = 0; c < ND_SLAB_SIZED; c++) {
		if (t->cls_remote[c].n) {
			__atomic_fetch_add(&gone_remote[c], t->cls_remote[c].n, __ATOMIC_RELAXED);
			__atomic_store_n(&t->cls_remote[c].n, 0, __ATOMIC_RELAXED);
		}
		if (t->cls_remote[c].refill) {
			__atomic_fetch_add(&gone_refill[c], t->cls_remote[c].refill, __ATOMIC_RELAXED);
			__atomic_store_n(&t->cls_remote[c].refill, 0, __ATOMIC_RELAXED);
		}
		if (t->cls_sent[c]) {
			__atomic_fetch_add(&gone_remote[c], t->cls_sent[c], __ATOMIC_RELAXED);
			__atomic_store_n(&t->cls_sent[c], 0, __ATOMIC_RELAXED);
		}
		if (t->cls_refill[c]) {
			__atomic_fetch_add(&gone_refill[c], t->cls_refill[c], __ATOMIC_RELAXED);
			__atomic_store_n(&t->cls_refill[c], 0, __ATOMIC_RELAXED);
		}
	}
}

/* ---- per-class statistics (issue 13) ---------------------------------------
 * Read from the slab headers (meta.c keeps every header ever made) and the
 * thread records' counters: nothing on the fast paths. The owners' fields
 * are read with relaxed loads while they change: a snapshot, exact when
 * the process is quiet. */
static void stats_slab(const slab_t *s, void *arg)
{
	_nd_slab_class_stats_t *out = arg;
	if (!__atomic_load_n(&s->heap, __ATOMIC_RELAXED))
		return; /* released */
	_nd_slab_class_stats_t *e = &out[__atomic_load_n(&s->cls, __ATOMIC_RELAXED)];
	e->slabs++;
	/* without the units the slab purge gave back and the objects lost
	 * with them (slab_purge.c) */
	uint64_t gone = __atomic_load_n(&s->gone, __ATOMIC_RELAXED);
	uint32_t npages = __atomic_load_n(&s->npages, __ATOMIC_RELAXED), ngone = (uint32_t)__builtin_popcountll(gone);
	/* a header being reused can show its fields from different moments:
	 * no wrap-around (the figures are exact when the process is quiet) */
	e->slab_bytes += (uint64_t)(npages > ngone ? npages - ngone : 0) << ND_PAGE_SHIFT;
	uint32_t cap = __atomic_load_n(&s->cap, __ATOMIC_RELAXED), lost = __atomic_load_n(&s->lost, __ATOMIC_RELAXED);
	e->capacity += cap > lost ? cap - lost : 0;
	/* a span is one object of k slots (used counts slots); extra read
	 * before the owner ended a span and used after can exceed the count:
	 * no wrap-around, as above (audit9) */
	const _nd_span_map_t *m = __atomic_load_n(&s->spans, __ATOMIC_ACQUIRE);
	uint32_t extra = m ? __atomic_load_n(&m->extra, __ATOMIC_RELAXED) : 0;
	uint32_t slots = (uint32_t)(__atomic_load_n(&s->used, __ATOMIC_RELAXED) + __atomic_load_n(&s->fbias, __ATOMIC_RELAXED));
	e->objects += slots > extra ? slots - extra : 0;
}

static void stats_thread(_nd_thread_t *t, void *arg)
{
	_nd_slab_class_stats_t *out = arg;
	for (unsigned c = 0; c < ND_SLAB_SIZED; c++) {
		out[c].remote_frees += __atomic_load_n(&t->cls_remote[c].n, __ATOMIC_RELAXED) +
				       __atomic_load_n(&t->cls_sent[c], __ATOMIC_RELAXED);
		out[c].refills += __atomic_load_n(&t->cls_remote[c].refill, __ATOMIC_RELAXED) +
				  __atomic_load_n(&t->cls_refill[c], __ATOMIC_RELAXED);
	}
}

/* The headers' part: every class's size, slabs, bytes, capacity, objects. */
void _nd_slab_class_usage(_nd_slab_class_stats_t *all)
{
	memset(all, 0, ND_SLAB_CLASSES * sizeof *all);
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++)
		all[c].size = _nd_slab_class_size(c);
	_nd_meta_hdr_each(stats_slab, all);
}

int _nd_slab_class_stats(_nd_slab_class_stats_t *out, int n)
{
	_nd_slab_class_stats_t all[ND_SLAB_CLASSES];
	_nd_slab_class_usage(all);
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		all[c].remote_frees = __atomic_load_n(&gone_remote[c], __ATOMIC_RELAXED);
		all[c].refills = __atomic_load_n(&gone_refill[c], __ATOMIC_RELAXED);
	}
	_nd_thread_each(stats_thread, all);
	if (n > ND_SLAB_CLASSES)
		n = ND_SLAB_CLASSES;
	if (n > 0)
		memcpy(out, all, (size_t)n * sizeof all[0]);
	return n > 0 ? n : 0;
}

void _nd_slab_flush_remote(void)
{
	_nd_thread_t *t = _nd_tls;
	if (!_nd_thread_none(t)) {
		xfer_drain(t);
		_nd_slab_bw_flush_all(t);
		_nd_slab_rf_flush_all(t);
	}
}

unsigned _nd_slab_remote_pending(void)
{
	_nd_thread_t *t = _nd_tls;
	unsigned n = 0;
	for (unsigned c = 0; c < ND_SLAB_SIZED; c++) {
		n += t->rf[c].slab ? t->rf[c].n : 0;
		for (void **o = _nd_thread_bw(t, c)->free; o; o = o[ND_FO_LINK])
			n++;
	}
	return n;
}

uint64_t _nd_slab_remote_sent(void) { return _nd_tls->rf_sent; }

unsigned _nd_slab_xfer_count(int node)
{
	unsigned n = 0;
	for (unsigned c = 0; c < ND_SLAB_SIZED; c++)
		for (unsigned i = 0; i < ND_XFER_K; i++)
			n += (unsigned)(__atomic_load_n(&xfer_slot(node + 1, c)[i], __ATOMIC_RELAXED) >> TF_CNT_SHIFT);
	return n;
}
