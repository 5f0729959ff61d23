// SPDX-License-Identifier: MIT
/* Spread runs (interleave by offset) balance by pages over a sequence of
 * equal allocations whose size is not a multiple of nodes x granule: each
 * run starts at the thread's spread cursor, which moves by the run's whole
 * granules, so the node left with a partial granule starts the next run.
 * Runs through malloc (the large path) under an emulated two-node machine
 * and, re-executed, a three-node one. Pages are counted per node with
 * nd_node_of over every page; granules must stay aligned in the address. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#define NRUNS 24 /* a multiple of every period below (2, 3, 4) */

/* Allocates nruns blocks of size under policy s and checks the balance
 * and the alignment of every node switch. */
static void run_case(const char *s, size_t size, int nnodes)
{
	char err[256];
	nd_policy_t p;
	CHECK(nd_policy_parse(s, &p, err, sizeof err) == 0, "%s: %s", s, err);
	CHECK(nd_set_policy(&p) == 0, "%s", s);
	uint64_t gpages = 1ull << p.granularity_shift, gbytes = gpages << ND_PAGE_SHIFT;
	unsigned wsum = 0, w[ND_MAX_NODES] = { 0 };
	for (int n = 0; n < nnodes; n++) {
		w[n] = p.mode == ND_POLICY_WEIGHTED ? p.weights[n] : nd_nodemask_isset(&p.nodes, n);
		wsum += w[n];
	}
	uint64_t pages[ND_MAX_NODES] = { 0 }, total = 0;
	size_t np = (size + ND_PAGE_SIZE - 1) >> ND_PAGE_SHIFT;
	char *blk[NRUNS];
	bool aligned = true, placed = true, prefix_ok = true;
	for (int r = 0; r < NRUNS; r++) {
		char *b = blk[r] = malloc(size);
		CHECK(b != NULL, "%s: malloc(%zu) run %d", s, size, r);
		if (!b)
			continue;
		int prev = -1;
		for (size_t i = 0; i < np; i++) {
			char *a = b + (i << ND_PAGE_SHIFT);
			int n = nd_node_of(a);
			if (n < 0 || n >= nnodes || !w[n]) {
				placed = false;
				continue;
			}
			/* a node switch only where a granule starts in the address */
			if (i > 0 && n != prev && ((uintptr_t)a & (gbytes - 1)))
				aligned = false;
			prev = n;
			pages[n]++;
			total++;
		}
		/* After every run, each node is within one granule of its share. */
		for (int n = 0; n < nnodes; n++) {
			if (!w[n])
				continue;
			int64_t d = (int64_t)(pages[n] * wsum) - (int64_t)(total * w[n]);
			if (d < 0)
				d = -d;
			if ((uint64_t)d > gpages * wsum)
				prefix_ok = false;
		}
	}
	CHECK(placed, "%s: a page of a spread run has no node of the set", s);
	CHECK(aligned, "%s: a node switch inside a granule", s);
	CHECK(prefix_ok, "%s: a node more than one granule from its share after some run", s);
	CHECK_EQ(total, (uint64_t)NRUNS * np);
	/* NRUNS runs cover whole periods: the split is exact. */
	for (int n = 0; n < nnodes; n++)
		CHECK(pages[n] * wsum == total * w[n], "%s, %zu bytes: node %d has %llu of %llu pages, weight %u/%u", s,
		      size, n, (unsigned long long)pages[n], (unsigned long long)total, w[n], wsum);
	for (int r = 0; r < NRUNS; r++)
		free(blk[r]);
	nd_set_policy(NULL);
}

static int machine(int nnodes)
{
	char err[256];
	const char *spec = nnodes == 2 ? "0: cpus=0 mem=512M; 1: cpus=1 mem=512M"
				       : "0: cpus=0 mem=512M; 1: cpus=1 mem=512M; 2: cpus=2 mem=512M";
	CHECK(nd_topology_emulate(spec, err, sizeof err) == 0, "emulate: %s", err);
	nd_emulate_cpu(0);
	const char *all = nnodes == 2 ? "0-1" : "0-2";
	char s[64];

	/* The reported case: 100 KB = one 16-page granule + 9 pages. */
	_nd_msg_format(s, sizeof s, "interleave:%s@64K", all);
	run_case(s, 100000, nnodes);
	/* 3 MB @2M: one huge granule + half of one. */
	_nd_msg_format(s, sizeof s, "interleave:%s@2M", all);
	run_case(s, 3u << 20, nnodes);
	/* 5 MB @2M: two whole granules + a half (the cursor moves by 2). */
	run_case(s, 5u << 20, nnodes);
	/* Weighted 3:1 (node 2, if any, left out). */
	run_case("weighted:0=3,1=1@64K", 100000, nnodes);
	run_case("weighted:0=3,1=1@2M", 3u << 20, nnodes);

	/* The rule itself: a run starts where the last one's whole granules
	 * ended. 25 pages @64K = 1 whole granule + 9 pages: starts at 0, the
	 * cursor moves to 1. 41 pages = 2 whole + 9: on 3 nodes it starts at 1;
	 * on 2 nodes 2 whole granules would leave every partial granule on the
	 * same index, so the start moves one more (2nd partial run of a round
	 * of 2): index 2. The cursor is then 3: 16 pages (no partial) at 3. */
	nd_policy_t p;
	_nd_msg_format(s, sizeof s, "interleave:%s@64K", all);
	CHECK(nd_policy_parse(s, &p, err, sizeof err) == 0, "%s", err);
	_nd_policy_reset_spread_cursor();
	char *a = _nd_page_alloc_spread(25, &p);
	char *b = _nd_page_alloc_spread(41, &p);
	char *c = _nd_page_alloc_spread(16, &p);
	int bs = nnodes == 2 ? 2 : 1;
	CHECK(a && b && c);
	if (a && b && c) {
		CHECK_EQ(nd_node_of(a), 0);
		CHECK_EQ(nd_node_of(a + 16 * 4096), 1 % nnodes);
		CHECK_EQ(nd_node_of(b), bs % nnodes);
		CHECK_EQ(nd_node_of(b + 16 * 4096), (bs + 1) % nnodes);
		CHECK_EQ(nd_node_of(b + 32 * 4096), (bs + 2) % nnodes);
		CHECK_EQ(nd_node_of(c), 3 % nnodes); /* 1 + 2 whole granules */
		CHECK_EQ(nd_node_of(c + 15 * 4096), 3 % nnodes);
	}
	_nd_page_free(a);
	_nd_page_free(b);
	_nd_page_free(c);
	/* A fixed start (tables) leaves the cursor alone. */
	_nd_policy_reset_spread_cursor();
	a = _nd_page_alloc_spread_from(25, &p, 1);
	b = _nd_page_alloc_spread(16, &p);
	CHECK(a && b);
	if (a && b) {
		CHECK_EQ(nd_node_of(a), 1);
		CHECK_EQ(nd_node_of(a + 16 * 4096), 2 % nnodes);
		CHECK_EQ(nd_node_of(b), 0);
	}
	_nd_page_free(a);
	_nd_page_free(b);
	return CHECK_DONE();
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return machine(atoi(argv[1]));
	/* Each machine in a fresh process: the topology is fixed at first use. */
	for (int n = 2; n <= 3; n++) {
		char arg[4] = { (char)('0' + n), 0 };
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			execl("/proc/self/exe", argv[0], arg, (char *)NULL);
			_exit(127);
		}
		int st = 0;
		CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%d-node machine: status 0x%x", n, st);
	}
	return CHECK_DONE();
}
