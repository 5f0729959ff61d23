// SPDX-License-Identifier: MIT
/* Edge cases of the public API found by a hostile review (audit12):
 *  - a node id in a gap of the topology (below node_limit, not online) is
 *    EINVAL for every node call, also once the thread has heaps of other
 *    nodes (its heap array then spans the gap: the fast paths' refill
 *    must not take it for a node without memory, ENOMEM);
 *  - a weighted policy object whose node set has no weight (the weights
 *    then come from the set, or the set from the weights: nd_policy_check
 *    accepts both) places blocks of more than a page where its
 *    normalized form says (the raw object hung the node choice). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

/* node 1 is a gap: node_limit 3 */
static const char *SPEC = "0: cpus=0 mem=256M; 2: cpus=1 mem=256M";

static void gap_node(void)
{
	static const size_t sizes[] = { 0, 10, 100, 5000, 32768, 40000 };
	for (int round = 0; round < 2; round++) {
		for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			size_t sz = sizes[i];
			void *p;
			errno = 0;
			p = nd_malloc_onnode(sz, 1);
			CHECK(p == NULL && errno == EINVAL, "round %d: nd_malloc_onnode(%zu, gap) = %p errno %d", round, sz, p, errno);
			errno = 0;
			p = nd_mallocx_onnode(sz, 1, 0);
			CHECK(p == NULL && errno == EINVAL, "round %d: nd_mallocx_onnode(%zu, gap) = %p errno %d", round, sz, p, errno);
			errno = 0;
			p = nd_mallocx_onnode(sz, 1, ND_MALLOCX_ZERO | ND_MALLOCX_LG_ALIGN(6));
			CHECK(p == NULL && errno == EINVAL, "round %d: nd_mallocx_onnode(%zu, gap, zero|64) = %p errno %d", round, sz, p, errno);
			errno = 0;
			p = nd_calloc_onnode(1, sz, 1);
			CHECK(p == NULL && errno == EINVAL, "round %d: nd_calloc_onnode(%zu, gap) = %p errno %d", round, sz, p, errno);
			errno = 0;
			p = nd_aligned_alloc_onnode(256, sz, 1);
			CHECK(p == NULL && errno == EINVAL, "round %d: nd_aligned_alloc_onnode(%zu, gap) = %p errno %d", round, sz, p, errno);
			/* the real nodes around the gap work (and give the thread its heaps) */
			for (int n = 0; n <= 2; n += 2) {
				p = nd_malloc_onnode(sz, n);
				CHECK(p != NULL && nd_node_of(p) == n, "nd_malloc_onnode(%zu, %d) = %p on %d", sz, n, p, p ? nd_node_of(p) : -2);
				free(p);
			}
		}
	}
}

static void weighted_raw(void)
{
	static const size_t sizes[] = { 100, 5000, 40000, 1 << 20 };
	nd_policy_t p;
	char err[256];
	/* a set without weights: every node of the set weighs 1 */
	CHECK(nd_policy_parse("weighted:2=3", &p, err, sizeof err) == 0, "%s", err);
	p.weights[2] = 0;
	CHECK(nd_policy_check(&p, err, sizeof err) == 0, "%s", err);
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		void *a = nd_malloc_policy(sizes[i], &p);
		CHECK(a != NULL && nd_node_of(a) == 2, "set {2}, no weight: %zu on %d", sizes[i], a ? nd_node_of(a) : -2);
		free(a);
		a = nd_mallocx_policy(sizes[i], &p, ND_MALLOCX_ZERO);
		CHECK(a != NULL && nd_node_of(a) == 2, "x, set {2}, no weight: %zu on %d", sizes[i], a ? nd_node_of(a) : -2);
		free(a);
	}
	/* weights outside the set: the weights name the nodes */
	CHECK(nd_policy_parse("weighted:0=1", &p, err, sizeof err) == 0, "%s", err);
	nd_nodemask_zero(&p.nodes);
	nd_nodemask_set(&p.nodes, 2);
	CHECK(nd_policy_check(&p, err, sizeof err) == 0, "%s", err);
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		void *a = nd_malloc_policy(sizes[i], &p);
		CHECK(a != NULL && nd_node_of(a) == 0, "set {2}, weight 0=1: %zu on %d", sizes[i], a ? nd_node_of(a) : -2);
		free(a);
	}
}

int main(void)
{
	char err[256];
	CHECK(nd_topology_emulate(SPEC, err, sizeof err) == 0, "emulate: %s", err);
	nd_emulate_cpu(0);
	gap_node();
	weighted_raw();
	return CHECK_DONE();
}
