// SPDX-License-Identifier: MIT
/* Shared by the remote-free tests (test_slab_remote_batch,
 * test_slab_remote_norecord): N objects of one slab, allocated by one
 * thread, and how many of them come back to it. */
#ifndef ND_REMOTE_FIXTURE_H
#define ND_REMOTE_FIXTURE_H
#include <stdlib.h>

#include "borrow_fixture.h"

enum { N = 200, SZ = 64, SLAB_CAP = 256 }; /* 64-byte class: 16 KiB slabs of 256 */
static void *obj[N];

static inline void alloc_all(void)
{
	for (int i = 0; i < N; i++)
		obj[i] = malloc(SZ);
}

/* How many of obj[] come back among SLAB_CAP allocations of the class. */
static inline int reused(void)
{
	static void *again[SLAB_CAP];
	for (int i = 0; i < SLAB_CAP; i++)
		again[i] = malloc(SZ);
	return count_in(obj, N, again, SLAB_CAP);
}
#endif
