// SPDX-License-Identifier: MIT
/* Kept empty slabs of a thread other than the main one (slab.c keep_empty,
 * purge.c _nd_purge_room). Such a thread's frees of small runs (its
 * burst) raise its page level's cap, so the page level keeps dirty pages
 * all the way back to the recent peak; the bound on kept slabs plus dirty
 * pages was then always full, and the heap gave back every slab that
 * emptied: each refill made a slab again from the page level (bench
 * wl_order in one spawned thread: 376 slabs a round, 554M instructions
 * in 150 rounds against the main thread's 305M). Now the page level's
 * oldest dirty pages make way for the kept slabs.
 * A spawned thread runs rounds of NB blocks of [lo, 1000] B (lo moving
 * each round, as wl_order's: the classes one round empties are not all
 * the next one's), each allocated, freed in allocation order, allocated
 * again and freed in a 7-stride order; the page runs taken (one per slab
 * made; nothing else allocates meanwhile) are counted over the second
 * cycle of rounds. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

enum { NB = 10000, CYCLE = 15, STRIDE = 7, MAX = 1000 };
static char *p[NB];
static uint64_t made, used_slabs;

/* Page runs the page level handed out so far (every node). */
static uint64_t runs(void)
{
	nd_stats_t st;
	st.version = ND_STATS_VERSION;
	if (nd_stats_get(&st) != 0)
		return 0;
	uint64_t n = 0;
	for (int i = 0; i < st.node_limit && i < ND_STATS_NODES; i++)
		n += st.nodes[i].numa_hit + st.nodes[i].numa_miss;
	return n;
}

/* Slabs alive (kept ones count: their headers name a heap). */
static uint64_t slabs(void)
{
	nd_class_stats_t cs[64];
	int n = nd_stats_classes(cs, 64);
	uint64_t k = 0;
	for (int i = 0; i < n && i < 64; i++)
		k += cs[i].slabs;
	return k;
}

static void fill(size_t lo, uint64_t *rng)
{
	for (int i = 0; i < NB; i++) {
		*rng ^= *rng << 13;
		*rng ^= *rng >> 7;
		*rng ^= *rng << 17;
		size_t sz = lo + *rng % (MAX - lo + 1);
		p[i] = malloc(sz);
		p[i][0] = (char)sz;
	}
}

static void *worker(void *arg)
{
	(void)arg;
	uint64_t rng = 0x9e3779b97f4a7c15ull, before = 0;
	size_t lo = 1;
	for (int r = 0; r < 2 * CYCLE; r++, lo = lo * 3 / 2 + 1 > MAX ? 1 : lo * 3 / 2 + 1) {
		if (r == CYCLE)
			before = runs();
		fill(lo, &rng);
		if (r >= CYCLE) {
			uint64_t k = slabs();
			used_slabs = k > used_slabs ? k : used_slabs;
		}
		for (int i = 0; i < NB; i++)
			free(p[i]);
		fill(lo, &rng);
		for (int i = 0, k = 0; i < NB; i++, k = (k + STRIDE) % NB)
			free(p[k]);
	}
	made = runs() - before;
	return NULL;
}

int main(void)
{
	free(malloc(1)); /* the main thread's heap */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
	pthread_join(t, NULL);
	/* a round holds ~300 slabs; before, the cycle made 6.1k (409 a
	 * round), now ~350 in all */
	CHECK(used_slabs >= 100, "the rounds hold %llu slabs", (unsigned long long)used_slabs);
	CHECK(made <= used_slabs * 2, "%llu slabs made in %d rounds, %llu in use at most: %.1f a round",
	      (unsigned long long)made, CYCLE, (unsigned long long)used_slabs, (double)made / CYCLE);
	return CHECK_DONE();
}
