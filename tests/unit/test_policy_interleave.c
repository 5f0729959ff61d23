// SPDX-License-Identifier: MIT
/* Interleave and weighted interleave: the per-thread round robin (the node
 * changes once it has had 2^k pages, times its weight: seed 001's "the
 * allocation size decides"), and the by-offset form inside one allocation.
 * Distributions must be exact to one granule. */
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "policy_fixture.h"

#define SPEC POLICY_SPEC5


static int pick(const nd_policy_t *p, size_t npages)
{
	_nd_policy_iter_t it;
	return _nd_policy_first_n(&it, p, -1, npages);
}

/* Pages per node after n allocations of npages each. */
static void spread(const char *policy, int n, size_t npages, uint64_t pages[5])
{
	nd_policy_t p = pol(policy);
	_nd_policy_reset_cursor();
	memset(pages, 0, 5 * sizeof pages[0]);
	for (int i = 0; i < n; i++) {
		int node = pick(&p, npages);
		if (node >= 0 && node < 5)
			pages[node] += npages;
	}
}

static void *other_thread(void *arg)
{
	nd_policy_t *p = arg;
	/* a fresh thread's cursor starts at the set's first node */
	return (void *)(intptr_t)pick(p, 1);
}

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	nd_emulate_cpu(0);

	/* single pages, 2^3-page granule: 8 on a node, then the next */
	nd_policy_t il = pol("interleave:0-2@32K");
	_nd_policy_reset_cursor();
	int seq[48];
	for (int i = 0; i < 48; i++)
		seq[i] = pick(&il, 1);
	bool ok = true;
	for (int i = 0; i < 48; i++)
		ok &= seq[i] == (i / 8) % 3;
	CHECK(ok, "8 pages per node in turn: %d %d %d ... %d %d", seq[0], seq[7], seq[8], seq[16], seq[24]);

	/* many allocations: exact to one granule */
	uint64_t pg[5];
	spread("interleave:0-2@32K", 1000, 1, pg); /* 1000 = 41 * 24 + 16 */
	CHECK(pg[0] == 41 * 8 + 8 && pg[1] == 41 * 8 + 8 && pg[2] == 41 * 8 && pg[3] == 0, "%llu %llu %llu",
	      (unsigned long long)pg[0], (unsigned long long)pg[1], (unsigned long long)pg[2]);
	/* 3-page allocations, 8-page granule: a node keeps the cursor until it
	 * has had 8 pages, so it gets 3 allocations (9 pages) per turn */
	_nd_policy_reset_cursor();
	for (int i = 0; i < 9; i++)
		seq[i] = pick(&il, 3);
	CHECK(seq[0] == 0 && seq[2] == 0 && seq[3] == 1 && seq[5] == 1 && seq[6] == 2 && seq[8] == 2);
	/* the page over the quota is carried as the node's debt (deficit
	 * round robin): 9003 pages split within one allocation of exact */
	spread("interleave:0-2@32K", 3001, 3, pg);
	CHECK(pg[0] == 3003 && pg[1] == 3000 && pg[2] == 3000, "%llu %llu %llu", (unsigned long long)pg[0],
	      (unsigned long long)pg[1], (unsigned long long)pg[2]);
	/* runs of a granule or more: every allocation moves on */
	spread("interleave:0-2@32K", 300, 16, pg);
	CHECK(pg[0] == 1600 && pg[1] == 1600 && pg[2] == 1600);
	/* k = 0 (one page): the old kernel behaviour, node per allocation */
	spread("interleave:1,3", 10, 5, pg);
	CHECK(pg[1] == 25 && pg[3] == 25 && pg[0] == 0 && pg[2] == 0);
	spread("interleave:0-3", 1003, 1, pg);
	CHECK(pg[0] == 251 && pg[1] == 251 && pg[2] == 251 && pg[3] == 250);

	/* weighted: a node of weight w gets w granules per round */
	nd_policy_t w = pol("weighted:0=3,2=1@8K");
	_nd_policy_reset_cursor();
	for (int i = 0; i < 16; i++)
		seq[i] = pick(&w, 1);
	ok = true;
	for (int i = 0; i < 16; i++)
		ok &= seq[i] == ((i % 8) < 6 ? 0 : 2);
	CHECK(ok, "6 pages on 0, 2 on 2: %d %d %d %d", seq[5], seq[6], seq[7], seq[8]);
	spread("weighted:0=3,2=1@8K", 8000, 1, pg);
	CHECK(pg[0] == 6000 && pg[2] == 2000 && pg[1] == 0);
	spread("weighted:0=3,2=1@8K", 8003, 1, pg); /* 3 more pages: on 0 */
	CHECK(pg[0] == 6003 && pg[2] == 2000);
	spread("weighted:0=1,1=2,3=5", 800, 1, pg);
	CHECK(pg[0] == 100 && pg[1] == 200 && pg[3] == 500 && pg[2] == 0);

	/* the cursor follows a change of set: the next node of the new set */
	_nd_policy_reset_cursor();
	CHECK_EQ(pick(&il, 1), 0);
	nd_policy_t il1 = pol("interleave:1");
	CHECK_EQ(pick(&il1, 1), 1); /* one page granule: cursor moves past 1 */
	nd_policy_t il02 = pol("interleave:0,2");
	CHECK_EQ(pick(&il02, 1), 2); /* cursor at 2 (after 1) is in the set */
	CHECK_EQ(pick(&il02, 1), 0);

	/* each thread has its own cursor */
	_nd_policy_reset_cursor();
	CHECK_EQ(pick(&il02, 1), 0);
	pthread_t th;
	void *r;
	CHECK(pthread_create(&th, NULL, other_thread, &il02) == 0);
	CHECK(pthread_join(th, &r) == 0);
	CHECK_EQ((intptr_t)r, 0);
	CHECK_EQ(pick(&il02, 1), 2); /* ours moved on regardless */

	/* by offset inside one allocation */
	nd_policy_t off = pol("interleave:0,2,3@2M");
	int o[7];
	for (int g = 0; g < 7; g++)
		o[g] = _nd_policy_node_for_granule(&off, (uint64_t)g);
	CHECK(o[0] == 0 && o[1] == 2 && o[2] == 3 && o[3] == 0 && o[4] == 2 && o[5] == 3 && o[6] == 0);
	CHECK_EQ(_nd_policy_node_for_granule(&off, (uint64_t)1 << 40), 2); /* 2^40 % 3 == 1 */
	uint64_t cnt[5] = { 0 };
	for (uint64_t g = 0; g < 1000; g++)
		cnt[_nd_policy_node_for_granule(&off, g)]++;
	CHECK(cnt[0] == 334 && cnt[2] == 333 && cnt[3] == 333);
	nd_policy_t woff = pol("weighted:0=3,1=1");
	for (int g = 0; g < 6; g++)
		o[g] = _nd_policy_node_for_granule(&woff, (uint64_t)g);
	CHECK(o[0] == 0 && o[1] == 0 && o[2] == 0 && o[3] == 1 && o[4] == 0 && o[5] == 0);
	memset(cnt, 0, sizeof cnt);
	for (uint64_t g = 0; g < 4002; g++)
		cnt[_nd_policy_node_for_granule(&woff, g)]++;
	CHECK(cnt[0] == 3002 && cnt[1] == 1000);
	nd_policy_t bind = pol("bind:0-1");
	CHECK_EQ(_nd_policy_node_for_granule(&bind, 0), -1);
	/* the offset form does not touch the thread's cursor */
	_nd_policy_reset_cursor();
	_nd_policy_node_for_granule(&il02, 1);
	CHECK_EQ(pick(&il02, 1), 0);
	return CHECK_DONE();
}
