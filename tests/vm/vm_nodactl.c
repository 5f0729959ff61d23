// SPDX-License-Identifier: MIT
/*
 * VM test: nodactl sets the KERNEL policy of the program it starts, so all
 * of its memory follows the options, not only nodalloc's heap. The program
 * is probe_nodactl (dynamic: nodactl preloads libnodalloc) or
 * probe_nodactl_static (nothing of nodalloc can reach it); it reports its
 * policy, affinity and where its stack, an mmap and a heap block are
 * (move_pages). run.sh puts nodactl and both probes in /bin.
 *   -m 1           stack, mmap and heap all on node 1; policy MPOL_BIND {1}
 *   -i all static  the mmap's pages interleave evenly over the memory
 *                  nodes; policy MPOL_INTERLEAVE
 *   -P set         MPOL_PREFERRED_MANY (Linux 5.15+), pages on the set
 *   --weights      MPOL_WEIGHTED_INTERLEAVE, or where the kernel lacks it
 *                  (Linux < 6.9) interleave with one note on stderr
 *   no option      the inherited (default) policy is left alone
 *   -N node        the CPU binding, also of a memoryless node's CPUs
 */
#include "vm_common.h"

#include <stdbool.h>
#include <sys/wait.h>

#define NODACTL "/bin/nodactl"
#define PROBE "/bin/probe_nodactl"
#define PROBE_STATIC "/bin/probe_nodactl_static"

static char out[1 << 16];

