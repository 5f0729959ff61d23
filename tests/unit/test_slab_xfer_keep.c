// SPDX-License-Identifier: MIT
/* A borrowed list past its cap gives its newest half to the exchange,
 * indexed by the walk that finds the half's end, and keeps its oldest in
 * order (issue 11, xfree5: the oldest half, given before so that the
 * thread's own mallocs popped the lines its core wrote last, cost a
 * second walk to index; wl_xfree 2 the same time either way, wl_xfree 4
 * 10% faster: docs/benchmarks.md, "xfree4: the exchange's index").
 * Two emulated nodes; 1024-byte objects (borrowed lists keep 32): 33
 * frees of another thread's objects go past the cap once, leaving 17 on
 * the list and 16 in the exchange; the exchange's list is the last 16
 * freed, the last first, and the freeing thread's next 17 mallocs return
 * the first 17 it freed, the last of them first. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "borrow_fixture.h"
#include "check.h"

enum { N = 33, SIZE = 1024, KEEP = 17 };

static void *theirs[N];
static void *got[KEEP];
static void *given[N - KEEP + 1]; /* the exchange's list (as taken, at most one more) */
static pthread_barrier_t bo;
static struct borrow_freed fr;

/* frees them all in order (node 0, a heap of its own), then mallocs */
static void *freer(void *arg)
{
	(void)arg;
	fr = borrow_free_all(theirs, N, SIZE);
	for (unsigned i = 0; i < ND_XFER_K; i++) {
		uintptr_t v = __atomic_load_n(&_nd_meta_node[0].xfer[_nd_slab_class_of(SIZE)].slot[i], __ATOMIC_RELAXED);
		void **q = (void **)(v & ND_TF_PTR);
		for (int j = 0; q && j <= N - KEEP; j++, q = q[ND_FO_LINK])
			given[j] = q;
	}
	for (int i = 0; i < KEEP; i++)
		got[i] = malloc(SIZE);
	for (int i = 0; i < KEEP; i++)
		free(got[i]);
	return NULL;
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	pthread_barrier_init(&bo, NULL, 2);
	pthread_t o;
	struct borrow_owner ow = { theirs, N, SIZE, &bo };
	CHECK(borrow_owner_then(&ow, &o, freer) == 0);
	CHECK_EQ(fr.pending, KEEP);
	CHECK_EQ(fr.xfer, N - KEEP);
	CHECK_EQ(fr.sent, 0);
	for (int i = N - 1; i >= KEEP; i--)
		CHECK(given[N - 1 - i] == theirs[i], "the exchange's list holds theirs[%d] (%p) at %d; got %p", i, theirs[i],
		      N - 1 - i, given[N - 1 - i]);
	CHECK(given[N - KEEP] == NULL, "the exchange's list ends there");
	for (int i = 0; i < KEEP; i++)
		CHECK(got[i] == theirs[KEEP - 1 - i], "malloc %d returns theirs[%d] (%p); got %p", i, KEEP - 1 - i,
		      theirs[KEEP - 1 - i], got[i]);
	pthread_barrier_wait(&bo);
	pthread_join(o, NULL);
	return CHECK_DONE();
}
