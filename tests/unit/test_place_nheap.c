// SPDX-License-Identifier: MIT
/* The node calls' heaps in the thread record (nheap[], ND_NHEAP_IN nodes)
 * and past it, under an emulated topology of 40 nodes:
 *  - nd_malloc_onnode, nd_mallocx_onnode (flags 0 and an alignment) and
 *    nd_aligned_alloc_onnode land on their node and, warm, leave the fast
 *    path only for refills, for nodes below ND_NHEAP_IN (nheap) and above
 *    it (heaps[], bound nbig) alike;
 *  - nheap[] is heaps[]'s copy for every node below nfast, in a fresh and
 *    in a reused thread record (the exit hook puts the empty heap back in
 *    both). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

enum { NODES = 40, CALLS = 64 };
static const int nodes[] = { 0, 1, ND_NHEAP_IN - 1, ND_NHEAP_IN, NODES - 1 };

static void *call(int k, int node)
{
	switch (k) {
	case 0: return nd_malloc_onnode(48, node);
	case 1: return nd_mallocx_onnode(48, node, 0);
	case 2: return nd_mallocx_onnode(48, node, ND_MALLOCX_ALIGN(64));
	default: return nd_aligned_alloc_onnode(64, 48, node);
	}
}

/* Every call on every node twice: how many blocks off their node, and the
 * second round's slow paths. */
static void *body(void *arg)
{
	int *bad = arg;
	nd_emulate_cpu(0);
	for (int round = 0; round < 2; round++) {
		uint64_t before = _nd_slab_slow_count();
		for (unsigned i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
			for (int k = 0; k < 4; k++)
				for (int j = 0; j < CALLS; j++) {
					void *p = call(k, nodes[i]);
					if ((!p || nd_node_of(p) != nodes[i]) && (*bad)++ < 5)
						CHECK(0, "call %d on node %d: %p on node %d", k, nodes[i], p,
						      p ? nd_node_of(p) : -1);
					free(p);
				}
		uint64_t slow = _nd_slab_slow_count() - before;
		if (round == 1 && slow > 4 && (*bad)++ < 5)
			CHECK(0, "warm: %llu slow paths in %d calls", (unsigned long long)slow, 4 * CALLS * 5);
	}
	_nd_thread_t *t = _nd_tls;
	if (t->nfast != ND_NHEAP_IN || t->nbig != t->nheaps || t->nheaps < NODES) {
		CHECK(0, "bounds: nfast %d, nbig %d, nheaps %d", (int)t->nfast, t->nbig, t->nheaps);
		(*bad)++;
	}
	for (int i = 0; i < t->nfast; i++)
		if (t->nheap[i] != t->heaps[i] && (*bad)++ < 5)
			CHECK(0, "nheap[%d] is not heaps[%d]", i, i);
	return NULL;
}

int main(void)
{
	char spec[2048], err[256];
	int len = snprintf(spec, sizeof spec, "0: cpus=0-1 mem=64M");
	for (int n = 1; n < NODES; n++)
		len += snprintf(spec + len, sizeof spec - (size_t)len, "; %d: mem=64M", n);
	CHECK(nd_topology_emulate(spec, err, sizeof err) == 0, "emulate: %s", err);
	/* threads one after another: the first record fresh, the others reused */
	for (int i = 0; i < 3; i++) {
		int bad = 0;
		pthread_t th;
		CHECK(pthread_create(&th, NULL, body, &bad) == 0);
		pthread_join(th, NULL);
		CHECK(bad == 0, "thread %d: %d wrong", i, bad);
	}
	return CHECK_DONE();
}
