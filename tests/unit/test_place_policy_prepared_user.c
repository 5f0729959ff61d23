// SPDX-License-Identifier: MIT
/* nd_malloc_policy's cache (heap.c): an entry of a caller's plain object
 * whose heap is the same on every CPU (user) is compared without a CPU
 * key, its lane at the object's own weights. A prepared call of the same
 * policy (nd_policy_prepare: the entry's pol) that found the entry stale
 * (the object changed in place since) stored the CPU pair as its lane and
 * key while the entry stayed user: the invariant pc_check asserts (debug
 * builds aborted; audit24, found by fuzz_threads, whose policy objects
 * are a stack variable reused). After each call every user entry's lane is
 * its weights and its key the entry's weights, and every call's block is
 * on its policy's nodes. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "policy_fixture.h"

static const char *SPEC = "0: cpus=0 mem=256M; 1: cpus=1 mem=256M; 2: cpus=2 mem=256M";

static void entries_ok(const char *when)
{
	const _nd_thread_t *t = _nd_tls;
	for (int i = 0; i < ND_PCACHE; i++) {
		const struct _nd_pcache *e = &t->pc[i];
		if (e->user == ND_PC_NOUSER)
			continue;
		CHECK(e->lane == (const uint64_t *)(const void *)e->user->weights, "%s: user entry %d's lane is not its weights",
		      when, i);
		CHECK(e->key == e->w0, "%s: user entry %d's key is not its weights", when, i);
	}
}

static void on(void *p, const nd_policy_t *pol, const char *when)
{
	CHECK(p != NULL, "%s: NULL", when);
	if (p)
		CHECK(nd_nodemask_isset(&pol->nodes, nd_node_of(p)), "%s: on node %d", when, nd_node_of(p));
	free(p);
}

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	nd_emulate_cpu(0);
	static const char *const texts[][2] = {
		{ "weighted:0=3,1=1", "weighted:1=2,2=5" },
		{ "interleave:0-1@64K", "weighted:0=1,2=1" },
		{ "bind:2", "weighted:0=2,1=1,2=1" },
		{ "preferred:1", "interleave:1-2" },
	};
	for (unsigned k = 0; k < sizeof texts / sizeof texts[0]; k++) {
		nd_policy_t a = pol(texts[k][0]), b = pol(texts[k][1]), obj = a;
		const nd_policy_t *pa = nd_policy_prepare(&a), *pb = nd_policy_prepare(&b);
		CHECK(pa && pb);
		for (int round = 0; round < 3; round++) {
			obj = a;
			on(nd_malloc_policy(100, &obj), &a, "object as a");
			entries_ok("object as a");
			obj = b; /* the same object, changed in place */
			on(nd_malloc_policy(100, &obj), &b, "object as b");
			entries_ok("object as b");
			on(nd_malloc_policy(100, pa), &a, "prepared a"); /* a's entry, its object now b */
			entries_ok("prepared a");
			on(nd_mallocx_policy(200, pa, ND_MALLOCX_ZERO), &a, "prepared a, mallocx");
			entries_ok("prepared a, mallocx");
			on(nd_malloc_policy(100, &obj), &b, "object as b again");
			entries_ok("object as b again");
			on(nd_malloc_policy(100, pb), &b, "prepared b");
			entries_ok("prepared b");
			nd_emulate_cpu(round % 3);
		}
	}
	return CHECK_DONE();
}
