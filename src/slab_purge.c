// SPDX-License-Identifier: MIT
/*
 * Free pages inside slabs back to the OS (issue 11, footprint).
 *
 * A slab stays while one object of it is out, and its free objects stay
 * committed: after a program frees most of its objects at random, a slab
 * with a few live ones keeps whole pages that hold nothing but free
 * objects (most pages of classes >= 1 KiB, every page of a free object of
 * 8 KiB or more), and that memory serves only its own class. Measured on
 * bench wl_footprint (90% random frees, then a refill of another size
 * mix): 38 MiB of such pages in the slabs, the peak 1.40x glibc's.
 *
 * The pass over one partial slab (owner of its heap only):
 *  - a page is purgeable when it lies below the carved end and no object
 *    out overlaps it (out: handed out, or on the remote list: another
 *    thread may be writing its link);
 *  - the free objects that start in a purgeable page leave the free list
 *    (their links would read zero), their markers cleared first so that
 *    the page holds no marker whatever madvise did; then one madvise per
 *    stretch of adjacent pages; a page whose call failed keeps its objects;
 *  - s->purged marks the pages given back; every object that starts in a
 *    marked page is off the list (withheld), and so is a free object of a
 *    page at most that starts in a kept page and ends in a marked one
 *    (s->pstr, by its end page; its marker stays, in the kept page):
 *    handed out, it would fault that page in for its tail. wl_footprint:
 *    of the pages purged in its 1280..1792 B slabs, 458 came back for the
 *    tails of objects its refill took (lent or not); peak RSS 217,304 ->
 *    216,244 KiB, page faults 58,764 -> 58,515. The free list is rebuilt
 *    in address order from what stays.
 * Carving never reaches a marked page (marked pages lie below the carved
 * end), so the objects starting in it are exactly the withheld ones.
 * _nd_slab_unpurge runs when the free list is empty (heap_alloc, before
 * carving or parking the slab full): the lowest marked page's objects go
 * back on the list (their pages fault in again as zero pages), with the
 * pstr object that ends in that page (those of the page that end in a
 * marked one wait in pstr in turn). Only when
 * no other partial slab of the class follows: else the slab parks full
 * (its withheld objects are its room) and comes back, by unpark_local,
 * once the class has nothing listed, so the free objects in resident
 * pages go first. wl_footprint (its refill fills about a third of the
 * free objects of 16..256 B): peak RSS 217,948 -> 217,304 KiB, page
 * faults 58,933 -> 58,764. A slab released to the page level goes back
 * dirty as any other: the page level never trusts dirty pages to read
 * zero (calloc clears slab objects itself).
 *
 * Units: in a fully carved slab of 2 units or more (16 KiB, the slab
 * map's), a unit whose pages are all purgeable goes back to the page
 * level instead, dirty, as a free of it would (_nd_page_free_inner cuts
 * it out of the run; the pieces left are runs, each given back when the
 * slab is released): a slab of any class takes those pages without a
 * fault, where a purged page faults in again. s->gone marks them (no
 * longer the slab's: map entries and descriptors cleared first); the free
 * objects that overlap them are never listed again, and s->lost counts
 * those, so that a full slab's room is cap - lost (heap.c's full_best:
 * a slab whose room is all lost would be unparked forever). Such a slab
 * is not kept when it empties. wl_footprint (300,000 objects, 90% freed,
 * then a refill of 32..1024 B): the refill's page faults 11,017 ->
 * 7,658 (of the 19.4 MiB the refill's passes purged, 13.8 go back as
 * units, most of the classes above 2 KiB), the same peak.
 *
 * When: the process grows. When a heap takes a new slab and the slab's
 * node has committed max(PASS_MIN, 1/8 of the pages the heap's last pass
 * walked) more pages since that pass, the heap's partial slabs whose free
 * count grew since their last pass (s->pfree) are purged: a program that
 * only allocates pays a list walk per pass, no page work. A heap that
 * takes slabs from the page level's dirty free pages (steady churn, e.g.
 * threads that come and go: bench wl_threads) does not pass at all: the
 * pages it would give back were faulted in again at once (with a pass
 * per 1 MiB of new slabs: 2.5x the page faults, 2% more instructions,
 * no lower peak).
 *
 * A thread's exit (_nd_slab_purge_park, below): the classes above 2 KiB,
 * all but the first two free objects of each partial slab, no units.
 *
 * Limits: a double free of a withheld object is not reported (its marker
 * is gone); check mode (NODALLOC_CHECK=1), which must report every double
 * free, purges nothing. Committed statistics keep counting the pages
 * until the slab's run is freed and purged by the page level.
 */
