// SPDX-License-Identifier: MIT
/* Slab colouring (slab.c, colour_of): slabs of the classes above 2 KiB up
 * to 16 KiB start their objects at a multiple of 64 B into the run, the
 * colours varying from slab to slab and the last object inside the run
 * (8192 and 16384 hold 7 objects for the room; 2048 and 4096 keep 8 and
 * their page-aligned start); such objects free and report their size as
 * any (test_malloc_badfree: their double and interior frees); every
 * alignment above 64 B still holds (malloc's family, the x calls' fast
 * and slow paths, public heaps), taken from class 4096 up to 4096 B and
 * from the uncoloured twins of 8192 and 16384 above (slab objects, not
 * page runs: branch pow2al), not a bigger class; the twins' objects free
 * locally and remotely (borrowed by their size's class) and serve no
 * plain malloc from their own lists; nothing lends a twin's slab to a
 * bigger class; and a purge of a coloured slab gives back only pages no
 * live object overlaps (slab_purge.c counts pages from the run). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
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
		/* up to 4096 B class 4096, above the twin of the next power
		 * of two (a slab object of that size, uncoloured), not a
		 * bigger class (20480 B, the next one not coloured) */
		size_t r = (n + a - 1) & ~(a - 1), want = r <= 4096 ? 4096 : r <= 8192 ? 8192 : 16384;
		for (int k = 0; k < 6; k++) {
			_nd_slab_t *s = slab_of(o[k][i]);
			CHECK(s != NULL && s->size == want && colour(s) == 0 && s->cap == 8 &&
				      (want == 4096 || s->cls >= ND_SLAB_SIZED),
			      "call %d: %zu B, alignment %zu: a slab of %zu", k, n, a, want);
			if (k < 5)
				CHECK_EQ(malloc_usable_size(o[k][i]), want);
		}
	}
	for (int i = 0; i < NOBJ; i++)
		for (int k = 0; k < 5; k++)
			free(o[k][i]);
	nd_heap_destroy(h);
}

/* Alignments of a page and above (8192 and 16384: page runs, as before
 * colouring) of 4097..16384 B, and the sizes next to the twins: aligned,
 * writable, freed. */
static void big_alignments(void)
{
	static void *o[3][NOBJ];
	for (int i = 0; i < NOBJ; i++) {
		size_t a = (size_t)4096 << (i % 3); /* 4096 .. 16384 */
		size_t n = 4097 + (size_t)(i * 211) % 12288;
		if (i % 7 == 0)
			n = i % 2 ? 8192 : 16384;
		CHECK(posix_memalign(&o[0][i], a, n) == 0);
		o[1][i] = aligned_alloc(a, (n + a - 1) & ~(a - 1));
		o[2][i] = memalign(a, n);
		for (int k = 0; k < 3; k++) {
			CHECK(o[k][i] != NULL && ((uintptr_t)o[k][i] & (a - 1)) == 0, "call %d: %p of %zu B, alignment %zu",
			      k, o[k][i], n, a);
			CHECK(malloc_usable_size(o[k][i]) >= n);
			memset(o[k][i], 0x40 + k, n);
		}
	}
	for (int i = 0; i < NOBJ; i++) {
		size_t n = 4097 + (size_t)(i * 211) % 12288;
		if (i % 7 == 0)
			n = i % 2 ? 8192 : 16384;
		for (int k = 0; k < 3; k++) {
			CHECK(holds(o[k][i], n, 0x40 + k), "call %d: object %d intact", k, i);
			free(o[k][i]);
		}
	}
}

/* The x calls' and aligned calls' slow paths (a thread's first call: no
 * heap, no policy entry yet), under several policies: 4097..16384 B with
 * an alignment of 128..4096 is a twin's object (or, spread by interleave,
 * a page run), never one of the coloured class of the same size, which
 * the slow paths took when they passed the aligned size on as a size
 * (8192 or 16384: the coloured class's, 64-aligned only). Each call in a
 * thread of its own. */
static const nd_policy_t *sa_pol;
static size_t sa_n, sa_a;
static int sa_kind;
static void *slow_one(void *arg)
{
	(void)arg;
	size_t n = sa_n, a = sa_a;
	void *p;
	switch (sa_kind) {
	case 0: p = nd_mallocx_onnode(n, 0, ND_MALLOCX_ALIGN(a)); break;
	case 1: p = nd_mallocx_onnode(n, ND_NODE_LOCAL, ND_MALLOCX_ALIGN(a) | ND_MALLOCX_ZERO); break;
	case 2: p = nd_aligned_alloc_onnode(a, n, 0); break;
	case 3: p = nd_mallocx_policy(n, sa_pol, ND_MALLOCX_ALIGN(a)); break;
	case 4: p = nd_mallocx_policy(n, sa_pol, ND_MALLOCX_ALIGN(a) | ND_MALLOCX_ZERO); break;
	default: p = nd_aligned_alloc_policy(a, n, sa_pol); break;
	}
	CHECK(p != NULL && ((uintptr_t)p & (a - 1)) == 0, "call %d: %p of %zu B, alignment %zu", sa_kind, p, n, a);
	if (!p)
		return NULL;
	if (sa_kind == 1 || sa_kind == 4)
		CHECK(holds(p, n, 0), "call %d: zeroed", sa_kind);
	_nd_slab_t *s = slab_of(p);
	CHECK(!s || s->cls >= ND_SLAB_SIZED, "call %d: %zu B, alignment %zu: a twin's object, not class %u's", sa_kind, n,
	      a, s ? s->cls : 0);
	memset(p, 0x5a, n);
	free(p);
	return NULL;
}
static void slow_alignments(void)
{
	static const char *const specs[] = { NULL, "local", "bind:0", "preferred:0", "interleave:0" };
	static const size_t sizes[] = { 4097, 6000, 8192, 8193, 12000, 16384 };
	for (unsigned sp = 0; sp < sizeof specs / sizeof specs[0]; sp++) {
		nd_policy_t pol;
		char err[100];
		sa_pol = NULL;
		if (specs[sp]) {
			CHECK(nd_policy_parse(specs[sp], &pol, err, sizeof err) == 0, "%s", err);
			sa_pol = sp % 2 ? nd_policy_prepare(&pol) : &pol; /* prepared and plain */
		}
		for (sa_kind = sp ? 3 : 0; sa_kind < 6; sa_kind++)
			for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
				for (sa_a = 128; sa_a <= 4096; sa_a <<= 1) {
					sa_n = sizes[i];
					pthread_t th;
					CHECK(pthread_create(&th, NULL, slow_one, NULL) == 0);
					pthread_join(th, NULL);
				}
	}
}

