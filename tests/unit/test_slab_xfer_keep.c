// SPDX-License-Identifier: MIT
/* A borrowed list past its cap gives its oldest half to the exchange and
 * keeps its newest (issue 11, wl_xfree 2): the thread's next mallocs of
 * the class pop the objects it freed last, whose lines its core wrote a
 * moment before. It gave the newest half before, and its own mallocs
 * then took the older objects (the list's order was lost at every put).
 * Two emulated nodes; 1024-byte objects (borrowed lists keep 32): 33
 * frees of another thread's objects go past the cap once, leaving 17 on
 * the list and 16 in the exchange; the freeing thread's next 17 mallocs
 * return the last 17 it freed, the last freed first. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "borrow_fixture.h"
#include "check.h"

enum { N = 33, SIZE = 1024, KEEP = 17 };

static void *theirs[N];
static void *got[KEEP];
static pthread_barrier_t bo;
static struct borrow_freed fr;

/* frees them all in order (node 0, a heap of its own), then mallocs */
static void *freer(void *arg)
{
	(void)arg;
	fr = borrow_free_all(theirs, N, SIZE);
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
	for (int i = 0; i < KEEP; i++)
		CHECK(got[i] == theirs[N - 1 - i], "malloc %d returns theirs[%d] (%p), freed %d before the last; got %p", i,
		      N - 1 - i, theirs[N - 1 - i], i, got[i]);
	pthread_barrier_wait(&bo);
	pthread_join(o, NULL);
	return CHECK_DONE();
}
