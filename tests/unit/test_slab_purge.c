// SPDX-License-Identifier: MIT
/* Free pages inside partial slabs go back to the OS (issue 11, slab_purge.c):
 * the pages are really gone (mincore, RSS), a live neighbour's contents
 * survive, the withheld objects come back (each once, never a live one),
 * calloc still returns zeros, withheld objects wait while other slabs of
 * their class have objects listed, a pass leaves the classes spans take
 * slots of, and a heap's pass comes by itself when the process grows. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

static _nd_slab_t *slab_of(const void *p)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	return d && d->use == ND_USE_SLAB ? (_nd_slab_t *)d->user : NULL;
}

static bool resident(const void *p)
{
	unsigned char v = 0;
	CHECK(mincore((void *)((uintptr_t)p & ~(uintptr_t)4095), 4096, &v) == 0);
	return v & 1;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, res = 0;
	CHECK(f && fscanf(f, "%ld %ld", &size, &res) == 2);
	if (f)
		fclose(f);
	return res * 4;
}

static void fill(void *p, size_t n, int v) { memset(p, v, n); }

static bool holds(const void *p, size_t n, int v)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		if (c[i] != (unsigned char)v)
			return false;
	return true;
}

/* Fills whole slabs of size's class: returns the objects of one slab that
 * this call filled entirely, in address order (obj[0 .. cap)). */
static _nd_slab_t *full_slab(size_t size, void **obj, void **extra, int nextra)
{
	for (int i = 0; i < nextra; i++)
		extra[i] = malloc(size);
	/* a slab in the middle holds only these objects */
	_nd_slab_t *s = slab_of(extra[nextra / 2]);
	int n = 0;
	for (int i = 0; i < nextra; i++)
		if (slab_of(extra[i]) == s)
			n++;
	CHECK(s && n == s->cap, "slab has %d of our objects, cap %u", n, s ? s->cap : 0);
	for (unsigned k = 0; k < s->cap; k++)
		obj[k] = s->start + (size_t)k * s->size;
	return s;
}

/* A slab of 20 KiB objects (5 pages each, 12 in a 64-page slab), every
 * object stamped, all but the first and last freed (pages 0-4 and 55-59
 * out). Whole 16 KiB units no object out overlaps (pages 8-51, and the
 * tail 60-63) go back to the page level, dirty, and a slab of another
 * class takes them without a fault; the other pages of free objects
 * (5-7, 52-54) are purged. The free objects all overlap pages the slab no
 * longer has: they never come back. Freeing the last objects gives the
 * pieces left back. */
static void big_objects(void)
{
	void *obj[64], *extra[48];
	_nd_slab_t *s = full_slab(20000, obj, extra, 48);
	CHECK_EQ(s->size, 20480);
	CHECK_EQ(s->npages, 64);
	for (unsigned k = 0; k < s->cap; k++)
		fill(obj[k], 20000, (int)k + 1);
	for (unsigned k = 1; k + 1 < s->cap; k++)
		free(obj[k]);
	_nd_arena_t *a = &_nd_page_g.arenas[s->node];
	uint64_t dirty = __atomic_load_n(&a->bd.dirty_free, __ATOMIC_RELAXED);
	size_t got = _nd_slab_purge_heap(s->heap);
	uint64_t units = ((((uint64_t)1 << 44) - 1) << 8) | ((uint64_t)0xf << 60), purged = 0xe0ull | (0x7ull << 52);
	CHECK(s->gone == units, "pages given back %#llx", (unsigned long long)s->gone);
	CHECK(s->purged == purged, "pages purged %#llx", (unsigned long long)s->purged);
	CHECK_EQ(got, 6);
	CHECK(__atomic_load_n(&a->bd.dirty_free, __ATOMIC_RELAXED) >= dirty + 48, "dirty free pages %llu -> %llu",
	      (unsigned long long)dirty, (unsigned long long)a->bd.dirty_free);
	for (unsigned pg = 0; pg < 64; pg++) {
		char *p = s->start + (size_t)pg * 4096;
		if (units >> pg & 1)
			CHECK(_nd_page_desc(p)->use == ND_USE_NONE && slab_of(p) == NULL, "page %u still the slab's", pg);
		else
			CHECK(slab_of(p) == s, "page %u", pg);
		if (purged >> pg & 1)
			CHECK(!resident(p), "page %u resident", pg);
	}
	char err[256];
	CHECK(_nd_page_check(s->node, err, sizeof err) == 0, "%s", err);
	CHECK(holds(obj[0], 20000, 1) && holds(obj[s->cap - 1], 20000, 12), "live neighbours intact");
	CHECK(s->free == NULL, "every free object withheld");
	/* 2 KiB objects (16 KiB slabs): some slab lands in a unit given back */
	void *two[64];
	int inside = 0;
	for (int i = 0; i < 64; i++) {
		two[i] = malloc(2000);
		fill(two[i], 2000, 0x22);
		_nd_slab_t *t = slab_of(two[i]);
		inside += t->start >= s->start + 8 * 4096 && t->start < s->start + 52 * 4096;
	}
	CHECK(inside > 0, "no 2 KiB slab in the pages given back");
	void *again[12];
	for (unsigned k = 1; k + 1 < s->cap; k++) {
		again[k] = calloc(1, 20000);
		CHECK(again[k] && slab_of(again[k]) != s && holds(again[k], 20000, 0), "calloc zero, not from s");
		fill(again[k], 20000, 0x55);
	}
	CHECK(holds(obj[0], 20000, 1) && holds(obj[s->cap - 1], 20000, 12), "live neighbours intact");
	for (int i = 0; i < 64; i++) {
		CHECK(holds(two[i], 2000, 0x22));
		free(two[i]);
	}
	for (unsigned k = 1; k + 1 < s->cap; k++)
		free(again[k]);
	char *start = s->start, *end = start + ((size_t)s->npages << ND_PAGE_SHIFT);
	for (int i = 0; i < 48; i++) /* s's objects: by address (pages given back are not s's) */
		if ((char *)extra[i] < start || (char *)extra[i] >= end)
			free(extra[i]);
	free(obj[0]);
	free(obj[s->cap - 1]);
	for (unsigned pg = 0; pg < 64; pg++)
		CHECK(_nd_page_desc(start + (size_t)pg * 4096)->use != ND_USE_SLAB || slab_of(start + (size_t)pg * 4096) != s,
		      "page %u of the released slab", pg);
	CHECK(_nd_page_check(s->node, err, sizeof err) == 0, "%s", err);
}

