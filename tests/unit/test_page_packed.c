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
 * invariants hold (_nd_page_check); and packed runs take gaps (gaps()).
 * Counts on CPU-less emulated nodes (TN, GN) that malloc never touches. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define TN 1
#define GN 2 /* gaps(): a slot of its own */
#define PAIRS 16
#define MAXRUNS 128

static void *run[MAXRUNS];

static _nd_page_info_t info_of(int node)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(node, &in) == 0);
	return in;
}

static _nd_page_info_t info(void)
{
	return info_of(TN);
}

static void check_of(int node, const char *when)
{
	char err[256] = "";
	CHECK(_nd_page_check(node, err, sizeof err) == 0, "%s: %s", when, err);
}

static void check_slot(const char *when)
{
	check_of(TN, when);
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

/*
 * Gaps (buddy.c gap_of), on node GN: runs of 9-20 pages (git's object
 * buffers of 36-80 KiB) freed between runs still in use leave gaps of
 * free dirty pages, each split into blocks of orders below the next
 * runs' (a 10-page gap holds blocks of 1-8 pages), which no block of a
 * run's order covers. A packed run that would take clean pages takes such
 * a gap of at least its length instead, the shortest of those it looks
 * at. Before, every such run faulted in fresh pages at the slot's end
 * while the gaps stayed committed (git log -p: 6 MiB of them at its peak).
 */
static void gaps(void)
{
	char *pin = _nd_page_alloc_exact(GN, 1, 1), *big = _nd_page_alloc_exact(GN, 1024, 1);
	CHECK(pin && big && _nd_page_free(big) == 0); /* grown, clean (purged) */

	/* the shortest gap that fits: a 14-page gap (older) and a 10-page one,
	 * a run of 10 takes the 10-page one */
	char *g14 = _nd_page_alloc_exact(GN, 14, 1), *s1 = _nd_page_alloc_exact(GN, 12, 1);
	char *g10 = _nd_page_alloc_exact(GN, 10, 1), *s2 = _nd_page_alloc_exact(GN, 12, 1);
	CHECK(g14 && s1 && g10 && s2);
	CHECK(_nd_page_free(g14) == 0 && _nd_page_free(g10) == 0);
	check_of(GN, "two gaps");
	char *fit = _nd_page_alloc_exact(GN, 10, 1);
	CHECK(fit == g10, "a run of 10 pages in the 10-page gap at %p, not %p (the 14-page gap at %p)", (void *)g10,
	      (void *)fit, (void *)g14);
	check_of(GN, "best fit");
	CHECK(_nd_page_free(fit) == 0 && _nd_page_free(s1) == 0 && _nd_page_free(s2) == 0);
	_nd_page_trim(GN);

	/* kept runs of 12 pages with gaps of 10 between them */
	char *keep[PAIRS], *gap[PAIRS];
	for (int i = 0; i < PAIRS; i++) {
		keep[i] = _nd_page_alloc_exact(GN, 12, 1);
		gap[i] = _nd_page_alloc_exact(GN, 10, 1);
		CHECK(keep[i] && gap[i]);
	}
	char *last = _nd_page_alloc_exact(GN, 12, 1); /* the packed runs go on after it */
	for (int i = 0; i < PAIRS; i++)
		CHECK(_nd_page_free(gap[i]) == 0);
	check_of(GN, "gaps freed");
	_nd_page_info_t in = info_of(GN);
	CHECK(in.dirty_pages == PAIRS * 10, "the gaps' %d pages stay committed: %llu", PAIRS * 10,
	      (unsigned long long)in.dirty_pages);

	/* runs of 9 and 10 pages take the gaps, no fresh page */
	uint64_t c0 = in.committed_pages;
	char *r[PAIRS];
	int in_gap = 0;
	for (int i = 0; i < PAIRS; i++) {
		r[i] = _nd_page_alloc_exact(GN, i & 1 ? 9 : 10, 1);
		CHECK(r[i] != NULL);
		for (int j = 0; j < PAIRS; j++)
			in_gap += r[i] >= gap[j] && r[i] + (i & 1 ? 9 : 10) * 4096 <= gap[j] + 10 * 4096;
	}
	check_of(GN, "gaps taken");
	in = info_of(GN);
	CHECK(in_gap == PAIRS, "%d of %d runs in a gap", in_gap, PAIRS);
	CHECK(in.committed_pages == c0, "%llu fresh pages with %d dirty ones in gaps",
	      (unsigned long long)(in.committed_pages - c0), PAIRS * 10);
	CHECK(in.dirty_pages == PAIRS / 2, "the 9-page runs leave a page each: %llu", (unsigned long long)in.dirty_pages);
	for (int i = 0; i < PAIRS; i++)
		CHECK(_nd_page_free(r[i]) == 0);

	(void)last;
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G; 2: mem=1G", err, sizeof err) == 0, "emulate: %s", err);
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
	gaps();
	return CHECK_DONE();
}
