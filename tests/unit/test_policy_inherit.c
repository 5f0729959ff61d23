// SPDX-License-Identifier: MIT
/* Issue 13: a process started under a kernel policy (numactl -i all, -m 1)
 * without NODALLOC_POLICY gets it as nodalloc's process default, instead
 * of local. Children are started after set_mempolicy (inherited through
 * fork and exec) and print their default policy; NODALLOC_POLICY and an
 * emulated topology keep theirs. The translation itself is checked mode
 * by mode (flags, preferred without a node, nodes the topology lacks). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child_fixture.h"
#include "internal.h"

static int child(void)
{
	nd_policy_t p;
	char buf[256];
	if (nd_get_default_policy(&p) != 0 || nd_policy_format(&p, buf, sizeof buf) < 0)
		return 2;
	/* the heap follows it: a large block's pages are on an allowed node */
	void *b = nd_malloc(1 << 20);
	int node = nd_node_of(b);
	printf("policy=%s node=%d\n", buf, node);
	nd_free(b);
	return 0;
}

/* In the child before exec: no NODALLOC_* but the case's, and the
 * kernel policy *mode over node 0 (< 0: none). */
static void set_kernel_policy(void *arg)
{
	int kmode = *(int *)arg;
	unsigned long mask[ND_MAX_NODES / 64] = { 1 };
	if (kmode >= 0 && syscall(SYS_set_mempolicy, kmode, mask, ND_MAX_NODES + 1) != 0)
		_exit(3);
}

/* Runs this program as a child under kernel policy kmode over node 0
 * (kmode < 0: none), env name=value if name; its stdout and stderr in
 * out. Returns its exit status. */
static const char *self;
static int run(int kmode, const char *name, const char *value, char *out, size_t len)
{
	char *const args[] = { (char *)self, "child", NULL };
	for (const char *const *v = (const char *const[]){ "NODALLOC_POLICY", "NODALLOC_TOPOLOGY", "NODALLOC_VERBOSE", NULL };
	     *v; v++)
		unsetenv(*v);
	int st = run_child_then(self, args, name, value, true, out, len, set_kernel_policy, &kmode);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void translation(void)
{
	uint64_t m0[ND_MAX_NODES / 64] = { 1 }, none[ND_MAX_NODES / 64] = { 0 }, far[ND_MAX_NODES / 64] = { 0 };
	_nd_bit_set(far, 900);
	nd_policy_t p;
	CHECK_EQ(_nd_policy_from_kernel(ND_MPOL_BIND, m0, &p), 0);
	CHECK(p.mode == ND_POLICY_BIND && nd_nodemask_isset(&p.nodes, 0) && nd_nodemask_count(&p.nodes) == 1);
	CHECK_EQ(_nd_policy_from_kernel(ND_MPOL_INTERLEAVE | ND_MPOL_F_STATIC_NODES, m0, &p), 0);
	CHECK(p.mode == ND_POLICY_INTERLEAVE && p.granularity_shift == 0);
	CHECK_EQ(_nd_policy_from_kernel(ND_MPOL_WEIGHTED_INTERLEAVE, m0, &p), 0);
	CHECK(p.mode == ND_POLICY_INTERLEAVE);
	CHECK_EQ(_nd_policy_from_kernel(ND_MPOL_PREFERRED_MANY, m0, &p), 0);
	CHECK(p.mode == ND_POLICY_PREFERRED_MANY);
	CHECK_EQ(_nd_policy_from_kernel(ND_MPOL_PREFERRED, m0, &p), 0);
	CHECK(p.mode == ND_POLICY_PREFERRED);
	CHECK_EQ(_nd_policy_from_kernel(ND_MPOL_BIND | ND_MPOL_F_NUMA_BALANCING, m0, &p), 0);
	CHECK(p.mode == ND_POLICY_BIND);
	/* nothing to follow */
	CHECK_EQ(_nd_policy_from_kernel(ND_MPOL_PREFERRED, none, &p), -1); /* the kernel's local */
	CHECK_EQ(_nd_policy_from_kernel(ND_MPOL_DEFAULT, m0, &p), -1);
	CHECK_EQ(_nd_policy_from_kernel(ND_MPOL_LOCAL, none, &p), -1);
	CHECK_EQ(_nd_policy_from_kernel(ND_MPOL_BIND, far, &p), -1); /* no such node here */
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();
	self = argv[0];
	translation();
	char out[4096];
	/* Under the kernel's default: local. */
	CHECK_EQ(run(-1, NULL, NULL, out, sizeof out), 0);
	CHECK(strstr(out, "policy=local") != NULL, "got: %s", out);
	/* numactl -i 0 / -m 0 / --preferred=0 */
	CHECK_EQ(run(ND_MPOL_INTERLEAVE, NULL, NULL, out, sizeof out), 0);
	CHECK(strstr(out, "policy=interleave:0") != NULL && strstr(out, "node=0"), "got: %s", out);
	CHECK_EQ(run(ND_MPOL_BIND, NULL, NULL, out, sizeof out), 0);
	CHECK(strstr(out, "policy=bind:0") != NULL && strstr(out, "node=0"), "got: %s", out);
	CHECK_EQ(run(ND_MPOL_PREFERRED, NULL, NULL, out, sizeof out), 0);
	CHECK(strstr(out, "policy=preferred:0") != NULL, "got: %s", out);
	/* said under VERBOSE only */
	CHECK_EQ(run(ND_MPOL_BIND, NULL, NULL, out, sizeof out), 0);
	CHECK(strstr(out, "inherited") == NULL, "got: %s", out);
	CHECK_EQ(run(ND_MPOL_BIND, "NODALLOC_VERBOSE", "1", out, sizeof out), 0);
	CHECK(strstr(out, "nodalloc: info: NODALLOC_POLICY is not set: the heap follows the inherited kernel policy (bind:0)"),
	      "got: %s", out);
	/* NODALLOC_POLICY wins; an emulated topology's nodes are not the kernel's. */
	CHECK_EQ(run(ND_MPOL_BIND, "NODALLOC_POLICY", "local", out, sizeof out), 0);
	CHECK(strstr(out, "policy=local") != NULL, "got: %s", out);
	CHECK_EQ(run(ND_MPOL_INTERLEAVE, "NODALLOC_TOPOLOGY", "0: cpus=0 mem=1G; 1: cpus=1 mem=1G", out, sizeof out), 0);
	CHECK(strstr(out, "policy=local") != NULL, "got: %s", out);
	return CHECK_DONE();
}
