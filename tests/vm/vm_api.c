// SPDX-License-Identifier: MIT
/*
 * The programmer's API of issue 14, placement as the kernel reports it:
 *  - nd_mallocx_onnode / nd_mallocx_policy (prepared policy) with
 *    alignment and zeroing put small and large blocks on the node asked;
 *  - objects of a node heap are on its node; an interleave heap's share
 *    its nodes;
 *  - nd_where agrees with move_pages, and nd_move takes a block to another
 *    node (nd_where and move_pages both see it there, contents intact).
 * Runs pinned to CPU 0 in a fresh thread.
 */
#include <stdbool.h>

#include "vm_common.h"

#pragma weak nd_mallocx_onnode
#pragma weak nd_mallocx_policy
#pragma weak nd_policy_prepare
#pragma weak nd_where
#pragma weak nd_move
#pragma weak nd_heap_new
#pragma weak nd_heap_new_policy
#pragma weak nd_heap_malloc
#pragma weak nd_heap_destroy

static const vm_topo_t *T = &vm_topo;
static int mem0, X;
static int M[VM_MAX_NODES];

static void check_on(const char *what, const void *p, size_t size, int node)
{
	vm_hist_t h = VM_HIST_INIT;
	vm_hist_range(&h, p, size, NULL);
	char hs[256];
	CHECK(h.total > 0 && h.node[node] == h.total, "%s: pages %s, wanted node %d", what, vm_hist_str(&h, hs, sizeof hs),
	      node);
	printf("VMTAB api case=%s node=%d pages=%s\n", what, node, hs);
}

static bool zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* k zeroed blocks of sz aligned to a, by nd_mallocx_onnode(X) (pp NULL)
 * or nd_mallocx_policy(pp), touched, then on X as the kernel says. */
static void zeroed_on(unsigned char **b, int k, size_t sz, size_t a, const nd_policy_t *pp)
{
	char what[96];
	unsigned fl = ND_MALLOCX_ALIGN(a) | ND_MALLOCX_ZERO;
	snprintf(what, sizeof what, "%s-%zu", pp ? "mallocx_policy" : "mallocx_onnode", sz);
	for (int j = 0; j < k; j++) {
		b[j] = pp ? nd_mallocx_policy(sz, pp, fl) : nd_mallocx_onnode(sz, X, fl);
		CHECK(b[j] && ((uintptr_t)b[j] & (a - 1)) == 0 && zero(b[j], sz), "%s align %zu: %p", what, a, (void *)b[j]);
		if (b[j])
			vm_touch(b[j], sz);
	}
	for (int j = 0; j < k; j++)
		if (b[j])
			check_on(what, b[j], sz, X);
	for (int j = 0; j < k; j++)
		free(b[j]);
}

static void *x_case(void *arg)
{
	(void)arg;
	static const size_t sizes[] = { 48, 3000, 40000, 3 << 20 };
	char pol[64];
	snprintf(pol, sizeof pol, "bind:%d", X);
	nd_policy_t p;
	if (vm_policy(pol, &p) != 0)
		return NULL;
	const nd_policy_t *pp = nd_policy_prepare(&p);
	CHECK(pp != NULL, "nd_policy_prepare(%s)", pol);
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		enum { K = 32 };
		unsigned char *b[K];
		size_t sz = sizes[i];
		int k = sz < 100000 ? K : 2;
		/* old contents first: the zeroed blocks reuse them */
		for (int j = 0; j < k; j++) {
			b[j] = nd_mallocx_onnode(sz, X, ND_MALLOCX_ALIGN(64));
			if (b[j])
				memset(b[j], 0x5a, sz);
		}
		for (int j = 0; j < k; j++)
			free(b[j]);
		zeroed_on(b, k, sz, 256, NULL);
		zeroed_on(b, k, sz, 64, pp);
	}
	return NULL;
}

