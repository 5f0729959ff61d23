// SPDX-License-Identifier: MIT
/* Shared by the borrowed-list tests (test_slab_borrow*, test_slab_idle_owner):
 * two emulated nodes of two CPUs each, and a count of shared pointers. */
#ifndef ND_BORROW_FIXTURE_H
#define ND_BORROW_FIXTURE_H
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* node 0: CPUs 0-1, node 1: CPUs 2-3 */
static inline int borrow_emulate(void)
{
	char err[256];
	if (nd_topology_emulate("0: cpus=0-1 mem=256M; 1: cpus=2-3 mem=256M; distance: 0-1=20", err, sizeof err) != 0) {
		fprintf(stderr, "emulate: %s\n", err);
		return -1;
	}
	return 0;
}

/* A thread of node 0 that makes n objects of size into v and lives until
 * the second wait of bar after that (a parked heap's objects are not
 * borrowed); arg: a struct borrow_owner that outlives the thread. */
struct borrow_owner {
	void **v;
	int n;
	size_t size;
	pthread_barrier_t *bar;
};

static inline void *borrow_owner(void *arg)
{
	const struct borrow_owner *o = arg;
	nd_emulate_cpu(0);
	for (int i = 0; i < o->n; i++)
		o->v[i] = malloc(o->size);
	pthread_barrier_wait(o->bar);
	pthread_barrier_wait(o->bar);
	return NULL;
}

/* How many of v[0 .. n) are in set[0 .. ns). */
static inline int count_in(void **v, int n, void **set, int ns)
{
	int c = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < ns; j++)
			if (v[i] == set[j]) {
				c++;
				break;
			}
	return c;
}
#endif
