// SPDX-License-Identifier: MIT
/* nd_malloc_policy's two bodies (place.c: the plain object's compare in
 * SSE2, or one 32-byte AVX2 compare, chosen at load by an ifunc), each
 * called directly (AVX2 only where the CPU has it), then the public symbol
 * (the ifunc's choice), under an emulated topology with CPUs on both
 * nodes, on a plain object that ends a page followed by a PROT_NONE page
 * (a load past it faults):
 *  - a change in place of every field the policy reads is seen at the
 *    next call: mode, flags (an unknown one refused at once), interleave
 *    granularity (an invalid one refused at once), nodes, weights (a
 *    weighted object's weights alone, and back);
 *  - a plain object whose heap is the same on every CPU (bind:1,
 *    interleave, weighted) keeps its fast path across a CPU change (no
 *    slow path: its compare has no CPU key); one whose heap follows the
 *    CPU (bind:0-1, local) follows a migration at the next call, also after
 *    it was one of the first kind (kinds switch in place);
 *  - weights[0..7] reading as ND_KEY_NONE (all 255) on a bind object
 *    serve right (that object is compared with a CPU key: a fresh key,
 *    NONE, would match its weights);
 *  - NULL is the default policy. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "policy_fixture.h"

static const char *SPEC = "0: cpus=0-1 mem=512M; 1: cpus=2-3 mem=512M";

typedef void *(*pol_fn)(size_t, const nd_policy_t *);

enum { N = 300 };

/* n allocations of 48 bytes through fn; how many are on node */
static int on_node(pol_fn fn, const nd_policy_t *p, int node, int n)
{
	static void *v[N];
	int c = 0;
	for (int i = 0; i < n; i++) {
		v[i] = fn(48, p);
		c += v[i] && nd_node_of(v[i]) == node;
	}
	for (int i = 0; i < n; i++)
		free(v[i]);
	return c;
}

/* One call after a change in place: it served (on node, when >= 0), and
 * entry 0 now holds the changed object's policy (the fast path did not
 * serve the old one): the words its mode reads (a weighted policy's set
 * comes from its weights, local has none). */
static int seen(pol_fn fn, const nd_policy_t *p, int node)
{
	void *q = fn(48, p);
	const nd_policy_t *ip = _nd_tls->pc[0].pol;
	int ok = q && (node < 0 || nd_node_of(q) == node) && ip && ip->mode == p->mode && ip->flags == p->flags &&
		 (p->mode == ND_POLICY_LOCAL || p->mode == ND_POLICY_WEIGHTED || ip->nodes.bits[0] == p->nodes.bits[0]) &&
		 (p->mode != ND_POLICY_INTERLEAVE || ip->granularity_shift == p->granularity_shift) &&
		 (p->mode != ND_POLICY_WEIGHTED || memcmp(ip->weights, p->weights, 8) == 0);
	free(q);
	return ok;
}

/* Slow paths of one call on CPU cpu after a warm one on CPU 0 (which left
 * a free object in the current slab); *bad counts a failure or an object
 * off node (when >= 0). */
static uint64_t moved_call_slow(pol_fn fn, const nd_policy_t *p, int cpu, int node, int *bad)
{
	nd_emulate_cpu(0);
	free(fn(48, p));
	nd_emulate_cpu(cpu);
	uint64_t before = _nd_slab_slow_count();
	void *q = fn(48, p);
	uint64_t slow = _nd_slab_slow_count() - before;
	*bad += !q || (node >= 0 && nd_node_of(q) != node);
	free(q);
	return slow;
}

#define ALL_ON(node) CHECK(on_node(fn, p, node, N) == N, "%s, line %d: not all on node %d", name, __LINE__, node)

