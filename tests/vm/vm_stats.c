// SPDX-License-Identifier: MIT
/*
 * VM test 6, statistics: nodalloc's per-node counters (nd_stats_get)
 * against the kernel's (/sys/devices/system/node/nodeN/numastat) over a
 * known workload run on CPU 0 with transparent huge pages off for this
 * process (so the kernel allocates, and counts, one page per fault):
 *   per memory node m: 2 x nd_malloc_onnode(4 MiB, m), touched;
 *   one nd_malloc_interleaved(8 MiB, 2 MiB granules) over up to 4 memory
 *   nodes, touched (coarse granules: binding every 4 KiB page would split
 *   the mapping into thousands of VMAs, whose kernel metadata pages the
 *   kernel counts on the CPU's node too).
 * Ground truth: move_pages on every page of the workload ("mine").
 * What can be compared and why: docs/testbed.md "Statistics".
 *   kernel pages allocated on m, d(numa_hit + numa_miss)  ~ mine[m]
 *   nodalloc d(bytes_committed[m]) / 4096                 ~ kernel pages on m
 *   nodalloc d(bytes_in_use[m]) / 4096                    ~ mine[m]
 *   nothing fell back: d(nodalloc numa_miss, numa_foreign) = 0 exactly,
 *                      d(kernel numa_miss) small
 *   CPU 0 allocated everything: nodalloc local_node only on CPU 0's node,
 *                      other_node never on it (the kernel's meaning)
 *   nodalloc counts at least one run per allocation: d(numa_hit[m]) >= 2
 * Tolerance: 2% + 256 pages (1 MiB) for page counts: the kernel also counts
 * page tables, its own allocations and nodalloc's metadata pages.
 */
#include "vm_common.h"

#include <sys/prctl.h>

#define BLK (4 * VM_MIB)
#define ILV (8 * VM_MIB)
#define SLACK(x) ((x) / 50 + 256)

static const vm_topo_t *T = &vm_topo;
static nd_stats_t nd0, nd1; /* large: static, not on the stack */
static uint64_t k0[VM_MAX_NODES][VM_NS_N], k1[VM_MAX_NODES][VM_NS_N];

static void snapshot(nd_stats_t *s, uint64_t k[][VM_NS_N])
{
	for (int n = 0; n < T->nnodes; n++)
		if (vm_numastat(n, k[n]) != 0)
			CHECK(0, "bed: cannot read node%d/numastat", n);
	memset(s, 0, sizeof(*s));
	s->version = ND_STATS_VERSION;
	CHECK(nd_stats_get(s) == 0, "nd_stats_get failed");
}

