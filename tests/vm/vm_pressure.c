// SPDX-License-Identifier: MIT
/*
 * VM test: filling a node to exhaustion (issue 16). The kernel OOM-kills a
 * process whose page fault in an MPOL_BIND range finds the node at its min
 * watermark; nodalloc must see the node as full first (its headroom
 * follows /proc/zoneinfo, docs/arenas.md) and then fall back (local,
 * preferred) or fail with ENOMEM (bind).
 *
 * Every fill runs in a child process (this binary re-executed with
 * "fill ..."), so an OOM kill shows as a child killed by SIGKILL, and each
 * fill starts from a fresh heap. A fill: T threads pinned to one CPU, the
 * thread policy set (malloc, as NODALLOC_POLICY would), blocks of B bytes
 * written whole, until LIMIT MiB are allocated or malloc returns NULL.
 * Each block's pages are looked up with move_pages; the child checks:
 *  - bind:N   every thread ends with NULL + ENOMEM, every page on N, and N
 *             gave at least what the kernel had above its high watermark at
 *             the start minus a slack (nodalloc did not give up early);
 *  - preferred:N and local (the CPU's node N): every allocation succeeds,
 *             N gave as much as for bind, and the nodes in the order the
 *             fill first used them follow N's fallback list.
 * The parent runs the matrix {local, preferred, bind} x {256 B, 64 KiB} x
 * {1, 2 threads} on the two-node machine, then {256 B x 2 threads,
 * 64 KiB x 1 thread} with vm.min_free_kbytes doubled; other topologies run
 * the 64 KiB single-thread fills. To keep TCG time reasonable, the parent
 * first takes most of the nodes under test itself (a bound, touched
 * mapping: memory used by another process, as on a busy machine), leaving
 * about 48 MiB above the high watermark. Rows: VMTAB pressure ...
 */
#include "vm_common.h"

#include <stdbool.h>
#include <sys/wait.h>

static const vm_topo_t *T = &vm_topo;

/* What the kernel has above the high watermark on node (vm_common.h; the
 * boost counts as taken: a zone boosted when the fill starts makes the
 * library start it on the next node, and "raised preferred:1" once
 * started on node 0 so on a loaded host). Bytes. */
static uint64_t zone_room(int node)
{
	return vm_zone_headroom(node, 1);
}

/* Free pages on the CPUs' page lists of node's zones (zoneinfo "count:"):
 * not in MemFree, yet the kernel hands them out first (a fill reaches
 * them). Bytes. */
static uint64_t zone_pcp(int node)
{
	FILE *f = fopen("/proc/zoneinfo", "r");
	if (!f)
		return 0;
	char line[512];
	int cur = -1, nd;
	char zn[32];
	unsigned long long v;
	uint64_t pcp = 0;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "Node %d, zone %31s", &nd, zn) == 2)
			cur = nd;
		else if (cur == node && sscanf(line, " count: %llu", &v) == 1)
			pcp += v * VM_PAGE;
	}
	fclose(f);
	return pcp;
}

/* ---- the child: one fill ------------------------------------------------ */

typedef struct filler {
	nd_policy_t pol;
	bool local;
	int cpu;
	size_t bs;
	uint64_t limit;      /* bytes for this thread */
	/* results */
	uint64_t got;        /* bytes allocated */
	int err;             /* errno of the NULL, 0 if the limit was reached */
	long pages[VM_MAX_NODES]; /* pages first seen on each node */
	long other;
	long first_seq[VM_MAX_NODES]; /* global sequence of the first block on a node */
} filler_t;

static long seq_now; /* blocks allocated by all threads, for first-use order */

