// SPDX-License-Identifier: MIT
/* Slab colouring (slab.c, colour_of): slabs of the classes above 2 KiB up
 * to 16 KiB start their objects at a multiple of 64 B into the run, the
 * colours varying from slab to slab and the last object inside the run
 * (8192 and 16384 hold 7 objects for the room; 2048 and 4096 keep 8 and
 * their page-aligned start); such objects free and report their size as
 * any (test_malloc_badfree: their double and interior frees); every
 * alignment above 64 B still holds (malloc's family, the x calls' fast
 * and slow paths, public heaps), taken from class 4096 up to 4096 B and a
 * page run above, not a bigger class; and a purge of a coloured slab
 * gives back only pages no live object overlaps (slab_purge.c counts
 * pages from the run). */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "check.h"
#include "internal.h"

static _nd_slab_t *slab_of(const void *p)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	return d && d->use == ND_USE_SLAB ? (_nd_slab_t *)d->user : NULL;
}

/* The first object's offset in s's run (runs are aligned to their size). */
static size_t colour(const _nd_slab_t *s)
{
	return (uintptr_t)s->start & (((uintptr_t)s->npages << ND_PAGE_SHIFT) - 1);
}

static bool resident(const void *p)
{
	unsigned char v = 0;
	CHECK(mincore((void *)((uintptr_t)p & ~(uintptr_t)4095), 4096, &v) == 0);
	return v & 1;
}

static bool holds(const unsigned char *p, size_t n, int v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)v)
			return false;
	return true;
}

#define NOBJ 240

/* n B of class cls (10000 B: 12 in a 128 KiB run, 8 KiB of slack; the
 * powers of two: 7 in a run of 8, one object of slack): the slabs' colours
 * are multiples of 64, several differ, every object lies in the run and is
 * an ordinary block. */
static void colours(size_t n, unsigned cls, unsigned cap)
{
	static void *o[NOBJ];
	_nd_slab_t *seen[NOBJ];
	size_t cols[NOBJ];
	int ns = 0, ncol = 0;
	for (int i = 0; i < NOBJ; i++) {
		o[i] = malloc(n);
		CHECK(o[i] != NULL && ((uintptr_t)o[i] & 63) == 0, "object %p 64-aligned", o[i]);
		memset(o[i], 0x5a, n);
		CHECK_EQ(malloc_usable_size(o[i]), cls);
		_nd_slab_t *s = slab_of(o[i]);
		CHECK(s != NULL && s->size == cls && s->cap == cap, "class %u: %u objects", cls, s ? s->cap : 0);
		size_t c = colour(s);
		CHECK(c % 64 == 0 && c + (size_t)s->cap * s->size <= (size_t)s->npages << ND_PAGE_SHIFT,
		      "colour %zu of a %u-page run of %u objects", c, s->npages, s->cap);
		CHECK((char *)o[i] >= s->start && (size_t)((char *)o[i] - s->start) % s->size == 0);
		int k = 0;
		while (k < ns && seen[k] != s)
			k++;
		if (k == ns) {
			seen[ns++] = s;
			int j = 0;
			while (j < ncol && cols[j] != c)
				j++;
			if (j == ncol)
				cols[ncol++] = c;
		}
	}
	CHECK(ns >= 16, "%d slabs", ns);
	CHECK(ncol >= ns / 2, "%d colours among %d slabs of %u B", ncol, ns, cls);
	for (int i = 0; i < NOBJ; i++)
		free(o[i]);
}

/* 2048 and 4096 B keep 8 objects and a page-aligned start: 2048's slabs
 * are lent to 1024 B, which aligned_alloc(1024) takes; page-aligned 4 KiB
 * blocks stay slab objects. */
static void uncoloured(size_t n, unsigned cls)
{
	static void *o[NOBJ];
	for (int i = 0; i < NOBJ; i++) {
		o[i] = malloc(n);
		_nd_slab_t *s = slab_of(o[i]);
		CHECK(s != NULL && s->size == cls && s->cap == 8 && colour(s) == 0 && ((uintptr_t)o[i] & (cls - 1)) == 0);
	}
	for (int i = 0; i < NOBJ; i++)
		free(o[i]);
}

/* Every alignment above 64 of sizes in coloured classes, many times (the
 * colours differ from slab to slab). */
