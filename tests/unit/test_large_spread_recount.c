// SPDX-License-Identifier: MIT
/*
 * A spread allocation whose fresh run fell back (a node short) while
 * cached runs held that node's pages gives the run back, flushes the
 * caches and places it again (large.c spread_run, task spread64). The
 * first placement's statistics must go with it: the block is counted
 * once, as the run it got (task audit26; before: numa_hit/numa_miss
 * counted for both placements, 2048 + 2048 granules for an 8 MiB block
 * of 4 KiB granules, numa_miss and numa_foreign for granules the block
 * never had).
 *
 * Emulated machine: node 0 has the CPUs, node 1 is CPU-less with
 * 256 MiB. Node 1 is filled with bound 4 MiB blocks, one is freed (node
 * 1's large cache keeps it, committed), then an 8 MiB block interleaved
 * over both nodes wants 4 MiB of node 1.
 */
#define _GNU_SOURCE
#include <malloc.h>

#include "check.h"
#include "internal.h"
#include "stats_fixture.h"

#define MiB ((size_t)1 << 20)
#define NBLK 128

static nd_policy_t policy(const char *s)
{
	nd_policy_t p;
	char err[256] = "";
	CHECK(nd_policy_parse(s, &p, err, sizeof err) == 0, "%s: %s", s, err);
	return p;
}

typedef struct {
	uint64_t hit, miss, foreign, il, local, other;
} counts_t;

static counts_t counts(void)
{
	counts_t c = { 0 };
	for (int n = 0; n < 2; n++) {
		const nd_node_stats_t *s = node_stats(n);
		c.hit += s->numa_hit;
		c.miss += s->numa_miss;
		c.foreign += s->numa_foreign;
		c.il += s->interleave_hit;
		c.local += s->local_node;
		c.other += s->other_node;
	}
	return c;
}

static void counted_once(void)
{
	nd_policy_t bind1 = policy("bind:1"), il = policy("interleave:0,1");
	static char *blk[NBLK];
	int n = 0;
	while (n < NBLK && (blk[n] = nd_malloc_policy(4 * MiB, &bind1)) != NULL)
		n++;
	CHECK(n >= 32 && n < NBLK, "node 1 took %d blocks of 4 MiB", n);
	nd_free(blk[--n]); /* cached: node 1 keeps it committed */
	CHECK(_nd_large_cached(1) == 4 * MiB, "node 1 caches %zu", _nd_large_cached(1));
	counts_t a = counts();
	char *p = nd_malloc_policy(8 * MiB, &il);
	counts_t b = counts();
	CHECK(p != NULL);
	/* placed as the policy wants after the flush: every granule a hit */
	size_t on1 = 0;
	for (size_t o = 0; p && o < 8 * MiB; o += ND_PAGE_SIZE)
		on1 += nd_node_of(p + o) == 1;
	CHECK_EQ(on1, 1024);
	CHECK_EQ(_nd_large_cached(1), 0); /* the flush happened: the path under test ran */
	/* 2048 granules of 4 KiB, counted once each */
	CHECK_EQ(b.hit + b.miss - a.hit - a.miss, 2048);
	CHECK_EQ(b.hit - a.hit, 2048);
	CHECK_EQ(b.il - a.il, 2048);
	CHECK_EQ(b.miss - a.miss, 0);
	CHECK_EQ(b.foreign - a.foreign, 0);
	CHECK_EQ(b.local + b.other - a.local - a.other, 2048);
	nd_free(p);
	while (n > 0)
		nd_free(blk[--n]);
	_nd_large_flush(-1);
	char err[256] = "";
	CHECK(_nd_page_check(-1, err, sizeof err) == 0, "%s", err);
}

int main(void)
{
	char err[256] = "";
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=2G; 1: mem=256M", err, sizeof err) == 0, "emulate: %s", err);
	_nd_opt_set("large_decay_ms", "10000");
	counted_once();
	return CHECK_DONE();
}
