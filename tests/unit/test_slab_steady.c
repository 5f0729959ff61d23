// SPDX-License-Identifier: MIT
/* A cache at its memory limit (redis under maxmemory with allkeys-lru,
 * apps24): one thread keeps a constant number of 1030-byte objects live,
 * freeing a random one for each new one. Free slots land at random in
 * the class's slabs, most of them parked full; a new object must reuse
 * them rather than carve new slabs. Redis's fill held 1.66x its
 * used_memory in RSS (72% of the 1280-byte class's slots in use; jemalloc
 * 1.21x): a full slab came back to the partial list only after half its
 * objects were freed, and before a new slab only the 16 most recently
 * parked were looked at, so each of the thousands of others kept up to
 * half its slots unused. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "nodalloc.h"

#define LIVE 40000
#define SIZE 1030
static void *obj[LIVE];

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

int main(void)
{
	for (int i = 0; i < LIVE; i++)
		CHECK((obj[i] = nd_malloc(SIZE)) != NULL, "malloc %d", i);
	/* eight turnovers of the whole set, in random order */
	for (long k = 0; k < 8L * LIVE; k++) {
		size_t i = next() % LIVE;
		nd_free(obj[i]);
		obj[i] = nd_malloc(SIZE);
		if (!obj[i]) {
			CHECK(0, "malloc in round %ld", k);
			break;
		}
		((char *)obj[i])[SIZE - 1] = (char)k;
	}
	nd_class_stats_t all[64];
	int n = nd_stats_classes(all, 64);
	const nd_class_stats_t *c = NULL; /* the class of obj[0] */
	for (int k = 0; k < n; k++)
		if (all[k].size == nd_usable_size(obj[0]))
			c = &all[k];
	CHECK(c && c->objects >= LIVE, "the class holds the live objects");
	/* the slots of the slabs in use: at least 85% (a slab's own
	 * hysteresis, a quarter of its objects, leaves 88% on average) */
	if (c)
		CHECK(c->objects * 100 >= c->capacity * 85, "%llu of %llu slots in use (%llu slabs of %llu B objects)",
		      (unsigned long long)c->objects, (unsigned long long)c->capacity, (unsigned long long)c->slabs,
		      (unsigned long long)c->size);
	if (c)
		printf("%llu of %llu slots in use\n", (unsigned long long)c->objects, (unsigned long long)c->capacity);
	for (int i = 0; i < LIVE; i++)
		nd_free(obj[i]);
	return CHECK_DONE();
}