/* Bytes and capacity of the slabs of class c (per-class statistics). */
static void class_stats(unsigned c, uint64_t *bytes, uint64_t *cap)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	CHECK(_nd_slab_class_stats(st, ND_SLAB_CLASSES) > (int)c);
	*bytes = st[c].slab_bytes;
	*cap = st[c].capacity;
}

/* Units at the slab's start and objects across unit borders: a 64-page
 * slab of 20 KiB objects keeps objects 6 (pages 30-34) and 11 (55-59)
 * out. Units 0-6 (pages 0-27: the run's head page goes too), 9-12
 * (36-51) and 15 (60-63) go back; objects 7 (35-39: starts in a kept
 * page) and 10 (50-54) overlap them, like 0-5 and 8-9: all ten are lost,
 * never listed again (unpurge of their pages finds none, mallocs of the
 * class never return one). The statistics count the pages and objects
 * the slab still has; the page level's pages in use drop by the units; a
 * large calloc in the given pages (they hold the stamps) reads zero; the
 * frees of objects 6 and 11 release the pieces. */
static void head_unit(void)
{
	void *obj[64], *extra[48];
	_nd_slab_t *s = full_slab(20000, obj, extra, 48);
	CHECK_EQ(s->npages, 64);
	unsigned c = s->cls;
	for (unsigned k = 0; k < s->cap; k++)
		fill(obj[k], 20000, 0x70 + (int)k);
	for (unsigned k = 0; k < s->cap; k++)
		if (k != 6 && k != 11)
			free(obj[k]);
	_nd_slab_release_empty(s->heap); /* the pass releases kept slabs: before the count */
	_nd_page_info_t pi0, pi1;
	CHECK(_nd_page_info(s->node, &pi0) == 0);
	uint64_t bytes0, cap0, bytes1, cap1;
	class_stats(c, &bytes0, &cap0);
	_nd_slab_purge_heap(s->heap);
	uint64_t gone = (((uint64_t)1 << 28) - 1) | (((uint64_t)0xffff) << 36) | ((uint64_t)0xf << 60);
	CHECK(s->gone == gone, "pages given back %#llx", (unsigned long long)s->gone);
	CHECK_EQ(s->lost, 10);
	CHECK(s->free == NULL, "no free object listed");
	CHECK((s->purged & s->gone) == 0, "a page given back is not marked purged");
	unsigned ngone = (unsigned)__builtin_popcountll(gone);
	class_stats(c, &bytes1, &cap1);
	CHECK(bytes0 - bytes1 == (uint64_t)ngone << ND_PAGE_SHIFT, "class bytes %llu -> %llu",
	      (unsigned long long)bytes0, (unsigned long long)bytes1);
	CHECK(cap0 - cap1 == 10, "class capacity %llu -> %llu", (unsigned long long)cap0, (unsigned long long)cap1);
	CHECK(_nd_page_info(s->node, &pi1) == 0);
	CHECK(pi0.used_pages - pi1.used_pages == ngone, "pages in use %llu -> %llu",
	      (unsigned long long)pi0.used_pages, (unsigned long long)pi1.used_pages);
	char err[256];
	CHECK(_nd_page_check(s->node, err, sizeof err) == 0, "%s", err);
	for (unsigned pg = 0; pg < 64; pg++)
		CHECK((slab_of(s->start + (size_t)pg * 4096) == s) == !(gone >> pg & 1), "page %u", pg);
	CHECK(!_nd_slab_unpurge(s) && s->free == NULL, "a lost object came back");
	CHECK(holds(obj[6], 20000, 0x76) && holds(obj[11], 20000, 0x7b), "live objects intact");
	/* the class's mallocs never get a lost object */
	char *lo = s->start, *hi = lo + ((size_t)64 << ND_PAGE_SHIFT);
	void *more[40];
	for (int i = 0; i < 40; i++) {
		more[i] = malloc(20000);
		CHECK(more[i] && ((char *)more[i] < lo || (char *)more[i] >= hi || slab_of(more[i]) != s),
		      "object %p of the slab with units gone", more[i]);
		fill(more[i], 20000, 0x33);
	}
	/* large callocs over the pages given back (dirty, stamped) */
	void *big[8];
	int inside = 0;
	for (int i = 0; i < 8; i++) {
		big[i] = calloc(1, 40000);
		CHECK(big[i] && holds(big[i], 40000, 0), "calloc not zero");
		inside += (char *)big[i] >= lo && (char *)big[i] < lo + 28 * 4096;
		fill(big[i], 40000, 0x44);
	}
	CHECK(inside > 0, "no large calloc in the head units");
	for (int i = 0; i < 8; i++)
		free(big[i]);
	for (int i = 0; i < 40; i++) {
		CHECK(holds(more[i], 20000, 0x33));
		free(more[i]);
	}
	CHECK(holds(obj[6], 20000, 0x76) && holds(obj[11], 20000, 0x7b), "live objects intact");
	free(obj[6]);
	free(obj[11]); /* the last one: s is released, piece by piece */
	for (int i = 0; i < 48; i++)
		if ((char *)extra[i] < lo || (char *)extra[i] >= hi)
			free(extra[i]);
	CHECK(s->heap == NULL || s->start != lo, "the slab with units gone was not released");
	for (unsigned pg = 0; pg < 64; pg++) {
		_nd_slab_t *o = slab_of(lo + (size_t)pg * 4096);
		CHECK(!o || o->start != lo || !o->gone, "page %u of the released slab", pg);
	}
	CHECK(_nd_page_check(s->node, err, sizeof err) == 0, "%s", err);
}

