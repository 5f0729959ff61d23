// SPDX-License-Identifier: MIT
/*
 * Slabs (docs/malloc.md): size classes, the slab itself (carving, the
 * free-list protocol, the owner's partial and full lists) and every free;
 * slab_remote.c has the slow half of remote frees. heap.c (above) decides which heap and slab an
 * allocation uses; meta.c (below) holds the headers and the slab map.
 *
 * Shapes:
 *  - A slab is one page run of the page level holding objects of one size
 *    class. Its header lives out of line (metadata pages of the slab's
 *    node), so objects start page-aligned (coloured classes: 64 B times a
 *    colour further, colour_of) and a power-of-two class is naturally
 *    aligned to its size. Every page descriptor of the run has
 *    use = ND_USE_SLAB and user = the header: free() finds the slab in O(1).
 *  - A free by the owning thread pushes onto the slab's private free list.
 *    Any other thread chains the object in its record's remote-free buffer
 *    (per class, one slab at a time) and sends the chain home in one CAS
 *    onto the slab's atomic tfree list; the owner collects tfree in one
 *    exchange when its free list runs dry. A full slab is parked with a
 *    NOTIFY bit in tfree: the first remote splice clears it and sets the
 *    class's bit in the heap's notify mask, so the owner looks at its full
 *    slabs only when one got memory back.
 *
 * Ownership: a slab's private fields (free, used, carved, next/prev,
 * fbias) belong to its heap's owner thread, or to whoever took a parked
 * heap out of its pool (internal.h, _nd_slab_t). Other threads touch only
 * tfree (CAS) and the heap's notify mask (atomic OR). No lock on either
 * fast path.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

/* ---- size classes -------------------------------------------------------
 * 16..128 by 16, 160..512 by 32, 576..1024 by 64 (8 per doubling: at most
 * 1/9 of an object lost, where 4 per doubling lost up to 1/5: bench
 * wl_footprint's refill of 32..1024 B rounded up 12.5 MiB of its 159), then
 * 4 classes per power of two up to 32 KiB, sorted (ND_SLAB_SIZED); then
 * twins of 8192 and 16384 that are not coloured, for alignments above 64
 * (cls_al; no size maps to them, and nothing that walks the classes by
 * size goes past ND_SLAB_SIZED). Every class is a multiple of 16
 * (malloc's alignment); a class 2^k that is not coloured is 2^k-aligned. */
static const uint32_t cls_size[ND_SLAB_CLASSES] = {
	16, 32, 48, 64, 80, 96, 112, 128,
	160, 192, 224, 256, 288, 320, 352, 384, 416, 448, 480, 512,
	576, 640, 704, 768, 832, 896, 960, 1024,
	1152, 1280, 1536, 1792, 2048,
	2560, 3072, 3584, 4096, 4608, 5120, 6144, 7168, 8192,
	10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768,
	8192, 16384, /* the aligned twins */
};
_Static_assert(ND_SLAB_CLASSES == ND_SLAB_SIZED + 2, "cls_size: the classes by size, then the twins");
/* class of size = cls_tab[(size + 15) >> 4] (2 KiB: one load, no branch;
 * malloc.c's placement fast paths read it too) */
uint8_t _nd_slab_cls_tab[ND_SLAB_MAX / 16 + 1];
#define cls_tab _nd_slab_cls_tab
static uint8_t cls_pages[ND_SLAB_CLASSES];  /* slab run length (power of two) */
static uint16_t cls_cap[ND_SLAB_CLASSES];   /* objects per slab */
static uint64_t cls_mul[ND_SLAB_CLASSES];   /* inverse of the odd part << (15 - tz) */
static uint32_t cls_bw[ND_SLAB_CLASSES];    /* objects a borrowed list keeps at most (bw_pushed) */
static bool cls_few[ND_SLAB_CLASSES];      /* few objects a slab: refills may flag slabs (few_mix) */
uint8_t _nd_slab_cls_bw0[ND_SLAB_CLASSES];  /* a list's first cap (nd_slab.h) */
static uint8_t cls_dlo[ND_SLAB_CLASSES];    /* first dir[] entry of the class (_nd_slab_dir_class) */
static uint8_t cls_dn[ND_SLAB_CLASSES];     /* its dir[] entries: 0 (above ND_SLAB_DIR_MAX), 1, 2, 4, 8 */
uint8_t _nd_slab_cls_lend[ND_SLAB_CLASSES];
#define cls_lend _nd_slab_cls_lend
uint8_t _nd_slab_cls_al[ND_SLAB_CLASSES];
#define cls_al _nd_slab_cls_al
uint8_t _nd_slab_cls_tc[ND_SLAB_CLASSES];
#define cls_tc _nd_slab_cls_tc
static uint8_t cls_col[ND_SLAB_CLASSES];    /* colours of its slabs (0, 2..): see colour_of */

/* Classes up to SLAB_BIG_MAX bytes get slabs of SLAB_BIG_OBJS objects;
 * the multiples of 64 up to SLAB_A64_MAX, SLAB_A64_OBJS (_nd_slab_init). */
#define SLAB_BIG_MAX 1024u
#define SLAB_BIG_OBJS 32u
#define SLAB_A64_MAX 256u
#define SLAB_A64_OBJS 256u
/* Classes above SLAB_BIG_MAX up to TAIL_MAX double their slab (once) if
 * its last page would keep more than 1/TAIL_FRAC of it unused. */
#define TAIL_MAX 2048u
#define TAIL_FRAC 32u

static inline unsigned class_of(size_t size)
{
	return cls_tab[(size + 15) >> 4];
}

unsigned _nd_slab_class_of(size_t size) { return class_of(size); }
size_t _nd_slab_class_size(unsigned c) { return c < ND_SLAB_CLASSES ? cls_size[c] : 0; }

/* A full slab goes back to the partial list after FULL_BACK(cap) owner
 * frees (or at once when the heap would otherwise take a new slab and it
 * is among the 16 most recently parked: heap.c, full_best), so that it
 * comes back with room, not with one object: while it is on the full list
 * used is lowered by fbias, and the free path's "used <= 0" test fires
 * after those frees. A quarter, not a half: under random frees at a
 * constant live count (a cache at its limit) the slabs beyond those 16
 * sit between cap - FULL_BACK and cap in use, 88% on average (half: 72%,
 * test_slab_steady). */
#define FULL_BACK(cap) ((uint32_t)(cap) / 4) /* every class has 7 objects or more (_nd_slab_init) */

typedef _nd_slab_t slab_t;
typedef _nd_heap_t heap_t;
#define NOTIFY ND_TF_NOTIFY
#define TF_PTR ND_TF_PTR
#define TF_CNT_SHIFT ND_TF_CNT_SHIFT
#define check_link _nd_slab_check_link

_nd_slab_t _nd_slab_empty; /* free == NULL: the fast path falls through */
bool _nd_slab_check;       /* NODALLOC_CHECK=1 */

/* ---- the direct table ---------------------------------------------------- */

/* t->dir (sizes up to ND_SLAB_DIR_MAX) and t->cdir (every class) mirror
 * t->heap's current slab, or the class's borrowed list while it holds
 * objects, or a bigger class's list that lends to it (heap.c, bw_lend):
 * every write of a heap's cur[] goes through set_cur. Owner only. */
void _nd_slab_dir_class(_nd_thread_t *t, unsigned c, void *s)
{
	_nd_slab_hot_t *v = (_nd_slab_hot_t *)s;
	t->cdir[c] = v;
	/* sizes cls_size[c - 1] + 1 .. cls_size[c]: entries from cls_dlo[c],
	 * 1, 2, 4 or 8 of them (straight stores: the borrowed lists switch a
	 * class's entries often) */
	_nd_slab_hot_t **d = &t->dir[cls_dlo[c]];
	switch (cls_dn[c]) {
	case 8:
		d[7] = v, d[6] = v, d[5] = v, d[4] = v;
		/* fall through */
	case 4:
		d[3] = v, d[2] = v;
		/* fall through */
	case 2:
		d[1] = v;
		/* fall through */
	case 1:
		d[0] = v;
		/* fall through */
	default: /* 0: a class above ND_SLAB_DIR_MAX */
		break;
	}
}

static inline void set_cur(heap_t *h, unsigned c, slab_t *s)
{
	ND_ASSERT(!h->owner || h->owner == _nd_tls, "only h's owner (or who took it out of its pool) changes its lists");
	h->cur[c] = s;
	_nd_thread_t *o = h->owner; /* the caller owns h: no race on it */
	if (o && o->heap == h && c < ND_SLAB_SIZED) /* a twin has no dir[] (no size maps to it) */
		_nd_slab_dir_class(o, c, s);
}

/* The node whose objects t's borrowed lists may keep while h is its heap:
 * a node heap's (its allocations want exactly that node; a slab there is
 * what a refill would take first); none for a policy heap or in check
 * mode. */
static int32_t bw_node1_of(const heap_t *h)
{
	if (_nd_slab_check || !h || h->pol || h->node < 0 || h->node >= ND_MAX_NODES)
		return 0;
	return h->node + 1;
}

void _nd_slab_set_heap(_nd_thread_t *t, heap_t *h)
{
	int32_t n1 = bw_node1_of(h);
	if (n1 != t->bw_node1) { /* borrowed objects of another node go home */
		_nd_slab_bw_flush_all(t);
		t->bw_node1 = n1;
		t->bw_key = _nd_slab_bw_key(n1);
	}
	t->heap = h;
	for (unsigned c = 0; c < ND_SLAB_SIZED; c++) {
		_nd_slab_hot_t *b = _nd_thread_bw(t, c);
		if (!b->free && b->used)
			b->used = 0; /* idle (nd_thread.h; a list never used stays
				      * unwritten: the record's second page) */
		_nd_slab_dir_class(t, c, b->free ? b : (_nd_slab_hot_t *)h->cur[c]);
	}
}

uint32_t _nd_slab_bw_cap(unsigned c) { return cls_bw[c]; }

/* The cap changes here with used as it is: callers set used from the
 * result (an idle list's first push, a list from the exchange), as
 * bw_set_cap does for a list that holds objects. */
uint32_t _nd_slab_bw_cap_start(_nd_thread_t *t, unsigned c)
{
	if (!t->bwl[c].cap) {
		uint8_t h = __atomic_load_n(&_nd_meta_node[t->bw_node1 - 1].bwcap[c], __ATOMIC_RELAXED);
		if (h > _nd_slab_cls_bw0[c])
			t->bwl[c].cap = h;
	}
	return _nd_slab_bw_cap_of(t, c);
}

/* ---- slabs --------------------------------------------------------------- */

/* A free object carries its slab header address in word 0 (malloc clears
 * it): programs never see header addresses, so finding it on free means
 * the object is free already. */
static inline void *marker(const slab_t *s) { return (void *)s; }

/* ---- check mode's out bits (nd_slab.h, _nd_slab_out_bits) ---- */

_Static_assert(ND_SLAB_OUT_BITS % 64 == 0, "out bits in whole words");

static inline uint64_t out_bit(const slab_t *s, const void *o, uint64_t **w)
{
	uint32_t i = (uint32_t)_nd_slab_index((const _nd_slab_hot_t *)s, o);
	ND_ASSERT(i < __atomic_load_n(&s->carved, __ATOMIC_RELAXED) && i < ND_SLAB_OUT_BITS, "an out bit of a carved object");
	*w = &_nd_slab_out_bits((slab_t *)(uintptr_t)s)[i / 64];
	return (uint64_t)1 << (i % 64);
}

