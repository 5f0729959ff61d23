// SPDX-License-Identifier: MIT
/* The borrowed list's fill (slab.c, _nd_slab_bw_fill): when a thread's
 * mallocs ran its borrowed list of a class dry and remote frees fed that
 * list (as many since its last fill as a fill moves), the refill moves a
 * quarter of the list's cap of the current slab's free objects onto the
 * list, so the next mallocs keep popping the list (no switch of dir[] to
 * the slab and back at the next remote free: wl_larson's mispredicts);
 * when no remote frees came since the last fill, the list is not filled
 * again and the mallocs go back to the slab (an owner's malloc/free loop
 * takes no slow path). Emulated topology, node 0: CPUs 0-1, node 1: 2-3. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "check.h"
#include "internal.h"
#include "maker_fixture.h"

enum { SZ = 64, N = 64, K = 32, MINE = 100, FILL = 16 /* cap 64 (16 KiB / 64 B) / 4 */ };

static void *theirs[N];

int main(void)
{
	if (maker_topology() != 0)
		return 1;
	/* the current slab of SZ gets free objects (owner frees) */
	void *mine[MINE];
	for (int i = 0; i < MINE; i++)
		mine[i] = malloc(SZ);
	for (int i = 0; i < MINE; i += 2)
		free(mine[i]);
	struct maker mk; /* a live thread of node 0 (CPU 1): its objects are borrowed */
	CHECK(maker_start(&mk, theirs, N, SZ, 1) == 0);

	/* K remote frees borrowed, then popped by K mallocs: the list is dry */
	for (int i = 0; i < K; i++)
		free(theirs[i]);
	CHECK_EQ(_nd_slab_remote_pending(), K);
	void *got[K + 1 + FILL + 1];
	for (int i = 0; i < K; i++)
		got[i] = malloc(SZ);
	CHECK_EQ(_nd_slab_remote_pending(), 0);

	/* the next malloc refills: FILL of the slab's free objects move onto
	 * the list, and the next FILL mallocs pop it without a slow path */
	got[K] = malloc(SZ);
	CHECK_EQ(_nd_slab_remote_pending(), FILL);
	uint64_t slow = _nd_slab_slow_count();
	for (int i = 0; i < FILL; i++) {
		got[K + 1 + i] = malloc(SZ);
		CHECK_EQ(nd_node_of(got[K + 1 + i]), 0);
	}
	CHECK_EQ(_nd_slab_slow_count(), slow);
	CHECK_EQ(_nd_slab_remote_pending(), 0);

	/* no remote free since that fill: the next refill leaves the list
	 * empty and an owner's malloc/free loop stays on the fast path */
	got[K + 1 + FILL] = malloc(SZ);
	CHECK_EQ(_nd_slab_remote_pending(), 0);
	slow = _nd_slab_slow_count();
	for (int i = 0; i < 1000; i++)
		free(malloc(SZ));
	CHECK_EQ(_nd_slab_slow_count(), slow);
	CHECK_EQ(_nd_slab_remote_pending(), 0);

	for (int i = 0; i < K + 1 + FILL + 1; i++)
		free(got[i]);
	for (int i = 1; i < MINE; i += 2)
		free(mine[i]);
	for (int i = K; i < N; i++)
		free(theirs[i]);
	_nd_slab_flush_remote();
	maker_stop(&mk);
	return CHECK_DONE();
}
