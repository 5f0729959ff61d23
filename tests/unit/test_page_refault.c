// SPDX-License-Identifier: MIT
/* Page level, refaults (purge.c _nd_purge_taken): a phase that frees more
 * small runs than the dirty limit's cap (16 purge blocks) keeps and
 * allocates them all again takes the purged pages clean (faults them in);
 * those count as refaults and raise the cap of the bound on the empty
 * slabs heaps keep (_nd_purge_over), so the next such phase can keep its
 * slabs. Before, the bound stayed at the cap: a main thread freeing its
 * ~9 MiB working set every round (bench wl_order) released every kept
 * slab, and the page level purged 1-2 MiB a round that the next round
 * faulted in again. Without refaults nothing changes: the page level's own
 * limit is the same, and a slot that purged nothing gets no credit.
 * Counts on a CPU-less emulated node (TN) that malloc never touches. */
#include <string.h>

#include "check.h"
#include "internal.h"

#define TN 1 /* the node under test: memory, no CPUs */
#define RUNS 1250 /* runs of 4 pages: 5000 pages, the cap is 4096 */

static char *runs[RUNS];

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	_nd_opt_set("purge_threshold", "1M"); /* purge blocks of 256 pages: cap 4096 */
	_nd_opt_set("purge", "dontneed");
	_nd_opt_set("purge_decay_ms", "0"); /* the counts below are the limit's alone */
	void *warm = _nd_page_alloc_exact(TN, 1, 1);
	CHECK(warm != NULL);
	_nd_arena_t *a = &_nd_page_g.arenas[TN];

	/* Taken once: fresh pages, nothing purged before, no refault. */
	for (int k = 0; k < RUNS; k++) {
		runs[k] = _nd_page_alloc_exact(TN, 4, 1);
		CHECK(runs[k] != NULL);
		runs[k][0] = 1;
	}
	CHECK_EQ(a->refault_cur, 0);
	/* Holding 5000 pages, 4400 more could not be kept: the cap. */
	CHECK(_nd_purge_over(TN, 4400), "4400 pages kept under a cap of 4096");
	for (int k = 0; k < RUNS; k++)
		CHECK(_nd_page_free(runs[k]) == 0);
	_nd_page_info_t in;
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK(in.dirty_pages <= 4096 + 256, "%llu dirty pages past the cap", (unsigned long long)in.dirty_pages);
	uint64_t purged = a->lim_out;
	CHECK(purged >= 5000 - 4096 - 256, "the limit purged %llu pages", (unsigned long long)purged);

	/* Taken again: the dirty pages first, then the purged ones, clean:
	 * refaults, as many as were purged (no more: fresh pages past them
	 * are growth). */
	for (int k = 0; k < RUNS; k++) {
		runs[k] = _nd_page_alloc_exact(TN, 4, 1);
		CHECK(runs[k] != NULL);
	}
	CHECK(a->refault_cur > 0 && a->refault_cur <= purged, "%llu refaults for %llu pages purged",
	      (unsigned long long)a->refault_cur, (unsigned long long)purged);
	CHECK(a->refault_cur + 256 >= purged, "%llu refaults for %llu pages purged", (unsigned long long)a->refault_cur,
	      (unsigned long long)purged);
	/* Now the kept slabs' bound keeps the phase's pages, up to the peak
	 * (a few dirty pages, pieces of blocks, may be left over). */
	_nd_page_trim(TN); /* a stray dirty page (a block's piece) would count against the peak */
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK(!_nd_purge_over(TN, 4400), "4400 pages not kept after %llu refaults (%llu in use, %llu dirty, peak %llu)", (unsigned long long)a->refault_cur, (unsigned long long)in.used_pages, (unsigned long long)in.dirty_pages, (unsigned long long)a->peak_cur);
	CHECK(_nd_purge_over(TN, 5100), "past the peak (5001 pages in use)");

	/* The page level's own limit is unchanged: the frees purge as before. */
	for (int k = 0; k < RUNS; k++)
		CHECK(_nd_page_free(runs[k]) == 0);
	CHECK(_nd_page_info(TN, &in) == 0);
	CHECK(in.dirty_pages <= 4096 + 256, "%llu dirty pages past the cap", (unsigned long long)in.dirty_pages);
	CHECK(_nd_page_check(TN, err, sizeof err) == 0, "%s", err);
	/* A trim purges too, but that is no limit pass: it adds no pages out. */
	uint64_t out = a->lim_out;
	_nd_page_trim(TN);
	CHECK_EQ(a->lim_out, out);
	CHECK(_nd_page_free(warm) == 0);
	return CHECK_DONE();
}
