// SPDX-License-Identifier: MIT
/*
 * VM test 5, strict binding on a full node. Target T: the last memory node
 * that is not CPU 0's memory node (small in every topology).
 *  - bind:T, allocate 1 MiB blocks past T's capacity: allocation must end
 *    with NULL + ENOMEM (not an OOM kill, not a hang), after using at least
 *    a quarter of T's free memory, and every page of every block is on T;
 *  - preferred:T, allocate T's whole size plus 64 MiB: every allocation
 *    succeeds, at least a quarter of T's free memory is used on T, and the
 *    rest spills to T's nearest memory nodes: the nodes nearest to T in
 *    distance order (a distance's nodes all together), as many as hold the
 *    spill with half of the free memory each had.
 * "A quarter", "half": the library may keep a margin free on every node
 * (nodalloc: the kernel's low watermark and lowmem reserve plus 4 MiB,
 * docs/arenas.md), which on the bed's small nodes is a large share.
 * Every page is checked with move_pages.
 */
#include "vm_common.h"

#define CHUNK (1 * VM_MIB)
#define MAXCHUNKS 4096

static const vm_topo_t *T = &vm_topo;

/* How a fill ended, one word (report rows are key=value, no spaces). */
static const char *end_str(int err, char *buf, size_t len)
{
	if (err == 0)
		return "no-failure";
	if (err == ENOMEM)
		return "ENOMEM";
	snprintf(buf, len, "errno-%d", err);
	return buf;
}

typedef struct fill {
	void **blk;
	long n;
	vm_hist_t h;
	int err; /* errno of the failed allocation, 0 if none failed */
} fill_t;

static void fill(fill_t *f, const nd_policy_t *p, long max_chunks)
{
	memset(f, 0, sizeof(*f));
	f->blk = vm_buf(MAXCHUNKS * sizeof(void *));
	while (f->n < max_chunks && f->n < MAXCHUNKS) {
		errno = 0;
		void *b = nd_malloc_policy(CHUNK, p);
		if (!b) {
			f->err = errno ? errno : -1;
			break;
		}
		vm_touch(b, CHUNK);
		vm_hist_range(&f->h, b, CHUNK, NULL);
		f->blk[f->n++] = b;
	}
}

static void unfill(fill_t *f)
{
	for (long i = 0; i < f->n; i++)
		nd_free(f->blk[i]);
	vm_unbuf(f->blk, MAXCHUNKS * sizeof(void *));
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (!(VM_NEED(nd_policy_parse) & VM_NEED(nd_malloc_policy) & VM_NEED(nd_free)))
		return CHECK_DONE();
	CHECK(vm_pin(0) == 0, "cannot pin to cpu 0");
	int M[VM_MAX_NODES], nm = vm_mem_nodes(T, M), tgt = vm_fill_target(T);
	if (tgt < 0) {
		printf("SKIP: no memory node besides cpu 0's\n");
		return 77;
	}
	uint64_t total = vm_node_meminfo(tgt, "MemTotal"), free0 = vm_node_meminfo(tgt, "MemFree");
	long cap_chunks = (long)((total + 64 * VM_MIB) / CHUNK);
	char pol[64], hs[512];
	nd_policy_t p;

	/* bind: fails cleanly, never elsewhere */
	snprintf(pol, sizeof(pol), "bind:%d", tgt);
	if (vm_policy(pol, &p) == 0) {
		fill_t f;
		fill(&f, &p, cap_chunks);
		long on = f.h.node[tgt];
		char eb[32];
		printf("VMTAB strict policy=%s node=%d mem_total_mib=%llu mem_free_mib=%llu blocks=%ld pages=%ld on_node=%ld nodes=%s end=%s\n",
		       pol, tgt, (unsigned long long)(total >> 20), (unsigned long long)(free0 >> 20), f.n, f.h.total, on,
		       vm_hist_str(&f.h, hs, sizeof(hs)), end_str(f.err, eb, sizeof(eb)));
		CHECK(f.err == ENOMEM, "%s: %ld MiB allocated past the node's %llu MiB without failing with ENOMEM (end: %s)",
		      pol, f.n, (unsigned long long)(total >> 20), f.err ? strerror(f.err) : "no failure");
		CHECK(on == f.h.total, "%s: %ld of %ld pages not on node %d: %s", pol, f.h.total - on, f.h.total, tgt, hs);
		CHECK((uint64_t)f.n * CHUNK >= free0 / 4, "%s: gave up after %ld MiB of %llu MiB free", pol, f.n,
		      (unsigned long long)(free0 >> 20));
		unfill(&f);
	}

	/* preferred: past the node, falls back to the nearest node(s) */
	snprintf(pol, sizeof(pol), "preferred:%d", tgt);
	uint64_t freeb[VM_MAX_NODES] = { 0 };
	for (int i = 0; i < nm; i++)
		freeb[M[i]] = vm_node_meminfo(M[i], "MemFree");
	if (vm_policy(pol, &p) == 0) {
		fill_t f;
		fill(&f, &p, cap_chunks);
		/* where the spill may go: T's nearest nodes by distance (equal
		 * distances together), as many as hold the actual spill with
		 * half of the free memory each had */
		long on = f.h.node[tgt], sp = 0;
		int spill[VM_MAX_NODES], nspill = 0, done[VM_MAX_NODES] = { 0 };
		uint64_t need = (uint64_t)(f.h.total - on) * VM_PAGE, room = 0;
		while (room < need) {
			int best = 1 << 30;
			for (int i = 0; i < nm; i++)
				if (M[i] != tgt && !done[M[i]] && T->dist[tgt][M[i]] < best)
					best = T->dist[tgt][M[i]];
			if (best == 1 << 30)
				break;
			for (int i = 0; i < nm; i++)
				if (M[i] != tgt && !done[M[i]] && T->dist[tgt][M[i]] == best) {
					done[M[i]] = 1;
					spill[nspill++] = M[i];
					room += freeb[M[i]] / 2;
				}
		}
		for (int i = 0; i < nspill; i++)
			sp += f.h.node[spill[i]];
		char ss[128], eb[32];
		size_t o = 0;
		ss[0] = 0;
		for (int i = 0; i < nspill; i++)
			o += snprintf(ss + o, sizeof(ss) - o, "%s%d", i ? "," : "", spill[i]);
		printf("VMTAB strict policy=%s node=%d mem_total_mib=%llu blocks=%ld pages=%ld on_node=%ld on_fallback=%ld fallback=%s nodes=%s end=%s\n",
		       pol, tgt, (unsigned long long)(total >> 20), f.n, f.h.total, on, sp, ss,
		       vm_hist_str(&f.h, hs, sizeof(hs)), end_str(f.err, eb, sizeof(eb)));
		CHECK(f.n == cap_chunks, "%s: allocation %ld of %ld failed (%s)", pol, f.n + 1, cap_chunks,
		      f.err ? strerror(f.err) : "?");
		CHECK(on + sp == f.h.total, "%s: %ld pages neither on %d nor on its nearest nodes {%s}: %s", pol,
		      f.h.total - on - sp, tgt, ss, hs);
		CHECK((uint64_t)on * VM_PAGE >= free0 / 4, "%s: only %ld pages on node %d (%llu MiB were free)", pol, on, tgt,
		      (unsigned long long)(free0 >> 20));
		CHECK(sp > 0, "%s: %ld MiB past a %llu MiB node and nothing fell back", pol, f.n,
		      (unsigned long long)(total >> 20));
		unfill(&f);
	}
	return CHECK_DONE();
}
