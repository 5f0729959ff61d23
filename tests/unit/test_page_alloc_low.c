// SPDX-License-Identifier: MIT
/*
 * _nd_page_alloc_low (meta.c's chunks, task bigslot) takes the lowest
 * free stretch of its pages, and its walk does not start from the slot's
 * first page each time (audit20: a walk over every run below per 64 KiB
 * chunk, a heap of 1.2 GB of 3000 B objects spent 22% of its
 * instructions there, 0.5% at 0.6 GB: the square of the heap). On an
 * emulated node: 4000 one-page runs packed at the slot's start, every
 * tenth freed (holes too small), then 200 chunks of 16 pages: each above
 * the runs and above the last, the walks visiting a few descriptors per
 * run and chunk (200 x 4000 from the start each time; fails without the
 * walk's start, low_at). Freed pages below are found again: a freed
 * chunk's, then 17 freed runs' in a row at the slot's start.
 */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

#define RUNS 4000
#define CHUNKS 200
#define CP 16

static char err[256];
static char *run[RUNS], *chunk[CHUNKS];

int main(void)
{
	CHECK(nd_topology_emulate("0: cpus=0 mem=64M; 1: cpus=1 mem=64M", err, sizeof err) == 0, "%s", err);
	for (int k = 0; k < RUNS; k++) {
		run[k] = _nd_page_alloc_exact(1, 1, 1);
		CHECK(run[k] != NULL, "run %d", k);
		if (k)
			CHECK(run[k] == run[k - 1] + ND_PAGE_SIZE, "run %d packed after the last", k);
	}
	for (int k = 0; k < RUNS; k += 10)
		CHECK_EQ(_nd_page_free(run[k]), 0);
	_nd_buddy_t *b = &_nd_page_g.arenas[1].bd; /* single-threaded: no lock needed */
	uint64_t steps = b->span_steps;
	for (int c = 0; c < CHUNKS; c++) {
		chunk[c] = _nd_page_alloc_low(1, CP);
		CHECK(chunk[c] != NULL, "chunk %d", c);
		CHECK(chunk[c] > run[RUNS - 1], "chunk %d above the runs (the holes hold 1 page)", c);
		if (c)
			CHECK(chunk[c] > chunk[c - 1], "chunk %d above the last", c);
	}
	steps = b->span_steps - steps;
	CHECK(steps < 4 * (RUNS + CHUNKS), "the walks visited %llu descriptors for %d chunks over %d runs",
	      (unsigned long long)steps, CHUNKS, RUNS);

	/* a freed chunk is the lowest stretch: taken again */
	char *mid = chunk[CHUNKS / 2];
	CHECK_EQ(_nd_page_free(mid), 0);
	chunk[CHUNKS / 2] = _nd_page_alloc_low(1, CP);
	CHECK(chunk[CHUNKS / 2] == mid, "a freed chunk's pages taken again: %p, not %p", (void *)chunk[CHUNKS / 2],
	      (void *)mid);
	/* runs 1000-1016 freed (1000 and 1010 were): 17 pages in a row */
	for (int k = 1001; k <= 1016; k++)
		if (k != 1010)
			CHECK_EQ(_nd_page_free(run[k]), 0);
	char *low = _nd_page_alloc_low(1, CP);
	CHECK(low == run[1000], "the lowest stretch, at run 1000 (%p): got %p", (void *)run[1000], (void *)low);
	err[0] = '\0';
	CHECK(_nd_page_check(1, err, sizeof err) == 0, "%s", err);

	if (low)
		CHECK_EQ(_nd_page_free(low), 0);
	for (int c = 0; c < CHUNKS; c++)
		if (chunk[c])
			CHECK_EQ(_nd_page_free(chunk[c]), 0);
	for (int k = 0; k < RUNS; k++)
		if (k % 10 && (k < 1001 || k > 1016))
			CHECK_EQ(_nd_page_free(run[k]), 0);
	err[0] = '\0';
	CHECK(_nd_page_check(1, err, sizeof err) == 0, "%s", err);
	return CHECK_DONE();
}
