// SPDX-License-Identifier: MIT
/* Fallback lists (node order and tier order) on emulated topologies,
 * checked against lists derived by hand from the kernel's rule
 * (find_next_best_node in mm/page_alloc.c):
 *   the local node first if it has memory; then the memory node of least
 *   val = (distance + (n < local) + has_cpus(n)) * 1024 + node_load[n],
 *   ties to the lowest id; the first node of each new distance group gets
 *   node_load += 1; nodes are processed in id order sharing node_load.
 * Tier rule (docs/topology.md): memory nodes with CPUs are tier 0; a
 * CPU-less memory node is keyed by 1 + its distance from the nearest
 * node with CPUs; distinct keys ascending are tiers 0, 1, ... */
#include <string.h>

#include "check.h"
#include "internal.h"
#include "topo_fixture.h"

static const _nd_topo_t *build(const char *spec)
{
	char err[256] = "";
	const _nd_topo_t *t = _nd_topo_build_spec(spec, err, sizeof err);
	CHECK(t != NULL, "spec '%s': %s", spec, err);
	return t;
}

int main(void)
{
	/* A: asymmetric distances, node 3 CPU-less (CXL-like).
	 *        to 0   1   2   3
	 *   from 0: 10  20  30  20
	 *        1: 30  10  20  30
	 *        2: 20  30  10  20
	 *        3: 20  20  20  10
	 * node 0: 0 first. vals: 1 = 20+0+1 = 21, 2 = 30+0+1 = 31, 3 = 20+0+0
	 *   = 20 -> 3 (new distance 20: load[3] = 1); then 1 (21, same
	 *   distance, no load); then 2 (distance 30 is new: load[2] = 1).
	 *   => 0 3 1 2
	 * node 1: 1 first. 0 = 30+1+1 = 32, 2 = 20+0+1 = 21, 3 = 30+0+0 = 30
	 *   -> 2 (load[2] = 2); then 3 (30 < 32; new distance: load[3] = 2);
	 *   then 0 (same distance 30).  => 1 2 3 0
	 * node 2: 2 first. 0 = 20+1+1 = 22, 1 = 30+1+1 = 32, 3 = 20 -> 3
	 *   (load[3] = 3); then 0; then 1 (new distance: load[1] = 1).
	 *   => 2 3 0 1
	 * node 3: 3 first. 0 = 22*1024+load 0, 1 = 22*1024+1, 2 = 22*1024+2
	 *   -> 0, 1, 2.  => 3 0 1 2
	 * Tiers: 0, 1, 2 have CPUs (tier 0); 3 is nearest a CPU node at 20
	 *   (from 0 or 2) -> tier 1. Tier order keeps the local node first,
	 *   then tier 0 in node order, then tier 1:
	 *   0: 0 1 2 3   1: 1 2 0 3   2: 2 0 1 3   3: 3 0 1 2 */
	const _nd_topo_t *a = build("0: cpus=0 mem=1G; 1: cpus=1 mem=1G; 2: cpus=2 mem=1G; 3: mem=1G;"
				    "distance: 10 20 30 20 / 30 10 20 30 / 20 30 10 20 / 20 20 20 10");
	if (a) {
		CHECK_EQ(a->distance[0 * 4 + 2], 30);
		CHECK_EQ(a->distance[2 * 4 + 0], 20);
		CHECK_STR(list_str(a, 0, 0), "0 3 1 2");
		CHECK_STR(list_str(a, 1, 0), "1 2 3 0");
		CHECK_STR(list_str(a, 2, 0), "2 3 0 1");
		CHECK_STR(list_str(a, 3, 0), "3 0 1 2");
		CHECK_EQ(a->tier_count, 2);
		CHECK_EQ(a->tier[0], 0);
		CHECK_EQ(a->tier[3], 1);
		CHECK_STR(list_str(a, 0, 1), "0 1 2 3");
		CHECK_STR(list_str(a, 1, 1), "1 2 0 3");
		CHECK_STR(list_str(a, 2, 1), "2 0 1 3");
		CHECK_STR(list_str(a, 3, 1), "3 0 1 2");
		CHECK_EQ(a->cpu_mem_node[2], 2);
		CHECK(!a->one_cpu_node);
		_nd_topo_discard(a);
	}

	/* Every CPU on one node: one_cpu_node (heap.c's placement cache
	 * then keys no entry by CPU), also when that node has no memory. */
	a = build("0: cpus=0-1 mem=1G; 1: mem=1G");
	if (a) {
		CHECK(a->one_cpu_node);
		_nd_topo_discard(a);
	}
	a = build("0: cpus=0-1 mem=0; 1: mem=1G; 2: mem=1G");
	if (a) {
		CHECK(a->one_cpu_node);
		CHECK_EQ(a->cpu_mem_node[1], a->cpu_mem_node[0]);
		_nd_topo_discard(a);
	}

	/* The same distances written as pairs ('>' one way, '-' both ways)
	 * give the same lists. */
	a = build("0: cpus=0 mem=1G; 1: cpus=1 mem=1G; 2: cpus=2 mem=1G; 3: mem=1G;"
		  "distance: 0>2=30, 1>0=30, 1-3=30, 0-1=20; distance: 1>0=30");
	if (a) {
		CHECK_EQ(a->distance[0 * 4 + 1], 20);
		CHECK_EQ(a->distance[1 * 4 + 0], 30);
		CHECK_EQ(a->distance[2 * 4 + 0], 20);
		CHECK_STR(list_str(a, 0, 0), "0 3 1 2");
		CHECK_STR(list_str(a, 1, 0), "1 2 3 0");
		CHECK_STR(list_str(a, 2, 0), "2 3 0 1");
		_nd_topo_discard(a);
	}

	/* B: two memoryless CPU nodes (0, 1) and two CPU-less memory nodes
	 * (2, 3), every remote distance 20: node_load spreads the two CPU
	 * nodes over different memory nodes.
	 * node 0: no memory. 2 = 20*1024+0, 3 = 20*1024+0 -> 2 (lowest id;
	 *   new distance: load[2] = 1), then 3.  => 2 3
	 * node 1: 2 = 20*1024+1, 3 = 20*1024+0 -> 3 (load[3] = 1), then 2.
	 *   => 3 2
	 * node 2: 2, 3.   node 3: 3, then 2 (20+1 for 2 < 3).
	 * So CPU 0 (node 0) -> memory node 2, CPU 1 (node 1) -> 3.
	 * Tiers: no memory node has CPUs; 2 and 3 are both at 20 from a CPU
	 * node -> one tier (0); tier order = node order. */
	const _nd_topo_t *b = build("0: cpus=0 mem=0; 1: cpus=1 mem=0; 2: mem=4G; 3: mem=4G");
	if (b) {
		CHECK_STR(list_str(b, 0, 0), "2 3");
		CHECK_STR(list_str(b, 1, 0), "3 2");
		CHECK_STR(list_str(b, 2, 0), "2 3");
		CHECK_STR(list_str(b, 3, 0), "3 2");
		CHECK_EQ(b->cpu_mem_node[0], 2);
		CHECK_EQ(b->cpu_mem_node[1], 3);
		CHECK(!b->one_cpu_node); /* two CPU nodes, two memory nodes */
		CHECK_EQ(b->tier_count, 1);
		CHECK_STR(list_str(b, 1, 1), "3 2");
		CHECK_EQ(b->has_mem[0], 0);
		_nd_topo_discard(b);
	}

	/* C: headless preference and the "n < local" penalty at equal
	 * distance. Nodes 0-3 all with CPUs and memory except 2 (no CPUs),
	 * every remote distance 20.
	 * node 0: 0; 1 = 21, 2 = 20, 3 = 21 -> 2 (load[2] = 1), 1, 3.
	 * node 1: 1; 0 = 20+1+1 = 22, 2 = 20*1024+1, 3 = 21*1024 -> 2
	 *   (load[2] = 2), then 3 (21), then 0 (22).   => 1 2 3 0
	 * node 3: 3; 0 = 22*1024, 1 = 22*1024, 2 = (20+1)*1024+2 -> 2
	 *   (load[2] = 3), then 0 (lowest id of the tie), then 1.
	 * Tiers: 0, 1, 3 tier 0; 2 (CPU-less, 20 from node 0) tier 1:
	 * tier order for node 3: 3 0 1 2. */
	const _nd_topo_t *c = build("0: cpus=0 mem=1G; 1: cpus=1 mem=1G; 2: mem=1G; 3: cpus=2 mem=1G");
	if (c) {
		CHECK_STR(list_str(c, 0, 0), "0 2 1 3");
		CHECK_STR(list_str(c, 1, 0), "1 2 3 0");
		CHECK_STR(list_str(c, 3, 0), "3 2 0 1");
		CHECK_STR(list_str(c, 3, 1), "3 0 1 2");
		CHECK_STR(list_str(c, 0, 1), "0 1 3 2");
		_nd_topo_discard(c);
	}

	/* D: two CXL tiers by distance. DRAM nodes 0, 1; CPU-less 2 (near:
	 * 30 from 0, 40 from 1) and 3 (far: 50 from both); 2-3 = 40.
	 * node 0: 0; 1 = 21+0 -> ... vals: 1 = 20+0+1 = 21, 2 = 30, 3 = 50 ->
	 *   1 (load[1] = 1), 2 (load[2] = 1), 3 (load[3] = 1). => 0 1 2 3
	 * node 1: 1; 0 = 22, 2 = 40, 3 = 50 -> 0, 2, 3.         => 1 0 2 3
	 * Tier keys: 2 -> 1 + 30 = 31, 3 -> 1 + 50 = 51: tiers 0 {0,1},
	 * 1 {2}, 2 {3}. Node 2's tier order: 2 first (local memory), then
	 * tier 0 in node order (2's node order: 2; 0 = 30+1+1 = 32,
	 * 1 = 40+1+1 = 42, 3 = 40 -> 0, then 3 (40) before 1 (42))
	 * = node order 2 0 3 1, tier order 2 0 1 3. */
	const _nd_topo_t *d = build("0: ncpus=2 mem=8G; 1: ncpus=2 mem=8G; 2: mem=64G; 3: mem=256G;"
				    "distance: 0-2=30, 1-2=40, 0-3=50, 1-3=50, 2-3=40");
	if (d) {
		CHECK_EQ(d->cpu_limit, 4);
		CHECK_EQ(d->cpu_node[1], 0);
		CHECK_EQ(d->cpu_node[2], 1);
		CHECK_EQ(d->tier_count, 3);
		CHECK_EQ(d->tier[2], 1);
		CHECK_EQ(d->tier[3], 2);
		CHECK_STR(list_str(d, 0, 0), "0 1 2 3");
		CHECK_STR(list_str(d, 1, 0), "1 0 2 3");
		CHECK_STR(list_str(d, 2, 0), "2 0 3 1");
		CHECK_STR(list_str(d, 2, 1), "2 0 1 3");
		CHECK_EQ(d->mem_total[3], 256ull << 30);
		_nd_topo_discard(d);
	}

	/* E: sparse node and CPU ids; node 0 and 2 do not exist. */
	const _nd_topo_t *e = build("node 1: cpus=0,8 mem=1G; node 3: cpus=16-17 mem=0; 5: mem=2G");
	if (e) {
		CHECK_EQ(e->node_limit, 6);
		CHECK_EQ(e->cpu_limit, 18);
		CHECK_EQ(e->online[0], 0);
		CHECK_EQ(e->online[2], 0);
		CHECK_EQ(e->fallback_len[0], 0);
		CHECK_EQ(e->cpu_node[4], -1);
		CHECK_EQ(e->cpu_node[8], 1);
		/* node 3: no memory; 1 = 20+1+1 = 22, 5 = 20+0+0 = 20 -> 5. */
		CHECK_STR(list_str(e, 3, 0), "5 1");
		CHECK_EQ(e->cpu_mem_node[16], 5);
		CHECK_EQ(e->cpu_mem_node[8], 1);
		_nd_topo_discard(e);
	}
	/* F: the VM test bed's "tiered" and "memless" machines
	 * (tests/vm/topologies.sh). Expected: the lists Linux 6.1 printed at
	 * boot ("Fallback order for Node N:") in those VMs; no distance ties,
	 * so the CPU penalty does not matter here (see docs/topology.md on
	 * where it does). memless node 2 has no memory: the kernel printed
	 * "2 1 0" with node 2 contributing no zones, i.e. "1 0". */
	const _nd_topo_t *f = build("0: cpus=0 mem=512M; 1: cpus=1 mem=512M; 2: mem=256M; 3: mem=256M;"
				    "distance: 10 21 14 24 / 21 10 24 14 / 14 24 10 28 / 24 14 28 10");
	if (f) {
		CHECK_STR(list_str(f, 0, 0), "0 2 1 3");
		CHECK_STR(list_str(f, 1, 0), "1 3 0 2");
		CHECK_STR(list_str(f, 2, 0), "2 0 1 3");
		CHECK_STR(list_str(f, 3, 0), "3 1 0 2");
		CHECK_STR(list_str(f, 0, 1), "0 1 2 3");
		_nd_topo_discard(f);
	}
	f = build("0: cpus=0 mem=768M; 1: cpus=1 mem=256M; 2: cpus=2-3 mem=0; distance: 10 21 30 / 23 10 20 / 25 18 10");
	if (f) {
		CHECK_STR(list_str(f, 0, 0), "0 1");
		CHECK_STR(list_str(f, 1, 0), "1 0");
		CHECK_STR(list_str(f, 2, 0), "1 0");
		CHECK_EQ(f->cpu_mem_node[3], 1);
		_nd_topo_discard(f);
	}
	return CHECK_DONE();
}