static void *fill_thread(void *arg)
{
	filler_t *f = arg;
	CHECK(vm_pin(f->cpu) == 0, "cannot pin to cpu %d", f->cpu);
	if (!f->local)
		CHECK(nd_set_policy(&f->pol) == 0, "nd_set_policy");
	for (int n = 0; n < VM_MAX_NODES; n++)
		f->first_seq[n] = -1;
	uintptr_t last_page = 0;
	int last_node = -1;
	while (f->got < f->limit) {
		errno = 0;
		char *b = malloc(f->bs);
		if (!b) {
			f->err = errno ? errno : -1;
			break;
		}
		memset(b, 0x5A, f->bs);
		long seq = __atomic_fetch_add(&seq_now, 1, __ATOMIC_RELAXED);
		/* pages of the block not seen yet (small objects share a page) */
		for (uintptr_t p = (uintptr_t)b & ~(VM_PAGE - 1); p < (uintptr_t)b + f->bs; p += VM_PAGE) {
			if (p == last_page)
				continue;
			void *pg = (void *)p;
			int st = -1;
			if (vm_pages_status(&pg, 1, &st) != 0)
				st = -1;
			last_page = p;
			last_node = st;
			if (st >= 0 && st < VM_MAX_NODES) {
				f->pages[st]++;
				if (f->first_seq[st] < 0)
					f->first_seq[st] = seq;
			} else {
				f->other++;
			}
		}
		(void)last_node;
		f->got += f->bs;
	}
	return NULL;
}