#include <string.h>

#include "internal.h"

typedef _nd_slab_t slab_t;
typedef _nd_heap_t heap_t;

#define PASS_MIN 256 /* pages committed between two passes of a heap, at least */
#define MAX_CAP 1024 /* objects per slab (class 16 in 16 KiB) */
#define MAX_PAGES 64 /* pages per slab (class 32 KiB: 8 objects) */
/* A thread's exit (_nd_slab_purge_park): the classes above PARK_MIN
 * bytes, all but the first PARK_KEEP free objects of each partial slab. */
#define PARK_MIN 2048u
#define PARK_KEEP 2u

static inline uint64_t obj_of(const slab_t *s, const void *p)
{
	return _nd_slab_index((const _nd_slab_hot_t *)s, p);
}

static inline char *obj_at(const slab_t *s, uint32_t k)
{
	return s->start + (size_t)k * s->size;
}

/* Pages are counted from the run's start (_nd_slab_run), objects from
 * s->start: a coloured slab's first object is col(s) bytes into its run
 * (slab.c, colour_of). */
static inline size_t col(const slab_t *s)
{
	return (size_t)(s->start - _nd_slab_run(s));
}
/* Object k's first byte, from the run's start. */
static inline size_t obj_off(const slab_t *s, uint32_t k)
{
	return col(s) + (size_t)k * s->size;
}

/* First object that starts in page p (may be >= carved). */
static inline uint32_t first_in_page(const slab_t *s, unsigned p)
{
	size_t b = (size_t)p << ND_PAGE_SHIFT, c = col(s);
	return b <= c ? 0 : (uint32_t)((b - c + s->size - 1) / s->size);
}

/* After object k, out and ending in page lp: the object that holds the
 * first byte of page lp + 1 (the ones between lie in pages k already
 * keeps: at 10% use a page of 256 B objects is decided by its first
 * object out, not by its 16 markers). */
static inline uint32_t past_page(const slab_t *s, uint32_t k, unsigned lp)
{
	uint32_t n = (uint32_t)((((size_t)(lp + 1) << ND_PAGE_SHIFT) - col(s)) / s->size);
	return n > k + 1 ? n : k + 1;
}

#define UNIT (1u << (ND_SLAB_UNIT_SHIFT - ND_PAGE_SHIFT))

/* Bits p..q of a page mask (p <= q <= 63). */
static inline uint64_t page_span(unsigned p, unsigned q)
{
	return (q - p == 63 ? ~(uint64_t)0 : ((uint64_t)1 << (q - p + 1)) - 1) << p;
}

/* Does mask have a bit in pages [hp, lp]? */
static inline bool overlaps(uint64_t mask, unsigned hp, unsigned lp)
{
	if (!mask || hp >= 64)
		return false;
	return (mask & page_span(hp, lp > 63 ? 63 : lp)) != 0;
}

/* Does object k of s overlap a page of mask? */
static inline bool obj_overlaps(const slab_t *s, uint64_t mask, uint32_t k)
{
	size_t b = obj_off(s, k);
	return overlaps(mask, (unsigned)(b >> ND_PAGE_SHIFT), (unsigned)((b + s->size - 1) >> ND_PAGE_SHIFT));
}

/* Objects of a page at most span two pages: the page object k ends in
 * when it starts in the one before, else 0 (never a start page). */
