// SPDX-License-Identifier: MIT
/* Page level, packed runs (buddy.c _nd_buddy_take_next): small runs of
 * 16-32 pages (bench wl_burst's 64-128 KiB blocks), freed, then taken
 * again in other sizes, reuse the freed (dirty) pages instead of faulting
 * in fresh ones. Cut each from its own block of 32 pages, a run longer
 * than the dirty part of the block it got took fresh pages while the
 * dirty tails of the others sat unused: 10-15% of the pages of every
 * round were fresh (wl_burst's refaults and its peak RSS, 1.17x glibc's).
 * Also: a packed run starts where the last one ended, across buddies, or
 * where the last one started once that one is freed, and the slot's
 * invariants hold (_nd_page_check). Counts on a CPU-less
 * emulated node (TN) that malloc never touches. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define TN 1
#define MAXRUNS 128

static void *run[MAXRUNS];

static _nd_page_info_t info(void)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(TN, &in) == 0);
	return in;
}

static void check_slot(const char *when)
{
	char err[256] = "";
	CHECK(_nd_page_check(TN, err, sizeof err) == 0, "%s: %s", when, err);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t pages_16_32(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return 16 + rng % 17;
}

/* Runs of 16-32 pages until `total` pages; returns how many, their pages in *got. */
static int fill(uint64_t total, uint64_t *got)
{
	int n = 0;
	*got = 0;
	while (n < MAXRUNS) {
		uint64_t np = pages_16_32();
		if (*got + np > total)
			break;
		run[n] = _nd_page_alloc_exact(TN, np, 1);
		CHECK(run[n] != NULL, "run %d of %llu pages", n, (unsigned long long)np);
		if (!run[n])
			break;
		*got += np;
		n++;
	}
	return n;
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	_nd_opt_set("purge_threshold", "512K");
	_nd_opt_set("purge", "dontneed");
	_nd_opt_set("purge_decay_ms", "0"); /* nothing purged behind the test's back */
	_nd_page_info_t in = info();
	CHECK_EQ(in.purge_pages, 128);

	/* consecutive packed runs: each starts where the last one ended
	 * (the slot grown first, under a one-page run that keeps it so) */
	char *pin = _nd_page_alloc_exact(TN, 1, 1), *big = _nd_page_alloc_exact(TN, 512, 1);
	CHECK(pin && big && _nd_page_free(big) == 0);
	char *a = _nd_page_alloc_exact(TN, 20, 1), *b = _nd_page_alloc_exact(TN, 25, 1);
	CHECK(a == pin + 4096 && b == a + 20 * 4096, "runs of 20 and 25 pages right after a run of 1 (%p, %p, %p)",
	      (void *)pin, (void *)a, (void *)b);
	check_slot("packed runs");
	/* the last one freed: the next one starts where it did */
	CHECK(_nd_page_free(b) == 0);
	b = _nd_page_alloc_exact(TN, 30, 1);
	CHECK(b == a + 20 * 4096, "a run of 30 pages where the freed last one was (%p after %p)", (void *)b, (void *)a);
	CHECK(_nd_page_free(a) == 0 && _nd_page_free(b) == 0);
	check_slot("packed runs freed");
	_nd_page_trim(TN);

	/* a round of runs, freed (dirty, under the dirty limit's cap of 16
	 * purge blocks), then a round of other sizes over fewer pages */
	uint64_t got1, got2;
	int n1 = fill(1800, &got1);
	check_slot("first round");
	for (int i = 0; i < n1; i++)
		CHECK(_nd_page_free(run[i]) == 0);
	check_slot("first round freed");
	in = info();
	CHECK(in.dirty_pages == got1, "the first round's %llu pages stay committed: %llu", (unsigned long long)got1,
	      (unsigned long long)in.dirty_pages);
	for (int r = 0; r < 3; r++) {
		uint64_t c0 = info().committed_pages;
		int n2 = fill(got1 - 64, &got2);
		check_slot("next round");
		uint64_t fresh = info().committed_pages - c0;
		CHECK(fresh <= got2 / 64, "round %d: %llu of its %llu pages fresh, with %llu freed ones to reuse", r + 1,
		      (unsigned long long)fresh, (unsigned long long)got2, (unsigned long long)got1);
		for (int i = 0; i < n2; i++)
			CHECK(_nd_page_free(run[i]) == 0);
		check_slot("next round freed");
		got1 = info().dirty_pages;
	}
	return CHECK_DONE();
}