/* Pages in use at the page level, and the class's live slabs, bytes and
 * capacity (statistics). */
typedef struct {
	uint64_t used_pages, slabs, bytes, cap;
} counts_t;

static counts_t counts(int node, unsigned c)
{
	_nd_page_info_t pi;
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	CHECK(_nd_page_info(node, &pi) == 0);
	CHECK(_nd_slab_class_stats(st, ND_SLAB_CLASSES) > (int)c);
	return (counts_t){ pi.used_pages, st[c].slabs, st[c].slab_bytes, st[c].capacity };
}

/* From a to b the class lost slabs slabs and cap objects of capacity, its
 * bytes and the page level's pages in use dropped by pages pages. */
static void counts_drop(counts_t a, counts_t b, uint64_t slabs, uint64_t pages, uint64_t cap)
{
	CHECK(a.slabs - b.slabs == slabs, "class slabs %llu -> %llu", (unsigned long long)a.slabs,
	      (unsigned long long)b.slabs);
	CHECK(a.bytes - b.bytes == pages << ND_PAGE_SHIFT, "class bytes %llu -> %llu", (unsigned long long)a.bytes,
	      (unsigned long long)b.bytes);
	CHECK(a.cap - b.cap == cap, "class capacity %llu -> %llu", (unsigned long long)a.cap,
	      (unsigned long long)b.cap);
	CHECK(a.used_pages - b.used_pages == pages, "pages in use %llu -> %llu", (unsigned long long)a.used_pages,
	      (unsigned long long)b.used_pages);
}

