// SPDX-License-Identifier: MIT
/*
 * VM test 4, memory policies, checked page by page with move_pages:
 *  - per call (nd_malloc_policy) and per thread (nd_set_policy):
 *    bind:X, preferred:X -> every page on X; preferred-many:P and bind:P ->
 *    every page on P's node nearest to the CPU; the thread policy reset
 *    gives local memory again;
 *  - interleave:I@2^k pages, k = 0, 3, 9, per call (nd_malloc_policy and
 *    nd_malloc_interleaved): every granule of 2^k pages on one node, the
 *    nodes of I in round-robin order, each node's pages in virtual runs of
 *    exactly 2^k pages (the first and last may be cut by the start phase);
 *  - weighted:A=3,B=1@64K: a node gets `weight` consecutive granules per
 *    round (interior runs of 3 and 1 granules);
 *  - thread interleave over many allocations: pages only on I, balanced.
 * It also reports the mean physically contiguous run length from
 * /proc/self/pagemap for k = 0, 3, 9, next to the kernel's own
 * MPOL_INTERLEAVE (per page) and a single-node mapping; at k = 9, with THP
 * on, it must be at least 256 pages (2 MiB granules are huge pages).
 */
#include "vm_common.h"

static const vm_topo_t *T = &vm_topo;
static int cpu_node0, mem0; /* the test runs on CPU 0 */

/* Nodes of set at the smallest distance from `from` (ties all count). */
static int nearest_of(const int *set, int n, int from, int *out)
{
	int best = 1 << 30, k = 0;
	for (int i = 0; i < n; i++)
		if (T->dist[from][set[i]] < best)
			best = T->dist[from][set[i]];
	for (int i = 0; i < n; i++)
		if (T->dist[from][set[i]] == best)
			out[k++] = set[i];
	return k;
}

