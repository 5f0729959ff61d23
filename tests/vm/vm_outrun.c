// SPDX-License-Identifier: MIT
/*
 * VM test, a run outside the slot (src/outrun.c, docs/arenas.md "Runs
 * outside the slot"): re-executed with NODALLOC_ARENA_RESERVE=64M (slots
 * of 64 MiB, smaller than the nodes), per memory node m under the thread
 * policy bind:m, two blocks of 40 MiB, which the slot cannot both hold:
 * one is served outside the reservation (its address in no slot), its
 * kernel policy MPOL_BIND to m; both touched whole, every page of both
 * must be on m (move_pages); the one outside grown by realloc to 48 MiB
 * (in place or moved with its pages: outrun.c) stays outside, keeps its
 * contents, its added part has the same policy and every page is on m;
 * it is freed, a third block is on m too.
 * Then once more, in a child run with NODALLOC_STRICT=0, on the last
 * memory node only (short under TCG): the same, with MPOL_PREFERRED.
 * Rows: VMTAB outrun ...
 */
#include "vm_common.h"

#include <sys/wait.h>
#include <unistd.h>

#pragma weak nd_realloc

static const vm_topo_t *T = &vm_topo;

#define SLOT (64 * VM_MIB)
#define BLOCK (40 * VM_MIB)
#define GROWN (48 * VM_MIB)
#define MPOL_PREFERRED_ 1
#define MPOL_BIND_ 2
#define MPOL_F_ADDR_ 2

static int on_node(unsigned char *b, size_t len, int m, char *hs, size_t hl)
{
	vm_hist_t h = VM_HIST_INIT;
	vm_touch(b, len);
	vm_hist_range(&h, b, len, NULL);
	vm_hist_str(&h, hs, hl);
	return h.total > 0 && h.node[m] == h.total;
}

/* The kernel's policy of the page at p is mode, on node m alone. */
static int policy_is(const void *p, int mode, int m)
{
	unsigned long mask[VM_MAX_NODES / 64 + 1] = { 0 };
	int got = -1;
	if (syscall(SYS_get_mempolicy, &got, mask, (unsigned long)VM_MAX_NODES + 1, p, MPOL_F_ADDR_) != 0)
		return 0;
	int only = mask[m / 64] == 1ul << (m % 64);
	for (int k = 0; k <= VM_MAX_NODES / 64; k++)
		only &= k == m / 64 || mask[k] == 0;
	return got == mode && only;
}