static inline unsigned straddle_end(const slab_t *s, uint32_t k)
{
	size_t b = obj_off(s, k);
	unsigned hp = (unsigned)(b >> ND_PAGE_SHIFT), lp = (unsigned)((b + s->size - 1) >> ND_PAGE_SHIFT);
	return s->size <= ND_PAGE_SIZE && lp != hp && lp < 64 ? lp : 0;
}

/* Object k is the free one s->pstr withholds: it starts in a kept page
 * and ends in a marked one. */
static inline bool in_pstr(const slab_t *s, uint32_t k)
{
	unsigned e = straddle_end(s, k);
	return e && (s->pstr >> e & 1);
}

/* The lowest stretch (run of adjacent pages) of m != 0: pages *p..*q. */
static inline uint64_t first_stretch(uint64_t m, unsigned *p, unsigned *q)
{
	unsigned a = (unsigned)__builtin_ctzll(m), b = a;
	while (b + 1 < 64 && (m >> (b + 1) & 1))
		b++;
	*p = a;
	*q = b;
	return page_span(a, b);
}

/* The pages of units (whole units of s, no object out in them) go back
 * to the page level, dirty: the next run there takes them without a
 * fault. Each stretch is cut out of the piece of s's run that holds it
 * (s->gone: the pages before are another piece's). Returns the pages
 * given back (a slab in the mixed slot keeps them). */
static uint64_t give_units(slab_t *s, uint64_t units)
{
	uint64_t given = 0;
	while (units) {
		unsigned p, q;
		uint64_t span = first_stretch(units, &p, &q);
		units &= ~span;
		uint64_t below = s->gone & (((uint64_t)1 << p) - 1);
		unsigned head = below ? 64 - (unsigned)__builtin_clzll(below) : 0;
		/* no object out there: no free can look these pages up meanwhile */
		_nd_slab_set_pages(s, p, q + 1, ND_USE_NONE);
		if (_nd_page_free_inner(_nd_slab_run(s) + ((size_t)head << ND_PAGE_SHIFT), p - head, q - p + 1) == 0) {
			__atomic_store_n(&s->gone, s->gone | span, __ATOMIC_RELAXED); /* statistics read it */
			s->purged &= ~span;
			s->pstr &= ~span & ~(span << 1); /* their objects are lost now */
			given |= span;
		} else {
			_nd_slab_set_pages(s, p, q + 1, ND_USE_SLAB);
		}
	}
	if (given) {
		uint32_t lost = 0;
		for (uint32_t k = 0; k < s->cap; k++)
			lost += obj_overlaps(s, s->gone, k);
		__atomic_store_n(&s->lost, (uint16_t)lost, __ATOMIC_RELAXED);
	}
	return given;
}

/* madvise [first, last] pages of s; false if the call failed. */
static bool give_back(slab_t *s, unsigned first, unsigned last)
{
	return _nd_os_madvise(_nd_slab_run(s) + ((size_t)first << ND_PAGE_SHIFT),
			      (size_t)(last - first + 1) << ND_PAGE_SHIFT, _nd_page_g.advice) == 0;
}

/* Pages of s below end that may hold no object out: those no object
 * without its free marker overlaps (objects starting in marked pages are
 * skipped: withheld, and reading them would fault in a zero page). A free
 * object on the private list always carries the marker, so a page this
 * drops is not purgeable; one it keeps may still hold an object out
 * (marked: on a remote list or a borrowed one): purge_slab decides from
 * the free list. A hint read without synchronisation: another thread may
 * be writing an object out (its owner program, a remote free marking
 * it); any value read only keeps or drops a page from the hint. */
__attribute__((no_sanitize_thread)) static uint64_t maybe_free(const slab_t *s, unsigned below)
{
	uint64_t maybe = below >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << below) - 1;
	uint32_t size = s->size;
	for (uint32_t k = 0; k < s->carved;) {
		size_t b = obj_off(s, k);
		unsigned hp = (unsigned)(b >> ND_PAGE_SHIFT), lp = (unsigned)((b + size - 1) >> ND_PAGE_SHIFT);
		/* lost (overlaps a unit given back): no marker, never out */
		if ((s->purged >> hp & 1) || overlaps(s->gone, hp, lp) ||
		    ((void *const *)obj_at(s, k))[ND_FO_MARK] == (const void *)s) {
			k++;
			continue;
		}
		for (unsigned p = hp; p <= lp && p < 64; p++)
			maybe &= ~((uint64_t)1 << p);
		k = past_page(s, k, lp);
	}
	return maybe;
}

