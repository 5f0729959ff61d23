// SPDX-License-Identifier: MIT
/* Page level, thread exits' stamps (heap.c exit_trim): each call records
 * the number the next dirty block will get and returns the one recorded
 * two calls before, in one step under the slot lock. The trim by that
 * stamp takes the dirty blocks free since two exits back and leaves those
 * freed since. Until 2026-11-27 heap.c rotated the two stamps with two
 * atomic exchanges: two exits overlapping on a node could each take a
 * stamp one exit back, or their own (the first exchanged the first stamp,
 * the second exit both, then the first the second stamp), and trim pages
 * the successor thread was about to take. That interleaving is not
 * reproduced here (no hook between the two exchanges); the calls' order
 * is what the lock makes of any interleaving. */
#include <string.h>

#include "check.h"
#include "internal.h"

#define TN 1 /* a node with memory and no CPUs: malloc never takes pages there */

static uint64_t dirty(void)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(TN, &in) == 0);
	return in.dirty_pages;
}

/* a run of 4 pages, touched, then freed: 4 dirty pages */
static char *dirty_run(void)
{
	char *p = _nd_page_alloc_exact(TN, 4, 1);
	CHECK(p != NULL);
	memset(p, 1, 4 * 4096);
	return p;
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=1G; 1: mem=1G", err, sizeof err) == 0, "emulate: %s", err);
	_nd_opt_set("purge_decay_ms", "0");
	char *keep = _nd_page_alloc_exact(TN, 1, 1); /* sets the arenas up; pages in use (no limit pass) */
	CHECK(keep != NULL);
	CHECK_EQ(_nd_page_exit_stamp(-1), 0);
	CHECK_EQ(_nd_page_exit_stamp(TN), 0); /* exit 1: none two back */
	/* a and b apart, a's buddy held: freeing b merges nothing into a
	 * (a merged block is numbered anew) */
	char *a = dirty_run(), *hold = dirty_run(), *b = dirty_run();
	CHECK(_nd_page_free(a) == 0);
	CHECK_EQ(_nd_page_exit_stamp(TN), 0); /* exit 2 */
	CHECK(_nd_page_free(b) == 0);
	uint64_t d0 = dirty();
	CHECK(d0 >= 8, "%llu dirty pages", (unsigned long long)d0);
	/* exit 3: the stamp of exit 1, before both runs were freed */
	uint64_t s = _nd_page_exit_stamp(TN);
	CHECK_EQ(_nd_page_trim_older(TN, s), 0);
	CHECK_EQ(dirty(), d0);
	/* exit 4: the stamp of exit 2, between the two frees: a goes, b stays */
	s = _nd_page_exit_stamp(TN);
	CHECK(s > 0);
	CHECK_EQ(_nd_page_trim_older(TN, s), 4 * 4096);
	CHECK_EQ(dirty(), d0 - 4);
	CHECK(!(_nd_page_desc(a)->flags & ND_PGF_DIRTY), "the run freed before exit 2 was kept");
	CHECK(_nd_page_desc(b)->flags & ND_PGF_DIRTY, "the run freed after exit 2 was trimmed");
	/* exit 5: the stamp of exit 3, after b was freed */
	s = _nd_page_exit_stamp(TN);
	CHECK_EQ(_nd_page_trim_older(TN, s), 4 * 4096);
	CHECK(!(_nd_page_desc(b)->flags & ND_PGF_DIRTY), "the run freed before exit 3 was kept");
	CHECK(_nd_page_check(TN, err, sizeof err) == 0, "%s", err);
	CHECK(_nd_page_free(hold) == 0);
	CHECK(_nd_page_free(keep) == 0);
	return CHECK_DONE();
}
