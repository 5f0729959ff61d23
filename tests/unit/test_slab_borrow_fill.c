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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"

enum { SZ = 64, N = 64, K = 32, MINE = 100, FILL = 16 /* cap 64 (16 KiB / 64 B) / 4 */ };
static const char *SPEC = "0: cpus=0-1 mem=256M; 1: cpus=2-3 mem=256M; distance: 0-1=20";

static void *theirs[N];
static pthread_barrier_t made, done;

static void *make_theirs(void *arg)
{
	(void)arg;
	nd_emulate_cpu(1);
	for (int i = 0; i < N; i++)
		theirs[i] = malloc(SZ);
	pthread_barrier_wait(&made);
	pthread_barrier_wait(&done); /* alive: its objects are borrowed */
	return NULL;
}

int main(void)
{
	char err[256];
	if (nd_topology_emulate(SPEC, err, sizeof err) != 0) {
		fprintf(stderr, "emulate: %s\n", err);
		return 1;
	}
	nd_emulate_cpu(0);
	/* the current slab of SZ gets free objects (owner frees) */
	void *mine[MINE];
	for (int i = 0; i < MINE; i++)
		mine[i] = malloc(SZ);
	for (int i = 0; i < MINE; i += 2)
		free(mine[i]);
	pthread_t maker;
	pthread_barrier_init(&made, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	pthread_create(&maker, NULL, make_theirs, NULL);
	pthread_barrier_wait(&made);

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
	pthread_barrier_wait(&done);
	pthread_join(maker, NULL);
	return CHECK_DONE();
}
