// SPDX-License-Identifier: MIT
/* Remote frees to an idle owner (issue 11, wl_larson's peak RSS): a thread
 * allocates M objects and then only waits (wl_larson's main thread in
 * pthread_join); another thread of its node frees them all and allocates
 * M again. Past the borrowed list's cap, the objects sent home would pile
 * up on the owner's remote lists, never collected, while the freeing
 * thread carves new slabs (wl_larson: 11093 of the main thread's objects
 * stuck, 21.5 MiB peak against tcmalloc's 18.0). Asserted:
 *  - reuse: twice the cap (2 * 64) of the second M mallocs are the owner's
 *           (before: the cap, 64 of 1024);
 *  - bound: the freeing thread keeps at most twice the cap borrowed
 *           (plus one remote-free buffer entry), so a thread that only
 *           frees does not hoard without limit;
 *  - node:  every reused object is on the owner's node. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "borrow_fixture.h"
#include "check.h"

enum { M = 1024, SIZE = 64 };

static void *theirs[M], *mine[M];
static pthread_barrier_t made, done;

/* The owner: allocates, then idles until the end (never allocates again). */
static void *owner(void *arg)
{
	(void)arg;
	nd_emulate_cpu(1);
	for (int i = 0; i < M; i++)
		theirs[i] = malloc(SIZE);
	pthread_barrier_wait(&made);
	pthread_barrier_wait(&done);
	return NULL;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	nd_emulate_cpu(0);
	free(malloc(SIZE)); /* this thread's record and node-0 heap */
	pthread_barrier_init(&made, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, owner, NULL) == 0);
	pthread_barrier_wait(&made);
	for (int i = 0; i < M; i++)
		CHECK(theirs[i] != NULL);

	for (int i = 0; i < M; i++)
		free(theirs[i]);
	unsigned pending = _nd_slab_remote_pending();
	CHECK(pending <= 2 * 64 + 32, "%u objects kept borrowed or buffered", pending);
	for (int i = 0; i < M; i++)
		mine[i] = malloc(SIZE);

	qsort(theirs, M, sizeof theirs[0], cmp_ptr);
	int reused = 0, off_node = 0;
	for (int i = 0; i < M; i++)
		if (bsearch(&mine[i], theirs, M, sizeof theirs[0], cmp_ptr)) {
			reused++;
			off_node += nd_node_of(mine[i]) != 0;
		}
	CHECK(reused >= 2 * 64, "%d of %d objects of the idle owner reused", reused, M);
	CHECK(off_node == 0, "%d reused objects off node 0", off_node);

	for (int i = 0; i < M; i++)
		free(mine[i]);
	_nd_slab_flush_remote();
	pthread_barrier_wait(&done);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&made);
	pthread_barrier_destroy(&done);
	return CHECK_DONE();
}
