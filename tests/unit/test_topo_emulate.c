// SPDX-License-Identifier: MIT
/* Emulated topology through the public API: the seed's memoryless-node case
 * (CPUs on a memoryless node get the nearest node with memory), the CPU
 * seam, and a bad spec leaving the live topology untouched. The emulation
 * is installed first thing in main, before any stdio (which may allocate
 * and so freeze the topology once the page layer exists). */
#include <string.h>

#include "check.h"
#include "internal.h"

int main(void)
{
	char err[256] = "";
	/* Node 0: CPUs 0-1 and no memory (the seed's case); node 1 and
	 * node 2 have memory; node 0 is nearer to 2 (15) than to 1 (20). */
	int rc = nd_topology_emulate("0: cpus=0-1 mem=0; 1: cpus=2-3 mem=1G; 2: cpus=4-5 mem=2G;"
				     "distance: 0-1=20, 0-2=15, 1-2=20",
				     err, sizeof err);
	int cpu_seen[6], mem_seen[6];
	for (int c = 0; c < 6; c++) {
		nd_emulate_cpu(c);
		cpu_seen[c] = nd_current_cpu();
		mem_seen[c] = nd_mem_node_of_cpu(nd_current_cpu());
	}
	nd_emulate_cpu(3);
	nd_emulate_cpu(6); /* not an emulated CPU: ignored with a warning */
	int kept = nd_current_cpu();
	nd_emulate_cpu(-1);
	int real_cpu = nd_current_cpu();

	CHECK(rc == 0, "emulate failed: %s", err);
	CHECK_EQ(nd_node_limit(), 3);
	CHECK_EQ(nd_cpu_limit(), 6);
	CHECK_EQ(nd_node_online(0), 1);
	CHECK_EQ(nd_node_has_memory(0), 0);
	CHECK_EQ(nd_node_has_cpus(0), 1);
	CHECK_EQ(nd_node_has_memory(2), 1);
	CHECK_EQ(nd_node_mem_total(0), 0);
	CHECK_EQ(nd_node_mem_total(1), 1ull << 30);
	CHECK_EQ(nd_node_mem_total(2), 2ull << 30);
	CHECK_EQ(nd_node_distance(0, 2), 15);
	CHECK_EQ(nd_node_distance(2, 0), 15);
	CHECK_EQ(nd_node_distance(1, 1), 10);
	CHECK_EQ(nd_node_distance(0, 3), -1);
	CHECK_EQ(nd_node_of_cpu(1), 0);
	CHECK_EQ(nd_node_of_cpu(4), 2);
	CHECK_EQ(nd_node_of_cpu(6), -1);
	/* The seed: CPUs of memoryless node 0 allocate from node 2 (nearest
	 * with memory), not from "node 0". */
	CHECK_EQ(nd_mem_node_of_cpu(0), 2);
	CHECK_EQ(nd_mem_node_of_cpu(1), 2);
	CHECK_EQ(nd_mem_node_of_cpu(2), 1);
	CHECK_EQ(nd_mem_node_of_cpu(5), 2);
	for (int c = 0; c < 6; c++) {
		CHECK_EQ(cpu_seen[c], c);
		CHECK_EQ(mem_seen[c], nd_mem_node_of_cpu(c));
	}
	CHECK_EQ(kept, 3);
	CHECK(real_cpu >= 0 && real_cpu < 6, "real CPU folded onto an emulated one: %d", real_cpu);
	int l[8];
	CHECK_EQ(nd_fallback_list(0, 0, l, 8), 2); /* node 0 has no memory */
	CHECK(l[0] == 2 && l[1] == 1, "node 0 list: %d %d", l[0], l[1]);
	CHECK_EQ(nd_fallback_list(1, 0, l, 8), 2);
	CHECK(l[0] == 1 && l[1] == 2, "node 1 list: %d %d", l[0], l[1]);
	CHECK_EQ(nd_fallback_list(1, 0, l, 1), 1);
	CHECK_EQ(nd_fallback_list(7, 0, l, 8), -1);
	const _nd_topo_t *t = _nd_topo();
	CHECK(t->emulated);
	CHECK_EQ(_nd_topo_node_free(2), 2ull << 30);
	_nd_topo_account(2, 4096 * 10);
	CHECK_EQ(_nd_topo_node_free(2), (2ull << 30) - 40960);
	_nd_topo_account(2, -4096 * 10);
	CHECK_EQ(_nd_topo_node_free(2), 2ull << 30);
	CHECK_EQ(_nd_topo_node_free(0), 0);

	/* A bad spec is rejected with the field and column named, and the
	 * live topology is the same object as before. Nothing has allocated
	 * (no output so far), so the topology is not frozen yet. */
	CHECK(!_nd_topo_frozen());
	{
		rc = nd_topology_emulate("0: cpus=0-1 mem=1G; 1: cpus=2 mem=x1G", err, sizeof err);
		CHECK_EQ(rc, -1);
		CHECK(strstr(err, "node 1: mem: bad size 'x1G' at column 35") != NULL, "got: %s", err);
		CHECK(_nd_topo() == t, "topology replaced by a bad spec");
		CHECK_EQ(nd_node_limit(), 3);
		CHECK_EQ(nd_mem_node_of_cpu(0), 2);
		/* The freeze: once page.c commits, nothing can replace it. */
		_nd_topo_freeze();
		rc = nd_topology_emulate("0: cpus=0 mem=1G", err, sizeof err);
		CHECK_EQ(rc, -1);
		CHECK(strstr(err, "after the first allocation") != NULL, "got: %s", err);
		CHECK(_nd_topo() == t);
	}
	return CHECK_DONE();
}
