// SPDX-License-Identifier: MIT
/*
 * VM test 2, placement per CPU: a thread that starts on a CPU allocates
 * small objects (64 B x many) and large blocks (4 MiB), through nd_malloc
 * and through malloc (nodalloc replaces it), touches them, and the kernel
 * must report 100% of their pages on the CPU's memory node: its own node,
 * or for a CPU of a memoryless node the nearest node with memory.
 */
#include "vm_common.h"

#define NSMALL 8192          /* 64 B objects: 512 KiB, 128 pages */
#define SMALL 64
#define LARGE (4 * VM_MIB)

static const vm_topo_t *T = &vm_topo;

typedef struct job {
	int cpu;
	int use_malloc; /* 1 = malloc/free, 0 = nd_malloc/nd_free */
} job_t;

static void *alloc(const job_t *j, size_t n) { return j->use_malloc ? malloc(n) : nd_malloc(n); }
static void release(const job_t *j, void *p) { j->use_malloc ? free(p) : nd_free(p); }

static void report(const job_t *j, const char *kind, const vm_hist_t *h, int want)
{
	char hs[512];
	double pct = h->total ? 100.0 * (double)h->node[want] / (double)h->total : 0.0;
	printf("VMTAB placement cpu=%d node=%d mem_node=%d api=%s kind=%s pages=%ld on_mem_node=%ld pct=%.1f nodes=%s\n",
	       j->cpu, T->cpu_node[j->cpu], want, j->use_malloc ? "malloc" : "nd_malloc", kind, h->total,
	       h->node[want], pct, vm_hist_str(h, hs, sizeof(hs)));
	CHECK(h->total > 0 && h->node[want] == h->total,
	      "cpu %d %s %s: %ld of %ld pages on memory node %d (%.1f%%), pages per node %s", j->cpu,
	      j->use_malloc ? "malloc" : "nd_malloc", kind, h->node[want], h->total, want, pct, hs);
}

static void *on_cpu(void *arg)
{
	const job_t *j = arg;
	int want = vm_expected_mem_node(T, T->cpu_node[j->cpu]);
	CHECK(sched_getcpu() == j->cpu, "thread meant for cpu %d runs on %d", j->cpu, sched_getcpu());

	void **objs = vm_buf(NSMALL * sizeof(void *));
	size_t got = 0;
	for (size_t i = 0; i < NSMALL; i++) {
		objs[i] = alloc(j, SMALL);
		if (objs[i]) {
			memset(objs[i], (int)i, SMALL);
			got++;
		}
	}
	CHECK(got == NSMALL, "cpu %d: %zu of %d small allocations failed", j->cpu, NSMALL - got, NSMALL);
	vm_hist_t h = VM_HIST_INIT;
	vm_hist_objs(&h, objs, NSMALL, SMALL);
	report(j, "64Bx8192", &h, want);
	if (objs[0] && nd_node_of)
		CHECK(nd_node_of(objs[0]) == want, "cpu %d: nd_node_of(small) = %d, expected %d", j->cpu,
		      nd_node_of(objs[0]), want);

	void *big = alloc(j, LARGE);
	CHECK(big != NULL, "cpu %d: 4 MiB allocation failed", j->cpu);
	if (big) {
		vm_touch(big, LARGE);
		vm_hist_t hl = VM_HIST_INIT;
		vm_hist_range(&hl, big, LARGE, NULL);
		report(j, "4MiB", &hl, want);
		if (nd_node_of)
			CHECK(nd_node_of(big) == want, "cpu %d: nd_node_of(large) = %d, expected %d", j->cpu,
			      nd_node_of(big), want);
		release(j, big);
	}
	for (size_t i = 0; i < NSMALL; i++)
		if (objs[i])
			release(j, objs[i]);
	vm_unbuf(objs, NSMALL * sizeof(void *));
	return NULL;
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (!(VM_NEED(nd_malloc) & VM_NEED(nd_free)))
		return CHECK_DONE();
	for (int cpu = 0; cpu < T->smp; cpu++)
		for (int m = 0; m < 2; m++) {
			job_t j = { cpu, m };
			vm_run_on(cpu, on_cpu, &j);
		}
	return CHECK_DONE();
}