/* cand without its stretches (runs of adjacent pages) shorter than min.
 * Out of line, cold: only lends call it, and purge_slab is in the text
 * every process runs (src/hot_text.ld; test_init_footprint). */
static __attribute__((noinline, cold)) uint64_t long_stretches(uint64_t cand, unsigned min)
{
	uint64_t keep = 0;
	while (cand) {
		unsigned p, q;
		uint64_t span = first_stretch(cand, &p, &q);
		cand &= ~span;
		if (q - p + 1 >= min)
			keep |= span;
	}
	return keep;
}

/* The pass over one slab (see the top). keep: a thread's exit
 * (PARK_KEEP): the first keep objects of the free list (the next ones
 * handed out) count as out, their pages stay, and no unit goes to the
 * page level (it would stay resident there, dirty, until an exit trim;
 * madvised, the slab keeps its room for the adopter). min: the shortest
 * stretch of purgeable pages that goes (a lend's: LEND_MIN; 1: all).
 * Returns pages purged. */
static unsigned purge_slab(slab_t *s, unsigned keep, unsigned min)
{
	ND_ASSERT(s->fbias == 0 && s->npages <= MAX_PAGES && s->cap <= MAX_CAP, "a partial slab within the pass's bounds");
	ND_ASSERT(keep <= PARK_KEEP, "keep: 0 or an exit's");
	uint32_t carved = s->carved, size = s->size;
	size_t end = carved == s->cap ? (size_t)s->npages << ND_PAGE_SHIFT : obj_off(s, carved);
	unsigned below = (unsigned)(end >> ND_PAGE_SHIFT);
	/* Most slabs of small objects keep an object out in every page: an
	 * address-order scan of the markers says so without walking the free
	 * list, whose order after random frees costs a cache miss per object
	 * (and when the walk follows, the scan brought its lines in). */
	if (!(maybe_free(s, below) & ~s->purged & ~s->gone)) {
		s->pfree = (uint16_t)(carved - s->used);
		return 0;
	}
	uint64_t fr[MAX_CAP / 64] = { 0 };
	uint32_t kept[PARK_KEEP];
	unsigned nk = 0;
	for (void **x = s->free; x; x = ND_FO_NEXT(x)) {
		_nd_slab_check_link(s, x, "malloc");
		uint64_t k = obj_of(s, x);
		fr[k / 64] |= (uint64_t)1 << (k % 64);
		if (nk < keep)
			kept[nk++] = (uint32_t)k;
	}
	/* the kept ones look out to the page scan below, listed again after it */
	for (unsigned i = 0; i < nk; i++)
		fr[kept[i] / 64] &= ~((uint64_t)1 << (kept[i] % 64));
	/* pages below the carved end (the slab's end once all is carved),
	 * minus those an object out overlaps (withheld objects count as
	 * free: their pages are marked) */
	uint64_t cand = (below >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << below) - 1) & ~s->gone;
	for (uint32_t k = 0; k < carved;) {
		size_t b = obj_off(s, k);
		unsigned hp = (unsigned)(b >> ND_PAGE_SHIFT);
		unsigned lp = (unsigned)((b + size - 1) >> ND_PAGE_SHIFT);
		if ((fr[k / 64] >> (k % 64) & 1) || (s->purged >> hp & 1) || overlaps(s->gone, hp, lp) ||
		    in_pstr(s, k)) { /* free, or withheld */
			k++;
			continue;
		}
		for (unsigned p = hp; p <= lp && p < 64; p++)
			cand &= ~((uint64_t)1 << p);
		k = past_page(s, k, lp);
	}
	for (unsigned i = 0; i < nk; i++)
		fr[kept[i] / 64] |= (uint64_t)1 << (kept[i] % 64);
	/* before anything depends on cand: a short stretch's objects stay
	 * listed, marked (a unit, UNIT pages, is no short stretch) */
	if (min > 1)
		cand = long_stretches(cand, min);
	/* marked pages were given back already (an object that starts in an
	 * earlier page and was used since may have touched one again: it
	 * goes again with its stretch when the stretch has a new page) */
	uint64_t fresh = cand & ~s->purged;
	/* whole units no object out overlaps go back to the page level
	 * (dirty: another slab takes them without a fault) */
	uint64_t units = 0;
	if (!keep && s->npages >= 2 * UNIT && carved == s->cap)
		for (unsigned u = 0; u < s->npages / UNIT; u++) {
			uint64_t m = (((uint64_t)1 << UNIT) - 1) << (u * UNIT);
			if ((cand & m) == m)
				units |= m;
		}
	if (!fresh && !units) {
		s->pfree = (uint16_t)(carved - s->used);
		return 0;
	}
	/* markers of the objects that will be withheld: cleared before the
	 * pages go (madvise may keep the contents: MADV_FREE, failure) */
	for (uint32_t k = 0; k < carved; k++)
		if (((fr[k / 64] >> (k % 64) & 1) || in_pstr(s, k)) && (cand >> (obj_off(s, k) >> ND_PAGE_SHIFT) & 1))
			((void **)obj_at(s, k))[ND_FO_MARK] = NULL;
	/* free objects that start in a kept page but overlap a unit given back */
	if (units)
		for (uint32_t k = 0; k < carved; k++)
			if (((fr[k / 64] >> (k % 64) & 1) || in_pstr(s, k)) && obj_overlaps(s, units, k))
				((void **)obj_at(s, k))[ND_FO_MARK] = NULL;
	units = give_units(s, units);
	cand &= ~units;
	fresh &= ~units;
	/* one madvise per stretch of uncovered pages that holds a new one */
	unsigned purged = 0;
	for (unsigned p = 0; p < 64; p++) {
		if (!(cand >> p & 1))
			continue;
		unsigned q = p;
		while (q + 1 < 64 && (cand >> (q + 1) & 1))
			q++;
		uint64_t span = page_span(p, q);
		if (fresh & span) {
			if (give_back(s, p, q))
				purged += (unsigned)__builtin_popcountll(fresh & span);
			else
				cand &= ~(fresh & span); /* kept: their objects stay listed */
		}
		p = q;
	}
	s->purged |= cand;
	/* a withheld straddler whose first page went too is withheld as the
	 * objects that start there are */
	s->pstr &= ~(s->purged << 1);
	/* the free list again, in address order, without the withheld: those
	 * in marked pages, and those that end in one (marked free, in pstr) */
	void *head = NULL;
	for (uint32_t k = carved; k-- > 0;) {
		if (!(fr[k / 64] >> (k % 64) & 1))
			continue;
		void **o = (void **)obj_at(s, k);
		if (s->purged >> (obj_off(s, k) >> ND_PAGE_SHIFT) & 1 || obj_overlaps(s, s->gone, k))
			continue;
		unsigned e = straddle_end(s, k);
		if (e && (s->purged >> e & 1)) {
			s->pstr |= (uint64_t)1 << e;
			continue;
		}
		o[ND_FO_LINK] = head;
		o[ND_FO_MARK] = (void *)s;
		head = o;
	}
	s->free = head;
	s->pfree = (uint16_t)(carved - s->used);
	return purged;
}