void _nd_slab_out_set(slab_t *s, const void *o)
{
	uint64_t *w, b = out_bit(s, o, &w);
	uint64_t old = __atomic_fetch_or(w, b, __ATOMIC_RELAXED);
	ND_ASSERT(!(old & b), "a listed object is not out");
	(void)old;
}

/* A free of o: true if it was out (its bit is now clear), false if not
 * (free already, or carved and never handed out): a double free. */
static bool out_free(slab_t *s, const void *o)
{
	uint64_t *w, b = out_bit(s, o, &w);
	return __atomic_fetch_and(w, ~b, __ATOMIC_RELAXED) & b;
}

/* A new slab (its header may come from a public heap's destroy, which
 * drops slabs with objects out): nothing out. */
static __attribute__((noinline, cold)) void out_clear(slab_t *s)
{
	uint64_t *w = _nd_slab_out_bits(s);
	for (unsigned i = 0; i < ND_SLAB_OUT_BITS / 64; i++)
		__atomic_store_n(&w[i], 0, __ATOMIC_RELAXED);
}

/* Debug builds: no object of s is out (a released slab). Release builds
 * only type-check ND_ASSERT's condition: unused there. */
static inline __attribute__((unused)) bool out_none(slab_t *s)
{
	if (!_nd_slab_check)
		return true;
	const uint64_t *w = _nd_slab_out_bits(s);
	for (unsigned i = 0; i < ND_SLAB_OUT_BITS / 64; i++)
		if (__atomic_load_n(&w[i], __ATOMIC_RELAXED))
			return false;
	return true;
}

/* A free object's marker (word 0) is not its slab's, or its link (word 1)
 * not NULL nor a carved object of its slab (nd_slab.h,
 * _nd_slab_check_link): reported by name. */
void _nd_slab_corrupt_link(const slab_t *s, void *const *o, const char *fn)
{
	_nd_msg_fatal("%s(): corrupted free list in the slab of %u-byte objects at %p: free object %p links to %p, "
		      "marker %p (heap overflow into a free object, or a write after free)",
		      fn, s->size, (void *)s->start, (const void *)o, o[ND_FO_LINK], o[ND_FO_MARK]);
}

/* Every heap of a thread stamps its slabs with the thread pointer (and
 * ND_TP_SPAN while a slab holds a span). */
static inline bool is_owner(const slab_t *s)
{
	return _nd_slab_owns(__atomic_load_n(&s->tp, __ATOMIC_RELAXED));
}

#define UNIT_PAGES ((uint32_t)1 << (ND_SLAB_UNIT_SHIFT - ND_PAGE_SHIFT))

/* Colouring (the kernel's SLAB colour; docs/malloc.md, "Colouring"): a
 * slab of a class in (COL_MIN, COL_MAX] starts its objects 64 B times a
 * colour into its run, colours 0..slack/64 (the run's unused end) picked
 * by the run's address: no shared counter, and neighbouring runs differ.
 * The powers of two from COL_POW2 (8192, 16384) hold one object fewer (7)
 * for a slack of one object; 2048 and 4096 keep 8 and their alignment
 * (2048's slabs are lent to 1024 B, _nd_slab_lend; page-aligned 4 KiB
 * blocks stay slab objects). Page-aligned starts put the first lines of
 * such objects in 1/8..1/64 of the cache sets (wl_larson 2 8 50000 4096
 * 2000 16000 2, cachegrind, 1 MiB 16-way L2: misses 704k -> 220k, the
 * powers of two too 33k). Their objects are 64-aligned only: an alignment
 * above 64 takes 4096 for 2049..4096 B and the uncoloured twin of 8192 or
 * 16384 for 4097..16384 B (_nd_slab_class_for, _nd_slab_cls_al): page
 * runs took 200-500 ns a pair there. s->start is the first object;
 * the run starts at _nd_slab_run(s) (runs are aligned to their size).
 * _nd_slab_nocolour: tests that need an uncoloured slab's layout. */
#define COL_MIN 2048u
#define COL_MAX 16384u
#define COL_POW2 8192u
bool _nd_slab_nocolour;
static inline size_t colour_of(unsigned c, const char *run)
{
	if (!cls_col[c] || _nd_slab_nocolour)
		return 0;
	return (size_t)(((uintptr_t)run >> (__builtin_ctz(cls_pages[c]) + ND_PAGE_SHIFT)) % cls_col[c]) << 6;
}

/* Map entries of s's units in pages [from, to) name slab (s or NULL),
 * with slab's mul. */
static void set_map(const slab_t *s, uint32_t from, uint32_t to, const slab_t *slab)
{
	for (uint32_t i = ND_ALIGN_UP(from, UNIT_PAGES); i < to; i += UNIT_PAGES)
		_nd_meta_map_set(_nd_slab_run(s) + ((size_t)i << ND_PAGE_SHIFT), slab);
}

/* Pages [from, to) of s: descriptors and slab map entries name s (use
 * ND_USE_SLAB) or nothing. */
static inline void set_slab_pages(slab_t *s, uint32_t from, uint32_t to, uint8_t use)
{
	uintptr_t user = use == ND_USE_SLAB ? (uintptr_t)s : 0;
	for (uint32_t i = from; i < to; i++) {
		_nd_pagedesc_t *d = _nd_page_desc(_nd_slab_run(s) + ((size_t)i << ND_PAGE_SHIFT));
		if (d) {
			d->use = use;
			d->user = user;
		}
	}
	set_map(s, from, to, use == ND_USE_SLAB ? s : NULL);
}

/* slab_purge.c's (not inlined into the paths every process runs:
 * src/hot_text.ld) */
void _nd_slab_set_pages(slab_t *s, uint32_t from, uint32_t to, uint8_t use)
{
	set_slab_pages(s, from, to, use);
}

/* inlined, as before bwo: its two callers are in src/hot_text.ld */
static inline __attribute__((always_inline)) void set_class(slab_t *s, unsigned c)
{
	s->size = cls_size[c];
	s->mul = cls_mul[c];
	__atomic_store_n(&s->cap, cls_cap[c], __ATOMIC_RELAXED); /* statistics read cls, cap */
	__atomic_store_n(&s->cls, (uint8_t)c, __ATOMIC_RELAXED);
	s->bwo = (uint16_t)(cls_tc[c] << 4);
	s->lcls = (uint8_t)c;
}

/* A new slab of class c for heap h: a run under pol wanting h's node.
 * Two threads of a node that take slab runs in turn got them from the
 * buddy's same blocks, one thread's run next to the other's, and two
 * cores writing neighbouring runs at once slow each other down (bench
 * batch2: 1.3x mimalloc's time; docs/malloc.md "Threads"). So once
 * another heap of the node made a new slab between two of h's NEAR_TURNS
 * times, h's runs go next to its own (_nd_page_alloc_near). Not at the
 * first turn: a process whose threads barely take slabs in turn (bench
 * wl_xfree 2) never runs that code, which is not in the part of .text
 * every process touches (test_init_footprint). last_new is written only
 * when the heap making the node's slabs changes (a thread's steady state
 * reuses its kept slabs: none made). */
#define NEAR_TURNS 4u
slab_t *_nd_slab_new(heap_t *h, unsigned c, const nd_policy_t *pol)
{
	int got = -1;
	if (h->node >= 0 && h->node < ND_MAX_NODES) {
		_nd_heap_t **last = &_nd_meta_node[h->node].last_new, *l = __atomic_load_n(last, __ATOMIC_RELAXED);
		if (l != h) {
			h->rnear += h->rnear < NEAR_TURNS && l && h->rnext;
			__atomic_store_n(last, h, __ATOMIC_RELAXED);
		}
	}
	/* aligned to its size (the buddy's blocks are anyway): whole map units */
	char *p = nd_unlikely(h->rnear >= NEAR_TURNS) ? _nd_page_alloc_near(cls_pages[c], pol, h->node, &got, &h->rnext)
						      : _nd_page_alloc(cls_pages[c], cls_pages[c], pol, h->node, &got);
	if (!p)
		return NULL;
	h->rnext = p + ((size_t)cls_pages[c] << ND_PAGE_SHIFT);
	ND_ASSERT(!((uintptr_t)p & (((uintptr_t)cls_pages[c] << ND_PAGE_SHIFT) - 1)), "a slab run is aligned to its size");
	if (got < 0)
		got = _nd_page_node_of(p);
	_nd_meta_map_ensure();
	int mnode = got >= 0 && got < ND_MAX_NODES ? got : 0;
	slab_t *s = _nd_meta_hdr_get(mnode);
	if (!s) {
		_nd_page_free(p);
		errno = ENOMEM;
		return NULL;
	}
	/* every field but all_next (meta.c's list), one by one, not memset:
	 * statistics walk the headers lock-free and may still read this one
	 * (they saw its old heap), so the fields they read (nd_slab.h) are
	 * relaxed stores */
	s->free = NULL;
	__atomic_store_n(&s->used, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->carved, 0, __ATOMIC_RELAXED);
	s->pfree = 0;
	__atomic_store_n(&s->fbias, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->lost, 0, __ATOMIC_RELAXED);
	s->next = s->prev = NULL;
	s->purged = 0;
	s->pstr = 0;
	__atomic_store_n(&s->gone, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->tfree, 0, __ATOMIC_RELAXED);
	s->hnext = NULL;
	ND_ASSERT(!s->spans || !s->spans->n, "a released header holds no span");
	s->spseen = 0;
	s->start = p + colour_of(c, p);
	set_class(s, c);
	s->chk = _nd_slab_chk(s->start, s->mul, 0); /* nothing carved: the map may point here now */
	if (nd_unlikely(_nd_slab_check))
		out_clear(s);
	__atomic_store_n(&s->heap, h, __ATOMIC_RELAXED);
	s->node = got;
	s->node1 = got >= 0 && got < ND_MAX_NODES ? (uint16_t)(got + 1) : ND_SLAB_NODE1_NONE;
	__atomic_store_n(&s->npages, cls_pages[c], __ATOMIC_RELAXED); /* statistics read it */
	__atomic_store_n(&s->tp, _nd_slab_my_tp(), __ATOMIC_RELAXED); /* heap_alloc runs on h's owner */
	set_slab_pages(s, 0, s->npages, ND_USE_SLAB);
	return s;
}

/* A released slab's span map (nd_slab.h): every span gone. */
static __attribute__((noinline)) void span_clear(_nd_span_map_t *m)
{
	for (unsigned w = 0; w < ND_SPAN_WORDS; w++) {
		__atomic_store_n(&m->st[w], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&m->in[w], 0, __ATOMIC_RELAXED);
	}
	m->n = 0;
	__atomic_store_n(&m->extra, 0, __ATOMIC_RELAXED);
}

/* Back to the page level (used == 0: no object out, so no remote free can
 * be in flight and nobody else holds the slab). */
void _nd_slab_release(slab_t *s)
{
	ND_ASSERT(s->used + s->fbias == 0 || _nd_slab_all_remote(s), "a released slab has nothing live");
	ND_ASSERT(out_none(s), "check mode: a released slab has no object out");
	_nd_slab_drop(s);
}

