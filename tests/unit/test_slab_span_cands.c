// SPDX-License-Identifier: MIT
/* Spans (slab.c, _nd_slab_span_take): the donor class of every request
 * of 81..1024 B. With a sparse slab (one object kept in 8: runs of 7
 * free slots) at the head of each class of 80..256 B, a search for each
 * size takes its k slots from the class that loses the fewest bytes
 * (k * size - request, at most 1/8 of the request, k <= 4; on a tie the
 * smaller class), and finds none when no class qualifies: every entry of
 * the per-size table of donor classes, made at a size's first search,
 * and used again at its second. */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

static const size_t dsize[] = { 80, 96, 112, 128, 160, 192, 224, 256 };
#define ND (sizeof dsize / sizeof dsize[0])
#define PER 1024 /* objects of each donor class */
static void *obj[ND][PER];

/* The rule, by hand: the donor class (its size) and k for request n; 0
 * if none. */
static size_t want_of(size_t n, unsigned *k)
{
	size_t best = 0, bw = 0;
	for (unsigned d = 0; d < ND && dsize[d] < n; d++) {
		size_t kk = (n + dsize[d] - 1) / dsize[d], w = kk * dsize[d] - n;
		if (kk > 4 || w * 8 > n || (best && w >= bw))
			continue;
		best = dsize[d], bw = w, *k = (unsigned)kk;
	}
	return best;
}

static size_t slab_size_of(const void *p)
{
	_nd_pagedesc_t *d = _nd_page_desc(p);
	return d && d->use == ND_USE_SLAB ? ((const _nd_slab_t *)d->user)->size : 0;
}

int main(void)
{
	/* the biggest first: a malloc whose class has no slab takes a span
	 * of a smaller class's sparse slab */
	for (unsigned d = ND; d-- > 0;) {
		for (int i = 0; i < PER; i++)
			CHECK((obj[d][i] = malloc(dsize[d])) != NULL);
		CHECK_EQ(slab_size_of(obj[d][0]), dsize[d]);
		for (int i = 0; i < PER; i++)
			if (i % 8) {
				free(obj[d][i]);
				obj[d][i] = NULL;
			}
	}
	_nd_heap_t *h = _nd_tls->heap;
	unsigned spans = 0, none = 0;
	for (int round = 0; round < 2; round++)
		for (size_t n = 81; n <= 1024; n++) {
			unsigned k = 0;
			size_t want = want_of(n, &k);
			h->spskip = 0; /* a failed search skips the next one */
			void *o = _nd_slab_span_take(h, n);
			if (!want) {
				CHECK(o == NULL, "%zu B: no donor class, got a span of %zu B slots", n, slab_size_of(o));
				none++;
				continue;
			}
			CHECK(o != NULL, "%zu B: no span, want %u slots of %zu B", n, k, want);
			if (!o)
				continue;
			CHECK(slab_size_of(o) == want && malloc_usable_size(o) == k * want,
			      "%zu B (round %d): %zu B of %zu B slots, want %u of %zu B", n, round, malloc_usable_size(o),
			      slab_size_of(o), k, want);
			memset(o, 0x5a, n);
			free(o);
			spans++;
		}
	/* 794 sizes have a donor class (k = 2: 81..512 B), 150 none */
	CHECK_EQ(spans + none, 2u * 944);
	CHECK(none > 0 && spans > 0, "%u spans, %u sizes with none", spans, none);
	for (unsigned d = 0; d < ND; d++)
		for (int i = 0; i < PER; i++)
			free(obj[d][i]);
	return CHECK_DONE();
}