bool _nd_slab_unpurge(slab_t *s)
{
	ND_ASSERT(s->free == NULL, "withheld objects come back on an empty free list");
	if (s->lcls != s->cls) /* lent (_nd_slab_lend): they wait for their own class */
		return false;
	while (s->purged) {
		unsigned p = (unsigned)__builtin_ctzll(s->purged);
		s->purged &= s->purged - 1;
		uint32_t k = first_in_page(s, p), stop = first_in_page(s, p + 1);
		if (stop > s->carved)
			stop = s->carved;
		void *head = NULL;
		for (uint32_t j = stop; j-- > k;) {
			if (obj_overlaps(s, s->gone, j))
				continue;
			void **o = (void **)obj_at(s, j);
			o[ND_FO_MARK] = (void *)s;
			unsigned e = straddle_end(s, j);
			if (e && (s->purged >> e & 1)) { /* ends in a marked page: waits for it */
				s->pstr |= (uint64_t)1 << e;
				continue;
			}
			o[ND_FO_LINK] = head;
			head = o;
		}
		if (s->pstr >> p & 1) { /* the free object that ends in p */
			s->pstr &= ~((uint64_t)1 << p);
			void **o = (void **)obj_at(s, k - 1);
			o[ND_FO_LINK] = head;
			o[ND_FO_MARK] = (void *)s;
			head = o;
		}
		if (head) {
			/* the pages that only the last of them covers go too (no
			 * object starts there: nothing is withheld in them) */
			unsigned pe = (unsigned)((obj_off(s, stop) - 1) >> ND_PAGE_SHIFT);
			for (unsigned q = p + 1; q <= pe && q < 64; q++)
				if (first_in_page(s, q) == first_in_page(s, q + 1))
					s->purged &= ~((uint64_t)1 << q);
			s->free = head;
			return true;
		}
	}
	return false;
}

