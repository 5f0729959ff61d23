// SPDX-License-Identifier: MIT
/* A freed run's pages that were never written go back clean (page.c,
 * _nd_page_free_untouched; docs/arenas.md "Untouched pages of a slab"):
 * the page level's dirty count grows by the written pages only, pages
 * that were dirty when the run was taken stay dirty, and a released slab
 * counts only the pages up to its carved end, or all that an earlier
 * class wrote. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

static uint64_t dirty_of(int node)
{
	return __atomic_load_n(&_nd_page_g.arenas[node].bd.dirty_free, __ATOMIC_RELAXED);
}

static void consistent(int node)
{
	char err[256];
	CHECK(_nd_page_check(node, err, sizeof err) == 0, "page level: %s", err);
}

/* A run taken from clean pages, its first page written: 1 dirty page back. */
static void clean_run(int node)
{
	_nd_page_trim(-1); /* every free page clean: the run is cut from clean ones */
	char *p = _nd_page_alloc_exact(node, 8, 8);
	CHECK(p != NULL);
	memset(p, 0x5a, 4096);
	uint64_t d0 = dirty_of(node), c0 = _nd_page_g.arenas[node].committed;
	CHECK_EQ(_nd_page_free_untouched(p, 1), 0);
	CHECK(dirty_of(node) == d0 + 1, "dirty free pages %llu -> %llu (1 written)", (unsigned long long)d0,
	      (unsigned long long)dirty_of(node));
	CHECK(_nd_page_g.arenas[node].committed + 7 == c0, "committed %llu -> %llu (7 untouched)",
	      (unsigned long long)c0, (unsigned long long)_nd_page_g.arenas[node].committed);
	consistent(node);
	/* the clean pages read as zero when taken again */
	char *q = _nd_page_alloc_exact(node, 8, 8);
	CHECK(q != NULL);
	for (size_t k = 4096; k < 8 * 4096; k++)
		CHECK(q[k] == 0, "byte %zu of an untouched page", k);
	_nd_page_free(q);
	consistent(node);
}

/* A run taken from dirty pages (written by the run before): all stay dirty. */
static void dirty_run(int node)
{
	_nd_page_trim(-1);
	char *p = _nd_page_alloc_exact(node, 8, 8);
	CHECK(p != NULL);
	memset(p, 0x33, 8 * 4096);
	CHECK_EQ(_nd_page_free(p), 0);
	char *q = _nd_page_alloc_exact(node, 8, 8);
	CHECK(q == p, "the dirty block is taken again (%p, %p)", (void *)p, (void *)q);
	uint64_t d0 = dirty_of(node);
	CHECK_EQ(_nd_page_free_untouched(q, 1), 0);
	CHECK(dirty_of(node) == d0 + 8, "dirty free pages %llu -> %llu (8 dirty when taken)", (unsigned long long)d0,
	      (unsigned long long)dirty_of(node));
	consistent(node);
}

/* A slab with one page worth carved, released: only its written pages dirty. */
static void slab_run(int node)
{
	void *o = malloc(16);
	_nd_pagedesc_t *dd = _nd_page_desc(o);
	CHECK(dd && dd->use == ND_USE_SLAB);
	_nd_heap_t *h = ((_nd_slab_t *)dd->user)->heap;
	unsigned c = _nd_slab_class_of(1024);
	_nd_page_trim(-1);
	_nd_slab_t *s = _nd_slab_new(h, c, NULL);
	CHECK(s != NULL && s->node == node);
	CHECK(s->npages >= 4, "a slab of %u pages", s->npages);
	_nd_slab_carve(s);
	char *run = _nd_slab_run(s);
	size_t end = (size_t)(s->start - run) + (size_t)s->carved * s->size;
	uint64_t written = (end + 4095) / 4096;
	CHECK(written < s->npages, "%llu of %u pages carved", (unsigned long long)written, s->npages);
	s->free = NULL; /* nothing out: the carved objects are simply dropped */
	uint64_t d0 = dirty_of(node);
	_nd_slab_release(s);
	CHECK(dirty_of(node) == d0 + written, "dirty free pages %llu -> %llu (%llu written)", (unsigned long long)d0,
	      (unsigned long long)dirty_of(node), (unsigned long long)written);
	consistent(node);
	free(o);
}

/* A kept empty slab made a slab of another class (_nd_slab_take_empty)
 * starts carving again, but its earlier class wrote its pages: they all
 * go back dirty (counted clean, a calloc there would skip pages that
 * hold the old class's bytes: _nd_page_zero). */
static void reclass_run(int node)
{
	void *o = malloc(16);
	_nd_heap_t *h = ((_nd_slab_t *)_nd_page_desc(o)->user)->heap;
	unsigned c1 = _nd_slab_class_of(1024), c2 = c1;
	_nd_slab_t *s = _nd_slab_new(h, c1, NULL);
	CHECK(s != NULL && s->node == node);
	for (unsigned c = 0; c < c1 && c2 == c1; c++) { /* a smaller class of as many pages */
		_nd_slab_t *t = _nd_slab_new(h, c, NULL);
		CHECK(t != NULL);
		if (t->npages == s->npages)
			c2 = c;
		_nd_slab_release(t);
	}
	CHECK(c2 != c1, "no class below %u with %u pages", c1, s->npages);
	while (s->carved < s->cap) { /* every object carved and written */
		s->free = NULL;
		_nd_slab_carve(s);
	}
	memset(s->start, 0x77, (size_t)s->cap * s->size);
	s->free = NULL;
	/* kept empty, as keep_empty (static) would: the only one of h */
	_nd_slab_t *e = h->empty[c1];
	uint64_t em = h->emask, ep = h->epages;
	h->empty[c1] = s;
	h->emask = (uint64_t)1 << c1;
	h->epages = s->npages;
	_nd_slab_t *t = _nd_slab_take_empty(h, c2);
	h->empty[c1] = e;
	h->emask = em;
	h->epages = ep;
	CHECK(t == s && s->cls == c2 && s->carved == 0, "slab %p taken for class %u", (void *)t, c2);
	_nd_slab_carve(s);
	s->free = NULL;
	uint64_t d0 = dirty_of(node), np = s->npages;
	_nd_slab_release(s);
	CHECK(dirty_of(node) == d0 + np, "dirty free pages %llu -> %llu (all %llu written)", (unsigned long long)d0,
	      (unsigned long long)dirty_of(node), (unsigned long long)np);
	consistent(node);
	free(o);
}

int main(void)
{
	void *p = malloc(1); /* the init */
	int node = _nd_page_node_of(p);
	free(p);
	CHECK(node >= 0);
	clean_run(node);
	dirty_run(node);
	slab_run(node);
	reclass_run(node);
	return CHECK_DONE();
}
