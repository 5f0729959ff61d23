// SPDX-License-Identifier: MIT
/*
 * VM test: the inherited kernel policy (issue 13). A process started under
 * `numactl -m X` or `numactl -i all` (here: set_mempolicy, then exec, as
 * numactl does) without NODALLOC_POLICY gets that policy for its heap:
 *  - bind:X (MPOL_BIND to the last memory node, not CPU 0's): every page
 *    of 4096 small objects and two 4 MiB blocks is on X (move_pages);
 *  - interleave over every memory node (MPOL_INTERLEAVE): the pages of
 *    two 8 MiB blocks are on every memory node, none with less than half
 *    its even share.
 * Before the fix the heap stayed local (CPU 0's memory node).
 */
#include "vm_common.h"

#include <sys/wait.h>

static const vm_topo_t *T = &vm_topo;

/* In the child: the heap under the inherited policy. */
static int child(const char *kind, int x)
{
	CHECK(vm_pin(0) == 0, "cannot pin to cpu 0");
	nd_policy_t p;
	char buf[256] = "";
	CHECK(nd_get_default_policy(&p) == 0 && nd_policy_format(&p, buf, sizeof buf) >= 0, "no default policy");
	enum { N = 4096, SZ = 64, NL = 2 };
	size_t lsz = strcmp(kind, "bind") == 0 ? 4 * VM_MIB : 8 * VM_MIB;
	void **o = vm_buf(N * sizeof(void *));
	void *l[NL];
	for (int i = 0; i < N; i++)
		if ((o[i] = malloc(SZ)))
			memset(o[i], 1, SZ);
	for (int i = 0; i < NL; i++)
		if ((l[i] = malloc(lsz)))
			vm_touch(l[i], lsz);
	vm_hist_t hs = VM_HIST_INIT, hl = VM_HIST_INIT;
	vm_hist_objs(&hs, o, N, SZ);
	for (int i = 0; i < NL; i++)
		vm_hist_range(&hl, l[i], l[i] ? lsz : 0, NULL);
	char s1[512], s2[512];
	int M[VM_MAX_NODES], nm = vm_mem_nodes(T, M), pass;
	if (strcmp(kind, "bind") == 0) {
		pass = hs.total > 0 && hs.node[x] == hs.total && hl.total > 0 && hl.node[x] == hl.total;
		CHECK(pass, "inherited bind:%d: small objects %s, large blocks %s; policy %s", x,
		      vm_hist_str(&hs, s1, sizeof s1), vm_hist_str(&hl, s2, sizeof s2), buf);
	} else {
		pass = hl.total > 0;
		for (int i = 0; i < nm; i++)
			pass = pass && hl.node[M[i]] * 2 * nm >= hl.total;
		CHECK(pass, "inherited interleave: large blocks %s (each node at least half of %ld/%d); policy %s",
		      vm_hist_str(&hl, s2, sizeof s2), hl.total, nm, buf);
	}
	printf("VMTAB inherit kernel=%s node=%d policy=%s small=%s large=%s result=%s\n", kind, x, buf,
	       vm_hist_str(&hs, s1, sizeof s1), vm_hist_str(&hl, s2, sizeof s2), pass ? "ok" : "FAIL");
	return CHECK_DONE();
}

/* Runs this program as a child under the kernel policy (mode over mask). */
static int run_under(int argc, char **argv, int mode, const unsigned long *mask, const char *kind, int x)
{
	pid_t pid = fork();
	if (pid == 0) {
		unsetenv("NODALLOC_POLICY");
		if (syscall(SYS_set_mempolicy, mode, mask, (unsigned long)VM_MAX_NODES + 1) != 0) {
			perror("vm_inherit: set_mempolicy");
			_exit(3);
		}
		char xs[16];
		snprintf(xs, sizeof xs, "%d", x);
		execl("/proc/self/exe", argv[0], argc > 1 ? argv[1] : vm_topo_path, "--child", kind, xs, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	if (argc > 4 && strcmp(argv[2], "--child") == 0)
		return child(argv[3], atoi(argv[4]));
	int M[VM_MAX_NODES], nm = vm_mem_nodes(T, M);
	if (nm < 2) {
		printf("SKIP: fewer than two memory nodes\n");
		return 77;
	}
	int mem0 = vm_expected_mem_node(T, T->cpu_node[0]);
	int x = M[nm - 1] != mem0 ? M[nm - 1] : M[0];
	unsigned long one[1] = { 1UL << x }, all[1] = { 0 };
	for (int i = 0; i < nm; i++)
		all[0] |= 1UL << M[i];
	int rb = run_under(argc, argv, 2 /* MPOL_BIND */, one, "bind", x);
	CHECK(rb == 0, "the child under MPOL_BIND to node %d exited %d", x, rb);
	int ri = run_under(argc, argv, 3 /* MPOL_INTERLEAVE */, all, "interleave", -1);
	CHECK(ri == 0, "the child under MPOL_INTERLEAVE over every memory node exited %d", ri);
	return CHECK_DONE();
}
