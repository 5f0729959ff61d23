// SPDX-License-Identifier: MIT
/*
 * VM test, the cache of freed large runs (src/large.c, docs/malloc.md
 * "Large blocks"): freed memory keeps its node. On CPU 0, per memory node
 * m: a 4 MiB block by nd_malloc_onnode(m), touched and stamped, all its
 * pages on m per move_pages; freed, so it is cached on m. Then for each m:
 *  - 4 MiB on the next memory node n: every page on n (m's cached run must
 *    not serve it, nor n's own run if it was m's);
 *  - 4 MiB on m again: the very block freed (reused, not purged: the stamp
 *    is still there) and every page still on m;
 *  - under the thread policy bind:m, malloc(4 MiB): every page on m.
 * 4 MiB stays within every bed node's cache bound (1/16 of 128 MiB).
 */
#include "vm_common.h"

#define BLK (4 * VM_MIB)

static const vm_topo_t *T = &vm_topo;

static void expect_on(const char *what, int node, void *p)
{
	vm_hist_t h = VM_HIST_INIT;
	vm_hist_range(&h, p, p ? BLK : 0, NULL);
	char hs[512];
	int pass = p && h.total > 0 && h.node[node] == h.total;
	printf("VMTAB large case=%s node=%d pages=%ld nodes=%s result=%s\n", what, node, h.total,
	       vm_hist_str(&h, hs, sizeof(hs)), pass ? "ok" : "FAIL");
	CHECK(pass, "%s: expected every page on node %d, got %s", what, node, p ? hs : "NULL");
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (!(VM_NEED(nd_malloc_onnode) & VM_NEED(nd_free) & VM_NEED(nd_malloc) & VM_NEED(nd_set_policy) &
	      VM_NEED(nd_policy_parse)))
		return CHECK_DONE();
	CHECK(vm_pin(0) == 0, "cannot pin to cpu 0");
	int M[VM_MAX_NODES], nm = vm_mem_nodes(T, M);
	unsigned char *first[VM_MAX_NODES] = { 0 };
	char what[64];
	for (int i = 0; i < nm; i++) {
		first[i] = nd_malloc_onnode(BLK, M[i]);
		if (first[i]) {
			vm_touch(first[i], BLK);
			first[i][0] = (unsigned char)(0xA0 + i);
			first[i][BLK - 1] = (unsigned char)(0x50 + i);
		}
		snprintf(what, sizeof what, "fresh-%d", M[i]);
		expect_on(what, M[i], first[i]);
	}
	/* One node's block at a time is cached: the next node's cache is empty,
	 * so what it gets must be fresh memory of its own. */
	unsigned char *held[VM_MAX_NODES], *other[VM_MAX_NODES] = { 0 };
	for (int i = 0; i < nm; i++)
		held[i] = first[i];
	for (int i = 0; i < nm && nm > 1; i++) {
		if (!first[i])
			continue;
		nd_free(held[i]); /* cached on M[i] */
		int n = M[(i + 1) % nm];
		unsigned char *q = nd_malloc_onnode(BLK, n);
		if (q)
			vm_touch(q, BLK);
		snprintf(what, sizeof what, "other-%d-after-%d", n, M[i]);
		expect_on(what, n, q);
		CHECK(q != first[i], "node %d got node %d's freed block", n, M[i]);
		unsigned char *r = nd_malloc_onnode(BLK, M[i]);
		CHECK(r == first[i] && r[0] == (unsigned char)(0xA0 + i) && r[BLK - 1] == (unsigned char)(0x50 + i),
		      "node %d: the freed block %p was not reused as it was (got %p)", M[i], (void *)first[i], (void *)r);
		snprintf(what, sizeof what, "reused-%d", M[i]);
		expect_on(what, M[i], r);
		held[i] = r;
		other[i] = q;
	}
	for (int i = 0; i < nm; i++) {
		if (held[i])
			nd_free(held[i]);
		if (other[i])
			nd_free(other[i]);
	}
	for (int i = 0; i < nm; i++) {
		nd_policy_t p;
		char s[32];
		snprintf(s, sizeof s, "bind:%d", M[i]);
		if (vm_policy(s, &p) != 0 || nd_set_policy(&p) != 0)
			continue;
		unsigned char *b = nd_malloc(BLK);
		if (b)
			vm_touch(b, BLK);
		snprintf(what, sizeof what, "bind-%d", M[i]);
		expect_on(what, M[i], b);
		nd_free(b);
	}
	nd_set_policy(NULL);
	return CHECK_DONE();
}