#define ND_D(field, n) ((long long)nd1.nodes[n].field - (long long)nd0.nodes[n].field)
#define K_D(i, n) ((long long)k1[n][i] - (long long)k0[n][i])

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (!(VM_NEED(nd_stats_get) & VM_NEED(nd_malloc_onnode) & VM_NEED(nd_malloc_interleaved) & VM_NEED(nd_free) &
	      VM_NEED(nd_nodemask_zero) & VM_NEED(nd_nodemask_set)))
		return CHECK_DONE();
	CHECK(vm_pin(0) == 0, "cannot pin to cpu 0");
	CHECK(prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0, "PR_SET_THP_DISABLE: %s", strerror(errno));
	int cpunode = T->cpu_node[0];
	int M[VM_MAX_NODES], nm = vm_mem_nodes(T, M);
	void **blk = vm_buf((size_t)2 * nm * sizeof(void *));
	/* stdio's buffers exist before the first snapshot */
	printf("VMTAB stats-setup cpu=0 node=%d memory_nodes=%d\n", cpunode, nm);

	snapshot(&nd0, k0);
	for (int i = 0; i < nm; i++)
		for (int r = 0; r < 2; r++) {
			void *b = nd_malloc_onnode(BLK, M[i]);
			CHECK(b != NULL, "nd_malloc_onnode(4 MiB, %d) failed", M[i]);
			if (b)
				vm_touch(b, BLK);
			blk[2 * i + r] = b;
		}
	nd_nodemask_t mask;
	nd_nodemask_zero(&mask);
	for (int i = 0; i < nm && i < 4; i++)
		nd_nodemask_set(&mask, M[i]);
	void *ilv = nd_malloc_interleaved(ILV, &mask, 2 * VM_MIB);
	CHECK(ilv != NULL, "nd_malloc_interleaved(8 MiB) failed");
	if (ilv)
		vm_touch(ilv, ILV);
	snapshot(&nd1, k1);

	vm_hist_t mine = VM_HIST_INIT;
	for (int i = 0; i < 2 * nm; i++)
		vm_hist_range(&mine, blk[i], blk[i] ? BLK : 0, NULL);
	vm_hist_range(&mine, ilv, ilv ? ILV : 0, NULL);

	long long nd_miss = 0, nd_foreign = 0, k_miss = 0, nd_ilv = 0;
	for (int n = 0; n < T->nnodes; n++) {
		long long mp = mine.node[n];
		long long kp = K_D(VM_NS_HIT, n) + K_D(VM_NS_MISS, n);
		long long cp = ND_D(bytes_committed, n) / (long long)VM_PAGE;
		long long up = ND_D(bytes_in_use, n) / (long long)VM_PAGE;
		nd_miss += ND_D(numa_miss, n);
		nd_foreign += ND_D(numa_foreign, n);
		nd_ilv += ND_D(interleave_hit, n);
		k_miss += K_D(VM_NS_MISS, n);
		printf("VMTAB stats node=%d mine_pages=%lld kernel_pages=%lld nd_committed_pages=%lld nd_in_use_pages=%lld"
		       " nd_hit=%lld k_hit=%lld nd_miss=%lld k_miss=%lld nd_foreign=%lld k_foreign=%lld nd_interleave=%lld"
		       " k_interleave=%lld nd_local=%lld k_local=%lld nd_other=%lld k_other=%lld\n",
		       n, mp, kp, cp, up, ND_D(numa_hit, n), K_D(VM_NS_HIT, n), ND_D(numa_miss, n), K_D(VM_NS_MISS, n),
		       ND_D(numa_foreign, n), K_D(VM_NS_FOREIGN, n), ND_D(interleave_hit, n), K_D(VM_NS_INTERLEAVE, n),
		       ND_D(local_node, n), K_D(VM_NS_LOCAL, n), ND_D(other_node, n), K_D(VM_NS_OTHER, n));
		/* the kernel really allocated our pages (bed sanity, and
		 * proof the workload did not reuse earlier pages) */
		CHECK(kp >= mp - SLACK(mp) && kp <= mp + SLACK(mp),
		      "node %d: kernel allocated %lld pages, the workload has %lld there", n, kp, mp);
		CHECK(llabs(cp - kp) <= SLACK(kp), "node %d: nodalloc bytes_committed grew by %lld pages, the kernel's numastat by %lld",
		      n, cp, kp);
		CHECK(llabs(up - mp) <= SLACK(mp), "node %d: nodalloc bytes_in_use grew by %lld pages, the workload has %lld", n,
		      up, mp);
		if (vm_has_mem(T, n))
			CHECK(ND_D(numa_hit, n) >= 2, "node %d: nodalloc numa_hit grew by %lld for 2 allocations", n,
			      ND_D(numa_hit, n));
		if (n != cpunode)
			CHECK(ND_D(local_node, n) == 0, "node %d: nodalloc local_node grew by %lld, but only cpu 0 (node %d) allocated",
			      n, ND_D(local_node, n), cpunode);
		else
			CHECK(ND_D(other_node, n) == 0, "node %d: nodalloc other_node grew by %lld on the allocating CPU's node", n,
			      ND_D(other_node, n));
	}
	CHECK(nd_miss == 0 && nd_foreign == 0, "no node was full, yet nodalloc numa_miss +%lld, numa_foreign +%lld", nd_miss,
	      nd_foreign);
	CHECK(k_miss <= 256, "the kernel counted %lld numa_miss: pages did not go where nodalloc's binding said", k_miss);
	CHECK(nd_ilv >= 1, "nodalloc interleave_hit did not count the interleaved allocation");

	for (int i = 0; i < 2 * nm; i++)
		if (blk[i])
			nd_free(blk[i]);
	if (ilv)
		nd_free(ilv);
	return CHECK_DONE();
}