static void run(const char *name, pol_fn fn, nd_policy_t *p)
{
	nd_emulate_cpu(0);
	/* interleave: the granularity */
	*p = pol("interleave:0-1");
	on_node(fn, p, 0, N);
	p->granularity_shift = 4;
	CHECK(seen(fn, p, -1), "%s: interleave granularity 0 -> 4 not seen", name);
	p->granularity_shift = 0;
	CHECK(seen(fn, p, -1), "%s: interleave granularity 4 -> 0 not seen", name);
	p->granularity_shift = 40;
	errno = 0;
	CHECK(fn(48, p) == NULL && errno == EINVAL, "%s: interleave, granularity 40: errno %d", name, errno);
	p->granularity_shift = 0;
	/* mode: interleave -> bind:0-1 (CPU 0: node 0) */
	p->mode = ND_POLICY_BIND;
	CHECK(seen(fn, p, 0), "%s: interleave -> bind:0-1 not seen", name);
	ALL_ON(0);
	/* nodes: bind:1 */
	p->nodes.bits[0] = 2;
	CHECK(seen(fn, p, 1), "%s: bind:0-1 -> bind:1 not seen", name);
	ALL_ON(1);
	/* flags */
	p->flags = ND_POLICY_F_TIER_ORDER;
	CHECK(seen(fn, p, 1), "%s: bind:1 -> bind:1+tier not seen", name);
	p->flags = 0x80;
	errno = 0;
	CHECK(fn(48, p) == NULL && errno == EINVAL, "%s: unknown flag: errno %d", name, errno);
	p->flags = 0;
	CHECK(seen(fn, p, 1), "%s: bind:1+tier -> bind:1 not seen", name);
	/* mode again: preferred:1, local */
	p->mode = ND_POLICY_PREFERRED;
	CHECK(seen(fn, p, 1), "%s: bind:1 -> preferred:1 not seen", name);
	ALL_ON(1);
	p->mode = ND_POLICY_LOCAL;
	CHECK(seen(fn, p, 0), "%s: preferred:1 -> local not seen", name);
	ALL_ON(0);
	nd_emulate_cpu(2); /* local follows the CPU */
	ALL_ON(1);
	nd_emulate_cpu(0);
	ALL_ON(0);

	/* weights: node 1 only (set and weights), then the weights alone */
	*p = pol("weighted:0=1,1=1");
	on_node(fn, p, 0, N);
	p->weights[0] = 0;
	p->nodes.bits[0] = 2;
	ALL_ON(1);
	*p = pol("weighted:0=1,1=1");
	on_node(fn, p, 0, N);
	p->weights[0] = 0;
	CHECK(seen(fn, p, 1), "%s: weights 1,1 -> 0,1 not seen", name);
	ALL_ON(1);
	p->weights[0] = 1;
	p->weights[1] = 0;
	CHECK(seen(fn, p, 0), "%s: weights 0,1 -> 1,0 not seen", name);
	ALL_ON(0);
	p->weights[1] = 2; /* the same set, other shares: another heap */
	CHECK(seen(fn, p, -1), "%s: weights 1,0 -> 1,2 not seen", name);

	/* no CPU key for a heap the same on every CPU */
	static const struct {
		const char *spec;
		int node; /* -1: chosen per slab */
	} free_objs[] = { { "bind:1", 1 }, { "preferred:1", 1 }, { "interleave:0-1", -1 }, { "weighted:0=1,1=2", -1 } };
	for (unsigned i = 0; i < sizeof free_objs / sizeof free_objs[0]; i++) {
		int bad = 0;
		*p = pol(free_objs[i].spec);
		nd_emulate_cpu(0);
		on_node(fn, p, 0, N);
		uint64_t slow = moved_call_slow(fn, p, 2, free_objs[i].node, &bad);
		CHECK(bad == 0, "%s: %s on CPU 2: off node %d", name, free_objs[i].spec, free_objs[i].node);
		CHECK(slow == 0, "%s: %s after a CPU change: %llu slow paths", name, free_objs[i].spec,
		      (unsigned long long)slow);
		nd_emulate_cpu(0);
	}

	/* a heap that follows the CPU: bind:0-1, after being bind:1 */
	*p = pol("bind:1");
	on_node(fn, p, 1, N);
	p->nodes.bits[0] = 3;
	ALL_ON(0);
	nd_emulate_cpu(2);
	ALL_ON(1);
	nd_emulate_cpu(0);
	ALL_ON(0);
	/* and back: bind:1 on CPU 2 and 0 */
	p->nodes.bits[0] = 2;
	nd_emulate_cpu(2);
	ALL_ON(1);
	nd_emulate_cpu(0);
	ALL_ON(1);

	/* weights that read as ND_KEY_NONE on a bind object, from the start
	 * and set on a warm one */
	*p = pol("bind:1");
	ALL_ON(1);
	memset(p->weights, 0xff, 8);
	ALL_ON(1);
	nd_emulate_cpu(2);
	ALL_ON(1);
	nd_emulate_cpu(0);
	*p = pol("bind:1");
	memset(p->weights, 0xff, 8);
	ALL_ON(1);
	p->nodes.bits[0] = 1;
	ALL_ON(0);
	p->nodes.bits[0] = 3;
	nd_emulate_cpu(2);
	ALL_ON(1);
	nd_emulate_cpu(0);
	ALL_ON(0);
	memset(p->weights, 0, 8);
	p->nodes.bits[0] = 2;
	ALL_ON(1);

	/* NULL: the default (local) policy */
	void *q = fn(48, NULL);
	CHECK(q && nd_node_of(q) == 0, "%s: NULL policy", name);
	free(q);
}

int main(void)
{
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED && mprotect(m + pg, (size_t)pg, PROT_NONE) == 0, "guard page");
	nd_policy_t *p = (nd_policy_t *)(void *)(m + pg - sizeof(nd_policy_t));

	run("sse2", _nd_place_policy_sse2, p);
	if (_nd_place_avx2())
		run("avx2", _nd_place_policy_avx2, p);
	else
		printf("no AVX2 on this CPU: the SSE2 body only\n");
	run("ifunc", nd_malloc_policy, p); /* the body the dynamic linker chose */
	return CHECK_DONE();
}