/* fill POLICY CPU BLOCK THREADS LIMIT_MIB TAG */
static int child(char **argv)
{
	const char *pol = argv[0];
	int cpu = atoi(argv[1]), nthr = atoi(argv[3]);
	size_t bs = strtoul(argv[2], NULL, 10);
	uint64_t limit = strtoull(argv[4], NULL, 10) * VM_MIB;
	const char *tag = argv[5];
	bool local = strcmp(pol, "local") == 0, bind = strncmp(pol, "bind:", 5) == 0;
	int node = local ? vm_expected_mem_node(T, T->cpu_node[cpu]) : atoi(strchr(pol, ':') + 1);
	uint64_t room0 = zone_room(node);
	filler_t *fl = vm_buf(sizeof(filler_t) * 2);
	pthread_t th[2];
	for (int i = 0; i < nthr; i++) {
		fl[i].local = local;
		if (!local && vm_policy(pol, &fl[i].pol) != 0)
			return 1;
		fl[i].cpu = cpu;
		fl[i].bs = bs;
		fl[i].limit = limit / (uint64_t)nthr;
		CHECK(pthread_create(&th[i], NULL, fill_thread, &fl[i]) == 0, "pthread_create");
	}
	for (int i = 0; i < nthr; i++)
		pthread_join(th[i], NULL);

	/* merge the threads */
	long pages[VM_MAX_NODES] = { 0 }, first[VM_MAX_NODES], other = 0;
	uint64_t got = 0;
	int ends_enomem = 0, ends_other = 0;
	for (int n = 0; n < VM_MAX_NODES; n++)
		first[n] = -1;
	for (int i = 0; i < nthr; i++) {
		got += fl[i].got;
		other += fl[i].other;
		ends_enomem += fl[i].err == ENOMEM;
		ends_other += fl[i].err != 0 && fl[i].err != ENOMEM;
		for (int n = 0; n < VM_MAX_NODES; n++) {
			pages[n] += fl[i].pages[n];
			if (fl[i].first_seq[n] >= 0 && (first[n] < 0 || fl[i].first_seq[n] < first[n]))
				first[n] = fl[i].first_seq[n];
		}
	}
	/* nodes in first-use order */
	int order[VM_MAX_NODES], no = 0;
	for (;;) {
		int best = -1;
		for (int n = 0; n < VM_MAX_NODES; n++) {
			bool taken = false;
			for (int k = 0; k < no; k++)
				taken |= order[k] == n;
			if (!taken && first[n] >= 0 && (best < 0 || first[n] < first[best]))
				best = n;
		}
		if (best < 0)
			break;
		order[no++] = best;
	}
	char os[256] = "", hs[512] = "";
	size_t o = 0;
	for (int k = 0; k < no; k++)
		o += snprintf(os + o, sizeof os - o, "%s%d", k ? "," : "", order[k]);
	o = 0;
	for (int n = 0; n < VM_MAX_NODES; n++)
		if (pages[n])
			o += snprintf(hs + o, sizeof hs - o, "%s%d:%ld", o ? "," : "", n, pages[n]);
	uint64_t on = (uint64_t)pages[node] * VM_PAGE;
	printf("VMTAB pressure tag=%s policy=%s cpu=%d block=%zu threads=%d node=%d room_mib=%llu got_mib=%llu on_node_mib=%llu "
	       "pages=%s order=%s end=%s\n",
	       tag, pol, cpu, bs, nthr, node, (unsigned long long)(room0 >> 20), (unsigned long long)(got >> 20),
	       (unsigned long long)(on >> 20), hs, os,
	       ends_enomem ? "ENOMEM" : ends_other ? "other-error" : "limit");

	/* N gave what it had (slack: metadata, page tables, the library's
	 * margin: low watermark + 4 MiB) */
	uint64_t slack = 16 * VM_MIB + room0 / 10;
	CHECK(on + slack >= room0, "%s %s: node %d gave %llu MiB, %llu MiB were above its high watermark", tag, pol, node,
	      (unsigned long long)(on >> 20), (unsigned long long)(room0 >> 20));
	CHECK(other == 0, "%s %s: %ld pages not found by move_pages", tag, pol, other);
	if (bind) {
		CHECK(ends_enomem == nthr, "%s %s: %d of %d threads ended with ENOMEM (%llu MiB allocated)", tag, pol,
		      ends_enomem, nthr, (unsigned long long)(got >> 20));
		CHECK(no == 0 || (no == 1 && order[0] == node), "%s %s: pages on nodes %s", tag, pol, hs);
	} else {
		CHECK(ends_enomem + ends_other == 0, "%s %s: an allocation failed after %llu MiB", tag, pol,
		      (unsigned long long)(got >> 20));
		int fb[VM_MAX_NODES];
		int nfb = nd_fallback_list(node, 0, fb, VM_MAX_NODES);
		if (room0 >= 16 * VM_MIB) {
			CHECK(no >= 1 && order[0] == node, "%s %s: first pages on node %d, not %d", tag, pol,
			      no ? order[0] : -1, node);
			for (int k = 0; k < no && k < nfb; k++)
				CHECK(order[k] == fb[k], "%s %s: nodes used in the order %s, fallback list from %d differs at %d",
				      tag, pol, os, node, k);
		} else {
			/* the node was full at the start (pages of the last fill
			 * still on the CPUs' lists, or a boosted zone): the fill
			 * may begin on the next node, and stay there if the node
			 * never gets room (a CI run: all of it on node 0 under
			 * preferred:1); still only the fallback list's first
			 * nodes, one more than it used */
			for (int k = 0; k < no; k++) {
				bool in = false;
				for (int j = 0; j <= no && j < nfb; j++)
					in |= order[k] == fb[j];
				CHECK(in, "%s %s: node %d used, not among the first %d of %d's fallback list", tag, pol,
				      order[k], no + 1, node);
			}
		}
		CHECK(no <= nfb, "%s %s: nodes used %s", tag, pol, os);
		CHECK(no >= (room0 >= 16 * VM_MIB ? 2 : 1), "%s %s: %llu MiB past the node's room and nothing fell back",
		      tag, pol, (unsigned long long)(got >> 20));
	}
	return CHECK_DONE();
}

/* ---- the parent: the matrix ---------------------------------------------- */

static int run_fill(const char *pol, int cpu, size_t bs, int nthr, uint64_t limit_mib, const char *tag)
{
	char a_cpu[16], a_bs[32], a_thr[16], a_lim[32];
	snprintf(a_cpu, sizeof a_cpu, "%d", cpu);
	snprintf(a_bs, sizeof a_bs, "%zu", bs);
	snprintf(a_thr, sizeof a_thr, "%d", nthr);
	snprintf(a_lim, sizeof a_lim, "%llu", (unsigned long long)limit_mib);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", "vm_pressure", vm_topo_path, "fill", pol, a_cpu, a_bs, a_thr, a_lim, tag,
		      (char *)NULL);
		_exit(126);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st)) {
		CHECK(0, "%s %s block=%zu threads=%d: killed by signal %d (the OOM killer?)", tag, pol, bs, nthr,
		      WTERMSIG(st));
		return -1;
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s %s block=%zu threads=%d: exit %d", tag, pol, bs, nthr,
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}

