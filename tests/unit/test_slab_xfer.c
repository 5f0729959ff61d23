// SPDX-License-Identifier: MIT
/* The exchange of remote frees (issue 11, wl_xfree): a borrowed list past
 * its cap gives its newest half to its node's exchange, and a thread of
 * the node whose list of the class runs dry takes it before carving its
 * own slab. Before, every free past the cap went home, where it waited
 * until its owner's own lists ran dry, while the other threads carved new
 * memory. Two emulated nodes; 1024-byte objects (borrowed lists keep 32):
 *  - put:   64 frees of another thread's objects leave 32 on the freeing
 *           thread's list and 32 in node 0's exchange (two halves of 16),
 *           none sent home;
 *  - take:  a third thread of node 0 whose first slab page (4 objects)
 *           runs dry gets the freed objects, not a new page;
 *  - node:  a thread of node 1 never gets them (placement stays exact);
 *  - exit:  node 1's exit leaves node 0's exchange alone; a node 0
 *           thread's exit keeps there the objects of the owner's slabs
 *           (alive: the next threads take them; before, they went home,
 *           where an owner that does not allocate never took them back),
 *           its own borrowed ones too; the owner's exit sends them home
 *           (its slabs can be trimmed). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "borrow_fixture.h"
#include "check.h"

enum { N = 64, SIZE = 1024, M = 16 };

static void *theirs[N];
static pthread_barrier_t bo, bf, bt;
static unsigned f_pending, f_xfer, t_xfer;
static uint64_t f_sent;
static int t_got, u_got;

/* frees every one of them (node 0, a heap of its own) */
static void *freer(void *arg)
{
	(void)arg;
	struct borrow_freed r = borrow_free_all(theirs, N, SIZE);
	f_pending = r.pending;
	f_xfer = r.xfer;
	f_sent = r.sent;
	pthread_barrier_wait(&bf);
	pthread_barrier_wait(&bf);
	return NULL;
}

/* M mallocs on a CPU of node cpu / 2: how many are theirs */
static int take(int cpu)
{
	nd_emulate_cpu(cpu);
	void *got[M];
	return borrow_take(got, M, SIZE, theirs, N);
}

static void *taker(void *arg)
{
	(void)arg;
	t_got = take(0);
	t_xfer = _nd_slab_xfer_count(0);
	pthread_barrier_wait(&bt);
	pthread_barrier_wait(&bt);
	return NULL;
}

static void *other_node(void *arg)
{
	(void)arg;
	u_got = take(2);
	return NULL;
}

int main(void)
{
	if (borrow_emulate() != 0)
		return 1;
	pthread_barrier_init(&bo, NULL, 2);
	pthread_barrier_init(&bf, NULL, 2);
	pthread_barrier_init(&bt, NULL, 2);
	pthread_t o, f, t, u;
	struct borrow_owner ow = { theirs, N, SIZE, &bo };
	CHECK(pthread_create(&o, NULL, borrow_owner, &ow) == 0);
	pthread_barrier_wait(&bo);
	CHECK_EQ(_nd_slab_xfer_count(0), 0);

	/* put */
	CHECK(pthread_create(&f, NULL, freer, NULL) == 0);
	pthread_barrier_wait(&bf);
	CHECK_EQ(f_pending, N / 2);
	CHECK_EQ(f_xfer, N / 2);
	CHECK_EQ(f_sent, 0);

	/* take, and node */
	CHECK(pthread_create(&t, NULL, taker, NULL) == 0);
	pthread_barrier_wait(&bt);
	CHECK(t_got > 0, "a dry thread of the node gets the exchange's objects: %d of %d", t_got, M);
	CHECK_EQ(t_xfer, N / 2 - 16);
	CHECK(pthread_create(&u, NULL, other_node, NULL) == 0);
	pthread_join(u, NULL);
	CHECK_EQ(u_got, 0);
	CHECK_EQ(_nd_slab_xfer_count(0), N / 2 - 16); /* node 1's exit left node 0's exchange */

	/* exit: the taker's list kept what it did not take (16 - t_got) */
	pthread_barrier_wait(&bt);
	pthread_join(t, NULL);
	CHECK_EQ(_nd_slab_xfer_count(0), N / 2 - t_got);
	pthread_barrier_wait(&bf);
	pthread_join(f, NULL);
	CHECK_EQ(_nd_slab_xfer_count(0), N - t_got);
	pthread_barrier_wait(&bo);
	pthread_join(o, NULL);
	CHECK_EQ(_nd_slab_xfer_count(0), 0);
	return CHECK_DONE();
}
