// SPDX-License-Identifier: MIT
/* Every free page the page level counts clean (no ND_PGF_DIRTY) reads as
 * zero: _nd_page_zero (calloc of page runs, zeroed tables) skips such
 * pages. Slabs of every class, partly or wholly carved and written, are
 * emptied, kept, taken again for other classes and dropped (threads
 * exit; branch cleanrun, which gave a dropped slab's untouched pages
 * back clean, was reverted: this scan guards any such change), on
 * two emulated nodes; runs are cut across smaller free blocks (bindfull,
 * _nd_buddy_take_span) after those. Then each slot's free pages are
 * scanned, calloc of small and page-run sizes returns zeros, and the
 * page level is consistent with nothing in use. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "internal.h"

static char err[256];

static void consistent(const char *when)
{
	for (int n = 0; n < 2; n++) {
		err[0] = '\0';
		CHECK(_nd_page_check(n, err, sizeof err) == 0, "%s, node %d: %s", when, n, err);
	}
}

/* Free blocks of each node slot: a page without DIRTY holds zeros. */
static void scan_clean(const char *when)
{
	if (_nd_page_g.lazy || _nd_page_g.advice != MADV_DONTNEED)
		return; /* clean pages unmapped, or MADV_FREE keeps data: _nd_page_zero clears all */
	for (int n = 0; n < 2; n++) {
		_nd_arena_t *a = &_nd_page_g.arenas[n];
		if (!a->usable)
			continue;
		_nd_lock(&a->lock);
		uint64_t bad = 0, first = 0;
		for (uint64_t j = 0; j < a->mapped;) {
			const _nd_pagedesc_t *d = &a->bd.desc[j];
			if (d->state != ND_PG_FREE) {
				j += (d->state == ND_PG_RUN || d->state == ND_PG_HOLE) && d->npages ? d->npages : 1;
				continue;
			}
			uint64_t e = j + (1ull << d->order);
			for (; j < e; j++) {
				if (a->bd.desc[j].flags & ND_PGF_DIRTY)
					continue;
				const uint64_t *w = (const uint64_t *)(a->base + (j << ND_PAGE_SHIFT));
				for (size_t k = 0; k < ND_PAGE_SIZE / 8; k++)
					if (w[k]) {
						if (!bad++)
							first = j;
						break;
					}
			}
		}
		_nd_unlock(&a->lock);
		CHECK(bad == 0, "%s: node %d: %llu clean free pages hold data (first: page %llu)", when, n,
		      (unsigned long long)bad, (unsigned long long)first);
	}
}

/* Objects of every class: a few (partly carved slabs) or many, written,
 * freed in two orders; some kept until the thread's end. */
static void churn_classes(unsigned seed)
{
	static __thread void *v[4096];
	for (size_t size = 16; size <= ND_SLAB_MAX; size += size < 256 ? 16 : size / 8) {
		unsigned cnt = (seed + (unsigned)size / 16) % 3 == 0 ? 1 + seed % 5 : (unsigned)(262144 / size) + 3;
		if (cnt > 4096)
			cnt = 4096;
		for (unsigned i = 0; i < cnt; i++) {
			v[i] = malloc(size);
			CHECK(v[i] != NULL);
			memset(v[i], 0xa5, size);
		}
		for (unsigned i = seed & 1; i < cnt; i += 2)
			free(v[i]);
		for (unsigned i = !(seed & 1); i < cnt; i += 2)
			free(v[i]);
	}
}

/* Small calloc of every class: zeros (slabs reused with other classes). */
static void calloc_small(void)
{
	static void *v[64];
	for (size_t size = 16; size <= ND_SLAB_MAX; size += size < 256 ? 16 : size / 8) {
		for (unsigned i = 0; i < 64; i++) {
			unsigned char *p = calloc(1, size);
			CHECK(p != NULL);
			for (size_t k = 0; k < size; k++)
				if (p[k]) {
					CHECK(0, "calloc(%zu): byte %zu is %#x", size, k, p[k]);
					break;
				}
			memset(p, 0x3c, size);
			v[i] = p;
		}
		for (unsigned i = 0; i < 64; i++)
			free(v[i]);
	}
}

