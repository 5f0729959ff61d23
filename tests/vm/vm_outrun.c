// SPDX-License-Identifier: MIT
/*
 * VM test, a run outside the slot (src/outrun.c, docs/arenas.md "Runs
 * outside the slot"): re-executed with NODALLOC_ARENA_RESERVE=64M (slots
 * of 64 MiB, smaller than the nodes), per memory node m under the thread
 * policy bind:m, two blocks of 40 MiB, which the slot cannot both hold:
 * one is served outside the reservation (its address in no slot); both
 * touched whole, every page of both must be on m (move_pages); the
 * second freed, a third one is on m too.
 * Rows: VMTAB outrun ...
 */
#include "vm_common.h"

#include <unistd.h>

static const vm_topo_t *T = &vm_topo;

#define SLOT (64 * VM_MIB)
#define BLOCK (40 * VM_MIB)

static int on_node(unsigned char *b, size_t len, int m, char *hs, size_t hl)
{
	vm_hist_t h = VM_HIST_INIT;
	vm_touch(b, len);
	vm_hist_range(&h, b, len, NULL);
	vm_hist_str(&h, hs, hl);
	return h.total > 0 && h.node[m] == h.total;
}

int main(int argc, char **argv)
{
	if (!getenv("NODALLOC_ARENA_RESERVE")) {
		setenv("NODALLOC_ARENA_RESERVE", "64M", 1);
		execv("/proc/self/exe", argv);
		perror("vm_outrun: execv");
		return 2;
	}
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (!(VM_NEED(nd_malloc) & VM_NEED(nd_free) & VM_NEED(nd_set_policy) & VM_NEED(nd_policy_parse) &
	      VM_NEED(nd_node_of) & VM_NEED(nd_node_limit)))
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
		if (vm_zone_headroom(m, 1) < 3 * BLOCK) {
			printf("VMTAB outrun node=%d result=skip (headroom %llu MiB)\n", m,
			       (unsigned long long)(vm_zone_headroom(m, 1) / VM_MIB));
			continue;
		}
		/* the reservation: slots 0..node_limit (the mixed one last); a
		 * small block's slab is in slot m */
		unsigned char *o = nd_malloc(64);
		uintptr_t base = o ? ((uintptr_t)o & ~(uintptr_t)(SLOT - 1)) - (uintptr_t)m * SLOT : 0;
		uintptr_t end = base + (uintptr_t)(nd_node_limit() + 1) * SLOT;
		CHECK(o && nd_node_of(o) == m, "node %d: a small block on it", m);
		unsigned char *a = nd_malloc(BLOCK), *b = nd_malloc(BLOCK);
		/* one of them (the second, unless the slot's start held the first
		 * off its order) has no stretch in the 64 MiB slot */
		int out = a && b && ((uintptr_t)b < base || (uintptr_t)b >= end || (uintptr_t)a < base || (uintptr_t)a >= end);
		char ha[256] = "NULL", hb[256] = "NULL";
		int pa = a && on_node(a, BLOCK, m, ha, sizeof ha);
		int pb = b && on_node(b, BLOCK, m, hb, sizeof hb);
		int pass = pa && pb && out && nd_node_of(b) == m;
		printf("VMTAB outrun node=%d first=%s outside=%s second=%s result=%s\n", m, ha, out ? "yes" : "no", hb,
		       pass ? "ok" : "FAIL");
		CHECK(pa, "node %d: the first block: %s", m, ha);
		CHECK(out, "node %d: neither %p nor %p is outside the reservation [%#lx, %#lx)", m, (void *)a, (void *)b,
		      (unsigned long)base, (unsigned long)end);
		CHECK(pb, "node %d: the second block: %s", m, hb);
		nd_free(b);
		unsigned char *c = nd_malloc(BLOCK);
		char hc[256] = "NULL";
		CHECK(c && on_node(c, BLOCK, m, hc, sizeof hc), "node %d: after a free: %s", m, hc);
		nd_free(c);
		nd_free(a);
		nd_free(o);
	}
	nd_set_policy(NULL);
	return CHECK_DONE();
}