static const char *set_str(const int *set, int n, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (int i = 0; i < n && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%d", i ? "," : "", set[i]);
	return buf;
}

/* Every page of h on a node of ok[0..nok). */
static void expect_on(const char *name, const vm_hist_t *h, const int *ok, int nok)
{
	char hs[512], ss[256];
	long good = 0;
	for (int i = 0; i < nok; i++)
		good += h->node[ok[i]];
	int pass = h->total > 0 && good == h->total;
	printf("VMTAB policy case=%s pages=%ld nodes=%s expect=%s result=%s\n", name, h->total,
	       vm_hist_str(h, hs, sizeof(hs)), set_str(ok, nok, ss, sizeof(ss)), pass ? "ok" : "FAIL");
	CHECK(pass, "%s: pages per node %s, all expected on {%s}", name, hs, ss);
}

/* One large allocation under a policy string, per call. */
static void per_call(const char *pol, size_t size, const int *ok, int nok)
{
	nd_policy_t p;
	char name[128];
	snprintf(name, sizeof(name), "call:%s", pol);
	if (vm_policy(pol, &p) != 0)
		return;
	void *b = nd_malloc_policy(size, &p);
	CHECK(b != NULL, "%s: nd_malloc_policy(%zu) failed: %s", name, size, strerror(errno));
	if (!b)
		return;
	vm_touch(b, size);
	vm_hist_t h = VM_HIST_INIT;
	vm_hist_range(&h, b, size, NULL);
	expect_on(name, &h, ok, nok);
	nd_free(b);
}

/* Thread policy: small objects (nd_malloc and malloc) and large blocks. */
static void per_thread(const char *pol, const int *ok, int nok)
{
	nd_policy_t p;
	char name[128];
	snprintf(name, sizeof(name), "thread:%s", pol);
	if (vm_policy(pol, &p) != 0)
		return;
	CHECK(nd_set_policy(&p) == 0, "nd_set_policy(%s) failed", pol);
	enum { N = 2048, SZ = 64, NL = 2, LSZ = 4 << 20 };
	void **o = vm_buf(2 * N * sizeof(void *));
	void *l[NL];
	for (int i = 0; i < 2 * N; i++) {
		o[i] = i < N ? nd_malloc(SZ) : malloc(SZ);
		if (o[i])
			memset(o[i], 1, SZ);
	}
	for (int i = 0; i < NL; i++) {
		l[i] = nd_malloc(LSZ);
		if (l[i])
			vm_touch(l[i], LSZ);
	}
	vm_hist_t h = VM_HIST_INIT;
	vm_hist_objs(&h, o, 2 * N, SZ);
	for (int i = 0; i < NL; i++)
		vm_hist_range(&h, l[i], l[i] ? LSZ : 0, NULL);
	expect_on(name, &h, ok, nok);
	CHECK(nd_set_policy(NULL) == 0, "nd_set_policy(NULL) failed");
	/* back to local */
	void *b = nd_malloc(LSZ);
	if (b) {
		vm_touch(b, LSZ);
		vm_hist_t hb = VM_HIST_INIT;
		vm_hist_range(&hb, b, LSZ, NULL);
		snprintf(name, sizeof(name), "thread:%s:reset-to-local", pol);
		expect_on(name, &hb, &mem0, 1);
		nd_free(b);
	}
	for (int i = 0; i < 2 * N; i++)
		if (o[i])
			i < N ? nd_free(o[i]) : free(o[i]);
	for (int i = 0; i < NL; i++)
		if (l[i])
			nd_free(l[i]);
	vm_unbuf(o, 2 * N * sizeof(void *));
}

/*
 * Runs of same-node pages in st[0..n): each run's length must be
 * runlen[node] pages (first and last at most that), consecutive runs must
 * follow order[] cyclically, and only nodes of order[] may appear.
 */
static int check_runs(const char *name, const int *st, size_t n, const int *order, int norder, const long *runlen)
{
	long runs = 0, bad_len = 0, bad_seq = 0, bad_node = 0;
	size_t i = 0;
	int prev = -1;
	while (i < n) {
		size_t j = i;
		while (j < n && st[j] == st[i])
			j++;
		int node = st[i];
		long len = (long)(j - i);
		int idx = -1;
		for (int k = 0; k < norder; k++)
			if (order[k] == node)
				idx = k;
		if (idx < 0) {
			bad_node += len;
		} else {
			int edge = i == 0 || j == n;
			if (edge ? len > runlen[node] : len != runlen[node])
				bad_len++;
			if (prev >= 0 && order[(prev + 1) % norder] != node)
				bad_seq++;
			prev = idx;
		}
		runs++;
		i = j;
	}
	CHECK(bad_node == 0, "%s: %ld pages on nodes outside the set", name, bad_node);
	CHECK(bad_len == 0, "%s: %ld of %ld runs have the wrong length", name, bad_len, runs);
	CHECK(bad_seq == 0, "%s: %ld node changes out of round-robin order", name, bad_seq);
	return bad_node == 0 && bad_len == 0 && bad_seq == 0;
}

/* Mean physically contiguous run over npages pages from p (pagemap),
 * printed and returned (0 when pagemap cannot be read). */
static double contiguity(const char *source, int k, const void *p, size_t npages)
{
	uint64_t *pfn = vm_buf(npages * sizeof(uint64_t));
	if (vm_pfns(p, npages, pfn) != 0) {
		CHECK(0, "cannot read /proc/self/pagemap");
		vm_unbuf(pfn, npages * sizeof(uint64_t));
		return 0;
	}
	long present = 0, runs = 0, run = 0, max = 0;
	for (size_t i = 0; i < npages; i++) {
		if (!pfn[i]) {
			run = 0;
			continue;
		}
		present++;
		if (i > 0 && pfn[i - 1] && pfn[i] == pfn[i - 1] + 1) {
			run++;
		} else {
			runs++;
			run = 1;
		}
		if (run > max)
			max = run;
	}
	CHECK(present > 0, "%s k=%d: pagemap shows no frame numbers (not root?)", source, k);
	/* how many pages are parts of transparent huge pages (KPF_THP, bit
	 * 22 of /proc/kpageflags): explains runs of 512 */
	long thp = 0;
	int kf = open("/proc/kpageflags", O_RDONLY);
	for (size_t i = 0; kf >= 0 && i < npages; i++) {
		uint64_t fl = 0;
		if (pfn[i] && pread(kf, &fl, 8, (off_t)(pfn[i] * 8)) == 8 && (fl >> 22 & 1))
			thp++;
	}
	if (kf >= 0)
		close(kf);
	printf("VMTAB contig source=%s k=%d gran_pages=%d pages=%ld runs=%ld mean_run=%.1f max_run=%ld thp_pages=%ld\n",
	       source, k, k >= 0 ? 1 << k : 0, present, runs, runs ? (double)present / (double)runs : 0.0, max, thp);
	vm_unbuf(pfn, npages * sizeof(uint64_t));
	return runs ? (double)present / (double)runs : 0.0;
}

/* Whether 2 MiB granules should be huge pages: THP "always", or "madvise"
 * while nodalloc advises them (option huge_spread, on by default). */
static int thp_expected(void)
{
	char thp[128];
	const char *e = vm_read_str("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp));
	const char *hs = getenv("NODALLOC_HUGE_SPREAD");
	int advised = !hs || !(hs[0] == '0' || hs[0] == 'n' || hs[0] == 'N' || hs[0] == 'f' || hs[0] == 'F');
	return strstr(e, "[always]") || (strstr(e, "[madvise]") && advised);
}

static void interleave_cases(const int *I, int ni)
{
	static const int ks[] = { 0, 3, 9 };
	static const char *const gs[] = { "4K", "32K", "2M" };
	char ss[128];
	set_str(I, ni, ss, sizeof(ss));
	for (int x = 0; x < 3; x++) {
		int k = ks[x];
		size_t size = (size_t)2 * ni * (2 * VM_MIB), npages = size / VM_PAGE;
		long runlen[VM_MAX_NODES];
		for (int n = 0; n < VM_MAX_NODES; n++)
			runlen[n] = 1L << k;
		for (int api = 0; api < 2; api++) {
			char pol[256], name[320];
			snprintf(pol, sizeof(pol), "interleave:%s@%s", ss, gs[x]);
			void *b = NULL;
			if (api == 0) {
				nd_policy_t p;
				if (vm_policy(pol, &p) != 0)
					continue;
				b = nd_malloc_policy(size, &p);
				snprintf(name, sizeof(name), "call:%s", pol);
			} else {
				nd_nodemask_t m;
				nd_nodemask_zero(&m);
				for (int i = 0; i < ni; i++)
					nd_nodemask_set(&m, I[i]);
				b = nd_malloc_interleaved(size, &m, (size_t)VM_PAGE << k);
				snprintf(name, sizeof(name), "nd_malloc_interleaved:%s@%s", ss, gs[x]);
			}
			CHECK(b != NULL, "%s: allocation of %zu failed", name, size);
			if (!b)
				continue;
			CHECK(((uintptr_t)b & (VM_PAGE - 1)) == 0, "%s: %p is not page aligned", name, b);
			vm_touch(b, size);
			int *st = vm_buf(npages * sizeof(int) + VM_PAGE);
			vm_hist_t h = VM_HIST_INIT;
			vm_hist_range(&h, b, size, st);
			int ok = check_runs(name, st, npages, I, ni, runlen);
			char hs[512];
			printf("VMTAB policy case=%s pages=%ld nodes=%s expect=runs-of-%d-pages-round-robin result=%s\n", name,
			       h.total, vm_hist_str(&h, hs, sizeof(hs)), 1 << k, ok ? "ok" : "FAIL");
			if (api == 0) {
				double mean = contiguity("nodalloc-interleave", k, b, npages);
				/* 2 MiB granules, 2 MiB aligned: each a transparent
				 * huge page, as the kernel's own interleave gets
				 * (half of 512 leaves room for a failed huge page
				 * allocation in a fragmented guest) */
				if (k == 9 && thp_expected())
					CHECK(mean >= 256, "%s: mean physically contiguous run %.1f pages, expected >= 256 "
					      "(huge pages)", name, mean);
			}
			vm_unbuf(st, npages * sizeof(int) + VM_PAGE);
			nd_free(b);
		}
	}
}

static void weighted_case(int a, int b)
{
	char pol[128], name[160];
	snprintf(pol, sizeof(pol), "weighted:%d=3,%d=1@64K", a, b);
	snprintf(name, sizeof(name), "call:%s", pol);
	nd_policy_t p;
	if (vm_policy(pol, &p) != 0)
		return;
	size_t size = 8 * 4 * 64 * 1024, npages = size / VM_PAGE; /* 8 rounds of 4 granules */
	void *m = nd_malloc_policy(size, &p);
	CHECK(m != NULL, "%s: allocation failed", name);
	if (!m)
		return;
	vm_touch(m, size);
	int *st = vm_buf(npages * sizeof(int));
	vm_hist_t h = VM_HIST_INIT;
	vm_hist_range(&h, m, size, st);
	long runlen[VM_MAX_NODES] = { 0 };
	runlen[a] = 3 * 16;
	runlen[b] = 1 * 16;
	int order[2] = { a, b };
	int ok = check_runs(name, st, npages, order, 2, runlen);
	/* 8 full rounds: 3/4 and 1/4 of the pages whatever the phase (one
	 * granule of slack for a grid not aligned to the allocation) */
	long ea = (long)npages * 3 / 4;
	CHECK(labs(h.node[a] - ea) <= 16 && labs(h.node[b] - ((long)npages - ea)) <= 16,
	      "%s: node %d has %ld pages, node %d %ld; expected %ld and %ld", name, a, h.node[a], b, h.node[b], ea,
	      (long)npages - ea);
	char hs[256];
	printf("VMTAB policy case=%s pages=%ld nodes=%s expect=3:1-granules-of-16-pages result=%s\n", name, h.total,
	       vm_hist_str(&h, hs, sizeof(hs)), ok ? "ok" : "FAIL");
	vm_unbuf(st, npages * sizeof(int));
	nd_free(m);
}

/* Thread interleave over many unrelated allocations: only nodes of I,
 * each within half to one and a half of its fair share. */
static void thread_interleave(const int *I, int ni)
{
	char pol[128], ss[128];
	snprintf(pol, sizeof(pol), "interleave:%s", set_str(I, ni, ss, sizeof(ss)));
	nd_policy_t p;
	if (vm_policy(pol, &p) != 0)
		return;
	CHECK(nd_set_policy(&p) == 0, "nd_set_policy(%s)", pol);
	enum { N = 48, SZ = 64 << 10 };
	void *b[N];
	vm_hist_t h = VM_HIST_INIT;
	for (int i = 0; i < N; i++) {
		b[i] = nd_malloc(SZ);
		if (b[i])
			vm_touch(b[i], SZ);
	}
	for (int i = 0; i < N; i++)
		vm_hist_range(&h, b[i], b[i] ? SZ : 0, NULL);
	char name[160], hs[512], ss2[128];
	snprintf(name, sizeof(name), "thread:%s", pol);
	long good = 0;
	for (int i = 0; i < ni; i++)
		good += h.node[I[i]];
	int pass = h.total > 0 && good == h.total;
	CHECK(pass, "%s: pages per node %s, all expected on {%s}", name, vm_hist_str(&h, hs, sizeof(hs)), ss);
	for (int i = 0; i < ni; i++) {
		double share = h.total ? (double)h.node[I[i]] / (double)h.total : 0;
		int fair = share >= 0.5 / ni && share <= 1.5 / ni;
		CHECK(fair, "%s: node %d has %.0f%% of the pages", name, I[i], 100 * share);
		pass &= fair;
	}
	printf("VMTAB policy case=%s pages=%ld nodes=%s expect=%s-balanced result=%s\n", name, h.total,
	       vm_hist_str(&h, hs, sizeof(hs)), set_str(I, ni, ss2, sizeof(ss2)), pass ? "ok" : "FAIL");
	nd_set_policy(NULL);
	for (int i = 0; i < N; i++)
		if (b[i])
			nd_free(b[i]);
}

/* The kernel's own placement, for comparison in the report: interleave per
 * page (THP off), interleave with THP (the kernel interleaves huge pages),
 * one node with THP, one node without (the 4 KiB fault path's own
 * contiguity: the ceiling for granules not backed by huge pages). */
static void kernel_baselines(const int *I, int ni)
{
	static const struct {
		const char *name;
		int interleave, thp, k;
	} v[] = {
		{ "kernel-interleave-4K", 1, 0, 0 },
		{ "kernel-interleave-thp", 1, 1, 9 },
		{ "kernel-one-node-thp", 0, 1, -1 },
		{ "kernel-one-node-4K", 0, 0, -1 },
	};
	size_t size = (size_t)2 * ni * (2 * VM_MIB), npages = size / VM_PAGE;
	unsigned long mask[VM_MAX_NODES / 64] = { 0 }, one[VM_MAX_NODES / 64] = { 0 };
	for (int i = 0; i < ni; i++)
		mask[I[i] / 64] |= 1UL << (I[i] % 64);
	one[I[0] / 64] |= 1UL << (I[0] % 64);
	for (size_t x = 0; x < sizeof(v) / sizeof(v[0]); x++) {
		/* 2 MiB aligned so THP can apply where allowed */
		char *raw = mmap(NULL, size + 2 * VM_MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw == MAP_FAILED)
			continue;
		char *p = (char *)(((uintptr_t)raw + 2 * VM_MIB - 1) & ~(2 * VM_MIB - 1));
		if (!v[x].thp)
			madvise(p, size, MADV_NOHUGEPAGE);
		long r = syscall(SYS_mbind, p, size, v[x].interleave ? 3 /* MPOL_INTERLEAVE */ : 2 /* MPOL_BIND */,
				 v[x].interleave ? mask : one, (unsigned long)VM_MAX_NODES + 1, 0);
		CHECK(r == 0, "mbind: %s", strerror(errno));
		vm_touch(p, size);
		contiguity(v[x].name, v[x].k, p, npages);
		munmap(raw, size + 2 * VM_MIB);
	}
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (!(VM_NEED(nd_policy_parse) & VM_NEED(nd_set_policy) & VM_NEED(nd_malloc_policy) & VM_NEED(nd_malloc) &
	      VM_NEED(nd_free) & VM_NEED(nd_malloc_interleaved) & VM_NEED(nd_nodemask_zero) & VM_NEED(nd_nodemask_set)))
		return CHECK_DONE();
	CHECK(vm_pin(0) == 0, "cannot pin to cpu 0");
	cpu_node0 = T->cpu_node[0];
	mem0 = vm_expected_mem_node(T, cpu_node0);
	int M[VM_MAX_NODES], nm = vm_mem_nodes(T, M);
	if (nm < 2) {
		printf("SKIP: fewer than two memory nodes\n");
		return 77;
	}
	char thp[128];
	printf("VMTAB policy-setup cpu=0 node=%d mem_node=%d thp=%s\n", cpu_node0, mem0,
	       vm_read_str("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp)));

	/* X: a memory node other than CPU 0's; P: two memory nodes, the
	 * farthest ids other than CPU 0's node when there are three or more. */
	int X = M[nm - 1] != mem0 ? M[nm - 1] : M[0];
	int P[2], np = 0;
	for (int i = nm - 1; i >= 0 && np < 2; i--)
		if (nm < 3 || M[i] != mem0)
			P[np++] = M[i];
	int near[VM_MAX_NODES], nnear = nearest_of(P, np, cpu_node0, near);
	char pol[128], ps[64];
	set_str(P, np, ps, sizeof(ps));

	snprintf(pol, sizeof(pol), "bind:%d", X);
	per_call(pol, 4 * VM_MIB, &X, 1);
	per_thread(pol, &X, 1);
	snprintf(pol, sizeof(pol), "preferred:%d", X);
	per_call(pol, 4 * VM_MIB, &X, 1);
	per_thread(pol, &X, 1);
	snprintf(pol, sizeof(pol), "preferred-many:%s", ps);
	per_call(pol, 4 * VM_MIB, near, nnear);
	per_thread(pol, near, nnear);
	snprintf(pol, sizeof(pol), "bind:%s", ps);
	per_call(pol, 4 * VM_MIB, near, nnear);

	int I[3], ni = nm < 3 ? nm : 3;
	for (int i = 0; i < ni; i++)
		I[i] = M[i];
	interleave_cases(I, ni);
	weighted_case(M[0], M[1]);
	thread_interleave(I, ni);
	kernel_baselines(I, ni);
	return CHECK_DONE();
}
