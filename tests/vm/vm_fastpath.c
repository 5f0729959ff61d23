// SPDX-License-Identifier: MIT
/*
 * Placement of the fast paths, as the kernel reports it (move_pages):
 *  - small objects of nd_malloc_onnode(size, X) are on X;
 *  - realloc keeps a block's node (small, small -> large, large -> large,
 *    large -> small), for a block placed on a node that is not the CPU's
 *    by nd_malloc_onnode, nd_aligned_alloc_onnode, nd_malloc_policy (a
 *    plain bind object, a prepared preferred one), nd_malloc_interleaved
 *    over that node alone, nd_mallocx_onnode(ALIGN(4096)), and by
 *    reallocarray of an nd_calloc_onnode block (audit14: onnode only),
 *    also under a thread bind policy whose set holds both nodes;
 *  - small objects under an interleave or weighted thread policy (with and
 *    without +tier): the node is chosen per slab, and the pages of N objects are shared between
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
	vm_hist_str(&h, hs, sizeof hs); /* not in CHECK's message: evaluated on a failure only */
	CHECK(h.total > 0 && h.node[X] == h.total, "onnode(%d, %d): pages %s", SZ, X, hs);
	printf("VMTAB fastpath case=onnode node=%d pages=%s\n", X, hs);
	for (int i = 0; i < N; i++)
		nd_free(o[i]);
	vm_unbuf(o, N * sizeof(void *));
	return NULL;
}

/* A block of 16 bytes on node X by call k (0..NORIG-1), its name. */
enum { NORIG = 7 };
static void *origin(int k, const char **name)
{
	static nd_policy_t bx, px;
	static const nd_policy_t *prep;
	char spec[64];
	nd_nodemask_t m;
	switch (k) {
	case 0: *name = "nd_malloc_onnode"; return nd_malloc_onnode(16, X);
	case 1: *name = "nd_aligned_alloc_onnode(64)"; return nd_aligned_alloc_onnode(64, 16, X);
	case 2:
		*name = "nd_malloc_policy(bind:X)";
		snprintf(spec, sizeof spec, "bind:%d", X);
		return vm_policy(spec, &bx) == 0 ? nd_malloc_policy(16, &bx) : NULL;
	case 3:
		*name = "nd_malloc_policy(prepared preferred:X)";
		snprintf(spec, sizeof spec, "preferred:%d", X);
		if (!prep && vm_policy(spec, &px) == 0)
			prep = nd_policy_prepare(&px);
		return prep ? nd_malloc_policy(16, prep) : NULL;
	case 4:
		*name = "nd_malloc_interleaved({X})";
		nd_nodemask_zero(&m);
		nd_nodemask_set(&m, X);
		return nd_malloc_interleaved(16, &m, 0);
	case 5: *name = "nd_mallocx_onnode(ALIGN(4096))"; return nd_mallocx_onnode(16, X, ND_MALLOCX_ALIGN(4096));
	default: *name = "nd_calloc_onnode, then reallocarray"; return nd_calloc_onnode(1, 16, X);
	}
}

/* arg: NULL, or a thread policy in force (a bind set that holds X keeps
 * the block on X) */
static void *realloc_case(void *arg)
{
	const char *tpol = arg;
	nd_policy_t tp;
	if (tpol && (vm_policy(tpol, &tp) != 0 || nd_set_policy(&tp) != 0)) {
		CHECK(0, "nd_set_policy(%s)", tpol);
		return NULL;
	}
	static const size_t sizes[] = { 24, 200, 3000, 40000, 3 << 20, 100 };
	for (int k = 0; k < NORIG; k++) {
		const char *name;
		char *b = origin(k, &name);
		CHECK(b != NULL, "%s(16, %d)", name, X);
		for (unsigned i = 0; b && i < sizeof sizes / sizeof sizes[0]; i++) {
			char *r = k == NORIG - 1 ? reallocarray(b, sizes[i] / 4, 4) : realloc(b, sizes[i]);
			CHECK(r != NULL, "%s: realloc to %zu", name, sizes[i]);
			if (!r)
				break;
			vm_touch(r, sizes[i]);
			vm_hist_t h = VM_HIST_INIT;
			vm_hist_range(&h, r, sizes[i], NULL);
			char hs[256];
			vm_hist_str(&h, hs, sizeof hs);
			CHECK(h.total > 0 && h.node[X] == h.total,
			      "realloc of a node-%d block of %s to %zu bytes%s%s: pages %s (CPU 0's node %d)", X, name,
			      sizes[i], tpol ? " under " : "", tpol ? tpol : "", hs, mem0);
			printf("VMTAB fastpath case=realloc%s%s from=%d size=%zu node=%d pages=%s\n", tpol ? " policy=" : "",
			       tpol ? tpol : "", k, sizes[i], X, hs);
			b = r;
		}
		free(b);
	}
	if (tpol)
		CHECK(nd_set_policy(NULL) == 0, "nd_set_policy(NULL)");
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
	if (!(VM_NEED(nd_policy_parse) & VM_NEED(nd_set_policy) & VM_NEED(nd_malloc_onnode) & VM_NEED(nd_free) &
	      VM_NEED(nd_malloc_policy) & VM_NEED(nd_malloc_interleaved) & VM_NEED(nd_nodemask_zero) &
	      VM_NEED(nd_nodemask_set)))
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
	char bp[64];
	snprintf(bp, sizeof bp, "bind:%d,%d", mem0, X);
	vm_run_on(0, realloc_case, bp);

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
	/* +tier changes the fallback order, not the shares */
	spread_arg_t ilt = il, wtt = wt;
	char p4[80], p5[80];
	snprintf(p4, sizeof p4, "%s+tier", p1);
	ilt.pol = p4;
	vm_run_on(0, spread_case, &ilt);
	snprintf(p5, sizeof p5, "%s+tier", p3);
	wtt.pol = p5;
	vm_run_on(0, spread_case, &wtt);
	return CHECK_DONE();
}