static void alignments(void)
{
	static void *o[6][NOBJ];
	nd_heap_t *h = nd_heap_new(0);
	CHECK(h != NULL);
	for (int i = 0; i < NOBJ; i++) {
		size_t a = (size_t)128 << (i % 6); /* 128 .. 4096 */
		size_t n = 2100 + (size_t)(i * 97) % 12000;
		CHECK(posix_memalign(&o[0][i], a, n) == 0);
		o[1][i] = aligned_alloc(a, (n + a - 1) & ~(a - 1));
		o[2][i] = memalign(a, n);
		o[3][i] = nd_mallocx_onnode(n, ND_NODE_LOCAL, ND_MALLOCX_ALIGN(a));
		o[4][i] = nd_mallocx_policy(n, NULL, ND_MALLOCX_ALIGN(a));
		o[5][i] = nd_heap_aligned_alloc(h, a, n);
		for (int k = 0; k < 6; k++) {
			CHECK(o[k][i] != NULL && ((uintptr_t)o[k][i] & (a - 1)) == 0, "call %d: %p of %zu B, alignment %zu",
			      k, o[k][i], n, a);
			memset(o[k][i], 1, n);
		}
		/* up to 4096 B class 4096, above a page run of the size, not a
		 * bigger class (20480 B, the next one not coloured) */
		for (int k = 0; k < 5; k++) {
			CHECK(malloc_usable_size(o[k][i]) < ((n + a - 1) & ~(a - 1)) + 4096, "call %d: %zu B for %zu, alignment %zu",
			      k, malloc_usable_size(o[k][i]), n, a);
			if (((n + a - 1) & ~(a - 1)) <= 4096)
				CHECK(slab_of(o[k][i]) != NULL && slab_of(o[k][i])->size == 4096, "call %d: %zu B, alignment %zu", k, n, a);
		}
	}
	for (int i = 0; i < NOBJ; i++)
		for (int k = 0; k < 5; k++)
			free(o[k][i]);
	nd_heap_destroy(h);
}

/* A full coloured slab of 10240 B objects with a colour of a page or more,
 * all freed but the first and last (stamped): the pass gives back pages of
 * the free objects only; the live ones stay resident and intact. PNOBJ:
 * more slabs (133) than colours (129), whatever runs the page level gives. */
#define PNOBJ 1600
static void purge(void)
{
	static void *o[PNOBJ];
	_nd_slab_t *s = NULL;
	int n = 0;
	for (; n < PNOBJ; n++) {
		o[n] = malloc(10000);
		_nd_slab_t *t = slab_of(o[n]);
		/* a slab whose first object this call took, coloured past a page */
		if (!s && o[n] == t->start && colour(t) >= ND_PAGE_SIZE && t->carved == 1)
			s = t;
	}
	CHECK(s != NULL, "a slab coloured past a page");
	if (!s)
		return;
	void *first = s->start, *last = s->start + (size_t)(s->cap - 1) * s->size;
	int mine = 0;
	for (int i = 0; i < n; i++)
		if (slab_of(o[i]) == s) {
			mine++;
			if (o[i] == first || o[i] == last)
				memset(o[i], o[i] == first ? 0x11 : 0x22, 10240);
		}
	CHECK_EQ(mine, s->cap);
	for (int i = 0; i < n; i++)
		if (o[i] != first && o[i] != last) {
			free(o[i]);
			o[i] = NULL;
		}
	size_t got = _nd_slab_purge_heap(s->heap);
	CHECK(got > 0 && (s->purged | s->gone), "pages given back: %zu", got);
	CHECK(holds(first, 10240, 0x11) && holds(last, 10240, 0x22), "live objects intact");
	for (size_t b = 0; b < 10240; b += ND_PAGE_SIZE) {
		CHECK(resident((char *)first + b) && resident((char *)last + b), "live pages resident");
	}
	CHECK(resident((char *)first + 10239) && resident((char *)last + 10239));
	char err[256];
	CHECK(_nd_page_check(s->node, err, sizeof err) == 0, "%s", err);
	/* the class's mallocs take the free ones back, writable */
	void *again[NOBJ / 2];
	for (int i = 0; i < NOBJ / 2; i++) {
		again[i] = malloc(10000);
		CHECK(again[i] != first && again[i] != last);
		memset(again[i], 0x33, 10000);
	}
	CHECK(holds(first, 10240, 0x11) && holds(last, 10240, 0x22), "live objects intact");
	for (int i = 0; i < NOBJ / 2; i++)
		free(again[i]);
	free(first);
	free(last);
}

int main(void)
{
	free(malloc(1)); /* the init */
	colours(10000, 10240, 12);
	colours(8000, 8192, 7);
	colours(16000, 16384, 7);
	uncoloured(2000, 2048);
	uncoloured(4000, 4096);
	alignments();
	if (_nd_page_g.advice == MADV_DONTNEED)
		purge();
	return CHECK_DONE();
}
