// SPDX-License-Identifier: MIT
/* Page level, packed runs into gaps (buddy.c gap_of): runs of 9-20 pages
 * (git's object buffers of 36-80 KiB) freed between runs still in use
 * leave gaps of free dirty pages, each split into blocks of orders below
 * the next runs' (a 10-page gap holds blocks of 1-8 pages), which no
 * block of a run's order covers. A packed run that would take clean pages
 * takes such a gap of at least its length instead, the shortest of those
 * it looks at. Before, every such run faulted in fresh pages at the
 * slot's end while the gaps stayed committed (git log -p: 6 MiB of them
 * at its peak). Counts on a CPU-less emulated node (TN) that malloc never
 * touches. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define TN 1
#define PAIRS 16

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

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	_nd_opt_set("purge_threshold", "512K");
	_nd_opt_set("purge", "dontneed");
	_nd_opt_set("purge_decay_ms", "0"); /* nothing purged behind the test's back */
	CHECK_EQ(info().purge_pages, 128);
	char *pin = _nd_page_alloc_exact(TN, 1, 1), *big = _nd_page_alloc_exact(TN, 1024, 1);
	CHECK(pin && big && _nd_page_free(big) == 0); /* grown, clean (purged) */

	/* the shortest gap that fits: a 14-page gap (older) and a 10-page one,
	 * a run of 10 takes the 10-page one */
	char *g14 = _nd_page_alloc_exact(TN, 14, 1), *s1 = _nd_page_alloc_exact(TN, 12, 1);
	char *g10 = _nd_page_alloc_exact(TN, 10, 1), *s2 = _nd_page_alloc_exact(TN, 12, 1);
	CHECK(g14 && s1 && g10 && s2);
	CHECK(_nd_page_free(g14) == 0 && _nd_page_free(g10) == 0);
	check_slot("two gaps");
	char *fit = _nd_page_alloc_exact(TN, 10, 1);
	CHECK(fit == g10, "a run of 10 pages in the 10-page gap at %p, not %p (the 14-page gap at %p)", (void *)g10,
	      (void *)fit, (void *)g14);
	check_slot("best fit");
	CHECK(_nd_page_free(fit) == 0 && _nd_page_free(s1) == 0 && _nd_page_free(s2) == 0);
	_nd_page_trim(TN);

	/* kept runs of 12 pages with gaps of 10 between them */
	char *keep[PAIRS], *gap[PAIRS];
	for (int i = 0; i < PAIRS; i++) {
		keep[i] = _nd_page_alloc_exact(TN, 12, 1);
		gap[i] = _nd_page_alloc_exact(TN, 10, 1);
		CHECK(keep[i] && gap[i]);
	}
	char *last = _nd_page_alloc_exact(TN, 12, 1); /* the packed runs go on after it */
	for (int i = 0; i < PAIRS; i++)
		CHECK(_nd_page_free(gap[i]) == 0);
	check_slot("gaps freed");
	_nd_page_info_t in = info();
	CHECK(in.dirty_pages == PAIRS * 10, "the gaps' %d pages stay committed: %llu", PAIRS * 10,
	      (unsigned long long)in.dirty_pages);

	/* runs of 9 and 10 pages take the gaps, no fresh page */
	uint64_t c0 = in.committed_pages;
	char *r[PAIRS];
	int in_gap = 0;
	for (int i = 0; i < PAIRS; i++) {
		r[i] = _nd_page_alloc_exact(TN, i & 1 ? 9 : 10, 1);
		CHECK(r[i] != NULL);
		for (int j = 0; j < PAIRS; j++)
			in_gap += r[i] >= gap[j] && r[i] + (i & 1 ? 9 : 10) * 4096 <= gap[j] + 10 * 4096;
	}
	check_slot("gaps taken");
	in = info();
	CHECK(in_gap == PAIRS, "%d of %d runs in a gap", in_gap, PAIRS);
	CHECK(in.committed_pages == c0, "%llu fresh pages with %d dirty ones in gaps",
	      (unsigned long long)(in.committed_pages - c0), PAIRS * 10);
	CHECK(in.dirty_pages == PAIRS / 2, "the 9-page runs leave a page each: %llu", (unsigned long long)in.dirty_pages);
	for (int i = 0; i < PAIRS; i++)
		CHECK(_nd_page_free(r[i]) == 0);

	(void)last;
	return CHECK_DONE();
}