static void one_node(int m, int strict)
{
	const char *sv = strict ? "1" : "0";
	int mode = strict ? MPOL_BIND_ : MPOL_PREFERRED_;
	nd_policy_t pol;
	char s[32];
	snprintf(s, sizeof s, "bind:%d", m);
	if (vm_policy(s, &pol) != 0 || nd_set_policy(&pol) != 0) {
		CHECK(0, "cannot set %s", s);
		return;
	}
	if (vm_zone_headroom(m, 1) < 3 * BLOCK) {
		printf("VMTAB outrun node=%d strict=%s result=skip (headroom %llu MiB)\n", m, sv,
		       (unsigned long long)(vm_zone_headroom(m, 1) / VM_MIB));
		return;
	}
	/* the reservation: slots 0..node_limit (the mixed one last); a
	 * small block's slab is in slot m */
	unsigned char *o = nd_malloc(64);
	uintptr_t base = o ? ((uintptr_t)o & ~(uintptr_t)(SLOT - 1)) - (uintptr_t)m * SLOT : 0;
	uintptr_t end = base + (uintptr_t)(nd_node_limit() + 1) * SLOT;
#define OUTSIDE(x) ((uintptr_t)(x) < base || (uintptr_t)(x) >= end)
	CHECK(o && nd_node_of(o) == m, "node %d: a small block on it", m);
	unsigned char *a = nd_malloc(BLOCK), *b = nd_malloc(BLOCK);
	/* one of them (the second, unless the slot's start held the first
	 * off its order) has no stretch in the 64 MiB slot */
	int out = a && b && (OUTSIDE(a) || OUTSIDE(b));
	unsigned char *x = out && OUTSIDE(b) ? b : a, *in = x == b ? a : b;
	char ha[256] = "NULL", hb[256] = "NULL", hg[256] = "NULL";
	int pa = a && on_node(a, BLOCK, m, ha, sizeof ha);
	int pb = b && on_node(b, BLOCK, m, hb, sizeof hb);
	int px = out && policy_is(x, mode, m);
	/* grown: in place or moved, still outside, its contents kept, the
	 * added part bound as the rest */
	unsigned char *g = out ? nd_realloc(x, GROWN) : NULL;
	int kept = g != NULL && OUTSIDE(g);
	for (size_t off = 0; kept && off < BLOCK - VM_PAGE; off += VM_PAGE)
		kept = g[off] == (unsigned char)(off >> 12);
	int pg = g && policy_is(g + GROWN - 1, mode, m) && on_node(g, GROWN, m, hg, sizeof hg);
	int pass = pa && pb && out && px && kept && pg && nd_node_of(g) == m;
	printf("VMTAB outrun node=%d strict=%s first=%s outside=%s second=%s grown=%s(%s) result=%s\n", m, sv, ha,
	       out ? "yes" : "no", hb, hg, !g ? "-" : g == x ? "in-place" : "moved", pass ? "ok" : "FAIL");
	CHECK(pa, "node %d: the first block: %s", m, ha);
	CHECK(out, "node %d: neither %p nor %p is outside the reservation [%#lx, %#lx)", m, (void *)a, (void *)b,
	      (unsigned long)base, (unsigned long)end);
	CHECK(pb, "node %d: the second block: %s", m, hb);
	CHECK(!out || px, "node %d: the block outside: not the policy %d on node %d alone", m, mode, m);
	CHECK(!out || kept, "node %d: realloc to %lu MiB: %p, outside and its contents kept", m, GROWN / VM_MIB,
	      (void *)g);
	CHECK(!out || pg, "node %d: the grown block: %s (or its added part's policy not %d)", m, hg, mode);
	if (out)
		nd_free(g ? g : x);
	unsigned char *c = nd_malloc(BLOCK);
	char hc[256] = "NULL";
	CHECK(c && on_node(c, BLOCK, m, hc, sizeof hc), "node %d: after a free: %s", m, hc);
	nd_free(c);
	nd_free(out ? in : b);
	if (!out)
		nd_free(a);
	nd_free(o);
#undef OUTSIDE
}

int main(int argc, char **argv)
{
	if (!getenv("NODALLOC_ARENA_RESERVE")) {
		setenv("NODALLOC_ARENA_RESERVE", "64M", 1);
		execv("/proc/self/exe", argv);
		perror("vm_outrun: execv");
		return 2;
	}
	/* the child of the preferred pass has NODALLOC_STRICT=0 */
	int strict = !getenv("NODALLOC_STRICT");
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (!(VM_NEED(nd_malloc) & VM_NEED(nd_free) & VM_NEED(nd_realloc) & VM_NEED(nd_set_policy) &
	      VM_NEED(nd_policy_parse) & VM_NEED(nd_node_of) & VM_NEED(nd_node_limit)))
		return CHECK_DONE();
	CHECK(vm_pin(0) == 0, "cannot pin to cpu 0");
	int M[VM_MAX_NODES], nm = vm_mem_nodes(T, M);
	if (strict) {
		for (int i = 0; i < nm; i++)
			one_node(M[i], 1);
	} else if (nm > 0) {
		one_node(M[nm - 1], 0);
	}
	nd_set_policy(NULL);
	if (strict) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			setenv("NODALLOC_STRICT", "0", 1);
			execv("/proc/self/exe", argv);
			perror("vm_outrun: execv");
			_exit(2);
		}
		int st = 0;
		CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "the pass with NODALLOC_STRICT=0: status %#x", st);
	}
	return CHECK_DONE();
}