/* A slab with units gone that its owner's frees empty goes, whatever
 * s->lost (used == 0 is empty). A 64-page slab of 20 KiB objects (object
 * k: pages 5k..5k+4) frees objects 0-2, 5, 7 and 9 (6 frees: off the full
 * list). The pass gives units 0-2 (pages 0-11), 9 (36-39) and the tail 15
 * (60-63) back: 0-2 and 7 are lost; 5 and 9 hold no whole unit and are
 * withheld. The class's mallocs take 5 and 9 again (s heads the list,
 * dry); with park, one more parks s full (8 out of its cap - lost = 8: a
 * full-list bias of 2). Then the owner frees those 8.
 * park: the 6th takes s off the full list, the 8th empties it and s goes
 * (not kept: it has units gone), its 44 pages back at the page level: the
 * class's slab count, bytes and capacity drop by s's, the page level's
 * pages in use by 44.
 * Not parked: s empties as the class's current slab and stays, as any
 * current slab (the next malloc takes it); the next pass gives its 44
 * pages back (every unit: nothing out), the next malloc of the class
 * releases the header (park_full: nothing out). */
static void emptied_units(bool park)
{
	void *obj[64], *extra[48];
	_nd_slab_t *s = full_slab(20000, obj, extra, 48);
	CHECK_EQ(s->npages, 64);
	CHECK_EQ(s->cap, 12);
	unsigned c = s->cls;
	static const unsigned freed[] = {0, 1, 2, 5, 7, 9};
	for (unsigned k = 0; k < s->cap; k++)
		fill(obj[k], 20000, 0x20 + (int)k);
	for (unsigned i = 0; i < 6; i++)
		free(obj[freed[i]]);
	CHECK(s->fbias == 0 && s->used == 6, "s is partial with 6 out (used %d, bias %u)", (int)s->used,
	      (unsigned)s->fbias);
	_nd_slab_release_empty(s->heap);
	_nd_slab_purge_heap(s->heap);
	uint64_t gone = 0xfffull | (0xfull << 36) | (0xfull << 60);
	CHECK(s->gone == gone, "pages given back %#llx", (unsigned long long)s->gone);
	CHECK_EQ(s->lost, 4);
	CHECK(s->free == NULL, "no free object listed");
	/* the class's mallocs: 5 and 9 come back, then (park) s parks full */
	char *lo = s->start, *hi = lo + ((size_t)64 << ND_PAGE_SHIFT);
	void *more[64];
	int nmore = 0, back = 0;
	while ((park ? s->fbias == 0 : back < 2) && nmore < 64) {
		void *p = malloc(20000);
		CHECK(p != NULL);
		if (p == obj[5] || p == obj[9]) {
			back++;
			fill(p, 20000, 0x20 + (p == obj[5] ? 5 : 9));
		} else {
			CHECK((char *)p < lo || (char *)p >= hi || slab_of(p) != s, "object %p of s", p);
			more[nmore++] = p;
		}
	}
	CHECK_EQ(back, 2);
	CHECK_EQ(s->used + s->fbias, s->cap - s->lost);
	if (park)
		/* slab.c's FULL_BACK: back to the partial list after cap / 4 frees */
		CHECK((int)s->fbias == 8 - s->cap / 4 && (int)s->used == s->cap / 4, "s parked full with 8 out (used %d, bias %u)",
		      (int)s->used, (unsigned)s->fbias);
	else
		CHECK((void *)s->heap->cur[c] == (void *)s && s->free == NULL, "s heads its class's list, dry");
	for (int i = 0; i < nmore; i++)
		free(more[i]);
	for (int i = 0; i < 48; i++)
		if ((char *)extra[i] < lo || (char *)extra[i] >= hi)
			free(extra[i]);
	static const unsigned out[] = {3, 4, 6, 8, 10, 11, 5, 9};
	for (unsigned i = 0; i < 7; i++) {
		CHECK(holds(obj[out[i]], 20000, 0x20 + (int)out[i]), "object %u intact", out[i]);
		free(obj[out[i]]);
	}
	CHECK(s->fbias == 0 && s->used == 1 && s->heap != NULL, "s partial, 1 out (used %d, bias %u)",
	      (int)s->used, (unsigned)s->fbias);
	CHECK(((void *)s->heap->cur[c] == (void *)s) == !park, "s is the class's current slab iff not parked");
	unsigned kept = 64 - (unsigned)__builtin_popcountll(gone);
	int node = s->node;
	_nd_slab_release_empty(s->heap); /* the other slabs emptied: not in the counts */
	counts_t c0 = counts(node, c);
	free(obj[9]); /* the last one out */
	if (park) {
		CHECK(s->heap == NULL, "the emptied slab with units gone was not released");
		counts_drop(c0, counts(node, c), 1, kept, 8);
		for (unsigned pg = 0; pg < 64; pg++)
			CHECK(_nd_page_desc(lo + (size_t)pg * 4096)->use != ND_USE_SLAB, "page %u still a slab's", pg);
	} else {
		CHECK(s->heap != NULL && s->used == 0, "the current slab stays");
		_nd_slab_purge_heap(s->heap);
		CHECK(s->gone == ~(uint64_t)0 && s->lost == 12, "gone %#llx, lost %u", (unsigned long long)s->gone,
		      (unsigned)s->lost);
		counts_t c1 = counts(node, c);
		counts_drop(c0, c1, 0, kept, 8);
		for (unsigned pg = 0; pg < 64; pg++)
			CHECK(_nd_page_desc(lo + (size_t)pg * 4096)->use == ND_USE_NONE, "page %u still s's", pg);
		/* s goes, a new slab (maybe with s's header and pages) comes */
		void *p = malloc(20000);
		_nd_slab_t *n = p ? slab_of(p) : NULL;
		CHECK(n && n->gone == 0 && n->lost == 0 && n->used == 1, "the new slab is s");
		counts_t c2 = counts(node, c);
		CHECK(c2.slabs == c1.slabs, "class slabs %llu -> %llu (s out, the new one in)",
		      (unsigned long long)c1.slabs, (unsigned long long)c2.slabs);
		free(p);
	}
	char err[256];
	CHECK(_nd_page_check(node, err, sizeof err) == 0, "%s", err);
}

