// SPDX-License-Identifier: MIT
/* Page level under an emulated topology: hard capacity of a node,
 * fallback along the list (preferred), ENOMEM under bind, memoryless
 * nodes, spread runs placed granule by granule exactly as the policy says
 * (with fallback and rollback), and NUMA statistics after a known
 * sequence equal to hand-counted values. */
#include <errno.h>

#include "check.h"
#include "internal.h"

#define NODE_PAGES (64u << 20 >> ND_PAGE_SHIFT) /* 64 MiB nodes */

static nd_policy_t pref0, pref1, bind0, bind01, il01, wt01;
static nd_stats_t before, after;
static char err[256];

static void snap(nd_stats_t *s)
{
	s->version = ND_STATS_VERSION;
	CHECK(nd_stats_get(s) == 0);
}
#define D(node, field) ((long long)(after.nodes[node].field - before.nodes[node].field))

static void parse(const char *s, nd_policy_t *p)
{
	CHECK(nd_policy_parse(s, p, err, sizeof err) == 0, "%s: %s", s, err);
}

static void check_slots(const char *when)
{
	for (int n = -1; n <= 2; n++) {
		err[0] = '\0';
		CHECK(_nd_page_check(n, err, sizeof err) == 0, "%s: node %d: %s", when, n, err);
	}
}