void _nd_slab_drop(slab_t *s)
{
	/* spans freed by other threads, never collected (all remote): the
	 * map is kept with the header, so it must hold none (_nd_slab_new) */
	_nd_span_map_t *m = s->spans;
	if (nd_unlikely(m && m->n))
		span_clear(m);
	/* each stretch of pages not given back (slab_purge.c's units) is a
	 * run of its own */
	for (uint32_t p = 0, q; p < s->npages; p = q) {
		for (q = p + 1; q < s->npages && (s->gone >> q & 1) == (s->gone >> p & 1); q++)
			;
		if (s->gone >> p & 1)
			continue;
		set_slab_pages(s, p, q, ND_USE_NONE);
		_nd_page_free(_nd_slab_run(s) + ((size_t)p << ND_PAGE_SHIFT));
	}
	__atomic_store_n(&s->gone, 0, __ATOMIC_RELAXED); /* statistics read them */
	__atomic_store_n(&s->lost, 0, __ATOMIC_RELAXED);
	int mnode = s->node >= 0 && s->node < ND_MAX_NODES ? s->node : 0;
	__atomic_store_n(&s->heap, NULL, __ATOMIC_RELAXED);
	_nd_meta_hdr_put(mnode, s);
}

/* ---- kept empty slabs (owner of the heap) ----------------------------------
 * An emptied slab that is not the current one stays with its heap, up to
 * EMPTY_KEEP pages per heap, instead of going back to the page level (as
 * mimalloc keeps retired pages in the thread's segments): a program that
 * frees everything and allocates again took each slab back from the page
 * level, ~2000 instructions per slab (page run, descriptors, slab map,
 * header, carving). A heap that needs a slab of class c takes a kept one
 * of c as it was (free list and carving kept), else one of another class
 * with as many pages, made a slab of c (its page descriptors and map
 * entries already name the header). The kept pages go back to the page
 * level past the bound (the newest emptied slab goes), when the heap
 * grows (slab_purge.c's pass), at malloc_trim and when the heap is
 * trimmed or parked (thread exit). */
/* 16 MiB: at 4 MiB, a FIFO/strided churn of 5 MB live (all freed each
 * round) sent ~75 slabs a round back to the page level and took them
 * again (38 -> 25 ms, tcmalloc 25); _nd_purge_over still bounds the kept
 * pages by the page level's dirty limit (bench wl_footprint) */
#define EMPTY_KEEP 4096u /* pages (16 MiB) */
static uint64_t cls_same[ND_SLAB_CLASSES]; /* classes whose slabs have cls_pages[c] pages */
static uint64_t cls_any;		    /* classes up to SLAB_BIG_MAX: their slabs serve one another */

static bool keep_empty(heap_t *h, slab_t *s)
{
	ND_ASSERT(s->used + s->fbias == 0 && !s->next && !s->prev, "a kept slab is empty and on no list");
	/* only on the heap's own node: a spreading heap (node -1) chooses
	 * each slab's node when it takes one, and a node heap's slab on a
	 * fallback node is not reused once empty */
	if (s->node != h->node || s->gone)
		return false;
	uint32_t n = h->epages + s->npages;
	/* kept pages are dirty free memory the page level does not see: if
	 * they and its dirty pages would go past its dirty limit, its oldest
	 * dirty pages make room (_nd_purge_room), or, if the kept pages alone
	 * would, they go back and it purges (bench wl_footprint's end: the
	 * page level's limit follows its pages in use, and kept slabs
	 * counted there) */
	if (_nd_purge_over(s->node, n) && (n > EMPTY_KEEP || !_nd_purge_room(s->node, n))) {
		_nd_slab_release_empty(h);
		return false;
	}
	if (n > EMPTY_KEEP)
		return false;
	s->next = h->empty[s->cls];
	h->empty[s->cls] = s;
	h->emask |= (uint64_t)1 << s->cls;
	h->epages += s->npages;
	return true;
}

/* At most as many objects in a slab as slab_purge.c's pass takes (its
 * MAX_CAP: class 16 in 16 KiB), below free's ND_SLAB_CHK_B. */
#define ANY_CAP_MAX 1024u
_Static_assert(ANY_CAP_MAX < ND_SLAB_CHK_B, "free's check needs B above every capacity");
_Static_assert(ANY_CAP_MAX <= ND_SLAB_OUT_BITS, "check mode's out bits cover every capacity");

/* Objects of class c (of cls_any) in a slab of n pages: uncoloured
 * classes, so the run holds them from its first byte; at most
 * ANY_CAP_MAX, in at least half the slab (0 past that: not lent). A kept
 * 8-page slab serves class 16 with its first 16 KiB (32 with 16 pages):
 * bench wl_order took a fresh 4-page run for class 16 every cycle of
 * sizes while 8-page slabs were kept, 16 KiB more in use a cycle (8.80
 * -> 8.94 MiB in 150 rounds). The pages past the cap hold no object:
 * slab_purge.c's pass gives them back (whole units) once carved. */
static inline uint32_t any_cap(unsigned c, uint32_t n)
{
	if (n == cls_pages[c])
		return cls_cap[c];
	uint32_t cap = (uint32_t)(((size_t)n << ND_PAGE_SHIFT) / cls_size[c]);
	return cap <= ANY_CAP_MAX ? cap : cap <= 2 * ANY_CAP_MAX ? ANY_CAP_MAX : 0;
}

/*
 * A kept slab for class c: one of c as it was, else one of c's pages
 * (a kept list's head: the lists of cls_any may hold slabs of other
 * pages than their class's), else (c of cls_any) the head of a list of
 * cls_any whose slab holds c's objects within every slab's bounds (7
 * objects for FULL_BACK, ANY_CAP_MAX). Classes up to 1 KiB have slabs of 4, 8 or 16 pages: a
 * round of bench wl_order that moved from classes of 4 pages to classes
 * of 8 took fresh pages while its kept slabs waited, and giving those
 * back did not help (branch order4): 4-page runs among slabs in use do
 * not make 8-page blocks (5.7k of its 8.2k fresh pages were 8-page runs
 * taken while as many dirty pages were free).
 */
static slab_t *take_pick(heap_t *h, unsigned c)
{
	if (h->emask >> c & 1)
		return h->empty[c];
	for (uint64_t m = h->emask & cls_same[c]; m; m &= m - 1) {
		slab_t *s = h->empty[__builtin_ctzll(m)];
		if (s->npages == cls_pages[c])
			return s;
	}
	if (!(cls_any >> c & 1))
		return NULL;
	for (uint64_t m = h->emask & cls_any; m; m &= m - 1) {
		slab_t *s = h->empty[__builtin_ctzll(m)];
		if (any_cap(c, s->npages) >= 7)
			return s;
	}
	return NULL;
}

/*
 * No kept slab for c (of cls_any): the empty current slab of another
 * class of cls_any, alone on its list, becomes a kept one (returned: its
 * kept list's head; its class's next malloc refills). A class a round
 * stopped using keeps its current slab however long it stays empty:
 * bench wl_order's second cycle of sizes held 23 of them (544 KiB) while
 * its classes of 768-1024 B took fresh pages. Not a slab with units
 * gone, on another node, with objects out (used counts remote and
 * borrowed ones until collected) or spans, nor one whose class's dir[]
 * serves from another list (a borrowed or lender list: set_cur would
 * overwrite it). Only after the heap's first IDLE_TAKES slab takes: a
 * short-lived process never runs it (it is not in src/hot_text.ld:
 * test_init_footprint), nor a heap warming up (its first slabs stay).
 */
#define IDLE_TAKES 64u
static __attribute__((noinline)) slab_t *take_idle(heap_t *h, unsigned c)
{
	const _nd_thread_t *o = h->owner;
	for (uint64_t m = cls_any & ~((uint64_t)1 << c); m; m &= m - 1) {
		unsigned k = (unsigned)__builtin_ctzll(m);
		slab_t *s = h->cur[k];
		if (s == &_nd_slab_empty || s->next || s->used || s->fbias || s->cls != k || s->node != h->node || s->gone ||
		    (__atomic_load_n(&s->tfree, __ATOMIC_RELAXED) & TF_PTR) || (s->spans && s->spans->n))
			continue;
		if (o && o->heap == h && k < ND_SLAB_SIZED && o->cdir[k] != (_nd_slab_hot_t *)s)
			continue;
		if (any_cap(c, s->npages) < 7)
			continue;
		_nd_slab_part_unlink(h, s);
		s->next = h->empty[k];
		h->empty[k] = s;
		h->emask |= (uint64_t)1 << k;
		h->epages += s->npages;
		return s;
	}
	return NULL;
}

slab_t *_nd_slab_take_empty(heap_t *h, unsigned c)
{
	h->itakes++; /* wraps: take_idle waits again */
	slab_t *s = take_pick(h, c);
	if (!s && h->itakes > IDLE_TAKES && cls_any >> c & 1)
		s = take_idle(h, c);
	if (!s)
		return NULL;
	unsigned k = s->cls;
	ND_ASSERT(h->empty[k] == s, "take_pick gives the head of a kept list");
	h->empty[k] = s->next;
	if (!s->next)
		h->emask &= ~((uint64_t)1 << k);
	s->next = NULL;
	h->epages -= s->npages;
	__atomic_store_n(&s->tp, _nd_slab_my_tp(), __ATOMIC_RELAXED); /* nothing out: no borrowed one (ND_TP_MIX) */
	ND_ASSERT(s->used == 0 && (k == c || s->npages == cls_pages[c] || cls_any >> c & 1) &&
			  !(__atomic_load_n(&s->tfree, __ATOMIC_RELAXED) & TF_PTR) && (!s->spans || !s->spans->n),
		  "a kept slab has nothing out (no span) and c's pages, or is c's, or c serves any");
	ND_ASSERT(k == c || (any_cap(c, s->npages) >= 7 && any_cap(c, s->npages) <= ANY_CAP_MAX), "c's objects in s within bounds");
	s->spseen = 0;
	s->pfree = 0; /* slab_purge.c: its frees since a pass count from 0 */
	s->lcls = (uint8_t)c; /* on c's lists, even if it was lent when it emptied */
	if (k != c) {
		/* nothing of class k is out: carving starts again (objects
		 * of k left in the pages are not reachable: never carved) */
		ND_ASSERT(out_none(s), "check mode: a kept slab has no object out");
		s->start = _nd_slab_run(s) + colour_of(c, _nd_slab_run(s));
		set_class(s, c);
		__atomic_store_n(&s->cap, (uint16_t)any_cap(c, s->npages), __ATOMIC_RELAXED); /* its pages, not c's */
		set_map(s, 0, s->npages, s); /* the map's mul is the new class's */
		s->free = NULL;
		__atomic_store_n(&s->carved, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->chk, _nd_slab_chk(s->start, s->mul, 0), __ATOMIC_RELAXED);
		s->purged = 0;
		s->pstr = 0;
	}
	return s;
}

void _nd_slab_release_empty(heap_t *h)
{
	for (uint64_t m = h->emask; m; m &= m - 1) {
		unsigned c = (unsigned)__builtin_ctzll(m);
		slab_t *s;
		while ((s = h->empty[c]) != NULL) {
			h->empty[c] = s->next;
			s->next = NULL;
			_nd_slab_release(s);
		}
	}
	h->emask = 0;
	h->epages = 0;
}

/* Puts up to one page worth (at least one object) of never-used objects on
 * the free list: pages are touched as they are needed, not at creation. */
