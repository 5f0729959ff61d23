// SPDX-License-Identifier: MIT
/*
 * VM test, a large block on an emptied bound node (task bigslot,
 * docs/arenas.md "Spans"): per memory node m, under the thread policy
 * bind:m, a churn of 1 B - 8 MiB blocks (malloc, realloc, free; live
 * requests up to a third of m's room) is freed whole and trimmed; then one
 * block of half of m's room (what the kernel has above its high watermark)
 * is allocated, touched whole, and every page of it must be
 * on m (move_pages). The library's own runs left in m's slot (metadata
 * chunks, the heaps' slabs) must neither refuse it nor send it elsewhere.
 * Rows: VMTAB bigslot ...
 */
#include "vm_common.h"

#include <malloc.h>

static const vm_topo_t *T = &vm_topo;

static uint64_t rs = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

#define NSLOT 2048

static void churn(uint64_t live_max)
{
	static char *p[NSLOT];
	static size_t sz[NSLOT];
	uint64_t live = 0;
	for (int step = 0; step < 20000; step++) {
		int i = (int)(rnd() % NSLOT);
		if (p[i] && rnd() % 2) {
			nd_free(p[i]);
			live -= sz[i];
			p[i] = NULL;
			sz[i] = 0;
			continue;
		}
		size_t n = rnd() % 4 ? 1 + rnd() % 4096 : 1 + rnd() % (8 * VM_MIB);
		if (live - sz[i] + n > live_max)
			continue;
		char *q = p[i] ? nd_realloc(p[i], n) : nd_malloc(n);
		if (!q)
			continue;
		live += n - sz[i];
		p[i] = q;
		sz[i] = n;
		q[0] = q[n - 1] = 1;
	}
	for (int i = 0; i < NSLOT; i++) {
		nd_free(p[i]);
		p[i] = NULL;
		sz[i] = 0;
	}
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (!(VM_NEED(nd_malloc) & VM_NEED(nd_free) & VM_NEED(nd_set_policy) &
	      VM_NEED(nd_policy_parse)))
		return CHECK_DONE();
	CHECK(vm_pin(0) == 0, "cannot pin to cpu 0");
	int M[VM_MAX_NODES], nm = vm_mem_nodes(T, M);
	for (int i = 0; i < nm; i++) {
		int m = M[i];
		nd_policy_t pol;
		char s[32];
		snprintf(s, sizeof s, "bind:%d", m);
		if (vm_policy(s, &pol) != 0 || nd_set_policy(&pol) != 0) {
			CHECK(0, "cannot set %s", s);
			continue;
		}
		churn(vm_zone_headroom(m, 1) / 3);
		malloc_trim(0);
		/* half the room left: a bound fault that reaches the node's min
		 * watermark is an OOM kill (vm_pressure), and the descriptors
		 * and page tables of the block come from the node too */
		uint64_t big = (vm_zone_headroom(m, 1) / 2) & ~(VM_MIB - 1);
		unsigned char *b = nd_malloc(big);
		vm_hist_t h = VM_HIST_INIT;
		if (b) {
			vm_touch(b, big);
			vm_hist_range(&h, b, big, NULL);
		}
		char hs[512];
		int pass = b && h.total > 0 && h.node[m] == h.total;
		printf("VMTAB bigslot node=%d mib=%llu pages=%ld nodes=%s result=%s\n", m,
		       (unsigned long long)(big / VM_MIB), h.total, b ? vm_hist_str(&h, hs, sizeof hs) : "NULL",
		       pass ? "ok" : "FAIL");
		CHECK(pass, "node %d: %llu MiB after the churn: %s", m, (unsigned long long)(big / VM_MIB),
		      b ? vm_hist_str(&h, hs, sizeof hs) : "NULL");
		nd_free(b);
	}
	nd_set_policy(NULL);
	return CHECK_DONE();
}