/* Page-aligned I/O buffers of 8 and 16 KiB made here, stamped, freed by
 * another thread of the node (remote frees: its borrowed lists of 8192
 * and 16384, whose plain mallocs may take them), and made again. */
static void *tw[NOBJ];
static size_t tw_size(int i)
{
	return i % 2 ? 8192 : 16384;
}
static void *remote_freer(void *arg)
{
	(void)arg;
	for (int i = 0; i < NOBJ; i++) {
		CHECK(holds(tw[i], tw_size(i), (unsigned char)i), "object %d intact in the other thread", i);
		free(tw[i]);
	}
	/* its plain mallocs of the sizes may take them back: ordinary blocks */
	static void *p[NOBJ];
	for (int i = 0; i < NOBJ; i++) {
		p[i] = malloc(tw_size(i) - 100);
		CHECK(p[i] != NULL && malloc_usable_size(p[i]) == tw_size(i));
		memset(p[i], 0x77, tw_size(i) - 100);
	}
	for (int i = 0; i < NOBJ; i++)
		free(p[i]);
	return NULL;
}
static void remote(void)
{
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < NOBJ; i++) {
			CHECK(posix_memalign(&tw[i], 4096, tw_size(i)) == 0);
			_nd_slab_t *s = slab_of(tw[i]);
			CHECK(s != NULL && s->cls >= ND_SLAB_SIZED && s->size == tw_size(i) && ((uintptr_t)tw[i] & 4095) == 0,
			      "round %d: a twin's object", round);
			memset(tw[i], i, tw_size(i));
		}
		pthread_t th;
		CHECK(pthread_create(&th, NULL, remote_freer, NULL) == 0);
		pthread_join(th, NULL);
		_nd_slab_flush_remote(); /* the node's exchange goes home */
	}
	/* plain mallocs never pop a twin's list: coloured slabs of 7 */
	for (int i = 0; i < NOBJ; i++) {
		tw[i] = malloc(tw_size(i) - 100);
		_nd_slab_t *s = slab_of(tw[i]);
		CHECK(s != NULL && s->cls < ND_SLAB_SIZED && s->cap == 7);
	}
	for (int i = 0; i < NOBJ; i++)
		free(tw[i]);
}

/* No class lends to a bigger one from a twin (smaller than the classes
 * before it): the borrowed lists' lenders (cls_lend) and the partial
 * slabs' (_nd_slab_lend) stay among the classes by size. Fully carved
 * partial slabs of the twins with objects listed are what a lend to
 * 20480..32768 B would take. */
static void no_twin_lend(void)
{
	for (unsigned c = 0; c < ND_SLAB_SIZED; c++)
		CHECK(c + _nd_slab_cls_lend[c] < ND_SLAB_SIZED, "class %u: %u lenders", c, _nd_slab_cls_lend[c]);
	static void *o[64];
	for (int i = 0; i < 64; i++)
		CHECK(posix_memalign(&o[i], 4096, i % 2 ? 8192 : 16384) == 0);
	for (int i = 0; i < 48; i++)
		if (i % 8 < 6) {
			free(o[i]);
			o[i] = NULL;
		}
	_nd_heap_t *h = slab_of(o[63])->heap;
	/* as after a purge pass that left them listed (_nd_slab_purge_lent
	 * purges only past a pass's count of free objects) */
	int listed = 0;
	for (unsigned c = ND_SLAB_SIZED; c < ND_SLAB_CLASSES; c++)
		for (_nd_slab_t *s = h->cur[c]; s && s != &_nd_slab_empty; s = s->next) {
			s->pfree = (uint32_t)s->carved - s->used;
			listed += s != h->cur[c] && s->carved == s->cap && s->free != NULL;
		}
	CHECK(listed >= 2, "%d partial twin slabs with objects listed", listed);
	for (unsigned c = _nd_slab_class_of(20480); c < ND_SLAB_SIZED; c++) /* 20480..32768 B */
		if (_nd_slab_lend(h, c))
			CHECK(h->cur[c]->size >= _nd_slab_class_size(c), "class %u lent a slab of %u B", c, h->cur[c]->size);
	for (int i = 0; i < 64; i++)
		free(o[i]);
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
	big_alignments();
	slow_alignments();
	remote();
	no_twin_lend();
	if (_nd_page_g.advice == MADV_DONTNEED)
		purge();
	return CHECK_DONE();
}