void _nd_slab_carve(slab_t *s)
{
	ND_ASSERT(s->free == NULL && s->carved < s->cap, "carving onto the empty free list of a slab with room");
	unsigned n = s->cap - s->carved;
	unsigned per_page = (unsigned)(ND_PAGE_SIZE / s->size);
	if (per_page == 0)
		per_page = 1;
	if (n > per_page)
		n = per_page;
	char *first = s->start + (size_t)s->carved * s->size;
	void **o = (void **)first;
	for (unsigned i = 0; i < n; i++) {
		void **nx = i + 1 < n ? (void **)((char *)o + s->size) : (void **)s->free;
		o[ND_FO_LINK] = nx;
		o[ND_FO_MARK] = marker(s);
		o = (void **)((char *)o + s->size);
	}
	s->free = first;
	uint16_t carved = (uint16_t)(s->carved + n);
	__atomic_store_n(&s->carved, carved, __ATOMIC_RELAXED);
	__atomic_store_n(&s->chk, _nd_slab_chk(s->start, s->mul, _nd_slab_check ? 0 : carved), __ATOMIC_RELAXED);
}

/* ---- spans (nd_slab.h: ND_TP_SPAN) ----------------------------------------
 * wl_footprint's peak holds 19 MiB of free 16-256 B slots in pages that
 * phase-1 survivors keep resident (docs/benchmarks.md): a plain malloc
 * whose refill would take fresh pages takes k adjacent free slots of such
 * a slab instead, at most SPAN_KMAX of them and SPAN_WASTE of its size
 * lost, from a slab at most half full (sparse). Owner only, but the
 * checks of other threads' frees and the usable size, which read the
 * bits. */
#define SPAN_DLO ND_SPAN_DLO
#define SPAN_DHI ND_SPAN_DHI
#define SPAN_KMAX 4u
#define SPAN_WASTE 8u   /* at most size / 8 */
#define SPAN_SKIP 1u    /* searches skipped after a failed one (h->spskip) */
#define SPAN_LOOK 4u    /* partial slabs looked at per donor class */

static inline bool span_bit(const uint64_t *w, uint32_t i)
{
	return i < ND_SPAN_WORDS * 64 && (__atomic_load_n(&w[i / 64], __ATOMIC_RELAXED) >> (i % 64) & 1);
}

static inline void span_set(uint64_t *w, uint32_t i, bool on)
{
	uint64_t b = (uint64_t)1 << (i % 64), v = w[i / 64];
	__atomic_store_n(&w[i / 64], on ? v | b : v & ~b, __ATOMIC_RELAXED);
}

/* Why slot i of a slab with span map m is not a block (NULL: it may be).
 * Out of line, as span_usable. */
static __attribute__((noinline)) const char *span_inner(const _nd_span_map_t *m, uint32_t i)
{
	return span_bit(m->in, i) ? "inside a block, not its start" : NULL;
}

static inline void *slot_at(const slab_t *s, uint32_t i) { return s->start + (size_t)i * s->size; }

/* Slots of the span that starts at i (its st bit set). */
static uint32_t span_len(const slab_t *s, const _nd_span_map_t *m, uint32_t i)
{
	uint32_t k = 1;
	while (i + k < s->cap && span_bit(m->in, i + k))
		k++;
	return k;
}

/* The span at i ends: its bits go and its slots but the first (the
 * caller's) go onto s's free list, marked; true if a push left used <= 0
 * (free_local_slow's case). The last span gone: the fast path's stamp. */
static bool span_release(slab_t *s, _nd_span_map_t *m, uint32_t i)
{
	uint32_t k = span_len(s, m, i);
	ND_ASSERT(m->n >= 1 && k >= 2 && k <= SPAN_KMAX && m->extra >= k - 1 && s->used + s->fbias >= k,
		  "a span ends once: 2..SPAN_KMAX slots, counted in n, extra and used");
	bool slow = false;
	span_set(m->st, i, false);
	for (uint32_t j = k - 1; j >= 1; j--) {
		span_set(m->in, i + j, false);
		void **x = slot_at(s, i + j);
		x[ND_FO_MARK] = marker(s);
		slow |= _nd_slab_push((_nd_slab_hot_t *)s, x);
	}
	m->n--;
	__atomic_store_n(&m->extra, m->extra - (k - 1), __ATOMIC_RELAXED);
	uintptr_t tp = __atomic_load_n(&s->tp, __ATOMIC_RELAXED);
	if (!m->n && (tp & ND_TP_SPAN))
		__atomic_store_n(&s->tp, tp & ~ND_TP_SPAN, __ATOMIC_RELAXED);
	return slow;
}

static __attribute__((noreturn, noinline)) void bad_free(const void *p, const slab_t *s, const char *why);

/* Remote frees collected (list: n objects first): a span start ends its
 * span; a slot inside a span was never handed out (fatal). */
static __attribute__((noinline)) void span_collect(slab_t *s, void **list, unsigned n)
{
	_nd_span_map_t *m = s->spans;
	/* every inner slot first: a span ended before its inner slot was
	 * reached (frees of a parked heap's slabs go home unchecked) would
	 * have cleared the slot's bit and listed it twice */
	void **x = list;
	for (unsigned j = n; j--; x = ND_FO_NEXT(x))
		if (span_bit(m->in, (uint32_t)_nd_slab_index((const _nd_slab_hot_t *)s, x)))
			bad_free(x, s, "inside a block, not its start");
	for (x = list; n--; x = ND_FO_NEXT(x)) { /* span_release lists inner slots: none of these */
		uint32_t i = (uint32_t)_nd_slab_index((const _nd_slab_hot_t *)s, x);
		if (span_bit(m->st, i))
			span_release(s, m, i);
	}
}

/* Whether s may lend k slots: fully carved, at most 3/4 full, not lent to
 * another class, not flagged for borrowing, and its free slots grown
 * since a walk last found no run (spseen). The tests most slabs fail
 * first (span_take calls it for every slab it looks at). */
static inline bool span_donor(const slab_t *s, uint32_t k)
{
	uint32_t fr = (uint32_t)s->carved - s->used;
	return s->carved >= s->cap && 4u * s->used <= 3u * s->cap && fr > s->spseen && fr >= k && s->lcls == s->cls &&
	       !s->fbias && s->cap <= ND_SPAN_WORDS * 64 && !(__atomic_load_n(&s->tp, __ATOMIC_RELAXED) & ND_TP_BITS);
}

/* The first slot of the first run of k listed slots met in a walk of s's
 * free list (UINT32_MAX: none); link[i]: the link to listed slot i.
 * Inlined with k constant (span_from's switch). One byte a slot (1:
 * listed): a run of k through i is in the 8 bytes of slots i - k + 1 ..
 * i - k + 8 (k <= 4), one load, and r keeps the bytes that start one:
 * 25 instructions a slot where bits took 38 (wl_footprint 300,000
 * visits 389k slots). */
static inline __attribute__((always_inline)) uint32_t span_walk(slab_t *s, uint32_t k, void ***link)
{
	uint8_t fb[SPAN_KMAX - 1 + ND_SPAN_WORDS * 64 + 8] = { 0 }; /* fb[i + 3]: slot i (3 guards below, 8 above) */
	/* in locals: fb's byte stores may alias s */
	uint32_t carved = s->carved;
	uintptr_t start = (uintptr_t)s->start;
	uint64_t mul = s->mul;
	for (void **pp = (void **)&s->free, **x; (x = *pp) != NULL; pp = &x[ND_FO_LINK]) {
		/* check_link's test, of the link just followed: on all 64 bits
		 * (a pointer into an object has the object's index in the low
		 * 32, its offset's bits above them); the object that holds it */
		uint64_t i64 = _nd_slab_rotr(((uintptr_t)x - start) * mul); /* _nd_slab_index */
		if (nd_unlikely(i64 >= carved))
			_nd_slab_corrupt_link(s, (void *const *)(pp - ND_FO_LINK), "malloc");
		uint32_t i = (uint32_t)i64;
		uint64_t w, r;
		/* loaded before i's byte is stored (no store to forward) */
		__builtin_memcpy(&w, &fb[i + SPAN_KMAX - k], sizeof w); /* slots i - k + 1 .. */
		w |= (uint64_t)1 << (8 * (k - 1));
		fb[i + SPAN_KMAX - 1] = 1;
		link[i] = pp;
		r = w;
		for (uint32_t j = 1; j < k; j++)
			r &= w >> (8 * j);
		r &= ((uint64_t)1 << (8 * k)) - 1;
		if (r)
			return i - (k - 1) + (uint32_t)__builtin_ctzll(r) / 8;
	}
	return UINT32_MAX;
}

/* k adjacent slots of s's free list (s: span_donor), or NULL. The link to
 * each listed slot is remembered so the run's slots are unlinked without
 * a second walk. */
