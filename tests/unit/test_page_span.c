// SPDX-License-Identifier: MIT
/* A run of n pages when free pages abound but no free buddy block of
 * order ceil_log2(n) is left (task bindfull: a bound churn of 1 B - 64 MiB
 * blocks on a 1 GiB node got 88 ENOMEM with 1.2 GiB of its 2 GiB slot
 * free, the largest free block 32 MiB): the page level takes n free
 * pages in a row across smaller blocks. One page pinned at the start of
 * every 16 MiB block of node 1's slot leaves stretches of 16 MiB - 4 KiB;
 * runs of 15.6 MiB (and 12 MiB aligned to 4 MiB) fit in them, through the
 * page level and through a large malloc under bind:1 (14 MiB). */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define BLOCK 4096u /* pages: 16 MiB */

static char err[256];

static void check_slot(const char *when)
{
	err[0] = '\0';
	CHECK(_nd_page_check(1, err, sizeof err) == 0, "%s: %s", when, err);
}

int main(void)
{
	int rc = nd_topology_emulate("0: cpus=0 mem=64M; 1: cpus=1 mem=64M", err, sizeof err);
	CHECK(rc == 0, "emulate: %s", err);
	_nd_page_info_t in;
	CHECK(_nd_page_info(1, &in) == 0 && in.usable);
	uint64_t nblocks = in.slot_pages / BLOCK;
	CHECK(nblocks >= 2 && nblocks <= 1024, "slot of %llu pages", (unsigned long long)in.slot_pages);

	/* A page at the start of each 16 MiB block: none stays free whole. */
	static void *pin[1024];
	for (uint64_t b = 0; b < nblocks; b++) {
		pin[b] = _nd_page_alloc_exact(1, 1, BLOCK);
		CHECK(pin[b] != NULL, "pin %llu", (unsigned long long)b);
	}
	CHECK(_nd_page_info(1, &in) == 0);
	CHECK(in.largest_order < 12, "largest free order %d", in.largest_order);
	check_slot("pinned");

	/* 4000 pages (order 12): free pages after a pin, across its block's
	 * smaller free blocks (was NULL, ENOMEM). */
	errno = 0;
	char *r = _nd_page_alloc_exact(1, 4000, 1);
	CHECK(r != NULL, "4000 pages: errno %d", errno);
	CHECK_EQ(_nd_page_node_of(r), 1);
	CHECK_EQ(_nd_page_desc(r)->npages, 4000);
	if (r)
		memset(r, 1, 4000ull << ND_PAGE_SHIFT); /* the whole run is ours */
	check_slot("span taken");

	/* Aligned: 3000 pages aligned to 1024 start 1024 pages into a block. */
	char *a = _nd_page_alloc_exact(1, 3000, 1024);
	CHECK(a != NULL, "3000 pages aligned to 1024: errno %d", errno);
	CHECK_EQ(((uintptr_t)a >> ND_PAGE_SHIFT) & 1023, 0);
	check_slot("aligned span taken");
	CHECK_EQ(_nd_page_free(a), 0);
	CHECK_EQ(_nd_page_free(r), 0);
	check_slot("spans freed");

	/* The same through malloc's large path under bind:1 (3500 pages:
	 * a cacheable block rounds up to 2 MiB, 3584). */
	nd_policy_t bind1;
	CHECK(nd_policy_parse("bind:1", &bind1, err, sizeof err) == 0, "%s", err);
	errno = 0;
	void *m = _nd_large_alloc(3500ull << ND_PAGE_SHIFT, 0, &bind1, -1);
	CHECK(m != NULL, "large alloc of 3500 pages under bind:1: errno %d", errno);
	CHECK_EQ(_nd_page_node_of(m), 1);
	nd_free(m);
	_nd_large_flush(1); /* its run may sit in the large-run cache */

	/* No span long enough: still ENOMEM (the pins leave 4095 in a row). */
	errno = 0;
	CHECK(_nd_page_alloc_exact(1, BLOCK, 1) == NULL && errno == ENOMEM);

	for (uint64_t b = 0; b < nblocks; b++)
		CHECK_EQ(_nd_page_free(pin[b]), 0);
	check_slot("all freed");
	CHECK(_nd_page_info(1, &in) == 0);
	CHECK_EQ(in.used_pages, 0);
	return CHECK_DONE();
}
