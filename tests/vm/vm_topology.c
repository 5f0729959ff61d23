// SPDX-License-Identifier: MIT
/*
 * VM test 1, topology: the kernel's view (sysfs, and where a default page
 * lands for each CPU) matches the QEMU configuration, and nodalloc's view
 * (nd_node_*, nd_mem_node_of_cpu, nd_fallback_list) matches both.
 * "bed:" failures mean the test bed itself is wrong, not the library.
 */
#include "vm_common.h"

static const vm_topo_t *T = &vm_topo;

/* Kernel side: sysfs against the QEMU config. */
static void check_kernel(void)
{
	char buf[4096], path[128];
	for (int n = 0; n < T->nnodes; n++) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/distance", n);
		vm_read_str(path, buf, sizeof(buf));
		char *p = buf;
		for (int m = 0; m < T->nnodes; m++) {
			char *end;
			long d = strtol(p, &end, 10);
			CHECK(end != p && d == T->dist[n][m], "bed: kernel distance %d->%d is '%s', QEMU was given %d", n, m,
			      buf, T->dist[n][m]);
			p = end;
		}
		uint64_t total = vm_node_meminfo(n, "MemTotal");
		CHECK((total > 0) == vm_has_mem(T, n), "bed: node %d MemTotal %llu, QEMU gave %ld MiB", n,
		      (unsigned long long)total, T->mem_mib[n]);
	}
	for (int c = 0; c < T->smp; c++) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/node%d", c, T->cpu_node[c]);
		CHECK(access(path, F_OK) == 0, "bed: kernel does not put cpu %d on node %d", c, T->cpu_node[c]);
		/* A fresh page under the default (local) policy lands on the
		 * kernel's numa_mem_id() of the CPU: the expectation we test
		 * nodalloc against, checked once against the kernel itself. */
		if (vm_pin(c) != 0) {
			CHECK(0, "bed: cannot pin to cpu %d", c);
			continue;
		}
		char *pg = mmap(NULL, VM_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		vm_touch(pg, VM_PAGE);
		int st = -1;
		void *pp = pg;
		vm_pages_status(&pp, 1, &st);
		CHECK(st == vm_expected_mem_node(T, T->cpu_node[c]),
		      "bed: kernel puts cpu %d's local page on node %d, expected nearest memory node %d", c, st,
		      vm_expected_mem_node(T, T->cpu_node[c]));
		munmap(pg, VM_PAGE);
	}
}