/* calloc of page runs of 2..200 pages: zeros. */
static void calloc_runs(void)
{
	static void *v[200];
	for (unsigned r = 0; r < 200; r++) {
		size_t bytes = ((size_t)(r % 199) + 2) << ND_PAGE_SHIFT;
		unsigned char *p = calloc(1, bytes);
		CHECK(p != NULL);
		for (size_t k = 0; k < bytes; k += 8)
			if (*(uint64_t *)(p + k)) {
				CHECK(0, "calloc(%zu): byte %zu is not zero", bytes, k);
				break;
			}
		v[r] = p;
	}
	for (unsigned r = 0; r < 200; r++)
		free(v[r]);
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	churn_classes(seed);
	/* a few objects stay out until the exit: their slabs go with the heap */
	for (size_t size = 16; size <= ND_SLAB_MAX; size *= 2)
		memset(malloc(size), 0x5a, size);
	return NULL;
}

/* Node 1: one page pinned at the start of each free 256-page block, 32
 * blocks' other pages written and freed (dirty), then runs of 144-200
 * pages, which only _nd_buddy_take_span finds (without it they fail). */
static void spans(void)
{
	enum { BL = 256, NBMAX = 1024 };
	static void *pin[NBMAX], *fill[NBMAX];
	_nd_page_info_t in;
	CHECK(_nd_page_info(1, &in) == 0 && in.usable);
	int nb = (int)(in.slot_pages / BL);
	CHECK(nb >= 8 && nb <= NBMAX, "slot of %llu pages", (unsigned long long)in.slot_pages);
	for (int b = 0; b < nb; b++) /* blocks that hold live runs take none */
		pin[b] = _nd_page_alloc_exact(1, 1, BL);
	/* the pages after the first 32 pins written (dirty when freed) */
	for (int b = 0; b < 32; b++) {
		fill[b] = _nd_page_alloc_exact(1, BL - 1, 1);
		if (fill[b])
			memset(fill[b], 0x11, (size_t)(BL - 1) << ND_PAGE_SHIFT);
	}
	for (int b = 0; b < 32; b++)
		if (fill[b])
			_nd_page_free(fill[b]);
	consistent("pinned");
	scan_clean("pinned");
	CHECK(_nd_page_info(1, &in) == 0);
	CHECK(in.largest_order < 8, "largest free order %d: no span needed", in.largest_order);
	/* 200 pages in a row: across the blocks of 1..128 pages after a pin */
	char *r[8];
	for (int k = 0; k < 8; k++) {
		r[k] = _nd_page_alloc_exact(1, 200 - 8 * k, 1);
		CHECK(r[k] != NULL, "span %d of %d pages", k, 200 - 8 * k);
		if (r[k]) {
			_nd_page_zero(r[k], (size_t)(200 - 8 * k) << ND_PAGE_SHIFT);
			for (size_t o = 0; o < ((size_t)(200 - 8 * k) << ND_PAGE_SHIFT); o += 8)
				if (*(uint64_t *)(r[k] + o)) {
					CHECK(0, "span %d: _nd_page_zero left data at %zu", k, o);
					break;
				}
		}
	}
	consistent("spans taken");
	for (int k = 0; k < 8; k++)
		if (r[k])
			_nd_page_free(r[k]);
	for (int b = 0; b < nb; b++)
		if (pin[b])
			_nd_page_free(pin[b]);
	consistent("spans freed");
	scan_clean("spans freed");
}

int main(void)
{
	int rc = nd_topology_emulate("0: cpus=0 mem=64M; 1: cpus=1 mem=64M", err, sizeof err);
	CHECK(rc == 0, "emulate: %s", err);
	for (unsigned round = 0; round < 3; round++) {
		pthread_t t[4];
		for (unsigned i = 0; i < 4; i++)
			CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(round * 4 + i)), 0);
		for (unsigned i = 0; i < 4; i++)
			CHECK_EQ(pthread_join(t[i], NULL), 0);
		churn_classes(round);
		consistent("churn");
		scan_clean("churn");
		calloc_small();
		calloc_runs();
		scan_clean("calloc");
	}
	spans();
	calloc_runs();
	calloc_small();
	scan_clean("end");
	consistent("end");
	return CHECK_DONE();
}
