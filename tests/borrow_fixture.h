// SPDX-License-Identifier: MIT
/* Shared by the borrowed-list tests (test_slab_borrow*, test_slab_idle_owner):
 * two emulated nodes of two CPUs each, and a count of shared pointers. */
#ifndef ND_BORROW_FIXTURE_H
#define ND_BORROW_FIXTURE_H
#include <stdio.h>

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
