// SPDX-License-Identifier: MIT
/*
 * VM test 3, migration:
 *  - one thread allocates on CPU A, is moved (sched_setaffinity) to CPU B
 *    whose memory node differs, allocates again: its new memory is on B's
 *    memory node; moved back to A: on A's again;
 *  - a thread on A allocates and frees everything and exits; a new thread
 *    on B then gets memory of B's node only (A's freed memory stays A's).
 * CPU B is taken from a memoryless node when there is one.
 */
#include "vm_common.h"

#define NSMALL 4096
#define SMALL 64
#define LARGE (4 * VM_MIB)
#define NLARGE 4

static const vm_topo_t *T = &vm_topo;
static int cpu_a = -1, cpu_b = -1;

static int mem_of(int cpu) { return vm_expected_mem_node(T, T->cpu_node[cpu]); }

/* A batch of allocations: small objects through nd_malloc and malloc, and
 * large blocks; all touched. */
typedef struct batch {
	void **small;     /* 2 * NSMALL: nd_malloc then malloc */
	void *large[NLARGE];
} batch_t;

static void batch_alloc(batch_t *b)
{
	b->small = vm_buf(2 * NSMALL * sizeof(void *));
	for (size_t i = 0; i < 2 * NSMALL; i++) {
		b->small[i] = i < NSMALL ? nd_malloc(SMALL) : malloc(SMALL);
		if (b->small[i])
			memset(b->small[i], 0x5a, SMALL);
	}
	for (int i = 0; i < NLARGE; i++) {
		b->large[i] = nd_malloc(LARGE);
		if (b->large[i])
			vm_touch(b->large[i], LARGE);
	}
}

static void batch_free(batch_t *b)
{
	for (size_t i = 0; i < 2 * NSMALL; i++)
		if (b->small[i])
			i < NSMALL ? nd_free(b->small[i]) : free(b->small[i]);
	for (int i = 0; i < NLARGE; i++)
		if (b->large[i])
			nd_free(b->large[i]);
	vm_unbuf(b->small, 2 * NSMALL * sizeof(void *));
}

static void batch_check(batch_t *b, const char *what, int cpu)
{
	int want = mem_of(cpu);
	vm_hist_t hs = VM_HIST_INIT, hl = VM_HIST_INIT;
	long fails = 0;
	for (size_t i = 0; i < 2 * NSMALL; i++)
		fails += !b->small[i];
	for (int i = 0; i < NLARGE; i++) {
		fails += !b->large[i];
		vm_hist_range(&hl, b->large[i], b->large[i] ? LARGE : 0, NULL);
	}
	vm_hist_objs(&hs, b->small, 2 * NSMALL, SMALL);
	char s1[256], s2[256];
	printf("VMTAB migration step=%s cpu=%d mem_node=%d small_pages=%ld small_nodes=%s large_pages=%ld large_nodes=%s\n",
	       what, cpu, want, hs.total, vm_hist_str(&hs, s1, sizeof(s1)), hl.total, vm_hist_str(&hl, s2, sizeof(s2)));
	CHECK(fails == 0, "%s: %ld allocations failed", what, fails);
	CHECK(hs.total > 0 && hs.node[want] == hs.total, "%s (cpu %d): small objects' pages %s, all expected on node %d",
	      what, cpu, s1, want);
	CHECK(hl.total > 0 && hl.node[want] == hl.total, "%s (cpu %d): large blocks' pages %s, all expected on node %d",
	      what, cpu, s2, want);
}

static void *migrating(void *arg)
{
	(void)arg;
	batch_t b1, b2, b3;
	CHECK(sched_getcpu() == cpu_a, "started on cpu %d, not %d", sched_getcpu(), cpu_a);
	batch_alloc(&b1);
	batch_check(&b1, "before-move", cpu_a);
	CHECK(vm_pin(cpu_b) == 0, "cannot move to cpu %d", cpu_b);
	batch_alloc(&b2);
	batch_check(&b2, "after-move", cpu_b);
	CHECK(vm_pin(cpu_a) == 0, "cannot move back to cpu %d", cpu_a);
	batch_alloc(&b3);
	batch_check(&b3, "moved-back", cpu_a);
	/* the first batch is still where it was: freeing it after moving
	 * must not have moved it (and a later check would catch corruption) */
	vm_hist_t h = VM_HIST_INIT;
	vm_hist_range(&h, b1.large[0], b1.large[0] ? LARGE : 0, NULL);
	CHECK(h.node[mem_of(cpu_a)] == h.total, "first batch moved off node %d", mem_of(cpu_a));
	batch_free(&b1);
	batch_free(&b2);
	batch_free(&b3);
	return NULL;
}

static void *alloc_free_exit(void *arg)
{
	batch_t b;
	batch_alloc(&b);
	batch_check(&b, (const char *)arg, sched_getcpu());
	batch_free(&b);
	return NULL;
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (!(VM_NEED(nd_malloc) & VM_NEED(nd_free)))
		return CHECK_DONE();
	cpu_a = 0;
	for (int c = 0; c < T->smp; c++) {
		if (mem_of(c) == mem_of(cpu_a))
			continue;
		/* prefer a CPU of a memoryless node */
		if (cpu_b < 0 || (vm_has_mem(T, T->cpu_node[cpu_b]) && !vm_has_mem(T, T->cpu_node[c])))
			cpu_b = c;
	}
	if (cpu_b < 0) {
		printf("SKIP: every CPU has the same memory node\n");
		return 77;
	}
	printf("VMTAB migration-setup cpu_a=%d mem_a=%d cpu_b=%d mem_b=%d\n", cpu_a, mem_of(cpu_a), cpu_b, mem_of(cpu_b));
	vm_run_on(cpu_a, migrating, NULL);
	/* after a thread on A freed everything, a new thread on B gets B's
	 * memory, and a new thread on A again A's */
	vm_run_on(cpu_a, alloc_free_exit, "thread-on-A");
	vm_run_on(cpu_b, alloc_free_exit, "new-thread-on-B");
	vm_run_on(cpu_a, alloc_free_exit, "new-thread-on-A");
	return CHECK_DONE();
}