static void *span_from(slab_t *s, uint32_t k)
{
	void **link[ND_SPAN_WORDS * 64];
	uint32_t lo;
	switch (k) {
	case 2: lo = span_walk(s, 2, link); break;
	case 3: lo = span_walk(s, 3, link); break;
	default: lo = span_walk(s, 4, link); break;
	}
	if (lo == UINT32_MAX) {
		s->spseen = (uint16_t)(s->carved - s->used);
		return NULL;
	}
	_nd_span_map_t *m = __atomic_load_n(&s->spans, __ATOMIC_RELAXED);
	if (!m) {
		m = _nd_meta_alloc(s->node >= 0 && s->node < ND_MAX_NODES ? s->node : 0, sizeof *m);
		if (!m)
			return NULL;
		__atomic_store_n(&s->spans, m, __ATOMIC_RELEASE);
	}
	if (!m->n) {
		/* a thread's first borrow of s may set ND_TP_MIX meanwhile:
		 * then s is no donor (its frees go to borrowed lists) */
		uintptr_t tp = __atomic_load_n(&s->tp, __ATOMIC_RELAXED);
		if ((tp & ND_TP_BITS) ||
		    !__atomic_compare_exchange_n(&s->tp, &tp, tp | ND_TP_SPAN, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return NULL;
	}
	ND_ASSERT((__atomic_load_n(&s->tp, __ATOMIC_RELAXED) & ND_TP_FLAGS) == ND_TP_SPAN,
		  "a slab holding a span carries ND_TP_SPAN, never ND_TP_MIX");
	/* *link[j] == slot j for each run slot j still listed: unlinking j
	 * moves only its successor's link (in any order) */
	for (uint32_t j = lo; j < lo + k; j++) {
		void **x = slot_at(s, j), **nx = x[ND_FO_LINK];
		ND_ASSERT(*link[j] == (void *)x, "a run slot's remembered link points to it");
		*link[j] = nx;
		uint32_t n = nx ? (uint32_t)_nd_slab_index((const _nd_slab_hot_t *)s, nx) : UINT32_MAX;
		if (n - lo < k)
			link[n] = link[j];
		x[ND_FO_MARK] = NULL; /* not free: no marker (an inner slot's free is reported) */
	}
	_nd_slab_used_add((_nd_slab_hot_t *)s, k);
	span_set(m->st, lo, true);
	for (uint32_t j = 1; j < k; j++)
		span_set(m->in, lo + j, true);
	m->n++;
	__atomic_store_n(&m->extra, m->extra + (k - 1), __ATOMIC_RELAXED);
	s->spseen = 0;
	return slot_at(s, lo);
}

/* The donor classes of a request of size (SPAN_LO..SPAN_HI B), fewest
 * bytes lost first: up to SPAN_CMAX pairs (d - SPAN_DLO) | (k - 1) << 3
 * of 5 bits (never 0: k >= 2), SPAN_CDONE once made. Made at a size's
 * first search, in a table of the heap's node's metadata (made at its
 * first search): not at the init (_nd_slab_init is in the part of .text
 * every process touches, src/hot_text.ld), nor in .bss, whose pages every
 * process touches are laid out for that (test_init_footprint). Any thread
 * may make an entry, all write the same (relaxed atomics). Made at every
 * search, the divisions and the sort cost wl_footprint (300,000) 8M
 * instructions. */
#define SPAN_LO ND_SPAN_LO
#define SPAN_HI ND_SPAN_HI
#define SPAN_CMAX 3u /* no size has more */
#define SPAN_CDONE 0x8000u

static __attribute__((noinline)) uint16_t span_cands_make(uint16_t *tab, size_t size)
{
	unsigned nc = 0;
	uint16_t cand[SPAN_CMAX];
	size_t waste[SPAN_CMAX];
	for (unsigned d = SPAN_DLO; d <= SPAN_DHI && cls_size[d] < size; d++) {
		uint32_t k = (uint32_t)((size + cls_size[d] - 1) / cls_size[d]);
		size_t w = (size_t)k * cls_size[d] - size;
		if (k > SPAN_KMAX || w * SPAN_WASTE > size)
			continue;
		ND_ASSERT(nc < SPAN_CMAX, "at most SPAN_CMAX donor classes a size");
		unsigned j = nc++;
		for (; j > 0 && waste[j - 1] > w; j--) {
			cand[j] = cand[j - 1];
			waste[j] = waste[j - 1];
		}
		cand[j] = (uint16_t)((d - SPAN_DLO) | (k - 1) << 3);
		waste[j] = w;
	}
	uint16_t e = SPAN_CDONE;
	for (unsigned j = 0; j < nc; j++)
		e |= (uint16_t)(cand[j] << (5 * j));
	__atomic_store_n(&tab[size - SPAN_LO], e, __ATOMIC_RELAXED);
	return e;
}

/* The entry of size in h's node's table; 0 if no memory for it. */
static inline uint16_t span_cands(const heap_t *h, size_t size)
{
	int node = h->node >= 0 && h->node < ND_MAX_NODES ? h->node : 0;
	uint16_t **slot = &_nd_meta_node[node].spcands, *tab = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (nd_unlikely(!tab) &&
	    !(tab = _nd_meta_alloc_once(node, (void **)slot, (SPAN_HI - SPAN_LO + 1) * sizeof(uint16_t))))
		return 0;
	uint16_t e = __atomic_load_n(&tab[size - SPAN_LO], __ATOMIC_RELAXED);
	return nd_likely(e) ? e : span_cands_make(tab, size);
}

void *_nd_slab_span_take(heap_t *h, size_t size)
{
	ND_ASSERT(size >= SPAN_LO && size <= SPAN_HI, "a span serves 81..1024 B (_nd_heap_refill)");
	if (_nd_slab_check || h->user)
		return NULL;
	/* a failed search predicts the next: wl_footprint (100,000)
	 * 103.9M -> 102.7M instructions, its refill's RSS 198,092 -> 197,928
	 * KiB (at 1,000,000: +0.6 MiB, below phase 1's peak); skipping 3:
	 * 100.1M but +1.1 MiB */
	if (h->spskip) {
		h->spskip--;
		return NULL;
	}
	for (uint16_t e = span_cands(h, size) & ~SPAN_CDONE; e; e >>= 5) {
		unsigned d = SPAN_DLO + (e & 7u);
		uint32_t k = 1 + (e >> 3 & 3u), look = 0;
		if (h->cur[d] == &_nd_slab_empty)
			continue;
		for (slab_t *s = h->cur[d]; s && look < SPAN_LOOK; s = s->next, look++) {
			void *o = span_donor(s, k) ? span_from(s, k) : NULL;
			if (o) {
				h->spbusy |= (uint64_t)1 << d; /* its pages stay (slab_purge.c) */
				return o;
			}
		}
	}
	h->spskip = SPAN_SKIP;
	return NULL;
}

/* Takes the remote frees into the private list (called when that one is
 * empty: no walk). Returns how many. */
unsigned _nd_slab_collect(slab_t *s)
{
	if (!(__atomic_load_n(&s->tfree, __ATOMIC_RELAXED) & TF_PTR))
		return 0;
	uintptr_t v = __atomic_exchange_n(&s->tfree, 0, __ATOMIC_ACQUIRE);
	void **list = (void **)(v & TF_PTR);
	if (!list)
		return 0;
	unsigned n = (unsigned)(v >> TF_CNT_SHIFT);
	ND_ASSERT(n >= 1 && n <= s->used + s->fbias, "collected objects were counted out");
	if (nd_unlikely(_nd_slab_check)) /* every link, before the fast path follows them */
		for (void **x = list; x; x = ND_FO_NEXT(x))
			check_link(s, x, "malloc");
	if (s->free) { /* not on the paths that call it; kept correct anyway */
		void **tail = list;
		for (; ND_FO_NEXT(tail); tail = ND_FO_NEXT(tail))
			check_link(s, tail, "malloc");
		ND_FO_NEXT(tail) = s->free;
	}
	s->free = list;
	__atomic_store_n(&s->used, s->used - n, __ATOMIC_RELAXED); /* statistics read it */
	if (nd_unlikely(s->spans && s->spans->n))
		span_collect(s, list, n);
	return n;
}

/* _nd_slab_all_remote of s holding spans (m), remote list v: a span is
 * k slots in used, one object on the list, so the list is walked (the
 * owner may: nodes leave it only by its exchange). A listed inner slot (a
 * free into a parked heap, unchecked) is not all remote: the slab stays
 * for the collect that reports it, its span's memory in use. */
static __attribute__((noinline)) bool span_all_remote(const slab_t *s, const _nd_span_map_t *m, uintptr_t v)
{
	uint32_t n = (uint32_t)(v >> TF_CNT_SHIFT), slots = 0;
	void **x = (void **)(v & TF_PTR);
	for (; n-- && x; x = ND_FO_NEXT(x)) {
		uint32_t i = (uint32_t)_nd_slab_index((const _nd_slab_hot_t *)s, x);
		if (span_bit(m->in, i))
			return false;
		slots += span_bit(m->st, i) ? span_len(s, m, i) : 1;
	}
	return s->used + s->fbias == slots;
}

/* True if every object out of s is on its remote list (nothing live):
 * then no further free can come, and the slab can go. */
bool _nd_slab_all_remote(const slab_t *s)
{
	uintptr_t v = __atomic_load_n(&s->tfree, __ATOMIC_ACQUIRE);
	const _nd_span_map_t *m = __atomic_load_n(&s->spans, __ATOMIC_RELAXED);
	if (nd_unlikely(m && m->n))
		return span_all_remote(s, m, v);
	return s->used + s->fbias == (uint32_t)(v >> TF_CNT_SHIFT);
}


/* ---- heap lists (owner only) --------------------------------------------- */

void _nd_slab_part_unlink(heap_t *h, slab_t *s)
{
	ND_ASSERT(s->prev ? s->prev->next == s : h->cur[s->lcls] == s, "s is on h's partial list");
	ND_ASSERT(s->fbias == 0, "a partial slab has no full-list bias");
	if (s->prev)
		s->prev->next = s->next;
	else
		set_cur(h, s->lcls, s->next ? s->next : &_nd_slab_empty);
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
}

/* Inserted behind the current slab, so allocation keeps filling it. */
void _nd_slab_part_insert(heap_t *h, slab_t *s)
{
	ND_ASSERT(s != &_nd_slab_empty && s->fbias == 0 && !s->next && !s->prev, "s is on no list");
	slab_t *head = h->cur[s->lcls];
	if (head == &_nd_slab_empty) {
		s->next = s->prev = NULL;
		set_cur(h, s->lcls, s);
		return;
	}
	s->prev = head;
	s->next = head->next;
	if (head->next)
		head->next->prev = s;
	head->next = s;
}

void _nd_slab_part_push_front(heap_t *h, slab_t *s)
{
	ND_ASSERT(s != &_nd_slab_empty && s->fbias == 0 && !s->next && !s->prev, "s is on no list");
	slab_t *head = h->cur[s->lcls];
	s->prev = NULL;
	s->next = head == &_nd_slab_empty ? NULL : head;
	if (s->next)
		s->next->prev = s;
	set_cur(h, s->lcls, s);
}

/* Lending (issue 11): after random frees a slab of a class above 1 KiB
 * (8-12 objects) keeps one or two live objects, and the free objects in
 * the pages those hold stay resident (the purge takes only pages no
 * object out overlaps) but serve no other class. So a class c that needs
 * a new slab first takes such a partial slab of a class d at most twice
 * its size: it heads c's list (lcls) until its free list runs dry, then
 * goes to its own class's full list (_nd_slab_full_push); its withheld
 * objects wait for its own class (_nd_slab_unpurge), and only a fully
 * carved slab is lent (no carving for another class). d's objects must
 * be as aligned as c's: aligned_alloc(a, n) takes the first class that
 * is a multiple of a (so 1024 never borrows 1280 or 1536). wl_footprint
 * (refill of 32..1024 B after 90% of the objects were freed), phase 3:
 * page faults 12,641 -> 10,876, madvise calls 3,168 -> 2,063, RSS after
 * it 219,564 -> 219,960 KiB (the lent objects of 2048 B hold 1 KiB
 * requests). Up to 3/2 of the size: 12,053 faults, 2,858 calls, 219,276
 * KiB. Donors up to 1 KiB (32+ objects a slab, dense after frees) are
 * not taken: lending among them changed nothing there but cost wl_small
 * 0.1 instructions per pair (more slab changes).
 * A donor's pages that no object out overlaps go first (slab_purge.c,
 * _nd_slab_purge_lent; whole units back to the page level): only its free
 * objects in pages that stay resident anyway are lent, not those that
 * would fill pages holding nothing else with requests of half their size
 * (the refill lends before its first pass). wl_footprint with the units:
 * peak RSS 222,520 -> 217,848 KiB, page faults 56,378 -> 58,904 (without
 * the units this cost 2,500 faults more than before either: 59,762 ->
 * 62,289).
 * A donor with nothing listed (the purge withheld its free objects:
 * s->pstr: also those that end in a page given back) parks full as
 * a dry head would, out of the next looks: wl_footprint's refill left
 * 1.7 MiB of free 1792 and 2048 B objects in resident pages unlent, the
 * first slab with objects listed 10th on the list; peak RSS 216,244 ->
 * 215,348 KiB, faults 58,515 -> 58,288.
 * LEND_LOOK: partial slabs looked at after a class's head (its own). */
#define LEND_LOOK 8

/* log2 of the alignment every object of class c has: the power of two
 * that divides its size, 64 B for a coloured class (colour_of; an
 * alignment above 64 takes cls_al[c]). */
static inline unsigned cls_lg_align(unsigned c)
{
	return cls_col[c] ? 6 : (unsigned)__builtin_ctz(cls_size[c]);
}

bool _nd_slab_lend(heap_t *h, unsigned c)
{
	if (_nd_slab_check) /* check mode's sized free wants a block above half its size */
		return false;
	for (unsigned d = c + 1; d < ND_SLAB_SIZED && cls_size[d] <= 2 * cls_size[c]; d++) { /* not the twins */
		/* c's objects are aligned to the power of two that divides its
		 * size (aligned_alloc picks c by it), so d's must be too */
		if (cls_size[d] <= SLAB_BIG_MAX || cls_lg_align(d) < cls_lg_align(c))
			continue;
		slab_t *head = h->cur[d];
		if (head == &_nd_slab_empty)
			continue;
		unsigned k = 0;
		slab_t *nx;
		for (slab_t *s = head->next; s && k < LEND_LOOK; s = nx, k++) {
			nx = s->next;
			if (s->carved < s->cap || s->lcls != d)
				continue;
			if (!s->free || !_nd_slab_purge_lent(h, s)) {
				/* nothing listed, the rest withheld: it parks full
				 * (as a dry head would), out of the next looks */
				if (s->purged && s->used && _nd_slab_park_notify(s)) {
					_nd_slab_part_unlink(h, s);
					_nd_slab_full_push(h, s);
				}
				continue;
			}
			_nd_slab_part_unlink(h, s);
			s->lcls = (uint8_t)c;
			_nd_slab_part_push_front(h, s);
			return true;
		}
	}
	return false;
}

/* Forced inline into this file's slow paths, as they were before their
 * stores of fbias became atomic builtins, which GCC's inliner weighs as
 * calls (wl_small: one call more per refill and per free of a full slab). */
static inline __attribute__((always_inline)) void full_unlink(heap_t *h, slab_t *s)
{
	ND_ASSERT(s->prev ? s->prev->next == s : h->fullh[s->cls] == s, "s is on h's full list");
	ND_ASSERT(s->fbias > 0, "a slab on the full list has its bias");
	if (s->prev)
		s->prev->next = s->next;
	else
		h->fullh[s->cls] = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
	/* relaxed stores: statistics read used and fbias */
	_nd_slab_used_add((_nd_slab_hot_t *)s, s->fbias);
	__atomic_store_n(&s->fbias, 0, __ATOMIC_RELAXED);
}

static inline __attribute__((always_inline)) void full_push(heap_t *h, slab_t *s)
{
	s->lcls = s->cls; /* a lent slab that ran dry: its own class's again */
	s->prev = NULL;
	s->next = h->fullh[s->cls];
	if (s->next)
		s->next->prev = s;
	h->fullh[s->cls] = s;
	/* nothing listed, nothing remote: every object is out, withheld
	 * (slab_purge.c) or not carved (a lent slab, _nd_slab_unlend) */
	ND_ASSERT(!s->free && s->fbias == 0 && s->used >= 1, "a slab parked full has no object listed");
	uint32_t back = FULL_BACK(s->cap);
	uint32_t u = s->used, f = u > back ? u - back : 1;
	__atomic_store_n(&s->fbias, f, __ATOMIC_RELAXED); /* statistics read used and fbias */
	__atomic_store_n(&s->used, u - f, __ATOMIC_RELAXED);
}

void _nd_slab_full_unlink(heap_t *h, slab_t *s) { full_unlink(h, s); }
void _nd_slab_full_push(heap_t *h, slab_t *s) { full_push(h, s); }


/* s heads its class's partial list alone and parks full (NOTIFY set by
 * the caller); b, a full slab of the class, takes its place: one set_cur
 * where part_unlink and part_push_front make two. */
static inline __attribute__((always_inline)) void swap_full(heap_t *h, slab_t *s, slab_t *b)
{
	ND_ASSERT(h->cur[s->cls] == s && s->lcls == s->cls && !s->next && !s->prev && b->cls == s->cls,
		  "s is its class's only partial slab, b one of its full ones");
	full_unlink(h, b);
	full_push(h, s);
	set_cur(h, b->lcls, b);
}

void _nd_slab_swap_full(heap_t *h, slab_t *s, slab_t *b) { swap_full(h, s, b); }

/* The refills' pop from the new current slab b (objects listed). */
static inline __attribute__((always_inline)) void *refill_pop(slab_t *b)
{
	return _nd_slab_take(b);
}

/* Classes of few objects a slab (above 1 KiB: 7-25 a slab): after random
 * frees their slabs list one or two free objects each, and a refill that
 * moves to such a slab serves a malloc or two (churn of 16..2048 B: a
 * refill of 1792 and 2048 B every 2.3 mallocs, ~250 instructions each
 * with the slab's way back from the full list at its next free). So when
 * the slab a refill moves to has FEW_ROOM or fewer objects left and the
 * class has FEW_SLABS or more parked full, the owner's dry slab s is
 * flagged ND_TP_MIX, as _nd_slab_bw_take flags one for a list that ran
 * dry: the owner's frees into it go onto its borrowed list of the class
 * (tcmalloc's thread cache: any freed object of the class), which serves
 * the mallocs until it runs dry. FEW_SLABS: a class of a few slabs keeps
 * its frees on them (bench mixed, ~25 live objects a class, frees them
 * all every 100k steps: peak RSS +6% when its lists held them). Only the
 * owner's current node heap (the lists' node), s of its own class (not
 * lent), no span; the flag stays with s (as a borrower's does). Out of
 * line: called on refills, never on the fast paths. */
#define FEW_ROOM 2
#define FEW_SLABS 8
static bool few_many(const heap_t *h, unsigned c)
{
	const slab_t *f = h->fullh[c];
	for (unsigned n = 0; n < FEW_SLABS; n++, f = f->next)
		if (!f)
			return false;
	return true;
}

static __attribute__((noinline)) void few_mix(heap_t *h, slab_t *s)
{
	_nd_thread_t *t = h->owner;
	if (t && t->heap == h && s->cls == s->lcls && (int32_t)s->node1 == t->bw_node1 &&
	    !(__atomic_load_n(&s->tp, __ATOMIC_RELAXED) & (ND_TP_MIX | ND_TP_SPAN)))
		__atomic_fetch_or(&s->tp, _nd_slab_tp_mix((int32_t)s->node1), __ATOMIC_RELAXED);
}

/* the test's body out of line: refills run in every process, and the
 * code every process touches is bounded (test_init_footprint) */
static __attribute__((noinline, cold)) void few_test(heap_t *h, slab_t *s, const slab_t *b)
{
	if ((int32_t)b->cap - (int32_t)(b->used + b->fbias + b->lost) <= FEW_ROOM && few_many(h, s->cls))
		few_mix(h, s);
}

static inline __attribute__((always_inline)) void few_check(heap_t *h, slab_t *s, const slab_t *b)
{
	if (nd_unlikely(cls_few[s->cls]))
		few_test(h, s, b);
}

void *_nd_slab_swap_pop(heap_t *h, slab_t *s, slab_t *b)
{
	few_check(h, s, b);
	swap_full(h, s, b);
	return refill_pop(b);
}

void *_nd_slab_carve_pop(slab_t *s)
{
	_nd_slab_carve(s);
	return refill_pop(s);
}

void *_nd_slab_park_pop(heap_t *h, slab_t *s)
{
	slab_t *b = s->next;
	ND_ASSERT(h->cur[s->lcls] == s && !s->prev && b && b->free, "s heads its partial list, the next one has objects listed");
	few_check(h, s, b);
	_nd_slab_part_unlink(h, s);
	full_push(h, s);
	return refill_pop(b);
}

uint64_t _nd_slab_slow_count(void) { return _nd_tls->slow; }

void _nd_slab_thread_exit(void)
{
	_nd_thread_exit_now();
}

/* Smallest class >= size whose objects are aligned to align. */
int _nd_slab_class_for(size_t size, size_t align)
{
	if (align <= 16)
		return (int)class_of(size);
	if (align > ND_PAGE_SIZE)
		return -1;
	size = ND_ALIGN_UP(size, align);
	if (size > ND_SLAB_MAX)
		return -1;
	unsigned c = class_of(size);
	if (align > 64) /* a coloured class's objects are 64-aligned only */
		c = cls_al[c];
	for (; c < ND_SLAB_CLASSES; c++)
		if (cls_size[c] % align == 0)
			return (int)c;
	return -1;
}


bool _nd_slab_fits(size_t size, size_t align)
{
	return size <= ND_SLAB_MAX && _nd_slab_class_for(size, align) >= 0;
}


/* ---- free ---------------------------------------------------------------- */

static __attribute__((noreturn, noinline)) void bad_free(const void *p, const slab_t *s, const char *why)
{
	_nd_msg_fatal("free(): invalid pointer %p (%s; slab of %u-byte objects at %p)", p, why,
		      s ? s->size : 0, s ? (void *)s->start : NULL);
}

static __attribute__((noreturn, noinline)) void double_free(const void *p, const slab_t *s)
{
	_nd_msg_fatal("free(): double free of %p (%u-byte object, slab at %p)", p, s->size, (void *)s->start);
}

/* The owner's push left used <= 0. If the caller's record is not h's
 * owner, it passed the owner test with a dead thread's pointer: in a
 * fork's child, glibc gives a new thread the stack (and TCB) of a parent
 * thread the child does not have, whose heaps keep that owner record and
 * their slabs its stamp. Their lists are left alone (they may have been
 * mid-update at the fork; nothing in the child uses them): only the push
 * stays, onto free and used, which no other thread of the child writes
 * (two live threads never share a thread pointer; the owner is gone).
 * Restamping or parking those heaps at the fork would write (and copy)
 * every header of theirs; doing it when the child thread makes its record
 * would still need this test (a free makes none). */
static __attribute__((noinline)) void free_local_slow(heap_t *h, slab_t *s)
{
	ND_ASSERT(is_owner(s), "the owner's free");
	if (nd_unlikely(__atomic_load_n(&h->owner, __ATOMIC_RELAXED) != _nd_tls))
		return;
	if (s->fbias) {
		full_unlink(h, s);
		_nd_slab_part_insert(h, s);
	} else if (s->used == 0 && h->cur[s->lcls] != s) {
		/* empty and not the one being allocated from: kept, or back to
		 * the page level */
		_nd_slab_part_unlink(h, s);
		if (!keep_empty(h, s))
			_nd_slab_release(s);
	}
}

void _nd_slab_free_own(slab_t *s, void **o)
{
	if (_nd_slab_push((_nd_slab_hot_t *)s, o))
		free_local_slow(s->heap, s);
}

/* The borrowed list of class c went past its cap, to n objects: borrow
 * on (up to BW_IDLE times the cap) if s's owner left a quarter of s sent
 * home and not collected: it does not allocate from s (a thread waiting
 * in pthread_join), so objects sent home would only pile up there, while
 * borrowed ones are reused (wl_larson). Reads tfree's line: only past
 * the cap. */
#define BW_IDLE 2
static bool bw_owner_idle(const slab_t *s, uint32_t n, unsigned c)
{
	if (n > cls_bw[c] * BW_IDLE)
		return false;
	uintptr_t v = __atomic_load_n(&s->tfree, __ATOMIC_RELAXED);
	return (uint32_t)(v >> TF_CNT_SHIFT) >= (uint32_t)s->cap / 4u;
}

/* The free of o (marked) by a thread that does not own s and does not
 * borrow it: a leaf while the entry of s's class holds s (a read-only
 * record borrows nothing and its entries hold none). */
static inline void free_home(_nd_thread_t *t, slab_t *s, void **o)
{
	_nd_rfree_t *e = _nd_slab_rf_of(t, (_nd_slab_hot_t *)s);
	if (nd_likely(e->slab == (_nd_slab_hot_t *)s)) {
		o[ND_FO_LINK] = e->head;
		e->head = o;
		ND_ASSERT(e->n < e->max, "a buffer entry holds fewer than max objects");
		if (nd_unlikely(++e->n >= e->max))
			_nd_slab_rf_flush(t, e);
		return;
	}
	_nd_slab_free_remote_new(t, s, o);
}

/* A borrowed list's cap (nd_slab.h, _nd_slab_bw_cap_of) starts at 128
 * KiB of objects above 1 KiB and doubles, up to cls_bw (512 KiB), where
 * the thread's demand outruns it: tcmalloc grows a thread cache's list
 * on its misses. Counted, misses did not tell the lists apart: bench
 * rpat's lists (whose 512 KiB held about as much as its live blocks)
 * and larsonbig's (which need 512 KiB for its time) overflowed as often
 * per malloc of their class (0.2-7.5% at 128 KiB), their half lists
 * taken back by the same thread as often (a half), and larsonbig's
 * more often followed by another overflow than by a miss
 * (docs/benchmarks.md, "Lists sized by demand"). What differs is how
 * soon a list overflows
 * again: medians 2-31 us for larsonbig's lists of 8-16 KiB (in a run 5x
 * slower than its row), 32-127 us for rpat's (a loop of rpat frees and
 * mallocs a few objects of each of ~40 classes). So a list grows
 * when it goes past its cap within BW_FAST of its last time with a
 * refill that found it empty between them (the objects the overflow
 * passed on were wanted: each such pair is two CASes on the node's
 * exchange line, which larsonbig's two cores share), or when the node's
 * exchange of the class is full (what goes home then waits on its slab's
 * remote list while the class's next demand carves). Every overflow of
 * a list above 1 KiB reads the clock (one vDSO call; bw_pace). */
#define BW_FAST 8u /* ns >> 10: about 8 us */
/* A grown list shrinks (halved, down to its class's first cap, and the
 * node's record of the class with it) when it goes past its cap BW_SLOW
 * or more after its last time with no refill that found it empty between
 * them, and its half goes to the exchange: a list that grew by chance (a
 * burst, a fast pair of overflows) or whose demand went away. Else over
 * 60,000 loops of bench rpat its lists crept back to 512 KiB. rpat's
 * overflows came 32-127 us apart, larsonbig's 2-31 us in a run 5x slower
 * than its row; without the refill's test larsonbig's lists of 8-16 KiB
 * halved and grew back ~350 times a run each (docs/benchmarks.md, "Lists
 * sized by demand"). */
#define BW_SLOW 64u /* ns >> 10: about 65 us */

uint64_t (*_nd_slab_bw_clock)(void);

/* List c of t went past its cap: 1 if fast (within BW_FAST of its last
 * time, a refill found it empty between), -1 if slow (BW_SLOW or more,
 * no refill found it empty between), else 0. */
static __attribute__((noinline)) int bw_pace(_nd_thread_t *t, unsigned c)
{
	struct _nd_bw_line *l = &t->bwl[c];
	uint64_t (*clock)(void) = __atomic_load_n(&_nd_slab_bw_clock, __ATOMIC_RELAXED);
	uint16_t now = (uint16_t)((clock ? clock() : _nd_os_now_ns()) >> 10) | 1; /* 0: no overflow yet */
	uint16_t gap = (uint16_t)(now - l->when);
	int pace = !l->when ? 0 : gap < BW_FAST ? l->dried : gap >= BW_SLOW && !l->dried ? -1 : 0; /* dried: when set */
	l->when = now;
	l->dried = 0;
	return pace;
}

/* List c (b) of t: its cap from cap to nc, its count (nd_thread.h: cap +
 * 1 - its objects) with it; the node's record of the class, returned. */
static uint8_t *bw_set_cap(_nd_thread_t *t, unsigned c, _nd_slab_hot_t *b, uint32_t cap, uint32_t nc)
{
	t->bwl[c].cap = (uint8_t)nc;
	b->used += nc - cap; /* modulo 2^32: a shrink subtracts */
	return &_nd_meta_node[t->bw_node1 - 1].bwcap[c];
}

/* List c (b) of t grows from cap (below cls_bw[c]): doubled, and the
 * node's first cap of the class (_nd_slab_bw_cap_start) with it. Keeps
 * the push that went past the old cap. */
static void bw_grow(_nd_thread_t *t, unsigned c, _nd_slab_hot_t *b, uint32_t cap)
{
	uint32_t nc = cap * 2 < cls_bw[c] ? cap * 2 : cls_bw[c];
	uint8_t *h = bw_set_cap(t, c, b, cap, nc);
	if (__atomic_load_n(h, __ATOMIC_RELAXED) < nc)
		__atomic_store_n(h, (uint8_t)nc, __ATOMIC_RELAXED);
}

/* List c (b) of t shrinks from cap (above its first, BW_SLOW): halved,
 * and the node's record of the class halved if above the new cap (a
 * recent largest, not an all-time one). The list may stay longer than
 * its new cap (used <= 0): its next push passes half on. */
static __attribute__((noinline)) void bw_shrink(_nd_thread_t *t, unsigned c, _nd_slab_hot_t *b, uint32_t cap)
{
	uint32_t lo = _nd_slab_cls_bw0[c], nc = cap / 2 > lo ? cap / 2 : lo;
	uint8_t *h = bw_set_cap(t, c, b, cap, nc);
	uint32_t hv = __atomic_load_n(h, __ATOMIC_RELAXED);
	if (hv > nc)
		__atomic_store_n(h, (uint8_t)(hv / 2 > nc ? hv / 2 : nc), __ATOMIC_RELAXED);
}

/* The push onto t's borrowed list of s's class left its used <= 0 (the
 * layout: nd_thread.h, bw): the list was idle (dir[] now pops from it),
 * or it went past the cap: then the object goes back to its slab if t
 * owns it, else home, unless the owner is idle. */
static void bw_pushed(_nd_thread_t *t, slab_t *s)
{
	unsigned c = _nd_slab_tcls((_nd_slab_hot_t *)s);
	_nd_slab_hot_t *b = _nd_thread_bw(t, c);
	uint32_t cap = _nd_slab_bw_cap_of(t, c);
	void **o = b->free;
	if (!o[ND_FO_LINK]) {
		b->used = _nd_slab_bw_cap_start(t, c);
		_nd_slab_dir_class(t, c, b);
		return;
	}
	if (_nd_slab_cls_bw0[c] < cls_bw[c]) { /* a class whose lists size by demand */
		/* grows when its overflows come fast, or the exchange is full;
		 * shrinks when they come slowly */
		int pace = bw_pace(t, c);
		bool grow = cap < cls_bw[c];
		if (!(grow && pace > 0) && _nd_slab_xfer_put(t, c, cap)) {
			if (pace < 0 && cap > _nd_slab_cls_bw0[c])
				bw_shrink(t, c, b, cap);
			return;
		}
		if (grow) {
			bw_grow(t, c, b, cap);
			return;
		}
	} else if (_nd_slab_xfer_put(t, c, cap))
		return;
	bool own = is_owner(s);
	if (!own && bw_owner_idle(s, _nd_slab_bw_len(b, cap), c))
		return;
	b->free = o[ND_FO_LINK];
	b->used++;
	if (own) {
		_nd_slab_free_own(s, o);
		return;
	}
	uint64_t *nrem = &t->cls_remote[c].n; /* counted again when it is sent */
	__atomic_store_n(nrem, *nrem - 1, __ATOMIC_RELAXED);
	free_home(t, s, o);
}

/* The marker says "already free", or check mode: validate, then free
 * (the push marks o). Check mode: o's out bit, any thread's free (a
 * double free found even where a write after free wiped the marker; the
 * bit first: such a free is that, not a corrupted list), then the owner's
 * list head, which o will link to (the one listed object a free can check
 * in O(1): its private list; before the out bits, the owner walked both
 * lists, linear in the slab's free objects). */
static __attribute__((noinline)) void free_checked(slab_t *s, void **o)
{
	if (o[ND_FO_MARK] == marker(s) || (_nd_slab_check && !out_free(s, o)))
		double_free(o, s);
	if (_nd_slab_check && is_owner(s) && s->free)
		check_link(s, s->free, "free");
	_nd_slab_free_push((_nd_slab_hot_t *)s, o);
}

static inline __attribute__((always_inline)) void slab_free(void *p, _nd_pagedesc_t *d)
{
	slab_t *s = (slab_t *)d->user;
	void **o = p;
	/* not the start of an object, or never handed out: one test */
	if (nd_unlikely(_nd_slab_index((const _nd_slab_hot_t *)s, p) >= __atomic_load_n(&s->carved, __ATOMIC_RELAXED)))
		bad_free(p, s, _nd_slab_invalid(p, d));
	if (nd_unlikely((o[ND_FO_MARK] == marker(s)) | _nd_slab_check)) {
		free_checked(s, o);
		return;
	}
	_nd_slab_free_push((_nd_slab_hot_t *)s, o);
}

void _nd_slab_free(void *p, _nd_pagedesc_t *d)
{
	slab_free(p, d);
}

/* The out-of-line parts of malloc.c's inlined free (internal.h). */
void _nd_slab_free_marked(void *p, _nd_slab_hot_t *s)
{
	double_free(p, (const slab_t *)s);
}

/* Every free of a slab that holds a span (nd_slab.h, ND_TP_SPAN): a slot
 * inside a span is not a block (fatal); the owner ends a span here, any
 * other thread sends o home, where the owner's collect ends it. Never
 * borrowed: a span must come home whole. */
static __attribute__((noinline)) void span_free(_nd_thread_t *t, slab_t *s, void **o, uintptr_t tp)
{
	_nd_span_map_t *m = __atomic_load_n(&s->spans, __ATOMIC_ACQUIRE);
	uint32_t i = (uint32_t)_nd_slab_index((const _nd_slab_hot_t *)s, o);
	if (span_bit(m->in, i))
		bad_free(o, s, "inside a block, not its start");
	if (!_nd_slab_owns(tp)) {
		free_home(t, s, o);
		return;
	}
	bool slow = span_bit(m->st, i) && span_release(s, m, i);
	if (_nd_slab_push((_nd_slab_hot_t *)s, o) | slow)
		free_local_slow(s->heap, s);
}

void _nd_slab_free_other(void *p, _nd_slab_hot_t *s)
{
	_nd_thread_t *t = _nd_tls;
	slab_t *sl = (slab_t *)s;
	uintptr_t tp = __atomic_load_n(&s->tp, __ATOMIC_RELAXED);
	if (nd_unlikely(tp & ND_TP_SPAN)) {
		span_free(t, sl, p, tp);
		return;
	}
	if (!_nd_slab_bw_ok(t, s, tp)) {
		free_home(t, sl, p);
		return;
	}
	/* borrowed: from now on every free of s picks its list without a
	 * branch (its owner's own frees come mixed with borrowed ones) */
	if (!(tp & ND_TP_MIX))
		__atomic_compare_exchange_n(&s->tp, &tp, tp | _nd_slab_tp_mix((int32_t)s->node1), false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
	_nd_slab_hot_t *b = _nd_slab_bw_of(t, s);
	uint64_t *nrem = _nd_slab_nrem_of(t, s); /* statistics (a snapshot reads it) */
	__atomic_store_n(nrem, *nrem + 1, __ATOMIC_RELAXED);
	if (nd_unlikely(_nd_slab_push(b, p)))
		bw_pushed(t, sl);
}

void _nd_slab_free_pushed(_nd_slab_hot_t *l, _nd_slab_hot_t *s)
{
	if (l == s) /* the owner's: now empty, or it was full */
		free_local_slow(((slab_t *)s)->heap, (slab_t *)s);
	else
		bw_pushed(_nd_tls, (slab_t *)s);
}


const char *_nd_slab_invalid(const void *p, const _nd_pagedesc_t *d)
{
	const slab_t *s = (const slab_t *)d->user;
	uintptr_t off = (uintptr_t)((const char *)p - s->start);
	uint16_t carved = __atomic_load_n(&s->carved, __ATOMIC_RELAXED);
	uint64_t i = _nd_slab_rotr(off * s->mul); /* _nd_slab_index from off */
	if (nd_likely(i < carved)) {
		const _nd_span_map_t *m = __atomic_load_n(&s->spans, __ATOMIC_ACQUIRE);
		return nd_unlikely(m != NULL) ? span_inner(m, (uint32_t)i) : NULL;
	}
	if (off % s->size != 0)
		return "not the start of an object";
	if (off / s->size >= carved)
		return "never allocated";
	return NULL;
}

bool _nd_slab_freed(const void *p, const _nd_pagedesc_t *d)
{
	return ((void *const *)p)[ND_FO_MARK] == (void *)d->user;
}

int _nd_slab_node(const _nd_pagedesc_t *d)
{
	return ((const slab_t *)d->user)->node;
}

/* p's usable size in s, whose header has had spans (m). Out of line: not
 * in the part of .text every process touches (src/hot_text.ld). */
static __attribute__((noinline)) size_t span_usable(const slab_t *s, const _nd_span_map_t *m, const void *p)
{
	uint32_t i = (uint32_t)_nd_slab_index((const _nd_slab_hot_t *)s, p);
	return span_bit(m->st, i) ? (size_t)span_len(s, m, i) * s->size : s->size;
}

size_t _nd_slab_usable(const void *p, const _nd_pagedesc_t *d)
{
	const slab_t *s = (const slab_t *)d->user;
	const _nd_span_map_t *m = __atomic_load_n(&s->spans, __ATOMIC_ACQUIRE);
	return nd_unlikely(m != NULL) ? span_usable(s, m, p) : s->size;
}


/* ---- init and fork ------------------------------------------------------- */

int _nd_slab_init(void)
{
	unsigned c = 0;
	for (unsigned i = 0; i <= ND_SLAB_MAX / 16; i++) {
		size_t sz = (size_t)i * 16;
		while (cls_size[c] < sz)
			c++;
		cls_tab[i] = (uint8_t)c;
	}
	for (c = 0; c < ND_SLAB_CLASSES; c++) {
		/* at least 16 KiB (one slab map unit) and 8 objects, in a power
		 * of two of pages; classes up to 1 KiB: 32 objects (576..1024 B:
		 * 32 KiB). Every free reads its slab header's first line: with
		 * 16 KiB slabs of 640..1024 B (16-25 objects) wl_larson's 8 MiB
		 * live spread over ~600 headers, and the free missed L1 on the
		 * header 0.67 times per pair (cachegrind). 64 objects (64 KiB)
		 * missed less but held 20% more slab bytes under thread churn
		 * (test_heap_churn under ThreadSanitizer failed its bound) */
		size_t want = 8 * (size_t)cls_size[c];
		if (want < ((size_t)1 << ND_SLAB_UNIT_SHIFT))
			want = (size_t)1 << ND_SLAB_UNIT_SHIFT;
		if (cls_size[c] <= SLAB_BIG_MAX && want < SLAB_BIG_OBJS * (size_t)cls_size[c])
			want = SLAB_BIG_OBJS * (size_t)cls_size[c];
		/* 64-aligned requests (aligned_alloc, ALIGN(64)) of up to 256 B
		 * take only 64, 128, 192, 256: each gathers the requests of 2-4
		 * classes, so holds 2-4 times their live objects, and a class's
		 * refills grow with live objects / objects per slab^2 (every
		 * refill takes the room left in its other slabs). 256 objects
		 * (128: 32 KiB, 192 and 256: 64 KiB, carved a page at a time):
		 * bench/policy.sh's ALIGN(64) rows refill 16.3 -> 1.2 times per
		 * 1000 pairs, malloc's 7.2 -> 2.7 (classes 192 and 256) */
		if (cls_size[c] % 64 == 0 && cls_size[c] <= SLAB_A64_MAX && want < SLAB_A64_OBJS * (size_t)cls_size[c])
			want = SLAB_A64_OBJS * (size_t)cls_size[c];
		size_t np = 1;
		while ((np << ND_PAGE_SHIFT) < want)
			np <<= 1;
		/* the tail of the last page is resident with its objects:
		 * 1280 and 1536 B lost 1 KiB of 16 (6.25%), in 32 KiB 768
		 * and 512 B. wl_footprint's phase 1 (42,000 objects of
		 * 257-2048 B): 202,384 -> 201,496 KiB, its peak; wl_threads'
		 * peak unchanged (4.7 MiB, medians of 15). The classes above
		 * 2 KiB hold too few objects there to matter (and their
		 * doubling would hold 32-512 KiB slabs) */
		size_t used = (np << ND_PAGE_SHIFT) / cls_size[c] * cls_size[c];
		if (cls_size[c] > SLAB_BIG_MAX && cls_size[c] <= TAIL_MAX &&
		    (ND_ALIGN_UP(used, ND_PAGE_SIZE) - used) * TAIL_FRAC > (np << ND_PAGE_SHIFT))
			np <<= 1;
		cls_pages[c] = (uint8_t)np;
		cls_cap[c] = (uint16_t)((np << ND_PAGE_SHIFT) / cls_size[c]);
		bool pow2 = !(cls_size[c] & (cls_size[c] - 1));
		bool col = c < ND_SLAB_SIZED && cls_size[c] > COL_MIN && cls_size[c] <= COL_MAX &&
			   (!pow2 || cls_size[c] >= COL_POW2);
		if (col && pow2)
			cls_cap[c]--; /* a power of two fills its run: an object's room to colour */
		size_t slack = (np << ND_PAGE_SHIFT) - (size_t)cls_cap[c] * cls_size[c];
		if (col && slack >= 64)
			cls_col[c] = (uint8_t)(slack / 64 + 1 > 255 ? 255 : slack / 64 + 1);
		ND_ASSERT(cls_cap[c] >= 7, "every class has 7 objects or more (FULL_BACK)");
		ND_ASSERT(cls_cap[c] < ND_SLAB_CHK_B, "free's check (_nd_slab_live) needs B above every capacity");
		ND_ASSERT(cls_cap[c] <= ND_SLAB_OUT_BITS, "check mode's out bits cover every capacity");
		uint64_t d = cls_size[c] >> __builtin_ctz(cls_size[c]), x = d;
		for (int i = 0; i < 6; i++) /* Newton: each step doubles the correct bits */
			x *= 2 - d * x;
		cls_mul[c] = x << (ND_SLAB_ROT - __builtin_ctz(cls_size[c])); /* internal.h: _nd_slab_index */
		/* borrowed: up to 64 objects and 32 KiB (512 KiB above 1 KiB),
		 * at least 2. At 16 KiB wl_larson's lists of 576..1024 B went
		 * to the exchange every 8-14 frees; above 1 KiB 16 KiB was 2-12
		 * objects: a thread freeing another's mid-size objects passed
		 * most of them on (exchange, home) and its own mallocs took cold
		 * ones. 128 KiB (8-51 objects of 2.5-16 KiB) was still below
		 * how far a thread's count of live objects of one class drifts
		 * (bench larsonbig: about +-12 of ~170 a class): the lists went
		 * to the exchange every few frees and ran dry as often, and on
		 * two cores each put and take moved the class's exchange line
		 * (shared by the node's threads) between the cores
		 * (docs/benchmarks.md, "larsonbig: the caps") */
		uint32_t nb = (cls_size[c] <= SLAB_BIG_MAX ? 32768u : 524288u) / cls_size[c];
		cls_bw[c] = nb > 64 ? 64 : nb < 2 ? 2 : nb;
		cls_few[c] = c < ND_SLAB_SIZED && cls_size[c] > SLAB_BIG_MAX;
		/* a list's first cap: 128 KiB above 1 KiB, grown to cls_bw
		 * where its demand asks (bw_pace) */
		nb = (cls_size[c] <= SLAB_BIG_MAX ? 32768u : 131072u) / cls_size[c];
		_nd_slab_cls_bw0[c] = (uint8_t)(nb > 64 ? 64 : nb < 2 ? 2 : nb);
		/* lenders: the next classes up to 3/2 of the size; none for a
		 * power-of-two class (its objects keep their alignment), none of
		 * the twins (smaller than the classes before them) */
		for (unsigned k = c + 1; (cls_size[c] & (cls_size[c] - 1)) && k < ND_SLAB_SIZED &&
					  cls_size[k] * 2 <= cls_size[c] * 3;
		     k++)
			cls_lend[c]++;
		unsigned lo = c ? cls_size[c - 1] / 16 + 1 : 0, hi = cls_size[c] / 16;
		cls_dlo[c] = (uint8_t)(cls_size[c] <= ND_SLAB_DIR_MAX ? lo : 0);
		cls_dn[c] = (uint8_t)(cls_size[c] <= ND_SLAB_DIR_MAX ? hi - lo + 1 : 0);
		ND_ASSERT(cls_dn[c] <= 8 && (cls_dn[c] & (cls_dn[c] - 1)) == 0, "a class has 0, 1, 2, 4 or 8 dir[] entries");
	}
	for (c = 0; c < ND_SLAB_CLASSES; c++) {
		for (unsigned k = 0; k < ND_SLAB_CLASSES; k++)
			if (cls_pages[k] == cls_pages[c])
				cls_same[c] |= (uint64_t)1 << k;
		if (c < ND_SLAB_SIZED && cls_size[c] <= SLAB_BIG_MAX && !cls_col[c])
			cls_any |= (uint64_t)1 << c;
		/* a coloured class's objects are 64-aligned only: an alignment
		 * above 64 takes the class of the next power of two that is not
		 * coloured (4096, or the twin of 8192 or 16384; the next class
		 * not coloured, 20480, would hold 16 KiB for 4 KiB) */
		cls_al[c] = (uint8_t)c;
		/* a twin's entries in the thread record are its size's class's */
		cls_tc[c] = (uint8_t)c;
		for (unsigned k = 0; c >= ND_SLAB_SIZED && k < ND_SLAB_SIZED; k++)
			if (cls_size[k] == cls_size[c])
				cls_tc[c] = (uint8_t)k;
		ND_ASSERT(cls_tc[c] < ND_SLAB_SIZED, "every class has entries in the thread record");
		if (cls_col[c]) {
			uint32_t p2 = 1u << (32 - __builtin_clz(cls_size[c] - 1));
			for (unsigned k = 0; k < ND_SLAB_CLASSES; k++)
				if (cls_size[k] == p2 && !cls_col[k])
					cls_al[c] = (uint8_t)k;
		}
		ND_ASSERT(!cls_col[cls_al[c]] && cls_size[cls_al[c]] >= cls_size[c],
			  "an alignment above 64 takes a class that is not coloured");
	}
	_nd_slab_check = _nd_opt_int(ND_OPT_CHECK) != 0;
	_nd_meta_map_init();
	return 0;
}

