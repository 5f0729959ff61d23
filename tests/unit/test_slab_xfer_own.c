// SPDX-License-Identifier: MIT
/* A borrowed list past its cap whose newest half is mostly the thread's
 * own objects sends that half home, not into the node's exchange (task
 * handoff28, bench handoff). The thread's slab is flagged (another
 * thread of its node borrowed one of its objects), so its own frees go
 * onto its borrowed list; before, the list's overflow put them into the
 * exchange, where the node's other threads took them, and the objects of
 * one slab circulated among every thread of the node.
 *  - own:    a thread frees N of its own 64 B objects (lists keep 64)
 *            after another thread freed one of them: none in the
 *            exchange, no splice home, its list at most its cap, and a
 *            third thread of the node that mallocs gets none of them;
 *  - others: the same frees of another thread's objects still go into
 *            the exchange (test_slab_xfer's put). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "borrow_fixture.h"
#include "check.h"

enum { N = 160, SIZE = 64, CAP = 64, M = 32 };

static void *mine[N + 1], *theirs[N];
static pthread_barrier_t bh, bo, bl;
static unsigned o_xfer, o_pending;
static uint64_t o_sent;

/* frees the one object the owner hands it (node 0): the slab is flagged */
static void *borrower(void *arg)
{
	(void)arg;
	nd_emulate_cpu(1);
	void *volatile first = malloc(SIZE); /* a heap of its own */
	free(first);
	pthread_barrier_wait(&bh);
	free(mine[N]);
	pthread_barrier_wait(&bh);
	pthread_barrier_wait(&bl); /* lives until the owner's frees are done */
	return NULL;
}

/* mallocs N + 1 objects (node 0), one freed by the borrower, then frees
 * the N others itself */
static void *owner(void *arg)
{
	(void)arg;
	nd_emulate_cpu(0);
	for (int i = 0; i <= N; i++)
		mine[i] = malloc(SIZE);
	pthread_barrier_wait(&bh);
	pthread_barrier_wait(&bh);
	uint64_t sent = _nd_slab_remote_sent();
	for (int i = 0; i < N; i++)
		free(mine[i]);
	o_xfer = _nd_slab_xfer_count(0);
	o_pending = _nd_slab_remote_pending();
	o_sent = _nd_slab_remote_sent() - sent;
	pthread_barrier_wait(&bo);
	pthread_barrier_wait(&bo); /* alive: its objects could be borrowed */
	return NULL;
}

static int t_got;

static void *taker(void *arg)
{
	(void)arg;
	nd_emulate_cpu(1);
	void *got[M];
	t_got = borrow_take(got, M, SIZE, mine, N);
	for (int i = 0; i < M; i++)
		free(got[i]);
	return NULL;
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	pthread_barrier_init(&bh, NULL, 3);
	pthread_barrier_init(&bo, NULL, 2);
	pthread_barrier_init(&bl, NULL, 2);

	/* own */
	pthread_t o, b, t;
	CHECK(pthread_create(&b, NULL, borrower, NULL) == 0);
	CHECK(pthread_create(&o, NULL, owner, NULL) == 0);
	pthread_barrier_wait(&bh);
	pthread_barrier_wait(&bh);
	pthread_barrier_wait(&bo);
	CHECK_EQ(o_xfer, 0);
	CHECK_EQ(o_sent, 0);
	CHECK(o_pending <= CAP, "the owner's list keeps at most its cap: %u", o_pending);
	CHECK(pthread_create(&t, NULL, taker, NULL) == 0);
	pthread_join(t, NULL);
	CHECK_EQ(t_got, 0);
	CHECK_EQ(_nd_slab_xfer_count(0), 0);
	pthread_barrier_wait(&bl);
	pthread_join(b, NULL);

	/* others: the owner's objects freed by another thread of the node */
	pthread_barrier_t bt;
	pthread_barrier_init(&bt, NULL, 2);
	struct borrow_owner ow = { theirs, N, SIZE, &bt };
	pthread_t o2;
	CHECK(pthread_create(&o2, NULL, borrow_owner, &ow) == 0);
	pthread_barrier_wait(&bt);
	struct borrow_freed r = borrow_free_all(theirs, N, SIZE);
	CHECK(r.xfer > 0, "other threads' objects still go into the exchange: %u", r.xfer);
	CHECK_EQ(r.sent, 0);
	pthread_barrier_wait(&bt);
	pthread_join(o2, NULL);
	pthread_barrier_wait(&bo);
	pthread_join(o, NULL);
	return CHECK_DONE();
}
