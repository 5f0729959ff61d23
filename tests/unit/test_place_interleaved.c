// SPDX-License-Identifier: MIT
/* nd_malloc_interleaved on the fast path (audit14: 2,031 instructions a
 * pair, 41.7x the local malloc pair, as it built, checked and looked up
 * its policy on every call; bench/policy.sh's rows). Its hit compares
 * the set and granularity it was given with the words of the record's
 * ilheap (test_place_interleaved_heap), made from the thread's cache
 * entry 0: what must hold whatever they hold. Emulated two nodes:
 *  - objects of {0,1} share the nodes within a slab or so, at 4K and 64K,
 *    with a slow path (the counter) per page carved and per slab at most;
 *  - right after a hit, another set ({1}, then {0}) is served from its
 *    own node only; a plain policy object with the same set but another
 *    mode (weighted, interleave +tier) does not serve the interleaved call,
 *    nor the interleaved entry the object;
 *  - right after a hit, a bad granularity (3 pages, 1 KiB, 2G, 2^40), an
 *    empty set, a NULL set and a set naming a node that does not exist
 *    fail with EINVAL;
 *  - a block above a page is spread on its set; realloc keeps a small
 *    block's node;
 *  - the call leaves its set in the thread's entry 0, a user entry (the
 *    one its miss makes ilheap from; before audit14, it never did: every
 *    call was the slow path). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

enum { N = 4096, SZ = 64, SLAB_OBJS = 256 };
static void *o[N];

static void fill(const nd_nodemask_t *m, size_t gran, int *n0, int *n1)
{
	*n0 = *n1 = 0;
	for (int i = 0; i < N; i++) {
		o[i] = nd_malloc_interleaved(SZ, m, gran);
		CHECK(o[i] != NULL, "object %d of %d B", i, SZ);
		int nd = nd_node_of(o[i]);
		*n0 += nd == 0;
		*n1 += nd == 1;
	}
}

static void drain(void)
{
	for (int i = 0; i < N; i++)
		nd_free(o[i]);
}

static void bad(const nd_nodemask_t *m, size_t gran, const char *what)
{
	errno = 0;
	void *p = nd_malloc_interleaved(SZ, m, gran);
	CHECK(p == NULL && errno == EINVAL, "%s: %p, errno %d", what, p, errno);
	nd_free(p);
}

int main(void)
{
	char err[256];
	CHECK(nd_topology_emulate("0: cpus=0 mem=256M; 1: cpus=1 mem=256M", err, sizeof err) == 0, "emulate: %s", err);
	nd_nodemask_t both, one, zero, none, far;
	nd_nodemask_zero(&both);
	nd_nodemask_set(&both, 0);
	nd_nodemask_set(&both, 1);
	nd_nodemask_zero(&one);
	nd_nodemask_set(&one, 1);
	nd_nodemask_zero(&zero);
	nd_nodemask_set(&zero, 0);
	nd_nodemask_zero(&none);
	far = both;
	nd_nodemask_set(&far, 5);

	int n0, n1;
	static const size_t grans[] = { 0, 65536 };
	for (unsigned g = 0; g < 2; g++) {
		uint64_t slow = _nd_slab_slow_count();
		fill(&both, grans[g], &n0, &n1);
		slow = _nd_slab_slow_count() - slow;
		/* a slow path per page carved and per slab, never per object */
		CHECK(slow <= (uint64_t)N / SLAB_OBJS * 5 + 4, "{0,1} @%zu: %llu slow paths for %d objects", grans[g],
		      (unsigned long long)slow, N);
		/* a 64 KiB granule is 16 pages: 4 slabs of 4 pages in a row */
		int tol = grans[g] ? 4 * SLAB_OBJS + SLAB_OBJS : 2 * SLAB_OBJS;
		CHECK(n0 + n1 == N && abs(n0 - n1) <= tol, "{0,1} @%zu: %d on node 0, %d on node 1 (tolerance %d)",
		      grans[g], n0, n1, tol);
		/* bad input right after hits of a valid call */
		bad(&both, 3 * 4096, "3 pages");
		bad(&both, 1024, "1 KiB");
		bad(&both, (size_t)2 << 30, "2G");
		bad(&both, (size_t)1 << 40, "2^40");
		bad(&both, 4096 + 8192, "4K + 8K");
		bad(&none, grans[g], "empty set");
		bad(NULL, grans[g], "NULL set");
		bad(&far, grans[g], "a set with node 5");
		drain();
	}

	fill(&both, 0, &n0, &n1);
	drain();
	fill(&one, 0, &n0, &n1);
	CHECK(n1 == N, "{1} right after {0,1}: %d on node 1 of %d", n1, N);
	drain();
	fill(&zero, 0, &n0, &n1);
	CHECK(n0 == N, "{0} right after {1}: %d on node 0 of %d", n0, N);
	drain();

	/* plain policy objects with the same set, other modes: neither
	 * serves the other */
	nd_policy_t w, t;
	CHECK(nd_policy_parse("weighted:0=1,1=3", &w, err, sizeof err) == 0, "%s", err);
	CHECK(nd_policy_parse("interleave:0-1+tier", &t, err, sizeof err) == 0, "%s", err);
	for (int round = 0; round < 2; round++) {
		void *a = nd_malloc_interleaved(SZ, &one, 0);
		void *b = nd_malloc_policy(SZ, round ? &t : &w);
		void *c = nd_malloc_interleaved(SZ, &one, 0);
		CHECK(a && b && c && nd_node_of(a) == 1 && nd_node_of(c) == 1, "{1} around a policy object: %d %d",
		      nd_node_of(a), nd_node_of(c));
		nd_free(a);
		nd_free(b);
		nd_free(c);
	}
	nd_policy_t il1;
	CHECK(nd_policy_parse("interleave:1", &il1, err, sizeof err) == 0, "%s", err);
	void *a = nd_malloc_policy(SZ, &il1);
	void *b = nd_malloc_interleaved(SZ, &zero, 0);
	void *c = nd_malloc_policy(SZ, &il1);
	CHECK(a && b && c && nd_node_of(a) == 1 && nd_node_of(b) == 0 && nd_node_of(c) == 1,
	      "interleave:1 object, {0}, the object: nodes %d %d %d", nd_node_of(a), nd_node_of(b), nd_node_of(c));
	nd_free(a);
	nd_free(b);
	nd_free(c);

	/* the entry the hits read */
	void *h = nd_malloc_interleaved(SZ, &one, 65536);
	const struct _nd_pcache *e = &_nd_tls->pc[0];
	CHECK(h && e->user != ND_PC_NOUSER && e->mode_flags == ND_POLICY_INTERLEAVE && e->gran_pad == 4 &&
		      e->bits0 == one.bits[0] && e->key == 0,
	      "entry 0 after nd_malloc_interleaved(64, {1}, 64K): user %s, mode/flags %#llx, gran %llu, bits0 %#llx, key %#llx",
	      e->user != ND_PC_NOUSER ? "set" : "none", (unsigned long long)e->mode_flags,
	      (unsigned long long)e->gran_pad, (unsigned long long)e->bits0, (unsigned long long)e->key);
	nd_free(h);

	/* above a page: a spread block; realloc of a small one keeps its node */
	char *big = nd_malloc_interleaved(8 * 4096, &one, 0);
	CHECK(big && nd_node_of(big) == 1 && nd_node_of(big + 7 * 4096) == 1, "8 pages on {1}");
	nd_free(big);
	char *s = nd_malloc_interleaved(SZ, &one, 0);
	CHECK(s && nd_node_of(s) == 1, "small on {1}");
	memset(s, 7, SZ);
	s = realloc(s, 3000);
	CHECK(s && nd_node_of(s) == 1 && s[SZ - 1] == 7, "realloc to 3000: node %d", s ? nd_node_of(s) : -9);
	free(s);
	return CHECK_DONE();
}
