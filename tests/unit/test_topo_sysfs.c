// SPDX-License-Identifier: MIT
/* The sysfs reader on fixture trees (tests/fixtures/make-fixtures.sh):
 * gaps in node ids, sparse CPU ids, a memoryless node, a CPU-less memory
 * node, 16 nodes, a cpuset (Mems_allowed), a broken tree; and the real
 * /sys of this machine. Expected lists are derived by hand with the rule
 * written at the top of test_topo_fallback.c. */
#include <string.h>

#include "check.h"
#include "internal.h"
#include "topo_fixture.h"

#define FIX ND_SOURCE_DIR "/tests/fixtures/"

static const _nd_topo_t *load(const char *root)
{
	char err[256] = "";
	const _nd_topo_t *t = _nd_topo_build_sysfs(root, err, sizeof err);
	CHECK(t != NULL, "%s: %s", root, err);
	if (t)
		CHECK(!t->emulated);
	return t;
}

#define GiB (1ull << 30)

int main(void)
{
	const _nd_topo_t *t = load(FIX "sysfs-2node");
	if (t) {
		CHECK_EQ(t->node_limit, 2);
		CHECK_EQ(t->cpu_limit, 8);
		CHECK_EQ(t->mem_total[1], 8 * GiB);
		CHECK_EQ(t->distance[1], 21);
		CHECK_STR(list_str(t, 0, 0), "0 1");
		CHECK_STR(list_str(t, 1, 0), "1 0");
		CHECK_EQ(t->cpu_node[3], 0);
		CHECK_EQ(t->cpu_mem_node[4], 1);
		CHECK_EQ(t->cpu_allowed[7], 1); /* a fixture is not this process */
		/* MemFree of the fixture (6 GiB), cached then re-read. */
		CHECK_EQ(_nd_topo_node_free_in(t, 0), 6 * GiB);
		CHECK_EQ(_nd_topo_node_free_in(t, 1), 7 * GiB);
		_nd_topo_discard(t);
	}

	/* Nodes 1 and 3 only; CPUs 0-1,8-9 and 4-5,12-13 of possible 0-15. */
	t = load(FIX "sysfs-gap");
	if (t) {
		CHECK_EQ(t->node_limit, 4);
		CHECK_EQ(t->cpu_limit, 16);
		CHECK_EQ(t->online[0], 0);
		CHECK_EQ(t->online[2], 0);
		CHECK_EQ(t->online[3], 1);
		CHECK_EQ(t->distance[1 * 4 + 3], 32);
		CHECK_EQ(t->distance[3 * 4 + 1], 32);
		CHECK_EQ(t->fallback_len[0], 0);
		CHECK_STR(list_str(t, 1, 0), "1 3");
		CHECK_STR(list_str(t, 3, 0), "3 1");
		CHECK_EQ(t->cpu_node[2], -1);
		CHECK_EQ(t->cpu_node[9], 1);
		CHECK_EQ(t->cpu_node[13], 3);
		CHECK_EQ(t->cpu_mem_node[12], 3);
		CHECK_EQ(t->cpu_mem_node[15], -1);
		_nd_topo_discard(t);
	}

	/* Node 0: CPUs, no memory; distances asymmetric (0->1 30, 0->2 20,
	 * 1->2 20, 2->0 30, 2->1 20).
	 * node 0 (no memory): 1 = 30+0+1 = 31, 2 = 20+0+1 = 21 -> 2
	 *   (load[2] = 1), then 1.                    => 2 1
	 * node 1: 1; 2 = 20+0+1 -> 2.                => 1 2
	 * node 2: 2; 1 = 20+1+1 -> 1.                => 2 1 */
	t = load(FIX "sysfs-memless");
	if (t) {
		CHECK_EQ(t->has_mem[0], 0);
		CHECK_EQ(t->has_cpu[0], 1);
		CHECK_EQ(t->mem_total[0], 0);
		CHECK_STR(list_str(t, 0, 0), "2 1");
		CHECK_STR(list_str(t, 1, 0), "1 2");
		CHECK_STR(list_str(t, 2, 0), "2 1");
		CHECK_EQ(t->cpu_mem_node[0], 2); /* the seed's case, from sysfs */
		CHECK_EQ(t->cpu_mem_node[1], 2);
		CHECK_EQ(t->cpu_mem_node[3], 1);
		CHECK_EQ(_nd_topo_node_free_in(t, 0), 0);
		_nd_topo_discard(t);
	}

	/* Node 2: memory, no CPUs (empty cpulist), 21 from node 0 like
	 * node 1. node 0: 0; 1 = 21+0+1 = 22, 2 = 21+0+0 = 21 -> 2 (the
	 * kernel prefers the headless node at equal distance), then 1.
	 * node 1: 1; 0 = 21+1+1 = 23, 2 = 30 -> 0, 2.
	 * node 2: 2; 0 = 21+1+1 = 23, 1 = 30+1+1 = 32 -> 0, 1.
	 * Tiers: {0, 1} tier 0; 2 (nearest CPU node at 21) tier 1. Tier
	 * order for node 0 puts DRAM node 1 before the CXL node 2. */
	t = load(FIX "sysfs-cxl");
	if (t) {
		CHECK_EQ(t->has_cpu[2], 0);
		CHECK_EQ(t->has_mem[2], 1);
		CHECK_EQ(t->mem_total[2], 32 * GiB);
		CHECK_STR(list_str(t, 0, 0), "0 2 1");
		CHECK_STR(list_str(t, 1, 0), "1 0 2");
		CHECK_STR(list_str(t, 2, 0), "2 0 1");
		CHECK_EQ(t->tier_count, 2);
		CHECK_EQ(t->tier[2], 1);
		CHECK_STR(list_str(t, 0, 1), "0 1 2");
		CHECK_STR(list_str(t, 1, 1), "1 0 2");
		CHECK_STR(list_str(t, 2, 1), "2 0 1");
		_nd_topo_discard(t);
	}

	/* 16 nodes, 4 sockets of 4 (local 10, same socket 12, else 32); CPU
	 * ids 0-31 and 64-95 (32-63 do not exist).
	 * node 0: 0; same socket 1, 2, 3 (12+0+1 = 13 each, lowest id first;
	 *   1 opens the 12 group: load[1] = 1); then 4..15 (33 each; 4 opens
	 *   the 32 group: load[4] = 1).        => 0 1 2 ... 15
	 * node 1: 1; 0 = 12+1+1 = 14, 2 = 13*1024+0, 3 = 13*1024+0 -> 2
	 *   (load[2] = 1), 3, 0; then 4 = 33*1024+1 loses to 5..15 (33*1024)
	 *   -> 5 (load[5] = 1), 6, ..., 15, then 4. */
	t = load(FIX "sysfs-16node");
	if (t) {
		CHECK_EQ(t->node_limit, 16);
		CHECK_EQ(t->cpu_limit, 96);
		CHECK_EQ(t->cpu_node[40], -1);
		CHECK_EQ(t->cpu_node[64], 0);
		CHECK_EQ(t->cpu_node[95], 15);
		CHECK_EQ(t->cpu_node[31], 15);
		CHECK_STR(list_str(t, 0, 0), "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15");
		CHECK_STR(list_str(t, 1, 0), "1 2 3 0 5 6 7 8 9 10 11 12 13 14 15 4");
		for (int n = 0; n < 16; n++) {
			CHECK_EQ(t->fallback_len[n], 16);
			CHECK_EQ(t->fallback[n][0], n);
			/* nearest first: distances never decrease along a list */
			for (int i = 1; i < 16; i++)
				CHECK(t->distance[n * 16 + t->fallback[n][i - 1]] <= t->distance[n * 16 + t->fallback[n][i]],
				      "node %d list not by distance at %d", n, i);
			/* the three same-socket nodes come right after n */
			for (int i = 1; i < 4; i++)
				CHECK_EQ(t->fallback[n][i] / 4, n / 4);
		}
		CHECK_EQ(t->tier_count, 1);
		CHECK_EQ(_nd_topo_node_free_in(t, 3), (8388608ull + 3 * 1024) << 10);
		_nd_topo_discard(t);
	}

	/* Mems_allowed_list: 1 -> node 0 has no memory for this process. */
	t = load(FIX "sysfs-cpuset");
	if (t) {
		CHECK_EQ(t->mem_allowed[0], 0);
		CHECK_EQ(t->has_mem[0], 0);
		CHECK_EQ(t->has_mem[1], 1);
		CHECK_STR(list_str(t, 0, 0), "1");
		CHECK_EQ(t->cpu_mem_node[0], 1);
		_nd_topo_discard(t);
	}

	/* Broken trees are rejected with the file named. */
	char err[256] = "";
	CHECK(_nd_topo_build_sysfs(FIX "sysfs-bad", err, sizeof err) == NULL);
	CHECK(strstr(err, "sysfs-bad/devices/system/node/node1/distance: expected 2 distances") != NULL, "got: %s", err);
	CHECK(_nd_topo_build_sysfs(FIX "no-such-tree", err, sizeof err) == NULL);
	CHECK(strstr(err, "no-such-tree/devices/system/node: cannot read the node directory") != NULL, "got: %s", err);

	/* This machine: whatever it is, it is consistent. */
	t = _nd_topo_build_sysfs("/sys", err, sizeof err);
	if (t) {
		int cpu = nd_current_cpu();
		CHECK(cpu >= 0 && cpu < t->cpu_limit);
		CHECK(t->cpu_node[cpu] >= 0);
		CHECK(t->cpu_mem_node[cpu] >= 0 && t->has_mem[t->cpu_mem_node[cpu]]);
		CHECK(_nd_topo_node_free_in(t, t->cpu_mem_node[cpu]) > 0);
		int allowed = 0;
		for (int c = 0; c < t->cpu_limit; c++)
			allowed += t->cpu_allowed[c];
		CHECK(allowed > 0);
		_nd_topo_discard(t);
	} else {
		printf("note: no NUMA sysfs here: %s\n", err);
	}
	/* The live topology of an unconfigured test is the real one (or one
	 * flat node when the kernel has no NUMA sysfs). */
	CHECK(!_nd_topo()->emulated);
	return CHECK_DONE();
}