int main(void)
{
	/* Before anything allocates: two 64 MiB nodes, a memoryless one. */
	int rc = nd_topology_emulate("0: cpus=0-1 mem=64M; 1: cpus=2-3 mem=64M; 2: cpus=4-5 mem=0;"
				     "distance: 0-1=20, 0-2=15, 1-2=20",
				     err, sizeof err);
	CHECK(rc == 0, "emulate: %s", err);
	nd_emulate_cpu(0); /* a CPU of node 0 */
	parse("preferred:0", &pref0);
	parse("preferred:1", &pref1);
	parse("bind:0", &bind0);
	parse("bind:0-1", &bind01);
	parse("interleave:0-1@8K", &il01);
	parse("weighted:0=3,1=1", &wt01);
	CHECK_EQ(il01.granularity_shift, 1);

	/* Memoryless node: no slot capacity at all. */
	errno = 0;
	CHECK(_nd_page_alloc_exact(2, 1, 1) == NULL && errno == ENOMEM);
	_nd_page_info_t in;
	CHECK(_nd_page_info(2, &in) == 0 && !in.usable);
	CHECK(_nd_page_info(0, &in) == 0 && in.usable);
	CHECK_EQ(in.capacity_pages, NODE_PAGES);

	/* Fill node 0 exactly: 64 runs of 256 pages, then nothing more. */
	static void *runs[64];
	int nr = 0;
	while (nr < 64 && (runs[nr] = _nd_page_alloc_exact(0, 256, 1)) != NULL)
		nr++;
	CHECK_EQ(nr, 64);
	errno = 0;
	CHECK(_nd_page_alloc_exact(0, 1, 1) == NULL && errno == ENOMEM);
	CHECK(_nd_page_info(0, &in) == 0);
	CHECK_EQ(in.used_pages, NODE_PAGES);
	CHECK_EQ(_nd_topo_node_free(0), 0);
	CHECK_EQ(_nd_topo_node_free(1), 64u << 20);

	/* Known sequence for the statistics, from a CPU of node 0. */
	snap(&before);
	int got = -2;
	void *a1 = _nd_page_alloc(2, 1, &pref1, -1, &got); /* hit on 1, other */
	CHECK(a1 && got == 1);
	void *a2 = _nd_page_alloc(3, 1, &pref1, -1, &got); /* hit on 1, other */
	CHECK(a2 && got == 1);
	void *a3 = _nd_page_alloc(1, 1, &pref0, -1, &got); /* node 0 full: miss on 1, foreign on 0 */
	CHECK(a3 && got == 1, "preferred:0 with node 0 full went to %d", got);
	CHECK_EQ(_nd_page_node_of(a3), 1);
	errno = 0;
	void *a4 = _nd_page_alloc(1, 1, &bind0, -1, &got); /* bind: ENOMEM, nothing counted */
	CHECK(a4 == NULL && errno == ENOMEM && got == -1);
	void *a5 = _nd_page_alloc_exact(1, 4, 1); /* exact: bytes only */
	CHECK(a5 != NULL);
	snap(&after);
	CHECK_EQ(D(1, numa_hit), 2);
	CHECK_EQ(D(1, numa_miss), 1);
	CHECK_EQ(D(0, numa_foreign), 1);
	CHECK_EQ(D(0, numa_hit), 0);
	CHECK_EQ(D(0, numa_miss), 0);
	CHECK_EQ(D(1, numa_foreign), 0);
	CHECK_EQ(D(1, other_node), 3);
	CHECK_EQ(D(1, local_node), 0);
	CHECK_EQ(D(0, local_node), 0);
	CHECK_EQ(D(1, interleave_hit), 0);
	CHECK_EQ(D(1, bytes_in_use), (2 + 3 + 1 + 4) * 4096);
	CHECK_EQ(D(1, bytes_committed), (2 + 3 + 1 + 4) * 4096);
	CHECK_EQ(D(0, bytes_in_use), 0);
	CHECK_EQ(after.nodes[0].bytes_reserved, in.slot_bytes);
	CHECK_EQ(after.nodes[1].bytes_reserved, in.slot_bytes);
	CHECK_EQ(after.nodes[2].bytes_reserved, 0);
	CHECK_EQ(after.nodes[0].bytes_in_use, (uint64_t)NODE_PAGES * 4096);

	/* bind over both nodes falls to 1; freeing one run of node 0 makes
	 * room for bind:0 again, local hit from CPU 0. */
	void *a6 = _nd_page_alloc(1, 1, &bind01, -1, &got);
	CHECK(a6 && got == 1);
	CHECK(_nd_page_free(runs[--nr]) == 0);
	CHECK_EQ(_nd_topo_node_free(0), 256 * 4096);
	snap(&before);
	void *a7 = _nd_page_alloc(8, 8, &bind0, -1, &got);
	CHECK(a7 && got == 0);
	snap(&after);
	CHECK_EQ(D(0, numa_hit), 1);
	CHECK_EQ(D(0, local_node), 1);
	CHECK_EQ(D(0, bytes_in_use), 8 * 4096);

	/* Emptied nodes; all charges given back. */
	void *mine[] = { a1, a2, a3, a5, a6, a7 };
	for (unsigned k = 0; k < sizeof mine / sizeof *mine; k++)
		CHECK(_nd_page_free(mine[k]) == 0);
	while (nr)
		CHECK(_nd_page_free(runs[--nr]) == 0);
	CHECK(_nd_page_info(0, &in) == 0);
	CHECK_EQ(in.used_pages, 0);
	CHECK(_nd_page_info(1, &in) == 0);
	CHECK_EQ(in.used_pages, 0);
	CHECK_EQ(_nd_topo_node_free(0), 64u << 20);
	check_slots("after the capacity phase");

	/* Spread: 11 pages of 2-page granules over 0,1: 0 0 1 1 0 0 1 1 0 0 1. */
	snap(&before);
	_nd_policy_reset_spread_cursor(); /* this run starts at the first node */
	char *s = _nd_page_alloc_spread(11, &il01);
	CHECK(s != NULL, "errno %d", errno);
	snap(&after);
	if (s) {
		CHECK(_nd_page_node_of(s) >= 0);
		CHECK_EQ(_nd_page_desc(s)->state, ND_PG_RUN);
		CHECK_EQ(_nd_page_desc(s)->npages, 11);
		for (int j = 0; j < 11; j++) {
			int want = _nd_policy_node_for_granule(&il01, (uint64_t)j / 2);
			CHECK_EQ(_nd_page_node_of(s + j * 4096 + 5), want);
			CHECK_EQ(want, (j / 2) % 2);
		}
		CHECK_EQ(D(0, interleave_hit), 3);
		CHECK_EQ(D(1, interleave_hit), 3);
		CHECK_EQ(D(0, numa_hit), 3);
		CHECK_EQ(D(1, numa_hit), 3);
		CHECK_EQ(D(0, local_node), 3);
		CHECK_EQ(D(1, other_node), 3);
		CHECK_EQ(D(0, bytes_in_use), 6 * 4096);
		CHECK_EQ(D(1, bytes_in_use), 5 * 4096);
		CHECK(_nd_page_info(1, &in) == 0);
		CHECK_EQ(in.used_pages, 5);
		CHECK(_nd_page_free(s + 4096) == -1); /* interior */
		CHECK(_nd_page_free(s) == 0);
		CHECK_EQ(_nd_page_node_of(s), -1); /* free mixed pages have no node */
		CHECK(_nd_page_info(1, &in) == 0);
		CHECK_EQ(in.used_pages, 0);
	}

	/* Weighted 3:1 by page: 0 0 0 1 0 0 0 1 ..., from granule index 5
	 * (the 11-page run used 5 whole granules: the spread cursor moved 5). */
	char *w = _nd_page_alloc_spread(16, &wt01);
	CHECK(w != NULL);
	for (int j = 0; w && j < 16; j++)
		CHECK_EQ(_nd_page_node_of(w + j * 4096), (5 + j) % 4 == 3 ? 1 : 0);
	CHECK(w && _nd_page_free(w) == 0);

	/* Node 1 full: its granules fall back to node 0 (interleave falls
	 * back along the list), counted as misses. */
	nr = 0;
	while (nr < 64 && (runs[nr] = _nd_page_alloc_exact(1, 256, 1)) != NULL)
		nr++;
	CHECK_EQ(nr, 64);
	snap(&before);
	char *f = _nd_page_alloc_spread(8, &il01);
	CHECK(f != NULL);
	snap(&after);
	for (int j = 0; f && j < 8; j++)
		CHECK_EQ(_nd_page_node_of(f + j * 4096), 0);
	CHECK_EQ(D(0, numa_hit), 2);
	CHECK_EQ(D(0, numa_miss), 2);
	CHECK_EQ(D(1, numa_foreign), 2);
	CHECK_EQ(D(0, interleave_hit), 2);

	/* Both full: the spread fails whole and gives every charge back. */
	void *fill[64];
	int nf = 0;
	while (nf < 64 && (fill[nf] = _nd_page_alloc_exact(0, 256, 1)) != NULL)
		nf++;
	_nd_page_info_t i0, i1;
	_nd_page_info(0, &i0);
	errno = 0;
	char *big = _nd_page_alloc_spread(600, &il01); /* node 0 has ~224 pages left */
	CHECK(big == NULL && errno == ENOMEM);
	_nd_page_info(0, &in);
	CHECK_EQ(in.used_pages, i0.used_pages);
	_nd_page_info(1, &i1);
	CHECK_EQ(i1.used_pages, NODE_PAGES);
	CHECK_EQ(_nd_topo_node_free(0), (NODE_PAGES - i0.used_pages) * 4096ull);
	_nd_page_info(-1, &in);
	check_slots("after the failed spread");

	while (nf)
		CHECK(_nd_page_free(fill[--nf]) == 0);
	while (nr)
		CHECK(_nd_page_free(runs[--nr]) == 0);
	CHECK(f && _nd_page_free(f) == 0);
	_nd_page_info(-1, &in);
	CHECK_EQ(in.free_pages, in.slot_pages);
	CHECK_EQ(in.free_blocks, 1);
	_nd_page_info(0, &in);
	CHECK_EQ(in.used_pages, 0);
	check_slots("at the end");
	nd_emulate_cpu(-1);
	return CHECK_DONE();
}