/* A lost object does not hold its page: a 16-page slab of 5120 B objects
 * (1.25 pages each) keeps objects 1 (pages 1-2), 2 (2-3) and 11 (13-14)
 * out; units 4-7 and 8-11 go back, object 3 (3-4) is lost with them but
 * starts in page 3, which object 2 keeps. Once object 2 is freed, page 3
 * holds no object out (3 is lost): the next pass purges it. The pass's
 * marker scan took the lost object (its marker cleared) for one out and
 * skipped the slab. */
static void lost_start(void)
{
	void *obj[64], *extra[36];
	_nd_slab_nocolour = true; /* the pages below are those of an uncoloured slab */
	_nd_slab_t *s = full_slab(5000, obj, extra, 36);
	_nd_slab_nocolour = false;
	CHECK_EQ(s->size, 5120);
	CHECK_EQ(s->npages, 16);
	for (unsigned k = 0; k < s->cap; k++)
		fill(obj[k], 5120, 0x60 + (int)k);
	for (unsigned k = 0; k < s->cap; k++)
		if (k != 1 && k != 2 && k != 11)
			free(obj[k]);
	_nd_slab_purge_heap(s->heap);
	CHECK(s->gone == 0xff0, "pages given back %#llx", (unsigned long long)s->gone);
	CHECK_EQ(s->lost, 7);
	CHECK(!(s->purged >> 3 & 1) && resident(s->start + 3 * 4096), "page 3 kept");
	free(obj[2]);
	_nd_slab_purge_heap(s->heap);
	CHECK(s->purged >> 3 & 1, "page 3 not purged (purged %#llx)", (unsigned long long)s->purged);
	CHECK(!resident(s->start + 3 * 4096), "page 3 resident");
	CHECK(s->free == obj[2], "object 2 listed (it starts in page 2, kept by object 1)");
	CHECK(holds(obj[1], 5120, 0x61) && holds(obj[11], 5120, 0x6b), "live objects intact");
	char *lo = s->start, *hi = lo + ((size_t)16 << ND_PAGE_SHIFT);
	int node = s->node;
	free(obj[1]);
	free(obj[11]);
	for (int i = 0; i < 36; i++)
		if ((char *)extra[i] < lo || (char *)extra[i] >= hi)
			free(extra[i]);
	char err[256];
	CHECK(_nd_page_check(node, err, sizeof err) == 0, "%s", err);
}

/* A pass leaves the free pages of a class alone while spans take its
 * free slots (heap.c's refill of a sparse heap: a page purged there is
 * faulted in again when its withheld objects come back): an 8-page slab
 * of 128 B objects keeps the first object of every page but page 1 out,
 * a span of two slots comes from page 7 (the head of the free list), and
 * the pass that follows keeps page 1; the next one, with no span between,
 * purges it. */
