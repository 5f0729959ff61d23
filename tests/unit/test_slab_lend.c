// SPDX-License-Identifier: MIT
/* A class that needs a new slab first borrows a partial slab of a class
 * at most 3/2 of its size (_nd_slab_lend, issue 11: wl_footprint's refill
 * of 32..1024 B after 90% of 1280-2048 B objects were freed): the free
 * objects of 1280 B (those in pages the purge kept) serve 1000 B requests
 * before a new slab of 1024 B is taken; a class twice as small never gets them; a lent slab that runs
 * dry goes back to its own class, whose allocations still work; freeing
 * everything gives every slab back (none dangles from a list it was lent
 * to); the kept objects are intact throughout. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define N 2400 /* objects of 1200 B: 200 slabs of 12 */
#define M 2000

static uint64_t slabs_of(size_t size)
{
	_nd_slab_class_stats_t st[ND_SLAB_CLASSES];
	int n = _nd_slab_class_stats(st, ND_SLAB_CLASSES);
	for (int c = 0; c < n; c++)
		if (st[c].size == size)
			return st[c].slabs;
	return 0;
}

static bool holds(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

int main(void)
{
	static unsigned char *big[N], *mid[M], *small[M], *again[M];
	for (int i = 0; i < N; i++) {
		big[i] = malloc(1200);
		CHECK(big[i] != NULL);
		memset(big[i], i % 10 == 0 ? 0xb0 : 0, 1200);
	}
	for (int i = 0; i < N; i++)
		if (i % 10 != 0) {
			free(big[i]);
			big[i] = NULL;
		}
	uint64_t s1024 = slabs_of(1024), s1280 = slabs_of(1280);
	CHECK(s1280 >= 150, "%llu slabs of 1280 B after the frees", (unsigned long long)s1280);

	/* 600 B (class 640): 1280 is twice that, never lent */
	for (int i = 0; i < M; i++) {
		small[i] = malloc(600);
		CHECK(small[i] != NULL && malloc_usable_size(small[i]) <= 960, "600 B in %zu",
		      small[i] ? malloc_usable_size(small[i]) : 0);
	}
	/* 1000 B (class 1024): the 1280 B slabs' free objects first */
	int lent = 0;
	for (int i = 0; i < M; i++) {
		mid[i] = malloc(1000);
		CHECK(mid[i] != NULL);
		size_t u = malloc_usable_size(mid[i]);
		CHECK(u >= 1000 && u <= 1536, "1000 B in %zu", u);
		lent += u > 1024;
		memset(mid[i], 0x3c, u);
	}
	/* the first one already; about 3 per slab (the rest of a slab's free
	 * objects are withheld in the pages the purge gave back: not lent) */
	CHECK(malloc_usable_size(mid[0]) == 1280, "first 1000 B from a lent slab");
	CHECK(lent >= M / 5, "%d of %d requests of 1000 B from lent slabs", lent, M);
	CHECK(slabs_of(1024) - s1024 <= (uint64_t)(M - lent) / 32 + 2, "1024 B slabs %llu -> %llu with %d lent",
	      (unsigned long long)s1024, (unsigned long long)slabs_of(1024), lent);
	CHECK_EQ(slabs_of(1280), s1280); /* no new slab: the lent ones serve */

	/* the class lent from still allocates (dry lent slabs are its own again) */
	for (int i = 0; i < M; i++) {
		again[i] = malloc(1200);
		CHECK(again[i] != NULL && malloc_usable_size(again[i]) == 1280);
		memset(again[i], 0x5a, 1200);
	}
	for (int i = 0; i < N; i++)
		CHECK(!big[i] || holds(big[i], 1200, 0xb0), "kept object %d intact", i);
	for (int i = 0; i < M; i++) {
		CHECK(holds(mid[i], 1000, 0x3c), "lent object %d intact", i);
		CHECK(holds(again[i], 1200, 0x5a), "object %d intact", i);
	}

	for (int i = 0; i < M; i++) {
		free(mid[i]);
		free(small[i]);
		free(again[i]);
	}
	for (int i = 0; i < N; i++)
		free(big[i]);
	/* each class keeps at most its current slab */
	CHECK(slabs_of(1024) <= 1 && slabs_of(1280) <= 1 && slabs_of(640) <= 1, "left: %llu, %llu, %llu slabs",
	      (unsigned long long)slabs_of(1024), (unsigned long long)slabs_of(1280),
	      (unsigned long long)slabs_of(640));
	return CHECK_DONE();
}