/* Runs argv (NULL-terminated), stdout+stderr into out; exit status. */
static int run(const char *const *argv)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	size_t n = 0;
	ssize_t r;
	while (n < sizeof out - 1 && (r = read(fds[0], out + n, sizeof out - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(fds[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Pages per node of the "PROBE what" line into cnt[]; total, or -1. */
static long probe_line(const char *what, long cnt[VM_MAX_NODES + 1])
{
	memset(cnt, 0, sizeof(long) * (VM_MAX_NODES + 1));
	char key[32];
	snprintf(key, sizeof key, "PROBE %s", what);
	const char *p = strstr(out, key);
	if (!p)
		return -1;
	p += strlen(key);
	long total = 0;
	int node, used;
	long c;
	while (sscanf(p, " %d:%ld%n", &node, &c, &used) == 2) {
		cnt[node >= 0 && node < VM_MAX_NODES ? node : VM_MAX_NODES] += c;
		total += c;
		p += used;
	}
	return total;
}

static void all_on(const char *what, int node)
{
	long cnt[VM_MAX_NODES + 1];
	long total = probe_line(what, cnt);
	CHECK(total > 0, "-m %d: no '%s' line from the probe: %s", node, what, out);
	CHECK(cnt[node] == total, "-m %d: %ld of %ld %s pages on node %d: %s", node, cnt[node], total, what, node, out);
	printf("VMTAB nodactl run=membind what=%s node=%d pages=%ld on_node=%ld\n", what, node, total, cnt[node]);
}

/* The libnodalloc.so this test is linked with, for nodactl to preload. */
static void set_library(void)
{
	char buf[8192];
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(buf, sizeof buf, f)) {
		char *p = strstr(buf, " /");
		if (p && strstr(p, "/libnodalloc.so")) {
			p[strcspn(p, "\n")] = '\0';
			setenv("NODALLOC_LIBRARY", p + 1, 1);
			break;
		}
	}
	if (f)
		fclose(f);
	CHECK(getenv("NODALLOC_LIBRARY") != NULL, "bed: libnodalloc.so not in /proc/self/maps");
}

int main(int argc, char **argv)
{
	if (vm_begin(argc, argv) != 0)
		return CHECK_DONE();
	const vm_topo_t *T = &vm_topo;
	set_library();
	int M[VM_MAX_NODES], nm = vm_mem_nodes(T, M);
	char mib[16];

	/* -m 1: everything on node 1 (it has memory in every topology). */
	CHECK(vm_has_mem(T, 1), "bed: node 1 has no memory");
	int rc = run((const char *const[]){ NODACTL, "-m", "1", "--", PROBE, "4", NULL });
	CHECK(rc == 0, "nodactl -m 1 probe: exit %d: %s", rc, out);
	CHECK(strstr(out, "PROBE policy mode=2 mask=2\n") != NULL, "-m 1: the kernel policy is not bind {1}: %s", out);
	all_on("stack", 1);
	all_on("mmap", 1);
	all_on("heap", 1);

	/* -i all, a static program: the kernel interleaves its pages. */
	snprintf(mib, sizeof mib, "%d", 4 * nm);
	rc = run((const char *const[]){ NODACTL, "-i", "all", "--", PROBE_STATIC, mib, "nothp", NULL });
	CHECK(rc == 0, "nodactl -i all static probe: exit %d: %s", rc, out);
	unsigned long want_mask = 0;
	for (int i = 0; i < nm; i++)
		want_mask |= 1ul << M[i];
	char line[64];
	snprintf(line, sizeof line, "PROBE policy mode=3 mask=%lx\n", want_mask);
	CHECK(strstr(out, line) != NULL, "-i all: the static program's policy is not interleave %lx: %s", want_mask, out);
	long cnt[VM_MAX_NODES + 1];
	long total = probe_line("mmap", cnt);
	CHECK(total == 4L * nm * 256, "-i all: the probe saw %ld mmap pages, not %d: %s", total, 4 * nm * 256, out);
	for (int i = 0; i < nm; i++) {
		long want = total / nm;
		/* one VMA interleaved by page offset: exact up to the first page */
		CHECK(labs(cnt[M[i]] - want) <= 1 + want / 100, "-i all static: node %d has %ld of %ld pages, want %ld", M[i],
		      cnt[M[i]], total, want);
		printf("VMTAB nodactl run=interleave-static node=%d pages=%ld of=%ld\n", M[i], cnt[M[i]], total);
	}
	CHECK(strstr(out, "is statically linked") == NULL, "-i all without heap options needs no static note: %s", out);
	/* a heap option for a static program: nodactl says it cannot apply */
	rc = run((const char *const[]){ NODACTL, "-i", "all", "--stats", "--", PROBE_STATIC, "1", NULL });
	CHECK(rc == 0 && strstr(out, "is statically linked") != NULL, "static + --stats: no note (exit %d): %s", rc, out);

	/* -P: preferred-many (Linux 5.15+, the bed's kernel has it). */
	if (nm >= 2) {
		char set[32];
		snprintf(set, sizeof set, "%d,%d", M[0], M[nm - 1]);
		rc = run((const char *const[]){ NODACTL, "-P", set, "--", PROBE, "2", NULL });
		CHECK(rc == 0, "nodactl -P %s: exit %d: %s", set, rc, out);
		snprintf(line, sizeof line, "PROBE policy mode=5 mask=%lx\n", (1ul << M[0]) | (1ul << M[nm - 1]));
		CHECK(strstr(out, line) != NULL, "-P %s: policy is not preferred-many: %s", set, out);
		total = probe_line("mmap", cnt);
		CHECK(total > 0 && cnt[M[0]] + cnt[M[nm - 1]] == total, "-P %s: mmap pages outside the set: %s", set, out);

		/* weighted interleave, or interleave with a note */
		char w[64];
		snprintf(w, sizeof w, "%d=1,%d=1", M[0], M[1]);
		rc = run((const char *const[]){ NODACTL, "--weights", w, "--", PROBE, "2", NULL });
		CHECK(rc == 0, "nodactl --weights %s: exit %d: %s", w, rc, out);
		unsigned long wm = (1ul << M[0]) | (1ul << M[1]);
		char l6[64], l3[64];
		snprintf(l6, sizeof l6, "PROBE policy mode=6 mask=%lx\n", wm);
		snprintf(l3, sizeof l3, "PROBE policy mode=3 mask=%lx\n", wm);
		bool weighted = strstr(out, l6) != NULL, plain = strstr(out, l3) != NULL;
		CHECK(weighted || plain, "--weights: policy neither weighted interleave nor interleave %lx: %s", wm, out);
		if (plain)
			CHECK(strstr(out, "nodactl: note: this kernel has no MPOL_WEIGHTED_INTERLEAVE") != NULL,
			      "--weights fell back to interleave without saying so: %s", out);
		const char *first = strstr(out, "nodactl: note:");
		CHECK(!first || !strstr(first + 1, "nodactl: note:"), "the note is said more than once: %s", out);
	}

	/* No policy option: the inherited policy (default) is left alone. */
	rc = run((const char *const[]){ NODACTL, "--", PROBE, "1", NULL });
	CHECK(rc == 0 && strstr(out, "PROBE policy mode=0 mask=0\n") != NULL, "no option: policy changed: %s", out);

	/* -N: a CPU binding, also for a node without memory. */
	for (int n = 0; n < T->nnodes; n++) {
		if (!T->has_cpus[n])
			continue;
		char node[8], want[128] = "PROBE cpus";
		snprintf(node, sizeof node, "%d", n);
		for (int c = 0; c < T->smp; c++)
			if (T->cpu_node[c] == n)
				snprintf(want + strlen(want), sizeof want - strlen(want), " %d", c);
		strcat(want, "\n");
		rc = run((const char *const[]){ NODACTL, "-N", node, "--", PROBE, "1", NULL });
		CHECK(rc == 0 && strstr(out, want) != NULL, "-N %d%s: want '%s': exit %d: %s", n,
		      vm_has_mem(T, n) ? "" : " (memoryless)", want, rc, out);
	}
	return CHECK_DONE();
}