static void span_busy(void)
{
	void *obj[256], *extra[768];
	_nd_slab_t *s = full_slab(128, obj, extra, 768);
	CHECK_EQ(s->size, 128);
	CHECK_EQ(s->npages, 8);
	for (unsigned k = 0; k < s->cap; k++)
		if (k % 32 || k / 32 == 1)
			free(obj[k]);
	_nd_heap_t *h = s->heap;
	h->spskip = 0;
	char *o = _nd_slab_span_take(h, 256);
	CHECK(o == obj[254], "span %p, want slot 254 (%p)", (void *)o, obj[254]);
	_nd_slab_purge_heap(h);
	CHECK(s->purged == 0 && resident(obj[32]), "page 1 purged while spans take the class's slots (purged %#llx)",
	      (unsigned long long)s->purged);
	_nd_slab_purge_heap(h);
	CHECK(s->purged == 0x2, "the next pass purges page 1 (purged %#llx)", (unsigned long long)s->purged);
	CHECK(!resident(obj[32]), "page 1 resident");
	free(o);
	for (unsigned k = 0; k < s->cap; k += 32)
		if (k / 32 != 1)
			free(obj[k]);
	for (int i = 0; i < 768; i++)
		if (slab_of(extra[i]) != s)
			free(extra[i]);
	char err[256];
	CHECK(_nd_page_check(0, err, sizeof err) == 0, "%s", err);
}

/* full_slab of a 4-page slab of `size`-byte objects, object k stamped k + 1. */
static _nd_slab_t *stamped_slab(size_t req, unsigned size, void **obj, void **extra, int nextra)
{
	_nd_slab_t *s = full_slab(req, obj, extra, nextra);
	CHECK_EQ(s->size, size);
	CHECK_EQ(s->npages, 4);
	for (unsigned k = 0; k < s->cap; k++)
		fill(obj[k], size, (int)k + 1);
	return s;
}

/* madvise refused (mlock'ed slab: EINVAL): nothing is marked, the free
 * objects stay listed and come back. 2 KiB objects: a 16 KiB slab, one
 * unit (no unit goes back), objects 0 and 1 out in page 0. */
static void refused(void)
{
	void *obj[64], *extra[40];
	_nd_slab_t *s = stamped_slab(2000, 2048, obj, extra, 40);
	int r = mlock(s->start, (size_t)s->npages << ND_PAGE_SHIFT);
	CHECK(r == 0, "mlock failed (errno %d): raise RLIMIT_MEMLOCK", errno);
	for (unsigned k = 2; k < s->cap; k++)
		free(obj[k]);
	_nd_slab_purge_heap(s->heap);
	unsigned listed = 0;
	for (void **x = s->free; x; x = ND_FO_NEXT(x))
		listed++;
	CHECK_EQ(s->purged, 0);
	CHECK_EQ(s->gone, 0);
	CHECK_EQ(listed, s->cap - 2);
	CHECK(holds(obj[0], 2048, 1) && holds(obj[1], 2048, 2), "live objects intact");
	munlock(s->start, (size_t)s->npages << ND_PAGE_SHIFT);
	for (int i = 0; i < 40; i++)
		if (slab_of(extra[i]) != s)
			free(extra[i]);
	free(obj[0]);
	free(obj[1]);
}

/* 1792-byte objects (9 in a 4-page slab) straddle pages: only pages no
 * live object overlaps go, the objects that lie in a kept page stay on
 * the list, the one that starts there and ends in a page given back is
 * withheld (handed out, it would fault that page in for its tail), and
 * allocating the slab empty again hands out every other object exactly
 * once. 54 objects: 6 whole slabs, none partial to serve the mallocs. */
static void straddling(void)
{
	void *obj[64], *extra[54];
	_nd_slab_t *s = stamped_slab(1700, 1792, obj, extra, 54);
	for (unsigned k = 1; k < s->cap; k++)
		free(obj[k]);
	CHECK(_nd_slab_purge_heap(s->heap) >= 3); /* page 0 holds object 0 */
	CHECK(resident(obj[0]));
	for (unsigned pg = 1; pg < 4; pg++)
		CHECK(!resident(s->start + pg * 4096), "page %u resident", pg);
	CHECK(holds(obj[0], 1792, 1), "live object intact");
	CHECK_EQ(s->purged, 0xe);
	/* object 1 lies in page 0: still listed; 2 (3584..5375) ends in
	 * page 1: withheld with it */
	unsigned listed = 0;
	for (void **x = s->free; x; x = ND_FO_NEXT(x))
		listed++;
	CHECK_EQ(listed, 1);
	CHECK_EQ(s->pstr, 0x2);
	unsigned seen[64] = { 0 };
	void *again[64];
	unsigned n = 0;
	for (unsigned k = 1; k < s->cap; k++) {
		again[n] = malloc(1700);
		if (slab_of(again[n]) == s) {
			unsigned i = (unsigned)(((char *)again[n] - s->start) / 1792);
			seen[i]++;
			fill(again[n], 1792, 0x77);
		}
		n++;
	}
	CHECK_EQ(seen[0], 0);
	for (unsigned k = 1; k < s->cap; k++)
		CHECK(seen[k] == 1, "object %u handed out %u times", k, seen[k]);
	CHECK(holds(obj[0], 1792, 1), "live object intact");
	for (unsigned i = 0; i < n; i++)
		free(again[i]);
	for (int i = 0; i < 54; i++)
		if (slab_of(extra[i]) != s)
			free(extra[i]);
	free(obj[0]);
}