/* A lend gives back stretches of LEND_MIN pages or more: a shorter one
 * (1-2 pages beside an object out) costs a call per page or two, and its
 * free objects, lent, fill it instead of a fresh page the refill would
 * fault in. wl_footprint (300,000)'s refill (all stretches before):
 * madvise calls 2,178 -> 788, page faults 3,365 -> 2,202, its RSS
 * 198,552 -> 201,672 KiB, under phase 1's peak (201,600); LEND_MIN 2:
 * 1,353 calls, 2,852 faults, 199,780 KiB; 4: 364, 1,783, 205,212 (the
 * peak); no purge: 169, 1,786, 206,984.
 * Not for a class whose withheld objects came back (h->unp, set by
 * heap.c's unpurge, kept for the heap's life): under steady churn over
 * many classes (sizes 8 B..32 KiB, random slots replaced) each lend
 * purged its donor and the donor's class faulted the pages in again a
 * moment later: 1 thread, 3M replacements of 4096 slots, 17.1k -> 4.8k
 * page faults, peak RSS 22.8 -> 17.1 MiB (medians of 7); wl_footprint's
 * donors (above 1 KiB, never allocated again) keep theirs, its peak the
 * same. */
#define LEND_MIN 3u
_Static_assert(LEND_MIN <= UNIT, "a unit's pages are a stretch purge_slab keeps");

bool _nd_slab_purge_lent(heap_t *h, slab_t *s)
{
	uint32_t f = (uint32_t)s->carved - s->used;
	if (!_nd_slab_check && f > s->pfree && (size_t)f * s->size >= ND_PAGE_SIZE &&
	    !(h->unp >> s->cls & 1))
		purge_slab(s, 0, LEND_MIN);
	return s->free != NULL;
}

/* Partial slabs with more free objects than at their last pass, but
 * those of the classes spans took slots of since then (h->spbusy): spans
 * look at a class's first slabs only, so their donors keep coming while
 * the class's own mallocs move its list on; a page purged there faults in
 * again when its withheld objects come back (_nd_slab_unpurge).
 * wl_footprint (300,000)'s refill: 512 of its 2,676 madvise calls (598
 * pages of 80-256 B slabs) and 529 page faults (3,814 -> 3,285), its RSS
 * +280 KiB; leaving only the first 4, 8 or 16 slabs of such a class
 * saved 4-73 faults. */
/* always inlined: pass's copy sits in the hot text (src/hot_text.ld), a
 * function of its own would be cold code every pass runs */
