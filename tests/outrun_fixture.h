// SPDX-License-Identifier: MIT
/* Shared by the tests of runs outside the slot (test_large_outrun,
 * test_large_outrun_bound, test_large_outrun_maps): a node's page-level
 * figures and public statistics now, whether p heads a run outside the
 * slots, and the split node 1 they put such runs on. */
#ifndef ND_OUTRUN_FIXTURE_H
#define ND_OUTRUN_FIXTURE_H
#include <stdlib.h>

#include "check.h"
#include "internal.h"

static _nd_page_info_t info(int node)
{
	_nd_page_info_t in;
	CHECK(_nd_page_info(node, &in) == 0);
	return in;
}

static nd_node_stats_t stats(int node)
{
	nd_stats_t s = { .version = ND_STATS_VERSION };
	CHECK(nd_stats_get(&s) == 0);
	return s.nodes[node];
}

static bool outside(const void *p)
{
	const _nd_pagedesc_t *d = _nd_page_desc(p);
	return d && (d->flags & ND_PGF_OUT) && d->state == ND_PG_RUN;
}
/* Emulated 1 GiB nodes 0 and 1, the thread on CPU 1 (node 1),
 * NODALLOC_ARENA_RESERVE=256M, node 1's slot split by one page at the
 * start of each 16 MiB block (pins[0..*n), at most max): a 40 MiB block
 * goes outside it (test_large_outrun_bound, test_large_outrun_maps). */
static inline void split_node1(char **pins, int max, int *n)
{
	char err[256];
	CHECK(nd_topology_emulate("0: cpus=0 mem=1G; 1: cpus=1 mem=1G", err, sizeof err) == 0, "%s", err);
	_nd_opt_set("arena_reserve", "256M");
	uint64_t one[16] = { 2 }; /* CPU 1: node 1 is local */
	CHECK(_nd_os_sched_setaffinity(0, sizeof one, one) == 0);
	free(malloc(64)); /* the init, the heaps */
	*n = 0;
	while (*n < max && (pins[*n] = _nd_page_alloc_exact(1, 1, 4096)))
		(*n)++;
	CHECK(*n >= 8 && info(1).largest_order < 12, "%d pins, largest free order %d", *n, info(1).largest_order);
	_nd_heap_trim_self(true);
	_nd_heap_trim_parked();
}
#endif