static void *move_case(void *arg)
{
	(void)arg;
	size_t sz = 2 << 20;
	unsigned char *b = nd_malloc_onnode(sz, mem0);
	CHECK(b != NULL, "nd_malloc_onnode(2 MiB, %d)", mem0);
	if (!b)
		return NULL;
	for (size_t i = 0; i < sz; i++)
		b[i] = (unsigned char)(i * 7);
	uint64_t c[VM_MAX_NODES];
	long n = nd_where(b, sz, c, VM_MAX_NODES);
	CHECK(n == (long)(sz / VM_PAGE) && c[mem0] == (uint64_t)n, "nd_where before: %ld pages, %llu on node %d", n,
	      (unsigned long long)c[mem0], mem0);
	check_on("before-move", b, sz, mem0);
	CHECK(nd_move(b, sz, X) == 0, "nd_move(2 MiB, %d): errno %d", X, errno);
	n = nd_where(b, sz, c, VM_MAX_NODES);
	CHECK(n == (long)(sz / VM_PAGE) && c[X] == (uint64_t)n, "nd_where after: %ld pages, %llu on node %d", n,
	      (unsigned long long)c[X], X);
	check_on("after-move", b, sz, X);
	bool same = true;
	for (size_t i = 0; i < sz; i++)
		same &= b[i] == (unsigned char)(i * 7);
	CHECK(same, "contents kept across the move");
	CHECK(nd_node_of(b) == mem0, "nd_node_of keeps nodalloc's record: %d", nd_node_of(b));
	printf("VMTAB api case=move from=%d to=%d pages=%ld\n", mem0, X, n);
	free(b);
	return NULL;
}

/* A node heap and an interleave policy heap: the kernel's placement of
 * their objects (small and large). */
static void *heap_case(void *arg)
{
	(void)arg;
	static const size_t sizes[] = { 64, 3000, 100000 };
	nd_heap_t *h = nd_heap_new(X);
	CHECK(h != NULL, "nd_heap_new(%d)", X);
	if (!h)
		return NULL;
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		enum { K = 64 };
		char what[64];
		snprintf(what, sizeof what, "heap-%zu", sizes[i]);
		for (int j = 0; j < K; j++) {
			void *p = nd_heap_malloc(h, sizes[i]);
			CHECK(p != NULL, "%s", what);
			if (p) {
				vm_touch(p, sizes[i]);
				check_on(what, p, sizes[i], X);
			}
		}
	}
	nd_heap_destroy(h); /* with every object live */
	char pol[64];
	snprintf(pol, sizeof pol, "interleave:%d,%d", mem0, X);
	nd_policy_t p;
	if (vm_policy(pol, &p) != 0 || !(h = nd_heap_new_policy(&p)))
		return NULL;
	enum { N = 64 * 64 }; /* 4 MiB: 256 slabs of 16 KiB */
	void **o = vm_buf(N * sizeof(void *));
	for (int i = 0; i < N; i++)
		vm_touch(o[i] = nd_heap_malloc(h, 1024), 1024);
	vm_hist_t hh = VM_HIST_INIT;
	vm_hist_objs(&hh, o, N, 1024);
	char hs[256];
	vm_hist_str(&hh, hs, sizeof hs);
	CHECK(hh.node[mem0] + hh.node[X] == hh.total && hh.node[mem0] >= hh.total / 3 && hh.node[X] >= hh.total / 3,
	      "interleave heap: pages %s", hs);
	printf("VMTAB api case=heap-interleave pages=%s\n", hs);
	nd_heap_destroy(h);
	vm_unbuf(o, N * sizeof(void *));
	return NULL;
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (!(VM_NEED(nd_mallocx_onnode) & VM_NEED(nd_mallocx_policy) & VM_NEED(nd_policy_prepare) & VM_NEED(nd_where) &
	      VM_NEED(nd_move) & VM_NEED(nd_policy_parse) & VM_NEED(nd_heap_new) & VM_NEED(nd_heap_new_policy) &
	      VM_NEED(nd_heap_malloc) & VM_NEED(nd_heap_destroy)))
		return CHECK_DONE();
	if (vm_pin(0) != 0) {
		CHECK(0, "cannot pin to cpu 0");
		return CHECK_DONE();
	}
	mem0 = vm_expected_mem_node(T, T->cpu_node[0]);
	/* X: the last memory node other than CPU 0's */
	X = -1;
	for (int i = 0, n = vm_mem_nodes(T, M); i < n; i++)
		if (M[i] != mem0)
			X = M[i];
	if (X < 0) {
		printf("SKIP: no memory node besides CPU 0's\n");
		return 77;
	}
	vm_run_on(0, x_case, NULL);
	vm_run_on(0, move_case, NULL);
	vm_run_on(0, heap_case, NULL);
	return CHECK_DONE();
}
