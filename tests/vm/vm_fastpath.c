// SPDX-License-Identifier: MIT
/*
 * Placement of the fast paths, as the kernel reports it (move_pages):
 *  - small objects of nd_malloc_onnode(size, X) are on X;
 *  - realloc keeps a block's node (small, small -> large, large -> large,
 *    large -> small), for a block placed on a node that is not the CPU's;
 *  - small objects under an interleave or weighted thread policy: the node
 *    is chosen per slab, and the pages of N objects are shared between
 *    the nodes by their weights within one slab plus one quota per node.
 * Each case runs in a fresh thread pinned to CPU 0 (no leftovers).
 */
#include "vm_common.h"

static const vm_topo_t *T = &vm_topo;
static int mem0, X;
static int M[VM_MAX_NODES], nm;

static void *onnode_case(void *arg)
{
	(void)arg;
	enum { N = 4096, SZ = 48 };
	void **o = vm_buf(N * sizeof(void *));
	for (int i = 0; i < N; i++) {
		o[i] = nd_malloc_onnode(SZ, X);
		if (o[i])
			memset(o[i], 1, SZ);
	}
	vm_hist_t h = VM_HIST_INIT;
	vm_hist_objs(&h, o, N, SZ);
	char hs[256];
	CHECK(h.total > 0 && h.node[X] == h.total, "onnode(%d, %d): pages %s", SZ, X, vm_hist_str(&h, hs, sizeof hs));
	printf("VMTAB fastpath case=onnode node=%d pages=%s\n", X, hs);
	for (int i = 0; i < N; i++)
		nd_free(o[i]);
	vm_unbuf(o, N * sizeof(void *));
	return NULL;
}

static void *realloc_case(void *arg)
{
	(void)arg;
	static const size_t sizes[] = { 24, 200, 3000, 40000, 3 << 20, 100 };
	char *b = nd_malloc_onnode(16, X);
	CHECK(b != NULL, "nd_malloc_onnode(16, %d)", X);
	for (unsigned i = 0; b && i < sizeof sizes / sizeof sizes[0]; i++) {
		char *r = realloc(b, sizes[i]);
		CHECK(r != NULL, "realloc to %zu", sizes[i]);
		if (!r)
			break;
		vm_touch(r, sizes[i]);
		vm_hist_t h = VM_HIST_INIT;
		vm_hist_range(&h, r, sizes[i], NULL);
		char hs[256];
		CHECK(h.total > 0 && h.node[X] == h.total, "realloc of a node-%d block to %zu bytes: pages %s (CPU 0's node %d)",
		      X, sizes[i], vm_hist_str(&h, hs, sizeof hs), mem0);
		printf("VMTAB fastpath case=realloc size=%zu node=%d pages=%s\n", sizes[i], X, hs);
		b = r;
	}
	free(b);
	return NULL;
}

typedef struct spread_arg {
	const char *pol;
	int w[VM_MAX_NODES]; /* weight per node (0 = not in the set) */
	long quota;          /* pages of a weight-1 turn */
} spread_arg_t;

static void *spread_case(void *arg)
{
	spread_arg_t *a = arg;
	nd_policy_t p;
	if (vm_policy(a->pol, &p) != 0)
		return NULL;
	CHECK(nd_set_policy(&p) == 0, "nd_set_policy(%s)", a->pol);
	/* 64-byte objects: 4-page slabs of 256 objects; 96 slabs */
	enum { SZ = 64, N = 256 * 96, SLAB = 4 };
	void **o = vm_buf(N * sizeof(void *));
	for (int i = 0; i < N; i++) {
		o[i] = malloc(SZ);
		if (o[i])
			memset(o[i], 1, SZ);
	}
	vm_hist_t h = VM_HIST_INIT;
	vm_hist_objs(&h, o, N, SZ);
	char hs[256];
	vm_hist_str(&h, hs, sizeof hs);
	long wsum = 0;
	for (int n = 0; n < VM_MAX_NODES; n++)
		wsum += a->w[n];
	for (int n = 0; n < VM_MAX_NODES; n++) {
		if (!a->w[n]) {
			CHECK(h.node[n] == 0, "%s: %ld pages on node %d, outside the set (%s)", a->pol, h.node[n], n, hs);
			continue;
		}
		double share = (double)h.total * a->w[n] / wsum;
		double tol = SLAB + a->quota * a->w[n] + 1;
		CHECK(h.node[n] >= share - tol && h.node[n] <= share + tol,
		      "%s: node %d has %ld of %ld pages, share %.1f +- %.0f (%s)", a->pol, n, h.node[n], h.total, share, tol, hs);
	}
	CHECK(h.other == 0, "%s: %ld pages not present (%s)", a->pol, h.other, hs);
	printf("VMTAB fastpath case=small policy=%s pages=%s\n", a->pol, hs);
	for (int i = 0; i < N; i++)
		free(o[i]);
	vm_unbuf(o, N * sizeof(void *));
	CHECK(nd_set_policy(NULL) == 0, "nd_set_policy(NULL)");
	return NULL;
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (!(VM_NEED(nd_policy_parse) & VM_NEED(nd_set_policy) & VM_NEED(nd_malloc_onnode) & VM_NEED(nd_free)))
		return CHECK_DONE();
	CHECK(vm_pin(0) == 0, "cannot pin to cpu 0");
	mem0 = vm_expected_mem_node(T, T->cpu_node[0]);
	nm = vm_mem_nodes(T, M);
	if (nm < 2) {
		printf("SKIP: fewer than two memory nodes\n");
		return 77;
	}
	X = M[nm - 1] != mem0 ? M[nm - 1] : M[0];
	vm_run_on(0, onnode_case, NULL);
	vm_run_on(0, realloc_case, NULL);

	spread_arg_t il = { .quota = 1 }, il64 = { .quota = 16 }, wt = { .quota = 1 };
	char p1[64], p2[64], p3[64];
	snprintf(p1, sizeof p1, "interleave:%d,%d", M[0], M[1]);
	il.pol = p1;
	il.w[M[0]] = il.w[M[1]] = 1;
	vm_run_on(0, spread_case, &il);
	snprintf(p2, sizeof p2, "interleave:%d,%d@64K", M[0], M[1]);
	il64.pol = p2;
	il64.w[M[0]] = il64.w[M[1]] = 1;
	vm_run_on(0, spread_case, &il64);
	snprintf(p3, sizeof p3, "weighted:%d=3,%d=1", M[0], M[1]);
	wt.pol = p3;
	wt.w[M[0]] = 3;
	wt.w[M[1]] = 1;
	vm_run_on(0, spread_case, &wt);
	return CHECK_DONE();
}