static inline __attribute__((always_inline)) size_t purge_heap(heap_t *h, uint64_t *walked)
{
	size_t n = 0;
	uint64_t w = 0;
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		bool busy = h->spbusy >> c & 1;
		for (slab_t *s = h->cur[c]; s && s != &_nd_slab_empty; s = s->next) {
			w += s->npages;
			if (busy)
				continue;
			uint32_t f = (uint32_t)s->carved - s->used;
			if (f <= s->pfree || (size_t)f * s->size < ND_PAGE_SIZE)
				continue;
			n += purge_slab(s, 0, 1);
		}
	}
	*walked = w;
	return n;
}

/* Pages committed on node (the page level's count), 0 if unknown. */
static uint64_t committed(int node)
{
	if (node < 0 || node >= _nd_page_g.node_limit)
		return 0;
	return __atomic_load_n(&_nd_page_g.arenas[node].committed, __ATOMIC_RELAXED);
}

static size_t pass(heap_t *h, int node)
{
	if (_nd_slab_check)
		return 0;
	uint64_t w;
	_nd_slab_release_empty(h); /* the heap grows: its kept slabs were of other page counts */
	size_t n = purge_heap(h, &w);
	h->spbusy = 0;
	h->pnext = committed(node) + (w / 8 > PASS_MIN ? w / 8 : PASS_MIN);
	return n;
}

size_t _nd_slab_purge_heap(heap_t *h)
{
	return pass(h, h->node);
}

/* malloc_trim's (owner): the free pages of every partial slab, the
 * classes spans keep busy too (a pass leaves those, and spans that take
 * slots between every two passes left them to the heap's end: audit14);
 * pnext stays, so the passes keep their pace. */
size_t _nd_slab_purge_all(heap_t *h)
{
	if (_nd_slab_check)
		return 0;
	uint64_t w;
	h->spbusy = 0;
	return purge_heap(h, &w);
}

/* A thread's exit, before its heap parks (issue 11, wl_threads' peak
 * RSS): each heap keeps, per class, the pages of the most objects that
 * class ever had out at once in any of the threads that owned it (free
 * objects are reused first in, last out), and a class above 2 KiB holds
 * few objects a thread, so that high-water mark sits far above what one
 * thread uses: wl_threads' peak was 1.21x glibc's (glibc reuses a free
 * chunk for any size). Here the free pages of those classes' partial
 * slabs go back to the OS but for the first PARK_KEEP free objects of
 * each (the adopter's first takes; the others come back, as zero pages,
 * when the slab's free list runs dry: _nd_slab_unpurge), so the adopter's
 * own uses set the mark again. wl_threads (`nd_measure -x`, medians of
 * 15 interleaved runs): peak 6,004 -> 5,072 KiB (glibc 4,856), minor
 * faults 1,425 -> 3,181, time 0.046 -> 0.056 s (glibc 0.082); keeping
 * none 4,952 KiB, 6.7k faults; 3, 5,296 KiB, 2.1k; the classes above
 * 4 KiB only, as above 2 KiB (docs/arenas.md, "Thread-exit trims").
 * Classes of at most 2 KiB keep their free pages: their slabs hold many
 * objects a thread, which the next owner reuses (purging every class:
 * 9-10k faults). Owner of h (the exiting thread); off in check mode. */
size_t _nd_slab_purge_park(heap_t *h)
{
	if (_nd_slab_check)
		return 0;
	size_t n = 0;
	for (unsigned c = 0; c < ND_SLAB_CLASSES; c++) {
		if (_nd_slab_class_size(c) <= PARK_MIN)
			continue;
		for (slab_t *s = h->cur[c]; s && s != &_nd_slab_empty; s = s->next) {
			uint32_t f = (uint32_t)s->carved - s->used;
			if (f > PARK_KEEP && (size_t)(f - PARK_KEEP) * s->size >= ND_PAGE_SIZE)
				n += purge_slab(s, PARK_KEEP, 1);
		}
	}
	return n;
}

void _nd_slab_purge_taken(heap_t *h, const slab_t *s)
{
	uint64_t c = committed(s->node);
	if (c && c >= h->pnext)
		pass(h, s->node);
}
