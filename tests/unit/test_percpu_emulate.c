// SPDX-License-Identifier: MIT
/* Per-CPU areas under an emulated topology: one area per possible CPU
 * (sparse CPU ids leave holes with no area), each recorded on its CPU's
 * memory node (a memoryless node's CPUs get the nearest node with memory),
 * no mbind (the real machine has one node), the atomic fallback, and
 * nd_emulate_cpu choosing the slot. The emulation is installed first thing
 * in main, before anything may allocate. */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define THREADS 4
#define ITERS 200000

static nd_percpu_t h;
static const int possible[] = { 0, 1, 2, 3, 4, 5, 8, 9 };
#define NPOSSIBLE 8

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	for (int i = 0; i < ITERS; i++) {
		if (i % 1000 == 0) /* "migrate" to another emulated CPU */
			nd_emulate_cpu(possible[(id + i / 1000) % NPOSSIBLE]);
		nd_percpu_inc(h);
	}
	nd_emulate_cpu(-1);
	return NULL;
}

int main(void)
{
	char err[256] = "";
	/* Node 1 is memoryless and nearer to node 2 (15) than to node 0 (20);
	 * CPUs 6-7 do not exist. */
	int rc = nd_topology_emulate("0: cpus=0-1 mem=1G; 1: cpus=2-3 mem=0; 2: cpus=4-5 mem=1G;"
				     "3: cpus=8-9 mem=512M; distance: 0-1=20, 1-2=15, 0-2=20",
				     err, sizeof err);
	CHECK(rc == 0, "emulate failed: %s", err);
	CHECK(_nd_topo()->emulated);
	CHECK_EQ(nd_cpu_limit(), 10);

	/* A small span (NODALLOC_PERCPU_AREA) to see the area fill up. */
	CHECK(_nd_opt_set("percpu_area", "64K") == 0);
	h = nd_percpu_alloc(8, 8);
	CHECK(h != 0);
	CHECK_EQ(_nd_percpu_area_size(), 64 << 10);
	CHECK((char *)nd_percpu_ptr(h, 9) - (char *)nd_percpu_ptr(h, 0) == 9 * (64 << 10));
	nd_percpu_t most = nd_percpu_alloc(60 << 10, 0);
	CHECK(most != 0);
	CHECK_EQ(nd_percpu_alloc(8 << 10, 0), 0); /* full */
	nd_percpu_free(most);
	CHECK(_nd_topo_frozen()); /* the areas commit to this topology */
	CHECK_EQ(nd_percpu_uses_rseq(), 0);
	CHECK_EQ(nd_percpu_bytes(), 8 * NPOSSIBLE);

	static const int want_node[10] = { 0, 0, 2, 2, 2, 2, -1, -1, 3, 3 };
	for (int c = 0; c < 10; c++) {
		CHECK_EQ(_nd_percpu_area_node(c), want_node[c]);
		if (want_node[c] >= 0)
			CHECK_EQ(_nd_percpu_area_node(c), nd_mem_node_of_cpu(c));
		CHECK((nd_percpu_ptr(h, c) != NULL) == (want_node[c] >= 0), "cpu %d", c);
	}
	/* No mbind in emulation: the areas keep the default policy. */
	int mode = -1;
	uint64_t mask[ND_MAX_NODES / 64] = { 0 };
	CHECK(_nd_os_get_mempolicy(&mode, mask, ND_MAX_NODES, nd_percpu_ptr(h, 4), ND_MPOL_F_ADDR) == 0);
	CHECK_EQ(mode, ND_MPOL_DEFAULT);

	/* The emulated CPU picks the slot. */
	for (int i = 0; i < NPOSSIBLE; i++) {
		int c = possible[i];
		nd_emulate_cpu(c);
		CHECK(nd_this_cpu_ptr(h) == nd_percpu_ptr(h, c));
		nd_percpu_add(h, c + 1);
		CHECK_EQ(nd_percpu_add_return(h, 100), c + 101);
		CHECK_EQ(*(int64_t *)nd_percpu_ptr(h, c), c + 101);
	}
	nd_emulate_cpu(-1);
	int64_t base = nd_percpu_sum(h);
	CHECK_EQ(base, 100 * NPOSSIBLE + (0 + 1 + 2 + 3 + 4 + 5 + 8 + 9) + NPOSSIBLE);

	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(nd_percpu_sum(h) - base, (int64_t)THREADS * ITERS);
	/* Every emulated CPU's slot took part. */
	for (int i = 0; i < NPOSSIBLE; i++)
		CHECK(*(int64_t *)nd_percpu_ptr(h, possible[i]) > possible[i] + 101);
	return CHECK_DONE();
}
