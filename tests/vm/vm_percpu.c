// SPDX-License-Identifier: MIT
/*
 * VM test, per-CPU areas (issue 6): every CPU's area is on that CPU's
 * memory node (its own node, or for a CPU of a memoryless node the nearest
 * node with memory), checked page by page with move_pages after nodalloc
 * committed them; the current CPU's copy is the one nd_percpu_ptr names;
 * and threads moved over all CPUs while incrementing sum exactly.
 */
#include "vm_common.h"

#pragma weak nd_percpu_alloc
#pragma weak nd_percpu_ptr

static const vm_topo_t *T = &vm_topo;
static nd_percpu_t h, big;
#define BIG (256 * 1024)
#define ITERS 300000

static void *pinned(void *arg)
{
	int cpu = (int)(intptr_t)arg;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof s, &s);
	CHECK(nd_this_cpu_ptr(h) == nd_percpu_ptr(h, cpu), "cpu %d: this_cpu_ptr is not its copy", cpu);
	nd_percpu_add(h, 1000 + cpu);
	CHECK(*(int64_t *)nd_percpu_ptr(h, cpu) == 1000 + cpu, "cpu %d: the add landed elsewhere", cpu);
	return NULL;
}

static void *mover(void *arg)
{
	int id = (int)(intptr_t)arg;
	for (int i = 0; i < ITERS; i++) {
		if (i % 1024 == 0) {
			cpu_set_t s;
			CPU_ZERO(&s);
			CPU_SET((id + i / 1024) % T->smp, &s);
			sched_setaffinity(0, sizeof s, &s);
		}
		nd_percpu_inc(h);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv))
		return CHECK_DONE();
	if (!VM_NEED(nd_percpu_alloc) || !VM_NEED(nd_percpu_ptr))
		return CHECK_DONE();
	h = nd_percpu_alloc(8, 8);
	big = nd_percpu_alloc(BIG, 4096);
	CHECK(h && big);
	CHECK(nd_percpu_uses_rseq() == 1, "per-CPU operations do not use rseq in the VM");
	for (int c = 0; c < T->smp; c++) {
		int want = vm_expected_mem_node(T, T->cpu_node[c]);
		char *area = (char *)nd_percpu_ptr(h, c) - h;
		size_t npages = (big + BIG) / VM_PAGE;
		const void **pages = vm_buf(npages * sizeof(void *));
		int *st = vm_buf(npages * sizeof(int));
		for (size_t i = 0; i < npages; i++)
			pages[i] = area + i * VM_PAGE;
		long on = 0, other = 0, absent = 0;
		CHECK(syscall(SYS_move_pages, 0, npages, pages, NULL, st, 0) == 0);
		for (size_t i = 0; i < npages; i++)
			st[i] == want ? on++ : st[i] < 0 ? absent++ : other++;
		printf("VMTAB percpu cpu=%d node=%d mem_node=%d pages=%zu on_mem_node=%ld other=%ld absent=%ld\n",
		       c, T->cpu_node[c], want, npages, on, other, absent);
		CHECK(on == (long)npages, "cpu %d: %ld of %zu area pages on memory node %d (%ld elsewhere, %ld absent)",
		      c, on, npages, want, other, absent);
		vm_unbuf(pages, npages * sizeof(void *));
		vm_unbuf(st, npages * sizeof(int));
		pthread_t t;
		pthread_create(&t, NULL, pinned, (void *)(intptr_t)c);
		pthread_join(t, NULL);
	}
	int64_t base = nd_percpu_sum(h);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, mover, (void *)(intptr_t)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK(nd_percpu_sum(h) - base == 4LL * ITERS, "sum %lld, expected %lld",
	      (long long)(nd_percpu_sum(h) - base), 4LL * ITERS);
	return CHECK_DONE();
}
