// SPDX-License-Identifier: MIT
/* nd_malloc_policy with a plain policy object in check mode
 * (NODALLOC_CHECK=1): heap.c makes the cache entry (user = the object)
 * but stores no key and no lane (check mode keeps every call on the slow
 * path), and place.c's fast path compares the word at the entry's lane
 * whenever user matches. A lane left NULL crashed the second call
 * (SIGSEGV in pc_hit). Each call here must return a block of the
 * policy's node; nd_mallocx_policy and nd_calloc_policy too. The test
 * runs itself again with NODALLOC_CHECK=1 if it is not set. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "policy_fixture.h"

int main(int argc, char **argv)
{
	(void)argc;
	if (!getenv("NODALLOC_CHECK")) {
		setenv("NODALLOC_CHECK", "1", 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 1;
	}
	CHECK(nd_topology_emulate("0: cpus=0-1 mem=256M; 1: cpus=2-3 mem=256M; distance: 0-1=20", err, sizeof err) == 0,
	      "emulate: %s", err);
	nd_emulate_cpu(0);
	nd_policy_t plain = pol("bind:1");
	int bad = 0;
	for (int i = 0; i < 8; i++) {
		void *p = nd_malloc_policy(48, &plain);
		void *q = nd_mallocx_policy(100, &plain, ND_MALLOCX_ZERO);
		void *r = nd_calloc_policy(3, 40, &plain);
		bad += !p || !q || !r || nd_node_of(p) != 1 || nd_node_of(q) != 1 || nd_node_of(r) != 1;
		free(p);
		free(q);
		free(r);
	}
	CHECK_EQ(bad, 0);
	return CHECK_DONE();
}