static void list_str(const int *l, int n, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (int i = 0; i < n && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%d", i ? "," : "", l[i]);
}

static void check_library(void)
{
	if (!(VM_NEED(nd_node_limit) & VM_NEED(nd_cpu_limit) & VM_NEED(nd_node_online) & VM_NEED(nd_node_has_memory) &
	      VM_NEED(nd_node_has_cpus) & VM_NEED(nd_node_distance) & VM_NEED(nd_node_mem_total) &
	      VM_NEED(nd_node_of_cpu) & VM_NEED(nd_mem_node_of_cpu) & VM_NEED(nd_fallback_list) &
	      VM_NEED(nd_current_cpu)))
		return;
	CHECK_EQ(nd_node_limit(), T->nnodes);
	CHECK_EQ(nd_cpu_limit(), T->smp);
	int mem[VM_MAX_NODES], nmem = vm_mem_nodes(T, mem);
	for (int n = 0; n < T->nnodes && n < nd_node_limit(); n++) {
		CHECK(nd_node_online(n) != 0, "node %d: nd_node_online = %d", n, nd_node_online(n));
		CHECK(!!nd_node_has_memory(n) == vm_has_mem(T, n), "node %d: nd_node_has_memory = %d, QEMU: %ld MiB", n,
		      nd_node_has_memory(n), T->mem_mib[n]);
		CHECK(!!nd_node_has_cpus(n) == T->has_cpus[n], "node %d: nd_node_has_cpus = %d, QEMU: %d", n,
		      nd_node_has_cpus(n), T->has_cpus[n]);
		for (int m = 0; m < T->nnodes; m++)
			CHECK(nd_node_distance(n, m) == T->dist[n][m], "nd_node_distance(%d, %d) = %d, QEMU: %d", n, m,
			      nd_node_distance(n, m), T->dist[n][m]);
		/* The kernel keeps some of a node's memory (memmap, image):
		 * MemTotal is 40-100% of what QEMU gave in these sizes. */
		uint64_t tot = nd_node_mem_total(n), given = (uint64_t)T->mem_mib[n] * VM_MIB;
		if (vm_has_mem(T, n))
			CHECK(tot > given * 2 / 5 && tot <= given, "node %d: nd_node_mem_total = %llu, QEMU gave %llu", n,
			      (unsigned long long)tot, (unsigned long long)given);
		else
			CHECK_EQ(tot, 0);

		/* Fallback lists: every memory node once, nearest first
		 * (distance never decreases along the list: the topologies
		 * keep distances 3 apart, beyond the kernel's tie-break
		 * penalties), the node's own memory node first. Tier order:
		 * the same set. */
		int fb[VM_MAX_NODES], tier[VM_MAX_NODES];
		int nfb = nd_fallback_list(n, 0, fb, VM_MAX_NODES), ntier = nd_fallback_list(n, 1, tier, VM_MAX_NODES);
		CHECK(nfb == nmem, "node %d: fallback list has %d nodes, %d have memory", n, nfb, nmem);
		CHECK(ntier == nmem, "node %d: tier list has %d nodes, %d have memory", n, ntier, nmem);
		int seen[VM_MAX_NODES] = { 0 }, seen_t[VM_MAX_NODES] = { 0 };
		for (int i = 0; i < nfb && i < VM_MAX_NODES; i++) {
			CHECK(vm_has_mem(T, fb[i]) && !seen[fb[i]]++, "node %d: fallback entry %d = node %d", n, i, fb[i]);
			if (i > 0 && vm_has_mem(T, fb[i]) && vm_has_mem(T, fb[i - 1]))
				CHECK(T->dist[n][fb[i]] >= T->dist[n][fb[i - 1]],
				      "node %d: fallback list not nearest first at entry %d (node %d at %d after node %d at %d)",
				      n, i, fb[i], T->dist[n][fb[i]], fb[i - 1], T->dist[n][fb[i - 1]]);
		}
		for (int i = 0; i < ntier && i < VM_MAX_NODES; i++)
			CHECK(vm_has_mem(T, tier[i]) && !seen_t[tier[i]]++, "node %d: tier entry %d = node %d", n, i,
			      tier[i]);
		if (nfb > 0)
			CHECK(fb[0] == vm_expected_mem_node(T, n), "node %d: fallback list starts with %d, expected %d", n,
			      fb[0], vm_expected_mem_node(T, n));
		/* A CXL-like layout: from a node with CPUs, a CPU-less memory
		 * node is nearer than a CPU-bearing memory node. Node order
		 * then interleaves the tiers, tier order (CPU-less memory
		 * nodes are the far tier) must not. */
		int cpuless_near = 0;
		for (int a = 0; a < T->nnodes && T->has_cpus[n]; a++)
			for (int b = 0; b < T->nnodes; b++)
				if (a != n && b != n && vm_has_mem(T, a) && !T->has_cpus[a] && vm_has_mem(T, b) &&
				    T->has_cpus[b] && T->dist[n][a] < T->dist[n][b])
					cpuless_near = 1;
		if (cpuless_near && nfb == ntier && nfb > 0) {
			CHECK(memcmp(fb, tier, (size_t)nfb * sizeof(int)) != 0,
			      "node %d: tier order equals node order although CPU-less node is nearer", n);
			int seen_cpuless = 0;
			for (int i = 0; i < ntier; i++) {
				if (!T->has_cpus[tier[i]])
					seen_cpuless = 1;
				else
					CHECK(!seen_cpuless, "node %d: tier order puts CPU-less before node %d", n, tier[i]);
			}
		}
		char a[256], b[256];
		list_str(fb, nfb, a, sizeof(a));
		list_str(tier, ntier, b, sizeof(b));
		printf("VMTAB topology node=%d mem_mib=%ld cpus=%d nd_mem_total_mib=%llu fallback=%s tier=%s\n", n,
		       T->mem_mib[n], T->has_cpus[n], (unsigned long long)(tot >> 20), a, b);
	}
	for (int c = 0; c < T->smp && c < nd_cpu_limit(); c++) {
		int e = vm_expected_mem_node(T, T->cpu_node[c]);
		CHECK(nd_node_of_cpu(c) == T->cpu_node[c], "nd_node_of_cpu(%d) = %d, QEMU: %d", c, nd_node_of_cpu(c),
		      T->cpu_node[c]);
		CHECK(nd_mem_node_of_cpu(c) == e, "nd_mem_node_of_cpu(%d) = %d, expected %d (nearest memory node)", c,
		      nd_mem_node_of_cpu(c), e);
		if (vm_pin(c) == 0)
			CHECK(nd_current_cpu() == c, "pinned to cpu %d, nd_current_cpu() = %d", c, nd_current_cpu());
		printf("VMTAB cpus cpu=%d node=%d mem_node=%d nd_mem_node=%d\n", c, T->cpu_node[c], e,
		       nd_mem_node_of_cpu(c));
	}
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	check_kernel();
	check_library();
	return CHECK_DONE();
}