/* 160-byte objects (25.6 a page; 192, 21.3 a page, has 16-page slabs):
 * the scan leaves a page at its first object out for the object that
 * holds the next page's first byte, which may start in the page it
 * leaves (25: bytes 4000-4159) and be the only one out there. Out: 5 and `keep`; the pages that go are `gone`. */
static void skip_scan(unsigned keep, uint64_t gone)
{
	void *obj[128], *extra[300];
	_nd_slab_t *s = stamped_slab(150, 160, obj, extra, 300);
	for (unsigned k = 0; k < s->cap; k++)
		if (k != 5 && k != keep)
			free(obj[k]);
	CHECK(_nd_slab_purge_heap(s->heap) >= (size_t)__builtin_popcountll(gone));
	CHECK(s->purged == gone, "pages purged %#llx, expected %#llx (object %u out)", (unsigned long long)s->purged,
	      (unsigned long long)gone, keep);
	for (unsigned pg = 0; pg < 4; pg++)
		CHECK(resident(s->start + pg * 4096) == !(gone >> pg & 1), "page %u", pg);
	CHECK(holds(obj[5], 160, 6) && holds(obj[keep], 160, (int)keep + 1), "live objects intact");
	char *start = s->start, *end = start + ((size_t)s->npages << ND_PAGE_SHIFT);
	free(obj[5]);
	free(obj[keep]); /* s may be released now: its objects are known by address */
	for (int i = 0; i < 300; i++)
		if ((char *)extra[i] < start || (char *)extra[i] >= end)
			free(extra[i]);
}

/* Withheld objects wait while another partial slab of the class has
 * objects listed: a slab that runs dry with purged pages parks full
 * instead of faulting its pages in again, and comes back (before any new
 * slab) once its class has nothing else to give. 224-byte objects, 73 in
 * a 4-page slab (class 256's slabs have 16 pages): a, all out but object
 * 0, gives pages 1-3 back and heads the list (objects 1-17 listed, 18,
 * across pages 0 and 1, withheld); b and c, every other object out, keep
 * pages with objects out and objects listed. */
static void withheld_last(void)
{
	enum { SZ = 224, CAP = 16384 / SZ, N = CAP * 8 };
	static void *o[N];
	for (int i = 0; i < N; i++)
		o[i] = malloc(SZ);
	_nd_slab_t *sl[3] = { NULL, NULL, NULL };
	int n = 0;
	for (int i = 0; i + CAP <= N && n < 3; i++)
		if ((char *)o[i] == slab_of(o[i])->start && slab_of(o[i + CAP - 1]) == slab_of(o[i]))
			sl[n++] = slab_of(o[i]);
	CHECK(n == 3 && sl[0]->cap == CAP, "%d whole slabs of %d B", n, SZ);
	_nd_slab_t *a = sl[0];
	unsigned c = a->cls;
	for (int i = 0; i < N; i++) {
		_nd_slab_t *s = slab_of(o[i]);
		unsigned k = (unsigned)(((char *)o[i] - s->start) / SZ);
		if ((s == a && k != 0) || ((s == sl[1] || s == sl[2]) && k % 2 == 1)) {
			free(o[i]);
			o[i] = NULL;
		}
	}
	_nd_heap_t *h = a->heap;
	_nd_slab_purge_heap(h);
	CHECK(a->purged == 0xe, "a's pages purged: %#llx", (unsigned long long)a->purged);
	_nd_slab_part_unlink(h, a);
	_nd_slab_part_push_front(h, a);
	unsigned listed = 0;
	for (_nd_slab_t *s = h->cur[c]; s != &_nd_slab_empty && s; s = s->next)
		for (void **x = s->free; x; x = ND_FO_NEXT(x))
			listed++;
	CHECK(listed >= 17 + 2 * (CAP / 2), "%u objects listed", listed);
	static void *again[N];
	for (unsigned i = 0; i < listed; i++)
		again[i] = malloc(SZ);
	CHECK(a->purged == 0xe, "a's pages after %u mallocs: %#llx", listed, (unsigned long long)a->purged);
	for (unsigned pg = 1; pg < 4; pg++)
		CHECK(!resident(a->start + pg * 4096), "a's page %u resident", pg);
	void *next = malloc(SZ);
	CHECK(slab_of(next) == a, "the next object from a (withheld), not from %p", (void *)slab_of(next));
	free(next);
	for (unsigned i = 0; i < listed; i++)
		free(again[i]);
	for (int i = 0; i < N; i++)
		free(o[i]);
}