/* Takes node's memory down to leave_mib above its high watermark: a
 * mapping bound to node and touched (the parent's, not the allocator's). */
static void *ballast(int node, uint64_t leave_mib, size_t *len)
{
	uint64_t room = zone_room(node), leave = leave_mib * VM_MIB;
	*len = room > leave ? (size_t)(room - leave) : 0;
	if (!*len)
		return NULL;
	char *p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	unsigned long mask[2] = { 1UL << node, 0 };
	CHECK(syscall(SYS_mbind, p, *len, 2 /* MPOL_BIND */, mask, 65, 0) == 0, "mbind ballast to %d", node);
	memset(p, 1, *len);
	return p;
}

static void matrix(const char *tag, int tgt, int lcpu, bool full, bool sparse)
{
	int lnode = vm_expected_mem_node(T, T->cpu_node[lcpu]);
	size_t bl1 = 0, bl2 = 0;
	void *b1 = ballast(tgt, 48, &bl1), *b2 = lnode != tgt ? ballast(lnode, 48, &bl2) : NULL;
	static const size_t blocks[] = { 256, 64 << 10 };
	char pol[32];
	for (int p = 0; p < 3; p++) {
		int node = tgt;
		if (p == 0) {
			snprintf(pol, sizeof pol, "local");
			node = vm_expected_mem_node(T, T->cpu_node[lcpu]);
		} else {
			snprintf(pol, sizeof pol, p == 1 ? "preferred:%d" : "bind:%d", tgt);
		}
		/* past the node's free memory (page lists too): local and
		 * preferred must spill */
		uint64_t lim = ((vm_node_meminfo(node, "MemFree") + zone_pcp(node)) >> 20) + 24;
		int cpu = p == 0 ? lcpu : 0;
		for (int b = 0; b < 2; b++)
			for (int t = 1; t <= 2; t++)
				if (full || (b == 1 && t == 1) || (sparse && b == 0 && t == 2))
					run_fill(pol, cpu, blocks[b], t, lim, tag);
	}
	if (b1)
		munmap(b1, bl1);
	if (b2)
		munmap(b2, bl2);
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (!(VM_NEED(nd_policy_parse) & VM_NEED(nd_set_policy) & VM_NEED(nd_fallback_list)))
		return CHECK_DONE();
	if (argc > 2 && strcmp(argv[2], "fill") == 0)
		return child(argv + 3);
	int mem0 = vm_expected_mem_node(T, T->cpu_node[0]), tgt = vm_fill_target(T);
	if (tgt < 0) {
		printf("SKIP: no memory node besides cpu 0's\n");
		return 77;
	}
	/* local: from the last CPU whose memory node is not CPU 0's */
	int lcpu = 0;
	for (int c = T->smp - 1; c > 0 && !lcpu; c--)
		if (vm_expected_mem_node(T, T->cpu_node[c]) != mem0)
			lcpu = c;
	bool full = strcmp(T->name, "two") == 0;
	matrix("default", tgt, lcpu, full, false);
	if (full) {
		FILE *f = fopen("/proc/sys/vm/min_free_kbytes", "r+");
		long kb = 0;
		if (f && fscanf(f, "%ld", &kb) == 1) {
			rewind(f);
			fprintf(f, "%ld\n", kb * 2);
			fclose(f);
			printf("VMTAB pressure_watermark min_free_kbytes=%ld raised=%ld\n", kb, kb * 2);
			matrix("raised", tgt, lcpu, false, true);
			f = fopen("/proc/sys/vm/min_free_kbytes", "w");
			if (f) {
				fprintf(f, "%ld\n", kb);
				fclose(f);
			}
		} else {
			CHECK(0, "cannot read /proc/sys/vm/min_free_kbytes");
		}
	}
	return CHECK_DONE();
}
