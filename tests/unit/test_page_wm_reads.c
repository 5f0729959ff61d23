// SPDX-License-Identifier: MIT
/* Page level on the real machine (no emulation): the headroom check reads
 * /proc/zoneinfo again every 10 ms per 256 MiB of estimated headroom (at
 * most every second), not every 10 ms whatever the headroom (issue 11: 22
 * reads of 165 us in bench wl_footprint, 37 in wl_large). Fresh runs
 * taken 12 ms apart for 120 ms on a node with GiBs of headroom cost at
 * most one read after the first; with little headroom (under 3 GiB here)
 * the assertion is skipped. A node that needs the figures (the estimate
 * says no) still reads at once: the fill of test_page_watermark and the
 * VM pressure tests. */
#include <stdio.h>
#include <time.h>

#include "check.h"
#include "internal.h"

int main(void)
{
	const _nd_topo_t *t = _nd_topo();
	CHECK(!t->emulated);
	int node = t->cpu_mem_node[_nd_topo_cpu()];
	CHECK(node >= 0 && t->has_mem[node]);
	char *warm = _nd_page_alloc_exact(node, 1, 1);
	CHECK(warm != NULL);
	_nd_arena_t *a = &_nd_page_g.arenas[node];
	uint64_t spare = _nd_room_spare(a, 1);
	if (spare == UINT64_MAX) {
		printf("SKIP: no headroom check on node %d (not strict, or the MemFree rule)\n", node);
		_nd_page_free(warm);
		return CHECK_DONE();
	}
	if (spare < ((uint64_t)3 << (30 - ND_PAGE_SHIFT))) {
		printf("SKIP: node %d has %llu MiB of headroom, under 3 GiB\n", node,
		       (unsigned long long)(spare >> (20 - ND_PAGE_SHIFT)));
		_nd_page_free(warm);
		return CHECK_DONE();
	}
	uint64_t r0 = _nd_room_wm_reads();
	CHECK(r0 >= 1, "the first check read the figures");
	static char *run[10];
	for (int k = 0; k < 10; k++) {
		struct timespec ts = { 0, 12 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		run[k] = _nd_page_alloc_exact(node, 512, 1); /* 2 MiB of fresh pages: checked */
		CHECK(run[k] != NULL);
	}
	uint64_t r = _nd_room_wm_reads() - r0;
	CHECK(r <= 1, "%llu reads of the headroom in 120 ms with %llu MiB of it", (unsigned long long)r,
	      (unsigned long long)(spare >> (20 - ND_PAGE_SHIFT)));
	for (int k = 0; k < 10; k++)
		CHECK(_nd_page_free(run[k]) == 0);
	CHECK(_nd_page_free(warm) == 0);
	return CHECK_DONE();
}