enum { NOBJ = 4096 };
static void *many[NOBJ];

/* 8 MiB of 2 KiB objects, one live per 16 KiB slab: RSS drops by the
 * pages the pass gives back. auto_pass: the pass comes from allocating
 * another class, not from a call. */
static void rss_drop(bool auto_pass)
{
	for (int i = 0; i < NOBJ; i++) {
		many[i] = malloc(2048);
		fill(many[i], 2048, i & 0xff);
	}
	int kept = 0;
	for (int i = 0; i < NOBJ; i++) {
		_nd_slab_t *s = slab_of(many[i]);
		if ((char *)many[i] == s->start) {
			kept++;
			continue;
		}
		free(many[i]);
		many[i] = NULL;
	}
	CHECK(kept >= NOBJ / 8 - 2, "kept %d", kept);
	long before = rss_kb();
	void **other = NULL;
	int nother = 0;
	if (auto_pass) {
		/* 6 MiB of 512-byte slabs: past PASS_MIN and 1/8 of the heap */
		nother = 12288;
		other = malloc(nother * sizeof *other);
		for (int i = 0; i < nother; i++) {
			other[i] = malloc(512);
			fill(other[i], 512, 9);
		}
	} else {
		int k = 0;
		while (!many[k])
			k++;
		_nd_slab_purge_heap(slab_of(many[k])->heap);
	}
	long after = rss_kb();
	int gone = 0;
	for (int i = 0; i < NOBJ; i++)
		if (many[i]) {
			gone += !resident((char *)many[i] + 4096) && !resident((char *)many[i] + 3 * 4096);
			CHECK(holds(many[i], 2048, i & 0xff), "live object %d intact", i);
		}
	CHECK(gone >= kept - 2, "slabs given back: %d of %d", gone, kept);
	if (!auto_pass)
		CHECK(before - after >= 5000, "RSS %ld -> %ld KiB", before, after);
	for (int i = 0; i < nother; i++)
		free(other[i]);
	free(other);
	for (int i = 0; i < NOBJ; i++)
		free(many[i]);
}

/* Random churn of every class with a pass every 500 steps: each live
 * object carries its own stamp over its whole size, checked before its
 * free and at the end, so an object handed out twice, or a page given
 * back under a live one, breaks a stamp. */
enum { SLOTS = 3000, STEPS = 60000 };
static void *slot[SLOTS];
static size_t slot_sz[SLOTS];

static void stamp(int i, size_t n) { memset(slot[i], (i * 7 + 1) & 0xff, n); }

static void random_churn(void)
{
	uint64_t r = 88172645463325252ull;
	int bad = 0, nonzero = 0;
	size_t purged = 0;
	for (int step = 0; step < STEPS; step++) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		int i = (int)(r % SLOTS);
		if (slot[i]) {
			bad += !holds(slot[i], slot_sz[i], (i * 7 + 1) & 0xff);
			free(slot[i]);
			slot[i] = NULL;
			continue;
		}
		/* mostly small, some of every class up to 32 KiB */
		size_t n = (r >> 20) % 8 ? 16 + (r >> 32) % 2048 : 2048 + (r >> 32) % 30000;
		bool z = (r >> 40) % 4 == 0;
		slot[i] = z ? calloc(1, n) : malloc(n);
		CHECK(slot[i] != NULL);
		nonzero += z && !holds(slot[i], n, 0);
		slot_sz[i] = n;
		stamp(i, n);
		if (step % 500 == 0)
			purged += _nd_slab_purge_heap(slab_of(slot[i])->heap);
	}
	CHECK(purged > 100, "pages purged: %zu", purged);
	CHECK_EQ(nonzero, 0);
	for (int i = 0; i < SLOTS; i++)
		if (slot[i]) {
			bad += !holds(slot[i], slot_sz[i], (i * 7 + 1) & 0xff);
			free(slot[i]);
		}
	CHECK_EQ(bad, 0);
}

int main(void)
{
	free(malloc(1)); /* the init */
	if (_nd_page_g.advice != MADV_DONTNEED) {
		printf("test_slab_purge: NODALLOC_PURGE is not dontneed: RSS checks skipped\n");
		return 0;
	}
	span_busy();
	big_objects();
	head_unit();
	emptied_units(true);
	emptied_units(false);
	lost_start();
	straddling();
	skip_scan(25, 0xc); /* 25 keeps pages 0 and 1 */
	skip_scan(51, 0x8); /* 51 (8160-8319) keeps pages 1 and 2 */
	refused();
	withheld_last();
	rss_drop(false);
	rss_drop(true);
	random_churn();
	return CHECK_DONE();
}
