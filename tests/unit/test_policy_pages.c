// SPDX-License-Identifier: MIT
/* Policies through the real page level under an emulated topology whose
 * node sizes are hard capacities: bind exhausting its set fails with
 * ENOMEM, preferred falls back along its list, interleave runs per thread
 * and spread by offset, and the statistics count what happened. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "internal.h"

/* fallback of node 0: 0 1 2; of node 1: 1 0 2; of node 2: 2 1 0 */
#define SPEC "0:cpus=0,mem=4M; 1:cpus=1,mem=4M; 2:mem=4M; distance: 0-1=20,0-2=30,1-2=25"
#define RUN 256 /* pages: 1 MiB */

static char err[256];
static nd_stats_t s0, s1;

static nd_policy_t pol(const char *s)
{
	nd_policy_t p;
	memset(&p, 0, sizeof p);
	if (nd_policy_parse(s, &p, err, sizeof err) != 0)
		fprintf(stderr, "parse '%s': %s\n", s, err);
	return p;
}

#define D(node, f) ((long long)(s1.nodes[node].f - s0.nodes[node].f))

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	nd_emulate_cpu(0);
	s0.version = s1.version = ND_STATS_VERSION;

	/* bind:1-2 from a CPU of node 0: node 1 (nearest of the set) until
	 * full, then node 2, then NULL + ENOMEM; node 0 never used */
	nd_policy_t b = pol("bind:1-2");
	void *runs[32];
	int got[32], n = 0, on[3] = { 0 };
	CHECK(nd_stats_get(&s0) == 0);
	for (; n < 32; n++) {
		runs[n] = _nd_page_alloc(RUN, 1, &b, -1, &got[n]);
		if (!runs[n])
			break;
		CHECK(got[n] == 1 || got[n] == 2, "bind served node %d", got[n]);
		CHECK_EQ(_nd_page_node_of(runs[n]), got[n]);
		if (got[n] >= 0 && got[n] < 3)
			on[got[n]]++;
	}
	CHECK(n < 32 && errno == ENOMEM, "n = %d, errno = %d", n, errno);
	CHECK(on[1] >= 3 && on[2] >= 3 && on[0] == 0, "on 1: %d, on 2: %d, on 0: %d", on[1], on[2], on[0]);
	bool ordered = true; /* all of node 1 before any of node 2 */
	for (int i = 1; i < n; i++)
		ordered &= !(got[i - 1] == 2 && got[i] == 1);
	CHECK(ordered);
	CHECK(nd_stats_get(&s1) == 0);
	/* intended node 1 every time: hits on 1, misses on 2 + foreign on 1;
	 * the CPU's node is 0, so all of them other_node */
	CHECK_EQ(D(1, numa_hit), on[1]);
	CHECK_EQ(D(2, numa_miss), on[2]);
	CHECK_EQ(D(1, numa_foreign), on[2]);
	CHECK_EQ(D(1, other_node), on[1]);
	CHECK_EQ(D(2, other_node), on[2]);
	CHECK_EQ(D(0, local_node), 0);
	CHECK_EQ(D(1, bytes_in_use), (long long)on[1] * RUN * 4096);
	/* a forced node outside the set is ignored: still NULL */
	CHECK(_nd_page_alloc(RUN, 1, &b, 0, NULL) == NULL && errno == ENOMEM);

	/* preferred:2 with 1 and 2 full: falls back along 2's list to 0 */
	nd_policy_t p2 = pol("preferred:2");
	int g = -1;
	void *pr = _nd_page_alloc(RUN, 1, &p2, -1, &g);
	CHECK(pr != NULL && g == 0, "got node %d", g);
	if (pr)
		_nd_page_free(pr);
	for (int i = 0; i < n; i++)
		CHECK_EQ(_nd_page_free(runs[i]), 0);

	/* interleave per thread, 2-page granule, single pages: 2 on 0, 2 on 1,
	 * 2 on 2, ... in that exact order */
	nd_policy_t il = pol("interleave:0-2@8K");
	_nd_policy_reset_cursor();
	CHECK(nd_stats_get(&s0) == 0);
	void *pg[24];
	bool seq = true;
	for (int i = 0; i < 24; i++) {
		pg[i] = _nd_page_alloc(1, 1, &il, -1, &g);
		seq &= pg[i] != NULL && g == (i / 2) % 3 && _nd_page_node_of(pg[i]) == g;
	}
	CHECK(seq, "pages not 2 per node in turn");
	CHECK(nd_stats_get(&s1) == 0);
	for (int k = 0; k < 3; k++) {
		CHECK_EQ(D(k, interleave_hit), 8);
		CHECK_EQ(D(k, numa_hit), 8);
	}
	CHECK_EQ(D(0, local_node), 8);
	CHECK_EQ(D(1, other_node), 8);
	for (int i = 0; i < 24; i++)
		if (pg[i])
			_nd_page_free(pg[i]);

	/* by offset inside one allocation: granule g on node g mod 3 (spread
	 * cursor at 0: the run starts at the first node) */
	_nd_policy_reset_spread_cursor();
	void *sp = _nd_page_alloc_spread(12, &il);
	CHECK(sp != NULL, "spread: errno %d", errno);
	if (sp) {
		bool off = true;
		for (int i = 0; i < 12; i++)
			off &= _nd_page_node_of((char *)sp + (size_t)i * 4096) == (i / 2) % 3;
		CHECK(off, "spread pages not on node (page/2) %% 3");
		_nd_page_free(sp);
	}
	nd_policy_t w = pol("weighted:0=3,2=1");
	sp = _nd_page_alloc_spread(8, &w);
	CHECK(sp != NULL);
	if (sp) {
		/* The 12-page run used 6 whole granules: this one starts at
		 * granule index 6, i.e. 6 mod 4 = 2 into the round 0,0,0,2. */
		int want[4] = { 0, 0, 0, 2 };
		bool off = true;
		for (int i = 0; i < 8; i++)
			off &= _nd_page_node_of((char *)sp + (size_t)i * 4096) == want[(6 + i) % 4];
		CHECK(off, "weighted spread pages misplaced");
		_nd_page_free(sp);
	}
	return CHECK_DONE();
}
